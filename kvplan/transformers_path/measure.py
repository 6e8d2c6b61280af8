"""Each layer's cache, measured: a depth-reduced copy of the model runs a real prefill and two
decode steps on the CPU, and the tensors its cache object holds give every layer's cache spec.

The copy keeps one layer of each distinct kind (the shortest prefix of layers covering every
layer signature: parameter shapes, module classes and their per-layer settings, per-layer config
entries), shrinks the vocabulary, and, where that leaves the cache unchanged, the MLP / expert
widths and the hidden size. "Unchanged" is checked, not assumed: two copies shrunk to different
widths must hold caches of identical shapes at every step, else the width stays real (Mamba's
inner size is ``expand x hidden_size``; a derived ``head_dim`` is ``hidden_size // heads``).
Attention geometry (heads, head dims, latent ranks, state sizes) is never touched. Windows are
shrunk to small distinct values so a short prompt runs past them; a layer holding
``min(T, w - 1)`` tokens for the shrunk ``w`` of field ``f`` is a sliding (or, for
``attention_chunk_size``, chunked) layer of the real ``f``.
"""

import math
import time

import torch
from transformers import AutoModelForCausalLM

from kvplan.errors import ConfigError
from kvplan.layers import (
    ChunkedLocalAttention,
    FullAttention,
    MeasuredState,
    MLAAttention,
    NoCache,
    SlidingWindowAttention,
    StatePart,
)
from kvplan.transformers_path.build import attr, config_error, layers_key, quiet, text_config

MAX_COPY_BYTES = 3 * 2**30  # fp32 weights of the reduced copy; past this the build is refused
STEPS = 2  # decode steps after the prefill
_SKIP_INDEX = ("idx", "layer_id", "layer_num", "layer_index", "block_id", "layer_number")
_WIDTH_WORDS = ("intermediate", "ffn", "ff_dim", "mlp_dim", "expert_dim", "moe_dim")
_WIDTH_KEYS = {"n_inner", "d_ff", "ffn_dim", "ffn_hidden_size", "inner_hidden_size"}


class Unmeasurable(Exception):
    """The reduced copy ran, but its cache holds something kvplan has no kind for."""


def check_time(started: float, budget: float, what: str) -> None:
    if time.monotonic() - started > budget:
        raise ConfigError("config", f"the transformers-backed build ran past its {budget:.0f} s budget ({what}); "
                          "too large a config to build on this host")


# ----------------------------------------------------------------------------- layer signatures


def _scalars(module) -> tuple:
    out = []
    for k, v in vars(module).items():
        if k.startswith("_") or any(s in k.lower() for s in _SKIP_INDEX):
            continue
        if isinstance(v, (bool, int, float, str)) or v is None:
            out.append((k, v))
    return tuple(sorted(out, key=lambda kv: kv[0]))


def signatures(stack, per_layer_values: list[tuple]) -> list[tuple]:
    """One hashable signature per decoder layer (see module doc)."""
    sigs = []
    for i, layer in enumerate(stack):
        params = tuple((n, tuple(p.shape)) for n, p in layer.named_parameters())
        mods = tuple((n, type(m).__name__, _scalars(m)) for n, m in layer.named_modules())
        sigs.append((params, mods, per_layer_values[i] if i < len(per_layer_values) else ()))
    return sigs


def _index_list(key: str, v, n: int) -> bool:
    """A list of layer indices (``mlp_only_layers: [0, 3]``): strictly increasing ints below n."""
    return (isinstance(v, list) and bool(v) and "token" not in key and all(
        isinstance(x, int) and not isinstance(x, bool) for x in v) and all(a < b for a, b in zip(v, v[1:]))
        and 0 <= v[0] and v[-1] < n)


def _per_layer(key: str, v, n: int) -> bool:
    """A per-layer list (``layer_types``) or pattern string (``hybrid_override_pattern``) of length n."""
    if n < 2 or _index_list(key, v, n):
        return False
    if isinstance(v, list):
        return len(v) == n
    return isinstance(v, str) and len(v) == n and any(w in key.lower() for w in ("pattern", "layer", "block", "type"))


def _layer_dict(v, n: int) -> bool:
    """A dict keyed by layer index (``per_layer_config: {"11": {...}}``)."""
    return isinstance(v, dict) and bool(v) and all(
        (isinstance(k, int) or (isinstance(k, str) and k.isdigit())) and int(k) < n and isinstance(x, dict)
        for k, x in v.items())  # (id2label is keyed by index too, but by label strings)


def per_layer_entries(d: dict, n: int, keys_of: dict | None = None, n_keys: int | None = None) -> list[tuple]:
    """For each layer, its entries in the config's per-layer lists / patterns / index lists (which keys
    those are is decided on ``keys_of`` with ``n_keys`` layers: the full config, for a truncated copy)."""
    src, m = (keys_of, n_keys) if keys_of is not None else (d, n)
    keys = [k for k, v in src.items() if _per_layer(k, v, m) and k in d]
    index_keys = [k for k, v in src.items() if _index_list(k, v, m) and isinstance(d.get(k), list)]
    dict_keys = [k for k, v in src.items() if _layer_dict(v, m) and isinstance(d.get(k), dict)]
    return [tuple((k, repr(d[k][i])) for k in keys) + tuple((k, i in d[k]) for k in index_keys)
            + tuple((k, repr(d[k].get(i, d[k].get(str(i))))) for k in dict_keys) for i in range(n)]


def truncate(d: dict, key: str, n_full: int, n: int) -> dict:
    out = dict(d)
    out[key] = n
    for k, v in d.items():
        if k == key:
            continue
        if _layer_dict(v, n_full):
            out[k] = {key: val for key, val in v.items() if int(key) < n}
        elif _index_list(k, v, n_full):
            out[k] = [x for x in v if x < n]
        elif _per_layer(k, v, n_full):
            out[k] = v[:n]
    return out


# ----------------------------------------------------------------------------- the copies


def _text_dict(d: dict) -> tuple[dict, str | None]:
    """(the dict holding the decoder's fields, the key it sits under in ``d`` or None)."""
    for key in ("text_config", "language_config", "llm_config"):
        if isinstance(d.get(key), dict) and any(k in d[key] for k in ("num_hidden_layers", "hidden_size", "n_layer")):
            return d[key], key
    return d, None


def _with_text(d: dict, sub: str | None, text: dict) -> dict:
    if sub is None:
        return text
    return {**d, sub: text}


def _config(model_type: str, d: dict):
    from transformers import AutoConfig

    fields = {k: v for k, v in d.items() if k != "model_type"}
    with quiet():
        return AutoConfig.for_model(model_type, **fields)


def _meta(cfg):
    with quiet(), torch.device("meta"):
        return AutoModelForCausalLM.from_config(cfg)


def _observe(cache, n_layers: int) -> list[dict]:
    layers = getattr(cache, "layers", None)
    if layers is None:
        raise Unmeasurable(f"its cache ({type(cache).__name__}) has no per-layer entries")
    if len(layers) > n_layers and len(layers) % n_layers == 0:
        n_layers = len(layers)  # several attention sub-layers per decoder layer (LongCat-Flash: 2); merged later
    elif len(layers) > n_layers or (len(layers) < n_layers and not _lazy(cache)):
        raise Unmeasurable(f"its cache has {len(layers)} layers for {n_layers} decoder layers")
    out = []
    for layer in list(layers) + [None] * (n_layers - len(layers)):  # a lazy cache stops at the last user
        if layer is None:
            out.append({"keys": None, "values": None, "conv": {}, "rec": {}, "other": {}, "indexer": None})
            continue
        obs = {"keys": None, "values": None, "conv": {}, "rec": {}, "other": {}, "indexer": None}
        for name, value in vars(layer).items():
            if name == "indexer_keys":
                if isinstance(value, torch.Tensor) and value.numel():
                    obs["indexer"] = (tuple(value.shape), value.element_size())
            elif name in ("keys", "values"):
                if isinstance(value, torch.Tensor) and value.numel():
                    obs[name] = (tuple(value.shape), value.element_size())
            elif name in ("conv_states", "recurrent_states"):
                items = value.items() if isinstance(value, dict) else enumerate(value or ())
                for i, t in items:
                    if isinstance(t, torch.Tensor):
                        obs["conv" if name == "conv_states" else "rec"][i] = (tuple(t.shape), t.element_size())
            elif name.startswith("_") or "position" in name:
                continue
            else:
                tensors = value.values() if isinstance(value, dict) else (
                    value if isinstance(value, (list, tuple)) else [value])
                held = [t for t in tensors if isinstance(t, torch.Tensor) and t.numel()]
                if held:
                    obs["other"][name] = [tuple(t.shape) for t in held]
        out.append(obs)
    # Per-layer state kept on the cache object itself (MiniMax's ``linear_cache[layer]``).
    for name, value in vars(cache).items():
        if name != "layers" and isinstance(value, list) and 0 < len(value) <= n_layers and all(
                isinstance(t, (torch.Tensor, list)) for t in value):
            for i, t in enumerate(value):
                if isinstance(t, torch.Tensor) and t.numel():
                    out[i]["rec"][name] = (tuple(t.shape), t.element_size())
    return out


def _lazy(cache) -> bool:
    """A cache built without the config grows its layer list as layers first write (MiniMaxCache)."""
    return getattr(cache, "layer_class_to_replicate", None) is not None


def _run(cfg, prompt: int, dtype=torch.float32) -> list[list[dict]]:
    """Prefill ``prompt`` tokens, then STEPS decode steps; the cache observed after each."""
    torch.manual_seed(0)
    with quiet():
        model = _cpu_model(cfg, dtype)
        n = len(_stack_of(model))
        vocab = model.get_input_embeddings().weight.shape[0]
        ids = torch.randint(0, min(vocab, 100), (1, prompt))
        seen = []
        with torch.no_grad():
            out = model(input_ids=ids, use_cache=True)
            name, cache = cache_of(out)
            seen.append(_observe(cache, n))
            for _ in range(STEPS if dtype == torch.float32 else 0):
                out = model(input_ids=ids[:, -1:], use_cache=True, **{name: cache})
                name, cache = cache_of(out)
                seen.append(_observe(cache, n))
    return seen


def _cpu_model(cfg, dtype):
    """The copy on the CPU, its weights small uniform values: transformers' own initialisation (normal_
    over every weight) costs seconds on a wide copy, and the cache's shapes do not depend on the values."""
    from transformers.initialization import no_init_weights

    with no_init_weights():
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(-0.05, 0.05, generator=gen)
    return model.eval()


def cache_of(out) -> tuple[str, object]:
    """(the forward's keyword for it, the cache object) from a model output."""
    for name in ("past_key_values", "cache_params"):
        cache = getattr(out, name, None)
        if cache is not None:
            return name, cache
    raise Unmeasurable("its transformers forward returns no cache object (it recomputes, or keeps its state "
                       "inside the modules)")


def _stack_of(model):
    from kvplan.transformers_path.build import decoder_stack

    return decoder_stack(model)[1]


def _shape_key(runs: list[list[dict]]) -> list:
    return [[{k: v for k, v in obs.items()} for obs in step] for step in runs]


# ----------------------------------------------------------------------------- classification


def classify(steps: list[list[dict]], seen: list[int], windows: dict[str, tuple[int, int]], fp32_layers, bf16_steps,
             hf_text, notes: list[str]) -> list:
    """One cache spec per reduced layer from its observations at each step (see module doc)."""
    specs = []
    nq = attr(hf_text, "num_attention_heads", "n_head")
    nkv_cfg = attr(hf_text, "num_key_value_heads", "num_kv_heads")
    for j in range(len(steps[0])):
        obs = [step[j] for step in steps]
        if obs[-1]["other"]:
            raise Unmeasurable(f"layer {j}'s cache holds {sorted(obs[-1]['other'])}, which no kvplan cache kind "
                               "describes")
        attention = None
        if any(o["keys"] is not None for o in obs):
            attention = _attention(j, obs, seen, windows, nq, nkv_cfg, notes, hf_text)
        parts = []
        for group, conv in (("conv", True), ("rec", False)):
            for i, (shape, _) in sorted(obs[-1][group].items()):
                if any(o[group].get(i, (None,))[0] != shape for o in obs):
                    raise Unmeasurable(f"layer {j}'s {group} state changes shape between steps")
                fixed = None
                if bf16_steps is not None:
                    b = bf16_steps[0][j][group].get(i)
                    fixed = 4 if b is not None and b[1] == 4 else None
                parts.append(StatePart(name=f"{'conv' if conv else 'recurrent'}_states[{i}]", shape=shape[1:],
                                       conv=conv, split_dim=0, transformers_bytes=fixed))
        indexer = 0
        if obs[-1]["indexer"] is not None:
            shapes = [o["indexer"][0] if o["indexer"] else None for o in obs]
            if attention is None or any(sh is None or len(sh) != 3 or sh[1] != (o["keys"][0][-2])
                                        for sh, o in zip(shapes, obs)):
                raise Unmeasurable(f"layer {j}'s indexer keys do not follow its attention's tokens")
            indexer = shapes[-1][2]
        if (parts or indexer) and isinstance(attention, MLAAttention):  # the latent as one replicated head
            attention = _latent_as_head(attention, 1)
        if parts or indexer:
            specs.append(MeasuredState(parts=tuple(parts), attention=attention, indexer_dim=indexer))
        elif attention is not None:
            specs.append(attention)
        else:
            specs.append(NoCache())
    return specs


def _merge(specs: list, n: int) -> list:
    """k cache entries per decoder layer (k x n in all) -> one spec per layer: heads of alike attention summed."""
    if len(specs) == n:
        return specs
    k = len(specs) // n
    out = []
    for i in range(n):
        group = specs[i * k:(i + 1) * k]
        kept = [g for g in group if g.kind != "none"]
        if not kept:
            out.append(NoCache())
            continue
        first = kept[0]
        if all(g == first for g in kept) and first.kind == "mla":  # k latents per layer: one wider replicated head
            out.append(_latent_as_head(first, len(kept)))
            continue
        same = all(type(g) is type(first) and g.model_dump(exclude={"num_key_value_heads"}) ==
                   first.model_dump(exclude={"num_key_value_heads"}) for g in kept)
        if not same or first.kind not in ("full_attention", "sliding_attention", "chunked_attention"):
            raise Unmeasurable(f"decoder layer {i} has {k} cache entries of different kinds")
        out.append(first.model_copy(update={"num_key_value_heads": sum(g.num_key_value_heads for g in kept)}))
    return out


def _latent_as_head(mla: MLAAttention, k: int) -> FullAttention:
    """k MLA latents as one K/V "head" (replicated under TP, like the latent): k x (rank + rope) elements."""
    return FullAttention(num_key_value_heads=1, head_dim=k * mla.kv_lora_rank, v_head_dim=k * mla.qk_rope_head_dim)


def _mla(hf_text, hk, dk, hv, dv):
    """An MLA latent, when the cache holds exactly one: keys [B, 1, T, kv_lora_rank], values
    [B, 1, T, qk_rope_head_dim] (transformers' DeepSeek layout), as kvplan's MLAAttention (vLLM
    ``MLAAttentionSpec``: replicated on every TP rank, its own block size)."""
    dims = {k: attr(hf_text, k) for k in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim",
                                          "num_attention_heads")}
    if not all(isinstance(v, int) and v > 0 for v in dims.values()):
        return None
    if (hk, hv, dk, dv) != (1, 1, dims["kv_lora_rank"], dims["qk_rope_head_dim"]):
        return None
    return MLAAttention(**dims)


def _attention(j, obs, seen, windows, nq, nkv_cfg, notes, hf_text=None):
    keys = [o["keys"][0] if o["keys"] else None for o in obs]
    values = [o["values"][0] if o["values"] else None for o in obs]
    if any(k is None for k in keys):
        raise Unmeasurable(f"layer {j} caches keys at some steps only")
    held = [k[-2] for k in keys]
    if any(v is not None and v[-2] != k[-2] for k, v in zip(keys, values)):
        raise Unmeasurable(f"layer {j} caches keys and values of different lengths")
    if len(keys[0]) != 4 or keys[0][0] != 1 or len({(k[1], k[3]) for k in keys}) != 1:
        raise Unmeasurable(f"layer {j} caches keys shaped {keys[0]}, not [batch, heads, tokens, dim]")
    hk, dk = keys[0][1], keys[0][3]
    hv, dv = (values[0][1], values[0][3]) if values[0] is not None else (0, 0)
    if hv and hv != hk and (hv * dv) % hk:
        raise Unmeasurable(f"layer {j} caches {hk} key heads and {hv} value heads")
    v_dim = hv * dv // hk
    if not v_dim:  # keys only (K = V): split the one width in two so elements per token stay exact
        if dk < 2:
            raise Unmeasurable(f"layer {j} caches keys of width {dk} and no values")
        dk, v_dim = dk - dk // 2, dk // 2
        notes.append(f"layer kind {j} of the copy caches keys only (K = V): {hk} x {dk + v_dim} elements per token")
    geometry = dict(num_key_value_heads=hk, head_dim=dk, v_head_dim=v_dim)
    if (isinstance(nkv_cfg, int) and isinstance(nq, int) and 0 < nkv_cfg < hk == nq and hk % nkv_cfg == 0
            and hv == hk):
        geometry.update(num_key_value_heads=nkv_cfg, transformers_cached_heads=hk)
    if held == seen:
        mla = _mla(hf_text, hk, dk, hv, dv)
        return mla or FullAttention(**geometry)
    for field, (small, real) in windows.items():
        if held == [min(t, small - 1) for t in seen]:
            if "chunk" in field:
                return ChunkedLocalAttention(attention_chunk_size=real, **geometry)
            return SlidingWindowAttention(sliding_window=real, **geometry)
    raise Unmeasurable(f"layer {j} holds {held} tokens after {seen}: neither every token nor a window's last "
                       f"w - 1 (windows shrunk to {({f: s for f, (s, _) in windows.items()})})")


# ----------------------------------------------------------------------------- the measurement


def _variants(text: dict, hidden_key: str, nq: int, head_dim: int | None) -> list[tuple[str, dict, dict]]:
    """(label, variant A, variant B): shrink sets tried in order, widest first."""
    ids = []
    for k, v in text.items():
        if k.endswith("token_id") or k.endswith("token_ids"):
            ids += [x for x in (v if isinstance(v, list) else [v]) if isinstance(x, int) and not isinstance(x, bool)]
    vocab = text.get("vocab_size")
    small_vocab = max([256] + [i + 1 for i in ids])
    base = {}
    if isinstance(vocab, int) and vocab > small_vocab:
        base["vocab_size"] = small_vocab
    widths = [k for k, v in text.items() if isinstance(v, int) and not isinstance(v, bool) and v > 48 and
              (k in _WIDTH_KEYS or any(w in k.lower() for w in _WIDTH_WORDS)) and "layer" not in k.lower()]
    h = text.get(hidden_key)
    h0 = 32 * math.ceil(max(nq, 32) / 32)
    out = []
    if isinstance(h, int) and h > 3 * h0 and head_dim and text.get("head_dim") is None:
        # head_dim derived from hidden_size: pin it at the real value, so hidden can shrink where the
        # model reads config.head_dim (checked like any shrink: the two copies must agree)
        pin = {"head_dim": head_dim}
        out.append(("hidden (head_dim pinned), MLP widths and vocabulary",
                    {**base, **dict.fromkeys(widths, 32), hidden_key: 2 * h0, **pin},
                    {**base, **dict.fromkeys(widths, 48), hidden_key: 3 * h0, **pin}))
    if isinstance(h, int) and h > 3 * h0:
        out.append(("hidden, MLP widths and vocabulary",
                    {**base, **dict.fromkeys(widths, 32), hidden_key: 2 * h0},
                    {**base, **dict.fromkeys(widths, 48), hidden_key: 3 * h0}))
    if widths:
        out.append(("MLP widths and vocabulary", {**base, **dict.fromkeys(widths, 32)},
                    {**base, **dict.fromkeys(widths, 48)}))
    out.append(("vocabulary", base, None))
    return out


def _windows(text: dict) -> dict[str, tuple[int, int]]:
    """Window fields to shrink: field -> (small value, real value)."""
    out = {}
    small = 5
    for k, v in sorted(text.items()):
        low = k.lower()
        if isinstance(v, int) and not isinstance(v, bool) and v > 4 and "layer" not in low and "num" not in low and (
                "window" in low or low == "attention_chunk_size"):
            out[k] = (small, v)
            small += 2
    return out


def _bytes(model) -> tuple[int, str]:
    big = max(model.named_parameters(), key=lambda kv: kv[1].numel(), default=("", None))
    return sum(p.numel() for p in model.parameters()) * 4, big[0]


def measure(model_type: str, hf, full_model, stack_path: str, started: float, budget: float, report,
            model_fp32: bool = False):
    """(cache spec per real layer, layers in the copy, notes for the spec's warnings)."""
    d_full = hf.to_dict()
    text, sub = _text_dict(d_full)
    tc = text_config(hf)
    lkey = layers_key(tc)
    stack = _stack_of(full_model)
    n_full = len(stack)
    if text.get(lkey) != n_full and isinstance(text.get("num_hidden_layers"), int):
        lkey = "num_hidden_layers"
    full_bytes = sum(p.numel() for p in full_model.parameters()) * 4
    sigs = signatures(stack, per_layer_entries(text, n_full))
    first_of = {}
    for i, s in enumerate(sigs):
        first_of.setdefault(s, i)
    n = max(first_of.values()) + 1
    reduced_text = text
    if n < n_full:
        try:
            cand = truncate(text, lkey, n_full, n)
            cfg = _config(model_type, _with_text(d_full, sub, cand))
            small_stack = _stack_of(_meta(cfg))
            if signatures(small_stack, per_layer_entries(cand, n, keys_of=text, n_keys=n_full)) == sigs[:n]:
                reduced_text = cand
            else:
                n = n_full
        except Exception:
            n = n_full
    else:
        n = n_full
    if n == n_full:
        first_of = {}
        mapping = list(range(n_full))
    else:
        mapping = [sigs.index(s) for s in sigs]
    check_time(started, budget, "choosing the reduced copy")

    nq = attr(tc, "num_attention_heads", "n_head") or 1
    hidden_key = getattr(type(tc), "attribute_map", {}).get("hidden_size", "hidden_size")
    windows = _windows(reduced_text)
    prompt = max([12] + [s + 4 for s, _ in windows.values()])
    seen = [prompt + i for i in range(STEPS + 1)]
    shrunk_windows = {k: s for k, (s, _) in windows.items()}
    notes: list[str] = []
    last_error: Exception | None = None
    too_big: tuple[int, str] | None = None
    chosen = None
    smallest = None
    nq_int = nq if isinstance(nq, int) and nq > 0 else 1
    h_real = reduced_text.get(hidden_key)
    derived = h_real // nq_int if isinstance(h_real, int) and h_real % nq_int == 0 else None
    variants = _variants(reduced_text, hidden_key, nq_int, derived)
    for step, (label, a, b) in enumerate(variants):
        report(0.3 + 0.5 * step / len(variants), f"running a {n}-layer copy ({label} shrunk)")
        try:
            cfg_a = _config(model_type, _with_text(d_full, sub, {**reduced_text, **a, **shrunk_windows}))
            if full_bytes > MAX_COPY_BYTES:  # a small model's copy is smaller still: no need to look
                size, biggest = _bytes(_meta(cfg_a))
                if size > MAX_COPY_BYTES:
                    too_big = (size, biggest)
                    continue
            runs_a = _run(cfg_a, prompt)
            smallest = smallest or cfg_a  # the most shrunk copy that ran: enough to see which dtype a state keeps
            check_time(started, budget, "the reduced copy's forward")
            if b is not None:
                cfg_b = _config(model_type, _with_text(d_full, sub, {**reduced_text, **b, **shrunk_windows}))
                if _shape_key(_run(cfg_b, prompt)) != _shape_key(runs_a):
                    continue  # a shrunk width changes the cache: keep it real
            chosen = (cfg_a, runs_a, label)
            break
        except Unmeasurable:
            raise
        except ConfigError:
            raise
        except Exception as exc:  # this shrink breaks the config or its forward: try the next
            last_error = exc
            check_time(started, budget, "the reduced copy")
    if chosen is None:
        if too_big is not None and last_error is None:
            size, biggest = too_big
            field = hidden_key if isinstance(reduced_text.get(hidden_key), int) else "config"
            raise ConfigError(field, f"the reduced {n}-layer copy would hold {size / 2**30:.1f} GiB of fp32 weights "
                                     f"(largest: {biggest}); the transformers path measures at most "
                                     f"{MAX_COPY_BYTES / 2**30:.0f} GiB")
        raise config_error(last_error or RuntimeError("no shrink kept the cache"), text,
                           f"cannot run a reduced {n}-layer copy of this config")
    cfg_a, runs_a, label = chosen
    bf16 = None
    if not model_fp32 and any(o["conv"] or o["rec"] for o in runs_a[0]):
        try:  # which state parts transformers keeps in fp32 whatever the model dtype
            bf16 = _run(smallest, prompt, torch.bfloat16)
        except Exception:
            notes.append("recurrent-state dtype assumed to follow the model dtype (a bf16 run of the copy failed)")
    report(0.85, "classifying each layer's cache")
    specs = _merge(classify(runs_a, seen, windows, None, bf16, tc, notes), n)
    if any(s.kind == "state" for s in specs):
        notes.append("recurrent state measured in transformers; the vllm convention keeps conv kernel - 1 columns "
                     "and every state in the model dtype, split over TP along heads / channels (vLLM's rule for Mamba "
                     "and linear attention; a family vLLM models otherwise may differ)")
    if any(s.kind == "none" for s in specs):
        notes.append("layers whose transformers cache holds nothing (MLP-only, or reading another layer's KV) plan "
                     "as keeping nothing")
    return [specs[j] for j in mapping], n, notes
