"""Public vLLM start-up logs reproduced from their launch inputs (issue 11, the 2026-12-03 round: Kimi-K2.5,
MiniMax-M2.5 / M2.1, DeepSeek-V3.2, Nemotron-H, Qwen3.5 / Qwen3.6 hybrids, Qwen3-VL, Gemma-4).

Tolerances as tests/test_engine_logs.py: memory within max(1 %, 0.25 GiB), tokens and concurrency within 1 %. None of
these sources is pinned elsewhere in tests/ (issue numbers, index file ids and the logged figures grepped 2026-12-03).
Issue threads are cited by repository and number; code-corpus files by their search-index file id, as in
tests/test_engine_logs_dec02.py (read 2026-12-03).

Sources:
- KIMI25-H100: a team's notes on serving moonshotai/Kimi-K2.5 on one GCP a3-highgpu-8g (8 x H100 80GB HBM3, NVLink /
  NVSwitch), vLLM 0.15.0, torch 2.9.1+cu128, NCCL 2.29.3, 2026-02-09: a setup page (index file id 31505324900) with the
  working command ``vllm serve $HOME/Kimi-K2.5 -tp 8 --served-model-name Kimi-K2.5 --mm-encoder-tp-mode data
  --tool-call-parser kimi_k2 --reasoning-parser kimi_k2 --trust-remote-code --gpu-memory-utilization 0.95
  --max-num-seqs 64 --max-model-len 8192 --host 0.0.0.0 --port 8000`` and "72.02 GiB per GPU"; a post-mortem (id
  31194389526): at the default 0.9 "Available KV cache memory: -3.32 GiB" (after --max-num-seqs 64 fixed a sampler
  warm-up OOM at 1024), at 0.95 "only 0.64 GiB was left for KV cache", and at 16,384 tokens "Need 1.07 GiB for 16384
  tokens, only 0.64 GiB available" (the setup page's copy: "1.07 GiB KV cache is needed ... Estimated maximum model
  length is 9664"); a results page (id 31288350132): "72.02 GiB model per GPU, 0.64 GiB KV cache,
  gpu_memory_utilization=0.95", max_model_len 8192, max_num_seqs 64. The checkpoint is the native INT4
  (CompressedTensorsWNA16MarlinMoEMethod) release, kvplan's kimi-k2.5 preset. The two pools differ by exactly 0.05 x
  79.19 GiB = 3.96 GiB (-3.32 + 3.96 = 0.64), so both starts share every term but the utilization.
- M25-H100: a capacity report "MiniMax-M2.5 vLLM Service — Capacity Model" (index file id 58113078588): 4 of 8 H100
  80GB HBM3, TP 4, "v0.19.1rc1.dev71+gdd9342e6b", MiniMaxAI/MiniMax-M2.5 (fp8 block), dtype bfloat16, kv_cache_dtype
  auto, max_model_len 128,000, gpu_memory_utilization 0.95, max_num_seqs 10, max_num_batched_tokens 8192 (log line 12),
  prefix caching on, cudagraph_capture_sizes [1, 2, 4, 8, 16], "TRITON Fp8 MoE backend" (its appendix lines 36 - 39);
  log lines 169 "Model loading took 53.75 GiB memory", 988 "Available KV cache memory: 18.16 GiB", 990 "GPU KV cache
  size: 307,184 tokens", 991 "Maximum concurrency for 128,000 tokens per request: 2.40x", and 985 "In v0.19, CUDA graph
  memory profiling will be enabled by default ... increase --gpu-memory-utilization from 0.9500 to 0.9526": the graph
  estimate printed, not subtracted (kvplan's 0.19 line).
- M21-GH200: a blog post "Optimising a 2x GH200 system for Claude Code" (index file id 25194691184, 2026-01-11): 2 x
  GH200 96GB (no NVLink), vLLM 0.14.0rc1.dev417+g707b240d7, mratsim/MiniMax-M2.1-FP8-INT4-AWQ (a mixed FP8 / INT4
  community quant) at ``--tensor-parallel-size 2 --gpu-memory-utilization 0.95 --max-model-len 163840 --max-num-seqs
  16``; logged "GPU KV cache size: 235,280 tokens", "Maximum concurrency for 163,840 tokens per request: 1.44x". The
  weights format is not one kvplan plans and GH200 is not in the catalog, so only the layout behind the tokens line is
  pinned (MiniMax-M2.1 has MiniMax-M2.5's attention shape: the minimax-m2.5 preset).
- DSV32-PP4: vllm-project/vllm#31903 "[Bug]: TP8+PP8 running deepseek-3.2 error" (2026-01-07; read through a Chinese
  issue digest, index file id 56955863172): ``vllm serve DeepSeek-V3.2 -tp=8 -pp=4 --distributed-executor-backend
  ray``, kv_cache_utils.py:1305 / :1310 (the 0.14 line numbers of vllm#33263): "GPU KV cache size: 1,214,464 tokens",
  "Maximum concurrency for 163,840 tokens per request: 7.41x". The GPU and the utilization are not stated, so the
  layout behind the tokens line is pinned (the pool is not).
- CASCADE2-H100: a coding-agent transcript of a research job (index file id 59839511370; slurm_output_22254260.out,
  2026-04-26, /scratch-shared paths): offline vLLM 0.19.1 (``LLM(...)``; non-default args {'trust_remote_code': True,
  'kv_cache_dtype': 'fp8', 'seed': 132, 'max_model_len': 262144, 'gpu_memory_utilization': 0.95,
  'max_num_batched_tokens': 8192, 'max_num_seqs': 40, 'disable_log_stats': True, 'mamba_ssm_cache_dtype': 'float32'}),
  chankhavu/Nemotron-Cascade-2-30B-A3B-NVFP4 (NemotronHForCausalLM: Nemotron-3-Nano-30B-A3B's shapes, a community
  ModelOpt NVFP4 export) on one Hopper GPU ("FlashAttention version 3"; NVFP4 on Marlin: "Your GPU does not have
  native support for FP4"): "Setting attention block size to 4176 tokens", "Padding mamba page size by 0.19%", "Add 1
  padding layers, may waste at most 4.35% KV cache memory", "Model loading took 18.03 GiB", "Estimated CUDA graph
  memory: 0.19 GiB total" (printed, not subtracted: "In v0.19, CUDA graph memory profiling will be enabled by
  default"), "Available KV cache memory: 68.97 GiB", "GPU KV cache size: 4,819,104 tokens", "Maximum concurrency for
  262,144 tokens per request: 86.16x". The card's size is not logged (68.97 + 18.03 at 0.95 needs ~93 GiB: an H100
  94GB) and kvplan's nvfp4 plan of the bf16 preset gives 17.50 GiB of weights for this export (-0.53; its excluded
  layers are not published beside the log), so the hybrid layout is pinned from the logged pool, not the pool.
- Q35-122-ADA: a docker-compose log "qwen3.5-122" (index file id 51840052075, 03-01): vLLM 0.16.1rc1.dev111+gafd089f23
  (a build past 0.16.0 that already serves Qwen3_5MoeForConditionalGeneration; kvplan plans it on its 0.17 line, the
  first release with that class), non-default args {'max_model_len': 131072, 'tensor_parallel_size': 2,
  'disable_custom_all_reduce': True, 'swap_space': 8.0, 'kv_cache_dtype': 'fp8', 'enable_prefix_caching': True,
  'max_num_batched_tokens': 8192, 'max_num_seqs': 6, 'enable_chunked_prefill': True, ...}, a local compressed-tensors
  INT4 checkpoint of Qwen3.5-122B-A10B ("Using Marlin backend for WNA16 MoE (group_size=32, num_bits=4)") on two
  capability-8.9 cards ("SymmMemCommunicator: Device capability 8.9 not supported"; 36.73 GiB a rank at 0.9: 48 GB
  Ada cards, L40S or RTX 6000 Ada), Mamba cache mode 'align': "Setting attention block size to 4176 tokens", "Model
  loading took 36.73 GiB", "Encoder cache will be initialized with a budget of 16384 tokens, and profiled with 1
  image items", "Available KV cache memory: 1.73 GiB", "GPU KV cache size: 75,168 tokens", "Maximum concurrency for
  131,072 tokens per request: 1.89x". kvplan plans INT4 g32 weights of the bf16 preset at 34.50 GiB (-2.23: the
  export's unquantized layers are not published), so the pool is planned from the logged weights.
- SPARK-REGISTRY: a deployment's "Context capacity and capability registry (draft)" (index file id 71218733390, drafted
  2026-10-03) for two unified-memory nodes (121 GiB each, not in kvplan's catalog), from each engine's /metrics,
  ``docker inspect`` launch flags and start-up log: the main engine nvidia/Qwen3.6-35B-A3B-NVFP4 on vLLM
  0.28.1rc1.dev580+g385dce36b, TP 2 over both nodes, --max-model-len 1000000 (a YaRN --hf-overrides, factor 3.82),
  --kv-cache-memory-bytes 8589934592, --kv-cache-dtype fp8, --max-num-batched-tokens 8192, --no-enable-prefix-caching:
  "Setting attention block size to 2096 tokens", num_gpu_blocks 800, "1,663,201 tokens; 1.66x at 1M", "Model loading
  took" 10.66 GiB on rank 1 (kvplan's qwen3.6-35b-a3b-nvfp4 preset, RedHatAI's export at 262,144 positions, gives
  10.26: another export and a YaRN rotary table kvplan does not read from --hf-overrides, so not pinned); the router
  Qwen/Qwen3-VL-8B-Instruct-FP8 on 0.26.1rc1.dev77, --max-model-len 49152, --gpu-memory-utilization 0.15,
  --kv-cache-dtype fp8: "3.61 GiB -> 3,286 blocks x 16 = 52,576 tokens; 1.07x at 49,152". The main pool is given
  by its flag and the router's by the log, so both layouts are pinned (the unified-memory budgets are not).
- QWEN36-WSL-16K / QWEN36-WSL-EAGER: two more starts of the QWEN36-WSL card of tests/test_engine_logs_dec02.py (the same
  vllm/vllm-openai:v0.20.0-cu130-ubuntu2404 image under WSL, RedHatAI/Qwen3.6-35B-A3B-NVFP4, "Model loading took 21.86
  GiB", "Setting attention block size to 2096 tokens", an encoder budget of 16384 tokens with 1 image item): index file
  id 52066611745 (05-01 21:11) with --max-num-batched-tokens 16384 and every other flag of that log (0.90, 65,536,
  1 sequence, fp8_e4m3, --moe-backend cutlass, --max-cudagraph-capture-size 1; "Estimated CUDA graph memory: 0.36 GiB
  total" in both): "Available KV cache memory: 1.28 GiB", "GPU KV cache size: 33,536 tokens", "Maximum concurrency for
  65,536 tokens per request: 1.68x"; index file id 51994479084 (05-01 18:54) with --gpu-memory-utilization 0.80
  --max-model-len 8192 --moe-backend marlin --max-num-seqs 32 --max-num-batched-tokens 8192 --enforce-eager: "0.32
  GiB", "6,288 tokens", "1.50x". The card is still unnamed, so the layouts are pinned from the logged pools; the
  8192 -> 16384 pair differs in the batch budget only, so its pool difference (2.95 - 1.28 = 1.67 GiB) holds no
  card term at all: it is the profile peak's growth alone.
- GEMMA4-CLOUDRUN: a Cloud Run codelab reproduction log (index file id 69641025864, run 2026-08-01/02): one
  nvidia-rtx-pro-6000 (Cloud Run GPU), image us-docker.pkg.dev/vertex-ai/vertex-vision-model-garden-dockers/
  pytorch-vllm-serve:gemma4 with vLLM 0.17.2rc1.dev133+g9279c59a0 (Google's build that serves Gemma 4; kvplan plans
  it on its 0.19 line, the first release whose registry has Gemma4ForConditionalGeneration), ``vllm serve
  gs://.../google/gemma-4-31B-it --enable-chunked-prefill --enable-prefix-caching --dtype bfloat16 --quantization
  fp8 --kv-cache-dtype fp8 --max-num-seqs 8 --gpu-memory-utilization 0.95 --tensor-parallel-size 1 --load-format
  runai_streamer --max-model-len 32767`` (the bf16 checkpoint quantized online: "Fp8OnlineLinearMethod"): "Model
  loading took 31.47 GiB", "Available KV cache memory: 57.09 GiB", "GPU KV cache size: 124,704 tokens". kvplan's
  gemma-4-31b-it-nvfp4 preset carries Gemma-4-31B-it's shapes; --quantization fp8 plans its fp8 online layout.
"""

import pytest

from kvplan import load_preset
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan, vllm_marlin_moe_transient_bytes, vllm_moe_workspace_bytes, vllm_moe_workspace_held
from kvplan.units import GiB
from kvplan.vllm_args import parse_vllm_command
from tests.test_engine_logs import close, close_gib

H100 = get_gpu("H100-SXM")


def _plan(command: str, preset: str, gpu, version: str, layout: Layout, pool_gib: float | None = None,
          pool_bytes: int | None = None, **extra):
    """kvplan's plan for a ``vllm serve`` line; with ``pool_gib`` / ``pool_bytes`` the logged pool is the pool,
    ``extra`` further EngineConfig fields (a logged ``weights_bytes``)."""
    args = parse_vllm_command(command)
    assert not args.unknown, args.unknown
    fields = {**args.engine_fields(), "vllm_version": version, **extra}
    if pool_gib is not None:
        fields["kv_cache_memory_bytes"] = round(pool_gib * GiB)
    if pool_bytes is not None:
        fields["kv_cache_memory_bytes"] = pool_bytes
    return plan(load_preset(preset), gpu, EngineConfig(**fields), layout)


# ----------------------------------------------------------------------------- KIMI25-H100: 0.15.0, TP 8

KIMI25 = ("vllm serve moonshotai/Kimi-K2.5 -tp 8 --served-model-name Kimi-K2.5 --mm-encoder-tp-mode data "
          "--tool-call-parser kimi_k2 --reasoning-parser kimi_k2 --trust-remote-code --max-num-seqs 64 "
          "--host 0.0.0.0 --port 8000 ")


def test_kimi_k25_h100_tp8_v0_15_weights():
    # a rank's INT4 g32 experts as Marlin repacks them + bf16 attention / shared expert / embeddings + the MoonViT tower
    # replicated (--mm-encoder-tp-mode data): kvplan 71.86 GiB against the logged 72.02 (-0.16, -0.2 %)
    p = _plan(KIMI25 + "--gpu-memory-utilization 0.95 --max-model-len 8192", "kimi-k2.5", H100, "0.15", Layout(tp=8))
    assert close_gib(p.ranks[0].weights_bytes, 72.02) and abs(p.ranks[0].weights_bytes / GiB - 71.86) < 0.01


@pytest.mark.xfail(strict=True, reason=(
    "Kimi-K2.5 TP8 on 8 x H100, vLLM 0.15.0, 64 sequences, 8192 batched tokens: kvplan's pool is 1.08 GiB at util "
    "0.95 against the logged 0.64 (0.635 - 0.637 with the logged 9,664-token estimate: +0.45) and -2.88 at 0.9 against "
    "-3.32 (+0.45): the same gap at both, as the two logs differ by 0.05 x 79.19 = 3.96 GiB exactly. Of it 0.16 is the "
    "weights (71.86 vs 72.02 logged; every parameter vLLM 0.15.0 creates for this checkpoint is counted, the Marlin "
    "repack keeps the packed bytes and frees its temporaries, W_UK / W_UV are views of the bf16 kv_b_proj, the rotary "
    "table is bf16 (rotary_embedding off under Inductor), and a toy replay of torch's caching allocator over the "
    "parameters' creation order adds ~35 MiB of block rounding, not modeled); the other 0.29 GiB sits in activation "
    "1.49 GiB (the 8192-token forward's fused_marlin_moe layer 1.34, which the source puts at 1.32 with cache2 freed "
    "before the final sum; the MoonViT image's held outputs + inputs 0.07 and its kept 2-D RoPE table 0.07; the "
    "native sampler's 64 x 163,840 fp32 logits x 9.55 copies = 0.37 is under it) + non-torch 0.80 (0.55 + 0.25 NVLS "
    "at TP 8; the MoonViT all-gather of --mm-encoder-tp-mode data makes torch's ProcessGroupNCCL communicator inside "
    "the profile, whose own NVLS buffers, if NCCL 2.29's tuner picks NVLS for the all-gather, would add up to 0.25 + "
    "its channel peers), which no logged term splits (0.15.0 prints no memory profile at INFO). The Kimi-K2-Thinking "
    "H200 recipe keeps a TP-8 gap of the same sign open (+1.17 GiB, tests/test_vllm_layouts_quant.py)"))
@pytest.mark.parametrize("util, pool", [(0.95, 0.64), (0.9, -3.32)], ids=["util-0.95", "util-0.9"])
def test_kimi_k25_h100_tp8_v0_15_pool_from_the_flags(util, pool):
    p = _plan(KIMI25 + f"--gpu-memory-utilization {util} --max-model-len 8192", "kimi-k2.5", H100, "0.15",
              Layout(tp=8))
    assert close_gib(p.ranks[0].kv_pool_bytes, pool)


def test_kimi_k25_h100_tp8_v0_15_terms_the_xfail_names():
    # The figures the pool xfail above states, so that its reason cannot go stale (util 0.95, TP 8, 8192 tokens).
    p = _plan(KIMI25 + "--gpu-memory-utilization 0.95 --max-model-len 8192", "kimi-k2.5", H100, "0.15", Layout(tp=8))
    terms = {t.name.split(" (")[0]: t.bytes for t in p.ranks[0].terms}
    # fused_marlin_moe's per-call caches at K 7168, N 2048 / 8 = 256, top-8 (kvplan.plan.vllm_marlin_moe_transient_bytes)
    # (4 x 8192 x 7168 + 8192 x 8 x (7168 + 256)) x 2 = 1,442,840,576; the image's outputs 4,225 x 7,168 x 2 =
    # 60,569,600 + pixel values 16,900 x 588 x 2 = 19,874,400; MoonViT's kept RoPE table 512 x 512 x 36 x 8 = 75,497,472
    assert vllm_marlin_moe_transient_bytes(load_preset("kimi-k2.5"), 8, 8192, 2) == 1_442_840_576
    assert terms["activation peak"] == 1_442_840_576 + 60_569_600 + 19_874_400 + 75_497_472 == 1_598_782_048
    assert terms["weights"] == 77_158_527_968 and terms["non-torch memory"] == round(0.55 * GiB) + 256 * 2**20
    # requested ceil(0.95 x 85,029,615,043) = 80,778,134,291 less the three: 1,161,830,816 B = 1.08 GiB
    assert p.ranks[0].kv_pool_bytes == 80_778_134_291 - 77_158_527_968 - 1_598_782_048 - 858_993_459 == 1_161_830_816
    assert round(p.ranks[0].kv_pool_bytes / GiB, 2) == 1.08


def test_kimi_k25_h100_tp8_v0_15_refusal_at_16k_from_the_logged_pool():
    # MLA latent 61 layers x 576 x 2 B = 70,272 B a token (replicated on every TP rank), FlashMLA's 64-token blocks of
    # 4,497,408 B. The log pins the pool twice: "0.64" (round(b / GiB, 2), utils/mem_utils.py format_gib) is
    # [0.635, 0.645) GiB = [681,826,059, 692,563,477) B, and "Estimated maximum model length is 9664" (kv_cache_utils.py
    # estimate_max_model_len: the longest L with cdiv(L, 64) x 4,497,408 <= pool) is 151 blocks, so the pool is in
    # [151, 152) x 4,497,408 = [679,108,608, 683,606,016): together 0.6350 - 0.6367 GiB. At 0.636 GiB (682,899,800 B)
    # 682,899,800 // 4,497,408 = 151 blocks = 9,664 tokens; one 16,384-token request needs 256 blocks = 1,151,336,448
    # B = 1.07 GiB: vLLM refuses with the logged "1.07 GiB ... 0.64 GiB ... 9664" and kvplan says the same
    p = _plan(KIMI25 + "--gpu-memory-utilization 0.95 --max-model-len 16384", "kimi-k2.5", H100, "0.15",
              Layout(tp=8), pool_gib=0.636)
    assert p.ranks[0].kv_bytes_per_token == 61 * 576 * 2 == 70_272 and p.block_size == 64
    assert p.num_blocks == 151 and p.kv_cache_tokens == 9_664 and p.blocks_per_request == 256
    needed = "(1.07 GiB KV cache is needed, which is larger than the available KV cache memory (0.64 GiB)"
    assert needed in p.start_error
    assert "estimated maximum model length is 9664" in p.start_error


@pytest.mark.xfail(strict=True, reason=(
    "Kimi-K2.5 TP8 on 8 x H100, vLLM 0.15.0, util 0.95, --max-model-len 16384: vLLM refused to start (1.07 GiB needed, "
    "0.64 available); kvplan's own pool from the flags is 1.08 GiB (+0.45, the test above), which holds a 16,384-token "
    "request, so kvplan says it starts: the pool gap, not a missing rule"))
def test_kimi_k25_h100_tp8_v0_15_refusal_at_16k_from_the_flags():
    p = _plan(KIMI25 + "--gpu-memory-utilization 0.95 --max-model-len 16384", "kimi-k2.5", H100, "0.15", Layout(tp=8))
    assert p.start_error and "To serve at least one request" in p.start_error


# ----------------------------------------------------------------------------- M25-H100: 0.19.1rc1, TP 4

M25 = ("vllm serve MiniMaxAI/MiniMax-M2.5 --tensor-parallel-size 4 --gpu-memory-utilization 0.95 "
       "--max-model-len 128000 --max-num-seqs 10 --max-num-batched-tokens 8192 --enable-auto-tool-choice "
       "--tool-call-parser minimax_m2 --reasoning-parser minimax_m2 --trust-remote-code --port 9084")


def test_minimax_m25_hopper_triton_workspace_rule():
    # fused_moe/oracle/fp8.py _get_priority_backends (0.17.0, 0.18.0, 0.19.0 wheels): on capability 9.0 block-FP8
    # experts move TRITON to the front unless ep_size > 1 (then FLASHINFER_CUTLASS); 0.16.0 keeps DEEPGEMM first.
    # TritonExperts' workspace at TP 4 (K 3072, N 2 x 1536 / 4 = 768, top-8), 8192 tokens, bf16:
    # (8192 x 8 x max(384, 3072) + 8192 x 8 x max(768, 3072)) x 2 B = 805,306,368 B = 0.75 GiB
    m25 = load_preset("minimax-m2.5")
    assert [vllm_moe_workspace_held(m25, None, "H100-SXM", v) for v in ("0.16", "0.17", "0.19", "0.33")] == [
        False, True, True, True]
    assert not vllm_moe_workspace_held(m25, None, "H200", "0.19", ep=True)
    assert vllm_moe_workspace_held(m25, None, "H20", "0.19") and not vllm_moe_workspace_held(m25, None, "B200", "0.19")
    assert vllm_moe_workspace_bytes(m25, 4, 8192, 2) == 805_306_368


def test_minimax_m25_h100_tp4_v0_19_weights():
    # 62 layers of block-FP8 experts and attention a quarter each: kvplan 53.65 GiB against the logged 53.75 (-0.2 %)
    p = _plan(M25, "minimax-m2.5", H100, "0.19", Layout(tp=4))
    assert close_gib(p.ranks[0].weights_bytes, 53.75)


def test_minimax_m25_h100_tp4_v0_19_layout_from_the_logged_pool():
    # 62 layers x 2 KV heads a rank (8 / 4) x 128 x (K + V) x 2 B = 63,488 B a token, 16-token blocks of 1,015,808 B,
    # 8,000 blocks a 128,000-token request. 18.16 GiB // 1,015,808 = 19,195 blocks = 307,120 tokens (-0.021 %: the
    # logged 307,184 = 19,199 blocks = 18.163 GiB, printed "18.16"); 19,199 / 8,000 = 2.40x as logged
    p = _plan(M25, "minimax-m2.5", H100, "0.19", Layout(tp=4), pool_gib=18.16)
    assert p.ranks[0].kv_bytes_per_token == 63_488 and p.ranks[0].bytes_per_block == 1_015_808
    assert p.num_blocks == 19_195 and p.blocks_per_request == 8_000
    assert close(p.kv_cache_tokens, 307_184) and f"{p.max_concurrency:.2f}" == "2.40"
    assert f"{19_199 * 1_015_808 / GiB:.2f}" == "18.16" and f"{19_199 / 8_000:.2f}" == "2.40"


@pytest.mark.xfail(strict=True, reason=(
    "MiniMax-M2.5 TP4 on 4 x H100, vLLM 0.19.1rc1, util 0.95, 10 seqs, 8192 batched tokens: kvplan's pool 18.44 GiB "
    "against the logged 18.16 (+0.28, +1.5 %), 311,808 tokens vs 307,184 (+1.5 %), 2.44x vs 2.40x (18.58 / +0.42 "
    "before the held workspace sat under the forward's peak too: the 10-row sampler is below the forward, peak 0.83 "
    "-> 0.97 GiB, kvplan.plan.activation_estimate). It was +0.93 "
    "(19.09) before the Hopper TRITON rule (kvplan.plan.vllm_moe_workspace_held, 0.17.0+: the 0.75 GiB TritonExperts "
    "workspace the log's 'TRITON Fp8 MoE backend' keeps held); weights 53.65 vs 53.75 (-0.10) leave +0.32 GiB in "
    "non-torch (2.18: the 0.17+ FlashInfer all-reduce fusion workspace at TP 4) or the profile peak (0.97), which the "
    "log does not split"))
def test_minimax_m25_h100_tp4_v0_19_pool_from_the_flags():
    p = _plan(M25, "minimax-m2.5", H100, "0.19", Layout(tp=4))
    assert close_gib(p.ranks[0].kv_pool_bytes, 18.16) and close(p.kv_cache_tokens, 307_184)


# ----------------------------------------------------------------------------- M21-GH200: 0.14.0rc1, TP 2, tokens line

M21 = ("vllm serve /models/MiniMax-M2.1-FP8-INT4-AWQ --served-model-name MiniMax-M2.1-FP8 --trust-remote-code "
       "--gpu-memory-utilization 0.95 --max-model-len 163840 --tensor-parallel-size 2 --max-num-seqs 16 "
       "--enable-auto-tool-choice --tool-call-parser minimax_m2 --reasoning-parser minimax_m2_append_think")


def test_minimax_m21_gh200_tp2_layout_behind_the_tokens_line():
    # 62 layers x 4 KV heads a rank (8 / 2) x 128 x 2 x 2 B = 126,976 B a token, 16-token blocks of 2,031,616 B.
    # 235,280 = 14,705 blocks x 16 exactly; a 163,840-token request is 10,240 blocks: 14,705 / 10,240 = 1.436x, the
    # logged "1.44x". Those blocks are 27.82 GiB a rank (an H100 NVL stands in for the GH200: the same sm90 layout)
    p = _plan(M21, "minimax-m2.5", get_gpu("H100-NVL"), "0.14", Layout(tp=2), pool_bytes=14_705 * 2_031_616)
    assert p.ranks[0].kv_bytes_per_token == 126_976 and p.ranks[0].bytes_per_block == 2_031_616
    assert p.num_blocks == 14_705 and p.kv_cache_tokens == 235_280 and p.blocks_per_request == 10_240
    assert f"{p.max_concurrency:.2f}" == "1.44" and round(14_705 * 2_031_616 / GiB, 2) == 27.82


# ----------------------------------------------------------------------------- DSV32-PP4: 0.14, TP 8 x PP 4, tokens


def test_dsv32_tp8_pp4_layout_behind_the_tokens_line():
    # 61 layers over 4 stages as vLLM's get_pp_indices splits them: 15, 15, 16, 15 (the one left over goes to the
    # second-to-last stage). DSA at bf16: 576 x 2 B of latent + 132 B of fp8 indexer key = 1,284 B a layer and token,
    # 64-token blocks (the indexer's): 15 x 1,284 x 64 = 1,232,640 B, 16 layers 1,314,816 B; every stage gets the
    # smallest stage's block count. 1,214,464 = 18,976 blocks x 64 exactly, a 163,840-token request 2,560 blocks:
    # 18,976 / 2,560 = 7.4125x, the logged "7.41x"; a pool of 18,976 x 1,314,816 B (23.24 GiB) on the 16-layer stage
    args = "vllm serve deepseek-ai/DeepSeek-V3.2 -tp=8 -pp=4 --distributed-executor-backend ray"
    p = _plan(args, "deepseek-v3.2", get_gpu("H200"), "0.14", Layout(tp=8, pp=4), pool_bytes=18_976 * 1_314_816)
    assert [r.bytes_per_block for r in p.ranks] == [1_232_640, 1_232_640, 1_314_816, 1_232_640] and p.block_size == 64
    assert p.num_blocks == 18_976 and p.kv_cache_tokens == 1_214_464 and p.blocks_per_request == 2_560
    assert f"{p.max_concurrency:.2f}" == "7.41" and round(18_976 * 1_314_816 / GiB, 2) == 23.24


# ----------------------------------------------------------------------------- CASCADE2-H100: 0.19.1, Nemotron-H hybrid

CASCADE2 = ("vllm serve chankhavu/Nemotron-Cascade-2-30B-A3B-NVFP4 --trust-remote-code --kv-cache-dtype fp8 --seed 132 "
            "--max-model-len 262144 --gpu-memory-utilization 0.95 --max-num-batched-tokens 8192 --max-num-seqs 40 "
            "--disable-log-stats --mamba-ssm-cache-dtype float32")


def test_nemotron_cascade2_h100_v0_19_hybrid_layout_from_the_logged_pool():
    # 6 attention layers (2 KV heads x 128, fp8: 512 B a token a layer) and 23 Mamba-2 layers, fp32 SSM state (the
    # flag and the config's mamba_ssm_cache_dtype agree): 64 heads x 64 x 128 state x 4 B = 2,097,152 B + conv
    # (4096 + 2 x 8 x 128 = 6144 channels) x 3 x 2 B = 36,864 B = 2,134,016 B a layer. The attention block grows to
    # cdiv(2,134,016 / 512, 16) x 16 = 4,176 tokens (a 2,138,112 B page; the Mamba page padded by 0.19 % to it), groups
    # of 6 layers (the 23 Mamba layers padded by 1: "4.35 %"): 1 attention + 4 Mamba groups, 6 x 2,138,112 =
    # 12,828,672 B a block. "68.97 GiB" holds 5,772 - 5,773 blocks; 5,773 (68.973 GiB) is the count the concurrency
    # says: a 262,144-token request takes cdiv(262,144, 4,176) = 63 attention pages + 4 Mamba pages = 67 blocks,
    # 5,773 / 67 = 86.16x (5,772 would print 86.15x); tokens = 5,773 // 5 groups x 4,176 = 4,819,104 as logged
    p = _plan(CASCADE2, "nemotron-3-nano-30b-a3b", get_gpu("H100-NVL"), "0.19", Layout(),
              pool_bytes=5_773 * 12_828_672)
    assert p.block_size == 4_176 and p.ranks[0].bytes_per_block == 12_828_672 and p.blocks_per_request == 67
    assert p.num_blocks == 5_773 and p.kv_cache_tokens == 4_819_104 and f"{p.max_concurrency:.2f}" == "86.16"
    assert f"{5_773 * 12_828_672 / GiB:.2f}" == "68.97" and f"{5_772 / 67:.2f}" == "86.15"


# ----------------------------------------------------------------------------- Q35-122-ADA: 0.16.1rc1, TP 2, hybrid

Q35_122 = ("vllm serve /models --enable-auto-tool-choice --tool-call-parser qwen3_coder --host 0.0.0.0 --port 8001 "
           "--max-model-len 131072 --served-model-name qwen3.5-122 --generation-config vllm --reasoning-parser qwen3 "
           "--tensor-parallel-size 2 --disable-custom-all-reduce --swap-space 8 --kv-cache-dtype fp8 "
           "--enable-prefix-caching --max-num-batched-tokens 8192 --max-num-seqs 6 --enable-chunked-prefill")


def _q35_122(**extra):
    return _plan(Q35_122, "qwen3.5-122b-a10b", get_gpu("L40S"), "0.17", Layout(tp=2), **extra)


def test_qwen35_122b_tp2_ada_hybrid_layout_from_the_logged_pool():
    # 12 full-attention layers, 1 KV head a rank (2 / 2) x 256, fp8: 512 B a token a layer, so a 4,176-token page is
    # 2,138,112 B (each of the 36 Gated DeltaNet layers' TP-2 state padded by 0.19 % to it); groups of 12 layers: 1
    # attention + 3 GDN groups, 12 x 2,138,112 = 25,657,344 B a block. 1.73 GiB // 25,657,344 = 72 blocks; tokens =
    # 72 // 4 groups x 4,176 = 75,168 as logged; a 131,072-token request takes cdiv(131,072, 4,176) = 32 attention
    # pages + 2 pages in each GDN group ('align' mode) = 38 blocks: 72 / 38 = 1.89x as logged
    p = _q35_122(pool_gib=1.73)
    assert p.block_size == 4_176 and p.ranks[0].bytes_per_block == 25_657_344 and p.blocks_per_request == 38
    assert p.num_blocks == 72 and p.kv_cache_tokens == 75_168 and f"{p.max_concurrency:.2f}" == "1.89"


def test_qwen35_122b_tp2_ada_pool_from_the_logged_weights():
    # 44.42 GiB x 0.9 = 39.98 - 36.73 logged weights - 1.41 activation (the encoder's one-image step over the 16,384-
    # token budget is the peak, above the LM's 8192-token forward and the 6-row sampler) - 0.25 non-torch = 1.59 GiB
    # (logged 1.73: -0.14, inside the 0.25 GiB floor; an RTX 6000 Ada's 44.43 GiB gives 1.60)
    p = _q35_122(weights_bytes=round(36.73 * GiB))
    assert close_gib(p.ranks[0].kv_pool_bytes, 1.73) and abs(p.ranks[0].kv_pool_bytes / GiB - 1.59) < 0.01


@pytest.mark.xfail(strict=True, reason=(
    "Qwen3.5-122B-A10B INT4 TP2 on 48 GB Ada cards, vLLM 0.16.1rc1 (kvplan's 0.17 line), fp8 KV at 131,072, 6 seqs: "
    "from the logged weights kvplan's pool is 1.59 GiB against 1.73 (-0.14, inside the 0.25 GiB floor), but a block "
    "here is 25,657,344 B (1.4 % of the pool), so the 6 blocks short are 66,816 tokens against 75,168 (-11 %) and "
    "1.74x against 1.89x. The 0.14 GiB is the profile peak: the implied activation + non-torch is 39.98 - 36.73 - "
    "1.73 = 1.52 GiB against kvplan's 1.41 encoder step + 0.25; the encoder step is an estimate (65,536 patches of "
    "Qwen3.5's ViT), which no logged term splits"))
def test_qwen35_122b_tp2_ada_tokens_from_the_logged_weights():
    p = _q35_122(weights_bytes=round(36.73 * GiB))
    assert close(p.kv_cache_tokens, 75_168) and close(p.max_concurrency, 1.89)


# ----------------------------------------------------------------------------- SPARK-REGISTRY: 0.28.1rc1 / 0.26.1rc1

QWEN36_1M = ("vllm serve nvidia/Qwen3.6-35B-A3B-NVFP4 --tensor-parallel-size 2 --max-model-len 1000000 "
             "--gpu-memory-utilization 0.30 --kv-cache-memory-bytes 8589934592 --kv-cache-dtype fp8 "
             "--max-num-batched-tokens 8192 --enable-chunked-prefill --no-enable-prefix-caching "
             "--reasoning-parser qwen3 --tool-call-parser qwen3_xml --enable-auto-tool-choice --quantization modelopt "
             "--attention-backend flashinfer --trust-remote-code --distributed-timeout-seconds 300")


def test_qwen36_35b_nvfp4_tp2_1m_hybrid_layout_from_the_pool_flag():
    # 10 full-attention layers, 1 KV head a rank x 256, fp8: 512 B a token a layer; a Gated DeltaNet layer's state a
    # rank is 32 / 2 value heads x 128 x 128 x 4 B (fp32) + (2 x 16 x 128 + 32 x 128) / 2 x 3 x 2 B (conv) =
    # 1,073,152 B = 2,096 x 512: the 2,096-token block; groups of 10 (1 attention + 3 GDN), 10,731,520 B a block.
    # 8 GiB // 10,731,520 = 800 blocks; a 1,000,000-token request takes cdiv(1,000,000, 2,096) = 478 + 3 GDN pages =
    # 481 blocks ('none' mode): 800 / 481 = 1.6632x, and the tokens line int(1.6632 x 1,000,000) = 1,663,201
    p = _plan(QWEN36_1M, "qwen3.6-35b-a3b-nvfp4", H100, "0.28", Layout(tp=2))
    assert p.block_size == 2_096 and p.ranks[0].bytes_per_block == 10_731_520 and p.blocks_per_request == 481
    assert p.num_blocks == 800 and p.kv_cache_tokens == 1_663_201 and f"{p.max_concurrency:.2f}" == "1.66"
    assert p.ranks[0].kv_pool_bytes == 8_589_934_592


def test_qwen3_vl_8b_fp8_router_layout_from_the_logged_pool():
    # 36 layers x 8 KV heads x 128 x (K + V) x 1 B (fp8) = 73,728 B a token, 16-token blocks of 1,179,648 B; 3,286
    # blocks = 3.610 GiB (printed "3.61") = 52,576 tokens; 49,152 / 16 = 3,072 blocks a request: 3,286 / 3,072 = 1.07x
    router = ("vllm serve Qwen/Qwen3-VL-8B-Instruct-FP8 --max-model-len 49152 --gpu-memory-utilization 0.15 "
              "--kv-cache-dtype fp8")
    p = _plan(router, "qwen3-vl-8b-instruct", H100, "0.26", Layout(), pool_bytes=3_286 * 1_179_648)
    assert p.ranks[0].kv_bytes_per_token == 73_728 and p.ranks[0].bytes_per_block == 1_179_648
    assert p.num_blocks == 3_286 and p.kv_cache_tokens == 52_576 and p.blocks_per_request == 3_072
    assert f"{p.max_concurrency:.2f}" == "1.07" and f"{3_286 * 1_179_648 / GiB:.2f}" == "3.61"


# ----------------------------------------------------------------------------- QWEN36-WSL-16K / -EAGER: 0.20.0

QWEN36_WSL_16K = ("vllm serve RedHatAI/Qwen3.6-35B-A3B-NVFP4 --served-model-name Qwen3.6-35B-A3B-NVFP4 "
                  "--trust-remote-code --host 0.0.0.0 --port 8000 --gpu-memory-utilization 0.90 --max-model-len 65536 "
                  "--max-num-seqs 1 --max-num-batched-tokens 16384 --kv-cache-dtype fp8_e4m3 "
                  "--quantization compressed-tensors --reasoning-parser qwen3 --tool-call-parser qwen3_coder "
                  "--moe-backend cutlass "
                  "--enable-prefix-caching --enable-chunked-prefill --safetensors-load-strategy prefetch "
                  "--max-cudagraph-capture-size 1")
QWEN36_WSL_EAGER = ("vllm serve RedHatAI/Qwen3.6-35B-A3B-NVFP4 --served-model-name RedHatAI/Qwen3.6-35B-A3B-NVFP4 "
                    "--host 0.0.0.0 --port 8000 --gpu-memory-utilization 0.80 --max-model-len 8192 "
                    "--kv-cache-dtype fp8_e4m3 --quantization compressed-tensors --reasoning-parser qwen3 "
                    "--tool-call-parser qwen3_coder --moe-backend marlin --enable-prefix-caching "
                    "--enable-chunked-prefill --max-num-seqs 32 --max-num-batched-tokens 8192 --trust-remote-code "
                    "--enforce-eager")
RTX5090 = get_gpu("RTX-5090")  # the unnamed 32 GB Blackwell card; only the sm120 layout is read from it here


@pytest.mark.parametrize("command, pool_bytes, blocks, tokens, per_request, conc", [
    (QWEN36_WSL_16K, round(1.28 * GiB), 64, 33_536, 38, "1.68"),
    (QWEN36_WSL_EAGER, round(0.318 * GiB), 15, 6_288, 10, "1.50")], ids=["16k-batch", "eager-8k"])
def test_qwen36_wsl_v0_20_hybrid_layouts_from_the_logged_pools(command, pool_bytes, blocks, tokens, per_request, conc):
    # The QWEN36-WSL layout (tests/test_engine_logs_dec02.py): 2,096-token blocks of 21,463,040 B, 4 groups, a request
    # cdiv(max_model_len, 2,096) attention pages + 2 pages in each of the 3 GDN groups ('align'). 1.28 GiB // 21,463,040
    # = 64 blocks: 64 // 4 x 2,096 = 33,536 tokens and 64 / (32 + 6) = 1.68x, as logged. "0.32 GiB" is 15 blocks
    # (6,288 = 15 // 4 x 2,096 and 15 / (4 + 6) = 1.50x as logged): a pool in [0.315, 16 x 21,463,040 B = 0.3198) GiB
    p = _plan(command, "qwen3.5-35b-a3b", RTX5090, "0.20", Layout(), pool_bytes=pool_bytes)
    assert p.block_size == 2_096 and p.ranks[0].bytes_per_block == 21_463_040
    assert p.num_blocks == blocks and p.kv_cache_tokens == tokens and p.blocks_per_request == per_request
    assert f"{p.max_concurrency:.2f}" == conc
    if blocks == 15:  # 15 blocks print "0.30", 16 "0.32": the logged "0.32" with 15 is a pool in [0.315, 0.3198) GiB
        assert f"{15 * 21_463_040 / GiB:.2f}" == "0.30" and f"{16 * 21_463_040 / GiB:.2f}" == "0.32"
        assert 0.315 * GiB <= pool_bytes < 16 * 21_463_040


def _wsl_pool(command: str) -> "object":
    """kvplan's plan of a QWEN36-WSL start: RedHatAI's export is W4A4 NVFP4 (compressed-tensors; the log's
    FlashInferCutlassNvFp4LinearKernel), planned as "nvfp4" over the bf16 preset's shapes with the logged weights."""
    return _plan(command, "qwen3.5-35b-a3b", RTX5090, "0.20", Layout(), weights_bytes=round(21.86 * GiB),
                 weight_format="nvfp4")


def test_qwen36_wsl_v0_20_cutlass_nvfp4_moe_peak_at_16k_batched_tokens():
    # --moe-backend cutlass: the NVFP4 experts run CutlassExpertsFp4 (kvplan.plan.vllm_cutlass_nvfp4_moe_transient_
    # bytes, vLLM 0.20.0 experts/cutlass_moe.py run_cutlass_moe_fp4): 168,576 B a token = (8 x 2048 + 8 x 1024
    # workspaces + 2048 output + 3 x 8 x 2048 shuffled a / shuffled c3 / weighted product + 2048 sum + 3 x 2048 MoE
    # input, residual, shared-expert output + 256 router logits) x 2 + 16 x 8 int32 / fp32 routing rows.
    narrow = _wsl_pool(QWEN36_WSL_16K.replace("--max-num-batched-tokens 16384", "--max-num-batched-tokens 8192"))
    wide = _wsl_pool(QWEN36_WSL_16K)
    act_narrow, act_wide = (next(t for t in p.ranks[0].terms if t.name.startswith("activation peak"))
                            for p in (narrow, wide))
    # 8192: 168,576 x 8192 = 1,380,974,592 + 268,435,456 held encoder outputs / inputs < the encoder step
    # 2,231,369,728: the peak stays the encoder's and the pool 4,239,042,216 B = 3.95 GiB (logged 2.95: +1.00)
    assert act_narrow.bytes == 2_231_369_728 and "encoder step" in act_narrow.name
    assert narrow.ranks[0].kv_pool_bytes == 4_239_042_216
    # 16384: 168,576 x 16,384 = 2,761,949,184 + 268,435,456 = 3,030,384,640 > the encoder step: the pool falls by
    # 3,030,384,640 - 2,231,369,728 = 799,014,912 B (0.74 GiB) to 3,440,027,304 B = 3.20 GiB (logged 1.28: +1.92;
    # before this term 3.95, +2.67); 3,440,027,304 // 21,463,040 = 160 blocks, 160 // 4 x 2,096 = 83,840 tokens
    assert act_wide.bytes == 168_576 * 16_384 + 268_435_456 == 3_030_384_640 and act_wide.basis == "derived"
    assert "CutlassExpertsFp4" in act_wide.source
    assert wide.ranks[0].kv_pool_bytes == 4_239_042_216 - 799_014_912 == 3_440_027_304
    assert wide.num_blocks == 160 and wide.kv_cache_tokens == 83_840
    # without --moe-backend cutlass (vLLM's oracle picks the NVFP4 backend: not modeled) the pool does not move
    auto = _wsl_pool(QWEN36_WSL_16K.replace("--moe-backend cutlass ", ""))
    assert auto.ranks[0].kv_pool_bytes == 4_239_042_216


@pytest.mark.xfail(strict=True, reason=(
    "Qwen3.6-35B-A3B NVFP4 on one Blackwell card under WSL, vLLM 0.20.0, the same flags but --max-num-batched-tokens "
    "8192 vs 16384: the logged pool drops from 2.95 to 1.28 GiB (-1.67), a difference the card cannot explain (same "
    "card, weights 21.86, CUDA-graph estimate 0.36 in both). kvplan's now drops 0.74 (3.95 -> 3.20): at 16,384 the "
    "LM's peak is CutlassExpertsFp4's NVFP4 MoE layer (--moe-backend cutlass; 168,576 B a token from vLLM 0.20.0 "
    "experts/cutlass_moe.py run_cutlass_moe_fp4 and modular_kernel.py _allocate_buffers: 2.57 GiB + 0.25 held "
    "encoder outputs) over the encoder step (2.08 GiB), at 8192 (1.29 + 0.25) it is not. The other 0.93 GiB is not "
    "sourced: the Gated DeltaNet core does not run in the profile (gdn_linear_attn.py _forward_core returns at "
    "attn_metadata None after a 64-token kernel warm-up, so no chunked delta-rule states), full attention returns "
    "likewise, the FP4 expert-quant scale buffers (MAX_TOKENS_PER_EXPERT 163,840 x 8 rows: 0.16 + 0.04 GiB) are fixed "
    "and freed before the layer's peak, a GDN layer's live tensors (the in_proj_qkvz output 12,288 wide + the core "
    "output, z copy and gated-norm output 3 x 4096 + input and residual 2 x 2048, bf16: ~57 KB a token) sit below the "
    "MoE layer's 168.6 KB, and the router logits are 512 B a token (all read in the 0.20.0 wheel)"))
def test_qwen36_wsl_v0_20_pool_moves_with_the_batch_budget():
    narrow = QWEN36_WSL_16K.replace("--max-num-batched-tokens 16384", "--max-num-batched-tokens 8192")
    assert close_gib(_wsl_pool(narrow).ranks[0].kv_pool_bytes - _wsl_pool(QWEN36_WSL_16K).ranks[0].kv_pool_bytes,
                     2.95 - 1.28)


# ----------------------------------------------------------------------------- GEMMA4-CLOUDRUN: 0.17.2rc1 (0.19 line)

GEMMA4_RUN = ("vllm serve gs://bucket/model-cache/google/gemma-4-31B-it --served-model-name google/gemma-4-31B-it "
              "--enable-log-requests --enable-chunked-prefill --enable-prefix-caching --generation-config auto "
              "--enable-auto-tool-choice --tool-call-parser gemma4 --reasoning-parser gemma4 --dtype bfloat16 "
              "--quantization fp8 --kv-cache-dtype fp8 --max-num-seqs 8 --gpu-memory-utilization 0.95 "
              "--tensor-parallel-size 1 --load-format runai_streamer --port 8080 --host 0.0.0.0 --max-model-len 32767")
RTX_PRO = get_gpu("RTX-PRO-6000")


def test_gemma4_31b_fp8_online_rtx_pro_weights_pool_and_tokens():
    # weights: the fp8 online layout of the 60 layers + the bf16 vision tower (1.07) and rotary tables: kvplan 31.35
    # GiB against the logged 31.47 (-0.12). Pool: 94.97 x 0.95 = 90.22 - 31.35 - 1.87 activation (the encoder's video
    # dummy step over the LM's 8192-token forward) - 0.25 non-torch = 56.75 GiB (logged 57.09: -0.34, -0.6 %; the
    # CUDA-graph estimate 0.16 is printed, not subtracted, on this line); 123,968 tokens (logged 124,704: -0.59 %)
    p = _plan(GEMMA4_RUN, "gemma-4-31b-it-nvfp4", RTX_PRO, "0.19", Layout())
    assert close_gib(p.ranks[0].weights_bytes, 31.47) and abs(p.ranks[0].weights_bytes / GiB - 31.35) < 0.01
    assert close_gib(p.ranks[0].kv_pool_bytes, 57.09) and abs(p.ranks[0].kv_pool_bytes / GiB - 56.75) < 0.01
    assert p.kv_cache_tokens == 123_968 and close(p.kv_cache_tokens, 124_704)


def test_gemma4_31b_fp8_online_rtx_pro_layout_from_the_logged_pool():
    # 60 layers in 6 groups of 10 (5 sliding-window groups, 1 full-attention group), fp8 KV, 16-token blocks of
    # 1,310,720 B: 57.09 GiB // 1,310,720 = 46,768 blocks; tokens = 46,768 // 6 groups x 16 = 124,704 as logged
    p = _plan(GEMMA4_RUN, "gemma-4-31b-it-nvfp4", RTX_PRO, "0.19", Layout(), pool_gib=57.09)
    assert p.block_size == 16 and p.ranks[0].bytes_per_block == 1_310_720
    assert [(g.kind, g.layers) for g in p.kv_groups] == [("sliding_attention", 10)] * 5 + [("full_attention", 10)]
    assert p.num_blocks == 46_768 and p.kv_cache_tokens == 124_704
