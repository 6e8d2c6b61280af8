"""Budget: what each GPU holds (weights, workspace, KV, headroom), what fits, and why."""

import streamlit as st

from kvplan.errors import KvplanError
from kvplan.web import cached, figures, formulas, shell, views, widgets

shell.enter()
state = widgets.current()
st.title("Budget")
try:
    plan = cached.plan_for(state)
except KvplanError as exc:
    views.error(exc)
    plan = None

if plan is not None:
    st.caption(f"{views.esc(plan.model)} on {plan.num_gpus} x {plan.gpu} ({plan.num_nodes} node(s)), "
               f"engine {plan.engine}, context {plan.max_model_len:,} tokens, block size {plan.block_size}")
    views.plan_metrics(plan)
    views.verdict(plan)
    left, right = st.columns(2)
    with left:
        views.chart(figures.rank_memory(plan), "budget.ranks")
    sweep = cached.sweep_for(state, plan.max_model_len, plan.concurrency or 1)  # ~10 plans: a few ms
    with right:
        views.chart(figures.memory_vs_context(sweep, plan.ranks[0].device_bytes, plan.concurrency or 1,
                                              plan.max_model_len_that_starts if (plan.concurrency or 1) == 1 else None),
                    "budget.context")
    left, right = st.columns(2)
    with left:
        views.chart(figures.concurrency_vs_context(sweep, plan.concurrency), "budget.concurrency")
    with right:
        if plan.decode is not None:
            views.decode_bound(plan.decode)
        st.subheader("Budget terms, per rank")
        views.table(views.term_rows(plan))
    st.subheader("The formulas, with these numbers")
    st.markdown(formulas.as_markdown(formulas.budget_formulas(plan)))
