"""Public vLLM start-up logs of Qwen3.8-27B-shaped hybrids (Gated DeltaNet + full attention) on 0.28 - 0.29 builds,
reproduced from their launch inputs (the 2026-12-03 round c: an RTX 5000 Ada at two context lengths, an 80 GiB AMD
ROCm device with and without MTP, a DGX Spark at 32K and 768K, an H100 at two --max-num-seqs, an H200 layout; and
Qwen2.5-7B-Instruct bf16 / FP8-dynamic on a WSL2 RTX 4090).

No public log of vLLM 0.32.0, 0.33.x or 0.34.0 was found in reach (searched 2026-12-03: the engine's own source line
numbers of those wheels, gpu_worker.py:759 / 772 / 795 "Available KV cache memory", kv_cache_utils.py:2327 / 1147 /
1168 "GPU KV cache size" and model_runner.py:424 / 428 / 441 "Model loading took", read in /tmp/whl/0.32.0 - 0.34.0;
the "Initializing a V1 LLM engine (v0.3x" banner; "vllm==0.33" / "vllm-openai:v0.33"; the issues corpus by release
and model family): the stored corpora end around 2026-10-10, before the 0.32.0 wheel (built 2026-10-17).

Tolerances as tests/test_engine_logs.py: memory within max(1 %, 0.25 GiB), tokens and concurrency within 1 %. A miss
is a strict xfail whose reason gives logged vs kvplan and what was found about the gap. None of these sources is
pinned elsewhere in tests/ (file ids and the logged token figures grepped 2026-12-03). Code-corpus files are cited by
their search-index file id, as in tests/test_engine_logs_dec02.py.

Sources (all read 2026-12-03):
- ADA32-028-QWEN38-FP8: an Italian endpoint record "Registrazione avvio endpoint 8001 @ max-model-len 16384" (index
  file id 68519422180, written 2026-09-13 01:54 CEST): "2 x NVIDIA RTX 5000 Ada Generation, 32760 MiB ciascuna"
  (nvidia-smi), vLLM 0.28.0 (section 16; the log's own lines gpu_worker.py:578 / kv_cache_utils.py:1869 are the
  0.28.0 wheel's), the command from /proc/<pid>/cmdline ``vllm serve Qwen/Qwen3.8-27B-FP8 --revision 017b9c7a...
  --tensor-parallel-size 1 --max-model-len 16384 --max-num-seqs 1 --gpu-memory-utilization 0.97
  --language-model-only --reasoning-parser qwen3 --seed 20260829 --generation-config vllm --enforce-eager
  --no-enable-prefix-caching --kernel-config {...}`` with VLLM_USE_FLASHINFER_SAMPLER=0, on GPU 0; "Available KV
  cache memory: 2.42 GiB", "GPU KV cache size: 34,133 tokens, Maximum concurrency for 16,384 tokens per request:
  2.08x"; the same flags at --max-model-len 7168 (2026-09-10, "solo --max-model-len 16384 (era 7168)"): "2.42 GiB",
  "GPU KV cache size: 27,569 tokens, Maximum concurrency for 7,168 tokens per request: 3.85x". The record itself
  notes that the token figure moves with --max-model-len at the same pool (the GDN state pages are a fixed charge a
  request: below). The card is not in kvplan.gpus and its cudaMemGetInfo total is not logged, so it is planned as a
  custom card over the totals the catalogued cards' nvidia-smi offsets allow (as tests/test_engine_logs_dec03b.py's
  RTX PRO 4000). No Qwen3.8-27B config.json is in reach; the qwen3.5-27b preset stands in (its fp8 weights at TP 2
  are recipes PR #810's "14.28 GiB" Qwen3.8-27B FP8 figure, tests/test_engine_logs_dec03b.py), the text-only plan
  (--language-model-only) dropping its vision tower.
- ROCM80-028-QWEN38-BF16: "vLLM validation receipts - 2026-08-16T19:00Z" (index file id 61120944849; a later copy
  of 60894101463), an AMD ROCm device (HIP: "GPU 0 has a total capacity of 80.00 GiB"; "Free memory on device
  (79.99/80.0 GiB)"), a source build at commit 4d2a68d64 ("Initializing a V1 LLM engine (v0.1.dev1+g4d2a68d64.
  d20260816)"; its lines gpu_worker.py:578 / kv_cache_utils.py:1869 / gpu_worker.py:804 are the 0.28.0 wheel's, so
  kvplan's "0.28" line), the bf16 Qwen3.8-27B with its vision tower, flags ``--served-model-name qwen3.8-27b
  --max-model-len 262144 --gpu-memory-utilization 0.92 --kv-cache-dtype auto --attention-backend TRITON_ATTN --dtype
  bfloat16 --port 8000 --skip-mm-profiling``: "Model loading took 51.1 GiB memory", "Available KV cache memory:
  19.54 GiB", "GPU KV cache size: 313,650 tokens, Maximum concurrency for 262,144 tokens per request: 1.20x", "CUDA
  graph pool memory: 0.71 GiB (actual), 1.55 GiB (estimated)", "Actual usage is 51.66 GiB for consumed memory
  (weights + non-torch), 2.4 GiB for peak activation, and 0.71 GiB for CUDAGraph memory"; the same with
  ``--speculative-config {"method":"mtp","num_speculative_tokens":1}``: "Model loading took 51.89 GiB memory",
  "18.53 GiB", "GPU KV cache size: 278,230 tokens, Maximum concurrency for 262,144 tokens per request: 1.06x" and
  "max_num_scheduled_tokens is set to 2048 based on the speculative decoding settings" (MTP adds no drafting slots,
  config/speculative.py max_num_new_slots_for_drafting in the 0.28.0 wheel, so that is max_num_batched_tokens: the
  engine took the < 70 GiB server defaults, 2048 batched tokens and 256 sequences, engine/arg_utils.py; 0.28.0's
  ROCm platform reads the device total from amdsmi, platforms/rocm.py get_device_total_memory, which on this device
  is below 70 GiB though HIP exposes 80). The device is not named (the path is /home/amd/...).
- H200-029-QWEN3X-27B-FP8: a server-log census test's "real H200 log" (index file id 68353222501, 09-21): vLLM 0.29
  lines (kv_cache_utils.py:2032, interface.py:918), "Chunked prefill is enabled with max_num_batched_tokens=8192",
  "Mamba cache mode is set to 'align' for Qwen3_5ForConditionalGeneration by default when prefix caching is
  enabled", "Cudagraph is disabled under eager mode", "Selected FlashInferFp8DeepGEMMDynamicBlockScaledKernel for
  Fp8LinearMethod" (a block-scaled FP8 checkpoint), "Setting attention block size to 784 tokens", "GPU KV cache size:
  1,400,832 tokens, Maximum concurrency for 32,768 tokens per request: 42.75x". Neither the checkpoint nor the
  utilization is in the excerpt, so only the layout is pinned: a 784-token page at TP 1 with bf16 KV is the 27B
  Qwen3.5 / 3.6 / 3.8 shape (the qwen3.5-27b preset; 1568 with fp8 KV, tests/test_engine_logs_2026d.py).
- GB10-027-QWEN38-BF16: a coding agent's session transcripts on a DGX Spark (index file ids 61316607224 "phase 1" and
  61222544093 "phase 2", 2026-08-23): "Free memory on device (112.26/119.63 GiB)", the FlashInfer autotune cache
  directory ".../0.6.16.post3/121a/..." (sm121: GB10) and ``free -h`` "Mem: 119Gi" (unified memory); vLLM 0.27 (its
  lines gpu_worker.py:563 / :726 / :789, gpu_model_runner.py:5405 / :6806, kv_cache_utils.py:2235 are the 0.27.0
  wheel's); the bf16 Qwen3.8-27B (/home/admin/models/qwen3.8-27b, 18 shards, "Checkpoint size: 51.75 GiB"). Phase 2:
  ``vllm serve /home/admin/models/qwen3.8-27b --port 8000 --trust-remote-code --no-enable-prefix-caching
  --max-model-len 786432 --gpu-memory-utilization 0.92 --hf-overrides {"text_config": {"rope_parameters": {...
  "rope_type": "yarn", ... "factor": 3.0, "original_max_position_embeddings": 262144}}} --enable-auto-tool-choice
  --tool-call-parser qwen3_xml --reasoning-parser qwen3``: "Model loading took 51.35 GiB memory", "Estimated CUDA
  graph memory: 1.94 GiB total", "Available KV cache memory: 50.29 GiB", "GPU KV cache size: 820,013 tokens",
  "Maximum concurrency for 786,432 tokens per request: 1.04x", "Actual usage is 55.99 GiB for consumed memory (weights
  + non-torch), 3.78 GiB for peak activation". Phase 1 (its command is not in the excerpt): "51.7 GiB", "GPU KV cache
  size: 786,432 tokens", "Maximum concurrency for 32,768 tokens per request: 24.00x". kvplan has no GB10 card (unified
  memory: the logged non-torch is 55.99 - 51.35 = 4.64 GiB), so only the layout and the weights are pinned.
- H100-0271-QWEN38-FP8: a model-serving folder's README, section "H100 (NVIDIA)" (index file id 65773950940): vLLM
  "0.27.1 (pip wheel, CUDA-only)", "H100 80GB HBM3, cc(9,0)", ``vllm serve Qwen/Qwen3.8-27B-FP8 --trust-remote-code
  --host 0.0.0.0 --port 8500 --max-model-len 8192 --max-num-seqs 256 --gpu-memory-utilization 0.90
  --served-model-name qwen38-27b-fp8``: "Selected FlashInferFp8DeepGEMMDynamicBlockScaledKernel for Fp8LinearMethod",
  "Model loading took 28.54 GiB memory", "GPU KV cache size: 485,083 tokens", "Maximum concurrency for 8,192 tokens
  per request: 59.21x"; and the same command without --max-num-seqs (the default 1024 of an H100 server) aborting at
  graph capture: "max_num_seqs (1024) exceeds available Mamba cache blocks (694)" (config/compilation.py in the
  0.27.0 wheel: the figure is kv_cache_config.num_blocks).
- RTX4090-WSL-0271-QWEN25-7B: a Korean study note "LLM 서빙의 병목과 필수 최적화 기법 - 실습 기록" (index file id
  61510271682; the author's other note, index file 61815222665, is tests/test_engine_logs_2026e.py's RTX4090-WSL-0271,
  the same RTX 4090 under WSL2 with vLLM 0.27.1 and its logged 23.99 GiB total): "모든 측정은 RTX 4090 24GB / WSL2
  Ubuntu 24.04", Lab 2 run 2026-08-22 through bench_local.sh, "모델 3종 순차 서빙(--max-model-len 8192
  --gpu-memory-utilization 0.92)", "env VLLM_USE_FLASHINFER_SAMPLER=0", "같은 모델·같은 vLLM 0.27.1" (its line
  kv_cache_utils.py:2235 is the 0.27.0 wheel's). Logged: Qwen/Qwen2.5-7B-Instruct "GPU KV cache size: 102,544
  tokens" (VRAM used 22,951 MiB), RedHatAI/Qwen2.5-7B-Instruct-FP8-dynamic "230,352 tokens" (23,792 MiB),
  Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4 "288,656 tokens" (23,859 MiB; not planned here: that checkpoint's
  quantization_config is not in reach). The configs: the qwen2.5-7b preset's shapes with the Instruct checkpoint's
  max_position_embeddings 32768 (tests/test_engine_logs.py QWEN2_7B note); the FP8-dynamic build's
  quantization_config is the ct-fp8-dynamic fixture (tests/test_engine_logs_sm120.py's RedHatAI FP8-dynamic).
"""

import json

import pytest

from kvplan import parse_config
from kvplan.gpus import custom_gpu, get_gpu
from kvplan.units import GiB
from tests.test_engine_logs import close, close_gib
from tests.test_engine_logs_2026e import FIXTURES, PRESETS
from tests.test_engine_logs_dec03b import _plan

# 16 full-attention layers x 784 tokens x 4 KV heads x 256 x (K + V) x 2 B (bf16): the 27B's page at TP 1, each of
# the 48 GDN layers' state padded to it (vLLM groups 1 attention + 3 GDN layers, 16 layers a group)
PAGE_784_BF16 = 16 * 784 * 4 * 256 * 2 * 2


# ---------------------------------------------------------------- ADA32-028-QWEN38-FP8: vLLM 0.28.0, RTX 5000 Ada

ADA_CMD = ("VLLM_USE_FLASHINFER_SAMPLER=0 vllm serve Qwen/Qwen3.8-27B-FP8 --revision "
           "017b9c7af6b5689d5dd426a76e0bc077eb5ca20a --served-model-name fot-exp2-consumer --host 127.0.0.1 "
           "--port 8001 --tensor-parallel-size 1 --max-model-len {} --max-num-seqs 1 --gpu-memory-utilization 0.97 "
           "--language-model-only --reasoning-parser qwen3 --seed 20260829 --generation-config vllm --enforce-eager "
           "--no-enable-prefix-caching --kernel-config "
           "'{{\"enable_flashinfer_autotune\":false,\"enable_jit_warmup\":false,\"enable_cutedsl_warmup\":false}}'")


def _ada(total_mib: int):
    """The RTX 5000 Ada (AD102, 32 GB GDDR6 at 0.576 TB/s, NVIDIA's datasheet) at an exposed total of ``total_mib``:
    nvidia-smi's 32,760 MiB less an offset (not logged; see the pool test)."""
    return custom_gpu(total_mib / 1024, 0.576, 65, name="RTX-5000-Ada", gpus_per_node=2)


def _ada_plan(max_model_len: int, total_mib: int = 32_760 - 500, **extra):
    # Qwen's block-scaled FP8 runs natively on Ada (sm89): kvplan's 'fp8' (the recipes PR #810 weights, above)
    return _plan(ADA_CMD.format(max_model_len), "qwen3.5-27b", _ada(total_mib), "0.28", weight_format="fp8", **extra)


@pytest.mark.parametrize("max_model_len, per_request, tokens, conc", [
    (16_384, 24, 34_133, "2.08"), (7168, 13, 27_569, "3.85")])
def test_ada32_v0_28_qwen38_fp8_layout_from_the_logged_pool(max_model_len, per_request, tokens, conc):
    # bf16 KV (no --kv-cache-dtype): 784-token blocks of 51,380,224 B. Prefix caching is off, so each of the 3 GDN
    # groups holds 1 state page a request (Mamba cache mode 'none'): cdiv(16,384, 784) = 21 + 3 = 24 blocks a request,
    # cdiv(7168, 784) = 10 + 3 = 13. The logged 2.42 GiB (a pool in [2.415, 2.425) GiB) // 51,380,224 = 50 blocks:
    # int(50 / 24 x 16,384) = 34,133 and 50 / 24 = 2.08x; int(50 / 13 x 7168) = 27,569 and 3.85x, both as logged:
    # the same 50 blocks read as 23.8 % more tokens at 16,384 because the 3 state pages are a fixed charge a request
    p = _ada_plan(max_model_len, kv_cache_memory_bytes=round(2.42 * GiB))
    assert p.block_size == 784 and p.ranks[0].bytes_per_block == PAGE_784_BF16 == 51_380_224
    assert p.blocks_per_request == per_request and p.num_blocks == 50
    assert p.kv_cache_tokens == tokens and f"{p.max_concurrency:.2f}" == conc
    assert all(int(g * GiB) // PAGE_784_BF16 == 50 for g in (2.415, 2.4249))


def test_ada32_v0_28_qwen38_fp8_pool_from_the_flags():
    # The card's cudaMemGetInfo total is not logged; nvidia-smi's 32,760 MiB less the 357 - 640 MiB the catalogued
    # cards show between the two (RTX 4090 357, RTX 3090 451, RTX 5090 494, RTX PRO 6000 638; the RTX PRO 4000 test
    # of tests/test_engine_logs_dec03b.py) is 32,120 - 32,403 MiB. Planned at 32,260 MiB (a 500 MiB offset) = 31.504
    # GiB: 0.97 x 31.504 = 30.559 - 27.544 weights (the text-only stand-in: fp8 linears of the 5120-wide, 64-layer
    # decoder, bf16 248,320-row embedding and lm_head; + 0.125 rotary) - 0.274 peak (the 2048-token forward of the
    # < 70 GiB server defaults, 1 sampler row) - 0.25 non-torch = 2,674,159,476 B = 2.49 GiB against the logged 2.42
    # (+0.07). Eager: no graph estimate; no torch.compile, so no cold-compile copy. Over the whole 32,120 - 32,403 MiB
    # range kvplan's pool is 2.36 - 2.63 GiB (every total within 0.25 GiB of the log), 49 - 54 blocks (logged 50)
    p = _ada_plan(16_384)
    assert p.ranks[0].weights_bytes == 29_575_660_480
    assert p.ranks[0].kv_pool_bytes == 2_674_159_476 and p.num_blocks == 52
    assert close_gib(p.ranks[0].kv_pool_bytes, 2.42)
    lo, hi = (_ada_plan(16_384, total_mib=m).ranks[0] for m in (32_760 - 640, 32_760 - 357))
    assert round(lo.kv_pool_bytes / GiB, 2) == 2.36 and round(hi.kv_pool_bytes / GiB, 2) == 2.63
    assert close_gib(lo.kv_pool_bytes, 2.42) and close_gib(hi.kv_pool_bytes, 2.42)
    assert lo.kv_pool_bytes // PAGE_784_BF16 <= 50 <= hi.kv_pool_bytes // PAGE_784_BF16


@pytest.mark.xfail(strict=True, reason=(
    "Qwen3.8-27B-FP8 on an RTX 5000 Ada, vLLM 0.28.0, util 0.97, eager, 1 sequence, text-only: kvplan's 2.49 GiB pool "
    "(at a 500 MiB nvidia-smi offset) is 52 blocks, 35,498 tokens at 16,384 (2.17x; logged 34,133, 2.08x: +4.0 %) and "
    "28,672 at 7168 (logged 27,569: +4.0 %). The pool is within 0.07 GiB (the test above), but 2 blocks of 49 MiB "
    "are 4 % of a 50-block pool: a 0.10 GiB residual moves the token figure past 1 %. The card's cudaMemGetInfo "
    "total is not logged (kvplan's 49 - 54 blocks over the plausible totals bracket the logged 50), nor are the "
    "weights ('Model loading took' is not in the record), so the residual cannot be split between the total and the "
    "stand-in preset's weights"))
@pytest.mark.parametrize("max_model_len, tokens", [(16_384, 34_133), (7168, 27_569)])
def test_ada32_v0_28_qwen38_fp8_tokens_from_the_flags(max_model_len, tokens):
    assert close(_ada_plan(max_model_len).kv_cache_tokens, tokens)


# ------------------------------------------------------ ROCM80-028-QWEN38-BF16: vLLM 0.28 source build, AMD 80 GiB

ROCM_CMD = ("vllm serve /home/amd/Desktop/Qwen3.8-27B-ROCm/models/Qwen3.8-27B --served-model-name qwen3.8-27b "
            "--max-model-len 262144 --gpu-memory-utilization 0.92 --kv-cache-dtype auto --attention-backend "
            "TRITON_ATTN --dtype bfloat16 --port 8000 --skip-mm-profiling")
ROCM_MTP = " --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":1}'"
# the server defaults this engine took (module docstring): kvplan reads the 80 GiB total and would pick 8192 / 1024
ROCM_DEFAULTS = " --max-num-batched-tokens 2048 --max-num-seqs 256"
ROCM80 = custom_gpu(80.0, 0.256, 59, name="AMD-ROCm-80GiB", gpus_per_node=1)  # HIP's logged total; the rest unread


def _rocm(extra: str = "", **fields):
    return _plan(ROCM_CMD + ROCM_DEFAULTS + extra, "qwen3.5-27b", ROCM80, "0.28", **fields)


def test_rocm80_v0_28_qwen38_bf16_weights_with_and_without_mtp():
    # bf16 Qwen3.8-27B (the qwen3.5-27b stand-in) with its vision tower (--skip-mm-profiling skips the encoder's
    # profile, not its weights): 54,849,772,000 B = 51.08 GiB against "Model loading took 51.1 GiB"; with MTP the
    # draft layer (its embedding and lm_head shared with the target) adds 0.79 GiB: 51.87 vs "51.89 GiB"
    plain, mtp = _rocm(), _rocm(ROCM_MTP)
    assert plain.ranks[0].weights_bytes == 54_849_772_000 and close_gib(plain.ranks[0].weights_bytes, 51.1)
    assert close_gib(mtp.ranks[0].weights_bytes, 51.89)
    assert round((mtp.ranks[0].weights_bytes - plain.ranks[0].weights_bytes) / GiB, 2) == 0.79


def test_rocm80_v0_28_qwen38_bf16_layout_from_the_logged_pool():
    # bf16 KV: 784-token blocks of 51,380,224 B; prefix caching on (the default), so 'align' holds 2 pages in each
    # of the 3 GDN groups: cdiv(262,144, 784) = 335 + 6 = 341 blocks a request. 19.54 GiB (a pool in [19.535, 19.545)
    # GiB) // 51,380,224 = 408 blocks; int(408 / 341 x 262,144) = 313,650 tokens and 408 / 341 = 1.20x, as logged
    p = _rocm(kv_cache_memory_bytes=round(19.54 * GiB))
    assert (p.block_size, p.ranks[0].bytes_per_block, p.blocks_per_request) == (784, PAGE_784_BF16, 341)
    assert p.num_blocks == 408 and p.kv_cache_tokens == 313_650 and f"{p.max_concurrency:.2f}" == "1.20"
    assert all(int(g * GiB) // PAGE_784_BF16 == 408 for g in (19.535, 19.5449))


def test_rocm80_v0_28_qwen38_bf16_mtp_layout_from_the_logged_pool():
    # With MTP the draft's full-attention layer joins the cache: kvplan's page is 800 tokens of 55,705,600 B and a
    # request holds cdiv(262,144, 800) = 328 + 9 = 337 blocks. 18.53 GiB // 55,705,600 = 357 blocks: int(357 / 337 x
    # 262,144) = 277,701 tokens, 1.06x, against the logged 278,230 and 1.06x (-0.19 %). Not exact: no whole
    # (blocks, blocks a request) pair near these at kvplan's page gives 278,230, so vLLM's MTP grouping differs in
    # some detail kvplan has not read; within 1 %
    p = _rocm(ROCM_MTP, kv_cache_memory_bytes=round(18.53 * GiB))
    assert (p.block_size, p.ranks[0].bytes_per_block, p.blocks_per_request) == (800, 55_705_600, 337)
    assert p.num_blocks == 357 and p.kv_cache_tokens == 277_701 and f"{p.max_concurrency:.2f}" == "1.06"
    assert close(p.kv_cache_tokens, 278_230)


def test_rocm80_v0_28_qwen38_bf16_transient_peak_is_the_warm_forward():
    # the log's "2.4 GiB for peak activation" is the transient plus the applied graph estimate (0.28.0
    # determine_available_memory adds cudagraph_memory_estimate_applied to peak_activation_memory, and the
    # gpu_worker.py:804 line prints that sum): 2.40 - 1.55 = 0.85 GiB; KV = 73.6 - 51.66 consumed - 2.40 = 19.54.
    # kvplan's forward of 2048 batched tokens with 256 sampler rows, without a cold compile's embedding copy: 0.90
    warm = _rocm(compile_cache="warm")
    peak = next(t.bytes for t in warm.ranks[0].terms if t.name.startswith("activation peak"))
    assert round(peak / GiB, 2) == 0.90 and close_gib(peak, 2.40 - 1.55)
    assert round(73.6 - 51.66 - 2.40, 2) == 19.54


@pytest.mark.xfail(strict=True, reason=(
    "Qwen3.8-27B bf16 on an 80 GiB AMD ROCm device, vLLM 0.28 source build, util 0.92, 262,144 tokens, TRITON_ATTN, "
    "--skip-mm-profiling, the engine's 2048 / 256 defaults: kvplan's pool is 18.77 GiB (392 blocks, 301,350 tokens, "
    "1.15x) against the logged 19.54 (408 blocks, 313,650, 1.20x): -0.77 GiB, -3.9 %; with MTP 17.82 vs 18.53 "
    "(266,811 vs 278,230 tokens, -4.1 %). The log splits the profile: weights 51.1 + non-torch 0.56 = 51.66, "
    "transient 0.85, graph estimate 1.55. kvplan's peak is 2.37 GiB: the cold torch.compile's random copy of the "
    "248,320 x 5120 bf16 embedding (the run compiled, 'compilation: 52.75 s'; on CUDA 0.28.0 that copy is the peak, "
    "tests/test_engine_logs_dec03b.py's KVROUTE cold / warm pair), but this ROCm build's transient is 0.85, kvplan's "
    "warm forward 0.90 (the test above): the copy was not held here, for a reason not read (the ROCm inductor path). "
    "At the warm peak kvplan's pool is 20.24 GiB (+0.70): the rest is non-torch 0.56 vs kvplan's 0.25 and the graph "
    "estimate 1.55 vs 1.13. Not re-fitted: one log of an unnamed ROCm device on a source build"))
@pytest.mark.parametrize("extra, pool_gib, tokens", [("", 19.54, 313_650), (ROCM_MTP, 18.53, 278_230)],
                         ids=["plain", "mtp"])
def test_rocm80_v0_28_qwen38_bf16_pool_from_the_flags(extra, pool_gib, tokens):
    p = _rocm(extra)
    assert close_gib(p.ranks[0].kv_pool_bytes, pool_gib) and close(p.kv_cache_tokens, tokens)


# ------------------------------------------------------------ H200-029-QWEN3X-27B-FP8: vLLM 0.29, H200, layout only

H200_CMD = ("vllm serve Qwen/Qwen3.6-27B-FP8 --max-model-len 32768 --max-num-batched-tokens 8192 --enforce-eager "
            "--enable-prefix-caching")


def test_h200_v0_29_qwen3x_27b_fp8_layout_reads_the_token_line_as_whole_blocks():
    # bf16 KV at TP 1: the logged 784-token page (51,380,224 B a block); 'align' with prefix caching: cdiv(32,768, 784)
    # = 42 + 3 groups x 2 = 48 blocks a request. 42.75x = 2052 / 48, and int(2052 / 48 x 32,768) = 1,400,832 tokens,
    # as logged (2051 blocks would read 1,400,149 and 42.73x; 2053 1,401,514 and 42.77x): the pool held 2052 blocks,
    # [98.19, 98.24) GiB. The checkpoint and the utilization are not in the excerpt, so no pool from flags is pinned
    p = _plan(H200_CMD, "qwen3.5-27b", get_gpu("H200"), "0.29", weight_format="fp8",
              kv_cache_memory_bytes=2052 * PAGE_784_BF16)
    assert (p.block_size, p.ranks[0].bytes_per_block, p.blocks_per_request) == (784, PAGE_784_BF16, 48)
    assert p.num_blocks == 2052 and p.kv_cache_tokens == 1_400_832 and f"{p.max_concurrency:.2f}" == "42.75"
    assert [int(b / 48 * 32_768) for b in (2051, 2053)] == [1_400_149, 1_401_514]


# ------------------------------------------------------------ GB10-027-QWEN38-BF16: vLLM 0.27, DGX Spark, 32K / 768K

GB10_CMD = ("vllm serve /home/admin/models/qwen3.8-27b --port 8000 --trust-remote-code --no-enable-prefix-caching "
            "--max-model-len {} --gpu-memory-utilization 0.92 --enable-auto-tool-choice --tool-call-parser qwen3_xml "
            "--reasoning-parser qwen3")
GB10 = custom_gpu(119.63, 0.273, 100, name="GB10-standin", gpus_per_node=1)  # the logged total; the layout reads none


@pytest.mark.parametrize("max_model_len, pool_gib, blocks, per_request, tokens, conc", [
    (32_768, 51.7, 1080, 45, 786_432, "24.00"), (786_432, 50.29, 1050, 1007, 820_013, "1.04")], ids=["32k", "768k"])
def test_gb10_v0_27_qwen38_bf16_layout_from_the_logged_pools(max_model_len, pool_gib, blocks, per_request, tokens,
                                                              conc):
    # bf16 KV, prefix caching off: 784-token blocks of 51,380,224 B and 1 state page in each of the 3 GDN groups.
    # 32K: 42 + 3 = 45 blocks a request; 51.7 GiB ([51.695, 51.705)) // 51,380,224 = 1080 blocks, 1080 / 45 = 24.00x,
    # int(24 x 32,768) = 786,432 tokens (with 'align''s 48 a request 786,432 tokens would need 1152 blocks = 55.1 GiB,
    # so phase 1 ran with prefix caching off too). 768K: cdiv(786,432, 784) = 1004 + 3 = 1007; 50.29 GiB // 51,380,224
    # = 1050 blocks, int(1050 / 1007 x 786,432) = 820,013 tokens, 1.04x: both as logged. A pool printed "50.29" holds
    # 1050 or 1051 blocks ([50.285, 50.295) GiB); 1051 would read 820,794 tokens, so the log's pool held 1050
    p = _plan(GB10_CMD.format(max_model_len), "qwen3.5-27b", GB10, "0.27", kv_cache_memory_bytes=round(pool_gib * GiB))
    assert (p.block_size, p.ranks[0].bytes_per_block, p.blocks_per_request) == (784, PAGE_784_BF16, per_request)
    assert p.num_blocks == blocks and p.kv_cache_tokens == tokens and f"{p.max_concurrency:.2f}" == conc
    lo, hi = (int(g * GiB) // PAGE_784_BF16 for g in (pool_gib - 0.005, pool_gib + 0.0049))
    assert [b for b in range(lo, hi + 1) if int(b / per_request * max_model_len) == tokens] == [blocks]


def test_gb10_v0_27_qwen38_bf16_weights():
    # the bf16 stand-in with its vision tower: 54,849,772,000 B = 51.08 GiB against "Model loading took 51.35 GiB"
    # (-0.27, inside 1 % of 51.35). The --hf-overrides YaRN factor 3 is not planned (kvplan.vllm_args: edit the
    # config instead); kvplan's MRoPE table is 262,144 x 4 rows x 64 x 2 B = 128 MiB either way (vllm_rope_rows: the
    # MRotaryEmbedding branch), and whether 0.27.0's MRoPE path with a YaRN type sizes it by the factor was not read:
    # 3 x the rows would be +0.25 GiB, close to the residual, unverified
    p = _plan(GB10_CMD.format(786_432), "qwen3.5-27b", GB10, "0.27")
    assert p.ranks[0].weights_bytes == 54_849_772_000 and close_gib(p.ranks[0].weights_bytes, 51.35)
    rope = next(t.bytes for t in p.ranks[0].terms if t.name.startswith("rotary"))
    assert rope == 262_144 * 4 * 64 * 2 == 134_217_728


# -------------------------------------------------- H100-0271-QWEN38-FP8: vLLM 0.27.1, one H100, 256 and 1024 seqs

H100_CMD = ("vllm serve Qwen/Qwen3.8-27B-FP8 --trust-remote-code --host 0.0.0.0 --port 8500 --max-model-len 8192 {}"
            "--gpu-memory-utilization 0.90 --served-model-name qwen38-27b-fp8")
H100 = get_gpu("H100-SXM")


def _h100(seqs: str = "--max-num-seqs 256 ", **fields):
    return _plan(H100_CMD.format(seqs), "qwen3.5-27b", H100, "0.27", weight_format="fp8", **fields)


def test_h100_v0_27_1_qwen38_fp8_layout_from_the_logged_tokens():
    # bf16 KV: 784-token blocks of 51,380,224 B; 0.27 keeps prefix caching off for this hybrid (no flag), so 1 GDN
    # state page a group: cdiv(8192, 784) = 11 + 3 = 14 blocks a request. 59.21x and 485,083 tokens are 829 blocks:
    # int(829 / 14 x 8192) = 485,083 (828: 484,498; 830: 485,668); with 'align''s 17 a request no whole block count
    # gives 485,083 (1006: 484,773; 1007: 485,255). 829 blocks = 42,594,205,696 B = 39.67 GiB
    p = _h100(kv_cache_memory_bytes=829 * PAGE_784_BF16)
    assert (p.block_size, p.ranks[0].bytes_per_block, p.blocks_per_request) == (784, PAGE_784_BF16, 14)
    assert p.num_blocks == 829 and p.kv_cache_tokens == 485_083 and f"{p.max_concurrency:.2f}" == "59.21"
    assert [int(b / 14 * 8192) for b in (828, 830)] == [484_498, 485_668]
    assert [int(b / 17 * 8192) for b in (1006, 1007)] == [484_773, 485_255]


def test_h100_v0_27_1_qwen38_fp8_weights():
    # the fp8 stand-in with its bf16 vision tower (0.86 GiB): 28.40 GiB against "Model loading took 28.54 GiB"
    p = _h100()
    assert round(p.ranks[0].weights_bytes / GiB, 2) == 28.40 and close_gib(p.ranks[0].weights_bytes, 28.54)


@pytest.mark.xfail(strict=True, reason=(
    "Qwen3.8-27B-FP8 on one H100, vLLM 0.27.1, util 0.90, 8192 tokens, 256 sequences: kvplan's pool is 39.27 GiB "
    "(820 blocks, 479,817 tokens, 58.57x) against the logged 829 blocks = 39.67 GiB (485,083 tokens, 59.21x): -0.40 "
    "GiB (-1.01 %, 0.003 GiB past the tolerance), tokens -1.09 %. kvplan: 0.9 x 79.19 = 71.27 - 28.40 weights - 2.17 "
    "activation (the encoder step of one image item, above the LM's 8192-token forward) - 0.25 non-torch - 1.18 "
    "graph estimate; the weights are 0.14 under the log's, the rest of the 0.40 is in the encoder-step and graph "
    "estimates, which the log does not print"))
def test_h100_v0_27_1_qwen38_fp8_pool_from_the_flags():
    p = _h100()
    assert close_gib(p.ranks[0].kv_pool_bytes, 829 * PAGE_784_BF16 / GiB) and close(p.kv_cache_tokens, 485_083)


@pytest.mark.xfail(strict=True, reason=(
    "The same Qwen3.8-27B-FP8 H100 0.27.1 launch at the default 1024 sequences: vLLM's pool held 694 blocks (33.21 "
    "GiB; 'max_num_seqs (1024) exceeds available Mamba cache blocks (694)'), kvplan plans 775 (a 37.12 GiB pool): +81 "
    "blocks, +3.9 GiB, +11.7 %. Against the 256-sequence log the 768 more sampler rows cost vLLM 829 - 694 = 135 blocks = "
    "6.46 GiB, 9.0 MB a row (9.1 fp32 copies of a 248,320-entry logits row), where kvplan's peak grows 2.17 -> 3.95 "
    "GiB (its sampler copies, 3.72 a row, over the encoder step) and its graph estimate 1.18 -> 1.55. Not the "
    "sampler (read 2026-12-03 in the 0.27.0 wheel, test below): the V1 _dummy_sampler_run's second, seeded pass "
    "goes to forward_native, but apply_top_k_top_p takes the in-place Triton top-k / top-p from 8 rows (the sort-"
    "based path only below 8), so both passes peak at 3.5 fp32 copies a row (bf16 logits + fp32 cast + 2 "
    "temporaries) plus the Triton per-SM row buffer: 3.44 GiB at 1024 rows, 0.09 under kvplan's 3.52. The 6.46 GiB "
    "is elsewhere (the profile's GDN layers skip their kernels, the encoder batch is 1 item at both counts, the "
    "graph captures differ by the FULL decode sizes 272 - 512, in kvplan's +0.37); not found"))
def test_h100_v0_27_1_qwen38_fp8_default_1024_seqs_pool():
    p = _h100("")
    assert p.num_blocks == 694


def test_h100_v0_27_1_qwen38_fp8_v1_sampler_at_1024_rows_is_the_source_figure():
    # the 0.27.0 wheel's V1 dummy sampler at 1024 rows x 248,320 vocab: compute_logits' bf16 logits (2 B) held, each
    # pass's fp32 cast (4 B), pass 1 FlashInfer's top-k mask + softmax (4 + 4 B), pass 2 (seeded: forward_native)
    # the in-place Triton top-k / top-p (v1/sample/ops/topk_topp_sampler.py apply_top_k_top_p, 8+ rows), softmax
    # and the exponential noise q (4 + 4 B), plus topk_topp_triton.py's cached buffer of min(next_pow2(min(132,
    # 1024)), 132) = 132 rows on an H100's 132 SMs: 1024 x 248,320 x 14 + 132 x 248,320 x 4 = 3,691,028,480 B
    # (3.44 GiB); kvplan: int(1024 x 248,320 x 4 x 3.72) = 3,783,681,638 B (3.52 GiB), 0.09 GiB above it, so the
    # sampler is not where the 1024-sequence log's 6.46 GiB goes. kvplan's term = that sampler + the dummy run's
    # 8192 x 5120 x 2 B hidden states (83,886,080) + the held encoder outputs (369,098,752)
    source = 1024 * 248_320 * (2 + 4 + 4 + 4) + 132 * 248_320 * 4
    assert source == 3_691_028_480
    act = next(t.bytes for t in _h100("").ranks[0].terms if t.name.startswith("activation peak"))
    sampler = act - 8192 * 5120 * 2 - 369_098_752
    assert sampler == int(1024 * 248_320 * 4 * 3.72) == 3_783_681_638
    assert 0 < sampler - source < 0.1 * GiB


# ------------------------------------------- RTX4090-WSL-0271-QWEN25-7B: vLLM 0.27.1, RTX 4090 under WSL2, 8192 tokens

WSL_CMD = "VLLM_USE_FLASHINFER_SAMPLER=0 vllm serve {} --max-model-len 8192 --gpu-memory-utilization 0.92"
RTX4090_WSL = get_gpu("RTX-4090").model_copy(update={"memory_bytes": round(23.99 * GiB)})  # as WSL2 shows the card


def _qwen25_7b_instruct(quantization_config: str | None = None):
    cfg = json.loads((PRESETS / "qwen2.5-7b.json").read_text())
    cfg["max_position_embeddings"] = 32768
    if quantization_config:
        cfg["quantization_config"] = json.loads((FIXTURES / quantization_config).read_text())
    return parse_config(cfg, "qwen2.5-7b-instruct" + ("-fp8-dynamic" if quantization_config else ""))


def _wsl(model: str):
    fixture = "ct-fp8-dynamic.quantization_config.json" if "FP8" in model else None
    return _plan(WSL_CMD.format(model), _qwen25_7b_instruct(fixture), RTX4090_WSL, "0.27")


@pytest.mark.parametrize("model, tokens, pool_bytes", [
    pytest.param("Qwen/Qwen2.5-7B-Instruct", 102_544, 5_880_283_136, id="bf16", marks=pytest.mark.xfail(
        strict=True, reason=(
            "Qwen2.5-7B-Instruct bf16 on the WSL2 RTX 4090, vLLM 0.27.1, util 0.92, 8192 tokens: kvplan's pool is "
            "6.36 GiB (7445 blocks, 119,120 tokens) against the logged 102,544 tokens = 6409 blocks = 5.48 GiB: "
            "+0.89 GiB, +16.2 %. kvplan: 22.07 budget - 14.29 weights (0.10 of it allocator rounding) - 1.02 peak (the "
            "cold compile's copy of the 152,064 x 3584 embedding) - 0.25 non-torch - 0.15 V2 sampler state. The "
            "FP8-dynamic build of the same model, same machine and flags, lands +0.23 (the case below) and the "
            "author's Qwen2.5-0.5B on this card -0.03 (tests/test_engine_logs_2026e.py), so the 0.89 is particular "
            "to the bf16 launch: its process used 22,951 MiB against the FP8 build's 23,792 (nvidia-smi, WSL2), "
            "i.e. about 0.8 GiB of its budget was not held after start-up: a transient of the bf16 profile (or "
            "Windows' share of the card moving between the runs, which the note does not log); not found"))),
    pytest.param("RedHatAI/Qwen2.5-7B-Instruct-FP8-dynamic", 230_352, 13_209_305_088, id="fp8-dynamic"),
])
def test_rtx4090_wsl_v0_27_1_qwen2_5_7b_pool_from_the_flags(model, tokens, pool_bytes):
    # 28 layers x 2 x 4 KV heads x 128 x 2 B = 57,344 B a token, 16-token blocks of 917,504 B: the logged tokens are
    # whole blocks, 102,544 / 16 = 6409 (5.48 GiB) and 230,352 / 16 = 14,397 (12.30 GiB). FP8-dynamic: kvplan 22.07
    # - 8.12 weights (fp8 linears, channel scales, the bf16 embedding and lm_head) - 1.02 peak - 0.25 - 0.15 =
    # 13,454,569,658 B = 12.53 GiB (+0.23), 14,664 blocks; bf16: 6,831,034,554 B = 6.36 GiB, 7445 blocks
    p = _wsl(model)
    assert p.ranks[0].kv_bytes_per_token == 28 * 2 * 4 * 128 * 2 == 57_344 and p.block_size == 16
    assert tokens % 16 == 0 and tokens // 16 * 917_504 == pool_bytes
    assert p.ranks[0].kv_pool_bytes == {5_880_283_136: 6_831_034_554, 13_209_305_088: 13_454_569_658}[pool_bytes]
    assert close_gib(p.ranks[0].kv_pool_bytes, pool_bytes / GiB)


@pytest.mark.xfail(strict=True, reason=(
    "RedHatAI/Qwen2.5-7B-Instruct-FP8-dynamic on the WSL2 RTX 4090, vLLM 0.27.1, util 0.92, 8192 tokens: kvplan's "
    "12.53 GiB pool (the test above, within 0.23 GiB) is 14,664 blocks = 234,624 tokens against the logged 230,352 "
    "(14,397 blocks): +1.85 %, the +0.23 GiB of the pool; the weights are not logged, so the 0.23 is not split "
    "between them and the profile's terms"))
def test_rtx4090_wsl_v0_27_1_qwen2_5_7b_fp8_dynamic_tokens_from_the_flags():
    assert close(_wsl("RedHatAI/Qwen2.5-7B-Instruct-FP8-dynamic").kv_cache_tokens, 230_352)
