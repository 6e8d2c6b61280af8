"""DeepSeek-V4 (transformers 5.23 ``modeling_deepseek_v4.py``): not a diff from V3.

- attention: one K=V head of ``head_dim`` (512) shared by all query heads (MQA; ``kv_proj`` makes a
  single tensor that is both keys and values), Q-LoRA, a grouped low-rank output projection
  (``o_a_proj``: o_groups blocks of nq x d / g -> o_lora_rank, ``o_b_proj``), per-head attention sinks.
- per-layer type (``layer_types``, or the checkpoint's ``compress_ratios`` 0 / 4 / 128):
  sliding_attention, compressed_sparse_attention (CSA: an overlapping-window compressor and a
  lightning indexer) or heavily_compressed_attention (HCA: a non-overlapping compressor).
  Cache: ``CompressedAttention``.
- every layer MoE: routed experts, one shared expert of moe_intermediate_size (DeepseekV4MLP reads
  ``intermediate_size``, an alias of it), a router ([E, h]; the first ``num_hash_layers`` route by a
  frozen token->expert table, a buffer).
- Manifold-constrained hyper-connections: ``hc_mult`` residual streams, per layer two mixers
  (fn [(2 + n) x n, n x h], base [(2 + n) x n], scale [3]) and one head mixer at the top.
"""

from typing import Any

from kvplan.errors import ConfigError
from kvplan.families.blocks import gated_mlp, llama_tail, rms, router
from kvplan.layers import CompressedAttention
from kvplan.spec import DecoderLayer, Experts, Linear, Tensor
from kvplan.units import counted

LAYER_TYPES = ("sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention")
RATIO_TO_TYPE = {0: "sliding_attention", 4: "compressed_sparse_attention", 128: "heavily_compressed_attention"}


def _layer_types(r, n_layers: int) -> list[str]:
    given = r.str_list("layer_types")
    field = "layer_types"
    if given is None and r.has("compress_ratios"):
        ratios = r.int_list("compress_ratios")
        bad = sorted(set(ratios) - set(RATIO_TO_TYPE))
        if bad:
            v41 = " (1 and 2 are DeepSeek-V4.1's: model_type 'deepseek_v41_text')" if set(bad) <= {1, 2} else ""
            raise ConfigError(r._name("compress_ratios"), f"unknown ratio(s) {bad}; allowed: 0, 4, 128{v41}")
        given, field = [RATIO_TO_TYPE[x] for x in ratios], "compress_ratios"
    if given is None:  # DeepseekV4Config default: 2 HCA, then CSA / HCA alternating
        return (["heavily_compressed_attention"] * min(n_layers, 2)
                + ["compressed_sparse_attention" if i % 2 else "heavily_compressed_attention"
                   for i in range(max(n_layers - 2, 0))])
    if set(given) - set(LAYER_TYPES):
        raise ConfigError(r._name(field), f"unknown layer type(s) {sorted(set(given) - set(LAYER_TYPES))}")
    if len(given) < n_layers:
        raise ConfigError(r._name(field), f"has {len(given)} entries but num_hidden_layers is {n_layers}")
    return list(given[:n_layers])  # DeepseekV4Config truncates to num_hidden_layers (V4-Flash lists 44: MTP's)


def _rates(r) -> dict[str, int]:
    rates = {"compressed_sparse_attention": 4, "heavily_compressed_attention": 128}
    given = r.raw("compress_rates")
    if given is not None:
        if not isinstance(given, dict):
            raise ConfigError(r._name("compress_rates"), "must be an object {layer type: rate}")
        for key, value in given.items():
            if key in rates:
                rates[key] = r.check_int(f"compress_rates.{key}", value)
    for key, legacy in (("compressed_sparse_attention", "compress_rate_csa"),
                        ("heavily_compressed_attention", "compress_rate_hca")):
        if r.has(legacy):
            rates[key] = r.int(legacy)
    return rates


def build_deepseek_v4(r, model_type: str) -> dict[str, Any]:
    h, n_layers, nq = r.int("hidden_size"), r.int("num_hidden_layers"), r.int("num_attention_heads")
    vocab = r.int("vocab_size")
    r.fail_if_missing()
    hd = r.int("head_dim", 512, why="DeepseekV4Config default")
    q_lora = r.int("q_lora_rank", 1024, why="DeepseekV4Config default")
    groups = r.int("o_groups", 8, why="DeepseekV4Config default")
    o_lora = r.int("o_lora_rank", 1024, why="DeepseekV4Config default")
    window = r.int("sliding_window", 128, why="DeepseekV4Config default")
    n_i = r.int("index_n_heads", 64, why="DeepseekV4Config default")
    topk = r.int("index_topk", 512, why="DeepseekV4Config default")
    d_i = r.int("index_head_dim", 128, why="DeepseekV4Config default")
    hc = r.int("hc_mult", 4, why="DeepseekV4Config default")
    if (nq * hd) % groups:
        raise ConfigError(r._name("o_groups"), f"{groups} does not divide num_attention_heads x head_dim = {nq * hd}")
    rope = int(hd * float(r.raw("partial_rotary_factor") or 0)) if r.raw("partial_rotary_factor") else (
        r.int("qk_rope_head_dim", 64, why="DeepseekV4Config default (partial_rotary_factor 64 / 512)"))
    kinds = _layer_types(r, n_layers)
    rates = _rates(r)
    attn = attention_tensors(h, q_lora, nq, hd, groups, o_lora)

    def compressor(width: int, rate: int, prefix: str) -> tuple:
        # DeepseekV4{CSA,HCA}Compressor / DeepseekV4Indexer: kv_proj and gate_proj [width, h],
        # position_bias [rate, width], kv_norm over the entry dim.
        return (Linear(name=f"{prefix}kv_proj", in_features=h, out_features=width, shard="replicated"),
                Linear(name=f"{prefix}gate_proj", in_features=h, out_features=width, shard="replicated"),
                Tensor(name=f"{prefix}position_bias", numel=rate * width))

    per_kind = {}
    for kind in set(kinds):
        if kind == "sliding_attention":
            per_kind[kind] = (CompressedAttention(head_dim=hd, sliding_window=window, compress_rate=0,
                                                  qk_rope_head_dim=rope), attn)
        elif kind == "heavily_compressed_attention":
            m = rates[kind]
            per_kind[kind] = (CompressedAttention(head_dim=hd, sliding_window=window, compress_rate=m,
                                                  qk_rope_head_dim=rope),
                              attn + compressor(hd, m, "compressor.") + (rms("compressor.kv_norm", hd),))
        else:
            m = rates[kind]
            index = compressor(2 * d_i, m, "compressor.indexer.") + (
                rms("compressor.indexer.kv_norm", d_i),
                Linear(name="compressor.indexer.q_b_proj", in_features=q_lora, out_features=n_i * d_i,
                       shard="replicated"),
                Linear(name="compressor.indexer.scorer.weights_proj", in_features=h, out_features=n_i,
                       shard="replicated", quantizable=False))
            per_kind[kind] = (CompressedAttention(head_dim=hd, sliding_window=window, compress_rate=m,
                                                  index_head_dim=d_i, overlap=True, qk_rope_head_dim=rope,
                                                  indexer_topk=topk),
                              attn + compressor(2 * hd, m, "compressor.") + (rms("compressor.kv_norm", hd),) + index)
    inter = r.int("moe_intermediate_size", 2048, why="DeepseekV4Config default")
    n = r.int("n_routed_experts", 256, why="DeepseekV4Config default")
    k = r.int("num_experts_per_tok", 6, why="DeepseekV4Config default")
    if k > n:
        raise ConfigError(r._name("num_experts_per_tok"), f"{k} experts per token but only {n} experts")
    bias = r.bool("mlp_bias", False)
    linears = tuple(lin.model_copy(update={"shard": "expert"}) for lin in gated_mlp(h, inter))
    experts = Experts(num_experts=n, num_experts_per_tok=k, linears=linears)
    shared = gated_mlp(h, inter, bias=bias, prefix="shared_experts.")  # DeepseekV4MLP: one expert wide
    mix = (2 + hc) * hc
    hyper = tuple(Tensor(name=f"{p}_hc.fn+base+scale", numel=mix * hc * h + mix + 3) for p in ("attn", "ffn"))
    norms = (rms("input_layernorm", h), rms("post_attention_layernorm", h))
    made = {kind: DecoderLayer(cache=cache, attention=a, mlp=shared, experts=experts, router=router(h, n),
                               norms=norms, other=hyper) for kind, (cache, a) in per_kind.items()}
    layers = [made[kind] for kind in kinds]
    r.assumptions.append("router e_score_correction_bias and the hash layers' tid2eid table are buffers, not counted")
    expert_dtype = r.raw("expert_dtype")
    if expert_dtype is None and r.has("quantization_config"):  # hf_config passes "fp4" to with_expert_dtype
        r.assumptions.append("expert_dtype absent: 'fp4' (MXFP4 routed experts beside an fp8 quantization_config), "
                             "vLLM's DeepseekV4FP8Config default")
    elif expert_dtype is not None:  # read again, with the quantization_config, by kvplan.quantization.with_expert_dtype
        r.assumptions.append(f"expert_dtype {expert_dtype!r} (config.json): the routed experts' storage; 'fp4' beside an "
                             "fp8 quantization_config: MXFP4 (packed e2m1 [out, in/2] + e8m0 scales [out, in/32]), as "
                             "vLLM's DeepseekV4FP8Config loads them; the parameter count is unchanged")
    fields = llama_tail(r, h=h, n_layers=n_layers, nq=nq, nkv=1, hd=hd, vocab=vocab, layers=layers)
    fields["other"] = (Tensor(name="hc_head.hc_fn+hc_base+hc_scale", numel=hc * hc * h + hc + 1),)
    nextn = r.raw("num_nextn_predict_layers")
    fields["skipped"] = (f"{counted(nextn, 'multi-token-prediction layer')} (loaded only for speculative decoding)",) if nextn \
        else ()
    if nextn:
        sliding = made.get("sliding_attention") or DecoderLayer(
            cache=CompressedAttention(head_dim=hd, sliding_window=window, compress_rate=0, qk_rope_head_dim=rope),
            attention=attn, mlp=shared, experts=experts, router=router(h, n), norms=norms, other=hyper)
        fields.update(mtp_fields(r, h, hc, sliding))
    fields["rope_caches"] = _rope_caches(r, rope, kinds)
    fields["warnings"] = (VLLM_V4_NOTE,)
    return fields


def attention_tensors(h: int, q_lora: int, nq: int, hd: int, groups: int, o_lora: int) -> tuple:
    """DeepSeek-V4's (and V4.1's) attention tensors: low-rank queries, one shared K=V head (kv_proj, replicated like
    q_a_proj: vLLM's fused_wqa_wkv = [q_a_proj, kv_proj]), a grouped low-rank output and per-head sinks.
    Shapes: q_a [h -> q_lora], q_b [q_lora -> nq x hd], kv [h -> hd], o_a [nq x hd / groups -> groups x o_lora],
    o_b [groups x o_lora -> h]. V4-Flash (h 4096, q_lora 1024, 64 heads of 512, 8 groups of o_lora 1024): q_b
    1,024 x 32,768 = 33,554,432 weights."""
    return (
        Linear(name="q_a_proj", in_features=h, out_features=q_lora, shard="replicated"),
        rms("q_a_norm", q_lora),
        Linear(name="q_b_proj", in_features=q_lora, out_features=nq * hd),
        Linear(name="kv_proj", in_features=h, out_features=hd, shard="replicated"),
        rms("kv_norm", hd),
        # Grouped output projection: o_groups blocks [o_lora, nq x d / g] stored as one [g x o_lora, nq x d / g].
        Linear(name="o_a_proj", in_features=nq * hd // groups, out_features=groups * o_lora),
        Linear(name="o_b_proj", in_features=groups * o_lora, out_features=h, shard="row"),
        Tensor(name="sinks", numel=nq, shard="column"),
    )


def _rope_caches(r, rope: int, kinds: list[str]) -> tuple:
    """vLLM's DeepSeek-V4 cos/sin tables: each attention layer calls build_deepseek_v4_rope (0.20.0
    model_executor/models/deepseek_v4.py, 0.22.0+ models/deepseek_v4/{nvidia/model.py, common/rope.py}), which passes
    get_rope ``rope_theta`` (sliding-only layers and the MTP layer) or ``compress_rope_theta`` (compressed layers),
    so ``_ROPE_DICT`` holds one table per theta. A scaled config becomes "deepseek_yarn" with is_deepseek_v4, whose
    class (rotary_embedding/deepseek_scaling_rope.py DeepseekV4ScalingRotaryEmbedding, 0.20.0 - 0.33.0 wheels read)
    registers a float32 cos_sin_cache of original_max_position x factor rows x qk_rope_head_dim. 0.33.0 gives the
    sliding-only table factor 1 over max_position_embeddings rows instead: the same rows wherever max_position_embeddings
    = original x factor (V4-Flash / V4-Pro: 65,536 x 16 = 1,048,576). Under PP each stage is charged both tables
    (vllm_rope_tables matches layers by cache kind, and every DeepSeek-V4 layer has one kind): a stage without a
    sliding-only layer builds only the compressed table there.
    Worked number (V4-Flash): 2 x 1,048,576 x 64 x 4 B = 536,870,912 B (0.5 GiB) a rank."""
    from kvplan.families.blocks import _rope_cache, _rope_params

    max_pos = r.int("max_position_embeddings", 1_048_576, why="DeepseekV4Config default")
    params = _rope_params(r.cfg)
    scaled = params["rope_type"] != "default"  # unscaled: the plain RotaryEmbedding in the model dtype
    if scaled:
        params["rope_type"] = "deepseek_yarn"
    main = _rope_cache(params, rope, max_pos, fp32=scaled)
    if all(kind == "sliding_attention" for kind in kinds):
        return (main,)
    theta = r.raw("compress_rope_theta")
    compress = _rope_cache({**params, "rope_theta": theta if isinstance(theta, (int, float)) else 160000.0}, rope,
                           max_pos, name="compress_rotary_emb", fp32=scaled)
    return (main, compress)


def mtp_fields(r, h: int, hc: int, sliding: DecoderLayer) -> dict[str, Any]:
    """The multi-token-prediction layers vLLM loads with ``--speculative-config '{"method": "mtp"}'`` for DeepSeek-V4
    (vLLM 0.25.0 models/deepseek_v4/nvidia/mtp.py, DeepSeekV4MultiTokenPredictor / DeepSeekV4MultiTokenPredictorLayer;
    the checkpoint's ``mtp.{j}.*``, renamed to ``model.layers.{num_hidden_layers + j}``):
    - ``mtp_block``: a DeepseekV4DecoderLayer at layer index num_hidden_layers + j. Its attention takes compress ratio
      1 for any layer index past num_hidden_layers (models/deepseek_v4/attention.py: "MTP layer is not included in
      the compress ratio list"): no compressor, no indexer, only the sliding-window cache; so it is built as the
      target's sliding_attention layer (MoE routed by its gate: its index is past num_hash_layers).
    - per layer: ``enorm`` and ``hnorm`` (RMSNorm h), ``e_proj`` and ``h_proj`` (ReplicatedLinear h -> h with the
      model's quant_config: FP8 block like the attention linears; V3's one 2h -> h eh_proj is 16-bit), the hc head
      mixer ``hc_head_fn`` [hc, hc x h] + ``hc_head_base`` [hc] + ``hc_head_scale`` [1] (as the target's hc_head),
      and ``shared_head.norm`` (RMSNorm h).
    - embed_tokens and shared_head.head are built and then replaced by the target's (v1/spec_decode/
      llm_base_proposer.py _maybe_share_embeddings at PP 1, _maybe_share_lm_head: MTP always shares), so none is
      added (mtp_rank_bytes adds embed_tokens under PP as for V3).
    Not in transformers' model: ``count_params.mtp_params``.
    Worked number (DeepSeek-V4-Flash, h 4096, hc 4): mtp_other 3 x 4,096 (norms) + 2 x 4,096 x 4,096 (e_proj,
    h_proj) + 4 x 16,384 + 4 + 1 (hc head) = 33,632,261 parameters beside the one sliding-attention MoE layer."""
    n = r.int("num_nextn_predict_layers", 0, minimum=0)
    if not n:
        return {}
    other = (rms("enorm", h), rms("hnorm", h),
             Linear(name="e_proj", in_features=h, out_features=h, shard="replicated"),
             Linear(name="h_proj", in_features=h, out_features=h, shard="replicated"),
             Tensor(name="hc_head_fn+hc_head_base+hc_head_scale", numel=hc * hc * h + hc + 1),
             rms("shared_head.norm", h))
    return {"mtp_layers": (sliding,) * n, "mtp_other": other * n}


# The modules a quantization_config names, below ``model.layers.{i}``: vLLM's own module names (its
# compressed-tensors / fp8 matching reads those: ``find_matched_target`` tries the layer's prefix, then each shard of
# ``packed_modules_mapping``), first the fused module, then its shards as the checkpoint names them (DeepSeek's own
# ``layers.{i}.attn.wq_a`` ... ``ffn.shared_experts.w1``). vLLM models/deepseek_v4/attention.py (0.25.0 - 0.32.0
# wheels, read 2026-12-01): ``attn.fused_wqa_wkv`` (MergedColumnParallelLinear [wq_a, wkv]), ``attn.wq_b``,
# ``attn.wo_a``, ``attn.wo_b``, ``attn.indexer.wq_b`` (all with the quant_config), ``attn.indexer.weights_proj``
# (quant_config None); compressor.py ``{attn, attn.indexer}.compressor.fused_wkv_wgate`` [wkv, wgate]
# (quant_config None); nvidia/model.py ``ffn.gate``, ``ffn.shared_experts.gate_up_proj`` [w1, w3] and
# ``.down_proj``, ``ffn.experts`` (FusedMoE, matched as ``ffn.experts.0.gate_proj`` / ``up_proj`` / ``down_proj``:
# the generic expert paths). packed_modules_mapping (0.32.0 nvidia/model.py): gate_up_proj [w1, w3], fused_wqa_wkv
# [wq_a, wkv], fused_wkv_wgate [wkv, wgate]. kvplan's names are transformers 5.23's (conversion_mapping.py
# "deepseek_v4" renames the checkpoint's), kept for the parameter oracle. Not modelled: vLLM requires all shards of
# a fused module to agree (a list naming wq_a but not wkv is refused there; kvplan prices each shard as named).
VLLM_MODULE_NAMES = {
    ("attention", "q_a_proj"): ("attn.fused_wqa_wkv", "attn.wq_a"),
    ("attention", "kv_proj"): ("attn.fused_wqa_wkv", "attn.wkv"),
    ("attention", "q_b_proj"): ("attn.wq_b",),
    ("attention", "o_a_proj"): ("attn.wo_a",),
    ("attention", "o_b_proj"): ("attn.wo_b",),
    ("attention", "sinks"): ("attn.attn_sink",),
    ("attention", "compressor.kv_proj"): ("attn.compressor.fused_wkv_wgate", "attn.compressor.wkv"),
    ("attention", "compressor.gate_proj"): ("attn.compressor.fused_wkv_wgate", "attn.compressor.wgate"),
    ("attention", "compressor.indexer.kv_proj"): ("attn.indexer.compressor.fused_wkv_wgate",
                                                  "attn.indexer.compressor.wkv"),
    ("attention", "compressor.indexer.gate_proj"): ("attn.indexer.compressor.fused_wkv_wgate",
                                                    "attn.indexer.compressor.wgate"),
    ("attention", "compressor.indexer.q_b_proj"): ("attn.indexer.wq_b",),
    ("attention", "compressor.indexer.scorer.weights_proj"): ("attn.indexer.weights_proj",),
    ("mlp", "shared_experts.gate_proj"): ("ffn.shared_experts.gate_up_proj", "ffn.shared_experts.w1"),
    ("mlp", "shared_experts.up_proj"): ("ffn.shared_experts.gate_up_proj", "ffn.shared_experts.w3"),
    ("mlp", "shared_experts.down_proj"): ("ffn.shared_experts.down_proj", "ffn.shared_experts.w2"),
    ("router", "router"): ("ffn.gate",),
}

# The model's note, in three parts: a plan carries only its engine's part (v4_plan_note); the model page all three.
V4_VLLM_PART = ("DeepSeek-V4 on vLLM: the block plan follows vLLM's own DSV4 layout (per-layer SWA, compressed-KV, "
                "indexer and compressor-state specs, its grouping and packed pool), exact for 0.20 - 0.33 "
                "(0.31 - 0.33 keep the 0.29 - 0.30 layout for DeepseekV4ForCausalLM).")
V4_SGLANG_PART = ("DeepSeek-V4 on SGLang: the plan follows SGLang's own DSV4 pools (DSV4PoolConfigurator's bytes per "
                  "full token), exact for SGLang 0.5.14 - 0.5.23 (0.5.21 - 0.5.23 price the padded pages; refused "
                  "before 0.5.14).")
V4_CONVENTION_PART = ("The vllm-convention per-sequence KV bytes (sliding window, 584 B fp8 entries, 132 B indexer "
                      "keys, fp32 compressor state) leave out block rounding and 576 B page alignment (an "
                      "approximation). Parameters and the transformers convention are exact.")
VLLM_V4_NOTE = f"{V4_VLLM_PART} {V4_SGLANG_PART} {V4_CONVENTION_PART}"


def v4_plan_note(engine: str) -> str:
    """The DeepSeek-V4 note a plan on ``engine`` carries: its engine's part only ("sglang": the SGLang pools; "vllm":
    vLLM's layout and the convention caveat; "custom": the whole note, as the model page shows it)."""
    if engine == "sglang":
        return V4_SGLANG_PART
    if engine == "vllm":
        return f"{V4_VLLM_PART} {V4_CONVENTION_PART}"
    return VLLM_V4_NOTE


# DeepSeek-V4.1 (DeepseekV41ForCausalLM; DeepSeek-V4.1-Flash / -Pro, 2026): planned by families/deepseek_v41.py, never as V4. What
# differs from V4, read 2026-12-02 from the config (tests/fixtures/configs/deepseek-v4.1-flash.json) and the wheels:
# - config: the decoder under text_config (model_type "deepseek_v41_text") beside a 32-layer vision_config;
#   compress_ratios 0 / 1 / 2 (V4: 0 / 4 / 128; V4.1-Flash 2 sliding, 18 ratio-2, 20 ratio-1 layers, then 3 MTP
#   entries); kv_source_layer_ids (the only layers that own a compressed KV cache and compressor, each shared by the
#   compressed layers after it: vLLM models/deepseek_v41/attention.py kv_source_layer_id = max source <= layer),
#   index_source_layer_ids (the only layers with an indexer), candidate_source_layer_id / candidate_block_size,
#   engram_layer_ids with engram tables of engram_num_embeddings rows (384,006,168 and 384,016,682 on V4.1-Flash).
# - vLLM (DeepseekV41ForCausalLM registered from 0.30.0; 0.29.0's registry has none; 0.30.0 / 0.31.0 wheels read):
#   the sliding-window cache of every layer in 32-token blocks (DeepseekV4SWACache block_size=32; V4 64), a record
#   of 584 B in 576-B pages, or on SM 10.x the V4.1 MXFP8 record of 528 B in 512-B pages (_use_v41_mxfp8_kv_record);
#   the compressed KV an MLAAttentionSpec(tokens_per_state = ratio) on kv-source layers only, 288 B an entry with
#   --kv-cache-dtype nvfp4_ds_mla (SM 10.x only); indexer keys 132 B (fp8) or 68 B (MXFP4) on index-source layers,
#   with a block-stride alignment of lcm(512, page alignment) under sparse logits.
# - SGLang (deepseek_v41 served by DeepseekV4ForCausalLM; 0.5.21 / 0.5.23 wheels read): no 0.1 default for
#   --swa-full-tokens-ratio (model_overrides/deepseek_v4.py skips deepseek_v41), so DSV4PoolConfigurator sizes the
#   sliding-window pool by the request cap ("DSV4 SWA sizing: mode=cap", pool_configurator.py
#   compute_swa_request_cap + _resolve_swa_cap_tokens; kvplan.sglang_dsv4.swa_request_cap_tokens):
#   ceil_to_page(running / dp x (W + SGLANG_SWA_EVICTION_INTERVAL (128) x max(draft tokens, 1) + page + decode
#   allocation: a page, or 2 x max(steps, draft tokens) when drafting) + 2 x --chunked-prefill-size (1 x with
#   --disable-overlap-schedule) + page + prefix_tails x (W + page)), prefix_tails
#   = --swa-prefix-tails or 4 x running (0 with --disable-radix-cache), taken as fixed bytes; ratio-1 / 2 pools
#   priced per token plus a reserved page and DSV41_INDEX_PAGE_SIZE indexer pages, a fixed c2 compressor state; the
#   flashmla_mega attention backend by default on SM 10.x with fp8_e4m3.
# Every one of these changes the pool kvplan would size, so a V4.1 config is never read as V4: model_type
# deepseek_v41 / deepseek_v41_text is built by families/deepseek_v41.py; a V4.1 decoder labelled deepseek_v4 (its
# architectures entry, or one of V4.1's own fields, gives it away) is refused here.
DSV41_MODEL_TYPES = ("deepseek_v41", "deepseek_v41_text")
DSV41_ARCHITECTURE = "DeepseekV41ForCausalLM"
DSV41_FIELDS = ("kv_source_layer_ids", "index_source_layer_ids", "engram_layer_ids", "candidate_source_layer_id")
DSV41_REFUSAL = (
    "this is DeepSeek-V4.1 ({found}) labelled model_type 'deepseek_v4', and kvplan refuses to plan it as "
    "DeepSeek-V4: its KV cache differs from V4's in every pool (compress_ratios 1 / 2, V4: 4 / 128; a compressed KV "
    "cache only on kv_source_layer_ids, shared by the layers after each source; indexer keys only on "
    "index_source_layer_ids; Engram n-gram tables). Give it model_type 'deepseek_v41_text' (or the release's "
    "config.json, model_type 'deepseek_v41'), which kvplan plans as DeepSeek-V4.1.")


def deepseek_v41_refusal(outer, inner) -> str | None:
    """The refusal of a DeepSeek-V4.1 decoder labelled as V4 (None: not one). ``outer``: config.json as given;
    ``inner``: its decoder (``text_config`` where it wraps one, else ``outer``). Only a decoder whose model_type is
    ``deepseek_v4`` is checked (V4.1's own model types go to families/deepseek_v41.py): it is V4.1 by its
    architectures ``DeepseekV41ForCausalLM`` (outer or inner), or failing that one of V4.1's own fields
    (DSV41_FIELDS). Worked example: the DeepSeek-V4-Flash config.json with kv_source_layer_ids added -> the message
    with "field kv_source_layer_ids"; the DeepSeek-V4-Flash one itself, or V4.1's own config.json -> None."""
    if inner.get("model_type") != "deepseek_v4":
        return None
    found = []
    for cfg in (outer, inner):
        archs = cfg.get("architectures")
        if isinstance(archs, list) and DSV41_ARCHITECTURE in archs and not found:
            found.append(f"architectures {DSV41_ARCHITECTURE}")
    if not found:
        found += [f"field {key}" for key in DSV41_FIELDS if inner.get(key) not in (None, [], {})][:1]
    return DSV41_REFUSAL.format(found=", ".join(found)) if found else None


MODEL_TYPES = {
    "deepseek_v4": build_deepseek_v4,
}
