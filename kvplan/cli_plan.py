"""Capacity-planning subcommands: ``plan`` (flags as vLLM names them) and ``gpus``."""

import argparse
import json
from pathlib import Path

from pydantic import ValidationError

from kvplan.cli import int_list
from kvplan.errors import PlanInputError
from kvplan.plan import context_refusal
from kvplan.units import GiB, counted, format_bytes


def engine_from_args(args):
    """EngineConfig from CLI flags; pydantic range errors become PlanInputError naming the flag."""
    from kvplan.engines import EngineConfig
    from kvplan.vllm_args import moe_backend_value

    fields = dict(engine=args.engine, gpu_memory_utilization=args.gpu_memory_utilization, block_size=args.block_size,
                  kv_cache_dtype=args.kv_cache_dtype, weight_format=args.weight_format,
                  max_model_len=args.max_model_len, max_num_seqs=args.max_num_seqs,
                  max_num_batched_tokens=args.max_num_batched_tokens,
                  kv_cache_memory_bytes=args.kv_cache_memory_bytes, enforce_eager=args.enforce_eager,
                  mem_fraction_static=args.mem_fraction_static, vllm_version=args.vllm_version,
                  sglang_version=args.sglang_version,
                  decode_context_parallel_size=args.decode_context_parallel_size,
                  disable_custom_all_reduce=args.disable_custom_all_reduce, sampler=args.sampler,
                  max_total_tokens=args.max_total_tokens, language_model_only=args.language_model_only,
                  mm_encoder_tp_mode=args.mm_encoder_tp_mode,
                  speculative_method="mtp" if args.mtp_tokens else "none", num_speculative_tokens=args.mtp_tokens,
                  triton_kernels=getattr(args, "triton_kernels", None),
                  moe_backend=moe_backend_value("--moe-backend", getattr(args, "moe_backend", None) or "auto"),
                  vllm_graph_reserved_mem=getattr(args, "vllm_graph_reserved_mem", None),
                  sglang_aiter_honor_explicit_mem_fraction=getattr(args, "sglang_aiter_honor_explicit_mem_fraction",
                                                                   False))
    fields |= speculative_args(args)
    fields |= mm_args(args)
    for name in ("mamba_full_memory_ratio", "max_mamba_cache_size", "mamba_ssm_dtype",  # SGLang hybrids' MambaPool
                 "swa_full_tokens_ratio"):  # and the hybrid SWA pools' ratio
        if getattr(args, name, None) is not None:
            fields[name] = getattr(args, name)
    if getattr(args, "disable_hybrid_swa_memory", False):
        fields["disable_hybrid_swa_memory"] = True
    if args.runtime_gib is not None:
        fields["runtime_gib"] = args.runtime_gib
    if args.headroom_gib is not None:
        fields["headroom_gib"] = args.headroom_gib
    try:
        return EngineConfig(**fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        flag = "--" + str(err["loc"][0]).replace("_", "-")
        raise PlanInputError(flag, err["msg"]) from None


def mm_args(args) -> dict:
    """EngineConfig mm_limits / mm_processor_kwargs of --limit-mm-per-prompt / --mm-processor-kwargs, read as
    kvplan.vllm_args reads vLLM's flags (a bad value: PlanInputError naming the flag)."""
    from kvplan.vllm_args import mm_limits_fields, mm_limits_value, mm_processor_kwargs_fields

    out: dict = {}
    if getattr(args, "limit_mm_per_prompt", None) is not None:
        notes: list[str] = []
        out["mm_limits"] = mm_limits_fields("--limit-mm-per-prompt",
                                            mm_limits_value("--limit-mm-per-prompt", args.limit_mm_per_prompt), notes)
    if getattr(args, "mm_processor_kwargs", None) is not None:
        out["mm_processor_kwargs"] = mm_processor_kwargs_fields("--mm-processor-kwargs", args.mm_processor_kwargs)
    return out


def speculative_args(args) -> dict:
    """The EngineConfig fields of ``--speculative-config JSON`` (vLLM's flag, read by kvplan.vllm_args) with
    ``--draft-config PATH`` (an EAGLE head's config.json, when kvplan ships none for its "model")."""
    from kvplan.vllm_args import check_draft_tp, speculative_fields

    text, path = getattr(args, "speculative_config", None), getattr(args, "draft_config", None)
    if getattr(args, "speculative_algorithm", None) is not None or getattr(args, "speculative_draft_model_path", None) \
            or getattr(args, "speculative_num_steps", None) is not None:
        return sglang_speculative_args(args)
    if text is None:
        if path is not None:
            raise PlanInputError("--draft-config", "needs --speculative-config (an eagle / eagle3 / draft_model "
                                 "method)")
        return {}
    if args.mtp_tokens:
        raise PlanInputError("--speculative-config", "give either it or --mtp-tokens, not both")
    cfg = None
    if path is not None:
        from kvplan.drafter import read_draft_config

        cfg = read_draft_config(path)
    fields = speculative_fields(text, cfg, Path(path).parent.name or Path(path).name if path else "")
    if fields is None:
        raise PlanInputError("--speculative-config", "kvplan plans mtp, ngram, eagle, eagle3 and draft_model methods given as a "
                             "JSON object, e.g. '{\"method\": \"eagle3\", \"model\": \"yuhuili/EAGLE3-LLaMA3.1-"
                             "Instruct-8B\", \"num_speculative_tokens\": 3}'")
    check_draft_tp(fields.pop("draft_tensor_parallel_size", None), args.tensor_parallel_size,
                   fields["speculative_method"])
    return fields


# SGLang's --speculative-algorithm names (upper-cased, speculative/spec_info.py from_string) -> EngineConfig methods
SGLANG_ALGORITHMS = {"NEXTN": "mtp", "EAGLE": "mtp", "EAGLE3": "eagle3", "STANDALONE": "draft_model", "NGRAM": "ngram"}


def sglang_speculative_args(args) -> dict:
    """The EngineConfig fields of SGLang's own flags (--engine sglang): --speculative-algorithm, --speculative-draft-
    model-path (EAGLE3: a head kvplan ships, by HF repo or name, or any head with --draft-config PATH) and
    --speculative-num-steps (default 3); STANDALONE with a draft LM (a preset, or --draft-config PATH); EAGLE with a
    head of its own (a LlamaForCausalLMEagle config.json: --draft-config PATH; kvplan ships none, so a
    --speculative-draft-model-path alone is refused by the core, naming that flag)."""
    from kvplan.drafter import drafter_for_model, load_drafter, parse_draft, read_draft_config
    from kvplan.sglang import SPECULATIVE_FLAG

    if args.engine != "sglang":
        raise PlanInputError(SPECULATIVE_FLAG, "SGLang's flags (--speculative-algorithm, --speculative-draft-model-"
                             "path, --speculative-num-steps) need --engine sglang; vLLM's is --speculative-config")
    if getattr(args, "speculative_config", None) is not None or args.mtp_tokens:
        raise PlanInputError(SPECULATIVE_FLAG, "give SGLang's --speculative-algorithm or --speculative-config / "
                             "--mtp-tokens, not both")
    if args.speculative_algorithm is None:
        raise PlanInputError(SPECULATIVE_FLAG, "needed with --speculative-draft-model-path / --speculative-num-steps "
                             "(SGLang runs no speculative decoding without it)")
    method = SGLANG_ALGORITHMS.get(args.speculative_algorithm.upper())
    if method is None:
        raise PlanInputError(SPECULATIVE_FLAG, f"{args.speculative_algorithm[:20]!r}: kvplan plans "
                             f"{', '.join(SGLANG_ALGORITHMS)}")
    path, config = args.speculative_draft_model_path, getattr(args, "draft_config", None)
    if method == "mtp" and (config is not None or (path and "nextn" not in path.lower())):
        method = "eagle"  # a draft head of its own: planned from its config.json, else refused by the core
    steps = args.speculative_num_steps
    if steps is None:  # SGLang's own choice (kvplan.sglang.auto_speculative_params): 5 beside a Llama, else 3
        from kvplan.presets import preset_config
        from kvplan.sglang import auto_speculative_params

        entry = drafter_for_model(path) if method == "eagle3" and path and config is None else None
        arch = (preset_config(entry["target"]).get("architectures") or [None])[0] if entry else None
        steps = auto_speculative_params(method, arch)[0]
    if not 1 <= steps <= 64:
        raise PlanInputError("--speculative-num-steps", f"{steps}: kvplan plans 1 to 64 draft steps")
    fields = {"speculative_method": method, "num_speculative_tokens": steps}
    if getattr(args, "speculative_num_draft_tokens", None) is not None:  # a hybrid's MambaPool reserve (kvplan.sglang)
        fields["speculative_num_draft_tokens"] = args.speculative_num_draft_tokens
    if method == "eagle3":
        if config is not None:
            fields["draft"] = parse_draft("eagle3", read_draft_config(config), Path(config).parent.name or config,
                                          config)
        elif path is None:
            raise PlanInputError("--speculative-draft-model-path", "EAGLE3 needs its draft head: an HF repo kvplan "
                                 "ships a config for, or give its config.json with --draft-config PATH")
        elif drafter_for_model(path) is None:
            raise PlanInputError("--speculative-draft-model-path", f"{path[:120]!r}: kvplan ships no config for this "
                                 "head: give its config.json with --draft-config PATH")
        else:
            fields["draft"] = load_drafter(path, "eagle3")
    elif method == "eagle" and config is not None:  # an EAGLE (1) head: SGLang's LlamaForCausalLMEagle
        fields["draft"] = parse_draft("eagle", read_draft_config(config), Path(config).parent.name or config, config)
    elif method == "draft_model":  # STANDALONE: a draft LM, a preset or its config.json
        from kvplan.draft_model import load_draft_model, parse_draft_model

        if config is not None:
            fields["draft"] = parse_draft_model(read_draft_config(config), Path(config).parent.name or config, config)
        elif path is None:
            raise PlanInputError("--speculative-draft-model-path", "STANDALONE needs its draft model: a preset kvplan "
                                 "ships (e.g. meta-llama/Llama-3.2-1B-Instruct), or --draft-config PATH")
        else:
            try:
                fields["draft"] = load_draft_model(path)
            except PlanInputError as exc:
                raise PlanInputError("--speculative-draft-model-path", exc.message) from None
    elif config is not None:
        raise PlanInputError("--draft-config", "an EAGLE3 / EAGLE head's or a STANDALONE draft's config.json: needs "
                             "--speculative-algorithm EAGLE3 / EAGLE / STANDALONE")
    return fields


# A typed "Model loading took" figure above this many times the GPU's memory is a typo (kvplan.web.state's bound too).
WEIGHTS_GIB_PER_DEVICE = 16


def measured_weights(engine, gib: float, gpu):
    """``engine`` budgeting vLLM's logged per-rank "Model loading took ``gib`` GiB" (basis measured) in place of the
    computed weights; 0 < gib <= 16 x the GPU's memory. Worked number: 14.2488 GiB -> 15,299,532,502 B."""
    cap = WEIGHTS_GIB_PER_DEVICE * gpu.memory_bytes / GiB
    if not 0 < gib <= cap:  # NaN fails both comparisons: refused too
        raise PlanInputError("--model-loading-gib", f"must be above 0 and at most {WEIGHTS_GIB_PER_DEVICE} x the "
                             f"{gpu.name}'s {gpu.memory_bytes / GiB:.2f} GiB ({cap:,.2f} GiB), got {gib:g}")
    n = round(gib * GiB)
    return engine.model_copy(update={"weights_bytes": n, "weights_basis": "measured",
                                     "weights_source": f"typed in: {gib:g} GiB = {n:,} B per rank"})


def _model_arg(text: str) -> str:
    """The model argument, a checkpoint folder read as its config.json (``plan FOLDER --checkpoint FOLDER``)."""
    try:
        return str(Path(text) / "config.json") if Path(text).is_dir() else text
    except (OSError, ValueError):  # a name the OS cannot stat: resolve_model says what it is not
        return text


def read_checkpoint(source: str):
    """The checkpoint ``--checkpoint`` names: a local folder (kvplan.checkpoint.read_local, stdlib only), else a Hub
    id (kvplan.web.checkpoint.read_hub: huggingface_hub range requests of the headers, the app's HF_* settings).
    Every failure is a PlanInputError naming --checkpoint, on one line."""
    from pathlib import Path

    from kvplan.checkpoint import CheckpointError, read_local

    path = Path(source).expanduser()
    try:
        exists = path.exists()
    except (OSError, ValueError):  # a name the OS cannot stat (too long, NUL)
        exists = False
    if exists:
        if not path.is_dir():
            raise PlanInputError("--checkpoint", f"{source}: a file, not a folder; give the checkpoint's folder "
                                 "(its *.safetensors and model.safetensors.index.json)")
        try:
            return read_local(path)
        except CheckpointError as exc:
            raise PlanInputError("--checkpoint", str(exc)) from None
        except OSError as exc:
            raise PlanInputError("--checkpoint", f"{source}: cannot be read ({exc.strerror or exc})") from None
    if source.startswith((".", "/", "~")) or source.count("/") != 1:
        raise PlanInputError("--checkpoint", f"no folder {source}, and not a Hub model id ('owner/name')")
    try:
        from kvplan.web import checkpoint as web_checkpoint
        from kvplan.web.hub import HubError
    except ImportError as exc:
        raise PlanInputError("--checkpoint", f"{source} is no local folder; reading a Hub checkpoint needs the app's "
                             f"packages (huggingface_hub: {exc.name} is missing): give a local folder") from None
    try:
        return web_checkpoint.read_hub(source)
    except (HubError, CheckpointError) as exc:
        raise PlanInputError("--checkpoint", " ".join(str(exc).split())) from None


def checkpoint_weights(engine, ckpt, spec, layout):
    """(``engine`` budgeting the busiest rank's bytes of ``ckpt`` (kvplan.checkpoint.engine_with_checkpoint_weights,
    the app's rule), the record ``--json`` carries). Refused when the tensors contradict the model
    (kvplan.checkpoint.shape_mismatches): another model's checkpoint would be split with the wrong shard rules.

    ``computed_rank_bytes``: kvplan's own layout of the same rank from the config (the shard sums of
    kvplan.parallel.rank_weight_bytes, plus the towers' and MTP layers' shards when the engine loads them), the
    busiest stage's; the headers hold no buffers, so vLLM's RoPE cache is added by the plan to either."""
    from kvplan.checkpoint import engine_with_checkpoint_weights, load_options, rank_bytes, shape_mismatches
    from kvplan.parallel import mtp_rank_bytes, rank_weight_bytes, tower_rank_bytes
    from kvplan.plan import vllm_auto_dtype

    wrong = shape_mismatches(ckpt, spec)
    if wrong:
        raise PlanInputError("--checkpoint", f"{ckpt.source} does not match the model {spec.name}: " + "; ".join(wrong))
    options = load_options(engine, spec)  # served_dtype: the dtype the plan serves in (kvplan.plan.served_dtype)
    stages = [rank_bytes(ckpt, spec, layout, s, **options) for s in range(layout.pp)]
    busiest = max(range(layout.pp), key=lambda s: stages[s].weights_bytes)  # the first of equals, as busiest_rank
    tower = tower_rank_bytes(spec, layout.tp, engine.mm_encoder_tp_mode == "data") \
        if spec.towers and options["include_vision"] else 0
    fmt = vllm_auto_dtype(spec, engine).weight_format  # the format the plan serves in (an fp32 config in bf16)
    mtp = mtp_rank_bytes(spec, layout, fmt) if options["include_mtp"] else 0
    computed = max(rank_weight_bytes(spec, layout, s, fmt) + tower + (mtp if s == layout.pp - 1 else 0)
                   for s in range(layout.pp))
    engine = engine_with_checkpoint_weights(engine, ckpt, spec, layout)
    assert engine.weights_bytes == stages[busiest].weights_bytes  # one rule: kvplan.checkpoint.busiest_rank
    record = {"source": ckpt.source, "basis": "checkpoint headers", "files": ckpt.files, "tensors": len(ckpt.tensors),
              "total_bytes": ckpt.total_bytes, "busiest_rank_bytes": engine.weights_bytes, "busiest_stage": busiest,
              "computed_rank_bytes": computed, "by_category": stages[busiest].by_category,
              "left_out": stages[busiest].left_out, "notes": stages[busiest].notes,
              "cast": stages[busiest].cast or None, **options}
    return engine, record


def cmd_plan(args) -> None:
    from kvplan.gpus import get_gpu
    from kvplan.paging import page_sequences
    from kvplan.parallel import Layout
    from kvplan.plan import plan
    from kvplan.presets import resolve_model
    from kvplan.weights import check_format

    spec = resolve_model(_model_arg(args.model))
    if args.weight_format:
        check_format(args.weight_format, "--weight-format")
    gpu = get_gpu(args.gpu)
    layout = Layout(args.tensor_parallel_size, args.pipeline_parallel_size, args.data_parallel_size,
                    args.enable_expert_parallel)
    if args.num_gpus is not None and args.num_gpus < layout.gpus:
        raise PlanInputError("--num-gpus", f"{args.num_gpus} GPUs cannot hold TP x PP x DP = {layout.gpus}")
    engine = engine_from_args(args)
    if args.engine == "sglang" and spec.model_type == "deepseek_v4":  # NEXTN stops SGLang there (the CLI: top-k 1)
        from kvplan.sglang_dsv4 import launch_refusal

        refused = launch_refusal(getattr(args, "speculative_algorithm", None), 1, topk_typed=False)
        if refused:
            raise PlanInputError(*refused)
    if getattr(args, "model_loading_gib", None) is not None:
        if getattr(args, "checkpoint", None):
            raise PlanInputError("--checkpoint", "give --checkpoint or --model-loading-gib, not both (the weights "
                                 "come from one)")
        engine = measured_weights(engine, args.model_loading_gib, gpu)
    weights_from = None
    if getattr(args, "checkpoint", None):
        engine, weights_from = checkpoint_weights(engine, read_checkpoint(args.checkpoint), spec, layout)
    p = plan(spec, gpu, engine, layout, concurrency=args.concurrency, gpus_per_node=args.gpus_per_node)
    payload = p.model_dump()
    if weights_from is not None:
        payload["weights_checkpoint"] = weights_from
    if args.lengths is not None:
        paging = page_sequences(args.lengths, p.block_size, args.shared_prefix)
        payload.update(allocated_blocks=paging.allocated_blocks, allocated_slots=paging.allocated_slots,
                       wasted_slots=paging.wasted_slots, paging=paging.model_dump())
    if args.json:
        print(json.dumps(payload, indent=2))
        return
    lines = [f"{spec.name} on {p.num_gpus} x {gpu.name} ({counted(p.num_nodes, 'node')}), engine {p.engine}, "
             f"TP={layout.tp} PP={layout.pp} DP={layout.dp}",
             f"  {p.verdict}" if p.fits and not context_refusal(p) or not p.fits else
             f"  Does not start: {context_refusal(p)}. In memory alone: {p.verdict}",
             f"  num_blocks {p.num_blocks:,} (block {p.block_size}), GPU KV cache size: {p.kv_cache_tokens:,} tokens, "
             f"Maximum concurrency for {p.max_model_len:,} tokens per request: {p.max_concurrency:.2f}x"]
    if weights_from is not None:
        w = weights_from
        lines.append(f"  weights from {w['files']} safetensors headers of {w['source']}: "
                     f"{w['busiest_rank_bytes'] / GiB:.2f} GiB ({w['busiest_rank_bytes']:,} B) on the busiest rank "
                     f"(kvplan's own layout: {w['computed_rank_bytes'] / GiB:.2f} GiB ({w['computed_rank_bytes']:,} B))"
                     + (f", {w['cast']}" if w["cast"] else ""))
    for r in p.ranks:
        lines.append(f"  stage {r.pp_stage} ({r.layers} layers), per rank: KV heads {r.kv_heads}, "
                     f"{r.kv_bytes_per_token:,} B/token, pool {format_bytes(r.kv_pool_bytes)}")
        lines += [f"    {t.name:<48} {t.bytes / GiB:>9.2f} GiB  [{t.basis}]" + ("" if t.applied else " (not subtracted)")
                  for t in r.terms]
    if p.engine_log:
        from kvplan.engines import VLLM_PROFILES

        label = VLLM_PROFILES[p.engine_version].label if p.engine_version in VLLM_PROFILES else p.engine_version
        lines.append(f"  {p.engine} {label} would log:" if p.engine_version else f"  {p.engine} would log:")
        lines += [f"    {line}" for line in p.engine_log]
    if p.start_error:
        lines.append(f"  start-up error: {p.start_error}")
    lines += [f"  fix: {s}" for s in p.suggestions] + [f"  warning: {w}" for w in p.warnings]
    if args.lengths is not None:
        lines.append(f"  paging {args.lengths}: {payload['allocated_blocks']} blocks, "
                     f"{payload['allocated_slots']} slots, {payload['wasted_slots']} wasted")
    if p.decode:
        d = p.decode
        lines.append(f"  decode bound: {d.tokens_per_s:,.0f} tokens/s at batch {d.batch} "
                     + (f"({d.bound}-bound ceiling, an upper bound)" if d.upper_bound else
                        f"({d.bound}-bound, not an upper bound: it counts {'; and '.join(d.overcounts)}, so a real "
                        "decode step reads less and can run faster)")
                     + (f"; {d.expected_tokens_per_s:,.0f} at uniform routing (estimate: "
                        f"{d.experts_read_expected:,.1f} experts a MoE layer, the ceiling "
                        f"{d.experts_read_least:,.0f})" if d.experts_read_least else ""))
    print("\n".join(lines))


def cmd_gpus(args) -> None:
    from kvplan.gpus import GPU_CATALOG

    rows = [g.model_dump() | {"memory_gib": round(g.memory_bytes / GiB, 2)} for g in GPU_CATALOG.values()]
    if args.json:
        print(json.dumps({"gpus": rows}, indent=2))
        return
    for g in GPU_CATALOG.values():
        print(f"{g.name:<16} {g.memory_bytes / GiB:>7.2f} GiB [{g.memory_basis}]  "
              f"{g.bandwidth_bytes_per_s / 1e12:>5.2f} TB/s  {g.bf16_dense_flops / 1e12:>7.1f} TFLOP/s bf16")


def add_commands(sub) -> None:
    from kvplan.engines import VLLM_DEFAULT_VERSION, VLLM_PROFILES
    from kvplan.sglang import SGLANG_DEFAULT_VERSION, SGLANG_PROFILES

    p = sub.add_parser("plan", help="does it fit: the budget per GPU rank, blocks, tokens and concurrency")
    p.add_argument("model")
    p.add_argument("--gpu", default="H100-SXM")
    p.add_argument("--engine", choices=("vllm", "sglang", "custom"), default="vllm")
    p.add_argument("--vllm-version", choices=tuple(VLLM_PROFILES), default=VLLM_DEFAULT_VERSION,
                   help="vLLM release line whose memory accounting to mirror (default: 0.33; 0.34 is planned from "
                        "estimates, some cases refused): "
                        + "; ".join(f"{p.label}: {p.releases}" for p in VLLM_PROFILES.values()))
    p.add_argument("--sglang-version", choices=tuple(SGLANG_PROFILES), default=SGLANG_DEFAULT_VERSION,
                   help="SGLang release line whose memory accounting to mirror (default: the newest read)")
    p.add_argument("--decode-context-parallel-size", "-dcp", type=int, default=1)
    p.add_argument("--disable-custom-all-reduce", action="store_true",
                   help="also when vLLM turns it off itself (no GPU P2P, TP across nodes)")
    p.add_argument("--sampler", choices=("auto", "pytorch", "flashinfer"), default="auto",
                   help="top-k/top-p path of vLLM's dummy sampler run (VLLM_USE_FLASHINFER_SAMPLER)")
    p.add_argument("--vllm-graph-reserved-mem", type=float, default=None, metavar="FRACTION",
                   help="Intel Gaudi (vllm-gaudi): the env VLLM_GRAPH_RESERVED_MEM, the share of the usable memory "
                        "kept for HPU graphs, 0 <= x < 1 (default 0.1; 0 with --enforce-eager); ignored on other GPUs")
    p.add_argument("--triton-kernels", action=argparse.BooleanOptionalAction, default=None,
                   help="vLLM 0.10.2 - 0.11.x: OpenAI's triton_kernels is installed (the vllm/vllm-openai image; "
                        "MXFP4 MoE then takes the Triton layout on Hopper); --no-triton-kernels: a pip install "
                        "(the default: Marlin)")
    p.add_argument("--moe-backend", default="auto", metavar="NAME",
                   help="vLLM 0.17+: the MoE experts' kernels (auto, marlin, cutlass, ...; marlin and cutlass "
                        "workspaces are sized)")
    p.add_argument("--max-total-tokens", type=int, default=None, help="SGLang: cap on its KV pool")
    p.add_argument("--mamba-full-memory-ratio", type=float, default=None,
                   help="SGLang hybrids: MambaPool : KV pool memory ratio (default 0.9)")
    p.add_argument("--max-mamba-cache-size", type=int, default=None, help="SGLang hybrids: MambaPool state slots")
    p.add_argument("--swa-full-tokens-ratio", type=float, default=None,
                   help="SGLang hybrid sliding-window models: sliding pool tokens / full pool tokens, in (0, 1] "
                        "(default 0.8; DeepSeek-V4 0.1)")
    p.add_argument("--disable-hybrid-swa-memory", action="store_true",
                   help="SGLang: one KV pool over every layer at the full rate (no separate sliding-window pool)")
    p.add_argument("--mamba-ssm-dtype", choices=("float32", "bfloat16", "float16"), default=None,
                   help="SGLang hybrids: temporal (SSM) state dtype (default: the config's mamba_ssm_dtype, else float32)")
    p.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    p.add_argument("--pipeline-parallel-size", "-pp", type=int, default=1)
    p.add_argument("--data-parallel-size", "-dp", type=int, default=1)
    p.add_argument("--enable-expert-parallel", action="store_true")
    p.add_argument("--num-gpus", type=int, default=None, help="defaults to TP x PP x DP")
    p.add_argument("--gpus-per-node", type=int, default=None)
    p.add_argument("--max-model-len", type=int, default=None)
    p.add_argument("--kv-cache-dtype", default="auto")
    p.add_argument("--weight-format", default=None)
    p.add_argument("--gpu-memory-utilization", type=float, default=None)
    p.add_argument("--block-size", type=int, default=None)
    p.add_argument("--max-num-seqs", type=int, default=None)
    p.add_argument("--max-num-batched-tokens", type=int, default=None)
    p.add_argument("--kv-cache-memory-bytes", type=int, default=None)
    p.add_argument("--enforce-eager", action="store_true")
    p.add_argument("--language-model-only", action="store_true",
                   help="vLLM: do not load the vision / audio towers of a multimodal checkpoint")
    p.add_argument("--limit-mm-per-prompt", default=None, metavar="JSON",
                   help="vLLM's limit per modality ('{\"image\": 0}' or image=0,video=0): a modality at 0 is not "
                        "profiled; a tower with all its modalities at 0 is not loaded")
    p.add_argument("--mm-processor-kwargs", default=None, metavar="JSON",
                   help="vLLM's processor kwargs: max_pixels / size.longest_edge resize the Qwen-VL profile item")
    p.add_argument("--mtp-tokens", type=int, default=0, metavar="N",
                   help="vLLM MTP speculative decoding with N tokens (--speculative-config "
                        "'{\"method\": \"mtp\", \"num_speculative_tokens\": N}'): loads the MTP layers")
    p.add_argument("--speculative-config", default=None, metavar="JSON",
                   help="vLLM's --speculative-config: mtp, ngram, eagle / eagle3 with a draft head, or draft_model with a "
                        "draft LM (\"model\": a drafter or preset kvplan ships, or give its config with --draft-config)")
    p.add_argument("--speculative-algorithm", default=None, metavar="NAME",
                   help="SGLang (--engine sglang): NEXTN / EAGLE (the checkpoint's MTP layers; EAGLE with "
                        "--draft-config: a LlamaForCausalLMEagle head; DeepSeek-V4: EAGLE only, planned at top-k 1, "
                        "as SGLang asserts), EAGLE3 (a draft head: --speculative-draft-model-path), STANDALONE (a "
                        "draft LM, a preset), NGRAM")
    p.add_argument("--speculative-draft-model-path", default=None, metavar="REPO",
                   help="SGLang: the EAGLE3 head or STANDALONE draft LM (an HF repo kvplan ships a config for; else "
                        "--draft-config PATH)")
    p.add_argument("--speculative-num-steps", type=int, default=None, metavar="N",
                   help="SGLang: draft steps a round (default 3); the pools do not depend on it")
    p.add_argument("--speculative-num-draft-tokens", type=int, default=None, metavar="D",
                   help="SGLang: tokens verified a round (default: NGRAM 12, NEXTN / EAGLE steps + 1, as top-k 1 "
                        "sets it); sizes a hybrid's MambaPool reserve of D state slots per running request")
    p.add_argument("--draft-config", default=None, metavar="PATH",
                   help="the EAGLE / EAGLE-3 head's or the draft model's config.json (a file or its checkpoint "
                        "folder) for --speculative-config or SGLang's --speculative-algorithm")
    p.add_argument("--mm-encoder-tp-mode", choices=("weights", "data"), default="weights",
                   help="vLLM: shard the vision tower over TP (weights) or replicate it per rank (data)")
    p.add_argument("--mem-fraction-static", type=float, default=None)
    p.add_argument("--sglang-aiter-honor-explicit-mem-fraction", action="store_true",
                   help="SGLang 0.5.20+ on ROCm: the env SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION=1 (an explicit "
                        "--mem-fraction-static is not scaled by 0.85 for the aiter backend)")
    p.add_argument("--model-loading-gib", type=float, default=None, metavar="GIB",
                   help="vLLM's logged 'Model loading took GIB GiB' (per GPU): budget this measured figure "
                        "in place of the computed weights")
    p.add_argument("--checkpoint", default=None, metavar="PATH_OR_HUB_ID",
                   help="a checkpoint folder or Hub id: budget the busiest rank's weights from its safetensors "
                        "headers (every tensor's dtype and shape; no weights read or downloaded)")
    p.add_argument("--runtime-gib", type=float, default=None, help="custom engine: runtime workspace")
    p.add_argument("--headroom-gib", type=float, default=None, help="custom engine: headroom")
    p.add_argument("--concurrency", type=int, default=None, help="sequences that must fit at once")
    p.add_argument("--lengths", type=int_list, default=None, help="page these sequence lengths, e.g. 5,3,8")
    p.add_argument("--shared-prefix", type=int, default=0)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("gpus", help="list the GPU catalog")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_gpus)
