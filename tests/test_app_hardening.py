"""The app under hostile input: text from configs, links and commands is shown escaped, never as HTML,
Markdown or LaTeX; links that would be too long say so; uploads and local checkpoints are bounded.
"""

import json
import random
import re
import string
import tomllib
from pathlib import Path

import pytest
from google.protobuf.descriptor import FieldDescriptor
from streamlit.testing.v1 import AppTest

from kvplan.hf_config import MAX_CONFIG_BYTES
from kvplan.presets import preset_config, preset_names
from kvplan.web import views, widgets
from kvplan.web.state import MAX_LINK_QUERY, decode, encode, encode_config, link_params, query_length
from tests.app_util import APP, PAGES, open_share, run_app, state, warnings

ROOT = Path(APP).parent
EVIL = "<script>alert(1)</script> **bold** [link](javascript:alert(1)) $$\\latex$$ <img src=x onerror=alert(2)> # h"
# What must never reach a Markdown/HTML renderer unescaped.
MARKERS = ("<script", "<img", "**bold**", "[link](", "javascript:alert", "$$\\latex", "](javascript")
HOSTILE_CONFIG = dict(preset_config("llama-3.2-1b"), _name_or_path=EVIL, model_type=EVIL, architectures=[EVIL])
HOSTILE_COMMAND = (f"vllm serve '{EVIL}' --**bold**=1 '--[link](javascript:alert(1))' x "
                   f"--quantization '<img src=x onerror=alert(3)>' --port '$$\\latex$$'")
# Proto fields Streamlit renders as Markdown (bodies, labels, help tooltips, captions).
MARKDOWN_FIELDS = {"body", "label", "help", "caption", "title", "text"}
ALL_PAGES = (*PAGES, "pages/validate.py")


def _walk(node):
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _walk(child)


def _strings(message, path=""):
    for field, value in message.ListFields():
        values = value if field.is_repeated else [value]
        for v in values:
            if field.type == FieldDescriptor.TYPE_MESSAGE:
                yield from _strings(v, f"{path}.{field.name}")
            elif field.type == FieldDescriptor.TYPE_STRING:
                yield f"{path}.{field.name}", field.name, v
            elif field.name in ("allow_html", "unsafe_allow_html") and v:
                yield f"{path}.{field.name}", "allow_html", "TRUE"


def rendered(at: AppTest) -> list[tuple[str, str, str]]:
    """(element type, proto field, text) for every string the page renders as Markdown; plotly specs too."""
    out = []
    for node in _walk(at._tree):
        proto = getattr(node, "proto", None)
        if proto is None or not hasattr(proto, "ListFields"):
            continue
        kind = getattr(node, "type", type(node).__name__)
        if kind == "html":
            continue
        for where, name, text in _strings(proto):
            if name in MARKDOWN_FIELDS or name == "allow_html" or (kind == "plotly_chart" and name == "spec"):
                out.append((kind, where, text))
    return out


# The only HTML the app writes: its tables (kvplan.web.views.html_table) and its stylesheet.
HTML_TAGS = {"div", "table", "caption", "thead", "tbody", "tr", "th", "td", "style"}
HTML_ATTRS = {"class", "title", "scope", "style"}


def assert_safe_html(body: str) -> None:
    """An st.html body holds only the table tags and attributes, every text escaped (no tag from a config)."""
    from html.parser import HTMLParser

    class Check(HTMLParser):
        def handle_starttag(self, tag, attrs):
            assert tag in HTML_TAGS, (tag, body[:300])
            for name, value in attrs:
                assert name in HTML_ATTRS, (tag, name, body[:300])
                assert "javascript:" not in (value or "") or name == "title", (tag, name, value)

    Check().feed(body)


def assert_safe(at: AppTest) -> list[str]:
    """No exception, no raw HTML but the app's escaped tables, no Markdown/HTML flag, no unescaped marker.
    Returns the texts."""
    assert not at.exception, [e.value for e in at.exception]
    for el in at.get("html"):
        assert_safe_html(el.proto.body)
    texts = rendered(at)
    assert texts
    for kind, where, text in texts:
        assert where.split(".")[-1] != "allow_html", (kind, where)
        live = re.sub(r"\\.", "\x00", text)  # what Markdown would act on: every backslash-escaped pair is inert
        for marker in MARKERS:
            assert marker not in live, (kind, where, marker, text[:300])
    return [t for _, _, t in texts]


def shows_escaped(texts: list[str]) -> bool:
    return any(views.esc("<script>alert(1)</script>") in t for t in texts)


# ----------------------------------------------------------------------------- escaping

def test_a_pasted_hostile_config_is_shown_escaped_on_every_page():
    at = run_app(page="pages/model.py")
    at.text_area(key="model.paste").set_value(json.dumps(HOSTILE_CONFIG)).run()
    at.button(key="model.use_paste").click().run()
    assert state(at).config is not None, [e.value for e in at.error]
    texts = assert_safe(at)
    assert shows_escaped(texts)  # the name is shown (subheader), escaped
    assert any("planned as a generic Llama\\-style decoder" in t for t in texts)  # the generic-basis warning, escaped
    for page in ALL_PAGES:
        at.switch_page(page).run()
        assert_safe(at)


def test_a_hostile_link_is_shown_escaped_on_every_page():
    params = {"v": "1", "cfg": encode_config(HOSTILE_CONFIG), "mn": EVIL, "tp": "**bold**", EVIL[:30]: "1",
              "cmd": HOSTILE_COMMAND, "m": "[link](javascript:alert(1))", "pr": "<script>:1"}
    for page in ALL_PAGES:
        at = run_app(params, page)
        texts = assert_safe(at)
        assert shows_escaped(texts), page  # the config's name, the refused parameters' values
        if page == "pages/import.py":  # the command's model, unknown flags and notes: escaped
            assert any(views.esc("**bold**") in t for t in texts)
            assert any(b.label.startswith("Fetch ") for b in at.button)
    s = decode(params)[0]
    assert s.model_name is None and s.tensor_parallel_size == 1 and s.config is not None


def test_a_hostile_config_from_an_upload_and_a_plan_file_is_escaped():
    at = run_app(page="pages/model.py")
    at.file_uploader(key="model.upload").set_value(
        ("config.json", json.dumps(HOSTILE_CONFIG).encode(), "application/json")).run()
    assert state(at).config is not None
    assert shows_escaped(assert_safe(at))
    doc = {"kvplan_plan": 1, "inputs": {"config": HOSTILE_CONFIG, "model_name": EVIL, EVIL: 1, "command": EVIL}}
    open_share(at)
    at.file_uploader(key="kv.upload").set_value(("plan.json", json.dumps(doc).encode(), "application/json")).run()
    assert shows_escaped(assert_safe(at))


def test_views_esc_neutralises_every_control_character():
    out = views.esc(EVIL)
    for marker in MARKERS:
        assert marker not in re.sub(r"\\.", "\x00", out)
    assert re.sub(r"\\(.)", r"\1", out) == EVIL


# ----------------------------------------------------------------------------- bad input keeps the app up

@pytest.mark.parametrize("text", ['{"hidden_size": ' + "9" * 5000 + "}", "[" * 100_000, "\x00\x1b[31m", '{"a": NaN}',
                                  "x" * (MAX_CONFIG_BYTES + 1), json.dumps({**preset_config("qwen3-0.6b"),
                                                                            "num_hidden_layers": 10**9})])
def test_a_broken_paste_is_a_message_and_the_app_keeps_working(text):
    at = run_app(page="pages/model.py")
    at.text_area(key="model.paste").set_value(text).run()
    at.button(key="model.use_paste").click().run()
    assert not at.exception and at.error and state(at).config is None
    at.number_input(key="w.tensor_parallel_size").set_value(2).run()  # the rest still works
    assert not at.exception and state(at).tensor_parallel_size == 2


def test_a_plan_file_with_a_huge_number_is_refused_with_a_message():
    at = run_app()
    body = b'{"kvplan_plan": 1, "inputs": {"tensor_parallel_size": ' + b"9" * 5000 + b"}}"
    open_share(at)
    at.file_uploader(key="kv.upload").set_value(("plan.json", body, "application/json")).run()
    assert not at.exception and any("not JSON" in w for w in warnings(at))


# ----------------------------------------------------------------------------- links too long for a link

def _big_config(chars: int) -> dict:
    rng = random.Random(0)  # incompressible text, so the compressed config stays long
    return dict(preset_config("qwen3-0.6b"), _name_or_path="me/big",
                notes="".join(rng.choice(string.ascii_letters) for _ in range(chars)))


def test_link_params_cut_the_long_fields_and_say_so():
    s = decode({})[0].model_copy(update={"config": encode_config(_big_config(12_000)), "model_name": "me/big",
                                         "tensor_parallel_size": 2})
    params, cut = link_params(s)
    assert cut == ["cfg"] and "cfg" not in params and "mn" not in params and params["cut"] == "cfg"
    assert params["tp"] == "2" and query_length(params) <= MAX_LINK_QUERY
    opened, notes = decode(params)
    assert opened.config is None and opened.tensor_parallel_size == 2
    assert len(notes) == 1 and "too long" in notes[0] and "config" in notes[0] and "plan JSON" in notes[0]
    small = s.model_copy(update={"config": encode_config(preset_config("qwen3-0.6b"))})
    assert link_params(small) == (encode(small), [])  # a normal link is written whole
    long_cmd = s.model_copy(update={"config": None, "model_name": None, "command": "vllm serve x " + "-x 1 " * 3000,
                                    "lengths": tuple(range(1000, 4000))})
    params, cut = link_params(long_cmd)
    assert cut == ["cmd", "pl"] and query_length(params) <= MAX_LINK_QUERY


def test_a_config_too_large_for_a_link_keeps_the_plan_and_points_to_the_json():
    at = run_app(page="pages/model.py")
    at.text_area(key="model.paste").set_value(json.dumps(_big_config(12_000))).run()
    at.button(key="model.use_paste").click().run()
    assert not at.exception and state(at).config is not None and state(at).model_name is None
    assert "cfg" not in at.query_params and at.query_params["cut"] == "cfg"
    assert sum(len(k) + len(v) for k, v in at.query_params.items()) < MAX_LINK_QUERY
    note = [w.value for w in at.sidebar.warning if "Plan JSON" in w.value]
    assert note and "characters" in note[0] and "config" in note[0]
    assert at.sidebar.code and at.get("download_button")  # the share box opens itself when the link is cut
    assert "me/big" in at.subheader[0].value.replace("\\", "")
    doc = json.loads(widgets.plan_json(state(at)))  # the download carries everything
    assert doc["inputs"]["config"]["notes"] == _big_config(12_000)["notes"]
    at.number_input(key="w.tensor_parallel_size").set_value(2).run()  # the session keeps the config
    assert state(at).config is not None and state(at).tensor_parallel_size == 2 and at.query_params["tp"] == "2"
    at.switch_page("pages/budget.py").run()
    assert not at.exception and state(at).config is not None


# ----------------------------------------------------------------------------- upload limits

def test_upload_limits_match_the_parser():
    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert cfg["server"]["maxUploadSize"] == widgets.MAX_PLAN_UPLOAD_MB == 2 * widgets.MAX_UPLOAD_MB == 32
    assert MAX_CONFIG_BYTES == widgets.MAX_UPLOAD_MB * 2**20 == widgets.MAX_PLAN_FILE_BYTES // 2 == 16 * 2**20
    assert MAX_CONFIG_BYTES / 1e6 < cfg["server"]["maxMessageSize"] <= 32  # a 16 MiB paste fits one message
    at = open_share(run_app(page="pages/model.py"))
    assert {u.key: u.proto.max_upload_size_mb for u in at.get("file_uploader")} == {"model.upload": 16, "kv.upload": 32}


def test_an_oversized_upload_is_refused_with_a_message():
    at = run_app(page="pages/model.py")
    at.file_uploader(key="model.upload").set_value(
        ("config.json", b"{" + b" " * MAX_CONFIG_BYTES + b"}", "application/json")).run()
    assert not at.exception and any("too large" in e.value for e in at.error)
    body = b'{"inputs": {}, "pad": "' + b"x" * widgets.MAX_PLAN_FILE_BYTES + b'"}'
    open_share(at)
    at.file_uploader(key="kv.upload").set_value(("plan.json", body, "application/json")).run()
    assert not at.exception and any("larger than" in w for w in warnings(at))


# ----------------------------------------------------------------------------- the Validate page's local listing

def test_query_params_cannot_steer_the_local_checkpoint_listing(tmp_path, monkeypatch):
    root = tmp_path / "models"
    (root / "tiny").mkdir(parents=True)
    (root / "tiny" / "config.json").write_text("{}")
    (root / "tiny" / "model.safetensors").write_bytes(b"")
    (root / "pickled").mkdir()
    (root / "pickled" / "config.json").write_text("{}")
    (root / "pickled" / "pytorch_model.bin").write_bytes(b"")  # a pickle: never listed
    outside = tmp_path / "outside"
    (outside / "secret").mkdir(parents=True)
    (outside / "secret" / "config.json").write_text("{}")
    (outside / "secret" / "model.safetensors").write_bytes(b"")
    (root / "escape").symlink_to(outside / "secret", target_is_directory=True)  # a link out of the root: skipped
    hostile = {"m": "../outside/secret", "root": str(outside), "KVPLAN_LOCAL_MODELS": str(outside),
               "source": "local", "path": str(outside / "secret"), "model": "/etc/passwd"}

    monkeypatch.delenv("KVPLAN_LOCAL_MODELS", raising=False)
    at = run_app(hostile, "pages/validate.py")
    assert not at.main.radio and not [s for s in at.main.selectbox if s.label in ("Model", "Checkpoint")]
    assert state(at).model in preset_names() and state(at).config is None  # the sidebar's preset: no path

    monkeypatch.setenv("KVPLAN_LOCAL_MODELS", str(root))
    at = run_app(hostile, "pages/validate.py")
    at.main.radio[0].set_value("local").run()
    assert not at.exception and at.main.selectbox[0].options == ["tiny"]


# ----------------------------------------------------------------------------- links that ask for huge work

def test_a_link_asking_for_a_huge_block_map_is_answered_quickly():
    import time

    start = time.perf_counter()
    at = run_app({"v": "1", "pl": "100000000,100000000,99999999", "bs": "1", "pfx": "50000000"}, "pages/paging.py")
    assert time.perf_counter() - start < 15  # was: 3 x 10^8 bars built in the server (gigabytes, minutes)
    assert not at.exception and state(at).lengths == (100_000_000, 100_000_000, 99_999_999)
    assert any("No block map" in c.value for c in at.caption)
    assert any(m.label == "Blocks allocated" for m in at.metric)
    at.selectbox(key="w.block_size").select(16).run()  # the rest of the page still works
    assert not at.exception and any("No block map" in c.value for c in at.caption)
    small = run_app({"v": "1", "pl": "5,3,8", "bs": "4"}, "pages/paging.py")
    assert not any("No block map" in c.value for c in small.caption) and len(small.get("plotly_chart")) == 3


def test_links_asking_for_thousands_of_pipeline_stages_are_refused():
    from kvplan.web.state import MAX_PIPELINE

    state_, notes = decode({"v": "1", "pp": "4096", "lay": "1x4096x1,2x1x1", "tp": "4096", "dp": "4096"})
    assert state_.pipeline_parallel_size == 1 and state_.tensor_parallel_size == 4096
    assert state_.data_parallel_size == 4096 and state_.layouts == decode({})[0].layouts
    assert len(notes) == 2 and all(f"up to {MAX_PIPELINE}" in n or f"{MAX_PIPELINE:,}" in n for n in notes)
    at = run_app({"v": "1", "pp": str(MAX_PIPELINE + 1)})
    assert not at.exception and any("'pp'" in w for w in warnings(at))
    # typed into the box: refused with its range, the plan keeps the last valid PP
    at.number_input(key="w.pipeline_parallel_size").set_value(MAX_PIPELINE + 1).run()
    assert not at.exception and state(at).pipeline_parallel_size == 1
    assert any(f"must be from 1 to {MAX_PIPELINE}" in e.value for e in at.error)


@pytest.mark.parametrize("flags", ["--kv-cache-memory-bytes 2000T", "--max-model-len 500000000",
                                   "--max-num-seqs 5000000", "-tp 9999"])
def test_imported_flags_the_app_cannot_carry_are_an_error_not_a_crash(flags):
    at = run_app({"v": "1", "cmd": f"vllm serve meta-llama/Llama-3.1-8B {flags}"}, "pages/import.py")
    assert not at.exception and at.error
    before = state(at)
    at.selectbox(key="w.import_gpu").select("H100-SXM").run()
    at.button(key="import.apply").click().run()  # refused with the reason, no crash, nothing applied
    assert not at.exception and any("Not applied" in e.value for e in at.error)
    assert state(at).model_copy(update={"import_gpu": None}) == before
