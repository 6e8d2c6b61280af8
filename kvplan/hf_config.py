"""config.json -> ModelSpec. Reads, validates and records; never opens files, never executes.

Field names are the config's own. A value the config omits is derived the way transformers
derives it (``head_dim or hidden_size // num_attention_heads``) and the derivation is recorded;
a value the config gives is never overwritten. Every refusal is a ``ConfigError`` naming the field.
"""

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from kvplan.errors import ConfigError
from kvplan.spec import ModelSpec
from kvplan.units import DTYPE_ALIASES

# A plain config.json is < 100 KiB, but quantized checkpoints list their ignored modules one by one
# (a real MiniMax-M3-NVFP4 config.json is 3 MB). 16 MiB keeps every real one. Measured (2026-12, 2-core
# box, CPU time): a 16 MiB config of 367,812 ignore entries loads in 0.09 s and parses, every entry
# matched against the layers, in ~0.7 s (tests/test_real_files.py).
MAX_CONFIG_BYTES = 16 * 2**20
MAX_JSON_DEPTH = 32
# Sanity caps: far beyond any real model, low enough that no plan overflows into nonsense.
LIMITS = {
    "vocab_size": 10_000_000,
    "hidden_size": 1_000_000,
    "intermediate_size": 10_000_000,
    "num_hidden_layers": 10_000,
    "num_attention_heads": 100_000,
    "num_key_value_heads": 100_000,
    "head_dim": 100_000,
    "max_position_embeddings": 1_000_000_000,
    "num_experts": 100_000,
}
DEFAULT_LIMIT = 1_000_000_000

# Fields a wrapper's text_config may omit because transformers' text config class supplies them
# (transformers 5.23 Gemma3TextConfig). google/gemma-3-4b-it's text_config gives only hidden_size,
# intermediate_size, num_hidden_layers, rope_scaling and sliding_window: its 8 heads, 4 KV heads and
# head_dim 256 are these defaults.
WRAPPER_TEXT_DEFAULTS = {"gemma3": {"vocab_size": 262_208, "max_position_embeddings": 131_072,
                                    "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
                                    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256}}

# A wrapper's text tower when text_config names no model_type and it is not "<wrapper>_text"
# (transformers 5.23 Mistral3Config: text_config SubConfigSpec(model_type="mistral")).
WRAPPER_TEXT_TYPES = {"mistral3": "mistral"}

# Multimodal wrappers whose text decoder lives under "text_config".
WRAPPER_SKIPS = {
    "gemma3": ("vision_tower (SigLIP)", "multi_modal_projector"),
    "gemma3n": ("vision_tower (MobileNetV5)", "audio_tower (Conformer)", "embed_vision", "embed_audio"),
    "gemma4": ("vision_tower", "audio_tower", "embed_vision", "embed_audio"),
    "gemma4_unified": ("vision_tower", "audio_tower", "embed_vision", "embed_audio"),
    "llama4": ("vision_model", "multi_modal_projector"),
    "mistral3": ("vision_tower (Pixtral)", "multi_modal_projector"),
    # Kimi-K2.5 / K2.6: a DeepSeek-V3 text decoder (text_config model_type "kimi_k2") behind MoonViT
    # (transformers 5.23 Kimi_K25Model: vision_tower, mm_projector).
    "kimi_k25": ("vision_tower (MoonViT)", "mm_projector"),
    # Qwen2-VL / Qwen2.5-VL files re-saved by transformers >= 4.52 (the published ones are flat: no text_config)
    "qwen2_vl": ("visual (ViT + patch merger)",),
    "qwen2_5_vl": ("visual (window-attention ViT + patch merger)",),
    # Qwen3-VL / Qwen3.5: model.visual holds the ViT, its patch merger (the projector) and, in
    # Qwen3-VL, the deepstack mergers; the language model is the text decoder alone.
    "qwen3_vl": ("visual (ViT + patch merger + deepstack mergers)",),
    "qwen3_vl_moe": ("visual (ViT + patch merger + deepstack mergers)",),
    "qwen3_5": ("visual (ViT + patch merger)",),
    "qwen3_5_moe": ("visual (ViT + patch merger)",),
    "step3p7": ("vision_model (perception encoder)", "multi_modal_projector"),
    "minimax_m3_vl": ("vision_tower", "multi_modal_projector"),
}

# A model_type kvplan has no builder for, whose ``architectures`` entry names a class it does model:
# engines pick the model class by architecture (vLLM's registry maps DeepseekV3ForCausalLM to
# vllm/model_executor/models/deepseek_v2.py whatever model_type says), so the config reads as that
# family. Moonshot's Kimi-K2 configs write model_type "kimi_k2" with DeepseekV3ForCausalLM
# (transformers 5.23's Kimi_K25Config itself rewrites text_config "kimi_k2" to "deepseek_v3").
ARCHITECTURE_ALIASES = {
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "DeepseekV32ForCausalLM": "deepseek_v32",
    "Glm4MoeForCausalLM": "glm4_moe",
    "GlmMoeDsaForCausalLM": "glm_moe_dsa",
}


class Reader:
    """Typed access to one config dict; collects assumptions and missing fields as it goes."""

    def __init__(self, cfg: Mapping[str, Any], prefix: str = ""):
        self.cfg = cfg
        self.prefix = prefix
        self.assumptions: list[str] = []
        self.missing: list[str] = []
        self.read: set[str] = set()  # every key a builder looked at (the generic decoder's refusal uses it)

    def _name(self, key: str) -> str:
        return f"{self.prefix}{key}"

    def get(self, key: str) -> Any:
        self.read.add(key)
        return self.cfg.get(key)

    def has(self, key: str) -> bool:
        return self.get(key) is not None

    def raw(self, key: str, default: Any = None) -> Any:
        value = self.get(key)
        return default if value is None else value

    def int(self, key: str, default: int | None = None, *, why: str = "", minimum: int = 1) -> int:
        """A positive int from the config; ``default`` (recorded) when absent; missing if none."""
        value = self.get(key)
        if value is None:
            if default is None:
                self.missing.append(self._name(key))
                return 1  # placeholder; parse fails on self.missing before use
            self.assumptions.append(f"{self._name(key)} = {default}" + (f" ({why})" if why else " (default)"))
            return default
        return self.check_int(key, value, minimum)

    def check_int(self, key: str, value: Any, minimum: int = 1) -> int:
        name = self._name(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(name, f"must be an integer, got {type(value).__name__} {_short(value)}")
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ConfigError(name, f"must be a finite integer, got {json_number(value)} (it sizes the model)")
            if value != int(value):
                raise ConfigError(name, f"must be an integer, got {value!r}")
            value = int(value)
        if value < minimum:
            raise ConfigError(name, f"must be >= {minimum}, got {value}")
        limit = LIMITS.get(key, DEFAULT_LIMIT)
        if value > limit:
            raise ConfigError(name, f"{value} is beyond any real model (limit {limit:,})")
        return value

    def bool(self, key: str, default: bool) -> bool:
        value = self.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ConfigError(self._name(key), f"must be true or false, got {_short(value)}")
        return value

    def int_list(self, key: str) -> list[int] | None:
        value = self.get(key)
        if value is None:
            return None
        if not isinstance(value, list):
            raise ConfigError(self._name(key), f"must be a list of integers, got {type(value).__name__}")
        return [self.check_int(key, v, minimum=0) for v in value]

    def str_list(self, key: str) -> list[str] | None:
        value = self.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(self._name(key), "must be a list of strings")
        return value

    def fail_if_missing(self) -> None:
        if self.missing:
            fields = ", ".join(dict.fromkeys(self.missing))
            raise ConfigError(fields, "required field(s) missing from config.json and nothing to derive them from")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def json_number(value: float) -> str:
    """A float as JSON's extended spelling: Infinity, -Infinity, NaN (what the config.json says)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)


def _size(n: int) -> str:
    return f"{n:,} bytes ({n / 2**20:.1f} MiB)"


def _depth(value: Any, limit: int) -> int:
    """Nesting depth of a JSON value, stopping once past ``limit``. Only containers are pushed, so a
    16 MiB list of 370,000 module names costs one C-level scan, not 370,000 stack entries."""
    stack = [(value, 1)]
    deepest = 0
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        children = node.values() if isinstance(node, dict) else node
        if children:  # a child of any kind sits one level down
            deepest = max(deepest, depth + 1)
            stack.extend((v, depth + 1) for v in children if isinstance(v, (dict, list)))
    return deepest


def load_config_text(text: str | bytes) -> dict[str, Any]:
    """Parse pasted or uploaded config.json text into a dict, with size and depth caps.

    ``Infinity``, ``-Infinity`` and ``NaN`` are read as Python floats, as transformers reads them
    (real configs carry them in fields that size nothing, e.g. Nemotron-3-Super's
    ``"time_step_limit": [0.0, Infinity]``); a sizing field holding one is refused by
    ``Reader.check_int`` naming the field. Limits: ``MAX_CONFIG_BYTES`` (16 MiB), ``MAX_JSON_DEPTH``.
    """
    if isinstance(text, bytes):
        if len(text) > MAX_CONFIG_BYTES:
            raise ConfigError("config", f"{_size(len(text))} is too large (limit {_size(MAX_CONFIG_BYTES)})")
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError("config", f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if len(text) > MAX_CONFIG_BYTES:
        raise ConfigError("config", f"{len(text):,} characters ({len(text) / 2**20:.1f} Mi characters) is too large "
                          f"(limit {_size(MAX_CONFIG_BYTES)})")
    if not text.strip():
        raise ConfigError("config", "empty; paste the contents of a config.json")
    try:
        value = json.loads(text, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        raise ConfigError("config", f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise ConfigError("config", f"nested deeper than {MAX_JSON_DEPTH} levels") from None
    except ConfigError:
        raise
    except ValueError as exc:  # a number too long to convert (int digit limit)
        raise ConfigError("config", f"not valid JSON: {str(exc)[:80]}") from None
    if not isinstance(value, dict):
        raise ConfigError("config", f"must be a JSON object {{...}}, got {type(value).__name__}")
    if _depth(value, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise ConfigError("config", f"nested deeper than {MAX_JSON_DEPTH} levels")
    return value


def _constant(name: str) -> float:
    """JSON's non-standard constants, as Python's json (and so transformers) reads them."""
    return {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}[name]


def parse_config(config: Mapping[str, Any] | str | bytes, name: str | None = None, *,
                 transformers: bool = True) -> ModelSpec:
    """Build the ``ModelSpec`` for a Hugging Face config (dict, or JSON text).

    In order: a family kvplan models natively (``kvplan.families``: exact); else, with
    ``transformers`` allowed and installed and the family known to it, the transformers-backed
    path (``kvplan.transformers_path``: parameters exact, cache measured); else a generic
    Llama-style decoder, but only when the config carries no field that decoder would ignore —
    otherwise one ``ConfigError`` naming the model_type, the architectures entry and those fields.
    Multimodal wrappers (``text_config``) plan their text decoder and list what was skipped.
    """
    from kvplan import families

    cfg = load_config_text(config) if isinstance(config, (str, bytes)) else config
    if not isinstance(cfg, Mapping):
        raise ConfigError("config", f"must be a JSON object, got {type(cfg).__name__}")
    model_type = cfg.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise ConfigError("model_type", f"must be a string, got {_short(model_type)}")
    outer = cfg
    cfg, model_type, skipped, filled = text_decoder_config(cfg)
    from kvplan.families.deepseek_v4 import deepseek_v41_refusal

    v41 = deepseek_v41_refusal(outer, cfg)  # before the generic / transformers paths: V4.1 is not V4
    if v41:
        raise ConfigError("model_type", v41)
    builder = families.BUILDERS.get(model_type)
    if builder is None and transformers:
        via = _transformers_path()
        if via is not None and via.knows(outer):
            return via.build_spec(outer, name=name or default_model_name(outer))
    generic = builder is None
    if generic:
        builder = families.build_generic
    reader = Reader(cfg, prefix="text_config." if cfg is not outer else "")
    reader.assumptions.extend(filled)
    try:
        spec_fields = builder(reader, model_type)
        reader.fail_if_missing()
        spec_fields.update(_dtype_and_quant(reader, spec_fields))
        if "rope_caches" not in spec_fields:  # the engine's RoPE tables (families.blocks.rope_caches)
            from kvplan.families.blocks import rope_caches

            spec_fields["rope_caches"] = rope_caches(reader, model_type, spec_fields)
        if generic:
            _refuse_if_generic_would_drop(outer, cfg, model_type, reader)
            spec_fields["basis"] = "generic"
            spec_fields["basis_note"] = GENERIC_NOTE.format(model_type=model_type or "(none)")
            spec_fields["warnings"] = (spec_fields["basis_note"],) + tuple(spec_fields.get("warnings", ()))
        spec_fields["name"] = name or default_model_name(outer)
        unread = quantized_name_without_config(spec_fields["name"], spec_fields)
        if unread:
            spec_fields["warnings"] = tuple(spec_fields.get("warnings", ())) + (unread,)
        spec_fields["model_type"] = model_type
        spec_fields["assumptions"] = tuple(reader.assumptions)
        spec_fields["skipped"] = skipped + tuple(spec_fields.get("skipped", ()))
        # a multimodal wrapper (or a flat one: Qwen/Qwen2.5-VL-* config.json keep the decoder's fields at top level
        # beside vision_config): its vision tower, counted apart (families/towers.py)
        if cfg is not outer or isinstance(outer.get("vision_config"), Mapping):
            from kvplan.families.towers import build_towers

            towers, notes, tower_warnings = build_towers(outer, spec_fields["hidden_size"])
            spec_fields["towers"] = towers
            spec_fields["assumptions"] += tuple(notes)
            spec_fields["warnings"] = tuple(spec_fields.get("warnings", ())) + tuple(tower_warnings)
        return ModelSpec(**spec_fields)
    except ConfigError:
        raise
    except ValidationError as exc:  # a derived size out of range: name the config field it came from
        err = exc.errors()[0]
        raise ConfigError(reader._name(str(err["loc"][-1]) if err["loc"] else "config"), err["msg"]) from None
    except (TypeError, ValueError, ArithmeticError, AttributeError, KeyError) as exc:  # Arithmetic: int(inf)
        reader.fail_if_missing()
        raise ConfigError("config", f"inconsistent config ({type(exc).__name__}: {exc})") from None


GENERIC_NOTE = ("model_type {model_type!r} is not a family kvplan or transformers knows: planned as a generic "
                "Llama-style decoder (RMSNorm, gated MLP, no biases, every layer alike). An estimate, not exact: "
                "check it against the real model.")

# Config keys that size something a generic Llama-style decoder has no place for: experts, latent
# attention, indexers, per-layer kinds, hybrid mixers, per-layer block configs. A generic plan of a
# config carrying any of them (unread by the generic builder) would be a confident wrong answer.
_SIZING_WORDS = ("expert", "moe", "lora", "index", "layer_type", "layers_block", "block_type", "pattern",
                 "block_config", "mamba", "ssm", "conv", "linear_", "nextn", "mtp", "shared", "dense",
                 "sparse", "hybrid", "window", "chunk", "head_dim", "kv_heads", "key_value", "global_",
                 "local_", "altup", "laurel", "per_layer", "num_layers", "n_layer", "d_model", "n_embd",
                 "n_head", "ffn", "inner", "state", "rank", "group", "compress", "swa", "attn", "attention")
# Keys that size nothing (or that the generic builder reads under another name): never a reason to refuse.
_HARMLESS = {"attention_dropout", "attention_probs_dropout_prob", "attn_pdrop", "attention_bias_dropout",
             "attn_implementation", "_attn_implementation", "attn_logit_softcapping", "use_sliding_window",
             "sliding_window", "max_window_layers", "attention_multiplier", "attention_softmax_in_fp32"}


def _refuse_if_generic_would_drop(outer: Mapping[str, Any], cfg: Mapping[str, Any], model_type: str,
                                  reader: "Reader") -> None:
    """Raise when the generic decoder left unread a key that sizes weights or cache."""
    dropped = sorted(
        key for key, value in cfg.items()
        if key not in reader.read and value not in (None, False, 0, [], {}) and key not in _HARMLESS
        and (any(word in key.lower() for word in _SIZING_WORDS)
             or (isinstance(value, Mapping) and key not in _METADATA_DICTS)))
    if dropped:
        archs = outer.get("architectures")
        arch = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else "(none)"
        shown = ", ".join(dropped[:12]) + (f" and {len(dropped) - 12} more" if len(dropped) > 12 else "")
        raise ConfigError(
            "model_type",
            f"{model_type or '(none)'!r} (architectures: {_short(arch)}) is not a family kvplan models, and "
            f"{_transformers_status()}; a generic Llama-style plan would ignore {shown}, which size its "
            "weights or cache. Refused rather than guessed.")


_METADATA_DICTS = {"rope_scaling", "rope_parameters", "quantization_config", "auto_map", "id2label", "label2id",
                   "task_specific_params", "generation_config", "compression_config"}


def _transformers_path():
    """The transformers-backed path, or None where transformers is not installed (the core itself
    never needs it: only configs of families kvplan does not model natively go there)."""
    import importlib.util

    if importlib.util.find_spec("transformers") is None or importlib.util.find_spec("torch") is None:
        return None
    from kvplan import transformers_path

    return transformers_path


def transformers_builder():
    """The module that builds a ModelSpec through transformers (kvplan.transformers_path: ``knows(config)``,
    ``build_spec(config, name=...)``), or None where transformers or torch is not installed. Looked up through
    ``_transformers_path`` on each call (tests replace that)."""
    return _transformers_path()


def _transformers_status() -> str:
    import importlib.metadata

    try:
        return f"transformers {importlib.metadata.version('transformers')} cannot build it without remote code"
    except importlib.metadata.PackageNotFoundError:
        return "transformers (which builds the families kvplan does not model) is not installed here"


def text_decoder_config(cfg: Mapping[str, Any]) -> tuple[Mapping[str, Any], str, tuple[str, ...], list[str]]:
    """(decoder config, its model_type, what was skipped, defaults filled). Unwraps ``text_config``;
    a model_type with no builder whose architectures entry is in ARCHITECTURE_ALIASES reads as that family."""
    model_type = cfg.get("model_type") or ""
    if not (isinstance(cfg.get("text_config"), Mapping) and (model_type in WRAPPER_SKIPS or "vision_config" in cfg)):
        filled: list[str] = []
        return cfg, _alias(cfg, model_type, "", filled), (), filled
    skipped = WRAPPER_SKIPS.get(model_type, ("vision_config (non-text tower)",))
    inner = dict(cfg["text_config"])
    # Wrappers keep some decoder fields on the outer config (dtype, tie_word_embeddings).
    for key in ("torch_dtype", "dtype", "quantization_config", "tie_word_embeddings"):
        if key not in inner and key in cfg:
            inner[key] = cfg[key]
    filled = []
    # transformers ties a wrapper's lm_head by the wrapper's own tie_word_embeddings (the
    # ForConditionalGeneration's config, PreTrainedModel.get_expanded_tied_weights_keys), so where
    # both say it and disagree (Qwen3VLMoeTextConfig defaults True, Qwen3VLMoeConfig False) the
    # wrapper's wins.
    outer_tie = cfg.get("tie_word_embeddings")
    if isinstance(outer_tie, bool) and inner.get("tie_word_embeddings", outer_tie) != outer_tie:
        filled.append(f"text_config.tie_word_embeddings = {str(outer_tie).lower()} (the wrapper's value; "
                      f"transformers ties the lm_head by it, not by text_config's {inner['tie_word_embeddings']!r})")
        inner["tie_word_embeddings"] = outer_tie
    for key, value in WRAPPER_TEXT_DEFAULTS.get(model_type, {}).items():
        if inner.get(key) is None:
            inner[key] = value
            filled.append(f"text_config.{key} = {value} (transformers' {model_type} text config default)")
    inner_type = inner.get("model_type") or WRAPPER_TEXT_TYPES.get(model_type, f"{model_type}_text")
    if not isinstance(inner_type, str):
        raise ConfigError("text_config.model_type", "must be a string")
    return inner, _alias(inner, inner_type, "text_config.", filled), skipped, filled


def _alias(cfg: Mapping[str, Any], model_type: str, prefix: str, notes: list[str]) -> str:
    """``model_type``, or the family its first ``architectures`` entry names when kvplan has no builder for it."""
    from kvplan import families

    if model_type in families.BUILDERS:
        return model_type
    archs = cfg.get("architectures")
    arch = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None
    target = ARCHITECTURE_ALIASES.get(arch) if arch else None
    if target is None:
        return model_type
    notes.append(f"{prefix}model_type {model_type!r} read as {target!r} (architectures: {arch}; same model class)")
    return target


# A quantization named in a model's name: a name part (between - _ . / or the ends) that names a weight format.
_QUANT_NAME = re.compile(r"(?:^|[-_./ ])(nvfp4|mxfp4|fp8|fp4|int4|int8|awq|gptq|w4a16|w8a8|w4a4|w8a16|bnb|4bit|8bit"
                         r"|exl2|exl3|gguf)(?=$|[-_./ ])", re.IGNORECASE)


QUANT_NAME_HINT = "or pick the format under Weights (vllm serve --quantization)"  # plan.py drops the warning then


def quantized_name_without_config(name: str, spec_fields: Mapping[str, Any]) -> str | None:
    """A warning when a model's name says it is quantized but its config.json carries no quantization_config, so
    the weights are priced at the config's dtype (a 4-bit checkpoint would come out ~3.5x too heavy). NVIDIA's
    ModelOpt exports keep the scheme in a separate hf_quant_config.json (Nemotron-3-Super-FP8, the
    Nemotron-3.5-Lightning NVFP4 release: no quantization_config in config.json). Worked example: name
    "nvidia/Foo-30B-A3B-NVFP4", no quantization -> a warning naming NVFP4; "Qwen/Qwen3-8B-FP8" with one -> None."""
    if spec_fields.get("quantization"):
        return None
    match = _QUANT_NAME.search(name or "")
    if match is None:
        return None
    return (f"the name {name!r} says {match.group(1).upper()} but config.json has no quantization_config: the "
            f"weights are priced at {spec_fields.get('dtype', 'bf16')} as the config says. NVIDIA ModelOpt "
            "checkpoints keep the scheme in hf_quant_config.json: paste its \"quantization\" block into the config "
            f"as quantization_config, {QUANT_NAME_HINT}")


def with_name_warning(spec, name: str) -> dict[str, Any]:
    """The ``model_copy`` update that plans ``spec`` (a built ModelSpec) as ``name``: the name, and its warnings with
    quantized_name_without_config's for that name (another name's dropped). The transformers path names its cached
    builds with it, as parse_config names the native ones. Worked example: a bf16 granite build renamed
    "org/granite-FP8" -> {"name": "org/granite-FP8", "warnings": (..., "the name 'org/granite-FP8' says FP8 ...")}."""
    kept = tuple(w for w in spec.warnings if not w.endswith(QUANT_NAME_HINT))
    unread = quantized_name_without_config(name, {"quantization": spec.quantization, "dtype": spec.dtype})
    return {"name": name, "warnings": kept + ((unread,) if unread else ())}


def default_model_name(cfg: Mapping[str, Any]) -> str:
    """The name a config plans under when none is given: its _name_or_path, else its first architecture, else its
    model_type (at most 200 characters)."""
    for key in ("_name_or_path", "name_or_path"):
        value = cfg.get(key)
        if isinstance(value, str) and value:
            return value[:200]
    archs = cfg.get("architectures")
    if isinstance(archs, list) and archs and isinstance(archs[0], str):
        return archs[0][:200]
    return str(cfg.get("model_type") or "custom model")[:200]


def _dtype_and_quant(r: Reader, spec_fields: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The checkpoint dtype and, if the config says it is quantized, its weight format with the
    per-layer / per-component overrides its ignore lists and mixed precision give
    (``kvplan.quantization``). ``spec_fields``: the builder's components (names, layers)."""
    out: dict[str, Any] = {}
    raw = r.cfg.get("torch_dtype", r.cfg.get("dtype"))
    if raw is None:
        r.assumptions.append("dtype = bf16 (config gives no torch_dtype)")
        out["dtype"] = "bf16"
    elif isinstance(raw, str) and DTYPE_ALIASES.get(raw.lower()) in ("fp32", "bf16", "fp16"):
        # the unquantized dtype: an fp8 / int name here (DTYPE_ALIASES serves kv_cache_dtype too) is refused, the
        # weights' format is quantization_config's to say
        out["dtype"] = DTYPE_ALIASES[raw.lower()]
    else:
        raise ConfigError(r._name("torch_dtype"), f"unknown dtype {_short(raw)}; use float32, bfloat16 or float16")
    qc = r.cfg.get("quantization_config")
    if qc is not None:
        # DeepSeek-V4 without expert_dtype: "fp4", vLLM's default (models/deepseek_v4/quant_config.py, 0.20.1+)
        expert_dtype = r.cfg.get("expert_dtype", "fp4" if r.cfg.get("model_type") == "deepseek_v4" else None)
        if r.cfg.get("model_type") in ("deepseek_v41", "deepseek_v41_text"):  # vLLM DeepseekV41Config: the
            # quantization_config's expert_dtype, else the V4 quant config's "fp4" (transformers_utils/configs)
            expert_dtype = r.cfg.get("expert_dtype", qc.get("expert_dtype", "fp4") if isinstance(qc, Mapping)
                                     else "fp4")
        out.update(quantization_fields(qc, spec_fields or {}, r._name("quantization_config"),
                                       expert_dtype=expert_dtype))
    return out


def quantization_fields(qc: Any, spec_fields: Mapping[str, Any], field: str = "quantization_config",
                        expert_dtype: Any = None) -> dict[str, Any]:
    """ModelSpec fields (quantization, quantization_exclude, quantization_overrides) for a config's
    quantization_config on the components in ``spec_fields`` (embeddings, layers, lm_head, ...).
    The transformers-backed path calls this too. Raises ConfigError naming the field."""
    from kvplan.quantization import format_overrides, read_quantization_config, with_expert_dtype
    from kvplan.weights import UNQUANTIZED

    scheme = read_quantization_config(qc, field)
    # DeepSeek-V4's expert_dtype "fp4": MXFP4 routed experts beside fp8 block linears (kvplan.quantization)
    scheme = with_expert_dtype(scheme, expert_dtype, field.rsplit(".", 1)[0] + ".expert_dtype"
                               if "." in field else "expert_dtype")
    shipped, overrides, exclude = format_overrides(scheme, spec_fields, field)
    if shipped == UNQUANTIZED:
        return {}
    return {"quantization": shipped, "quantization_exclude": exclude, "quantization_overrides": overrides,
            "quantization_method": scheme.method}
