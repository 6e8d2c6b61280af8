"""More public vLLM start-up logs reproduced from their launch flags (issue 11, the 2026 round).

Tolerances as tests/test_engine_logs.py: memory within max(1 %, 0.25 GiB), tokens and concurrency within 1 %.

Sources:
- PLANNER: llm-d-incubation/llm-d-planner accuracy/results/v0.19.0/logs/*.log @d3121e059da88662db39a926a3ead964be97359b
  (removed again in 2489dbb; vLLM 0.19.0, one to four H100-80GB, ``--max-model-len 8192 --gpu-memory-utilization 0.95
  --no-enable-prefix-caching``, 8192 / 1024 batch defaults, PyTorch-native sampler, CUDA-graph estimate printed but
  not subtracted). Each test quotes its file and lines.
- L40S: a public GitHub markdown page "Hosting Qwen3-235B-A22B-Instruct-2507-FP8 on 8xL40S" (the search index's file
  id 38962983769; log dated 09-24 [2025]): vLLM 0.10.2, 8 x NVIDIA L40S (44.42 GiB exposed), TP8 + EP8.

What these logs established (the fixes beside this file, each with its vLLM source):
- kvplan.plan.vllm_moe_workspace_bytes: from 0.17 the fused-MoE workspace of the dummy run stays held (v1/worker/
  workspace.py) under the sampler's peak: +0.45 / +0.50 / +0.66 / +0.16 GiB of torch peak for DeepSeek-V2-Lite,
  Qwen3-30B-A3B, Mixtral TP2, Llama-4-Scout TP4 (that xfail in test_engine_logs_more.py now passes).
- kvplan.engines.vllm_mla_default: from 0.18 MLA takes its backend's preferred block: 16 on Hopper
  (FLASH_ATTN_MLA), 32 on B200 (FLASHINFER_MLA), 64 with an fp8 KV cache on Hopper (FLASHMLA).
- kvplan.plan.vllm_auto_dtype: ``--dtype auto`` serves a float32 checkpoint (google/gemma-2-9b-it) in bf16.
"""

import json
from pathlib import Path

import pytest

from kvplan import load_preset, parse_config
from kvplan.engines import VLLM_PROFILES, EngineConfig, vllm_mla_default
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan, vllm_moe_workspace_bytes
from kvplan.units import GiB
from tests.test_engine_logs import close, close_gib

H100 = get_gpu("H100-SXM")
L40S = get_gpu("L40S")
PRESETS = Path(__file__).parents[1] / "kvplan" / "presets"
V019 = EngineConfig(vllm_version="0.19", gpu_memory_utilization=0.95, max_model_len=8192, enable_prefix_caching=False)


def _term(p, prefix: str, rank: int = 0) -> int:
    return next(t.bytes for t in p.ranks[rank].terms if t.name.startswith(prefix))


def _check(p, log: dict, rank: int = 0) -> None:
    r = p.ranks[rank]
    assert close_gib(r.weights_bytes, log["weights"]), r.weights_bytes / GiB
    assert close_gib(r.kv_pool_bytes, log["kv"]), r.kv_pool_bytes / GiB
    assert close(p.kv_cache_tokens, log["tokens"]), p.kv_cache_tokens
    assert close(p.max_concurrency, log["conc"]), p.max_concurrency
    if "peak" in log:
        assert close_gib(_term(p, "activation peak", rank), log["peak"]), _term(p, "activation peak", rank) / GiB


# ----------------------------------------------------------------------------- llm-d-planner v0.19.0, one H100


@pytest.mark.parametrize("preset,tp,log", [
    # qwen-qwen3-30b-a3b--h100-80gb--tp1pp1dp1--8192.log: "Model loading took 56.88 GiB memory"; "torch peak memory
    # increase: 2.68GiB; non-torch forward increase memory: 0.27GiB"; "Available KV cache memory: 15.41 GiB"; "GPU KV
    # cache size: 168,288 tokens"; "Maximum concurrency for 8,192 tokens per request: 20.54x". kvplan: 56.88 / 2.69 /
    # 15.41 / 168,336 / 20.55 (before the MoE workspace: peak 2.19, KV 15.91, +3.3 % tokens).
    ("qwen3-30b-a3b", 1, dict(weights=56.88, peak=2.68, kv=15.41, tokens=168_288, conc=20.54)),
    # mistralai-mixtral-8x7b-i--...--tp2pp1dp1--8192.log (Mixtral-8x7B-Instruct-v0.1, TP2): "Model loading took 43.51
    # GiB"; "torch peak memory increase: 1.21GiB; non-torch forward increase memory: 2.07GiB"; "Available KV cache
    # memory: 28.44 GiB"; "465,936 tokens"; "56.88x". kvplan: 43.50 / 1.17 / 28.45 / 466,176 / 56.91.
    ("mixtral-8x7b", 2, dict(weights=43.51, peak=1.21, kv=28.44, tokens=465_936, conc=56.88)),
    # qwen-qwen3-8b--...--tp1pp1dp1--8192.log: "Model loading took 15.27 GiB"; "torch peak memory increase: 2.21GiB";
    # "Available KV cache memory: 57.5 GiB"; "418,688 tokens"; "51.11x". kvplan: 15.27 / 2.22 / 57.50 / 418,656 / 51.11.
    ("qwen3-8b", 1, dict(weights=15.27, peak=2.21, kv=57.5, tokens=418_688, conc=51.11)),
    # mistralai-mistral-small---...--8192.log (Mistral-Small-3.1-24B-Instruct-2503, Pixtral tower loaded): "Model
    # loading took 44.76 GiB"; "torch peak memory increase: 2.03GiB"; "Available KV cache memory: 28.19 GiB";
    # "184,752 tokens"; "22.55x". kvplan: 44.76 / 2.02 / 28.21 / 184,864 / 22.57.
    ("mistral-small-3.1-24b-instruct-2503", 1, dict(weights=44.76, peak=2.03, kv=28.19, tokens=184_752, conc=22.55)),
    # google-gemma-2-27b-it--...--8192.log: "Model loading took 50.72 GiB"; "torch peak memory increase: 3.66GiB";
    # "Available KV cache memory: 20.59 GiB"; "58,672 tokens"; "7.16x". kvplan: 50.72 / 3.70 / 20.56 / 58,576 / 7.14.
    ("gemma-2-27b-it", 1, dict(weights=50.72, peak=3.66, kv=20.59, tokens=58_672, conc=7.16)),
])
def test_planner_v0_19_h100_from_launch_flags(preset, tp, log):
    _check(plan(load_preset(preset), H100, V019, Layout(tp=tp)), log)


def test_planner_v0_19_moe_workspace_is_held_under_the_sampler_peak():
    # The three MoE logs above and DeepSeek-V2-Lite below logged 0.45 - 0.66 GiB more torch peak than the sampler
    # run alone (kvplan's 3.72 fp32-logit copies, pinned on the dense logs): the fused-MoE workspace
    # (kvplan.plan.vllm_moe_workspace_bytes), held by vLLM's WorkspaceManager from 0.17.
    # Qwen3-30B-A3B: K 2048, N 1536, top-8: (8192 x 8 x 2048 + 8192 x 8 x 2048) x 2 = 536,870,912 B
    assert vllm_moe_workspace_bytes(load_preset("qwen3-30b-a3b"), 1, 8192, 2) == 536_870_912
    # Mixtral TP2: N = 2 x 14336 / 2 = 14336, I 7168, K 4096, top-2: (8192 x 2 x 7168 + 8192 x 2 x 14336) x 2
    assert vllm_moe_workspace_bytes(load_preset("mixtral-8x7b"), 2, 8192, 2) == (8192 * 2 * 7168 + 8192 * 2 * 14336) * 2
    # under EP the experts are whole: N 28672 on every rank
    assert vllm_moe_workspace_bytes(load_preset("mixtral-8x7b"), 2, 8192, 2, ep=True) == (
        8192 * 2 * 14336 + 8192 * 2 * 28672) * 2
    # DeepSeek-V2-Lite: I 1408, N 2816, K 2048, top-6: (8192 x 6 x 2048 + 8192 x 6 x 2816) x 2 = 0.445 GiB
    assert vllm_moe_workspace_bytes(load_preset("deepseek-v2-lite"), 1, 8192, 2) == (8192 * 6 * 2048 + 8192 * 6 * 2816) * 2
    assert vllm_moe_workspace_bytes(load_preset("qwen3-8b"), 1, 8192, 2) == 0  # dense
    # only from 0.17 (0.11.1 allocated per call, freed before the sampler ran): the 0.16 peak is the sampler's alone
    spec = load_preset("qwen3-30b-a3b")
    old = plan(spec, H100, V019.model_copy(update={"vllm_version": "0.16"}))
    new = plan(spec, H100, V019)
    sampler = 1024 * 151_936 * 4 * 3.72 + 8192 * 2048 * 2
    assert abs(_term(new, "activation peak") - sampler - 536_870_912) < 2
    old_copies = VLLM_PROFILES["0.16"].sampler_copies["pytorch"]  # the pre-0.17 sampler's temporaries
    assert abs(_term(old, "activation peak") - (1024 * 151_936 * 4 * old_copies + 8192 * 2048 * 2)) < 2
    # online per-tensor FP8 experts (--quantization fp8: Fp8OnlineMoEMethod, weight StaticTensor x activation
    # DynamicTensor) take TRITON on Hopper too (fused_moe/oracle/fp8.py 0.17.0 - 0.34.0: FlashInfer CUTLASS wants
    # static activations, DeepGEMM block scales): the same TritonExperts workspace, 536,870,912 B, under the sampler
    fp8 = plan(spec, H100, V019.model_copy(update={"weight_format": "fp8"}))
    assert abs(_term(fp8, "activation peak") - sampler - 536_870_912) < 2
    # experts kvplan does not size (NVFP4 without --moe-backend cutlass): no workspace term
    nv = plan(spec, H100, V019.model_copy(update={"weight_format": "nvfp4"}))
    assert abs(_term(nv, "activation peak") - sampler) < 2


def test_planner_v0_19_deepseek_v2_lite_flash_attn_mla_block_16():
    # deepseek-ai-deepseek-v2---h100-80gb--tp1pp1dp1--8192.log (DeepSeek-V2-Lite-Chat, the deepseek-v2-lite preset's
    # architecture): "Using FLASH_ATTN_MLA attention backend out of potential backends: ['FLASH_ATTN_MLA', 'FLASHMLA',
    # 'TRITON_MLA']"; "Using TRITON backend for Unquantized MoE"; "Model loading took 29.43 GiB"; "torch peak memory
    # increase: 1.93GiB; non-torch forward increase memory: 0.26GiB"; "Available KV cache memory: 43.61 GiB"; "GPU KV
    # cache size: 1,505,552 tokens" (= 94,097 x 16, not a multiple of FlashMLA's 64); "183.78x".
    # kvplan: 29.28 (-0.15) / 1.93 / 43.78 / 1,511,168 (+0.37 %) / 184.47; before: block 64 and peak 1.48 (+1.4 %).
    p = plan(load_preset("deepseek-v2-lite"), H100, V019)
    assert p.block_size == 16 and 1_505_552 % 16 == 0 and 1_505_552 % 64 != 0
    assert p.ranks[0].kv_bytes_per_token == 27 * (512 + 64) * 2  # the MLA latent, 31,104 B
    _check(p, dict(weights=29.43, peak=1.93, kv=43.61, tokens=1_505_552, conc=183.78))


def test_mla_block_size_by_release_backend_and_kv_dtype():
    # vllm 0.18.0 / 0.21.0 / 0.33.0 platforms/interface.py update_block_size_for_backend: the first valid backend of
    # platforms/cuda.py _get_backend_priorities, its get_preferred_block_size(16)
    assert vllm_mla_default("H100-SXM", "0.19").block_size == 16  # FLASH_ATTN_MLA [MultipleOf(16)]
    assert vllm_mla_default("H200", "0.33", kv_quantized=True).block_size == 64  # FA MLA takes no fp8: FLASHMLA [64]
    # sm100: FLASHINFER_MLA [32, 64] (qk_nope_head_dim 64 / 128 / 192); a public 2026-04 log on TP/EP workers reads
    # "[interface.py:484] Setting kv cache block size to 32 for FLASHINFER_MLA backend." (search index file 56923016547)
    assert vllm_mla_default("B200", "0.33").block_size == 32
    assert vllm_mla_default("B200", "0.33", qk_nope_head_dim=96).block_size == 128  # CUTLASS_MLA
    assert vllm_mla_default("A100-80GB", "0.33").block_size == 16  # TRITON_MLA
    # 0.17.0 check_and_update_config still forced: FlashMLA 64 on Hopper, FlashInfer MLA 64 on sm100 (qk_nope 128,
    # from the 0.15.0 wheel; CUTLASS MLA 128 through 0.14)
    assert vllm_mla_default("H100-SXM", "0.17").block_size == 64
    assert vllm_mla_default("B200", "0.17").block_size == 64 and vllm_mla_default("B200", "0.16").block_size == 64
    assert vllm_mla_default("B200", "0.14").block_size == 128
    # plans: deepseek-v2-lite fp8 KV on an H100 keeps 64; a B200 at 0.33 uses 32
    spec = load_preset("deepseek-v2-lite")
    assert plan(spec, H100, V019.model_copy(update={"kv_cache_dtype": "fp8"})).block_size == 64
    assert plan(spec, get_gpu("B200"), EngineConfig(max_model_len=8192)).block_size == 32


def test_planner_v0_19_gemma2_9b_it_float32_config_served_in_bf16():
    # google-gemma-2-9b-it--...--8192.log: google/gemma-2-9b-it ships torch_dtype float32 (as the gemma-2-9b preset);
    # vLLM's --dtype auto downcasts it (config/model.py _resolve_auto_dtype): "Model loading took 17.22 GiB"; "torch
    # peak memory increase: 3.65GiB"; "Available KV cache memory: 54.12 GiB"; "GPU KV cache size: 168,880 tokens" (344,064
    # B a token: 42 x 8 x 2 x 256 x 2, bf16); "20.60x". kvplan: 17.22 / 3.69 / 54.08 / 168,752 / 20.58 (before: 34.44
    # GiB of fp32 weights, 57,424 tokens).
    spec = load_preset("gemma-2-9b")
    assert spec.dtype == "fp32"
    p = plan(spec, H100, V019)
    assert p.ranks[0].kv_bytes_per_token == 42 * 8 * 2 * 256 * 2
    _check(p, dict(weights=17.22, peak=3.65, kv=54.12, tokens=168_880, conc=20.60))
    # --dtype float32 keeps 4 bytes
    fp32 = plan(spec, H100, V019.model_copy(update={"weight_format": "fp32"}))
    assert fp32.ranks[0].weights_bytes > 1.99 * p.ranks[0].weights_bytes - 0.1 * GiB


def test_planner_v0_19_llama_3_1_8b_dtype_float32():
    # meta-llama-llama-3--h100-80gb--tp1pp1dp1--8192-dtf32.log: non-default args {'dtype': 'float32', ...}: "Model
    # loading took 29.98 GiB"; "torch peak memory increase: 2.21GiB"; "Available KV cache memory: 42.8 GiB"; "GPU KV
    # cache size: 175,296 tokens"; "21.40x". kvplan: 29.98 = 29.92 parameters + the rotary table in fp32 (131,072 x 128
    # x 4 B); KV 43.06 (+0.26, within 1 %), 176,352 (+0.6 %), 21.53x; the peak 1.95 (the fp32 sampler, -0.26).
    p = plan(load_preset("llama-3.1-8b"), H100, V019.model_copy(update={"weight_format": "fp32",
                                                                         "kv_cache_dtype": "fp32"}))
    assert _term(p, "rotary cos/sin caches") == 131_072 * 128 * 4
    _check(p, dict(weights=29.98, kv=42.8, tokens=175_296, conc=21.40))


def test_planner_v0_19_llama_3_1_8b_fp8_kv_cache():
    # meta-llama---h100-80gb--tp1pp1dp1--8192-dtbf16-kvfp8.log: {'dtype': 'bfloat16', 'kv_cache_dtype': 'fp8'}: "Model
    # loading took 14.99 GiB"; "Available KV cache memory: 58.11 GiB"; "GPU KV cache size: 952,032 tokens" (twice the
    # bf16 log's 476,016); "116.21x". kvplan: 14.99 / 58.11 / 952,048 / 116.22.
    p = plan(load_preset("llama-3.1-8b"), H100, V019.model_copy(update={"kv_cache_dtype": "fp8"}))
    assert p.ranks[0].kv_bytes_per_token == 32 * 8 * 2 * 128
    _check(p, dict(weights=14.99, peak=1.89, kv=58.11, tokens=952_032, conc=116.21))


def test_planner_v0_19_phi_2_at_2048():
    # microsoft-phi-2--h100-80gb--tp1pp1dp1--2048.log: "Model loading took 5.19 GiB"; "torch peak memory increase:
    # 0.79GiB"; "Available KV cache memory: 69.0 GiB"; "GPU KV cache size: 226,112 tokens"; "Maximum concurrency for
    # 2,048 tokens per request: 110.41x". kvplan: 5.18 / 0.77 / 69.04 / 226,208 / 110.45.
    p = plan(load_preset("phi-2"), H100, V019.model_copy(update={"max_model_len": 2048}))
    _check(p, dict(weights=5.19, peak=0.79, kv=69.0, tokens=226_112, conc=110.41))


def test_planner_v0_19_codellama_7b():
    # codellama-codellama-7b-h--h100-80gb--tp1pp1dp1--8192.log (codellama/CodeLlama-7b-hf): "Model loading took 12.56
    # GiB"; "torch peak memory increase: 0.77GiB"; "Available KV cache memory: 61.66 GiB"; "GPU KV cache size: 126,256
    # tokens"; "15.41x". CodeLlama-7b-hf is Llama-2-7B with the fields typed in below (its config.json: vocab_size
    # 32016, max_position_embeddings 16384, rope_theta 1e6, torch_dtype bfloat16). kvplan: 12.56 (with the 16,384 x
    # 128 x 2 B rotary table) / 0.77 / 61.65 / 126,256 / 15.41.
    cfg = json.loads((PRESETS / "llama-2-7b.json").read_text())
    cfg.update(vocab_size=32016, max_position_embeddings=16384, rope_theta=1000000.0, torch_dtype="bfloat16")
    p = plan(parse_config(cfg, "codellama-7b"), H100, V019)
    assert _term(p, "rotary cos/sin caches") == 16384 * 128 * 2
    _check(p, dict(weights=12.56, peak=0.77, kv=61.66, tokens=126_256, conc=15.41))


# ----------------------------------------------------------------------------- llm-d-planner v0.19.0, 2 - 4 H100


def _qwen2_5_72b_instruct():
    """The qwen2-72b preset with Qwen2.5-72B-Instruct's one memory-relevant difference typed in: max_position_embeddings
    32768 (Qwen2-72B: 131072), i.e. an 8 MiB rotary table, not 32 (the same 80 layers, hidden 8192, 64 / 8 heads,
    intermediate 29568, vocab 152,064, untied)."""
    cfg = json.loads((PRESETS / "qwen2-72b.json").read_text())
    cfg["max_position_embeddings"] = 32768
    return parse_config(cfg, "qwen2.5-72b-instruct")


def test_planner_v0_19_qwen2_5_72b_tp2_memory():
    # qwen-qwen2-5-72b-instruc--h100-80gb--tp2pp1dp1--8192.log: "Model loading took 67.8 GiB"; "torch peak memory
    # increase: 2.29GiB; non-torch forward increase memory: 2.09GiB"; "Available KV cache memory: 3.04 GiB".
    # kvplan: 67.80 (67.71 of parameters + 80 MiB of allocator blocks, kvplan.vllm_alloc: each down_proj shard, 8192 x
    # 14784 x 2 B = 231 MiB, holds a 232 MiB segment; + the 8 MiB rotary table) / 2.28 / 3.10 GiB
    p = plan(_qwen2_5_72b_instruct(), H100, V019, Layout(tp=2))
    assert close_gib(p.ranks[0].weights_bytes, 67.8) and close_gib(p.ranks[0].kv_pool_bytes, 3.04)
    assert abs(p.ranks[0].weights_bytes / GiB - 67.8) < 0.005  # to the log's two decimals
    assert close_gib(_term(p, "activation peak"), 2.29) and close_gib(_term(p, "non-torch"), 2.09)


@pytest.mark.xfail(strict=True, reason="Qwen2.5-72B TP2 v0.19.0: 20,288 tokens vs 19,920 logged (+1.8 %), 2.48x vs "
                   "2.43x. The log: 'Total non KV cache memory: 72.19GiB' of 'Requested memory: 75.23 GiB' leaves a 3.04 GiB "
                   "pool (kv_cache_blocks 1,245), so 1 % of the tokens is 0.03 GiB of the 72.19. kvplan's weights are the "
                   "log's to two decimals (67.80 with the allocator blocks, kvplan.vllm_alloc; 67.72 before); the 0.06 "
                   "GiB left is non-torch 2.05 (the fitted 0.55 + 1.50 trtllm workspace) vs 2.09 logged and peak 2.28 vs "
                   "2.29. The ten v0.19.0 TP 2 H100 logs print 2.06 - 2.11 (mean 2.08): 2.09 - 2.11 for the four 80-layer "
                   "hidden-8192 models (Qwen2.5-72B, Kimi-Dev-72B, Llama-3.3-70B bf16 / FP8), 2.06 - 2.07 for the six "
                   "others (TP 4: 2.21 vs 2.13), so non-torch grows with the model by ~0.03 GiB at TP 2; the trtllm "
                   "workspace is size-independent (3 multicast granules), and nothing in the 0.19.0 source read sizes the "
                   "rest by layers or hidden size: not derivable, and one fitted base cannot hold both groups to 0.03")
def test_planner_v0_19_qwen2_5_72b_tp2_tokens():
    # same log: "GPU KV cache size: 19,920 tokens", "Maximum concurrency for 8,192 tokens per request: 2.43x"
    p = plan(_qwen2_5_72b_instruct(), H100, V019, Layout(tp=2))
    assert close(p.kv_cache_tokens, 19_920) and close(p.max_concurrency, 2.43)


@pytest.mark.parametrize("pp,tokens,conc,last_kv", [
    # meta-llama-llama-3-1-8b---h100-80gb--tp1pp2dp1--8192.log: "Model loading took 7.51 GiB"; Worker_PP1 "Total non KV
    # cache memory: 9.6GiB; torch peak memory increase: 2.01GiB; non-torch forward increase memory: 0.07GiB" (75.23 -
    # 9.6 = 65.63 GiB of KV on the last stage); "GPU KV cache size: 1,075,312 tokens"; "131.26x".
    # kvplan: 1,077,536 (+0.21 %), 131.54x, last stage 65.77 GiB.
    (2, 1_075_312, 131.26, 75.23 - 9.6),
    # ...tp1pp4dp1--8192.log: "Model loading took 4.26 GiB"; Worker_PP3 "Total non KV cache memory: 6.34GiB" (68.89 GiB
    # of KV); "GPU KV cache size: 2,257,264 tokens"; "275.54x". kvplan: 2,261,568 (+0.19 %), 276.07x, 69.02 GiB.
    (4, 2_257_264, 275.54, 75.23 - 6.34),
])
def test_planner_v0_19_llama_3_1_8b_pipeline_parallel(pp, tokens, conc, last_kv):
    p = plan(load_preset("llama-3.1-8b"), H100, V019, Layout(pp=pp))
    assert close(p.kv_cache_tokens, tokens) and close(p.max_concurrency, conc)
    assert close_gib(p.ranks[-1].kv_pool_bytes, last_kv)
    assert close_gib(_term(p, "non-torch", pp - 1), 0.07) and close_gib(_term(p, "activation peak", pp - 1), 2.01)


def test_planner_v0_19_llama_3_1_8b_pp_first_stage():
    # pp2 log: "Available KV cache memory: 66.54 GiB" (logged once, by Worker_PP0: "Total non KV cache memory: 8.69GiB;
    # torch peak memory increase: 1.1GiB"); pp4 log: "69.8 GiB" (Worker_PP0: 5.43GiB, 1.1GiB). kvplan: 66.67 (+0.13)
    # and 69.92 (+0.12): stage 0 (no sampler) peaks at the cold compile's random copy of the embedding table,
    # 128,256 x 4096 x 2 B = 0.98 GiB (kvplan.engines.vllm_compile_benchmark_bytes), above the forward estimate
    # (8192 x (4 x 4096 + 6144 + 28672) x 2 B = 0.78; before the 2026-12 read kvplan had 0.78 and +0.33 / +0.32).
    for pp, kv in ((2, 66.54), (4, 69.8)):
        p = plan(load_preset("llama-3.1-8b"), H100, V019, Layout(pp=pp))
        assert close_gib(p.ranks[0].kv_pool_bytes, kv)
        assert _term(p, "activation peak") == 128_256 * 4096 * 2


# ----------------------------------------------------------------------------- vLLM 0.10.2, 8 x L40S


def _qwen3_235b_2507_fp8():
    """Qwen/Qwen3-235B-A22B-Instruct-2507-FP8: the qwen3-235b-a22b preset's architecture with the 2507 release's
    max_position_embeddings 262144 and rope_theta 5e6 and its fp8 quantization_config (block 128 x 128, dynamic
    activations) typed in."""
    cfg = json.loads((PRESETS / "qwen3-235b-a22b.json").read_text())
    cfg.update(max_position_embeddings=262144, rope_theta=5000000.0, quantization_config={
        "activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]})
    return parse_config(cfg, "qwen3-235b-a22b-instruct-2507-fp8")


def test_l40s_qwen3_235b_fp8_tp8_ep8_v0_10_2():
    # `vllm serve Qwen/Qwen3-235B-A22B-Instruct-2507-FP8 --tensor-parallel-size 8 --enable-expert-parallel
    # --gpu-memory-utilization 0.90 --swap-space 0 --max-model-len 32K`; "vLLM API server version 0.10.2"; "Chunked
    # prefill is enabled with max_num_batched_tokens=2048"; "Custom allreduce is disabled because it's not supported on
    # more than two PCIe-only GPUs"; "FlashInfer is not available. Falling back to the PyTorch-native implementation";
    # "Local/global number of experts: 16/128"; "Model loading took 27.7183 GiB"; "Free memory on device (43.93/44.42
    # GiB) on startup ... Actual usage is 27.72 GiB for weight, 1.4 GiB for peak activation, 0.21 GiB for non-torch
    # memory, and 3.45 GiB for CUDAGraph memory"; "Available KV cache memory: 10.65 GiB"; "GPU KV cache size: 238,208
    # tokens"; "Maximum concurrency for 32,768 tokens per request: 7.27x".
    # kvplan: 27.716 GiB, peak 1.40, non-torch 0.19, KV 10.67, 238,096 tokens, 7.27x (one KV head of 4 on each rank:
    # 94 x 1 x 128 x 2 x 2 B = 48,128 B a token).
    engine = EngineConfig(vllm_version="0.10.2", gpu_memory_utilization=0.9, max_model_len=32768, sampler="pytorch",
                          disable_custom_all_reduce=True)
    p = plan(_qwen3_235b_2507_fp8(), L40S, engine, Layout(tp=8, ep=True))
    assert p.ranks[0].kv_bytes_per_token == 94 * 128 * 2 * 2
    assert abs(p.ranks[0].weights_bytes / GiB - 27.7183) < 0.01
    assert close_gib(_term(p, "non-torch"), 0.21)
    _check(p, dict(weights=27.7183, peak=1.4, kv=10.65, tokens=238_208, conc=7.27))


def test_l40s_qwen3_235b_fp8_tp8_without_ep_is_refused():
    # without --enable-expert-parallel each rank would hold 1536 / 8 = 192 rows of every expert's gate / up: not whole
    # 128-row fp8 blocks, which vLLM's Fp8MoEMethod refuses at load
    with pytest.raises(Exception) as info:
        plan(_qwen3_235b_2507_fp8(), L40S, EngineConfig(vllm_version="0.10.2", max_model_len=32768), Layout(tp=8))
    assert "192 is not divisible by weight quantization block_n = 128" in str(info.value)


# ----------------------------------------------------------------------------- vLLM 0.28.0, L40S and 4 x L4 (AWS)
# A public blog post in a GitHub Pages repo, "LLM 최적화 실전 프로젝트 — 단일 인스턴스 처리량 최대화" (jinwoong, dated
# 2026-09-06; the search index's file id 60168338778): "측정 환경: AWS EC2 g6e.2xlarge (NVIDIA L40S 46GB) · g6.12xlarge
# (L4 24GB x4, NVLink 없음) · vLLM 0.28.0 · Qwen3-14B / Qwen3-14B-AWQ"; nvidia-smi "NVIDIA L40S, 8.9, 45460 MiB, 0 MiB,
# 46068 MiB". Defaults of 0.28: --gpu-memory-utilization 0.92, max_model_len 40,960 (the config), 2048 / 256 on a
# < 70 GiB card, the CUDA-graph estimate subtracted.

AWQ_Q3 = {"bits": 4, "group_size": 128, "modules_to_not_convert": None, "quant_method": "awq", "version": "gemm",
          "zero_point": True}  # Qwen/Qwen3-14B-AWQ config.json quantization_config (AutoAWQ GEMM, g128, zero points)
V028 = EngineConfig(vllm_version="0.28")
TUNED = V028.model_copy(update={"gpu_memory_utilization": 0.95, "max_model_len": 1024, "block_size": 16,
                                "enable_prefix_caching": True, "max_num_seqs": 8, "max_num_batched_tokens": 8192})


def _qwen3_14b_awq():
    cfg = json.loads((PRESETS / "qwen3-14b.json").read_text())
    return parse_config({**cfg, "quantization_config": AWQ_Q3}, "qwen3-14b-awq")


def test_blog_v0_28_l40s_qwen3_14b_weights():
    # `vllm serve Qwen/Qwen3-14B --disable-log-stats`: "Model loading took 27.52 GiB"; kvplan 27.52 (27.51 of bf16
    # shards + the 40,960 x 128 x 2 B rotary table). `vllm serve Qwen/Qwen3-14B-AWQ`: "모델 ... 9.44 GiB"; kvplan 9.42
    # (-0.02 GiB; 9.30, -1.5 %, before the allocator blocks of AWQ's tensors, kvplan.vllm_alloc: +120.5 MiB, qkv 17.5 ->
    # 18, gate_up 85 -> 86, down 42.5 -> 44 MiB a layer under the load's max_split_size_mb 20; AWQ on Marlin on sm89
    # keeps the checkpoint's bytes, its repack frees every old tensor: auto_awq.py, marlin.py replace_parameter). The
    # 0.02 left: 1 - 10 MiB scales carved from 20 MiB segments, order-dependent (not simulated)
    assert close_gib(plan(load_preset("qwen3-14b"), L40S, V028).ranks[0].weights_bytes, 27.52)
    assert abs(plan(load_preset("qwen3-14b"), L40S, V028).ranks[0].weights_bytes / GiB - 27.52) < 0.005
    for engine in (V028, TUNED):
        assert close_gib(plan(_qwen3_14b_awq(), L40S, engine).ranks[0].weights_bytes, 9.44)
    assert close_gib(plan(_qwen3_14b_awq(), get_gpu("L4"), V028, Layout(tp=2)).ranks[0].weights_bytes, 9.44 / 2)


# What the post's 0.28.0 logs leave outside weights and KV (1.73 - 1.80 GiB at TP 1, 1.17 at TP 2, 1.51 on PP stage
# 0) is, read in the 0.28.0 wheel (tests/test_engine_budget_02x.py): the V2 model runner (dense Qwen3, VLLM_CHANGES
# v2_runner_dense), which subtracts no CUDA-graph estimate before 0.29.0 and whose dummy sampler run holds only the
# logits; its sampler state (256 x 151,936 int32 bin counts + two bitmasks = 0.154 GiB, counted by 0.27.0's
# total_consumed); and the cold torch.compile's random copy of the embedding shard (151,936 x 5120 x 2 B = 1.449 GiB
# at TP 1, half at TP 2, stage 0 only). kvplan before that read (V1 terms: sampler 0.56, CUDA graphs 0.62): +0.35 /
# +0.51 / +0.44 GiB of KV at TP 1, -0.19 at TP 2, +0.65 on PP stage 0.


def test_blog_v0_28_l40s_qwen3_14b_pool():
    # "Available KV cache memory: 11.57 GiB", "GPU KV cache size: 75,824 tokens", "Maximum concurrency for 40,960
    # tokens per request: 1.85x" (0.92 x 44.42 - 27.52 - 11.57 = 1.78 GiB of the rest). kvplan: 11.50 GiB, 75,328
    # tokens (-0.65 %), 1.84x: peak 1.449 + non-torch 0.25 + sampler state 0.154 = 1.85 (before: 11.92, 78,128, +3.0 %)
    p = plan(load_preset("qwen3-14b"), L40S, V028)
    _check(p, dict(weights=27.52, kv=11.57, tokens=75_824, conc=1.85))
    assert _term(p, "activation peak") == 151_936 * 5120 * 2 and _term(p, "V2 sampler state") == 165_306_368
    assert not next(t for t in p.ranks[0].terms if t.name.startswith("CUDA graphs")).applied


def test_blog_v0_28_l40s_qwen3_14b_awq_pool():
    # AWQ defaults: "KV 캐시 29.63 GiB (194,192 tok)", "4.74x"; tuned (--gpu-memory-utilization 0.95 --max-model-len
    # 1024 --block-size 16 --enable-prefix-caching --max-num-seqs 8 --max-num-batched-tokens 8192): "31.02 GiB
    # (203,264 tok)", "198.50x". kvplan: 29.71 / 194,720 (+0.27 %) / 4.75x and 31.19 / 204,432 (+0.57 %) / 199.64x
    # before the allocator blocks of AWQ's tensors
    # (the tuned peak is still the embedding copy, above the 8192-token forward 0.98; state 8 rows 0.005 GiB); with
    # them (+120.5 MiB of weights, kvplan.vllm_alloc): 29.59 / 193,936 (-0.13 %) and 31.08 / 203,648 (+0.19 %).
    # Before the V2 terms: 30.14 / 31.53 GiB, +1.7 %.
    _check(plan(_qwen3_14b_awq(), L40S, V028), dict(weights=9.44, kv=29.63, tokens=194_192, conc=4.74))
    _check(plan(_qwen3_14b_awq(), L40S, TUNED), dict(weights=9.44, kv=31.02, tokens=203_264, conc=198.50))


def test_blog_v0_28_l4_tp2_qwen3_14b_awq_pool():
    # g6.12xlarge (4 x L4, PCIe "NODE", no NVLink), `--tensor-parallel-size 2`: "tp2 | 14.38 GiB (188,512 tok) | 4.60x".
    # kvplan: 14.40 GiB (+0.02; 14.48 before the allocator blocks of AWQ's tensors, 90.5 MiB a rank at TP 2)
    p = plan(_qwen3_14b_awq(), get_gpu("L4"), V028, Layout(tp=2))
    assert close_gib(p.ranks[0].kv_pool_bytes, 14.38)
    assert p.ranks[0].kv_bytes_per_token == 40 * 4 * 2 * 128 * 2  # 8 KV heads / 2 ranks


def test_blog_v0_28_l4_tp2_qwen3_14b_awq_tokens():
    # the log implies 0.92 x 22.03 - 4.72 - 14.38 = 1.17 GiB outside weights and KV at TP 2, 0.6 less than at TP 1:
    # the embedding copy is this rank's vocab shard (75,968 x 5120 x 2 B = 0.72 GiB). kvplan: 14.40 GiB, 188,672
    # tokens (+0.08 %), 4.61x (14.48 / 189,824 / +0.70 % before the allocator blocks of AWQ's tensors; V1 terms 1.43
    # GiB, 185,936 tokens, -1.4 %)
    p = plan(_qwen3_14b_awq(), get_gpu("L4"), V028, Layout(tp=2))
    assert close(p.kv_cache_tokens, 188_512) and close(p.max_concurrency, 4.60)
    assert _term(p, "activation peak") == 75_968 * 5120 * 2


def test_blog_v0_28_l4_pp2_qwen3_14b_awq_pool():
    # "pp2 | `--pipeline-parallel-size 2` ... | 14.04 GiB (184,000 tok) | 4.49x": stage 0 holds the embedding (its
    # cold-compile copy, 1.449 GiB, is its peak) and no sampler. kvplan: 14.03 / 15.09 GiB (stage 0 / 1), 183,936
    # tokens (-0.03 %), 4.49x (14.09 / 184,720 before the allocator blocks of AWQ's tensors; V1 terms: 14.69 / 14.37,
    # 188,288, +2.3 %)
    p = plan(_qwen3_14b_awq(), get_gpu("L4"), V028, Layout(pp=2))
    assert close_gib(p.ranks[0].kv_pool_bytes, 14.04) and close(p.kv_cache_tokens, 184_000)
    assert close(p.max_concurrency, 4.49) and p.ranks[1].kv_pool_bytes > p.ranks[0].kv_pool_bytes


def test_blog_v0_28_l4_single_qwen3_14b_awq_pool():
    # "single | 9.10 GiB (59,632 tok) | 1.46x". kvplan: 9.00 GiB, 58,944 tokens (-1.15 %), 1.44x (9.11 / 59,712 /
    # +0.13 % before the allocator blocks of AWQ's tensors; V1 terms: 9.54, +4.8 %): tokens and concurrency a strict
    # xfail, below. The post's replica runs, started later on the same instance, read 10.33 GiB (67,696 tokens) each:
    # 1.23 GiB more, the embedding copy (1.449) a warm compile cache no longer makes, less what it leaves (0.50 GiB
    # outside weights and KV: forward 0.24 + state 0.15 + non-torch 0.10); kvplan plans the cold first start.
    p = plan(_qwen3_14b_awq(), get_gpu("L4"), V028)
    assert close_gib(p.ranks[0].weights_bytes, 9.44) and close_gib(p.ranks[0].kv_pool_bytes, 9.10)


@pytest.mark.xfail(strict=True, reason=(
    "Qwen3-14B-AWQ on one L4, 0.28.0 defaults: 58,944 tokens vs 59,632 logged (-1.15 %), 1.44x vs 1.46x, pool 9.00 vs "
    "9.10 GiB (-0.10). The weights are the L40S log's (9.42 vs 9.44) and the TP 2 / PP 2 pools of the same L4 box "
    "come within 0.08 % of theirs, so this start's non-weight, non-KV use is 0.92 x 22.03 - 9.44 - 9.10 = 1.73 GiB "
    "against the L40S start's 1.80 and kvplan's 1.85 (peak 1.449 + non-torch 0.25 + sampler state 0.154): 0.12 GiB "
    "no flag sizes. It passed at +0.13 % while the weights were 0.12 GiB light (the allocator's whole blocks under "
    "the load's max_split_size_mb 20, kvplan.vllm_alloc, not counted)"))
def test_blog_v0_28_l4_single_qwen3_14b_awq_tokens():
    p = plan(_qwen3_14b_awq(), get_gpu("L4"), V028)
    assert close(p.kv_cache_tokens, 59_632) and close(p.max_concurrency, 1.46)
