"""vLLM 0.20 - 0.33: the budget path read in the wheels, and the public logs it reproduces (2026-12).

Read in the PyPI wheels of 0.20.0, 0.21.0, 0.22.0, 0.23.0, 0.24.0, 0.25.0, 0.26.0, 0.27.0, 0.27.1, 0.28.0, 0.29.0,
0.30.0, 0.31.0, 0.32.0 and 0.33.0 (``pip download vllm==X --no-deps``): v1/worker/gpu_worker.py
determine_available_memory, utils/mem_utils.py memory_profiling, v1/worker/gpu_model_runner.py (V1) and
v1/worker/gpu/model_runner.py (V2) profile_run / _dummy_sampler_run / profile_cudagraph_memory, config/vllm.py
use_v2_model_runner, config/compilation.py, v1/worker/gpu/sample/penalties.py, v1/worker/gpu/structured_outputs.py;
torch 2.13 torch/_inductor/scheduler.py speedup_by_combo_kernel (installed here). What kvplan models from them:

- kvplan.engines.vllm_model_runner: the V2 model runner by default for Qwen3 (0.22.0), Llama / Mistral (0.23.0),
  six listed architectures quantized too (0.24.0), every dense non-hybrid model (0.25.0), every model (0.29.0). V2's
  profile_cudagraph_memory returns 0 through 0.28.0 (no estimate subtracted: its graphs come out of the (1 - util)
  margin, as 0.10's did), and its dummy sampler run holds the logits alone (a dummy batch needs no sampling params).
- kvplan.engines.vllm_v2_sampler_state_bytes: V2's sampler keeps max_num_seqs x vocab int32 bin counts and two
  bitmasks from load_model on; memory_profiling counts them from 0.27.0, which measures the free memory dropped since
  the init snapshot (``total_consumed``) instead of weights + torch peak increase + non-torch increase.
- kvplan.engines.vllm_compile_benchmark_bytes: from 0.11.1 (torch 2.9) vLLM turns on inductor's combo-kernel
  benchmark; a cold compile in the profile run benchmarks the embedding gather on a random copy of the table.
- Not modelled (no effect on the pinned logs): 0.21.0 turns the FlashInfer top-k/top-p sampler on by default, but the
  V1 dummy sampler run then also warms forward_native, whose temporaries (3.72 copies) stay the peak; 0.33 splits
  the profile run's allocations at 20 MiB (fragmentation).
"""

import json
from pathlib import Path

import pytest

from kvplan import load_preset, parse_config
from kvplan.engines import (
    VLLM_PROFILES, EngineConfig, vllm_compile_benchmark_bytes, vllm_has, vllm_model_runner, vllm_profile_for_release,
    vllm_v2_sampler_state_bytes,
)
from kvplan.gpus import custom_gpu, get_gpu
from kvplan.parallel import Layout
from kvplan.plan import activation_estimate, plan
from kvplan.units import GiB
from tests.test_engine_logs import close, close_gib

PRESETS = Path(__file__).parents[1] / "kvplan" / "presets"


def _term(p, prefix: str, rank: int = 0):
    return next(t for t in p.ranks[rank].terms if t.name.startswith(prefix))


def test_profiles_split_at_the_budget_changes():
    # 0.23.0 (Llama / Mistral on V2), 0.27.0 (total_consumed), 0.29.0 (V2 everywhere, its CUDA-graph estimate)
    assert [vllm_profile_for_release(r) for r in ("0.22.1", "0.23.0", "0.26.0", "0.27.0", "0.27.1", "0.28.0",
                                                  "0.29.0", "0.30.0")] == [
        "0.22", "0.23", "0.26", "0.27", "0.27", "0.28", "0.29", "0.30"]
    assert VLLM_PROFILES["0.27"].releases == "0.27.0 - 0.27.1" and VLLM_PROFILES["0.28"].releases == "0.28.0"
    assert vllm_has("0.27", "total_consumed_accounting") and not vllm_has("0.26", "total_consumed_accounting")
    assert vllm_has("0.11.1", "compile_combo_benchmark") and not vllm_has("0.11", "compile_combo_benchmark")


@pytest.mark.parametrize("version,model_type,moe,hybrid,quantized,spec,runner", [
    ("0.21", "qwen3", False, False, False, "none", "V1"),  # only with VLLM_USE_V2_MODEL_RUNNER=1
    ("0.22", "qwen3", False, False, False, "none", "V2"),
    ("0.22", "qwen3", False, False, True, "none", "V1"),  # is_quantized keeps V1 through 0.23.0
    ("0.22", "llama", False, False, False, "none", "V1"),
    ("0.23", "llama", False, False, False, "none", "V2"),
    ("0.23", "qwen2", False, False, False, "none", "V1"),  # Qwen2ForCausalLM is in no list before 0.25.0
    ("0.24", "qwen3", False, False, True, "none", "V2"),
    ("0.24", "qwen2_moe", True, False, False, "none", "V2"),
    ("0.24", "qwen3_moe", True, False, False, "none", "V1"),
    ("0.25", "qwen2", False, False, False, "none", "V2"),  # every dense model
    ("0.28", "qwen3_moe", True, False, False, "none", "V1"),  # MoE not in the list
    ("0.28", "deepseek_v2", True, False, False, "none", "V2"),
    ("0.28", "qwen3_next", True, True, False, "none", "V1"),  # hybrid
    ("0.28", "qwen3", False, False, False, "ngram", "V1"),  # ngram speculation unsupported on V2 through 0.31.0
    ("0.29", "qwen3_moe", True, False, False, "none", "V2"),
    ("0.30", "qwen3", False, False, False, "ngram", "V1"),
    ("0.33", "qwen3", False, False, False, "ngram", "V2"),
])
def test_default_model_runner_by_release(version, model_type, moe, hybrid, quantized, spec, runner):
    assert vllm_model_runner(version, model_type, moe, hybrid, quantized, spec) == runner


def test_v2_sampler_state_bytes():
    # 256 x 151,936 int32 output_bin_counts + prompt_bin_mask and grammar_bitmask of 256 x cdiv(151,936, 32) = 4748
    # int32 each: 4 x (38,895,616 + 2 x 1,215,488) = 165,306,368 B = 0.154 GiB
    assert vllm_v2_sampler_state_bytes(256, 151_936) == 165_306_368
    # MTP with 2 draft tokens: the grammar bitmask has 256 x 3 rows
    assert vllm_v2_sampler_state_bytes(256, 151_936, 2) == 4 * (256 * 151_936 + (256 + 768) * 4748)
    # Llama-3.1-8B on an H100 (1024 seqs, vocab 128,256): 0.52 GiB
    assert vllm_v2_sampler_state_bytes(1024, 128_256) == 4 * (1024 * 128_256 + 2048 * 4008)


def test_compile_benchmark_copy_is_the_embedding_shard():
    assert vllm_compile_benchmark_bytes(151_936, 5120, 1, 2) == 151_936 * 5120 * 2 == 1_555_824_640  # 1.449 GiB
    assert vllm_compile_benchmark_bytes(151_936, 5120, 2, 2) == 75_968 * 5120 * 2
    assert vllm_compile_benchmark_bytes(32_016, 4096, 1, 2) == 32_064 * 4096 * 2  # VocabParallelEmbedding pads to 64


def _qwen3_14b_awq():
    from tests.test_engine_logs_2026 import _qwen3_14b_awq as awq
    return awq()


def test_v2_terms_by_release_on_qwen3_14b():
    spec, gpu = load_preset("qwen3-14b"), get_gpu("L40S")
    by = {v: plan(spec, gpu, EngineConfig(vllm_version=v)) for v in ("0.21", "0.26", "0.27", "0.28", "0.29")}
    # 0.21: V1 (the 3.72-copy sampler under the embedding copy), CUDA-graph estimate subtracted
    assert _term(by["0.21"], "activation peak").bytes == 151_936 * 5120 * 2
    assert _term(by["0.21"], "CUDA graphs").applied and not any(
        t.name.startswith("V2 sampler") for t in by["0.21"].ranks[0].terms)
    # 0.26: V2, state held outside the budget (the old accounting measures after it), no estimate
    st = _term(by["0.26"], "V2 sampler state")
    assert st.bytes == 165_306_368 and not st.applied and not _term(by["0.26"], "CUDA graphs").applied
    # 0.27 / 0.28: the state counted; 0.29: the V2 estimate subtracted as well
    assert _term(by["0.27"], "V2 sampler state").applied and not _term(by["0.28"], "CUDA graphs").applied
    assert _term(by["0.29"], "CUDA graphs").applied
    kv = {v: p.ranks[0].kv_pool_bytes for v, p in by.items()}
    assert kv["0.26"] - kv["0.27"] == 165_306_368
    assert kv["0.28"] - kv["0.29"] == _term(by["0.29"], "CUDA graphs").bytes
    # --enforce-eager: no compile, no copy; the V2 peak is then the 2048-token forward (kvplan 0.24 GiB)
    eager = plan(spec, gpu, EngineConfig(vllm_version="0.28", enforce_eager=True))
    assert _term(eager, "activation peak").bytes == activation_estimate(spec, 1, 2048, 256, 2, 0.5) < 0.25 * GiB


def _l4_replica_warm_pool() -> int:
    spec = _qwen3_14b_awq()
    p = plan(spec, get_gpu("L4"), EngineConfig(vllm_version="0.28"))
    forward = activation_estimate(spec, 1, 2048, 256, 2, 0.5)
    return p.ranks[0].kv_pool_bytes + _term(p, "activation peak").bytes - forward


def test_blog_v0_28_l4_replicas_warm_compile_cache():
    # The blog's replica runs (tests/test_engine_logs_2026.py; Qwen3-14B-AWQ, one L4 each, the same defaults as its
    # "single" arm, started after it): "10.33 GiB × 2 (67,696 tok × 2)", "1.65x 각각", 1.23 GiB more than the single
    # run's 9.10. A warm compile cache loads the compiled graph and benchmarks nothing: kvplan's cold pool plus its
    # copy (1.449 GiB) less the forward that is then the peak (0.24 GiB) is 10.21 GiB (-0.12; 10.32 before the
    # allocator blocks of AWQ's tensors, kvplan.vllm_alloc): the single run's 0.10 GiB miss again, tokens below
    assert close_gib(_l4_replica_warm_pool(), 10.33)


@pytest.mark.xfail(strict=True, reason=(
    "the L4 replicas: 66,889 tokens vs 67,696 logged (-1.19 %) from the warm pool 10.21 vs 10.33 GiB: the single L4 "
    "run's 0.10 - 0.12 GiB of unexplained non-weight use again (tests/test_engine_logs_2026.py "
    "test_blog_v0_28_l4_single_qwen3_14b_awq_tokens); 67,660 (-0.05 %) while the weights were 0.12 GiB light"))
def test_blog_v0_28_l4_replicas_warm_tokens():
    assert close(_l4_replica_warm_pool() // (40 * 8 * 2 * 128 * 2), 67_696)


def test_v0_27_1_qwen2_5_0_5b_rtx_wsl():
    # A public 2026-08 setup diary (search index file 61918553602; vLLM 0.27.1 under WSL2, one 24 GB card exposing 23.99
    # GiB): `vllm serve Qwen/Qwen2.5-0.5B-Instruct --max-model-len 2048 --gpu-memory-utilization 0.85`: "model_runner.py
    # :329] Model loading took 0.93 GiB" (the V2 runner's file), "Available KV cache memory: 18.65 GiB", "GPU KV cache
    # size: 1,629,520 tokens", "Graph capturing finished in 2 secs, took 0.37 GiB", "Free memory on device (22.45/
    # 23.99 GiB) on startup. Desired GPU memory utilization is (0.85, 20.39 GiB). Actual usage is 1.49 GiB for consumed
    # memory (weights + non-torch), 0.25 GiB for peak activation, and 0.37 GiB for CUDAGraph memory" (20.39 - 1.49 -
    # 0.25 = 18.65: no CUDA-graph estimate). The peak is the embedding copy, 151,936 x 896 x 2 B = 0.254 GiB (the
    # forward at 2048 tokens is 0.06, the V2 logits 0.07). kvplan: 0.92 / 18.81 GiB (+0.16) / 1,643,616 tokens
    # (+0.86 %); before (V1 terms: 3.72-copy sampler 0.54, estimate 0.62 subtracted): 18.06 GiB, 1,577,904 (-3.2 %).
    # Its consumed - weights = 0.56 GiB (kvplan: non-torch 0.25 + V2 state 0.154; WSL's driver accounting is looser).
    cfg = json.loads((PRESETS / "qwen2.5-7b.json").read_text())
    # Qwen/Qwen2.5-0.5B-Instruct config.json fields typed in over the Qwen2 architecture of the qwen2.5-7b preset
    cfg.update(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
               num_key_value_heads=2, tie_word_embeddings=True, max_position_embeddings=32768, max_window_layers=21,
               vocab_size=151936)
    spec = parse_config(cfg, "qwen2.5-0.5b-instruct")
    gpu = custom_gpu(23.99, 1.0, 165, name="24GB-WSL2", gpus_per_node=1)
    p = plan(spec, gpu, EngineConfig(vllm_version="0.27", max_model_len=2048, gpu_memory_utilization=0.85))
    r = p.ranks[0]
    assert r.kv_bytes_per_token == 24 * 2 * 2 * 64 * 2
    assert close_gib(r.weights_bytes, 0.93) and close_gib(r.kv_pool_bytes, 18.65) and close(p.kv_cache_tokens, 1_629_520)
    assert _term(p, "activation peak").bytes == 151_936 * 896 * 2 and abs(151_936 * 896 * 2 / GiB - 0.25) < 0.005
    assert not _term(p, "CUDA graphs").applied


def test_v1_h100_logs_keep_the_sampler_peak():
    # the llm-d-planner v0.19.0 H100 logs (1024 sampler rows): the 3.72-copy sampler (1.88 GiB for Llama-3.1-8B) is
    # above the embedding copy (128,256 x 4096 x 2 B = 0.98 GiB), so their peaks are unchanged
    spec = load_preset("llama-3.1-8b")
    p = plan(spec, get_gpu("H100-SXM"), EngineConfig(vllm_version="0.19", gpu_memory_utilization=0.95,
                                                     max_model_len=8192, enable_prefix_caching=False))
    assert _term(p, "activation peak").bytes == activation_estimate(spec, 1, 8192, 1024, 2, 3.72) > 128_256 * 4096 * 2
