"""DeepSeek-V4's vLLM KV-cache layout: the per-layer cache specs vLLM registers, its DSV4 grouping, the bytes a block
of the pool takes, and the blocks / bytes one request is charged (pure integer arithmetic, no vLLM import).

Exact for 0.20.0 - 0.33.x (wheels 0.20.0 / 0.20.1 / 0.22.0 - 0.33.0 read, 0.21 between two identical ones; 0.20.x keeps
the same caches in model_executor/layers/deepseek_{v4_attention,compressor}.py; 0.29.0's generic
_get_packed_kv_cache_groups gives DeepSeek-V4 the groups of 0.27). 0.31.0 - 0.33.0 (read 2026-12-01) keep the 0.29 -
0.30 rule for DeepseekV4ForCausalLM: DeepseekV4SWACache gained block_size / packed_page_alignment /
packed_block_stride_alignment arguments, but only DeepSeek-V4.1 (models/deepseek_v41, DeepseekV41ForCausalLM: block 32,
its own record bytes and alignment) passes them; models/deepseek_v4 keeps the defaults (block 64, 584 B, 576 B, no
block-stride alignment, so _get_kv_cache_bytes_per_block's lcm of alignments is 1; DeepSeek-V4.1 configs are refused
at parse, families/deepseek_v4.py deepseek_v41_refusal, which lists how its layout differs); the specs only gained
max_tp_shards=1 (KV replica bookkeeping for the offloading connector, no bytes); _get_packed_kv_cache_groups lost
only its EAGLE annotation; 0.33.0's _pool_bytes_per_block_from_builder probes a one-block placement whose single
backing is that same largest group page (v1/core/kv_cache_planning.py, DefaultKVCacheConfigBuilder), and
_max_memory_usage_bytes_from_groups is still bytes_per_block x the pages of every group.
Read from the vLLM wheels (2026-12-01): 0.20.0 - 0.33.0 ``vllm/v1/kv_cache_interface.py`` (MLAAttentionSpec /
SlidingWindowMLASpec / UniformTypeKVCacheSpecs), ``vllm/v1/core/kv_cache_utils.py`` (group_and_unify_kv_cache_specs,
_get_kv_cache_groups_uniform_groups, _approximate_gcd, _get_kv_cache_config_deepseek_v4 / _get_kv_cache_config_packed /
_get_packed_kv_cache_layout, get_max_concurrency_for_kv_cache_config, _max_memory_usage_bytes_from_groups),
``vllm/models/deepseek_v4/{attention,compressor}.py`` and ``vllm/v1/attention/backends/mla/sparse_swa.py``.

Per decoder layer vLLM registers (d = head_dim 512, bs = --block-size, m = compress ratio, fp8 = fp8_ds_mla):
  every layer: DeepseekV4SWACache, SlidingWindowMLASpec(block 64, window W): page 64 x 584 B (fp8; d x 2 B in bf16);
  m > 1:       the main KV, MLAAttentionSpec(bs, compress_ratio m): page (bs // m) x 584 B;
               CompressorStateCache, SlidingWindowMLASpec fp32 of state_dim 2 x coff x d (coff 2 for m = 4, else 1),
               block 4 (m = 4) or 8 (m = 128), window coff x m: page block x state_dim x 4 B;
  CSA (m = 4): DeepseekV4IndexerCache, MLAAttentionSpec(bs, m) of 132 B (128 fp8 + 4 B scale) an entry, and its own
               CompressorStateCache (state_dim 2 x 2 x 128 = 512, block 4, window 8);
every page rounded up to 576 B with fp8_ds_mla (FlashMLA), to 512 B otherwise (``_apply_alignment_padding``).
Groups: all MLAAttentionSpec layers in one UniformTypeKVCacheSpecs group (block bs); the SlidingWindowMLASpec layers
grouped by (block, window) (SWA caches, the m = 4 states, the m = 128 states), each split into cdiv(n, T) sub-groups,
T = _approximate_gcd(layer-tuple counts, lower bound the MLA group's). Before 0.27.0 each sliding page is padded to
the nearest MLA page size at or above it.
Worked number, DeepSeek-V4-Flash (2 SWA-only, 21 CSA, 20 HCA layers) at bs 256, fp8, 0.23 - 0.26: MLA pages 37,440 /
8,640 / 1,728 B (21 / 21 / 20 layers, 1,002,240 B a block); T = 22 (pads 21 / 43 / 21 / 20 by 5 in all); groups MLA,
SWA 22 + 21 layers, C4 states 21 x (37,440 + 8,640), C128 states 20 x 37,440; a pool block 22 x 37,440 + 21 x 8,640
+ 20 x 1,728 = 1,039,680 B (0.23 - 0.26).
"""

from collections import Counter

from kvplan.units import cdiv

# vLLM's default --block-size for DeepSeek-V4: update_block_size_for_backend (platforms/interface.py) takes the first
# registered attention layer's backend's get_preferred_block_size: layer 0's DeepseekV4SWACache, DeepseekSparseSWABackend
# "return 256" (v1/attention/backends/mla/sparse_swa.py, every wheel 0.20.0 - 0.33.0, read 2026-12-01); the compressor
# comments size their 4 / 8-token state blocks for it ("The KV block shape [256//4, head_dim]").
VLLM_DSV4_BLOCK_SIZE = 256
# The default DSV4 attention classes on CUDA (FlashMLA, and FlashInfer on sm12x) store fp8_ds_mla and assert an fp8 KV
# cache (0.25.0 - 0.29.0 models/deepseek_v4/attention.py _resolve_dsv4_kv_cache_dtype; 0.20.0 sparse_swa.py asserts
# uint8); from 0.30.0 the same function turns auto into fp8 (kvplan.plan.vllm_kv_dtype_default plans it so) and raises
# ValueError on anything else not fp8 (engines.VLLM_CHANGES "dsv4_auto_kv_fp8").
AUTO_KV_NOTE = ("vLLM's DeepSeek-V4 attention (FlashMLA; FlashInfer on sm12x) stores the fp8_ds_mla layout and asserts an "
                "fp8 KV cache (\"DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache\"): give --kv-cache-dtype fp8. "
                "This 16-bit plan is the plain-row layout of the FlashInfer DSV4 backend (--attention-backend "
                "FLASHINFER_MLA_SPARSE_DSV4, 0.24+).")
AUTO_KV_NOTE_030 = ("vLLM's DeepSeek-V4 attention (FlashMLA; FlashInfer on sm12x) stores the fp8_ds_mla layout: from "
                    "0.30 it takes --kv-cache-dtype auto as fp8 and refuses a 16-bit cache (ValueError: \"DeepseekV4 "
                    "fp8_ds_mla layout only supports fp8 kv-cache ... select a backend that supports bfloat16 KV "
                    "cache\"): give --kv-cache-dtype fp8 or auto. This 16-bit plan is the plain-row layout of the "
                    "FlashInfer DSV4 backend (--attention-backend FLASHINFER_MLA_SPARSE_DSV4).")


def auto_kv_note(auto_is_fp8: bool) -> str:
    """The warning of a 16-bit DeepSeek-V4 plan: before 0.30 the default attention asserts fp8 (auto included); from
    0.30 (``auto_is_fp8``: engines.vllm_has(version, "dsv4_auto_kv_fp8")) auto is fp8 and a 16-bit dtype raises.
    Worked example: 0.29 -> AUTO_KV_NOTE, 0.33 -> AUTO_KV_NOTE_030."""
    return AUTO_KV_NOTE_030 if auto_is_fp8 else AUTO_KV_NOTE
FP8_DS_MLA_ENTRY_BYTES = 584  # kv_cache_interface.py: "448B NoPE + 128B RoPE + 8B fp8 scale = 584B per token"
SWA_BLOCK_TOKENS = 64  # sparse_swa.py DeepseekV4SWACache: self.block_size = 64
STATE_BLOCK_TOKENS = {4: 4, 128: 8}  # compressor.py CompressorStateCache: C4 block 4, C128 block 8
INDEXER_QUANT_BLOCK = 128  # attention.py: k_cache_head_dim = head_dim + head_dim // quant_block_size x 4 (132 B)


def _round_up(n: int, to: int) -> int:
    return cdiv(n, to) * to


def approximate_gcd(values: list[int], lower_bound: int) -> int:
    """vLLM ``_approximate_gcd``: the d in [lower_bound, max(values)] with the least sum of (d - x mod d) mod d, ties
    to the larger d. Worked number: [21, 43, 21, 20], lower bound 21 -> 22 (padding 1 + 1 + 1 + 2 = 5; d = 21 pads 21)."""
    best_d, best_pad = max(1, lower_bound), None
    for d in range(max(1, lower_bound), max(values) + 1):
        pad = sum((d - x % d) % d for x in values)
        if best_pad is None or pad <= best_pad:
            best_d, best_pad = d, pad
    return best_d


def layer_specs(layers, block_size: int, kv_b: int, release: tuple) -> tuple[list, list]:
    """(MLA specs, sliding specs) of the stage's layers: MLA as (page bytes, count), sliding as
    ((block, window), page bytes, count), in registration order."""
    fp8 = kv_b == 1
    align = 576 if fp8 else 512
    mla, sliding = [], []
    for layer, n in layers:
        c = layer.cache
        entry = FP8_DS_MLA_ENTRY_BYTES if fp8 else c.head_dim * kv_b
        sliding.append(((SWA_BLOCK_TOKENS, c.sliding_window), _round_up(SWA_BLOCK_TOKENS * entry, align), n))
        m = c.compress_rate
        if m <= 1:
            continue
        storage = max(1, block_size // m)  # MLAAttentionSpec.storage_block_size = block_size // compress_ratio
        mla.append((_round_up(storage * entry, align), n))
        coff = 2 if m == 4 else 1
        state_block = STATE_BLOCK_TOKENS.get(m, 8)
        sliding.append(((state_block, coff * m), _round_up(state_block * 2 * coff * c.head_dim * 4, align), n))
        if c.index_head_dim:
            d_i = c.index_head_dim
            # 0.24.0 pads the indexer page to 576 B whatever the cache dtype; later ones 576 / 512 as the rest
            i_align = 576 if fp8 or release < (0, 25, 0) else 512
            mla.append((_round_up(storage * (d_i + d_i // INDEXER_QUANT_BLOCK * 4), i_align), n))
            sliding.append(((state_block, coff * m), _round_up(state_block * 2 * coff * d_i * 4, align), n))
    return mla, sliding


def dsv4_layout(layers, block_size: int, kv_b: int, release: tuple) -> dict:
    """vLLM's DSV4 KV groups for ``layers`` ((DecoderLayer, count) pairs of CompressedAttention caches).

    Returns a dict: ``groups`` [(kind, layers, page bytes of the group (sum over its layers), block, window)],
    ``bytes_per_block`` (one block of the shared pool), ``unit_bytes`` (the divisor of the concurrency line before
    0.27.0: the MLA group's page; None from 0.27.0, where a request takes the sum of its groups' pages),
    ``check_page_bytes`` (what _max_memory_usage_bytes_from_groups charges a page: through 0.28 T' x the sum of the
    MLA group's distinct page sizes, T' the most layers of one page size in any group; 0.29+ bytes_per_block).
    Release rules:
    - bytes_per_block: 0.20 - 0.22 ``_get_kv_cache_config_deepseek_v4``: sum of distinct MLA page sizes x the longest
      page-size bucket of any group; 0.23 (the same function) - 0.26 (``_get_kv_cache_config_packed``): sum over page
      sizes of size x the most layers of that size in one group; 0.27+ ``_get_packed_kv_cache_layout``: the largest
      group page.
    Worked number (V4-Flash, bs 256, fp8): 1,051,776 (0.20 - 0.22) / 1,039,680 (0.23 - 0.26) / 1,002,240 (0.27+) B.
    """
    mla, sliding = layer_specs(layers, block_size, kv_b, release)
    padded = release < (0, 27, 0)
    mla_count = Counter()
    for page, n in mla:
        mla_count[page] += n
    mla_pages = sorted(mla_count)
    counts = [max(mla_count.values())] if mla_count else [0]
    by_key: dict = {}
    for key, page, n in sliding:
        by_key.setdefault(key, Counter())[page] += n
    counts += [max(c.values()) for c in by_key.values()]
    tuples = approximate_gcd(counts, counts[0]) if counts[0] else max(counts)
    groups = []
    if mla_count:
        groups.append(("mla", sum(mla_count.values()), sum(p * n for p, n in mla_count.items()), block_size, None,
                       dict(mla_count)))
    for (block, window), pages in by_key.items():
        sizes = Counter()
        for page, n in pages.items():
            if padded and mla_pages:  # pad to the nearest MLA page size at or above (none above: kept)
                page = min((x for x in mla_pages if x >= page), default=page)
            sizes[page] += n
        per_size = max(sizes.values())
        n_sub = cdiv(per_size, tuples)
        for i in range(n_sub):
            k = len(range(i, per_size, n_sub))  # layer_tuples[i::n_sub]
            groups.append(("sliding_attention", k * len(sizes), k * sum(sizes), block, window, dict.fromkeys(sizes, k)))
    if release < (0, 23, 0):
        longest = max(max(g[5].values()) for g in groups)
        bytes_per_block = sum(mla_pages) * longest
    elif padded:
        slots = Counter()
        for g in groups:
            for page, k in g[5].items():
                slots[page] = max(slots[page], k)
        bytes_per_block = sum(page * k for page, k in slots.items())
    else:
        bytes_per_block = max(g[2] for g in groups)
    check_tuples = max(max(g[5].values()) for g in groups)
    # 0.29+ _max_memory_usage_bytes_from_groups: bytes_per_block x the pages of every group
    check = bytes_per_block if release >= (0, 29, 0) else check_tuples * sum(mla_pages)
    return {"groups": [g[:5] for g in groups], "bytes_per_block": bytes_per_block,
            "unit_bytes": groups[0][2] if padded else None, "check_page_bytes": check}


def block_size_note(layers, block_size: int, kv_b: int, release: tuple) -> str | None:
    """Why vLLM would not run DeepSeek-V4 at ``block_size`` (None: it would). A compressed layer stores block_size //
    m entries a block (MLAAttentionSpec.storage_block_size): below the largest ratio that is 0 B, a zero page the
    concurrency line divides by. 0.20 - 0.26 also assert every sliding page fits under the largest MLA page
    (_get_kv_cache_groups_uniform_groups: ``assert max(sm_page_sizes) <= max(all_page_sizes)``): the 64-token SWA
    page is 37,440 B at fp8, so V4-Flash needs --block-size 256 there (at 128 its CSA page is 32 x 584 -> 19,008 B)."""
    rates = [layer.cache.compress_rate for layer, _ in layers if layer.cache.compress_rate > 1]
    if rates and block_size < max(rates):
        return (f"vLLM stores block_size // {max(rates)} = 0 compressed entries a block at --block-size {block_size} "
                f"for DeepSeek-V4's m = {max(rates)} layers (MLAAttentionSpec.storage_block_size): a zero page it "
                f"divides by when it sizes the pool; it would not start. Use --block-size {VLLM_DSV4_BLOCK_SIZE}.")
    if release < (0, 27, 0):
        mla, sliding = layer_specs(layers, block_size, kv_b, release)
        top_mla, top_sliding = max((p for p, _ in mla), default=0), max(p for _, p, _ in sliding)
        if mla and top_sliding > top_mla:
            return (f"vLLM {'.'.join(map(str, release[:2]))} would not start DeepSeek-V4 at --block-size {block_size}: "
                    f"a {top_sliding:,} B sliding / compressor-state page exceeds the largest compressed-KV page "
                    f"({top_mla:,} B), which _get_kv_cache_groups_uniform_groups asserts against (0.20 - 0.26). Use "
                    f"--block-size {VLLM_DSV4_BLOCK_SIZE}.")
    return None


# The model-level buffers vLLM's DeepSeek-V4 constructor makes on the device (so they are in "Model loading took"),
# read in the 0.20.0 (model_executor/models/deepseek_v4.py), 0.22.0 - 0.33.0 (models/deepseek_v4/nvidia/model.py;
# amd/model.py the same) wheels, DeepseekV4Model.__init__:
# - topk_indices_buffer: torch.empty(max_num_batched_tokens, index_topk, int32), on every PP stage, shared by every
#   indexer; the MTP draft makes its own (nvidia/mtp.py DeepSeekV4MultiTokenPredictor) and the proposer swaps it for
#   the target's (v1/spec_decode/llm_base_proposer.py _maybe_share_lm_head: "Sharing target model
#   topk_indices_buffer"), so one stays;
# - _mtp_hidden_buffer: torch.empty(max_num_batched_tokens, hc_mult x hidden_size, model dtype), on the last PP rank:
#   whatever the speculative method through 0.26.x; from 0.27.0 only when speculating with an EAGLE-family (MTP
#   included) or draft model (needs_mtp_hidden_states: engines.VLLM_CHANGES "dsv4_mtp_hidden_spec_only").
DSV4_TOPK_INDEX_BYTES = 4  # torch.int32


def hc_mult_of(spec) -> int:
    """DeepSeek-V4's hc_mult (residual streams), read back from its hc_head mixer (families/deepseek_v4.py
    ``hc_head.hc_fn+hc_base+hc_scale``: hc x hc x h + hc + 1 elements); 0 if the spec has none.
    Worked number: V4-Flash, 4 x 4 x 4,096 + 4 + 1 = 65,541 -> 4."""
    for c in spec.other:
        if c.name.startswith("hc_head"):
            for hc in range(1, 65):
                if hc * hc * spec.hidden_size + hc + 1 == c.numel:
                    return hc
    return 0


def dsv4_model_buffer_bytes(spec, max_num_batched_tokens: int, last_stage: bool, hidden_buffer: bool,
                            act_bytes: int) -> tuple[int, int]:
    """(topk_indices_buffer, _mtp_hidden_buffer) bytes on one rank (the comment above: what and when).
    ``hidden_buffer``: the release makes the hidden-state buffer for this plan (through 0.26 always; 0.27+ when
    speculating); it lives on the last stage only. Neither is split by TP.
    Worked number (V4-Flash, 4,096 batched tokens, bf16): 4,096 x 512 x 4 = 8,388,608 B and 4,096 x 4 x 4,096 x 2 =
    134,217,728 B (128 MiB)."""
    if spec.model_type != "deepseek_v4":
        return 0, 0
    topk = max((getattr(layer.cache, "indexer_topk", None) or 0 for layer in spec.layers), default=0)
    hidden = max_num_batched_tokens * hc_mult_of(spec) * spec.hidden_size * act_bytes \
        if last_stage and hidden_buffer else 0
    return max_num_batched_tokens * topk * DSV4_TOPK_INDEX_BYTES, hidden
