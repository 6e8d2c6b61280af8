"""What PyTorch's CUDA caching allocator adds to vLLM's "Model loading took" beyond the parameters' bytes.

vLLM measures the load as torch memory: v1/worker/gpu_model_runner.py ``load_model`` wraps the loader in
utils/mem_utils.py ``DeviceMemoryProfiler``, whose reading is platforms/cuda.py ``get_current_memory_usage`` =
``torch.cuda.max_memory_allocated`` right after ``reset_peak_memory_stats`` (0.19.0 wheel; the same in 0.11 - 0.33).
That statistic counts allocator *blocks*, not requested bytes, and every parameter is its own allocation (the layers
create their weights with ``torch.empty`` on the device, one Parameter each; the loader copies into them in place).
c10/cuda/CUDACachingAllocator.cpp (pytorch/pytorch, the allocator of the torch 2.8 - 2.13 vLLM pins, default config):
``round_size`` rounds a request up to 512 B; ``get_allocation_size`` makes a request > 1 MiB (kSmallSize) and
< 10 MiB (kMinLargeAlloc) a 20 MiB segment (kLargeBuffer), a larger one a segment of the request rounded up to 2 MiB
(kRoundLarge); ``should_split`` splits a large-pool block only when more than kSmallSize (1 MiB) would remain. So a
tensor of >= 10 MiB whose size is within 1 MiB under a multiple of 2 MiB keeps its whole segment as its block, and the
statistic counts the remainder too: up to 1 MiB a tensor. A Llama-3.1-8B shard (4096-multiples) has none; a
Qwen2.5-7B down_proj (3584 x 18944 x 2 B = 129.5 MiB) holds 130.
From vLLM 0.21.0 the worker loads under max_split_size_mb 20 (v1/worker/gpu_worker.py load_model,
``_scoped_allocator_max_split``; not in 0.20.2, in every wheel 0.21.0 - 0.34.0), and ``should_split`` never splits a
block for a request >= max_split_size: a parameter of >= 20 MiB keeps its whole segment, up to 2 MiB - 512 B more
(Qwen2.5-7B's o_proj, 24.5 MiB, holds 26). The logs that show it: Qwen2.5-1.5B "Model loading took 2.98 GiB" on
0.28 and 0.30 (kvplan 2.88 -> 2.97), the Qwen AWQ checkpoints on 0.26 - 0.30 (below).
"""

from collections.abc import Callable

from kvplan.engines import vllm_has
from kvplan.parallel import Layout, _RowShard, _shard, stage_distinct
from kvplan.spec import Linear, ModelSpec
from kvplan.units import MiB, cdiv
from kvplan.vllm_layouts import _AWQ_FMT, vllm_fused_name
from kvplan.weights import FLOAT_FORMATS, base_dtype, resolve_format

TORCH_MIN_BLOCK = 512  # kMinBlockSize
TORCH_SMALL_SIZE = 1 * MiB  # kSmallSize: the largest small-pool request, and the least remainder a split leaves
TORCH_MIN_LARGE_ALLOC = 10 * MiB  # kMinLargeAlloc: below it (and above kSmallSize) a 20 MiB segment is split
TORCH_ROUND_LARGE = 2 * MiB  # kRoundLarge: larger requests get their own segment, rounded up to this
# vLLM's load_model sets max_split_size_mb:20 around the load from 0.21.0 (VLLM_CHANGES "load_max_split_20"); torch's
# should_split then never splits a block for a request of >= max_split_size (CUDACachingAllocator.cpp should_split:
# "return (size < max_split_size()) && (remaining > kSmallSize)"; search index file 3232397, pytorch/pytorch)
VLLM_LOAD_MAX_SPLIT = 20 * MiB



def torch_block_bytes(nbytes: int, max_split: int | None = None) -> int:
    """The bytes ``torch.cuda.memory_allocated`` counts for one fresh tensor of ``nbytes`` (no cached block to reuse;
    under 10 MiB: a fresh 20 MiB segment, so it is split). ``max_split``: the allocator's max_split_size in bytes
    (None: torch's default, no limit).

    512-B rounding; >= 10 MiB: its own segment of round_up(size, 2 MiB), kept whole when the rest is <= 1 MiB, or
    whatever the rest when the request is >= max_split. Worked numbers: 135,790,592 B (129.5 MiB) -> 136,314,880 (130
    MiB); 25,690,112 B (24.5 MiB, 1.5 MiB left: split) -> itself, and 26 MiB under a 20 MiB max_split; 8 MiB (a 20
    MiB segment, split) -> itself; 100 B -> 512."""
    if nbytes <= 0:
        return 0
    size = max(TORCH_MIN_BLOCK, cdiv(nbytes, TORCH_MIN_BLOCK) * TORCH_MIN_BLOCK)
    if size < TORCH_MIN_LARGE_ALLOC:
        return size
    segment = cdiv(size, TORCH_ROUND_LARGE) * TORCH_ROUND_LARGE
    whole = segment - size <= TORCH_SMALL_SIZE or (max_split is not None and size >= max_split)
    return segment if whole else size


def _awq_tensors(n: int, k: int, group: int) -> list[int]:
    """Bytes of the three tensors vLLM creates for one AWQ [n, k] layer on a rank (auto_awq.py / awq_marlin.py
    ``create_weights``, the same shapes 0.10 - 0.34): qweight int32 [k, n/8] = k x n / 2, qzeros int32 [k/G, n/8],
    scales 16-bit [k/G, n]. Worked number: Qwen3-14B's fused qkv_proj (n 7168, k 5120, G 128): 18,350,080 (17.5
    MiB) + 143,360 + 573,440."""
    groups = k // group
    return [k * n // 2, groups * n // 2, groups * n * 2]


def _linear_tensors(comps, tp: int, spec: ModelSpec, elem: int, awq_group: Callable[[Linear], int | None] | None = None
                    ) -> list[int]:
    """Bytes of each parameter tensor vLLM makes for one layer category's linears on a TP rank (fused as it builds
    them; a row-parallel bias is whole, a column one sharded with its weight). ``awq_group``: the AWQ group size of a
    linear held as AWQ (its three tensors, ``_awq_tensors``), None for one kept 16-bit."""
    fused: dict[str, list] = {}
    out: list[int] = []
    for c in comps:
        if not isinstance(c, Linear):
            continue
        group = awq_group(c) if awq_group is not None else None
        s = _shard(c, tp, spec)
        if isinstance(s, _RowShard):
            n, k = s.linear.out_features, s.linear.in_features
            out += (_awq_tensors(n, k, group) if group else [n * k * elem]) * c.count
            out += [c.out_features * elem] * (c.count if c.bias else 0)
            continue
        # vLLM fuses these into one parameter (QKVParallelLinear, MergedColumnParallelLinear): one allocation
        entry = fused.setdefault(vllm_fused_name(c.name), [0, s.in_features, 0, c.count, group])
        entry[0] += s.out_features
        entry[2] += s.out_features if c.bias else 0
    for n, k, bias_n, count, group in fused.values():
        out += (_awq_tensors(n, k, group) if group else [n * k * elem]) * count
        out += [bias_n * elem] * (count if bias_n else 0)
    return out


def _awq_group(spec: ModelSpec, fmt: str) -> int | None:
    """The group size of a uniformly AWQ checkpoint served as such ("int4-gG" with no per-module overrides: every
    quantizable attention / MLP linear AWQ, embeddings and LM head 16-bit), else None (not modelled)."""
    m = _AWQ_FMT.match(fmt)
    if m is None or spec.quantization_overrides:
        return None
    return int(m["g"])


def vllm_allocator_rounding_bytes(spec: ModelSpec, layout: Layout, stage: int = 0, weight_format: str | None = None,
                                  vllm_version: str | None = None) -> int:
    """Bytes the caching allocator's blocks add to one rank's 16-bit (or AWQ) parameters in vLLM's "Model loading
    took".

    Tensors: the embedding / LM-head shards (vocab padded to 64, / tp), every layer's linears as vLLM fuses them
    (qkv_proj, gate_up_proj, a gated-delta-net's in_proj_qkvz and in_proj_ba: kvplan.vllm_layouts._FUSED) with their
    biases, and a MoE layer's FusedMoE w13_weight [E_local, 2 x I_local, H] and w2_weight [E_local, H, I_local]
    (E_local = cdiv(E, tp x dp) under EP, else E; I_local = I / (tp x dp) without EP); sum of ``torch_block_bytes`` -
    bytes over the tensors of >= 10 MiB. Left out: tensors under 10 MiB (norms, biases, routers, small shards, the
    rotary tables), which round by < 512 B each, except that one carved from a shared 20 MiB segment takes the
    segment's rest too when <= 1 MiB remains (order-dependent packing, not simulated); and the free rest of a split
    segment, which torch reserves but does not count as allocated (0.27+ budgets it via total_consumed,
    memory_profiling's free-memory difference: not modelled).
    AWQ ("int4-gG" as the checkpoint ships it, no per-module overrides): each linear's three tensors as vLLM creates
    them (``_awq_tensors``: qweight int32 [k, n/8], qzeros, scales; fused as above) beside the 16-bit embeddings and
    LM head; AWQ MoE experts are left out. The rule holds after loading: vLLM's AWQ repack (awq_marlin.py
    awq_marlin_repack 0.10 - 0.18; from 0.19 ``_convert_awq_to_standard_format`` then the Marlin / Machete kernel's
    repack, 0.28.0 quantization/auto_awq.py and kernels/linear/mixed_precision/marlin.py, read in the wheels
    2026-12-03) allocates each new tensor while the old one lives and frees the old, the same size, whose whole block
    the next layer's new tensor reuses (best fit; a toy replay of torch's allocator over the 0.28.0 repack's
    allocations, temporaries included, lands within 20 MiB of this count on Qwen3-14B / 32B and Qwen2.5-7B). Worked
    number, Qwen3-14B-AWQ at TP 1 on 0.28: qkv_proj's qweight 5120 x 7168 / 2 = 17.5 MiB -> 18 (+0.5),
    gate_up_proj's 5120 x 34,816 / 2 = 85 MiB -> 86 (+1), down_proj's 17,408 x 5120 / 2 = 42.5 MiB -> 44 (+1.5,
    >= 20 MiB: not split; o_proj's 12.5 is), 3 MiB x 40 layers + embed_tokens and lm_head 1483.75 -> 1484 (+0.25
    each) = 120.5 MiB (kvplan 9.30 -> 9.42 GiB, logged 9.44; 60.5 MiB before 0.21, no max_split). The 1 - 10 MiB
    scales carved from shared 20 MiB segments (order-dependent) are left out. 0 for any other quantized checkpoint or
    --quantization.
    Worked number: Qwen2.5-7B at TP 1 (H 3584, q + k + v 4608, I 18944, vocab 152,064): per layer qkv 31.5 MiB -> 32
    (+0.5), o_proj 24.5 (split), gate_up 259 -> 260 (+1), down 129.5 -> 130 (+0.5) = 2 MiB x 28 layers, embed_tokens
    and lm_head 1039.5 -> 1040 (+0.5 each): 57 MiB = 0.0557 GiB (the v0.19.0 log's 14.25 GiB less kvplan's 14.19)."""
    fmt, _ = resolve_format(spec, weight_format)
    group = _awq_group(spec, fmt) if fmt == spec.quantization else None
    if group is None and (fmt not in FLOAT_FORMATS or spec.quantization is not None):
        return 0
    elem = {"fp32": 4, "bf16": 2, "fp16": 2}[base_dtype(spec, fmt)]
    awq = (lambda c: group if c.quantizable else None) if group else None
    tp, moe_ranks = layout.tp, layout.tp * layout.dp
    first, last = stage == 0, stage == layout.pp - 1
    sizes: list[int] = []
    if first:
        sizes += _linear_tensors(spec.embeddings, tp, spec, elem)
    for layer, n in stage_distinct(spec, layout.pp, stage, layout.pp_split):
        one = []
        for category in ("attention", "mlp"):
            one += _linear_tensors(getattr(layer, category), tp, spec, elem, awq)
        if layer.experts is not None and not group:  # AWQ MoE experts (Marlin MoE's packed w13 / w2): not modelled
            e = layer.experts
            e_local = cdiv(e.num_experts, moe_ranks) if layout.ep else e.num_experts
            shard = 1 if layout.ep else moe_ranks
            up = sum(cdiv(c.out_features, shard) for c in e.linears if not c.name.endswith("down_proj"))
            down = [c for c in e.linears if c.name.endswith("down_proj")]
            if down:
                hidden, inter = down[0].out_features, cdiv(down[0].in_features, shard)
                one += [e_local * up * hidden * elem, e_local * hidden * inter * elem]
        sizes += one * n
    if last:
        head = spec.lm_head or (spec.embeddings[:1] if layout.pp > 1 else ())
        sizes += _linear_tensors(head, tp, spec, elem)
    # tensors under 10 MiB round to 512 B at most (< 0.5 KiB each): left out, so tiny test models stay exact
    max_split = None
    if vllm_version is not None and vllm_has(vllm_version, "load_max_split_20"):
        max_split = VLLM_LOAD_MAX_SPLIT
    return sum(torch_block_bytes(s, max_split) - s for s in sizes if s >= TORCH_MIN_LARGE_ALLOC)
