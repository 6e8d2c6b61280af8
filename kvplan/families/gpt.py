"""GPT-style decoders: gpt2, gpt_bigcode, gpt_neox, opt, phi (phi-2), falcon.

LayerNorms with biases, fused or plain projections, plain (non-gated) GELU MLPs.
"""

from typing import Any

from kvplan.errors import ConfigError
from kvplan.families.blocks import (
    attention_linears, biased_lm_head, core_dims, embed, layernorm, lm_head, plain_mlp, spec_fields,
)
from kvplan.layers import FullAttention
from kvplan.spec import Component, DecoderLayer, Linear, Tensor


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
    head, tied = biased_lm_head(r, vocab, h, tie_default=False, bias=True)
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


MODEL_TYPES = {
    "gpt2": build_gpt2,
    "gpt_bigcode": build_gpt2,
    "gpt_neox": build_gpt_neox,
    "opt": build_opt,
    "phi": build_phi,
    "falcon": build_falcon,
}
