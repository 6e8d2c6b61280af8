"""GPUs: every catalog GPU x TP x PP that serves the workload, ranked; the rest with the reason."""

import streamlit as st

from kvplan.errors import KvplanError
from kvplan.web import cached, figures, shell, views, widgets

shell.enter()
state = widgets.current()
st.title("GPUs")
widgets.bind_text("prices", "Prices, $ per GPU-hour (optional)", views.parse_prices,
                  placeholder="H100-SXM: 2.49, H200: 3.50", help="Rank by cost per hour instead of GPU count.")
state = widgets.current()
max_len, concurrency = views.picker_workload(state)
st.caption(f"Serving {concurrency} sequence(s) of {max_len:,} tokens ({views.esc(cached.spec(state).name)}, "
           f"engine {state.engine}). Set the context and concurrency in the sidebar.")
try:
    picker = cached.picker_for(state, max_len, concurrency)  # ~270 plans: ~30 ms, even for a fresh 671B spec
except KvplanError as exc:
    views.error(exc)
else:
    st.metric("Options that fit", f"{len(picker.options)}", help=f"{len(picker.rejected)} rejected")
    views.table(views.option_rows(picker.options), column_config=views.OPTION_COLUMNS)
    if picker.options:
        views.chart(figures.picker(picker.options, concurrency), "gpus.chart")
    rejected = st.expander(f"Rejected ({len(picker.rejected)})", key="gpus.rejected", on_change="rerun")
    if rejected.open:  # lazy: the table is built only when it is shown
        with rejected:
            views.table([r.model_dump() for r in picker.rejected])
