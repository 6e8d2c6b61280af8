"""Environment assignments before a pasted serving command: ``VAR=x``, ``env [-u NAME] VAR=x``, ``export VAR=x &&``
and ``docker run -e``. VLLM_USE_V1=0 (or a vllm/vllm-openai image before 0.8) plans vLLM's V0 engine profile and the
import summary says so; other assignments never make a line "not a serving command"."""

import pytest

from kvplan.errors import PlanInputError
from kvplan.vllm_args import launch_env, parse_vllm_command
from kvplan.web import views
from kvplan.web.commands import parse_command
from kvplan.web.state import PlanState
from tests.app_util import kvplan_plan, metrics, plain, run_app, state


@pytest.mark.parametrize("line, version, tp", [
    ("VLLM_USE_V1=0 vllm serve meta-llama/Llama-3.1-8B -tp 2", "0.7", 2),
    ("env VLLM_USE_V1=0 vllm serve meta-llama/Llama-3.1-8B -tp 2", "0.7", 2),  # refused before: 'env' not serving
    ("/usr/bin/env -u NCCL_DEBUG VLLM_USE_V1=false vllm serve meta-llama/Llama-3.1-8B", "0.7", 1),
    ("export VLLM_USE_V1=0 && vllm serve meta-llama/Llama-3.1-8B", "0.7", 1),
    ("VLLM_USE_V1=0 python -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-3.1-8B", "0.7", 1),
    ("docker run --gpus all -e VLLM_USE_V1=0 vllm/vllm-openai:v0.8.5 --model meta-llama/Llama-3.1-8B", "0.7", 1),
    # an image of 0.6.0 - 0.6.4: kvplan's own 0.6 profile (its release is known from the tag)
    ("docker run --env=VLLM_USE_V1=0 vllm/vllm-openai:v0.6.3.post1 --model meta-llama/Llama-3.1-8B", "0.6", 1),
    # before 0.8 vLLM runs V0 unless VLLM_USE_V1=1
    ("docker run vllm/vllm-openai:v0.7.3 --model meta-llama/Llama-3.1-8B", "0.7", 1),
    # V1 asked for on a 0.7.3 image: V1 of 0.7 - 0.9 was not read; its nearest profile, 0.10, with a note
    ("docker run -e VLLM_USE_V1=1 vllm/vllm-openai:v0.7.3 --model meta-llama/Llama-3.1-8B", "0.10", 1),
    ("VLLM_USE_V1=1 vllm serve meta-llama/Llama-3.1-8B", None, 1),
    ("CUDA_VISIBLE_DEVICES=0,1 HF_HOME=/data/hf env NCCL_DEBUG=INFO vllm serve meta-llama/Llama-3.1-8B -tp 2", None, 2),
])
def test_env_before_the_command(line, version, tp):
    cmd = parse_command(line)
    assert cmd.launcher == "vllm" and cmd.engine == "vllm"
    assert cmd.args.model == "meta-llama/Llama-3.1-8B" and cmd.args.tensor_parallel_size == tp
    assert cmd.args.vllm_version == version
    v0 = version is not None and version.startswith(("0.6", "0.7"))
    assert any("V0 engine" in n for n in cmd.args.notes) == v0
    if version is not None:
        assert cmd.args.engine_fields()["vllm_version"] == version
    else:
        assert "vllm_version" not in cmd.args.engine_fields()


def test_launch_env_reads_every_assignment():
    tokens = ["env", "-i", "-u", "X", "A=1", "B=x=y", "vllm", "serve", "m"]
    assert launch_env(tokens) == ({"A": "1", "B": "x=y"}, 6)
    assert launch_env(["export", "A=1;", "vllm"]) == ({"A": "1"}, 2)
    assert launch_env(["--max-model-len", "8"]) == ({}, 0)


def test_the_sampler_env_reaches_the_args_through_the_import_parser():
    # before: parse_command passed only the flags on, so VLLM_USE_FLASHINFER_SAMPLER was lost
    assert parse_command("VLLM_USE_FLASHINFER_SAMPLER=1 vllm serve m").args.sampler == "flashinfer"
    assert parse_command("env VLLM_USE_FLASHINFER_SAMPLER=0 vllm serve m").args.sampler == "pytorch"
    assert parse_vllm_command("VLLM_USE_V1=0 --max-model-len 4096").vllm_version == "0.7"  # flags alone


@pytest.mark.parametrize("line", ["env rm -rf /", "FOO=1 env BAR=2 bash -c 'vllm serve m'", "env"])
def test_other_commands_after_env_are_still_refused(line):
    with pytest.raises(PlanInputError, match="not a serving command|empty"):
        parse_command(line)


def test_imported_state_selects_the_v0_profile_and_says_so():
    cmd = parse_command("VLLM_USE_V1=0 vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192")
    imported, note = views.imported_state(PlanState(import_gpu="H100-SXM", vllm_version="0.33"), cmd)
    assert imported.vllm_version == "0.7" and imported.model == "llama-3.1-8b" and imported.max_model_len == 8192
    assert "V0 engine" in note and "profile 0.7" in note
    v1, note = views.imported_state(PlanState(import_gpu="H100-SXM", vllm_version="0.11"),
                                    parse_command("vllm serve meta-llama/Llama-3.1-8B-Instruct"))
    assert v1.vllm_version == "0.11" and "V0" not in note  # a V1 line keeps the sidebar's release line


def test_import_page_applies_the_v0_profile():
    at = run_app(page="pages/import.py")
    at.text_area(key="w.command").set_value(
        "env VLLM_USE_V1=0 CUDA_VISIBLE_DEVICES=0 vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192").run()
    at.selectbox(key="w.import_gpu").select("H100-SXM").run()
    assert not [e for e in at.error if "not a serving command" in e.value]
    summary = plain(" ".join(c.value for c in at.caption))
    assert "V0 engine (VLLM_USE_V1=0 or a pre-0.8 image): vLLM profile 0.7" in summary
    assert any("VLLM_USE_V1=0: the V0 engine" in plain(i.value) for i in at.info)
    at.button(key="import.apply").click().run()
    assert state(at).vllm_version == "0.7" and state(at).max_model_len == 8192
    p = kvplan_plan("llama-3.1-8b", max_model_len=8192, vllm_version="0.7")
    assert metrics(at)["KV blocks"] == f"{p.num_blocks:,}"


def test_importing_another_layout_drops_a_typed_weights_figure():
    cmd = parse_command("vllm serve meta-llama/Llama-3.1-8B-Instruct -tp 2")
    base = PlanState(import_gpu="H100-SXM", weights_gib=14.2488)
    assert views.imported_state(base, cmd)[0].weights_gib is None  # measured at TP 1, not TP 2
    same = parse_command("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 4096")
    assert views.imported_state(base, same)[0].weights_gib == 14.2488
