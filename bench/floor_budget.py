"""The Budget page's elements without the app: the same widgets, blocks, charts and table, built once per
process, so a rerun costs only what Streamlit charges for sending that page.

``bench/page_floor.py --budget-replica`` serves it beside the app. The caption floor (``floor_app.py?n=N``)
has the Budget page's element count but not its kinds: widgets, plotly charts, metrics and blocks cost
Streamlit more than a caption does. This one is the page itself with the app's own work taken out.
"""
import sys
from pathlib import Path

import streamlit as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

st.set_page_config(page_title="kvplan", page_icon="🧮", layout="wide")


@st.cache_resource
def assets():
    from kvplan.engines import EngineConfig
    from kvplan.gpus import get_gpu
    from kvplan.parallel import Layout
    from kvplan.plan import context_sweep, plan
    from kvplan.presets import load_preset
    from kvplan.web import cached, figures, views

    spec, gpu, engine = load_preset("llama-3.1-70b"), get_gpu("H100-SXM"), EngineConfig(kv_cache_dtype="fp8", max_model_len=32768)
    p = plan(spec, gpu, engine, Layout(4), 16)
    sweep = context_sweep(spec, gpu, engine, Layout(4), cached.sweep_lengths(32768), 16)
    figs = [figures.rank_memory(p), figures.memory_vs_context(sweep, p.ranks[0].device_bytes, 16),
            figures.concurrency_vs_context(sweep, 16)]
    return figs, views.table_html(views.term_rows(p), views.term_columns(p)), views.CSS, list(cached.preset_order())


figs, table, css, presets = assets()
st.html(css)
nav = st.sidebar.container()
with st.sidebar:
    st.selectbox("Model", presets, key="m", help="h")
    st.selectbox("GPU", [f"GPU {i} (80.00 GiB)" for i in range(23)], key="g", help="h")
    row = st.container(horizontal=True, wrap=False)
    x = row.number_input("TP", min_value=1, value=4, step=1, key="x", help="h")
    row.number_input("PP", min_value=1, value=1, step=1, key="pp", help="h")
    row.number_input("DP", min_value=1, value=1, step=1, key="dp", help="h")
    st.caption(f"{x} GPUs")
    st.radio("Engine", ["vllm", "sglang", "custom"], horizontal=True, key="e", help="h")
    st.number_input("Context", value=32768, min_value=1, step=1024, key="l", help="h")
    st.number_input("Concurrent", value=16, min_value=1, step=1, key="c", help="h")
    row = st.container(horizontal=True, wrap=False)
    row.selectbox("KV dtype", ["auto", "fp8", "fp8_e4m3", "fp8_e5m2"], key="k", help="h")
    row.selectbox("Weights", ["as shipped", "bf16", "fp8", "int4"], key="w", help="h")
    st.expander("Engine knobs", key="kn", on_change="rerun")
top = st.container()
st.title("Budget")
st.caption(f"llama-3.1-70b on {x} x H100-SXM")
m = st.container(horizontal=True)
for label in ("Verdict", "Max concurrency", "KV cache tokens", "KV blocks"):
    m.metric(label, f"{x * 1000:,}", help="h")
st.success("Fits: 28 sequences")
st.caption("**KV cache tokens** is the pool ...")
charts = st.container(horizontal=True)
with charts:
    st.plotly_chart(figs[0], key="a", width="stretch", config={"displaylogo": False})
    st.plotly_chart(figs[1], key="b", width="stretch", config={"displaylogo": False})
left, right = st.columns(2)
with left:
    st.plotly_chart(figs[2], key="c2", width="stretch", config={"displaylogo": False})
with right:
    st.subheader("Decode ceiling (roofline)")
    m = st.container(horizontal=True)
    for label in ("Tokens/s", "Bound by", "Read / step"):
        m.metric(label, f"{x * 10}", help="h")
    st.caption("At 16 sequence(s)")
st.subheader("Budget terms, per GPU")
st.html(table)
st.subheader("The formulas, with these numbers")
st.markdown("$$x = y$$ " * 20)
st.query_params["tp"] = str(x)
with nav:
    for i in range(7):
        st.page_link("https://example.com/" + str(i), label=f"Page {i}")
with st.sidebar:
    st.expander("Share or save this plan", key="sh", on_change="rerun")
