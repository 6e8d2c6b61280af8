"""Qwen3-Next and its Qwen3.5 / Qwen3.6 children: gated-DeltaNet (linear attention) layers and
gated full attention.

Qwen3.5 (transformers ``modular_qwen3_5.py``, ``modular_qwen3_5_moe.py``) is Qwen3-Next with:
- the DeltaNet input projection split four ways, ``in_proj_qkv`` [2 hk dk + hv dv, h],
  ``in_proj_z`` [hv dv, h], ``in_proj_b`` and ``in_proj_a`` [hv, h] (the same parameters as
  Qwen3-Next's fused ``in_proj_qkvz`` + ``in_proj_ba``);
- dense (``qwen3_5_text``): a SwiGLU MLP of ``intermediate_size`` on every layer, no experts;
- MoE (``qwen3_5_moe_text``): experts + shared expert on every layer. Its config class deletes
  ``intermediate_size``, ``mlp_only_layers`` and ``decoder_sparse_step``, so none is read here.
- ``mamba_ssm_dtype`` (the real files say float32): vLLM's Qwen3.5 config hook makes it the
  recurrent-state dtype (vllm/model_executor/models/config.py,
  ``Qwen3_5ForConditionalGenerationConfig``); transformers keeps fp32 regardless.
The released checkpoints are multimodal wrappers (model_type ``qwen3_5`` / ``qwen3_5_moe`` with
``text_config`` and ``vision_config``); ``hf_config.text_decoder_config`` unwraps them.
"""

from typing import Any

from kvplan.families.blocks import (
    attention_linears, core_dims, experts_block, gated_mlp, layer_types, llama_tail, moe_layer, rms, state_dtype_bytes,
)
from kvplan.layers import FullAttention, LinearAttentionState
from kvplan.spec import DecoderLayer, Linear, Norm, Tensor


def build_qwen3_next(r, model_type: str) -> dict[str, Any]:
    """Qwen3-Next (MoE), Qwen3.5 dense and Qwen3.5 MoE: 3 gated-DeltaNet layers per gated
    full-attention layer (``full_attention_interval`` 4, or ``layer_types``)."""
    qwen35 = model_type.startswith("qwen3_5")
    h, n_layers, nq, nkv, hd = core_dims(r)
    vocab = r.int("vocab_size")
    interval = r.int("full_attention_interval", 4)
    kinds = layer_types(r, n_layers, ["linear_attention" if (i + 1) % interval else "full_attention"
                                      for i in range(n_layers)])
    hk, dk = r.int("linear_num_key_heads"), r.int("linear_key_head_dim")
    hv, dv = r.int("linear_num_value_heads"), r.int("linear_value_head_dim")
    kernel = r.int("linear_conv_kernel_dim", 4)
    state = LinearAttentionState(num_key_heads=hk, key_head_dim=dk, num_value_heads=hv, value_head_dim=dv,
                                 conv_kernel=kernel,
                                 vllm_ssm_dtype_bytes=state_dtype_bytes(r, "mamba_ssm_dtype") if qwen35 else None)
    if qwen35:
        projections = (
            Linear(name="in_proj_qkv", in_features=h, out_features=2 * hk * dk + hv * dv),
            Linear(name="in_proj_z", in_features=h, out_features=hv * dv),
            Linear(name="in_proj_b", in_features=h, out_features=hv),
            Linear(name="in_proj_a", in_features=h, out_features=hv),
        )
    else:
        projections = (
            Linear(name="in_proj_qkvz", in_features=h, out_features=2 * hk * dk + 2 * hv * dv),
            Linear(name="in_proj_ba", in_features=h, out_features=2 * hv),
        )
    linear_attn = projections + (
        Tensor(name="conv1d", numel=state.conv_dim * kernel, shard="column"),
        Tensor(name="dt_bias+A_log", numel=2 * hv, shard="column"),
        Norm(name="norm", dim=dv),
        Linear(name="out_proj", in_features=hv * dv, out_features=h, shard="row"),
    )
    bias = r.bool("attention_bias", False)
    # Gated attention: q_proj also produces the output gate, hence 2 x heads x head_dim.
    full_attn = (Linear(name="q_proj", in_features=h, out_features=2 * nq * hd, bias=bias),) + attention_linears(
        h, nq, nkv, hd, qkv_bias=bias, o_bias=bias)[1:] + (rms("q_norm", hd), rms("k_norm", hd))
    # Which layers are MoE: Qwen3-Next by decoder_sparse_step / mlp_only_layers; Qwen3.5 MoE all
    # of them; Qwen3.5 dense none.
    if not qwen35:
        experts = experts_block(r, h, r.int("moe_intermediate_size"), "num_experts", "num_experts_per_tok")
        step = r.int("decoder_sparse_step", 1)
        mlp_only = set(r.int_list("mlp_only_layers") or [])
        is_moe = [i not in mlp_only and experts.num_experts > 0 and (i + 1) % step == 0 for i in range(n_layers)]
    elif "moe" in model_type:
        experts = experts_block(r, h, r.int("moe_intermediate_size"), "num_experts", "num_experts_per_tok")
        is_moe = [True] * n_layers
    else:
        experts, is_moe = None, [False] * n_layers
    if any(is_moe):
        shared = gated_mlp(h, r.int("shared_expert_intermediate_size"), prefix="shared_expert.") + (
            Linear(name="shared_expert_gate", in_features=h, out_features=1, shard="replicated",
                   quantizable=False),)
    norms = (rms("input_layernorm", h), rms("post_attention_layernorm", h))
    full = FullAttention(num_key_value_heads=nkv, head_dim=hd, v_head_dim=hd)
    made: dict[tuple[str, bool], DecoderLayer] = {}
    layers = []
    for i, kind in enumerate(kinds):
        key = (kind, is_moe[i])
        if key not in made:
            cache, attn = (state, linear_attn) if kind == "linear_attention" else (full, full_attn)
            if key[1]:
                made[key] = moe_layer(cache, attn, norms, h, experts, shared)
            else:
                made[key] = DecoderLayer(cache=cache, attention=attn, mlp=gated_mlp(h, r.int("intermediate_size")),
                                         norms=norms)
        layers.append(made[key])
    return llama_tail(r, h=h, n_layers=n_layers, nq=nq, nkv=nkv, hd=hd, vocab=vocab, layers=layers)


MODEL_TYPES = {
    "qwen3_next": build_qwen3_next,
    "qwen3_5_text": build_qwen3_next,
    "qwen3_5_moe_text": build_qwen3_next,
    # Flat files (and old text_configs) that carry the wrapper's own model_type: the text decoder.
    "qwen3_5": build_qwen3_next,
    "qwen3_5_moe": build_qwen3_next,
}
