"""Import page: a serving command -> the plan its flags mean, on the GPU chosen for it; Apply puts it
in the sidebar; unknown flags listed, not fatal; a line that is not a serving command refused."""

from tests.app_util import html_tables, kvplan_plan, metrics, plain, run_app, state

PAGE = "pages/import.py"
CMD = ("vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4 --max-model-len 32k --gpu-memory-utilization 0.9 "
       "--kv-cache-dtype fp8 --max-num-seqs 128 --port 8000 --frobnicate 3")


def pasted(command: str, gpu: str | None = "H100-SXM"):
    at = run_app(page=PAGE)
    at.text_area(key="w.command").set_value(command).run()
    if gpu:
        at.selectbox(key="w.import_gpu").select(gpu).run()
    return at


def test_command_gives_the_plan_of_its_flags():
    at = pasted(CMD)
    p = kvplan_plan("llama-3.1-70b", tp=4, max_model_len=32000, gpu_memory_utilization=0.9, kv_cache_dtype="fp8",
                    max_num_seqs=128)
    m = metrics(at)
    assert m["KV blocks"] == f"{p.num_blocks:,}" and m["Max concurrency"] == f"{p.max_concurrency:.2f}x"
    warnings = plain(" ".join(w.value for w in at.warning))
    assert "unknown flag (ignored): --frobnicate 3" in warnings
    assert "no effect on memory: --port 8000" in plain(" ".join(i.value for i in at.info))
    assert any("Preview, not applied" in plain(i.value) for i in at.info)  # the sidebar still plans 8B
    settings = {r["flag"]: r["value"] for r in html_tables(at)[0]}
    assert settings["--tensor-parallel-size"] == "4" and settings["--max-model-len"] == "32000"
    assert "cmd" in at.query_params and at.query_params["ig"] == "H100-SXM"
    # the link reproduces the import page
    again = run_app(dict(at.query_params), PAGE)
    assert metrics(again) == m


def test_apply_moves_the_sidebar_and_every_page():
    at = pasted(CMD, gpu="H200")
    at.button(key="import.apply").click().run()
    s = state(at)
    assert (s.model, s.gpu, s.tensor_parallel_size, s.max_model_len, s.kv_cache_dtype) == \
        ("llama-3.1-70b", "H200", 4, 32000, "fp8")
    # the sidebar's widgets show the imported settings
    assert at.number_input(key="w.tensor_parallel_size").value == 4
    assert at.number_input(key="w.max_model_len").value == 32000
    assert at.selectbox(key="w.gpu").value == "H200" and at.selectbox(key="w.model").value == "llama-3.1-70b"
    assert at.query_params["tp"] == "4" and at.query_params["m"] == "llama-3.1-70b"
    assert any("Applied" in plain(s.value) for s in at.success)
    p = kvplan_plan("llama-3.1-70b", "H200", tp=4, max_model_len=32000, gpu_memory_utilization=0.9,
                    kv_cache_dtype="fp8", max_num_seqs=128)
    at.switch_page("pages/budget.py").run()
    assert metrics(at)["KV blocks"] == f"{p.num_blocks:,}"


def test_apply_with_the_text_not_yet_committed():
    """Apply reads the box as it is when clicked (no Ctrl+Enter first)."""
    at = run_app(page=PAGE)
    at.selectbox(key="w.import_gpu").select("H100-SXM").run()
    at.text_area(key="w.command").input("vllm serve Qwen/Qwen3-8B -tp 2")  # typed, not yet run
    at.button(key="import.apply").click().run()
    s = state(at)
    assert (s.model, s.tensor_parallel_size, s.gpu) == ("qwen3-8b", 2, "H100-SXM")


def test_a_command_without_a_gpu_asks_for_one():
    at = pasted("vllm serve Qwen/Qwen3-8B -tp 2", gpu=None)
    assert any("names no GPU" in plain(w.value) for w in at.warning)
    assert not at.metric  # no plan on a GPU nobody chose
    at.button(key="import.apply").click().run()
    assert any("Not applied" in plain(e.value) and "names no GPU" in plain(e.value) for e in at.error)
    assert state(at).tensor_parallel_size == 1


def test_a_line_that_is_not_a_serving_command_is_refused():
    at = pasted("rm -rf /")
    errors = plain(" ".join(e.value for e in at.error))
    assert "'rm' is not a serving command" in errors
    assert not at.metric and not any("preset" in plain(w.value) for w in at.warning)
    at.button(key="import.apply").click().run()
    assert state(at).model == "llama-3.1-8b"


def test_sglang_command_plans_with_the_sglang_profile():
    at = pasted("python -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 2 --context-length 8192 "
                "--mem-fraction-static 0.8")
    at.button(key="import.apply").click().run()
    s = state(at)
    assert (s.engine, s.model, s.tensor_parallel_size, s.max_model_len, s.mem_fraction_static) == \
        ("sglang", "qwen3-8b", 2, 8192, 0.8)


def test_bad_flag_value_names_the_flag():
    at = pasted("vllm serve qwen3-8b --gpu-memory-utilization 1.5")
    assert any("--gpu-memory-utilization" in plain(e.value) for e in at.error)


def test_unknown_model_offers_the_hub():
    at = pasted("vllm serve acme/unknown-model -tp 2")
    assert any("not a built-in preset" in plain(w.value) for w in at.warning)
    assert at.button(key="import.fetch")
    assert not at.metric


def test_a_command_without_a_model_names_the_pasted_config_it_plans():
    # a config.json pasted (or sent in a link) without a name: state.model still holds the preset picked before it,
    # which is not what the sidebar plans; the Import note and preview name the pasted config, not "llama-3.1-8b"
    from kvplan.presets import preset_config
    from kvplan.vllm_args import parse_vllm_command
    from kvplan.web import views
    from kvplan.web.state import PlanState, encode_config

    state = PlanState(model="llama-3.1-8b", config=encode_config(preset_config("qwen3-8b")), import_gpu="H100-SXM")
    imported, note = views.imported_state(state, parse_vllm_command("vllm serve --max-model-len 8192"))
    assert imported is not None and imported.config == state.config and imported.max_model_len == 8192
    assert "planned with the sidebar's model (the pasted config.json)" in note and "llama-3.1-8b" not in note
    assert views.preview_note(state).count(r"plan the pasted config\.json on H100-SXM") == 1  # markdown-escaped
    named = state.model_copy(update={"model_name": "acme/qwen-clone"})
    assert "(acme/qwen-clone)" in views.imported_state(named, parse_vllm_command("vllm serve"))[1]
