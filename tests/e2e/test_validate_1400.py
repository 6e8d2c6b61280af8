"""The Validate page in Chromium at 1400 x 1000 after a real run (gpt2 reduced to one layer, on the CPU): both
result tables are the app's HTML tables, every column inside the table's visible area (nothing behind a
scrollbar, scrollWidth <= clientWidth), the key columns there, no metric value cut; a screenshot is kept."""

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import ARTIFACTS
from tests.e2e.test_pages_1400 import MEASURE, drawn, idle

pytestmark = pytest.mark.e2e

KEY_COLUMNS = ["quantity", "predicted (plan)", "measured (this run)", "check", "note",  # the result table
               "cache", "step", "KV predicted (B)", "KV measured (B)", "blocks (predicted / measured)",  # per step
               "wasted slots (predicted / measured)", "time (ms)"]


def test_validate_tables_fit_at_1400_after_a_run(server, page):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.goto(f"{server}/validate?v=1&m=gpt2")
    drawn(page)
    for name, value in (("Prompt tokens", "16"), ("Decode steps", "2"), ("Layers (0 = all, reduced if needed)", "1")):
        box = page.get_by_role("spinbutton", name=name, exact=True)
        box.fill(value)
        box.press("Enter")
        idle(page)
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.locator("table.kv-table").first).to_be_visible(timeout=120_000)
    idle(page)
    page.get_by_text("Per step", exact=True).click()  # the per-step table's expander
    expect(page.locator("table.kv-table")).to_have_count(2)
    expect(page.locator("table.kv-table").nth(1)).to_be_visible()
    page.wait_for_timeout(300)
    expect(page.get_by_test_id("stException")).to_have_count(0)
    m = page.evaluate(MEASURE)
    assert len(m["tables"]) == 2, m["tables"]
    for t in m["tables"]:
        assert t["scroll"] <= t["client"], ("a table scrolls sideways", t)
        outside = [h["text"] for h in t["heads"] if not h["inside"]]
        assert not outside, ("columns outside the visible table", outside)
    heads = {h["text"] for t in m["tables"] for h in t["heads"]}
    assert set(KEY_COLUMNS) <= heads, sorted(set(KEY_COLUMNS) - heads)
    assert not m["cut"], ("metric cut", m["cut"])
    assert m["metrics"] >= 2
    page.screenshot(path=str(ARTIFACTS / "validate-run.png"), full_page=True)
