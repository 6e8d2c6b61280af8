"""Engine profiles: how vLLM, SGLang and a hand-typed budget turn device memory into a KV pool.

Every number that is a default of an engine is a named constant with its source (file in the
engine's own tree, version read). Estimates are labelled ``estimated`` wherever they appear.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kvplan.units import GiB, MiB

# vLLM 0.33 vllm/config/cache.py CacheConfig.gpu_memory_utilization (0.90 up to 0.11).
VLLM_GPU_MEMORY_UTILIZATION = {"0.33": 0.92, "0.11": 0.90}
# vllm/config/cache.py DEFAULT_BLOCK_SIZE; FlashMLA backends prefer 64 (get_preferred_block_size).
VLLM_BLOCK_SIZE = 16
VLLM_MLA_BLOCK_SIZE = 64
# vllm/engine/arg_utils.py get_batch_defaults (vllm serve): by device memory.
VLLM_BATCH_DEFAULTS = ((160 * GiB, 16384, 1024), (70 * GiB, 8192, 1024), (0, 2048, 256))
# Non-torch memory growth after vLLM's init snapshot: 0.16 GiB in the V0 logs of an H100
# (gateway-api-inference-extension PR #550; mellea PR #416). Estimate.
VLLM_NON_TORCH_BYTES = int(0.16 * GiB)
# CUDA-graph memory vLLM >= 0.21 subtracts (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1): logged
# 0.17-0.36 GiB on public runs (club-3090 #127, gpustack/runner PR #251). Estimate.
VLLM_CUDA_GRAPH_BYTES = int(0.3 * GiB)
# SGLang: memory the CUDA context and NCCL take before weights load (outside its budget). Estimate.
SGLANG_CONTEXT_BYTES = int(0.5 * GiB)


class EngineConfig(BaseModel):
    """Serving-engine knobs, named as vLLM's flags (SGLang and custom take the ones they use)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    engine: Literal["vllm", "sglang", "custom"] = "vllm"
    vllm_version: Literal["0.33", "0.11"] = "0.33"
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    block_size: int | None = Field(default=None, ge=1, le=65536)
    kv_cache_dtype: str = "auto"
    weight_format: str | None = None
    max_model_len: int | None = Field(default=None, ge=1, le=100_000_000)
    max_num_seqs: int | None = Field(default=None, ge=1, le=1_000_000)
    max_num_batched_tokens: int | None = Field(default=None, ge=1, le=100_000_000)
    kv_cache_memory_bytes: int | None = Field(default=None, ge=0)
    enforce_eager: bool = False
    mem_fraction_static: float | None = Field(default=None, gt=0, le=1)
    runtime_gib: float = Field(default=2.0, ge=0, le=100_000)
    headroom_gib: float = Field(default=2.0, ge=0, le=100_000)
    activation_bytes: int | None = Field(default=None, ge=0)  # measured override of the estimate
    weights_bytes: int | None = Field(default=None, ge=0)  # measured "Model loading took X" override


def batch_defaults(device_bytes: int, engine: EngineConfig) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) as ``vllm serve`` picks them for this device."""
    for floor, tokens, seqs in VLLM_BATCH_DEFAULTS:
        if device_bytes >= floor:
            return (engine.max_num_batched_tokens or tokens, engine.max_num_seqs or seqs)
    raise AssertionError("unreachable")


def sglang_mem_fraction_static(device_bytes: int, tp: int, pp: int, mla: bool) -> tuple[float, int]:
    """SGLang's default ``mem_fraction_static`` and its reserved MiB (sglang 0.5.23 memory_hook.py).

    reserved = 512 + max(chunked_prefill, 2048) x 1.5 + tp x pp / 8 x 1024 + decode_bs x 2
               + prefill_graphs x 8 (+1536 for MLA), at least 10240 above 60 GiB.
    Worked number: H100 (81559 MiB), TP1 -> 13904 MiB reserved -> 0.830.
    """
    mib = device_bytes // MiB
    gib = device_bytes / GiB
    tiers = ((20, 2048, 8, 8), (35, 4096, 48, 160), (60, 4096, 32, 160), (90, 8192, 256, 512),
             (160, 8192, 256, 512), (float("inf"), 16384, 512, 512))
    for limit, chunk, bs, bs_tp4 in tiers:
        if gib < limit:
            break
    decode_bs = bs_tp4 if tp >= 4 else bs
    prefill_graphs = len([s for s in _sglang_prefill_graph_sizes() if s <= chunk])
    reserved = 512 + max(chunk, 2048) * 1.5 + tp * pp / 8 * 1024 + decode_bs * 2 + prefill_graphs * 8
    reserved += 1536 if mla else 0
    if gib > 60:
        reserved = max(reserved, 10240)
    return round((mib - reserved) / mib, 3), int(reserved)


def _sglang_prefill_graph_sizes() -> list[int]:
    sizes = list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32))
    sizes += list(range(576, 1025, 64)) + list(range(1280, 4097, 256)) + list(range(4608, 65537, 512))
    return sizes
