"""Weights as vLLM holds them after loading: the per-backend layouts that differ from the checkpoint's bytes.

``kvplan.weights`` / ``kvplan.parallel`` price every tensor the checkpoint format registers on a rank.
vLLM's MoE kernels re-lay some of them out in ``process_weights_after_loading``; "Model loading took X GiB"
is ``torch.cuda.memory_allocated`` after that step (``DeviceMemoryProfiler``), so it counts the padded,
swizzled tensors and whatever the method keeps beside them. This module returns the difference
(layout bytes - kvplan's checkpoint bytes) for one pipeline stage of one rank: MXFP4 MoE (below), the 4-bit integer and
NVFP4 layouts (``vllm_quant_layout_extra_bytes``, table further down), and the shards vLLM refuses (block FP8,
``fp8_block_refusal``; Marlin tiles, ``marlin_refusal``).

MXFP4 MoE (gpt-oss; vllm/model_executor/layers/quantization/mxfp4.py ``Mxfp4MoEMethod``, read 2026-12 at
vllm-project/vllm@007d5005), backend by GPU and release line (``mxfp4_moe_backend``):

========================  ==========================================================================================
backend                   per expert on a rank, I = intermediate per partition, H = hidden
========================  ==========================================================================================
MARLIN (pre-Hopper; all   ``create_weights``: I -> round_up(I, 128), H -> round_up(H, 256) ("the moe marlin kernel
GPUs but Blackwell up to requires that for each linear n % 256 == 0 and k % 128 == 0"); w13 [2I, H/2] u8 + e8m0
vLLM 0.11.x)              [2I, H/32]; w2 [H, I/2] + [H, I/32]; biases bf16 [2I] + [H]
TRITON (Hopper, vLLM      I -> round_up(I, 64), H unpadded; then ``_swizzle_mxfp4`` (bundled triton_kernels
0.12+; "Using 'TRITON'    ``HopperMXValueLayout``: the packed [K/2, N] of each GEMM padded to (64, 64) in the
                          0.17.0 - 0.21.0 wheels, to the 16 x 32 pack sizes in 0.12-0.16 / 0.22+; scales
Mxfp4 MoE backend" in     ``HopperMXScaleLayout``: [N, K/32] padded to (2 x num_warps x 16 = 256, 2)); the swizzled
the v0.19.0 log)          scales live in the PrecisionConfig while ``layer.w13_weight_scale`` / ``w2_weight_scale``
                          stay registered (only the weights are replaced): the scales are held twice; biases fp32
FLASHINFER TRTLLM         vLLM 0.10.1.1 - 0.26.0: I -> round_up(I, 256) ("pad the intermediate size to be a multiple
(Blackwell, sm100)        of 2 * mxfp4_block"); 0.27.0 - 0.34.0: I -> round_up(I, 128) (VLLM_CHANGES
                          "mxfp4_trtllm_inter_128"); H -> round_up(H, 256) in all; shuffled in place, biases fp32
========================  ==========================================================================================

Where each release rounds (``mxfp4_padded_sizes``; every wheel 0.10.1.1 - 0.34.0 read 2026-12-03, ``pip download
vllm==X --no-deps``; 0.10.0 has no MXFP4 method): 0.10.1.1 - 0.18.1 inside quantization/mxfp4.py
``Mxfp4MoEMethod.create_weights``, 0.19.0 on in fused_moe/oracle/mxfp4.py
``mxfp4_round_up_hidden_size_and_intermediate_size``, which both gpt-oss's method (``GptOssMxfp4MoEMethod`` from
0.20.0) and DeepSeek-V4 / V4.1's ``Mxfp4MoEMethod`` (models/deepseek_v4*/quant_config.py; the models pass no alignment
of their own) reach through ``maybe_roundup_sizes``. (I per partition, H) alignment by backend: Marlin (128, 256) and
Triton (64, unpadded) in every release; FlashInfer TRTLLM MXFP4 x BF16 / x MXFP8 (256, 256) through 0.26.0, then (128,
256) (the TRTLLM_BACKENDS branch); FlashInfer CUTLASS MXFP4 x MXFP8 / x BF16 (128, 128) from 0.10.2 (kvplan never
picks it: TRTLLM comes first on sm100); CUTLASS_MXFP4_MXFP4 (128, 128) from 0.32.0 (not picked either).

Worked numbers (gpt-oss-20b, 24 layers x 32 experts, H = I = 2880, bf16 rest 3.35 GiB at TP1), v0.19.0 layout:
TRITON TP2: I 1440 -> 1472; w13 packed [1440 -> 1472] x [2944], w2 [736 -> 768] x [2880], scales [3072, 90] +
[3072, 46] swizzled and [2944, 90] + [2880, 46] kept, biases 5824 x 4 -> 7,383,936 B per expert, 6.96 GiB per rank
("Model loading took 7.01 GiB", v0.19.0 H100 TP2: -0.7 %); TP1 13.60 GiB (13.64 logged, -0.3 %). With upstream
triton's (64, 256) they were 7.20 / 13.94 GiB (+2.7 / +2.2 %). The 0.12.0 - 0.16.0 and 0.22.0+ bundles pad the values only to
the pack sizes (nothing for gpt-oss): the kept scales and fp32 biases remain, gpt-oss-120b TP1 64.30 GiB (64.38
logged on 0.14.1, vLLM #33155). The 0.10 - 0.11.1 profiles (no bundled triton_kernels) keep Marlin for a pip
install; EngineConfig.triton_kernels (a vllm/vllm-openai image tag sets it) takes Triton from 0.10.2 on
(``mxfp4_triton_kernels``).
"""

import functools
import math
import re
from typing import NamedTuple

from kvplan.engines import VLLM_DEFAULT_VERSION, vllm_has
from kvplan.layers import ATTENTION_KINDS
from kvplan.parallel import Layout, pp_partition, stage_distinct, stage_layers
from kvplan.spec import Linear, ModelSpec, spec_distinct_layers
from kvplan.units import cdiv

MXFP4_MARLIN_ALIGN = (128, 256)  # (intermediate per partition, hidden): Marlin, every release 0.10.1.1 - 0.34.0
MXFP4_TRTLLM_ALIGN = (256, 256)  # FlashInfer TRTLLM-gen (SM100_FI_MXFP4_*, TRTLLM_BACKENDS), 0.10.1.1 - 0.26.0
MXFP4_TRTLLM_ALIGN_027 = (128, 256)  # the same from 0.27.0 (VLLM_CHANGES "mxfp4_trtllm_inter_128"; 0.34.0 too)
MXFP4_TRITON_INTER_ALIGN = 64  # the remaining CUDA backends (Triton): round_up(I, 64), hidden unpadded
MXFP4_LAYOUT_BACKENDS = ("marlin", "trtllm", "triton", "triton_bw", "humming")  # whose layout mxfp4_align reads
# Humming (DeepSeek-V4 / V4.1 on Hopper from 0.32.0, VLLM_CHANGES "mxfp4_humming_hopper"), read 2026-12-03 in the
# vllm 0.32.0 / 0.33.0 / 0.34.0 wheels and the humming-kernels 0.1.17 / 0.1.19 wheels they pin (Requires-Dist
# humming-kernels[cu13]==0.1.17 / ==0.1.19; humming/transform.py and schema/mxfp4.py identical in both):
# mxfp4_round_up_hidden_size_and_intermediate_size gives HUMMING its last branch (I to 64, H unpadded); then
# quantization/utils/humming/moe.py convert_to_humming_moe_kernel_format -> _prepare_and_transform_sublayer calls
# humming.transform.prepare_and_transform_humming_tensors(pad_n_to_multiple=256, pad_k_to_multiple=128) per sublayer:
# w13 (N = 2I, K = H) and w2 (N = H, K = I) are padded to (N to 256, K to 128) (check_and_pad_tensors), the 4-bit
# values repacked at the same size (ops/weight.py repack_weight: K / pack x N x pack x 4 / 32 int32), the e8m0 group-32
# scales transposed at the same size, and the old parameters deleted (_replace_layer_parameters). With an FP8
# activation schema (DeepSeek-V4's kMxfp8Dynamic from 0.33.0, run as block FP8 on SM 9.0: oracle/mxfp4.py
# _humming_input_schema) LayerConfig.use_fused_e8m0_scale holds, so process_fused_e8m0_scale adds weight_scale_2, a
# float32 [num_experts] per sublayer (WeightScale2Type.TENSOR): 8 B an expert. 0.32.0 passes no activation key (BF16
# inputs, no weight_scale_2): kvplan's "0.32" profile (0.32.0, split from "0.33" at 0.33.0 for the V2 sampler pass)
# still prices the 0.33.x layout, 8 B an expert more (88,064 B a V4-Flash TP 8 rank) [not split yet].
HUMMING_PAD_N, HUMMING_PAD_K = 256, 128
MXFP4_HUMMING_ALIGN = (HUMMING_PAD_N // 2, HUMMING_PAD_N)  # (I: w13's N = 2I to 256, w2's K = I to 128; H: w2's N)
HUMMING_SCALE2_BYTES = 2 * 4  # weight_scale_2 of w13 and w2: one float32 an expert each
# HopperMXValueLayout.swizzle_data pre-padding of the packed (*, M, K) uint8 weight, by the triton_kernels vLLM
# bundles (vllm/third_party/triton_kernels/tensor_details/layout_details/hopper_value.py, every wheel 0.12.0 - 0.33.0
# read): the 0.17.0 - 0.21.0 bundle pads both matrix dims to multiples of 64 ("Pre-pad both matrix dims to multiples
# of 64"; VLLM_CHANGES "triton_value_pad64"); the 0.12.0 - 0.16.0 and 0.22.0 - 0.33.0 bundles (one identical file) pad
# only to the mma pack sizes, 16 x 32 (k_tile x warp_tile x threads x scott x contig), which the gpt-oss shapes
# already are ("triton_value_pack"). Upstream triton's newest source pads to (64, 256): no vLLM wheel bundles it.
TRITON_VALUE_ALIGN = (64, 64)
TRITON_PACK_ALIGN = (16, 32)


def triton_value_align(vllm_version: str) -> tuple[int, int]:
    """The (M, K) the bundled HopperMXValueLayout pads a packed MXFP4 weight to in this profile: (64, 64) in the
    0.17 - 0.21 profiles (0.17.0 - 0.21.0), the pack sizes (16, 32) before and after."""
    if vllm_has(vllm_version, "triton_value_pad64") and not vllm_has(vllm_version, "triton_value_pack"):
        return TRITON_VALUE_ALIGN
    return TRITON_PACK_ALIGN
# HopperMXScaleLayoutTransformation.swizzle_data: SWIZZLE_ALIGN_M = 2 x num_warps x 2 x 8, SWIZZLE_ALIGN_K = 2;
# vLLM passes num_warps = 8 outside batched (DeepEP / PPLX) MoE.
TRITON_SCALE_ALIGN = (2 * 8 * 2 * 8, 2)
# quantization/utils/mxfp4_utils.py _swizzle_mxfp4 on capability 9.0, 0.26.0 - 0.34.0 ("Patches #47303"): the scales'
# K (32-value groups) padded to a multiple of 4 first (VLLM_CHANGES "mxfp4_hopper_scale_k4")
TRITON_SCALE_K4 = 4
MX_BLOCK = 32
# SM 10.x (B200 / B300): _swizzle_mxfp4 (quantization/utils/mxfp4_utils.py) takes triton_kernels'
# make_default_matmul_mxfp4_w_layout / _w_scale_layout, which give BlackwellMXValueLayout / BlackwellMXScaleLayout on
# capability >= 10 (the bundled vllm/third_party/triton_kernels/tensor_details/layout.py and layout_details/
# blackwell_value.py / blackwell_scale.py, the same arithmetic in every wheel 0.12.0 - 0.34.0, read 2026-12-03):
# the value layout pads the packed (unit-stride) dim of each GEMM's transposed [E, K / 2, N] uint8 weight to a
# multiple of 128 bytes; the scale layout pads its [E, K / 32, N] e8m0 scales to (K / 32 to 8, N to 128). kvplan's
# layout backend "triton_bw" (I rounded to 64 as every Triton layout, mxfp4_round_up_hidden_size_and_intermediate_size).
BLACKWELL_VALUE_ALIGN = 128
BLACKWELL_SCALE_ALIGN = (8, 128)


def _up(x: int, a: int) -> int:
    return cdiv(x, a) * a


def mxfp4_moe_backend(arch: str, vllm_version: str, triton_kernels: bool | None = None) -> str:
    """The MXFP4 MoE backend vLLM picks (mxfp4.py get_mxfp4_backend): "trtllm" on datacenter Blackwell (FlashInfer
    is a vLLM dependency there), "triton" on Hopper from the 0.12 profile on (vLLM bundles triton_kernels from 0.12.0,
    VLLM_CHANGES "triton_kernels_bundled"; the v0.19.0 H100 log: "Using 'TRITON' Mxfp4 MoE backend"; 0.14.1 on an
    H100: 64.38 GiB logged, kvplan 64.30 with TRITON_PACK_ALIGN), "marlin" elsewhere (Ampere / Ada: triton_kernels
    needs sm90..sm10x) and in the 0.10 - 0.11.1 profiles (0.11.x: only a separately installed triton_kernels), whose
    H100 logs load gpt-oss-120b at the Marlin size (65.9651 GiB, vLLM #23278 on 0.10.1; #27508's 1.71 GiB of KV on
    0.11 needs it too). ``triton_kernels`` (``mxfp4_triton_kernels``): whether an unbundled release finds the
    package."""
    if arch == "sm100":
        return "trtllm"
    if arch == "sm90" and mxfp4_triton_kernels(vllm_version, triton_kernels)[0]:
        return "triton"
    return "marlin"


# --moe-backend names fused_moe/oracle/mxfp4.py ``map_mxfp4_backend`` accepts for MXFP4 experts, by the first release
# of each list (read 2026-12-03 in the 0.19.0 - 0.33.0 wheels; 0.20.1, unread, is taken as 0.20.0). A name outside
# the list raises ValueError "moe_backend='<name>' is not supported for MXFP4 MoE. Expected one of [...]" when the
# experts are built. 0.17.0 / 0.18.0 pick the gpt-oss backend in quantization/mxfp4.py ``get_mxfp4_backend``, which
# never reads KernelConfig.moe_backend: a typed name changes nothing there.
_FI = ("flashinfer_trtllm", "flashinfer_trtllm_afp8", "flashinfer_cutlass", "flashinfer_cutlass_afp8")
_VENDOR = ("xpu", "cpu", "emulation")
MXFP4_TYPED_NAMES: tuple[tuple[tuple[int, int, int], tuple[str, ...]], ...] = (
    ((0, 19, 0), _FI + ("triton", "marlin", "ck", "xpu")),
    ((0, 20, 0), ("deep_gemm",) + _FI + ("triton", "triton_unfused", "marlin", "aiter", "xpu", "emulation")),
    ((0, 21, 0), ("deep_gemm",) + _FI + ("triton", "triton_unfused", "humming", "marlin", "aiter", "aiter_mxfp4_fp8",
                                         "xpu", "emulation")),
    ((0, 22, 0), ("deep_gemm",) + _FI + ("triton", "triton_unfused", "humming", "marlin", "aiter", "aiter_mxfp4_fp8",
                                         "aiter_mxfp4_mxfp4") + _VENDOR),
    ((0, 29, 0), ("b12x", "deep_gemm") + _FI + ("triton", "triton_unfused", "humming", "marlin", "aiter",
                                                "aiter_mxfp4_fp8", "aiter_mxfp4_mxfp4") + _VENDOR),
    ((0, 30, 0), ("b12x", "deep_gemm") + _FI + ("triton", "triton_unfused", "humming", "marlin", "aiter",
                                                "aiter_triton_mxfp4_bf16", "aiter_mxfp4_fp8", "aiter_mxfp4_mxfp4")
     + _VENDOR),
    ((0, 32, 0), ("b12x", "deep_gemm") + _FI + ("flashinfer_moe_ep_cutedsl", "flashinfer_moe_ep_mega_deep_gemm",
                                                "triton", "triton_unfused", "humming", "marlin", "aiter",
                                                "aiter_triton_mxfp4_bf16", "aiter_mxfp4_fp8",
                                                "aiter_triton_mxfp4_mxfp4", "aiter_mxfp4_mxfp4") + _VENDOR),
)
# the typed names whose gpt-oss layout and held workspace kvplan reads, -> the layout backend (mxfp4_align)
GPT_OSS_TYPED_SIZED = {"marlin": ("marlin",), "triton": ("triton", "triton_bw"), "flashinfer_trtllm": ("trtllm",)}


def mxfp4_typed_names(vllm_version: str) -> tuple[str, ...] | None:
    """The --moe-backend names the MXFP4 oracle accepts in release line ``vllm_version`` (``MXFP4_TYPED_NAMES``), None
    where the gpt-oss path ignores --moe-backend (0.17 / 0.18 profiles; before 0.17 there is no such flag).
    Worked example: "0.19" -> (..., "triton", "marlin", "ck", "xpu"); "0.18" -> None."""
    return typed_names_by_release(MXFP4_TYPED_NAMES, vllm_version)


def typed_names_by_release(table: tuple[tuple[tuple[int, int, int], tuple[str, ...]], ...],
                           vllm_version: str) -> tuple[str, ...] | None:
    """The names of the last ``table`` row (first release, names) at or before release line ``vllm_version``'s
    first release, None before the first row (``MXFP4_TYPED_NAMES``, kvplan.plan ``WNA16_TYPED_NAMES``).
    Worked example: (((0, 25, 0), ("marlin",)),), "0.24" -> None; "0.33" -> ("marlin",)."""
    from kvplan.engines import vllm_release

    release = vllm_release(vllm_version)
    names = None
    for first, listed in table:
        if release >= first:
            names = listed
    return names


def gpt_oss_mxfp4_typed_backend(moe_backend: str, arch: str, vllm_version: str,
                                triton_kernels: bool | None = None) -> tuple[str, str | None]:
    """(layout backend kvplan prices gpt-oss's MXFP4 experts in, vLLM's refusal or None) under --moe-backend
    ``moe_backend`` in release line ``vllm_version`` on ``arch``.

    fused_moe/oracle/mxfp4.py (0.19.0 - 0.33.0; ``select_gpt_oss_mxfp4_moe_backend`` in 0.20.0,
    ``select_mxfp4_moe_backend`` otherwise; read 2026-12-03): a typed name goes through ``map_mxfp4_backend`` (a name
    outside ``mxfp4_typed_names`` raises there) and then ``_return_or_raise``, which keeps the named backend when one
    of its experts classes ``is_supported_config`` and raises "Mxfp4 MoE backend '...' does not support the
    deployment configuration" otherwise; it never falls back to the priority list. "marlin" -> MARLIN (MarlinExperts,
    any CUDA GPU), "triton" -> TRITON (OAITritonExperts: triton_kernels on capability 9.0 - 10.x,
    ``_triton_kernel_moe_supports_current_device``), "flashinfer_trtllm" -> FLASHINFER_TRTLLM_MXFP4_BF16 (capability
    family 100). Their layouts: ``mxfp4_align``; the Triton layout is HopperMXValueLayout on SM 9.0 ("triton") and
    BlackwellMXValueLayout on SM 10.x ("triton_bw", ``BLACKWELL_VALUE_ALIGN``); every other accepted name is priced
    in auto's layout and warned (kvplan.plan ``unsized_moe_backend_note``). "auto", and every name in the 0.17 / 0.18
    profiles (``get_mxfp4_backend`` ignores the flag), -> ``mxfp4_moe_backend``. Worked example: ("marlin", "sm90",
    "0.33") -> ("marlin", None); ("triton", "sm100", "0.33") -> ("triton_bw", None); ("flashinfer_trtllm", "sm90",
    "0.33") -> ("triton", "Mxfp4 MoE
    backend 'FLASHINFER_TRTLLM_MXFP4_BF16' ..."); ("cutlass", "sm90", "0.33") -> ("triton", "moe_backend='cutlass'
    is not supported for MXFP4 MoE. ..."); ("marlin", "sm90", "0.18") -> ("triton", None)."""
    auto = mxfp4_moe_backend(arch, vllm_version, triton_kernels)
    names = mxfp4_typed_names(vllm_version)
    if moe_backend == "auto" or names is None:
        return auto, None
    if moe_backend not in names:
        return auto, (f"moe_backend='{moe_backend}' is not supported for MXFP4 MoE. Expected one of "
                      f"{list(names)}.")
    if moe_backend == "marlin":
        return "marlin", None
    if moe_backend == "triton":
        if arch not in ("sm90", "sm100"):
            return auto, ("Mxfp4 MoE backend 'TRITON' does not support the deployment configuration (OAITritonExperts "
                          "runs triton_kernels on capability 9.0 - 10.x only)")
        return ("triton" if arch == "sm90" else "triton_bw"), None
    if moe_backend == "flashinfer_trtllm":
        if arch != "sm100":
            return auto, ("Mxfp4 MoE backend 'FLASHINFER_TRTLLM_MXFP4_BF16' does not support the deployment "
                          "configuration (the FlashInfer TRTLLM MXFP4 experts run on capability family 100 only)")
        return "trtllm", None
    return auto, None


def mxfp4_triton_kernels(vllm_version: str, triton_kernels: bool | None = None) -> tuple[bool, str]:
    """(whether mxfp4.py get_mxfp4_backend finds a usable triton_kernels on Hopper, why), for EngineConfig's
    ``triton_kernels`` (None: the release's pip default).

    get_mxfp4_backend (0.10.2 - 0.11.2; ``Mxfp4MoEMethod._should_use_marlin`` in 0.10.1.1) takes MARLIN on sm90 when
    ``not has_triton_kernels()`` (utils: the importable ``triton_kernels`` package) ``or not
    is_torch_equal_or_newer("2.8.0")``. From 0.12.0 the wheel bundles vllm/third_party/triton_kernels
    (VLLM_CHANGES "triton_kernels_bundled"): always found. Before, a ``pip install vllm`` has none (not a wheel
    dependency: vllm#27370 "users have to install triton_kernels manually", merged for 0.12; vLLM #23278 on
    0.10.1 and #27508 on 0.11, both pip installs on one H100, load gpt-oss-120b at the Marlin size), while the
    vllm/vllm-openai image is built with it ("a docker container with all the dependencies built in:
    vllm/vllm-openai:v0.10.2", vLLM's gpt-oss recipe; the v0.11.0 image's H100 pods load gpt-oss-120b at 64.38 GiB
    and gpt-oss-20b at 13.47, the Triton layout, tests/test_engine_logs_dec.py). The 0.10.0 - 0.10.1.1 wheels pin
    torch 2.7.1 (wheel METADATA; 0.10.2 and 0.11.x pin 2.8.0 / 2.9.0), so they run Marlin with triton_kernels too.
    Worked example: ("0.11", True) -> (True, ...); ("0.11", None) -> (False, ...); ("0.10", True) -> (False, ...)."""
    if vllm_has(vllm_version, "triton_kernels_bundled"):
        return True, "bundled in the wheel (vllm/third_party/triton_kernels, 0.12.0+)"
    if not vllm_has(vllm_version, "mxfp4_triton_torch28"):
        return False, "torch 2.7.1 (the 0.10.0 - 0.10.1.1 pin) is below the Triton path's torch 2.8"
    if triton_kernels:
        return True, "triton_kernels installed (the vllm/vllm-openai image ships it; --triton-kernels)"
    if triton_kernels is None:
        return False, "no triton_kernels: a pip install of this release has none (the vllm/vllm-openai image does)"
    return False, "no triton_kernels (--no-triton-kernels)"


def vllm_mxfp4_functions(vllm_version: str, deepseek_v4: bool = False) -> tuple[str, str, str]:
    """(the function that picks the MXFP4 MoE backend, the method that makes the expert weights, where the expert
    shapes are padded) in vLLM's tree for a release line, as the Budget's MXFP4 row names them.

    Read 2026-12 in the wheels 0.10.1.1, 0.11.0 - 0.11.2, 0.15.0 - 0.22.0, 0.26.0, 0.28.0 - 0.30.0 and 0.33.0
    (model_executor/layers/quantization/mxfp4.py, fused_moe/oracle/mxfp4.py): through 0.10.1.1
    ``Mxfp4MoEMethod._should_use_marlin``; 0.10.2 - 0.18.x quantization/mxfp4.py ``get_mxfp4_backend``, the padding
    inside ``Mxfp4MoEMethod.create_weights``; from 0.19.0 fused_moe/oracle/mxfp4.py ``select_mxfp4_moe_backend`` and
    ``mxfp4_round_up_hidden_size_and_intermediate_size``; from 0.20.0 gpt-oss has its own ``GptOssMxfp4MoEMethod``
    (``GptOssMxfp4Config``), whose 0.20.0 selector is ``select_gpt_oss_mxfp4_moe_backend`` (0.21.0 back to
    ``select_mxfp4_moe_backend``), and DeepSeek-V4's ``Mxfp4MoEMethod`` calls ``select_deepseek_v4_mxfp4_moe_backend``
    from 0.21.0 (0.20.x: ``select_mxfp4_moe_backend``). Worked example: ("0.33", False) -> ("fused_moe/oracle/mxfp4.py
    select_mxfp4_moe_backend", "quantization/mxfp4.py GptOssMxfp4MoEMethod.create_weights", "fused_moe/oracle/mxfp4.py
    mxfp4_round_up_hidden_size_and_intermediate_size")."""
    from kvplan.engines import vllm_release

    release = vllm_release(vllm_version)
    oracle, quant = "fused_moe/oracle/mxfp4.py", "quantization/mxfp4.py"
    if release < (0, 10, 2):
        make = f"{quant} Mxfp4MoEMethod.create_weights"
        return f"{quant} Mxfp4MoEMethod._should_use_marlin", make, make
    if release < (0, 19, 0):
        make = f"{quant} Mxfp4MoEMethod.create_weights"
        return f"{quant} get_mxfp4_backend", make, make
    pad = f"{oracle} mxfp4_round_up_hidden_size_and_intermediate_size"
    if deepseek_v4:
        pick = "select_deepseek_v4_mxfp4_moe_backend" if release >= (0, 21, 0) else "select_mxfp4_moe_backend"
        return f"{oracle} {pick}", f"{quant} Mxfp4MoEMethod.create_weights", pad
    pick = "select_gpt_oss_mxfp4_moe_backend" if (0, 20, 0) <= release < (0, 21, 0) else "select_mxfp4_moe_backend"
    method = "GptOssMxfp4MoEMethod" if release >= (0, 20, 0) else "Mxfp4MoEMethod"
    return f"{oracle} {pick}", f"{quant} {method}.create_weights", pad


def mxfp4_padded_sizes(backend: str, hidden: int, inter: int, vllm_version: str = VLLM_DEFAULT_VERSION
                       ) -> tuple[int, int]:
    """(hidden size, intermediate size per partition) as vLLM's MXFP4 MoE ``backend`` ("checkpoint", "marlin",
    "triton", "trtllm") allocates an expert's w13 / w2 in release line ``vllm_version``: each rounded up to the
    backend's alignment (module docstring; Marlin (128, 256), Triton I to 64, TRTLLM (256, 256) through 0.26.0 and
    (128, 256) from 0.27.0). The one rule gpt-oss, DeepSeek-V4 and V4.1 share. Worked numbers: ("trtllm", 7168, 384)
    -> (7168, 512) at "0.26", (7168, 384) at "0.27"; ("trtllm", 2880, 2880) -> (3072, 3072) at "0.26", (3072, 2944)
    at "0.33"."""
    i_align, h_align = mxfp4_align(backend, vllm_version)
    return _up(hidden, h_align), _up(inter, i_align)


def mxfp4_align(backend: str, vllm_version: str = VLLM_DEFAULT_VERSION) -> tuple[int, int]:
    """(intermediate per partition, hidden) multiples ``backend`` rounds an MXFP4 expert up to in release line
    ``vllm_version`` (1: unpadded). "humming": (128, 256), the hidden size of w2 (w13's K, the hidden size too, only
    to 128: ``mxfp4_expert_bytes``). Worked numbers: ("trtllm", "0.26") -> (256, 256), ("trtllm", "0.33") -> (128,
    256), ("marlin", any) -> (128, 256), ("triton", any) -> (64, 1), ("humming", any) -> (128, 256)."""
    if backend == "checkpoint":
        return 1, 1
    if backend == "marlin":
        return MXFP4_MARLIN_ALIGN
    if backend == "trtllm":
        return MXFP4_TRTLLM_ALIGN_027 if vllm_has(vllm_version, "mxfp4_trtllm_inter_128") else MXFP4_TRTLLM_ALIGN
    if backend in ("triton", "triton_bw"):
        return MXFP4_TRITON_INTER_ALIGN, 1
    if backend == "humming":
        return MXFP4_HUMMING_ALIGN
    raise ValueError(backend)


def mxfp4_expert_bytes(hidden: int, inter: int, bias: bool, backend: str = "checkpoint",
                       value_align: tuple[int, int] = TRITON_VALUE_ALIGN,
                       vllm_version: str = VLLM_DEFAULT_VERSION) -> int:
    """Bytes of one gpt-oss expert on a rank (w13 [2I, H] + w2 [H, I] in MXFP4, biases [2I] + [H]) as ``backend``
    holds it in release line ``vllm_version`` (shapes: ``mxfp4_padded_sizes``); "checkpoint" is the unpadded layout
    kvplan.weights prices (bf16 biases).
    Worked number: H = 2880, I = 1440 (-> 1472), "triton" at the v0.19.0 (64, 64): 4,333,568 + 2,211,840 (values)
    + 276,480 + 141,312 (swizzled scales) + 264,960 + 132,480 (kept scales) + 23,296 (fp32 biases) = 7,383,936.
    "triton_bw" (SM 10.x) at 0.33, the same shapes: 2,944 x 1,536 + 2,880 x 768 (values, the packed 1,440 / 736 to
    128) + 96 x 2,944 + 48 x 2,944 (scales, K / 32 90 / 46 to 8, N 2,944 / 2,880 to 128) + 0 kept (freed from 0.25.0)
    + 23,296 = 4,521,984 + 2,211,840 + 282,624 + 141,312 + 23,296 = 7,181,056.
    "humming" (module comment at HUMMING_PAD_N): w13 [round_up(2I, 256), round_up(H, 128)], w2 [round_up(H, 256),
    round_up(I, 128)], each 0.5 B a value + 1 B a 32-value scale, + HUMMING_SCALE2_BYTES; worked number, DeepSeek-V4.1-
    Flash at TP 8 (H 5,120, I 288 -> 384): 768 x 5,120 x 17 / 32 + 5,120 x 384 x 17 / 32 + 8 = 3,133,448."""
    h, i = mxfp4_padded_sizes(backend, hidden, inter, vllm_version)
    bias_b = 4 if backend in ("trtllm", "triton", "triton_bw") else 2
    scales = 2 * i * cdiv(h, MX_BLOCK) + h * cdiv(i, MX_BLOCK)  # the checkpoint's e8m0 scales of w13 and w2
    # the Triton layouts: layer.w13/w2_weight_scale stay registered beside the swizzled copy through 0.24.0 and are
    # deleted from 0.25.0
    kept = 0 if vllm_has(vllm_version, "mxfp4_triton_scales_freed") else scales
    if backend == "triton_bw":  # SM 10.x Triton (BLACKWELL_VALUE_ALIGN / BLACKWELL_SCALE_ALIGN)
        values = 2 * i * _up(h // 2, BLACKWELL_VALUE_ALIGN) + h * _up(i // 2, BLACKWELL_VALUE_ALIGN)
        sk, sn = BLACKWELL_SCALE_ALIGN
        swizzled = _up(cdiv(h, MX_BLOCK), sk) * _up(2 * i, sn) + _up(cdiv(i, MX_BLOCK), sk) * _up(h, sn)
        return values + swizzled + kept + ((2 * i + h) * bias_b if bias else 0)
    if backend == "humming":
        h13 = _up(hidden, HUMMING_PAD_K)  # w13's K; w2's N (h) goes to HUMMING_PAD_N
        values = 2 * i * h13 + h * i  # w13 [2I, H13] + w2 [H, I], every padded dim a multiple of MX_BLOCK
        return values // 2 + values // MX_BLOCK + HUMMING_SCALE2_BYTES + ((2 * i + h) * bias_b if bias else 0)
    if backend == "triton":
        vm, vk = value_align
        sm, sk = TRITON_SCALE_ALIGN
        if vllm_has(vllm_version, "mxfp4_hopper_scale_k4"):  # K to 4 before HopperMXScaleLayout's 2 (0.26.0+)
            sk = TRITON_SCALE_K4
        values = _up(h // 2, vm) * _up(2 * i, vk) + _up(i // 2, vm) * _up(h, vk)  # w13, w2 packed, padded
        swizzled = _up(2 * i, sm) * _up(cdiv(h, MX_BLOCK), sk) + _up(h, sm) * _up(cdiv(i, MX_BLOCK), sk)
        return values + swizzled + kept + ((2 * i + h) * bias_b if bias else 0)
    return 2 * i * h // 2 + h * i // 2 + scales + ((2 * i + h) * bias_b if bias else 0)


def gpt_oss_expert_linears(experts) -> dict | None:
    """{"gate_up_proj": ..., "down_proj": ...} of a layer's routed experts (``Experts``) in gpt-oss's fused layout (the
    one vLLM's gpt-oss MXFP4 path lays out: ``vllm_mxfp4_extra_bytes``), by the last part of each linear's name; None
    for any other experts (gate / up / down apart, DeepSeek-V4's) or none."""
    if experts is None:
        return None
    names = {c.name.rsplit(".", 1)[-1]: c for c in experts.linears}
    return names if set(names) == {"gate_up_proj", "down_proj"} else None


def vllm_mxfp4_extra_bytes(spec: ModelSpec, layout: Layout, stage: int, weight_format: str | None,
                           arch: str, vllm_version: str, triton_kernels: bool | None = None,
                           moe_backend: str = "auto") -> int:
    """Bytes vLLM's MXFP4 MoE layout adds on one rank of stage ``stage`` over kvplan's checkpoint bytes (0 when the
    experts are not gpt-oss MXFP4), in the layout of ``gpt_oss_mxfp4_typed_backend(moe_backend, ...)`` (auto's pick,
    or a typed --moe-backend vLLM honours). Worked number: gpt-oss-120b TP1, Marlin: +5.14 GiB (60.77 -> 65.91 GiB;
    "Model loading took 65.9651 GiB", vLLM #23278, 0.10.1 H100)."""
    from kvplan.weights import resolve_format

    fmt, use_overrides = resolve_format(spec, weight_format)
    if fmt != "mxfp4":
        return dsv4_mxfp4_extra_bytes(spec, layout, stage, arch, vllm_version, moe_backend) if use_overrides else 0
    backend = gpt_oss_mxfp4_typed_backend(moe_backend, arch, vllm_version, triton_kernels)[0]
    ranks = layout.tp * layout.dp
    extra = 0
    for layer, n in stage_distinct(spec, layout.pp, stage):
        ex = layer.experts
        if ex is None:
            continue
        names = gpt_oss_expert_linears(ex)
        if names is None:
            return 0  # not the fused gpt-oss layout
        hidden, inter = names["gate_up_proj"].in_features, names["down_proj"].in_features
        count, part = (cdiv(ex.num_experts, ranks), inter) if layout.ep else (ex.num_experts, cdiv(inter, ranks))
        bias = names["gate_up_proj"].bias
        align = triton_value_align(vllm_version)
        extra += n * count * (mxfp4_expert_bytes(hidden, part, bias, backend, align, vllm_version)
                              - mxfp4_expert_bytes(hidden, part, bias))
    return extra


# ----------------------------------------------------------------------------- DeepSeek-V4's MXFP4 routed experts
#
# DeepSeek-V4 checkpoints (config.json ``expert_dtype`` "fp4", kvplan.quantization.with_expert_dtype) ship the routed
# experts as MXFP4 beside fp8 block linears. vLLM (0.20.0+: models/deepseek_v4.py ``DeepseekV4FP8Config``, 0.30.0+:
# models/deepseek_v4/quant_config.py) gives each FusedMoE ``Mxfp4MoEMethod``: create_weights registers, per expert
# on a rank, w13 u8 [2I, H/2] + e8m0 u8 [2I, H/32] and w2 u8 [H, I/2] + [H, I/32] (no bias), I and H first rounded
# up by ``mxfp4_round_up_hidden_size_and_intermediate_size`` for the backend ``select_mxfp4_moe_backend`` takes
# (fused_moe/oracle/mxfp4.py ``_get_priority_backends``, the same list in the 0.20.0, 0.25.0, 0.30.0 and 0.31.0
# wheels: FLASHINFER_TRTLLM_MXFP4_MXFP8, DEEPGEMM_MXFP4, MARLIN, BATCHED_MARLIN; not gpt-oss's list, no Triton; the
# 0.32.0 - 0.34.0 wheels append HUMMING and return the list through prioritize_humming):
#   sm100 (B200 / B300 / GB200 / GB300): FLASHINFER_TRTLLM_MXFP4_MXFP8 (first in the 0.20.0 - 0.34.0 lists), H
#     round_up(.., 256), I round_up(.., 256) through 0.26.0 and round_up(.., 128) from 0.27.0 (``mxfp4_padded_sizes``);
#     the weights and scales are permuted / interleaved in place (same shapes,
#     ``convert_weight_to_mxfp4_moe_kernel_format``);
#   sm90 (Hopper) from 0.32.0 (VLLM_CHANGES "mxfp4_humming_hopper"): HUMMING, which prioritize_humming
#     (quantization/utils/humming/priority.py, 0.32.0 - 0.34.0) moves ahead of MARLIN on capability 9.0 (humming-kernels
#     is a hard dependency of those wheels, so has_humming() holds); its layout: the Humming comment at HUMMING_PAD_N
#     (I to 128, H to 128 in w13 and to 256 in w2, + 8 B an expert of fp32 weight_scale_2);
#   sm90 through 0.31.0 (no HUMMING in the 0.30.0 / 0.31.0 lists) and other CUDA GPUs: MARLIN (TRTLLM needs sm100, DeepGEMM MXFP4
#     sm100 / sm120: deep_gemm_moe.py ``_supports_current_device``), I round_up(.., 128), H round_up(.., 256),
#     repacked in place (same bytes), as the gpt-oss Marlin row of the table above. (DeepGEMM MXFP4, the sm120 choice,
#     upcasts the e8m0 scales to fp32: not modelled, kvplan's "other" arch takes Marlin.) gpt-oss's own list
#     (_get_priority_backends_for_gpt_oss, 0.32.0 - 0.34.0) goes through prioritize_humming too, but TRITON comes before
#     both there, so gpt-oss on Hopper keeps Triton (``mxfp4_moe_backend``).
# DeepSeek-V4-Flash (H 4096, I 2048) and -Pro (H 7168, I 3072) need no padding at TP1 - TP8, with or without EP, except
# -Pro's I / 8 = 384 on sm100 without EP in the 0.20 - 0.26 profiles (-> 512; from 0.27 384 is kept); Humming holds
# 8 B an expert more (its fp32 weight_scale_2). ``--moe-backend deep_gemm_mega_moe`` (DeepseekV4MegaMoEExperts:
# transform_weights_for_mega_moe, the loader tensors dropped) is priced at the checkpoint's bytes (its symmetric
# buffers are not weights and not modelled).


def dsv4_mxfp4_moe_backend(arch: str, vllm_version: str = VLLM_DEFAULT_VERSION) -> str:
    """The MXFP4 MoE backend vLLM's DeepSeek-V4 / V4.1 experts take with --moe-backend auto in release line
    ``vllm_version`` (comment above): "trtllm" on sm100, "humming" on sm90 from the 0.32 profile (0.32.0+,
    VLLM_CHANGES "mxfp4_humming_hopper"), "marlin" elsewhere. Worked example: ("sm90", "0.33") -> "humming",
    ("sm90", "0.30") -> "marlin", ("sm100", any) -> "trtllm"."""
    if arch == "sm100":
        return "trtllm"
    return "humming" if arch == "sm90" and vllm_has(vllm_version, "mxfp4_humming_hopper") else "marlin"


def dsv4_mxfp4_typed_moe_backend(moe_backend: str, arch: str, vllm_version: str = VLLM_DEFAULT_VERSION) -> str:
    """The MXFP4 MoE backend DeepSeek-V4 / V4.1's routed experts take under --moe-backend ``moe_backend`` in release
    line ``vllm_version`` on ``arch``: "auto" -> ``dsv4_mxfp4_moe_backend(arch, vllm_version)``; any typed name is
    kept as typed (fused_moe/oracle/mxfp4.py: the DeepSeek-V4 selector, ``select_mxfp4_moe_backend`` in the 0.20.0
    wheel, ``select_deepseek_v4_mxfp4_moe_backend`` in 0.30.0 / 0.33.0, tries a named --moe-backend before its
    priority list; read 2026-12-03). The one rule kvplan.plan ``mxfp4_override_moe_backend`` and kvplan.vllm_dsv41
    ``rank_load_bytes`` apply. Worked example: ("auto", "sm90", "0.33") -> "humming", ("auto",
    "sm100", "0.30") -> "trtllm", ("marlin", "sm90", "0.33") -> "marlin"."""
    return dsv4_mxfp4_moe_backend(arch, vllm_version) if moe_backend == "auto" else moe_backend


def dsv4_mxfp4_layout_backend(moe_backend: str, arch: str, vllm_version: str = VLLM_DEFAULT_VERSION) -> str:
    """The backend whose padding kvplan prices DeepSeek-V4 / V4.1's MXFP4 experts by: ``dsv4_mxfp4_typed_moe_backend``
    where kvplan reads that backend's layout (``mxfp4_align``: marlin, trtllm, triton, humming), else auto's (a typed
    backend whose layout is not read; the plan warns, kvplan.plan ``unsized_moe_backend_note``). Worked example:
    ("marlin", "sm100", "0.26") -> "marlin" (I to 128, not TRTLLM's 256 there); ("deep_gemm_mega_moe", "sm100",
    "0.33") -> "trtllm"."""
    typed = dsv4_mxfp4_typed_moe_backend(moe_backend, arch, vllm_version)
    return typed if typed in MXFP4_LAYOUT_BACKENDS else dsv4_mxfp4_moe_backend(arch, vllm_version)



def dsv4_mxfp4_extra_bytes(spec: ModelSpec, layout: Layout, stage: int, arch: str,
                           vllm_version: str = VLLM_DEFAULT_VERSION, moe_backend: str = "auto") -> int:
    """Bytes vLLM's MXFP4 MoE padding adds on one rank of stage ``stage`` over kvplan's checkpoint bytes for MXFP4
    routed experts given by an override (DeepSeek-V4 ``expert_dtype`` "fp4") in release line ``vllm_version``; 0 for
    any other spec (``mxfp4_override_padding_bytes``). Worked numbers: DeepSeek-V4-Flash, any layout: 0;
    DeepSeek-V4-Pro (H 7168) TP8 without EP on a B200 at 0.20 - 0.26: I 3072 / 8 = 384 -> 512, per expert 5,849,088 -
    4,386,816 = 1,462,272 B, x 384 experts x 61 layers = 34,252,259,328 B (31.90 GiB) a rank; at 0.27+ (384 % 128 =
    0), with EP (48 whole experts a rank, I 3072) or on Hopper through 0.30 (Marlin: 384 % 128 = 0): 0; on Hopper at
    0.33 (Humming, nothing padded: its weight_scale_2 only): 8 B x 384 x 61 = 187,392 B."""
    if spec.model_type != "deepseek_v4":
        return 0
    parts = pp_partition(len(spec.layers), layout.pp)
    lo = sum(parts[:stage])
    return mxfp4_override_padding_bytes(spec, layout.tp * layout.dp, layout.ep,
                                        dsv4_mxfp4_layout_backend(moe_backend, arch, vllm_version), vllm_version, lo,
                                        lo + parts[stage])


def mxfp4_override_padding_bytes(spec: ModelSpec, ranks: int, ep: bool, backend: str, vllm_version: str,
                                 lo: int = 0, hi: int | None = None) -> int:
    """Bytes ``backend``'s padding (``mxfp4_padded_sizes`` in release line ``vllm_version``) adds on one rank over
    kvplan's checkpoint bytes for the override-MXFP4 routed experts of ``spec.layers[lo:hi]``
    (``mxfp4_override_experts``; no biases): per expert ``mxfp4_expert_bytes(H, I, False, backend)`` less the
    unpadded bytes, 1.5 H I + 3 H I / 32 each. Worked number, DeepSeek-V4.1-Flash (H 5,120) at 8 ranks without EP,
    "trtllm" at "0.33": I 288 -> 384, 1.59375 x 5,120 x 96 = 783,360 B an expert x 384 x 40 = 12,032,409,600 B."""
    return sum(n * count * (mxfp4_expert_bytes(hidden, part, False, backend, vllm_version=vllm_version)
                            - mxfp4_expert_bytes(hidden, part, False))
               for n, count, hidden, part in mxfp4_override_experts(spec, ranks, ep, lo, hi))


def mxfp4_override_experts(spec: ModelSpec, ranks: int, ep: bool, lo: int = 0, hi: int | None = None):
    """(layers, experts a rank, H, I per partition) of each distinct layer in ``spec.layers[lo:hi]`` whose routed
    gate / up / down experts an override stores MXFP4 (DeepSeek-V4 / V4.1 ``expert_dtype`` "fp4"), over ``ranks``
    (TP x DP) GPUs: whole experts cdiv(E, ranks) under EP, else all E with I split. Worked number, DeepSeek-V4.1-Flash
    at 8 ranks without EP: (40, 384, 5,120, 288)."""
    from kvplan.weights import component_format, layer_groups

    for layer, n, mine in layer_groups(spec, lo, hi):
        ex = layer.experts
        if ex is None:
            continue
        names = {c.name: c for c in ex.linears}
        if set(names) != {"gate_proj", "up_proj", "down_proj"} or any(
                component_format("experts", c, spec.quantization, mine) != (("mxfp4", 0),) for c in ex.linears):
            continue
        hidden, inter = names["gate_proj"].in_features, names["down_proj"].in_features
        count, part = (cdiv(ex.num_experts, ranks), inter) if ep else (ex.num_experts, cdiv(inter, ranks))
        yield n, count, hidden, part


# ----------------------------------------------------------------------------- FP8 block shapes vLLM refuses

_BLOCK = re.compile(r"^fp8-block(?:-(\d+)x(\d+))?$")


@functools.lru_cache(maxsize=256)  # a handful of format strings, asked for every linear of every layer
def _block(fmt: str) -> tuple[int, int] | None:
    m = _BLOCK.match(fmt)
    if m is None:
        return None
    return (int(m[1]), int(m[2])) if m[1] else (128, 128)


def fp8_block_refusal(spec: ModelSpec, layout: Layout, weight_format: str | None,
                      skip_qkv: bool = False) -> str | None:
    """The ValueError vLLM raises while creating the weights of a block-FP8 model whose shards do not fill whole
    blocks, or None. It pads nothing: vllm/model_executor/layers/quantization/fp8.py ``validate_fp8_block_shape``
    (linear layers, TP > 1: a column shard's output rows % block_n, a row shard's input columns % block_k) and
    ``Fp8MoEMethod.create_weights`` (experts without EP: intermediate per partition % block_n, and % block_k at
    TP > 1). Worked example: Qwen3-30B-A3B-FP8 at TP4: 768 / 4 = 192 -> "The output_size of gate's and up's
    weight = 192 is not divisible by weight quantization block_n = 128." (vLLM #25292; #17569 for
    Qwen3-235B-A22B-FP8 at TP8). ``skip_qkv``: the attention's q / k / v projections are not checked (SGLang's
    MiMo-V2-Flash builds its QKVParallelLinear with skip_block_quant_check=True: kvplan.sglang.fp8_qkv_check_skipped)."""
    from kvplan.parallel import KV_PROJ, ROW_EXPERT, _shard
    from kvplan.spec import Linear
    from kvplan.weights import component_format, layer_groups, resolve_format, spec_formats

    fmt, use_overrides = resolve_format(spec, weight_format)
    if layout.tp * layout.dp == 1:
        return None
    if not any(_block(f) for f in spec_formats(spec, weight_format)):  # no block-FP8 component: nothing to check
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
                if skip_qkv and category == "attention" and c.name in ("q_proj", "k_proj", "v_proj", "qkv_proj"):
                    continue
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


# ----------------------------------------------------------------------------- int4 / int8 (GPTQ, AWQ, wNa16), NVFP4
#
# What vLLM keeps of a 4-bit integer or NVFP4 matrix after ``process_weights_after_loading`` (read 2026-12 in
# vllm-project/vllm: quantization/utils/marlin_utils.py @007d5005 and its padded successor (vllm#45295),
# quantization/gptq_marlin.py, gptq.py, awq_marlin.py, compressed_tensors/schemes/compressed_tensors_wNa16.py,
# compressed_tensors_moe/compressed_tensors_moe_wna16_marlin.py, kernels/linear/mixed_precision/{marlin,machete}.py,
# kernels/linear/nvfp4/cutlass.py, quantization/utils/nvfp4_utils.py). One [n = out, k = in] shard of a rank, G the
# group size, b the bits; "per layer" tensors are registered once per *fused* vLLM layer (q/k/v -> qkv_proj,
# gate/up -> gate_up_proj), where the checkpoint (and ``kvplan.weights``) has one per projection:
#
# =======================  =========================================================================================
# kernel                   kept after loading
# =======================  =========================================================================================
# Marlin (GPTQ sym 4/8     qweight repacked (``gptq_marlin_repack``: [k/16, n*16*b/32] int32, the same n*k*b/8 bytes),
# bit, wNa16, AWQ; CUDA    scales permuted (same [k/G, n] 16-bit; [full_k/G, n] on every rank for act order on a row
# sm75+; Hopper only when  shard: ``marlin_repeat_scales_on_all_ranks``), AWQ / asymmetric wNa16 zero points repacked
# Machete cannot)          (same bytes). GPTQ's qzeros and g_idx become empty tensors (``marlin_make_empty_g_idx``);
#                          act order keeps g_idx sorted and adds g_idx_sort_indices int32 [k] (per layer). Shapes need
#                          n % 64, k % 128, k % G, else the layer is not Marlin's; vllm#45295 (merged 2026-06-12: the
#                          0.24+ profiles, 0.24.0 on) zero-pads instead to ``marlin_padded_nk`` (not for act order, not a
#                          group straddling two ranks)
# Machete (Hopper: first   ``machete_prepack_B`` (same bytes), scales made contiguous; qzeros and g_idx stay registered
# in vLLM's CUDA kernel    (its process_weights_after_loading never touches them; the log of vllm#23066, v0.10.1 on an
# list for GPTQ / wNa16;   H100: "Using MacheteLinearKernel for GPTQMarlinLinearMethod"); act order adds an argsort perm
# AWQ from vllm#36505)     int32 [k]; asymmetric wNa16 and AWQ zero points become -scale x zp, [k/G, n] 16-bit. Needs
#                          k % 64, n % 128, G in (-1, 64, 128) and no act order on a row shard
# exllama (GPTQ not       gptq.py ``GPTQLinearMethod`` and kernels/linear/mixed_precision/exllama.py: qweight shuffled in
# Marlin-convertible:      place, scales kept, zero points kept (qzeros; a zeros tensor [k/G, n/pack] int32 is created
# asymmetric, 2/3 bit,     for symmetric wNa16), g_idx emptied without act order (argsorted, same size, with it). The
# ROCm; the mixed-         mixed-precision kernel takes fp16 activations only: with none of Machete / Marlin / Exllama
# precision last resort)   able, vLLM refuses the layer (``marlin_refusal``)
# CUTLASS / FlashInfer     NVFP4 W4A4 on Blackwell (sm100, and sm120 whose FlashInfer CUTLASS FP4 GEMM vLLM picks too):
# (NVFP4)                  weight padded to n, k multiples of 32 (``pad_nvfp4_weight_for_cutlass``, vllm#31099), block
#                          scales replaced by their swizzled copy padded to [round_up(n, 128), round_up(k/16, 4)]
#                          (``swizzle_blockscale``; kept *beside* the checkpoint's before vllm#23379: the 0.10 profile);
#                          MoE: the 3-D swizzle per expert on w13 (2I rows) and w2, a non-gated MoE's weights padded
#                          to the swizzled rows (``intermediate_size_pad``)
# Marlin FP4 (NVFP4        ``prepare_fp4_layer_for_marlin``: weight and fp8 scales repacked / permuted, same bytes; the
# elsewhere; W4A16 NVFP4)  0.24+ profiles pad like the integer Marlin (group 16)
# =======================  =========================================================================================
#
# AWQ from vllm#36505 ("Enable AWQMarlinConfig on ROCm to use choose_mp_linear_kernel", opened 2026-03-09; first in the
# 0.19.0 wheel): AWQ's dense layers go through the same kernel list, so a Hopper takes Machete (the 0.19.1 H200 log of a benchmark repo's
# decisions file, search index 63273539747: "Using MacheteLinearKernel for AWQMarlinLinearMethod"; 0.19.0 on a
# non-Hopper GPU, search index 53268049166: "Using MarlinLinearKernel for AWQMarlinLinearMethod"; the 0.17.0 log of
# Qwen3-8B-AWQ, 54810965301, prints no such line): AWQ's qweight is repacked along k (same bytes), then Machete's
# ``transform_w_zp`` replaces the int32 zero points [k/G, n/8] by -scale x zp in the activation dtype, [k/G, n]
# 16-bit: 4 x the checkpoint's qzeros, + 1.5 x k x n / G bytes a shard. AWQ MoE layers stay on Marlin MoE.
#
# Not modeled (each < 0.1 MiB a rank): Marlin workspaces (SMs x 4 B a layer), NVFP4 global scales merged per fused layer;
# MoeWNA16 fallbacks; AWQ on ROCm after vllm#36505 (Conch / Triton / RDNA kernels: kept as the checkpoint's bytes).

# vllm#45295 "Consolidate Marlin thread-tile padding" (merged 2026-06-12): marlin_padded_nk is first in the 0.24.0
# wheel, not in 0.23.0 (VLLM_CHANGES "marlin_tile_padding"): the 0.24+ profiles pad, earlier ones refuse these shards
MARLIN_MIN_N, MARLIN_MIN_K = 64, 128  # GPTQ_MARLIN_MIN_THREAD_N / _K (marlin_utils.py)
MARLIN_GROUPS = (-1, 32, 64, 128)  # MARLIN_SUPPORTED_GROUP_SIZES
MACHETE_IN, MACHETE_OUT = 64, 128  # MACHETE_PREPACKED_BLOCK_SHAPE (machete_utils.py)
MACHETE_GROUPS = (-1, 64, 128)  # query_machete_supported_group_sizes, 16-bit activations
# vllm#36505: awq_marlin.py calls choose_mp_linear_kernel from the 0.19.0 wheel on (not 0.18.1; VLLM_CHANGES
# "awq_mp_kernel"): the 0.19+ profiles take Machete on Hopper, earlier ones Marlin
NVFP4_SWIZZLE_ROWS, NVFP4_SWIZZLE_COLS = 128, 4  # swizzle_blockscale (nvfp4_utils.py)
NVFP4_CUTLASS_ALIGN = 32  # pad_nvfp4_weight_for_cutlass alignment (elements), rows and columns
NVFP4_BLOCK = 16
# vllm#23379 "Remove duplicated NVFP4 blockscales" (merged 2025-08-23; in the 0.10.2 wheel, VLLM_CHANGES
# "nvfp4_single_scales"): before it the swizzled scales went into a new parameter (weight_scale_swizzled,
# w13/w2_blockscale_swizzled) beside the checkpoint's; the 0.10 profile (0.10.0 - 0.10.1.1) keeps both
# vllm#31099 "Always support TP > 4 for FP4 Gemm" pads NVFP4 weights to 32 (pad_nvfp4_weight_for_cutlass, first in the
# 0.16.0 wheel: "nvfp4_weight_pad"); earlier releases refused such shards (kept unpadded here, the refusal not modeled)

_GPTQ_FMT = re.compile(r"^gptq-int(?P<b>\d)-(?:g(?P<g>\d+)|ch)(?P<act>-actorder)?(?P<asym>-asym)?$")
_AWQ_FMT = re.compile(r"^int4-g(?P<g>\d+)$")
_WNA16_FMT = re.compile(r"^w(?P<b>[48])a16-(?:g(?P<g>\d+)|ch)(?P<asym>-asym)?(?P<act>-actorder)?$")
_NVFP4_FMT = re.compile(r"^nvfp4(?P<wo>-wo)?$")
# checkpoint linears vLLM fuses into one layer (QKVParallelLinear, MergedColumnParallelLinear; Qwen3.5 / 3.6 GDN's
# in_proj_ba): its tile rules, padding and per-layer tensors apply to the fused output width
# in_proj_qkvz: vLLM 0.17.0 - 0.33.0 build it as one MergedColumnParallelLinear (output_sizes [key_dim, key_dim,
# value_dim, value_dim], qwen3_5.py ``create_qkvz_proj``, from 0.19 layers/mamba/gdn_linear_attn.py), loading the
# checkpoint's in_proj_qkv / in_proj_z into shards (0, 1, 2) and 3; only with LoRA (0.19+) are the two kept apart
_FUSED = {"q_proj": "qkv_proj", "k_proj": "qkv_proj", "v_proj": "qkv_proj", "gate_proj": "gate_up_proj",
          "up_proj": "gate_up_proj", "w1": "gate_up_proj", "w3": "gate_up_proj", "in_proj_qkv": "in_proj_qkvz",
          "in_proj_z": "in_proj_qkvz", "in_proj_b": "in_proj_ba", "in_proj_a": "in_proj_ba"}


def vllm_fused_name(name: str) -> str:
    """The name of the vLLM layer a checkpoint linear is loaded into (``_FUSED``; the prefix kept, so that
    "shared_experts.gate_proj" fuses with its own up_proj): "mlp.up_proj" -> "mlp.gate_up_proj", "o_proj" -> itself."""
    head, _, last = name.rpartition(".")
    return f"{head}.{_FUSED.get(last, last)}" if head else _FUSED.get(last, last)


def quant_platform(gpu_name: str) -> str:
    """The platform class that decides vLLM's 4-bit kernels: "sm90" (Hopper: Machete), "sm100" (datacenter Blackwell)
    and "sm120" (RTX 50 / every RTX PRO Blackwell card, kvplan.engines.gpu_sm120: NVFP4 on CUTLASS / FlashInfer too),
    "rocm" (Instinct: no Marlin, no Machete, NVFP4 emulated), "hpu" (Gaudi: checkpoint bytes), "cuda" (Ampere / Ada:
    Marlin). Worked: "RTX-PRO-4000" -> "sm120", "H200-NVL" -> "sm90", "A40" -> "cuda"."""
    from kvplan.engines import gpu_arch, gpu_sm120

    arch = gpu_arch(gpu_name)
    if arch != "other":
        return arch
    name = gpu_name.upper()
    if gpu_sm120(gpu_name):
        return "sm120"
    if name.startswith("MI"):
        return "rocm"
    if name.startswith("GAUDI"):
        return "hpu"
    return "cuda"


# quant_platform's CUDA classes (Ampere / Ada, Hopper, datacenter and RTX Blackwell): where vLLM's CUDA-only kernels
# (Marlin, Machete, MarlinExperts) can run
CUDA_QUANT_PLATFORMS = ("cuda", "sm90", "sm100", "sm120")


def marlin_padded_nk(n: int, k: int, group: int = -1) -> tuple[int, int]:
    """The (n, k) Marlin pads a rank's shard to (marlin_utils.py ``marlin_padded_nk``, vllm#45295): the cheaper of
    (n to 64, k to lcm(128, G)) and (n to 128, k to lcm(64, G)) by area, then by perimeter. Worked number:
    n = 32 (a 64-wide projection at TP2), k = 4096, G = 128 -> (64, 4096)."""
    g = group if group > 0 else 1
    lcm128, lcm64 = 128 * g // math.gcd(128, g), 64 * g // math.gcd(64, g)
    cands = ((_up(n, 64), _up(k, lcm128)), (_up(n, 128), _up(k, lcm64)))
    return min(cands, key=lambda nk: (nk[0] * nk[1], nk[0] + nk[1]))


def _marlin_shape(n: int, k: int, full_k: int, group: int, act: bool, version: str) -> tuple[int, int] | None:
    """(n, k) Marlin holds for this shard, or None when the layer is not Marlin's (verify_marlin_supports_shape)."""
    groups_ok = group == -1 or group >= full_k or k % group == 0
    if n % MARLIN_MIN_N == 0 and k % MARLIN_MIN_K == 0 and groups_ok:
        return n, k
    if vllm_has(version, "marlin_tile_padding") and not act and groups_ok:
        return marlin_padded_nk(n, k, group)
    return None


def _machete_fits(n: int, k: int, full_k: int, group: int, act: bool) -> bool:
    return group in MACHETE_GROUPS and not (act and k != full_k) and k % MACHETE_IN == 0 and n % MACHETE_OUT == 0


def int_linear_kernel(fmt: str, n: int, k: int, full_k: int, platform: str, version: str) -> str:
    """The kernel vLLM gives one integer-quantized shard: "machete", "marlin", "exllama" (GPTQConfig's kernel for GPTQ
    Marlin cannot convert, and ExllamaLinearKernel, the mixed-precision list's last resort) or "checkpoint" (a kernel
    that keeps every checkpoint tensor: AWQ's own; ROCm / Gaudi wNa16). Worked example: gptq-int4-g128 4096 x 4096 on
    an H100 -> "machete", on an A100 -> "marlin", -asym -> "exllama"."""
    cuda = platform in CUDA_QUANT_PLATFORMS
    if (m := _GPTQ_FMT.match(fmt)) is not None:
        bits, group, act = int(m["b"]), int(m["g"] or -1), bool(m["act"])
        # GPTQMarlinConfig.is_gptq_marlin_compatible: CUDA, TYPE_MAP (symmetric 4 / 8 bit), Marlin group sizes
        if not cuda or m["asym"] or bits not in (4, 8) or group not in MARLIN_GROUPS:
            return "exllama" if platform != "hpu" else "checkpoint"
    elif (m := _WNA16_FMT.match(fmt)) is not None:
        group, act = int(m["g"] or -1), bool(m["act"])
    elif (m := _AWQ_FMT.match(fmt)) is not None:
        group = int(m["g"])
        if (platform == "sm90" and vllm_has(version, "awq_mp_kernel") and group in MARLIN_GROUPS
                and _machete_fits(n, k, full_k, group, False)):
            return "machete"  # vllm#36505: AWQMarlinLinearMethod picks from the mixed-precision kernel list
        ok = cuda and group in MARLIN_GROUPS and _marlin_shape(n, k, full_k, group, False, version)
        return "marlin" if ok else "checkpoint"  # awq_marlin.py falls back to AWQConfig per layer
    else:
        raise ValueError(fmt)
    if not cuda:
        return "checkpoint"
    if platform == "sm90" and _machete_fits(n, k, full_k, group, act):
        return "machete"
    if group in MARLIN_GROUPS and _marlin_shape(n, k, full_k, group, act, version):
        return "marlin"
    return "exllama"  # ExllamaLinearKernel, the last in the list (fp16 only: a bf16 model is refused, marlin_refusal)


def _int_linear_parts(fmt: str, n: int, k: int, full_k: int, platform: str, version: str) -> tuple[int, int]:
    """(bytes of the shard's own tensors, bytes of its per-layer tensors) vLLM keeps of one integer [n, k] shard. The
    per-layer part (g_idx and its sort indices or perm, wNa16's weight_shape int64 [2]) is held once per fused layer."""
    from kvplan.weights import SCALE_BYTES, matrix_bytes

    kernel = int_linear_kernel(fmt, n, k, full_k, platform, version)
    gptq, wna16 = _GPTQ_FMT.match(fmt), _WNA16_FMT.match(fmt)
    m = gptq or wna16
    if m is None:  # AWQ: qweight, qzeros, scales (Marlin repacks them at the same size; padded from 0.24)
        if kernel == "checkpoint":
            return matrix_bytes(n, k, fmt), 0
        if kernel == "machete":  # zero points pre-scaled: [groups, n] 16-bit for AWQ's int32 [groups, n/8]
            groups = k // int(_AWQ_FMT.match(fmt)["g"])
            return matrix_bytes(n, k, fmt) + groups * n * SCALE_BYTES - groups * (n // 8) * 4, 0
        np_, kp = _marlin_shape(n, k, full_k, int(_AWQ_FMT.match(fmt)["g"]), False, version)
        return matrix_bytes(np_, kp, fmt), 0
    bits, group, act = int(m["b"]), int(m["g"] or -1), bool(m["act"])
    asym = bool(m["asym"]) if wna16 else False
    # the checkpoint's per-layer tensors as kvplan.weights counts them per projection: GPTQ's g_idx always,
    # wNa16's weight_g_idx with act order and weight_shape
    ckpt_shared = (4 * k if gptq or act else 0) + (16 if wna16 else 0)
    if kernel == "checkpoint":
        return matrix_bytes(n, k, fmt) - ckpt_shared, ckpt_shared
    if kernel == "exllama":  # zero points kept (created for symmetric wNa16); g_idx emptied unless act order
        own = matrix_bytes(n, k, fmt) - ckpt_shared
        if wna16 and not asym and group > 0:  # exllama.py: a zeros tensor [k/G, n/pack] int32 for the bias
            own += (k // group) * (n * bits // 32) * 4
        return own, (4 * k if act else 0) + (16 if wna16 else 0)
    if kernel == "machete":
        own = matrix_bytes(n, k, fmt) - ckpt_shared
        if asym:  # zero points pre-scaled into the scale dtype: [groups, n] 16-bit instead of int32 [n/pack, groups]
            groups = 1 if group == -1 else k // group
            own += groups * n * SCALE_BYTES - (n * bits // 32) * groups * 4
        return own, ckpt_shared + (4 * k if act else 0)  # + the argsort perm of act order
    np_, kp = _marlin_shape(n, k, full_k, group, act, version)
    if group == -1:
        groups = 1
    elif act and k != full_k:
        groups = full_k // group  # marlin_repeat_scales_on_all_ranks: act order on a row shard keeps all scales
    else:
        groups = kp // group
    own = np_ * kp * bits // 8 + groups * np_ * SCALE_BYTES
    if wna16 and asym:
        own += groups * (np_ * bits // 32) * 4  # weight_zero_point repacked (marlin_zero_points)
    shared = (2 * 4 * k if act else 0) + (16 if wna16 else 0)  # sorted g_idx + sort indices; weight_shape
    return own, shared


def vllm_int_linear_bytes(fmt: str, n: int, k: int, full_k: int, platform: str, version: str) -> int:
    """Bytes vLLM keeps of one unfused integer-quantized [n, k] shard (``full_k``: the layer's whole input width),
    per the table above. Worked numbers, 4096 x 4096 at TP1, gptq-int4-g128 (checkpoint 8,388,608 qweight + 65,536
    qzeros + 262,144 scales + 16,384 g_idx = 8,732,672): Marlin (A100) 8,650,752; -actorder 8,683,520 (+ sorted g_idx
    and sort indices); Machete (H100) 8,732,672; exllama (-asym) 8,716,288."""
    own, shared = _int_linear_parts(fmt, n, k, full_k, platform, version)
    return own + shared


def vllm_nvfp4_linear_bytes(fmt: str, n: int, k: int, platform: str, version: str) -> int:
    """Bytes vLLM keeps of one NVFP4 [n, k] shard. Blackwell W4A4 (CUTLASS / FlashInfer CUTLASS): packed weight
    [round_up(n, 32), round_up(k, 32) / 2] + swizzled fp8 scales [round_up(n, 128), round_up(k/16, 4)] + the fp32
    globals; elsewhere, and W4A16 NVFP4 everywhere: Marlin FP4, the checkpoint's bytes (tile-padded from 0.24.0). Worked
    numbers on a B200: n = 1024, k = 4096: 2,097,152 + 262,144 + 8 = 2,359,304 (= the checkpoint: both dims aligned);
    n = 96 (an expert-sized shard), k = 2048: 98,304 + 128 x 128 + 8 = 114,696 (checkpoint 98,304 + 12,288 + 8)."""
    from kvplan.weights import matrix_bytes

    m = _NVFP4_FMT.match(fmt)
    if m is None:
        raise ValueError(fmt)
    globals_ = 4 if m["wo"] else 8
    if platform in ("sm100", "sm120") and not m["wo"]:
        np_, kp = _up(n, NVFP4_CUTLASS_ALIGN), _up(k, NVFP4_CUTLASS_ALIGN)
        if not vllm_has(version, "nvfp4_weight_pad"):
            np_, kp = n, k
        scales = _up(n, NVFP4_SWIZZLE_ROWS) * _up(cdiv(k, NVFP4_BLOCK), NVFP4_SWIZZLE_COLS)
        if not vllm_has(version, "nvfp4_single_scales"):
            scales += n * cdiv(k, NVFP4_BLOCK)  # the checkpoint's weight_scale stays beside weight_scale_swizzled
        return np_ * kp // 2 + scales + globals_
    if vllm_has(version, "marlin_tile_padding") and platform in CUDA_QUANT_PLATFORMS:
        np_, kp = marlin_padded_nk(n, k, NVFP4_BLOCK)
        return matrix_bytes(np_, kp, fmt)
    return matrix_bytes(n, k, fmt)


def vllm_moe_expert_bytes(fmt: str, hidden: int, inter: int, gate_up: list[int], platform: str,
                          gated: bool = True, version: str = "0.33", inter_full: int | None = None
                          ) -> tuple[int, int] | None:
    """(vLLM's bytes, kvplan's checkpoint bytes) of one routed expert of a rank in ``fmt`` (``inter``: its
    intermediate per partition; ``gate_up``: the out widths of its gate / up linears as the checkpoint splits them,
    [2 x inter] when fused), or None when vLLM keeps the checkpoint's bytes.

    NVFP4 W4A4 on Blackwell (ModelOptNvFp4FusedMoE / CompressedTensorsW4A4Nvfp4MoEMethod, FlashInfer / CUTLASS
    backends): w13 [2I, H] and w2 [H, I] block scales swizzled per expert, [round_up(2I, 128), round_up(H/16, 4)] and
    [round_up(H, 128), round_up(I/16, 4)]; a non-gated MoE (Nemotron-H's relu2 up / down) whose I is no multiple of
    128 also pads its weights to the swizzled rows (``intermediate_size_pad``: w13 rows, w2 columns and w2 scales,
    before w2's swizzle; a gated one asserts instead). wNa16 (CompressedTensorsWNA16MarlinMoEMethod): weight_shape is [E, 2] per
    fused w13 / w2 (2 x 2 x 2 B an expert, params dtype) where kvplan counts 16 B per checkpoint tensor; g_idx and
    sort indices ([E, H] and [E, I] int32 each for w13 / w2) are emptied without act order. Worked numbers: Kimi-K2
    w4a16-g32, H 7168, I 2048 / 8 = 256: 8 B of shape per expert vs kvplan's 48 (gate, up, down): -40 B;
    Qwen3-30B-A3B NVFP4 at TP8 on a B200 (H 2048, I 96): w13 scales 192 -> 256 rows x 128 (+8,192), w2 2048 x 6
    -> 8 columns (+4,096): +12,288 B an expert. GPTQ (GPTQMarlinMoEMethod, gptq_marlin.py): qweight repacked and
    scales permuted at the same size, qzeros kept but registered in the 16-bit params dtype (half the int32 bytes),
    g_idx emptied without act order (sorted + sort indices per w13 / w2 with it, w2 scales then unsharded); needs
    H % 128 and I % max(64, G) (``check_moe_marlin_supports_layer``), else MoeWNA16 (kept as checkpointed). Worked
    number, Qwen3-30B-A3B GPTQ int4 g128 at TP1 (H 2048, I 768): qzeros 18,432 -> 9,216 and g_idx 4 x (2,048 +
    2,048 + 768) = 19,456 dropped: -28,672 B an expert."""
    from kvplan.weights import SCALE_BYTES, matrix_bytes

    if not _layout_formats(fmt):  # e.g. "unquantized": a layer an ignore list keeps in the model dtype, as loaded
        return None
    ckpt = sum(matrix_bytes(o, hidden, fmt) for o in gate_up) + matrix_bytes(hidden, inter, fmt)
    if (m := _NVFP4_FMT.match(fmt)) is not None:
        if m["wo"] or platform not in ("sm100", "sm120"):
            return None
        i2 = sum(gate_up)
        rows = _up(i2, NVFP4_SWIZZLE_ROWS)  # w13's swizzled scale rows
        # non-gated: weights padded to them too, w2 along its input columns (not in the 0.10 code)
        pad = 0 if gated or not vllm_has(version, "nvfp4_weight_pad") else rows - i2
        loaded = (rows * hidden // 2 if pad else i2 * hidden // 2)
        loaded += rows * _up(cdiv(hidden, NVFP4_BLOCK), NVFP4_SWIZZLE_COLS)
        loaded += hidden * (inter + pad) // 2
        loaded += _up(hidden, NVFP4_SWIZZLE_ROWS) * _up(cdiv(inter + pad, NVFP4_BLOCK), NVFP4_SWIZZLE_COLS)
        loaded += 8 * (len(gate_up) + 1)  # fp32 weight_scale_2 + input_scale per projection, as checkpointed
        if not vllm_has(version, "nvfp4_single_scales"):  # w13_weight_scale / w2_weight_scale kept beside the swizzled
            loaded += i2 * cdiv(hidden, NVFP4_BLOCK) + hidden * cdiv(inter, NVFP4_BLOCK)
        return loaded, ckpt
    if (m := _GPTQ_FMT.match(fmt)) is not None and platform in CUDA_QUANT_PLATFORMS:
        bits, group, act = int(m["b"]), int(m["g"] or -1), bool(m["act"])
        if m["asym"] or bits not in (4, 8) or group not in MARLIN_GROUPS:
            return None
        if hidden % 128 or inter % max(64, group):
            return None  # check_moe_marlin_supports_layer: MoeWNA16 kernels instead (not modeled)
        pack, i2 = 32 // bits, sum(gate_up)
        g13 = 1 if group == -1 else hidden // group
        g2 = 1 if group == -1 else ((inter_full or inter) if act else inter) // group  # act order: full w2 scales
        loaded = (i2 * hidden + hidden * inter) * bits // 8 + (g13 * i2 + g2 * hidden) * SCALE_BYTES
        # qzeros are registered in the params dtype (16-bit) and kept; g_idx emptied without act order
        loaded += (g13 * (i2 // pack) + g2 * (hidden // pack)) * 2
        if act:
            loaded += 2 * 4 * (hidden + inter)  # sorted g_idx + sort indices, [E, H] and [E, I] int32
        return loaded, ckpt
    if (m := _WNA16_FMT.match(fmt)) is not None and platform in CUDA_QUANT_PLATFORMS:
        shapes_ckpt = 16 * (len(gate_up) + 1)
        gidx_ckpt = 4 * (hidden * len(gate_up) + inter) if m["act"] else 0
        gidx_loaded = 2 * 4 * (hidden + inter) if m["act"] else 0
        return ckpt - shapes_ckpt - gidx_ckpt + 2 * 2 * 2 + gidx_loaded, ckpt
    return None


def _layout_formats(f: str) -> bool:
    return bool(_NVFP4_FMT.match(f) or _GPTQ_FMT.match(f) or _WNA16_FMT.match(f) or _AWQ_FMT.match(f))


def _fused_shards(spec: ModelSpec, layer, category: str, fmt: str, mine, width: int, accept=None):
    """[(format, fused n on the rank, k, full k, copies, kvplan's checkpoint bytes of the members, members)] of one
    layer's category: the shards of the 4-bit / NVFP4 linears (``accept``: another format test), fused as vLLM
    builds its layers (``_FUSED``)."""
    accept = accept or _layout_formats
    from kvplan.parallel import _RowShard, _shard
    from kvplan.weights import component_format, matrix_bytes

    fused: dict[tuple[str, str], list] = {}
    for c in getattr(layer, category):
        if not isinstance(c, Linear):
            continue
        for f, _ in component_format(category, c, fmt, mine):
            if not accept(f):
                continue
            s = _shard(c, width, spec)
            lin = s.linear if isinstance(s, _RowShard) else s
            n, k = lin.out_features, lin.in_features
            key = (vllm_fused_name(c.name), f)
            entry = fused.setdefault(key, [f, 0, k, c.in_features, c.count, 0, 0])
            entry[1] += n
            entry[5] += matrix_bytes(n, k, f)
            entry[6] += 1
    return [tuple(e) for e in fused.values()]


def vllm_quant_layout_extra_bytes(spec: ModelSpec, layout: Layout, stage: int, weight_format: str | None,
                                  gpu_name: str, vllm_version: str) -> int:
    """Bytes vLLM's integer / NVFP4 layouts add (or drop: negative) on one rank of stage ``stage`` over kvplan's
    checkpoint bytes, per the table above (0 for other formats). Worked numbers, a GPTQ int4 g128 Llama-3.1-8B
    (desc_act false) on one A100 (Marlin): -(qzeros 851,968 + g_idx 155,648) a layer = -32,243,712 B (-0.03 GiB);
    on an H100 (Machete): -(2 + 1) x 16,384 of g_idx a layer (one per fused qkv / gate_up) = -1,572,864 B."""
    from kvplan.parallel import ROW_EXPERT, _shard
    from kvplan.weights import (
        component_format,
        layer_groups,
        matrix_bytes,
        overrides_by_layer,
        resolve_format,
        spec_formats,
    )

    if not any(_layout_formats(f) for f in spec_formats(spec, weight_format)):
        return 0  # no 4-bit integer / NVFP4 component: every term below is 0
    platform = quant_platform(gpu_name)
    fmt, use_overrides = resolve_format(spec, weight_format)
    tp, moe_ranks = layout.tp, layout.tp * layout.dp
    parts = pp_partition(len(spec.layers), layout.pp)
    start = sum(parts[:stage])
    groups = (layer_groups(spec, start, start + parts[stage]) if use_overrides
              else [(layer, n, None) for layer, n in stage_distinct(spec, layout.pp, stage)])
    extra = 0
    if stage == layout.pp - 1 and spec.lm_head:  # a quantized lm_head (GPTQ ``lm_head: true``, modelopt NVFP4 heads)
        top = overrides_by_layer(spec).get(-1) if use_overrides else None
        for c in spec.lm_head:
            for f, _ in component_format("lm_head", c, fmt, top):
                if _layout_formats(f):
                    lin = _shard(c, tp, spec)
                    n, k = lin.out_features, lin.in_features
                    loaded = (vllm_nvfp4_linear_bytes(f, n, k, platform, vllm_version) if _NVFP4_FMT.match(f)
                              else sum(_int_linear_parts(f, n, k, k, platform, vllm_version)))
                    extra += loaded - matrix_bytes(n, k, f)
    for layer, copies, mine in groups:
        for category in ("attention", "mlp"):
            width = (layout.attn_tp if category == "attention" else
                     layout.dense_tp if category == "mlp" and layer.experts is None and layout.dense_tp else tp)
            for f, n, k, full_k, count, ckpt, members in _fused_shards(spec, layer, category, fmt, mine, width):
                if _NVFP4_FMT.match(f):  # the fp32 globals stay counted per projection (not modeled, < 32 B)
                    loaded = vllm_nvfp4_linear_bytes(f, n, k, platform, vllm_version) + (members - 1) * (
                        4 if _NVFP4_FMT.match(f)["wo"] else 8)
                else:
                    loaded = sum(_int_linear_parts(f, n, k, full_k, platform, vllm_version))
                extra += copies * count * (loaded - ckpt)
        ex = layer.experts
        if ex is None:
            continue
        downs = [c for c in ex.linears if c.name.endswith(ROW_EXPERT)]
        ups = [c for c in ex.linears if not c.name.endswith(ROW_EXPERT)]
        if len(downs) != 1 or not ups:
            continue
        fmts = {f for c in ex.linears for f, _ in component_format("experts", c, fmt, mine)}
        if len(fmts) != 1:
            continue  # mixed formats across one layer's experts: checkpoint bytes
        f = fmts.pop()
        hidden, inter = downs[0].out_features, downs[0].in_features
        if layout.ep:
            count, part, split = cdiv(ex.num_experts, moe_ranks), inter, 1
        else:
            count, part, split = ex.num_experts, cdiv(inter, moe_ranks), moe_ranks
        gated = len(ups) > 1 or ups[0].name.endswith(("gate_up_proj", "gate_proj", "w1"))
        got = vllm_moe_expert_bytes(f, hidden, part, [cdiv(c.out_features, split) for c in ups], platform, gated,
                                    vllm_version, inter)
        if got is not None:
            extra += copies * count * (got[0] - got[1])
    return extra


# ----------------------------------------------------------------------------- FP8 on Marlin (no FP8 math: sm75 - sm86)
#
# vLLM gives every FP8 layer the Marlin w8a16 kernel on a CUDA GPU below compute capability 8.9 (and >= 7.5):
# quantization/fp8.py Fp8LinearMethod / Fp8MoEMethod ``use_marlin = not has_device_capability(89)`` (0.10.1.1 -
# 0.17.x wheels); from the kernel lists on, MarlinFP8ScaledMMLinearKernel.is_supported (cc < 89) is the first CUDA
# block-FP8 / FP8 kernel that can run there (kernels/linear/__init__.py _POSSIBLE_FP8_BLOCK_KERNELS, 0.22.0) and the
# MoE oracle falls through TRITON (TritonExperts needs current_platform.supports_fp8(), cc >= 89) to MARLIN
# (fused_moe/oracle/fp8.py, 0.22.0). quantization/utils/marlin_utils_fp8.py then repacks the weights
# (gptq_marlin_repack at 8 bits: the same k x n bytes) and replaces the scales (the checkpoint's are deleted:
# ``del layer.weight_scale_inv`` / delattr through 0.12, replace_parameter from 0.14) by 16-bit ones per output
# column (``scales.to(layer.orig_dtype)``, the model dtype): per-tensor / per-channel -> [1, N]; block [bn, bk] ->
# group-wise, ``repeat_interleave(block_n)`` to [cdiv(K, bk), N] (prepare_fp8_layer_for_marlin for a fused layer,
# prepare_fp8_moe_layer_for_marlin / prepare_moe_fp8_layer_for_marlin for each expert's w13 [2I, H] and w2 [H, I]);
# this text is the same in every wheel 0.10.1.1 - 0.33.0. marlin_permute_scales and the exponent-bias fold keep the
# shape. Not modeled: the per-layer Marlin workspace (SMs x 4 B, x 4 for MoE: < 2 KiB a layer), V0 profiles.
_FP8_FMT = re.compile(r"^fp8(?P<kind>-channel|-block(?:-(?P<bn>\d+)x(?P<bk>\d+))?)?(?P<static>-static)?$")
# NVIDIA GPUs of the catalog (kvplan.gpus) below compute capability 8.9: Ampere A100 / A10 / A10G / A40 (sm80 / sm86),
# RTX A6000 and RTX 30 (sm86). Ada (L4, L40S, L20, RTX 40, RTX 6000 Ada: sm89) and later run FP8 natively.
FP8_MARLIN_GPUS = ("A100", "A10", "A40", "RTX-A6000", "RTX-30")  # Ampere (SM 8.0 / 8.6): below the FP8 SM 8.9


def fp8_marlin_gpu(gpu_name: str) -> bool:
    """Whether vLLM runs FP8 layers on Marlin on this catalog GPU (no FP8 tensor-core math)."""
    return gpu_name.upper().startswith(FP8_MARLIN_GPUS)


def _fp8_marlin_scale_rows(fmt: str, k: int) -> int | None:
    """Rows of the Marlin scale tensor of a [N, K] FP8 matrix in ``fmt`` (None: not FP8): cdiv(K, block_k) for a
    block format (group-wise, group = block_k), else 1 (channel-wise)."""
    m = _FP8_FMT.match(fmt)
    if m is None:
        return None
    if m["kind"] and m["kind"].startswith("-block"):
        return cdiv(k, int(m["bk"] or 128))
    return 1


def vllm_fp8_marlin_extra_bytes(spec: ModelSpec, layout: Layout, stage: int, weight_format: str | None,
                                gpu_name: str, vllm_version: str, dtype_bytes: int = 2) -> int:
    """Bytes vLLM's FP8 Marlin layout adds on one rank of stage ``stage`` over kvplan's checkpoint bytes (0 unless
    FP8 layers run on Marlin: ``fp8_marlin_gpu`` and a V1 profile), per the table above: each fused linear shard
    [n, k] and each expert's w13 [2I, H] / w2 [H, I] keep rows x n 16-bit scales in place of the checkpoint's fp32
    ones. Worked number, MiniMax-M2.7 (fp8 128 x 128 blocks) at TP4 on A100s: an expert (H 3072, I 1536 / 4 = 384)
    keeps 24 x 768 x 2 + 3 x 3072 x 2 = 55,296 B of scales for 2 x 288 + 288 = 864 B checkpointed, x 256 experts x
    62 layers = +863,944,704 B; the attention (qkv 8,192 / 4 = 2,048 x 3,072 and o 3,072 x 1,536 a rank) 24 x 2,048
    x 2 + 12 x 3,072 x 2 - (1,152 + 192 + 192) - 1,152 = +169,344 B a layer: +874,444,032 B (0.81 GiB) in all."""
    from kvplan.engines import VLLM_PROFILES
    from kvplan.parallel import ROW_EXPERT
    from kvplan.weights import component_format, layer_groups, matrix_bytes, resolve_format

    if not fp8_marlin_gpu(gpu_name) or VLLM_PROFILES[vllm_version].engine_core == "V0":
        return 0
    fmt, use_overrides = resolve_format(spec, weight_format)
    parts = pp_partition(len(spec.layers), layout.pp)
    start = sum(parts[:stage])
    groups = (layer_groups(spec, start, start + parts[stage]) if use_overrides
              else [(layer, n, None) for layer, n in stage_distinct(spec, layout.pp, stage)])
    tp, moe_ranks = layout.tp, layout.tp * layout.dp

    def is_fp8(f: str) -> bool:
        return _FP8_FMT.match(f) is not None

    extra = 0
    for layer, copies, mine in groups:
        for category in ("attention", "mlp"):
            width = (layout.attn_tp if category == "attention" else
                     layout.dense_tp if category == "mlp" and layer.experts is None and layout.dense_tp else tp)
            for f, n, k, _full_k, count, ckpt, _members in _fused_shards(spec, layer, category, fmt, mine, width, is_fp8):
                # the checkpoint's bytes less its weight (n x k fp8, repacked at the same size): its scales
                extra += copies * count * (_fp8_marlin_scale_rows(f, k) * n * dtype_bytes - (ckpt - n * k))
        ex = layer.experts
        if ex is None:
            continue
        downs = [c for c in ex.linears if c.name.endswith(ROW_EXPERT)]
        ups = [c for c in ex.linears if not c.name.endswith(ROW_EXPERT)]
        fmts = {f for c in ex.linears for f, _ in component_format("experts", c, fmt, mine)}
        if len(downs) != 1 or not ups or len(fmts) != 1:
            continue
        f = fmts.pop()
        if not is_fp8(f):
            continue
        hidden, inter = downs[0].out_features, downs[0].in_features
        if layout.ep:
            count, part, split = cdiv(ex.num_experts, moe_ranks), inter, 1
        else:
            count, part, split = ex.num_experts, cdiv(inter, moe_ranks), moe_ranks
        widths = [cdiv(c.out_features, split) for c in ups]
        ckpt_scales = sum(matrix_bytes(o, hidden, f) - o * hidden for o in widths) + (
            matrix_bytes(hidden, part, f) - hidden * part)
        marlin = (_fp8_marlin_scale_rows(f, hidden) * sum(widths) + _fp8_marlin_scale_rows(f, part) * hidden) * dtype_bytes
        extra += copies * count * (marlin - ckpt_scales)
    return extra


def _marlin_reason(n: int, k: int, group: int, version: str) -> str:
    """Why MarlinLinearKernel.can_implement refuses the shard, in its words: verify_marlin_supports_shape's first
    failing check (marlin_utils.py @007d5005); from vllm#45295 on (0.24+ profiles) only a group straddling TP ranks is
    left."""
    if vllm_has(version, "marlin_tile_padding"):
        return f"in_features per partition {k} is not divisible by group_size = {group}."
    if n % MARLIN_MIN_N:
        return (f"Weight output_size_per_partition = {n} is not divisible by  min_thread_n = {MARLIN_MIN_N}. "
                "Consider reducing tensor_parallel_size or running with --quantization gptq.")
    if k % MARLIN_MIN_K:
        return (f"Weight input_size_per_partition = {k} is not divisible by min_thread_k = {MARLIN_MIN_K}. "
                "Consider reducing tensor_parallel_size or running with --quantization gptq.")
    return (f"Weight input_size_per_partition = {k} is not divisible by group_size = {group}. "
            "Consider reducing tensor_parallel_size or running with --quantization gptq.")


def modelopt_refusal(spec: ModelSpec, weight_format: str | None, gpu_name: str,
                     vllm_version: str = VLLM_DEFAULT_VERSION) -> tuple[str, str] | None:
    """(field, reason) where vLLM release line ``vllm_version`` cannot load this NVIDIA ModelOpt checkpoint on
    ``gpu_name``, else None; only for the checkpoint's own formats (``weight_format`` None / "auto": another format
    is a what-if kvplan plans as asked). Read 2026-12-03 in the 0.16.0 - 0.34.0 wheels
    (model_executor/layers/quantization/modelopt.py; VLLM_CHANGES keys in brackets):

    - quant_algo MIXED_PRECISION (``spec.quantization_method`` "modelopt_mixed") before 0.17.0 [modelopt_mixed]:
      QUANT_ALGOS has no MIXED_PRECISION, from_config raises "ModelOpt currently only supports ...";
    - a top-level quant_algo W4A16_NVFP4 (kvplan's "nvfp4-wo" under "modelopt") before 0.21.0
      [modelopt_w4a16_nvfp4]: the same ValueError;
    - MIXED_PRECISION with W4A16_NVFP4 entries ("nvfp4-wo") before 0.22.0 [modelopt_mixed_w4a16_nvfp4]:
      ModelOptMixedPrecisionConfig.get_quant_method knows FP8 / NVFP4 only and gives such a linear
      UnquantizedLinearMethod and such experts the unquantized method: 16-bit parameters of the full shape for the
      checkpoint's packed uint8 tensors and their weight_scale / weight_scale_2, so loading fails;
    - MIXED_PRECISION with a quantized lm_head before 0.23.0 [modelopt_mixed_lm_head]: its get_quant_method returns
      None for a ParallelLMHead (not a LinearBase), the 16-bit head cannot take the packed one;
    - MIXED_PRECISION on a GPU below compute capability 8.9 (``fp8_marlin_gpu``: A100, A10, RTX A6000 / 30) before
      0.24.0 [modelopt_mixed_sm75]: get_min_capability 89, config/vllm.py _get_quantization_config raises "The
      quantization method modelopt_mixed is not supported for the current GPU. Minimum capability: 89" (75 from
      0.24.0).

    Worked example: nvidia/Qwen3.6-35B-A3B-NVFP4 (MIXED_PRECISION: FP8 attention / DeltaNet projections,
    W4A16_NVFP4 experts, shared expert and lm_head) at 0.21 -> refused (W4A16_NVFP4 entries), at 0.22 -> refused
    (lm_head), at 0.23 on an RTX 3090 -> refused (capability 8.6), on an RTX 5090 -> None; at 0.24 on an RTX 3090 ->
    None."""
    from kvplan.weights import UNQUANTIZED, resolve_format, spec_formats

    method = spec.quantization_method
    if method not in ("modelopt", "modelopt_mixed") or not resolve_format(spec, weight_format)[1]:
        return None
    w4a16 = "nvfp4-wo" in spec_formats(spec, weight_format)
    release = "vLLM " + vllm_version
    if method == "modelopt":
        if w4a16 and not vllm_has(vllm_version, "modelopt_w4a16_nvfp4"):
            return "vllm_version", (f"{release} cannot load this ModelOpt W4A16_NVFP4 checkpoint: quantization/"
                                    "modelopt.py lists W4A16_NVFP4 from 0.21.0 (\"ModelOpt currently only supports "
                                    "...\" before)")
        return None
    if not vllm_has(vllm_version, "modelopt_mixed"):
        return "vllm_version", (f"{release} cannot load this ModelOpt MIXED_PRECISION checkpoint: "
                                "ModelOptMixedPrecisionConfig is first in 0.17.0 (\"ModelOpt currently only supports "
                                "...\" before)")
    if w4a16 and not vllm_has(vllm_version, "modelopt_mixed_w4a16_nvfp4"):
        return "vllm_version", (f"{release} cannot load this ModelOpt MIXED_PRECISION checkpoint: its quantized_layers "
                                "name W4A16_NVFP4, which ModelOptMixedPrecisionConfig maps from 0.22.0 only (before, "
                                "such layers are built unquantized and the packed NVFP4 tensors do not load)")
    if not vllm_has(vllm_version, "modelopt_mixed_lm_head") and any(
            o.category == "lm_head" and o.format != UNQUANTIZED for o in spec.quantization_overrides):
        return "vllm_version", (f"{release} cannot load this ModelOpt MIXED_PRECISION checkpoint: its lm_head is "
                                "quantized, and ModelOptMixedPrecisionConfig quantizes a ParallelLMHead from 0.23.0 "
                                "only (before, a 16-bit lm_head is built for the packed one)")
    if fp8_marlin_gpu(gpu_name) and not vllm_has(vllm_version, "modelopt_mixed_sm75"):
        return "gpu", (f"{release} refuses ModelOpt MIXED_PRECISION on {gpu_name} (compute capability below 8.9): "
                       "\"The quantization method modelopt_mixed is not supported for the current GPU. Minimum "
                       "capability: 89\" (75 from 0.24.0)")
    return None


def marlin_refusal(spec: ModelSpec, layout: Layout, weight_format: str | None, gpu_name: str,
                   vllm_version: str) -> str | None:
    """The ValueError vLLM raises creating a GPTQ-Marlin / wNa16 layer no mixed-precision kernel can take, or None.

    GPTQMarlinLinearMethod and CompressedTensorsWNA16 call ``choose_mp_linear_kernel``, which raises when every
    kernel refuses the shard: Machete (Hopper only, k % 64, n % 128), Marlin (n % 64, k % 128, k % G; vllm#45295
    pads to a tile from the 0.24 profile on, but a group straddling two ranks stays refused), Exllama (fp16 activations
    only: a bf16 checkpoint has no fallback). Worked
    example: a 64-wide quantized projection at TP2 on an sm86 GPU, bf16 -> "Weight output_size_per_partition = 32
    is not divisible by  min_thread_n = 64" (the AutoRound Qwen3.6 report quoted in the tests)."""
    from kvplan.weights import layer_groups, resolve_format, spec_formats

    platform = quant_platform(gpu_name)
    if platform not in CUDA_QUANT_PLATFORMS:
        return None
    if not any(_GPTQ_FMT.match(f) or _WNA16_FMT.match(f) for f in spec_formats(spec, weight_format)):
        return None  # no GPTQ / wNa16 component: no Marlin tile to fill
    fmt, use_overrides = resolve_format(spec, weight_format)
    for layer, _n, mine in layer_groups(spec, overrides=use_overrides):
        mine = mine if use_overrides else None
        for category in ("attention", "mlp"):
            width = (layout.attn_tp if category == "attention" else
                     layout.dense_tp if category == "mlp" and layer.experts is None and layout.dense_tp else layout.tp)
            for f, n, k, full_k, _count, _ckpt, _members in _fused_shards(spec, layer, category, fmt, mine, width):
                g, w = _GPTQ_FMT.match(f), _WNA16_FMT.match(f)
                if g is None and w is None:
                    continue
                m = g or w
                group, act = int(m["g"] or -1), bool(m["act"])
                if g and (g["asym"] or int(g["b"]) not in (4, 8) or group not in MARLIN_GROUPS):
                    continue  # not Marlin-convertible: GPTQConfig's exllama kernel, no tile rule
                if platform == "sm90" and _machete_fits(n, k, full_k, group, act):
                    continue
                if group in MARLIN_GROUPS and _marlin_shape(n, k, full_k, group, act, vllm_version):
                    continue
                bits = int(m["b"])
                if (spec.dtype == "fp16" and not (act and k != full_k) and group > 0 and full_k % group == 0
                        and n % (32 // bits) == 0):
                    continue  # ExllamaLinearKernel.can_implement (fp16 activations only)
                return ("ValueError: Failed to find a kernel that can implement the WNA16 linear layer. Reasons: "
                        f"MarlinLinearKernel cannot implement due to: {_marlin_reason(n, k, group, vllm_version)}")
    return None


# ----------------------------------------------------------------------------- RoPE cos/sin tables

def vllm_rope_rows(cache, vllm_version: str, model_type: str = "") -> int:
    """Rows (positions) of one vLLM cos/sin table, by the class ``get_rope`` picks for its rope_type
    (vllm/model_executor/layers/rotary_embedding/, read 2026-12 in the 0.6.3, 0.7.3, 0.10.2, 0.11.0, 0.17.0,
    0.21.0 and 0.33.0 wheels, the boundaries in every wheel around them: VLLM_CHANGES "longrope_one_table",
    "mrope_cache_x4", "dynamic_ntk_max_position", "mrope_positions_factor"; ``torch.arange`` over a float length
    gives ceil(length) rows):

    - default, llama3, (0.33) proportional: max_position (``RotaryEmbedding._compute_cos_sin_cache``);
    - linear: ceil(max_position x factor) (``LinearScalingRotaryEmbedding``: "the maximum length after applying
      the rope scaling is self.max_position_embeddings * self.scaling_factor");
    - dynamic (NTK): ceil(max_position x factor) through 0.21.0 (the 0.21 profile), max_position from 0.22.0;
    - yarn (``YaRNScalingRotaryEmbedding``, built with original_max_position_embeddings), deepseek_yarn /
      deepseek_llama_scaling (``DeepseekScalingRotaryEmbedding``): ceil(original_max_position x factor);
    - longrope (``Phi3LongRoPEScaledRotaryEmbedding``): the short [original] and long [max] tables concatenated,
      original + max_position; 0.6.x (0.6.0 - 0.6.6.post1) also keeps both halves as buffers of their own:
      2 x (original + max); 0.7.0 keeps only ``long_short_cos_sin_cache``;
    - mrope (``MRotaryEmbedding``): max_position through 0.7.1; ``cache_max_position_num = max_position_embeddings
      * 4`` from 0.7.2 (V0 plans of it are refused: multimodal) through 0.31.0; from 0.32.0 the factor is
      ``mrope_positions_factor``, which Qwen3-VL / Qwen3.5 pass as 1 unless video pruning is on (qwen3_vl.py) and
      the rest leave at 4.

    Llama-3.1-8B (llama3, max 131,072): 131,072 rows; gpt-oss (yarn 4,096 x 32): 131,072; DeepSeek-V3 (4,096 x 40):
    163,840; Gemma-3 global (linear 8 x 131,072): 1,048,576."""
    kind, mx, f = cache.rope_type, cache.max_position, cache.factor
    orig = cache.original_max_position or mx
    if kind == "linear" or (kind == "dynamic" and not vllm_has(vllm_version, "dynamic_ntk_max_position")):
        return math.ceil(mx * f)
    if kind in ("yarn", "deepseek_yarn", "deepseek_llama_scaling"):
        return math.ceil(orig * f)
    if kind in ("longrope", "su"):
        return (1 if vllm_has(vllm_version, "longrope_one_table") else 2) * (orig + mx)
    if kind == "mrope":
        if not vllm_has(vllm_version, "mrope_cache_x4") or (
                vllm_has(vllm_version, "mrope_positions_factor") and model_type.startswith(("qwen3_vl", "qwen3_5"))):
            return mx
        return 4 * mx
    return mx


def vllm_rope_cache_bytes(spec: ModelSpec, layout: Layout, stage: int, vllm_version: str, dtype_bytes: int = 2) -> int:
    """Bytes of the RoPE cos/sin tables on one rank of pipeline stage ``stage``: vLLM's rotary embedding registers
    ``cos_sin_cache`` [rows, rotary_dim] (cos and sin halves of rotary_dim / 2 each) as a non-persistent buffer
    (``register_buffer("cos_sin_cache", cache, persistent=False)``, rotary_embedding.py in 0.6.x / 0.7.x,
    rotary_embedding/base.py from 0.10), built on the device while the model is constructed, so it is in "Model
    loading took". ``get_rope`` caches one instance per distinct parameter set, so a process holds one table per
    ``spec.rope_caches`` entry, whole on every TP rank, on each PP stage that builds a layer using it.
    bytes = sum of rows (``vllm_rope_rows``) x rotary_dim x element bytes, where the element is the model dtype
    (``cache.to(dtype)``, ``dtype_bytes``) or 4 where the model file asks for float32 (gpt-oss). Not modelled: the
    0.17+ ``DeepseekScalingRotaryEmbedding`` keeps fp32 when its custom op is enabled with FlashInfer present (an
    MLA table twice as large: +20 MiB for DeepSeek-V3), ROCm AITER's extra bf16 copy, LoRA's extra linear factors.
    Llama-3.1-8B: 131,072 x 128 x 2 B = 33,554,432 B (0.03125 GiB: the gap its pinned logs showed)."""
    return sum(rows * dim * (4 if fp32 else dtype_bytes)
               for rows, dim, fp32 in vllm_rope_tables(spec, layout, stage, vllm_version))


def vllm_rope_tables(spec: ModelSpec, layout: Layout, stage: int, vllm_version: str) -> list[tuple[int, int, bool]]:
    """The cos/sin tables ``vllm_rope_cache_bytes`` sums, one (rows, rotary_dim, fp32) per ``spec.rope_caches`` entry
    a layer of stage ``stage`` uses (for the budget row's text). Llama-3.1-8B on 0.17: [(131072, 128, False)]."""
    if not spec.rope_caches:
        return []
    kinds = {layer.cache.kind for layer, _ in stage_distinct(spec, layout.pp, stage)}
    return [(vllm_rope_rows(cache, vllm_version, spec.model_type), cache.rotary_dim, cache.fp32)
            for cache in spec.rope_caches
            if (kinds & set(cache.layer_types) if cache.layer_types else kinds & set(ATTENTION_KINDS))]


# ----------------------------------------------------------------------------- DSA: the top-k index buffer

# int32 (torch.int32) entries of the top-k index buffer: 4 B
DSA_TOPK_INDEX_BYTES = 4


def vllm_dsa_topk_buffer_bytes(spec: ModelSpec, max_num_batched_tokens: int, mtp_layers: int = 0) -> int:
    """Bytes of vLLM's DSA top-k index buffers on one rank (DeepSeek-V3.2 / GLM-5: a config with ``index_topk``).

    The model's constructor makes one buffer the lightning indexers write their top-k token indices into and the
    sparse MLA backend reads: ``torch.empty(scheduler_config.max_num_batched_tokens, config.index_topk,
    dtype=torch.int32)`` on the device, shared by every layer of the model. It is made while the model is built, inside
    load_model's DeviceMemoryProfiler, so it is part of "Model loading took"; not divided by TP (whole on every rank)
    and made on every pipeline stage (the constructor runs before make_layers picks the stage's layers). Each MTP
    layer (DeepSeekMultiTokenPredictorLayer) makes its own buffer of the same shape; from 0.30.0, where the CUDA
    DeepseekV32Model keeps its buffer as an attribute, the MTP proposer points the draft's modules at the target's
    (llm_base_proposer.py, "Sharing target model topk_indices_buffer"), but the draft layer's sparse MLA impl (not a
    module) still holds its own through its index group (``logical_topk_indices``), so that buffer stays allocated.
    Read 2026-12 in the wheels: 0.11.0, 0.17.0, 0.20.0, 0.26.0, 0.29.0 - 0.31.0, 0.33.0
    model_executor/models/deepseek_v2.py ``DeepseekV2Model.__init__`` (``is_v32 = hasattr(config, "index_topk")``)
    and deepseek_mtp.py ``DeepSeekMultiTokenPredictorLayer``; from 0.26.0 also models/deepseek_v32/nvidia/model.py
    ``DeepseekV32Model`` and nvidia/mtp.py (the CUDA path), the same tensor; 0.10.2 has no DSA model. The 0.30+
    sparse-MLA index groups' own decode buffers: ``vllm_dsa_index_group_bytes``.
    bytes = (1 + mtp_layers) x torch block of (max_num_batched_tokens x index_topk x 4) (kvplan.vllm_alloc
    ``torch_block_bytes``: a multiple of 2 MiB stays itself).
    Worked number: GLM-5.2 at 8,192 batched tokens: 8,192 x 2,048 x 4 = 67,108,864 B = 64 MiB a rank; with its one
    MTP layer 128 MiB; DeepSeek-V3.2 at 32,768 batched tokens: 256 MiB."""
    from kvplan.vllm_alloc import torch_block_bytes

    topk = _dsa_index_topk(spec)
    if not topk:
        return 0
    return (1 + mtp_layers) * torch_block_bytes(max_num_batched_tokens * topk * DSA_TOPK_INDEX_BYTES)


def _dsa_index_topk(spec: ModelSpec) -> int:
    """The model's index_topk (0 without a DSA layer)."""
    return max((getattr(layer.cache, "index_topk", None) or 0 for layer, _ in spec_distinct_layers(spec)), default=0)


class DsaIndexGroups(NamedTuple):
    """The sparse-MLA index groups of one rank (``vllm_dsa_index_groups``): ``groups`` of ``rows`` decode rows each
    (R + 1 rows allocated), ``group_bytes`` each (allocator blocks), plus ``mtp_groups`` of ``mtp_rows`` rows and
    ``mtp_group_bytes`` each; ``index_topk`` the row width."""

    groups: int
    rows: int
    group_bytes: int
    mtp_groups: int
    mtp_rows: int
    mtp_group_bytes: int
    index_topk: int

    @property
    def bytes(self) -> int:
        return self.groups * self.group_bytes + self.mtp_groups * self.mtp_group_bytes


def vllm_dsa_index_group_bytes(spec: ModelSpec, layout: Layout, stage: int, max_num_batched_tokens: int,
                               max_num_seqs: int, speculative_tokens: int, mtp_layers: int, vllm_version: str,
                               cuda: bool = True) -> int:
    """Bytes of the sparse-MLA index groups' decode buffers on one rank (``vllm_dsa_index_groups``, the same
    arguments; 0 where the release or model has none). Worked number: GLM-5 at 8,192 batched tokens and 1,024
    sequences: 78 x 8,401,408 = 655,309,824 B = 0.61 GiB a rank."""
    groups = vllm_dsa_index_groups(spec, layout, stage, max_num_batched_tokens, max_num_seqs, speculative_tokens,
                                   mtp_layers, vllm_version, cuda)
    return groups.bytes if groups else 0


def vllm_dsa_index_groups(spec: ModelSpec, layout: Layout, stage: int, max_num_batched_tokens: int,
                          max_num_seqs: int, speculative_tokens: int, mtp_layers: int, vllm_version: str,
                          cuda: bool = True) -> DsaIndexGroups | None:
    """The sparse-MLA index groups' decode buffers on one rank of pipeline stage ``stage``, vLLM 0.30+ (None where
    the release or the model has none).

    Read 2026-12 in the 0.30.0, 0.31.0 and 0.33.0 wheels (0.29.0 has no v1/attention/backends/mla/index_group.py):
    the model makes one ``SparseMLAIndexGroupBuilder`` over its top-k buffer with max_decode_rows R =
    ``get_sparse_mla_index_group_max_rows`` = min(max_num_batched_tokens, max_num_seqs x (1 + num_speculative_tokens))
    (models/deepseek_v32/nvidia/model.py DeepseekV32Model; deepseek_v2.py DeepseekV2Model the same), and every
    sparse-MLA impl (SparseMLACommonImpl, all the sparse backends) registers its layer in the constructor: a layer with
    an indexer, or the stage's first layer, starts a group holding ``physical_topk_indices`` (R + 1, index_topk) int32
    and ``valid_topk_counts`` (R + 1) int32; a GLM-5.2 "shared" layer joins the current group. Made while the model is
    built: in "Model loading took". Each MTP layer builds its own builder, so one more group per MTP layer: R rows
    on CUDA (nvidia/mtp.py passes the same max rows), max_num_batched_tokens rows elsewhere (deepseek_mtp.py passes
    no builder: the impl's default one, rows = the buffer's). On ROCm from 0.31.0 (amd/model.py, VLLM_CHANGES
    "dsa_rocm_layer_groups") no layer gets the model's builder: every DSA layer's impl makes its own, one group of
    max_num_batched_tokens rows per layer. ``cuda`` False means ROCm. Not modelled: 0.30.0's request_ids (R int32 a
    group, < 8 KiB), the HiSparse groups (--attention-config hisparse) and parallel drafting's doubled query length.
    bytes = groups x (block((R + 1) x index_topk x 4) + block((R + 1) x 4)), block = kvplan.vllm_alloc
    ``torch_block_bytes``.
    Worked number: GLM-5.2 (21 indexer layers of 78) at 8,192 batched tokens and 1,024 sequences, no speculation:
    R = 1,024; (1,025 x 2,048 x 4 = 8,396,800) + (1,025 x 4 = 4,100 -> 4,608) = 8,401,408 B a group, x 21 =
    176,429,568 B = 0.164 GiB a rank; GLM-5 (78 indexer layers): 655,309,824 B = 0.61 GiB."""
    from kvplan.vllm_alloc import torch_block_bytes

    topk = _dsa_index_topk(spec)
    if not topk or not vllm_has(vllm_version, "dsa_index_groups"):
        return None
    rows = min(max_num_batched_tokens, max_num_seqs * (1 + speculative_tokens))

    def group(r: int) -> int:
        return (torch_block_bytes((r + 1) * topk * DSA_TOPK_INDEX_BYTES)
                + torch_block_bytes((r + 1) * DSA_TOPK_INDEX_BYTES))

    mine = stage_layers(spec, layout.pp, stage, layout.pp_split)
    mtp_rows = rows if cuda else max_num_batched_tokens
    if not cuda and vllm_has(vllm_version, "dsa_rocm_layer_groups"):
        groups, rows = sum(layer.cache.kind == "mla_dsa" for layer in mine), max_num_batched_tokens
    else:
        owns = [bool(getattr(layer.cache, "index_head_dim", None)) for layer in mine]
        groups = sum(owns) + (0 if owns and owns[0] else 1)
    return DsaIndexGroups(groups, rows, group(rows), mtp_layers, mtp_rows, group(mtp_rows), topk)


# ----------------------------------------------------------------------------- MLA: 16-bit W_UK / W_UV beside a
# quantized kv_b_proj

def vllm_mla_dequant_bytes(spec: ModelSpec, layout: Layout, stage: int, weight_format: str | None,
                           act_b: int = 2) -> int:
    """The 16-bit copy of ``kv_b_proj`` an MLA layer keeps when the checkpoint quantizes that projection, one rank of
    pipeline stage ``stage`` (0 where ``kv_b_proj`` is 16-bit, as in Kimi-K2's int4 checkpoints, which quantize the
    experts only).

    vLLM has no quantized batched matmul for the absorbed up-projections ("we just store fp16/bf16 copies and perform
    the bmm's in 16-bit"): ``process_weights_after_loading`` dequantizes ``kv_b_proj`` (``get_and_maybe_dequant_weights``:
    an identity-matrix ``quant_method.apply`` or ``scaled_dequantize`` for block FP8, a new tensor; an unquantized
    layer returns its own weight, no copy) and keeps ``W_UV`` / ``W_UK_T`` as views of that one (kv_lora_rank, local
    heads x (qk_nope_head_dim + v_head_dim)) tensor in the model dtype, inside the "Model loading took" window.
    Read in the wheels: 0.10.0 - 0.15.x v1/attention/backends/mla/common.py ``MLACommonImpl.process_weights_after_
    loading``; 0.16.0 - 0.33.0 model_executor/layers/attention/mla_attention.py ``MLAAttention.process_weights_after_
    loading`` (+ layers/quantization/utils/quant_utils.py ``get_and_maybe_dequant_weights``); the ROCm aiter fp8 / fp4
    BMM paths re-quantize instead (not modeled). Local heads = num_attention_heads / TP (models/deepseek_v2.py
    num_local_heads).
    bytes = sum over this stage's MLA layers with a quantized kv_b_proj of kv_lora_rank x heads / tp x (qk_nope +
    v_head) x act_b.
    Worked number: DeepSeek-V3 / R1 (fp8 block) at TP 8: 512 x 16 x (128 + 128) x 2 B = 4,194,304 B a layer, x 61 =
    255,852,544 B = 0.238 GiB ("Model loading took 79.7390 GiB" on 0.11.2: kvplan 79.31 -> 79.55)."""
    from kvplan.weights import FLOAT_FORMATS, UNQUANTIZED, resolve_format

    if resolve_format(spec, weight_format)[0] in FLOAT_FORMATS:
        return 0
    total = 0
    for copies, cache, formats in mla_kv_b_groups(spec, layout.pp, stage, weight_format):
        if all(f in FLOAT_FORMATS or f == UNQUANTIZED for f in formats):
            continue
        heads = cache.num_attention_heads // layout.attn_tp
        total += copies * cache.kv_lora_rank * heads * (cache.qk_nope_head_dim + cache.v_head_dim) * act_b
    return total


def vllm_dsa_indexer_wk_bytes(spec: ModelSpec, layout: Layout, stage: int, weight_format: str | None,
                              vllm_version: str) -> int:
    """What vLLM 0.20+ adds over kvplan's pricing of a quantized DSA indexer ``wk``, one rank of stage ``stage``.

    From 0.20.0 (VLLM_CHANGES "dsa_indexer_wk_fused") the indexer fuses wk [index_head_dim, hidden] and weights_proj
    into one ``MergedColumnParallelLinear(quant_config=None)`` in the model dtype, replicated: an fp8 wk in the
    checkpoint is dequantized to bf16 while loading (models/deepseek_v2.py ``_try_load_fp8_indexer_wk``; the same
    in models/deepseek_v32/nvidia/attention.py, read in the 0.20.0, 0.26.0, 0.29.0 - 0.31.0 and 0.33.0 wheels), and
    --quantization leaves it unquantized. bytes = sum over this stage's layers whose wk is quantized of (wk at the
    16-bit base dtype - wk as kvplan prices it in its format). Not counted: the MTP layers' indexer.
    Worked number: DeepSeek-V3.2 (fp8 block 128) at 0.20: wk 128 x 7168 bf16 1,835,008 B - fp8 917,504 B - 56 fp32
    block scales 224 B = 917,280 B a layer, x 61 = 55,954,080 B = 0.052 GiB on every rank."""
    from kvplan.weights import FLOAT_FORMATS, UNQUANTIZED, base_dtype, component_bytes, component_format, \
        layer_groups, resolve_format

    if not vllm_has(vllm_version, "dsa_indexer_wk_fused"):
        return 0
    fmt, use_overrides = resolve_format(spec, weight_format)
    if fmt in FLOAT_FORMATS:
        return 0
    base = base_dtype(spec, fmt)
    parts = pp_partition(len(spec.layers), layout.pp, layout.pp_split)
    start = sum(parts[:stage])
    groups = (layer_groups(spec, start, start + parts[stage]) if use_overrides
              else [(layer, n, None) for layer, n in stage_distinct(spec, layout.pp, stage, layout.pp_split)])
    total = 0
    for layer, copies, mine in groups:
        wk = next((c for c in layer.attention if isinstance(c, Linear) and c.name == "indexer.wk"), None)
        if wk is None:
            continue
        f = component_format("attention", wk, fmt, mine)[0][0]
        if f not in FLOAT_FORMATS and f != UNQUANTIZED:
            total += copies * (component_bytes("attention", wk, UNQUANTIZED, base)
                               - component_bytes("attention", wk, f, base))
    return total


def mla_kv_b_groups(spec: ModelSpec, pp: int, stage: int, weight_format: str | None,
                    pp_split: tuple[int, ...] | None = None) -> list[tuple[int, object, tuple[str, ...]]]:
    """[(copies, MLA cache, kv_b_proj's formats)] over pipeline stage ``stage``'s MLA / DSA layers that have a
    ``kv_b_proj`` (identical layers once, with the checkpoint's per-layer overrides when it ships quantized).
    Worked example: DeepSeek-V3 (fp8-block) at PP 1 -> [(3, the dense layers' MLA cache, ("fp8-block",)), (58, the
    MoE layers', ("fp8-block",))]."""
    from kvplan.weights import component_format, layer_groups, resolve_format

    fmt, use_overrides = resolve_format(spec, weight_format)
    parts = pp_partition(len(spec.layers), pp, pp_split)
    start = sum(parts[:stage])
    groups = (layer_groups(spec, start, start + parts[stage]) if use_overrides
              else [(layer, n, None) for layer, n in stage_distinct(spec, pp, stage, pp_split)])
    out = []
    for layer, copies, mine in groups:
        cache = layer.cache
        if getattr(cache, "kind", None) not in ("mla", "mla_dsa"):
            continue
        kv_b = next((c for c in layer.attention if isinstance(c, Linear) and c.name == "kv_b_proj"), None)
        if kv_b is not None:
            out.append((copies, cache, tuple(f for f, _ in component_format("attention", kv_b, fmt, mine))))
    return out
