"""What one decoder layer keeps per sequence: one frozen spec per kind of layer.

Shaped after vLLM's ``vllm/v1/kv_cache_interface.py`` (one spec class per layer type, sizes as
properties), with two accounting conventions, because engines and transformers disagree:

- ``vllm``: what vLLM allocates. MLA stores the compressed latent; sliding / chunked layers keep
  only their window; recurrent layers keep a conv state of ``conv_kernel - 1`` columns.
- ``transformers``: what the transformers 5.23 ``DynamicCache`` holds for that model
  (``cache_utils.py``): sliding and chunked layers keep ``window - 1`` tokens
  (``DynamicSlidingWindowLayer``); MLA keeps the latent too (keys ``[B, 1, T, kv_lora_rank]``,
  values ``[B, 1, T, qk_rope_head_dim]``); Falcon's new decoder architecture caches K/V already
  broadcast to every query head; recurrent layers keep the whole ``conv_kernel`` and an fp32
  SSM state (``LinearAttentionLayer``).

Attention sizes are in *elements*; the caller multiplies by the KV dtype (``kv.py``). Recurrent
state comes in bytes, since its parts have different dtypes. ``tp`` is the
tensor-parallel degree: it divides KV heads (replicating when ``tp > heads``), never the MLA latent.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Convention = Literal["vllm", "transformers"]
CONVENTIONS: tuple[str, ...] = ("vllm", "transformers")

PosInt = Field(gt=0)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    @property
    def window(self) -> int | None:
        """Tokens a local layer looks back over (sliding window or chunk size); None for the rest."""
        return None


def heads_per_rank(heads: int, tp: int) -> int:
    """KV heads one TP rank stores: ``max(1, heads // tp)`` (vLLM ``get_num_kv_heads``).

    With tp > heads each rank keeps a whole replica of one head: MQA (1 head) at TP=8 keeps
    1 head on every rank, not 1/8 of one.
    """
    return max(1, heads // tp)


class FullAttention(_Frozen):
    """MHA / GQA / MQA: K and V for every token, per KV head.

    elements per token = num_key_value_heads x (head_dim + v_head_dim).
    Worked number: Llama-3.1-8B, 8 heads x (128 + 128) = 2048 elements = 4096 B in bf16.
    """

    kind: Literal["full_attention"] = "full_attention"
    num_key_value_heads: int = PosInt
    head_dim: int = PosInt
    v_head_dim: int = PosInt
    # Heads transformers' cache holds when it differs (Falcon-40B caches K/V broadcast to all
    # 128 query heads, FalconAttention); None means num_key_value_heads.
    transformers_cached_heads: int | None = None

    def elems_per_token(self, convention: Convention = "vllm", tp: int = 1) -> int:
        heads = self.num_key_value_heads
        if convention == "transformers" and self.transformers_cached_heads:
            heads = self.transformers_cached_heads
        return heads_per_rank(heads, tp) * (self.head_dim + self.v_head_dim)

    def tokens_held(self, tokens: int, convention: Convention = "vllm") -> int:
        """Tokens this layer keeps for one sequence that has processed ``tokens`` positions."""
        return tokens

    def state_bytes(self, convention: Convention = "vllm", tp: int = 1, dtype_bytes: int = 2) -> int:
        """Bytes held per sequence regardless of length (recurrent layers only)."""
        return 0


class SlidingWindowAttention(FullAttention):
    """A layer that attends over the last ``sliding_window`` positions only.

    vllm: the blocks of tokens older than the window are freed, so a sequence holds
    min(tokens, sliding_window) tokens (paged reservation is in ``paging.py``).
    transformers: ``DynamicSlidingWindowLayer`` keeps the last ``sliding_window - 1`` tokens.
    Worked number: Mistral-7B-v0.1, W = 4096, at 32768 tokens holds 4096 tokens (vllm).
    """

    kind: Literal["sliding_attention"] = "sliding_attention"  # type: ignore[assignment]
    sliding_window: int = PosInt

    @property
    def window(self) -> int:
        return self.sliding_window

    def tokens_held(self, tokens: int, convention: Convention = "vllm") -> int:
        if convention == "transformers":
            return min(tokens, self.sliding_window - 1)
        return min(tokens, self.sliding_window)


class ChunkedLocalAttention(FullAttention):
    """Llama-4 local layers: attention within fixed chunks of ``attention_chunk_size``.

    vllm: only the current chunk is needed, earlier chunks' blocks are freed, so
    tokens held = ((tokens - 1) mod C) + 1. transformers: a ``DynamicSlidingWindowLayer`` of
    width C, holding min(tokens, C - 1). Worked number: C = 8192 at 10000 tokens holds 1808 (vllm).
    """

    kind: Literal["chunked_attention"] = "chunked_attention"  # type: ignore[assignment]
    attention_chunk_size: int = PosInt

    @property
    def window(self) -> int:
        return self.attention_chunk_size

    def tokens_held(self, tokens: int, convention: Convention = "vllm") -> int:
        if tokens <= 0:
            return 0
        if convention == "transformers":
            return min(tokens, self.attention_chunk_size - 1)
        return (tokens - 1) % self.attention_chunk_size + 1


class _NoTokens(_Frozen):
    """A layer that keeps nothing per token: recurrent state (fixed per sequence) or nothing at all."""

    def elems_per_token(self, convention: Convention = "vllm", tp: int = 1) -> int:
        return 0

    def tokens_held(self, tokens: int, convention: Convention = "vllm") -> int:
        return 0

    def state_bytes(self, convention: Convention = "vllm", tp: int = 1, dtype_bytes: int = 2) -> int:
        return 0


class MLAAttention(_Frozen):
    """DeepSeek multi-head latent attention.

    One latent per token: kv_lora_rank + qk_rope_head_dim elements, no K/V pair. vllm replicates
    it on every TP rank (``MLAAttentionSpec``: 1 head, ``max_tp_shards = 1``); transformers 5.23
    caches the same latent (keys = compressed kv, values = rotated k_pe). Decompressed per-head
    K/V would be heads x (nope + rope + v) = 128 x 320 = 40,960 elements for V3: 71x more.
    Worked number: DeepSeek-V3, 512 + 64 = 576 elements = 1152 B/token/layer in bf16.
    """

    kind: Literal["mla"] = "mla"
    kv_lora_rank: int = PosInt
    qk_rope_head_dim: int = PosInt
    qk_nope_head_dim: int = PosInt
    v_head_dim: int = PosInt
    num_attention_heads: int = PosInt

    @property
    def latent_dim(self) -> int:
        return self.kv_lora_rank + self.qk_rope_head_dim

    def elems_per_token(self, convention: Convention = "vllm", tp: int = 1) -> int:
        return self.latent_dim  # not divided by tp: every rank holds the whole latent

    def tokens_held(self, tokens: int, convention: Convention = "vllm") -> int:
        return tokens

    def state_bytes(self, convention: Convention = "vllm", tp: int = 1, dtype_bytes: int = 2) -> int:
        return 0


class MambaState(_NoTokens):
    """A Mamba-2 mixer: a fixed conv state and SSM state per sequence, whatever its length.

    conv state: conv_dim x (conv_kernel - 1) columns in vllm (``MambaStateShapeCalculator``),
    conv_dim x conv_kernel in transformers. ssm state: num_heads x head_dim x state_size, in the
    model dtype in vllm (``mamba_ssm_cache_dtype`` auto) and fp32 in transformers.
    conv_dim = intermediate + 2 x n_groups x state_size. Heads and conv channels split over tp.
    Worked number: Nemotron-H-8B in bf16, (10240 x 3 + 128 x 64 x 128) x 2 B = 2,158,592 B per
    sequence per layer (vllm).
    """

    kind: Literal["mamba"] = "mamba"
    conv_dim: int = PosInt
    conv_kernel: int = PosInt
    num_heads: int = PosInt
    head_dim: int = PosInt
    state_size: int = PosInt
    # B/C groups, when known: vLLM gives each TP rank whole groups, so with tp not dividing n_groups it
    # adds tp - n_groups replicated groups to conv_dim (MambaStateShapeCalculator.
    # extra_groups_for_head_shards). None: conv_dim is split as it is.
    n_groups: int | None = None

    def state_bytes(self, convention: Convention = "vllm", tp: int = 1, dtype_bytes: int = 2) -> int:
        ssm = self.num_heads // tp * self.head_dim * self.state_size
        conv_dim = self.conv_dim
        if convention == "vllm" and self.n_groups and self.n_groups % tp:
            conv_dim += 2 * max(0, tp - self.n_groups) * self.state_size
        return _conv_bytes(conv_dim, self.conv_kernel, convention, tp, dtype_bytes) + ssm * _ssm_bytes(
            convention, dtype_bytes)


class LinearAttentionState(_NoTokens):
    """Gated DeltaNet (Qwen3-Next ``linear_attention``): conv state plus a recurrent matrix.

    conv_dim = 2 x key_heads x key_head_dim + value_heads x value_head_dim; conv columns and
    dtypes as in ``MambaState``. recurrent state: value_heads x key_head_dim x value_head_dim.
    Worked number: Qwen3-Next-80B-A3B in bf16, (8192 x 3 + 32 x 128 x 128) x 2 B = 1,097,728 B
    per sequence per layer (vllm).
    """

    kind: Literal["linear_attention"] = "linear_attention"
    num_key_heads: int = PosInt
    key_head_dim: int = PosInt
    num_value_heads: int = PosInt
    value_head_dim: int = PosInt
    conv_kernel: int = PosInt

    @property
    def conv_dim(self) -> int:
        return 2 * self.num_key_heads * self.key_head_dim + self.num_value_heads * self.value_head_dim

    def state_bytes(self, convention: Convention = "vllm", tp: int = 1, dtype_bytes: int = 2) -> int:
        rec = self.num_value_heads // tp * self.key_head_dim * self.value_head_dim
        return _conv_bytes(self.conv_dim, self.conv_kernel, convention, tp, dtype_bytes) + rec * _ssm_bytes(
            convention, dtype_bytes)


class NoCache(_NoTokens):
    """A layer that keeps nothing per sequence (an MLP-only block of a hybrid)."""

    kind: Literal["none"] = "none"


# ----------------------------------------------------------------------------- short convolution (LFM2)


class ShortConvState(_NoTokens):
    """LFM2's gated short convolution (``Lfm2ShortConv``): a conv state only, no SSM state.

    vllm: conv_dim x (conv_kernel - 1) columns in the model dtype (``MambaStateShapeCalculator.
    short_conv_state_shape`` = (conv_kernel - 1, conv_dim // tp); ``short_conv_state_dtype``: the
    mamba cache dtype, auto = model dtype). transformers: conv_dim x conv_kernel (its
    ``LinearAttentionLayer`` keeps ``conv_kernel_size`` columns). conv_dim = hidden_size, split over tp.
    Worked number: LFM2-1.2B (hidden 2048, conv_L_cache 3) in bf16: 2048 x 2 x 2 B = 8,192 B per
    sequence per conv layer (vllm); 2048 x 3 x 2 B = 12,288 B (transformers).
    """

    kind: Literal["short_conv"] = "short_conv"
    conv_dim: int = PosInt
    conv_kernel: int = PosInt

    def state_bytes(self, convention: Convention = "vllm", tp: int = 1, dtype_bytes: int = 2) -> int:
        return _conv_bytes(self.conv_dim, self.conv_kernel, convention, tp, dtype_bytes)


# ----------------------------------------------------------------------------- attention beside a Mamba mixer (Falcon-H1)


class AttentionAndMamba(_Frozen):
    """Falcon-H1's parallel hybrid layer: attention and a Mamba-2 mixer side by side in one decoder
    layer, each keeping its own cache.

    vllm: two cache layers (``FalconH1ParallelHybrid`` in vllm/model_executor/models/falcon_h1.py holds
    an attention, whose spec is a ``FullAttentionSpec``, and a ``MambaMixer2``, a ``MambaSpec`` sized by
    ``get_mamba_state_shape_from_config``), grouped with the other layers of their kind; ``cache_parts``
    gives them. Zamba2's hybrid layers (a shared attention block before the Mamba mixer) are the same. transformers: one ``LinearAttentionAndFullAttentionLayer`` (layer type "hybrid") holding K/V
    and the conv / SSM states. Sizes are the sums of the two parts.
    Worked number: Falcon-H1 defaults (8 KV heads of 128; d_ssm 1024, 128 heads of 8, 1 group,
    d_state 256, d_conv 4) in bf16: 4096 B of K/V per token plus (1536 x 3 + 128 x 8 x 256) x 2 B =
    533,504 B of state per sequence, per layer (vllm).
    """

    kind: Literal["attention_and_mamba"] = "attention_and_mamba"
    attention: FullAttention
    mamba: MambaState

    @property
    def window(self) -> int | None:
        return self.attention.window

    def elems_per_token(self, convention: Convention = "vllm", tp: int = 1) -> int:
        return self.attention.elems_per_token(convention, tp)

    def tokens_held(self, tokens: int, convention: Convention = "vllm") -> int:
        return self.attention.tokens_held(tokens, convention)

    def state_bytes(self, convention: Convention = "vllm", tp: int = 1, dtype_bytes: int = 2) -> int:
        return self.mamba.state_bytes(convention, tp, dtype_bytes)


def cache_parts(cache) -> tuple:
    """The caches one layer keeps, each of a single kind: (attention, mamba) for an
    ``AttentionAndMamba`` layer, (cache,) for the rest. vLLM lays out KV groups over these."""
    if isinstance(cache, AttentionAndMamba):
        return (cache.attention, cache.mamba)
    return (cache,)


def _conv_bytes(conv_dim: int, kernel: int, convention: Convention, tp: int, dtype_bytes: int) -> int:
    cols = kernel if convention == "transformers" else kernel - 1
    return conv_dim // tp * cols * dtype_bytes


def _ssm_bytes(convention: Convention, dtype_bytes: int) -> int:
    return 4 if convention == "transformers" else dtype_bytes  # transformers keeps SSM state in fp32


CacheSpec = (
    FullAttention
    | SlidingWindowAttention
    | ChunkedLocalAttention
    | MLAAttention
    | MambaState
    | LinearAttentionState
    | NoCache
    | ShortConvState
    | AttentionAndMamba
)

# Which kinds are attention (a KV dtype applies) and which are recurrent state (model dtype).
ATTENTION_KINDS = ("full_attention", "sliding_attention", "chunked_attention", "mla")
STATE_KINDS = ("mamba", "linear_attention", "short_conv")
# Layers keeping both (split by cache_parts wherever a size is per kind).
COMPOSITE_KINDS = ("attention_and_mamba",)
