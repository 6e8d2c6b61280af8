"""Units, dtype sizes and integer helpers. All byte counts in kvplan are exact ints.

GiB = 2**30 (what vLLM and torch print as "GiB"); GB = 10**9 (what datasheets sell).
"""

GiB = 2**30
MiB = 2**20
KiB = 2**10
GB = 10**9

# Bits per element of a stored value. Sub-byte formats are counted in bits so that
# bytes come out exact: 4-bit x 7 values = 28 bits -> cdiv(28, 8) = 4 bytes.
DTYPE_BITS: dict[str, int] = {
    "fp32": 32,
    "bf16": 16,
    "fp16": 16,
    "fp8": 8,  # fp8_e4m3 / fp8_e5m2: 1 byte per element
    "int8": 8,
    "int4": 4,
}

# Names seen in configs / vLLM flags, mapped to the canonical names above.
DTYPE_ALIASES: dict[str, str] = {
    "float32": "fp32", "float": "fp32", "fp32": "fp32",
    "bfloat16": "bf16", "bf16": "bf16",
    "float16": "fp16", "half": "fp16", "fp16": "fp16",
    "fp8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "float8_e4m3fn": "fp8",
    "int8": "int8", "int4": "int4",
}


def cdiv(a: int, b: int) -> int:
    """Ceiling division for non-negative ints: cdiv(5, 4) == 2."""
    return -(-a // b)


def canonical_dtype(name: str, field: str = "dtype") -> str:
    """'bfloat16' -> 'bf16'. Raises KvplanError naming ``field`` for an unknown dtype."""
    from kvplan.errors import KvplanError

    key = str(name).strip().lower()
    if key not in DTYPE_ALIASES:
        allowed = ", ".join(sorted(set(DTYPE_ALIASES.values())))
        raise KvplanError(field, f"unknown dtype {name!r}; allowed: {allowed}")
    return DTYPE_ALIASES[key]


def format_bytes(n: int | float) -> str:
    """Human form in binary units: format_bytes(1073741824) == '1.00 GiB'."""
    n = float(n)
    for unit, size in (("TiB", 2**40), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{int(n)} B"


def format_value(value, unit: str) -> str:
    """A measured or predicted figure with its unit, formatted the same wherever it is shown.

    format_value(1073741824, "B") == '1,073,741,824 B (1.00 GiB)'; format_value(0.0125, "s") == '12.500 ms'.
    """
    if value is None:
        return "-"
    if unit == "B":
        return f"{int(value):,} B ({format_bytes(value)})"
    if unit == "s":
        return f"{value * 1e3:,.3f} ms"
    if unit == "tok/s":
        return f"{value:,.1f} tok/s"
    if unit in ("blocks", "slots"):
        return f"{int(value):,} {unit}"
    if isinstance(value, float):
        return f"{value:.3g}"
    return f"{value:,}"


def counted(n: int, noun: str) -> str:
    """A count and its noun, singular or plural, with thousands separators (text read "2 file(s)").
    Worked example: (1, "node") -> "1 node"; (10_000_000, "sequence") -> "10,000,000 sequences"."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")
