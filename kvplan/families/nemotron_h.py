"""Nemotron-H and Nemotron-3 (Nano / Super / Ultra): Mamba-2 / attention / MLP / MoE blocks.

The block list is ``layers_block_type`` when given (transformers 5.23 NemotronHConfig: it wins over
``hybrid_override_pattern``, and its legacy names "mamba" / "attention" mean "linear_attention" /
"full_attention", ``configuration_utils._LEGACY_LAYER_TYPE_REMAP``; NVIDIA's Nemotron-3-Ultra
file writes those), else the ``hybrid_override_pattern`` string. Nemotron-3's LatentMoE
(``moe_latent_size``): ``fc1_latent_proj`` [latent, h] and ``fc2_latent_proj`` [h, latent] around
the routed experts, whose up/down run latent <-> moe_intermediate_size; the shared expert stays on
the hidden size (``modeling_nemotron_h.NemotronHMoE``). The router's ``e_score_correction_bias``
is a buffer, not a parameter. ``time_step_limit`` (NVIDIA writes [0.0, Infinity]) and the other
time-step fields size nothing and are never read.

vLLM (vllm/model_executor/models/nemotron_h.py ``get_mamba_state_shape_from_config`` ->
``MambaStateShapeCalculator.mamba2_state_shape``): per Mamba block a conv state of
(mamba_num_heads x mamba_head_dim + 2 x n_groups x ssm_state_size) x (conv_kernel - 1) and an SSM
state of mamba_num_heads x mamba_head_dim x ssm_state_size, the latter in
``mamba_ssm_cache_dtype`` when the config names it (vLLM's ``NemotronHForCausalLMConfig`` hook,
vllm/model_executor/models/config.py; NVIDIA's Nemotron-3 files say float32).
"""

from typing import Any

from kvplan.errors import ConfigError
from kvplan.families.blocks import attention_linears, embed, llama_tail, plain_mlp, rms, router, state_dtype_bytes
from kvplan.layers import FullAttention, MambaState, NoCache
from kvplan.spec import DecoderLayer, Experts, Linear, Norm, Tensor


def build_nemotron_h(r, model_type: str) -> dict[str, Any]:
    """Nemotron-H: one mixer per block, from ``hybrid_override_pattern`` (M mamba2, * attention,
    - MLP, E MoE), each block with one RMSNorm. Squared-ReLU MLPs (up, down; no gate)."""
    kinds_by_char = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
    names = {"linear_attention": "mamba", "mamba": "mamba", "full_attention": "attention", "attention": "attention",
             "mlp": "mlp", "moe": "moe"}
    key = "layers_block_type" if r.has("layers_block_type") else "layer_types"
    given = r.str_list(key)
    if given is not None:
        if not given or set(given) - set(names):
            raise ConfigError(r._name(key), f"must be a non-empty list of {sorted(names)}")
        blocks = [names[b] for b in given]
    else:
        pattern = r.raw("hybrid_override_pattern")
        if pattern is None:
            raise ConfigError(r._name("hybrid_override_pattern"),
                              "missing: the block pattern (or layers_block_type) is required")
        if not isinstance(pattern, str) or not pattern or set(pattern) - set(kinds_by_char):
            raise ConfigError(r._name("hybrid_override_pattern"), "must be a string of M, *, - and E")
        blocks = [kinds_by_char[c] for c in pattern]
    h = r.int("hidden_size")
    nq = r.int("num_attention_heads")
    nkv = r.int("num_key_value_heads", nq)
    hd = r.int("head_dim", r.int("attention_head_dim", 128, why="NemotronHConfig default"), why="attention_head_dim")
    vocab = r.int("vocab_size")
    n_heads, m_hd = r.int("mamba_num_heads"), r.int("mamba_head_dim")
    groups, d_state = r.int("n_groups", 8), r.int("ssm_state_size", 128)
    kernel = r.int("conv_kernel", 4)
    inner = n_heads * m_hd
    conv_dim = inner + 2 * groups * d_state
    bias, conv_bias, mlp_bias = r.bool("use_bias", False), r.bool("use_conv_bias", True), r.bool("mlp_bias", False)
    mamba = DecoderLayer(
        cache=MambaState(conv_dim=conv_dim, conv_kernel=kernel, num_heads=n_heads, head_dim=m_hd, state_size=d_state,
                         vllm_ssm_dtype_bytes=state_dtype_bytes(r, "mamba_ssm_cache_dtype")),
        attention=(
            Linear(name="in_proj", in_features=h, out_features=inner + conv_dim + n_heads, bias=bias),
            Tensor(name="conv1d", numel=conv_dim * kernel + (conv_dim if conv_bias else 0), shard="column"),
            Tensor(name="dt_bias+A_log+D", numel=3 * n_heads, shard="column"),
            Norm(name="mixer_norm", dim=inner, shard="column"),
            Linear(name="out_proj", in_features=inner, out_features=h, bias=bias, shard="row"),
        ),
        norms=(rms("norm", h),))
    attn = DecoderLayer(cache=FullAttention(num_key_value_heads=nkv, head_dim=hd, v_head_dim=hd),
                        attention=attention_linears(h, nq, nkv, hd, qkv_bias=r.bool("attention_bias", False),
                                                    o_bias=r.bool("attention_bias", False)),
                        norms=(rms("norm", h),))
    made: dict[str, DecoderLayer] = {}
    layers = []
    for block in blocks:
        if block == "mamba":
            layers.append(mamba)
        elif block == "attention":
            layers.append(attn)
        elif block == "mlp":
            if "mlp" not in made:
                made["mlp"] = DecoderLayer(cache=NoCache(), norms=(rms("norm", h),), mlp=plain_mlp(
                    h, r.int("intermediate_size"), bias=mlp_bias, names=("up_proj", "down_proj")))
            layers.append(made["mlp"])
        elif "moe" in made:
            layers.append(made["moe"])
        else:
            n, k = r.int("n_routed_experts"), r.int("num_experts_per_tok")
            inter = r.int("moe_intermediate_size")
            # LatentMoE: experts run on the latent width, projected down from and back up to h.
            latent = r.int("moe_latent_size") if r.has("moe_latent_size") else None
            width = latent or h
            experts = Experts(num_experts=n, num_experts_per_tok=k, linears=tuple(
                lin.model_copy(update={"shard": "expert"})
                for lin in plain_mlp(width, inter, bias=False, names=("up_proj", "down_proj"))))
            shared = plain_mlp(h, r.int("moe_shared_expert_intermediate_size"), bias=mlp_bias,
                               names=("shared_experts.up_proj", "shared_experts.down_proj"))
            projections = () if latent is None else (
                Linear(name="fc1_latent_proj", in_features=h, out_features=latent, bias=mlp_bias, shard="replicated"),
                Linear(name="fc2_latent_proj", in_features=latent, out_features=h, bias=mlp_bias, shard="replicated"))
            made["moe"] = DecoderLayer(cache=NoCache(), mlp=shared, experts=experts, router=router(h, n),
                                       norms=(rms("norm", h),), other=projections)
            layers.append(made["moe"])
    if r.has("num_hidden_layers") and r.int("num_hidden_layers") != len(blocks):
        r.assumptions.append(f"num_hidden_layers = {len(blocks)} blocks from the pattern (config says "
                             f"{r.raw('num_hidden_layers')}; transformers uses the pattern)")
    return llama_tail(r, h=h, n_layers=len(blocks), nq=nq, nkv=nkv, hd=hd, vocab=vocab, layers=layers,
                      embeddings=[embed(vocab, h, "embeddings")], final_norm=rms("norm_f", h))


MODEL_TYPES = {
    "nemotron_h": build_nemotron_h,
}
