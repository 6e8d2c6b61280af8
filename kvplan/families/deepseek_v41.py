"""DeepSeek-V4.1 (DeepseekV41ForCausalLM; model_type "deepseek_v41" wrapping a "deepseek_v41_text" decoder): a diff
from DeepSeek-V4 (families/deepseek_v4.py), read tensor by tensor from vLLM 0.34.0's model files (the PyPI wheel
vllm-0.34.0-cp38-abi3-manylinux_2_28_x86_64.whl, the newest release, read 2026-12-02: models/deepseek_v41/
{attention,compressor}.py, nvidia/{model,vl_model}.py, common/engram.py, models/deepseek_v4/common/vision.py,
transformers_utils/configs/deepseek_v41.py). transformers 5.23 has no deepseek_v41 model class, so there is no
meta-device oracle: the counts below are vLLM's module tree, minus what it keeps as buffers in V4's convention.

Same as V4 on every layer: the attention (Q-LoRA q_a / q_b, one shared K=V head kv_proj of head_dim, the grouped
o_a / o_b output, per-head sinks), the MoE (router [E, h], routed experts and one shared expert of
moe_intermediate_size x n_shared_experts, all SwiGLU), the two hyper-connection mixers (hc_{attn,ffn}_{fn,base,scale}).
What differs:
- compress_ratios 0 / 1 / 2 (V4: 0 / 4 / 128). A compressor lives only on ``kv_source_layer_ids``
  (DeepseekCompressor: fused_wkv_wgate [h -> d] at ratio 1, which has no gate, [h -> 2d] at ratio 2, and an RMSNorm
  over d; no position bias); every compressed layer reads the compressed KV of the latest kv source at or below it
  (attention.py kv_source_layer_id = max(s <= layer)).
- an indexer only on ``index_source_layer_ids``: wq_b [q_lora -> n_I x d_I], weights_proj [h -> n_I]; the ones that
  are also kv sources own the indexer keys (wk [d -> d_I], bf16, and k_norm [d_I]); the others reuse the source's
  keys. No indexer compressor (V4 has one per CSA layer).
- no hash-routed layers (num_hash_layers 0: no tid2eid table) and no learned hc_head ("v4.1 has no learned hc_head").
- Engram on ``engram_layer_ids``: wkv [(max_ngram - 1) x n_heads x d_E -> h x (hc_mult + 1)] (ColumnParallelLinear,
  quantized with the model), q_weight and k_weight [hc_mult, h] (bf16); and one n-gram table per Engram layer of
  ``engram_num_embeddings`` rows x engram_head_dim, fp8 e4m3 with one UE8M0 scale per 32 (ParallelEngramEmbedding).
  vLLM keeps the tables in pinned host memory by default (EngramConfig.cpu_offload = True), so they are counted
  here apart (``engram_tables``), not in the GPU weights.
- a vision tower (vision_config; DeepseekV4ViT + DeepseekV4Aligner + image_start / end / newline), counted apart as
  a Tower, skipped by vLLM when the image limit is 0 (--language-model-only).
- num_nextn_predict_layers DSpark / MTP draft layers (dspark_*), not loaded without speculative decoding.
Not counted, as in V4: the routers' e_score_correction_bias and (vision checkpoints) bias_vl, fp32 [E] each, which
vLLM holds as parameters and transformers' V4 as buffers (2 x 384 per layer on V4.1-Flash).

Worked number, DeepSeek-V4.1-Flash (tests/fixtures/configs/deepseek-v4.1-flash.json): 551,880,804,464 parameters in
the decoder (543,581,798,400 in the routed experts), 485,268,480 in the vision tower, and 768,022,850 Engram rows
(196,613,849,600 table values) in host memory.
"""

import math
from collections.abc import Mapping
from typing import Any

from kvplan.errors import ConfigError, PlanInputError
from kvplan.families.blocks import gated_mlp, llama_tail, rms, router
from kvplan.families.deepseek_v4 import attention_tensors
from kvplan.layers import CompressedAttention
from kvplan.spec import DecoderLayer, Experts, Linear, Norm, Tensor, Tower
from kvplan.units import counted

VLLM_SOURCE = "vLLM 0.34.0 models/deepseek_v41 (PyPI wheel, read 2026-12-02)"
RATIOS = (0, 1, 2)  # vLLM attention.py: "only 0 (sliding window), 1 and 2 are supported"
ENGRAM_SCALE_BLOCK = 32  # ParallelEngramEmbedding(block_size=32): one UE8M0 scale byte per 32 fp8 values


def _ids(r, key: str, n_layers: int, required: bool) -> list[int]:
    ids = r.int_list(key) if r.has(key) else None
    if ids is None:
        if required:
            raise ConfigError(r._name(key), "required for DeepSeek-V4.1's compressed layers (vLLM asserts it)")
        return []
    bad = [i for i in ids if not 0 <= i < n_layers]
    if bad:
        raise ConfigError(r._name(key), f"layer id(s) {bad} outside 0 - {n_layers - 1}")
    return sorted(set(ids))


def _ratios(r, n_layers: int) -> list[int]:
    if not r.has("compress_ratios"):
        raise ConfigError(r._name("compress_ratios"), "required: DeepSeek-V4.1 has no default per-layer ratios")
    ratios = r.int_list("compress_ratios")
    bad = sorted(set(ratios) - set(RATIOS))
    if bad:
        raise ConfigError(r._name("compress_ratios"), f"unknown ratio(s) {bad}; DeepSeek-V4.1 allows 0, 1, 2")
    if len(ratios) < n_layers:
        raise ConfigError(r._name("compress_ratios"), f"has {len(ratios)} entries but num_hidden_layers is {n_layers}")
    return ratios[:n_layers]  # one entry per layer, the draft layers' after them (V4.1-Flash lists 43 for 40 + 3)


def engram_head_rows(r_or_cfg) -> list[list[int]]:
    """The prime row counts of every Engram layer's hash heads, as vLLM's EngramLayout draws them: for each layer,
    for each n-gram size 2 .. engram_max_ngram_size, for each of engram_n_heads heads, the smallest prime above the
    previous one (starting above engram_vocab_size - 1), never reused across heads or layers. A layer's table has
    engram_num_embeddings rows = the sum of its heads' primes (vLLM asserts sum <= num_embeddings). Input: a Reader
    or a config mapping. Worked number, V4.1-Flash (vocab 16,000,000, n-grams 2 - 4, 8 heads, layers 1 and 14): 24
    primes a layer, 16,000,057 ... 16,000,463 (sum 384,006,168) and 16,000,477 ... 16,000,889 (sum 384,016,682),
    the config's engram_num_embeddings exactly."""
    get = r_or_cfg.get
    layers, heads = list(get("engram_layer_ids") or []), int(get("engram_n_heads"))
    orders, start = int(get("engram_max_ngram_size")) - 1, int(get("engram_vocab_size")) - 1
    seen: set[int] = set()
    out = []
    for _ in layers:
        rows = []
        for _ in range(orders):
            current = start
            for _ in range(heads):  # find_next_prime(current, seen): the smallest unused prime above current
                current += 1
                while current in seen or not _is_prime(current):
                    current += 1
                seen.add(current)
                rows.append(current)
        out.append(rows)
    return out


def _is_prime(n: int) -> bool:
    if n < 2:
        return False
    if n % 2 == 0:
        return n == 2
    return all(n % d for d in range(3, math.isqrt(n) + 1, 2))


def engram_rows_per_rank(head_rows: list[int], shards: int) -> list[int]:
    """Rows of one Engram table each shard holds (ParallelEngramEmbedding._get_shard_info / part_num_embeddings):
    the table's hash heads split in contiguous runs of cdiv(heads, shards) over shards = TP x the Engram DP size
    (get_engram_dp_size; 1 when the host tables are DP-shared); a shard holds the sum of its heads' primes. vLLM asserts
    (shards - 1) x cdiv(heads, shards) < heads. Worked number: V4.1-Flash layer 1 at TP8: 3 heads a rank,
    48,000,217 rows on rank 0 (16,000,057 + 16,000,079 + 16,000,081)."""
    per = -(-len(head_rows) // shards)
    if (shards - 1) * per >= len(head_rows):
        raise PlanInputError("tensor_parallel_size", f"vLLM's Engram sharding leaves ranks without hash heads: "
                          f"{len(head_rows)} heads over {shards} shards")
    return [sum(head_rows[i * per:(i + 1) * per]) for i in range(shards)]


def engram_row_bytes(head_dim: int) -> int:
    """Bytes one Engram row takes: head_dim fp8 values + head_dim / 32 UE8M0 scale bytes (256 + 8 = 264 B)."""
    return head_dim + head_dim // ENGRAM_SCALE_BLOCK


def build_deepseek_v41(r, model_type: str) -> dict[str, Any]:
    h, n_layers, nq = r.int("hidden_size"), r.int("num_hidden_layers"), r.int("num_attention_heads")
    vocab = r.int("vocab_size")
    r.fail_if_missing()
    hd = r.int("head_dim", 512, why="DeepSeek-V4 default")
    if hd != 512 or r.int("qk_rope_head_dim", 64, why="DeepSeek-V4 default") != 64:
        raise ConfigError(r._name("head_dim"), "vLLM's DeepSeek-V4.1 compressor asserts head_dim 512 and "
                          "qk_rope_head_dim 64")
    q_lora = r.int("q_lora_rank")
    groups, o_lora = r.int("o_groups"), r.int("o_lora_rank")
    window = r.int("sliding_window")
    n_i, d_i = r.int("index_n_heads"), r.int("index_head_dim")
    hc = r.int("hc_mult")
    r.fail_if_missing()
    if (nq * hd) % groups:
        raise ConfigError(r._name("o_groups"), f"{groups} does not divide num_attention_heads x head_dim = {nq * hd}")
    ratios = _ratios(r, n_layers)
    compressed = any(ratios)
    kv_src = _ids(r, "kv_source_layer_ids", n_layers, compressed)
    idx_src = _ids(r, "index_source_layer_ids", n_layers, compressed)
    for i, m in enumerate(ratios):
        if m and not any(s <= i for s in kv_src):
            raise ConfigError(r._name("kv_source_layer_ids"), f"no kv source at or below compressed layer {i}")
        if m and not any(s <= i for s in idx_src):
            raise ConfigError(r._name("index_source_layer_ids"), f"no index source at or below compressed layer {i}")
    for s in kv_src:
        if not ratios[s]:
            raise ConfigError(r._name("kv_source_layer_ids"), f"layer {s} is a sliding-window layer (ratio 0)")
        if s not in idx_src:  # every V4.1 kv source owns the indexer keys the later index sources read
            raise ConfigError(r._name("index_source_layer_ids"), f"kv source {s} is not an index source: its indexer "
                              "keys (wk / k_norm) have no owner kvplan models")
    for s in idx_src:
        src = max((k for k in kv_src if k <= s), default=None)
        if not ratios[s] or src is None or ratios[src] != ratios[s]:
            raise ConfigError(r._name("index_source_layer_ids"), f"layer {s} does not share its kv source's ratio")
    engram_ids = _ids(r, "engram_layer_ids", n_layers, False)

    attn = attention_tensors(h, q_lora, nq, hd, groups, o_lora)  # as V4's

    def compressor(m: int) -> tuple:  # DeepseekCompressor (quant_config None): [wkv] at ratio 1, [wkv, wgate] at 2
        comps = (Linear(name="compressor.kv_proj", in_features=h, out_features=hd, shard="replicated",
                        quantizable=False),)
        if m > 1:
            comps += (Linear(name="compressor.gate_proj", in_features=h, out_features=hd, shard="replicated",
                             quantizable=False),)
        return comps + (rms("compressor.kv_norm", hd),)

    def indexer(owns_k: bool) -> tuple:  # DeepseekV4Indexer: ReplicatedLinear wq_b (quantized), weights_proj (not)
        comps = (Linear(name="compressor.indexer.q_b_proj", in_features=q_lora, out_features=n_i * d_i,
                        shard="replicated"),
                 Linear(name="compressor.indexer.scorer.weights_proj", in_features=h, out_features=n_i,
                        shard="replicated", quantizable=False))
        if owns_k:  # wk: bf16 in the checkpoint, no scales
            comps += (Linear(name="compressor.indexer.wk", in_features=hd, out_features=d_i, shard="replicated",
                             quantizable=False), rms("compressor.indexer.k_norm", d_i))
        return comps

    inter = r.int("moe_intermediate_size")
    n = r.int("n_routed_experts")
    k = r.int("num_experts_per_tok")
    n_shared = r.int("n_shared_experts", 1, why="DeepSeek-V4 default")
    r.fail_if_missing()
    if k > n:
        raise ConfigError(r._name("num_experts_per_tok"), f"{k} experts per token but only {n} experts")
    linears = tuple(lin.model_copy(update={"shard": "expert"}) for lin in gated_mlp(h, inter))
    experts = Experts(num_experts=n, num_experts_per_tok=k, linears=linears)
    shared = gated_mlp(h, inter * n_shared, prefix="shared_experts.")
    mix = (2 + hc) * hc
    hyper = tuple(Tensor(name=f"{p}_hc.fn+base+scale", numel=mix * hc * h + mix + 3) for p in ("attn", "ffn"))
    norms = (rms("input_layernorm", h), rms("post_attention_layernorm", h))

    engram: tuple = ()
    engram_wkv: tuple = ()
    if engram_ids:
        e_heads, e_dim = r.int("engram_n_heads"), r.int("engram_head_dim")
        orders = r.int("engram_max_ngram_size", minimum=2) - 1
        r.int("engram_vocab_size")
        rows = r.int_list("engram_num_embeddings") if r.has("engram_num_embeddings") else None
        r.fail_if_missing()
        if rows is None or len(rows) != len(engram_ids):
            raise ConfigError(r._name("engram_num_embeddings"), f"needs one row count per engram layer "
                              f"({len(engram_ids)})")
        # wkv is quantized with the model (vLLM passes the quant_config): listed with the MLP, whose linears
        # kvplan prices in the checkpoint's format ("other" never is); q_weight / k_weight are bf16 parameters.
        engram_wkv = (Linear(name="engram.wkv", in_features=orders * e_heads * e_dim, out_features=h * (hc + 1)),)
        engram = (Tensor(name="engram.q_weight", numel=hc * h), Tensor(name="engram.k_weight", numel=hc * h))

    made: dict = {}
    for i, m in enumerate(ratios):
        src = i in kv_src
        key = (m if src else 0, src, i in idx_src, i in engram_ids)
        if key not in made:
            # The cache a layer owns in vLLM: its sliding window (every layer); a kv source also the compressed KV
            # (1 entry / m tokens) and the indexer keys; a consumer reads its source's, so it owns the window only.
            cache = CompressedAttention(head_dim=hd, sliding_window=window, compress_rate=m if src else 0,
                                        index_head_dim=d_i if src else None, qk_rope_head_dim=64)
            a = attn + (compressor(m) if src else ()) + (indexer(src) if i in idx_src else ())
            made[key] = DecoderLayer(cache=cache, attention=a, mlp=shared + (engram_wkv if i in engram_ids else ()),
                                     experts=experts, router=router(h, n),
                                     norms=norms, other=hyper + (engram if i in engram_ids else ()))
    layers = [made[(m if i in kv_src else 0, i in kv_src, i in idx_src, i in engram_ids)]
              for i, m in enumerate(ratios)]
    r.assumptions.append("router e_score_correction_bias (and bias_vl with a vision tower) counted as buffers, "
                         "as for DeepSeek-V4")
    r.assumptions.append(f"the hyper-connection mixers ({n_layers * hyper[0].numel * 2:,} values) are fp32 in vLLM; "
                         f"priced at the checkpoint dtype as for DeepSeek-V4 ({n_layers * hyper[0].numel * 2 * 2:,} B "
                         "fewer than vLLM holds on each rank at bf16)")
    fields = llama_tail(r, h=h, n_layers=n_layers, nq=nq, nkv=1, hd=hd, vocab=vocab, layers=layers)
    skipped = []
    nextn = r.raw("num_nextn_predict_layers")
    if nextn:
        skipped.append(f"{counted(nextn, 'DSpark / multi-token-prediction draft layer')} (loaded only for speculative "
                       "decoding)")
    if engram_ids:
        values = sum(rows) * e_dim
        skipped.append(f"Engram n-gram tables on layers {engram_ids}: {sum(rows):,} rows x {e_dim} = {values:,} "
                       f"values, {sum(rows) * engram_row_bytes(e_dim):,} B as fp8 + UE8M0 scales, held in pinned "
                       "host memory by vLLM's default (--engram-config cpu_offload=True), not on the GPU")
    fields["skipped"] = tuple(skipped)
    fields["warnings"] = (V41_NOTE,)
    fields["rope_caches"] = _rope_caches(r, ratios)
    fields["batch_buffers"] = _batch_buffers(r, engram_ids)
    return fields


def _rope_caches(r, ratios: list[int]) -> tuple:
    """vLLM 0.33 - 0.34's V4.1 rotary tables (models/deepseek_v41/common/rope.py build_deepseek_v4_rope, one get_rope
    instance per distinct parameter set): sliding-only layers (ratio 0) deepseek_yarn at rope_theta with factor 1 over
    max_position_embeddings; compressed layers (ratio > 0) the config's scaling as deepseek_yarn at
    compress_rope_theta (unscaled: the sliding layers' parameters at that theta), both is_deepseek_v4, whose
    DeepseekV4ScalingRotaryEmbedding (rotary_embedding/deepseek_scaling_rope.py) keeps its cos_sin_cache in float32
    (original x factor rows). Worked number, V4.1-Flash: two tables of 1,048,576 rows x 64 x 4 B = 536,870,912 B."""
    from kvplan.families.blocks import _rope_cache, _rope_params

    max_pos = r.int("max_position_embeddings", 1_048_576, why="DeepseekV41Config default")
    params = _rope_params(r.cfg)
    theta = r.raw("rope_theta")
    flat = {"rope_type": "deepseek_yarn", "factor": 1.0, "original_max_position_embeddings": max_pos,
            "rope_theta": theta if isinstance(theta, (int, float)) else 10000.0}
    out = []
    if any(m == 0 for m in ratios):
        out.append(_rope_cache(flat, 64, max_pos, fp32=True, layer_types=("compressed_attention",)))
    if any(ratios):
        c_theta = r.raw("compress_rope_theta")
        c_theta = c_theta if isinstance(c_theta, (int, float)) else 160000.0
        if params["rope_type"] == "default":
            compress = {**flat, "rope_theta": c_theta}
        else:
            if params.get("attention_factor") == 1.0:
                raise ConfigError("rope_scaling.attention_factor", "1.0 makes vLLM's DeepSeek-V4.1 rope "
                                  "deepseek_llama_scaling, whose table kvplan has not read")
            compress = {**params, "rope_type": "deepseek_yarn", "rope_theta": c_theta}
        table = _rope_cache(compress, 64, max_pos, name="compress_rotary_emb", fp32=True,
                            layer_types=("compressed_attention",))
        if not out or (out[0].base, out[0].factor, out[0].original_max_position) != (
                table.base, table.factor, table.original_max_position):
            out.append(table)
    return tuple(out)


def _batch_buffers(r, engram_ids: list[int]) -> tuple:
    """The device buffers vLLM 0.33 - 0.34's DeepseekV4Model (models/deepseek_v41/nvidia/model.py) and its Engram
    layers (common/engram.py) size by max_num_batched_tokens (kvplan.spec.BatchBuffer): topk_indices_buffer
    [tokens, index_topk] int32; candidate_block_buffer [tokens, candidate_topk_blocks] int32 when
    candidate_source_layer_id >= 0 and candidate_topk_blocks > 0; per Engram layer staged_rows [tokens,
    cdiv((max_ngram - 1) x n_heads, TP), engram_head_dim] bf16 (engram DP size 1). Worked number, V4.1-Flash at TP 8,
    8,192 tokens: 16,777,216 + 67,108,864 + 25,165,824 B."""
    from kvplan.spec import BatchBuffer

    out = [BatchBuffer(name="topk_indices_buffer", columns=r.int("index_topk", 512, why="DeepseekV41Config default"),
                       column_bytes=4)]
    cand_layer, cand_blocks = r.raw("candidate_source_layer_id", -1), r.raw("candidate_topk_blocks", 0)
    if isinstance(cand_layer, int) and cand_layer >= 0 and isinstance(cand_blocks, int) and cand_blocks > 0:
        out.append(BatchBuffer(name="candidate_block_buffer", columns=cand_blocks, column_bytes=4))
    if engram_ids:
        cols = (r.int("engram_max_ngram_size") - 1) * r.int("engram_n_heads")
        out.append(BatchBuffer(name="engram staged_rows", columns=cols, column_bytes=r.int("engram_head_dim") * 2,
                               tp_split=True, copies=len(engram_ids)))
    return tuple(out)


V41_NOTE = ("DeepSeek-V4.1: parameters are exact to vLLM 0.34's model files (transformers has no DeepSeek-V4.1 "
            "class); each layer owns the cache vLLM registers for it: its sliding window, and on the kv-source "
            "layers the compressed KV and indexer keys every later compressed layer reads.")


# What kvplan does not plan yet, and why (each engine's pool for V4.1 differs from V4's; a V4 budget would not be the
# engine's). vLLM 0.33 - 0.34 (DeepseekV41ForCausalLM): planned on SM 10.x (kvplan.vllm_dsv41: pages, packing, what a
# rank loads; the activation peak is the generic estimate, so the plan warns that its pool is an upper limit,
# vllm_dsv41.ACTIVATION_GAP); refused elsewhere by vllm_dsv41.vllm_plan_refusal (Hopper's Humming MoE layout is not
# read). SGLang (0.5.21+):
# its V4.1 pools (ratio-1 / 2 pools with a reserved page, DSV41_INDEX_PAGE_SIZE indexer pages, a fixed c2
# compressor state, the SWA pool sized by the request cap) are not modelled, only the cap itself
# (kvplan.sglang_dsv4.swa_request_cap_tokens).
PLAN_REFUSAL = {
    "vllm": ("DeepSeek-V4.1 on vLLM is planned for kvplan's vLLM 0.33 profile (rules read in 0.33.0 and 0.34.0) on "
             "SM 10.x GPUs, TP with or without expert parallelism, the release's format, no speculative decoding "
             "(Hopper, PP / DP layouts, speculative decoding and other releases are refused with the reason)."),
    "sglang": ("DeepSeek-V4.1 on SGLang: its V4.1 pools are not modelled yet (DSV4PoolConfigurator's ratio-1 / 2 "
               "pools, DSV41_INDEX_PAGE_SIZE indexer pages, the fixed c2 compressor state, the sliding-window pool "
               "sized by the request cap, \"DSV4 SWA sizing: mode=cap\"); any token count shown would not be "
               "SGLang's. Parameters and weights (python -m kvplan params) are exact."),
    "custom": ("DeepSeek-V4.1 on the custom engine: no per-sequence cache convention is defined for it (transformers "
               "has no DeepSeek-V4.1 class); plan it on vLLM 0.33 with an SM 10.x GPU, whose packed pool kvplan "
               "reads. Parameters and weights (python -m kvplan params) are exact."),
}


def plan_refusal(engine: str) -> tuple[str, str]:
    """(field, message) refusing a DeepSeek-V4.1 plan on ``engine`` ("vllm", "sglang", "custom"): what the engine
    does that kvplan does not reproduce yet. Worked example: "sglang" -> ("model", "DeepSeek-V4.1 on SGLang: ...")."""
    return "model", PLAN_REFUSAL.get(engine, PLAN_REFUSAL["custom"])


def dsv41_tower(r, text_hidden: int) -> tuple[Tower, ...]:
    """DeepSeek-V4.1's vision tower (vLLM models/deepseek_v4/common/vision.py, built by deepseek_v41 nvidia/
    vl_model.py; vision_config fields flattened by transformers_utils/configs/deepseek_v41.py with its defaults
    1,024 / 16 heads / 2,816 / patch 14 / downsample 3): patch_embed.proj [3p^2 -> D] + bias (replicated); per block
    norm1, norm2 (RMSNorm D), wqkv [D -> 3D] + bias (QKVParallelLinear), wo [D -> D] + bias (row), w1 [D -> 2I] (merged
    column, no bias), w2 [I -> D] (row, no bias); the ViT's final norm; the aligner w1 [D x r^2 -> h] + bias (column),
    w2 [h -> h] + bias (row); image_start / image_end / image_newline [h] (fp32 parameters). Worked number,
    V4.1-Flash (D 1,024, I 2,816, 32 blocks, p 14, r 3, h 5,120): 603,136 + 32 x 12,851,200 + 1,024 + 47,191,040 +
    26,219,520 + 15,360 = 485,268,480."""
    cfg = r.raw("vision_config", {})
    if not isinstance(cfg, Mapping):
        raise ConfigError("vision_config", f"must be an object, got {type(cfg).__name__}")
    from kvplan.hf_config import Reader

    v = Reader(cfg, prefix="vision_config.")
    v.assumptions = r.assumptions
    layers = v.int("num_hidden_layers", 0, minimum=0, why="vLLM DeepseekV41Config default")
    if not layers:
        return ()
    why = "vLLM DeepseekV41Config default"
    d, heads = v.int("hidden_size", 1024, why=why), v.int("num_attention_heads", 16, why=why)
    inter, patch = v.int("intermediate_size", 2816, why=why), v.int("patch_size", 14, why=why)
    down = v.int("downsample_ratio", 3, why=why)
    if d % heads:
        raise ConfigError("vision_config.num_attention_heads", f"{heads} does not divide hidden_size {d}")

    def lin(name, out_f, in_f, bias, shard="column", count=1):
        return Linear(name=name, in_features=in_f, out_features=out_f, bias=bias, shard=shard, count=count,
                      quantizable=False)

    comps = (lin("vision.patch_embed.proj", d, 3 * patch * patch, True, "replicated"),
             Norm(name="vision.blocks.norm1", dim=d, count=layers), Norm(name="vision.blocks.norm2", dim=d, count=layers),
             lin("vision.blocks.attn.wqkv", 3 * d, d, True, count=layers),
             lin("vision.blocks.attn.wo", d, d, True, "row", layers),
             lin("vision.blocks.mlp.w1", 2 * inter, d, False, count=layers),
             lin("vision.blocks.mlp.w2", d, inter, False, "row", layers),
             Norm(name="vision.norm", dim=d),
             lin("aligner.w1", text_hidden, d * down * down, True),
             lin("aligner.w2", text_hidden, text_hidden, True, "row"),
             Tensor(name="image_start+image_end+image_newline", numel=3 * text_hidden))
    return (Tower(name="vision (DeepSeek-V4 ViT) + aligner", components=comps, num_heads=heads,
                  source=f"{VLLM_SOURCE}: nvidia/vl_model.py, deepseek_v4/common/vision.py"),)


MODEL_TYPES = {
    "deepseek_v41": build_deepseek_v41,
    "deepseek_v41_text": build_deepseek_v41,
}
