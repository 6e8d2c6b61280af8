"""Kimi-Linear: Kimi Delta Attention (KDA, a gated DeltaNet with per-channel decay) layers and MLA layers,
DeepSeek-V3 MoE (transformers 5.23 ``modeling_kimi_linear.py``).

KDA keeps the same per-sequence state as Qwen3-Next's gated DeltaNet, so it reuses
``LinearAttentionState`` with key heads = value heads = ``num_heads`` and key dim = value dim =
``head_dim``: a causal conv over q, k and v (3 x heads x head_dim channels) and a heads x head_dim x
head_dim recurrent matrix. vLLM: ``MambaStateShapeCalculator.kda_state_shape``
(vllm/model_executor/layers/mamba/mamba_utils.py): conv states (heads x head_dim) + 2 x (k_heads x
head_dim) channels x (conv_kernel - 1), recurrent (heads, head_dim, head_dim). Worked number,
Kimi-Linear-48B-A3B (32 heads x 128, kernel 4, bf16): (12,288 x 3 + 32 x 128 x 128) x 2 B =
1,122,304 B per sequence per KDA layer (vllm).
"""

from typing import Any

from kvplan.errors import ConfigError
from kvplan.families.blocks import experts_block, gated_mlp, llama_tail, moe_layer, rms
from kvplan.families.deepseek import mla_attention
from kvplan.layers import LinearAttentionState, MLAAttention
from kvplan.spec import DecoderLayer, Linear, Norm, Tensor


def _linear_attn_config(r) -> dict:
    """The checkpoint's nested ``linear_attn_config`` (head_dim, num_heads, short_conv_kernel_size,
    1-indexed full_attn_layers / kda_layers), or {} when the config carries transformers' flat keys."""
    value = r.raw("linear_attn_config", {})
    if not isinstance(value, dict):
        raise ConfigError(r._name("linear_attn_config"), "must be an object")
    return value


def _sub_int(r, sub: dict, key: str, flat: str, default: int) -> int:
    if key in sub and sub[key] is not None:
        return r.check_int(f"linear_attn_config.{key}", sub[key])
    return r.int(flat, default, why="KimiLinearConfig default")


def _layer_types(r, sub: dict, n_layers: int) -> list[str]:
    given = r.str_list("layer_types")
    if given is not None:
        if len(given) != n_layers or set(given) - {"linear_attention", "full_attention"}:
            raise ConfigError(r._name("layer_types"),
                              f"must list 'linear_attention' or 'full_attention' for each of {n_layers} layers")
        return given
    if "full_attn_layers" in sub and "kda_layers" in sub:
        kinds: list[str | None] = [None] * n_layers
        for key, kind in (("full_attn_layers", "full_attention"), ("kda_layers", "linear_attention")):
            layers = sub[key]
            if not isinstance(layers, list):
                raise ConfigError(r._name(f"linear_attn_config.{key}"), "must be a list of 1-indexed layer numbers")
            for n in layers:
                i = r.check_int(f"linear_attn_config.{key}", n)
                if i > n_layers:
                    raise ConfigError(r._name(f"linear_attn_config.{key}"), f"layer {i} > num_hidden_layers {n_layers}")
                kinds[i - 1] = kind
        if None in kinds:
            raise ConfigError(r._name("linear_attn_config"),
                              f"layer {kinds.index(None) + 1} is in neither full_attn_layers nor kda_layers")
        return kinds  # type: ignore[return-value]
    return ["full_attention" if i and i % 4 == 0 else "linear_attention" for i in range(n_layers)]


# Kimi-K3's text_config (moonshotai/Kimi-K3, a kimi_k3 wrapper around model_type kimi_linear, remote code only; seen in
# ai-dynamo/aiconfigurator model_configs/moonshotai--Kimi-K3_config.json @095f58a5, 2026-08) switches on parts that
# transformers 5.23's KimiLinear does not have: a latent MoE (routed experts on routed_expert_hidden_size 3584, not
# hidden_size 7168, with latent_moe_use_norm), a gated MLA output (mla_use_output_gate) and full-rank KDA gates
# (linear_attn_config.use_full_rank_gate). Read as Kimi-Linear it counts 5,489,475,592,288 parameters, routed experts
# on 7168 instead of 3584 (aiconfigurator's KimiK3Model, commit a77804e3: "2.8T"), so each of these, set to anything
# but the plain value, is refused by name.
_NOT_MODELLED = ("latent MoE", "MLA output gate", "full-rank KDA gates")


def _refuse_kimi_k3_parts(r, sub: dict, h: int) -> None:
    checks = ((r._name("routed_expert_hidden_size"), r.raw("routed_expert_hidden_size"), (None, h), _NOT_MODELLED[0]),
              (r._name("latent_moe_use_norm"), r.raw("latent_moe_use_norm"), (None, False), _NOT_MODELLED[0]),
              (r._name("mla_use_output_gate"), r.raw("mla_use_output_gate"), (None, False), _NOT_MODELLED[1]),
              (r._name("linear_attn_config.use_full_rank_gate"), sub.get("use_full_rank_gate"), (None, False),
               _NOT_MODELLED[2]))
    for field, value, plain, part in checks:
        if not any(value is p or (p is not None and value == p and type(value) is type(p)) for p in plain):
            raise ConfigError(field, f"{str(value)[:40]}: a Kimi-K3-style {part}, which kvplan's kimi_linear family "
                                     f"(transformers 5.23 KimiLinear) does not model; its parameter count and weights "
                                     f"would be wrong. Allowed: absent, or {plain[1]!r}")


def build_kimi_linear(r, model_type: str) -> dict[str, Any]:
    h, n_layers, nq = r.int("hidden_size"), r.int("num_hidden_layers"), r.int("num_attention_heads")
    vocab = r.int("vocab_size")
    r.fail_if_missing()
    sub = _linear_attn_config(r)
    _refuse_kimi_k3_parts(r, sub, h)
    nh = _sub_int(r, sub, "num_heads", "linear_num_heads", 32)
    hd = _sub_int(r, sub, "head_dim", "linear_head_dim", 128)
    kernel = _sub_int(r, sub, "short_conv_kernel_size", "linear_conv_kernel_dim", 4)
    kinds = _layer_types(r, sub, n_layers)
    state = LinearAttentionState(num_key_heads=nh, key_head_dim=hd, num_value_heads=nh, value_head_dim=hd,
                                 conv_kernel=kernel)
    width = nh * hd
    kda = (  # KimiLinearDeltaAttention (Glm5NextTextLinearAttention + KimiLinearForgetGate)
        Linear(name="q_proj", in_features=h, out_features=width),
        Linear(name="k_proj", in_features=h, out_features=width),
        Linear(name="v_proj", in_features=h, out_features=width),
        Tensor(name="conv1d", numel=3 * width * kernel, shard="column"),
        Linear(name="forget_gate.f_a_proj", in_features=h, out_features=hd, shard="replicated"),
        Linear(name="forget_gate.f_b_proj", in_features=hd, out_features=width),
        Tensor(name="forget_gate.dt_bias+A_log", numel=width + nh, shard="column"),
        Linear(name="b_proj", in_features=h, out_features=nh),
        Linear(name="g_a_proj", in_features=h, out_features=hd, shard="replicated"),
        Linear(name="g_b_proj", in_features=hd, out_features=width),
        Norm(name="o_norm", dim=hd),
        Linear(name="o_proj", in_features=width, out_features=h, shard="row"),
    )
    mla, dims = mla_attention(r, h, nq)
    dims.pop("q_lora_rank")
    latent = MLAAttention(**dims)
    given = r.str_list("mlp_layer_types")
    if given is not None:
        if len(given) != n_layers or set(given) - {"dense", "sparse"}:
            raise ConfigError(r._name("mlp_layer_types"),
                              f"must list 'dense' or 'sparse' for each of {n_layers} layers")
        moe_at = [t == "sparse" for t in given]
    else:
        first_dense = r.int("first_k_dense_replace", 1, minimum=0, why="KimiLinearConfig default")
        moe_at = [i >= first_dense for i in range(n_layers)]
    norms = (rms("input_layernorm", h), rms("post_attention_layernorm", h))
    if any(moe_at):
        inter_e = r.int("moe_intermediate_size")
        experts = experts_block(r, h, inter_e, "num_experts", "num_experts_per_token")
        shared = r.int("num_shared_experts", 0, minimum=0)
        shared_mlp = gated_mlp(h, inter_e * shared, prefix="shared_experts.") if shared else ()
        r.assumptions.append("router e_score_correction_bias (fp32, num_experts per MoE layer) is a buffer, "
                             "not counted")
    dense = gated_mlp(h, r.int("intermediate_size")) if not all(moe_at) else ()
    made: dict = {}
    layers = []
    for i, kind in enumerate(kinds):
        key = (kind, moe_at[i])
        if key not in made:
            cache, attn = (state, kda) if kind == "linear_attention" else (latent, mla)
            if moe_at[i]:
                made[key] = moe_layer(cache, attn, norms, h, experts, shared_mlp)
            else:
                made[key] = DecoderLayer(cache=cache, attention=attn, mlp=dense, norms=norms)
        layers.append(made[key])
    max_key = "model_max_length" if r.has("model_max_length") else "max_position_embeddings"
    return llama_tail(r, h=h, n_layers=n_layers, nq=nq, nkv=nq, hd=dims["qk_nope_head_dim"] + dims["qk_rope_head_dim"],
                      vocab=vocab, layers=layers, max_pos_key=max_key)


MODEL_TYPES = {
    "kimi_linear": build_kimi_linear,
}
