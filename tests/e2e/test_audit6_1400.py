"""The sixth audit's browser-only findings, in Chromium at 1400 x 1000, for GLM-5.2-FP8 on 8 x H200 with SGLang
(max_position_embeddings 1,048,576; the pool holds 396,800 tokens, so not one sequence fits):

* the sidebar's context placeholder read "model maximum: 1,048,57" (cut by its box): now "model max: 1,048,576";
* the Budget's memory chart title "Memory per GPU: H200, not one sequence of 1,048,576 tokens fits" ran past its
  half-page column ("... tokens fi"): a long title now puts its load on a second line.
"""

import pytest

from tests.e2e.conftest import ARTIFACTS, open_page

pytestmark = pytest.mark.e2e

# the placeholder's text width (canvas, the input's own font) against the input's content box; every plotly
# title's box against its chart's width
MEASURE = """() => {
  const ctx = document.createElement('canvas').getContext('2d');
  const boxes = [...document.querySelectorAll('[data-testid=stSidebar] input[placeholder]')]
    .filter(e => e.value === '' && e.getAttribute('role') !== 'combobox' && e.clientWidth > 0).map(e => {
    const cs = getComputedStyle(e); ctx.font = cs.font;
    const inner = e.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    return [e.placeholder, Math.ceil(ctx.measureText(e.placeholder).width), Math.floor(inner)];
  });
  const titles = [...document.querySelectorAll('[data-testid=stPlotlyChart] .main-svg')].flatMap(svg => {
    const r = svg.getBoundingClientRect();
    return [...svg.querySelectorAll('.gtitle')].map(t => {
      const b = t.getBoundingClientRect(); return [t.textContent, Math.ceil(b.right), Math.floor(r.right)]; });
  });
  return {boxes, titles};
}"""


def test_a_million_token_placeholder_and_an_unfit_chart_title_are_not_cut(server, page):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    open_page(page, f"{server}/?v=1&m=glm-5.2-fp8&g=H200&tp=8&e=sglang", "What SGLang 0.5.21 logs at start-up",
              exact=False)
    got = page.evaluate(MEASURE)
    ctx = [b for b in got["boxes"] if "1,048,576" in b[0]]
    assert ctx and ctx[0][0] == "model max: 1,048,576", got["boxes"]
    assert all(width <= inner for _, width, inner in got["boxes"]), [b for b in got["boxes"] if b[1] > b[2]]
    assert any(t[0].startswith("Memory per GPU: H200") for t in got["titles"]), got["titles"]
    assert all(right <= edge for _, right, edge in got["titles"]), got["titles"]
    page.screenshot(path=str(ARTIFACTS / "audit6-glm52-sglang.png"))
