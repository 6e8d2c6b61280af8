"""Import: a ``vllm serve ...`` (or SGLang) command line -> the plan those flags mean; Apply puts it
in the sidebar and every page."""

import streamlit as st

from kvplan.errors import KvplanError
from kvplan.gpus import GPU_CATALOG
from kvplan.web import cached, figures, shell, views, widgets


def imported_plan(state, command, imported, model_note: str) -> None:
    """What the command plans (no widget): a function of the state alone (the command is in it) and of
    whether an input is refused; drawn once per state and replayed after (views.replayed)."""
    changes = views.changes_from(state, imported)
    if changes:
        st.info(views.preview_note(state), icon=":material/visibility:")
    else:
        st.success("**Applied**: the sidebar and every page plan this command.", icon=":material/check:")
    st.caption(views.esc(model_note) + (" Planned by SGLang's own memory rules; its flags fill the sidebar's "
                                        "settings." if command.launcher == "sglang" else ""))
    try:
        plan = cached.plan_for(imported)
    except KvplanError as exc:
        views.error(exc, imported.engine)
        return
    left_out = views.unmodeled_notes(command.args)
    if left_out:
        st.warning(f"**This plan leaves out {figures.counted(len(left_out), 'memory-changing flag')}** (listed under "
                   "the flags below): the figures are for the line without them.", icon=":material/warning:")
    views.plan_headline(plan)
    views.chart(figures.rank_memory(plan), "import.ranks")
    views.startup_log(plan)


def flags(args, command, imported=None) -> None:
    """The command's flags as kvplan read them, what the app cannot carry, and what it ignored (``imported``: the
    state it plans, which says what --dtype auto serves the model in)."""
    auto = views.auto_dtype(imported) if imported is not None else views.AUTO_DTYPE
    views.html_table(views.vllm_rows(args, command, auto), views.COMMAND_COLUMNS)
    views.bullet_list(views.unplanned_flags(command), "warning")  # changes memory; the app cannot carry it
    views.bullet_list([f"unknown flag (ignored): {u}" for u in args.unknown], "warning")
    views.bullet_list([f"no effect on memory: {u}" for u in args.ignored], "info")
    views.bullet_list(views.unmodeled_notes(args), "warning")
    views.bullet_list(views.info_notes(command), "info")


shell.enter()
state = widgets.current()
st.title("Import a serving command")
widgets.bind_text("command", "Command line: vllm serve ..., python -m vllm.entrypoints..., python -m "
                  "sglang.launch_server ... (or only the flags)", views.parse_command, area=True, height=120,
                  placeholder="vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4 --max-model-len 32k "
                              "--gpu-memory-utilization 0.9 --kv-cache-dtype fp8")
row = views.row(vertical_alignment="bottom", wrap=False)  # one block, not three (see views.row)
widgets.bind("import_gpu", row.selectbox, "GPU this command runs on", list(GPU_CATALOG), index=None,
             placeholder="choose a GPU (a command names none)", format_func=widgets.gpu_label,
             help="vLLM and SGLang take the GPU from the machine they run on; kvplan needs to be told.")
row.button("Apply", key="import.apply", type="primary", on_click=widgets.apply_import, width=160,
           icon=":material/input:", help="Put this command's settings in the sidebar: every page plans it.")
not_applied = widgets.show_import_error()
state = widgets.current()
if state.command:
    try:
        command = cached.serve_command(state.command)
        imported, model_note = views.imported_state(state, command)
    except KvplanError as exc:
        if str(exc) != not_applied:  # the refused Apply's own reason is said once, above
            views.error(exc)
    else:
        args = command.args
        if imported is None:
            st.warning(views.esc(model_note), icon=":material/help:")
            if not model_note.startswith(views.NO_GPU) and args.model:
                if st.button(f"Fetch {views.esc(args.model)} from the Hub", key="import.fetch"):
                    with st.spinner(f"Fetching {views.esc(args.model)}/config.json..."):
                        widgets.fetch_hub_config(args.model)
                widgets.show_model_error()
            flags(args, command)
        else:
            def section() -> None:
                imported_plan(state, command, imported, model_note)
                flags(args, command, imported)

            views.replayed("import", section, cached.state_key(state), bool(widgets.refusals()))
else:
    st.info("Paste a command line and choose its GPU: kvplan reads the model, parallelism and memory flags, "
            "plans them, and **Apply** puts them in the sidebar.")
