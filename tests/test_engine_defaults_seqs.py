"""vLLM caps its batch defaults by each other from 0.11.1 (kvplan.engines.batch_defaults, VLLM_CHANGES
"batch_defaults_capped"): engine/arg_utils.py _set_default_max_num_seqs_and_batched_tokens_args, read in the
0.10.1.1 / 0.11.0 (absent) and 0.11.1 / 0.12.0 / 0.14.0 / 0.16.0 / 0.18.0 / 0.20.0 / 0.23.0 / 0.26.0 / 0.29.0 / 0.33.0
wheels (present): with no --max-num-batched-tokens the default is min(max_num_seqs x max_model_len, default); with no
--max-num-seqs the default is min(default, max_num_batched_tokens) ("Defaulting max_num_seqs to %d")."""

import pytest

from kvplan import load_preset
from kvplan.errors import PlanInputError
from kvplan.engines import EngineConfig, batch_defaults
from kvplan.gpus import get_gpu
from kvplan.plan import plan

H100 = get_gpu("H100-SXM")


def _defaults(version, **kw):
    max_len = kw.pop("max_model_len", None)
    return batch_defaults(H100.name, H100.memory_bytes, EngineConfig(vllm_version=version, **kw), 0, max_len)


def test_a_default_seqs_follows_a_small_token_budget():
    # H100 (>= 70 GiB, not an A100): 8,192 tokens / 1,024 sequences by default; --max-num-batched-tokens 128 ->
    # 0.33: min(1,024, 128) = 128 sequences; 0.11.0 kept 1,024
    assert _defaults("0.33", max_num_batched_tokens=128) == (128, 128)
    assert _defaults("0.11.1", max_num_batched_tokens=128) == (128, 128)
    assert _defaults("0.11", max_num_batched_tokens=128) == (128, 1024)
    assert _defaults("0.33", max_num_batched_tokens=4096) == (4096, 1024)  # not binding


def test_a_default_token_budget_follows_seqs_x_length():
    # --max-num-seqs 1 --max-model-len 4096: min(1 x 4,096, 8,192) = 4,096 tokens from 0.11.1; 8,192 before
    assert _defaults("0.33", max_num_seqs=1, max_model_len=4096) == (4096, 1)
    assert _defaults("0.11", max_num_seqs=1, max_model_len=4096) == (8192, 1)
    assert _defaults("0.33", max_num_seqs=4, max_model_len=4096) == (8192, 4)  # 16,384 > 8,192: not binding
    assert _defaults("0.33", max_model_len=4096) == (8192, 1024)


def test_the_plan_uses_the_capped_defaults():
    # the plan of --max-num-batched-tokens 128 alone is the plan of --max-num-batched-tokens 128 --max-num-seqs 128
    # (the sampler warm-up's rows and the CUDA-graph sizes follow the 128 sequences, not 1,024)
    spec = load_preset("qwen3-8b")
    alone = plan(spec, H100, EngineConfig(vllm_version="0.33", max_num_batched_tokens=128, max_model_len=8192))
    both = plan(spec, H100, EngineConfig(vllm_version="0.33", max_num_batched_tokens=128, max_num_seqs=128,
                                         max_model_len=8192))
    assert alone.ranks[0].kv_pool_bytes == both.ranks[0].kv_pool_bytes
    assert alone.ranks[0].num_blocks == both.ranks[0].num_blocks


def test_before_0_11_1_a_default_seqs_above_the_tokens_is_refused():
    # 0.11.0 keeps the default 1,024 sequences beside --max-num-batched-tokens 128, and SchedulerConfig._verify_args
    # refuses ("max_num_batched_tokens (128) must be greater than or equal to max_num_seqs (1024).")
    with pytest.raises(PlanInputError) as e:
        plan(load_preset("qwen3-8b"), H100, EngineConfig(vllm_version="0.11", max_num_batched_tokens=128))
    assert e.value.field == "max_num_batched_tokens"
    assert "must be greater than or equal to max_num_seqs (1024)" in str(e.value) and "--max-num-seqs 128" in str(e.value)
    p = plan(load_preset("qwen3-8b"), H100, EngineConfig(vllm_version="0.11", max_num_batched_tokens=128,
                                                          max_num_seqs=128))
    assert p.starts


def test_an_explicit_seqs_above_the_default_tokens_is_refused_naming_the_default():
    # A100-80GB: 2,048 batched tokens by default; --max-num-seqs 4096 is kept (given), min(4,096 x 8,192, 2,048) =
    # 2,048 < 4,096, and SchedulerConfig._verify_args refuses on every release
    with pytest.raises(PlanInputError) as e:
        plan(load_preset("qwen3-8b"), get_gpu("A100-80GB"), EngineConfig(vllm_version="0.33", max_num_seqs=4096,
                                                                           max_model_len=8192))
    assert e.value.field == "max_num_batched_tokens"
    assert "2,048 (vLLM 0.33's default on A100-80GB) is below --max-num-seqs 4,096" in str(e.value)
    assert "must be greater than or equal to max_num_seqs (4096)" in str(e.value)
    assert "add --max-num-batched-tokens 4096 or more" in str(e.value)
