"""Import: a ``vllm serve ...`` command line -> the plan those flags mean."""

import streamlit as st

from kvplan.errors import KvplanError
from kvplan.web import cached, figures, shell, views, widgets

shell.enter()
state = widgets.current()
st.title("Import a vLLM command")
widgets.bind_text("command", "vllm serve ... (the whole command, or only its flags)", views.parse_command, area=True,
                  height=120, placeholder="vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4 --max-model-len 32k "
                                          "--gpu-memory-utilization 0.9 --kv-cache-dtype fp8")
state = widgets.current()
if state.command:
    try:
        args = cached.vllm_command(state.command)
        imported, model_note = views.imported_state(state, args)
    except KvplanError as exc:
        views.error(exc)
    else:
        views.table(views.vllm_rows(args))
        views.bullet_list([f"unknown flag (ignored): {u}" for u in args.unknown], "warning")
        views.bullet_list([f"no effect on memory: {u}" for u in args.ignored], "info")
        views.bullet_list(args.notes, "info")
        if imported is None:
            st.warning(views.esc(model_note), icon=":material/help:")
            if st.button(f"Fetch {views.esc(args.model)} from the Hub", key="import.fetch"):
                with st.spinner(f"Fetching {views.esc(args.model)}/config.json..."):
                    widgets.fetch_hub_config(args.model)
            widgets.show_model_error()
        else:
            st.caption(views.esc(model_note))
            try:
                plan = cached.plan_for(imported)
            except KvplanError as exc:
                views.error(exc)
            else:
                views.plan_metrics(plan)
                views.verdict(plan)
                views.chart(figures.rank_memory(plan), "import.ranks")
                st.button("Use these settings in every page", key="import.apply", on_click=widgets.apply,
                          kwargs=views.changes_from(state, imported), icon=":material/input:")
else:
    st.info("Paste a command line: kvplan reads the model, parallelism and memory flags and plans them.")
