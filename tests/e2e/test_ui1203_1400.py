"""Paired charts in Chromium at 1400 x 1000 (issue 12, ui1203): two charts side by side start level, their titles on
one line and their plot areas at one height, whatever each one's title holds.

Before: on Budget, "Memory per GPU" put its load on a second title line when the title ran long (Qwen3.5-27B on one
H100: "not one sequence of 262,144 tokens fits"); plotly.js lifts a two-line title by half a line to centre it, so its
title sat 11 px above "Memory vs context length" beside it, and its 70 px top margin put its plot area 4 px above the
neighbour's (74 px, the past-max band's). Without the band beside it (Llama-3.1-8B at 8,192 x 16 on
RTX-PRO-6000-Max-Q) the plot areas were 20 px apart (70 against 50); Qwen3.5-27B on an H200 (no subtitle, the band
on the right) 24 px (50 against 74). The load is now the title's subtitle (plotly's title.subtitle, under the title's
own line) and figures.level gives both charts the taller top margin. A screenshot of each case is kept under the e2e
artifacts folder (outside the checkout).
"""

import re

import pytest

from tests.e2e.conftest import ARTIFACTS, open_page, rerun

pytestmark = pytest.mark.e2e

# per chart (document order): its title's and subtitle's text, the title's top, the plot area's top, the chart's top
HEADS = """() => [...document.querySelectorAll('[data-testid=stPlotlyChart]')].map(c => {
  const svg = c.querySelector('.main-svg');
  const plot = svg.querySelector('.bglayer .bg') || svg.querySelector('.nsewdrag');
  const title = c.querySelector('.gtitle'); const sub = c.querySelector('.gtitle-subtitle');
  return {title: title ? title.textContent : '', subtitle: sub ? sub.textContent : '',
          titleTop: title ? title.getBoundingClientRect().top : null, plotTop: plot.getBoundingClientRect().top,
          top: svg.getBoundingClientRect().top};
})"""

CASES = {  # link: (left title, its subtitle, whether the right chart has the past-max band)
    "qwen35-27b-h100": ("m=qwen3.5-27b&g=H100-SXM",
                        "Memory per GPU: H100-SXM", "not one sequence of 262,144 tokens fits", True),
    "qwen35-27b-h200": ("m=qwen3.5-27b&g=H200", "Memory per GPU: H200, 4 x 262,144 tokens", "", True),
    # 16 x 8,192 sweeps to 32,768 < 131,072 (max_position_embeddings): no band; the 54-character title needs a subtitle
    "llama-8b-rtx-pro-max-q": ("m=llama-3.1-8b&g=RTX-PRO-6000-Max-Q&len=8192&conc=16",
                               "Memory per GPU: RTX-PRO-6000-Max-Q", "16 x 8,192 tokens", False),
}


def _level(left: dict, right: dict, where: str) -> None:
    assert abs(left["top"] - right["top"]) <= 1, (where, "not one row", left, right)
    assert abs(left["titleTop"] - right["titleTop"]) <= 1, (where, "titles not level", left, right)
    assert abs(left["plotTop"] - right["plotTop"]) <= 1, (where, "plot areas not level", left, right)


@pytest.mark.parametrize("case", list(CASES))
def test_budgets_paired_charts_start_level(server, page, case):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    link, title, subtitle, band = CASES[case]
    open_page(page, f"{server}/?v=1&{link}", "Budget")
    page.get_by_test_id("stPlotlyChart").first.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    left, right = page.evaluate(HEADS)[:2]
    assert (left["title"], left["subtitle"]) == (title, subtitle), left
    assert (right["title"], right["subtitle"]) == ("Memory vs context length", ""), right
    labels = page.get_by_test_id("stPlotlyChart").nth(1).locator(".annotation-text",
                                                                has_text="past max_position_embeddings")
    assert labels.count() == (1 if band else 0), case
    _level(left, right, case)
    page.screenshot(path=str(ARTIFACTS / f"ui1203-level-{case}.png"))


def test_pagings_paired_charts_start_level(server, page):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    open_page(page, f"{server}/paging?v=1&m=llama-3.1-8b", "Paging")
    charts = page.evaluate(HEADS)
    slots = next(c for c in charts if c["title"].startswith("Block size"))
    waste = next(c for c in charts if c["title"].startswith("Waste per block size"))
    _level(slots, waste, "paging")


# every display formula's box against its content: a KaTeX line wider than the column scrolls sideways in its box
FORMULAS = """() => [...document.querySelectorAll('.katex-display')]
  .map(k => [k.textContent.slice(0, 60), k.scrollWidth, k.clientWidth])"""


def test_an_sglang_hybrids_pool_formula_with_mtp_fits_the_column(server, page):
    # Qwen3.5-27B with MTP on SGLang, H200: the pool subtracts 7 terms (left free, weights, overhead, mm reserve, Mamba
    # pool, draft vocab copies, Mamba draft-token state reserve); on one line each its KaTeX was 1,209 px in a 940 px
    # column (it scrolled sideways); now 4 terms on the first line, 3 on the second
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    open_page(page, f"{server}/?v=1&e=sglang&m=qwen3.5-27b&g=H200&spec=mtp", "Budget")
    pool = page.locator(".katex-display", has_text="Mamba pool")
    pool.scroll_into_view_if_needed()
    shown = page.evaluate(FORMULAS)
    assert shown and all(scroll <= client for _, scroll, client in shown), shown
    page.screenshot(path=str(ARTIFACTS / "ui1203-sglang-qwen35-mtp-pool-formula.png"))


def test_a_refused_apply_is_named_whole_at_the_top_of_budget(server, page):
    # after a valid Apply (gpt-oss-120b, TP 2, B200) a refused one: Budget names it at the top, whole on screen, and
    # labels the plan it still draws (the sidebar's) the last valid one
    from playwright.sync_api import expect

    from tests.e2e.test_pages_1400 import alerts
    from tests.e2e.test_qa15_1400 import go, paste, whole_on_screen

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    paste(page, server, "vllm serve openai/gpt-oss-120b --moe-backend marlin -tp 2", "B200")
    page.locator("textarea").first.fill("vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --kv-cache-dtype fp4")
    rerun(page, lambda: page.get_by_role("button", name="Apply").click())
    expect(alerts(page).filter(has_text="Not applied: --kv-cache-dtype").first).to_be_visible()
    expect(alerts(page).filter(has_text="Refused command line")).to_have_count(0)  # said once on Import
    go(page, "Budget")
    banner = alerts(page).filter(has_text="Refused command line (Import) = vllm serve deepseek-ai/DeepSeek-V3.2").first
    expect(banner).to_contain_text("every page plans the sidebar's settings (gpt-oss-120b) instead")
    whole_on_screen(banner, "budget after a refused apply")
    expect(page.get_by_text(re.compile("^Last valid plan")).first).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "ui1203-refused-apply-budget.png"))
