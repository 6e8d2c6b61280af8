"""Step-3.5 / Step-3.7 (``step3p5`` text decoder; ``step3p7`` the multimodal wrapper).

transformers 5.23 ``modular_step3p7.py`` (Step3p7TextConfig, model_type "step3p5"; there is no
causal-LM class, the text model is Step3p7TextModel inside Step3p7ForConditionalGeneration):
- attention per layer (Laguna's): q_proj [heads x head_dim, h], k/v [num_key_value_heads x
  head_dim, h], o_proj, per-head q_norm / k_norm, and a per-head output gate g_proj [heads, h]
  (``gating`` is True). Full layers have ``num_attention_heads`` query heads; sliding layers
  ``num_sliding_attention_heads``, else the legacy ``attention_other_setting.num_attention_heads``.
  KV heads: ``num_key_value_heads`` (legacy alias ``num_attention_groups``) on every layer.
- layers: ``layer_types`` (full / sliding over ``sliding_window``), default all full; the hub's
  lists may carry ``num_nextn_predict_layers`` trailing MTP entries, which transformers splits off.
- MLP per layer: ``mlp_layer_types`` ("sparse" / "dense"), else the legacy ``moe_layers_enum``
  (a comma-separated string or list of MoE layer indices), else MoE from layer 3 on. Dense: SwiGLU
  of ``intermediate_size``. Sparse: ``n_routed_experts`` (aliases ``moe_num_experts``,
  ``num_local_experts``) fused SwiGLU experts of ``moe_intermediate_size``, a bias-free router (its
  e_score_correction_bias is a buffer) and one always-on shared SwiGLU of ``share_expert_dim``.
  Files that write ``num_experts`` / ``first_k_dense_replace`` instead (aiconfigurator's
  Step-3.7-Flash) are read by those names; transformers ignores them, and the released values
  (288, 3) equal its defaults.
vLLM (vllm/model_executor/models/step3p5.py): sliding layers get ``per_layer_sliding_window``
(a SlidingWindowSpec) and the rest full attention, num_attention_groups KV heads x head_dim; its
sliding layers would take KV heads / head_dim from ``attention_other_setting``, so a file where
those differ from the global values is refused.
"""

from typing import Any

from kvplan.errors import ConfigError
from kvplan.families.blocks import attention_cache, fused_experts, gated_mlp, llama_tail, moe_layer, rms, sliding_window
from kvplan.spec import DecoderLayer, Linear

LAYER_KINDS = ("full_attention", "sliding_attention")


def _per_layer(r, key: str, n: int, mtp: int, allowed: tuple[str, ...]) -> list[str] | None:
    """A per-layer list, with its trailing MTP entries dropped as transformers does."""
    given = r.str_list(key)
    if given is None:
        return None
    if len(given) == n + mtp:
        given = given[:n]
    if len(given) != n:
        raise ConfigError(r._name(key), f"has {len(given)} entries; num_hidden_layers is {n}"
                          + (f" (+ {mtp} MTP layers)" if mtp else ""))
    bad = sorted(set(given) - set(allowed))
    if bad:
        raise ConfigError(r._name(key), f"unknown value(s) {bad}; allowed: {list(allowed)}")
    return given


def _moe_layers(r, n: int, mtp: int) -> list[bool]:
    kinds = _per_layer(r, "mlp_layer_types", n, mtp, ("sparse", "dense"))
    if kinds is not None:
        return [k == "sparse" for k in kinds]
    enum = r.raw("moe_layers_enum")
    if enum is None:
        # Some files (aiconfigurator's Step-3.7-Flash) say first_k_dense_replace instead; transformers
        # ignores it and makes layers 3 .. n - 1 MoE, which the released value 3 agrees with.
        first = r.int("first_k_dense_replace", 3, minimum=0, why="Step3p7TextConfig default: MoE from layer 3")
        return [i >= first for i in range(n)]
    items = enum.split(",") if isinstance(enum, str) else enum
    if not isinstance(items, list) or not all(isinstance(i, int) or (isinstance(i, str) and i.strip().isdigit())
                                              or (isinstance(i, str) and not i.strip()) for i in items):
        raise ConfigError(r._name("moe_layers_enum"), "must be layer indices, e.g. \"3,4,5\" or [3, 4, 5]")
    moe = {int(i) for i in items if str(i).strip()}
    return [i in moe for i in range(n)]


def build_step3p5(r, model_type: str) -> dict[str, Any]:
    h, n_layers = r.int("hidden_size", 4096, why="Step3p7TextConfig default"), r.int("num_hidden_layers", 45,
                                                                                     why="Step3p7TextConfig default")
    nq = r.int("num_attention_heads", 64, why="Step3p7TextConfig default")
    kv_key = "num_key_value_heads" if r.has("num_key_value_heads") or not r.has("num_attention_groups") \
        else "num_attention_groups"
    nkv = r.int(kv_key, 8, why="Step3p7TextConfig default")
    hd = r.int("head_dim", 128, why="Step3p7TextConfig default")
    vocab = r.int("vocab_size", 128815, why="Step3p7TextConfig default")
    mtp = r.int("num_nextn_predict_layers", 0, minimum=0) if r.has("num_nextn_predict_layers") else 0
    kinds = _per_layer(r, "layer_types", n_layers, mtp, LAYER_KINDS) or ["full_attention"] * n_layers
    window = sliding_window(r)
    if "sliding_attention" in kinds and window is None:
        window = r.int("sliding_window")
    other = r.raw("attention_other_setting")
    if r.has("num_sliding_attention_heads"):
        nq_sliding = r.int("num_sliding_attention_heads")
    elif isinstance(other, dict) and other.get("num_attention_heads") is not None:
        nq_sliding = r.check_int("attention_other_setting", other["num_attention_heads"])
    else:
        nq_sliding = nq
    if isinstance(other, dict):
        # vLLM step3p5.py also takes the sliding layers' KV heads and head_dim from this dict, which
        # transformers ignores: where they differ from the global ones the two engines disagree.
        for key, value in (("num_attention_groups", nkv), ("head_dim", hd)):
            if other.get(key) is not None and other[key] != value:
                raise ConfigError(r._name(f"attention_other_setting.{key}"),
                                  f"{other[key]!r} differs from the global {value}: vLLM would cache the sliding "
                                  "layers with it, transformers ignores it; refused rather than guessed")
    for heads in {nq, nq_sliding}:
        if heads % nkv:
            raise ConfigError(r._name(kv_key), f"{nkv} KV heads must divide {heads} query heads")
    bias = r.bool("attention_bias", False)

    def attention(heads: int):
        return (
            Linear(name="q_proj", in_features=h, out_features=heads * hd, bias=bias),
            Linear(name="k_proj", in_features=h, out_features=nkv * hd, bias=bias),
            Linear(name="v_proj", in_features=h, out_features=nkv * hd, bias=bias),
            Linear(name="o_proj", in_features=heads * hd, out_features=h, bias=bias, shard="row"),
            rms("q_norm", hd), rms("k_norm", hd),
            # per-head output gate: sigmoid(g_proj(x)) scales each head's output
            Linear(name="g_proj", in_features=h, out_features=heads),
        )

    is_moe = _moe_layers(r, n_layers, mtp)
    mlp_bias = r.bool("mlp_bias", False)
    if any(is_moe):
        n_key = next((k for k in ("n_routed_experts", "moe_num_experts", "num_local_experts", "num_experts")
                      if r.has(k)), "n_routed_experts")
        n = r.int(n_key, 288, why="Step3p7TextConfig default")
        k_key = "num_experts_per_tok" if r.has("num_experts_per_tok") or not r.has("moe_top_k") else "moe_top_k"
        k = r.int(k_key, 8, why="Step3p7TextConfig default")
        if k > n:
            raise ConfigError(r._name(k_key), f"{k} experts per token but only {n} experts")
        inter_e = r.int("moe_intermediate_size", 1280, why="Step3p7TextConfig default")
        experts = fused_experts(n, k, h, inter_e)
        if r.has("n_shared_experts") and r.int("n_shared_experts", minimum=0) != 1:
            raise ConfigError(r._name("n_shared_experts"), "Step-3.5 / 3.7 have exactly one shared expert "
                              f"(transformers builds one), got {r.raw('n_shared_experts')}")
        share_key = "share_expert_dim" if r.has("share_expert_dim") or not r.has("share_expert_dims") \
            else "share_expert_dims"
        shared = gated_mlp(h, r.int(share_key, 1280, why="Step3p7TextConfig default"), bias=mlp_bias,
                           prefix="shared_experts.")
    norms = (rms("input_layernorm", h), rms("post_attention_layernorm", h))
    made: dict[tuple[str, bool], DecoderLayer] = {}
    layers = []
    for i, kind in enumerate(kinds):
        key = (kind, is_moe[i])
        if key not in made:
            cache = attention_cache(kind, nkv, hd, window, None)
            attn = attention(nq_sliding if kind == "sliding_attention" else nq)
            if key[1]:
                made[key] = moe_layer(cache, attn, norms, h, experts, shared)
            else:
                inter = r.int("intermediate_size", 11264, why="Step3p7TextConfig default")
                made[key] = DecoderLayer(cache=cache, attention=attn, mlp=gated_mlp(h, inter, bias=mlp_bias),
                                         norms=norms)
        layers.append(made[key])
    return llama_tail(r, h=h, n_layers=n_layers, nq=nq, nkv=nkv, hd=hd, vocab=vocab, layers=layers)


MODEL_TYPES = {
    "step3p5": build_step3p5,
    # A flat file that carries the wrapper's model_type (aiconfigurator's Step-3.7-Flash): its
    # text decoder's fields at top level.
    "step3p7": build_step3p5,
}
