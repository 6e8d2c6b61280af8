"""Hybrids of attention and recurrent mixers: bamba, granitemoehybrid (Mamba-2), falcon_h1 (Mamba-2
beside attention in every layer), jamba (Mamba-1), zamba2 (Mamba-2 with shared attention blocks),
lfm2, lfm2_moe (gated short convolutions).

A Mamba-2 layer caches a fixed state per sequence (``layers.MambaState``): a conv state of
conv_dim = intermediate + 2 x n_groups x d_state channels and an SSM state of heads x d_head x
d_state; its weights are in_proj [intermediate + conv_dim + heads, h], a depthwise conv1d
[conv_dim, kernel] (+ bias), dt_bias / A_log / D [heads] each, a gated RMSNorm [intermediate] and
out_proj [h, intermediate] (transformers 5.23 ``BambaMixer``, ``GraniteMoeHybridMambaLayer``).
"""

from typing import Any

from kvplan.errors import ConfigError
from kvplan.families.blocks import attention_linears, core_dims, experts_block, gated_mlp, llama_tail, rms, router
from kvplan.families.llama_kin import Dims, assemble
from kvplan.layers import AttentionAndMamba, FullAttention, MambaState, ShortConvState
from kvplan.spec import Component, DecoderLayer, Experts, Linear, Norm, Tensor

# transformers' configuration_utils._LEGACY_LAYER_TYPE_REMAP (5.23): old block names, new ones.
LEGACY_LAYER_TYPES = {"mamba": "linear_attention", "attention": "full_attention"}


def mamba2_mixer(r, h: int, *, prefix: str = "mamba_", inner: int | None = None,
                 heads_key: str = "n_heads", head_key: str = "d_head", norm: bool = True,
                 defaults: dict | None = None, out_bias: bool | None = None) -> tuple[tuple[Component, ...], MambaState]:
    """(weights, cache) of one Mamba-2 mixer from ``<prefix>n_heads``, ``d_head`` ("auto": intermediate
    // heads), ``n_groups``, ``d_state``, ``d_conv``, ``expand``, ``conv_bias``, ``proj_bias``.

    Worked number (BambaConfig defaults): h 4096, expand 2 -> intermediate 8192, 128 heads of 64,
    1 group, d_state 256: conv_dim = 8192 + 2 x 256 = 8704, in_proj [8192 + 8704 + 128, 4096]."""
    d = defaults or {}

    def key(name: str) -> str:
        return prefix + name

    n_heads = r.int(key(heads_key), d.get("n_heads"))
    expand = r.int(key("expand"), d.get("expand", 2))
    inner = inner or expand * h
    d_head_raw = r.raw(key(head_key), "auto")
    if d_head_raw == "auto":
        if inner % n_heads:
            raise ConfigError(r._name(key(heads_key)), f"{n_heads} must divide the mamba width {inner}")
        d_head = inner // n_heads
    else:
        d_head = r.int(key(head_key))
    if d_head * n_heads != inner:
        raise ConfigError(r._name(key(head_key)), f"{n_heads} heads x {d_head} must equal the mamba width {inner}")
    groups = r.int(key("n_groups"), d.get("n_groups", 1))
    d_state = r.int(key("d_state"), d.get("d_state", 256))
    kernel = r.int(key("d_conv"), d.get("d_conv", 4))
    conv_bias = r.bool(key("conv_bias"), True)
    proj_bias = r.bool(key("proj_bias"), False)
    conv_dim = inner + 2 * groups * d_state
    weights: tuple[Component, ...] = (
        Linear(name="in_proj", in_features=h, out_features=inner + conv_dim + n_heads, bias=proj_bias),
        Tensor(name="conv1d", numel=conv_dim * kernel + (conv_dim if conv_bias else 0), shard="column"),
        Tensor(name="dt_bias+A_log+D", numel=3 * n_heads, shard="column"),
    )
    if norm:
        weights += (Norm(name="mixer_norm", dim=inner, shard="column"),)
    out_bias = proj_bias if out_bias is None else out_bias
    weights += (Linear(name="out_proj", in_features=inner, out_features=h, bias=out_bias, shard="row"),)
    cache = MambaState(conv_dim=conv_dim, conv_kernel=kernel, num_heads=n_heads, head_dim=d_head, state_size=d_state,
                       n_groups=groups)
    return weights, cache


def block_types(r, n_layers: int, default: list[str]) -> list[str]:
    """``layer_types`` / ``layers_block_type`` with the legacy names remapped, or ``default``."""
    for field in ("layer_types", "layers_block_type"):
        given = r.str_list(field)
        if given is not None:
            kinds = [LEGACY_LAYER_TYPES.get(k, k) for k in given]
            if len(kinds) != n_layers:
                raise ConfigError(r._name(field), f"has {len(kinds)} entries but num_hidden_layers is {n_layers}")
            bad = sorted(set(kinds) - {"linear_attention", "full_attention"})
            if bad:
                raise ConfigError(r._name(field), f"unknown block type(s) {bad}; allowed: mamba / linear_attention, "
                                  "attention / full_attention")
            return kinds
    return default


def build_bamba(r, model_type: str) -> dict[str, Any]:
    """bamba: every layer a Mamba-2 mixer or attention (attention_bias on q/k/v/o), then a gated MLP
    (mlp_bias); norms input_layernorm, pre_ff_layernorm; final final_layernorm. Attention layers are
    layer_types' "full_attention" ("attention") or, absent that, attn_layer_indices."""
    d = Dims(*core_dims(r), r.int("vocab_size"))
    indices = set(r.int_list("attn_layer_indices") or [])
    kinds = block_types(r, d.n_layers, ["full_attention" if i in indices else "linear_attention"
                                        for i in range(d.n_layers)])
    bias = r.bool("attention_bias", False)
    attn = attention_linears(d.h, d.nq, d.nkv, d.hd, qkv_bias=bias, o_bias=bias)
    mamba = mamba2_mixer(r, d.h, defaults={"n_heads": 128})
    return assemble(r, d, kinds=kinds, window=None, attn=attn, mixers={"linear_attention": mamba},
                    norms=(rms("input_layernorm", d.h), rms("pre_ff_layernorm", d.h)),
                    mlp=gated_mlp(d.h, r.int("intermediate_size"), bias=r.bool("mlp_bias", False)),
                    final_norm=rms("final_layernorm", d.h))


def build_granitemoehybrid(r, model_type: str) -> dict[str, Any]:
    """granitemoehybrid (Granite 4): every layer a Mamba-2 mixer or attention (layer_types; all
    Mamba by default), then num_local_experts experts of intermediate_size (none when 0) plus a shared
    MLP that is always there: input_linear [2 x shared_intermediate_size, h], output_linear."""
    d = Dims(*core_dims(r), r.int("vocab_size"))
    kinds = block_types(r, d.n_layers, ["linear_attention"] * d.n_layers)
    bias = r.bool("attention_bias", False)
    attn = attention_linears(d.h, d.nq, d.nkv, d.hd, qkv_bias=bias, o_bias=bias)
    mamba = mamba2_mixer(r, d.h, defaults={"n_heads": 128})
    s = r.int("shared_intermediate_size", 1024)
    shared = (Linear(name="shared_mlp.input_linear", in_features=d.h, out_features=2 * s),
              Linear(name="shared_mlp.output_linear", in_features=s, out_features=d.h, shard="row"))
    norms = (rms("input_layernorm", d.h), rms("post_attention_layernorm", d.h))
    if r.int("num_local_experts", 8, minimum=0) == 0:
        return assemble(r, d, kinds=kinds, window=None, attn=attn, mixers={"linear_attention": mamba}, norms=norms,
                        mlp=shared)
    experts = experts_block(r, d.h, r.int("intermediate_size"), "num_local_experts", "num_experts_per_tok")
    return assemble(r, d, kinds=kinds, window=None, attn=attn, mixers={"linear_attention": mamba}, norms=norms,
                    moe=(experts, router(d.h, experts.num_experts), shared))


def build_jamba(r, model_type: str) -> dict[str, Any]:
    """jamba: attention where i % attn_layer_period == attn_layer_offset (1 in 8 by default), Mamba-1
    elsewhere; num_experts experts of intermediate_size where i % expert_layer_period ==
    expert_layer_offset (every other layer), a dense MLP elsewhere (everywhere when num_experts is 1).

    A Mamba-1 mixer (JambaMambaMixer), inner = mamba_expand x h, dt_rank = mamba_dt_rank ("auto":
    ceil(h / 16)): in_proj [2 x inner, h], conv1d [inner, d_conv] (+ bias), x_proj [dt_rank + 2 x
    d_state, inner], dt_proj [inner, dt_rank] + bias, A_log [inner, d_state], D [inner], out_proj
    [h, inner], RMSNorms dt [dt_rank], b and c [d_state]. Its state: conv inner x d_conv (vLLM: d_conv -
    1) and SSM inner x d_state (vLLM MambaStateShapeCalculator.mamba1_state_shape), stored as a
    MambaState of inner heads of width 1."""
    d = Dims(*core_dims(r), r.int("vocab_size"))
    attn_period, attn_offset = r.int("attn_layer_period", 8), r.int("attn_layer_offset", 4, minimum=0)
    kinds = ["full_attention" if i % attn_period == attn_offset else "linear_attention" for i in range(d.n_layers)]
    inner = r.int("mamba_expand", 2) * d.h
    dt_raw = r.raw("mamba_dt_rank", "auto")
    dt_rank = -(-d.h // 16) if dt_raw == "auto" else r.int("mamba_dt_rank")
    d_state, kernel = r.int("mamba_d_state", 16), r.int("mamba_d_conv", 4)
    conv_bias, proj_bias = r.bool("mamba_conv_bias", True), r.bool("mamba_proj_bias", False)
    mamba = (
        Linear(name="in_proj", in_features=d.h, out_features=2 * inner, bias=proj_bias),
        Tensor(name="conv1d", numel=inner * kernel + (inner if conv_bias else 0), shard="column"),
        Linear(name="x_proj", in_features=inner, out_features=dt_rank + 2 * d_state, shard="row"),
        Linear(name="dt_proj", in_features=dt_rank, out_features=inner, bias=True),
        Tensor(name="A_log+D", numel=inner * d_state + inner, shard="column"),
        Linear(name="out_proj", in_features=inner, out_features=d.h, bias=proj_bias, shard="row"),
        rms("dt_layernorm", dt_rank), rms("b_layernorm", d_state), rms("c_layernorm", d_state),
    )
    state = MambaState(conv_dim=inner, conv_kernel=kernel, num_heads=inner, head_dim=1, state_size=d_state)
    attn = attention_linears(d.h, d.nq, d.nkv, d.hd)
    n = r.int("num_experts", 16) if r.has("num_experts") or not r.has("num_local_experts") else r.int("num_local_experts")
    period, offset = r.int("expert_layer_period", 2), r.int("expert_layer_offset", 1, minimum=0)
    moe_layers = [n > 1 and i % period == offset for i in range(d.n_layers)]
    inter = r.int("intermediate_size")
    experts = Experts(num_experts=n, num_experts_per_tok=min(n, r.int("num_experts_per_tok", 2)), linears=tuple(
        lin.model_copy(update={"shard": "expert"}) for lin in gated_mlp(d.h, inter)))
    return assemble(r, d, kinds=kinds, window=None, attn=attn, mixers={"linear_attention": (mamba, state)},
                    norms=(rms("input_layernorm", d.h), rms("pre_ff_layernorm", d.h)), mlp=gated_mlp(d.h, inter),
                    moe=(experts, router(d.h, n), ()), moe_layers=moe_layers, final_norm=rms("final_layernorm", d.h))


def build_falcon_h1(r, model_type: str) -> dict[str, Any]:
    """falcon_h1: every layer runs attention (attention_bias on q/k/v/o) and a Mamba-2 mixer side by side,
    then a gated MLP (mlp_bias); norms input_layernorm, pre_ff_layernorm; final final_layernorm.

    The mixer's width is mamba_d_ssm (default 1024; mamba_expand x h when null); its in_proj bias is
    mamba_proj_bias, its out_proj bias projectors_bias; its gated RMSNorm exists only with
    mamba_rms_norm (FalconH1Mixer). Each layer caches K/V and a Mamba state (``AttentionAndMamba``)."""
    d = Dims(*core_dims(r), r.int("vocab_size"))
    inner = r.int("mamba_d_ssm") if r.has("mamba_d_ssm") else None  # None: mamba_expand x hidden_size
    if r.has("layer_types") and set(r.str_list("layer_types")) - {"hybrid"}:
        raise ConfigError(r._name("layer_types"), 'Falcon-H1 layers are all "hybrid" (attention beside Mamba)')
    weights, state = mamba2_mixer(r, d.h, inner=inner, norm=r.bool("mamba_rms_norm", False),
                                  defaults={"n_heads": 128}, out_bias=r.bool("projectors_bias", False))
    bias = r.bool("attention_bias", False)
    attn = attention_linears(d.h, d.nq, d.nkv, d.hd, qkv_bias=bias, o_bias=bias)
    both = AttentionAndMamba(attention=FullAttention(num_key_value_heads=d.nkv, head_dim=d.hd, v_head_dim=d.hd),
                             mamba=state)
    return assemble(r, d, kinds=["hybrid"] * d.n_layers, window=None, attn=attn,
                    mixers={"hybrid": (attn + weights, both)},
                    norms=(rms("input_layernorm", d.h), rms("pre_ff_layernorm", d.h)),
                    mlp=gated_mlp(d.h, r.int("intermediate_size"), bias=r.bool("mlp_bias", False)),
                    final_norm=rms("final_layernorm", d.h))


def build_zamba2(r, model_type: str) -> dict[str, Any]:
    """zamba2: a Mamba-2 mixer in every layer ("linear_attention" / "mamba"); a "hybrid" layer also
    runs a shared transformer block first, through its own linear [h, h].

    The shared blocks: num_mem_blocks of them, cycled over the hybrid layers (Zamba2Model.get_layers
    ties the k-th hybrid layer's block to block k % num_mem_blocks), each counted once, on the first
    hybrid layer that uses it. A block: attention over the concatenation [hidden, embedding] (2h):
    q [2h, 2h], k and v [kv x hd, 2h], o [h, 2h] with hd = 2h // heads (Zamba2Config sets it); a
    gated MLP gate_up [2 x inter, h], down [h, inter] (add_bias_linear); RMSNorms [2h] and [h]; and
    LoRA-like adapters (rank adapter_rank) for each hybrid layer it serves: on gate_up always
    (h -> rank -> 2 x inter), on q/k/v with use_shared_attention_adapter (2h -> rank -> 2h).

    A Mamba-2 mixer: n_mamba_heads heads of mamba_expand x h // heads, mamba_ngroups groups, conv bias
    always, in/out_proj bias add_bias_linear, a gated RMSNorm. A hybrid layer caches K/V and the
    Mamba state (``AttentionAndMamba``); a Mamba layer the state only."""
    h, n_layers, vocab = r.int("hidden_size"), r.int("num_hidden_layers"), r.int("vocab_size")
    nq = r.int("num_attention_heads")
    nkv = r.int("num_key_value_heads", nq, why="= num_attention_heads")
    r.fail_if_missing()
    hd = 2 * h // nq
    r.assumptions.append(f"attention head_dim = 2 x hidden_size // num_attention_heads = {hd} (Zamba2Config)")
    given = r.str_list("layers_block_type") or r.str_list("layer_types")
    if given is None:  # Zamba2Config's 54-layer default pattern
        given = (["mamba"] + (["mamba"] * 5 + ["hybrid"]) * 7 + ["mamba"] * 4 + ["hybrid"] + ["mamba"] * 3 + ["hybrid"]
                 + ["mamba"] * 2)
    kinds = ["hybrid" if k == "hybrid" else LEGACY_LAYER_TYPES.get(k, k) for k in given]
    if len(kinds) != n_layers or set(kinds) - {"hybrid", "linear_attention"}:
        raise ConfigError(r._name("layers_block_type"), f"needs {n_layers} entries of mamba or hybrid")
    bias = r.bool("add_bias_linear", False)
    inner = r.int("mamba_expand", 2) * h
    heads = r.int("n_mamba_heads", 8)
    if inner % heads:
        raise ConfigError(r._name("n_mamba_heads"), f"{heads} must divide the mamba width {inner}")
    groups, d_state, kernel = r.int("mamba_ngroups", 1), r.int("mamba_d_state", 64), r.int("mamba_d_conv", 4)
    conv_dim = inner + 2 * groups * d_state
    mamba = (
        Linear(name="in_proj", in_features=h, out_features=inner + conv_dim + heads, bias=bias),
        Tensor(name="conv1d", numel=conv_dim * kernel + conv_dim, shard="column"),
        Tensor(name="dt_bias+A_log+D", numel=3 * heads, shard="column"),
        Norm(name="mixer_norm", dim=inner, shard="column"),
        Linear(name="out_proj", in_features=inner, out_features=h, bias=bias, shard="row"),
    )
    state = MambaState(conv_dim=conv_dim, conv_kernel=kernel, num_heads=heads, head_dim=inner // heads,
                       state_size=d_state, n_groups=groups)
    inter = r.int("intermediate_size", 4 * h, why="4 x hidden_size") if r.has("intermediate_size") else 4 * h
    n_mem = r.int("num_mem_blocks", 1)
    rank = r.int("adapter_rank", 128)
    attn_adapters = r.bool("use_shared_attention_adapter", False)
    n_hybrid = kinds.count("hybrid")
    # vLLM's Zamba2Attention is multi-head whatever num_key_value_heads says (Attention(num_heads, head_dim)
    # with no num_kv_heads); transformers' Zamba2Attention caches num_key_value_heads.
    attention = FullAttention(num_key_value_heads=nq, head_dim=hd, v_head_dim=hd,
                              transformers_cached_heads=nkv if nkv != nq else None)
    cache = AttentionAndMamba(attention=attention, mamba=state)
    mamba_layer = DecoderLayer(cache=state, attention=mamba, norms=(rms("input_layernorm", h),))
    hybrid_plain = DecoderLayer(cache=cache, attention=mamba, norms=(rms("input_layernorm", h),),
                                other=(Linear(name="linear", in_features=h, out_features=h),))
    layers, seen = [], 0
    for kind in kinds:
        if kind != "hybrid":
            layers.append(mamba_layer)
            continue
        block = seen % n_mem
        if seen < n_mem:  # this layer carries shared block `block`, with the adapters of every layer it serves
            served = len(range(block, n_hybrid, n_mem))
            attn = (Linear(name="q_proj", in_features=2 * h, out_features=nq * hd),
                    Linear(name="k_proj", in_features=2 * h, out_features=nkv * hd),
                    Linear(name="v_proj", in_features=2 * h, out_features=nkv * hd),
                    Linear(name="o_proj", in_features=nq * hd, out_features=h, shard="row"))
            adapters: tuple[Component, ...] = (
                Linear(name="shared.gate_up_proj_adapter.0", in_features=h, out_features=rank, count=served,
                       shard="replicated"),
                Linear(name="shared.gate_up_proj_adapter.1", in_features=rank, out_features=2 * inter, count=served),
            )
            if attn_adapters:
                adapters += tuple(Linear(name=f"shared.{x}_adapter.{i}", in_features=a, out_features=b,
                                         count=served, shard="replicated" if i == 0 else "column")
                                  for x in "qkv" for i, (a, b) in enumerate(((2 * h, rank), (rank, 2 * h))))
            layers.append(DecoderLayer(
                cache=cache, attention=mamba + attn, norms=(rms("input_layernorm", h), rms("shared.input_layernorm", 2 * h),
                                                           rms("shared.pre_ff_layernorm", h)),
                mlp=(Linear(name="shared.gate_up_proj", in_features=h, out_features=2 * inter, bias=bias),
                     Linear(name="shared.down_proj", in_features=inter, out_features=h, bias=bias, shard="row")),
                other=(Linear(name="linear", in_features=h, out_features=h),) + adapters))
        else:
            layers.append(hybrid_plain)
        seen += 1
    return llama_tail(r, h=h, n_layers=n_layers, nq=nq, nkv=nkv, hd=hd, vocab=vocab, layers=layers, tie_default=True,
                      final_norm=rms("final_layernorm", h))


def _lfm2_pieces(r, d: Dims, model_type: str) -> tuple[list[str], dict, tuple[Component, ...]]:
    """(layer kinds, {"conv": (weights, state)}, attention weights) shared by lfm2 and lfm2_moe.

    A "conv" layer: in_proj [3h, h], a depthwise conv [h, conv_L_cache], out_proj [h, h] (conv_bias
    on all three); every other layer type is attention: q/k/v/out_proj without bias and per-head
    q/k RMSNorms (q_layernorm, k_layernorm)."""
    given = r.str_list("layer_types")
    if given is None and model_type == "lfm2":
        full = set(r.int_list("full_attn_idxs") or range(d.n_layers))
        given = ["full_attention" if i in full else "conv" for i in range(d.n_layers)]
    if given is None:
        raise ConfigError(r._name("layer_types"), "missing: Lfm2MoeConfig has no default block pattern")
    if len(given) != d.n_layers:
        raise ConfigError(r._name("layer_types"), f"has {len(given)} entries but num_hidden_layers is {d.n_layers}")
    kinds = ["conv" if k == "conv" else "full_attention" for k in given]
    bias, kernel = r.bool("conv_bias", False), r.int("conv_L_cache", 3)
    if r.has("conv_dim") and r.raw("conv_dim") != d.h:  # vLLM sizes the state by conv_dim, transformers by h
        r.assumptions.append(f"short-conv channels = hidden_size {d.h} (transformers' Lfm2ShortConv), not "
                             f"conv_dim {r.raw('conv_dim')}")
    conv = (Linear(name="in_proj", in_features=d.h, out_features=3 * d.h, bias=bias),
            Tensor(name="conv", numel=d.h * kernel + (d.h if bias else 0), shard="column"),
            Linear(name="out_proj", in_features=d.h, out_features=d.h, bias=bias, shard="row"))
    attn = attention_linears(d.h, d.nq, d.nkv, d.hd)
    attn = attn[:3] + (attn[3].model_copy(update={"name": "out_proj"}), rms("q_layernorm", d.hd),
                       rms("k_layernorm", d.hd))
    return kinds, {"conv": (conv, ShortConvState(conv_dim=d.h, conv_kernel=kernel))}, attn


def lfm2_ffn_width(r) -> int:
    """Lfm2MLP: with block_auto_adjust_ff_dim, int(2 x inter / 3), then x block_ffn_dim_multiplier
    rounded up to block_multiple_of. LFM2-1.2B: 12288 -> 8192 -> 8192."""
    # Lfm2Config takes an old config's block_ff_dim as intermediate_size.
    inter = r.int("block_ff_dim") if r.has("block_ff_dim") else r.int("intermediate_size")
    if r.bool("block_auto_adjust_ff_dim", True):
        inter = int(2 * inter / 3)
        mult = r.raw("block_ffn_dim_multiplier", 1.0)
        if mult is not None:
            if isinstance(mult, bool) or not isinstance(mult, (int, float)) or mult <= 0:
                raise ConfigError(r._name("block_ffn_dim_multiplier"), f"must be a positive number, got {mult!r}")
            of = r.int("block_multiple_of", 256)
            inter = of * ((int(mult * inter) + of - 1) // of)
    return inter


def build_lfm2(r, model_type: str) -> dict[str, Any]:
    """lfm2: short-conv layers ("conv") and attention layers (layer_types, or full_attn_idxs; all
    attention when neither is given), each with a SwiGLU w1/w3/w2 of lfm2_ffn_width; norms
    operator_norm, ffn_norm; the final norm is named embedding_norm; tied embeddings by default.
    lfm2_moe: the first num_dense_layers keep a w1/w3/w2 MLP of intermediate_size, the rest have
    num_experts experts of moe_intermediate_size and a router (its expert_bias is a buffer)."""
    d = Dims(*core_dims(r), r.int("vocab_size"))
    kinds, mixers, attn = _lfm2_pieces(r, d, model_type)
    tie = r.bool("tie_embedding", True)  # Lfm2Config takes an old config's tie_embedding as the default
    names = ("w1", "w3", "w2")
    norms = (rms("operator_norm", d.h), rms("ffn_norm", d.h))
    if model_type == "lfm2":
        mlp = _w_mlp(d.h, lfm2_ffn_width(r), names)
        return assemble(r, d, kinds=kinds, window=None, attn=attn, mixers=mixers, norms=norms, mlp=mlp,
                        final_norm=rms("embedding_norm", d.h), tie_default=tie)
    dense = r.int("num_dense_layers", 2, minimum=0)
    experts = experts_block(r, d.h, r.int("moe_intermediate_size"), "num_experts", "num_experts_per_tok")
    return assemble(r, d, kinds=kinds, window=None, attn=attn, mixers=mixers, norms=norms,
                    mlp=_w_mlp(d.h, r.int("intermediate_size"), names),
                    moe=(experts, router(d.h, experts.num_experts), ()),
                    moe_layers=[i >= dense for i in range(d.n_layers)],
                    final_norm=rms("embedding_norm", d.h), tie_default=tie)


def _w_mlp(h: int, inter: int, names: tuple[str, str, str]) -> tuple[Component, ...]:
    gate, up, down = gated_mlp(h, inter)
    return (gate.model_copy(update={"name": names[0]}), up.model_copy(update={"name": names[1]}),
            down.model_copy(update={"name": names[2]}))


MODEL_TYPES = {
    "bamba": build_bamba,
    "granitemoehybrid": build_granitemoehybrid,
    "falcon_h1": build_falcon_h1,
    "jamba": build_jamba,
    "zamba2": build_zamba2,
    "lfm2": build_lfm2,
    "lfm2_moe": build_lfm2,
}
