"""Which weights the plan budgets, on the pages: kvplan's computed shard sums, a checkpoint's safetensors headers
(a Hub id, ``ck`` in the link, or a local folder under the operator's KVPLAN_CHECKPOINT_ROOT, ``ckd``; re-split
for each layout), or a measured "Model loading took X GiB" (``wg``).

One or neither: choosing one clears the other (the last chosen wins). The choice itself is made, cached and
checked in ``kvplan.web.cached.weights_choice``; here it is drawn:

- ``sidebar``: on every page, a caption naming the weights in use; a checkpoint that cannot be read (offline,
  gated, missing) or a typed figure out of range is a refusal at the top of every page (``widgets.refuse``),
  and the plan budgets computed weights, labelled so;
- ``measured_input``: the Engine knobs' number box;
- ``hub_headers``: the Model page's "Read safetensors headers" and "Plan with these weights";
- ``local_headers``: the same for a local folder, offered only when KVPLAN_CHECKPOINT_ROOT is set; the folder is
  checked against the root when read, and again each time a link naming it is opened (kvplan.web.cached
  .local_checkpoint_read);
- ``budget_note``: the Budget page's line over its terms, with "Plan with computed weights".
"""

import re
from pathlib import Path

import streamlit as st

from kvplan.errors import KvplanError
from kvplan.web import cached, views, widgets
from kvplan.web import state as state_mod

LABEL = "Model loading took (GiB)"
# SGLang's own line for the same figure: "Load weight end. ... mem usage=X GB" (model_runner.py; its GB is 2^30 B):
# kvplan.sglang.budget takes a typed figure as that mem usage, the loading overhead included
SGLANG_LABEL = "Load weight mem usage (GiB)"


def label(engine: str) -> str:
    """The measured-weights box's label in the engine's own words: vLLM's "Model loading took", SGLang's "Load weight
    end ... mem usage"."""
    return SGLANG_LABEL if engine == "sglang" else LABEL


def typed_words(engine: str) -> str:
    """A typed measured figure, in words: "typed 'Model loading took' figure" (SGLang: 'Load weight mem usage')."""
    return f"typed '{label(engine).removesuffix(' (GiB)')}' figure"


def measured_help(engine: str) -> str:
    """The box's help: which start-up line of ``engine`` gives the figure, and what the plan does with it."""
    said = ("SGLang's start-up line 'Load weight end. avail mem=... GB, mem usage=X GB' (per GPU; SGLang's GB is 2^30 "
            "bytes): the plan budgets this figure (basis measured) in place of the computed weights and their loading "
            "overhead." if engine == "sglang" else
            "vLLM's start-up line 'Model loading took X GiB' (per GPU; V0: 'Loading model weights took X GB'): the "
            "plan budgets this figure (basis measured) in place of the computed weights.")
    return said + " Clears a checkpoint chosen on the Model page."
CHECKPOINT_LABEL = "Checkpoint weights (ck)"
LOCAL_LABEL = "Local checkpoint folder (ckd)"
FALLBACK = "computed weights (kvplan's shard sums, labelled so on the Budget page)"
HEADERS = "model.headers.repo"  # the repo whose headers the Model page shows (kept across reruns)
LOCAL_HEADERS = "model.local.folder"  # the local folder whose headers it shows
_ss = st.session_state


def use_checkpoint(repo: str) -> None:
    """Callback: plan with ``repo``'s safetensors headers (clears a typed figure)."""
    widgets.apply(checkpoint=repo, checkpoint_dir=None, weights_gib=None)


def use_local(folder: str) -> None:
    """Callback: plan with the local ``folder``'s safetensors headers (clears a Hub checkpoint and a typed figure)."""
    widgets.apply(checkpoint_dir=folder, checkpoint=None, weights_gib=None)


def use_local_config(folder: str) -> None:
    """Callback: the local ``folder``'s config.json becomes the sidebar's model (as a pasted one; errors are shown
    where the Model page shows a model source's)."""
    from kvplan.web import checkpoint

    source = f"the config.json of the local folder {folder[:200]}"
    try:
        data = checkpoint.local_config_bytes(folder)
    except checkpoint.CheckpointError as exc:
        _ss.pop(widgets.MODEL_ERROR, None)
        _ss[widgets.MODEL_ERROR] = (str(exc), False, source)
        return
    name = re.sub(r"[^\w./+@:() -]", "_", Path(folder.rstrip("/")).name or folder)[:200]  # a link-safe name (mn)
    widgets.use_config_text(data, name, source)


def use_computed() -> None:
    """Callback: plan with kvplan's computed weights again."""
    widgets.apply(checkpoint=None, checkpoint_dir=None, weights_gib=None)


def _choice(state) -> cached.WeightsChoice:
    try:
        return cached.weights_choice(state)
    except KvplanError:  # the model or GPU itself is refused; the pages say so
        return cached.COMPUTED


def sidebar(state) -> None:
    """Under the engine knobs, on every page: the weights in use, or the refusal of the ones asked for."""
    if state.checkpoint is None and state.checkpoint_dir is None and state.weights_gib is None:
        return
    choice = _choice(state)
    if choice.refused:
        if state.weights_gib is not None:
            widgets.refuse(label(state.engine), state_mod.fmt_decimal(state.weights_gib), choice.refused, FALLBACK)
        elif state.checkpoint is not None:
            widgets.refuse(CHECKPOINT_LABEL, state.checkpoint, choice.refused, FALLBACK)
        else:
            widgets.refuse(LOCAL_LABEL, state.checkpoint_dir, choice.refused, FALLBACK)
        return
    if choice.kind == "checkpoint":
        st.caption(f"Weights: checkpoint headers, {views.esc(choice.source)} "
                   f"({choice.weights_bytes:,} B on the busiest rank)")
        if choice.mismatch:  # one line here; the Budget page lists them all
            more = f" (and {len(choice.mismatch) - 1} more: see the Budget page)" if len(choice.mismatch) > 1 else ""
            st.warning(f"Checkpoint: {views.esc(choice.mismatch[0])}{more}.", icon=":material/warning:")
    elif choice.kind == "measured":
        st.caption(f"Weights: measured, {views.esc(choice.source)}")


def measured_input(state) -> None:
    """The Engine knobs' "Model loading took (GiB)" box (SGLang: "Load weight mem usage (GiB)"): the engine's logged
    per-rank weights, planned as measured."""
    key = widgets.PREFIX + "weights_gib"
    if key not in _ss:
        _ss[key] = state.weights_gib
    box = label(state.engine)
    value = st.number_input(box, key=key, value=None, step=0.1, format="%.4f", placeholder="computed",
                            help=measured_help(state.engine))
    if value == state.weights_gib:
        return
    if value is None:
        widgets.update(weights_gib=None)
        return
    reason = cached.measured_refusal(float(value), state.gpu)
    if reason is None:
        try:
            widgets.update(weights_gib=float(value), checkpoint=None, checkpoint_dir=None)
            return
        except ValueError as exc:
            reason = str(exc)
    shown = "computed" if state.weights_gib is None else f"{state_mod.fmt_decimal(state.weights_gib)} GiB"
    instead = "computed weights" if state.weights_gib is None else f"the last valid weights ({shown})"
    st.error(widgets.refusal_text(box, state_mod.fmt_decimal(value), reason, instead), icon=":material/block:")
    widgets.refuse(box, f"{state_mod.fmt_decimal(value)}", reason, instead)


def hub_headers(repo: str, state) -> None:
    """The Model page's Hub tab: read a checkpoint's safetensors headers (no weights), compare them with kvplan's
    weights, and offer to plan with them."""
    from kvplan.web import checkpoint_view

    repo = (repo or "").strip()
    fresh = bool(st.button("Read safetensors headers", key="model.headers",
                           help="Every tensor's dtype and shape by range requests of the headers only; no weights.")
                 and repo)
    if fresh:
        _ss[HEADERS] = repo
    if repo and _ss.get(HEADERS) == repo:
        def read():
            got = cached.checkpoint_read(repo, fresh=fresh)
            if isinstance(got, Exception):
                raise got
            return got

        with st.spinner(f"Reading the safetensors headers of {views.esc(repo)}..."):
            ckpt = checkpoint_view.show(read, cached.spec(state), state.weight_format)
        if ckpt is not None and state.checkpoint != repo:
            st.button("Plan with these weights", key="model.plan_ckpt", type="primary", on_click=use_checkpoint,
                      args=(ckpt.source,), icon=":material/scale:",
                      help="Every plan page budgets this checkpoint's tensors, split for the sidebar's layout, in "
                           "place of kvplan's computed weights (the link carries it).")
    if state.checkpoint is not None:
        st.caption(_planned_caption(state, f"the checkpoint {state.checkpoint}"))
        st.button("Plan with computed weights", key="model.computed", on_click=use_computed)


def local_headers(state) -> None:
    """Beside the Hub id on the Model page: a local checkpoint folder's safetensors headers, read only under the root
    the server's operator names in KVPLAN_CHECKPOINT_ROOT (a visitor's path outside it, after resolving symlinks
    and '..', is refused naming the field), compared with kvplan's weights, and "Plan with these weights"."""
    from kvplan.web import checkpoint, checkpoint_view

    root = checkpoint.checkpoint_root()
    if root is None:
        st.caption(f"A local checkpoint folder is read only when the server's operator sets {checkpoint.ROOT_ENV} "
                   f"(or {checkpoint.LEGACY_ROOT_ENV}: the folder whose checkpoints visitors may read).")
        return
    text = st.text_input(f"Local folder under {root}", key="model.local", max_chars=checkpoint.MAX_LOCAL_PATH,
                         placeholder="Qwen3-8B",
                         help=f"A checkpoint folder under {checkpoint.root_variable()} ({root}), relative to it or "
                              "absolute: its safetensors headers are read (8 bytes + the JSON of each shard; no "
                              "weights).")
    text = (text or "").strip()
    fresh = bool(st.button("Read local safetensors headers", key="model.local_headers",
                           help="Every tensor's dtype and shape from the headers of the folder's shards.") and text)
    if fresh:
        _ss[LOCAL_HEADERS] = text
    if text and _ss.get(LOCAL_HEADERS) == text:
        try:
            checkpoint.local_folder(text)
        except checkpoint.CheckpointError as exc:
            st.error(f"{LOCAL_LABEL} = {views.esc(text[:200])}: {views.esc(exc)}", icon=":material/block:")
            return

        def read():
            got = cached.local_checkpoint_read(text)
            if isinstance(got, Exception):
                raise got
            return got

        ckpt = checkpoint_view.show(read, cached.spec(state), state.weight_format)
        if ckpt is not None and (Path(ckpt.source) / "config.json").is_file():
            st.button("Use its config.json", key="model.local_config", on_click=use_local_config, args=(text,),
                      help="The folder's config.json becomes the sidebar's model (as a pasted one; the link carries "
                           "it), so its tensors are split with their own model's shard rules.")
        if ckpt is not None and state.checkpoint_dir != text:
            st.button("Plan with these weights", key="model.plan_local", type="primary", on_click=use_local,
                      args=(text,), icon=":material/scale:",
                      help="Every plan page budgets this folder's tensors, split for the sidebar's layout, in place "
                           "of kvplan's computed weights (the link carries the folder; it is checked against "
                           f"{checkpoint.ROOT_ENV} each time it is opened).")
    if state.checkpoint_dir is not None:
        st.caption(_planned_caption(state, f"the local folder {state.checkpoint_dir}"))
        st.button("Plan with computed weights", key="model.computed_local", on_click=use_computed)


def _planned_caption(state, asked: str) -> str:
    """The Model page's line under a chosen checkpoint: which weights the plan budgets. A checkpoint whose headers
    cannot be read (a link naming a folder outside KVPLAN_CHECKPOINT_ROOT, a Hub repo offline) is refused at the top
    of the page and the plan budgets computed weights: the line says so, never that the refused one is planned."""
    choice = _choice(state)
    if choice.refused:
        return (f"The plan budgets computed weights (kvplan's shard sums), not {views.esc(asked)}: "
                f"{views.esc(choice.refused)}.")
    return f"The plan budgets the weights of {views.esc(asked)}."


def budget_note(state) -> None:
    """Over the Budget page's terms: which weights are planned, and the button back to computed ones."""
    if state.checkpoint is None and state.checkpoint_dir is None and state.weights_gib is None:
        return
    choice = _choice(state)
    if choice.refused:
        typed = state.weights_gib is not None
        asked = f"{label(state.engine)} = {state_mod.fmt_decimal(state.weights_gib)}" if typed else \
            f"the checkpoint {state.checkpoint}" if state.checkpoint is not None else \
            f"the local folder {state.checkpoint_dir} ({LOCAL_LABEL})"
        st.warning(f"**Weights: computed (fallback)**. Not {views.esc(asked)}: {views.esc(choice.refused)}. The weights "
                   "term is kvplan's computed shard sums.", icon=":material/cloud_off:")
    elif choice.kind == "checkpoint":
        extra = "".join(f"; {views.esc(n)}" for n in choice.notes[1:])
        st.info(f"**Weights: checkpoint headers** of {views.esc(choice.source)}: {choice.weights_bytes:,} B "
                f"({views.gib(choice.weights_bytes)}) on the busiest rank, split for this layout{extra}.",
                icon=":material/scale:")
        if choice.mismatch:
            st.warning("**Checkpoint and model differ**:\n" + "".join(f"\n- {views.esc(t)}" for t in choice.mismatch),
                       icon=":material/warning:")
    else:
        st.info(f"**Weights: measured**, {views.esc(choice.source)} (every rank and stage).", icon=":material/scale:")
    st.button("Plan with computed weights", key="weights.computed", on_click=use_computed,
              help="Drop the checkpoint / typed figure: kvplan's computed shard sums.")
