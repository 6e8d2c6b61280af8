"""Weight bytes for a storage format, exact to the byte.

A quantized format applies to the weight matrices of attention, MLP and experts. Embeddings,
lm_head, norms, routers and biases stay in the checkpoint's 16-bit dtype, as quantized
checkpoints ship them, unless the checkpoint's quantization_config says otherwise per module
(``ModelSpec.quantization_overrides``, computed by ``kvplan.quantization``: ignore lists keep a
component unquantized in the layers they name; mixed precision gives it another format).

Every tensor vLLM's ``create_weights`` registers for one [out, in] matrix is counted (per
logical shard: vLLM fuses q/k/v and gate/up but keeps one scale per shard, so per-shard counts
equal kvplan's per-component counts; the one exception is compressed-tensors' ``weight_shape``,
16 B per fused layer in vLLM and per checkpoint tensor here). ``numel = out x in``; worked
numbers are for one 4096 x 4096 matrix (numel 16,777,216). Sources: vllm/model_executor/layers/
quantization/{fp8,modelopt,mxfp4,awq,gptq,bitsandbytes}.py and compressed_tensors/schemes/
compressed_tensors_{w8a8_fp8,w8a8_int8,wNa16,w4a4_nvfp4,w4a16_nvfp4}.py (read 2026-12).

| format              | tensors (dtype, shape)                                                   | 4096 x 4096 |
|---------------------|--------------------------------------------------------------------------|-------------|
| fp32 / bf16 / fp16  | weight                                                                   | 67,108,864 / 33,554,432 |
| fp8                 | weight fp8 [out,in]; weight_scale fp32 [1] (dynamic activations)         | 16,777,220  |
| fp8-static          | fp8 + input_scale fp32 [1] (fp8 ``activation_scheme: static``, modelopt FP8) | 16,777,224 |
| fp8-channel         | weight fp8; weight_scale fp32 [out, 1] (compressed-tensors FP8_DYNAMIC)  | 16,793,600  |
| fp8-block[-NxK]     | weight fp8; weight_scale(_inv) fp32 [cdiv(out,N), cdiv(in,K)], 128x128 default | 16,781,312 |
| int8                | weight int8; weight_scale fp32 [out, 1] (w8a8 channel, dynamic tokens)   | 16,793,600  |
| int8-tensor         | weight int8; weight_scale fp32 [1]                                       | 16,777,220  |
|  ...-static[-asym]  | + input_scale fp32 [1] (+ input_zero_point int8 [1])                     | +4 (+1)     |
| int4-gG (AWQ)       | qweight int32 [in, out/8]; qzeros int32 [in/G, out/8]; scales 16-bit [in/G, out] | G=128: 8,716,288 |
| gptq-intB-gG / -ch  | qweight int32 [in/(32/B), out]; qzeros int32 [in/G, out/(32/B)]; scales 16-bit [in/G, out]; g_idx int32 [in] (always created) | B=4 G=128: 8,732,672 |
|  ...[-actorder][-asym] | the same checkpoint tensors (``desc_act`` true / ``sym`` false); they change only what vLLM keeps after loading (``kvplan.vllm_layouts``) | 8,732,672 |
| wBa16-gG / -ch      | weight_packed int32 [out, in/(32/B)]; weight_scale 16-bit [out, in/G]; weight_shape int64 [2] | B=4 G=128: 8,650,768 |
|  ...-asym / -actorder | + weight_zero_point int32 [out/(32/B), in/G] / + weight_g_idx int32 [in] | +65,536 / +16,384 |
| mxfp4               | weight uint8 [out, in/2]; weight_scale uint8 (e8m0) [out, cdiv(in,32)]   | 8,912,896   |
| mxfp8               | weight fp8 [out, in]; weight_scale uint8 (e8m0) [out, cdiv(in,32)] (modelopt MXFP8) | 17,301,504 |
| nvfp4               | weight uint8 [out, in/2]; weight_scale fp8 [out, cdiv(in,16)]; weight_scale_2 + input_scale fp32 [1] each | 9,437,192 |
| nvfp4-wo            | NVFP4 weight-only (modelopt W4A16_NVFP4, compressed-tensors w4a16 nvfp4): no input scale | 9,437,188 |
| bnb-nf4 / bnb-fp4   | weight uint8 [numel/2]; absmax fp32 [cdiv(numel,64)]; quant_map fp32 [16] | 9,437,248   |
| bnb-nf4-dq          | weight; absmax uint8 [cdiv(numel,64)]; nested_absmax fp32 [cdiv(that,256)]; nested_quant_map fp32 [256]; quant_map fp32 [16]; offset fp32 [1] | 8,655,940 |
| bnb-int8            | weight int8 [out, in]; SCB fp32 [out] (LLM.int8)                         | 16,793,600  |

Under tensor parallelism a rank's shard is priced with the same formulas on its slice (scales, zero
points and g_idx split with the weight). These are the checkpoint's tensors; what vLLM keeps after
loading (Marlin dropping GPTQ's qzeros / g_idx, act order's whole scales on every rank, NVFP4's swizzled
and padded scales) is ``kvplan.vllm_layouts``, added by the vLLM plan.

The bitsandbytes quant state (absmax, maps, offset) is what ``QuantState.from_dict`` rebuilds from
the checkpoint's ``weight.absmax`` / ``weight.nested_absmax`` / ``weight.quant_map`` /
``weight.nested_quant_map`` tensors, blocksize 64 and nested blocksize 256 (bitsandbytes
defaults); vLLM keeps it beside the packed weight (``bnb_quant_state``).
"""

import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict

from kvplan.errors import PlanInputError
from kvplan.spec import CATEGORIES, Linear, ModelSpec, distinct_layers, spec_distinct_layers
from kvplan.units import DTYPE_BITS, cdiv

# The formats offered as a "what if" weight format (UI, CLI); check_format accepts the whole grammar.
FORMATS = ("fp32", "bf16", "fp16", "fp8", "fp8-block", "int8", "int4-g32", "int4-g64", "int4-g128", "mxfp4", "nvfp4")
FLOAT_FORMATS = ("fp32", "bf16", "fp16")
UNQUANTIZED = "unquantized"  # an override: the component stays in the checkpoint's 16-bit dtype
QUANTIZED_CATEGORIES = ("attention", "mlp", "experts")
SCALE_BYTES = 2  # 16-bit scales (params_dtype: the checkpoint's bf16/fp16) for AWQ / GPTQ / wNa16
_INT4 = re.compile(r"^int4-g(\d+)$")


def _fp8(m) -> Callable[[int, int], int]:
    static = 4 if m["static"] else 0
    if m["kind"] == "-channel":
        return lambda o, i: o * i + 4 * o + static
    if m["kind"] and m["kind"].startswith("-block"):
        n, k = int(m["bn"] or 128), int(m["bk"] or 128)
        return lambda o, i: o * i + 4 * cdiv(o, n) * cdiv(i, k)
    return lambda o, i: o * i + 4 + static


def _int8(m) -> Callable[[int, int], int]:
    extra = (4 + (1 if m["asym"] else 0)) if m["static"] else 0
    if m["tensor"]:
        return lambda o, i: o * i + 4 + extra
    return lambda o, i: o * i + 4 * o + extra


def _awq(m) -> Callable[[int, int], int]:
    g = int(m["g"])
    # qweight [in, out/8] int32 = numel/2 B; qzeros [in/G, out/8] int32; scales [in/G, out] 16-bit.
    return lambda o, i: cdiv(o * i, 2) + cdiv(i, g) * o * SCALE_BYTES + cdiv(cdiv(i, g) * o, 2)


def _gptq(m) -> Callable[[int, int], int]:
    bits = int(m["bits"])
    pack = 32 // bits

    def size(o: int, i: int) -> int:
        groups = 1 if m["g"] == "ch" else i // int(m["g"][1:])
        return (i // pack) * o * 4 + groups * (o // pack) * 4 + groups * o * SCALE_BYTES + 4 * i
    return size


def _wna16(m) -> Callable[[int, int], int]:
    bits = int(m["bits"])
    pack = 32 // bits

    def size(o: int, i: int) -> int:
        groups = 1 if m["g"] == "ch" else i // int(m["g"][1:])
        total = o * (i // pack) * 4 + o * groups * SCALE_BYTES + 16  # weight_packed, weight_scale, weight_shape
        if m["asym"]:
            total += (o // pack) * groups * 4  # weight_zero_point, packed along out
        if m["actorder"]:
            total += 4 * i  # weight_g_idx
        return total
    return size


def _bnb4(m) -> Callable[[int, int], int]:
    def size(o: int, i: int) -> int:
        numel = o * i
        blocks = cdiv(numel, 64)
        if m["dq"]:
            return numel // 2 + blocks + 4 * cdiv(blocks, 256) + 4 * 256 + 4 * 16 + 4
        return numel // 2 + 4 * blocks + 4 * 16
    return size


_GRAMMAR: tuple[tuple[re.Pattern, Callable], ...] = (
    (re.compile(r"(?P<f>fp32|bf16|fp16)"), lambda m: (lambda o, i, b=DTYPE_BITS[m["f"]] // 8: o * i * b)),
    (re.compile(r"fp8(?P<kind>-channel|-block(?:-(?P<bn>[1-9]\d{0,4})x(?P<bk>[1-9]\d{0,4}))?)?(?P<static>-static)?"), _fp8),
    (re.compile(r"int8(?P<tensor>-tensor)?(?:(?P<static>-static)(?P<asym>-asym)?)?"), _int8),
    (re.compile(r"int4-g(?P<g>[1-9]\d{0,5})"), _awq),
    (re.compile(r"gptq-int(?P<bits>[248])-(?P<g>g[1-9]\d{0,5}|ch)(?P<actorder>-actorder)?(?P<asym>-asym)?"), _gptq),
    (re.compile(r"w(?P<bits>[48])a16-(?P<g>g[1-9]\d{0,5}|ch)(?P<asym>-asym)?(?P<actorder>-actorder)?"), _wna16),
    (re.compile(r"mxfp4"), lambda m: lambda o, i: cdiv(o * i, 2) + cdiv(i, 32) * o),
    (re.compile(r"mxfp8"), lambda m: lambda o, i: o * i + cdiv(i, 32) * o),
    (re.compile(r"nvfp4(?P<wo>-wo)?"), lambda m: lambda o, i, g=4 if m["wo"] else 8: cdiv(o * i, 2) + cdiv(i, 16) * o + g),
    (re.compile(r"bnb-(?:nf4|fp4)(?P<dq>-dq)?"), _bnb4),
    (re.compile(r"bnb-int8"), lambda m: lambda o, i: o * i + 4 * o),
)


@lru_cache(maxsize=256)
def _sizer(fmt: str) -> Callable[[int, int], int] | None:
    for pattern, make in _GRAMMAR:
        m = pattern.fullmatch(fmt)
        if m:
            return make(m)
    return None


def check_format(fmt: str, field: str = "weight_format") -> str:
    fmt = str(fmt).strip().lower()
    if len(fmt) <= 40 and _sizer(fmt) is not None:
        return fmt
    raise PlanInputError(field, f"unknown weight format {fmt[:40]!r}; allowed: {', '.join(FORMATS)} (or int4-gN, "
                         "fp8-static, fp8-channel, fp8-block-NxK, int8-tensor, gptq-int4-gN[-actorder][-asym], w4a16-gN, mxfp8, "
                         "nvfp4-wo, "
                         "bnb-nf4[-dq], bnb-int8)")


def matrix_bytes(out_f: int, in_f: int, fmt: str) -> int:
    """Bytes of one [out_f, in_f] weight matrix stored in ``fmt``, every scale tensor included
    (the table in the module docstring). Worked number: 4096 x 4096 in int4-g128 (AWQ) =
    8,388,608 (qweight) + 65,536 (qzeros) + 262,144 (scales) = 8,716,288 B."""
    size = _sizer(fmt)
    assert size is not None, fmt
    return size(out_f, in_f)


class WeightBytes(BaseModel):
    """Bytes of all weights in one format, by category. bytes_per_param = total / params."""

    model_config = ConfigDict(frozen=True)
    format: str
    total_bytes: int
    components: dict[str, int]
    bytes_per_param: float


def resolve_format(spec: ModelSpec, fmt: str | None) -> tuple[str, bool]:
    """(format, whether the checkpoint's per-module overrides apply). None / "auto": as the checkpoint ships."""
    if fmt is None or fmt == "auto":
        if spec.quantization:
            return spec.quantization, True
        return spec.dtype, False
    return check_format(fmt), False


def base_dtype(spec: ModelSpec, fmt: str) -> str:
    """The 16-bit (or fp32) dtype of what a format leaves unquantized."""
    return fmt if fmt in FLOAT_FORMATS else (spec.dtype if spec.dtype != "fp32" else "bf16")


def component_format(category: str, comp, fmt: str, overrides: Mapping | None = None) -> tuple[tuple[str, int], ...]:
    """The format(s) of one component: ((format, experts), ...); experts 0 means every copy.

    An override (ignore list, mixed precision) wins; else a quantizable linear of attention, MLP or
    experts takes ``fmt`` and everything else stays unquantized."""
    if overrides:
        mix = overrides.get((category, comp.name))
        if mix is not None:
            return mix
    if isinstance(comp, Linear) and comp.quantizable and category in QUANTIZED_CATEGORIES:
        return ((fmt, 0),)
    return ((UNQUANTIZED, 0),)


def spec_formats(spec: ModelSpec, weight_format: str | None) -> frozenset[str]:
    """Every format ``component_format`` can give a component of ``spec`` served in ``weight_format`` (as
    ``resolve_format`` reads it): that format, "unquantized", and with the checkpoint's own format each override's.
    Once per spec and format. A layout rule that only bites on some formats (Marlin tiles, NVFP4 swizzles, FP8
    blocks) skips the walk over the layers when none of them is here: DeepSeek-V3 (fp8-block) has
    {"fp8-block", "unquantized"}."""
    def build() -> frozenset[str]:
        fmt, use_overrides = resolve_format(spec, weight_format)
        found = {fmt, UNQUANTIZED}
        if use_overrides:
            found.update(o.format for o in spec.quantization_overrides)
        return frozenset(found)
    return spec.memo(("formats", weight_format), build)


def component_bytes(category: str, comp, fmt: str, base: str, exclude: tuple[str, ...] = ()) -> int:
    """Bytes of one component (its ``count`` copies) with its weight in ``fmt`` (``UNQUANTIZED`` or a
    float format: ``base``). Biases stay in ``base``. ``exclude``: categories kept in ``base``."""
    base_bytes = DTYPE_BITS[base] // 8
    if category in exclude or fmt == UNQUANTIZED or fmt in FLOAT_FORMATS or not isinstance(comp, Linear):
        if fmt in FLOAT_FORMATS and isinstance(comp, Linear):
            return comp.weight_numel * DTYPE_BITS[fmt] // 8 + comp.bias_numel * base_bytes
        return comp.numel * base_bytes
    return comp.count * matrix_bytes(comp.out_features, comp.in_features, fmt) + comp.bias_numel * base_bytes


def overrides_by_layer(spec: ModelSpec) -> dict[int, dict[tuple[str, str], tuple[tuple[str, int], ...]]]:
    """{layer index (-1: outside the layers): {(category, name): ((format, experts), ...)}}, once per spec."""
    def build():
        out: dict[int, dict[tuple[str, str], list]] = {}
        for o in spec.quantization_overrides:
            for i in o.layers or (-1,):
                out.setdefault(i, {}).setdefault((o.category, o.name), []).append((o.format, o.experts))
        return {i: {k: tuple(v) for k, v in d.items()} for i, d in out.items()}
    return spec.memo("overrides", build)


def layer_groups(spec: ModelSpec, start: int = 0, stop: int | None = None, *, overrides: bool = True):
    """[(layer, copies, its overrides)] over ``spec.layers[start:stop]``: identical layers with the same
    overrides are priced once (a 126-layer model is a handful of groups)."""
    stop = len(spec.layers) if stop is None else stop
    by_layer = overrides_by_layer(spec) if overrides else {}
    if not by_layer or all(i == -1 for i in by_layer):  # once per spec and range (a plan asks up to 4 times)
        return spec.memo(("layer_groups_plain", start, stop),
                         lambda: [(layer, n, None) for layer, n in (
                             spec_distinct_layers(spec) if (start, stop) == (0, len(spec.layers))
                             else distinct_layers(spec.layers[start:stop]))])

    def build():
        groups: dict[tuple, list] = {}
        for i in range(start, stop):
            mine = by_layer.get(i)
            key = (id(spec.layers[i]), tuple(sorted(mine.items())) if mine else ())
            entry = groups.get(key)
            if entry is None:
                groups[key] = [spec.layers[i], 1, mine]
            else:
                entry[1] += 1
        return [tuple(g) for g in groups.values()]
    return spec.memo(("layer_groups", start, stop), build)


def priced_walk(spec: ModelSpec, fmt: str, use_overrides: bool):
    """Yield (category, component, copies, format) covering every weight once, each with its format."""
    top = overrides_by_layer(spec).get(-1) if use_overrides else None
    for comp in spec.embeddings:
        for f, _ in component_format("embeddings", comp, fmt, top):
            yield "embeddings", comp, 1, f
    for layer, n, mine in layer_groups(spec, overrides=use_overrides):
        for category in ("attention", "mlp", "router", "norms", "other"):
            for comp in getattr(layer, category):
                for f, _ in component_format(category, comp, fmt, mine):
                    yield category, comp, n, f
        if layer.experts is not None:
            e = layer.experts.num_experts
            for comp in layer.experts.linears:
                for f, k in component_format("experts", comp, fmt, mine):
                    yield "experts", comp, (k or e) * n, f
    for category, comps in (("norms", spec.final_norm), ("lm_head", spec.lm_head), ("other", spec.other)):
        for comp in comps:
            for f, _ in component_format(category, comp, fmt, top):
                yield category, comp, 1, f


def weight_bytes(spec: ModelSpec, fmt: str | None = None) -> WeightBytes:
    """Exact weight bytes of the whole model in ``fmt`` (default: as the checkpoint ships, its
    per-module overrides included).

    Worked number: Llama-3.1-8B in bf16 = 8,030,261,248 x 2 = 16,060,522,496 B (14.96 GiB).
    """
    return spec.memo(("weight_bytes", fmt), lambda: _weight_bytes(spec, fmt))


def _weight_bytes(spec: ModelSpec, fmt: str | None) -> WeightBytes:
    fmt, use_overrides = resolve_format(spec, fmt)
    base = base_dtype(spec, fmt)
    components = dict.fromkeys(CATEGORIES, 0)
    params = 0
    for category, comp, copies, f in priced_walk(spec, fmt, use_overrides):
        components[category] += copies * component_bytes(category, comp, f, base)
        params += copies * comp.numel
    total = sum(components.values())
    return WeightBytes(format=fmt, total_bytes=total, components=components, bytes_per_param=total / params)


def format_from_quantization_config(qc: Any, field: str) -> tuple[str | None, tuple[str, ...]]:
    """(default format, categories the ignore list covers by name). Kept for callers of the old API:
    the full per-module reading is ``kvplan.quantization.read_quantization_config``."""
    from kvplan.quantization import read_quantization_config

    scheme = read_quantization_config(qc, field)
    return scheme.default, ()
