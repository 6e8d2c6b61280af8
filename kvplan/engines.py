"""Engine profiles: how vLLM, SGLang and a hand-typed budget turn device memory into a KV pool.

Every number that is a default of an engine is a named constant with its source (file in the
engine's own tree, version read). Every number fitted to public logs says so (``basis="fitted"``),
names the logs, and states its error on them. Estimates are labelled ``estimated`` wherever they appear.

vLLM release lines whose memory accounting differs (``VLLM_PROFILES``; the newest planned one, 0.33, is the
default). Each is a run of releases between two entries of ``VLLM_CHANGES`` (first release of every change kvplan
models, read in the PyPI wheel of every release 0.11.0 - 0.34.0, patch releases included, and of 0.6.4.post1 - 0.7.2
and 0.10.0 - 0.10.2 around the V0 / 0.10 boundaries); rules ask ``vllm_has(profile, change)``:

=======  ==================  ===========================================================================================
profile  releases            what changes at its first release (VLLM_CHANGES key)
=======  ==================  ===========================================================================================
0.6      0.6.0-0.6.4, V0     the V0 engine as 0.7 below, but "non-torch" is everything outside torch's allocations, the
                             CUDA context included (0.6.4 worker.py: peak = torch peak allocated + (used - allocated));
                             chunked prefill (above 32K) batches 512 tokens; "Memory profiling results:" line (0.6.4).
0.6.5    0.6.5-0.6.6.post1   the 0.7 budget, 2048 chunked tokens (v0_profile_accounting); 0.6's rotary tables
0.7      0.7.0-0.9.x, V0     the V0 engine (the default up to 0.7.x; VLLM_USE_V1=0 in 0.8 / 0.9), kvplan.vllm_v0:
                             worker.py ``determine_num_available_blocks``: total x util - weights - torch peak -
                             non-torch; 256 seqs; chunked prefill (2048 tokens) only above 32K, otherwise the profile
                             run prefills max(max_model_len, 2048) tokens; sampler on the driver worker only; one
                             uniform cache over all layers, no null block; "# cuda blocks" line; one LongRoPE table
                             (longrope_one_table; MRoPE x 4 from 0.7.2, mrope_cache_x4: V0 refuses multimodal models)
0.10     0.10.0-0.10.1.1     V1 ``gpu_worker.determine_available_memory``: requested - weights - torch peak - non-torch;
                             CUDA graphs captured *after* the KV cache, out of (1 - util); FlashInfer top-k/top-p
                             sampler when installed; no DCP; PIECEWISE graphs at [1, 2, 4] + range(8, 513, 8) (67,
                             logged); NVFP4 swizzled scales kept beside the checkpoint's; the init snapshot is taken
                             *before* init_worker_distributed_environment, so the NCCL communicator and custom
                             all-reduce buffers count as non-torch (1.38 GiB at TP 2 over NVLink, VLLM_NON_TORCH)
0.10.2   0.10.2              NVFP4 block scales swizzled in place (nvfp4_single_scales)
0.11     0.11.0              DCP (tokens line x dcp_world_size), FULL_AND_PIECEWISE graphs (full_and_piecewise);
                             the init snapshot after the distributed init (snapshot_after_dist_init: TP non-torch 0.55);
                             dummy encoder outputs copied to the whole encoder budget (mm_dummy_outputs_expanded)
0.11.1   0.11.1-0.11.2       capture sizes step 16 above 256 (capture_step_16: 51 at 512, not 67); torch 2.9: a cold
                             compile's combo-kernel benchmark holds a copy of the embedding table (compile_combo_benchmark)
                             (spec_capture_rounded: speculative graph sizes rounded up to multiples of 1 + k)
0.12     0.12.0              triton_kernels bundled: MXFP4 MoE on Hopper takes Triton (triton_kernels_bundled);
                             --enable-prefix-caching kept for SupportsMambaPrefixCaching hybrids (mamba_prefix_caching);
                             dummy encoder outputs padded to an item (mm_dummy_outputs_item_rows); Pixtral's dense
                             block mask without xformers (mm_pixtral_dense_mask)
0.13     0.13.0              the DSA indexer's profile workspace (dsa_indexer_profile_workspace); dummy encoder outputs
                             kept as returned (mm_dummy_outputs_as_returned); the largest capture size min(2 x seqs x
                             (1 + k), 512) under speculation (spec_capture_widened)
0.14     0.14.0-0.14.1       "Model loading took" with 2 decimals (loading_two_decimals); block-FP8 MoE through the
                             modular kernel, its TritonExperts workspace kept on sm120 (fp8_moe_modular_kernel)
0.15     0.15.0-0.15.1       MambaSpec: a state page per draft token; prefix-caching "align" / "all" modes
                             (mamba_spec_pages)
0.16     0.16.0              NVFP4 CUTLASS weights padded to 32 (nvfp4_weight_pad)
0.17     0.17.0-0.17.1       the native sampler's temporaries drop ~60 % (Qwen3-14B 5.64 -> 2.23 GiB, llm-d-planner;
                             sampler_temporaries_v017); triton_kernels' value layout pads to 64 (triton_value_pad64);
                             FlashInfer all-reduce + RMSNorm fusion by default (fi_allreduce_fusion): its trtllm
                             workspace, 3 multicast-granular buffers (3 x 512 MiB), is made during the profile run's
                             compilation: non-torch 0.55 + 1.50 GiB at TP 2 / 4 / 8 on NVSwitch Hopper / Blackwell;
                             block-FP8 MoE on Hopper without EP takes TRITON, its workspace kept
                             (fp8_moe_hopper_triton; FP8 MoE on Ada / ROCm and per-tensor FP8 MoE everywhere: TRITON
                             too, plan.vllm_fp8_moe_backend); ModelOpt MIXED_PRECISION checkpoints (modelopt_mixed)
0.18     0.18.0-0.18.1       the CUDA-graph estimate is computed and printed, not subtracted (cudagraph_estimate_printed:
                             VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0); non-torch 0.25 GiB at TP 1 (non_torch_v018)
0.19     0.19.0-0.19.1       AWQ dense layers through choose_mp_linear_kernel: Machete on Hopper (awq_mp_kernel); the
                             DSA indexer's 512 MiB dummy logits in the profile forward (dsa_indexer_logits_reserve)
0.20     0.20.0              the estimate subtracted (cudagraph_estimate_applied; the log says "default since
                             v0.21.0"); gpu_memory_utilization 0.92 (gpu_util_0_92); + 1 MiB radix top-k workspace
                             for the DSA indexer (dsa_indexer_radix_workspace); GPTQ MoE experts on the modular
                             kernel: MarlinExperts' workspace kept (gptq_moe_modular_kernel)
0.20.1   0.20.1-0.20.2       tokens line = int(concurrency x max_model_len) on its own line (tokens_line_split); an
                             off-stride max_num_batched_tokens is a capture size (capture_max_tokens)
0.21     0.21.0              FlashInfer top-k / top-p sampler by default (flashinfer_sampler_default); the load runs
                             under max_split_size_mb 20: a parameter of >= 20 MiB keeps its whole segment
                             (load_max_split_20, kvplan.vllm_alloc); ModelOpt W4A16_NVFP4 (modelopt_w4a16_nvfp4)
0.22     0.22.0-0.22.1       triton_kernels' value layout back to the pack sizes (triton_value_pack);
                             dynamic-NTK tables of max_position rows (dynamic_ntk_max_position); "all" mode counts the
                             draft pages (mamba_all_draft_pages); the V2 model runner by default for dense unquantized
                             Qwen3 (v2_runner_qwen3; kvplan.engines.vllm_model_runner); a multimodal prefix-LM
                             model's default batch budget raised to its largest item (Gemma-4: 2,496;
                             mm_prefix_lm_batch_floor); Gemma-4's tower runs frames in chunks (gemma4_encoder_chunk);
                             AWQ MoE experts keep MarlinExperts' workspace (awq_moe_modular_kernel); W4A16_NVFP4
                             layers inside MIXED_PRECISION (modelopt_mixed_w4a16_nvfp4)
0.23     0.23.0              V2 also for dense unquantized Llama / Mistral (v2_runner_llama_mistral); compressed-
                             tensors wNa16 MoE experts (Kimi-K2 / K2.5 int4) keep MarlinExperts' workspace
                             (wna16_moe_modular_kernel); a MIXED_PRECISION lm_head (modelopt_mixed_lm_head)
0.24     0.24.0              Marlin pads misaligned shards instead of refusing them (marlin_tile_padding); V2 for the
                             six listed architectures, quantized too (v2_runner_listed); MIXED_PRECISION below
                             Ada (modelopt_mixed_sm75); block-FP8 MoE on sm120 picks DEEPGEMM by default
                             (deep_gemm_sm120: kvplan plans VLLM_USE_DEEP_GEMM=0's TRITON)
0.25     0.25.0-0.25.1       the fusion workspace on FlashInfer's mnnvl backend by default: one 512 MiB multicast
                             buffer instead of trtllm's three (fi_allreduce_mnnvl: non-torch 1.0 GiB lower at TP >= 2);
                             V2 for every dense non-hybrid model and the listed MoE (v2_runner_dense), whose PIECEWISE
                             graph sizes stay unrounded under speculation (v2_spec_capture_unrounded)
0.26     0.26.0              sliding windows hold max_concurrent_batches (2) x max_num_batched_tokens in flight
                             (swa_in_flight_batches; before: one batch, whatever PP)
0.27     0.27.0-0.27.1       memory_profiling: non-KV = total consumed (free memory at the init snapshot - after the
                             profile run) + transient peak, the CUDA-graph profile outside it (total_consumed_accounting):
                             tensors made after "Model loading took" and before the profile now count (V2 sampler state);
                             text-only serving (--language-model-only) drops the prefix-LM batch floor
                             (mm_prefix_lm_text_only_off); the V2 runner profiles the encoder (v2_mm_encoder_profile);
                             the FlashInfer TRTLLM MXFP4 MoE pads I per partition to 128, not 256 (mxfp4_trtllm_inter_128)
0.28     0.28.0              prefix caching on by default for hybrids (hybrid_prefix_caching), "align" for every
                             hybrid (mamba_align_only; "all" for SupportsMambaPrefixCaching models when asked before);
                             the >= 160 GiB batch tier (batch_tier_160); CUDA graphs up to 1024 tokens on datacenter
                             Blackwell (capture_1024_sm100: 83 sizes at 1024 seqs, not 51); tokens line and
                             concurrency on one line (tokens_line_one)
0.29     0.29.0              the V2 model runner for every model (v2_runner_all) and its CUDA-graph estimate subtracted
                             (v2_cudagraph_estimate; V2 through 0.28.0 estimates none: kvplan.engines.vllm_model_runner)
                             (spec_capture_decode_sizes: the uniform decode sizes n x (1 + k) join the capture sizes)
0.30     0.30.0-0.31.0       DeepSeek-V4's --kv-cache-dtype auto becomes fp8_ds_mla (dsv4_auto_kv_fp8); sparse-MLA
                             index groups (dsa_index_groups); 0.31.0 makes max_num_seqs a capture size
                             (capture_max_seqs: planned from 0.32.0, this line follows 0.30.0)
0.32     0.32.0              Mamba-2 prefill checkpoint page in align mode (mamba2_checkpoint_page); MRoPE tables by
                             mrope_positions_factor (1 for Qwen3-VL / Qwen3.5; mrope_positions_factor); DSA prefill
                             workspace rows by sparse_mla_prefill_workspace_factor (dsa_prefill_workspace_factor);
                             DeepSeek-V4's MXFP4 experts take Humming on Hopper, not Marlin (mxfp4_humming_hopper)
0.33     0.33.0-0.33.x       the V2 runner's dummy sampler runs a second pass with warmup parameters: fp32 logits,
                             FlashInfer's top-k mask and softmax (v2_sampler_warmup_pass; vllm_v2_dummy_sampler_bytes:
                             Llama-3.1-8B, 1,024 rows: 1.78 GiB, was the 0.78 GiB forward)
0.34     0.34.0 (estimates)  the KV cache sized from memory measured after warmup and CUDA-graph capture, 1.0 of the
                             device by default (extensible_kv_cache); 64-token blocks by default (block_size_64); no V1
                             model runner (v1_runner_removed); split prefill / decode capture grids on SM 10.x
                             (capture_split_sm100); the DSA indexer reserves decode logits too
                             (dsa_indexer_decode_logits). Planned from kvplan's estimates (plan._extensible_budget,
                             every plan warns); DSA, V4, speculative, multimodal, SM 10.x graphs refused; default 0.33
=======  ==================  ===========================================================================================

Every earlier key still works (links, CLI) and names the run holding its own release; the runs are shorter than before
the 2026-12 split ("0.7" was 0.6.5 - 0.9.x, "0.10" 0.10.0 - 0.10.2, "0.11" 0.11.0 - 0.16.x, "0.17" 0.17.0 - 0.20.x,
"0.21" 0.21.0 - 0.32.x; "0.24" 0.24.0 - 0.25.1 until the FlashInfer mnnvl default split off "0.25"; "0.26" 0.26.0 -
0.27.1, "0.28" 0.28.0 - 0.29.0 and "0.22" 0.22.0 - 0.23.0 until the 2026-12 read of the budget path split off "0.27",
"0.29" and "0.23"); "0.33" was 0.32.0 - 0.33.x until the 0.33.0 V2 sampler pass split off "0.32".
``vllm_profile_for_release("0.27.1")`` gives the profile of any release ("0.27"). 0.32.0 runs ngram speculation on the
V2 runner too (v2_ngram).
"""

import functools
import re
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from kvplan.drafter import DraftSpec
from kvplan.parallel import VOCAB_PADDING
from kvplan.sglang import SGLANG_DEFAULT_VERSION, SGLANG_PROFILES, SglangVersion, default_settings
from kvplan.units import GiB, MiB, cdiv

VllmVersion = Literal["0.6", "0.6.5", "0.7", "0.10", "0.10.2", "0.11", "0.11.1", "0.12", "0.13", "0.14", "0.15", "0.16",
                      "0.17", "0.18", "0.19", "0.20", "0.20.1", "0.21", "0.22", "0.23", "0.24", "0.25", "0.26", "0.27",
                      "0.28", "0.29", "0.30", "0.32", "0.33", "0.34"]
# The default profile; "0.34" plans from estimates no public 0.34 log has checked (VLLM_034_PLAN_NOTE), and which
# line is the default is the project lead's call, so 0.33 stays.
VLLM_DEFAULT_VERSION: VllmVersion = "0.33"


class VllmProfile(BaseModel):
    """One vLLM release line's memory accounting: defaults read in its source, constants fitted to its logs."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    version: str
    releases: str
    first_release: tuple[int, int, int]  # the run of releases starts here (VLLM_CHANGES)
    gpu_memory_utilization: float  # vllm/config/cache.py CacheConfig.gpu_memory_utilization
    # CUDA graphs: "after_kv" = captured after the KV cache is sized (not budgeted, logged "Graph capturing
    # finished ... took X GiB"); "printed" = GPUModelRunner.profile_cudagraph_memory runs and logs
    # "Estimated CUDA graph memory" but the env default leaves it out of the budget; "applied" = subtracted.
    cudagraph: Literal["after_kv", "printed", "applied"]
    cudagraph_modes: int  # PIECEWISE only (1) or FULL_AND_PIECEWISE (2)
    capture_step_above_256: int  # 8: [1,2,4]+range(8, max+1, 8); 16: [1,2,4]+range(8,256,8)+range(256,max+1,16)
    # "GPU KV cache size" line: "groups" = num_blocks // len(groups) x block_size (x dcp), kv_cache_utils
    # get_kv_cache_config_from_groups (0.10/0.11, 0.19.0 logs); "concurrency" = int(concurrency x max_model_len) on
    # one line with the concurrency (0.33 update_kv_cache_capacity); "concurrency_split": the same number on its own
    # line, the concurrency on the next (0.21.0 wheel, kv_cache_utils.py _report_kv_cache_config).
    tokens_line: Literal["groups", "concurrency", "concurrency_split"]
    in_flight_batches: int  # batches a sliding window must also hold (max_concurrent_batches)
    supports_dcp: bool
    sampler_default: Literal["flashinfer", "pytorch"]  # topk_topp_sampler.py default path
    large_tier: bool  # arg_utils.get_batch_defaults has the >= 160 GiB row (16384 / 1024)
    non_torch_single: int  # non-torch growth after the init snapshot, TP 1 (bytes, fitted)
    non_torch_tp: int  # TP >= 2 with custom all-reduce (NVLink in one node), before the extras of VLLM_NON_TORCH
    non_torch_tp_no_custom_ar: int  # TP >= 2, custom all-reduce off (no P2P, across nodes, or disabled)
    non_torch_pp: int  # PP >= 2 at TP 1
    sampler_copies: dict[str, float]  # torch peak of the dummy sampler run / (num_reqs x vocab x 4 B)
    source: str
    engine_core: Literal["V1", "V0"] = "V1"  # V0: vllm/worker + vllm/engine/llm_engine.py (kvplan.vllm_v0)

    @property
    def label(self) -> str:
        """How the version reads in the CLI and the sidebar: "0.7 (V0 engine)", "0.33"."""
        return f"{self.version} (V0 engine)" if self.engine_core == "V0" else self.version


_GIB = GiB


def _g(x: float) -> int:
    return round(x * _GIB)


# Fitted constants and their public logs (all figures GiB as logged; "act+nt" = requested - weights - KV):
# sampler copies, PyTorch-native sampler, 0.10-0.16: 9.55 = mean of
#   vLLM #23278 (0.10.1, H100, gpt-oss-120b, 1024 seqs x 201,088 vocab): (7.45 - 0.13 - 0.04) / 0.767 = 9.48;
#   #27508 2nd log (0.11, util 0.95, 1.71 GiB KV, same weights): 9.67; llm-d-planner Qwen3-14B v0.15/0.16
#   5.64 GiB: 9.60; llm-d-benchmark empirical-vllm-memory-results.md gpt-oss-20b 7.38 / Llama-3.1-8B 4.76 /
#   Qwen3-0.6B 5.56: 9.56 / 9.60 / 9.57; dennislee22 Qwen2-7B TP2 A100-40GB (native, Ray): 9.24.
# FlashInfer sampler, 0.10: 2.8 from dennislee22 Qwen2-7B TP1 at 0.25 and 0.5 (act+nt 0.55 GiB, nt 0.13).
# native sampler 0.17+: 3.72 = llm-d-planner v0.19.0 Llama-3.1-8B 1.89 (3.73), Qwen2.5-7B 2.21 (3.715),
#   Qwen3-14B v0.17 2.23 (3.71), gemma-2-9b 3.62-3.66 (3.65-3.69).
# non-torch: 0.13 at TP 1 (llm-d-benchmark empirical results; llm-d-planner v0.15-0.17), 0.25 from v0.18
#   (llm-d-planner v0.18/v0.19); TP >= 2: see VLLM_NON_TORCH below (by what allocates it: the release's snapshot
#   point, custom all-reduce, FlashInfer's fusion workspace, NCCL NVLS); custom all-reduce off 0.19 (dennislee22
#   TP 2: 0.25 on one A100-80GB node without P2P, 0.14 on two A100-40GB nodes); PP 0.07 (v0.19).
_NATIVE_OLD, _NATIVE_NEW, _FLASHINFER = 9.55, 3.72, 2.8

# V0 (profile 0.7), fitted to its public logs (tests/test_engine_v0.py; GiB as logged):
# sampler copies 9.7: vLLM PR #10511 Meta-Llama-3-8B on H100, 8192 batched tokens and 256 rows: activation 1.26 GiB at
#   TP 1 and TP 2 (the sampler runs on the driver worker and is not divided by TP): (1.26 - 0.0625) / 0.1223 = 9.79;
#   vLLM #13061 (2 x RTX 4090, Qwen2-14B, 2048 tokens): the driver's 1.41 GiB implied by its 81,536 tokens gives 9.6.
#   The V1 0.10 native sampler, a port of V0's _apply_top_k_top_p, fits 9.55. Error <= 0.02 GiB where the sampler is
#   the peak; where the forward is (kvplan.vllm_v0.activation, MLP gate_up x 1.5): mellea -0.03, the v0.7.2 T4 log
#   -0.004 GiB at 32K tokens, #10517 (0.6.4, RTX 3090) +0.11 / +0.19 GiB at 20K / 29K tokens.
# non-torch: 0.16 at TP 1 (mellea PR #416 Qwen3-0.6B, gateway-api-inference-extension PR #550 Llama-2-7B, vLLM PR
#   #12126: all 0.16 on H100; 0.09 on A100 and 0.01 on T4 in unsloth / LF-GRPO logs, inside 0.25 GiB); TP >= 2 without
#   custom all-reduce 0.25 (#13061, two RTX 4090; 0.20 on 3090s in PR #14447); with custom all-reduce 0.55, taken from
#   V1 0.10, which reuses V0's memory_profiling (vLLM PR #19312) [no V0 NVLink log found]; PP as 0.10.
_V0_SAMPLER = 9.7
# V0 before 0.6.5 (profile 0.6): non-torch = used - torch allocated after the profile run, the CUDA context and
#   cuBLAS / NCCL workspaces included: 0.35 at TP 1 (vLLM #10517, 0.6.4, RTX 3090, Llama-3.1-8B: "non_torch_memory=
#   0.35GiB" at 20K, 29K and 35K); 1.96 at TP 2 with custom all-reduce (vLLM PR #10909, a 0.6.4 dev build, 2 x H100:
#   "non_torch_memory=1.96GiB"); without custom all-reduce 0.44 = 0.35 + the 0.09 NCCL adds in the 0.7 logs
#   (#13061 0.25 vs 0.16) [derived]. Sampler as 0.7 (the same _apply_top_k_top_p).

Release = tuple[int, int, int]

# The first vLLM release of every accounting change kvplan models, read in the PyPI wheels of every release from 0.11.0
# to 0.33.0 (``pip download vllm==X --no-deps``, 2026-12; patch releases included): name -> (first release, source).
# A profile below is a run of releases between two of these; every release-dependent rule (the profile fields built
# by ``_v1``, kvplan.vllm_layouts, kvplan.plan) asks ``vllm_has(version, change)``, i.e. compares the profile's first
# release with the change's, so a rule can never disagree with the profile boundaries.
VLLM_CHANGES: dict[str, tuple[Release, str]] = {
    "v0_profile_accounting": ((0, 6, 5), ("V0 worker.py determine_num_available_blocks: non-torch = the growth after "
                                          "the init snapshot from 0.6.5 (0.6.4: used - torch allocated; kvplan.vllm_v0)")),
    "longrope_one_table": ((0, 7, 0), ("rotary_embedding.py Phi3LongRoPEScaledRotaryEmbedding: only "
                                       "long_short_cos_sin_cache in 0.7.0; 0.6.6.post1 also registers the long and "
                                       "short caches")),
    "mrope_cache_x4": ((0, 7, 2), ("rotary_embedding.py MRotaryEmbedding: max_position_embeddings * 4 rows in 0.7.2 "
                                   "(0.7.1: max_position)")),
    "nvfp4_single_scales": ((0, 10, 2), ("quantization/modelopt.py: the swizzled NVFP4 block scales replace "
                                         "weight_scale (vllm#23379) in 0.10.2; 0.10.1.1 keeps weight_scale_swizzled / "
                                         "w13_blockscale_swizzled beside the checkpoint's")),
    "snapshot_after_dist_init": ((0, 11, 0), ("v1/worker/gpu_worker.py init_device: MemorySnapshot() after "
                                              "init_worker_distributed_environment in 0.11.0 ('Initialize the "
                                              "distributed environment BEFORE taking memory snapshot. This ensures "
                                              "NCCL buffers are allocated before we measure'); 0.10.2 takes it before, "
                                              "so the NCCL communicator and custom all-reduce buffers are non-torch")),
    "full_and_piecewise": ((0, 11, 0), "FULL_AND_PIECEWISE CUDA graphs by default (0.11.0 wheel, config/compilation.py)"),
    "decode_context_parallel": ((0, 11, 0), "--decode-context-parallel-size (0.11.0 wheel, kv_cache_utils.py x dcp)"),
    "capture_step_16": ((0, 11, 1), ("config/vllm.py _set_cudagraph_sizes: [1, 2, 4] + range(8, 256, 8) + range(256, "
                                     "max + 1, 16) in 0.11.1; 0.11.0 config/scheduler.py: range(8, max + 1, 8)")),
    # Speculative decoding's CUDA-graph sizes (kvplan.engines cuda_graph_sizes_by_mode), read in the PyPI wheels of
    # every release 0.10.0 - 0.34.0 on 2026-12-03 (config/vllm.py _set_cudagraph_sizes, config/compilation.py
    # adjust_cudagraph_sizes_for_spec_decode, v1/cudagraph_dispatcher.py, v1/worker/gpu/cudagraph_utils.py):
    "spec_capture_rounded": ((0, 11, 1), ("config/compilation.py adjust_cudagraph_sizes_for_spec_decode first in "
                                          "0.11.1: with FULL decode graphs and 1 + num_speculative_tokens > 1 every "
                                          "capture size is rounded up to a multiple of 1 + k, those past the largest "
                                          "dropped (called from v1/worker/gpu_model_runner.py through 0.19.x, from "
                                          "CompilationConfig.resolve_cudagraph_mode_and_sizes from 0.20.0); 0.11.0 "
                                          "has no such step")),
    "spec_capture_widened": ((0, 13, 0), ("config/vllm.py _set_cudagraph_sizes: max capture size = min(max_num_seqs x "
                                          "(1 + num_speculative_tokens) x 2, 512) in 0.13.0 (0.12.0: min(max_num_seqs "
                                          "x 2, 512) whatever the speculation)")),
    "v2_spec_capture_unrounded": ((0, 25, 0), ("config/compilation.py resolve_cudagraph_mode_and_sizes rounds only "
                                               "'not use_v2_model_runner' in 0.25.0; the V2 runner's CudaGraphManager "
                                               "(v1/worker/gpu/cudagraph_utils.py _init_candidates) keeps its "
                                               "PIECEWISE sizes and rounds its FULL decode sizes alone (0.22.0 - "
                                               "0.24.0: its __init__ calls adjust_cudagraph_sizes_for_spec_decode "
                                               "itself)")),
    "capture_1024_sm100": ((0, 28, 0), ("config/vllm.py _set_cudagraph_sizes: default_max_graph_size = 1024 if "
                                        "current_platform.is_device_capability_family(100) else 512 in 0.28.0 "
                                        "(datacenter Blackwell: B200, B300, GB200, GB300); 512 on every GPU before")),
    "capture_max_tokens": ((0, 20, 1), ("config/vllm.py _set_cudagraph_sizes: 'ensure max_num_tokens is captured if "
                                        "within max capture size': max_num_batched_tokens <= the max capture size is "
                                        "appended when off the 8 / 16 stride, in 0.20.1 (0.20.0: not)")),
    "capture_max_seqs": ((0, 31, 0), ("config/vllm.py _set_cudagraph_sizes without speculation: max_num_seqs is "
                                      "appended when <= the max capture size and max_num_batched_tokens "
                                      "(uniform_decode_sizes = [max_num_seqs]) in 0.31.0; 0.30.0: not")),
    "spec_capture_decode_sizes": ((0, 29, 0), ("config/vllm.py _set_cudagraph_sizes appends the uniform decode sizes "
                                               "n x (1 + k), n in [1, 2, 4] + range(8, 256, 8) + range(256, "
                                               "max_num_seqs + 1, 16) + [max_num_seqs] (request_counts), those within "
                                               "the max capture size and max_num_batched_tokens, in 0.29.0")),
    "mxfp4_triton_torch28": ((0, 10, 2), ("the 0.10.2 wheel pins torch 2.8.0 (0.10.0 - 0.10.1.1: torch 2.7.1, wheel "
                                          "METADATA): mxfp4.py get_mxfp4_backend's Triton path (is_torch_equal_or_"
                                          "newer('2.8.0') and has_triton_kernels()) is open where triton_kernels is "
                                          "installed, as in the vllm/vllm-openai image (EngineConfig.triton_kernels)")),
    "triton_kernels_bundled": ((0, 12, 0), ("vllm/third_party/triton_kernels first in the 0.12.0 wheel; "
                                            "utils/import_utils.py has_triton_kernels() finds it, so mxfp4.py "
                                            "get_mxfp4_backend picks TRITON on Hopper (0.11.x: only a separately "
                                            "installed triton_kernels, else MARLIN)")),
    "mamba_prefix_caching": ((0, 12, 0), ("models/config.py MambaModelConfig: --enable-prefix-caching is kept for "
                                          "SupportsMambaPrefixCaching models (mamba_block_size = block_size, so "
                                          "MambaSpec holds cdiv(max_model_len, block_size) pages) in 0.12.0; 0.11.x "
                                          "disables prefix caching for every hybrid ('not yet supported')")),
    "loading_two_decimals": ((0, 14, 0), ("gpu_model_runner.py 'Model loading took %s GiB' with format_gib (round 2) "
                                          "in 0.14.0; '%.4f GiB' through 0.13.0")),
    "mamba_spec_pages": ((0, 15, 0), ("kv_cache_interface.py MambaSpec.max_memory_usage_bytes = page x (1 + "
                                      "num_speculative_blocks) in 0.15.0; one page through 0.14.1")),
    "nvfp4_weight_pad": ((0, 16, 0), ("quantization/utils/nvfp4_utils.py pad_nvfp4_weight_for_cutlass (vllm#31099) "
                                      "first in the 0.16.0 wheel (0.15.1 refused such shards)")),
    "triton_value_pad64": ((0, 17, 0), ("third_party/triton_kernels/.../hopper_value.py 'Pre-pad both matrix dims to "
                                        "multiples of 64': the 0.17.0 - 0.21.0 bundle (one file, md5 b8eeed8a)")),
    "sampler_temporaries_v017": ((0, 17, 0), ("v1/sample/ops/topk_topp_sampler.py rewritten in 0.17.0; fitted 3.72 "
                                              "copies (llm-d-planner v0.17 / v0.19 logs, see _NATIVE_NEW)")),
    "fi_allreduce_fusion": ((0, 17, 0), ("config/vllm.py enable_allreduce_rms_fusion (TP > 1, CUDA, flashinfer "
                                         "installed, capability 90 / 100, DP == 1 and PP == 1) sets pass_config."
                                         "fuse_allreduce_rms in 0.17.0 (0.16.0: enable_fi_allreduce_fusion off by "
                                         "default); the pass makes FlashInfer's workspace while compiling in the "
                                         "profile run (VLLM_FI_AR_WORKSPACE_BYTES)")),
    "cudagraph_estimate_printed": ((0, 18, 0), ("gpu_model_runner.py profile_cudagraph_memory first in 0.18.0; envs.py "
                                                "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS default '0' in 0.18.x / 0.19.x")),
    "non_torch_v018": ((0, 18, 0), ("fitted: non-torch 0.13 GiB at TP 1 in the llm-d-planner v0.15 - v0.17 logs, "
                                    "0.25 in v0.18 / v0.19 (the CUDA-graph profiling run)")),
    "awq_mp_kernel": ((0, 19, 0), ("quantization/awq_marlin.py calls choose_mp_linear_kernel (vllm#36505) in 0.19.0, "
                                   "not in 0.18.1")),
    "cudagraph_estimate_applied": ((0, 20, 0), ("envs.py VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS default '1' in 0.20.0 "
                                                "(gpu_worker.py logs 'default since v0.21.0', but the 0.20.0 wheel "
                                                "already subtracts it)")),
    "gpu_util_0_92": ((0, 20, 0), ("config/cache.py CacheConfig.gpu_memory_utilization default 0.92 in 0.20.0 "
                                   "(0.9 in 0.19.1)")),
    "tokens_line_split": ((0, 20, 1), ("v1/core/kv_cache_utils.py _report_kv_cache_config: 'GPU KV cache size' = "
                                       "int(max_concurrency x max_model_len) on its own line in 0.20.1 (0.20.0: "
                                       "num_blocks // groups x block_size)")),
    # read 2026-12-03 in the 0.19.0 - 0.34.0 wheels: the Triton branch of fused_moe/oracle/mxfp4.py
    # convert_gpt_oss_weight_to_mxfp4_moe_kernel_format deletes layer.w13_weight_scale / w2_weight_scale after the
    # swizzle from 0.25.0 ("drop the now-dead weight/scale Parameters"; 0.34.0 store_params_in_triton replaces them);
    # 0.19.0 - 0.24.0 keep them registered beside the swizzled copy (kvplan.vllm_layouts mxfp4_expert_bytes, SM 9.0 and
    # SM 10.x)
    "mxfp4_hopper_scale_k4": ((0, 26, 0), ("quantization/utils/mxfp4_utils.py _swizzle_mxfp4 pads the scales' K (the "
                                           "32-value groups) to a multiple of 4 on capability 9.0 before the swizzle "
                                           "('Patches #47303') in the 0.26.0 - 0.34.0 wheels (0.25.0: not)")),
    "mxfp4_triton_scales_freed": ((0, 25, 0), ("fused_moe/oracle/mxfp4.py TRITON_BACKENDS branch: del layer."
                                               "w13_weight_scale / w2_weight_scale in the 0.25.0 wheel (0.24.0 keeps "
                                               "them)")),
    "triton_value_pack": ((0, 22, 0), ("the 0.22.0 bundle's hopper_value.py pads to the mma pack sizes only again "
                                       "(the 0.12.0 - 0.16.0 file, md5 bac1f69a, through 0.33.0)")),
    "mamba_all_draft_pages": ((0, 22, 0), ("kv_cache_interface.py MambaSpec, mamba_cache_mode 'all': cdiv(max_model_len, "
                                            "block_size) + num_speculative_blocks pages in 0.22.0 (0.21.0: no draft "
                                            "pages)")),
    "dynamic_ntk_max_position": ((0, 22, 0), ("rotary_embedding/dynamic_ntk_scaling_rope.py: torch.arange("
                                              "max_position_embeddings) in 0.22.0 (max x factor through 0.21.0)")),
    "load_max_split_20": ((0, 21, 0), ("v1/worker/gpu_worker.py load_model wraps the model runner's load in "
                                       "_scoped_allocator_max_split(max_split_size_mb=20) from the 0.21.0 wheel "
                                       "(not in 0.20.2; 0.21.0 - 0.34.0 all carry it, read 2026-12-03)")),
    "marlin_tile_padding": ((0, 24, 0), ("quantization/utils/marlin_utils.py marlin_padded_nk (vllm#45295) first in "
                                         "the 0.24.0 wheel (0.23.0 refuses)")),
    "hybrid_prefix_caching": ((0, 28, 0), ("engine/arg_utils.py _set_default_chunked_prefill_and_prefix_caching_args: "
                                           "default_prefix_caching = is_prefix_caching_supported for hybrids too in "
                                           "0.28.0 (vllm PR #50991 '[Mamba] enable prefix cache by default', merged "
                                           "2026-08-04); 0.26.0 - 0.27.1 say 'Generative hybrid models support prefix "
                                           "caching' (config/model.py) but 'keep it opt-in for now' (and not "
                                           "is_hybrid); through 0.25.1 'Hybrid models do not support prefix caching "
                                           "since the feature is still experimental'")),
    "fi_allreduce_mnnvl": ((0, 25, 0), ("distributed/device_communicators/flashinfer_all_reduce.py "
                                        "_resolve_fi_ar_backend: 'Default to mnnvl for both single- and multi-node "
                                        "setups' in 0.25.0 (0.24.0: trtllm on one node, vllm#35772); the quant "
                                        "workspace aliases the same backend's")),
    "swa_in_flight_batches": ((0, 26, 0), ("v1/kv_cache_interface.py SlidingWindowSpec / ChunkedLocalAttentionSpec "
                                           "size with VllmConfig.max_in_flight_tokens = max_concurrent_batches x "
                                           "max_num_batched_tokens (2 with the default async scheduling) in 0.26.0")),
    "mamba_align_only": ((0, 28, 0), ("models/config.py MambaModelConfig: mamba_cache_mode 'align' for every hybrid in "
                                      "0.28.0 (PR #50991); 0.15.0 - 0.27.1 pick 'all' where the model "
                                      "SupportsMambaPrefixCaching")),
    "batch_tier_160": ((0, 28, 0), ("engine/arg_utils.py get_batch_defaults: the >= 160 GiB row (16384 / 1024) in "
                                    "0.28.0")),
    "tokens_line_one": ((0, 28, 0), ("v1/core/kv_cache_utils.py update_kv_cache_capacity: 'GPU KV cache size: %s "
                                     "tokens, Maximum concurrency ...' on one line in 0.28.0 (0.28.0 / 0.29.0 wheels, "
                                     "read 2026-12-03; 0.27.0 / 0.27.1 _report_kv_cache_config still log two lines; "
                                     "a public 0.28.0 log, tests/test_engine_logs_dec03b.py)")),
    "mamba2_checkpoint_page": ((0, 32, 0), ("layers/mamba/mamba_mixer2.py get_kv_cache_spec num_prefill_checkpoint_"
                                            "blocks=1 in 0.32.0 (the MambaSpec field exists from 0.29.0, unset)")),
    "mrope_positions_factor": ((0, 32, 0), ("rotary_embedding/mrope.py cache_max_position_num = max_position x "
                                            "positions_factor (qwen3_vl.py mrope_positions_factor) in 0.32.0; x 4 "
                                            "through 0.31.0")),
    "mla_flashinfer_blackwell": ((0, 15, 0), ("platforms/cuda.py check_and_update_config: on Blackwell (sm100) an MLA "
                                              "model with qk_nope_head_dim 128 defaults to FLASHINFER_MLA (block 64) "
                                              "in the 0.15.0, 0.16.0 and 0.17.0 wheels; CUTLASS_MLA (block 128) in "
                                              "0.11.x - 0.14.0")),
    "mla_blackwell_family": ((0, 13, 0), ("platforms/cuda.py check_and_update_config picks CUTLASS_MLA (block 128) "
                                          "on is_device_capability_family(100), SM 10.x, in the 0.13.0 wheel; "
                                          "0.10.1.1 - 0.12.0 test is_device_capability(100), SM 10.0 exactly, so a "
                                          "B300 / GB300 (SM 10.3) takes the non-Blackwell FlashMLA branch, which "
                                          "forces nothing off Hopper (is_flashmla_supported: capability major 9), and "
                                          "runs TRITON_MLA at the default 16 (0.10.1.1 / 0.10.2 / 0.11.0 "
                                          "get_attn_backend_cls; 0.11.1 / 0.12.0 _get_backend_priorities: "
                                          "CUTLASS_MLA [128], FLASHINFER_MLA [32, 64], FLASH_ATTN_MLA (SM 9 only), "
                                          "FLASHMLA [64] all refuse 16)")),
    "mla_flash_attn_hopper": ((0, 11, 1), ("platforms/cuda.py _get_backend_priorities: on Hopper an MLA model takes "
                                           "the first valid of FLASH_ATTN_MLA (kv dtype auto only), FLASHMLA, ... in "
                                           "the 0.11.1 wheel (vllm PR #27363, 'Prefer FlashAttention MLA as default "
                                           "over FlashMLA'); 0.11.0 get_attn_backend_cls takes FLASHMLA at block 64")),
    "mla_block_multiple": ((0, 11, 1), ("platforms/cuda.py check_and_update_config forces an MLA block only when it is "
                                        "not a multiple of the backend's (FlashMLA % 64, CUTLASS MLA % 128) in the "
                                        "0.11.1 wheel; 0.10.0 - 0.11.0 force any size but 64 / 128 (!= 64)")),
    "sparse_mla_flashinfer_fp8": ((0, 18, 0), ("v1/attention/backends/mla/flashinfer_mla_sparse.py: FLASHINFER_MLA_SPARSE "
                                               "takes kv dtypes fp8 / fp8_e4m3 (a plain 576 B latent) and "
                                               "layers/attention/mla_attention.py makes fp8 fp8_ds_mla only once "
                                               "FLASHMLA_SPARSE is selected, in 0.18.0; 0.17.0: auto / bfloat16 only, "
                                               "models/config.py DeepseekV32ForCausalLM made fp8 fp8_ds_mla before "
                                               "selection")),
    "sparse_mla_flashinfer_fp8_first": ((0, 19, 0), ("platforms/cuda.py _get_backend_priorities: on sm100 an fp8 KV "
                                                     "cache tries FLASHINFER_MLA_SPARSE first at any head count, and "
                                                     "flashinfer_mla_sparse.py takes qk_nope_head_dim 192 (GLM-5) "
                                                     "beside 128, in 0.19.0 (0.18.x: first only at <= 16 heads a "
                                                     "rank, qk_nope_head_dim 128 only)")),
    "glm_dsa_fp8_kv_sm100": ((0, 32, 0), ("models/config.py GlmMoeDsaForCausalLM.verify_and_update_config: "
                                          "--kv-cache-dtype auto becomes fp8_e4m3 on CUDA sm10x ('Using fp8 "
                                          "kv-cache for GlmMoeDsaForCausalLM on SM10x') in 0.32.0; 0.28.0 / 0.30.0 / "
                                          "0.31.0 keep the model dtype")),
    "mxfp4_trtllm_inter_128": ((0, 27, 0), ("fused_moe/oracle/mxfp4.py mxfp4_round_up_hidden_size_and_intermediate_"
                                            "size: TRTLLM_BACKENDS (FLASHINFER_TRTLLM_MXFP4_BF16 / _MXFP8) round the "
                                            "intermediate size per partition up to 128 in 0.27.0 - 0.34.0 (0.19.0 - "
                                            "0.26.0 there and quantization/mxfp4.py Mxfp4MoEMethod.create_weights "
                                            "0.10.1.1 - 0.18.1: 256); the hidden size stays at 256")),
    "mxfp4_humming_hopper": ((0, 32, 0), ("fused_moe/oracle/mxfp4.py _get_priority_backends returns "
                                          "prioritize_humming([...]) (quantization/utils/humming/priority.py: HUMMING "
                                          "moved ahead of MARLIN on compute capability 9.0) in the 0.32.0, 0.33.0 and "
                                          "0.34.0 wheels, so DeepSeek-V4's MXFP4 experts take HUMMING on Hopper; "
                                          "0.30.0 - 0.31.0 list no HUMMING there (FLASHINFER_TRTLLM_MXFP4_MXFP8, "
                                          "DEEPGEMM_MXFP4, MARLIN, BATCHED_MARLIN: MARLIN on Hopper)")),
    "dsv4_mtp_hidden_spec_only": ((0, 27, 0), ("models/deepseek_v4/nvidia/model.py DeepseekV4Model.__init__: "
                                               "_mtp_hidden_buffer is made on the last PP rank only when "
                                               "speculating (needs_mtp_hidden_states: use_eagle() or "
                                               "uses_draft_model()) in 0.27.0; 0.20.0 - 0.26.0 make it always")),
    "dsv4_auto_kv_fp8": ((0, 30, 0), ("models/deepseek_v4/attention.py _resolve_dsv4_kv_cache_dtype: with the "
                                      "fp8_ds_mla layout (DeepseekV4Attention.use_fp8_ds_mla_layout True: FlashMLA, "
                                      "the sm12x FlashInfer class, ROCm) --kv-cache-dtype auto becomes fp8 "
                                      "(fp8_ds_mla) in 0.30.0 and bfloat16 raises ValueError; the 0.25.0 / 0.28.0 / "
                                      "0.29.0 wheels assert fp8 whatever was asked, auto included")),
    "moe_workspace_manager": ((0, 17, 0), ("model_executor/layers/fused_moe/modular_kernel.py takes its expert "
                                           "workspaces from v1/worker/workspace.py current_workspace_manager() (a "
                                           "buffer that grows and is kept) in the 0.17.0 wheel; 0.11.1: torch.empty "
                                           "per call, freed before the sampler run")),
    # int4 / int8 weight-only MoE experts leave fused_marlin_moe (per-call torch.empty, freed before the sampler) for
    # fused_moe/oracle/int_wna16.py make_wna16_moe_kernel (FusedMoEKernel + MarlinExperts, its buffers from
    # current_workspace_manager(): kept), read 2026-12-03 in the 0.19.0 - 0.25.0, 0.30.0 and 0.32.0 wheels
    "gptq_moe_modular_kernel": ((0, 20, 0), ("quantization/gptq_marlin.py GPTQMarlinMoEMethod.apply calls "
                                             "self.moe_kernel.apply (make_wna16_moe_kernel; oracle/int_wna16.py "
                                             "first in the 0.20.0 wheel); 0.19.0: fused_marlin_moe")),
    "awq_moe_modular_kernel": ((0, 22, 0), ("quantization/awq_marlin.py AWQMarlinMoEMethod builds self.moe_kernel "
                                            "= make_wna16_moe_kernel in the 0.22.0 wheel; 0.20.0 - 0.21.0: "
                                            "fused_marlin_moe")),
    "wna16_moe_modular_kernel": ((0, 23, 0), ("compressed_tensors_moe/compressed_tensors_moe_wna16_marlin.py "
                                              "CompressedTensorsWNA16MarlinMoEMethod builds self.moe_kernel = "
                                              "make_wna16_moe_kernel in the 0.23.0 wheel (compressed_tensors_moe_"
                                              "wna16.py from 0.28.0); 0.20.0 - 0.22.1: fused_marlin_moe")),
    "cutlass_nvfp4_moe_backend": ((0, 18, 0), ("model_executor/layers/fused_moe/oracle/nvfp4.py map_nvfp4_backend: "
                                               "--moe-backend cutlass -> NvFp4MoeBackend.VLLM_CUTLASS -> "
                                               "CutlassExpertsFp4 on the kept workspace, one call over all M tokens "
                                               "(0.18.0 - 0.34.0 wheels; 0.17.0 maps it too but chunks the "
                                               "modular kernel at VLLM_FUSED_MOE_CHUNK_SIZE 16,384 by default, not "
                                               "modeled; 0.16.0 has no --moe-backend)")),
    # NVIDIA ModelOpt checkpoints vLLM loads, read 2026-12-03 in the 0.16.0 - 0.34.0 wheels
    # (model_executor/layers/quantization/modelopt.py, config/vllm.py _get_quantization_config):
    "modelopt_mixed": ((0, 17, 0), ("quantization/modelopt.py ModelOptMixedPrecisionConfig (quant_algo "
                                    "MIXED_PRECISION, get_name 'modelopt_mixed', per-layer quantized_layers) first in "
                                    "the 0.17.0 wheel; 0.16.0's QUANT_ALGOS has no MIXED_PRECISION ('ModelOpt "
                                    "currently only supports ...')")),
    "modelopt_w4a16_nvfp4": ((0, 21, 0), ("quantization/modelopt.py QUANT_ALGOS lists W4A16_NVFP4 "
                                          "(ModelOptNvFp4W4A16LinearMethod, Marlin FP4) in the 0.21.0 wheel; 0.20.0: "
                                          "'ModelOpt currently only supports ...'")),
    "modelopt_mixed_w4a16_nvfp4": ((0, 22, 0), ("ModelOptMixedPrecisionConfig.get_quant_method maps a quantized_layers "
                                                "entry W4A16_NVFP4 to ModelOptNvFp4W4A16LinearMethod / "
                                                "ModelOptNvFp4FusedMoE(use_a16) in the 0.22.0 wheel; 0.17.0 - 0.21.0 "
                                                "know FP8 and NVFP4 only and build such a layer unquantized, whose "
                                                "16-bit parameters cannot take the packed checkpoint tensors")),
    "modelopt_mixed_lm_head": ((0, 23, 0), ("ModelOptMixedPrecisionConfig.get_quant_method quantizes a "
                                            "ParallelLMHead (isinstance(layer, (LinearBase, ParallelLMHead))) in the "
                                            "0.23.0 wheel; 0.22.0 returns None for it: a 16-bit lm_head for the "
                                            "checkpoint's packed one")),
    "modelopt_mixed_sm75": ((0, 24, 0), ("ModelOptMixedPrecisionConfig.get_min_capability 75 in the 0.24.0 wheel "
                                         "(89 in 0.17.0 - 0.23.0: config/vllm.py raises 'Minimum capability: 89' "
                                         "below Ada)")),
    "mla_backend_block_size": ((0, 18, 0), ("platforms/interface.py update_block_size_for_backend: the block size is "
                                            "the selected backend's get_preferred_block_size(16) in 0.18.0 (no MLA "
                                            "block forcing in check_and_update_config): FLASH_ATTN_MLA first on "
                                            "Hopper (MultipleOf(16): 16), FLASHINFER_MLA on sm100 ([32, 64]: 32)")),
    # The budget path of 0.20 - 0.33, read 2026-12 in the wheels of 0.20.0, 0.21.0, 0.22.0, 0.23.0, 0.24.0, 0.25.0,
    # 0.26.0, 0.27.0, 0.27.1, 0.28.0, 0.29.0, 0.30.0, 0.31.0, 0.32.0, 0.33.0 (tests/test_engine_budget_02x.py):
    "compile_combo_benchmark": ((0, 11, 1), ("config/compilation.py sets inductor_compile_config combo_kernels and "
                                             "benchmark_combo_kernel when torch >= 2.9 (0.11.1 pins torch 2.9.0, "
                                             "0.11.0 torch 2.8.0): a cold compile in the profile run benchmarks "
                                             "kernels on rand_strided copies of their arguments, the embedding table "
                                             "among them (kvplan.engines.vllm_compile_benchmark_bytes)")),
    "v2_runner_qwen3": ((0, 22, 0), ("config/vllm.py use_v2_model_runner: the V2 GPU model runner (v1/worker/gpu/) "
                                     "by default for Qwen3ForCausalLM, unquantized and dense, in 0.22.0 (0.21.0: "
                                     "only with VLLM_USE_V2_MODEL_RUNNER=1)")),
    "v2_runner_llama_mistral": ((0, 23, 0), ("DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES adds LlamaForCausalLM and "
                                             "MistralForCausalLM in 0.23.0 (unquantized, dense)")),
    "v2_runner_listed": ((0, 24, 0), ("0.24.0: V2 for the listed architectures (Qwen3, Llama, Mistral, DeepseekV2, "
                                      "Qwen2Moe, GraniteMoe), quantized or not")),
    "v2_runner_dense": ((0, 25, 0), ("0.25.0 _is_default_v2_model_runner_model: every generative model that is "
                                     "neither hybrid nor attention-free and is dense (or a listed MoE)")),
    "total_consumed_accounting": ((0, 27, 0), ("utils/mem_utils.py memory_profiling: non_kv_cache_memory = "
                                               "total_consumed (init snapshot free - after-profile free) + "
                                               "transient_peak_headroom (torch peak - allocated) in 0.27.0 (vllm "
                                               "#37096 / #37111); 0.26.0: weights + torch peak increase + non-torch "
                                               "increase; gpu_worker.py runs profile_cudagraph_memory after the "
                                               "context from 0.27.0")),
    "v2_runner_all": ((0, 29, 0), ("config/vllm.py use_v2_model_runner returns True on CUDA for every model (no "
                                   "default-architecture test) in 0.29.0, unsupported features aside")),
    "v2_cudagraph_estimate": ((0, 29, 0), ("v1/worker/gpu/model_runner.py profile_cudagraph_memory: 'return 0' "
                                           "(\"TBD whether we keep this API\") in 0.22.0 - 0.28.0; 0.29.0 "
                                           "cudagraph_utils.profile_cudagraph_memory captures the PIECEWISE graphs "
                                           "and extrapolates FULL")),
    # DeepSeek sparse attention's lightning indexer in the profile run (read 2026-12 in the 0.11.0 - 0.33.0 wheels:
    # models/deepseek_v2.py sparse_attn_indexer through 0.14.1, model_executor/layers/sparse_attn_indexer.py from
    # 0.15.0; kvplan.plan.vllm_dsa_indexer_workspace_bytes):
    "dsa_indexer_profile_workspace": ((0, 13, 0), ("sparse_attn_indexer: without attention metadata (the profile "
                                                   "run) it reserves its prefill K-gather workspace from "
                                                   "current_workspace_manager(), (get_max_prefill_buffer_size = "
                                                   "max_model_len x 40) rows of index_head_dim fp8 + 4 B scale, "
                                                   "first in the 0.13.0 wheel (0.12.0: returns the fake at once)")),
    "dsa_indexer_logits_reserve": ((0, 19, 0), ("sparse_attn_indexer: 'Dummy allocation to simulate for peak logits "
                                                "tensor memory during inference', torch.empty(VLLM_SPARSE_INDEXER_MAX_"
                                                "LOGITS_MB = 512 MiB) in the profile run, in the 0.19.0 wheel")),
    "dsa_indexer_radix_workspace": ((0, 20, 0), ("sparse_attn_indexer: the profile reservation adds the radix top-k "
                                                 "workspace, RADIX_TOPK_WORKSPACE_SIZE = 1 MiB, in the 0.20.0 wheel")),
    "dsa_index_groups": ((0, 30, 0), ("v1/attention/backends/mla/index_group.py SparseMLAIndexGroupBuilder."
                                      "register_layer: each index-producing sparse-MLA layer starts a group with its "
                                      "own physical_topk_indices (rows + 1, index_topk) int32 + valid_topk_counts, "
                                      "made in the impl's constructor; first in the 0.30.0 wheel (0.29.0: no file)")),
    "dsa_indexer_wk_fused": ((0, 20, 0), ("models/deepseek_v2.py Indexer: wk and weights_proj fused into one "
                                          "MergedColumnParallelLinear(quant_config=None); an fp8 wk is dequantized to "
                                          "bf16 on load (_try_load_fp8_indexer_wk), first in the 0.20.0 wheel (0.19.0: "
                                          "wk a ReplicatedLinear with the model's quant_config)")),
    "dsa_rocm_layer_groups": ((0, 31, 0), ("models/deepseek_v32/__init__.py takes amd/model.py on ROCm from 0.31.0 "
                                           "(0.30.0: the generic deepseek_v2.py), whose layers pass no index-group "
                                           "builder: each sparse-MLA impl makes its own over the whole top-k buffer, "
                                           "one group of max_num_batched_tokens rows per layer")),
    "dsa_prefill_workspace_factor": ((0, 32, 0), ("v1/attention/backends/mla/indexer.py get_max_prefill_buffer_size = "
                                                  "max_model_len x (576 x 2 // 132) x sparse_mla_prefill_workspace_"
                                                  "factor (config/vllm.py: 5 up to 256K tokens, else 2) in 0.32.0; "
                                                  "max_model_len x 40 through 0.31.0")),
    "fp8_moe_modular_kernel": ((0, 14, 0), ("quantization/fp8.py Fp8MoEMethod.apply runs self.kernel, the "
                                            "FusedMoEModularKernel of fused_moe/oracle/fp8.py (TritonExperts on sm120: "
                                            "its workspaces from current_workspace_manager(), kept), in the 0.14.0 "
                                            "wheel; 0.13.0: the fused_experts function (torch.empty per call)")),
    "fp8_moe_hopper_triton": ((0, 17, 0), ("model_executor/layers/fused_moe/oracle/fp8.py _get_priority_backends: "
                                           "'On Hopper for Block Fp8, prefer Triton for TP and FI CUTLASS for EP' "
                                           "moves TRITON to the front on capability 9.0 for block-FP8 weights with "
                                           "dynamic 128-group activations unless ep_size > 1, first in the 0.17.0 "
                                           "wheel (0.16.0: DEEPGEMM before TRITON); read in the 0.17.0, 0.18.0 and "
                                           "0.19.0 wheels (pip download, 2026-12-03)")),
    "fused_moe_unchunked": ((0, 18, 0), ("model_executor/layers/fused_moe/modular_kernel.py has no _chunk_info / "
                                         "VLLM_FUSED_MOE_CHUNK_SIZE in the 0.18.0 wheel: the workspaces are sized at "
                                         "the whole M; 0.14.0 - 0.17.0 split M above 16,384 tokens (envs.py "
                                         "VLLM_ENABLE_FUSED_MOE_ACTIVATION_CHUNKING default 1), read 2026-12-03")),
    "deep_gemm_sm120": ((0, 24, 0), ("platforms/cuda.py support_deep_gemm adds is_device_capability_family(120), so "
                                     "is_deep_gemm_supported (deep_gemm present: vendored as vllm.third_party."
                                     "deep_gemm from the 0.20.0 wheel) lets fused_moe/oracle/fp8.py pick DEEPGEMM for "
                                     "block-FP8 experts on sm120, first in the 0.24.0 wheel (0.23.0: capability 9.0 "
                                     "and family 100 only); read 2026-12-03 in the 0.20.0 - 0.34.0 wheels")),
    "flashinfer_sampler_default": ((0, 21, 0), ("envs.py VLLM_USE_FLASHINFER_SAMPLER defaults to True ('Enabled by "
                                                "default when the hardware supports it') and v1/sample/ops/"
                                                "topk_topp_sampler.py TopKTopPSampler takes forward_cuda (FlashInfer "
                                                "top-k / top-p) unless it is set to 0, first in the 0.21.0 wheel "
                                                "(0.20.1 / 0.20.2: opt-in, 'Users must opt in explicitly'). Only where "
                                                "FlashInferBackend.supports_compute_capability (sm75 - sm121; sm80+ in "
                                                "0.28.0): kvplan applies it to every GPU, a V100 (or a T4 on 0.28) "
                                                "samples natively")),
    "sampler_native_warmup": ((0, 21, 0), ("v1/worker/gpu_model_runner.py _dummy_sampler_run calls the sampler a second "
                                           "time with a seeded generator ('Also warm forward_native (taken when "
                                           "generators dict is non-empty)'), so the V1 profile peak is the PyTorch-"
                                           "native top-k / top-p's even where FlashInfer samples: in the 0.21.0, "
                                           "0.22.0, 0.26.0 and 0.32.0 wheels, not in 0.20.0 / 0.20.1")),
    # read 2026-12-03 in the 0.18.0 - 0.34.0 wheels (config/compilation.py resolve_cudagraph_mode_and_sizes; 0.18.0 /
    # 0.19.0 instead cap the capture sizes at the block count with a warning, adjust_cudagraph_sizes_for_mamba_cache)
    "mamba_full_graph_seqs": ((0, 20, 0), ("config/compilation.py resolve_cudagraph_mode_and_sizes raises 'max_num_seqs "
                                           "(N) exceeds available Mamba cache blocks (M)' when the resolved mode has "
                                           "FULL graphs, the KV cache config has Mamba-type layers (MambaSpec: Mamba, "
                                           "GDN, short conv, linear attention) and max_num_seqs > num_blocks: in the "
                                           "0.20.0 - 0.34.0 wheels; 0.18.0 / 0.19.0 cap the capture sizes instead")),
    "v2_ngram": ((0, 32, 0), ("config/vllm.py _get_v2_model_runner_unsupported_features lists 'ngram/ngram_gpu "
                              "speculative decoding' (V1 fallback) through 0.31.0, not in 0.32.0")),
    # read 2026-12-03 in the 0.33.0 wheel against 0.32.0 (pip download vllm==X --no-deps; flashinfer-python
    # 0.7.2.post1, the 0.33.0 wheel's pin, for its sampler): kvplan's "0.33" profile starts here, "0.32" is 0.32.0
    "v2_sampler_warmup_pass": ((0, 33, 0), ("v1/worker/gpu/model_runner.py _dummy_sampler_run runs the V2 sampler a "
                                            "second time on the same logits after add_request(SamplingParams."
                                            "for_sampler_warmup()) for every dummy row (not on CPU): sample/"
                                            "sampler.py apply_sampling_params copies the logits to fp32, then "
                                            "FlashInfer's top_k_top_p_sampling_from_logits (top-k tensor: "
                                            "top_k_mask_logits' fp32 copy + the softmax's) or the Triton top-k / "
                                            "top-p with its per-SM row buffer (vllm_v2_dummy_sampler_bytes); 0.32.0 "
                                            "runs the default pass only and its warmup_kernels pays for the fp32 "
                                            "pipeline after the KV cache is sized")),
    # read 2026-12-03 in the 0.34.0 wheel against 0.33.0 (kvplan's "0.34" profile, plan._extensible_budget):
    "extensible_kv_cache": ((0, 34, 0), ("config/cache.py enable_extensible_kv_cache (None: config/vllm.py "
                                         "_resolve_extensible_kv_cache turns it on for CUDA and ROCm unless "
                                         "kv_cache_memory_bytes, num_gpu_blocks_override, elastic EP or a legacy-IPC "
                                         "/ custom-pool KV connector) and resolved_gpu_memory_utilization (1.0 with "
                                         "it, DEFAULT_GPU_MEMORY_UTILIZATION 0.92 without); gpu_worker.py "
                                         "compile_or_warm_up_model runs v1/worker/gpu/warmup.py "
                                         "run_kv_cache_sizing_warmup and v1/worker/extensible_kv_cache.py "
                                         "measure_kv_cache_blocks sizes the pool from the memory free after CUDA-"
                                         "graph capture (measure_kv_cache_bytes: vllm_extensible_kv_bytes); 0.33.0: "
                                         "gpu_memory_utilization 0.92, requested - non-KV - CUDA-graph estimate")),
    "block_size_64": ((0, 34, 0), ("config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE = 64 (16 through 0.33.0); "
                                   "platforms/interface.py update_block_size_for_backend asks each backend's "
                                   "get_preferred_block_size(64): FLASH_ATTN / FLASH_ATTN_MLA / TRITON_MLA "
                                   "(MultipleOf(16)) and FLASHINFER_MLA ([32, 64]) run 64, CUTLASS_MLA 128")),
    "v1_runner_removed": ((0, 34, 0), ("v1/worker/gpu_model_runner.py and v1/sample/sampler.py are gone from the "
                                       "0.34.0 wheel; platforms/interface.py validate_environ raises ValueError for "
                                       "VLLM_USE_V2_MODEL_RUNNER other than 1 ('Model Runner V1 has been removed')")),
    "dsa_indexer_decode_logits": ((0, 34, 0), ("model_executor/layers/sparse_attn_indexer.py profile reserve: "
                                               "max(VLLM_SPARSE_INDEXER_MAX_LOGITS_MB (512 MiB) / 4 x (logits dtype "
                                               "+ fp32 copy), min(max_num_seqs, max_num_batched_tokens) x (1 + k) x "
                                               "round_up(max_model_len, lcm(256 (384 on SM 10.x), 1024 / dtype)) x "
                                               "(dtype + decode copy)); logits fp32 except bf16 on SM 10.x "
                                               "(models/config.py _set_deepseek_indexer_logits_dtype), decode chunked "
                                               "to VLLM_SPARSE_INDEXER_MAX_DECODE_LOGITS_MB on SM 10.x; Hopper, 1,024 "
                                               "seqs, 8,192 tokens: 1,024 x 8,192 x 4 B = 32 GiB (0.33.0: 512 MiB)")),
    "capture_split_sm100": ((0, 34, 0), ("config/vllm.py _split_cudagraph_capture_sizes: on capability family 100 "
                                         "without the deprecated cudagraph_capture_sizes / max_cudagraph_capture_size, "
                                         "prefill graphs take prefill_cudagraph_capture_grid(min(8192, "
                                         "max_num_batched_tokens)) and FULL decode graphs decode_cudagraph_capture_"
                                         "grid(max_num_seqs) up to 8192 tokens (0.33.0: one shared list, max 1024)")),
    # read 2026-12-02 in the 0.10.1.1 / 0.11.0 / 0.11.1 / 0.12.0 / 0.14.0 / 0.16.0 / 0.18.0 / 0.20.0 / 0.23.0 / 0.26.0 /
    # 0.29.0 / 0.33.0 wheels (tests/test_engine_defaults_seqs.py):
    "batch_defaults_capped": ((0, 11, 1), ("engine/arg_utils.py _set_default_max_num_seqs_and_batched_tokens_args: a "
                                           "default max_num_batched_tokens is capped at max_num_seqs x max_model_len, "
                                           "and a default max_num_seqs at max_num_batched_tokens ('Defaulting "
                                           "max_num_seqs to %d'); absent in 0.10.1.1 / 0.11.0")),
    # read 2026-12 in the wheels of 0.21.0 - 0.33.0 (tests/test_engine_defaults_dec.py):
    "mm_prefix_lm_batch_floor": ((0, 22, 0), ("engine/arg_utils.py _set_default_max_num_seqs_and_batched_tokens_args: "
                                              "with no --max-num-batched-tokens, a multimodal prefix-LM model "
                                              "(model_config.is_multimodal_model and is_mm_prefix_lm) gets at least "
                                              "_get_min_mm_batched_tokens, the largest get_mm_max_tokens_per_item "
                                              "('Raising max_num_batched_tokens from %d to %d to accommodate %r "
                                              "input for prefix-LM model %s'), in 0.22.0 (absent from 0.21.0; the "
                                              "function's text is identical 0.22.0 - 0.33.0)")),
    "mm_prefix_lm_text_only_off": ((0, 27, 0), ("config/model.py _supports_multimodal_for_mm_prefix: is_mm_prefix_lm is "
                                                "False when every modality's limit is 0 (--language-model-only, or "
                                                "--limit-mm-per-prompt all 0: MULTIMODAL_REGISTRY."
                                                "supports_multimodal_inputs) in 0.27.0, so the batch floor is off "
                                                "for text-only serving; 0.22.0 - 0.26.0 raise it regardless")),
    # the multimodal profile run (kvplan.vllm_mm), read 2026-12 in the 0.10.0 - 0.33.0 wheels:
    "mm_dummy_outputs_expanded": ((0, 11, 0), ("v1/worker/gpu_model_runner.py profile_run: every dummy encoder output "
                                               "shorter than the encoder budget is copied into output.new_zeros("
                                               "(encoder_budget, hidden)) before encoder_cache['tmp'] in 0.11.0 - "
                                               "0.11.2 (0.10.x caches them as returned)")),
    "mm_dummy_outputs_item_rows": ((0, 12, 0), ("profile_run 0.12.0: the copy is (max_tokens_by_modality, hidden), "
                                                "only where the output is shorter")),
    "mm_dummy_outputs_as_returned": ((0, 13, 0), ("profile_run: encoder_cache[f'tmp_{i}'] = output, no copy (0.13.0 - "
                                                  "0.33.0)")),
    "mm_pixtral_dense_mask": ((0, 12, 0), ("the wheel's Requires-Dist drops xformers in 0.12.0 (0.11.x: xformers=="
                                           "0.0.32.post1 / 0.0.33.post1), so pixtral.py PixtralHFVisionModel builds "
                                           "transformers' generate_block_attention_mask, one (N, N) model-dtype mask "
                                           "over the batch's patches, instead of a BlockDiagonalMask")),
    "qwen_vl_video_soft_tokens": ((0, 13, 0), ("models/qwen3_vl.py Qwen3VLProcessingInfo.get_max_video_tokens returns "
                                               "the video's soft tokens from 0.13.0; 0.11.0 - 0.12.0 return int(soft "
                                               "x 12.5) ('one video token is converted to <{timestamp} seconds> (on "
                                               "average 9.5 tokens) + vision_start_token + video_token + "
                                               "vision_end_token'), so the video outranks the image there")),
    "qwen_vl_video_two_frames": ((0, 15, 0), ("models/qwen3_vl.py get_max_video_tokens: two frames at the video "
                                              "processor's longest_edge // temporal_patch_size from 0.15.0 (0.11.0 - "
                                              "0.14.1: get_num_frames_with_most_features from max_model_len)")),
    "qwen_vl_mm_kwargs_size": ((0, 17, 0), ("models/qwen2_vl.py get_image_size_with_most_features reads "
                                            "ctx.get_merged_mm_kwargs: image_processor.size | size, then min_pixels / "
                                            "max_pixels as its edges; qwen3_vl.py get_max_video_tokens takes "
                                            "mm_kwargs.get('size', video_processor.size) (0.17.0 - 0.31.0; 0.15 - "
                                            "0.16 read the processor's size alone)")),
    "mm_kwargs_scoped": ((0, 32, 0), ("multimodal/processing/context.py get_merged_mm_kwargs routes a flat key to "
                                      "every processor scope that supports it (Qwen3-VL's videos_kwargs take "
                                      "min_pixels / max_pixels too): the video's size follows max_pixels / size "
                                      "from 0.32.0")),
    "qwen2_vl_video_frames_from_one": ((0, 11, 0), ("models/qwen2_vl.py get_num_frames_with_most_features: frames "
                                                    "counted from 1 (_get_max_video_frames start_num_frames), at "
                                                    "most 14 (_MAX_FRAMES_PER_VIDEO) from 0.11.0; 0.10.x count from "
                                                    "0, at most 16 (the start moves no count: at least 1 either way)")),
    "qwen2_vl_video_no_image_reserve": ((0, 10, 2), ("models/qwen2_vl.py get_num_frames_with_most_features counts "
                                                     "the video's frames under seq_len from 0.10.2; 0.10.0 - 0.10.1.1 "
                                                     "under seq_len - max_image_tokens x mm_counts['image'] (one image "
                                                     "where its limit is above 0)")),
    "qwen2_vl_video_pad_up": ((0, 27, 0), ("models/qwen2_vl.py _get_vision_info pads frames to num_frames + "
                                           "(-num_frames % temporal_patch_size) from 0.27.0 (before: num_frames + "
                                           "num_frames % temporal_patch_size; the same for T = 2)")),
    "mm_max_tokens_tie_by_name": ((0, 17, 0), ("multimodal/encoder_budget.py get_modality_with_max_tokens: max(..., "
                                               "key=lambda x: (x[1], x[0])) from 0.17.0, so a tie goes to the later "
                                               "modality name (0.16.x and v1/worker/utils.py before: key x[1], the "
                                               "first of the model's dict)")),
    "gemma4_encoder_chunk": ((0, 22, 0), ("models/gemma4_mm.py _encoder_chunk: the vision tower runs the frames in "
                                          "chunks of max(1, min(free // 2, total // 10) // (patches x 4 x "
                                          "position_embedding_size x 8)) from 0.22.0 (0.21.0: all at once)")),
    "v2_mm_encoder_profile": ((0, 27, 0), ("v1/worker/gpu/model_runner.py profile_run calls encoder_runner."
                                           "profile_encoder_cache (first PP rank) from 0.27.0; 0.22.0 - 0.26.0 run no "
                                           "encoder in the V2 profile")),
}

# Changes inside a profile's run because no plan can see them: kvplan's V0 engine refuses multimodal models (kvplan.vllm_v0),
# the only ones with MRoPE tables in the V0 era (Qwen2-VL), so "0.7" (0.7.0 - 0.9.x) is not split at 0.7.2.
VLLM_CHANGES_INSIDE_A_PROFILE = {
    "mrope_cache_x4": "V0 refuses multimodal models: no V0 plan has an MRoPE table",
    "dsa_rocm_layer_groups": "ROCm DSA plans on the 0.30 line (0.30.0 - 0.31.0) follow 0.30.0 and warn (plan.ROCM_DSA_031_NOTE)",
    "capture_max_seqs": "the 0.30 line (0.30.0 - 0.31.0) follows 0.30.0: an off-stride max_num_seqs adds no capture "
                        "size there (0.31.0 adds one graph a mode, ~10 MiB)",
}


def _has(first: Release, change: str) -> bool:
    return first >= VLLM_CHANGES[change][0]


def _v1(version: str, releases: str, first: Release, non_torch: tuple[float, float, float, float], source: str
        ) -> "VllmProfile":
    """A V1 profile whose engine rules all follow from its first release and VLLM_CHANGES; ``non_torch`` = the fitted
    (TP 1, TP >= 2 with custom all-reduce, without it, PP) GiB."""
    cudagraph = ("applied" if _has(first, "cudagraph_estimate_applied") else
                 "printed" if _has(first, "cudagraph_estimate_printed") else "after_kv")
    tokens_line = ("concurrency" if _has(first, "tokens_line_one") else
                   "concurrency_split" if _has(first, "tokens_line_split") else "groups")
    native = _NATIVE_NEW if _has(first, "sampler_temporaries_v017") else _NATIVE_OLD
    single, tp, tp_no_car, pp = non_torch
    return VllmProfile(
        version=version, releases=releases, first_release=first,
        gpu_memory_utilization=(1.0 if _has(first, "extensible_kv_cache") else 0.92 if _has(first, "gpu_util_0_92")
                                else 0.90), cudagraph=cudagraph,
        cudagraph_modes=2 if _has(first, "full_and_piecewise") else 1,
        capture_step_above_256=16 if _has(first, "capture_step_16") else 8, tokens_line=tokens_line,
        in_flight_batches=2 if _has(first, "swa_in_flight_batches") else 1,
        supports_dcp=_has(first, "decode_context_parallel"),
        sampler_default="flashinfer" if _has(first, "flashinfer_sampler_default") else "pytorch",
        large_tier=_has(first, "batch_tier_160"), non_torch_single=_g(single), non_torch_tp=_g(tp),
        non_torch_tp_no_custom_ar=_g(tp_no_car), non_torch_pp=_g(pp),
        sampler_copies={"pytorch": native, "flashinfer": native if _has(first, "sampler_native_warmup") else _FLASHINFER},
        source=source)


# fitted non-torch GiB (TP 1, TP >= 2 with custom all-reduce, without it, PP; see VLLM_NON_TORCH for TP >= 2):
# TP 1 0.13 through 0.17, 0.25 from 0.18; TP >= 2 0.55 + 0.83 (the NCCL communicator, counted) in 0.10.x, 0.55 from
# 0.11; custom all-reduce off 0.19 through 0.16, 0.25 from 0.17 (not logged at TP >= 2 since); PP 0.13, then 0.07 (v0.19)
_NT_010 = (0.13, 0.55 + 0.83, 0.19, 0.13)
_NT_OLD, _NT_017, _NT_018 = (0.13, 0.55, 0.19, 0.13), (0.13, 0.55, 0.25, 0.07), (0.25, 0.55, 0.25, 0.07)
_WHEEL = "vllm {} wheel (VLLM_CHANGES); "

VLLM_PROFILES: dict[str, VllmProfile] = {
    "0.6": VllmProfile(
        version="0.6", releases="0.6.0 - 0.6.4", first_release=(0, 6, 0), gpu_memory_utilization=0.90,
        cudagraph="after_kv", cudagraph_modes=1, capture_step_above_256=8, tokens_line="groups", in_flight_batches=1,
        supports_dcp=False, sampler_default="pytorch", large_tier=False,
        non_torch_single=_g(0.35), non_torch_tp=_g(1.96), non_torch_tp_no_custom_ar=_g(0.44),
        non_torch_pp=_g(0.35), sampler_copies={"pytorch": _V0_SAMPLER, "flashinfer": _FLASHINFER}, engine_core="V0",
        source="vllm 0.6.3.post1 / 0.6.4.post1 wheels: worker/worker.py determine_num_available_blocks, config.py "
               "SchedulerConfig (512 chunked tokens), worker/model_runner.py profile_run (kvplan.vllm_v0)"),
    "0.6.5": VllmProfile(
        version="0.6.5", releases="0.6.5 - 0.6.6.post1", first_release=(0, 6, 5), gpu_memory_utilization=0.90,
        cudagraph="after_kv", cudagraph_modes=1, capture_step_above_256=8, tokens_line="groups", in_flight_batches=1,
        supports_dcp=False, sampler_default="pytorch", large_tier=False,
        non_torch_single=_g(0.16), non_torch_tp=_g(0.55), non_torch_tp_no_custom_ar=_g(0.25),
        non_torch_pp=_g(0.13), sampler_copies={"pytorch": _V0_SAMPLER, "flashinfer": _FLASHINFER}, engine_core="V0",
        source="vllm 0.6.5 / 0.6.6.post1 wheels: the 0.7 budget (worker/worker.py), the 0.6 rotary tables "
               "(rotary_embedding.py: LongRoPE keeps both halves; kvplan.vllm_v0)"),
    "0.7": VllmProfile(
        version="0.7", releases="0.7.0 - 0.9.x, VLLM_USE_V1=0", first_release=(0, 7, 0), gpu_memory_utilization=0.90,
        cudagraph="after_kv", cudagraph_modes=1, capture_step_above_256=8, tokens_line="groups", in_flight_batches=1,
        supports_dcp=False, sampler_default="pytorch", large_tier=False,
        non_torch_single=_g(0.16), non_torch_tp=_g(0.55), non_torch_tp_no_custom_ar=_g(0.25),
        non_torch_pp=_g(0.13), sampler_copies={"pytorch": _V0_SAMPLER, "flashinfer": _FLASHINFER}, engine_core="V0",
        source="vllm 0.6.6.post1 / 0.7.3 / 0.8.5 / 0.9.2 wheels: worker/worker.py, worker/model_runner.py, "
               "engine/arg_utils.py, executor/executor_base.py, worker/cache_engine.py (kvplan.vllm_v0)"),
    "0.10": _v1("0.10", "0.10.0 - 0.10.1.1", (0, 10, 0), _NT_010,
                "dennislee22/vLLM-benchmarking logs (0.10.1.1), vLLM #23278 (0.10.1); budget as in the 0.11 wheel's "
                "gpu_worker.determine_available_memory (research note engines-memory.md)"),
    "0.10.2": _v1("0.10.2", "0.10.2", (0, 10, 2), _NT_010, _WHEEL.format("0.10.2") + "other rules as 0.10"),
    "0.11": _v1("0.11", "0.11.0", (0, 11, 0), _NT_OLD,
                "vllm 0.11.0 wheel (gpu_worker.py, kv_cache_utils.py); vllm-project/recipes Kimi-K2-Think.md (DCP x8 "
                "tokens line); vLLM #27508; llm-d/llm-d #787"),
    "0.11.1": _v1("0.11.1", "0.11.1 - 0.11.2", (0, 11, 1), _NT_OLD, _WHEEL.format("0.11.1 / 0.11.2") + "as 0.11"),
    "0.12": _v1("0.12", "0.12.0", (0, 12, 0), _NT_OLD, _WHEEL.format("0.12.0") + "as 0.11.1"),
    "0.13": _v1("0.13", "0.13.0", (0, 13, 0), _NT_OLD, _WHEEL.format("0.13.0") + "as 0.12 but the DSA indexer"),
    "0.14": _v1("0.14", "0.14.0 - 0.14.1", (0, 14, 0), _NT_OLD,
                _WHEEL.format("0.14.0 / 0.14.1") + "vLLM #33155 (0.14.1, gpt-oss-120b Triton on an H100)"),
    "0.15": _v1("0.15", "0.15.0 - 0.15.1", (0, 15, 0), _NT_OLD,
                _WHEEL.format("0.15.0 / 0.15.1") + "llm-d-planner v0.15 sweep"),
    "0.16": _v1("0.16", "0.16.0", (0, 16, 0), _NT_OLD, _WHEEL.format("0.16.0") + "llm-d-planner v0.16 sweep"),
    "0.17": _v1("0.17", "0.17.0 - 0.17.1", (0, 17, 0), _NT_017,
                _WHEEL.format("0.17.0 / 0.17.1") + "llm-d-planner accuracy report (Qwen3-14B v0.17 2.23 GiB)"),
    "0.18": _v1("0.18", "0.18.0 - 0.18.1", (0, 18, 0), _NT_018,
                _WHEEL.format("0.18.0 / 0.18.1") + "llm-d-planner v0.18 (non-torch 0.25)"),
    "0.19": _v1("0.19", "0.19.0 - 0.19.1", (0, 19, 0), _NT_018,
                "llm-d-incubation/llm-d-planner accuracy/results/v0.19.0 (H100 logs: 8192 / 1024 defaults, "
                "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS False, FlashInfer sampler 'disabled by default'); "
                + _WHEEL.format("0.19.0 / 0.19.1")),
    "0.20": _v1("0.20", "0.20.0", (0, 20, 0), _NT_018, _WHEEL.format("0.20.0") + "other rules as 0.19"),
    "0.20.1": _v1("0.20.1", "0.20.1 - 0.20.2", (0, 20, 1), _NT_018,
                  _WHEEL.format("0.20.1 / 0.20.2") + "vLLM #45178 (estimate subtracted)"),
    "0.21": _v1("0.21", "0.21.0", (0, 21, 0), _NT_018, _WHEEL.format("0.21.0") + "the FlashInfer sampler by default"),
    "0.22": _v1("0.22", "0.22.0 - 0.22.1", (0, 22, 0), _NT_018, _WHEEL.format("0.22.0 / 0.22.1")),
    "0.23": _v1("0.23", "0.23.0", (0, 23, 0), _NT_018, _WHEEL.format("0.23.0")),
    "0.24": _v1("0.24", "0.24.0", (0, 24, 0), _NT_018, _WHEEL.format("0.24.0")),
    "0.25": _v1("0.25", "0.25.0 - 0.25.1", (0, 25, 0), _NT_018,
                _WHEEL.format("0.25.0 / 0.25.1") + "distributed/device_communicators/flashinfer_all_reduce.py (mnnvl)"),
    "0.26": _v1("0.26", "0.26.0", (0, 26, 0), _NT_018, _WHEEL.format("0.26.0") + "vLLM #50780"),
    "0.27": _v1("0.27", "0.27.0 - 0.27.1", (0, 27, 0), _NT_018,
                _WHEEL.format("0.27.0 / 0.27.1") + "gpustack/runner PR #251 (0.27.1 log: estimate applied); a public "
                "0.27.1 Qwen2.5-0.5B log (tests/test_engine_budget_02x.py)"),
    "0.28": _v1("0.28", "0.28.0", (0, 28, 0), _NT_018,
                _WHEEL.format("0.28.0") + "the 2026-09 L40S / L4 blog logs (tests/test_engine_logs_2026.py)"),
    "0.29": _v1("0.29", "0.29.0", (0, 29, 0), _NT_018, _WHEEL.format("0.29.0")),
    "0.30": _v1("0.30", "0.30.0 - 0.31.0", (0, 30, 0), _NT_018, _WHEEL.format("0.30.0 / 0.31.0")),
    "0.32": _v1("0.32", "0.32.0", (0, 32, 0), _NT_018,
                "vllm 0.32.0 wheel: config/cache.py (0.92), engine/arg_utils.py get_batch_defaults, "
                "v1/core/kv_cache_utils.py update_kv_cache_capacity, gpu_worker.py (research note)"),
    "0.33": _v1("0.33", "0.33.0 - 0.33.x", (0, 33, 0), _NT_018,
                _WHEEL.format("0.33.0") + "as 0.32 but the V2 dummy sampler's warmup-parameter pass "
                "(v1/worker/gpu/model_runner.py _dummy_sampler_run)"),
    # read 2026-12-03 in the 0.34.0 wheel against 0.33.0 (pip download vllm==0.34.0 --no-deps): config/cache.py,
    # config/vllm.py, v1/worker/gpu_worker.py, v1/worker/extensible_kv_cache.py, v1/core/kv_cache_planning.py,
    # v1/worker/gpu/warmup.py, platforms/interface.py; planned from estimates (plan._extensible_budget)
    "0.34": _v1("0.34", "0.34.0 (newest, planned from estimates)", (0, 34, 0), _NT_018,
                _WHEEL.format("0.34.0") + "v1/worker/extensible_kv_cache.py measure_kv_cache_bytes, config/cache.py "
                "(DEFAULT_BLOCK_SIZE 64, resolved_gpu_memory_utilization); plans from estimates "
                "(plan._extensible_budget, VLLM_034_PLAN_NOTE), some cases refused (plan._vllm_034_refusal)"),
}
# Every profile before a change has a first release below it and every one after at or above it: the keys are
# ordered by release, and no two neighbours share all of VLLM_CHANGES (tests/test_vllm_profile_boundaries.py).


@functools.lru_cache(maxsize=1024)  # a plan asks ~10 times (vllm_has): parsed once per string
def vllm_release(version: str) -> Release:
    """The first release of profile ``version`` ("0.21" -> (0, 20, 1)); for a string that is no profile key, its own
    digits ("0.27.1" -> (0, 27, 1)), so a rule can be asked about any release."""
    prof = VLLM_PROFILES.get(version)
    if prof is not None:
        return prof.first_release
    digits = [int(x) for x in re.findall(r"\d+", version)[:3]]
    return tuple((digits + [0, 0, 0])[:3]) if digits else VLLM_PROFILES[VLLM_DEFAULT_VERSION].first_release


@functools.lru_cache(maxsize=4096)  # ~10 calls a plan, a picker sweep ~5,000: one dict lookup each
def vllm_has(version: str, change: str) -> bool:
    """Whether the releases of profile ``version`` carry ``change`` (a VLLM_CHANGES key). Worked example:
    vllm_has("0.24", "marlin_tile_padding") is True (0.24.0 >= 0.24.0), vllm_has("0.22", ...) False."""
    return vllm_release(version) >= VLLM_CHANGES[change][0]


def vllm_profile_for_release(release: str) -> str:
    """The profile key whose run of releases holds ``release`` ("0.27.1" -> "0.26", "0.20.1" -> "0.21", "0.9.2" -> "0.7"
    (V0)); a release newer than every profile gets the newest."""
    rel = vllm_release(release) if release not in VLLM_PROFILES else VLLM_PROFILES[release].first_release
    best = None
    for key, prof in VLLM_PROFILES.items():
        if prof.first_release <= rel and (best is None or prof.first_release > VLLM_PROFILES[best].first_release):
            best = key
    return best or "0.6"


# vllm/config/cache.py CacheConfig.gpu_memory_utilization: 0.9 through 0.19.1, 0.92 from 0.20.0 (gpu_util_0_92); 0.34.0:
# resolved_gpu_memory_utilization, 1.0 with the extensible KV cache (its CUDA / ROCm default; extensible_kv_cache).
VLLM_GPU_MEMORY_UTILIZATION = {v: p.gpu_memory_utilization for v, p in VLLM_PROFILES.items()}
# vllm/config/cache.py DEFAULT_BLOCK_SIZE: 16 through 0.33.0 (64 from 0.34.0: vllm_default_block_size).
VLLM_BLOCK_SIZE = 16
VLLM_BLOCK_SIZE_034 = 64  # config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE in the 0.34.0 wheel (block_size_64)


def vllm_default_block_size(version: str) -> int:
    """vLLM's CacheConfig.DEFAULT_BLOCK_SIZE in profile ``version`` (tokens): 16 through 0.33.0, 64 from 0.34.0
    (VLLM_CHANGES "block_size_64"), the size update_block_size_for_backend offers every backend's
    get_preferred_block_size. Worked numbers: "0.33" -> 16, "0.34" -> 64."""
    return VLLM_BLOCK_SIZE_034 if vllm_has(version, "block_size_64") else VLLM_BLOCK_SIZE


# vLLM 0.34.0 v1/worker/extensible_kv_cache.py (read 2026-12-03): the margin kept free beyond the measured transient
KV_CACHE_MARGIN_FLOOR_BYTES = 1 << 30  # KV_CACHE_MARGIN_FLOOR_BYTES on CUDA (3 GiB on ROCm)
KV_CACHE_MARGIN_FLOOR_BYTES_ROCM = 3 << 30
KV_CACHE_MARGIN_FRACTION = 0.75  # KV_CACHE_MARGIN_FRACTION


def vllm_extensible_kv_bytes(init_free: int, resident: int, transient_peak: int, requested: int | None = None,
                             reserve_growth: int = 0, rocm: bool = False) -> int:
    """The bytes vLLM 0.34.0's extensible KV cache may take (extensible_kv_cache.py measure_kv_cache_bytes), from
    what it measures after the sizing warmup and CUDA-graph capture, all in bytes of one rank:
    init_free (free at the init snapshot), resident (everything held after capture but the KV cache: weights,
    non-torch growth, graphs, kept buffers = init_free - free - committed), transient_peak (reserved_headroom_bytes:
    the profile's transient peak, its CUDA-graph estimate 0 under this cache (v1/worker/gpu/model_runner.py
    profile_cudagraph_memory returns 0), raised by any larger peak of the sizing steps), requested
    (ceil(total x gpu_memory_utilization); None: unset, 1.0 x total, which never binds), reserve_growth (torch's
    reservation growth over a sizing step).
        margin    = max(1 GiB (3 on ROCm), int(0.75 x transient_peak))
        available = min(requested - resident, init_free - resident - margin) - max(transient_peak, reserve_growth)
    (floored at 0). Worked number: init_free 79 GiB, resident 20 GiB, peak 2 GiB, unset util: margin
    max(1, 1.5) = 1.5 GiB, 79 - 20 - 1.5 - 2 = 55.5 GiB = 59,592,671,232 B. kvplan.plan feeds it kvplan's own
    estimates of each input (plan._extensible_budget); the measured pool never exceeds the capacity reserved before
    warmup (requested - weights - non-torch - profile peak, the 0.33 formula with no graph estimate), since it
    takes the graphs and the margin off the same quantities."""
    margin = max(KV_CACHE_MARGIN_FLOOR_BYTES_ROCM if rocm else KV_CACHE_MARGIN_FLOOR_BYTES,
                 int(transient_peak * KV_CACHE_MARGIN_FRACTION))
    headroom = init_free - resident
    available = headroom - margin if requested is None else min(requested - resident, headroom - margin)
    return max(available - max(transient_peak, reserve_growth), 0)


# vLLM 0.34.0 config/cache.py DEFAULT_GPU_MEMORY_UTILIZATION: the default when the extensible KV cache is off
# (--kv-cache-memory-bytes, --no-enable-extensible-kv-cache), resolved_gpu_memory_utilization; read 2026-12-03.
VLLM_UTIL_WITHOUT_EXTENSIBLE = 0.92


def vllm_extensible_on(engine: "EngineConfig") -> bool:
    """Whether vLLM sizes this engine's KV cache with the extensible cache (0.34.0 config/vllm.py
    _resolve_extensible_kv_cache, enable_extensible_kv_cache unset): a profile carrying "extensible_kv_cache" and
    no --kv-cache-memory-bytes (num_gpu_blocks_override, elastic EP and legacy-IPC / custom-pool KV connectors,
    which turn it off too, are not EngineConfig fields). The platform (CUDA / ROCm only) is checked by the plan.
    Worked example: 0.34 -> True, 0.34 with kv_cache_memory_bytes=10 GiB -> False, 0.33 -> False."""
    return (engine.engine == "vllm" and vllm_has(engine.vllm_version, "extensible_kv_cache")
            and engine.kv_cache_memory_bytes is None)


# vLLM 0.34.0 utils/extensible_tensor.py granule_size: the commit granule, the driver's allocation granularity floored
# at _MIN_GRANULARITY 2 MiB (2 MiB on every NVIDIA data-centre GPU: cuMemGetAllocationGranularity); read 2026-12-03.
VLLM_EXTENSIBLE_GRANULE = 2 << 20


def vllm_extensible_blocks(budget: int, segment_strides: list[int], granule: int = VLLM_EXTENSIBLE_GRANULE) -> int:
    """Blocks an extensible KV cache commits within ``budget`` bytes (vLLM 0.34.0 extensible_kv_cache.py
    ExtensibleKVCache.blocks_within): the most n with sum over segments of cdiv(n x stride, granule) x granule <=
    budget. A block-compact layer-outermost layout (every CUDA backend's NHD / HND) has one segment a KV tensor,
    of stride its page (``segment_strides``, bytes). Worked number: Llama-3.1-8B at 64-token blocks, 32 segments
    of 64 x 8 x 128 x 2 x 2 B = 256 KiB, 10 GiB: floor(10 GiB / 8 MiB) = 1,280 blocks (whole granules: 1,280 x 256
    KiB = 320 MiB a segment); 10 GiB - 1 MiB: 1,279 // 8 x 8 = 1,272 (each segment back to 159 granules)."""
    per_block = sum(segment_strides)
    if budget <= 0 or per_block <= 0:
        return 0
    n = budget // per_block

    def physical(k: int) -> int:
        return sum(cdiv(k * s, granule) * granule for s in segment_strides)
    if physical(n) <= budget:
        return n
    lo, hi = 0, n  # physical(lo) <= budget < physical(hi); physical grows with k
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if physical(mid) <= budget else (lo, mid)
    return lo


# vLLM 0.34.0 v1/worker/gpu/warmup.py run_kv_cache_sizing_warmup: the step it sizes on requests prompt logprobs
# (ModelConfig.max_logprobs, 20 by default) for the whole max_num_batched_tokens; v1/worker/gpu/sample/prompt_logprob.py
# compute_prompt_logprobs_with_chunking takes the logits CHUNK_SIZE = 1024 rows at a time (read 2026-12-03).
VLLM_PROMPT_LOGPROBS_CHUNK = 1024


def vllm_prompt_logprobs_step_bytes(hidden: int, vocab: int, tokens: int, tp: int, act_b: int) -> int:
    """Allocated peak of 0.34.0's sizing step after its forward (bytes, one rank): the step's hidden states
    (tokens x hidden, alive to the end of execute_model) + one prompt-logprobs chunk of logits (rows = min(1024,
    tokens), model dtype): at TP 1 the LM head's [rows, vocab]; at TP > 1 this rank's [rows, vocab / tp] shard, the
    all-gather's [tp, rows, vocab / tp] buffer and its reshaped [rows, vocab] copy (distributed/parallel_state.py
    all_gather: movedim + reshape). torch.topk(20) and the fused log-softmax kernel (sample/logprob.py
    compute_token_logprobs: 'we do not materialize the full [batch_size, vocab_size] logprobs') add [rows, 21]
    tensors only.
        TP 1:  tokens x hidden x act_b + rows x vocab x act_b
        TP >1: tokens x hidden x act_b + rows x (cdiv(vocab, tp) + 2 x vocab) x act_b
    Worked number: Llama-3.1-8B TP 1, 8,192 tokens, bf16: 8192 x 4096 x 2 + 1024 x 128,256 x 2 = 67,108,864 +
    262,668,288 = 329,777,152 B (0.31 GiB)."""
    rows = min(VLLM_PROMPT_LOGPROBS_CHUNK, tokens)
    logits = rows * vocab if tp <= 1 else rows * (cdiv(vocab, tp) + 2 * vocab)
    return (tokens * hidden + logits) * act_b


# vLLM 0.34.0 model_executor/layers/attention/mla_attention.py determine_chunked_prefill_workspace_size: min(max(8 x
# max_model_len, 4 x max_num_seqs x block_size), 64 x 1024) tokens, rounded up to the block (read 2026-12-03).
VLLM_MLA_CONTEXT_WORKSPACE_CAP = 64 * 1024


def vllm_mla_context_tokens(max_len: int, max_seqs: int, block_size: int) -> int:
    """Tokens of 0.34.0's MLA chunked-context workspace, the most one context chunk up-projects (tokens):
    min(max(8 x max_model_len, 4 x max_num_seqs x block_size), 65,536) rounded up to the block
    (align_mla_chunked_context_workspace_size). Worked number: 1,024 seqs x 64-token blocks x 4 = 262,144 -> 65,536
    at any length; 8 seqs, 2,048 tokens, block 64: max(16,384, 2,048) = 16,384."""
    toks = min(max(8 * max_len, 4 * max_seqs * block_size), VLLM_MLA_CONTEXT_WORKSPACE_CAP)
    return cdiv(max(toks, block_size), block_size) * block_size


def vllm_mla_context_step_bytes(num_heads_rank: int, qk_nope: int, qk_rope: int, v_head: int, kv_lora_rank: int,
                                toks: int, act_b: int) -> int:
    """Allocated peak of 0.34.0's MLA context-prefill sizing step (bytes, one rank; warmup.py
    run_context_prefill_warmup fills one chunked-context workspace of ``toks`` tokens, vllm_mla_context_tokens):
    mla_attention.py _compute_prefill_context up-projects the chunk's latents, kv_nope = kv_b_proj(kv_c) [toks,
    heads, nope + v] (v a view of it), then k = cat(k_nope, k_pe) [toks, heads, nope + rope], beside the GEMM's
    input cast of [toks, kv_lora_rank]; the workspace itself is allocated at start (resident), the short queries
    add rows x heads only:
        peak = toks x (heads x (2 x nope + v + rope) + kv_lora_rank) x act_b
    Worked number: DeepSeek-V3 TP 8 (16 heads), 65,536 tokens, bf16: 65,536 x (16 x 448 + 512) x 2 =
    1,006,632,960 B (0.94 GiB)."""
    return toks * (num_heads_rank * (2 * qk_nope + v_head + qk_rope) + kv_lora_rank) * act_b


def vllm_034_refusal(why: str) -> str:
    """The refusal of a vLLM 0.34 plan kvplan cannot size (``why``: the case), with the fallback."""
    return (f"vLLM 0.34.0: {why}. kvplan plans 0.34's extensible KV cache (sized from the memory free after warmup "
            "and CUDA-graph capture, v1/worker/extensible_kv_cache.py measure_kv_cache_bytes) only where it can "
            "size every step that measurement sees; plan with profile 0.33 for vLLM 0.33.x (0.32 for 0.32.0), or give "
            "--kv-cache-memory-bytes (which turns the extensible cache off)")


VLLM_034_REFUSAL = vllm_034_refusal("this platform is not planned (the extensible KV cache is CUDA / ROCm only, and "
                                    "vllm-gaudi has no 0.34 line kvplan has read)")
# The warning every 0.34 plan sized by kvplan's extensible-cache model carries.
VLLM_034_PLAN_NOTE = (
    "vLLM 0.34 (extensible KV cache): the pool is sized as 0.34.0 measures it after warmup and CUDA-graph capture "
    "(free at the init snapshot - what stays resident - the largest transient - max(1 GiB, 0.75 x it)), from "
    "kvplan's estimates of each part; no public 0.34 log has checked these figures. Not counted: memory outside "
    "torch that grows during warmup and capture (cuBLAS / NCCL workspaces, at TP > 1 NCCL's buffers made before "
    "the init snapshot), torch's fragmentation above the transient (torch_reserve_growth_bytes), attention's own "
    "buffers in the real sizing step (the profile run skips attention). Each makes the real pool smaller")
# MLA block size by backend (vllm/platforms/cuda.py check_and_update_config, 0.10/0.11; 0.33
# get_preferred_block_size): FlashMLA (Hopper, sm90) forces 64, CUTLASS MLA (datacenter Blackwell, sm100)
# forces 128, elsewhere (Ampere, Ada: Triton MLA; ROCm) the default 16 stays.
VLLM_MLA_BLOCK_SIZE = 64
VLLM_MLA_BLOCK_SIZE_BY_ARCH = {"sm90": 64, "sm100": 128, "other": 16}
# From 0.18.0 every CUDA MLA backend runs blocks that are multiples of 16 (v1/attention/backends/mla/*.py
# supports_block_size: TRITON_MLA and FLASH_ATTN_MLA block_size % 16, FLASHMLA 64, FLASHINFER_MLA 32 / 64, CUTLASS_MLA
# 128; 0.18.0 / 0.19.0 / 0.33.0 wheels), and the selector passes a typed --block-size to each (v1/attention/selector.py
# user_specified_block_size): another size starts no backend, "No valid attention backend found for cuda".
VLLM_MLA_BLOCK_MULTIPLE = 16
# A typed --block-size for a DSA model (DeepSeek-V3.2, GLM-5) from 0.18.0: kept (platforms/interface.py
# update_block_size_for_backend skips a user-specified size in every 0.18.0 - 0.34.0 wheel), and it must be a multiple
# of 64 on CUDA. The selector (platforms/cuda.py get_attn_backend_cls) passes it to the sparse MLA backends only
# (validate_configuration: "sparse not supported" for the dense ones), whose supports_block_size wants block_size %
# kernel size == 0: FLASHMLA_SPARSE [64], FLASH_ATTN_MLA_SPARSE [64] (0.25.0+), FLASHINFER_MLA_SPARSE_SM90
# [MultipleOf(64)] (0.30.0+), FLASHINFER_MLA_SPARSE [32, 64] (0.18.0 - 0.31.0) / [MultipleOf(32)] (0.32.0+); none ->
# "No valid attention backend found for cuda". A size one of them takes but not 64's multiple (32, 96 with
# FLASHINFER_MLA_SPARSE on sm100) then fails at KV-cache setup: the indexer cache's DeepseekV32IndexerBackend
# (v1/attention/backends/mla/indexer.py) runs kernel blocks [64] on CUDA, and v1/worker/utils.py
# select_common_block_size raises "No common block size for N" when no explicit kernel size of the group divides N.
# 0.18.0 - 0.34.0 wheels, read 2026-12-03.
VLLM_DSA_BLOCK_MULTIPLE = 64
# vllm/engine/arg_utils.py get_batch_defaults, vllm serve (OPENAI_API_SERVER): (floor, tokens, seqs). The
# 70 GiB row skips the A100 ("a100" in the device name: large batches cut its throughput, vLLM PR #17885):
# the dennislee22 A100-80GB logs (0.10.1.1) print "Chunked prefill is enabled with max_num_batched_tokens=2048".
VLLM_BATCH_DEFAULTS = ((160 * GiB, 16384, 1024), (70 * GiB, 8192, 1024), (0, 2048, 256))
# An engine built straight from EngineArgs / AsyncEngineArgs (UsageContext.ENGINE_CONTEXT, the default of
# AsyncLLM.from_engine_args) is in neither table, so get_batch_defaults' dict.get falls back to SchedulerConfig's own
# defaults on every card: DEFAULT_MAX_NUM_BATCHED_TOKENS 2048, DEFAULT_MAX_NUM_SEQS 128 (vllm/config/scheduler.py of
# the 0.17.0, 0.19.0, 0.22.0 and 0.33.0 wheels; 0.11.0 sets the same 128 / 2048 in SchedulerConfig.__post_init__;
# read 2026-12-02). A 0.22.0 AsyncEngineArgs log prints "max_num_batched_tokens=2048" and captures graphs to 256.
VLLM_ENGINE_CONTEXT_BATCH = (2048, 128)
# Default CUDA-graph capture limit: min(2 x max_num_seqs x (1 + draft tokens from 0.13.0), 512) (vllm/config/vllm.py
# _set_cudagraph_sizes); 1024 on capability family 100 (B200 / B300 / GB200 / GB300) from 0.28.0
# (default_max_graph_size, VLLM_CHANGES capture_1024_sm100).
VLLM_MAX_CAPTURE_SIZE = 512
VLLM_MAX_CAPTURE_SIZE_SM100 = 1024
# CUDA graphs before vLLM estimates them (the "after_kv" releases, through 0.17.x: "Graph capturing finished ... took
# X GiB", outside the budget): the largest first capture + (graphs - 1) x a per-graph growth, summed over modes, with
# two sizes fitted to the v0.19.0 gpt-oss-20b TP2 log (llm-d-planner: "Estimated PIECEWISE CUDA graph memory: 128.00
# MiB first-capture + (83-1) x 6.00 MiB per-graph"); the same rule gives 0.51 GiB for 67 PIECEWISE graphs where
# 0.10.1.1 logged "took 0.50 GiB" (dennislee22). From 0.18 the model-shaped estimate below replaces it.
VLLM_CUDA_GRAPH_FIRST_BYTES = 128 * MiB
VLLM_CUDA_GRAPH_PER_GRAPH_BYTES = 6 * MiB
# The estimate vLLM 0.18.0 - 0.33.0 prints ("Estimated CUDA graph memory: X GiB total"; subtracted from 0.20.0) is
# measured, not computed: v1/worker/gpu_model_runner.py profile_cudagraph_memory warms up and captures the two largest
# sizes of each mode (PIECEWISE first, then FULL) into a throwaway pool, each measured as the drop in
# torch.cuda.mem_get_info, and returns max(first capture over modes) + sum over modes of (graphs - 1) x max(second
# capture, 1 MiB) (the V2 runner, 0.29+ v1/worker/gpu/cudagraph_utils.py, measures every PIECEWISE graph and
# extrapolates FULL the same way). kvplan models the three measured sizes from the model's shape (kvplan.engines
# cuda_graph_bytes), fitted 2026-12-01 to the 43 llm-d-planner v0.19.0 H100 logs that print their debug lines
# ("Estimated PIECEWISE / FULL CUDA graph memory: A MiB first-capture + (N-1) x B MiB per-graph"; mean |error| 0.16 GiB,
# 0.34 with the fixed fit; within 0.25 GiB on 39, 26 before; error table: tests/test_vllm_cudagraph_estimate.py):
# - per graph: 192 KiB per decoder layer on the rank's stage, 256 KiB where the layers route experts (the graph's
#   kernel nodes: Llama-3.1-8B 32 layers -> 6 MiB, logged 6 / 6; Llama-3.3-70B TP2 80 -> 15, logged 20 / 12; PP4 8 ->
#   1.5, logged 1 / 4; Qwen3-30B-A3B 48 MoE layers -> 12, logged 10 / 10; gpt-oss-20b 24 -> 6, logged 6 / 8);
VLLM_CUDA_GRAPH_LAYER_BYTES = 192 * 1024
VLLM_CUDA_GRAPH_MOE_LAYER_BYTES = 256 * 1024
#   The V2 runner (0.29+: every PIECEWISE graph captured and measured in one span, so later sizes reuse the pool the
#   earlier ones grew) logs less: 120 KiB a layer (160 with experts), fitted to its two public estimates, Llama-3.1-8B
#   on an A100 0.31.0 (0.46 GiB implied, 51 + 35 graphs: kvplan 0.44) and Qwen3.8-27B (64 layers) on an RTX PRO 6000
#   0.29.0 ("0.69 GiB (estimated)": kvplan 0.76).
VLLM_V2_CUDA_GRAPH_LAYER_BYTES = 120 * 1024
VLLM_V2_CUDA_GRAPH_MOE_LAYER_BYTES = 160 * 1024
# - the first PIECEWISE capture: 80 MiB + 2 x (largest size x this rank's gate + up width x activation bytes) (the
#   warm-up's and the capture's MLP intermediates: Llama-3.1-8B 80 + 2 x 512 x 28,672 x 2 B = 136 MiB, logged 138;
#   Mistral-Small-24B 208, logged 212; Llama TP4 94, logged 84);
VLLM_CUDA_GRAPH_PIECEWISE_BASE_BYTES = 80 * MiB
# - the first FULL capture: FlashAttention 3's split-KV accumulators where FLASH_ATTN (v3, Hopper) or FLASH_ATTN_MLA
#   serves the FULL graphs: v1/attention/backends/flash_attn.py sets max_num_splits = attention_config.
#   flash_attn_max_num_splits_for_cuda_graph (32) for FULL capture ("large enough intermediate buffers are
#   pre-allocated during capture"): out_accum + softmax_lse_accum = 32 x batch x heads x (head_dim + 1) x 4 B, + 4 MiB
#   (Llama-3.1-8B, batch 512, 32 heads x 128: 262 MiB, logged 260; DeepSeek-V2-Lite 16 heads x kv_lora_rank 512: 517,
#   logged 522; TP4 8 heads: 68, logged 70); 4 MiB elsewhere (TRITON_ATTN for Gemma-3 with its tower (use_mm_prefix)
#   and fp32, FA3 with attention sinks (gpt-oss): logged 4 - 8; FA2 on Ampere / Ada splits by its heuristic, one split
#   at these batches).
VLLM_FA3_CUDA_GRAPH_SPLITS = 32
VLLM_CUDA_GRAPH_FULL_BASE_BYTES = 4 * MiB
# gpt-oss raises the capture limit to 1024 ("Overriding max cuda graph capture size to 1024 for performance",
# 0.10.1.1 and v0.19.0 logs: 83 sizes).
VLLM_MAX_CAPTURE_SIZE_BY_MODEL = {"gpt_oss": 1024}
# Memory the CUDA context takes before vLLM's init snapshot (outside the budget): "cuda_memory=0.51GiB" in the
# v0.19.0 init snapshot (llm-d-planner log, H100). Used only for the sampler warm-up check.
VLLM_CONTEXT_BYTES = _g(0.51)
# SGLang: memory the CUDA context and NCCL take before weights load (outside its budget). Superseded by the fitted
# per-profile figures in kvplan.sglang (SglangProfile.context_*); kept for callers of the old name.
SGLANG_CONTEXT_BYTES = int(0.5 * GiB)


class EngineConfig(BaseModel):
    """Serving-engine knobs, named as vLLM's flags (SGLang and custom take the ones they use)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    engine: Literal["vllm", "sglang", "custom"] = "vllm"
    vllm_version: VllmVersion = VLLM_DEFAULT_VERSION
    sglang_version: SglangVersion = SGLANG_DEFAULT_VERSION  # the SGLang release line (kvplan.sglang.SGLANG_PROFILES)
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    block_size: int | None = Field(default=None, ge=1, le=65536)
    kv_cache_dtype: str = "auto"
    weight_format: str | None = None
    max_model_len: int | None = Field(default=None, ge=1, le=100_000_000)
    max_num_seqs: int | None = Field(default=None, ge=1, le=1_000_000)
    max_num_batched_tokens: int | None = Field(default=None, ge=1, le=100_000_000)
    kv_cache_memory_bytes: int | None = Field(default=None, ge=0)
    enforce_eager: bool = False
    # Intel Gaudi only: the VLLM_GRAPH_RESERVED_MEM environment variable vllm-gaudi reads (fraction of the usable
    # memory kept for HPU graphs); None = the plugin's 0.1 (0 with enforce_eager). kvplan.vllm_gaudi
    vllm_graph_reserved_mem: float | None = Field(default=None, ge=0, lt=1)
    # --compilation-config '{"cudagraph_mode": ...}': None = the release's default (VllmProfile.cudagraph_modes);
    # "PIECEWISE" captures no FULL decode graphs, "NONE" none at all (config/compilation.py CUDAGraphMode)
    cudagraph_mode: Literal["NONE", "PIECEWISE", "FULL_AND_PIECEWISE"] | None = None
    # --decode-context-parallel-size: the KV cache of a TP group is sharded by tokens over this many ranks.
    decode_context_parallel_size: int = Field(default=1, ge=1, le=1024)
    # --disable-custom-all-reduce, or a platform where vLLM turns it off itself (no GPU P2P, TP across nodes:
    # "Custom allreduce is disabled because ..."): non-torch memory at TP >= 2 is then much smaller.
    disable_custom_all_reduce: bool = False
    # top-k/top-p sampler of the dummy sampler run: "auto" = kvplan's assumption for the version (PyTorch-native
    # through the 0.20.1 profile, FlashInfer from 0.21 (VLLM_CHANGES flashinfer_sampler_default); vLLM 0.10 / 0.11.0 use
    # FlashInfer when that package is installed, which a planner cannot see), or as logged
    # ("Using FlashInfer for top-p & top-k sampling" / VLLM_USE_FLASHINFER_SAMPLER=1).
    sampler: Literal["auto", "pytorch", "flashinfer"] = "auto"
    # vllm serve, the offline LLM class, or EngineArgs / AsyncEngineArgs used directly (other batch defaults)
    usage_context: Literal["serve", "llm", "engine"] = "serve"
    mem_fraction_static: float | None = Field(default=None, gt=0, le=1)
    max_total_tokens: int | None = Field(default=None, ge=1)  # SGLang --max-total-tokens (caps its pool)
    # SGLang --enable-dp-attention --dp N: N attention-DP groups inside the TP group, each with its own requests and
    # KV pool (1 = off). Its figures (tokens, sequences) are per group; the deployment holds N times as many.
    dp_attention_size: int = Field(default=1, ge=1, le=4096)
    moe_dense_tp_size: int | None = Field(default=None, ge=1, le=4096)  # SGLang --moe-dense-tp-size (1: replicated)
    # SGLang's prefill (piecewise) CUDA-graph flag (kvplan.sglang.default_settings): None none given; "enable"
    # --enable-piecewise-cuda-graph (opt-in 0.5.3.post2 - 0.5.9, reserved from 0.5.6; a no-op from 0.5.10);
    # "enforce" --enforce-piecewise-cuda-graph (0.5.10+: on past the auto-disable rules); "disable"
    # --disable-piecewise-cuda-graph (0.5.10+).
    piecewise_cuda_graph: Literal["enable", "enforce", "disable"] | None = None
    # SGLang 0.5.20+ env SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION (kvplan.sglang.aiter_haircut): with an explicit
    # --mem-fraction-static, ROCm's aiter backend keeps it as given (no x 0.85)
    sglang_aiter_honor_explicit_mem_fraction: bool = False
    # SGLang hybrids (kvplan.sglang.mamba_pool): --mamba-full-memory-ratio (None: 0.9), --max-mamba-cache-size,
    # --mamba-ssm-dtype (None: the config's mamba_ssm_dtype where the line reads it, else float32)
    mamba_full_memory_ratio: float | None = Field(default=None, gt=0, le=1000)
    max_mamba_cache_size: int | None = Field(default=None, ge=1, le=10_000_000)
    mamba_ssm_dtype: Literal["float32", "bfloat16", "float16"] | None = None
    # SGLang hybrid sliding-window pools (kvplan.sglang.hybrid_swa_cell, kvplan.sglang_dsv4): --swa-full-tokens-ratio,
    # the sliding pool's tokens / the full pool's, in (0, 1] as server_args.py checks it (None: 0.8; DeepSeek-V4: 0.1),
    # and --disable-hybrid-swa-memory (one pool over every layer at the full rate)
    swa_full_tokens_ratio: float | None = Field(default=None, gt=0, le=1)
    disable_hybrid_swa_memory: bool = False
    runtime_gib: float = Field(default=2.0, ge=0, le=100_000)
    headroom_gib: float = Field(default=2.0, ge=0, le=100_000)
    activation_bytes: int | None = Field(default=None, ge=0)  # measured override of the estimate
    weights_bytes: int | None = Field(default=None, ge=0)  # measured "Model loading took X" override
    # torch.compile's cache at start-up (not a vLLM flag: ~/.cache/vllm/torch_compile_cache): "cold" compiles in the
    # profile run, whose inductor combo-kernel benchmark holds a copy of the embedding shard in the torch peak
    # (vllm_compile_benchmark_bytes); "warm" loads the compiled graph ("Directly load the compiled graph(s) ... from
    # the cache") and benchmarks nothing. Cold is the first start of a release and the safe plan.
    compile_cache: Literal["cold", "warm"] = "cold"
    # VLLM_USE_V2_MODEL_RUNNER=0 / 1 (config/vllm.py use_v2_model_runner reads it before its default): "auto" is the
    # release's default for the checkpoint (vllm_model_runner), "V1" / "V2" the environment's choice.
    model_runner: Literal["auto", "V1", "V2"] = "auto"
    # vLLM --language-model-only (config/multimodal.py, 0.17.0+: every modality limit 0): the vision / audio towers
    # are not built, so their weights are not loaded (--limit-mm-per-prompt: ``mm_limits``).
    language_model_only: bool = False
    # vLLM --limit-mm-per-prompt as (modality, count) pairs (kvplan.vllm_args); a modality not named keeps vLLM's
    # default 999. A modality at 0 is not profiled; every modality of a tower at 0 skips building it
    # (kvplan.vllm_mm.loads_tower, by release).
    mm_limits: tuple[tuple[str, int], ...] = ()
    # vLLM --mm-processor-kwargs keys kvplan reads, as (key, value) pairs: "max_pixels", "min_pixels",
    # "size.longest_edge", "size.shortest_edge" (the Qwen ViT's pixel limits: kvplan.vllm_mm)
    mm_processor_kwargs: tuple[tuple[str, int], ...] = ()
    # vLLM --skip-mm-profiling (0.10.2+, config/multimodal.py skip_mm_profiling): the profile run encodes no dummy
    # batch (the towers still load), "shifts the responsibility to users for estimating the peak memory usage of the
    # activation of multimodal encoder and embedding cache"
    skip_mm_profiling: bool = False
    # vLLM --mm-encoder-tp-mode: "weights" (default) shards the tower over TP; "data" replicates it per rank.
    mm_encoder_tp_mode: Literal["weights", "data"] = "weights"
    # vLLM --moe-backend (KernelConfig.moe_backend, 0.17.0+), lower-cased as typed; "auto" lets vLLM's oracle pick.
    # Planned: "cutlass" (0.18.0+: NVFP4 (W4A4) experts then run CutlassExpertsFp4, whose buffers the profile's
    # forward peak holds, kvplan.plan.vllm_cutlass_nvfp4_moe_transient_bytes), "marlin" (MarlinExperts' held
    # workspace; gpt-oss's MXFP4 layout too), "triton" for FP8 experts and gpt-oss's MXFP4 experts on Hopper,
    # "flashinfer_trtllm" for gpt-oss's on SM 10.x (kvplan.vllm_layouts.gpt_oss_mxfp4_typed_backend, which also
    # refuses what vLLM's MXFP4 oracle refuses); other values warn (kvplan.plan.unsized_moe_backend_note).
    moe_backend: str = Field(default="auto", min_length=1, max_length=40)
    # vLLM --speculative-config '{"method": "mtp" (or deepseek_mtp, glm4_moe_mtp), "num_speculative_tokens": N}':
    # the checkpoint's MTP layers are loaded (weights on the last stage) and their attention joins the KV cache.
    # "ngram" (prompt lookup) loads nothing and adds no KV layers. With either, a recurrent-state layer holds one
    # state page per draft token (vLLM >= 0.17 MambaSpec.num_speculative_blocks, kvplan.plan). "eagle" / "eagle3"
    # load the draft head ``draft`` (kvplan.drafter: its weights in "Model loading took", its attention layers in the
    # KV groups); "draft_model" loads a draft LM (``draft``, kvplan.draft_model: its weights, rotary table and KV
    # layers); other methods (medusa, dflash) are refused by kvplan.vllm_args.
    speculative_method: Literal["none", "mtp", "ngram", "eagle", "eagle3", "draft_model"] = "none"
    num_speculative_tokens: int = Field(default=0, ge=0, le=64)
    # SGLang --speculative-num-draft-tokens (None: SGLang's own, kvplan.sglang.speculative_draft_tokens: NGRAM 12,
    # EAGLE / NEXTN --speculative-num-steps + 1): sizes the MambaPool's draft-token reserve of a hybrid (0.5.14+)
    speculative_num_draft_tokens: int | None = Field(default=None, ge=1, le=1024)
    draft: DraftSpec | None = None  # the EAGLE head or draft model of --speculative-config "model" (kvplan.drafter)
    # vLLM 0.10.2 - 0.11.x find OpenAI's triton_kernels package only where it was installed beside the wheel: the
    # vllm/vllm-openai image has it (MXFP4 MoE then takes the Triton layout on Hopper), a pip install does not (Marlin).
    # None: the release's pip default; a pasted vllm/vllm-openai:vX tag sets True (kvplan.vllm_layouts.mxfp4_triton_kernels).
    triton_kernels: bool | None = None
    # --enable-prefix-caching / --no-enable-prefix-caching; None: the release's default. It matters for hybrids:
    # with it vLLM keeps recurrent states in "align" mode (more state pages per request, kvplan.plan).
    enable_prefix_caching: bool | None = None
    # where weights_bytes comes from when not typed in: "checkpoint headers" (kvplan.web.checkpoint), its basis
    weights_basis: Literal["measured", "checkpoint headers"] = "measured"
    # where that figure comes from, for the weights term ("acme/ckpt: 21 tensors in 2 files", "typed in: 14.2488 GiB")
    weights_source: str = Field(default="", max_length=500)


def vllm_profile(engine: EngineConfig) -> VllmProfile:
    return VLLM_PROFILES[engine.vllm_version]


def gpu_arch(gpu_name: str) -> str:
    """'sm90' (Hopper), 'sm100' (datacenter Blackwell) or 'other', from the catalog name."""
    name = gpu_name.upper()
    if name.startswith(("H100", "H200", "H20", "H800", "GH200")):
        return "sm90"
    if name.startswith(("B200", "B300", "GB200", "GB300")):
        return "sm100"
    return "other"


def vllm_mla_block_size(gpu_name: str) -> int:
    """The KV block size vLLM forces for MLA on this GPU through 0.14: FlashMLA 64 (Hopper, through 0.17), CUTLASS MLA
    128 (B200/B300), 16 elsewhere (Triton MLA on Ampere/Ada; FlashMLA needs sm90). vllm/platforms/cuda.py
    check_and_update_config; by release and backend: ``vllm_mla_default``; kvplan plans hybrid MLA models with it.
    Worked number: H200 -> 64 (Kimi-K2 TP8: 715,072 tokens = 11,173 blocks x 64)."""
    return VLLM_MLA_BLOCK_SIZE_BY_ARCH[gpu_arch(gpu_name)]


def _sm103_before_family_check(gpu_name: str, vllm_version: str) -> bool:
    """Whether vLLM's MLA rules see this GPU as non-Blackwell: a B300 / GB300 (SM 10.3, kvplan's "sm100" arch) in a
    release whose platforms/cuda.py tests SM 10.0 exactly (before 0.13.0, VLLM_CHANGES ``mla_blackwell_family``).
    Worked example: ("B300", "0.12") -> True, ("B300", "0.13") -> False, ("B200", "0.12") -> False."""
    return gpu_name.upper().startswith(("B300", "GB300")) and not vllm_has(vllm_version, "mla_blackwell_family")


class VllmMlaDefault(NamedTuple):
    """vLLM's MLA attention backend for a plain-MLA model and the KV block it runs with no --block-size."""
    backend: str  # by vLLM's name, what "Using ... attention backend" prints
    block_size: int  # tokens a KV block


def vllm_mla_default(gpu_name: str, vllm_version: str, kv_quantized: bool = False,
                     qk_nope_head_dim: int = 128) -> VllmMlaDefault:
    """(backend, default block) vLLM runs a dense, non-hybrid MLA model with, by release, GPU, KV dtype (kv_quantized:
    a 1-byte cache) and the config's qk_nope_head_dim; no --block-size typed (``vllm_mla_block_forced`` for a typed one).

    Read in the PyPI wheels (platforms/cuda.py check_and_update_config / _get_backend_priorities, 2026-12):
    - 0.10.0 - 0.11.0: Hopper FLASHMLA, forced to 64; sm100 CUTLASS_MLA, forced to 128 (the 0.10 profile plans
      0.10.1.1: 0.10.0 took CUTLASS only through VLLM_ATTENTION_BACKEND and ran TRITON_MLA at 16 on a B200);
      elsewhere TRITON_MLA at the default 16.
    - 0.11.1 - 0.17.x (``mla_flash_attn_hopper``): the backend is the first valid one of _get_backend_priorities,
      Hopper FLASH_ATTN_MLA (kv dtype auto / bfloat16 only) then FLASHMLA (fp8), while check_and_update_config still
      forces the FlashMLA block 64 on any Hopper (its ``use_flashmla`` is the non-Blackwell default, whatever backend
      is picked later); sm100 CUTLASS_MLA at 128 through 0.14.x, and from 0.15.0 (``mla_flashinfer_blackwell``)
      FLASHINFER_MLA, forced to 64, when qk_nope_head_dim is 128 (its kernel's only one), else CUTLASS_MLA at 128.
    - From 0.18.0 (``mla_backend_block_size``, platforms/interface.py update_block_size_for_backend) the first valid
      backend's get_preferred_block_size(16) (v1/attention/backend.py: 16 if it takes it, else its smallest size):
      Hopper FLASH_ATTN_MLA [MultipleOf(16)] -> 16, with an fp8 KV cache FLASHMLA [64] -> 64; sm100 FLASHINFER_MLA
      (qk_nope_head_dim 64 / 128 / 192) [32, 64] -> 32, else CUTLASS_MLA [128]; elsewhere TRITON_MLA
      [MultipleOf(16)] -> 16 (0.18.0 / 0.19.0 / 0.21.0 / 0.33.0 wheels); from 0.34.0 (``block_size_64``) the
      offered size is 64: FLASH_ATTN_MLA, FLASHINFER_MLA and TRITON_MLA run 64 (0.34.0 wheel:
      v1/attention/backends/mla/*.py get_supported_kernel_block_sizes).
    ROCm and other GPUs: TRITON_MLA at 16 (platforms/rocm.py forces no MLA block; AITER MLA is opt-in).
    B300 / GB300 (SM 10.3) before 0.13.0 (``mla_blackwell_family``): TRITON_MLA at 16, the Blackwell branch being
    SM 10.0 only there (``_sm103_before_family_check``); from 0.13.0 as B200.
    Worked numbers: H100, 0.11 -> ("FLASHMLA", 64); B300, 0.11 / 0.12 -> ("TRITON_MLA", 16), 0.13 -> ("CUTLASS_MLA",
    128); H100, 0.17 -> ("FLASH_ATTN_MLA", 64); DeepSeek-V2-Lite on an
    H100 at 0.19.0: ("FLASH_ATTN_MLA", 16), "Using FLASH_ATTN_MLA attention backend", 1,505,552 tokens = 94,097 blocks
    x 16 (llm-d-planner v0.19.0 log)."""
    arch = gpu_arch(gpu_name)
    if _sm103_before_family_check(gpu_name, vllm_version):
        return VllmMlaDefault("TRITON_MLA", VLLM_BLOCK_SIZE)
    if vllm_has(vllm_version, "mla_backend_block_size"):
        # get_preferred_block_size(DEFAULT_BLOCK_SIZE): 16 through 0.33, 64 from 0.34 (block_size_64), which
        # FLASH_ATTN_MLA / TRITON_MLA (MultipleOf(16)) and FLASHINFER_MLA ([32, 64]) take as offered
        default = vllm_default_block_size(vllm_version)
        if arch == "sm90":
            return VllmMlaDefault("FLASHMLA", 64) if kv_quantized else VllmMlaDefault("FLASH_ATTN_MLA", default)
        if arch == "sm100":
            return VllmMlaDefault("FLASHINFER_MLA", 64 if default == 64 else 32) \
                if qk_nope_head_dim in (64, 128, 192) else VllmMlaDefault("CUTLASS_MLA", 128)
        return VllmMlaDefault("TRITON_MLA", default)
    if arch == "sm90":
        hopper = "FLASH_ATTN_MLA" if vllm_has(vllm_version, "mla_flash_attn_hopper") and not kv_quantized else "FLASHMLA"
        return VllmMlaDefault(hopper, 64)
    if arch == "sm100":
        if vllm_has(vllm_version, "mla_flashinfer_blackwell") and qk_nope_head_dim == 128:
            return VllmMlaDefault("FLASHINFER_MLA", 64)
        return VllmMlaDefault("CUTLASS_MLA", 128)
    return VllmMlaDefault("TRITON_MLA", VLLM_BLOCK_SIZE)


class VllmMlaBlock(NamedTuple):
    """The KV block vLLM runs a plain-MLA model with for a typed --block-size, and what replaced it."""
    block_size: int  # tokens a KV block
    forced_for: str | None  # the backend vLLM's log names ("Forcing kv cache block size to 64 for FlashMLA backend."),
    # None where the typed size is kept
    takes: str = ""  # the sizes that rule keeps, in words ("multiples of 64"); "" where the typed size is kept


def vllm_mla_block_forced(typed_block_size: int, gpu_name: str, vllm_version: str, kv_quantized: bool = False,
                          qk_nope_head_dim: int = 128) -> VllmMlaBlock:
    """The block vLLM runs a dense, non-hybrid MLA model with when ``--block-size typed_block_size`` is given.

    Inputs: the typed size (tokens), the catalog GPU, the vLLM profile, kv_quantized (a 1-byte KV cache) and the
    config's qk_nope_head_dim. Rules, read in the PyPI wheels (2026-12), for the default backend of
    ``vllm_mla_default`` (through 0.17 platforms/cuda.py check_and_update_config rewrites cache_config.block_size
    whether the user typed it or not):
    - 0.10.0 - 0.11.0 (platforms/cuda.py): FlashMLA on Hopper replaces any size but 64 (``block_size != 64``),
      CUTLASS MLA on sm100 any size but 128 (``!= 128``).
    - 0.11.1 - 0.17.x (``mla_block_multiple``, platforms/cuda.py): FlashMLA replaces a size not a multiple of 64 with
      64 (``% 64 != 0``; also when FLASH_ATTN_MLA is then picked), CUTLASS MLA one not a multiple of 128 with 128,
      and from 0.15.0 FlashInfer MLA (sm100, qk_nope_head_dim 128) one that is neither 32 nor a multiple of 64 with
      64; the log reads "Forcing kv cache block size to 64 for FlashMLA backend." (or "128 for CUTLASS_MLA", "64 for
      FlashInferMLA").
    - From 0.18.0 (``mla_backend_block_size``): platforms/interface.py update_block_size_for_backend returns at
      once when cache_config.user_specified_block_size ("User specified --block-size; keep it."), and the selector
      (v1/attention/selector.py, platforms/cuda.py get_attn_backend_cls) passes the typed size to each backend's
      validate_configuration, skipping those that do not take it ("--block-size N precluded higher-priority
      backend(s)"): the typed size is what runs (0.18.0 / 0.19.0 / 0.33.0 wheels).
    - TRITON_MLA (Ampere, Ada, ROCm: platforms/rocm.py forces no MLA block; B300 / GB300 before 0.13.0) keeps any
      size.
    Worked numbers: 16 on an H200 at 0.11 -> 64 (FlashMLA): DeepSeek-V3 TP8 at max_model_len 8,192 runs blocks of 64 x
    70,272 B = 4,497,408 B, its 43,657,510,577 B pool 9,707 blocks = 621,248 tokens (not 38,829 blocks x 16); 128 on
    an H200 at 0.11 -> 64 (!= 64), at 0.17 -> 128 (a multiple of 64); 64 on a B200 at 0.14 -> 128 (CUTLASS_MLA); 16
    on an H200 at 0.19 -> 16 (tests/test_mla_block_forced.py)."""
    arch = gpu_arch(gpu_name)
    if (vllm_has(vllm_version, "mla_backend_block_size") or arch not in ("sm90", "sm100")
            or _sm103_before_family_check(gpu_name, vllm_version)):  # TRITON_MLA there: nothing forced
        return VllmMlaBlock(typed_block_size, None)
    backend, forced = vllm_mla_default(gpu_name, vllm_version, kv_quantized, qk_nope_head_dim)
    multiple = vllm_has(vllm_version, "mla_block_multiple")
    if backend == "FLASHINFER_MLA":
        kept, name, takes = typed_block_size == 32 or typed_block_size % 64 == 0, "FlashInferMLA", "32 or multiples of 64"
    else:  # sm90: the FlashMLA rule, whichever Hopper backend is picked after it; sm100: CUTLASS MLA's
        name = "FlashMLA" if arch == "sm90" else "CUTLASS_MLA"
        kept = typed_block_size % forced == 0 if multiple else typed_block_size == forced
        takes = f"multiples of {forced}" if multiple else f"{forced} only"
    return VllmMlaBlock(typed_block_size, None) if kept else VllmMlaBlock(forced, name, takes)


# DeepSeek sparse attention (DSA: DeepSeek-V3.2, GLM-5) runs 64-token KV blocks on Hopper and datacenter Blackwell in
# every V1 release read (0.11.0 - 0.33.0 wheels): see vllm_sparse_mla_block_size.
VLLM_SPARSE_MLA_BLOCK_SIZE = 64


def vllm_sparse_mla_block_size(gpu_name: str) -> int:
    """The KV block size vLLM runs a DSA model (an MLA latent + lightning-indexer key, ``index_topk`` in the config) at.

    0.11.0 - 0.17.x: platforms/cuda.py check_and_update_config forces 64 for any config with ``index_topk`` ("Forcing
    kv cache block size to 64 for FlashMLASparse backend"; 0.17.0 also for FLASHINFER_MLA_SPARSE, kernel blocks
    [32, 64], from the default 16). From 0.18.0 (``mla_backend_block_size``, platforms/interface.py
    update_block_size_for_backend) the block is the first attention layer's backend's ``get_preferred_block_size(16)``:
    layer 0's indexer cache (models/deepseek_v2.py DeepseekV32IndexerCache, registered before that layer's
    MLAAttention) runs DeepseekV32IndexerBackend, kernel blocks [64] on CUDA (v1/attention/backends/mla/indexer.py)
    -> 64; from 0.31.0 the smallest size every backend accepts (_preferred_block_size_for_backends): lcm(64,
    FLASHINFER_MLA_SPARSE [32, 64] / MultipleOf(32) or FLASHMLA_SPARSE [64]) = 64 (0.31.0 / 0.32.0 / 0.33.0 wheels). Elsewhere (no sparse MLA backend before
    sm120's) the forced MLA table stays. Worked number: GLM-5.2-FP8 on 8 x B200, vLLM 0.28.0, fp8 KV: 1,546,112 tokens
    = 24,158 blocks x 64 (not the 128 of CUTLASS_MLA)."""
    if gpu_arch(gpu_name) in ("sm90", "sm100"):
        return VLLM_SPARSE_MLA_BLOCK_SIZE
    return vllm_mla_block_size(gpu_name)


def vllm_sparse_mla_block_forced(typed_block_size: int, gpu_name: str, vllm_version: str) -> VllmMlaBlock:
    """The block vLLM runs a DSA model (every layer an MLA latent + indexer key: DeepSeek-V3.2, GLM-5) with when
    ``--block-size typed_block_size`` is given, on Hopper / datacenter Blackwell (tokens).

    0.11.0 - 0.17.x: platforms/cuda.py check_and_update_config replaces any size but 64 for a config with
    ``index_topk`` ("if use_sparse and cache_config.block_size != 64", "Forcing kv cache block size to 64 for
    FlashMLASparse backend."; 0.17.0: FLASHMLA_SPARSE unless --attention-config picks FLASHINFER_MLA_SPARSE, so the
    same). From 0.18.0 (``mla_backend_block_size``) update_block_size_for_backend keeps a typed size, which then has
    to be a multiple of 64 (VLLM_DSA_BLOCK_MULTIPLE: kvplan.plan._check_mla_block_size refuses another). Other GPUs
    keep it (kvplan plans DSA with the plain MLA table there). Worked number: DeepSeek-V3.2 on an H200 at 0.11,
    --block-size 16 -> 64; at 0.19 -> 16 kept (and refused: no sparse backend runs 16), 128 -> 128."""
    if vllm_has(vllm_version, "mla_backend_block_size") or gpu_arch(gpu_name) not in ("sm90", "sm100") \
            or typed_block_size == VLLM_SPARSE_MLA_BLOCK_SIZE:
        return VllmMlaBlock(typed_block_size, None)
    return VllmMlaBlock(VLLM_SPARSE_MLA_BLOCK_SIZE, "FlashMLASparse", f"{VLLM_SPARSE_MLA_BLOCK_SIZE} only")


def vllm_sparse_mla_fp8_backend(gpu_name: str, vllm_version: str, heads_per_rank: int, qk_nope_head_dim: int) -> str:
    """The sparse MLA backend vLLM stores an fp8 KV cache of a DSA model with: "FLASHINFER_MLA_SPARSE" (a plain fp8
    latent, kv_lora_rank + qk_rope_head_dim bytes a token a layer) or "FLASHMLA_SPARSE" (``fp8_ds_mla``: 512 fp8 NoPE
    + 4 fp32 scales + 64 bf16 RoPE = 656 B).

    Backend order: platforms/cuda.py _get_backend_priorities, the first that validates. On sm100 (B200 / B300):
    through 0.17.x FLASHMLA_SPARSE (0.17.0 puts FLASHINFER_MLA_SPARSE first at <= 16 heads a rank, but it takes kv
    dtypes auto / bfloat16 only and models/config.py has already made fp8 ``fp8_ds_mla``); 0.18.x
    (``sparse_mla_flashinfer_fp8``) FLASHINFER_MLA_SPARSE when heads_per_rank <= 16 and qk_nope_head_dim == 128;
    from 0.19.0 (``sparse_mla_flashinfer_fp8_first``) FLASHINFER_MLA_SPARSE first for any quantized KV cache, valid for
    qk_nope_head_dim 128 or 192 (v1/attention/backends/mla/flashinfer_mla_sparse.py supports_combination), so
    DeepSeek-V3.2 (128) and GLM-5 (192) at any TP. heads_per_rank is the MLA layer's num_heads, num_attention_heads //
    tp (models/deepseek_v2.py num_local_heads). Hopper (sm90) and other GPUs: FLASHMLA_SPARSE (0.28.0's
    FLASH_ATTN_MLA_SPARSE takes 16-bit KV only; 0.33.0's FLASHINFER_MLA_SPARSE_SM90 comes after FLASHMLA_SPARSE at
    head size 576). A 16-bit cache is 576 x 2 B on every one of these backends, so only fp8 pages differ.
    Worked number: GLM-5.2 TP8 on B200, 0.28.0: 64 / 8 = 8 heads, qk_nope_head_dim 192 -> FLASHINFER_MLA_SPARSE,
    78 x 576 + 21 x 132 = 47,700 B a token (fp8_ds_mla: 53,940)."""
    if gpu_arch(gpu_name) != "sm100" or not vllm_has(vllm_version, "sparse_mla_flashinfer_fp8"):
        return "FLASHMLA_SPARSE"
    if vllm_has(vllm_version, "sparse_mla_flashinfer_fp8_first"):
        return "FLASHINFER_MLA_SPARSE" if qk_nope_head_dim in (128, 192) else "FLASHMLA_SPARSE"
    return "FLASHINFER_MLA_SPARSE" if heads_per_rank <= 16 and qk_nope_head_dim == 128 else "FLASHMLA_SPARSE"


def vllm_glm_dsa_fp8_default(gpu_name: str, vllm_version: str, model_type: str) -> bool:
    """Whether vLLM turns ``--kv-cache-dtype auto`` into fp8_e4m3 for this model on this GPU: GLM-5 (model_type
    glm_moe_dsa, GlmMoeDsaForCausalLM) on sm10x from 0.32.0 (``glm_dsa_fp8_kv_sm100``, models/config.py
    GlmMoeDsaForCausalLM.verify_and_update_config). Worked example: GLM-5 on a B200 at 0.33 -> True (an fp8 page,
    FLASHINFER_MLA_SPARSE's 576 B latent); on an H200, or at 0.28, False."""
    return (model_type == "glm_moe_dsa" and gpu_arch(gpu_name) == "sm100"
            and vllm_has(vllm_version, "glm_dsa_fp8_kv_sm100"))


# The largest multimodal item of a Gemma-4 prefix-LM model, vllm/model_executor/models/gemma4_mm.py
# Gemma4ProcessingInfo.get_mm_max_tokens_per_item (identical in the 0.22.0 - 0.30.0 wheels; 0.31.0 - 0.33.0 only
# respell the audio / video-options tests; gemma4_unified.py the same): image = vision_config.default_output_length
# (280; at most 1120 via mm_processor_kwargs max_soft_tokens, _SUPPORTED_SOFT_TOKENS), audio =
# processor.audio_seq_length (750, transformers Gemma4Processor) when the config has an audio tower, video =
# _VIDEO_MAX_FRAMES 32 x (_VIDEO_MAX_SOFT_TOKENS 70 + boi + eoi + 6 timestamp tokens) = 2,496, always supported
# (get_supported_mm_limits): the video item is the largest whatever the image / audio settings.
VLLM_GEMMA4_MM_ITEM_TOKENS = 32 * (70 + 2 + 6)
VLLM_MM_PREFIX_LM_ITEM_TOKENS = {"gemma4_text": VLLM_GEMMA4_MM_ITEM_TOKENS, "gemma4_unified_text": VLLM_GEMMA4_MM_ITEM_TOKENS}


def vllm_mm_batch_floor(model_type: str, mm_prefix_lm: bool, multimodal: bool, engine: EngineConfig) -> int:
    """The batch budget vLLM raises the default max_num_batched_tokens to for a multimodal prefix-LM model, or 0.

    vllm/engine/arg_utils.py _set_default_max_num_seqs_and_batched_tokens_args (0.22.0 - 0.33.0, VLLM_CHANGES
    "mm_prefix_lm_batch_floor"): when --max-num-batched-tokens is not given and the model is multimodal (its towers
    are part of the checkpoint: ModelConfig.multimodal_config) and is_mm_prefix_lm, the default becomes
    max(default, the largest get_mm_max_tokens_per_item), "a single multimodal item must fit in one batch"
    (prefix-LM models prefill an item atomically). Models whose get_mm_max_tokens_per_item is the base class's None
    (Gemma-3 and PaliGemma: prefix-LM but profiled by dummy inputs; every wheel 0.22.0 - 0.33.0) are not raised;
    Qwen2.5-VL / Qwen3-VL override it but are not prefix-LM. Of kvplan's families only Gemma-4 (text config
    use_bidirectional_attention "vision") is raised: to 2,496 (VLLM_GEMMA4_MM_ITEM_TOKENS). --language-model-only
    (or --limit-mm-per-prompt with every modality 0) keeps the floor through 0.26.0 (the limits do not enter
    _get_min_mm_batched_tokens) and drops it from 0.27.0 ("mm_prefix_lm_text_only_off"). Not modeled: a
    --limit-mm-per-prompt video ``num_frames`` below 32 (it lowers the video item). Worked number: Gemma-4-26B-A4B
    on one L40S at 0.25 -> 2,496 (the L40S default 2,048 raised; the GEMMA4-L40S log's 221 sliding blocks a request).
    """
    if engine.engine != "vllm" or engine.max_num_batched_tokens is not None or not (mm_prefix_lm and multimodal):
        return 0
    version = engine.vllm_version
    if VLLM_PROFILES[version].engine_core == "V0" or not vllm_has(version, "mm_prefix_lm_batch_floor"):
        return 0
    if engine.language_model_only and vllm_has(version, "mm_prefix_lm_text_only_off"):
        return 0
    return VLLM_MM_PREFIX_LM_ITEM_TOKENS.get(model_type, 0)


def batch_defaults(gpu_name: str, device_bytes: int, engine: EngineConfig, mm_floor: int = 0,
                   max_model_len: int | None = None) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) as vLLM picks them for this device (explicit flags win).

    vllm/engine/arg_utils.py get_batch_defaults: >= 160 GiB (from 0.28.0, batch_tier_160) 16384 / 1024; >= 70 GiB and not an
    A100 8192 / 1024 for ``vllm serve`` (16384 / 1024 for the LLM class); otherwise 2048 / 256 (8192 / 256).
    ``mm_floor`` (``vllm_mm_batch_floor``): a multimodal prefix-LM model's default tokens are raised to it.
    Worked number: A100-80GB -> 2048 / 256 (dennislee22 log: max_num_batched_tokens=2048); H100 -> 8192 / 1024;
    Gemma-4 on an L40S from 0.22 -> 2496 / 256. EngineArgs / AsyncEngineArgs used directly (usage_context
    "engine") -> 2048 / 128 on every card (VLLM_ENGINE_CONTEXT_BATCH).
    From 0.11.1 (VLLM_CHANGES "batch_defaults_capped") a default token budget is capped at max_num_seqs x
    ``max_model_len`` and a default max_num_seqs at the token budget: ``--max-num-batched-tokens 128`` on an H100 ->
    128 / 128 (not 1,024 sequences); ``--max-num-seqs 1 --max-model-len 4096`` -> 4,096 / 1 (not 8,192 tokens).
    """
    prof = VLLM_PROFILES[engine.vllm_version]
    if prof.engine_core == "V0":  # V0: 256 seqs; its tokens follow max_model_len (kvplan.vllm_v0.batch_limits)
        return (engine.max_num_batched_tokens or 2048, engine.max_num_seqs or 256)
    llm = engine.usage_context == "llm"
    if engine.usage_context == "engine":
        tokens, seqs = VLLM_ENGINE_CONTEXT_BATCH
    elif prof.large_tier and device_bytes >= VLLM_BATCH_DEFAULTS[0][0]:
        tokens, seqs = 16384, 1024
    elif device_bytes >= VLLM_BATCH_DEFAULTS[1][0] and "A100" not in gpu_name.upper():
        tokens, seqs = (16384 if llm else 8192), 1024
    else:
        tokens, seqs = (8192 if llm else 2048), 256
    tokens = engine.max_num_batched_tokens or max(tokens, mm_floor)
    seqs = engine.max_num_seqs or seqs
    if engine.engine == "vllm" and vllm_has(engine.vllm_version, "batch_defaults_capped"):
        if engine.max_num_batched_tokens is None and max_model_len:
            tokens = min(seqs * max_model_len, tokens)
        if engine.max_num_seqs is None:
            seqs = min(seqs, tokens)
    return tokens, seqs


def _vllm_step_grid(top: int, step_16: bool) -> list[int]:
    """[1, 2, 4] + range(8, top + 1, 8), or with ``step_16`` range(8, 256, 8) + range(256, top + 1, 16), all <= top."""
    if step_16:
        sizes = [1, 2, 4] + list(range(8, min(top + 1, 256), 8)) + list(range(256, top + 1, 16))
    else:
        sizes = [1, 2, 4] + list(range(8, top + 1, 8))
    return [s for s in sizes if s <= top]


def cuda_graph_capture_sizes(prof: VllmProfile, max_num_seqs: int, max_num_batched_tokens: int,
                             model_type: str = "", num_speculative_tokens: int = 0, arch: str = "") -> list[int]:
    """vLLM's default capture sizes (vllm/config/vllm.py _set_cudagraph_sizes), limited to the batched tokens.

    Inputs: the release line, --max-num-seqs, --max-num-batched-tokens, the model_type (gpt-oss overrides the limit)
    and k = num_speculative_tokens (0 without speculation); a uniform decode step holds q = 1 + k tokens a request.
    0.10/0.11: [1, 2, 4] + range(8, max + 1, 8); 0.11.1+: [1, 2, 4] + range(8, 256, 8) + range(256, max + 1, 16),
    with max = min(2 x max_num_seqs x q, 512) (q from 0.13.0, VLLM_CHANGES spec_capture_widened; 1 before; 1024 for
    512 from 0.28.0 where ``arch`` is "sm100", datacenter Blackwell: capture_1024_sm100) or gpt-oss's 1024, then
    min(max, max_num_batched_tokens). From 0.20.1 (capture_max_tokens) max_num_batched_tokens
    itself is added where it is the limit (off the stride: 1,000 -> ..., 992, 1000). From 0.29.0
    (spec_capture_decode_sizes) a speculative plan also gets the uniform decode sizes n x q, n in [1, 2, 4] + range(8,
    256, 8) + range(256, max_num_seqs + 1, 16) + [max_num_seqs]; from 0.31.0 (capture_max_seqs) a plan without
    speculation gets max_num_seqs itself; both only where <= max and <= the batched tokens (gpt-oss's explicit limit
    adds neither). These are the sizes before the speculative rounding (``cuda_graph_sizes_by_mode``).
    Worked number: 1024 seqs -> 67 sizes (0.10 log) or 51 (0.19 log); gpt-oss -> 83; 64 seqs at k = 2 on 0.25:
    max = min(64 x 3 x 2, 512) = 384 -> 3 + 31 + 9 = 43 sizes (12 at 0.12: max 128).
    """
    limit = VLLM_MAX_CAPTURE_SIZE_BY_MODEL.get(model_type)
    q = 1 + num_speculative_tokens if vllm_has(prof.version, "spec_capture_widened") else 1
    ceiling = (VLLM_MAX_CAPTURE_SIZE_SM100 if arch == "sm100" and vllm_has(prof.version, "capture_1024_sm100")
               else VLLM_MAX_CAPTURE_SIZE)
    wide = limit or min(2 * max_num_seqs * q, ceiling)
    top = min(wide, max_num_batched_tokens)
    sizes = set(_vllm_step_grid(top, prof.capture_step_above_256 == 16 or limit is not None))
    if top == max_num_batched_tokens and vllm_has(prof.version, "capture_max_tokens"):
        sizes.add(top)
    decode: set[int] = set()
    if num_speculative_tokens and limit is None and vllm_has(prof.version, "spec_capture_decode_sizes"):
        reqs = min(max_num_seqs, ceiling)
        decode = {n * (1 + num_speculative_tokens) for n in set(_vllm_step_grid(reqs, True)) | {reqs}}
    elif not num_speculative_tokens and limit is None and vllm_has(prof.version, "capture_max_seqs"):
        decode = {max_num_seqs}
    return sorted(sizes | {s for s in decode if s <= wide and s <= max_num_batched_tokens})


def cuda_graph_sizes_by_mode(prof: VllmProfile, max_num_seqs: int, max_num_batched_tokens: int, model_type: str = "",
                             num_speculative_tokens: int = 0, full_decode: bool = True, runner: str = "V1",
                             arch: str = "") -> tuple[list[int], list[int]]:
    """(PIECEWISE sizes, FULL decode sizes) vLLM captures, as "Profiling CUDA graph memory: PIECEWISE=N (largest=A),
    FULL=M (largest=B)" counts them (``full_decode``: the mode captures FULL decode graphs, FULL_AND_PIECEWISE).

    Inputs as ``cuda_graph_capture_sizes``, q = 1 + num_speculative_tokens, the model runner. Rules (VLLM_CHANGES):
    - FULL decode sizes: the capture sizes x with q <= x <= q x max_num_seqs (v1/cudagraph_dispatcher.py
      initialize_cudagraph_keys, 0.11.0 - 0.33.0; without speculation: x <= max_num_seqs);
    - from 0.11.1 (spec_capture_rounded), with FULL decode graphs and q > 1, every size is rounded up to a multiple of
      q and kept where <= the largest size (config/compilation.py adjust_cudagraph_sizes_for_spec_decode: sorted(set(
      round_up(s, q) ...)); none left -> [q]); the PIECEWISE graphs take the rounded sizes too;
    - the V2 runner from 0.25.0 (v2_spec_capture_unrounded) keeps its PIECEWISE sizes as they are and rounds only its
      FULL decode descriptors (v1/worker/gpu/cudagraph_utils.py _init_candidates: round_up(s, q) <= q x max_num_seqs
      and <= the largest size, duplicates dropped); 0.22.0 - 0.24.0 V2 rounds them all as V1 does, in PIECEWISE mode
      too (CudaGraphManager.__init__ calls adjust_cudagraph_sizes_for_spec_decode unconditionally).
    Not modelled: 0.11.1 alone rounds to max(q, TP) at TP > 1 (0.11.2+ only with sequence parallelism, off by
    default), dynamic speculative decoding's per-tier sizes and the V2 adaptive verification's variable-length decode.
    Worked number: DeepSeek-V4-Flash on 0.25.0 with MTP k = 2, 64 seqs, 4,096 tokens (the DSV4-PRO6000 log): 43 sizes
    rounded to multiples of 3 (1, 2 -> 3; 4 -> 6; 8 -> 9; 16 -> 18; 24 stays; ...; 272 -> 273; 384 stays) give 42
    distinct, those from 3 to 192 number 26: "PIECEWISE=42 (largest=384), FULL=26 (largest=192)".
    """
    k = num_speculative_tokens
    sizes = cuda_graph_capture_sizes(prof, max_num_seqs, max_num_batched_tokens, model_type, k, arch)
    q = 1 + k
    # the V2 runner of 0.22.0 - 0.24.0 rounds in its CudaGraphManager.__init__ whatever the mode
    v2_always = runner == "V2" and not vllm_has(prof.version, "v2_spec_capture_unrounded")
    if q == 1 or not sizes or not vllm_has(prof.version, "spec_capture_rounded") or not (full_decode or v2_always):
        return sizes, [s for s in sizes if q <= s <= q * max_num_seqs] if full_decode else []
    top = sizes[-1]
    rounded = sorted({cdiv(s, q) * q for s in sizes if cdiv(s, q) * q <= top}) or ([q] if q <= top else [])
    full = [s for s in rounded if s <= q * max_num_seqs] if full_decode else []
    if runner == "V2" and not v2_always:
        return sizes, full
    return rounded, full


class CudaGraphShape(NamedTuple):
    """What vLLM's CUDA-graph estimate depends on in the model and its layout (kvplan.plan.vllm_cuda_graph_shape)."""

    layers: int  # transformer layers on this rank's pipeline stage (mixer-only / MLP-only blocks count half)
    moe: bool  # the layers route experts (more kernels a layer)
    mlp_width: int  # this rank's widest gate + up width (top-k experts included), elements
    act_bytes: int  # activation dtype bytes
    split_heads: int  # attention heads a rank whose FA3 split-KV accumulators FULL capture allocates (0: none)
    split_dim: int  # their output width (head_dim; kv_lora_rank for FLASH_ATTN_MLA)


def vllm_cudagraph_modes(prof: VllmProfile, engine: EngineConfig) -> int:
    """How many CUDA-graph modes vLLM captures: 0 (--enforce-eager or cudagraph_mode NONE), 1 (PIECEWISE), 2
    (FULL_AND_PIECEWISE: FULL decode graphs too); no cudagraph_mode given: the release's default
    (``VllmProfile.cudagraph_modes``). Worked example: the "0.33" profile, no flags -> 2; --enforce-eager -> 0."""
    if engine.enforce_eager or engine.cudagraph_mode == "NONE":
        return 0
    return {"PIECEWISE": 1, "FULL_AND_PIECEWISE": 2}.get(engine.cudagraph_mode or "", prof.cudagraph_modes)


def cuda_graph_bytes(prof: VllmProfile, engine: EngineConfig, max_num_seqs: int, mnbt: int, model_type: str = "",
                     shape: CudaGraphShape | None = None, runner: str = "V1", arch: str = "",
                     num_speculative_tokens: int | None = None) -> int:
    """CUDA-graph memory: PIECEWISE graphs at every capture size, FULL at the decode sizes
    (``cuda_graph_sizes_by_mode``: <= max_num_seqs, or with speculation (k = ``num_speculative_tokens``, None: the
    engine's when it speculates) the multiples of 1 + k up to (1 + k) x max_num_seqs); ``arch`` "sm100" lifts the
    capture limit to 1024 from 0.28.0.

    Releases that capture after the KV cache ("after_kv", through 0.17.x) or no shape given: 128 MiB first capture +
    (graphs - 1) x 6 MiB per mode. From 0.18 (profile_cudagraph_memory's estimate) with the model's shape:
    max(first PIECEWISE, first FULL) + (PIECEWISE graphs - 1 + FULL graphs - 1) x per graph, where
    per graph = layers x 192 KiB (256 KiB with experts; the V2 runner 120 / 160), first PIECEWISE = 80 MiB + 2 x
    largest size x gate+up width x act bytes, first FULL = 32 splits x largest FULL batch x heads x (head_dim + 1) x 4 B + 4 MiB under FA3 (Hopper),
    else 4 MiB (the VLLM_CUDA_GRAPH_* constants above, with their fit).
    Worked number: Llama-3.1-8B on an H100, 51 + 51 graphs: max(136, 32 x 512 x 32 x 129 x 4 B + 4 MiB = 262 MiB)
    + 100 x 32 x 192 KiB = 862 MiB = 0.84 GiB ("Estimated CUDA graph memory: 0.84 GiB total", llm-d-planner v0.19.0);
    gpt-oss-20b TP2 without a shape, 83 + 83 graphs: 128 MiB + 2 x 82 x 6 MiB = 1.09 GiB (logged 1.09)."""
    modes = vllm_cudagraph_modes(prof, engine)
    if not modes:
        return 0
    k = num_speculative_tokens
    if k is None:
        k = engine.num_speculative_tokens if engine.speculative_method != "none" else 0
    sizes, full = cuda_graph_sizes_by_mode(prof, max_num_seqs, mnbt, model_type, k, modes == 2, runner, arch)
    counts = [len(sizes)] + ([len(full)] if modes == 2 else [])
    if shape is None or prof.cudagraph == "after_kv" or not sizes:
        return VLLM_CUDA_GRAPH_FIRST_BYTES + sum(max(n - 1, 0) for n in counts) * VLLM_CUDA_GRAPH_PER_GRAPH_BYTES
    if runner == "V2":
        per_graph = shape.layers * (VLLM_V2_CUDA_GRAPH_MOE_LAYER_BYTES if shape.moe else VLLM_V2_CUDA_GRAPH_LAYER_BYTES)
    else:
        per_graph = shape.layers * (VLLM_CUDA_GRAPH_MOE_LAYER_BYTES if shape.moe else VLLM_CUDA_GRAPH_LAYER_BYTES)
    first = VLLM_CUDA_GRAPH_PIECEWISE_BASE_BYTES + 2 * max(sizes) * shape.mlp_width * shape.act_bytes
    if full:
        first = max(first, VLLM_CUDA_GRAPH_FULL_BASE_BYTES + VLLM_FA3_CUDA_GRAPH_SPLITS * max(full) * shape.split_heads
                    * (shape.split_dim + 1) * 4)
    return first + sum(max(n - 1, 0) for n in counts) * per_graph


# config/vllm.py DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES by release, as config.json model_types (the architectures
# kvplan's families map to): 0.22.0 Qwen3ForCausalLM; 0.23.0 + LlamaForCausalLM, MistralForCausalLM (both lists for
# unquantized dense checkpoints only); 0.24.0 + DeepseekV2ForCausalLM, Qwen2MoeForCausalLM, GraniteMoeForCausalLM,
# quantized too; 0.25.0 - 0.28.0 the listed MoE architectures (DeepseekV2, Qwen2Moe, GraniteMoe; 0.26 + Inkling,
# LongcatFlashNgram; 0.27 + KimiK3; 0.28 + DeepseekV4) beside every dense model; 0.29.0 every model.
VLLM_V2_TYPES_022 = frozenset({"qwen3"})
VLLM_V2_TYPES_023 = frozenset({"qwen3", "llama", "mistral"})
VLLM_V2_TYPES_024 = frozenset({"qwen3", "llama", "mistral", "deepseek_v2", "qwen2_moe", "granitemoe"})
VLLM_V2_MOE_TYPES_025 = frozenset({"deepseek_v2", "qwen2_moe", "granitemoe", "kimi_k3", "deepseek_v4"})
# The release each listed MoE type joins: DeepseekV4ForCausalLM is absent from the 0.25.0 and 0.26.0 lists and
# present in 0.28.0's (wheels read 2026-12-02; 0.25.0 config/vllm.py: "DeepSeek-V4 is not otherwise a default-V2
# architecture"), KimiK3ForConditionalGeneration absent from 0.26.0 and present in 0.28.0 (0.27 per the note above).
# A 0.25.0 DeepSeek-V4-Flash log (tests/test_engine_logs_dec02.py) runs gpu_model_runner.py, the V1 runner.
VLLM_V2_MOE_TYPE_SINCE = {"kimi_k3": (0, 27, 0), "deepseek_v4": (0, 28, 0)}


def vllm_model_runner(version: str, model_type: str, moe: bool, hybrid: bool, quantized: bool,
                      speculative_method: str = "none") -> Literal["V1", "V2"]:
    """Which GPU model runner vLLM picks by default: "V1" (v1/worker/gpu_model_runner.py) or "V2" (v1/worker/gpu/
    model_runner.py; config/vllm.py ``use_v2_model_runner`` without VLLM_USE_V2_MODEL_RUNNER).

    Inputs: the profile key, the checkpoint's model_type, whether it has routed experts (``moe``), recurrent-state
    layers (``hybrid``), a quantization_config (``quantized``: ModelConfig.is_quantized), and the speculative method.
    Rule by release (VLLM_CHANGES ``v2_runner_*``): none before 0.22.0; 0.22.0 Qwen3, 0.23.0 also Llama / Mistral
    (dense, unquantized); 0.24.0 the listed six, quantized too; 0.25.0 - 0.28.0 every dense non-hybrid model plus the
    listed MoE; 0.29.0 every model. ngram speculation falls back to V1 through 0.31.0 (``v2_ngram``).
    Why it matters for memory (kvplan.plan): V2's dummy sampler run holds only the logits, V2 keeps a sampler state
    (``vllm_v2_sampler_state_bytes``) and, through 0.28.0, estimates no CUDA-graph memory.
    Worked example: ("0.28", "qwen3", moe=False, hybrid=False, quantized=True) -> "V2" (Qwen3-14B-AWQ on 0.28.0);
    ("0.22", "qwen3", False, False, True) -> "V1"; ("0.28", "qwen3_moe", True, False, False) -> "V1";
    ("0.25", "deepseek_v4", True, False, False) -> "V1" (listed from 0.28.0: VLLM_V2_MOE_TYPE_SINCE)."""
    if not vllm_has(version, "v2_runner_qwen3"):
        return "V1"
    if speculative_method == "ngram" and not vllm_has(version, "v2_ngram"):
        return "V1"
    # config/vllm.py _get_v2_model_runner_unsupported_features lists "draft_model" through 0.30.0 (0.22 - 0.29: every
    # method but eagle / eagle3 / mtp / dflash / ...), not in 0.31.0 (its V2 draft_model speculator)
    if speculative_method == "draft_model" and vllm_release(version) < (0, 31, 0):
        return "V1"
    if vllm_has(version, "v2_runner_all"):
        return "V2"
    if vllm_has(version, "v2_runner_dense"):
        listed = (model_type in VLLM_V2_MOE_TYPES_025
                  and vllm_release(version) >= VLLM_V2_MOE_TYPE_SINCE.get(model_type, (0, 25, 0)))
        return "V2" if not hybrid and (not moe or listed) else "V1"
    if vllm_has(version, "v2_runner_listed"):
        return "V2" if model_type in VLLM_V2_TYPES_024 else "V1"
    types = VLLM_V2_TYPES_023 if vllm_has(version, "v2_runner_llama_mistral") else VLLM_V2_TYPES_022
    return "V2" if model_type in types and not moe and not quantized else "V1"


def vllm_v2_sampler_state_bytes(max_num_seqs: int, vocab_size: int, num_speculative_tokens: int = 0) -> int:
    """Device tensors the V2 model runner's sampler keeps from load_model on (after the "Model loading took"
    window, before the profile run), last PP stage only: v1/worker/gpu/sample/penalties.py PenaltiesState
    ``output_bin_counts`` (max_num_seqs x vocab int32: "can be very large, taking up GBs") and ``prompt_bin_mask``
    (max_num_seqs x cdiv(vocab, 32) int32), structured_outputs.py ``grammar_bitmask`` (max_num_seqs x (1 + draft
    tokens) rows x cdiv(vocab, 32) int32) (0.28.0 - 0.33.0 wheels). Counted in the budget from 0.27.0
    (``total_consumed_accounting``); 0.22 - 0.26 measured around them (KV sized as if they were not there).
    bytes = 4 x (max_num_seqs x vocab + (max_num_seqs + max_num_seqs x (1 + draft)) x cdiv(vocab, 32)).
    Worked number: Qwen3-14B, 256 seqs, vocab 151,936: 4 x (38,895,616 + 512 x 4,748) = 165,306,368 B = 0.154 GiB."""
    words = -(-vocab_size // 32)
    return 4 * (max_num_seqs * vocab_size + (max_num_seqs + max_num_seqs * (1 + num_speculative_tokens)) * words)


# flashinfer-python 0.7.2.post1 (the vllm 0.33.0 wheel's pin) sampling.py top_k_mask_logits: a 1 MiB row_states
# buffer from _get_cache_buf, made at the first call and kept (read 2026-12-03).
FLASHINFER_TOPK_ROW_STATES_BYTES = 1 << 20
# vllm 0.33.0 v1/sample/ops/topk_topp_triton.py apply_top_k_top_p_triton keeps a (min(next_power_of_2(programs), SMs),
# vocab) fp32 buffer per device (_TRITON_BUFFER_CACHE), programs = min(SMs, rows). kvplan has no SM count per GPU: it
# takes 132 (H100 / H200 SXM), the rows within ~±24 of every datacenter card's (A100 108, B200 148): <= 12 MiB at a
# 128K vocab [estimate].
VLLM_TRITON_TOPK_SMS = 132


def vllm_v2_dummy_sampler_bytes(version: str, num_reqs: int, vocab_size: int, act_b: int,
                                sampler: Literal["flashinfer", "pytorch"] = "flashinfer", tp: int = 1) -> int:
    """Peak bytes of the V2 model runner's ``_dummy_sampler_run`` (v1/worker/gpu/model_runner.py) beyond the dummy
    run's hidden states, last PP stage: the logits tensor, then what the sampler makes on top of it.

    Inputs: the profile key, ``num_reqs`` = min(max_num_batched_tokens, max_num_seqs) rows, the vocab, ``act_b``
    (bytes of the model dtype the logits come in), the top-k / top-p path ("flashinfer": VLLM_USE_FLASHINFER_SAMPLER
    on, FlashInfer supports the GPU; "pytorch": the Triton top-k / top-p), ``tp`` (the LM head's TP size). Units:
    bytes. The logits tensor is the LM head's output over its vocab padded to 64 (VOCAB_PADDING: vocab_parallel_
    embedding.py), sliced to the vocab as a view. The head runs once, before both sampler passes: at TP > 1
    compute_logits all-gathers it (logits_processor.py _gather_logits; platforms/interface.py use_all_gather() is
    True and no platform overrides it, 0.22.0 - 0.33.0),
    so its own peak is this rank's [rows, padded / tp] shard, the [tp x rows, padded / tp] gather buffer and the
    [rows, padded] copy its movedim + reshape makes (device_communicators cuda_communicator.py / base_device_
    communicator.py all_gather, 0.22.0 - 0.33.0), freed but for the copy before the sampler runs:
        gather = num_reqs x (padded / tp + 2 x padded) x act_b      (TP > 1; the logits alone at TP 1)
    and the peak is max(gather, the sampler's). Every rank runs the sampler (not divided by TP).
    Through 0.32.0 the dummy batch asks for no processing, so the sampler holds the logits alone: num_reqs x padded x
    act_b, below the gather at TP > 1.
    From 0.33.0 (VLLM_CHANGES ``v2_sampler_warmup_pass``) a second pass with SamplingParams.for_sampler_warmup()
    (temperature 0.9, top-k 50, top-p 0.9, min-p, penalties, logit bias, bad words, 5 logprobs) holds, beside the
    logits: sample/sampler.py apply_sampling_params' fp32 copy (num_reqs x vocab x 4; penalties, bias, bad words,
    temperature and min-p work in place), then
    - flashinfer: sampling.py top_k_top_p_sampling_from_logits with a top-k tensor (no int fast path):
      top_k_mask_logits' empty_like(fp32) output and torch.softmax's fp32 probs, both live while top-p samples
      (2 x num_reqs x vocab x 4), + FLASHINFER_TOPK_ROW_STATES_BYTES kept;
    - pytorch: topk_topp_triton.py masks in place, + its kept per-SM buffer (VLLM_TRITON_TOPK_SMS rows x vocab x 4);
    logprobs (sample/logprob.py compute_topk_scores: torch.topk(5) and a per-row kernel) and gumbel_sample add only
    per-row tensors, after FlashInfer's temporaries are freed.
        0.33 flashinfer: num_reqs x (padded x act_b + vocab x 12) + 1 MiB
        0.33 pytorch:    num_reqs x (padded x act_b + vocab x 4) + min(next_pow2(min(132, num_reqs)), 132) x vocab x 4
    (above the gather at TP > 1 for a 2-byte dtype; an fp32 model on the Triton path can peak in the gather).
    Worked number: Llama-3.1-8B (vocab 128,256 = padded, bf16), 1,024 rows, FlashInfer: 1,024 x 128,256 x 14 +
    1,048,576 = 1,839,726,592 B = 1.713 GiB on 0.33 at any TP; on 0.32 262,668,288 B = 0.245 GiB at TP 1, the gather
    1,024 x (64,128 + 256,512) x 2 = 656,670,720 B = 0.612 GiB at TP 2."""
    padded = cdiv(vocab_size, VOCAB_PADDING) * VOCAB_PADDING
    logits = num_reqs * padded * act_b
    gather = num_reqs * (padded // tp + 2 * padded) * act_b if tp > 1 else logits
    if not vllm_has(version, "v2_sampler_warmup_pass"):
        return max(gather, logits)
    fp32 = num_reqs * vocab_size * 4
    if sampler == "flashinfer":
        return max(gather, logits + 3 * fp32 + FLASHINFER_TOPK_ROW_STATES_BYTES)
    programs = min(VLLM_TRITON_TOPK_SMS, num_reqs)
    rows = min(1 << (programs - 1).bit_length(), VLLM_TRITON_TOPK_SMS)
    return max(gather, logits + fp32 + rows * vocab_size * 4)


def vllm_compile_benchmark_bytes(vocab_size: int, hidden_size: int, tp: int, act_b: int) -> int:
    """The largest transient of a cold torch.compile in vLLM's profile run (0.11.1+, VLLM_CHANGES
    ``compile_combo_benchmark``): inductor's combo-kernel benchmarking (torch/_inductor/scheduler.py
    speedup_by_combo_kernel -> benchmark_fused_nodes -> ``mod.get_args()``, rand_strided copies of every kernel
    argument) runs the kernels of the first compiled piece, whose embedding gather reads the whole embedding table,
    on a random copy of it: this rank's VocabParallelEmbedding shard (vocab padded to 64, / tp) x hidden x act_b.
    It sits in the torch peak beside the weights whenever the compile cache is cold (a warm cache loads the compiled
    graph and benchmarks nothing: up to this much more KV on the second start). Not for --enforce-eager, nor where the
    runner embeds outside the compiled graph (a loaded vision / audio tower: inputs_embeds), nor past PP stage 0.
    Worked number: Qwen3-14B (151,936 x 5120, bf16) 1,555,824,640 B = 1.449 GiB at TP 1; the 0.28.0 L40S / L4 logs
    leave 1.73 - 1.80 GiB outside weights and KV at TP 1 (1.17 at TP 2, 1.51 on PP stage 0), the warm-cache replica
    runs 0.50 (tests/test_engine_budget_02x.py)."""
    padded = -(-vocab_size // 64) * 64
    return -(-padded // tp) * hidden_size * act_b



# SM 12.0 (GeForce RTX 50 series, RTX PRO 6000 Blackwell), 0.27+: the cold compile's embedding copy counted twice.
# Every public 0.27+ log of a dense text-only model compiled cold at TP 1 on an SM 12.0 card leaves one more
# embedding shard outside weights and KV than kvplan's other terms, in memory_profiling's total_consumed ("Actual
# usage is X GiB for consumed memory (weights + non-torch)"), while its "peak activation" still holds the copy once;
# a warm compile cache takes both away. The public logs (read 2026-12-02), one copy = vllm_compile_benchmark_bytes:
# - one RTX 5090, vllm/vllm-openai:v0.28.0 (index file 69451098589, docs/models.md of a home server, 2026-09-08/16):
#   Qwen3-32B-AWQ at 0.85 cold: consumed 20.04 GiB, peak 1.46 (copy 1.449); at 0.70 warm: consumed 18.62, peak 0.33,
#   1.42 GiB less consumed for the same weights. Qwen3-14B-AWQ at 0.70 cold: consumed 11.22 = 9.44 weights + 0.25
#   non- torch + 0.154 sampler state + 1.449 copy (-0.07), peak 1.46;
# - another RTX 5090, 0.29 (index file 69477724907): Qwen3-4B-Instruct-2507 bf16 pool 18.96 GiB, kvplan 19.65 without
#   the second copy (0.724), 18.93 with it; its FP8 build consumed 5.40 vs 4.58 without / 5.30 with;
#   Phi-4-mini-instruct bf16 / FP8-dynamic (1.145 GiB a copy; Xecutive-Development-LLC/ai-infra-lab
#   docs/MODEL_COMPARISON_RESULTS.md @40931a97) 151,973 / 176,489 tokens, kvplan +5.8 / +5.0 % without, -0.3 / -0.3 %
#   with;
# - an RTX 5060 Ti under WSL2, 0.29.0 (index file 69218136759), Qwen3-4B bf16 at 0.70: consumed 8.59 vs 8.01 without
#   / 8.74 with, peak 1.09 = kvplan's 0.72 copy + the logged 0.38 estimate.
# - an RTX PRO 4000 Blackwell (24 GB), 0.28.0 (index file 67578381996, a RunPod pod's first start, 2026-09-09):
#   Qwen2.5-7B-Instruct-AWQ at 0.9, pool 13.42 GiB; kvplan 13.24 - 13.51 over the card's likely totals with the held
#   copy (1.015 GiB), 14.25 - 14.52 without (tests/test_engine_logs_dec03b.py; read 2026-12-03).
# On Ada and Ampere the same releases hold the copy once: the 0.28.0 L40S / L4 Qwen3-14B(-AWQ) pools
# (tests/test_engine_logs_2026.py) and the 0.31.0 A100 Llama-3.1-8B (0.26 GiB consumed beyond weights). So does a MoE
# on SM 12.0: a rented RTX 5090 serving Qwen's GPTQ-Int4 MoE ("MarlinExperts"; index files 57676316864, 0.28.0, and
# 69613370707, 0.29.0 / 0.30.0 on a fresh host) logs consumed 16.66 / 16.70 eager / compiled on 0.28.0, 16.61 / 16.63
# on 0.30.0 (its first compiled start on the fresh host) and 16.66 on 0.29.0: Qwen3-30B-A3B's 0.58 GiB copy (the one
# Qwen3 MoE of ~16 GiB in int4; the records do not name it) is nowhere in it, so MoE checkpoints are not charged; nor
# is TP > 1 (no SM 12.0 log of a dense model there).
# Not from the source: no release allocates an embedding-sized tensor that outlives the profile (0.29.0 wheel:
# v1/worker/gpu_worker.py determine_available_memory, utils/mem_utils.py memory_profiling,
# v1/worker/gpu/model_runner.py profile_run; FLASH_ATTN / FA2 is the attention backend on capability 12 as on 8.x,
# platforms/cuda.py _get_backend_priorities, v1/attention/backends/fa_utils.py). total_consumed is a free-memory
# difference taken after empty_cache(), so a caching-allocator segment that a live block keeps counts whole: the
# likeliest reading is the copy's freed segment reused by a lasting allocation of the profile run (a lazily made
# workspace) in these dense runs -- allocation order, not a formula, hence an estimate. 0.20 - 0.26 measured
# non-torch as device use less torch's reserved memory (a kept segment is torch's), so they are not charged.
def gpu_sm120(gpu_name: str) -> bool:
    """Whether the card is compute capability 12.0 (consumer / workstation Blackwell: the GeForce RTX 50 series and
    the RTX PRO Blackwell line), from its name. "RTX PRO" is the Blackwell workstation brand only (RTX PRO 6000 / 5000
    / 4500 / 4000 / 2000 Blackwell, all capability 12.0 in NVIDIA's CUDA GPU table; the Ada and Ampere cards are "RTX
    6000 Ada", "RTX A6000"), so any "RTX-PRO-" name counts, a custom_gpu one too (a 0.28.0 RTX PRO 4000 log,
    tests/test_engine_logs_dec03b.py). Worked: "RTX-5090" -> True, "RTX-PRO-4000" -> True, "RTX-6000-Ada" -> False,
    "RTX-4090" -> False, "B200" (10.0) -> False."""
    return gpu_name.upper().startswith(("RTX-50", "RTX-PRO-"))


def vllm_sm120_held_copy(version: str, gpu_name: str, tp: int = 1, moe: bool = False) -> bool:
    """Whether kvplan charges the cold compile's embedding copy (vllm_compile_benchmark_bytes) a second time, held in
    total_consumed: an estimate fitted to the SM 12.0 logs above (dense checkpoints at TP 1), from the release whose
    budget counts total_consumed (VLLM_CHANGES ``total_consumed_accounting``, 0.27.0), not a rule of vLLM's source.
    ``moe``: the checkpoint has routed experts (not charged: the GPTQ MoE runs above hold the copy once).
    Worked: ("0.29", "RTX-5090") -> True; ("0.26", "RTX-5090") -> False; ("0.29", "L40S") -> False;
    ("0.29", "RTX-5090", tp=2) -> False; ("0.29", "RTX-5090", moe=True) -> False."""
    return vllm_has(version, "total_consumed_accounting") and gpu_sm120(gpu_name) and tp == 1 and not moe

# VLLM_NON_TORCH -- non-torch memory at TP >= 2 (memory_profiling non_torch_increase: device memory used outside
# torch's allocator, grown between the init snapshot and the end of the profile run), by what allocates it. Read in the
# wheels (VLLM_CHANGES) and fitted to public logs (tests/test_engine_nontorch.py; GiB as logged, kvplan before -> after):
# - base, custom all-reduce on (NVLink in one node): 0.55, llm-d/llm-d-benchmark config_explorer/empirical-vllm-memory-
#   results.md (2026-01, a 0.11 - 0.16 release: "Free memory on device: 77.64/79.18 GiB on startup" at TP 2 vs 78.57 at
#   TP 1, i.e. snapshot after the NCCL init; 9.55-copy sampler) Llama-3.3-70B-FP8 TP 2 on H100: 0.55 (0.55 -> 0.55).
# - 0.10.x (snapshot before init_worker_distributed_environment): + 0.83 for the NCCL communicator and custom all-reduce
#   buffers made at init, fitted to the one 0.10.2 NVLink log (search index file 7292846353: Qwen3-Next-80B-A3B TP 2 on
#   H200, "1.38 GiB for non-torch memory": 0.55 -> 1.38). Independent check: the v0.19.0 init snapshots (llm-d-planner
#   results_raw.csv) hold 1.02 GiB more at TP 2 than at TP 1 (cuda_memory 1.53 vs 0.51); less 0.11+'s 64 MiB custom
#   all-reduce and 64 MiB symmetric-memory buffers that is 0.89; PP 2 alone (one NCCL communicator) 0.92.
#   The one 0.10 TP 4 NVLink log (vllm PR #21429, a 0.10.0 dev build, H200, 2.04) is missed: 0.55 -> 1.505 (-0.54).
# - TP > 2 over NVSwitch (Hopper / Blackwell): + NCCL's NVLS buffers (nccl_nvls_bytes), connected at the profile run's
#   first all-reduce too large for custom / symmetric-memory all-reduce (group.cc ncclCollPreconnectFunc ->
#   ncclNvlsBufferSetup for NCCL_ALGO_NVLS): from 0.10.2 vLLM no longer sets
#   NCCL_CUMEM_ENABLE=0 (env_override.py), so NCCL runs with cuMem and comm->runtimeConn (init.cc: runtimeConn =
#   cuMemSupport && NCCL_RUNTIME_CONNECT, default 1) and ncclNvlsBufferSetup runs at the first NVLS collective, after
#   vLLM's init snapshot. Hopper, from the source: tp x 16 channels x 2 x 1 MiB = 0.125 GiB at TP 4 (the five v0.19.0
#   TP 4 H100 logs, 2.13 - 2.21, mean 2.17, less the TP 2 figure 2.05: 0.12, which this was fitted to before), 0.25 at
#   TP 8 (no TP 8 log prints non-torch; the Kimi-K2 recipe and DeepSeek-R1-0528 TP 8 H200 misses move 0.13 GiB).
#   Blackwell keeps the Hopper TP 4 fit (VLLM_NCCL_NVLS_BYTES): its source count, 24 channels on one node, gives 0.19 at
#   TP 4 / 0.38 at TP 8, but the one Blackwell log (GB200 TP 4, below) already sits 0.22 GiB under kvplan's figure.
# - PCIe above two GPUs: the TP base with custom all-reduce off (0.25 from 0.17, the single-GPU figure), nothing added:
#   CustomAllreduce returns "not supported on more than two PCIe-only GPUs" (world_size > 2 and not fully connected,
#   every release 0.11 - 0.33), SymmMemCommunicator runs on capabilities 9.0 / 10.x only (all_reduce_utils.py
#   SYMM_MEM_ALL_REDUCE_MAX_SIZES: not 8.9 / 12.0), the FlashInfer fusion pass needs 90 / 100, NVLS needs multicast,
#   and pynccl's warm-up all_reduce (pynccl.py) connects, before the snapshot, the algorithm its 4 bytes pick (NCCL
#   connects per algorithm at first use, group.cc ncclCollPreconnectFunc; a ring / tree on 2 - 4 PCIe channels is
#   ~10 MiB a connection: LL 512 KiB + LL128 4,800 KiB + SIMPLE 4 MiB, p2p.cc p2pRecvSetup). Logs: vllm#29070 (4 x
#   A30, 0.11.1.dev) 0.09, the 0.10.2 8 x L40S TP 4 log 0.21 (its snapshot before the NCCL init), the MiniMax-M2.5 4 x
#   RTX PRO 6000 pool (0.14 - 0.16) within 0.07 GiB at 0.19. The 0.24 4 x L40S (+0.40) and 0.27.1 4 x RTX PRO 6000
#   (+0.89) pool misses are therefore not placed here: the latter's 'consumed' (56.89 = 55.19 weights + 1.70) and
#   'peak activation' (0.76) each hold ~0.45 GiB more than kvplan's (1.00 MoE workspace + 0.25; 0.11 + 0.22 estimate).
# - 0.17+ (fi_allreduce_fusion), TP 2 / 4 / 8, NVSwitch Hopper / Blackwell, compiled (not --enforce-eager), DP = PP = 1
#   through 0.20.x: FlashInfer's all-reduce fusion workspace, created by AllReduceFusionPass while the profile run
#   compiles (v0.19.0 log: "Initialized FlashInfer All Reduce workspace: backend=trtllm ..." between the init snapshot
#   and "Memory profiling takes"). VLLM_FI_AR_WORKSPACE_BYTES: 1.50 GiB on trtllm, 0.50 on mnnvl (0.25+). The v0.19.0
#   H100 TP 2 logs (2.06 - 2.11, ten runs, hidden 2048 - 8192) and TP 4 (2.13 - 2.21) are 0.55 + 1.50 (+ 0.125): within
#   0.06 GiB (before, one fitted 2.10: within 0.04), a workspace independent of the hidden size, as the multicast
#   granularity makes it. The 0.26.0 GB200 TP 4 log (mnnvl, search index file 61511710941) is 0.95: 2.10 -> 1.17 (+0.22).
VLLM_NCCL_NVLS_BYTES = _g(0.12)  # fitted (v0.19.0 TP 4 H100 logs); kept for Blackwell, see nccl_nvls_bytes
# NCCL src/transport/nvls.cc (read at v2.26.2, v2.27.3 / .7, v2.28.3 / .9, v2.29.7, v2.30.7 in github:NVIDIA/nccl,
# 2026-12; torch 2.8 - 2.10 pin NCCL 2.27.x (vLLM 0.11 - 0.19), torch 2.11 pins 2.28.9 (vLLM 0.20 - 0.26; the 0.26.0
# GB200 log prints "vLLM is using nccl==2.28.9")): NCCL_PARAM(NvlsChunkSize, "NVLS_CHUNKSIZE", 128*1024); device.h
# NCCL_STEPS 8; NVLS_NCHANNELS_SM90 16, NVLS_NCHANNELS_SM100_NVL 24 (one node / one MNNVL clique, 2.27+).
NCCL_NVLS_CHUNK_BYTES = 128 * 1024
NCCL_STEPS = 8
NCCL_NVLS_CHANNELS = {"sm90": 16, "sm100": 24}



def nccl_nvls_bytes(tp: int, arch: str | None) -> int:
    """NCCL's NVLS buffers one rank of a ``tp``-rank NVSwitch communicator maps when NVLS first connects (bytes).

    nvls.cc ncclNvlsBufferSetup: buffSize = NVLS_CHUNKSIZE x NCCL_STEPS (1 MiB), nvlsPerRankSize = nChannels x 2 x
    buffSize, nvlsTotalSize = nvlsPerRankSize x nHeads (nHeads = the node's ranks: vllm#9699's 8 x H200 line "nHeads
    8"), and nvlsAllocateMem maps that much unicast memory on every rank (cuMemCreate, rounded to the 2 MiB recommended
    granularity: already a multiple). The credit words (64 B a channel and head) are made in ncclNvlsSetup at the
    communicator's init, before vLLM's snapshot. NCCL enables NVLS only above 2 GPUs through 2.27 ("gpuCount <= 2");
    from 2.28 at 2 too, not modelled (no 0.20+ TP 2 log prints non-torch). Hopper only: Blackwell keeps
    VLLM_NCCL_NVLS_BYTES (see VLLM_NON_TORCH), as does an unknown ``arch`` (None).
    Worked number: H100 TP 4 -> 4 x 16 x 2 x 1 MiB = 134,217,728 B = 0.125 GiB; TP 8 -> 0.25 GiB."""
    if arch != "sm90":
        return VLLM_NCCL_NVLS_BYTES
    return tp * NCCL_NVLS_CHANNELS[arch] * 2 * NCCL_NVLS_CHUNK_BYTES * NCCL_STEPS


# flashinfer/comm (0.6.4 - 0.7.2, the versions vLLM 0.17 - 0.33 pin): the trtllm workspace is three SymmDeviceMemory
# buffers (buffer tp x T x hidden x 2 B, flags tp x 256 x 4 B, lamport 3 x tp x T x hidden x 2 B; T = min(
# FI_ALLREDUCE_FUSION_MAX_SIZE_MB[capability][tp] MiB // (hidden x 2), max_num_batched_tokens), at most 384 MiB at the
# default thresholds: 64 MiB x 2 ranks x 3), each rounded up to cuMulticastGetGranularity(RECOMMENDED), 512 MiB on H100
# (NCCL's choice, per the mojoccl notes, search index file 66424678150); mnnvl is one McastGPUBuffer of the same
# rounding. Assumed the same granularity on Blackwell.
VLLM_MULTICAST_GRANULE_BYTES = 512 * MiB
VLLM_FI_AR_WORKSPACE_BYTES = {"trtllm": 3 * VLLM_MULTICAST_GRANULE_BYTES, "mnnvl": VLLM_MULTICAST_GRANULE_BYTES}
# FI_SUPPORTED_WORLD_SIZES (config/compilation.py flashinfer_max_size: [2, 4, 8]; 16 only multi-node mnnvl, not modeled)
VLLM_FI_AR_WORLD_SIZES = (2, 4, 8)
# enable_allreduce_rms_fusion requires DP == 1 and PP == 1 in 0.17.0 - 0.20.2 (vllm#34458, #35426); 0.21.0 drops both.
# The "0.21" profile (0.20.1 - 0.21.0) follows its first release, 0.20.1: a TP x PP / TP x DP plan on 0.21.0 itself
# misses the 1.50 GiB workspace (not a profile split: the table is split by the other changes).
VLLM_FI_AR_ANY_DP_PP = (0, 21, 0)


def gpu_multicast(gpu_name: str, interconnect: str) -> bool:
    """Whether the GPU sits on an NVSwitch fabric with NVLink multicast (NVLS, FlashInfer's symmetric memory): a
    Hopper / Blackwell part whose catalog interconnect is NVLink itself, not PCIe with an NVLink bridge (H100 PCIe / NVL
    pairs: no multicast; FlashInfer then disables the fusion pass, "expected on GPUs without NVSwitch").
    Worked example: ("H100-SXM", "NVLink 4 900 GB/s") -> True; ("H100-NVL", "PCIe 5.0 x16 (+NVLink bridge ...)") -> False."""
    return gpu_arch(gpu_name) in ("sm90", "sm100") and interconnect.strip().upper().startswith("NVLINK")


def fi_allreduce_backend(prof: VllmProfile) -> str | None:
    """FlashInfer all-reduce fusion backend of a profile's default: None before 0.17, "trtllm" (0.17.0 env default;
    0.19 - 0.24 "auto" picks trtllm on one node), "mnnvl" from 0.25.0."""
    if prof.engine_core == "V0" or not _has(prof.first_release, "fi_allreduce_fusion"):
        return None
    return "mnnvl" if _has(prof.first_release, "fi_allreduce_mnnvl") else "trtllm"


def fi_allreduce_workspace_bytes(prof: VllmProfile, engine: EngineConfig, tp: int, pp: int, dp: int,
                                 multicast: bool) -> int:
    """FlashInfer's all-reduce + RMSNorm fusion workspace a rank holds after the profile run (0 where vLLM makes none).
    Conditions: config/vllm.py enable_allreduce_rms_fusion (TP > 1, capability 90 / 100 family, DP = PP = 1 before
    0.21.0), compiled (--enforce-eager sets CompilationMode.NONE), a supported world size, and multicast (SymmDeviceMemory
    raises "Device does not support multicasting" otherwise). Worked number: 0.19, H100-SXM TP 2 -> 3 x 512 MiB."""
    backend = fi_allreduce_backend(prof)
    if backend is None or engine.enforce_eager or not multicast or tp not in VLLM_FI_AR_WORLD_SIZES:
        return 0
    if prof.first_release < VLLM_FI_AR_ANY_DP_PP and (pp > 1 or dp > 1):
        return 0
    return VLLM_FI_AR_WORKSPACE_BYTES[backend]


def non_torch_bytes(prof: VllmProfile, engine: EngineConfig, tp: int, pp: int, nvlink: bool, multicast: bool = False,
                    dp: int = 1, arch: str | None = None) -> tuple[int, str]:
    """Non-torch memory growth vLLM measures after its init snapshot, per rank (see VLLM_NON_TORCH above).

    TP >= 2: the profile's base (custom all-reduce on / off) + NCCL NVLS buffers above 2 ranks on NVSwitch
    (nccl_nvls_bytes) + FlashInfer's fusion workspace (0.17+). Worked number: 0.19, H100-SXM TP 4 -> 0.55 + 0.125 + 1.50
    = 2.175 GiB (logged 2.13 - 2.21). ``multicast``: kvplan.engines.gpu_multicast of the GPU (False keeps the
    pre-2026-12 figures: V0, unknown GPUs); ``arch``: kvplan.engines.gpu_arch (the NVLS channel count; None: the
    fitted 0.12)."""
    if tp > 1:
        parts = []
        if engine.disable_custom_all_reduce or not nvlink:
            base, why = prof.non_torch_tp_no_custom_ar, "TP >= 2, custom all-reduce off (no P2P / NVLink, or disabled)"
        else:
            base = prof.non_torch_tp
            why = ("TP >= 2: NCCL communicator and custom all-reduce buffers (init snapshot before the distributed init)"
                   if prof.engine_core == "V1" and not _has(prof.first_release, "snapshot_after_dist_init")
                   else "TP >= 2: NCCL and custom / symmetric-memory all-reduce buffers")
        nvls = nccl_nvls_bytes(tp, arch) if multicast and tp > 2 and prof.engine_core == "V1" else 0
        if nvls:
            how = f" ({tp} x 16 channels x 2 MiB, nvls.cc)" if arch == "sm90" else " (fitted on Hopper TP 4)"
            parts.append(f"+ {nvls / _GIB:.2f} NCCL NVLS buffers above 2 ranks{how}")
        fi = fi_allreduce_workspace_bytes(prof, engine, tp, pp, dp, multicast)
        if fi:
            parts.append(f"+ {fi / _GIB:.2f} FlashInfer all-reduce fusion workspace ({fi_allreduce_backend(prof)})")
        return base + nvls + fi, " ".join([why, *parts])
    if pp > 1:
        return prof.non_torch_pp, "PP >= 2 at TP 1"
    return prof.non_torch_single, "one GPU: cuBLAS / NCCL workspaces grown after the snapshot"


def sampler_path(prof: VllmProfile, engine: EngineConfig) -> str:
    return prof.sampler_default if engine.sampler == "auto" else engine.sampler


def sglang_mem_fraction_static(device_bytes: int, tp: int, pp: int, mla: bool, dp_attention: int = 1
                               ) -> tuple[float, int]:
    """SGLang's default ``mem_fraction_static`` and its reserved MiB in the newest profile (sglang 0.5.23
    memory_hook.py), from the GPU's nvidia-smi MiB (``device_bytes`` // MiB). Older lines and the full rule:
    kvplan.sglang.default_settings.

    reserved = 512 + max(chunked_prefill, 2048) x 1.5 + tp x pp / 8 x 1024 + decode_bs x 2
               + prefill_graphs x 8 (MLA: 1536 instead), at least 10240 above 60 GiB.
    With DP attention + decode_bs x dp x 3, and + decode_bs x dp x 1.5 more when decode_bs > 300, before the floor.
    Worked number: H100 (81559 MiB), TP1 -> 13904 MiB reserved -> 0.830.
    """
    s = default_settings(SGLANG_PROFILES[SGLANG_DEFAULT_VERSION], device_bytes // MiB, "given", tp, pp, mla,
                         dp_attention)
    return s.mem_fraction_static, int(s.reserved_mib)
