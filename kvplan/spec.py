"""The frozen model spec: config.json fields by their own names, plus the weights, layer by layer.

A ``ModelSpec`` is built once from a config dict by ``hf_config.parse_config`` and never changed.
Weights are listed as components (``Linear``, ``Norm``, ``Tensor``), each with its shape and how
tensor parallelism shards it, so that parameter counts, quantized bytes and per-rank bytes are all
exact sums over the same list.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from kvplan.layers import CacheSpec

# How tensor parallelism splits a weight (vLLM's linear layers):
# column: the output dim is split (q/k/v, gate/up); row: the input dim is split (o, down; the
# bias is kept whole on every rank); replicated: every rank holds all of it (norms, routers);
# vocab: rows padded to a multiple of 64 then split (embeddings, lm_head); expert: the experts'
# weights, split over tp x dp ranks (by intermediate dim, or whole experts under EP).
Shard = Literal["column", "row", "replicated", "vocab", "expert"]
# How a spec was built: ``native`` (a kvplan family module: exact), ``transformers`` (built with
# transformers on the meta device: parameters exact, cache measured on a depth-reduced copy),
# ``generic`` (an unknown family read as a Llama-style decoder: an estimate, never called exact).
Basis = Literal["native", "transformers", "generic"]
Category = Literal["embeddings", "attention", "mlp", "experts", "router", "norms", "lm_head", "other"]
CATEGORIES: tuple[str, ...] = (
    "embeddings", "attention", "mlp", "experts", "router", "norms", "lm_head", "other",
)
# Values one spec memoizes before its memo starts afresh (ModelSpec.memo): a picker sweep over
# several lengths stores ~300; a server's cached spec lives for days.
MEMO_ENTRIES = 4096
_UNSET = object()  # ModelSpec.memo: no value stored yet (None is a value)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def __eq__(self, other):
        # pydantic's __eq__ with its answer for these models (no extra fields, no private attributes, no generics:
        # same class and equal fields), ~5x faster: the value caches (kvplan.parallel._shard_of, ...) compare the
        # components of every fresh spec with those they hold. ModelSpec (a private memo) keeps pydantic's.
        if type(other) is type(self) and self.__pydantic_private__ is None:
            return self.__dict__ == other.__dict__
        return BaseModel.__eq__(self, other)


class Linear(_Frozen):
    """A weight matrix [out_features, in_features] (+ bias [out_features]), ``count`` copies.

    ``count`` > 1 stands for stacked experts: 128 experts of the same shape are one Linear with
    count=128. ``quantizable`` is False for weights that quantized checkpoints keep in 16 bits.
    """

    name: str
    in_features: int = Field(gt=0)
    out_features: int = Field(gt=0)
    bias: bool = False
    count: int = Field(default=1, gt=0)
    shard: Shard = "column"
    quantizable: bool = True

    @property
    def weight_numel(self) -> int:
        return self.count * self.in_features * self.out_features

    @property
    def bias_numel(self) -> int:
        return self.count * self.out_features if self.bias else 0

    @property
    def numel(self) -> int:  # weight_numel + bias_numel in one expression (the hottest property of a fresh plan)
        return self.count * self.out_features * (self.in_features + 1 if self.bias else self.in_features)


class Norm(_Frozen):
    """A LayerNorm (weight + bias) or RMSNorm (weight only) over ``dim``."""

    name: str
    dim: int = Field(gt=0)
    bias: bool = False
    count: int = Field(default=1, gt=0)
    shard: Shard = "replicated"
    quantizable: bool = False

    @property
    def numel(self) -> int:
        return self.count * self.dim * (2 if self.bias else 1)


class Tensor(_Frozen):
    """Any other learned tensor (conv kernels, A_log, attention sinks, position tables)."""

    name: str
    numel: int = Field(gt=0)
    shard: Shard = "replicated"
    quantizable: bool = False


Component = Linear | Norm | Tensor


class Experts(_Frozen):
    """Routed experts of one MoE layer: ``num_experts`` copies of ``linears`` (one expert).

    Active per token: ``num_experts_per_tok`` of them.
    """

    num_experts: int = Field(gt=0)
    num_experts_per_tok: int = Field(gt=0)
    linears: tuple[Linear, ...]

    @property
    def numel_per_expert(self) -> int:
        return sum(c.numel for c in self.linears)

    @property
    def numel(self) -> int:
        return self.num_experts * self.numel_per_expert


class DecoderLayer(_Frozen):
    """One decoder layer: its weights by category, and what it caches per sequence."""

    cache: CacheSpec = Field(discriminator="kind")
    attention: tuple[Component, ...] = ()
    mlp: tuple[Component, ...] = ()
    experts: Experts | None = None
    router: tuple[Component, ...] = ()
    norms: tuple[Component, ...] = ()
    other: tuple[Component, ...] = ()


class FormatOverride(_Frozen):
    """One component stored in another format than the checkpoint's default, in the listed layers.

    Computed at parse time from the quantization_config's ignore / exclude lists and per-module
    formats (``kvplan.quantization``). ``layers`` are decoder-layer indices; () for a component
    outside the layers (embeddings, lm_head, other). ``format`` is a weight format or
    ``"unquantized"`` (kept in the checkpoint's 16-bit dtype). ``experts`` > 0: only that many of
    the layer's routed experts use ``format`` (mixed-precision MoE); 0: every copy.
    """

    layers: tuple[int, ...] = ()
    category: Category
    name: str
    format: str
    experts: int = Field(default=0, ge=0)


class TowerProfile(_Frozen):
    """The largest dummy item vLLM's profile run encodes with this tower (kvplan.vllm_mm), from config.json names.

    ``modality``: the one vLLM profiles (MultiModalBudget.get_modality_with_max_tokens); ``tokens_per_item``: its
    get_mm_max_tokens_per_item (LM positions, the encoder budget's unit); ``embeds_per_item``: rows of text-hidden
    output it returns; ``patches_per_item``: encoder sequence positions (every frame / tile, padding and class
    tokens included); ``pixels_per_item``: floating input elements (pixel_values numel, cast to the model dtype);
    ``hidden_size`` / ``intermediate_size`` / ``num_layers`` / ``gated_mlp``: the encoder blocks;
    ``block_mask``: "dense" where the whole batch attends under one (N, N) model-dtype mask (Pixtral HF without
    xformers); ``embed_width``: the width of one output row where it is not the text hidden size (0: it is; Qwen3-VL
    concatenates its deepstack features: out_hidden_size x (1 + deepstack layers)).
    Gemma-3-27B: image, 256 tokens, 256 embeds, 4,096 patches, 3 x 896^2 pixels."""

    modality: Literal["image", "video", "audio", "vision_chunk"] = "image"
    tokens_per_item: int = Field(gt=0)
    embeds_per_item: int = Field(gt=0)
    patches_per_item: int = Field(gt=0)
    pixels_per_item: int = Field(gt=0)
    hidden_size: int = Field(gt=0)
    intermediate_size: int = Field(gt=0)
    num_layers: int = Field(gt=0)
    gated_mlp: bool = False
    block_mask: Literal["none", "dense_from_0_12"] = "none"
    # frames an item holds, and the bytes a frame costs in the chunk rule vLLM sizes the encoder calls by
    # (gemma4_mm.py _encoder_chunk: patches x 4 x position_embedding_size x 8; 0: the batch runs in one call)
    frames_per_item: int = Field(default=1, gt=0)
    frame_chunk_cost: int = Field(default=0, ge=0)
    embed_width: int = Field(default=0, ge=0)
    # attention-stage activations that shard with TP, in units of N x h x dtype / ways (kvplan.vllm_mm): 4 = qkv 3h +
    # attention output h; Qwen's ViT keeps qkv, its contiguous q/k copy and their rotated output alive to the proj
    attn_live_sharded: int = Field(default=4, gt=0)
    # bytes the tower's first forward allocates and keeps as a module buffer (not a weight: after "Model loading
    # took"), so vLLM's profile holds them from the encoder's dummy run through the LM's: MoonViT's 2-D RoPE table
    # (kvplan.families.towers KIMI_K25_ROPE_GRID); 0 where the tower keeps nothing
    kept_buffer_bytes: int = Field(default=0, ge=0)
    # (patch, spatial merge, temporal patch, channels) of a Qwen ViT, whose vLLM 0.11.0 - 0.12.0 video item follows
    # max_model_len (kvplan.families.towers.qwen_vl_length_video); empty: the item reads no length
    length_video: tuple[int, ...] = ()
    # the items of the tower's other modalities (kvplan.vllm_mm picks the largest whose --limit-mm-per-prompt is not
    # 0): Qwen's video beside its image, Gemma-4's image beside its video; () where the model has one modality
    others: tuple["TowerProfile", ...] = ()
    source: str = ""


class Tower(_Frozen):
    """A non-text tower a multimodal checkpoint ships (ViT + its projector, an audio encoder).

    ``components``: every weight, repeated encoder layers as ``count`` copies (Linear / Norm) or
    ``numel`` times the layers (Tensor). Shards as vLLM lays the tower out under TP (column / row
    parallel linears, norms and patch / position embeddings replicated); ``num_heads``: the heads
    vLLM's QKVParallelLinear splits over TP. Kept out of the LM's parameter totals
    (``count_params(...).tower_params``); the plan counts it when the engine loads it.
    """

    name: str
    category: Literal["vision", "audio"] = "vision"
    components: tuple[Component, ...]
    num_heads: int = Field(gt=0)
    source: str = ""
    profile: TowerProfile | None = None  # vLLM's profile-run dummy item (None: its geometry is not modeled)
    # the modalities vLLM's model marks the tower with (get_supported_mm_limits / _mark_tower_model): vLLM skips
    # building it when --limit-mm-per-prompt gives every one 0, from ``vllm_skip_from`` (the release whose model file
    # first does; kvplan.vllm_mm.loads_tower)
    modalities: tuple[str, ...] = ("image",)
    vllm_skip_from: tuple[int, int, int] = (0, 15, 0)

    @property
    def numel(self) -> int:
        return sum(c.numel for c in self.components)


class BatchBuffer(_Frozen):
    """A device buffer an engine's model constructor sizes by max_num_batched_tokens (not a weight, not in the
    totals): ``copies`` x tokens x (``columns``, split cdiv(columns, TP) over TP ranks where ``tp_split``) x
    ``column_bytes``. Worked number: DeepSeek-V4.1-Flash's Engram staged_rows (24 hash columns of 256 bf16, split by
    TP, 2 layers) at 8,192 tokens and TP 8: 2 x 8,192 x 3 x 512 = 25,165,824 B."""

    name: str
    columns: int = Field(gt=0)
    column_bytes: int = Field(gt=0)
    tp_split: bool = False
    copies: int = Field(default=1, gt=0)

    def rank_bytes(self, tokens: int, tp: int) -> int:
        cols = -(-self.columns // tp) if self.tp_split else self.columns
        return self.copies * tokens * cols * self.column_bytes


class RopeCache(_Frozen):
    """One rotary embedding an engine builds for the model: vLLM's ``get_rope`` returns one cached
    instance per distinct parameter set, each holding a cos/sin table as a non-persistent buffer
    (not in the checkpoint, not a parameter). Fields are what the model file passes to ``get_rope``:
    ``rotary_dim`` the rotated dims per head (head_dim x partial_rotary_factor; MLA: qk_rope_head_dim),
    ``max_position`` its max_position argument, ``rope_type`` / ``factor`` / ``original_max_position``
    the scaling, ``fp32`` when the model file asks for a float32 table (gpt-oss), ``layer_types`` the
    cache kinds of the layers that use it (empty: every attention layer). Sized by
    ``kvplan.vllm_layouts.vllm_rope_cache_bytes``. Llama-3.1-8B: one table, rotary_dim 128,
    max_position 131,072, llama3 scaling."""

    name: str = "rotary_emb"  # the module attribute (rotary_emb, indexer_rope_emb), or local / global
    rotary_dim: int = Field(gt=0)
    max_position: int = Field(gt=0)
    base: float = 10000.0  # rope_theta: only tells distinct tables apart
    rope_type: str = "default"
    factor: float = Field(default=1.0, gt=0)
    original_max_position: int | None = Field(default=None, gt=0)
    fp32: bool = False
    layer_types: tuple[str, ...] = ()


class ModelSpec(_Frozen):
    """A decoder, as its config.json says it is.

    Field names copy config.json. Values the config omits are derived and the derivation is
    recorded in ``assumptions`` (e.g. "head_dim = hidden_size // num_attention_heads = 128").
    """

    name: str
    model_type: str
    vocab_size: int = Field(gt=0)
    hidden_size: int = Field(gt=0)
    num_hidden_layers: int = Field(gt=0)
    num_attention_heads: int = Field(gt=0)
    num_key_value_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    max_position_embeddings: int | None = None
    tie_word_embeddings: bool = False
    dtype: str = "bf16"  # the checkpoint's dtype (config "torch_dtype"/"dtype"), canonical name
    quantization: str | None = None  # weight format the checkpoint ships in, if quantized
    quantization_exclude: tuple[str, ...] = ()  # categories the checkpoint keeps wholly unquantized
    # Per layer / per component formats that differ from ``quantization`` (ignore lists, mixed precision).
    quantization_overrides: tuple[FormatOverride, ...] = ()
    # The quantization_config's method as kvplan.quantization reads it ("modelopt", "modelopt_mixed" for ModelOpt's
    # MIXED_PRECISION, "compressed-tensors", ...): which vLLM config class loads the checkpoint decides what a release
    # refuses (kvplan.vllm_layouts.modelopt_refusal). Left out of model_dump (tests/parse_golden.py hashes it).
    quantization_method: str | None = Field(default=None, exclude=True)

    embeddings: tuple[Component, ...]
    layers: tuple[DecoderLayer, ...]
    final_norm: tuple[Component, ...] = ()
    lm_head: tuple[Component, ...] = ()
    other: tuple[Component, ...] = ()  # e.g. OPT's project_in / project_out

    basis: Basis = "native"
    basis_note: str = ""  # one line on how exact this spec is, shown wherever its numbers are
    assumptions: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    towers: tuple[Tower, ...] = ()  # vision / audio towers the checkpoint ships (not in the LM totals)
    # Multi-token-prediction layers (DeepSeek-V3 num_nextn_predict_layers): loaded only for MTP speculative
    # decoding; not in the LM totals. mtp_other: their enorm / hnorm / eh_proj / shared_head.norm.
    mtp_layers: tuple[DecoderLayer, ...] = ()
    mtp_other: tuple[Component, ...] = ()
    # The rotary tables the engine builds (vLLM get_rope instances): not weights, not in the totals.
    rope_caches: tuple[RopeCache, ...] = ()
    # Device buffers vLLM's model constructor sizes by max_num_batched_tokens (DeepSeek-V4.1: kvplan.vllm_dsv41);
    # left out of model_dump so every other spec's serialized form (tests/parse_golden.py hashes it) is unchanged.
    batch_buffers: tuple[BatchBuffer, ...] = Field(default=(), exclude=True)
    # The text config makes multimodal positions attend bidirectionally (Gemma-4 use_bidirectional_attention
    # "vision": vLLM's is_mm_prefix_lm, transformers_utils/model_arch_config_convertor.py): with its towers
    # loaded, vLLM >= 0.22 raises the default batch budget to the largest multimodal item (kvplan.engines).
    mm_prefix_lm: bool = False

    # Derived values computed once per spec (the spec is frozen, so they never go stale).
    _memo: dict = PrivateAttr(default_factory=dict)

    def memo(self, key, compute):
        """``compute()`` once per spec and key; later calls return the stored value (at most
        MEMO_ENTRIES of them: past that the memo starts afresh).

        Safe when threads share the spec (the web app's cache hands one spec to every session): the
        dict is read through a local name, so a thread that swaps in a fresh dict meanwhile cannot
        make this call lose its value (at worst two threads compute the same value once each)."""
        private = self.__pydantic_private__  # a slot: 40x faster than self._memo (pydantic's __getattr__)
        memo = private["_memo"]
        if memo.get("owner") is not self:  # model_copy shares the dict: start afresh
            memo = private["_memo"] = {"owner": self}
        value = memo.get(key, _UNSET)  # one hash of the key (a plan's keys hold GPUs, engine settings, layouts)
        if value is _UNSET:
            if len(memo) > MEMO_ENTRIES:  # keys carry lengths and layouts: a long-lived spec must not grow forever
                memo = private["_memo"] = {"owner": self}
            value = memo[key] = compute()
        return value

    @property
    def layer_kinds(self) -> dict[str, int]:
        """How many layers of each cache kind: {'full_attention': 10, 'sliding_attention': 52}."""
        kinds: dict[str, int] = {}
        for layer in self.layers:
            kinds[layer.cache.kind] = kinds.get(layer.cache.kind, 0) + 1
        return kinds


def distinct_layers(layers) -> list[tuple[DecoderLayer, int]]:
    """(layer, how many times it repeats), in first-seen order. Builders reuse one object for
    identical layers, so a 126-layer model is priced from a handful of distinct layers."""
    counts: dict[int, list] = {}
    for layer in layers:
        entry = counts.get(id(layer))
        if entry is None:
            counts[id(layer)] = [layer, 1]
        else:
            entry[1] += 1
    return [(layer, n) for layer, n in counts.values()]


def spec_distinct_layers(spec: ModelSpec) -> list[tuple[DecoderLayer, int]]:
    """distinct_layers over all of ``spec.layers``, once per spec (a plan asks for it from the parameter count,
    the weights walk, the layer groups and the pipeline stages)."""
    return spec.memo(("distinct_layers",), lambda: distinct_layers(spec.layers))


def walk(spec: ModelSpec):
    """Yield (category, component, copies) covering every weight of the model exactly once.

    Routed experts come out as their per-expert linears with ``copies = num_experts`` (times the
    number of identical layers).
    """
    for comp in spec.embeddings:
        yield "embeddings", comp, 1
    for layer, n in spec_distinct_layers(spec):
        for category in ("attention", "mlp", "router", "norms", "other"):
            for comp in getattr(layer, category):
                yield category, comp, n
        if layer.experts is not None:
            for comp in layer.experts.linears:
                yield "experts", comp, layer.experts.num_experts * n
    for comp in spec.final_norm:
        yield "norms", comp, 1
    for comp in spec.lm_head:
        yield "lm_head", comp, 1
    for comp in spec.other:
        yield "other", comp, 1
