"""Gemma-4 text decoder (``gemma4_text``; the ``gemma4`` wrapper's text tower): Gemma-3's sandwich layer
with per-kind attention geometry, optional K = V on full layers, KV sharing, per-layer embeddings and an
optional MoE block beside the dense MLP.

The diff from Gemma-3 (transformers 5.23 ``modeling_gemma4.py`` / ``configuration_gemma4.py``):

- full-attention layers have their own head size ``global_head_dim`` (512 unless given) and, only when
  ``attention_k_eq_v`` is set, their own KV-head count ``num_global_key_value_heads``
  (``Gemma4TextConfig.__post_init__`` builds ``per_layer_config`` from them; a config saved by
  transformers >= 5.23 carries that ``per_layer_config`` instead, read here as written);
- ``attention_k_eq_v``: full layers have no ``v_proj`` (values are the keys), but both K and V are
  cached (``Gemma4TextAttention.forward`` passes the same projection through ``v_norm``);
- ``v_norm`` is an RMSNorm without a weight; ``layer_scalar`` is a buffer (no parameters);
- KV sharing: the last ``num_kv_shared_layers`` layers reuse the K/V of the last earlier layer of
  their kind. They have no k/v projections or norms and keep no cache of their own: transformers
  puts a ``DummyLayer`` in their slot (``cache_utils.get_layer_types_and_kwargs``); vLLM's
  ``Gemma4Attention`` (vllm/model_executor/models/gemma4.py) gives them a
  ``kv_sharing_target_layer_name`` and ``GPUModelRunner.get_kv_cache_spec`` skips such layers
  ("doesn't allocate KV cache for the layer"), so they join no KV-cache group;
  ``use_double_wide_mlp`` doubles their MLP width;
- per-layer embeddings (PLE) when ``hidden_size_per_layer_input`` > 0: one packed table
  [vocab_size_per_layer_input, L x ple], a projection [L x ple, h] and its norm, and per layer a gate
  [ple, h], a projection [h, ple] and a norm;
- ``enable_moe_block``: a router (proj [E, h], scale [h], per_expert_scale [E]), experts gate_up
  [E, 2 x moe_intermediate_size, h] and down [E, h, moe_intermediate_size], three more norms; the
  dense MLP stays.

Worked number: google/gemma-4-26B-A4B, full layers cache 2 KV heads x (512 + 512) = 2048 elements per
token against the sliding layers' 8 x (256 + 256) = 4096.
"""

from typing import Any

from kvplan.errors import ConfigError
from kvplan.families.blocks import (
    attention_cache, core_dims, embed, fused_experts, gated_mlp, layer_types, llama_tail, rms,
)
from kvplan.layers import NoCache
from kvplan.spec import DecoderLayer, Linear, RopeCache, Tensor

# Keys a per_layer_config entry may carry: the two that size a layer, and RoPE settings (no size).
_PER_LAYER_SIZED = ("head_dim", "num_key_value_heads")
_PER_LAYER_HARMLESS = ("rope_parameters", "rope_theta", "partial_rotary_factor", "rope_type")


def kv_sharing_modes(r, kinds: list[str], shared: int) -> list[str | None]:
    """transformers' ``kv_sharing_modes``: None, or "reuse" for the last ``shared`` layers.

    Every kind that a reusing layer has must be produced by an earlier, non-reusing layer
    (transformers raises otherwise).
    """
    n = len(kinds)
    if shared == 0:
        return [None] * n
    if shared >= n:
        raise ConfigError(r._name("num_kv_shared_layers"), f"{shared} must be less than num_hidden_layers ({n})")
    first = n - shared
    if set(kinds[:first]) != set(kinds):
        raise ConfigError(r._name("num_kv_shared_layers"),
                          f"{shared}: the shared layers include a kind no earlier layer produces "
                          f"(layer_types before layer {first}: {sorted(set(kinds[:first]))})")
    return [None if i < first else "reuse" for i in range(n)]


def gemma_layer_types(r, n_layers: int, pattern: int) -> list[str]:
    """``layer_types``, else full every ``pattern``-th layer; the last layer is always full
    (``Gemma4TextConfig.__post_init__`` forces it, with a warning)."""
    default = ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n_layers)]
    kinds = list(layer_types(r, n_layers, default))
    bad = sorted(set(kinds) - {"sliding_attention", "full_attention"})
    if bad:
        raise ConfigError(r._name("layer_types"), f"Gemma-4 layers are sliding_attention or full_attention, got {bad}")
    if kinds[-1] != "full_attention":
        kinds[-1] = "full_attention"
        r.assumptions.append(f"{r._name('layer_types')}[-1] = full_attention (transformers forces the last layer full)")
    return kinds


def _per_layer_overrides(r, n_layers: int) -> dict[int, dict[str, int]] | None:
    """``per_layer_config`` as written (keys are layer indices, as strings in JSON), or None."""
    raw = r.raw("per_layer_config")
    if raw is None:
        return None
    name = r._name("per_layer_config")
    if not isinstance(raw, dict):
        raise ConfigError(name, "must be an object mapping layer indices to overrides")
    out: dict[int, dict[str, int]] = {}
    for key, overrides in raw.items():
        try:
            idx = int(key)
        except (TypeError, ValueError):
            raise ConfigError(name, f"key {key!r} is not a layer index") from None
        if not 0 <= idx < n_layers or not isinstance(overrides, dict):
            raise ConfigError(name, f"entry {key!r}: needs a layer index below {n_layers} and an object of overrides")
        unknown = sorted(set(overrides) - set(_PER_LAYER_SIZED) - set(_PER_LAYER_HARMLESS))
        if unknown:
            raise ConfigError(f"{name}.{key}", f"overrides {unknown} are not modelled; allowed: {list(_PER_LAYER_SIZED)}")
        out[idx] = {k: r.check_int(k, overrides[k]) for k in _PER_LAYER_SIZED if overrides.get(k) is not None}
    return out


def attention_geometry(r, kinds: list[str], nkv: int, hd: int) -> list[tuple[int, int]]:
    """(KV heads, head size) of each layer: the sliding geometry, full layers' override."""
    overrides = _per_layer_overrides(r, len(kinds))
    if overrides is not None:
        return [(overrides.get(i, {}).get("num_key_value_heads", nkv), overrides.get(i, {}).get("head_dim", hd))
                for i in range(len(kinds))]
    global_hd = r.int("global_head_dim", 512, why="transformers' Gemma4TextConfig default")
    global_nkv = nkv
    if r.bool("attention_k_eq_v", False) and r.has("num_global_key_value_heads"):
        global_nkv = r.int("num_global_key_value_heads")
    return [(global_nkv, global_hd) if k == "full_attention" else (nkv, hd) for k in kinds]


def gemma4_rope_caches(r, kinds: list[str], geometry: list[tuple[int, int]], max_pos: int) -> tuple:
    """vLLM's rotary tables for Gemma-4 (vllm/model_executor/models/gemma4.py: ``get_rope(head_dim,
    max_position=config.max_position_embeddings, rope_parameters[layer_type])`` per layer kind, one table per
    distinct rope; sized by ``kvplan.vllm_layouts.vllm_rope_cache_bytes``): "proportional" (Gemma4RotaryEmbedding,
    rotary_embedding/gemma4_rope.py) keeps the whole head as its rotary_dim, "default" head_dim x
    partial_rotary_factor. Worked number: Gemma-4-26B-A4B, 262,144 positions: 262,144 x 256 (sliding) + 262,144 x 512
    (full, proportional) = 201,326,592 elements = 0.375 GiB in bf16."""
    params = r.raw("rope_parameters")
    tables, seen = [], set()
    for kind, (_nkv, hd) in zip(kinds, geometry):
        if (kind, hd) in seen:
            continue
        seen.add((kind, hd))
        rope = params.get(kind) if isinstance(params, dict) and isinstance(params.get(kind), dict) else {}
        factor = rope.get("partial_rotary_factor", 1.0)
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= 1:
            raise ConfigError(r._name("rope_parameters"), f"partial_rotary_factor must be in (0, 1], got {factor!r}")
        rotary = hd if rope.get("rope_type") == "proportional" else int(hd * factor)
        tables.append(RopeCache(name=kind, rotary_dim=rotary, max_position=max_pos,
                                rope_type=str(rope.get("rope_type") or "default"), layer_types=(kind,)))
    return tuple(tables)


def ple_model_parts(r, h: int, n_layers: int, vocab: int) -> tuple[int, list, list]:
    """(ple width, model-level embeddings, model-level other) of the per-layer-embedding system."""
    ple = r.int("hidden_size_per_layer_input", 256, why="transformers' default", minimum=0)
    if not ple:
        return 0, [], []
    vocab_ple = r.int("vocab_size_per_layer_input", 262_144, why="transformers' default")
    table = Linear(name="embed_tokens_per_layer", in_features=n_layers * ple, out_features=vocab_ple, shard="vocab",
                   quantizable=False)
    projection = (Linear(name="per_layer_model_projection", in_features=h, out_features=n_layers * ple,
                         shard="replicated"), rms("per_layer_projection_norm", ple))
    return ple, [table], list(projection)


def ple_layer_parts(h: int, ple: int) -> tuple:
    """Per decoder layer: gate [ple, h], projection [h, ple] and the norm after it."""
    if not ple:
        return ()
    return (Linear(name="per_layer_input_gate", in_features=h, out_features=ple, shard="replicated"),
            Linear(name="per_layer_projection", in_features=ple, out_features=h, shard="replicated"),
            rms("post_per_layer_input_norm", h))


def build_gemma4(r, model_type: str) -> dict[str, Any]:
    """Gemma-4 text decoder (see the module docstring for every difference from Gemma-3).

    ``gemma4_unified_text`` (Gemma4UnifiedTextConfig) is the same decoder without per-layer embeddings
    or the MoE block (its config class has neither field) and a 1024-token default window.
    """
    unified = model_type == "gemma4_unified_text"
    h, n_layers, nq, nkv, hd = core_dims(r, kv_default=4)
    vocab = r.int("vocab_size")
    kinds = gemma_layer_types(r, n_layers, 6)
    window = r.int("sliding_window", 1024 if unified else 512, why="transformers' default")
    if r.raw("use_bidirectional_attention") == "all":  # Gemma4TextConfig.__post_init__: exclusive bounds
        window = window // 2 + 1
        r.assumptions.append(f"sliding window = {window} (use_bidirectional_attention = 'all': window // 2 + 1)")
    modes = kv_sharing_modes(r, kinds, r.int("num_kv_shared_layers", 0, minimum=0))
    geometry = attention_geometry(r, kinds, nkv, hd)
    k_eq_v = r.bool("attention_k_eq_v", False)
    bias = r.bool("attention_bias", False)
    inter = r.int("intermediate_size")
    double_wide = r.bool("use_double_wide_mlp", False)
    ple, ple_embed, ple_other = (0, [], []) if unified else ple_model_parts(r, h, n_layers, vocab)
    experts = moe_parts = None
    if not unified and r.bool("enable_moe_block", False):
        n_exp = r.int("num_experts")
        k = r.int("top_k_experts")
        if k > n_exp:
            raise ConfigError(r._name("top_k_experts"), f"{k} experts per token but only {n_exp} experts")
        mi = r.int("moe_intermediate_size")
        experts = fused_experts(n_exp, k, h, mi)
        moe_parts = ((Linear(name="router.proj", in_features=h, out_features=n_exp, shard="replicated",
                             quantizable=False),
                      Tensor(name="router.scale", numel=h), Tensor(name="router.per_expert_scale", numel=n_exp)),
                     (rms("post_feedforward_layernorm_1", h), rms("post_feedforward_layernorm_2", h),
                      rms("pre_feedforward_layernorm_2", h)))
    base_norms = tuple(rms(n, h) for n in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                                           "post_feedforward_layernorm"))
    made: dict[tuple, DecoderLayer] = {}
    layers = []
    for i, kind in enumerate(kinds):
        layer_nkv, layer_hd = geometry[i]
        reuse = modes[i] == "reuse"
        key = (kind, layer_nkv, layer_hd, reuse)
        if key not in made:
            if nq % layer_nkv:
                raise ConfigError(r._name("num_global_key_value_heads" if kind == "full_attention" else
                                          "num_key_value_heads"),
                                  f"{layer_nkv} KV heads must divide num_attention_heads ({nq})")
            attn = [Linear(name="q_proj", in_features=h, out_features=nq * layer_hd, bias=bias),
                    rms("q_norm", layer_hd)]
            if not reuse:  # KV-sharing layers have neither k/v projections nor k_norm (v_norm has no weight)
                attn += [rms("k_norm", layer_hd),
                         Linear(name="k_proj", in_features=h, out_features=layer_nkv * layer_hd, bias=bias)]
                if not (k_eq_v and kind == "full_attention"):
                    attn.append(Linear(name="v_proj", in_features=h, out_features=layer_nkv * layer_hd, bias=bias))
            attn.append(Linear(name="o_proj", in_features=nq * layer_hd, out_features=h, bias=bias, shard="row"))
            cache = NoCache() if reuse else attention_cache(kind, layer_nkv, layer_hd, window, None)
            mlp = gated_mlp(h, inter * (2 if double_wide and reuse else 1))
            norms = base_norms + (moe_parts[1] if moe_parts else ())
            made[key] = DecoderLayer(cache=cache, attention=tuple(attn), mlp=mlp, experts=experts,
                                     router=moe_parts[0] if moe_parts else (), norms=norms,
                                     other=ple_layer_parts(h, ple))
        layers.append(made[key])
    shared = sum(1 for m in modes if m == "reuse")
    fields = llama_tail(r, h=h, n_layers=n_layers, nq=nq, nkv=nkv, hd=hd, vocab=vocab, layers=layers, tie_default=True,
                        embeddings=[embed(vocab, h)] + ple_embed)
    fields["other"] = tuple(ple_other)
    # vLLM's Gemma4ModelArchConfigConvertor.is_mm_prefix_lm: text_config use_bidirectional_attention == "vision"
    fields["mm_prefix_lm"] = r.raw("use_bidirectional_attention") == "vision"
    if fields["max_position_embeddings"]:
        fields["rope_caches"] = gemma4_rope_caches(r, kinds, geometry, fields["max_position_embeddings"])
    if shared:
        fields["warnings"] = ((f"the last {shared} layers reuse earlier layers' K/V (num_kv_shared_layers): "
                               "they keep no cache of their own"),)
    return fields


MODEL_TYPES = {
    "gemma4_text": build_gemma4,
    "gemma4_unified_text": build_gemma4,
}
