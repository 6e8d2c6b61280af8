"""Gemma-3n text decoder (``gemma3n_text``; the ``gemma3n`` wrapper's text tower).

The diff from Gemma-3 (transformers 5.23 ``modeling_gemma3n.py``):

- AltUp: ``altup_num_inputs`` (n) parallel copies of the hidden state. Per layer: correct_output_scale
  [h], correction_coefs [n, n], prediction_coefs [n^2, n], modality_router [n, h], router_norm [h];
  per model: altup_projections and altup_unembed_projections, (n - 1) x [h, h] each;
- Laurel: per layer linear_left [laurel_rank, h], linear_right [h, laurel_rank], post_laurel_norm [h];
- per-layer embeddings (always on): the packed table [vocab_size_per_layer_input, L x ple], a projection
  [L x ple, h] and its norm; per layer a gate [ple, h], a projection [h, ple] and a norm;
- ``intermediate_size`` may be a list (one width per layer);
- full attention every 5th layer unless ``layer_types`` says otherwise; no weight on ``v_norm``;
- KV sharing: the last ``num_kv_shared_layers`` (15 unless given) layers reuse the K/V of the last
  earlier layer of their kind, with no k/v projections or norms and no cache of their own (transformers
  ``DummyLayer``; vLLM's ``Gemma3nAttention`` in vllm/model_executor/models/gemma3n.py sets
  ``kv_sharing_target_layer_name`` for layers >= num_hidden_layers - num_kv_shared_layers and
  ``get_kv_cache_spec`` creates no spec for them);
- ``activation_sparsity_pattern``: a top-k on the gate activations, no size effect.

Worked number: google/gemma-3n-E4B, 35 layers of which 15 share: 20 layers cache, 4 of them full
(layers 4, 9, 14, 19), 2 KV heads x (256 + 256) = 1024 elements per token per caching layer.
"""

from typing import Any

from kvplan.errors import ConfigError
from kvplan.families.blocks import attention_cache, core_dims, embed, gated_mlp, layer_types, llama_tail, rms
from kvplan.families.gemma4 import kv_sharing_modes, ple_layer_parts
from kvplan.layers import NoCache
from kvplan.spec import DecoderLayer, Linear, Tensor


def _intermediate_sizes(r, n_layers: int) -> list[int]:
    raw = r.raw("intermediate_size")
    if isinstance(raw, list):
        if len(raw) != n_layers:
            raise ConfigError(r._name("intermediate_size"), f"has {len(raw)} entries but num_hidden_layers is {n_layers}")
        return [r.check_int("intermediate_size", v) for v in raw]
    return [r.int("intermediate_size")] * n_layers


def build_gemma3n(r, model_type: str) -> dict[str, Any]:
    """Gemma-3n text decoder (see the module docstring for every difference from Gemma-3)."""
    h, n_layers, nq, nkv, hd = core_dims(r, kv_default=2)
    vocab = r.int("vocab_size")
    # Gemma3nTextConfig: full every 5th layer; unlike Gemma-4 the last layer is not forced full.
    default = ["full_attention" if (i + 1) % 5 == 0 else "sliding_attention" for i in range(n_layers)]
    kinds = _layer_types(r, n_layers, default)
    window = r.int("sliding_window", 512, why="transformers' default")
    modes = kv_sharing_modes(r, kinds, r.int("num_kv_shared_layers", 15, why="transformers' default", minimum=0))
    inters = _intermediate_sizes(r, n_layers)
    bias = r.bool("attention_bias", False)
    n_alt = r.int("altup_num_inputs", 4, why="transformers' default")
    rank = r.int("laurel_rank", 64, why="transformers' default")
    ple = r.int("hidden_size_per_layer_input", 256, why="transformers' default")
    vocab_ple = r.int("vocab_size_per_layer_input", 262_144, why="transformers' default")
    altup = (Tensor(name="altup.correct_output_scale", numel=h),
             Linear(name="altup.correction_coefs", in_features=n_alt, out_features=n_alt, shard="replicated",
                    quantizable=False),
             Linear(name="altup.prediction_coefs", in_features=n_alt, out_features=n_alt * n_alt, shard="replicated",
                    quantizable=False),
             Linear(name="altup.modality_router", in_features=h, out_features=n_alt, shard="replicated",
                    quantizable=False),
             rms("altup.router_norm", h))
    laurel = (Linear(name="laurel.linear_left", in_features=h, out_features=rank, shard="replicated"),
              Linear(name="laurel.linear_right", in_features=rank, out_features=h, shard="replicated"),
              rms("laurel.post_laurel_norm", h))
    norms = tuple(rms(n, h) for n in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                                      "post_feedforward_layernorm"))
    made: dict[tuple, DecoderLayer] = {}
    layers = []
    for i, kind in enumerate(kinds):
        reuse = modes[i] == "reuse"
        key = (kind, reuse, inters[i])
        if key not in made:
            attn = [Linear(name="q_proj", in_features=h, out_features=nq * hd, bias=bias), rms("q_norm", hd)]
            if not reuse:  # KV-sharing layers: no k/v projections, no k_norm (v_norm never has a weight)
                attn += [Linear(name="k_proj", in_features=h, out_features=nkv * hd, bias=bias),
                         Linear(name="v_proj", in_features=h, out_features=nkv * hd, bias=bias), rms("k_norm", hd)]
            attn.append(Linear(name="o_proj", in_features=nq * hd, out_features=h, bias=bias, shard="row"))
            cache = NoCache() if reuse else attention_cache(kind, nkv, hd, window, None)
            made[key] = DecoderLayer(cache=cache, attention=tuple(attn), mlp=gated_mlp(h, inters[i]), norms=norms,
                                     other=altup + laurel + ple_layer_parts(h, ple))
        layers.append(made[key])
    table = Linear(name="embed_tokens_per_layer", in_features=n_layers * ple, out_features=vocab_ple, shard="vocab",
                   quantizable=False)
    other = [Linear(name="per_layer_model_projection", in_features=h, out_features=n_layers * ple, shard="replicated"),
             rms("per_layer_projection_norm", ple)]
    if n_alt > 1:
        other += [Linear(name=f"altup_{kind}projections", in_features=h, out_features=h, count=n_alt - 1,
                         shard="replicated") for kind in ("", "unembed_")]
    fields = llama_tail(r, h=h, n_layers=n_layers, nq=nq, nkv=nkv, hd=hd, vocab=vocab, layers=layers, tie_default=True,
                        embeddings=[embed(vocab, h), table])
    fields["other"] = tuple(other)
    r.get("activation_sparsity_pattern")  # read: a top-k on activations, sizes nothing
    shared = sum(1 for m in modes if m == "reuse")
    if shared:
        fields["warnings"] = ((f"the last {shared} layers reuse earlier layers' K/V (num_kv_shared_layers): "
                               "they keep no cache of their own"),)
    return fields


def _layer_types(r, n_layers: int, default: list[str]) -> list[str]:
    kinds = layer_types(r, n_layers, default)
    bad = sorted(set(kinds) - {"sliding_attention", "full_attention"})
    if bad:
        raise ConfigError(r._name("layer_types"), f"Gemma-3n layers are sliding_attention or full_attention, got {bad}")
    return kinds


MODEL_TYPES = {
    "gemma3n_text": build_gemma3n,
}
