"""GPUs: every catalog GPU x TP x PP that serves the load, ranked by the objective the user picks, among
layouts that keep the headroom floor; default prices with sources; cost vs tokens/s with the Pareto frontier."""

import streamlit as st

from kvplan.errors import KvplanError
from kvplan.web import gpus_view, shell, views, weights_view, widgets

shell.enter()
st.title("GPUs")
gpus_view.controls()
state = widgets.current()
try:  # the workload is read from a plan: a profile that refuses the model (vLLM V0 and MLA) says so here
    max_len, concurrency = views.picker_workload(state)
    st.caption(views.refused_head() + gpus_view.workload_text(state.concurrency, max_len, views.esc(
        f"{views.cached.spec(state).name}, {views.state_engine_text(state)}")))
    headers = state.checkpoint or state.checkpoint_dir  # a Hub or local checkpoint's safetensors headers
    if headers or state.weights_gib is not None:  # one figure for one layout cannot price every GPU's
        st.info("Weights here are **computed** for every GPU and layout: the "
                + ("checkpoint's safetensors weights" if headers else weights_view.typed_words(state.engine))
                + " the other pages plan with is not used by the picker.", icon=":material/info:")
    picker = gpus_view.picker(state, max_len, concurrency)  # ~280 plans: ~35 ms cold, cached after
except KvplanError as exc:
    views.error(exc, state.engine)
else:
    gpus_view.show(picker, state, max_len)
