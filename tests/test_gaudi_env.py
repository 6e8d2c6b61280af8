"""VLLM_GRAPH_RESERVED_MEM (EngineConfig.vllm_graph_reserved_mem) wherever a user sets it: the CLI's
--vllm-graph-reserved-mem, Import's env prefix, the link key ``grm`` and the sidebar knob drawn for an Intel Gaudi GPU.

The numbers are tests/test_gaudi_budget.py's Llama-3.1-70B TP 4 plan on Gaudi 3 (kvplan.vllm_gaudi.pool_bytes: pool =
usable - usable x VLLM_GRAPH_RESERVED_MEM - one dummy block): weights 35,314,483,200 a rank, block 10,485,760 B,
free 99,966,500,864, usable x 0.92 = 91,969,180,794.
"""

import contextlib
import io
import json

import pytest

from kvplan.cli import main as cli_main
from kvplan.errors import PlanInputError
from kvplan.web import cached, views
from kvplan.web.commands import parse_command
from kvplan.web.state import DEFAULT, PlanState, decode, encode
from tests.app_util import plain, run_app, state

LINE = "VLLM_GRAPH_RESERVED_MEM=0.4 vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4 --max-model-len 8192"


def cli_rank(*flags: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cli_main(["plan", "llama-3.1-70b", "--gpu", "Gaudi3", "-tp", "4", "--max-model-len", "8192", *flags, "--json"])
    return json.loads(out.getvalue())["ranks"][0]


def test_cli_option_sets_the_hpu_graph_reserve():
    # default 0.1: graphs 9,196,918,079, pool 82,761,776,955 -> 7,892 blocks (tests/test_gaudi_budget.py)
    default = cli_rank()
    assert (default["kv_pool_bytes"], default["num_blocks"]) == (82_761_776_955, 7892)
    # 0.3: graphs floor(91,969,180,794 x 3 / 10) = 27,590,754,238; pool 91,969,180,794 - 27,590,754,238 - 10,485,760
    # = 64,367,940,796 -> // 10,485,760 = 6,138 blocks
    given = cli_rank("--vllm-graph-reserved-mem", "0.3")
    assert (given["kv_pool_bytes"], given["num_blocks"]) == (64_367_940_796, 6138)


def test_cli_option_out_of_range_names_the_flag(capsys):
    assert cli_main(["plan", "llama-3.1-70b", "--gpu", "Gaudi3", "--vllm-graph-reserved-mem", "1"]) != 0
    assert capsys.readouterr().err.strip() == "error: --vllm-graph-reserved-mem: Input should be less than 1"


def test_import_reads_the_env_prefix_and_plans_it_on_gaudi():
    cmd = parse_command(LINE)
    assert cmd.args.vllm_graph_reserved_mem == 0.4 and cmd.args.engine_fields()["vllm_graph_reserved_mem"] == 0.4
    imported, note = views.imported_state(PlanState(import_gpu="Gaudi3"), cmd)
    assert imported.vllm_graph_reserved_mem == 0.4 and "vllm-gaudi only" not in note
    assert {"flag": "VLLM_GRAPH_RESERVED_MEM", "value": "0.4"} in views.vllm_rows(cmd.args, cmd)
    # 0.4: graphs floor(91,969,180,794 x 2 / 5) = 36,787,672,317; pool 91,969,180,794 - 36,787,672,317 - 10,485,760
    # = 55,171,022,717 -> // 10,485,760 = 5,261 blocks
    rank = cached.plan_for(imported).ranks[0]
    assert (rank.kv_pool_bytes, rank.num_blocks) == (55_171_022_717, 5261)


def test_import_on_a_cuda_gpu_says_it_only_matters_on_gaudi():
    imported, note = views.imported_state(PlanState(import_gpu="H100-SXM"), parse_command(LINE))
    assert imported.vllm_graph_reserved_mem == 0.4
    assert "VLLM_GRAPH_RESERVED_MEM is read by vllm-gaudi only (Intel Gaudi): it changes nothing on H100-SXM." in note


@pytest.mark.parametrize("value", ["1", "-0.1", "x"])
def test_import_refuses_a_bad_value_naming_the_variable(value):
    with pytest.raises(PlanInputError, match="^VLLM_GRAPH_RESERVED_MEM: must be a number from 0 to below 1"):
        parse_command(f"VLLM_GRAPH_RESERVED_MEM={value} vllm serve m")


def test_link_round_trip():
    s = PlanState(gpu="Gaudi3", vllm_graph_reserved_mem=0.25)
    assert encode(s) == {"v": "1", "g": "Gaudi3", "grm": "0.25"}
    assert decode(encode(s)) == (s, [])
    assert decode({"v": "1", "grm": "0"})[0].vllm_graph_reserved_mem == 0.0  # 0 (no reserve) is a value, not unset


@pytest.mark.parametrize("text", ["1", "1.5", "-0.1", "nan", "x"])
def test_tampered_link_value_is_refused_by_name(text):
    s, warnings = decode({"v": "1", "grm": text})
    assert s.vllm_graph_reserved_mem == DEFAULT.vllm_graph_reserved_mem is None
    assert len(warnings) == 1 and "'grm' (vllm_graph_reserved_mem)" in warnings[0]
    if text != "x":
        assert "must be at least 0 and below 1" in warnings[0]


@pytest.mark.parametrize("gpu, shown", [("Gaudi3", True), ("H100-SXM", False)])
def test_sidebar_knob_only_for_gaudi(gpu, shown):
    at = run_app({"v": "1", "g": gpu})
    at.session_state["kv.knobs"] = True
    at.run()
    keys = {w.key for w in at.sidebar.get("number_input")}
    assert ("w.vllm_graph_reserved_mem" in keys) == shown
    if shown:
        at.number_input(key="w.vllm_graph_reserved_mem").set_value(0.3).run()
        assert state(at).vllm_graph_reserved_mem == 0.3 and at.query_params["grm"] == "0.3"
        assert not [e for e in at.error if "graph reserved" in plain(e.value)]
        at.number_input(key="w.vllm_graph_reserved_mem").set_value(1.0).run()  # nothing left for the KV cache
        assert state(at).vllm_graph_reserved_mem == 0.3
        assert "**Refused graph reserved mem = 1.0**: must be at least 0 and below 1; every page plans the last valid value (0.3) instead." in [
            plain(e.value) for e in at.error]


def test_a_linked_reserve_on_a_cuda_gpu_is_named_in_the_sidebar():
    at = run_app({"v": "1", "grm": "0.4"})  # H100-SXM: no knob, but the kept value is named, open or closed
    assert "Set: VLLM_GRAPH_RESERVED_MEM=0.4" in [plain(c.value) for c in at.sidebar.caption]
    at.session_state["kv.knobs"] = True
    at.run()
    assert "VLLM_GRAPH_RESERVED_MEM=0.4 is read by vllm-gaudi only: not planned on H100-SXM" in [
        plain(c.value) for c in at.sidebar.caption]
    assert not at.exception
