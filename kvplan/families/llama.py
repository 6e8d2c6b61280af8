"""Llama-style decoders: llama, mistral (ministral, ministral3), mixtral, qwen2/qwen2-moe, qwen3/qwen3-moe,
gemma 1-3, phi3.

One builder: the families differ by switches (biases, q/k norms, extra norms, which layers slide,
which layers are MoE), read from each family's own config fields.
"""

import math
from typing import Any

from kvplan.errors import ConfigError
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
    fields = llama_tail(r, h=h, n_layers=n_layers, nq=nq, nkv=nkv, hd=hd, vocab=vocab, layers=layers, tie_default=gemma)
    if model_type in ("gemma3_text", "gemma3") and fields["max_position_embeddings"]:
        fields["rope_cache_elements"] = gemma3_rope_cache_elements(r, kinds, hd, fields["max_position_embeddings"])
    elif fields["max_position_embeddings"]:
        fields["rope_cache_elements"] = rope_cache_elements(r, hd, fields["max_position_embeddings"])
    return fields


def rope_cache_elements(r, hd: int, max_pos: int) -> int:
    """Elements of the one rotary cos/sin cache vLLM builds for a llama-style decoder (vllm/model_executor/models/
    llama.py and kin: get_rope(head_dim, max_position=config.max_position_embeddings, rope_parameters)), as
    rows x rotary_dim, rotary_dim = head_dim x partial_rotary_factor (rotary_embedding/__init__.py get_rope):
    default / llama3: max_position rows (base.py, llama3_rope.py); linear: max_position x factor
    (linear_scaling_rope.py); yarn: original_max_position_embeddings x factor (yarn_scaling_rope.py). Other rope types
    (dynamic, longrope, dual-chunk, mrope) are not modeled: 0. Worked number: Llama-3.1-8B, 131,072 positions x 128
    = 16,777,216 elements = 32 MiB in bf16 ("Model loading took 14.99 GiB" = 14.96 of parameters + 0.03)."""
    if r.has("dual_chunk_attention_config"):
        return 0
    scaling = r.raw("rope_scaling")
    if scaling is None and isinstance(r.raw("rope_parameters"), dict):
        scaling = r.raw("rope_parameters")  # transformers 5 writes rope_parameters
    kind = "default"
    if isinstance(scaling, dict):
        kind = scaling.get("rope_type", scaling.get("type", "default"))
    partial = r.raw("partial_rotary_factor")
    if isinstance(scaling, dict) and "partial_rotary_factor" in scaling:
        partial = scaling["partial_rotary_factor"]
    partial = 1.0 if partial is None else partial
    if isinstance(partial, bool) or not isinstance(partial, (int, float)) or not 0 < partial <= 1:
        raise ConfigError(r._name("partial_rotary_factor"), f"must be a number in (0, 1], got {partial!r}")
    rotary = int(hd * partial)

    def factor() -> float:
        f = scaling.get("factor")
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 < f <= 1024:
            raise ConfigError(r._name("rope_scaling"), f"a {kind} rope factor must be a number in (0, 1024], got {f!r}")
        return f

    if kind in ("default", "llama3"):
        rows = max_pos
    elif kind == "linear":
        rows = math.ceil(max_pos * factor())
    elif kind == "yarn":
        orig = scaling.get("original_max_position_embeddings", max_pos)
        if isinstance(orig, bool) or not isinstance(orig, int) or orig < 1:
            raise ConfigError(r._name("rope_scaling"), f"original_max_position_embeddings must be a whole number "
                              f">= 1, got {orig!r}")
        rows = math.ceil(orig * factor())
    else:
        return 0
    return rows * rotary


def gemma3_rope_cache_elements(r, kinds: list[str], hd: int, max_pos: int) -> int:
    """Elements of the rotary cos/sin caches vLLM builds for Gemma-3 (vllm/model_executor/models/gemma3.py:
    ``get_rope(head_dim, max_position=config.max_position_embeddings, rope_parameters[layer_type])`` per layer
    kind; rotary_embedding/base.py caches [max_position, rotary_dim] in the model dtype, linear_scaling_rope.py
    [max_position x factor, rotary_dim]). Sliding layers: the default rope (rope_local_base_freq); full layers:
    ``rope_scaling`` (linear, factor 8 in Gemma-3 4B-27B). Worked number: Gemma-3-27B, head_dim 128, 131,072
    positions: 131,072 x 128 + 1,048,576 x 128 = 150,994,944 elements = 0.28 GiB in bf16."""
    factor = 1.0
    scaling = r.raw("rope_scaling")
    params = r.raw("rope_parameters")
    if isinstance(params, dict) and isinstance(params.get("full_attention"), dict):
        scaling = params["full_attention"]  # transformers 5 layout: one rope per layer type
    if isinstance(scaling, dict) and scaling.get("rope_type", scaling.get("type")) == "linear":
        factor = scaling.get("factor")
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= 1024:
            raise ConfigError(r._name("rope_scaling"), f"a linear rope factor must be a number in (0, 1024], got {factor!r}")
    rows = set()
    if "sliding_attention" in kinds:
        rows.add(("local", max_pos))
    if "full_attention" in kinds:
        rows.add(("global", math.ceil(max_pos * factor)))
    return sum(n for _, n in rows) * hd


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
