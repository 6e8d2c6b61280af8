"""Shared by the benches and the browser load test: a real ``streamlit run`` on loopback, Debian's
Chromium through Playwright, in-page timing of reruns, and the summary statistics.

Nothing here is imported by the app. The server always binds 127.0.0.1 on a free port and is killed
(process group) when the ``server`` context exits, whatever happened.
"""

import contextlib
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROME = os.environ.get("CHROME_BIN", "/usr/bin/chromium")
CHROME_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage", "--disable-renderer-backgrounding",
               "--disable-background-timer-throttling", "--disable-backgrounding-occluded-windows"]
SERVER_FLAGS = ["--server.headless", "true", "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
                "--server.fileWatcherType", "none"]

# Records, in the page, every change of Streamlit's script state (running / notRunning) and the time of
# the last Enter key and click, on the page's own clock (performance.now(): 0 at navigation start).
TIMING_JS = """
(() => {
  const kv = window.__kv = {events: [], enter: null, click: null};
  document.addEventListener('keydown', e => { if (e.key === 'Enter') kv.enter = performance.now(); }, true);
  document.addEventListener('click', () => { kv.click = performance.now(); }, true);
  let last = null;
  const push = s => { if (s && s !== last) { last = s; kv.events.push([performance.now(), s]); } };
  const look = () => {  // the app element may be replaced: always read the current one
    const app = document.querySelector('[data-testid="stApp"]');
    push(app ? app.getAttribute('data-test-script-state') : null);
  };
  // Records carry the value before each change: a running -> notRunning pair that lands in one
  // batch is still seen as two transitions.
  new MutationObserver(records => {
    for (const r of records) {
      if (r.target.getAttribute('data-testid') !== 'stApp') continue;
      push(r.oldValue === last ? null : r.oldValue);
      if (r !== records[records.length - 1]) continue;
    }
    look();
  }).observe(document, {subtree: true, attributes: true, attributeOldValue: true,
                        attributeFilter: ['data-test-script-state']});
  setInterval(look, 50);
})();
"""
# The end of the first full script run that started after ``since`` (ms, page clock), or null.
RUN_END_JS = """
(since) => {
  const ev = window.__kv ? window.__kv.events : [];
  let started = false;
  for (const [t, s] of ev) {
    if (t < since) continue;
    if (s === 'running') started = true;
    else if (started && s === 'notRunning') return t;
  }
  return null;
}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(base: str, proc: subprocess.Popen | None = None, timeout: float = 60) -> float:
    """Seconds until GET /_stcore/health answers ok. Raises RuntimeError if the server dies or never answers."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with {proc.returncode}")
        try:
            if urllib.request.urlopen(f"{base}/_stcore/health", timeout=1).read() == b"ok":
                return time.perf_counter() - start
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"streamlit did not answer on {base} in {timeout:.0f} s")


@contextlib.contextmanager
def server(script: str | Path = "app.py", port: int | None = None, log: Path | None = None):
    """``streamlit run script`` on 127.0.0.1:free port; yields (base URL, Popen, start time). Always killed."""
    port = port or free_port()
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    out = open(log, "w") if log else subprocess.DEVNULL  # noqa: SIM115
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(script), "--server.port", str(port),
                             *SERVER_FLAGS], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        yield f"http://127.0.0.1:{port}", proc, start
    finally:
        stop(proc)
        if log:
            out.close()


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM the server's process group, SIGKILL after 10 s."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def stats(ms: list[float]) -> dict:
    """n, median, p95, max (ms, rounded to 0.1)."""
    if not ms:
        return {"n": 0, "median_ms": None, "p95_ms": None, "max_ms": None}
    s = sorted(ms)
    p95 = s[min(len(s) - 1, int(round(0.95 * (len(s) - 1))))]
    return {"n": len(s), "median_ms": round(statistics.median(s), 1), "p95_ms": round(p95, 1),
            "max_ms": round(s[-1], 1)}


def machine() -> dict:
    import platform

    return {"python": platform.python_version(), "cpus": os.cpu_count(), "machine": platform.machine()}
