"""vLLM 0.10.2 - 0.16.x: a Marlin MoE layer's per-call buffers in the dummy run (kvplan.plan.vllm_marlin_moe_transient_bytes).

Source: model_executor/layers/fused_moe/fused_marlin_moe.py ``_fused_marlin_moe`` (0.10.2 / 0.11.0 / 0.13.0 / 0.15.0
wheels, read 2026-12-01): intermediate_cache13 = torch.empty(M x topk x max(2N, K)) and intermediate_cache2 =
torch.empty(M x topk, N) in the activation dtype, made and freed on every call; 0.17.0 moves the experts onto the kept
workspace (VLLM_CHANGES moe_workspace_manager), so the term stops there.

The pinned log: a Qwen3-Next docker-compose log on 2 x L40S, vLLM 0.13.0 (index file id 33676930891; the case in
tests/test_engine_logs_found.py): "Using CompressedTensorsWNA16MarlinMoEMethod", 8,192 batched tokens, 8 sequences.
Its checkpoint ("/models", a 4-bit community quant) is not published beside the log: ``qwen3_next_wna16`` is the
qwen3-next-80b-a3b preset with tests/fixtures/configs/ct-w4a16.quantization_config.json (compressed-tensors int4 g128)
and an ignore list keeping attention, the linear-attention projections, the router and the shared-expert gate in
bf16 (reconstructed: only the experts' format matters here, since the log's "Model loading took" is typed in).
"""

import json
from pathlib import Path

from kvplan import load_preset, parse_config
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan, vllm_marlin_moe_transient_bytes
from kvplan.units import GiB

ROOT = Path(__file__).parents[1]


def qwen3_next_wna16():
    cfg = json.loads((ROOT / "kvplan" / "presets" / "qwen3-next-80b-a3b.json").read_text())
    qc = json.loads((ROOT / "tests" / "fixtures" / "configs" / "ct-w4a16.quantization_config.json").read_text())
    qc["ignore"] = ["lm_head", "re:.*self_attn.*", "re:.*linear_attn.*", "re:.*mlp.gate$", "re:.*shared_expert_gate$"]
    cfg["quantization_config"] = qc
    return parse_config(cfg, "qwen3-next-80b-a3b-wna16")


def test_marlin_moe_transient_qwen3_next_tp2():
    # K = hidden 2048, N = moe_intermediate 512 / TP 2 = 256, top-10, M = 8192, bf16:
    # (4 x 8192 x 2048 + 8192 x 10 x (max(512, 2048) + 256)) x 2 = (67,108,864 + 188,743,680) x 2 = 511,705,088 B
    spec = qwen3_next_wna16()
    assert vllm_marlin_moe_transient_bytes(spec, 2, 8192, 2) == 511_705_088
    # expert parallel: N whole (512): 8192 x 10 x (2048 + 512) x 2 + 4 x 8192 x 2048 x 2 = 553,648,128 B
    assert vllm_marlin_moe_transient_bytes(spec, 2, 8192, 2, ep=True) == 553_648_128
    # a dense model has no MoE layer
    assert vllm_marlin_moe_transient_bytes(load_preset("llama-3.1-8b"), 1, 8192, 2) == 0


def test_marlin_moe_transient_only_for_marlin_experts_before_0_17():
    spec, l40s = qwen3_next_wna16(), get_gpu("L40S")
    e = EngineConfig(vllm_version="0.12", max_model_len=32768, max_num_seqs=8, max_num_batched_tokens=8192,
                     kv_cache_dtype="fp8", disable_custom_all_reduce=True, weights_bytes=round(22.5313 * GiB))

    def peak(s, **upd):
        p = plan(s, l40s, e.model_copy(update=upd), Layout(tp=2))
        return next(t.bytes for t in p.ranks[0].terms if t.name.startswith("activation peak"))

    assert peak(spec) == 511_705_088  # above the forward estimate, so it is the peak (8 sampler rows are small)
    bf16 = peak(load_preset("qwen3-next-80b-a3b"))  # unquantized experts: Triton, not this term
    assert bf16 < 511_705_088
    # 0.17+: the experts run the modular kernel on the kept workspace (moe_workspace_manager): no per-call Marlin term
    assert peak(spec, vllm_version="0.17") != 511_705_088


def test_marlin_moe_transient_not_when_the_ignore_list_keeps_the_experts_16_bit():
    # the same checkpoint with its routed experts on the ignore list: they load unquantized (Triton), no Marlin call
    cfg = json.loads((ROOT / "kvplan" / "presets" / "qwen3-next-80b-a3b.json").read_text())
    qc = json.loads((ROOT / "tests" / "fixtures" / "configs" / "ct-w4a16.quantization_config.json").read_text())
    qc["ignore"] = ["lm_head", "re:.*self_attn.*", "re:.*linear_attn.*", "re:.*mlp.gate$", "re:.*shared_expert_gate$",
                    "re:.*mlp.experts.*"]
    cfg["quantization_config"] = qc
    spec = parse_config(cfg, "qwen3-next-80b-a3b-experts-bf16")
    e = EngineConfig(vllm_version="0.12", max_model_len=32768, max_num_seqs=8, max_num_batched_tokens=8192,
                     weights_bytes=round(40 * GiB))
    p = plan(spec, get_gpu("H200"), e, Layout(tp=2))
    assert next(t.bytes for t in p.ranks[0].terms if t.name.startswith("activation peak")) < 511_705_088
