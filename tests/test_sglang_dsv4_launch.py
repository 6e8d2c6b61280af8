"""DeepSeek-V4 SGLang launch lines whose speculative flags, as typed, stop the server at start-up.

Source: sgl-project/sglang python/sglang/srt/arg_groups/deepseek_v4_hook.py apply_deepseek_v4_defaults (read in the
0.5.14 - 0.5.23 wheels on 2026-12-03, and in the search index's copy, file 57714383394, on 2026-12-04)::

    if server_args.speculative_algorithm is not None:
        assert server_args.speculative_algorithm == "EAGLE", "Only EAGLE speculative algorithm is supported for ..."
        assert server_args.speculative_eagle_topk == 1, "Only EAGLE speculative algorithm with topk == 1 ..."

It runs before the speculative hook reads NEXTN as EAGLE and fills the top-k default (None until then), so NEXTN, a
top-k other than 1, or no --speculative-eagle-topk, all fail. The plan carries kvplan's method ("mtp" for both
spellings), so the check is made where the line is read: the Import page and the CLI.
"""

import pytest

from kvplan.cli import main
from kvplan.errors import PlanInputError
from kvplan.sglang_dsv4 import DSV4_ALGORITHM_ASSERT, DSV4_TOPK_ASSERT, launch_refusal
from kvplan.web.commands import parse_command
from kvplan.web.state import PlanState
from kvplan.web.views import imported_state
from tests.app_util import plain, run_app

LINE = ("python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V4-Flash --tp 8 "
        "--speculative-num-steps 3 ")


@pytest.mark.parametrize("algorithm, topk, flag, said", [
    ("NEXTN", 1, "--speculative-algorithm", DSV4_ALGORITHM_ASSERT),
    ("nextn", None, "--speculative-algorithm", DSV4_ALGORITHM_ASSERT),  # the name first, as the hook asserts it
    ("EAGLE", None, "--speculative-eagle-topk", DSV4_TOPK_ASSERT),
    ("EAGLE", 4, "--speculative-eagle-topk", DSV4_TOPK_ASSERT),
])
def test_what_the_hook_refuses(algorithm, topk, flag, said):
    field, message = launch_refusal(algorithm, topk)
    assert field == flag and said in message
    assert "--speculative-algorithm EAGLE --speculative-eagle-topk 1" in message  # the fix
    assert ("not given" in message) == (flag == "--speculative-eagle-topk" and topk is None)


def test_what_the_hook_lets_start():
    assert launch_refusal("EAGLE", 1) is None
    assert launch_refusal(None, None) is None  # no speculation: nothing asserted
    assert launch_refusal("EAGLE", None, topk_typed=False) is None  # the CLI, which plans top-k 1


def _imported(line: str):
    return imported_state(PlanState(import_gpu="B200"), parse_command(line))


def test_import_refuses_nextn_and_a_missing_topk_naming_the_flag():
    with pytest.raises(PlanInputError) as exc:
        _imported(LINE + "--speculative-algorithm NEXTN --speculative-eagle-topk 1")
    assert exc.value.field == "--speculative-algorithm" and DSV4_ALGORITHM_ASSERT in exc.value.message
    with pytest.raises(PlanInputError) as exc:
        _imported(LINE + "--speculative-algorithm EAGLE")
    assert exc.value.field == "--speculative-eagle-topk" and DSV4_TOPK_ASSERT in exc.value.message


def test_import_plans_the_line_sglang_starts():
    imported, _ = _imported(LINE + "--speculative-algorithm EAGLE --speculative-eagle-topk 1")
    assert (imported.engine, imported.model, imported.speculative_method, imported.num_speculative_tokens) == \
        ("sglang", "deepseek-v4-flash", "mtp", 3)


def test_nextn_elsewhere_is_still_eagle():
    # NEXTN is EAGLE for every other model (server_args resolves it): a Qwen3.5 hybrid's MTP line is planned
    imported, _ = imported_state(PlanState(import_gpu="H200"), parse_command(
        "python -m sglang.launch_server --model-path Qwen/Qwen3.5-27B --speculative-algorithm NEXTN "
        "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4"))
    assert (imported.model, imported.speculative_method) == ("qwen3.5-27b", "mtp")


def test_cli_refuses_nextn_on_deepseek_v4(capsys):
    base = ["plan", "deepseek-v4-flash", "--gpu", "B200", "-tp", "8", "--engine", "sglang", "--sglang-version",
            "0.5.20", "--speculative-num-steps", "3", "--speculative-algorithm"]
    assert main(base + ["NEXTN"]) == 2
    assert DSV4_ALGORITHM_ASSERT in capsys.readouterr().err
    assert main(base + ["EAGLE", "--json"]) == 0  # kvplan's 8 x B200 MTP pool (test_sglang_dsv4_spec)
    capsys.readouterr()


def test_the_import_page_shows_the_refusal():
    at = run_app(page="pages/import.py")
    at.text_area(key="w.command").set_value(LINE + "--speculative-algorithm NEXTN --speculative-eagle-topk 1").run()
    at.selectbox(key="w.import_gpu").select("B200").run()
    errors = plain(" ".join(e.value for e in at.error))
    assert "--speculative-algorithm" in errors and DSV4_ALGORITHM_ASSERT in errors
    assert not at.metric  # no plan beside the refusal
