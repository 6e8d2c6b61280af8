import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests never touch the network
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# huggingface_hub's cache (kvplan.web.hub): a fresh folder per session, never the user's ~/.cache
# (removed again when the session ends: 96 empty folders had piled up in /tmp over a day of runs)
_HF_CACHE = None if "HF_HUB_CACHE" in os.environ else __import__("tempfile").mkdtemp(prefix="kvplan-test-hf-cache-")
if _HF_CACHE:
    os.environ["HF_HUB_CACHE"] = _HF_CACHE


# ----------------------------------------------------------------------------- the suite leaves the checkout clean
# Tests never modify tracked files nor leave new ones (the README screenshot is made by docs/make_screenshot.py,
# not by a test). `git status --porcelain` is read before and after the session; any difference fails the run.
import subprocess  # noqa: E402
from pathlib import Path  # noqa: E402

_ROOT = Path(__file__).resolve().parents[1]


def _git_status() -> set[str] | None:
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=_ROOT,
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return set(out.stdout.splitlines()) if out.returncode == 0 else None


def pytest_sessionstart(session):
    session.config._kvplan_git_before = _git_status()


def pytest_sessionfinish(session, exitstatus):
    if _HF_CACHE:
        __import__("shutil").rmtree(_HF_CACHE, ignore_errors=True)
    before = getattr(session.config, "_kvplan_git_before", None)
    after = _git_status()
    if before is None or after is None or before == after:
        return
    changed = sorted((after - before) | {f"(no longer) {line}" for line in before - after})
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    text = "the test session changed the checkout (git status --porcelain):\n  " + "\n  ".join(changed[:30])
    if reporter is not None:
        reporter.write_line("FAILED " + text, red=True)
    session.exitstatus = 1
