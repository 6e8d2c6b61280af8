"""Each page's rerun time against the framework's floor, and the app's cold start.

    python bench/page_floor.py              # table + bench/results/page_floor.json
    python bench/page_floor.py --reruns 40 --cold-starts 3

Rerun: two real servers in the same run, one ``streamlit run app.py`` and one ``streamlit run
bench/floor_app.py`` (one number input and one line of text: what any Streamlit rerun costs). One
user (a websocket client speaking Streamlit's protocol, as in ``bench/load.py``) opens each page from a
shared link, then changes a widget (the sidebar's TP; the floor's only input) ``--reruns`` times,
alternating two values. A rerun is timed from the ``rerun_script`` request to ``script_finished``:
the server's whole work (script, caches, serialising every element, the websocket), no browser.
The ratio is page median / floor median; the target is 2x.

Cold start: from launching ``streamlit run app.py`` to the Budget page of a shared link fully drawn in
Chromium (three plotly charts on screen, script idle): server import and start, the page's first run
(the app's first imports), the browser's load of the frontend. Chromium is started before the clock.
"""

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import CHROME, CHROME_ARGS, ROOT, machine, server, stats, wait_healthy  # noqa: E402
from bench.load import ProtocolUser  # noqa: E402

LINK = "v=1&m=llama-3.1-70b&tp=4&len=32768&conc=16&kvd=fp8"
PAGES = [("", "Budget"), ("model", "Model"), ("paging", "Paging"), ("parallelism", "Parallelism"),
         ("gpus", "GPUs"), ("import", "Import"), ("validate", "Validate")]
IMPORT_QUERY = "&cmd=vllm+serve+meta-llama%2FLlama-3.1-70B-Instruct+-tp+4+--max-model-len+32k"


async def _reruns(base: str, path: str, query: str, label: str, n: int) -> dict:
    user = ProtocolUser(base, "floor")
    try:
        first = await user.open(path, query, 60)
        box = next(el.number_input for k, el in first["elements"]
                   if k == "number_input" and el.number_input.label == label)
        times = []
        for i in range(n):
            seen = await user.widget(box.id, (2, 4)[i % 2], 60)
            assert not [e for k, e in seen["elements"] if k == "exception"], f"exception on /{path}"
            times.append(seen["seconds"] * 1000)
        return {"open_ms": round(first["seconds"] * 1000, 1), "first_rerun_ms": round(times[0], 1),
                **stats(times[2:] or times), "elements": len(seen["elements"])}
    finally:
        await user.close()


def rerun_ratios(n: int) -> dict:
    with server(ROOT / "bench" / "floor_app.py") as (floor_base, fproc, _), server() as (app_base, aproc, _):
        wait_healthy(floor_base, fproc)
        wait_healthy(app_base, aproc)
        for path, _ in PAGES:  # warm the app's imports and caches once, as a running server has them
            asyncio.run(_reruns(app_base, path, LINK, "TP", 2))
        asyncio.run(_reruns(floor_base, "", "", "TP", 2))
        floor = asyncio.run(_reruns(floor_base, "", "", "TP", n))
        rows = {"floor (one number input)": floor}
        for path, name in PAGES:
            query = LINK + (IMPORT_QUERY if path == "import" else "")
            rows[name] = asyncio.run(_reruns(app_base, path, query, "TP", n))
    for name, r in rows.items():
        r["ratio"] = round(r["median_ms"] / floor["median_ms"], 1)
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
    lines = [f"{'page (rerun after a widget change)':<36} {'elements':>8} {'median ms':>10} {'p95 ms':>8} "
             f"{'first ms':>9} {'x floor':>8}"]
    for name, r in rows.items():
        lines.append(f"{name:<36} {r['elements']:>8} {r['median_ms']:>10.1f} {r['p95_ms']:>8.1f} "
                     f"{r['first_rerun_ms']:>9.1f} {r['ratio']:>8.1f}")
    if cold:
        lines.append(f"cold start, launch -> Budget page drawn in Chromium: median {cold['median_first_page_s']} s "
                     f"(server answering after {cold['median_server_ready_s']} s), runs: "
                     + ", ".join(f"{r['first_page_s']} s" for r in cold["runs"]))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reruns", type=int, default=30)
    ap.add_argument("--cold-starts", type=int, default=3, help="0 to skip the cold-start measurement")
    args = ap.parse_args(argv)
    rows = rerun_ratios(args.reruns)
    cold = cold_start(args.cold_starts) if args.cold_starts else None
    print(table(rows, cold))
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "page_floor.json").write_text(json.dumps({"machine": machine(), "reruns": rows, "cold_start": cold},
                                                    indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
