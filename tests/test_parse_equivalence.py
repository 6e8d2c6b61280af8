"""The parse speed-ups change no result: every preset, every config fixture and the synthetic
quantization lists of tests/parse_golden.py give the spec and weight bytes (or the refusal)
recorded in tests/fixtures/parse_golden.json, which was written with the code before the speed-ups
(commit 651cebe; how: tests/parse_golden.py's docstring)."""

import json
from pathlib import Path

import pytest

from kvplan import preset_names
from tests.parse_golden import cases, digest

GOLDEN = json.loads((Path(__file__).parent / "fixtures" / "parse_golden.json").read_text())
CASES = cases()


def test_golden_covers_every_preset_and_fixture():
    missing = sorted(set(CASES) - set(GOLDEN))
    assert not missing, f"not in parse_golden.json (regenerate: see tests/parse_golden.py): {missing}"
    assert {f"preset:{n}" for n in preset_names()} <= set(GOLDEN)
    assert len(GOLDEN) >= 107  # as written at 651cebe: 54 presets, 35 fixture cases, 18 synthetic


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_same_as_before(name):
    if name not in CASES:
        pytest.skip(f"{name}: its preset or fixture is gone")
    # the parse alone (spec and weight bytes, or its refusal): plans move whenever an engine rule is corrected,
    # and are held still by tests/test_picker_equivalence.py and the pinned logs instead
    keep = ("parse", "spec_sha256", "weight_bytes")
    got, want = digest(CASES[name], plans=False), GOLDEN[name]
    assert {k: got.get(k) for k in keep} == {k: want.get(k) for k in keep}
