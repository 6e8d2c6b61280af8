"""The SGLang flag tables kvplan.web.commands walks (SGLANG_SWITCH_FIELDS, SGLANG_VALUE_FLAGS) and
kvplan.draft_model.draft_preset_name, the public lookup the Import page's STANDALONE draft and the Plan page's
drafter field share."""

import pytest

from kvplan.draft_model import draft_preset_name
from kvplan.errors import PlanInputError
from kvplan.web.commands import (
    SGLANG_DP,
    SGLANG_EP,
    SGLANG_FLAGS,
    SGLANG_NO_MEMORY_SWITCHES,
    SGLANG_READ_NOT_PLANNED,
    SGLANG_SWITCH_FIELDS,
    SGLANG_SWITCHES,
    SGLANG_VALUE_FLAGS,
    Command,
    parse_command,
)

LINE = "python -m sglang.launch_server --model-path Qwen/Qwen3-8B "


def test_draft_preset_name_reads_model_as_vllm_does():
    # an instruct variant's HF repo, with the spaces and trailing "/" a paste carries -> the base preset
    assert draft_preset_name(" meta-llama/Llama-3.2-1B-Instruct/ ") == "llama-3.2-1b"
    assert draft_preset_name("llama-3.2-1b") == "llama-3.2-1b"
    assert draft_preset_name("someone/not-a-model") is None


def test_tables_are_disjoint_and_name_command_fields():
    tables = [set(SGLANG_SWITCHES), set(SGLANG_SWITCH_FIELDS), set(SGLANG_VALUE_FLAGS), set(SGLANG_EP),
              set(SGLANG_FLAGS), set(SGLANG_NO_MEMORY_SWITCHES), set(SGLANG_READ_NOT_PLANNED)]
    names = [n for t in tables for n in t]
    assert len(names) == len(set(names))  # one table a flag: the walk's order does not decide
    assert not set(SGLANG_DP) - set(SGLANG_FLAGS)  # without --enable-dp-attention they are vLLM's --data-parallel-size
    for field, _ in [*SGLANG_SWITCH_FIELDS.values(), *SGLANG_VALUE_FLAGS.values()]:
        assert field in Command.model_fields


@pytest.mark.parametrize("flag", sorted(SGLANG_VALUE_FLAGS))
def test_value_flag_at_line_end_needs_a_value(flag):
    # (--cuda-graph-backend-prefill said "'None': one of breakable, tc_piecewise, disabled" here before the table)
    with pytest.raises(PlanInputError) as exc:
        parse_command(LINE + flag)
    assert exc.value.field == flag and exc.value.message == "needs a value"


@pytest.mark.parametrize(("given", "field", "value"), [
    ("--max-total-tokens 200000", "max_total_tokens", 200_000),
    ("--max_total_tokens=200000", "max_total_tokens", 200_000),  # underscores read as dashes, inline value
    ("--moe-dense-tp-size 1", "moe_dense_tp_size", 1),
    ("--swa-full-tokens-ratio 0.5", "swa_full_tokens_ratio", 0.5),
    ("--mamba-full-memory-ratio 0.9", "mamba_full_memory_ratio", 0.9),
    ("--max-mamba-cache-size 64", "max_mamba_cache_size", 64),
    ("--mamba-ssm-dtype bfloat16", "mamba_ssm_dtype", "bfloat16"),
    ("--cuda-graph-backend-prefill tc_piecewise", "piecewise_cuda_graph", "enforce"),
    ("--cuda-graph-backend-prefill disabled", "piecewise_cuda_graph", "disable"),
    ("--mem-fraction-static 0.8", "mem_fraction_static", 0.8),
    ("--mamba-scheduler-strategy extra_buffer", "unplanned", ("--mamba-scheduler-strategy extra_buffer",)),
    ("--tp 4 --enable-dp-attention --dp 2", "dp_attention_size", 2),
    ("--disable-radix-cache", "disable_radix_cache", True),
    ("--disable-prefill-cuda-graph", "piecewise_cuda_graph", "disable"),
])
def test_table_entry_sets_its_field(given, field, value):
    assert getattr(parse_command(LINE + given), field) == value


@pytest.mark.parametrize(("given", "field", "message"), [
    ("--max-total-tokens 0", "--max-total-tokens", "0: must be from 1 to 1,000,000,000,000"),
    ("--moe-dense-tp-size x", "--moe-dense-tp-size", "'x' is not a whole number"),
    ("--swa-full-tokens-ratio 2", "--swa-full-tokens-ratio",
     "2: must be above 0 and at most 1 (SGLang's range (0, 1.0])"),
    ("--mamba-ssm-dtype int8", "--mamba-ssm-dtype", "'int8': one of float32, bfloat16, float16"),
    ("--cuda-graph-backend-prefill auto", "--cuda-graph-backend-prefill",
     "'auto': one of breakable, tc_piecewise, disabled"),
])
def test_table_entry_refuses_naming_the_flag(given, field, message):
    with pytest.raises(PlanInputError) as exc:
        parse_command(LINE + given)
    assert (exc.value.field, exc.value.message) == (field, message)
