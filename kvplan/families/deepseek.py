"""DeepSeek-V2 / V3 and the families that are a diff from it: multi-head latent attention (or GQA),
dense first layers, shared + routed experts.

- deepseek_v2 / deepseek_v3 (and kimi_k2, which is DeepSeek-V3: see hf_config.ARCHITECTURE_ALIASES)
- deepseek_v32 (DeepSeek-V3.2): V3 + a lightning indexer per layer (DSA, ``MLAIndexerAttention``)
- glm_moe_dsa (GLM-5): V3.2 whose "shared" layers reuse an earlier layer's top-k (no indexer there)
- glm4_moe_lite (GLM-4.7-Flash): V3 MLA with ``mlp_layer_types`` (one dense layer by default)
- glm4_moe (GLM-4.5 / 4.6 / 4.7): V3's MoE with GQA attention (``Glm4MoeAttention``, optional q/k norm)
- dots1 (dots.llm1): V3's MoE with Qwen3 attention (q/k norm, sliding layers past max_window_layers)
- minicpm3: V3's MLA with a dense MLP in every layer, tied embeddings by default

Shapes from transformers 5.23 ``modeling_<family>.py`` (``DeepseekV3Attention``, ``AXK1Attention``,
``DeepseekV32Indexer``, ``GlmMoeDsaAttention``, ``Glm4MoeAttention``, ``Qwen3Attention``,
``DeepseekV3MoE``).
"""

from typing import Any

from kvplan.errors import ConfigError
from kvplan.families.blocks import (
    attention_cache, attention_linears, core_dims, experts_block, gated_mlp, layernorm, llama_tail, moe_layer, rms,
    sliding_window,
)
from kvplan.layers import MLAAttention, MLAIndexerAttention
from kvplan.spec import Component, DecoderLayer, Linear
from kvplan.units import counted

DSA_TYPES = ("deepseek_v32", "glm_moe_dsa")
MLA_TYPES = ("deepseek_v2", "deepseek_v3", "glm4_moe_lite", "minicpm3") + DSA_TYPES


def mla_attention(r, h: int, nq: int, *, q_lora_required: bool = False) -> tuple[tuple[Component, ...], dict]:
    """MLA projections (``DeepseekV3Attention``) and the latent's dimensions.

    q: q_proj [nq x (nope + rope), h], or with q_lora_rank: q_a_proj [q_lora, h] (+ bias),
    q_a_layernorm, q_b_proj [nq x (nope + rope), q_lora]; kv_a_proj_with_mqa [kv_lora + rope, h]
    (+ bias), kv_a_layernorm [kv_lora], kv_b_proj [nq x (nope + v), kv_lora]; o_proj [h, nq x v] (+ bias).
    """
    lora_q = r.int("q_lora_rank") if r.has("q_lora_rank") or q_lora_required else None
    lora_kv, rope, nope = (r.int(k) for k in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim"))
    vhd = r.int("v_head_dim", h // nq, why="hidden_size // num_attention_heads") if not r.has("v_head_dim") else \
        r.int("v_head_dim")
    bias = r.bool("attention_bias", False)
    qk = nope + rope
    if lora_q is None:
        attn: tuple[Component, ...] = (Linear(name="q_proj", in_features=h, out_features=nq * qk),)
    else:
        attn = (Linear(name="q_a_proj", in_features=h, out_features=lora_q, bias=bias, shard="replicated"),
                rms("q_a_layernorm", lora_q),
                Linear(name="q_b_proj", in_features=lora_q, out_features=nq * qk))
    attn += (
        Linear(name="kv_a_proj_with_mqa", in_features=h, out_features=lora_kv + rope, bias=bias, shard="replicated"),
        rms("kv_a_layernorm", lora_kv),
        Linear(name="kv_b_proj", in_features=lora_kv, out_features=nq * (nope + vhd)),
        Linear(name="o_proj", in_features=nq * vhd, out_features=h, bias=bias, shard="row"),
    )
    dims = dict(kv_lora_rank=lora_kv, qk_rope_head_dim=rope, qk_nope_head_dim=nope, v_head_dim=vhd,
                num_attention_heads=nq)
    return attn, dims | {"q_lora_rank": lora_q}


def indexer_linears(r, h: int, q_lora: int) -> tuple[Component, ...]:
    """The DSA lightning indexer (``DeepseekV32Indexer``): wq_b [n_I x d_I, q_lora], wk [d_I, h],
    k_norm LayerNorm(d_I) with bias, weights_proj [n_I, h]; replicated on every TP rank (vLLM
    ``ReplicatedLinear`` / ``disable_tp``). DeepSeek-V3.2: 64 x 128 x 1536 + 128 x 7168 + 256 + 64 x 7168
    = 13,566,208 per layer."""
    n_i, d_i = r.int("index_n_heads"), r.int("index_head_dim")
    return (
        Linear(name="indexer.wq_b", in_features=q_lora, out_features=n_i * d_i, shard="replicated"),
        Linear(name="indexer.wk", in_features=h, out_features=d_i, shard="replicated"),
        layernorm("indexer.k_norm", d_i),
        Linear(name="indexer.weights_proj", in_features=h, out_features=n_i, shard="replicated", quantizable=False),
    )


def indexer_types(r, n_layers: int) -> list[str]:
    """GLM-5's per-layer indexer mode: "full" runs the indexer, "shared" reuses the last full layer's
    top-k. ``indexer_types`` when given; else ``index_topk_pattern`` ("F"/"S" per layer); else
    ``index_topk_freq`` (1) and ``index_skip_topk_offset`` (2): layer i is full when
    max(i - offset + 1, 0) % freq == 0 (GlmMoeDsaConfig.__post_init__). Defaults: every layer full."""
    given = r.raw("indexer_types")
    if given is None and r.has("index_topk_pattern"):
        pattern = r.raw("index_topk_pattern")
        if isinstance(pattern, str):
            if set(pattern) - {"F", "S"}:
                raise ConfigError(r._name("index_topk_pattern"), "must be a string of F (full) and S (shared)")
            given = ["full" if c == "F" else "shared" for c in pattern]
        else:
            given = pattern
        field = "index_topk_pattern"
    else:
        field = "indexer_types"
    if given is None:
        freq = max(r.int("index_topk_freq", 1, why="GlmMoeDsaConfig default: every layer runs its indexer"), 1)
        offset = r.int("index_skip_topk_offset", 2, minimum=0, why="GlmMoeDsaConfig default")
        return ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in range(n_layers)]
    if not isinstance(given, list) or any(v not in ("full", "shared") for v in given):
        raise ConfigError(r._name(field), "must list 'full' or 'shared' for each layer")
    if len(given) != n_layers:
        raise ConfigError(r._name(field), f"has {len(given)} entries but num_hidden_layers is {n_layers}")
    if given and given[0] == "shared":
        raise ConfigError(r._name(field), "layer 0 is 'shared' but no earlier layer runs an indexer to share")
    return given


def mlp_layer_types(r, model_type: str, n_layers: int) -> list[bool]:
    """Which layers are MoE: ``mlp_layer_types`` ("dense"/"sparse") when given; else each family's rule.

    deepseek_v2 / v3 / v32, glm4_moe, dots1: i >= first_k_dense_replace (default V2 0, V3 / V3.2 3,
    glm4_moe 1, dots1 0); glm4_moe_lite: layer 0 dense
    (Glm4MoeLiteConfig ignores first_k_dense_replace); minicpm3: no MoE.
    """
    if model_type == "minicpm3":
        return [False] * n_layers
    given = r.str_list("mlp_layer_types") if model_type in ("glm4_moe_lite",) + DSA_TYPES else None
    if given is not None:
        if len(given) != n_layers or set(given) - {"dense", "sparse"}:
            raise ConfigError(r._name("mlp_layer_types"),
                              f"must list 'dense' or 'sparse' for each of {n_layers} layers")
        return [t == "sparse" for t in given]
    if model_type == "glm4_moe_lite":
        return [i >= 1 for i in range(n_layers)]
    default = {"glm4_moe": 1, "dots1": 0, "deepseek_v2": 0}.get(model_type, 3)
    first_dense = r.int("first_k_dense_replace", default, minimum=0)
    # moe_layer_freq (in DeepSeek's own configs, always 1) is read by no transformers 5.23 model.
    return [i >= first_dense for i in range(n_layers)]


def build_deepseek(r, model_type: str) -> dict[str, Any]:
    """Every family of this module: attention by family, then DeepSeek-V3's dense / MoE layers."""
    h, n_layers, nq, nkv, hd = _core(r, model_type)
    vocab = r.int("vocab_size")
    norms = (rms("input_layernorm", h), rms("post_attention_layernorm", h))
    if model_type in MLA_TYPES:
        attn, dims = mla_attention(r, h, nq, q_lora_required=model_type in DSA_TYPES)
        q_lora = dims.pop("q_lora_rank")
        hd = dims["qk_nope_head_dim"] + dims["qk_rope_head_dim"]
        nkv = nq
        if model_type in DSA_TYPES:
            modes = indexer_types(r, n_layers) if model_type == "glm_moe_dsa" else ["full"] * n_layers
            d_i = r.int("index_head_dim")
            topk = r.int("index_topk")  # sizes vLLM's top-k index buffer (kvplan.vllm_layouts), not the KV cache
            with_idx = attn + indexer_linears(r, h, q_lora)
            per_mode = {"full": (MLAIndexerAttention(**dims, index_head_dim=d_i, index_topk=topk), with_idx),
                        "shared": (MLAIndexerAttention(**dims, index_topk=topk), attn)}
            attn_of = [per_mode[m] for m in modes]
        else:
            attn_of = [(MLAAttention(**dims), attn)] * n_layers
    else:  # GQA attention: glm4_moe (Glm4MoeAttention), dots1 (Qwen3Attention)
        bias = r.bool("attention_bias", False)
        attn = attention_linears(h, nq, nkv, hd, qkv_bias=bias, o_bias=bias and model_type == "dots1")
        if model_type == "dots1" or r.bool("use_qk_norm", False):
            attn += (rms("q_norm", hd), rms("k_norm", hd))
        kinds = ["full_attention"] * n_layers
        window = None
        if model_type == "dots1":
            window = sliding_window(r)
            mwl = r.int("max_window_layers", n_layers, minimum=0) if window else n_layers
            kinds = r.str_list("layer_types") or ["sliding_attention" if window and i >= mwl else "full_attention"
                                                  for i in range(n_layers)]
        made_attn = {k: (attention_cache(k, nkv, hd, window, None), attn) for k in set(kinds)}
        attn_of = [made_attn[k] for k in kinds]

    moe_at = mlp_layer_types(r, model_type, n_layers)
    if any(moe_at):
        inter_e = r.int("moe_intermediate_size")
        experts = experts_block(r, h, inter_e, "n_routed_experts", "num_experts_per_tok")
        shared = r.int("n_shared_experts", 0, minimum=0)
        shared_mlp = gated_mlp(h, inter_e * shared, prefix="shared_experts.") if shared else ()
    dense_mlp = gated_mlp(h, r.int("intermediate_size"), bias=r.bool("mlp_bias", False)) if not all(moe_at) else ()
    made: dict = {}  # identical layers are one object
    layers = []
    for i in range(n_layers):
        cache, layer_attn = attn_of[i]
        key = (id(cache), moe_at[i])
        if key not in made:
            if moe_at[i]:
                made[key] = moe_layer(cache, layer_attn, norms, h, experts, shared_mlp)
            else:
                made[key] = DecoderLayer(cache=cache, attention=layer_attn, mlp=dense_mlp, norms=norms)
        layers.append(made[key])
    skipped = ()
    nextn = r.raw("num_nextn_predict_layers")
    if nextn and model_type != "minicpm3":
        skipped = (f"{counted(nextn, 'multi-token-prediction layer')} (loaded only for speculative decoding)",)
    if any(moe_at) and model_type != "deepseek_v2":
        r.assumptions.append("router e_score_correction_bias (fp32, n_routed_experts per MoE layer) is a buffer, "
                             "not counted")
    fields = llama_tail(r, h=h, n_layers=n_layers, nq=nq, nkv=nkv, hd=hd, vocab=vocab, layers=layers,
                        tie_default=model_type == "minicpm3")
    fields["skipped"] = skipped
    if skipped:
        mtp_base = layers[-1]
        if model_type == "glm_moe_dsa" and modes[-1] == "shared":  # the MTP layer runs its own indexer
            cache, layer_attn = per_mode["full"]
            mtp_base = made.get((id(cache), moe_at[-1])) or (
                moe_layer(cache, layer_attn, norms, h, experts, shared_mlp) if moe_at[-1]
                else DecoderLayer(cache=cache, attention=layer_attn, mlp=dense_mlp, norms=norms))
        fields.update(mtp_fields(r, h, mtp_base))
    return fields


def mtp_fields(r, h: int, last_layer: DecoderLayer) -> dict[str, Any]:
    """The multi-token-prediction layers vLLM loads with ``--speculative-config '{"method": "mtp"}'``
    (vllm/model_executor/models/deepseek_mtp.py, glm4_moe_mtp.py): per layer an ``mtp_block`` (the decoder
    layer at index num_hidden_layers: MoE past first_k_dense_replace, so built as the last layer), ``enorm``
    and ``hnorm`` (RMSNorm h), ``eh_proj`` (nn.Linear 2h -> h, no bias: whole on every rank, 16-bit) and
    ``shared_head.norm``; the draft's embed_tokens and shared_head.head are the target's
    (llm_base_proposer._maybe_share_embeddings / _maybe_share_lm_head: MTP always shares them).
    Not in transformers' model (it drops ``model.layers.{num_hidden_layers}.*``): ``count_params.mtp_params``.
    A GLM-5.2-style config whose last layer is "shared" (no indexer of its own) still gets an MTP layer with one:
    vLLM builds an indexer on every layer_id >= num_hidden_layers whatever the skip pattern says ("MTP/nextn
    layers ... always build a full indexer", models/deepseek_v2.py DeepseekV2MLAAttention, read in the 0.29.0
    wheel), and the caller passes such a layer as ``last_layer``.
    Worked number: DeepSeek-V3: one MoE layer 11,507,286,016 + enorm, hnorm, shared_head.norm 3 x 7,168 +
    eh_proj 14,336 x 7,168 = 102,760,448: 11,610,067,968 (with the checkpoint's two 129,280 x 7,168 copies of
    embed / head and the fp8 block scales, the 684.5 B parameters Hugging Face lists for the repository).
    GLM-5.2: a full-indexer MoE layer 9,877,404,416 + 3 x 6,144 + 12,288 x 6,144 = 9,952,920,320 (9,943,548,416
    when it was built as the shared last layer, without the indexer's 9,371,904)."""
    n = r.int("num_nextn_predict_layers", 0, minimum=0)
    if not n:
        return {}
    other = (rms("enorm", h), rms("hnorm", h),
             Linear(name="eh_proj", in_features=2 * h, out_features=h, shard="replicated", quantizable=False),
             rms("shared_head.norm", h))
    return {"mtp_layers": (last_layer,) * n, "mtp_other": other * n if n > 1 else other}


def _core(r, model_type: str) -> tuple[int, int, int, int, int]:
    """(h, layers, heads, kv heads, head_dim). MLA reads no head_dim (its widths are the latent's);
    Glm4MoeAttention takes ``getattr(config, "head_dim", hidden_size // num_attention_heads)``, a
    floor division (the class default 4096 // 96 = 42)."""
    if model_type not in MLA_TYPES and (r.has("head_dim") or model_type != "glm4_moe"):
        return core_dims(r)
    h, n_layers, nq = r.int("hidden_size"), r.int("num_hidden_layers"), r.int("num_attention_heads")
    nkv = r.int("num_key_value_heads", nq, why="= num_attention_heads") if model_type == "glm4_moe" else nq
    r.fail_if_missing()
    if model_type != "glm4_moe":
        return h, n_layers, nq, nq, 0
    if nkv > nq or nq % nkv:
        raise ConfigError(r._name("num_key_value_heads"), f"{nkv} must divide num_attention_heads ({nq})")
    hd = r.int("head_dim", h // nq,
               why=f"hidden_size // num_attention_heads = {h} // {nq}, floored as Glm4MoeAttention does")
    return h, n_layers, nq, nkv, hd


MODEL_TYPES = {
    "deepseek_v2": build_deepseek,
    "deepseek_v3": build_deepseek,
    "deepseek_v32": build_deepseek,
    "glm_moe_dsa": build_deepseek,
    "glm4_moe_lite": build_deepseek,
    "glm4_moe": build_deepseek,
    "dots1": build_deepseek,
    "minicpm3": build_deepseek,
}
