"""KV-cache bytes for a workload: per layer kind, for equal or unequal sequence lengths.

The seed's formula for a uniform full-attention model is the special case
``M = 2 x B x L x T x H_kv x d_h x b`` (``seed_kv_bytes``); everything else sums per layer:

    bytes = sum over sequences s, layers l of  bytes_held_l(T_s) (= tokens_held_l(T_s) x kv_bytes_per_token_l(b_kv),
            except DeepSeek-V4's compressed layers, whose cache is not linear in tokens)
          + sum over sequences s, recurrent layers l of  state_bytes_l

Sequences are summed at their actual lengths, never ``B x max``. Unpaged: block rounding is
``paging.py``'s job.
"""

from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from kvplan.errors import PlanInputError
from kvplan.layers import ATTENTION_KINDS, CONVENTIONS, Convention, cache_parts
from kvplan.spec import ModelSpec
from kvplan.units import DTYPE_BITS, canonical_dtype

KV_DTYPES = ("auto", "fp32", "bf16", "fp16", "fp8")
MAX_TOKENS = 100_000_000  # per sequence: far past any context window


def seed_kv_bytes(batch: int, layers: int, tokens: int, kv_heads: int, head_dim: int, bytes_per_value: int = 2) -> int:
    """The seed's ``M = 2 B L T H d b``: 2 x 1 x 32 x 8192 x 8 x 128 x 2 = 1 GiB exactly."""
    return 2 * batch * layers * tokens * kv_heads * head_dim * bytes_per_value


def kv_dtype_bytes(spec: ModelSpec, kv_dtype: str = "auto") -> int:
    """Bytes per KV element: 'auto' is the model dtype (vLLM's default); fp8 is 1 byte.

    fp8 per-tensor scales live on the layer (two fp32 scalars per layer, vLLM ``_k_scale``/
    ``_v_scale``), not in the cache: 8 bytes per layer, negligible and not counted here.
    """
    name = spec.dtype if kv_dtype in (None, "auto") else canonical_dtype(kv_dtype, "kv_cache_dtype")
    if name not in ("fp32", "bf16", "fp16", "fp8"):
        raise PlanInputError("kv_cache_dtype", f"{kv_dtype!r} is not a KV-cache dtype; allowed: {', '.join(KV_DTYPES)}")
    return DTYPE_BITS[name] // 8


def check_convention(convention: str) -> Convention:
    if convention not in CONVENTIONS:
        raise PlanInputError("convention", f"{convention!r} is not a convention; allowed: {', '.join(CONVENTIONS)}")
    return convention  # type: ignore[return-value]


def check_lengths(lengths: Sequence[int], field: str = "lengths") -> list[int]:
    out = []
    for value in lengths:
        if isinstance(value, bool) or not isinstance(value, int):
            raise PlanInputError(field, f"lengths must be whole numbers of tokens, got {value!r}")
        if value < 0 or value > MAX_TOKENS:
            raise PlanInputError(field, f"each length must be between 0 and {MAX_TOKENS:,}, got {value}")
        out.append(value)
    return out


def kv_bytes_per_token(spec: ModelSpec, kv_dtype: str = "auto", convention: Convention = "vllm", tp: int = 1) -> int:
    """Bytes one more token adds to one sequence's cache, over all attention layers, windows ignored.

    Worked number: Llama-3.1-8B, 32 layers x 8 heads x (128 + 128) x 2 B = 131,072 B (128 KiB).
    """
    b = kv_dtype_bytes(spec, kv_dtype)
    return sum(layer.cache.kv_bytes_per_token(convention, tp, b) for layer in spec.layers)


def state_bytes_per_sequence(spec: ModelSpec, convention: Convention = "vllm", tp: int = 1) -> int:
    """Bytes of fixed recurrent state per sequence (Mamba / linear-attention layers)."""
    b = DTYPE_BITS[spec.dtype] // 8
    return sum(layer.cache.state_bytes(convention, tp, b) for layer in spec.layers)


class KVBytes(BaseModel):
    """KV bytes of a batch. ``by_kind`` splits ``kv_bytes`` by layer kind."""

    model_config = ConfigDict(frozen=True)
    convention: str
    kv_dtype_bytes: int
    num_sequences: int
    total_tokens: int
    kv_bytes: int
    by_kind: dict[str, int]
    layers_by_kind: dict[str, int]
    kv_bytes_per_token: int
    state_bytes_per_sequence: int


def kv_cache_bytes(
    spec: ModelSpec,
    lengths: Sequence[int],
    kv_dtype: str = "auto",
    convention: Convention = "vllm",
    tp: int = 1,
) -> KVBytes:
    """KV bytes for sequences of the given lengths (tokens processed so far, prompt + output).

    Worked number: the seed's 32-layer, 8-KV-head, 128-dim bf16 model at 8 x 8192 tokens = 8 GiB.
    """
    convention = check_convention(convention)
    lengths = check_lengths(lengths)
    if spec.model_type in ("deepseek_v41", "deepseek_v41_text"):  # families/deepseek_v41.py: no convention for it
        from kvplan.families.deepseek_v41 import plan_refusal

        raise PlanInputError(*plan_refusal("custom"))
    b = kv_dtype_bytes(spec, kv_dtype)
    b_state = DTYPE_BITS[spec.dtype] // 8
    by_kind: dict[str, int] = {}
    # Identical layers are one object: price each distinct cache spec once, times its count.
    # A layer keeping two caches (Falcon-H1's attention + Mamba) is priced as its two parts.
    per_spec = Counter(part for layer in spec.layers for part in cache_parts(layer.cache))
    counts = Counter(lengths)
    for cache, n_layers in per_spec.items():
        if cache.kind in ATTENTION_KINDS:
            size = sum(cache.bytes_held(t, convention, tp, b) * c for t, c in counts.items())
        else:  # fixed state; a measured state may also attend (Falcon-H1: attention + Mamba in one layer)
            size = len(lengths) * cache.state_bytes(convention, tp, b_state)
            if cache.elems_per_token(convention, tp):
                held = sum(cache.tokens_held(t, convention) * c for t, c in counts.items())
                size += held * cache.elems_per_token(convention, tp) * b
        by_kind[cache.kind] = by_kind.get(cache.kind, 0) + size * n_layers
    return KVBytes(
        convention=convention,
        kv_dtype_bytes=b,
        num_sequences=len(lengths),
        total_tokens=sum(lengths),
        kv_bytes=sum(by_kind.values()),
        by_kind=by_kind,
        layers_by_kind=dict(Counter(part.kind for layer in spec.layers for part in cache_parts(layer.cache))),
        kv_bytes_per_token=kv_bytes_per_token(spec, kv_dtype, convention, tp),
        state_bytes_per_sequence=state_bytes_per_sequence(spec, convention, tp),
    )
