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
All three ship ``mtp_num_hidden_layers`` multi-token-prediction layers (``mtp.*`` in the checkpoint), which
transformers does not build: kvplan builds them as ``mtp_layers`` / ``mtp_other`` (``mtp_fields``), loaded only for
vLLM's MTP speculative decoding.
"""

from typing import Any

from kvplan.families.blocks import (
    attention_linears, core_dims, experts_block, gated_mlp, layer_types, llama_tail, moe_layer, rms, state_dtype_bytes,
)
from kvplan.layers import FullAttention, LinearAttentionState
from kvplan.spec import DecoderLayer, Linear, Norm, Tensor
from kvplan.units import counted


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
    if any(is_moe) or (not qwen35 and experts.num_experts > 0):  # the MTP layer may be MoE too
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
    fields = llama_tail(r, h=h, n_layers=n_layers, nq=nq, nkv=nkv, hd=hd, vocab=vocab, layers=layers)

    def mtp_layer(j: int) -> DecoderLayer:  # Qwen3-Next decides MoE by the MTP layer's own index j ("mtp.layers.j")
        moe = "moe" in model_type if qwen35 else (j not in mlp_only and experts.num_experts > 0 and (j + 1) % step == 0)
        return made.get(("full_attention", moe)) or (
            moe_layer(full, full_attn, norms, h, experts, shared) if moe else
            DecoderLayer(cache=full, attention=full_attn, mlp=gated_mlp(h, r.int("intermediate_size")), norms=norms))
    fields.update(mtp_fields(r, h, mtp_layer))
    return fields


def mtp_fields(r, h: int, layer_at) -> dict[str, Any]:
    """The multi-token-prediction layers vLLM loads with ``--speculative-config '{"method": "mtp"}'`` (or
    "qwen3_next_mtp"; vllm/model_executor/models/qwen3_5_mtp.py ``Qwen3_5MultiTokenPredictor``, qwen3_next_mtp.py,
    read in the 0.20.0 and 0.29.0 wheels): ``mtp_num_hidden_layers`` (absent: none) full-attention decoder layers
    ``mtp.layers.{j}`` (``layer_at(j)``: the target's full-attention layer, MoE or dense as the target's), then once
    ``fc`` (ColumnParallelLinear 2h -> h, no bias, gather_output: its output split over TP) and three RMSNorms
    ``pre_fc_norm_embedding``, ``pre_fc_norm_hidden``, ``norm`` [h]. fc is priced 16-bit (``quantizable=False``): vLLM
    forces it unquantized under modelopt_fp4 (the NVFP4 checkpoints store it bf16, vllm PR #38650) and the FP8
    checkpoints list ``mtp.fc`` in ``modules_to_not_convert``. The draft's embed_tokens / lm_head are the target's
    (llm_base_proposer._maybe_share_embeddings / _maybe_share_lm_head: an MTP draft always shares them on one PP
    stage), so none is added. Not in transformers' model: ``count_params.mtp_params``.
    Worked number: Qwen3.6-35B-A3B (h 2,048): the MoE full-attention layer 836,246,016 + fc 4,096 x 2,048 =
    8,388,608 + 3 x 2,048 = 844,640,768 parameters (1,689,281,536 B in bf16)."""
    n = r.int("mtp_num_hidden_layers", 0, minimum=0) if r.has("mtp_num_hidden_layers") else 0
    if not n:
        return {}
    other = (Linear(name="fc", in_features=2 * h, out_features=h, shard="column", quantizable=False),
             rms("pre_fc_norm_embedding", h), rms("pre_fc_norm_hidden", h), rms("norm", h))
    return {"mtp_layers": tuple(layer_at(j) for j in range(n)), "mtp_other": other,
            "skipped": (f"{counted(n, 'multi-token-prediction layer')} (loaded only for speculative decoding)",)}


MODEL_TYPES = {
    "qwen3_next": build_qwen3_next,
    "qwen3_5_text": build_qwen3_next,
    "qwen3_5_moe_text": build_qwen3_next,
    # Flat files (and old text_configs) that carry the wrapper's own model_type: the text decoder.
    "qwen3_5": build_qwen3_next,
    "qwen3_5_moe": build_qwen3_next,
}
