"""EAGLE / EAGLE-3 draft heads in the web app: the link carries the head (``dft``: a kvplan/presets/DRAFTERS.json
name), the sidebar offers only the heads trained for the model, the Import page applies a pasted line whose
--speculative-config names a known head, and a head kvplan cannot plan is refused on every page in the core's words
(never a plan without the head on screen).

Numbers by hand (kvplan.drafter's docstring, tests/test_spec_eagle.py): Llama-3.1-8B's EAGLE-3 head (SpecForge
llama3-8B-eagle3.json: 1 layer, h 4096, inter 14336, 32 / 8 heads of 128, draft vocab 32000) holds 424,689,664
parameters: bf16 at TP 1 is 2 x 424,689,664 + its int64 d2t 32,000 x 8 = 849,635,328 B; its own rotary table (rope
10,000, unlike the target's llama3) is sized to the target's 131,072 positions from vLLM 0.27: 131,072 x 128 x 2 B =
33,554,432 B; its one attention layer adds 8 KV heads x 128 x (K + V) x 2 B = 4,096 B per token: 131,072 -> 135,168.
"""

import pytest

from kvplan.drafter import load_drafter
from kvplan.web.state import PlanState, decode, encode, from_document, to_document
from tests.app_util import html_tables, kvplan_plan, metrics, plain, run_app, state

LLAMA_HEAD = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
SPEC = '{"method": "eagle3", "model": "%s", "num_speculative_tokens": 3}'
LLAMA_LINE = f"vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config '{SPEC % LLAMA_HEAD}'"
LINK = {"v": "1", "spec": "eagle3", "nspec": "3", "dft": "eagle3-llama3.1-8b"}
# Llama-3.1-8B at TP 1, bf16: 8,030,261,248 parameters x 2 B = 16,060,522,496 B, + its llama3 cos/sin table 131,072 x
# 128 x 2 B = 33,554,432 B; with the head: + 849,635,328 + 33,554,432 (the head's own table)
TARGET_WEIGHTS = 8_030_261_248 * 2 + 131_072 * 128 * 2
HEAD_BYTES = 424_689_664 * 2 + 32_000 * 8
HEAD_ROPE = 131_072 * 128 * 2
NO_HEAD = "an eagle / eagle3 method needs its draft head"  # kvplan.drafter.check_plan


def open_knobs(at):
    at.session_state["kv.knobs"] = True
    return at.run()


def terms(at) -> dict[str, dict[str, str]]:
    rows = next(t for t in html_tables(at) if t and "term" in t[0])
    return {r["term"]: r for r in rows}


def errors(at) -> str:
    return plain(" ".join(e.value for e in at.error))


def test_link_round_trip_carries_the_head():
    s = PlanState(speculative_method="eagle3", num_speculative_tokens=3, drafter="eagle3-llama3.1-8b")
    assert encode(s) == LINK
    assert decode(encode(s)) == (s, [])
    assert from_document(to_document(s)) == (s, [])  # the plan JSON carries it too
    # a HF repo id of a shipped head reads as the head's name (kvplan.drafter.drafter_for_model)
    assert decode({**LINK, "dft": LLAMA_HEAD})[0].drafter == "eagle3-llama3.1-8b"
    at = run_app(LINK)
    assert state(at) == s and at.query_params["dft"] == "eagle3-llama3.1-8b"
    rows = terms(at)
    assert int(rows["eagle3 draft head (in weights)"]["bytes"].replace(",", "")) == HEAD_BYTES == 849_635_328
    assert rows["eagle3 draft head (in weights)"]["basis"] == "exact, not subtracted"
    assert "424,689,664 parameters in 1 layer + fc + its lm_head (embed_tokens: the target's)" in \
        rows["eagle3 draft head (in weights)"]["source"]
    assert int(rows["draft head rotary table (in weights)"]["bytes"].replace(",", "")) == HEAD_ROPE == 33_554_432
    assert int(rows["weights"]["bytes"].replace(",", "")) == TARGET_WEIGHTS + HEAD_BYTES + HEAD_ROPE \
        == 16_977_266_688
    # the head's KV layer: 135,168 B a token, 33 layers a block of 16 x 4,096 B
    shown = " ".join(m.value for m in at.markdown)
    assert "135{,}168" in shown and "33 \\times 65{,}536" in shown
    core = kvplan_plan("llama-3.1-8b", speculative_method="eagle3", num_speculative_tokens=3,
                       draft=load_drafter(LLAMA_HEAD, "eagle3"))
    assert metrics(at)["KV cache tokens"] == f"{core.kv_cache_tokens:,}"
    assert core.kv_cache_tokens < kvplan_plan("llama-3.1-8b").kv_cache_tokens
    assert any("EAGLE draft head: its weights, rotary table and KV layers are planned" in plain(w.value)
               for w in at.warning)


def test_the_head_is_split_over_the_sidebar_tp():
    at = run_app({**LINK, "tp": "2"})
    # TP 2: q 8192 x 2048 = 16,777,216; k, v 8192 x 512 = 4,194,304 each; o 2048 x 4096 = 8,388,608; MLP 3 x 4096 x
    # 7168 = 88,080,384; norms 4 x 4096 and fc 12288 x 4096 = 50,331,648 whole; lm_head 16000 x 4096 = 65,536,000;
    # 237,518,848 x 2 B + d2t 256,000 (replicated)
    head = 2 * (16_777_216 + 2 * 4_194_304 + 8_388_608 + 88_080_384 + 4 * 4096 + 50_331_648 + 65_536_000) + 256_000
    assert int(terms(at)["eagle3 draft head (in weights)"]["bytes"].replace(",", "")) == head == 475_293_696
    assert "draft TP 2" in terms(at)["eagle3 draft head (in weights)"]["source"]


@pytest.mark.parametrize("value", ["../../etc/passwd", "eagle3-nope", "x" * 300, ""])
def test_tampered_drafter_warns_naming_the_parameter(value):
    s, warnings = decode({**LINK, "dft": value})
    assert s.drafter is None and s.speculative_method == "eagle3"
    assert len(warnings) == 1 and warnings[0].startswith("Link parameter 'dft' (drafter)")
    assert "not a draft head kvplan ships" in warnings[0] and "using the default (unset)" in warnings[0]


def test_tampered_drafter_link_shows_the_warning_and_the_refusal_not_a_plan():
    at = run_app({**LINK, "dft": "<script>"})
    assert any("Link parameter 'dft' (drafter)" in plain(w.value) for w in at.warning)
    assert NO_HEAD in errors(at) and "KV cache tokens" not in metrics(at)


def test_sidebar_offers_the_heads_for_the_model():
    at = open_knobs(run_app())
    at.selectbox(key="w.speculative_method").select("eagle3").run()
    assert not at.exception
    head = at.selectbox(key="w.drafter")
    assert head.options == ["eagle3-llama3.1-8b (lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B)"]  # no gpt-oss head
    assert head.value == "eagle3-llama3.1-8b"  # the method just picked: its head
    assert state(at).drafter == "eagle3-llama3.1-8b" and at.query_params["dft"] == "eagle3-llama3.1-8b"
    assert int(terms(at)["eagle3 draft head (in weights)"]["bytes"].replace(",", "")) == 849_635_328
    # gpt-oss-20b: only its own head is offered; the llama head stays refused (never planned on it) until chosen
    at.selectbox(key="w.model").select("gpt-oss-20b").run()
    assert at.selectbox(key="w.drafter").options == ["eagle3-gpt-oss-20b (zhuyksir/EAGLE3-gpt-oss-20b-bf16)"]
    assert "the draft head eagle3-llama3.1-8b is trained for llama-3.1-8b, not gpt-oss-20b: choose " \
           "eagle3-gpt-oss-20b" in errors(at) and "KV cache tokens" not in metrics(at)
    at.selectbox(key="w.drafter").select("eagle3-gpt-oss-20b").run()
    assert not at.exception and state(at).drafter == "eagle3-gpt-oss-20b" and not at.error
    assert "eagle3 draft head (in weights)" in terms(at)
    # eagle (1): kvplan ships no such head: said plainly, the head dropped, and the core's refusal on the page
    at.selectbox(key="w.speculative_method").select("eagle").run()
    assert not at.exception and state(at).drafter is None
    info = plain(" ".join(i.value for i in at.sidebar.info))
    assert "No eagle draft head kvplan ships is for gpt-oss-20b" in info
    assert NO_HEAD in errors(at) and "KV cache tokens" not in metrics(at)
    assert at.selectbox(key="w.drafter").disabled and at.selectbox(key="w.drafter").options == []


def pasted(command: str, gpu: str = "H100-SXM"):
    at = run_app(page="pages/import.py")
    at.text_area(key="w.command").set_value(command).run()
    at.selectbox(key="w.import_gpu").select(gpu).run()
    assert not at.exception
    return at


def test_import_applies_a_known_head():
    at = pasted(LLAMA_LINE)
    flags = {r["flag"]: r["value"] for r in html_tables(at)[0]}
    assert flags["--speculative-config"] == "eagle3, 3 tokens, draft head eagle3-llama3.1-8b"
    core = kvplan_plan("llama-3.1-8b", speculative_method="eagle3", num_speculative_tokens=3,
                       draft=load_drafter(LLAMA_HEAD, "eagle3"))
    assert metrics(at)["KV cache tokens"] == f"{core.kv_cache_tokens:,}"  # the preview plans the head
    at.button(key="import.apply").click().run()
    s = state(at)
    assert (s.model, s.speculative_method, s.num_speculative_tokens, s.drafter) == \
        ("llama-3.1-8b", "eagle3", 3, "eagle3-llama3.1-8b")
    assert {k: at.query_params[k] for k in ("spec", "nspec", "dft")} == \
        {"spec": "eagle3", "nspec": "3", "dft": "eagle3-llama3.1-8b"}
    at.switch_page("pages/budget.py").run()
    assert int(terms(at)["eagle3 draft head (in weights)"]["bytes"].replace(",", "")) == 849_635_328
    assert open_knobs(at).selectbox(key="w.drafter").value == "eagle3-llama3.1-8b"


def test_import_refuses_an_unknown_head_naming_the_flag():
    at = pasted(LLAMA_LINE.replace(LLAMA_HEAD, "someone/EAGLE3-private-head"))
    text = errors(at)
    assert "--speculative-config" in text and "kvplan ships no config for the draft checkpoint " \
        "'someone/EAGLE3-private-head'" in text and "--draft-config PATH" in text
    at.button(key="import.apply").click().run()
    assert "Not applied" in errors(at) and state(at).speculative_method == "none"


def test_import_refuses_a_head_trained_for_another_model():
    # gpt-oss-120b's head has gpt-oss-20b's shapes (hidden 2880, vocab 201,088): the core would plan it; the app
    # refuses a head for another target, naming the flag and the right head
    at = pasted(f"vllm serve openai/gpt-oss-20b --speculative-config '{SPEC % 'lmsys/EAGLE3-gpt-oss-120b-bf16'}'")
    assert "--speculative-config" in errors(at) and "trained for gpt-oss-120b, not gpt-oss-20b: choose " \
        "eagle3-gpt-oss-20b" in errors(at)
    at.button(key="import.apply").click().run()
    assert "Not applied" in errors(at) and state(at).drafter is None


@pytest.mark.parametrize("page", ["pages/budget.py", "pages/gpus.py", "pages/parallelism.py"])
def test_a_method_without_a_head_is_refused_on_every_page_without_a_plan(page):
    at = run_app({"v": "1", "m": "qwen3-8b", "spec": "eagle3", "nspec": "2"}, page)
    text = errors(at)  # the core's refusal (kvplan.drafter.check_plan), the flag named
    assert (f"**--speculative-config**: {NO_HEAD}" in text if page != "pages/parallelism.py" else
            f"TP1 PP1 DP1, TP2 PP1 DP1, TP4 PP1 DP1, TP8 PP1 DP1: --speculative-config: {NO_HEAD}" in text)
    assert "KV cache tokens" not in metrics(at) and "Verdict" not in metrics(at)
    if page == "pages/parallelism.py":  # each compared layout refused (one line names them all), no layout table
        assert sum(NO_HEAD in plain(e.value) for e in at.error) == 1 and not html_tables(at)
    if page == "pages/gpus.py":
        assert not html_tables(at)
