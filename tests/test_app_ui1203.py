"""A refused Import Apply is named at the top of every other page (ui1203, issue 12's "never read a stale plan").

Before: after "Not applied: --kv-cache-dtype: 'fp4' ..." on Import, Budget, Paging, Parallelism and GPUs drew the
previous plan (the sidebar's) without a word, as if the pasted line were planned. Now each names the refused line and
what it plans instead, its plan captions read "Last valid plan", until the sidebar changes or an Apply succeeds."""

from tests.app_util import metrics, plain, run_app, state

IMPORT = "pages/import.py"
GOOD = "vllm serve openai/gpt-oss-120b --moe-backend marlin -tp 2"
BAD = "vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --kv-cache-dtype fp4"
BANNER = (f"Refused command line (Import) = {BAD}: --kv-cache-dtype: 'fp4' is not a KV-cache dtype kvplan plans; "
          "allowed: ")


def _errors(at) -> list[str]:
    return [plain(e.value).replace("**", "") for e in at.error]


def _refused_after_a_good_apply():
    at = run_app(page=IMPORT)
    at.selectbox(key="w.import_gpu").select("B200").run()
    at.text_area(key="w.command").set_value(GOOD).run()
    at.button(key="import.apply").click().run()
    assert (state(at).model, state(at).tensor_parallel_size, state(at).moe_backend) == ("gpt-oss-120b", 2, "marlin")
    at.text_area(key="w.command").set_value(BAD).run()
    at.button(key="import.apply").click().run()
    return at


def test_a_refused_apply_is_named_on_every_other_page():
    at = _refused_after_a_good_apply()
    errors = _errors(at)
    assert any(e.startswith("Not applied: --kv-cache-dtype: 'fp4'") for e in errors), errors
    assert not [e for e in errors if e.startswith("Refused command line")], errors  # said once on Import, not twice
    assert sum("'fp4' is not a KV-cache dtype" in e for e in errors) == 1, errors  # it read twice: Not applied + again
    assert state(at).model == "gpt-oss-120b"  # nothing applied
    for page in ("budget", "paging", "parallelism", "gpus", "model"):
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, page
        top = [e for e in _errors(at) if e.startswith("Refused command line")]
        assert len(top) == 1 and top[0].startswith(BANNER), (page, _errors(at))
        assert top[0].endswith("every page plans the sidebar's settings (gpt-oss-120b) instead."), top[0]
    at.switch_page("pages/budget.py").run()
    # the plan under it is labelled: the Budget's caption heads "Last valid plan" (views.refused_head)
    assert any(plain(c.value).startswith("Last valid plan") for c in at.caption), [c.value for c in at.caption]
    assert metrics(at)["Verdict"] == "fits"  # gpt-oss-120b on 2 x B200 still drawn, labelled as such


def test_the_refusal_goes_once_the_sidebar_changes():
    at = _refused_after_a_good_apply()
    at.switch_page("pages/budget.py").run()
    assert [e for e in _errors(at) if e.startswith("Refused command line")]
    at.number_input(key="w.max_model_len").set_value(8192).run()  # the user moves on: a new plan, not the refused line
    assert state(at).max_model_len == 8192
    assert not [e for e in _errors(at) if e.startswith("Refused command line")], _errors(at)
    assert not any(plain(c.value).startswith("Last valid plan") for c in at.caption)


def test_the_gpus_picker_ranks_other_gpus_when_the_sidebars_gpu_is_refused_at_vllm_034():
    # vLLM 0.34 refuses B200 (SM 10.x) with CUDA graphs (kvplan.plan: a vllm_version refusal naming the GPU) but
    # plans gpt-oss-120b on Hopper: the GPUs page showed the refusal and no picker; now it ranks the GPUs 0.34 plans
    # and names why the sidebar's B200 TP1 PP1 is not among them
    at = run_app({"v": "1", "m": "gpt-oss-120b", "g": "B200", "vv": "0.34"}, "pages/gpus.py")
    assert not at.exception and not at.error, _errors(at)
    best = metrics(at)["Best"]
    assert best and not best.startswith(("B200", "B300", "GB200", "GB300")), best  # an SM 10.x GPU is refused too
    info = plain(" ".join(i.value for i in at.info))
    assert "Your sidebar's layout, B200 TP1 PP1, is not ranked**: vLLM 0.34.0: B200 (SM 10.x) with CUDA graphs" in info
    # a refusal on every GPU still refuses the page: DeepSeek-V3.2 (DSA) at 0.34
    at = run_app({"v": "1", "m": "deepseek-v3.2", "g": "H200", "tp": "8", "vv": "0.34"}, "pages/gpus.py")
    assert any("DSA models (DeepSeek-V3.2, GLM-5) are not planned" in e for e in _errors(at)) and not at.metric
