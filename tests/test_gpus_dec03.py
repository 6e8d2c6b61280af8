"""The 2026-12-03 catalog additions (A40, H200 NVL, the RTX PRO Blackwell line below the 6000) and every arch rule
that keys on a catalog name, checked against each card's compute capability.

Compute capabilities: NVIDIA's CUDA GPU table (developer.nvidia.com/cuda-gpus: A100 8.0; A10 / A40 / RTX A6000 /
GeForce RTX 30 8.6; L4 / L40S / RTX 6000 Ada / GeForce RTX 40 8.9; H100 / H200 9.0; B200 / GB200 10.0; B300 / GB300
10.3; GeForce RTX 50 / RTX PRO Blackwell 12.0), and for the new cards the public logs cited in kvplan.gpus (the RTX PRO
4500's 'compute capability 12.0', index file id 60340131563). AMD and Intel parts have none (None here).
"""

import pytest

from kvplan.engines import gpu_arch, gpu_sm120, vllm_mla_block_size
from kvplan.gpus import GIB, GPU_CATALOG, get_gpu
from kvplan.plan import _ADA_FP8_GPUS
from kvplan.prices import DEFAULT_PRICES
from kvplan.sglang import gpu_capacity_mib, sm_major_at_least_10, sm_major_is_10, sm_major_is_12
from kvplan.vllm_layouts import fp8_marlin_gpu, quant_platform

CC = {
    "A100-40GB": 8.0, "A100-80GB": 8.0, "A100-80GB-PCIe": 8.0, "A10": 8.6, "A10G": 8.6, "A40": 8.6,
    "L4": 8.9, "L40S": 8.9, "L20": 8.9,
    "H100-SXM": 9.0, "H100-PCIe": 9.0, "H100-NVL": 9.0, "H200": 9.0, "H200-NVL": 9.0, "H20": 9.0,
    "B200": 10.0, "GB200": 10.0, "B300": 10.3, "GB300": 10.3,
    "MI300X": None, "MI325X": None, "MI355X": None, "Gaudi3": None,
    "RTX-A6000": 8.6, "RTX-6000-Ada": 8.9, "RTX-PRO-6000": 12.0, "RTX-PRO-6000-Max-Q": 12.0, "RTX-PRO-5000": 12.0,
    "RTX-PRO-5000-72GB": 12.0, "RTX-PRO-4500": 12.0, "RTX-PRO-4000": 12.0,
    "RTX-3090": 8.6, "RTX-4090": 8.9, "RTX-5090": 12.0,
    "RTX-4070": 8.9, "RTX-4070-SUPER": 8.9, "RTX-4070-Ti": 8.9, "RTX-4070-Ti-SUPER": 8.9, "RTX-4080": 8.9,
    "RTX-4080-SUPER": 8.9, "RTX-5070": 12.0, "RTX-5070-Ti": 12.0, "RTX-5080": 12.0,
}


def test_the_capability_table_covers_the_catalog():
    # 36 GPUs before 2026-12-03 + A40, H200-NVL and 5 RTX PRO Blackwell cards = 43
    assert set(CC) == set(GPU_CATALOG) and len(GPU_CATALOG) == 36 + 7 == 43


@pytest.mark.parametrize("name", sorted(CC))
def test_every_name_keyed_arch_rule_agrees_with_the_capability(name):
    cc = CC[name]
    major = int(cc) if cc is not None else None
    gpu = GPU_CATALOG[name]
    assert gpu_arch(name) == {9: "sm90", 10: "sm100"}.get(major, "other")
    assert gpu_sm120(name) is sm_major_is_12(name) is (cc == 12.0)
    assert sm_major_is_10(name) is (major == 10)
    assert sm_major_at_least_10(name) is (major is not None and major >= 10)
    # FP8 tensor math from SM 8.9: below it vLLM runs FP8 weights on Marlin and the catalog holds no FP8 rate
    assert fp8_marlin_gpu(name) is (cc is not None and cc < 8.9)
    assert (gpu.fp8_dense_flops is None) is (cc is not None and cc < 8.9)
    expect = ({9: "sm90", 10: "sm100", 12: "sm120"}.get(major, "cuda") if cc is not None
              else "hpu" if name == "Gaudi3" else "rocm")
    assert quant_platform(name) == expect
    # the fp8 MoE oracle's Ada list (plan.vllm_fp8_moe_backend): the "cuda" cards with FP8 math, SM 8.9
    assert name.upper().startswith(_ADA_FP8_GPUS) is (cc == 8.9)
    # vLLM's forced MLA block through 0.14: FlashMLA 64 on Hopper, CUTLASS MLA 128 on SM 10.x, 16 elsewhere
    assert vllm_mla_block_size(name) == {9: 64, 10: 128}.get(major, 16)


# name, exposed bytes with their arithmetic, marketed GB
NEW = [
    ("A40", round(44.42 * GIB), 48),  # the L40S's 46068-MiB ECC-on total: 44.42 GiB = 47,695,611,822 B
    ("H200-NVL", round(139.81 * GIB), 141),  # the H200 SXM's 143771-MiB total: 139.81 GiB
    ("RTX-PRO-6000-Max-Q", round(94.97 * GIB), 96),  # the RTX PRO 6000's 97887-MiB board: 94.97 GiB
    ("RTX-PRO-5000", round(47.49 * GIB), 48),  # 48 x 94.97 / 96 = 47.485 -> 47.49 GiB
    ("RTX-PRO-5000-72GB", round(71.23 * GIB), 72),  # 72 x 94.97 / 96 = 71.2275 -> 71.23 GiB
    ("RTX-PRO-4500", (32_623 - 494) * 2**20, 32),  # nvidia-smi 32623 - 494 = 32,129 MiB = 31.376 GiB
    ("RTX-PRO-4000", (24_467 - 494) * 2**20, 24),  # nvidia-smi 24467 - 494 = 23,973 MiB = 23.411 GiB
]


@pytest.mark.parametrize("name, exposed, marketed", NEW)
def test_new_cards_exposed_memory_and_basis(name, exposed, marketed):
    gpu = GPU_CATALOG[name]
    assert gpu.memory_bytes == exposed and gpu.marketed_memory_gb == marketed
    assert gpu.memory_basis == "estimated" and "estimated" in gpu.source  # no log prints their totals
    assert name in DEFAULT_PRICES


def test_new_cards_exact_figures():
    g = GPU_CATALOG
    assert g["A40"].memory_bytes == 47_695_611_822 and g["RTX-PRO-4000"].memory_bytes == 25_137_512_448
    assert g["RTX-PRO-4500"].memory_bytes == 33_689_698_304  # 32,129 x 1,048,576
    # A40 datasheet: 696 GB/s, BF16 299.4 TF* sparse -> 149.7 dense, no FP8
    assert (g["A40"].bandwidth_bytes_per_s, g["A40"].bf16_dense_flops) == (696 * 10**9, 149_700 * 10**9)
    # H200 NVL datasheet: 4.8 TB/s, 1,671 / 3,341 TF* sparse -> 835.5 / 1,670.5 dense
    assert g["H200-NVL"].bf16_dense_flops == 835_500 * 10**9 and g["H200-NVL"].fp8_dense_flops == 1_670_500 * 10**9
    # RTX PRO: SM x boost x 1024 dense BF16 FLOP a clock (the RTX PRO 6000's 188 x 2.617 x 1024 = 503.8 TF)
    assert g["RTX-PRO-4000"].bf16_dense_flops == 187_600 * 10**9  # 70 x 2.617 x 1024 = 187.58
    assert g["RTX-PRO-4500"].bf16_dense_flops == 219_700 * 10**9  # 82 x 2.617 x 1024 = 219.74
    assert g["RTX-PRO-5000"].bf16_dense_flops == 267_700 * 10**9  # 110 x 2.377 x 1024 = 267.74
    assert g["RTX-PRO-6000-Max-Q"].bf16_dense_flops == 440_500 * 10**9  # 188 x 2.288 x 1024 = 440.47
    assert g["RTX-PRO-4000"].fp8_dense_flops == 375_200 * 10**9  # twice 187.6
    assert [g[n].bandwidth_bytes_per_s // 10**9 for n in ("RTX-PRO-4000", "RTX-PRO-4500", "RTX-PRO-5000",
                                                          "RTX-PRO-5000-72GB", "RTX-PRO-6000-Max-Q")] == \
        [672, 896, 1344, 1344, 1792]


@pytest.mark.parametrize("alias, key", [
    ("NVIDIA RTX PRO 4000 Blackwell", "RTX-PRO-4000"), ("NVIDIA RTX PRO 4500 Blackwell", "RTX-PRO-4500"),
    ("NVIDIA RTX PRO 5000 Blackwell", "RTX-PRO-5000"), ("NVIDIA RTX PRO 5000 72GB Blackwell", "RTX-PRO-5000-72GB"),
    ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "RTX-PRO-6000-Max-Q"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX-PRO-6000"),  # same 96 GB board: kept on the 6000 row
    ("NVIDIA H200 NVL", "H200-NVL"), ("NVIDIA A40", "A40"), ("rtx_pro_4000", "RTX-PRO-4000")])
def test_device_names_resolve(alias, key):
    assert get_gpu(alias) is GPU_CATALOG[key]


def test_sglang_reads_the_logged_nvidia_smi_totals():
    # nvidia-smi memory.total of the public tables cited in kvplan.sglang.NVIDIA_SMI_MIB
    for name, mib in (("A40", 46068), ("H200-NVL", 143771), ("RTX-PRO-4000", 24467), ("RTX-PRO-4500", 32623)):
        g = GPU_CATALOG[name]
        assert gpu_capacity_mib(name, g.vendor, g.memory_bytes)[0] == mib


@pytest.mark.parametrize("name, gb, gb_s", [
    ("RTX-PRO-4000", 24, 672), ("RTX-PRO-4500", 32, 896), ("RTX-PRO-5000", 48, 1344), ("RTX-PRO-5000-72GB", 72, 1344)])
def test_rtx_pro_price_estimates_follow_their_stated_rule(name, gb, gb_s):
    # $1.45 x (GB/96 + GB/s/1792) / 2: 4000 0.453 -> 0.45, 4500 0.604 -> 0.60, 5000 0.906 -> 0.91, 72 GB 1.0875 -> 1.09
    p = DEFAULT_PRICES[name]
    assert p.basis == "estimate" and abs(p.usd_per_gpu_hour - 1.45 * (gb / 96 + gb_s / 1792) / 2) <= 0.005
    assert DEFAULT_PRICES["H200-NVL"].usd_per_gpu_hour == round(4.59 * 3.19 / 3.99, 2) == 3.67
    assert DEFAULT_PRICES["A40"].usd_per_gpu_hour == DEFAULT_PRICES["RTX-A6000"].usd_per_gpu_hour == 0.55
