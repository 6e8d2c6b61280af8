"""Property tests: whatever a config or a CLI flag holds, the outcome is a plan or a typed error."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvplan import ConfigError, KvplanError, parse_config, preset_config, preset_names
from kvplan.hf_config import load_config_text
from kvplan.kv import kv_cache_bytes
from kvplan.params import count_params

JSON_SCALARS = st.none() | st.booleans() | st.integers(-10**18, 10**18) | st.floats(allow_nan=True) | st.text(max_size=20)
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.text(max_size=10), inner, max_size=4), max_leaves=12)
FIELDS = ["hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
          "intermediate_size", "vocab_size", "sliding_window", "layer_types", "tie_word_embeddings",
          "torch_dtype", "quantization_config", "num_local_experts", "num_experts_per_tok", "text_config",
          "kv_lora_rank", "model_type", "max_position_embeddings", "hybrid_override_pattern"]
SETTINGS = settings(max_examples=int(__import__("os").environ.get("KVPLAN_HYPOTHESIS_EXAMPLES", "150")), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(preset=st.sampled_from(preset_names()), field=st.sampled_from(FIELDS), value=JSON_VALUES)
def test_mutated_real_configs_plan_or_refuse_with_the_field(preset, field, value):
    config = preset_config(preset)
    target = config.get("text_config", config) if field != "text_config" else config
    target[field] = value
    try:
        spec = parse_config(config)
    except ConfigError as exc:
        assert exc.field and exc.message
        return
    params = count_params(spec)
    assert params.total_params > 0
    assert kv_cache_bytes(spec, [1, 100]).kv_bytes >= 0


@SETTINGS
@given(st.text(max_size=200) | st.binary(max_size=200).map(bytes))
def test_arbitrary_text_is_refused_cleanly(text):
    try:
        load_config_text(text)
    except ConfigError as exc:
        assert exc.field == "config"


@SETTINGS
@given(st.dictionaries(st.sampled_from(FIELDS), JSON_VALUES, max_size=8))
def test_arbitrary_dicts_plan_or_refuse(config):
    try:
        parse_config(json.loads(json.dumps(config, allow_nan=True)))
    except KvplanError:
        pass


@SETTINGS
@given(st.lists(st.integers(-5, 10**9), max_size=20))
def test_lengths_plan_or_refuse(lengths):
    from kvplan import load_preset

    try:
        kv = kv_cache_bytes(load_preset("llama-3.1-8b"), lengths)
    except KvplanError as exc:
        assert exc.field == "lengths"
        return
    assert kv.kv_bytes == sum(lengths) * 131072


def test_deeply_nested_json_is_refused():
    text = "[" * 5000 + "]" * 5000
    try:
        load_config_text('{"a": ' + text + "}")
    except ConfigError as exc:
        assert "nested" in exc.message
    else:
        raise AssertionError("accepted")


@SETTINGS
@given(preset=st.sampled_from(preset_names()), gpu=st.sampled_from(sorted(__import__("kvplan.gpus").gpus.GPU_CATALOG)),
       tp=st.sampled_from([1, 2, 3, 4, 8, 16]), pp=st.integers(1, 5), dp=st.integers(1, 3), ep=st.booleans(),
       engine=st.sampled_from(["vllm", "sglang", "custom"]), max_len=st.integers(1, 2_000_000),
       kv=st.sampled_from(["auto", "fp8", "bf16", "fp32"]), block=st.sampled_from([None, 1, 16, 64, 1000]),
       concurrency=st.none() | st.integers(1, 5000))
def test_any_plan_is_an_answer_or_a_typed_error(preset, gpu, tp, pp, dp, ep, engine, max_len, kv, block, concurrency):
    from kvplan import load_preset
    from kvplan.engines import EngineConfig
    from kvplan.gpus import get_gpu
    from kvplan.parallel import Layout
    from kvplan.plan import plan

    config = EngineConfig(engine=engine, max_model_len=max_len, kv_cache_dtype=kv, block_size=block)
    try:
        p = plan(load_preset(preset), get_gpu(gpu), config, Layout(tp, pp, dp, ep), concurrency=concurrency)
    except KvplanError as exc:
        assert exc.field
        return
    assert p.num_blocks >= 0 and p.kv_cache_tokens >= 0
    # a start the engine refuses (a sampler warm-up out of memory, a request longer than the pool) never fits
    assert p.fits == (p.max_num_seqs_at_len >= (concurrency or 1) and all(r.kv_pool_bytes > 0 for r in p.ranks)
                      and p.starts)
    assert p.starts == (p.start_error is None and all(r.kv_pool_bytes > 0 for r in p.ranks) and p.num_blocks > 0)
    tight = min(p.ranks, key=lambda r: r.num_blocks)
    assert p.num_blocks == tight.num_blocks  # the verdict follows the most constrained rank
