"""MiniMax-M2 (``minimax_m2``): a Mixtral-style MoE decoder with OLMo-2-style q/k norms.

transformers 5.23 ``modular_minimax_m2.py``: attention is FlexOlmo's, whose ``q_norm`` / ``k_norm``
are RMSNorms over the whole projection (num_attention_heads x head_dim and num_key_value_heads x
head_dim, not one head); every layer is MoE: ``num_local_experts`` SwiGLU experts of
``intermediate_size`` (fused gate_up), a bias-free sigmoid router whose
``e_score_correction_bias`` is a buffer (not a parameter), no shared expert (the released
files say ``shared_intermediate_size`` 0, and the modeling file has none). Every layer is full
attention: ``attn_type_list`` must be all 1 (a 0 would be MiniMax-01's lightning attention,
which MiniMax-M2's modeling file does not build). vLLM ``minimax_m2.py`` caches plain K/V:
num_key_value_heads x head_dim per token per layer.
"""

from typing import Any

from kvplan.errors import ConfigError
from kvplan.families.blocks import (
    attention_linears,
    core_dims,
    embed,
    experts_block,
    lm_head,
    rms,
    router,
    spec_fields,
)
from kvplan.layers import FullAttention
from kvplan.spec import DecoderLayer


def build_minimax_m2(r, model_type: str) -> dict[str, Any]:
    h, n_layers, nq, nkv, hd = core_dims(r)
    vocab = r.int("vocab_size")
    kinds = r.int_list("attn_type_list")
    if kinds is not None and (len(kinds) != n_layers or set(kinds) - {1}):
        raise ConfigError(r._name("attn_type_list"),
                          f"must be {n_layers} entries of 1 (full attention) for MiniMax-M2; 0 (lightning "
                          "attention) belongs to MiniMax-01 (model_type minimax)")
    attn = attention_linears(h, nq, nkv, hd) + (rms("q_norm", nq * hd), rms("k_norm", nkv * hd))
    experts = experts_block(r, h, r.int("intermediate_size"), "num_local_experts", "num_experts_per_tok")
    layer = DecoderLayer(cache=FullAttention(num_key_value_heads=nkv, head_dim=hd, v_head_dim=hd), attention=attn,
                         experts=experts, router=router(h, experts.num_experts),
                         norms=(rms("input_layernorm", h), rms("post_attention_layernorm", h)))
    head, tied = lm_head(r, vocab, h, tie_default=False)
    return spec_fields(r, h=h, n_layers=n_layers, nq=nq, nkv=nkv, hd=hd, vocab=vocab, embeddings=[embed(vocab, h)],
                       layers=[layer] * n_layers, final_norm=[rms("norm", h)], head=head, tied=tied)


def refuse_minimax_m3(r, model_type: str) -> dict[str, Any]:
    """MiniMax-M3 is refused, with the reason (checked 2026-12 against transformers 5.23).

    Its sparse layers (``layer_types`` "minimax_m3_sparse", or the legacy
    ``sparse_attention_config.sparse_attention_freq``: 57 of 60 in the released file) run a
    lightning indexer whose per-token key (``index_head_dim`` = 128 elements, one head) is cached
    beside K/V (transformers ``MiniMaxM3VLSparseCacheLayer.idx_keys``). kvplan has no cache kind
    for an indexer key, and vLLM's layout for it is not in vLLM's source, so a plan would be short
    by that cache. transformers 5.23 counts 426,174,565,632 parameters for the released text config.
    """
    sparse = r.raw("sparse_attention_config")
    freq = sparse.get("sparse_attention_freq") if isinstance(sparse, dict) else None
    n_sparse = (sum(1 for f in freq if f) if isinstance(freq, list)
                else sum(1 for t in (r.raw("layer_types") or []) if t == "minimax_m3_sparse"))
    raise ConfigError("model_type", f"{model_type!r} (MiniMax-M3) is not planned: its sparse-attention layers "
                      f"({n_sparse} in this config) cache a lightning-indexer key per token beside K/V, which kvplan "
                      "has no cache kind for (and vLLM's layout for it is not in vLLM's source); refused rather than "
                      "planned short of that cache. MiniMax-M2 (model_type minimax_m2) is planned.")


MODEL_TYPES = {
    "minimax_m2": build_minimax_m2,
    "minimax_m3": refuse_minimax_m3,
    "minimax_m3_vl_text": refuse_minimax_m3,
    "minimax_m3_vl": refuse_minimax_m3,
}
