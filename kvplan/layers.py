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

    def state_bytes(self, convention: Convention = "vllm", tp: int = 1, dtype_bytes: int = 2) -> int:
        ssm = self.num_heads // tp * self.head_dim * self.state_size
        return _conv_bytes(self.conv_dim, self.conv_kernel, convention, tp, dtype_bytes) + ssm * _ssm_bytes(
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


def _conv_bytes(conv_dim: int, kernel: int, convention: Convention, tp: int, dtype_bytes: int) -> int:
    cols = kernel if convention == "transformers" else kernel - 1
    return conv_dim // tp * cols * dtype_bytes


def _ssm_bytes(convention: Convention, dtype_bytes: int) -> int:
    return 4 if convention == "transformers" else dtype_bytes  # transformers keeps SSM state in fp32



# ----------------------------------------------------------------------------- measured state (transformers path)


class StatePart(_Frozen):
    """One fixed-size tensor a layer keeps per sequence, as measured in transformers' cache.

    ``shape`` is one sequence's slice (batch dim dropped), in transformers' layout. ``split_dim``
    is the dim that tensor parallelism divides (heads or channels; None: every rank keeps it all).
    ``conv``: a convolution window whose last dim is the kernel width; vLLM keeps kernel - 1
    columns of it (``MambaStateShapeCalculator``), transformers the whole kernel.
    ``transformers_bytes``: element size transformers stores it in whatever the model dtype (an
    fp32 SSM state), or None when it follows the model dtype.
    """

    name: str
    shape: tuple[int, ...]
    split_dim: int | None = 0
    conv: bool = False
    transformers_bytes: int | None = None

    def numel(self, convention: Convention = "vllm", tp: int = 1) -> int:
        n = 1
        for i, d in enumerate(self.shape):
            if self.conv and i == len(self.shape) - 1 and convention == "vllm":
                d = max(1, d - 1)
            if i == self.split_dim:
                d = max(1, d // tp)
            n *= d
        return n

    def nbytes(self, convention: Convention = "vllm", tp: int = 1, dtype_bytes: int = 2) -> int:
        b = self.transformers_bytes if convention == "transformers" and self.transformers_bytes else dtype_bytes
        return self.numel(convention, tp) * b


class MeasuredState(_Frozen):
    """A layer of a family kvplan has no builder for, as measured in transformers' cache object:
    fixed per-sequence ``parts`` (conv / recurrent states), plus, for a layer that also attends
    (Falcon-H1's parallel attention + Mamba), the ``attention`` it caches per token.

    transformers: sum of parts at the measured sizes; vllm: conv parts keep kernel - 1 columns and
    every part is in the model dtype (vLLM ``mamba_ssm_cache_dtype`` auto), split over TP along
    ``split_dim``. Worked number: a Mamba-2 mixer with conv [4352, 4] and ssm [32, 64, 128], bf16:
    vllm (4352 x 3 + 32 x 64 x 128) x 2 = 550,400 B per sequence; transformers (fp32 ssm)
    4352 x 4 x 2 + 262,144 x 4 = 1,083,392 B.
    """

    kind: Literal["state"] = "state"
    parts: tuple[StatePart, ...] = ()
    attention: FullAttention | SlidingWindowAttention | ChunkedLocalAttention | None = Field(
        default=None, discriminator="kind")
    # Elements per token of a sparse-attention indexer's keys (DSA: ``DynamicIndexedLayer.indexer_keys``
    # [B, T, index_head_dim]), one head, kept whole on every TP rank like vLLM's indexer cache.
    indexer_dim: int = Field(default=0, ge=0)

    @property
    def window(self) -> int | None:
        return self.attention.window if self.attention is not None else None

    def elems_per_token(self, convention: Convention = "vllm", tp: int = 1) -> int:
        attn = self.attention.elems_per_token(convention, tp) if self.attention is not None else 0
        return attn + self.indexer_dim

    def tokens_held(self, tokens: int, convention: Convention = "vllm") -> int:
        return self.attention.tokens_held(tokens, convention) if self.attention is not None else 0

    def state_bytes(self, convention: Convention = "vllm", tp: int = 1, dtype_bytes: int = 2) -> int:
        return sum(p.nbytes(convention, tp, dtype_bytes) for p in self.parts)

    def state_only(self) -> "MeasuredState":
        """The recurrent part alone (vLLM gives the attention and the mixer separate KV groups)."""
        return self.model_copy(update={"attention": None, "indexer_dim": 0})

    def indexer(self) -> FullAttention | None:
        """The indexer's keys as vLLM's separate one-head cache (its width split over K/V halves)."""
        if not self.indexer_dim or self.attention is None:
            return None
        d = self.indexer_dim
        return FullAttention(num_key_value_heads=1, head_dim=d - d // 2, v_head_dim=max(1, d // 2)) if d > 1 else None


CacheSpec = (
    FullAttention
    | SlidingWindowAttention
    | ChunkedLocalAttention
    | MLAAttention
    | MambaState
    | LinearAttentionState
    | NoCache
    | MeasuredState
)

# Which kinds are attention (a KV dtype applies) and which are recurrent state (model dtype).
ATTENTION_KINDS = ("full_attention", "sliding_attention", "chunked_attention", "mla")
STATE_KINDS = ("mamba", "linear_attention", "state")
