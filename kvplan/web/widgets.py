"""The link is the store: the plan's state between ``st.query_params`` and the widgets.

Per run, ``app.py`` calls ``start()`` before any widget and ``finish()`` after the page:

1. ``start``: if the URL is not the one this session last wrote (first load, a pasted link, a test
   setting ``at.query_params``), decode it, keep its warnings, and drop every widget's value so
   each widget re-reads the state. Otherwise the state of the last run stands.
2. Widgets made with ``bind`` start from the state and write their value back into it.
3. ``finish``: write the state to the URL (``encode``: non-defaults only) and draw the page links
   with the same query parameters, so moving between pages in a browser keeps the plan.

Buttons and uploads change the state in callbacks (``apply``), which run before the script.
Session keys: ``kv.state``, ``kv.url``, ``kv.warnings`` and ``w.<field>`` for bound widgets.
"""

import json
import urllib.parse
from collections.abc import Callable
from typing import Any

import streamlit as st

from kvplan.engines import VLLM_DEFAULT_VERSION, VLLM_GPU_MEMORY_UTILIZATION, VLLM_PROFILES
from kvplan.errors import KvplanError
from kvplan.gpus import GPU_CATALOG
from kvplan.kv import KV_DTYPES
from kvplan.paging import BLOCK_SIZES
from kvplan.presets import preset_names
from kvplan.units import GiB
from kvplan.weights import FORMATS
from kvplan.hf_config import load_config_text
from kvplan.web import cached, hub, views
from kvplan.web.state import (
    BY_KEY, BY_NAME, DEFAULT, MAX_LINK_QUERY, MAX_PARALLEL, MAX_PIPELINE, PlanState, decode, encode, encode_config,
    from_document, link_params, query_length, spec_from_link, to_document,
)

STATE, URL, WARNINGS = "kv.state", "kv.url", "kv.warnings"
KNOBS, SHARE = "kv.knobs", "kv.share"  # the sidebar's lazy expanders (open or not)
# What the Engine knobs expander holds, per engine (the order it draws them).
ENGINE_KNOBS = {
    "vllm": ("vllm_version", "gpu_memory_utilization", "block_size", "max_num_seqs", "max_num_batched_tokens", "kv_cache_memory_bytes",
             "enforce_eager", "enable_expert_parallel"),
    "sglang": ("block_size", "mem_fraction_static", "enable_expert_parallel"),
    "custom": ("block_size", "runtime_gib", "headroom_gib", "enable_expert_parallel"),
}
PREFIX = "w."
MAX_PLAN_FILE_BYTES = 2 * 2**20  # as .streamlit/config.toml's server.maxUploadSize (MB) and MAX_CONFIG_BYTES
MAX_UPLOAD_MB = 2
_ss = st.session_state


# ----------------------------------------------------------------------------- the state

def start() -> PlanState:
    """The plan for this run (see the module docstring). Call once, before any widget."""
    url = st.query_params.to_dict()
    if STATE not in _ss or _ss.get(URL) != url:
        state, warnings = decode(url)
        _reset_widgets()
        _ss[STATE] = state
        _ss[WARNINGS] = warnings
        _ss[URL] = url
    return _ss[STATE]


def current() -> PlanState:
    return _ss[STATE]


def update(**changes: Any) -> PlanState:
    """Change fields of the state; each value must survive the link (ValueError otherwise)."""
    state = _ss[STATE]
    for name, value in changes.items():
        if value is not None:
            field = BY_NAME[name]
            changes[name] = field.parse(field.format(value))
    new = PlanState.model_validate(state.model_dump() | changes)
    _ss[STATE] = new
    return new


def apply(state: PlanState | None = None, warnings: list[str] | None = None, **changes: Any) -> None:
    """For callbacks: replace the state (or change fields) and let the changed widgets re-read it."""
    if state is not None:
        _ss[STATE] = state
        _reset_widgets()
    if changes:
        update(**changes)
        for name in changes:
            _ss.pop(PREFIX + name, None)
    if warnings is not None:
        _ss[WARNINGS] = warnings


def _reset_widgets() -> None:
    for key in [k for k in _ss if isinstance(k, str) and k.startswith(PREFIX)]:
        del _ss[key]


def bind(name: str, widget: Callable[..., Any], *args: Any, to_widget: Callable[[Any], Any] = lambda v: v,
         from_widget: Callable[[Any], Any] = lambda v: v, **kwargs: Any) -> Any:
    """A widget for state field ``name``: starts from the state, writes its value back. Returns the value."""
    key = PREFIX + name
    if key not in _ss:
        _ss[key] = to_widget(getattr(_ss[STATE], name))
    value = widget(*args, key=key, **kwargs)
    new = from_widget(value)
    if new != getattr(_ss[STATE], name):
        update(**{name: new})
    return new


def bind_text(name: str, label: str, parse: Callable[[str], Any], *, area: bool = False, **kwargs: Any) -> Any:
    """A text box for a field with a text form (lengths, prices, a command). A value that does not
    parse is shown as an error under the box and leaves the state as it was."""
    key = PREFIX + name
    value = getattr(_ss[STATE], name)
    if key not in _ss:
        _ss[key] = "" if value is None else BY_NAME[name].format(value)
    text = (st.text_area if area else st.text_input)(label, key=key, **kwargs)
    try:
        new = parse(text)
    except ValueError as exc:
        st.error(f"{views.esc(label)}: {views.esc(exc)}", icon=":material/error:")
        return value
    if new != value:
        update(**{name: new})
    return new


def bind_tuple(name: str, labels: tuple[str, ...], **kwargs: Any) -> tuple:
    """One number box per item of a tuple field (e.g. count, min, max, seed), side by side."""
    value = getattr(_ss[STATE], name)
    items = []
    for i, (col, label) in enumerate(zip(st.columns(len(labels)), labels)):
        key = f"{PREFIX}{name}.{i}"
        if key not in _ss:
            _ss[key] = value[i]
        items.append(col.number_input(label, key=key, step=1, **kwargs))
    new = tuple(int(v) for v in items)
    if new != value:
        try:
            update(**{name: new})
        except ValueError as exc:
            st.error(views.esc(exc))
            return value
    return new


def query_params() -> dict[str, str]:
    return link_params(_ss[STATE])[0]


def show_link_warnings() -> None:
    for text in _ss.get(WARNINGS, []):
        st.warning(views.esc(text), icon=":material/link_off:")


# ----------------------------------------------------------------------------- the sidebar

CUSTOM = "(custom config)"


def sidebar(page: str) -> None:
    """Model, GPU, parallelism, engine and workload: the inputs every page shares."""
    state = current()
    spec = cached.spec(state)
    with st.sidebar:
        _model_picker(state, spec.name)
        bind("gpu", st.selectbox, "GPU", list(GPU_CATALOG), format_func=_gpu_label,
             help="Memory is what the runtime exposes (cudaMemGetInfo), not the number on the box.")
        cols = st.columns(3)
        for col, (name, label, flag) in zip(cols, (("tensor_parallel_size", "TP", "--tensor-parallel-size"),
                                                   ("pipeline_parallel_size", "PP", "--pipeline-parallel-size"),
                                                   ("data_parallel_size", "DP", "--data-parallel-size"))):
            with col:
                bind(name, st.number_input, label, min_value=1, step=1, help=flag,
                     max_value=MAX_PIPELINE if name == "pipeline_parallel_size" else MAX_PARALLEL)
        st.caption(f"{views.layout_caption(current())}")
        bind("engine", st.radio, "Engine", ["vllm", "sglang", "custom"], horizontal=True,
             help="Engine profile: how device memory becomes a KV pool.")
        bind("max_model_len", st.number_input, "Context length (max_model_len)", value=None, min_value=1,
             max_value=100_000_000, step=1024,
             placeholder=f"model maximum: {spec.max_position_embeddings or 4096:,}", help="--max-model-len")
        bind("concurrency", st.number_input, "Concurrent sequences", value=None, min_value=1, max_value=10_000_000,
             step=1, placeholder="as many as fit", help="Sequences of max_model_len tokens served at once.")
        c1, c2 = st.columns(2)
        with c1:
            bind("kv_cache_dtype", st.selectbox, "KV dtype", list(KV_DTYPES), help="--kv-cache-dtype")
        with c2:
            bind("weight_format", st.selectbox, "Weights", ["as shipped", *FORMATS],
                 to_widget=lambda v: v or "as shipped", from_widget=lambda v: None if v == "as shipped" else v,
                 help="Weight storage format (default: as the checkpoint ships).")
        knobs = st.expander("Engine knobs", key=KNOBS, on_change="rerun")
        if knobs.open:  # lazy: a closed expander's widgets are not built (each costs every rerun)
            with knobs:
                _engine_knobs(current(), page)
        elif changed := knobs_set(current(), page):
            st.caption("Set: " + views.esc(", ".join(changed)))


def _gpu_label(name: str) -> str:
    gpu = GPU_CATALOG[name]
    return f"{name} ({gpu.memory_bytes / GiB:.2f} GiB)"


def _model_picker(state: PlanState, name: str) -> None:
    """Presets (type to search); while a pasted/uploaded/fetched config is the model, it is listed first."""
    options = [CUSTOM, *preset_names()] if state.config else preset_names()
    key = PREFIX + "model"
    if _ss.get(key) not in options:
        _ss[key] = CUSTOM if state.config else state.model
    choice = st.selectbox("Model", options, key=key, format_func=lambda v: f"custom: {name}" if v == CUSTOM else v,
                          help="A built-in preset (type to search). Paste, upload or fetch a config on the Model page.")
    if choice != CUSTOM and (state.config or choice != state.model):
        update(model=choice, config=None, model_name=None)


def knobs_set(state: PlanState, page: str) -> list[str]:
    """The engine knobs the closed expander holds that differ from their defaults, as name=value."""
    names = [n for n in ENGINE_KNOBS[state.engine] if not (n == "block_size" and page == "paging")]
    return [f"{n}={BY_NAME[n].format(getattr(state, n))}" for n in names if getattr(state, n) != getattr(DEFAULT, n)]


def _engine_knobs(state: PlanState, page: str) -> None:
    if state.engine == "vllm":
        versions = list(VLLM_PROFILES)
        bind("vllm_version", st.selectbox, "vLLM version", versions,
             format_func=lambda v: f"{v} ({VLLM_PROFILES[v].releases})" + (" - default" if v == VLLM_DEFAULT_VERSION else ""),
             help="the release line whose memory accounting (budget, sampler, CUDA graphs, log lines) is mirrored")
        bind("gpu_memory_utilization", st.number_input, "gpu_memory_utilization", value=None, min_value=0.01,
             max_value=1.0, step=0.01, format="%.2f",
             placeholder=f"{VLLM_GPU_MEMORY_UTILIZATION[state.vllm_version]}",
             help="--gpu-memory-utilization")
    if page != "paging":  # the Paging page has its own block-size control, bound to the same knob
        block_size_widget()
    if state.engine == "vllm":
        bind("max_num_seqs", st.number_input, "max_num_seqs", value=None, min_value=1, max_value=1_000_000,
             placeholder="by device memory", help="--max-num-seqs")
        bind("max_num_batched_tokens", st.number_input, "max_num_batched_tokens", value=None, min_value=1,
             max_value=100_000_000, placeholder="by device memory", help="--max-num-batched-tokens")
        bind("kv_cache_memory_bytes", st.number_input, "kv_cache_memory_bytes", value=None, min_value=1,
             placeholder="profiled", help="--kv-cache-memory-bytes: replaces the profiled KV pool")
        bind("enforce_eager", st.checkbox, "enforce_eager (no CUDA graphs)", help="--enforce-eager")
    if state.engine == "sglang":
        bind("mem_fraction_static", st.number_input, "mem_fraction_static", value=None, min_value=0.01,
             max_value=1.0, step=0.01, format="%.3f", placeholder="SGLang default", help="--mem-fraction-static")
    if state.engine == "custom":
        bind("runtime_gib", st.number_input, "runtime workspace (GiB)", min_value=0.0, max_value=10_000.0, step=0.5)
        bind("headroom_gib", st.number_input, "headroom (GiB)", min_value=0.0, max_value=10_000.0, step=0.5)
    bind("enable_expert_parallel", st.checkbox, "enable_expert_parallel", help="--enable-expert-parallel")


def block_size_widget(container: Any = st) -> int | None:
    state = current()
    options = ["default", *sorted(set(BLOCK_SIZES) | ({state.block_size} if state.block_size else set()))]
    return bind("block_size", container.selectbox, "block_size (tokens per block)", options,
                to_widget=lambda v: v or "default", from_widget=lambda v: None if v == "default" else int(v),
                help="--block-size. Default: 16 in vLLM (64 for MLA), 1 in SGLang.")


# ----------------------------------------------------------------------------- model sources

def use_config(config: dict, name: str | None) -> None:
    """Make a pasted/uploaded/fetched config the plan's model. Raises KvplanError if it cannot be planned."""
    try:
        text = encode_config(config)
    except ValueError as exc:
        raise KvplanError("config", str(exc)) from None
    spec_from_link(text, name)  # raises ConfigError, before the state changes
    apply(config=text, model_name=name)
    _ss.pop(PREFIX + "model", None)


MODEL_ERROR = "model.error"


def use_pasted_config() -> None:
    """Callback of the Model page's 'Use this config' button."""
    _use_config_text(_ss.get("model.paste") or "", None)


def use_uploaded_config() -> None:
    upload = _ss.get("model.upload")
    if upload is not None:
        _use_config_text(upload.getvalue(), None)


def _use_config_text(text: str | bytes, name: str | None) -> None:
    _ss.pop(MODEL_ERROR, None)
    try:
        use_config(load_config_text(text), name)
    except KvplanError as exc:
        _ss[MODEL_ERROR] = (str(exc), False)


def fetch_hub_config(repo_id: str) -> None:
    """Fetch ``repo_id``'s config.json and make it the model (errors are kept for show_model_error)."""
    _ss.pop(MODEL_ERROR, None)
    try:
        use_config(hub.fetch_config(repo_id), repo_id.strip())
    except hub.HubError as exc:
        _ss[MODEL_ERROR] = (str(exc), exc.offline)
        return
    except KvplanError as exc:
        _ss[MODEL_ERROR] = (str(exc), False)
        return
    st.rerun()


def show_model_error() -> None:
    if MODEL_ERROR in _ss:
        message, offline = _ss[MODEL_ERROR]
        if offline:
            st.warning(f"Offline: {views.esc(message)}", icon=":material/cloud_off:")
        else:
            st.error(views.esc(message), icon=":material/error:")


# ----------------------------------------------------------------------------- after the page

def finish(nav: Any, pages: list) -> None:
    """Write the URL, draw the page links (carrying the plan) and the share box.

    A plan whose link would pass MAX_LINK_QUERY characters (a large pasted config, a long command or
    length list) writes a shorter link without those fields, says so, and points to the plan JSON."""
    params, cut = link_params(_ss[STATE])
    if st.query_params.to_dict() != params:
        st.query_params.from_dict(params)
    _ss[URL] = params
    with nav:
        for page in pages:
            st.page_link(page, query_params=params)
    if cut:
        full = query_length(encode(_ss[STATE]))
        names = ", ".join({"config": "the pasted config.json"}.get(BY_KEY[k].name, BY_KEY[k].name) for k in cut)
        st.sidebar.warning(f"This plan's link would be {full:,} characters (a link is kept under "
                           f"{MAX_LINK_QUERY:,}), so it leaves out {views.esc(names)}. To share the whole plan, "
                           "download the **Plan JSON** below; **Restore a plan JSON** opens it.",
                           icon=":material/link_off:")
    with st.sidebar:
        share = st.expander("Share or save this plan", icon=":material/share:", expanded=bool(cut), key=SHARE,
                            on_change="rerun")
    if share.open:  # lazy, as the engine knobs
        with share:
            _share(params, cut)


def share_url(params: dict[str, str]) -> str:
    base = st.context.url or "/"
    query = urllib.parse.urlencode(params)
    return f"{base}?{query}" if query else base


def _share(params: dict[str, str], cut: list[str] = ()) -> None:
    if cut:
        st.caption("The link below leaves out what made it too long (it says so when opened); the Plan JSON "
                   "holds everything.")
    else:
        st.caption("The link reopens this page with this exact plan. Copy it with the button at its right.")
    st.code(share_url(params), language=None, wrap_lines=True)
    state = current()
    c1, c2 = st.columns(2)
    c1.download_button("Plan JSON", data=lambda: plan_json(state), file_name="kvplan-plan.json",
                       mime="application/json", on_click="ignore", icon=":material/download:")
    c2.download_button("Plan CSV", data=lambda: views.plan_csv(state), file_name="kvplan-plan.csv",
                       mime="text/csv", on_click="ignore", icon=":material/download:")
    st.file_uploader("Restore a plan JSON", type=["json"], key="kv.upload", on_change=_restore,
                     max_upload_size=MAX_UPLOAD_MB)


def plan_json(state: PlanState) -> str:
    doc = to_document(state)
    try:
        doc["plan"] = cached.plan_for(state).model_dump(mode="json")
    except KvplanError as exc:
        doc["plan_error"] = str(exc)
    return json.dumps(doc, indent=2)


def _restore() -> None:
    upload = _ss.get("kv.upload")
    if upload is None:
        return
    if upload.size > MAX_PLAN_FILE_BYTES:
        apply(warnings=[f"The plan file is larger than {MAX_PLAN_FILE_BYTES:,} bytes; nothing restored."])
        return
    try:
        doc = json.loads(upload.getvalue())
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError, a 5,000-digit number
        apply(warnings=[f"The plan file is not JSON ({type(exc).__name__}); nothing restored."])
        return
    state, warnings = from_document(doc)
    apply(state, warnings)
