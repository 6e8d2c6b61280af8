"""Every page in Chromium at 1400 x 1000, for a dense 8B, a 70B at TP 4, an MoE with MLA and a hybrid:
every table's columns inside the table's visible area (nothing behind a scrollbar), no metric value or
label cut, a screenshot of each page kept under the e2e artifacts folder (outside the checkout). Then
the refusals: a refused paste after a valid model is named on Budget, GPUs and Parallelism; an
out-of-range context is named and the plan on screen is labelled the last valid one; Import's Apply
moves the sidebar and a line that is not a serving command is refused.
"""

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import ARTIFACTS, drawn, idle, open_page  # noqa: F401 (others import drawn, idle here)

pytestmark = pytest.mark.e2e

MODELS = {  # (link, pages checked)
    "llama-3.1-70b-tp4": ("v=1&m=llama-3.1-70b&tp=4&len=32768&conc=16&kvd=fp8",
                          ("", "model", "paging", "parallelism", "gpus", "import", "validate")),
    "llama-3.1-8b": ("v=1&m=llama-3.1-8b", ("", "model")),
    "deepseek-v2-lite-moe-mla": ("v=1&m=deepseek-v2-lite&tp=2", ("", "model", "parallelism")),
    "qwen3-next-80b-hybrid": ("v=1&m=qwen3-next-80b-a3b&tp=4&g=H200", ("", "model")),
}
IMPORT = "&cmd=vllm+serve+meta-llama%2FLlama-3.1-70B-Instruct+-tp+4+--max-model-len+32k&ig=H100-SXM"
# Columns a reader needs, by page: they must be on screen without scrolling.
KEY_COLUMNS = {"": ["term", "GiB", "basis", "source"], "model": ["config.json field", "value", "how it is counted"],
               "parallelism": ["layout", "fits", "max concurrency", "sequences, all replicas", "KV blocks"],
               "import": ["flag", "value"]}

# For every HTML table on screen (a closed expander's are not): its wrapper's visible box, overflow, and each heading's box.
# For every metric: the value's and label's elements whose content is wider than their box (cut).
MEASURE = """() => {
  const shown = [...document.querySelectorAll('table.kv-table')].filter(t => t.getBoundingClientRect().width > 0);
  const tables = shown.map(t => {
    const w = t.closest('.kv-table-wrap'); const r = w.getBoundingClientRect();
    const right = r.left + w.clientWidth;
    return {scroll: w.scrollWidth, client: w.clientWidth,
            heads: [...t.querySelectorAll('th')].map(th => { const b = th.getBoundingClientRect();
              return {text: th.textContent, inside: b.left >= r.left - 1 && b.right <= right + 1 && b.width > 0}; })};
  });
  const cut = [];
  for (const el of document.querySelectorAll(
      '[data-testid=stMetricValue], [data-testid=stMetricValue] *, [data-testid=stMetricLabel] *')) {
    if (el.scrollWidth > el.clientWidth + 1) cut.push(el.textContent);
  }
  return {tables, cut, metrics: document.querySelectorAll('[data-testid=stMetricValue]').length};
}"""


def measured(page, where: str, key_columns: list[str]) -> dict:
    """MEASURE of the page on screen, asserting every table's columns inside its visible area (no sideways scroll),
    no metric cut, and ``key_columns`` among the headings; ``where`` names the page in a failure."""
    m = page.evaluate(MEASURE)
    for t in m["tables"]:
        assert t["scroll"] <= t["client"], (where, "a table scrolls sideways", t)
        outside = [h["text"] for h in t["heads"] if not h["inside"]]
        assert not outside, (where, "columns outside the visible table", outside)
    assert not m["cut"], (where, "metric cut", m["cut"])
    heads = {h["text"] for t in m["tables"] for h in t["heads"]}
    for col in key_columns:
        assert col in heads, (where, col, sorted(heads))
    return m


@pytest.mark.parametrize("model", list(MODELS))
def test_every_table_and_metric_fits_at_1400(server, page, model):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    link, pages = MODELS[model]
    for path in pages:
        open_page(page, f"{server}/{path}?{link}{IMPORT if path == 'import' else ''}")
        expect(page.get_by_test_id("stException")).to_have_count(0)
        where = f"{model} /{path}"
        m = measured(page, where, KEY_COLUMNS.get(path, []))
        if path in ("", "import"):
            assert m["metrics"] >= 4, where
        page.screenshot(path=str(ARTIFACTS / f"{model}-{path or 'budget'}.png"))


def alerts(page, kind: str = "Error"):
    return page.get_by_test_id(f"stAlertContent{kind}")


def sidebar_link(page, name: str):
    page.get_by_test_id("stSidebar").get_by_role("link", name=name).click()
    expect(page.get_by_role("heading", name=name, exact=True)).to_be_visible()
    idle(page)


def test_a_refused_paste_is_named_on_every_page(server, page):
    page.goto(f"{server}/model?v=1&m=llama-3.1-70b&tp=4")
    drawn(page)
    page.get_by_role("tab", name="Paste config.json").click()
    box = page.locator("textarea[aria-label='config.json']")
    box.fill('{"model_type": "llama", "hidden_size": -4}')
    page.get_by_role("button", name="Use this config").click()
    expect(alerts(page).filter(has_text="Refused the pasted config.json").first).to_be_visible()
    idle(page)
    for name in ("Budget", "GPUs", "Parallelism"):
        sidebar_link(page, name)
        banner = alerts(page).filter(has_text="Refused the pasted config.json")
        expect(banner.first).to_be_visible()
        expect(banner.first).to_contain_text("last valid model (llama-3.1-70b)")
        page.screenshot(path=str(ARTIFACTS / f"refused-paste-{name.lower()}.png"))
    expect(page.get_by_text(re.compile("^Last valid plan"))).to_be_visible()  # Parallelism's caption


def test_an_out_of_range_context_is_named_and_the_plan_labelled(server, page):
    page.goto(f"{server}/?v=1&m=llama-3.1-8b&len=8192")
    drawn(page)
    box = page.get_by_role("spinbutton", name="Context length (max_model_len)")
    box.fill("-5")
    box.press("Enter")
    expect(alerts(page).filter(has_text="Refused context length").first).to_be_visible()
    expect(page.get_by_test_id("stSidebar").get_by_test_id("stAlertContentError")).to_contain_text(
        "must be from 1 to 100,000,000")
    expect(page.get_by_text(re.compile("^Last valid plan"))).to_be_visible()
    expect(page).to_have_url(re.compile(r"[?&]len=8192(&|$)"))  # the link keeps the valid plan
    page.screenshot(path=str(ARTIFACTS / "refused-context.png"))
    tp = page.get_by_role("spinbutton", name="TP", exact=True)
    tp.fill("100000")
    tp.press("Enter")
    expect(alerts(page).filter(has_text="Refused TP").first).to_be_visible()


def test_import_apply_moves_the_sidebar_and_a_non_command_is_refused(server, page):
    page.goto(f"{server}/import")
    drawn(page)
    expect(page.get_by_text("Page not found")).to_have_count(0)  # a bare /import link opens the page, no dialog
    box = page.locator("textarea").first
    box.fill("vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4 --max-model-len 32k")
    page.get_by_role("combobox", name="GPU this command runs on").click()
    page.keyboard.type("H200")  # the list of 43 GPUs is virtualized: filter it so the option is drawn
    page.get_by_role("option", name=re.compile("^H200")).first.click()
    idle(page)
    page.get_by_role("button", name="Apply").click()
    expect(page.get_by_test_id("stAlertContentSuccess").filter(has_text="Applied")).to_be_visible()
    expect(page.get_by_role("spinbutton", name="TP", exact=True)).to_have_value("4")
    expect(page.get_by_role("spinbutton", name="Context length (max_model_len)")).to_have_value("32000")
    expect(page).to_have_url(re.compile(r"[?&]m=llama-3\.1-70b(&|$)"))
    idle(page)
    page.screenshot(path=str(ARTIFACTS / "import-applied.png"))
    box.fill("rm -rf /")
    page.get_by_role("button", name="Apply").click()
    expect(alerts(page).filter(has_text="is not a serving command").first).to_be_visible()
    expect(page.get_by_role("spinbutton", name="TP", exact=True)).to_have_value("4")  # nothing applied


def test_the_copy_link_button_is_visible_without_hovering(server, page):
    page.goto(f"{server}/?v=1&m=llama-3.1-8b&tp=2")
    drawn(page)
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_text("Share or save this plan").click()
    code = sidebar.get_by_test_id("stCode")
    expect(code).to_contain_text("tp=2")
    page.mouse.move(1300, 900)  # away from the sidebar: no hover
    button = code.locator("button").first
    expect(button).to_be_attached()
    # seen: the button visible, and no box between it and the code block transparent (the toolbar's is, by default)
    chain = button.evaluate("""b => { const out = [getComputedStyle(b).visibility];
        for (let e = b; e && e.getAttribute('data-testid') !== 'stCode'; e = e.parentElement)
          out.push(getComputedStyle(e).opacity); return out; }""")
    assert chain[0] == "visible" and set(chain[1:]) == {"1"}, chain
    # the two download buttons are drawn after the link's code block: wait for them (all_inner_texts does not)
    expect(sidebar.get_by_test_id("stDownloadButton")).to_have_count(2)
    labels = sidebar.get_by_test_id("stDownloadButton").all_inner_texts()
    assert [t.split("\n")[-1].strip() for t in labels] == ["Plan JSON", "Plan CSV"], labels


def test_every_page_opens_at_its_url_path_and_its_share_link_round_trips(server, page):
    # issue 12: /budget, typed or linked, showed "Page not found" (Budget was the default page, served at "/" only)
    for path, heading in (("budget", "Budget"), ("model", "Model"), ("paging", "Paging"),
                          ("parallelism", "Parallelism"), ("gpus", "GPUs"), ("import", "Import a serving command")):
        page.goto(f"{server}/{path}?v=1&m=qwen3-8b&tp=2")
        drawn(page)
        expect(page.get_by_role("heading", name=heading, exact=True).first).to_be_visible()
        expect(page.get_by_text("Page not found")).to_have_count(0)
        sidebar = page.get_by_test_id("stSidebar")
        sidebar.get_by_text("Share or save this plan").click()
        code = sidebar.get_by_test_id("stCode")
        expect(code).to_have_text(f"{server}/{path}?v=1&m=qwen3-8b&tp=2")  # the link opened, as it was
