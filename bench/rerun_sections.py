"""Where a page rerun's time goes: the app's script split into its sections, beside the caption floor's script.

    python bench/rerun_sections.py                      # every page, 30 reruns each way
    python bench/rerun_sections.py --pages Budget GPUs --reruns 40

``bench/page_floor.py`` says how far a rerun is from a bare Streamlit page of as many elements (its
"x same-size"); this says which part of the page's script makes the difference. Two servers, each timing
every script run from inside (``time.perf_counter`` and the script thread's ``time.thread_time``): the app,
its script split where ``kvplan.web.shell.run`` calls out, and ``bench/floor_app.py`` grown with captions to
the page's element count. Sections of the app's script: ``sidebar`` (``widgets.sidebar``: the shared inputs),
``page`` (the page's own script, ``StreamlitPage.run``), ``top`` (the warnings drawn above the page after it),
``finish`` (``widgets.finish``: the link, the page links, the share box) and ``frame``, the rest (page config,
the plan state, the stylesheet, ``st.navigation``, the sidebar's and the top's containers). ``outside`` is
the rest of the rerun's wall time seen by the client (Streamlit's own work before and after the script,
the event loop sending each message, the websocket); the floor has it too.

One protocol user per server (``bench.page_floor._Target``), reruns alternating between the app and the
floor so that drift falls on both: "cached", the sidebar's TP box alternating between 2 and 4 (what
``bench/page_floor.py`` times: every section of the page is replayed from Streamlit's cache after the first
two), and "fresh", the "Concurrent sequences" box set to a value not seen before on every rerun (every
section keyed on the plan is drawn anew: the plan, its charts and tables built). Medians per rerun, ms.
Writes bench/results/rerun_sections.json.
"""

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import ROOT, SERVER_FLAGS, free_port, machine, stop, wait_healthy  # noqa: E402
from bench.page_floor import IMPORT_QUERY, LINK, PAGES, _Target  # noqa: E402

# Run inside each server process (python -c): every script run's sections, one JSON line per run.
_TIMED_SERVER = """
import json, os, sys, time
import streamlit.runtime.scriptrunner.script_runner as sr
RUN = {}
def timed(label, func):
    def inner(*args, **kwargs):
        w, c = time.perf_counter(), time.thread_time()
        try:
            return func(*args, **kwargs)
        finally:
            old = RUN.get(label, (0.0, 0.0))
            RUN[label] = (old[0] + time.perf_counter() - w, old[1] + time.thread_time() - c)
    return inner
sr.exec_func_with_error_handling = timed("script", sr.exec_func_with_error_handling)
if sys.argv[1] == "app.py":
    import streamlit as st
    from streamlit.navigation.page import StreamlitPage
    from kvplan.web import widgets
    widgets.sidebar = timed("sidebar", widgets.sidebar)
    widgets.finish = timed("finish", widgets.finish)
    for name in ("show_link_warnings", "show_refusals", "show_block_size_problem", "show_basis"):
        setattr(widgets, name, timed("top", getattr(widgets, name)))
    StreamlitPage.run = timed("page", StreamlitPage.run)
def run_script(self, *args, _run=sr.ScriptRunner._run_script, **kwargs):
    RUN.clear()
    try:
        return _run(self, *args, **kwargs)
    finally:
        with open(os.environ["KV_SECTION_TIMES"], "a") as f:
            f.write(json.dumps({k: [w * 1000, c * 1000] for k, (w, c) in RUN.items()}) + "\\n")
sr.ScriptRunner._run_script = run_script
from streamlit.web.cli import main
sys.argv = ["streamlit", "run", *sys.argv[1:]]
main()
"""
SECTIONS = ("frame", "sidebar", "page", "top", "finish")
CONCURRENCY = "Concurrent sequences"


def _serve(script: str, log: Path) -> tuple[str, subprocess.Popen]:
    port = free_port()
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT), KV_SECTION_TIMES=str(log))
    proc = subprocess.Popen([sys.executable, "-c", _TIMED_SERVER, script, "--server.port", str(port), *SERVER_FLAGS],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                            start_new_session=True)
    return f"http://127.0.0.1:{port}", proc


def _runs(log: Path) -> list[dict]:
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    log.write_text("")
    return runs


def _median(rows: list[dict], key: str, i: int) -> float:
    return round(statistics.median(r.get(key, (0.0, 0.0))[i] for r in rows), 2)


def _summary(walls: list[float], runs: list[dict], app: bool) -> dict:
    """Medians of the client's rerun wall, the script (wall, thread CPU) and, for the app, of each section."""
    if app:
        for r in runs:
            inside = [sum(r.get(k, (0.0, 0.0))[i] for k in SECTIONS[1:]) for i in (0, 1)]
            r["frame"] = [r["script"][i] - inside[i] for i in (0, 1)]
    out = {"reruns": len(walls), "rerun_wall_ms": round(statistics.median(walls), 2),
           "script_wall_ms": _median(runs, "script", 0), "script_cpu_ms": _median(runs, "script", 1)}
    out["outside_ms"] = round(out["rerun_wall_ms"] - out["script_wall_ms"], 2)
    if app:
        out["sections_wall_ms"] = {k: _median(runs, k, 0) for k in SECTIONS}
        out["sections_cpu_ms"] = {k: _median(runs, k, 1) for k in SECTIONS}
    return out


async def _page(app: tuple[str, Path], floor: tuple[str, Path], path: str, n: int, warm: int = 6) -> dict:
    query = LINK + (IMPORT_QUERY if path == "import" else "")
    page = _Target(app[0], path, query)
    await page.open()
    for _ in range(warm):
        await page.rerun()
    grown = _Target(floor[0], "", f"n={page.elements}")  # the caption floor of the page's element count
    await grown.open()
    for _ in range(warm):
        await grown.rerun()
    box = next(el.number_input for k, el in (await page.user.widget(page.box.id, 4, 60))["elements"]
               if k == "number_input" and el.number_input.label == CONCURRENCY)
    _runs(app[1]), _runs(floor[1])
    cached, fresh, bare = [], [], []
    try:
        for _ in range(n):  # the TP box between 2 and 4, as bench/page_floor.py
            await page.rerun()
            cached.append(page.times[-1])
            await grown.rerun()
            bare.append(grown.times[-1])
        cached_runs = _runs(app[1])
        for i in range(n):  # a concurrency never seen before: every plan-keyed section drawn anew
            seen = await page.user.widget(box.id, 1000 + i, 60)
            assert not [e for k, e in seen["elements"] if k == "exception"], f"exception on /{path}"
            fresh.append(seen["seconds"] * 1000)
            await grown.rerun()
            bare.append(grown.times[-1])
        fresh_runs, floor_runs = _runs(app[1]), _runs(floor[1])
    finally:
        await page.user.close()
        await grown.user.close()
    return {"elements": page.elements, "blocks": page.blocks, "cached": _summary(cached, cached_runs, True),
            "fresh": _summary(fresh, fresh_runs, True), "floor": _summary(bare, floor_runs, False)}


def measure(pages: list[str], n: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="kvplan-sections-") as tmp:
        logs = {side: Path(tmp) / f"{side}.jsonl" for side in ("app", "floor")}
        for log in logs.values():
            log.write_text("")
        servers = {"app": _serve("app.py", logs["app"]), "floor": _serve("bench/floor_app.py", logs["floor"])}
        try:
            for url, proc in servers.values():
                wait_healthy(url, proc)
            app, floor = (servers["app"][0], logs["app"]), (servers["floor"][0], logs["floor"])
            return {name: asyncio.run(_page(app, floor, path, n)) for path, name in PAGES if name in pages}
        finally:
            for _, proc in servers.values():
                stop(proc)


def table(rows: dict) -> str:
    lines = [("medians per rerun, ms (wall / script-thread CPU); the floor: bench/floor_app.py grown to the page's "
              "element count; 'x floor': rerun wall / the floor's"),
             f"{'page':12} {'rerun':6} {'elements':>8} {'blocks':>6} {'rerun wall':>10} {'x floor':>7} "
             f"{'script':>13} {'outside':>7} " + " ".join(f"{k:>13}" for k in SECTIONS)]
    for name, r in rows.items():
        f = r["floor"]
        lines.append(f"{name:12} {'floor':6} {r['elements']:>8} {0:>6} {f['rerun_wall_ms']:>10.2f} {1:>7.2f} "
                     f"{f['script_wall_ms']:>6.2f}/{f['script_cpu_ms']:<6.2f} {f['outside_ms']:>7.2f}")
        for kind in ("cached", "fresh"):
            s = r[kind]
            cells = " ".join(f"{s['sections_wall_ms'][k]:>6.2f}/{s['sections_cpu_ms'][k]:<6.2f}" for k in SECTIONS)
            lines.append(f"{name:12} {kind:6} {r['elements']:>8} {r['blocks']:>6} {s['rerun_wall_ms']:>10.2f} "
                         f"{s['rerun_wall_ms'] / f['rerun_wall_ms']:>7.2f} "
                         f"{s['script_wall_ms']:>6.2f}/{s['script_cpu_ms']:<6.2f} {s['outside_ms']:>7.2f} {cells}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", nargs="*", default=[name for _, name in PAGES], metavar="NAME")
    ap.add_argument("--reruns", type=int, default=30, help="reruns of each kind per page")
    args = ap.parse_args(argv)
    load = [os.getloadavg()[0]]
    rows = measure(args.pages, args.reruns)
    load.append(os.getloadavg()[0])
    print(table(rows))
    print(f"load average (1 min) before / after: {load[0]:.2f} / {load[1]:.2f}")
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "rerun_sections.json").write_text(json.dumps({"machine": machine(), "load_1min": load, "pages": rows},
                                                        indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
