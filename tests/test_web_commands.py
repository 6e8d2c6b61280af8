"""The Import page's command reader: which launcher a line is, SGLang's flags as vLLM's, and a line that
launches neither engine refused with its first word named (never read as a model)."""

import pytest

from kvplan.errors import PlanInputError
from kvplan.web.commands import parse_command


@pytest.mark.parametrize("line, launcher, model, tp", [
    ("vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4", "vllm", "meta-llama/Llama-3.1-70B-Instruct", 4),
    ("CUDA_VISIBLE_DEVICES=0,1 /opt/venv/bin/vllm serve qwen3-8b --tensor-parallel-size 2", "vllm", "qwen3-8b", 2),
    ("python3 -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-8B", "vllm", "Qwen/Qwen3-8B", 1),
    ("docker run --gpus all vllm/vllm-openai:v0.11.0 --model Qwen/Qwen3-8B -tp 8", "vllm", "Qwen/Qwen3-8B", 8),
    ("--max-model-len 8k -tp 2", "flags", None, 2),
    ("python -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 2", "sglang", "Qwen/Qwen3-8B", 2),
    ("sglang serve --model-path Qwen/Qwen3-30B-A3B --tp-size 4", "sglang", "Qwen/Qwen3-30B-A3B", 4),
    ("docker run lmsysorg/sglang:latest python3 -m sglang.launch_server --model-path m/x --dp 2", "sglang", "m/x", 1),
])
def test_launchers(line, launcher, model, tp):
    cmd = parse_command(line)
    assert (cmd.launcher, cmd.args.model, cmd.args.tensor_parallel_size) == (launcher, model, tp)
    assert cmd.engine == ("sglang" if launcher == "sglang" else "vllm")


def test_sglang_flags_read_as_vllm_ones():
    cmd = parse_command("python -m sglang.launch_server --model-path m/x --context-length 32768 --page-size 32 "
                        "--mem-fraction-static=0.85 --max-running-requests 64 --kv-cache-dtype fp8_e5m2 --tp-size 4 "
                        "--ep-size 4 --dp-size 2 --host 0.0.0.0")
    a = cmd.args
    assert (a.max_model_len, a.block_size, a.max_num_seqs, a.data_parallel_size, a.enable_expert_parallel) == \
        (32768, 32, 64, 2, True)
    assert cmd.mem_fraction_static == 0.85 and a.kv_cache_dtype.startswith("fp8")


SGL = "python -m sglang.launch_server --model-path Qwen/Qwen3-30B-A3B --tp 4 "


def test_vllms_expert_parallel_switch_on_an_sglang_line_is_named_with_sglangs_flag():
    """No SGLang server_args.py (0.4.0 - 0.5.23 wheels) has --enable-expert-parallel or a flag it abbreviates: SGLang
    stops on it. Named (as --max-num-seqs is), and planned as SGLang's own spelling, --ep-size = --tp-size."""
    from kvplan.web.views import unplanned_flags

    cmd = parse_command(SGL + "--enable-expert-parallel")
    assert cmd.args.enable_expert_parallel and cmd.vllm_spelled == ("--enable-expert-parallel",)
    assert unplanned_flags(cmd) == [
        "--enable-expert-parallel: vLLM's flag, not SGLang's: SGLang's launch_server stops on it (argparse: "
        "unrecognized arguments); planned as SGLang's --ep-size 4"]
    assert unplanned_flags(parse_command(SGL + "--ep-size 4")) == []  # SGLang's own flag: planned, nothing to say


@pytest.mark.parametrize("flag", ["--ep-size", "--ep", "--expert-parallel-size"])
def test_sglang_ep_size_is_planned_only_over_the_whole_tp_group(flag):
    assert parse_command(SGL + f"{flag} 4").args.enable_expert_parallel is True
    assert parse_command(SGL + f"{flag}=1").args.enable_expert_parallel is False
    # 2 of TP 4: SGLang runs 2 MoE DP groups of EP 2 (arg_groups/parallel_hook.py: ep_size x moe_dp_size == tp_size,
    # 0.5.23); kvplan's EP places cdiv(E, 4) whole experts a rank: refused, not planned as EP 4
    with pytest.raises(PlanInputError) as exc:
        parse_command(SGL + f"{flag} 2")
    assert exc.value.field == flag and exc.value.message.startswith("2 with --tp-size 4: kvplan plans SGLang's")
    with pytest.raises(PlanInputError) as exc:  # server_args.py: type=int
        parse_command(SGL + f"{flag} all")
    assert exc.value.field == flag


def test_enable_ep_moe_is_planned_as_ep_equal_to_tp_and_its_retirement_said():
    cmd = parse_command(SGL + "--enable-ep-moe")
    assert cmd.args.enable_expert_parallel is True
    assert [n for n in cmd.args.notes if n.startswith("--enable-ep-moe")] == [
        "--enable-ep-moe: planned as --ep-size equal to --tp-size (experts whole over the TP group), as SGLang "
        "through 0.5.2 reads it; SGLang 0.5.3 - 0.5.4 refuse it (deprecated: \"set --ep-size to the same value as "
        "--tp-size\") and 0.5.5 and later have no such flag: write --ep-size N there"]


@pytest.mark.parametrize("line, word", [("rm -rf /", "'rm'"), ("python train.py --lr 3", "'python train.py"),
                                        ("echo vllm serve x", "'echo'"), ("sglang launch x", "'sglang'")])
def test_a_line_that_launches_neither_engine_is_refused(line, word):
    with pytest.raises(PlanInputError) as exc:
        parse_command(line)
    assert exc.value.field == "command" and word in exc.value.message


def test_sglang_mem_fraction_out_of_range_names_the_flag():
    with pytest.raises(PlanInputError) as exc:
        parse_command("python -m sglang.launch_server --model-path m/x --mem-fraction-static 1.5")
    assert exc.value.field == "--mem-fraction-static"


def test_an_sglang_lines_vllm_only_knob_is_warned_not_also_said_planned():
    """vLLM's parser notes --moe-backend marlin "planned by the core"; on an SGLang line it is not (SGLang's own flag is
    --moe-runner-backend): the Import page warns so, and does not also list vLLM's note as info."""
    from kvplan.web.views import info_notes, unplanned_flags

    for typed in ("--moe-backend marlin", "--moe-backend=marlin"):
        cmd = parse_command(SGL + typed)
        assert unplanned_flags(cmd) == ["--moe-backend (marlin): a vLLM flag SGLang does not have: not planned with "
                                        "SGLang"]
        assert not [n for n in info_notes(cmd) if "moe-backend" in n]
    vllm = parse_command("vllm serve Qwen/Qwen3-30B-A3B " + typed)
    assert [n for n in info_notes(vllm) if n.startswith("--moe-backend=marlin: planned by the core")]
