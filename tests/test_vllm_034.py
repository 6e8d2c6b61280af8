"""vLLM 0.34.0 read against 0.33.0 (2026-12-03, pip download vllm==0.34.0 / 0.33.0 --no-deps): what changed in the
memory accounting kvplan models, and why the "0.34" profile is listed but refuses to plan (VLLM_034_REFUSAL)."""

import pytest

from kvplan import load_preset
from kvplan.engines import (
    VLLM_034_REFUSAL,
    VLLM_CHANGES,
    VLLM_DEFAULT_VERSION,
    VLLM_GPU_MEMORY_UTILIZATION,
    VLLM_PROFILES,
    EngineConfig,
    vllm_default_block_size,
    vllm_extensible_kv_bytes,
    vllm_has,
    vllm_mla_default,
    vllm_model_runner,
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
    assert VLLM_PROFILES["0.33"].releases == "0.33.0 - 0.33.x" and VLLM_PROFILES["0.32"].releases == "0.32.0"
    assert vllm_profile_for_release("0.34.0") == "0.34" and vllm_profile_for_release("0.33.1") == "0.33"
    assert VLLM_DEFAULT_VERSION == "0.33"  # the newest profile kvplan plans
    # config/cache.py resolved_gpu_memory_utilization: 1.0 with the extensible KV cache (the CUDA / ROCm default),
    # DEFAULT_GPU_MEMORY_UTILIZATION 0.92 without; 0.33.0: gpu_memory_utilization = 0.92
    assert VLLM_GPU_MEMORY_UTILIZATION["0.33"] == 0.92 and VLLM_GPU_MEMORY_UTILIZATION["0.34"] == 1.0
    for change in ("extensible_kv_cache", "block_size_64", "v1_runner_removed", "capture_split_sm100",
                   "dsa_indexer_decode_logits"):
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


def test_hybrid_attention_blocks_align_from_64_on_0_34():
    # platforms/interface.py _align_hybrid_block_size, the same code in 0.33.0 and 0.34.0: attention block =
    # max(kernel minimum, cache_config.block_size) x cdiv(mamba page, that x attention bytes a token). Its block_size
    # is the default, 16 in 0.33 and 64 in 0.34 (block_size_64), so 0.34's default is 0.33 with --block-size 64.
    # Qwen3-Next-80B-A3B at TP 4: attention 2 (K, V) x 1 KV head x 256 x 2 B = 1,024 B a token; a GDN state
    # 3 x (2 x 16 x 128 + 32 x 128) / 4 x 2 B = 12,288 conv + 8 x 128 x 128 x 2 B = 262,144 ssm = 274,432 B
    # = 268 tokens of attention: 16 x cdiv(268, 16) = 272 (0.33) vs 64 x cdiv(268, 64) = 320 (0.34)
    from kvplan.parallel import Layout
    spec = load_preset("qwen3-next-80b-a3b")
    at = {bs: plan(spec, get_gpu("H200"), EngineConfig(vllm_version="0.33", kv_cache_memory_bytes=20 * GiB,
                                                       max_model_len=32768, block_size=bs, enable_prefix_caching=False),
                   Layout(tp=4)) for bs in (None, 64)}
    assert [at[None].block_size, at[64].block_size] == [272, 320]
    # a block = 12 tensors (12 attention layers; 36 GDN layers in 3 groups of 12) x a 272 / 320-token page of
    # 1,024 B a token: 21,474,836,480 // 3,342,336 = 6,425 vs // 3,932,160 = 5,461 blocks; a 32K request
    # cdiv(32768, 272) = 121 vs cdiv(32768, 320) = 103 attention blocks + 3 state pages (one a GDN group): 124 vs 106
    assert [at[None].num_blocks, at[64].num_blocks] == [6_425, 5_461]
    assert [at[None].blocks_per_request, at[64].blocks_per_request] == [124, 106]


def test_a_0_34_command_line_names_the_profile_and_its_new_switch():
    from kvplan.vllm_args import parse_vllm_command
    # the image tag picks the "0.34" profile (whose plans are refused); --enable-extensible-kv-cache (0.34.0
    # engine/arg_utils.py, a switch) takes no value: --max-model-len after it is still read
    a = parse_vllm_command("docker run --gpus all vllm/vllm-openai:v0.34.0 --model Qwen/Qwen3-8B "
                           "--no-enable-extensible-kv-cache --max-model-len 4096")
    assert a.vllm_version == "0.34" and a.max_model_len == 4096 and a.unknown == ()
    assert any(n.startswith("--no-enable-extensible-kv-cache: not modeled") for n in a.notes)


def test_the_app_lists_0_34_and_shows_its_refusal():
    from tests.app_util import run_app
    at = run_app({"v": "1", "m": "llama-3.1-8b", "vv": "0.34"})  # a link's vv= takes every profile key
    assert not at.exception
    assert any("vLLM 0\\.34\\.0 is read but not planned" in e.value for e in at.error), [e.value for e in at.error]
