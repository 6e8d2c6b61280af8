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

    def kv_bytes_per_token(self, convention: "Convention" = "vllm", tp: int = 1, kv_dtype_bytes: int = 2) -> int:
        """Bytes one token adds to this layer's cache: elements x the KV dtype, unless a kind stores
        parts in a fixed format of its own (``MLAIndexerAttention``: fp8 + scales whatever the KV dtype)."""
        return self.elems_per_token(convention, tp) * kv_dtype_bytes  # type: ignore[attr-defined]

    def bytes_held(self, tokens: int, convention: "Convention" = "vllm", tp: int = 1, kv_dtype_bytes: int = 2) -> int:
        """Bytes this layer holds for one sequence that has processed ``tokens`` positions: tokens held
        x bytes per token, except where the cache is not linear in tokens (``CompressedAttention``)."""
        return self.tokens_held(tokens, convention) * self.kv_bytes_per_token(  # type: ignore[attr-defined]
            convention, tp, kv_dtype_bytes)

    def decode_attended(self, tokens: int) -> int:
        """Tokens one decode step's attention of this layer reads at a context of ``tokens`` (vllm's cache): what it
        keeps (full: all; sliding: min(tokens, window); chunked: the current chunk; recurrent: none)."""
        return self.tokens_held(tokens, "vllm")  # type: ignore[attr-defined]

    def decode_read_bytes(self, tokens: int, tp: int = 1, kv_dtype_bytes: int = 2, state_dtype_bytes: int = 2) -> int:
        """Bytes of this layer's cache one decode step reads for one sequence at a context of ``tokens`` (vllm's
        layout on one of ``tp`` ranks): the KV it holds (``bytes_held``) plus its fixed recurrent state. Worked
        number: gpt-oss-120b's sliding layer (8 KV heads of 64, window 128) at 131,072 tokens in bf16 reads
        128 x 8 x 128 x 2 = 262,144 B, not 131,072 x 2,048 = 268,435,456 B."""
        return self.bytes_held(tokens, "vllm", tp, kv_dtype_bytes) + self.state_bytes(  # type: ignore[attr-defined]
            "vllm", tp, state_dtype_bytes)


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
    # The window transformers' config holds when it differs from the engine's: MiMo-V2-Flash's
    # config sets sliding_window = sliding_window_size + 1 (129) while vLLM uses sliding_window_size
    # (128). None means sliding_window.
    transformers_sliding_window: int | None = None

    @property
    def window(self) -> int:
        return self.sliding_window

    def tokens_held(self, tokens: int, convention: Convention = "vllm") -> int:
        if convention == "transformers":
            return min(tokens, (self.transformers_sliding_window or self.sliding_window) - 1)
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
    model dtype in vllm (``mamba_ssm_cache_dtype`` auto) unless the config names its dtype
    (``vllm_ssm_dtype_bytes``: NVIDIA's Nemotron-3 files say float32), and fp32 in transformers.
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
    # Bytes per SSM-state element in vllm when the config names a dtype for it (Nemotron-H
    # "mamba_ssm_cache_dtype", read by vLLM's NemotronHForCausalLMConfig hook); None: model dtype.
    vllm_ssm_dtype_bytes: int | None = None
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
            convention, self.vllm_ssm_dtype_bytes or dtype_bytes)


class LinearAttentionState(_NoTokens):
    """Gated DeltaNet (Qwen3-Next ``linear_attention``): conv state plus a recurrent matrix.

    conv_dim = 2 x key_heads x key_head_dim + value_heads x value_head_dim; conv columns and
    dtypes as in ``MambaState``. recurrent state: value_heads x key_head_dim x value_head_dim.
    Worked number: Qwen3-Next-80B-A3B in bf16, (8192 x 3 + 32 x 128 x 128) x 2 B = 1,097,728 B
    per sequence per layer (vllm). Qwen3.5-27B says ``mamba_ssm_dtype`` float32, which vLLM
    honours: 10240 x 3 x 2 + 48 x 128 x 128 x 4 = 3,207,168 B per sequence per layer.
    """

    kind: Literal["linear_attention"] = "linear_attention"
    num_key_heads: int = PosInt
    key_head_dim: int = PosInt
    num_value_heads: int = PosInt
    value_head_dim: int = PosInt
    conv_kernel: int = PosInt
    # Bytes per recurrent-state element in vllm when the config names a dtype for it (Qwen3.5
    # "mamba_ssm_dtype", read by vLLM's Qwen3_5ForConditionalGenerationConfig hook); None: model dtype.
    vllm_ssm_dtype_bytes: int | None = None

    @property
    def conv_dim(self) -> int:
        return 2 * self.num_key_heads * self.key_head_dim + self.num_value_heads * self.value_head_dim

    def state_bytes(self, convention: Convention = "vllm", tp: int = 1, dtype_bytes: int = 2) -> int:
        rec = self.num_value_heads // tp * self.key_head_dim * self.value_head_dim
        return _conv_bytes(self.conv_dim, self.conv_kernel, convention, tp, dtype_bytes) + rec * _ssm_bytes(
            convention, self.vllm_ssm_dtype_bytes or dtype_bytes)


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


class MLAIndexerAttention(_Frozen):
    """DeepSeek sparse attention (DSA, DeepSeek-V3.2 / GLM-5): an MLA latent plus a lightning-indexer key.

    Each token caches the MLA latent (kv_lora_rank + qk_rope_head_dim) and, in layers that run their
    own indexer, one single-head indexer key of ``index_head_dim``. GLM-5 layers whose
    ``indexer_types`` entry is "shared" reuse an earlier layer's top-k and cache no indexer key
    (``index_head_dim`` None here).

    transformers 5.23 (``DynamicIndexedLayer``, cache_utils.py): keys [B, 1, T, kv_lora_rank],
    values [B, 1, T, qk_rope_head_dim] and ``indexer_keys`` [B, T, index_head_dim], all in the
    model dtype; a shared layer's ``indexer_keys`` stays None.

    vllm (vllm/model_executor/models/deepseek_v2.py @002d607, ``Indexer``: the indexer's
    ``DeepseekV32IndexerCache`` is an ``MLAAttentionSpec`` of head_size
    ``index_head_dim + index_head_dim // 128 * 4`` in torch.uint8: "fp8 naive cache, where we store
    value in fp8 and scale in fp32 per quant_block_size (128) element", whatever --kv-cache-dtype is.
    The latent is an ``MLAAttentionSpec`` of 576 elements in the KV dtype, except that fp8 on
    FLASHMLA_SPARSE is ``fp8_ds_mla`` (vllm/v1/kv_cache_interface.py @001cabc:
    ``block_size * 656``; vllm/v1/attention/backends/mla/flashmla_sparse.py @008a0c3: 512 fp8 NoPE
    + 4 fp32 scales, one per 128 + 64 bf16 RoPE). ``vllm_fp8_layout`` says which fp8 layout the
    selected backend stores: "fp8_ds_mla" (FLASHMLA_SPARSE, the default) or "fp8", the plain
    576-byte latent of FLASHINFER_MLA_SPARSE (flashinfer_mla_sparse.py get_kv_cache_shape
    ``(num_blocks, block_size, 576)`` in the KV dtype; 0.18.0 - 0.33.0 wheels), which vLLM picks on
    sm100 by release, heads per rank and qk_nope_head_dim (kvplan.engines.vllm_sparse_mla_fp8_layout;
    kvplan.plan sets the field for the plan's GPU). Both specs are full-attention specs of one block
    size, so vLLM puts every layer in one ``UniformTypeKVCacheSpecs`` group (kv_cache_utils.py
    ``get_kv_cache_groups``); not divided by TP (one latent, one indexer head).
    Worked numbers, DeepSeek-V3.2 (512 + 64, index_head_dim 128), per token per layer:
    vllm bf16 576 x 2 + 132 = 1284 B; vllm fp8 656 + 132 = 788 B (fp8_ds_mla) or 576 + 132 = 708 B
    (plain fp8); transformers bf16 (576 + 128) x 2 = 1408 B.
    """

    kind: Literal["mla_dsa"] = "mla_dsa"
    kv_lora_rank: int = PosInt
    qk_rope_head_dim: int = PosInt
    qk_nope_head_dim: int = PosInt
    v_head_dim: int = PosInt
    num_attention_heads: int = PosInt
    index_head_dim: int | None = Field(default=None, gt=0)  # None: shares another layer's indexer
    # the config's index_topk (tokens each query attends to, 2048 in DeepSeek-V3.2 / GLM-5), on every DSA layer alike:
    # the width of vLLM's top-k index buffer (kvplan.vllm_layouts.vllm_dsa_topk_buffer_bytes); None in a hand-built spec
    index_topk: int | None = Field(default=None, gt=0)
    # the fp8 latent layout of vLLM's sparse backend: FLASHMLA_SPARSE's fp8_ds_mla or FLASHINFER_MLA_SPARSE's plain fp8
    vllm_fp8_layout: Literal["fp8_ds_mla", "fp8"] = "fp8_ds_mla"

    @property
    def latent_dim(self) -> int:
        return self.kv_lora_rank + self.qk_rope_head_dim

    def elems_per_token(self, convention: Convention = "vllm", tp: int = 1) -> int:
        return self.latent_dim + (self.index_head_dim or 0)  # not divided by tp

    def kv_bytes_per_token(self, convention: Convention = "vllm", tp: int = 1, kv_dtype_bytes: int = 2) -> int:
        if convention == "transformers":
            return self.elems_per_token(convention, tp) * kv_dtype_bytes
        return self.latent_bytes_vllm(kv_dtype_bytes) + self.indexer_bytes_vllm

    def latent_bytes_vllm(self, kv_dtype_bytes: int) -> int:
        """The latent in vLLM: 576 x b (bf16 1152 B; plain fp8 576 B), or at fp8 with ``vllm_fp8_layout``
        "fp8_ds_mla" 512 + 512 / 128 x 4 + 64 x 2 = 656 B."""
        if kv_dtype_bytes == 1 and self.vllm_fp8_layout == "fp8_ds_mla":
            return self.kv_lora_rank + self.kv_lora_rank // 128 * 4 + self.qk_rope_head_dim * 2
        return self.latent_dim * kv_dtype_bytes

    @property
    def indexer_bytes_vllm(self) -> int:
        """The indexer key in vLLM: fp8 values + one fp32 scale per 128: 128 + 4 = 132 B (0 if shared)."""
        d = self.index_head_dim or 0
        return d + d // 128 * 4

    def decode_attended(self, tokens: int) -> int:
        """The sparse attention reads the indexer's top-k tokens: min(tokens, index_topk) (all tokens without one)."""
        return min(tokens, self.index_topk) if self.index_topk else tokens

    def decode_read_bytes(self, tokens: int, tp: int = 1, kv_dtype_bytes: int = 2, state_dtype_bytes: int = 2) -> int:
        """One decode step reads the latent of min(tokens, index_topk) tokens and, in a layer running its own
        indexer, the indexer key of every token. Worked number: DeepSeek-V3.2 in bf16 at 131,072 tokens,
        2,048 x 1,152 + 131,072 x 132 = 19,660,800 B a layer (the whole cache: 131,072 x 1,284 = 168,296,448 B)."""
        return self.decode_attended(tokens) * self.latent_bytes_vllm(kv_dtype_bytes) + tokens * self.indexer_bytes_vllm

    def tokens_held(self, tokens: int, convention: Convention = "vllm") -> int:
        return tokens

    def state_bytes(self, convention: Convention = "vllm", tp: int = 1, dtype_bytes: int = 2) -> int:
        return 0


class CompressedAttention(_Frozen):
    """DeepSeek-V4 attention: one shared K=V head (MQA, ``head_dim`` wide) over a sliding window, plus,
    in compressed layers, one compressed entry per ``compress_rate`` tokens (transformers 5.23
    ``modeling_deepseek_v4.py``). Three layer types: sliding_attention (``compress_rate`` 0),
    compressed_sparse_attention (CSA, m = 4, with a lightning indexer of ``index_head_dim`` over its
    own compressed keys, and overlapping windows) and heavily_compressed_attention (HCA, m = 128).

    transformers (``DynamicSlidingWindowLayer`` / ``DeepseekV4CSACache`` / ``DeepseekV4HCACache``),
    elements per sequence at T tokens, d = head_dim, W = sliding_window, r = T mod m, n = T // m:
      sliding only:  2 x min(T, W - 1) x d (a plain sliding layer: keys and values are two tensors)
      HCA:           min(T, W - 1) x d (keys *is* values) + n x d (compressed_kv) + 2 x r x d (buffer kv, gate)
      CSA:           min(T, W - 1) x d + (d + d_I) x (n + 2 x r x 2 + [n >= 1] x 2 x m)
                     (compressor and indexer each: n compressed entries, a kv + gate buffer of r tokens
                     two entries wide, and once a window has closed an overlap kv + gate of m tokens)
    so the cache is not linear in tokens: it saw-tooths with T mod m. Worked number, DeepSeek-V4-Flash
    (d 512, W 128, CSA m 4, d_I 128, HCA m 128), one sequence at T = 1000, elements: sliding-only
    2 x 127 x 512 = 130,048; HCA 127 x 512 + 7 x 512 + 2 x 104 x 512 = 175,104; CSA 127 x 512
    + 640 x (250 + 0 + 8) = 230,144.

    vllm, per sequence (an approximation, flagged on the spec; vLLM's block plans are exact in kvplan/vllm_dsv4.py
    for 0.20 - 0.30, where every layer keeps a 64-token-block SWA cache, a compressed layer (bs // m) x 584 B a block,
    a CSA layer its indexer and two compressor-state caches): the main KV's sliding window of W tokens and the
    compressed entries, each ``kv_entry_bytes``: 584 B at fp8 (flashmla_sparse.py @008a0c3: "448 fp8
    NoPE + 128 B RoPE (64 bf16) + 8 B scales"), d x b otherwise; a CSA layer's indexer keys, 132 B
    per compressed entry (the V3.2 layout, DeepseekV4IndexerCache); and the compressors' fp32 state
    (vllm/models/deepseek_v4/compressor.py @01cc1d3: ``CompressorStateCache`` of state_dim
    2 x coff x dim over a sliding window of coff x m tokens, coff = 2 for CSA, 1 for HCA). Not
    modeled: block rounding and the 576 B page alignment. Worked number, V4-Flash CSA layer at
    T = 1000, fp8: 128 x 584 + 250 x (584 + 132) + 8 x (8192 + 2048) = 335,672 B; HCA layer:
    128 x 584 + 7 x 584 + 128 x 4096 = 603,128 B.
    """

    kind: Literal["compressed_attention"] = "compressed_attention"
    head_dim: int = PosInt
    sliding_window: int = PosInt
    compress_rate: int = Field(ge=0)  # 0: a sliding-window-only layer
    index_head_dim: int | None = Field(default=None, gt=0)  # CSA layers' indexer width
    overlap: bool = False  # CSA: windows overlap (2 x d wide compressor, overlap state kept)
    qk_rope_head_dim: int = 64  # the RoPE part of d, kept in bf16 in vLLM's fp8 entry
    # CSA layers: the config's index_topk (compressed entries each query reads); vLLM sizes the model's one
    # topk_indices_buffer by it (kvplan.vllm_dsv4.dsv4_model_buffer_bytes). Not named index_topk: that name marks
    # the DSA (V3.2 / GLM-5) caches, whose buffers follow other rules (kvplan.vllm_layouts)
    indexer_topk: int | None = Field(default=None, gt=0)

    @property
    def window(self) -> int:
        return self.sliding_window

    def kv_entry_bytes(self, kv_dtype_bytes: int) -> int:
        """One stored entry in vLLM: fp8 NoPE + bf16 RoPE + 8 B of scales (448 + 128 + 8 = 584 B), or d x b."""
        rope = self.qk_rope_head_dim
        return self.head_dim - rope + rope * 2 + 8 if kv_dtype_bytes == 1 else self.head_dim * kv_dtype_bytes

    def elems_per_token(self, convention: Convention = "vllm", tp: int = 1) -> int:
        """The sliding window's part only (compressed entries add d per m tokens: see bytes_held)."""
        return self.head_dim * (2 if convention == "transformers" and not self.compress_rate else 1)

    def kv_bytes_per_token(self, convention: Convention = "vllm", tp: int = 1, kv_dtype_bytes: int = 2) -> int:
        if convention == "transformers":
            return self.elems_per_token(convention, tp) * kv_dtype_bytes
        return self.kv_entry_bytes(kv_dtype_bytes)

    def decode_attended(self, tokens: int) -> int:
        """The sliding window plus every compressed entry (tokens // compress_rate): CSA's top-k over them is not
        modeled (the spec has no top-k), so this counts more than a CSA step reads."""
        return self.tokens_held(tokens) + (tokens // self.compress_rate if self.compress_rate else 0)

    def tokens_held(self, tokens: int, convention: Convention = "vllm") -> int:
        """Tokens of the sliding window held (compressed entries are counted by bytes_held)."""
        return min(tokens, self.sliding_window - 1 if convention == "transformers" else self.sliding_window)

    def bytes_held(self, tokens: int, convention: Convention = "vllm", tp: int = 1, kv_dtype_bytes: int = 2) -> int:
        window = self.tokens_held(tokens, convention) * self.kv_bytes_per_token(convention, tp, kv_dtype_bytes)
        m = self.compress_rate
        if not m or tokens <= 0:
            return window
        n, r = divmod(tokens, m)
        if convention == "vllm":
            indexer = (self.index_head_dim or 0) + (self.index_head_dim or 0) // 128 * 4
            coff = 2 if self.overlap else 1
            # CompressorStateCache: fp32 kv + score state, 2 x coff x dim wide, over the last coff x m tokens.
            state = 2 * coff * (self.head_dim + (self.index_head_dim or 0)) * 4
            return window + n * (self.kv_entry_bytes(kv_dtype_bytes) + indexer) + min(tokens, coff * m) * state
        width = 2 if self.overlap else 1  # the compressor projects 2 x d per token when windows overlap
        per_dim = n + 2 * r * width + (2 * m if self.overlap and n else 0)
        return window + (self.head_dim + (self.index_head_dim or 0)) * per_dim * kv_dtype_bytes

    def state_bytes(self, convention: Convention = "vllm", tp: int = 1, dtype_bytes: int = 2) -> int:
        return 0


# ----------------------------------------------------------------------------- K/V plus an indexer key (MiniMax-M3)


class IndexedAttention(FullAttention):
    """MiniMax-M3's sparse layers: GQA K/V for every token plus one lightning-indexer key per token.

    The indexer scores blocks of keys and picks the top-k blocks the main attention reads; its key is
    one head of ``index_head_dim`` (not split over TP: every rank scores with the whole key).
    Elements per token = num_key_value_heads x (head_dim + v_head_dim) + index_head_dim.

    transformers 5.23 (``MiniMaxM3VLSparseCacheLayer``, modeling_minimax_m3_vl.py): the K/V of a
    ``DynamicLayer`` plus ``idx_keys`` [B, 1, T, index_head_dim], grown by concatenation, all in the
    model dtype.

    vllm (vllm/models/minimax_m3/nvidia/model.py @0443308, ``MiniMaxM3SparseAttention.
    get_kv_cache_spec``: a ``FullAttentionSpec`` of num_kv_heads // tp heads of head_dim in the KV
    dtype; vllm/models/minimax_m3/common/indexer.py @0484480, ``MiniMaxM3IndexerCache.
    get_kv_cache_spec``: "Key-only: MLAAttentionSpec budgets one vector/token", num_kv_heads 1,
    head_size index_head_dim, dtype bf16 unless ``--attention-config '{"indexer_kv_dtype": "fp8"}'``
    (vllm/config/attention.py: ``indexer_kv_dtype`` default "bf16"), whatever --kv-cache-dtype is).
    Both are FullAttentionSpec types of one block size, so vLLM puts every layer in one
    ``UniformTypeKVCacheSpecs`` group, as for ``MLAIndexerAttention``. The sparse backend runs only
    128-token pages (``MiniMaxM3SparseBackend.get_supported_kernel_block_sizes`` = [128]).
    Worked numbers, MiniMax-M3 (4 KV heads of 128, index_head_dim 128), per token per layer:
    vllm bf16 4 x 256 x 2 + 128 x 2 = 2304 B; vllm fp8 KV 1024 + 256 = 1280 B; at TP 4 (1 head)
    512 + 256 = 768 B; transformers bf16 (1024 + 128) x 2 = 2304 B.
    """

    kind: Literal["indexed_attention"] = "indexed_attention"  # type: ignore[assignment]
    index_head_dim: int = PosInt
    # Bytes per indexer-key element in vLLM: its indexer_kv_dtype (bf16 by default), not the KV dtype.
    vllm_index_dtype_bytes: int = 2

    def elems_per_token(self, convention: Convention = "vllm", tp: int = 1) -> int:
        return super().elems_per_token(convention, tp) + self.index_head_dim  # the indexer key: not divided by tp

    def kv_bytes_per_token(self, convention: Convention = "vllm", tp: int = 1, kv_dtype_bytes: int = 2) -> int:
        if convention == "transformers":
            return self.elems_per_token(convention, tp) * kv_dtype_bytes
        return super().elems_per_token(convention, tp) * kv_dtype_bytes + self.indexer_bytes_vllm

    @property
    def indexer_bytes_vllm(self) -> int:
        """The indexer key in vLLM: index_head_dim x its dtype, 128 x 2 = 256 B for MiniMax-M3."""
        return self.index_head_dim * self.vllm_index_dtype_bytes


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
    | MLAIndexerAttention
    | CompressedAttention
    | ShortConvState
    | AttentionAndMamba
    | IndexedAttention
    | MeasuredState
)

# Which kinds are attention (a KV dtype applies) and which are recurrent state (model dtype).
ATTENTION_KINDS = ("full_attention", "sliding_attention", "chunked_attention", "mla", "mla_dsa", "compressed_attention",
                   "indexed_attention")
# Kinds that cache one replicated latent (DeepSeek-V4: one shared K=V head) per token, not KV heads:
# vLLM's MLA block size (64), the same bytes on every TP rank.
MLA_KINDS = ("mla", "mla_dsa", "compressed_attention")
STATE_KINDS = ("mamba", "linear_attention", "short_conv", "state")
# Layers keeping both (split by cache_parts wherever a size is per kind).
COMPOSITE_KINDS = ("attention_and_mamba",)
