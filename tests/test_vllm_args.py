"""kvplan.vllm_args: vLLM command lines -> kvplan settings; unknown flags listed; bad values named."""

import pytest

from kvplan.engines import EngineConfig
from kvplan.errors import PlanInputError
from kvplan.parallel import Layout
from kvplan.vllm_args import human_readable_int, parse_vllm_command, preset_for_model


def test_a_full_command():
    a = parse_vllm_command(
        "CUDA_VISIBLE_DEVICES=0,1,2,3 vllm serve meta-llama/Llama-3.1-70B-Instruct \\\n"
        "  --tensor-parallel-size 4 --max-model-len=32768 --gpu_memory_utilization 0.9 \\\n"
        "  --kv-cache-dtype fp8_e4m3 --block-size 32 --max-num-seqs 128 --max-num-batched-tokens 8k \\\n"
        "  --kv-cache-memory-bytes 20G --enforce-eager --enable-expert-parallel -pp 2 -dp 2")
    assert a.model == "meta-llama/Llama-3.1-70B-Instruct"
    assert (a.tensor_parallel_size, a.pipeline_parallel_size, a.data_parallel_size) == (4, 2, 2)
    assert (a.max_model_len, a.gpu_memory_utilization, a.kv_cache_dtype, a.block_size) == (32768, 0.9, "fp8", 32)
    assert (a.max_num_seqs, a.max_num_batched_tokens, a.kv_cache_memory_bytes) == (128, 8000, 20 * 2**30)
    assert a.enforce_eager and a.enable_expert_parallel
    assert a.unknown == () and a.ignored == ()
    EngineConfig(**a.engine_fields())  # the fields are EngineConfig's and Layout's
    Layout(*a.parallel_fields().values())


@pytest.mark.parametrize("cmd", [
    "python -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-8B -tp 2",
    "docker run --gpus all -p 8000:8000 vllm/vllm-openai:v0.33.0 --model Qwen/Qwen3-8B -tp 2",
    "--model Qwen/Qwen3-8B --tensor-parallel-size=2",
    "uv run vllm serve Qwen/Qwen3-8B -tp 2  # comment",
])
def test_launchers_and_flag_only_input(cmd):
    a = parse_vllm_command(cmd)
    assert (a.model, a.tensor_parallel_size) == ("Qwen/Qwen3-8B", 2)


def test_unknown_ignored_and_not_modeled_flags_are_listed_not_fatal():
    a = parse_vllm_command("vllm serve m/x --port 8000 --trust-remote-code --frobnicate 7 --zzz "
                           "--cpu-offload-gb 10 --speculative-config '{\"n\": 3}'")
    assert a.unknown == ("--frobnicate 7", "--zzz")
    assert a.ignored == ("--port 8000", "--trust-remote-code")
    assert any(n.startswith("--cpu-offload-gb 10: not modeled") for n in a.notes)
    assert any(n.startswith('--speculative-config {"n": 3}') for n in a.notes)


def test_dtype_and_quantization():
    a = parse_vllm_command("vllm serve m/x --dtype float16 --quantization fp8")
    assert (a.weight_format, a.kv_cache_dtype) == ("fp8", "fp16")
    b = parse_vllm_command("vllm serve m/x --dtype float32 --kv-cache-dtype fp8")
    assert (b.weight_format, b.kv_cache_dtype) == ("fp32", "fp8")
    c = parse_vllm_command("vllm serve m/x -q awq")
    assert c.weight_format is None and "checkpoint" in c.notes[0]


def test_auto_max_model_len():
    a = parse_vllm_command("vllm serve m/x --max-model-len -1")
    assert a.max_model_len is None and "auto" in a.notes[0]


@pytest.mark.parametrize("text, value", [("8192", 8192), ("32k", 32000), ("32K", 32768), ("25.6k", 25600),
                                         ("1m", 1_000_000), ("2G", 2 * 2**30)])
def test_human_readable_ints(text, value):
    assert human_readable_int("--x", text) == value


@pytest.mark.parametrize("cmd, flag", [
    ("vllm serve m/x --gpu-memory-utilization 1.2", "--gpu-memory-utilization"),
    ("vllm serve m/x --gpu-memory-utilization lots", "--gpu-memory-utilization"),
    ("vllm serve m/x -tp 0", "--tensor-parallel-size"),
    ("vllm serve m/x --max-model-len 1.5K", "--max-model-len"),
    ("vllm serve m/x --max-model-len big", "--max-model-len"),
    ("vllm serve m/x --kv-cache-dtype int3", "--kv-cache-dtype"),
    ("vllm serve m/x --block-size 0", "--block-size"),
    ("vllm serve m/x --dtype int8", "--dtype"),
    ("vllm serve m/x --max-num-seqs", "--max-num-seqs"),
    ("vllm serve 'm/x", "command"),
    ("x" * 20_001, "command"),
])
def test_bad_values_raise_naming_the_flag(cmd, flag):
    with pytest.raises(PlanInputError) as info:
        parse_vllm_command(cmd)
    assert info.value.field == flag


@pytest.mark.parametrize("model, preset", [
    ("meta-llama/Llama-3.1-70B-Instruct", "llama-3.1-70b"), ("Qwen/Qwen3-8B", "qwen3-8b"),
    ("meta-llama/Llama-2-7b-chat-hf", "llama-2-7b"), ("llama-3.1-8b", "llama-3.1-8b"), ("acme/unknown", None),
    # a same-shape sibling the manifest names (the preset is the -Thinking config; -Instruct's has the same fields)
    ("Qwen/Qwen3-Next-80B-A3B-Instruct", "qwen3-next-80b-a3b"),
    # a name alone is not enough: Kimi-K2-Thinking ships INT4 experts where the kimi-k2-instruct preset is FP8
    ("moonshotai/Kimi-K2-Thinking", None),
    (None, None)])
def test_preset_for_model(model, preset):
    assert preset_for_model(model) == preset


def test_a_same_shape_sibling_loads_the_preset_by_its_repo_id():
    from kvplan.presets import load_preset

    # fields compared (==  would compare the specs' private memos too, which other tests may have filled)
    assert load_preset("Qwen/Qwen3-Next-80B-A3B-Instruct").model_dump() == load_preset("qwen3-next-80b-a3b").model_dump()
