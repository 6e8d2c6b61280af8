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


# The README's screenshot is docs/budget.png (README.md: "![The Budget page ...](docs/budget.png)"). A test
# names it as a path ("docs/budget.png", "docs" / "budget.png") or as the bare file name "budget.png";
# an artifact such as "qa15-unsized-moe-backend-budget.png" under the e2e artifacts folder is another file.
README_SHOT = r"""(docs/|['"])budget\.png"""


def test_no_test_writes_the_readme_screenshot():
    hits = subprocess.run(["git", "grep", "-l", "-E", README_SHOT, "--", "tests"], cwd=ROOT, capture_output=True,
                          text=True).stdout.split()
    assert hits in ([], ["tests/test_checkout_clean.py"]), hits


def test_the_screenshot_pattern_tells_the_readme_file_from_an_artifact():
    import re
    assert re.search(README_SHOT, 'page.screenshot(path="docs/budget.png")')
    assert re.search(README_SHOT, 'ROOT / "docs" / "budget.png"')
    assert not re.search(README_SHOT, 'ARTIFACTS / "qa15-unsized-moe-backend-budget.png"')
