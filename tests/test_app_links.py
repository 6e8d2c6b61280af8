"""Shareable links: params in -> identical plan on every page; plan -> params out -> same plan;
tampered links warn instead of failing; the plan survives page changes; plan JSON restores it."""

import json
import urllib.parse
from pathlib import Path

import pytest

from kvplan.presets import preset_config
from kvplan.web.state import PlanState, decode, encode, encode_config
from tests.app_util import LINK_70B, PAGES, metrics, open_share, plain, run_app, state, warnings

CUSTOM = dict(preset_config("qwen3-8b"), num_hidden_layers=20, _name_or_path="acme/qwen-20l")


@pytest.mark.parametrize("page", PAGES)
def test_link_in_gives_the_same_state_on_every_page(page):
    at = run_app(LINK_70B, page)
    assert state(at) == decode(LINK_70B)[0]
    assert dict(at.query_params) == LINK_70B
    assert warnings(at) == []


@pytest.mark.parametrize("page", PAGES)
def test_tampered_link_warns_naming_the_parameter(page):
    bad = {"v": "1", "tp": "-4", "g": "H999", "gmu": "7", "cfg": "not-a-config", "pl": "1,two", "zz": "1"}
    at = run_app(bad, page)
    text = " ".join(warnings(at))
    for key in ("'tp'", "'g'", "'gmu'", "'cfg'", "'pl'", "'zz'"):
        assert key in text
    assert state(at) == PlanState()
    assert dict(at.query_params) == {}  # the bad values are dropped from the link


def test_stale_link_version_warns_and_reads_what_it_knows():
    at = run_app({"v": "0", "m": "qwen3-8b"})
    assert state(at).model == "qwen3-8b"
    assert any("'v'" in w for w in warnings(at))


def test_round_trip_with_a_pasted_config():
    at = run_app(page="pages/model.py")
    at.text_area(key="model.paste").set_value(json.dumps(CUSTOM))
    at.button(key="model.use_paste").click().run()
    at.switch_page("pages/budget.py").run()
    at.number_input(key="w.tensor_parallel_size").set_value(2).run()
    at.number_input(key="w.concurrency").set_value(12).run()
    params = dict(at.query_params)
    assert "cfg" in params and params["tp"] == "2" and params["conc"] == "12"
    shown = metrics(at)

    again = run_app(params)
    assert state(again) == state(at)
    assert metrics(again) == shown
    assert state(again).config == encode_config(CUSTOM)
    assert encode(state(again)) == params


def test_moving_between_pages_keeps_the_plan_and_the_links_carry_it():
    at = run_app(LINK_70B)
    at.number_input(key="w.tensor_parallel_size").set_value(8).run()
    for page in PAGES[1:]:
        at.switch_page(page).run()
        assert not at.exception
        assert state(at).tensor_parallel_size == 8
        assert at.number_input(key="w.tensor_parallel_size").value == 8
    links = at.sidebar.get("page_link")
    assert len(links) >= len(PAGES)
    assert {el.proto.query_string for el in links} == {"v=1&m=llama-3.1-70b&tp=8&kvd=fp8&len=32768&conc=16"}


def test_share_box_shows_the_link():
    at = run_app(LINK_70B)
    assert not at.sidebar.code  # the share box is built when it is opened
    open_share(at)
    code = [c.value for c in at.sidebar.code]
    assert any("m=llama-3.1-70b" in c and "tp=4" in c for c in code)


def test_plan_json_round_trip_restores_the_plan():
    from kvplan.web.state import from_document, to_document

    s = decode(LINK_70B)[0].model_copy(update={"config": encode_config(CUSTOM), "model_name": "acme/qwen-20l"})
    doc = json.loads(json.dumps(to_document(s)))
    assert doc["inputs"]["config"]["num_hidden_layers"] == 20
    restored, notes = from_document(doc)
    assert restored == s and notes == []


def test_download_json_and_csv_then_upload_restores_the_plan():
    from kvplan.web import views, widgets

    at = run_app(LINK_70B, "pages/paging.py")
    s = state(at)
    doc = json.loads(widgets.plan_json(s))
    assert doc["inputs"]["tensor_parallel_size"] == 4 and doc["plan"]["num_blocks"] > 0
    csv_text = views.plan_csv(s)
    assert "input,tensor_parallel_size,4" in csv_text and f"plan,num_blocks,{doc['plan']['num_blocks']}" in csv_text

    fresh = run_app(page="pages/parallelism.py")
    open_share(fresh)
    fresh.file_uploader(key="kv.upload").set_value(("plan.json", json.dumps(doc).encode(), "application/json")).run()
    assert not fresh.exception
    assert state(fresh) == s and dict(fresh.query_params) == LINK_70B
    assert fresh.number_input(key="w.tensor_parallel_size").value == 4


def test_uploading_a_bad_plan_file_warns():
    at = run_app(LINK_70B)
    open_share(at)
    at.file_uploader(key="kv.upload").set_value(("plan.json", b"{nope", "application/json")).run()
    assert not at.exception and any("not JSON" in w for w in warnings(at))
    assert state(at) == decode(LINK_70B)[0]


@pytest.mark.parametrize("engine", ["vllm", "sglang", "custom"])
def test_engine_knobs_are_built_only_when_open_and_are_the_listed_ones(engine):
    """The knobs expander is lazy: closed, none of its widgets exist (each costs every rerun) and a
    caption lists the knobs the plan sets; open, it holds exactly widgets.ENGINE_KNOBS[engine]."""
    from kvplan.web import widgets

    at = run_app(dict(LINK_70B, e=engine, bs="32"))
    keys = {w.key for kind in ("number_input", "selectbox", "checkbox") for w in at.sidebar.get(kind)}
    assert not keys & {"w." + n for n in widgets.ENGINE_KNOBS[engine]}
    flag = "--page-size" if engine == "sglang" else "--block-size"  # the engine's own flag, not kvplan's field
    assert f"Set: {flag} 32" in [plain(c.value) for c in at.sidebar.caption]
    at.session_state["kv.knobs"] = True
    at.run()
    keys = {w.key for kind in ("number_input", "selectbox", "checkbox") for w in at.sidebar.get(kind)}
    knobs = keys - {"w.model", "w.gpu", "w.tensor_parallel_size", "w.pipeline_parallel_size", "w.data_parallel_size",
                    "w.max_model_len", "w.concurrency", "w.kv_cache_dtype", "w.weight_format"}
    assert knobs == {"w." + n for n in widgets.ENGINE_KNOBS[engine]}
    assert at.selectbox(key="w.block_size").value == 32
    assert not any(plain(c.value).startswith("Set:") for c in at.sidebar.caption)  # open: the widgets say it


def test_every_page_file_is_named_as_its_url_path():
    # Streamlit matches a URL against pages/*.py by file name before st.navigation registers the pages: a
    # page whose file name differs from its url_path opens under a "Page not found" dialog (it did for
    # /import while the file was pages/import_vllm.py).
    import ast

    from kvplan.web import shell

    app = Path(__file__).parent.parent / "app.py"
    pages = [node for node in ast.walk(ast.parse(app.read_text())) if isinstance(node, ast.Call)
             and getattr(node.func, "attr", "") == "Page"]
    assert len(pages) == 8  # seven pages, and the root's hidden copy of Budget
    for call in pages:
        path = call.args[0].value
        url = next(k.value for k in call.keywords if k.arg == "url_path")
        if isinstance(url, ast.Attribute):  # shell.ROOT: the hidden default page, served at "/"
            assert (url.attr, path) == ("ROOT", "pages/budget.py") and shell.ROOT != "budget"
            continue
        assert Path(path).stem == url.value, (path, url.value)


def _registered(at) -> dict[str, str]:
    """url_path -> script path of every page st.navigation registered (what a typed URL path is matched against)."""
    return {info["url_pathname"]: Path(info["script_path"]).name for info in at._registered_pages.values()}


def test_every_page_is_reachable_by_its_url_path_and_the_share_link_uses_it():
    # QA (issue 12): http://host:8501/budget, typed or linked, showed "Page not found": Budget was the default page,
    # which Streamlit serves at "/" only (its url_path reads ""). Every page file now has a registered url_path equal
    # to its name, the page links point there, and each page's share link opens that path with the same plan.
    from kvplan.web import widgets

    at = run_app(LINK_70B)
    registered = _registered(at)
    stems = {Path(p).stem for p in PAGES}
    assert stems <= set(registered) and all(registered[s] == s + ".py" for s in stems), registered
    assert registered[""] == "budget.py"  # the root still opens Budget
    links = {el.proto.page for el in at.sidebar.get("page_link")}
    assert stems <= links and "" not in links, links  # no link to the bare root
    query = "v=1&m=llama-3.1-70b&tp=4&kvd=fp8&len=32768&conc=16"
    open_share(at)  # at the root: the share link names /budget, as the Budget link does
    assert [c.value for c in at.sidebar.code] == [f"/budget?{query}"]
    for page in PAGES:
        at = run_app(LINK_70B)
        at.switch_page(page).run()  # (run_app stays at the root for Budget)
        open_share(at)
        [code] = [c.value for c in at.sidebar.code]
        assert code == f"/{Path(page).stem}?{query}", (page, code)
        assert Path(page).stem in registered
        parts = urllib.parse.urlsplit(code)
        assert decode(dict(urllib.parse.parse_qsl(parts.query)))[0] == state(at)  # the plan round-trips
    # a browser's address: the base, then the running page's url_path (st.context.url); the link keeps the base
    assert widgets.share_url({"v": "1"}, "", "budget") == "/budget?v=1"
