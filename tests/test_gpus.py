"""The GPU catalog: exposed memory, units, lookup and custom GPUs."""

import math
import re

import pytest
from pydantic import ValidationError

from kvplan.errors import KvplanError, PlanInputError
from kvplan.gpus import GPU_CATALOG, GpuSpec, custom_gpu, get_gpu

REQUIRED = [
    "A10", "A10G", "L4", "L40S", "A100-40GB", "A100-80GB", "A100-80GB-PCIe", "H100-SXM",
    "H100-PCIe", "H100-NVL", "H200", "H20", "B200", "MI300X", "MI325X", "RTX-3090",
    "RTX-4090", "RTX-5090", "RTX-A6000", "RTX-6000-Ada",
]
ALL = list(GPU_CATALOG.values())


def test_catalog_size_and_required_entries():
    assert len(GPU_CATALOG) >= 16
    missing = [n for n in REQUIRED if n not in GPU_CATALOG]
    assert not missing


def test_keys_match_names_unique_and_cli_safe():
    names = [g.name for g in ALL]
    assert list(GPU_CATALOG) == names
    assert len({n.lower() for n in names}) == len(names)
    for n in names:
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.-]*", n), n


def test_h100_sxm_exposes_79_19_gib():
    h100 = GPU_CATALOG["H100-SXM"]
    assert f"{h100.memory_gib:.2f}" == "79.19"
    assert h100.memory_basis == "measured"
    assert h100.marketed_memory_gb == 80


@pytest.mark.parametrize(
    "name, gib",
    [("A100-80GB", "79.14"), ("A100-40GB", "39.39"), ("H200", "139.81"), ("B200", "178.35"),
     ("L4", "22.03"), ("MI300X", "191.98"), ("RTX-4090", "23.64"), ("RTX-5090", "31.36")],
)
def test_measured_figures_round_trip_to_the_logged_two_decimals(name, gib):
    assert f"{GPU_CATALOG[name].memory_gib:.2f}" == gib


def test_mi300x_is_the_exact_rocminfo_pool():
    assert GPU_CATALOG["MI300X"].memory_bytes == 201_310_208 * 1024 == 206_141_652_992


@pytest.mark.parametrize("gpu", ALL, ids=lambda g: g.name)
def test_exposed_below_marketed_and_above_90_percent(gpu):
    # Marketed "GB" is compared as GiB: vendors size HBM/GDDR stacks in binary units.
    assert 0.9 * gpu.marketed_memory_gb < gpu.memory_gib < gpu.marketed_memory_gb


@pytest.mark.parametrize("gpu", ALL, ids=lambda g: g.name)
def test_fields_are_sane(gpu):
    assert isinstance(gpu.memory_bytes, int) and gpu.memory_bytes > 0
    assert isinstance(gpu.bandwidth_bytes_per_s, int)
    # Bandwidth in bytes/s: 100 GB/s .. 20 TB/s catches TB/s-vs-GB/s slips.
    assert 1e11 <= gpu.bandwidth_bytes_per_s <= 2e13
    # Dense BF16 FLOP/s: 10 TFLOPS .. 10 PFLOPS.
    assert isinstance(gpu.bf16_dense_flops, int)
    assert 1e13 <= gpu.bf16_dense_flops <= 1e16
    assert gpu.gpus_per_node in (1, 2, 4, 8)
    assert gpu.vendor in ("NVIDIA", "AMD", "Intel")
    assert gpu.memory_basis in ("measured", "estimated")
    assert gpu.interconnect.strip()
    assert len(gpu.source) > 40


def test_units_spot_checks():
    h100 = GPU_CATALOG["H100-SXM"]
    assert h100.bandwidth_bytes_per_s == 3_350_000_000_000
    assert h100.bf16_dense_flops == 989_400_000_000_000  # dense, not the 1,979 TF sparse figure
    assert GPU_CATALOG["A100-80GB"].bf16_dense_flops == 312 * 10**12
    assert GPU_CATALOG["RTX-4090"].bf16_dense_flops == 165_200_000_000_000  # FP32 accumulate
    assert GPU_CATALOG["RTX-3090"].bf16_dense_flops == 71 * 10**12


def test_estimated_entries_say_so_in_source():
    for gpu in ALL:
        if gpu.memory_basis == "estimated":
            assert "estimated" in gpu.source


def test_catalog_order_is_browsable():
    names = list(GPU_CATALOG)
    assert names.index("A100-80GB") < names.index("H100-SXM") < names.index("B200")
    assert names.index("B200") < names.index("RTX-A6000") < names.index("RTX-3090")


def test_specs_are_frozen_and_strict():
    h100 = GPU_CATALOG["H100-SXM"]
    with pytest.raises(ValidationError):
        h100.memory_bytes = 1
    with pytest.raises(ValidationError):
        GpuSpec(**h100.model_dump(), extra_field=1)
    with pytest.raises(ValidationError):
        GpuSpec(**(h100.model_dump() | {"name": "bad name"}))
    with pytest.raises(ValidationError):
        GpuSpec(**(h100.model_dump() | {"memory_basis": "guessed"}))


@pytest.mark.parametrize(
    "alias, key",
    [("h100", "H100-SXM"), ("H100-80GB", "H100-SXM"), ("A10G", "A10G"), ("a10g", "A10G"),
     ("a100-80gb", "A100-80GB"), ("A100-40GB", "A100-40GB"), ("h100-sxm", "H100-SXM"),
     ("NVIDIA H100 80GB HBM3", "H100-SXM"), ("NVIDIA A100-SXM4-80GB", "A100-80GB"),
     ("NVIDIA A100 80GB PCIe", "A100-80GB-PCIe"), ("NVIDIA GeForce RTX 4090", "RTX-4090"),
     ("rtx 3090", "RTX-3090"), ("AMD Instinct MI300X", "MI300X"), ("  l40s ", "L40S"),
     ("NVIDIA RTX 6000 Ada Generation", "RTX-6000-Ada"), ("rtx_pro_6000", "RTX-PRO-6000"),
     ("mi325x", "MI325X"), ("h200", "H200"), ("B200", "B200")],
)
def test_aliases_resolve(alias, key):
    assert get_gpu(alias) is GPU_CATALOG[key]


def test_every_key_resolves_case_insensitively():
    for name, gpu in GPU_CATALOG.items():
        assert get_gpu(name) is gpu
        assert get_gpu(name.lower()) is gpu
        assert get_gpu(name.upper()) is gpu


@pytest.mark.parametrize("bad", ["H101", "", "tpu-v5e", "h100-sxm-160gb"])
def test_unknown_gpu_raises_with_valid_names(bad):
    with pytest.raises(PlanInputError) as ei:
        get_gpu(bad)
    err = ei.value
    assert isinstance(err, KvplanError) and isinstance(err, ValueError)
    assert err.field == "gpu"
    assert str(err).startswith("gpu: ")
    for name in GPU_CATALOG:
        assert name in err.message


def test_custom_gpu_builds_a_spec():
    g = custom_gpu(47.5, 1.2, 300, name="my-card.v2")
    assert g.vendor == "custom" and g.name == "my-card.v2"
    assert g.memory_bytes == round(47.5 * 2**30)
    assert math.isclose(g.memory_gib, 47.5)
    assert g.bandwidth_bytes_per_s == 1_200_000_000_000
    assert g.bf16_dense_flops == 300 * 10**12
    assert g.memory_basis == "estimated"
    assert custom_gpu(80, 3, 1000).name == "custom"


@pytest.mark.parametrize("field", ["memory_gib", "bandwidth_tb_s", "bf16_tflops"])
@pytest.mark.parametrize("bad", [0, -1, -0.5, float("nan"), float("inf"), float("-inf"),
                                 "80", None, True])
def test_custom_gpu_rejects_bad_numbers_naming_the_field(field, bad):
    args = {"memory_gib": 80.0, "bandwidth_tb_s": 3.35, "bf16_tflops": 989.0, field: bad}
    with pytest.raises(PlanInputError) as ei:
        custom_gpu(**args)
    assert ei.value.field == field
    assert str(ei.value).startswith(f"{field}: ")


def test_custom_gpu_rejects_unsafe_name_and_bad_node_size():
    with pytest.raises(PlanInputError) as ei:
        custom_gpu(80, 3, 1000, name="my card")
    assert ei.value.field == "name"
    with pytest.raises(PlanInputError) as ei:
        custom_gpu(80, 3, 1000, gpus_per_node=0)
    assert ei.value.field == "gpus_per_node"
    with pytest.raises(PlanInputError) as ei:
        custom_gpu(1e-12, 3, 1000)
    assert ei.value.field == "memory_gib"
