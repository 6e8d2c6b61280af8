"""The eighth audit's browser checks, in Chromium at 1400 x 1000:

* Llama-3.1-70B on 4 x Gaudi 3: the Budget's KV-pool formula (vllm-gaudi's five terms) ran past the column and was
  cut at "reserve"; every formula now fits its column;
* Qwen3.5-27B with vLLM MTP (2 tokens): the Model page's layer strip frames the MTP layer after the 64 decoder
  layers, its "MTP" label inside the chart.
"""

import pytest

from tests.e2e.conftest import ARTIFACTS, open_page

pytestmark = pytest.mark.e2e

# every display formula's KaTeX box: its drawn width against its container's
FORMULAS = """() => [...document.querySelectorAll('.katex-display')].map(k => {
  const box = k.parentElement.getBoundingClientRect(), b = k.querySelector('.katex-html').getBoundingClientRect();
  return {text: k.textContent.slice(0, 60), right: b.right, limit: box.right, scroll: k.scrollWidth, client: k.clientWidth};
})"""


def test_the_gaudi_pool_formula_fits_its_column(server, page):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    open_page(page, f"{server}/?v=1&m=llama-3.1-70b&tp=4&g=Gaudi3", "Budget")
    boxes = page.evaluate(FORMULAS)
    assert any("reserved for KV cache dummy block" in b["text"] or "pool" in b["text"] for b in boxes), boxes
    cut = [b for b in boxes if b["right"] > b["limit"] + 1 or b["scroll"] > b["client"] + 1]
    assert not cut, cut
    page.locator(".katex-display").first.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "audit8-gaudi-formula.png"))


STRIP = """() => {
  const chart = [...document.querySelectorAll('[data-testid=stPlotlyChart]')]
    .find(c => (c.querySelector('.gtitle') || {}).textContent?.startsWith('The decoder, layer by layer'));
  const b = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const label = [...chart.querySelectorAll('.annotation-text')].find(a => a.textContent === 'MTP');
  return {title: chart.querySelector('.gtitle').textContent, svg: b(chart.querySelector('.main-svg')),
          label: label ? b(label) : null, frames: chart.querySelectorAll('.layer-above .shapelayer path, .shapelayer path').length};
}"""


def test_the_mtp_layer_is_framed_and_named_in_the_layer_strip(server, page):
    open_page(page, f"{server}/model?v=1&m=qwen3.5-27b&spec=mtp&nspec=2", "Model")
    s = page.evaluate(STRIP)
    assert s["title"].startswith("The decoder, layer by layer (64 layers + 1 MTP layer"), s
    assert s["label"] is not None and s["frames"] >= 1, s
    svg, label = s["svg"], s["label"]
    assert svg[0] <= label[0] and label[2] <= svg[2] and svg[1] <= label[1], ("MTP label cut", s)
    page.screenshot(path=str(ARTIFACTS / "audit8-mtp-strip.png"))
