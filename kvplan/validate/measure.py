"""One validation run: build the reference decoder, run a cached decode, put measured beside predicted.

``run_validation(model, tokens=..., steps=..., ...)`` returns a JSON-able dict (keys below). It

1. resolves the model and the dtype (bf16 on a GPU, fp32 on a CPU unless asked), predicts the
   run's peak memory (weights + cache + workspace) and compares it with free device memory: with a
   margin of 10% + 1 GiB it must fit, else a reduced copy with fewer layers runs (``reduce='auto'``)
   or the run is refused (``RefusedError``) before anything is allocated;
2. builds the model (one flat buffer) and measures its bytes: ``torch.cuda.memory_allocated``
   delta on a GPU, tensor bytes (numel x element size of every distinct parameter) on a CPU;
3. static pass: preallocated cache, prefill of ``tokens`` prompt tokens, ``steps`` greedy decode
   steps; after each, KV bytes in use per layer kind (read from the cache's slots) vs
   ``kv_cache_bytes(..., convention='vllm')``, allocated and peak memory, time;
4. paged pass: the same run over a block pool; after each call the allocator's blocks, slots and
   waste vs ``page_sequences``; at the end every block must come back to the pool;
5. correctness: for a fixed input, logits of one full forward vs prefill + one-token appends,
   through the static and the paged cache (max abs error, and relative to the largest |logit|);
6. releases everything (also on error, ``torch.cuda.empty_cache`` on a GPU); an out-of-memory
   error becomes a ``RefusedError`` and the process keeps serving.

One run at a time per process: a second caller gets ``BusyError`` at once.

Result keys: model, model_type, device, device_type, dtype, threads, gpu_timings, batch,
prompt_tokens, decode_steps, block_size, shared_prefix, reduction, predicted, measured,
full_model (when reduced), rows (the predicted-vs-measured table), steps, timeline, checks,
logits_max_abs_err, logits_rel_err, logits_tolerance, logits_ok, exact, ok, notes.
"""

import contextlib
import gc
import math
import statistics
import threading
import time
import traceback
from collections.abc import Callable

from kvplan.errors import KvplanError, PlanInputError
from kvplan.kv import kv_bytes_per_token, kv_cache_bytes, state_bytes_per_sequence
from kvplan.paging import check_block_size, page_sequences
from kvplan.spec import Linear, ModelSpec
from kvplan.units import GiB
from kvplan.validate import estimate as est
from kvplan.validate.reduce import Reduction, extrapolate_layers, max_experts, min_layers, reduce_spec, scale
from kvplan.weights import weight_bytes

# Relative logits error allowed between the full forward and the cached decode, per dtype: max |a - b|
# over max |b|. fp32 agrees to rounding (~1e-6 seen); bf16 / fp16 kernels for T rows and for 1 row
# round differently. A broken cache (positions reset, wrong mask) gives errors of 5e-2 .. 1.
TOLERANCE = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 5e-2}
# The CUDA caching allocator rounds a block to 512 B and leaves a segment's tail unsplit when it is
# under 1 MiB: memory_allocated can exceed the bytes asked for by less than this.
ALLOCATOR_GRANULARITY = 2**20
MARGIN_FRACTION = 0.10
MARGIN_BYTES = 1 * GiB
LIMITS = {"batch": 256, "tokens": 131_072, "steps": 4096}  # hard caps; the page sets lower ones
CHECK_SIZES = {"batch": 2, "tokens": 32, "steps": 8}  # the correctness check's fixed input, at most

_LOCK = threading.Lock()


class BusyError(KvplanError):
    """Another validation run is in progress in this process."""


class RefusedError(PlanInputError):
    """The run would not fit in free memory (or ran out of it); nothing is left allocated."""


def busy() -> bool:
    return _LOCK.locked()


def _check_int(field: str, value, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise PlanInputError(field, f"must be a whole number from {low} to {high:,}, got {value!r}")
    return value


def resolve(model) -> ModelSpec:
    if isinstance(model, ModelSpec):
        return model
    from kvplan.presets import resolve_model

    return resolve_model(str(model))


def pick_dtype(spec: ModelSpec, dtype: str, device_type: str) -> str:
    from kvplan.units import canonical_dtype

    if dtype in (None, "auto"):
        if device_type == "cpu":
            return "fp32"
        return spec.dtype if spec.dtype in ("bf16", "fp16") else "bf16"
    fmt = canonical_dtype(dtype, "dtype")
    if fmt not in TOLERANCE:
        raise PlanInputError("dtype", f"{dtype!r}: the reference decoder runs in fp32, bf16 or fp16")
    return fmt


# ---------------------------------------------------------------------------------- planning


def predict(spec: ModelSpec, fmt: str, *, batch: int, tokens: int, steps: int, block_size: int,
            shared_prefix: int, device_type: str, paged: bool = True, check: bool = True) -> dict:
    """Predicted bytes of the run for ``spec`` (the copy that would run), before allocating anything."""
    run = est.with_dtype(spec, fmt)
    max_len = tokens + steps
    weights = weight_bytes(run, fmt).total_bytes
    static = est.static_cache_bytes(run, batch, max_len, fmt)
    pg = page_sequences([max_len] * batch, block_size, shared_prefix)
    pool = est.paged_pool_bytes(run, batch, pg.allocated_blocks, block_size, fmt)
    ws = lambda **kw: est.workspace_bytes(run, batch, fmt=fmt, device=device_type, **kw)  # noqa: E731
    ws_prefill = ws(new_tokens=tokens, context=tokens)
    ws_decode = ws(new_tokens=1, context=max_len)
    ws_prefill_paged = ws(new_tokens=tokens, context=tokens, paged=True)
    ws_decode_paged = ws(new_tokens=1, context=max_len, paged=True)
    peak = weights + max(static + ws_prefill, static + ws_decode)
    if paged:
        peak = max(peak, weights + pool + max(ws_prefill_paged, ws_decode_paged))
    if check:
        cb, ct, cs = (min(batch, CHECK_SIZES["batch"]), min(tokens, CHECK_SIZES["tokens"]),
                      min(steps, CHECK_SIZES["steps"]))
        n = ct + cs
        check_peak = (weights + est.static_cache_bytes(run, cb, n, fmt)
                      + est.workspace_bytes(run, cb, n, n, fmt, all_logits=True, device=device_type)
                      + 2 * cb * n * run.vocab_size * 4)  # two fp32 copies of the logits compared
        peak = max(peak, check_peak)
    return dict(weight_bytes=weights, static_cache_bytes=static, paged_pool_bytes=pool,
                paged_blocks=pg.allocated_blocks,
                workspace_prefill_bytes=ws_prefill, workspace_decode_bytes=ws_decode,
                workspace_prefill_paged_bytes=ws_prefill_paged, workspace_decode_paged_bytes=ws_decode_paged,
                peak_prefill_bytes=weights + static + ws_prefill, peak_decode_bytes=weights + static + ws_decode,
                peak_run_bytes=peak)


def needed_with_margin(peak: int) -> int:
    return math.ceil(peak * (1 + MARGIN_FRACTION)) + MARGIN_BYTES


def choose_copy(spec: ModelSpec, fmt: str, free: int, *, layers, experts, vocab, reduce: str,
                **shape) -> tuple[ModelSpec, Reduction, dict]:
    """The model to run: the full spec if it fits, else (reduce='auto') the largest reduced copy that does."""
    asked = layers is not None or experts is not None or vocab is not None
    run, red = reduce_spec(spec, layers, experts, vocab, reasons=("asked for a reduced copy",) if asked else ())
    pred = predict(run, fmt, **shape)
    if needed_with_margin(pred["peak_run_bytes"]) <= free:
        return run, red, pred
    if asked or reduce != "auto":
        raise RefusedError("memory", _refusal(spec, red, pred, free))
    # Fewer layers first (down to one of each kind), then fewer experts, then a smaller vocabulary.
    e_full = max_experts(spec)
    expert_options = [None] + ([e for e in (e_full // 2, e_full // 4, e_full // 8, 8, 4, 2) if 1 < e < e_full]
                               if e_full else [])
    vocab_options = [None] + [v for v in (spec.vocab_size // 4, spec.vocab_size // 16, 4096)
                              if 1024 <= v < spec.vocab_size]
    last = (red, pred)
    for e in dict.fromkeys(expert_options):
        for v in dict.fromkeys(vocab_options):
            lo, hi = min_layers(spec), spec.num_hidden_layers
            best = None
            while lo <= hi:  # peak grows with layers: binary search the largest that fits
                mid = (lo + hi) // 2
                run, red = reduce_spec(spec, mid, e, v, reasons=("the full model does not fit in free memory",))
                pred = predict(run, fmt, **shape)
                last = (red, pred)
                if needed_with_margin(pred["peak_run_bytes"]) <= free:
                    best = (run, red, pred)
                    lo = mid + 1
                else:
                    hi = mid - 1
            if best is not None:
                return best
    raise RefusedError("memory", _refusal(spec, last[0], last[1], free))


def _refusal(spec: ModelSpec, red: Reduction, pred: dict, free: int) -> str:
    from kvplan.units import format_bytes

    what = red.describe() if red.reduced else "the full model"
    return (f"{spec.name}: {what} needs about {format_bytes(pred['peak_run_bytes'])} at its peak "
            f"(weights {format_bytes(pred['weight_bytes'])}, static cache {format_bytes(pred['static_cache_bytes'])}), "
            f"{format_bytes(needed_with_margin(pred['peak_run_bytes']))} with the safety margin "
            f"({MARGIN_FRACTION:.0%} + {format_bytes(MARGIN_BYTES)}), but only {format_bytes(free)} is free. "
            "Lower the batch, tokens or steps, or ask for fewer layers.")


# ---------------------------------------------------------------------------------- running


@contextlib.contextmanager
def _run_guard(device, phase: list[str]):
    """Turn out-of-memory errors into RefusedError naming the phase."""
    import torch

    try:
        yield
    except torch.OutOfMemoryError as exc:
        traceback.clear_frames(exc.__traceback__)
        raise RefusedError("memory", f"out of memory during {phase[0]} on {device}; everything was released "
                           f"({str(exc).splitlines()[0][:200]})") from None
    except RuntimeError as exc:
        text = str(exc)
        if "can't allocate memory" in text or "out of memory" in text.lower():
            traceback.clear_frames(exc.__traceback__)
            raise RefusedError("memory", f"out of memory during {phase[0]} on {device}; "
                                         "everything was released") from None
        raise


def run_validation(model, *, tokens: int = 128, steps: int = 8, batch: int = 1, dtype: str = "auto",
                   device: str = "auto", block_size: int = 16, shared_prefix: int = 0, layers: int | None = None,
                   experts: int | None = None, vocab: int | None = None, reduce: str = "auto", paged: bool = True,
                   check: bool = True, seed: int = 0, bandwidth_tb_s: float | None = None,
                   free_bytes: int | None = None, limits: dict | None = None,
                   progress: Callable[[float, str], None] | None = None) -> dict:
    """Run the validation (see module doc). Raises PlanInputError / RefusedError / BusyError."""
    lim = {**LIMITS, **(limits or {})}
    batch = _check_int("batch", batch, 1, lim["batch"])
    tokens = _check_int("tokens", tokens, 1, lim["tokens"])
    steps = _check_int("steps", steps, 0, lim["steps"])
    block_size = check_block_size(block_size)
    shared_prefix = _check_int("shared_prefix", shared_prefix, 0, tokens)
    for name, value in (("layers", layers), ("experts", experts), ("vocab", vocab)):
        if value is not None:
            _check_int(name, value, 1, 10_000_000)
    if reduce not in ("auto", "never"):
        raise PlanInputError("reduce", f"must be 'auto' or 'never', got {reduce!r}")
    if device not in ("auto", "cpu", "cuda") and not str(device).startswith("cuda:"):
        raise PlanInputError("device", f"must be auto, cpu or cuda[:N], got {device!r}")
    spec = resolve(model)
    from kvplan.validate.decoder import refuse_unsupported

    refuse_unsupported(spec)  # before the lock and any allocation
    if spec.basis == "transformers" or any(layer.cache.kind == "state" for layer in spec.layers):
        raise PlanInputError("model", f"{spec.model_type!r} was built with transformers (no kvplan family module): "
                             "the validation runs kvplan's reference decoder, which implements native families only")
    if not _LOCK.acquire(blocking=False):
        raise BusyError("validate", "busy: another validation run is in progress on this server; "
                                    "try again when it ends")
    try:
        return _run(spec, tokens=tokens, steps=steps, batch=batch, dtype=dtype, device=device, block_size=block_size,
                    shared_prefix=shared_prefix, layers=layers, experts=experts, vocab=vocab, reduce=reduce,
                    paged=paged, check=check, seed=seed, bandwidth_tb_s=bandwidth_tb_s, free_bytes=free_bytes,
                    progress=progress or (lambda f, t: None))
    finally:
        _LOCK.release()


def _device(device: str):
    import torch

    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise PlanInputError("device", "no CUDA device on this host (torch.cuda.is_available() is False)")
    return dev


def _run(spec: ModelSpec, *, tokens, steps, batch, dtype, device, block_size, shared_prefix, layers, experts, vocab,
         reduce, paged, check, seed, bandwidth_tb_s, free_bytes, progress) -> dict:
    import torch

    from kvplan.validate.memory import MemoryProbe

    dev = _device(device)
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    fmt = pick_dtype(spec, dtype, dev.type)
    threads = torch.get_num_threads()
    probe = MemoryProbe(dev)
    if dev.type == "cuda":
        gc.collect()
        torch.cuda.empty_cache()
    free = probe.free_bytes() if free_bytes is None else free_bytes
    shape = dict(batch=batch, tokens=tokens, steps=steps, block_size=block_size, shared_prefix=shared_prefix,
                 device_type=dev.type, paged=paged, check=check)
    run_spec, red, pred = choose_copy(spec, fmt, free, layers=layers, experts=experts, vocab=vocab,
                                      reduce=reduce, **shape)
    progress(0.02, f"building {red.describe()} of {spec.name} in {fmt} on {dev}")
    held: dict = {}
    phase = ["setup"]
    failed = True
    try:
        if dev.type == "cpu":
            torch.set_num_threads(1)
        with _run_guard(dev, phase), torch.no_grad():
            result = _measure(spec, run_spec, red, pred, fmt, dev, probe, free, held, phase, progress,
                              tokens=tokens, steps=steps, batch=batch, block_size=block_size,
                              shared_prefix=shared_prefix, paged=paged, check=check, seed=seed,
                              bandwidth_tb_s=bandwidth_tb_s)
        failed = False
        return result
    except BaseException as exc:
        # The traceback's frames hold the model and caches: drop their locals so the memory really goes
        # back below (and, on a GPU, to the driver) instead of living as long as the exception does.
        traceback.clear_frames(exc.__traceback__)
        raise
    finally:
        held.clear()
        if failed or dev.type == "cuda":  # tensors have no cycles: refcounting frees them on success
            gc.collect()
        if dev.type == "cuda":
            with contextlib.suppress(Exception):  # never mask the error that got us here
                torch.cuda.synchronize(dev)
                torch.cuda.empty_cache()
        torch.set_num_threads(threads)


def prompt_tokens(batch: int, tokens: int, vocab: int, shared_prefix: int, seed: int, device):
    """Random prompt [B, T]; the first ``shared_prefix`` tokens are the same in every row."""
    import torch

    gen = torch.Generator().manual_seed(seed + 1)
    out = torch.randint(0, vocab, (batch, tokens), generator=gen)
    if shared_prefix:
        out[1:, :shared_prefix] = out[0, :shared_prefix]
    return out.to(device)


def _timer(probe):
    probe.sync()
    return time.perf_counter()


def _measure(spec, run_spec, red: Reduction, pred, fmt, dev, probe, free, held, phase, progress, *, tokens, steps,
             batch, block_size, shared_prefix, paged, check, seed, bandwidth_tb_s) -> dict:
    import torch

    from kvplan.validate.caches import NoCache, PagedCache, StaticCache
    from kvplan.validate.decoder import TORCH_DTYPES, build_decoder, make_step

    cuda = dev.type == "cuda"
    run_dt = est.with_dtype(run_spec, fmt)
    full_dt = est.with_dtype(spec, fmt)
    tdtype = TORCH_DTYPES[fmt]
    max_len = tokens + steps
    notes: list[str] = []
    timeline: list[dict] = []
    step_rows: list[dict] = []

    def mark(label: str, kind: str, peak: int | None = None):
        timeline.append(dict(label=label, phase=kind, allocated_bytes=probe.allocated(), peak_bytes=peak))

    # -- weights ------------------------------------------------------------------------------
    phase[0] = "building the model"
    mark("start", "setup")
    before = probe.allocated()
    model, flat = build_decoder(run_spec, fmt, dev, seed)
    held.update(model=model, flat=flat)
    probe.sync()
    tensor_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    parts = weight_parts(model, red)
    if cuda:
        measured_weights = probe.allocated() - before
        weights_note = "torch.cuda.memory_allocated delta around building the model (one flat buffer)"
    else:
        measured_weights = tensor_bytes
        probe.persistent += flat.nbytes
        weights_note = "tensor bytes: numel x element size of every distinct parameter"
    mark("weights", "setup")
    predicted_weights = weight_bytes(run_dt, fmt).total_bytes

    # -- static pass ---------------------------------------------------------------------------
    phase[0] = "allocating the static cache"
    progress(0.08, "static cache: allocating")
    cache = StaticCache(run_spec, batch, max_len, tdtype, dev)
    held["cache"] = cache
    cache_persist = sum(t.nbytes for t in cache.tensors()) + cache.positions.nbytes
    if not cuda:
        probe.persistent += cache_persist
    mark("static cache allocated", "static")
    prompt = prompt_tokens(batch, tokens, run_spec.vocab_size, shared_prefix, seed, dev)
    total_calls = (1 + steps) * (2 if paged else 1) + (2 if check else 0)
    done = [0]

    def tick(text):
        done[0] += 1
        progress(min(0.97, 0.1 + 0.85 * done[0] / total_calls), text)

    def record(kind: str, j: int, held_tokens: int, seconds: float, peak, extra: dict):
        step_rows.append(dict(phase=kind, step=j, tokens=held_tokens, seconds=seconds,
                              allocated_bytes=probe.allocated(), peak_bytes=peak, **extra))

    phase[0] = "warm-up"
    with probe.phase():  # first calls initialise kernels (and the CPU tracker): not timed, not recorded
        model(prompt[:, :2], NoCache(), make_step(0, min(2, tokens), dev), last_only=True)
    phase[0] = "prefill (static cache)"
    with probe.phase():
        t0 = _timer(probe)
        logits = model(prompt, cache, make_step(0, tokens, dev), last_only=True)
        prefill_s = _timer(probe) - t0
    peak_prefill = probe.peak
    nxt = logits[:, -1].argmax(-1, keepdim=True)  # [B, 1] greedy
    del logits
    static_prefill_kind = cache.in_use_by_kind()
    static_prefill_layers = [cache.layer_in_use_bytes(i) for i in range(run_spec.num_hidden_layers)]
    pred_prefill = kv_cache_bytes(run_dt, [tokens] * batch, fmt, "vllm")
    record("static", 0, tokens, prefill_s, peak_prefill,
           dict(kv_predicted=pred_prefill.kv_bytes, kv_measured=sum(static_prefill_kind.values()),
                kv_by_kind_predicted=pred_prefill.by_kind, kv_by_kind_measured=static_prefill_kind))
    mark("prefill", "static", peak_prefill)
    tick("static cache: prefill done")
    decode_s, decode_peaks, kv_ok = [], [], static_prefill_kind == pred_prefill.by_kind
    static_final_kind, static_final_layers = static_prefill_kind, static_prefill_layers
    for j in range(1, steps + 1):
        phase[0] = f"decode step {j} (static cache)"
        # On a CPU the memory tracker costs ~0.1 ms per op: track the first and last steps, time the rest.
        tracked = cuda or j in (1, steps)
        ctx = probe.phase() if tracked else contextlib.nullcontext()
        with ctx:
            t0 = _timer(probe)
            logits = model(nxt, cache, make_step(tokens + j - 1, 1, dev), last_only=True)
            dt = _timer(probe) - t0
        nxt = logits[:, -1].argmax(-1, keepdim=True)
        del logits
        peak = probe.peak if tracked else None
        if tracked:
            decode_peaks.append(peak)
        decode_s.append((dt, tracked))
        kinds = cache.in_use_by_kind()
        p = kv_cache_bytes(run_dt, [tokens + j] * batch, fmt, "vllm")
        kv_ok &= kinds == p.by_kind
        record("static", j, tokens + j, dt, peak, dict(kv_predicted=p.kv_bytes, kv_measured=sum(kinds.values()),
                                                        kv_by_kind_predicted=p.by_kind, kv_by_kind_measured=kinds,
                                                        timed_with_tracker=tracked and not cuda))
        mark(f"decode {j}", "static", peak)
        tick(f"static cache: decode step {j}/{steps}")
        static_final_kind = kinds
        static_final_layers = [cache.layer_in_use_bytes(i) for i in range(run_spec.num_hidden_layers)]
    static_alloc = cache.allocated_bytes()
    held.pop("cache")
    del cache
    if not cuda:
        probe.persistent -= cache_persist
    mark("static cache freed", "static")

    # -- paged pass ----------------------------------------------------------------------------
    paged_info = None
    if paged:
        phase[0] = "allocating the paged cache"
        pg_final = page_sequences([max_len] * batch, block_size, shared_prefix)
        pcache = PagedCache(run_spec, batch, pg_final.allocated_blocks, block_size, tdtype, dev, shared_prefix)
        held["pcache"] = pcache
        pool_persist = pcache.pool_bytes()
        if not cuda:
            probe.persistent += pool_persist
        mark("paged pool allocated", "paged")
        per_token = kv_bytes_per_token(run_dt, fmt, "vllm")
        state = pcache.state_bytes()
        paging_ok, paged_bytes_ok = True, True
        paged_rows = []
        paged_peaks = []
        paged_s = []
        nxt = None
        for j in range(0, steps + 1):
            start, n_new = (0, tokens) if j == 0 else (tokens + j - 1, 1)
            phase[0] = "prefill (paged cache)" if j == 0 else f"decode step {j} (paged cache)"
            step = make_step(start, n_new, dev)
            tracked = cuda or j in (0, 1, steps)
            with (probe.phase() if tracked else contextlib.nullcontext()):
                t0 = _timer(probe)
                pcache.begin(step)
                logits = model(prompt if j == 0 else nxt, pcache, step, last_only=True)
                dt = _timer(probe) - t0
            nxt = logits[:, -1].argmax(-1, keepdim=True)
            del logits
            peak = probe.peak if tracked else None
            if tracked and j > 0:
                paged_peaks.append(peak)
            if j > 0:
                paged_s.append((dt, tracked))
            counts = pcache.alloc.counts()
            planned = page_sequences([start + n_new] * batch, block_size, shared_prefix)
            want = dict(allocated_blocks=planned.allocated_blocks, allocated_slots=planned.allocated_slots,
                        used_slots=planned.used_slots, wasted_slots=planned.wasted_slots,
                        shared_blocks=planned.shared_blocks)
            ok = all(counts[k] == want[k] for k in want)
            paging_ok &= ok
            measured_bytes = pcache.in_use_bytes()
            predicted_bytes = planned.allocated_slots * per_token + batch * state_bytes_per_sequence(run_dt, "vllm")
            paged_bytes_ok &= measured_bytes == predicted_bytes
            paged_rows.append(dict(step=j, tokens=start + n_new, predicted=want, measured=counts, ok=ok,
                                   kv_predicted=predicted_bytes, kv_measured=measured_bytes))
            record("paged", j, start + n_new, dt, peak, dict(kv_predicted=predicted_bytes, kv_measured=measured_bytes,
                                                             blocks_predicted=want["allocated_blocks"],
                                                             blocks_measured=counts["allocated_blocks"],
                                                             wasted_predicted=want["wasted_slots"],
                                                             wasted_measured=counts["wasted_slots"]))
            mark("paged prefill" if j == 0 else f"paged decode {j}", "paged", peak)
            tick("paged cache: prefill done" if j == 0 else f"paged cache: decode step {j}/{steps}")
            if j == 0:
                paged_prefill_peak, paged_prefill_s = peak, dt
        block_layers = [((pcache.k[i].nbytes if pcache.k[i] is not None else 0)
                         + (pcache.v[i].nbytes if pcache.v[i] is not None else 0)) // max(1, pcache.num_blocks)
                        for i in range(run_spec.num_hidden_layers)]
        state_layers = [sum(t.nbytes for t in pcache.states[i]) for i in range(run_spec.num_hidden_layers)]
        final_counts = pcache.alloc.counts()
        final_bytes = pcache.in_use_bytes()
        pcache.release()
        released = pcache.alloc.allocated_blocks == 0 and len(pcache.alloc.free) == pcache.alloc.num_blocks
        paged_info = dict(block_size=block_size, pool_blocks=pcache.num_blocks, pool_bytes=pool_persist,
                          block_bytes=pcache.block_bytes(), state_bytes=state, per_step=paged_rows,
                          final_measured=final_counts, final_predicted=paged_rows[-1]["predicted"],
                          kv_predicted=paged_rows[-1]["kv_predicted"], kv_measured=final_bytes,
                          counts_equal=paging_ok, bytes_equal=paged_bytes_ok, released_all_blocks=released,
                          prefill_peak_bytes=paged_prefill_peak, prefill_s=paged_prefill_s,
                          decode_peak_bytes=max(paged_peaks) if paged_peaks else None,
                          decode_s_per_step=_median_time(paged_s))
        held.pop("pcache")
        del pcache
        if not cuda:
            probe.persistent -= pool_persist
        mark("paged pool freed", "paged")

    # -- correctness ---------------------------------------------------------------------------
    checks = {}
    if check:
        cb, ct = min(batch, CHECK_SIZES["batch"]), min(tokens, CHECK_SIZES["tokens"])
        cs = max(1, min(steps, CHECK_SIZES["steps"]))
        for kind in ("static", "paged") if paged else ("static",):
            phase[0] = f"correctness check ({kind} cache)"
            checks[kind] = cache_check(model, run_spec, fmt, kind=kind, batch=cb, prompt=ct, steps=cs,
                                       block_size=block_size, shared_prefix=min(shared_prefix, ct), seed=seed)
            tick(f"correctness check ({kind}) done")
        mark("checks done", "check")

    # -- assemble ------------------------------------------------------------------------------
    phase[0] = "reporting"
    held.clear()
    del model, flat
    if cuda:
        gc.collect()
        torch.cuda.empty_cache()
    mark("released", "end")

    final_tokens = tokens + steps
    pred_final = kv_cache_bytes(run_dt, [final_tokens] * batch, fmt, "vllm")
    measured_final = sum(static_final_kind.values())
    t_decode = _median_time(decode_s)
    peak_decode = max(decode_peaks) if decode_peaks else None
    gpu = _gpu(dev, bandwidth_tb_s, notes) if cuda or bandwidth_tb_s else None
    moved_mid = est.decode_bytes_moved(run_spec, batch, tokens + max(1, steps) // 2 + 1, fmt)
    bound_s = moved_mid / gpu["bandwidth_bytes_per_s"] if gpu else None
    prefill_bound = (est.prefill_flops(run_spec, batch, tokens) / gpu["bf16_dense_flops"]
                     if gpu and gpu.get("bf16_dense_flops") else None)

    predicted = dict(weight_bytes=predicted_weights, kv_bytes=pred_final.kv_bytes,
                     kv_bytes_after_prefill=pred_prefill.kv_bytes, kv_by_kind=pred_final.by_kind,
                     static_cache_bytes=pred["static_cache_bytes"],
                     paged_kv_bytes=paged_info["kv_predicted"] if paged_info else None,
                     paged=paged_info["final_predicted"] if paged_info else None,
                     peak_prefill_bytes=pred["peak_prefill_bytes"], peak_decode_bytes=pred["peak_decode_bytes"],
                     workspace_prefill_bytes=pred["workspace_prefill_bytes"],
                     workspace_decode_bytes=pred["workspace_decode_bytes"],
                     decode_bytes_moved=moved_mid,
                     decode_s_per_step=bound_s, tokens_per_s=batch / bound_s if bound_s else None,
                     prefill_s=prefill_bound)
    base_static = predicted_weights + static_alloc
    measured = dict(weight_bytes=measured_weights, weight_tensor_bytes=tensor_bytes, kv_bytes=measured_final,
                    kv_bytes_after_prefill=sum(static_prefill_kind.values()), kv_by_kind=static_final_kind,
                    static_cache_bytes=static_alloc,
                    paged_kv_bytes=paged_info["kv_measured"] if paged_info else None,
                    paged=paged_info["final_measured"] if paged_info else None,
                    peak_prefill_bytes=peak_prefill, peak_decode_bytes=peak_decode,
                    workspace_prefill_bytes=peak_prefill - base_static if peak_prefill is not None else None,
                    workspace_decode_bytes=peak_decode - base_static if peak_decode is not None else None,
                    decode_s_per_step=t_decode, tokens_per_s=batch / t_decode if t_decode else None,
                    prefill_s=prefill_s)
    if cuda:  # the allocator's figures include the static cache's ring-position indices (tiny)
        notes.append("GPU peaks are torch.cuda.max_memory_allocated; they include small bookkeeping tensors "
                     "(token ids, ring positions) and the cuBLAS workspace")
    exact = dict(weights=measured_weights == predicted_weights and tensor_bytes == predicted_weights,
                 kv_static=kv_ok, kv_paged=paged_info["bytes_equal"] if paged_info else None,
                 paging=paged_info["counts_equal"] if paged_info else None)
    if cuda and measured_weights != predicted_weights and tensor_bytes == predicted_weights:
        rounding = measured_weights - predicted_weights
        if 0 < rounding < ALLOCATOR_GRANULARITY:
            notes.append(f"the CUDA caching allocator handed the weight buffer a block {rounding:,} B larger than "
                         "asked (512 B rounding, or an unsplit tail of its 2 MiB segment); the tensor bytes equal "
                         "the plan exactly")
            exact["weights"] = True
    tol = TOLERANCE[fmt]
    errs = [c["max_abs_err"] for c in checks.values()]
    rels = [c["rel_err"] for c in checks.values()]
    logits_ok = all(c["ok"] for c in checks.values()) if checks else None

    full_model = _full_model(spec, full_dt, red, fmt, batch, tokens, final_tokens, paged_info, parts, dict(
        static_final=static_final_layers, static_prefill=static_prefill_layers,
        block=block_layers if paged_info else None,
        state=state_layers if paged_info else None)) if red.reduced else None
    if full_model is not None and bound_s and t_decode:
        achieved = moved_mid / t_decode
        full_moved = est.decode_bytes_moved(spec, batch, tokens + max(1, steps) // 2 + 1, fmt)
        full_model["extrapolated"]["decode_s_per_step"] = full_moved / achieved
        full_model["predicted"]["decode_s_per_step"] = full_moved / gpu["bandwidth_bytes_per_s"]
    elif full_model is not None and t_decode:
        achieved = moved_mid / t_decode
        full_moved = est.decode_bytes_moved(spec, batch, tokens + max(1, steps) // 2 + 1, fmt)
        full_model["extrapolated"]["decode_s_per_step"] = full_moved / achieved

    if not cuda:
        notes.append("CPU host: GPU timings are not available; times are raw CPU times on 1 thread "
                     "(no roofline), and memory is counted as tensor bytes by a dispatch-mode tracker "
                     "(prefill, the first and last decode steps; the steps between are timed without it)")
    if red.reduced:
        notes.append(f"{red.describe()}: per-layer numbers were measured on the copy; full-model figures are "
                     "extrapolated and labelled so")
    if any(layer.cache.kind in ("mamba", "linear_attention", "short_conv") for layer in run_spec.layers):
        notes.append("Mamba / linear-attention / short-conv mixers are not run: their weights and state buffers are allocated "
                     "at their exact sizes, and the layer passes its input through")
    if any(layer.cache.kind in ("sliding_attention", "chunked_attention") for layer in run_spec.layers) and paged:
        notes.append("paged cache: sliding-window / chunked layers keep all their blocks (one block table for every "
                     "layer); the static cache holds only their window")
    if spec.quantization:
        notes.append(f"the checkpoint ships {spec.quantization} weights; the reference runs them dequantized in {fmt}")
    notes.append(f"weights measured as {weights_note}")

    result = dict(
        model=spec.name, model_type=spec.model_type, device=_device_name(dev), device_type=dev.type, dtype=fmt,
        threads=1 if not cuda else None, gpu_timings=cuda, free_bytes_before=free,
        batch=batch, prompt_tokens=tokens, decode_steps=steps, block_size=block_size, shared_prefix=shared_prefix,
        reduction=dict(red.model_dump(mode="json", exclude={"group_of_layer"}), description=red.describe()),
        predicted=predicted, measured=measured, full_model=full_model, paged=paged_info,
        steps=step_rows, timeline=timeline, checks=checks,
        logits_max_abs_err=max(errs) if errs else None, logits_rel_err=max(rels) if rels else None,
        logits_tolerance=tol, logits_ok=logits_ok, exact=exact, notes=notes, gpu=gpu,
        predicted_peak_run_bytes=pred["peak_run_bytes"], margin=dict(fraction=MARGIN_FRACTION, bytes=MARGIN_BYTES),
    )
    result["rows"] = table_rows(result)
    result["ok"] = bool(all(v for v in exact.values() if v is not None) and logits_ok is not False)
    progress(1.0, "done")
    return result


def _median_time(samples: list[tuple[float, bool]]) -> float | None:
    """Median step time, from the steps timed without the CPU memory tracker when there are any."""
    if not samples:
        return None
    clean = [t for t, tracked in samples if not tracked]
    return statistics.median(clean or [t for t, _ in samples])


def _device_name(dev) -> str:
    import torch

    if dev.type == "cuda":
        return f"{dev} ({torch.cuda.get_device_name(dev)})"
    return "cpu"


def _gpu(dev, bandwidth_tb_s, notes) -> dict | None:
    import torch

    if bandwidth_tb_s:
        return dict(name="custom", bandwidth_bytes_per_s=int(bandwidth_tb_s * 1e12), bf16_dense_flops=None)
    from kvplan.gpus import get_gpu

    name = torch.cuda.get_device_name(dev)
    try:
        g = get_gpu(name)
    except KvplanError:
        notes.append(f"{name!r} is not in the GPU catalog: no roofline (pass a bandwidth to get one)")
        return None
    return dict(name=g.name, bandwidth_bytes_per_s=g.bandwidth_bytes_per_s, bf16_dense_flops=g.bf16_dense_flops)


def _full_model(spec, full_dt, red: Reduction, fmt, batch, tokens, final_tokens, paged_info, parts: dict,
                held_layers: dict) -> dict:
    """Full-model figures: the planner's (predicted) and the copy's per-layer measurements scaled up."""
    layer_bytes = [parts["layers"][j] + scale(parts["experts"][j], red.experts_full or 1, red.experts_run or 1)
                   for j in range(red.layers_run)]
    w_full = extrapolate_layers(red, layer_bytes) + scale(parts["vocab"], red.vocab_full, red.vocab_run) + parts["rest"]
    kv_full = extrapolate_layers(red, held_layers["static_final"])
    kv_prefill = extrapolate_layers(red, held_layers["static_prefill"])
    out = dict(label="extrapolated from the reduced copy (per-layer measurements x layers of each kind)",
               predicted=dict(weight_bytes=weight_bytes(full_dt, fmt).total_bytes,
                              kv_bytes=kv_cache_bytes(full_dt, [final_tokens] * batch, fmt, "vllm").kv_bytes,
                              kv_bytes_after_prefill=kv_cache_bytes(full_dt, [tokens] * batch, fmt, "vllm").kv_bytes),
               extrapolated=dict(weight_bytes=w_full, kv_bytes=kv_full, kv_bytes_after_prefill=kv_prefill))
    if paged_info is not None:
        blocks = paged_info["final_measured"]["allocated_blocks"]
        out["predicted"]["paged_kv_bytes"] = (
            paged_info["final_predicted"]["allocated_slots"] * kv_bytes_per_token(full_dt, fmt, "vllm")
            + batch * state_bytes_per_sequence(full_dt, "vllm"))
        out["extrapolated"]["paged_kv_bytes"] = (blocks * extrapolate_layers(red, held_layers["block"])
                                                 + extrapolate_layers(red, held_layers["state"]))
    return out


def weight_parts(model, red: Reduction) -> dict:
    """Measured parameter bytes split for extrapolation: per layer dense / experts, vocab tables, rest."""
    from kvplan.validate.decoder import Weight

    def nbytes(w):
        return sum(p.numel() * p.element_size() for p in (w.weight, w.bias) if p is not None)

    layers = [sum(nbytes(w) for k, w in blk.w.items() if not k.startswith(("experts__", "router__")))
              for blk in model.layers]
    experts = [sum(nbytes(w) for k, w in blk.w.items() if k.startswith(("experts__", "router__")))
               for blk in model.layers]
    vocab = rest = 0
    for part in (model.embed, model.head, model.final, model.extra):
        for w in part.values():
            assert isinstance(w, Weight)
            table = isinstance(w.comp, Linear) and w.comp.out_features == red.vocab_run
            if table and part in (model.embed, model.head):
                vocab += nbytes(w)
            else:
                rest += nbytes(w)
    return dict(layers=layers, experts=experts, vocab=vocab, rest=rest)


def cache_check(model, spec: ModelSpec, fmt: str, *, kind: str = "static", batch: int = 2, prompt: int = 16,
                steps: int = 4, block_size: int = 4, shared_prefix: int = 0, seed: int = 0,
                fault: str | None = None) -> dict:
    """Logits of one full forward vs prefill + one-token appends through a cache, same fixed input.

    ``fault`` injects a known cache bug into the cached path ('reset_positions': every call numbers
    its tokens from 0; 'upper_left_mask': the causal mask ignores the cache offset); the check must
    then fail. Returns max_abs_err, rel_err (over the largest |logit|), tolerance, ok.
    """
    import torch

    from kvplan.validate.caches import NoCache, PagedCache, StaticCache
    from kvplan.validate.decoder import make_step

    dev = next(model.parameters()).device
    dtype = next(model.parameters()).dtype
    tokens = prompt_tokens(batch, prompt + steps, spec.vocab_size, shared_prefix, seed + 7, dev)
    with torch.no_grad():
        full = model(tokens, NoCache(), make_step(0, prompt + steps, dev)).float()  # [B, P+S, V]
        if kind == "static":
            cache = StaticCache(spec, batch, prompt + steps, dtype, dev)
        elif kind == "paged":
            blocks = page_sequences([prompt + steps] * batch, block_size, shared_prefix).allocated_blocks
            cache = PagedCache(spec, batch, blocks, block_size, dtype, dev, shared_prefix)
        else:
            raise PlanInputError("cache", f"unknown cache kind {kind!r}")
        outs = []
        for start, n in [(0, prompt)] + [(prompt + j, 1) for j in range(steps)]:
            step = make_step(start, n, dev, fault)
            if kind == "paged":
                cache.begin(step)
            outs.append(model(tokens[:, start:start + n], cache, step).float())
        inc = torch.cat(outs, dim=1)
        err = (inc - full).abs().max().item()
        ref = full.abs().max().item()
    rel = err / ref if ref else err
    tol = TOLERANCE[fmt]
    return dict(cache=kind, fault=fault, batch=batch, prompt_tokens=prompt, steps=steps, max_abs_err=err,
                max_abs_logit=ref, rel_err=rel, tolerance=tol, ok=bool(rel <= tol))


def table_rows(r: dict) -> list[dict]:
    """The predicted-vs-measured table: one row per quantity."""
    p, m = r["predicted"], r["measured"]
    rows = []

    def row(quantity, pv, mv, unit="B", exact=False, note=""):
        err = None
        if isinstance(pv, (int, float)) and isinstance(mv, (int, float)) and pv:
            err = 100.0 * (mv - pv) / pv
        ok = (pv == mv) if exact and pv is not None and mv is not None else None
        rows.append(dict(quantity=quantity, predicted=pv, measured=mv, unit=unit, error_pct=err, exact=exact,
                         ok=ok, note=note))

    row("weight bytes", p["weight_bytes"], m["weight_bytes"], exact=True,
        note="kvplan.weights.weight_bytes(spec, dtype)")
    row("KV bytes after prefill (static, in use)", p["kv_bytes_after_prefill"], m["kv_bytes_after_prefill"], exact=True,
        note="kv_cache_bytes(..., convention='vllm')")
    row(f"KV bytes after {r['decode_steps']} decode steps (static, in use)", p["kv_bytes"], m["kv_bytes"], exact=True,
        note="every step checked per layer kind: " + ("equal" if r["exact"]["kv_static"] else "MISMATCH"))
    row("static cache preallocated", p["static_cache_bytes"], m["static_cache_bytes"], exact=True,
        note="full layers max_len slots, windowed layers a ring")
    if r.get("paged"):
        pg = r["paged"]
        row("paged blocks allocated", pg["final_predicted"]["allocated_blocks"],
            pg["final_measured"]["allocated_blocks"], unit="blocks", exact=True,
            note="page_sequences; every step: " + ("equal" if pg["counts_equal"] else "MISMATCH"))
        row("paged slots allocated", pg["final_predicted"]["allocated_slots"], pg["final_measured"]["allocated_slots"],
            unit="slots", exact=True)
        row("paged slots wasted", pg["final_predicted"]["wasted_slots"], pg["final_measured"]["wasted_slots"],
            unit="slots", exact=True)
        row("paged KV bytes (allocated blocks)", p["paged_kv_bytes"], m["paged_kv_bytes"], exact=True,
            note="allocated slots x bytes per token, all layers")
    row("peak memory, prefill", p["peak_prefill_bytes"], m["peak_prefill_bytes"],
        note="weights + static cache + workspace estimate")
    row("peak memory, decode", p["peak_decode_bytes"], m["peak_decode_bytes"])
    row("workspace, prefill", p["workspace_prefill_bytes"], m["workspace_prefill_bytes"],
        note="peak minus weights and cache")
    row("workspace, decode", p["workspace_decode_bytes"], m["workspace_decode_bytes"])
    if r["gpu_timings"]:
        row("decode time per step", p["decode_s_per_step"], m["decode_s_per_step"], unit="s",
            note="roofline: (weights read + KV read) / memory bandwidth")
        row("decode tokens/s", p["tokens_per_s"], m["tokens_per_s"], unit="tok/s", note="roofline bound")
        row("prefill time", p["prefill_s"], m["prefill_s"], unit="s", note="compute bound at dense bf16 peak")
    else:
        row("decode time per step", None, m["decode_s_per_step"], unit="s", note="CPU: raw time, no GPU timings")
        row("decode tokens/s", None, m["tokens_per_s"], unit="tok/s", note="CPU: raw")
        row("prefill time", None, m["prefill_s"], unit="s", note="CPU: raw")
    for kind, c in r["checks"].items():
        row(f"logits error, {kind} cache (relative)", c["tolerance"], c["rel_err"], unit="",
            note=f"predicted = tolerance; max abs {c['max_abs_err']:.3g}: " + ("pass" if c["ok"] else "FAIL"))
        rows[-1].update(error_pct=None, ok=c["ok"])
    fm = r.get("full_model")
    if fm:
        for key, label in (("weight_bytes", "weight bytes"), ("kv_bytes", "KV bytes (static, in use)"),
                           ("paged_kv_bytes", "paged KV bytes")):
            if key in fm["extrapolated"]:
                row(f"full model: {label} (extrapolated)", fm["predicted"].get(key), fm["extrapolated"][key],
                    exact=True,
                    note=fm["label"])
    return rows
