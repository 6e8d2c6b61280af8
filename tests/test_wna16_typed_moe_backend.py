"""A typed --moe-backend with int4 / int8 weight-only routed experts (GPTQ, AWQ, compressed-tensors wNa16), read
2026-12-03 in the vllm 0.17.0 - 0.34.0 wheels (pip download vllm==X --no-deps):

- 0.25.0+: the MoE methods (auto_gptq.py, auto_awq.py, compressed_tensors_moe_wna16(_marlin).py) build their experts
  through fused_moe/oracle/int_wna16.py select_wna16_moe_backend, which maps a typed name with map_wna16_backend and
  raises ValueError "moe_backend='<name>' is not supported for WNA16 MoE. Expected one of [...]." for any other
  name (the list grows: 0.25.0 marlin / humming / flashinfer_trtllm, 0.26.0 + emulation, 0.27.0 + triton, 0.30.0 +
  rdna3): kvplan refuses the plan with that text (--moe-backend cutlass among them: "cutlass" is an FP8 / NVFP4 name);
- 0.17.0 - 0.24.0: no code on these experts' path reads KernelConfig.moe_backend, so a typed name changes nothing:
  kvplan plans them as auto (MarlinExperts' held workspace where the method runs it: 0.20.0+ GPTQ).
"""

import pytest

from kvplan import load_preset
from kvplan.engines import EngineConfig
from kvplan.errors import PlanInputError
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import (
    _held_moe_workspace_bytes,
    plan,
    unsized_moe_backend_note,
    wna16_moe_backend,
    wna16_typed_names,
    wna16_typed_refusal,
)

GPTQ = "gptq-int4-g128"


def _engine(version, moe_backend, weight_format=GPTQ, **kw):
    return EngineConfig(vllm_version=version, moe_backend=moe_backend, weight_format=weight_format, **kw)


def test_the_names_by_release():
    assert wna16_typed_names("0.24") is None
    assert wna16_typed_names("0.25") == ("marlin", "humming", "flashinfer_trtllm")
    assert wna16_typed_names("0.26") == ("marlin", "humming", "flashinfer_trtllm", "emulation")
    assert wna16_typed_names("0.29") == ("triton", "marlin", "humming", "flashinfer_trtllm", "emulation")
    assert wna16_typed_names("0.33") == ("triton", "marlin", "humming", "flashinfer_trtllm", "emulation", "rdna3")


def test_cutlass_with_gptq_experts_is_refused_with_vllms_text():
    q3 = load_preset("qwen3-30b-a3b")
    assert wna16_typed_refusal(q3, _engine("0.33", "cutlass")) == (
        "moe_backend='cutlass' is not supported for WNA16 MoE. Expected one of ['triton', 'marlin', 'humming', "
        "'flashinfer_trtllm', 'emulation', 'rdna3'].")
    # triton is no WNA16 name before 0.27.0; every format of the three methods, not a bf16 / FP8 MoE nor a dense model
    assert "Expected one of ['marlin', 'humming', 'flashinfer_trtllm', 'emulation']" in wna16_typed_refusal(
        q3, _engine("0.26", "triton", "int4-g128"))
    assert wna16_typed_refusal(q3, _engine("0.27", "triton", "w4a16-g128")) is None
    assert wna16_typed_refusal(q3, _engine("0.33", "marlin")) is None
    assert wna16_typed_refusal(q3, _engine("0.24", "cutlass")) is None  # ignored there
    assert wna16_typed_refusal(q3, _engine("0.33", "cutlass", None)) is None  # bf16 experts
    assert wna16_typed_refusal(load_preset("qwen3-14b"), _engine("0.33", "cutlass")) is None  # no experts
    with pytest.raises(PlanInputError, match=r"refuses --moe-backend cutlass for these int weight-only MoE experts: "
                                             r"\"moe_backend='cutlass' is not supported for WNA16 MoE"):
        plan(load_preset("kimi-k2.5"), get_gpu("H200"), EngineConfig(vllm_version="0.33", moe_backend="cutlass",
                                                                      max_model_len=16384), Layout(tp=8))


def test_before_0_25_a_typed_name_is_auto_for_these_experts():
    # Qwen3-30B-A3B GPTQ at 2,048 tokens on an A100, 0.24 (GPTQMarlinMoEMethod on the modular kernel since 0.20.0):
    # MarlinExperts' held workspace (max(16,384 x 2,048, 2,048 x 2,048) + 16,384 x max(1,536, 2,048)) x 2 =
    # 134,217,728 B with --moe-backend triton / cutlass as with auto (it was 0 with a typed name, and no warning for
    # cutlass); from 0.27.0 triton is TRITON's, not sized: 0 held and the unsized-backend warning
    q3 = load_preset("qwen3-30b-a3b")
    for name in ("auto", "triton", "cutlass"):
        assert wna16_moe_backend(q3, _engine("0.24", name)) == "auto"
        assert _held_moe_workspace_bytes(q3, _engine("0.24", name), Layout(tp=1), 2048, 2, "A100-80GB",
                                         "0.24") == 134_217_728
        assert unsized_moe_backend_note(q3, _engine("0.24", name), "A100-80GB") == ""
    assert wna16_moe_backend(q3, _engine("0.27", "triton")) == "triton"
    assert _held_moe_workspace_bytes(q3, _engine("0.27", "triton"), Layout(tp=1), 2048, 2, "A100-80GB", "0.27") == 0
    assert unsized_moe_backend_note(q3, _engine("0.27", "triton"), "A100-80GB").startswith("--moe-backend triton:")
    # bf16 experts keep the typed name at any release (the unquantized oracle reads it from 0.17)
    assert wna16_moe_backend(q3, _engine("0.24", "triton", None)) == "triton"


def test_cutlass_with_nvfp4_weight_only_experts_is_refused():
    # nvidia/Qwen3.6-35B-A3B-NVFP4 ships W4A16_NVFP4 experts (kvplan "nvfp4-wo"): fused_moe/oracle/nvfp4.py maps
    # "cutlass" to VLLM_CUTLASS and raises, CutlassExpertsFp4 wanting (kNvfp4Static, kNvfp4Dynamic); before this rule
    # kvplan planned it with no MoE workspace and no warning
    from kvplan.plan import nvfp4_wo_cutlass_refusal

    nv = load_preset("qwen3.6-35b-a3b-nvfp4")
    assert nvfp4_wo_cutlass_refusal(nv, EngineConfig(vllm_version="0.33", moe_backend="cutlass")) == (
        "NvFp4 MoE backend 'VLLM_CUTLASS' does not support the deployment configuration since kernel does not "
        "support ...")
    assert nvfp4_wo_cutlass_refusal(nv, EngineConfig(vllm_version="0.33", moe_backend="marlin")) is None
    assert nvfp4_wo_cutlass_refusal(nv, EngineConfig(vllm_version="0.33", moe_backend="cutlass",
                                                     weight_format="bf16")) is None
    with pytest.raises(PlanInputError, match="refuses --moe-backend cutlass for these NVFP4 weight-only"):
        plan(nv, get_gpu("B200"), EngineConfig(vllm_version="0.33", moe_backend="cutlass", max_model_len=16384))
    assert plan(nv, get_gpu("B200"), EngineConfig(vllm_version="0.33", moe_backend="marlin",
                                                  max_model_len=16384)).starts
