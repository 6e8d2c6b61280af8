"""The third audit's additions, in Chromium at 1400 x 1000: the Budget's start-up log and its six-term pool formula
are not cut (no sideways scroll in the code block, no KaTeX overflow); the Engine knobs' release box shows its whole
label; the Model page's served-dtype rows keep every column on screen."""

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import ARTIFACTS, open_page
from tests.e2e.test_pages_1400 import MEASURE, drawn

pytestmark = pytest.mark.e2e

# Content wider than its box: the start-up log's <pre>, each KaTeX display, the sidebar's select boxes (an input
# whose value is wider than the box scrolls: scrollWidth > clientWidth).
OVERFLOW = """() => ({
  code: [...document.querySelectorAll('[data-testid=stCode] pre')].map(e => [e.scrollWidth, e.clientWidth]),
  katex: [...document.querySelectorAll('.katex-display')].map(e => [e.scrollWidth, e.clientWidth]),
  selects: [...document.querySelectorAll('[data-testid=stSidebar] input[role=combobox]')]
    .filter(e => e.getBoundingClientRect().width > 0).map(e => [e.value, e.scrollWidth, e.clientWidth]),
})"""


def _fits(pairs) -> bool:
    return all(scroll <= client + 1 for scroll, client in pairs)


def test_the_start_up_log_formula_and_release_box_are_not_cut(server, page):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    open_page(page, f"{server}/?v=1", "What vLLM 0.33 logs at start-up", exact=False)
    page.get_by_text("Engine knobs").click()
    drawn(page)
    got = page.evaluate(OVERFLOW)
    assert got["code"] and _fits(got["code"]), got["code"]
    assert len(got["katex"]) >= 5 and _fits(got["katex"]), got["katex"]  # the pool line holds six terms now
    box = [s for s in got["selects"] if s[0].startswith("0.33")]
    assert box and box[0][0] == "0.33 (default)" and box[0][1] <= box[0][2] + 1, got["selects"]
    # the default line's releases as the sidebar caption words them (kvplan.web.widgets: "vLLM releases ...")
    from kvplan.engines import VLLM_DEFAULT_VERSION, VLLM_PROFILES
    expect(page.get_by_text(f"vLLM releases {VLLM_PROFILES[VLLM_DEFAULT_VERSION].releases}")).to_be_visible()
    page.get_by_role("heading", name="What vLLM 0.33 logs at start-up").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "audit3-budget-log.png"))


def test_the_served_dtype_rows_fit(server, page):
    open_page(page, f"{server}/model?v=1&m=gemma-2-9b", "gemma-2-9b", exact=False)
    m = page.evaluate(MEASURE)
    assert m["tables"] and all(t["scroll"] <= t["client"] for t in m["tables"]), m["tables"]
    assert all(h["inside"] for t in m["tables"] for h in t["heads"]) and not m["cut"], m
    expect(page.get_by_text("weights as vLLM 0.33 loads them (bf16)")).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "audit3-model-gemma-2-9b.png"), full_page=True)
