"""The suite leaves the checkout as it found it: tests/conftest.py compares `git status --porcelain` before
and after the session and fails the run on any difference. Here: that check sees a change, and no test
writes the README screenshot."""

import subprocess
from pathlib import Path

import pytest

from tests import conftest

ROOT = Path(__file__).resolve().parents[1]


def test_the_git_status_check_sees_a_new_file(tmp_path):
    before = conftest._git_status()
    if before is None:
        pytest.skip("not a git checkout")
    probe = ROOT / "tests" / f".probe-{tmp_path.name}.txt"  # not ignored: git status shows it
    probe.write_text("x")
    try:
        after = conftest._git_status()
    finally:
        probe.unlink()
    assert after - before == {f"?? tests/{probe.name}"}
    assert conftest._git_status() == before


def test_no_test_writes_the_readme_screenshot():
    hits = subprocess.run(["git", "grep", "-l", "budget.png", "--", "tests"], cwd=ROOT, capture_output=True,
                          text=True).stdout.split()
    assert hits in ([], ["tests/test_checkout_clean.py"]), hits
