"""Llama-style decoders: llama, mistral (ministral, ministral3), mixtral, qwen2/qwen2-moe, qwen3/qwen3-moe,
gemma 1-3, phi3.

One builder: the families differ by switches (biases, q/k norms, extra norms, which layers slide,
which layers are MoE), read from each family's own config fields.
"""

from typing import Any

from kvplan.families.blocks import (
    attention_cache, attention_linears, core_dims, experts_block, gated_mlp, layer_types, llama_tail, moe_layer, rms,
    sliding_window,
)
from kvplan.spec import Component, DecoderLayer, Linear


def build_llama_like(r, model_type: str) -> dict[str, Any]:
    """llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, gemma*, phi3 and the generic decoder."""
    h, n_layers, nq, nkv, hd = core_dims(r)
    vocab = r.int("vocab_size")
    gemma = model_type.startswith("gemma")
    qwen = model_type.startswith("qwen")

    # Which layers slide: layer_types when given, else each family's own rule.
    window = sliding_window(r)
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
    elif model_type == "ministral" and "sliding_window" not in r.cfg:
        # MinistralConfig defaults sliding_window to 4096 (an explicit null means no window).
        window = r.int("sliding_window", 4096, why="transformers' MinistralConfig default")
        default = ["sliding_attention"] * n_layers
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
                made[key] = moe_layer(cache, attn, norms, h, experts, mlp)
            else:
                made[key] = DecoderLayer(cache=cache, attention=attn, mlp=gated_mlp(h, inter, bias=mlp_bias),
                                         norms=norms)
        layers.append(made[key])
    return llama_tail(r, h=h, n_layers=n_layers, nq=nq, nkv=nkv, hd=hd, vocab=vocab, layers=layers, tie_default=gemma)


MODEL_TYPES = {
    "llama": build_llama_like,
    "mistral": build_llama_like,
    # Ministral (transformers MinistralConfig) is Mistral reading layer_types; Ministral-3 (the
    # Ministral 3 / Mistral-3 text tower, Ministral3Config) is Mistral with YaRN RoPE: no size diff.
    "ministral": build_llama_like,
    "ministral3": build_llama_like,
    "mixtral": build_llama_like,
    "qwen2": build_llama_like,
    "qwen2_moe": build_llama_like,
    "qwen3": build_llama_like,
    "qwen3_moe": build_llama_like,
    "gemma": build_llama_like,
    "gemma2": build_llama_like,
    "gemma3_text": build_llama_like,
    "phi3": build_llama_like,
}
