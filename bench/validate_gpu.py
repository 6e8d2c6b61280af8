#!/usr/bin/env python
"""Predicted vs measured on a GPU host: a sweep of presets, each sized to fill the GPU.

    python bench/validate_gpu.py                       # default sweep, fills ~70% of free memory
    python bench/validate_gpu.py --presets llama-3.1-8b,qwen3-30b-a3b --tokens 2048 --steps 64
    python bench/validate_gpu.py --dry-run --free-gib 139   # only the plan: copies and batch sizes

For each preset: the largest copy (all layers when they fit, else fewer layers, as the Validate page
does) and the largest batch whose predicted peak, with the safety margin, fits in ``--fill`` of free
memory; then one ``kvplan.validate.run_validation`` run, and a row of the table:

    weights and KV bytes (predicted = measured, exactly), paged blocks, peak memory (error %),
    decode time per step vs the bandwidth roofline, tokens/s, prefill time vs the compute bound,
    logits error of the cache check.

``--json PATH`` also writes every run's full result. Runs one preset at a time; memory is released
between runs. On a CPU host it runs too (tiny budgets), but the point is the GPU.
"""

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kvplan.errors import KvplanError  # noqa: E402
from kvplan.presets import load_preset  # noqa: E402
from kvplan.units import GiB, format_bytes  # noqa: E402
from kvplan.validate.measure import LIMITS, choose_copy, needed_with_margin, pick_dtype, predict  # noqa: E402

DEFAULT = ("llama-3.2-1b", "qwen3-0.6b", "llama-3.1-8b", "qwen3-8b", "phi-3-mini-4k-instruct", "gemma-2-9b",
           "mixtral-8x7b", "qwen3-30b-a3b", "gpt-oss-20b", "llama-3.1-70b", "deepseek-v3", "nemotron-h-56b",
           "qwen3-next-80b-a3b")


def plan_one(name: str, free: int, fill: float, tokens: int, steps: int, block_size: int, device_type: str) -> dict:
    """Copy and batch for one preset so that the predicted peak (+ margin) fills ``fill`` x free."""
    spec = load_preset(name)
    fmt = pick_dtype(spec, "auto", device_type)
    budget = int(free * fill)
    shape = dict(tokens=tokens, steps=steps, block_size=block_size, shared_prefix=0, device_type=device_type)
    run, red, pred = choose_copy(spec, fmt, budget, layers=None, experts=None, vocab=None, reduce="auto",
                                 batch=1, **shape)
    lo, hi, best = 1, LIMITS["batch"], 1
    while lo <= hi:  # the largest batch that still fits with this copy
        mid = (lo + hi) // 2
        if needed_with_margin(predict(run, fmt, batch=mid, **shape)["peak_run_bytes"]) <= budget:
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    pred = predict(run, fmt, batch=best, **shape)
    return dict(name=name, dtype=fmt, batch=best, reduction=red, predicted_peak=pred["peak_run_bytes"],
                layers=red.layers_run if red.reduced else None,
                experts=red.experts_run if red.experts_run != red.experts_full else None,
                vocab=red.vocab_run if red.vocab_run != red.vocab_full else None)


def ms(x) -> str:
    return "-" if x is None else f"{x * 1e3:9.2f}"


def row(plan: dict, r: dict) -> str:
    p, m = r["predicted"], r["measured"]
    eq = lambda a, b: "=" if a == b else "!"  # noqa: E731
    peak_err = (100 * (m["peak_decode_bytes"] - p["peak_decode_bytes"]) / p["peak_decode_bytes"]
                if m.get("peak_decode_bytes") and p.get("peak_decode_bytes") else None)
    eff = (p["decode_s_per_step"] / m["decode_s_per_step"]
           if p.get("decode_s_per_step") and m.get("decode_s_per_step") else None)
    blocks = r["paged"]["final_measured"]["allocated_blocks"] if r.get("paged") else "-"
    return (f"{plan['name']:<24} {r['reduction']['layers_run']:>3}/{r['reduction']['layers_full']:<3} {r['batch']:>5} "
            f"{format_bytes(m['weight_bytes']):>10} {eq(p['weight_bytes'], m['weight_bytes'])} "
            f"{format_bytes(m['kv_bytes']):>10} {eq(p['kv_bytes'], m['kv_bytes'])} {blocks:>7} "
            f"{format_bytes(m['peak_decode_bytes'] or 0):>10} {'' if peak_err is None else f'{peak_err:+.1f}%':>7} "
            f"{ms(m['decode_s_per_step'])} {ms(p.get('decode_s_per_step'))} {'' if eff is None else f'{eff:.0%}':>5} "
            f"{(m['tokens_per_s'] or 0):>9.0f} {ms(m['prefill_s'])} {ms(p.get('prefill_s'))} "
            f"{(r['logits_rel_err'] or 0):8.1e} {'ok' if r['ok'] else 'DIFF'}")


HEADER = (f"{'preset':<24} {'layers':>7} {'batch':>5} {'weights':>10}   {'KV':>10}   {'blocks':>7} "
          f"{'peak':>10} {'err':>7} {'dec ms':>9} {'roof ms':>9} {'eff':>5} {'tok/s':>9} {'pre ms':>9} "
          f"{'bound ms':>9} {'logit err':>8} ok")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", default=",".join(DEFAULT))
    ap.add_argument("--tokens", type=int, default=1024, help="prompt tokens per sequence")
    ap.add_argument("--steps", type=int, default=32, help="decode steps")
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--fill", type=float, default=0.7, help="fraction of free memory the predicted peak may use")
    ap.add_argument("--free-gib", type=float, default=None, help="pretend this much is free (dry runs)")
    ap.add_argument("--dry-run", action="store_true", help="print the plan only; allocate nothing")
    ap.add_argument("--json", default=None, help="write every run's full result here")
    args = ap.parse_args(argv)

    if args.free_gib is not None:
        free, device_type = int(args.free_gib * GiB), "cuda"
    else:
        import torch

        if torch.cuda.is_available():
            free, device_type = torch.cuda.mem_get_info()[0], "cuda"
            print(f"# {torch.cuda.get_device_name()}: {format_bytes(free)} free")
        else:
            from kvplan.validate.memory import cpu_available_bytes

            free, device_type = cpu_available_bytes(), "cpu"
            print(f"# no GPU: CPU run, {format_bytes(free)} available (GPU timings not available)")
    plans = []
    for name in [n.strip() for n in args.presets.split(",") if n.strip()]:
        try:
            plans.append(plan_one(name, free, args.fill, args.tokens, args.steps, args.block_size, device_type))
        except KvplanError as exc:
            print(f"{name:<24} skipped: {exc}")
    print(f"# plan: {args.tokens} prompt tokens + {args.steps} decode steps, fill {args.fill:.0%} of "
          f"{format_bytes(free)}")
    for pl in plans:
        print(f"{pl['name']:<24} {pl['dtype']:<5} batch {pl['batch']:>4}  {pl['reduction'].describe():<60} "
              f"predicted peak {format_bytes(pl['predicted_peak'])}")
    if args.dry_run:
        return 0

    from kvplan.validate.measure import run_validation

    print(HEADER)
    results = []
    for pl in plans:
        t0 = time.time()
        try:
            r = run_validation(pl["name"], tokens=args.tokens, steps=args.steps, batch=pl["batch"],
                               block_size=args.block_size, layers=pl["layers"], experts=pl["experts"],
                               vocab=pl["vocab"])
        except KvplanError as exc:
            print(f"{pl['name']:<24} refused: {exc}")
            continue
        results.append(r)
        print(row(pl, r), f"({time.time() - t0:.0f} s)", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
