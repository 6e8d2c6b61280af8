"""The plan's inputs as a shareable link: ``PlanState`` <-> query parameters, versioned (v=1).

Every input of every page lives in one frozen ``PlanState``. ``encode`` writes only what differs
from the defaults, under short keys (``FIELDS``); ``decode`` reads a link back and never raises:
a value it cannot use falls back to the default and yields a warning naming the parameter. A
pasted config.json travels in the link itself (``cfg``: zlib + urlsafe base64 of the minified
JSON), so a link reproduces the plan without the Hub or the original file.

Streamlit-free: pages and tests use the same functions (``kvplan.web.widgets`` binds them to
``st.query_params``).
"""

import base64
import binascii
import hashlib
import json
import math
from decimal import Decimal
import random
import re
import threading
import urllib.parse
import zlib
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from kvplan.engines import VLLM_DEFAULT_VERSION, VLLM_PROFILES
from kvplan.sglang import SGLANG_DEFAULT_VERSION, SGLANG_PROFILES
from kvplan.errors import KvplanError
from kvplan.gpus import get_gpu
from kvplan.hf_config import MAX_CONFIG_BYTES, load_config_text
from kvplan.kv import KV_DTYPES, MAX_TOKENS
from kvplan.paging import check_block_size
from kvplan.hf_config import parse_config
from kvplan.presets import load_preset, preset_names
from kvplan.spec import ModelSpec
from kvplan.vllm_args import MAX_COMMAND_CHARS, MOE_BACKEND_RE, human_readable_int
from kvplan.weights import check_format

VERSION = 1
MAX_LENGTHS = 4096  # sequences in a paging workload
MAX_PARALLEL = 4096
# Pipeline stages: each is planned separately, so a shared link asking for thousands of stages of a
# 10,000-layer config would cost the whole server seconds per page; no deployment uses more than this.
MAX_PIPELINE = 128
# A typed "Model loading took X GiB" (per rank): above 0 and at most this many times the GPU's memory (a figure past
# that is a typo, not a checkpoint); the link itself accepts up to MAX_WEIGHTS_GIB, whatever the GPU.
WEIGHTS_GIB_PER_DEVICE = 16
MAX_WEIGHTS_GIB = 1_000_000.0
# Characters of a compressed config the state holds (and a link may carry; the app writes it into a link
# only when the whole query fits MAX_LINK_QUERY): urlsafe base64 of zlib's compressBound(MAX_CONFIG_BYTES),
# so any config the parser accepts fits, even an incompressible one. Inflating stays capped at
# MAX_CONFIG_BYTES, so reading one costs no more than pasting it.
MAX_CONFIG_PARAM = 4 * -(-(MAX_CONFIG_BYTES + (MAX_CONFIG_BYTES >> 12) + (MAX_CONFIG_BYTES >> 14) + 13) // 3)
SPEC_CACHE_ENTRIES = 32  # specs of linked configs kept, keyed by a digest of the text (not the text itself)
MAX_LINK_QUERY = 8_000  # characters of a query string the app writes (browsers, proxies and chat apps cut longer)
CUT_KEY = "cut"  # link key listing what a too-long link left out
CUTTABLE = ("cfg", "cmd", "pl")  # the fields that can make a link long, biggest first
ENGINES = ("vllm", "sglang", "custom")
PAGING_MODES = ("list", "uniform", "normal", "lognormal", "exponential")
SAMPLERS = ("auto", "pytorch", "flashinfer")  # EngineConfig.sampler
USAGE_CONTEXTS = ("serve", "llm")  # EngineConfig.usage_context: vllm serve, or the offline LLM class
MM_ENCODER_TP_MODES = ("weights", "data")
SPECULATIVE_METHODS = ("none", "mtp", "ngram", "eagle", "eagle3", "draft_model")  # kvplan.engines.EngineConfig.speculative_method
MODEL_RUNNERS = ("auto", "V1", "V2")  # EngineConfig.model_runner (VLLM_USE_V2_MODEL_RUNNER unset / 0 / 1)
CUDAGRAPH_MODES = ("NONE", "PIECEWISE", "FULL_AND_PIECEWISE")  # EngineConfig.cudagraph_mode (config/compilation.py)
COMPILE_CACHES = ("cold", "warm")  # EngineConfig.compile_cache
# --mm-processor-kwargs keys EngineConfig plans (kvplan.vllm_args.mm_processor_kwargs_fields: the Qwen ViTs' pixels)
MM_PROCESSOR_KEYS = ("max_pixels", "min_pixels", "size.longest_edge", "size.shortest_edge")
MAX_MM_ITEMS = 8  # modalities / keys in one link value (vLLM's models name at most four: image, video, audio, ...)
MAX_MM_COUNT = 1_000_000  # items of a modality a prompt (vLLM's BaseDummyOptions count: ge=0, default 999)
MAMBA_SSM_DTYPES = ("float32", "bfloat16", "float16")  # kvplan.engines.EngineConfig.mamba_ssm_dtype (SGLang's choices)
# --mamba-full-memory-ratio: above 0 and at most this (EngineConfig's bound; SGLang takes any float, 0.9 by default)
MAX_MAMBA_RATIO = 1000.0
MAX_MAMBA_SLOTS = 10_000_000  # --max-mamba-cache-size (EngineConfig's bound)
OBJECTIVES = ("cost_per_million_tokens", "cost_per_hour", "gpus", "tokens_per_s")  # kvplan.picker.OBJECTIVES
NAME_RE = re.compile(r"^[\w./+@:() -]{1,200}$")


class PlanState(BaseModel):
    """All inputs of a plan. Field names are kvplan's (vLLM flag names); ``FIELDS`` gives link keys."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # model
    model: str = "llama-3.1-8b"  # a preset; ignored while ``config`` is set
    config: str | None = None  # a pasted/uploaded/fetched config.json, compressed (encode_config)
    model_name: str | None = None  # display name of that config (e.g. its Hub id)
    # hardware and parallelism
    gpu: str = "H100-SXM"
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    enable_expert_parallel: bool = False
    # engine
    engine: Literal["vllm", "sglang", "custom"] = "vllm"
    vllm_version: str = VLLM_DEFAULT_VERSION  # the vLLM release line planned (kvplan.engines.VLLM_PROFILES)
    sglang_version: str = SGLANG_DEFAULT_VERSION  # the SGLang release line planned (kvplan.sglang.SGLANG_PROFILES)
    gpu_memory_utilization: float | None = None
    block_size: int | None = None
    kv_cache_dtype: str = "auto"
    weight_format: str | None = None
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    kv_cache_memory_bytes: int | None = None
    enforce_eager: bool = False
    mem_fraction_static: float | None = None
    # serving knobs that change memory (kvplan.engines.EngineConfig, same names; kvplan.web.cached.SERVING_KNOBS gives
    # each one's engine and flag). Planned only with the engine they belong to (cached.engine_config): vLLM's ...
    decode_context_parallel_size: int = 1
    disable_custom_all_reduce: bool = False  # (SGLang has the flag too)
    sampler: Literal["auto", "pytorch", "flashinfer"] = "auto"
    usage_context: Literal["serve", "llm"] = "serve"
    language_model_only: bool = False
    mm_encoder_tp_mode: Literal["weights", "data"] = "weights"
    speculative_method: Literal["none", "mtp", "ngram", "eagle", "eagle3", "draft_model"] = "none"
    num_speculative_tokens: int = 1  # planned only with a speculative_method (0 otherwise)
    # SGLang --speculative-num-draft-tokens (None: SGLang's own, kvplan.sglang.speculative_draft_tokens); planned only
    # with a speculative_method, for a hybrid's MambaPool reserve
    speculative_num_draft_tokens: int | None = None
    drafter: str | None = None  # eagle / eagle3: a DRAFTERS.json head; draft_model: a preset name (kvplan.draft_model)
    enable_prefix_caching: bool | None = None  # None: the release's default
    # vLLM launch settings EngineConfig plans (same names): --limit-mm-per-prompt as (modality, count) pairs,
    # --mm-processor-kwargs (the Qwen ViTs' pixel keys), --skip-mm-profiling, VLLM_USE_V2_MODEL_RUNNER (auto / V1 / V2),
    # --compilation-config cudagraph_mode (None: the release's default), torch.compile's cache at start-up
    mm_limits: tuple[tuple[str, int], ...] = ()
    mm_processor_kwargs: tuple[tuple[str, int], ...] = ()
    skip_mm_profiling: bool = False
    model_runner: Literal["auto", "V1", "V2"] = "auto"
    cudagraph_mode: Literal["NONE", "PIECEWISE", "FULL_AND_PIECEWISE"] | None = None
    compile_cache: Literal["cold", "warm"] = "cold"
    # --moe-backend as vLLM normalizes it (kvplan.vllm_args.moe_backend_value: lower-case, "-" -> "_", up to 40
    # characters; "auto": the oracle's pick), and whether OpenAI's triton_kernels is installed beside vLLM (None: the
    # release's pip default; a pasted vllm/vllm-openai:vX image tag sets True: EngineConfig.triton_kernels)
    moe_backend: str = "auto"
    triton_kernels: bool | None = None
    # Intel Gaudi (vllm-gaudi) only: VLLM_GRAPH_RESERVED_MEM, the share of usable memory kept for HPU graphs (None: 0.1)
    vllm_graph_reserved_mem: float | None = None
    # ... and SGLang's
    max_total_tokens: int | None = None
    dp_attention_size: int = 1
    piecewise_cuda_graph: str | None = None  # None: no flag; enable / enforce / disable (EngineConfig's values)
    moe_dense_tp_size: int | None = None
    # SGLang hybrids' MambaPool (kvplan.sglang.mamba_pool; None: SGLang's default): --mamba-full-memory-ratio (0.9),
    # --max-mamba-cache-size (sized by the ratio), --mamba-ssm-dtype (the config's mamba_ssm_dtype, else float32)
    mamba_full_memory_ratio: float | None = None
    max_mamba_cache_size: int | None = None
    mamba_ssm_dtype: Literal["float32", "bfloat16", "float16"] | None = None
    # SGLang's hybrid SWA pools (kvplan.sglang.hybrid_swa_cell, kvplan.sglang_dsv4): --swa-full-tokens-ratio (None:
    # 0.8, DeepSeek-V4 0.1), --disable-hybrid-swa-memory
    swa_full_tokens_ratio: float | None = None
    disable_hybrid_swa_memory: bool = False
    # SGLang 0.5.20+ env SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION (kvplan.sglang.aiter_haircut)
    sglang_aiter_honor_explicit_mem_fraction: bool = False
    runtime_gib: float = 2.0
    headroom_gib: float = 2.0
    # weights, in place of kvplan's computed shard sums (one or neither; the last chosen wins): a Hub checkpoint
    # whose safetensors headers give every tensor's bytes (re-split for each layout), or a measured per-rank figure
    # (vLLM's "Model loading took X GiB"; basis "measured")
    checkpoint: str | None = None
    # ... or a local checkpoint folder, relative to the operator's KVPLAN_CHECKPOINT_ROOT (kvplan.web.checkpoint
    # .local_folder: checked against the root each time it is read, not here: the link is the visitor's)
    checkpoint_dir: str | None = None
    weights_gib: float | None = None
    # workload
    concurrency: int | None = None
    # paging page
    paging_mode: Literal["list", "uniform", "normal", "lognormal", "exponential"] = "list"
    lengths: tuple[int, ...] = (120, 45, 300, 64, 250, 17, 96, 200)
    length_dist: tuple[int, int, int, int] = (64, 128, 8192, 0)  # count, min, max, seed
    shared_prefix: int = 0
    # parallelism page: layouts compared, as (tp, pp, dp)
    layouts: tuple[tuple[int, int, int], ...] = ((1, 1, 1), (2, 1, 1), (4, 1, 1), (8, 1, 1))
    # gpus page: $ per GPU-hour (the user's, over kvplan.prices' defaults), ranking objective, headroom
    # floor (share of device memory each rank keeps free), whether layouts may span nodes
    prices: tuple[tuple[str, float], ...] = ()
    objective: Literal["cost_per_million_tokens", "cost_per_hour", "gpus", "tokens_per_s"] = \
        "cost_per_million_tokens"
    headroom_floor: float = 0.10
    multi_node: bool = False
    # gpus page: the user's own GPU (memory GiB exposed, bandwidth TB/s, dense BF16 TFLOPS, $ per hour)
    custom_gpu: tuple[float, float, float, float] | None = None
    # import page: the pasted vllm / sglang command, and the GPU it runs on (a command names none)
    command: str | None = None
    import_gpu: str | None = None


# ---------------------------------------------------------------- value parsers (str -> value)
# Each raises ValueError with a short reason; decode turns it into a warning.

def _int(lo: int, hi: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = human_readable_int("value", text)
        except KvplanError as exc:
            raise ValueError(exc.message) from None
        if not lo <= value <= hi:
            raise ValueError(f"must be from {lo:,} to {hi:,}")
        return value
    return parse


def _float(lo: float, hi: float, lo_open: bool = False, hi_open: bool = False) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise ValueError("not a number") from None
        if not math.isfinite(value) or value > hi or value < lo or (lo_open and value == lo) or (
                hi_open and value == hi):
            raise ValueError(f"must be {'above' if lo_open else 'at least'} {lo:g} and "
                             f"{'below' if hi_open else 'at most'} {hi:g}")
        return value
    return parse


def _bool(text: str) -> bool:
    if text in ("1", "true"):
        return True
    if text in ("0", "false"):
        return False
    raise ValueError("must be 1 or 0")


def _choice(options: tuple[str, ...]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in options:
            raise ValueError(f"must be one of {', '.join(options)}")
        return text
    return parse


def _preset(text: str) -> str:
    names = preset_names()
    key = text.strip().lower()
    if key not in names:
        raise ValueError("no such preset")
    return key


def _gpu(text: str) -> str:
    try:
        return get_gpu(text).name
    except KvplanError:
        raise ValueError("no such GPU in the catalog") from None


def _name(text: str) -> str:
    if not NAME_RE.match(text):
        raise ValueError("names are up to 200 letters, digits and ./+@:()-_ characters")
    return text


def _config(text: str) -> str:
    try:
        spec_from_link(text, None)
    except KvplanError as exc:
        raise ValueError(f"the config cannot be planned ({exc})") from None
    return text


def _weight_format(text: str) -> str:
    try:
        return check_format(text)
    except KvplanError as exc:
        raise ValueError(exc.message) from None


def _block(text: str) -> int:
    try:
        return check_block_size(int(text))
    except (ValueError, KvplanError):
        raise ValueError("must be a whole number of tokens from 1 to 65536") from None


def _moe_backend(text: str) -> str:
    """--moe-backend as the app holds it: vLLM's normalized spelling only (kvplan.vllm_args.MOE_BACKEND_RE), so a
    link never plans a name the Import page would have spelled otherwise."""
    if not MOE_BACKEND_RE.fullmatch(text):
        raise ValueError("must be a vLLM --moe-backend name: 1 to 40 lower-case letters, digits and _ (auto, marlin, "
                         "cutlass, ...)")
    return text


def _lengths(text: str) -> tuple[int, ...]:
    return parse_lengths(text)


def _dist(text: str) -> tuple[int, int, int, int]:
    parts = text.split(":")
    if len(parts) != 4 or not all(re.fullmatch(r"[0-9]{1,12}", p) for p in parts):
        raise ValueError("must be count:min:max:seed")
    n, lo, hi, seed = (int(p) for p in parts)
    if not (1 <= n <= MAX_LENGTHS and 0 <= lo <= hi <= MAX_TOKENS and seed < 2**32):
        raise ValueError(f"count 1..{MAX_LENGTHS}, 0 <= min <= max <= {MAX_TOKENS:,}")
    return n, lo, hi, seed


def _layouts(text: str) -> tuple[tuple[int, int, int], ...]:
    out = []
    for item in text.split(","):
        m = re.fullmatch(r"([0-9]{1,4})x([0-9]{1,4})x([0-9]{1,4})", item.strip())
        if not m or not all(1 <= int(g) <= MAX_PARALLEL for g in m.groups()) or int(m[2]) > MAX_PIPELINE:
            raise ValueError(f"must be TPxPPxDP items such as 2x1x1,4x2x1 (PP up to {MAX_PIPELINE})")
        out.append(tuple(int(g) for g in m.groups()))
    if not 1 <= len(out) <= 8:
        raise ValueError("1 to 8 layouts")
    return tuple(dict.fromkeys(out))  # type: ignore[return-value]


def _prices(text: str) -> tuple[tuple[str, float], ...]:
    out = {}
    for item in text.split(","):
        name, sep, price = item.partition(":")
        if not sep:
            raise ValueError("must be GPU:price items such as H100-SXM:2.49")
        out[_gpu(name)] = _float(0.0, 1e6)(price)
    return tuple(sorted(out.items()))


# The GPUs page's own device: memory GiB, bandwidth TB/s, dense BF16 TFLOPS, $ per GPU-hour (bounds: a
# 1-GiB card to a 10-TiB one, and no GPU faster than 1 PB/s or 1 EFLOP/s)
CUSTOM_GPU_BOUNDS = ((0.5, 10_000.0), (0.01, 1_000.0), (0.1, 1_000_000.0), (0.0, 10_000.0))


def _custom_gpu(text: str) -> tuple[float, float, float, float]:
    parts = text.split(":")
    if len(parts) != 4:
        raise ValueError("must be memory_gib:bandwidth_tb_s:bf16_tflops:usd_per_hour, such as 15.7:0.672:88.2:0.2")
    return tuple(_float(lo, hi)(p) for p, (lo, hi) in zip(parts, CUSTOM_GPU_BOUNDS))  # type: ignore[return-value]


def _checkpoint(text: str) -> str:
    from kvplan.web.hub import HubError, check_repo_id  # streamlit-free, and light: huggingface_hub loads per call

    try:
        return check_repo_id(text)
    except HubError as exc:
        raise ValueError(str(exc)) from None


MAX_LOCAL_PATH = 1000  # kvplan.web.checkpoint.MAX_LOCAL_PATH


def _local_path(text: str) -> str:
    text = text.strip()
    if not text or len(text) > MAX_LOCAL_PATH or any(ord(c) < 32 for c in text):
        raise ValueError(f"not a folder path (1 to {MAX_LOCAL_PATH:,} printable characters)")
    return text


def _drafter(text: str) -> str:
    """A DRAFTERS.json name (or one of its HF repos: read as its name), or a preset's (a draft model's: its name or HF
    repo); which heads / models fit the model is the plan's call."""
    from kvplan.draft_model import draft_preset_name
    from kvplan.drafter import drafter_for_model, drafter_manifest

    head = drafter_for_model(text)
    name = head["name"] if head is not None else draft_preset_name(text)
    if name is None:
        raise ValueError("not a draft head kvplan ships (DRAFTERS.json: "
                         + ", ".join(e["name"] for e in drafter_manifest()) + ") nor a preset (a draft model)")
    return name


def _pairs(text: str, what: str, key_ok: Callable[[str], bool], lo: int, hi: int) -> tuple[tuple[str, int], ...]:
    """'image:0,video:2' -> (("image", 0), ("video", 2)): KEY:COUNT items, each key once, counts in [lo, hi]."""
    out: dict[str, int] = {}
    items = [i.strip() for i in text.split(",") if i.strip()]
    if not 1 <= len(items) <= MAX_MM_ITEMS:
        raise ValueError(f"1 to {MAX_MM_ITEMS} {what}:NUMBER items, such as image:0,video:1")
    for item in items:
        key, sep, count = item.partition(":")
        key = key.strip()
        if not sep or not key_ok(key) or not re.fullmatch(r"[0-9]{1,13}", count.strip()):
            raise ValueError(f"item {item[:40]!r} is not {what}:NUMBER")
        if key in out:
            raise ValueError(f"{key} given twice")
        value = int(count)
        if not lo <= value <= hi:
            raise ValueError(f"{key}: must be from {lo:,} to {hi:,}")
        out[key] = value
    return tuple(out.items())


def _mm_limits(text: str) -> tuple[tuple[str, int], ...]:
    """--limit-mm-per-prompt as MODALITY:COUNT items ('image:0,video:0'); a count is a whole number >= 0."""
    return _pairs(text, "MODALITY", lambda k: re.fullmatch(r"[a-z][a-z0-9_]{0,39}", k) is not None, 0, MAX_MM_COUNT)


def _mm_processor_kwargs(text: str) -> tuple[tuple[str, int], ...]:
    """--mm-processor-kwargs keys kvplan plans as KEY:PIXELS items ('max_pixels:1003520'); size.shortest_edge only
    with size.longest_edge (vLLM's Qwen-VL video item reads it: kvplan.vllm_args.mm_processor_kwargs_fields)."""
    pairs = _pairs(text, "KEY", lambda k: k in MM_PROCESSOR_KEYS, 1, 2**40)
    if "size.shortest_edge" in dict(pairs) and "size.longest_edge" not in dict(pairs):
        raise ValueError("size.shortest_edge needs size.longest_edge")
    return pairs


def _fmt_pairs(value: tuple[tuple[str, int], ...]) -> str:
    return ",".join(f"{k}:{v}" for k, v in value)


def _command(text: str) -> str:
    if len(text) > MAX_COMMAND_CHARS:
        raise ValueError(f"longer than {MAX_COMMAND_CHARS:,} characters")
    return text


def fmt_decimal(value: float) -> str:
    """A float as a plain decimal that reads back exactly: repr's shortest round-trip digits, written without an
    exponent (1000000.0 -> "1000000", 1e-05 -> "0.00001", 0.9 -> "0.9", 12.345678901234567 -> as is). Links once
    wrote ``{:g}`` ("1e+06"); float() still reads those, so old links decode unchanged."""
    text = format(Decimal(repr(float(value))), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


_fmt_float = fmt_decimal  # the link's float format (the name the FIELDS table and older callers use)


@dataclass(frozen=True)
class Field:
    name: str  # PlanState field
    key: str  # link key
    parse: Callable[[str], Any]
    format: Callable[[Any], str] = str


_b = lambda v: "1" if v else "0"  # noqa: E731
FIELDS: tuple[Field, ...] = (
    Field("model", "m", _preset),
    Field("config", "cfg", _config),
    Field("model_name", "mn", _name),
    Field("gpu", "g", _gpu),
    Field("tensor_parallel_size", "tp", _int(1, MAX_PARALLEL)),
    Field("pipeline_parallel_size", "pp", _int(1, MAX_PIPELINE)),
    Field("data_parallel_size", "dp", _int(1, MAX_PARALLEL)),
    Field("enable_expert_parallel", "ep", _bool, _b),
    Field("engine", "e", _choice(ENGINES)),
    Field("vllm_version", "vv", _choice(tuple(VLLM_PROFILES))),
    Field("sglang_version", "sv", _choice(tuple(SGLANG_PROFILES))),
    Field("gpu_memory_utilization", "gmu", _float(0.0, 1.0, lo_open=True), _fmt_float),
    Field("block_size", "bs", _block),
    Field("kv_cache_dtype", "kvd", _choice(KV_DTYPES)),
    Field("weight_format", "wf", _weight_format),
    Field("max_model_len", "len", _int(1, 100_000_000)),
    Field("max_num_seqs", "seqs", _int(1, 1_000_000)),
    Field("max_num_batched_tokens", "mbt", _int(1, 100_000_000)),
    Field("kv_cache_memory_bytes", "kvm", _int(1, 2**50)),
    Field("enforce_eager", "eager", _bool, _b),
    Field("mem_fraction_static", "mfs", _float(0.0, 1.0, lo_open=True), _fmt_float),
    # the bounds are EngineConfig's (kvplan.engines)
    Field("decode_context_parallel_size", "dcp", _int(1, 1024)),
    Field("disable_custom_all_reduce", "ncar", _bool, _b),
    Field("sampler", "smp", _choice(SAMPLERS)),
    Field("usage_context", "uc", _choice(USAGE_CONTEXTS)),
    Field("language_model_only", "lmo", _bool, _b),
    Field("mm_encoder_tp_mode", "mmtp", _choice(MM_ENCODER_TP_MODES)),
    Field("speculative_method", "spec", _choice(SPECULATIVE_METHODS)),
    Field("num_speculative_tokens", "nspec", _int(1, 64)),
    Field("speculative_num_draft_tokens", "ndt", _int(1, 1024)),  # EngineConfig's bounds
    Field("drafter", "dft", _drafter),
    Field("enable_prefix_caching", "apc", _bool, _b),
    Field("mm_limits", "mml", _mm_limits, _fmt_pairs),
    Field("mm_processor_kwargs", "mmpk", _mm_processor_kwargs, _fmt_pairs),
    Field("skip_mm_profiling", "skmp", _bool, _b),
    Field("model_runner", "mr", _choice(MODEL_RUNNERS)),
    Field("cudagraph_mode", "cgm", _choice(CUDAGRAPH_MODES)),
    Field("compile_cache", "cc", _choice(COMPILE_CACHES)),
    Field("moe_backend", "moe", _moe_backend),
    Field("triton_kernels", "tk", _bool, _b),
    Field("vllm_graph_reserved_mem", "grm", _float(0.0, 1.0, hi_open=True), _fmt_float),  # EngineConfig's [0, 1)
    Field("max_total_tokens", "mtt", _int(1, 10**12)),  # a pool, not a sequence: past MAX_TOKENS
    Field("dp_attention_size", "dpa", _int(1, MAX_PARALLEL)),
    Field("moe_dense_tp_size", "mdtp", _int(1, MAX_PARALLEL)),
    Field("piecewise_cuda_graph", "pcg", _choice(("enable", "enforce", "disable"))),
    Field("mamba_full_memory_ratio", "mfr", _float(0.0, MAX_MAMBA_RATIO, lo_open=True), _fmt_float),
    Field("max_mamba_cache_size", "mmc", _int(1, MAX_MAMBA_SLOTS)),
    Field("mamba_ssm_dtype", "msd", _choice(MAMBA_SSM_DTYPES)),
    Field("swa_full_tokens_ratio", "swr", _float(0.0, 1.0, lo_open=True), _fmt_float),  # SGLang's (0, 1.0]
    Field("disable_hybrid_swa_memory", "dhs", _bool, _b),
    Field("sglang_aiter_honor_explicit_mem_fraction", "aiter", _bool, _b),
    Field("runtime_gib", "rt", _float(0.0, 10_000.0), _fmt_float),
    Field("headroom_gib", "hr", _float(0.0, 10_000.0), _fmt_float),
    Field("checkpoint", "ck", _checkpoint),
    Field("checkpoint_dir", "ckd", _local_path),
    # per rank; the plan also caps it at WEIGHTS_GIB_PER_DEVICE x the GPU's memory (kvplan.web.cached.weights_choice)
    Field("weights_gib", "wg", _float(0.0, MAX_WEIGHTS_GIB, lo_open=True), _fmt_float),
    Field("concurrency", "conc", _int(1, 10_000_000)),
    Field("paging_mode", "pm", _choice(PAGING_MODES)),
    Field("lengths", "pl", _lengths, lambda v: ",".join(map(str, v))),
    Field("length_dist", "pd", _dist, lambda v: ":".join(map(str, v))),
    Field("shared_prefix", "pfx", _int(0, MAX_TOKENS)),
    Field("layouts", "lay", _layouts, lambda v: ",".join("x".join(map(str, t)) for t in v)),
    Field("prices", "pr", _prices, lambda v: ",".join(f"{n}:{_fmt_float(p)}" for n, p in v)),
    Field("objective", "obj", _choice(OBJECTIVES)),
    Field("headroom_floor", "hf", _float(0.0, 0.9), _fmt_float),
    Field("multi_node", "multi", _bool, _b),
    Field("custom_gpu", "cg", _custom_gpu, lambda v: ":".join(_fmt_float(x) for x in v)),
    Field("command", "cmd", _command),
    Field("import_gpu", "ig", _gpu),
)
BY_KEY = {f.key: f for f in FIELDS}
BY_NAME = {f.name: f for f in FIELDS}
DEFAULT = PlanState()
assert set(BY_NAME) == set(PlanState.model_fields), "every PlanState field needs a link key"


# ---------------------------------------------------------------- config <-> link text

def encode_config(config: Mapping[str, Any]) -> str:
    """A config dict -> link text: minified JSON (keys sorted), zlib level 9, urlsafe base64 unpadded.

    ``allow_nan=True`` on purpose: a real config may hold Infinity / NaN (Nemotron-3-Super's
    ``time_step_limit``), and this text is read back only by ``load_config_text``, which reads them."""
    raw = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=True).encode()
    text = base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")
    if len(text) > MAX_CONFIG_PARAM:
        raise ValueError(f"the config is too large for a link ({len(text):,} characters compressed)")
    return text


def decode_config(text: str) -> dict[str, Any]:
    """Link text -> config dict. Raises ValueError; never inflates past MAX_CONFIG_BYTES."""
    if len(text) > MAX_CONFIG_PARAM or not re.fullmatch(r"[A-Za-z0-9_-]+", text):
        raise ValueError("not a compressed config")
    try:
        packed = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, MAX_CONFIG_BYTES + 1)
    except (binascii.Error, zlib.error):
        raise ValueError("not a compressed config (damaged or truncated)") from None
    if len(raw) > MAX_CONFIG_BYTES or inflater.unconsumed_tail or not inflater.eof:
        raise ValueError("damaged, truncated or larger than a config.json may be")
    try:
        return load_config_text(raw)
    except KvplanError as exc:
        raise ValueError(exc.message) from None


_SPECS: "OrderedDict[tuple[bytes, str | None], ModelSpec]" = OrderedDict()
_SPECS_LOCK = threading.Lock()


def _digest(config_text: str) -> bytes:
    """The cache key of a config text: 16 bytes (the cache never holds the texts themselves)."""
    return hashlib.blake2b(config_text.encode(), digest_size=16).digest()


def spec_from_link(config_text: str, name: str | None,
                   progress: Callable[[float, str], None] | None = None) -> ModelSpec:
    """The spec of a linked config (immutable, so cached by content: a 16-byte digest of the text, so
    the cache never holds the texts themselves, up to MAX_CONFIG_PARAM characters each; the last
    SPEC_CACHE_ENTRIES). Raises ValueError on a damaged link, ConfigError on a config that cannot be planned.

    ``progress(fraction, message)``: called while a spec is built through transformers (seconds, the
    first time; see ``build_spec``); never for a cached spec or a family kvplan models natively."""
    digest = _digest(config_text)
    key = (digest, name)
    spec = _cached_spec(key)
    if spec is None:
        # Built once per config (the name is only the spec's label): a link's check (name None) and the
        # page's model (its Hub id) share one build, which through transformers takes seconds.
        base = _cached_spec((digest, None))
        if base is None:
            base = build_spec(decode_config(config_text), None, progress)
            _store((digest, None), base)
        spec = base if name is None or name == base.name else base.model_copy(update={"name": name})
        _store(key, spec)
    return spec


def _cached_spec(key: tuple[bytes, str | None]) -> ModelSpec | None:
    with _SPECS_LOCK:
        spec = _SPECS.get(key)
        if spec is not None:
            _SPECS.move_to_end(key)
        return spec


def _store(key: tuple[bytes, str | None], spec: ModelSpec) -> None:
    with _SPECS_LOCK:
        _SPECS[key] = spec
        while len(_SPECS) > SPEC_CACHE_ENTRIES:
            _SPECS.popitem(last=False)


def is_cached(config_text: str, name: str | None = None) -> bool:
    """Whether the config's spec is built already (so no progress is worth showing)."""
    digest = _digest(config_text)
    return (digest, name) in _SPECS or (digest, None) in _SPECS


def needs_transformers(config: Mapping[str, Any]) -> bool:
    """Whether ``parse_config`` would build this config through the transformers-backed path (slow the
    first time): a model_type no native family builds, that transformers knows."""
    from kvplan import families, hf_config

    try:
        _, model_type, _, _ = hf_config.text_decoder_config(config)
    except (KvplanError, TypeError, ValueError, AttributeError):
        return False
    if model_type in families.BUILDERS:
        return False
    via = hf_config.transformers_builder()
    try:
        return via is not None and bool(via.knows(config))
    except Exception:  # the path's own check failing means parse_config will not take it either
        return False


def build_spec(config: Mapping[str, Any], name: str | None,
               progress: Callable[[float, str], None] | None = None) -> ModelSpec:
    """``parse_config``; through transformers with ``progress`` reported when that path takes it and its
    ``build_spec`` accepts a ``progress`` argument (the same spec as parse_config's, which calls it
    with only the config and name)."""
    if progress is not None and needs_transformers(config):
        import inspect

        from kvplan import hf_config

        via = hf_config.transformers_builder()
        if "progress" in inspect.signature(via.build_spec).parameters:
            return via.build_spec(config, name=name or hf_config.default_model_name(config), progress=progress)
    return parse_config(config, name=name)


def model_spec(state: PlanState) -> ModelSpec:
    """The model the state names: its linked config, else its preset."""
    if state.config:
        return spec_from_link(state.config, state.model_name)
    return load_preset(state.model)


# ---------------------------------------------------------------- state <-> query params

def encode(state: PlanState) -> dict[str, str]:
    """Query parameters for ``state``: only non-default values, plus v=1 when there are any."""
    out = {}
    for f in FIELDS:
        value = getattr(state, f.name)
        if value != getattr(DEFAULT, f.name) and value is not None:
            out[f.key] = f.format(value)
    return {"v": str(VERSION), **out} if out else {}


def link_params(state: PlanState, limit: int = MAX_LINK_QUERY) -> tuple[dict[str, str], list[str]]:
    """The query parameters the app writes for ``state``: ``encode(state)``, unless its query string is
    longer than ``limit``; then the long fields (the pasted config, the command, the lengths) are left
    out, biggest first, and listed under ``cut`` so whoever opens the link is told. Returns (params, cut
    keys); the plan JSON download always carries everything."""
    params = encode(state)
    cut: list[str] = []
    for key in CUTTABLE:
        if query_length(params) <= limit:
            break
        if key in params:
            del params[key]
            cut.append(key)
            if key == "cfg":
                params.pop("mn", None)  # the name of a config the link does not carry would mislead
    if cut:
        params[CUT_KEY] = ",".join(cut)
    return params, cut


def query_length(params: Mapping[str, str]) -> int:
    return len(urllib.parse.urlencode(params))


# What an unset planning input plans, in the sidebar's words (its boxes' placeholders, kvplan.web.widgets), for the
# link warning "using the default (...)": "unset" told a vLLM user nothing about what the page now plans.
UNSET_WORDS: dict[str, str] = {
    "max_model_len": "the model's maximum context",
    "concurrency": "as many sequences as fit",
    "max_num_seqs": "the engine's default",
    "max_num_batched_tokens": "the engine's default",
    "gpu_memory_utilization": "the release's default",
    "block_size": "the engine's own choice for this model",
    "kv_cache_memory_bytes": "profiled",
    "mem_fraction_static": "SGLang's default",
    "weight_format": "as shipped",
}


def decode(params: Mapping[str, str | list[str]]) -> tuple[PlanState, list[str]]:
    """(state, warnings) for a link's query parameters. Never raises on any input."""
    values: dict[str, Any] = {}
    warnings: list[str] = []
    version = _last(params.get("v")) if "v" in params else None
    if version is not None and version != str(VERSION):
        warnings.append(f"Link parameter 'v' (link version) is {version[:20]!r}; this app writes v={VERSION}. "
                        "Reading the parameters it knows.")
    if CUT_KEY in params:
        cut = [BY_KEY[k].name for k in _last(params[CUT_KEY]).split(",") if k in CUTTABLE]
        if cut:
            warnings.append(f"This link was too long to carry {', '.join(cut)}: those use their defaults here. "
                            "Ask for the plan JSON (Share or save this plan, Plan JSON) to open the whole plan.")
    for key, raw in params.items():
        if key in ("v", CUT_KEY):
            continue
        field = BY_KEY.get(key)
        if field is None:
            warnings.append(f"Link parameter {key[:40]!r} is not one kvplan knows; ignored.")
            continue
        text = _last(raw)
        try:
            values[field.name] = field.parse(text)
        except ValueError as exc:
            default = getattr(DEFAULT, field.name)
            shown = UNSET_WORDS.get(field.name, "unset") if default is None or default == () else \
                field.format(default)
            warnings.append(f"Link parameter '{key}' ({field.name}) = {text[:60]!r}: {exc}; "
                            f"using the default ({shown}).")
    if values.get("checkpoint") and values.get("weights_gib") is not None:
        # the app writes one or the other (the last chosen wins); a link with both was edited by hand
        warnings.append(f"Link parameters 'ck' (checkpoint) and 'wg' (weights_gib) are both set; the weights can come "
                        f"from one only: planning the measured {_fmt_float(values['weights_gib'])} GiB, not the "
                        f"checkpoint {values['checkpoint']}.")
        del values["checkpoint"]
    if values.get("checkpoint_dir") and (values.get("checkpoint") or values.get("weights_gib") is not None):
        other = "'wg' (weights_gib)" if values.get("weights_gib") is not None else "'ck' (checkpoint)"
        warnings.append(f"Link parameters 'ckd' (checkpoint_dir) and {other} are both set; the weights can come from "
                        f"one only: planning {other}, not the local folder {values['checkpoint_dir'][:200]}.")
        del values["checkpoint_dir"]
    state = PlanState(**values)
    return state, warnings


def _last(raw: str | list[str] | None) -> str:
    if isinstance(raw, list | tuple):
        return str(raw[-1]) if raw else ""
    return "" if raw is None else str(raw)


# ---------------------------------------------------------------- plan files (JSON / CSV)

def to_document(state: PlanState) -> dict[str, Any]:
    """The inputs as a JSON-ready dict, long names, non-defaults only (the config as JSON itself).

    Strict JSON (``json.dumps(..., allow_nan=False)`` works on it): a config holding Infinity / NaN
    travels as its compressed link text instead (``from_document`` reads either), with a note."""
    inputs: dict[str, Any] = {}
    doc: dict[str, Any] = {"kvplan_plan": VERSION, "inputs": inputs}
    for f in FIELDS:
        value = getattr(state, f.name)
        if value == getattr(DEFAULT, f.name) or value is None:
            continue
        if f.name == "config":
            config = decode_config(value)
            if _has_non_finite(config):
                doc["config_note"] = ("inputs.config is the compressed config text (as in a link): the config "
                                      "holds Infinity or NaN, which strict JSON cannot")
            else:
                value = config
        inputs[f.name] = value
    return doc


def _has_non_finite(value: Any) -> bool:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return True
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def from_document(doc: Any) -> tuple[PlanState, list[str]]:
    """A plan JSON (``to_document``'s shape, or a downloaded plan with results) -> (state, warnings)."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("inputs"), Mapping):
        return DEFAULT, ["The file is not a kvplan plan (no 'inputs' object); nothing restored."]
    params: dict[str, str] = {"v": str(doc.get("kvplan_plan", VERSION))}
    warnings: list[str] = []
    for name, value in doc["inputs"].items():
        field = BY_NAME.get(name)
        if field is None:
            warnings.append(f"Plan field {str(name)[:40]!r} is not one kvplan knows; ignored.")
            continue
        if value is None:
            continue
        try:
            params[field.key] = _as_text(field, value)
        except (TypeError, ValueError) as exc:
            warnings.append(f"Plan field '{name}': {exc}; using the default.")
    state, more = decode(params)
    return state, warnings + more


def _as_text(field: Field, value: Any) -> str:
    if field.name == "config":
        return encode_config(value) if isinstance(value, Mapping) else str(value)
    if isinstance(value, bool):
        return _b(value)
    if isinstance(value, list | tuple):
        items = [tuple(v) if isinstance(v, list) else v for v in value]
        return field.format(tuple(items))
    return str(value)


# ---------------------------------------------------------------- workload helpers

def parse_lengths(text: str) -> tuple[int, ...]:
    """'5, 3, 8' or '5 3 8' -> (5, 3, 8). Raises ValueError naming the bad item."""
    items = [t for t in re.split(r"[\s,;]+", text.strip()) if t]
    if not items:
        raise ValueError("give at least one length")
    if len(items) > MAX_LENGTHS:
        raise ValueError(f"at most {MAX_LENGTHS:,} sequences")
    out = []
    for item in items:
        if not re.fullmatch(r"[0-9]{1,12}", item) or int(item) > MAX_TOKENS:
            raise ValueError(f"{item[:20]!r} is not a length from 0 to {MAX_TOKENS:,}")
        out.append(int(item))
    return tuple(out)


def workload_lengths(state: PlanState) -> tuple[int, ...]:
    """The paging page's sequence lengths: the list, or a seeded draw (same seed, same draw).

    uniform: integers in [min, max]; normal / lognormal / exponential: ``kvplan.paging.sample_lengths``
    centred on (min + max) / 2 with spread (max - min) / 2, clipped to [min, max].
    """
    if state.paging_mode == "list":
        return state.lengths
    n, lo, hi, seed = state.length_dist
    if state.paging_mode == "uniform":
        rng = random.Random(seed)
        return tuple(rng.randint(lo, hi) for _ in range(n))
    from kvplan.paging import sample_lengths

    drawn = sample_lengths(n, state.paging_mode, max(1, (lo + hi) // 2), (hi - lo) // 2, seed, max_len=max(1, hi))
    return tuple(max(lo, x) for x in drawn)
