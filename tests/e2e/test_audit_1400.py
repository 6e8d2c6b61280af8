"""The audit's clipping findings, in Chromium at 1400 x 1000: the GPUs ranking grid (a canvas table, which
test_pages_1400's HTML-table check does not see) scrolled sideways, with 'nodes' and without; the SGLang pool
formula ran past the page's right edge and was cut; the Model page's parameter table scrolled by 5 px for a
1-trillion-parameter model."""

import pytest

from tests.e2e.conftest import ARTIFACTS, open_page
from tests.e2e.test_pages_1400 import MEASURE

pytestmark = pytest.mark.e2e

GRID = """() => [...document.querySelectorAll('[data-testid=stDataFrame]')].map(d => {
  const s = d.querySelector('.dvn-scroller'); return [s.scrollWidth, s.clientWidth]; })"""
# Each display formula: the drawn formula's right edge against its block's (KaTeX does not wrap; overflow is cut).
KATEX = """() => [...document.querySelectorAll('.katex-display')].map(k => {
  const box = k.getBoundingClientRect(), f = k.querySelector('.katex').getBoundingClientRect();
  return [Math.round(f.right - box.right), k.scrollWidth - k.clientWidth, k.textContent.slice(0, 40)]; })"""


def test_the_gpus_ranking_fits_without_a_sideways_scroll(server, page):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    open_page(page, f"{server}/gpus?v=1&m=llama-3.1-8b&multi=1", "GPUs")  # multi-node: the widest grid, with 'nodes'
    grids = page.evaluate(GRID)
    assert grids and all(scroll <= client for scroll, client in grids), grids
    page.screenshot(path=str(ARTIFACTS / "audit-gpus-multi.png"))


def test_sglang_formulas_and_a_trillion_parameter_table_are_not_cut(server, page):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    open_page(page, f"{server}/?v=1&m=llama-3.1-8b&e=sglang", "Budget")
    formulas = page.evaluate(KATEX)
    assert len(formulas) >= 3 and all(right <= 1 and over <= 1 for right, over, _ in formulas), formulas
    open_page(page, f"{server}/model?v=1&m=kimi-k2.5&tp=8&g=H200", "Model")
    tables = page.evaluate(MEASURE)["tables"]
    assert tables and all(t["scroll"] <= t["client"] for t in tables), tables
    page.screenshot(path=str(ARTIFACTS / "audit-kimi-model.png"))
