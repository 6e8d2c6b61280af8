"""Public vLLM start-up logs reproduced from their launch inputs (the second 2026-12-02 round: Qwen3 dense, GLM-5.1,
gpt-oss).

Tolerances as tests/test_engine_logs.py: memory within max(1 %, 0.25 GiB), tokens and concurrency within 1 %. None of
these sources is pinned elsewhere in tests/ (issue numbers, index file ids and the logged figures grepped 2026-12-02).
Issue threads are cited by repository and number (the search index shows excerpts of them, read 2026-12-02);
code-corpus files by their search-index file id, as in tests/test_engine_logs_dec02.py.

Sources:
- ISSUE33263: vllm-project/vllm issue #33263 "[Feature]: Prevent overallocation of kv-cache" (2026-01-28): offline
  ``LLM(model="Qwen/Qwen3-1.7B", max_num_seqs=1, max_model_len=1024)`` on an unnamed "24 GB GPU", log lines
  gpu_worker.py:358 / kv_cache_utils.py:1305 (the 0.14 - 0.15 builds of that month): "Available KV cache memory:
  18.78 GiB", "GPU KV cache size: 175,856 tokens". Qwen3-1.7B is not a kvplan preset; its text shapes are typed in
  below from the model card's config.json fields (28 layers, hidden 2048, 16 heads / 8 KV heads of 128, intermediate
  6144, tied 151,936 vocabulary, bf16). The layout is pinned from the logged pool; the pool from the flags is a strict
  xfail (no 24 GB card holds 18.78 GiB of KV here at the default 0.9: see the test).
- GLM51-TCPXO: a GKE A3 Mega guide "GPUDirect-TCPXO Benchmarks on GKE A3 Mega (H100)" (index file id 53523624431):
  zai-org/GLM-5.1 (GlmMoeDsaForCausalLM), 2 nodes x 8 H100 Mega 80GB, TP 8 + PP 2, "fp8 weights + fp8 KV cache",
  max context 202,752, vLLM 0.19.0 (V1, Ray). Logged: "GPU KV cache size: 858,048 tokens", "Maximum concurrency for
  202,752 tokens per request: 4.23x". The deployment YAML (gpu-memory-utilization) is not in the file, so the layout is
  pinned from the logged tokens (a whole number of 64-token DSA blocks), not the pool.
- A100-40-GPTOSS: a script's notes (index file id 53067131107): ``LLM(model="openai/gpt-oss-20b", dtype="bfloat16",
  quantization="mxfp4", max_model_len=8192, gpu_memory_utilization=0.95, enable_prefix_caching=True)`` on an
  "NVIDIA A100-SXM4-40GB": "Model loading took 13.72 GiB memory and 32.300566 seconds" (the release is not named;
  the MXFP4 Marlin weights are the same on every line from 0.10.2). Only the weights line is quoted.
- LLAMA-A100-40: a Korean GCE walkthrough "Google Cloud Compute Engine에서 vLLM 구동 학습자료" (index file id
  34342936495; the same text under id 34465769645): an a2-highgpu-1g (one A100 40GB), vLLM 0.15.1, offline
  ``LLM(model=".../Meta-Llama-3.1-8B-Instruct/")`` with non-default args {'disable_log_stats': True, 'enforce_eager':
  True} (max model len 131072, "Chunked prefill is enabled with max_num_batched_tokens=8192"): "Model loading took
  14.99 GiB memory", "Available KV cache memory: 19.28 GiB", "GPU KV cache size: 157,936 tokens", "Maximum
  concurrency for 131,072 tokens per request: 1.20x" (log of 2026-02-06).
- LLAMA-FT-0.15: a fine-tuning project's serve log (index file id 62837958212, 2026-02-19): vLLM 0.15.1, a
  Llama-3.1-8B DPO fine-tune (LlamaForCausalLM, 4 shards, "Model loading took 14.99 GiB"), non-default args {'host':
  '0.0.0.0', 'model': 'models/final_dpo', 'trust_remote_code': True, 'max_model_len': 8192, 'served_model_name':
  [...], 'enable_prefix_caching': True}, "max_num_batched_tokens=2048" (the under-70 GiB serve default), CUDA graphs
  FULL_AND_PIECEWISE to 512: "Available KV cache memory: 26.43 GiB", "GPU KV cache size: 216,512 tokens", "Maximum
  concurrency for 8,192 tokens per request: 26.43x". The card is not named (2048 batched tokens put it under 70 GiB;
  26.43 + 14.99 + 1.18 activation + 0.13 non-torch = 42.73 GiB = 0.9 x 47.48 GiB, a 48 GB Ampere card's figure), so
  the layout is pinned from the logged pool.
- LLAMA-0.19-PARSER: a log parser's docstring "verified against real vLLM v0.19.0 logs" (index file id 52973536494):
  Llama-3.1-8B figures "Model loading took 14.99 GiB", "Available KV cache memory: 58.11 GiB", "GPU KV cache size:
  476,000 tokens", "Maximum concurrency for 8,192 tokens per request: 58.11x" (no card or flags given): the layout
  from the logged pool.
- QWEN3-8B-5090: a Korean research log "STEPS 결과 — overcommit×duty 트레이드오프 연구" (index file id 67163912157,
  2026-07-19): one RTX 5090 (32,607 MiB), vLLM 0.24.0, ``CUDA_VISIBLE_DEVICES=0 vllm serve Qwen/Qwen3-8B
  --max-model-len 32768 --gpu-memory-utilization 0.92 --port 8100`` with VLLM_USE_FLASHINFER_SAMPLER=0 and
  VLLM_ATTENTION_BACKEND=FLASH_ATTN; 2048 batched tokens / 256 sequences (logged): "Model loading took 15.27 GiB",
  "GPU KV cache size: 89,040 tokens" (kv_cache_utils.py:2146) on the first boot and "C_total=95,936 at runtime" on
  the later boots of the same server ("CUDA graph 캐시 여부에 따른": the author's reading, a warm compile cache).
- QWEN32-A40-EMU: a blog post on splitting Qwen3-32B over two 48 GB cards (index file id 57905766703; the same post's
  widget, id 58059006495): 2 x "NVIDIA RTX PRO 6000 Blackwell Server Edition 95.01 GiB sm_120" (no NVLink), vllm
  0.27.1, vllm/vllm-openai:latest, ``Qwen/Qwen3-32B --gpu-memory-utilization 0.426 --max-model-len 32768`` (0.426
  emulates an A40's 40.5 GiB budget) at ``--tensor-parallel-size 1`` ("Model loading took 61.03 GiB", "Available KV
  cache memory: -24.42 GiB", "ValueError: No available memory for the cache blocks"), ``--tensor-parallel-size 2``
  (30.59 GiB a worker, "Available KV cache memory: 8.22 GiB", "GPU KV cache size: 67,296 tokens", 2.05x) and
  ``--pipeline-parallel-size 2`` (30.52 GiB a stage, 6.92 GiB, 56,640 tokens, 1.73x).
- LLAVA-MISTRAL-H100: an offline VLM script's log (index file id 34680831065, 2025-09-23): vLLM 0.10.2, one H100
  80GB ("Free memory on device (78.66/79.19 GiB)"), ``LLM(model='llava-hf/llava-v1.6-mistral-7b-hf',
  max_model_len=4096)``: "Model loading took 14.0786 GiB", "Available KV cache memory: 55.15 GiB", "GPU KV cache
  size: 451,744 tokens", "Maximum concurrency for 4,096 tokens per request: 110.29x". LLaVA-NeXT is not a kvplan
  preset; its language model is Mistral-7B-Instruct-v0.2 (32 layers, 8 KV heads of 128, no sliding window: v0.1's
  4,096-token window is gone in v0.2), typed in below, so the KV layout is pinned from the logged pool, not the
  budget (its vision tower and image profile are not planned).
- GEMMA3-1B-0.13: an inference-engine comparison's notes (index file id 45665312624; a second run in id 45405743641):
  vLLM 0.13.0, offline ``LLM(model='google/gemma-3-1b-it', max_model_len=2048, gpu_memory_utilization=0.95)``
  ("max_num_batched_tokens=8192", CUDA graphs FULL_AND_PIECEWISE to 512): "Model loading took 1.9148 GiB",
  "Available KV cache memory: 25.39 GiB", "Add 2 padding layers, may waste at most 9.09% KV cache memory", "GPU KV
  cache size: 950,864 tokens", "Maximum concurrency for 2,048 tokens per request: 461.21x" (2026-01-16). The card is
  not named, so the hybrid sliding-window layout is pinned from the logged pool (an RTX 5090 at 0.95 gives 25.34 GiB
  in kvplan, the only listed card near it).
"""

import pytest

from kvplan import load_preset, parse_config
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.units import GiB
from kvplan.vllm_args import parse_vllm_command
from tests.test_engine_logs import close, close_gib

# Qwen/Qwen3-1.7B's config.json fields that size memory (typed in, not a verbatim checkpoint)
QWEN3_1_7B = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 2048,
              "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
              "intermediate_size": 6144, "vocab_size": 151936, "tie_word_embeddings": True,
              "max_position_embeddings": 40960, "torch_dtype": "bfloat16", "rms_norm_eps": 1e-6,
              "rope_theta": 1000000}


def _qwen3_1_7b_plan(version: str, gpu: str = "RTX-4090", pool_gib: float | None = None):
    # LLM(...) is the offline entrypoint: vLLM's "llm" usage context
    fields = {"vllm_version": version, "max_num_seqs": 1, "max_model_len": 1024, "usage_context": "llm"}
    if pool_gib is not None:
        fields["kv_cache_memory_bytes"] = round(pool_gib * GiB)
    return plan(parse_config(QWEN3_1_7B, "qwen3-1.7b"), get_gpu(gpu), EngineConfig(**fields), Layout())


# ----------------------------------------------------------------------------- ISSUE33263: Qwen3-1.7B, 0.14 - 0.15


@pytest.mark.parametrize("version", ["0.14", "0.15"])
def test_issue33263_qwen3_1_7b_layout_from_the_logged_pool(version):
    # 28 layers x 8 KV heads x 128 x (K + V) x 2 B = 114,688 B a token; 16-token blocks of 1,835,008 B.
    # 18.78 GiB = 20,164,979,179 B // 1,835,008 = 10,988 blocks = 175,808 tokens (-0.03 % on the logged 175,856 =
    # 10,991 blocks = 18.7832 GiB, inside the 2-decimal rounding of "18.78")
    p = _qwen3_1_7b_plan(version, pool_gib=18.78)
    assert p.ranks[0].kv_bytes_per_token == 114_688 and p.block_size == 16
    assert p.ranks[0].bytes_per_block == 1_835_008 and p.num_blocks == 10_988
    assert p.kv_cache_tokens == 175_808 and close(p.kv_cache_tokens, 175_856)
    assert 18.775 * GiB <= 10_991 * 1_835_008 < 18.785 * GiB


@pytest.mark.xfail(strict=True, reason=(
    "vllm#33263, Qwen3-1.7B offline on an unnamed '24 GB GPU', 0.14 - 0.15, default gpu_memory_utilization 0.9: "
    "kvplan on an RTX 4090 (23.64 GiB) gives 17.35 GiB against the logged 18.78 (-1.43 GiB; RTX 3090 17.28, -1.50). "
    "The logged pool needs >= 18.78 + 3.22 weights + 0.58 activation + 0.13 non-torch = 22.71 GiB inside the budget, "
    "i.e. >= 25.2 GiB of device memory at 0.9 (24.6 GiB even with no activation peak at all): no 24 GB card has that "
    "(an RTX 4090 has 23.64), so the card or the utilization is not what the issue states. Not fixed: no engine rule "
    "explains it"))
def test_issue33263_qwen3_1_7b_pool_from_the_flags():
    p = _qwen3_1_7b_plan("0.15")
    assert close_gib(p.ranks[0].kv_pool_bytes, 18.78)


# ----------------------------------------------------------------------------- GLM51-TCPXO: 0.19.0, TP 8 x PP 2

GLM51 = ("vllm serve zai-org/GLM-5.1 --tensor-parallel-size 8 --pipeline-parallel-size 2 --quantization fp8 "
         "--kv-cache-dtype fp8 --max-model-len 202752")


def test_glm51_tp8_pp2_h100_v0_19_layout_behind_the_tokens_line():
    # GLM-5.1 DSA at TP 8, fp8 KV: 656 B of MLA latent + 132 B of fp8 indexer key a layer and token, 39 layers a PP
    # stage (78 / 2): 30,732 B a token, 64-token blocks of 1,966,848 B. 858,048 = 13,407 blocks x 64 exactly; a
    # 202,752-token request is 3,168 blocks: 13,407 / 3,168 = 4.232x, the logged "4.23x". Those blocks are 24.56 GiB
    # a rank (the stage with less room sets them; the file does not say the utilization, so the pool is not pinned)
    args = parse_vllm_command(GLM51)
    assert not args.unknown
    fields = {**args.engine_fields(), "vllm_version": "0.19", "kv_cache_memory_bytes": 13_407 * 1_966_848}
    p = plan(load_preset("glm-5.1"), get_gpu("H100-SXM"), EngineConfig(**fields), Layout(tp=8, pp=2))
    assert p.start_error is None and p.block_size == 64
    assert [r.bytes_per_block for r in p.ranks[:2]] == [1_966_848, 1_966_848]
    assert p.num_blocks == 13_407 and p.blocks_per_request == 3_168
    assert p.kv_cache_tokens == 858_048 and f"{p.max_concurrency:.2f}" == "4.23"
    assert round(13_407 * 1_966_848 / GiB, 2) == 24.56


# ----------------------------------------------------------------------------- A100-40-GPTOSS: weights


def test_gpt_oss_20b_a100_40gb_weights():
    # MXFP4 experts on Marlin (A100 has no native FP4): kvplan 13.70 GiB against the logged 13.72 (-0.1 %), the same
    # figure the A100 80GB 0.19 log of tests/test_engine_logs_dec.py reads
    p = plan(load_preset("gpt-oss-20b"), get_gpu("A100-40GB"),
             EngineConfig(vllm_version="0.11", max_model_len=8192, gpu_memory_utilization=0.95, usage_context="llm"),
             Layout())
    assert close_gib(p.ranks[0].weights_bytes, 13.72) and abs(p.ranks[0].weights_bytes / GiB - 13.70) < 0.01


# ----------------------------------------------------------------------------- Llama-3.1-8B: 0.15.1 and 0.19


def test_llama31_8b_a100_40gb_v0_15_offline_eager():
    # 39.39 GiB x 0.9 = 35.45 - 14.99 weights - 0.03 rotary table - 1.23 activation (8192 batched tokens, 256 sampler
    # rows) - 0.13 non-torch = 19.10 GiB (logged 19.28, -0.18); 156,480 tokens (-0.92 %), 1.19x (1.1938 vs 1.20)
    p = plan(load_preset("llama-3.1-8b"), get_gpu("A100-40GB"),
             EngineConfig(vllm_version="0.15", enforce_eager=True, usage_context="llm"), Layout())
    assert close_gib(p.ranks[0].weights_bytes, 14.99) and close_gib(p.ranks[0].kv_pool_bytes, 19.28)
    assert p.kv_cache_tokens == 156_480 and close(p.kv_cache_tokens, 157_936)
    assert close(p.max_concurrency, 1.20) and abs(p.ranks[0].kv_pool_bytes / GiB - 19.10) < 0.01


LLAMA_FT = ("vllm serve models/final_dpo --host 0.0.0.0 --trust-remote-code --max-model-len 8192 "
            "--served-model-name kp-astrology-llama --enable-prefix-caching")


@pytest.mark.parametrize("command, version, pool, tokens, conc", [
    (LLAMA_FT, "0.15", 26.43, 216_512, "26.43"),
    ("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192", "0.19", 58.11, 476_000, "58.11")],
    ids=["finetune-0.15", "parser-0.19"])
def test_llama31_8b_layout_from_the_logged_pool(command, version, pool, tokens, conc):
    # 32 layers x 8 KV heads x 128 x (K + V) x 2 B = 131,072 B a token, 16-token blocks of 2,097,152 B, 512 blocks an
    # 8,192-token request. 26.43 GiB // 2,097,152 = 13,532 blocks = 216,512 tokens and 13,532 / 512 = 26.43x, as logged;
    # 58.11 GiB // 2,097,152 = 29,752 blocks = 476,032 tokens (+0.007 %: the logged 476,000 = 29,750 blocks = 58.105
    # GiB, inside the rounding of "58.11") and 58.11x
    args = parse_vllm_command(command)
    assert not args.unknown
    fields = {**args.engine_fields(), "vllm_version": version, "kv_cache_memory_bytes": round(pool * GiB)}
    p = plan(load_preset("llama-3.1-8b"), get_gpu("H100-SXM"), EngineConfig(**fields), Layout())
    assert p.ranks[0].bytes_per_block == 2_097_152 and p.blocks_per_request == 512
    assert close(p.kv_cache_tokens, tokens) and f"{p.max_concurrency:.2f}" == conc


# ----------------------------------------------------------------------------- QWEN3-8B-5090: 0.24.0, cold and warm


@pytest.mark.parametrize("cache, tokens, pool", [("cold", 89_040, 12.23), ("warm", 95_936, 13.17)])
def test_qwen3_8b_rtx5090_v0_24_cold_and_warm_compile(cache, tokens, pool):
    # 31.36 GiB x 0.92 = 28.85 - 15.27 weights - 0.25 non-torch - 0.47 CUDA graphs (0.24 profiles them inside the
    # budget) - activation: a cold torch.compile benchmarks a random 151,936 x 4,096 bf16 copy of the embedding
    # (1.16 GiB, the SM 12.0 held copy) where a warm cache skips it (0.18 GiB of the 2048-token dummy run) = 12.17 GiB
    # (88,640 tokens, -0.45 %) cold and 13.15 GiB (95,776, -0.17 %) warm; the logged tokens are 12.23 / 13.17 GiB of
    # 147,456 B (36 layers x 8 KV heads x 128 x 2 x 2 B)
    cmd = "vllm serve Qwen/Qwen3-8B --max-model-len 32768 --gpu-memory-utilization 0.92 --port 8100"
    args = parse_vllm_command(cmd)
    fields = {**args.engine_fields(), "vllm_version": "0.24", "compile_cache": cache, "sampler": "pytorch"}
    p = plan(load_preset("qwen3-8b"), get_gpu("RTX-5090"), EngineConfig(**fields), Layout())
    assert p.ranks[0].kv_bytes_per_token == 147_456 and round(tokens * 147_456 / GiB, 2) == pool
    assert close_gib(p.ranks[0].weights_bytes, 15.27)
    assert close(p.kv_cache_tokens, tokens) and close_gib(p.ranks[0].kv_pool_bytes, pool)


# ----------------------------------------------------------------------------- QWEN32-A40-EMU: 0.27.1, TP 1 / TP 2 / PP 2

QWEN32 = "vllm serve Qwen/Qwen3-32B --gpu-memory-utilization 0.426 --max-model-len 32768 --port 8000 "


def _qwen32(extra: str, layout: Layout):
    args = parse_vllm_command(QWEN32 + extra)
    assert not args.unknown
    fields = {**args.engine_fields(), "vllm_version": "0.27"}
    return plan(load_preset("qwen3-32b"), get_gpu("RTX-PRO-6000"), EngineConfig(**fields), layout)


def test_qwen32_tp1_refused_with_the_logged_deficit():
    # 94.97 x 0.426 = 40.46 - 61.03 weights - 1.45 activation (8192 batched tokens) - 0.25 non-torch - 0.62 V2
    # sampler state - 1.45 cold-compile embedding copy (SM 12.0) - 0.91 CUDA graphs = -24.34 GiB (logged -24.42)
    p = _qwen32("--tensor-parallel-size 1", Layout(tp=1))
    assert close_gib(p.ranks[0].weights_bytes, 61.03) and close_gib(p.ranks[0].kv_pool_bytes, -24.42)
    assert "No available memory for the cache blocks" in p.start_error


def test_qwen32_tp2_pool_tokens_concurrency():
    # a rank: 30.59 weights; the activation peak is the LM head's all-gather of the 1,024 dummy sampler rows
    # (kvplan.engines.vllm_v2_dummy_sampler_bytes): 1,024 x (151,936 / 2 + 2 x 151,936) x 2 = 777,912,320 B + the
    # hidden states 8,192 x 5,120 x 2 = 83,886,080 -> 861,798,400 B, above the forward's 838,860,800; 8.2035 GiB KV
    # (8.22), 131,072 B a token: 67,200 tokens (-0.14 %; 67,376 / +0.12 % with the forward as the peak), 2.051x (2.05)
    p = _qwen32("--tensor-parallel-size 2", Layout(tp=2))
    assert close_gib(p.ranks[0].weights_bytes, 30.59) and close_gib(p.ranks[0].kv_pool_bytes, 8.22)
    assert p.kv_cache_tokens == 67_200 and close(p.kv_cache_tokens, 67_296) and close(p.max_concurrency, 2.05)


def test_qwen32_pp2_pool_tokens_concurrency():
    # a stage holds 32 layers (30.52 GiB each, as logged); the first stage's pool is the smaller (6.97 GiB against the
    # logged 6.92: its profile run holds the cold-compile embedding copy), 262,144 B x 32 / 64 = 131,072 B a token:
    # 57,072 tokens (+0.76 %), 1.742x (1.73, +0.7 %)
    p = _qwen32("--pipeline-parallel-size 2", Layout(pp=2))
    assert [round(r.weights_bytes / GiB, 2) for r in p.ranks] == [30.52, 30.52]
    assert close_gib(min(r.kv_pool_bytes for r in p.ranks), 6.92)
    assert p.kv_cache_tokens == 57_072 and close(p.kv_cache_tokens, 56_640) and close(p.max_concurrency, 1.73)


# ----------------------------------------------------------------------------- LLAVA-MISTRAL-H100: 0.10.2, the layout

# mistralai/Mistral-7B-Instruct-v0.2's config.json fields that size the KV (typed in; sliding_window null)
MISTRAL_7B_V02 = {"architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 4096,
                  "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                  "intermediate_size": 14336, "vocab_size": 32000, "max_position_embeddings": 32768,
                  "rope_theta": 1000000.0, "sliding_window": None, "torch_dtype": "bfloat16",
                  "tie_word_embeddings": False}


def test_llava_mistral_7b_h100_v0_10_2_layout_from_the_logged_pool():
    # Mistral-7B-v0.2's cell (full attention): 32 x 8 x 128 x 2 x 2 B = 131,072 B a token, 2,097,152 B a 16-token block, 256 blocks a
    # 4,096-token request. 55.15 GiB // 2,097,152 = 28,236 blocks = 451,776 tokens (+0.007 %: the logged 451,744 =
    # 28,234 blocks, a pool of 55.145 - 55.1465 GiB, printed "55.15"); 28,236 / 256 = 110.30x (logged 110.29)
    fields = {"vllm_version": "0.10.2", "max_model_len": 4096, "usage_context": "llm",
              "kv_cache_memory_bytes": round(55.15 * GiB)}
    p = plan(parse_config(MISTRAL_7B_V02, "mistral-7b-instruct-v0.2"), get_gpu("H100-SXM"), EngineConfig(**fields),
             Layout())
    assert p.ranks[0].bytes_per_block == 2_097_152 and p.blocks_per_request == 256
    assert p.num_blocks == 28_236 and close(p.kv_cache_tokens, 451_744) and close(p.max_concurrency, 110.29)
    assert 28_234 * 2_097_152 <= 55.145 * GiB < 28_235 * 2_097_152  # a pool that prints 55.15 and holds 28,234


# ----------------------------------------------------------------------------- GEMMA3-1B-0.13: the hybrid layout


def test_gemma3_1b_v0_13_hybrid_layout_from_the_logged_pool():
    # 26 layers (22 with a 512-token window, 4 global), 1 KV head x 256: every layer 1 x 256 x 2 x 2 B = 1,024 B a
    # token, 16-token pages of 16,384 B; vLLM's hybrid manager pads the 22 + 4 layers into groups of 4 (the logged "2
    # padding layers": 28 slots, 7 groups) and a block holds one page of each of 4 tensors: 65,536 B. 25.39 GiB //
    # 65,536 = 415,989 blocks; a 2,048-token request needs 128 pages of the global group + 6 x 129 of the window
    # groups (vLLM's sliding spec counts cdiv(min(511 + 8,192 batched tokens, 2,048), 16) + 1 = 129) = 902 blocks:
    # 415,989 / 902 = 461.19x (logged 461.21) and 950,832 tokens (logged 950,864, -0.003 %)
    fields = {"vllm_version": "0.13", "max_model_len": 2048, "gpu_memory_utilization": 0.95, "usage_context": "llm",
              "kv_cache_memory_bytes": round(25.39 * GiB)}
    p = plan(load_preset("gemma-3-1b-it"), get_gpu("RTX-5090"), EngineConfig(**fields), Layout())
    assert p.ranks[0].bytes_per_block == 65_536 and p.blocks_per_request == 902 and p.num_blocks == 415_989
    assert close(p.kv_cache_tokens, 950_864) and close(p.max_concurrency, 461.21)
    assert close_gib(p.ranks[0].weights_bytes, 1.9148)
