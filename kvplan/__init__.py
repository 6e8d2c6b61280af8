"""kvplan: exact GPU memory and KV-cache planning for LLM inference.

The core (this package, minus ``kvplan.web`` and ``kvplan.validate``) imports only the standard
library and pydantic: pure functions over frozen specs, exact integer bytes.
"""

from kvplan.errors import ConfigError, KvplanError, PlanInputError
from kvplan.hf_config import load_config_text, parse_config
from kvplan.kv import KVBytes, kv_bytes_per_token, kv_cache_bytes, seed_kv_bytes
from kvplan.params import ParamBreakdown, count_params
from kvplan.presets import load_preset, preset_config, preset_names, resolve_model
from kvplan.spec import ModelSpec
from kvplan.weights import WeightBytes, weight_bytes

__all__ = [
    "ConfigError", "KVBytes", "KvplanError", "ModelSpec", "ParamBreakdown", "PlanInputError", "WeightBytes",
    "count_params", "kv_bytes_per_token", "kv_cache_bytes", "load_config_text", "load_preset", "parse_config",
    "preset_config", "preset_names", "resolve_model", "seed_kv_bytes", "weight_bytes",
]
