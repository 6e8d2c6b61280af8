"""Llama's dense descendants, each written as its diff from Llama (transformers' modular_*.py).

olmo2/olmo3 (no pre-norms: post-attention and post-feedforward RMSNorms; q/k RMSNorm over all
heads), exaone4 (the same norms, q/k RMSNorm per head, sliding pattern), granite (multipliers only:
no size effect), smollm3 (NoPE layers; slides only NoPE layers), ernie4_5 (one use_bias),
seed_oss and helium (q/k/v bias apart from o's), glm4 (fused gate_up, four norms), apertus (xIELU
MLP without gate, two learned scalars per layer), hunyuan_v1_dense (per-head q/k RMSNorm), internlm3
(Llama itself), cohere/cohere2 (parallel block under one bias-free LayerNorm), stablelm
(LayerNorms with bias, per-head q/k LayerNorms, optional parallel residual), starcoder2 (GPT-style
biased MLP, LayerNorms with bias, one window for every layer).

Shapes and defaults are transformers 5.23's ``modeling_<family>.py`` / ``configuration_<family>.py``.
Cache kinds follow each config's ``layer_types`` (transformers' DynamicCache builds its layers from
it) and, where a family derives it, that family's own rule.
"""

from typing import Any, NamedTuple

from kvplan.errors import ConfigError
from kvplan.families.blocks import (
    attention_cache, attention_linears, core_dims, gated_mlp, layer_types, layernorm, llama_tail, plain_mlp, rms,
    sliding_window,
)
from kvplan.spec import Component, DecoderLayer, Experts, Linear, Tensor


class Dims(NamedTuple):
    h: int
    n_layers: int
    nq: int
    nkv: int
    hd: int
    vocab: int


def dims(r, **core) -> Dims:
    h, n_layers, nq, nkv, hd = core_dims(r, **core)
    return Dims(h, n_layers, nq, nkv, hd, r.int("vocab_size"))


def kinds_and_window(r, n_layers: int, default: list[str]) -> tuple[list[str], int | None]:
    """``layer_types`` (validated) or the family's derived default, and the window they need."""
    kinds = layer_types(r, n_layers, default)
    window = sliding_window(r) if "sliding_attention" in kinds else None
    if "sliding_attention" in kinds and window is None:
        window = r.int("sliding_window")
    return kinds, window


def every_nth_full(n_layers: int, pattern: int) -> list[str]:
    """Layers i with (i + 1) % pattern == 0 are full, the rest slide (olmo3, cohere2, exaone4)."""
    return ["full_attention" if (i + 1) % pattern == 0 else "sliding_attention" for i in range(n_layers)]


def assemble(r, d: Dims, *, kinds: list[str], window: int | None, attn: tuple[Component, ...],
             norms: tuple[Component, ...], mlp: tuple[Component, ...] = (), tie_default: bool = False,
             final_norm: Component | None = None, moe: tuple[Experts, tuple, tuple] | None = None,
             moe_layers: list[bool] | None = None, head_bias: bool = False,
             mixers: dict[str, tuple[tuple[Component, ...], Any]] | None = None) -> dict[str, Any]:
    """Layers from their pieces, identical layers shared, then the spec fields.

    ``moe`` = (experts, router, shared/extra MLP of a MoE layer); ``moe_layers[i]`` says whether
    layer i is a MoE layer (all of them by default when ``moe`` is given). ``mixers`` maps a layer
    kind that is not attention (a hybrid's "linear_attention") to its (weights, cache spec)."""
    if moe_layers is None:
        moe_layers = [moe is not None] * d.n_layers
    made: dict[tuple[str, bool], DecoderLayer] = {}
    layers = []
    for kind, is_moe in zip(kinds, moe_layers):
        if (kind, is_moe) not in made:
            if mixers and kind in mixers:
                mixer, cache = mixers[kind]
            else:
                mixer, cache = attn, attention_cache(kind, d.nkv, d.hd, window, None)
            if is_moe:
                experts, router, shared = moe
                made[kind, is_moe] = DecoderLayer(cache=cache, attention=mixer, mlp=shared, experts=experts,
                                                  router=router, norms=norms)
            else:
                made[kind, is_moe] = DecoderLayer(cache=cache, attention=mixer, mlp=mlp, norms=norms)
        layers.append(made[kind, is_moe])
    return llama_tail(r, h=d.h, n_layers=d.n_layers, nq=d.nq, nkv=d.nkv, hd=d.hd, vocab=d.vocab, layers=layers,
                      tie_default=tie_default, final_norm=final_norm, head_bias=head_bias)


def qk_norms(d: Dims, *, per_head: bool, names=("q_norm", "k_norm"), bias: bool = False) -> tuple[Component, ...]:
    """q/k norms: over one head_dim (shared by the heads) or over all heads x head_dim."""
    q, k = (d.hd, d.hd) if per_head else (d.nq * d.hd, d.nkv * d.hd)
    return (layernorm(names[0], q, bias=bias), layernorm(names[1], k, bias=bias)) if bias else (
        rms(names[0], q), rms(names[1], k))


def post_norms(h: int) -> tuple[Component, ...]:
    """OLMo-2 / EXAONE-4: no pre-norms; the sublayer outputs are normed before the residual add."""
    return (rms("post_attention_layernorm", h), rms("post_feedforward_layernorm", h))


def llama_norms(h: int) -> tuple[Component, ...]:
    return (rms("input_layernorm", h), rms("post_attention_layernorm", h))


def build_olmo2(r, model_type: str) -> dict[str, Any]:
    """olmo2 / olmo3: Llama with post-norms and q/k RMSNorm over all heads (q [nq*hd], k [nkv*hd]);
    olmo3 adds a sliding window on 3 layers in 4 (Olmo3Config: (i + 1) % 4 != 0 slide)."""
    d = dims(r)
    bias = r.bool("attention_bias", False)
    attn = attention_linears(d.h, d.nq, d.nkv, d.hd, qkv_bias=bias, o_bias=bias) + qk_norms(d, per_head=False)
    default = every_nth_full(d.n_layers, 4) if model_type == "olmo3" else ["full_attention"] * d.n_layers
    kinds, window = kinds_and_window(r, d.n_layers, default)
    return assemble(r, d, kinds=kinds, window=window, attn=attn, norms=post_norms(d.h),
                    mlp=gated_mlp(d.h, r.int("intermediate_size")))


def build_exaone4(r, model_type: str) -> dict[str, Any]:
    """exaone4: OLMo-2's post-norms, per-head q/k RMSNorm, no biases; Exaone4Config slides the layers
    with (i + 1) % sliding_window_pattern != 0 (pattern 4), none when sliding_window is null."""
    d = dims(r)
    attn = attention_linears(d.h, d.nq, d.nkv, d.hd) + qk_norms(d, per_head=True)
    if r.has("layer_types") or not r.has("sliding_window"):
        default = ["full_attention"] * d.n_layers
    else:
        pattern = r.raw("sliding_window_pattern", 4)
        if isinstance(pattern, str) and pattern and set(pattern) <= {"L", "G"}:  # "LLLG": L local, G global
            default = ["sliding_attention" if pattern[i % len(pattern)] == "L" else "full_attention"
                       for i in range(d.n_layers)]
        else:
            default = every_nth_full(d.n_layers, r.int("sliding_window_pattern", 4))
    kinds, window = kinds_and_window(r, d.n_layers, default)
    return assemble(r, d, kinds=kinds, window=window, attn=attn, norms=post_norms(d.h),
                    mlp=gated_mlp(d.h, r.int("intermediate_size")))


def build_llama_switches(r, model_type: str) -> dict[str, Any]:
    """Llama with other bias switches / tying / layer rules: granite, helium, internlm3, seed_oss,
    ernie4_5, smollm3, hunyuan_v1_dense.

    Bias fields: granite, internlm3 attention_bias on q/k/v/o, mlp_bias on the MLP (InternLM3Config
    maps qkv_bias -> attention_bias, bias -> mlp_bias); helium attention_bias on q/k/v only, and an
    o_proj of [h, h] even when heads x head_dim differs;
    seed_oss attention_bias on q/k/v, attention_out_bias on o; ernie4_5 use_bias on every linear.
    """
    d = dims(r)
    if model_type == "ernie4_5":
        qkv_bias = o_bias = mlp_bias = r.bool("use_bias", False)
    elif model_type == "internlm3":
        qkv_bias = o_bias = r.bool("attention_bias", r.bool("qkv_bias", False))
        mlp_bias = r.bool("mlp_bias", r.bool("bias", False))
    else:
        qkv_bias = r.bool("attention_bias", model_type == "seed_oss")
        o_bias = {"helium": False, "seed_oss": r.bool("attention_out_bias", False)}.get(model_type, qkv_bias)
        mlp_bias = r.bool("mlp_bias", False)
    attn = attention_linears(d.h, d.nq, d.nkv, d.hd, qkv_bias=qkv_bias, o_bias=o_bias)
    if model_type == "helium":  # HeliumAttention: o_proj [h, h] whatever heads x head_dim is
        attn = attn[:3] + (attn[3].model_copy(update={"in_features": d.h}),)
    if model_type == "hunyuan_v1_dense":
        attn += qk_norms(d, per_head=True, names=("query_layernorm", "key_layernorm"))
    default = ["full_attention"] * d.n_layers
    if model_type == "smollm3" and r.bool("use_sliding_window", False) and r.has("sliding_window"):
        # SmolLM3Config: only the NoPE layers (no_rope_layers[i] == 0; every 4th by default) slide.
        no_rope = r.int_list("no_rope_layers")
        interval = r.int("no_rope_layer_interval", 4)
        if no_rope is None:
            no_rope = [int((i + 1) % interval != 0) for i in range(d.n_layers)]
        if len(no_rope) != d.n_layers:
            raise ConfigError(r._name("no_rope_layers"), f"has {len(no_rope)} entries for {d.n_layers} layers")
        default = ["full_attention" if rope else "sliding_attention" for rope in no_rope]
    kinds, window = kinds_and_window(r, d.n_layers, default)
    return assemble(r, d, kinds=kinds, window=window, attn=attn, norms=llama_norms(d.h),
                    mlp=gated_mlp(d.h, r.int("intermediate_size"), bias=mlp_bias),
                    tie_default=model_type in ("smollm3", "ernie4_5"))


def build_glm4(r, model_type: str) -> dict[str, Any]:
    """glm4: q/k/v biased (attention_bias, default true), o not; gate and up fused in one
    gate_up_proj [2 x inter, h] (the same count as Llama's pair); four RMSNorms per layer."""
    d = dims(r)
    attn = attention_linears(d.h, d.nq, d.nkv, d.hd, qkv_bias=r.bool("attention_bias", True))
    inter = r.int("intermediate_size")
    mlp = (Linear(name="gate_up_proj", in_features=d.h, out_features=2 * inter),
           Linear(name="down_proj", in_features=inter, out_features=d.h, shard="row"))
    norms = llama_norms(d.h) + (rms("post_self_attn_layernorm", d.h), rms("post_mlp_layernorm", d.h))
    kinds, window = kinds_and_window(r, d.n_layers, ["full_attention"] * d.n_layers)
    return assemble(r, d, kinds=kinds, window=window, attn=attn, norms=norms, mlp=mlp)


def build_apertus(r, model_type: str) -> dict[str, Any]:
    """apertus: per-head q/k RMSNorm; an MLP without gate (up, down); with hidden_act "xielu" the
    activation learns two scalars per layer (alpha_p, alpha_n: transformers' XIELUActivation)."""
    d = dims(r)
    bias = r.bool("attention_bias", False)
    attn = attention_linears(d.h, d.nq, d.nkv, d.hd, qkv_bias=bias, o_bias=bias) + qk_norms(d, per_head=True)
    mlp: tuple[Component, ...] = plain_mlp(d.h, r.int("intermediate_size"), bias=False, names=("up_proj", "down_proj"))
    if r.raw("hidden_act", "xielu") == "xielu":
        mlp += (Tensor(name="act_fn.alpha_p+alpha_n", numel=2),)
    norms = (rms("attention_layernorm", d.h), rms("feedforward_layernorm", d.h))
    kinds, window = kinds_and_window(r, d.n_layers, ["full_attention"] * d.n_layers)
    return assemble(r, d, kinds=kinds, window=window, attn=attn, norms=norms, mlp=mlp)


def build_cohere(r, model_type: str) -> dict[str, Any]:
    """cohere / cohere2: attention and MLP in parallel under one LayerNorm without bias (a weight
    of hidden_size, like an RMSNorm's); tied embeddings by default. cohere: optional q/k LayerNorms
    over [heads, head_dim] (use_qk_norm). cohere2: Cohere2Config slides (i + 1) %
    sliding_window_pattern != 0 (pattern 4) when layer_types is absent (its head_dim = hidden_size //
    num_attention_heads is replaced by a config's own head_dim, as core_dims reads it)."""
    d = dims(r)
    default = ["full_attention"] * d.n_layers
    if model_type == "cohere2":
        default = every_nth_full(d.n_layers, r.int("sliding_window_pattern", 4))
    bias = r.bool("attention_bias", False)
    attn = attention_linears(d.h, d.nq, d.nkv, d.hd, qkv_bias=bias, o_bias=bias)
    if model_type == "cohere" and r.bool("use_qk_norm", False):
        attn += qk_norms(d, per_head=False)
    kinds, window = kinds_and_window(r, d.n_layers, default)
    return assemble(r, d, kinds=kinds, window=window, attn=attn, norms=(rms("input_layernorm", d.h),),
                    mlp=gated_mlp(d.h, r.int("intermediate_size")), tie_default=True)


def build_stablelm(r, model_type: str) -> dict[str, Any]:
    """stablelm: LayerNorms with bias; head_dim = hidden_size // num_attention_heads (StableLmAttention
    ignores a head_dim field); q/k/v bias use_qkv_bias; optional per-head q/k LayerNorms without bias
    (qk_layernorm: one [head_dim] norm per head); use_parallel_residual drops the second norm."""
    h, nq = r.int("hidden_size"), r.int("num_attention_heads")
    r.fail_if_missing()
    if h % nq:
        raise ConfigError(r._name("hidden_size"), f"{h} is not divisible by num_attention_heads ({nq})")
    d = dims(r)._replace(hd=h // nq)
    attn = attention_linears(d.h, d.nq, d.nkv, d.hd, qkv_bias=r.bool("use_qkv_bias", False))
    if r.bool("qk_layernorm", False):
        attn += qk_norms(d, per_head=False)
    norms: tuple[Component, ...] = (layernorm("input_layernorm", d.h),)
    if not r.bool("use_parallel_residual", False):
        norms += (layernorm("post_attention_layernorm", d.h),)
    kinds, window = kinds_and_window(r, d.n_layers, ["full_attention"] * d.n_layers)
    return assemble(r, d, kinds=kinds, window=window, attn=attn, norms=norms,
                    mlp=gated_mlp(d.h, r.int("intermediate_size")), final_norm=layernorm("norm", d.h))


def build_starcoder2(r, model_type: str) -> dict[str, Any]:
    """starcoder2: use_bias on q/k/v/o and on a GELU MLP (c_fc, c_proj); LayerNorms with bias; a
    sliding_window, when set, on every layer; tied embeddings by default."""
    d = dims(r)
    bias = r.bool("use_bias", True)
    attn = attention_linears(d.h, d.nq, d.nkv, d.hd, qkv_bias=bias, o_bias=bias)
    window = sliding_window(r)
    kinds, window = kinds_and_window(r, d.n_layers, ["sliding_attention" if window else "full_attention"] * d.n_layers)
    return assemble(r, d, kinds=kinds, window=window, attn=attn,
                    norms=(layernorm("input_layernorm", d.h), layernorm("post_attention_layernorm", d.h)),
                    mlp=plain_mlp(d.h, r.int("intermediate_size"), bias=bias, names=("c_fc", "c_proj")),
                    final_norm=layernorm("norm", d.h), tie_default=True)


MODEL_TYPES = {
    "olmo2": build_olmo2,
    "olmo3": build_olmo2,
    "exaone4": build_exaone4,
    "granite": build_llama_switches,
    "helium": build_llama_switches,
    "internlm3": build_llama_switches,
    "seed_oss": build_llama_switches,
    "ernie4_5": build_llama_switches,
    "smollm3": build_llama_switches,
    "hunyuan_v1_dense": build_llama_switches,
    "glm4": build_glm4,
    "apertus": build_apertus,
    "cohere": build_cohere,
    "cohere2": build_cohere,
    "stablelm": build_stablelm,
    "starcoder2": build_starcoder2,
}
