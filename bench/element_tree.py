"""A page's element tree, captured from the real server, and re-emitted by Streamlit's public calls.

``bench/floor_replica.py`` is the same-elements floor of every page: it draws, on every rerun, the very
elements a page of ``app.py`` sent for the benchmark link (the same widgets with their labels, options,
values and keys; the same containers, rows, columns, expanders and tabs, nested alike; the same plotly
figures, dataframes, metrics, markdown, html and code), with none of the app's own work: no planning,
formatting, figure building or caching of its own. Only what Streamlit charges for sending that page.

How the tree is had: ``capture()`` is a protocol user (``bench.load.ProtocolUser``) on the running app:
it opens the page from the link, sets the TP box to one of the values the timed reruns alternate between
(2 and 4: on the benchmark link, Llama-3.1-70B, TP 2 does not fit and TP 4 does, two different pages), and
keeps every ``ForwardMsg`` of that rerun (each delta carries its place in the tree, ``metadata.delta_path``).
``save()`` writes them to ``<dir>/page-<url>-tp<value>.pb``; the replica reads those files once per process
(``load()`` + ``tree()`` + ``prepare()``: every call's arguments decoded and built, plotly figures and
dataframes included) and then only calls ``emit()`` per rerun.

Nothing is patched: every element is made by the public ``st.*`` call that makes it (``st.html`` included: its
bodies are the app's own stylesheet and tables as the app sent them, escaped by ``kvplan.web.views``). What is not
reproduced: a widget's callbacks (the app's own work), and the contents of the app's text (the replica
sends the captured strings, the TP box follows the rerun's value).
"""

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

@dataclass
class Node:
    """One delta: an element (``kind`` = the Element oneof, e.g. ``number_input``) or a block (``block`` set,
    ``kind`` = the Block oneof, e.g. ``flex_container``), with its children in the order of their index."""

    path: tuple[int, ...]
    kind: str
    proto: object
    block: bool = False
    children: list["Node"] = field(default_factory=list)
    call: object = None  # what prepare() built: (function, args, kwargs) or a block recipe


# ----------------------------------------------------------------------------- capture (in the bench process)

async def capture(base: str, path: str, query: str, tp: int = 2, timeout_s: float = 60) -> list:
    """Every ForwardMsg of opening page ``path`` (``query`` its link) and of the rerun after its TP
    box is set to ``tp``. The rerun is the tree (``tree()``); the opening run holds the widgets' values
    (``values()``: a rerun's widgets carry none, their state being the browser's)."""
    from bench.load import ProtocolUser

    user = ProtocolUser(base, "capture")
    try:
        first = await user.open(path, query, timeout_s)
        box = next(el.number_input for k, el in first["elements"]
                   if k == "number_input" and el.number_input.label == "TP")
        return first["msgs"] + (await user.widget(box.id, tp, timeout_s))["msgs"]
    finally:
        await user.close()


def save(msgs: list, out: Path) -> None:
    """ForwardMsgs to one file: each serialized, after its length (4 bytes, little-endian)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    raw = [m.SerializeToString() for m in msgs]
    out.write_bytes(b"".join(struct.pack("<I", len(m)) + m for m in raw))


def load(src: Path) -> list:
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    data, out, i = src.read_bytes(), [], 0
    while i < len(data):
        (n,) = struct.unpack_from("<I", data, i)
        out.append(ForwardMsg.FromString(data[i + 4:i + 4 + n]))
        i += 4 + n
    return out


# ----------------------------------------------------------------------------- the tree

def last_run(msgs: list) -> list:
    """The messages of the last script run (each run starts with a ``new_session`` message)."""
    starts = [i for i, fm in enumerate(msgs) if fm.WhichOneof("type") == "new_session"]
    return msgs[starts[-1]:] if starts else msgs


def values(msgs: list) -> dict[str, object]:
    """Widget id -> the last proto of it that set a value (``set_value``): what the page showed in it."""
    out = {}
    for fm in msgs:
        if fm.WhichOneof("type") == "delta" and fm.delta.WhichOneof("type") == "new_element":
            e = fm.delta.new_element
            p = getattr(e, e.WhichOneof("type"))
            if getattr(p, "set_value", False):
                out[p.id] = p
    return out


def tree(msgs: list) -> dict[int, list[Node]]:
    """Root container index -> the last run's nodes, nested by delta path, children in index order. A delta
    that replaces an earlier one at the same path (``st.empty`` refilled) keeps the last, as the browser does."""
    nodes: dict[tuple[int, ...], Node] = {}
    for fm in last_run(msgs):
        if fm.WhichOneof("type") != "delta":
            continue
        d, path = fm.delta, tuple(fm.metadata.delta_path)
        kind = d.WhichOneof("type")
        if kind == "new_element":
            nodes[path] = Node(path, d.new_element.WhichOneof("type"), d.new_element)
        elif kind == "add_block":
            nodes[path] = Node(path, d.add_block.WhichOneof("type"), d.add_block, block=True)
    roots: dict[int, list[Node]] = {}
    for path in sorted(nodes):
        node = nodes[path]
        if len(path) == 2:
            roots.setdefault(path[0], []).append(node)
        else:
            nodes[path[:-1]].children.append(node)
    return roots


def walk(nodes: list[Node]):
    for n in nodes:
        yield n
        yield from walk(n.children)


def counts(roots: dict[int, list[Node]]) -> tuple[int, int]:
    """(elements, blocks) of a tree: what ``bench.page_floor._Target`` counts on a rerun."""
    every = [n for nodes in roots.values() for n in walk(nodes)]
    return sum(not n.block for n in every), sum(n.block for n in every)


def kinds(roots: dict[int, list[Node]]) -> list[tuple[str, tuple[int, ...]]]:
    """Every node's kind and place, in order: two pages with equal lists have the same tree."""
    return [(n.kind, n.path) for nodes in roots.values() for n in walk(nodes)]


def query_string(msgs: list) -> str | None:
    """The link the page wrote last in the last run (None: it wrote none)."""
    out = None
    for fm in last_run(msgs):
        if fm.WhichOneof("type") == "page_info_changed":
            out = fm.page_info_changed.query_string
    return out


def navigation(msgs: list):
    """The rerun's ``Navigation`` message: the app's pages (title, icon, url path, script hash) and its own."""
    return next(fm.navigation for fm in last_run(msgs) if fm.WhichOneof("type") == "navigation")


def page_url(msgs: list) -> str:
    """The url path of the page that rerun drew ("" for the default page)."""
    nav = navigation(msgs)
    return next(p.url_pathname for p in nav.app_pages if p.page_script_hash == nav.page_script_hash)


def file_name(url: str, tp: int) -> str:
    """A page's capture file under the capture folder, for one value of the TP box."""
    return f"page-{url or 'default'}-tp{tp}.pb"


def page_config(msgs: list) -> dict | None:
    """The ``st.set_page_config`` arguments of that rerun (None: the page set none)."""
    from streamlit.proto.PageConfig_pb2 import PageConfig

    for fm in last_run(msgs):
        if fm.WhichOneof("type") == "page_config_changed":
            c = fm.page_config_changed
            return {"page_title": c.title or None, "page_icon": c.favicon or None,
                    "layout": "wide" if c.layout == PageConfig.WIDE else "centered"}
    return None


# ----------------------------------------------------------------------------- re-emitting (in the replica)

def _key(widget_id: str) -> str | None:
    """The user key inside a widget id ``$$ID-<hash>-<key>`` (``None`` when the app gave none)."""
    parts = widget_id.split("-", 2)
    return None if len(parts) < 3 or parts[2] == "None" else parts[2]


def _help(p) -> dict:
    return {"help": p.help} if p.help else {}


def _figure(spec: str):
    """A plotly figure whose ``to_dict`` hands Streamlit the captured spec: the replica pays Streamlit's JSON
    encoding and proto of the chart, not plotly's validation or the app's figure building."""
    import plotly.graph_objects as go

    class Prepared(go.Figure):
        def __init__(self, d):
            super().__init__()
            self._d = d

        def to_dict(self):
            return self._d

        def to_plotly_json(self):
            return self._d

    return Prepared(json.loads(spec))


def _dataframe(p):
    import pyarrow as pa

    return pa.ipc.open_stream(p.arrow_data.data).read_all().to_pandas()


def prepare(node: Node, page_objects: dict[str, object], shown: dict[str, object] | None = None) -> None:
    """Decode one node (and its children) into the public call that makes it; done once per process.
    ``page_objects``: the app's page script hash -> the replica's page (for page links); ``shown``: ``values()``,
    each widget's value as the page showed it."""
    import streamlit as st

    e, k = node.proto, node.kind
    if node.block:
        b = getattr(e, k)
        if k == "flex_container":
            if node.children and all(c.kind == "column" for c in node.children):
                node.call = ("columns", [c.proto.column.weight for c in node.children])
            else:
                horizontal = b.direction == b.HORIZONTAL
                node.call = ("container", {"horizontal": horizontal, "border": b.border or None,
                                           **({"wrap": b.wrap} if horizontal else {})})
        elif k == "expandable":
            key = _key(b.id) if b.id else None
            node.call = ("expander", {"label": b.label, "expanded": b.expanded,
                                      **({"key": key, "on_change": "rerun"} if key else {}),
                                      **({"icon": b.icon} if b.icon else {})})
        elif k == "tab_container":
            node.call = ("tabs", [c.proto.tab.label for c in node.children])
        elif k in ("column", "tab"):
            node.call = ("child",)  # made by its parent
        else:
            raise ValueError(f"block kind {k!r} at {node.path} is not replicated")
        for c in node.children:
            prepare(c, page_objects, shown)
        return
    p = getattr(e, k)
    p = (shown or {}).get(getattr(p, "id", None), p)  # a widget: as it was shown (its value set)
    if k == "html":
        node.call = (st.html, (p.body,), {})
    elif k == "markdown":
        t = p.element_type
        fn = {p.CAPTION: st.caption, p.LATEX: st.latex, p.CODE: st.code}.get(t, st.markdown)
        if t == p.DIVIDER:
            node.call = (st.divider, (), {})
        else:
            node.call = (fn, (p.body,), _help(p) if fn is not st.code else {})
    elif k == "heading":
        fn = {"h1": st.title, "h2": st.header}.get(p.tag, st.subheader)
        node.call = (fn, (p.body,), {**_help(p), **({"anchor": p.anchor} if p.anchor else {})})
    elif k == "metric":
        node.call = (st.metric, (p.label, p.body), {**_help(p), **({"delta": p.delta} if p.delta else {})})
    elif k == "alert":
        fn = {p.SUCCESS: st.success, p.INFO: st.info, p.WARNING: st.warning, p.ERROR: st.error}[p.format]
        node.call = (fn, (p.body,), {"icon": p.icon} if p.icon else {})
    elif k == "code":
        node.call = (st.code, (p.code_text,), {"language": p.language or None, "wrap_lines": p.wrap_lines})
    elif k == "plotly_chart":
        node.call = (st.plotly_chart, (_figure(p.spec),),
                     {"key": _key(p.id), "width": "stretch", "config": json.loads(p.config) if p.config else None,
                      "theme": p.theme or None})
    elif k == "dataframe":
        node.call = (st.dataframe, (_dataframe(p),),
                     {"hide_index": True, "column_config": json.loads(p.columns) if p.columns else None,
                      **({"column_order": list(p.column_order)} if p.column_order else {})})
    elif k == "page_link":
        from urllib.parse import parse_qsl

        if p.page_script_hash not in page_objects:
            raise ValueError(f"page link {p.label!r} at {node.path}: no page of the replica has its script hash")
        target = page_objects[p.page_script_hash]  # the replica's page of the same url path
        node.call = (st.page_link, (target,), {"label": p.label, "icon": p.icon or None,
                                                "query_params": dict(parse_qsl(p.query_string)) or None})
    elif k == "selectbox":
        node.call = (st.selectbox, (p.label, list(p.options)),
                     {"index": _index(p), "key": _key(p.id), **_help(p)})
    elif k == "radio":
        node.call = (st.radio, (p.label, list(p.options)),
                     {"index": _index(p), "horizontal": p.horizontal, "key": _key(p.id), **_help(p)})
    elif k == "multiselect":
        opts = list(p.options)
        shown = [v for v in p.raw_values if v in opts] if p.set_value else [opts[i] for i in p.default]
        node.call = (st.multiselect, (p.label, opts), {"default": shown, "key": _key(p.id), **_help(p)})
    elif k == "number_input":
        cast = int if p.data_type == p.INT else float
        bounds = {**({"min_value": cast(p.min)} if p.has_min else {}),
                  **({"max_value": cast(p.max)} if p.has_max else {})}
        value = cast(p.value) if p.set_value else (cast(p.default) if p.HasField("default") else None)
        node.call = (st.number_input, (p.label,), {"value": value, "step": cast(p.step) if p.step else None,
                                                   **bounds, "key": _key(p.id), **_help(p),
                                                   **({"format": p.format} if p.format else {})})
    elif k == "text_input":
        node.call = (st.text_input, (p.label,), {"value": p.value if p.set_value else p.default,
                                                 "max_chars": p.max_chars or None,
                                                 "placeholder": p.placeholder or None, "key": _key(p.id),
                                                 **_help(p)})
    elif k == "text_area":
        h = e.height_config.pixel_height if e.HasField("height_config") else 0
        node.call = (st.text_area, (p.label,), {"value": p.value if p.set_value else p.default,
                                                "height": h or None, "max_chars": p.max_chars or None,
                                                "placeholder": p.placeholder or None, "key": _key(p.id),
                                                **_help(p)})
    elif k == "button":
        node.call = (st.button, (p.label,), {"key": _key(p.id), "type": p.type or "secondary", **_help(p)})
    elif k == "checkbox":
        fn = st.toggle if p.type == p.TOGGLE else st.checkbox
        node.call = (fn, (p.label,), {"value": p.value if p.set_value else p.default, "key": _key(p.id), **_help(p)})
    elif k == "file_uploader":
        node.call = (st.file_uploader, (p.label,), {"type": [t.lstrip(".") for t in p.type] or None,
                                                    "key": _key(p.id), **_help(p)})
    else:
        raise ValueError(f"element kind {k!r} at {node.path} is not replicated")
    fn, args, kwargs = node.call
    node.call = (fn.__name__, args, kwargs)  # the same call on the node's container


def _index(p) -> int | None:
    """A selectbox's or radio's shown option: the value the app set, else its default index."""
    opts = list(p.options)
    if p.set_value and p.raw_value in opts:
        return opts.index(p.raw_value)
    return p.default if p.HasField("default") else None


def emit(nodes: list[Node], dg) -> None:
    """Re-emit ``nodes`` into the container ``dg`` in their order (their delta paths come out the same)."""
    for n in nodes:
        call = n.call
        if not n.block:
            name, args, kwargs = call
            getattr(dg, name)(*args, **kwargs)
        elif call[0] == "container":
            emit(n.children, dg.container(**call[1]))
        elif call[0] == "expander":
            emit(n.children, dg.expander(**call[1]))
        elif call[0] in ("columns", "tabs"):
            for child, inner in zip(n.children, getattr(dg, call[0])(call[1])):
                emit(child.children, inner)


def main(argv=None) -> int:
    """Capture pages of a fresh ``streamlit run app.py`` into a folder (what bench/page_floor.py does in memory):

        python -m bench.element_tree --out tests/fixtures/replica --pages Budget
    """
    import argparse
    import asyncio

    from bench.common import server, wait_healthy
    from bench.page_floor import PAGES, TP_VALUES, _capture

    ap = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--pages", nargs="*", metavar="NAME", help="default all")
    args = ap.parse_args(argv)
    pages = [(p, n) for p, n in PAGES if not args.pages or n in args.pages]
    args.out.mkdir(parents=True, exist_ok=True)
    with server() as (base, proc, _):
        wait_healthy(base, proc)
        asyncio.run(_capture(base, pages, args.out))
    for src in sorted(args.out.glob("page-*.pb")):
        roots = tree(load(src))
        print(src.name, "elements + blocks:", counts(roots))
    print("TP values:", TP_VALUES)
    return 0


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
