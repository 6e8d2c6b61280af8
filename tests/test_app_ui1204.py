"""2026-12-04's three refusals and warnings, page by page (ui1204).

(1) An SGLang line for DeepSeek-V4 whose speculative flags stop SGLang at start-up (NEXTN; EAGLE without
--speculative-eagle-topk 1) is refused on Import naming the flag with SGLang's AssertionError text; Apply moves nothing,
and no other page plans the line. (2) A GPTQ MoE with a typed --moe-backend triton (vLLM 0.27+) is refused on every
page, naming the field. Before: the sidebar's Weights box listed kvplan.weights.FORMATS only, so a link's
wf=gptq-int4-g128 (a format check_format takes) was reset to "as shipped" without a word and every page planned the
bf16 checkpoint at triton as a plan that fits; the Model page said nothing of a refused plan, and Parallelism put the
"kvplan does not size that MoE backend ... smaller than this plan says" warning beside the refusal of every layout.
(3) A vLLM MoE plan at --data-parallel-size > 1 warns (kvplan.plan.vllm_dp_moe_note) on Budget, and now on Parallelism
for each compared DP > 1 layout (before: its table ranked them with no word).
"""

import pytest

from tests.app_util import PAGES, metrics, plain, run_app, state

IMPORT = "pages/import.py"
DSV4 = "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V4-Flash --tp 8 --speculative-num-steps 3"
NEXTN = DSV4 + " --speculative-algorithm NEXTN --speculative-eagle-topk 1"
EAGLE_NO_TOPK = DSV4 + " --speculative-algorithm EAGLE"
EAGLE_TOPK1 = DSV4 + " --speculative-algorithm EAGLE --speculative-eagle-topk 1"
ALGO_ASSERT = "AssertionError: Only EAGLE speculative algorithm is supported for DeepseekV4ForCausalLM"
TOPK_ASSERT = "AssertionError: Only EAGLE speculative algorithm with topk == 1 is supported for DeepseekV4ForCausalLM"

GPTQ_TRITON = {"v": "1", "m": "qwen3-30b-a3b", "wf": "gptq-int4-g128", "moe": "triton"}
WNA16 = ("vLLM 0.33 refuses --moe-backend triton for these int weight-only MoE experts: \"WNA16 MoE backend 'TRITON' "
         "does not support the deployment configuration since expert bias is not supported.\"")
UNSIZED = "kvplan does not size that MoE backend"


def _said(at) -> list[str]:
    return [plain(e.value) for kind in ("error", "warning", "info", "success") for e in getattr(at, kind)]


def _errors(at) -> list[str]:
    return [plain(e.value) for e in at.error]


# ----------------------------------------------------------------------------- (1) DeepSeek-V4 on SGLang, Import
@pytest.mark.parametrize("line, flag, said", [
    (NEXTN, "--speculative-algorithm", "NEXTN on DeepSeek-V4: SGLang does not start (" + ALGO_ASSERT),
    (EAGLE_NO_TOPK, "--speculative-eagle-topk", "not given on DeepSeek-V4: SGLang does not start (" + TOPK_ASSERT),
    (EAGLE_NO_TOPK + " --speculative-eagle-topk 4", "--speculative-eagle-topk",
     "4 on DeepSeek-V4: SGLang does not start (" + TOPK_ASSERT),
])
def test_a_dsv4_line_sglang_does_not_start_is_refused_and_apply_moves_nothing(line, flag, said):
    at = run_app(page=IMPORT)
    at.selectbox(key="w.import_gpu").select("B200").run()
    at.text_area(key="w.command").set_value(line).run()
    errors = _errors(at)
    assert errors == [f"**{flag}**: {said}; " + errors[0].split("; ", 1)[1]], errors  # one error, the flag first
    assert errors[0].endswith("Launch it as --speculative-algorithm EAGLE --speculative-eagle-topk 1"), errors
    assert not metrics(at) and not [s for s in _said(at) if s.startswith(("Fits", "Preview"))], _said(at)
    at.button(key="import.apply").click().run()
    assert not at.exception
    errors = _errors(at)
    assert len(errors) == 1 and errors[0].startswith(f"Not applied: {flag}: {said}"), errors  # said once
    s = state(at)  # the sidebar did not move: the defaults stand
    assert (s.model, s.gpu, s.engine, s.tensor_parallel_size, s.speculative_method) == (
        "llama-3.1-8b", "H100-SXM", "vllm", 1, "none")
    for page in ("budget", "paging", "parallelism", "gpus", "model"):
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, page
        shown = " ".join(_said(at) + [plain(c.value) for c in at.caption])
        assert "deepseek-v4-flash" not in shown.lower().replace("refused command line (import) = python -m "
                                                               "sglang.launch_server --model-path deepseek-ai/"
                                                               "deepseek-v4-flash", ""), (page, shown)
        if page != "model":  # the plan pages name the refused line at the top
            assert any(e.startswith("**Refused command line (Import) = python -m sglang.launch_server")
                       and flag in e for e in _errors(at)), (page, _errors(at))


def test_a_dsv4_line_sglang_starts_is_applied():
    # the control: EAGLE with --speculative-eagle-topk 1 starts, and Apply moves the sidebar to it
    at = run_app(page=IMPORT)
    at.selectbox(key="w.import_gpu").select("B200").run()
    at.text_area(key="w.command").set_value(EAGLE_TOPK1).run()
    assert not _errors(at), _errors(at)
    at.button(key="import.apply").click().run()
    s = state(at)
    assert (s.model, s.gpu, s.engine, s.tensor_parallel_size, s.speculative_method, s.num_speculative_tokens) == (
        "deepseek-v4-flash", "B200", "sglang", 8, "mtp", 3)


def test_a_linked_dsv4_nextn_line_is_refused_on_import_without_a_plan():
    at = run_app({"v": "1", "cmd": NEXTN, "ig": "B200"}, IMPORT)
    errors = _errors(at)
    assert len(errors) == 1 and errors[0].startswith("**--speculative-algorithm**: NEXTN on DeepSeek-V4") \
        and ALGO_ASSERT in errors[0], errors
    assert not metrics(at)  # no headline of the line


# ----------------------------------------------------------------------------- (2) GPTQ MoE, typed triton
def test_the_links_gptq_weight_format_is_kept_and_listed_in_the_sidebar():
    at = run_app(GPTQ_TRITON)
    assert (state(at).weight_format, state(at).moe_backend) == ("gptq-int4-g128", "triton")  # was None: dropped
    assert dict(at.query_params)["wf"] == "gptq-int4-g128"  # the link keeps it
    box = at.selectbox(key="w.weight_format")
    assert box.value == "gptq-int4-g128" and box.options[-1] == "gptq-int4-g128", (box.value, box.options)
    # another format picked, then "as shipped": the link's own entry leaves the list once the state no longer holds it
    box.select("fp8").run()
    assert (state(at).weight_format, at.selectbox(key="w.weight_format").value) == ("fp8", "fp8")
    at.run()
    assert "gptq-int4-g128" not in at.selectbox(key="w.weight_format").options
    at.selectbox(key="w.weight_format").select("as shipped").run()
    assert state(at).weight_format is None and metrics(at)["Verdict"] == "fits"  # bf16 experts on triton: planned
    # a format of kvplan.weights.FORMATS is not listed twice
    assert run_app({"v": "1", "wf": "fp8"}).selectbox(key="w.weight_format").options.count("fp8") == 1


@pytest.mark.parametrize("page", [*PAGES[:5], "pages/validate.py"])
def test_a_gptq_moe_with_typed_triton_is_refused_on_every_page(page):
    at = run_app(GPTQ_TRITON, page)
    said = _said(at)
    named = [s for s in said if WNA16 in s and "moe_backend" in s.split(WNA16)[0]]  # the field, then vLLM's text
    assert named, (page, said)
    assert not metrics(at), (page, metrics(at))  # no headline, counts or ranking of a plan
    assert not [s for s in said if UNSIZED in s], (page, said)  # no warning of a plan there is not
    assert not [s for s in said if s.startswith("Fits")], (page, said)
    if page == "pages/model.py":  # the model's own facts still stand, and say so
        assert named[0].startswith("The sidebar's plan is refused (the model's own figures below stand): "
                                   "**moe_backend**: "), named


def test_import_names_the_sidebars_refused_gptq_triton_plan():
    # a command naming no model previews its own flags (as shipped, auto): the sidebar's refusal is named beside it
    at = run_app(GPTQ_TRITON | {"cmd": "vllm serve --max-model-len 8192", "ig": "H100-SXM"}, IMPORT)
    said = _said(at)
    assert any(s.startswith("**Preview, not applied**: the sidebar's own settings (qwen3-30b-a3b on H100-SXM) are "
                            "refused (**moe_backend**)") for s in said), said


# ----------------------------------------------------------------------------- (3) vLLM MoE at DP > 1
def _dp_notes(at) -> list[str]:
    return [line.removeprefix("- ") for w in at.warning for line in plain(w.value).split("\n")
            if line.removeprefix("- ").startswith("--data-parallel-size")]


@pytest.mark.parametrize("link, dp, ranks, tp", [
    ({"dp": "2", "ep": "1"}, 2, 2, 1),  # 2 x 1 = 2-rank communicators
    ({"dp": "8", "ep": "1", "g": "H200"}, 8, 8, 1),  # 8 x 1
    ({"dp": "2", "tp": "2"}, 2, 4, 2),  # 2 x 2 = 4, without expert parallel too
])
def test_budget_warns_of_a_vllm_moe_plan_at_dp_over_one(link, dp, ranks, tp):
    at = run_app({"v": "1", "m": "qwen3-30b-a3b"} | link)
    notes = _dp_notes(at)
    assert len(notes) == 1 and notes[0].startswith(
        f"--data-parallel-size {dp} on a MoE model: vLLM gathers every DP rank's tokens before the experts (its "
        f"all2all dispatch), so the profile's MoE step runs on up to {dp} x max_num_batched_tokens tokens a rank, and "
        f"the DP and EP groups hold {ranks}-rank NCCL communicators even at TP {tp}"), notes
    assert notes[0].endswith("logged a pool 3.80 GiB a rank below kvplan's"), notes
    assert metrics(at)["Verdict"] == "fits"  # a plan, warned


def test_parallelism_warns_of_each_compared_dp_layout_of_a_moe_model():
    at = run_app({"v": "1", "m": "qwen3-30b-a3b", "lay": "1x1x1,1x1x2,2x1x2,1x1x8"}, "pages/parallelism.py")
    notes = _dp_notes(at)
    heads = [n.split(":", 1)[0] for n in notes]
    assert heads == ["--data-parallel-size 2 on a MoE model"] * 2 + ["--data-parallel-size 8 on a MoE model"], notes
    assert ["2-rank NCCL communicators even at TP 1" in notes[0], "4-rank NCCL communicators even at TP 2" in notes[1],
            "8-rank NCCL communicators even at TP 1" in notes[2]] == [True] * 3, notes
    # only DP 1 layouts compared, or a dense model: no such warning
    assert not _dp_notes(run_app({"v": "1", "m": "qwen3-30b-a3b"}, "pages/parallelism.py"))
    assert not _dp_notes(run_app({"v": "1", "m": "llama-3.1-8b", "lay": "1x1x2,1x1x8"}, "pages/parallelism.py"))
