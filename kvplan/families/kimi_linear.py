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


def build_kimi_linear(r, model_type: str) -> dict[str, Any]:
    h, n_layers, nq = r.int("hidden_size"), r.int("num_hidden_layers"), r.int("num_attention_heads")
    vocab = r.int("vocab_size")
    r.fail_if_missing()
    sub = _linear_attn_config(r)
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
