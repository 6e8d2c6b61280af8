"""The web app in a real browser: a shared link, a widget that moves the URL, a page change that
keeps the plan (a screenshot kept under the e2e artifacts folder, outside the checkout)."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from kvplan.web import formulas
from tests.app_util import kvplan_plan
from tests.e2e.conftest import ARTIFACTS

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
SHOT = ARTIFACTS / "budget-link.png"
LINK = "v=1&m=llama-3.1-70b&tp=4&len=32768&conc=16&kvd=fp8"


def idle(page):
    expect(page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]')).to_have_count(1)


def metric(page, label: str):
    return page.get_by_test_id("stMetric").filter(has_text=label)


def test_shared_link_widget_url_and_page_change(server, page):
    page.goto(f"{server}/?{LINK}")
    p4 = kvplan_plan("llama-3.1-70b", tp=4, concurrency=16, max_model_len=32768, kv_cache_dtype="fp8")
    expect(metric(page, "KV blocks")).to_contain_text(f"{p4.num_blocks:,}")
    expect(metric(page, "KV cache tokens")).to_contain_text(f"{p4.kv_cache_tokens:,}")
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(3)
    # the formulas (one Markdown block of display math) are typeset by KaTeX, none left as source
    expect(page.locator(".katex-display")).to_have_count(len(formulas.budget_formulas(p4)))
    assert page.locator(".katex-error").count() == 0 and "$$" not in page.inner_text("body")
    idle(page)
    page.wait_for_timeout(500)  # let the charts finish drawing
    SHOT.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOT))
    assert SHOT.stat().st_size > 20_000

    # a widget change moves the numbers and the URL
    tp = page.get_by_label("TP", exact=True)
    tp.fill("8")
    tp.press("Enter")
    p8 = kvplan_plan("llama-3.1-70b", tp=8, concurrency=16, max_model_len=32768, kv_cache_dtype="fp8")
    expect(metric(page, "KV blocks")).to_contain_text(f"{p8.num_blocks:,}")
    expect(page).to_have_url(re.compile(r"[?&]tp=8(&|$)"))
    idle(page)

    # moving to another page through the sidebar keeps the plan (and the link)
    page.get_by_test_id("stSidebar").get_by_role("link", name="Paging").click()
    expect(page).to_have_url(re.compile(r"/paging\?.*tp=8"))
    expect(page.get_by_role("heading", name="Paging")).to_be_visible()
    expect(page.get_by_label("TP", exact=True)).to_have_value("8")
    expect(metric(page, "Blocks allocated")).to_be_visible()
    idle(page)
    assert "m=llama-3.1-70b" in page.url and "conc=16" in page.url

    page.get_by_test_id("stSidebar").get_by_role("link", name="Budget").click()
    expect(metric(page, "KV blocks")).to_contain_text(f"{p8.num_blocks:,}")
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(3)


def test_tampered_link_warns_in_the_browser(server, page):
    page.goto(f"{server}/model?v=1&tp=abc&m=no-such-model")
    expect(page.get_by_test_id("stAlertContentWarning").first).to_contain_text("tp")
    expect(page.get_by_role("heading", name="Model")).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)


def test_lazy_sidebar_boxes_open_and_work(server, page):
    """The engine knobs and the share box build their widgets only when opened: in the browser,
    opening them shows the widgets, a knob changes the plan and the link, the share box shows it."""
    page.goto(f"{server}/?{LINK}")
    expect(metric(page, "KV blocks")).to_be_visible()
    idle(page)
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar.get_by_label("gpu_memory_utilization", exact=True)).to_have_count(0)
    sidebar.get_by_text("Engine knobs").click()
    box = sidebar.get_by_label("gpu_memory_utilization", exact=True)
    expect(box).to_be_visible()
    idle(page)
    box.fill("0.8")
    box.press("Enter")
    expect(page).to_have_url(re.compile(r"[?&]gmu=0\.8(&|$)"))
    p = kvplan_plan("llama-3.1-70b", tp=4, concurrency=16, max_model_len=32768, kv_cache_dtype="fp8",
                    gpu_memory_utilization=0.8)
    expect(metric(page, "KV blocks")).to_contain_text(f"{p.num_blocks:,}")
    idle(page)
    sidebar.get_by_text("Share or save this plan").click()
    expect(sidebar.get_by_test_id("stCode")).to_contain_text("gmu=0.8")
    expect(sidebar.get_by_test_id("stDownloadButton")).to_have_count(2)
    expect(page.get_by_test_id("stException")).to_have_count(0)
