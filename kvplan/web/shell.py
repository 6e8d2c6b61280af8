"""The app's frame: page config, the link state, the shared sidebar, the page, the page links.

``app.py`` calls ``run(PAGES)``. Every page's first line is ``shell.enter()``: Streamlit still
treats a ``pages/`` folder next to the entry script as a legacy multipage app on the first run of
a process (and on every ``AppTest`` run), running the page file *without* app.py. ``enter`` then
runs app.py itself, which runs this page inside the frame, and stops the bare run.
"""

import copy
import runpy
import threading
from collections.abc import Callable
from pathlib import Path

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from kvplan.web import cached, views, widgets

_run = threading.local()  # per script thread: is a page running inside run()?
# The hidden default page's url_path (app.py): Streamlit serves a default page at the app's root and reads its
# url_path as "", so this name only tells its script hash apart from /budget's (the same file); no URL opens it.
ROOT = "root"


def public_path(page, pages: list) -> str:
    """The url_path a link to ``page`` uses: its own, or for the root the first page's (Budget, which it runs)."""
    return page.url_path or next(p.url_path for p in pages if p.visibility == "visible")


def pages(build: Callable[[], list]) -> list:
    """The app's ``st.Page`` objects: ``build()`` once per process (per entry-script folder and version of
    ``build``), then a shallow copy of each per run.

    ``st.Page`` resolves and stats its file, 1-2 ms of every rerun for seven pages. The copy: ``st.navigation``
    marks the page it returns as callable and ``Page.run`` clears the mark, so two sessions' runs must not
    share one object."""
    ctx = get_script_run_ctx()
    key = (str(ctx.pages_manager.main_script_parent) if ctx is not None else "", build.__code__)
    built = _PAGES.get(key)
    if built is None:
        built = _PAGES[key] = tuple(build())  # (two first runs at once may both build: the same pages)
    return [copy.copy(p) for p in built]


_PAGES: dict[tuple, tuple] = {}  # (entry-script folder, build's code) -> the pages built


def run(pages: list) -> None:
    # An emoji icon is drawn in the browser; a ":material/...:" page icon is fetched from fonts.gstatic.com by
    # every visitor's browser (a third-party request, and a console error where that host is unreachable).
    st.set_page_config(page_title="kvplan", page_icon="🧮", layout="wide")
    widgets.start()
    views.style()
    page = st.navigation(pages, position="hidden")
    nav = st.sidebar.container()
    path = public_path(page, pages)
    widgets.sidebar(path)
    top = st.container()  # filled after the page: refusals made by the page's own inputs are listed too
    _run.active = True
    try:
        page.run()
    finally:
        _run.active = False
    with top:
        widgets.show_link_warnings()
        widgets.show_refusals(path)
        widgets.show_block_size_problem()
        widgets.show_basis(cached.spec(widgets.current()))
    widgets.finish(nav, [p for p in pages if p.visibility == "visible"], page.url_path, path)


def enter() -> None:
    """Run the app around this page if Streamlit started the page file on its own."""
    if getattr(_run, "active", False):
        return
    ctx = get_script_run_ctx()
    if ctx is None or Path(ctx.main_script_path).parent.name == "pages":  # a page run as its own app
        return
    runpy.run_path(ctx.main_script_path, run_name="__main__")
    st.stop()
