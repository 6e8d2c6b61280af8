"""config.json -> ModelSpec. Reads, validates and records; never opens files, never executes.

Field names are the config's own. A value the config omits is derived the way transformers
derives it (``head_dim or hidden_size // num_attention_heads``) and the derivation is recorded;
a value the config gives is never overwritten. Every refusal is a ``ConfigError`` naming the field.
"""

import json
import math
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from kvplan.errors import ConfigError
from kvplan.spec import ModelSpec
from kvplan.units import DTYPE_ALIASES

MAX_CONFIG_BYTES = 2 * 2**20  # a real config.json is < 100 KiB; refuse anything past 2 MiB
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
# (transformers 5.23 Gemma3TextConfig: vocab_size 262_208, max_position_embeddings 131_072).
WRAPPER_TEXT_DEFAULTS = {"gemma3": {"vocab_size": 262_208, "max_position_embeddings": 131_072}}

# Multimodal wrappers whose text decoder lives under "text_config".
WRAPPER_SKIPS = {
    "gemma3": ("vision_tower (SigLIP)", "multi_modal_projector"),
    "llama4": ("vision_model", "multi_modal_projector"),
    "mistral3": ("vision_tower (Pixtral)", "multi_modal_projector"),
}


class Reader:
    """Typed access to one config dict; collects assumptions and missing fields as it goes."""

    def __init__(self, cfg: Mapping[str, Any], prefix: str = ""):
        self.cfg = cfg
        self.prefix = prefix
        self.assumptions: list[str] = []
        self.missing: list[str] = []

    def _name(self, key: str) -> str:
        return f"{self.prefix}{key}"

    def has(self, key: str) -> bool:
        return self.cfg.get(key) is not None

    def raw(self, key: str, default: Any = None) -> Any:
        value = self.cfg.get(key)
        return default if value is None else value

    def int(self, key: str, default: int | None = None, *, why: str = "", minimum: int = 1) -> int:
        """A positive int from the config; ``default`` (recorded) when absent; missing if none."""
        value = self.cfg.get(key)
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
            if not math.isfinite(value) or value != int(value):
                raise ConfigError(name, f"must be an integer, got {value!r}")
            value = int(value)
        if value < minimum:
            raise ConfigError(name, f"must be >= {minimum}, got {value}")
        limit = LIMITS.get(key, DEFAULT_LIMIT)
        if value > limit:
            raise ConfigError(name, f"{value} is beyond any real model (limit {limit:,})")
        return value

    def bool(self, key: str, default: bool) -> bool:
        value = self.cfg.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ConfigError(self._name(key), f"must be true or false, got {_short(value)}")
        return value

    def int_list(self, key: str) -> list[int] | None:
        value = self.cfg.get(key)
        if value is None:
            return None
        if not isinstance(value, list):
            raise ConfigError(self._name(key), f"must be a list of integers, got {type(value).__name__}")
        return [self.check_int(key, v, minimum=0) for v in value]

    def str_list(self, key: str) -> list[str] | None:
        value = self.cfg.get(key)
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


def _depth(value: Any, limit: int) -> int:
    """Nesting depth of a JSON value, stopping once past ``limit``."""
    stack = [(value, 1)]
    deepest = 0
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return deepest


def load_config_text(text: str | bytes) -> dict[str, Any]:
    """Parse pasted or uploaded config.json text into a dict, with size and depth caps."""
    if isinstance(text, bytes):
        if len(text) > MAX_CONFIG_BYTES:
            raise ConfigError("config", f"{len(text):,} bytes is too large (limit {MAX_CONFIG_BYTES:,})")
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError("config", f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if len(text) > MAX_CONFIG_BYTES:
        raise ConfigError("config", f"{len(text):,} characters is too large (limit {MAX_CONFIG_BYTES:,})")
    if not text.strip():
        raise ConfigError("config", "empty; paste the contents of a config.json")
    try:
        value = json.loads(text, parse_constant=_reject_constant)
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


def _reject_constant(name: str) -> float:
    raise ConfigError("config", f"{name} is not a number a config may contain")


def parse_config(config: Mapping[str, Any] | str | bytes, name: str | None = None) -> ModelSpec:
    """Build the ``ModelSpec`` for a Hugging Face config (dict, or JSON text).

    Multimodal wrappers (``text_config``) plan their text decoder and list what was skipped.
    An unknown ``model_type`` with standard decoder fields is planned as a generic Llama-style
    decoder with a warning; one without them is refused naming each missing field.
    """
    from kvplan import families

    cfg = load_config_text(config) if isinstance(config, (str, bytes)) else config
    if not isinstance(cfg, Mapping):
        raise ConfigError("config", f"must be a JSON object, got {type(cfg).__name__}")
    model_type = cfg.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise ConfigError("model_type", f"must be a string, got {_short(model_type)}")
    model_type = model_type or ""
    outer = cfg
    cfg, model_type, skipped, filled = text_decoder_config(cfg)
    builder = families.BUILDERS.get(model_type)
    warnings: list[str] = []
    if builder is None:
        builder = families.build_generic
        warnings.append(
            f"model_type {model_type or '(none)'!r} is not a known family: planned as a generic "
            "Llama-style decoder (RMSNorm, gated MLP, no biases). Check the numbers against the real model."
        )
    reader = Reader(cfg, prefix="text_config." if cfg is not outer else "")
    reader.assumptions.extend(filled)
    try:
        spec_fields = builder(reader, model_type)
        reader.fail_if_missing()
        spec_fields.update(_dtype_and_quant(reader))
        spec_fields["name"] = name or _default_name(outer)
        spec_fields["model_type"] = model_type
        spec_fields["assumptions"] = tuple(reader.assumptions)
        spec_fields["warnings"] = tuple(warnings) + tuple(spec_fields.get("warnings", ()))
        spec_fields["skipped"] = skipped + tuple(spec_fields.get("skipped", ()))
        return ModelSpec(**spec_fields)
    except ConfigError:
        raise
    except ValidationError as exc:  # a derived size out of range: name the config field it came from
        err = exc.errors()[0]
        raise ConfigError(reader._name(str(err["loc"][-1]) if err["loc"] else "config"), err["msg"]) from None
    except (TypeError, ValueError, ZeroDivisionError, AttributeError, KeyError) as exc:
        reader.fail_if_missing()
        raise ConfigError("config", f"inconsistent config ({type(exc).__name__}: {exc})") from None


def text_decoder_config(cfg: Mapping[str, Any]) -> tuple[Mapping[str, Any], str, tuple[str, ...], list[str]]:
    """(decoder config, its model_type, what was skipped, defaults filled). Unwraps ``text_config``."""
    model_type = cfg.get("model_type") or ""
    if not (isinstance(cfg.get("text_config"), Mapping) and (model_type in WRAPPER_SKIPS or "vision_config" in cfg)):
        return cfg, model_type, (), []
    skipped = WRAPPER_SKIPS.get(model_type, ("vision_config (non-text tower)",))
    inner = dict(cfg["text_config"])
    # Wrappers keep some decoder fields on the outer config (dtype, tie_word_embeddings).
    for key in ("torch_dtype", "dtype", "quantization_config", "tie_word_embeddings"):
        if key not in inner and key in cfg:
            inner[key] = cfg[key]
    filled = []
    for key, value in WRAPPER_TEXT_DEFAULTS.get(model_type, {}).items():
        if inner.get(key) is None:
            inner[key] = value
            filled.append(f"text_config.{key} = {value} (transformers' {model_type} text config default)")
    inner_type = inner.get("model_type") or f"{model_type}_text"
    if not isinstance(inner_type, str):
        raise ConfigError("text_config.model_type", "must be a string")
    return inner, inner_type, skipped, filled


def _default_name(cfg: Mapping[str, Any]) -> str:
    for key in ("_name_or_path", "name_or_path"):
        value = cfg.get(key)
        if isinstance(value, str) and value:
            return value[:200]
    archs = cfg.get("architectures")
    if isinstance(archs, list) and archs and isinstance(archs[0], str):
        return archs[0][:200]
    return str(cfg.get("model_type") or "custom model")[:200]


def _dtype_and_quant(r: Reader) -> dict[str, Any]:
    """The checkpoint dtype and, if the config says it is quantized, its weight format."""
    out: dict[str, Any] = {}
    raw = r.cfg.get("torch_dtype", r.cfg.get("dtype"))
    if raw is None:
        r.assumptions.append("dtype = bf16 (config gives no torch_dtype)")
        out["dtype"] = "bf16"
    elif isinstance(raw, str) and raw.lower() in DTYPE_ALIASES:
        out["dtype"] = DTYPE_ALIASES[raw.lower()]
    else:
        raise ConfigError(r._name("torch_dtype"), f"unknown dtype {_short(raw)}; use float32, bfloat16 or float16")
    qc = r.cfg.get("quantization_config")
    if qc is not None:
        from kvplan.weights import format_from_quantization_config

        fmt, exclude = format_from_quantization_config(qc, r._name("quantization_config"))
        out["quantization"] = fmt
        out["quantization_exclude"] = exclude
    return out
