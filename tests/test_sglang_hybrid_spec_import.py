"""--speculative-num-draft-tokens carried by Import, the link and the CLI (kvplan.web.commands, kvplan.web.state,
kvplan.cli_plan) into EngineConfig.speculative_num_draft_tokens, which sizes an SGLang hybrid's MambaPool reserve
(kvplan.sglang.mamba_pool; tests/test_sglang_qwen_mtp.py holds the arithmetic)."""

import json

from kvplan.cli import main
from kvplan.web import cached
from kvplan.web.commands import parse_command
from kvplan.web.state import PlanState, decode, encode
from kvplan.web.views import knob_values

LINE = "python -m sglang.launch_server --model-path Qwen/Qwen3.6-27B --speculative-algorithm EAGLE "


def test_import_carries_the_draft_tokens_sglang_keeps():
    # top-k 1: SGLang resets D to steps + 1 (speculative_hook.py), which the core derives: nothing carried
    c = parse_command(LINE + "--speculative-num-steps 5 --speculative-eagle-topk 1 --speculative-num-draft-tokens 6")
    assert (c.speculative_method, c.num_speculative_tokens, c.speculative_num_draft_tokens) == ("mtp", 5, None)
    # ... and a D it resets is said so: steps 3 + 1 = 4, not 8
    c = parse_command(LINE + "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 8")
    assert c.speculative_num_draft_tokens is None
    assert any("resets it to --speculative-num-steps + 1 = 4" in n for n in c.args.notes)
    # a top-k 4 tree keeps its 8
    c = parse_command(LINE + "--speculative-num-steps 3 --speculative-eagle-topk 4 --speculative-num-draft-tokens 8")
    assert c.speculative_num_draft_tokens == 8 and knob_values(c)["speculative_num_draft_tokens"] == 8
    # NGRAM keeps what it is given (12 when not: the core's default)
    c = parse_command("python -m sglang.launch_server --model-path Qwen/Qwen3.6-27B --speculative-algorithm NGRAM "
                      "--speculative-num-draft-tokens 16")
    assert (c.speculative_method, c.speculative_num_draft_tokens) == ("ngram", 16)


def test_the_link_and_the_engine_carry_it_only_with_a_method():
    s = PlanState(model="qwen3.5-27b", engine="sglang", speculative_method="ngram", speculative_num_draft_tokens=16)
    params = encode(s)
    assert params["ndt"] == "16"
    back, errors = decode(params)
    assert not errors and back.speculative_num_draft_tokens == 16
    assert cached.engine_config(back).speculative_num_draft_tokens == 16
    # no speculative method: not planned (EngineConfig keeps None) and not named as an off-engine knob
    off = s.model_copy(update={"speculative_method": "none"})
    assert cached.engine_config(off).speculative_num_draft_tokens is None
    assert "speculative_num_draft_tokens" not in cached.off_engine_names(off)


def test_cli_flag_reaches_the_reserve(capsys):
    # NGRAM with D 4 on 0.5.20: the reserve term names 4 draft tokens (the default would be 12)
    assert main(["plan", "qwen3.5-27b", "--gpu", "H200", "--engine", "sglang", "--sglang-version", "0.5.20",
                 "--speculative-algorithm", "NGRAM", "--speculative-num-draft-tokens", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    names = [t["name"] for r in out["ranks"][:1] for t in r["terms"]]
    assert any(n.endswith("x 4 draft tokens)") for n in names), names


def test_app_import_and_link_plan_the_qwen_mtp_reserve():
    from tests.app_util import html_tables, kvplan_plan, metrics, run_app, state

    # a Qwen3.6-27B EAGLE line on one H200 (top-k 4 keeps D 8): the preview and the applied sidebar plan the core's
    # figure for the same flags (tests/test_sglang_qwen_mtp.py derives its arithmetic)
    core = kvplan_plan("qwen3.5-27b", "H200", engine="sglang", speculative_method="mtp", num_speculative_tokens=3,
                       speculative_num_draft_tokens=8)
    assert any(t.name.endswith("x 8 draft tokens)") for t in core.ranks[0].terms)
    at = run_app({"v": "1", "m": "qwen3.5-27b"}, page="pages/import.py")
    at.text_area(key="w.command").set_value(
        "python -m sglang.launch_server --model-path Qwen/Qwen3.5-27B --speculative-algorithm EAGLE "
        "--speculative-num-steps 3 --speculative-eagle-topk 4 --speculative-num-draft-tokens 8").run()
    at.selectbox(key="w.import_gpu").select("H200").run()
    assert not at.exception and not at.error
    flags = {r["flag"]: r["value"] for r in html_tables(at)[0]}
    assert flags["--speculative-num-draft-tokens"] == "8"
    assert metrics(at)["KV cache tokens"] == f"{core.kv_cache_tokens:,}"
    at.button(key="import.apply").click().run()
    s = state(at)
    assert (s.speculative_method, s.num_speculative_tokens, s.speculative_num_draft_tokens) == ("mtp", 3, 8)
    assert at.query_params["ndt"] == "8"
