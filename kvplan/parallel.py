"""What one GPU rank holds under tensor, pipeline, data and expert parallelism.

Rules (vLLM's, which SGLang and TensorRT-LLM share for KV):
- TP splits attention heads and MLP columns; KV heads per rank = max(1, kv_heads // tp), so with
  tp > kv_heads every rank keeps a replica (the KV projections are replicated likewise). TP must
  divide the query heads, and KV heads and TP must divide one another.
- MLA's latent cache is not split: every TP rank keeps all of it.
- Embeddings and lm_head: vocabulary padded to a multiple of 64, then split over TP.
- Norms and routers are replicated; a row-parallel layer's bias is kept whole on every rank.
- PP: ``num_layers // pp`` per stage, the remainder one each to the stages before the last
  (vLLM ``get_pp_indices``: 94 layers over 4 stages -> 23, 24, 24, 23). Embeddings live on the first
  stage, the final norm and lm_head on the last (a tied lm_head is a second copy there).
  An engine that splits otherwise (SGLang's get_pp_indices, kvplan.sglang.pp_partition) passes its own
  ``Layout.pp_split``.
- Experts: split over tp x dp ranks by intermediate size, or, with expert parallelism, as whole
  experts, ``cdiv(E, tp x dp)`` on the busiest rank. Attention and dense weights are per DP replica.
"""

import functools
from dataclasses import dataclass, fields

from kvplan.errors import PlanInputError
from kvplan.layers import MLA_KINDS, heads_per_rank
from kvplan.spec import DecoderLayer, Linear, ModelSpec, Norm, Tensor, distinct_layers, spec_distinct_layers
from kvplan.units import cdiv
from kvplan.weights import (
    base_dtype,
    component_bytes,
    component_format,
    layer_groups,
    overrides_by_layer,
    resolve_format,
)

VOCAB_PADDING = 64  # vLLM DEFAULT_VOCAB_PADDING_SIZE (vocab_parallel_embedding.py)
KV_PROJ = ("k_proj", "v_proj")
FUSED_QKV = ("c_attn", "query_key_value", "qkv_proj", "Wqkv")
ROW_EXPERT = ("down_proj", "w2")


@dataclass(frozen=True)
class Layout:
    """A parallel layout. ``ep``: experts placed whole (vLLM --enable-expert-parallel).

    ``attn_dp``: SGLang's DP attention (``--enable-dp-attention --dp N``): inside the TP group of ``tp`` GPUs,
    attention runs data-parallel over N groups of ``tp // N`` GPUs (``compute_dp_attention_world_info``:
    attn_tp_size = tp_size // dp_size), each with its own scheduler, requests and KV pool; attention weights and KV
    heads are split over ``tp // N`` only; experts, embeddings and lm_head stay split over all ``tp``. ``dense_tp``:
    SGLang ``--moe-dense-tp-size`` (the dense MLP layers of a MoE model; 1 = replicated on every GPU; None = tp).
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: bool = False
    attn_dp: int = 1
    dense_tp: int | None = None
    # Layers per pipeline stage when the engine splits them otherwise than vLLM (SGLang get_pp_indices,
    # kvplan.sglang.pp_partition; SGLANG_PP_LAYER_PARTITION); None: vLLM's rule (pp_partition).
    pp_split: tuple[int, ...] | None = None

    def __hash__(self) -> int:
        # the dataclass's hash of the fields, kept after the first call: a plan's memo keys hash its layout ~10 times
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash(tuple(getattr(self, f.name) for f in fields(self)))
            object.__setattr__(self, "_hash", h)
        return h

    def __getstate__(self) -> dict:
        # a pickled or copied Layout hashes afresh where it lands: hash(None) is an address before Python 3.12
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    @property
    def attn_tp(self) -> int:
        return max(1, self.tp // self.attn_dp)

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp


def check_layout(spec: ModelSpec, layout: Layout) -> None:
    """Refuse what the engines refuse, naming the flag."""
    for flag, value in (("tensor_parallel_size", layout.tp), ("pipeline_parallel_size", layout.pp),
                        ("data_parallel_size", layout.dp)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 4096:
            raise PlanInputError(flag, f"must be a whole number from 1 to 4096, got {value!r}")
    if layout.attn_dp > 1 and layout.tp % layout.attn_dp:
        raise PlanInputError("dp_attention_size", f"--dp {layout.attn_dp} must divide --tp {layout.tp} "
                             "(SGLang server_args: tp_size % dp_size == 0 with --enable-dp-attention)")
    if layout.dense_tp is not None and (layout.dense_tp < 1 or layout.tp % layout.dense_tp):
        raise PlanInputError("moe_dense_tp_size", f"{layout.dense_tp} must divide --tp {layout.tp}")
    nq, nkv, tp = spec.num_attention_heads, spec.num_key_value_heads, layout.attn_tp
    if nq % tp:
        raise PlanInputError("tensor_parallel_size", f"{tp} does not divide num_attention_heads ({nq})")
    if nkv % tp and tp % nkv:
        raise PlanInputError("tensor_parallel_size",
                             f"{tp} and num_key_value_heads ({nkv}) must divide one another (vLLM asserts this)")
    if layout.pp > spec.num_hidden_layers:
        raise PlanInputError("pipeline_parallel_size", f"{layout.pp} stages for {spec.num_hidden_layers} layers")
    if layout.pp_split is not None and (len(layout.pp_split) != layout.pp or sum(layout.pp_split) != len(spec.layers)
                                        or min(layout.pp_split) < 1):
        raise PlanInputError("pipeline_parallel_size", f"layer split {list(layout.pp_split)} must give each of the "
                             f"{layout.pp} stages at least one of the {len(spec.layers)} layers")


def pp_partition(num_layers: int, pp: int, split: tuple[int, ...] | None = None) -> list[int]:
    """Layers per stage, vLLM's rule: 94 over 4 -> [23, 24, 24, 23] (``split``: an engine's own, as given)."""
    if split is not None:
        return list(split)
    parts = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        parts[-i] += 1
    return parts


def stage_layers(spec: ModelSpec, pp: int, stage: int, split: tuple[int, ...] | None = None
                 ) -> tuple[DecoderLayer, ...]:
    parts = pp_partition(len(spec.layers), pp, split)
    start = sum(parts[:stage])
    return spec.layers[start:start + parts[stage]]


def stage_distinct(spec: ModelSpec, pp: int, stage: int, split: tuple[int, ...] | None = None
                   ) -> list[tuple[DecoderLayer, int]]:
    """(layer, count) pairs of one pipeline stage, computed once per spec."""
    if pp == 1:  # the one stage is every layer
        return spec_distinct_layers(spec)
    return spec.memo(("stage", pp, stage, split), lambda: distinct_layers(stage_layers(spec, pp, stage, split)))


def uses_mla(spec: ModelSpec) -> bool:
    """Whether any layer caches an MLA latent (one replicated latent per token, not KV heads)."""
    return spec.memo("mla", lambda: any(layer.cache.kind in MLA_KINDS for layer, _ in stage_distinct(spec, 1, 0)))


def kv_heads_on_rank(spec: ModelSpec, tp: int) -> int:
    """KV heads one rank stores (1 for MLA: the latent, replicated)."""
    if uses_mla(spec):
        return 1
    return heads_per_rank(spec.num_key_value_heads, tp)


def _shard(comp, tp: int, spec: ModelSpec):
    """The part of one component that a TP rank holds."""
    return _shard_of(comp, tp, spec.num_key_value_heads, spec.num_attention_heads, spec.head_dim)


@functools.lru_cache(maxsize=8192)
def _shard_of(comp, tp: int, num_key_value_heads: int, num_attention_heads: int, head_dim: int):
    """``_shard`` made once per component value, TP and head shape (components are frozen: equal ones shard alike):
    layers of one checkpoint, the layouts of a picker sweep and a re-parsed config meet the same ones again, and
    each copy (``model_copy``) costs more than the arithmetic on it."""
    if isinstance(comp, Linear):
        if comp.shard == "column":
            if comp.name in KV_PROJ:
                per_head = comp.out_features // num_key_value_heads
                return comp.model_copy(update={"out_features": heads_per_rank(num_key_value_heads, tp) * per_head})
            if comp.name in FUSED_QKV:
                kv_total = (comp.out_features // head_dim - num_attention_heads) // 2
                out = (num_attention_heads // tp + 2 * heads_per_rank(kv_total, tp)) * head_dim
                return comp.model_copy(update={"out_features": out})
            return comp.model_copy(update={"out_features": cdiv(comp.out_features, tp)})
        if comp.shard == "row":
            return _RowShard(comp, cdiv(comp.in_features, tp))
        if comp.shard == "vocab":
            padded = cdiv(comp.out_features, VOCAB_PADDING) * VOCAB_PADDING
            return comp.model_copy(update={"out_features": cdiv(padded, tp)})
        return comp
    if comp.shard == "column":
        if isinstance(comp, Norm):
            return comp.model_copy(update={"dim": cdiv(comp.dim, tp)})
        if isinstance(comp, Tensor):
            return comp.model_copy(update={"numel": cdiv(comp.numel, tp)})
    return comp


class _RowShard:
    """A row-parallel linear on one rank: input dim split, bias whole (so bias_numel is unchanged)."""

    def __init__(self, comp: Linear, in_rank: int):
        self.linear = comp.model_copy(update={"in_features": in_rank, "bias": False})
        self.bias_numel = comp.bias_numel


def _bytes(category, comp, fmt, base, base_bytes) -> int:
    if isinstance(comp, _RowShard):
        return component_bytes(category, comp.linear, fmt, base) + comp.bias_numel * base_bytes
    return component_bytes(category, comp, fmt, base)


def _formats_bytes(category, comp, fmt, overrides, base, base_bytes, shard) -> int:
    """Bytes of one (sharded) component under its format(s) (an override wins, see component_format)."""
    return sum(_bytes(category, shard, f, base, base_bytes) for f, _ in component_format(category, comp, fmt, overrides))


def _rank_bytes(category, comp, fmt, overrides, base, base_bytes, width: int, spec: ModelSpec) -> int:
    """``_formats_bytes`` of the shard of ``comp`` one of ``width`` TP ranks holds."""
    mix = overrides.get((category, comp.name)) if overrides else None  # all component_format reads of them
    return _component_rank_bytes(category, comp, fmt, mix, base, base_bytes, width, spec.num_key_value_heads,
                                 spec.num_attention_heads, spec.head_dim)


@functools.lru_cache(maxsize=8192)
def _component_rank_bytes(category, comp, fmt, mix, base, base_bytes, width, num_key_value_heads, num_attention_heads,
                          head_dim) -> int:
    """``_rank_bytes`` made once per value, as ``_shard_of`` (a fresh spec of a checkpoint prices the same components
    at the same widths again; one cached call instead of shard, formats, sizes)."""
    overrides = None if mix is None else {(category, comp.name): mix}
    return _formats_bytes(category, comp, fmt, overrides, base, base_bytes,
                          _shard_of(comp, width, num_key_value_heads, num_attention_heads, head_dim))


def _pricing(spec: ModelSpec, weight_format: str | None) -> tuple[str, bool, str, int]:
    """(format, use the checkpoint's per-module overrides, 16-bit base dtype, its bytes): what every per-rank weight
    sum below prices with."""
    fmt, use_overrides = resolve_format(spec, weight_format)
    base = base_dtype(spec, fmt)
    return fmt, use_overrides, base, {"fp32": 4, "bf16": 2, "fp16": 2}[base]


def rank_weight_bytes(spec: ModelSpec, layout: Layout, stage: int = 0, weight_format: str | None = None) -> int:
    return spec.memo(("weights", layout, stage, weight_format),
                     lambda: _rank_weight_bytes(spec, layout, stage, weight_format))


def _rank_weight_bytes(spec: ModelSpec, layout: Layout, stage: int, weight_format: str | None) -> int:
    """Weight bytes on the busiest rank of pipeline stage ``stage``.

    Worked number: Llama-3.1-70B bf16 at TP=8: 141,107,412,992 B in all, 17,640,734,720 B per rank
    (all / 8, plus 7/8 of the 161 replicated RMSNorm weights of 8192 x 2 B). At TP=1 this is
    ``weight_bytes`` except for vocab padding (gpt2: 50,257 -> 50,304 rows). Per-module formats of the
    checkpoint (``quantization_overrides``) are priced layer by layer, as in ``weight_bytes``.
    """
    fmt, use_overrides, base, base_bytes = _pricing(spec, weight_format)
    top = overrides_by_layer(spec).get(-1) if use_overrides else None
    tp, moe_ranks = layout.tp, layout.tp * layout.dp
    first, last = stage == 0, stage == layout.pp - 1
    total = 0
    if first:
        total += sum(_rank_bytes("embeddings", c, fmt, top, base, base_bytes, tp, spec) for c in spec.embeddings)
        total += sum(_rank_bytes("other", c, fmt, top, base, base_bytes, tp, spec) for c in spec.other)
    parts = pp_partition(len(spec.layers), layout.pp, layout.pp_split)
    start = sum(parts[:stage])
    groups = (layer_groups(spec, start, start + parts[stage]) if use_overrides
              else [(layer, n, None) for layer, n in stage_distinct(spec, layout.pp, stage, layout.pp_split)])
    for layer, n, mine in groups:
        for category in ("attention", "mlp", "router", "norms", "other"):
            # SGLang DP attention: attention over tp // dp; a MoE model's dense MLP layers over --moe-dense-tp-size
            width = (layout.attn_tp if category == "attention" else
                     layout.dense_tp if category == "mlp" and layer.experts is None and layout.dense_tp else tp)
            total += n * sum(_rank_bytes(category, c, fmt, mine, base, base_bytes, width, spec)
                             for c in getattr(layer, category))
        if layer.experts is not None:
            total += n * _expert_bytes(layer, layout, moe_ranks, fmt, mine, base, base_bytes)
    if last:
        total += sum(_formats_bytes("norms", c, fmt, top, base, base_bytes, c) for c in spec.final_norm)
        head = spec.lm_head or (spec.embeddings[:1] if layout.pp > 1 else ())  # tied: a second copy under PP
        category = "lm_head" if spec.lm_head else "embeddings"
        total += sum(_rank_bytes(category, c, fmt, top, base, base_bytes, tp, spec) for c in head)
    return total


def _expert_bytes(layer, layout, moe_ranks, fmt, overrides, base, base_bytes) -> int:
    """Routed experts on the busiest rank. Mixed formats across experts (mixed precision): under TP
    each format's experts are split like the rest; under EP the busiest rank is priced as holding
    ``cdiv(E, ranks)`` experts of the largest per-expert size (exact when all share one format)."""
    experts = layer.experts
    if layout.ep:
        per_rank = cdiv(experts.num_experts, moe_ranks)
        total = 0
        for c in experts.linears:
            one = c.model_copy(update={"count": 1})
            total += per_rank * max(component_bytes("experts", one, f, base)
                                    for f, _ in component_format("experts", c, fmt, overrides))
        return total
    out = 0
    for c in experts.linears:
        for f, k in component_format("experts", c, fmt, overrides):
            out += _split_expert_bytes(c, f, k or experts.num_experts, moe_ranks, base, base_bytes)
    return out


def routed_expert_groups(spec: ModelSpec, layout: Layout, weight_format: str | None = None
                         ) -> tuple[tuple[int, int, int, int], ...]:
    """((bytes, num_experts, experts_per_tok, experts_on_rank), ...): the routed experts the busiest rank holds, per
    group of identical MoE layers over all stages (``bytes``: the group's copies together), priced as
    ``_rank_weight_bytes`` prices them (the checkpoint's formats and overrides; TP splits each expert, EP places
    ``cdiv(E, tp x dp)`` whole experts on a rank). ``experts_on_rank``: E under TP, cdiv(E, tp x dp) under EP.
    Shared experts are in the layers' ``mlp``, not here. Worked number: gpt-oss-120b (MXFP4) at TP 1: one group of 36
    layers x 128 experts; its bytes over 36 x 128 are one expert's gate_up + down (see tests/test_decode_read.py)."""
    def build():
        fmt, use_overrides, base, base_bytes = _pricing(spec, weight_format)
        moe_ranks = layout.tp * layout.dp
        out = []
        for layer, n, mine in layer_groups(spec, overrides=use_overrides):
            e = layer.experts
            if e is None:
                continue
            on_rank = cdiv(e.num_experts, moe_ranks) if layout.ep else e.num_experts
            out.append((n * _expert_bytes(layer, layout, moe_ranks, fmt, mine, base, base_bytes), e.num_experts,
                        e.num_experts_per_tok, on_rank))
        return tuple(out)
    return spec.memo(("routed-experts", layout.tp, layout.dp, layout.ep, weight_format), build)


def input_embedding_rank_bytes(spec: ModelSpec, layout: Layout, weight_format: str | None = None) -> int:
    """Bytes of the untied input-embedding table's shard on a first-stage rank (vocab padded to 64, split over TP,
    priced as ``_rank_weight_bytes`` prices it); 0 when the table is tied to the lm_head (the head reads it whole every
    step). A decode step reads only its batch's rows of it, so ``decode_bound`` leaves it out of a step's bytes.
    Worked number: Llama-3.1-8B (untied, 128,256 x 4,096 bf16) at TP 1: 1,050,673,152 B; at TP 2: 525,336,576 B."""
    if not spec.lm_head:
        return 0

    def build():
        fmt, use_overrides, base, base_bytes = _pricing(spec, weight_format)
        top = overrides_by_layer(spec).get(-1) if use_overrides else None
        return sum(_rank_bytes("embeddings", c, fmt, top, base, base_bytes, layout.tp, spec) for c in spec.embeddings)
    return spec.memo(("input-embedding", layout.tp, weight_format), build)


@functools.lru_cache(maxsize=8192)
def _split_expert_bytes(c: Linear, f: str, count: int, moe_ranks: int, base: str, base_bytes: int) -> int:
    """``count`` experts of linear ``c`` in format ``f``, split by intermediate size over ``moe_ranks`` ranks: the
    bytes on one (made once per value, as ``_shard_of``)."""
    c_f = c.model_copy(update={"count": count})
    if c_f.name.endswith(ROW_EXPERT):
        return _bytes("experts", _RowShard(c_f, cdiv(c_f.in_features, moe_ranks)), f, base, base_bytes)
    return component_bytes("experts", c_f.model_copy(update={"out_features": cdiv(c_f.out_features, moe_ranks)}), f,
                           base)


def tower_rank_bytes(spec: ModelSpec, tp: int, replicate: bool = False) -> int:
    """Bytes of the vision / audio towers (``spec.towers``) on one TP rank, in the checkpoint's 16-bit dtype.

    vLLM's default ``--mm-encoder-tp-mode weights`` splits the tower's column / row linears over TP like
    the LM's (``cdiv(out, tp)`` / ``cdiv(in, tp)``, a row layer's bias whole) and keeps norms, patch and
    position embeddings whole; ``replicate`` (``--mm-encoder-tp-mode data``) keeps the whole tower on
    every rank. Worked number: Gemma-3-27B bf16, TP 1: 423,060,336 x 2 = 846,120,672 B (0.788 GiB).
    """
    return spec.memo(("towers", tp, replicate), lambda: _tower_rank_bytes(spec, 1 if replicate else tp))


def _tower_rank_bytes(spec: ModelSpec, tp: int) -> int:
    elem = 4 if spec.dtype == "fp32" else 2
    numel = 0
    for tower in spec.towers:
        for c in tower.components:
            if isinstance(c, Linear) and c.shard == "column":
                numel += c.count * cdiv(c.out_features, tp) * (c.in_features + (1 if c.bias else 0))
            elif isinstance(c, Linear) and c.shard == "row":
                numel += c.count * (cdiv(c.in_features, tp) * c.out_features) + c.bias_numel
            else:
                numel += c.numel
    return numel * elem


def mtp_rank_bytes(spec: ModelSpec, layout: Layout, weight_format: str | None = None,
                   own_embeddings: bool = False) -> int:
    """Bytes of the MTP layers (``spec.mtp_layers`` + ``mtp_other``) on one rank of the last stage, laid out
    as the decoder's layers are (the mtp_block is a DeepseekV2DecoderLayer: TP / EP as the LM; eh_proj and the
    norms whole). Embeddings and head are the target's (shared), so none are added. The checkpoint's per-layer
    formats of MTP layer j are the overrides at layer index len(spec.layers) + j (kvplan.quantization.
    format_overrides), renumbered to j here.
    ``own_embeddings``: the draft keeps its own embed_tokens (vLLM under PP > 1: llm_base_proposer.
    _maybe_share_embeddings shares the target's only when the PP group has one rank, read in the 0.17.0 / 0.29.0
    wheels), vocab padded to 64 and split over TP as the target's.
    Worked number: DeepSeek-V3 fp8-block at TP 8: see tests/test_towers_mtp.py; nvidia/GLM-5.2-NVFP4 keeps its MTP
    layer (model.layers.78*) in bf16: 19,905,840,640 B on one rank, not 5,709,643,344 at NVFP4. Qwen3.5-35B-A3B
    under PP: 1,689,281,536 + 248,320 x 2,048 x 2 B = 2,706,400,256 B at TP 1."""
    def build() -> int:
        n = len(spec.layers)
        # an "other" override past the decoder's layers (DeepSeek-V4's e_proj / h_proj, kvplan.quantization.
        # format_overrides) is a top-level one of the draft, whose mtp_other is its "other"
        mine = tuple(o.model_copy(update={"layers": () if o.category == "other" else
                                          tuple(i - n for i in o.layers if i >= n)})
                     for o in spec.quantization_overrides if any(i >= n for i in o.layers))
        draft = spec.model_copy(update={"layers": spec.mtp_layers, "embeddings": spec.embeddings if own_embeddings
                                        else (), "final_norm": (), "lm_head": (), "other": spec.mtp_other,
                                        "quantization_overrides": mine, "mtp_layers": ()})
        return _rank_weight_bytes(draft, Layout(tp=layout.tp, dp=layout.dp, ep=layout.ep), 0, weight_format)
    return spec.memo(("mtp", layout.tp, layout.dp, layout.ep, weight_format, own_embeddings), build) if (
        spec.mtp_layers) else 0
