"""The Import page's command parsers read every ``vllm serve`` flag with its arity, and say what each does to memory.

The arities come from vLLM's own parser (kvplan.vllm_cli_flags: 0.10.2, 0.11.0, 0.33.0 wheels): a switch never takes
the next word (``--disable-log-requests`` was refused with "needs a value"), a value flag always takes one
(``--flag v`` and ``--flag=v``), a list flag takes the words up to the next flag. Every real flag is planned, "no
effect on memory" or "read, not planned: why"; only flags no release lists are "unknown".
"""

import pytest

from kvplan.engines import VLLM_CHANGES, EngineConfig
from kvplan.errors import PlanInputError
from kvplan.vllm_args import parse_vllm_command
from kvplan.vllm_cli_flags import VLLM_SERVE_FLAGS
from kvplan.web.commands import parse_command

# A value each planned value flag accepts (the rest take any word): kvplan validates these.
SAMPLE = {"--kv-cache-dtype": "auto", "--dtype": "auto", "--quantization": "fp8", "--mm-encoder-tp-mode": "weights",
          "--gpu-memory-utilization": "0.9", "--block-size": "16", "--speculative-config": "{}",
          "--limit-mm-per-prompt": "{}", "--mm-processor-kwargs": "{}", "--model": "m/x", "-q": "fp8", "-sc": "{}", "--max-model-len": "4096"}


def _accounted(a, flag: str) -> bool:
    """The flag shows in ignored or notes (or was planned: then it is in neither list)."""
    return any(s.split(" ")[0].split("=")[0] == flag for s in (*a.ignored, *a.notes))


@pytest.mark.parametrize("flag", sorted(f for f, (kind, _, _) in VLLM_SERVE_FLAGS.items() if kind == "S"))
def test_every_switch_takes_no_value(flag):
    # the word after a switch is the next flag's value's business: -tp 2 must still read as TP 2
    a = parse_vllm_command(f"vllm serve m/x {flag} -tp 2")
    assert (a.model, a.tensor_parallel_size, a.unknown) == ("m/x", 2, ())
    # a switch before the model: the model is not eaten as its value
    b = parse_vllm_command(f"vllm serve {flag} m/x")
    assert b.model == "m/x" and b.unknown == ()


@pytest.mark.parametrize("flag", sorted(f for f, (kind, _, _) in VLLM_SERVE_FLAGS.items() if kind == "V"))
def test_every_value_flag_takes_its_value_both_spellings(flag):
    value = SAMPLE.get(flag, "16")
    for line in (f"vllm serve m/x {flag} {value} -tp 2", f"vllm serve m/x {flag}={value} -tp 2"):
        a = parse_vllm_command(line)
        assert (a.tensor_parallel_size, a.unknown) == (2, ())  # the later -tp 2 wins, as in argparse
    with pytest.raises(PlanInputError) as exc:
        parse_vllm_command(f"vllm serve m/x {flag}")
    assert exc.value.field.startswith("-") and "needs a value" in str(exc.value)


@pytest.mark.parametrize("flag", sorted(f for f, (kind, _, _) in VLLM_SERVE_FLAGS.items() if kind in "MO"))
def test_list_and_optional_flags(flag):
    kind = VLLM_SERVE_FLAGS[flag][0]
    a = parse_vllm_command(f"vllm serve m/x {flag} a b -tp 2" if kind == "M" else f"vllm serve m/x {flag} a -tp 2")
    assert (a.tensor_parallel_size, a.unknown) == (2, ())
    assert _accounted(a, flag)
    if kind == "O":  # nargs "?": the value may be left out
        assert parse_vllm_command(f"vllm serve m/x {flag} -tp 2").tensor_parallel_size == 2
    else:
        with pytest.raises(PlanInputError, match="one or more values"):
            parse_vllm_command(f"vllm serve m/x {flag} -tp 2")


def test_no_real_flag_is_unknown():
    # every long flag of the three releases lands in the plan, in ignored or in notes: never in unknown
    for flag, (kind, _, _) in VLLM_SERVE_FLAGS.items():
        line = f"vllm serve m/x {flag}" + ("" if kind in "SO" else f" {SAMPLE.get(flag, '16')}")
        a = parse_vllm_command(line)
        assert a.unknown == (), flag


def test_the_table_is_vllms():
    # spot checks against the wheels' parsers (0.11.0 AsyncEngineArgs: --disable-log-requests BooleanOptionalAction;
    # 0.33.0 EnableDisableAction pairs --enable-log-requests / --disable-log-requests; --served-model-name nargs "+")
    assert VLLM_SERVE_FLAGS["--disable-log-requests"] == ("S", "options", "10,11,33")
    assert VLLM_SERVE_FLAGS["--no-async-scheduling"][0] == "S" and VLLM_SERVE_FLAGS["--enable-dbo"][0] == "S"
    assert VLLM_SERVE_FLAGS["--served-model-name"][0] == "M" and VLLM_SERVE_FLAGS["--hf-token"][0] == "O"
    assert VLLM_SERVE_FLAGS["--mamba-ssm-cache-dtype"] == ("V", "CacheConfig", "10,11,33")
    assert VLLM_SERVE_FLAGS["--max-seq-len-to-capture"][2] == "10"  # gone from 0.11
    assert len(VLLM_SERVE_FLAGS) == 521


def test_disable_log_requests_is_a_switch():
    # the audit's line: refused with "--disable-log-requests: needs a value" before
    a = parse_vllm_command("vllm serve meta-llama/Llama-3.1-8B-Instruct --disable-log-requests")
    assert a.model == "meta-llama/Llama-3.1-8B-Instruct" and a.ignored == ("--disable-log-requests",)
    assert parse_vllm_command("vllm serve m/x --disable-log-requests --port 8000").ignored == \
        ("--disable-log-requests", "--port 8000")


@pytest.mark.parametrize("line, status", [
    ("--mamba-ssm-cache-dtype float32", "--mamba-ssm-cache-dtype float32: read, not planned: the SSM state dtype"),
    ("--mamba-cache-dtype=float32", "--mamba-cache-dtype=float32: read, not planned: the recurrent"),
    ("--hf-overrides '{\"architectures\": [\"X\"]}'",
     '--hf-overrides {"architectures": ["X"]}: not planned: changes the model config'),
    ("--async-scheduling", "--async-scheduling: read, not planned: the flag itself changes nothing kvplan plans: from 0.26 async scheduling is vLLM's default"),
    ("--no-async-scheduling", "--no-async-scheduling: read, not planned: a sliding window then holds 1 batch"),
    ("--enable-dbo", "--enable-dbo: read, not planned: dual-batch overlap"),
    ("--ubatch-size 2", "--ubatch-size 2: read, not planned: micro-batches"),
    ("--disable-sliding-window", "--disable-sliding-window: read, not planned: sliding-window layers then cache"),
    ("-O3", "-O3: not modeled (the optimization level picks the CUDA-graph mode"),
    ("--compilation-config.cudagraph_mode piecewise", "--compilation-config cudagraph_mode PIECEWISE: planned by the core"),
    ("--compilation-config 3", "--compilation-config 3: not modeled"),
    ("--max-seq-len-to-capture 8192", "--max-seq-len-to-capture 8192: not modeled"),
    ("--moe-backend triton", "--moe-backend triton: planned by the core for some experts (EngineConfig.moe_backend: "
                             "gpt-oss's MXFP4 experts on Triton (Hopper, SM 10.x)"),
    ("--moe-backend deep_gemm", "--moe-backend deep_gemm: read, not planned: a vLLM KernelConfig setting"),
])
def test_memory_flags_are_named_with_their_status(line, status):
    a = parse_vllm_command(f"vllm serve m/x {line} -tp 2")
    assert a.tensor_parallel_size == 2 and a.unknown == () and a.ignored == ()
    assert len(a.notes) == 1 and a.notes[0].startswith(status)


@pytest.mark.parametrize("line", [
    "--structured-outputs-config '{\"backend\": \"xgrammar\"}'", "--mamba-cache-dtype auto", "--disable-dbo",
    "--no-enable-lora", "--enable-hybrid-kv-cache-manager", "--guided-decoding-disable-fallback",
    "--guided-decoding-disable-fallback true", "--reasoning-parser deepseek_r1", "--load-format dummy",
    "--served-model-name a b", "--kv-events-config '{}'", "-dpl 2", "--headless",
])
def test_request_path_and_default_restoring_flags_have_no_effect_on_memory(line):
    a = parse_vllm_command(f"vllm serve m/x {line} -tp 2")
    assert (a.tensor_parallel_size, a.unknown, a.notes) == (2, (), ())
    assert len(a.ignored) == 1


def test_async_scheduling_note_follows_kvplans_release_split():
    # the note says 0.26: that is where kvplan's profiles start planning 2 sliding-window batches in flight
    assert VLLM_CHANGES["swa_in_flight_batches"][0] == (0, 26, 0)
    assert "max_concurrent_batches" in VLLM_CHANGES["swa_in_flight_batches"][1]
    assert "async_scheduling" not in EngineConfig.model_fields  # hence "read, not planned"


@pytest.mark.parametrize("line, field, value", [
    ("--disable-prefix-caching", "enable_prefix_caching", False),
    ("--no-enable-prefix-caching", "enable_prefix_caching", False),
    ("--enable-prefix-caching", "enable_prefix_caching", True),
    ("-ep", "enable_expert_parallel", True),
    ("--disable-expert-parallel", "enable_expert_parallel", False),
    ("--no-enforce-eager", "enforce_eager", False),
    ("--enforce-eager", "enforce_eager", True),
    ("--no-disable-custom-all-reduce", "disable_custom_all_reduce", False),
    ("--disable-custom-all-reduce", "disable_custom_all_reduce", True),
])
def test_every_spelling_of_a_planned_switch(line, field, value):
    a = parse_vllm_command(f"vllm serve m/x --enable-expert-parallel --enforce-eager --disable-custom-all-reduce "
                           f"--enable-prefix-caching {line}")
    assert getattr(a, field) is value and a.unknown == () and a.ignored == ()


# Real-world lines. Provenance: vllm-project/recipes NVIDIA/Nemotron-3-Nano-30B-A3B.md @1b0242913d20 (launch_server.sh,
# $DTYPE / $KV_CACHE_DTYPE filled in), Qwen/Qwen3-Next.md @0645a1a776a9 (MTP), ovg-project/kvcached
# benchmarks/bench_latency_benefit/start_vllm_server.sh (--port="$PORT" filled in), a ROCm benchmark script found with
# the code search (its $MODEL / $TP / $MAX_MODEL_LEN filled in), and the lines found with find_string named below.
RECIPES = [
    (("vllm serve nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8 --trust-remote-code --async-scheduling "
     "--kv-cache-dtype fp8 --tensor-parallel-size 1 --mamba-ssm-cache-dtype float32"),
     {"model": "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8", "kv_cache_dtype": "fp8", "tensor_parallel_size": 1},
     ["--trust-remote-code"], ["--async-scheduling", "--mamba-ssm-cache-dtype float32"]),
    (("vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --tokenizer-mode auto --gpu-memory-utilization 0.8 "
     "--speculative-config '{\"method\": \"qwen3_next_mtp\", \"num_speculative_tokens\": 2}' "
     "--tensor-parallel-size 4 --no-enable-chunked-prefill"),
     {"model": "Qwen/Qwen3-Next-80B-A3B-Instruct", "gpu_memory_utilization": 0.8, "tensor_parallel_size": 4,
      "speculative_method": "mtp", "num_speculative_tokens": 2},
     ["--tokenizer-mode auto", "--no-enable-chunked-prefill"], []),
    (("export VLLM_USE_V1=1\nvllm serve meta-llama/Llama-3.1-8B-Instruct --disable-log-requests "
     "--no-enable-prefix-caching --gpu-memory-utilization 0.5 --port=8000 --tensor-parallel-size=1 "
     "--max-num-batched-tokens 16384"),
     {"model": "meta-llama/Llama-3.1-8B-Instruct", "enable_prefix_caching": False, "max_num_batched_tokens": 16384},
     ["--disable-log-requests", "--port=8000"], []),
    (("vllm serve amd/Llama-3.1-70B-Instruct-FP8-KV --port 8000 --tensor-parallel-size=8 "
     "--gpu-memory-utilization 0.95 --max-model-len 8192 --max-seq-len-to-capture 8192 "
     "--compilation-config '{\"cudagraph_mode\": \"FULL_AND_PIECEWISE\"}' --block-size=64 "
     "--no-enable-prefix-caching --disable-log-requests --async-scheduling"),
     {"tensor_parallel_size": 8, "max_model_len": 8192, "block_size": 64, "enable_prefix_caching": False},
     ["--port 8000", "--disable-log-requests"],
     ["--max-seq-len-to-capture 8192", "--compilation-config cudagraph_mode FULL_AND_PIECEWISE", "--async-scheduling"]),
    # a gpt-oss-120b deployment note (find_string id 68373718029), after the vllm/vllm-openai image
    (("vllm serve openai/gpt-oss-120b --host 0.0.0.0 --port 8000 --served-model-name openai/gpt-oss-120b "
     "--tensor-parallel-size 1 --max-model-len 131072 --gpu-memory-utilization 0.85 --max-num-seqs 4 "
     "--max-num-batched-tokens 8192 --kv-cache-dtype fp8 --max-cudagraph-capture-size 2048 --stream-interval 20 "
     "--no-enable-prefix-caching --tool-call-parser openai --enable-auto-tool-choice --api-key secret"),
     {"max_model_len": 131072, "max_num_seqs": 4, "max_num_batched_tokens": 8192, "kv_cache_dtype": "fp8"},
     ["--host 0.0.0.0", "--port 8000", "--served-model-name openai/gpt-oss-120b", "--stream-interval 20",
      "--tool-call-parser openai", "--enable-auto-tool-choice", "--api-key secret"],
     ["--max-cudagraph-capture-size 2048"]),
    # (the DeepSeek NVFP4 benchmark script, find_string id 16010886653: its cudagraph_mode FULL_DECODE_ONLY is refused,
    # tests/test_polish_dec01.py)
    # a DeepSeek-V4 script's dotted JSON key (find_string: --attention_config.use_fp4_indexer_cache True)
    (("vllm serve deepseek-ai/DeepSeek-V4 --block-size 256 --attention_config.use_fp4_indexer_cache True "
     "--tokenizer-mode deepseek_v4 --reasoning-parser deepseek_v4"),
     {"block_size": 256}, ["--tokenizer-mode deepseek_v4", "--reasoning-parser deepseek_v4"],
     ["--attention_config.use_fp4_indexer_cache True"]),
]


@pytest.mark.parametrize("line, fields, ignored, noted", RECIPES)
def test_real_world_commands(line, fields, ignored, noted):
    cmd = parse_command(line)
    a = cmd.args
    assert {k: getattr(a, k) for k in fields} == fields
    assert a.unknown == ()
    assert list(a.ignored) == ignored
    assert [n.split(":")[0].split(" {")[0] for n in a.notes if not n.startswith("--max-model-len auto")] == noted
    EngineConfig(**a.engine_fields())


@pytest.mark.parametrize("line, field, allowed", [
    ("--disable-log-requests=true", "--disable-log-requests", "takes no value"),
    ("--enforce-eager=1", "--enforce-eager", "takes no value"),
    ("--hf-overrides", "--hf-overrides", "needs a value"),
    ("--mamba-ssm-cache-dtype", "--mamba-ssm-cache-dtype", "VALUE or --mamba-ssm-cache-dtype=VALUE"),
    ("--served-model-name --port 1", "--served-model-name", "one or more values"),
])
def test_refusals_name_the_flag_and_what_is_allowed(line, field, allowed):
    with pytest.raises(PlanInputError) as exc:
        parse_vllm_command(f"vllm serve m/x {line}")
    assert exc.value.field == field and allowed in str(exc.value)


def test_unknown_flags_stay_unknown():
    a = parse_vllm_command("vllm serve m/x --frobnicate 7 --zzz --enable-frob")
    assert a.unknown == ("--frobnicate 7", "--zzz", "--enable-frob")


# SGLang (python/sglang/srt/server_args.py): --chunked-prefill-size is planned (EngineConfig.max_num_batched_tokens ->
# kvplan.sglang.budget chunked_prefill_size); --cuda-graph-max-bs / --cuda-graph-bs are read, not planned (no field).
def test_sglang_chunked_prefill_is_planned_and_cuda_graph_batch_is_named():
    cmd = parse_command("python -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 2 --chunked-prefill-size 4096 "
                        "--cuda-graph-max-bs 256 --disable-radix-cache --cuda-graph-bs 1 2 4 8 --port 30000")
    a = cmd.args
    assert (a.model, a.tensor_parallel_size, a.max_num_batched_tokens, a.unknown) == ("Qwen/Qwen3-8B", 2, 4096, ())
    assert EngineConfig(**a.engine_fields()).max_num_batched_tokens == 4096
    # --disable-radix-cache matters for a hybrid's MambaPool (one state slot a request): carried, not "no effect"
    assert a.ignored == ("--port 30000",) and cmd.disable_radix_cache
    assert cmd.engine_fields() == {"enable_prefix_caching": False}
    assert [n.split(": ")[0] for n in a.notes] == ["--cuda-graph-max-bs 256", "--cuda-graph-bs 1 2 4 8"]
    assert all(": read, not planned: SGLang's CUDA-graph reserve" in n for n in a.notes)
    assert "cuda_graph_max_bs" not in EngineConfig.model_fields
    assert parse_command("python -m sglang.launch_server --model-path m/x --cuda-graph-max-bs=8").args.notes[0] \
        .startswith("--cuda-graph-max-bs=8: read, not planned")


@pytest.mark.parametrize("line, allowed", [
    ("--cuda-graph-max-bs", "needs a whole number"), ("--cuda-graph-max-bs lots", "not a whole number"),
    ("--cuda-graph-max-bs 0", "must be from 1"), ("--cuda-graph-bs --port 1", "one or more whole numbers"),
])
def test_sglang_refusals_name_the_flag(line, allowed):
    with pytest.raises(PlanInputError) as exc:
        parse_command(f"python -m sglang.launch_server --model-path m/x {line}")
    assert exc.value.field == line.split()[0] and allowed in str(exc.value)


def test_import_page_lists_each_flag_with_its_status():
    from tests.app_util import plain
    from tests.test_app_import import pasted

    at = pasted("vllm serve meta-llama/Llama-3.1-8B-Instruct --disable-log-requests --async-scheduling "
                "--hf-overrides '{\"rope_theta\": 1}' --frobnicate 3")
    assert not at.exception and not at.error
    info = plain(" ".join(i.value for i in at.info))
    assert "no effect on memory: --disable-log-requests" in info
    assert "--async-scheduling: read, not planned: the flag itself changes nothing kvplan plans: from 0.26 async scheduling is vLLM's default" in info
    # --hf-overrides rewrites the config the plan reads: a warning (the plan leaves it out), not an info
    warned = plain(" ".join(w.value for w in at.warning))
    assert '--hf-overrides {"rope_theta": 1}: not planned: changes the model config' in warned
    assert "--hf-overrides" not in info
    assert "unknown flag (ignored): --frobnicate 3" in warned


def test_every_mtp_method_name_vllm_maps_to_its_mtp_drafter_plans_mtp():
    # vllm/config/speculative.py MTPModelTypes (0.33.0): e.g. the Qwen3-Next recipe's "qwen3_next_mtp" and
    # "qwen3_5_mtp" are MTP like "deepseek_mtp"; eagle without its draft head is refused (tests/test_spec_eagle.py)
    from kvplan.errors import PlanInputError
    from kvplan.vllm_args import parse_vllm_command

    with pytest.raises(PlanInputError, match='needs "model"'):
        parse_vllm_command("vllm serve m --speculative-config '{\"method\": \"eagle\", \"num_speculative_tokens\": 2}'")
    for method, planned in (("qwen3_next_mtp", "mtp"), ("qwen3_5_mtp", "mtp"), ("nemotron_h_mtp", "mtp"),
                            ("deepseek_mtp", "mtp")):
        cmd = ("vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --speculative-config "
               f"'{{\"method\": \"{method}\", \"num_speculative_tokens\": 2}}'")
        assert parse_vllm_command(cmd).speculative_method == planned, method
