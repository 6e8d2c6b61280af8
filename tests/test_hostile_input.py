"""Hostile and broken input, property-based: the link decoder, plan files, the ``vllm serve`` parser and the CLI.

The only outcomes allowed: a plan (or a state that plans) or kvplan's typed error. The link decoder
never raises at all: it returns a state and warnings naming each parameter it could not use.
"""

import contextlib
import io
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvplan import KvplanError, preset_config, preset_names
from kvplan.gpus import get_gpu
from kvplan.hf_config import load_config_text
from kvplan.paging import page_sequences
from kvplan.plan import Plan, plan
from kvplan.vllm_args import VllmArgs, parse_vllm_command
from kvplan.web import cached, views
from kvplan.web.state import (
    BY_KEY, BY_NAME, DEFAULT, PlanState, decode, encode, encode_config, from_document, link_params, model_spec,
    workload_lengths,
)

N = int(os.environ.get("KVPLAN_HYPOTHESIS_EXAMPLES", "150"))
SETTINGS = settings(max_examples=N, deadline=None, suppress_health_check=list(HealthCheck))

# Text an attacker (or a careless paste) puts in a value: numbers in every spelling, NaN/inf, huge and
# negative numbers, non-ASCII digits and look-alikes, markup, control characters, long runs.
NASTY = st.sampled_from([
    "", " ", "0", "-0", "-1", "1", "+3", "1.5", "1e3", "1e309", "-1e309", "nan", "NaN", "inf", "-inf", "Infinity",
    "0x10", "1_000", "32k", "32K", "25.6k", "1.5K", "9" * 30, "9" * 5000, "²", "٣", "١٢", "１６", "Ⅻ", "0.0000001",
    "5e-324", "1e-400", "true", "false", "null", "None", "[]", "{}", "'", '"', "\\", "\x00", "\n", "a\nb", "%00",
    "<script>alert(1)</script>", "**bold**", "[x](javascript:alert(1))", "$$\\latex$$", "../../etc/passwd",
    "H100-SXM", "llama-3.1-8b", "2x1x1", "8:1:100:3", "H100-SXM:2.5", "vllm", "custom", "fp8", "int4-g128",
])
VALUE = (NASTY | st.text(max_size=40) | st.integers(-10**40, 10**40).map(str) | st.floats().map(repr)
         | st.builds(lambda a, n: a * n, NASTY, st.integers(1, 3000)))
KEYS = st.sampled_from(sorted(BY_KEY) + ["v", "cut"]) | st.text(max_size=12)
PARAMS = st.dictionaries(KEYS, VALUE | st.lists(VALUE, max_size=3), max_size=8)

JSON_SCALARS = (st.none() | st.booleans() | st.integers(-10**30, 10**30) | st.floats() | st.text(max_size=30)
                | NASTY)
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.text(max_size=12), inner, max_size=4), max_leaves=16)


def plans_or_refuses(state: PlanState) -> None:
    """Every number a page shows for ``state``: a result or a KvplanError (what the pages catch)."""
    try:
        spec = model_spec(state)
    except KvplanError:
        return
    try:
        p = plan(spec, get_gpu(state.gpu), cached.engine_config(state), cached.layout(state), state.concurrency)
        assert isinstance(p, Plan) and p.num_blocks >= 0
    except KvplanError as exc:
        assert exc.field and exc.message
    try:
        page_sequences(workload_lengths(state), state.block_size or 16, state.shared_prefix)
    except KvplanError as exc:
        assert exc.field


# ----------------------------------------------------------------------------------- the link decoder

@SETTINGS
@given(PARAMS)
def test_any_link_decodes_to_a_state_and_warnings_naming_each_refused_parameter(params):
    state, warnings = decode(params)
    assert isinstance(state, PlanState) and all(isinstance(w, str) for w in warnings)
    for key, raw in params.items():
        if key in ("v", "cut"):  # the link's version, and what a too-long link left out
            continue
        text = raw[-1] if isinstance(raw, list) and raw else ("" if isinstance(raw, list) else raw)
        named = [w for w in warnings if f"{key[:40]!r}" in w or f"'{key}'" in w]
        if key not in BY_KEY:
            assert named, (key, warnings)
            continue
        field = BY_KEY[key]
        if not named:  # accepted: the state holds exactly what the parameter says
            assert getattr(state, field.name) == field.parse(text)
    # what the app writes back reads back to the same state, silently (or says what it left out)
    assert decode(encode(state)) == (state, [])
    params, cut = link_params(state)
    again, notes = decode(params)
    assert len(notes) == bool(cut) and again == state.model_copy(
        update={BY_KEY[k].name: getattr(DEFAULT, BY_KEY[k].name) for k in cut}
        | ({"model_name": None} if "cfg" in cut else {}))
    plans_or_refuses(state)


@SETTINGS
@given(config=st.dictionaries(st.sampled_from(["model_type", "hidden_size", "num_hidden_layers", "num_attention_heads",
                                               "num_key_value_heads", "head_dim", "vocab_size", "intermediate_size",
                                               "max_position_embeddings", "sliding_window", "torch_dtype",
                                               "_name_or_path", "architectures", "text_config", "layer_types"]),
                              JSON_VALUES, max_size=10),
       base=st.sampled_from(["llama-3.1-8b", "qwen3-0.6b", "deepseek-v3", "gemma-3-27b-it", "nemotron-h-56b"]))
def test_a_linked_config_of_anything_plans_or_warns(config, base):
    """A config in a link (compressed JSON) is checked like a pasted one: a plan or a warning on 'cfg'."""
    cfg = {**preset_config(base), **config}
    try:
        text = encode_config(cfg)
    except ValueError:
        return  # too large for a link: the app says so before it writes a link
    state, warnings = decode({"v": "1", "cfg": text, "mn": "x"})
    assert (state.config is None) == any("'cfg'" in w for w in warnings)
    plans_or_refuses(state)


def test_deep_and_huge_link_values_are_refused_quickly():
    deep = encode_config({"a": 1})  # a valid payload, then hostile variants
    state, warnings = decode({"cfg": deep + "!" * 100_000, "pl": "1," * 200_000, "lay": "1x1x1," * 50_000,
                              "mn": "a" * 10_000, "tp": "9" * 100_000, "pr": "H100-SXM:1," * 20_000})
    assert state == DEFAULT and len(warnings) == 6


# ----------------------------------------------------------------------------------- plan files

@SETTINGS
@given(st.dictionaries(st.sampled_from(list(BY_NAME)) | st.text(max_size=10), JSON_VALUES, max_size=8),
       st.none() | JSON_SCALARS)
def test_any_plan_file_restores_a_state_or_says_why(inputs, version):
    doc = {"kvplan_plan": version, "inputs": inputs} if version is not None else {"inputs": inputs}
    doc = json.loads(json.dumps(doc))  # what an uploaded file can hold (NaN/inf become NaN/Infinity literals)
    state, warnings = from_document(doc)
    assert isinstance(state, PlanState) and all(isinstance(w, str) for w in warnings)
    plans_or_refuses(state)


@SETTINGS
@given(JSON_VALUES)
def test_any_json_value_is_not_a_plan_file_or_restores_defaults(doc):
    state, warnings = from_document(doc)
    assert isinstance(state, PlanState)


# ----------------------------------------------------------------------------------- vllm serve

FLAGS = ["--model", "--tensor-parallel-size", "-tp", "--pipeline-parallel-size", "-pp", "--data-parallel-size",
         "--max-model-len", "--max_model_len", "--gpu-memory-utilization", "--kv-cache-dtype", "--block-size",
         "--max-num-seqs", "--max-num-batched-tokens", "--kv-cache-memory-bytes", "--kv-cache-memory", "--dtype",
         "--quantization", "-q", "--enforce-eager", "--enable-expert-parallel", "--port", "--cpu-offload-gb",
         "--enable-lora", "--trust-remote-code", "--unknown-flag", "-x", "--", "-"]
TOKEN = st.sampled_from(FLAGS) | VALUE | st.builds(lambda f, v: f"{f}={v}", st.sampled_from(FLAGS), VALUE)


@SETTINGS
@given(prefix=st.sampled_from(["", "vllm serve ", "python -m vllm.entrypoints.openai.api_server ", "A=1 vllm serve ",
                               "docker run --gpus all vllm/vllm-openai:latest "]),
       tokens=st.lists(TOKEN, max_size=14), raw=st.booleans())
def test_any_vllm_command_is_args_or_a_typed_error(prefix, tokens, raw):
    import shlex

    command = prefix + (" ".join(tokens) if raw else shlex.join(tokens))
    try:
        args = parse_vllm_command(command)
    except KvplanError as exc:
        assert exc.field and exc.message
        return
    assert isinstance(args, VllmArgs)
    # what the Import page does next: the state those flags mean, its plan, and "Use these settings",
    # whose every value must survive the link (else the button's callback would raise)
    try:
        imported, note = views.imported_state(PlanState(import_gpu="H100-SXM"), args)
    except KvplanError as exc:
        assert exc.field.startswith("--")
        return
    assert isinstance(note, str)
    if imported is not None:
        plans_or_refuses(imported)
        for name, value in views.changes_from(PlanState(import_gpu="H100-SXM"), imported).items():
            if value is not None:
                BY_NAME[name].parse(BY_NAME[name].format(value))


@SETTINGS
@given(st.text(max_size=300))
def test_any_text_as_a_command_is_args_or_a_typed_error(text):
    try:
        parse_vllm_command(text)
    except KvplanError as exc:
        assert exc.field


def test_command_length_is_capped():
    with pytest.raises(KvplanError, match="longer than"):
        parse_vllm_command("vllm serve x " + "--port 1 " * 5000)


# ----------------------------------------------------------------------------------- the CLI

def _plausible(action) -> st.SearchStrategy[str]:
    """Values argparse accepts for this flag (so the run reaches kvplan), at every magnitude and sign."""
    if action.choices:
        return st.sampled_from(sorted(map(str, action.choices)))
    if action.type is int:
        return st.one_of(st.integers(-3, 70), st.integers(-10**4, 10**9), st.integers(-10**30, 10**30)).map(str)
    if action.type is float:
        return st.one_of(st.floats(-2, 2), st.floats(), st.sampled_from([0.0, 1.0, 1e-300, 1e300])).map(repr)
    if "lengths" in action.dest:
        return st.lists(st.integers(-10, 10**9), max_size=30).map(lambda v: ",".join(map(str, v)))
    if "format" in action.dest or "dtype" in action.dest:
        return st.sampled_from(["bf16", "fp8", "int4-g128", "int4-g0", "int4-g-1", "mxfp4", "nvfp4", "auto",
                                "fp32", "int8", "fp8-block", "int4-g999999999999"])
    if action.dest == "gpu":
        return st.sampled_from(["H100-SXM", "h100", "A10G", "B200", "MI300X", "L4", "H200"])
    return VALUE


def _subcommands():
    from kvplan.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    out = {}
    for name, p in sub.choices.items():
        if name == "validate":  # runs torch; its flag checks are covered in tests/test_validate.py
            continue
        flags = [(max(a.option_strings, key=len), a.nargs == 0, _plausible(a))
                 for a in p._actions if a.option_strings and "-h" not in a.option_strings]
        positional = any(not a.option_strings for a in p._actions)
        out[name] = (flags, positional)
    return out


SUBCOMMANDS = _subcommands()
MODELS = st.sampled_from(preset_names()) | st.sampled_from(preset_names()) | st.sampled_from(
    ["no-such-model", "", "../../etc/passwd", "/dev/zero", "/etc", "x.json", "meta-llama/Llama-3.1-8B", "LLAMA-3.1-8B",
     "<script>", "-"]) | st.text(max_size=20)


@st.composite
def argv(draw):
    name = draw(st.sampled_from(sorted(SUBCOMMANDS)))
    flags, positional = SUBCOMMANDS[name]
    out = [name]
    if positional:
        out.append(draw(MODELS))
    chosen = draw(st.lists(st.sampled_from(range(len(flags))), max_size=6, unique=True)) if flags else []
    for flag, switch, plausible in (flags[i] for i in chosen):
        if switch:
            out.append(flag)
            continue
        value = draw(plausible | plausible | VALUE)  # mostly values argparse takes, so kvplan sees them
        if draw(st.booleans()):
            out.append(f"{flag}={value}")
        else:
            out += [flag, value]
    return out


def run_cli(args: list[str]) -> tuple[int, str, str]:
    from kvplan.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as exc:  # argparse's own refusals exit 2 (and --help 0), as `python -m kvplan` does
            code = exc.code
    return code, out.getvalue(), err.getvalue()


@settings(max_examples=max(N, 200), deadline=None, suppress_health_check=list(HealthCheck))
@given(argv())
def test_cli_exits_0_or_2_with_an_error_line(args):
    code, out, err = run_cli(args)
    assert code in (0, 2), (args, code, err[-500:])
    if code == 2:
        assert err.startswith("error:"), (args, err[:300])
    assert "Traceback" not in err


@pytest.mark.parametrize("args", [
    ["plan", "llama-3.1-8b", "--gpu-memory-utilization", "nan"],
    ["plan", "llama-3.1-8b", "--runtime-gib", "inf", "--engine", "custom"],
    ["plan", "llama-3.1-8b", "--max-model-len", "9" * 5000],
    ["plan", "llama-3.1-8b", "--concurrency", str(10**30)],
    ["plan", "llama-3.1-8b", "--lengths", "1," * 100 + "-5"],
    ["plan", "llama-3.1-8b", "--gpus-per-node", "0"],
    ["plan", "llama-3.1-8b", "--num-gpus", "-1"],
    ["plan", "llama-3.1-8b", "--shared-prefix", "-1", "--lengths", "4"],
    ["kv", "llama-3.1-8b", "--tokens", str(10**12)],
    ["kv", "llama-3.1-8b", "--lengths", ""],
    ["params", "/dev/zero"],
    ["params", "../../etc/passwd.json"],
])
def test_cli_edge_values(args):
    code, out, err = run_cli(args)
    assert code in (0, 2) and (code == 0 or err.startswith("error:")), (code, err)


# ----------------------------------------------------------------------------------- config text

@SETTINGS
@given(st.builds(lambda head, n, tail: head + "9" * n + tail, st.sampled_from(['{"hidden_size": ', '{"a": [', '[']),
                 st.integers(4400, 20_000), st.sampled_from(["}", "]}", ""])))
def test_numbers_too_long_to_convert_are_a_config_error(text):
    from kvplan import ConfigError

    with pytest.raises(ConfigError):
        load_config_text(text)


def test_huge_strings_unicode_and_deep_nesting_are_config_errors_or_plans():
    from kvplan import ConfigError, parse_config

    base = preset_config("llama-3.1-8b")
    spec = parse_config({**base, "_name_or_path": "ℓlama\u202e\u200b" + "x" * 1000})  # names are cut, never executed
    assert len(spec.name) <= 200
    for bad in ({**base, "model_type": "x" * 100_000, "hidden_size": "\u0664\u0660\u0669\u0666"},
                {**base, "num_hidden_layers": 10**100}, {**base, "vocab_size": -(10**40)},
                {**base, "max_position_embeddings": 1e308}, {**base, "rope_scaling": {"factor": float("inf")}}):
        try:
            parse_config(bad)
        except ConfigError:
            pass
    with pytest.raises(ConfigError, match="nested"):
        load_config_text('{"a": ' + "{\"b\": " * 40 + "1" + "}" * 40 + "}")
