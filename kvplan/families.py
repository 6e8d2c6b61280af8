"""Per-family layouts: which weights each decoder layer has and what it caches.

Each builder reads a config through ``hf_config.Reader`` and returns the ModelSpec fields. The
shapes follow the transformers 5.x modeling files (``modeling_<family>.py``), which is the oracle
the tests check every preset against, parameter for parameter.
"""

from typing import Any

from kvplan.errors import ConfigError
from kvplan.layers import (
    ChunkedLocalAttention,
    FullAttention,
    LinearAttentionState,
    MambaState,
    MLAAttention,
    NoCache,
    SlidingWindowAttention,
)
from kvplan.spec import Component, DecoderLayer, Experts, Linear, Norm, Tensor

LAYER_TYPES = ("full_attention", "sliding_attention", "chunked_attention", "linear_attention")


# ----------------------------------------------------------------------------- building blocks


def rms(name: str, dim: int) -> Norm:
    return Norm(name=name, dim=dim)


def layernorm(name: str, dim: int, bias: bool = True) -> Norm:
    return Norm(name=name, dim=dim, bias=bias)


def attention_linears(h: int, nq: int, nkv: int, hd: int, *, qkv_bias=False, o_bias=False) -> tuple[Linear, ...]:
    """q/k/v/o projections: q [nq*hd, h], k and v [nkv*hd, h], o [h, nq*hd]."""
    return (
        Linear(name="q_proj", in_features=h, out_features=nq * hd, bias=qkv_bias),
        Linear(name="k_proj", in_features=h, out_features=nkv * hd, bias=qkv_bias),
        Linear(name="v_proj", in_features=h, out_features=nkv * hd, bias=qkv_bias),
        Linear(name="o_proj", in_features=nq * hd, out_features=h, bias=o_bias, shard="row"),
    )


def gated_mlp(h: int, inter: int, *, bias=False, count=1, prefix="") -> tuple[Linear, ...]:
    """SwiGLU / GeGLU: gate and up [inter, h], down [h, inter]."""
    return (
        Linear(name=f"{prefix}gate_proj", in_features=h, out_features=inter, bias=bias, count=count),
        Linear(name=f"{prefix}up_proj", in_features=h, out_features=inter, bias=bias, count=count),
        Linear(name=f"{prefix}down_proj", in_features=inter, out_features=h, bias=bias, count=count, shard="row"),
    )


def plain_mlp(h: int, inter: int, *, bias=True, names=("fc1", "fc2")) -> tuple[Linear, ...]:
    """GELU MLP: up [inter, h], down [h, inter]."""
    return (
        Linear(name=names[0], in_features=h, out_features=inter, bias=bias),
        Linear(name=names[1], in_features=inter, out_features=h, bias=bias, shard="row"),
    )


def embed(vocab: int, h: int, name: str = "embed_tokens") -> Linear:
    # An embedding is a [vocab, h] table; stored as a Linear so quantization/TP treat it uniformly.
    return Linear(name=name, in_features=h, out_features=vocab, shard="vocab", quantizable=False)


def lm_head(r, vocab: int, h: int, *, tie_default: bool, bias: bool = False) -> tuple[tuple[Component, ...], bool]:
    tied = r.bool("tie_word_embeddings", tie_default)
    if tied:
        return (), True
    return (Linear(name="lm_head", in_features=h, out_features=vocab, bias=bias, shard="vocab", quantizable=False),), False


def experts_block(r, h: int, inter: int, n_key: str, k_key: str, *, bias=False) -> Experts:
    # transformers 5 renames the expert count to num_local_experts when it saves a config.
    n = r.int(n_key) if r.has(n_key) or not r.has("num_local_experts") else r.int("num_local_experts")
    k = r.int(k_key, n, why="absent: every expert counted as active")
    if k > n and not r.missing:
        raise ConfigError(r._name(k_key), f"{k} experts per token but only {n} experts")
    linears = tuple(
        lin.model_copy(update={"shard": "expert"}) for lin in gated_mlp(h, inter, bias=bias)
    )
    return Experts(num_experts=n, num_experts_per_tok=k, linears=linears)


def router(h: int, n: int, bias: bool = False) -> tuple[Component, ...]:
    return (Linear(name="router", in_features=h, out_features=n, bias=bias, shard="replicated", quantizable=False),)


def layer_types(r, n_layers: int, default: list[str]) -> list[str]:
    """``layer_types`` from the config, validated; else the family's derived default."""
    given = r.str_list("layer_types")
    if given is None:
        return default
    if len(given) != n_layers:
        raise ConfigError(r._name("layer_types"), f"has {len(given)} entries but num_hidden_layers is {n_layers}")
    bad = sorted(set(given) - set(LAYER_TYPES))
    if bad:
        raise ConfigError(r._name("layer_types"), f"unknown layer type(s) {bad}; allowed: {list(LAYER_TYPES)}")
    return given


def attention_cache(kind: str, nkv: int, hd: int, window: int | None, chunk: int | None, vhd: int | None = None):
    vhd = vhd or hd
    if kind == "sliding_attention":
        return SlidingWindowAttention(num_key_value_heads=nkv, head_dim=hd, v_head_dim=vhd, sliding_window=window)
    if kind == "chunked_attention":
        return ChunkedLocalAttention(num_key_value_heads=nkv, head_dim=hd, v_head_dim=vhd, attention_chunk_size=chunk)
    return FullAttention(num_key_value_heads=nkv, head_dim=hd, v_head_dim=vhd)


def core_dims(r, *, hidden="hidden_size", layers="num_hidden_layers", heads="num_attention_heads",
              kv="num_key_value_heads", kv_default: int | None = None) -> tuple[int, int, int, int, int]:
    """(h, n_layers, n_heads, n_kv_heads, head_dim) with transformers' derivations recorded."""
    h = r.int(hidden)
    n_layers = r.int(layers)
    nq = r.int(heads)
    nkv = r.int(kv, kv_default if kv_default is not None else nq, why=f"= {heads}, i.e. multi-head attention")
    if r.missing:
        r.fail_if_missing()
    if r.has("head_dim"):
        hd = r.int("head_dim")
    else:
        if h % nq:
            raise ConfigError(r._name("head_dim"), f"absent, and hidden_size {h} is not divisible by {heads} {nq}")
        hd = r.int("head_dim", h // nq, why=f"{hidden} // {heads} = {h} // {nq}")
    if nkv > nq or nq % nkv:
        raise ConfigError(r._name(kv), f"{nkv} must divide {heads} ({nq})")
    return h, n_layers, nq, nkv, hd


def spec_fields(r, *, h, n_layers, nq, nkv, hd, vocab, embeddings, layers, final_norm, head, tied,
                max_pos_key="max_position_embeddings") -> dict[str, Any]:
    max_pos = r.int(max_pos_key, 0, minimum=0) if r.has(max_pos_key) else None
    return dict(
        vocab_size=vocab, hidden_size=h, num_hidden_layers=n_layers, num_attention_heads=nq,
        num_key_value_heads=nkv, head_dim=hd, max_position_embeddings=max_pos or None,
        tie_word_embeddings=tied, embeddings=tuple(embeddings), layers=tuple(layers),
        final_norm=tuple(final_norm), lm_head=tuple(head),
    )


# ----------------------------------------------------------------------------- llama-style


def _window(r) -> int | None:
    """The sliding window, or None; some configs (Qwen2-MoE) write 0 for "no window"."""
    return (r.int("sliding_window", minimum=0) or None) if r.has("sliding_window") else None


def build_llama_like(r, model_type: str) -> dict[str, Any]:
    """llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, gemma*, phi3 and the generic decoder."""
    h, n_layers, nq, nkv, hd = core_dims(r)
    vocab = r.int("vocab_size")
    gemma = model_type.startswith("gemma")
    qwen = model_type.startswith("qwen")

    # Which layers slide: layer_types when given, else each family's own rule.
    window = _window(r)
    if qwen:
        use = r.bool("use_sliding_window", False)
        window = window if use else None
        mwl = r.int("max_window_layers", n_layers) if window else n_layers
        if model_type == "qwen2_moe":  # Qwen2MoeConfig: even layers below max_window_layers slide
            default = ["sliding_attention" if window and (i + 1) % 2 and i < mwl else "full_attention"
                       for i in range(n_layers)]
        else:
            default = ["sliding_attention" if window and i >= mwl else "full_attention" for i in range(n_layers)]
    elif model_type == "gemma2":
        default = ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(n_layers)]
    elif model_type in ("gemma3_text", "gemma3"):
        pattern = r.int("sliding_window_pattern", 6)
        default = ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n_layers)]
    elif model_type == "gemma":
        window, default = None, ["full_attention"] * n_layers
    else:  # mistral, mixtral, phi3, llama...: a sliding_window applies to every layer
        default = ["sliding_attention" if window else "full_attention"] * n_layers
    kinds = layer_types(r, n_layers, default)
    if "sliding_attention" in kinds and window is None:
        window = r.int("sliding_window")

    # Attention weights.
    if model_type in ("qwen2", "qwen2_moe"):
        qkv_bias = r.bool("qkv_bias", True)
        o_bias = False
    else:
        qkv_bias = o_bias = r.bool("attention_bias", False)
    attn = attention_linears(h, nq, nkv, hd, qkv_bias=qkv_bias, o_bias=o_bias)
    if model_type in ("qwen3", "qwen3_moe", "gemma3_text", "gemma3"):
        attn += (rms("q_norm", hd), rms("k_norm", hd))
    norms = (rms("input_layernorm", h), rms("post_attention_layernorm", h))
    if model_type in ("gemma2", "gemma3_text", "gemma3"):
        norms += (rms("pre_feedforward_layernorm", h), rms("post_feedforward_layernorm", h))

    # MLP or MoE per layer.
    mlp_bias = r.bool("mlp_bias", False)
    moe = model_type in ("mixtral", "qwen2_moe", "qwen3_moe")
    if moe:
        inter_e = r.int("intermediate_size") if model_type == "mixtral" else r.int("moe_intermediate_size")
        n_key = "num_local_experts" if model_type == "mixtral" else "num_experts"
        experts = experts_block(r, h, inter_e, n_key, "num_experts_per_tok")
        sparse_step = r.int("decoder_sparse_step", 1)
        mlp_only = set(r.int_list("mlp_only_layers") or [])
    is_moe_layer = [moe and i not in mlp_only and (i + 1) % sparse_step == 0 for i in range(n_layers)]
    inter = r.int("intermediate_size") if not all(is_moe_layer) else 0
    made: dict[tuple[str, bool], DecoderLayer] = {}  # identical layers are one shared object
    layers = []
    for i, kind in enumerate(kinds):
        key = (kind, is_moe_layer[i])
        if key not in made:
            cache = attention_cache(kind, nkv, hd, window, None)
            if is_moe_layer[i]:
                mlp: tuple[Component, ...] = ()
                if model_type == "qwen2_moe":
                    shared = r.int("shared_expert_intermediate_size")
                    mlp = gated_mlp(h, shared, prefix="shared_expert.") + (Linear(
                        name="shared_expert_gate", in_features=h, out_features=1, shard="replicated",
                        quantizable=False),)
                made[key] = DecoderLayer(cache=cache, attention=attn, mlp=mlp, experts=experts,
                                         router=router(h, experts.num_experts), norms=norms)
            else:
                made[key] = DecoderLayer(cache=cache, attention=attn, mlp=gated_mlp(h, inter, bias=mlp_bias),
                                         norms=norms)
        layers.append(made[key])
    head, tied = lm_head(r, vocab, h, tie_default=gemma)
    return spec_fields(r, h=h, n_layers=n_layers, nq=nq, nkv=nkv, hd=hd, vocab=vocab,
                       embeddings=[embed(vocab, h)], layers=layers, final_norm=[rms("norm", h)],
                       head=head, tied=tied)


def build_generic(r, model_type: str) -> dict[str, Any]:
    return build_llama_like(r, "generic")


# ----------------------------------------------------------------------------- gpt-style


def build_gpt2(r, model_type: str) -> dict[str, Any]:
    """gpt2 and gpt_bigcode: fused c_attn with bias, LayerNorms, learned positions, tied head."""
    h, n_layers, nq, _, hd = core_dims(r, hidden="n_embd", layers="n_layer", heads="n_head", kv="n_head")
    vocab = r.int("vocab_size")
    mq = model_type == "gpt_bigcode" and r.bool("multi_query", True)
    nkv = 1 if mq else nq
    inter = r.int("n_inner", 4 * h, why="4 x n_embd")
    n_pos = r.int("n_positions")
    attn = (
        Linear(name="c_attn", in_features=h, out_features=(nq + 2 * nkv) * hd, bias=True),
        Linear(name="c_proj", in_features=h, out_features=h, bias=True, shard="row"),
    )
    layer = DecoderLayer(cache=FullAttention(num_key_value_heads=nkv, head_dim=hd, v_head_dim=hd), attention=attn,
                         mlp=plain_mlp(h, inter, names=("c_fc", "c_proj")),
                         norms=(layernorm("ln_1", h), layernorm("ln_2", h)))
    head, tied = lm_head(r, vocab, h, tie_default=True)
    fields = spec_fields(r, h=h, n_layers=n_layers, nq=nq, nkv=nkv, hd=hd, vocab=vocab,
                         embeddings=[embed(vocab, h, "wte"), Tensor(name="wpe", numel=n_pos * h)],
                         layers=[layer] * n_layers, final_norm=[layernorm("ln_f", h)], head=head, tied=tied,
                         max_pos_key="n_positions")
    return fields


def build_gpt_neox(r, model_type: str) -> dict[str, Any]:
    h, n_layers, nq, nkv, hd = core_dims(r, kv="num_attention_heads")
    vocab = r.int("vocab_size")
    bias = r.bool("attention_bias", True)
    attn = (
        Linear(name="query_key_value", in_features=h, out_features=3 * h, bias=bias),
        Linear(name="dense", in_features=h, out_features=h, bias=bias, shard="row"),
    )
    layer = DecoderLayer(cache=FullAttention(num_key_value_heads=nq, head_dim=hd, v_head_dim=hd), attention=attn,
                         mlp=plain_mlp(h, r.int("intermediate_size"), names=("dense_h_to_4h", "dense_4h_to_h")),
                         norms=(layernorm("input_layernorm", h), layernorm("post_attention_layernorm", h)))
    head, tied = lm_head(r, vocab, h, tie_default=False)
    return spec_fields(r, h=h, n_layers=n_layers, nq=nq, nkv=nq, hd=hd, vocab=vocab,
                       embeddings=[embed(vocab, h, "embed_in")], layers=[layer] * n_layers,
                       final_norm=[layernorm("final_layer_norm", h)], head=head, tied=tied)


def build_opt(r, model_type: str) -> dict[str, Any]:
    h, n_layers, nq, nkv, hd = core_dims(r, kv="num_attention_heads")
    vocab = r.int("vocab_size")
    proj = r.int("word_embed_proj_dim", h, why="= hidden_size")
    bias = r.bool("enable_bias", True)
    affine = r.bool("layer_norm_elementwise_affine", True)
    attn = attention_linears(h, nq, nq, hd, qkv_bias=bias, o_bias=bias)
    norms: tuple[Component, ...] = (layernorm("self_attn_layer_norm", h), layernorm("final_layer_norm", h)) if affine else ()
    layer = DecoderLayer(cache=FullAttention(num_key_value_heads=nq, head_dim=hd, v_head_dim=hd), attention=attn,
                         mlp=plain_mlp(h, r.int("ffn_dim"), bias=bias), norms=norms)
    max_pos = r.int("max_position_embeddings")
    # OPT's learned positions carry an offset of 2 rows (OPTLearnedPositionalEmbedding).
    embeddings = [embed(vocab, proj), Tensor(name="embed_positions", numel=(max_pos + 2) * h)]
    other: list[Component] = []
    if proj != h:
        other = [Linear(name="project_in", in_features=proj, out_features=h, shard="replicated"),
                 Linear(name="project_out", in_features=h, out_features=proj, shard="replicated")]
    final = [layernorm("final_layer_norm", h)] if r.bool("do_layer_norm_before", True) and not r.bool("_remove_final_layer_norm", False) else []
    head, tied = lm_head(r, vocab, proj, tie_default=True)
    fields = spec_fields(r, h=h, n_layers=n_layers, nq=nq, nkv=nq, hd=hd, vocab=vocab, embeddings=embeddings,
                         layers=[layer] * n_layers, final_norm=final, head=head, tied=tied)
    fields["other"] = tuple(other)
    return fields


def build_phi(r, model_type: str) -> dict[str, Any]:
    """phi-2: parallel attention + MLP under one LayerNorm; biased projections and lm_head."""
    h, n_layers, nq, nkv, hd = core_dims(r)
    vocab = r.int("vocab_size")
    attn = attention_linears(h, nq, nkv, hd, qkv_bias=True, o_bias=True)
    attn = attn[:3] + (attn[3].model_copy(update={"name": "dense"}),)
    if r.bool("qk_layernorm", False):
        attn += (layernorm("q_layernorm", hd), layernorm("k_layernorm", hd))
    layer = DecoderLayer(cache=FullAttention(num_key_value_heads=nkv, head_dim=hd, v_head_dim=hd), attention=attn,
                         mlp=plain_mlp(h, r.int("intermediate_size")), norms=(layernorm("input_layernorm", h),))
    head, tied = lm_head(r, vocab, h, tie_default=False, bias=True)
    return spec_fields(r, h=h, n_layers=n_layers, nq=nq, nkv=nkv, hd=hd, vocab=vocab, embeddings=[embed(vocab, h)],
                       layers=[layer] * n_layers, final_norm=[layernorm("final_layernorm", h)], head=head, tied=tied)


def build_falcon(r, model_type: str) -> dict[str, Any]:
    """falcon-7b (multi_query, one LayerNorm) and falcon-40b/180b (new_decoder_architecture)."""
    h = r.int("hidden_size")
    n_layers = r.int("num_hidden_layers")
    nq = r.int("num_attention_heads")
    r.fail_if_missing()
    if h % nq:
        raise ConfigError(r._name("hidden_size"), f"{h} is not divisible by num_attention_heads ({nq})")
    hd = h // nq
    r.assumptions.append(f"head_dim = hidden_size // num_attention_heads = {hd} (falcon derives it)")
    vocab = r.int("vocab_size")
    new_arch = r.bool("new_decoder_architecture", False)
    if new_arch:
        nkv = r.int("num_kv_heads", nq)
    elif r.bool("multi_query", True):
        nkv = 1
    else:
        nkv = nq
    bias = r.bool("bias", False)
    inter = r.int("ffn_hidden_size", 4 * h, why="4 x hidden_size")
    attn = (
        Linear(name="query_key_value", in_features=h, out_features=(nq + 2 * nkv) * hd, bias=bias),
        Linear(name="dense", in_features=h, out_features=h, bias=bias, shard="row"),
    )
    if new_arch and r.int("num_ln_in_parallel_attn", 2) == 2:
        norms = (layernorm("ln_attn", h), layernorm("ln_mlp", h))
    elif not new_arch and not r.bool("parallel_attn", True):
        norms = (layernorm("input_layernorm", h), layernorm("post_attention_layernorm", h))
    else:
        norms = (layernorm("input_layernorm", h),)
    # transformers' FalconAttention caches K/V after broadcasting them to every query head.
    cache = FullAttention(num_key_value_heads=nkv, head_dim=hd, v_head_dim=hd,
                          transformers_cached_heads=nq if new_arch else None)
    layer = DecoderLayer(cache=cache, attention=attn,
                         mlp=plain_mlp(h, inter, bias=bias, names=("dense_h_to_4h", "dense_4h_to_h")), norms=norms)
    head, tied = lm_head(r, vocab, h, tie_default=True)
    return spec_fields(r, h=h, n_layers=n_layers, nq=nq, nkv=nkv, hd=hd, vocab=vocab,
                       embeddings=[embed(vocab, h, "word_embeddings")], layers=[layer] * n_layers,
                       final_norm=[layernorm("ln_f", h)], head=head, tied=tied)


# ----------------------------------------------------------------------------- MoE families


def build_deepseek(r, model_type: str) -> dict[str, Any]:
    """deepseek_v2 / deepseek_v3: MLA attention, dense first layers, shared + routed experts."""
    h, n_layers, nq, _, _ = core_dims(r)
    vocab = r.int("vocab_size")
    lora_q = r.int("q_lora_rank") if r.has("q_lora_rank") else None
    lora_kv, rope, nope, vhd = (r.int(k) for k in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"))
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
    cache = MLAAttention(kv_lora_rank=lora_kv, qk_rope_head_dim=rope, qk_nope_head_dim=nope, v_head_dim=vhd,
                         num_attention_heads=nq)
    norms = (rms("input_layernorm", h), rms("post_attention_layernorm", h))
    experts = experts_block(r, h, r.int("moe_intermediate_size"), "n_routed_experts", "num_experts_per_tok")
    shared = r.int("n_shared_experts", 0, minimum=0)
    first_dense = r.int("first_k_dense_replace", 0, minimum=0)
    freq = r.int("moe_layer_freq", 1)
    dense = DecoderLayer(cache=cache, attention=attn, mlp=gated_mlp(h, r.int("intermediate_size")), norms=norms)
    shared_mlp = gated_mlp(h, r.int("moe_intermediate_size") * shared, prefix="shared_experts.") if shared else ()
    moe = DecoderLayer(cache=cache, attention=attn, mlp=shared_mlp, experts=experts,
                       router=router(h, experts.num_experts), norms=norms)
    layers = [moe if i >= first_dense and i % freq == 0 else dense for i in range(n_layers)]
    skipped = ()
    if r.has("num_nextn_predict_layers") and r.raw("num_nextn_predict_layers"):
        skipped = (f"{r.raw('num_nextn_predict_layers')} multi-token-prediction layer(s) (loaded only for speculative decoding)",)
    if model_type == "deepseek_v3":
        r.assumptions.append("router e_score_correction_bias (fp32, n_routed_experts per MoE layer) is a buffer, not counted")
    head, tied = lm_head(r, vocab, h, tie_default=False)
    fields = spec_fields(r, h=h, n_layers=n_layers, nq=nq, nkv=nq, hd=qk, vocab=vocab, embeddings=[embed(vocab, h)],
                         layers=layers, final_norm=[rms("norm", h)], head=head, tied=tied)
    fields["skipped"] = skipped
    return fields


def build_gpt_oss(r, model_type: str) -> dict[str, Any]:
    """gpt-oss: biased attention with per-head sinks, alternating sliding/full, biased experts."""
    h, n_layers, nq, nkv, hd = core_dims(r)
    vocab = r.int("vocab_size")
    window = _window(r)
    kinds = layer_types(r, n_layers, ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(n_layers)])
    attn = attention_linears(h, nq, nkv, hd, qkv_bias=True, o_bias=True) + (
        Tensor(name="sinks", numel=nq, shard="column"),)
    inter = r.int("intermediate_size")
    n = r.int("num_local_experts")
    k = r.int("num_experts_per_tok")
    experts = Experts(num_experts=n, num_experts_per_tok=k, linears=(
        Linear(name="gate_up_proj", in_features=h, out_features=2 * inter, bias=True, shard="expert"),
        Linear(name="down_proj", in_features=inter, out_features=h, bias=True, shard="expert"),
    ))
    norms = (rms("input_layernorm", h), rms("post_attention_layernorm", h))
    made = {kind: DecoderLayer(cache=attention_cache(kind, nkv, hd, window, None), attention=attn, experts=experts,
                               router=router(h, n, bias=True), norms=norms) for kind in set(kinds)}
    layers = [made[kind] for kind in kinds]
    head, tied = lm_head(r, vocab, h, tie_default=False)
    return spec_fields(r, h=h, n_layers=n_layers, nq=nq, nkv=nkv, hd=hd, vocab=vocab, embeddings=[embed(vocab, h)],
                       layers=layers, final_norm=[rms("norm", h)], head=head, tied=tied)


def build_llama4(r, model_type: str) -> dict[str, Any]:
    """Llama-4 text decoder: chunked local attention on RoPE layers, global NoPE layers, MoE."""
    h, n_layers, nq, nkv, hd = core_dims(r)
    vocab = r.int("vocab_size")
    interval = r.int("no_rope_layer_interval", 4)
    no_rope = r.int_list("no_rope_layers") or [int((i + 1) % interval != 0) for i in range(n_layers)]
    kinds = layer_types(r, n_layers, ["chunked_attention" if x else "full_attention" for x in no_rope])
    chunk = r.int("attention_chunk_size") if "chunked_attention" in kinds else None
    step = r.int("interleave_moe_layer_step", 1)
    moe_layers = set(r.int_list("moe_layers") or range(step - 1, n_layers, step))
    attn = attention_linears(h, nq, nkv, hd, qkv_bias=r.bool("attention_bias", False),
                             o_bias=r.bool("attention_bias", False))
    inter = r.int("intermediate_size")
    n = r.int("num_local_experts")
    experts = Experts(num_experts=n, num_experts_per_tok=r.int("num_experts_per_tok"), linears=(
        Linear(name="gate_up_proj", in_features=h, out_features=2 * inter, shard="expert"),
        Linear(name="down_proj", in_features=inter, out_features=h, shard="expert"),
    ))
    norms = (rms("input_layernorm", h), rms("post_attention_layernorm", h))
    dense_mlp = gated_mlp(h, r.int("intermediate_size_mlp")) if len(moe_layers) < n_layers else ()
    made: dict[tuple[str, bool], DecoderLayer] = {}
    layers = []
    for i, kind in enumerate(kinds):
        key = (kind, i in moe_layers)
        if key not in made:
            cache = attention_cache(kind, nkv, hd, None, chunk)
            if i in moe_layers:
                made[key] = DecoderLayer(cache=cache, attention=attn, mlp=gated_mlp(h, inter, prefix="shared_expert."),
                                         experts=experts, router=router(h, n), norms=norms)
            else:
                made[key] = DecoderLayer(cache=cache, attention=attn, mlp=dense_mlp, norms=norms)
        layers.append(made[key])
    head, tied = lm_head(r, vocab, h, tie_default=False)
    return spec_fields(r, h=h, n_layers=n_layers, nq=nq, nkv=nkv, hd=hd, vocab=vocab, embeddings=[embed(vocab, h)],
                       layers=layers, final_norm=[rms("norm", h)], head=head, tied=tied)


# ----------------------------------------------------------------------------- hybrids with recurrent state


def build_nemotron_h(r, model_type: str) -> dict[str, Any]:
    """Nemotron-H: one mixer per block, from ``hybrid_override_pattern`` (M mamba2, * attention,
    - MLP, E MoE), each block with one RMSNorm. Squared-ReLU MLPs (up, down; no gate)."""
    pattern = r.raw("hybrid_override_pattern")
    kinds_by_char = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
    if pattern is not None:
        if not isinstance(pattern, str) or not pattern or set(pattern) - set(kinds_by_char):
            raise ConfigError(r._name("hybrid_override_pattern"), "must be a string of M, *, - and E")
        blocks = [kinds_by_char[c] for c in pattern]
    else:
        legacy = {"linear_attention": "mamba", "full_attention": "attention", "mlp": "mlp", "moe": "moe"}
        given = r.str_list("layers_block_type") or r.str_list("layer_types")
        if not given or set(given) - set(legacy):
            raise ConfigError(r._name("hybrid_override_pattern"), "missing: the block pattern is required")
        blocks = [legacy[b] for b in given]
    h = r.int("hidden_size")
    nq = r.int("num_attention_heads")
    nkv = r.int("num_key_value_heads", nq)
    hd = r.int("head_dim", r.int("attention_head_dim", 128, why="NemotronHConfig default"), why="attention_head_dim")
    vocab = r.int("vocab_size")
    n_heads, m_hd = r.int("mamba_num_heads"), r.int("mamba_head_dim")
    groups, d_state = r.int("n_groups", 8), r.int("ssm_state_size", 128)
    kernel = r.int("conv_kernel", 4)
    inner = n_heads * m_hd
    conv_dim = inner + 2 * groups * d_state
    bias, conv_bias, mlp_bias = r.bool("use_bias", False), r.bool("use_conv_bias", True), r.bool("mlp_bias", False)
    mamba = DecoderLayer(
        cache=MambaState(conv_dim=conv_dim, conv_kernel=kernel, num_heads=n_heads, head_dim=m_hd, state_size=d_state),
        attention=(
            Linear(name="in_proj", in_features=h, out_features=inner + conv_dim + n_heads, bias=bias),
            Tensor(name="conv1d", numel=conv_dim * kernel + (conv_dim if conv_bias else 0), shard="column"),
            Tensor(name="dt_bias+A_log+D", numel=3 * n_heads, shard="column"),
            Norm(name="mixer_norm", dim=inner, shard="column"),
            Linear(name="out_proj", in_features=inner, out_features=h, bias=bias, shard="row"),
        ),
        norms=(rms("norm", h),))
    attn = DecoderLayer(cache=FullAttention(num_key_value_heads=nkv, head_dim=hd, v_head_dim=hd),
                        attention=attention_linears(h, nq, nkv, hd, qkv_bias=r.bool("attention_bias", False),
                                                    o_bias=r.bool("attention_bias", False)),
                        norms=(rms("norm", h),))
    made: dict[str, DecoderLayer] = {}
    layers = []
    for block in blocks:
        if block == "mamba":
            layers.append(mamba)
        elif block == "attention":
            layers.append(attn)
        elif block == "mlp":
            if "mlp" not in made:
                made["mlp"] = DecoderLayer(cache=NoCache(), norms=(rms("norm", h),), mlp=plain_mlp(
                    h, r.int("intermediate_size"), bias=mlp_bias, names=("up_proj", "down_proj")))
            layers.append(made["mlp"])
        elif "moe" in made:
            layers.append(made["moe"])
        else:
            n, k = r.int("n_routed_experts"), r.int("num_experts_per_tok")
            inter = r.int("moe_intermediate_size")
            experts = Experts(num_experts=n, num_experts_per_tok=k, linears=tuple(
                lin.model_copy(update={"shard": "expert"})
                for lin in plain_mlp(h, inter, bias=False, names=("up_proj", "down_proj"))))
            shared = plain_mlp(h, r.int("moe_shared_expert_intermediate_size"), bias=mlp_bias,
                               names=("shared_experts.up_proj", "shared_experts.down_proj"))
            made["moe"] = DecoderLayer(cache=NoCache(), mlp=shared, experts=experts, router=router(h, n),
                                       norms=(rms("norm", h),))
            layers.append(made["moe"])
    if r.has("num_hidden_layers") and r.int("num_hidden_layers") != len(blocks):
        r.assumptions.append(f"num_hidden_layers = {len(blocks)} blocks from the pattern (config says "
                             f"{r.raw('num_hidden_layers')}; transformers uses the pattern)")
    head, tied = lm_head(r, vocab, h, tie_default=False)
    return spec_fields(r, h=h, n_layers=len(blocks), nq=nq, nkv=nkv, hd=hd, vocab=vocab,
                       embeddings=[embed(vocab, h, "embeddings")], layers=layers,
                       final_norm=[rms("norm_f", h)], head=head, tied=tied)


def build_qwen3_next(r, model_type: str) -> dict[str, Any]:
    """Qwen3-Next: 3 gated-DeltaNet (linear attention) layers per gated full-attention layer, MoE."""
    h, n_layers, nq, nkv, hd = core_dims(r)
    vocab = r.int("vocab_size")
    interval = r.int("full_attention_interval", 4)
    kinds = layer_types(r, n_layers, ["linear_attention" if (i + 1) % interval else "full_attention"
                                      for i in range(n_layers)])
    hk, dk = r.int("linear_num_key_heads"), r.int("linear_key_head_dim")
    hv, dv = r.int("linear_num_value_heads"), r.int("linear_value_head_dim")
    kernel = r.int("linear_conv_kernel_dim", 4)
    state = LinearAttentionState(num_key_heads=hk, key_head_dim=dk, num_value_heads=hv, value_head_dim=dv,
                                 conv_kernel=kernel)
    linear_attn = (
        Linear(name="in_proj_qkvz", in_features=h, out_features=2 * hk * dk + 2 * hv * dv),
        Linear(name="in_proj_ba", in_features=h, out_features=2 * hv),
        Tensor(name="conv1d", numel=state.conv_dim * kernel, shard="column"),
        Tensor(name="dt_bias+A_log", numel=2 * hv, shard="column"),
        Norm(name="norm", dim=dv),
        Linear(name="out_proj", in_features=hv * dv, out_features=h, shard="row"),
    )
    bias = r.bool("attention_bias", False)
    # Gated attention: q_proj also produces the output gate, hence 2 x heads x head_dim.
    full_attn = (Linear(name="q_proj", in_features=h, out_features=2 * nq * hd, bias=bias),) + attention_linears(
        h, nq, nkv, hd, qkv_bias=bias, o_bias=bias)[1:] + (rms("q_norm", hd), rms("k_norm", hd))
    experts = experts_block(r, h, r.int("moe_intermediate_size"), "num_experts", "num_experts_per_tok")
    n = experts.num_experts
    shared = gated_mlp(h, r.int("shared_expert_intermediate_size"), prefix="shared_expert.") + (
        Linear(name="shared_expert_gate", in_features=h, out_features=1, shard="replicated", quantizable=False),)
    step = r.int("decoder_sparse_step", 1)
    mlp_only = set(r.int_list("mlp_only_layers") or [])
    norms = (rms("input_layernorm", h), rms("post_attention_layernorm", h))
    full = FullAttention(num_key_value_heads=nkv, head_dim=hd, v_head_dim=hd)
    made: dict[tuple[str, bool], DecoderLayer] = {}
    layers = []
    for i, kind in enumerate(kinds):
        key = (kind, i not in mlp_only and n > 0 and (i + 1) % step == 0)
        if key not in made:
            cache, attn = (state, linear_attn) if kind == "linear_attention" else (full, full_attn)
            if key[1]:
                made[key] = DecoderLayer(cache=cache, attention=attn, mlp=shared, experts=experts,
                                         router=router(h, n), norms=norms)
            else:
                made[key] = DecoderLayer(cache=cache, attention=attn, mlp=gated_mlp(h, r.int("intermediate_size")),
                                         norms=norms)
        layers.append(made[key])
    head, tied = lm_head(r, vocab, h, tie_default=False)
    return spec_fields(r, h=h, n_layers=n_layers, nq=nq, nkv=nkv, hd=hd, vocab=vocab, embeddings=[embed(vocab, h)],
                       layers=layers, final_norm=[rms("norm", h)], head=head, tied=tied)


BUILDERS = {
    "llama": build_llama_like,
    "mistral": build_llama_like,
    "mixtral": build_llama_like,
    "qwen2": build_llama_like,
    "qwen2_moe": build_llama_like,
    "qwen3": build_llama_like,
    "qwen3_moe": build_llama_like,
    "gemma": build_llama_like,
    "gemma2": build_llama_like,
    "gemma3_text": build_llama_like,
    "phi3": build_llama_like,
    "phi": build_phi,
    "falcon": build_falcon,
    "gpt2": build_gpt2,
    "gpt_bigcode": build_gpt2,
    "gpt_neox": build_gpt_neox,
    "opt": build_opt,
    "deepseek_v2": build_deepseek,
    "deepseek_v3": build_deepseek,
    "gpt_oss": build_gpt_oss,
    "llama4_text": build_llama4,
    "nemotron_h": build_nemotron_h,
    "qwen3_next": build_qwen3_next,
}
