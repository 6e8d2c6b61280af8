"""vLLM 0.34.0 read against 0.33.0 (2026-12-03, pip download vllm==0.34.0 / 0.33.0 --no-deps): what changed in the
memory accounting kvplan models, and why the "0.34" profile is listed but refuses to plan (VLLM_034_REFUSAL)."""

import pytest

from kvplan import load_preset
from kvplan.engines import (
    VLLM_034_REFUSAL, VLLM_CHANGES, VLLM_DEFAULT_VERSION, VLLM_GPU_MEMORY_UTILIZATION, VLLM_PROFILES, EngineConfig,
    vllm_default_block_size, vllm_extensible_kv_bytes, vllm_has, vllm_mla_default, vllm_model_runner,
    vllm_profile_for_release,
)
from kvplan.errors import PlanInputError
from kvplan.gpus import get_gpu
from kvplan.plan import plan
from kvplan.units import GiB

H100 = get_gpu("H100-SXM")


def test_the_0_34_profile_is_its_own_line_and_not_the_default():
    prof = VLLM_PROFILES["0.34"]
    assert prof.first_release == (0, 34, 0) and prof.releases == "0.34.0 (newest read, not planned)"
    assert VLLM_PROFILES["0.33"].releases == "0.32.0 - 0.33.x"
    assert vllm_profile_for_release("0.34.0") == "0.34" and vllm_profile_for_release("0.33.1") == "0.33"
    assert VLLM_DEFAULT_VERSION == "0.33"  # the newest profile kvplan plans
    # config/cache.py resolved_gpu_memory_utilization: 1.0 with the extensible KV cache (the CUDA / ROCm default),
    # DEFAULT_GPU_MEMORY_UTILIZATION 0.92 without; 0.33.0: gpu_memory_utilization = 0.92
    assert VLLM_GPU_MEMORY_UTILIZATION["0.33"] == 0.92 and VLLM_GPU_MEMORY_UTILIZATION["0.34"] == 1.0
    for change in ("extensible_kv_cache", "block_size_64", "v1_runner_removed", "capture_split_sm100"):
        assert VLLM_CHANGES[change][0] == (0, 34, 0)
        assert vllm_has("0.34", change) and not vllm_has("0.33", change)


def test_plans_on_0_34_are_refused_by_name():
    spec = load_preset("llama-3.1-8b")
    with pytest.raises(PlanInputError) as exc:
        plan(spec, H100, EngineConfig(vllm_version="0.34"))
    assert exc.value.field == "vllm_version" and VLLM_034_REFUSAL in str(exc.value)
    assert "extensible KV cache" in VLLM_034_REFUSAL and "Plan with profile 0.33" in VLLM_034_REFUSAL
    # a typed KV size turns the extensible cache off in 0.34.0 (_resolve_extensible_kv_cache), but the 64-token
    # default block still changes the counts: refused too
    with pytest.raises(PlanInputError):
        plan(spec, H100, EngineConfig(vllm_version="0.34", kv_cache_memory_bytes=10 * GiB))
    # the same engine on 0.33 plans: 10 GiB / (16 tokens x 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 2 MiB)
    assert plan(spec, H100, EngineConfig(vllm_version="0.33", kv_cache_memory_bytes=10 * GiB,
                                          max_model_len=8000)).num_blocks == 5120


def test_the_default_block_is_64_from_0_34_on_a_real_mla_preset():
    # config/cache.py DEFAULT_BLOCK_SIZE 16 -> 64; update_block_size_for_backend offers it to get_preferred_block_size:
    # FLASH_ATTN_MLA (Hopper, MultipleOf(16)), FLASHINFER_MLA (sm100, [32, 64]), TRITON_MLA (MultipleOf(16)) take 64
    assert [vllm_default_block_size(v) for v in ("0.33", "0.34")] == [16, 64]
    assert vllm_mla_default("H100-SXM", "0.33") == ("FLASH_ATTN_MLA", 16)
    assert vllm_mla_default("H100-SXM", "0.34") == ("FLASH_ATTN_MLA", 64)
    assert [vllm_mla_default("B200", v).block_size for v in ("0.33", "0.34")] == [32, 64]
    assert [vllm_mla_default("A100-80GB", v).block_size for v in ("0.33", "0.34")] == [16, 64]
    assert vllm_mla_default("B200", "0.34", qk_nope_head_dim=256) == ("CUTLASS_MLA", 128)  # [128] only: unchanged
    assert vllm_mla_default("H100-SXM", "0.34", kv_quantized=True) == ("FLASHMLA", 64)  # [64] only: unchanged
    # DeepSeek-V2-Lite on an H100 with a 10 GiB pool: 27 layers x (512 + 64) x 2 B = 31,104 B a token.
    # 0.33 default (16): 10,737,418,240 // 497,664 = 21,575 blocks = 345,200 tokens; what 0.34 runs by default (64),
    # planned on 0.33 with --block-size 64: // 1,990,656 = 5,393 blocks = 345,152 tokens, 512 -> 128 blocks a request
    spec = load_preset("deepseek-v2-lite")
    at = {bs: plan(spec, H100, EngineConfig(vllm_version="0.33", kv_cache_memory_bytes=10 * GiB, max_model_len=8192,
                                            block_size=bs)) for bs in (None, 64)}
    assert (at[None].block_size, at[None].num_blocks, at[None].kv_cache_tokens) == (16, 21_575, 345_200)
    assert (at[64].block_size, at[64].num_blocks, at[64].kv_cache_tokens) == (64, 5_393, 345_152)
    assert (at[None].blocks_per_request, at[64].blocks_per_request) == (512, 128)


def test_extensible_kv_bytes_follow_measure_kv_cache_bytes():
    # v1/worker/extensible_kv_cache.py measure_kv_cache_bytes (0.34.0): margin = max(1 GiB, int(0.75 x peak));
    # available = min(requested - resident, init_free - resident - margin) - max(peak, reserve growth)
    # 79 GiB free at the init snapshot, 20 GiB resident after capture, a 2 GiB peak, util unset (1.0):
    # margin 1.5 GiB, 79 - 20 - 1.5 - 2 = 55.5 GiB = 59,592,671,232 B
    assert vllm_extensible_kv_bytes(79 * GiB, 20 * GiB, 2 * GiB) == 59_592_671_232
    # a 1 GiB peak: the 1 GiB floor binds (0.75 GiB < 1): 79 - 20 - 1 - 1 = 57 GiB
    assert vllm_extensible_kv_bytes(79 * GiB, 20 * GiB, 1 * GiB) == 57 * GiB
    # ROCm's floor is 3 GiB: 79 - 20 - 3 - 1 = 55 GiB
    assert vllm_extensible_kv_bytes(79 * GiB, 20 * GiB, 1 * GiB, rocm=True) == 55 * GiB
    # --gpu-memory-utilization 0.5 of an 80 GiB device (40 GiB requested) binds: min(40 - 20, 79 - 20 - 1.5) - 2 = 18
    assert vllm_extensible_kv_bytes(79 * GiB, 20 * GiB, 2 * GiB, requested=40 * GiB) == 18 * GiB
    # torch's reservation growth above the peak is kept instead: 79 - 20 - 1.5 - 3 = 54.5 GiB
    assert vllm_extensible_kv_bytes(79 * GiB, 20 * GiB, 2 * GiB, reserve_growth=3 * GiB) == 54 * GiB + GiB // 2
    # nothing left: floored at 0 (10 - 9 - 1 - 2 < 0)
    assert vllm_extensible_kv_bytes(10 * GiB, 9 * GiB, 2 * GiB) == 0


def test_0_34_runs_the_v2_runner_only():
    # v1/worker/gpu_model_runner.py is gone from the 0.34.0 wheel; VLLM_USE_V2_MODEL_RUNNER=0 raises ValueError
    assert vllm_model_runner("0.34", "qwen3_next", moe=True, hybrid=True, quantized=True) == "V2"
    assert vllm_model_runner("0.34", "llama", False, False, False, speculative_method="ngram") == "V2"
