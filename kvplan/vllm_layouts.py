"""Weights as vLLM holds them after loading: the per-backend layouts that differ from the checkpoint's bytes.

``kvplan.weights`` / ``kvplan.parallel`` price every tensor the checkpoint format registers on a rank.
vLLM's MoE kernels re-lay some of them out in ``process_weights_after_loading``; "Model loading took X GiB"
is ``torch.cuda.memory_allocated`` after that step (``DeviceMemoryProfiler``), so it counts the padded,
swizzled tensors and whatever the method keeps beside them. This module returns the difference
(layout bytes - kvplan's checkpoint bytes) for one pipeline stage of one rank.

MXFP4 MoE (gpt-oss; vllm/model_executor/layers/quantization/mxfp4.py ``Mxfp4MoEMethod``, read 2026-12 at
vllm-project/vllm@007d5005), backend by GPU and release line (``mxfp4_moe_backend``):

========================  ==========================================================================================
backend                   per expert on a rank, I = intermediate per partition, H = hidden
========================  ==========================================================================================
MARLIN (pre-Hopper; all   ``create_weights``: I -> round_up(I, 128), H -> round_up(H, 256) ("the moe marlin kernel
GPUs but Blackwell in     requires that for each linear n % 256 == 0 and k % 128 == 0"); w13 [2I, H/2] u8 + e8m0
vLLM 0.10)                [2I, H/32]; w2 [H, I/2] + [H, I/32]; biases bf16 [2I] + [H]
TRITON (Hopper, vLLM      I -> round_up(I, 64), H unpadded; then ``_swizzle_mxfp4`` (bundled triton_kernels
0.11+; "Using 'TRITON'    ``HopperMXValueLayout``: the packed [K/2, N] of each GEMM padded to (64, 64) in the
                          v0.19.0 wheel, to the 16 x 32 pack sizes in 0.14.1 / 0.33.0; scales
Mxfp4 MoE backend" in     ``HopperMXScaleLayout``: [N, K/32] padded to (2 x num_warps x 16 = 256, 2)); the swizzled
the v0.19.0 log)          scales live in the PrecisionConfig while ``layer.w13_weight_scale`` / ``w2_weight_scale``
                          stay registered (only the weights are replaced): the scales are held twice; biases fp32
FLASHINFER TRTLLM         I -> round_up(I, 256), H -> round_up(H, 256) ("pad the intermediate size to be a multiple
(Blackwell, sm100)        of 2 * mxfp4_block"); shuffled in place, biases fp32
========================  ==========================================================================================

Worked numbers (gpt-oss-20b, 24 layers x 32 experts, H = I = 2880, bf16 rest 3.35 GiB at TP1), v0.19.0 layout:
TRITON TP2: I 1440 -> 1472; w13 packed [1440 -> 1472] x [2944], w2 [736 -> 768] x [2880], scales [3072, 90] +
[3072, 46] swizzled and [2944, 90] + [2880, 46] kept, biases 5824 x 4 -> 7,383,936 B per expert, 6.96 GiB per rank
("Model loading took 7.01 GiB", v0.19.0 H100 TP2: -0.7 %); TP1 13.60 GiB (13.64 logged, -0.3 %). With upstream
triton's (64, 256) they were 7.20 / 13.94 GiB (+2.7 / +2.2 %). The 0.14.1 / 0.33.0 bundles pad the values only to
the pack sizes (nothing for gpt-oss): the kept scales and fp32 biases remain, gpt-oss-120b TP1 64.30 GiB (64.38
logged on 0.14.1, vLLM #33155). The 0.11 profile keeps Marlin.
"""

import re

from kvplan.parallel import Layout, stage_distinct
from kvplan.spec import ModelSpec
from kvplan.units import cdiv

MXFP4_MARLIN_ALIGN = (128, 256)  # (intermediate per partition, hidden): mxfp4.py create_weights, Marlin backend
MXFP4_TRTLLM_ALIGN = (256, 256)  # SM100_FI_MXFP4_* (FlashInfer TRTLLM-gen): mxfp4.py create_weights
MXFP4_TRITON_INTER_ALIGN = 64  # the remaining CUDA backends (Triton): round_up(I, 64), hidden unpadded
# HopperMXValueLayout.swizzle_data pre-padding of the packed (*, M, K) uint8 weight, by the triton_kernels vLLM
# bundles (vllm/third_party/triton_kernels/tensor_details/layout_details/hopper_value.py): the v0.19.0 wheel pads
# both matrix dims to multiples of 64 ("Pre-pad both matrix dims to multiples of 64"); the v0.33.0 wheel (as the
# 0.14.1 one) pads only to the mma pack sizes, 16 x 32 (k_tile x warp_tile x threads x scott x contig), which the
# gpt-oss shapes already are. Upstream triton's newest source pads to (64, 256): no vLLM wheel read bundles it.
# The 0.21 line (0.21-0.32) is not read: kept as 0.19.
TRITON_VALUE_ALIGN_BY_VERSION = {"0.17": (64, 64), "0.21": (64, 64), "0.33": (16, 32)}
TRITON_VALUE_ALIGN = TRITON_VALUE_ALIGN_BY_VERSION["0.17"]
TRITON_PACK_ALIGN = (16, 32)
# HopperMXScaleLayoutTransformation.swizzle_data: SWIZZLE_ALIGN_M = 2 x num_warps x 2 x 8, SWIZZLE_ALIGN_K = 2;
# vLLM passes num_warps = 8 outside batched (DeepEP / PPLX) MoE.
TRITON_SCALE_ALIGN = (2 * 8 * 2 * 8, 2)
MX_BLOCK = 32


def _up(x: int, a: int) -> int:
    return cdiv(x, a) * a


def mxfp4_moe_backend(arch: str, vllm_version: str) -> str:
    """The MXFP4 MoE backend vLLM picks (mxfp4.py get_mxfp4_backend): "trtllm" on datacenter Blackwell (FlashInfer
    is a vLLM dependency there), "triton" on Hopper in the 0.17+ profiles (triton_kernels bundled; the v0.19.0 H100
    log: "Using 'TRITON' Mxfp4 MoE backend"), "marlin" elsewhere (Ampere / Ada: triton_kernels needs sm90..sm10x)
    and in the 0.10 / 0.11 profiles, whose H100 logs load gpt-oss-120b at the Marlin size (65.9651 GiB, vLLM
    #23278 on 0.10.1; #27508's 1.71 GiB of KV on 0.11 needs it too). Not split: 0.14.1 on Hopper already ran
    Triton with pack-size value padding only (64.38 GiB logged, kvplan 64.30 with TRITON_PACK_ALIGN)."""
    if arch == "sm100":
        return "trtllm"
    if arch == "sm90" and vllm_version not in ("0.10", "0.11"):
        return "triton"
    return "marlin"


def mxfp4_expert_bytes(hidden: int, inter: int, bias: bool, backend: str = "checkpoint",
                       value_align: tuple[int, int] = TRITON_VALUE_ALIGN) -> int:
    """Bytes of one gpt-oss expert on a rank (w13 [2I, H] + w2 [H, I] in MXFP4, biases [2I] + [H]) as ``backend``
    holds it; "checkpoint" is the unpadded layout kvplan.weights prices (bf16 biases).
    Worked number: H = 2880, I = 1440 (-> 1472), "triton" at the v0.19.0 (64, 64): 4,333,568 + 2,211,840 (values)
    + 276,480 + 141,312 (swizzled scales) + 264,960 + 132,480 (kept scales) + 23,296 (fp32 biases) = 7,383,936."""
    if backend == "checkpoint":
        i, h, bias_b = inter, hidden, 2
    elif backend == "marlin":
        i, h, bias_b = _up(inter, MXFP4_MARLIN_ALIGN[0]), _up(hidden, MXFP4_MARLIN_ALIGN[1]), 2
    elif backend == "trtllm":
        i, h, bias_b = _up(inter, MXFP4_TRTLLM_ALIGN[0]), _up(hidden, MXFP4_TRTLLM_ALIGN[1]), 4
    elif backend == "triton":
        i, h = _up(inter, MXFP4_TRITON_INTER_ALIGN), hidden
        vm, vk = value_align
        sm, sk = TRITON_SCALE_ALIGN
        values = _up(h // 2, vm) * _up(2 * i, vk) + _up(i // 2, vm) * _up(h, vk)  # w13, w2 packed, padded
        swizzled = _up(2 * i, sm) * _up(cdiv(h, MX_BLOCK), sk) + _up(h, sm) * _up(cdiv(i, MX_BLOCK), sk)
        kept = 2 * i * cdiv(h, MX_BLOCK) + h * cdiv(i, MX_BLOCK)  # layer.w13/w2_weight_scale stay registered
        return values + swizzled + kept + ((2 * i + h) * 4 if bias else 0)
    else:
        raise ValueError(backend)
    scales = 2 * i * cdiv(h, MX_BLOCK) + h * cdiv(i, MX_BLOCK)
    return 2 * i * h // 2 + h * i // 2 + scales + ((2 * i + h) * bias_b if bias else 0)


def vllm_mxfp4_extra_bytes(spec: ModelSpec, layout: Layout, stage: int, weight_format: str | None,
                           arch: str, vllm_version: str) -> int:
    """Bytes vLLM's MXFP4 MoE layout adds on one rank of stage ``stage`` over kvplan's checkpoint bytes (0 when the
    experts are not gpt-oss MXFP4). Worked number: gpt-oss-120b TP1, Marlin: +5.14 GiB (60.77 -> 65.91 GiB;
    "Model loading took 65.9651 GiB", vLLM #23278, 0.10.1 H100)."""
    from kvplan.weights import resolve_format

    fmt, _ = resolve_format(spec, weight_format)
    if fmt != "mxfp4":
        return 0
    backend = mxfp4_moe_backend(arch, vllm_version)
    ranks = layout.tp * layout.dp
    extra = 0
    for layer, n in stage_distinct(spec, layout.pp, stage):
        ex = layer.experts
        if ex is None:
            continue
        names = {c.name.rsplit(".", 1)[-1]: c for c in ex.linears}
        if set(names) != {"gate_up_proj", "down_proj"}:
            return 0  # not the fused gpt-oss layout
        hidden, inter = names["gate_up_proj"].in_features, names["down_proj"].in_features
        count, part = (cdiv(ex.num_experts, ranks), inter) if layout.ep else (ex.num_experts, cdiv(inter, ranks))
        bias = names["gate_up_proj"].bias
        align = TRITON_VALUE_ALIGN_BY_VERSION.get(vllm_version, TRITON_PACK_ALIGN)
        extra += n * count * (mxfp4_expert_bytes(hidden, part, bias, backend, align)
                              - mxfp4_expert_bytes(hidden, part, bias))
    return extra


# ----------------------------------------------------------------------------- FP8 block shapes vLLM refuses

_BLOCK = re.compile(r"^fp8-block(?:-(\d+)x(\d+))?$")


def _block(fmt: str) -> tuple[int, int] | None:
    m = _BLOCK.match(fmt)
    if m is None:
        return None
    return (int(m[1]), int(m[2])) if m[1] else (128, 128)


def fp8_block_refusal(spec: ModelSpec, layout: Layout, weight_format: str | None) -> str | None:
    """The ValueError vLLM raises while creating the weights of a block-FP8 model whose shards do not fill whole
    blocks, or None. It pads nothing: vllm/model_executor/layers/quantization/fp8.py ``validate_fp8_block_shape``
    (linear layers, TP > 1: a column shard's output rows % block_n, a row shard's input columns % block_k) and
    ``Fp8MoEMethod.create_weights`` (experts without EP: intermediate per partition % block_n, and % block_k at
    TP > 1). Worked example: Qwen3-30B-A3B-FP8 at TP4: 768 / 4 = 192 -> "The output_size of gate's and up's
    weight = 192 is not divisible by weight quantization block_n = 128." (vLLM #25292; #17569 for
    Qwen3-235B-A22B-FP8 at TP8)."""
    from kvplan.parallel import KV_PROJ, ROW_EXPERT, _shard
    from kvplan.spec import Linear
    from kvplan.weights import component_format, layer_groups, resolve_format

    fmt, use_overrides = resolve_format(spec, weight_format)
    if layout.tp * layout.dp == 1:
        return None
    for layer, _n, mine in layer_groups(spec, overrides=use_overrides):
        mine = mine if use_overrides else None
        if layer.experts is not None and not layout.ep:
            for c in layer.experts.linears:
                for f, _ in component_format("experts", c, fmt, mine):
                    block = _block(f)
                    if block is None:
                        continue
                    inter = c.in_features if c.name.endswith(ROW_EXPERT) else c.out_features
                    # gate_up is fused 2 x I: the partition of each half is what vLLM checks
                    part = (inter // 2 if c.name.endswith("gate_up_proj") else inter) // (layout.tp * layout.dp)
                    if part % block[0]:
                        return (f"ValueError: The output_size of gate's and up's weight = {part} is not divisible by "
                                f"weight quantization block_n = {block[0]}.")
                    if part % block[1]:
                        return (f"ValueError: The input_size of down's weight = {part} is not divisible by weight "
                                f"quantization block_k = {block[1]}.")
        if layout.tp == 1:
            continue
        for category in ("attention", "mlp"):
            for c in getattr(layer, category):
                if not isinstance(c, Linear):
                    continue
                if c.name in KV_PROJ and spec.num_key_value_heads % layout.tp:
                    continue  # replicated KV heads: vLLM's merged-shard check skips them
                for f, _ in component_format(category, c, fmt, mine):
                    block = _block(f)
                    if block is None:
                        continue
                    if c.shard == "column":
                        n = _shard(c, layout.tp, spec).out_features
                        if n % block[0]:
                            return (f"ValueError: Weight output_partition_size = {n} is not divisible by weight "
                                    f"quantization block_n = {block[0]}.")
                    elif c.shard == "row":
                        k = c.in_features // layout.tp
                        if k % block[1]:
                            return (f"ValueError: Weight input_size_per_partition = {k} is not divisible by weight "
                                    f"quantization block_k = {block[1]}.")
    return None
