"""CPU time of a page rerun on the server, an older commit against this checkout: a measure that a loaded machine
moves far less than wall time.

    python bench/rerun_cpu.py                          # base: the merge-base with main; Budget and GPUs
    python bench/rerun_cpu.py --base HEAD~1 --pages Budget GPUs Model --batches 10 --per 20

On a 2-core machine shared with other work, a rerun's wall time (``bench/page_floor.py``,
``bench/before_after.py``) moves by +-30 % between runs of the same code: it counts the time the server waited for
a core. The CPU time the server spent does not: each server here records, for every script run, the CPU seconds of
the script thread (``time.thread_time``: the page's Python and Streamlit's per-element work, the sends included)
and of the whole process over the same run (``time.process_time``: the event loop's handling of those messages as
well), beside the run's wall time. Two servers (``--base``, ``git archive`` into a temporary folder, and this
checkout) and a third, ``bench/floor_app.py`` grown with captions to the page's element count (``bench/page_floor.py``'s
caption floor: its definition unchanged, its CPU time read the same way); one protocol user each on the shared
Budget link (``bench.page_floor``'s ``_Target``: TP changed between two values, the floor's one input likewise),
``--batches`` batches of ``--per`` reruns in turn, the order reversed every other batch, so drift falls on all
alike. Medians per page (the first 10 reruns of each user, caches filling, left out); "x floor" is the process CPU
over the floor's. ``--replica`` adds a server of ``bench/floor_replica.py`` fed each page's captured reruns (the
page's own elements without the app, ``bench/page_floor.py``'s same-elements floor; its tree asserted equal to the
page's): "x replica" is the process CPU over the replica's. ``--no-base`` leaves the older commit out:

    python bench/rerun_cpu.py --no-base --replica --pages Budget Model Paging Parallelism GPUs Import Validate \
        --batches 4 --per 15

Writes bench/results/rerun_cpu.json.
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
from bench.page_floor import IMPORT_QUERY, LINK, PAGES, _capture, _Target  # noqa: E402

# Run inside each server process (python -c): Streamlit's script runner, each script run timed three ways.
_TIMED_SERVER = """
import os, sys, time
import streamlit.runtime.scriptrunner.script_runner as sr
_run = sr.exec_func_with_error_handling
def timed(func, ctx):
    w, t, p = time.perf_counter(), time.thread_time(), time.process_time()
    try:
        return _run(func, ctx)
    finally:
        with open(os.environ["KV_RUN_TIMES"], "a") as f:
            f.write(f"{time.perf_counter() - w} {time.thread_time() - t} {time.process_time() - p}\\n")
sr.exec_func_with_error_handling = timed
from streamlit.web.cli import main
sys.argv = ["streamlit", "run", *sys.argv[1:]]
main()
"""


def _serve(cwd: Path, log: Path, script: str = "app.py") -> tuple[str, subprocess.Popen]:
    port = free_port()
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", PYTHONPATH=str(cwd), KV_RUN_TIMES=str(log))
    proc = subprocess.Popen([sys.executable, "-c", _TIMED_SERVER, script, "--server.port", str(port), *SERVER_FLAGS],
                            cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                            start_new_session=True)
    return f"http://127.0.0.1:{port}", proc


async def _measure(targets: dict[str, tuple[_Target, Path]], batches: int, per: int) -> None:
    """Every target opened and warmed (10 reruns, then its server's log emptied), then ``batches`` rounds of
    ``per`` reruns each, in turn, the order reversed every other round."""
    try:
        for t, log in targets.values():
            await t.open()
            for _ in range(10):  # caches filled, the replayed sections recorded
                await t.rerun()
            log.write_text("")
        order = list(targets)
        for b in range(batches):
            for name in (order if b % 2 == 0 else order[::-1]):
                for _ in range(per):
                    await targets[name][0].rerun()
    finally:
        for t, _ in targets.values():
            if hasattr(t, "user"):
                await t.user.close()


def _row(target: _Target, log: Path) -> dict:
    runs = [[float(v) * 1000 for v in line.split()] for line in log.read_text().splitlines()]
    return {"runs": len(runs), "elements": target.elements, "blocks": target.blocks,
            "rerun_wall_ms": round(statistics.median(target.times[10:]), 2),
            **{k: round(statistics.median(r[i] for r in runs), 2)
               for i, k in enumerate(("script_wall_ms", "script_thread_cpu_ms", "process_cpu_ms"))}}


def compare(base: str | None, pages: list[str], batches: int, per: int, replica: bool = False) -> dict:
    """Per page: the base commit (unless ``base`` is None), this checkout, the caption floor (``bench/floor_app.py``)
    grown to the page's element count and, with ``replica``, the page's own elements without the app
    (``bench/floor_replica.py``, fed the page's captured reruns), each its own server (one page at a time, so
    each log holds that page's runs only)."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="kvplan-base-") as tmp:
        sides = (("before",) if base else ()) + ("after", "floor") + (("replica",) if replica else ())
        logs = {side: Path(tmp) / f"{side}.txt" for side in sides}
        servers = {"after": _serve(ROOT, logs["after"]), "floor": _serve(ROOT, logs["floor"], "bench/floor_app.py")}
        if base:
            old = Path(tmp) / "tree"
            old.mkdir()
            archive = subprocess.run(["git", "archive", base], cwd=ROOT, check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
            servers["before"] = _serve(old, logs["before"])
        captures = Path(tmp) / "captures"
        captures.mkdir()
        os.environ["KV_REPLICA_DIR"] = str(captures)  # read by the replica's server
        try:
            wait_healthy(*servers["after"])
            if replica:  # every page's reruns captured from this checkout's app first (the replica reads them once)
                asyncio.run(_capture(servers["after"][0], [(p, n) for p, n in PAGES if n in pages], captures))
                servers["replica"] = _serve(ROOT, logs["replica"], "bench/floor_replica.py")
            for url, proc in servers.values():
                wait_healthy(url, proc)
            for path, name in PAGES:
                if name not in pages:
                    continue
                query = LINK + (IMPORT_QUERY if path == "import" else "")
                probe = _Target(servers["after"][0], path, query)
                asyncio.run(_measure({"probe": (probe, logs["after"])}, 0, 0))  # its element count
                targets = {side: (_Target(servers[side][0], path, query), logs[side])
                           for side in ("before", "after", "replica") if side in servers}
                targets["floor"] = (_Target(servers["floor"][0], "", f"n={probe.elements}"), logs["floor"])
                asyncio.run(_measure(targets, batches, per))
                if "replica" in targets:  # the same kinds at the same places
                    print(f"{name}: page {targets['after'][0].elements} elements + {targets['after'][0].blocks} "
                          f"blocks, replica {targets['replica'][0].elements} + {targets['replica'][0].blocks}",
                          file=sys.stderr)
                    assert targets["after"][0].tree == targets["replica"][0].tree, f"{name}: replica differs"
                for side, (t, log) in targets.items():
                    out[f"{side} {name}"] = _row(t, log)
        finally:
            for _, proc in servers.values():
                stop(proc)
    return out


def table(rows: dict, base: str | None) -> str:
    lines = [f"base {base}: medians per rerun, ms; 'x floor': process CPU / the caption floor's of as many elements; "
             "'x replica': / the same elements without the app (bench/floor_replica.py)",
             (f"{'page':12} {'side':7} {'elements':>8} {'blocks':>6} {'script-thread CPU':>18} {'process CPU':>12} "
              f"{'x floor':>8} {'x replica':>9} {'script wall':>12} {'rerun wall':>11} {'wall x floor':>12} "
              f"{'wall x replica':>14}")]
    for key, r in rows.items():
        side, name = key.split(" ", 1)
        floor, same = rows[f"floor {name}"], rows.get(f"replica {name}")
        ratio = r["process_cpu_ms"] / floor["process_cpu_ms"]
        vs = f"{r['process_cpu_ms'] / same['process_cpu_ms']:>9.2f}" if same else f"{'':>9}"
        wall_vs = f"{r['rerun_wall_ms'] / same['rerun_wall_ms']:>14.2f}" if same else f"{'':>14}"
        lines.append(f"{name:12} {side:7} {r['elements']:>8} {r['blocks']:>6} {r['script_thread_cpu_ms']:>18.2f} "
                     f"{r['process_cpu_ms']:>12.2f} {ratio:>8.2f} {vs} {r['script_wall_ms']:>12.2f} "
                     f"{r['rerun_wall_ms']:>11.2f} {r['rerun_wall_ms'] / floor['rerun_wall_ms']:>12.2f} {wall_vs}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default=None, help="the older commit (default: git merge-base HEAD main)")
    ap.add_argument("--pages", nargs="*", default=["Budget", "GPUs"], metavar="NAME")
    ap.add_argument("--batches", type=int, default=10)
    ap.add_argument("--per", type=int, default=20, help="reruns per batch")
    ap.add_argument("--replica", action="store_true",
                    help="also each page's own elements without the app (bench/floor_replica.py)")
    ap.add_argument("--no-base", action="store_true", help="no older commit (with --replica: page, replica, floor)")
    args = ap.parse_args(argv)
    base = None if args.no_base else (args.base or subprocess.run(
        ["git", "merge-base", "HEAD", "main"], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip())
    load = [os.getloadavg()[0]]
    rows = compare(base, args.pages, args.batches, args.per, args.replica)
    load.append(os.getloadavg()[0])
    print(table(rows, base))
    print(f"load average (1 min) before / after: {load[0]:.2f} / {load[1]:.2f}")
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "rerun_cpu.json").write_text(json.dumps({"base": base, "machine": machine(), "load_1min": load,
                                                    "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
