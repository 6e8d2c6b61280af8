"""The kvplan calls the pages make, cached per input (``st.cache_resource``, bounded).

Every function takes a ``PlanState`` (hashable: frozen, tuples only) and returns kvplan's own result
models. Nothing here computes: it builds kvplan's inputs from the state and calls kvplan.

Why ``cache_resource`` and not ``cache_data``: ``cache_data`` hands every caller a fresh unpickled
copy, which for a GPU-picker result is 2.5 ms of every rerun of the GPUs page (0.5-0.8 ms for a plan
or a model). The results are frozen pydantic models that nothing mutates, so one shared object is
safe; ``tests/test_app_budget.py`` checks that a rerun gets the very same object back.
"""

import functools
import hashlib
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

import streamlit as st
from pydantic import ValidationError

from kvplan.drafter import DRAFT_METHODS, FIELD, drafter_for_model, drafter_manifest, load_drafter
from kvplan.engines import EngineConfig
from kvplan.errors import KvplanError, PlanInputError
from kvplan.gpus import GpuSpec, get_gpu
from kvplan.paging import Paging, block_map, page_sequences, waste_by_block_size
from kvplan.params import ParamBreakdown, count_params
from kvplan.parallel import Layout
from kvplan.picker import Picker, pick_gpus
from kvplan.plan import Plan, SweepPoint, context_sweep, plan
from kvplan.prices import effective_prices
from kvplan.spec import ModelSpec
from kvplan.units import GiB
from kvplan.vllm_args import preset_for_model
from kvplan.weights import WeightBytes, weight_bytes
from kvplan.web.state import (
    DEFAULT, WEIGHTS_GIB_PER_DEVICE, PlanState, fmt_decimal, model_spec, workload_lengths,
)

# The serving knobs that change memory beyond the sidebar's main inputs: PlanState field (EngineConfig's name) ->
# (the engines whose flag it is, the flag as the engine spells it). Each is planned only with its own engines: with
# another engine it is kept in the state (and the link) but not planned, and the sidebar and Import say so.
SERVING_KNOBS: dict[str, tuple[tuple[str, ...], str]] = {
    "decode_context_parallel_size": (("vllm",), "--decode-context-parallel-size (-dcp)"),
    "disable_custom_all_reduce": (("vllm", "sglang"), "--disable-custom-all-reduce"),
    "sampler": (("vllm",), "VLLM_USE_FLASHINFER_SAMPLER=1 / 0"),
    "usage_context": (("vllm",), "vllm serve, or the offline LLM class"),
    # every modality of a tower at 0 in --limit-mm-per-prompt (mm_limits) also skips the tower
    # (kvplan.vllm_mm.loads_tower)
    "language_model_only": (("vllm",), "--language-model-only"),
    "mm_encoder_tp_mode": (("vllm",), "--mm-encoder-tp-mode"),
    "mm_limits": (("vllm",), "--limit-mm-per-prompt"),
    "mm_processor_kwargs": (("vllm",), "--mm-processor-kwargs"),
    "skip_mm_profiling": (("vllm",), "--skip-mm-profiling"),
    "model_runner": (("vllm",), "VLLM_USE_V2_MODEL_RUNNER=0 / 1"),
    "cudagraph_mode": (("vllm",), "--compilation-config cudagraph_mode"),
    # not a flag: whether ~/.cache/vllm/torch_compile_cache holds this model's graphs at start-up
    "compile_cache": (("vllm",), "torch.compile cache at start-up"),
    # --moe-backend (the held MoE workspace of marlin / cutlass is sized: kvplan.vllm_args.MOE_BACKEND_PLANNED)
    "moe_backend": (("vllm",), "--moe-backend"),
    # OpenAI's triton_kernels beside vLLM (a vllm/vllm-openai image): MXFP4 MoE on Hopper takes Triton's layout
    # from 0.10.2 (kvplan.vllm_layouts.mxfp4_triton_kernels)
    "triton_kernels": (("vllm",), "triton_kernels installed (a vllm/vllm-openai image)"),
    # read by vllm-gaudi only: the sidebar draws it for an Intel Gaudi GPU (the core warns on another one)
    "vllm_graph_reserved_mem": (("vllm",), "VLLM_GRAPH_RESERVED_MEM (Intel Gaudi)"),
    # SGLang: --speculative-algorithm NEXTN / EAGLE on the checkpoint's MTP layers ("mtp") or NGRAM ("ngram"), and
    # --speculative-num-steps (kvplan.sglang.speculative_refusal: what it plans)
    "speculative_method": (("vllm", "sglang"), "--speculative-config method (mtp, ngram, eagle, eagle3 or "
                                               "draft_model); SGLang: --speculative-algorithm"),
    "num_speculative_tokens": (("vllm", "sglang"), "--speculative-config num_speculative_tokens; SGLang: "
                                                   "--speculative-num-steps"),
    # SGLang --speculative-num-draft-tokens: the draft-token reserve of a hybrid's MambaPool (kvplan.sglang.mamba_pool)
    "speculative_num_draft_tokens": (("sglang",), "--speculative-num-draft-tokens"),
    "drafter": (("vllm", "sglang"), "--speculative-config model (an EAGLE head kvplan ships, for eagle / eagle3; a "
                                    "preset, for draft_model); SGLang: --speculative-draft-model-path (EAGLE3)"),
    # SGLang: --disable-radix-cache (its hybrids' MambaPool then holds one state slot a request: kvplan.sglang.mamba_pool)
    "enable_prefix_caching": (("vllm", "sglang"), "--enable-prefix-caching / --no-enable-prefix-caching (SGLang: "
                                                  "--disable-radix-cache)"),
    "max_total_tokens": (("sglang",), "--max-total-tokens"),
    "dp_attention_size": (("sglang",), "--enable-dp-attention --dp N"),
    "moe_dense_tp_size": (("sglang",), "--moe-dense-tp-size"),
    "piecewise_cuda_graph": (("sglang",), "--enable- / --enforce- / --disable-piecewise-cuda-graph"),
    # a hybrid's MambaPool (kvplan.sglang.mamba_pool; planned only for a model with recurrent-state layers)
    "mamba_full_memory_ratio": (("sglang",), "--mamba-full-memory-ratio"),
    "max_mamba_cache_size": (("sglang",), "--max-mamba-cache-size"),
    "mamba_ssm_dtype": (("sglang",), "--mamba-ssm-dtype"),
    "sglang_aiter_honor_explicit_mem_fraction": (("sglang",), "SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION=1"),
    # SGLang's hybrid SWA pools (kvplan.sglang.hybrid_swa_cell, kvplan.sglang_dsv4)
    "swa_full_tokens_ratio": (("sglang",), "--swa-full-tokens-ratio"),
    "disable_hybrid_swa_memory": (("sglang",), "--disable-hybrid-swa-memory"),
}
ENGINE_FIELDS = ("engine", "vllm_version", "sglang_version", "gpu_memory_utilization", "block_size", "kv_cache_dtype", "weight_format", "max_model_len",
                 "max_num_seqs", "max_num_batched_tokens", "kv_cache_memory_bytes", "enforce_eager",
                 "mem_fraction_static", "runtime_gib", "headroom_gib", *SERVING_KNOBS)
MAX_BLOCK_MAP_SEQUENCES = 8
# Blocks the block map draws. Past this the chart is unreadable, and a link may ask for 10^8 tokens
# at block size 1 (10^8 bars: gigabytes and minutes of the server for everyone).
MAX_BLOCK_MAP_BLOCKS = 2048
_HASH = {PlanState: PlanState.model_dump_json}
# In front of the st.cache_resource functions, keyed by the PlanState itself: a page asks for the spec, the
# plan and the sweep of the same state several times a rerun, and each st.cache_resource lookup costs
# 0.25-0.35 ms (a key PlanState built and validated, then hashed through model_dump_json) where a hit
# here is a 1 us hash. Same shared frozen results; exceptions are not memoized (as st.cache_resource).
_memo = functools.lru_cache(maxsize=32)


def engine_config(state: PlanState, **override) -> EngineConfig:
    """The state's engine knobs; an out-of-range value raises PlanInputError naming the knob. A serving knob of
    another engine (``off_engine_names``) is left at EngineConfig's default; the speculative token count is planned
    only with a speculative method, the drafter only with an EAGLE one (``eagle_draft``)."""
    fields = {name: getattr(state, name) for name in ENGINE_FIELDS
              if name not in SERVING_KNOBS or state.engine in SERVING_KNOBS[name][0]}
    if fields.get("speculative_method", "none") == "none":
        fields.pop("num_speculative_tokens", None)
        fields.pop("speculative_num_draft_tokens", None)
    fields.pop("drafter", None)  # a name: EngineConfig takes the head itself
    if fields.get("speculative_method") in DRAFT_METHODS and (
            state.engine == "vllm" or fields["speculative_method"] == "eagle3"):  # SGLang: EAGLE3 heads only
        fields["draft"] = eagle_draft(state)
    elif fields.get("speculative_method") == "draft_model":
        fields["draft"] = draft_model_draft(state)
    fields |= override
    try:
        return EngineConfig(**fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise PlanInputError(str(err["loc"][0]), err["msg"]) from None


def off_engine_names(state: PlanState) -> list[str]:
    """The serving knobs set in the state (not at their defaults) that the state's engine has no flag for: kept for
    when that engine is chosen again, not planned now."""
    return [n for n, (engines, _) in SERVING_KNOBS.items()
            if state.engine not in engines and getattr(state, n) != getattr(DEFAULT, n)
            and not (n in ("num_speculative_tokens", "speculative_num_draft_tokens")
                     and state.speculative_method == "none")
            and not (n == "drafter" and state.speculative_method not in (*DRAFT_METHODS, "draft_model"))]


@_memo
def swa_pool_model(state: PlanState) -> bool:
    """Whether SGLang keeps a sliding-window pool for the state's model (kvplan.sglang.has_swa_pool), so whether the
    sidebar's --swa-full-tokens-ratio / --disable-hybrid-swa-memory knobs change the plan. False for a model that
    cannot be built (the pages show that refusal)."""
    from kvplan.sglang import has_swa_pool

    try:
        return has_swa_pool(spec(state).model_type)
    except KvplanError:
        return False


@_memo
def recurrent_layers(state: PlanState) -> int:
    """How many of the state's model's layers keep a recurrent state (kvplan.layers STATE_KINDS, alone or in a
    composite layer): the layers SGLang keeps in its MambaPool, so whether the sidebar's MambaPool knobs and the
    radix-cache switch change the plan. 0 for a model that cannot be built (the pages show that refusal)."""
    from kvplan.layers import STATE_KINDS, cache_parts

    try:
        layers = spec(state).layers
    except KvplanError:
        return 0
    return sum(any(part.kind in STATE_KINDS for part in cache_parts(layer.cache)) for layer in layers)


# ----------------------------------------------------------------------------- EAGLE draft heads (kvplan.drafter)

def model_preset(state: PlanState) -> str | None:
    """The preset the state's model is: its preset, or for a linked config the preset its name (a Hub id) maps to
    (kvplan.vllm_args.preset_for_model: an -Instruct variant is its base's shape); None for any other config."""
    return preset_for_model(state.model_name) if state.config else state.model


def drafters_for(state: PlanState) -> tuple[str, ...]:
    """The draft heads kvplan ships (kvplan/presets/DRAFTERS.json) for the state's model and speculative method:
    those whose ``target`` is the model's preset and whose ``method`` is the state's."""
    preset = model_preset(state)
    return tuple(e["name"] for e in drafter_manifest()
                 if preset and e["target"] == preset and e["method"] == state.speculative_method)


def eagle_draft(state: PlanState):
    """The DraftSpec an eagle / eagle3 state plans (kvplan.drafter.load_drafter of its ``drafter``), or None when none
    is chosen or the method is not an EAGLE one (kvplan.plan then refuses an EAGLE method in the core's own words:
    drafter.check_plan "needs its draft head"). A head trained for another model (a link may name any) is refused,
    naming --speculative-config: the core would plan some of them (gpt-oss-20b's head has gpt-oss-120b's shapes)."""
    if state.drafter is None or state.speculative_method not in DRAFT_METHODS:
        return None
    entry = drafter_for_model(state.drafter)
    preset = model_preset(state)
    if entry is not None and entry["target"] != preset:
        heads = drafters_for(state)
        model = preset or state.model_name or "this config"
        raise PlanInputError(FIELD, f"the draft head {state.drafter} is trained for {entry['target']}, not {model}: "
                             + (f"choose {', '.join(heads)}" if heads else
                                f"kvplan ships no {state.speculative_method} head for {model}; plan it with the CLI "
                                "(kvplan plan ... --speculative-config '...' --draft-config PATH)"))
    return _load_drafter(state.drafter, state.speculative_method)


_load_drafter = functools.lru_cache(maxsize=16)(load_drafter)  # a DraftSpec per (name, method); refusals not kept


def draft_models_for(state: PlanState) -> tuple[tuple[str, ...], str | None]:
    """The presets the draft_model select offers for the state's model and its default (kvplan.draft_model.
    draft_model_candidates: the target's vocabulary, smaller; the smallest of its family by default); none for a
    model that cannot be built (the pages show that refusal)."""
    from kvplan.draft_model import draft_model_candidates

    try:
        return draft_model_candidates(spec(state))
    except KvplanError:
        return (), None


def draft_model_draft(state: PlanState):
    """The DraftSpec a draft_model state plans (a preset, kvplan.draft_model.load_draft_model), or None when none is
    chosen (kvplan.plan then refuses in the core's words); an EAGLE head named instead is refused."""
    if state.drafter is None:
        return None
    if drafter_for_model(state.drafter) is not None:
        raise PlanInputError(FIELD, f"{state.drafter} is an EAGLE head, not a draft model: choose a preset as the "
                             "draft model (method draft_model) or method eagle / eagle3")
    return _load_draft_model(state.drafter)


@functools.lru_cache(maxsize=16)
def _load_draft_model(name: str):
    from kvplan.draft_model import load_draft_model

    return load_draft_model(name)


def layout(state: PlanState) -> Layout:
    return Layout(state.tensor_parallel_size, state.pipeline_parallel_size, state.data_parallel_size,
                  state.enable_expert_parallel)


def _model_key(state: PlanState) -> PlanState:
    """The part of the state the model depends on (so unrelated widgets do not miss the cache)."""
    return PlanState(model=state.model, config=state.config, model_name=state.model_name)


def _plan_key(state: PlanState) -> PlanState:
    keep = ("model", "config", "model_name", "gpu", "tensor_parallel_size", "pipeline_parallel_size",
            "data_parallel_size", "enable_expert_parallel", "concurrency", *ENGINE_FIELDS)
    return PlanState(**{name: getattr(state, name) for name in keep})


@st.cache_resource(hash_funcs=_HASH, max_entries=64, show_spinner=False)
def _spec(key: PlanState) -> ModelSpec:
    return model_spec(key)


@_memo
def spec(state: PlanState) -> ModelSpec:
    return _spec(_model_key(state))


@st.cache_resource(hash_funcs=_HASH, max_entries=64, show_spinner=False)
def _model_numbers(key: PlanState, weight_format: str | None) -> tuple[ParamBreakdown, WeightBytes]:
    s = model_spec(key)
    return count_params(s), weight_bytes(s, weight_format)


@_memo
def model_numbers(state: PlanState) -> tuple[ParamBreakdown, WeightBytes]:
    return _model_numbers(_model_key(state), state.weight_format)


@st.cache_resource(hash_funcs=_HASH, max_entries=256, show_spinner=False)
def _plan(key: PlanState, weights: tuple = ()) -> Plan:
    return plan(model_spec(key), get_gpu(key.gpu), engine_config(key, **dict(weights)), layout(key), key.concurrency)


def plan_for(state: PlanState) -> Plan:
    return _plan_memo(state, weights_update(state))


@_memo
def _plan_memo(state: PlanState, weights: tuple) -> Plan:
    # keyed by the weights actually planned too: a checkpoint that could not be read a minute ago may be read now
    return _plan(_plan_key(state), weights)


LAYOUT_FIELDS = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "enable_expert_parallel")


def plan_with(state: PlanState, **changes) -> Plan:
    """The plan with some inputs changed (another layout, another GPU), cached the same way. A checkpoint's weights
    are split for the other layout; a typed "Model loading took" figure, measured on the state's own layout, is
    dropped for another layout (computed weights there)."""
    new = state.model_copy(update=changes)
    if new.weights_gib is not None and any(getattr(new, n) != getattr(state, n) for n in LAYOUT_FIELDS):
        new = new.model_copy(update={"weights_gib": None})
    return _plan_memo(new, weights_update(new))


# ----------------------------------------------------------------------------- the weights planned

@dataclass(frozen=True)
class WeightsChoice:
    """Which weights the plan budgets: kvplan's computed shard sums, a typed-in measured figure, or a checkpoint's
    safetensors headers split for the state's layout. ``refused``: why the state's own choice is not planned (the
    plan then budgets computed weights, and says so); ``mismatch``: why the checkpoint may not be the model's."""

    kind: str  # "computed" | "measured" | "checkpoint"
    weights_bytes: int | None = None  # the busiest rank's (every stage planned with it)
    basis: str = "exact"
    source: str = ""
    refused: str | None = None
    mismatch: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


COMPUTED = WeightsChoice("computed")
CHECKPOINT_RETRY_S = 60.0  # a checkpoint that could not be read is tried again after this long, not every rerun
_READS: "OrderedDict[tuple, tuple[float, object]]" = OrderedDict()  # (repo, endpoint, token digest, offline) -> read
_CHOICES: "OrderedDict[tuple, tuple[object, WeightsChoice]]" = OrderedDict()
_READS_LOCK = threading.Lock()
MAX_READS = 16


def _read_key(repo: str) -> tuple:
    from kvplan.web import hub

    token = hub.token()
    digest = hashlib.blake2b(token.encode(), digest_size=8).hexdigest() if token else ""
    return repo, hub.endpoint_or_error(), digest, hub.is_offline()


def checkpoint_read(repo: str, fresh: bool = False):
    """The Hub checkpoint ``repo`` from its safetensors headers (kvplan.web.checkpoint.read_hub), read once per repo,
    endpoint, token and offline mode for this server; a failure (HubError, CheckpointError) is returned, not raised,
    and kept CHECKPOINT_RETRY_S seconds (a link reopened while offline must not wait on the Hub every rerun).
    ``fresh``: read again (the Model page's button)."""
    from kvplan.web import checkpoint, hub

    key = _read_key(repo)
    with _READS_LOCK:
        hit = _READS.get(key)
        if hit is not None and not fresh and (not isinstance(hit[1], Exception)
                                              or time.monotonic() - hit[0] < CHECKPOINT_RETRY_S):
            _READS.move_to_end(key)
            return hit[1]
    try:
        got = checkpoint.read_hub(repo)
    except (hub.HubError, checkpoint.CheckpointError) as exc:
        got = exc
    with _READS_LOCK:
        _READS[key] = (time.monotonic(), got)
        while len(_READS) > MAX_READS:
            _READS.popitem(last=False)
    return got


def local_checkpoint_read(text: str):
    """The local checkpoint folder ``text`` (PlanState.checkpoint_dir) from its safetensors headers, or the exception
    saying why not. The folder is checked against KVPLAN_CHECKPOINT_ROOT on every call (kvplan.web.checkpoint
    .local_folder: the root may have changed since the link was made); the read itself is kept per folder while its
    index and its own listing are unchanged (their mtimes), so a rerun costs two stats, not 100 headers."""
    from kvplan.web import checkpoint

    try:
        folder = checkpoint.local_folder(text)
        index = folder / checkpoint.INDEX_FILE
        key = ("local", str(checkpoint.checkpoint_root()), str(folder), folder.stat().st_mtime_ns,
               index.stat().st_mtime_ns if index.exists() else 0)
    except (checkpoint.CheckpointError, OSError) as exc:
        return exc if isinstance(exc, checkpoint.CheckpointError) else checkpoint.CheckpointError(
            f"{text[:200]!r} cannot be read ({exc.strerror or exc})")
    with _READS_LOCK:
        hit = _READS.get(key)
        if hit is not None:
            _READS.move_to_end(key)
            return hit[1]
    try:
        got = checkpoint.read_under_root(text)
    except checkpoint.CheckpointError as exc:
        got = exc
    except OSError as exc:
        got = checkpoint.CheckpointError(f"{text[:200]!r} cannot be read ({exc.strerror or exc})")
    with _READS_LOCK:
        _READS[key] = (time.monotonic(), got)
        while len(_READS) > MAX_READS:
            _READS.popitem(last=False)
    return got


def measured_refusal(gib: float, gpu_name: str) -> str | None:
    """Why a typed "Model loading took" figure (GiB per rank) is refused on this GPU, or None: it must be above 0 and
    at most WEIGHTS_GIB_PER_DEVICE x the GPU's memory."""
    gpu = get_gpu(gpu_name)
    cap = WEIGHTS_GIB_PER_DEVICE * gpu.memory_bytes / GiB
    if not 0 < gib <= cap:
        return (f"must be above 0 and at most {WEIGHTS_GIB_PER_DEVICE} x the {gpu.name}'s "
                f"{gpu.memory_bytes / GiB:.2f} GiB ({cap:,.2f} GiB)")
    return None


def model_hub_id(state: PlanState) -> str | None:
    """The Hub id of the sidebar's model: the fetched config's name, else the preset's hf_repo (None: a pasted one)."""
    if state.config:
        return state.model_name
    return next((r["hf_repo"] for r in preset_catalog() if r["name"] == state.model), None) or None


def weights_choice(state: PlanState) -> WeightsChoice:
    """The weights the state's plan budgets (see WeightsChoice). Never raises for the weights' sake: a checkpoint
    that cannot be read, or a typed figure out of range, gives computed weights with ``refused`` set."""
    if state.weights_gib is not None:
        if reason := measured_refusal(state.weights_gib, state.gpu):
            return WeightsChoice("computed", refused=reason)
        n = round(state.weights_gib * GiB)
        return WeightsChoice("measured", n, "measured",
                             f"typed in: {fmt_decimal(state.weights_gib)} GiB = {n:,} B per rank")
    if state.checkpoint is None and state.checkpoint_dir is None:
        return COMPUTED
    got = checkpoint_read(state.checkpoint) if state.checkpoint is not None else \
        local_checkpoint_read(state.checkpoint_dir)
    if isinstance(got, Exception):
        return WeightsChoice("computed", refused=f"its safetensors headers cannot be read: {got}")
    key = (_weights_key(state).model_dump_json(), id(got))
    with _READS_LOCK:
        hit = _CHOICES.get(key)
        if hit is not None and hit[0] is got:
            _CHOICES.move_to_end(key)
            return hit[1]
    choice = _checkpoint_choice(state, got)
    with _READS_LOCK:
        _CHOICES[key] = (got, choice)  # the read itself is kept with it, so its id is not reused
        while len(_CHOICES) > 4 * MAX_READS:
            _CHOICES.popitem(last=False)
    return choice


def _weights_key(state: PlanState) -> PlanState:
    keep = ("model", "config", "model_name", "checkpoint", "checkpoint_dir", *LAYOUT_FIELDS,
            "engine", "language_model_only", "speculative_method",  # load_options
            "weight_format", "sglang_version")  # the served dtype (kvplan.plan.served_dtype)
    return PlanState(**{name: getattr(state, name) for name in keep})


def _checkpoint_choice(state: PlanState, ckpt) -> WeightsChoice:
    from kvplan.web import checkpoint

    try:
        spec_ = spec(state)
        lay = layout(state)
        # what the engine loads: the towers unless --language-model-only, MTP layers with MTP speculation
        # and the dtype it serves in (an fp32 checkpoint in bf16 under --dtype auto: kvplan.plan.served_dtype)
        busiest = checkpoint.busiest_rank(ckpt, spec_, lay, **checkpoint.load_options(engine_config(state), spec_))
    except KvplanError as exc:
        return WeightsChoice("computed", refused=f"its tensors cannot be split for this model and layout: {exc}")
    mismatch = []
    model_id = model_hub_id(state)
    if state.checkpoint is None:  # a local folder has no Hub id to compare: its shapes are checked below
        pass
    elif model_id is None:
        mismatch.append(f"the sidebar's model {spec_.name} names no Hub id, so kvplan cannot check that "
                        f"{ckpt.source} is its checkpoint: its tensors are split with {spec_.name}'s shard rules")
    elif model_id.lower() != ckpt.source.lower():
        mismatch.append(f"the checkpoint {ckpt.source} is not the sidebar's model {spec_.name}"
                        + (f" ({model_id})" if model_id and model_id != spec_.name else "")
                        + f": its tensors are split with {spec_.name}'s shard rules")
    mismatch += checkpoint.shape_mismatches(ckpt, spec_)
    return WeightsChoice("checkpoint", busiest.weights_bytes, "checkpoint headers",
                         checkpoint.source_text(ckpt, busiest),
                         mismatch=tuple(mismatch), notes=tuple(busiest.notes))


def weights_update(state: PlanState) -> tuple:
    """The EngineConfig fields the state's weights choice sets, as a hashable tuple (empty: computed weights)."""
    if state.checkpoint is None and state.checkpoint_dir is None and state.weights_gib is None:
        return ()
    try:
        c = weights_choice(state)
    except KvplanError:
        return ()  # the model or GPU itself is refused: the plan says so
    if c.weights_bytes is None:
        return ()
    return (("weights_bytes", c.weights_bytes), ("weights_basis", c.basis), ("weights_source", c.source))


@_memo
def state_key(state: PlanState) -> str:
    """A digest of every input of the state (128 bits of its JSON): what ``views.replayed`` keys a page's
    drawn sections on. 35 hex characters hash in microseconds where a pasted config's JSON may be 100 kB."""
    return hashlib.blake2b(state.model_dump_json().encode(), digest_size=16).hexdigest()


def sweep_lengths(max_len: int) -> list[int]:
    """Context lengths for the charts: powers of two from 512 to 4 x ``max_len``, and ``max_len`` itself."""
    out, n = [], 512
    while n <= max_len * 4 and len(out) < 24:
        out.append(n)
        n *= 2
    return sorted(set(out) | {max_len})


@st.cache_resource(hash_funcs=_HASH, max_entries=64, show_spinner=False)
def _sweep(key: PlanState, lengths: tuple[int, ...], concurrency: int, weights: tuple = ()) -> list[SweepPoint]:
    return context_sweep(model_spec(key), get_gpu(key.gpu), engine_config(key, **dict(weights)), layout(key),
                         list(lengths), concurrency)


def sweep_for(state: PlanState, max_len: int, concurrency: int) -> list[SweepPoint]:
    return _sweep_memo(state, max_len, concurrency, weights_update(state))


@_memo
def _sweep_memo(state: PlanState, max_len: int, concurrency: int, weights: tuple) -> list[SweepPoint]:
    return _sweep(_plan_key(state), tuple(sweep_lengths(max_len)), concurrency, weights)


@st.cache_resource(hash_funcs=_HASH | {GpuSpec: GpuSpec.model_dump_json}, max_entries=16, show_spinner=False)
def _pick(key: PlanState, max_len: int, concurrency: int, prices: str, gpus: tuple[GpuSpec, ...] | None) -> Picker:
    engine = engine_config(key)
    price_map = {name: float(v) for name, v in (item.split("=") for item in prices.split(",") if item)}
    return pick_gpus(model_spec(key), max_len, concurrency, engine, price_map, list(gpus) if gpus else None,
                     objective=key.objective, headroom_floor=key.headroom_floor, multi_node=key.multi_node)


def picker_for(state: PlanState, max_len: int, concurrency: int, prices: dict[str, float] | None = None,
               gpus: tuple[GpuSpec, ...] | None = None) -> Picker:
    """The GPU picker for the state's model, engine and GPUs-page settings. ``prices``: US$ per GPU-hour
    (default: kvplan.prices' defaults under the state's own); ``gpus``: the catalog (default: kvplan's).

    The prices go to the cache as one string: Streamlit hashes a 36-pair tuple item by item (3 ms a rerun).
    In front of it, the same memo as ``plan_for`` (a hit: a hash of the state and the prices, where the
    st.cache_resource lookup builds and hashes a key state: ~1.5 ms of a GPUs-page rerun)."""
    if prices is None:
        prices = effective_prices(dict(state.prices))
    return _picker(state, max_len, concurrency, ",".join(f"{n}={v!r}" for n, v in sorted(prices.items())), gpus)


@_memo
def _picker(state: PlanState, max_len: int, concurrency: int, prices: str, gpus: tuple[GpuSpec, ...] | None) -> Picker:
    key = _plan_key(state).model_copy(update={
        "gpu": PlanState().gpu, "tensor_parallel_size": 1, "pipeline_parallel_size": 1, "data_parallel_size": 1,
        "objective": state.objective, "headroom_floor": state.headroom_floor, "multi_node": state.multi_node})
    return _pick(key, max_len, concurrency, prices, gpus)


@st.cache_resource(hash_funcs=_HASH, max_entries=64, show_spinner=False)
def paging_for(lengths: tuple[int, ...], block_size: int, shared_prefix: int) -> tuple[Paging, list[Paging], list]:
    """(paging at the block size, the same at each standard block size, block map of the first few; the
    map is empty when it would pass MAX_BLOCK_MAP_BLOCKS, see ``block_map_size``)."""
    paging = page_sequences(lengths, block_size, shared_prefix)
    head = lengths[:MAX_BLOCK_MAP_SEQUENCES]
    blocks = block_map(head, block_size, shared_prefix) if block_map_size(head, block_size) <= MAX_BLOCK_MAP_BLOCKS \
        else []
    return paging, waste_by_block_size(lengths, shared_prefix=shared_prefix), blocks


def block_map_size(lengths: tuple[int, ...], block_size: int) -> int:
    """Blocks the map would draw for these sequences (a shared block once per sequence that holds it)."""
    return sum(-(-n // block_size) for n in lengths)


def lengths_for(state: PlanState) -> tuple[int, ...]:
    return workload_lengths(state)


@st.cache_resource(max_entries=64, show_spinner=False)
def serve_command(command: str):
    """A pasted serving command (vllm / sglang / flags alone): ``kvplan.web.commands.Command``.
    Raises PlanInputError for a line that launches neither engine."""
    from kvplan.web.commands import parse_command

    return parse_command(command)


# ----------------------------------------------------------------------------- the preset catalog

# Family groups for the preset pickers, by model_type prefix (longest first wins). A model_type no
# prefix names is grouped under its own first word, so a preset another module adds still shows.
FAMILY_GROUPS = (("llama", "Llama"), ("mistral", "Mistral"), ("mixtral", "Mistral"), ("ministral", "Mistral"),
                 ("qwen", "Qwen"), ("gemma", "Gemma"), ("phi", "Phi"), ("deepseek", "DeepSeek"),
                 ("gpt_oss", "gpt-oss"), ("gpt_bigcode", "BigCode"), ("gpt2", "GPT-2"), ("gpt_neox", "GPT-NeoX"),
                 ("falcon", "Falcon"), ("nemotron", "Nemotron"), ("glm", "GLM"), ("kimi", "Kimi"),
                 ("minimax", "MiniMax"), ("olmo", "OLMo"), ("granite", "Granite"), ("exaone", "EXAONE"),
                 ("cohere", "Cohere"), ("jamba", "Jamba"), ("mamba", "Mamba"), ("bamba", "Bamba"))


def family_group(model_type: str) -> str:
    key = (model_type or "").lower()
    for prefix, group in sorted(FAMILY_GROUPS, key=lambda g: -len(g[0])):
        if key.startswith(prefix):
            return group
    return key.split("_")[0].capitalize() or "Other"


def params_text(n: int) -> str:
    """2,030,000,000 -> '2.0B'; 124,439,808 -> '124M'."""
    return f"{n / 1e9:,.1f}B" if n >= 1e9 else f"{n / 1e6:,.0f}M"


_CATALOG: list = []  # the one catalog of this server, once built
_CATALOG_LOCK = threading.Lock()


def preset_catalog() -> tuple[dict, ...]:
    """Every preset: name, family group, parameters (total, active), release month, Hub repo; grouped by
    family (groups A-Z), newest first inside a group. Built once per server (~0.2 s: it parses every
    preset), under a lock: 20 sessions arriving at once on a cold server wait for one build rather than
    each making its own (the sidebar reads it 40 times a rerun, a list lookup each after that)."""
    if not _CATALOG:
        with _CATALOG_LOCK:
            if not _CATALOG:
                _CATALOG.append(_build_catalog())
    return _CATALOG[0]


def _build_catalog() -> tuple[dict, ...]:
    from kvplan.presets import load_preset, manifest

    rows = []
    for entry in manifest():
        try:
            params = count_params(load_preset(entry["name"]))
            total, active = params.total_params, params.active_params
        except Exception:  # a preset that cannot be planned is still listed (and refused when picked)
            total = active = None
        size = "" if total is None else params_text(total) if active == total else \
            f"{params_text(total)} total / {params_text(active)} active"
        rows.append({"name": entry["name"], "family": family_group(entry.get("family", "")),
                     "model_type": entry.get("family", ""), "total": total, "active": active, "size": size,
                     "released": entry.get("released", ""), "hf_repo": entry.get("hf_repo", "")})
    rows.sort(key=lambda r: (r["family"].lower(), -_month(r["released"]), r["name"]))
    return tuple(rows)


def _month(text: str) -> int:
    """'2024-07' -> 202407 (0 when absent)."""
    try:
        year, month = text.split("-")
        return int(year) * 100 + int(month)
    except (ValueError, AttributeError):
        return 0


def preset_label(name: str) -> str:
    """'llama-3.1-8b' -> 'llama-3.1-8b · Llama · 8.0B · 2024-07' (what the pickers show; the name first, so
    a narrow sidebar cuts the least of it)."""
    row = _labels().get(name)
    return row or name


@functools.cache
def _labels() -> dict[str, str]:
    return {r["name"]: " · ".join(p for p in (r["name"], r["family"], r["size"], r["released"]) if p)
            for r in preset_catalog()}


@functools.cache
def _order() -> tuple[str, ...]:
    return tuple(r["name"] for r in preset_catalog())


def preset_order() -> list[str]:
    return list(_order())
