"""The Validate page: renders, never runs on load, runs on the button and shows predicted == measured."""

from pathlib import Path

import pytest

pytest.importorskip("torch")
from streamlit.testing.v1 import AppTest  # noqa: E402

from kvplan.validate import measure  # noqa: E402
from tests.app_util import html_tables  # noqa: E402

PAGE = str(Path(__file__).resolve().parents[1] / "pages" / "validate.py")


def page(model: str = "gpt2") -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=30)
    at.query_params["m"] = model
    at.run()
    assert not at.exception
    return at


def widget(at: AppTest, label: str):
    return next(w for w in at.number_input if w.label.startswith(label))


def test_renders_without_running():
    at = page()
    assert at.title[0].value == "Validate"
    # the model is the sidebar's, from the link (?m=): no selector of its own
    assert any("gpt2" in c.value and "sidebar" in c.value for c in at.caption)
    assert not any(s.label == "Model" for s in at.selectbox)
    assert at.button[0].label == "Run"
    assert not html_tables(at) and "validate_result" not in at.session_state  # nothing ran on load


def test_unknown_model_falls_back_to_the_default_model():
    at = page("no-such-model")
    assert any("llama\\-3\\.1\\-8b" in c.value for c in at.caption)  # PlanState's default model, escaped


def test_run_shows_the_table_with_equal_weight_bytes():
    at = page()
    widget(at, "Prompt tokens").set_value(16)
    widget(at, "Decode steps").set_value(2)
    widget(at, "Layers").set_value(1)  # a reduced copy: 1 of gpt2's 12 layers
    at.button[0].click().run()
    assert not at.exception and not at.error
    table = html_tables(at)[0]  # the app's HTML table (every column on screen), headings with their units
    weights = next(r for r in table if r["quantity"] == "weight bytes")
    assert weights["predicted (plan)"] == weights["measured (this run)"] and weights["check"] == "equal"
    assert not [r for r in table if r["check"] in ("DIFFERS", "FAIL")]
    assert any("extrapolated" in w.value for w in at.warning)  # the reduced copy is labelled
    assert any("GPU timings are not available" in i.value for i in at.info)
    assert at.session_state["validate_result"]["ok"]


def test_a_second_user_sees_busy():
    at = page()
    assert measure._LOCK.acquire(blocking=False)
    try:
        at.button[0].click().run()
    finally:
        measure._LOCK.release()
    assert not at.exception
    assert any("busy" in w.value for w in at.warning) and not html_tables(at)


def test_renders_inside_the_app():
    at = AppTest.from_file(str(Path(PAGE).parents[1] / "app.py"), default_timeout=30)
    at.run()
    at.switch_page("pages/validate.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Validate" and any(b.label == "Run" for b in at.button) and not html_tables(at)


def test_local_checkpoint_from_the_operators_directory(tmp_path, monkeypatch):
    transformers = pytest.importorskip("transformers")
    import torch

    cfg = transformers.AutoConfig.for_model("llama", vocab_size=256, hidden_size=64, intermediate_size=128,
                                            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(cfg).save_pretrained(tmp_path / "tiny-llama")
    (tmp_path / "not-a-model").mkdir()
    monkeypatch.setenv("KVPLAN_LOCAL_MODELS", str(tmp_path))
    at = page()
    at.radio[0].set_value("local").run()
    assert at.selectbox[0].options == ["tiny-llama"]
    widget(at, "Prompt tokens").set_value(12)
    widget(at, "Decode steps").set_value(3)
    at.button[0].click().run()
    assert not at.exception and not at.error
    weights = next(r for r in html_tables(at)[0] if r["quantity"] == "weight bytes")
    assert weights["predicted (plan)"] == weights["measured (this run)"]
    assert at.session_state["validate_result"]["source"] == "transformers"
    assert at.session_state["validate_result"]["ok"]


def test_figure_and_tables_from_a_result():
    import kvplan
    from kvplan.web import validate_view

    spec = kvplan.parse_config(dict(model_type="llama", hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                    num_attention_heads=4, num_key_value_heads=2, vocab_size=256))
    r = measure.run_validation(spec, tokens=8, steps=3, batch=2, block_size=4)
    fig = validate_view.memory_timeline_figure(r)
    allocated = next(t for t in fig.data if t.name == "allocated")
    assert list(allocated.x) == [p["label"] for p in r["timeline"]]
    assert list(allocated.x)[:4] == ["start", "weights", "static cache allocated", "prefill"]
    weights_mib = r["measured"]["weight_bytes"] / 2**20
    assert allocated.y[1] == pytest.approx(weights_mib) and max(allocated.y) >= weights_mib
    assert any(t.name == "peak during step" for t in fig.data)
    table = validate_view.table_rows(r)  # the rows the page draws
    assert {row["check"] for row in table if row["quantity"].startswith(("weight", "KV", "paged"))} == {"equal"}
    steps = validate_view.steps_rows(r)
    assert len(steps) == 2 * (1 + 3) and all(s["equal"] == "equal" for s in steps)
