"""Older GPT-style decoders: mpt, bloom, gptj, codegen, gpt_neo (multi-head attention, LayerNorms).

Each is the GPT-2 block (kvplan/families/gpt.py) with its own diffs, as transformers 5.23's
``modeling_<family>.py`` builds it: fused or separate q/k/v, which linears carry biases, one norm
(parallel attention + MLP: gptj, codegen) or two, learned positions (gpt_neo) or none (ALiBi: mpt,
bloom; rotary: gptj, codegen). Every layer caches K and V of every head (no GQA in any of them).
"""

from typing import Any

from kvplan.errors import ConfigError
from kvplan.families.blocks import biased_lm_head, embed, layernorm, plain_mlp, spec_fields
from kvplan.layers import FullAttention
from kvplan.spec import Component, DecoderLayer, Linear, Tensor


def _mha_dims(r, hidden: str, layers: str, heads: str) -> tuple[int, int, int, int]:
    """(h, n_layers, heads, head_dim = h // heads): these families derive head_dim, never read it."""
    h, n_layers, nq = r.int(hidden), r.int(layers), r.int(heads)
    r.fail_if_missing()
    if h % nq:
        raise ConfigError(r._name(hidden), f"{h} is not divisible by {heads} ({nq})")
    return h, n_layers, nq, h // nq


def _fields(r, *, h, n_layers, nq, hd, vocab, layer, embeddings, final_norm, tie_default, head_bias=False,
            max_pos_key="max_position_embeddings") -> dict[str, Any]:
    head, tied = biased_lm_head(r, vocab, h, tie_default=tie_default, bias=head_bias)
    return spec_fields(r, h=h, n_layers=n_layers, nq=nq, nkv=nq, hd=hd, vocab=vocab, embeddings=embeddings,
                       layers=[layer] * n_layers, final_norm=final_norm, head=head, tied=tied, max_pos_key=max_pos_key)


def build_mpt(r, model_type: str) -> dict[str, Any]:
    """mpt: d_model / n_heads / n_layers; Wqkv [3d, d] and out_proj without bias; MLP up [4d, d],
    down [d, 4d] without bias (MptMLP hard-codes the 4: transformers reads no expansion_ratio);
    LayerNorms without bias (norm_1, norm_2, norm_f); ALiBi, so no position table (transformers reads
    no learned_pos_emb either); tied embeddings by default."""
    h, n_layers, nq, hd = _mha_dims(r, "d_model", "n_layers", "n_heads")
    vocab = r.int("vocab_size")
    ratio = r.raw("expansion_ratio", 4)
    if ratio != 4:
        r.assumptions.append(f"MLP width = 4 x d_model, not expansion_ratio {ratio}: transformers' MptMLP uses 4")
    attn = (Linear(name="Wqkv", in_features=h, out_features=3 * h),
            Linear(name="out_proj", in_features=h, out_features=h, shard="row"))
    layer = DecoderLayer(cache=FullAttention(num_key_value_heads=nq, head_dim=hd, v_head_dim=hd), attention=attn,
                         mlp=plain_mlp(h, 4 * h, bias=False, names=("up_proj", "down_proj")),
                         norms=(layernorm("norm_1", h, bias=False), layernorm("norm_2", h, bias=False)))
    return _fields(r, h=h, n_layers=n_layers, nq=nq, hd=hd, vocab=vocab, layer=layer,
                   embeddings=[embed(vocab, h, "wte")], final_norm=[layernorm("norm_f", h, bias=False)],
                   tie_default=True, max_pos_key="max_seq_len")


def build_bloom(r, model_type: str) -> dict[str, Any]:
    """bloom: hidden_size (old configs: n_embed) / n_head / n_layer; biased query_key_value [3h, h],
    dense, dense_h_to_4h [4h, h], dense_4h_to_h; LayerNorms with bias, one more right after the
    embedding (word_embeddings_layernorm); ALiBi; tied embeddings by default."""
    hidden = "hidden_size" if r.has("hidden_size") or not r.has("n_embed") else "n_embed"
    h, n_layers, nq, hd = _mha_dims(r, hidden, "n_layer" if r.has("n_layer") else "num_hidden_layers",
                                    "n_head" if r.has("n_head") else "num_attention_heads")
    vocab = r.int("vocab_size")
    attn = (Linear(name="query_key_value", in_features=h, out_features=3 * h, bias=True),
            Linear(name="dense", in_features=h, out_features=h, bias=True, shard="row"))
    layer = DecoderLayer(cache=FullAttention(num_key_value_heads=nq, head_dim=hd, v_head_dim=hd), attention=attn,
                         mlp=plain_mlp(h, 4 * h, names=("dense_h_to_4h", "dense_4h_to_h")),
                         norms=(layernorm("input_layernorm", h), layernorm("post_attention_layernorm", h)))
    return _fields(r, h=h, n_layers=n_layers, nq=nq, hd=hd, vocab=vocab, layer=layer,
                   embeddings=[embed(vocab, h, "word_embeddings"), layernorm("word_embeddings_layernorm", h)],
                   final_norm=[layernorm("ln_f", h)], tie_default=True)


def build_gptj(r, model_type: str) -> dict[str, Any]:
    """gptj / codegen: n_embd / n_head / n_layer; attention and MLP in parallel under one LayerNorm
    (ln_1); q/k/v/out without bias (codegen: one fused qkv_proj [3h, h]); fc_in [n_inner or 4h, h]
    and fc_out with bias; rotary, so no position table; an untied lm_head with bias."""
    h, n_layers, nq, hd = _mha_dims(r, "n_embd", "n_layer", "n_head")
    vocab = r.int("vocab_size")
    inner = r.int("n_inner", 4 * h, why="4 x n_embd") if r.has("n_inner") else 4 * h
    if model_type == "codegen":
        attn: tuple[Component, ...] = (Linear(name="qkv_proj", in_features=h, out_features=3 * h),)
    else:
        attn = tuple(Linear(name=f"{x}_proj", in_features=h, out_features=h) for x in "qkv")
    attn += (Linear(name="out_proj", in_features=h, out_features=h, shard="row"),)
    layer = DecoderLayer(cache=FullAttention(num_key_value_heads=nq, head_dim=hd, v_head_dim=hd), attention=attn,
                         mlp=plain_mlp(h, inner, names=("fc_in", "fc_out")), norms=(layernorm("ln_1", h),))
    return _fields(r, h=h, n_layers=n_layers, nq=nq, hd=hd, vocab=vocab, layer=layer,
                   embeddings=[embed(vocab, h, "wte")], final_norm=[layernorm("ln_f", h)], tie_default=False,
                   head_bias=True, max_pos_key="n_positions")


def build_gpt_neo(r, model_type: str) -> dict[str, Any]:
    """gpt_neo: hidden_size / num_heads / num_layers; learned positions wpe [max_position_embeddings,
    h]; q/k/v without bias, out_proj with; c_fc [intermediate_size or 4h, h] and c_proj with bias;
    LayerNorms with bias; tied embeddings by default.

    Its "local" layers (attention_types) only mask: transformers' DynamicCache keeps every token on
    every layer (GPTNeoConfig has no layer_types nor sliding_window), and vLLM has no GPT-Neo model,
    so every layer is planned as full attention."""
    h, n_layers, nq, hd = _mha_dims(r, "hidden_size", "num_layers", "num_heads")
    vocab = r.int("vocab_size")
    inner = r.int("intermediate_size", 4 * h, why="4 x hidden_size") if r.has("intermediate_size") else 4 * h
    max_pos = r.int("max_position_embeddings", 2048, why="GPTNeoConfig default")
    attn = tuple(Linear(name=f"{x}_proj", in_features=h, out_features=h) for x in "qkv") + (
        Linear(name="out_proj", in_features=h, out_features=h, bias=True, shard="row"),)
    layer = DecoderLayer(cache=FullAttention(num_key_value_heads=nq, head_dim=hd, v_head_dim=hd), attention=attn,
                         mlp=plain_mlp(h, inner, names=("c_fc", "c_proj")),
                         norms=(layernorm("ln_1", h), layernorm("ln_2", h)))
    return _fields(r, h=h, n_layers=n_layers, nq=nq, hd=hd, vocab=vocab, layer=layer,
                   embeddings=[embed(vocab, h, "wte"), Tensor(name="wpe", numel=max_pos * h)],
                   final_norm=[layernorm("ln_f", h)], tie_default=True)


MODEL_TYPES = {
    "mpt": build_mpt,
    "bloom": build_bloom,
    "gptj": build_gptj,
    "codegen": build_gptj,
    "gpt_neo": build_gpt_neo,
}
