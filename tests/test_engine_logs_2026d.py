"""Public vLLM start-up logs of 2026 H2 reproduced from their launch inputs (issue 11, the fourth 2026 round).

Tolerances as tests/test_engine_logs.py: memory within max(1 %, 0.25 GiB), tokens and concurrency within 1 %. A miss is
a strict xfail whose reason gives logged vs kvplan and the term thought to be off. No log here is pinned elsewhere in
tests/ (file ids, issue / PR numbers, models and dates grepped 2026-12-01). Where the search index names no repository
for a file, its file id (read_file) is the citation.

Sources (all read 2026-12-01):
- GPU16-026-QWEN05B: a Korean study note on an LLM-inference book's chapter 2 (index file id 69421856836; it links
  github.com/orca3/llm-model-inference ch02), its streaming example run 2026-08-02: vLLM "v0.26.0" (engine banner),
  ``AsyncEngineArgs(model="Qwen/Qwen2.5-0.5B", dtype="float16", tensor_parallel_size=1, gpu_memory_utilization=0.9,
  max_num_batched_tokens=32768, max_num_seqs=256)``, "Using V2 Model Runner", FLASH_ATTN (FA2), max model len 32768 (the
  checkpoint's), prefix caching on, FULL_AND_PIECEWISE graphs up to 512; one 16 GB card: "Free memory on device
  (15.32/15.55 GiB)".
- TURING24-028-QWEN15B: a macro-gate campaign log of a vLLM fork for sm_75 (index file id 67109588529, "agentic-vllm
  ... sm75-marlin/turing_lab", run 2026-09-07), arm BRIDGE_ATTN tp=1: vLLM "v0.28.1rc1.dev50+gcac8a75a7.d20260828" (a
  dev build of 0.28.1 with its own sm_75 attention backend; the memory accounting is upstream's), offline ``LLM`` with
  non-default args dtype float16, max_model_len 4096, enable_prefix_caching False, gpu_memory_utilization 0.9,
  enforce_eager True, attention_backend BRIDGE_ATTN, model Qwen/Qwen2.5-1.5B-Instruct (snapshot 989aa798); "Chunked
  prefill is enabled with max_num_batched_tokens=8192" (the LLM-class default, typed in below), "Using V2 Model
  Runner"; one 24 GB Turing card: "Free memory on device (23.3/23.47 GiB)".
- A4000-026-QWEN15B: Podwarden/vllm-warden documents/INSTALL.md (commit 95b7f9b7d0ff3838c30b0b5b8276395bc313f447, a
  trial of release v2026.09.06.5): Qwen/Qwen2.5-1.5B-Instruct registered with max_model_len 8192 on GPU 0, "NVIDIA RTX
  A4000 (16376 MiB)", at "the *default* gpu_memory_utilization of 0.9"; the engine answers with system_fingerprint
  "vllm-0.26.0-..."; "[gpu_worker.py:560] Available KV cache memory: 10.55 GiB", "[kv_cache_utils.py:2177] GPU KV cache
  size: 395,264 tokens"; the same card's start-up error in the same trial gives vLLM's total, "Free memory on device
  cuda:0 (1.65/15.6 GiB)". The argv is app/runtime/cmd_builder.py build_vllm_args (commit 0f85011c48b4...): --model,
  --host, --port, --served-model-name, --tensor-parallel-size 1, --gpu-memory-utilization, --max-model-len,
  --scheduling-policy priority (no dtype, quantization or max_num_seqs on this row).
- GB200-GLM52-TP4: a GLM-5.2-NVFP4 start-up log (index file id 61511710941; run 2026-08-20 under
  /wireless/minyusong/glm_5_2): vLLM "v0.26.0", GlmMoeDsaForCausalLM, quantization modelopt_fp4 (432.90 GiB checkpoint),
  tensor_parallel_size 4 with expert parallelism (64 of 256 experts a rank), max_seq_len 819200, kv_cache_dtype
  fp8_e4m3 ("standard fp8 KV cache format", FLASHINFER_MLA_SPARSE), compile range to 8192 (the batched-token cap, typed
  in as --max-num-batched-tokens 8192: the 184 GiB card's default would be 16384), FULL_AND_PIECEWISE graphs
  to 512, mnnvl all-reduce; "Free memory on device (181.84/184.31 GiB)" (a GB200), util 0.92; "Model loading took
  106.69 GiB"; "Estimated CUDA graph memory: 4.99 GiB total"; "Available KV cache memory: 50.62 GiB"; "GPU KV cache
  size: 1,139,456 tokens"; "Maximum concurrency for 819,200 tokens per request: 1.39x"; "Actual usage is 106.69 GiB
  for weight, 6.31 GiB for peak activation, 0.95 GiB for non-torch memory, and 4.13 GiB for CUDAGraph memory" (169.56
  - 106.69 - 6.31 - 0.95 - 4.99 = 50.62). The layout and the profile's terms are planned here with the bf16
  glm-5.2 fixture; the weights and the pool with nvidia's own config, the glm-5.2-nvfp4 preset, in
  tests/test_presets_2026b.py (106.09 vs 106.69 GiB a rank with the DSA top-k buffer; the pool a strict xfail).
- RTX5090-QWEN38-EAGER: vllm-project/recipes models/Qwen/Qwen3.8-27B.yaml (commit
  015a26cb06e8cd628a4b56433e05c34a1782b920; added by recipes#810, 2026-08-15), guide section "1x RTX 5090 - NVFP4
  needs --enforce-eager": vLLM 0.26.1rc1.dev608+g99a10304d, ``vllm serve Inferact/Qwen3.8-27B-NVFP4
  --tensor-parallel-size 1 --max-model-len 32768 --kv-cache-dtype fp8 --enforce-eager --reasoning-parser qwen3``; "KV
  pool at 32K context: 91,022 tokens with --enforce-eager alone; 135,926 adding --language-model-only; 152,917 also
  capping --max-num-seqs 8; 76,458 with bf16 KV instead of fp8". Inferact's build is uniform W4A4 NVFP4
  (26,381,249,312 B on disk), not nvidia's mixed FP8 / NVFP4 (20.42 GiB, the qwen3.6-27b-nvfp4 fixture, the only
  Qwen3.8-27B-shaped NVFP4 config at hand), so the absolute pools are not pinned here; what the four runs pin is the
  layout (each token figure is a whole block count) and the pool's changes between them, which the weights' common
  part cancels out of.
"""

import json
from pathlib import Path

import pytest

from kvplan import parse_config
from kvplan.gpus import custom_gpu, get_gpu
from kvplan.units import GiB
from tests.test_engine_logs import close, close_gib
from tests.test_engine_logs_dec import _plan
from tests.test_engine_logs_found import _term

PRESETS = Path(__file__).parent.parent / "kvplan" / "presets"
FIXTURES = Path(__file__).parent / "fixtures" / "configs"


def _qwen2_5(name: str, **fields):
    """A Qwen2.5 checkpoint: its config.json's shape fields typed in over the Qwen2 architecture of the qwen2.5-7b
    preset (as tests/test_engine_budget_02x.py does for Qwen2.5-0.5B-Instruct)."""
    cfg = json.loads((PRESETS / "qwen2.5-7b.json").read_text())
    cfg.update(tie_word_embeddings=True, max_position_embeddings=32768, vocab_size=151936, **fields)
    return parse_config(cfg, name)


# ----------------------------------------------------------------------------- GPU16-026-QWEN05B: vLLM 0.26.0, 16 GB

GPU16_026 = "vllm serve Qwen/Qwen2.5-0.5B --dtype float16 --tensor-parallel-size 1 --gpu-memory-utilization 0.9 " \
            "--max-num-batched-tokens 32768 --max-num-seqs 256"


def test_gpu16_v0_26_qwen2_5_0_5b_pool_tokens_concurrency():
    # Qwen/Qwen2.5-0.5B config.json: 24 layers, hidden 896, 14 / 2 heads of 64, intermediate 4864, tied, 32768
    # positions. Logged: "Model loading took 0.93 GiB"; "Available KV cache memory: 11.94 GiB"; "GPU KV cache size:
    # 1,043,072 tokens"; "Maximum concurrency for 32,768 tokens per request: 31.83x"; "Desired GPU memory utilization is
    # (0.9, 13.99 GiB). Actual usage is 0.93 GiB for weight, 1.06 GiB for peak activation, 0.07 GiB for non-torch
    # memory, and 0.4 GiB for CUDAGraph memory" (13.99 - 0.93 - 1.06 - 0.07 = 11.93: the graphs are not subtracted
    # before 0.29). A token is 24 x 2 (K, V) x 2 heads x 64 x 2 B = 12,288 B; 11.94 GiB / 12,288 B = 1,043,333 tokens
    # before the 16-token block floor. kvplan: 0.92 / 11.94 GiB (+0.00) / 1,043,120 tokens (+0.005 %) / 31.83x; its
    # parts: peak 0.88 (-0.18), non-torch 0.25 (+0.18), each inside 0.25 GiB
    gpu = custom_gpu(15.55, 1.0, 165, name="16GB-card", gpus_per_node=1)  # the card's logged total; no name in the log
    spec = _qwen2_5("qwen2.5-0.5b", hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                    num_attention_heads=14, num_key_value_heads=2, max_window_layers=24)
    p = _plan(spec, gpu, GPU16_026, "0.26")
    r = p.ranks[0]
    assert r.kv_bytes_per_token == 24 * 2 * 2 * 64 * 2 == 12_288
    assert close_gib(r.weights_bytes, 0.93), r.weights_bytes / GiB
    assert close_gib(_term(p, "activation peak"), 1.06)
    assert close_gib(r.kv_pool_bytes, 11.94), r.kv_pool_bytes / GiB
    assert close(p.kv_cache_tokens, 1_043_072), p.kv_cache_tokens
    assert close(p.max_concurrency, 31.83), p.max_concurrency


# ----------------------------------------------------------------------------- TURING24-028-QWEN15B: 0.28.1 dev, 24 GB

TURING24_028 = "vllm serve Qwen/Qwen2.5-1.5B-Instruct --dtype float16 --max-model-len 4096 " \
               "--no-enable-prefix-caching --gpu-memory-utilization 0.9 --enforce-eager --max-num-batched-tokens 8192"


def test_turing24_v0_28_1_dev_qwen2_5_1_5b_eager_pool_tokens_concurrency():
    # Qwen/Qwen2.5-1.5B-Instruct config.json: 28 layers, hidden 1536, 12 / 2 heads of 128, intermediate 8960, tied.
    # Logged: "Model loading took 2.98 GiB"; "Available KV cache memory: 17.36 GiB"; "GPU KV cache size: 650,208 tokens,
    # Maximum concurrency for 4,096 tokens per request: 158.74x"; "Desired GPU memory utilization is (0.9, 21.12 GiB).
    # Actual usage is 3.25 GiB for consumed memory (weights + non-torch), 0.5 GiB for peak activation, and 0.0 GiB for
    # CUDAGraph memory" (21.12 - 3.25 - 0.5 = 17.37). A token is 28 x 2 x 2 x 128 x 2 B = 28,672 B; 17.36 GiB / 28,672
    # B = 650,120 tokens. kvplan: 2.97 (-0.01; 1.54 B parameters x 2 B + 91 MiB of allocator blocks, kvplan.vllm_alloc:
    # gate_up 52.5 -> 54 and down 26.25 -> 28 MiB a layer, kept whole under the load's max_split_size_mb 20) / 17.35
    # GiB (-0.01) / 649,648 tokens (-0.09 %) / 158.61x (-0.08 %); before the max_split rule 2.88 (-0.10) / 17.44 /
    # 652,976 (+0.43 %); peak 0.40 (-0.10). Without the LLM-class 8192 batched tokens (the server's 2048) kvplan plans
    # a 0.10 GiB peak and 17.74 GiB (+0.38, a miss): the typed-in flag is the log's own line
    gpu = custom_gpu(23.47, 1.0, 130, name="24GB-Turing", gpus_per_node=1)  # the card's logged total
    spec = _qwen2_5("qwen2.5-1.5b-instruct", hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                    num_attention_heads=12, num_key_value_heads=2, max_window_layers=21)
    p = _plan(spec, gpu, TURING24_028, "0.28")
    r = p.ranks[0]
    assert r.kv_bytes_per_token == 28 * 2 * 2 * 128 * 2 == 28_672
    assert close_gib(r.weights_bytes, 2.98), r.weights_bytes / GiB
    assert close_gib(_term(p, "activation peak"), 0.5)
    assert close_gib(r.kv_pool_bytes, 17.36), r.kv_pool_bytes / GiB
    assert close(p.kv_cache_tokens, 650_208), p.kv_cache_tokens
    assert close(p.max_concurrency, 158.74), p.max_concurrency


# -------------------------------------------------------------------------- A4000-026-QWEN15B: vLLM 0.26.0, RTX A4000

A4000_026 = "vllm serve --model Qwen/Qwen2.5-1.5B-Instruct --host 127.0.0.1 --port 10000 --served-model-name " \
            "qwen2.5-1.5b --tensor-parallel-size 1 --gpu-memory-utilization 0.9 --max-model-len 8192 " \
            "--scheduling-policy priority"


@pytest.mark.xfail(strict=True, reason=(
    "Qwen2.5-1.5B on the RTX A4000, 0.26.0 defaults: 388,800 tokens vs 395,264 logged (-1.6 %), pool 10.38 vs 10.55 "
    "GiB (-0.17): kvplan's weights are 2.97 GiB, the 2.98 this model logs on 0.28 (Turing, above) and 0.30 "
    "(tests/test_engine_logs_2026f.py), so the 0.17 GiB are in kvplan's 0.44 peak + 0.25 non-torch on this card (the "
    "log prints neither). It passed at -0.79 % while the weights were 0.09 GiB light (the allocator's whole blocks "
    "under the load's max_split_size_mb 20, kvplan.vllm_alloc, not counted)"))
def test_a4000_v0_26_qwen2_5_1_5b_server_defaults_pool_and_tokens():
    # 28,672 B a token (the Turing test above); 395,264 tokens = 24,704 blocks of 16 = 10.555 GiB ("10.55"). The server
    # defaults: 2048 batched tokens, 256 sampler rows, prefix caching on, FULL_AND_PIECEWISE graphs (not subtracted
    # before 0.29). kvplan: 0.9 x 15.6 - 2.97 weights - 0.44 peak - 0.25 non-torch = 10.38 GiB (-0.17), 388,800
    # tokens (-1.6 %), 47.46x at 8192 (no concurrency line quoted)
    gpu = custom_gpu(15.6, 1.0, 150, name="RTX-A4000", gpus_per_node=1)  # vLLM's total for this card, as logged
    spec = _qwen2_5("qwen2.5-1.5b-instruct", hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                    num_attention_heads=12, num_key_value_heads=2, max_window_layers=21)
    p = _plan(spec, gpu, A4000_026, "0.26")
    assert close_gib(p.ranks[0].kv_pool_bytes, 10.55), p.ranks[0].kv_pool_bytes / GiB
    assert close(p.kv_cache_tokens, 395_264), p.kv_cache_tokens


# --------------------------------------------------------------------------- RTX5090-QWEN38-EAGER: 0.26.1 dev, RTX 5090

RTX5090_EAGER = "vllm serve Inferact/Qwen3.8-27B-NVFP4 --tensor-parallel-size 1 --max-model-len 32768 " \
                "--enforce-eager --reasoning-parser qwen3"


def _rtx5090_eager(extra: str = " --kv-cache-dtype fp8"):
    # planned as "0.28": the dev build carries prefix caching on for hybrids (Mamba "align" mode), as the dev1108 build
    # of tests/test_engine_logs_2026c.py; the token figures below are whole block counts only with align's 2 pages a
    # GDN group (27 blocks a request), not with 0.26.0's 1 (24)
    spec = parse_config(json.loads((FIXTURES / "qwen3.6-27b-nvfp4.json").read_text()), "qwen3.6-27b-nvfp4")
    return _plan(spec, get_gpu("RTX-5090"), RTX5090_EAGER + extra, "0.28")


def test_rtx5090_eager_qwen38_layout_reads_every_token_line_as_whole_blocks():
    # fp8 KV: 1568-token blocks of 16 x 1568 x 4 KV heads x 256 x 2 x 1 B = 51,380,224 B; a 32,768-token request holds
    # ceil(32,768 / 1568) = 21 attention blocks + 3 GDN groups x 2 align pages = 27. bf16 KV: the same page at 784
    # tokens, 42 + 6 = 48 blocks a request. "GPU KV cache size" = int(blocks / per-request x 32,768):
    # 75 blocks -> 91,022 (eager); 112 -> 135,926 (+ --language-model-only); 126 -> 152,917 (+ --max-num-seqs 8);
    # 112 bf16 blocks -> 76,458 (the bf16 run is the --language-model-only one: the same 112-block pool)
    fp8, bf16 = _rtx5090_eager(), _rtx5090_eager(extra="")
    assert (fp8.block_size, fp8.blocks_per_request) == (1568, 27)
    assert (bf16.block_size, bf16.blocks_per_request) == (784, 48)
    assert fp8.ranks[0].bytes_per_block == bf16.ranks[0].bytes_per_block == 51_380_224
    for blocks, per_request, logged in ((75, 27, 91_022), (112, 27, 135_926), (126, 27, 152_917), (112, 48, 76_458)):
        assert int(blocks / per_request * 32_768) == logged


def _blocks(p) -> int:
    return p.ranks[0].kv_pool_bytes // p.ranks[0].bytes_per_block


def test_rtx5090_eager_qwen38_max_num_seqs_8_frees_the_sampler_rows():
    # logged: 112 -> 126 blocks, +14 x 51,380,224 B = +0.67 GiB (each count floored: 13 - 15 blocks, 0.62 - 0.72 GiB)
    # when --max-num-seqs 8 replaces the default 256 sampler rows of the profile run (kvplan.vllm_args default for
    # this card). kvplan: activation peak 0.90 -> 0.27 GiB, 184 -> 197 blocks, +0.63 GiB
    lmo = _rtx5090_eager(" --kv-cache-dtype fp8 --language-model-only")
    seqs8 = _rtx5090_eager(" --kv-cache-dtype fp8 --language-model-only --max-num-seqs 8")
    freed = seqs8.ranks[0].kv_pool_bytes - lmo.ranks[0].kv_pool_bytes
    assert close_gib(freed, 14 * 51_380_224 / GiB), freed / GiB
    assert _blocks(seqs8) - _blocks(lmo) == 13


@pytest.mark.xfail(strict=True, reason=(
    "--language-model-only frees logged 37 blocks (75 -> 112, 1.77 GiB; 1.72 - 1.82 with the floors), kvplan 45 (139 "
    "-> 184, 2.13 GiB, +0.36): its vision tower 0.86 GiB (bf16, from nvidia's config) plus the encoder step's peak "
    "over the LM's, 2.17 - 0.90 = 1.27 GiB (kvplan.vllm_mm, one image item of the maximum feature size, an estimate: "
    "65,536 patches x 2 B x 13h (3h + Qwen2_5_VisionAttention's 10h of locals) + 0.34 inputs and outputs). Two "
    "unknowns, one equation: freed = tower + step - 0.90, so a 0.50 GiB tower at kvplan's step, or kvplan's tower "
    "at a 1.81 GiB step, closes it. The step: the 0.29.0 Qwen2_5_VisionAttention.forward holds qkv 3h + the "
    "contiguous q/k 2h + their rotated copy 2h + the context and its contiguous copy 2h (v's contiguous copy, if the "
    "kernel wrapper makes one, is freed on return), 9h - 10h, and 9h would free 1.99 (+0.22); but the 0.20.0 "
    "Qwen3.6-35B-A3B log on a 32 GB Blackwell (tests/test_vllm_mm_qwen.py, the same ViT: 27 blocks of hidden 1152, "
    "intermediate 4304, 16-px patches, merge 2, the same 16,384-token image) is already +0.88 GiB with the step as "
    "the peak and needs a larger step, not a smaller one, and the dev build's source is not the 0.29.0 file. The "
    "tower: nvidia's mixed FP8 / NVFP4 build keeps it bf16; Inferact's 'uniform W4A4' build (26,381,249,312 B on "
    "disk) may quantize it (NVFP4 would be ~0.24 GiB: freed ~1.51, -0.26), and its config.json is not at hand"))
def test_rtx5090_eager_qwen38_language_model_only_frees_the_tower_and_encoder_peak():
    eager = _rtx5090_eager()
    lmo = _rtx5090_eager(" --kv-cache-dtype fp8 --language-model-only")
    freed = lmo.ranks[0].kv_pool_bytes - eager.ranks[0].kv_pool_bytes
    assert close_gib(freed, 37 * 51_380_224 / GiB), freed / GiB


# ----------------------------------------------------------------------------- GB200-GLM52-TP4: vLLM 0.26.0, 4 x GB200

GB200_GLM52 = "vllm serve /wireless/public/models/GLM-5.2-NVFP4 --trust-remote-code --tensor-parallel-size 4 " \
              "--enable-expert-parallel --max-model-len 819200 --kv-cache-dtype fp8_e4m3 " \
              "--gpu-memory-utilization 0.92 --max-num-batched-tokens 8192"


def _gb200_glm52():
    spec = parse_config(json.loads((FIXTURES / "glm-5.2.json").read_text()), "glm-5.2")
    gb200 = get_gpu("GB200").model_copy(update={"memory_bytes": round(184.31 * GiB)})  # as this card logs it
    return _plan(spec, gb200, GB200_GLM52, "0.26")


def test_gb200_glm52_tp4_dsa_layout_reads_the_tokens_and_concurrency_lines_from_the_logged_pool():
    # MLA + DSA indexer, fp8: 64-token blocks of 3,052,800 B (47,700 B a token: the 576 B fp8 latent on 78 layers + the
    # indexer's 128 B fp8 key and 4 B scale on its 21 'full' layers, 78 x 576 + 21 x 132); an 819,200-token request
    # holds 12,800 blocks.
    # floor(50.62 GiB / 3,052,800 B) = 17,804 blocks = 1,139,456 tokens = "GPU KV cache size: 1,139,456 tokens";
    # 17,804 / 12,800 = 1.391 = "1.39x"
    p = _gb200_glm52()
    r = p.ranks[0]
    assert (p.block_size, r.bytes_per_block, p.blocks_per_request) == (64, 3_052_800, 12_800)
    blocks = int(50.62 * GiB) // r.bytes_per_block
    assert blocks * 64 == 1_139_456 and f"{blocks / 12_800:.2f}" == "1.39"


def test_gb200_glm52_tp4_profile_peak_is_the_sampler_plus_the_dsa_workspace():
    # logged peak activation 6.31 GiB (8192 batched tokens, 1024 sampler rows at 184 GiB); kvplan: 3.79 (the forward
    # and the FlashInfer sampler's rows) + 2.53 (the DSA indexer workspace for 819,200 tokens) = 6.32; non-torch 0.95
    # logged vs kvplan 1.17 (inside 0.25). Neither depends on the weights' format
    p = _gb200_glm52()
    assert close_gib(_term(p, "activation peak") + _term(p, "DSA indexer workspace"), 6.31)
    assert close_gib(_term(p, "non-torch memory"), 0.95)


@pytest.mark.xfail(strict=True, reason=(
    "CUDA-graph estimate: logged 4.99 GiB (\"Estimated CUDA graph memory\", PIECEWISE 51 + FULL 51 to 512, the V1 "
    "runner's profile_cudagraph_memory; 4.13 actual), kvplan 2.00 (-2.99): its per-graph growth (256 KiB a layer a "
    "graph with experts, fitted to H100 logs) is below what 78 DSA layers with NVFP4 FLASHINFER_TRTLLM MoE and mnnvl "
    "all-reduce fusion capture here (~50 MiB a graph); term thought off: the per-graph bytes of the DSA / MoE layers"))
def test_gb200_glm52_tp4_cuda_graph_estimate():
    assert close_gib(_term(_gb200_glm52(), "CUDA graphs"), 4.99)
