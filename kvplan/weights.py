"""Weight bytes for a storage format, exact to the byte.

A quantized format applies to the weight matrices of attention, MLP and experts. Embeddings,
lm_head, norms, routers and biases stay in the checkpoint's 16-bit dtype, as quantized
checkpoints ship them. Scales and zero points are counted from their shapes (vLLM's
``create_weights`` for each method):

| format      | per weight matrix [out, in], count copies                               | B/param (in=4096) |
|-------------|---------------------------------------------------------------------------|-------------------|
| fp32/bf16   | numel x 4 / 2                                                             | 4 / 2             |
| fp8         | numel x 1 + 4 (one fp32 scale per tensor)                                 | ~1.0              |
| fp8-block   | numel x 1 + 4 x cdiv(out,128) x cdiv(in,128) (fp32 scale per 128x128)   | 1.00024           |
| int8        | numel x 1 + 4 x out (fp32 scale per output channel)                      | 1.00098           |
| int4-gG     | numel / 2 + cdiv(in,G) x out x (2 B fp16 scale + 0.5 B packed zero)      | 0.5195 for G=128  |
| mxfp4       | numel / 2 + cdiv(in,32) x out x 1 (e8m0 scale per 32)                    | 0.53125           |
| nvfp4       | numel / 2 + cdiv(in,16) x out x 1 (fp8 scale per 16) + 8 (two fp32 globals) | 0.5625         |
"""

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from kvplan.errors import ConfigError, PlanInputError
from kvplan.spec import CATEGORIES, Linear, ModelSpec, walk
from kvplan.units import DTYPE_BITS, cdiv

FORMATS = ("fp32", "bf16", "fp16", "fp8", "fp8-block", "int8", "int4-g32", "int4-g64", "int4-g128", "mxfp4", "nvfp4")
QUANTIZED_CATEGORIES = ("attention", "mlp", "experts")
_INT4 = re.compile(r"^int4-g(\d+)$")


def check_format(fmt: str, field: str = "weight_format") -> str:
    fmt = str(fmt).strip().lower()
    if fmt in FORMATS or (_INT4.match(fmt) and int(_INT4.match(fmt).group(1)) > 0):
        return fmt
    raise PlanInputError(field, f"unknown weight format {fmt!r}; allowed: {', '.join(FORMATS)} (or int4-gN)")


def matrix_bytes(out_f: int, in_f: int, fmt: str) -> int:
    """Bytes of one [out_f, in_f] weight matrix stored in ``fmt`` (scales included)."""
    numel = out_f * in_f
    if fmt in ("fp32", "bf16", "fp16"):
        return numel * DTYPE_BITS[fmt] // 8
    if fmt == "fp8":
        return numel + 4
    if fmt == "fp8-block":
        return numel + 4 * cdiv(out_f, 128) * cdiv(in_f, 128)
    if fmt == "int8":
        return numel + 4 * out_f
    if fmt == "mxfp4":
        return cdiv(numel, 2) + cdiv(in_f, 32) * out_f
    if fmt == "nvfp4":
        return cdiv(numel, 2) + cdiv(in_f, 16) * out_f + 8
    m = _INT4.match(fmt)
    assert m, fmt
    groups = cdiv(in_f, int(m.group(1))) * out_f
    return cdiv(numel, 2) + groups * 2 + cdiv(groups, 2)


class WeightBytes(BaseModel):
    """Bytes of all weights in one format, by category. bytes_per_param = total / params."""

    model_config = ConfigDict(frozen=True)
    format: str
    total_bytes: int
    components: dict[str, int]
    bytes_per_param: float


def resolve_format(spec: ModelSpec, fmt: str | None) -> tuple[str, tuple[str, ...]]:
    """(format, categories kept in 16 bits). None means the checkpoint's own format."""
    if fmt is None or fmt == "auto":
        if spec.quantization:
            return spec.quantization, spec.quantization_exclude
        return spec.dtype, ()
    return check_format(fmt), ()


def component_bytes(category: str, comp, fmt: str, base: str, exclude: tuple[str, ...]) -> int:
    """Bytes of one component (all its copies counted by the caller)."""
    base_bytes = DTYPE_BITS[base] // 8
    quantized = isinstance(comp, Linear) and comp.quantizable and category in QUANTIZED_CATEGORIES and category not in exclude
    if not quantized:
        return comp.numel * base_bytes
    return comp.count * matrix_bytes(comp.out_features, comp.in_features, fmt) + comp.bias_numel * base_bytes


def weight_bytes(spec: ModelSpec, fmt: str | None = None) -> WeightBytes:
    """Exact weight bytes of the whole model in ``fmt`` (default: as the checkpoint ships).

    Worked number: Llama-3.1-8B in bf16 = 8,030,261,248 x 2 = 16,060,522,496 B (14.96 GiB).
    """
    fmt, exclude = resolve_format(spec, fmt)
    base = fmt if fmt in ("fp32", "bf16", "fp16") else (spec.dtype if spec.dtype != "fp32" else "bf16")
    components = dict.fromkeys(CATEGORIES, 0)
    params = 0
    for category, comp, copies in walk(spec):
        components[category] += copies * component_bytes(category, comp, fmt, base, exclude)
        params += copies * comp.numel
    total = sum(components.values())
    return WeightBytes(format=fmt, total_bytes=total, components=components, bytes_per_param=total / params)


def format_from_quantization_config(qc: Any, field: str) -> tuple[str | None, tuple[str, ...]]:
    """Map a config's ``quantization_config`` to a format and the categories it leaves in 16 bits."""
    if not isinstance(qc, Mapping):
        raise ConfigError(field, f"must be an object, got {type(qc).__name__}")
    method = str(qc.get("quant_method", "")).lower()
    fmt: str | None = None
    if method == "fp8":
        fmt = "fp8-block" if qc.get("weight_block_size") else "fp8"
    elif method in ("awq", "gptq"):
        bits, group = qc.get("bits", qc.get("w_bit")), qc.get("group_size", qc.get("q_group_size", 128))
        if bits == 4 and isinstance(group, int) and not isinstance(group, bool) and group > 0:
            fmt = f"int4-g{group}"
        elif bits == 8:
            fmt = "int8"
    elif method == "mxfp4":
        fmt = "mxfp4"
    elif method == "modelopt":
        algo = str(qc.get("quant_algo", "")).upper()
        fmt = {"NVFP4": "nvfp4", "FP8": "fp8"}.get(algo)
    elif method == "compressed-tensors":
        fmt = _compressed_tensors_format(qc)
    if fmt is None:
        raise ConfigError(field, f"quant_method {method or '(none)'!r} with these settings is not supported; "
                          "remove quantization_config and pick a weight format instead")
    excluded = qc.get("modules_to_not_convert") or qc.get("ignore") or []
    exclude = []
    if any(isinstance(p, str) and "self_attn" in p for p in excluded):
        exclude.append("attention")
    return fmt, tuple(exclude)


def _compressed_tensors_format(qc: Mapping) -> str | None:
    for group in (qc.get("config_groups") or {}).values():
        weights = group.get("weights") if isinstance(group, Mapping) else None
        if not isinstance(weights, Mapping):
            continue
        bits, kind, size = weights.get("num_bits"), weights.get("type"), weights.get("group_size")
        if bits == 8:
            return "fp8" if kind == "float" else "int8"
        if bits == 4 and kind == "float":
            return "nvfp4"
        if bits == 4 and isinstance(size, int) and size > 0:
            return f"int4-g{size}"
    return None
