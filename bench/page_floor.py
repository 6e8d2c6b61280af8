"""Each page's rerun time against the framework's floor, and the app's cold start.

    python bench/page_floor.py              # table + bench/results/page_floor.json
    python bench/page_floor.py --reruns 40 --cold-starts 3

Rerun: two real servers in the same run, one ``streamlit run app.py`` and one ``streamlit run
bench/floor_app.py`` (one number input and one line of text: what any Streamlit rerun costs; and
the same page grown with captions to each app page's element count: what Streamlit itself charges for a
page of that size). One
user (a websocket client speaking Streamlit's protocol, as in ``bench/load.py``) opens each page from a
shared link, then changes a widget (the sidebar's TP; the floor's only input) ``--reruns`` times,
alternating two values. A rerun is timed from the ``rerun_script`` request to ``script_finished``:
the server's whole work (script, caches, serialising every element, the websocket), no browser.
The ratio is page median / floor median; the target is 2x. "x same-size" divides by the bare page
grown to the same element count instead: the app's own work, apart from what Streamlit charges for
each element it sends. The captions are the cheapest element Streamlit has, so "x same elements" divides by
a third server, ``bench/floor_replica.py``: every page's own elements without the app. Before the timed
reruns, each page's rerun at each TP value the reruns alternate between is captured from the app
(``bench.element_tree.capture``); the replica re-emits that tree with Streamlit's public calls (the same
widgets, labels, options, values and keys, containers, columns, expanders and tabs, charts, dataframes,
metrics and text), and this script asserts that the replica's tree (every element's and block's kind and
place) equals the page's, printing both counts. ``--budget-replica`` adds the older hand-built Budget
replica (``bench/floor_budget.py``). The load average is printed before and after the reruns.

    python bench/page_floor.py --reruns 30 --cold-starts 0     # every page: x floor, x caption page, x same elements

Cold start: from launching ``streamlit run app.py`` to the Budget page of a shared link fully drawn in
Chromium (three plotly charts on screen, script idle): server import and start, the page's first run
(the app's first imports), the browser's load of the frontend. Chromium is started before the clock.
"""

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import CHROME, CHROME_ARGS, ROOT, machine, server, stats, wait_healthy  # noqa: E402
from bench import element_tree  # noqa: E402
from bench.load import ProtocolUser  # noqa: E402

LINK = "v=1&m=llama-3.1-70b&tp=4&len=32768&conc=16&kvd=fp8"
PAGES = [("", "Budget"), ("model", "Model"), ("paging", "Paging"), ("parallelism", "Parallelism"),
         ("gpus", "GPUs"), ("import", "Import"), ("validate", "Validate")]
REPLICA = "Budget's elements, no app"
TP_VALUES = (2, 4)  # each rerun sets the TP box (the floor's one input) to the next of these
SAME = " replica"  # bench/floor_replica.py: each page's own elements re-emitted, no app code
IMPORT_QUERY = "&cmd=vllm+serve+meta-llama%2FLlama-3.1-70B-Instruct+-tp+4+--max-model-len+32k&ig=H100-SXM"


class _Target:
    """One user on one page (or on the floor app), its widget found, its rerun times collected."""

    def __init__(self, base: str, path: str, query: str, label: str = "TP"):
        self.base, self.path, self.query, self.label = base, path, query, label
        self.times: list[float] = []
        self.elements = self.blocks = 0
        self.tree: list = []  # (kind, delta path) of every element and block of the last rerun

    async def open(self) -> None:
        self.user = ProtocolUser(self.base, "floor")
        first = await self.user.open(self.path, self.query, 60)
        self.open_ms = first["seconds"] * 1000
        self.box = next(el.number_input for k, el in first["elements"]
                        if k == "number_input" and el.number_input.label == self.label)

    async def rerun(self) -> None:
        seen = await self.user.widget(self.box.id, TP_VALUES[len(self.times) % 2], 60)
        assert not [e for k, e in seen["elements"] if k == "exception"], f"exception on /{self.path}"
        self.times.append(seen["seconds"] * 1000)
        self.elements, self.blocks = len(seen["elements"]), seen["blocks"]
        self.tree = element_tree.kinds(element_tree.tree(seen["msgs"]))

    def result(self, warmup: int) -> dict:
        return {"open_ms": round(self.open_ms, 1), "first_rerun_ms": round(self.times[0], 1),
                **stats(self.times[warmup:]), "elements": self.elements, "blocks": self.blocks}


async def _interleaved(targets: dict[str, _Target], n: int, warmup: int = 2) -> dict[str, dict]:
    """``warmup + n`` rounds; each round reruns every target once, in turn, so that the machine's
    drift (a shared 2-core VM: +-30 % over a minute) falls on every target alike."""
    try:
        for t in targets.values():
            await t.open()
        for _ in range(warmup + n):
            for t in targets.values():
                await t.rerun()
    finally:
        for t in targets.values():
            if hasattr(t, "user"):
                await t.user.close()
    return {name: t.result(warmup) for name, t in targets.items()}


async def _capture(base: str, pages: list[tuple[str, str]], out: Path) -> None:
    """Each page's rerun from the running app, the TP box at each value the timed reruns alternate between,
    for bench/floor_replica.py."""
    for path, _ in pages:
        for tp in TP_VALUES:
            msgs = await element_tree.capture(base, path, LINK + (IMPORT_QUERY if path == "import" else ""), tp)
            element_tree.save(msgs, out / element_tree.file_name(element_tree.page_url(msgs), tp))


def rerun_ratios(n: int, only: list[str] | None = None, budget_replica: bool = False) -> dict:
    pages = [(path, name) for path, name in PAGES if not only or name in only]
    captures = Path(tempfile.mkdtemp(prefix="kvplan-replica-"))
    os.environ["KV_REPLICA_DIR"] = str(captures)  # read by bench/floor_replica.py's server (started below)
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, captures, ignore_errors=True)
        (floor_base, fproc, _), (app_base, aproc, _), (same_base, sproc, _) = (
            stack.enter_context(server(s)) for s in (ROOT / "bench" / "floor_app.py", "app.py",
                                                     ROOT / "bench" / "floor_replica.py"))
        up = [(floor_base, fproc), (app_base, aproc), (same_base, sproc)]
        if budget_replica:
            replica_base, rproc, _ = stack.enter_context(server(ROOT / "bench" / "floor_budget.py"))
            up.append((replica_base, rproc))
        for base, proc in up:
            wait_healthy(base, proc)
        def page(path: str, base: str = app_base) -> _Target:
            return _Target(base, path, LINK + (IMPORT_QUERY if path == "import" else ""))

        sizes = asyncio.run(_interleaved({name: page(path) for path, name in pages}, 1))  # warms caches; sizes
        asyncio.run(_capture(app_base, pages, captures))
        targets: dict[str, _Target] = {"floor (one number input)": _Target(floor_base, "", "")}
        for path, name in pages:  # each page beside its own elements without the app
            targets[name] = page(path)
            targets[name + SAME] = page(path, same_base)
        if budget_replica and "Budget" in targets:  # the hand-built Budget replica (bench/floor_budget.py)
            targets[REPLICA] = _Target(replica_base, "", "")
        # the bare page grown with captions to each page's element count: Streamlit's own cost of that size;
        # and to its elements + blocks (each container, row, column, expander or tab is a delta message of
        # its own, as an element is, but the caption floor has none: the second ratio counts them)
        for count in sorted({r["elements"] for r in sizes.values()} |
                            {r["elements"] + r["blocks"] for r in sizes.values()}):
            targets[f"floor grown to {count} elements"] = _Target(floor_base, "", f"n={count}")
        rows = asyncio.run(_interleaved(targets, n))
        for _, name in pages:  # the replica has the page's very tree: the same kinds at the same places
            app, same = targets[name], targets[name + SAME]
            print(f"{name}: page {app.elements} elements + {app.blocks} blocks, replica {same.elements} + "
                  f"{same.blocks}", file=sys.stderr)
            assert app.tree == same.tree, f"{name}: the replica's tree differs from the page's"
    floor = rows["floor (one number input)"]
    grown = {r["elements"]: r for name, r in rows.items() if name.startswith("floor grown")}
    for name, r in rows.items():
        r["ratio"] = round(r["median_ms"] / floor["median_ms"], 1)
        if name in {n for _, n in pages}:  # the grown floor nearest in size (a page's count can move by one)
            same = grown[min(grown, key=lambda count: abs(count - r["elements"]))]
            r["same_size_floor_ms"] = same["median_ms"]
            r["ratio_same_size"] = round(r["median_ms"] / same["median_ms"], 2)
            both = grown[min(grown, key=lambda count: abs(count - r["elements"] - r["blocks"]))]
            r["with_blocks_floor_ms"] = both["median_ms"]
            r["ratio_with_blocks"] = round(r["median_ms"] / both["median_ms"], 2)
    for _, name in pages:
        same = rows[name + SAME]
        rows[name]["same_elements_ms"] = same["median_ms"]
        rows[name]["ratio_same_elements"] = round(rows[name]["median_ms"] / same["median_ms"], 2)
    if REPLICA in rows:
        rows["Budget"]["ratio_replica"] = round(rows["Budget"]["median_ms"] / rows[REPLICA]["median_ms"], 2)
    return rows


def cold_start(runs: int) -> dict:
    """Seconds from launching the server to the shared link's Budget page fully drawn in Chromium."""
    from playwright.sync_api import expect, sync_playwright

    out = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROME, headless=True, args=CHROME_ARGS)
        try:
            for _ in range(runs):
                page = browser.new_page(viewport={"width": 1440, "height": 1100})
                with server() as (base, proc, start):
                    healthy = wait_healthy(base, proc)
                    t_health = time.perf_counter() - start
                    page.goto(f"{base}/?{LINK}")
                    charts = page.get_by_test_id("stPlotlyChart")
                    expect(charts).to_have_count(3, timeout=120_000)
                    for i in range(3):  # each chart drawn (plotly's svg in place)
                        expect(charts.nth(i).locator(".main-svg").first).to_be_attached(timeout=120_000)
                    expect(page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]')).to_have_count(
                        1, timeout=120_000)
                    page.get_by_test_id("stMetric").filter(has_text="KV blocks").wait_for(timeout=120_000)
                    total = time.perf_counter() - start
                    out.append({"server_ready_s": round(t_health, 2), "first_page_s": round(total, 2),
                                "health_wait_s": round(healthy, 2)})
                page.close()
        finally:
            browser.close()
    return {"runs": out, "median_first_page_s": round(statistics.median(r["first_page_s"] for r in out), 2),
            "median_server_ready_s": round(statistics.median(r["server_ready_s"] for r in out), 2)}


def table(rows: dict, cold: dict | None) -> str:
    lines = [f"{'page (rerun after a widget change)':<36} {'elements':>8} {'blocks':>6} {'median ms':>10} "
             f"{'p95 ms':>8} {'first ms':>9} {'x floor':>8} {'same-size floor ms':>19} {'x same-size':>12} "
             f"{'x same-size, blocks counted':>28} {'x same elements':>16}"]
    for name, r in rows.items():
        same = (f"{r['same_size_floor_ms']:>19.1f} {r['ratio_same_size']:>12.2f} {r['ratio_with_blocks']:>28.2f} "
                f"{r['ratio_same_elements']:>16.2f}"
                if "same_size_floor_ms" in r else f"{'':>19} {'':>12} {'':>28}")
        lines.append(f"{name:<36} {r['elements']:>8} {r['blocks']:>6} {r['median_ms']:>10.1f} {r['p95_ms']:>8.1f} "
                     f"{r['first_rerun_ms']:>9.1f} {r['ratio']:>8.1f} {same}")
    if "ratio_replica" in rows.get("Budget", {}):
        lines.append(f"Budget / the same elements without the app (bench/floor_budget.py): "
                     f"{rows['Budget']['ratio_replica']}x")
    if cold:
        lines.append(f"cold start, launch -> Budget page drawn in Chromium: median {cold['median_first_page_s']} s "
                     f"(server answering after {cold['median_server_ready_s']} s), runs: "
                     + ", ".join(f"{r['first_page_s']} s" for r in cold["runs"]))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reruns", type=int, default=30)
    ap.add_argument("--cold-starts", type=int, default=3, help="0 to skip the cold-start measurement")
    ap.add_argument("--pages", nargs="*", metavar="NAME", help="only these pages (e.g. Budget GPUs); default all")
    ap.add_argument("--budget-replica", action="store_true", help="also the hand-built bench/floor_budget.py")
    args = ap.parse_args(argv)
    load = [os.getloadavg()[0]]
    rows = rerun_ratios(args.reruns, args.pages, args.budget_replica)
    load.append(os.getloadavg()[0])
    cold = cold_start(args.cold_starts) if args.cold_starts else None
    print(table(rows, cold))
    print(f"load average (1 min) before / after the reruns: {load[0]:.2f} / {load[1]:.2f}")
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "page_floor.json").write_text(json.dumps({"machine": machine(), "load_1min": load, "reruns": rows,
                                                     "cold_start": cold}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
