"""Many users at once (short version of ``bench/load.py``): a fresh ``streamlit run app.py`` on
loopback, 20 protocol users (websocket clients speaking Streamlit's protocol) and 2 Chromium tabs at
the same time, for ~20 s: shared links, widget changes, page changes. Zero errors allowed: no
exception element, no failed run, no wrong numbers (each user's Budget numbers are its own plan's),
no console error, failed request or HTTP error in the browsers. Reports the latencies.

The server is started cold on purpose: the first imports happen while all users arrive at once (see
kvplan/web/__init__.py for the bug that exposed). It stops by itself and the server is killed.
"""

import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e
pytest.importorskip("websockets")
CHROME = os.environ.get("CHROME_BIN", "/usr/bin/chromium")


def test_twenty_users_at_once_no_errors(capsys):
    if not Path(CHROME).exists():
        pytest.skip(f"no Chromium at {CHROME} (apt-get install -y chromium)")
    from bench.common import server, wait_healthy
    from bench.load import run, table

    with server() as (base, proc, _):
        wait_healthy(base, proc)
        result = run(base, sessions=20, browsers=2, duration_s=float(os.environ.get("KVPLAN_LOAD_SECONDS", "18")),
                     max_steps=40, timeout_ms=30_000, warm=False)
    assert proc.poll() is not None  # the server is gone
    with capsys.disabled():
        print("\n" + table(result))
    assert result["errors"] == [], "\n".join(result["errors"][:20])
    assert result["protocol"]["rerun"]["n"] >= 20 and result["protocol"]["page"]["n"] >= 20
    assert result["browser"]["open"]["n"] >= 2 and result["browser"]["reruns"]["n"] >= 1
