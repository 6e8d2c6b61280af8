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

MiniMax-M3 (``minimax_m3_vl_text``, the text decoder of transformers' ``minimax_m3_vl`` wrapper, and
MiniMaxAI's flat ``minimax_m3`` files): a new module of its own beside M2, since its attention
(per-head norms, a lightning indexer in the sparse layers), MLP (SwiGLU-OAI, a shared expert, dense
leading layers) and cache (``IndexedAttention``: K/V plus an indexer key) all differ.
"""

from typing import Any

from kvplan.errors import ConfigError
from kvplan.families.blocks import (
    attention_linears, core_dims, experts_block, gated_mlp, llama_tail, moe_layer, rms, router,
)
from kvplan.layers import FullAttention, IndexedAttention
from kvplan.spec import DecoderLayer, Linear
from kvplan.units import counted


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
    layer = moe_layer(FullAttention(num_key_value_heads=nkv, head_dim=hd, v_head_dim=hd), attn,
                      (rms("input_layernorm", h), rms("post_attention_layernorm", h)), h, experts)
    return llama_tail(r, h=h, n_layers=n_layers, nq=nq, nkv=nkv, hd=hd, vocab=vocab, layers=[layer] * n_layers)


M3_LAYER_TYPES = ("full_attention", "minimax_m3_sparse")
# sparse_attention_config's legacy names for the indexer's fields, which override the flat ones
# (MiniMaxM3VLTextConfig.__post_init__, transformers 5.23).
M3_LEGACY_INDEX_KEYS = {"index_n_heads": "sparse_num_index_heads", "index_head_dim": "sparse_index_dim"}


def _m3_per_layer(r, n_layers: int, key: str, legacy_key: str, legacy: list | None, values: tuple[str, str],
                  default: str) -> list[str]:
    """A per-layer selector: ``key`` (names) when given, else the legacy 0/1 list (1 -> values[1]),
    else ``default`` everywhere (MiniMaxM3VLTextConfig.__post_init__)."""
    given = r.str_list(key)
    if given is not None:
        if len(given) != n_layers or set(given) - set(values):
            raise ConfigError(r._name(key), f"must list {' or '.join(map(repr, values))} for each of {n_layers} layers")
        return given
    if legacy is None:
        return [default] * n_layers
    if not isinstance(legacy, list) or len(legacy) != n_layers:
        raise ConfigError(r._name(legacy_key), f"must be a list of {n_layers} entries of 0 or 1")
    return [values[1] if r.check_int(legacy_key, f, minimum=0) else values[0] for f in legacy]


def build_minimax_m3(r, model_type: str) -> dict[str, Any]:
    """MiniMax-M3's text decoder (transformers 5.23 ``MiniMaxM3VLTextModel``, modeling_minimax_m3_vl.py).

    Attention: GQA with per-head Gemma RMSNorm q/k norms (head_dim each), no biases; in sparse layers
    (``layer_types`` "minimax_m3_sparse", else ``sparse_attention_config.sparse_attention_freq``) a
    lightning indexer ``MiniMaxM3VLIndexer``: q_proj [index_n_heads x index_head_dim, h], k_proj
    [index_head_dim, h], q_norm / k_norm (index_head_dim); it caches one key per token
    (``IndexedAttention``). MLP per ``mlp_layer_types`` (else ``moe_layer_freq``; default all MoE):
    "sparse" is a sigmoid router [E, h] (its e_score_correction_bias a buffer), E fused SwiGLU
    experts of ``intermediate_size`` and one shared expert of ``shared_intermediate_size``; "dense" a
    SwiGLU of ``dense_intermediate_size``. transformers reads neither ``n_shared_experts`` nor
    ``first_k_dense_replace``. Worked number: the released MiniMax-M3, 426,174,565,632 parameters.
    """
    h, n_layers, nq, nkv, hd = core_dims(r)
    vocab = r.int("vocab_size")
    sparse_cfg = r.raw("sparse_attention_config")
    if sparse_cfg is not None and not isinstance(sparse_cfg, dict):
        raise ConfigError(r._name("sparse_attention_config"), "must be an object")
    sparse_cfg = sparse_cfg or {}
    index = {}
    for flat, legacy in M3_LEGACY_INDEX_KEYS.items():
        if sparse_cfg.get(legacy) is not None:
            index[flat] = r.check_int(f"sparse_attention_config.{legacy}", sparse_cfg[legacy])
        else:
            index[flat] = r.int(flat, {"index_n_heads": 4, "index_head_dim": 128}[flat],
                                why="MiniMaxM3VLTextConfig default")
    kinds = _m3_per_layer(r, n_layers, "layer_types", "sparse_attention_config.sparse_attention_freq",
                          sparse_cfg.get("sparse_attention_freq"), M3_LAYER_TYPES, "full_attention")
    mlps = _m3_per_layer(r, n_layers, "mlp_layer_types", "moe_layer_freq", r.raw("moe_layer_freq"),
                         ("dense", "sparse"), "sparse")
    qk_norms = (rms("q_norm", hd), rms("k_norm", hd))
    attn = attention_linears(h, nq, nkv, hd) + qk_norms
    n_i, d_i = index["index_n_heads"], index["index_head_dim"]
    # vLLM shards the index query heads with the KV heads (num_idx_heads = num_kv_heads per rank); the
    # single index key head is every rank's.
    indexer = (Linear(name="index_q_proj", in_features=h, out_features=n_i * d_i),
               Linear(name="index_k_proj", in_features=h, out_features=d_i, shard="replicated"),
               rms("index_q_norm", d_i), rms("index_k_norm", d_i))
    caches = {"full_attention": (FullAttention(num_key_value_heads=nkv, head_dim=hd, v_head_dim=hd), attn),
              "minimax_m3_sparse": (IndexedAttention(num_key_value_heads=nkv, head_dim=hd, v_head_dim=hd,
                                                     index_head_dim=d_i), attn + indexer)}
    norms = (rms("input_layernorm", h), rms("post_attention_layernorm", h))
    moe = dense = None
    if "sparse" in mlps:
        shared = r.int("shared_intermediate_size", 3072, why="MiniMaxM3VLTextConfig default")
        n_shared = r.raw("n_shared_experts")
        inter = r.int("intermediate_size")
        if n_shared is not None and r.check_int("n_shared_experts", n_shared, minimum=0) * inter != shared:
            raise ConfigError(r._name("n_shared_experts"),
                              f"{counted(n_shared, 'shared expert')} of intermediate_size {inter} (vLLM's MiniMaxM3MoE) "
                              f"disagree with transformers' one shared expert of shared_intermediate_size {shared}; "
                              "planned only where they agree")
        experts = experts_block(r, h, inter, "num_local_experts", "num_experts_per_tok")
        moe = {"experts": experts, "router": router(h, experts.num_experts),
               "mlp": gated_mlp(h, shared, prefix="shared_experts.")}
    if "dense" in mlps:
        dense = {"mlp": gated_mlp(h, r.int("dense_intermediate_size", 12288, why="MiniMaxM3VLTextConfig default"))}
    made: dict = {}
    layers = []
    for kind, mlp in zip(kinds, mlps):
        if (kind, mlp) not in made:
            cache, attention = caches[kind]
            made[kind, mlp] = DecoderLayer(cache=cache, attention=attention, norms=norms,
                                           **(moe if mlp == "sparse" else dense))
        layers.append(made[kind, mlp])
    return llama_tail(r, h=h, n_layers=n_layers, nq=nq, nkv=nkv, hd=hd, vocab=vocab, layers=layers)


MODEL_TYPES = {
    "minimax_m2": build_minimax_m2,
    "minimax_m3_vl_text": build_minimax_m3,
    # Flat files of the text decoder: MiniMaxAI's own (model_type minimax_m3, MiniMaxM3ForCausalLM) and
    # one carrying the wrapper's model_type with the text fields at top level.
    "minimax_m3": build_minimax_m3,
    "minimax_m3_vl": build_minimax_m3,
}
