"""The GPUs page: its controls, the ranked table, the top-three callouts, the cost vs tokens/s chart.

Pure builders (``option_rows``, ``price_rows``, ``rule_text``, ``pareto_figure``) are tested directly;
``controls`` and ``show`` draw them. Numbers come from ``kvplan.picker`` (ranking, frontier, reasons) and
``kvplan.prices`` (default prices with sources): nothing here computes a plan.
"""

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import streamlit as st

from kvplan.families.deepseek_v4 import DSV41_MODEL_TYPES
from kvplan.gpus import GPU_CATALOG, GpuSpec, custom_gpu
from kvplan.picker import OBJECTIVES, TIE_BREAKS, Option, Picker, best_per_gpu, pareto_front, reasons
from kvplan.prices import DEFAULT_PRICES, PRICES_READ, default_prices
from kvplan.units import GiB
from kvplan.web import cached, views, widgets
from kvplan.web.figures import COLORS, Figure, counted, figure, scatter, sequences
from kvplan.web.state import CUSTOM_GPU_BOUNDS, PlanState

ALL_LAYOUTS = "gpus.all"  # session key: the table shows every layout, not the best one per GPU
REJECTED, PRICES, CUSTOM = "gpus.rejected", "gpus.prices", "gpus.custom"  # lazy expanders


def catalog() -> tuple[GpuSpec, ...] | None:
    """The GPUs the page sweeps: None is kvplan's catalog (a test replaces this with a hand-built one)."""
    return None


def base_prices() -> dict[str, float]:
    """Default US$ per GPU-hour by GPU, before the user's own (a test replaces this)."""
    return default_prices()


CUSTOM_NAME = "your-GPU"
CUSTOM_START = (24.0, 1.0, 165.0, 0.5)  # what the boxes hold before the user types (an RTX 4090-like card)


def custom_spec(state: PlanState) -> GpuSpec | None:
    """The user's own GPU (kvplan.gpus.custom_gpu), when the state has one."""
    if state.custom_gpu is None:
        return None
    mem, bw, tflops, _ = state.custom_gpu
    return custom_gpu(mem, bw, tflops, name=CUSTOM_NAME, gpus_per_node=8)


def prices_for(state: PlanState) -> dict[str, float]:
    out = base_prices() | dict(state.prices)
    if state.custom_gpu is not None:
        out[CUSTOM_NAME] = state.custom_gpu[3]
    return out


def picker(state: PlanState, max_len: int, concurrency: int) -> Picker:
    gpus = catalog()
    mine = custom_spec(state)
    if mine is not None:
        gpus = (*(gpus or GPU_CATALOG.values()), mine)
    return cached.picker_for(state, max_len, concurrency, prices_for(state), gpus)


# ----------------------------------------------------------------------------- controls

def _percent(v: float) -> float:
    return round(v * 100, 4)


def controls() -> None:
    """Objective, headroom floor, multi-node switch and the user's prices, all carried in the link."""
    row = views.row(vertical_alignment="bottom", wrap=False)  # one block, not four (see views.row)
    widgets.bind("objective", row.selectbox, "Rank by", list(OBJECTIVES), format_func=OBJECTIVES.get,
                 help="The objective the table is ordered by; ties fall to the next figure (stated below).")
    widgets.bind("headroom_floor", row.number_input, "Headroom floor (% of GPU memory)", min_value=0.0,
                 max_value=90.0, step=1.0, format="%.1f", to_widget=_percent,
                 from_widget=lambda v: round(float(v) / 100, 6),
                 help="Every GPU keeps at least this share of its memory free with the target load "
                      "running; layouts that cannot are listed under Rejected.")
    widgets.bind("multi_node", row.toggle, "Multi-node layouts",
                 help="Off: every replica of a layout fits in one node (8 GPUs, 4 for GB200/GB300 trays and "
                      "GeForce boxes). On: up to 64 replicas across nodes.")
    widgets.bind_text("prices", "Your prices, $ per GPU-hour (over the defaults)", views.parse_prices,
                      placeholder="H100-SXM: 2.49, H200: 3.50",
                      help="kvplan ships an on-demand price for every GPU (sources under 'Default prices'); "
                           "type your own to replace any of them. They travel in the link.")
    state = widgets.current()
    mine = st.expander("Your own GPU" + (" (included)" if state.custom_gpu else ""), key=CUSTOM, on_change="rerun")
    if mine.open:  # lazy, as the sidebar's expanders
        with mine:
            custom_controls(state)


CUSTOM_LABELS = ("Memory the runtime exposes (GiB)", "Memory bandwidth (TB/s)", "Dense BF16 (TFLOPS)",
                 "$ per GPU-hour")


def custom_controls(state: PlanState) -> None:
    """Four numbers and a switch: the user's GPU joins the sweep as 'your-GPU', 8 per node."""
    st.caption("For a card the catalog lacks. Memory: what torch.cuda.mem_get_info()[1] or vLLM's "
               "total_gpu_memory reports (a '16 GB' card exposes about 15.7 GiB), not the number on the box.")
    values = state.custom_gpu or CUSTOM_START
    row = views.row(wrap=False)
    typed = []
    for i, label in enumerate(CUSTOM_LABELS):
        key = f"{widgets.PREFIX}custom_gpu.{i}"
        if key not in st.session_state:
            st.session_state[key] = float(values[i])
        lo, hi = CUSTOM_GPU_BOUNDS[i]
        typed.append(row.number_input(label, key=key, min_value=lo, max_value=hi, step=0.1 if i != 2 else 1.0))
    on_key = f"{widgets.PREFIX}custom_gpu.on"
    if on_key not in st.session_state:
        st.session_state[on_key] = state.custom_gpu is not None
    on = st.toggle("Include it in the ranking", key=on_key)
    new = tuple(float(v) for v in typed) if on else None
    if new != state.custom_gpu:
        widgets.update(custom_gpu=new)


# ----------------------------------------------------------------------------- table

# Widths and headings sized so the whole table fits the page at 1400 x 1000: 938 px beside the sidebar, 936 px of
# columns with 'nodes' (multi-node), 888 without; a width is about its longest cell's text in the grid's 14 px
# Source Sans + 8 px left padding (the grid clips at the right edge). The former 1,330 px put nodes, sequences,
# $ / GPU-hour and price behind a sideways scroll. GPU: the longest catalog name, RTX-PRO-6000-Max-Q, is 125 px
# (canvas measureText in Chromium, qa15): 128 px drew "RTX-PRO-6000-Max-C"; 134 holds it, the 4 px from
# "$ / M tokens" (70 px heading, 82 holds it). The row keys (what tests and the CSV read) keep their long names;
# ``label`` is only the heading drawn.
OPTION_COLUMNS = {
    "#": st.column_config.NumberColumn(width=30, pinned=True, help="Rank by the chosen objective"),
    "GPU": st.column_config.TextColumn(width=134, pinned=True, help="Catalog GPU (memory is what the runtime "
                                                                    "exposes, not the number on the box)"),
    "layout": st.column_config.TextColumn(width=78, pinned=True, help=None),  # layout_help, in the engine's flags
    "$ / M tokens": st.column_config.NumberColumn(
        width=82, format="$%.3f",
        help="US$ per million generated tokens at the target load: $ per hour / (tokens/s bound x 3600) x 10^6"),
    "headroom (% free)": st.column_config.NumberColumn(
        "headroom", width=76, format="%.0f%%",
        help="Memory the tightest GPU keeps free with its replica's share of the load running (KV pool minus "
             "the KV those sequences use), as a share of device memory"),
    "headroom (GiB)": st.column_config.NumberColumn("GiB free", width=60, format="%.2f",
                                                    help="The headroom in GiB (2^30 B)"),
    "$ / hour": st.column_config.NumberColumn(width=64, format="$%.2f",
                                              help="US$ per hour for all the layout's GPUs"),
    "tokens/s bound": st.column_config.NumberColumn("tokens/s", width=64, format="%.0f", help=None),  # tokens_help
    "GPUs": st.column_config.NumberColumn(width=46, help="TP x PP x replicas"),
    "nodes": st.column_config.NumberColumn(width=48, help="Nodes the layout needs (replicas packed per node)"),
    "sequences / replica": st.column_config.TextColumn(
        "sequences", width=72, help="Sequences of max_model_len the busiest replica serves, of the most it holds "
                                    "while keeping the headroom floor"),
    "$ / GPU-hour": st.column_config.NumberColumn("$ / GPU-h", width=70, format="$%.2f",
                                                  help="The price used for one GPU, per hour"),
    "price": st.column_config.TextColumn(width=112, help="yours (typed), listed (public on-demand price, date "
                                                        "read) or estimate (no public price; see Default prices)"),
}


def tokens_help(spec=None) -> str:
    """The 'tokens/s bound' column's help: the Budget's words for the same roofline (views.decode_read_text), for
    ``spec``'s model (its untied input table, its routed experts) or in general without one."""
    untied = spec is None or bool(spec.lm_head)
    moe = spec is None or any(layer.experts is not None for layer in spec.layers)
    return ("Decode roofline upper bound at the target load, every sequence at max_model_len, all replicas: "
            "max(bytes / bandwidth, FLOPs / peak) per step, the bytes being "
            + views.decode_read_text(untied, "k" if moe else None) + ". A ceiling, not a forecast")


def layout_help(engine: str = "vllm") -> str:
    """The 'layout' column's help, in ``engine``'s flags (SGLang's --tp-size, not vLLM's --tensor-parallel-size)."""
    tp, pp, dp = (views.engine_flag(f"{axis}_parallel_size", engine) for axis in ("tensor", "pipeline", "data"))
    return f"TPn = {tp}, PPn = {pp}, xN = N data-parallel replicas ({dp})"


def option_columns(multi_node: bool, spec=None, engine: str = "vllm") -> dict:
    """OPTION_COLUMNS, without 'nodes' for single-node layouts (every one of them 1: the column said nothing), the
    'tokens/s bound' help worded for ``spec``'s model (tokens_help), the layout's in ``engine``'s flags."""
    tokens = st.column_config.NumberColumn("tokens/s", width=64, format="%.0f", help=tokens_help(spec))
    layout = st.column_config.TextColumn(width=78, pinned=True, help=layout_help(engine))
    return {**OPTION_COLUMNS, "layout": layout, "tokens/s bound": tokens, **({} if multi_node else {"nodes": None})}


# An HTML table, not st.dataframe: a reason runs to ~150 characters ("Does not fit: the weights alone are 60.77 GiB
# per GPU, more than the 39.39 GiB it has ...") and the data grid cut it at the column's edge (QA at 1400 px, 2026-12).
def rejected_columns(engine: str = "vllm") -> list[views.Col]:
    """The rejected layouts' columns, TP and PP helped with ``engine``'s flags (views.engine_flag)."""
    return [views.Col("GPU", nowrap=True),
            views.Col("TP", help=views.engine_flag("tensor_parallel_size", engine), num=True),
            views.Col("PP", help=views.engine_flag("pipeline_parallel_size", engine), num=True),
            views.Col("why not", help="What rules the layout out, as kvplan planned it")]
REJECTED_HEIGHT = 480  # px: the table scrolls inside the expander (hundreds of rows), its text wraps


def rejected_rows(picker: Picker) -> list[dict[str, Any]]:
    return [{"GPU": r.gpu, "TP": r.tensor_parallel_size, "PP": r.pipeline_parallel_size, "why not": r.reason}
            for r in picker.rejected]


def price_label(gpu: str, user: set[str]) -> str:
    if gpu in user:
        return "yours"
    p = DEFAULT_PRICES.get(gpu)
    if p is None:
        return "none"
    return f"listed {p.as_of}" if p.basis == "listed" else "estimate"


def option_rows(options: Sequence[Option], user_priced: set[str] = frozenset()) -> list[dict[str, Any]]:
    return [{"#": i + 1, "GPU": o.gpu, "layout": o.layout, "$ / M tokens": o.cost_per_million_tokens,
             "headroom (% free)": o.headroom_fraction * 100, "headroom (GiB)": o.headroom_bytes / GiB,
             "$ / hour": o.cost_per_hour, "tokens/s bound": o.tokens_per_s or None, "GPUs": o.num_gpus,
             "nodes": o.num_nodes, "sequences / replica": f"{o.load_per_replica} of {o.seqs_per_replica}",
             "$ / GPU-hour": o.price_per_gpu_hour, "price": price_label(o.gpu, user_priced)}
            for i, o in enumerate(options)]


PRICE_COLUMNS = {
    "GPU": st.column_config.TextColumn(width=150, pinned=True),
    "$ / GPU-hour": st.column_config.NumberColumn(width=100, format="$%.2f", help="Default on-demand price"),
    "basis": st.column_config.TextColumn(width=80, help="listed: a public on-demand price; estimate: none found"),
    "as of": st.column_config.TextColumn(width=100, help="The day the price was read from its page"),
    "yours": st.column_config.NumberColumn(width=80, format="$%.2f", help="Your price, when typed"),
    "source": st.column_config.TextColumn(width="large", help="Where the price comes from, or how it was set"),
}


def price_rows(state: PlanState) -> list[dict[str, Any]]:
    yours = dict(state.prices)
    return [{"GPU": p.gpu, "$ / GPU-hour": p.usd_per_gpu_hour, "basis": p.basis, "as of": p.as_of,
             "yours": yours.get(p.gpu), "source": p.source} for p in DEFAULT_PRICES.values()]


def workload_text(concurrency: int | None, max_len: int, what: str) -> str:
    """The load the GPUs are ranked at, in words (Markdown; ``what``: the model and engine, escaped). A blank sidebar
    concurrency reads "as many as fit" there (the Budget then fills every sequence that fits: 3 of 131,072 tokens for
    Llama-3.1-8B on one H100), but the picker needs one load for every GPU and ranks at 1: the caption said
    "Serving 1 sequence(s)" without why."""
    head = f"Serving {sequences(concurrency or 1)} of {max_len:,} tokens ({what})"
    if concurrency:
        return head + ". Set the context and concurrency in the sidebar."
    return head + (": the sidebar's concurrency is blank ('as many as fit'), so the GPUs are ranked at one sequence. "
                   "Set the context and concurrency in the sidebar.")


def rule_text(picker: Picker, max_len: int, spec=None) -> str:
    """The ranking rule, in words (Markdown); the bound's read in the words of the column's help and the Budget's
    (views.decode_read_text, for ``spec``'s model)."""
    untied = spec is None or bool(spec.lm_head)
    moe = spec is None or any(layer.experts is not None for layer in spec.layers)
    where = "single-node layouts only (every replica inside one node)" if not picker.multi_node else \
        "layouts may span nodes"
    return (f"Ranked by **{OBJECTIVES[picker.objective]}**, {TIE_BREAKS[picker.objective]}; among layouts "
            f"that keep at least **{picker.headroom_floor * 100:g}%** of every GPU's memory free with "
            f"{sequences(picker.concurrency)} of {max_len:,} tokens running; {where}. "
            "$ / M tokens = $ / hour ÷ (tokens/s bound × 3,600) × 10⁶, the bound being the decode roofline "
            f"at this load ({views.decode_read_text(untied, 'k' if moe else None)}; no prefill, no TP/PP "
            "communication: a ceiling, so $ / M tokens is a floor).")


# ----------------------------------------------------------------------------- chart

def _hover(o: Option, priced: bool) -> str:
    money = (f"${o.cost_per_hour:,.2f}/h, " + (f"${o.cost_per_million_tokens:,.3f}/M tokens, "
                                              if o.cost_per_million_tokens is not None else "")
             if priced and o.cost_per_hour is not None else "")
    return (f"<b>{o.gpu} {o.layout}</b><br>{counted(o.num_gpus, 'GPU')}, {counted(o.num_nodes, 'node')}<br>{money}"
            f"{o.tokens_per_s:,.0f} tokens/s bound ({o.bound}-bound)<br>{o.headroom_fraction:.0%} headroom")


def _log_ticks(data: Sequence[float], prefix: str = "") -> dict[str, list]:
    """Ticks at 1, 2, 5 x 10^k across the data, written out in full ('$20', '2,000'), not plotly's bare digits."""
    positive = [v for v in data if v > 0]
    if not positive:
        return {}
    lo, hi = min(positive), max(positive)
    ticks = [m * 10.0**k for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1) for m in (1, 2, 5)]
    ticks = [t for t in ticks if lo / 2 <= t <= hi * 2]
    return {"tickvals": ticks, "ticktext": [f"{prefix}{t:,.0f}" if t >= 1 else f"{prefix}{t:g}" for t in ticks]}


# The top three's "#n" labels: each beside its star, at an offset (px) chosen so no two labels overlap and no label
# sits on a star, at any plot size the chart is drawn at. textposition="top center" put all three in the same place
# relative to their points: two layouts a few pixels apart (Qwen3-8B's RTX-5070 TP4 and RTX-4070 TP4 at one load)
# drew "#2" over "#3".
LABEL_BOX = (26, 18)  # px: a "#n" label at 12 px with a margin (width, height)
STAR_BOX = 16  # px: a top-three star (size 13) with a margin
LABEL_OFFSETS = ((0, -24), (30, -18), (-30, -18), (32, 0), (-32, 0), (0, 24), (30, 18), (-30, 18),
                 (0, -46), (44, -36), (-44, -36), (56, 0), (-56, 0), (0, 46), (44, 36), (-44, 36))
# The plot area's smallest and largest drawn size (px): the GPUs page's full-width chart at ~1000 to ~1900 px of
# browser, 450 px high less the title, the axis titles and the legend below
PLOT_SIZES = ((560, 250), (1500, 330))


def _fractions(values: Sequence[float], log: bool) -> list[float]:
    """Each value's place along its axis, 0 to 1 over the values' span (log10 on a log axis; 0.5 when all equal)."""
    vs = [math.log10(v) if log else v for v in values]
    lo, hi = min(vs), max(vs)
    return [0.5 if hi == lo else (v - lo) / (hi - lo) for v in vs]


def label_offsets(points: Sequence[tuple[float, float]]) -> list[tuple[int, int]]:
    """(ax, ay) pixel offsets for labels of ``points`` (axis fractions, 0 to 1 across the data, y up), in order: the
    first of LABEL_OFFSETS whose label box overlaps no label placed before it and no point's star, at both
    PLOT_SIZES (so at any size between, as the boxes move apart linearly). Three labels on one point: (0, -24),
    (30, -18), (-30, -18) (above, above right, above left)."""
    placed: list[tuple[int, int]] = []

    def clear(i: int, ax: int, ay: int) -> bool:
        for width, height in PLOT_SIZES:
            x, y = points[i][0] * width + ax, -points[i][1] * height + ay  # screen px, y down
            for j, (px, py) in enumerate(points):
                sx, sy = px * width, -py * height
                if abs(x - sx) < (LABEL_BOX[0] + STAR_BOX) / 2 and abs(y - sy) < (LABEL_BOX[1] + STAR_BOX) / 2:
                    return False
                if j < i:
                    lx, ly = sx + placed[j][0], sy + placed[j][1]
                    if abs(x - lx) < LABEL_BOX[0] and abs(y - ly) < LABEL_BOX[1]:
                        return False
        return True

    for i in range(len(points)):
        placed.append(next((o for o in LABEL_OFFSETS if clear(i, *o)), LABEL_OFFSETS[i % len(LABEL_OFFSETS)]))
    return placed


def top_labels(top: Sequence[tuple[int, float, float]], y_log: bool, xs: Sequence[float],
               ys: Sequence[float]) -> list[dict]:
    """The "#1" / "#2" / "#3" annotations of the top picks, (rank, x, y) each, placed by ``label_offsets`` over the
    axes' span (``xs``, ``ys``: every point drawn; the x axis is log). Annotation x / y on a log axis are log10."""
    top = [(rank, x, y) for rank, x, y in top if x > 0 and (y > 0 or not y_log)]
    if not top:
        return []
    fx = _fractions([*xs, *(x for _, x, _ in top)], True)[len(xs):]
    fy = _fractions([*ys, *(y for _, _, y in top)], y_log)[len(ys):]
    return [dict(x=math.log10(x), y=math.log10(y) if y_log else y, xref="x", yref="y", text=f"#{rank}",
                 showarrow=True, arrowhead=0, arrowwidth=1, arrowcolor=COLORS["headroom"], ax=ax, ay=ay,
                 font=dict(size=12), standoff=6)
            for (ax, ay), (rank, x, y) in zip(label_offsets(list(zip(fx, fy))), top)]


def pareto_figure(options: Sequence[Option], objective: str, top: Sequence[Option] = ()) -> Figure:
    """Every layout as a point: cost ($ per hour; GPUs when ranking by GPUs or nothing is priced) against the
    tokens/s bound, the Pareto frontier drawn through the options nothing beats on both, the top three marked."""
    priced = objective != "gpus" and any(o.cost_per_hour is not None for o in options)
    pts = [o for o in options if not priced or o.cost_per_hour is not None]

    def y(o: Option) -> float:
        return o.cost_per_hour if priced else o.num_gpus

    front = pareto_front(list(pts), priced)
    # numpy arrays go to the browser as plotly.js typed arrays (base64): smaller than lists of ~280 floats
    traces = [
        scatter(x=np.array([o.tokens_per_s for o in pts]), y=np.array([y(o) for o in pts], dtype=float),
                mode="markers", name="layouts", text=np.array([_hover(o, priced) for o in pts], dtype=object),
                hovertemplate="%{text}<extra></extra>",
                marker=dict(size=7, color=COLORS["not planned"], line=dict(color=COLORS["headroom"], width=1))),
        scatter(x=[o.tokens_per_s for o in front], y=[y(o) for o in front], mode="lines+markers",
                name="Pareto frontier", text=[_hover(o, priced) for o in front],
                hovertemplate="%{text}<extra>frontier</extra>",
                # 'vh': between two frontier points the cheapest way to reach a tokens/s is the next point up
                line=dict(color=COLORS["weights"], shape="vh"),
                marker=dict(size=9, color=COLORS["weights"])),
    ]
    if top:
        traces.append(scatter(  # the "#n" labels are annotations (top_labels): placed apart, not on one another
            x=[o.tokens_per_s for o in top], y=[y(o) for o in top], mode="markers", name="top three",
            customdata=[_hover(o, priced) for o in top], hovertemplate="%{customdata}<extra>top three</extra>",
            marker=dict(size=13, color=COLORS["device"], symbol="star")))
    ytitle = "$ per hour (all GPUs)" if priced else "GPUs"
    xaxis = dict(type="log", title=dict(text="tokens/s bound at the target load (all replicas)"),
                 **_log_ticks([o.tokens_per_s for o in pts]))
    yaxis = dict(type="log", title=dict(text=ytitle), **_log_ticks([y(o) for o in pts], "$")) if priced else \
        dict(type="linear", title=dict(text=ytitle), rangemode="tozero")
    labels = top_labels([(i + 1, o.tokens_per_s, y(o)) for i, o in enumerate(top) if y(o) is not None], priced,
                        [o.tokens_per_s for o in pts if o.tokens_per_s > 0],
                        [y(o) for o in pts if not priced or y(o) > 0])
    return figure(traces, ("Cost" if priced else "GPUs") + " vs tokens/s bound, every layout", xaxis=xaxis,
                  yaxis=yaxis, **({"annotations": labels} if labels else {}))


# ----------------------------------------------------------------------------- the page body

def across_nodes(state: PlanState, max_len: int, concurrency: int) -> Picker:
    """The same sweep with multi-node layouts on (what the switch would show)."""
    return picker(state.model_copy(update={"multi_node": True}), max_len, concurrency)


def no_layout_text(picker: Picker, wider: Picker | None = None) -> str:
    """Why no layout is listed (Markdown), leading with the nodes: ``wider`` is the sweep with multi-node layouts on
    (None when they already are). Qwen3.8-2.4T (bf16, 4.8 TB of weights) fits no 8-GPU node of any catalog GPU: with
    the switch off the warning said "lower the floor, shorten the context, use fp8 KV, or turn on multi-node layouts",
    the one fix that works last; multi-node on, 4 layouts serve it (MI325X TP8 PP4, 32 GPUs on 4 nodes, fewest)."""
    if picker.multi_node or wider is None:
        return ("No layout serves this load while keeping the headroom floor, even across nodes: lower the floor, "
                "shorten the context or use fp8 KV.")
    if wider.options:
        o = min(wider.options, key=lambda o: (o.num_gpus, o.num_nodes))
        return (f"**Needs more than one node**: no single-node layout serves this load and multi-node layouts are "
                f"off. Turn on **Multi-node layouts** above: {counted(len(wider.options), 'layout')} across nodes "
                f"serve it, the fewest GPUs {o.gpu} {o.layout} ({counted(o.num_gpus, 'GPU')} on "
                f"{counted(o.num_nodes, 'node')}).")
    return ("**Multi-node layouts are off**, and turning them on would not help: no layout serves this load while "
            "keeping the headroom floor, in one node or across nodes. Lower the floor, shorten the context or use "
            "fp8 KV.")


def own_layout_text(picker: Picker, state: PlanState) -> str | None:
    """Why the sidebar's own layout is missing from the ranking (Markdown), or None when it is ranked or was not
    swept. gpt-oss-120b on one H100 fits on Budget (1.05x) but keeps ~8 % of the device free with one sequence
    of 131,072 tokens, under the 10 % floor: it sat only in the closed Rejected list, unexplained."""
    gpu, tp, pp = state.gpu, state.tensor_parallel_size, state.pipeline_parallel_size
    for r in picker.rejected:
        if (r.gpu, r.tensor_parallel_size, r.pipeline_parallel_size) == (gpu, tp, pp):
            return (f"**Your sidebar's layout, {views.esc(gpu)} TP{tp} PP{pp}, is not ranked**: "
                    f"{views.esc(r.reason.rstrip('.'))}.")
    return None


def overcounts(picker: Picker) -> tuple[str, ...]:
    """What the ranked layouts' tokens/s bounds still over-count (each option's decode step says, from
    ``kvplan.plan.decode_bound``), in the order first seen; empty: every figure is an upper bound."""
    return tuple(dict.fromkeys(s for o in picker.options for s in o.overcounts))


def show(picker: Picker, state: PlanState, max_len: int) -> None:
    if not picker.options:  # first: nothing below says why the table is missing
        wider = None if picker.multi_node else across_nodes(state, max_len, picker.concurrency)
        st.warning(no_layout_text(picker, wider), icon=":material/warning:")
    views.quant_name_warning(state)  # the picker prices the weights at the config's dtype too
    views.moe_backend_warning(state)  # and every layout's MoE workspace at auto's (an unsized --moe-backend)
    views.picker_context_warning(state)
    st.markdown(rule_text(picker, max_len, cached.spec(state)).replace("$", "\\$"))  # a bare $ would start LaTeX
    if (own := own_layout_text(picker, state)) is not None:
        st.info(own.replace("$", "\\$"), icon=":material/info:")
    if cached.spec(state).model_type in DSV41_MODEL_TYPES:  # no decode figure (kvplan.plan.V41_NO_DECODE)
        from kvplan.plan import V41_NO_DECODE

        st.caption(V41_NO_DECODE + " The tokens/s and $ / M tokens columns are empty.")
    if over := overcounts(picker):  # the roofline still reads more than a step of this model does
        st.caption("Not an upper bound for this model: the tokens/s bound counts " + "; and ".join(over)
                   + ", so a real step can run faster and $ / M tokens is no floor.")
    every = st.toggle("Every layout (not only the best per GPU)", key=ALL_LAYOUTS)
    # The ranking is a function of the state, the toggle, and the catalog and prices the picker swept (both
    # replaceable by a test): drawn once per key and replayed after (views.replayed).
    sweep_key = (",".join(f"{n}={v!r}" for n, v in sorted(prices_for(state).items())), repr(catalog()))
    views.replayed("gpus", lambda: _ranked(picker, state, every), cached.state_key(state), every, sweep_key)
    rejected = st.expander(f"Rejected ({len(picker.rejected)})", key=REJECTED, on_change="rerun")
    if rejected.open:  # lazy: the table is built only when it is shown
        with rejected, st.container(height=REJECTED_HEIGHT, border=False):
            views.html_table(rejected_rows(picker), rejected_columns(state.engine))
    prices = st.expander(f"Default prices ({len(DEFAULT_PRICES)} GPUs, looked up {PRICES_READ})", key=PRICES,
                         on_change="rerun")
    if prices.open:
        with prices:
            st.caption("On-demand US$ per GPU-hour, RunPod Secure Cloud where listed, else the cheapest public "
                       "on-demand listing found; 'estimate' where none exists (the source says how it was set).")
            views.table(price_rows(state), column_config=PRICE_COLUMNS)


def _ranked(picker: Picker, state: PlanState, every: bool) -> None:
    """The metrics, the top three's reasons, the ranked table and the chart (no widget: see show)."""
    shown = picker.options if every else best_per_gpu(picker.options)
    metrics = views.row()
    metrics.metric("Layouts that keep the floor", f"{len(picker.options)}",
                   help=f"{len(picker.rejected)} rejected (see below)")
    metrics.metric("GPUs that can serve it", f"{len({o.gpu for o in picker.options})}")
    if shown:
        best = shown[0]
        metrics.metric("Best", f"{best.gpu} {best.layout}")
        st.markdown("\n".join(f"- {views.esc(line)}" for line in reasons(shown, picker.objective)))
        views.table(option_rows(shown, {n for n, _ in state.prices} | {CUSTOM_NAME}),
                    column_config=option_columns(picker.multi_node, cached.spec(state), state.engine))
        if any(o.tokens_per_s > 0 for o in picker.options):
            views.chart(pareto_figure(picker.options, picker.objective, shown[:3]), "gpus.chart")
        else:  # DeepSeek-V4.1: no decode ceiling, so no tokens/s axis to draw the layouts on
            st.caption("No chart: it plots each layout's tokens/s bound, and this model has none (above).")
