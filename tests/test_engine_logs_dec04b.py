"""Public vLLM start-up logs of dense and multimodal models (the 2026-12-04 round b): Qwen3-32B bf16 on one
Blackwell workstation card (vLLM 0.19.0), Gemma-3-27B-it with its vision tower on a 192 GB AMD ROCm device (a
0.11.0rc2 build) and the text tower of Gemma-4-E2B on an L4 (vLLM 0.21.0), each reproduced from its launch inputs.

Tolerances as tests/test_engine_logs.py: memory within max(1 %, 0.25 GiB), tokens and concurrency within 1 %. A miss
would be a strict xfail giving logged vs kvplan and what was found about the gap; all three sources here pass. None
is pinned elsewhere in tests/ (their index file ids and the logged token figures, with and without commas, grepped
2026-12-04). Code-corpus files are cited by their search-index file id, as in tests/test_engine_logs_dec02.py.

Sources (read 2026-12-04):
- PRO6000-019-QWEN3-32B: a router project's experiment record "Nimbus v3 - experiment record & handoff (July 2026)"
  (index file id 67117542301), section 5a "dense-model campaign": "Qwen3-32B on physical GPU2, FLASH_ATTN,
  `--max-num-seqs 128`, `gpu-memory-utilization 0.95`" giving "GPU KV cache size: 112,064 tokens" and "Maximum
  concurrency for 40,960 tokens per request: 2.74x" (40,960 is Qwen3-32B's own max_position_embeddings: no
  --max-model-len). The release: the record's server recipe names "vLLM v0.19.0" and the dense leg notes "vLLM v0.19
  rejects UUIDs in CUDA_VISIBLE_DEVICES" on the same box. The card: the recipe sets --attention-backend TRITON_ATTN as
  a "Blackwell sm_120 PTX workaround", so an SM 12.0 card (RTX 5090 32 GB, RTX PRO 4000 - 6000); a bf16 Qwen3-32B
  (61 GiB of weights) with a 27 GiB pool beside it fits only the 96 GB RTX PRO 6000, which kvplan plans. The weights
  and the pool in GiB are not in the record, so the token and concurrency lines are pinned, and the pool the token
  line implies (whole 16-token blocks).
- MI300-011-GEMMA3-27B: a "vLLM API Server Startup Log (Example)" (index file id 9297248278), a docker-compose log
  on ROCm ("Automatically detected platform rocm", "Using Triton Attention backend on V1 engine"), "vLLM API server
  version 0.11.0rc2.dev98+g393de22d2" (2025-09-25; its kv_cache_utils.py:1087 / :1091 lines are the 0.11.0 wheel's,
  so kvplan's 0.11 line), non-default args {'model': '/google/gemma-3-27b-it', 'max_model_len': 4096,
  'limit_mm_per_prompt': {'image': 2}} (so utilization 0.9, bf16, TP 1, and the >= 70 GiB server defaults: the log's
  "max_num_batched_tokens=8192", 1024 sequences), "Model loading took 51.7891 GiB", "Encoder cache will be
  initialized with a budget of 8192 tokens, and profiled with 31 image items", "Available KV cache memory: 109.86
  GiB", "Add 8 padding layers, may waste at most 15.38% KV cache memory", "GPU KV cache size: 205,696 tokens",
  "Maximum concurrency for 4,096 tokens per request: 50.05x", "num_gpu_blocks is: 89994". The device is not named;
  51.79 + 109.86 = 161.65 GiB inside a 0.9 budget puts its total between 179.6 GiB and the next ROCm size up (the
  256 GB MI325X would leave 68 GiB unexplained), i.e. a 192 GB MI300X-class device, which kvplan's MI300X entry
  (191.98 GiB) stands for.
- L4-021-GEMMA4-E2B: a test report "Google Gemma 4 E2B 不量化測試報告" (2026-05-29; index file id 55764159779):
  "vLLM: v0.21.0", "GPU: NVIDIA L4 23034 MiB", the compose file's ``google/gemma-4-E2B --served-model-name
  google/gemma-4-E2B --host 0.0.0.0 --language-model-only --max-model-len 8192 --gpu-memory-utilization 0.90
  --enforce-eager`` (no --quantization; the log's "dtype=torch.bfloat16", "quantization=None"), and the load lines
  "Checkpoint size: 9.54 GiB", "Model loading took 8.89 GiB memory", "Available KV cache memory: 9.92 GiB", "GPU KV
  cache size: 1,062,157 tokens", "Maximum concurrency for 8,192 tokens per request: 129.66x". The text config is
  the E2B checkpoint's text_config as another project transcribed it from the fetched config.json (index file id
  59897965653; the same fields in index file 53939116010, and the geometry tests/test_family_gemma.py pins): 35
  layers (4 sliding : 1 full), 1 KV head of 256 (full layers 512), the last 20 layers sharing KV, per-layer inputs
  of 256 over a 262,144-row table, sliding window 512, double-wide MLP, tied embeddings, max_position_embeddings
  131072, full-attention RoPE with partial_rotary_factor 0.25.
"""

from kvplan import parse_config
from kvplan.gpus import get_gpu
from kvplan.units import GiB
from tests.test_engine_logs import close, close_gib
from tests.test_engine_logs_2026 import _check, _term
from tests.test_engine_logs_dec03b import _plan

# ------------------------------------------------ PRO6000-019-QWEN3-32B: vLLM 0.19.0, one RTX PRO 6000, 40,960 tokens

Q32_CMD = ("vllm serve Qwen/Qwen3-32B --max-num-seqs 128 --gpu-memory-utilization 0.95 "
           "--attention-backend FLASH_ATTN")
# 64 layers x 8 KV heads x 128 x (K + V) x 2 B (bf16) = 262,144 B a token; 16-token blocks of 4 MiB
Q32_TOKEN = 64 * 8 * 128 * 2 * 2


def _q32(**extra):
    return _plan(Q32_CMD, "qwen3-32b", get_gpu("RTX-PRO-6000"), "0.19", **extra)


def test_pro6000_v0_19_qwen3_32b_the_token_line_as_whole_blocks():
    # 112,064 tokens = 7004 blocks of 16 (4,194,304 B each) = 29,377,953,792 B = 27.36 GiB of pool; 7004 x 16 /
    # 40,960 = 2.7359 -> "2.74x" as logged. With that pool kvplan reads the same tokens and concurrency
    assert Q32_TOKEN == 262_144 and 112_064 % 16 == 0 and 112_064 // 16 == 7004
    p = _q32(kv_cache_memory_bytes=7004 * 16 * Q32_TOKEN)
    assert p.block_size == 16 and p.ranks[0].kv_bytes_per_token == Q32_TOKEN
    assert p.num_blocks == 7004 and p.kv_cache_tokens == 112_064 and f"{p.max_concurrency:.2f}" == "2.74"


def test_pro6000_v0_19_qwen3_32b_pool_from_the_flags():
    # kvplan: 0.95 x 94.97 GiB (the card's cudaMemGetInfo total) = 90.22 - 61.03 weights (bf16, untied 151,936-row
    # embedding and lm_head) - 1.45 peak (the 8192-token forward and 128 sampler rows) - 0.25 non-torch =
    # 29,515,081,302 B = 27.49 GiB (the token line's 27.36: +0.13), 7036 blocks, 112,576 tokens (+0.46 %), 2.75x
    # (7036 / 7004 blocks: +0.46 %). 0.19 prints its CUDA-graph estimate (0.74 GiB) without subtracting it
    p = _q32()
    r = p.ranks[0]
    assert r.weights_bytes == 65_535_256_576 and r.kv_pool_bytes == 29_515_081_302
    assert p.num_blocks == 7036 and p.kv_cache_tokens == 112_576
    assert close_gib(r.kv_pool_bytes, 7004 * 16 * Q32_TOKEN / GiB)
    assert close(p.kv_cache_tokens, 112_064) and close(p.max_concurrency, 2.74)
    assert _term(p, "activation peak") == 1_555_824_640


# --------------------------------------------- MI300-011-GEMMA3-27B: vLLM 0.11.0rc2, a 192 GB ROCm device, 4096 tokens

G3_CMD = "vllm serve /google/gemma-3-27b-it --max-model-len 4096 --limit-mm-per-prompt '{\"image\": 2}'"
# 10 layers x 16 tokens x 16 KV heads x 128 x (K + V) x 2 B: one block across the 7 groups of 10 layers vLLM forms
# from Gemma 3's 52 sliding-window + 10 full-attention layers (52 -> 60 with the logged 8 padding layers)
G3_BLOCK = 10 * 16 * 16 * 128 * 2 * 2


def _g3(**extra):
    return _plan(G3_CMD, "gemma-3-27b-it", get_gpu("MI300X"), "0.11", **extra)


def test_mi300_v0_11_gemma3_27b_layout_from_the_logged_blocks():
    # 89,994 blocks x 1,310,720 B = 109.856 GiB ("109.86"); the token line is whole blocks per group: 89,994 // 7 =
    # 12,856 x 16 = 205,696; the concurrency line is blocks over a request's 6 x 257 sliding (1024-token window + 1
    # block) + 256 full = 1798 blocks: 89,994 / 1798 = 50.05x, both as logged
    assert G3_BLOCK == 1_310_720 and round(89_994 * G3_BLOCK / GiB, 2) == 109.86
    p = _g3(kv_cache_memory_bytes=89_994 * G3_BLOCK)
    assert p.ranks[0].bytes_per_block == G3_BLOCK and p.blocks_per_request == 6 * 257 + 256 == 1798
    assert p.num_blocks == 89_994 and p.kv_cache_tokens == 89_994 // 7 * 16 == 205_696
    assert f"{p.max_concurrency:.2f}" == "50.05"


def test_mi300_v0_11_gemma3_27b_from_the_flags():
    # kvplan: 0.9 x 191.98 GiB = 172.79 - 51.44 weights (the bf16 language model, its 0.79 GiB SigLIP tower, 0.28
    # rotary tables, 0.06 allocator rounding; logged 51.79: -0.35) - 12.40 peak (the 8192-token forward, 1024 sampler
    # rows over the 262,208-entry vocabulary, and the encoder's image items; logged budget less weights and pool:
    # 172.79 - 51.79 - 109.86 = 11.14 with non-torch) - 0.13 non-torch = 116,838,555,138 B = 108.81 GiB (-1.05,
    # inside 1 % = 1.10), 89,140 blocks, 203,744 tokens (-0.95 %), 49.58x (-0.94 %). All four inside the tolerance,
    # the pool and the tokens near its edge: the peak is where the 1.05 GiB sits (the weights are 0.35 of it)
    p = _g3()
    r = p.ranks[0]
    assert r.weights_bytes == 55_231_814_880 and r.kv_pool_bytes == 116_838_555_138
    assert p.num_blocks == 89_140 and p.kv_cache_tokens == 203_744
    assert _term(p, "activation peak") == 13_317_531_238
    _check(p, dict(weights=51.7891, kv=109.86, tokens=205_696, conc=50.05))


# ----------------------------------------------------------- L4-021-GEMMA4-E2B: vLLM 0.21.0, one L4, text tower, 8192

_S, _F = "sliding_attention", "full_attention"
# google/gemma-4-E2B's text_config (index file id 59897965653), the fields kvplan reads
E2B_TEXT = {
    "model_type": "gemma4_text", "attention_bias": False, "attention_k_eq_v": False, "enable_moe_block": False,
    "final_logit_softcapping": 30.0, "global_head_dim": 512, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
    "hidden_size": 1536, "hidden_size_per_layer_input": 256, "intermediate_size": 6144,
    "layer_types": ([_S] * 4 + [_F]) * 7, "max_position_embeddings": 131072, "num_attention_heads": 8,
    "num_hidden_layers": 35, "num_key_value_heads": 1, "num_kv_shared_layers": 20, "rms_norm_eps": 1e-6,
    "rope_parameters": {"full_attention": {"partial_rotary_factor": 0.25, "rope_theta": 1000000.0,
                                           "rope_type": "proportional"},
                        "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}},
    "sliding_window": 512, "tie_word_embeddings": True, "use_double_wide_mlp": True, "vocab_size": 262144,
    "vocab_size_per_layer_input": 262144, "torch_dtype": "bfloat16"}
E2B_CMD = ("vllm serve google/gemma-4-E2B --served-model-name google/gemma-4-E2B --host 0.0.0.0 "
           "--language-model-only --max-model-len 8192 --gpu-memory-utilization 0.90 --enforce-eager")
# 3 layers x 16 tokens x 1 KV head x 1024 (full: K + V of 512) x 2 B: one block over vLLM's 5 groups of 3 layers
# (12 sliding + 3 full layers cache; the 20 KV-sharing layers hold none)
E2B_BLOCK = 3 * 16 * 1 * 1024 * 2


def _e2b(**extra):
    return _plan(E2B_CMD, parse_config(E2B_TEXT, "gemma-4-e2b"), get_gpu("L4"), "0.21", **extra)


def test_l4_v0_21_gemma4_e2b_layout_from_the_logged_lines():
    # A request: 4 sliding groups of 32-token blocks (their 16,384 B pages doubled to the full layers' 32,768),
    # cdiv(511 + 2048, 32) + 1 = 81 each, and the full group cdiv(8192, 16) = 512: 836 blocks. 108,394 blocks
    # (10,655,563,776 B = 9.924 GiB, "9.92") read 108,394 / 836 = 129.66x and, 0.20.1+ printing int(concurrency x
    # max_model_len), int(108,394 x 8192 / 836) = 1,062,157 tokens: both as logged (108,393: 1,062,147; 108,395:
    # 1,062,167)
    assert E2B_BLOCK == 98_304 and round(108_394 * E2B_BLOCK / GiB, 2) == 9.92
    p = _e2b(kv_cache_memory_bytes=108_394 * E2B_BLOCK)
    assert p.ranks[0].bytes_per_block == E2B_BLOCK and p.blocks_per_request == 4 * 81 + 512 == 836
    assert p.num_blocks == 108_394 and p.kv_cache_tokens == 108_394 * 8192 // 836 == 1_062_157
    assert f"{p.max_concurrency:.2f}" == "129.66"
    assert [_e2b(kv_cache_memory_bytes=b * E2B_BLOCK).kv_cache_tokens for b in (108_393, 108_395)] == [
        1_062_147, 1_062_167]


def test_l4_v0_21_gemma4_e2b_from_the_flags():
    # kvplan: 0.9 x 22.03 GiB (the L4's cudaMemGetInfo total) = 19.83 - 8.81 weights (4,628,569,344 bf16 text
    # parameters, the per-layer-input table among them, = 8.62; 0.19 rotary tables of 131,072 positions; the
    # vision and audio towers skipped by --language-model-only: the checkpoint's 9.54 GiB less 8.62 is their 0.92)
    # - 0.94 peak (the < 70 GiB defaults: 2048 batched tokens, 256 sampler rows over 262,144 entries) - 0.25
    # non-torch = 10,554,161,329 B = 9.83 GiB (logged 9.92: -0.09), 107,362 blocks, 1,052,044 tokens (-0.95 %),
    # 128.42x (-0.95 %); weights 8.81 against 8.89 (-0.08). Eager: no graph estimate
    p = _e2b()
    r = p.ranks[0]
    assert r.weights_bytes == 4_628_569_344 * 2 + 201_326_592 + 3_145_728 == 9_461_611_008
    assert r.kv_pool_bytes == 10_554_161_329 and p.num_blocks == 107_362 and p.kv_cache_tokens == 1_052_044
    assert _term(p, "activation peak") == 1_004_871_352
    _check(p, dict(weights=8.89, kv=9.92, tokens=1_062_157, conc=129.66))
