"""gpt-oss: biased attention with per-head sinks, alternating sliding/full layers, biased experts.
"""

from typing import Any

from kvplan.families.blocks import (
    attention_cache, attention_linears, core_dims, fused_experts, layer_types, llama_tail, rms, router, sliding_window,
)
from kvplan.spec import DecoderLayer, Tensor


def build_gpt_oss(r, model_type: str) -> dict[str, Any]:
    """gpt-oss: biased attention with per-head sinks, alternating sliding/full, biased experts."""
    h, n_layers, nq, nkv, hd = core_dims(r)
    vocab = r.int("vocab_size")
    window = sliding_window(r)
    kinds = layer_types(r, n_layers, ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(n_layers)])
    attn = attention_linears(h, nq, nkv, hd, qkv_bias=True, o_bias=True) + (
        Tensor(name="sinks", numel=nq, shard="column"),)
    inter = r.int("intermediate_size")
    n = r.int("num_local_experts")
    k = r.int("num_experts_per_tok")
    experts = fused_experts(n, k, h, inter, bias=True)
    norms = (rms("input_layernorm", h), rms("post_attention_layernorm", h))
    made = {kind: DecoderLayer(cache=attention_cache(kind, nkv, hd, window, None), attention=attn, experts=experts,
                               router=router(h, n, bias=True), norms=norms) for kind in set(kinds)}
    layers = [made[kind] for kind in kinds]
    return llama_tail(r, h=h, n_layers=n_layers, nq=nq, nkv=nkv, hd=hd, vocab=vocab, layers=layers)


MODEL_TYPES = {
    "gpt_oss": build_gpt_oss,
}
