"""Helpers for the AppTest tests of the web app (one AppTest per test; default_timeout=30)."""

import base64
import re
import json
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import Plan, plan
from kvplan.presets import load_preset
from kvplan.units import GiB
from kvplan.web.state import PlanState

APP = str(Path(__file__).resolve().parents[1] / "app.py")
PAGES = ("pages/budget.py", "pages/model.py", "pages/paging.py", "pages/parallelism.py", "pages/gpus.py",
         "pages/import.py")
# A non-default plan, as a link: Llama-3.1-70B on 4 x H100 at 32k context, 16 sequences, fp8 KV.
LINK_70B = {"v": "1", "m": "llama-3.1-70b", "tp": "4", "len": "32768", "conc": "16", "kvd": "fp8"}


def run_app(params: dict | None = None, page: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=30)
    if params:
        at.query_params.update(params)
    at.run()
    if page and page != "pages/budget.py":
        at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def open_share(at: AppTest) -> AppTest:
    """Open the sidebar's "Share or save this plan" expander (lazy: closed, it holds no widgets)."""
    at.session_state["kv.share"] = True
    return at.run()


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def state(at: AppTest) -> PlanState:
    return at.session_state["kv.state"]


def warnings(at: AppTest) -> list[str]:
    return [w.value for w in at.warning]


def figure(at: AppTest, key: str) -> dict:
    for chart in at.get("plotly_chart"):
        if chart.proto.id.endswith("-" + key):
            return json.loads(chart.proto.spec)
    raise KeyError(key)


def values(v):
    """Plotly >= 6 writes numeric arrays as {'dtype', 'bdata'}; give them back as a list."""
    if isinstance(v, dict) and "bdata" in v:
        arr = np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"])
        return arr.tolist()
    return list(v)


def kvplan_plan(preset: str, gpu: str = "H100-SXM", tp: int = 1, concurrency: int | None = None, **engine) -> Plan:
    return plan(load_preset(preset), get_gpu(gpu), EngineConfig(**engine), Layout(tp), concurrency)


def gib(n: int) -> float:
    return n / GiB


def plain(text: str) -> str:
    """Markdown source with its escapes removed (what the reader sees)."""
    return re.sub(r"\\(.)", r"\1", text)


def html_tables(at: AppTest) -> list[list[dict[str, str]]]:
    """The app's HTML tables (kvplan.web.views.html_table), each as row dicts keyed by heading."""
    from html.parser import HTMLParser

    class _Tables(HTMLParser):
        def __init__(self):
            super().__init__()
            self.tables, self.cell, self.row, self.head = [], None, None, None

        def handle_starttag(self, tag, attrs):
            if tag == "table":
                self.tables.append({"head": [], "rows": []})
            elif tag == "tr":
                self.row = []
            elif tag in ("td", "th"):
                self.cell = ""

        def handle_endtag(self, tag):
            if tag in ("td", "th") and self.cell is not None:
                self.row.append(self.cell)
                self.cell = None
            elif tag == "tr" and self.row is not None:
                t = self.tables[-1]
                if not t["head"]:
                    t["head"] = self.row
                else:
                    t["rows"].append(dict(zip(t["head"], self.row)))
                self.row = None

        def handle_data(self, data):
            if self.cell is not None:
                self.cell += data

    out = []
    for el in at.get("html"):
        body = el.proto.body
        if 'class="kv-table"' in body:
            p = _Tables()
            p.feed(body)
            out += [t["rows"] for t in p.tables]
    return out


def weights_term(at: AppTest) -> dict[str, str]:
    """The Budget terms table's weights row (its basis and source say where the bytes came from)."""
    rows = [r for table in html_tables(at) for r in table if r.get("term") == "weights"]
    assert rows, "no weights term on the page"
    return rows[0]


def refusals(at: AppTest) -> list[str]:
    """The 'Refused ...' errors at the top of the page, as the reader sees them."""
    return [plain(e.value) for e in at.error if "Refused" in e.value]
