"""SGLang EAGLE3 in the web app: the sidebar offers "EAGLE3 (head)" with the engine SGLang and the draft-head select
(the heads kvplan/presets/DRAFTERS.json ships for the model), the link carries them (``spec`` eagle3, ``dft``; a
tampered head is refused by name), Import reads an sglang.launch_server line's --speculative-draft-model-path and
Apply puts it in the sidebar; every page plans what the core plans (tests/test_sglang_eagle3_plan.py has the numbers:
gpt-oss-120b + lmsys/EAGLE3-gpt-oss-120b-bf16 on one H200, SGLang 0.5.20: 988,624 tokens, 68,403.2 B a token as SGLang divides)."""

from kvplan.drafter import load_drafter
from kvplan.web.state import decode
from tests.app_util import html_tables, kvplan_plan, metrics, plain, run_app, state

OSS = {"v": "1", "m": "gpt-oss-120b", "g": "H200", "e": "sglang"}
LINE = ("python3 -m sglang.launch_server --model-path openai/gpt-oss-120b --speculative-algorithm EAGLE3 "
        "--speculative-draft-model-path lmsys/EAGLE3-gpt-oss-120b-bf16 --speculative-num-steps 3 "
        "--speculative-eagle-topk 1 --speculative-num-draft-tokens 4")


def core_tokens() -> int:
    return kvplan_plan("gpt-oss-120b", "H200", engine="sglang", speculative_method="eagle3", num_speculative_tokens=3,
                       draft=load_drafter("eagle3-gpt-oss-120b", "eagle3")).kv_cache_tokens


def open_knobs(at):
    at.session_state["kv.knobs"] = True
    return at.run()


def test_sidebar_eagle3_picks_the_models_head_and_plans_the_core():
    at = open_knobs(run_app(OSS))
    at.selectbox(key="w.speculative_method").select("eagle3").run()
    assert not at.exception and not at.error
    head = at.selectbox(key="w.drafter")
    assert head.options == ["eagle3-gpt-oss-120b (lmsys/EAGLE3-gpt-oss-120b-bf16)"] and head.value == "eagle3-gpt-oss-120b"
    s = state(at)
    assert (s.engine, s.speculative_method, s.drafter) == ("sglang", "eagle3", "eagle3-gpt-oss-120b")
    assert {k: at.query_params[k] for k in ("spec", "dft")} == {"spec": "eagle3", "dft": "eagle3-gpt-oss-120b"}
    assert metrics(at)["KV cache tokens"] == f"{core_tokens():,}" == "988,624"
    # back to none: the head is no longer planned
    at.selectbox(key="w.speculative_method").select("none").run()
    assert not at.exception and metrics(at)["KV cache tokens"] != "988,624"


def test_link_carries_the_head_and_refuses_a_tampered_one():
    link = {**OSS, "spec": "eagle3", "nspec": "3", "dft": "eagle3-gpt-oss-120b"}
    at = run_app(link)
    assert not at.exception and metrics(at)["KV cache tokens"] == "988,624"
    s, warnings = decode({**link, "dft": "evil/<b>head"})
    assert s.drafter is None and warnings[0].startswith("Link parameter 'dft' (drafter)")
    # a head for another model: refused on the page, naming the head to choose, no figure
    at = run_app({**link, "dft": "eagle3-llama3.1-8b"})
    errors = plain(" ".join(e.value for e in at.error))
    assert not at.exception and "trained for llama-3.1-8b, not gpt-oss-120b" in errors
    assert "KV cache tokens" not in metrics(at)


def test_import_applies_the_launch_server_line():
    at = run_app(page="pages/import.py")
    at.text_area(key="w.command").set_value(LINE).run()
    at.selectbox(key="w.import_gpu").select("H200").run()
    assert not at.exception and metrics(at)["KV cache tokens"] == "988,624"
    flags = {r["flag"]: r["value"] for r in html_tables(at)[0]}
    assert flags["--speculative-algorithm"] == "EAGLE3, 3 steps, draft head eagle3-gpt-oss-120b"
    at.button(key="import.apply").click().run()
    s = state(at)
    assert (s.model, s.engine, s.speculative_method, s.num_speculative_tokens, s.drafter) == \
        ("gpt-oss-120b", "sglang", "eagle3", 3, "eagle3-gpt-oss-120b")
    at.switch_page("pages/budget.py").run()
    rows = next(t for t in html_tables(at) if t and "term" in t[0])
    got = {r["term"]: r["bytes"] for r in rows}
    assert got["eagle3 draft head (in weights)"] == "615,283,200"
    assert got["EAGLE3 head's own embed_tokens (freed after the pool is sized)"] == "1,158,266,880"
    assert "type=LlamaForCausalLMEagle3" in "\n".join(c.value for c in at.code)
    # the pool formula subtracts the head's resident embedding as the plan does
    text = " ".join(m.value for m in at.markdown)
    assert r"- \text{overhead} - \text{draft embedding}\\" in text


def test_sidebar_standalone_picks_a_smaller_preset_and_plans_the_core():
    from kvplan.draft_model import load_draft_model

    at = open_knobs(run_app({"v": "1", "m": "llama-3.1-8b", "g": "H100-SXM", "e": "sglang"}))
    at.selectbox(key="w.speculative_method").select("draft_model").run()
    s = state(at)
    assert not at.exception and not at.error and (s.speculative_method, s.drafter) == ("draft_model", "llama-3.2-1b")
    core = kvplan_plan("llama-3.1-8b", "H100-SXM", engine="sglang", speculative_method="draft_model",
                       num_speculative_tokens=3, draft=load_draft_model("llama-3.2-1b"))
    assert metrics(at)["KV cache tokens"] == f"{core.kv_cache_tokens:,}" == "260,364"  # test_sglang_eagle3_plan.py
    assert at.query_params["spec"] == "draft_model" and at.query_params["dft"] == "llama-3.2-1b"


def test_sidebar_eagle3_without_a_shipped_head_says_so():
    at = open_knobs(run_app({"v": "1", "m": "qwen3-8b", "g": "H100-SXM", "e": "sglang"}))
    at.selectbox(key="w.speculative_method").select("eagle3").run()
    assert not at.exception and state(at).drafter is None
    # in SGLang's words (--speculative-algorithm EAGLE3), the shipped heads too
    info = plain(" ".join(i.value for i in at.sidebar.info))
    assert "No EAGLE3 draft head kvplan ships is for qwen3-8b" in info and "llama-3.1-8b (EAGLE3)" in info
    errors = plain(" ".join(e.value for e in at.error))
    assert "--speculative-draft-model-path" in errors and "EAGLE3 needs its draft head" in errors
    assert "KV cache tokens" not in metrics(at)
