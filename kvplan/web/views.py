"""Render helpers: kvplan results -> Streamlit elements. Tables are built by pure functions (tested).

Text that comes from a config, a link or a command line is shown escaped: ``esc`` for Markdown,
``html.escape`` in the app's own HTML tables (``html_table``: every column on screen, long text
wrapped, help on the headings); never as HTML of its own.
"""

import csv
import hashlib
import html
import io
import math
import re
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from typing import Any

import pyarrow as pa
import streamlit as st

from kvplan.engines import VLLM_PROFILES
from kvplan.errors import KvplanError, PlanInputError
from kvplan.families.deepseek_v4 import DSV41_MODEL_TYPES
from kvplan.gpus import get_gpu
from kvplan.hf_config import QUANT_NAME_HINT
from kvplan.kv import kv_bytes_per_token, state_bytes_per_sequence
from kvplan.layers import MLA_KINDS, STATE_KINDS

LATENT_KINDS = ("mla", "mla_dsa")  # kinds that cache an MLA latent (kv_lora_rank + qk_rope_head_dim)
from kvplan.paging import Paging
from kvplan.params import ParamBreakdown
from kvplan.parallel import Layout
from kvplan.plan import DP_MOE_NOTE_RE, Plan, context_refusal, unsized_moe_backend_note
from kvplan.spec import ModelSpec
from kvplan.support import on_gaudi
from kvplan.units import GiB, format_bytes
from kvplan.vllm_args import VllmArgs, preset_for_model, quantization_flag_format
from kvplan.vllm_v0 import V0_WATERMARK
from kvplan.weights import WeightBytes
from kvplan.web import cached, figures, formulas
from kvplan.web.state import BY_NAME, DEFAULT, PlanState

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~$:])")


def esc(text: Any) -> str:
    """Text safe inside st.markdown and friends: every Markdown/HTML/LaTeX control character escaped."""
    return _MD_SPECIAL.sub(r"\\\1", str(text))


def gib(n: int | float) -> str:
    return f"{n / GiB:,.2f} GiB"


def table(rows: list[dict[str, Any]], **kwargs: Any) -> None:
    """A list of row dicts as an interactive table.

    Handed to Streamlit as an Arrow table: a list of dicts goes through pandas first, which costs
    3.6 ms for a 9-row table against 0.5 ms from Arrow (bench: rerun time of every page)."""
    st.dataframe(pa.Table.from_pylist(rows), hide_index=True, width="stretch", **kwargs)


class Col:
    """One column of an HTML table: the row key, its heading (words a vLLM user knows), the help
    shown on hovering the heading, whether it holds numbers (right-aligned, never wrapped) and whether its text is
    a name never to break (a GPU: "A100-40GB", not "A100-" over "40GB")."""

    __slots__ = ("key", "heading", "help", "num", "nowrap")

    def __init__(self, key: str, heading: str | None = None, help: str = "", num: bool = False,
                 nowrap: bool = False):
        self.key, self.heading, self.help, self.num, self.nowrap = key, heading or key, help, num, nowrap


# One stylesheet for the app's tables and metrics, sent once per run (a style-only st.html goes to the
# event container: it takes no room on the page). Tables wrap long text instead of clipping it, and a
# metric wraps its value instead of cutting it to "292.39 ..."; the share link's copy button (a code
# block's toolbar, shown only on hover by default) is always visible.
CSS = """<style>
.kv-table-wrap{width:100%;overflow-x:auto;margin-bottom:0.5rem}
table.kv-table{width:100%;border-collapse:collapse;font-size:0.875rem;line-height:1.35}
table.kv-table th,table.kv-table td{padding:0.3rem 0.5rem;border-bottom:1px solid rgba(49,51,63,0.12);
 text-align:left;vertical-align:top;overflow-wrap:break-word}
table.kv-table th{font-weight:600;background:rgba(49,51,63,0.04)}
table.kv-table th[title]{text-decoration:underline dotted;cursor:help}
table.kv-table td.num,table.kv-table th.num{text-align:right;font-variant-numeric:tabular-nums}
table.kv-table td.num,table.kv-table td.nw{white-space:nowrap}
[data-testid="stMetricValue"] *,[data-testid="stMetricLabel"] *{white-space:normal !important;
 overflow:visible !important;text-overflow:clip !important;overflow-wrap:break-word}
[data-testid="stMetricValue"]{font-size:1.6rem !important;line-height:1.2}
[data-testid="stCode"] div:has([data-testid="stElementToolbarButton"]),
[data-testid="stCode"] div:has([data-testid="stElementToolbarButton"]) *{opacity:1 !important;visibility:visible !important}
</style>"""


def style() -> None:
    st.html(CSS)


def html_table(rows: list[dict[str, Any]], columns: list[Col], caption: str | None = None) -> None:
    """Rows as a static HTML table (every column on screen, long text wrapped, help on the headings).

    Cells are escaped; None shows as an empty cell. Cheaper per rerun than an interactive
    st.dataframe, and nothing is hidden behind a horizontal scrollbar."""
    st.html(table_html(rows, columns, caption))


def table_html(rows: list[dict[str, Any]], columns: list[Col], caption: str | None = None) -> str:
    head = "".join(f'<th{_cls(c)}{_title(c)} scope="col">{html.escape(c.heading)}</th>' for c in columns)
    body = "".join("<tr>" + "".join(f"<td{_cls(c)}>{_cell(r.get(c.key))}</td>" for c in columns) + "</tr>"
                   for r in rows)
    cap = f"<caption style=\"caption-side:bottom;text-align:left;font-size:0.8rem;opacity:0.7\">" \
          f"{html.escape(caption)}</caption>" if caption else ""
    return f'<div class="kv-table-wrap"><table class="kv-table">{cap}<thead><tr>{head}</tr></thead>' \
           f"<tbody>{body}</tbody></table></div>"


def _cls(c: Col) -> str:
    return ' class="num"' if c.num else ' class="nw"' if c.nowrap else ""


def _title(c: Col) -> str:
    return f' title="{html.escape(c.help, quote=True)}"' if c.help else ""


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return html.escape(str(value))


def row(**kwargs: Any):
    """A row of side-by-side elements of equal width (metrics, small inputs).

    One horizontal container rather than ``st.columns``: Streamlit sends every block of a page as a
    message of its own on every rerun (a wake-up of the server's event loop, a websocket frame, a
    parse in the browser), and ``st.columns(n)`` is n + 1 blocks where this is one. The Budget page
    had 26 blocks for 37 elements (a bare page of 37 elements plus 27 blocks: +10 ms a rerun)."""
    return st.container(horizontal=True, gap="small", **kwargs)


def replayed(section: str, draw: Callable[[], None], *key: Hashable) -> None:
    """Run ``draw()``, a section of a page that holds no widget, or replay what it drew the last time the
    same section was drawn for the same ``key``.

    ``key``: everything the section shows is a function of: ``cached.state_key(state)`` (every input of
    the plan) and whatever else the section reads (a refusal at the top of the page, a toggle's value).
    A Streamlit cache records the elements a cached function draws and replays their messages on a hit, so
    a rerun that shows a plan again (a value changed back, another user's same link, a widget that does
    not change this section) skips building the elements: kvplan's formatting, plotly's JSON of every
    chart, Streamlit's proto and element id of each; their messages are still sent (bench/before_after.py:
    a Budget rerun 26.9 -> 24.7 ms, GPUs 33.7 -> 29.0, Model 36.8 -> 31.5 on a loaded 2-core machine).
    Bounded (``max_entries`` per process, least recently used out). A widget inside ``draw`` would be
    refused by Streamlit (a cached widget is not a widget); keep them outside.

    The hit is kept cheap: ``st.cache_resource``, not ``st.cache_data``, so a hit reads the recorded element
    protos in place instead of unpickling them (every proto of the section, 0.5-0.6 ms a hit here: a replay
    only copies each proto into its message, it never changes them), and the whole key is one digest string,
    so Streamlit hashes one short argument instead of walking tuples (its ``_make_value_key`` took 0.7 ms a
    hit for the page links' key of every link parameter). The digest is of ``repr`` of plain values
    (strings, numbers, bools and tuples of them: every caller's key is), which is stable across runs.
    bench/rerun_cpu.py, 2026-12-01 (load 5-8): script-thread CPU of a rerun 15.6 -> 13.3 ms on Budget, 14.2 ->
    12.8 on GPUs, 17.9 -> 14.2 on Model (every page 8-21 % less)."""
    digest = hashlib.blake2b(repr((section, key)).encode(), digest_size=16).hexdigest()
    _replay(digest, _draw=draw)


@st.cache_resource(max_entries=512, show_spinner=False)
def _replay(digest: str, _draw: Callable[[], None]) -> None:
    _draw()


def chart(fig, key: str) -> None:
    st.plotly_chart(fig, key=key, width="stretch", config={"displaylogo": False})


def error(exc: KvplanError, engine: str = "vllm") -> None:
    """The core's refusal, its field named as ``engine`` names it (``field_name``)."""
    st.error(f"**{esc(field_name(exc.field, engine))}**: {esc(exc.message)}", icon=":material/error:")


def layout_caption(state: PlanState) -> str:
    n = Layout(state.tensor_parallel_size, state.pipeline_parallel_size, state.data_parallel_size).gpus
    return f"{n:,} GPU{'s' if n != 1 else ''}: TP {state.tensor_parallel_size} x PP {state.pipeline_parallel_size} " \
           f"x DP {state.data_parallel_size}"


def bullet_list(items: Iterable[str], kind: str = "info") -> None:
    items = list(items)
    if items:
        getattr(st, kind)("\n".join(f"- {esc(i)}" for i in items))


# ----------------------------------------------------------------------------- model page

def spec_rows(spec: ModelSpec) -> list[dict[str, str]]:
    """What the config says, field by field (config.json names)."""
    kinds = ", ".join(f"{n} {k}" for k, n in spec.layer_kinds.items())
    windows = sorted({layer.cache.window for layer in spec.layers if layer.cache.window})
    mla = next((layer.cache for layer in spec.layers if layer.cache.kind in LATENT_KINDS), None)
    experts = next((layer.experts for layer in spec.layers if layer.experts is not None), None)
    rows = [
        ("model_type", spec.model_type or "(none)"),
        ("num_hidden_layers", f"{spec.num_hidden_layers}"),
        ("layer kinds", kinds),
        ("hidden_size", f"{spec.hidden_size:,}"),
        ("num_attention_heads", f"{spec.num_attention_heads}"),
        ("num_key_value_heads", f"{spec.num_key_value_heads} ({_attention_kind(spec)})"),
        ("head_dim", f"{spec.head_dim}"),
        *_per_kind_geometry(spec),
        ("sliding window / chunk", ", ".join(f"{w:,}" for w in windows) if windows else "none"),
        ("MLA latent (kv_lora_rank + qk_rope_head_dim)",
         f"{mla.kv_lora_rank} + {mla.qk_rope_head_dim} = {mla.latent_dim}" if mla else "no MLA"),
        ("MoE experts (routed, per token)",
         f"{experts.num_experts}, top-{experts.num_experts_per_tok}" if experts else "dense"),
        ("vocab_size", f"{spec.vocab_size:,}"),
        ("max_position_embeddings",
         f"{spec.max_position_embeddings:,}" if spec.max_position_embeddings else "not given"),
        ("tie_word_embeddings", str(spec.tie_word_embeddings).lower()),
        ("dtype", spec.dtype),
        ("quantization", spec.quantization or "none"),
    ]
    return [{"field": k, "value": v} for k, v in rows]


def _per_kind_geometry(spec: ModelSpec) -> list[tuple[str, str]]:
    """One row when layer kinds cache different shapes (Gemma-4's full layers: 512-dim heads; MiMo's
    sliding layers: twice the KV heads; KV-sharing layers: nothing of their own)."""
    shapes: dict[str, set[str]] = {}
    for layer in spec.layers:
        c = layer.cache
        if hasattr(c, "num_key_value_heads"):
            shapes.setdefault(c.kind, set()).add(f"{c.num_key_value_heads} x ({c.head_dim} + {c.v_head_dim})")
        elif c.kind == "none" and layer.attention:
            shapes.setdefault("KV-sharing (reuse an earlier layer's cache)", set()).add("nothing")
    flat = {v for vs in shapes.values() for v in vs}
    if len(shapes) < 2 or len(flat) < 2:
        return []
    return [("KV heads x (K + V head dim), by kind",
             "; ".join(f"{k}: {', '.join(sorted(v))}" for k, v in shapes.items()))]


SPEC_COLUMNS = [Col("field", "config.json field", "The key in the model's config.json (or what kvplan reads from it)."),
                Col("value", "value", "As the config says it; derived values are listed under 'assumed'.")]
DERIVED_COLUMNS = [Col("value", "quantity"), Col("number", "value", "Exact integers: parameters, bytes (B)."),
                   Col("note", "how it is counted")]


def _attention_kind(spec: ModelSpec) -> str:
    if any(layer.cache.kind in LATENT_KINDS for layer in spec.layers):
        return "MLA: one latent per token"
    if any(layer.cache.kind in MLA_KINDS for layer in spec.layers):
        return "MQA: one shared K=V head, sliding window + compressed entries"
    if spec.num_key_value_heads == 1:
        return "MQA"
    if spec.num_key_value_heads == spec.num_attention_heads:
        return "MHA"
    return f"GQA, {spec.num_attention_heads // spec.num_key_value_heads} query heads per KV head"


def dsv41_kv_row(spec: ModelSpec, kv_dtype: str) -> tuple[str, str, str]:
    """The Model page's KV row of a DeepSeek-V4.1 spec: the pool bytes a token of context takes in vLLM 0.33 - 0.34's
    packed fp8_ds_mla layout (kvplan.vllm_dsv41.context_bytes_per_token) on SM 9.0 and SM 10.x; a KV dtype vLLM's
    V4.1 attention does not store says so. V4.1-Flash: "1,797.75 B (SM 9.0) / 1,650 B (SM 10.x)"."""
    from kvplan.vllm_dsv41 import VLLM_DSV41_BLOCK_SIZE, context_bytes_per_token

    name = f"KV cache per token (vLLM 0.33 - 0.34, --kv-cache-dtype {kv_dtype})"
    if kv_dtype not in ("auto", "fp8", "fp8_e4m3", "fp8_ds_mla"):
        return name, "—", ("vLLM's DeepSeek-V4.1 attention stores the packed fp8_ds_mla cache only (--kv-cache-dtype "
                           "auto or fp8)")
    hopper, blackwell = context_bytes_per_token(spec), context_bytes_per_token(spec, sm100=True)
    return (name, f"{hopper:,.2f} B (SM 9.0) / {blackwell:,.2f} B (SM 10.x)",
            f"the kv-source layers' compressed KV and indexer keys, one {VLLM_DSV41_BLOCK_SIZE}-token block's pages "
            "over its tokens, TP=1 (every rank keeps them all); each layer's sliding window (fixed pages a request) "
            "and the compressor rings (one block a request) do not grow with the context")


def derived_rows(spec: ModelSpec, params: ParamBreakdown, weights: WeightBytes, kv_dtype: str) -> list[dict[str, str]]:
    """What kvplan derives from the config: parameters, weight bytes, KV bytes per token, state."""
    per_token = kv_bytes_per_token(spec, kv_dtype)
    state = state_bytes_per_sequence(spec)
    kv_row = (f"KV cache per token ({kv_dtype})", f"{per_token:,} B ({format_bytes(per_token)})",
              "all attention layers, windows ignored, TP=1")
    if spec.model_type in DSV41_MODEL_TYPES:  # vLLM's own packed pages (kvplan.vllm_dsv41), not the generic rule
        kv_row = dsv41_kv_row(spec, kv_dtype)
    rows = [
        # a vision / audio tower is left out of these counts (skipped_notes says so under the table): "every weight
        # tensor" beside Qwen3-VL-8B's 8,190,735,360 (its 1,152,776,672 B vision tower, Budget's row, not in it) misled
        ("total parameters", f"{params.total_params:,}", "exact sum over every weight tensor" + (
            " of the language model (not its vision / audio towers: below)" if spec.towers else
            " kvplan counts (not the parts listed below)" if spec.skipped else "")),
        ("active parameters per token", f"{params.active_params:,}",
         "MoE: top-k experts only" if params.num_experts else "dense: all"),
        (f"weights in {weights.format}", f"{weights.total_bytes:,} B ({gib(weights.total_bytes)})",
         f"{weights.bytes_per_param:.4f} B per parameter, scales included"),
        kv_row,
    ]
    if state:
        rows.append(("recurrent state per sequence", f"{state:,} B ({format_bytes(state)})",
                     "Mamba / linear-attention layers, independent of length"))
    return [{"value": k, "number": v, "note": n} for k, v, n in rows]


def served_rows(state: PlanState, spec: ModelSpec) -> list[dict[str, str]]:
    """The Model page's rows for a float32 checkpoint the engine serves in 16 bits (``--dtype auto``: vLLM's
    "Downcast for float32 models", SGLang's float16 / bfloat16; kvplan.plan.vllm_auto_dtype): the weights and KV
    per token the Budget plans. Without them the page said "weights in fp32: 34.43 GiB" for Gemma-2-9B beside a
    Budget of 17.22 GiB. None when the engine keeps the checkpoint's dtype or a weight format is chosen."""
    from kvplan.plan import served_dtype

    try:
        engine = cached.engine_config(state)
    except KvplanError:
        return []
    served = served_dtype(spec, engine)
    if served is None or served == spec.dtype or state.weight_format is not None:
        return []
    _, weights = cached.model_numbers(state.model_copy(update={"weight_format": served}))
    who = state_engine_text(state)
    rows = [{"value": f"weights as {who} loads them ({served})",
             "number": f"{weights.total_bytes:,} B ({gib(weights.total_bytes)})",
             "note": f"--dtype auto serves this {spec.dtype} checkpoint in {served}: the Budget plans these bytes"}]
    if state.kv_cache_dtype == "auto":  # the KV cache's auto dtype follows the served one
        per_token = kv_bytes_per_token(spec, served)
        rows.append({"value": f"KV cache per token as served ({served})",
                     "number": f"{per_token:,} B ({format_bytes(per_token)})",
                     "note": "--kv-cache-dtype auto follows the served dtype, TP=1"})
    return rows


def mtp_rows(state: PlanState, spec: ModelSpec) -> list[dict[str, str]]:
    """The Model page's row for the KV per token with the MTP layers the plan loads (``mtp_loaded``): their attention
    joins the KV cache, so Parallelism's "KV bytes / token / GPU" read 69,632 for Qwen3.5-27B with MTP at TP 1 beside
    this page's 65,536 (16 full-attention layers x 4 KV heads x 256 x 2 (K, V) x 2 B; its MTP layer adds 4,096)."""
    if not spec.mtp_layers or not mtp_loaded(state):
        return []
    with_mtp = spec.model_copy(update={"layers": (*spec.layers, *spec.mtp_layers)})
    try:
        per_token = kv_bytes_per_token(with_mtp, state.kv_cache_dtype)
    except Exception:  # a KV dtype kvplan cannot size for this model is refused on the plan pages
        return []
    return [{"value": f"KV cache per token with the MTP " + ("layer" if len(spec.mtp_layers) == 1 else "layers")
                       + f" ({state.kv_cache_dtype})",
             "number": f"{per_token:,} B ({format_bytes(per_token)})",
             "note": f"+ {figures.counted(len(spec.mtp_layers), 'MTP layer')} {mtp_flag(state.engine)} loads, TP=1"}]


def param_rows(params: ParamBreakdown, weights: WeightBytes) -> list[dict[str, str]]:
    return [{"component": c, "parameters": f"{n:,}", "bytes": f"{weights.components.get(c, 0):,}",
             "GiB": f"{weights.components.get(c, 0) / GiB:,.2f}"} for c, n in params.components.items() if n]


def param_columns(weights: WeightBytes) -> list[Col]:
    return [Col("component", "component"), Col("parameters", "parameters", "Exact count (transformers' numel).", True),
            Col("bytes", f"bytes ({weights.format})", "Weight bytes on the GPU in this format, scales included.",
                True),
            Col("GiB", "GiB", "The same bytes / 2^30.", True)]


# ----------------------------------------------------------------------------- plan

def engine_text(engine: str, version: str = "") -> str:
    """The engine and the release line planned, as a reader names them: "vLLM 0.33", "vLLM 0.7 (V0 engine)",
    "SGLang 0.5.20", "the custom engine". A bare "engine vllm" named neither the release whose accounting the
    numbers follow nor, for 0.6 - 0.9, that it is the V0 engine."""
    if engine == "vllm":
        profile = VLLM_PROFILES.get(version)
        return f"vLLM {profile.label if profile is not None else version}".rstrip()
    if engine == "sglang":
        return f"SGLang {version}".rstrip()
    return "the custom engine"


def state_engine_text(state: PlanState) -> str:
    """``engine_text`` of a state's engine and its release line (the sidebar's Engine knobs)."""
    return engine_text(state.engine, {"vllm": state.vllm_version, "sglang": state.sglang_version}.get(state.engine, ""))


def plan_caption(plan: Plan) -> str:
    """One line naming what the plan is of; 'Last valid plan' while an input is refused (see
    ``widgets.refusals``), so a refused input is never read as the plan on screen."""
    from kvplan.web import widgets

    head = "Last valid plan (an input above is refused): " if widgets.refusals() else ""
    return (f"{head}{esc(plan.model)}{basis_tag(plan.basis)} on {plan.num_gpus} x {plan.gpu} "
            f"({figures.counted(plan.num_nodes, 'node')}), {esc(engine_text(plan.engine, plan.engine_version))}, context "
            f"{plan.max_model_len:,} tokens, {'page' if plan.engine == 'sglang' else 'block'} size {plan.block_size}")


def startup_log(plan: Plan) -> None:
    """The start-up lines the engine prints for this plan, in its own words (Plan.engine_log: vLLM's "Model loading
    took", "Available KV cache memory", "GPU KV cache size", "num_gpu_blocks is"; SGLang's "Load weight end",
    "KV Cache is allocated"), and the error it stops with (Plan.start_error): what to compare with a real log."""
    if not plan.engine_log and not plan.start_error:
        return
    name = engine_text(plan.engine, plan.engine_version)
    st.subheader(f"What {name} logs at start-up")
    if plan.load_oom_rank is not None:  # the core's "Does not load": loading the weights runs out of memory first
        over = plan.ranks[plan.load_oom_rank]
        st.caption(f"No start-up figures: the weights of one GPU ({gib(over.weights_bytes)}) are more than its memory "
                   f"free when loading starts ({gib(plan.load_free_bytes)} of {gib(over.device_bytes)}), so "
                   f"{esc(name)} runs out of memory while loading them, before it logs any of its memory figures.")
        return
    runner = plan.model_runner
    # vllm-gaudi runs its own HPU model runner: "the V2 GPU model runner" was named above its hpu_worker lines (qa8)
    hpu = any(t.name.startswith("reserved for HPUGraphs") for t in plan.ranks[0].terms) if plan.ranks else False
    st.caption("The tightest rank's figures, as the engine prints them"
               + (" (vllm-gaudi's HPU model runner and worker, the plugin vLLM runs on an Intel Gaudi)" if hpu else
                  f" (the {runner} GPU model runner, this release's default for {esc(plan.model)})" if runner else "")
               + "; the terms below are where each comes from."
               + (" SGLang's GB is 2^30 bytes." if plan.engine == "sglang" else ""))
    # kvplan's own figures after the engine's error ("(kvplan: 7.33 GiB needed ..., 6.57 GiB free)") are not the
    # engine's words: under the log, not in it
    error, _, note = (plan.start_error or "").partition(" (kvplan: ")
    st.code("\n".join([*plan.engine_log, *([error] if error else [])]), language=None, wrap_lines=True)
    if note:
        st.caption(f"kvplan: {esc(note.removesuffix(')'))}.")


def basis_tag(basis: str) -> str:
    return {"generic": " (generic-decoder estimate)", "transformers": " (built with transformers)"}.get(basis, "")


def verdict_word(plan: Plan) -> str:
    """The verdict in two or three words, as the verdict's own first words say it: "fits", "does not fit", "does not
    start" (the sampler warm-up runs out of memory) or "does not load" (one GPU's weights exceed its memory)."""
    if plan.fits:
        return "does not start" if context_refusal(plan) else "fits"
    head = plan.verdict.split(":", 1)[0].strip().lower()
    return head if head in ("does not start", "does not load") else "does not fit"


NO_FIGURE = "—"  # a figure the engine never reaches (no KV pool is sized): not a measured 0


def concurrency_text(plan: Plan) -> str:
    """The max concurrency tile / cell: vLLM's own format for a vLLM plan (its log's "Maximum concurrency for N
    tokens per request: 4.22x", rounded to 2 decimals); SGLang logs no such figure, so kvplan's is cut, not rounded,
    to 2 decimals: DeepSeek-V3 on 8 x H200, SGLang 0.5.21: 655,268 / 163,840 = 3.9995 reads 3.99x, not 4.00x beside
    "Fits: 3 sequences"."""
    if plan.engine == "vllm":
        return f"{plan.max_concurrency:,.2f}x"
    return f"{math.floor(plan.max_concurrency * 100) / 100:,.2f}x"


def no_pool_reason(plan: Plan) -> str | None:
    """Why the engine never sizes a KV pool for ``plan`` (so its concurrency, tokens and blocks are no figures at all,
    not zeros): the weights of one GPU do not load, or the weights and workspace leave no pool; None when it does.
    Llama-3.1-70B on one H100: "does not load: the weights of one GPU are 131.45 GiB, more than the 78.68 GiB free
    when loading starts; no KV pool is sized" (the tiles read 0.00x / 0 / 0 before, as if measured)."""
    if plan.load_oom_rank is not None:
        over = plan.ranks[plan.load_oom_rank]
        return (f"does not load: the weights of one GPU are {gib(over.weights_bytes)}, more than the "
                f"{gib(plan.load_free_bytes)} free when loading starts; no KV pool is sized")
    worst = min(plan.ranks, key=lambda r: r.kv_pool_bytes) if plan.ranks else None
    if worst is not None and worst.kv_pool_bytes <= 0:
        return (f"no KV pool: the weights and workspace of one GPU leave none ({pool_text(worst.kv_pool_bytes)}), so "
                "the engine sizes no cache")
    return None


def plan_metrics(plan: Plan) -> None:
    metrics = row()
    metrics.metric("Verdict", verdict_word(plan))
    none = no_pool_reason(plan)
    unit = paging_unit_of(plan)
    metrics.metric("Max concurrency", NO_FIGURE if none else concurrency_text(plan),
                   help=f"Not a figure: {none}." if none else
                   f"KV cache tokens / {plan.max_model_len:,} (SGLang logs no concurrency)"
                   if plan.engine == "sglang" else f"vLLM's 'Maximum concurrency for {plan.max_model_len:,} tokens per "
                                                   "request': KV blocks / blocks one request of max_model_len takes")
    metrics.metric("KV cache tokens", NO_FIGURE if none else f"{plan.kv_cache_tokens:,}",
                   help=f"Not a figure: {none}." if none else
                   ("SGLang's '#tokens'" if plan.engine == "sglang" else "vLLM's 'GPU KV cache size'") + ": "
                   + (formulas.TOKENS_WORDS[formulas.tokens_rule(plan)] if plan.engine != "sglang" else
                      formulas.TOKENS_WORDS[formulas.tokens_rule(plan)].replace("block", "page")))
    metrics.metric(f"KV {unit}s", NO_FIGURE if none else f"{plan.num_blocks:,}",
                   help=f"Not a figure: {none}." if none else f"{unit} size {plan.block_size}, min over ranks")


def tokens_note(plan: Plan) -> str | None:
    """Why 'KV cache tokens' (the engine's logged pool figure) and 'fits up to N tokens' (the longest one
    request) differ, with the count the first one is (``formulas.tokens_rule``) and the reason that applies
    to this plan's KV groups: recurrent state (a fixed page per request), windows, or whole blocks."""
    starts = plan.max_model_len_that_starts
    if not starts or starts == plan.kv_cache_tokens:
        return None
    gap = plan.kv_cache_tokens - starts
    kinds = {g.kind for g in plan.kv_groups}
    v0 = plan.engine == "vllm" and VLLM_PROFILES.get(plan.engine_version) is not None and \
        VLLM_PROFILES[plan.engine_version].engine_core == "V0"
    if v0 and gap > 0:  # V0 has no null block: its block manager keeps a watermark of blocks free (vllm_v0.capacity)
        why = (f"{gap:,} tokens fewer: the V0 block manager keeps {gap // plan.block_size:,} blocks "
               f"({V0_WATERMARK:.0%} of them) free as its watermark, which no prompt may take")
    elif plan.engine == "vllm" and gap == plan.block_size:
        why = (f"{gap:,} tokens fewer: vLLM keeps one block ({plan.block_size} tokens) as its null block, which no "
               "request can use")
    elif gap > 0:
        why = (f"{gap:,} tokens fewer: a request takes whole blocks in every KV group, and vLLM keeps one block "
               "as its null block")
    elif kinds & set(STATE_KINDS):
        why = (f"{-gap:,} tokens more: the recurrent-state layers (Mamba / linear attention) take the same state "
               "pages whatever a request's length, so one long request fits more tokens than concurrency x "
               "context counts")
    elif kinds & {"sliding_attention", "chunked_attention"}:
        why = (f"{-gap:,} tokens more: sliding-window / chunked layers keep only their window, so one request "
               "can outgrow the pool's token count")
    else:
        unit = paging_unit_of(plan)
        why = (f"{-gap:,} tokens more: the logged figure counts whole requests of max_model_len, each rounded "
               f"up to whole {unit}s; one request uses its {unit}s to the last slot")
    said = {"sglang": "as SGLang logs it ('KV Cache is allocated. #tokens')",
            "vllm": "as vLLM logs it ('GPU KV cache size')"}.get(plan.engine, "as kvplan counts it (custom engine)")
    rule = formulas.TOKENS_WORDS[formulas.tokens_rule(plan)]
    # past the context planned, it is a --max-model-len the memory would allow, not a request this plan admits
    beyond = f" (as {engine_flag('max_model_len', plan.engine)}: this plan serves up to {plan.max_model_len:,})" \
        if starts > plan.max_model_len else ""
    return (f"**KV cache tokens** ({plan.kv_cache_tokens:,}) is the pool {said}: {rule}. "
            f"**Fits up to {starts:,} tokens** is the longest single request that can start{beyond}; {why}.")


def verdict(plan: Plan) -> None:
    text = esc(plan.verdict)
    if plan.basis == "generic":
        text = "**Estimate (generic decoder, not exact).** " + text
    elif plan.basis == "transformers":
        text = "**Built with transformers.** " + text
    refused = context_refusal(plan)  # memory would hold it, but the engine refuses the context itself
    if refused and plan.fits:
        text = (f"**Does not start**: {esc(refused)}. In memory alone: " + text)
    (st.success if plan.fits and not refused else st.error)(text)
    if plan.suggestions:
        st.markdown("**Fixes that fit** (each was planned):\n" + "\n".join(f"- {esc(s)}" for s in plan.suggestions))
    # A generic / transformers-built spec's note is in plan.warnings (the CLI prints it) and, in the app, already at
    # the top of every page (widgets.show_basis): not a second time under the verdict.
    from kvplan.web import widgets

    try:
        note = cached.spec(widgets.current()).basis_note if plan.basis != "native" else ""
    except (KvplanError, ValueError):
        note = ""
    bullet_list([w for w in plan.warnings if (not note or w != note) and not (refused and plan.fits and w == refused)],
                "warning")


def plan_headline(plan: Plan) -> None:
    """The top of a drawn plan (Budget, Import): its caption, the metric tiles, the verdict with fixes and warnings."""
    st.caption(plan_caption(plan))
    plan_metrics(plan)
    verdict(plan)


# When kvplan's checked fixes (fp8 KV, --max-num-seqs, --gpu-memory-utilization, TP within a node, a larger GPU, a
# shorter --max-model-len; kvplan.plan._suggestions) all fail: the page pointed to "a fix above" that was not there.
NO_FIX = ("No single fix kvplan checks fits (fp8 KV, the engine's memory flags, a shorter context, fp8 weights, TP up to "
          "a node and PP over two, a larger GPU): more GPUs (TP x PP) over more nodes or a smaller weight format are left "
          "to try.")


def no_pool_note(plan: Plan, first: int, last: int) -> str:
    """The Budget's sentence in place of the concurrency chart when no context from ``first`` to ``last`` tokens
    leaves a KV pool."""
    fix = "The fixes above, or a larger GPU / more TP, make room." if plan.suggestions else NO_FIX
    return (f"No chart: not one sequence fits at any context from {first:,} to {last:,} tokens on this layout (the "
            f"weights and workspace leave no KV pool). {fix}")


def decode_read_text(untied: bool, experts: str | None = None) -> str:
    """What the decode roofline (``kvplan.plan.decode_bound``) reads per step, in words: one text for the Budget's
    'Tokens/s (ceiling)' help and the GPUs table's 'tokens/s bound' help (the GPUs one left the untied input table
    out, so the two pages described one bound two ways). ``untied``: the model has its own lm_head, so the step
    reads the input-embedding table's batch rows only; ``experts``: the routed experts a MoE layer reads ("8", or
    "k" where the count depends on the layout), None for a dense model.
    Example: decode_read_text(True, None) -> "the rank's weights but its untied input-embedding table (...), and each
    layer's KV ..."."""
    text = "the rank's weights" + (" but its untied input-embedding table (a step reads only its batch's rows)"
                                   if untied else "")
    if experts:
        text += f"{',' if untied else ''} with {experts} routed experts per MoE layer (k: the fewest a step reads),"
    return text + (" and each layer's KV over the tokens it attends (sliding / chunked layers their window, DSA layers "
                   "their top-k, recurrent layers their state), read once per step")


def decode_bound(plan: Plan, spec=None) -> None:
    """The decode roofline, only for a plan that fits (a plan that does not fit decodes nothing): the ceiling
    (``kvplan.plan.decode_bound``'s upper bound: k routed experts per MoE layer, each layer's KV over the tokens it
    attends) and, for a MoE model, the estimate at uniform routing; for a model whose step reads less still
    (the bound's ``overcounts``), it says the figure is no upper bound."""
    st.subheader("Decode ceiling (roofline)")
    bound = plan.decode
    if bound is None and plan.fits and spec is not None and spec.model_type in DSV41_MODEL_TYPES:
        from kvplan.plan import V41_NO_DECODE

        st.caption(V41_NO_DECODE)
        return
    if bound is None or not plan.fits:
        st.caption("No decode ceiling: this plan does not fit, so it decodes nothing. "
                   + ("A fix above that fits has one." if plan.suggestions else NO_FIX))
        return
    moe = bound.experts_read_least > 0
    untied = spec is not None and bool(spec.lm_head)  # decode_bound leaves the input table out (batch rows only)
    read = decode_read_text(untied, f"{bound.experts_read_least:,.0f}" if moe else None)
    basis = read + ("; this model reads less still, so it is no upper bound" if not bound.upper_bound
                    else "; an upper bound, not a forecast")
    metrics = row()
    metrics.metric("Tokens/s (ceiling)", f"{bound.tokens_per_s:,.0f}",
                   help=f"{figures.sequences(bound.batch)} at {bound.context:,} tokens: {basis}")
    if moe:
        metrics.metric("Tokens/s at uniform routing", f"{bound.expected_tokens_per_s:,.0f}",
                       help=f"An estimate, not a bound: each MoE layer reads {bound.experts_read_expected:,.1f} "
                            "distinct experts, E x (1 - (1 - k/E)^B) for B tokens routed uniformly (between "
                            f"{bound.experts_read_least:,.0f} and {bound.experts_read_most:,.0f}); a skewed router "
                            "reads fewer")
    metrics.metric("Bound by", bound.bound)
    metrics.metric("Read / step", gib(bound.bytes_per_step),
                   help="Bytes read from GPU memory per decode step at the ceiling" + (
                       f"; {gib(bound.expected_bytes_per_step)} at uniform routing" if moe else "")
                   + f"; of it KV / state {gib(bound.kv_bytes_per_step)}")
    st.caption(f"At {figures.sequences(bound.batch)} of {bound.context:,} tokens." + (
        f" The ceiling reads {bound.experts_read_least:,.0f} experts per MoE layer, the estimate "
        f"{bound.experts_read_expected:,.1f} (uniform routing)." if moe else ""))
    if not bound.upper_bound:
        st.caption("Not an upper bound for this model: Read / step counts " + "; and ".join(bound.overcounts)
                   + ", so a real decode step reads less and can run faster than this figure.")


def term_rows(plan: Plan) -> list[dict[str, str]]:
    rows = []
    for r in plan.ranks:
        for t in r.terms:
            basis = t.basis
            if plan.basis == "generic" and basis == "exact":  # exact sums of an estimated model are an estimate
                basis = "estimate (generic decoder)"
            rows.append({"stage": str(r.pp_stage), "term": t.name, "bytes": f"{t.bytes:,}",
                         "GiB": f"{t.bytes / GiB:.2f}", "basis": basis + ("" if t.applied else ", not subtracted"),
                         "source": t.source})
        rows.append({"stage": str(r.pp_stage), "term": "KV pool", "bytes": f"{r.kv_pool_bytes:,}",
                     "GiB": f"{r.kv_pool_bytes / GiB:.2f}", "basis": "derived",
                     "source": "what the terms above leave" + ("" if r.kv_pool_bytes >= 0 else
                                                               f": {pool_text(r.kv_pool_bytes)}")})
    return rows


def term_columns(plan: Plan) -> list[Col]:
    stage = [Col("stage", "PP stage", "Pipeline stage; the TP ranks of a stage hold the same.", True)] \
        if len(plan.ranks) > 1 else []
    return stage + [
        Col("term", "term", "One line of the budget of one GPU."),
        Col("GiB", "GiB", "bytes / 2^30", True),
        Col("basis", "basis", "exact: summed from the model's tensors; measured: read from the device or a log; "
                              "checkpoint headers: the safetensors headers' bytes; configured: a flag you set; "
                              "engine rule: the engine's own formula; "
                              "fitted: a formula fitted to public engine logs (its error in the source); estimated: "
                              "a typical value (the engine's profiler measures it); derived: computed from the "
                              "others; not subtracted: shown, already inside another term."),
        Col("source", "source", "Where the number comes from."),
        Col("bytes", "bytes", "Exact bytes.", True)]


def plan_rows(plan: Plan) -> list[tuple[str, str, str]]:
    """(section, name, value) rows of a plan, for the CSV download."""
    # the release line (a default one is in no input row: the CSV named "vllm" alone) and the start-up log as the
    # engine prints it, as the JSON download has them
    scalar = ("model", "basis", "gpu", "engine", "engine_version", "num_gpus", "num_nodes", "max_model_len", "block_size",
              "blocks_per_request", "num_blocks", "kv_cache_tokens", "max_concurrency", "max_num_seqs_at_len",
              "max_model_len_that_starts", "concurrency", "fits", "verdict", "start_error")
    rows = [("plan", name, str(getattr(plan, name))) for name in scalar]
    rows += [("layout", k, str(v)) for k, v in plan.layout.items()]
    for r in plan.ranks:
        stage = f"stage {r.pp_stage}"
        rows += [(stage, t.name, str(t.bytes)) for t in r.terms]
        rows += [(stage, name, str(getattr(r, name))) for name in
                 ("weights_bytes", "kv_heads", "kv_bytes_per_token", "kv_pool_bytes", "bytes_per_block", "num_blocks")]
    rows += [("engine log", str(i), line) for i, line in enumerate(plan.engine_log)]
    rows += [("suggestion", str(i), s) for i, s in enumerate(plan.suggestions)]
    rows += [("warning", str(i), w) for i, w in enumerate(plan.warnings)]
    return rows


def input_rows(state: PlanState) -> list[tuple[str, str, str]]:
    rows = []
    for name in PlanState.model_fields:
        value = getattr(state, name)
        if value != getattr(DEFAULT, name) and value is not None and name != "config":
            rows.append(("input", name, BY_NAME[name].format(value)))
    if state.config:
        rows.append(("input", "config", "(pasted config.json; see the JSON download)"))
    return rows


def plan_csv(state: PlanState) -> str:
    rows = input_rows(state)
    try:
        rows += plan_rows(cached.plan_for(state))
    except KvplanError as exc:
        rows.append(("error", exc.field, exc.message))
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(("section", "name", "value"))
    writer.writerows(rows)
    return buf.getvalue()


def towers_loaded(state: PlanState) -> bool | None:
    """Whether the state's plan loads the model's vision / audio towers (its 'vision tower (in weights)' term):
    not with vLLM's --language-model-only; SGLang has no such flag. None when the plan cannot be made."""
    try:
        plan = cached.plan_for(state)
    except KvplanError:
        return None
    return any(t.name.startswith("vision tower") for r in plan.ranks for t in r.terms)


def model_warnings(spec: ModelSpec, state: PlanState) -> list[str]:
    """The spec's warnings as the Model page shows them: the "name says FP8 but no quantization_config" hint dropped
    once the sidebar's Weights names a format, as the plan drops it (kvplan.plan; qa8: the Model page kept it after
    Weights = fp8, beside a Budget that had dropped it)."""
    if state.weight_format:
        return [w for w in spec.warnings if not w.endswith(QUANT_NAME_HINT)]
    return list(spec.warnings)


def quant_name_warning(state: PlanState) -> None:
    """The "name says FP8 but config.json has no quantization_config" warning (kvplan.hf_config
    quantized_name_without_config), as ``model_warnings`` keeps it, for the pages whose plan lists no warnings of
    its own: Paging, Parallelism, GPUs (Budget and Import list the plan's warnings, Model the spec's). Nothing
    when the spec cannot be read: the pages say why."""
    try:
        spec = cached.spec(state)
    except (KvplanError, ValueError):
        return
    bullet_list([w for w in model_warnings(spec, state) if w.endswith(QUANT_NAME_HINT)], "warning")


def moe_backend_warning(state: PlanState) -> None:
    """The plan's warning for a --moe-backend kvplan does not size (kvplan.plan.unsized_moe_backend_note: its MoE
    workspace is not in the activation peak, so the pool can be smaller), for the pages that list no plan warnings:
    Parallelism and GPUs (qa15: with DeepSeek-V4-Flash and deep_gemm_mega_moe only Budget said so, while GPUs ranked
    every layout at auto's workspace). Nothing for a V0 profile (its plans do not warn either), or when the spec or
    the knobs cannot be read (the pages say why)."""
    if state.engine != "vllm" or VLLM_PROFILES[state.vllm_version].engine_core == "V0":
        return
    try:
        # on the sidebar's GPU, as the plan warns: gpt-oss's MXFP4 experts are sized per GPU (triton on Hopper)
        note = unsized_moe_backend_note(cached.spec(state), cached.engine_config(state), state.gpu)
    except (KvplanError, ValueError):
        return
    if note and (refused := plan_refusal(state)) is not None and refused.field == "moe_backend":
        # vLLM refuses the typed backend (a GPTQ MoE on triton, 0.27+): the page names that refusal; "the pool can be
        # smaller than this plan says" beside it spoke of a plan there is not (ui1204: Parallelism said both)
        return
    bullet_list([note] if note else [], "warning")


def mtp_loaded(state: PlanState) -> bool:
    """Whether the state's plan loads the checkpoint's multi-token-prediction layers (its 'MTP layers (in weights)'
    term: vLLM's --speculative-config method mtp). False when the plan cannot be made."""
    try:
        plan = cached.plan_for(state)
    except KvplanError:
        return False
    return any(t.name.startswith("MTP layers") for r in plan.ranks for t in r.terms)


def mtp_flag(engine: str) -> str:
    """How ``engine``'s command line loads a checkpoint's MTP layers: vLLM's --speculative-config method mtp, SGLang's
    --speculative-algorithm NEXTN / EAGLE (kvplan.plan's MTP term says the same)."""
    return "--speculative-algorithm NEXTN / EAGLE" if engine == "sglang" else "--speculative-config method mtp"


def language_model_only_flag(state: PlanState) -> bool:
    """Whether the state's engine line has --language-model-only: vLLM (0.17.0+ as kvplan plans it), SGLang from
    0.5.18 (kvplan.sglang.LANGUAGE_MODEL_ONLY_FROM)."""
    from kvplan.sglang import LANGUAGE_MODEL_ONLY_FROM

    return state.engine == "vllm" or (state.engine == "sglang" and state.sglang_version in LANGUAGE_MODEL_ONLY_FROM)


def skipped_notes(spec: ModelSpec, loaded: bool | None = None, mtp: bool = False, engine: str = "vllm",
                  lmo: bool = True) -> list[str]:
    """What the Model page's counts leave out. A vision / audio tower is left out of the decoder's counts but
    not out of the plan: the Budget loads its weights (its 'vision tower (in weights)' row), so it is not
    called 'not planned' there (that read as if the Budget ignored it). ``loaded``: whether the sidebar's plan
    loads them (``towers_loaded``); with --language-model-only it does not, and the note said it did. ``mtp``: whether
    the plan loads the MTP layers (``mtp_loaded``): then they are drawn after the decoder in the layer strip and
    planned (qa8: the page said "not planned" beside a Budget with an 'MTP layers' row)."""
    towers = " + ".join(t.name for t in spec.towers)
    out = []
    for item in spec.skipped:
        if towers and item in towers and loaded is False:
            out.append(f"not in these counts: {item}; not loaded either: --language-model-only is set (the Budget "
                       "has no vision tower row)")
        elif towers and item in towers:  # ``lmo``: the engine line has --language-model-only (SGLang from 0.5.18)
            out.append(f"not in these counts: {item}; the Budget loads its weights (vision tower row"
                       + ("; --language-model-only drops it)" if lmo else ")"))
        elif mtp and "multi-token-prediction" in item:
            out.append(f"not in these counts: {item.split(' (')[0]}; planned with {mtp_flag(engine)} "
                       "(drawn after the decoder in the strip above; the Budget's MTP layers row)")
        else:
            out.append(f"not planned: {item}")
    return out


def has_latent_cache(spec: ModelSpec) -> bool:
    return any(layer.cache.kind in LATENT_KINDS for layer in spec.layers)


def replication_notes(spec: ModelSpec, tp: int, engine: str = "vllm") -> list[str]:
    """What TP cannot split: KV heads replicated when tp > heads; the MLA latent on every rank. ``engine`` names whose
    rule it is: vLLM's and SGLang's get_num_kv_heads both return max(1, total_num_kv_heads // tensor_parallel_size)
    (vllm/config/model.py; sgl-project/sglang python/sglang/srt/configs/model_config.py)."""
    notes = []
    mla = next((layer.cache for layer in spec.layers if layer.cache.kind in LATENT_KINDS), None)
    if mla is not None:
        extra = " plus the DSA indexer key" if mla.kind == "mla_dsa" else ""
        notes.append(f"MLA: the latent cache (one {mla.latent_dim}"
                     f"-wide vector per token per layer{extra}) is not split by TP: each of the {figures.counted(tp, 'rank')} keeps "
                     "all of it, "
                     "so KV bytes per rank do not shrink as TP grows.")
    elif tp > spec.num_key_value_heads:
        who = "SGLang" if engine == "sglang" else "vLLM"
        notes.append(f"TP={tp} > {figures.counted(spec.num_key_value_heads, 'KV head')}: each rank keeps a whole KV "
                     f"head ({who} max(1, kv_heads // tp)), so every KV head is stored on "
                     f"{tp // spec.num_key_value_heads} ranks; the k/v projections are replicated the same way.")
    return notes


# ----------------------------------------------------------------------------- paging page

def block_size_for(state: PlanState) -> int | None:
    """The block size the plan uses (the engine's default when unset; the typed one, or the block vLLM replaces it with
    for a plain-MLA model, ``mla_block_replaced``). When the plan is refused (``plan_refusal``): the typed size, else
    None, since the engine's block is then not known (qa15: vLLM 0.34's default is 64, a DSA model's 64, DeepSeek-V4's
    256, and the former fallback 16 was shown as the plan's on Paging and Validate)."""
    try:
        plan = cached.plan_for(state)
        if not state.block_size or mla_block_replaced(state, plan, cached.spec(state)):
            return plan.block_size
    except KvplanError:
        return state.block_size
    return state.block_size


def plan_refusal(state: PlanState) -> KvplanError | None:
    """The core's refusal of the state's plan (vLLM 0.34, a DSA --block-size vLLM does not start, ...), or None when it
    plans. Paging and Validate draw no plan figures but read the plan's block size: they show this at the top."""
    try:
        cached.plan_for(state)
    except KvplanError as exc:
        return exc
    return None


def paging_unit(state: PlanState) -> str:
    """The engine's own word for its KV allocation unit: SGLang's pool is pages of --page-size tokens (its log says
    "page_size=64"), vLLM's and the custom profile's blocks of --block-size."""
    return "page" if state.engine == "sglang" else "block"


def no_block_size_text(unit: str = "block") -> str:
    """Paging's line where the plan is refused and no size is typed: no paging is drawn at a guessed size. Worked
    example: "block" -> "No block size to page at: the default one is the plan's, and the plan is refused (above).
    Choose a block_size to explore the paging arithmetic at that size; its bytes need a plan." """
    flag = "page_size" if unit == "page" else "block_size"
    return (f"No {unit} size to page at: the default one is the plan's, and the plan is refused (above). Choose a "
            f"{flag} to explore the paging arithmetic at that size; its bytes need a plan.")


def paging_unit_of(plan: Plan) -> str:
    """``paging_unit`` of a drawn plan (its engine)."""
    return "page" if plan.engine == "sglang" else "block"


# vLLM's MLA backends whose kernels take one block size only (v1/attention/backends/mla/*.py
# get_supported_kernel_block_sizes: FLASHMLA [64], CUTLASS_MLA [128]; FLASHINFER_MLA [32, 64], forced 64 in 0.15.0 - 0.17);
# FLASH_ATTN_MLA and TRITON_MLA take multiples of 16, so the default 16 stays
FIXED_MLA_BACKENDS = ("FLASHMLA", "CUTLASS_MLA", "FLASHINFER_MLA")


def _default_block_why(state: PlanState, plan: Plan, spec: ModelSpec) -> str:
    """Why ``plan`` (no --block-size typed) runs its block size, by the rule the core plans it with
    (kvplan.plan: vllm-gaudi 128, MiniMax-M3's 128, DeepSeek-V4's 256, DSA's 64, an MLA backend's own block, a hybrid's
    block grown to the state page, else DEFAULT_BLOCK_SIZE 16). A rule that does not give the plan's size is not
    named: the sentence then says only that it is vLLM's own choice (never a wrong reason)."""
    from kvplan.engines import (VLLM_BLOCK_SIZE, vllm_has, vllm_mla_block_size, vllm_mla_default,
                                vllm_sparse_mla_block_size)
    from kvplan.support import GAUDI_VLLM_BLOCK_SIZE, on_gaudi
    from kvplan.vllm_dsv4 import VLLM_DSV4_BLOCK_SIZE

    bs, version, gpu = plan.block_size, plan.engine_version, plan.gpu
    kinds = {layer.cache.kind for layer in spec.layers if layer.cache is not None}
    v0 = VLLM_PROFILES.get(state.vllm_version) is not None and VLLM_PROFILES[state.vllm_version].engine_core == "V0"
    if on_gaudi(get_gpu(gpu)) and bs == GAUDI_VLLM_BLOCK_SIZE:
        return f"vllm-gaudi's default block size ({GAUDI_VLLM_BLOCK_SIZE}) on {gpu}"
    if "indexed_attention" in kinds and bs == 128:
        return "the sparse attention's own page: its backend and indexer run 128-token pages only"
    if kinds == {"compressed_attention"} and bs == VLLM_DSV4_BLOCK_SIZE:
        return f"vLLM's DeepSeek-V4 attention runs {VLLM_DSV4_BLOCK_SIZE}-token blocks"
    if kinds == {"mla_dsa"} and bs == vllm_sparse_mla_block_size(gpu) != VLLM_BLOCK_SIZE:
        return (f"vLLM's sparse MLA (DSA) backends and their indexer run {bs}-token blocks on {gpu}, not the default "
                f"{VLLM_BLOCK_SIZE}")
    mla = [layer.cache for layer in spec.layers if layer.cache is not None and layer.cache.kind == "mla"]
    if mla and not v0:
        if kinds == {"mla"}:
            quantized, nope = _mla_args(state, spec)
            backend, default = vllm_mla_default(gpu, version, quantized, nope)
            if default == bs:
                where = f"vLLM {version}'s MLA attention backend on {gpu}{' with an fp8 KV cache' if quantized else ''}"
                forced = not vllm_has(version, "mla_backend_block_size")  # through 0.17: check_and_update_config
                if backend == "FLASH_ATTN_MLA" and bs != VLLM_BLOCK_SIZE and forced:
                    # 0.11.1 - 0.17: check_and_update_config forces FlashMLA's block on Hopper, then the selector
                    # picks FLASH_ATTN_MLA (kvplan.engines.vllm_mla_default)
                    return (f"vLLM {version} forces FlashMLA's {bs}-token blocks on {gpu} in place of the default "
                            f"{VLLM_BLOCK_SIZE}, then picks {backend}, which takes them")
                if backend == "FLASHINFER_MLA" and bs == 32:  # 0.18+: [32, 64], get_preferred_block_size -> 32
                    return (f"{where} is {backend}, whose kernels take 32 or 64 tokens a block, not the default "
                            f"{VLLM_BLOCK_SIZE}: it runs 32")
                if backend in FIXED_MLA_BACKENDS and bs != VLLM_BLOCK_SIZE:
                    return (f"{where} is {backend}, which forces {bs}-token blocks in place of the default "
                            f"{VLLM_BLOCK_SIZE}")
                return f"vLLM's default ({VLLM_BLOCK_SIZE}, DEFAULT_BLOCK_SIZE), which {backend}, {where}, takes"
        elif bs == vllm_mla_block_size(gpu) != VLLM_BLOCK_SIZE:
            return (f"vLLM's MLA attention backend on {gpu} forces {bs}-token blocks in place of the default "
                    f"{VLLM_BLOCK_SIZE}")
    if bs == VLLM_BLOCK_SIZE:
        return f"vLLM's default ({VLLM_BLOCK_SIZE}, DEFAULT_BLOCK_SIZE)"
    if bs > VLLM_BLOCK_SIZE and kinds & set(STATE_KINDS):
        return (f"vLLM's default {VLLM_BLOCK_SIZE}, grown so one attention block's bytes match the recurrent state's "
                "page (the hybrid KV-cache manager)")
    return f"vLLM {version}'s own choice for this model on {gpu}"


def mla_block_replaced(state: PlanState, plan: Plan, spec: ModelSpec):
    """What vLLM made of the typed --block-size of a plain-MLA or DSA model when the plan runs its replacement
    (kvplan.engines.vllm_mla_block_forced: 16 on an H200 at 0.11 -> 64 for FlashMLA; vllm_sparse_mla_block_forced:
    FlashMLASparse's 64); None when the plan runs the typed size, no size is typed, or another rule moved it (a
    hybrid's state-page alignment)."""
    from kvplan.engines import vllm_mla_block_forced, vllm_sparse_mla_block_forced

    typed = state.block_size
    if plan.engine != "vllm" or not typed or plan.block_size == typed:
        return None
    kinds = {layer.cache.kind for layer in spec.layers if layer.cache is not None}
    if kinds == {"mla_dsa"}:
        forced = vllm_sparse_mla_block_forced(typed, plan.gpu, plan.engine_version)
    elif kinds == {"mla"}:
        forced = vllm_mla_block_forced(typed, plan.gpu, plan.engine_version, *_mla_args(state, spec))
    else:
        return None
    return forced if forced.forced_for and forced.block_size == plan.block_size else None


def _mla_args(state: PlanState, spec: ModelSpec) -> tuple[bool, int]:
    """(1-byte KV cache, qk_nope_head_dim) of a plain-MLA ``spec``: what kvplan.engines.vllm_mla_default and
    vllm_mla_block_forced take."""
    from kvplan.kv import kv_dtype_bytes

    mla = next(layer.cache for layer in spec.layers if layer.cache is not None)
    return kv_dtype_bytes(spec, state.kv_cache_dtype or "auto") == 1, mla.qk_nope_head_dim


def block_size_why(state: PlanState) -> str | None:
    """The Paging page's sentence on the block (SGLang: page) size the plan runs and why: the backend's fixed size,
    the engine's default, or the typed --block-size / --page-size (the caption named the flag's choices only, and
    read as if every vLLM plan ran the typed size or 16, where DeepSeek-V3 on an H200 at 0.11 runs FlashMLA's 64).
    None when no plan can be made (the page shows that refusal)."""
    try:
        plan = cached.plan_for(state)
        spec = cached.spec(state)
    except KvplanError:
        return None
    bs, typed = plan.block_size, state.block_size
    unit = paging_unit(state)
    head = refused_head() + f"The plan runs {unit}s of {bs:,} token{'s' if bs != 1 else ''}: "
    if plan.engine == "sglang":
        kinds = {layer.cache.kind for layer in spec.layers if layer.cache is not None}
        if typed == bs:
            return head + f"the --page-size {typed} you set."
        if "mla_dsa" in kinds:
            return head + (f"SGLang sets page_size {bs} for DeepSeek sparse attention (DSA) models"
                           + (f", in place of your --page-size {typed}" if typed else "") + ".")
        if typed is None:
            return head + (f"SGLang's default --page-size ({bs})." if bs == 1 else
                           "SGLang's own page size for this model (--page-size not set).")
        return head + f"SGLang's own page size for this model, in place of your --page-size {typed}."
    if plan.engine != "vllm":
        return head + (f"the --block-size {typed} you set." if typed == bs else "the custom profile's default.")
    if typed is None:
        return head + _default_block_why(state, plan, spec) + "."
    if typed != bs:
        if forced := mla_block_replaced(state, plan, spec):
            return head + (f"vLLM {plan.engine_version} replaces --block-size {typed} with {bs} ({forced.forced_for} "
                           f"takes {forced.takes}: \"Forcing kv cache block size to {bs} for {forced.forced_for} "
                           "backend.\", platforms/cuda.py check_and_update_config); the plan's blocks and bytes "
                           f"per block are at {bs}.")
        if {layer.cache.kind for layer in spec.layers if layer.cache is not None} & set(STATE_KINDS):
            return head + (f"your --block-size {typed}, grown so one attention block's bytes match the recurrent "
                           "state's page (vLLM's hybrid KV-cache manager).")
        return head + f"vLLM's own rule for this model, in place of your --block-size {typed}."
    try:
        own = cached.plan_with(state, block_size=None)
    except KvplanError:
        return head + f"the --block-size {typed} you set."
    if own.block_size == typed:
        return head + f"the --block-size {typed} you set (also vLLM's own choice here)."
    return head + (f"the --block-size {typed} you set, as typed. Without it the plan runs {own.block_size:,}: "
                   + _default_block_why(state.model_copy(update={"block_size": None}), own, spec) + ".")


def paging_metrics(paging: Paging, unit: str = "block") -> None:
    metrics = row()
    metrics.metric("Sequences", f"{paging.num_sequences:,}")
    metrics.metric(f"{unit.capitalize()}s allocated", f"{paging.allocated_blocks:,}",
                   help=figures.counted(paging.shared_blocks, f"shared prefix {unit}") if paging.shared_blocks
                   else None)
    metrics.metric("Slots allocated", f"{paging.allocated_slots:,}")
    metrics.metric("Slots used", f"{paging.used_slots:,}", help=f"{paging.logical_tokens:,} tokens in all sequences")
    metrics.metric("Slots wasted", f"{paging.wasted_slots:,}", f"{paging.waste_fraction:.1%} of allocated",
                   delta_color="off", delta_arrow="off")


def refused_head() -> str:
    """"Last valid plan (an input is refused): " while an input is refused, else "": the head of a caption that
    reads figures from the plan (qa8: after a refused DeepSeek-V4.1 paste, Paging's bytes and GPUs' workload read
    llama-3.1-8b's figures with nothing under the banner saying they were the last valid plan's)."""
    from kvplan.web import widgets

    return "Last valid plan (an input is refused): " if widgets.refusals() else ""


def unpaged_pools_text(state: PlanState, plan, kinds: str, unit: str) -> str:
    """The Paging page's caption where no cache group pages as the page draws (no full-attention or latent group), in
    the engine's words. vLLM: its KV groups (the hybrid KV-cache manager). SGLang has no KV groups: DeepSeek-V4's
    cache is its DSV4 pools (kvplan.sglang_dsv4, DSV4PoolConfigurator: every layer's sliding-window pool at
    --swa-full-tokens-ratio of the full tokens, the CSA layers' compressed pool of 1 entry per 4 tokens and its
    indexer pool, the HCA layers' 1 per 128, the compressors' state rings), priced as one "full token" over all of
    them; another model's, the token-to-KV pool's cell over its layers. Worked example: DeepSeek-V4-Flash on SGLang
    (43 layers, 2 SWA-only, 21 CSA, 20 HCA) -> "SGLang keeps DeepSeek-V4's cache in its DSV4 pools, not in KV groups:
    ...". ``kinds``: the plan's cache groups by kind ("22 compressed_attention"); ``unit``: the page's word for a
    block."""
    if plan.engine != "sglang":
        return (f"The plan has {len(plan.kv_groups)} KV groups ({kinds}), none of them a full-attention group whose "
                f"{unit}s this page draws: their bytes are on the Budget page, not priced here.")
    layers = sum(g.layers for g in plan.kv_groups)
    try:
        dsv4 = cached.spec(state).model_type == "deepseek_v4"
    except KvplanError:
        dsv4 = False
    if dsv4:
        return (f"SGLang keeps DeepSeek-V4's cache in its DSV4 pools, not in KV groups: every one of the {layers} "
                "layers' sliding-window (SWA) pool, sized at --swa-full-tokens-ratio of the full tokens (0.1 by "
                "default), the CSA layers' compressed pool (one entry per 4 tokens) and indexer pool, the HCA layers' "
                "(one per 128) and the compressors' state rings, all priced as one \"full token\" "
                f"(DSV4PoolConfigurator). None of them holds a sequence's {unit}s as this page draws them: their "
                "bytes are on the Budget page, not priced here.")
    return (f"SGLang keeps this model's cache in its token-to-KV pool, one cell a token over its {layers} layers "
            f"({kinds}), not in KV groups; it holds no sequence's {unit}s as this page draws them: their bytes are "
            "on the Budget page, not priced here.")


def paging_bytes(state: PlanState, paging: Paging) -> None:
    """The allocation in bytes, at the plan's bytes per block (its tightest rank)."""
    try:
        plan = cached.plan_for(state)
    except KvplanError:
        return
    rank = min(plan.ranks, key=lambda r: r.num_blocks)
    head = refused_head()
    unit = paging_unit(state)
    if plan.block_size != paging.block_size:  # an SGLang plan too: its pool is pages of --page-size tokens (1 by default)
        st.caption(head + f"The plan pages KV in {unit}s of {plan.block_size:,} "
                   f"token{'s' if plan.block_size != 1 else ''} "
                   f"(this page: {paging.block_size:,}); bytes are shown only at the plan's size.")
        return
    others = [g.kind for g in plan.kv_groups if g.kind not in ("full_attention", *LATENT_KINDS)]
    if len(plan.kv_groups) <= 1 or not others:
        st.caption(head + f"At {rank.bytes_per_block:,} B per {unit} (tightest rank of the plan): "
                   f"{format_bytes(paging.allocated_blocks * rank.bytes_per_block)} allocated, "
                   f"{format_bytes(paging.wasted_slots * rank.bytes_per_block // paging.block_size)} of it in empty "
                   "slots.")
        return
    # A hybrid / sliding-window plan's block table is per KV group (vLLM's hybrid KV-cache manager): the counts above
    # page the full-attention group; every sequence holds blocks of the other groups too (a recurrent state's page, a
    # window's blocks). Their bytes read as the whole allocation (Qwen3.5-27B: 1 of 4 groups).
    kinds = ", ".join(f"{n} {k}" for k, n in Counter(g.kind for g in plan.kv_groups).items())
    main = [g.kind for g in plan.kv_groups if g.kind in ("full_attention", *LATENT_KINDS)]
    if not main:  # SGLang's DeepSeek-V4 (22 compressed_attention groups): no group pages as this page does
        st.caption(head + unpaged_pools_text(state, plan, kinds, unit))
        return
    allocated = format_bytes(paging.allocated_blocks * rank.bytes_per_block)
    empty = format_bytes(paging.wasted_slots * rank.bytes_per_block // paging.block_size)
    if plan.engine == "sglang":
        # SGLang prices a token at its cell size (profile_max_num_token: rest // cell_size): a hybrid SWA cell holds
        # the sliding layers' share at --swa-full-tokens-ratio (gpt-oss-20b: 12 x 2,048 + 0.8 x 12 x 2,048 = 44,236 B),
        # a recurrent state sits in the MambaPool, one slot a request (Qwen3.5-27B: 16 x 4,096 = 65,536 B)
        held = "; ".join(dict.fromkeys(
            "the recurrent states sit in SGLang's MambaPool, one slot a request, not counted here" if k in STATE_KINDS
            else "the sliding-window layers' pool is priced into each token's cell at --swa-full-tokens-ratio"
            if k in ("sliding_attention", "chunked_attention") else f"the {k} layers' pool is not counted here"
            for k in others))
        # SGLang has no KV groups (vLLM's hybrid allocator): its layers by kind (gpt-oss-20b: 12 sliding, 12 full);
        # a page of N tokens is N cells (it read "cell size for one token" beside 16-token pages' bytes)
        layers = ", ".join(f"{n} {k}" for k, n in Counter(
            k for g in plan.kv_groups for k in [g.kind] * g.layers).items())
        cell = "SGLang's cell size for one token" + (
            f" x {plan.block_size} tokens a page" if plan.block_size > 1 else "")
        st.caption(head + f"At {rank.bytes_per_block:,} B per {unit} ({cell}, tightest rank of the plan): {allocated} "
                   f"allocated, {empty} of it in empty slots. Its cached layers are {layers}: {held}.")
        return
    held = "; ".join(dict.fromkeys("a recurrent state: its state page" if k in STATE_KINDS else
                                   f"a sliding / chunked window: the window's {unit}s"
                                   if k in ("sliding_attention", "chunked_attention") else f"{k}: its own {unit}s"
                                   for k in others))
    group = "full-attention" if "full_attention" in main else "MLA"  # vLLM's DeepSeek-V4: 1 mla + 4 sliding groups
    st.caption(head + f"At {rank.bytes_per_block:,} B per {unit} (one KV group's {unit}, tightest rank of the plan): "
               f"the {group} group's {unit}s take {allocated}, {empty} of it in empty slots. The plan has "
               f"{len(plan.kv_groups)} KV groups ({kinds}); every sequence also holds {unit}s of the "
               f"{figures.counted(len(others), 'other')} ({held}), not counted here.")


# ----------------------------------------------------------------------------- parallelism page

STANDARD_LAYOUTS = tuple((tp, pp, 1) for pp in (1, 2, 4) for tp in (1, 2, 4, 8, 16)) + ((2, 1, 2), (4, 1, 2), (1, 1, 8))


def layout_text(layout: tuple[int, int, int]) -> str:
    return "x".join(map(str, layout))


def layout_tuple(text: str) -> tuple[int, int, int]:
    tp, pp, dp = (int(v) for v in text.split("x"))
    return tp, pp, dp


def layout_choices(state: PlanState) -> list[str]:
    mine = (state.tensor_parallel_size, state.pipeline_parallel_size, state.data_parallel_size)
    return [layout_text(t) for t in dict.fromkeys((mine, *state.layouts, *STANDARD_LAYOUTS))]


def compare_layouts(state: PlanState) -> tuple[list[Plan], list[tuple[str, str]]]:
    """Plans for each compared layout, and the layouts kvplan refuses (with the reason): layouts refused for the same
    reason share one entry ("TP1 PP1 DP1, TP2 PP1 DP1: ..."; a refusal of the model or engine read four times, once a
    layout, before)."""
    plans, refused = [], {}
    for tp, pp, dp in state.layouts:
        try:
            plans.append(cached.plan_with(state, tensor_parallel_size=tp, pipeline_parallel_size=pp,
                                          data_parallel_size=dp))
        except KvplanError as exc:
            said = f"{field_name(exc.field, state.engine)}: {exc.message}"  # SGLang's --tp-size, not vLLM's name
            refused.setdefault(said, []).append(f"TP{tp} PP{pp} DP{dp}")
    return plans, [(", ".join(labels), message) for message, labels in refused.items()]


def layout_rows(plans: list[Plan]) -> list[dict[str, Any]]:
    rows = []
    for p in plans:
        rank = min(p.ranks, key=lambda r: r.num_blocks)
        lay = p.layout
        engines = int(lay["data_parallel_size"]) * int(lay.get("dp_attention_size", 1))  # KV pools with own requests
        none = no_pool_reason(p)  # no pool is sized: its figures are no figures (not a measured 0.00x / 0)
        rows.append({
            "layout": figures.layout_label(p),
            "fits": verdict_word(p),  # "does not load" / "does not fit": why the pool columns read "—"
            "max concurrency per replica": NO_FIGURE if none else concurrency_text(p),
            # SGLang's attention-DP groups each hold their own pool and requests, as DP replicas do (the plan's
            # figures are per group: kvplan.plan's DP-attention warning); the column counted DP replicas only
            "sequences, all replicas": NO_FIGURE if none else f"{max(p.max_num_seqs_at_len, 0) * engines:,}",
            "GPUs": f"{p.num_gpus:,}", "nodes": f"{p.num_nodes:,}",
            "weights per GPU (GiB)": f"{rank.weights_bytes / GiB:,.2f}",
            "KV heads per GPU": f"{rank.kv_heads:,}", "KV bytes/token per GPU": f"{rank.kv_bytes_per_token:,}",
            "KV pool per GPU (GiB)": pool_text(rank.kv_pool_bytes),
            "KV blocks": NO_FIGURE if none else f"{p.num_blocks:,}",
        })
    return rows


def pool_text(kv_pool_bytes: int) -> str:
    """A rank's KV pool in GiB; a negative one (weights and workspace alone exceed what the engine may use) as what
    it is: "short by 501.00 GiB" (no KV pool), never a bare negative pool."""
    if kv_pool_bytes < 0:
        return f"short by {-kv_pool_bytes / GiB:,.2f} GiB"
    return f"{kv_pool_bytes / GiB:,.2f}"


LAYOUT_COLUMNS = [
    Col("layout", "layout", "--tensor-parallel-size x --pipeline-parallel-size x --data-parallel-size"),
    Col("fits", "fits", "Whether the sidebar's workload (context, concurrency) fits on every GPU of the layout."),
    Col("max concurrency per replica", "max concurrency", "vLLM's 'Maximum concurrency for N tokens per request': "
        "KV blocks / blocks one request of max_model_len takes, per engine (DP replica).", True),
    Col("sequences, all replicas", "sequences, all replicas", "Whole sequences of max_model_len that fit at once, "
        "summed over the DP replicas (and SGLang's attention-DP groups, each with its own KV pool).", True),
    Col("GPUs", "GPUs", "TP x PP x DP", True),
    Col("nodes", "nodes", "At the GPU's GPUs per node.", True),
    Col("weights per GPU (GiB)", "weights / GPU (GiB)", "Weight bytes on the tightest GPU.", True),
    Col("KV heads per GPU", "KV heads / GPU", "vLLM: max(1, num_key_value_heads // TP).", True),
    Col("KV bytes/token per GPU", "KV bytes / token / GPU", "Bytes one more token adds on one GPU, all its layers.",
        True),
    Col("KV pool per GPU (GiB)", "KV pool / GPU (GiB)", "Memory left for the KV cache on the tightest GPU; "
        "'short by X GiB' when the weights and workspace alone need X GiB more than the engine may use (no KV pool).",
        True),
    Col("KV blocks", "KV blocks", "vLLM's num_gpu_blocks: blocks of block_size tokens, per replica.", True),
]


SGLANG_LAYOUT_HELP = {
    "max concurrency per replica": "KV cache tokens (SGLang's '#tokens') / context_length, per engine (DP replica; "
                                   "with --enable-dp-attention, per attention-DP group); SGLang logs no concurrency.",
    "KV blocks": "SGLang's KV pool in pages of --page-size tokens (1 by default: the '#tokens' it logs), per replica.",
    "layout": "--tp-size x --pp-size x --dp-size",
    "sequences, all replicas": "Whole sequences of context_length that fit at once, summed over the DP replicas and "
                               "the attention-DP groups (each with its own KV pool).",
    # python/sglang/srt/configs/model_config.py get_num_kv_heads (sgl-project/sglang): the same division as vLLM's
    "KV heads per GPU": "SGLang: max(1, num_key_value_heads // TP) (ModelConfig.get_num_kv_heads)."}
SGLANG_LAYOUT_HEADINGS = {"KV blocks": "KV pages"}  # SGLang's pool is pages of --page-size tokens (paging_unit)


def layout_columns(engine: str) -> list[Col]:
    """The Parallelism table's columns; an SGLang plan's headings say SGLang's figures, not vLLM's log lines."""
    if engine != "sglang":
        return LAYOUT_COLUMNS
    return [Col(c.key, SGLANG_LAYOUT_HEADINGS.get(c.key, c.heading), SGLANG_LAYOUT_HELP.get(c.key, c.help), c.num)
            for c in LAYOUT_COLUMNS]


# ----------------------------------------------------------------------------- gpus page

def parse_prices(text: str) -> tuple[tuple[str, float], ...]:
    cleaned = ",".join(item.replace(" ", "") for item in text.split(",") if item.strip())
    return BY_NAME["prices"].parse(cleaned) if cleaned else ()


def _picker_base(state: PlanState) -> Plan:
    """The plan whose context the picker serves: at TP 1 (the context it plans does not depend on the layout), the
    knobs that must divide TP back to 1. When the engine refuses the model on the sidebar's GPU only (a "gpu"
    refusal: DeepSeek-V4.1 on a Hopper card; a "vllm_version" one that names the GPU: vLLM 0.34 on a B200, SM 10.x,
    with CUDA graphs), the first catalog GPU that plans it gives the context instead: the picker is where a user
    finds the GPUs that do serve it, so that refusal must not hide them (ui1203: gpt-oss-120b on B200 at 0.34 showed
    the refusal and no picker, though 0.34 plans it on H100 / H200). A refusal on every GPU (a DSA model at 0.34)
    is raised as it came."""
    from kvplan.gpus import GPU_CATALOG

    base = dict(tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=1, concurrency=None,
                decode_context_parallel_size=1, dp_attention_size=1, moe_dense_tp_size=None)
    try:
        return cached.plan_with(state, **base)
    except PlanInputError as exc:
        if exc.field not in ("gpu", "vllm_version"):
            raise
        for name in GPU_CATALOG:
            try:
                return cached.plan_with(state, gpu=name, **base)
            except KvplanError:
                continue
        raise


def picker_workload(state: PlanState) -> tuple[int, int]:
    """(max_model_len, concurrency) the picker plans: the sidebar's, the model's maximum, 1 sequence."""
    return _picker_base(state).max_model_len, state.concurrency or 1


def context_warnings(plans: list[Plan]) -> None:
    """A warning for each distinct context the engine refuses (kvplan.plan.context_refusal) among ``plans``: the
    Parallelism and GPUs pages rank memory for a context that does not start, and say so."""
    bullet_list(list(dict.fromkeys(r for p in plans if (r := context_refusal(p)))), "warning")


def dp_moe_warnings(plans: list[Plan]) -> None:
    """The plans' warning for a vLLM MoE layout at --data-parallel-size > 1 (kvplan.plan.vllm_dp_moe_note: the
    DP-gathered MoE step and the DP / EP communicators are not sized), once per distinct one: Parallelism lists no
    plan warnings, and its DP layouts' pools were ranked without it (ui1204)."""
    bullet_list(list(dict.fromkeys(w for p in plans for w in p.warnings if DP_MOE_NOTE_RE.match(w))), "warning")


def refused_plan_note(state: PlanState) -> None:
    """The sidebar's plan refusal, on a page that draws no plan (Model): named with its field as Budget names it, so
    a link whose plan is refused (wf=gptq-int4-g128&moe=triton) does not read as a plan that stands (ui1204)."""
    if (refused := plan_refusal(state)) is not None:
        st.error(f"The sidebar's plan is refused (the model's own figures below stand): "
                 f"**{esc(field_name(refused.field, state.engine))}**: {esc(refused.message)}", icon=":material/error:")


def picker_context_warning(state: PlanState) -> None:
    """context_warnings for the context the GPUs page's picker plans (its TP 1 base plan, memoized)."""
    try:
        context_warnings([_picker_base(state)])
    except KvplanError:
        pass  # the page names the refusal itself (picker_workload raises the same)


# ----------------------------------------------------------------------------- import page

def parse_command(text: str) -> str | None:
    return BY_NAME["command"].parse(text.strip()) if text.strip() else None


FLAG_NAMES = {"model": "model (positional)", "tensor_parallel_size": "--tensor-parallel-size",
              "pipeline_parallel_size": "--pipeline-parallel-size", "data_parallel_size": "--data-parallel-size",
              "enable_expert_parallel": "--enable-expert-parallel", "max_model_len": "--max-model-len",
              "gpu_memory_utilization": "--gpu-memory-utilization", "kv_cache_dtype": "--kv-cache-dtype",
              "block_size": "--block-size", "max_num_seqs": "--max-num-seqs",
              "max_num_batched_tokens": "--max-num-batched-tokens", "kv_cache_memory_bytes": "--kv-cache-memory-bytes",
              "enforce_eager": "--enforce-eager", "weight_format": "--quantization / --dtype"}
COMMAND_COLUMNS = [Col("flag", "flag", "The command's flag (vLLM's, or SGLang's for an SGLang line). Every "
                                       "flag listed is planned, and Apply carries it to the sidebar and the link."),
                   Col("value", "value", "As the command gives it; 'engine default' when it does not.")]
# The serving knobs a command sets (kvplan.web.cached.SERVING_KNOBS), as the Import table names them, per engine.
VLLM_KNOB_ROWS = {"decode_context_parallel_size": "--decode-context-parallel-size",
                  "disable_custom_all_reduce": "--disable-custom-all-reduce",
                  "sampler": "VLLM_USE_FLASHINFER_SAMPLER", "language_model_only": "--language-model-only",
                  "mm_encoder_tp_mode": "--mm-encoder-tp-mode", "speculative_method": "--speculative-config",
                  "enable_prefix_caching": "--enable-prefix-caching",
                  "mm_limits": "--limit-mm-per-prompt", "mm_processor_kwargs": "--mm-processor-kwargs",
                  "skip_mm_profiling": "--skip-mm-profiling", "model_runner": "VLLM_USE_V2_MODEL_RUNNER",
                  "cudagraph_mode": "--compilation-config cudagraph_mode", "moe_backend": "--moe-backend",
                  "triton_kernels": "vllm/vllm-openai image (triton_kernels)",
                  "vllm_graph_reserved_mem": "VLLM_GRAPH_RESERVED_MEM"}
SGLANG_KNOB_ROWS = {"speculative_method": "--speculative-algorithm",
                    "disable_custom_all_reduce": "--disable-custom-all-reduce",
                    "max_total_tokens": "--max-total-tokens", "dp_attention_size": "--enable-dp-attention --dp",
                    "moe_dense_tp_size": "--moe-dense-tp-size",
                    "piecewise_cuda_graph": "--enable- / --enforce- / --disable-piecewise-cuda-graph",
                    "enable_prefix_caching": "--disable-radix-cache",  # EngineConfig.enable_prefix_caching False
                    "mamba_full_memory_ratio": "--mamba-full-memory-ratio",
                    "max_mamba_cache_size": "--max-mamba-cache-size", "mamba_ssm_dtype": "--mamba-ssm-dtype",
                    "speculative_num_draft_tokens": "--speculative-num-draft-tokens",
                    "sglang_aiter_honor_explicit_mem_fraction": "SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION",
                    "swa_full_tokens_ratio": "--swa-full-tokens-ratio",
                    "disable_hybrid_swa_memory": "--disable-hybrid-swa-memory"}
# Knobs both engines plan that SGLang spells with a flag of its own: vLLM's spelling on an SGLang line is still unplanned.
SGLANG_OWN_SPELLING = ("enable_prefix_caching", "speculative_method")


# An SGLang line's table names SGLang's own flags (kvplan.web.commands.SGLANG_FLAGS read them as these fields);
# None: SGLang has no such flag (commands.py maps none onto it), so the row is left out.
SGLANG_FLAG_NAMES = {"model": "--model-path", "tensor_parallel_size": "--tp-size",
                     "pipeline_parallel_size": "--pp-size", "data_parallel_size": "--dp-size",
                     "enable_expert_parallel": "--ep-size / --enable-ep-moe", "max_model_len": "--context-length",
                     "gpu_memory_utilization": None, "kv_cache_dtype": "--kv-cache-dtype", "block_size": "--page-size",
                     "max_num_seqs": "--max-running-requests", "max_num_batched_tokens": None,
                     "kv_cache_memory_bytes": None, "enforce_eager": None, "weight_format": "--quantization / --dtype"}


def engine_flag(name: str, engine: str) -> str:
    """The command-line flag that sets field ``name`` (a PlanState / VllmArgs field of FLAG_NAMES) on ``engine``:
    SGLang's own (SGLANG_FLAG_NAMES) for "sglang", vLLM's for the others; a field SGLang has no flag for keeps
    vLLM's. Worked example: ("tensor_parallel_size", "sglang") -> "--tp-size"; ("max_model_len", "vllm") ->
    "--max-model-len"."""
    return (SGLANG_FLAG_NAMES.get(name) if engine == "sglang" else None) or FLAG_NAMES[name]


def context_field(engine: str) -> str:
    """The context length's field name in the engine's own words: SGLang's ServerArgs context_length, vLLM's (and
    kvplan's) max_model_len."""
    return "context_length" if engine == "sglang" else "max_model_len"


def field_name(field: str, engine: str) -> str:
    """A refusal's field as the page names it: on SGLang, a field SGLang sets with a flag of its own is named by that
    flag ("tensor_parallel_size" -> "--tp-size": SGLang has no tensor_parallel_size, its ServerArgs say tp_size);
    otherwise (and "model") as the core names it (vLLM's EngineArgs names, a config key, a flag)."""
    if engine == "sglang" and field != "model" and SGLANG_FLAG_NAMES.get(field):
        return SGLANG_FLAG_NAMES[field]
    return field


def _flag_value(name: str, value: Any) -> str:
    """A flag's value as the Import table shows it: switches as on / off (not Python's True / 1), bytes with GiB."""
    if value is None:
        return "engine default"
    if isinstance(value, bool):
        return "on" if value else "off"
    if name == "kv_cache_memory_bytes":
        return f"{value} B ({value / GiB:,.2f} GiB)"
    return str(value)


AUTO_DTYPE = "auto: the checkpoint's torch_dtype"


def auto_dtype(state: PlanState) -> str:
    """What ``--dtype auto`` (no --dtype, no --quantization) serves ``state``'s model in, for the Import table: the
    checkpoint's torch_dtype, a float32 one downcast (kvplan.plan.vllm_auto_dtype: vLLM takes the GPU's first 16-bit
    dtype, bfloat16 from sm80, as every catalog GPU is; V0 releases float16, bfloat16 for Gemma-2; SGLang float16,
    bfloat16 for Gemma), a quantized one as its quantization_config.
    Worked example: Llama-3.1-8B (bfloat16) -> "auto: the checkpoint's torch_dtype (bf16)"; gemma-2-9b (float32) on
    vLLM -> "auto: the checkpoint's torch_dtype fp32, served as bf16 (vLLM downcasts float32)"."""
    from kvplan.plan import served_dtype

    try:
        spec = cached.spec(state)
        engine = cached.engine_config(state)
    except KvplanError:
        return AUTO_DTYPE
    if spec.quantization is not None:
        return f"{AUTO_DTYPE} ({spec.dtype}), weights as its quantization_config ({spec.quantization})"
    served = served_dtype(spec, engine)
    if served is None or served == spec.dtype:
        return f"{AUTO_DTYPE} ({spec.dtype})"
    who = "SGLang" if engine.engine == "sglang" else "vLLM"
    if engine.engine == "vllm" and VLLM_PROFILES[engine.vllm_version].engine_core == "V0" and \
            spec.model_type != "gemma2":
        served = "fp16"  # V0 (0.6 - 0.9): float16 for float32 models, bfloat16 for Gemma-2 (the same 2 bytes planned)
    return f"{AUTO_DTYPE} {spec.dtype}, served as {served} ({who} downcasts float32)"


def speculative_text(method: str, given: str | None) -> str:
    """A --speculative-config method as the user typed it, and kvplan's reading of it where that differs.
    "qwen3_next_mtp" planned as "mtp" -> "qwen3_next_mtp (read as mtp)"; "eagle3" -> "eagle3"; none typed (named
    from the draft's repo) -> the method planned."""
    if not given or given == method:
        return method
    return f"{given} (read as {method})"


def vllm_rows(args: VllmArgs, command=None, auto: str = AUTO_DTYPE) -> list[dict[str, str]]:
    """The Import table: each flag kvplan plans and its value (``command``: the ``Command`` of ``args``; its
    engine decides which serving knobs are listed, vLLM's by default; ``auto``: what --dtype auto means for the model,
    ``auto_dtype``). An SGLang line is listed under SGLang's flag names, with its --mem-fraction-static (the figure
    its plan uses; vLLM's --gpu-memory-utilization is not)."""
    sglang = getattr(command, "engine", "vllm") == "sglang"
    knobs = knob_values(command if command is not None else args)
    rows = []
    for f in FLAG_NAMES:
        flag = SGLANG_FLAG_NAMES[f] if sglang else FLAG_NAMES[f]
        if flag is not None:
            value = _flag_value(f, getattr(args, f))
            if f == "weight_format" and getattr(args, f) in (None, "auto"):
                value = auto  # --dtype auto (or none given): not an "engine default" the reader cannot look up
            if sglang and f == "data_parallel_size" and knobs["dp_attention_size"] > 1:
                # --dp is --dp-size's alias: with --enable-dp-attention it splits attention inside the TP group, and
                # the row read "--dp-size 1" beside a typed "--dp 8"
                value += (f" replica (the --dp {knobs['dp_attention_size']} given is attention DP: "
                          "--enable-dp-attention, below)")
            rows.append({"flag": flag, "value": value})
        if sglang and f == "max_model_len":
            rows.append({"flag": "--mem-fraction-static",
                         "value": _flag_value("mem_fraction_static", getattr(command, "mem_fraction_static", None))})
    names = SGLANG_KNOB_ROWS if sglang else VLLM_KNOB_ROWS
    for name, flag in names.items():
        value = knobs[name]
        if value == getattr(DEFAULT, name) or (name == "speculative_method" and value == "none"):
            shown = "engine default"
        elif sglang and name == "enable_prefix_caching":  # the switch given: no radix cache
            shown = "given (no radix cache)"
        elif name == "speculative_method" and sglang:  # SGLang's spelling (kvplan.web.widgets.SGLANG_SPECULATIVE)
            # no --speculative-num-steps: SGLang's default, labelled; NGRAM's is derived, not the MTP families' 3
            from kvplan.web.commands import SGLANG_STEPS_DEFAULT_NOTE

            default = any(n.startswith(SGLANG_STEPS_DEFAULT_NOTE) for n in getattr(args, "notes", ()))
            shown = SGLANG_METHODS.get(value, value) + (
                ", steps: SGLang's default (draft tokens // ngram max BFS breadth, 1 with its defaults)"
                if default and value == "ngram" else
                f", {figures.counted(knobs['num_speculative_tokens'], 'step')}" + (" (default)" if default else "")) + (
                f", draft {'head' if value == 'eagle3' else 'model'} {knobs['drafter']}"
                if value in ("eagle3", "draft_model") and knobs.get("drafter") else "")
        elif name == "speculative_method":
            # draft_model's drafter is a smaller LM (a preset), not an EAGLE head: the row said "draft head llama-3.2-1b"
            kind = "draft model" if value == "draft_model" else "draft head"
            shown = f"{speculative_text(value, getattr(args, 'speculative_given', None))}, " \
                    f"{figures.counted(knobs['num_speculative_tokens'], 'token')}" + (
                f", {kind} {knobs['drafter']}" if knobs.get("drafter") else "")
        elif name == "triton_kernels":  # the image tag's: OpenAI's triton_kernels ships in vllm/vllm-openai
            shown = "installed (the image ships it)" if value else "not installed"
        elif isinstance(value, bool):
            shown = _flag_value(name, value)
        else:
            shown = BY_NAME[name].format(value)
        rows.append({"flag": flag, "value": shown})
    return rows


def knob_values(command) -> dict[str, Any]:
    """Every serving knob (kvplan.web.cached.SERVING_KNOBS) a command means: the ones its engine has, as given
    (the engine's default where not), the other engine's at their defaults. ``command``: a Command or VllmArgs."""
    args = getattr(command, "args", command)
    engine = getattr(command, "engine", "vllm")
    out = {name: getattr(DEFAULT, name) for name in cached.SERVING_KNOBS}
    if engine == "vllm":
        # getattr's default: a knob VllmArgs does not read (yet) keeps the engine's default
        out |= {name: getattr(args, name, getattr(DEFAULT, name)) for name in VLLM_KNOB_ROWS}
        if args.speculative_method != "none":
            out["num_speculative_tokens"] = args.num_speculative_tokens
        if args.draft is not None:  # an eagle / eagle3 head: the app carries the drafters kvplan ships, by name
            out["drafter"] = args.draft.name
    elif engine == "sglang":
        out["disable_custom_all_reduce"] = args.disable_custom_all_reduce
        out |= {name: getattr(command, name, None) or getattr(DEFAULT, name)
                for name in ("max_total_tokens", "dp_attention_size", "moe_dense_tp_size", "piecewise_cuda_graph",
                             "mamba_full_memory_ratio", "max_mamba_cache_size", "mamba_ssm_dtype",
                             "swa_full_tokens_ratio")}
        out["disable_hybrid_swa_memory"] = bool(getattr(command, "disable_hybrid_swa_memory", False))
        if getattr(command, "disable_radix_cache", False):
            out["enable_prefix_caching"] = False
        out["sglang_aiter_honor_explicit_mem_fraction"] = bool(
            getattr(command, "sglang_aiter_honor_explicit_mem_fraction", False))
        if getattr(command, "speculative_method", "none") != "none":  # --speculative-algorithm, --speculative-num-steps
            out["speculative_method"] = command.speculative_method
            out["num_speculative_tokens"] = command.num_speculative_tokens
            out["speculative_num_draft_tokens"] = getattr(command, "speculative_num_draft_tokens", None)
            if getattr(command, "drafter", None):  # EAGLE3's head (--speculative-draft-model-path), by name
                out["drafter"] = command.drafter
    return out


NOT_PLANNED = "not planned by the app (use the CLI)"
# SGLang's --speculative-algorithm values as the Import table shows them (kvplan.web.commands reads them)
SGLANG_METHODS = {"mtp": "NEXTN / EAGLE (MTP layers)", "ngram": "NGRAM", "eagle": "EAGLE (draft model)",
                  "eagle3": "EAGLE3", "draft_model": "STANDALONE"}
# An SGLang --speculative-* flag kvplan does not read (--speculative-draft-kv-cache-dtype, --speculative-token-map, ...)
SGLANG_SPECULATIVE = ("not planned: kvplan plans SGLang's NEXTN / EAGLE (MTP layers), EAGLE3 (a shipped head), "
                      "EAGLE (a head's config, CLI), STANDALONE (a preset draft LM) and NGRAM with the draft's "
                      "defaults, not this flag")


NOT_MODELED_MARK = ": not modeled"  # in a vllm_args note of a flag that changes memory the plan leaves out
# flags vllm_args reads but does not plan whose value changes the state / config bytes (the recurrent-state dtypes: an
# fp32 SSM state is twice a bf16 one; --hf-overrides rewrites the config): warnings too, unless left at auto
UNPLANNED_STATE_FLAGS = ("--mamba-cache-dtype ", "--mamba-ssm-cache-dtype ", "--hf-overrides ")


def unmodeled_notes(args) -> list[str]:
    """The command's notes for flags that change memory and that the plan leaves out (vllm_args._NOT_MODELED:
    --cpu-offload-gb, --num-gpu-blocks-override, --config FILE, LoRA, ...): shown as warnings, not as info, and named
    above the plan (its KV blocks are not what vLLM would allocate then)."""
    return [n for n in args.notes if NOT_MODELED_MARK in n or (n.startswith(UNPLANNED_STATE_FLAGS) and
                                                               not n.split(":")[0].endswith(" auto"))]


def info_notes(command) -> list[str]:
    """The command's notes shown as info: not the warnings (``unmodeled_notes``), and on an SGLang line not the vLLM
    parser's "planned by the core" for a vLLM-only knob SGLang has no flag for (``unplanned_flags`` warns it is not
    planned with SGLang: "--moe-backend marlin: planned by the core" beside "--moe-backend (marlin): a vLLM flag SGLang
    does not have")."""
    args = getattr(command, "args", command)
    warned = unmodeled_notes(args)
    vllm_only = tuple(f"{VLLM_KNOB_ROWS[n]}{sep}" for n in _vllm_only_knobs_set(command) for sep in " =")
    return [n for n in args.notes if n not in warned and not (vllm_only and n.startswith(vllm_only))]


def _vllm_only_knobs_set(command) -> list[str]:
    """An SGLang line's vLLM-only serving knobs (VLLM_KNOB_ROWS that SGLang spells not at all, or its own way) that
    vLLM's parser read off the line away from their defaults; none for a vLLM line."""
    if getattr(command, "engine", "vllm") != "sglang":
        return []
    args = command.args
    return [name for name in VLLM_KNOB_ROWS if (name not in SGLANG_KNOB_ROWS or name in SGLANG_OWN_SPELLING)
            and name in VllmArgs.model_fields and getattr(args, name) != VllmArgs.model_fields[name].default]


def unplanned_flags(command) -> list[str]:
    """The flags of a command that change memory and that the app does not plan, each named: never dropped
    unsaid. An SGLang line's --speculative-* flags kvplan does not read (it plans --speculative-algorithm and
    --speculative-num-steps), and vLLM-only knobs on an SGLang line (read by vLLM's parser; SGLang has no such flag)."""
    from kvplan.web.commands import (
        MAMBA_STRATEGY_NOTE,
        MULTI_LAYER_EAGLE,
        MULTI_LAYER_EAGLE_NOTE,
        SGLANG_MAMBA_STRATEGY,
    )

    args = getattr(command, "args", command)
    def why(flag: str) -> str:
        name = flag.split()[0].split("=")[0]
        if name in SGLANG_MAMBA_STRATEGY:
            return MAMBA_STRATEGY_NOTE
        if name == MULTI_LAYER_EAGLE:
            return MULTI_LAYER_EAGLE_NOTE
        return SGLANG_SPECULATIVE if name.startswith("--speculative") else NOT_PLANNED

    out = [f"{flag}: {why(flag)}" for flag in getattr(command, "unplanned", ())]
    out += vllm_spelled_notes(command)
    for name in _vllm_only_knobs_set(command):
        out.append(f"{VLLM_KNOB_ROWS[name]} ({getattr(args, name)}): a vLLM flag SGLang does not have: not planned "
                   "with SGLang")
    return out


# SGLang's launch_server parses its line with argparse's parse_args (python/sglang/srt/server_args.py
# prepare_server_args, sgl-project/sglang, read 2026-12): an argument it does not know stops it ("unrecognized
# arguments"); context_length, page_size, max_running_requests, mem_fraction_static carry no vLLM alias there.
SGLANG_STOPS = "SGLang's launch_server stops on it (argparse: unrecognized arguments)"


def vllm_spelled_notes(command) -> list[str]:
    """An SGLang line's vLLM-only spellings of the settings kvplan plans, each named with SGLang's own flag:
    "--max-num-seqs 4: vLLM's flag, not SGLang's: ...; planned as SGLang's --max-running-requests 4"; one SGLang has
    no flag for is said not planned (--gpu-memory-utilization: SGLang's share is --mem-fraction-static, another
    fraction). --kv-cache-memory-bytes is left to the core, which refuses it on SGLang. --enable-expert-parallel is
    named too, planned as SGLang's --ep-size equal to --tp-size (no SGLang release kvplan profiles has a flag it
    abbreviates: server_args.py of the sglang 0.4.0 - 0.5.23 wheels read 2026-12-03 spell expert parallelism
    --ep-size / --expert-parallel-size / --ep, and --enable-ep-moe through 0.5.4)."""
    from kvplan.web.commands import sglang_spelling

    if getattr(command, "engine", "vllm") != "sglang":
        return []
    fields = {flag: name for name, flag in FLAG_NAMES.items()}
    renamed = sglang_spelling()
    out = []
    for flag in dict.fromkeys(getattr(command, "vllm_spelled", ())):
        field = fields.get(flag)
        if field in (None, "kv_cache_memory_bytes") or SGLANG_FLAG_NAMES.get(field) == flag:
            continue
        value = getattr(command.args, field)
        shown = flag if isinstance(value, bool) else f"{flag} {_flag_value(field, value)}"
        own = f"--ep-size {command.args.tensor_parallel_size}" if field == "enable_expert_parallel" else \
            SGLANG_FLAG_NAMES.get(field) or renamed.get(flag)
        out.append(f"{shown}: vLLM's flag, not SGLang's: {SGLANG_STOPS}; " + (
            f"planned as SGLang's {own}" + ("" if isinstance(value, bool) else f" {_flag_value(field, value)}")
            if own else "SGLang has no such setting (its memory share is --mem-fraction-static, a fraction of "
                        "another figure): not planned with SGLang"))
    return out


NO_GPU = "The command names no GPU: choose the GPU it runs on, next to Apply"
IMPORT_FIELDS = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "enable_expert_parallel",
                 "max_model_len", "gpu_memory_utilization", "kv_cache_dtype", "block_size", "max_num_seqs",
                 "max_num_batched_tokens", "kv_cache_memory_bytes", "enforce_eager", "weight_format")


def imported_state(state: PlanState, command) -> tuple[PlanState | None, str]:
    """The plan inputs a command means (engine defaults for every flag not given; the GPU chosen for
    it on the Import page: a command names none, and the sidebar's is never assumed).

    ``command``: ``kvplan.web.commands.Command`` (or bare VllmArgs: a vLLM command). None when the
    model is neither a preset nor the config already fetched for it, or no GPU is chosen. A flag
    value the app cannot carry in a link (vLLM accepts more than the app plans:
    --kv-cache-memory-bytes past 2^50, more pipeline stages than MAX_PIPELINE) raises
    PlanInputError naming the flag.
    """
    args = getattr(command, "args", command)
    engine = getattr(command, "engine", "vllm")
    changes: dict[str, Any] = {name: getattr(args, name) for name in IMPORT_FIELDS}
    # the serving knobs (the other engine's: defaults); the torch.compile cache is the machine's, not the line's: kept
    changes |= knob_values(command) | {"usage_context": "serve", "compile_cache": state.compile_cache}
    for name, value in changes.items():
        if value is not None and value != getattr(DEFAULT, name):
            field = BY_NAME[name]
            try:
                field.parse(field.format(value))
            except ValueError as exc:
                raise PlanInputError(knob_flag(name, engine), f"{value}: {exc}") from None
    changes |= {"engine": engine, "mem_fraction_static": getattr(command, "mem_fraction_static", None)}
    if engine != "vllm":
        changes["gpu_memory_utilization"] = None
    v0 = ""
    if engine == "vllm" and getattr(args, "vllm_version", None):  # VLLM_USE_V1=0 (or a pre-0.8 image tag)
        changes["vllm_version"] = args.vllm_version
        from kvplan.engines import VLLM_PROFILES

        if VLLM_PROFILES[args.vllm_version].engine_core == "V0":
            v0 = f" V0 engine (VLLM_USE_V1=0 or a pre-0.8 image): vLLM profile {args.vllm_version}."
        else:  # a V1 image tag (vllm/vllm-openai:v0.9.2): its nearest profile, V1 like the image
            v0 = f" vLLM profile {args.vllm_version}, from the image tag."
    if engine == "sglang" and getattr(command, "sglang_version", None):  # an lmsysorg/sglang:vX image tag
        changes["sglang_version"] = command.sglang_version
        v0 = f" Image tag: SGLang profile {command.sglang_version}."
    if args.model is None:
        note = f"No model in the command: planned with the sidebar's model ({model_shown(state)})."
    elif state.config and state.model_name == args.model:
        note = f"Model {args.model}: its config.json, fetched from the Hub."
    elif (preset := preset_for_model(args.model)) is not None:
        changes |= {"model": preset, "config": None, "model_name": None}
        note = f"Model {args.model}: planned with the preset {preset} (same config shape)."
    else:
        return None, f"{args.model} is not a built-in preset: fetch its config.json, or paste it on the Model page."
    if state.import_gpu is None:
        return None, NO_GPU + f" (the sidebar's {state.gpu} is not assumed)."
    changes["gpu"] = state.import_gpu
    tied = ("model", "config", "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size",
            "enable_expert_parallel", "weight_format", "language_model_only", "mm_limits", "mm_encoder_tp_mode",
            "speculative_method",
            "drafter", "dp_attention_size", "moe_dense_tp_size")
    if state.weights_gib is not None and any(n in changes and changes[n] != getattr(state, n) for n in tied):
        changes["weights_gib"] = None  # a typed "Model loading took" was measured for the other model / layout
    imported = state.model_copy(update=changes)
    if imported.weight_format == "fp8" and "weight_format" in changes:  # --quantization fp8 on a shipped format
        fmt, said = quantization_flag_format(cached.spec(imported), "fp8")
        if said:
            imported = imported.model_copy(update={"weight_format": fmt})
            note += f" {said}."
    if imported.vllm_graph_reserved_mem is not None and imported.engine == "vllm" and \
            not on_gaudi(get_gpu(imported.gpu)):
        note += (f" VLLM_GRAPH_RESERVED_MEM is read by vllm-gaudi only (Intel Gaudi): it changes nothing on "
                 f"{imported.gpu}.")
    _check_knobs(imported)
    _check_sglang_dsv4_launch(imported, command)
    return imported, note + v0


def _check_sglang_dsv4_launch(imported: PlanState, command) -> None:
    """Refuse an SGLang line for DeepSeek-V4 whose speculative flags, as typed, stop SGLang at start-up (NEXTN, or
    EAGLE without --speculative-eagle-topk 1: kvplan.sglang_dsv4.launch_refusal), naming the flag; the plan itself
    cannot tell, as it carries kvplan's method ("mtp" for both spellings), not the spelling."""
    algorithm = getattr(command, "speculative_algorithm", None)
    if imported.engine != "sglang" or algorithm is None:
        return
    try:
        model_type = cached.spec(imported).model_type
    except KvplanError:
        return  # the config's own refusal: the page shows it with the plan
    if model_type == "deepseek_v4":
        from kvplan.sglang_dsv4 import launch_refusal

        refused = launch_refusal(algorithm, command.speculative_eagle_topk)
        if refused:
            raise PlanInputError(*refused)


def knob_flag(name: str, engine: str = "vllm") -> str:
    """The flag a refusal of field ``name`` names (always '--...': the Import page's refusals name the flag), as
    ``engine`` spells it (enable_prefix_caching: --enable-prefix-caching for vLLM, --disable-radix-cache for SGLang)."""
    flag = ({**VLLM_KNOB_ROWS, **SGLANG_KNOB_ROWS} if engine == "sglang" else
            {**SGLANG_KNOB_ROWS, **VLLM_KNOB_ROWS}).get(name, "")
    return flag.split()[0] if flag.startswith("--") else "--" + name.replace("_", "-")


def _check_knobs(imported: PlanState) -> None:
    """Raise the core's own refusal (PlanInputError naming the flag) when a serving knob the command sets cannot be
    planned with the rest of it (-dcp on a V0 profile, MTP on a model without MTP layers, ...): Apply then refuses
    the command, and the preview shows why, rather than planning a line vLLM would not start."""
    knobs = [n for n in cached.SERVING_KNOBS if getattr(imported, n) != getattr(DEFAULT, n)]
    if not knobs:
        return
    try:
        cached.plan_for(imported)
    except PlanInputError as exc:
        # an EAGLE head the plan refuses (kvplan.drafter, cached.eagle_draft) names the flag itself
        name = {"speculative_config": "speculative_method", "--speculative-config": "speculative_method",
                "--speculative-algorithm": "speculative_method"}.get(exc.field, exc.field)
        if name in knobs:
            raise PlanInputError(knob_flag(name, imported.engine), exc.message) from None
    except KvplanError:
        pass  # a refusal of another input: the page shows it with the plan


def model_shown(state: PlanState) -> str:
    """The model the sidebar plans, in words: its name; a config.json pasted, uploaded or sent in a link without a
    name is "the pasted config.json" (state.model still holds the preset picked before it, which is not planned)."""
    if state.model_name:
        return state.model_name
    return "the pasted config.json" if state.config else state.model


def preview_note(state: PlanState) -> str:
    """The Import preview's note on what the sidebar plans now: its model and GPU, or, where the sidebar's own inputs
    are refused (llama-3.1-8b at -tp 3: 32 heads over 3 ranks), that it plans nothing (not "still plans" a plan that
    is not there)."""
    what = f"{esc(model_shown(state))} on {state.gpu}"
    try:
        cached.plan_for(state)
    except KvplanError as exc:
        return (f"**Preview, not applied**: the sidebar's own settings ({what}) are refused "
                f"(**{esc(field_name(exc.field, state.engine))}**), so the sidebar and every other page plan "
                "nothing now. **Apply** puts "
                "these settings there.")
    return (f"**Preview, not applied**: the sidebar and every other page still plan {what}. **Apply** puts these "
            "settings there.")


def changes_from(state: PlanState, imported: PlanState) -> dict[str, Any]:
    return {name: getattr(imported, name) for name in PlanState.model_fields
            if getattr(imported, name) != getattr(state, name)}
