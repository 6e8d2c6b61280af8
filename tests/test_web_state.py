"""kvplan.web.state: the plan <-> link codec (versioned, short keys, no defaults, never raises)."""

import base64
import json
import zlib

import pytest

from kvplan.presets import preset_config
from kvplan.web.state import (
    DEFAULT, FIELDS, PlanState, decode, decode_config, encode, encode_config, from_document, model_spec,
    parse_lengths, to_document, workload_lengths,
)

FULL = PlanState(
    model="qwen3-32b", gpu="H200", tensor_parallel_size=2, pipeline_parallel_size=2, data_parallel_size=3,
    enable_expert_parallel=True, engine="sglang", vllm_version="0.11", sglang_version="0.4.6", gpu_memory_utilization=0.875, block_size=32, kv_cache_dtype="fp8",
    weight_format="int4-g128", max_model_len=65536, max_num_seqs=64, max_num_batched_tokens=4096,
    kv_cache_memory_bytes=12 * 2**30, enforce_eager=True, mem_fraction_static=0.8, runtime_gib=3.5, headroom_gib=1.25,
    concurrency=48, paging_mode="uniform", lengths=(1, 2, 3), length_dist=(10, 5, 50, 7), shared_prefix=4,
    layouts=((1, 1, 1), (2, 2, 1)), prices=(("H100-SXM", 2.49), ("H200", 3.5)), command="vllm serve x -tp 2",
    objective="gpus", headroom_floor=0.25, multi_node=True, custom_gpu=(15.7, 0.672, 88.2, 0.2), import_gpu="H200",
    weights_gib=14.2488,  # (checkpoint, checkpoint_dir excluded: one of the three; tests/test_app_weights.py and
    # tests/test_app_local_checkpoint.py round-trip them)
    decode_context_parallel_size=2, disable_custom_all_reduce=True, sampler="flashinfer", usage_context="llm",
    language_model_only=True, mm_encoder_tp_mode="data", speculative_method="mtp", num_speculative_tokens=3,
    speculative_num_draft_tokens=8,
    drafter="eagle3-llama3.1-8b", enable_prefix_caching=False, max_total_tokens=123_456, dp_attention_size=4, moe_dense_tp_size=1,
    piecewise_cuda_graph="enforce", mamba_full_memory_ratio=0.5, max_mamba_cache_size=64, mamba_ssm_dtype="bfloat16",
    mm_limits=(("image", 0), ("video", 1)), mm_processor_kwargs=(("max_pixels", 1003520),), skip_mm_profiling=True,
    model_runner="V1", cudagraph_mode="PIECEWISE", compile_cache="warm", moe_backend="marlin", triton_kernels=True,
    sglang_aiter_honor_explicit_mem_fraction=True,
    swa_full_tokens_ratio=0.5, disable_hybrid_swa_memory=True, vllm_graph_reserved_mem=0.15,
)


def test_defaults_write_nothing():
    assert encode(DEFAULT) == {}


def test_every_field_round_trips_under_a_short_key():
    params = encode(FULL)
    linked = {f.key for f in FIELDS if f.name not in ("config", "model_name", "checkpoint", "checkpoint_dir")}
    assert params["v"] == "1" and set(params) == {"v"} | linked
    assert all(len(k) <= 5 for k in params)
    state, warnings = decode(params)
    assert state == FULL and warnings == []


def test_only_changed_fields_are_written():
    assert encode(PlanState(tensor_parallel_size=4, kv_cache_dtype="fp8")) == {"v": "1", "tp": "4", "kvd": "fp8"}


def test_pasted_config_travels_compressed():
    cfg = dict(preset_config("llama-3.1-8b"), _name_or_path="me/llama")
    text = encode_config(cfg)
    assert len(text) < len(json.dumps(cfg)) and "=" not in text
    assert decode_config(text) == cfg
    state, warnings = decode({"v": "1", "cfg": text, "mn": "me/llama"})
    assert warnings == [] and model_spec(state).name == "me/llama"
    assert decode(encode(state))[0] == state


def test_tampered_values_fall_back_with_a_warning_naming_the_key():
    params = {"v": "1", "m": "gpt-5", "tp": "two", "pp": "0", "ep": "maybe", "e": "trt", "gmu": "nan", "bs": "-16",
              "kvd": "int2", "wf": "int3", "len": "999999999999", "conc": "1e3", "pl": "", "pd": "1:9:5:0",
              "pfx": "-1", "lay": "0x1x1", "pr": "H100-SXM:free", "mn": "<script>", "cmd": "x" * 30_000}
    state, warnings = decode(params)
    assert state == DEFAULT
    assert len(warnings) == len(params) - 1
    for key, text in zip(list(params)[1:], warnings):
        assert f"'{key}'" in text and "using the default" in text


@pytest.mark.parametrize("cfg", [
    "", "!!!", "a" * 70_000,
    base64.urlsafe_b64encode(b"not zlib").decode().rstrip("="),
    base64.urlsafe_b64encode(zlib.compress(b"[1, 2]")).decode().rstrip("="),
    base64.urlsafe_b64encode(zlib.compress(b'{"model_type": "llama"}')).decode().rstrip("="),  # cannot be planned
    base64.urlsafe_b64encode(zlib.compress(b" " * (8 * 2**20))).decode().rstrip("="),  # a zip bomb: 8 MiB inflated
])
def test_bad_configs_in_links_are_refused(cfg):
    state, warnings = decode({"v": "1", "cfg": cfg})
    assert state.config is None and len(warnings) == 1 and "'cfg'" in warnings[0]


def test_unknown_keys_and_versions_warn():
    state, warnings = decode({"v": "9", "tp": "2", "utm_source": "x"})
    assert state.tensor_parallel_size == 2
    assert any("'v'" in w for w in warnings) and any("'utm_source'" in w for w in warnings)


def test_repeated_keys_take_the_last():
    assert decode({"tp": ["2", "4"]})[0].tensor_parallel_size == 4


def test_plan_document_round_trip_and_bad_documents():
    s = FULL.model_copy(update={"config": encode_config(preset_config("qwen3-0.6b")), "model_name": "q"})
    doc = json.loads(json.dumps(to_document(s)))
    assert doc["kvplan_plan"] == 1 and doc["inputs"]["config"]["model_type"] == "qwen3"
    assert from_document(doc) == (s, [])
    assert from_document([1, 2])[0] == DEFAULT and from_document([1, 2])[1]
    state, warnings = from_document({"inputs": {"tensor_parallel_size": "x", "nonsense": 1}})
    assert state == DEFAULT and len(warnings) == 2


def test_lengths():
    assert parse_lengths("5, 3 8;13") == (5, 3, 8, 13)
    with pytest.raises(ValueError, match="'x'"):
        parse_lengths("5, x")
    draw = workload_lengths(PlanState(paging_mode="uniform", length_dist=(5, 10, 20, 3)))
    assert draw == workload_lengths(PlanState(paging_mode="uniform", length_dist=(5, 10, 20, 3)))
    assert len(draw) == 5 and all(10 <= n <= 20 for n in draw)


def test_paging_distributions_are_seeded_and_stay_in_range():
    from kvplan.web.state import PlanState, workload_lengths

    for mode in ("normal", "lognormal", "exponential"):
        state = PlanState(paging_mode=mode, length_dist=(500, 100, 4000, 3))
        drawn = workload_lengths(state)
        assert drawn == workload_lengths(state) and len(drawn) == 500
        assert min(drawn) >= 100 and max(drawn) <= 4000
    lognormal = workload_lengths(PlanState(paging_mode="lognormal", length_dist=(2000, 1, 8000, 0)))
    assert sorted(lognormal)[1000] < sum(lognormal) / len(lognormal)  # long tail: median below mean
