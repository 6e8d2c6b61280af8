"""vLLM 0.34.0 read against 0.33.0 (2026-12-03, pip download vllm==0.34.0 / 0.33.0 --no-deps): what changed in the
memory accounting kvplan models, the "0.34" profile's extensible-KV pool (plan._extensible_budget, from kvplan's
estimates of each part) and the cases it still refuses (plan._vllm_034_refusal)."""

import pytest

from kvplan import load_preset
from kvplan.engines import (
    VLLM_034_PLAN_NOTE,
    VLLM_034_REFUSAL,
    VLLM_CHANGES,
    VLLM_DEFAULT_VERSION,
    VLLM_GPU_MEMORY_UTILIZATION,
    VLLM_PROFILES,
    EngineConfig,
    vllm_default_block_size,
    vllm_extensible_blocks,
    vllm_extensible_kv_bytes,
    vllm_has,
    vllm_mla_context_step_bytes,
    vllm_mla_context_tokens,
    vllm_mla_default,
    vllm_model_runner,
    vllm_profile_for_release,
    vllm_prompt_logprobs_step_bytes,
)
from kvplan.errors import PlanInputError
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.units import GiB, MiB

H100 = get_gpu("H100-SXM")


def test_the_0_34_profile_is_its_own_line_and_not_the_default():
    prof = VLLM_PROFILES["0.34"]
    assert prof.first_release == (0, 34, 0) and prof.releases == "0.34.0 (newest, planned from estimates)"
    assert VLLM_PROFILES["0.33"].releases == "0.32.0 - 0.33.x"
    assert vllm_profile_for_release("0.34.0") == "0.34" and vllm_profile_for_release("0.33.1") == "0.33"
    assert VLLM_DEFAULT_VERSION == "0.33"  # 0.34 plans from unchecked estimates: the default is the lead's call
    # config/cache.py resolved_gpu_memory_utilization: 1.0 with the extensible KV cache (the CUDA / ROCm default),
    # DEFAULT_GPU_MEMORY_UTILIZATION 0.92 without; 0.33.0: gpu_memory_utilization = 0.92
    assert VLLM_GPU_MEMORY_UTILIZATION["0.33"] == 0.92 and VLLM_GPU_MEMORY_UTILIZATION["0.34"] == 1.0
    for change in ("extensible_kv_cache", "block_size_64", "v1_runner_removed", "capture_split_sm100",
                   "dsa_indexer_decode_logits"):
        assert VLLM_CHANGES[change][0] == (0, 34, 0)
        assert vllm_has("0.34", change) and not vllm_has("0.33", change)


def test_a_typed_kv_size_plans_0_34_exactly_with_64_token_blocks():
    spec = load_preset("llama-3.1-8b")
    # a typed KV size turns the extensible cache off in 0.34.0 (_resolve_extensible_kv_cache): the pool is the typed
    # bytes, in 64-token blocks (DEFAULT_BLOCK_SIZE): 10 GiB / (64 x 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B
    # = 8 MiB) = 1,280 blocks = 81,920 tokens; 0.33: 16-token blocks of 2 MiB, 5,120 blocks, the same tokens
    at = {v: plan(spec, H100, EngineConfig(vllm_version=v, kv_cache_memory_bytes=10 * GiB, max_model_len=8000))
          for v in ("0.33", "0.34")}
    assert (at["0.34"].block_size, at["0.34"].num_blocks, at["0.34"].kv_cache_tokens) == (64, 1_280, 81_920)
    assert (at["0.33"].block_size, at["0.33"].num_blocks) == (16, 5_120)
    assert VLLM_034_PLAN_NOTE not in at["0.34"].warnings  # nothing estimated: the typed pool is exact
    # its "outside the budget" row is 0.34's default without the extensible cache, 0.92: 0.08 x 85,029,615,043 B
    outside = next(t for t in at["0.34"].ranks[0].terms if t.name.startswith("outside the budget"))
    assert outside.name == "outside the budget: (1 - 0.92) x device" and outside.bytes == 6_802_369_203


def _terms(p):
    return {t.name.split(" (")[0]: t for t in p.ranks[0].terms}


def test_llama_3_1_8b_on_one_h100_plans_the_extensible_pool():
    # 0.34 default on an H100 (85,029,615,043 B), 8,192 tokens, 8,192 batched / 1,024 seqs (get_batch_defaults):
    #   free at the init snapshot F = 85,029,615,043 - 547,608,330 (CUDA context, 0.51 GiB) = 84,482,006,713
    #   resident R = 16,094,076,928 weights + 268,435,456 non-torch + 558,170,112 V2 sampler state
    #              + 667,942,912 CUDA graphs (captured before sizing) = 17,588,625,408
    #   transient T = 1,050,673,152 (the 0.33 profile peak; the prompt-logprobs step is 8192 x 4096 x 2 + 1024 x
    #              128,256 x 2 = 329,777,152, below it); margin M = max(1 GiB, 0.75 x T = 788,004,864) = 1 GiB
    #   pool = min(85,029,615,043 - R, F - R - M) - T = 65,819,639,481 - 1,050,673,152 = 64,768,966,329 B
    spec = load_preset("llama-3.1-8b")
    p = plan(spec, H100, EngineConfig(vllm_version="0.34", max_model_len=8192))
    t = _terms(p)
    assert t["CUDA context before the init snapshot"].bytes == 547_608_330
    assert t["CUDA graphs"].bytes == 667_942_912 and t["CUDA graphs"].applied
    assert t["activation peak"].bytes == 1_050_673_152 and t["activation peak"].applied
    assert t["sizing step: prompt logprobs over 8192 tokens"].bytes == 329_777_152
    assert not t["sizing step: prompt logprobs over 8192 tokens"].applied
    assert t["margin kept free"].bytes == GiB
    assert p.ranks[0].kv_pool_bytes == 64_768_966_329
    assert vllm_extensible_kv_bytes(84_482_006_713, 17_588_625_408, 1_050_673_152, 85_029_615_043) == 64_768_966_329
    # 32 segments (one a layer) of 64 x 8 x 128 x 2 x 2 = 262,144 B a block: 64,768,966,329 // (32 x 2 MiB) = 965
    # whole granules a segment = 965 x 8 = 7,720 blocks of 64 = 494,080 tokens; a request cdiv(8192, 64) = 128
    # blocks, (7,720 - 1 null) // 128 = 60 at once (0.33: 28,413 blocks of 16 = 454,608 tokens)
    assert (p.block_size, p.num_blocks, p.kv_cache_tokens, p.blocks_per_request) == (64, 7_720, 494_080, 128)
    assert p.max_num_seqs_at_len == 60 and p.fits
    assert plan(spec, H100, EngineConfig(vllm_version="0.33", max_model_len=8192)).kv_cache_tokens == 454_608
    assert VLLM_034_PLAN_NOTE in p.warnings and p.model_runner == "V2"
    # 7,720 x 8 MiB = 64,760,053,760 B = 60.3125 GiB committed
    # first the capacity reserved before warmup: requested - (weights + non-torch + sampler state) - the profile
    # peak, no graph estimate = 85,029,615,043 - 16,920,682,496 - 1,050,673,152 = 67,058,259,395 B = 62.45 GiB
    capacity = t["reserved capacity before warmup"]
    assert capacity.bytes == 67_058_259_395 and not capacity.applied
    assert p.engine_log[1:3] == ["Available KV cache memory: 62.45 GiB",
                                 "Extended KV cache to 7720 blocks (60.31 GiB)."]


def test_a_request_too_long_for_the_0_34_pool_gets_the_after_warmup_error():
    # Qwen3-32B at 131,072 on one H100: 64 layers x 64 x 8 x 128 x 2 x 2 B = 16 MiB a block; a request 2,048 blocks
    # = 32.00 GiB against (num_blocks - 1) x 16 MiB (shrink_kv_cache_configs holds the null block back)
    p = plan(load_preset("qwen3-32b"), H100, EngineConfig(vllm_version="0.34", max_model_len=131072))
    assert not p.fits and p.blocks_per_request == 2_048
    available = (p.num_blocks - 1) * 16 * MiB
    assert f"available KV cache memory ({available / GiB:.2f} GiB)" in p.start_error
    assert f"maximum model length is {(p.num_blocks - 1) * 64}." in p.start_error
    assert "The extensible KV cache already takes all device memory left after the model" in p.start_error


def test_a_lower_utilization_caps_the_0_34_pool():
    # --gpu-memory-utilization 0.5: requested = ceil(0.5 x 85,029,615,043) = 42,514,807,522 binds:
    # 42,514,807,522 - 17,588,625,408 - 1,050,673,152 = 23,875,508,962 B; // (32 x 2 MiB) = 355 granules -> 2,840 blocks
    p = plan(load_preset("llama-3.1-8b"), H100, EngineConfig(vllm_version="0.34", max_model_len=8192,
                                                            gpu_memory_utilization=0.5))
    assert p.ranks[0].kv_pool_bytes == 23_875_508_962 and p.num_blocks == 2_840
    # the cap row: (F - M) - requested = 84,482,006,713 - 1,073,741,824 - 42,514,807,522 = 40,893,457,367
    assert _terms(p)["beyond --gpu-memory-utilization 0.5"].bytes == 40_893_457_367


def test_qwen3_30b_a3b_on_an_h200_keeps_its_moe_workspace_resident():
    # H200 (150,119,844,413 B), 32,768 tokens: R = 61,075,779,584 weights + 268,435,456 non-torch + 661,225,472
    # sampler state + 536,870,912 fused-MoE workspace (kept after the forward: resident, not transient) +
    # 1,061,158,912 graphs = 63,603,470,336; T = 881,590,272 (0.33's peak) - 536,870,912 = 344,719,360
    # (= 1024 x 151,936 x 2 + 8192 x 2048 x 2, the logits alone; the prompt-logprobs step is the same at 1,024 rows);
    # M = 1 GiB; pool = 150,119,844,413 - 547,608,330 - R - 1 GiB - T = 84,550,304,563 B
    p = plan(load_preset("qwen3-30b-a3b"), get_gpu("H200"), EngineConfig(vllm_version="0.34", max_model_len=32768))
    t = _terms(p)
    assert t["fused-MoE workspace kept after warmup"].bytes == 536_870_912
    assert t["activation peak"].bytes == 344_719_360 and p.ranks[0].kv_pool_bytes == 84_550_304_563
    # 48 segments of 64 x 4 x 128 x 2 x 2 = 131,072 B: 84,550,304,563 // (48 x 2 MiB) = 839 granules x 16 blocks
    # = 13,424 blocks = 859,136 tokens
    assert (p.block_size, p.num_blocks, p.kv_cache_tokens) == (64, 13_424, 859_136)


def test_deepseek_v3_tp8_on_h200_charges_the_mla_context_step():
    # MLA at 64 tokens (FLASH_ATTN_MLA on Hopper takes 0.34's 64): 61 layers x 64 x 576 x 2 B = 73,728 B a page.
    # The largest transient is the MLA context-prefill sizing step: workspace min(max(8 x 32,768, 4 x 1,024 x 64),
    # 65,536) = 65,536 tokens x (16 heads x (2 x 128 + 128 + 64) + 512) x 2 B = 1,006,632,960 (the profile's
    # 382,205,952 and the prompt-logprobs step's 680,067,072 are below it); M = max(1 GiB, 754,974,720) = 1 GiB.
    # R = 85,416,895,520 + 1,395,864,371 non-torch (TP 8) + 562,626,560 + 1,879,048,192 MoE workspace
    # + 1,541,537,792 graphs = 90,795,972,435; pool = 149,572,236,083 - R - 1 GiB - 1,006,632,960 = 56,695,888,864
    assert vllm_mla_context_tokens(32768, 1024, 64) == 65_536
    assert vllm_mla_context_step_bytes(16, 128, 64, 128, 512, 65_536, 2) == 1_006_632_960
    p = plan(load_preset("deepseek-v3"), get_gpu("H200"), EngineConfig(vllm_version="0.34", max_model_len=32768),
             Layout(tp=8))
    t = _terms(p)
    assert t["sizing step: MLA context prefill over 65,536 workspace tokens"].applied
    assert not t["activation peak"].applied and not t["sizing step: prompt logprobs over 8192 tokens"].applied
    assert p.ranks[0].kv_pool_bytes == 56_695_888_864
    # 56,695,888,864 // (61 x 2 MiB) = 443 granules a layer; 443 x 2,097,152 // 73,728 = 12,600 blocks = 806,400
    assert (p.block_size, p.num_blocks, p.kv_cache_tokens) == (64, 12_600, 806_400)


def test_qwen3_next_tp4_hybrid_plans_from_64_aligned_blocks():
    # attention blocks align from 64: 320 tokens (test_hybrid_attention_blocks_align_from_64_on_0_34); 12 segments of
    # 320 x 1,024 = 327,680 B. Transient: the prompt-logprobs step at TP 4, 8192 x 2048 x 2 + 1024 x (37,984 shard +
    # 2 x 151,936 gathered and reshaped) x 2 = 733,675,520 (> the profile's 344,719,360); M = 1 GiB.
    # R = 39,962,699,904 + 1,261,646,643 + 661,225,472 + 671,088,640 + 876,085,248 = 43,432,745,907
    # pool = 149,572,236,083 - R - 1 GiB - 733,675,520 = 104,332,072,832; // (12 x 2 MiB) = 4,145 granules,
    # x 2 MiB / 327,680 = 26,528 blocks
    assert vllm_prompt_logprobs_step_bytes(2048, 151_936, 8192, 4, 2) == 733_675_520
    p = plan(load_preset("qwen3-next-80b-a3b"), get_gpu("H200"), EngineConfig(vllm_version="0.34", max_model_len=32768),
             Layout(tp=4))
    assert _terms(p)["sizing step: prompt logprobs over 8192 tokens"].applied
    assert (p.block_size, p.ranks[0].kv_pool_bytes, p.num_blocks) == (320, 104_332_072_832, 26_528)


def test_qwen3_5_text_only_hybrid_margin_follows_the_transient():
    # Qwen3.5-27B --language-model-only on one H100: a 2,542,796,800 B profile peak, so the margin is its 0.75:
    # 1,907,097,600 (> 1 GiB); R = 53,827,648,512 + 268,435,456 + 1,080,688,640 + 1,194,852,352 = 56,371,624,960
    # pool = 85,029,615,043 - 547,608,330 - R - 1,907,097,600 - 2,542,796,800 = 23,660,487,353
    p = plan(load_preset("qwen3.5-27b"), H100, EngineConfig(vllm_version="0.34", max_model_len=32768,
                                                           language_model_only=True))
    assert _terms(p)["margin kept free"].bytes == 1_907_097_600 and p.ranks[0].kv_pool_bytes == 23_660_487_353
    # 16 segments of 3,407,872 B (832-token blocks): 705 granules a segment, 705 x 2 MiB // 3,407,872 = 433 blocks
    assert (p.block_size, p.num_blocks) == (832, 433)


def test_extensible_blocks_commit_whole_granules():
    # 32 segments of 256 KiB: 10 GiB // 8 MiB = 1,280 blocks, each segment 160 whole granules
    assert vllm_extensible_blocks(10 * GiB, [256 * 1024] * 32) == 1_280
    # 1 MiB less: 159 granules a segment (10 GiB - 1 MiB) // 64 MiB = 159 -> 159 x 8 = 1,272 (not 1,279)
    assert vllm_extensible_blocks(10 * GiB - MiB, [256 * 1024] * 32) == 1_272
    assert vllm_extensible_blocks(0, [256 * 1024]) == 0


@pytest.mark.parametrize("name, gpu, engine, layout, words", [
    ("deepseek-v3.2", "H200", {}, Layout(tp=8), "DSA models"),
    ("llama-3.1-8b", "B200", {}, Layout(), "SM 10.x"),
    ("llama-3.1-8b", "H100-SXM", {"speculative_method": "ngram", "num_speculative_tokens": 3}, Layout(),
     "speculative decoding"),
    ("qwen2.5-vl-7b-instruct", "H100-SXM", {}, Layout(), "multimodal encoder"),
    ("llama-3.1-70b", "H100-SXM", {}, Layout(tp=2, pp=2), "pipeline"),
    ("llama-3.1-8b", "MI300X", {}, Layout(), "on ROCm the default block"),
])
def test_what_0_34_still_refuses(name, gpu, engine, layout, words):
    with pytest.raises(PlanInputError) as exc:
        plan(load_preset(name), get_gpu(gpu), EngineConfig(vllm_version="0.34", **engine), layout)
    assert exc.value.field == "vllm_version" and words in str(exc.value)
    assert "plan with profile 0.33" in str(exc.value)  # the fallback named


def test_0_34_on_gaudi_is_refused_by_name():
    # the extensible cache is CUDA / ROCm only (_resolve_extensible_kv_cache) and no vllm-gaudi 0.34 line was read
    with pytest.raises(PlanInputError) as exc:
        plan(load_preset("llama-3.1-8b"), get_gpu("Gaudi3"), EngineConfig(vllm_version="0.34"))
    assert str(exc.value).endswith(VLLM_034_REFUSAL) or VLLM_034_REFUSAL in str(exc.value)


def test_rocm_keeps_a_3_gib_margin_floor():
    # MI300X with --block-size 64: the margin floor is 3 GiB on ROCm (KV_CACHE_MARGIN_FLOOR_BYTES); the Llama-3.1-8B
    # transient (1,050,673,152 x 0.75 = 788,004,864) is below it
    p = plan(load_preset("llama-3.1-8b"), get_gpu("MI300X"), EngineConfig(vllm_version="0.34", block_size=64,
                                                                        max_model_len=8192))
    assert _terms(p)["margin kept free"].bytes == 3 * GiB and p.block_size == 64


def test_b200_plans_0_34_eager():
    # without CUDA graphs the split capture sizes do not matter: B200 plans (no graph row)
    p = plan(load_preset("llama-3.1-8b"), get_gpu("B200"), EngineConfig(vllm_version="0.34", enforce_eager=True,
                                                                       max_model_len=8192))
    assert p.block_size == 64 and "CUDA graphs" not in _terms(p) and p.num_blocks > 0


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
    # the image tag picks the "0.34" profile; --enable-extensible-kv-cache (0.34.0
    # engine/arg_utils.py, a switch) takes no value: --max-model-len after it is still read
    a = parse_vllm_command("docker run --gpus all vllm/vllm-openai:v0.34.0 --model Qwen/Qwen3-8B "
                           "--no-enable-extensible-kv-cache --max-model-len 4096")
    assert a.vllm_version == "0.34" and a.max_model_len == 4096 and a.unknown == ()
    assert any(n.startswith("--no-enable-extensible-kv-cache: not modeled") for n in a.notes)


def test_the_app_lists_0_34_and_plans_it():
    from tests.app_util import run_app
    at = run_app({"v": "1", "m": "llama-3.1-8b", "vv": "0.34"})  # a link's vv= takes every profile key
    assert not at.exception
    assert not at.error, [e.value for e in at.error]
    shown = " ".join(w.value for w in at.warning) + " ".join(str(m.value) for m in at.markdown)
    assert "no public 0\\.34 log has checked" in shown  # markdown-escaped
