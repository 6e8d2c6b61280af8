"""Import carries the launch settings the core plans beyond the sidebar's main inputs: --limit-mm-per-prompt
(mm_limits), --mm-processor-kwargs, --skip-mm-profiling, VLLM_USE_V2_MODEL_RUNNER (model_runner), --compilation-config
cudagraph_mode, the compile cache, --moe-backend, a vllm/vllm-openai image's triton_kernels, vllm-gaudi's
VLLM_GRAPH_RESERVED_MEM and SGLang's SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION: each a PlanState field with a
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
    # the multimodal profile with images off: the LM's peak, 0.33.0's V2 sampler pass (1,024 x 151,936 x 14 + 1 MiB +
    # 8,192 x 4,096 x 2 = 2,246,311,936 B), + the held video item's inputs and outputs (402,653,184 B) = 2,648,965,120,
    # above its encoder step (2,025,848,832 B, the peak on 0.32); with images on (vLLM's 999) 2,246,311,936 + the held
    # image's 536,870,912 = 2,783,182,848 B (2,701,131,776, the image step, on 0.32; kvplan.vllm_mm): the app plans
    # the CLI's figure for the same line, not the one without the flag
    assert app[ACTIVATION] == cli[ACTIVATION] == 2_246_311_936 + 402_653_184 == 2_648_965_120
    assert cli_terms()[ACTIVATION] == 2_246_311_936 + 536_870_912 == 2_783_182_848
    assert app["weights"] == cli["weights"] == 17_603_453_408  # the video modality keeps the ViT loaded
    again = run_app(link)  # the link reopens it
    assert state(again).mm_limits == (("image", 0),) and budget_terms(again)[ACTIVATION] == 2_648_965_120


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
                  "mmpk": "max_pixels:0", "moe": "Marlin;x", "tk": "yes"})
    shown = [plain(w.value) for w in at.warning]
    assert any("Link parameter 'mr' (model_runner) = 'V3': must be one of auto, V1, V2; using the default (auto)."
               in w for w in shown)
    assert any("Link parameter 'mml' (mm_limits) = 'image:-1'" in w and "using the default (unset)" in w for w in shown)
    assert any("Link parameter 'cgm' (cudagraph_mode)" in w for w in shown)
    assert any("Link parameter 'mmpk' (mm_processor_kwargs) = 'max_pixels:0': max_pixels: must be from 1" in w
               for w in shown)
    assert any("Link parameter 'moe' (moe_backend) = 'Marlin;x': must be a vLLM --moe-backend name: 1 to 40 "
               "lower-case letters, digits and _ (auto, marlin, cutlass, ...); using the default (auto)." in w
               for w in shown)
    assert any("Link parameter 'tk' (triton_kernels) = 'yes': must be 1 or 0" in w for w in shown)
    s = state(at)
    assert (s.model_runner, s.mm_limits, s.cudagraph_mode, s.mm_processor_kwargs, s.moe_backend, s.triton_kernels) == \
        ("auto", (), None, (), "auto", None)


CARRIED = {"mm_limits": (("image", 0), ("video", 2)), "mm_processor_kwargs": (("max_pixels", 1003520),
                                                                            ("size.longest_edge", 1280)),
           "skip_mm_profiling": True, "model_runner": "V1", "cudagraph_mode": "PIECEWISE", "compile_cache": "warm",
           "sglang_aiter_honor_explicit_mem_fraction": True, "vllm_graph_reserved_mem": 0.4, "moe_backend": "marlin",
           "triton_kernels": True}
KEYS = {"mm_limits": ("mml", "image:0,video:2"),
        "mm_processor_kwargs": ("mmpk", "max_pixels:1003520,size.longest_edge:1280"),
        "skip_mm_profiling": ("skmp", "1"), "model_runner": ("mr", "V1"), "cudagraph_mode": ("cgm", "PIECEWISE"),
        "compile_cache": ("cc", "warm"), "sglang_aiter_honor_explicit_mem_fraction": ("aiter", "1"),
        "vllm_graph_reserved_mem": ("grm", "0.4"), "moe_backend": ("moe", "marlin"), "triton_kernels": ("tk", "1")}


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
            engine.cudagraph_mode, engine.compile_cache, engine.moe_backend, engine.triton_kernels) == tuple(
                CARRIED[n] for n in ("mm_limits", "mm_processor_kwargs", "skip_mm_profiling", "model_runner",
                                     "cudagraph_mode", "compile_cache", "moe_backend", "triton_kernels"))
    at.session_state["kv.knobs"] = True
    at.run()
    assert not at.exception
    assert "Advanced set: " in " ".join(plain(c.value) for c in at.caption)  # off: no widget built, the set named
    assert not [s for s in at.selectbox if s.key == "w.model_runner"]
    at.toggle(key="kv.advanced").set_value(True).run()
    assert at.selectbox(key="w.model_runner").value == "V1"
    assert at.selectbox(key="w.cudagraph_mode").value == "PIECEWISE"
    assert at.text_input(key="w.mm_limits").value == "image:0,video:2" and at.checkbox(key="w.skip_mm_profiling").value
    assert at.selectbox(key="w.moe_backend").value == "marlin"
    assert at.selectbox(key="w.triton_kernels").value == "installed"
    at.selectbox(key="w.model_runner").select("auto").run()
    assert state(at).model_runner == "auto" and "mr" not in at.query_params
    text = run_app({"v": "1", "m": "qwen3-8b"})  # no tower: the multimodal knobs are not drawn
    text.session_state["kv.knobs"] = True
    text.session_state["kv.advanced"] = True
    text.run()
    assert text.selectbox(key="w.model_runner") and not [t for t in text.text_input if t.key == "w.mm_limits"]


# ------------------------------------------------------------------ --moe-backend, and the audit of what Apply carries

KIMI = "vllm serve moonshotai/Kimi-K2.5 -tp 8 --max-model-len 8192"


def cli_pool(*flags: str) -> int:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cli_main(["plan", "kimi-k2.5", "--gpu", "H200", "-tp", "8", "--max-model-len", "8192", *flags, "--json"])
    return json.loads(out.getvalue())["ranks"][0]["kv_pool_bytes"]


def test_moe_backend_is_applied_linked_shown_and_planned_as_the_cli_plans_it():
    from kvplan.web import cached

    at = pasted(KIMI + " --moe-backend marlin", "H200")
    assert import_rows(at)["--moe-backend"] == "marlin"
    at.button(key="import.apply").click().run()
    s = state(at)
    assert (s.model, s.moe_backend, at.query_params["moe"]) == ("kimi-k2.5", "marlin", "marlin")
    # Kimi-K2.5's int4 experts on an H200 at 0.33: auto runs Humming, marlin MarlinExperts; only the activation
    # peak (which holds the MoE workspace) moves: 4,482,414,592 - 3,660,331,008 = 822,083,584 B (both hold MoonViT's
    # 75,497,472 B RoPE table), and the pool with it: 54,724,633,485 - 822,083,584 = 53,902,549,901 B. Before Apply
    # carried it, the sidebar planned auto's figure. (0.33.0's V2 sampler pass: 1,024 x 163,840 x 14 + 1 MiB + 8,192 x
    # 7,168 x 2 = 2,467,299,328 B against 0.32's 1,024 x 163,840 x 2 + 117,440,512 = 452,984,832: 2,014,314,496 B more
    # in both peaks, 2,468,100,096 / 1,646,016,512 and pools 55,916,864,397 / 56,738,947,981 on 0.32.)
    marlin, auto = cached.plan_for(s), cached.plan_for(s.model_copy(update={"moe_backend": "auto"}))
    peak = [next(t.bytes for t in p.ranks[0].terms if t.name.startswith(ACTIVATION)) for p in (marlin, auto)]
    assert peak == [4_482_414_592, 3_660_331_008] == [2_468_100_096 + 2_014_314_496, 1_646_016_512 + 2_014_314_496]
    assert marlin.ranks[0].kv_pool_bytes == cli_pool("--moe-backend", "marlin") == 53_902_549_901
    assert auto.ranks[0].kv_pool_bytes == cli_pool() == 54_724_633_485
    again = run_app(dict(at.query_params))  # the link reopens it
    assert cached.plan_for(state(again)).ranks[0].kv_pool_bytes == 53_902_549_901
    at.session_state["kv.knobs"] = True
    at.run()
    assert "--moe-backend marlin" in " ".join(plain(c.value) for c in at.caption)  # "Advanced set: ..." while closed


# One vLLM line per group of settings (each plannable), together setting every key VllmArgs.engine_fields() returns,
# and SGLang lines setting every key Command.engine_fields() returns; the GPU each runs on.
AUDIT_LINES = {
    "llama-eagle3-image": (
        "VLLM_USE_FLASHINFER_SAMPLER=0 VLLM_USE_V2_MODEL_RUNNER=0 docker run --gpus all -e VLLM_GRAPH_RESERVED_MEM=0.2 "
        "vllm/vllm-openai:v0.30.0 --model meta-llama/Llama-3.1-8B-Instruct -tp 2 --max-model-len 16384 "
        "--gpu-memory-utilization 0.85 --kv-cache-dtype fp8 --block-size 32 --max-num-seqs 64 "
        "--max-num-batched-tokens 4096 --dtype float16 --disable-custom-all-reduce --no-enable-prefix-caching "
        "--speculative-config '{\"method\": \"eagle3\", \"model\": \"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B\", "
        "\"num_speculative_tokens\": 3}' --compilation-config '{\"cudagraph_mode\": \"PIECEWISE\"}' "
        "--moe-backend marlin", "H100-SXM"),
    "vl-multimodal": (
        "vllm serve Qwen/Qwen3-VL-8B-Instruct -tp 2 --max-model-len 32768 --limit-mm-per-prompt "
        "'{\"image\": 2, \"video\": 0}' --mm-processor-kwargs '{\"max_pixels\": 1003520}' --skip-mm-profiling "
        "--mm-encoder-tp-mode data", "H100-SXM"),
    "vl-text-only": ("vllm serve Qwen/Qwen3-VL-8B-Instruct --language-model-only --enforce-eager "
                     "--kv-cache-memory-bytes 8589934592 --max-model-len 8192", "H100-SXM"),
    "dsv3-dcp": ("vllm serve deepseek-ai/DeepSeek-V3 -tp 8 -dcp 2 --max-model-len 32768", "H200"),
    "kimi-marlin": (KIMI + " --moe-backend marlin", "H200"),
    "sglang-hybrid": (
        "SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION=1 docker run lmsysorg/sglang:v0.5.18 python3 -m sglang.launch_server "
        "--model-path Qwen/Qwen3-Next-80B-A3B-Instruct --tp 4 --mem-fraction-static 0.8 --max-total-tokens 200000 "
        "--enable-dp-attention --dp 2 --moe-dense-tp-size 1 --disable-piecewise-cuda-graph "
        "--mamba-full-memory-ratio 0.5 --max-mamba-cache-size 64 --mamba-ssm-dtype bfloat16 --disable-radix-cache "
        "--swa-full-tokens-ratio 0.5 --disable-hybrid-swa-memory --context-length 32768", "H200"),
    "sglang-ngram": ("python -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 2 --speculative-algorithm NGRAM "
                     "--speculative-num-steps 2 --disable-custom-all-reduce", "H100-SXM"),
}


def core_engine(command):
    """The EngineConfig the core plans a parsed line with, straight from the parser (as the CLI would be given it):
    VllmArgs.engine_fields(), and for an SGLang line its engine, --mem-fraction-static, image tag, speculative
    algorithm and Command.engine_fields(). No PlanState in between."""
    from kvplan.engines import EngineConfig

    fields = command.args.engine_fields()
    if command.engine == "sglang":
        fields |= {"engine": "sglang", "mem_fraction_static": command.mem_fraction_static,
                   "sglang_version": command.sglang_version, "speculative_method": command.speculative_method,
                   "num_speculative_tokens": command.num_speculative_tokens} | command.engine_fields()
    return EngineConfig(**{k: v for k, v in fields.items() if v is not None})


def test_the_audit_lines_set_every_field_the_parsers_plan():
    """A key engine_fields() gains must be set by a line here, so the test below checks that Apply carries it."""
    from kvplan.engines import EngineConfig
    from kvplan.vllm_args import VllmArgs
    from kvplan.web.commands import parse_command

    commands = [parse_command(line) for line, _ in AUDIT_LINES.values()]
    vllm_set = {k for c in commands if c.engine == "vllm" for k, v in c.args.engine_fields().items()
                if v != EngineConfig.model_fields[k].default}
    assert vllm_set == set(VllmArgs().engine_fields()) - {"engine"} | {"vllm_version", "model_runner",
                                                                         "cudagraph_mode", "vllm_graph_reserved_mem"}
    sglang_set = {k for c in commands if c.engine == "sglang" for k in c.engine_fields()}
    assert sglang_set == {"dp_attention_size", "moe_dense_tp_size", "max_total_tokens", "piecewise_cuda_graph",
                          "mamba_full_memory_ratio", "max_mamba_cache_size", "mamba_ssm_dtype", "swa_full_tokens_ratio",
                          "disable_hybrid_swa_memory", "enable_prefix_caching",
                          "sglang_aiter_honor_explicit_mem_fraction"}


@pytest.mark.parametrize("name", sorted(AUDIT_LINES))
def test_apply_plans_exactly_what_the_import_preview_and_the_parser_plan(name):
    """Import's preview, the plan after Apply and the core's plan of the parsed line agree: the same EngineConfig
    (every field, not only the ones a page shows) and the same KV pool. Before --moe-backend and triton_kernels were
    PlanState fields, kimi-marlin's applied plan held auto's pool (56,587,953,037 B today) where the line means 55,765,869,453."""
    from kvplan.gpus import get_gpu
    from kvplan.parallel import Layout
    from kvplan.plan import plan
    from kvplan.web import cached, views

    line, gpu = AUDIT_LINES[name]
    at = pasted(line, gpu)
    command = cached.serve_command(line)
    preview, _ = views.imported_state(state(at), command)
    at.button(key="import.apply").click().run()
    assert not at.exception and not [e for e in at.error if "Not applied" in plain(e.value)]
    applied = state(at)
    core = core_engine(command)
    assert cached.engine_config(preview) == cached.engine_config(applied) == core
    a = command.args
    direct = plan(cached.spec(applied), get_gpu(gpu), core, Layout(a.tensor_parallel_size, a.pipeline_parallel_size,
                                                                   a.data_parallel_size, a.enable_expert_parallel))
    pools = [p.ranks[0].kv_pool_bytes for p in (cached.plan_for(preview), cached.plan_for(applied), direct)]
    assert pools[0] == pools[1] == pools[2] > 0, pools
    from kvplan.web.state import decode

    assert decode(dict(at.query_params))[0] == applied  # and the link carries all of it
