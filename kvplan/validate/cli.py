"""``python -m kvplan validate``: registered here; torch is imported only when it runs.

    python -m kvplan validate llama-3.2-1b --tokens 512 --steps 64 --json
    python -m kvplan validate path/to/config.json --layers 2
    python -m kvplan validate path/to/checkpoint_dir          # a local HF model (transformers)

The JSON carries ``predicted`` and ``measured`` (each with ``weight_bytes`` and ``kv_bytes``),
``logits_max_abs_err``, ``device``, the table (``rows``), per-step figures and notes.
Exit status: 0 when every exact figure matched and the logits check passed, 1 when the run
completed but something differed, 2 for bad input or a refused run (``error: ...``).
"""

import json
import sys

from kvplan.units import format_value


def add_commands(sub) -> None:
    p = sub.add_parser("validate", help="run a real cached decode here and put measured beside predicted")
    p.add_argument("model", help="preset name, path to a config.json, or a local Hugging Face checkpoint directory")
    p.add_argument("--tokens", type=int, default=128, help="prompt tokens per sequence (prefill)")
    p.add_argument("--steps", type=int, default=8, help="decode steps after the prefill")
    p.add_argument("--batch", type=int, default=1, help="sequences decoded together")
    p.add_argument("--dtype", default="auto", help="auto (bf16 on a GPU, fp32 on a CPU), fp32, bf16, fp16")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    p.add_argument("--block-size", type=int, default=16, help="paged cache block size in tokens")
    p.add_argument("--shared-prefix", type=int, default=0, 
                   help="prompt tokens every sequence shares (paged blocks shared)")
    p.add_argument("--layers", type=int, default=None, help="run a reduced copy with this many layers")
    p.add_argument("--experts", type=int, default=None, 
                   help="reduced copy: at most this many routed experts per MoE layer")
    p.add_argument("--vocab", type=int, default=None, help="reduced copy: vocabulary rows")
    p.add_argument("--no-reduce", action="store_true", 
                   help="refuse instead of running a reduced copy when the model does not fit")
    p.add_argument("--no-paged", action="store_true", help="skip the paged-cache pass")
    p.add_argument("--no-check", action="store_true", help="skip the logits correctness check")
    p.add_argument("--bandwidth", type=float, default=None, 
                   help="memory bandwidth in TB/s for the roofline (default: the GPU catalog's)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_validate)


def cmd_validate(args) -> None:
    from kvplan.validate.hf_local import is_hf_dir, run_hf_validation
    from kvplan.validate.measure import run_validation

    def progress(fraction: float, text: str) -> None:
        if not args.json and sys.stderr.isatty():
            print(f"\r[{fraction:4.0%}] {text[:70]:<70}", end="", file=sys.stderr, flush=True)

    if is_hf_dir(args.model):
        result = run_hf_validation(args.model, tokens=args.tokens, steps=args.steps, batch=args.batch, dtype=args.dtype,
                                   device=args.device, seed=args.seed, check=not args.no_check, progress=progress)
    else:
        result = run_validation(
            args.model, tokens=args.tokens, steps=args.steps, batch=args.batch, dtype=args.dtype, device=args.device,
            block_size=args.block_size, shared_prefix=args.shared_prefix, layers=args.layers, experts=args.experts,
            vocab=args.vocab, reduce="never" if args.no_reduce else "auto", paged=not args.no_paged,
            check=not args.no_check, seed=args.seed, bandwidth_tb_s=args.bandwidth, progress=progress)
    if not args.json and sys.stderr.isatty():
        print(file=sys.stderr)
    if args.json:
        print(json.dumps(result, indent=2, default=str))
    else:
        print("\n".join(text_report(result)))
    if not result["ok"]:
        sys.exit(1)


def text_report(r: dict) -> list[str]:
    red = r.get("reduction", {}).get("description", "")
    lines = [f"{r['model']} ({r['model_type']}) on {r['device']}, {r['dtype']}, batch {r['batch']}, "
             f"{r['prompt_tokens']} prompt tokens + {r['decode_steps']} decode steps; {red}"]
    lines.append(f"  {'quantity':<46} {'predicted':>30} {'measured':>30}  check")
    for row in r["rows"]:
        if row["ok"] is None:
            mark = ""
        elif row["exact"]:
            mark = "equal" if row["ok"] else "DIFFERS"
        else:
            mark = "pass" if row["ok"] else "FAIL"
        if row["ok"] is None and row.get("error_pct") is not None:
            mark = f"{row['error_pct']:+.1f}%"
        lines.append(f"  {row['quantity'][:46]:<46} {format_value(row['predicted'], row['unit']):>30} "
                     f"{format_value(row['measured'], row['unit']):>30}  {mark}")
    if r.get("logits_max_abs_err") is not None:
        lines.append(f"  logits: max abs error {r['logits_max_abs_err']:.3g}, relative {r['logits_rel_err']:.3g} "
                     f"(tolerance {r['logits_tolerance']:g}) -> {'pass' if r['logits_ok'] else 'FAIL'}")
    lines += [f"  note: {n}" for n in r.get("notes", [])]
    verdict = "every exact figure equal, logits check passed" if r["ok"] else "MISMATCH (see above)"
    lines.append("  result: " + verdict)
    return lines
