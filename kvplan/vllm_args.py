"""A ``vllm serve ...`` command line -> the kvplan settings those flags mean. Pure stdlib (``shlex``).

Accepts a whole command (``vllm serve MODEL --flags``, ``python -m vllm.entrypoints.openai.api_server
--model MODEL ...``, ``docker run ... vllm/vllm-openai:TAG --model MODEL ...``, with ``VAR=value``
prefixes and ``\\`` line continuations) or the flags alone. Flag names follow vLLM 0.33
(``vllm/engine/arg_utils.py``): ``--max_model_len`` and ``--max-model-len=8192`` are read as vLLM
reads them, and sizes accept vLLM's human-readable ints (``32k`` = 32,000, ``32K`` = 32,768).

Every option of ``vllm serve`` in vLLM 0.10.2, 0.11 and 0.33 (``kvplan.vllm_cli_flags``, listed from vLLM's own
parser) is read with its arity: a switch (``--disable-log-requests``, ``--no-async-scheduling``) never takes the
next word, a value flag always does (``--flag value`` or ``--flag=value``), a list flag (``--served-model-name a
b``) takes the words up to the next flag. Nothing unknown is fatal: flags no vLLM release lists are returned in
``unknown``; vLLM flags with no effect on memory (``--port``) in ``ignored``; flags that change memory in ways
kvplan does not model (``--cpu-offload-gb``) in ``notes`` ("not modeled" / "read, not planned: why"). A bad
*value* for a flag kvplan plans with, a switch given a value, or a value flag given none raises ``PlanInputError``
naming the flag.

Multimodal flags are kept as vLLM reads them and resolved with the model by kvplan.vllm_mm: --limit-mm-per-prompt
(JSON, the dotted --limit-mm-per-prompt.image 0, or the pre-0.10 image=0,video=0) per modality in ``mm_limits``
(a modality not named stays at vLLM's 999; '{"image": 0, "audio": 0}' leaves video on), --mm-processor-kwargs'
Qwen-VL pixel limits in ``mm_processor_kwargs`` (other keys refused), VLLM_USE_V2_MODEL_RUNNER=0 / 1 in
``model_runner``.

Worked example: ``vllm serve meta-llama/Llama-3.1-70B -tp 4 --max-model-len 32k`` ->
model 'meta-llama/Llama-3.1-70B', tensor_parallel_size 4, max_model_len 32000.
"""

import json
import math
import re
import shlex
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic import BaseModel, ConfigDict

from kvplan.drafter import DraftSpec
from kvplan.errors import PlanInputError
from kvplan.paging import check_block_size
from kvplan.vllm_cli_flags import VLLM_SERVE_FLAGS

MAX_COMMAND_CHARS = 20_000
MAX_PARALLEL = 4096

_DECIMAL_SUFFIX = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY_SUFFIX = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_HUMAN_INT = re.compile(r"^(\d+(?:\.\d+)?)([kKmMgGtT])$")

# --kv-cache-dtype values (vllm/config/cache.py CacheDType) -> kvplan KV dtype names.
_KV_DTYPES = {
    "auto": "auto", "bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "half": "fp16", "fp16": "fp16",
    "float32": "fp32", "float": "fp32", "fp32": "fp32",
    "fp8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "fp8_inc": "fp8",
}
# --dtype values -> weight format of an unquantized checkpoint (and the KV dtype 'auto' follows it).
_DTYPES = {"half": "fp16", "float16": "fp16", "bfloat16": "bf16", "float": "fp32", "float32": "fp32"}
# --quantization methods whose format comes from the checkpoint's own quantization_config.
_CHECKPOINT_QUANT = {"awq", "awq_marlin", "gptq", "gptq_marlin", "compressed-tensors", "mxfp4", "modelopt",
                     "modelopt_fp4", "marlin"}

# vLLM's short options -> the long option they alias (same argparse dest; kvplan.vllm_cli_flags)
_ALIASES = {"-tp": "--tensor-parallel-size", "-pp": "--pipeline-parallel-size", "-dp": "--data-parallel-size",
            "-q": "--quantization", "-O": "--compilation-config", "-dcp": "--decode-context-parallel-size",
            "-ep": "--enable-expert-parallel", "-sc": "--speculative-config", "-cc": "--compilation-config",
            "-ac": "--attention-config", "-asc": "--api-server-count", "-dc": "--diffusion-config",
            "-dpa": "--data-parallel-address", "-dpb": "--data-parallel-backend", "-dpe": "--data-parallel-external-lb",
            "-dph": "--data-parallel-hybrid-lb", "-dpl": "--data-parallel-size-local",
            "-dpm": "--data-parallel-multi-port-external-lb", "-dpn": "--data-parallel-rank",
            "-dpp": "--data-parallel-rpc-port", "-dpr": "--data-parallel-start-rank", "-n": "--nnodes",
            "-pcp": "--prefill-context-parallel-size", "-r": "--node-rank"}

# vLLM flags that take a value but do not change the memory plan.
_IGNORED_VALUE = {
    "--host", "--port", "--served-model-name", "--api-key", "--tokenizer", "--revision", "--tokenizer-revision",
    "--code-revision", "--download-dir", "--load-format", "--seed", "--uvicorn-log-level", "--chat-template",
    "--tool-call-parser", "--reasoning-parser", "--distributed-executor-backend", "--max-logprobs",
    "--tokenizer-mode", "--config-format", "--generation-config", "--override-generation-config",
    "--allowed-origins", "--allowed-methods", "--allowed-headers", "--root-path", "--ssl-keyfile",
    "--ssl-certfile", "--response-role", "--hf-token", "--worker-cls", "--log-config-file", "--middleware",
    "--max-log-len", "--swap-space", "--scheduling-policy",
    "--prefix-caching-hash-algo", "--api-server-count",
    # request-path and placement flags (vLLM 0.33 arg_utils.py groups ModelConfig / SchedulerConfig /
    # ParallelConfig / VllmConfig): they shape requests or processes, not the GPU memory of one rank
    "--structured-outputs-config", "--reasoning-config", "--kv-events-config", "--profiler-config",
    "--logits-processors", "--logits-processor-pattern", "--io-processor-plugin", "--logprobs-mode",
    "--hf-config-path", "--allowed-local-media-path", "--allowed-media-domains", "--renderer-num-workers",
    "--max-num-queued-reqs", "--max-num-queued-tokens", "--stream-interval", "--scheduler-cls",
    "--long-prefill-token-threshold", "--max-num-partial-prefills", "--max-long-partial-prefills",
    "--prefill-schedule-interval", "--master-addr", "--master-port", "--nnodes", "--node-rank",
    "--data-parallel-address", "--data-parallel-rpc-port", "--data-parallel-rank", "--data-parallel-start-rank",
    "--data-parallel-backend", "--data-parallel-size-local", "--worker-extension-cls",
    "--max-parallel-loading-workers", "--distributed-timeout-seconds", "--cpu-distributed-timeout-seconds",
    "--dp-sync-interval", "--device-ids", "--numa-bind-nodes", "--numa-bind-cpus",
    "--mamba-cache-philox-rounds",
}
# vLLM on/off flags that do not change the memory plan.
_IGNORED_SWITCH = {
    "--trust-remote-code", "--enable-chunked-prefill",
    "--no-enable-chunked-prefill", "--disable-log-stats", "--enable-log-requests", "--disable-log-requests",
    "--enable-auto-tool-choice", "--disable-frontend-multiprocessing",
    "--disable-fastapi-docs", "--enable-request-id-headers", "--disable-uvicorn-access-log",
    "--enable-prompt-tokens-details", "--enable-force-include-usage", "--skip-tokenizer-init",
    "--no-trust-remote-code", "--disable-chunked-prefill", "--enable-chunked-mm-input", "--disable-chunked-mm-input",
    "--data-parallel-external-lb", "--data-parallel-hybrid-lb", "--data-parallel-multi-port-external-lb",
    "--headless", "--ray-workers-use-nsight", "--numa-bind", "--eplb-log-balancedness",
}
# Flags vLLM reads that change memory and that kvplan reads but does not plan: EngineConfig has no field for them.
# flag -> why (shown as "FLAG VALUE: read, not planned: why"). Value flags unless in _READ_NOT_PLANNED_SWITCHES.
_READ_NOT_PLANNED = {
    "--mamba-cache-dtype": "the recurrent (conv + SSM) state dtype; kvplan plans the state in the dtype the "
                           "config names, else the model dtype (vLLM's 'auto')",
    "--mamba-ssm-cache-dtype": "the SSM state dtype; kvplan plans the state in the dtype the config names "
                               "(mamba_ssm_cache_dtype), else the model dtype (vLLM's 'auto')",
    "--hf-overrides": "not planned: changes the model config (edit config.json and plan that config instead)",
    # vllm/config/vllm.py (0.33) max_concurrent_batches: 2 with async scheduling at PP 1, else PP; SlidingWindowSpec
    # sizes with max_in_flight_tokens = max_concurrent_batches x max_num_batched_tokens. kvplan.engines
    # VLLM_CHANGES "swa_in_flight_batches" plans 2 from 0.26.0 (async scheduling is vLLM's default there).
    "--async-scheduling": "the flag itself changes nothing kvplan plans: from 0.26 async scheduling is vLLM's "
                          "default, which its profiles already hold (sliding windows keep 2 batches in flight); "
                          "before 0.26 they keep 1 batch, where this flag would make vLLM 0.33's rule keep 2 (up "
                          "to max_num_batched_tokens more sliding-window KV per request than planned)",
    "--no-async-scheduling": "a sliding window then holds 1 batch in flight (PP batches with PP), kvplan's 0.26+ "
                             "profiles plan 2: up to max_num_batched_tokens more sliding-window KV per request "
                             "than vLLM reserves (EngineConfig has no field for it)",
    # vllm/config/parallel.py (0.33): enable_dbo / ubatch_size split each batch into 2 micro-batches
    "--enable-dbo": "dual-batch overlap runs 2 micro-batches: their activation and all-to-all buffers are not "
                    "modeled",
    "--ubatch-size": "micro-batches: their activation and all-to-all buffers are not modeled",
    "--dbo-decode-token-threshold": "dual-batch overlap threshold (buffers not modeled)",
    "--dbo-prefill-token-threshold": "dual-batch overlap threshold (buffers not modeled)",
    "--disable-sliding-window": "sliding-window layers then cache the full context",
    "--enable-sleep-mode": "sleep mode's CuMem allocator is not modeled",
    "--enable-eplb": "redundant experts of expert-parallel load balancing take GPU memory",
    "--num-redundant-experts": "redundant experts take GPU memory",
    "--enable-multimodal-encoder-data-parallel": "the multimodal encoder is replicated, not sharded "
                                                 "(use --mm-encoder-tp-mode data)",
    "--mm-processor-cache-gb": "the multimodal processor cache lives in host memory",
    "--kv-transfer-config": "a KV connector's buffers (disaggregated prefill) are not modeled",
    "--kv-sharing-fast-prefill": "changes which layers hold KV",
    "--override-attention-dtype": "the attention dtype",
    "--rope-scaling": "changes the model config",
    "--rope-theta": "changes the model config",
    "--attention-backend": "the attention backend can change the KV block size and its workspace",
    "--attention-config": "the attention backend can change the KV block size and its workspace",
    "--quantization-config": "quantization settings beyond --quantization",
    "--kv-cache-dtype-skip-layers": "layers kept in the model dtype are planned in --kv-cache-dtype",
    "--mamba-cache-mode": "kvplan derives the mode from --enable-prefix-caching",
    "--mamba-block-size": "kvplan derives the recurrent states' block size",
}
# Switches among _READ_NOT_PLANNED (the rest take a value).
_READ_NOT_PLANNED_SWITCHES = {"--async-scheduling", "--no-async-scheduling", "--enable-dbo",
                              "--disable-sliding-window", "--enable-sleep-mode", "--enable-eplb",
                              "--enable-multimodal-encoder-data-parallel", "--kv-sharing-fast-prefill"}
# What kvplan says of a vLLM flag it has not reviewed one by one, by the argparse group vLLM files it under
# (kvplan.vllm_cli_flags): the server's own and the request-path groups do not touch GPU memory.
_NO_MEMORY_GROUPS = {"options", "Frontend", "ObservabilityConfig", "StructuredOutputsConfig", "DecodingConfig",
                     "LoggingConfig", "LoadConfig"}
# Flags that change memory in ways kvplan does not model (value-taking unless listed in _SWITCHES).
_NOT_MODELED = {
    "--cpu-offload-gb": "moves part of the weights to host memory",
    # (vllm/utils argparse: --config FILE loads a YAML of more options, any of the ones kvplan plans included)
    "--config": "a YAML file of more options (the model, parallelism, memory flags), which kvplan cannot read: put "
                "its options on the line",
    "--speculative-config": "a draft model and its KV cache take GPU memory too",
    "--num-gpu-blocks-override": "replaces the computed number of KV blocks",
    "--enable-lora": "LoRA adapters and their buffers take GPU memory",
    "--max-lora-rank": "LoRA buffers scale with the rank",
    "--compilation-config": "CUDA-graph capture sizes change the graph memory vLLM reserves",
    "--cuda-graph-sizes": "CUDA-graph capture sizes change the graph memory vLLM reserves",
    "--max-cudagraph-capture-size": "CUDA-graph capture sizes change the graph memory vLLM reserves",
    "--calculate-kv-scales": "fp8 KV scales are computed at run time",
    "--disable-hybrid-kv-cache-manager": "sliding-window layers then reserve the full context",
    "--kv-offloading-size": "KV blocks offloaded to host memory",
    "--max-seq-len-to-capture": "CUDA-graph capture sizes change the graph memory vLLM reserves",
    "--optimization-level": "the optimization level picks the CUDA-graph mode, which changes the graph memory "
                            "vLLM reserves",
    # vLLM 0.34.0 engine/arg_utils.py (CacheConfig.enable_extensible_kv_cache, a BooleanOptionalAction; read in the
    # wheel 2026-12-03, not in kvplan.vllm_cli_flags' parser tables)
    "--enable-extensible-kv-cache": "vLLM 0.34: already the default on CUDA / ROCm, which kvplan plans "
                                    "(kvplan.plan._extensible_budget); vLLM raises where it is unsupported",
    "--no-enable-extensible-kv-cache": "vLLM 0.34: the KV cache sized from the profile estimate at "
                                       "gpu_memory_utilization 0.92, not planned from this switch (kvplan plans "
                                       "0.34 with the extensible cache; --kv-cache-memory-bytes turns it off and "
                                       "is planned)",
}
_SWITCHES = {"--enable-lora", "--calculate-kv-scales", "--disable-hybrid-kv-cache-manager",
             "--enable-extensible-kv-cache", "--no-enable-extensible-kv-cache"}


class VllmArgs(BaseModel):
    """The plan-relevant settings of a vLLM command line, by vLLM's own field names.

    ``None`` means the flag was not given (the engine default applies). ``engine_fields()`` and
    ``parallel_fields()`` are the keyword arguments of ``kvplan.engines.EngineConfig`` / ``kvplan.parallel.Layout``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str | None = None
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    enable_expert_parallel: bool = False
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    kv_cache_dtype: str = "auto"
    block_size: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    kv_cache_memory_bytes: int | None = None
    enforce_eager: bool = False
    weight_format: str | None = None
    decode_context_parallel_size: int = 1
    disable_custom_all_reduce: bool = False
    sampler: str = "auto"  # VLLM_USE_FLASHINFER_SAMPLER=1 / 0 before the command
    language_model_only: bool = False  # --language-model-only
    # --limit-mm-per-prompt as (modality, count) pairs (EngineConfig.mm_limits): a modality at 0 is not profiled, a
    # tower with all its modalities at 0 is not built (kvplan.vllm_mm.loads_tower, which knows the model)
    mm_limits: tuple[tuple[str, int], ...] = ()
    mm_processor_kwargs: tuple[tuple[str, int], ...] = ()  # --mm-processor-kwargs keys kvplan reads
    model_runner: str = "auto"  # VLLM_USE_V2_MODEL_RUNNER=0 / 1 before the command: "V1" / "V2"
    # VLLM_GRAPH_RESERVED_MEM=x before the command (vllm-gaudi: the share of usable memory kept for HPU graphs)
    vllm_graph_reserved_mem: float | None = None
    skip_mm_profiling: bool = False  # --skip-mm-profiling
    mm_encoder_tp_mode: str = "weights"
    moe_backend: str = "auto"  # --moe-backend as typed, lower-cased (EngineConfig.moe_backend: "cutlass" is planned)
    speculative_method: str = "none"  # "mtp" (an MTP method), "ngram", "eagle" / "eagle3", "draft_model"
    # the --speculative-config "method" as typed ("qwen3_next_mtp", "[ngram]"), for display: speculative_method is
    # what kvplan plans it as ("mtp", "ngram"); None when the value names no method (vLLM names it from the draft)
    speculative_given: str | None = None
    num_speculative_tokens: int = 0
    draft: DraftSpec | None = None  # the EAGLE head (kvplan.drafter) or draft model (kvplan.draft_model)
    enable_prefix_caching: bool | None = None
    cudagraph_mode: str | None = None  # --compilation-config's cudagraph_mode (EngineConfig.cudagraph_mode)
    # a vllm/vllm-openai:vX image tag on the line: the image ships triton_kernels (EngineConfig.triton_kernels)
    triton_kernels: bool | None = None
    # the vLLM release line (kvplan.engines.VLLM_PROFILES) the line itself says: VLLM_USE_V1=0 -> a V0 profile
    vllm_version: str | None = None
    unknown: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def engine_fields(self) -> dict[str, Any]:
        names = ("max_model_len", "gpu_memory_utilization", "kv_cache_dtype", "block_size", "max_num_seqs",
                 "max_num_batched_tokens", "kv_cache_memory_bytes", "enforce_eager", "weight_format",
                 "decode_context_parallel_size", "disable_custom_all_reduce", "sampler", "language_model_only",
                 "mm_encoder_tp_mode", "moe_backend", "speculative_method", "num_speculative_tokens",
                 "enable_prefix_caching", "draft", "triton_kernels", "mm_limits", "mm_processor_kwargs", "skip_mm_profiling")
        out = {"engine": "vllm", **{n: getattr(self, n) for n in names}}
        if self.vllm_version is not None:
            out["vllm_version"] = self.vllm_version
        if self.model_runner != "auto":
            out["model_runner"] = self.model_runner
        if self.cudagraph_mode is not None:
            out["cudagraph_mode"] = self.cudagraph_mode
        if self.vllm_graph_reserved_mem is not None:
            out["vllm_graph_reserved_mem"] = self.vllm_graph_reserved_mem
        return out

    def parallel_fields(self) -> dict[str, Any]:
        names = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "enable_expert_parallel")
        return {n: getattr(self, n) for n in names}


def _choice(flag: str, text: str, allowed: tuple[str, ...]) -> str:
    value = text.strip().lower()
    if value not in allowed:
        raise PlanInputError(flag, f"must be one of {', '.join(allowed)}, got {text[:40]!r}")
    return value


_MM_LIMIT_FLAG = "--limit-mm-per-prompt"
# config/multimodal.py ImageDummyOptions (width, height), VideoDummyOptions (num_frames, width, height),
# AudioDummyOptions (length) (0.12.0 - 0.33.0, extra="forbid"): options of the profile's dummy item
_MM_DUMMY_OPTIONS = {"image": ("width", "height"), "video": ("num_frames", "width", "height"), "audio": ("length",)}


def mm_limits_value(flag: str, text: str) -> dict[str, Any]:
    """The modality -> limit object of one --limit-mm-per-prompt value, in either of vLLM's spellings: a JSON object
    (0.10.0+: arg_utils.py parses the dict-typed field with json.loads; its values a count or, from 0.12.0, an
    object of "count" and dummy options) or the comma-separated MODALITY=COUNT items of vLLM before 0.10
    (arg_utils.py nullable_kvs, 0.6 - 0.9; vllm issue #21615: 0.10.0 refuses it). Anything else is refused naming the
    flag. 'image=0,video=0' -> {"image": 0, "video": 0}."""
    text = text.strip()
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise PlanInputError(flag, f"is not a JSON object ({exc.msg}): write it as '{{\"image\": 4, \"video\": "
                                 "0}' (a modality -> count, or -> {\"count\": N})") from None
        if not isinstance(value, dict):
            raise PlanInputError(flag, "must be a JSON object of modality -> count")
        return value
    value = {}
    for item in text.split(","):
        key, eq, count = (part.strip().lower() for part in item.partition("="))
        if not eq or not key or "=" in count:
            raise PlanInputError(flag, f"item {item.strip()[:40]!r} is not MODALITY=COUNT: write '{{\"image\": 4}}' "
                                 "(JSON, vLLM 0.10+) or image=4,video=0 (vLLM before 0.10)")
        value[key] = _mm_count(flag, key, count)
    return value


def _mm_count(flag: str, modality: str, count: Any) -> int:
    """One modality's count: a whole number >= 0 (config/multimodal.py BaseDummyOptions count: Field(999, ge=0))."""
    given = count
    if isinstance(count, str):
        try:
            count = int(count)
        except ValueError:
            count = None
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise PlanInputError(flag, f"{modality}: the count must be a whole number >= 0 (vLLM's BaseDummyOptions "
                             f"count), got {str(given)[:40]!r}")
    return count


def mm_limits_fields(flag: str, value: dict[str, Any], notes: list[str]) -> tuple[tuple[str, int], ...]:
    """(modality, count) pairs of a --limit-mm-per-prompt object; a {"count": N, ...} object's dummy-size options
    (width, height, num_frames, length) are noted: kvplan profiles the default (largest) item."""
    out = []
    for modality, v in value.items():
        if not isinstance(modality, str) or not modality.strip():
            raise PlanInputError(flag, f"modality names must be strings, got {modality!r}")
        if isinstance(v, dict):
            allowed = ("count", *_MM_DUMMY_OPTIONS.get(modality, ()))
            bad = [k for k in v if k not in allowed]
            if bad:
                raise PlanInputError(flag, f"{modality}: unknown option(s) {', '.join(map(str, bad))} (vLLM's "
                                     f"{modality} options: {', '.join(allowed)})")
            extra = sorted(k for k in v if k != "count")
            if extra:
                notes.append(f"{flag} {modality} {', '.join(extra)}: read, not planned: kvplan profiles vLLM's "
                             "default (largest) dummy item")
            count = _mm_count(flag, modality, v.get("count", 999))
        else:
            count = _mm_count(flag, modality, v)
        out.append((modality, count))
    return tuple(out)


# --mm-processor-kwargs keys kvplan reads (the Qwen2-VL / Qwen2.5-VL / Qwen3-VL / Qwen3.5 ViTs' pixel limits,
# kvplan.vllm_mm._qwen_pixels)
_MM_KWARGS_FLAG = "--mm-processor-kwargs"
_MM_KWARGS_KEYS = ("max_pixels", "min_pixels")
_MM_KWARGS_SIZE_KEYS = ("longest_edge", "shortest_edge")


def mm_processor_kwargs_fields(flag: str, text: str) -> tuple[tuple[str, int], ...]:
    """(key, value) pairs of a --mm-processor-kwargs JSON object kvplan plans with: max_pixels, min_pixels and size
    {longest_edge, shortest_edge} (Qwen-VL's pixel limits; vLLM 0.17+ qwen2_vl.py / qwen3_vl.py read them for the
    profile item). Any other key, or a value that is not a positive whole number, is refused naming the flag (kvplan
    cannot verify how it moves vLLM's dummy item). '{"max_pixels": 1003520}' -> (("max_pixels", 1003520),)."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise PlanInputError(flag, f"is not a JSON object ({exc.msg})") from None
    if not isinstance(value, dict):
        raise PlanInputError(flag, "must be a JSON object")

    def positive(key: str, v: Any) -> int:
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise PlanInputError(flag, f"{key} must be a whole number of pixels >= 1, got {v!r}")
        return v

    out = []
    for key, v in value.items():
        if key in _MM_KWARGS_KEYS:
            out.append((key, positive(key, v)))
        elif key == "size" and isinstance(v, dict) and v and all(k in _MM_KWARGS_SIZE_KEYS for k in v):
            if "longest_edge" not in v:  # 0.17 - 0.31 get_max_video_tokens reads size["longest_edge"] of this dict
                raise PlanInputError(flag, "size must give longest_edge (vLLM's Qwen-VL video item reads it)")
            out += [(f"size.{k}", positive(f"size.{k}", v[k])) for k in _MM_KWARGS_SIZE_KEYS if k in v]
        else:
            raise PlanInputError(flag, f"key {str(key)[:40]!r} is not one kvplan can plan: it reads max_pixels, "
                                 "min_pixels and size {longest_edge, shortest_edge} (the Qwen-VL ViT's pixel limits); "
                                 "drop the others to plan vLLM's default item")
    return tuple(out)


def model_runner_env(value: str) -> str:
    """VLLM_USE_V2_MODEL_RUNNER's runner: envs.py reads it with int() (bool(int(getenv(.., "0"))) in 0.12.0 - 0.21.x,
    maybe_convert_bool from 0.22.0: unset leaves the release's default, kvplan.engines.vllm_model_runner): 0 -> "V1",
    any other integer -> "V2"; a non-integer is refused (vLLM raises ValueError at start-up)."""
    try:
        return "V2" if int(value.strip()) else "V1"
    except ValueError:
        raise PlanInputError("VLLM_USE_V2_MODEL_RUNNER", f"vLLM reads it with int(): 0 (V1 runner) or 1 (V2), got "
                             f"{value[:20]!r}") from None


GRAPH_RESERVED_ENV = "VLLM_GRAPH_RESERVED_MEM"


def graph_reserved_mem_env(value: str) -> float:
    """VLLM_GRAPH_RESERVED_MEM's fraction: vllm-gaudi's hpu_worker.py reads float(os.environ.get(.., '0.1')), the share
    of the usable memory kept for HPU graphs (kvplan.vllm_gaudi.graph_reserved_fraction). A non-number is refused (the
    worker raises ValueError at start-up), and so is one outside 0 <= x < 1 (EngineConfig.vllm_graph_reserved_mem's
    range: at 1 or more nothing is left for the KV cache). '0.4' -> 0.4."""
    try:
        fraction = float(value.strip())
    except ValueError:
        fraction = math.nan
    if not 0 <= fraction < 1:
        raise PlanInputError(GRAPH_RESERVED_ENV, f"must be a number from 0 to below 1 (the share of usable memory "
                             f"vllm-gaudi keeps for HPU graphs; default 0.1), got {value[:20]!r}")
    return fraction


# vLLM speculative methods that load the target checkpoint's own MTP layers (config/speculative.py: "mtp" and
# the per-family names it maps to it, e.g. deepseek_mtp, glm4_moe_mtp).
# vllm/config/speculative.py MTPModelTypes (0.33.0 wheel): every name vLLM maps to its MTP drafter ("mtp")
MTP_METHODS = ("mtp", "deepseek_mtp", "dots3_note_mtp", "mimo_mtp", "mimo_v2_mtp", "glm4_moe_mtp", "glm4_moe_lite_mtp",
               "glm_ocr_mtp", "ernie_mtp", "nemotron_h_mtp", "exaone_moe_mtp", "exaone4_5_mtp", "qwen3_next_mtp",
               "qwen4_exp_mtp", "qwen3_5_mtp", "longcat_flash_mtp", "bailing_hybrid_v3_mtp", "minimax_m3_mtp",
               "bailing_hybrid_mtp", "kimi_k3_mtp", "pangu_ultra_moe_mtp", "step3p5_mtp", "step5_mtp", "hy_v3_mtp",
               "hy_v4_mtp", "gemma4_mtp", "inkling_mtp", "glm5_next_mtp")


# Methods that load another checkpoint kvplan does not model (config/speculative.py SpeculativeMethod, 0.33.0):
# refused, never planned as if the draft took no memory.
DRAFT_CHECKPOINT_METHODS = ("medusa", "mlp_speculator", "dflash", "dspark", "custom_class")
DRAFTING_METHODS = ("eagle", "eagle3", "draft_model")  # methods whose "model" kvplan loads (kvplan.drafter, .draft_model)


def _spec_value(text: str | None) -> dict | None:
    try:
        value = json.loads(text or "")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _spec_method(text: str | None) -> str | None:
    """kvplan's speculative_method for a --speculative-config: "mtp" (the MTP methods), "ngram" (prompt lookup:
    no draft weights, no draft KV), "eagle" / "eagle3" (a draft head, kvplan.drafter), or None for what kvplan does
    not read (not a JSON object; suffix decoding). Without a "method" (or with "draft_model") vLLM names it from the
    draft's repo: "eagle-" in it -> eagle, "eagle3" -> eagle3, else a draft model (config/speculative.py
    __post_init__, 0.33.0); the other draft-checkpoint methods are refused (DRAFT_CHECKPOINT_METHODS)."""
    value = _spec_value(text)
    if value is None:
        return None
    method, model = value.get("method"), value.get("model")
    if method in (None, "draft_model") and isinstance(model, str):
        low = model.lower()
        # 0.33 also names "dflash" / "dspark" repos by their names (refused below)
        method = ("ngram" if method is None and low in ("ngram", "[ngram]") else "eagle" if "eagle-" in low else
                  "eagle3" if "eagle3" in low else "dflash" if "dflash" in low else "dspark" if "dspark" in low
                  else "draft_model")
    if method in MTP_METHODS:
        return "mtp"
    if method in ("ngram", "[ngram]", "eagle", "eagle3", "draft_model"):
        return method.strip("[]")
    if method in DRAFT_CHECKPOINT_METHODS:
        raise PlanInputError("--speculative-config", f"method {method} loads a draft checkpoint "
                             f"({str(model)[:80]!r}) whose weights and KV cache kvplan does not model (it plans "
                             "mtp, ngram, eagle / eagle3 with a Llama EAGLE head, and draft_model)")
    return None


def _mtp_tokens(text: str | None) -> int | None:
    """num_speculative_tokens of a --speculative-config kvplan plans (1 when an MTP or ngram one gives none; an EAGLE
    head must give it: vLLM refuses "A speculative model was provided, but `num_speculative_tokens` was not
    provided"); None for any other method."""
    method = _spec_method(text)
    if method is None:
        return None
    value = json.loads(text or "")
    if method in DRAFTING_METHODS and "num_speculative_tokens" not in value:
        raise PlanInputError("--speculative-config", f"method {method} needs num_speculative_tokens (vLLM: \"A "
                             "speculative model was provided, but `num_speculative_tokens` was not provided\")")
    n = value.get("num_speculative_tokens", 1)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 64:
        raise PlanInputError("--speculative-config", f"num_speculative_tokens must be a whole number from 1 to 64, "
                             f"got {str(n)[:40]!r}")
    return n


def speculative_fields(text: str, draft_config: Any = None, draft_name: str = "") -> dict[str, Any] | None:
    """The EngineConfig fields a --speculative-config value means (speculative_method, num_speculative_tokens, and
    for eagle / eagle3 the ``draft`` head), or None where kvplan does not read the value (then noted, not planned).

    An EAGLE head comes from ``draft_config`` (the draft's config.json dict, the CLI's --draft-config) when given,
    else from the drafter kvplan ships for its "model" (kvplan/presets/DRAFTERS.json); neither: PlanInputError
    naming --speculative-config and --draft-config. A quantized draft ("quantization") is refused."""
    method = _spec_method(text)
    if method is None:
        if draft_config is not None:
            raise PlanInputError("--draft-config", "given, but --speculative-config names no eagle / eagle3 method")
        return None
    fields: dict[str, Any] = {"speculative_method": method, "num_speculative_tokens": _mtp_tokens(text)}
    if method not in DRAFTING_METHODS:
        if draft_config is not None:
            raise PlanInputError("--draft-config", f"given, but --speculative-config method {method} loads no draft "
                                 "head")
        return fields
    from kvplan.drafter import load_drafter, parse_draft

    value = json.loads(text)
    model = value.get("model")
    if method == "draft_model":
        from kvplan.draft_model import check_config_keys, load_draft_model, parse_draft_model

        check_config_keys(value)
        if draft_config is not None:
            fields["draft"] = parse_draft_model(draft_config, draft_name or str(model or "draft"),
                                                f"--draft-config {draft_name}" if draft_name else "--draft-config")
        elif not isinstance(model, str) or not model.strip():
            raise PlanInputError("--speculative-config", "method draft_model needs \"model\" (the draft model), "
                                 "or its config.json with --draft-config PATH")
        else:
            fields["draft"] = load_draft_model(model)
    elif value.get("quantization"):
        raise PlanInputError("--speculative-config", f"quantization {str(value['quantization'])[:40]!r}: a quantized "
                             "draft head is not modelled")
    if method == "draft_model":
        pass
    elif draft_config is not None:
        fields["draft"] = parse_draft(method, draft_config, draft_name or str(model or "draft"),
                                      f"--draft-config {draft_name}" if draft_name else "--draft-config")
    elif not isinstance(model, str) or not model.strip():
        raise PlanInputError("--speculative-config", f"method {method} needs \"model\" (the draft head's "
                             "checkpoint), or its config.json with --draft-config PATH")
    else:
        fields["draft"] = load_drafter(model, method)
    dtp = value.get("draft_tensor_parallel_size")
    if dtp is not None and (isinstance(dtp, bool) or not isinstance(dtp, int) or dtp < 1):
        raise PlanInputError("--speculative-config", f"draft_tensor_parallel_size must be a whole number >= 1, got "
                             f"{str(dtp)[:40]!r}")
    fields["draft_tensor_parallel_size"] = dtp
    return fields


def check_draft_tp(draft_tp: int | None, tp: int, method: str = "eagle") -> None:
    """vLLM takes draft_tensor_parallel_size 1 or the target's TP (config/speculative.py _verify_and_get_draft_tp);
    kvplan lays the head out at the target's TP only. A draft model must have the target's on the V1 runner
    (DraftModelProposer _raise_if_draft_tp_mismatch, 0.15.0 - 0.33.0: vLLM's text quoted); the V2 runner's draft
    speculator (0.31.0+) has no such check, and kvplan does not model a draft laid out at TP 1 beside it."""
    if draft_tp is not None and draft_tp != tp and method == "draft_model":
        raise PlanInputError("--speculative-config", f"vLLM's V1 runner refuses it: \"Currently, "
                             "'draft_tensor_parallel_size' and 'tensor_parallel_size' must be the same. Got "
                             f"{draft_tp} and {tp}. Please pass 'draft_tensor_parallel_size' in the "
                             "speculative_config.\" (v1/spec_decode/draft_model.py, 0.15.0+; the V2 runner of 0.31+ "
                             "takes it, a layout kvplan does not model: plan the draft at the target's TP)")
    if draft_tp is not None and draft_tp != tp:
        raise PlanInputError("--speculative-config", f"draft_tensor_parallel_size {draft_tp} with "
                             f"--tensor-parallel-size {tp}: kvplan plans the draft head at the target's TP only"
                             + ("" if draft_tp == 1 else " (vLLM allows only 1 or the target's TP)"))


def human_readable_int(flag: str, text: str) -> int:
    """vLLM's ``human_readable_int``: '32k' -> 32000, '32K' -> 32768, '25.6k' -> 25600, '8192' -> 8192."""
    value = text.strip()
    match = _HUMAN_INT.match(value)
    try:
        if match:
            number, suffix = match.groups()
            if suffix in _BINARY_SUFFIX:
                if "." in number:
                    raise PlanInputError(flag, f"decimals are not allowed with binary suffixes: {text!r} "
                                               f"(did you mean {number}{suffix.lower()}?)")
                return int(number) * _BINARY_SUFFIX[suffix]
            scaled = Decimal(number) * _DECIMAL_SUFFIX[suffix]
            if scaled != scaled.to_integral_value():
                raise PlanInputError(flag, f"{text!r} is not a whole number")
            return int(scaled)
        return int(value)
    except (ValueError, InvalidOperation):
        raise PlanInputError(flag, f"expected a whole number (e.g. 8192 or 32k), got {text!r}") from None


def _count(flag: str, text: str, lo: int = 1, hi: int | None = None) -> int:
    value = human_readable_int(flag, text)
    if value < lo or (hi is not None and value > hi):
        bound = f"from {lo:,} to {hi:,}" if hi is not None else f">= {lo:,}"
        raise PlanInputError(flag, f"must be {bound}, got {value:,}")
    return value


def _parallel(flag: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise PlanInputError(flag, f"expected a whole number, got {text!r}") from None
    if not 1 <= value <= MAX_PARALLEL:
        raise PlanInputError(flag, f"must be from 1 to {MAX_PARALLEL}, got {value}")
    return value


def fraction(flag: str, text: str) -> float:
    """A memory fraction in (0, 1]: vLLM's --gpu-memory-utilization, SGLang's --mem-fraction-static."""
    try:
        value = float(text)
    except ValueError:
        raise PlanInputError(flag, f"expected a fraction such as 0.9, got {text!r}") from None
    if not 0 < value <= 1:
        raise PlanInputError(flag, f"must be in (0, 1], got {text}")
    return value


def _kv_dtype(flag: str, text: str) -> str:
    key = text.strip().lower()
    if key not in _KV_DTYPES:
        raise PlanInputError(flag, f"{text!r} is not a KV-cache dtype kvplan plans; allowed: "
                                   f"{', '.join(sorted(_KV_DTYPES))}")
    return _KV_DTYPES[key]


def _block_size(flag: str, text: str) -> int:
    try:
        return check_block_size(int(text), flag)
    except ValueError:
        raise PlanInputError(flag, f"expected a whole number of tokens, got {text!r}") from None


def _max_model_len(flag: str, text: str) -> int | None:
    if text.strip().lower() in ("auto", "-1"):
        return None
    return _count(flag, text, 1, 1_000_000_000)


# the --moe-backend values whose held MoE workspace kvplan sizes: "cutlass" (W4A4 NVFP4 experts on CutlassExpertsFp4,
# kvplan.plan.vllm_cutlass_nvfp4_moe_transient_bytes) and "marlin" (int4 / int8 weight-only, gpt-oss's and
# DeepSeek-V4's MXFP4 experts on MarlinExperts, kvplan.plan._held_moe_workspace_bytes); "auto" plans the oracle's own
# pick; "triton" / "flashinfer_trtllm" are planned for some experts only (their note says which)
MOE_BACKEND_PLANNED = ("cutlass", "marlin")
# A --moe-backend name as vLLM stores it: config/kernel.py KernelConfig._normalize_moe_backend lower-cases it and turns
# "-" into "_" (0.17.0 - 0.33.0 wheels, read 2026-12-03); every MoEBackend literal there is lower-case letters, digits
# and "_" ("auto", "marlin", "flashinfer_cutlass", "aiter_triton_mxfp4_bf16": 23 characters, the longest in 0.33.0).
# kvplan.web.state's link check is this one.
MOE_BACKEND_RE = re.compile(r"[a-z0-9_]{1,40}")


def moe_backend_value(flag: str, text: str) -> str:
    """A --moe-backend value as vLLM normalizes it (``MOE_BACKEND_RE``): "FlashInfer-Cutlass" -> "flashinfer_cutlass".
    Anything else (empty, over 40 characters, other characters) is refused naming ``flag``: no MoEBackend name of any
    release reads so, and vLLM refuses a name outside its Literal."""
    value = text.strip().lower().replace("-", "_")
    if not MOE_BACKEND_RE.fullmatch(value):
        raise PlanInputError(flag, f"{text[:60]!r} is not a MoE backend name (vLLM's are lower-case letters, digits "
                             "and _, up to 40: auto, marlin, cutlass, triton, flashinfer_cutlass, ...)")
    return value

# flag -> (field, value parser); switches are handled separately.
_VALUE_FLAGS: dict[str, tuple[str, Callable[[str, str], Any]]] = {
    "--model": ("model", lambda f, t: t),
    "--tensor-parallel-size": ("tensor_parallel_size", _parallel),
    "--pipeline-parallel-size": ("pipeline_parallel_size", _parallel),
    "--data-parallel-size": ("data_parallel_size", _parallel),
    "--decode-context-parallel-size": ("decode_context_parallel_size", _parallel),
    "--max-model-len": ("max_model_len", _max_model_len),
    "--gpu-memory-utilization": ("gpu_memory_utilization", fraction),
    "--kv-cache-dtype": ("kv_cache_dtype", _kv_dtype),
    "--block-size": ("block_size", _block_size),
    "--max-num-seqs": ("max_num_seqs", lambda f, t: _count(f, t, 1, 10_000_000)),
    "--max-num-batched-tokens": ("max_num_batched_tokens", lambda f, t: _count(f, t, 1, 1_000_000_000)),
    "--kv-cache-memory-bytes": ("kv_cache_memory_bytes", lambda f, t: _count(f, t, 1)),
    "--kv-cache-memory": ("kv_cache_memory_bytes", lambda f, t: _count(f, t, 1)),
    "--dtype": ("dtype", lambda f, t: t.strip().lower()),
    "--quantization": ("quantization", lambda f, t: t.strip().lower()),
    "--mm-encoder-tp-mode": ("mm_encoder_tp_mode", lambda f, t: _choice(f, t, ("weights", "data"))),
}
_SWITCH_FLAGS = {
    "--enforce-eager": ("enforce_eager", True), "--no-enforce-eager": ("enforce_eager", False),
    "--enable-expert-parallel": ("enable_expert_parallel", True),
    "--no-enable-expert-parallel": ("enable_expert_parallel", False),
    "--disable-custom-all-reduce": ("disable_custom_all_reduce", True),
    # vLLM 0.17+ config/multimodal.py language_model_only: every modality limit 0, the towers are not built.
    "--language-model-only": ("language_model_only", True),
    # hybrids: the recurrent states' pages per request follow it (kvplan.plan._mamba_cache_mode)
    "--enable-prefix-caching": ("enable_prefix_caching", True),
    "--no-enable-prefix-caching": ("enable_prefix_caching", False),
    # the other spellings of the same switches (kvplan.vllm_cli_flags: 0.33's EnableDisableAction pairs
    # --enable-X with --disable-X; argparse's BooleanOptionalAction adds --no-X)
    "--disable-expert-parallel": ("enable_expert_parallel", False),
    "--no-disable-custom-all-reduce": ("disable_custom_all_reduce", False),
    "--enable-custom-all-reduce": ("disable_custom_all_reduce", False),
    "--no-language-model-only": ("language_model_only", False),
    # 0.10.2+ config/multimodal.py: the profile run encodes no dummy multimodal batch (kvplan.vllm_mm.mm_profiled)
    "--skip-mm-profiling": ("skip_mm_profiling", True), "--no-skip-mm-profiling": ("skip_mm_profiling", False),
    "--disable-prefix-caching": ("enable_prefix_caching", False),
}


def _negations(flag: str) -> set[str]:
    """The spellings that turn a vLLM switch back off: --no-X, and 0.33's --enable-X <-> --disable-X pair (with
    its --no- form); only the spellings vLLM's parser lists are used (``_DEFAULT_SWITCHES``).
    ``_negations("--enable-dbo")`` -> {"--no-enable-dbo", "--disable-dbo", "--no-disable-dbo"}."""
    body = flag[2:]
    out = {"--no-" + body}
    for a, b in (("enable-", "disable-"), ("disable-", "enable-")):
        if body.startswith(a):
            out |= {"--" + b + body[len(a):], "--no-" + b + body[len(a):]}
    return out


# The off spellings of the not-modeled switches restore vLLM's default: no effect on the plan.
_DEFAULT_SWITCHES = {n for f in _SWITCHES | _READ_NOT_PLANNED_SWITCHES for n in _negations(f)
                     if n in VLLM_SERVE_FLAGS} - set(_READ_NOT_PLANNED) - set(_SWITCH_FLAGS)


def _arity(name: str) -> str | None:
    """How many words a flag takes: "S" none, "V" one, "M" one or more, "O" zero or one; None: no vLLM release
    kvplan read lists it. vLLM's own parser decides (kvplan.vllm_cli_flags); kvplan's lists cover the flags of
    other releases."""
    if name in VLLM_SERVE_FLAGS:
        return VLLM_SERVE_FLAGS[name][0]
    if name in _SWITCH_FLAGS or name in _IGNORED_SWITCH or name in _SWITCHES or name in _DEFAULT_SWITCHES or \
            name in _READ_NOT_PLANNED_SWITCHES:
        return "S"
    if name in _VALUE_FLAGS or name in _IGNORED_VALUE or name in _NOT_MODELED or name in _READ_NOT_PLANNED:
        return "V"
    return None


_KNOWN_LONG: frozenset[str] = frozenset()


def _long_flags() -> frozenset[str]:
    """Every ``--`` option kvplan knows (vLLM's parser tables in kvplan.vllm_cli_flags and kvplan's own lists)."""
    global _KNOWN_LONG
    if not _KNOWN_LONG:
        names = set(VLLM_SERVE_FLAGS) | set(_VALUE_FLAGS) | set(_SWITCH_FLAGS) | _IGNORED_VALUE | _IGNORED_SWITCH | \
            set(_READ_NOT_PLANNED) | set(_NOT_MODELED) | _SWITCHES | _DEFAULT_SWITCHES | _READ_NOT_PLANNED_SWITCHES
        _KNOWN_LONG = frozenset(n for n in names if n.startswith("--"))
    return _KNOWN_LONG


def expand_abbreviation(name: str) -> str:
    """The long option an abbreviated one stands for, as vLLM's parser reads it, or ``name`` when it is no prefix.

    vLLM's FlexibleArgumentParser (vllm/utils/argparse_utils.py from 0.17, vllm/utils/__init__.py in 0.10 / 0.11,
    vllm/utils.py before) subclasses argparse.ArgumentParser and never sets ``allow_abbrev`` (no release 0.6.4 -
    0.33.0 names it; checked 2026-12 in the wheels), so argparse's default ``allow_abbrev=True`` holds:
    ``_parse_optional`` takes a ``--`` word that is no option but the prefix of exactly one as that option, and
    refuses a prefix of several ("ambiguous option: --max-num could match --max-num-batched-tokens,
    --max-num-seqs, ..."). FlexibleArgumentParser.parse_args first turns underscores into dashes, so
    ``--max_num_batched_token`` expands too. The candidates are the options of the three parsers kvplan lists
    (kvplan.vllm_cli_flags: 0.10.2, 0.11.0, 0.33.0) and kvplan's own lists: a prefix that is unambiguous in one
    release but not in their union is refused (spell the option out). Worked example (vllm#40691, 0.19.0):
    ``--max-num-batched-token`` -> ``--max-num-batched-tokens``."""
    if len(name) <= 2 or not name.startswith("--") or _arity(name) is not None:
        return name
    matches = sorted(f for f in _long_flags() if f.startswith(name))
    if len(matches) > 1:
        shown = ", ".join(matches[:12]) + (f" (+{len(matches) - 12} more)" if len(matches) > 12 else "")
        raise PlanInputError(name, f"ambiguous option: {name} could match {shown} (vLLM's argparse refuses it too; "
                             "spell the option out)")
    return matches[0] if matches else name


# --compilation-config's cudagraph_mode (vllm/config/compilation.py CUDAGraphMode, read 2026-12: NONE, PIECEWISE, FULL,
# FULL_DECODE_ONLY, FULL_AND_PIECEWISE; validate_cudagraph_mode_before takes any case, CUDAGraphMode[value.upper()]).
# kvplan's graph estimate (kvplan.engines cuda_graph_bytes) models PLANNED_CUDAGRAPH_MODES only.
CUDAGRAPH_MODES = ("NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")
PLANNED_CUDAGRAPH_MODES = ("NONE", "PIECEWISE", "FULL_AND_PIECEWISE")
_CC_FLAG = "--compilation-config"


def compilation_config_fields(value: str | None, key: str | None, shown: str) -> tuple[str | None, str | None]:
    """(cudagraph_mode, note) of one --compilation-config (-O / -cc) occurrence: ``value`` its JSON (or, with a dotted
    ``key`` such as ``cudagraph_mode`` from --compilation-config.cudagraph_mode X, that key's value). The mode is
    upper-cased as vLLM reads it; FULL / FULL_DECODE_ONLY (not modelled) and a name vLLM has not are refused naming
    the flag; every other key is named in a "read, not planned" note. Worked example: '{"cudagraph_mode":
    "piecewise", "cudagraph_capture_sizes": [1, 2]}' -> ("PIECEWISE", "--compilation-config cudagraph_mode PIECEWISE:
    planned by the core ...; --compilation-config key cudagraph_capture_sizes: read, not planned ...")."""
    if key is not None:
        head, _, rest = key.partition(".")
        if rest:
            data: Any = {head: {rest: value}}
        else:
            try:
                leaf: Any = json.loads(value) if value is not None else None
            except ValueError:
                leaf = value
            data = {head: leaf}
    else:
        try:
            data = json.loads(value) if value is not None else None
        except ValueError:
            data = None
    if not isinstance(data, dict):  # an integer level (vLLM 0.10's -O 3), or text vLLM would refuse
        return None, f"{shown}: not modeled ({_NOT_MODELED[_CC_FLAG]})"
    mode = None
    if "cudagraph_mode" in data:
        raw = data["cudagraph_mode"]
        mode = raw.upper() if isinstance(raw, str) else None
        if mode not in CUDAGRAPH_MODES:
            raise PlanInputError(_CC_FLAG, f"cudagraph_mode {str(raw)[:30]!r}: vLLM takes one of "
                                 f"{', '.join(CUDAGRAPH_MODES)}")
        if mode not in PLANNED_CUDAGRAPH_MODES:
            raise PlanInputError(_CC_FLAG, f"cudagraph_mode {mode}: not modelled (kvplan's CUDA-graph estimate has "
                                 f"no {mode} capture); kvplan plans {', '.join(PLANNED_CUDAGRAPH_MODES)}: give one of "
                                 "those, or drop the key for the release's default")
    others = [str(k)[:40] for k in data if k != "cudagraph_mode"]
    notes = ([f"{_CC_FLAG} cudagraph_mode {mode}: planned by the core (EngineConfig.cudagraph_mode); "
              "the app's Apply sets the sidebar's advanced CUDA-graph mode (link key cgm)"] if mode else []) + (
        [f"{_CC_FLAG} key{'s' if len(others) > 1 else ''} {', '.join(others)}: read, not planned (kvplan reads only "
         f"cudagraph_mode; {_NOT_MODELED[_CC_FLAG]})"] if others else [])
    return mode, "; ".join(notes) or None


def _status(name: str) -> tuple[str, str]:
    """A flag kvplan does not plan with: ("ignored", "") for no effect on memory, ("note", why) otherwise."""
    if name in _IGNORED_VALUE or name in _IGNORED_SWITCH or name in _DEFAULT_SWITCHES:
        return "ignored", ""
    if name in _NOT_MODELED:
        return "note", f"not modeled ({_NOT_MODELED[name]})"
    if name in _READ_NOT_PLANNED:
        why = _READ_NOT_PLANNED[name]
        return "note", why if why.startswith("not planned") else f"read, not planned: {why}"
    group = VLLM_SERVE_FLAGS[name][1]
    if group in _NO_MEMORY_GROUPS:
        return "ignored", ""
    return "note", f"read, not planned: a vLLM {group} setting whose memory effect kvplan does not model"


def _tokens(command: str) -> list[str]:
    if len(command) > MAX_COMMAND_CHARS:
        raise PlanInputError("command", f"longer than {MAX_COMMAND_CHARS:,} characters")
    text = re.sub(r"\\\r?\n", " ", command)  # shell line continuations
    try:
        return shlex.split(text, comments=True)
    except ValueError as exc:
        raise PlanInputError("command", f"cannot split it as a shell command: {exc}") from None


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_IMAGE_TAG = re.compile(r"^(?:[\w.-]+(?::\d+)?/)?vllm/vllm-openai:v?(\d+)\.(\d+)(?:\.(\d+))?")
_OFF = ("0", "false", "no", "off")


def _assignment(tok: str) -> tuple[str, str] | None:
    name, eq, value = tok.partition("=")
    return (name, value) if eq and _ENV_NAME.match(name) else None


def launch_env(tokens: list[str]) -> tuple[dict[str, str], int]:
    """The environment a line sets before its command, and the index of the command's first word.

    ``VAR=x cmd``, ``env [-i] [-u NAME] VAR=x cmd`` (coreutils env; also /usr/bin/env), and ``export VAR=x
    [&& | ;] cmd`` (a pasted two-line snippet reads the same once its newline is a space). Later assignments win,
    as in the shell. Worked example: ``env VLLM_USE_V1=0 vllm serve m`` -> ({"VLLM_USE_V1": "0"}, 2)."""
    env: dict[str, str] = {}
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if (pair := _assignment(tok.rstrip(";"))) is not None:
            env[pair[0]] = pair[1]
            i += 1
        elif tok in ("env", "/usr/bin/env", "/bin/env"):
            i += 1
            while i < len(tokens) and tokens[i].startswith("-") and tokens[i] != "-":
                i += 2 if tokens[i] in ("-u", "--unset") else 1
        elif tok in ("export", "&&", ";"):
            i += 1
        else:
            break
    return env, i


def docker_env(tokens: list[str]) -> dict[str, str]:
    """``docker run -e VAR=x --env VAR=x --env=VAR=x ... vllm/vllm-openai:TAG``: the assignments before the image."""
    env: dict[str, str] = {}
    if "docker" not in tokens:
        return env
    i = tokens.index("docker") + 1
    while i < len(tokens) and not tokens[i].split(":")[0].endswith("vllm/vllm-openai"):
        tok = tokens[i]
        value = None
        if tok in ("-e", "--env") and i + 1 < len(tokens):
            value, i = tokens[i + 1], i + 1
        elif tok.startswith("--env="):
            value = tok[len("--env="):]
        elif tok.startswith("-e") and len(tok) > 2:
            value = tok[2:]
        if value is not None and (pair := _assignment(value)) is not None:
            env[pair[0]] = pair[1]
        i += 1
    return env


def image_version(tokens: list[str]) -> tuple[int, int, int] | None:
    """The release of a ``vllm/vllm-openai:vX.Y.Z`` image on the line (None: no image, or a tag such as latest)."""
    for tok in tokens:
        if m := _IMAGE_TAG.match(tok):
            return int(m[1]), int(m[2]), int(m[3] or 0)
    return None


def v0_profile(version: tuple[int, int, int] | None) -> str:
    """The kvplan V0 profile of a VLLM_USE_V1=0 line: "0.6" for releases 0.6.0 - 0.6.4 (their own accounting, see
    kvplan.engines), "0.6.5" for 0.6.5 - 0.6.6.post1 (0.6's rotary tables), else "0.7" (0.7.0 - 0.9.x; the choice
    when the line names no release)."""
    if version is None or version >= (0, 7, 0):
        return "0.7"
    return "0.6" if version < (0, 6, 5) else "0.6.5"


def _strip_launcher(tokens: list[str]) -> list[str]:
    """Drop ``VAR=x`` / ``env VAR=x``, ``vllm serve``, ``python -m vllm.entrypoints...``, ``docker run ... image``."""
    for i, tok in enumerate(tokens):
        if tok.startswith("vllm/vllm-openai"):
            return tokens[i + 1:]
    _, i = launch_env(tokens)
    rest = tokens[i:]
    for j, tok in enumerate(rest[:6]):
        if tok == "serve" and j > 0 and rest[j - 1].endswith("vllm"):
            return rest[j + 1:]
        if tok.startswith("vllm.entrypoints"):
            return rest[j + 1:]
    return rest


def _split_flag(tok: str) -> tuple[str, str | None]:
    if tok.startswith("-O") and len(tok) > 2 and tok[2] != ".":  # -O3, -O=3, -Odecode: vLLM's optimization level
        return "--optimization-level", tok[3:] if tok[2] == "=" else tok[2:]
    if tok.startswith("-O."):  # 0.11's -O.mode=3: a key of --compilation-config
        tok = "--compilation-config" + tok[2:]
    name, eq, value = tok.partition("=")
    head, dot, key = name.partition(".")
    if dot and head in _ALIASES:  # -cc.cudagraph_mode PIECEWISE: FlexibleArgumentParser nests any flag's dotted keys
        name = f"{_ALIASES[head]}.{key}"  # (utils/argparse_utils.py, 0.33.0 wheel), the alias resolved by argparse
    elif name in _ALIASES:
        name = _ALIASES[name]
    elif name.startswith("--"):
        name = "--" + name[2:].replace("_", "-")
    return name, (value if eq else None)


def _sampler_env(env: dict[str, str]) -> str:
    """VLLM_USE_FLASHINFER_SAMPLER=1 / 0 in the line's environment: the dummy sampler run's path."""
    value = env.get("VLLM_USE_FLASHINFER_SAMPLER")
    if value is None:
        return "auto"
    return "flashinfer" if value.strip().lower() in ("1", "true") else "pytorch"


def parse_vllm_command(command: str, prefix: list[str] | tuple[str, ...] = (), draft_config: Any = None,
                       draft_name: str = "") -> VllmArgs:
    """The settings a vLLM command line (or its flags alone) plans with. See the module docstring.

    ``prefix``: the tokens before the flags when the caller has split the launcher off (kvplan.web.commands): the
    environment (``VAR=x``, ``env``, ``docker run -e``) and the image tag are read from them too.
    VLLM_USE_V1=0 (or a vllm/vllm-openai image tag before 0.8) plans the V0 engine: profile "0.6" for an image
    tag 0.6.0 - 0.6.4, "0.6.5" for 0.6.5 - 0.6.6.post1, else "0.7" (``v0_profile``)."""
    raw = _tokens(command)
    head = [*prefix, *raw]
    env = launch_env(head)[0] | docker_env(head)
    sampler = _sampler_env(env)
    tokens = _strip_launcher(raw)
    values: dict[str, Any] = {"sampler": sampler}
    unknown: list[str] = []
    ignored: list[str] = []
    notes: list[str] = []
    release = image_version(head)
    use_v1 = env.get("VLLM_USE_V1", "").strip().lower()
    # V1 became vLLM's default engine in 0.8.0 (opt-in with VLLM_USE_V1=1 before): an older image runs V0 unasked
    old_image = release is not None and release < (0, 8, 0) and use_v1 not in ("1", "true", "yes", "on")
    if use_v1 in _OFF or old_image:
        from kvplan.engines import VLLM_PROFILES

        values["vllm_version"] = v0_profile(release)
        image = f"image v{'.'.join(map(str, release))}" if release else ""
        why = "VLLM_USE_V1=0" + (f" ({image})" if image else "") if use_v1 in _OFF else \
            f"{image} (vLLM runs V0 by default before 0.8)"
        notes.append(f"{why}: the V0 engine, planned with kvplan's vLLM profile {values['vllm_version']} "
                     f"({VLLM_PROFILES[values['vllm_version']].releases})")
    elif release is not None:  # a V1 image: the profile whose releases hold its tag
        from kvplan.engines import VLLM_PROFILES, vllm_profile_for_release

        tag = ".".join(map(str, release))
        values["vllm_version"] = key = vllm_profile_for_release(tag) if release >= (0, 10, 0) else "0.10"
        notes.append(f"image v{tag}: planned with kvplan's vLLM profile {key} ({VLLM_PROFILES[key].releases})"
                     + ("; the V1 engine before 0.10 was not read, its nearest profile is used"
                        if release < (0, 10, 0) else ""))
        # the vllm/vllm-openai image is built with OpenAI's triton_kernels (a pip install of 0.10.2 - 0.11.x has
        # none): MXFP4 MoE on Hopper takes the Triton layout (kvplan.vllm_layouts.mxfp4_triton_kernels)
        values["triton_kernels"] = True
    if (graph_env := env.get(GRAPH_RESERVED_ENV)) is not None:
        values["vllm_graph_reserved_mem"] = graph_reserved_mem_env(graph_env)
    if (runner_env := env.get("VLLM_USE_V2_MODEL_RUNNER")) is not None:
        values["model_runner"] = model_runner_env(runner_env)
        if release is not None and release < (0, 12, 0):
            values.pop("model_runner")
            notes.append("VLLM_USE_V2_MODEL_RUNNER: read from vLLM 0.12.0 (envs.py); this release runs the V1 runner")
    mm_value: dict[str, Any] | None = None  # --limit-mm-per-prompt, merged over its spellings (argparse: the last wins)
    draft_tp = None
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if not tok.startswith("-") or tok == "-":
            if "model" not in values:
                values["model"] = tok
            else:
                unknown.append(tok)
            continue
        name, inline = _split_flag(tok)
        base = name.split(".", 1)[0].rstrip("+")  # --compilation-config.mode 3, --json-arg.key+ v (vLLM's JSON keys)
        mm_key = None
        # --compilation-config.KEY V: the key as typed (vLLM's argparse_utils dashes the flag, not the dotted key)
        cc_key = tok.partition("=")[0].split(".", 1)[1] if base == _CC_FLAG and base != name else None
        if base == _MM_LIMIT_FLAG and base != name:  # --limit-mm-per-prompt.image 0 (FlexibleArgumentParser's dots)
            mm_key = name.split(".", 1)[1].split(".")
        if base != name and _arity(base) == "V":
            name = base
        if (full := expand_abbreviation(name)) != name:  # argparse's allow_abbrev: an unambiguous prefix
            notes.append(f"{name}: read as {full} (vLLM's argparse expands an unambiguous prefix of an option)")
            name = full
        arity = _arity(name)
        value = inline
        if arity == "S" and inline is not None:
            raise PlanInputError(name, f"is a switch: it takes no value (got {tok[:60]!r}); write {name} alone")
        if arity == "V" and value is None:
            if i >= len(tokens):
                raise PlanInputError(name, "needs a value: write it as " + name + " VALUE or " + name + "=VALUE")
            value = tokens[i]
            i += 1
        elif arity in ("M", "O") and value is None:
            words = []
            while i < len(tokens) and not tokens[i].startswith("-") and (arity == "M" or not words):
                words.append(tokens[i])
                i += 1
            if arity == "M" and not words:
                raise PlanInputError(name, "needs one or more values: write it as " + name + " VALUE [VALUE ...]")
            value = " ".join(words) if words else None
        shown = tok if value is None or inline is not None else f"{tok} {value}"
        if name in _READ_NOT_PLANNED and name.startswith("--mamba") and value is not None and \
                value.strip().lower() == "auto":
            ignored.append(shown)  # 'auto' is vLLM's default: the dtype kvplan plans
        elif name == _MM_LIMIT_FLAG:
            if mm_key is None:
                mm_value = mm_limits_value(name, value)
            else:  # argparse_utils.py: the dotted keys nest into one JSON object, merged over repeats
                try:
                    leaf: Any = json.loads(value)
                except ValueError:
                    leaf = value
                node = mm_value = mm_value if mm_value is not None else {}
                for key in mm_key[:-1]:
                    if not isinstance(node.get(key), dict):
                        node[key] = {}
                    node = node[key]
                node[mm_key[-1]] = leaf
        elif name == _CC_FLAG:
            mode, note = compilation_config_fields(value, cc_key, shown)
            if mode is not None:
                values["cudagraph_mode"] = mode
            if note is not None:
                notes.append(note)
        elif name == _MM_KWARGS_FLAG:
            values["mm_processor_kwargs"] = mm_processor_kwargs_fields(name, value)
        elif name == "--moe-backend":
            values["moe_backend"] = moe_backend_value(name, value)
            if values["moe_backend"] == "cutlass":
                notes.append(f"{shown}: planned by the core (EngineConfig.moe_backend: W4A4 NVFP4 experts on "
                             "CutlassExpertsFp4)")
            elif values["moe_backend"] == "marlin":
                notes.append(f"{shown}: planned by the core (EngineConfig.moe_backend: int4 / int8 weight-only and "
                             "DeepSeek-V4's MXFP4 experts on MarlinExperts' held workspace, not Humming's)")
            elif values["moe_backend"] in ("triton", "flashinfer_trtllm"):
                notes.append(f"{shown}: planned by the core for some experts (EngineConfig.moe_backend: gpt-oss's "
                             "MXFP4 experts on Triton (Hopper, SM 10.x) or FlashInfer TRTLLM (SM 10.x), triton for FP8 experts; "
                             "vLLM's MXFP4 oracle refuses it where the GPU cannot run it; other experts warn)")
            elif values["moe_backend"] != "auto":
                notes.append(f"{shown}: read, not planned: a vLLM KernelConfig setting whose memory effect kvplan "
                             f"does not model (only --moe-backend {' / '.join(MOE_BACKEND_PLANNED)} is sized: NVFP4 "
                             "experts on CutlassExpertsFp4, weight-only and MXFP4 experts on MarlinExperts)")
        elif name == "--speculative-config" and (spec := speculative_fields(value, draft_config, draft_name)):
            draft_tp = spec.pop("draft_tensor_parallel_size", None)
            values.update(spec)
            given = (_spec_value(value) or {}).get("method")
            values["speculative_given"] = given[:60] if isinstance(given, str) else None
        elif name in _VALUE_FLAGS:
            field, parse = _VALUE_FLAGS[name]
            values[field] = parse(name, value)
        elif name in _SWITCH_FLAGS:
            field, on = _SWITCH_FLAGS[name]
            values[field] = on
        elif arity is not None:
            kind, why = _status(name)
            if kind == "ignored":
                ignored.append(shown)
            else:
                notes.append(f"{shown}: {why}")
        else:
            # Unknown: a following bare word is taken as its value (most vLLM flags take one).
            if inline is None and i < len(tokens) and not tokens[i].startswith("-"):
                tok = f"{tok} {tokens[i]}"
                i += 1
            unknown.append(tok)
    if mm_value is not None:
        values["mm_limits"] = mm_limits_fields(_MM_LIMIT_FLAG, mm_value, notes)
    if values.get("max_model_len", 0) is None:
        notes.append("--max-model-len auto: vLLM fits the longest context that fits; kvplan plans the model's "
                     "max_position_embeddings and reports what fits")
    _apply_dtype(values, notes)
    if values.get("draft") is not None:
        check_draft_tp(draft_tp, values.get("tensor_parallel_size", 1), values.get("speculative_method", ""))
    elif draft_config is not None:
        raise PlanInputError("--draft-config", "given, but the command has no eagle / eagle3 / draft_model "
                             "--speculative-config")
    return VllmArgs(**values, unknown=tuple(unknown), ignored=tuple(ignored), notes=tuple(notes))


_VARIANT_SUFFIX = re.compile(r"-(instruct|chat|it|hf|base)$", re.IGNORECASE)


def preset_for_model(model: str | None) -> str | None:
    """The preset a ``--model`` value names: a preset name, its HF repo id, or the repo id of an
    instruct/chat variant of it ('meta-llama/Llama-3.1-8B-Instruct' -> 'llama-3.1-8b', same config
    shape). None when no preset matches (the caller may fetch the config from the Hub)."""
    from kvplan.presets import manifest, repo_keys

    if not model:
        return None

    def base(name: str) -> str:
        name = name.strip().lower()
        while _VARIANT_SUFFIX.search(name):
            name = _VARIANT_SUFFIX.sub("", name)
        return name

    key = base(model)
    for entry in manifest():
        if key in {base(k) for k in repo_keys(entry)}:
            return entry["name"]
    return None


def quantization_flag_format(spec, weight_format: str | None) -> tuple[str | None, str | None]:
    """(weight format to plan, note) for a command's ``--quantization fp8`` (read as weight_format "fp8") on ``spec``.

    vLLM ``ModelConfig._verify_quantization`` (vllm/config/model.py, 0.10 - 0.33) and SGLang's
    ``ModelConfig._verify_quantization`` (0.4 - 0.5.23) raise "Quantization method specified in the model config (X)
    does not match the quantization method specified in the `quantization` argument (fp8)" when the checkpoint ships
    a quantization_config of another method; with the same method the checkpoint's own config is used. So: an
    unquantized checkpoint -> "fp8" (online FP8); a checkpoint shipped in FP8 -> None (as it ships: its block scales and
    ignore list; DeepSeek-V3 TP 8: 79.55 GiB a GPU, not the 79.53 of per-tensor FP8) with a note; any other shipped
    format (Kimi-K2.5's compressed-tensors w4a16, gpt-oss's mxfp4, an NVFP4 release) -> PlanInputError naming
    --quantization (planning it re-stored as FP8 showed 121.08 GiB a GPU for Kimi-K2.5 on 8 x H200, a start no engine
    makes)."""
    if weight_format != "fp8" or not spec.quantization:
        return weight_format, None
    if spec.quantization.startswith("fp8"):
        return None, (f"--quantization fp8: the checkpoint ships FP8 ({spec.quantization}, its quantization_config), "
                      "which the engine uses: weights planned as they ship")
    raise PlanInputError("--quantization", f"fp8: {spec.name} ships quantized ({spec.quantization}, its config.json's "
                         "quantization_config); vLLM and SGLang refuse a --quantization that differs from the "
                         "checkpoint's quant_method (\"Quantization method specified in the model config ... does "
                         "not match the quantization method specified in the `quantization` argument (fp8)\"): drop "
                         "--quantization to plan the weights as they ship")


def _apply_dtype(values: dict[str, Any], notes: list[str]) -> None:
    """--dtype and --quantization -> weight_format (and the KV dtype 'auto' resolves to --dtype)."""
    dtype = values.pop("dtype", None)
    quant = values.pop("quantization", None)
    if dtype is not None and dtype != "auto":
        if dtype not in _DTYPES:
            raise PlanInputError("--dtype", f"{dtype!r} is not a dtype; allowed: auto, {', '.join(sorted(_DTYPES))}")
        if values.get("kv_cache_dtype", "auto") == "auto":
            values["kv_cache_dtype"] = _DTYPES[dtype]
        if quant is None:
            values["weight_format"] = _DTYPES[dtype]
    if quant is None:
        return
    if quant == "fp8":
        values["weight_format"] = "fp8"
    elif quant in _CHECKPOINT_QUANT:
        notes.append(f"--quantization {quant}: weights planned in the format the checkpoint's "
                     "quantization_config gives")
    else:
        notes.append(f"--quantization {quant}: not modeled; weights planned as the checkpoint ships")
