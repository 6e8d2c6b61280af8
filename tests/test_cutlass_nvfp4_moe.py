"""vLLM's CutlassExpertsFp4 (--moe-backend cutlass with NVFP4 experts) in the profile run's forward peak
(kvplan.plan.vllm_cutlass_nvfp4_moe_transient_bytes; shapes read in the vllm-0.20.0 wheel's
model_executor/layers/fused_moe/experts/cutlass_moe.py and modular_kernel.py, the same in 0.18.0 - 0.34.0)."""

import pytest

from kvplan import load_preset
from kvplan.engines import EngineConfig
from kvplan.errors import PlanInputError
from kvplan.plan import (
    vllm_cutlass_nvfp4_moe_held, vllm_cutlass_nvfp4_moe_transient_bytes, vllm_cutlass_nvfp4_moe_workspace_bytes,
)
from kvplan.vllm_args import parse_vllm_command

QWEN35 = load_preset("qwen3.5-35b-a3b")  # hidden 2048, 256 experts top-8, moe_intermediate 512, a shared expert


def test_workspace_and_peak_of_a_qwen3_5_moe_layer():
    # K 2048, N = w1.shape[1] = 2 x 512 = 1024, top-8, bf16, 16,384 tokens:
    # workspace13 max(16,384 x 8 x max(2 x 1024, 2048), 16,384 x 2048) = 268,435,456 elements,
    # workspace2 16,384 x 8 x 1024 = 134,217,728: (268,435,456 + 134,217,728) x 2 = 805,306,368 B
    assert vllm_cutlass_nvfp4_moe_workspace_bytes(QWEN35, 1, 16_384, 2) == 805_306_368
    # + output 16,384 x 2048 + shuffled a, shuffled c3, weighted product 3 x 16,384 x 8 x 2048 + the sum 16,384 x
    # 2048 = 872,415,232 elements x 2 = 1,744,830,464; + MoE input, residual, shared output 3 x 16,384 x 2048 +
    # router logits 16,384 x 256 = 104,857,600 x 2 = 209,715,200; + 16 B x 16,384 x 8 routed rows = 2,097,152
    peak = 805_306_368 + 1_744_830_464 + 209_715_200 + 2_097_152
    assert vllm_cutlass_nvfp4_moe_transient_bytes(QWEN35, 1, 16_384, 2) == peak == 2_761_949_184
    assert peak == 168_576 * 16_384  # linear in the batched tokens: 168,576 B a token
    # TP 2 halves N (1024 -> 512): workspace13 stays max(2 x 512, 2048) = 2048 wide, workspace2 halves
    assert vllm_cutlass_nvfp4_moe_workspace_bytes(QWEN35, 2, 16_384, 2) == (268_435_456 + 67_108_864) * 2


def test_only_the_cutlass_backend_with_w4a4_nvfp4_experts_from_0_17():
    on = EngineConfig(vllm_version="0.20", weight_format="nvfp4", moe_backend="cutlass")
    assert vllm_cutlass_nvfp4_moe_held(QWEN35, on, "0.20")
    assert not vllm_cutlass_nvfp4_moe_held(QWEN35, on.model_copy(update={"moe_backend": "auto"}), "0.20")
    # W4A16 NVFP4 ("nvfp4-wo") is not CutlassExpertsFp4's (kNvfp4Static, kNvfp4Dynamic) scheme; bf16 experts neither
    assert not vllm_cutlass_nvfp4_moe_held(QWEN35, on.model_copy(update={"weight_format": "nvfp4-wo"}), "0.20")
    assert not vllm_cutlass_nvfp4_moe_held(QWEN35, on.model_copy(update={"weight_format": "bf16"}), "0.20")
    # 0.16.0 has no --moe-backend; 0.17.0 maps it but chunks the modular kernel at 16,384 tokens (not modeled)
    assert not vllm_cutlass_nvfp4_moe_held(QWEN35, on, "0.16") and not vllm_cutlass_nvfp4_moe_held(QWEN35, on, "0.17")
    assert vllm_cutlass_nvfp4_moe_held(QWEN35, on, "0.18")
    # a dense model has no experts
    assert not vllm_cutlass_nvfp4_moe_held(load_preset("qwen3-8b"), on, "0.20")


def test_the_flag_is_read():
    args = parse_vllm_command("vllm serve m --moe-backend CUTLASS")
    assert args.moe_backend == "cutlass" and args.engine_fields()["moe_backend"] == "cutlass"
    assert [n for n in args.notes if "--moe-backend" in n] == [
        "--moe-backend CUTLASS: planned by the core (EngineConfig.moe_backend: W4A4 NVFP4 experts on "
        "CutlassExpertsFp4)"]
    other = parse_vllm_command("vllm serve m --moe-backend marlin")  # MarlinExperts' held workspace is sized too
    assert other.moe_backend == "marlin"
    assert any(n.startswith("--moe-backend marlin: planned by the core") for n in other.notes)
    assert parse_vllm_command("vllm serve m").engine_fields()["moe_backend"] == "auto"
    # vLLM's KernelConfig._normalize_moe_backend: lower-case, "-" -> "_" (config/kernel.py, 0.17.0 - 0.33.0)
    assert parse_vllm_command("vllm serve m --moe-backend FlashInfer-Cutlass").moe_backend == "flashinfer_cutlass"
    for bad in ("''", "triton.v2", "x" * 41):  # no MoEBackend name of any release reads so: refused, flag named
        with pytest.raises(PlanInputError) as exc:
            parse_vllm_command(f"vllm serve m --moe-backend {bad}")
        assert exc.value.field == "--moe-backend"
