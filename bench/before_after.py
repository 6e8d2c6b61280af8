"""Page reruns of an older commit against this checkout, in one interleaved run, beside the caption floor.

    python bench/before_after.py                    # base: the merge-base with main; 40 rounds
    python bench/before_after.py --base c742769 --rounds 60

Three servers at once: ``streamlit run app.py`` of ``--base`` (``git archive`` into a temporary folder, its own
code on its own PYTHONPATH), of this checkout, and ``bench/floor_app.py`` grown with captions to each page's
element count and to its elements + blocks. One protocol user per page and server (``bench.page_floor``'s
``_Target``: the shared Budget link, TP changed between two values); every round reruns every target once, in
turn, so the machine's drift falls on all alike. Medians; "x floor" divides by the floor page of the same
element count, "x fl+bl" by the floor page of the same count of elements and blocks.
"""

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import ROOT, SERVER_FLAGS, free_port, stop, wait_healthy  # noqa: E402
from bench.page_floor import IMPORT_QUERY, LINK, PAGES, _interleaved, _Target  # noqa: E402


def _serve(cwd: Path, script: str = "app.py") -> tuple[str, subprocess.Popen]:
    port = free_port()
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", PYTHONPATH=str(cwd))
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", script, "--server.port", str(port),
                             *SERVER_FLAGS], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                            start_new_session=True)
    return f"http://127.0.0.1:{port}", proc


def compare(base: str, rounds: int, only: list[str] | None = None) -> tuple[dict, dict]:
    pages_run = [(path, name) for path, name in PAGES if not only or name in only]
    with tempfile.TemporaryDirectory(prefix="kvplan-base-") as tmp:
        old = Path(tmp)
        archive = subprocess.run(["git", "archive", base], cwd=ROOT, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        servers = {"before": _serve(old), "after": _serve(ROOT), "floor": _serve(ROOT, "bench/floor_app.py")}
        try:
            for url, proc in servers.values():
                wait_healthy(url, proc)

            def pages() -> dict[str, _Target]:
                return {f"{side} {name}": _Target(servers[side][0], path, LINK + (IMPORT_QUERY if path == "import"
                                                                                    else ""))
                        for path, name in pages_run for side in ("before", "after")}

            sizes = asyncio.run(_interleaved(pages(), 1))  # warms the caches; element and block counts
            counts = {r["elements"] for r in sizes.values()} | {r["elements"] + r["blocks"] for r in sizes.values()}
            targets = pages() | {"floor 2": _Target(servers["floor"][0], "", "")}
            targets |= {f"floor {c}": _Target(servers["floor"][0], "", f"n={c}") for c in sorted(counts)}
            rows = asyncio.run(_interleaved(targets, rounds))
        finally:
            for _, proc in servers.values():
                stop(proc)
    floors = {r["elements"]: r["median_ms"] for k, r in rows.items() if k.startswith("floor")}
    return rows, floors


def table(rows: dict, floors: dict, base: str, rounds: int) -> str:
    def near(count: int) -> float:
        return floors[min(floors, key=lambda c: abs(c - count))]

    out = [f"{rounds} interleaved rounds, base {base}; floor (one number input) {rows['floor 2']['median_ms']:.1f} ms",
           f"{'page':12} {'before: el+bl':>14} {'ms':>6} {'x floor':>7} {'x fl+bl':>7}   "
           f"{'after: el+bl':>13} {'ms':>6} {'x floor':>7} {'x fl+bl':>7}"]
    for name in dict.fromkeys(k.split(" ", 1)[1] for k in rows if k.startswith("before ")):
        cells = []
        for side in ("before", "after"):
            r = rows[f"{side} {name}"]
            cells.append(f"{r['elements']:>10}+{r['blocks']:<3} {r['median_ms']:>6.1f} "
                         f"{r['median_ms'] / near(r['elements']):>7.2f} "
                         f"{r['median_ms'] / near(r['elements'] + r['blocks']):>7.2f}")
        out.append(f"{name:12} {cells[0]}   {cells[1]}")
    out.append("caption floor by element count (ms): " + ", ".join(f"{c}: {m:.1f}" for c, m in sorted(floors.items())))
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default=None, help="the older commit (default: git merge-base HEAD main)")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--pages", nargs="*", metavar="NAME", help="only these pages (e.g. Budget GPUs); default all")
    args = ap.parse_args(argv)
    base = args.base or subprocess.run(["git", "merge-base", "HEAD", "main"], cwd=ROOT, check=True,
                                       capture_output=True, text=True).stdout.strip()
    rows, floors = compare(base, args.rounds, args.pages)
    print(table(rows, floors, base, args.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
