"""A typed --moe-backend with int4 / int8 weight-only routed experts (GPTQ, AWQ, compressed-tensors wNa16), read
2026-12-03 in the vllm 0.17.0 - 0.34.0 wheels (pip download vllm==X --no-deps):

- 0.25.0+: the MoE methods (auto_gptq.py, auto_awq.py, compressed_tensors_moe_wna16(_marlin).py) build their experts
  through fused_moe/oracle/int_wna16.py select_wna16_moe_backend, which maps a typed name with map_wna16_backend and
  raises ValueError "moe_backend='<name>' is not supported for WNA16 MoE. Expected one of [...]." for any other
  name (the list grows: 0.25.0 marlin / humming / flashinfer_trtllm, 0.26.0 + emulation, 0.27.0 + triton, 0.30.0 +
  rdna3): kvplan refuses the plan with that text (--moe-backend cutlass among them: "cutlass" is an FP8 / NVFP4 name);
- after the name maps (read 2026-12-04 in the 0.25.0 - 0.34.0 wheels): from 0.27.0 ``_backend_incompatibility_reason``
  refuses TRITON for GPTQ / AWQ experts (their methods pass may_have_bias=True) and compressed-tensors group act-order,
  FLASHINFER_TRTLLM with zero points or a bias, RDNA3 off compressed-tensors symmetric group-wise; then (0.25.0+) the
  experts class's device (TrtLlmMxint4ExpertsMonolithic SM 10.x, Rdna3WNA16Experts gfx1100) and scheme checks
  (kInt4Static32 only; EMULATION int4 only): "WNA16 MoE backend '<BACKEND>' does not support the deployment
  configuration since <reason>.", refused by kvplan likewise;
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
    # (compressed-tensors wNa16: vLLM refuses TRITON for GPTQ / AWQ experts from 0.27.0, test_what_the_oracle_refuses)
    ct = _engine("0.27", "triton", "w4a16-g128")
    assert wna16_moe_backend(q3, ct) == "triton"
    assert _held_moe_workspace_bytes(q3, ct, Layout(tp=1), 2048, 2, "A100-80GB", "0.27") == 0
    assert unsized_moe_backend_note(q3, ct, "A100-80GB").startswith("--moe-backend triton:")
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


def _reason(version, name, fmt, gpu):
    return wna16_typed_refusal(load_preset("qwen3-30b-a3b"), _engine(version, name, fmt), gpu)


def test_what_the_oracle_refuses_after_the_name_maps():
    # fused_moe/oracle/int_wna16.py (0.27.0 - 0.34.0 wheels): _backend_incompatibility_reason, on what the method
    # passes -- auto_gptq.py / auto_awq.py may_have_bias=True, compressed_tensors_moe_wna16.py False, zero points
    # when asymmetric -- then the experts class's device and quantization-scheme checks (0.25.0+)
    said = "WNA16 MoE backend '{}' does not support the deployment configuration since {}."
    # TRITON: any GPTQ / AWQ expert (the method may hold a bias), compressed-tensors with group act-order
    assert _reason("0.27", "triton", GPTQ, "A100-80GB") == said.format("TRITON", "expert bias is not supported")
    assert _reason("0.33", "triton", "int4-g128", "H100-SXM") == said.format("TRITON", "expert bias is not supported")
    assert _reason("0.33", "triton", "w4a16-g128-actorder", "H100-SXM") == said.format(
        "TRITON", "group activation ordering is not supported")
    assert _reason("0.33", "triton", "w4a16-g128-asym", "H100-SXM") is None  # TritonWNA16Experts takes uint4
    assert _reason("0.33", "triton", "w8a16-ch", "MI300X") is None  # and int8, on ROCm too
    # FLASHINFER_TRTLLM: zero points or a bias first (0.27.0+), then TrtLlmMxint4ExpertsMonolithic's SM 10.x device
    # and its one scheme, symmetric int4 in groups of 32 (kInt4Static32: compressed-tensors g32 only)
    zp = said.format("FLASHINFER_TRTLLM", "zero points and bias are not supported")
    assert _reason("0.33", "flashinfer_trtllm", GPTQ, "B200") == zp
    assert _reason("0.33", "flashinfer_trtllm", "w4a16-g32-asym", "B200") == zp
    assert _reason("0.33", "flashinfer_trtllm", "w4a16-g32", "H100-SXM") == said.format(
        "FLASHINFER_TRTLLM", "kernel does not support current device ...")
    assert _reason("0.33", "flashinfer_trtllm", "w4a16-g128", "B300") == said.format(
        "FLASHINFER_TRTLLM", "kernel does not support quantization scheme ...")
    assert _reason("0.33", "flashinfer_trtllm", "w4a16-g32", "B200") is None  # Kimi's layout: builds (not sized)
    # 0.25.0 / 0.26.0 have no incompatibility step: GPTQ on an H100 fails the device check, on a B200 the scheme
    assert _reason("0.25", "flashinfer_trtllm", GPTQ, "H100-SXM").endswith("current device ....")
    assert _reason("0.25", "flashinfer_trtllm", GPTQ, "B200").endswith("quantization scheme ....")
    # RDNA3 (0.30.0+): compressed-tensors symmetric group-wise only, then a gfx1100 device, which no catalog GPU is
    assert _reason("0.33", "rdna3", GPTQ, "MI300X").endswith("only compressed-tensors checkpoints are supported.")
    assert _reason("0.33", "rdna3", "w4a16-ch", "MI300X").endswith("only group-wise scales are supported.")
    assert _reason("0.33", "rdna3", "w4a16-g128", "MI300X").endswith("current device ....")
    # EMULATION: int4 keys only
    assert _reason("0.33", "emulation", "w8a16-ch", "H100-SXM").endswith("quantization scheme ....")
    assert _reason("0.33", "emulation", "w4a16-g128", "H100-SXM") is None
    # a device kvplan does not know (a custom GPU, None): only the checkpoint-side reasons
    assert _reason("0.33", "flashinfer_trtllm", "w4a16-g32", None) is None
    assert _reason("0.33", "triton", GPTQ, None).endswith("expert bias is not supported.")
    assert _reason("0.33", "marlin", GPTQ, "H100-SXM") is None


def test_the_plan_refuses_a_start_vllm_would_refuse():
    # before: planned with the "kvplan does not size that MoE backend" warning; vLLM raises when the experts are built
    q3 = load_preset("qwen3-30b-a3b")
    with pytest.raises(PlanInputError, match=r"refuses --moe-backend triton for these int weight-only MoE experts: "
                                             r"\"WNA16 MoE backend 'TRITON' .* expert bias is not supported.\" "
                                             r"\(--moe-backend auto or marlin plans them\)"):
        plan(q3, get_gpu("H100-SXM"), _engine("0.33", "triton", max_model_len=16384))
    kimi = load_preset("kimi-k2.5")
    with pytest.raises(PlanInputError, match="FLASHINFER_TRTLLM' does not support .* current device"):
        plan(kimi, get_gpu("H200"), EngineConfig(vllm_version="0.33", moe_backend="flashinfer_trtllm",
                                                 max_model_len=16384), Layout(tp=8))
    p = plan(kimi, get_gpu("B200"), EngineConfig(vllm_version="0.33", moe_backend="flashinfer_trtllm",
                                                 max_model_len=16384), Layout(tp=8))
    assert p.kv_cache_tokens > 0 and any(w.startswith("--moe-backend flashinfer_trtllm:") for w in p.warnings)
