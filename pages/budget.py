"""Budget: what each GPU holds (weights, workspace, KV, headroom), what fits, and why."""

import streamlit as st

from kvplan.errors import KvplanError
from kvplan.web import cached, figures, formulas, shell, views, weights_view, widgets

shell.enter()
state = widgets.current()
st.title("Budget")


def body() -> None:
    """Everything below the title: a function of the state alone (and of whether an input is refused:
    the caption then says 'Last valid plan'), drawn once per state and replayed after (views.replayed)."""
    try:
        plan = cached.plan_for(state)
    except KvplanError as exc:
        views.error(exc, state.engine)
        return
    views.plan_headline(plan)
    if note := views.tokens_note(plan):
        st.caption(note)
    sweep = cached.sweep_for(state, plan.max_model_len, plan.concurrency or 1)  # ~10 plans: a few ms
    model_max = cached.spec(state).max_position_embeddings  # the sweep runs to 4 x the context: past it, marked
    pair = figures.level(  # side by side: the plot areas start level whatever each chart's title holds
        figures.rank_memory(plan),
        figures.memory_vs_context(sweep, plan.ranks[0].device_bytes, plan.concurrency or 1,
                                  plan.max_model_len_that_starts if (plan.concurrency or 1) == 1 else None,
                                  model_max, plan.basis, plan.max_model_len))
    with views.row():  # two charts side by side, one block (see views.row)
        for fig, key in zip(pair, ("budget.ranks", "budget.context")):
            views.chart(fig, key)
    left, right = st.columns(2)
    with left:
        if any(p.max_concurrency > 0 for p in sweep):
            views.chart(figures.concurrency_vs_context(sweep, plan.concurrency, model_max,
                                                                plan.max_model_len), "budget.concurrency")
        else:
            st.subheader("Concurrency vs context length")
            st.info(views.no_pool_note(plan, sweep[0].context, sweep[-1].context), icon=":material/block:")
    with right:
        views.decode_bound(plan, cached.spec(state))
    views.startup_log(plan)
    st.subheader("Budget terms, per GPU")
    views.html_table(views.term_rows(plan), views.term_columns(plan))
    st.subheader("The formulas, with these numbers")
    st.markdown(formulas.as_markdown(formulas.budget_formulas(plan)))


weights_view.budget_note(state)  # which weights (computed, checkpoint headers, measured), and its button: no replay
views.replayed("budget", body, cached.state_key(state), bool(widgets.refusals()))
