"""QA pass on issue 12's leftovers (qa14, 2026-12-02): SGLang's pages named as pages, the block size the plan runs
and why, no measured-looking zeros for layouts that do not load, the GPUs chart's "#n" labels apart, the SGLang
verdict's colon, one decode-read text, the sidebar's "Set:" caption in the engine's flags, and the block-FP8 TP fix
on every page."""

import json
import re

import pytest

from kvplan.engines import VLLM_PROFILES, vllm_mla_default
from kvplan.web import gpus_view, views, widgets
from kvplan.web.state import DEFAULT, PlanState
from tests.app_util import figure, html_tables, kvplan_plan, metrics, plain, run_app, values

PAGING = "pages/paging.py"


def _captions(at) -> list[str]:
    return [plain(c.value) for c in at.caption]


# ------------------------------------------------------------------ 1. SGLang's Paging page says page throughout

def test_sglang_paging_page_says_page_not_block():
    at = run_app({"v": "1", "m": "qwen3-8b", "e": "sglang"}, PAGING)
    titles = [figure(at, k)["layout"]["title"]["text"] for k in ("paging.slots", "paging.waste", "paging.map")]
    # SGLang's default --page-size is 1: the 8 default sequences, 1,092 tokens, take 1,092 one-token pages
    assert titles == ["Page size 1: 0 slots wasted (0.0%)", "Waste per page size (same sequences)",
                      "Page map (page size 1; #n = physical page)"]
    waste = figure(at, "paging.waste")
    assert waste["layout"]["xaxis"]["title"]["text"] == "page size (tokens)"
    assert waste["data"][0]["hovertemplate"].startswith("page %{x}")
    assert {t["name"] for t in figure(at, "paging.map")["data"]} == {"shared prefix page", "own page", "empty slots"}
    assert metrics(at)["Pages allocated"] == "1,092" and "Blocks allocated" not in metrics(at)
    assert "The first 8 of 8 sequences, page by page:" in _captions(at)
    assert any(c.startswith("At ") and " B per page (tightest rank" in c for c in _captions(at))
    assert not [c for c in _captions(at) if "block" in c.lower()], _captions(at)
    knob = next(s for s in at.selectbox if s.key == "w.block_size")
    assert knob.help.startswith("--page-size. Default") and "block" not in knob.help and "vLLM" not in knob.help
    assert "only its full pages are shared" in at.number_input(key="w.shared_prefix").help
    # vLLM keeps its own word
    at = run_app({"v": "1", "m": "qwen3-8b"}, PAGING)
    assert figure(at, "paging.waste")["layout"]["title"]["text"] == "Waste per block size (same sequences)"
    assert metrics(at)["Blocks allocated"] == "71"  # ceil(17 .. 300 / 16) over the 8 default lengths: 71 blocks


# ------------------------------------------------------------------ 2. the block size the plan runs, and why

@pytest.mark.parametrize("params, said", [
    # DeepSeek-V3 at TP 8 on an H200. vLLM 0.11: FLASHMLA forces 64 (platforms/cuda.py check_and_update_config)
    ({"vv": "0.11"}, "The plan runs blocks of 64 tokens: vLLM 0.11's MLA attention backend on H200 is FLASHMLA, which "
                     "forces 64-token blocks in place of the default 16."),
    # 0.33: FLASH_ATTN_MLA first on capability 9 with a 16-bit KV cache, get_preferred_block_size(16) -> 16
    ({}, "The plan runs blocks of 16 tokens: vLLM's default (16, DEFAULT_BLOCK_SIZE), which FLASH_ATTN_MLA, vLLM "
         "0.33's MLA attention backend on H200, takes."),
    # 0.33 with an fp8 KV cache: FLASH_ATTN_MLA refuses fp8, FLASHMLA's kernels are [64]
    ({"kvd": "fp8"}, "The plan runs blocks of 64 tokens: vLLM 0.33's MLA attention backend on H200 with an fp8 KV "
                     "cache is FLASHMLA, which forces 64-token blocks in place of the default 16."),
    # B200, 0.33: FLASHINFER_MLA [32, 64] (qk_nope_head_dim 128) -> 32
    ({"g": "B200"}, "The plan runs blocks of 32 tokens: vLLM 0.33's MLA attention backend on B200 is FLASHINFER_MLA, "
                    "whose kernels take 32 or 64 tokens a block, not the default 16: it runs 32."),
    # a typed size the plan runs as typed (0.17: 128 % 64 == 0 is kept), with what it would run without it: 0.11.1 -
    # 0.17 force FlashMLA's 64 on Hopper, then pick FLASH_ATTN_MLA (_get_backend_priorities)
    ({"vv": "0.17", "bs": "128"}, "The plan runs blocks of 128 tokens: the --block-size 128 you set, as typed. "
                                  "Without it the plan runs 64: vLLM 0.17 forces FlashMLA's 64-token blocks on H200 in "
                                  "place of the default 16, then picks FLASH_ATTN_MLA, which takes them."),
    # a typed size vLLM 0.11 replaces (128 != 64): planned at 64, and said so
    ({"vv": "0.11", "bs": "128"}, "The plan runs blocks of 64 tokens: vLLM 0.11 replaces --block-size 128 with 64 "
                                  "(FlashMLA takes 64 only: \"Forcing kv cache block size to 64 for FlashMLA "
                                  "backend.\", platforms/cuda.py check_and_update_config); the plan's blocks and "
                                  "bytes per block are at 64."),
    ({"e": "sglang"}, "The plan runs pages of 1 token: SGLang's default --page-size (1)."),
])
def test_the_paging_caption_says_which_block_size_the_plan_runs_and_why(params, said):
    at = run_app({"v": "1", "m": "deepseek-v3", "tp": "8", "g": "H200", **params}, PAGING)
    assert said in _captions(at), _captions(at)
    assert views.block_size_for(at.session_state["kv.state"]) == int(said.split(" of ")[1].split()[0])


def test_a_dense_model_reads_the_default_and_a_dsa_model_its_sparse_block():
    at = run_app({"v": "1", "m": "llama-3.1-8b"}, PAGING)
    assert "The plan runs blocks of 16 tokens: vLLM's default (16, DEFAULT_BLOCK_SIZE)." in _captions(at)
    # SGLang sets page_size 64 for DSA (DeepSeek-V3.2) over a typed --page-size 16 (kvplan.sglang.dsa_page_size)
    at = run_app({"v": "1", "m": "deepseek-v3.2", "tp": "8", "g": "H200", "e": "sglang", "bs": "16"}, PAGING)
    assert ("The plan runs pages of 64 tokens: SGLang sets page_size 64 for DeepSeek sparse attention (DSA) models, "
            "in place of your --page-size 16.") in _captions(at)


@pytest.mark.parametrize("params, said", [
    # Qwen3.5-27B: a 16-token attention block grown to hold the gated-DeltaNet state page, 784 tokens (vLLM 0.33)
    ({"m": "qwen3.5-27b"}, "The plan runs blocks of 784 tokens: vLLM's default 16, grown so one attention block's "
                           "bytes match the recurrent state's page (the hybrid KV-cache manager)."),
    ({"m": "qwen3.5-27b", "bs": "16"}, "The plan runs blocks of 784 tokens: your --block-size 16, grown so one "
                                       "attention block's bytes match the recurrent state's page (vLLM's hybrid "
                                       "KV-cache manager)."),
    # vllm-gaudi's default block (kvplan.support.GAUDI_VLLM_BLOCK_SIZE)
    ({"m": "llama-3.1-8b", "g": "Gaudi3"}, "The plan runs blocks of 128 tokens: vllm-gaudi's default block size (128) "
                                           "on Gaudi3."),
    # DeepSeek-V4-Flash under vLLM: 256-token blocks (kvplan.vllm_dsv4.VLLM_DSV4_BLOCK_SIZE)
    ({"m": "deepseek-v4-flash", "tp": "8", "g": "H200"}, "The plan runs blocks of 256 tokens: vLLM's DeepSeek-V4 "
                                                         "attention runs 256-token blocks."),
])
def test_the_block_size_reason_of_hybrids_gaudi_and_deepseek_v4(params, said):
    at = run_app({"v": "1", **params}, PAGING)
    assert said in _captions(at), _captions(at)


def test_a_typed_block_size_vllm_011_replaces_is_planned_at_what_vllm_runs():
    # vLLM 0.11.0 check_and_update_config: "if use_flashmla and ... cache_config.block_size != 64: block_size = 64":
    # the plan runs 64 (tests/test_mla_block_forced.py for its numbers), the Paging caption says why, and no page
    # warns at the top any more (the plan is what vLLM runs)
    at = run_app({"v": "1", "m": "deepseek-v3", "tp": "8", "g": "H200", "vv": "0.11", "bs": "16"}, PAGING)
    assert ("The plan runs blocks of 64 tokens: vLLM 0.11 replaces --block-size 16 with 64 (FlashMLA takes 64 only: "
            "\"Forcing kv cache block size to 64 for FlashMLA backend.\", platforms/cuda.py check_and_update_config); "
            "the plan's blocks and bytes per block are at 64.") in _captions(at), _captions(at)
    assert views.block_size_for(at.session_state["kv.state"]) == 64
    at = run_app({"v": "1", "m": "deepseek-v3", "tp": "8", "g": "H200", "vv": "0.11", "bs": "16"})
    assert not [w for w in at.warning if "Forcing kv cache block size" in w.value]
    # DSA (DeepSeek-V3.2): 0.11.0 - 0.17 "if use_sparse and cache_config.block_size != 64" -> 64
    at = run_app({"v": "1", "m": "deepseek-v3.2", "tp": "8", "g": "H200", "vv": "0.17", "bs": "128"}, PAGING)
    assert ("The plan runs blocks of 64 tokens: vLLM 0.17 replaces --block-size 128 with 64 (FlashMLASparse takes 64 "
            "only: \"Forcing kv cache block size to 64 for FlashMLASparse backend.\", platforms/cuda.py "
            "check_and_update_config); the plan's blocks and bytes per block are at 64.") in _captions(at), _captions(at)


def test_the_mla_backend_named_is_the_one_whose_block_the_plan_runs():
    # every profile x architecture x KV dtype x qk_nope_head_dim: the backend named has the block kvplan plans
    # (FLASH_ATTN_MLA at 64: 0.11.1 - 0.17 force FlashMLA's block on Hopper before the selector picks it)
    blocks = {"FLASHMLA": {64}, "CUTLASS_MLA": {128}, "FLASHINFER_MLA": {32, 64}, "FLASH_ATTN_MLA": {16, 64},
              "TRITON_MLA": {16, 64}}  # 64: the 0.34.0 default block (VLLM_CHANGES "block_size_64")
    for version in VLLM_PROFILES:
        for gpu in ("H100-SXM", "B200", "A100-80GB"):
            for quantized in (False, True):
                for nope in (64, 128, 256):
                    backend, block = vllm_mla_default(gpu, version, quantized, nope)
                    assert block in blocks[backend], (version, gpu, quantized, nope, backend)
    assert vllm_mla_default("H100-SXM", "0.11").backend == "FLASHMLA"
    assert vllm_mla_default("H100-SXM", "0.12") == ("FLASH_ATTN_MLA", 64)  # vllm PR #27363, the 0.11.1 wheel
    assert vllm_mla_default("H100-SXM", "0.12", kv_quantized=True) == ("FLASHMLA", 64)  # FA MLA: kv dtype auto only
    assert vllm_mla_default("H100-SXM", "0.19").backend == "FLASH_ATTN_MLA"


# ------------------------------------------------------------------ 3. no measured-looking zeros for "does not load"

def test_a_layout_that_does_not_load_shows_no_figures_but_the_reason():
    # Llama-3.1-70B on one H100: 131.45 GiB of bf16 weights, 78.68 GiB free when loading starts: no pool is sized
    p = kvplan_plan("llama-3.1-70b")
    assert p.load_oom_rank is not None and p.num_blocks == 0 and p.max_concurrency == 0
    at = run_app({"v": "1", "m": "llama-3.1-70b"})
    tiles = {m.label: m for m in at.metric}
    for label in ("Max concurrency", "KV cache tokens", "KV blocks"):
        assert tiles[label].value == "—", label
        assert tiles[label].help.startswith("Not a figure: does not load: the weights of one GPU are 131.45 GiB, "
                                            "more than the 78.68 GiB free when loading starts; no KV pool is sized")
    assert tiles["Verdict"].value == "does not load"
    # the formulas said "num_blocks = floor(0 / 5,242,880) = 0" and "tokens = 0": now that no pool is sized
    from kvplan.web import formulas

    latex = dict(formulas.budget_formulas(p))
    assert "KV blocks" not in latex and "Concurrency and tokens" not in latex
    assert latex["KV blocks, concurrency and tokens: none (no KV pool is sized)"].startswith(
        r"\text{not reached: the weights of one GPU do not load}")
    at = run_app({"v": "1", "m": "llama-3.1-70b", "lay": "1x1x1,2x1x1"}, "pages/parallelism.py")
    table = {r["layout"]: r for r in html_tables(at)[0]}
    one, two = table["TP1 PP1 DP1"], table["TP2 PP1 DP1"]
    assert (one["fits"], one["max concurrency"], one["sequences, all replicas"], one["KV blocks"]) == (
        "does not load", "—", "—", "—")
    assert one["KV pool / GPU (GiB)"].startswith("short by ")  # the reason stays in its column
    # TP 2 loads and sizes a pool (1,375 blocks, 0.17x): a real figure, kept
    assert two["fits"] == "does not fit" and two["max concurrency"] == "0.17x" and two["KV blocks"] == "1,375"


# ------------------------------------------------------------------ 4. the GPUs chart's "#n" labels apart

def _boxes_apart(points, offsets) -> bool:
    w, h = gpus_view.LABEL_BOX
    for width, height in gpus_view.PLOT_SIZES:
        boxes = [(x * width + ax, -y * height + ay) for (x, y), (ax, ay) in zip(points, offsets)]
        for i, a in enumerate(boxes):
            for b in boxes[i + 1:]:
                if abs(a[0] - b[0]) < w and abs(a[1] - b[1]) < h:
                    return False
    return True


def test_top_three_labels_do_not_collide():
    # three picks on one point, and three a few pixels apart (0.005 of 560 px = 3 px)
    same = [(0.5, 0.5)] * 3
    assert gpus_view.label_offsets(same) == [(0, -24), (30, -18), (-30, -18)]
    near = [(0.5, 0.5), (0.505, 0.5), (0.5, 0.51)]
    for points in (same, near):
        assert _boxes_apart(points, gpus_view.label_offsets(points))
    # on the page: Llama-3.1-8B, one sequence of 131,072 tokens; #1 RTX-3090 TP2 (58 tokens/s, $0.50/h) and #3
    # RTX-4070 TP4 (62 tokens/s, $0.60/h) sit a few pixels apart on the log axes
    at = run_app({"v": "1", "m": "llama-3.1-8b"}, "pages/gpus.py")
    chart = figure(at, "gpus.chart")
    labels = chart["layout"]["annotations"]
    assert [a["text"] for a in labels] == ["#1", "#2", "#3"]
    layouts, top = chart["data"][0], next(t for t in chart["data"] if t["name"] == "top three")
    assert top["mode"] == "markers" and "text" not in top  # the labels are the annotations, not the trace's text
    xs, ys = values(layouts["x"]), values(layouts["y"])
    points = list(zip(gpus_view._fractions([*xs, *values(top["x"])], True)[len(xs):],
                      gpus_view._fractions([*ys, *values(top["y"])], True)[len(ys):]))
    offsets = [(a["ax"], a["ay"]) for a in labels]
    assert _boxes_apart(points, offsets)
    assert not _boxes_apart(points, [(0, -24)] * 3)  # one offset for all ("top center"): two labels overlapped


# ------------------------------------------------------------------ 5. the SGLang verdict, worded as vLLM's

def test_sglang_verdict_reads_as_the_vllm_one():
    # --max-total-tokens 1000 caps SGLang's pool under one request of 131,072 tokens; SGLang starts anyway
    p = kvplan_plan("llama-3.1-8b", engine="sglang", max_total_tokens=1000)
    assert p.verdict == ("Does not fit: one request of 131,072 tokens needs more KV than the pool holds (1,000 "
                         "tokens); SGLang starts anyway, as it checks no request against its pool.")
    assert views.verdict_word(p) == "does not fit"
    vllm = kvplan_plan("llama-3.1-8b", kv_cache_memory_bytes=2**30)
    assert vllm.verdict.startswith("Does not fit: one request of 131,072 tokens needs more KV blocks than the pool")
    at = run_app({"v": "1", "m": "llama-3.1-8b", "e": "sglang", "mtt": "1000"})
    assert any("Does not fit: one request of 131,072 tokens needs more KV than the pool holds" in plain(e.value)
               for e in at.get("error") + at.get("warning"))


# ------------------------------------------------------------------ 6. one decode-read text for Budget and GPUs

def test_budget_and_gpus_describe_the_decode_read_alike():
    # gpt-oss-120b: an untied lm_head, 4 routed experts a token
    at = run_app({"v": "1", "m": "gpt-oss-120b"})
    ceiling = {m.label: m for m in at.metric}["Tokens/s (ceiling)"]
    assert views.decode_read_text(True, "4") in ceiling.help
    at = run_app({"v": "1", "m": "gpt-oss-120b", "conc": "1", "len": "8192"}, "pages/gpus.py")
    column = json.loads(at.dataframe[0].proto.columns)["tokens/s bound"]["help"]
    assert views.decode_read_text(True, "k") in column
    # and the ranking rule above the table reads the same words
    assert any(views.decode_read_text(True, "k") in plain(m.value) for m in at.markdown)
    for text in (ceiling.help, column):
        assert "but its untied input-embedding table (a step reads only its batch's rows)" in text
    # a dense tied model (Qwen3-0.6B ties its embeddings): neither the table nor experts
    from kvplan.presets import load_preset

    assert gpus_view.tokens_help(load_preset("qwen3-0.6b")).count("the rank's weights and each layer's KV") == 1


# ------------------------------------------------------------------ 7. the sidebar's "Set:" caption in flags

LISTED = dict(vllm_version="0.11", sglang_version="0.5.4", gpu_memory_utilization=0.8, block_size=32, max_num_seqs=8,
              max_num_batched_tokens=4096, kv_cache_memory_bytes=10**9, enforce_eager=True,
              decode_context_parallel_size=2, disable_custom_all_reduce=True, sampler="flashinfer", usage_context="llm",
              language_model_only=True, mm_encoder_tp_mode="data", speculative_method="mtp", num_speculative_tokens=3,
              drafter="eagle3-llama3.1-8b", enable_prefix_caching=False, enable_expert_parallel=True, weights_gib=15.5,
              model_runner="V2", cudagraph_mode="PIECEWISE", compile_cache="warm", mm_limits=(("image", 0),),
              mm_processor_kwargs=(("max_pixels", 1003520),), skip_mm_profiling=True, vllm_graph_reserved_mem=0.2,
              moe_backend="marlin", triton_kernels=True,
              mem_fraction_static=0.8, max_total_tokens=1000, dp_attention_size=2, moe_dense_tp_size=1,
              piecewise_cuda_graph="disable", mamba_full_memory_ratio=0.5, max_mamba_cache_size=10,
              mamba_ssm_dtype="bfloat16", swa_full_tokens_ratio=0.5, disable_hybrid_swa_memory=True,
              sglang_aiter_honor_explicit_mem_fraction=True, runtime_gib=3.0, headroom_gib=1.0)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "custom"])
def test_every_knob_the_caption_can_list_reads_in_the_engines_words(engine):
    names = (*widgets.ENGINE_KNOBS[engine], *widgets.ADVANCED_KNOBS[engine])
    assert set(names) <= set(LISTED)
    for name in names:
        state = PlanState(engine=engine, **{name: LISTED[name]})
        assert getattr(state, name) != getattr(DEFAULT, name)
        text = widgets.knob_text(state, name)
        # a flag, an environment variable, or the sidebar's own words; never kvplan's "field=value"
        assert not text.startswith(f"{name}="), text
        # (SGLang's measured weights in its own log's words, qa14b: "Load weight mem usage 15.5 GiB")
        assert re.match(r"(--[a-z]|[A-Z][A-Z0-9_]+=[^ ]|vLLM |SGLang |Model loading took |Load weight mem usage "
                        r"|runtime workspace |headroom |torch\.compile cache |the offline LLM class)", text), \
            (name, text)
        assert "kvplan" not in text, text
    assert widgets.knob_text(PlanState(speculative_method="mtp"), "speculative_method") == \
        "--speculative-config method=mtp"
    assert widgets.knob_text(PlanState(engine="sglang", speculative_method="mtp"), "speculative_method") == \
        "--speculative-algorithm NEXTN"
    assert widgets.knob_text(PlanState(engine="sglang", enable_prefix_caching=False), "enable_prefix_caching") == \
        "--disable-radix-cache"


def test_the_sidebar_caption_names_flags():
    at = run_app({"v": "1", "m": "deepseek-v3", "tp": "8", "g": "H200", "spec": "mtp", "nspec": "2", "seqs": "64"})
    set_line = [c for c in (plain(c.value) for c in at.sidebar.caption) if c.startswith("Set: ")]
    assert set_line == ["Set: --max-num-seqs 64, --speculative-config method=mtp, "
                        "--speculative-config num_speculative_tokens=2"], set_line


# ------------------------------------------------------------------ 8. the block-FP8 TP fix on every page

FIX = "try a TP that keeps them whole, or --enable-expert-parallel"


def test_minimax_m27_tp8_names_the_fix_on_every_page():
    # MiniMax-M2.7: fp8 blocks of 128 x 128, intermediate_size 1536: 1536 / 8 = 192 is not a multiple of block_n 128
    link = {"v": "1", "m": "minimax-m2.7", "tp": "8"}
    at = run_app(link)
    assert any(FIX in plain(e.value) for e in at.error)
    at = run_app({**link, "lay": "8x1x1"}, "pages/parallelism.py")
    assert any(plain(e.value).startswith("TP8 PP1 DP1: ") and FIX in plain(e.value) for e in at.error)
    at = run_app(link, "pages/gpus.py")
    assert any(FIX in plain(i.value) for i in at.info)  # the sidebar's own layout, not ranked: why
    at.session_state[gpus_view.REJECTED] = True
    at.run()
    reasons = [r["why not"] for t in html_tables(at) for r in t if "block_n = 128" in r.get("why not", "")]
    assert reasons and all(FIX in r for r in reasons)
    at = run_app({"v": "1", "cmd": "vllm serve MiniMaxAI/MiniMax-M2.7 --tensor-parallel-size 8", "ig": "H100-SXM"},
                 "pages/import.py")
    assert any(FIX in plain(e.value) for e in at.error)
    # SGLang's fix is its own flag: --ep-size (kvplan's expert parallelism: ep = TP)
    at = run_app({"v": "1", "cmd": "python -m sglang.launch_server --model-path MiniMaxAI/MiniMax-M2.7 --tp 8",
                  "ig": "H100-SXM"}, "pages/import.py")
    said = [plain(e.value) for e in at.error if "block_n" in plain(e.value)]
    assert said and all("try a TP that keeps them whole, or --ep-size 8" in s for s in said), said


# ------------------------------------------------------------------ walk: SGLang's concurrency beside its verdict

def test_sglang_concurrency_is_cut_not_rounded_up_past_what_fits():
    # DeepSeek-V3 on 8 x H200, SGLang 0.5.21: 655,268 pool tokens / 163,840 = 3.9995; 3 whole sequences fit.
    # "4.00x" beside "Fits: 3 sequences" read as 4; SGLang logs no concurrency of its own to mirror
    p = kvplan_plan("deepseek-v3", gpu="H200", tp=8, engine="sglang")
    assert p.kv_cache_tokens == 655_268 and p.max_num_seqs_at_len == 3
    assert views.concurrency_text(p) == "3.99x"
    at = run_app({"v": "1", "m": "deepseek-v3", "tp": "8", "g": "H200", "e": "sglang"})
    assert metrics(at)["Max concurrency"] == "3.99x"
    tiles = {m.label: m for m in at.metric}
    assert tiles["KV cache tokens"].help == "SGLang's '#tokens': KV pages x page size"
    # vLLM keeps its log's format (0.33 on the same GPUs: 41,491 blocks / 10,240 a request = 4.052 -> "4.05x"; 43,163
    # and 4.22x before the held Hopper Triton MoE workspace, fp8_moe_hopper_triton; 41,741 and 4.08x before that
    # workspace was held under the forward's peak too: the forward without the routed experts, 8,192 x (4 x 7,168 +
    # 57,344 / 8 + 36,864 / 8) x 2 = 662,700,032 B, is above the V2 sampler's 382,205,952, +280,494,080 B of peak)
    assert views.concurrency_text(kvplan_plan("deepseek-v3", gpu="H200", tp=8)) == "4.05x"


def test_knobs_kept_for_another_engine_are_named_in_that_engines_flags():
    # -dcp 2 set under vLLM, then SGLang chosen: kept, not planned, named as vLLM's flag (was
    # "decode_context_parallel_size=2")
    at = run_app({"v": "1", "m": "llama-3.1-8b", "tp": "2", "e": "sglang", "dcp": "2", "mtt": "5000"})
    at.session_state["kv.knobs"] = True
    at.run()
    kept = [plain(c.value) for c in at.sidebar.caption if "Kept for another engine" in c.value]
    assert kept == ["Kept for another engine, not planned with sglang: --decode-context-parallel-size 2"], kept


# ------------------------------------------------------------------ walk: SGLang hybrids' paging bytes

def test_sglang_hybrid_paging_bytes_are_its_cell_not_one_groups_page():
    # gpt-oss-20b under SGLang: 12 full + 12 sliding layers of 8 KV heads x 64 x (K, V) x 2 B = 2,048 B a layer a
    # token; SGLang's SWA cell prices the sliding pool at --swa-full-tokens-ratio 0.8: 24,576 + 0.8 x 24,576 = 44,236 B.
    # The caption called it "one KV group's page" and said every sequence holds pages of the sliding group besides
    p = kvplan_plan("gpt-oss-20b", engine="sglang")
    assert p.ranks[0].bytes_per_block == 12 * 2048 + int(0.8 * 12 * 2048) == 44_236
    at = run_app({"v": "1", "m": "gpt-oss-20b", "e": "sglang"}, PAGING)
    said = next(c for c in _captions(at) if c.startswith("At 44,236 B per page"))
    # 1,092 tokens x 44,236 B = 48,305,712 B = 46.07 MiB
    assert said == ("At 44,236 B per page (SGLang's cell size for one token, tightest rank of the plan): 46.07 MiB "
                    "allocated, 0 B of it in empty slots. Its cached layers are 12 sliding_attention, 12 "
                    "full_attention: the sliding-window layers' pool is priced into each token's cell at "
                    "--swa-full-tokens-ratio.")  # qa14b: layers by kind, not vLLM's 'KV groups'
    # SGLang's DeepSeek-V4: 22 compressed_attention groups, none a full-attention one: no "full-attention group's
    # pages" figure; SGLang has no KV groups: its DSV4 pools are named (43 layers: 2 SWA-only + 21 CSA + 20 HCA, each
    # with its SWA pool; kvplan.sglang_dsv4), tests/test_app_engine_wording.py
    at = run_app({"v": "1", "m": "deepseek-v4-flash", "tp": "8", "g": "H200", "e": "sglang"}, PAGING)
    said = [c for c in _captions(at) if "Budget page" in c]
    assert said == ["SGLang keeps DeepSeek-V4's cache in its DSV4 pools, not in KV groups: every one of the 43 "
                    "layers' sliding-window (SWA) pool, sized at --swa-full-tokens-ratio of the full tokens (0.1 by "
                    "default), the CSA layers' compressed pool (one entry per 4 tokens) and indexer pool, the HCA "
                    "layers' (one per 128) and the compressors' state rings, all priced as one \"full token\" "
                    "(DSV4PoolConfigurator). None of them holds a sequence's pages as this page draws them: their "
                    "bytes are on the Budget page, not priced here."], said
