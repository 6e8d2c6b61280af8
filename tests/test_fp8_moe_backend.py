"""Which experts class vLLM's FP8 MoE oracle picks, per GPU platform and release, and the workspace it keeps held.

Sources: model_executor/layers/fused_moe/oracle/fp8.py ``_get_priority_backends`` / ``select_fp8_moe_backend`` and
each experts class's ``is_supported_config`` and ``workspace_shapes`` (TritonExperts, FlashInferExperts,
TrtLlmFp8Experts*, TritonOrDeepGemmExperts, TritonOrCutlassExperts), modular_kernel.py ``_allocate_buffers``, read
2026-12-03 in the vllm 0.17.0 - 0.34.0 wheels (kvplan.plan.vllm_fp8_moe_backend). The activation peak's held MoE
workspace sits under the sampler: peak = max(forward, sampler + workspace) (kvplan.plan.activation_estimate).
"""
import json
from pathlib import Path

from kvplan import load_preset, parse_config
from kvplan.engines import VLLM_PROFILES, EngineConfig
from kvplan.gpus import custom_gpu, get_gpu
from kvplan.parallel import Layout
from kvplan.plan import (
    _held_moe_workspace_bytes,
    plan,
    vllm_flashinfer_fp8_moe_workspace_bytes,
    vllm_fp8_moe_backend,
    vllm_fp8_moe_note,
    vllm_moe_workspace_bytes,
    vllm_moe_workspace_held,
)

PRESETS = Path(__file__).parents[1] / "kvplan" / "presets"


def _edit(name: str, **fields):
    cfg = json.loads((PRESETS / f"{name}.json").read_text())
    cfg.update(fields)
    return parse_config(cfg, f"{name}-edited")


def _qwen3_235b_fp8():  # Qwen3-235B-A22B-Instruct-2507-FP8: 128 x 128 fp8 blocks, dynamic activations
    return _edit("qwen3-235b-a22b", max_position_embeddings=262144, rope_theta=5000000.0, quantization_config={
        "activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]})


def _qwen3_30b_fp8():  # Qwen3-30B-A3B-FP8: the same block scheme on K 2048, moe_intermediate 768, top-8
    return _edit("qwen3-30b-a3b", quantization_config={
        "activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]})


def _held(spec, gpu: str, version: str, layout: Layout, tokens: int = 8192, **engine) -> int:
    return _held_moe_workspace_bytes(spec, EngineConfig(vllm_version=version, **engine), layout, tokens, 2, gpu,
                                     version)


def test_qwen3_235b_fp8_tp4_rtx_pro_0_27_triton_workspace():
    # sm120, block FP8: FLASHINFER_TRTLLM is family 100 only, FLASHINFER_CUTLASS takes block scales on 9.0 only,
    # DEEPGEMM validates on family 120 from 0.24.0 but aborts at start-up there (the public 0.27.1 log, run with
    # VLLM_USE_DEEP_GEMM=0): TRITON. TritonExperts at TP 4: K 4096, N = 2 x 1536 / 4 = 768, top-8, 8192 tokens:
    # (max(8192 x 8 x max(384, 4096), 8192 x 4096) + 8192 x 8 x max(768, 4096)) x 2 = 1,073,741,824 B = 1.00 GiB
    spec = _qwen3_235b_fp8()
    assert vllm_fp8_moe_backend(spec, None, "RTX-PRO-6000", "0.27") == "TRITON"
    assert _held(spec, "RTX-PRO-6000", "0.27", Layout(tp=4)) == (8192 * 8 * 4096 + 8192 * 8 * 4096) * 2 == 1 << 30
    # the plan's activation peak = the larger of the sampler (32 rows x 151,936 x 4 B x the 0.27 FlashInfer
    # sampler's copies + 8192 x 4096 x 2 B of hidden states = 139,454,709 B) and the forward without the routed
    # experts, whose intermediates are the held workspace (8192 x (4 x 4096 + 9216 / 4) x 2 B = 306,184,192 B),
    # + that workspace: 306,184,192 + 1,073,741,824 = 1,379,926,016 (was the sampler + the workspace,
    # 1,213,196,533, before the workspace was counted under the forward's peak too: plan.activation_estimate)
    rtx = get_gpu("RTX-PRO-6000")
    p = plan(spec, rtx, EngineConfig(vllm_version="0.27", max_model_len=32768, max_num_seqs=32), Layout(tp=4))
    sampler = int(32 * 151_936 * 4 * VLLM_PROFILES["0.27"].sampler_copies["flashinfer"]) + 8192 * 4096 * 2
    peak = next(t.bytes for t in p.ranks[0].terms if t.name.startswith("activation peak"))
    assert sampler == 139_454_709 and peak == 8192 * (4 * 4096 + 9216 // 4) * 2 + (1 << 30) == 1_379_926_016
    # the default image's DEEPGEMM pick is named in a warning from 0.24.0, not before
    assert "VLLM_USE_DEEP_GEMM=0" in vllm_fp8_moe_note(spec, EngineConfig(vllm_version="0.27"), "RTX-PRO-6000")
    assert any("VLLM_USE_DEEP_GEMM=0" in w for w in p.warnings)
    assert vllm_fp8_moe_note(spec, EngineConfig(vllm_version="0.23"), "RTX-PRO-6000") is None
    assert vllm_fp8_moe_note(spec, EngineConfig(vllm_version="0.27"), "H100-SXM") is None


def test_minimax_m25_tp4_h100_0_19_triton_and_flashinfer_with_ep():
    # Hopper block FP8: TRITON to the front without EP (0.17.0+), FLASHINFER_CUTLASS with it
    m25 = load_preset("minimax-m2.5")  # K 3072, moe_intermediate 1536, top-8
    assert [vllm_fp8_moe_backend(m25, None, "H100-SXM", v) for v in ("0.16", "0.17", "0.19", "0.34")] == [
        None, "TRITON", "TRITON", "TRITON"]
    assert vllm_fp8_moe_backend(m25, None, "H100-SXM", "0.19", ep=True) == "FLASHINFER_CUTLASS"
    # TritonExperts at TP 4: (8192 x 8 x max(384, 3072) + 8192 x 8 x max(768, 3072)) x 2 = 805,306,368 B
    assert _held(m25, "H100-SXM", "0.19", Layout(tp=4)) == (8192 * 8 * 3072 * 2) * 2 == 805_306_368
    # FlashInferExperts.workspace_shapes: workspace1 (M, K) = the output (M, K), workspace2 (0,): 8192 x 3072 x 2 B
    assert _held(m25, "H100-SXM", "0.19", Layout(tp=4, ep=True)) == 8192 * 3072 * 2 == 50_331_648
    assert vllm_flashinfer_fp8_moe_workspace_bytes(m25, 8192, 2) == 50_331_648
    # an explicit --moe-backend triton keeps TritonExperts even with EP (N whole: 2 x 1536 = 3072, so the same maxima)
    assert _held(m25, "H100-SXM", "0.19", Layout(tp=4, ep=True), moe_backend="triton") == 805_306_368
    assert _held(m25, "H100-SXM", "0.19", Layout(tp=4), moe_backend="flashinfer_trtllm") == 0  # not sized


def test_ada_l40s_fp8_moe_takes_triton_from_0_17():
    # capability 8.9: FP8 math (TritonExperts' device_supports_fp8), no FlashInfer (>= 9.0), DeepGEMM (9.0 / 10.x /
    # 12.x) or CUTLASS grouped GEMM (9.0 - 10.x) class: TRITON for block, per-tensor, static and channel-wise FP8
    spec = _qwen3_30b_fp8()
    assert [vllm_fp8_moe_backend(spec, None, "L40S", v) for v in ("0.16", "0.17", "0.25", "0.34")] == [
        None, "TRITON", "TRITON", "TRITON"]
    for fmt in ("fp8", "fp8-static", "fp8-channel"):
        assert vllm_fp8_moe_backend(spec, fmt, "L40S", "0.19") == "TRITON"
        assert vllm_moe_workspace_held(spec, fmt, "RTX-4090", "0.30")
    # TP 1, 8192 tokens: K 2048, N = 2 x 768 = 1536: (8192 x 8 x max(768, 2048) + 8192 x 8 x max(1536, 2048)) x 2
    assert _held(spec, "L40S", "0.19", Layout(tp=1)) == (8192 * 8 * 2048 * 2) * 2 == 536_870_912
    # Ampere has no FP8 math: MARLIN (vllm_fp8_marlin_moe_held), not TRITON; a custom card's capability is unknown
    assert vllm_fp8_moe_backend(spec, None, "A100-80GB", "0.19") == "MARLIN"
    assert not vllm_moe_workspace_held(spec, None, "A100-80GB", "0.19")
    assert vllm_fp8_moe_backend(spec, None, custom_gpu(80, 2.0, 500.0, name="my-card").name, "0.19") is None


def test_b200_fp8_moe_by_scheme():
    # datacenter Blackwell: block and static per-tensor FP8 take FLASHINFER_TRTLLM (TrtLlmFp8ExpertsMonolithic:
    # monolithic, nothing from the workspace manager); dynamic per-tensor FP8 (Fp8Config activation_scheme dynamic,
    # or --quantization fp8 online) matches no FlashInfer / DeepGEMM class: TRITON
    spec = _qwen3_30b_fp8()
    assert vllm_fp8_moe_backend(spec, None, "B200", "0.30") == "FLASHINFER_TRTLLM"
    assert vllm_fp8_moe_backend(spec, "fp8-static", "B300", "0.30") == "FLASHINFER_TRTLLM"
    assert _held(spec, "B200", "0.30", Layout(tp=1)) == 0
    assert vllm_fp8_moe_backend(spec, "fp8", "B200", "0.30") == "TRITON"
    # Qwen3-30B-A3B at TP 2 on B200, 16,384 tokens: N = 2 x 768 / 2 = 768, K 2048: (16,384 x 8 x 2048) x 2 x 2 B
    assert _held(spec, "B200", "0.30", Layout(tp=2), tokens=16384, weight_format="fp8") == 16384 * 8 * 2048 * 2 * 2
    assert vllm_moe_workspace_bytes(spec, 2, 16384, 2) == 1_073_741_824
    # compressed-tensors channel-wise FP8 (allow_vllm_cutlass): VLLM_CUTLASS, CutlassExpertsFp8's (M x topk, max(N,
    # K)) + (M x topk, max(N / 2, K)): TritonExperts' bytes, its permute scratch named in a warning
    assert vllm_fp8_moe_backend(spec, "fp8-channel", "B200", "0.30") == "VLLM_CUTLASS"
    assert _held(spec, "B200", "0.30", Layout(tp=2), tokens=16384, weight_format="fp8-channel") == 1_073_741_824
    assert "permute scratch" in vllm_fp8_moe_note(spec, EngineConfig(vllm_version="0.30", weight_format="fp8-channel"),
                                                  "B200")


def test_sm120_static_fp8_takes_flashinfer_cutlass_and_rocm_triton():
    # FlashInferExperts takes static per-tensor FP8 on capability >= 9.0, sm120 included: (M, K) held
    spec = _qwen3_30b_fp8()
    assert vllm_fp8_moe_backend(spec, "fp8-static", "RTX-PRO-6000", "0.30") == "FLASHINFER_CUTLASS"
    assert vllm_fp8_moe_backend(spec, "fp8-static", "H200", "0.30") == "FLASHINFER_CUTLASS"
    assert _held(spec, "RTX-PRO-6000", "0.30", Layout(tp=1), weight_format="fp8-static") == 8192 * 2048 * 2
    # ROCm: AITER wants VLLM_ROCM_USE_AITER=1 (envs.py default off), no CUDA-only class validates: TRITON, warned
    dsv3 = load_preset("deepseek-v3")  # fp8 block, K 7168, moe_intermediate 2048, top-8
    assert vllm_fp8_moe_backend(dsv3, None, "MI300X", "0.33") == "TRITON"
    # TP 8, 8192 tokens: N = 2 x 2048 / 8 = 512: (8192 x 8 x max(256, 7168) + 8192 x 8 x max(512, 7168)) x 2
    assert _held(dsv3, "MI300X", "0.33", Layout(tp=8)) == 8192 * 8 * 7168 * 2 * 2 == 1_879_048_192
    assert "VLLM_ROCM_USE_AITER=1" in vllm_fp8_moe_note(dsv3, EngineConfig(vllm_version="0.33"), "MI355X")


def test_0_17_chunks_the_triton_workspace_above_16k_tokens():
    # 0.14.0 - 0.17.1: modular_kernel.py _chunk_info splits M at VLLM_FUSED_MOE_CHUNK_SIZE (16,384) for TritonExperts;
    # workspace13 / workspace2 at the chunk, the output (M, K) apart. Qwen3-30B-A3B-FP8 on an L40S, 32,768 tokens:
    # (16,384 x 8 x (max(768, 2048) + max(1536, 2048)) + 32,768 x 2048) x 2 = 1,207,959,552 B on 0.17; 0.18 sizes the
    # whole M: (32,768 x 8 x 2048 x 2) x 2 = 2,147,483,648 B
    spec = _qwen3_30b_fp8()
    chunked = _held(spec, "L40S", "0.17", Layout(tp=1), tokens=32768)
    assert chunked == (16384 * 8 * 4096 + 32768 * 2048) * 2 == 1_207_959_552
    assert _held(spec, "L40S", "0.18", Layout(tp=1), tokens=32768) == 32768 * 8 * 2048 * 2 * 2 == 2_147_483_648
    assert _held(spec, "L40S", "0.17", Layout(tp=1), tokens=16384) == 16384 * 8 * 2048 * 2 * 2  # one chunk: unsplit


def test_modelopt_fp8_experts_ask_for_static_per_tensor():
    # modelopt.py ModelOptFp8MoEMethod (0.17.0 - 0.34.0) passes (StaticTensor, StaticTensor) for every FP8 quant_algo:
    # FLASHINFER_CUTLASS on Hopper (FlashInferExperts: 8192 x 2048 x 2 B held), TRITON on Ada; FP8_PB_WO's block
    # weights (kvplan "fp8-block") do not take the block-FP8 Hopper TRITON rule
    for algo, fmt in (("FP8", "fp8-static"), ("FP8_PB_WO", "fp8-block")):
        spec = _edit("qwen3-30b-a3b", quantization_config={"quant_method": "modelopt", "quant_algo": algo})
        assert (spec.quantization, spec.quantization_method) == (fmt, "modelopt")
        assert vllm_fp8_moe_backend(spec, None, "H100-SXM", "0.30") == "FLASHINFER_CUTLASS"
        assert _held(spec, "H100-SXM", "0.30", Layout(tp=1)) == 8192 * 2048 * 2 == 33_554_432
        assert vllm_fp8_moe_backend(spec, None, "L40S", "0.30") == "TRITON"
    # a typed --weight-format is planned as that format's own method (Fp8Config block): TRITON on Hopper
    assert vllm_fp8_moe_backend(spec, "fp8-block", "H100-SXM", "0.30") == "TRITON"
