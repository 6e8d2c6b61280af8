"""nvidia/Qwen3.6-35B-A3B-NVFP4 (the qwen3.6-35b-a3b-nvfp4 preset): ModelOpt quant_algo MIXED_PRECISION, what each vLLM
release does with it (kvplan.vllm_layouts.modelopt_refusal, kvplan.plan.vllm_nvfp4_marlin_moe_held).

Read 2026-12-03 in the vllm 0.16.0 - 0.34.0 wheels (model_executor/layers/quantization/modelopt.py,
fused_moe/oracle/nvfp4.py, fused_moe/experts/marlin_moe.py, config/vllm.py):
- vLLM reads the per-module ``quantized_layers`` (ModelOptMixedPrecisionConfig._from_config), not config_groups: the
  experts, shared expert and lm_head are "W4A16_NVFP4" there (config_groups.group_1's input_activations num_bits 4 is
  not read), so kvplan's "nvfp4-wo" is what vLLM builds.
- MIXED_PRECISION first in 0.17.0; W4A16_NVFP4 entries mapped from 0.22.0 (ModelOptNvFp4W4A16LinearMethod,
  ModelOptNvFp4FusedMoE with use_a16); a quantized ParallelLMHead from 0.23.0; get_min_capability 89 through 0.23.0,
  75 from 0.24.0.
- use_a16 asks the NVFP4 oracle for activation key None: only MARLIN takes it (every W4A4 backend wants
  kNvfp4Dynamic), on B200 too; MarlinExperts on the modular kernel, whose workspace stays held (from 0.17.0). On
  Hopper from 0.32.0 prioritize_humming puts HUMMING first (warned, not priced).

Shapes: hidden K 2,048, moe_intermediate N 512, top-8 of 256 experts, vocab 248,320.
"""

import pytest

from kvplan import load_preset
from kvplan.engines import EngineConfig
from kvplan.errors import PlanInputError
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import _held_moe_workspace_bytes, plan, vllm_marlin_moe_workspace_bytes, vllm_nvfp4_marlin_moe_held
from kvplan.vllm_layouts import modelopt_refusal

NV = load_preset("qwen3.6-35b-a3b-nvfp4")


def _engine(version: str, **kw) -> EngineConfig:
    return EngineConfig(engine="vllm", vllm_version=version, **kw)


def test_the_preset_reads_as_vllm_does():
    # quantized_layers: 130 FP8 entries (attention / DeltaNet projections) and 161 W4A16_NVFP4 (40 experts, 120
    # shared-expert projections, lm_head): the shipped format is the one holding the most weights, the experts'
    assert NV.quantization_method == "modelopt_mixed" and NV.quantization == "nvfp4-wo"
    assert any(o.category == "lm_head" and o.format == "nvfp4-wo" for o in NV.quantization_overrides)


@pytest.mark.parametrize("version, gpu, field, words", [
    ("0.17", "RTX-5090", "vllm_version", "name W4A16_NVFP4"),  # 0.17.0 - 0.21.0: such layers built unquantized
    ("0.21", "RTX-5090", "vllm_version", "name W4A16_NVFP4"),
    ("0.22", "RTX-5090", "vllm_version", "its lm_head is quantized"),  # 0.22.x: no ParallelLMHead in the mixed config
    ("0.23", "RTX-3090", "gpu", "Minimum capability: 89"),  # sm86 < 89 through 0.23.0
    ("0.23", "A100-80GB", "gpu", "Minimum capability: 89"),
], ids=["0.17", "0.21", "0.22-lm-head", "0.23-rtx3090", "0.23-a100"])
def test_refused_where_vllm_cannot_load_it(version, gpu, field, words):
    refusal = modelopt_refusal(NV, None, gpu, version)
    assert refusal is not None and refusal[0] == field and words in refusal[1]
    with pytest.raises(PlanInputError, match=words):
        plan(NV, get_gpu(gpu), _engine(version))


def test_loaded_from_0_23_on_ada_and_later_and_from_0_24_below():
    assert modelopt_refusal(NV, None, "RTX-5090", "0.23") is None
    assert modelopt_refusal(NV, None, "L40S", "0.23") is None  # sm89
    assert modelopt_refusal(NV, None, "RTX-3090", "0.24") is None  # get_min_capability 75 from 0.24.0
    # a what-if format (weight_format given) is planned as asked: RedHatAI's W4A4 export loads from its own release
    assert modelopt_refusal(NV, "nvfp4", "RTX-5090", "0.20") is None
    plan(NV, get_gpu("RTX-5090"), _engine("0.20", weight_format="nvfp4"))


def test_an_fp8_nvfp4_mixed_checkpoint_needs_0_17_only():
    # the same spec without its W4A16_NVFP4 entries and with a 16-bit lm_head: 0.17.0's mixed config loads it
    plain = NV.model_copy(update={"quantization": "nvfp4", "quantization_overrides": tuple(
        o for o in NV.quantization_overrides if o.category != "lm_head")})
    assert modelopt_refusal(plain, None, "H100-SXM", "0.17") is None
    assert "first in 0.17.0" in modelopt_refusal(plain, None, "H100-SXM", "0.16")[1]


def test_w4a16_experts_hold_marlin_experts_workspace():
    # MarlinExperts.workspace_shapes: workspace1 (M x topk, max(N, K)), workspace2 (M x topk x max(2N, K)), output
    # (M, K); _allocate_buffers takes max(workspace1, output) + workspace2, bf16. 8,192 tokens, TP 1: M x topk =
    # 65,536; (max(65,536 x 2,048, 8,192 x 2,048) + 65,536 x max(1,024, 2,048)) x 2 = (134,217,728 + 134,217,728) x
    # 2 = 536,870,912 B (0.5 GiB); 16,384 tokens: 1,073,741,824 B
    assert vllm_marlin_moe_workspace_bytes(NV, 1, 8192, 2) == 536_870_912
    assert vllm_marlin_moe_workspace_bytes(NV, 1, 16384, 2) == 1_073_741_824
    for gpu, version, held in (("RTX-5090", "0.24", True), ("B200", "0.30", True), ("H100-SXM", "0.30", True),
                               ("H100-SXM", "0.33", False),  # Humming first on SM 9.0 from 0.32.0
                               ("L40S", "0.24", True), ("MI300X", "0.30", False)):
        assert vllm_nvfp4_marlin_moe_held(NV, _engine(version), gpu, version) is held, (gpu, version)
    assert vllm_nvfp4_marlin_moe_held(NV, _engine("0.33", moe_backend="marlin"), "H100-SXM", "0.33")
    # RedHatAI's W4A4 export ("nvfp4") on a B200 takes a FlashInfer / CUTLASS backend: not this rule
    assert not vllm_nvfp4_marlin_moe_held(NV, _engine("0.30", weight_format="nvfp4"), "B200", "0.30")
    assert _held_moe_workspace_bytes(NV, _engine("0.30"), Layout(), 8192, 2, "H100-SXM", "0.30") == 536_870_912


def test_the_held_workspace_in_a_text_only_h100_plan_at_0_30():
    # --language-model-only, 32,768 tokens, 8,192 batched, 1,024 sequences, the V2 runner's sampler (bf16 logits):
    # forward 8,192 x (4 x 2,048 + 53,888 widest q/k/v + MLP) x 2 = 1,017,118,720; sampler 1,024 x 248,320 x 2 +
    # 8,192 x 2,048 x 2 = 508,559,360 + 33,554,432 = 542,113,792, + the held 536,870,912 = 1,078,984,704 > forward.
    # Before this rule the peak was the forward's 1,017,118,720: the pool 53,972,713,500 -> 53,910,847,516 B
    # (-61,865,984, 50.27 -> 50.21 GiB)
    p = plan(NV, get_gpu("H100-SXM"), _engine("0.30", language_model_only=True, max_model_len=32768))
    act = next(t.bytes for t in p.ranks[0].terms if t.name.startswith("activation peak"))
    assert act == 542_113_792 + 536_870_912 == 1_078_984_704
    assert p.ranks[0].kv_pool_bytes == 53_910_847_516
