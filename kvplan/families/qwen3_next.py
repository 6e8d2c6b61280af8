"""Qwen3-Next: gated-DeltaNet (linear attention) layers and gated full attention, MoE.
"""

from typing import Any

from kvplan.families.blocks import (
    attention_linears,
    core_dims,
    embed,
    experts_block,
    gated_mlp,
    layer_types,
    lm_head,
    rms,
    router,
    spec_fields,
)
from kvplan.layers import FullAttention, LinearAttentionState
from kvplan.spec import DecoderLayer, Linear, Norm, Tensor


def build_qwen3_next(r, model_type: str) -> dict[str, Any]:
    """Qwen3-Next: 3 gated-DeltaNet (linear attention) layers per gated full-attention layer, MoE."""
    h, n_layers, nq, nkv, hd = core_dims(r)
    vocab = r.int("vocab_size")
    interval = r.int("full_attention_interval", 4)
    kinds = layer_types(r, n_layers, ["linear_attention" if (i + 1) % interval else "full_attention"
                                      for i in range(n_layers)])
    hk, dk = r.int("linear_num_key_heads"), r.int("linear_key_head_dim")
    hv, dv = r.int("linear_num_value_heads"), r.int("linear_value_head_dim")
    kernel = r.int("linear_conv_kernel_dim", 4)
    state = LinearAttentionState(num_key_heads=hk, key_head_dim=dk, num_value_heads=hv, value_head_dim=dv,
                                 conv_kernel=kernel)
    linear_attn = (
        Linear(name="in_proj_qkvz", in_features=h, out_features=2 * hk * dk + 2 * hv * dv),
        Linear(name="in_proj_ba", in_features=h, out_features=2 * hv),
        Tensor(name="conv1d", numel=state.conv_dim * kernel, shard="column"),
        Tensor(name="dt_bias+A_log", numel=2 * hv, shard="column"),
        Norm(name="norm", dim=dv),
        Linear(name="out_proj", in_features=hv * dv, out_features=h, shard="row"),
    )
    bias = r.bool("attention_bias", False)
    # Gated attention: q_proj also produces the output gate, hence 2 x heads x head_dim.
    full_attn = (Linear(name="q_proj", in_features=h, out_features=2 * nq * hd, bias=bias),) + attention_linears(
        h, nq, nkv, hd, qkv_bias=bias, o_bias=bias)[1:] + (rms("q_norm", hd), rms("k_norm", hd))
    experts = experts_block(r, h, r.int("moe_intermediate_size"), "num_experts", "num_experts_per_tok")
    n = experts.num_experts
    shared = gated_mlp(h, r.int("shared_expert_intermediate_size"), prefix="shared_expert.") + (
        Linear(name="shared_expert_gate", in_features=h, out_features=1, shard="replicated", quantizable=False),)
    step = r.int("decoder_sparse_step", 1)
    mlp_only = set(r.int_list("mlp_only_layers") or [])
    norms = (rms("input_layernorm", h), rms("post_attention_layernorm", h))
    full = FullAttention(num_key_value_heads=nkv, head_dim=hd, v_head_dim=hd)
    made: dict[tuple[str, bool], DecoderLayer] = {}
    layers = []
    for i, kind in enumerate(kinds):
        key = (kind, i not in mlp_only and n > 0 and (i + 1) % step == 0)
        if key not in made:
            cache, attn = (state, linear_attn) if kind == "linear_attention" else (full, full_attn)
            if key[1]:
                made[key] = DecoderLayer(cache=cache, attention=attn, mlp=shared, experts=experts,
                                         router=router(h, n), norms=norms)
            else:
                made[key] = DecoderLayer(cache=cache, attention=attn, mlp=gated_mlp(h, r.int("intermediate_size")),
                                         norms=norms)
        layers.append(made[key])
    head, tied = lm_head(r, vocab, h, tie_default=False)
    return spec_fields(r, h=h, n_layers=n_layers, nq=nq, nkv=nkv, hd=hd, vocab=vocab, embeddings=[embed(vocab, h)],
                       layers=layers, final_norm=[rms("norm", h)], head=head, tied=tied)


MODEL_TYPES = {
    "qwen3_next": build_qwen3_next,
}
