"""vLLM starts that fail after the KV cache is sized: the sampler warm-up (issue 11, residual item 1).

vllm 0.10 / 0.11 ``Worker.compile_or_warm_up_model`` (0.11.0 wheel, vllm/v1/worker/gpu_worker.py) runs, after
``initialize_from_config`` allocated the KV cache: kernel warm-up, ``capture_model()`` (CUDA graphs, not in the
budget before v0.21), then ``_dummy_run(min(max_num_seqs, max_num_batched_tokens))`` and ``_dummy_sampler_run``.
The KV cache took requested - weights - activation peak - non-torch, so what is free then is
    (total - requested) - CUDA context - CUDA graphs + activation peak,
and the warm-up needs the sampler's peak again (rows x vocab x 4 B x copies). vLLM's words when it does not fit
(gpu_model_runner.py ``_dummy_sampler_run``): "RuntimeError: CUDA out of memory occurred when warming up sampler
with N dummy requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the
engine."
"""

import pytest

from kvplan import load_preset
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.units import GiB
from tests.test_engine_logs import close_gib

H100 = get_gpu("H100-SXM")
GPT_OSS_120B_W = round(65.9651 * GiB)  # "Model loading took 65.9651 GiB" (vLLM #23278, one H100)
WARMUP = "RuntimeError: CUDA out of memory occurred when warming up sampler with 1024 dummy requests."


def _terms(p):
    return {t.name.split(" (")[0]: t for t in p.ranks[-1].terms}


def test_warmup_runs_out_of_the_margin_at_util_0_99_and_the_fix_is_checked():
    # gpt-oss-120b, one H100 (79.19 GiB), vLLM 0.11, util 0.99, 8192 tokens / 1024 seqs, max_model_len 8192:
    # the KV check passes (4.93 GiB pool), then the warm-up needs 1024 x 201,088 x 4 x 9.55 + 1024 x 2880 x 2
    # = 7.33 GiB with 0.79 (margin) - 0.51 (context) - 1.09 (83 + 83 graphs: 128 MiB + 164 x 6 MiB) + 7.37 (the
    # profile's peak, back free) = 6.57 GiB free.
    engine = EngineConfig(vllm_version="0.11", gpu_memory_utilization=0.99, max_model_len=8192,
                          weights_bytes=GPT_OSS_120B_W)
    p = plan(load_preset("gpt-oss-120b"), H100, engine)
    assert close_gib(p.ranks[0].kv_pool_bytes, 4.93)
    terms = _terms(p)
    assert terms["CUDA graphs"].bytes == (128 + 164 * 6) * 2**20 and not terms["CUDA graphs"].applied
    assert p.start_error.startswith(WARMUP) and "lowering `max_num_seqs` or `gpu_memory_utilization`" in p.start_error
    assert "7.33 GiB needed" in p.start_error and "6.57 GiB free" in p.start_error
    assert not p.starts and not p.fits and p.verdict.startswith("Does not start: the KV cache is sized")
    # the fix vLLM names, planned and checked: a lower utilization (0.95 leaves 3.96 GiB of margin)
    assert p.suggestions == ["--gpu-memory-utilization 0.95: 3 x 8,192 tokens fit"]
    fixed = plan(load_preset("gpt-oss-120b"), H100, engine.model_copy(update={"gpu_memory_utilization": 0.95}))
    assert fixed.starts and fixed.fits and fixed.start_error is None
    # 0.98 still starts: 1.58 - 0.51 - 1.09 + 7.37 = 7.35 GiB free >= 7.33
    assert plan(load_preset("gpt-oss-120b"), H100, engine.model_copy(update={"gpu_memory_utilization": 0.98})).starts


def test_fewer_sampler_rows_shrink_what_the_warmup_needs():
    # at util 0.985 (1.19 GiB margin): 1024 rows fail (1.19 - 0.51 - 1.09 + 7.37 = 6.96 < 7.33 GiB) ...
    engine = EngineConfig(vllm_version="0.11", gpu_memory_utilization=0.985, max_model_len=8192,
                          weights_bytes=GPT_OSS_120B_W)
    assert plan(load_preset("gpt-oss-120b"), H100, engine).start_error.startswith(WARMUP)
    # ... and so do 256: 256 x 201,088 x 4 x 9.55 = 1.83 GiB needed; 83 PIECEWISE + 35 FULL graphs (0.81 GiB);
    # 1.19 - 0.51 - 0.81 + 1.87 (peak) = 1.74 GiB free: below ~1.3 GiB of margin the rows cannot help
    few = plan(load_preset("gpt-oss-120b"), H100, engine.model_copy(update={"max_num_seqs": 256}))
    assert "warming up sampler with 256 dummy requests" in few.start_error
    assert _terms(few)["CUDA graphs"].bytes == (128 + (82 + 34) * 6) * 2**20
    # at 0.98 with 256 rows: 1.58 - 0.51 - 0.81 + 1.87 = 2.13 GiB free >= 1.83
    assert plan(load_preset("gpt-oss-120b"), H100, engine.model_copy(
        update={"max_num_seqs": 256, "gpu_memory_utilization": 0.98})).starts


def test_graphs_inside_the_budget_from_v0_21_leave_the_margin_whole():
    # 0.21+ subtracts the CUDA-graph estimate before sizing the KV cache: the same launch at 0.99 starts
    # (0.79 - 0.51 + 7.37 (peak; 3.72 copies in 0.17+: 2.87 GiB) >= the sampler's need)
    engine = EngineConfig(vllm_version="0.21", gpu_memory_utilization=0.99, max_model_len=8192,
                          weights_bytes=GPT_OSS_120B_W)
    p = plan(load_preset("gpt-oss-120b"), H100, engine)
    assert _terms(p)["CUDA graphs"].applied and p.starts and p.start_error is None


def test_kv_check_still_comes_first():
    # #27508's second log (0.95, 1024 batched tokens, 131,072 max len): the one-request check refuses first
    engine = EngineConfig(vllm_version="0.11", gpu_memory_utilization=0.95, max_num_batched_tokens=1024,
                          weights_bytes=GPT_OSS_120B_W)
    p = plan(load_preset("gpt-oss-120b"), H100, engine)
    assert p.start_error.startswith("ValueError: To serve at least one request")


@pytest.mark.parametrize("name,engine,layout", [
    # logs that started (tests/test_engine_logs.py, tests/test_vllm_layouts.py): the warm-up check stays quiet
    ("qwen2.5-7b", EngineConfig(vllm_version="0.10", gpu_memory_utilization=0.5, max_model_len=16384,
                                sampler="flashinfer"), Layout()),
    ("qwen2.5-7b", EngineConfig(vllm_version="0.10", gpu_memory_utilization=0.5, max_model_len=16384,
                                disable_custom_all_reduce=True), Layout(tp=2)),
    ("llama-3.1-8b", EngineConfig(vllm_version="0.19", gpu_memory_utilization=0.95, max_model_len=16384), Layout()),
    ("gpt-oss-20b", EngineConfig(vllm_version="0.19", max_model_len=8192), Layout(tp=2)),
    ("qwen3-14b", EngineConfig(vllm_version="0.15", max_model_len=32768), Layout()),  # llm-d-planner v0.15
])
def test_started_logs_do_not_trip_the_warmup_check(name, engine, layout):
    gpu = get_gpu("A100-80GB") if engine.vllm_version == "0.10" else H100
    p = plan(load_preset(name), gpu, engine, layout)
    assert p.starts and p.start_error is None


@pytest.mark.xfail(strict=True, reason="vLLM #27508 (0.11, one H100, util 0.95, 1024 batched tokens): the OOM "
                   "message shows 9.80 GiB of non-torch memory at the warm-up (78.96 in use - 68.83 allocated - "
                   "0.33 reserved); kvplan's budget leaves 9.73 GiB free there (3.96 margin - 0.51 context - "
                   "1.09 graphs + 7.37 peak) and says it starts")
def test_issue_27508_warmup_oom_at_util_0_95():
    # vllm-project/vllm#27508, 3rd post (EngineCore_DP0 pid=8884, 10-31 15:15:48): in sampler.py forward,
    # `logits = logits.to(torch.float32)`: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 786.00 MiB.
    # GPU 0 has a total capacity of 79.11 GiB of which 140.75 MiB is free. Process 3270336 has 78.96 GiB memory in
    # use. Of the allocated memory 68.83 GiB is allocated by PyTorch, with 660.00 MiB allocated in private pools
    # (e.g., CUDA Graphs), and 331.08 MiB is reserved by PyTorch but unallocated." (786 MiB = 1024 x 201,088 x 4 B.)
    # 68.83 = 65.97 weights + 1.71 KV (the 2nd post's pool at 0.95) + 0.66 graph pools + 0.39 bf16 logits + ...:
    # the post is the 0.95 / 1024-token launch at a max_model_len that passed the KV check (not given; 32,768 here).
    engine = EngineConfig(vllm_version="0.11", gpu_memory_utilization=0.95, max_num_batched_tokens=1024,
                          max_model_len=32768, weights_bytes=GPT_OSS_120B_W)
    p = plan(load_preset("gpt-oss-120b"), H100, engine)
    assert close_gib(p.ranks[0].kv_pool_bytes, 1.71)  # 1.80: passes
    assert p.start_error is not None and p.start_error.startswith(WARMUP)  # fails: kvplan says it starts


@pytest.mark.xfail(strict=True, reason="llm-d/llm-d #787 (vLLM 0.11.0, Qwen3-32B TP2, util 0.95): kvplan leaves "
                   "4.2 GiB free at the warm-up for a 1.7 GiB FlashInfer-sampler need; the logged start ran out. "
                   "Post-profile non-torch growth at TP 2 (custom all-reduce / NCCL during graph capture) is not "
                   "modeled")
def test_llm_d_787_qwen3_32b_tp2_warmup_oom():
    # llm-d/llm-d#787 (2026-02-17, image ghcr.io/llm-d/llm-d-cuda-dev, vLLM v0.11.0, Qwen/Qwen3-32B,
    # tensor_parallel_size=2, --gpu-memory-utilization=0.95): "CUDA graphs capture completes (67/67 mixed
    # prefill-decode + 67/67 decode)", "KV cache allocated: 41.87 GiB per worker", then "RuntimeError: CUDA out of
    # memory occurred when warming up sampler with 1024 dummy requests." The image ships FlashInfer, so 0.11 takes
    # its sampler ("Using FlashInfer for top-p & top-k sampling" whenever it is installed, topk_topp_sampler.py).
    engine = EngineConfig(vllm_version="0.11", gpu_memory_utilization=0.95, sampler="flashinfer", max_model_len=32768)
    p = plan(load_preset("qwen3-32b"), H100, engine, Layout(tp=2))
    assert abs(p.ranks[0].kv_pool_bytes / GiB - 41.87) < 0.7  # 42.47 (+0.60): the pool is near the log
    assert p.start_error is not None and "warming up sampler" in p.start_error  # fails: kvplan says it starts


def test_a_pool_under_one_block_fails_the_length_check_not_the_empty_pool_check():
    # vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory: "No available memory" only for available <= 0;
    # --kv-cache-memory 1 (1 byte > 0) fails the max_model_len check: Qwen3-8B at 8,192 needs 8,192 / 16 = 512 blocks
    # of 16 x 147,456 B (36 layers x 8 KV heads x 128 x 2 x 2 B = 147,456 B a token) = 1,207,959,552 B = 1.12 GiB
    p = plan(load_preset("qwen3-8b"), H100, EngineConfig(kv_cache_memory_bytes=1, max_model_len=8192))
    assert p.start_error.startswith("ValueError: To serve at least one request with the models's max seq len (8192), "
                                    "(1.12 GiB KV cache is needed")
