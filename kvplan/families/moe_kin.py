"""Mid-size MoE decoders, each as its diff from a Llama-style layer with routed experts.

olmoe (OLMo's q/k norms, 64 experts), granitemoe / granitemoeshared (Granite + experts, optional
shared MLP), ernie4_5_moe (MoE from moe_layer_start_index, shared experts, a router correction
bias), hunyuan_v1_moe (per-head q/k norms, a shared MLP beside the experts), phimoe (LayerNorms
with bias, optional lm_head bias, one window for every layer), dbrx (fused Wqkv, nested
attn_config / ffn_config).

Experts are stored by transformers 5.23 as fused ``gate_up_proj [E, 2 x inter, h]`` and
``down_proj [E, h, inter]`` tensors: the same element count as three [inter, h] linears, so
``blocks.experts_block``'s gate/up/down describe them exactly.
"""

from typing import Any

from kvplan.errors import ConfigError
from kvplan.families.blocks import (
    attention_linears, embed, experts_block, gated_mlp, layernorm, rms, router, sliding_window,
)
from kvplan.families.llama_kin import Dims, assemble, dims, kinds_and_window, llama_norms, qk_norms
from kvplan.hf_config import Reader
from kvplan.spec import Component, Experts, Linear, Tensor


def build_olmoe(r, model_type: str) -> dict[str, Any]:
    """olmoe: OLMo's q/k RMSNorms, over hidden_size for q and (hidden_size // heads) x kv_heads for
    k (OlmoeAttention sizes them from hidden_size, not head_dim), pre-norms like Llama, every layer
    MoE (num_experts of intermediate_size; OlmoeConfig maps num_local_experts -> num_experts)."""
    d = dims(r)
    bias = r.bool("attention_bias", False)
    attn = attention_linears(d.h, d.nq, d.nkv, d.hd, qkv_bias=bias, o_bias=bias) + (
        rms("q_norm", d.h), rms("k_norm", d.h // d.nq * d.nkv))
    experts = experts_block(r, d.h, r.int("intermediate_size"), "num_experts", "num_experts_per_tok")
    kinds, window = kinds_and_window(r, d.n_layers, ["full_attention"] * d.n_layers)
    return assemble(r, d, kinds=kinds, window=window, attn=attn, norms=llama_norms(d.h),
                    moe=(experts, router(d.h, experts.num_experts), ()))


def build_granitemoe(r, model_type: str) -> dict[str, Any]:
    """granitemoe: Granite's attention (attention_bias on q/k/v/o) and num_local_experts experts of
    intermediate_size on every layer; granitemoeshared adds a shared MLP when
    shared_intermediate_size > 0: input_linear [2 x shared, h], output_linear [h, shared]."""
    d = dims(r)
    bias = r.bool("attention_bias", False)
    attn = attention_linears(d.h, d.nq, d.nkv, d.hd, qkv_bias=bias, o_bias=bias)
    experts = experts_block(r, d.h, r.int("intermediate_size"), "num_local_experts", "num_experts_per_tok")
    shared: tuple[Component, ...] = ()
    if model_type == "granitemoeshared" and r.int("shared_intermediate_size", 0, minimum=0):
        s = r.int("shared_intermediate_size")
        shared = (Linear(name="shared_mlp.input_linear", in_features=d.h, out_features=2 * s),
                  Linear(name="shared_mlp.output_linear", in_features=s, out_features=d.h, shard="row"))
    kinds, window = kinds_and_window(r, d.n_layers, ["full_attention"] * d.n_layers)
    return assemble(r, d, kinds=kinds, window=window, attn=attn, norms=llama_norms(d.h),
                    moe=(experts, router(d.h, experts.num_experts), shared))


def build_ernie4_5_moe(r, model_type: str) -> dict[str, Any]:
    """ernie4_5_moe: ERNIE-4.5's use_bias on every linear; layer i is MoE when (i + 1) %
    moe_layer_interval == 0 and moe_layer_start_index <= i <= moe_layer_end_index (-1: the last),
    else a dense MLP of intermediate_size. A MoE layer: moe_num_experts experts of
    moe_intermediate_size (config names moe_num_experts / moe_k; num_experts / num_experts_per_tok are
    aliases), a router [E, h], a correction bias of E values (Ernie4_5_MoeStatics), and shared experts
    as one MLP of moe_intermediate_size x moe_num_shared_experts. lm_head biased by use_bias."""
    d = dims(r)
    bias = r.bool("use_bias", False)
    attn = attention_linears(d.h, d.nq, d.nkv, d.hd, qkv_bias=bias, o_bias=bias)
    inter_e = r.int("moe_intermediate_size")
    n_key = "moe_num_experts" if r.has("moe_num_experts") or not r.has("num_experts") else "num_experts"
    k_key = "moe_k" if r.has("moe_k") or not r.has("num_experts_per_tok") else "num_experts_per_tok"
    experts = experts_block(r, d.h, inter_e, n_key, k_key)
    n = experts.num_experts
    n_shared = r.int("moe_num_shared_experts", 0, minimum=0)
    moe_mlp = gated_mlp(d.h, inter_e * n_shared, bias=bias, prefix="shared_experts.") if n_shared else ()
    # The router's score-correction bias (a parameter transformers counts) rides with the router.
    gate = router(d.h, n) + (Tensor(name="moe_statics.e_score_correction_bias", numel=n),)
    start = r.int("moe_layer_start_index", 0, minimum=0)
    end = r.raw("moe_layer_end_index", -1)
    end = d.n_layers - 1 if end == -1 else r.int("moe_layer_end_index", minimum=0)
    interval = r.int("moe_layer_interval", 1)
    moe_layers = [(i + 1) % interval == 0 and start <= i <= end for i in range(d.n_layers)]
    mlp = gated_mlp(d.h, r.int("intermediate_size"), bias=bias) if not all(moe_layers) else ()
    kinds, window = kinds_and_window(r, d.n_layers, ["full_attention"] * d.n_layers)
    return assemble(r, d, kinds=kinds, window=window, attn=attn, norms=llama_norms(d.h), mlp=mlp,
                    moe=(experts, gate, moe_mlp), moe_layers=moe_layers, tie_default=True, head_bias=bias)


def build_hunyuan_v1_moe(r, model_type: str) -> dict[str, Any]:
    """hunyuan_v1_moe: HunYuan's per-head query/key RMSNorms; every layer MoE: num_experts experts of
    intermediate_size, a router ``gate.wg`` [E, h], and a shared MLP of intermediate_size
    (HunYuanMoEV1Moe; transformers 5.23 reads neither moe_intermediate_size nor num_shared_expert).
    moe_topk may be a list, one k per layer."""
    d = dims(r)
    bias = r.bool("attention_bias", False)
    attn = attention_linears(d.h, d.nq, d.nkv, d.hd, qkv_bias=bias, o_bias=bias) + qk_norms(
        d, per_head=True, names=("query_layernorm", "key_layernorm"))
    inter = r.int("intermediate_size")
    topk = r.raw("moe_topk", r.raw("num_experts_per_tok"))
    if isinstance(topk, list):
        if len(topk) != d.n_layers:
            raise ConfigError(r._name("moe_topk"), f"has {len(topk)} entries for {d.n_layers} layers")
        ks = [r.check_int("moe_topk", k) for k in topk]
    else:
        ks = [r.int("moe_topk", 1)] * d.n_layers if not r.has("num_experts_per_tok") or r.has("moe_topk") else \
            [r.int("num_experts_per_tok")] * d.n_layers
    n_key = "num_experts" if r.has("num_experts") or not r.has("num_local_experts") else "num_local_experts"
    n = r.int(n_key, 1)
    if max(ks) > n:
        raise ConfigError(r._name("moe_topk"), f"{max(ks)} experts per token but only {n} experts")
    shared = gated_mlp(d.h, inter, prefix="shared_mlp.")
    kinds, window = kinds_and_window(r, d.n_layers, ["full_attention"] * d.n_layers)
    expert = tuple(lin.model_copy(update={"shard": "expert"}) for lin in gated_mlp(d.h, inter))
    by_k = {}  # one assembled layer list per distinct k; layer i is taken from its own k's list
    for k in sorted(set(ks)):
        experts = Experts(num_experts=n, num_experts_per_tok=k, linears=expert)
        by_k[k] = assemble(r, d, kinds=kinds, window=window, attn=attn, norms=llama_norms(d.h),
                           moe=(experts, router(d.h, n), shared))
    fields = by_k[ks[0]]
    fields["layers"] = tuple(by_k[k]["layers"][i] for i, k in enumerate(ks))
    return fields


def build_phimoe(r, model_type: str) -> dict[str, Any]:
    """phimoe: LayerNorms with bias (input, post-attention, final); attention_bias on q/k/v/o;
    num_local_experts experts of intermediate_size on every layer; lm_head bias when lm_head_bias;
    a sliding_window, when set, on every layer."""
    d = dims(r)
    bias = r.bool("attention_bias", False)
    attn = attention_linears(d.h, d.nq, d.nkv, d.hd, qkv_bias=bias, o_bias=bias)
    experts = experts_block(r, d.h, r.int("intermediate_size"), "num_local_experts", "num_experts_per_tok")
    window = sliding_window(r)
    kinds, window = kinds_and_window(r, d.n_layers, ["sliding_attention" if window else "full_attention"] * d.n_layers)
    norms = (layernorm("input_layernorm", d.h), layernorm("post_attention_layernorm", d.h))
    return assemble(r, d, kinds=kinds, window=window, attn=attn, norms=norms,
                    moe=(experts, router(d.h, experts.num_experts), ()), final_norm=layernorm("norm", d.h),
                    head_bias=r.bool("lm_head_bias", False))


def build_dbrx(r, model_type: str) -> dict[str, Any]:
    """dbrx: d_model / n_heads / n_layers, with kv_n_heads in ``attn_config`` (default 1) and the
    experts in ``ffn_config`` (ffn_hidden_size 3584, moe_num_experts 4, moe_top_k 1 by default:
    DbrxFFNConfig). Fused Wqkv [d + 2 x kv x hd, d], out_proj [d, d]; head_dim = d_model // n_heads;
    two bias-free LayerNorms per block (norm_1, norm_2) and norm_f; experts w1, v1, w2 of
    [ffn_hidden_size, d_model] each; untied (DbrxConfig refuses tying)."""
    sub = {}
    for key in ("attn_config", "ffn_config"):
        value = r.raw(key, {})
        if not isinstance(value, dict):
            raise ConfigError(r._name(key), f"must be an object, got {type(value).__name__}")
        sub[key] = Reader(value, prefix=r._name(key) + ".")
    h, nq, n_layers = r.int("d_model", 2048), r.int("n_heads", 16), r.int("n_layers", 24)
    if h % nq:
        raise ConfigError(r._name("d_model"), f"{h} is not divisible by n_heads ({nq})")
    a, f = sub["attn_config"], sub["ffn_config"]
    nkv = a.int("kv_n_heads", 1, why="DbrxAttentionConfig default")
    if nkv > nq or nq % nkv:
        raise ConfigError(a._name("kv_n_heads"), f"{nkv} must divide n_heads ({nq})")
    d = Dims(h, n_layers, nq, nkv, h // nq, r.int("vocab_size", 32000))
    attn = (Linear(name="Wqkv", in_features=h, out_features=h + 2 * nkv * d.hd),
            Linear(name="out_proj", in_features=h, out_features=h, shard="row"))
    experts = experts_block(f, h, f.int("ffn_hidden_size", 3584, why="DbrxFFNConfig default"),
                            "moe_num_experts", "moe_top_k")
    for sr in sub.values():
        r.assumptions.extend(sr.assumptions)
        r.missing.extend(sr.missing)
    norms = (layernorm("norm_1", h, bias=False), layernorm("norm_2", h, bias=False))
    fields = assemble(r, d, kinds=["full_attention"] * n_layers, window=None, attn=attn, norms=norms,
                      moe=(experts, router(h, experts.num_experts), ()), final_norm=layernorm("norm_f", h, bias=False))
    fields["embeddings"] = (embed(d.vocab, h, "wte"),)
    fields["max_position_embeddings"] = r.int("max_seq_len", 2048)
    return fields


MODEL_TYPES = {
    "olmoe": build_olmoe,
    "granitemoe": build_granitemoe,
    "granitemoeshared": build_granitemoe,
    "ernie4_5_moe": build_ernie4_5_moe,
    "hunyuan_v1_moe": build_hunyuan_v1_moe,
    "phimoe": build_phimoe,
    "dbrx": build_dbrx,
}
