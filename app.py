"""kvplan web app: ``streamlit run app.py``.

Every input of the plan lives in the link (``kvplan.web.state``); ``kvplan.web.widgets`` keeps the
link, the shared sidebar and the page links in step. Pages are thin: widgets -> kvplan -> render.
"""

from pathlib import Path

import streamlit as st

from kvplan.web import shell

HERE = Path(__file__).parent
# Each page file is named as its url_path: before st.navigation registers these pages, Streamlit matches a
# URL against the files of pages/ by name (its older multipage discovery), and a URL that matches no file
# name (/import for pages/import_vllm.py) got a "Page not found" dialog over the right page.
# Streamlit serves its default page at the root only (its url_path reads ""): with Budget the default,
# /budget typed or linked got "Page not found". Budget is an ordinary page at /budget (where the page links
# and the share link point), and the root runs the same file as a hidden default page (shell.ROOT).
def pages() -> list:
    """The pages, built once per process by ``shell.pages`` (not on every rerun)."""
    out = [
        st.Page("pages/budget.py", title="Budget", url_path="budget", icon=":material/stacked_bar_chart:"),
        st.Page("pages/model.py", title="Model", url_path="model", icon=":material/schema:"),
        st.Page("pages/paging.py", title="Paging", url_path="paging", icon=":material/view_module:"),
        st.Page("pages/parallelism.py", title="Parallelism", url_path="parallelism", icon=":material/account_tree:"),
        st.Page("pages/gpus.py", title="GPUs", url_path="gpus", icon=":material/memory:"),
        st.Page("pages/import.py", title="Import", url_path="import", icon=":material/terminal:"),
    ]
    if (HERE / "pages" / "validate.py").is_file():  # written separately; registered once it exists
        out.insert(5, st.Page("pages/validate.py", title="Validate", url_path="validate", icon=":material/science:"))
    out.append(st.Page("pages/budget.py", title="Budget", url_path=shell.ROOT, default=True, visibility="hidden"))
    return out


shell.run(shell.pages(pages))
