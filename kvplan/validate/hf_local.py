"""A local Hugging Face checkpoint, validated with its own transformers model and cache. Optional.

``run_hf_validation(path, ...)`` loads ``AutoModelForCausalLM.from_pretrained(path)`` from a local
directory only (``local_files_only=True``, safetensors only, never ``trust_remote_code``), runs a prefill and greedy
decode steps through the model's default cache (``DynamicCache(config=...)``, what ``generate()``
uses), and puts beside the planner:

- weight bytes: distinct parameters' bytes (a tied table once; non-persistent buffers such as
  rotary ``inv_freq`` are not weights) vs ``weight_bytes(spec, dtype)`` for the directory's config.json;
- KV bytes after prefill and each decode step: the bytes of the tensors each cache layer holds
  (keys / values views, conv and recurrent states) vs ``kv_cache_bytes(..., convention='transformers')``
  (sliding layers keep window - 1 tokens; recurrent state fp32). The storage those views pin is
  reported beside (a sliding layer's trimmed view keeps its whole pre-trim tensor alive until the
  next update; README "the formulas", tests/test_oracle_cache.py);
- logits of one full forward vs prefill + one-token appends, as for the reference decoder.
"""

import contextlib
import gc
import time
import traceback
from pathlib import Path

from kvplan.errors import PlanInputError
from kvplan.hf_config import load_config_text, parse_config
from kvplan.kv import kv_cache_bytes
from kvplan.validate import estimate as est
from kvplan.validate.measure import (
    CHECK_SIZES,
    LIMITS,
    TOLERANCE,
    RefusedError,
    _check_int,
    needed_with_margin,
    pick_dtype,
    prompt_tokens,
)
from kvplan.weights import weight_bytes

# safetensors only: a pytorch_model.bin is a pickle, and unpickling runs code.
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json")


def is_hf_dir(path: str | Path) -> bool:
    p = Path(path)
    return p.is_dir() and (p / "config.json").is_file() and any((p / f).is_file() for f in WEIGHT_FILES)


def cache_tensor_bytes(cache) -> tuple[list[int], int]:
    """(logical bytes per cache layer, distinct storage bytes) of a transformers Cache."""
    import torch

    per_layer, storages = [], {}
    for layer in cache.layers:
        total = 0
        tensors = [getattr(layer, "keys", None), getattr(layer, "values", None)]
        for name in ("conv_states", "recurrent_states"):
            states = getattr(layer, name, None)
            if isinstance(states, dict):
                tensors.extend(states.values())
        for t in tensors:
            if isinstance(t, torch.Tensor) and t.numel():
                total += t.numel() * t.element_size()
                st = t.untyped_storage()
                storages[st.data_ptr()] = st.nbytes()
        per_layer.append(total)
    return per_layer, sum(storages.values())


def run_hf_validation(path: str | Path, *, tokens: int = 32, steps: int = 8, batch: int = 1, dtype: str = "auto",
                      device: str = "auto", seed: int = 0, free_bytes: int | None = None, check: bool = True,
                      progress=None) -> dict:
    """Validate a local checkpoint directory (see module doc). Holds the same one-run lock."""
    from kvplan.validate import measure

    batch = _check_int("batch", batch, 1, LIMITS["batch"])
    tokens = _check_int("tokens", tokens, 1, LIMITS["tokens"])
    steps = _check_int("steps", steps, 0, LIMITS["steps"])
    if not is_hf_dir(path):
        raise PlanInputError("model", f"{path}: not a local checkpoint directory (config.json + safetensors weights)")
    try:
        import transformers  # noqa: F401
    except ImportError:
        raise PlanInputError("model", "a checkpoint directory needs the transformers package, "
                                      "which is not installed") from None
    if not measure._LOCK.acquire(blocking=False):
        raise measure.BusyError("validate", "busy: another validation run is in progress on this server")
    try:
        return _run(Path(path), tokens, steps, batch, dtype, device, seed, free_bytes, check,
                    progress or (lambda f, t: None))
    finally:
        measure._LOCK.release()


def _run(path: Path, tokens, steps, batch, dtype, device, seed, free_bytes, check, progress) -> dict:
    import torch
    from transformers import AutoModelForCausalLM, DynamicCache

    from kvplan.validate.decoder import TORCH_DTYPES
    from kvplan.validate.measure import _device, _device_name
    from kvplan.validate.memory import MemoryProbe

    spec = parse_config(load_config_text((path / "config.json").read_bytes()), name=path.name)
    dev = _device(device)
    fmt = pick_dtype(spec, dtype, dev.type)
    run = est.with_dtype(spec, fmt)
    max_len = tokens + steps
    predicted_weights = weight_bytes(run, fmt).total_bytes
    kv_max = kv_cache_bytes(run, [max_len] * batch, fmt, "transformers").kv_bytes
    # transformers expands K/V to every query head inside attention (repeat_kv) and concatenates on
    # update: budget twice the reference decoder's workspace and the cache twice.
    ws = 2 * est.workspace_bytes(run, batch, tokens, tokens, fmt, all_logits=True, device=dev.type)
    peak = predicted_weights + 2 * kv_max + ws
    probe = MemoryProbe(dev)
    free = probe.free_bytes() if free_bytes is None else free_bytes
    if needed_with_margin(peak) > free:
        from kvplan.units import format_bytes

        raise RefusedError("memory", f"{path.name}: needs about {format_bytes(peak)} (weights "
                           f"{format_bytes(predicted_weights)}), {format_bytes(needed_with_margin(peak))} with the "
                           f"margin, but only {format_bytes(free)} is free")
    threads = torch.get_num_threads()
    held: dict = {}
    notes = []
    try:
        if dev.type == "cpu":
            torch.set_num_threads(1)
        progress(0.05, f"loading {path.name} ({fmt}) with transformers")
        before = probe.allocated()
        model = AutoModelForCausalLM.from_pretrained(path, dtype=TORCH_DTYPES[fmt], local_files_only=True,
                                                     trust_remote_code=False, use_safetensors=True)
        model = model.to(dev).eval()
        held["model"] = model
        probe.sync()
        tensor_bytes = sum(p.numel() * p.element_size() for p in model.parameters())  # tied once
        # transformers allocates every parameter separately, and the CUDA allocator rounds each to 512 B:
        # the exact figure is the tensor bytes; the allocator's delta is shown beside it.
        measured_weights = tensor_bytes
        if dev.type == "cuda":
            buffers = sum(b.numel() * b.element_size() for b in model.buffers())
            notes.append(f"weights: parameter tensor bytes; torch.cuda.memory_allocated grew by "
                         f"{probe.allocated() - before:,} B while loading (per-tensor 512 B rounding, plus "
                         f"{buffers:,} B of buffers such as rotary tables)")
        else:
            notes.append("weights: parameter tensor bytes (numel x element size, a tied table once)")
        prompt = prompt_tokens(batch, tokens, spec.vocab_size, 0, seed, dev)
        steps_rows = []
        with torch.no_grad():
            cache = DynamicCache(config=model.config)
            held["cache"] = cache
            t0 = time.perf_counter()
            out = model(input_ids=prompt, past_key_values=cache, use_cache=True)
            probe.sync()
            prefill_s = time.perf_counter() - t0
            nxt = out.logits[:, -1].argmax(-1, keepdim=True)
            del out
            decode_s = []
            for j in range(steps + 1):
                if j > 0:
                    t0 = time.perf_counter()
                    out = model(input_ids=nxt, past_key_values=cache, use_cache=True)
                    probe.sync()
                    decode_s.append(time.perf_counter() - t0)
                    nxt = out.logits[:, -1].argmax(-1, keepdim=True)
                    del out
                per_layer, pinned = cache_tensor_bytes(cache)
                n = tokens + j
                want = kv_cache_bytes(run, [n] * batch, fmt, "transformers")
                steps_rows.append(dict(phase="transformers", step=j, tokens=n, kv_predicted=want.kv_bytes,
                                       kv_measured=sum(per_layer), storage_bytes=pinned,
                                       seconds=prefill_s if j == 0 else decode_s[-1]))
                progress(0.1 + 0.7 * (j + 1) / (steps + 1), f"decode step {j}/{steps}")
            held.pop("cache")
            del cache
            checks = {}
            if check:
                checks["transformers"] = _hf_check(model, spec, fmt, batch, tokens, steps, seed, dev)
        kv_ok = all(r["kv_predicted"] == r["kv_measured"] for r in steps_rows)
        first, last = steps_rows[0], steps_rows[-1]
        decode_med = sorted(decode_s)[len(decode_s) // 2] if decode_s else None
        predicted = dict(weight_bytes=predicted_weights, kv_bytes=last["kv_predicted"],
                         kv_bytes_after_prefill=first["kv_predicted"])
        measured = dict(weight_bytes=measured_weights, weight_tensor_bytes=tensor_bytes, kv_bytes=last["kv_measured"],
                        kv_bytes_after_prefill=first["kv_measured"], kv_storage_bytes=last["storage_bytes"],
                        decode_s_per_step=decode_med, tokens_per_s=batch / decode_med if decode_med else None,
                        prefill_s=prefill_s)
        c = checks.get("transformers")
        if dev.type == "cpu":
            notes.append("CPU host: GPU timings are not available; raw CPU times on 1 thread")
        notes.append("cache: transformers' own DynamicCache(config=model.config); KV predicted with "
                     "convention='transformers'")
        rows = [
            dict(quantity="weight bytes", predicted=predicted_weights, measured=measured_weights, unit="B", exact=True,
                 ok=predicted_weights == measured_weights, error_pct=None, note="parameters, tied tables once"),
            dict(quantity="KV bytes after prefill", predicted=first["kv_predicted"], measured=first["kv_measured"],
                 unit="B", exact=True, ok=first["kv_predicted"] == first["kv_measured"], error_pct=None,
                 note="tensors held by the cache layers"),
            dict(quantity=f"KV bytes after {steps} decode steps", predicted=last["kv_predicted"],
                 measured=last["kv_measured"], unit="B", exact=True, ok=last["kv_predicted"] == last["kv_measured"],
                 error_pct=None, note=f"storage pinned: {last['storage_bytes']:,} B"),
        ]
        if c:
            rows.append(dict(quantity="logits error (relative)", predicted=c["tolerance"], measured=c["rel_err"],
                             unit="",
                             exact=False, ok=c["ok"], error_pct=None, note=f"max abs {c['max_abs_err']:.3g}"))
        exact = dict(weights=predicted_weights == measured_weights, kv_static=kv_ok, kv_paged=None, paging=None)
        return dict(
            source="transformers", model=spec.name, model_type=spec.model_type, path=str(path),
            device=_device_name(dev), device_type=dev.type, dtype=fmt, gpu_timings=dev.type == "cuda",
            batch=batch, prompt_tokens=tokens, decode_steps=steps, predicted=predicted, measured=measured,
            steps=steps_rows, timeline=[], checks=checks, rows=rows, exact=exact,
            logits_max_abs_err=c["max_abs_err"] if c else None, logits_rel_err=c["rel_err"] if c else None,
            logits_tolerance=TOLERANCE[fmt], logits_ok=c["ok"] if c else None,
            ok=bool(all(v for v in exact.values() if v is not None) and (c is None or c["ok"])),
            reduction=dict(reduced=False, description="full checkpoint"), full_model=None, notes=notes,
        )
    except torch.OutOfMemoryError as exc:
        traceback.clear_frames(exc.__traceback__)
        raise RefusedError("memory", f"out of memory running {path.name} on {dev}; everything was released") from None
    except BaseException as exc:
        traceback.clear_frames(exc.__traceback__)  # release the model and cache held by the frames
        raise
    finally:
        held.clear()
        gc.collect()
        if dev.type == "cuda":
            with contextlib.suppress(Exception):
                torch.cuda.empty_cache()
        torch.set_num_threads(threads)


def _hf_check(model, spec, fmt, batch, tokens, steps, seed, dev) -> dict:
    import torch
    from transformers import DynamicCache

    b, p = min(batch, CHECK_SIZES["batch"]), min(tokens, CHECK_SIZES["tokens"])
    s = max(1, min(steps, CHECK_SIZES["steps"]))
    ids = prompt_tokens(b, p + s, spec.vocab_size, 0, seed + 7, dev)
    full = model(input_ids=ids, use_cache=False).logits.float()
    cache = DynamicCache(config=model.config)
    outs = [model(input_ids=ids[:, :p], past_key_values=cache, use_cache=True).logits.float()]
    for j in range(s):
        outs.append(model(input_ids=ids[:, p + j:p + j + 1], past_key_values=cache, use_cache=True).logits.float())
    inc = torch.cat(outs, dim=1)
    err = (inc - full).abs().max().item()
    ref = full.abs().max().item()
    rel = err / ref if ref else err
    return dict(cache="transformers", fault=None, batch=b, prompt_tokens=p, steps=s, max_abs_err=err,
                max_abs_logit=ref, rel_err=rel, tolerance=TOLERANCE[fmt], ok=bool(rel <= TOLERANCE[fmt]))


