"""Model: choose the model (preset, pasted/uploaded config.json, or a Hub id) and see what kvplan reads."""

import streamlit as st

from kvplan.hf_config import MAX_CONFIG_BYTES
from kvplan.kv import kv_dtype_bytes
from kvplan.units import DTYPE_BITS
from kvplan.web import cached, figures, hub, shell, views, widgets

shell.enter()
state = widgets.current()
st.title("Model")

presets, paste, upload, from_hub = st.tabs(["Presets", "Paste config.json", "Upload config.json",
                                            "Hugging Face Hub"])
with presets:
    widgets.preset_picker()
with paste:
    st.text_area("config.json", key="model.paste", height=160, placeholder='{"model_type": "llama", ...}')
    st.button("Use this config", key="model.use_paste", on_click=widgets.use_pasted_config)
with upload:
    st.file_uploader("config.json", type=["json"], key="model.upload", on_change=widgets.use_uploaded_config,
                     max_upload_size=widgets.MAX_UPLOAD_MB, help=f"Up to {MAX_CONFIG_BYTES // 2**20} MiB ({MAX_CONFIG_BYTES:,} bytes).")
with from_hub:
    repo = st.text_input("Model id", key="model.hub", placeholder="Qwen/Qwen3-8B", max_chars=200,
                         help=f"Fetches only config.json from {hub.endpoint_or_error()} "
                              "(set HF_ENDPOINT for a mirror); "
                              "a token in HF_TOKEN opens gated repos.")
    if st.button("Fetch config.json", key="model.fetch") and repo:
        with st.spinner(f"Fetching {views.esc(repo)}/config.json..."):
            widgets.fetch_hub_config(repo)
    from kvplan.web import weights_view  # headers read once per repo; "Plan with these weights"

    weights_view.hub_headers(repo, state)
    weights_view.local_headers(state)  # a folder under KVPLAN_CHECKPOINT_ROOT, when the operator sets it
widgets.show_model_error()
views.refused_plan_note(state)  # the sidebar's plan refused (a typed --moe-backend vLLM refuses): said here too


def body() -> None:
    """What kvplan reads from the model: a function of the state alone (and of whether an input is refused),
    drawn once per state and replayed after (views.replayed)."""
    spec = cached.spec(state)
    params, weights = cached.model_numbers(state)
    st.subheader(views.esc(spec.name) + views.esc(views.basis_tag(spec.basis)))
    if widgets.refusals():
        st.caption("The last valid model (an input is refused: see the top of the page).")
    try:
        kv_b = kv_dtype_bytes(spec, state.kv_cache_dtype)
    except Exception:  # an fp8 KV dtype on a model kvplan cannot size is refused on the plan pages
        kv_b = DTYPE_BITS[spec.dtype] // 8
    mtp = views.mtp_loaded(state)
    cells = figures.layer_cells(spec.layers, kv_b, DTYPE_BITS[spec.dtype] // 8,
                                spec.mtp_layers if mtp else ())
    views.chart(figures.layer_strip(cells, state.kv_cache_dtype), "model.layers")
    left, right = st.columns(2)
    with left:
        views.html_table(views.spec_rows(spec), views.SPEC_COLUMNS)
    with right:
        views.html_table(views.derived_rows(spec, params, weights, state.kv_cache_dtype)
                         + views.served_rows(state, spec) + views.mtp_rows(state, spec),
                         views.DERIVED_COLUMNS)
        views.bullet_list([f"assumed: {a}" for a in spec.assumptions], "info")
        views.bullet_list(views.model_warnings(spec, state), "warning")
        views.bullet_list(views.skipped_notes(spec, views.towers_loaded(state), mtp, state.engine,
                                              views.language_model_only_flag(state)), "info")
    left, right = st.columns([4, 3])  # [3, 2] left Kimi-K2.5's table 5 px short at 1400 px (it scrolled)
    with left:
        views.chart(figures.param_breakdown(params, weights), "model.params")
    with right:
        views.html_table(views.param_rows(params, weights), views.param_columns(weights))


views.replayed("model", body, cached.state_key(state), bool(widgets.refusals()))
