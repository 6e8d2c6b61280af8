"""SGLang speculative decoding in the core (kvplan.sglang.speculative_refusal, the 48 running requests): what is
planned from 0.5.14 (NEXTN / EAGLE on the MTP layers, NGRAM) and what is refused naming --speculative-algorithm.

Read in the sglang 0.5.6, 0.5.8, 0.5.10, 0.5.12, 0.5.13, 0.5.14, 0.5.20 and 0.5.23 wheels (2026-12): the draft worker
loads before the target's pool is profiled from 0.5.14 (managers/scheduler.py init_model_worker), inside the target's
TpModelWorker through 0.5.13 (model_runner.initialize -> init_memory_pool); max_running_requests = 48 without
--max-running-requests (server_args.py _handle_speculative_decoding, arg_groups/speculative_hook.py).
"""

import pytest

from kvplan.cli import main
from kvplan.errors import PlanInputError
from kvplan.sglang import speculative_refusal
from tests.app_util import kvplan_plan

CORE = dict(preset="deepseek-v3", gpu="H200", tp=8, engine="sglang")


@pytest.mark.parametrize(("version", "method", "dpa", "refused"), [
    ("0.5.20", "none", 1, None), ("0.5.20", "mtp", 8, None), ("0.5.14", "ngram", 1, None),
    ("0.5.10", "mtp", 1, "SGLang 0.5.10 - 0.5.13 sizes the target's KV pool before it loads the draft"),
    ("0.4.0", "ngram", 1, "pick SGLang 0.5.14 or newer"),
    ("0.5.20", "ngram", 2, "NGRAM with DP attention: SGLang refuses it"),
    ("0.5.20", "eagle3", 1, None), ("0.5.20", "eagle3", 2, "EAGLE3 with DP attention: not modelled"),
    ("0.5.10", "eagle3", 1, "pick SGLang 0.5.14 or newer"),
    # EAGLE (1) heads: planned from 0.5.14 as EAGLE3 is (tests/test_sglang_eagle1.py), not with DP attention / PP
    ("0.5.20", "eagle", 1, None), ("0.5.14", "eagle", 2, "EAGLE with a draft head with DP attention: not modelled"),
    ("0.5.10", "eagle", 1, "pick SGLang 0.5.14 or newer"),
    ("0.5.20", "dflash", 1, "'dflash': not modelled for SGLang")])
def test_speculative_refusal(version, method, dpa, refused):
    got = speculative_refusal(version, method, dpa)
    assert got is None if refused is None else (got[0] == "--speculative-algorithm" and refused in got[1])


def test_the_plan_refuses_an_older_line_and_the_cli_names_the_flag(capsys):
    with pytest.raises(PlanInputError) as exc:
        kvplan_plan(**CORE, sglang_version="0.5.10", speculative_method="mtp", num_speculative_tokens=3)
    assert exc.value.field == "--speculative-algorithm"
    assert main(["plan", "deepseek-v3", "--gpu", "H200", "-tp", "8", "--engine", "sglang", "--sglang-version",
                 "0.5.10", "--mtp-tokens", "3"]) == 2
    assert "--speculative-algorithm: SGLang 0.5.10 - 0.5.13" in capsys.readouterr().err


def test_48_running_requests_per_dp_worker_and_steps_change_no_pool():
    # DP attention 8 on 0.5.20: min(48 // 8, tokens // 2) = 6 a worker; --max-running-requests given: it, not 48
    dpa = kvplan_plan(**CORE, dp_attention_size=8, speculative_method="mtp", num_speculative_tokens=1)
    assert "max_running_requests=6," in dpa.engine_log[-1]
    given = kvplan_plan(**CORE, max_num_seqs=128, speculative_method="mtp", num_speculative_tokens=1)
    assert "max_running_requests=128," in given.engine_log[-1]
    five = kvplan_plan(**CORE, speculative_method="mtp", num_speculative_tokens=5)
    assert five.kv_cache_tokens == kvplan_plan(**CORE, speculative_method="mtp", num_speculative_tokens=1).kv_cache_tokens


def test_import_reads_the_flags_and_their_abbreviations():
    from kvplan.web.commands import parse_command

    cmd = parse_command("python3 -m sglang.launch_server --model deepseek-ai/DeepSeek-V3 --speculative-algo NEXTN "
                        "--speculative-draft SGLang/DeepSeek-V3-NextN --speculative-num-steps 2 --speculative-eagle-topk 4 "
                        "--speculative-num-draft-tokens 4 --tp 8 --trust-remote-code")
    assert (cmd.speculative_method, cmd.num_speculative_tokens, cmd.unplanned) == ("mtp", 2, ())
    assert any(n.startswith("--speculative-draft-model-path SGLang/DeepSeek-V3-NextN: the exported NextN") for n in
               cmd.args.notes)
    assert any(n.startswith("--speculative-eagle-topk 4: read, not planned") for n in cmd.args.notes)
    # EAGLE with a draft checkpoint of its own: carried as "eagle" (no head config kvplan ships: the core refuses it
    # naming --speculative-draft-model-path, tests/test_sglang_eagle1.py)
    cmd = parse_command("python -m sglang.launch_server --model-path m --speculative-algorithm EAGLE "
                        "--speculative-draft-model-path yuhuili/EAGLE-LLaMA3-Instruct-8B")
    assert cmd.speculative_method == "eagle"
    for line, field, why in [("--speculative-algorithm DFLASH", "--speculative-algorithm", "'DFLASH': not modelled"),
                             ("--speculative-algorithm NGRAM --speculative-num-steps 0", "--speculative-num-steps",
                              "must be from 1"),
                             ("--speculative-algorithm NEXTN --speculative-num-steps 65", "--speculative-num-steps",
                              "1 to 64")]:
        with pytest.raises(PlanInputError) as exc:
            parse_command("python -m sglang.launch_server --model-path m " + line)
        assert exc.value.field == field and why in exc.value.message
