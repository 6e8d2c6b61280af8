"""The seventh audit's browser checks, in Chromium at 1400 x 1000 (Budget's two context charts):

* the "past max_position_embeddings" label sat inside the plot's top, on the lines: Qwen3.5-27B's step line (whole
  sequences that fit, 40 at 2k-8k) ran through it. It now sits above the plot area, under the title, and the
  titles of a row stay level;
* DeepSeek-V3 on 8 x H200: the fit-limit tick "667,840" at the axis' end was cut at the chart's edge, and "160k"
  (163,840) beside "256k" overprinted, so plotly turned every label; 100,000,000 tokens' ticks ("16,384k") were
  turned onto the axis title. Now every tick label is whole, level and apart.
"""

import pytest

from tests.e2e.conftest import ARTIFACTS, open_page

pytestmark = pytest.mark.e2e

# per chart: its title's, the plot area's and each past-max label's boxes; each x tick label's box and transform
BOXES = """() => [...document.querySelectorAll('[data-testid=stPlotlyChart] .main-svg:first-of-type')].map(svg => {
  const box = e => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  const plot = svg.querySelector('.bglayer .bg') || svg.querySelector('.nsewdrag');
  const title = svg.parentElement.querySelector('.gtitle');
  return {title: title ? title.textContent : '', titleBox: title ? box(title) : null, plot: box(plot), svg: box(svg),
          labels: [...svg.parentElement.querySelectorAll('.annotation-text')]
            .filter(a => a.textContent.startsWith('past max_position_embeddings')).map(box),
          ticks: [...svg.querySelectorAll('.xtick text')].map(t => [t.textContent, box(t), t.getAttribute('transform') || ''])};
})"""


def _chart(page, title):
    charts = page.evaluate(BOXES)
    return next(c for c in charts if c["title"] == title)


def _apart(a, b) -> bool:
    return a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]


def test_the_past_max_label_sits_above_the_plot_under_the_title(server, page):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    # max_position_embeddings 262,144; the sweep runs to 1,048,576
    open_page(page, f"{server}/?v=1&m=qwen3.5-27b&g=H200", "Budget")
    for title in ("Concurrency vs context length", "Memory vs context length"):
        c = _chart(page, title)
        assert len(c["labels"]) == 1, (title, c)
        label, plot, head = c["labels"][0], c["plot"], c["titleBox"]
        assert label[3] <= plot[1] + 1, (title, "label inside the plot area", label, plot)  # no trace reaches it
        assert _apart(label, head), (title, "label on the title", label, head)
        assert c["svg"][0] <= label[0] and label[2] <= c["svg"][2] + 1, (title, "label cut", label, c["svg"])
    # the row's two titles level: the band's taller top margin moved "Memory vs context length" 12 px down
    # (on an H200: on one H100 a 262,144-token sequence no longer fits at 0.33, 0.33.0's V2 sampler pass)
    left, right = _chart(page, "Memory per GPU: H200, 4 x 262,144 tokens"), _chart(page, "Memory vs context length")
    assert abs((left["titleBox"][1] - left["svg"][1]) - (right["titleBox"][1] - right["svg"][1])) <= 1, (left, right)
    page.locator("[data-testid=stPlotlyChart]").nth(2).scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "audit7-qwen35-past-max.png"))


TICKS = {  # link: the memory chart's tick labels
    # fits up to 645,216 tokens (667,840 on 0.32, before 0.33.0's V2 sampler pass); the sweep ends at 655,360
    "m=deepseek-v3&tp=8&g=H200": ["512", "2k", "8k", "32k", "160k", "645,216"],
    # absurd numbers: the ticks read "2,048k", "16,384k"
    "m=llama-3.1-8b&len=100000000&conc=10000000": ["512", "4k", "32k", "256k", "2M", "100,000,000"],
}


@pytest.mark.parametrize("link", list(TICKS))
def test_the_context_ticks_are_whole_level_and_apart(server, page, link):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    open_page(page, f"{server}/?v=1&{link}", "Budget")
    c = _chart(page, "Memory vs context length")
    ticks = c["ticks"]
    assert [t[0] for t in ticks] == TICKS[link], ticks
    assert not [t[0] for t in ticks if "rotate" in t[2]], ticks  # level: plotly turns them all when two collide
    assert not [t for t in ticks if t[1][0] < c["svg"][0] or t[1][2] > c["svg"][2]], ("cut", c["svg"])
    assert not [(a, b) for a, b in zip(ticks, ticks[1:]) if not _apart(a[1], b[1])], "overprinted"
    page.screenshot(path=str(ARTIFACTS / f"audit7-ticks-{link.split('&')[0][2:]}.png"))
