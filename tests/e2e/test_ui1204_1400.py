"""2026-12-04's refusals and the DP x MoE warning in Chromium at 1400 x 1000 (ui1204).

(a) Import: an SGLang DeepSeek-V4 line with --speculative-algorithm NEXTN is refused naming the flag with SGLang's
AssertionError text, whole on screen; Apply moves nothing in the sidebar, and Budget names the refused line over the
sidebar's plan (labelled the last valid one). (b) A link of a GPTQ MoE with a typed --moe-backend triton
(wf=gptq-int4-g128&moe=triton): every page names the refusal and its field, whole on screen, with no plan's metrics
under it; the sidebar's Weights box shows the link's format whole (before: it listed kvplan.weights.FORMATS only, so
the link's format was dropped to "as shipped" and the bf16 checkpoint planned as if the link's; kept beside the KV
dtype, "gptq-int4-g128" was cut at 78 of its 102 px). (c) A vLLM MoE plan at --data-parallel-size 8 warns on Budget
and, for each compared DP layout, on Parallelism; the warning wraps and nothing on either page is clipped. A screenshot
of each step is kept under the e2e artifacts folder (outside the checkout).
"""

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import ARTIFACTS, open_page, rerun
from tests.e2e.test_pages_1400 import alerts, measured
from tests.e2e.test_qa15_1400 import go, whole_on_screen

pytestmark = pytest.mark.e2e

# Every element under ``root`` that hides overflow (overflow-x not visible, or an ellipsis) and is narrower than its
# content: its text is cut. KaTeX's MathML copy (1 px, for screen readers) and 0 / 1 px boxes are no text on screen.
CLIPPED = """(root) => [...document.querySelectorAll(root + ' *')].filter(x => {
  if (x.clientWidth <= 1 || x.closest('.katex-mathml')) return false;
  const s = getComputedStyle(x);
  return (s.overflowX !== 'visible' || s.textOverflow === 'ellipsis') && x.scrollWidth > x.clientWidth + 1;
}).map(x => [x.tagName, x.scrollWidth, x.clientWidth, (x.value || x.textContent).slice(0, 80)])"""
MAIN, SIDEBAR = "[data-testid=stMain]", "[data-testid=stSidebar]"

NEXTN = ("python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V4-Flash --tp 8 --speculative-num-steps 3 "
         "--speculative-algorithm NEXTN --speculative-eagle-topk 1")
ALGO_ASSERT = "AssertionError: Only EAGLE speculative algorithm is supported for DeepseekV4ForCausalLM"
GPTQ_TRITON = "v=1&m=qwen3-30b-a3b&wf=gptq-int4-g128&moe=triton"
WNA16 = "WNA16 MoE backend 'TRITON' does not support the deployment configuration since expert bias is not supported"


def _not_clipped(page, where: str) -> None:
    for root in (MAIN, SIDEBAR):
        cut = page.evaluate(CLIPPED, root)
        assert not cut, (where, root, cut)


def test_a_dsv4_nextn_import_is_refused_and_the_sidebar_stays(server, page):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    open_page(page, f"{server}/import", "Import a serving command")
    page.locator("textarea").first.fill(NEXTN)
    page.get_by_role("combobox", name="GPU this command runs on").click()
    page.keyboard.type("B200")  # the list of GPUs is virtualized: filter it so the option is drawn
    rerun(page, lambda: page.get_by_role("option", name=re.compile("^B200")).first.click())
    said = alerts(page).filter(has_text="--speculative-algorithm").first  # refused as typed, before Apply
    expect(said).to_contain_text("NEXTN on DeepSeek-V4: SGLang does not start (" + ALGO_ASSERT)
    rerun(page, lambda: page.get_by_role("button", name="Apply").click())
    refused = alerts(page).filter(has_text="Not applied: --speculative-algorithm: NEXTN on DeepSeek-V4").first
    expect(refused).to_be_visible()
    expect(refused).to_contain_text(ALGO_ASSERT)
    expect(refused).to_contain_text("Launch it as --speculative-algorithm EAGLE --speculative-eagle-topk 1")
    expect(alerts(page)).to_have_count(1)  # said once, and no plan of the line under it
    expect(page.get_by_test_id("stMetricLabel")).to_have_count(0)
    whole_on_screen(refused, "import nextn")
    _not_clipped(page, "import nextn")
    page.screenshot(path=str(ARTIFACTS / "ui1204-dsv4-nextn-import.png"))
    sidebar = page.get_by_test_id("stSidebar")  # Apply moved nothing: the defaults stand, in the boxes and the link
    expect(sidebar.get_by_role("combobox", name="Model")).to_have_value("llama-3.1-8b")
    expect(sidebar.get_by_role("combobox", name="GPU", exact=True)).to_have_value(re.compile("^H100-SXM"))
    expect(page).not_to_have_url(re.compile(r"[?&](m|e|tp|g)="))
    go(page, "Budget")
    banner = alerts(page).filter(has_text="Refused command line (Import) = python -m sglang.launch_server").first
    expect(banner).to_contain_text("--speculative-algorithm: NEXTN on DeepSeek-V4")
    expect(banner).to_contain_text("every page plans the sidebar's settings (llama-3.1-8b) instead")
    whole_on_screen(banner, "budget after the nextn apply")
    expect(page.get_by_text(re.compile("^Last valid plan")).first).to_contain_text("llama-3.1-8b")
    _not_clipped(page, "budget after the nextn apply")
    page.screenshot(path=str(ARTIFACTS / "ui1204-dsv4-nextn-budget.png"))


def test_b_a_gptq_moe_on_typed_triton_is_refused_on_every_page(server, page):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    open_page(page, f"{server}/?{GPTQ_TRITON}", "Budget")
    weights = page.get_by_test_id("stSidebar").get_by_role("combobox", name="Weights")
    expect(weights).to_have_value("gptq-int4-g128")  # the link's format, kept (was "as shipped")
    for name in ("Budget", "Model", "Paging", "Parallelism", "GPUs", "Validate", "Import"):
        if name == "Import":  # a command naming no model previews its own flags beside the sidebar's refusal
            open_page(page, f"{server}/import?{GPTQ_TRITON}&cmd=vllm+serve+--max-model-len+8192&ig=H100-SXM",
                      "Import a serving command")
            said = page.get_by_test_id("stAlertContentInfo").filter(
                has_text="the sidebar's own settings (qwen3-30b-a3b on H100-SXM) are refused (moe_backend)").first
        else:
            if name != "Budget":
                go(page, name)
            kind = "Info" if name == "Validate" else "Error"  # Validate runs without a plan: it says so, as info
            said = alerts(page, kind).filter(has_text=WNA16).first
            expect(said).to_contain_text("moe_backend")  # the field
            expect(said).to_contain_text("vLLM 0.33 refuses --moe-backend triton")
            if name != "Validate":  # no headline, counts or ranking of a plan
                expect(page.get_by_test_id("stMetricLabel")).to_have_count(0)
            if name not in ("Model", "Validate"):  # and no plan's table (Model's are the config's own facts)
                assert not measured(page, f"gptq triton /{name}", [])["tables"], name
        where = f"gptq triton /{name}"
        expect(page.get_by_test_id("stException")).to_have_count(0)
        whole_on_screen(said, where)
        expect(page.get_by_test_id("stAlertContentWarning").filter(
            has_text="kvplan does not size that MoE backend")).to_have_count(0)  # no warning of a plan there is not
        _not_clipped(page, where)
        page.screenshot(path=str(ARTIFACTS / f"ui1204-gptq-triton-{name.lower()}.png"))


def test_c_a_vllm_moe_at_dp_8_warns_wrapped_on_budget_and_parallelism(server, page):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    open_page(page, f"{server}/?v=1&m=qwen3-30b-a3b&dp=8&ep=1&g=H200&lay=1x1x1,1x1x2,1x1x8", "Budget")
    for name, heads in (("Budget", [8]), ("Parallelism", [2, 8])):
        if name != "Budget":
            go(page, name)
        where = f"qwen3-30b-a3b dp 8 /{name}"
        expect(page.get_by_test_id("stException")).to_have_count(0)
        for dp in heads:
            warning = page.get_by_test_id("stAlertContentWarning").filter(
                has_text=f"--data-parallel-size {dp} on a MoE model").first
            expect(warning).to_be_visible()
            expect(warning).to_contain_text(f"{dp}-rank NCCL communicators even at TP 1")  # dp x tp = dp x 1
            expect(warning).to_contain_text("logged a pool 3.80 GiB a rank below kvplan's")  # the sentence's end
            warning.scroll_into_view_if_needed()
            box = warning.evaluate("e => { const a = e.closest('[data-testid=stAlert]');"
                                   " return [a.scrollWidth, a.clientWidth, e.scrollWidth, e.clientWidth]; }")
            assert box[0] <= box[1] and box[2] <= box[3], (where, dp, "the warning does not wrap", box)
            whole_on_screen(warning, where)
        measured(page, where, ["term", "GiB", "basis", "source"] if name == "Budget" else ["layout", "fits"])
        _not_clipped(page, where)
        page.screenshot(path=str(ARTIFACTS / f"ui1204-dp8-moe-{name.lower()}.png"))
