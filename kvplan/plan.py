"""The plan: per rank, device memory -> weights, workspace, headroom -> KV pool -> blocks -> capacity.

vLLM (``gpu_worker.determine_available_memory`` then ``kv_cache_utils``):
    requested  = ceil(total x gpu_memory_utilization)
    kv_pool    = requested - weights - activation peak - non-torch - CUDA graphs   (or kv_cache_memory_bytes)
    num_blocks = kv_pool // bytes_per_block, then the minimum over ranks and stages
    concurrency = num_blocks / blocks_per_request(max_model_len);  tokens = int(concurrency x max_model_len)
SGLang: pool = free_before_load x mem_fraction_static - weights; tokens = pool // cell, floored to the page.
custom: pool = total - weights - runtime - headroom (the seed's budget).

Worked number (test_engine_logs): Qwen3-14B, 6.51 GiB of KV -> 2666 blocks -> 42,656 tokens, 1.30x at 32,768.
"""

import math

from pydantic import BaseModel, ConfigDict

from kvplan.engines import (
    SGLANG_CONTEXT_BYTES, VLLM_BLOCK_SIZE, VLLM_CUDA_GRAPH_BYTES, VLLM_GPU_MEMORY_UTILIZATION, VLLM_MLA_BLOCK_SIZE,
    VLLM_NON_TORCH_BYTES, EngineConfig, batch_defaults, sglang_mem_fraction_static,
)
from kvplan.errors import PlanInputError
from kvplan.gpus import GpuSpec
from kvplan.kv import kv_dtype_bytes
from kvplan.layers import ATTENTION_KINDS
from kvplan.parallel import (
    Layout, check_layout, kv_heads_on_rank, pp_partition, rank_weight_bytes, stage_distinct, uses_mla,
)
from kvplan.spec import DecoderLayer, Linear, ModelSpec
from kvplan.units import DTYPE_BITS, GiB, cdiv


class Term(BaseModel):
    """One line of a rank's budget: what it is, how big, and how we know."""

    model_config = ConfigDict(frozen=True)
    name: str
    bytes: int
    basis: str  # measured | configured | estimated | derived
    source: str


class KVGroup(BaseModel):
    """A vLLM KV-cache group: layers of one kind sharing a block table."""

    model_config = ConfigDict(frozen=True)
    kind: str
    layers: int  # real layers in the group
    padding_layers: int
    page_bytes: int  # one layer, one block
    blocks_per_request: int
    window: int | None = None  # sliding_window or attention_chunk_size


class RankPlan(BaseModel):
    model_config = ConfigDict(frozen=True)
    rank: int
    pp_stage: int
    layers: int
    device_bytes: int
    weights_bytes: int
    kv_heads: int
    kv_bytes_per_token: int
    terms: list[Term]
    kv_pool_bytes: int
    bytes_per_block: int
    num_blocks: int


class DecodeBound(BaseModel):
    """Roofline bound for one decode step at ``batch`` sequences of ``context`` tokens (a ceiling)."""

    model_config = ConfigDict(frozen=True)
    batch: int
    context: int
    bytes_per_step: int  # weights read + KV read, busiest rank
    flops_per_step: int
    memory_time_s: float
    compute_time_s: float
    tokens_per_s: float
    bound: str  # "memory" | "compute"
    qk_matches_per_head: int  # the seed's N P + N (N + 1) / 2 for N = context - prompt


class Plan(BaseModel):
    model_config = ConfigDict(frozen=True)
    model: str
    basis: str  # the model spec's basis: native / transformers / generic (ModelSpec.basis)
    gpu: str
    engine: str
    layout: dict[str, int | bool]
    num_gpus: int
    num_nodes: int
    max_model_len: int
    block_size: int
    kv_groups: list[KVGroup]
    padding_waste_fraction: float  # share of each block spent on vLLM's padding layers (hybrids)
    blocks_per_request: int
    num_blocks: int  # per engine (DP replica): min over ranks
    kv_cache_tokens: int
    max_concurrency: float
    max_num_seqs_at_len: int  # whole sequences of max_model_len that fit
    max_model_len_that_starts: int
    concurrency: int | None  # the workload asked for, if any
    fits: bool
    verdict: str
    ranks: list[RankPlan]
    warnings: list[str]
    decode: DecodeBound | None = None
    suggestions: list[str] = []


# ----------------------------------------------------------------------------- KV groups (vLLM)


def _page_bytes(cache, block_size: int, tp: int, kv_b: int, state_b: int) -> int:
    if cache.kind in ATTENTION_KINDS:
        return block_size * cache.elems_per_token("vllm", tp) * kv_b
    return cache.state_bytes("vllm", tp, state_b)


def group_blocks(kind: str, window: int | None, max_len: int, block_size: int, in_flight: int) -> int:
    """Blocks one request at ``max_len`` takes in one group (vLLM ``max_memory_usage_bytes / page``).

    sliding: cdiv(min(W - 1 + in_flight, L), bs) + 1 (the window need not start on a block edge);
    chunked: cdiv(min(C + in_flight, L), bs); full / MLA: cdiv(L, bs); recurrent state: 1 page.
    ``in_flight`` = max_num_batched_tokens x concurrent batches (2 in vLLM 0.33, 1 in 0.11).
    """
    if kind == "sliding_attention":
        return cdiv(min(window - 1 + in_flight, max_len), block_size) + 1
    if kind == "chunked_attention":
        return cdiv(min(window + in_flight, max_len), block_size)
    if kind in ATTENTION_KINDS:
        return cdiv(max_len, block_size)
    return 1


def _kv_parts(cache) -> tuple:
    """The caches vLLM registers for one decoder layer: none, one, or, for a measured layer that both
    attends and keeps a recurrent state (Falcon-H1) or a DSA indexer, each part as a layer of its own."""
    if cache.kind == "none":
        return ()
    if cache.kind == "state" and (cache.attention is not None or cache.indexer_dim):
        parts = [cache.attention, cache.indexer(), cache.state_only() if cache.parts else None]
        return tuple(p for p in parts if p is not None)
    return (cache,)


def kv_groups(layers: list[tuple[DecoderLayer, int]], block_size: int, tp: int, kv_b: int, state_b: int, max_len: int,
              in_flight: int) -> tuple[list[KVGroup], int, int]:
    """(groups, bytes_per_block, block_size) as vLLM's hybrid KV-cache manager lays them out.

    ``layers``: (layer, count) pairs. Uniform: one group, bytes_per_block = layers x page. Hybrid: layers bucketed by spec,
    group_size = min bucket (or max if max < 1.5 min), short groups padded; with recurrent
    state the attention block grows until one attention page holds one state page.
    """
    buckets: dict = {}  # cache spec -> [the spec, how many layers]
    for layer, n in layers:
        for cache in _kv_parts(layer.cache):
            entry = buckets.setdefault(cache, [cache, 0])
            entry[1] += n
    if not buckets:
        return [], 0, block_size
    states = [c for c in buckets if c.kind not in ATTENTION_KINDS]
    attn = [c for c in buckets if c.kind in ATTENTION_KINDS]
    if states and attn:  # Platform._align_hybrid_block_size
        per_token = max(c.elems_per_token("vllm", tp) * kv_b for c in attn)
        state_page = max(c.state_bytes("vllm", tp, state_b) for c in states)
        block_size = max(block_size, block_size * cdiv(state_page, block_size * per_token))
    sizes = [v[1] for v in buckets.values()]
    group_size = sizes[0] if len(sizes) == 1 else (max(sizes) if max(sizes) < 1.5 * min(sizes) else min(sizes))
    pages = {c: _page_bytes(v[0], block_size, tp, kv_b, state_b) for c, v in buckets.items()}
    if states and attn:  # mamba pages padded to the attention page (page_size_padded)
        top = max(pages[c] for c in attn)
        pages = dict.fromkeys(pages, top)
    groups = []
    for cache, (_, members) in buckets.items():
        n_groups = cdiv(members, group_size)
        for g in range(n_groups):
            real = min(group_size, members - g * group_size)
            groups.append(KVGroup(kind=cache.kind, layers=real, padding_layers=group_size - real,
                                  page_bytes=pages[cache], window=cache.window,
                                  blocks_per_request=group_blocks(cache.kind, cache.window, max_len, block_size,
                                                                  in_flight)))
    bytes_per_block = group_size * max(pages.values())
    return groups, bytes_per_block, block_size


# ----------------------------------------------------------------------------- workspace estimates


def activation_estimate(spec: ModelSpec, tp: int, tokens: int, num_reqs: int, act_b: int) -> int:
    """Estimated activation peak of vLLM's profile run (``max_num_batched_tokens`` tokens).

    per token: 4 x hidden (residual, norm, attention out, MLP out) + this rank's q/k/v width
    + its widest MLP (gate + up, or top-k experts' gate + up), in the model dtype; plus the
    sampler's fp32 logits, num_reqs x vocab x 4 B. Checked against vLLM #10517 (Llama-3.1-8B,
    20,000 tokens): 2.03 GiB estimated vs 2.07 GiB logged.
    """
    attn_w, mlp_w = spec.memo("widths", lambda: _widths(spec))
    per_token = (4 * spec.hidden_size + cdiv(attn_w, tp) + cdiv(mlp_w, tp)) * act_b
    return tokens * per_token + num_reqs * spec.vocab_size * 4


def _widths(spec: ModelSpec) -> tuple[int, int]:
    """(widest q/k/v output, widest MLP gate+up output incl. top-k experts) over the layers."""
    attn_w = mlp_w = 0
    for layer, _ in stage_distinct(spec, 1, 0):
        attn_w = max(attn_w, sum(c.out_features for c in layer.attention if isinstance(c, Linear) and c.shard == "column"))
        width = sum(c.out_features for c in layer.mlp if isinstance(c, Linear) and c.shard == "column")
        if layer.experts is not None:
            width += layer.experts.num_experts_per_tok * sum(
                c.out_features for c in layer.experts.linears if not c.name.endswith("down_proj"))
        mlp_w = max(mlp_w, width)
    return attn_w, mlp_w


# ----------------------------------------------------------------------------- the plan


def plan(spec: ModelSpec, gpu: GpuSpec, engine: EngineConfig = EngineConfig(), layout: Layout = Layout(),
         concurrency: int | None = None, gpus_per_node: int | None = None, prompt_tokens: int | None = None,
         suggest: bool = True) -> Plan:
    """Plan ``spec`` on ``layout.gpus`` x ``gpu`` with ``engine``; the verdict follows the tightest rank.

    When it does not fit and ``suggest`` is set, each fix in ``suggestions`` was planned and fits.
    """
    check_layout(spec, layout)
    if concurrency is not None and (isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1):
        raise PlanInputError("concurrency", f"must be a whole number >= 1, got {concurrency!r}")
    max_len = engine.max_model_len or spec.max_position_embeddings or 4096
    mla = uses_mla(spec)
    default_bs = {"vllm": VLLM_MLA_BLOCK_SIZE if mla else VLLM_BLOCK_SIZE, "sglang": 1, "custom": 16}[engine.engine]
    block_size = engine.block_size or default_bs
    kv_b = kv_dtype_bytes(spec, engine.kv_cache_dtype)
    state_b = DTYPE_BITS[spec.dtype] // 8
    act_b = 2 if spec.dtype != "fp32" else 4
    tp = layout.tp
    mnbt, max_seqs = batch_defaults(gpu.memory_bytes, engine)
    in_flight = (2 if engine.vllm_version == "0.33" else 1) * mnbt * (layout.pp if layout.pp > 1 else 1)
    per_node = gpus_per_node or gpu.gpus_per_node
    warnings: list[str] = list(spec.warnings)  # a generic or transformers-built spec says so in every plan
    if tp > per_node:
        warnings.append(f"TP={tp} spans nodes ({per_node} GPUs per node): keep TP inside a node, use PP across nodes")

    ranks: list[RankPlan] = []
    stage_blocks: list[tuple[int, list[KVGroup], int, int]] = []
    for stage, n_layers in enumerate(pp_partition(len(spec.layers), layout.pp)):
        layers = stage_distinct(spec, layout.pp, stage)
        groups, bytes_per_block, bs = spec.memo(  # the same for every GPU of a picker sweep
            ("groups", layout.pp, stage, block_size, tp, kv_b, state_b, max_len, in_flight),
            lambda: kv_groups(layers, block_size, tp, kv_b, state_b, max_len, in_flight))
        weights = engine.weights_bytes if engine.weights_bytes is not None else rank_weight_bytes(
            spec, layout, stage, engine.weight_format)
        terms, pool = _budget(spec, gpu, engine, layout, weights, mnbt, max_seqs, act_b, mla)
        per_token = sum(layer.cache.elems_per_token("vllm", tp) * n for layer, n in layers) * kv_b
        if engine.engine == "sglang":
            blocks = (pool // per_token // bs) if per_token and pool > 0 else 0
            bytes_per_block = per_token * bs
        else:
            blocks = pool // bytes_per_block if bytes_per_block and pool > 0 else 0
        stage_blocks.append((blocks, groups, bs, bytes_per_block))
        ranks.append(RankPlan(rank=stage * tp, pp_stage=stage, layers=n_layers, device_bytes=gpu.memory_bytes,
                              weights_bytes=weights, kv_heads=kv_heads_on_rank(spec, tp), kv_bytes_per_token=per_token,
                              terms=terms, kv_pool_bytes=pool, bytes_per_block=bytes_per_block, num_blocks=blocks))
    # Only stages with cached layers hold KV (a PP stage of MLP-only blocks has none to constrain).
    kv_stages = [i for i, (_, groups, _, _) in enumerate(stage_blocks) if groups]
    if not kv_stages:
        raise PlanInputError("model", "no layer of this model keeps per-sequence state: there is no KV cache to plan")
    tight = min(kv_stages, key=lambda i: stage_blocks[i][0])
    num_blocks = stage_blocks[tight][0]
    _, groups, block_size, _ = stage_blocks[tight]
    per_request = _request_blocks(groups, max_len, block_size, in_flight, engine)
    if engine.engine == "sglang":
        tokens = num_blocks * block_size
        conc = tokens / max_len
    else:
        conc = num_blocks / per_request if per_request else math.inf
        tokens = int(conc * max_len) if engine.vllm_version == "0.33" or engine.engine == "custom" else (
            num_blocks // max(1, len(groups)) * block_size)
    # vLLM keeps block 0 as the null block; a request at max_model_len must fit in the rest.
    usable = num_blocks - 1 if engine.engine == "vllm" else num_blocks
    whole = usable // per_request if per_request else 0
    starts = longest_start(groups, block_size, in_flight, engine, usable, max_len * 64)
    fits = whole >= 1 and (concurrency is None or whole >= concurrency) and all(r.kv_pool_bytes > 0 for r in ranks)
    verdict = _verdict(fits, whole, concurrency, max_len, ranks, starts)
    nodes = cdiv(layout.gpus, per_node)
    decode = decode_bound(spec, gpu, layout, ranks[tight].weights_bytes, min(concurrency or max(whole, 1), max(whole, 1)),
                          max_len, kv_b, prompt_tokens)
    result = Plan(model=spec.name, basis=spec.basis, gpu=gpu.name, engine=engine.engine,
                layout={"tensor_parallel_size": tp, "pipeline_parallel_size": layout.pp,
                        "data_parallel_size": layout.dp, "enable_expert_parallel": layout.ep},
                num_gpus=layout.gpus, num_nodes=nodes, max_model_len=max_len, block_size=block_size,
                kv_groups=groups, padding_waste_fraction=_padding_fraction(groups), blocks_per_request=per_request, num_blocks=num_blocks, kv_cache_tokens=tokens,
                max_concurrency=conc, max_num_seqs_at_len=whole, max_model_len_that_starts=starts,
                concurrency=concurrency, fits=fits, verdict=verdict, ranks=ranks, warnings=warnings, decode=decode)
    if not fits and suggest:
        result = result.model_copy(update={"suggestions": _suggestions(spec, gpu, engine, layout, concurrency, result)})
    return result


def _suggestions(spec, gpu, engine, layout, concurrency, base: Plan) -> list[str]:
    """Fixes that were each planned and fit: fp8 KV, more TP, a shorter context, a larger GPU."""
    from kvplan.gpus import GPU_CATALOG

    tries: list[tuple[str, GpuSpec, EngineConfig, Layout]] = []
    if kv_dtype_bytes(spec, engine.kv_cache_dtype) > 1:
        tries.append(("--kv-cache-dtype fp8", gpu, engine.model_copy(update={"kv_cache_dtype": "fp8"}), layout))
    for tp in (layout.tp * 2, layout.tp * 4, layout.tp * 8):
        if tp <= gpu.gpus_per_node:
            tries.append((f"--tensor-parallel-size {tp}", gpu, engine, Layout(tp, layout.pp, layout.dp, layout.ep)))
    bigger = sorted((g for g in GPU_CATALOG.values() if g.memory_bytes > gpu.memory_bytes), key=lambda g: g.memory_bytes)
    tries += [(f"a larger GPU: {g.name}", g, engine, layout) for g in bigger[:3]]
    out = []
    for label, g, e, lay in tries:
        try:
            p = plan(spec, g, e, lay, concurrency, suggest=False)
        except PlanInputError:
            continue
        if p.fits:
            out.append(f"{label}: {p.max_num_seqs_at_len} x {p.max_model_len:,} tokens fit")
    if base.max_model_len_that_starts and all(r.kv_pool_bytes > 0 for r in base.ranks):
        shorter = base.max_model_len_that_starts
        p = plan(spec, gpu, engine.model_copy(update={"max_model_len": shorter}), layout, None, suggest=False)
        if p.fits and shorter < base.max_model_len:
            out.append(f"--max-model-len {shorter}: the longest context one request can start with")
    return out


class SweepPoint(BaseModel):
    model_config = ConfigDict(frozen=True)
    context: int
    max_concurrency: float
    max_num_seqs: int
    kv_bytes_in_use: int  # tightest rank, at the requested concurrency
    kv_pool_bytes: int
    fits: bool


def context_sweep(spec: ModelSpec, gpu: GpuSpec, engine: EngineConfig, layout: Layout, lengths: list[int],
                  concurrency: int) -> list[SweepPoint]:
    """Capacity and KV use at each context length (for memory-vs-context and concurrency charts)."""
    out = []
    for length in lengths:
        p = plan(spec, gpu, engine.model_copy(update={"max_model_len": length}), layout, concurrency, suggest=False)
        rank = min(p.ranks, key=lambda r: r.num_blocks)
        in_use = min(concurrency, max(p.max_num_seqs_at_len, 0)) if p.fits else concurrency
        out.append(SweepPoint(context=length, max_concurrency=p.max_concurrency, max_num_seqs=p.max_num_seqs_at_len,
                              kv_bytes_in_use=in_use * p.blocks_per_request * rank.bytes_per_block,
                              kv_pool_bytes=rank.kv_pool_bytes, fits=p.fits))
    return out


def _padding_fraction(groups: list[KVGroup]) -> float:
    """vLLM's "may waste at most X% KV cache memory": padding layers over all group slots."""
    slots = sum(g.layers + g.padding_layers for g in groups)
    return sum(g.padding_layers for g in groups) / slots if slots else 0.0


def longest_len_for(spec: ModelSpec, gpu: GpuSpec, concurrency: int, engine: EngineConfig = EngineConfig(),
                    layout: Layout = Layout(), limit: int = 10_000_000) -> int:
    """The longest max_model_len at which ``concurrency`` whole sequences still fit (0 if none).

    Binary search over plans: sequences that fit only fall as the length grows.
    """
    def fits(length: int) -> bool:
        p = plan(spec, gpu, engine.model_copy(update={"max_model_len": length}), layout, suggest=False)
        return p.max_num_seqs_at_len >= concurrency
    return _largest_len(fits, limit)


def _request_blocks(groups, max_len, block_size, in_flight, engine) -> int:
    if engine.engine == "sglang":
        return cdiv(max_len, block_size)
    return sum(group_blocks(g.kind, g.window, max_len, block_size, in_flight) for g in groups)


def longest_start(groups: list[KVGroup], block_size: int, in_flight: int, engine: EngineConfig, usable: int,
                  hi: int) -> int:
    """The longest context (<= ``hi``) whose blocks for one request fit in ``usable`` blocks; 0 if none.

    Without sliding or chunked groups the blocks of one request are n_full x cdiv(L, bs) + n_state, so
    L = floor((usable - n_state) / n_full) x bs (SGLang: cdiv(L, page) <= usable, L = usable x page).
    Windowed groups saturate piecewise: binary search over ``_request_blocks``, which the closed form
    equals wherever both apply (tests/test_plan.py compares them). Worked number: Llama-3.1-8B, one
    full group, 5,000 usable blocks of 16 -> 80,000 tokens.
    """
    if engine.engine == "sglang":
        return min(hi, usable * block_size) if usable >= 1 else 0
    if any(g.window for g in groups):
        return _largest_len(lambda L: _request_blocks(groups, L, block_size, in_flight, engine) <= usable, hi)
    full = sum(1 for g in groups if g.kind in ATTENTION_KINDS)
    state = len(groups) - full
    if state > usable:
        return 0
    if not full:  # recurrent state only: one page per request at any length
        return hi
    return min(hi, (usable - state) // full * block_size)


def _largest_len(ok, hi: int) -> int:
    """Largest L in [0, hi] with ok(L) (ok is monotone decreasing); 0 if none."""
    if not ok(1):
        return 0
    lo, hi_ = 1, hi
    while lo < hi_:
        mid = (lo + hi_ + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi_ = mid - 1
    return lo


def _budget(spec, gpu, engine, layout, weights, mnbt, max_seqs, act_b, mla) -> tuple[list[Term], int]:
    """The budget terms of one rank and the KV pool they leave."""
    total = gpu.memory_bytes
    device = Term(name="device memory", bytes=total, basis=gpu.memory_basis,
                  source=f"{gpu.name}: memory the runtime exposes (cudaMemGetInfo)")
    w = Term(name="weights", bytes=weights, basis="measured" if engine.weights_bytes is not None else "derived",
             source="typed in" if engine.weights_bytes is not None else "exact sum of this rank's shards")
    if engine.engine == "custom":
        runtime = int(engine.runtime_gib * GiB)
        headroom = int(engine.headroom_gib * GiB)
        terms = [device, w, Term(name="runtime workspace", bytes=runtime, basis="configured", source="typed in"),
                 Term(name="headroom", bytes=headroom, basis="configured", source="typed in")]
        return terms, total - weights - runtime - headroom
    if engine.engine == "sglang":
        frac = engine.mem_fraction_static
        source = "--mem-fraction-static"
        if frac is None:
            frac, reserved = sglang_mem_fraction_static(total, layout.tp, layout.pp, mla)
            source = f"SGLang default: (GPU MiB - {reserved} MiB reserved) / GPU MiB"
        free = total - SGLANG_CONTEXT_BYTES
        keep_free = int(free * (1 - frac))
        terms = [device, Term(name="CUDA context + NCCL", bytes=SGLANG_CONTEXT_BYTES, basis="estimated",
                              source="before SGLang's pre-load measurement"), w,
                 Term(name=f"left free: (1 - {frac}) x free before load", bytes=keep_free, basis="derived", source=source)]
        return terms, free - keep_free - weights
    util = engine.gpu_memory_utilization or VLLM_GPU_MEMORY_UTILIZATION[engine.vllm_version]
    requested = math.ceil(total * util)
    terms = [device, Term(name=f"outside the budget: (1 - {util}) x device", bytes=total - requested,
                          basis="configured", source="--gpu-memory-utilization"), w]
    if engine.kv_cache_memory_bytes is not None:
        terms.append(Term(name="KV cache (--kv-cache-memory-bytes)", bytes=engine.kv_cache_memory_bytes,
                          basis="configured", source="replaces the profiled pool exactly"))
        return terms, engine.kv_cache_memory_bytes
    act = engine.activation_bytes
    if act is None:
        act = activation_estimate(spec, layout.tp, mnbt, min(mnbt, max_seqs), act_b)
    terms.append(Term(name=f"activation peak ({mnbt} batched tokens, {max_seqs} seqs)", bytes=act,
                      basis="measured" if engine.activation_bytes is not None else "estimated",
                      source="profile run over max_num_batched_tokens; sampler logits in fp32"))
    terms.append(_NON_TORCH)
    graphs = 0 if engine.enforce_eager or engine.vllm_version == "0.11" else VLLM_CUDA_GRAPH_BYTES
    if graphs:
        terms.append(_CUDA_GRAPHS)
    return terms, requested - weights - act - VLLM_NON_TORCH_BYTES - graphs


# The vLLM terms that are the same in every plan (made once: a picker sweep builds ~1,000 budgets).
_NON_TORCH = Term(name="non-torch memory", bytes=VLLM_NON_TORCH_BYTES, basis="estimated",
                  source="growth after vLLM's init snapshot, 0.16 GiB in public H100 logs")
_CUDA_GRAPHS = Term(name="CUDA graphs", bytes=VLLM_CUDA_GRAPH_BYTES, basis="estimated",
                    source="vLLM >= 0.21 subtracts its estimate; 0.17-0.36 GiB in public logs")


def _verdict(fits, whole, concurrency, max_len, ranks, starts) -> str:
    if any(r.kv_pool_bytes <= 0 for r in ranks):
        worst = min(ranks, key=lambda r: r.kv_pool_bytes)
        return (f"Does not fit: stage {worst.pp_stage} has {-worst.kv_pool_bytes / GiB:.2f} GiB too little "
                "for weights and workspace, before any KV cache.")
    if whole < 1:
        return f"Does not fit: one request of {max_len:,} tokens needs more KV blocks than the pool holds " \
               f"(the longest that starts is {starts:,})."
    if concurrency is not None and whole < concurrency:
        return f"Does not fit: {whole} sequences of {max_len:,} tokens fit, {concurrency} were asked for."
    return f"Fits: {whole} sequences of {max_len:,} tokens at once on the tightest rank."


def decode_bound(spec: ModelSpec, gpu: GpuSpec, layout: Layout, weights_rank: int, batch: int, context: int,
                 kv_b: int, prompt_tokens: int | None = None) -> DecodeBound:
    """Roofline ceiling for one decode step: max(bytes / bandwidth, FLOPs / peak).

    bytes = this rank's weights + batch x context x KV bytes/token on the rank; FLOPs = 2 x active
    params / (tp x pp) x batch + attention 4 x batch x context x heads x head_dim per layer / tp.
    """
    from kvplan.params import count_params

    p = count_params(spec)
    tp, pp = layout.tp, layout.pp
    layers = stage_distinct(spec, 1, 0)
    kv_tok = sum(layer.cache.elems_per_token("vllm", tp) * n for layer, n in layers) * kv_b // pp
    moved = weights_rank + batch * context * kv_tok
    attn_layers = sum(n for layer, n in layers if layer.cache.elems_per_token("vllm", 1))
    flops = 2 * p.active_params * batch // (tp * pp) + 4 * batch * context * spec.num_attention_heads * spec.head_dim * attn_layers // (tp * pp)
    t_mem = moved / gpu.bandwidth_bytes_per_s
    t_cmp = flops / gpu.bf16_dense_flops
    step = max(t_mem, t_cmp) * pp  # stages run one after another for one token
    prompt = prompt_tokens if prompt_tokens is not None else 0
    n = max(context - prompt, 0)
    return DecodeBound(batch=batch, context=context, bytes_per_step=moved, flops_per_step=flops,
                       memory_time_s=t_mem, compute_time_s=t_cmp, tokens_per_s=batch / step if step else 0.0,
                       bound="memory" if t_mem >= t_cmp else "compute",
                       qk_matches_per_head=n * prompt + n * (n + 1) // 2)
