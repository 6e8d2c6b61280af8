"""Every page's same-elements floor: the elements a page of ``app.py`` sent, re-emitted with no app code.

``bench/page_floor.py`` (and ``bench/rerun_cpu.py --replica``) capture each page's rerun from the real app
(``bench.element_tree.capture``: the benchmark link, the TP box set to 2 and to 4) into
``$KV_REPLICA_DIR/page-<url path>-tp<value>.pb`` and serve this script beside the app. It has the app's pages
(the same titles, icons and url paths, ``st.navigation`` hidden as the app's is). Once per process, each page
reads its captures (one per TP value: the page drawn for TP 2, which does not fit, is not the page for TP 4)
and decodes every element into the public ``st.*`` call that makes it (``bench.element_tree.prepare``: widgets
with their labels, options, values and keys; containers, columns, expanders and tabs nested as they were; the
captured plotly specs and dataframes). On each rerun it only makes the calls of the capture for the TP box's
value, then writes the link the page wrote, its ``tp`` following the TP box (the app keeps the link in step
with its widgets). A page without a capture shows one caption.
"""
import os
import sys
from pathlib import Path
from urllib.parse import parse_qsl

import streamlit as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import element_tree  # noqa: E402

DIR = Path(os.environ.get("KV_REPLICA_DIR", Path(__file__).parent / "results" / "replica"))


@st.cache_resource
def _pages():
    """The app's pages, as its capture's navigation names them (built once per process, as the app does)."""
    files = sorted(DIR.glob("page-*.pb"))
    if not files:
        return {}, []
    nav = element_tree.navigation(element_tree.load(files[0]))
    by_hash, out = {}, []
    for p in nav.app_pages:
        page = st.Page(lambda url=p.url_pathname: _draw(url), title=p.page_name, url_path=p.url_pathname,
                       icon=p.icon or None, default=p.is_default)
        by_hash[p.page_script_hash] = page
        out.append(page)
    return by_hash, out


@st.cache_resource
def _captures(url: str) -> dict:
    """TP value -> the page as captured with the TP box at that value (``_prepared``); {} without a capture."""
    out = {}
    for src in DIR.glob(element_tree.file_name(url, 0).replace("-tp0.pb", "-tp*.pb")):
        out[int(src.stem.rsplit("-tp", 1)[1])] = _prepared(src)
    return out


def _prepared(src: Path):
    """(roots, the TP box's key, the link the page wrote, its page config) of one capture."""
    msgs = element_tree.load(src)
    roots = element_tree.tree(msgs)
    if set(roots) - {0, 1, 2}:  # main, sidebar, and the event container st.html sends a bare stylesheet to
        raise ValueError(f"{src.name}: root containers {sorted(roots)}; the replica draws 0, 1 and 2 only")
    by_hash, _ = _pages()
    shown = element_tree.values(msgs)
    for nodes in roots.values():
        for n in nodes:
            element_tree.prepare(n, by_hash, shown)
    tp = next((n.call[2]["key"] for nodes in roots.values() for n in element_tree.walk(nodes)
               if n.kind == "number_input" and n.proto.number_input.label == "TP"), None)
    link = element_tree.query_string(msgs)
    return (roots, tp, dict(parse_qsl(link, keep_blank_values=True)) if link is not None else None,
            element_tree.page_config(msgs))


def _draw(url: str) -> None:
    captures = _captures(url)
    if not captures:
        st.caption(f"no capture for {url} in {DIR}")
        return
    tp = next(iter(captures.values()))[1]  # the TP box's value this rerun: its state, else the link's
    value = st.session_state.get(tp) if tp else None
    value = value if value is not None else int(st.query_params.get("tp", "0") or 0)
    roots, tp, link, config = captures.get(value, next(iter(captures.values())))
    if config:
        st.set_page_config(**config)
    for root, nodes in roots.items():
        element_tree.emit(nodes, st.sidebar if root == 1 else st)
    if link is not None:
        want = {**link, **({"tp": str(st.session_state[tp])} if tp and "tp" in link else {})}
        if st.query_params.to_dict() != want:
            st.query_params.from_dict(want)


_, pages = _pages()
if pages:
    st.navigation(pages, position="hidden").run()
else:
    st.caption(f"no captures in {DIR}")
