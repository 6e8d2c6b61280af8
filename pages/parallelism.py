"""Parallelism: TP / PP / DP layouts side by side, per-rank memory, and what TP cannot split."""

import streamlit as st

from kvplan.web import cached, figures, shell, views, widgets
from kvplan.web.state import MAX_PARALLEL, MAX_PIPELINE

shell.enter()
state = widgets.current()
st.title("Parallelism")
views.quant_name_warning(state)
views.moe_backend_warning(state)  # the layouts' pools are sized at auto's MoE workspace too
choices = views.layout_choices(state)
widgets.bind("layouts", st.multiselect, "Layouts to compare (TP x PP x DP)", choices, max_selections=8,
             to_widget=lambda v: [views.layout_text(t) for t in v],
             from_widget=lambda v: tuple(views.layout_tuple(t) for t in v) or widgets.current().layouts,
             help=f"Up to 8; each from 1 to {MAX_PARALLEL} per axis (PP up to {MAX_PIPELINE}). The sidebar's layout "
                  "is listed first.")
state = widgets.current()


def body() -> None:
    """The compared layouts: a function of the state alone (and of whether an input is refused), drawn once
    per state and replayed after (views.replayed)."""
    plans, refused = views.compare_layouts(state)
    if plans:
        head = "Last valid plan (an input is refused): " if widgets.refusals() else ""
        st.caption(f"{head}{views.esc(plans[0].model)}{views.basis_tag(plans[0].basis)} on {state.gpu}, context "
                   f"{plans[0].max_model_len:,} tokens, {views.esc(views.state_engine_text(state))}. Hover a heading for "
                   "what it means.")
        views.html_table(views.layout_rows(plans), views.layout_columns(state.engine))
        views.context_warnings(plans)
        views.dp_moe_warnings(plans)  # a DP > 1 layout of a vLLM MoE model: its gathered MoE step is not sized
        views.chart(figures.parallel_compare(plans), "parallel.ranks")
    for label, message in refused:
        st.error(f"{label}: {views.esc(message)}", icon=":material/block:")
    st.subheader("What tensor parallelism does not split")
    spec = cached.spec(state)
    tps = sorted({int(p.layout["tensor_parallel_size"]) for p in plans})
    if views.has_latent_cache(spec):  # one MLA note says it for every TP (four copies differed in the count only)
        tps = tps[-1:]
    notes = [n for tp in tps for n in views.replication_notes(spec, tp, state.engine)]
    if notes:
        views.bullet_list(dict.fromkeys(notes), "info")
    elif tps:  # (no layout planned: nothing was compared, so nothing to say of "every compared TP degree")
        st.caption(f"{figures.counted(spec.num_key_value_heads, 'KV head')}: every compared TP degree splits them without replicas.")


views.replayed("parallelism", body, cached.state_key(state), bool(widgets.refusals()))
