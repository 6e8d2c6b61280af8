"""Make the README screenshot (docs/budget.png): the Budget page of a shared link in Chromium.

    python docs/make_screenshot.py            # writes docs/budget.png
    python docs/make_screenshot.py out.png    # writes elsewhere

The only thing that writes docs/budget.png: the test suite never does (tests leave the checkout as they
found it). Needs Debian's Chromium (/usr/bin/chromium, or CHROME_BIN).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import CHROME, CHROME_ARGS, ROOT, server, wait_healthy  # noqa: E402

LINK = "v=1&m=llama-3.1-70b&tp=4&len=32768&conc=16&kvd=fp8"


def main(argv: list[str]) -> int:
    from playwright.sync_api import expect, sync_playwright

    out = Path(argv[0]) if argv else ROOT / "docs" / "budget.png"
    with server() as (base, proc, _), sync_playwright() as p:
        wait_healthy(base, proc)
        browser = p.chromium.launch(executable_path=CHROME, headless=True, args=CHROME_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{base}/?{LINK}")
        charts = page.get_by_test_id("stPlotlyChart")
        expect(charts).to_have_count(3, timeout=120_000)
        for i in range(3):
            expect(charts.nth(i).locator(".main-svg").first).to_be_attached(timeout=120_000)
        expect(page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]')).to_have_count(1)
        page.wait_for_timeout(800)  # let the charts finish drawing
        out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(out))
        browser.close()
    print(f"wrote {out} ({out.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
