"""Import page: a vllm serve command -> the plan its flags mean; unknown flags listed, not fatal."""

from tests.app_util import kvplan_plan, metrics, plain, run_app, state

PAGE = "pages/import_vllm.py"
CMD = ("vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4 --max-model-len 32k --gpu-memory-utilization 0.9 "
       "--kv-cache-dtype fp8 --max-num-seqs 128 --port 8000 --frobnicate 3")


def test_command_gives_the_plan_of_its_flags():
    at = run_app(page=PAGE)
    at.text_area(key="w.command").set_value(CMD).run()
    p = kvplan_plan("llama-3.1-70b", tp=4, max_model_len=32000, gpu_memory_utilization=0.9, kv_cache_dtype="fp8",
                    max_num_seqs=128)
    m = metrics(at)
    assert m["KV blocks"] == f"{p.num_blocks:,}" and m["Max concurrency"] == f"{p.max_concurrency:.2f}x"
    warnings = plain(" ".join(w.value for w in at.warning))
    assert "unknown flag (ignored): --frobnicate 3" in warnings
    assert "no effect on memory: --port 8000" in plain(" ".join(i.value for i in at.info))
    assert "cmd" in at.query_params
    # the link reproduces the import page
    again = run_app(dict(at.query_params), PAGE)
    assert metrics(again) == m


def test_use_these_settings_moves_the_whole_plan():
    at = run_app(page=PAGE)
    at.text_area(key="w.command").set_value(CMD).run()
    at.button(key="import.apply").click().run()
    s = state(at)
    assert (s.model, s.tensor_parallel_size, s.max_model_len, s.kv_cache_dtype) == ("llama-3.1-70b", 4, 32000, "fp8")
    assert at.number_input(key="w.tensor_parallel_size").value == 4
    assert at.query_params["tp"] == "4" and at.query_params["m"] == "llama-3.1-70b"


def test_bad_flag_value_names_the_flag():
    at = run_app(page=PAGE)
    at.text_area(key="w.command").set_value("vllm serve qwen3-8b --gpu-memory-utilization 1.5").run()
    assert any("--gpu-memory-utilization" in plain(e.value) for e in at.error)


def test_unknown_model_offers_the_hub():
    at = run_app(page=PAGE)
    at.text_area(key="w.command").set_value("vllm serve acme/unknown-model -tp 2").run()
    assert any("not a built-in preset" in plain(w.value) for w in at.warning)
    assert at.button(key="import.fetch")
    assert not at.metric
