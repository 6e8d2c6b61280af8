"""Import carries the launch settings the core plans beyond the sidebar's main inputs: --limit-mm-per-prompt
(mm_limits), --mm-processor-kwargs, --skip-mm-profiling, VLLM_USE_V2_MODEL_RUNNER (model_runner), --compilation-config
cudagraph_mode, the compile cache, vllm-gaudi's VLLM_GRAPH_RESERVED_MEM and SGLang's
SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION: each a PlanState field with a
link key (a tampered value named and replaced by the default), planned, set by Apply, listed in the Import table."""

import contextlib
import io
import json

import pytest

from kvplan.cli import main as cli_main
from kvplan.web.state import DEFAULT, PlanState, decode, encode, from_document, to_document
from tests.app_util import html_tables, plain, run_app, state

IMPORT = "pages/import.py"
VL_LINE = ("vllm serve Qwen/Qwen3-VL-8B-Instruct --max-model-len 32768 --limit-mm-per-prompt '{\"image\":0}'")
ACTIVATION = "activation peak"  # the term's name continues with what peaks (here the encoder step)


def pasted(command: str, gpu: str = "H100-SXM"):
    at = run_app(page=IMPORT)
    at.text_area(key="w.command").set_value(command).run()
    at.selectbox(key="w.import_gpu").select(gpu).run()
    return at


def import_rows(at) -> dict[str, str]:
    return {r["flag"]: r["value"] for r in next(t for t in html_tables(at) if t and "flag" in t[0])}


def budget_terms(at) -> dict[str, int]:
    rows = next(t for t in html_tables(at) if t and "term" in t[0])
    return _by_prefix({r["term"]: int(r["bytes"].replace(",", "")) for r in rows})


def _by_prefix(terms: dict[str, int]) -> dict[str, int]:
    """The terms, with the activation peak also under ACTIVATION (its full name says what peaks)."""
    peak = [v for k, v in terms.items() if k.startswith(ACTIVATION)]
    return {**terms, ACTIVATION: peak[0]} if len(peak) == 1 else terms


def cli_terms(*flags: str) -> dict[str, int]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cli_main(["plan", "qwen3-vl-8b-instruct", "--gpu", "H100-SXM", "--max-model-len", "32768", *flags, "--json"])
    return _by_prefix({t["name"]: t["bytes"] for t in json.loads(out.getvalue())["ranks"][0]["terms"]})


def test_limit_mm_per_prompt_is_applied_linked_and_planned_as_the_cli_plans_it():
    at = pasted(VL_LINE)
    assert import_rows(at)["--limit-mm-per-prompt"] == "image:0"  # planned, listed as such
    assert not any("not planned" in plain(w.value) for w in at.warning)
    at.button(key="import.apply").click().run()
    s = state(at)
    assert (s.model, s.mm_limits, s.gpu) == ("qwen3-vl-8b-instruct", (("image", 0),), "H100-SXM")
    assert at.query_params["mml"] == "image:0"
    link = dict(at.query_params)
    at.switch_page("pages/budget.py").run()
    app = budget_terms(at)
    cli = cli_terms("--limit-mm-per-prompt", '{"image": 0}')
    # the multimodal profile with images off: the video item (12,288 tokens, 49,152 patches) is the encoder step,
    # 2,025,848,832 B; with images on (vLLM's 999) the peak is 2,701,131,776 B (kvplan.vllm_mm): the app plans the
    # CLI's figure for the same line, not the one without the flag
    assert app[ACTIVATION] == cli[ACTIVATION] == 2_025_848_832
    assert cli_terms()[ACTIVATION] == 2_701_131_776
    assert app["weights"] == cli["weights"] == 17_603_453_408  # the video modality keeps the ViT loaded
    again = run_app(link)  # the link reopens it
    assert state(again).mm_limits == (("image", 0),) and budget_terms(again)[ACTIVATION] == 2_025_848_832


def test_v2_model_runner_env_zero_plans_the_v1_runner():
    at = pasted("VLLM_USE_V2_MODEL_RUNNER=0 vllm serve Qwen/Qwen3-8B --max-model-len 8192")
    assert import_rows(at)["VLLM_USE_V2_MODEL_RUNNER"] == "V1"
    at.button(key="import.apply").click().run()
    assert state(at).model_runner == "V1" and at.query_params["mr"] == "V1"
    from kvplan.web import cached

    assert cached.plan_for(state(at)).model_runner == "V1"
    assert cached.plan_for(state(at).model_copy(update={"model_runner": "auto"})).model_runner == "V2"  # 0.33's default
    at.switch_page("pages/budget.py").run()
    terms = [r for r in next(t for t in html_tables(at) if t and "term" in t[0]) if r["term"].startswith("activation")]
    assert "V2 model runner" not in terms[0]["source"]


def test_sglang_aiter_env_is_carried_not_listed_as_unplanned():
    at = pasted("SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION=1 python -m sglang.launch_server --model-path "
                "Qwen/Qwen3-8B --mem-fraction-static 0.6")
    assert import_rows(at)["SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION"] == "on"
    assert not any("AITER" in plain(w.value) for w in at.warning)
    at.button(key="import.apply").click().run()
    s = state(at)
    assert (s.engine, s.sglang_aiter_honor_explicit_mem_fraction, at.query_params["aiter"]) == ("sglang", True, "1")
    from kvplan.web import cached

    assert cached.engine_config(s).sglang_aiter_honor_explicit_mem_fraction is True
    at.session_state["kv.knobs"] = True
    at.run()  # with --mem-fraction-static 0.6 the switch matters: drawn, on
    assert at.checkbox(key="w.sglang_aiter_honor_explicit_mem_fraction").value is True


def test_a_tampered_key_is_named_and_falls_back():
    at = run_app({"v": "1", "m": "qwen3-vl-8b-instruct", "mr": "V3", "mml": "image:-1", "cgm": "FULL",
                  "mmpk": "max_pixels:0"})
    shown = [plain(w.value) for w in at.warning]
    assert any("Link parameter 'mr' (model_runner) = 'V3': must be one of auto, V1, V2; using the default (auto)."
               in w for w in shown)
    assert any("Link parameter 'mml' (mm_limits) = 'image:-1'" in w and "using the default (unset)" in w for w in shown)
    assert any("Link parameter 'cgm' (cudagraph_mode)" in w for w in shown)
    assert any("Link parameter 'mmpk' (mm_processor_kwargs) = 'max_pixels:0': max_pixels: must be from 1" in w
               for w in shown)
    s = state(at)
    assert (s.model_runner, s.mm_limits, s.cudagraph_mode, s.mm_processor_kwargs) == ("auto", (), None, ())


CARRIED = {"mm_limits": (("image", 0), ("video", 2)), "mm_processor_kwargs": (("max_pixels", 1003520),
                                                                            ("size.longest_edge", 1280)),
           "skip_mm_profiling": True, "model_runner": "V1", "cudagraph_mode": "PIECEWISE", "compile_cache": "warm",
           "sglang_aiter_honor_explicit_mem_fraction": True, "vllm_graph_reserved_mem": 0.4}
KEYS = {"mm_limits": ("mml", "image:0,video:2"),
        "mm_processor_kwargs": ("mmpk", "max_pixels:1003520,size.longest_edge:1280"),
        "skip_mm_profiling": ("skmp", "1"), "model_runner": ("mr", "V1"), "cudagraph_mode": ("cgm", "PIECEWISE"),
        "compile_cache": ("cc", "warm"), "sglang_aiter_honor_explicit_mem_fraction": ("aiter", "1"),
        "vllm_graph_reserved_mem": ("grm", "0.4")}


@pytest.mark.parametrize("name", sorted(CARRIED))
def test_each_field_round_trips_through_the_link_and_the_plan_file(name):
    s = PlanState(**{name: CARRIED[name]})
    key, text = KEYS[name]
    assert encode(s) == {"v": "1", key: text}
    assert decode(encode(s)) == (s, [])
    assert from_document(json.loads(json.dumps(to_document(s)))) == (s, [])
    assert getattr(DEFAULT, name) != CARRIED[name]


def test_the_link_carries_them_into_the_plan_and_the_sidebar_shows_them_behind_advanced():
    params = {"v": "1", "m": "qwen3-vl-8b-instruct", **{k: v for k, v in KEYS.values() if k != "aiter"}}
    at = run_app(params)
    from kvplan.web import cached

    engine = cached.engine_config(state(at))
    assert (engine.mm_limits, engine.mm_processor_kwargs, engine.skip_mm_profiling, engine.model_runner,
            engine.cudagraph_mode, engine.compile_cache) == tuple(CARRIED[n] for n in (
                "mm_limits", "mm_processor_kwargs", "skip_mm_profiling", "model_runner", "cudagraph_mode",
                "compile_cache"))
    at.session_state["kv.knobs"] = True
    at.run()
    assert not at.exception
    assert "Advanced set: " in " ".join(plain(c.value) for c in at.caption)  # off: no widget built, the set named
    assert not [s for s in at.selectbox if s.key == "w.model_runner"]
    at.toggle(key="kv.advanced").set_value(True).run()
    assert at.selectbox(key="w.model_runner").value == "V1"
    assert at.selectbox(key="w.cudagraph_mode").value == "PIECEWISE"
    assert at.text_input(key="w.mm_limits").value == "image:0,video:2" and at.checkbox(key="w.skip_mm_profiling").value
    at.selectbox(key="w.model_runner").select("auto").run()
    assert state(at).model_runner == "auto" and "mr" not in at.query_params
    text = run_app({"v": "1", "m": "qwen3-8b"})  # no tower: the multimodal knobs are not drawn
    text.session_state["kv.knobs"] = True
    text.session_state["kv.advanced"] = True
    text.run()
    assert text.selectbox(key="w.model_runner") and not [t for t in text.text_input if t.key == "w.mm_limits"]
