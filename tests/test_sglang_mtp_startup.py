"""SGLang start-up figures kvplan had simplified: the MTP draft worker's own lines (0.5.14+), gpt-oss MXFP4 padding
on the sm120 cards and the 256-rounded hidden size, and SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION (0.5.20+).

Read in the sglang 0.5.14, 0.5.15, 0.5.17, 0.5.18, 0.5.20 and 0.5.23 wheels (2026-12):
* managers/scheduler.py init_model_worker: the target's TpModelWorker ("Load weight begin / end"), the draft's
  (speculative/eagle_worker_v2.py EagleDraftWorker.__init__: a second "Load weight begin / end", type=
  DeepseekV3ForCausalLMNextN), then init_memory_pools: the target's "KV Cache is allocated" / "Memory pool end", the
  draft's (the same memory_pool_config, its num_nextn_predict_layers layers) and a second "Memory pool end"; only then
  init_lm_head -> set_embed_and_head frees the draft's own embed_tokens / lm_head, so they are resident when the target's
  pool is profiled (model_runner_kv_cache_mixin._profile_available_bytes reads free memory then).
* Public sources: sgl-project/sglang issue #36452 ("draft embed_tokens/lm_head copies are released after KV pool
  sizing, significantly shrinking max_total_num_tokens", 2026-08-26); PR #32468 (0.5.19, Qwen3.8-27B TP2: "Load weight
  end. type=Qwen3_5ForCausalLMMTP, ... mem usage=2.57 GB", "~2.37 GB/rank of that is the two un-shared bf16
  placeholders (124,160 x 5,120 x 2 B each)"); PR #35996 (the same order: "Load weight end ... type=Qwen3_5ForCausalLMMTP,
  mem usage=5.18 GB <- includes ~2.5GB dup embed/lm_head"); PR #37155 ("Memory pool end. avail mem=0.29 GB" then the
  freed 1.83 GB at "Capture target verify CUDA graph begin"). The issues the brief named (#30609, #26357, #26399) were
  not found in the search corpus.
"""

import pytest

from kvplan.cli import main
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.presets import load_preset
from kvplan.sglang import (
    aiter_haircut,
    gpt_oss_mxfp4_pad,
    gpt_oss_mxfp4_pad_bytes,
    mtp_draft_arch,
    mtp_draft_vocab_copy_bytes,
)
from kvplan.units import GiB
from kvplan.web.commands import parse_command
from tests.app_util import kvplan_plan

CORE = {"preset": "deepseek-v3", "gpu": "H200", "tp": 8, "engine": "sglang"}
MTP_SHARD = 1_661_046_944  # DeepSeek-V3's MTP layer at TP 8 (tests/test_app_engine_knobs.py)
COPIES = 2 * 129_280 // 8 * 7_168 * 2  # embed_tokens + lm_head, bf16, each split over TP 8: 463,339,520


def _gb(line: str, key: str) -> float:
    return float(line.split(f"{key}=")[1].split()[0].rstrip(","))


def test_draft_vocab_copies_and_arch():
    assert mtp_draft_vocab_copy_bytes(129_280, 7_168, 8) == COPIES == 463_339_520
    # PR #32468's Qwen3.8-27B at TP 2: 2 x 124,160 x 5,120 x 2 B = 2,542,796,800 B, "~2.37 GB/rank"
    assert round(mtp_draft_vocab_copy_bytes(248_320, 5_120, 2) / GiB, 2) == 2.37
    # DP attention 8 at TP 8: the embedding whole on the attention-TP group of 1, the head split over TP 8
    assert mtp_draft_vocab_copy_bytes(129_280, 7_168, 8, 1) == (129_280 + 16_160) * 7_168 * 2
    assert mtp_draft_vocab_copy_bytes(100, 64, 8) == (128 // 8) * 2 * 64 * 2  # vocab padded to 64 first
    assert (mtp_draft_arch("deepseek_v3", "0.5.20"), mtp_draft_arch("glm4_moe", "0.5.14")) == (
        "DeepseekV3ForCausalLMNextN", "Glm4MoeForCausalLMNextN")
    assert (mtp_draft_arch("glm_moe_dsa", "0.5.14"), mtp_draft_arch("glm_moe_dsa", "0.5.17")) == (
        "DeepseekV3ForCausalLMNextN", "GlmMoeDsaForCausalLMNextN")


def test_deepseek_v3_mtp_startup_lines_in_sglang_order():
    p = kvplan_plan(**CORE, speculative_method="mtp", num_speculative_tokens=3)
    plain = kvplan_plan(**CORE)
    log = p.engine_log
    assert [line.split(".")[0].split("=")[0] for line in log] == [
        "Load weight begin", "Load weight end", "Load weight begin", "Load weight end", "KV Cache is allocated",
        "Memory pool end", "KV Cache is allocated", "Memory pool end", "max_total_num_tokens"]
    # the target's own load is the plain plan's (MTP layers out); the draft begins where it ended
    assert log[:2] == plain.engine_log[:2] and _gb(log[2], "avail mem") == _gb(log[1], "avail mem") == 58.66
    # the draft: type=DeepseekV3ForCausalLMNextN, mem usage = MTP shard + the two vocab copies
    assert "type=DeepseekV3ForCausalLMNextN," in log[3]
    assert _gb(log[3], "mem usage") == round((MTP_SHARD + COPIES) / GiB, 2) == 1.98
    assert _gb(log[3], "avail mem") == round(_gb(log[1], "avail mem") - 1.98, 2)
    # the pool: (rest of the plain plan - MTP shard - copies) // (61 + 1) x 576 x 2 = 614,956 tokens (page 1; 618,538
    # before SGLang's MLA w_kc / w_vc, 0.238 GiB, were priced: kvplan.sglang.mla_absorb_bytes)
    tokens = p.kv_cache_tokens
    assert tokens == (plain.ranks[0].kv_pool_bytes - MTP_SHARD - COPIES) // 71_424 == 614_956
    # the target's KV line: its 61 layers; the draft's: its one layer, the same #tokens (+ the page slot)
    assert log[4] == f"KV Cache is allocated. dtype: torch.bfloat16, #tokens: {tokens}, KV size: " \
                     f"{(tokens + 1) * 70_272 / GiB:.2f} GB" == \
        "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 614956, KV size: 40.25 GB"
    assert log[6] == "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 614956, KV size: 0.66 GB"
    # the second "Memory pool end": the first less the draft's pool (the copies are freed only after it)
    assert round(_gb(log[5], "avail mem") - _gb(log[7], "avail mem"), 2) in (0.66, 0.67)
    assert "max_running_requests=48," in log[-1] and log[-1].startswith(f"max_total_num_tokens={tokens},")
    # the budget names the copies
    term = next(t for t in p.ranks[0].terms if t.name.startswith("MTP draft's embed_tokens"))
    assert term.bytes == COPIES
    # NGRAM loads no draft model: one load, one pool
    ngram = kvplan_plan(**CORE, speculative_method="ngram", num_speculative_tokens=3)
    assert sum(line.startswith("Load weight end") for line in ngram.engine_log) == 1
    assert ngram.kv_cache_tokens == plain.kv_cache_tokens


def test_dp_attention_copies_the_whole_embedding():
    dpa = kvplan_plan(**CORE, dp_attention_size=8, speculative_method="mtp", num_speculative_tokens=1)
    term = next(t for t in dpa.ranks[0].terms if t.name.startswith("MTP draft's embed_tokens"))
    assert term.bytes == (129_280 + 16_160) * 7_168 * 2 == 2_085_027_840


def test_gpt_oss_padding_by_gpu_and_release():
    spec = load_preset("gpt-oss-20b")
    layers = [(layer, 1) for layer in spec.layers]
    assert gpt_oss_mxfp4_pad("B200", "0.5.20")[:2] == (128, 256) and gpt_oss_mxfp4_pad("B200", "0.5.15")[:2] == (256, 256)
    # sm120: none through 0.5.13 (no rule / triton_kernels), Marlin 0.5.14 - 0.5.16, FlashInfer CUTLASS from 0.5.17
    assert gpt_oss_mxfp4_pad("RTX-PRO-6000", "0.5.10") is None and gpt_oss_mxfp4_pad("RTX-5090", "0.5.3") is None
    assert gpt_oss_mxfp4_pad("RTX-PRO-6000", "0.5.14") == (128, 256, "Marlin")
    assert gpt_oss_mxfp4_pad("RTX-5090", "0.5.20") == (128, 256, "flashinfer_mxfp4 (CUTLASS sm120)")
    assert gpt_oss_mxfp4_pad("H100-SXM", "0.5.20") is None and gpt_oss_mxfp4_pad("MI355X", "0.5.20") is None
    # 2880 -> 2944 x 3072: 2 x 2944 x (1536 + 96 + 2) + 3072 x (1472 + 92 + 2) = 14,431,744 B an expert, against
    # 13,236,480: + 1,195,264 x 32 experts x 24 layers
    assert gpt_oss_mxfp4_pad_bytes(spec, 1, False, layers, None, "RTX-PRO-6000", "0.5.14") == 1_195_264 * 768 == \
        gpt_oss_mxfp4_pad_bytes(spec, 1, False, layers, None, "B200", "0.5.20") == 917_962_752
    p = plan(spec, get_gpu("RTX-PRO-6000"), EngineConfig(engine="sglang", sglang_version="0.5.20"), Layout())
    q = plan(spec, get_gpu("RTX-PRO-6000"), EngineConfig(engine="sglang", sglang_version="0.5.10"), Layout())
    assert q.ranks[0].kv_pool_bytes - p.ranks[0].kv_pool_bytes == 917_962_752  # 0.5.10 / 0.5.20 reserve alike here
    assert any("CUTLASS sm120" in t.source for t in p.ranks[0].terms)


HONOR = "SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION"


def test_aiter_honor_env_in_the_core():
    # needs 0.5.20+, the env and an explicit --mem-fraction-static
    assert not aiter_haircut("0.5.20", "AMD", False, 8, 1, 40960, True, True)
    assert aiter_haircut("0.5.20", "AMD", False, 8, 1, 40960, True, False)
    assert aiter_haircut("0.5.18", "AMD", False, 8, 1, 40960, True, True)
    spec, gpu = load_preset("qwen3-0.6b"), get_gpu("MI355X")
    kept = plan(spec, gpu, EngineConfig(engine="sglang", sglang_version="0.5.20", mem_fraction_static=0.6,
                                        sglang_aiter_honor_explicit_mem_fraction=True), Layout())
    cut = plan(spec, gpu, EngineConfig(engine="sglang", sglang_version="0.5.20", mem_fraction_static=0.6), Layout())
    # pre 287.24 GiB: rest 287.24 x 0.6 - 1.29 = 171.05 GiB (not x 0.51 = 145.20) / 114,688 B a token
    assert kept.ranks[0].kv_pool_bytes - cut.ranks[0].kv_pool_bytes == pytest.approx(287.24 * 0.09 * GiB, rel=2e-3)
    assert round(kept.kv_cache_tokens / cut.kv_cache_tokens, 3) == 1.178


def test_import_reads_the_env_and_the_cli_flag(capsys):
    line = f"{HONOR}=1 python -m sglang.launch_server --model-path Qwen/Qwen3-0.6B --mem-fraction-static 0.6"
    cmd = parse_command(line)
    assert cmd.sglang_aiter_honor_explicit_mem_fraction and cmd.engine_fields()[
        "sglang_aiter_honor_explicit_mem_fraction"] is True
    assert cmd.unplanned == ()  # the app carries it (PlanState.sglang_aiter_honor_explicit_mem_fraction)
    assert any(n.startswith(f"{HONOR}=1: on: with --mem-fraction-static") for n in cmd.args.notes)
    docker = parse_command(f"docker run -e {HONOR}=true lmsysorg/sglang:v0.5.20-rocm700-mi35x python3 -m "
                           "sglang.launch_server --model-path m --mem-fraction-static 0.6")
    assert docker.sglang_aiter_honor_explicit_mem_fraction and docker.sglang_version == "0.5.20"
    off = parse_command(f"export {HONOR}=maybe && python -m sglang.launch_server --model-path m")
    assert not off.sglang_aiter_honor_explicit_mem_fraction and off.unplanned == ()
    assert any("SGLang reads it as False" in n for n in off.args.notes)
    no_mfs = parse_command(f"{HONOR}=Y python -m sglang.launch_server --model-path m")
    assert no_mfs.sglang_aiter_honor_explicit_mem_fraction and no_mfs.unplanned == ()
    assert "sglang_aiter_honor_explicit_mem_fraction" not in parse_command(
        "python -m sglang.launch_server --model-path m").engine_fields()
    base = ["plan", "qwen3-0.6b", "--gpu", "MI355X", "--engine", "sglang", "--mem-fraction-static", "0.6"]
    assert main(base) == 0
    cut = capsys.readouterr().out
    assert main([*base, "--sglang-aiter-honor-explicit-mem-fraction"]) == 0
    kept = capsys.readouterr().out
    assert cut != kept and "#tokens:" in kept
