"""DeepSeek-V4.1's vLLM KV cache: the caches each layer registers, their page bytes, tokens per page and block
stride alignment, their packing into one pool (_get_packed_kv_cache_groups, _get_kv_cache_bytes_per_block) and what a
pool of given bytes holds (pure integer arithmetic, no vLLM import). Exact for vLLM 0.33.0 - 0.34.0; 0.32.0 (read for
comparison) packs alike but its sliding pages carry no SM 10.x block stride alignment and its indexer page another,
and 0.30 - 0.31 were not read. kvplan.plan sizes a V4.1 pool with it on SM 10.x GPUs (vllm_plan_refusal, below, says
where not), what a rank loads from rank_load_bytes' terms, the activation peak from the generic estimate (so the plan
warns: ACTIVATION_GAP); given vLLM's own "Available KV cache memory", pool_capacity gives its blocks, tokens and
concurrency.

Read from the vllm 0.33.0 and 0.34.0 PyPI wheels (2026-12-02; the same rules in both): models/deepseek_v41/
attention.py (DeepseekV4Attention: the DeepseekV4SWACache it builds with block_size=32, packed_bytes_per_token,
packed_page_alignment, packed_block_stride_alignment; get_kv_cache_spec of a kv source; DeepseekV4IndexerCache;
_use_v41_mxfp8_kv_record; _indexer_k_cache_head_dim), compressor.py (CompressorStateCache), v1/attention/backends/mla/
sparse_swa.py (DeepseekV4SWACache.get_kv_cache_spec, DeepseekSparseSWABackend.get_preferred_block_size 256),
v1/kv_cache_interface.py (AttentionSpec.page_size_bytes, _apply_alignment_padding, KVCacheSpec.
get_block_stride_alignment, SlidingWindowSpec.max_admission_blocks_per_request, CircularBufferSpec).

Per layer, with the default packed cache (--kv-cache-dtype auto / fp8 -> fp8_ds_mla), bs = --block-size (256 by
default: the first layer's sliding-window backend prefers it), m = the kv source's ratio:
  every layer:  sliding window, SlidingWindowMLASpec(block 32, window W): 32 x record B, rounded up to the page
                alignment; record 584 B (448 fp8 NoPE + 64 bf16 RoPE + 7 scales + a pad byte) in 576-B multiples,
                or on SM 10.x the V4.1 MXFP8 record, 528 B (512 fp8 + 16 UE8M0 scales) in 512-B multiples with a
                block stride alignment of lcm(528, compressed record).
  kv source:    compressed KV, MLAAttentionSpec(bs, tokens_per_state m): (bs // m) x record, same alignment;
                indexer keys, MLAAttentionSpec(bs, m): (bs // m) x 132 B (128 fp8 + one fp32 scale), aligned to 576
                (512 on SM 10.x); at m = 2 the compressor ring, CircularBufferSpec: 8 rows (the next power of two of
                speculative tokens + 2, at least 8) x 2 x head_dim fp32 (kv and score state), one block a request.
Consumers (compressed layers that are not kv sources) register only their sliding window.
Worked numbers (V4.1-Flash, bs 256, SM 9.0): sliding page 32 x 584 = 18,688 -> 19,008 B (594 B a token); ratio-2
source: 74,880 B compressed (292.5 B a token) + 17,280 B indexer + a 32,768 B ring; ratio-1 source: 149,760 B
(585 B a token) + 33,984 B indexer.
"""

import math

from kvplan.errors import PlanInputError
from kvplan.units import cdiv

SWA_BLOCK_TOKENS = 32  # DeepseekV4SWACache(block_size=32) in models/deepseek_v41/attention.py
V4_RECORD_BYTES, V4_PAGE_ALIGN = 584, 576  # the V4 record (every arch but SM 10.x)
V41_RECORD_BYTES, V41_PAGE_ALIGN = 528, 512  # _use_v41_mxfp8_kv_record(): SM 10.x (is_device_capability_family(100))
INDEXER_FP8_BYTES = 132  # _indexer_k_cache_head_dim: index_head_dim + index_head_dim // 128 x 4 (fp8)
RING_MIN_ROWS = 8  # CompressorStateCache: max(8, next power of two of num_speculative_tokens + 2)
STATE_BYTES = 4  # fp32 kv_state + score_state


def _round_up(n: int, to: int) -> int:
    return cdiv(n, to) * to


def ring_rows(num_speculative_tokens: int = 0) -> int:
    """Rows of one compressor ring (CompressorStateCache.block_size): max(8, 1 << (k + 2 - 1).bit_length()), k the
    speculative tokens. Worked numbers: 0 -> 8, 6 -> 8, 7 -> 16."""
    return max(RING_MIN_ROWS, 1 << (num_speculative_tokens + 1).bit_length())


def layer_caches(layers, block_size: int, kv_cache_dtype: str = "fp8", sm100: bool = False,
                 num_speculative_tokens: int = 0) -> list[tuple[str, int, int, int, int, int]]:
    """The caches vLLM registers for ``layers`` ((DecoderLayer, count) pairs of a DeepSeek-V4.1 spec, each layer's
    CompressedAttention the cache it owns): [(kind, block tokens, tokens per state, page bytes, block stride
    alignment, count)], kind "sliding_window" / "compressed_kv" / "indexer_k" / "compressor_ring".
    ``kv_cache_dtype``: "auto" / "fp8" (fp8_ds_mla, the default FlashMLA layout); a 16-bit or nvfp4_ds_mla cache is
    refused (the default attention takes auto and fp8 as fp8_ds_mla and raises on anything else not packed;
    nvfp4_ds_mla needs SM 10.x and is not modelled). ``sm100``: an SM 10.x GPU (B200 / B300 / GB200), which writes
    the V4.1 MXFP8 record."""
    if kv_cache_dtype not in ("auto", "fp8", "fp8_ds_mla", "fp8_e4m3"):
        raise PlanInputError("kv_cache_dtype", f"vLLM's DeepSeek-V4.1 attention stores the packed fp8_ds_mla cache "
                             f"(--kv-cache-dtype auto or fp8); {kv_cache_dtype!r} is not modelled")
    record, align = (V41_RECORD_BYTES, V41_PAGE_ALIGN) if sm100 else (V4_RECORD_BYTES, V4_PAGE_ALIGN)
    # packed_block_stride_alignment: lcm(sliding record, compressed record) on SM 10.x (both 528 with fp8_ds_mla),
    # None (1) elsewhere
    swa_stride = record if sm100 else 1
    out = []
    swa = sum(n for _, n in layers)
    out.append(("sliding_window", SWA_BLOCK_TOKENS, 1, _round_up(SWA_BLOCK_TOKENS * record, align), swa_stride, swa))
    for layer, n in layers:
        m = layer.cache.compress_rate
        if not m:
            continue
        if block_size % m:
            raise PlanInputError("block_size", f"--block-size {block_size} is not a multiple of the compress ratio {m}")
        states = block_size // m  # AttentionSpec.num_states: block_size // tokens_per_state
        out.append(("compressed_kv", block_size, m, _round_up(states * record, align), 1, n))
        if layer.cache.index_head_dim:
            d_i = layer.cache.index_head_dim
            per = d_i + d_i // 128 * 4
            out.append(("indexer_k", block_size, m, _round_up(states * per, align), 1, n))
        if m > 1:
            d = layer.cache.head_dim
            out.append(("compressor_ring", ring_rows(num_speculative_tokens), 0,
                        ring_rows(num_speculative_tokens) * 2 * d * STATE_BYTES, 1, n))
    return out


def bytes_per_token(caches) -> dict[str, float]:
    """Page bytes over tokens a page covers, per cache kind (the ring, one block a request, is left out). Worked
    number (V4.1-Flash, bs 256, SM 9.0): sliding 594.0 (19,008 / 32), compressed_kv at m 2 292.5 (74,880 / 256),
    m 1 585.0; indexer_k at m 2 67.5 (17,280 / 256), m 1 132.75."""
    out: dict[str, float] = {}
    for kind, block, m, page, _, _ in caches:
        if kind == "compressor_ring":
            continue
        out[f"{kind} (ratio {m})" if kind != "sliding_window" else kind] = page / block
    return out


def block_stride_alignment(caches) -> int:
    """The lcm of every cache's block stride alignment, which _get_kv_cache_bytes_per_block rounds the pool's bytes
    per block up to (block-outermost layouts). 1 on SM 9.0 (no V4.1 cache asks for one without
    --attention-config indexer_sparse_logits); 528 on SM 10.x (the sliding pages' lcm(528, 528))."""
    return math.lcm(*(c[4] for c in caches))


def sliding_blocks_per_request(window: int, max_len: int, in_flight: int, block: int = SWA_BLOCK_TOKENS) -> int:
    """SlidingWindowSpec.max_admission_blocks_per_request: cdiv(min(W - 1 + in-flight tokens, max_len), block) + 1.
    Worked number: W 128, 16,384 tokens in flight, 1M max_len: cdiv(16,511, 32) + 1 = 517."""
    return cdiv(min(window - 1 + in_flight, max_len), block) + 1


def packed_groups(caches) -> list[tuple[str, int, int, int]]:
    """vLLM's KV-cache groups of these caches, as _get_packed_kv_cache_groups forms them under a block-outermost
    layout (DeepseekV4IndexerBackend declares BLHNC / BLNHC, the only DSV4.1 backend that declares one, so the layout
    resolves to BLHNC): [(kind, layers, group page bytes (its layers' pages summed), block tokens)].

    Buckets of one spec type and block size: the MLA bucket (compressed KV and indexer keys, block bs), the sliding
    bucket (block 32, one window) and the ring bucket (CircularBufferSpec). A bucket is "balanced" when each of its page
    sizes has as many layers; the MLA bucket mixes four sizes in counts 3 / 1 / 3 / 1 (V4.1-Flash), so no balanced
    bucket mixes sizes, the repeat pattern is unset and every bucket stays one group, except that the sliding and
    ring buckets (state buckets) split into cdiv(layers, anchor // page) groups, anchor the widest group's bytes
    (states_per_block, at least 1), their layers dealt round-robin (pattern_repeats[i::n]). Worked number (V4.1-Flash,
    bs 256, SM 9.0): MLA 8 layers, 3 x 74,880 + 149,760 + 3 x 17,280 + 33,984 = 460,224 B; sliding: 460,224 //
    19,008 = 24 a group -> 2 groups of 20 (380,160 B each); rings 460,224 // 32,768 = 14 -> 1 group of 3 (98,304 B)."""
    buckets: dict[str, dict[int, int]] = {}
    blocks: dict[str, int] = {}
    for kind, block, _, page, _, n in caches:
        bucket = {"sliding_window": "sliding_window", "compressor_ring": "compressor_ring"}.get(kind, "mla")
        sizes = buckets.setdefault(bucket, {})
        sizes[page] = sizes.get(page, 0) + n
        blocks[bucket] = block
    balanced = {b: len(set(s.values())) == 1 for b, s in buckets.items()}
    if any(balanced[b] and len(s) > 1 for b, s in buckets.items()):
        # a balanced bucket that mixes page sizes sets a repeat pattern (min_repeats_per_group): not V4.1's layout
        raise PlanInputError("model", "vLLM's packed grouping with a repeating layer pattern is not modelled for "
                             "this DeepSeek-V4.1 layout")

    def widest(sizes: dict[int, int], n: int) -> int:
        return sum(cdiv(count, n) * page for page, count in sizes.items())

    state = ("sliding_window", "compressor_ring")  # no repeat pattern: the sliding bucket is a state bucket too
    anchor = max(widest(s, sum(s.values()) if b in state else 1) for b, s in buckets.items())
    out = []
    for b, sizes in buckets.items():
        layers = sum(sizes.values())
        n_groups = 1
        if b in state:
            (page,) = sizes  # one page size in a state bucket
            n_groups = max(1, cdiv(layers, max(anchor // page, 1)))
        for i in range(n_groups):
            k = len(range(i, layers, n_groups))
            out.append((b, k, widest(sizes, 1) * k // layers if b in state else widest(sizes, 1), blocks[b]))
    return out


def bytes_per_block(groups, caches) -> int:
    """_get_kv_cache_bytes_per_block (block-outermost): the largest group's page bytes, rounded up to the lcm of
    every layer's block stride alignment. Worked numbers (V4.1-Flash, bs 256): 460,224 B on SM 9.0; 422,400 B on
    SM 10.x (already a multiple of 528)."""
    return _round_up(max(g[2] for g in groups), block_stride_alignment(caches))


def request_blocks(groups, max_len: int, in_flight: int, window: int) -> int:
    """Blocks one request at ``max_len`` takes from the shared pool (get_max_concurrency_for_kv_cache_config: per
    group cdiv(max_memory_usage_bytes, page) of its first spec, summed): the MLA group cdiv(max_len, bs)
    (FullAttentionSpec), each sliding group sliding_blocks_per_request, each ring group 1 (CircularBufferSpec).
    Worked number (V4.1-Flash, bs 256, 1,048,576 tokens, 16,384 in flight): 4,096 + 2 x 517 + 1 = 5,131."""
    total = 0
    for kind, _, _, block in groups:
        if kind == "mla":
            total += cdiv(max_len, block)
        elif kind == "sliding_window":
            total += sliding_blocks_per_request(window, max_len, in_flight, block)
        else:
            total += 1
    return total


def pool_capacity(available_bytes: int, groups, caches, max_len: int, in_flight: int,
                  window: int) -> tuple[int, int, float]:
    """(num_blocks, "GPU KV cache size" tokens, maximum concurrency) of a pool of ``available_bytes`` (vLLM's
    "Available KV cache memory", one rank; V4.1's single K=V head is not split by TP, so each rank holds every page):
    num_blocks = available // bytes_per_block (get_kv_cache_config_from_groups); concurrency = num_blocks /
    request_blocks; tokens = int(concurrency x max_len) (get_kv_cache_capacity). Worked number (V4.1-Flash, SM 9.0,
    bs 256, 100 GiB, 1M tokens, 16,384 in flight): 107,374,182,400 // 460,224 = 233,308 blocks, 233,308 / 5,131 =
    45.47x, 47,679,042 tokens."""
    per_block = bytes_per_block(groups, caches)
    num_blocks = available_bytes // per_block
    concurrency = num_blocks / request_blocks(groups, max_len, in_flight, window)
    return num_blocks, int(concurrency * max_len), concurrency


# ----------------------------------------------------------------------------- what one rank loads (vLLM 0.33 - 0.34)
#
# "Model loading took" on one rank of a DeepSeek-V4.1 launch, read in the vllm 0.33.0 and 0.34.0 PyPI wheels
# (2026-12-03; pip download vllm==0.33.0 / 0.34.0 --no-deps), PP 1, DP 1, beside kvplan's checkpoint bytes
# (parallel.rank_weight_bytes):
# - hc mixers: DeepseekV4DecoderLayer (models/deepseek_v41/nvidia/model.py) registers hc_{attn,ffn}_{fn,base,scale}
#   as float32 nn.Parameters, whole on every rank; kvplan prices them at 2 B (families/deepseek_v41 assumption):
#   2 B more per value.
# - MXFP4 routed experts: quant_config.py DeepseekV4FP8Config gives FusedMoE Mxfp4MoEMethod(activation_key
#   kMxfp8Dynamic), whose backend is select_deepseek_v4_mxfp4_moe_backend (fused_moe/oracle/mxfp4.py): with
#   --moe-backend auto, _get_priority_backends() = [FLASHINFER_TRTLLM_MXFP4_MXFP8, DEEPGEMM_MXFP4, MARLIN,
#   BATCHED_MARLIN, HUMMING] passed through prioritize_humming, which on capability 9.0 moves HUMMING ahead of MARLIN
#   (quantization/utils/humming/priority.py; humming-kernels is a hard dependency of both wheels, so has_humming()
#   holds). maybe_roundup_sizes -> mxfp4_round_up_hidden_size_and_intermediate_size: TRTLLM and MARLIN round the
#   intermediate size per partition up to 128 and the hidden size to 256 (the same in 0.33.0 and 0.34.0). So:
#     SM 10.x, auto: TRTLLM MXFP8 (I -> 128, H -> 256; weights permuted in place);
#     any CUDA GPU, --moe-backend marlin (map_mxfp4_backend "marlin" -> MARLIN): I -> 128, H -> 256;
#     SM 9.0, auto: HUMMING (I per partition -> 128 in w13 and w2, H -> 128 in w13 and 256 in w2, + a float32
#     weight_scale_2 an expert and sublayer for the FP8 activations), read 2026-12-03 in humming-kernels 0.1.19, the
#     version both wheels pin (kvplan.vllm_layouts, the Humming comment at HUMMING_PAD_N; its held workspace:
#     kvplan.plan.vllm_humming_moe_workspace_bytes).
# - model buffers, DeepseekV4Model.__init__: topk_indices_buffer [max_num_batched_tokens, index_topk] int32;
#   candidate_block_buffer [max_num_batched_tokens, candidate_topk_blocks] int32 when candidate_source_layer_id >= 0
#   and candidate_topk_blocks > 0; _mtp_hidden_buffer only when speculating (not modelled here: no draft).
# - Engram staging: each Engram layer's Engram._init_staging (common/engram.py) makes staged_rows
#   [max_num_batched_tokens x engram DP size, part_n_hash_cols, engram_head_dim] bf16 on the device, part_n_hash_cols
#   = cdiv((engram_max_ngram_size - 1) x engram_n_heads, TP x engram DP size); EngramBatch.create returns None at
#   TP > 1 or engram DP size 1, so no batch buffers; the n-gram tables stay in pinned host memory
#   (EngramConfig.cpu_offload). NgramHashState's token_map (int32, one per tokenizer id) and its primes / offsets /
#   multipliers buffers are left out: under 1 MiB for a 129,280-id tokenizer, and the tokenizer is not read.
# - rotary tables: build_deepseek_v4_rope (common/rope.py, the same file in 0.33.0 and 0.34.0) gives sliding-only
#   layers (ratio 0) deepseek_yarn with factor 1 over max_position_embeddings and every compressed layer (ratio > 0)
#   the config's scaling over compress_rope_theta, both is_deepseek_v4: DeepseekV4ScalingRotaryEmbedding
#   (rotary_embedding/deepseek_scaling_rope.py) registers a float32 cos_sin_cache of max_position x scaling_factor
#   rows x qk_rope_head_dim; get_rope keeps one table per parameter set (two on V4.1-Flash: thetas 10,000 / 160,000).
# Not in rank_load_bytes (each only adds to what a rank holds, so a pool sized from it is an upper bound): the CUDA
# caching allocator's block rounding ("Model loading took" counts whole blocks: kvplan.vllm_alloc, applied to V4's
# plans), NgramHashState's small buffers, the vision tower (counted apart: parallel.tower_rank_bytes; skipped with
# --language-model-only), the DSpark / MTP draft and its _mtp_hidden_buffer (speculative decoding).
TOPK_INDEX_BYTES = 4  # torch.int32


def model_buffer_bytes(spec, tp: int, max_num_batched_tokens: int) -> dict[str, int]:
    """The device buffers one rank's DeepseekV4Model makes beside its parameters (comment above), in B: each of
    ``spec.batch_buffers`` (families/deepseek_v41._batch_buffers) and "rotary tables" (``spec.rope_caches`` as
    vllm_layouts.vllm_rope_cache_bytes sizes them). PP 1, engram DP size 1. Worked numbers, V4.1-Flash at TP 8,
    8,192 batched tokens: topk_indices_buffer 8,192 x 512 x 4 = 16,777,216; candidate_block_buffer 8,192 x 2,048 x 4
    = 67,108,864; engram staged_rows 2 layers x 8,192 x cdiv(24, 8) x 256 x 2 = 25,165,824; rotary tables 2 x
    1,048,576 x 64 x 4 = 536,870,912."""
    from kvplan.parallel import Layout
    from kvplan.vllm_layouts import vllm_rope_cache_bytes

    out = {b.name: b.rank_bytes(max_num_batched_tokens, tp) for b in spec.batch_buffers}
    out["rotary tables"] = vllm_rope_cache_bytes(spec, Layout(tp=tp), 0, "0.33")
    return out


def mxfp4_padding_bytes(spec, tp: int, ep: bool = False, backend: str = "trtllm", vllm_version: str = "0.33") -> int:
    """Bytes the MXFP4 experts' padding adds on one rank over kvplan's checkpoint bytes; 0 where the routed experts
    are not MXFP4. ``backend``: "trtllm" (SM 10.x, auto), "marlin" (--moe-backend marlin), both I per partition to
    128 and H to 256 in 0.33 - 0.34, or "humming" (SM 9.0, auto: the same I, H to 128 / 256, + 8 B an expert) (the
    shared rule: vllm_layouts.mxfp4_expert_bytes via mxfp4_override_padding_bytes). Per expert: 1.5 I H (e2m1 w13
    [2I, H/2] + w2 [H, I/2]) + 3 I H / 32 (e8m0 scales), padded less unpadded. Worked number, V4.1-Flash at TP 8
    without EP: I 2,304 / 8 = 288 -> 384, 1.59375 x 5,120 x (384 - 288) = 783,360 B an expert x 384 x 40 =
    12,032,409,600 B ("humming": 783,368 B an expert, 12,032,532,480 B); with EP (48 whole experts, I 2,304 = 18 x
    128): 0 (humming: 8 x 48 x 40 = 15,360 B)."""
    from kvplan.vllm_layouts import mxfp4_override_padding_bytes

    return mxfp4_override_padding_bytes(spec, tp, ep, backend, vllm_version)


def hc_fp32_extra_bytes(spec) -> int:
    """The 2 B a value vLLM's float32 hc mixers hold beyond kvplan's 2-B price, whole on every rank. Worked number,
    V4.1-Flash: 40 layers x 2 x 491,547 (hc_{attn,ffn}_fn [24, 20,480] + base [24] + scale [3]) x 2 =
    78,647,520 B."""
    return sum(c.numel * 2 for layer in spec.layers for c in layer.other if c.name.endswith("_hc.fn+base+scale"))


def rank_load_bytes(spec, tp: int, arch: str, max_num_batched_tokens: int, ep: bool = False,
                    moe_backend: str = "auto") -> dict[str, int]:
    """What one rank of a DeepSeek-V4.1 launch on vLLM 0.33 - 0.34 holds after loading (the "Model loading took"
    terms, comment above), PP 1, DP 1, no speculative decoding: {"checkpoint weights", "hc mixers fp32",
    "mxfp4 padding", **model_buffer_bytes}. ``arch``: kvplan.engines.gpu_arch ("sm100" for B200 / B300 / GB200,
    "sm90" for Hopper); ``moe_backend``: --moe-backend ("auto" or "marlin"); auto takes TRTLLM on SM 10.x and Humming
    on SM 9.0 (vllm_layouts.dsv4_mxfp4_typed_moe_backend). Raises PlanInputError where the MXFP4 experts' layout is
    not read: auto on any GPU but SM 10.x / SM 9.0 (DeepGEMM MXFP4 or Humming), another --moe-backend. Worked number,
    V4.1-Flash (release fp8 + MXFP4 experts) TP 8 on a B200, 8,192 batched tokens: 37,922,259,808 + 78,647,520 +
    12,032,409,600 + 16,777,216 + 67,108,864 + 25,165,824 + 536,870,912 = 50,679,239,744 B (47.20 GiB); the same on
    an H200 with --moe-backend marlin; on an H200 with auto (Humming) 122,880 B more (8 B x 384 experts x 40
    layers)."""
    from kvplan.parallel import Layout, rank_weight_bytes
    from kvplan.vllm_layouts import dsv4_mxfp4_typed_moe_backend

    if moe_backend not in ("auto", "marlin"):
        raise PlanInputError("moe_backend", f"--moe-backend {moe_backend} for DeepSeek-V4.1: its MXFP4 expert "
                             "layout is not read (auto and marlin are)")
    if moe_backend == "auto" and arch not in ("sm100", "sm90") and _has_mxfp4_experts(spec):
        raise PlanInputError("gpu", (
            f"vLLM 0.33 - 0.34 give DeepSeek-V4.1's MXFP4 experts DeepGEMM MXFP4 or Humming on this GPU ({arch}), "
            "whose weight layouts kvplan has not read there; --moe-backend marlin, an SM 10.x or an SM 9.0 GPU is "
            "what kvplan sizes"))
    return {"checkpoint weights": rank_weight_bytes(spec, Layout(tp=tp, ep=ep)), "hc mixers fp32":
            hc_fp32_extra_bytes(spec), "mxfp4 padding": mxfp4_padding_bytes(
                spec, tp, ep, dsv4_mxfp4_typed_moe_backend(moe_backend, arch, PLAN_VERSION)),
            **model_buffer_bytes(spec, tp, max_num_batched_tokens)}


def _has_mxfp4_experts(spec) -> bool:
    """Whether any routed experts of ``spec`` are stored MXFP4 (DeepSeek-V4.1's release: expert_dtype "fp4")."""
    from kvplan.vllm_layouts import mxfp4_override_experts

    return any(True for _ in mxfp4_override_experts(spec, 1, False))


VLLM_DSV41_BLOCK_SIZE = 256  # DeepseekSparseSWABackend.get_preferred_block_size (the first layer's backend)


def context_bytes_per_token(spec, sm100: bool = False, block_size: int = VLLM_DSV41_BLOCK_SIZE) -> float:
    """The pool bytes one more token of context takes on a rank (the Model page's KV row): the kv-source layers'
    compressed-KV and indexer-key pages of one --block-size block over its tokens (the MLA group, whose page is the
    pool's bytes per block); the sliding windows (a fixed number of 32-token pages a request) and the compressor
    rings (one block a request) do not grow with the context. Worked numbers, V4.1-Flash at bs 256: SM 9.0 460,224 /
    256 = 1,797.75 B; SM 10.x 422,400 / 256 = 1,650.0 B."""
    from kvplan.spec import distinct_layers

    caches = layer_caches(distinct_layers(spec.layers), block_size, sm100=sm100)
    return sum(page * n for kind, _, _, page, _, n in caches if kind in ("compressed_kv", "indexer_k")) / block_size



# ----------------------------------------------------------------------------- what a vLLM plan of V4.1 covers

PLAN_VERSION = "0.33"  # kvplan's vLLM profile whose release (0.33.x) these rules were read in (0.34.0 the same)
# The one term of the budget not read for V4.1: the profile run's activation peak. A plan takes kvplan's generic
# estimate (plan.activation_estimate, fitted on other models' logs) and its non-torch / CUDA-graph terms as for
# DeepSeek-V4; DeepseekV41ForCausalLM's profile run also holds what that estimate does not size (the FlashInfer TRTLLM
# MXFP8 MoE workspace on SM 10.x, not Humming's on Hopper: kvplan.plan.vllm_humming_moe_workspace_bytes sizes it; the mHC all-reduce and its streams, the Engram host prefetch, the decoder's bounded
# sliding-window replay, the vision encoder's dummy forward), and on the one public DeepSeek-V4-Flash TP 8 B200 log
# (0.25) kvplan's terms already left about 7.4 GiB out (README). So the pool is an upper limit.
ACTIVATION_GAP = ("DeepSeek-V4.1 on vLLM: weights, model buffers and the KV layout are read from vLLM 0.33.0 / 0.34.0 "
                  "(0.32.x writes other sliding / indexer pages on SM 10.x), but the profile run's activation peak is "
                  "kvplan's generic estimate (with Humming's MoE workspace on Hopper): DeepseekV41ForCausalLM's "
                  "profile run also holds its mHC all-reduce workspace (and on SM 10.x its MXFP8 MoE one), the Engram host prefetch, the decoder's bounded sliding-window replay and "
                  "(without --language-model-only) the vision encoder's dummy forward, which it does not size (on "
                  "the one public DeepSeek-V4-Flash TP 8 B200 log kvplan's terms left about 7.4 GiB out). No V4.1 "
                  "start-up log was found to check against: read this pool, its blocks and tokens as an upper limit.")


def vllm_plan_refusal(spec, engine, arch: str, layout) -> tuple[str, str] | None:
    """(field, message) where a vLLM plan of DeepSeek-V4.1 cannot be made faithfully, None where it can: vLLM profile
    0.33 (PLAN_VERSION), an SM 10.x GPU (``arch`` "sm100": the TRTLLM MXFP4 layout) or SM 9.0 ("sm90": Humming,
    kvplan.vllm_layouts.mxfp4_expert_bytes), PP 1, DP 1, no speculative decoding, no decode context parallelism, the
    checkpoint's own format with MXFP4 routed experts. Worked example: V4.1-Flash (release format) TP 8 on a B200 or
    an H200 at 0.33 -> None; on an A100 -> ("gpu", ...)."""
    head = "DeepSeek-V4.1 on vLLM: "
    if engine.vllm_version != PLAN_VERSION:
        return "vllm_version", (f"{head}its pages, packing, buffers and expert layout are read for vLLM 0.33.0 - "
                                f"0.34.0 (kvplan's profile {PLAN_VERSION}); vLLM {engine.vllm_version} is not read "
                                f"(DeepseekV41ForCausalLM is registered from 0.30.0).")
    if arch not in ("sm100", "sm90"):
        return "gpu", (f"{head}its MXFP4 experts' layout is read for SM 10.x (B200 / B300 / GB200 / GB300: FlashInfer "
                       "TRTLLM MXFP8) and SM 9.0 (H100 / H200 / H20: Humming) only; on this GPU vLLM picks DeepGEMM "
                       "MXFP4, Humming or Marlin, not read here.")
    if engine.speculative_method != "none":
        return "speculative_method", (f"{head}speculative decoding (DSpark / MTP draft layers, their caches and "
                                      "buffers) is not modelled.")
    if layout.pp > 1 or layout.dp > 1:
        return ("pipeline_parallel_size" if layout.pp > 1 else "data_parallel_size",
                f"{head}PP and DP layouts (the Engram DP sharding, the hc pre-mix between stages) are not modelled: "
                "plan TP (with or without --enable-expert-parallel).")
    if engine.decode_context_parallel_size > 1:
        return "decode_context_parallel_size", f"{head}decode context parallelism is not modelled."
    if engine.weight_format is not None or not _has_mxfp4_experts(spec):
        return "weight_format", (f"{head}only the release's format (fp8 linears, MXFP4 routed experts) is read: "
                                 "another experts' format takes another MoE backend and layout.")
    return None
