"""``python -m kvplan``: the planner from a terminal. Flags follow vLLM's names.

Every failure prints ``error: <field>: <message>`` on stderr and exits 2; never a traceback.
"""

import argparse
import json
import sys
from collections.abc import Sequence

from kvplan.errors import KvplanError
from kvplan.units import counted, format_bytes


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's own errors: same shape as ours
        self.exit(2, f"error: {message}\n(usage: {self.format_usage().strip()[7:]})\n")


def int_list(text: str) -> list[int]:
    """argparse type for '5,3,8'."""
    try:
        return [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def _emit(args, payload: dict, lines: list[str]) -> None:
    if args.json:
        print(json.dumps(payload, indent=2))
    else:
        print("\n".join(lines))


def cmd_presets(args) -> None:
    from kvplan.presets import manifest

    rows = [dict(name=e["name"], hf_repo=e.get("hf_repo"), family=e.get("family")) for e in manifest()]
    _emit(args, {"presets": rows}, [f"{r['name']:<28} {r['family']:<14} {r['hf_repo']}" for r in rows])


def cmd_params(args) -> None:
    from kvplan.params import count_params
    from kvplan.presets import resolve_model
    from kvplan.weights import weight_bytes

    spec = resolve_model(args.model)
    p = count_params(spec)
    w = weight_bytes(spec, args.weight_format)
    payload = {
        "model": spec.name, "model_type": spec.model_type,
        "total_params": p.total_params, "active_params": p.active_params, "components": p.components,
        "weight_format": w.format, "weight_bytes": w.total_bytes, "weight_bytes_by_component": w.components,
        "bytes_per_param": w.bytes_per_param,
        "assumptions": list(spec.assumptions), "warnings": list(spec.warnings), "skipped": list(spec.skipped),
        "tower_params": p.tower_params, "mtp_params": p.mtp_params,
    }
    lines = [f"{spec.name} ({spec.model_type})", f"  total params  {p.total_params:,}", f"  active params {p.active_params:,}"]
    lines += [f"    {k:<11} {v:,}" for k, v in p.components.items() if v]
    if p.tower_params:  # outside the totals: loaded by vLLM unless --language-model-only
        lines.append(f"  vision tower  {p.tower_params:,} ({', '.join(t.name for t in spec.towers)}; not in the total)")
    if p.mtp_params:
        lines.append(f"  MTP layers    {p.mtp_params:,} (loaded for MTP speculative decoding; not in the total)")
    lines += [f"  weights ({w.format}) {w.total_bytes:,} B = {format_bytes(w.total_bytes)} ({w.bytes_per_param:.4f} B/param)"]
    lines += [f"  note: {a}" for a in spec.assumptions] + [f"  warning: {a}" for a in spec.warnings]
    _emit(args, payload, lines)


def cmd_kv(args) -> None:
    from kvplan.kv import kv_cache_bytes
    from kvplan.presets import resolve_model

    spec = resolve_model(args.model)
    lengths = args.lengths if args.lengths else [args.tokens] * args.batch
    kv = kv_cache_bytes(spec, lengths, args.kv_dtype, args.convention, args.tensor_parallel_size)
    payload = {"model": spec.name, "kv_bytes": kv.kv_bytes, "convention": kv.convention,
               "kv_cache_dtype": args.kv_dtype, **kv.model_dump(exclude={"kv_bytes", "convention"})}
    lines = [f"{spec.name}: {counted(kv.num_sequences, 'sequence')}, {kv.total_tokens:,} tokens, convention {kv.convention}",
             f"  KV cache {kv.kv_bytes:,} B = {format_bytes(kv.kv_bytes)}",
             f"  per token (all attention layers) {kv.kv_bytes_per_token:,} B"]
    lines += [f"    {k:<18} {kv.layers_by_kind.get(k, 0):>3} layers  {v:,} B" for k, v in kv.by_kind.items()]
    _emit(args, payload, lines)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m kvplan", description="GPU memory and KV-cache planner for LLM inference.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("presets", help="list the built-in models")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_presets)

    p = sub.add_parser("params", help="exact parameter count and weight bytes")
    p.add_argument("model", help="preset name or path to a config.json")
    p.add_argument("--weight-format", default=None, help="fp32, bf16, fp16, fp8, fp8-block, int8, int4-gN, mxfp4, nvfp4 (default: as the checkpoint ships)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_params)

    p = sub.add_parser("kv", help="KV-cache bytes for a workload")
    p.add_argument("model")
    p.add_argument("--tokens", type=int, default=4096, help="tokens per sequence (prompt + generated)")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--lengths", type=int_list, default=None, help="unequal lengths, e.g. 5,3,8 (overrides --tokens/--batch)")
    p.add_argument("--kv-dtype", "--kv-cache-dtype", dest="kv_dtype", default="auto")
    p.add_argument("--convention", choices=("vllm", "transformers"), default="vllm")
    p.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_kv)

    from kvplan import cli_plan
    from kvplan.validate import cli as validate_cli  # registers flags only; torch loads when it runs

    cli_plan.add_commands(sub)
    validate_cli.add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        _check_counts(args)
        args.func(args)
    except KvplanError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug, still no traceback for the user
        print(f"error: internal: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


def _check_counts(args) -> None:
    from kvplan.errors import PlanInputError

    for flag in ("tokens", "batch", "tensor_parallel_size"):
        value = getattr(args, flag, None)
        if value is not None and value < (0 if flag == "tokens" else 1):
            raise PlanInputError(f"--{flag.replace('_', '-')}", f"must be {'>= 0' if flag == 'tokens' else '>= 1'}, got {value}")
    if getattr(args, "batch", None) is not None and args.batch > 1_000_000:
        raise PlanInputError("--batch", f"{args.batch} is beyond any deployment (limit 1,000,000)")
