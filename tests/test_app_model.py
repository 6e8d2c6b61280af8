"""Model page: presets, pasted / uploaded / Hub configs, and every number it shows is kvplan's."""

import json

import pytest

from kvplan.kv import kv_bytes_per_token
from kvplan.params import count_params
from kvplan.presets import load_preset, preset_config
from kvplan.web.state import PlanState
from tests.app_util import html_tables, plain, run_app, state
from tests.hub_server import CONFIGS, closed_port_endpoint, serve

PAGE = "pages/model.py"


def table(at, i: int) -> dict[str, str]:
    """The i-th table under the model (0: what the config says, 1: what kvplan derives); the Presets
    tab's catalog comes first on the page."""
    rows = html_tables(at)[1 + i]
    return {list(r.values())[0]: list(r.values())[1] for r in rows}


def test_default_preset_spec_and_numbers():
    at = run_app(page=PAGE)
    spec = load_preset("llama-3.1-8b")
    p = count_params(spec)
    spec_table, derived = table(at, 0), table(at, 1)
    assert spec_table["num_key_value_heads"].startswith("8 (GQA")
    assert spec_table["layer kinds"] == "32 full_attention"
    assert derived["total parameters"] == f"{p.total_params:,}"
    assert derived["KV cache per token (auto)"].startswith(f"{kv_bytes_per_token(spec):,} B")
    assert plain(at.subheader[0].value) == "llama-3.1-8b"


def test_kv_dtype_widget_moves_the_per_token_number():
    at = run_app(page=PAGE)
    at.selectbox(key="w.kv_cache_dtype").select("fp8").run()
    per_token = kv_bytes_per_token(load_preset("llama-3.1-8b"), "fp8")
    assert table(at, 1)["KV cache per token (fp8)"].startswith(f"{per_token:,} B")


def test_preset_picker_changes_the_model():
    at = run_app(page=PAGE)
    at.selectbox(key="w.model").select("deepseek-v3").run()
    spec_table = table(at, 0)
    assert spec_table["MLA latent (kv_lora_rank + qk_rope_head_dim)"] == "512 + 64 = 576"
    assert spec_table["MoE experts (routed, per token)"] == "256, top-8"
    assert at.query_params["m"] == "deepseek-v3"


def test_pasted_config_becomes_the_model():
    cfg = dict(preset_config("gemma-2-9b"), _name_or_path="me/my-gemma")
    at = run_app(page=PAGE)
    at.text_area(key="model.paste").set_value(json.dumps(cfg)).run()
    at.button(key="model.use_paste").click().run()
    assert plain(at.subheader[0].value) == "me/my-gemma"
    assert table(at, 0)["sliding window / chunk"] == "4,096"
    assert table(at, 1)["total parameters"] == f"{count_params(load_preset('gemma-2-9b')).total_params:,}"
    assert "cfg" in at.query_params and "m" not in at.query_params
    at.selectbox(key="w.model").select("qwen3-8b").run()  # back to a preset drops the config
    assert "cfg" not in at.query_params and at.query_params["m"] == "qwen3-8b"


@pytest.mark.parametrize("text, field", [("{not json", "config"), ('{"model_type": "llama"}', "hidden_size")])
def test_bad_paste_is_an_error_and_changes_nothing(text, field):
    at = run_app(page=PAGE)
    at.text_area(key="model.paste").set_value(text).run()
    at.button(key="model.use_paste").click().run()
    assert not at.exception
    assert any(field.replace("_", "\\_") in e.value for e in at.error)
    assert state(at) == PlanState()


def test_uploaded_config_becomes_the_model():
    at = run_app(page=PAGE)
    body = json.dumps(dict(preset_config("mixtral-8x7b"), _name_or_path="up/mixtral")).encode()
    at.file_uploader(key="model.upload").set_value(("config.json", body, "application/json")).run()
    assert plain(at.subheader[0].value) == "up/mixtral"
    assert table(at, 0)["MoE experts (routed, per token)"] == "8, top-2"


def test_hub_fetch_from_a_local_endpoint(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with serve() as url:
        monkeypatch.setenv("HF_ENDPOINT", url)
        at = run_app(page=PAGE)
        at.text_input(key="model.hub").set_value("acme/tiny-llama").run()
        at.button(key="model.fetch").click().run()
    assert not at.exception
    assert plain(at.subheader[0].value) == "acme/tiny-llama"
    assert state(at).model_name == "acme/tiny-llama"
    p = count_params(load_preset("llama-3.2-1b"))
    assert table(at, 1)["total parameters"] == f"{p.total_params:,}"
    # the link carries the fetched config: reopening it needs no Hub
    again = run_app(dict(at.query_params), PAGE)
    assert plain(again.subheader[0].value) == "acme/tiny-llama" and state(again) == state(at)
    assert CONFIGS["acme/tiny-llama"]["_name_or_path"] == "acme/tiny-llama"


def test_hub_offline_says_so_and_offers_paste(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", closed_port_endpoint())
    at = run_app(page=PAGE)
    at.text_input(key="model.hub").set_value("acme/tiny-llama").run()
    at.button(key="model.fetch").click().run()
    assert not at.exception
    assert any("Offline" in w.value and "Paste" in w.value for w in at.warning)
    assert state(at) == PlanState()
