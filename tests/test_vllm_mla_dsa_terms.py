"""vLLM terms of MLA / DSA MoE models read in the wheels (2026-12, the MoE / MLA log misses of
tests/test_engine_logs_found.py and tests/test_vllm_layouts_quant.py):

- the 16-bit W_UK / W_UV copy MLA keeps beside a quantized kv_b_proj (kvplan.vllm_layouts.vllm_mla_dequant_bytes);
- the lightning indexer's profile-run workspace and dummy logits (kvplan.plan.vllm_dsa_indexer_workspace_bytes,
  vllm_dsa_indexer_logits_bytes);
- the FlashInfer top-k / top-p sampler, vLLM's default from 0.21.0 (kvplan.engines VLLM_CHANGES
  "flashinfer_sampler_default"; kvplan follows it from its 0.22 profile).

Every figure is hand-derived in a comment.
"""

from kvplan import load_preset
from kvplan.engines import VLLM_PROFILES, EngineConfig, vllm_has
from kvplan.parallel import Layout
from kvplan.plan import (
    VLLM_DSA_INDEXER_LOGITS_BYTES,
    activation_estimate,
    plan,
    vllm_dsa_indexer_logits_bytes,
    vllm_dsa_indexer_workspace_bytes,
)
from kvplan.units import GiB, MiB
from kvplan.vllm_layouts import vllm_mla_dequant_bytes
from tests.test_engine_logs import close_gib
from tests.test_engine_logs_found import B200_17834, GLM52_B200, H200, V0112, _glm_5_2_fp8, _term


def test_mla_dequant_copy_of_a_quantized_kv_b_proj():
    # DeepSeek-V3 / R1 (fp8 block, every linear quantized) at TP 8: each of 61 MLA layers keeps kv_b_proj dequantized,
    # kv_lora_rank 512 x 128 / 8 = 16 local heads x (qk_nope 128 + v_head 128) x 2 B = 4,194,304 B; x 61 = 255,852,544
    ds = load_preset("deepseek-v3")
    assert vllm_mla_dequant_bytes(ds, Layout(tp=8), 0, None) == 61 * 512 * 16 * 256 * 2 == 255_852_544
    # PP 2 (31 + 30 layers): the first stage holds 31 of them
    assert vllm_mla_dequant_bytes(ds, Layout(tp=8, pp=2), 0, None) == 31 * 512 * 16 * 256 * 2
    # GLM-5.2-FP8 at TP 8: 78 layers x 512 x 64 / 8 = 8 heads x (192 + 256) x 2 B = 286,261,248
    assert vllm_mla_dequant_bytes(_glm_5_2_fp8(), Layout(tp=8), 0, None) == 78 * 512 * 8 * 448 * 2 == 286_261_248
    # served in bf16 (--dtype / weight_format bf16) or with a 16-bit kv_b_proj (Kimi-K2.5's int4 quantizes the
    # experts only: get_and_maybe_dequant_weights returns the layer's own weight): no copy
    assert vllm_mla_dequant_bytes(ds, Layout(tp=8), 0, "bf16") == 0
    assert vllm_mla_dequant_bytes(load_preset("kimi-k2.5"), Layout(tp=8), 0, None) == 0
    # a dense GQA model has no MLA layer
    assert vllm_mla_dequant_bytes(load_preset("llama-3.1-8b"), Layout(), 0, "fp8") == 0


def test_mla_dequant_copy_is_part_of_the_loaded_weights():
    # the DeepSeek-R1-0528 0.11.2 log: "Model loading took 79.7390 GiB"; kvplan 79.31 GiB before, + 0.238 = 79.55
    # (-0.19, -0.2 %)
    p = plan(load_preset("deepseek-v3"), H200, V0112, Layout(tp=8))
    assert _term(p, "MLA W_UK / W_UV") == 255_852_544
    assert abs(p.ranks[0].weights_bytes / GiB - 79.55) < 0.005 and close_gib(p.ranks[0].weights_bytes, 79.7390)
    # a typed "Model loading took" already holds it
    typed = plan(load_preset("deepseek-v3"), H200, V0112.model_copy(update={"weights_bytes": 80 * GiB}), Layout(tp=8))
    assert typed.ranks[0].weights_bytes == 80 * GiB
    assert not any(t.name.startswith("MLA W_UK") for t in typed.ranks[0].terms)


def test_dsa_indexer_profile_workspace_by_release():
    glm = _glm_5_2_fp8()  # index_head_dim 128: rows x (128 fp8 + 4 B scale)
    # 0.13.0 - 0.31.0: max_model_len x 40 rows (kvplan from its 0.14 profile; 0.12 = 0.12.0 - 0.13.0 has none)
    assert vllm_dsa_indexer_workspace_bytes(glm, 32768, "0.12") == 0
    assert vllm_dsa_indexer_workspace_bytes(glm, 32768, "0.14") == 32768 * 40 * 132 == 173_015_040
    # + the 1 MiB radix top-k workspace from 0.20.0
    assert vllm_dsa_indexer_workspace_bytes(glm, 32768, "0.28") == 173_015_040 + MiB == 174_063_616
    # 0.32.0+: max_model_len x (1152 // 132 = 8) x factor, 5 up to 256K tokens (= 40 again), 2 above
    assert vllm_dsa_indexer_workspace_bytes(glm, 32768, "0.33") == 32768 * 8 * 5 * 132 + MiB == 174_063_616
    assert vllm_dsa_indexer_workspace_bytes(glm, 300_000, "0.33") == 300_000 * 16 * 132 + MiB == 634_648_576
    assert vllm_dsa_indexer_workspace_bytes(glm, 300_000, "0.30") == 300_000 * 40 * 132 + MiB
    # no DSA layer, no workspace
    assert vllm_dsa_indexer_workspace_bytes(load_preset("deepseek-v3"), 32768, "0.28") == 0
    # the 512 MiB dummy logits from 0.19.0
    assert [vllm_dsa_indexer_logits_bytes(glm, v) for v in ("0.18", "0.19", "0.33")] == [0, 512 * MiB, 512 * MiB]
    assert VLLM_DSA_INDEXER_LOGITS_BYTES == 536_870_912


def test_dsa_terms_in_the_glm_5_2_b200_budget():
    glm = _glm_5_2_fp8()
    # the notebook's A/B runs (0.28.0, 32,768 tokens, 8192 batched, 1024 seqs): the workspace is a term of its own,
    # 174,063,616 B, subtracted from the pool; the peak is the sampler's: FlashInfer by default from 0.21.0, whose
    # _dummy_sampler_run then also warms forward_native (VLLM_CHANGES sampler_native_warmup, tests/
    # test_engine_logs_2026b.py), so the native 3.72 copies: int(1024 x 154,880 x 4 x 3.72) + 8192 x 6144 x 2 =
    # 2,359,925,145 + 100,663,296 = 2,460,588,441 (1,876,951,040 with FlashInfer's 2.8 alone)
    p = plan(glm, B200_17834, GLM52_B200, Layout(tp=8))
    assert _term(p, "DSA indexer workspace") == 174_063_616
    assert _term(p, "activation peak") == int(1024 * 154_880 * 4 * 3.72) + 8192 * 6144 * 2 == 2_460_588_441
    without = plan(glm, B200_17834, GLM52_B200.model_copy(update={"max_model_len": 16384}), Layout(tp=8))
    assert _term(without, "DSA indexer workspace") == 16384 * 40 * 132 + MiB
    # server D of the same notebook (16,384 tokens, 16,384 batched, 256 seqs): the forward is the peak and the
    # indexer's 512 MiB dummy logits sit on it: activation_estimate's forward 1,140,850,688 + 536,870,912
    d = plan(glm, B200_17834, EngineConfig(vllm_version="0.28", max_model_len=16384, max_num_seqs=256,
                                           gpu_memory_utilization=0.93, kv_cache_dtype="fp8"), Layout(tp=8))
    forward = activation_estimate(glm, 8, 16384, 256, 2, 2.8, False)
    assert forward == 1_140_850_688 and _term(d, "activation peak") == forward + 512 * MiB
    # --kv-cache-memory-bytes fixes the pool: no profiled workspace term
    fixed = plan(glm, B200_17834, GLM52_B200.model_copy(update={"kv_cache_memory_bytes": 60 * GiB}), Layout(tp=8))
    assert fixed.ranks[0].kv_pool_bytes == 60 * GiB
    assert not any(t.name.startswith("DSA indexer") for t in fixed.ranks[0].terms)


def test_flashinfer_sampler_default_from_the_0_21_profile():
    # envs.py VLLM_USE_FLASHINFER_SAMPLER: None (opt-in) through 0.20.2, True from 0.21.0 (read in the 0.20.1 and
    # 0.21.0 wheels); kvplan's "0.20.1" profile holds 0.20.1 - 0.20.2, "0.21" is 0.21.0
    assert [VLLM_PROFILES[v].sampler_default for v in ("0.17", "0.20", "0.20.1", "0.21", "0.22", "0.33")] == [
        "pytorch", "pytorch", "pytorch", "flashinfer", "flashinfer", "flashinfer"]
    assert vllm_has("0.21", "flashinfer_sampler_default") and not vllm_has("0.20.1", "flashinfer_sampler_default")
    # the V1 runner's sampler peak, GLM-5.2 at 0.20.1 (native, 3.72 copies) vs 0.21 (FlashInfer, 2.8):
    # 1024 x 154,880 x 4 = 634,388,480 B of fp32 logits; x 3.72 = 2,359,925,145, x 2.8 = 1,776,287,744
    glm = _glm_5_2_fp8()
    logits = 1024 * 154_880 * 4
    hidden = 8192 * 6144 * 2
    # from 0.21.0 the dummy run also warms forward_native after FlashInfer (sampler_native_warmup): the native peak
    for version, copies in (("0.20.1", 3.72), ("0.21", 3.72)):
        p = plan(glm, B200_17834, GLM52_B200.model_copy(update={"vllm_version": version}), Layout(tp=8))
        assert _term(p, "activation peak") == int(logits * copies) + hidden
    # an explicit --sampler pytorch (VLLM_USE_FLASHINFER_SAMPLER=0) keeps the native path
    native = plan(glm, B200_17834, GLM52_B200.model_copy(update={"sampler": "pytorch"}), Layout(tp=8))
    assert _term(native, "activation peak") == int(logits * 3.72) + hidden


def test_fp8_block_triton_moe_workspace_held_on_sm120_from_0_14():
    from kvplan.plan import vllm_moe_workspace_bytes, vllm_moe_workspace_held
    from tests.test_engine_logs_found import _minimax_m2_5

    m25 = _minimax_m2_5()  # fp8 block, 62 MoE layers of 256 experts top-8, hidden 3072, moe_intermediate 1536
    held = [vllm_moe_workspace_held(m25, None, "RTX-PRO-6000", v) for v in ("0.12", "0.14", "0.16", "0.28")]
    assert held == [False, True, True, True]
    # Hopper / datacenter Blackwell run DeepGEMM / FlashInfer for block FP8 (their own workspaces, not modeled)
    assert not vllm_moe_workspace_held(m25, None, "H200", "0.16")
    assert not vllm_moe_workspace_held(m25, None, "B200", "0.28")
    # unquantized experts: from 0.17 (moe_workspace_manager), any GPU
    assert [vllm_moe_workspace_held(m25, "bf16", "H200", v) for v in ("0.16", "0.17")] == [False, True]
    # TritonExperts at TP 4: N = 2 x 1536 / 4 = 768, K = 3072, M = 8192, top-8, bf16 workspaces:
    # (max(8192 x 8 x max(384, 3072), 8192 x 3072) + 8192 x 8 x max(768, 3072)) x 2 = 805,306,368 B = 0.75 GiB
    assert vllm_moe_workspace_bytes(m25, 4, 8192, 2) == (8192 * 8 * 3072 + 8192 * 8 * 3072) * 2 == 805_306_368
