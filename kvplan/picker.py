"""Which GPUs, and how many: every catalog GPU x TP x PP that serves the load, ranked by a stated objective.

The load: ``concurrency`` sequences of ``max_model_len`` tokens at once. One replica (TP x PP GPUs) holds
as many as fit **while every rank keeps the headroom floor free** (default 10 % of device memory: room
for fragmentation, CUDA-graph and allocator slack the estimate does not see). Replicas = cdiv(load,
that); each replica then serves cdiv(load, replicas) sequences.

For each option:

- ``tokens_per_s``: the decode roofline upper bound (``kvplan.plan.decode_bound``: the rank's weights with k routed
  experts per MoE layer, the fewest a step reads, and each layer's KV over the tokens it attends) at the target load,
  every sequence at max_model_len, summed over replicas: load / step time of the busiest replica.
- ``cost_per_hour`` = price per GPU-hour x GPUs; ``cost_per_million_tokens`` = cost_per_hour /
  (tokens_per_s x 3600) x 10**6. Example: 2 GPUs at $4.59 = $9.18/h; at 3,000 tokens/s that is
  9.18 / (3,000 x 3,600) x 10**6 = $0.85 per million tokens.

Objectives (``OBJECTIVES``): lowest $ per million tokens at the target load (default), lowest $ per hour,
fewest GPUs, highest tokens/s bound. Ties fall through the chain each one names (``SORT_KEYS``), then to
the GPU name and layout, so the order is total. Options without a price rank after priced ones on the
cost objectives. Single-node layouts (every replica in one node) unless ``multi_node``.
"""

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict

from kvplan.engines import EngineConfig
from kvplan.errors import PlanInputError
from kvplan.gpus import GPU_CATALOG, GpuSpec
from kvplan.kv import kv_dtype_bytes
from kvplan.parallel import Layout, rank_weight_bytes, stage_distinct
from kvplan.families.deepseek_v4 import DSV41_MODEL_TYPES
from kvplan.plan import decode_bound, plan, decode_weight_parts, vllm_auto_dtype
from kvplan.spec import ModelSpec
from kvplan.support import gaudi_quantization_note, on_gaudi, platform_refusal

TP_CHOICES = (1, 2, 4, 8)
PP_CHOICES = (1, 2, 4)
# One Layout object per choice, shared by every sweep: the spec's memo keys then match by identity (no dataclass ==).
_LAYOUTS = {(tp, pp): Layout(tp, pp) for pp in PP_CHOICES for tp in TP_CHOICES}
DEFAULT_HEADROOM_FLOOR = 0.10  # share of device memory every rank keeps free at the target load
MAX_REPLICAS = 64
Objective = Literal["cost_per_million_tokens", "cost_per_hour", "gpus", "tokens_per_s"]
DEFAULT_OBJECTIVE: Objective = "cost_per_million_tokens"
OBJECTIVES: dict[str, str] = {
    "cost_per_million_tokens": "lowest $ per million tokens at the target load",
    "cost_per_hour": "lowest $ per hour",
    "gpus": "fewest GPUs",
    "tokens_per_s": "highest tokens/s bound at the target load",
}
# What breaks ties, in words (the page states the rule it ranks by).
TIE_BREAKS: dict[str, str] = {
    "cost_per_million_tokens": "then lower $ per hour, then fewer GPUs",
    "cost_per_hour": "then lower $ per million tokens, then fewer GPUs",
    "gpus": "then lower $ per million tokens, then higher tokens/s",
    "tokens_per_s": "then lower $ per million tokens, then fewer GPUs",
}


class Option(BaseModel):
    model_config = ConfigDict(frozen=True)
    gpu: str
    tensor_parallel_size: int
    pipeline_parallel_size: int
    replicas: int  # DP replicas needed to serve the requested concurrency with the headroom floor
    num_gpus: int
    num_nodes: int
    headroom_bytes: int  # tightest rank: KV pool minus what its replica's share of the load uses
    headroom_fraction: float  # headroom_bytes / device memory
    max_concurrency: float  # per replica, at max_model_len (KV pool / blocks per request; no floor)
    seqs_per_replica: int  # whole sequences of max_model_len one replica holds keeping the floor
    load_per_replica: int  # sequences the busiest replica serves: cdiv(concurrency, replicas)
    tokens_per_s: float  # decode roofline bound at the target load, all replicas
    bound: str  # "memory" | "compute": what limits the busiest replica's decode step
    # what tokens_per_s's decode step still reads that a real one does not (DecodeBound.overcounts): empty, it is an
    # upper bound; else a real step reads less and $ / M tokens is no floor
    overcounts: tuple[str, ...] = ()
    price_per_gpu_hour: float | None
    cost_per_hour: float | None
    cost_per_million_tokens: float | None

    @property
    def layout(self) -> str:
        """'TP2 PP1 x3' (x replicas only when more than one)."""
        reps = f" x{self.replicas}" if self.replicas > 1 else ""
        return f"TP{self.tensor_parallel_size} PP{self.pipeline_parallel_size}{reps}"


class Rejected(BaseModel):
    model_config = ConfigDict(frozen=True)
    gpu: str
    tensor_parallel_size: int
    pipeline_parallel_size: int
    reason: str


class Picker(BaseModel):
    model_config = ConfigDict(frozen=True)
    options: list[Option]
    rejected: list[Rejected]
    objective: str = DEFAULT_OBJECTIVE
    headroom_floor: float = DEFAULT_HEADROOM_FLOOR
    multi_node: bool = False
    concurrency: int = 1


def _inf(x: float | None) -> float:
    return math.inf if x is None else x


SORT_KEYS = {
    "cost_per_million_tokens": lambda o: (_inf(o.cost_per_million_tokens), _inf(o.cost_per_hour), o.num_gpus),
    "cost_per_hour": lambda o: (_inf(o.cost_per_hour), _inf(o.cost_per_million_tokens), o.num_gpus),
    "gpus": lambda o: (o.num_gpus, _inf(o.cost_per_million_tokens), -o.tokens_per_s),
    "tokens_per_s": lambda o: (-o.tokens_per_s, _inf(o.cost_per_million_tokens), o.num_gpus),
}


def rank_options(options: list[Option], objective: str = DEFAULT_OBJECTIVE) -> list[Option]:
    """``options`` in the objective's order (its tie-break chain, then GPU name, TP, PP, replicas)."""
    if objective not in SORT_KEYS:
        raise PlanInputError("objective", f"must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    key = SORT_KEYS[objective]
    return sorted(options, key=lambda o: (*key(o), o.gpu, o.tensor_parallel_size, o.pipeline_parallel_size,
                                          o.replicas))


def nodes_needed(replica_gpus: int, replicas: int, gpus_per_node: int) -> int:
    """Nodes for ``replicas`` replicas of ``replica_gpus`` GPUs each, never splitting a replica that fits a node.
    8 replicas of 1 GPU on 8-GPU nodes: 1 node; 3 replicas of TP4: cdiv(3, 2) = 2 nodes."""
    if replica_gpus <= gpus_per_node:
        return -(-replicas // (gpus_per_node // replica_gpus))
    return replicas * -(-replica_gpus // gpus_per_node)


def pick_gpus(spec: ModelSpec, max_model_len: int, concurrency: int, engine: EngineConfig = EngineConfig(),
              prices: dict[str, float] | None = None, gpus: list[GpuSpec] | None = None,
              max_replicas: int = MAX_REPLICAS, objective: str = DEFAULT_OBJECTIVE,
              headroom_floor: float = DEFAULT_HEADROOM_FLOOR, multi_node: bool = False) -> Picker:
    """Layouts that serve ``concurrency`` sequences of ``max_model_len`` tokens, in ``objective``'s order.

    ``prices``: US$ per GPU-hour by GPU name; None means kvplan's defaults (``kvplan.prices``), a dict is
    used as given (a GPU it omits is unpriced). ``headroom_floor``: share of device memory (0 to <1) every
    rank keeps free at the load. ``multi_node``: allow layouts that span nodes.
    """
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise PlanInputError("concurrency", f"must be a whole number >= 1, got {concurrency!r}")
    if isinstance(headroom_floor, bool) or not isinstance(headroom_floor, (int, float)) \
            or not 0 <= headroom_floor < 1:
        raise PlanInputError("headroom_floor", f"must be a share of device memory from 0 to below 1, got "
                                               f"{headroom_floor!r}")
    if objective not in OBJECTIVES:
        raise PlanInputError("objective", f"must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    if prices is None:
        from kvplan.prices import default_prices

        prices = default_prices()
    engine = engine.model_copy(update={"max_model_len": max_model_len})
    kv_b = kv_dtype_bytes(spec, engine.kv_cache_dtype)
    heaviest_by_layout: dict[Layout, int | str] = {}  # the heaviest stage's weights per rank, the same on every GPU

    def heaviest_weights(layout: Layout) -> int | str:
        """Weight bytes of the heaviest stage's rank, or the refusal's message where the format is refused."""
        if layout not in heaviest_by_layout:
            try:
                weight_format = vllm_auto_dtype(spec, engine).weight_format  # vLLM serves an fp32 checkpoint in bf16
                heaviest_by_layout[layout] = max(rank_weight_bytes(spec, layout, s, weight_format)
                                                 for s in range(layout.pp))
            except PlanInputError as exc:
                heaviest_by_layout[layout] = exc.message
        return heaviest_by_layout[layout]

    served: list[str | None] = []

    def served_format() -> str | None:
        """The format plan() serves the weights in (vllm_auto_dtype), once per sweep, for decode_bound's experts."""
        if not served:
            served.append(vllm_auto_dtype(spec, engine).weight_format)
        return served[0]

    options, rejected = [], []
    no_decode = spec.model_type in DSV41_MODEL_TYPES  # kvplan.plan.V41_NO_DECODE: tokens/s 0, no $ / M tokens
    sparse_mla = any(layer.cache.kind == "mla_dsa" for layer, _ in stage_distinct(spec, 1, 0))
    for gpu in gpus or list(GPU_CATALOG.values()):
        floor_bytes = math.ceil(headroom_floor * gpu.memory_bytes)
        # an engine that does not run on this platform (or not this model there): every layout is rejected with
        # the reason plan() refuses it for (kvplan.support), not ranked
        unserved = platform_refusal(engine.engine, gpu.vendor, engine.vllm_version, sparse_mla) \
            if engine.engine in ("vllm", "sglang") else None
        if unserved is None and engine.engine == "vllm" and on_gaudi(gpu):
            unserved = gaudi_quantization_note(spec.quantization)  # not ranked on a format the plugin does not list
        for pp in PP_CHOICES:
            for tp in TP_CHOICES:
                layout = _LAYOUTS[tp, pp]
                def reject(reason: str, gpu: GpuSpec = gpu, tp: int = tp, pp: int = pp) -> None:
                    rejected.append(Rejected(gpu=gpu.name, tensor_parallel_size=tp, pipeline_parallel_size=pp,
                                             reason=reason))
                if tp > gpu.gpus_per_node:
                    reject(f"TP={tp} exceeds {gpu.gpus_per_node} GPUs per node")
                    continue
                if not multi_node and tp * pp > gpu.gpus_per_node:
                    reject(f"one replica is {tp * pp} GPUs, more than a {gpu.gpus_per_node}-GPU node "
                           "(multi-node layouts are off)")
                    continue
                if unserved:
                    reject(f"Not served: {unserved}")
                    continue
                # A cheap refusal first: weights alone over the device (about 40 % of the sweep's layouts for a 70B
                # model), worked out once per layout. rank_weight_bytes is memoized on the spec; plan() reuses it.
                heaviest = engine.weights_bytes if engine.weights_bytes is not None else heaviest_weights(layout)
                if isinstance(heaviest, str):  # the weight format is refused
                    reject(heaviest)
                    continue
                if heaviest > gpu.memory_bytes:
                    reject(f"Does not fit: the weights alone are {heaviest / 2**30:.2f} GiB per GPU, more than "
                           f"the {gpu.memory_gib:.2f} GiB it has")
                    continue
                try:
                    p = plan(spec, gpu, engine, layout, suggest=False, detail=False)  # reads no log, no decode
                except PlanInputError as exc:
                    reject(exc.message)
                    continue
                if p.max_num_seqs_at_len < 1:
                    reject(p.verdict)
                    continue
                kv_ranks = [r for r in p.ranks if r.bytes_per_block > 0]
                per_seq = {r.rank: p.blocks_per_request * r.bytes_per_block for r in kv_ranks}
                keep = min((r.kv_pool_bytes - floor_bytes) // per_seq[r.rank] for r in kv_ranks)
                per_replica = min(p.max_num_seqs_at_len, keep)
                if per_replica < 1:
                    free = min(r.kv_pool_bytes - per_seq[r.rank] for r in kv_ranks)
                    reject(f"one sequence leaves {free / 2**30:.2f} GiB ({free / gpu.memory_bytes:.0%}) free on the "
                           f"tightest rank, under the {headroom_floor * 100:g}% headroom floor")
                    continue
                replicas = -(-concurrency // per_replica)
                if replicas > max_replicas:
                    reject(f"needs {replicas} replicas (limit {max_replicas})")
                    continue
                nodes = nodes_needed(tp * pp, replicas, gpu.gpus_per_node)
                if nodes > 1 and not multi_node:
                    reject(f"needs {replicas} replicas on {nodes} nodes (multi-node layouts are off)")
                    continue
                load = -(-concurrency // replicas)
                tight = min(kv_ranks, key=lambda r: r.kv_pool_bytes - load * per_seq[r.rank])
                headroom = tight.kv_pool_bytes - load * per_seq[tight.rank]
                step = decode_bound(spec, gpu, layout, tight.weights_bytes, load, p.max_model_len, kv_b,
                                    None, served_format(), *decode_weight_parts(tight)) if not no_decode else None
                tps = step.tokens_per_s * concurrency / load if step and step.tokens_per_s else 0.0
                n = tp * pp * replicas
                price = prices.get(gpu.name)
                cost = price * n if price is not None else None
                per_m = cost / (tps * 3600) * 1e6 if cost is not None and tps > 0 else None
                options.append(Option(
                    gpu=gpu.name, tensor_parallel_size=tp, pipeline_parallel_size=pp, replicas=replicas,
                    num_gpus=n, num_nodes=nodes, headroom_bytes=headroom,
                    headroom_fraction=headroom / gpu.memory_bytes, max_concurrency=p.max_concurrency,
                    seqs_per_replica=per_replica, load_per_replica=load, tokens_per_s=tps,
                    bound=step.bound if step else "none", overcounts=step.overcounts if step else (),
                    price_per_gpu_hour=price, cost_per_hour=cost,
                    cost_per_million_tokens=per_m))
    return Picker(options=rank_options(options, objective), rejected=rejected, objective=objective,
                  headroom_floor=headroom_floor, multi_node=multi_node, concurrency=concurrency)


def pareto_front(options: list[Option], priced: bool = True) -> list[Option]:
    """The options no other beats on both cost and tokens/s, by tokens/s ascending.

    Cost is $ per hour when ``priced`` (options without a price are left out), else GPUs. An option is on
    the front when every option with at least its tokens/s costs more (ties: the cheaper, then faster one).
    """
    pool = [o for o in options if not priced or o.cost_per_hour is not None]
    cost = (lambda o: o.cost_per_hour) if priced else (lambda o: o.num_gpus)
    front, best = [], -1.0
    for o in sorted(pool, key=lambda o: (cost(o), -o.tokens_per_s)):
        if o.tokens_per_s > best:
            front.append(o)
            best = o.tokens_per_s
    return front


def _money(x: float | None, unit: str) -> str:
    return "unpriced" if x is None else f"${x:,.2f}{unit}" if x >= 0.1 else f"${x:,.3f}{unit}"


def reasons(options: list[Option], objective: str = DEFAULT_OBJECTIVE, n: int = 3) -> list[str]:
    """One line per top option (``options`` already ranked) saying why it ranks there: #1 by the objective,
    the others by what they give or cost against #1. Example: '#1 H200 TP1 PP1 (1 GPU): lowest $ per
    million tokens at the target load: $0.41/M tokens, $4.59/h, 3,100 tokens/s bound, 35% headroom.'"""
    top = options[:n]
    lines = []
    for i, o in enumerate(top):
        gpus = f"{o.num_gpus} GPU{'s' if o.num_gpus != 1 else ''}"
        head = f"#{i + 1} {o.gpu} {o.layout} ({gpus})"
        facts = (f"{_money(o.cost_per_million_tokens, '/M tokens')}, {_money(o.cost_per_hour, '/h')}, "
                 f"{o.tokens_per_s:,.0f} tokens/s bound, {o.headroom_fraction:.0%} headroom")
        if i == 0:
            lines.append(f"{head}: {OBJECTIVES[objective]}: {facts}.")
        else:
            lines.append(f"{head}: {facts}; {_versus(o, top[0])}.")
    return lines


def best_per_gpu(options: list[Option]) -> list[Option]:
    """The first (best-ranked) option of each GPU, in rank order."""
    seen: set[str] = set()
    return [o for o in options if not (o.gpu in seen or seen.add(o.gpu))]


def _ratio(a: float | None, b: float | None) -> str | None:
    """``a`` against ``b`` in words: a percentage between 0.5x and 2x (one decimal under 1 %, so a real difference
    never reads "+0%"), else a multiple; None when equal or unknown. Worked example: (2.483, 2.472) -> "+0.4%";
    (3.0, 2.0) -> "+50%"; (5.0, 2.0) -> "2.5x"."""
    if a is None or b is None or b == 0 or a == b:
        return None
    r = a / b
    if not 0.5 <= r <= 2:
        return f"{r:.1f}x"
    return f"{r - 1:+.1%}" if abs(r - 1) < 0.01 else f"{r - 1:+.0%}"


def _versus(o: Option, first: Option) -> str:
    """What ``o`` trades against #1: the objective figure first, then the most telling other one."""
    parts = []
    per_m = _ratio(o.cost_per_million_tokens, first.cost_per_million_tokens)
    hour = _ratio(o.cost_per_hour, first.cost_per_hour)
    tps = _ratio(o.tokens_per_s, first.tokens_per_s)
    if per_m:
        parts.append(f"{per_m} $ per M tokens")
    if hour:
        parts.append(f"{hour} $ per hour")
    if tps:
        parts.append(f"{tps} tokens/s")
    if o.num_gpus != first.num_gpus:
        parts.append(f"{o.num_gpus - first.num_gpus:+d} GPUs")
    return "vs #1: " + ", ".join(parts) if parts else "ties #1"
