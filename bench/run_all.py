"""Every benchmark, one command, one combined table. Not part of CI's pass/fail.

    python bench/run_all.py                 # all; writes bench/results/*.json and bench/results/all.json
    python bench/run_all.py --quick         # shorter runs (fewer reruns, one cold start, 20 s of load)
    python bench/run_all.py --only core,load

Runs, each in its own process (so one's imports and caches do not flatter the next):

- ``core``      bench/core.py: plan(), the GPU picker, preset parsing, paging
- ``rerun``     bench/app_rerun.py: script time of a rerun after a widget change (AppTest), per page
- ``floor``     bench/page_floor.py: each page's rerun against a bare one-widget page (ratio), a caption page as large
                and its own elements without the app (bench/floor_replica.py), cold start
- ``sections``  bench/rerun_sections.py: each page's rerun split into the script's sections (sidebar, page, ...),
                beside the caption floor's script, for reruns replayed from the cache and for fresh plans
- ``load``      bench/load.py: 20 users at once (protocol clients + Chromium tabs)
- ``gpu``       bench/validate_gpu.py: predicted vs measured on a GPU; skipped when torch sees no GPU

A bench that fails is reported in the table and the rest still run.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def _benches(quick: bool) -> dict[str, list[str]]:
    return {
        "core": ["bench/core.py"],
        "rerun": ["bench/app_rerun.py"],
        "floor": ["bench/page_floor.py", "--reruns", "12" if quick else "30", "--cold-starts", "1" if quick else "3"],
        "sections": ["bench/rerun_sections.py", "--reruns", "12" if quick else "30"],
        "load": ["bench/load.py", "--duration", "20" if quick else "45"],
        "gpu": ["bench/validate_gpu.py", "--json", str(RESULTS / "validate_gpu.json")],
    }


def has_gpu() -> bool:
    code = "import torch; print(torch.cuda.is_available())"
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.stdout.strip() == "True"


def rows_for(name: str) -> list[tuple[str, str]]:
    """(measure, value) rows for the combined table, read back from the bench's JSON."""
    def load(file: str):
        path = RESULTS / file
        return json.loads(path.read_text()) if path.is_file() else None

    out: list[tuple[str, str]] = []
    if name == "core" and (d := load("core.json")):
        out += [(k, f"{v['median_ms']:.3f} ms (p95 {v['p95_ms']:.3f})") for k, v in d["results"].items()]
    elif name == "rerun" and (d := load("app_rerun.json")):
        out += [(f"{r['page']} after {r['widget']}", f"{r['median_ms']} ms (max {r['max_ms']})") for r in d]
    elif name == "floor" and (d := load("page_floor.json")):
        for page, r in d["reruns"].items():
            same = f", {r['ratio_same_size']}x a bare page as large" if "ratio_same_size" in r else ""
            if "ratio_same_elements" in r:
                same += f", {r['ratio_same_elements']}x its own elements without the app"
            out.append((f"rerun, {page}", f"{r['median_ms']} ms (p95 {r['p95_ms']}), {r['ratio']}x floor{same}"))
        if d.get("cold_start"):
            c = d["cold_start"]
            out.append(("cold start: launch -> Budget drawn in Chromium",
                        f"{c['median_first_page_s']} s (server answers after {c['median_server_ready_s']} s)"))
    elif name == "sections" and (d := load("rerun_sections.json")):
        for page, r in d["pages"].items():
            for kind in ("cached", "fresh"):
                s = r[kind]
                parts = ", ".join(f"{k} {v}" for k, v in s["sections_cpu_ms"].items())
                out.append((f"rerun sections, {page} ({kind})",
                            f"script CPU {s['script_cpu_ms']} ms ({parts}); caption floor {r['floor']['script_cpu_ms']}"))
    elif name == "load" and (d := load("load.json")):
        head = f"{d['sessions']} protocol users + {d['browsers']} tabs"
        for who in ("protocol", "browser"):
            for key in ("open", "reruns"):
                r = d[who][key]
                if r["n"]:
                    out.append((f"{head}: {who} {'open' if key == 'open' else 'rerun'}",
                                f"median {r['median_ms']:.0f} ms, p95 {r['p95_ms']:.0f} ms (n={r['n']})"))
        out.append((f"{head}: errors", f"{len(d['errors'])} in {d['steps']} steps / {d['wall_s']} s"))
    elif name == "gpu" and (d := load("validate_gpu.json")):
        out.append(("validated runs", f"{len(d)}, all ok: {all(r.get('ok') for r in d)}"))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated: core,rerun,floor,sections,load,gpu")
    args = ap.parse_args(argv)
    benches = _benches(args.quick)
    chosen = [b.strip() for b in args.only.split(",") if b.strip()] or list(benches)
    RESULTS.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), HF_HUB_OFFLINE="1")
    status: dict[str, str] = {}
    for name in chosen:
        if name == "gpu" and not has_gpu():
            status[name] = "skipped (no GPU)"
            continue
        start = time.perf_counter()
        print(f"== {name}: {' '.join(benches[name])}", flush=True)
        proc = subprocess.run([sys.executable, *benches[name]], cwd=ROOT, env=env)
        took = time.perf_counter() - start
        status[name] = f"{'ok' if proc.returncode == 0 else f'exit {proc.returncode}'} ({took:.0f} s)"
    print()
    width = 58
    print(f"{'bench':<6} {'measure':<{width}} value")
    combined = {}
    for name in chosen:
        print(f"{name:<6} {'(run)':<{width}} {status[name]}")
        rows = rows_for(name) if not status[name].startswith("skipped") else []
        combined[name] = {"status": status[name], "rows": dict(rows)}
        for measure, value in rows:
            print(f"{'':<6} {measure[:width]:<{width}} {value}")
    (RESULTS / "all.json").write_text(json.dumps(combined, indent=2))
    return 0 if all(s.startswith(("ok", "skipped")) for s in status.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
