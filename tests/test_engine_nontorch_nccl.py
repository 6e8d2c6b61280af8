"""vLLM's non-torch memory at TP > 2, from vLLM's and NCCL's source (issue 11: the largest remaining pool misses).

Read 2026-12-01: vllm/distributed/device_communicators/{cuda_communicator,custom_all_reduce,symm_mem,all_reduce_utils,
pynccl}.py and vllm/env_override.py in the 0.10.1.1 - 0.33.0 wheels; github:NVIDIA/nccl src/transport/nvls.cc and
src/init.cc at v2.20.5, v2.26.2, v2.27.3 / .7, v2.28.3 / .9, v2.29.7, v2.30.7. NCCL per vLLM release: torch 2.9 and 2.10
(vLLM 0.12 - 0.19) pin nvidia-nccl-cu12 2.27.5, torch 2.11 (0.20 - 0.26) nvidia-nccl-cu13 2.28.9 (pip's resolver on the
torch wheels' metadata; the 0.26.0 GB200 log prints "vLLM is using nccl==2.28.9").

- NVSwitch: NCCL's NVLS buffers are mapped lazily (vLLM stopped forcing NCCL_CUMEM_ENABLE=0 in 0.10.2, so NCCL runs
  with cuMem and runtime connection), after vLLM's init snapshot, at the first all-reduce too large for custom /
  symmetric-memory all-reduce: tp x NVLS channels x 2 x (128 KiB x 8 steps) a rank (kvplan.engines.nccl_nvls_bytes).
- PCIe above two GPUs: nothing vLLM adds grows in the profile window. CustomAllreduce disables itself ("not supported
  on more than two PCIe-only GPUs", every release 0.11 - 0.33), SymmMemCommunicator only runs on capabilities 9.0 /
  10.x (SYMM_MEM_ALL_REDUCE_MAX_SIZES: not 8.9 / 12.0), FlashInfer's fusion pass needs capability 90 / 100, NVLS needs
  multicast, and pynccl's own warm-up all_reduce (pynccl.py, every release) connects, before the snapshot, the NCCL
  algorithm its 4 bytes pick (NCCL connects per algorithm at first use: group.cc ncclCollPreconnectFunc).
"""

from kvplan import load_preset
from kvplan.engines import (
    NCCL_NVLS_CHANNELS,
    VLLM_NCCL_NVLS_BYTES,
    VLLM_PROFILES,
    EngineConfig,
    gpu_arch,
    gpu_multicast,
    nccl_nvls_bytes,
    non_torch_bytes,
)
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.units import GiB, MiB


def nt_gib(version: str, gpu_name: str, tp: int) -> float:
    gpu = get_gpu(gpu_name)
    b, _ = non_torch_bytes(VLLM_PROFILES[version], EngineConfig(vllm_version=version), tp, 1,
                           "NVLINK" in gpu.interconnect.upper(), gpu_multicast(gpu.name, gpu.interconnect), 1,
                           gpu_arch(gpu.name))
    return b / GiB


def test_nvls_buffers_from_nccl_source_scale_with_ranks():
    # nvls.cc ncclNvlsBufferSetup (2.21+): buffSize = NVLS_CHUNKSIZE 128 KiB x NCCL_STEPS 8 = 1 MiB, nvlsPerRankSize =
    # nChannels x 2 x buffSize, nvlsTotalSize = x nHeads (the node's ranks), all of it mapped on every rank;
    # NVLS_NCHANNELS_SM90 16 -> 4 x 16 x 2 MiB = 128 MiB at TP 4, 256 MiB at TP 8
    assert NCCL_NVLS_CHANNELS["sm90"] == 16
    assert nccl_nvls_bytes(4, "sm90") == 4 * 16 * 2 * 128 * 1024 * 8 == 128 * MiB
    assert nccl_nvls_bytes(8, "sm90") == 256 * MiB
    # the source figure is the one the five v0.19.0 TP 4 H100 logs were fitted to (2.17 mean - 2.05 at TP 2 = 0.12)
    assert abs(nccl_nvls_bytes(4, "sm90") / GiB - 0.12) < 0.006
    # Blackwell (NVLS_NCHANNELS_SM100_NVL 24 -> 0.19 / 0.38 GiB) keeps the Hopper TP-4 fit: the one Blackwell log,
    # GB200 TP 4 at 0.26.0 ("0.95 GiB for non-torch memory"), is already 0.22 under kvplan's 1.17
    assert nccl_nvls_bytes(8, "sm100") == nccl_nvls_bytes(4, None) == VLLM_NCCL_NVLS_BYTES
    assert 8 * NCCL_NVLS_CHANNELS["sm100"] * 2 * MiB / GiB == 0.375


def test_tp8_h200_non_torch_term_carries_the_nvls_buffers():
    # Kimi-K2-Thinking recipe (vLLM nightly 11-06, profile 0.11), 8 x H200: non-torch 0.55 + 0.25 = 0.80 (0.67 with the
    # TP-4 fit); the pool 47.97 GiB vs the logged 46.80 (+1.17, was +1.30: the strict xfail in
    # tests/test_vllm_layouts_quant.py stays, a TP-8 non-torch of ~1.97 would close it)
    p = plan(load_preset("kimi-k2.5"), get_gpu("H200"), EngineConfig(vllm_version="0.11", language_model_only=True),
             Layout(tp=8))
    t = next(t for t in p.ranks[0].terms if t.name == "non-torch memory")
    assert t.bytes == VLLM_PROFILES["0.11"].non_torch_tp + 256 * MiB
    assert "8 x 16 channels x 2 MiB, nvls.cc" in t.source
    assert round(p.ranks[0].kv_pool_bytes / GiB, 2) == 47.97


def test_pcie_above_two_gpus_stays_at_the_single_gpu_base():
    # 4 x RTX PRO 6000 (sm120) at 0.27 and 4 x L40S (sm89) at 0.24: no custom all-reduce, no symmetric memory, no
    # FlashInfer workspace, no NVLS -> the 0.18+ single-GPU base, 0.25 GiB; 0.11 - 0.16 0.19 (the MiniMax-M2.5 4 x RTX
    # PRO 6000 log fits it within 0.07 GiB, tests/test_engine_logs_found.py; vllm#29070's 4 x A30 logs 0.09, the 0.10.2
    # 8 x L40S TP 4 log 0.21)
    single = VLLM_PROFILES["0.27"].non_torch_single / GiB
    assert nt_gib("0.27", "RTX-PRO-6000", 4) == nt_gib("0.24", "L40S", 4) == single == 0.25
    assert abs(nt_gib("0.16", "RTX-PRO-6000", 4) - 0.19) < 1e-9
