"""Public vLLM start-up logs reproduced from their launch inputs (issue 11, the 2026-12-02 round).

Tolerances as tests/test_engine_logs.py: memory within max(1 %, 0.25 GiB), tokens and concurrency within 1 %. None of
these sources is pinned elsewhere in tests/ (index ids and figures grepped 2026-12-02). The code corpus hides the
repository of these files, so the search-index file id (read_file) is the citation, as in tests/test_engine_logs_dec.py.

Sources (read 2026-12-02):
- ASYNC-L40S: a script + pasted run "test_engine_direct.py" (index file id 67144197265; log dated 09-03, "Initializing a
  V1 LLM engine (v0.22.0)"): ``AsyncEngineArgs(model="/model/Qwen2.5-7B-Instruct", trust_remote_code=True,
  gpu_memory_utilization=0.95, max_model_len=4096, enable_log_requests=True)`` and
  ``AsyncLLMEngine.from_engine_args(engine_args)`` (UsageContext.ENGINE_CONTEXT); bf16, TP 1, prefix caching on,
  FlashAttention 2. Logged: "Chunked prefill is enabled with max_num_batched_tokens=2048", cudagraph_capture_sizes
  [1, 2, 4, 8, ..., 256] (= 2 x 128 sequences), "Model loading took 14.29 GiB memory", "Profiling CUDA graph memory:
  PIECEWISE=35 (largest=256), FULL=19 (largest=128)", "Estimated CUDA graph memory: 0.37 GiB total", "Available KV
  cache memory: 26.32 GiB", "GPU KV cache size: 492,912 tokens", "Maximum concurrency for 4,096 tokens per request:
  120.34x". The card is not named; FA2 (no FA3: not Hopper) and the 0.95 budget fit a 48 GB Ada card (L40S / RTX 6000
  Ada, 44.42 GiB): an RTX A6000 (47.53 GiB) would give the same terms and a pool 2.9 GiB larger, so the L40S is used.
- QWEN36-WSL: a docker-compose + log note (index file id 52377383460, 2026-05-01): image
  vllm/vllm-openai:v0.20.0-cu130-ubuntu2404 under WSL ("Using 'pin_memory=False' as WSL is detected"), model
  RedHatAI/Qwen3.6-35B-A3B-NVFP4 (compressed-tensors NVFP4, Qwen3_5MoeForConditionalGeneration), flags
  ``--gpu-memory-utilization 0.90 --max-model-len 65536 --max-num-seqs 1 --max-num-batched-tokens 8192
  --kv-cache-dtype fp8_e4m3 --quantization compressed-tensors --moe-backend cutlass --enable-prefix-caching
  --enable-chunked-prefill --max-cudagraph-capture-size 1``. Logged: "Model loading took 21.86 GiB memory", "Setting
  attention block size to 2096 tokens", "Estimated CUDA graph memory: 0.36 GiB total", "Available KV cache memory:
  2.95 GiB", "GPU KV cache size: 75,456 tokens", "Maximum concurrency for 65,536 tokens per request: 3.87x". The card
  is not named (a Blackwell one: FlashInferCutlassNvFp4LinearKernel), so the hybrid layout is pinned from the logged
  pool, not the pool itself (on an RTX 5090 with the logged weights kvplan would say 3.95 GiB, +1.0: WSL's and the
  card's share are unknown).

- DSV4-PRO6000: a write-up "DeepSeek-V4-Flash on stock vLLM v0.25.0 (SM120 / RTX PRO 6000 Blackwell)" (index file id
  56819795714; log dated 07-12): 2 x RTX PRO 6000 Blackwell (96 GB, PCIe), image vllm/vllm-openai:v0.25.0 with
  flashinfer 0.6.14, ``vllm serve deepseek-ai/DeepSeek-V4-Flash --tensor-parallel-size 2 --disable-custom-all-reduce
  --kv-cache-dtype fp8 --gpu-memory-utilization 0.95 --max-model-len 1048576 --max-num-seqs 64
  --max-num-batched-tokens 4096 --enable-prefix-caching --enable-chunked-prefill --speculative-config
  '{"method":"mtp","num_speculative_tokens":2}' --async-scheduling`` (VLLM_USE_BREAKABLE_CUDAGRAPH set in the image).
  Logged: "[gpu_model_runner.py:5306] Model loading took 75.64 GiB memory", "Setting kv cache block size to 256 for
  DEEPSEEK_SPARSE_SWA backend", "[gpu_model_runner.py:6534] Profiling CUDA graph memory: PIECEWISE=42
  (largest=384), FULL=26 (largest=192)", "Estimated CUDA graph memory: 1.58 GiB total", "Available KV cache memory:
  10.29 GiB", "GPU KV cache size: 1,993,100 tokens", "Maximum concurrency for 1,048,576 tokens per request: 1.90x".
- QWEN38-H100: a Vietnamese course page "Bài 01 — Baseline: vLLM Aggregated Mode" (index file id 69498276477): one H100
  80GB, Qwen/Qwen3.8-27B-FP8 with ``--max-model-len 131072 --tensor-parallel-size 1 --kv-cache-dtype fp8
  --enable-prefix-caching --max-num-batched-tokens 8192 --max-num-seqs 64 --gpu-memory-utilization 0.90`` (its flag
  table), a release past 0.21.0 ("CUDA graph memory profiling is enabled (default since v0.21.0)"; the release itself
  is not named). Logged ("Số đo thật trên H100 80GB"): "Setting attention block size to 1568 tokens", "Available KV
  cache memory: 39.47 GiB", "GPU KV cache size: 1,200,036 tokens", "Maximum concurrency for 131,072 tokens per
  request: 9.16x". The release is not known, so the layout is pinned from the logged pool (the same on every line from
  0.22 to 0.33), not the pool.
- QWEN36-MTP-3090: an ADR "ADR-028 — Qwen3.6 27B MTP 128K как special long-context heavy lane" (index file id
  66441966339, dated 2026-05-08): one RTX 3090, a Qwen3.6-27B AutoRound checkpoint with its MTP layer,
  ``--language-model-only --max-model-len 131072 --gpu-memory-utilization 0.97 --cpu-offload-gb 12 --max-num-seqs 1
  --enforce-eager --attention-backend TRITON_ATTN --speculative-config
  {"method":"mtp","num_speculative_tokens":1}``, bf16 KV ("FP8 KV cache path в текущем runtime несовместим").
  Logged: "Available KV cache memory: 17.25 GiB", "GPU KV cache size: 255,975 tokens", "Maximum concurrency for
  131,072 tokens per request: 1.95x". The release is not named and the weights are partly offloaded (not modelled),
  so the layout is pinned from the logged pool.
Logs read and left out: a Qwen3.5-4B LLM-class run on 0.22.0 (index file id 55770092662; card not named, no Qwen3.5-4B
config here), a DGX Spark Qwen3.6-27B-NVFP4 MTP nightly (61569442000; unified memory), a Qwen2.5-7B
``num_gpu_blocks_override`` run (51781852921), the vllm-ascend #1249 Qwen3-32B NPU log (55800623026), Nemotron-3-Nano-4B
on the 0.13.0 NGC image (55241598681; no config here), GLM-5-FP8 SGLang on MI355X (1445879254: already
tests/test_engine_sglang_2026c.py), vLLM #33155 (gpt-oss-120b OOM on 0.14.1; its launch line is not in the indexed
excerpt).
"""

import pytest

from kvplan import load_preset
from kvplan.engines import (
    VLLM_ENGINE_CONTEXT_BATCH,
    VLLM_PROFILES,
    EngineConfig,
    batch_defaults,
    cuda_graph_capture_sizes,
    cuda_graph_sizes_by_mode,
    vllm_model_runner,
)
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.units import GiB
from kvplan.vllm_args import parse_vllm_command
from tests.test_engine_logs import close, close_gib
from tests.test_engine_logs_found import _term

L40S = get_gpu("L40S")  # 44.42 GiB


def _from_logged_pool(command: str, preset: str, gpu: str, version: str, pool_gib: float):
    """kvplan's layout for a ``vllm serve`` line with the logged "Available KV cache memory" given as the pool."""
    args = parse_vllm_command(command)
    assert not args.unknown, args.unknown
    fields = {**args.engine_fields(), "vllm_version": version, "kv_cache_memory_bytes": round(pool_gib * GiB)}
    return plan(load_preset(preset), get_gpu(gpu), EngineConfig(**fields), Layout())


# ----------------------------------------------------------------------------- ASYNC-L40S: 0.22.0, AsyncEngineArgs

def _async_l40s(**over):
    engine = EngineConfig(vllm_version="0.22", gpu_memory_utilization=0.95, max_model_len=4096,
                          usage_context="engine", **over)
    return plan(load_preset("qwen2.5-7b"), L40S, engine, Layout())


def test_engine_context_batch_defaults():
    # AsyncEngineArgs / EngineArgs used directly: SchedulerConfig's 2048 tokens / 128 sequences on every card (the log:
    # "max_num_batched_tokens=2048", graphs captured to 256 = 2 x 128); vllm serve on the same L40S: 2048 / 256, the
    # LLM class 8192 / 256, and on an H100 the engine context stays 2048 / 128 where vllm serve gives 8192 / 1024
    assert VLLM_ENGINE_CONTEXT_BATCH == (2048, 128)
    e = EngineConfig(vllm_version="0.22", usage_context="engine", max_model_len=4096)
    assert batch_defaults(L40S.name, L40S.memory_bytes, e) == (2048, 128)
    h100 = get_gpu("H100-SXM")
    assert batch_defaults(h100.name, h100.memory_bytes, e) == (2048, 128)
    serve = EngineConfig(vllm_version="0.22", max_model_len=4096)
    assert batch_defaults(h100.name, h100.memory_bytes, serve) == (8192, 1024)
    assert batch_defaults(L40S.name, L40S.memory_bytes, serve) == (2048, 256)


def test_async_engine_qwen2_5_7b_l40s_v0_22_weights_and_graphs():
    # "Model loading took 14.29 GiB": kvplan 14.27 (bf16 7.62 B params + the rotary table). "Estimated CUDA graph
    # memory: 0.37 GiB total" for PIECEWISE=35 (largest 256) + FULL=19 (largest 128): kvplan 0.38
    p = _async_l40s()
    assert close_gib(p.ranks[0].weights_bytes, 14.29)
    assert close_gib(_term(p, "CUDA graphs"), 0.37) and abs(_term(p, "CUDA graphs") / GiB - 0.37) < 0.05


def test_async_engine_qwen2_5_7b_l40s_v0_22_pool():
    # "Available KV cache memory: 26.32 GiB", "GPU KV cache size: 492,912 tokens", "120.34x": kvplan 26.28 GiB (-0.04),
    # 492,096 tokens (-0.17 %), 120.14x. 28 layers x 4 KV heads x 128 x 2 x 2 B = 57,344 B a token; 492,912 x 57,344 B
    # = 26.32 GiB as logged. Planned as vllm serve (2048 / 256 on the L40S) the sampler rows double and the graph
    # estimate grows to 0.58 GiB: 26.08 GiB, 488,336 tokens (-0.93 %), the edge of the tolerance
    p = _async_l40s()
    assert p.ranks[0].kv_bytes_per_token == 57_344 and f"{492_912 * 57_344 / GiB:.2f}" == "26.32"
    assert close_gib(p.ranks[0].kv_pool_bytes, 26.32)
    assert close(p.kv_cache_tokens, 492_912) and close(p.max_concurrency, 120.34)
    assert abs(p.kv_cache_tokens - 492_912) < 0.005 * 492_912


# ----------------------------------------------------------------------------- QWEN36-WSL: 0.20.0, one Blackwell card

QWEN36_WSL = ("vllm serve RedHatAI/Qwen3.6-35B-A3B-NVFP4 --served-model-name Qwen3.6-35B-A3B-NVFP4 --trust-remote-code "
              "--host 0.0.0.0 --port 8000 --gpu-memory-utilization 0.90 --max-model-len 65536 --max-num-seqs 1 "
              "--max-num-batched-tokens 8192 --kv-cache-dtype fp8_e4m3 --quantization compressed-tensors "
              "--reasoning-parser qwen3 --tool-call-parser qwen3_coder --enable-prefix-caching "
              "--enable-chunked-prefill --max-cudagraph-capture-size 1")


def test_qwen3_6_35b_a3b_v0_20_hybrid_layout_from_the_logged_pool():
    # Qwen3.6-35B-A3B keeps Qwen3.5-35B-A3B's text shapes (the qwen3.5-35b-a3b preset): 40 layers, 10 full attention
    # (2 KV heads x 256) + 30 gated-delta-net. fp8 KV: 0.20 aligns the attention block to 2096 tokens (page >= the
    # GDN state page), 4 groups of 10 layers, a page of 10 x 2096 x 2 x 2 x 256 x 1 B = 21,463,040 B. A request needs
    # cdiv(65536, 2096) = 32 attention blocks + 2 for each of the 3 GDN groups (prefix caching's 'align' mode) = 38;
    # the logged 2.95 GiB holds 147 blocks: 147 // 4 groups x 2096 = 75,456 tokens and 147 / 38 = 3.87x, as logged
    p = _from_logged_pool(QWEN36_WSL, "qwen3.5-35b-a3b", "RTX-5090", "0.20", 2.95)
    assert p.block_size == 2096 and p.ranks[0].bytes_per_block == 10 * 2096 * 2 * 2 * 256 == 21_463_040
    assert [(g.kind, g.layers) for g in p.kv_groups] == [("linear_attention", 10)] * 3 + [("full_attention", 10)]
    assert [g.blocks_per_request for g in p.kv_groups] == [2, 2, 2, 32]
    assert p.blocks_per_request == 38 and p.num_blocks == 147
    assert p.kv_cache_tokens == 75_456 and f"{p.max_concurrency:.2f}" == "3.87"


# ----------------------------------------------------------------------------- DSV4-PRO6000: 0.25.0, 2 x RTX PRO 6000

DSV4_PRO6000 = ("vllm serve deepseek-ai/DeepSeek-V4-Flash --served-model-name d4f --trust-remote-code --host 0.0.0.0 "
                "--port 15004 --tensor-parallel-size 2 --disable-custom-all-reduce --kv-cache-dtype fp8 "
                "--gpu-memory-utilization 0.95 --max-model-len 1048576 --max-num-seqs 64 --max-num-batched-tokens 4096 "
                "--enable-prefix-caching --enable-chunked-prefill --tokenizer-mode deepseek_v4 --tool-call-parser "
                "deepseek_v4 --reasoning-parser deepseek_v4 --enable-auto-tool-choice --speculative-config "
                "'{\"method\":\"mtp\",\"num_speculative_tokens\":2}' --async-scheduling")


def _dsv4_pro6000(**over):
    """The log's flags, MTP-2 included (vLLM's DeepSeekV4MTP draft: families/deepseek_v4.mtp_fields)."""
    args = parse_vllm_command(DSV4_PRO6000)
    assert not args.unknown, args.unknown
    assert args.engine_fields()["speculative_method"] == "mtp"
    assert args.engine_fields()["num_speculative_tokens"] == 2
    fields = {**args.engine_fields(), "vllm_version": "0.25", **over}
    return plan(load_preset("deepseek-v4-flash"), get_gpu("RTX-PRO-6000"), EngineConfig(**fields), Layout(tp=2))


def test_dsv4_runs_the_v1_runner_on_0_25():
    # the log's profiling lines come from v1/worker/gpu_model_runner.py (the V1 runner: "Profiling CUDA graph memory",
    # "Estimated CUDA graph memory: 1.58 GiB"); 0.25.0 config/vllm.py DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES is
    # DeepseekV2 / Qwen2Moe / GraniteMoe only ("DeepSeek-V4 is not otherwise a default-V2 architecture");
    # DeepseekV4ForCausalLM joins in 0.28.0. kvplan said V2 for 0.25 - 0.27 before, and so no graph estimate
    for version, runner in (("0.25", "V1"), ("0.26", "V1"), ("0.27", "V1"), ("0.28", "V2")):
        assert vllm_model_runner(version, "deepseek_v4", True, False, False) == runner, version
    assert vllm_model_runner("0.25", "deepseek_v4", True, False, False, "mtp") == "V1"
    assert any(t.name == "CUDA graphs (estimated, subtracted)" for t in _dsv4_pro6000().ranks[0].terms)


def test_dsv4_flash_pro6000_tp2_layout_from_the_logged_pool():
    # block 256 (DEEPSEEK_SPARSE_SWA), fp8 KV, TP 2: 1,039,680 B a block (0.23 - 0.26: 22 x 37,440 + 21 x 8,640 + 20 x
    # 1,728; the MTP layer's SWA cache joins the second SWA group, 21 -> 22 layers, which no page-size slot outgrows).
    # A 1M request (tests/test_dsv4_mtp.py): cdiv(5,605,470,720, 1,002,240) = 5,593 blocks with the MTP layer (5,591
    # without). The logged "10.29 GiB" is rounded: at 10,631 blocks (11,052,838,080 B = 10.2938 GiB, printed 10.29)
    # the tokens line is int(10,631 / 5,593 x 1,048,576) = 1,993,100 exactly as logged, and 1.90x; no block count
    # gives 1,993,100 without the MTP layer (10,627 -> 1,993,062, 10,628 -> 1,993,250). round(10.29 GiB) itself holds
    # 10,627 blocks: 1,992,350 tokens (-0.04 %)
    p = _dsv4_pro6000(kv_cache_memory_bytes=10_631 * 1_039_680)
    assert p.block_size == 256 and p.ranks[0].bytes_per_block == 1_039_680 and p.blocks_per_request == 5_593
    assert p.kv_cache_tokens == 1_993_100 and f"{p.max_concurrency:.2f}" == "1.90"
    p = _dsv4_pro6000(kv_cache_memory_bytes=round(10.29 * GiB))
    assert p.kv_cache_tokens == 1_992_350 and close(p.kv_cache_tokens, 1_993_100)
    without = _dsv4_pro6000(kv_cache_memory_bytes=10_631 * 1_039_680, speculative_method="none",
                            num_speculative_tokens=0)
    assert without.blocks_per_request == 5_591 and without.kv_cache_tokens == 1_993_813  # 10,631 / 5,591 x 1,048,576


def test_dsv4_flash_pro6000_tp2_weights_from_flags():
    # "Model loading took 75.64 GiB": kvplan 80,770,953,380 B = 75.22 GiB (-0.42, -0.55 %): the target's shard,
    # + the MTP layer 1,817,906,870 B (tests/test_dsv4_mtp.py; "MTP draft model loaded: 39 params": its 39 tensors,
    # embed_tokens / shared_head.head shared with the target), + the two fp32 cos/sin tables 2 x 1,048,576 x 64 x 4 =
    # 536,870,912 B, + topk_indices_buffer 4,096 x 512 x 4 = 8,388,608 B and _mtp_hidden_buffer 4,096 x 4 x 4,096 x 2
    # = 134,217,728 B (DeepseekV4Model.__init__). Planned without MTP before: 72.90 GiB (-2.74)
    r = _dsv4_pro6000().ranks[0]
    assert r.weights_bytes == 80_770_953_380 and close_gib(r.weights_bytes, 75.64)
    parts = {t.name: t.bytes for t in r.terms}
    assert parts["MTP layers (in weights)"] == 1_817_906_870
    assert parts["rotary cos/sin caches (in weights)"] == 536_870_912
    assert parts["DeepSeek-V4 model buffers (in weights)"] == 8_388_608 + 134_217_728


def test_dsv4_flash_pro6000_graph_counts_as_logged():
    # "Profiling CUDA graph memory: PIECEWISE=42 (largest=384), FULL=26 (largest=192)". vLLM 0.25.0 config/vllm.py
    # _set_cudagraph_sizes: max = min(64 seqs x (1 + 2) x 2, 512) = 384 (<= 4,096 batched tokens): [1, 2, 4] + 31
    # sizes 8 - 248 step 8 + 9 sizes 256 - 384 step 16 = 43. config/compilation.py
    # adjust_cudagraph_sizes_for_spec_decode (FULL_AND_PIECEWISE, q = 3) rounds each up to a multiple of 3 (1, 2 -> 3,
    # 4 -> 6, 8 -> 9, ..., 272 -> 273, 384 stays): 42 distinct, the largest 384; v1/cudagraph_dispatcher.py keeps
    # 3 <= x <= 3 x 64 = 192 for FULL: 26
    prof = VLLM_PROFILES["0.25"]
    pw, full = cuda_graph_sizes_by_mode(prof, 64, 4096, "deepseek_v4", 2)
    assert len(cuda_graph_capture_sizes(prof, 64, 4096, "deepseek_v4", 2)) == 3 + 31 + 9 == 43
    assert (len(pw), pw[-1], len(full), full[-1]) == (42, 384, 26, 192)
    assert pw[:8] == [3, 6, 9, 18, 24, 33, 42, 48] and pw[-3:] == [354, 369, 384]
    # without speculation the same flags give max = min(2 x 64, 512) = 128: [1, 2, 4] + 8 - 128 step 8 = 19 PIECEWISE,
    # and [1, 2, 4] + 8 - 64 = 11 FULL (kvplan's 19 + 11 for this log before it read the speculation)
    assert [len(x) for x in cuda_graph_sizes_by_mode(prof, 64, 4096, "deepseek_v4", 0)] == [19, 11]
    # the plan's estimate with those counts (sm120: no FA3 split accumulators, the first FULL capture 4 MiB):
    # 80 MiB + 2 x 384 x 14,336 (this rank's top-6 + shared gate + up) x 2 B = 105,906,176 B first PIECEWISE, +
    # (42 - 1 + 26 - 1) x 43 layers x 256 KiB = 743,964,672 B: 849,870,848 B = 0.79 GiB (was 0.38), logged 1.58
    g = _term(_dsv4_pro6000(), "CUDA graphs")
    assert g == 80 * 2**20 + 2 * 384 * 14_336 * 2 + 66 * 43 * 256 * 1024 == 849_870_848


def test_speculative_capture_sizes_by_release():
    # 64 seqs, 4,096 tokens, MTP k = 2 (q = 3), FULL_AND_PIECEWISE (the wheels read 2026-12-03, kvplan.engines
    # VLLM_CHANGES spec_capture_*): (PIECEWISE, FULL) graphs
    counts = {v: tuple(len(x) for x in cuda_graph_sizes_by_mode(VLLM_PROFILES[v], 64, 4096, "", 2))
              for v in ("0.11", "0.11.1", "0.12", "0.13", "0.25", "0.28", "0.29", "0.33")}
    # 0.11.0: no rounding, max 128: 19 sizes; FULL keeps 3 <= x <= 192: 17 (1 and 2 below q)
    # 0.11.1 / 0.12.0: max still 2 x 64 = 128; rounded to multiples of 3 <= 128 (128 -> 129 dropped): 17, all FULL
    # 0.13.0 - 0.28.0: max 384 as in the log: 42 + 26
    # 0.29.0+: the uniform decode sizes 3 x [1, 2, 4, 8, ..., 64] are appended: only 12 (= 3 x 4) is new after the
    # rounding (3, 6, 24, 48, ... are there already): 43, and 12 <= 192: 27 FULL
    assert counts == {"0.11": (19, 17), "0.11.1": (17, 17), "0.12": (17, 17), "0.13": (42, 26), "0.25": (42, 26),
                      "0.28": (42, 26), "0.29": (43, 27), "0.33": (43, 27)}
    # the V2 runner from 0.25.0 keeps its PIECEWISE sizes unrounded and rounds only its FULL decode descriptors:
    # 0.25: 43 + 26; 0.29: 43 + the new 3, 6, 12 = 46 + 27; 0.24 (V2 rounds them all): 42 + 26
    v2 = {v: tuple(len(x) for x in cuda_graph_sizes_by_mode(VLLM_PROFILES[v], 64, 4096, "", 2, runner="V2"))
          for v in ("0.24", "0.25", "0.29")}
    assert v2 == {"0.24": (42, 26), "0.25": (43, 26), "0.29": (46, 27)}
    # --compilation-config '{"cudagraph_mode": "PIECEWISE"}': no FULL decode graphs, so no rounding: 43 PIECEWISE;
    # but the 0.22.0 - 0.24.0 V2 runner rounds in any mode (CudaGraphManager.__init__): 42
    assert [len(x) for x in cuda_graph_sizes_by_mode(VLLM_PROFILES["0.25"], 64, 4096, "", 2, False)] == [43, 0]
    assert [len(x) for x in cuda_graph_sizes_by_mode(VLLM_PROFILES["0.24"], 64, 4096, "", 2, False, "V2")] == [42, 0]
    assert [len(x) for x in cuda_graph_sizes_by_mode(VLLM_PROFILES["0.24"], 64, 4096, "", 2, False, "V1")] == [43, 0]
    # gpt-oss's explicit 1024 limit is not widened; its 83 sizes rounded to multiples of 3 <= 1024: 1, 2 -> 3 merge and
    # 1024 -> 1026 is dropped: 81, the largest 1008 (= 3 x 336); FULL up to 3 x 256 seqs = 768
    pw, full = cuda_graph_sizes_by_mode(VLLM_PROFILES["0.25"], 256, 8192, "gpt_oss", 2)
    assert (len(pw), pw[-1], full[-1]) == (83 - 1 - 1, 1008, 768)


def test_two_more_speculative_logs_graph_counts():
    # The capture sizes alone (kvplan plans neither run whole: an EAGLE-3 head for Gemma-4 and a DFlash drafter):
    # - index file id 52101499359 (WSL log, "version 0.19.2rc1.dev8", RedHatAI/gemma-4-26B-A4B-it-NVFP4, V1
    #   gpu_model_runner.py, speculative_config {'method': 'eagle', ..., 'num_speculative_tokens': 3}, max_num_seqs 2,
    #   max_num_batched_tokens 8192): "'cudagraph_capture_sizes': [1, 2, 4, 8, 16]" = max min(2 x 2 x 4, 512) = 16,
    #   and "PIECEWISE=3 (largest=16), FULL=2 (largest=8)": rounded to multiples of 4: 4, 8, 16; FULL <= 4 x 2: 4, 8
    assert cuda_graph_capture_sizes(VLLM_PROFILES["0.19"], 2, 8192, "gemma4", 3) == [1, 2, 4, 8, 16]
    assert cuda_graph_sizes_by_mode(VLLM_PROFILES["0.19"], 2, 8192, "gemma4", 3) == ([4, 8, 16], [4, 8])
    # - index file id 56878676544 (vllm/vllm-openai:v0.22.0, Qwen3.6-35B-A3B PrismaQuant, V1, DFlash
    #   num_speculative_tokens 6, --max-num-seqs 8, --max-num-batched-tokens 32768): "'cudagraph_capture_sizes': [1,
    #   2, 4, 8, 16, ..., 112]" (17 = max min(8 x 7 x 2, 512) = 112) and "PIECEWISE=15 (largest=112), FULL=8
    #   (largest=56)": multiples of 7: 1, 2, 4 -> 7; 8 -> 14; 16 -> 21; ...; 104 -> 105; 112 stays: 15; FULL <= 7 x 8
    #   = 56: 7, 14, ..., 56 = 8
    assert len(cuda_graph_capture_sizes(VLLM_PROFILES["0.22"], 8, 32768, "qwen3_5_moe", 6)) == 3 + 14 == 17
    pw, full = cuda_graph_sizes_by_mode(VLLM_PROFILES["0.22"], 8, 32768, "qwen3_5_moe", 6)
    assert (len(pw), pw[-1]) == (15, 112) and full == [7, 14, 21, 28, 35, 42, 49, 56]


@pytest.mark.xfail(strict=True, reason=(
    "DeepSeek-V4-Flash TP2 on 2 x RTX PRO 6000, vLLM 0.25.0, util 0.95, MTP-2 (planned with its MTP draft): KV 13.28 "
    "GiB vs 10.29 logged (+2.99 since the held MoE workspace sits under the forward's peak too, kvplan.plan."
    "activation_estimate; +3.15 before, +3.56 before the speculative graph sizes, +5.88 before the draft was modelled), "
    "2,572,039 tokens vs 1,993,100 (+29.0 %), 2.45x vs 1.90x. The layout is exact (test above), the weights within "
    "0.42 GiB (-0.55 %, test above), the graph counts as logged (42 PIECEWISE + 26 FULL, test above); what stays: the "
    "CUDA-graph estimate 0.79 vs 1.58 logged (-0.79: kvplan's 43 layers x 256 KiB a graph, fitted on H100 logs "
    "without speculation; the draft's own graphs and VLLM_USE_BREAKABLE_CUDAGRAPH's capture, unmodelled, would take "
    "~23 MiB a graph here), and activation + non-torch 0.77 vs 0.95 x 94.97 - 75.64 - 10.29 - 1.58 = 2.71 implied "
    "(-1.94): the MTP proposer's dummy run (2 forwards of the draft layer at 4,096 tokens in profile_run), the "
    "rejection sampler's warm-up, DSv4's indexer / compressor workspaces and the PCIe NCCL context are candidates, "
    "none sized from source"))
def test_dsv4_flash_pro6000_tp2_pool_from_flags():
    p = _dsv4_pro6000()
    assert close_gib(p.ranks[0].kv_pool_bytes, 10.29)
    assert close(p.kv_cache_tokens, 1_993_100) and close(p.max_concurrency, 1.90)


# ----------------------------------------------------------------------------- QWEN38-H100: one H100, 0.21+

QWEN38_H100 = ("vllm serve /models/Qwen/Qwen3.8-27B-FP8 --served-model-name qwen3.8-27b --max-model-len 131072 "
               "--tensor-parallel-size 1 --kv-cache-dtype fp8 --enable-prefix-caching --max-num-batched-tokens 8192 "
               "--max-num-seqs 64 --gpu-memory-utilization 0.90 --reasoning-parser qwen3 "
               "--tool-call-parser qwen3_coder --enable-auto-tool-choice")


def test_qwen3_8_27b_fp8_h100_hybrid_layout_from_the_logged_pool():
    # Qwen3.8-27B keeps the 27B hybrid's text shapes (the qwen3.5-27b preset; the page: "16 trong 64 lớp" are gated
    # attention, 4 KV heads x 256). fp8 KV: block 1568 tokens (page >= the GDN state page), a page of 16 x 1568 x 2 x 4
    # x 256 x 1 B = 51,380,224 B; the logged 39.47 GiB holds 824 blocks, a request cdiv(131072, 1568) = 84 attention
    # blocks + 2 for each of the 3 GDN groups = 90: 824 / 90 = 9.16x, and the tokens line prints 9.1556 x 131,072 =
    # 1,200,036 as logged, on every kvplan line from 0.22 to 0.33
    for version in ("0.22", "0.27", "0.33"):
        p = _from_logged_pool(QWEN38_H100, "qwen3.5-27b", "H100-SXM", version, 39.47)
        assert p.block_size == 1568 and p.ranks[0].bytes_per_block == 16 * 1568 * 2 * 4 * 256 == 51_380_224
        assert p.blocks_per_request == 90 and p.num_blocks == 824
        assert p.kv_cache_tokens == 1_200_036 and f"{p.max_concurrency:.2f}" == "9.16"


# ----------------------------------------------------------------------------- QWEN36-MTP-3090: one RTX 3090, MTP-1

QWEN36_MTP_3090 = ("vllm serve /home/vladimir/models/qwen36-27b-lorbus-autoround --served-model-name qwen3.6-27b-mtp "
                   "--language-model-only --max-model-len 131072 --gpu-memory-utilization 0.97 --cpu-offload-gb 12 "
                   "--max-num-seqs 1 --generation-config vllm --enforce-eager --attention-backend TRITON_ATTN "
                   "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":1}'")


def test_qwen3_6_27b_mtp_rtx3090_layout_from_the_logged_pool():
    # the 27B hybrid (qwen3.5-27b preset shapes) with its MTP layer's attention: 17 full-attention layers (16 + the
    # drafter's) in one group beside three GDN groups, bf16 KV, block 800. The logged 17.25 GiB holds 332 blocks, a
    # request 170: 332 / 170 = 1.953x, printed 1.95x, and the tokens line 1.953 x 131,072 = 255,975 as logged. That line
    # is the concurrency form (0.21+); 0.19 / 0.20 print num_blocks // 4 groups x 800 = 66,400, so the run is 0.21+
    assert any(n.startswith("--cpu-offload-gb 12: not modeled") for n in parse_vllm_command(QWEN36_MTP_3090).notes)

    def at(version):
        return _from_logged_pool(QWEN36_MTP_3090, "qwen3.5-27b", "RTX-3090", version, 17.25)
    p = at("0.22")
    assert p.block_size == 800 and p.num_blocks == 332 and p.blocks_per_request == 170
    assert [(g.kind, g.layers) for g in p.kv_groups][-1] == ("full_attention", 17)
    assert p.kv_cache_tokens == 255_975 and f"{p.max_concurrency:.2f}" == "1.95"
    assert at("0.21").kv_cache_tokens == 255_975 and at("0.20").kv_cache_tokens == 332 // 4 * 800 == 66_400
