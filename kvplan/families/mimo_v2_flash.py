"""MiMo-V2-Flash (``mimo_v2_flash``): hybrid sliding-window / full attention with K and V of different
head sizes, attention sinks on the sliding layers, DeepSeek-style routed experts (no shared expert).

transformers 5.23 (``modeling_mimo_v2_flash.py``): every layer has q [nq x head_dim, h], k [nkv_l x
head_dim, h], v [nkv_l x v_head_dim, h], o [h, nq x v_head_dim]; sliding layers have twice the KV heads
(``num_key_value_heads * 2``) and a per-head sink [nq]; MoE layers a router [E, h] (its score
correction bias is a buffer) and experts gate_up [E, 2 x moe_intermediate_size, h], down
[E, h, moe_intermediate_size]; the dense layers a SwiGLU MLP of ``intermediate_size``.

Which layers slide: ``layer_types``, else the checkpoint's ``hybrid_layer_pattern`` (1 = sliding, as
vLLM's ``is_compressed_softmax_layer`` reads it), else transformers' default (full at layer 0 and every
6th). Which layers are MoE: ``mlp_layer_types``, else ``moe_layer_freq`` (vLLM ``is_moe_layer``), else
dense first, sparse after.

The window differs by one between the two: vLLM (``vllm/model_executor/models/mimo_v2_flash.py``)
passes ``per_layer_sliding_window = sliding_window_size`` (128) to its attention, hence a
``SlidingWindowSpec`` of 128; transformers' config sets ``sliding_window = sliding_window_size + 1``
(129) and its ``DynamicSlidingWindowLayer`` keeps window - 1 = 128 tokens. vLLM reads the sliding
layers' shape from ``swa_num_attention_heads`` / ``swa_num_key_value_heads`` / ``swa_head_dim`` /
``swa_v_head_dim``; where one disagrees with transformers' derivation the config is refused (the two
would build different weights).

Worked number: XiaomiMiMo/MiMo-V2-Flash, full layers cache 4 x (192 + 128) = 1280 elements per token,
sliding layers 8 x (192 + 128) = 2560 for at most 128 tokens.
"""

from typing import Any

from kvplan.errors import ConfigError
from kvplan.families.blocks import attention_cache, core_dims, fused_experts, gated_mlp, layer_types, llama_tail, rms
from kvplan.layers import SlidingWindowAttention
from kvplan.spec import DecoderLayer, Linear, Tensor


def _pattern(r, key: str, n_layers: int, names: tuple[str, str]) -> list[str] | None:
    """A 0/1 per-layer list (``hybrid_layer_pattern``, ``moe_layer_freq``) as names[0] / names[1]."""
    values = r.int_list(key)
    if values is None:
        return None
    if len(values) != n_layers or set(values) - {0, 1}:
        raise ConfigError(r._name(key), f"must list 0 or 1 for each of the {n_layers} layers")
    return [names[v] for v in values]


def _agree(r, key: str, want: int, what: str) -> None:
    if r.has(key) and r.int(key) != want:
        raise ConfigError(r._name(key), f"{r.int(key)} differs from {what} = {want}, which transformers builds every "
                                        "sliding layer with; such a checkpoint is not modelled")


def build_mimo_v2_flash(r, model_type: str) -> dict[str, Any]:
    """MiMo-V2-Flash (see the module docstring)."""
    h, n_layers, nq, nkv, hd = core_dims(r, kv_default=4)
    vocab = r.int("vocab_size")
    vhd = r.int("v_head_dim", 128, why="transformers' MiMoV2FlashConfig default")
    hybrid = _pattern(r, "hybrid_layer_pattern", n_layers, ("full_attention", "sliding_attention"))
    default = hybrid or ["full_attention" if i == 0 or (i + 1) % 6 == 0 else "sliding_attention"
                         for i in range(n_layers)]
    kinds = layer_types(r, n_layers, default)
    bad = sorted(set(kinds) - {"sliding_attention", "full_attention"})
    if bad:
        raise ConfigError(r._name("layer_types"), f"MiMo-V2-Flash layers are sliding or full attention, got {bad}")
    swa_nkv = 2 * nkv
    _agree(r, "swa_num_key_value_heads", swa_nkv, "2 x num_key_value_heads")
    _agree(r, "swa_num_attention_heads", nq, "num_attention_heads")
    _agree(r, "swa_head_dim", hd, "head_dim")
    _agree(r, "swa_v_head_dim", vhd, "v_head_dim")
    if r.has("sliding_window_size"):
        window = r.int("sliding_window_size")
        hf_window = window + 1
        r.assumptions.append(f"transformers window = sliding_window_size + 1 = {hf_window} (MiMoV2FlashConfig)")
    else:
        hf_window = window = r.int("sliding_window", 129, why="transformers' MiMoV2FlashConfig default")
    mlp_types = r.str_list("mlp_layer_types") or _pattern(r, "moe_layer_freq", n_layers, ("dense", "sparse")) or (
        ["dense"] + ["sparse"] * (n_layers - 1))
    if len(mlp_types) != n_layers or set(mlp_types) - {"dense", "sparse"}:
        raise ConfigError(r._name("mlp_layer_types"), f"must be 'dense' or 'sparse' for each of the {n_layers} layers")
    bias = r.bool("attention_bias", False)
    experts = None
    if "sparse" in mlp_types:
        n = r.int("n_routed_experts", 256, why="transformers' default")
        k = r.int("num_experts_per_tok", 8, why="transformers' default")
        if k > n:
            raise ConfigError(r._name("num_experts_per_tok"), f"{k} experts per token but only {n} experts")
        if r.int("n_shared_experts", 0, minimum=0) if r.has("n_shared_experts") else 0:
            raise ConfigError(r._name("n_shared_experts"), "MiMo-V2-Flash has no shared experts (transformers "
                                                           "MiMoV2FlashMoE); a config with them is not modelled")
        mi = r.int("moe_intermediate_size", 2048, why="transformers' default")
        experts = fused_experts(n, k, h, mi)
    inter = r.int("intermediate_size") if "dense" in mlp_types else 0
    norms = (rms("input_layernorm", h), rms("post_attention_layernorm", h))
    made: dict[tuple[str, str], DecoderLayer] = {}
    layers = []
    for i, kind in enumerate(kinds):
        key = (kind, mlp_types[i])
        if key not in made:
            sliding = kind == "sliding_attention"
            layer_nkv = swa_nkv if sliding else nkv
            if nq % layer_nkv:
                raise ConfigError(r._name("num_key_value_heads"), f"{layer_nkv} KV heads must divide {nq} query heads")
            attn = (Linear(name="q_proj", in_features=h, out_features=nq * hd, bias=bias),
                    Linear(name="k_proj", in_features=h, out_features=layer_nkv * hd, bias=bias),
                    Linear(name="v_proj", in_features=h, out_features=layer_nkv * vhd, bias=bias),
                    Linear(name="o_proj", in_features=nq * vhd, out_features=h, shard="row"))
            if sliding:
                attn += (Tensor(name="sinks", numel=nq, shard="column"),)
                cache = SlidingWindowAttention(num_key_value_heads=layer_nkv, head_dim=hd, v_head_dim=vhd,
                                               sliding_window=window,
                                               transformers_sliding_window=hf_window if hf_window != window else None)
            else:
                cache = attention_cache(kind, layer_nkv, hd, None, None, vhd)
            if mlp_types[i] == "sparse":
                made[key] = DecoderLayer(cache=cache, attention=attn, experts=experts, norms=norms, router=(
                    Linear(name="router", in_features=h, out_features=experts.num_experts, shard="replicated",
                           quantizable=False),))
            else:
                made[key] = DecoderLayer(cache=cache, attention=attn, mlp=gated_mlp(h, inter), norms=norms)
        layers.append(made[key])
    # Read so the generic refusal's audit sees them: they size nothing here.
    for key in ("attention_value_scale", "add_swa_attention_sink_bias", "add_full_attention_sink_bias",
                "attention_chunk_size", "swa_rope_theta", "n_group", "topk_group"):
        r.get(key)
    return llama_tail(r, h=h, n_layers=n_layers, nq=nq, nkv=nkv, hd=hd, vocab=vocab, layers=layers)


MODEL_TYPES = {
    "mimo_v2_flash": build_mimo_v2_flash,
}
