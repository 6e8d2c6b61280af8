"""Llama-4 text decoder: chunked local attention on RoPE layers, global NoPE layers, MoE.
"""

from typing import Any

from kvplan.families.blocks import (
    attention_cache, attention_linears, core_dims, fused_experts, gated_mlp, layer_types, llama_tail, moe_layer, rms,
)
from kvplan.spec import DecoderLayer


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
    experts = fused_experts(n, r.int("num_experts_per_tok"), h, inter)
    norms = (rms("input_layernorm", h), rms("post_attention_layernorm", h))
    dense_mlp = gated_mlp(h, r.int("intermediate_size_mlp")) if len(moe_layers) < n_layers else ()
    made: dict[tuple[str, bool], DecoderLayer] = {}
    layers = []
    for i, kind in enumerate(kinds):
        key = (kind, i in moe_layers)
        if key not in made:
            cache = attention_cache(kind, nkv, hd, None, chunk)
            if i in moe_layers:
                made[key] = moe_layer(cache, attn, norms, h, experts, gated_mlp(h, inter, prefix="shared_expert."))
            else:
                made[key] = DecoderLayer(cache=cache, attention=attn, mlp=dense_mlp, norms=norms)
        layers.append(made[key])
    return llama_tail(r, h=h, n_layers=n_layers, nq=nq, nkv=nkv, hd=hd, vocab=vocab, layers=layers)


MODEL_TYPES = {
    "llama4_text": build_llama4,
}
