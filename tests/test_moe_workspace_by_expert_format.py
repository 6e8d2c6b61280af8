"""The held fused-MoE workspace follows the routed EXPERTS' format, not the checkpoint's base format.

DeepSeek-V4's base format is fp8-block but an override stores its routed experts MXFP4
(kvplan.vllm_layouts.mxfp4_override_experts): vLLM builds them through fused_moe/oracle/mxfp4.py
``select_deepseek_v4_mxfp4_moe_backend`` (0.22.0 - 0.31.0 sources read 2026-12-03: [FLASHINFER_TRTLLM_MXFP4_MXFP8,
DEEPGEMM_MXFP4, MARLIN, BATCHED_MARLIN]), not through the block-FP8 oracle whose TritonExperts kvplan charged before.
"""
from kvplan import load_preset
from kvplan.engines import EngineConfig
from kvplan.parallel import Layout
from kvplan.plan import (
    _held_moe_workspace_bytes, mxfp4_override_moe_backend, vllm_fp8_marlin_moe_held, vllm_marlin_moe_workspace_bytes,
    vllm_moe_workspace_bytes, vllm_moe_workspace_held)


def _engine(version, **over):
    return EngineConfig(vllm_version=version, **over)


def test_dsv4_experts_take_the_mxfp4_backend():
    flash = load_preset("deepseek-v4-flash")
    # the block-FP8 TritonExperts rule (sm120 from 0.14, Hopper without EP from 0.17) no longer claims them
    assert not vllm_moe_workspace_held(flash, None, "RTX-PRO-6000", "0.25")
    assert not vllm_moe_workspace_held(flash, None, "H200", "0.30")
    assert not vllm_fp8_marlin_moe_held(flash, None, "A100-80GB", "0.25")  # MXFP4, not FP8, experts on Ampere
    assert [mxfp4_override_moe_backend(flash, _engine(v), g, v) for g, v in (
        ("RTX-PRO-6000", "0.25"), ("H200", "0.30"), ("H200", "0.33"), ("B200", "0.30"), ("A100-80GB", "0.25"))] == [
        "marlin", "marlin", "humming", "trtllm", "marlin"]
    assert mxfp4_override_moe_backend(flash, _engine("0.33", moe_backend="marlin"), "H200", "0.33") == "marlin"
    # a checkpoint without the override keeps its base-format rule
    m25 = load_preset("minimax-m2.5")
    assert mxfp4_override_moe_backend(m25, _engine("0.25"), "RTX-PRO-6000", "0.25") is None
    assert vllm_moe_workspace_held(m25, None, "RTX-PRO-6000", "0.25")


def test_dsv4_flash_marlin_workspace_numbers():
    # DeepSeek-V4-Flash: H (K) 4,096, I 2,048, top-6. MarlinExperts.workspace_shapes (fused_moe/experts/marlin_moe.py,
    # 0.20.0 - 0.31.0): workspace1 (M x topk, max(N, K)) shared with the output (M, K), workspace2 (M x topk x max(2N,
    # K)), bf16. The DSV4-PRO6000 log: TP 2, 4,096 batched tokens: N = 1,024, M x topk = 24,576:
    # (24,576 x 4,096 + 24,576 x 4,096) x 2 = 402,653,184 B = 0.375 GiB
    flash = load_preset("deepseek-v4-flash")
    assert vllm_marlin_moe_workspace_bytes(flash, 2, 4096, 2) == 402_653_184
    # TritonExperts' shapes (M, topk, max(I, K)) + (M, topk, max(2I, K)) give the same bytes wherever 2I <= H, as
    # here: the backend's name changes, the DSV4-PRO6000 pool does not (+3.15 GiB over the log either way)
    assert vllm_moe_workspace_bytes(flash, 2, 4096, 2) == 402_653_184
    layout = Layout(tp=2)
    assert _held_moe_workspace_bytes(flash, _engine("0.25"), layout, 4096, 2, "RTX-PRO-6000", "0.25") == 402_653_184
    # on a B200 the monolithic TRT-LLM MXFP4 kernel sizes its own buffers: nothing held
    assert _held_moe_workspace_bytes(flash, _engine("0.30"), layout, 4096, 2, "B200", "0.30") == 0
    # Hopper at 0.30 without EP: Marlin too; TP 8, 8,192 tokens: N = 256, M x topk = 49,152:
    # (49,152 x 4,096 + 49,152 x 4,096) x 2 = 805,306,368 B
    assert _held_moe_workspace_bytes(flash, _engine("0.30"), Layout(tp=8), 8192, 2, "H200", "0.30") == 805_306_368
    # with EP the block-FP8 rule would say nothing is held (FLASHINFER_CUTLASS first); the MXFP4 experts still run
    # Marlin, whose N is the whole I 2,048: max(2,048, 4,096) -> the same 805,306,368 B
    assert _held_moe_workspace_bytes(flash, _engine("0.30"), Layout(tp=8, ep=True), 8192, 2, "H200", "0.30"
                                     ) == 805_306_368
    # an explicit --moe-backend kvplan does not size (deep_gemm_mega_moe): 0, not a guessed Marlin figure
    assert _held_moe_workspace_bytes(flash, _engine("0.30", moe_backend="deep_gemm_mega_moe"), layout, 4096, 2,
                                     "H200", "0.30") == 0


def test_humming_note_on_hopper_from_0_33():
    # vLLM 0.32.0+ int_wna16.py / nvfp4.py oracles run their lists through prioritize_humming (HUMMING directly ahead
    # of MARLIN on SM 9.0): kvplan prices Marlin there, so the plan says Humming is likely and not priced
    from kvplan.gpus import get_gpu
    from kvplan.plan import plan, vllm_humming_moe_note

    k25 = load_preset("kimi-k2.5")  # compressed-tensors int4 (wNa16) routed experts
    note = vllm_humming_moe_note(k25, _engine("0.33"), "H200")
    assert note and "Humming takes" in note and "int_wna16.py" in note and "layout is not priced" in note
    assert vllm_humming_moe_note(k25, _engine("0.30"), "H200") is None  # no HUMMING in the 0.30 / 0.31 lists
    assert vllm_humming_moe_note(k25, _engine("0.33"), "A100-80GB") is None  # capability 8.0: Marlin first
    assert vllm_humming_moe_note(k25, _engine("0.33", moe_backend="marlin"), "H200") is None
    nv = load_preset("qwen3.6-35b-a3b-nvfp4")
    assert "likely run Humming" in vllm_humming_moe_note(nv, _engine("0.33"), "H100-SXM")
    assert vllm_humming_moe_note(nv, _engine("0.33"), "B200") is None
    assert vllm_humming_moe_note(load_preset("deepseek-v4-flash"), _engine("0.33"), "H200") is None  # MXFP4: priced
    p = plan(k25, get_gpu("H200"), _engine("0.33", max_model_len=16384), Layout(tp=8))
    assert any(w.startswith("vLLM 0.32.0+ on Hopper: prioritize_humming") for w in p.warnings)


def test_kimi_k25_humming_workspace_at_0_33_on_hopper():
    # Kimi-K2.5: H 7,168, I 2,048, top-8; TP 8 -> I 256 a rank, 8,192 tokens, bf16 activations (WNA16: Humming
    # quantizes no input, so its "quanted" buffers are bf16 too). HummingIndexedExperts (no EP): workspace1 = max(
    # output 8,192 x 7,168 x 2 = 117,440,512, quanted_down_input 65,536 x 256 x 2 = 33,554,432, quanted_gate_up_input
    # 8,192 x 7,168 x 2) = 117,440,512; workspace2 = max(down_output 65,536 x 7,168 x 2 = 939,524,096, gate_up_output
    # 65,536 x 512 x 2 = 67,108,864) = 939,524,096: 1,056,964,608 B = 0.98 GiB held
    from kvplan.plan import vllm_humming_moe_workspace_bytes, vllm_humming_wna16_moe_held

    k25 = load_preset("kimi-k2.5")
    assert vllm_humming_moe_workspace_bytes(k25, 8, 8192, 2, input_b=2, inter_align=1) == 1_056_964_608
    assert vllm_humming_wna16_moe_held(k25, _engine("0.33"), "H200", "0.33")
    assert not vllm_humming_wna16_moe_held(k25, _engine("0.30"), "H200", "0.30")
    assert not vllm_humming_wna16_moe_held(k25, _engine("0.33"), "A100-80GB", "0.33")
    assert not vllm_humming_wna16_moe_held(k25, _engine("0.33", moe_backend="marlin"), "H200", "0.33")
    assert _held_moe_workspace_bytes(k25, _engine("0.33"), Layout(tp=8), 8192, 2, "H200", "0.33") == 1_056_964_608
    # Marlin at 0.30: compressed-tensors wNa16 experts run MarlinExperts on the modular kernel from 0.23.0
    # (wna16_moe_modular_kernel), whose workspace stays held: (max(65,536 x 7,168, 8,192 x 7,168) + 65,536 x
    # max(2 x 256, 7,168)) x 2 = 1,879,048,192 B (was 0 before that rule)
    assert _held_moe_workspace_bytes(k25, _engine("0.30"), Layout(tp=8), 8192, 2, "H200", "0.30") == 1_879_048_192
    # --moe-backend marlin at 0.33 takes Marlin's, not Humming's; at 0.22 the experts still call fused_marlin_moe
    # (per-call buffers, freed before the sampler): 0 held
    assert _held_moe_workspace_bytes(k25, _engine("0.33", moe_backend="marlin"), Layout(tp=8), 8192, 2, "H200",
                                     "0.33") == 1_879_048_192
    assert _held_moe_workspace_bytes(k25, _engine("0.22"), Layout(tp=8), 8192, 2, "H200", "0.22") == 0
    # DeepSeek-V4's MXFP4 Humming workspace is unchanged by the generalisation (tests/test_dsv4_humming.py)
    assert vllm_humming_moe_workspace_bytes(load_preset("deepseek-v4-flash"), 8, 8192, 2) == 469_762_048


def test_wna16_marlin_moe_workspace_held_from_each_methods_modular_kernel_release():
    # int4 / int8 weight-only experts leave fused_marlin_moe (freed per call) for make_wna16_moe_kernel's MarlinExperts
    # (kept workspace) at a release per method: GPTQ 0.20.0, AWQ 0.22.0, compressed-tensors wNa16 0.23.0.
    # Qwen3-30B-A3B (K 2,048, N 768, top-8) at 2,048 tokens, bf16: (max(16,384 x 2,048, 2,048 x 2,048) + 16,384 x
    # max(1,536, 2,048)) x 2 = 134,217,728 B
    from kvplan.plan import vllm_wna16_marlin_moe_held

    q3 = load_preset("qwen3-30b-a3b")
    held = {}
    for fmt in ("gptq-int4-g128", "int4-g128", "w4a16-g128"):
        held[fmt] = [_held_moe_workspace_bytes(q3, _engine(v, weight_format=fmt), Layout(tp=1), 2048, 2, "A100-80GB", v)
                     for v in ("0.19", "0.20", "0.21", "0.22", "0.23", "0.30")]
    ws = 134_217_728
    assert held["gptq-int4-g128"] == [0, ws, ws, ws, ws, ws]  # gptq_marlin.py GPTQMarlinMoEMethod from 0.20.0
    assert held["int4-g128"] == [0, 0, 0, ws, ws, ws]  # awq_marlin.py AWQMarlinMoEMethod from 0.22.0
    assert held["w4a16-g128"] == [0, 0, 0, 0, ws, ws]  # CompressedTensorsWNA16MarlinMoEMethod from 0.23.0
    # not where kvplan does not know the backend: ROCm (no Marlin), sm100 (FLASHINFER_TRTLLM for int4 g32 from
    # 0.24.0), another --moe-backend; a dense model has no experts
    engine = _engine("0.30", weight_format="gptq-int4-g128")
    assert not vllm_wna16_marlin_moe_held(q3, engine, "MI300X", "0.30")
    assert not vllm_wna16_marlin_moe_held(q3, engine, "B200", "0.30")
    assert not vllm_wna16_marlin_moe_held(q3, _engine("0.30", weight_format="gptq-int4-g128", moe_backend="triton"),
                                          "A100-80GB", "0.30")
    assert not vllm_wna16_marlin_moe_held(load_preset("qwen3-14b"), engine, "A100-80GB", "0.30")
