"""Rendering for the Validate page: pure figure / table builders over a validation result, and ``render``.

The result is the dict ``kvplan.validate.measure.run_validation`` (or ``hf_local.run_hf_validation``)
returns. Nothing here imports torch; the builders are plain functions tests can call.
"""

import json

import plotly.graph_objects as go
import streamlit as st

from kvplan.units import MiB, format_bytes, format_value
from kvplan.web import views

PHASE_COLORS = {"setup": "#7f7f7f", "static": "#1f77b4", "paged": "#2ca02c", "check": "#9467bd", "end": "#7f7f7f"}


def table_rows(result: dict) -> list[dict[str, str]]:
    """The predicted-vs-measured rows: quantity, predicted, measured, check, note (all strings, each figure
    with its unit: bytes as 'B (GiB)', times in ms)."""
    rows = []
    for r in result["rows"]:
        if r["ok"] is not None:
            if r["ok"]:
                check = "equal" if r["exact"] else "pass"
            else:
                check = "DIFFERS" if r["exact"] else "FAIL"
        elif r.get("error_pct") is not None:
            check = f"{r['error_pct']:+.1f}%"
        else:
            check = ""
        rows.append({"quantity": r["quantity"], "predicted": format_value(r["predicted"], r["unit"]),
                     "measured": format_value(r["measured"], r["unit"]), "check": check, "note": r.get("note", "")})
    return rows


TABLE_COLUMNS = [
    views.Col("quantity", "quantity", "What is compared: bytes the plan predicts and the run holds, or a time."),
    views.Col("predicted", "predicted (plan)", "kvplan's number for this run's model, batch, lengths and dtype, "
              "with its unit.", True),
    views.Col("measured", "measured (this run)", "What the run held or took: bytes of the tensors, "
              "torch.cuda memory counters on a GPU, wall time.", True),
    views.Col("check", "check", "equal / DIFFERS: exact figures (bytes); pass / FAIL: a bound or tolerance; "
              "+x.x%: measured against predicted for an estimate."),
    views.Col("note", "note", "How the figure was taken, or why it may differ."),
]


def _int(v) -> str | None:
    return None if v is None else f"{int(v):,}"


def _pair(predicted, measured) -> str | None:
    """'12 / 12': predicted / measured, or the one given."""
    if predicted is None and measured is None:
        return None
    return f"{_int(predicted) or '-'} / {_int(measured) or '-'}"


def steps_rows(result: dict) -> list[dict[str, str | None]]:
    """Per call (prefill = step 0, then each decode step), static and paged: KV predicted vs measured, as formatted
    strings (thousands separators, MiB to 0.1, ms to 0.01); blocks and wasted slots as 'predicted / measured' pairs
    (SGLang-style static caches have none: empty)."""
    rows = []
    for s in result.get("steps", []):
        kv_p, kv_m = s.get("kv_predicted"), s.get("kv_measured")
        rows.append({
            "cache": s["phase"], "step": f"{s['step']}", "tokens": _int(s["tokens"]),
            "kv_predicted": _int(kv_p), "kv_measured": _int(kv_m),
            "equal": "" if kv_p is None or kv_m is None else "equal" if kv_p == kv_m else "DIFFERS",
            "blocks": _pair(s.get("blocks_predicted"), s.get("blocks_measured")),
            "wasted": _pair(s.get("wasted_predicted"), s.get("wasted_measured")),
            "allocated": None if s.get("allocated_bytes") is None else f"{s['allocated_bytes'] / MiB:,.1f}",
            "peak": None if s.get("peak_bytes") is None else f"{s['peak_bytes'] / MiB:,.1f}",
            "time": None if s.get("seconds") is None else f"{s['seconds'] * 1e3:,.2f}",
        })
    return rows


STEPS_COLUMNS = [
    views.Col("cache", "cache", "static: one buffer per layer preallocated for the whole length (windows as "
              "rings); paged: a block pool and one block table per sequence, as vLLM pages it."),
    views.Col("step", "step", "0 is the prefill; then one decode step (one new token per sequence) each.", True),
    views.Col("tokens", "tokens / sequence", "Tokens each sequence holds after this call.", True),
    views.Col("kv_predicted", "KV predicted (B)", "Bytes of KV the plan says these tokens take.", True),
    views.Col("kv_measured", "KV measured (B)", "Bytes the cache holds for these tokens after the call (static: "
              "the slots in use; paged: every allocated slot, tail slots of the last block included).", True),
    views.Col("equal", "KV check", "equal when predicted and measured bytes are the same integer."),
    views.Col("blocks", "blocks (predicted / measured)", "KV blocks allocated across the batch (paged cache "
              "only): the plan's paging against the run's block allocator.", True),
    views.Col("wasted", "wasted slots (predicted / measured)", "Token slots allocated but empty: the tail of each "
              "sequence's last block.", True),
    views.Col("allocated", "allocated (MiB)", "Memory allocated after the call: torch.cuda.memory_allocated on a "
              "GPU; on a CPU the run's own tensors (weights, cache) and the live storages it tracks.", True),
    views.Col("peak", "peak (MiB)", "Highest allocation during the call (GPU: torch's peak counter; CPU: the "
              "storage tracker, on the prefill and the first and last decode steps only).", True),
    views.Col("time", "time (ms)", "Wall time of the call (CPU: one thread; a CPU step timed with the tracker "
              "on runs slower).", True),
]


def memory_timeline_figure(result: dict) -> go.Figure:
    """Allocated bytes after each step of the run (line) and the peak during it (markers), in MiB.

    The dashed line is the predicted peak of the prefill (weights + static cache + workspace estimate).
    """
    points = result.get("timeline", [])
    labels = [p["label"] for p in points]
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=labels, y=[p["allocated_bytes"] / MiB for p in points], mode="lines+markers", name="allocated",
        marker=dict(color=[PHASE_COLORS.get(p["phase"], "#333") for p in points], size=8),
        line=dict(color="#1f77b4"), hovertemplate="%{x}: %{y:,.1f} MiB allocated<extra></extra>"))
    peaks = [(p["label"], p["peak_bytes"] / MiB) for p in points if p.get("peak_bytes") is not None]
    if peaks:
        fig.add_trace(go.Scatter(x=[x for x, _ in peaks], y=[y for _, y in peaks], mode="markers",
                                 name="peak during step",
                                 marker=dict(symbol="triangle-up", size=10, color="#d62728"),
                                 hovertemplate="%{x}: peak %{y:,.1f} MiB<extra></extra>"))
    predicted = result.get("predicted", {}).get("peak_prefill_bytes")
    if predicted and labels:
        fig.add_trace(go.Scatter(x=[labels[0], labels[-1]], y=[predicted / MiB] * 2, mode="lines",
                                 name="predicted peak (prefill)", line=dict(dash="dash", color="#ff7f0e")))
    fig.update_layout(title="Memory timeline", xaxis_title="step", yaxis_title="MiB", height=380,
                      margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", y=-0.3))
    return fig


def _vs_plan(measured, predicted) -> str:
    return " = plan" if measured == predicted else " ≠ plan"


def summary(result: dict) -> dict[str, str]:
    """Headline figures for metric tiles."""
    p, m = result["predicted"], result["measured"]
    out = {
        "weights": format_bytes(m["weight_bytes"]) + _vs_plan(m["weight_bytes"], p["weight_bytes"]),
        "KV (in use)": format_bytes(m["kv_bytes"]) + _vs_plan(m["kv_bytes"], p["kv_bytes"]),
    }
    if result.get("logits_rel_err") is not None:
        out["logits error"] = f"{result['logits_rel_err']:.2g} ({'pass' if result['logits_ok'] else 'FAIL'})"
    if m.get("decode_s_per_step"):
        out["decode / step"] = f"{m['decode_s_per_step'] * 1e3:,.2f} ms"
    return out


def render(result: dict) -> None:
    """The whole result: headline, reduced-copy warning, table, timeline, per-step table, notes, JSON."""
    red = result.get("reduction", {})
    st.subheader(f"{result['model']} on {result['device']} ({result['dtype']})")
    if result.get("ok"):
        st.success("Every exact figure matches the plan and the cache check passed.")
    else:
        st.error("Something differs from the plan or the cache check failed; see the table.")
    if red.get("reduced"):
        st.warning(f"Ran a {red['description']}. Per-layer numbers were measured on it; full-model figures "
                   "below are **extrapolated** and labelled so.")
    if not result.get("gpu_timings"):
        st.info("CPU host: GPU timings are not available. Times are raw CPU times on one thread; no roofline.")
    metrics = views.row()
    for label, value in summary(result).items():
        metrics.metric(label, value)
    views.html_table(table_rows(result), TABLE_COLUMNS)
    if result.get("timeline"):
        st.plotly_chart(memory_timeline_figure(result), key="validate.timeline")
    with st.expander("Per step"):
        views.html_table(steps_rows(result), STEPS_COLUMNS)
    for note in result.get("notes", []):
        st.caption(note)
    st.download_button("Download JSON", json.dumps(result, indent=2, default=str), file_name="kvplan-validate.json",
                       mime="application/json")
