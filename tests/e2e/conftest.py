"""Fixtures for real-browser tests: a live ``streamlit run app.py`` and Debian's Chromium via Playwright.

Needs /usr/bin/chromium (``apt-get install -y chromium``); never ``playwright install``. The server
binds 127.0.0.1 on a free port; E2E_PORT pins one.
"""

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Screenshots the browser tests keep: outside the checkout (tests never write tracked files).
ARTIFACTS = Path(os.environ.get("E2E_ARTIFACTS") or Path(tempfile.gettempdir()) / "kvplan-e2e")
VIEWPORT = {"width": 1400, "height": 1000}  # the size the pages are checked at
CHROME = os.environ.get("CHROME_BIN", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def server():
    port = int(os.environ.get("E2E_PORT") or _free_port())
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    cmd = [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
           "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false",
           "--server.fileWatcherType", "none"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(150):
            try:
                if urllib.request.urlopen(f"{base}/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.2)
        else:
            pytest.fail("streamlit did not start: " + proc.stdout.read1().decode(errors="replace"))
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROME).exists():
        pytest.skip(f"no Chromium at {CHROME} (apt-get install -y chromium)")
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=30_000)  # the first render of a fresh server imports plotly and pandas
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROME, headless=True, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport=VIEWPORT)
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    _count_frames(pg)  # before the first goto: its websocket is the one counted (rerun)
    yield pg
    context.close()


# ----------------------------------------------------------------------------- the page set-up idiom, once
def idle(page):
    """Streamlit's script finished (the app's script state reads notRunning)."""
    from playwright.sync_api import expect

    expect(page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]')).to_have_count(1)


def drawn(page):
    """Idle, and every element out of its loading skeleton."""
    idle(page)
    page.wait_for_function("() => document.querySelectorAll('[data-testid=stSkeleton]').length == 0",
                           timeout=90_000)
    page.wait_for_timeout(300)


def open_page(page, url: str, heading: str | None = None, exact: bool = True):
    """Open url, wait for its heading (named ``heading``, exactly unless exact=False; else the page's h1) and
    for the page to be drawn."""
    from playwright.sync_api import expect

    page.goto(url)
    if heading is None:
        expect(page.get_by_role("heading", level=1)).to_be_visible()
    else:
        expect(page.get_by_role("heading", name=heading, exact=exact)).to_be_visible()
    drawn(page)
    return page


# A click that reruns the script: drawn / idle alone can return before that run has begun (the app still reads
# notRunning from the run before), and the next click then lands during the run (qa15's test_a: the Engine knobs'
# "advanced" switch clicked while the expander's own rerun drew it, no boxes). The app's script-state attribute does
# not tell when a run has begun: a short run's "running" is often never drawn (seen: the switch's run drew its boxes
# with no change of the attribute at all). What does: the server's messages on the websocket. So: count the frames the
# page receives (``page`` counts them), act, wait for a frame, then for the frames to stop.
QUIET_S = 0.4  # no frame for this long after the run's first: the run has ended (a run sends its deltas in a burst)


def _count_frames(pg) -> None:
    pg.kv_frames = [0, 0.0]  # frames received, when the last came (time.monotonic)

    def got(_frame) -> None:
        pg.kv_frames[0] += 1
        pg.kv_frames[1] = time.monotonic()

    pg.on("websocket", lambda ws: ws.on("framereceived", got))


def rerun(page, act) -> None:
    """``act()`` (a click that reruns the script), then wait for that run's messages to come and stop, the app to
    read idle and the page to draw."""
    before = page.kv_frames[0]
    act()
    deadline = time.monotonic() + 90
    while page.kv_frames[0] == before:
        assert time.monotonic() < deadline, "no rerun came"
        page.wait_for_timeout(50)
    while time.monotonic() - page.kv_frames[1] < QUIET_S:
        page.wait_for_timeout(50)
    drawn(page)
