"""A new user's audit of the app (issue 12's standard), one test per finding that was fixed: the pool's token
count named by the formula the engine really logs (a hybrid's is not 'KV blocks x block size'), its gap to the
longest request explained by the layers the model has, the SGLang pool formula on two lines (it ran off the
page), a concurrency axis that always has numbers, a generic model's terms never called exact, an SGLang
command's own flags in the Import table, a refused empty box naming what is planned instead, one MLA note on
Parallelism, the Model page not calling a loaded vision tower 'not planned', the hybrid's default block size
shown, the GPUs table inside 1400 px."""

import json

from kvplan.web import cached, figures, formulas, gpus_view, views
from kvplan.web.state import decode
from tests.app_util import figure, html_tables, kvplan_plan, plain, run_app, state
from tests.test_app_ui_pages import GENERIC

NEMOTRON = {"v": "1", "m": "nemotron-h-56b", "tp": "2"}


def _plan(params: dict):
    return cached.plan_for(decode(params)[0])


def _tokens_note(at) -> str:
    return next(plain(c.value).replace("**", "") for c in at.caption if "is the pool" in c.value)


def test_a_hybrids_pool_tokens_are_concurrency_times_context_and_the_gap_is_its_state_layers():
    # Nemotron-H-56B at TP 2 on H100 (vLLM 0.33): 424 blocks of 2,080 tokens (430 before the CUDA-graph estimate took
    # the model's shape, 953 MiB: FA3's 262 MiB + 100 graphs x 59 layers x 120 KiB, kvplan.engines.cuda_graph_bytes;
    # 419 before the V2 runner's terms, kvplan.engines.vllm_model_runner), 22 per 8,192-token request (its attention
    # layers' blocks plus one state page per Mamba group). vLLM logs int(424 / 22 x 8,192) = 157,882 tokens (not 424 x
    # 2,080 = 881,920), and one request can grow to 842,400: the Mamba state does not grow. 22 = 1 attention group x
    # cdiv(8,192, 2,080) = 4 + 18 state pages, so one request takes (424 - 1 null block - 18) = 405 attention blocks
    # of 2,080 tokens = 842,400 (qa14b: it read 524,288, the search's old ceiling of 64 x 8,192, not the pool's).
    # 0.33.0's V2 dummy sampler pass (1,024 x 131,072 x 14 + 1 MiB + 8,192 x 8,192 x 2 = 2,014,314,496 B of peak vs
    # 1,109,393,408) takes 904,921,088 B: 18,094,953,949 -> 17,190,032,861 B // 42,598,400 = 403 blocks, int(403 / 22 x
    # 8,192) = 150,062 tokens, (403 - 1 - 18) x 2,080 = 798,720 (424 / 157,882 / 842,400 on 0.32)
    p = _plan(NEMOTRON)
    assert (p.num_blocks, p.blocks_per_request, p.block_size, p.kv_cache_tokens) == (403, 22, 2080, 150_062)
    assert int(403 / 22 * 8192) == 150_062 and p.max_model_len_that_starts == (403 - 1 - 18) * 2080 == 798_720
    assert formulas.tokens_rule(p) == "concurrency"
    note = _tokens_note(run_app(NEMOTRON))
    assert "KV cache tokens (150,062) is the pool as vLLM logs it ('GPU KV cache size'): max concurrency x " \
           "max_model_len" in note
    assert "648,658 tokens more: the recurrent-state layers (Mamba / linear attention)" in note  # 798,720 - 150,062
    assert "Fits up to 798,720 tokens is the longest single request that can start (as --max-model-len: this plan " \
           "serves up to 8,192)" in note
    assert "sliding-window" not in note and "KV blocks x block size" not in note


def test_the_tokens_formula_is_the_profiles_own():
    # vLLM 0.11 logs num_blocks // KV groups x block size: 336 // 7 x 2,080 = 48 x 2,080 = 99,840 (the 0.33
    # formula, int(336 / 10 x 8,192) = 275,251, is not what that release prints)
    p = _plan({**NEMOTRON, "vv": "0.11"})
    assert (p.num_blocks, len(p.kv_groups), p.kv_cache_tokens) == (336, 7, 99_840) and 336 // 7 * 2080 == 99_840
    assert formulas.tokens_rule(p) == "groups"
    latex = dict(formulas.budget_formulas(p))["Concurrency and tokens"]
    assert r"\frac{336}{7\ \text{groups}}" in latex and latex.endswith("= 99{,}840")
    # SGLang: pages x page size (DeepSeek-V3 at TP 8 on H200: 655,268 one-token pages; 658,909 before SGLang's MLA
    # w_kc / w_vc were priced, kvplan.sglang.mla_absorb_bytes)
    sg = _plan({"m": "deepseek-v3", "tp": "8", "g": "H200", "e": "sglang"})
    assert formulas.tokens_rule(sg) == "blocks" and sg.kv_cache_tokens == sg.num_blocks == 655_268
    # a window's gap keeps its reason (gpt-oss-120b: 2,079,200 - 1,861,066 = 218,134 tokens more, its 128-token sliding
    # layers; 130,984 blocks of 294,912: 124,966 + 6,018 since the Triton MXFP4 layout frees the checkpoint's scales
    # (0.25.0+) and pads the swizzled scales' K to 4 (0.26.0+), 4,608 experts x (7,197,568 - 6,812,416) B a TP-2 rank =
    # 1,774,780,416 B = 6,018 blocks; before: 1,982,912 - 1,775,560 = 207,352 tokens; 0.33.0's V2 sampler pass, 1,024 x
    # 201,088 x 14 + 1 MiB + 8,192 x 2,880 x 2 = 2,931,032,064 B of peak vs 579,133,440 (0.32: 2,110,512 - 1,888,871 = 221,641;
    # 2,106,848 - 1,885,618 with the fixed CUDA-graph fit, 2,016,944 - 1,805,781 before the 0.33 profile's V2 runner
    # terms)
    gpt = run_app({"v": "1", "m": "gpt-oss-120b", "tp": "2"})
    assert "218,134 tokens more: sliding-window / chunked layers" in _tokens_note(gpt)


def test_the_sglang_and_custom_pool_formulas_break_onto_two_lines():
    for params in ({"m": "qwen3-235b-a22b", "tp": "8", "g": "H200", "e": "sglang"},  # (a hybrid: refused on SGLang)
                   {"m": "llama-3.1-8b", "e": "custom"}):
        latex = dict(formulas.budget_formulas(_plan(params)))["KV pool on the tightest rank"]
        assert latex.startswith(r"\begin{aligned}") and r"\\ &=" in latex, latex


def test_the_concurrency_axis_has_numbers_inside_one_decade():
    # Nemotron-H at TP 2 holds 11.56 to 20.68 sequences from 32k down to 512 tokens: a decade-only log axis
    # (dtick 1) had no tick in that range, so no number on the axis at all.
    fig = figure(run_app(NEMOTRON), "budget.concurrency")
    axis = fig["layout"]["yaxis"]
    assert axis["type"] == "log" and axis["tickvals"][:2] == [10.0, 20.0] and axis["ticktext"][:2] == ["10", "20"]
    low, high = axis["range"]
    assert 10 ** low <= 10 <= 20 <= 10 ** high  # both labelled ticks drawn
    assert figures._count_ticks([0.13, 0.5])["ticktext"] == ["0.1", "0.2", "0.5", "1"]


def test_a_generic_models_terms_are_estimates_and_its_note_is_shown_once():
    at = run_app(page="pages/model.py")
    at.text_area(key="model.paste").set_value(json.dumps(GENERIC)).run()
    at.button(key="model.use_paste").click().run()
    at.switch_page("pages/budget.py").run()
    rows = {r["term"]: r for r in html_tables(at)[0]}
    assert rows["weights"]["basis"] == "estimate (generic decoder)"
    assert rows["device memory"]["basis"] == "measured"
    notes = [n for n in (plain(w.value) for w in at.warning) if "is not a family kvplan or transformers knows" in n]
    assert len(notes) == 1 and notes[0].startswith("**Estimate (generic decoder)**"), notes


def test_an_sglang_command_lists_its_own_flags_and_its_mem_fraction():
    cmd = ("python -m sglang.launch_server --model-path Qwen/Qwen3-235B-A22B --tp 8 --mem-fraction-static 0.85 "
           "--context-length 32768 --page-size 64")
    at = run_app({"v": "1", "cmd": cmd, "ig": "H200"}, "pages/import.py")
    flags = {r["flag"]: r["value"] for r in html_tables(at)[0]}
    assert flags["--mem-fraction-static"] == "0.85" and flags["--context-length"] == "32768"
    assert (flags["--tp-size"], flags["--page-size"], flags["--model-path"]) == ("8", "64", "Qwen/Qwen3-235B-A22B")
    assert "--gpu-memory-utilization" not in flags and "--max-model-len" not in flags
    vllm = run_app({"v": "1", "cmd": "vllm serve openai/gpt-oss-120b -tp 2 --kv-cache-memory-bytes 40G",
                    "ig": "H100-SXM"}, "pages/import.py")
    flags = {r["flag"]: r["value"] for r in html_tables(vllm)[0]}
    # 40G is vLLM's binary suffix: 40 x 2^30 = 42,949,672,960 B; switches read on / off, not False / 1
    assert flags["--kv-cache-memory-bytes"] == "42949672960 B (40.00 GiB)"
    assert flags["--enforce-eager"] == "off" and flags["--enable-expert-parallel"] == "off"


def test_a_v1_image_tag_is_not_called_the_v0_engine():
    cmd = "docker run --gpus all vllm/vllm-openai:v0.9.2 --model meta-llama/Llama-3.1-8B-Instruct"
    at = run_app({"v": "1", "cmd": cmd, "ig": "H100-SXM"}, "pages/import.py")
    shown = " ".join(plain(c.value) for c in at.caption)
    assert "vLLM profile 0.10, from the image tag." in shown and "V0 engine" not in shown


def test_a_refused_empty_box_names_what_is_planned_instead():
    at = run_app({"v": "1", "m": "llama-3.1-8b"})
    at.number_input(key="w.max_model_len").set_value(0).run()
    shown = plain(" ".join(e.value for e in at.error))
    # one sentence: the field, the value refused, what is allowed, what is planned (issue 12: it read "... Planning
    # model max: 131,072." under the box and "Every page shows the last valid context length (max_model_len): model
    # max: 131,072, not the refused input." at the top)
    said = ("**Refused context length (max_model_len) = 0**: must be from 1 to 100,000,000; every page plans the "
            "model's maximum (131,072) instead.")
    assert [plain(e.value) for e in at.error] == [said, said]  # under the box and at the top of the page
    assert "model max:" not in shown and "not the refused input" not in shown
    at.number_input(key="w.tensor_parallel_size").set_value(5000).run()
    assert ("**Refused TP = 5,000**: must be from 1 to 4,096; every page plans the last valid value (1) instead."
            in plain(" ".join(e.value for e in at.error)))
    assert state(at).max_model_len is None and state(at).tensor_parallel_size == 1


def test_parallelism_says_the_mla_note_once():
    at = run_app({"v": "1", "m": "deepseek-v3", "g": "H200", "tp": "8"}, "pages/parallelism.py")
    notes = [n for n in (plain(i.value) for i in at.info) if "MLA: the latent cache" in n]
    assert len(notes) == 1 and notes[0].count("MLA:") == 1 and "each of the 8 ranks" in notes[0]


def test_the_model_page_does_not_call_a_loaded_vision_tower_unplanned():
    at = run_app({"v": "1", "m": "gemma-3-27b-it"}, "pages/model.py")
    shown = " ".join(plain(i.value) for i in at.info)
    assert "not in these counts: vision_tower (SigLIP); the Budget loads its weights" in shown
    assert "not planned: vision_tower" not in shown
    # ... and the Budget does load it: SigLIP + projector, 16-bit, TP 1
    budget = {r["term"]: r for r in html_tables(run_app({"v": "1", "m": "gemma-3-27b-it"}))[0]}
    assert budget["vision tower (in weights)"]["bytes"] == "846,120,672"
    assert views.skipped_notes(kvplan_spec("deepseek-v3")) == [
        "not planned: 1 multi-token-prediction layer (loaded only for speculative decoding)"]


def kvplan_spec(name: str):
    from kvplan.presets import load_preset

    return load_preset(name)


def test_the_paging_block_size_default_names_the_engines_choice():
    at = run_app(NEMOTRON, "pages/paging.py")
    box = at.selectbox(key="w.block_size")
    assert box.value == "default" and box.options[0] == "default (2080)" and "64" in box.options


def test_layout_caption_and_an_unfit_chart_title_read_as_words():
    s = decode({"tp": "4096", "pp": "128", "dp": "4096"})[0]
    assert views.layout_caption(s) == "2,147,483,648 GPUs: TP 4096 x PP 128 x DP 4096"
    # 40,960 tokens on one H100: 0.88 of a request (gemma-3-27b-it at 131,072, 0.93 before the 0.33 profile's V2
    # runner terms, now fits 1.02)
    p = kvplan_plan("qwen3-32b")
    assert not p.fits
    layout = figures.rank_memory(p).to_dict()["layout"]  # 63 characters: the load on a subtitle's line (audit6)
    assert layout["title"]["text"] == "Memory per GPU: H100-SXM"
    assert layout["title"]["subtitle"]["text"] == "not one sequence of 40,960 tokens fits"
    assert layout["margin"]["t"] == 74  # 50 + 24: the subtitle's line between the title and the plot (ui1203)


def test_the_gpus_table_fits_1400_px():
    # 938 px beside the sidebar at 1400 x 1000 (measured in Chromium); the grid is the sum of its column widths
    def width(cols):
        return sum(c["width"] for c in cols.values() if c is not None)

    assert width(gpus_view.option_columns(multi_node=True)) == 936  # 934 + 6 (GPU 128 -> 134) - 4 ($ / M 86 -> 82)
    assert width(gpus_view.option_columns(multi_node=False)) == 888 and gpus_view.option_columns(False)["nodes"] is None


def test_a_v0_plans_gap_is_its_watermark_not_a_null_block():
    # vLLM 0.7 (V0), Llama-3.1-8B on one H100: 28,119 blocks x 16 = 449,904 tokens; the block manager keeps
    # int(0.01 x 28,119) = 281 blocks free, so the longest prompt is (28,119 - 281) x 16 = 445,408 tokens
    params = {"v": "1", "m": "llama-3.1-8b", "vv": "0.7"}
    p = _plan(params)
    assert (p.num_blocks, p.kv_cache_tokens, p.max_model_len_that_starts) == (28_119, 449_904, 445_408)
    assert formulas.tokens_rule(p) == "blocks"
    note = _tokens_note(run_app(params))
    assert "is the pool as vLLM logs it ('GPU KV cache size'): KV blocks x block size" in note
    assert "4,496 tokens fewer: the V0 block manager keeps 281 blocks (1% of them) free as its watermark" in note
    assert "null block" not in note
