"""DeepSeek-V4-Flash and -Pro as presets: the fixture configs verbatim, their provenance copied, listed in
the catalog with their exact sizes, and a default sidebar plan (16-bit KV, which vLLM's DSV4 attention
refuses) that is planned and says so instead of failing."""

import json
from pathlib import Path

import pytest

from kvplan.params import count_params
from kvplan.presets import PRESET_DIR, load_preset, manifest
from kvplan.web import cached
from tests.app_util import plain, run_app, state, warnings

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "configs"
DSV4 = ("deepseek-v4-flash", "deepseek-v4-pro")


@pytest.mark.parametrize("name", DSV4)
def test_preset_is_the_fixture_verbatim_with_its_provenance(name):
    entry = next(e for e in manifest() if e["name"] == name)
    assert (PRESET_DIR / entry["file"]).read_bytes() == (FIXTURES / f"{name}.json").read_bytes()
    source = next(e for e in json.loads((FIXTURES / "SOURCES.json").read_text()) if e["name"] == name)
    keys = ("file", "hf_repo", "family", "released", "source", "provenance")
    assert {k: entry[k] for k in keys} == {k: source[k] for k in keys}
    assert entry["released"] == "2026-04" and entry["family"] == "deepseek_v4"
    assert entry["source"].endswith("@095f58a51c4ca8e61b66ec108d86f223f8d559ce")  # aiconfigurator commit


def test_catalog_lists_both_with_exact_sizes():
    # totals / actives: kvplan's count, equal to transformers' own (tests/test_oracle_transformers.py runs
    # every preset): Flash 284,332,230,231 / 13,799,622,231; Pro 1,572,997,179,491 / 49,779,058,787
    by = {r["name"]: r for r in cached.preset_catalog()}
    flash, pro = by["deepseek-v4-flash"], by["deepseek-v4-pro"]
    assert (flash["total"], flash["active"]) == (284_332_230_231, 13_799_622_231)
    assert (pro["total"], pro["active"]) == (1_572_997_179_491, 49_779_058_787)
    assert flash["size"] == "284.3B total / 13.8B active" and pro["size"] == "1,573.0B total / 49.8B active"
    assert flash["family"] == pro["family"] == "DeepSeek" and flash["released"] == "2026-04"
    assert cached.preset_label("deepseek-v4-flash") == "deepseek-v4-flash · DeepSeek · 284.3B total / 13.8B active · 2026-04"
    assert count_params(load_preset("deepseek-ai/DeepSeek-V4-Pro")).total_params == 1_572_997_179_491  # by Hub id too


def test_default_sidebar_plan_of_the_preset_is_fp8_and_16_bit_is_named():
    # The sidebar's default KV dtype is auto: vLLM 0.30+ (the default profile is newer) takes it as fp8 for DSV4
    # (_resolve_dsv4_kv_cache_dtype), so the plan is fp8 and says nothing of it; asking for bfloat16 is planned (the
    # FlashInfer DSV4 plain-row layout) with the warning that the default attention refuses it; 0.29 asserts fp8.
    at = run_app({"m": "deepseek-v4-flash", "g": "B200", "tp": "8"})
    assert state(at).model == "deepseek-v4-flash" and not at.exception
    assert not any("fp8_ds_mla" in plain(w) for w in warnings(at))
    assert [plain(s.value) for s in at.success][0].startswith("Fits: ")
    at = run_app({"m": "deepseek-v4-flash", "g": "B200", "tp": "8", "kvd": "bf16"})
    assert not at.exception and any("refuses a 16-bit cache" in plain(w) for w in warnings(at))
    at = run_app({"m": "deepseek-v4-flash", "g": "B200", "tp": "8", "vv": "0.29"})
    assert not at.exception and any("asserts an fp8 KV cache" in plain(w) for w in warnings(at))
