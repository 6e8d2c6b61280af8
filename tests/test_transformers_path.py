"""The transformers-backed path (``kvplan.transformers_path``), called directly so it is exercised
whatever native family modules exist: exact parameters, measured caches, plans, the cache of
builds, and refusals as ConfigError.
"""


import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from kvplan import count_params, kv_cache_bytes  # noqa: E402
from kvplan.engines import EngineConfig  # noqa: E402
from kvplan.errors import ConfigError  # noqa: E402
from kvplan.gpus import get_gpu  # noqa: E402
from kvplan.layers import MeasuredState, SlidingWindowAttention, StatePart  # noqa: E402
from kvplan.parallel import Layout  # noqa: E402
from kvplan.plan import plan  # noqa: E402
from kvplan.transformers_path import build_spec, clear_cache, knows  # noqa: E402
from tests.test_oracle_transformers import transformers_param_count  # noqa: E402
from tests.test_sweep_transformers import BATCH, PROMPT, measured  # noqa: E402

pytestmark = pytest.mark.oracle
torch.set_num_threads(1)

SMALL = dict(vocab_size=256, hidden_size=64, intermediate_size=64, num_hidden_layers=4, num_attention_heads=4,
             num_key_value_heads=2, head_dim=16, max_position_embeddings=512, torch_dtype="float32")

# Families with no native builder on this branch, tiny, one per kind of cache the path infers.
CASES = {
    # sliding window every layer but each 4th (cohere2's sliding_window_pattern = 4), W = 8 < prompt
    "cohere2-sliding": ("cohere2", {**SMALL, "sliding_window": 8}),
    # exaone4: sliding layers from its own layer_types, W = 8
    "exaone4-sliding": ("exaone4", {**SMALL, "sliding_window": 8,
                                    "layer_types": ["sliding_attention"] * 3 + ["full_attention"]}),
    # falcon_h1: attention and a Mamba-2 mixer in every layer (state + per-token KV in one layer)
    "falcon_h1-hybrid": ("falcon_h1", {**SMALL, "mamba_d_ssm": 64, "mamba_n_heads": 4, "mamba_d_head": 16,
                                       "mamba_d_state": 8, "mamba_n_groups": 1, "mamba_d_conv": 4,
                                       "mamba_chunk_size": 16}),
    # jamba: Mamba layers, one attention layer in 4, MoE every 2nd layer (4 experts, top-2)
    "jamba-moe-mamba": ("jamba", {**SMALL, "num_hidden_layers": 4, "attn_layer_period": 4, "attn_layer_offset": 2,
                                  "expert_layer_period": 2, "expert_layer_offset": 1, "num_experts": 4,
                                  "num_experts_per_tok": 2, "mamba_d_state": 8, "mamba_d_conv": 4,
                                  "mamba_expand": 2, "use_mamba_kernels": False}),
    # lfm2: short-conv layers (conv state only) and attention layers
    "lfm2-conv": ("lfm2", {**SMALL, "layer_types": ["conv", "full_attention", "conv", "full_attention"],
                           "conv_L_cache": 3}),
    "granite-dense": ("granite", dict(SMALL)),
}


def _config(model_type, fields):
    cfg = transformers.AutoConfig.for_model(model_type, **fields).to_dict()
    cfg["model_type"] = model_type
    cfg["torch_dtype"] = fields.get("torch_dtype", "float32")
    return cfg


@pytest.mark.parametrize("case", sorted(CASES))
def test_params_and_cache_equal_transformers(case):
    cfg = _config(*CASES[case])
    assert knows(cfg)
    spec = build_spec(cfg, case)
    assert spec.basis == "transformers"
    assert spec.basis_note.startswith("built with transformers 5.23.0: parameters exact, cache measured on a copy of ")
    assert spec.warnings[0] == spec.basis_note
    assert count_params(spec).total_params == transformers_param_count(cfg)
    params, held = measured(cfg)
    assert count_params(spec).total_params == params
    ours = [kv_cache_bytes(spec, [PROMPT + i] * BATCH, "fp32", "transformers").kv_bytes for i in range(3)]
    assert ours == held


def test_cohere2_layers_and_window():
    spec = build_spec(_config(*CASES["cohere2-sliding"]), "c")
    # cohere2: every 4th layer full, the rest sliding (sliding_window_pattern 4): 3 sliding + 1 full.
    assert spec.layer_kinds == {"sliding_attention": 3, "full_attention": 1}
    sliding = spec.layers[0].cache
    assert isinstance(sliding, SlidingWindowAttention) and sliding.sliding_window == 8
    assert (sliding.num_key_value_heads, sliding.head_dim) == (2, 16)
    assert spec.layers[0] is spec.layers[1]  # identical layers share one object
    # vllm keeps min(T, W) = 8 tokens, transformers W - 1 = 7: per sequence at T = 100, fp32,
    # 3 x 8 x 2 x 32 x 4 + 1 x 100 x 2 x 32 x 4 = 6144 + 25600 = 31,744 B (vllm).
    assert kv_cache_bytes(spec, [100], "fp32", "vllm").kv_bytes == 31_744
    assert kv_cache_bytes(spec, [100], "fp32", "transformers").kv_bytes == 3 * 7 * 256 + 100 * 256


def test_falcon_h1_state_split():
    model_type, fields = CASES["falcon_h1-hybrid"]
    # bf16: a second (bf16) run of the copy finds which state transformers keeps in fp32 regardless
    spec = build_spec(_config(model_type, {**fields, "torch_dtype": "bfloat16"}), "f")
    cache = spec.layers[0].cache
    assert isinstance(cache, MeasuredState) and cache.attention is not None
    conv, ssm = cache.parts
    # conv over x, B, C: d_ssm + 2 x groups x d_state = 64 + 16 = 80 channels, kernel 4;
    # SSM state [heads 4, head_dim 16, d_state 8], kept in fp32 by transformers.
    assert conv == StatePart(name="conv_states[0]", shape=(80, 4), split_dim=0, conv=True)  # model dtype
    assert ssm.shape == (4, 16, 8) and ssm.transformers_bytes == 4
    # vllm, bf16: (80 x 3 + 4 x 16 x 8) x 2 = 1504 B; at TP=2: (40 x 3 + 2 x 16 x 8) x 2 = 752 B.
    assert cache.state_bytes("vllm", 1, 2) == 1504 and cache.state_bytes("vllm", 2, 2) == 752
    # transformers, bf16 model: conv 80 x 4 x 2 + ssm 512 x 4 = 640 + 2048 = 2688 B.
    assert cache.state_bytes("transformers", 1, 2) == 2688


def test_plan_runs_on_transformers_specs():
    for case in ("jamba-moe-mamba", "cohere2-sliding", "falcon_h1-hybrid"):
        spec = build_spec(_config(*CASES[case]), case)
        result = plan(spec, get_gpu("H100-SXM"), EngineConfig(max_model_len=4096), Layout(tp=2))
        assert result.basis == "transformers" and result.num_blocks > 0
        assert result.warnings[0] == spec.basis_note
        kinds = {g.kind for g in result.kv_groups}
        if case == "falcon_h1-hybrid":  # attention and state are separate vLLM groups
            assert kinds == {"full_attention", "state"}


def test_jamba_experts():
    spec = build_spec(_config(*CASES["jamba-moe-mamba"]), "j")
    moe = [layer for layer in spec.layers if layer.experts is not None]
    assert len(moe) == 2 and moe[0].experts.num_experts == 4 and moe[0].experts.num_experts_per_tok == 2
    # one expert: gate+up [2 x 64, 64] and down [64, 64] = 8192 + 4096 = 12,288 parameters.
    assert moe[0].experts.numel_per_expert == 12_288
    assert spec.layer_kinds == {"state": 3, "full_attention": 1}


def test_second_request_is_cached():
    clear_cache()
    cfg = _config(*CASES["granite-dense"])
    seen = []
    first = build_spec(cfg, "g", progress=lambda f, m: seen.append(f))
    assert seen[-1] == 1.0 and seen == sorted(seen)
    again = build_spec(dict(cfg), "g")
    assert again is first  # the cached build itself (its 0.10 - 0.13 ms is bench/transformers_path.py's, not a test's)
    assert build_spec(cfg, "other name").name == "other name"


def test_real_size_granite_defaults():
    cfg = transformers.AutoConfig.for_model("granite").to_dict()
    cfg["model_type"] = "granite"
    spec = build_spec(cfg, "granite")
    assert count_params(spec).total_params == transformers_param_count(cfg)
    assert spec.num_hidden_layers == 32 and "a copy of 1 layer" in spec.basis_note
    # 32 layers x 32 KV heads x (128 + 128) x 2 B (bf16 default) = 524,288 B per token.
    assert kv_cache_bytes(spec, [1]).kv_bytes == 524_288


def test_refused_config_is_config_error():
    # mamba2 checks hidden_size x expand == num_heads x head_dim: 64 x 2 != 8 x 64.
    cfg = {"model_type": "mamba2", "hidden_size": 64, "expand": 2, "num_heads": 8, "head_dim": 64,
           "num_hidden_layers": 2, "vocab_size": 256}
    with pytest.raises(ConfigError) as err:
        build_spec(cfg, "bad")
    assert err.value.field == "hidden_size" and "transformers 5.23.0 refuses this config" in err.value.message
    with pytest.raises(ConfigError):  # refused again from the cache
        build_spec(cfg, "bad")


def test_encoders_and_unknown_types_not_known():
    assert not knows({"model_type": "bert"})
    assert not knows({"model_type": "no-such-model"})
    assert knows({"model_type": "gemma3", "text_config": {"model_type": "gemma3_text"}, "vision_config": {}})
    # a wrapper transformers has no causal LM for: its text_config's type decides
    assert knows({"model_type": "some_vlm", "text_config": {"model_type": "olmo2"}})


def test_too_many_layers_refused():
    with pytest.raises(ConfigError) as err:
        build_spec({"model_type": "granite", "num_hidden_layers": 5000}, "big")
    assert err.value.field == "num_hidden_layers"


def test_too_many_experts_refused():
    with pytest.raises(ConfigError) as err:  # 1000 x 300 = 300,000 layer-experts > 250,000
        build_spec({**SMALL, "model_type": "olmoe", "num_hidden_layers": 300, "num_experts": 1000}, "big")
    assert err.value.field == "num_experts"


def test_dsa_indexer_keys():
    from tests.test_sweep_transformers import recipes

    _, cfg = next(recipes("deepseek_v32"))  # MLA latent 32 + rope 8, indexer keys of index_head_dim 16
    cache = build_spec(cfg, "dsa").layers[0].cache
    assert cache.kind == "state" and cache.parts == () and cache.indexer_dim == 16
    assert (cache.attention.num_key_value_heads, cache.attention.head_dim, cache.attention.v_head_dim) == (1, 32, 8)
    # 40 latent + 16 indexer elements per token, replicated (not split) at TP=2.
    assert cache.elems_per_token("vllm", 1) == cache.elems_per_token("vllm", 2) == 56
    # --dtype float32 (weight_format fp32): with 'auto' vLLM would serve this fp32 config in bf16 (plan.vllm_auto_dtype)
    result = plan(build_spec(cfg, "dsa"), get_gpu("H100-SXM"), EngineConfig(max_model_len=4096, weight_format="fp32"))
    # vLLM keeps the indexer as a cache of its own: fp32 pages of 16 tokens, 16 x 40 x 4 = 2560 B (latent) and
    # 16 x 16 x 4 = 1024 B (indexer). Both are full-attention specs of one block size, so vLLM's
    # UniformTypeKVCacheSpecs puts every layer in one group whose block is the sum of the pages.
    n_layers = len(build_spec(cfg, "dsa").layers)
    assert [(g.kind, g.page_bytes) for g in result.kv_groups] == [("full_attention", 2560)]
    assert result.ranks[0].bytes_per_block == n_layers * (2560 + 1024)
