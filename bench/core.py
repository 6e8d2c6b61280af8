"""Core planner timings: one plan, the GPU picker sweep, parsing every preset, paging 100k lengths.

    python bench/core.py            # prints a table, writes bench/results/core.json

Targets (issue: hardening and speed): one plan well under 1 ms; the picker over the whole catalog
x TP 1-8 x PP 1-4 x several lengths under 100 ms (single-node layouts, the GPUs page's default: a
replica of more GPUs than a node holds is refused before it is planned, as are layouts whose weights
alone pass the device); 100,000 lengths paged under 50 ms. Not run by
CI's pass/fail.
"""

import json
import platform
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kvplan import load_preset, parse_config, preset_config, preset_names  # noqa: E402
from kvplan.engines import EngineConfig  # noqa: E402
from kvplan.gpus import GPU_CATALOG, get_gpu  # noqa: E402
from kvplan.paging import page_sequences  # noqa: E402
from kvplan.parallel import Layout  # noqa: E402
from kvplan.picker import pick_gpus  # noqa: E402
from kvplan.hf_config import load_config_text  # noqa: E402
from kvplan.plan import plan  # noqa: E402
from kvplan.quantization import read_quantization_config  # noqa: E402


# The picker's layouts: TP 1, 2, 4, 8 and PP 1, 2, 4 (kvplan.picker.TP_CHOICES, PP_CHOICES); the sweep
# asks for each of several context lengths, as the GPUs page does when the context changes.
SWEEP_LENGTHS = (8192, 32768, 131072)


MINIMAX_M3 = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "configs" / "minimax-m3-nvfp4.json"

def timed(fn, repeat: int) -> dict:
    fn()  # warm: caches, imports
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - t) * 1000)
    return {"median_ms": statistics.median(runs), "p95_ms": sorted(runs)[int(0.95 * (len(runs) - 1))], "runs": repeat}


def main() -> None:
    spec = load_preset("llama-3.1-70b")
    h100 = get_gpu("H100-SXM")
    engine = EngineConfig(max_model_len=32768)
    rng = random.Random(0)
    rows = {
        "plan() llama-3.1-70b TP4": timed(lambda: plan(spec, h100, engine, Layout(tp=4)), 300),
        "plan() deepseek-v3 TP8 (fresh spec: nothing memoized)": timed(
            lambda: plan(parse_config(preset_config("deepseek-v3")), get_gpu("H200"), engine, Layout(tp=8)), 20),
        f"picker: {len(GPU_CATALOG)} GPUs x TP 1-8 x PP 1-4, single-node": timed(
            lambda: pick_gpus(spec, 32768, 16), 10),
        f"picker: {len(GPU_CATALOG)} GPUs x TP 1-8 x PP 1-4, multi-node on": timed(
            lambda: pick_gpus(spec, 32768, 16, multi_node=True), 10),
        f"picker sweep: {len(GPU_CATALOG)} GPUs x TP 1-8 x PP 1-4 x {len(SWEEP_LENGTHS)} lengths": timed(
            lambda: [pick_gpus(spec, n, 16) for n in SWEEP_LENGTHS], 10),
        f"parse all {len(preset_names())} presets": timed(lambda: [parse_config(preset_config(n)) for n in preset_names()], 5),
        # the real 3 MB MiniMax-M3 NVFP4 config (22,422 quantized_layers): load + read its quantization scheme
        # (tests/test_real_files.py checks the result; its old < 1 s CPU assert failed once under a loaded suite)
        "load + read the 3 MB MiniMax-M3 quantization config": timed(lambda: read_quantization_config(
            load_config_text(MINIMAX_M3.read_bytes())["quantization_config"]), 5),
    }
    for n in (1_000, 10_000, 100_000):
        lengths = [rng.randint(1, 32768) for _ in range(n)]
        rows[f"paging {n:,} lengths"] = timed(lambda lengths=lengths: page_sequences(lengths, 16, 0), 10)
    for gpus in (5, 10, len(GPU_CATALOG)):
        subset = list(GPU_CATALOG.values())[:gpus]
        rows[f"picker over {gpus} GPUs"] = timed(lambda subset=subset: pick_gpus(spec, 32768, 16, gpus=subset), 5)
    print(f"{'benchmark':<58} {'median ms':>10} {'p95 ms':>9}")
    for name, r in rows.items():
        print(f"{name:<58} {r['median_ms']:>10.3f} {r['p95_ms']:>9.3f}")
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    machine = {"python": platform.python_version(), "machine": platform.machine(), "processor": platform.processor()}
    (out / "core.json").write_text(json.dumps({"machine": machine, "results": rows}, indent=2))


if __name__ == "__main__":
    main()
