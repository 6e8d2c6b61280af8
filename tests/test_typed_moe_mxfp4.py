"""A typed --moe-backend for gpt-oss's MXFP4 experts, and a held MoE workspace under the forward's peak.

- kvplan.vllm_layouts.gpt_oss_mxfp4_typed_backend: vLLM's MXFP4 oracle (fused_moe/oracle/mxfp4.py, 0.19.0 - 0.33.0
  wheels, read 2026-12-03) maps a typed name through map_mxfp4_backend and keeps it or raises (_return_or_raise);
  0.17.0 / 0.18.0's quantization/mxfp4.py get_mxfp4_backend never reads the flag.
- kvplan.plan.vllm_gpt_oss_marlin_moe_workspace_bytes: MarlinExperts' workspace, held by the workspace manager.
- kvplan.plan.activation_estimate: v1/worker/workspace.py keeps one buffer that grows to the largest request and is
  never freed, allocated inside the dummy forward, so a held MoE workspace is under the forward's peak too.
"""
import pytest

from kvplan.engines import EngineConfig
from kvplan.errors import PlanInputError
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import (
    _held_moe_workspace_bytes,
    activation_estimate,
    plan,
    unsized_moe_backend_note,
    vllm_gpt_oss_marlin_moe_workspace_bytes,
)
from kvplan.presets import load_preset
from kvplan.vllm_layouts import gpt_oss_mxfp4_typed_backend, mxfp4_typed_names, vllm_mxfp4_extra_bytes


def _plan(model, gpu, version, moe_backend, **kw):
    engine = EngineConfig(vllm_version=version, max_model_len=8192, moe_backend=moe_backend, **kw)
    return plan(load_preset(model), get_gpu(gpu), engine, Layout(tp=1))


def _act(p):
    return next(t.bytes for t in p.ranks[0].terms if t.name.startswith("activation peak"))


def test_typed_backend_mapping_by_release_and_arch():
    # marlin is MARLIN on any CUDA GPU; triton is auto's TRITON on Hopper; flashinfer_trtllm is auto's on SM 10.x
    assert gpt_oss_mxfp4_typed_backend("marlin", "sm90", "0.33") == ("marlin", None)
    assert gpt_oss_mxfp4_typed_backend("marlin", "sm100", "0.19") == ("marlin", None)
    assert gpt_oss_mxfp4_typed_backend("triton", "sm90", "0.30") == ("triton", None)
    assert gpt_oss_mxfp4_typed_backend("flashinfer_trtllm", "sm100", "0.33") == ("trtllm", None)
    # triton on SM 10.x runs (capability 9.0 - 10.x) in _swizzle_mxfp4's Blackwell layouts ("triton_bw")
    assert gpt_oss_mxfp4_typed_backend("triton", "sm100", "0.33") == ("triton_bw", None)
    # an accepted name kvplan does not size: auto's layout (warned by the plan)
    assert gpt_oss_mxfp4_typed_backend("flashinfer_cutlass", "sm90", "0.33") == ("triton", None)
    # 0.17 / 0.18: get_mxfp4_backend ignores --moe-backend, so marlin on an H100 is still Triton
    assert mxfp4_typed_names("0.18") is None
    assert gpt_oss_mxfp4_typed_backend("marlin", "sm90", "0.18") == ("triton", None)
    # refusals: a name outside map_mxfp4_backend, a backend the device cannot run
    layout, why = gpt_oss_mxfp4_typed_backend("cutlass", "sm90", "0.33")
    assert layout == "triton" and why.startswith("moe_backend='cutlass' is not supported for MXFP4 MoE. Expected one "
                                                 "of ['b12x', 'deep_gemm', 'flashinfer_trtllm',")
    assert "'humming'" not in gpt_oss_mxfp4_typed_backend("cutlass", "sm90", "0.20")[1]  # HUMMING joined in 0.21.0
    assert "'humming'" in gpt_oss_mxfp4_typed_backend("cutlass", "sm90", "0.21")[1]
    assert "'FLASHINFER_TRTLLM_MXFP4_BF16'" in gpt_oss_mxfp4_typed_backend("flashinfer_trtllm", "sm90", "0.30")[1]
    assert "'TRITON'" in gpt_oss_mxfp4_typed_backend("triton", "other", "0.30")[1]


def test_marlin_workspace_by_hand():
    # gpt-oss-120b: H 2,880 -> round_up(., 256) = 3,072 (the padded hidden states), I 2,880 -> round_up(., 128) =
    # 2,944, top-4, TP 1, 8,192 tokens, bf16: workspace1 max(32,768 x max(2,944, 3,072), 8,192 x 3,072) = 32,768 x
    # 3,072; workspace2 32,768 x max(5,888, 3,072) = 32,768 x 5,888; (100,663,296 + 192,937,984) x 2 = 587,202,560
    spec = load_preset("gpt-oss-120b")
    assert vllm_gpt_oss_marlin_moe_workspace_bytes(spec, 1, 8192, 2) == 587_202_560
    # TP 2: I / 2 = 1,440 -> 1,536; max(1,536, 3,072) = 3,072, max(3,072, 3,072) = 3,072: 32,768 x 6,144 x 2
    assert vllm_gpt_oss_marlin_moe_workspace_bytes(spec, 2, 8192, 2) == 32_768 * 6_144 * 2 == 402_653_184
    # held only where the experts run MarlinExperts on the workspace manager (0.17+)
    marlin, auto = EngineConfig(moe_backend="marlin", vllm_version="0.30"), EngineConfig(vllm_version="0.30")
    assert _held_moe_workspace_bytes(spec, marlin, Layout(tp=1), 8192, 2, "H100-SXM", "0.30") == 587_202_560
    assert _held_moe_workspace_bytes(spec, auto, Layout(tp=1), 8192, 2, "H100-SXM", "0.30") == 0  # Triton monolithic
    assert _held_moe_workspace_bytes(spec, auto, Layout(tp=1), 8192, 2, "A100-80GB", "0.30") == 587_202_560  # Marlin
    assert _held_moe_workspace_bytes(spec, auto, Layout(tp=1), 8192, 2, "A100-80GB", "0.16") == 0  # before 0.17


def test_gpt_oss_120b_h100_0_30_auto_marlin_triton():
    auto = _plan("gpt-oss-120b", "H100-SXM", "0.30", "auto")
    marlin = _plan("gpt-oss-120b", "H100-SXM", "0.30", "marlin")
    triton = _plan("gpt-oss-120b", "H100-SXM", "0.30", "triton")
    # triton is what auto picks on Hopper (bundled triton_kernels): the same plan, no warning
    assert triton.ranks[0].kv_pool_bytes == auto.ranks[0].kv_pool_bytes == 9_202_557_072
    assert not [w for w in triton.warnings if "--moe-backend" in w]
    # weights: an expert on Marlin (H 3,072, I 2,944, bf16 biases) = 13,565,952 values + 847,872 scales + 17,920
    # bias = 14,431,744 B; on Triton at 0.30 (pack-size padding, I 2,880 kept) 12,441,600 + swizzled scales with K
    # padded 90 -> 92 (0.26.0+) 5,888 x 92 + 3,072 x 92 = 824,320 + no kept scales (freed from 0.25.0) + 34,560 fp32
    # bias = 13,300,480 B; 1,131,264 B x 128 experts x 36 layers = 5,212,864,512
    w_auto, w_marlin = auto.ranks[0].weights_bytes, marlin.ranks[0].weights_bytes
    assert w_marlin - w_auto == 1_131_264 * 128 * 36 == 5_212_864_512
    # activation: with Marlin's held 587,202,560 the experts' intermediates are the workspace's, so the forward's own
    # part is 8,192 x (4 x 2,880 + 5,120 q/k/v) x 2 = 272,629,760, below the V2 sampler's 1,024 x 201,088 x 2 + 8,192
    # x 2,880 x 2 = 459,014,144: 459,014,144 + 587,202,560 = 1,046,216,704, still under the cold compile's
    # 201,088 x 2,880 x 2 = 1,158,266,880 embedding copy, the peak of both plans
    assert _act(auto) == _act(marlin) == 201_088 * 2_880 * 2 == 1_158_266_880
    # pool: 9,202,557,072 - 5,212,864,512 = 3,989,692,560 (8.57 -> 3.72 GiB; Triton's pool was 5.31 GiB while the
    # checkpoint's scales were counted kept, 14,060,160 B an expert)
    assert marlin.ranks[0].kv_pool_bytes == 9_202_557_072 - 5_212_864_512 == 3_989_692_560
    # without the compile copy (warm cache) the held workspace shows: 1,046,216,704 against auto's forward peak
    # 8,192 x (11,520 + 5,120 + 4 x 5,760) x 2 = 650,117,120
    warm = {"compile_cache": "warm"}
    assert _act(_plan("gpt-oss-120b", "H100-SXM", "0.30", "auto", **warm)) == 650_117_120
    assert _act(_plan("gpt-oss-120b", "H100-SXM", "0.30", "marlin", **warm)) == 459_014_144 + 587_202_560
    assert any(t.name.startswith("MXFP4 MoE layout: Marlin") for t in marlin.ranks[0].terms)


def test_gpt_oss_20b_b200_auto_marlin_trtllm_triton():
    # on the 0.32 line (0.32.0), whose V2 dummy sampler runs once: 0.33.0's second, fp32 pass would sit above both
    # forwards and hide the backends' difference in the peak (tests/test_vllm_v2_sampler_033.py)
    auto = _plan("gpt-oss-20b", "B200", "0.32", "auto")
    marlin = _plan("gpt-oss-20b", "B200", "0.32", "marlin")
    trtllm = _plan("gpt-oss-20b", "B200", "0.32", "flashinfer_trtllm")
    triton = _plan("gpt-oss-20b", "B200", "0.32", "triton")
    assert trtllm.ranks[0].kv_pool_bytes == auto.ranks[0].kv_pool_bytes == 158_188_224_622
    # TRTLLM at 0.32 pads as Marlin does (I to 128, H to 256) but keeps fp32 biases: Marlin's bf16 ones are
    # (2 x 2,944 + 3,072) x 2 = 17,920 B lighter an expert x 32 experts x 24 layers = 13,762,560 B
    assert auto.ranks[0].weights_bytes - marlin.ranks[0].weights_bytes == 17_920 * 32 * 24 == 13_762_560
    # B200 plans 16,384 batched tokens: auto's peak is the forward 16,384 x (11,520 + 5,120 + 23,040) x 2 =
    # 1,300,234,240. Marlin holds 16,384 x 4 x (3,072 + 5,888) x 2 = 1,174,405,120 under the larger of its forward
    # without the experts, 16,384 x 16,640 x 2 = 545,259,520, and the V2 sampler 1,024 x 201,088 x 2 + 16,384 x
    # 2,880 x 2 = 506,200,064: 545,259,520 + 1,174,405,120 = 1,719,664,640
    assert _act(auto) == 16_384 * 39_680 * 2 == 1_300_234_240
    assert _act(marlin) == 545_259_520 + 1_174_405_120 == 1_719_664_640
    # pool: 158,188,224,622 + 13,762,560 - (1,719,664,640 - 1,300,234,240) = 157,782,556,782
    assert marlin.ranks[0].kv_pool_bytes == 158_188_224_622 + 13_762_560 - 419_430_400 == 157_782_556_782
    # triton on SM 10.x (OAITritonExperts, no held workspace: auto's peak): _swizzle_mxfp4's BlackwellMXValueLayout
    # pads each packed row to 128 B, BlackwellMXScaleLayout the scales to (K / 32 to 8, N to 128), the checkpoint's
    # scales freed (0.25.0+), fp32 biases; an expert (I 2,880, H 2,880): 5,760 x 1,536 + 2,880 x 1,536 (values) +
    # 96 x 5,760 + 96 x 2,944 (scales) + 8,640 x 4 = 8,847,360 + 4,423,680 + 552,960 + 282,624 + 34,560 = 14,141,184;
    # TRTLLM's (I 2,944, H 3,072): 9,043,968 + 4,521,984 + 847,872 + 35,840 = 14,449,664: 308,480 B less an expert x
    # 768 = 236,912,640 B more pool, no warning (was auto's figures and the unsized-backend warning)
    assert triton.ranks[0].kv_pool_bytes == 158_188_224_622 + 308_480 * 768 == 158_425_137_262
    assert _act(triton) == _act(auto)
    assert next(t.bytes for t in triton.ranks[0].terms if t.name == "MXFP4 MoE layout: Triton (in weights)") == \
        (14_141_184 - 13_236_480) * 768 == 694_812_672  # over the checkpoint's 13,236,480 B an expert
    assert not [w for w in triton.warnings if w.startswith("--moe-backend triton: kvplan does not size")]


def test_refused_names_and_devices():
    with pytest.raises(PlanInputError, match=r"moe_backend='cutlass' is not supported for MXFP4 MoE"):
        _plan("gpt-oss-120b", "H100-SXM", "0.33", "cutlass")
    with pytest.raises(PlanInputError, match=r"'FLASHINFER_TRTLLM_MXFP4_BF16' does not support"):
        _plan("gpt-oss-120b", "H100-SXM", "0.30", "flashinfer_trtllm")
    with pytest.raises(PlanInputError, match=r"'TRITON' does not support"):
        _plan("gpt-oss-20b", "A100-80GB", "0.30", "triton")
    # 0.18 ignores the flag for MXFP4 experts: cutlass plans as auto, without a warning
    auto = _plan("gpt-oss-120b", "H100-SXM", "0.18", "auto")
    typed = _plan("gpt-oss-120b", "H100-SXM", "0.18", "cutlass")
    assert typed.ranks[0].kv_pool_bytes == auto.ranks[0].kv_pool_bytes
    assert not [w for w in typed.warnings if "--moe-backend" in w]


def test_unsized_note_per_format():
    oss, qwen = load_preset("gpt-oss-120b"), load_preset("qwen3-30b-a3b")
    e = lambda mb, v="0.33": EngineConfig(engine="vllm", vllm_version=v, moe_backend=mb)  # noqa: E731
    assert unsized_moe_backend_note(oss, e("marlin"), "H100-SXM") == ""
    assert unsized_moe_backend_note(oss, e("triton"), "H100-SXM") == ""
    assert unsized_moe_backend_note(oss, e("flashinfer_trtllm"), "B200") == ""
    assert unsized_moe_backend_note(oss, e("humming"), "H100-SXM").startswith("--moe-backend humming: kvplan does not "
                                                                              "size that backend for gpt-oss's")
    assert unsized_moe_backend_note(oss, e("humming", "0.18"), "H100-SXM") == ""  # ignored by 0.18
    # unquantized experts: triton is not sized (TritonExperts is sized for FP8 experts only)
    assert unsized_moe_backend_note(qwen, e("triton")).startswith("--moe-backend triton: kvplan does not size that "
                                                                  "MoE backend (only auto, marlin and cutlass are, "
                                                                  "and triton for FP8 experts)")


def test_held_workspace_under_the_forward_peak_and_a_non_last_stage():
    # activation_estimate: peak = max(forward', sampler) + held (one grown, never-freed workspace-manager buffer,
    # allocated inside the forward; forward' leaves out the experts, whose intermediates are that buffer).
    # Qwen3-30B-A3B TP 1, 8,192 tokens, bf16: forward 8,192 x (4 x 2,048 + 5,120 q/k/v + 8 x 1,536) x 2 =
    # 419,430,400; forward' 8,192 x (8,192 + 5,120) x 2 = 218,103,808; held 536,870,912 (vllm_moe_workspace_bytes)
    qwen = load_preset("qwen3-30b-a3b")
    assert activation_estimate(qwen, 1, 8192, 1024, 2, 3.72, False, 0) == 8192 * 25_600 * 2 == 419_430_400
    # a non-last PP stage: 218,103,808 + 536,870,912 = 754,974,720 (before: 419,430,400, below the held buffer)
    assert activation_estimate(qwen, 1, 8192, 1024, 2, 3.72, False, 536_870_912) == 754_974_720
    # the last stage with a sampler above forward' is unchanged: 1 x 151,936 x 4 x 3.72 -> 2,260,807 + 8,192 x 2,048
    # x 2 = 35,815,239 is below forward' 218,103,808, so 218,103,808 + 536,870,912; the V2 runner's 1,024 rows
    # (0.5 copies: 1,024 x 151,936 x 2 + 33,554,432 = 344,719,360) are above it: 344,719,360 + 536,870,912
    assert activation_estimate(qwen, 1, 8192, 1, 2, 3.72, True, 536_870_912) == 754_974_720
    assert activation_estimate(qwen, 1, 8192, 1024, 2, 0.5, True, 536_870_912) == 881_590_272


def test_glm52_fp8_pp2_h200_stage0_holds_the_triton_workspace_and_the_dsa_share():
    # GLM-5.2 FP8 TP 8 PP 2 on H200, vLLM 0.28, 8,192 batched tokens: block-FP8 experts on TRITON (Hopper, no EP)
    # hold (8,192 x 8 x 6,144 + 8,192 x 8 x 6,144) x 2 = 1,610,612,736 B (K = 6,144 outweighs N = 512 / 256),
    # which also holds the DSA indexer's 32,768 x 40 x 132 + 1 MiB = 174,063,616 B (the same buffer: no DSA term).
    # Stage 0 runs no sampler: its peak is the forward without the experts (the 3 dense layers' 2 x 12,288 gate +
    # up are the widest own MLP) 8,192 x (4 x 6,144 + 45,056 / 8 + 24,576 / 8) x 2 = 545,259,520 + the indexer's
    # 512 MiB dummy logits 536,870,912 + the held 1,610,612,736 = 2,692,743,168 (before: 8,192 x (24,576 + 5,632 +
    # 36,864 / 8) x 2 = 570,425,344 + 536,870,912 = 1,107,296,256, the held buffer missing under the forward).
    # The last stage's sampler peak held it already.
    from tests.test_engine_logs_found import _glm_5_2_fp8

    engine = EngineConfig(vllm_version="0.28", max_model_len=32768, max_num_batched_tokens=8192,
                          kv_cache_dtype="fp8")
    p = plan(_glm_5_2_fp8(), get_gpu("H200"), engine, Layout(tp=8, pp=2))
    s0, s1 = p.ranks[0], next(r for r in p.ranks if r.pp_stage == 1)
    assert _act(p) == 545_259_520 + 536_870_912 + 1_610_612_736 == 2_692_743_168
    assert not [t for t in s0.terms if t.name.startswith("DSA indexer workspace")]
    assert s0.kv_pool_bytes == 88_429_158_953 - (2_692_743_168 - 1_107_296_256) == 86_843_712_041
    # last stage: 1,024 x 154,880 x 4 x 3.72 + 8,192 x 6,144 x 2 = 2,460,588,441 sampler + the held 1,610,612,736
    assert next(t.bytes for t in s1.terms if t.name.startswith("activation peak")) == 2_460_588_441 + 1_610_612_736


def test_glm52_fp8_gb200_ep_holds_no_moe_workspace():
    # GB200 (SM 10.x): block-FP8 experts take the monolithic FLASHINFER_TRTLLM kernel, nothing held, so the DSA
    # indexer buffer is charged whole (174,063,616 B) and no MoE workspace enters the peak in either case
    from tests.test_engine_logs_found import _glm_5_2_fp8

    engine = EngineConfig(vllm_version="0.28", max_model_len=32768, max_num_batched_tokens=8192,
                          kv_cache_dtype="fp8")
    spec = _glm_5_2_fp8()
    assert _held_moe_workspace_bytes(spec, engine, Layout(tp=8, ep=True), 8192, 2, "GB200", "0.28") == 0
    p = plan(spec, get_gpu("GB200"), engine, Layout(tp=8, ep=True))
    assert next(t.bytes for t in p.ranks[0].terms if t.name.startswith("DSA indexer workspace")) == 174_063_616
    assert p.ranks[0].kv_pool_bytes == 79_094_674_008  # unchanged by the held-workspace rule


def test_mxfp4_extra_bytes_follow_the_typed_backend():
    # the layout function itself: gpt-oss-120b TP 1 on sm90 at 0.30, Marlin over Triton = 5,212,864,512 B (above)
    spec = load_preset("gpt-oss-120b")
    args = (spec, Layout(tp=1), 0, None, "sm90", "0.30", None)
    assert vllm_mxfp4_extra_bytes(*args, "marlin") - vllm_mxfp4_extra_bytes(*args, "auto") == 5_212_864_512
    assert vllm_mxfp4_extra_bytes(*args, "triton") == vllm_mxfp4_extra_bytes(*args, "auto")


def test_blackwell_triton_expert_bytes_by_release():
    # mxfp4_expert_bytes "triton_bw", gpt-oss-20b at TP 2 (I 1,440 -> 1,472): 2,944 x 1,536 + 2,880 x 768 (the
    # packed 1,440 / 736 to 128 B) + 96 x 2,944 + 48 x 2,944 (scales: K / 32 90 / 46 to 8, N 2,944 / 2,880 to 128) +
    # 5,824 x 4 (fp32 biases) = 7,181,056 at 0.33; 0.24 keeps the checkpoint's scales too: + 2,944 x 90 + 2,880 x 46 =
    # 264,960 + 132,480 -> 7,578,496 (VLLM_CHANGES "mxfp4_triton_scales_freed", 0.25.0)
    from kvplan.vllm_layouts import mxfp4_expert_bytes

    assert mxfp4_expert_bytes(2880, 1440, True, "triton_bw", vllm_version="0.33") == \
        4_521_984 + 2_211_840 + 282_624 + 141_312 + 23_296 == 7_181_056
    assert mxfp4_expert_bytes(2880, 1440, True, "triton_bw", vllm_version="0.24") == 7_181_056 + 264_960 + 132_480
