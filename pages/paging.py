"""Paging: how a set of sequences fills KV blocks, what the tail blocks waste, what a shared prefix saves."""

import streamlit as st

from kvplan.errors import KvplanError
from kvplan.web import cached, figures, shell, views, widgets
from kvplan.web.state import PAGING_MODES, parse_lengths

shell.enter()
state = widgets.current()
st.title("Paging")
refusal_slot = st.empty()  # the plan's refusal, at the top: filled below, once the widgets have set the state
views.quant_name_warning(state)  # the bytes per block are priced at the config's dtype too
left, right = st.columns([2, 1])
with left:
    mode = widgets.bind("paging_mode", st.radio, "Sequences", PAGING_MODES, horizontal=True,
                        format_func={"list": "a list of lengths", "uniform": "uniform draw", "normal": "normal draw",
                                              "lognormal": "lognormal draw (long tail)",
                                              "exponential": "exponential draw"}.get)
    if mode == "list":
        widgets.bind_text("lengths", "Lengths (tokens, prompt + output so far)", parse_lengths)
    else:
        widgets.bind_tuple("length_dist", ("count", "min", "max", "seed"), min_value=0)
with right:
    widgets.block_size_widget()
    # the size the plan runs and why (an MLA backend's fixed block, the default, the typed flag)
    if why := views.block_size_why(widgets.current()):
        st.caption(views.esc(why))
    if state.engine == "vllm" and views.plan_refusal(widgets.current()) is None:
        # the knob is the plan's --block-size; other sizes explore the paging arithmetic only (a refused plan's
        # refusal, at the top, says what the engine takes)
        st.caption(f"vLLM {state.vllm_version} takes --block-size {widgets.vllm_block_sizes_text(state)}; any other "
                   "size (a link takes 1 to 65,536) explores the paging here, and the plan warns that vLLM refuses it.")
    widgets.bind("shared_prefix", st.number_input, "Shared prefix (tokens)", min_value=0, step=1,
                 help=f"A prompt prefix every sequence starts with; only its full {views.paging_unit(state)}s are "
                      "shared.")

state = widgets.current()
if (refusal := views.plan_refusal(state)) is not None:
    with refusal_slot.container():
        views.error(refusal, state.engine)


def body() -> None:
    """The paging of the state's sequences: a function of the state alone, drawn once per state and replayed
    after (views.replayed)."""
    lengths = cached.lengths_for(state)
    block_size = views.block_size_for(state)
    unit = views.paging_unit(state)  # SGLang's pool is pages of --page-size tokens: its word throughout
    if block_size is None:  # a refused plan and no size typed: the engine's own block is not known
        st.info(views.no_block_size_text(unit), icon=":material/info:")
        return
    try:
        paging, by_size, blocks = cached.paging_for(lengths, block_size, state.shared_prefix)
    except KvplanError as exc:
        views.error(exc, state.engine)
        return
    views.paging_metrics(paging, unit)
    views.paging_bytes(state, paging)
    with views.row():  # two charts side by side, one block (see views.row)
        pair = figures.level(figures.slots(paging, unit), figures.waste_by_block_size(by_size, block_size, unit))
        for fig, key in zip(pair, ("paging.slots", "paging.waste")):
            views.chart(fig, key)
    if blocks:
        st.caption(f"The first {len(blocks)} of {figures.sequences(len(lengths))}, {unit} by {unit}:")
        views.chart(figures.block_map(blocks, block_size, paging.shared_blocks, unit), "paging.map")
    else:
        head = lengths[:cached.MAX_BLOCK_MAP_SEQUENCES]
        st.caption(f"No {unit} map: the first {figures.counted(len(head), 'sequence')} take "
                   f"{cached.block_map_size(head, block_size):,} {unit}s of {block_size} tokens, and the map draws "
                   f"up to {cached.MAX_BLOCK_MAP_BLOCKS:,}. A larger {unit} size or shorter lengths show it.")


# (whether an input is refused is in the key: the bytes caption then says "Last valid plan"; a replay drawn before a
# refusal, for the same state, left the head out)
views.replayed("paging", body, cached.state_key(state), bool(widgets.refusals()))
