"""Validate: a real cached decode on this server (GPU if it has one), measured beside the plan.

Nothing runs on page load: the Run button starts one run (one at a time per server process).
A local Hugging Face checkpoint can be validated too, but only one found under the directory the
operator names in ``KVPLAN_CHECKPOINT_ROOT`` (or the older ``KVPLAN_LOCAL_MODELS``; kvplan.web.checkpoint
.checkpoint_root, the Model page's root too); the page never takes a path typed by a visitor.
"""

import streamlit as st

from kvplan.errors import KvplanError
from kvplan.paging import BLOCK_SIZES
from kvplan.validate.hf_local import is_hf_dir
from kvplan.validate.measure import BusyError, busy
from kvplan.web import cached, checkpoint, shell, validate_view, views, widgets

shell.enter()

# Caps for a shared host; the library's own limits are higher (kvplan.validate.measure.LIMITS).
PAGE_LIMITS = {"batch": 32, "tokens": 8192, "steps": 256}

st.title("Validate")
st.caption("Builds the model with random weights on this server, runs a prefill and decode steps through a static "
           "and a paged KV cache, and puts the measured bytes and times beside the plan. Large models run as a "
           "reduced copy with fewer layers.")

# Local checkpoints: only directories under a root the server's operator names (never a typed path).
root = checkpoint.checkpoint_root()
local_dirs = []
if root is not None and root.is_dir():
    # Direct children only, and only those that really lie under the root (a symlink out of it is skipped).
    local_dirs = sorted(p for p in root.iterdir() if p.resolve().is_relative_to(root) and is_hf_dir(p))
source = "preset"
if local_dirs:
    source = st.radio("Source", ["preset", "local"], horizontal=True, format_func={
        "preset": "preset (reference decoder, random weights)", "local": "local checkpoint (transformers)"}.get)
if source == "local":
    model = st.selectbox("Checkpoint", local_dirs, format_func=lambda p: p.name)
else:
    # The sidebar's model (a preset or a pasted / fetched config): the one in the link, as on every page.
    model = cached.spec(widgets.current())
    st.caption(f"Model: **{views.esc(model.name)}**{views.esc(views.basis_tag(model.basis))}, the sidebar's "
               "(change it there or on the Model page; it is in the link).")
refusal = views.plan_refusal(widgets.current()) if source != "local" else None
if refusal is not None:  # the run needs no plan, but its Block size starts at the plan's: say it is refused, and why
    st.info(f"The sidebar's plan is refused, so the Block size below is not the plan's. "
            f"{views.esc(views.field_name(refusal.field, widgets.current().engine))}: {views.esc(refusal.message)}",
            icon=":material/info:")
row = views.row(wrap=False)  # one block, not st.columns' five (see views.row)
batch = row.number_input("Batch", min_value=1, max_value=PAGE_LIMITS["batch"], value=1, step=1)
tokens = row.number_input("Prompt tokens", min_value=1, max_value=PAGE_LIMITS["tokens"], value=128, step=1)
steps = row.number_input("Decode steps", min_value=0, max_value=PAGE_LIMITS["steps"], value=8, step=1)
dtype = row.selectbox("dtype", ["auto", "bf16", "fp32", "fp16"], help="auto: bf16 on a GPU, fp32 on a CPU")
row = views.row(wrap=False)
# The plan's block size for the sidebar's model, GPU and engine (vLLM: 16, an MLA backend's own block such as
# FlashMLA's 64, a hybrid's grown attention block; SGLang: 1), or the sidebar's --block-size: the run pages its
# cache as the plan does.
plan_state = widgets.current()
# None: a local checkpoint, or the sidebar's plan is refused (vLLM 0.34, a --block-size the engine does not start), so
# no size is the plan's: the typed one, else 16
plans_block = views.block_size_for(plan_state) if source != "local" and refusal is None else None
plan_block = plans_block or (plan_state.block_size if source != "local" else None) or 16
block_options = sorted({*BLOCK_SIZES, plan_block})
block_size = row.selectbox(
    "Block size", block_options, index=block_options.index(plan_block),
    format_func=lambda v: f"{v} (the plan's: {views.state_engine_text(plan_state)} on {plan_state.gpu})"
    if v == plans_block else str(v),
    help="Tokens per KV block of the paged cache. Default: the block size the plan uses for the sidebar's model, "
         "GPU and engine (vLLM: 16, or the MLA backend's block, e.g. FlashMLA's 64; SGLang: 1), or the "
         "sidebar's block_size.")
shared_prefix = row.number_input("Shared prefix", min_value=0, max_value=PAGE_LIMITS["tokens"], value=0, step=1,
                                help="prompt tokens every sequence shares: their full blocks are stored once")
layers = row.number_input("Layers (0 = all, reduced if needed)", min_value=0, max_value=1000, value=0, step=1)

if busy():
    st.info("busy: a validation run is in progress on this server.")
if st.button("Run", type="primary"):
    bar = st.progress(0.0, text="starting")
    try:
        from kvplan.validate.hf_local import run_hf_validation
        from kvplan.validate.measure import run_validation  # torch loads in these, on the click

        def progress(fraction: float, text: str) -> None:
            bar.progress(min(max(fraction, 0.0), 1.0), text=text)

        if source == "local":
            st.session_state["validate_result"] = run_hf_validation(
                model, tokens=int(tokens), steps=int(steps), batch=int(batch), dtype=dtype, progress=progress)
        else:
            st.session_state["validate_result"] = run_validation(
                model, tokens=int(tokens), steps=int(steps), batch=int(batch), dtype=dtype,
                block_size=int(block_size), shared_prefix=min(int(shared_prefix), int(tokens)),
                layers=int(layers) or None, limits=PAGE_LIMITS, progress=progress)
    except BusyError:
        st.warning("busy: another validation run is in progress on this server; try again when it ends.")
    except KvplanError as exc:
        st.error(f"error: {exc}")
    except Exception as exc:  # a bug: report it, keep serving (memory was released by the run)
        st.error(f"internal error: {type(exc).__name__}: {exc}")
    finally:
        bar.empty()

result = st.session_state.get("validate_result")
if result is not None:
    validate_view.render(result)

# A local checkpoint's weights from its safetensors headers (after Run, so the page's first button stays Run).
if source == "local" and st.button("Read safetensors headers", key="validate.headers",
                                   help="Bytes per dtype from the headers only (no weights read)."):
    from kvplan.hf_config import load_config_text, parse_config
    from kvplan.web import checkpoint_view

    checkpoint_view.show(lambda: checkpoint.read_local(model, within=root),
                         lambda: parse_config(load_config_text((model / "config.json").read_bytes()), name=model.name))
