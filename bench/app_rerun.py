"""Server-side rerun time of the web app after a widget change, for a 70B preset.

Runs app.py in Streamlit's AppTest (the same script runner the server uses, no browser) and times
the script run itself (``kvplan.web.shell.run``: URL state, sidebar, page, page links) after each
widget change. Cache misses are part of the measurement: each change picks a value whose plan is
not cached yet for the first round.

    .venv/bin/python bench/app_rerun.py            # prints a table; exit 1 if a median >= 200 ms
"""

import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

import kvplan.web.shell as shell  # noqa: E402

LIMIT_MS = 200
LINK = {"v": "1", "m": "llama-3.1-70b", "tp": "4", "len": "32768", "conc": "16"}
# page, widget key, values to cycle through
CASES = [
    ("pages/budget.py", "w.tensor_parallel_size", [8, 2, 4, 8, 2, 4, 8, 2]),
    ("pages/budget.py", "w.concurrency", [8, 24, 32, 64, 8, 24, 32, 64]),
    ("pages/budget.py", "w.max_model_len", [8192, 16384, 65536, 131072, 8192, 16384, 65536, 131072]),
    ("pages/parallelism.py", "w.tensor_parallel_size", [8, 2, 4, 8, 2, 4]),
    ("pages/paging.py", "w.shared_prefix", [16, 32, 48, 0, 16, 32]),
    ("pages/model.py", "w.kv_cache_dtype", ["fp8", "auto", "fp8", "auto"]),
    # default prices, the Pareto chart drawn; TP is not an input of the sweep (the picker's result is reused), the
    # concurrency is (its first round sweeps ~280 plans for each new value)
    ("pages/gpus.py", "w.tensor_parallel_size", [8, 2, 4, 8, 2, 4]),
    ("pages/gpus.py", "w.concurrency", [8, 24, 32, 64, 8, 24, 32, 64]),
]


def main() -> int:
    times: list[float] = []
    original = shell.run

    def timed(pages):
        start = time.perf_counter()
        try:
            original(pages)
        finally:
            times.append(time.perf_counter() - start)

    shell.run = timed
    results = []
    for page, key, values in CASES:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.query_params.update(LINK)
        at.run()
        at.switch_page(page).run()
        times.clear()
        for value in values:
            widget = at.number_input(key=key) if key != "w.kv_cache_dtype" else at.selectbox(key=key)
            (widget.set_value(value) if key != "w.kv_cache_dtype" else widget.select(value)).run()
            assert not at.exception, at.exception
        ms = [t * 1000 for t in times]
        results.append({"page": page, "widget": key, "runs": len(ms), "median_ms": round(statistics.median(ms), 1),
                        "max_ms": round(max(ms), 1), "first_ms": round(ms[0], 1)})
    shell.run = original
    print(f"{'page':<22} {'widget':<26} {'runs':>4} {'median ms':>10} {'max ms':>8} {'first ms':>9}")
    for r in results:
        print(f"{r['page']:<22} {r['widget']:<26} {r['runs']:>4} {r['median_ms']:>10} {r['max_ms']:>8} "
              f"{r['first_ms']:>9}")
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "app_rerun.json").write_text(json.dumps(results, indent=2))
    worst = max(r["median_ms"] for r in results)
    print(f"worst median {worst} ms (limit {LIMIT_MS} ms)")
    return 0 if worst < LIMIT_MS else 1


if __name__ == "__main__":
    sys.exit(main())
