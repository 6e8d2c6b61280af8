"""bench/element_tree.py (a page's element tree from its captured rerun) and bench/floor_replica.py (the same
elements re-emitted with no app code), on a real capture of the Budget page.

Fixture: tests/fixtures/replica/page-default-tp{2,4}.pb, made 2026-12-02 14:30 UTC at commit 1627a8a by
``python -m bench.element_tree --out tests/fixtures/replica --pages Budget``: the ForwardMsgs a real
``streamlit run app.py`` sent for the Budget page of ``bench.page_floor.LINK`` (Llama-3.1-70B on H100-SXM,
32k context, 16 sequences, fp8 KV) after its TP box was set to 4 (fits) / 2 (does not fit: no decode
ceiling). The counts below are read off that capture, not the live app (the live page is compared with its
replica by bench/page_floor.py, which asserts the two trees equal).
"""

import collections
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from bench import element_tree as et

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "replica"


def _nodes_of(roots: dict) -> list[et.Node]:
    return [n for nodes in roots.values() for n in et.walk(nodes)]


def _nodes(tp: int) -> list[et.Node]:
    return _nodes_of(et.tree(et.load(FIXTURES / et.file_name("", tp))))


def test_budget_tree_at_tp4():
    roots = et.tree(et.load(FIXTURES / et.file_name("", 4)))
    # 42 elements = 2 html (the CSS, the terms table) + 4 selectbox (model, GPU, KV dtype, weights) + 5 number_input
    # (TP, PP, DP, context, concurrency) + 6 markdown + 1 radio (engine) + 5 heading + 7 metric (4 plan + 3 decode
    # ceiling) + 1 alert + 3 plotly_chart + 1 code (the start-up log) + 7 page_link = 2+4+5+6+1+5+7+1+3+1+7
    assert et.counts(roots) == (42, 12)
    kinds = collections.Counter(n.kind for n in _nodes(4) if not n.block)
    assert kinds == {"html": 2, "selectbox": 4, "number_input": 5, "markdown": 6, "radio": 1, "heading": 5,
                     "metric": 7, "alert": 1, "plotly_chart": 3, "code": 1, "page_link": 7}
    # 12 blocks = 8 flex containers (sidebar links, two sidebar rows, top, metrics row, charts row, the columns'
    # row, the decode metrics row) + 2 expanders (engine knobs, share) + 2 columns
    blocks = collections.Counter(n.kind for n in _nodes(4) if n.block)
    assert blocks == {"flex_container": 8, "expandable": 2, "column": 2}
    # the TP box: its key, as the app gave it; a rerun's widget carries no value (the browser holds it), the
    # opening run set it from the link's tp=4
    tp = next(n.proto.number_input for n in _nodes(4)
              if n.kind == "number_input" and n.proto.number_input.label == "TP")
    assert et._key(tp.id) == "w.tensor_parallel_size" and not tp.set_value
    assert et.values(et.load(FIXTURES / et.file_name("", 4)))[tp.id].value == 4


def test_budget_tree_at_tp2_has_no_decode_ceiling():
    # TP 2 does not fit: the 3 decode-ceiling metrics and their row go, one caption comes: 42 - 3 + 1 = 40
    # elements, 12 - 1 = 11 blocks
    assert et.counts(et.tree(et.load(FIXTURES / et.file_name("", 2)))) == (40, 11)
    assert sum(n.kind == "metric" for n in _nodes(2)) == 4


def test_every_node_has_a_public_call():
    for tp in (2, 4):
        roots = et.tree(et.load(FIXTURES / et.file_name("", tp)))
        pages = {n.proto.page_link.page_script_hash: "pages/budget.py"  # stand-ins for the replica's pages
                 for n in _nodes_of(roots) if n.kind == "page_link"}
        assert len(pages) == 7
        for nodes in roots.values():
            for n in nodes:
                et.prepare(n, pages)
        assert all(n.call is not None for n in _nodes_of(roots)), tp
        with pytest.raises(ValueError, match="no page of the replica"):
            et.prepare(next(n for n in _nodes_of(roots) if n.kind == "page_link"), {})
    from streamlit.proto.Element_pb2 import Element

    balloons = Element()
    balloons.balloons.show = True  # a kind no page draws: refused by name, not drawn as something else
    with pytest.raises(ValueError, match="element kind 'balloons' at \\(0, 3\\) is not replicated"):
        et.prepare(et.Node((0, 3), "balloons", balloons), {})


def test_replica_draws_the_captured_page(monkeypatch):
    monkeypatch.setenv("KV_REPLICA_DIR", str(FIXTURES))
    at = AppTest.from_file(str(ROOT / "bench" / "floor_replica.py"), default_timeout=30)
    at.query_params["tp"] = "4"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert (len(at.number_input), len(at.selectbox), len(at.radio), len(at.metric)) == (5, 4, 1, 7)
    assert len(at.get("plotly_chart")) == 3 and len(at.get("page_link")) == 7 and len(at.code) == 1
    assert at.title[0].value == "Budget"
    assert at.number_input(key="w.tensor_parallel_size").value == 4
    assert at.selectbox(key="w.model").value == "llama-3.1-70b"  # the value the app showed, not option 0
    # the TP box at 2: the page captured at TP 2 (no decode ceiling), the link's tp following the box
    at.number_input(key="w.tensor_parallel_size").set_value(2).run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.metric) == 4
    assert at.query_params["tp"] == "2"
