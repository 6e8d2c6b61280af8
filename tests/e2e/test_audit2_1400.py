"""The second audit's wider cells, in Chromium at 1400 x 1000: a Parallelism table with layouts 'short by X GiB'
(the text that replaced a bare negative pool) still fits without a sideways scroll, and a block size vLLM refuses
is warned about at the top of the page."""

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import ARTIFACTS, open_page
from tests.e2e.test_pages_1400 import MEASURE

pytestmark = pytest.mark.e2e


def test_short_by_pools_fit_at_1400(server, page):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    # Llama-3.1-405B: TP 1, 2 and 4 do not fit on H100s (short by hundreds of GiB), TP 8 fp8 does; 8 layouts wide
    lay = "1x1x1,2x1x1,4x1x1,8x1x1,1x2x1,2x2x1,4x2x1,8x2x1"
    open_page(page, f"{server}/parallelism?v=1&m=llama-3.1-405b&lay={lay}&bs=7", "Parallelism")
    expect(page.get_by_text("short by", exact=False).first).to_be_visible()
    expect(page.get_by_text("No common block size for 7", exact=False)).to_be_visible()
    tables = page.evaluate(MEASURE)["tables"]
    assert tables and all(t["scroll"] <= t["client"] for t in tables), tables
    assert all(h["inside"] for t in tables for h in t["heads"]), tables
    page.screenshot(path=str(ARTIFACTS / "audit2-parallelism-short.png"), full_page=True)


def test_the_band_past_max_position_embeddings_is_labelled(server, page):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    # max_position_embeddings 8,192; the sweep runs to 32,768
    open_page(page, f"{server}/?v=1&m=nemotron-h-56b&tp=2", "Budget")
    labels = page.locator(".js-plotly-plot .annotation-text", has_text="past max_position_embeddings (8,192)")
    expect(labels).to_have_count(2)  # memory vs context and concurrency vs context
    # each label whole inside its chart (not cut at the chart's right edge): [label left, right, chart left, right]
    edges = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot .annotation-text')]
      .filter(a => a.textContent.startsWith('past max_position_embeddings')).map(a => {
        const b = a.getBoundingClientRect(), f = a.closest('.js-plotly-plot').getBoundingClientRect();
        return [b.left, b.right, f.left, f.right]; })""")
    assert len(edges) == 2 and all(fl <= bl and br <= fr for bl, br, fl, fr in edges), edges
    for i in range(2):
        labels.nth(i).scroll_into_view_if_needed()
        page.locator(".js-plotly-plot").nth(i + 1).screenshot(path=str(ARTIFACTS / f"audit2-budget-past-max-{i}.png"))
