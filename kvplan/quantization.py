"""A config's ``quantization_config`` -> the weight format of every linear, per layer and component.

``read_quantization_config`` reads the method's own fields (as vLLM's ``*Config.from_config`` does)
into a ``QuantScheme``: a default format, the modules kept unquantized (the ignore / exclude list)
and per-module formats (mixed precision). ``format_overrides`` then matches those module names
against the spec's components and returns ``FormatOverride`` entries (stored on the ``ModelSpec``).
A method kvplan cannot read is refused naming the field and listing the methods it reads; a
quantized checkpoint is never silently planned as 16-bit.

Module names. kvplan's components have short names ("q_proj") in categories ("attention"); each
is given the Hugging Face module paths it may have, and a list entry matches the component when it
matches one of them:

| category   | HF module path(s) of a component ``name`` in layer i (``{L}`` = ``model.layers.{i}``) |
|------------|------------------------------------------------------------------------------------|
| embeddings | ``model.{name}`` (``model.embed_tokens``), ``model.language_model.{name}``, ``transformer.{name}``, ``{name}`` |
| lm_head    | ``lm_head``, ``language_model.lm_head``                                            |
| attention  | ``{L}.self_attn.{name}`` (also ``.attn.`` ``.attention.`` ``.mixer.`` ``.linear_attn.`` ``.self_attention.``) |
| mlp        | ``{L}.mlp.{name}`` (also ``.feed_forward.`` ``.ffn.`` ``.mixer.`` ``.block_sparse_moe.``) |
| experts    | ``{L}.mlp.experts.{e}.{name}`` and ``{L}.mlp.experts.{name}`` (fused); Mixtral's ``block_sparse_moe.experts.{e}.w1/w3/w2`` for gate/up/down |
| router     | ``{L}.mlp.gate``, ``{L}.mlp.router``, ``{L}.block_sparse_moe.gate``                |
| norms, other | ``{L}.{name}`` / ``model.{name}``                                                |

A family whose checkpoint and vLLM name the modules otherwise adds its own paths first: DeepSeek-V4
(``families/deepseek_v4.VLLM_MODULE_NAMES``: ``{L}.attn.fused_wqa_wkv`` for q_a_proj and kv_proj, ``attn.wq_b``,
``attn.wo_a``, ``attn.wo_b``, ``attn.indexer.wq_b``, ``ffn.shared_experts.gate_up_proj``, ...), so a
compressed-tensors target ``re:.*attn.*(fused_wqa_wkv|wq_b|wo_a|wo_b)$`` hits what vLLM's hits.

Entries: ``re:<regex>``: ``re.match`` on a full path (compressed-tensors' and GPTQ ``dynamic``'s
rule); an entry with ``*``, ``?`` or ``[``: ``fnmatch`` on a full path or one of its parent modules
(modelopt ``exclude_modules``); any other entry: a module name matched on dot boundaries anywhere
in the path, so ``lm_head``, ``self_attn``, ``mlp.gate``, ``layers.0`` and
``model.layers.0.self_attn.q_proj`` all work, as do parent modules (``model.layers.3.mlp``) and any
root prefix (``model.language_model.layers.0...``). Limits: vLLM's ``modules_to_not_convert`` is a
raw substring test (``mlp.gate`` would also hit ``mlp.gate_proj``); kvplan keeps dot boundaries.
Per-expert entries are honoured when named exactly (``model.layers.3.mlp.experts.17.down_proj``);
a wildcard or regex is tested once per layer with expert index 0 and applies to all of that
layer's experts. Layers are ``layers.{i}`` (GPT-2's ``h.{i}`` is not mapped).
"""

import bisect
import fnmatch
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kvplan.errors import ConfigError
from kvplan.layers import CompressedAttention
from kvplan.spec import FormatOverride, Linear
from kvplan.weights import QUANTIZED_CATEGORIES, UNQUANTIZED, component_format

SUPPORTED_METHODS = ("fp8", "compressed-tensors", "modelopt", "mxfp4", "awq", "gptq", "bitsandbytes")
MAX_ENTRIES = 1_000_000  # module names one list may hold (a 16 MiB config holds ~300,000 short ones)


@dataclass(frozen=True)
class QuantScheme:
    """What a quantization_config says, before it meets the model's components."""

    method: str
    default: str  # format of a quantizable linear no entry names (UNQUANTIZED: only the named ones are quantized)
    ignore: tuple[str, ...] = ()  # modules kept in 16 bits
    per_module: tuple[tuple[str, str], ...] = ()  # (module entry, format): mixed precision, first match wins
    categories: tuple[str, ...] = QUANTIZED_CATEGORIES  # categories the default applies to
    notes: tuple[str, ...] = field(default=())


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _refuse_method(method: str, field_name: str) -> ConfigError:
    return ConfigError(f"{field_name}.quant_method",
                       f"{method or '(none)'!r} is not a quantization method kvplan reads; supported: "
                       f"{', '.join(SUPPORTED_METHODS)}. Remove quantization_config and pick a weight format "
                       "only if the checkpoint really ships unquantized weights.")


def _names(qc: Mapping, keys: tuple[str, ...], field_name: str) -> tuple[str, ...]:
    """The first present list of module names among ``keys`` (None / absent: empty)."""
    for key in keys:
        value = qc.get(key)
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{field_name}.{key}", f"must be a list of module names, got {_short(value)}")
        if len(value) > MAX_ENTRIES:
            raise ConfigError(f"{field_name}.{key}", f"{len(value):,} entries; at most {MAX_ENTRIES:,}")
        return tuple(value)
    return ()


def _pos_int(qc: Mapping, key: str, field_name: str, default: int | None = None, *, allow=()) -> int:
    value = qc.get(key, default)
    if value in allow:
        return value
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 1 << 20:
        raise ConfigError(f"{field_name}.{key}", f"must be a positive integer, got {_short(value)}")
    return value


def read_quantization_config(qc: Any, field_name: str = "quantization_config") -> QuantScheme:
    """The ``QuantScheme`` of a config's quantization_config; ``ConfigError`` naming the field when
    kvplan cannot read it."""
    if not isinstance(qc, Mapping):
        raise ConfigError(field_name, f"must be an object, got {type(qc).__name__}")
    method = qc.get("quant_method")
    if method is None and (isinstance(qc.get("quantization"), Mapping) or "quant_algo" in qc):
        method = "modelopt"  # an hf_quant_config.json embedded as is
    if not isinstance(method, str):
        raise _refuse_method(_short(method) if method is not None else "", field_name)
    method = method.strip().lower()
    reader = _READERS.get(method)
    if reader is None:
        raise _refuse_method(method, field_name)
    return reader(qc, field_name)


def _fp8(qc: Mapping, f: str) -> QuantScheme:
    """vLLM Fp8Config: ``weight_block_size`` [n, k] -> block scales; else one weight scale per
    tensor, plus an input scale when ``activation_scheme`` is "static". Ignore: ``ignored_layers``
    (vLLM) or ``modules_to_not_convert`` (transformers' FineGrainedFP8Config). Worked number, one
    4096 x 4096 matrix: fp8 16,777,220 B; fp8-static 16,777,224; fp8-block 16,781,312 (+ 4 x 32 x 32)."""
    block = qc.get("weight_block_size")
    scheme = qc.get("activation_scheme", "dynamic")
    if scheme not in ("static", "dynamic"):
        raise ConfigError(f"{f}.activation_scheme", f"must be 'static' or 'dynamic', got {_short(scheme)}")
    if block is not None:
        if (not isinstance(block, list) or len(block) != 2
                or not all(isinstance(b, int) and not isinstance(b, bool) and 0 < b <= 65536 for b in block)):
            raise ConfigError(f"{f}.weight_block_size", f"must be two positive integers [n, k], got {_short(block)}")
        fmt = "fp8-block" if block == [128, 128] else f"fp8-block-{block[0]}x{block[1]}"
    else:
        fmt = "fp8-static" if scheme == "static" else "fp8"
    return QuantScheme("fp8", fmt, _names(qc, ("ignored_layers", "modules_to_not_convert"), f))


def _ct_weights_format(group: Mapping, gf: str) -> str:
    """One compressed-tensors config group -> a kvplan format (vLLM CompressedTensorsConfig._get_scheme_from_parts)."""
    w = group.get("weights")
    if not isinstance(w, Mapping):
        raise ConfigError(f"{gf}.weights", "must be an object with num_bits, type, strategy")
    a = group.get("input_activations")
    a = a if isinstance(a, Mapping) else None
    bits, kind, strategy = w.get("num_bits"), w.get("type", "int"), w.get("strategy")
    size = w.get("group_size")
    static = a is not None and a.get("dynamic") is False
    if kind == "float" and bits == 8:
        if strategy == "block":
            bs = w.get("block_structure") or [128, 128]
            if (not isinstance(bs, list) or len(bs) != 2
                    or not all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in bs)):
                raise ConfigError(f"{gf}.weights.block_structure", f"must be [n, k], got {_short(bs)}")
            return "fp8-block" if bs == [128, 128] else f"fp8-block-{bs[0]}x{bs[1]}"
        if strategy == "channel":
            return "fp8-channel" + ("-static" if static else "")
        if strategy == "tensor":
            return "fp8" + ("-static" if static else "")
    if kind == "int" and bits == 8 and a is not None and strategy in ("channel", "tensor"):
        asym = static and a.get("symmetric") is False
        return "int8" + ("-tensor" if strategy == "tensor" else "") + ("-static" if static else "") + \
            ("-asym" if asym else "")
    if kind == "float" and bits == 4:
        if size == 16:
            return "nvfp4" if a is not None else "nvfp4-wo"
        if size == 32:
            return "mxfp4"
    if kind == "int" and bits in (4, 8) and a is None and strategy in ("group", "channel"):
        g = "ch" if strategy == "channel" else (f"g{size}" if isinstance(size, int) and not isinstance(size, bool)
                                                and size > 0 else None)
        if g is not None:
            asym = "-asym" if w.get("symmetric") is False else ""
            actorder = "-actorder" if w.get("actorder") == "group" else ""
            return f"w{bits}a16-{g}{asym}{actorder}"
    raise ConfigError(f"{gf}.weights", f"num_bits={_short(bits)}, type={_short(kind)}, strategy={_short(strategy)}, "
                      f"group_size={_short(size)} (input_activations {'set' if a else 'none'}) is not a scheme kvplan "
                      "sizes; it reads fp8 (tensor/channel/block), int8 w8a8, w4a16/w8a16 (group/channel), nvfp4, mxfp4")


def _compressed_tensors(qc: Mapping, f: str) -> QuantScheme:
    """compressed-tensors (llm-compressor): each ``config_groups`` entry gives a scheme to its
    ``targets`` ("Linear" = every linear; else module names / "re:" patterns); ``ignore`` lists
    modules left unquantized. A 2:4 ``sparsity_config`` (other than dense) is refused. Worked numbers,
    one 4096 x 4096 matrix: W8A8 int8 16,793,600 B (+ 4 x 4096 channel scales); FP8_DYNAMIC the same;
    W4A16 g128 8,650,768 (8,388,608 packed + 262,144 scales + 16 weight_shape); NVFP4 9,437,192."""
    groups = qc.get("config_groups")
    if not isinstance(groups, Mapping) or not groups:
        raise ConfigError(f"{f}.config_groups", "must be a non-empty object of quantization groups")
    sparsity = qc.get("sparsity_config")
    if isinstance(sparsity, Mapping) and sparsity.get("format") not in (None, "dense"):
        raise ConfigError(f"{f}.sparsity_config", f"format {_short(sparsity.get('format'))}: sparse checkpoints are "
                          "not sized by kvplan")
    default, per_module = UNQUANTIZED, []
    for name, group in groups.items():
        gf = f"{f}.config_groups.{name}"
        if not isinstance(group, Mapping):
            raise ConfigError(gf, "must be an object")
        fmt = _ct_weights_format(group, gf)
        targets = group.get("targets") or ["Linear"]
        if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
            raise ConfigError(f"{gf}.targets", "must be a list of module names or classes")
        for t in targets:
            if t == "Linear" or t.endswith("Linear"):
                default = fmt
            else:
                per_module.append((t, fmt))
    notes = (f"compressed-tensors format {qc.get('format')!r}",) if isinstance(qc.get("format"), str) else ()
    return QuantScheme("compressed-tensors", default, _names(qc, ("ignore",), f), tuple(per_module), notes=notes)


# vLLM modelopt.py: ModelOptFp8LinearMethod (weight_scale + input_scale per shard), ModelOptNvFp4LinearMethod,
# ModelOptNvFp4W4A16LinearMethod (no input scale kept), ModelOptMxFp8LinearMethod, the per-channel and
# block FP8 variants.
_MODELOPT_ALGOS = {"FP8": "fp8-static", "NVFP4": "nvfp4", "W4A16_NVFP4": "nvfp4-wo", "MXFP8": "mxfp8",
                   "FP8_PER_CHANNEL_PER_TOKEN": "fp8-channel", "FP8_PB_WO": "fp8-block"}


def _modelopt_format(algo: Any, where: str, group_size: Any = 16) -> str:
    key = str(algo).upper() if isinstance(algo, str) else ""
    if key not in _MODELOPT_ALGOS:
        raise ConfigError(where, f"{_short(algo)} is not a modelopt algorithm kvplan sizes; it reads "
                          f"{', '.join(_MODELOPT_ALGOS)} and MIXED_PRECISION")
    if key in ("NVFP4", "W4A16_NVFP4") and group_size not in (None, 16):
        raise ConfigError(where, f"NVFP4 with group_size {_short(group_size)}: vLLM's NVFP4 uses 16")
    return _MODELOPT_ALGOS[key]


def _modelopt(qc: Mapping, f: str) -> QuantScheme:
    """NVIDIA ModelOpt: ``quant_algo`` FP8 (fp8 weight + per-tensor weight and input scales), NVFP4
    (group 16), FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO, or MIXED_PRECISION with ``quantized_layers``
    {module: {"quant_algo": ...}} (modules not listed stay unquantized). ``exclude_modules`` (or
    ``ignore``) with wildcards. An hf_quant_config.json ({"producer", "quantization": {...}})
    embedded as the quantization_config is read through its ``quantization`` object, as vLLM does.
    Worked numbers, one 4096 x 4096 matrix: FP8 16,777,224 B; NVFP4 9,437,192; W4A16_NVFP4 9,437,188;
    MXFP8 17,301,504 (+ 4096 x 128 e8m0 scales)."""
    inner, where = qc, f
    if isinstance(qc.get("quantization"), Mapping):
        inner, where = qc["quantization"], f"{f}.quantization"
    algo = inner.get("quant_algo")
    ignore = _names(inner, ("exclude_modules", "ignore"), where)
    if isinstance(algo, str) and algo.upper() == "MIXED_PRECISION":
        layers = inner.get("quantized_layers")
        if not isinstance(layers, Mapping) or not layers:
            raise ConfigError(f"{where}.quantized_layers", "MIXED_PRECISION needs {module: {quant_algo}} entries")
        if len(layers) > MAX_ENTRIES:
            raise ConfigError(f"{where}.quantized_layers", f"{len(layers):,} entries; at most {MAX_ENTRIES:,}")
        per_module = []
        for module, spec in layers.items():
            lf = f"{where}.quantized_layers.{_short(module)}"
            if not isinstance(spec, Mapping):
                raise ConfigError(lf, "must be an object with quant_algo")
            per_module.append((str(module), _modelopt_format(spec.get("quant_algo"), f"{lf}.quant_algo",
                                                             spec.get("group_size", 16))))
        return QuantScheme("modelopt_mixed", UNQUANTIZED, ignore, tuple(per_module))  # vLLM's get_name
    return QuantScheme("modelopt", _modelopt_format(algo, f"{where}.quant_algo", inner.get("group_size", 16)), ignore)


def _mxfp4(qc: Mapping, f: str) -> QuantScheme:
    """gpt-oss MXFP4: only the routed experts are MXFP4 (vLLM Mxfp4Config gives linear layers
    ``UnquantizedLinearMethod`` when skipped and has no MXFP4 linear method); ``modules_to_not_convert``.
    Worked number: gpt-oss-20b's expert gate_up_proj 5760 x 2880 = 8,294,400 + 90 x 5760 = 8,812,800 B
    (+ its bf16 bias)."""
    return QuantScheme("mxfp4", "mxfp4", _names(qc, ("modules_to_not_convert", "ignored_layers"), f),
                       categories=("experts",))


def _awq(qc: Mapping, f: str) -> QuantScheme:
    """AutoAWQ (vLLM AWQConfig): 4-bit, ``group_size`` (or ``q_group_size``), qzeros always stored;
    ``modules_to_not_convert``. Worked number: 4096 x 4096 at group 128 = 8,388,608 (qweight) + 65,536
    (qzeros) + 262,144 (scales) = 8,716,288 B."""
    bits_key = "bits" if "bits" in qc else "w_bit"
    bits = qc.get(bits_key)
    if bits != 4:
        raise ConfigError(f"{f}.{bits_key}", f"AWQ in vLLM is 4-bit only, got {_short(bits)}")
    group = _pos_int(qc, "group_size" if "group_size" in qc else "q_group_size", f, 128)
    return QuantScheme("awq", f"int4-g{group}", _names(qc, ("modules_to_not_convert",), f))


def _gptq(qc: Mapping, f: str) -> QuantScheme:
    """GPTQ (vLLM GPTQConfig): ``bits`` 2/4/8, ``group_size`` (-1: one group per column), ``desc_act``
    ("-actorder": no checkpoint byte, g_idx is always stored, but vLLM's Marlin keeps it only then) and ``sym``
    false ("-asym"); ``modules_to_not_convert``; ``dynamic``
    {"-:regex": {}} (skip) / {"+:regex" or "regex": {"bits", "group_size"}} per-module overrides;
    ``lm_head`` true quantizes lm_head too. Worked number: 4096 x 4096, 4 bit, group 128 = 8,388,608
    (qweight) + 65,536 (qzeros) + 262,144 (scales) + 16,384 (g_idx) = 8,732,672 B."""
    bits_key = "bits" if "bits" in qc else "w_bit"
    bits = qc.get(bits_key)
    if bits not in (2, 4, 8) or isinstance(bits, bool):
        raise ConfigError(f"{f}.{bits_key}", f"must be 2, 4 or 8, got {_short(bits)}")

    # desc_act / sym change no checkpoint byte but what vLLM keeps after loading (gptq_marlin.py: Marlin drops
    # qzeros and, without act order, g_idx; act order keeps g_idx and adds its sort indices; asymmetric GPTQ is not
    # Marlin-convertible): they ride on the format name. desc_act with one group per column is no act order
    # (GPTQMarlinConfig.__init__).
    desc_act = qc.get("desc_act") is True
    asym = qc.get("sym") is False

    def fmt_of(b, g) -> str:
        return (f"gptq-int{b}-" + ("ch" if g == -1 else f"g{g}") + ("-actorder" if desc_act and g != -1 else "")
                + ("-asym" if asym else ""))
    group = _pos_int(qc, "group_size", f, 128, allow=(-1,))
    default = fmt_of(bits, group)
    ignore, per_module = list(_names(qc, ("modules_to_not_convert",), f)), []
    dynamic = qc.get("dynamic") or {}
    if not isinstance(dynamic, Mapping):
        raise ConfigError(f"{f}.dynamic", f"must be an object {{regex: overrides}}, got {_short(dynamic)}")
    for key, over in dynamic.items():
        df = f"{f}.dynamic.{_short(key)}"
        if not isinstance(over, Mapping):
            raise ConfigError(df, "must be an object")
        body = str(key)[2:] if str(key)[:2] in ("+:", "-:") else str(key)
        if str(key).startswith("-:"):
            ignore.append("re:" + body)
        else:
            b = over.get("bits", bits)
            if b not in (2, 4, 8):
                raise ConfigError(f"{df}.bits", f"must be 2, 4 or 8, got {_short(b)}")
            per_module.append(("re:" + body, fmt_of(b, _pos_int(over, "group_size", df, group, allow=(-1,)))))
    if qc.get("lm_head") is True:
        per_module.append(("lm_head", default))
    return QuantScheme("gptq", default, tuple(ignore), tuple(per_module))


def _bitsandbytes(qc: Mapping, f: str) -> QuantScheme:
    """bitsandbytes (transformers BitsAndBytesConfig): ``load_in_4bit`` with ``bnb_4bit_quant_type``
    nf4/fp4 and ``bnb_4bit_use_double_quant``, or ``load_in_8bit`` (LLM.int8); ``llm_int8_skip_modules``.
    Worked numbers, 4096 x 4096 (bitsandbytes 0.50.2 ``quantize_4bit`` agrees): nf4 9,437,248 B, nf4 with
    double quant 8,655,940, int8 16,793,600 (weight + SCB fp32 per row)."""
    if qc.get("load_in_8bit") is True:
        fmt = "bnb-int8"
    elif qc.get("load_in_4bit") is True:
        kind = qc.get("bnb_4bit_quant_type", "fp4")
        if kind not in ("nf4", "fp4"):
            raise ConfigError(f"{f}.bnb_4bit_quant_type", f"must be 'nf4' or 'fp4', got {_short(kind)}")
        fmt = f"bnb-{kind}" + ("-dq" if qc.get("bnb_4bit_use_double_quant") is True else "")
    else:
        raise ConfigError(f"{f}.load_in_4bit", "neither load_in_4bit nor load_in_8bit is true")
    return QuantScheme("bitsandbytes", fmt, _names(qc, ("llm_int8_skip_modules", "modules_to_not_convert"), f))


# DeepSeek-V4's config.json ``expert_dtype`` (beside an fp8 block quantization_config): the routed experts' storage.
# "fp4": the checkpoint ships each routed expert's w1 / w2 / w3 as packed FP4 e2m1 (I8 [out, in/2], two values a
# byte) with one F8_E8M0 scale per 32 inputs ([out, in/32]), e.g. DeepSeek-V4-Flash "layers.0.ffn.experts.0.w1.weight
# I8 [2048, 2048]" / "w1.scale F8_E8M0 [2048, 128]" (a safetensors header listing, search index file id
# 56363803420, read 2026-12-01): kvplan's "mxfp4". vLLM (models/deepseek_v4.py ``DeepseekV4FP8Config``, 0.20.0+
# wheels: quant_method "fp8" on model_type deepseek_v4 is rewritten to "deepseek_v4_fp8") gives every FusedMoE
# ``Mxfp4MoEMethod`` and the linears Fp8Config's block FP8. 0.20.0 never reads expert_dtype (always MXFP4); 0.20.1+
# (models/deepseek_v4/quant_config.py from 0.22.0, read in the 0.20.1 - 0.32.0 wheels) reads it, absent -> "fp4",
# and "fp8" (DeepSeek-V4-Flash-Base) falls through to Fp8MoEMethod: block FP8 experts, the quantization_config's own
# format. transformers 5.23 does not read it (parameters are counted, not bytes). Not modelled: an fp4-expert
# checkpoint stores its fp8 linears' block scales as ue8m0 (1 B, config "scale_fmt") where kvplan counts fp32 (4 B),
# vLLM's weight_scale_inv being fp32: about 1 MiB over the checkpoint for V4-Flash.
EXPERT_DTYPES = {"fp4": "mxfp4", "fp8": None}


def with_expert_dtype(scheme: QuantScheme, expert_dtype: Any, field_name: str = "expert_dtype") -> QuantScheme:
    """``scheme`` with a config's ``expert_dtype`` applied: "fp4" over an fp8 quantization_config stores the routed
    experts as MXFP4 (a per-module entry ``experts``: every ``...mlp.experts.*`` linear, not ``shared_experts``);
    "fp8" or absent changes nothing; another quantization method's own groups already say what the experts are
    (a compressed-tensors re-quantization such as RedHatAI's NVFP4-FP8 keeps the original's expert_dtype line).
    Worked number, one DeepSeek-V4-Flash expert (H 4096, I 2048): w1 = w3 = 2048 x 4096 / 2 + 2048 x 128 =
    4,456,448 B, w2 = 4096 x 1024 + 4096 x 64 = 4,456,448 B: 13,369,344 B (fp8 block: 3 x 8,390,656 = 25,171,968)."""
    if expert_dtype is None or scheme.method != "fp8":
        return scheme
    if not isinstance(expert_dtype, str) or expert_dtype.strip().lower() not in EXPERT_DTYPES:
        raise ConfigError(field_name, f"{_short(expert_dtype)} is not an expert dtype kvplan reads; allowed: "
                          f"{', '.join(EXPERT_DTYPES)}")
    fmt = EXPERT_DTYPES[expert_dtype.strip().lower()]
    if fmt is None:
        return scheme
    return QuantScheme(scheme.method, scheme.default, scheme.ignore, (("experts", fmt),) + scheme.per_module,
                       scheme.categories, scheme.notes + (f"expert_dtype {expert_dtype!r}: routed experts {fmt}",))


_READERS = {"fp8": _fp8, "compressed-tensors": _compressed_tensors, "compressed_tensors": _compressed_tensors,
            "modelopt": _modelopt, "modelopt_fp4": _modelopt, "mxfp4": _mxfp4, "awq": _awq, "gptq": _gptq,
            "bitsandbytes": _bitsandbytes}


# ----------------------------------------------------------------------------- module names -> components

_ROOTS = ("model", "model.language_model", "language_model.model", "backbone", "transformer")
_CONTAINERS = {
    "attention": ("self_attn", "attn", "attention", "mixer", "linear_attn", "self_attention"),
    "mlp": ("mlp", "feed_forward", "ffn", "mixer", "block_sparse_moe"),
    "experts": ("mlp.experts", "block_sparse_moe.experts", "feed_forward.experts", "mixer.experts", "ffn.experts"),
    "norms": ("",), "other": ("",),
}
_ROUTER_PATHS = ("mlp.gate", "mlp.router", "block_sparse_moe.gate", "feed_forward.router", "mixer.gate")
_ALIASES = {"gate_proj": ("w1",), "up_proj": ("w3",), "down_proj": ("w2",)}  # Mixtral's expert names
_EXPERT_TAIL = re.compile(r"(?:^|\.)experts\.(\d+)(?:\.|$)")


def _naming(layer) -> str:
    """The module-name table of a layer's family ("" = the generic HF paths only). DeepSeek-V4 (the one
    family with a ``CompressedAttention`` cache) keeps its checkpoint's / vLLM's own names (``attn.wq_b``,
    ``attn.fused_wqa_wkv``), not transformers' (``self_attn.q_b_proj``) that kvplan's components carry."""
    return "deepseek_v4" if isinstance(layer.cache, CompressedAttention) else ""


@functools.lru_cache(maxsize=8)
def _module_names(naming: str) -> Mapping[tuple[str, str], tuple[str, ...]]:
    if naming == "deepseek_v4":
        from kvplan.families.deepseek_v4 import VLLM_MODULE_NAMES  # the family's own table, beside its components
        return VLLM_MODULE_NAMES
    return {}


@functools.lru_cache(maxsize=4096)
def _tails(category: str, name: str, expert: str | None, naming: str = "") -> tuple[str, ...]:
    """Paths of a layer component below ``layers.{i}``: the family's own module names (``naming``, see
    ``_naming``) first, then the generic HF paths. Strings in, a tuple out: cached, as every layer asks
    again for the same (category, name)."""
    own = _module_names(naming).get((category, name), ()) if naming else ()
    if category == "router":
        return own + _ROUTER_PATHS
    names = (name,) + _ALIASES.get(name, ()) if category == "experts" else (name,)
    out = list(own)
    for c in _CONTAINERS.get(category, ("",)):
        for n in names:
            if category == "experts":
                out.append(f"{c}.{n}" if expert is None else f"{c}.{expert}.{n}")
            else:
                out.append(f"{c}.{n}" if c else n)
    return tuple(out)


@functools.lru_cache(maxsize=4096)
def _tail_modules(category: str, name: str, expert: str | None, naming: str = "") -> tuple[str, ...]:
    """Every tail of ``_tails`` and its parent modules (``mlp.experts.3.w1`` -> ``mlp``, ``mlp.experts``,
    ``mlp.experts.3``, ``mlp.experts.3.w1``), in order: the keys ``first_layer`` looks up below a layer."""
    out = []
    for tail in _tails(category, name, expert, naming):
        parts = tail.split(".")
        out.extend(".".join(parts[:k]) for k in range(1, len(parts) + 1))
    return tuple(out)


def _top_paths(category: str, name: str) -> list[str]:
    if category == "lm_head":
        return ["lm_head", "language_model.lm_head", name]
    return [f"{root}.{name}" for root in _ROOTS] + [name]


@functools.lru_cache(maxsize=4096)
def _glob_prefix(pattern: str) -> "re.Pattern[str]":
    """One regex for "the path or one of its dotted prefixes matches the glob ``pattern``" (fnmatchcase
    on each prefix, as vLLM / modelopt compare module names): the glob's own regex, then optionally a dot
    and anything. Compiled once per pattern: a 16 MiB ignore list is matched against every layer."""
    return re.compile(fnmatch.translate(pattern).removesuffix(r"\Z") + r"(?:\..*)?\Z", re.DOTALL)


def _dotted_parts(path: str, span: int | None = None):
    """Every run of whole dotted parts of ``path`` (``a.b.c`` -> a, a.b, a.b.c, b, b.c, c), of at most
    ``span`` parts when given (a run longer than the longest entry cannot equal one)."""
    parts = path.split(".")
    n = len(parts)
    for i in range(n):
        for j in range(i + 1, n + 1 if span is None else min(n, i + span) + 1):
            yield ".".join(parts[i:j])


def _glob_literal_prefix(pattern: str) -> str:
    """The text before a glob's first wildcard: every path the glob (or a dotted prefix of the path)
    matches starts with it, as fnmatch reads everything before ``*``, ``?`` or ``[`` literally."""
    cut = min((k for k in (pattern.find("*"), pattern.find("?"), pattern.find("[")) if k >= 0), default=len(pattern))
    return pattern[:cut]


# Line-anchored scans of the joined entries (one C-level pass each; each line is one entry).
_LINE_PATTERN = re.compile(r"(?m)^(?:re:|[^\n]*[*?\[])[^\n]*$")
_LINE_LAYER = re.compile(r"(?m)^((?:[^\n*?\[]*?\.)?)layers\.(\d+)(?:\.(?:[^\n]*?\.)?experts\.(\d+)(?=\.|$))?(?=\.|$)")


class _Entries:
    """One ordered list of module entries, compiled for fast lookups (a 16 MiB list of 370,000 names
    is read by a few line-anchored regex scans, not name by name in Python). ``first_*`` return the index of the
    earliest entry naming a component (plain names before patterns, as vLLM's exact-name match takes
    priority over its regex targets), or None."""

    def __init__(self, entries, field_name: str):
        text = "\n".join(entries)
        if text.count("\n") != len(entries) - 1 or " " in text or "." in text[-1:] or ".\n" in text:
            entries = [e.replace("\n", " ").strip().rstrip(".") for e in entries]  # rare: "layers.0." style
            text = "\n".join(entries)
        n = len(entries)
        # First index of each entry (reversed, so an earlier duplicate wins).
        self.index: dict[str, int] = dict(zip(reversed(entries), range(n - 1, -1, -1)))
        self.index.pop("", None)
        self.patterns: list[tuple[int, Any]] = []  # (index, compiled regex or glob string)
        self.pattern_by_layer = False  # whether any pattern can tell layers apart
        if "*" in text or "?" in text or "[" in text or "re:" in text:
            for entry in _LINE_PATTERN.findall(text):
                if entry in self.index:
                    self._pattern(self.index.pop(entry), entry, field_name)
            self.patterns.sort(key=lambda p: p[0])
        # (root, layer, expert) of every entry naming a layer: one line-anchored scan.
        found = _LINE_LAYER.findall(text) if "layers." in text else []
        self.roots = sorted({root for root, _, _ in found}) or [""]  # what precedes "layers.{i}" (e.g. "model.")
        self.layers_named = set(map(int, {layer for _, layer, _ in found}))
        self._experts = [(layer, expert) for _, layer, expert in found if expert] if "experts." in text else []
        self._experts_named: dict[int, set[str]] | None = None
        # Plain entries without a layer index ("lm_head", "self_attn", "mlp.gate"): matched on dot boundaries.
        self.plain: dict[str, int] = {e: i for e, i in self.index.items() if "layers." not in e}
        self.plain_span = max((e.count(".") + 1 for e in self.plain), default=0)  # most dotted parts of one
        # Globs by their literal prefix (a path can only match a glob it starts with the prefix of), so a
        # path is tested against the few globs it can match, not all of a 60-entry list; regexes are
        # always tested (their literal prefix is not read here).
        self._by_prefix: dict[str, list[int]] = {}  # literal prefix -> positions in self.patterns
        self._always: list[int] = []  # positions of regexes and of globs with an empty prefix
        for k, (_, p) in enumerate(self.patterns):
            prefix = _glob_literal_prefix(p) if isinstance(p, str) else ""
            if prefix:
                self._by_prefix.setdefault(prefix, []).append(k)
            else:
                self._always.append(k)
        self._prefix_lengths = sorted({len(prefix) for prefix in self._by_prefix})
        self._sorted_prefixes = sorted(self._by_prefix)
        self._candidates_by_layer: dict[int, tuple[int, ...]] = {}  # layer -> positions (this list, this call)
        self._heads_by_layer: dict[int, tuple[str, ...]] = {}  # layer -> its path heads, one per pattern root
        self._plain_by_tails: dict[tuple, int | None] = {}  # (category, name, expert) -> first plain hit of its tails
        # Whether a plain entry can name the "layers.{i}" part of a path itself ("layers", "5").
        self._plain_names_layer = any(e == "layers" or e.isdigit() for e in self.plain)
        self.pattern_roots = tuple(r for r in _ROOTS if r == "model" or any(
            isinstance(p, str) and r in p or not isinstance(p, str) and r in p.pattern for _, p in self.patterns))
        self.empty = not self  # no entry at all: every lookup is None (format_overrides asks ~50 times a spec)

    @property
    def experts_named(self) -> dict[int, set[str]]:
        """{layer: expert indices named exactly}, built on first use (only MoE specs ask)."""
        if self._experts_named is None:
            named: dict[int, set[str]] = {}
            for layer, expert in self._experts:
                named.setdefault(int(layer), set()).add(expert)
            self._experts_named = named
        return self._experts_named

    def _pattern(self, i: int, entry: str, field_name: str) -> None:
        if entry.startswith("re:"):
            try:
                compiled = re.compile(entry[3:])
            except re.error as exc:
                raise ConfigError(field_name, f"entry {_short(entry)} is not a valid regex ({exc})") from None
            self.patterns.append((i, compiled))
            self.pattern_by_layer |= bool(re.search(r"\d|\\d|\[|\\w|\{", entry[3:]))
        else:
            self.patterns.append((i, entry))
            self.pattern_by_layer |= bool(re.search(r"\d|\[", entry))

    def __bool__(self) -> bool:
        return bool(self.index or self.patterns)

    def _plain_first(self, path: str) -> int | None:
        plain = self.plain
        if self.plain_span == 1:  # only one-part entries ("lm_head", "self_attn"): no joins
            return min((plain[part] for part in path.split(".") if part in plain), default=None)
        best = None
        for part in _dotted_parts(path, self.plain_span):
            i = plain.get(part)
            if i is not None and (best is None or i < best):
                best = i
        return best

    def _plain_first_in_layer(self, layer: int, category: str, name: str, expert: str | None,
                              naming: str = "") -> int | None:
        """The earliest of ``_plain_first(f"layers.{layer}.{tail}")`` over the component's tails. With
        one-part entries only a hit is one part of the path: the tails' share is the same in every layer
        (looked up once per component), the ``layers`` and ``{layer}`` parts are looked up apart."""
        tails = _tails(category, name, expert, naming)
        if self.plain_span != 1:
            return min((i for i in (self._plain_first(f"layers.{layer}.{t}") for t in tails) if i is not None),
                       default=None)
        key = (category, name, expert, naming)
        if key in self._plain_by_tails:
            best = self._plain_by_tails[key]
        else:
            best = self._plain_by_tails[key] = min(
                (i for i in (self._plain_first(t) for t in tails) if i is not None), default=None)
        if self._plain_names_layer:
            for part in ("layers", str(layer)):
                i = self.plain.get(part)
                if i is not None and (best is None or i < best):
                    best = i
        return best

    def _layer_candidates(self, layer: int) -> tuple[int, ...]:
        """Positions (in ``self.patterns``, sorted) of the patterns a path ``{root}.layers.{layer}.<tail>``
        of a pattern root can match: every regex and empty-prefix glob, the globs whose literal prefix is
        a prefix of ``{root}.layers.{layer}.`` and those whose prefix extends it. Any other glob's prefix
        differs from every such path's start, so it cannot match one. Once per layer."""
        got = self._candidates_by_layer.get(layer)
        if got is None:
            found = set(self._always)
            by_prefix, ordered = self._by_prefix, self._sorted_prefixes
            heads = self._heads_by_layer[layer] = tuple(f"{root}.layers.{layer}." for root in self.pattern_roots)
            for head in heads:
                for n in self._prefix_lengths:
                    if n > len(head):
                        break
                    ks = by_prefix.get(head[:n])
                    if ks is not None:
                        found.update(ks)
                j = bisect.bisect_left(ordered, head)
                while j < len(ordered) and ordered[j].startswith(head):
                    found.update(by_prefix[ordered[j]])
                    j += 1
            got = self._candidates_by_layer[layer] = tuple(sorted(found))
        return got

    def _pattern_first(self, full_paths, candidates: tuple[int, ...] | None = None) -> int | None:
        """The first entry matching a path: a regex ("re:") as re.match does, a glob when it matches the path
        or one of its dotted prefixes (``*.mlp.experts.*`` covers ``...experts.3.down_proj``). Only the
        patterns a path can match are tried (globs whose literal prefix it starts with, every regex), in
        list order: the same first entry as trying them all."""
        if candidates is None:
            found = set(self._always)
            by_prefix = self._by_prefix
            if by_prefix:
                for path in full_paths:
                    for n in self._prefix_lengths:
                        ks = by_prefix.get(path[:n])
                        if ks is not None:
                            found.update(ks)
            candidates = sorted(found)
        for k in candidates:
            index, p = self.patterns[k]
            rx = _glob_prefix(p) if isinstance(p, str) else p
            for path in full_paths:
                if rx.match(path):
                    return index
        return None

    def first_top(self, category: str, name: str) -> int | None:
        return self.first_path(_top_paths(category, name))

    def first_path(self, paths: list[str]) -> int | None:
        """The first entry naming any of ``paths`` (full module paths): exact names, plain parts, then patterns."""
        if self.empty:
            return None
        hits = [self.index[p] for p in paths if p in self.index]
        if self.plain:
            hits += [i for i in (self._plain_first(p) for p in paths) if i is not None]
        if hits:
            return min(hits)
        return self._pattern_first(paths) if self.patterns else None

    def first_layer(self, layer: int, category: str, name: str, expert: str | None = None,
                    patterns: bool = True, naming: str = "") -> int | None:
        if self.empty:
            return None
        tails = _tails(category, name, expert, naming)
        hits = []
        if layer in self.layers_named:
            index = self.index
            modules = _tail_modules(category, name, expert, naming)  # each tail, then its parents
            for root in self.roots:
                head = f"{root}layers.{layer}"
                if head in index:
                    hits.append(index[head])
                head += "."
                for module in modules:
                    key = head + module
                    if key in index:
                        hits.append(index[key])
        if self.plain:
            i = self._plain_first_in_layer(layer, category, name, expert, naming)
            if i is not None:
                hits.append(i)
        if hits:
            return min(hits)
        if patterns and self.patterns:
            candidates = self._layer_candidates(layer)
            if not candidates:
                return None
            heads = self._heads_by_layer[layer]  # f"{root}.layers.{layer}." per pattern root, in order
            full = [head + t for head in heads for t in tails]
            if category == "experts" and expert is None:
                full += [head + t for head in heads for t in _tails(category, name, "0", naming)]
            return self._pattern_first(full, candidates)
        return None


# The lookups of an empty list (no ignore / per-module entries, most checkpoints): built once, read only.
_NO_ENTRIES = _Entries((), "quantization_config")


def format_overrides(scheme: QuantScheme, spec_fields: Mapping[str, Any], field_name: str = "quantization_config"
                     ) -> tuple[str, tuple[FormatOverride, ...], tuple[str, ...]]:
    """(format the checkpoint ships, overrides, categories left wholly unquantized) of ``scheme`` on
    the spec being built.

    For each component: an ignore entry naming it -> unquantized; else the first per-module entry
    naming it -> that format; else the scheme's default (quantizable linears of its categories).
    Only what differs from the shipped format applied plainly is stored. The shipped format is the
    default, or for mixed precision (no default) the format holding the most weights. Worked example
    (Llama-3.1-8B, ``ignore: ["lm_head", "model.layers.0.self_attn.q_proj"]``): one override,
    layers (0,), attention q_proj, "unquantized".
    """
    # a Qwen3-Next / Qwen3.5 MTP draft (its fc, kvplan.families.qwen3_next.mtp_fields) is named mtp.* in the
    # checkpoint; DeepSeek / GLM MTP layers (eh_proj) are model.layers.{num_hidden_layers + j}
    own_names = bool(spec_fields.get("mtp_layers")) and any(
        getattr(c, "name", "") == "fc" for c in spec_fields.get("mtp_other") or ()) and any(
        _names_mtp(e) for e in (*scheme.ignore, *(m for m, _ in scheme.per_module)))
    ignore_list, mtp_ignore_list = _split_mtp(scheme.ignore) if own_names else (scheme.ignore, scheme.ignore)
    mod_names = [m for m, _ in scheme.per_module]
    mod_list, mtp_mod_list = _split_mtp(mod_names) if own_names else (mod_names, mod_names)
    ignore = _entries(ignore_list, f"{field_name}.ignore")
    mods = _entries(mod_list, f"{field_name}.per_module")
    formats = [fmt for _, fmt in scheme.per_module]

    def decide(hit_ignore, hit_mod, category, comp) -> str:
        if hit_ignore is not None or not isinstance(comp, Linear):
            return UNQUANTIZED
        if hit_mod is not None:
            return formats[hit_mod]
        if category in scheme.categories and comp.quantizable:
            return scheme.default
        return UNQUANTIZED

    # First every component's format(s), then the shipped format, then what differs from it.
    tops = []
    for category, key in (("embeddings", "embeddings"), ("lm_head", "lm_head"), ("other", "other"),
                          ("norms", "final_norm")):
        for comp in spec_fields.get(key) or ():
            f = decide(ignore.first_top(category, comp.name), mods.first_top(category, comp.name), category, comp)
            tops.append((category, comp, f))
    layers = list(spec_fields.get("layers") or ())
    by_index = ignore.pattern_by_layer or mods.pattern_by_layer
    memo: dict[int, tuple] = {}
    results = []
    for i, layer in enumerate(layers):
        shared = not by_index and i not in ignore.layers_named and i not in mods.layers_named
        result = memo.get(id(layer)) if shared else None
        if result is None:
            result = _layer_formats(i, layer, ignore, mods, decide)
            if shared:
                memo[id(layer)] = result
        results.append(result)
    shipped = scheme.default
    if shipped == UNQUANTIZED:  # mixed precision: the format holding the most weights
        numel: dict[str, int] = {}
        for layer, result in zip(layers, results):
            # An expert linear stands for every routed expert of its layer: n experts, or all (n = 0).
            every = layer.experts.num_experts if layer.experts is not None else 1
            for category, comp, mix in result:
                for f, n in mix:
                    numel[f] = numel.get(f, 0) + comp.numel * (n or (every if category == "experts" else 1))
        numel.pop(UNQUANTIZED, None)
        shipped = max(numel, key=numel.get) if numel else UNQUANTIZED

    def plain(category, comp) -> str:  # what weights.component_format gives without overrides
        return component_format(category, comp, shipped)[0][0]

    top = [FormatOverride(category=c, name=comp.name, format=f) for c, comp, f in tops if f != plain(c, comp)]
    # The MTP layers (ModelSpec.mtp_layers, loaded for MTP speculative decoding only) are checkpoint layers
    # num_hidden_layers + j: an ignore list names them by that index (nvidia/GLM-5.2-NVFP4: "model.layers.78*"),
    # or, where the checkpoint names them mtp.layers.{j} (Qwen3-Next / Qwen3.5: "mtp*", "mtp.layers.0.self_attn.
    # q_proj"), the entries naming "mtp" do, read at index j (_split_mtp). Their overrides carry the indices past the
    # decoder's, so only parallel.mtp_rank_bytes reads them.
    if own_names:
        mtp_ignore = _entries(mtp_ignore_list, f"{field_name}.ignore")
        mtp_mods = _entries(mtp_mod_list, f"{field_name}.per_module")
        results += [_layer_formats(j, layer, mtp_ignore, mtp_mods, decide)
                    for j, layer in enumerate(spec_fields.get("mtp_layers") or ())]
    else:
        results += [_layer_formats(len(layers) + j, layer, ignore, mods, decide)
                    for j, layer in enumerate(spec_fields.get("mtp_layers") or ())]
    # A quantizable linear beside an MTP layer (DeepSeek-V4's e_proj / h_proj: ReplicatedLinear with the quant_config,
    # vLLM models/deepseek_v4/nvidia/mtp.py, module path model.layers.{num_hidden_layers + j}.e_proj) gets the format
    # the scheme gives that path, as a linear of the layer would: recorded always (category "other" is otherwise
    # 16-bit), read only by parallel.mtp_rank_bytes
    mtp_side = []
    n_mtp = len(spec_fields.get("mtp_layers") or ())
    side = tuple(spec_fields.get("mtp_other") or ())
    per = len(side) // n_mtp if n_mtp else 0
    for j in range(n_mtp if not own_names else 0):
        for comp in side[j * per:(j + 1) * per]:
            if isinstance(comp, Linear) and comp.quantizable:
                paths = [f"{root}.layers.{len(layers) + j}.{comp.name}" for root in _ROOTS]
                f = decide(ignore.first_path(paths), mods.first_path(paths), "attention", comp)
                mtp_side.append(FormatOverride(layers=(len(layers) + j,), category="other", name=comp.name, format=f))
    found: dict[tuple, list[int]] = {}  # (category, name, format, experts) -> layers
    # What differs from the plain format depends on the layer's result alone: worked out once per
    # distinct result (identical layers share one result object, kept alive by ``results`` for this call).
    differs: dict[int, tuple] = {}
    for i, result in enumerate(results):
        keys = differs.get(id(result))
        if keys is None:
            keys = differs[id(result)] = tuple((category, comp.name, f, n) for category, comp, mix in result
                                               if mix != ((plain(category, comp), 0),) for f, n in mix)
        for key in keys:
            found.setdefault(key, []).append(i)
    out = top + [FormatOverride(layers=tuple(ls), category=c, name=n, format=f, experts=e)
                 for (c, n, f, e), ls in found.items()]
    return shipped, tuple(out + mtp_side), _wholly_unquantized(layers, out)


_MTP_HEAD = re.compile(r"mtp(?=[.*?\[]|$)")  # an entry naming the mtp.* modules (Qwen3-Next / Qwen3.5 checkpoints)


def _entries(names: list[str], field: str) -> "_Entries":
    """The matcher of one list (_Entries), or _NO_ENTRIES when it names nothing (empty, or only the blanks _split_mtp
    leaves on the other side)."""
    return _Entries(names, field) if any(names) else _NO_ENTRIES


def _names_mtp(entry: str) -> bool:
    """Whether a module entry names the ``mtp.*`` modules: it starts with ``mtp`` (``mtp*``, ``mtp.fc``,
    ``mtp.layers.0.self_attn.q_proj``), or it is a regex mentioning ``mtp`` (GPTQ's ``-:.*mtp.*``)."""
    return bool(_MTP_HEAD.match(entry)) or (entry.startswith("re:") and "mtp" in entry)


def _split_mtp(entries) -> tuple[list[str], list[str]]:
    """(the decoder's entries, the MTP layers' entries) of a list for a checkpoint that names its MTP modules
    ``mtp.*`` (vLLM builds them under the prefix ``mtp``, qwen3_5_mtp.py, so an entry matches one side only).
    Positions are kept (an entry that does not apply becomes "", which names nothing) so per-module formats stay
    aligned. The MTP side: the ``mtp``-naming entries with ``mtp`` read as ``model`` (``mtp.layers.0*`` ->
    ``model.layers.0*``, looked up at MTP layer index j; a regex's ``mtp`` likewise), and the entries naming no layer
    (``lm_head``, ``*mlp.gate*``), which match any module; an entry naming a decoder layer (``...layers.5...``) is
    the decoder's only. Worked example: ["lm_head", "mtp.fc", "model.layers.3.mlp.gate"] ->
    (["lm_head", "", "model.layers.3.mlp.gate"], ["lm_head", "model.fc", ""])."""
    target, mtp = [], []
    for e in entries:
        if _names_mtp(e):
            target.append("")
            mtp.append(e.replace("mtp", "model") if e.startswith("re:") else "model" + e[3:])
        else:
            target.append(e)
            mtp.append("" if "layers" in e else e)
    return target, mtp


def _layer_formats(i: int, layer, ignore: _Entries, mods: _Entries, decide) -> tuple:
    """((category, component, ((format, experts), ...)), ...) for layer ``i``."""
    result = []
    naming = _naming(layer)
    for category in ("attention", "mlp", "router", "norms", "other"):
        for comp in getattr(layer, category):
            f = decide(ignore.first_layer(i, category, comp.name, naming=naming),
                       mods.first_layer(i, category, comp.name, naming=naming), category, comp)
            result.append((category, comp, ((f, 0),)))
    if layer.experts is not None:
        n_experts = layer.experts.num_experts
        named = sorted({e for e in ignore.experts_named.get(i, set()) | mods.experts_named.get(i, set())
                        if int(e) < n_experts}, key=int)
        for comp in layer.experts.linears:
            common = decide(ignore.first_layer(i, "experts", comp.name, naming=naming),
                            mods.first_layer(i, "experts", comp.name, naming=naming), "experts", comp)
            counts = {common: n_experts - len(named)} if len(named) < n_experts else {}
            for e in named:
                hi = ignore.first_layer(i, "experts", comp.name, e, patterns=False, naming=naming)
                hm = mods.first_layer(i, "experts", comp.name, e, patterns=False, naming=naming)
                f = common if hi is None and hm is None else decide(hi, hm, "experts", comp)
                counts[f] = counts.get(f, 0) + 1
            mix = ((common, 0),) if len(counts) == 1 else tuple(sorted(counts.items()))
            result.append(("experts", comp, ((next(iter(counts)), 0),) if len(counts) == 1 else mix))
    return tuple(result)


def _wholly_unquantized(layers, overrides) -> tuple[str, ...]:
    """Categories whose every quantizable linear, in every layer that has one, is kept unquantized."""
    off = {(i, o.category, o.name) for o in overrides if o.format == UNQUANTIZED and o.experts == 0
           for i in o.layers}
    if not off:  # nothing kept unquantized layer-wide: no category can be wholly so
        return ()
    names_of: dict[tuple, tuple[str, ...]] = {}  # (id(layer), category) -> its quantizable linears' names
    out = []
    for category in QUANTIZED_CATEGORIES:
        seen = False
        whole = True
        for i, layer in enumerate(layers):
            names = names_of.get((id(layer), category))
            if names is None:
                comps = ((layer.experts.linears if layer.experts else ()) if category == "experts"
                         else getattr(layer, category))
                names = names_of[(id(layer), category)] = tuple(
                    c.name for c in comps if isinstance(c, Linear) and c.quantizable)
            if names:
                seen = True
                if not all((i, category, n) in off for n in names):
                    whole = False
                    break  # one quantized linear: the category is not wholly unquantized
        if seen and whole:
            out.append(category)
    return tuple(out)
