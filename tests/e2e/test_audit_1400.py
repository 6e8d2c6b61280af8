"""The audit's clipping findings, in Chromium at 1400 x 1000: the GPUs ranking grid (a canvas table, which
test_pages_1400's HTML-table check does not see) scrolled sideways, with 'nodes' and without; the SGLang pool
formula ran past the page's right edge and was cut; the Model page's parameter table scrolled by 5 px for a
1-trillion-parameter model."""

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import ARTIFACTS
from tests.e2e.test_pages_1400 import MEASURE, drawn

pytestmark = pytest.mark.e2e

GRID = """() => [...document.querySelectorAll('[data-testid=stDataFrame]')].map(d => {
  const s = d.querySelector('.dvn-scroller'); return [s.scrollWidth, s.clientWidth]; })"""
# Each display formula: the drawn formula's right edge against its block's (KaTeX does not wrap; overflow is cut).
KATEX = """() => [...document.querySelectorAll('.katex-display')].map(k => {
  const box = k.getBoundingClientRect(), f = k.querySelector('.katex').getBoundingClientRect();
  return [Math.round(f.right - box.right), k.scrollWidth - k.clientWidth, k.textContent.slice(0, 40)]; })"""


def test_the_gpus_ranking_fits_without_a_sideways_scroll(server, page):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.goto(f"{server}/gpus?v=1&m=llama-3.1-8b&multi=1")  # multi-node: the widest grid, with 'nodes'
    expect(page.get_by_role("heading", name="GPUs", exact=True)).to_be_visible()
    drawn(page)
    grids = page.evaluate(GRID)
    assert grids and all(scroll <= client for scroll, client in grids), grids
    page.screenshot(path=str(ARTIFACTS / "audit-gpus-multi.png"))


def test_sglang_formulas_and_a_trillion_parameter_table_are_not_cut(server, page):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.goto(f"{server}/?v=1&m=llama-3.1-8b&e=sglang")
    expect(page.get_by_role("heading", name="Budget", exact=True)).to_be_visible()
    drawn(page)
    formulas = page.evaluate(KATEX)
    assert len(formulas) >= 3 and all(right <= 1 and over <= 1 for right, over, _ in formulas), formulas
    page.goto(f"{server}/model?v=1&m=kimi-k2.5&tp=8&g=H200")
    expect(page.get_by_role("heading", name="Model", exact=True)).to_be_visible()
    drawn(page)
    tables = page.evaluate(MEASURE)["tables"]
    assert tables and all(t["scroll"] <= t["client"] for t in tables), tables
    page.screenshot(path=str(ARTIFACTS / "audit-kimi-model.png"))
