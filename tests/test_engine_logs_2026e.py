"""Public vLLM start-up logs of 2026 H2 reproduced from their launch inputs (the fifth 2026 round, 0.27 - 0.31).

Tolerances as tests/test_engine_logs.py: memory within max(1 %, 0.25 GiB), tokens and concurrency within 1 %. A miss is
a strict xfail whose reason gives logged vs kvplan and the term thought to be off. No log here is pinned elsewhere in
tests/ (file ids, models and dates grepped 2026-12-02). Where the search index names no repository for a file, its file
id (read_file) is the citation.

Sources (all read 2026-12-02):
- RTX4090-WSL-0271: a Korean study note working through an LLM-inference book's chapter 2 on an RTX 4090 under WSL2
  (index file id 61815222665), its "Lab 3" and "Lab 5" runs of 2026-08-22, vLLM 0.27.1 ("vLLM 0.27.1 -- 문서 권고대로
  핀을 풀고 최신 사용"). The notebook is github.com/orca3/llm-model-inference ch02/ch2_Run_LLM_With_vLLM.ipynb (commit
  80dcd9f, read from the repository): ``LLM(model="Qwen/Qwen2.5-0.5B", dtype="float16")``, nothing else set (the
  offline LLM class: "Chunked prefill is enabled with max_num_batched_tokens=8192"). Logged: "Model loading took 0.93
  GiB", "Available KV cache memory: 20.52 GiB", "GPU KV cache size: 1,793,232 tokens", "Free memory on device
  (22.45/23.99 GiB) on startup. Desired GPU memory utilization is (0.92, 22.07 GiB). Actual usage is 1.23 GiB for
  consumed memory (weights + non-torch), 0.31 GiB for peak activation, and 0.0 GiB for CUDAGraph memory" (both runs
  the same to the digit; WSL2 shows the card as 23.99 GiB, not the 23.53 bare Linux does).
- H200-031-AWQ: a benchmark harness's parser test (index file id 70347757402, synapse_bench), "REAL_LOG_0_31 is copied
  from an actual vLLM 0.31.0 server log (lab smoke run, 2026-10-08, H200)": Qwen/Qwen2.5-7B-Instruct-AWQ, "Using
  MacheteLinearKernel for AutoAWQMarlinLinearMethod", "Model loading took 5.38 GiB", "Available KV cache memory: 34.79
  GiB", "GPU KV cache size: 651,504 tokens, Maximum concurrency for 4,096 tokens per request: 159.06x". The utilization
  is not in the excerpt, so the pool is not planned; the weights in Machete's Hopper layout (no log pinned it before)
  and the layout (block count, concurrency) are.
- RTX5090-029-QWEN3-4B: a home inference server's benchmark notes (index file ids 69057007511 and its later version
  69477724907, 2026-09-14), one RTX 5090, vLLM 0.29 (the notes' own "vLLM 0.29's current memory-profiling behavior"),
  "this default `vllm serve` config with no explicit batching flags set", Qwen/Qwen3-4B-Instruct-2507 at
  --max-model-len 32768 and 131072 and Qwen/Qwen3-4B-Instruct-2507-FP8 (block-scaled FP8, run with VLLM_USE_DEEP_GEMM=0:
  "Selected CutlassFp8BlockScaledMMKernel"); "Available for KV cache (32K config, 92% util) | 18.96 GiB | 22.27 GiB",
  "Weights + non-torch memory | 7.64 GiB | 5.4 GiB", "GPU KV cache size (32K config) | - | 162,144 tokens", "4.95x" at
  32,768; at 131072: "GPU KV cache size: 138,064 tokens", "Maximum concurrency for 131,072 tokens per request: 1.05x"
  (bf16), "162,144 tokens (+17%)", "1.24x" (FP8). The config is Qwen3-4B-Instruct-2507's (36 layers, hidden 2560, 32 /
  8 heads of 128, intermediate 9728, tied, 262,144 positions) typed in over the qwen3-8b preset.
- PRO6000-020-QWEN35-35B: a notebook summary of a Swiss court-card enrichment job (index file id 67603003401), vLLM
  0.20.0 offline ``LLM`` on one RTX PRO 6000 Blackwell Server Edition (97,887 MiB): Qwen/Qwen3.5-35B-A3B, bf16,
  ``max_model_len=4096, gpu_memory_utilization=0.90, tensor_parallel_size=1, enforce_eager=True,
  enable_prefix_caching=False, limit_mm_per_prompt={"image": 0, "video": 0}``, Triton MoE; "running in text-only mode",
  "chunked prefill with max_num_batched_tokens=16384", "Model loading took 64.69 GiB", "Available KV cache memory:
  16.03 GiB", "GPU KV cache size: 209,088 tokens", "Maximum concurrency for 4,096 tokens per request: 113.57x". The
  config is the qwen3.6-35b-a3b-nvfp4 fixture's with its quantization_config removed: Qwen3.6-35B-A3B is the same
  Qwen3_5MoeForConditionalGeneration shape (40 layers, 10 full-attention, 256 experts of 512, 248,320 vocabulary).
- GB10-023-QWEN36-27B: "Qwen3.6-27B-NVFP4 -- First Startup Log (No MTP)" (index file id 61544841280), one DGX Spark
  (GB10, 128 GB unified memory), image vllm/vllm-openai:nightly = "version 0.23.1rc1.dev531+ga65f93fb2",
  ``--model nvidia/Qwen3.6-27B-NVFP4 --trust-remote-code --gpu-memory-utilization 0.70 --max-model-len 262144
  --max-num-seqs 8 --max-num-batched-tokens 65536 --kv-cache-dtype fp8 --quantization modelopt --enable-prefix-caching
  --enable-chunked-prefill --async-scheduling`` (the docker-compose command, and the log's own "non-default args");
  "Model loading took 19.78 GiB", "Setting attention block size to 1568 tokens", "Available KV cache memory: 47.84
  GiB", "GPU KV cache size: 1,505,068 tokens", "Maximum concurrency for 262,144 tokens per request: 5.74x". The config
  is the qwen3.6-27b-nvfp4 fixture (nvidia's own checkpoint). The GB10 is not in kvplan.gpus (unified memory: the
  budget is drawn from system RAM), so its pool is not planned; the weights and the hybrid layout are
  device-independent and pinned.
- WSL-0202-GEMMA4-26B: a docker-compose note and its vLLM log (index file id 56816929356, 2026-05-14), "version 0.20.2"
  under WSL2 (the card is not named), non-default args ``model nvidia/Gemma-4-26B-A4B-NVFP4, max_model_len 256000,
  quantization compressed-tensors, gpu_memory_utilization 0.85, kv_cache_dtype fp8_e4m3, enable_prefix_caching,
  max_num_batched_tokens 16384, max_num_seqs 2, moe_backend cutlass``; "Available KV cache memory: 4.58 GiB", "GPU KV
  cache size: 286,007 tokens", "Maximum concurrency for 256,000 tokens per request: 1.12x". With no device the pool is
  not planned; the layout the logged pool gives is (the gemma-4-26b-a4b preset's attention shapes: the NVFP4 build
  quantizes the MoE, not the KV).
- M3-023-TP2: an lm-eval gsm8k run of a locally converted MiniMax-M3 (index file id 60171799662, 2026-07-08, an AWS
  host; "MiniMax-M3-MXFP4-MXFP8-auto" converted back to the original schema), vLLM "v0.23.1rc1.dev550+g58d6a6e60",
  ``tensor_parallel_size 2, max_model_len 8192, max_num_batched_tokens 32768, max_num_seqs 128,
  gpu_memory_utilization 0.8, dtype bfloat16, enable_prefix_caching False``; "Setting KV cache block size to 128 to
  match MiniMax-M3 sparse block size", "MiniMax M3 sparse attention selected MSA (kv_cache_dtype=auto,
  topk_blocks=16)", "Available KV cache memory: 16.81 GiB", "GPU KV cache size: 237,312 tokens", "Maximum concurrency
  for 8,192 tokens per request: 28.97x". The card is not named and the checkpoint is a private conversion, so neither
  weights nor pool are planned; the sparse-attention layout of the minimax-m3 fixture is.
"""

import json
from pathlib import Path

import pytest

from kvplan import load_preset, parse_config
from kvplan.gpus import custom_gpu, get_gpu
from kvplan.units import GiB
from tests.test_engine_logs import close, close_gib
from tests.test_engine_logs_2026d import _qwen2_5
from tests.test_engine_logs_dec import _plan
from tests.test_engine_logs_found import _term

PRESETS = Path(__file__).parent.parent / "kvplan" / "presets"
FIXTURES = Path(__file__).parent / "fixtures" / "configs"


# ---------------------------------------------------------------- RTX4090-WSL-0271: vLLM 0.27.1, the offline LLM class


def test_rtx4090_wsl_v0_27_1_qwen2_5_0_5b_llm_class_defaults():
    # Qwen/Qwen2.5-0.5B: 24 layers x 2 (K, V) x 2 KV heads x 64 x 2 B = 12,288 B a token; 20.52 GiB / 12,288 B =
    # 1,793,070 tokens before the rounding of the logged pool (1,793,232 logged). The 0.27 budget: 22.07 - 1.23 - 0.31 =
    # 20.53 (the graphs, captured after the pool, are not subtracted on this line). kvplan: 0.92 GiB weights (-0.01),
    # peak 0.25 (-0.06: the V2 runner's cold-compile copy of the 151,936 x 896 fp16 embedding, 0.25 GiB), non-torch +
    # sampler state 0.25 + 0.15 = 0.40 (the log's 1.23 - 0.93 = 0.30), pool 20.49 GiB (-0.03), 1,790,336 tokens
    # (-0.16 %)
    gpu = get_gpu("RTX-4090").model_copy(update={"memory_bytes": round(23.99 * GiB)})  # as WSL2 shows the card
    spec = _qwen2_5("qwen2.5-0.5b", hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                    num_attention_heads=14, num_key_value_heads=2, max_window_layers=24)
    p = _plan(spec, gpu, "vllm serve Qwen/Qwen2.5-0.5B --dtype float16", "0.27", usage_context="llm")
    r = p.ranks[0]
    assert r.kv_bytes_per_token == 24 * 2 * 2 * 64 * 2 == 12_288
    assert close_gib(r.weights_bytes, 0.93), r.weights_bytes / GiB
    assert close_gib(_term(p, "activation peak"), 0.31)
    assert close_gib(r.kv_pool_bytes, 20.52), r.kv_pool_bytes / GiB
    assert close(p.kv_cache_tokens, 1_793_232), p.kv_cache_tokens
    # the default context is the checkpoint's 32,768: 1,793,232 / 32,768 = 54.72x (not in the excerpt)
    assert close(p.max_concurrency, 1_793_232 / 32_768), p.max_concurrency


# ------------------------------------------------------------------ H200-031-AWQ: vLLM 0.31.0, Qwen2.5-7B AWQ (Machete)


def _qwen2_5_7b_awq():
    """Qwen/Qwen2.5-7B-Instruct-AWQ: the qwen2.5-7b preset's shapes with the AutoAWQ GEMM 4-bit, group-128
    quantization_config (the zephyr-7b-alpha-awq fixture's, the same four fields the Qwen checkpoint carries)."""
    cfg = json.loads((PRESETS / "qwen2.5-7b.json").read_text())
    cfg["quantization_config"] = json.loads((FIXTURES / "zephyr-7b-alpha-awq.quantization_config.json").read_text())
    return parse_config(cfg, "qwen2.5-7b-instruct-awq")


def test_h200_v0_31_qwen2_5_7b_awq_machete_weights_and_layout():
    # kvplan's 0.30 line is 0.30.0 - 0.31.0. The pool is planned at a guessed utilization only to read the layout
    # off it; the weights do not depend on it
    p = _plan(_qwen2_5_7b_awq(), get_gpu("H200"),
              "vllm serve Qwen/Qwen2.5-7B-Instruct-AWQ --max-model-len 4096 --gpu-memory-utilization 0.3", "0.30")
    r = p.ranks[0]
    # 4-bit group-128 linears (Machete's Hopper repack keeps the bytes) + the bf16 152,064 x 3,584 embedding and
    # lm_head: kvplan 5.29 GiB, logged "Model loading took 5.38 GiB" (-0.09)
    assert close_gib(r.weights_bytes, 5.38), r.weights_bytes / GiB
    # 28 layers x 2 x 4 KV heads x 128 x 2 B = 57,344 B a token; blocks of 16 tokens = 917,504 B. The logged pool, 34.79
    # GiB, rounds a figure in [34.785, 34.795) GiB: 40,708 - 40,720 blocks, and 651,504 tokens = 40,719 blocks is in
    # that range; 651,504 / 4,096 = 159.06x
    assert r.kv_bytes_per_token == 28 * 2 * 4 * 128 * 2 == 57_344
    lo, hi = (int(g * GiB) // (16 * 57_344) for g in (34.785, 34.795))
    assert lo <= 651_504 // 16 <= hi and 651_504 % 16 == 0
    assert round(651_504 / 4_096, 2) == 159.06


# ---------------------------------------------------------------- RTX5090-029-QWEN3-4B: vLLM 0.29, Qwen3-4B bf16 / FP8


def _qwen3_4b_2507(fp8: bool = False):
    cfg = json.loads((PRESETS / "qwen3-8b.json").read_text())
    cfg.update(hidden_size=2560, intermediate_size=9728, tie_word_embeddings=True, max_position_embeddings=262144,
               rope_theta=5000000)
    if fp8:  # Qwen's fine-grained FP8: e4m3, dynamic activations, 128 x 128 weight blocks (the qwen3-32b-fp8 fixture's)
        cfg["quantization_config"] = json.loads((FIXTURES / "qwen3-32b-fp8.json").read_text())["quantization_config"]
    return parse_config(cfg, "qwen3-4b-instruct-2507" + ("-fp8" if fp8 else ""))


def _rtx5090_029(fp8: bool, max_len: int):
    return _plan(_qwen3_4b_2507(fp8), get_gpu("RTX-5090"),
                 f"vllm serve Qwen/Qwen3-4B-Instruct-2507{'-FP8' if fp8 else ''} --max-model-len {max_len}", "0.29")


def test_rtx5090_v0_29_qwen3_4b_layout_and_weights():
    # 36 layers x 2 x 8 KV heads x 128 x 2 B = 147,456 B a token: the logged pools give the logged tokens, 18.96 GiB /
    # 147,456 B = 138,065 (138,064 logged) and 22.27 GiB -> 162,168 (162,144 logged); 138,064 / 131,072 = 1.05x,
    # 162,144 / 32,768 = 4.95x, / 131,072 = 1.24x
    p = _rtx5090_029(False, 32768)
    assert p.ranks[0].kv_bytes_per_token == 36 * 2 * 8 * 128 * 2 == 147_456
    assert abs(int(18.96 * GiB) // 147_456 - 138_064) <= 16 and abs(int(22.27 * GiB) // 147_456 - 162_144) <= 32
    assert (round(138_064 / 131_072, 2), round(162_144 / 32_768, 2), round(162_144 / 131_072, 2)) == (1.05, 4.95, 1.24)
    # the bf16 checkpoint: 4.02 B parameters x 2 B = 7.49 GiB + the rotary cache and the allocator's 2 MiB segments:
    # kvplan 7.61 GiB, the notes' 7.64 (the "Model loading took" figure of the same checkpoint in every log of it)
    assert close_gib(p.ranks[0].weights_bytes, 7.64), p.ranks[0].weights_bytes / GiB


# Outside weights and KV the runs leave 0.92 x 31.36 = 28.85 - 7.61 - 18.96 = 2.28 GiB (bf16) and 28.85 - 4.17 - 22.27 =
# 2.41 (FP8). kvplan: non-torch 0.25 + V2 sampler state 0.154 + peak 0.724 (the cold compile's copy of the 151,936 x
# 2,560 embedding) + CUDA-graph estimate 0.461 = 1.59, and on this SM 12.0 card the same copy a second time in
# 'consumed' (kvplan.engines.vllm_sm120_held_copy, an estimate fitted to the SM 12.0 logs, tests/test_engine_logs_sm120.py):
# 2.31 / 2.31. The notes' 'Weights + non-torch memory' 5.4 of the FP8 run is the log's 'consumed memory (weights +
# non-torch)': kvplan 4.17 + 0.25 + 0.154 + 0.724 = 5.30 (-0.10; 4.58 without the held copy). Their bf16 '7.64' is the
# checkpoint's 'Model loading took' (7.61 in kvplan, 7.64 in every log of these weights). Before the held copy: pools
# +0.69 / +0.82 GiB, tokens +3.7 %.


def test_rtx5090_v0_29_qwen3_4b_bf16_pool_and_tokens():
    # "Available for KV cache (32K config, 92% util) 18.96 GiB"; 128K: "GPU KV cache size: 138,064 tokens", 1.05x.
    # kvplan: 28.85 - 7.61 - 0.724 - 0.25 - 0.154 - 0.724 - 0.461 = 18.93 GiB (-0.03); 137,824 tokens (-0.17 %), 1.05x
    p32, p128 = _rtx5090_029(False, 32768), _rtx5090_029(False, 131072)
    assert close_gib(p32.ranks[0].kv_pool_bytes, 18.96), p32.ranks[0].kv_pool_bytes / GiB
    assert close(p128.kv_cache_tokens, 138_064) and close(p128.max_concurrency, 1.05)
    assert _term(p32, "the cold compile's embedding copy") == _term(p32, "activation peak") == 151_936 * 2560 * 2


def test_rtx5090_v0_29_qwen3_4b_fp8_pool_and_tokens():
    # "22.27 GiB", "162,144 tokens", "4.95x" at 32,768, "1.24x" at 131,072. kvplan: 28.85 - 4.17 - 0.724 - 0.25 -
    # 0.154 - 0.724 - 0.461 = 22.37 GiB (+0.10), 162,848 tokens (+0.43 %), 4.97x, 1.24x
    p32, p128 = _rtx5090_029(True, 32768), _rtx5090_029(True, 131072)
    assert close_gib(p32.ranks[0].kv_pool_bytes, 22.27), p32.ranks[0].kv_pool_bytes / GiB
    assert close(p32.kv_cache_tokens, 162_144) and close(p32.max_concurrency, 4.95)
    assert close(p128.max_concurrency, 1.24)
    # 'consumed memory (weights + non-torch)' 5.4: weights + non-torch + sampler state + the held copy
    consumed = sum(_term(p32, n) for n in ("weights", "non-torch", "V2 sampler state", "the cold compile's"))
    assert close_gib(consumed, 5.4) and abs(consumed / GiB - 5.4) < 0.15, consumed / GiB


def test_rtx5090_v0_29_qwen3_4b_fp8_peak_and_graphs_match_the_log():
    # what the FP8 log does pin: 28.85 - 5.4 - 22.27 = 1.18 GiB for the peak and the CUDA-graph estimate together;
    # kvplan 0.724 + 0.461 = 1.185
    p = _rtx5090_029(True, 32768)
    got = _term(p, "activation peak") + _term(p, "CUDA graphs")
    assert abs(got / GiB - (0.92 * 31.36 - 5.4 - 22.27)) <= 0.05, got / GiB


# ----------------------------------------------------- PRO6000-020-QWEN35-35B: vLLM 0.20.0, RTX PRO 6000, LLM class


def test_rtx_pro_6000_v0_20_qwen3_5_35b_a3b_bf16_text_only_eager():
    cfg = json.loads((FIXTURES / "qwen3.6-35b-a3b-nvfp4.json").read_text())
    cfg.pop("quantization_config")  # the bf16 checkpoint
    spec = parse_config(cfg, "qwen3.5-35b-a3b")
    p = _plan(spec, get_gpu("RTX-PRO-6000"),
              "vllm serve Qwen/Qwen3.5-35B-A3B --dtype bfloat16 --max-model-len 4096 --gpu-memory-utilization 0.90 "
              "--enforce-eager --no-enable-prefix-caching --limit-mm-per-prompt '{\"image\": 0, \"video\": 0}'", "0.20",
              usage_context="llm")
    r = p.ranks[0]
    # 34.66 B parameters without the vision tower (not built in text-only mode) and the MTP layer: 64.56 GiB bf16 +
    # the 0.125 GiB rotary cache = 64.69 (logged 64.69); 16,384 batched tokens and 1,024 sampler rows at 95 GiB
    assert close_gib(r.weights_bytes, 64.69), r.weights_bytes / GiB
    # hybrid layout: 10 full-attention layers, the attention block raised to 1,056 tokens to match the GDN state page;
    # 0.90 x 94.97 - 64.69 - 4.59 peak - 0.25 non-torch = 15.95 GiB (logged 16.03: -0.08), 208,032 tokens (logged
    # 209,088: -0.5 %), 113.0x (113.57x)
    assert p.block_size == 1056
    assert close_gib(r.kv_pool_bytes, 16.03), r.kv_pool_bytes / GiB
    assert close(p.kv_cache_tokens, 209_088), p.kv_cache_tokens
    assert close(p.max_concurrency, 113.57), p.max_concurrency


# ------------------------------------------------------------ GB10-023-QWEN36-27B: vLLM 0.23.1 dev, DGX Spark (GB10)


def test_gb10_v0_23_qwen3_6_27b_nvfp4_weights_and_hybrid_layout():
    spec = parse_config(json.loads((FIXTURES / "qwen3.6-27b-nvfp4.json").read_text()), "qwen3.6-27b-nvfp4")
    standin = custom_gpu(121.69, 0.27, 100.0, name="GB10-standin", gpus_per_node=1)  # the layout is device-free
    p = _plan(spec, standin, "vllm serve nvidia/Qwen3.6-27B-NVFP4 --trust-remote-code --gpu-memory-utilization 0.70 "
              "--max-model-len 262144 --max-num-seqs 8 --max-num-batched-tokens 65536 --kv-cache-dtype fp8 "
              "--quantization modelopt --enable-prefix-caching --enable-chunked-prefill --async-scheduling", "0.23")
    r = p.ranks[0]
    # nvidia's mixed FP8 / NVFP4 checkpoint with its bf16 vision tower (0.86 GiB) and rotary table: kvplan 19.75 GiB,
    # logged 19.78
    assert close_gib(r.weights_bytes, 19.78), r.weights_bytes / GiB
    # 16 full-attention layers of fp8 K / V, the attention block raised to 1,568 tokens so a page holds one GDN state:
    # 51,380,224 B blocks; a 262,144-token request holds 174 of them. floor(47.84 GiB / 51,380,224 B) = 999 blocks;
    # int(999 / 174 x 262,144) = 1,505,068 = "GPU KV cache size: 1,505,068 tokens"; 999 / 174 = 5.74x
    assert (p.block_size, r.bytes_per_block, p.blocks_per_request) == (1568, 51_380_224, 174)
    blocks = int(47.84 * GiB) // r.bytes_per_block
    assert int(blocks / 174 * 262_144) == 1_505_068 and f"{blocks / 174:.2f}" == "5.74"


# ----------------------------------------------------------- WSL-0202-GEMMA4-26B: vLLM 0.20.2, the layout of the pool


def test_v0_20_2_gemma4_26b_a4b_fp8_kv_layout_from_the_logged_pool():
    # --kv-cache-memory pins the pool at the logged 4.58 GiB, so the plan's tokens and concurrency are the layout's.
    # kvplan's 0.20.1 line (0.20.1 - 0.20.2): 16-token blocks of 327,680 B (5 layers a KV-cache group, each page
    # padded to the sliding layers' 8 KV heads x 256 x 2 x 1 B), and a 256,000-token request needs 13,445 of them
    # (the sliding groups at their 1,024-token window, the full-attention group at the length: kvplan.plan's group
    # rule); 4.58 GiB / 327,680 B = 15,007 blocks -> 1.1162x ("1.12x") -> int(1.1162 x 256,000) = 285,741 tokens
    # (logged 286,007: -0.09 %, the 2-decimal pool's rounding)
    p = _plan(load_preset("gemma-4-26b-a4b"), get_gpu("H200"),
              "vllm serve nvidia/Gemma-4-26B-A4B-NVFP4 --max-model-len 256000 --gpu-memory-utilization 0.85 "
              "--kv-cache-dtype fp8_e4m3 --enable-prefix-caching --max-num-batched-tokens 16384 --max-num-seqs 2 "
              f"--kv-cache-memory {int(4.58 * GiB)}", "0.20.1")
    assert (p.block_size, p.ranks[0].bytes_per_block, p.blocks_per_request) == (16, 327_680, 13_445)
    assert f"{p.max_concurrency:.2f}" == "1.12"
    assert close(p.kv_cache_tokens, 286_007), p.kv_cache_tokens


# --------------------------------------------------- M3-023-TP2: vLLM 0.23.1 dev, MiniMax-M3 MSA layout at TP 2


def test_v0_23_minimax_m3_tp2_msa_layout_from_the_logged_pool():
    spec = parse_config(json.loads((FIXTURES / "minimax-m3.json").read_text()), "minimax-m3")
    p = _plan(spec, get_gpu("B200"), "vllm serve ./M3-rtn-auto-vllm --tensor-parallel-size 2 --max-model-len 8192 "
              "--max-num-batched-tokens 32768 --max-num-seqs 128 --gpu-memory-utilization 0.8 --dtype bfloat16 "
              f"--no-enable-prefix-caching --kv-cache-memory {int(16.81 * GiB)}", "0.23")
    r = p.ranks[0]
    # 128-token blocks (the MSA sparse block) of 9,732,096 B a rank (76,032 B a token), an 8,192-token request 64 of
    # them: floor(16.81 GiB / 9,732,096 B) = 1,854 blocks = 237,312 tokens ("237,312"), 1,854 / 64 = 28.97x (exact)
    assert (p.block_size, r.bytes_per_block, p.blocks_per_request) == (128, 9_732_096, 64)
    assert p.kv_cache_tokens == 237_312 and f"{p.max_concurrency:.2f}" == "28.97"
