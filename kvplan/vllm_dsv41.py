"""DeepSeek-V4.1's vLLM KV cache: the caches each layer registers, their page bytes, tokens per page and block
stride alignment, their packing into one pool (_get_packed_kv_cache_groups, _get_kv_cache_bytes_per_block) and what a
pool of given bytes holds (pure integer arithmetic, no vLLM import). Exact for vLLM 0.33.0 - 0.34.0; 0.32.0 (read for
comparison) packs alike but its sliding pages carry no SM 10.x block stride alignment and its indexer page another,
and 0.30 - 0.31 were not read. No plan calls this yet: the memory vLLM leaves for the pool on a V4.1 launch (its
Engram staging buffers, the MoE and attention workspaces) is not modelled (families/deepseek_v41.PLAN_REFUSAL);
given vLLM's own "Available KV cache memory", pool_capacity gives its blocks, tokens and concurrency.

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
