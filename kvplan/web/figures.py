"""Plotly figures, built by pure functions of kvplan's results (tests read their data back).

Bytes are plotted in GiB (2**30). Nothing here plans: every number comes from a kvplan result; the
only arithmetic is splitting a result into the segments a chart shows, in ``rank_segments``.
"""

import functools
import math
from collections.abc import Sequence

import plotly.graph_objects as go
import plotly.io as pio
from _plotly_utils.utils import convert_to_base64

from kvplan.paging import Paging
from kvplan.plan import Plan, RankPlan, SweepPoint
from kvplan.params import ParamBreakdown
from kvplan.units import GiB, counted  # noqa: F401  (counted: the pages' and views' plural)
from kvplan.weights import WeightBytes

SEGMENTS = ("weights", "workspace", "recurrent states", "KV in use", "free KV", "headroom", "not planned")
COLORS = {"weights": "#4C78A8", "workspace": "#F58518", "recurrent states": "#72B7B2", "KV in use": "#54A24B",
          "free KV": "#A6D99A",
          "headroom": "#BAB0AC", "not planned": "#E7E7E7", "device": "#D62728", "shared": "#B279A2",
          "private": "#54A24B", "empty": "#E7E7E7"}
HEADROOM_TERMS = ("outside the budget", "left free", "headroom")
STATE_TERMS = ("Mamba state pool",)  # kvplan.plan._sglang_mamba_term
_LAYOUT = dict(margin=dict(l=10, r=10, t=50, b=10), legend=dict(orientation="h", y=-0.2))
# the longest chart title that stays on one line in a half-page column at 1400 x 1000 (~420 px; Chromium cut a
# 63-character title at its 59th): a longer one puts its second half in a subtitle
TITLE_CHARS = 52
# every title 16 px below the chart's top, whatever its top margin: plotly centres it in the margin by default, so a
# chart with the past-max band (BAND_MARGIN, 24 px more) drew its title 12 px lower than its neighbour's in the row
TITLE_AT = dict(y=1, yref="container", yanchor="top", pad=dict(t=16))
# a subtitle is plotly's title.subtitle (plotly.js >= 2.35; Streamlit 1.67 ships 3.x), drawn under the title's own
# line, so the title stays where a one-line title is. A second title line ("...<br>...") did not: plotly.js lifts a
# title of n lines by (n - 1) x 1.3 em to centre it on its anchor, and "Memory per GPU: H100-SXM" (two lines) sat
# 11 px above "Memory vs context length" beside it (Qwen3.5-27B on one H100, measured in Chromium at 1400 x 1000)
SUBTITLE_FONT = dict(size=13)
# the top margin's rows, px: the title (TITLE_AT's 16 px and its line), a subtitle's line, the past-max band's label
# (past_max_region; a line of 12 px text between the title and the plot area)
HEAD_PX, SUBTITLE_PX, BAND_PX = 50, 24, 24


def _gib(n: int | float) -> float:
    return n / GiB


def sequences(n: int) -> str:
    """'1 sequence', '10,000,000 sequences'."""
    return counted(n, "sequence")


class Figure(go.Figure):
    """A figure held as the plain dicts plotly.js reads: what ``st.plotly_chart`` sends, without plotly's objects.

    ``st.plotly_chart`` validates a dict figure property by property (4 ms a Budget chart) but takes a
    ``BaseFigure`` as already valid and only calls its ``to_dict``. A real ``go.Figure`` still costs 3 ms a
    chart without validation: building its objects and the default template (1.8 ms), then ``to_dict``
    deep-copying it all back into dicts (1.0 ms), on every rerun. This one keeps the dicts it was made
    from and ``to_dict`` returns them with the default template (the dict plotly would give, built once
    per template), so a chart costs its JSON encoding only. Every figure this module makes is validated
    in the tests instead (tests/test_app_figures.py rebuilds each with validation on and compares).

    Read-only: ``to_dict`` shares its lists with the figure. Reading ``data`` / ``layout`` (or any other
    plotly attribute) builds the real figure once, from the same dicts, for the tests' sake.
    """

    def __init__(self, data: list[dict], layout: dict):
        convert_to_base64(data)  # numpy arrays -> plotly.js typed arrays, as go.Figure.to_dict does
        self._plain = (data, layout)
        self._types = tuple(sorted({t.get("type", "scatter") for t in data}))
        self._full_figure = None

    def to_dict(self) -> dict:
        data, layout = self._plain
        return {"data": data, "layout": {**layout, "template": _template(pio.templates.default, self._types)}}

    def to_plotly_json(self) -> dict:
        return self.to_dict()

    def to_json(self, *args, **kwargs) -> str:
        return pio.to_json(self.to_dict(), *args, **{"validate": False, **kwargs})

    def with_layout(self, **changes) -> "Figure":
        """The same traces under this layout with ``changes`` (top-level keys replaced); this figure is left as it
        is (its dicts are shared, never changed)."""
        out = object.__new__(Figure)
        out._plain, out._types, out._full_figure = (self._plain[0], {**self._plain[1], **changes}), self._types, None
        return out

    def full(self) -> go.Figure:
        """The same figure as plotly objects (built on first use; not validated)."""
        if self._full_figure is None:
            self._full_figure = go.Figure(self.to_dict(), _validate=False)
        return self._full_figure

    data = property(lambda self: self.full().data)
    layout = property(lambda self: self.full().layout)

    def __getattr__(self, name: str):  # what this class does not hold itself: from the plotly figure
        if name in ("_plain", "_full_figure"):
            raise AttributeError(name)
        return getattr(self.full(), name)

    def __repr__(self) -> str:
        return f"figures.Figure({self.to_dict()!r})"


@functools.cache
def _template(name: str, types: tuple[str, ...] = ()) -> dict:
    """The default template as go.Figure().to_dict() holds it (plotly's default is 'streamlit' once
    streamlit is imported: its theme's placeholder colours, which the browser replaces).

    The 'streamlit' template is cut to what a figure of these trace types reads: its colorway and its
    defaults for these types (scatter: markers without an outline). The rest of it is colour scales and
    defaults for trace types this module never draws (candlestick, contour, heatmap, sankey, table,
    waterfall, ...): 3,397 of a Budget chart's ~4,870 JSON characters, encoded, hashed and sent on every
    rerun for nothing. The browser's Streamlit theme supplies the fonts, axes and backgrounds itself
    (it fills ``template.layout``), so the drawn chart is the same."""
    full = go.Figure().to_dict()["layout"].get("template", {})
    if name != "streamlit":
        return full
    out: dict = {}
    if "colorway" in full.get("layout", {}):
        out["layout"] = {"colorway": full["layout"]["colorway"]}
    if data := {t: full["data"][t] for t in types if t in full.get("data", {})}:
        out["data"] = data
    return out


def figure(traces: list[dict], title: str, shapes: Sequence[tuple[dict, dict | None]] = (), subtitle: str = "",
           **layout) -> Figure:
    """A figure from trace dicts and a layout dict, not validated here (see ``Figure``). ``shapes``: (shape, its
    label or None) pairs; ``subtitle``: a smaller line under the title (the top margin then holds it: SUBTITLE_PX)."""
    lines = dict(shapes=[s for s, _ in shapes]) if shapes else {}
    if labels := [a for _, a in shapes if a]:
        lines["annotations"] = labels
    head = dict(text=title, **TITLE_AT)
    if subtitle:
        head["subtitle"] = dict(text=subtitle, font=SUBTITLE_FONT)
    return Figure(traces, dict(title=head, **lines, **(_LAYOUT | layout)))


def head_margin(subtitle: bool = False, band: bool = False) -> dict:
    """The margins of a chart whose top holds the title and, if asked, a subtitle's line and the past-max band's label:
    top 50 px, + 24 for a subtitle, + 24 for the band (both: 98)."""
    return dict(_LAYOUT["margin"], t=HEAD_PX + SUBTITLE_PX * subtitle + BAND_PX * band)


def level(*figs: Figure) -> tuple[Figure, ...]:
    """Charts drawn side by side in a row, each given the tallest top margin among them, so their plot areas start at
    the same height (the titles already do: TITLE_AT, a subtitle under its title's line). Memory per GPU with a
    subtitle (top 74 px) beside a Memory vs context length without the band (50): both 74, the plot areas level; a
    chart of ``figure`` keeps its other margins and everything else."""
    top = max(f._plain[1].get("margin", _LAYOUT["margin"])["t"] for f in figs)
    return tuple(f.with_layout(margin=dict(f._plain[1].get("margin", _LAYOUT["margin"]), t=top)) for f in figs)


def _bar(**props) -> dict:
    return dict(type="bar", **props)


def scatter(**props) -> dict:
    return dict(type="scatter", **props)


def _device_line(device_gib: float) -> tuple[tuple[dict, None], dict]:
    """The device's memory as a dashed red line across the plot (linear GiB axis), named in the legend by a trace
    that draws nothing ("device 79.19 GiB"): (the shape for ``figure``, the legend trace).

    Not an annotation on the line: at the plot's left end it sat on whatever crossed the line there (DeepSeek-V4-Flash
    at TP 1, 159 GiB on a 139.81 GiB H200, in Parallelism's first bar; a Budget bar or curve past the device)."""
    line = dict(color=COLORS["device"], dash="dash")
    shape = dict(type="line", xref="paper", x0=0, x1=1, yref="y", y0=device_gib, y1=device_gib, line=line)
    key = scatter(x=[None], y=[None], mode="lines", name=f"device {device_gib:.2f} GiB", line=line, hoverinfo="skip")
    return (shape, None), key


MAX_TICKS = 8
# the closest two context ticks may be (a ratio): 1.6 let "160k" (DeepSeek-V3's 163,840) beside "256k" overprint in a
# half-page chart at 1400 px (~105 px a decade over 3.2 decades: 21 px apart for ~26 px labels), and plotly then
# turned every label 30 degrees; 1.8x is 27 px there, and keeps 512 beside a max_model_len of 1,000 (1.95x)
TICK_RATIO = 1.8
# the narrowest plot a context axis is drawn in (a half-page column at 1400 x 1000: ~330 px between the axes), the
# width of one tick character (plotly's 12 px tick font, digits and commas: <= 7 px) and the least gap between two
# labels, px: a power of two is left out when its label would come nearer a kept one than that ("16M" and
# "100,000,000", 0.78 decade apart on an axis of 5.8 decades, overprinted by 2 px)
PLOT_PX, TICK_CHAR_PX, TICK_GAP_PX = 330, 7, 4
# the least distance between two tick centres, px, whatever their labels: "1M" beside "2M" (GLM-5.3 at its 1,048,576
# maximum: a sweep of 512 .. 4M, 4.01 decades in 330 px, 82 px a decade, so 2x is 24.8 px) cleared the label rule
# ((2 + 2) / 2 x 7 + 4 = 18 px) and read as one label at 1400 px. 36 px: every other power of two (4x, 49.5 px there)
# stays; a 2x pair needs 120 px a decade, a plot wider than 480 px for that sweep
MIN_TICK_PX = 36


def tick_values(x: Sequence[int], keep: Sequence[int] = (), plot_px: int = PLOT_PX) -> list[int]:
    """Ticks for a log axis of context lengths that never collide: every length that is not a power
    of two (the plan's own max_model_len) is kept, and so is each of ``keep`` (the plan's length when it is a power
    of two: 262,144 went unticked beside its neighbours), powers of two closer than TICK_RATIO to one are dropped
    (198k beside 256k would overprint), past MAX_TICKS every other power of two is left out, and a power of two
    that would sit nearer a kept tick than MIN_TICK_PX, or whose label would touch a kept label's, on a plot
    ``plot_px`` wide is dropped too. Worked example: GLM-5.3 (sweep 512 .. 4,194,304, keep 1,048,576) -> 512, 2k, 8k,
    32k, 128k, 1M (2M, 24.8 px from 1M, dropped). Only kept lengths (not powers, or ``keep``) may come nearer."""
    xs = sorted(set(x))
    special = [n for n in xs if n & (n - 1)]
    powers = [n for n in xs if not n & (n - 1) and all(max(n, m) / min(n, m) >= TICK_RATIO for m in special)]
    step = 1
    while len(powers[::step]) + len(special) > MAX_TICKS:
        step += 1
    px_per_decade = plot_px / (math.log10(xs[-1] / xs[0]) + 0.1)  # the range's 0.05 decade each side

    def apart(a: int, b: int) -> bool:
        need = max((len(_tokens_tick(a)) + len(_tokens_tick(b))) / 2 * TICK_CHAR_PX + TICK_GAP_PX, MIN_TICK_PX)
        return abs(math.log10(b / a)) * px_per_decade >= need

    kept = special + [n for n in keep if n in xs and n not in special]
    for n in powers[::step]:
        if all(apart(n, k) for k in kept):
            kept.append(n)
    return sorted(kept)


def _tokens_tick(n: int) -> str:
    """A context tick's label: exact, short. 16,777,216 -> '16M' (it read '16,384k': eight such labels in a half-page
    chart made plotly turn them all onto the axis title), 163,840 -> '160k', 690,592 -> '690,592'."""
    if n >= 1024 * 1024 and n % (1024 * 1024) == 0:
        return f"{n // (1024 * 1024):,}M"
    return f"{n // 1024:,}k" if n >= 1024 and n % 1024 == 0 else f"{n:,}"


def _tokens_axis(x: Sequence[int], log_range: list[float] | None = None, plan_len: int | None = None) -> dict:
    """A log axis ticked at some of the swept context lengths: 512, 1k, 2k, ..., 1M, 2M (k = 1024 tokens, M = 1024k);
    ``log_range``: its range in log10 units (Plotly's own when None)."""
    ticks = tick_values(x, [plan_len] if plan_len else ())
    text = [_tokens_tick(n) for n in ticks]
    # tickangle 0: ticks at least TICK_RATIO apart do not collide; plotly's own "auto" turned them all 30 degrees
    # onto the axis title when two long ones came near (100,000,000 beside 16M)
    return dict(type="log", title=dict(text="context length (tokens)"), tickvals=ticks, ticktext=text, tickangle=0,
                **({"range": log_range} if log_range else {}))


def _vline_trace(x: float, y_top: float, text: str) -> dict:
    """A vertical marker line as a trace (data coordinates, so it is right on log axes too)."""
    return scatter(x=[x, x], y=[0, y_top], mode="lines", name=text, line=dict(color=COLORS["device"], dash="dot"),
                   hovertemplate=text + "<extra></extra>")


# ----------------------------------------------------------------------------- model

def param_breakdown(params: ParamBreakdown, weights: WeightBytes) -> Figure:
    """Parameters by component (bars), weight bytes in the hover."""
    cats = [c for c, n in params.components.items() if n]
    bar = _bar(x=[params.components[c] for c in cats], y=cats, orientation="h", name="parameters",
               customdata=[_gib(weights.components.get(c, 0)) for c in cats], marker=dict(color=COLORS["weights"]),
               hovertemplate="%{y}: %{x:,} parameters, %{customdata:.2f} GiB in " + weights.format
               + "<extra></extra>")
    return figure([bar], f"Parameters by component: {params.total_params:,} in all",
                  xaxis=dict(title=dict(text="parameters")), yaxis=dict(autorange="reversed"))


# ----------------------------------------------------------------------------- budget

def sequences_in_use(plan: Plan) -> int:
    """Sequences of max_model_len the budget chart fills: the requested concurrency, else all that fit."""
    return plan.concurrency if plan.concurrency is not None else max(plan.max_num_seqs_at_len, 0)


def rank_segments(plan: Plan, rank: RankPlan) -> dict[str, int]:
    """One rank's device memory, split: weights, workspace, recurrent states (SGLang's MambaPool, a pool of its own
    beside the KV pool; vLLM keeps the states inside its KV pool), KV in use, free KV, headroom, not planned.

    KV in use = sequences x blocks per request x bytes per block (more than the pool when it does not
    fit, so the bar crosses the device line); 'not planned' is what a fixed --kv-cache-memory-bytes
    leaves unused.
    """
    weights = workspace = headroom = states = 0
    for term in rank.terms:
        if term.name == "device memory" or term.name.startswith("KV cache") or not term.applied:
            continue  # a term the engine does not subtract (CUDA graphs in some versions) lives in the headroom
        if term.name == "weights":
            weights += term.bytes
        elif term.name.startswith(HEADROOM_TERMS):
            headroom += term.bytes
        elif term.name.startswith(STATE_TERMS):
            states += term.bytes
        else:
            workspace += term.bytes
    pool = max(rank.kv_pool_bytes, 0)
    in_use = sequences_in_use(plan) * plan.blocks_per_request * rank.bytes_per_block
    out = {"weights": weights, "workspace": workspace, "recurrent states": states, "KV in use": in_use,
           "free KV": max(pool - in_use, 0), "headroom": headroom}
    out["not planned"] = max(rank.device_bytes - sum(out.values()), 0)
    return out


def rank_label(plan: Plan, rank: RankPlan) -> str:
    tp = int(plan.layout["tensor_parallel_size"])
    first = rank.pp_stage * tp
    ranks = f"rank {first}" if tp == 1 else f"ranks {first}-{first + tp - 1}"
    return f"stage {rank.pp_stage} ({ranks})" if len(plan.ranks) > 1 else ranks


# The GiB axis of a plan's memory charts says when its bytes are not exact: a chart shown (or saved as a PNG) on its
# own read as exact for a generic-decoder estimate. On the axis, not in the one-line title (a half-page chart's
# title has no room for it at 1400 px).
BASIS_AXIS = {"generic": "GiB (generic-decoder estimate)", "transformers": "GiB (built with transformers)"}


def gib_axis(basis: str, text: str = "GiB") -> dict:
    # exponentformat "none": plotly's default writes 1e9 GiB as "1B" (billions), read as bytes on a GiB axis
    return dict(title=dict(text=BASIS_AXIS[basis].replace("GiB", text, 1) if basis in BASIS_AXIS else text),
                exponentformat="none", separatethousands=True)


def rank_memory(plan: Plan) -> Figure:
    """A stacked bar per rank (one per pipeline stage; TP ranks of a stage are alike) against the device."""
    labels = [rank_label(plan, r) for r in plan.ranks]
    segs = [rank_segments(plan, r) for r in plan.ranks]
    device = _gib(plan.ranks[0].device_bytes)
    n = sequences_in_use(plan)
    # "0 x 131,072 tokens" read as a load; say what it is: not one sequence of that length fits
    load = f"{n:,} x {plan.max_model_len:,} tokens" if n else f"not one sequence of {plan.max_model_len:,} tokens fits"
    title = f"Memory per GPU: {plan.gpu}, {load}"
    line, key = _device_line(device)
    if len(title) <= TITLE_CHARS:
        return figure([*_segment_bars(labels, segs), key], title, [line], barmode="stack", yaxis=gib_axis(plan.basis))
    # plotly does not wrap a title: a long one ran past its half-page column at 1400 px ("... 1,048,576 tokens fi"):
    # the load goes on a subtitle's line
    return figure([*_segment_bars(labels, segs), key], f"Memory per GPU: {plan.gpu}", [line], subtitle=load,
                  barmode="stack", yaxis=gib_axis(plan.basis), margin=head_margin(subtitle=True))


def _segment_bars(x: list, segs: list[dict[str, int]]) -> list[dict]:
    bars = []
    for name in SEGMENTS:
        values = [_gib(s[name]) for s in segs]
        if any(values):
            bars.append(_bar(name=name, x=x, y=values, marker=dict(color=COLORS[name]),
                             hovertemplate=name + ": %{y:.2f} GiB<extra></extra>"))
    return bars


PAST_MAX = "past max_position_embeddings"
PAST_MAX_COLOR = "#7F7F7F"
# a chart with the band: 24 px more top margin than _LAYOUT's, so the band's label (a line of 12 px text) sits
# between the title and the plot area
BAND_MARGIN = head_margin(band=True)
# the right margin (px) of a memory chart whose last tick is a fit limit past the sweep: half its widest label
# ("10,485,760", 10 characters of ~7 px at plotly's 12 px tick font = 70 px) and a few px more
LIMIT_TICK_MARGIN = 40


def past_max_region(x_right: int, model_max: int | None) -> list[tuple[dict, dict]]:
    """A grey band over the contexts longer than the model's ``max_position_embeddings``, up to ``x_right`` (the
    longest context drawn), and its label ("past max_position_embeddings (8,192)"), as a (shape, annotation) pair
    for ``figure``; none when the chart stays within it or the config gives no maximum. On a log x axis plotly
    places a shape in data units but an annotation in log10 units: the label sits right-aligned at the band's end
    (x = log10(x_right); 524,288 -> 5.720) so it never runs off the chart, and just above the plot area (in the top
    margin, under the title: a figure with the band takes ``BAND_MARGIN``), where no trace is drawn."""
    if not model_max or x_right <= model_max:
        return []
    shape = dict(type="rect", xref="x", x0=model_max, x1=x_right, yref="paper", y0=0, y1=1, fillcolor=PAST_MAX_COLOR,
                 opacity=0.15, line=dict(width=0), layer="below")
    # right-aligned at the band's right end (the axis' end): anchored left at model_max, a narrow band's label ran off
    # the chart ("past max_positi" on DeepSeek-V3's 163,840 beside a limit of 618,538 tokens, half-width at 1400 px).
    # Above the plot, not inside its top: there it sat on the lines (a rising memory curve's last points, a step line
    # or the asked-concurrency line running along the top)
    label = dict(xref="x", x=math.log10(x_right), xanchor="right", yref="paper", y=1, yanchor="bottom",
                 showarrow=False, text=f"{PAST_MAX} ({model_max:,})", font=dict(color=PAST_MAX_COLOR))
    return [(shape, label)]


def memory_vs_context(points: Sequence[SweepPoint], device_bytes: int, concurrency: int,
                      exact_limit: int | None = None, model_max: int | None = None, basis: str = "native",
                      plan_len: int | None = None) -> Figure:
    """Memory the tightest rank needs (all but KV, plus KV in use) vs context length, with the device line.

    ``exact_limit``: the longest context that fits, when known exactly (one sequence); otherwise the
    limit is marked between the last point that fits and the first that does not. ``model_max``: the
    config's max_position_embeddings; the sweep past it is drawn dotted, in a grey band labelled so.
    """
    x = [p.context for p in points]
    # device - pool is all but KV (the headroom the engine keeps included); a negative pool is a shortfall past the
    # device, so it adds: Llama-3.1-405B on one H100 needs 79.19 + 677 GiB before any KV, not 79.19
    y = [_gib(device_bytes - p.kv_pool_bytes + p.kv_bytes_in_use) for p in points]
    fits = [p.fits for p in points]
    colors = [COLORS["KV in use"] if f else COLORS["device"] for f in fits]
    inside = len(x) if not model_max else sum(1 for c in x if c <= model_max)
    traces = [scatter(x=x[:inside], y=y[:inside], mode="lines+markers", name=f"needed for {sequences(concurrency)}",
                       marker=dict(color=colors[:inside]), line=dict(color=COLORS["weights"]),
                       hovertemplate="%{x:,} tokens: %{y:.2f} GiB<extra></extra>")]
    device = _gib(device_bytes)
    if exact_limit:
        traces.append(_vline_trace(exact_limit, max(device, *y), f"fits up to {exact_limit:,} tokens"))
    elif (limit := fit_limit(points)) is not None:
        last, first_out = limit
        traces.append(_vline_trace(last, max(device, *y), f"fits at {last:,}, not at {first_out:,} tokens"))
    if inside < len(x):  # from the last point within the maximum on, so the line does not break
        start = max(inside - 1, 0)
        traces.append(scatter(x=x[start:], y=y[start:], mode="lines+markers", name=f"{PAST_MAX} ({model_max:,})",
                               marker=dict(color=colors[start:]), line=dict(color=PAST_MAX_COLOR, dash="dot"),
                               hovertemplate="%{x:,} tokens: %{y:.2f} GiB, " + PAST_MAX + "<extra></extra>"))
    band = past_max_region(max(x + [exact_limit or 0]), model_max)
    line, key = _device_line(device)
    traces.append(key)
    margin = dict(_LAYOUT["margin"], **(BAND_MARGIN if band else {}))
    # a limit past the sweep (a hybrid's 524,288 beside a sweep to 32k) is ticked too: the axis ran on past its last
    # label to an unlabelled line. The range then ends a little past it (log10 units): Plotly draws no label for a
    # tick on the range's very end. That last label is centred on its tick, within 0.05 decade of the plot's edge:
    # the right margin holds its half ("690,592", DeepSeek-V3 on 8 x H200, was cut at the chart's edge)
    past = bool(exact_limit and exact_limit > max(x))
    if past:
        margin["r"] = LIMIT_TICK_MARGIN
    return figure(traces, "Memory vs context length", [line, *band],
                   margin=margin,
                   xaxis=_tokens_axis(x + [exact_limit], [math.log10(min(x)) - 0.05, math.log10(exact_limit) + 0.05],
                                      plan_len) if past else _tokens_axis(x, plan_len=plan_len),
                   yaxis=dict(**gib_axis(basis, "GiB per GPU"), rangemode="tozero"))


def fit_limit(points: Sequence[SweepPoint]) -> tuple[int, int] | None:
    """(longest swept context that fits, the next one, which does not), if the sweep crosses the limit."""
    for before, after in zip(points, points[1:]):
        if before.fits and not after.fits:
            return before.context, after.context
    return None


def concurrency_vs_context(points: Sequence[SweepPoint], concurrency: int | None,
                           model_max: int | None = None, plan_len: int | None = None) -> Figure:
    """Max concurrency and whole sequences vs context length; past ``model_max`` (max_position_embeddings) a
    grey band labelled so."""
    x = [p.context for p in points]
    traces = [
        scatter(x=x, y=[p.max_concurrency for p in points], mode="lines+markers", name="max concurrency",
                line=dict(color=COLORS["KV in use"]), hovertemplate="%{x:,} tokens: %{y:.2f}x<extra></extra>"),
        scatter(x=x, y=[p.max_num_seqs for p in points], mode="lines", name="whole sequences that fit",
                line=dict(color=COLORS["weights"], shape="hv"),
                hovertemplate="%{x:,} tokens: %{y:,} sequences<extra></extra>"),
    ]
    if concurrency:
        traces.append(scatter(x=[x[0], x[-1]], y=[concurrency, concurrency], mode="lines",
                              name=f"asked: {concurrency}",
                              line=dict(color=COLORS["device"], dash="dash")))
    ys = [v for p in points for v in (p.max_concurrency, p.max_num_seqs)] + ([concurrency] if concurrency else [])
    band = past_max_region(max(x), model_max)
    return figure(traces, "Concurrency vs context length", band, **({"margin": BAND_MARGIN} if band else {}),
                   xaxis=_tokens_axis(x, plan_len=plan_len),
                   yaxis=dict(type="log", title=dict(text="sequences"), **_count_ticks(ys)))


def _count_ticks(values: Sequence[float]) -> dict:
    """A log axis of counts ticked at 1-2-5 steps (..., 0.5, 1, 2, 5, 10, 20, ...) from the step below the
    values to the one above, and ranged to show those ticks: at least two labelled ticks, whatever the range.

    A decade-only axis (dtick=1) drew no number at all when the values stay inside one decade (Nemotron-H
    at TP 2: 11.6 to 20.7 sequences from 32k down to 512 tokens): the chart had no scale. E.g. [11.6, 20.7] ->
    10, 20 (50 beyond the range); [0.13, 0.5] -> 0.1, 0.2, 0.5; past 10 ticks only the powers of ten are kept."""
    values = [v for v in values if v > 0]
    if not values:
        return {"dtick": 1}
    lo, hi = min(values), max(values)
    ladder = [m * 10.0 ** e for e in range(-3, 10) for m in (1, 2, 5)]
    ticks = [t for t in ladder if t < lo][-1:] + [t for t in ladder if lo <= t <= hi]
    ticks += [t for t in ladder if t > hi][:1]
    if len(ticks) > 10:  # wide ranges: the powers of ten around the values only
        ticks = [10.0 ** e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]
    text = [f"{t:,.0f}" if t >= 1 else f"{t:g}" for t in ticks]
    # down to the tick below the values; up to the highest value, or to the tick above it when fewer than two
    # ticks would show
    top = hi if sum(t <= hi for t in ticks) >= 2 else min(t for t in ticks if t > hi)
    span = [math.log10(min(lo, ticks[0])), math.log10(top)]
    return {"tickvals": ticks, "ticktext": text, "range": [span[0] - 0.05, span[1] + 0.05]}


# ----------------------------------------------------------------------------- paging

def slots(paging: Paging, unit: str = "block") -> Figure:
    """Tokens, slots used and slots allocated; ``unit``: the engine's word for its allocation unit ("page" for
    SGLang's --page-size, "block" for vLLM's --block-size), in the title as in every Paging chart."""
    names = ["tokens (logical)", "slots used", "slots allocated"]
    values = [paging.logical_tokens, paging.used_slots, paging.allocated_slots]
    bar = _bar(x=names, y=values, marker=dict(color=[COLORS["weights"], COLORS["KV in use"], COLORS["workspace"]]),
               text=[f"{v:,}" for v in values], textposition="auto", hovertemplate="%{x}: %{y:,}<extra></extra>")
    return figure([bar], f"{unit.capitalize()} size {paging.block_size}: {paging.wasted_slots:,} slots wasted "
                  f"({paging.waste_fraction:.1%})", yaxis=dict(title=dict(text="token slots")))


def waste_by_block_size(pagings: Sequence[Paging], current: int | None = None, unit: str = "block") -> Figure:
    x = [str(p.block_size) for p in pagings]
    colors = [COLORS["device"] if p.block_size == current else COLORS["workspace"] for p in pagings]
    bar = _bar(x=x, y=[p.waste_fraction * 100 for p in pagings], marker=dict(color=colors),
               customdata=[p.wasted_slots for p in pagings], name="wasted",
               hovertemplate=unit + " %{x}: %{y:.1f}% wasted (%{customdata:,} slots)<extra></extra>")
    return figure([bar], f"Waste per {unit} size (same sequences)",
                  xaxis=dict(title=dict(text=f"{unit} size (tokens)"), type="category"),
                  yaxis=dict(title=dict(text="% of allocated slots empty")))


def block_map(blocks: Sequence[Sequence[tuple[int, int]]], block_size: int, shared: int,
              unit: str = "block") -> Figure:
    """Each sequence as a row of blocks: filled slots (shared blocks marked), then the empty tail.

    ``blocks``: kvplan.paging.block_map output; ``shared``: how many leading block ids are shared; ``unit``: the
    engine's word for a block ("page" for SGLang).
    """
    traces = {name: dict(x=[], y=[], base=[], text=[]) for name in ("shared", "private", "empty")}
    for s, row in enumerate(blocks):
        for j, (block_id, filled) in enumerate(row):
            kind = "shared" if block_id < shared else "private"
            start = j * block_size
            for name, width, base in ((kind, filled, start), ("empty", block_size - filled, start + filled)):
                if width:
                    t = traces[name]
                    t["x"].append(width)
                    t["y"].append(f"seq {s}")
                    t["base"].append(base)
                    t["text"].append(f"#{block_id}" if name != "empty" else "")
    names = {"shared": f"shared prefix {unit}", "private": f"own {unit}", "empty": "empty slots"}
    bars = [_bar(name=names[name], orientation="h", x=t["x"], y=t["y"], base=t["base"],
                 text=t["text"] if len(t["x"]) <= 200 else None, textposition="inside", insidetextanchor="middle",
                 marker=dict(color=COLORS[name], line=dict(color="white", width=1)),
                 hovertemplate="%{y}: %{x} slots from %{base}<extra>" + names[name] + "</extra>")
            for name, t in traces.items()]
    return figure(bars, f"{unit.capitalize()} map ({unit} size {block_size}; #n = physical {unit})", barmode="overlay",
                  bargap=0.3,
                  xaxis=dict(title=dict(text="token position")), yaxis=dict(autorange="reversed"))


# ----------------------------------------------------------------------------- parallelism

def layout_label(plan: Plan) -> str:
    lay = plan.layout
    return f"TP{lay['tensor_parallel_size']} PP{lay['pipeline_parallel_size']} DP{lay['data_parallel_size']}"


def parallel_compare(plans: Sequence[Plan]) -> Figure:
    """Per-rank stacked bars of several layouts side by side (x: layout, then stage)."""
    xs: list[list[str]] = [[], []]
    segs: list[dict[str, int]] = []
    for p in plans:
        for r in p.ranks:
            xs[0].append(layout_label(p))
            xs[1].append(f"stage {r.pp_stage}")
            segs.append(rank_segments(p, r))
    lines, traces = [], _segment_bars(xs, segs)
    if plans:
        line, key = _device_line(_gib(plans[0].ranks[0].device_bytes))
        lines, traces = [line], [*traces, key]
    return figure(traces, "Memory per GPU, by layout and pipeline stage", lines, barmode="stack",
                   yaxis=gib_axis(plans[0].basis if plans else "native"))


# ----------------------------------------------------------------------------- model: the layer strip

# One colour per cache kind kvplan knows; any other kind (layers.py grows: indexers, short convolutions,
# measured state) is drawn in NEUTRAL under its own name, so a new kind never breaks the strip.
KIND_COLORS = {"full_attention": "#4C78A8", "sliding_attention": "#9ECAE9", "chunked_attention": "#72B7B2",
               "mla": "#F58518", "mla_dsa": "#E45756", "dsa": "#E45756", "mamba": "#54A24B",
               "linear_attention": "#88D27A", "short_conv": "#B279A2", "state": "#9D755D", "none": "#E7E7E7"}
KIND_NAMES = {"full_attention": "full attention", "sliding_attention": "sliding window", "chunked_attention":
              "chunked local", "mla": "MLA (latent)", "mla_dsa": "MLA + DSA indexer", "dsa": "DSA",
              "mamba": "Mamba (recurrent)", "linear_attention": "linear attention (recurrent)",
              "short_conv": "short convolution", "state": "recurrent state (measured)", "none": "no cache"}
MLP_COLORS = {"MoE": "#B279A2", "dense MLP": "#BAB0AC", "no MLP": "#F2F2F2"}
NEUTRAL = "#8C8C8C"


def layer_cells(layers: Sequence, kv_dtype_bytes: int, state_dtype_bytes: int, mtp_layers: Sequence = ()) -> list[dict]:
    """One dict per decoder layer: its cache kind, MLP kind, KV bytes per token (TP 1, vLLM convention),
    recurrent state bytes per sequence and window. Nothing is computed but what the layer spec says.
    ``mtp_layers``: the multi-token-prediction layers the plan loads, appended after the decoder (``mtp`` True):
    Qwen3.5-27B's 64 layers + 1 MTP layer give cells 0-63 and 64."""
    out = []
    for i, layer in enumerate([*layers, *mtp_layers]):
        cache = layer.cache
        kind = str(getattr(cache, "kind", "unknown"))
        try:
            per_token = cache.elems_per_token("vllm", 1) * kv_dtype_bytes
        except Exception:  # a kind from another module without this method: shown, not priced
            per_token = None
        try:
            state = cache.state_bytes("vllm", 1, state_dtype_bytes)
        except Exception:
            state = None
        if layer.experts is not None:
            mlp = "MoE"
            mlp_text = f"MoE: {layer.experts.num_experts} experts, top-{layer.experts.num_experts_per_tok}"
        elif layer.mlp:
            mlp, mlp_text = "dense MLP", "dense MLP"
        else:
            mlp, mlp_text = "no MLP", "no MLP"
        out.append(dict(layer=i, kind=kind, mlp=mlp, mlp_text=mlp_text, kv_bytes_per_token=per_token,
                        state_bytes=state, window=getattr(cache, "window", None), mtp=i >= len(layers)))
    return out


def layer_strip(cells: Sequence[dict], kv_dtype: str) -> Figure:
    """The decoder as a strip: one cell per layer, top row its cache kind, bottom row MoE / dense MLP.

    Hover: the layer, its kind, KV bytes per token of that layer (window or state noted)."""
    traces = []
    for kind in dict.fromkeys(c["kind"] for c in cells):
        rows = [c for c in cells if c["kind"] == kind]
        traces.append(_bar(
            name=KIND_NAMES.get(kind, kind), x=[c["layer"] for c in rows], y=[0.9] * len(rows), base=[1.0] * len(rows),
            marker=dict(color=KIND_COLORS.get(kind, NEUTRAL), line=dict(color="white", width=0.5)),
            customdata=[_cell_text(c, kv_dtype) for c in rows], hovertemplate="%{customdata}<extra></extra>",
            legendgroup="cache", width=0.95))
    for mlp in dict.fromkeys(c["mlp"] for c in cells):
        rows = [c for c in cells if c["mlp"] == mlp]
        traces.append(_bar(
            name=mlp, x=[c["layer"] for c in rows], y=[0.9] * len(rows), base=[0.0] * len(rows),
            marker=dict(color=MLP_COLORS.get(mlp, NEUTRAL), line=dict(color="white", width=0.5)),
            customdata=[f"layer {c['layer']}: {c['mlp_text']}" for c in rows],
            hovertemplate="%{customdata}<extra></extra>", legendgroup="mlp", width=0.95))
    n = len(cells)
    n_mtp = sum(1 for c in cells if c.get("mtp"))
    title = f"The decoder, layer by layer ({n - n_mtp} layers): cache kind (top), MLP (bottom)"
    shapes = []
    if n_mtp:  # the MTP layers after the decoder, framed and named above their cells
        title = (f"The decoder, layer by layer ({n - n_mtp} layers + {counted(n_mtp, 'MTP layer')} for speculative "
                 "decoding): cache kind (top), MLP (bottom)")
        shapes = [(dict(type="rect", xref="x", yref="y", x0=n - n_mtp - 0.5, x1=n - 0.5, y0=-0.03, y1=1.93,
                        line=dict(color="#333333", width=1.5, dash="dot"), fillcolor="rgba(0,0,0,0)"),
                   dict(x=n - n_mtp / 2 - 0.5, y=1.93, xref="x", yref="y", text="MTP", showarrow=False,
                        yanchor="bottom", font=dict(size=11)))]
    return figure(traces, title, shapes,
                  barmode="overlay", bargap=0.05, height=230,
                  xaxis=dict(title=dict(text="layer"), range=[-0.6, n - 0.4] if n else None),
                  yaxis=dict(tickvals=[0.45, 1.45], ticktext=["MLP", "cache"], range=[-0.05, 1.95], fixedrange=True),
                  legend=dict(orientation="h", y=-0.45), margin=dict(l=10, r=10, t=40, b=10))


def _cell_text(c: dict, kv_dtype: str) -> str:
    kind = KIND_NAMES.get(c["kind"], c["kind"])
    parts = [f"layer {c['layer']}: {'MTP draft layer (--speculative-config), ' if c.get('mtp') else ''}{kind}"]
    if c["kv_bytes_per_token"] is None:
        parts.append("bytes not known to this page")
    elif c["kv_bytes_per_token"]:
        parts.append(f"{c['kv_bytes_per_token']:,} B KV per token ({kv_dtype})")
    if c["window"]:
        parts.append(f"keeps the last {c['window']:,} tokens")
    if c["state_bytes"]:
        parts.append(f"{c['state_bytes']:,} B state per sequence")
    if c["kv_bytes_per_token"] == 0 and not c["state_bytes"]:
        parts.append("no per-token cache")
    return "<br>".join(parts)
