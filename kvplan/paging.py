"""Paged KV allocation: block rounding per sequence, waste, and shared prefix blocks.

A paged cache (vLLM's ``BlockPool``, the seed's PagedAttention example) gives each sequence
``cdiv(length, block_size)`` blocks; the tail block's empty slots are waste. Sequences that share
a prompt prefix share only *full* blocks (vLLM hashes full blocks only), so a prefix shorter than
a block shares nothing. Cached prefixes kept after their requests finish still hold blocks.

Worked numbers (the seed): block 4, lengths 5, 3, 8 -> 2 + 1 + 2 = 5 blocks, 20 slots for 16
positions, 4 empty. Two 8-token sequences sharing a 4-token prefix -> 1 shared + 1 + 1 = 3 blocks,
12 slots.
"""

import math
import random
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from kvplan.errors import PlanInputError
from kvplan.kv import check_lengths

BLOCK_SIZES = (1, 8, 16, 32, 64, 128, 256)
MAX_BLOCK_SIZE = 1 << 16  # what kvplan's paging arithmetic takes (exploration); vLLM's own sizes below

# The --block-size values vLLM's command line takes, as read in the wheels (2026-12): (release read, choices; None:
# any whole number >= 1). 0.6.3: arg_utils.py choices=[8, 16, 32]; 0.7.3: choices=[8, 16, 32, 64, 128]; 0.10.2 and
# 0.11.0: config/cache.py BlockSize = Literal[1, 8, 16, 32, 64, 128] (argparse choices from the Literal); 0.11.1 and
# 0.17.0: BlockSize = Literal[1, 8, 16, 32, 64, 128, 256]; 0.21.0: block_size: SkipValidation[int], 0.33.0:
# Field(gt=0). A release between two read wheels is given the older one's choices.
VLLM_BLOCK_SIZE_CHOICES: tuple[tuple[tuple[int, int, int], tuple[int, ...] | None], ...] = (
    ((0, 6, 3), (8, 16, 32)),
    ((0, 7, 3), (8, 16, 32, 64, 128)),
    ((0, 10, 2), (1, 8, 16, 32, 64, 128)),
    ((0, 11, 1), (1, 8, 16, 32, 64, 128, 256)),
    ((0, 17, 0), (1, 8, 16, 32, 64, 128, 256)),
    ((0, 21, 0), None),
)
# From 0.21.0 the flag takes any size, but the FlashAttention backend runs kernel blocks that are multiples of 16
# (v1/attention/backends/flash_attn.py get_supported_kernel_block_sizes: [MultipleOf(16)], 0.21.0 and 0.33.0 wheels;
# v1/worker/utils.py select_common_block_size raises "No common block size for N" when none divides the block).
VLLM_FLASH_ATTN_BLOCK_MULTIPLE = 16


def vllm_block_size_choices(release: tuple[int, int, int]) -> tuple[tuple[int, int, int], tuple[int, ...] | None]:
    """(the wheel read, its --block-size choices or None for any) for a vLLM ``release``: the newest read wheel at
    or before it (the oldest for anything older).

    Worked example: (0, 11, 0) -> ((0, 10, 2), (1, 8, 16, 32, 64, 128))."""
    best = VLLM_BLOCK_SIZE_CHOICES[0]
    for entry in VLLM_BLOCK_SIZE_CHOICES:
        if entry[0] <= tuple(release):
            best = entry
    return best


def vllm_block_size_problem(block_size: int, release: tuple[int, int, int]) -> str | None:
    """Why vLLM ``release`` would refuse ``--block-size block_size`` (None if it takes it). Worked examples: 7 at
    (0, 11, 0): refused by the flag's choices; 7 at (0, 32, 0): the flag takes it, FlashAttention does not (7 % 16)."""
    read, choices = vllm_block_size_choices(release)
    wheel = ".".join(map(str, read))
    if choices is not None:
        if block_size in choices:
            return None
        return (f"vLLM refuses --block-size {block_size}: its command line takes only "
                f"{', '.join(map(str, choices))} (vllm {wheel} wheel)")
    if block_size % VLLM_FLASH_ATTN_BLOCK_MULTIPLE == 0:
        return None
    return (f"vLLM takes --block-size {block_size} on the command line (any size from 0.21.0), but its FlashAttention "
            f"backend runs multiples of {VLLM_FLASH_ATTN_BLOCK_MULTIPLE} only: start-up fails with 'No common block "
            f"size for {block_size}' unless the attention backend chosen takes it (vllm {wheel} wheel)")


class Paging(BaseModel):
    """Allocation of one set of sequences at one block size. Slots are token positions."""

    model_config = ConfigDict(frozen=True)
    block_size: int
    num_sequences: int
    logical_tokens: int  # sum of lengths, shared prefix counted in every sequence
    shared_prefix_tokens: int
    shared_blocks: int  # full blocks of the prefix, held once
    retained_blocks: int  # cached prefixes of finished requests
    allocated_blocks: int
    allocated_slots: int
    used_slots: int  # distinct positions stored (a shared block's positions count once)
    wasted_slots: int

    @property
    def waste_fraction(self) -> float:
        return self.wasted_slots / self.allocated_slots if self.allocated_slots else 0.0


def check_block_size(block_size: int, field: str = "block_size") -> int:
    if isinstance(block_size, bool) or not isinstance(block_size, int) or not 1 <= block_size <= MAX_BLOCK_SIZE:
        raise PlanInputError(field, f"must be a whole number from 1 to {MAX_BLOCK_SIZE}, got {block_size!r}")
    return block_size


def page_sequences(
    lengths: Sequence[int],
    block_size: int = 16,
    shared_prefix: int = 0,
    retained_prefixes: Sequence[int] = (),
) -> Paging:
    """Blocks, slots and waste for sequences of ``lengths`` tokens in blocks of ``block_size``.

    blocks = shared_full + sum_s (cdiv(len_s, bs) - shared_full) + sum_r floor(retained_r / bs),
    with shared_full = floor(shared_prefix / bs) when every sequence contains the prefix.
    """
    bs = check_block_size(block_size)
    lengths = check_lengths(lengths)
    retained = check_lengths(retained_prefixes, "retained_prefixes")
    if isinstance(shared_prefix, bool) or not isinstance(shared_prefix, int) or shared_prefix < 0:
        raise PlanInputError("shared_prefix", f"must be a whole number >= 0, got {shared_prefix!r}")
    if lengths and shared_prefix > min(lengths):
        raise PlanInputError("shared_prefix", f"{shared_prefix} is longer than the shortest sequence ({min(lengths)})")
    shared_full = shared_prefix // bs if len(lengths) > 1 else 0
    per_seq = sum(-(-n // bs) for n in lengths)
    retained_blocks = sum(n // bs for n in retained)
    private = per_seq - shared_full * len(lengths)
    shared = shared_full if lengths else 0
    allocated = shared + private + retained_blocks
    logical = sum(lengths)
    used = logical - shared_full * bs * max(len(lengths) - 1, 0) + retained_blocks * bs
    return Paging(
        block_size=bs, num_sequences=len(lengths), logical_tokens=logical, shared_prefix_tokens=shared_prefix,
        shared_blocks=shared, retained_blocks=retained_blocks, allocated_blocks=allocated,
        allocated_slots=allocated * bs, used_slots=used, wasted_slots=allocated * bs - used,
    )


def waste_by_block_size(lengths: Sequence[int], block_sizes: Sequence[int] = BLOCK_SIZES, shared_prefix: int = 0) -> list[Paging]:
    """The same sequences paged at each block size, for a waste-vs-block-size chart."""
    return [page_sequences(lengths, bs, shared_prefix) for bs in block_sizes]


def block_map(lengths: Sequence[int], block_size: int, shared_prefix: int = 0) -> list[list[tuple[int, int]]]:
    """Per sequence, its blocks as (physical block id, slots filled). Shared blocks repeat an id.

    For drawing: block 4, lengths [8, 8], prefix 4 -> [[(0, 4), (1, 4)], [(0, 4), (2, 4)]].
    """
    paging = page_sequences(lengths, block_size, shared_prefix)
    bs = paging.block_size
    shared = list(range(paging.shared_blocks))
    next_id = len(shared)
    out = []
    for n in lengths:
        blocks = [(b, bs) for b in shared]
        for start in range(len(shared) * bs, n, bs):
            blocks.append((next_id, min(bs, n - start)))
            next_id += 1
        out.append(blocks)
    return out


DISTRIBUTIONS = ("fixed", "uniform", "normal", "lognormal", "exponential")
MAX_SEQUENCES = 1_000_000


def sample_lengths(n: int, distribution: str = "uniform", mean: int = 2048, spread: int = 1024,
                   seed: int = 0, max_len: int | None = None) -> list[int]:
    """``n`` sequence lengths from a named distribution; the same seed gives the same list.

    uniform: mean +- spread; normal: sd = spread; lognormal: median = mean, sigma = spread / mean;
    exponential: mean; each clipped to [1, max_len].
    """
    if distribution not in DISTRIBUTIONS:
        raise PlanInputError("distribution", f"{distribution!r}; allowed: {', '.join(DISTRIBUTIONS)}")
    for field, value, low in (("n", n, 1), ("mean", mean, 1), ("spread", spread, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= (MAX_SEQUENCES if field == "n" else 100_000_000):
            raise PlanInputError(field, f"must be a whole number >= {low} (and sane), got {value!r}")
    rng = random.Random(seed)
    draw = {
        "fixed": lambda: mean,
        "uniform": lambda: rng.uniform(mean - spread, mean + spread),
        "normal": lambda: rng.gauss(mean, spread),
        "lognormal": lambda: rng.lognormvariate(math.log(mean), spread / mean),
        "exponential": lambda: rng.expovariate(1 / mean),
    }[distribution]
    top = max_len or 100_000_000
    return [min(top, max(1, round(draw()))) for _ in range(n)]
