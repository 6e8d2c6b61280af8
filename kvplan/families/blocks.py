"""Shared building blocks of the family modules: norms, attention and MLP linears, experts,
layer kinds, and the common config dimensions (with transformers' derivations recorded).

Shapes follow the transformers 5.x modeling files (``modeling_<family>.py``).
"""

from typing import Any

from kvplan.errors import ConfigError
from kvplan.layers import ChunkedLocalAttention, FullAttention, SlidingWindowAttention
from kvplan.spec import Component, DecoderLayer, Experts, Linear, Norm, Tensor

LAYER_TYPES = ("full_attention", "sliding_attention", "chunked_attention", "linear_attention")


def rms(name: str, dim: int) -> Norm:
    return Norm(name=name, dim=dim)


def layernorm(name: str, dim: int, bias: bool = True) -> Norm:
    return Norm(name=name, dim=dim, bias=bias)


def attention_linears(h: int, nq: int, nkv: int, hd: int, *, qkv_bias=False, o_bias=False) -> tuple[Linear, ...]:
    """q/k/v/o projections: q [nq*hd, h], k and v [nkv*hd, h], o [h, nq*hd]."""
    return (
        Linear(name="q_proj", in_features=h, out_features=nq * hd, bias=qkv_bias),
        Linear(name="k_proj", in_features=h, out_features=nkv * hd, bias=qkv_bias),
        Linear(name="v_proj", in_features=h, out_features=nkv * hd, bias=qkv_bias),
        Linear(name="o_proj", in_features=nq * hd, out_features=h, bias=o_bias, shard="row"),
    )


def gated_mlp(h: int, inter: int, *, bias=False, count=1, prefix="") -> tuple[Linear, ...]:
    """SwiGLU / GeGLU: gate and up [inter, h], down [h, inter]."""
    return (
        Linear(name=f"{prefix}gate_proj", in_features=h, out_features=inter, bias=bias, count=count),
        Linear(name=f"{prefix}up_proj", in_features=h, out_features=inter, bias=bias, count=count),
        Linear(name=f"{prefix}down_proj", in_features=inter, out_features=h, bias=bias, count=count, shard="row"),
    )


def plain_mlp(h: int, inter: int, *, bias=True, names=("fc1", "fc2")) -> tuple[Linear, ...]:
    """GELU MLP: up [inter, h], down [h, inter]."""
    return (
        Linear(name=names[0], in_features=h, out_features=inter, bias=bias),
        Linear(name=names[1], in_features=inter, out_features=h, bias=bias, shard="row"),
    )


def embed(vocab: int, h: int, name: str = "embed_tokens") -> Linear:
    # An embedding is a [vocab, h] table; stored as a Linear so quantization/TP treat it uniformly.
    return Linear(name=name, in_features=h, out_features=vocab, shard="vocab", quantizable=False)


def lm_head(r, vocab: int, h: int, *, tie_default: bool, bias: bool = False) -> tuple[tuple[Component, ...], bool]:
    tied = r.bool("tie_word_embeddings", tie_default)
    if tied:
        return (), True
    return (Linear(name="lm_head", in_features=h, out_features=vocab, bias=bias, shard="vocab", quantizable=False),), False


def biased_lm_head(r, vocab: int, h: int, *, tie_default: bool, bias: bool) -> tuple[tuple[Component, ...], bool]:
    """``blocks.lm_head``, except that a biased head tied to the embedding keeps its own bias
    [vocab] (transformers ties only the weight: GPT-J with tie_word_embeddings still has lm_head.bias)."""
    head, tied = lm_head(r, vocab, h, tie_default=tie_default, bias=bias)
    if tied and bias:
        head = (Tensor(name="lm_head.bias", numel=vocab, shard="replicated"),)
    return head, tied


def experts_block(r, h: int, inter: int, n_key: str, k_key: str, *, bias=False) -> Experts:
    # transformers 5 renames the expert count to num_local_experts when it saves a config.
    n = r.int(n_key) if r.has(n_key) or not r.has("num_local_experts") else r.int("num_local_experts")
    k = r.int(k_key, n, why="absent: every expert counted as active")
    if k > n and not r.missing:
        raise ConfigError(r._name(k_key), f"{k} experts per token but only {n} experts")
    linears = tuple(
        lin.model_copy(update={"shard": "expert"}) for lin in gated_mlp(h, inter, bias=bias)
    )
    return Experts(num_experts=n, num_experts_per_tok=k, linears=linears)


def fused_experts(n: int, k: int, h: int, inter: int, *, bias: bool = False) -> Experts:
    """``n`` routed experts, ``k`` active per token, each as transformers 5 packs it: gate_up_proj
    [2 x inter, h] and down_proj [h, inter]. Llama-4-Scout (16 experts, inter 8,192, h 5,120):
    16 x 3 x 8,192 x 5,120 = 2,013,265,920 parameters a layer."""
    return Experts(num_experts=n, num_experts_per_tok=k, linears=(
        Linear(name="gate_up_proj", in_features=h, out_features=2 * inter, bias=bias, shard="expert"),
        Linear(name="down_proj", in_features=inter, out_features=h, bias=bias, shard="expert")))


def router(h: int, n: int, bias: bool = False) -> tuple[Component, ...]:
    return (Linear(name="router", in_features=h, out_features=n, bias=bias, shard="replicated", quantizable=False),)


def moe_layer(cache, attention: tuple[Component, ...], norms: tuple[Component, ...], h: int, experts: Experts,
              shared: tuple[Component, ...] = ()) -> DecoderLayer:
    """An MoE decoder layer: the routed ``experts`` behind a router [num_experts, h] (no bias), and
    ``shared`` the always-on shared expert MLP (empty when the family has none). Qwen3-30B-A3B: 128
    experts, router 128 x 2,048 = 262,144 parameters a layer."""
    return DecoderLayer(cache=cache, attention=attention, mlp=shared, experts=experts,
                        router=router(h, experts.num_experts), norms=norms)


def layer_types(r, n_layers: int, default: list[str]) -> list[str]:
    """``layer_types`` from the config, validated; else the family's derived default."""
    given = r.str_list("layer_types")
    if given is None:
        return default
    if len(given) != n_layers:
        raise ConfigError(r._name("layer_types"), f"has {len(given)} entries but num_hidden_layers is {n_layers}")
    bad = sorted(set(given) - set(LAYER_TYPES))
    if bad:
        raise ConfigError(r._name("layer_types"), f"unknown layer type(s) {bad}; allowed: {list(LAYER_TYPES)}")
    return given


def attention_cache(kind: str, nkv: int, hd: int, window: int | None, chunk: int | None, vhd: int | None = None):
    vhd = vhd or hd
    if kind == "sliding_attention":
        return SlidingWindowAttention(num_key_value_heads=nkv, head_dim=hd, v_head_dim=vhd, sliding_window=window)
    if kind == "chunked_attention":
        return ChunkedLocalAttention(num_key_value_heads=nkv, head_dim=hd, v_head_dim=vhd, attention_chunk_size=chunk)
    return FullAttention(num_key_value_heads=nkv, head_dim=hd, v_head_dim=vhd)


def core_dims(r, *, hidden="hidden_size", layers="num_hidden_layers", heads="num_attention_heads",
              kv="num_key_value_heads", kv_default: int | None = None) -> tuple[int, int, int, int, int]:
    """(h, n_layers, n_heads, n_kv_heads, head_dim) with transformers' derivations recorded."""
    h = r.int(hidden)
    n_layers = r.int(layers)
    nq = r.int(heads)
    nkv = r.int(kv, kv_default if kv_default is not None else nq, why=f"= {heads}, i.e. multi-head attention")
    if r.missing:
        r.fail_if_missing()
    if r.has("head_dim"):
        hd = r.int("head_dim")
    else:
        if h % nq:
            raise ConfigError(r._name("head_dim"), f"absent, and hidden_size {h} is not divisible by {heads} {nq}")
        hd = r.int("head_dim", h // nq, why=f"{hidden} // {heads} = {h} // {nq}")
    if nkv > nq or nq % nkv:
        raise ConfigError(r._name(kv), f"{nkv} must divide {heads} ({nq})")
    return h, n_layers, nq, nkv, hd


def spec_fields(r, *, h, n_layers, nq, nkv, hd, vocab, embeddings, layers, final_norm, head, tied,
                max_pos_key="max_position_embeddings") -> dict[str, Any]:
    max_pos = r.int(max_pos_key, 0, minimum=0) if r.has(max_pos_key) else None
    return dict(
        vocab_size=vocab, hidden_size=h, num_hidden_layers=n_layers, num_attention_heads=nq,
        num_key_value_heads=nkv, head_dim=hd, max_position_embeddings=max_pos or None,
        tie_word_embeddings=tied, embeddings=tuple(embeddings), layers=tuple(layers),
        final_norm=tuple(final_norm), lm_head=tuple(head),
    )


def llama_tail(r, *, h: int, n_layers: int, nq: int, nkv: int, hd: int, vocab: int, layers, tie_default: bool = False,
               embeddings=None, final_norm: Component | None = None, head_bias: bool = False,
               max_pos_key: str = "max_position_embeddings") -> dict[str, Any]:
    """The end every Llama-style builder shares, as ModelSpec fields: ``embeddings`` (default the one
    table embed_tokens [vocab, h]), ``final_norm`` (default the RMSNorm ``norm`` [h]), and lm_head
    [vocab, h] unless ``tie_word_embeddings`` (absent: ``tie_default``) ties it to the table; a biased
    head keeps its bias when tied (``biased_lm_head``). Llama-3.1-8B: 128,256 x 4,096 = 525,336,576
    parameters in embed_tokens, as many again in the untied lm_head, 4,096 in the norm."""
    head, tied = biased_lm_head(r, vocab, h, tie_default=tie_default, bias=head_bias)
    return spec_fields(r, h=h, n_layers=n_layers, nq=nq, nkv=nkv, hd=hd, vocab=vocab,
                       embeddings=[embed(vocab, h)] if embeddings is None else embeddings, layers=layers,
                       final_norm=[rms("norm", h) if final_norm is None else final_norm], head=head, tied=tied,
                       max_pos_key=max_pos_key)


def sliding_window(r) -> int | None:
    """The sliding window, or None; some configs (Qwen2-MoE) write 0 for "no window"."""
    return (r.int("sliding_window", minimum=0) or None) if r.has("sliding_window") else None


def state_dtype_bytes(r, key: str) -> int | None:
    """Bytes per element of a recurrent-state dtype the config names (``"float32"`` -> 4), or None
    when it names none (the state then follows the model dtype). vLLM's per-model config hooks read
    these keys (vllm/model_executor/models/config.py: Qwen3.5 ``mamba_ssm_dtype``, Nemotron-H
    ``mamba_ssm_cache_dtype``) when ``--mamba-ssm-cache-dtype`` is left at auto."""
    value = r.get(key)
    if value is None:
        return None
    sizes = {"float32": 4, "fp32": 4, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2}
    if not isinstance(value, str) or value.lower() not in sizes:
        raise ConfigError(r._name(key), f"must be one of float32, bfloat16, float16; got {value!r}")
    return sizes[value.lower()]


# RoPE tables the engine builds (ModelSpec.rope_caches). Families whose attention has no rotary table in
# vLLM (learned / ALiBi / NoPE positions) get none; families whose vLLM rope path kvplan has not read get
# none either (their "Model loading took" is then short by the table, tens of MiB), listed apart so a
# new family is a decision, not a silent default.
NO_ROPE_MODEL_TYPES = frozenset({"gpt2", "gpt_bigcode", "opt", "bloom", "mpt", "gpt_neo", "jamba", "nemotron_h"})
ROPE_UNREAD_MODEL_TYPES = frozenset({
    "codegen", "deepseek_v4", "gemma3n_text", "kimi_linear", "longcat_flash",
    "mimo_v2_flash", "minimax_m3", "minimax_m3_vl", "minimax_m3_vl_text", "step3p5", "step3p7", "bamba",
    "granitemoehybrid", "falcon_h1", "zamba2", "lfm2", "lfm2_moe", "minicpm3"})
MLA_ROPE_MODEL_TYPES = frozenset({"deepseek_v2", "deepseek_v3", "deepseek_v32", "glm_moe_dsa", "glm4_moe_lite"})
MAX_POSITION_DEFAULTS = {"falcon": 2048}  # transformers 5.23 FalconConfig.max_position_embeddings
# Configs that omit partial_rotary_factor take the transformers config class default (5.23).
PARTIAL_ROTARY_DEFAULTS = {"phi": 0.5, "glm4": 0.5, "glm4_moe": 0.5, "qwen3_next": 0.25, "qwen3_5_text": 0.25,
                           "qwen3_5_moe_text": 0.25, "qwen3_5": 0.25, "qwen3_5_moe": 0.25}


def _rope_params(cfg, layer_type: str | None = None) -> dict[str, Any]:
    """The rope parameters as one flat dict: transformers 5 ``rope_parameters`` (per layer type where the
    config nests them), else the 4.x ``rope_scaling`` with ``rope_theta`` beside it. ``type`` is read as
    ``rope_type`` (older configs), as vLLM's config patching does."""
    given = cfg.get("rope_parameters")
    if isinstance(given, dict) and layer_type is not None and isinstance(given.get(layer_type), dict):
        given = given[layer_type]
    if not isinstance(given, dict) or not given:
        given = dict(cfg.get("rope_scaling") or {}) if isinstance(cfg.get("rope_scaling"), dict) else {}
        if "rope_theta" in cfg:
            given.setdefault("rope_theta", cfg["rope_theta"])
    out = dict(given)
    out["rope_type"] = str(out.get("rope_type") or out.get("type") or "default")
    out["_field"] = "rope_parameters" if isinstance(cfg.get("rope_parameters"), dict) else "rope_scaling"
    return out


def _num(value: Any, default: float) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else default


def _rope_cache(params: dict[str, Any], rotary_dim: int, max_position: int, **extra):
    from kvplan.spec import RopeCache

    kind = params["rope_type"]
    if "mrope_section" in params or kind == "mrope":
        kind = "mrope"
    orig = params.get("original_max_position_embeddings")
    factor = params.get("factor", 1.0)
    field = params.get("_field", "rope_scaling")
    # both size the table (rows = factor x positions for linear / YaRN): a value that is not a number is refused
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= 1024:
        raise ConfigError(f"{field}.factor", f"a rope scaling factor must be a number in (0, 1024], got {factor!r}")
    if orig is not None and (isinstance(orig, bool) or not isinstance(orig, int) or orig < 1):
        raise ConfigError(f"{field}.original_max_position_embeddings", f"must be a whole number >= 1, got {orig!r}")
    return RopeCache(rotary_dim=rotary_dim, max_position=max_position, base=_num(params.get("rope_theta"), 10000.0),
                     rope_type=kind, factor=float(factor), original_max_position=orig, **extra)


def rope_caches(r, model_type: str, fields: dict[str, Any]) -> tuple:
    """The rotary tables vLLM's model file builds (one ``get_rope`` instance per distinct parameter set,
    vllm/model_executor/layers/rotary_embedding/__init__.py ``_ROPE_DICT``), from the config by its own
    names: rotary_dim = int(head_dim x partial_rotary_factor) (``rotary_pct`` for gpt_neox, ``rotary_dim``
    for gptj / minimax_m2, qk_rope_head_dim for MLA), max_position = max_position_embeddings, scaling from
    rope_parameters / rope_scaling. Family rules (vLLM model files, read 2026-12 in the 0.6.3 - 0.33.0
    wheels): gemma3 builds two (sliding layers: rope_local_base_freq, no scaling; full layers: rope_theta
    with the config's scaling: gemma3.py); gpt-oss one YaRN table in float32 (gpt_oss.py ``dtype=torch.float32``);
    DeepSeek MLA one ``deepseek_yarn`` table over qk_rope_head_dim (deepseek_v2.py rewrites any scaling type),
    V3.2 a second one for the indexer (``indexer_rope_emb``, is_neox_style differs); llama4 only on its RoPE
    (chunked) layers. Reads the config only: records no assumption, changes no parameter count.
    Llama-3.1-8B: one table, rotary_dim 128, max_position 131,072, llama3."""
    cfg = r.cfg
    if model_type in NO_ROPE_MODEL_TYPES or model_type in ROPE_UNREAD_MODEL_TYPES:
        return ()
    if model_type == "falcon" and cfg.get("alibi"):
        return ()
    # A config that omits max_position_embeddings: vLLM reads the transformers config object, whose class
    # default then applies (FalconConfig: 2048; falcon.py's getattr fallback 8192 never fires).
    max_pos = fields.get("max_position_embeddings") or MAX_POSITION_DEFAULTS.get(model_type)
    hd = fields.get("head_dim")
    if not max_pos or not hd:
        return ()
    if model_type in MLA_ROPE_MODEL_TYPES:
        rope = cfg.get("qk_rope_head_dim")
        if not isinstance(rope, int) or rope <= 0:
            return ()
        params = _rope_params(cfg)
        if params["rope_type"] != "default":
            params["rope_type"] = "deepseek_yarn"
        tables = [_rope_cache(params, rope, max_pos)]
        if model_type in ("deepseek_v32", "glm_moe_dsa"):
            tables.append(_rope_cache(params, rope, max_pos, name="indexer_rope_emb"))
        return tuple(tables)
    if model_type in ("gemma3_text", "gemma3"):
        local = _rope_params(cfg, "sliding_attention")
        if not isinstance((cfg.get("rope_parameters") or {}).get("sliding_attention"), dict):
            local = {"rope_type": "default", "rope_theta": cfg.get("rope_local_base_freq", 10000.0)}
        full = _rope_params(cfg, "full_attention")
        # transformers 5.23 Gemma3TextConfig.default_theta: global 1e6, local 1e4 when the config omits them (vLLM
        # reads the config object, so the two tables differ even without rope scaling)
        full.setdefault("rope_theta", 1_000_000.0)
        kinds = {layer.cache.kind for layer in fields["layers"]}
        tables = []
        if "sliding_attention" in kinds:
            tables.append(_rope_cache(local, hd, max_pos, name="local", layer_types=("sliding_attention",)))
        if "full_attention" in kinds:
            g = _rope_cache(full, hd, max_pos, name="global", layer_types=("full_attention",))
            same = tables and tables[0].model_copy(update={"name": "global", "layer_types": g.layer_types}) == g
            tables = [tables[0].model_copy(update={"layer_types": ()})] if same else tables + [g]
        return tuple(tables)
    params = _rope_params(cfg)
    if model_type == "gpt_oss":
        params["rope_type"] = "yarn"  # gpt_oss.py passes rope_type "yarn" whatever the config calls it
        return (_rope_cache(params, hd, max_pos, fp32=True),)
    if model_type == "gpt_neox":
        pct = cfg.get("rotary_pct", params.get("partial_rotary_factor", cfg.get("partial_rotary_factor", 0.25)))
        rotary = int(hd * _num(pct, 0.25))
    elif model_type in ("gptj", "minimax_m2") and isinstance(cfg.get("rotary_dim"), int) and cfg["rotary_dim"] > 0:
        rotary = cfg["rotary_dim"]
    else:
        prf = params.get("partial_rotary_factor", cfg.get("partial_rotary_factor"))
        rotary = int(hd * min(_num(prf, PARTIAL_ROTARY_DEFAULTS.get(model_type, 1.0)), 1.0))
    if rotary <= 0:
        return ()
    types = ("chunked_attention",) if model_type == "llama4_text" else ()
    return (_rope_cache(params, rotary, max_pos, layer_types=types),)
