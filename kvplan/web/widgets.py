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

from kvplan.drafter import DRAFT_METHODS, drafter_for_model, drafter_manifest
from kvplan.engines import VLLM_DEFAULT_VERSION, VLLM_GPU_MEMORY_UTILIZATION, VLLM_PROFILES, vllm_release
from kvplan.sglang import SGLANG_DEFAULT_VERSION, SGLANG_MAMBA_FULL_MEMORY_RATIO, SGLANG_PROFILES, SPECULATIVE_FLAG
from kvplan.errors import KvplanError
from kvplan.gpus import GPU_CATALOG, get_gpu
from kvplan.kv import KV_DTYPES
from kvplan.paging import BLOCK_SIZES, vllm_block_size_choices, vllm_block_size_problem
from kvplan.support import on_gaudi
from kvplan.units import GiB
from kvplan.weights import FORMATS
from kvplan.hf_config import MAX_CONFIG_BYTES, load_config_text
from kvplan.vllm_args import MOE_BACKEND_PLANNED
from kvplan.web import cached, hub, views
from kvplan.web.state import (
    BY_KEY, BY_NAME, DEFAULT, MAMBA_SSM_DTYPES, MAX_LINK_QUERY, MAX_MAMBA_RATIO, MAX_MAMBA_SLOTS, MAX_PARALLEL,
    MAX_PIPELINE, PlanState, decode, decode_config, encode,
    encode_config, from_document, is_cached, link_params, needs_transformers, query_length, spec_from_link,
    to_document,
)

STATE, URL, WARNINGS = "kv.state", "kv.url", "kv.warnings"
REFUSED = "kv.refused"  # this run's refused inputs: [(input, value as typed, reason, what is planned instead)]
KNOBS, SHARE = "kv.knobs", "kv.share"  # the sidebar's lazy expanders (open or not)
# The Engine knobs drawn only where they matter: vLLM's behind the "advanced" switch (the multimodal ones only for a
# model with a tower), SGLang's aiter switch only with an explicit --mem-fraction-static (_vllm_advanced,
# _serving_knobs)
VLLM_ADVANCED = ("model_runner", "cudagraph_mode", "compile_cache", "moe_backend", "triton_kernels")
VLLM_ADVANCED_MM = ("mm_limits", "mm_processor_kwargs", "skip_mm_profiling")
VLLM_GAUDI = ("vllm_graph_reserved_mem",)  # read by vllm-gaudi only: drawn for an Intel Gaudi GPU (_serving_knobs)
ADVANCED_KNOBS = {"vllm": VLLM_ADVANCED + VLLM_ADVANCED_MM + VLLM_GAUDI, "sglang": ("sglang_aiter_honor_explicit_mem_fraction",),
                  "custom": ()}
# What the Engine knobs expander always holds, per engine (the order it draws them).
ENGINE_KNOBS = {
    "vllm": ("vllm_version", "gpu_memory_utilization", "block_size", "max_num_seqs", "max_num_batched_tokens", "kv_cache_memory_bytes",
             "enforce_eager", *(n for n, (e, _) in cached.SERVING_KNOBS.items()
                                if "vllm" in e and n not in ADVANCED_KNOBS["vllm"]),
             "enable_expert_parallel", "weights_gib"),
    # max_num_batched_tokens and enforce_eager: SGLang's --chunked-prefill-size and --disable-cuda-graph, which its
    # plan reads (kvplan.sglang.budget); without a box here a link or an Import set them unseen on SGLang's sidebar
    "sglang": ("sglang_version", "block_size", "mem_fraction_static", "max_num_seqs", "max_num_batched_tokens",
               "enforce_eager",
               *(n for n, (e, _) in cached.SERVING_KNOBS.items()
                 if "sglang" in e and n not in ADVANCED_KNOBS["sglang"]),
               "enable_expert_parallel", "weights_gib"),
    "custom": ("block_size", "runtime_gib", "headroom_gib", "enable_expert_parallel", "weights_gib"),
}
PREFIX = "w."
# Upload caps, in Streamlit's MB (2**20 bytes). A config.json: MAX_CONFIG_BYTES (16 MiB). A plan JSON
# carries the config indented plus the plan, so twice that; .streamlit/config.toml's
# server.maxUploadSize is the larger of the two (each uploader caps itself).
MAX_UPLOAD_MB = MAX_CONFIG_BYTES // 2**20  # 16
MAX_PLAN_UPLOAD_MB = 2 * MAX_UPLOAD_MB  # 32
MAX_PLAN_FILE_BYTES = MAX_PLAN_UPLOAD_MB * 2**20
_ss = st.session_state


# ----------------------------------------------------------------------------- the state

def start() -> PlanState:
    """The plan for this run (see the module docstring). Call once, before any widget."""
    url = st.query_params.to_dict()
    if STATE not in _ss or _ss.get(URL) != url:
        if isinstance(url.get("cfg"), str):  # a linked config that takes seconds to build: show its progress
            try:
                build_with_progress(url["cfg"], url.get("mn") if isinstance(url.get("mn"), str) else None)
            except (ValueError, KvplanError):
                pass  # decode() names the problem
        state, warnings = decode(url)
        _reset_widgets()
        _ss[STATE] = state
        _ss[WARNINGS] = warnings
        _ss[URL] = url
        if _ss.get(URL + ".written") != url:  # a new link (not the one this session wrote): a new model
            _ss.pop(MODEL_ERROR, None)
    _ss[REFUSED] = []
    return _ss[STATE]


def refuse(label: str, value: Any, reason: str, instead: str) -> None:
    """Record an input this run refused: shown under the input and at the top of every page.

    ``instead``: what every page plans in its place, as a phrase ("the last valid value (8,192)")."""
    _ss.setdefault(REFUSED, []).append((label, _typed(value), reason, instead))


def _typed(value: Any) -> str:
    """A refused value as the messages write it: a whole number with thousands separators (100000 -> "100,000")."""
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def refusal_text(label: str, value: Any, reason: str, instead: str) -> str:
    """A refusal as one sentence (Markdown, escaped): the field, the value refused, what is allowed, what is planned.
    Worked example: ("Context length (max_model_len)", 0, "must be from 1 to 100,000,000", "the model's maximum
    (131,072)") -> "**Refused context length (max_model_len) = 0**: must be from 1 to 100,000,000; every page plans
    the model's maximum (131,072) instead." (it read "... Every page shows the last valid context length
    (max_model_len): model max: 131,072, not the refused input.")."""
    typed = f" = {views.esc(_typed(value))}" if str(value) != "" else ""
    label = label.split(": ", 1)[0]  # "Command line: vllm serve ..., ..." -> "Command line" (no second colon)
    return (f"**Refused {views.esc(_lower(label))}{typed}**: {views.esc(str(reason).rstrip(' .'))}; every page "
            f"plans {views.esc(instead)} instead.")


def last_valid(text: str) -> str:
    """What a refused input's page plans, as ``refusal_text`` says it: "the last valid value (8,192)"."""
    return f"the last valid value ({text})"


def unset_default(placeholder: str | None) -> str:
    """What an unset box plans, from its placeholder: "the default (by device memory)"; none: "the default"."""
    return f"the default ({placeholder})" if placeholder else "the default"


def refusals() -> list[tuple[str, str, str, str]]:
    """This run's refused inputs, and a refused model source (paste, upload, Hub fetch) if any:
    (input, value, reason, what every page plans instead)."""
    out = list(_ss.get(REFUSED, []))
    if (line := import_refusal()) is not None:
        out.append(line)
    if MODEL_ERROR in _ss:
        message, offline, *source = _ss[MODEL_ERROR]
        name = cached.spec(current()).name
        out.insert(0, (source[0] if source else "model source", "", ("offline: " if offline else "") + message,
                       f"the last valid model ({name})"))
    return out


def current() -> PlanState:
    try:  # one session-state lookup, not two ('in' then '[]'): it is called dozens of times a run
        return _ss[STATE]
    except KeyError:  # a page file run on its own (no app frame): read the link now
        start()
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
    """A widget for state field ``name``: starts from the state, writes its value back. Returns the value.

    ``widget``: ``st.number_input`` and friends, or a container's (``row.number_input``: the widget goes
    in the row, a refused value's error under the row, where the script is writing)."""
    key = PREFIX + name
    old = getattr(_ss[STATE], name)
    if key not in _ss:
        _ss[key] = to_widget(old)
    # A number box gets no min/max in the browser: there an out-of-range number only turns the box red and
    # never reaches the app, so the old plan would stay on screen as if current. Checked here instead.
    lo, hi = (kwargs.pop("min_value", None), kwargs.pop("max_value", None)) if _is_number_input(widget) \
        else (None, None)
    unset = kwargs.pop("unset", None)  # what an unset box plans, in words (else unset_default(placeholder))
    if isinstance(lo, int) and "step" not in kwargs:
        kwargs["step"] = 1  # whole numbers (without a bound, Streamlit would take the box for a float one)
    value = widget(*args, key=key, **kwargs)
    new = from_widget(value)
    if new != old:
        label = args[0] if args else name
        reason = _out_of_range(new, lo, hi)
        if reason is None:
            try:
                update(**{name: new})
            except ValueError as exc:
                reason = str(exc)
        if reason is not None:
            # an unset box plans what its placeholder says ("model max: 131,072", "as many as fit")
            shown = (unset or unset_default(kwargs.get("placeholder"))) if old is None else \
                last_valid(_typed(old) if type(old) is int else BY_NAME[name].format(old))
            st.error(refusal_text(label, new, reason, shown), icon=":material/block:")
            refuse(label, new, reason, shown)
            return old
    return new


def _lower(label: str) -> str:
    """A label inside a sentence: 'Context length' -> 'context length'; TP / PP / DP stay as they are."""
    head = label.split(" ", 1)[0]
    return label if head.isupper() else label[:1].lower() + label[1:]


def _is_number_input(widget: Callable[..., Any]) -> bool:
    return getattr(widget, "__name__", None) == "number_input"  # st.number_input or a container's


def _out_of_range(value: Any, lo: Any, hi: Any) -> str | None:
    if value is None or (lo is None and hi is None):
        return None
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        if lo is not None and hi is not None:
            return f"must be from {lo:,} to {hi:,}"
        return f"must be at least {lo:,}" if lo is not None else f"must be at most {hi:,}"
    return None


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
        shown = "the default" if value is None else last_valid(BY_NAME[name].format(value)[:80])
        st.error(refusal_text(label, text[:80], str(exc), shown), icon=":material/error:")
        refuse(label, text[:80], str(exc), shown)
        return value
    if new != value:
        update(**{name: new})
    return new


def bind_tuple(name: str, labels: tuple[str, ...], **kwargs: Any) -> tuple:
    """One number box per item of a tuple field (e.g. count, min, max, seed), side by side."""
    value = getattr(_ss[STATE], name)
    items = []
    row = views.row(wrap=False)
    for i, label in enumerate(labels):
        key = f"{PREFIX}{name}.{i}"
        if key not in _ss:
            _ss[key] = value[i]
        items.append(row.number_input(label, key=key, step=1, **kwargs))
    new = tuple(int(v) for v in items)
    if new != value:
        try:
            update(**{name: new})
        except ValueError as exc:
            shown = "the last valid values (" + ":".join(map(str, value)) + ")"
            st.error(refusal_text(", ".join(labels), ":".join(map(str, new)), str(exc), shown))
            refuse(", ".join(labels), ":".join(map(str, new)), str(exc), shown)
            return value
    return new


def query_params() -> dict[str, str]:
    return link_params(_ss[STATE])[0]


def show_link_warnings() -> None:
    for text in _ss.get(WARNINGS, []):
        st.warning(views.esc(text), icon=":material/link_off:")


def show_refusals(path: str = "") -> None:
    """At the top of every page: each refused input, and that the pages plan the last valid input instead
    (never the refused one, and never as if nothing had been refused). On the Import page (``path`` "import") its
    own refused Apply is not repeated: "Not applied: ..." stands under the Apply button."""
    own = import_refusal() if path == "import" else None
    for label, value, reason, instead in refusals():
        if (label, value, reason, instead) != own:
            st.error(refusal_text(label, value, reason, instead), icon=":material/block:")
    if MODEL_ERROR in _ss:
        st.button("Dismiss: keep the last valid model", key="kv.dismiss", on_click=_ss.pop, args=(MODEL_ERROR, None))


def block_size_problem(state: PlanState) -> str | None:
    """Why the plan's vLLM would refuse the state's --block-size (a link takes any size from 1 to 65,536, for the
    Paging page's exploration); None when it takes it, or when the block size is the engine's default."""
    if state.engine != "vllm" or not state.block_size:
        return None
    return vllm_block_size_problem(state.block_size, vllm_release(state.vllm_version))


def vllm_block_sizes_text(state: PlanState) -> str:
    """The --block-size values the state's vLLM takes, in words: '1, 8, 16, 32, 64, 128' or 'any (multiples of 16
    for FlashAttention)'."""
    _, choices = vllm_block_size_choices(vllm_release(state.vllm_version))
    return ", ".join(map(str, choices)) if choices else "any whole number (FlashAttention: multiples of 16)"


def show_block_size_problem() -> None:
    """At the top of every page: a block size the plan's vLLM refuses is planned as asked, and said so. (A size vLLM
    replaces for its MLA backend, FlashMLA's 64 through 0.17, is planned as vLLM runs it: kvplan.engines.
    vllm_mla_block_forced; the Paging caption, views.block_size_why, says so.)"""
    state = current()
    if problem := block_size_problem(state):
        st.warning(f"**block_size {state.block_size:,}**: {views.esc(problem)}. The plan uses it as asked; "
                   f"vLLM {views.esc(state.vllm_version)} takes {views.esc(vllm_block_sizes_text(state))}.",
                   icon=":material/warning:")


def show_basis(spec) -> None:
    """A model planned from a generic decoder or through transformers is never shown as exact."""
    if spec.basis == "generic":
        st.warning(f"**Estimate (generic decoder)**: {views.esc(spec.basis_note or spec.name)}",
                   icon=":material/warning:")
    elif spec.basis == "transformers":
        st.info(f"**Built with transformers**: {views.esc(spec.basis_note or 'parameters exact, cache measured')}",
                icon=":material/info:")


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
        row = views.row(wrap=False)  # one block, not st.columns' four (see views.row)
        for name, label in (("tensor_parallel_size", "TP"), ("pipeline_parallel_size", "PP"),
                            ("data_parallel_size", "DP")):  # each as the engine spells it (SGLang's --tp-size)
            bind(name, row.number_input, label, min_value=1, step=1, help=views.engine_flag(name, engine_shown()),
                 max_value=MAX_PIPELINE if name == "pipeline_parallel_size" else MAX_PARALLEL)
        st.caption(f"{views.layout_caption(current())}")
        bind("engine", st.radio, "Engine", ["vllm", "sglang", "custom"], horizontal=True,
             help="Engine profile: how device memory becomes a KV pool.")
        # SGLang's ServerArgs call it context_length: a refusal names it so ("Refused context length (context_length)")
        context = views.context_field(current().engine)
        bind("max_model_len", st.number_input, f"Context length ({context})", value=None, min_value=1,
             max_value=100_000_000, step=1024,
             # "model maximum: 1,048,576" was cut at 1400 px (GLM-5.2); "model max: 10,485,760" fits
             placeholder=f"model max: {spec.max_position_embeddings or 4096:,}",
             unset=f"the model's maximum ({spec.max_position_embeddings or 4096:,})",
             # the browser's number box reads '1e5' as 1 and refuses '32k' (Streamlit's parseInt): say so
             help=f"{views.engine_flag('max_model_len', current().engine)}, in whole tokens (32768, not 32k or "
                  "1e5: a number box reads 1e5 as 1; the Import page reads 32k)")
        bind("concurrency", st.number_input, "Concurrent sequences", value=None, min_value=1, max_value=10_000_000,
             step=1, placeholder="as many as fit", unset="as many sequences as fit",
             help=f"Sequences of {context} tokens served at once.")
        # every format a link or the CLI takes (kvplan.weights.check_format: gptq-int4-g128, w4a16-g32, fp8-static, ...)
        # is listed when the state holds it: a selectbox resets a value it does not list to its first option, which
        # dropped a link's wf=gptq-int4-g128 to "as shipped" without a word (and planned the bf16 checkpoint instead).
        # Such a name is longer than FORMATS' (9 characters at most): its box takes the sidebar's width, under the KV
        # dtype's (beside it, at half the width, "gptq-int4-g128" was cut at 78 of its 102 px at 1400 px)
        held = current().weight_format
        extra = [held] if held and held not in FORMATS else []
        row = views.row(wrap=False)
        bind("kv_cache_dtype", row.selectbox, "KV dtype", list(KV_DTYPES), help="--kv-cache-dtype")
        bind("weight_format", (st if extra else row).selectbox, "Weights", ["as shipped", *FORMATS, *extra],
             to_widget=lambda v: v or "as shipped", from_widget=lambda v: None if v == "as shipped" else v,
             help="Weight storage format (default: as the checkpoint ships).")
        knobs = st.expander("Engine knobs", key=KNOBS, on_change="rerun")
        if knobs.open:  # lazy: a closed expander's widgets are not built (each costs every rerun)
            with knobs:
                _engine_knobs(current(), page)
        elif changed := knobs_set(current(), page):
            st.caption("Set: " + views.esc(", ".join(changed)))
        from kvplan.web import weights_view  # (imports this module)

        weights_view.sidebar(current())  # the weights in use; an unreadable checkpoint is refused here


def engine_shown() -> str:
    """The engine the sidebar's radio shows: the state's, or the one just picked (the radio is bound below the TP / PP
    / DP boxes, whose help names the engine's flags, so they would show the last run's engine for one run)."""
    picked = _ss.get(PREFIX + "engine")
    return picked if picked in ("vllm", "sglang", "custom") else current().engine


def _gpu_label(name: str) -> str:
    gpu = GPU_CATALOG[name]
    return f"{name} ({gpu.memory_bytes / GiB:.2f} GiB)"


gpu_label = _gpu_label
IMPORT_ERROR = "import.error"
# A refused Apply, named at the top of every other page while the sidebar still plans what it planned then:
# (the line as pasted, why, the plan's inputs then but the command). Before, Budget and the rest showed the previous
# plan after "Not applied" without a word (ui1203: DeepSeek-V3.2 with --kv-cache-dtype fp4 refused, gpt-oss-120b shown)
IMPORT_REFUSED = "import.refused"
REFUSED_LINE_CHARS = 100  # a refused line longer than this is named by its first 100 characters and "..."


def _plan_inputs(state: PlanState) -> PlanState:
    """The state but the Import page's own fields (the pasted line, its GPU): what the other pages plan."""
    return state.model_copy(update={"command": None, "import_gpu": None})


def apply_import() -> None:
    """Callback of the Import page's Apply: the command's settings (and its GPU) become the plan, so the
    sidebar and every page show them. A command that cannot be planned is refused, naming why (here and, while the
    sidebar is unchanged, at the top of every other page: ``refusals``)."""
    _ss.pop(IMPORT_ERROR, None)
    _ss.pop(IMPORT_REFUSED, None)
    text = (_ss.get(PREFIX + "command") or "").strip()
    gpu = _ss.get(PREFIX + "import_gpu")
    if not text:
        _ss[IMPORT_ERROR] = "Paste a command line first."
        return

    def refused(why: str) -> None:
        _ss[IMPORT_ERROR] = why
        _ss[IMPORT_REFUSED] = (text, why, _plan_inputs(current()))

    try:
        command = cached.serve_command(views.parse_command(text))
        base = update(command=text, import_gpu=gpu)
        imported, note = views.imported_state(base, command)
    except (KvplanError, ValueError) as exc:
        refused(str(exc))
        return
    if imported is None:
        refused(note)
        return
    apply(**views.changes_from(base, imported))
    _ss.pop(PREFIX + "model", None)


def import_refusal() -> tuple[str, str, str, str] | None:
    """The refused Apply as ``refusals`` lists it, while the sidebar plans what it planned then; once the sidebar
    changes (a model picked, a number typed) the refused line no longer stands beside the plan and is dropped.
    ("Command line (Import)", "vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --kv-cache-dtype fp4", "--kv-cache-dtype:
    'fp4' is not a KV-cache dtype ...", "the sidebar's settings (gpt-oss-120b)")."""
    if IMPORT_REFUSED not in _ss:
        return None
    text, why, inputs = _ss[IMPORT_REFUSED]
    if _plan_inputs(current()) != inputs:
        _ss.pop(IMPORT_REFUSED, None)
        return None
    shown = text if len(text) <= REFUSED_LINE_CHARS else text[:REFUSED_LINE_CHARS].rstrip() + "..."
    return "Command line (Import)", shown, why, f"the sidebar's settings ({cached.spec(current()).name})"


def show_import_error() -> str | None:
    """"Not applied: why" under the Apply button after a refused Apply; returns why (the page then leaves out the same
    sentence for the command below it: it read twice, "Not applied: --kv-cache-dtype: 'fp4' is not ..." and again
    "--kv-cache-dtype: 'fp4' is not ...")."""
    if IMPORT_ERROR in _ss:
        st.error(f"Not applied: {views.esc(_ss[IMPORT_ERROR])}", icon=":material/block:")
        return _ss[IMPORT_ERROR]
    return None


def _model_picker(state: PlanState, name: str) -> None:
    """Presets by family (type to search); while a pasted/uploaded/fetched config is the model, it is listed first."""
    order = cached.preset_order()
    options = [CUSTOM, *order] if state.config else order
    key = PREFIX + "model"
    if _ss.get(key) not in options:
        _ss[key] = CUSTOM if state.config else state.model
    choice = st.selectbox("Model", options, key=key, format_func=lambda v: f"custom: {name}" if v == CUSTOM else v,
                          help="A built-in preset, listed by family (type to search). The Model page lists each "
                               "with its size and release month, and takes a pasted, uploaded or fetched config.")
    if choice != CUSTOM and (state.config or choice != state.model):
        update(model=choice, config=None, model_name=None)
        _ss.pop(MODEL_ERROR, None)  # a model chosen: the refused one is no longer what the user asks for


PICK = "model.pick"


def preset_picker() -> None:
    """The Model page's preset picker: every preset grouped by family, with its size and release month."""
    state = current()
    catalog = cached.preset_catalog()
    names = [r["name"] for r in catalog]
    if not state.config and state.model in names:
        _ss[PICK] = state.model  # follows the sidebar's choice
    elif _ss.get(PICK) not in names:
        _ss[PICK] = names[0]
    st.selectbox("Preset", names, key=PICK, format_func=cached.preset_label, on_change=_use_preset,
                 help="Grouped by family; size is total / active parameters (exact counts), then the release month.")
    with st.expander(f"All {len(catalog)} presets, by family"):
        views.replayed("presets", lambda: _catalog_table(catalog), len(catalog))  # the same table every rerun


def _catalog_table(catalog) -> None:
    views.html_table(
        [{"family": r["family"], "name": r["name"], "total": f"{r['total']:,}" if r["total"] else "",
          "active": f"{r['active']:,}" if r["active"] else "", "released": r["released"], "hf_repo": r["hf_repo"]}
         for r in catalog],
        [views.Col("family", "family"), views.Col("name", "preset", "The name the link and the CLI use."),
         views.Col("total", "parameters", "Exact total (transformers' numel on the meta device).", True),
         views.Col("active", "active / token", "MoE: the top-k experts only; dense: all.", True),
         views.Col("released", "released", "Month the checkpoint was published (YYYY-MM)."),
         views.Col("hf_repo", "Hugging Face repo")])


def _use_preset() -> None:
    choice = _ss.get(PICK)
    if choice:
        apply(model=choice, config=None, model_name=None)
        _ss.pop(PREFIX + "model", None)
        _ss.pop(MODEL_ERROR, None)


def knobs_set(state: PlanState, page: str) -> list[str]:
    """The engine knobs the closed expander holds that differ from their defaults, in the engine's own words
    (``knob_text``: "--speculative-config method=mtp", not kvplan's "speculative_method=mtp")."""
    names = [n for n in (*ENGINE_KNOBS[state.engine], *ADVANCED_KNOBS[state.engine])
             if not (n == "block_size" and page == "paging")]
    return [knob_text(state, n) for n in names if getattr(state, n) != getattr(DEFAULT, n)]


# SGLang's --speculative-algorithm for the state's speculative_method (kvplan.web.commands.SGLANG_SPECULATIVE_ALGORITHMS
# read the other way: NEXTN for the MTP layers, STANDALONE for a draft LM)
SGLANG_ALGORITHM = {"mtp": "NEXTN", "ngram": "NGRAM", "eagle": "EAGLE", "eagle3": "EAGLE3", "draft_model": "STANDALONE"}


def _model_type(state: PlanState) -> str | None:
    """The state's model_type, None where its config does not parse (the pages say why)."""
    try:
        return cached.spec(state).model_type
    except KvplanError:
        return None


def knob_text(state: PlanState, name: str) -> str:
    """One engine knob of ``state`` as the engine's command line (or environment, or the sidebar's own box) says it:
    the "Set: ..." caption under the closed Engine knobs, which named kvplan's fields ("speculative_method=mtp").
    Examples: vLLM speculative_method "mtp" -> "--speculative-config method=mtp"; SGLang -> "--speculative-algorithm
    NEXTN"; block_size 64 under SGLang -> "--page-size 64"; model_runner "V2" -> "VLLM_USE_V2_MODEL_RUNNER=1"."""
    value = getattr(state, name)
    text = BY_NAME[name].format(value) if value is not None else "default"
    sglang = state.engine == "sglang"
    switch = {"enforce_eager": "--disable-cuda-graph" if sglang else "--enforce-eager",
              "disable_custom_all_reduce": "--disable-custom-all-reduce",
              "language_model_only": "--language-model-only", "skip_mm_profiling": "--skip-mm-profiling",
              "disable_hybrid_swa_memory": "--disable-hybrid-swa-memory",
              "sglang_aiter_honor_explicit_mem_fraction": "SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION=1"}
    if name in switch:
        return switch[name] if value else f"{switch[name]} off"
    if name == "enable_expert_parallel":
        return f"--ep-size {state.tensor_parallel_size} (expert parallel)" if sglang else "--enable-expert-parallel"
    if name == "enable_prefix_caching":
        if sglang:
            return "--disable-radix-cache" if value is False else "radix cache on"
        return "--enable-prefix-caching" if value else "--no-enable-prefix-caching"
    if name == "speculative_method":
        if sglang:
            if value == "mtp" and _model_type(state) == "deepseek_v4":
                # deepseek_v4_hook.py asserts EAGLE (or DSPARK) and top-k == 1 before NEXTN is resolved or the top-k
                # default filled (kvplan.sglang_dsv4)
                return "--speculative-algorithm EAGLE --speculative-eagle-topk 1"
            return f"--speculative-algorithm {SGLANG_ALGORITHM.get(value, value)}"
        return f"--speculative-config method={value}"
    if name == "num_speculative_tokens":
        return f"--speculative-num-steps {value}" if sglang else f"--speculative-config num_speculative_tokens={value}"
    if name == "drafter":
        entry = drafter_for_model(value) if value else None
        model = entry["hf_repos"][0] if entry and entry["hf_repos"] else value
        return f"--speculative-draft-model-path {model}" if sglang else f"--speculative-config model={model}"
    if name == "vllm_version":
        return f"vLLM {value}"
    if name == "sglang_version":
        return f"SGLang {value}"
    if name == "weights_gib":
        from kvplan.web import weights_view  # (imports this module)

        return f"{weights_view.label(state.engine).removesuffix(' (GiB)')} {text} GiB"
    if name == "runtime_gib":
        return f"runtime workspace {text} GiB"
    if name == "headroom_gib":
        return f"headroom {text} GiB"
    if name == "model_runner":
        return {"V1": "VLLM_USE_V2_MODEL_RUNNER=0", "V2": "VLLM_USE_V2_MODEL_RUNNER=1"}.get(value,
                                                                                         f"model runner {text}")
    if name == "sampler":
        return {"pytorch": "VLLM_USE_FLASHINFER_SAMPLER=0", "flashinfer": "VLLM_USE_FLASHINFER_SAMPLER=1"}.get(
            value, f"sampler {text}")
    if name == "usage_context":
        return {"llm": "the offline LLM class (batch defaults)", "serve": "vllm serve"}.get(value, text)
    if name == "compile_cache":
        return f"torch.compile cache {text}"
    if name == "cudagraph_mode":
        return f"--compilation-config cudagraph_mode={text}"
    if name == "triton_kernels":
        return f"vLLM with triton_kernels {'installed (a vllm/vllm-openai image)' if value else 'not installed'}"
    if name == "piecewise_cuda_graph":
        return f"--{value}-piecewise-cuda-graph"
    if name == "dp_attention_size":
        return f"--enable-dp-attention --dp {text}"
    if name == "vllm_graph_reserved_mem":
        return f"VLLM_GRAPH_RESERVED_MEM={text}"
    if name in ("mm_limits", "mm_processor_kwargs"):
        items = ", ".join(f'"{k}": {v}' for k, v in value)
        return f"{cached.SERVING_KNOBS[name][1]} '{{{items}}}'"
    flag = {"block_size": "--page-size" if sglang else "--block-size",
            "max_num_seqs": "--max-running-requests" if sglang else "--max-num-seqs",
            "max_num_batched_tokens": "--chunked-prefill-size" if sglang else "--max-num-batched-tokens"}.get(name)
    if flag is None:
        flag = views.knob_flag(name, state.engine)  # --gpu-memory-utilization, --max-total-tokens, ...
    return f"{flag} {text}"


def release_caption(state: PlanState) -> str:
    """Under the Engine knobs' version box: the releases the chosen profile covers, in words that wrap."""
    if state.engine == "vllm":
        profile = VLLM_PROFILES[state.vllm_version]
        return views.esc(f"vLLM releases {profile.releases}" + (", V0 engine" if profile.engine_core == "V0" else ""))
    return views.esc(f"SGLang releases {SGLANG_PROFILES[state.sglang_version].releases}")


def _engine_knobs(state: PlanState, page: str) -> None:
    if state.engine == "vllm":
        versions = list(VLLM_PROFILES)
        # The box shows the line's short label; its releases go in a caption under it: "0.33 (0.32.0 - 0.33.x (newest
        # read)) - default" was cut to "0.33 (0.32.0 - 0.33.x (newes..." in the sidebar at 1400 px. "0.34" is listed
        # (links and imported v0.34.0 lines name it); it plans from estimates (kvplan.plan._extensible_budget).
        bind("vllm_version", st.selectbox, "vLLM version", versions,
             format_func=lambda v: VLLM_PROFILES[v].label + (" (default)" if v == VLLM_DEFAULT_VERSION else ""),
             help="the release line whose memory accounting (budget, sampler, CUDA graphs, log lines) is mirrored")
        st.caption(release_caption(current()))
        bind("gpu_memory_utilization", st.number_input, "gpu_memory_utilization", value=None, min_value=0.01,
             max_value=1.0, step=0.01, format="%.2f",
             placeholder=f"{VLLM_GPU_MEMORY_UTILIZATION[state.vllm_version]}",
             help="--gpu-memory-utilization")
    if state.engine == "sglang":  # in place of the vLLM version: the SGLang release line
        bind("sglang_version", st.selectbox, "SGLang version", list(SGLANG_PROFILES),
             format_func=lambda v: v + (" (default)" if v == SGLANG_DEFAULT_VERSION else ""),
             help="the release line whose memory accounting (default mem_fraction_static, KV pool, log lines) is "
                  "mirrored")
        st.caption(release_caption(current()))
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
        bind("max_num_seqs", st.number_input, "max_running_requests", value=None, min_value=1, max_value=1_000_000,
             placeholder="by the KV pool", help="--max-running-requests (kvplan's max_num_seqs): caps the running "
             "requests; without the radix cache a hybrid's MambaPool keeps this many state slots")
        bind("max_num_batched_tokens", st.number_input, "chunked_prefill_size", value=None, min_value=1,
             max_value=100_000_000, placeholder="SGLang default", help="--chunked-prefill-size (kvplan's "
             "max_num_batched_tokens): the prefill chunk SGLang's activation and CUDA-graph reserve is sized for")
        bind("enforce_eager", st.checkbox, "disable_cuda_graph", help="--disable-cuda-graph (kvplan's enforce_eager): "
             "no decode CUDA graphs, so none of their reserve")
        _vllm_only_kept(current())
    if state.engine == "custom":
        bind("runtime_gib", st.number_input, "runtime workspace (GiB)", min_value=0.0, max_value=10_000.0, step=0.5)
        bind("headroom_gib", st.number_input, "headroom (GiB)", min_value=0.0, max_value=10_000.0, step=0.5)
    _serving_knobs(current())
    bind("enable_expert_parallel", st.checkbox, "enable_expert_parallel",
         help=views.engine_flag("enable_expert_parallel", state.engine))
    from kvplan.web import weights_view

    weights_view.measured_input(state)  # "Model loading took (GiB)": measured weights


def _vllm_only_kept(state: PlanState) -> None:
    """Under SGLang's knobs: vLLM's own memory settings the state still holds (from a link, or set before the engine
    was switched), which SGLang has no flag for: --gpu-memory-utilization is named not planned; a
    --kv-cache-memory-bytes, which the SGLang plan refuses, gets a button to clear it (SGLang's sidebar has no box of
    its own for it, so every page refused with no way out but switching back to vLLM)."""
    if state.gpu_memory_utilization is not None:
        st.caption(f"Kept for vLLM, not planned with SGLang: --gpu-memory-utilization "
                   f"{BY_NAME['gpu_memory_utilization'].format(state.gpu_memory_utilization)}")
    if state.kv_cache_memory_bytes is not None:
        st.button(f"Clear --kv-cache-memory-bytes {state.kv_cache_memory_bytes:,} (vLLM's; SGLang has none)",
                  key="kv.clear_kvm", on_click=apply, kwargs={"kv_cache_memory_bytes": None},
                  help="SGLang sizes its pool with --mem-fraction-static or --max-total-tokens")


def _serving_knobs(state: PlanState) -> None:
    """The chosen engine's serving knobs (kvplan.web.cached.SERVING_KNOBS), each with its flag as help: vLLM's for
    vllm, SGLang's for sglang. A change the core refuses with the rest
    of the plan (-dcp on a V0 release or one that does not divide TP, MTP on a model without MTP layers) is refused
    as an out-of-range number is: the core's message under the knob and at the top of every page, the last valid
    value planned. Knobs of another engine kept in the state are named: not planned with this one."""
    flags = {n: f for n, (_, f) in cached.SERVING_KNOBS.items()}

    def knob(name: str, widget: Callable[..., Any], label: str, why: str, flag: str | None = None,
             **kwargs: Any) -> None:
        old = getattr(current(), name)
        new = bind(name, widget, label, help=f"{flag or flags[name]}: {why}", **kwargs)
        if new == old:
            return
        try:
            cached.plan_for(current())
        except KvplanError as exc:
            field = {"speculative_config": "speculative_method", SPECULATIVE_FLAG: "speculative_method"}.get(
                exc.field, exc.field)
            if field != name and not (name == "num_speculative_tokens" and field == "speculative_method"):
                return  # another input's refusal: the pages show it
            update(**{name: old})
            # as the box shows them (SGLang's "NEXTN / EAGLE (MTP)", not "mtp"), and the flag the core refuses named:
            # "speculative decoding = mtp: llama-3.1-8b: no multi-token-prediction layers ... Planning ngram." named
            # neither the choice nor --speculative-algorithm
            if "format_func" in kwargs or "to_widget" in kwargs:  # a select: its options' own words
                def seen(value: Any) -> str:
                    return str(kwargs.get("format_func", str)(kwargs.get("to_widget", lambda v: v)(value)))
                shown, typed = last_valid(seen(old)), seen(new)
            else:  # a number as typed, the planned one as the link writes it
                shown = unset_default(kwargs.get("placeholder")) if old is None else \
                    last_valid(_typed(old) if type(old) is int else BY_NAME[name].format(old))
                typed = new
            named = views.knob_flag(name, current().engine)
            if named.lstrip("-").replace("-", "_") != label and not exc.message.startswith(named):
                label = f"{label} ({named})"
            st.error(refusal_text(label, typed, exc.message, shown), icon=":material/block:")
            refuse(label, typed, exc.message, shown)

    if state.engine == "vllm":
        knob("decode_context_parallel_size", st.number_input, "decode_context_parallel_size", "shards the KV cache of "
             "a TP group by tokens over this many ranks (vLLM 0.11+; must divide TP)", min_value=1, max_value=1024)
        method = current().speculative_method
        knob("speculative_method", st.selectbox, "speculative decoding", "mtp loads the checkpoint's MTP layers and "
             "their KV; ngram loads nothing (both add state pages to recurrent layers); eagle / eagle3 load a draft "
             "head, draft_model a smaller LM of the same vocabulary (their weights, and their attention layers join "
             "the KV cache)", options=["none", "mtp", "ngram", "eagle", "eagle3", "draft_model"])
        _drafter_select(current(), changed=current().speculative_method != method)
        knob("num_speculative_tokens", st.number_input, "num_speculative_tokens", "draft tokens per step (planned "
             "with a speculative method only)", min_value=1, max_value=64,
             disabled=current().speculative_method == "none")
        knob("enable_prefix_caching", st.selectbox, "prefix caching", "with it vLLM keeps a hybrid's recurrent states "
             "in align mode (more state pages per request); the default is the release's (on in 0.33)",
             options=["release default", "on", "off"], to_widget=lambda v: {None: "release default", True: "on",
                                                                             False: "off"}[v],
             from_widget=lambda v: {"release default": None, "on": True, "off": False}[v])
        knob("language_model_only", st.checkbox, "language_model_only", "a multimodal model's vision / audio towers "
             "are not built: their weights are not loaded")
        knob("mm_encoder_tp_mode", st.selectbox, "mm_encoder_tp_mode", "weights shards a multimodal model's vision "
             "tower over TP, data replicates it on every rank", options=["weights", "data"])
        knob("sampler", st.selectbox, "sampler", "the top-k/top-p path of the dummy sampler run (auto: the release's "
             "default: PyTorch-native through 0.20.x, FlashInfer from 0.21.0, VLLM_USE_FLASHINFER_SAMPLER)", options=["auto", "pytorch", "flashinfer"])
        knob("usage_context", st.selectbox, "usage_context", "the batch defaults of vllm serve or of the offline LLM "
             "class", options=["serve", "llm"])
        if on_gaudi(get_gpu(current().gpu)):
            knob("vllm_graph_reserved_mem", st.number_input, "graph reserved mem", "vllm-gaudi keeps this share of "
                 "the usable memory for HPU graphs, from 0 to below 1 (default 0.1; 0 with enforce_eager)",
                 value=None, min_value=0.0, max_value=1.0, step=0.05, format="%.3f", placeholder="0.1 (vllm-gaudi)")
        elif (grm := current().vllm_graph_reserved_mem) is not None:  # a link's or Import's: kept, not planned here
            st.caption(f"VLLM_GRAPH_RESERVED_MEM={BY_NAME['vllm_graph_reserved_mem'].format(grm)} is read by "
                       f"vllm-gaudi only: not planned on {views.esc(current().gpu)}")
        _vllm_advanced(current(), knob)
    if state.engine in ("vllm", "sglang"):
        # spaced: "disable_custom_all_reduce" broke mid-word ("...all_reduc" / "e") beside the sidebar checkbox
        knob("disable_custom_all_reduce", st.checkbox, "disable custom all-reduce", "non-torch memory at TP >= 2 is "
             "much smaller without it (also where the engine turns it off itself: no P2P, TP across nodes)")
    if state.engine == "sglang":
        knob("max_total_tokens", st.number_input, "max_total_tokens", "caps SGLang's KV pool (tokens)", value=None,
             min_value=1, max_value=10**12, placeholder="by device memory")
        knob("dp_attention_size", st.number_input, "DP attention size", "attention-DP groups inside the TP group, each "
             "with its own requests and KV pool (1: off; must divide TP)", min_value=1, max_value=MAX_PARALLEL)
        knob("moe_dense_tp_size", st.number_input, "moe_dense_tp_size", "TP of the dense MLPs (1: replicated)",
             value=None, min_value=1, max_value=MAX_PARALLEL, placeholder="TP")
        knob("piecewise_cuda_graph", st.selectbox, "piecewise CUDA graphs", "the prefill graphs' reserve: opt-in "
             "(enable) through 0.5.9, reserved from 0.5.6; on by default from 0.5.10 (enforce: past SGLang's "
             "auto-disable rules; disable: off)", options=["no flag", "enable", "enforce", "disable"],
             to_widget=lambda v: v or "no flag", from_widget=lambda v: None if v == "no flag" else v)
        _sglang_speculative_knobs(current(), knob)
        _sglang_mamba_knobs(current(), knob)
        _sglang_swa_knobs(current(), knob)
        if current().mem_fraction_static is not None:  # without it SGLang scales its default either way
            knob("sglang_aiter_honor_explicit_mem_fraction", st.checkbox, "aiter: honor mem_fraction_static",
                 "SGLang 0.5.20+ on ROCm's aiter backend keeps an explicit --mem-fraction-static as given (no x 0.85)")
    if off := cached.off_engine_names(current()):  # in the words of the engine that has them (knob_text)
        words = [knob_text(current().model_copy(update={"engine": cached.SERVING_KNOBS[n][0][0]}), n) for n in off]
        st.caption(f"Kept for another engine, not planned with {state.engine}: " + views.esc(", ".join(words)))


ADVANCED = "kv.advanced"  # the Engine knobs' "advanced" switch (session only: not a plan input)


def _vllm_advanced(state: PlanState, knob: Callable[..., None]) -> None:
    """vLLM's launch settings the Import page carries (model runner, CUDA-graph mode, compile cache, --moe-backend,
    triton_kernels; for a model with
    a vision / audio tower, --limit-mm-per-prompt, --mm-processor-kwargs, --skip-mm-profiling), behind one switch:
    off, no widget of theirs is built (each costs every rerun) and the ones set are named in a caption."""
    try:
        towers = bool(cached.spec(state).towers)
    except KvplanError:
        towers = False
    names = VLLM_ADVANCED + (VLLM_ADVANCED_MM if towers else ())
    if not st.toggle("advanced", key=ADVANCED, help="launch settings a pasted line carries (Import): the model "
                     "runner, CUDA graphs, the compile cache, the MoE backend" + (
                         ", the multimodal limits" if towers else "")):
        if changed := [knob_text(state, n) for n in names if getattr(state, n) != getattr(DEFAULT, n)]:
            st.caption("Advanced set: " + views.esc(", ".join(changed)))
        return
    knob("model_runner", st.selectbox, "model runner", "V1 (gpu_model_runner.py) or V2 (v1/worker/gpu/); auto: the "
         "release's default for this checkpoint", options=["auto", "V1", "V2"])
    knob("cudagraph_mode", st.selectbox, "cudagraph_mode", "PIECEWISE captures no FULL decode graphs, NONE none at "
         "all; default: the release's", options=["release default", "NONE", "PIECEWISE", "FULL_AND_PIECEWISE"],
         to_widget=lambda v: v or "release default", from_widget=lambda v: None if v == "release default" else v)
    knob("compile_cache", st.selectbox, "compile cache", "cold: the profile run compiles (its benchmark holds a copy "
         "of the embedding shard); warm: the graphs load from ~/.cache/vllm/torch_compile_cache",
         options=["cold", "warm"])
    # the names kvplan sizes apart (kvplan.vllm_args.MOE_BACKEND_PLANNED); another one a pasted line or a link set is
    # listed too, kept as given
    backends = ["auto", *MOE_BACKEND_PLANNED] + ([] if state.moe_backend in ("auto", *MOE_BACKEND_PLANNED) else
                                                 [state.moe_backend])
    knob("moe_backend", st.selectbox, "moe_backend", "auto plans vLLM's own pick (Humming on Hopper from 0.32 for "
         "int4 / int8 weight-only and DeepSeek-V4's MXFP4 experts); marlin holds MarlinExperts' workspace, cutlass "
         "CutlassExpertsFp4's for NVFP4 experts (0.18+); another backend is kept as given, its own workspace not "
         "sized", options=backends)
    knob("triton_kernels", st.selectbox, "triton_kernels", "OpenAI's triton_kernels beside vLLM (the vllm/vllm-openai "
         "image ships it; a pip install of 0.10.2 - 0.11.x does not; bundled from 0.12.0): MXFP4 MoE on Hopper then "
         "takes Triton's layout", options=["release default", "installed", "not installed"],
         to_widget=lambda v: {None: "release default", True: "installed", False: "not installed"}[v],
         from_widget=lambda v: {"release default": None, "installed": True, "not installed": False}[v])
    if not towers:
        return
    for name, label, example in (("mm_limits", "limit_mm_per_prompt", "image:1,video:0"),
                                 ("mm_processor_kwargs", "mm_processor_kwargs", "max_pixels:1003520")):
        bind_text(name, label, lambda t, n=name: BY_NAME[n].parse(t) if t.strip() else (),
                  placeholder=example, help=f"{cached.SERVING_KNOBS[name][1]}, as KEY:NUMBER items ({example})")
    knob("skip_mm_profiling", st.checkbox, "skip_mm_profiling", "the profile run encodes no dummy multimodal batch "
         "(the towers still load)")


# SGLang's --speculative-algorithm as the sidebar offers it (kvplan.sglang.speculative_refusal plans these two);
# another method a link or the vLLM engine left in the state is shown, and refused on every page, until changed.
# The labels fit the sidebar's select (172 px at 1400 px): "NEXTN / EAGLE (MTP layers)" (178 px) and "eagle3 (not planned
# for SGLang)" (203 px) were cut; the help and the caption under the box say the rest.
SGLANG_SPECULATIVE = {"none": "none", "mtp": "NEXTN / EAGLE (MTP)", "ngram": "NGRAM", "eagle3": "EAGLE3 (head)",
                      "draft_model": "STANDALONE (LM)"}
SGLANG_SPECULATIVE_KEPT = "{} (not planned)"  # a method a link or the vLLM engine left in the state
SGLANG_SPECULATIVE_OFF = ("EAGLE3 plans a draft head kvplan ships for this model, STANDALONE a smaller preset LM of "
                          "its vocabulary (--speculative-draft-model-path; SGLang 0.5.14+, no DP attention); EAGLE (1) "
                          "heads are planned from their config.json with the CLI only (kvplan ships none)")


def _sglang_speculative_knobs(state: PlanState, knob: Callable[..., None]) -> None:
    """SGLang's speculative decoding: --speculative-algorithm (NEXTN / EAGLE on the checkpoint's MTP layers, NGRAM)
    and --speculative-num-steps, carried as the vLLM knobs are (speculative_method, num_speculative_tokens)."""
    options = [*SGLANG_SPECULATIVE] + ([] if state.speculative_method in SGLANG_SPECULATIVE else
                                       [state.speculative_method])
    method = state.speculative_method
    knob("speculative_method", st.selectbox, "speculative decoding", flag=SPECULATIVE_FLAG,
         why="NEXTN / EAGLE load the checkpoint's MTP layers (their weights before the pool is sized, their KV in its "
             "cell, SGLang 0.5.14+); EAGLE3 loads a draft head (its weights, its embedding while the pool is sized, a "
             "layer in the cell and its own pool), STANDALONE a draft LM (its weights, its layers priced as target "
             "layers in the cell, its own pool); NGRAM loads nothing; all set max_running_requests to 48 unless it "
             "is given. " + SGLANG_SPECULATIVE_OFF, options=options,
         format_func=lambda v: SGLANG_SPECULATIVE.get(v, SGLANG_SPECULATIVE_KEPT.format(v)))
    _drafter_select(current(), changed=current().speculative_method != method)  # EAGLE3's head, as vLLM's
    knob("num_speculative_tokens", st.number_input, "speculative_num_steps", flag="--speculative-num-steps",
         why="draft steps a round (SGLang's default: 5 for EAGLE3 beside a Llama, else 3); from 0.5.14 SGLang's KV "
             "pools do not depend on it (the draft's layers share the target's token slots), but on a Qwen3.5 / 3.6 "
             "hybrid NEXTN / EAGLE verify steps + 1 draft tokens, each a MambaPool state slot per running request",
         min_value=1, max_value=64,
         disabled=current().speculative_method == "none")
    knob("speculative_num_draft_tokens", st.number_input, "speculative_num_draft_tokens",
         flag="--speculative-num-draft-tokens",
         why="tokens verified a round (SGLang's default: NGRAM 12, NEXTN / EAGLE steps + 1, which top-k 1 forces); "
             "sizes a hybrid's MambaPool reserve of one state slot a draft token per running request (0.5.14+), "
             "nothing else kvplan plans", value=None, min_value=1, max_value=1024,
         placeholder="SGLang default", disabled=current().speculative_method == "none")
    st.caption(views.esc(SGLANG_SPECULATIVE_OFF) + ".")


MAMBA_OFF = "this model keeps no recurrent state, so SGLang sizes no MambaPool for it"


SWA_OFF = "this model has no sliding-window layers SGLang pools apart, so it keeps one pool over every layer"


def _sglang_swa_knobs(state: PlanState, knob: Callable[..., None]) -> None:
    """SGLang's hybrid sliding-window pool knobs (kvplan.sglang.hybrid_swa_cell, kvplan.sglang_dsv4), enabled only for
    an architecture SGLang pools so (gpt-oss, MiMo-V2-Flash, Gemma 4, DeepSeek-V4: cached.swa_pool_model)."""
    swa = cached.swa_pool_model(state)
    off = "" if swa else f" (disabled: {SWA_OFF})"
    knob("swa_full_tokens_ratio", st.number_input, "swa_full_tokens_ratio", "the sliding-window pool's tokens as a "
         "ratio of the full pool's, above 0 and at most 1 (default 0.8; DeepSeek-V4 0.1)" + off,
         value=None, min_value=0.0, max_value=1.0, step=0.1, format="%.3f", placeholder="0.8 (DeepSeek-V4 0.1)",
         disabled=not swa)
    knob("disable_hybrid_swa_memory", st.checkbox, "disable hybrid SWA memory", "one pool over every layer at the "
         "full rate (no sliding-window pool)" + off, disabled=not swa)


def _sglang_mamba_knobs(state: PlanState, knob: Callable[..., None]) -> None:
    """SGLang's MambaPool knobs and its radix-cache switch (kvplan.sglang.mamba_pool), enabled only for a model with
    recurrent-state layers (cached.recurrent_layers); for any other they change nothing, so they are disabled and
    say why. The radix switch shows vLLM's "on" as on and writes it back unchanged."""
    hybrid = cached.recurrent_layers(state) > 0
    off = "" if hybrid else f" (disabled: {MAMBA_OFF})"
    radix = state.enable_prefix_caching
    knob("enable_prefix_caching", st.selectbox, "radix cache", flag="--disable-radix-cache",
         why="off, a hybrid's MambaPool keeps one state slot a request (sized by --max-running-requests, else "
         "512 slots through 0.5.8 and the ratio from 0.5.9) and no prefix states; on (SGLang's default), 3 slots a "
         "request, 5 with extra_buffer (0.5.14+)" + off,
         options=["on", "off"], to_widget=lambda v: "off" if v is False else "on",
         from_widget=lambda v: False if v == "off" else (None if radix is False else radix), disabled=not hybrid)
    knob("mamba_full_memory_ratio", st.number_input, "mamba_full_memory_ratio", "the MambaPool's memory as a "
         "ratio of the KV pool's: of what the weights leave, r / (1 + r) goes to the state slots (default "
         f"{SGLANG_MAMBA_FULL_MEMORY_RATIO}){off}",
         value=None, min_value=0.0, max_value=MAX_MAMBA_RATIO, step=0.1, format="%.3f",
         placeholder=f"{SGLANG_MAMBA_FULL_MEMORY_RATIO} (SGLang default)", disabled=not hybrid)
    knob("max_mamba_cache_size", st.number_input, "max_mamba_cache_size", "the MambaPool's state slots (default: "
         f"sized by the ratio){off}", value=None, min_value=1, max_value=MAX_MAMBA_SLOTS,
         placeholder="sized by the ratio", disabled=not hybrid)
    knob("mamba_ssm_dtype", st.selectbox, "mamba_ssm_dtype", "the temporal (SSM) state's dtype; the conv state is "
         f"always bfloat16 (default: the config's mamba_ssm_dtype where the SGLang line reads it, 0.5.9+, else "
         f"float32){off}",
         options=["config / float32", *MAMBA_SSM_DTYPES], to_widget=lambda v: v or "config / float32",
         from_widget=lambda v: None if v == "config / float32" else v, disabled=not hybrid)
    if not hybrid:
        st.caption(f"MambaPool knobs and radix cache: {MAMBA_OFF}.")


def _drafter_select(state: PlanState, changed: bool) -> None:
    """The draft head of eagle / eagle3 (disabled with another method, as num_speculative_tokens is): the heads kvplan
    ships for this model (cached.drafters_for: DRAFTERS.json ``target`` and ``method``), the first chosen when the
    method was just picked. None for this model: said plainly (every page then shows the core's refusal, not a plan
    without the head)."""
    method = state.speculative_method
    if method == "draft_model":
        return _draft_model_select(state, changed)
    eagle = method in DRAFT_METHODS
    heads = cached.drafters_for(state) if eagle else ()
    if changed and eagle and state.drafter not in heads:  # the method just picked: its first head (or none)
        update(drafter=heads[0] if heads else None)
        _ss.pop(PREFIX + "drafter", None)
    if eagle and not heads:
        # in the engine's words: SGLang's --speculative-algorithm EAGLE / EAGLE3 (SGLANG_ALGORITHM), vLLM's method
        word = (lambda m: SGLANG_ALGORITHM.get(m, m)) if state.engine == "sglang" else (lambda m: m)
        ships = ", ".join(f"{e['target']} ({word(e['method'])})" for e in drafter_manifest())
        model = cached.model_preset(state) or state.model_name or "this config"
        st.info(f"No {views.esc(word(method))} draft head kvplan ships is for {views.esc(model)} (it ships heads for "
                f"{views.esc(ships)}): every page refuses this method. Choose another method or model, or plan the "
                "head's config.json with the CLI (kvplan plan ... --draft-config PATH).", icon=":material/info:")
    kept = current().drafter  # a link's head for another model stays (and is refused) until one is chosen here
    bind("drafter", st.selectbox, "draft head", list(heads), index=None, disabled=not heads,
         placeholder="choose a draft head" if heads else "eagle / eagle3 heads only" if not eagle else "none",
         to_widget=lambda v: v if v in heads else None, from_widget=lambda v: kept if v is None else v,
         format_func=lambda n: f"{n} ({', '.join(drafter_for_model(n)['hf_repos'][:1])})",
         help=drafter_help(state.engine, "head"))


def drafter_help(engine: str, kind: str) -> str:
    """The draft selector's help (``kind`` "head": an EAGLE head, "model": draft_model / STANDALONE's LM) in the
    engine's words: vLLM's --speculative-config model, whose layers join the KV groups; SGLang's
    --speculative-draft-model-path, whose layers SGLang prices into each token's cell (kvplan.sglang: EAGLE3's head
    a layer, STANDALONE's LM as target layers) and keeps in a draft pool of its own. Worked example: ("sglang",
    "head") -> "--speculative-draft-model-path (EAGLE3): the heads kvplan/presets/DRAFTERS.json ships for this
    model; SGLang loads its weights, holds its embedding while the pool is sized, prices its layer into each token's
    cell and keeps its own token-to-KV pool"."""
    if engine == "sglang":
        if kind == "head":
            return ("--speculative-draft-model-path (EAGLE3): the heads kvplan/presets/DRAFTERS.json ships for this "
                    "model; SGLang loads its weights, holds its embedding while the pool is sized, prices its layer "
                    "into each token's cell and keeps its own token-to-KV pool. EAGLE (1): kvplan ships no head; "
                    "plan one from its config.json with the CLI (kvplan plan ... --draft-config PATH)")
        return ("--speculative-draft-model-path (STANDALONE): presets of this model's vocabulary, smallest first; "
                "SGLang loads its weights (at the target's TP, in the served dtype), prices its layers as target "
                "layers into each token's cell and keeps its own token-to-KV pool")
    if kind == "head":
        return ("--speculative-config model (eagle / eagle3): the heads kvplan/presets/DRAFTERS.json ships for this "
                "model and method; its weights are planned and its attention layers join the KV groups")
    return ("--speculative-config model (draft_model): presets of this model's vocabulary, smallest first; its weights "
            "(at the target's TP, in the served dtype) are planned and its KV layers join the KV groups")


def _draft_model_select(state: PlanState, changed: bool) -> None:
    """draft_model's draft LM: the presets of the model's vocabulary that are smaller (cached.draft_models_for), the
    smallest of its family chosen when the method was just picked (none where it has none: the user chooses)."""
    models, default = cached.draft_models_for(state)
    if changed and state.drafter not in models:
        update(drafter=default)
        _ss.pop(PREFIX + "drafter", None)
    if not models:
        # in the engine's own words: SGLang's method is STANDALONE, its check _validate_vocab_compatibility
        sgl = state.engine == "sglang"
        who, method = ("SGLang", "STANDALONE") if sgl else ("vLLM", "draft_model")
        cli = "--engine sglang --speculative-algorithm STANDALONE" if sgl else \
            "--speculative-config '{\"method\": \"draft_model\", ...}'"
        st.info(f"No preset shares this model's vocabulary and is smaller ({who} needs equal vocab_size): every page "
                f"refuses {method}. Plan a draft's config.json with the CLI (kvplan plan ... {cli} --draft-config "
                "PATH).", icon=":material/info:")
    kept = current().drafter
    bind("drafter", st.selectbox, "draft model", list(models), index=None, disabled=not models,
         placeholder="choose a draft model" if models else "none", to_widget=lambda v: v if v in models else None,
         from_widget=lambda v: kept if v is None else v, help=drafter_help(state.engine, "model"))


def block_size_widget(container: Any = st) -> int | None:
    state = current()
    options = ["default", *sorted(set(BLOCK_SIZES) | ({state.block_size} if state.block_size else set()))]
    try:  # the engine's own choice for this model (a hybrid's is e.g. 528, not 16): "default (528)"
        default = f"default ({cached.plan_for(state.model_copy(update={'block_size': None})).block_size})"
    except KvplanError:
        default = "default"
    # SGLang's flag and its log say page (--page-size, "page_size=64"), as the Budget's heading does for it
    label = "page_size (tokens per page)" if state.engine == "sglang" else "block_size (tokens per block)"
    return bind("block_size", container.selectbox, label, options,
                format_func=lambda v: default if v == "default" else str(v),
                to_widget=lambda v: v or "default", from_widget=lambda v: None if v == "default" else int(v),
                # "64 for MLA" was wrong for most MLA plans: DeepSeek-V3 takes 16 on an H100 and 32 on a B200 in 0.33
                help=("--page-size. Default (the number beside it): SGLang's own choice for this model: 1 token a "
                      "page, 64 for DeepSeek sparse attention (DSA) models, 256 for DeepSeek-V4."
                      if state.engine == "sglang" else
                      "--block-size. Default (the number beside it): the engine's own choice for this model, GPU and "
                      "release: 16 in vLLM, an MLA attention backend's own block (FlashMLA 64, CUTLASS MLA 128, "
                      "FlashInfer MLA 32), a hybrid's attention block grown to the state page. Through vLLM 0.17 "
                      "an MLA backend replaces a typed size it does not take (FlashMLA: 64); the plan runs what vLLM "
                      "runs."
                      + (f" vLLM {state.vllm_version} takes {vllm_block_sizes_text(state)}." if state.engine == "vllm"
                         else "")))


# ----------------------------------------------------------------------------- model sources

def use_config(config: dict, name: str | None) -> None:
    """Make a pasted/uploaded/fetched config the plan's model. Raises KvplanError if it cannot be planned."""
    try:
        text = encode_config(config)
    except ValueError as exc:
        raise KvplanError("config", str(exc)) from None
    build_with_progress(text, name)  # raises ConfigError, before the state changes
    apply(config=text, model_name=name)
    _ss.pop(PREFIX + "model", None)


MODEL_ERROR = "model.error"


def build_with_progress(text: str, name: str | None):
    """The spec of a config in link form; a progress bar while it is built through transformers (the
    first time only: the spec is cached afterwards). Raises as ``spec_from_link``."""
    if is_cached(text, name):
        return spec_from_link(text, name)
    try:
        config = decode_config(text)
    except ValueError:
        return spec_from_link(text, name)  # raises the link's own error
    if not needs_transformers(config):
        return spec_from_link(text, name)
    bar = st.progress(0.0, text="Building the model through transformers (once; cached afterwards)...")

    def progress(fraction: float, message: str) -> None:
        bar.progress(min(max(float(fraction), 0.0), 1.0), text=views.esc(str(message)[:200]))

    try:
        return spec_from_link(text, name, progress)
    finally:
        bar.empty()


def use_pasted_config() -> None:
    """Callback of the Model page's 'Use this config' button."""
    use_config_text(_ss.get("model.paste") or "", None, "the pasted config.json")


def use_uploaded_config() -> None:
    upload = _ss.get("model.upload")
    if upload is not None:
        use_config_text(upload.getvalue(), None, f"the uploaded file {upload.name[:80]}")


def use_config_text(text: str | bytes, name: str | None, source: str) -> None:
    """Plan the config.json ``text`` (pasted, uploaded, or a checkpoint's) as ``name``; a refusal is kept as the model
    error, naming ``source``."""
    _ss.pop(MODEL_ERROR, None)
    try:
        use_config(load_config_text(text), name)
    except KvplanError as exc:
        _ss[MODEL_ERROR] = (str(exc), False, source)


def fetch_hub_config(repo_id: str) -> None:
    """Fetch ``repo_id``'s config.json and make it the model (errors are kept for show_model_error)."""
    _ss.pop(MODEL_ERROR, None)
    source = f"the Hub fetch of {repo_id.strip()[:200]}"
    try:
        use_config(hub.fetch_config(repo_id), repo_id.strip())
    except hub.HubError as exc:
        _ss[MODEL_ERROR] = (str(exc), exc.offline, source)
        return
    except KvplanError as exc:
        _ss[MODEL_ERROR] = (str(exc), False, source)
        return
    st.rerun()


def show_model_error() -> None:
    if MODEL_ERROR in _ss:
        message, offline, *_ = _ss[MODEL_ERROR]
        if offline:
            st.warning(f"Offline: {views.esc(message)}", icon=":material/cloud_off:")
        else:
            st.error(views.esc(message), icon=":material/error:")


# ----------------------------------------------------------------------------- after the page

def finish(nav: Any, pages: list, here: str = "", path: str | None = None) -> None:
    """Write the URL, draw the page links (carrying the plan) and the share box.

    ``pages``: the pages linked; ``here``: the running page's url_path ("" at the app's root), ``path``: the one the
    share link opens (the root's is Budget's, "budget"; None: ``here``).

    A plan whose link would pass MAX_LINK_QUERY characters (a large pasted config, a long command or
    length list) writes a shorter link without those fields, says so, and points to the plan JSON."""
    params, cut = link_params(_ss[STATE])
    if st.query_params.to_dict() != params:
        st.query_params.from_dict(params)
    _ss[URL] = _ss[URL + ".written"] = params
    with nav:  # the same links for the same plan: replayed (views.replayed), 7 page_link calls saved
        views.replayed("links", lambda: _page_links(pages, params), tuple(params.items()),
                       tuple(page.url_path for page in pages))
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
            _share(params, cut, here, path)


def _page_links(pages: list, params: dict[str, str]) -> None:
    for page in pages:
        st.page_link(page, query_params=params)


def share_url(params: dict[str, str], here: str = "", path: str | None = None) -> str:
    """The address of the page at url_path ``path`` (None: ``here``) with the plan's query. ``st.context.url`` is the
    running page's address, the app's base plus ``here`` (that page's url_path, "" at the root: "http://host:8501",
    without a "/"; the link read "http://host:8501?v=1..."). Worked example: at the root, here "", path "budget",
    context "http://host:8501" -> "http://host:8501/budget?v=1&m=...", the page the page links open."""
    base = (st.context.url or "").removesuffix("/")
    if here and base.endswith("/" + here):
        base = base[: -len(here) - 1]
    query = urllib.parse.urlencode(params)
    url = f"{base}/{here if path is None else path}"
    return f"{url}?{query}" if query else url


def _share(params: dict[str, str], cut: list[str] = (), here: str = "", path: str | None = None) -> None:
    if cut:
        st.caption("The link below leaves out what made it too long (it says so when opened); the Plan JSON "
                   "holds everything.")
    else:
        st.caption("The link reopens this page with this exact plan. Copy it with the copy button at its "
                   "top right.")
    st.code(share_url(params, here, path), language=None, wrap_lines=True)
    state = current()
    # One per row: side by side in the sidebar their labels were cut to "Plan ...".
    st.download_button("Plan JSON", data=lambda: plan_json(state), file_name="kvplan-plan.json",
                       mime="application/json", on_click="ignore", icon=":material/download:", width="stretch",
                       help="Every input and the whole plan; Restore a plan JSON opens it again.")
    st.download_button("Plan CSV", data=lambda: views.plan_csv(state), file_name="kvplan-plan.csv",
                       mime="text/csv", on_click="ignore", icon=":material/download:", width="stretch",
                       help="The inputs and the plan's numbers, one per row.")
    st.file_uploader("Restore a plan JSON", type=["json"], key="kv.upload", on_change=_restore,
                     max_upload_size=MAX_PLAN_UPLOAD_MB)


def plan_json(state: PlanState) -> str:
    doc = to_document(state)
    try:
        # model_dump_json writes a non-finite float as null: the file stays strict JSON (allow_nan=False).
        doc["plan"] = json.loads(cached.plan_for(state).model_dump_json())
    except KvplanError as exc:
        doc["plan_error"] = str(exc)
    return json.dumps(doc, indent=2, allow_nan=False)


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
