"""SGLang release lines: the default memory settings, the KV pool, and the figures SGLang logs at start-up.

Read in the PyPI wheels of sglang 0.4.0, 0.4.3, 0.4.5 - 0.4.5.post3, 0.4.6 - 0.4.6.post5, 0.4.7, 0.4.7.post1, 0.4.8,
0.4.9, 0.4.10, 0.5.1 - 0.5.9 (with 0.5.3.post3, 0.5.4.post1 - post3, 0.5.6.post2, 0.5.8.post1), 0.5.10, 0.5.12 - 0.5.23
(``sglang/srt/server_args.py`` ``__post_init__`` /
``_handle_gpu_memory_settings``, ``arg_groups/memory_hook.py`` from 0.5.20, ``model_executor/model_runner.py``
``profile_max_num_token`` / ``init_memory_pool``, ``mem_cache/kv_cache_configurator.py`` from 0.5.16; read 2026-12).

Release lines whose memory accounting differs (``SGLANG_PROFILES``; the newest is the default):

===========  =======================  ==================================================================================
profile      releases                 default ``mem_fraction_static`` (``gpu_mem`` = nvidia-smi memory.total, MiB)
===========  =======================  ==================================================================================
0.4.0        0.4.0-0.4.5.post2        by TP alone: 0.88 / 0.87 (TP>=2) / 0.85 (>=4) / 0.81 (>=8) / 0.79 (>=16);
                                      ReqToTokenPool holds max_num_reqs + 1 rows (logged max_running_requests 2049).
0.4.5.post3  0.4.5.post3-0.4.6.post1  the TP table up to 81920 MiB, (gpu_mem - 13 GiB) / gpu_mem above.
0.4.6        0.4.6.post2-0.4.7        the same table by TP x PP, only up to 81920 MiB (0.88 above); above 96 GiB
                                      min(f + 48 GiB x (1 - f) / gpu_mem, (gpu_mem - 18 GiB) / gpu_mem).
0.4.8        0.4.7.post1-0.5.2        reserved GiB by GPU size: 2.8 + ps/10 (< 35 GiB), 9.5 + ps/2 (< 90), 12 + ps/2
                                      (< 160), 32 (larger); + 2 speculative, + 4 DP attention; round(.., 3).
0.5.3        0.5.3-0.5.4              reserved MiB = 512 + max(chunked_prefill, 2048) x 1.5 + decode max_bs x 2 +
                                      tp x pp / 8 x 1024 (+ DP attention padding), >= 10240 above 60 GiB; 16 decode
                                      graphs below 35 GiB at TP < 4.
0.5.4.post1  0.5.4.post1-0.5.5.x      as 0.5.3 with 24 decode graphs below 35 GiB at TP < 4.
0.5.6        0.5.6.x                  as 0.5.4.post1; --enable-piecewise-cuda-graph adds max_tokens // 4 MiB
                                      (4096 // 4 = 1024) after the 10 GiB floor; PP split as 0.5.6+ (pp_partition).
0.5.7        0.5.7                    as 0.5.6; the piecewise graphs add chunked_prefill_size // 8 MiB after the
                                      floor.
0.5.8        0.5.8-0.5.9              as 0.5.7; the piecewise graphs add 8 MiB per capture size before the floor.
0.5.10       0.5.10-0.5.13            as 0.5.8 plus the prefill (torch.compile piecewise) CUDA graphs, on by default:
                                      8 MiB per capture size (MLA: 1536 MiB); off with speculative decoding, DP
                                      attention, PP, ROCm, VLMs (not --disable-cuda-graph); + 4096 speculative.
0.5.14       0.5.14                   as 0.5.10; --disable-cuda-graph turns them off, speculative decoding does
                                      not, and adds nothing to the reserve.
0.5.15       0.5.15-0.5.16            breakable prefill graphs on CUDA: off with MLA, DP attention, VLMs,
                                      --disable-cuda-graph (which also drops decode max_bs x 2), ROCm; on with PP.
0.5.17       0.5.17                   as 0.5.15; DP attention keeps them.
0.5.18       0.5.18-0.5.19            as 0.5.17; MLA keeps them (1536 MiB); 0.5.19 turns them off under PP
                                      (planned as 0.5.18, which keeps them; pp_line_note warns).
0.5.20       0.5.20                   as 0.5.18 (memory_hook.py); the < 35 GiB tier is 4096 / 48 / 160; PP turns
                                      the prefill graphs off (0.5.19+ cuda_graph_hook.py).
                                      0.5.10+: --disable- / --enforce-piecewise-cuda-graph.
0.5.21       0.5.21-0.5.23            as 0.5.20 (newest read); DeepSeek-V4's pools priced by the padded page
                                      (kvplan.sglang_dsv4 "page_padded"); 0.5.22+ lower the decode graph max_bs to
                                      an explicit --max-running-requests (decode_graph_cap_note warns: not planned).
===========  =======================  ==================================================================================

The KV pool is the same rule in every line (model_runner ``profile_max_num_token``; 0.5.16+
``KVCacheConfigurator._profile_available_bytes``)::

    pre        = free memory after distributed init, before the weights      (Load weight begin. avail mem)
    available  = free memory after the weights                                (Load weight end. avail mem)
    rest       = available - pre x (1 - mem_fraction_static)
    tokens     = rest // cell_bytes, then min(--max-total-tokens), floored to page_size, min over ranks

cell_bytes: MHA/GQA ``max(1, kv_heads // attn_tp) x (head_dim + v_head_dim) x layers x dtype``; MLA
``(kv_lora_rank + qk_rope_head_dim) x layers x dtype``, not divided by TP. kvplan prices ``pre`` as the
device's cudaMemGetInfo total minus a fitted CUDA-context/NCCL figure, and ``available`` as ``pre`` minus this
rank's weights, what SGLang's own layout adds (``layout_extra_bytes``) and a fitted loading overhead.
The VLM reduction (``adjust_mem_fraction_for_vlm``, 0.4.10+) multiplies a default fraction by
0.95 x clamp(1 - 0.1 x (vit_layers x vit_hidden^2 / (24 x 1024^2) - 1), 0.8, 1.05).
On ROCm (0.5.6+) the aiter attention backend at context_len > 8192 multiplies the fraction, default or asked for, by
0.85 (``aiter_haircut``): Qwen3-0.6B on an MI355X at --mem-fraction-static 0.6 keeps 0.51 (1,359,445 tokens, logged
1,360,288; not with SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION and an explicit fraction, 0.5.20+). gpt-oss MXFP4 experts
are padded by the MoE backend on SM 10.x and, from 0.5.14, SM 12.x (``gpt_oss_mxfp4_pad``).
The ViT shape is what that function reads: vision_config.num_hidden_layers (24 where the config names it
``depth``: Qwen-VL towers before transformers 5, Qwen3.5 always; see vit_shape) and hidden_size.
Pipeline stages follow SGLang's get_pp_indices (pp_partition), not vLLM's split.
Not derived: the CUDA-graph capture lines and the scheduler's available_gpu_mem (after capture).
MTP speculative decoding (0.5.14+): the draft worker prints its own "Load weight begin / end" (type=...NextN; mem usage
= the MTP layers' shard + its own embed_tokens / lm_head, which stay resident while the target's pool is profiled),
then come the target's pool, the draft's (the same #tokens over its layers) and a second "Memory pool end" (log_lines
``draft``); DeepSeek-V3 at TP 8 on an H200: draft mem usage 1.98 GB, pool 618,538 tokens (463,339,520 B of copies).
DeepSeek-V4 (DeepseekV4ForCausalLMNextN, --speculative-algorithm EAGLE only): its DSV4 pools priced for the draft by
kvplan.sglang_dsv4 (16 / 256-row rings, bytes_per_full_token x (L + 1) / L; V4-Flash 9259.90 B on 0.5.20).
EAGLE3 heads and STANDALONE draft LMs (0.5.14+) print the same lines (type=LlamaForCausalLMEagle3 / the draft's
architecture; mem usage = the head + its resident embed_tokens, or the draft LM), the target's pool over its own layers
and the draft's over its own cell; Llama-3.1-8B + its EAGLE3 head on an H100: 1.77 GB, 382,940 tokens.

Hybrid models (recurrent-state layers: Qwen3-Next / Qwen3.5 GDN, Nemotron-H, Falcon-H1, Granite-4; ``mamba_pool``):
the MambaPool is carved out of rest first and the KV pool holds the full-attention layers only::

    per slot    = state layers x (conv_dim / tp x (conv_kernel - 1) x 2 B + heads / tp x head_dim x state x ssm B)
    budget      = rest x r / (1 + r),  r = --mamba-full-memory-ratio (0.9)
    slots       = int(budget // per slot)            0.5.4 - 0.5.16 (charged slots x per slot)
                  int((budget - per slot) // per slot) 0.5.17+      (charged (slots + 1) x per slot)
    tokens      = (rest - charged) // attention cell, floored to the page
    running    <= slots // (1 | 3 | 3 + 2): no radix cache | no_buffer (default to 0.5.13) | extra_buffer (0.5.14+)

===========  ==============================================================================================
line         MambaPool rule
===========  ==============================================================================================
0.4.0-0.4.6  refused: no hybrid model served
0.4.8        refused: only 0.5.2 serves Qwen3-Next (a fixed 512-slot pool, no radix cache)
0.5.3        refused: 0.5.3.x fixed 512 slots, 0.5.4 the ratio
0.5.4.post1  the ratio for Qwen3-Next; Nemotron-H / Falcon-H1 without the radix cache: 512 slots (or
0.5.6        --max-running-requests), 1 a request; --max-mamba-cache-size only without the radix cache
0.5.7        the ratio for all three; --max-mamba-cache-size honoured; no radix cache: 512 slots
0.5.8        as 0.5.7 (Qwen3.5 / Granite-4 refused: 0.5.9 only; no radix cache refused: 0.5.8 / 0.5.9 differ)
0.5.10       + Qwen3.5, Granite-4; the config's mamba_ssm_dtype; no radix cache: --max-running-requests or
             the ratio
0.5.14       + extra_buffer by default (5 slots a running request); refused on ROCm (0.5.15 line too)
0.5.17+      the padding slot charged; PP: every stage charges the largest stage's share of a slot; 0.5.18+
             a multimodal model reserves 100 MiB of rest first
===========  ==============================================================================================

DP attention (0.5.7+): a pool per worker from its own rest; --max-mamba-cache-size / --max-running-requests slot
counts are split over the workers. Speculative decoding (0.5.14+, Qwen3.5 / Qwen3.6 with NEXTN / EAGLE on their MTP
layer or NGRAM; one stage, no DP attention): the slots are solved jointly with D = --speculative-num-draft-tokens
states a running request (speculative_draft_tokens; mamba_pool), R = --max-running-requests (48 unless given)::

    slots       = int(budget // (per slot x (1 + D / s)))                      0.5.14 - 0.5.16
                  int((budget - per slot x (1 + D)) // (per slot x (1 + D / s)))  0.5.17+
    reserve     = per slot x (min(R, slots // s) (+ 1 from 0.5.17)) x D, charged beside the slots

Qwen3.6-27B, EAGLE 5 steps (D 6), R 4, bf16 SSM, rest 17,012,228,096 B, 0.5.17: 43 slots, reserve 30 slots, 171,008
tokens (the A100 log's). Not modelled (refused by field): speculative decoding on the other hybrids and EAGLE3 /
STANDALONE on these (SGLANG_HYBRID_SPEC_UNMODELLED), PP before 0.5.17, DP attention before 0.5.7, families not read
in SGLang's configs (Jamba, Zamba2, Bamba, LFM2 short convs, Kimi-Linear KDA, MiniMax / Lightning linear attention), attention-less hybrids.

DeepSeek sparse attention (DeepSeek-V3.2, GLM-5; "NSA" in SGLang's code, ``dsa_*`` below): served from 0.5.3 (GLM-5
from 0.5.9), planned from the 0.5.4.post1 line; page_size 64 on CUDA (1 on ROCm in 0.5.8 - 0.5.13); --kv-cache-dtype
auto -> fp8_e4m3 on SM >= 10 (Blackwell), bfloat16 below; cell = latent (576 x b through 0.5.16; from 0.5.17 the
backend's layout: 656 B packed fp8, 576 B raw fp8 with trtllm, the SM >= 10 default from 0.5.10) + 132 B indexer key a
layer. DeepSeek-V3.2 on 8 x B200, 0.5.20: 61 x (576 + 132) = 43,188 B a token.

Worked number (the Qwen3-30B-A3B-FP8 H100 log pinned in tests/test_engine_sglang.py): 81559 MiB, TP1 ->
reserved 13904 MiB -> 0.830; as logged, pre 78.48 and available 49.33 GiB -> rest 35.99 GiB / 98,304 B -> 392,920
tokens; kvplan from the flags: pre 78.45, available 49.24 -> 392,123 tokens (-0.20 %).
"""

import math
from fractions import Fraction
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from kvplan.errors import PlanInputError
from kvplan.layers import STATE_KINDS, cache_parts
from kvplan.parallel import stage_distinct
from kvplan.spec import Linear
from kvplan.units import GiB, MiB, cdiv

SglangVersion = Literal["0.4.0", "0.4.5.post3", "0.4.6", "0.4.8", "0.5.3", "0.5.4.post1", "0.5.6", "0.5.7", "0.5.8",
                        "0.5.10", "0.5.14", "0.5.15", "0.5.17", "0.5.18", "0.5.20", "0.5.21"]
SGLANG_DEFAULT_VERSION: SglangVersion = "0.5.21"


def _g(x: float) -> int:
    return round(x * GiB)


class SglangProfile(BaseModel):
    """One SGLang release line: the defaults read in its source, the constants fitted to its logs."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    version: str
    releases: str
    # "tp_table" (0.4.0), "tp_table_13g" (0.4.5.post3), "tp_table_large" (0.4.6), "reserved_tiers" (0.4.8),
    # "reserved_formula" (0.5.3+)
    fraction_rule: Literal["tp_table", "tp_table_13g", "tp_table_large", "reserved_tiers", "reserved_formula"]
    # The prefill CUDA graphs SGLang captures by default: "none" (through 0.5.9), "tc_piecewise" (torch.compile
    # piecewise, 0.5.10 - 0.5.14), "breakable" (0.5.15+ on CUDA; ROCm keeps tc_piecewise, then turns it off).
    prefill_graphs: Literal["none", "tc_piecewise", "breakable"]
    # What turns the default prefill graphs off (the wheels' auto-disable rules kvplan can see): "speculative",
    # "dp_attention", "pp", "rocm", "vit" (a vision tower off the line's multimodal allowlists, mm_keep_*), "eager"
    # (--disable-cuda-graph), "mla".
    prefill_off: tuple[str, ...] = ()
    decode_reserve_needs_graphs: bool = False  # 0.5.15+: decode max_bs x 2 only while the decode graphs are on
    running_half_tokens: bool = False  # 0.5.14+: --max-running-requests R -> min(R // dp, tokens // 2)
    # What the opt-in --enable-piecewise-cuda-graph adds to the reserve where prefill graphs are off by default
    # (server_args.py _handle_gpu_memory_settings): "none" (0.5.3.post2 - 0.5.5 take the flag, reserve nothing),
    # "max_quarter" (0.5.6: + piecewise_cuda_graph_max_tokens // 4, default 4096, after the 10 GiB floor),
    # "chunk_eighth" (0.5.7: max_tokens = chunked_prefill_size, + max_tokens // 8 after the floor), "sizes" (0.5.8 -
    # 0.5.9: + 8 MiB per capture size up to chunked_prefill_size (MLA: 2048), before the floor).
    piecewise_optin: Literal["none", "max_quarter", "chunk_eighth", "sizes"] = "none"
    # The < 35 GiB tier: (chunked_prefill_size, decode cuda_graph_max_bs at TP < 4, at TP >= 4)
    small_tier: tuple[int, int, int]
    speculative_reserve_mib: int  # added to the reserve with a speculative algorithm (EAGLE / NEXTN / MTP)
    vlm_adjust: bool  # adjust_mem_fraction_for_vlm (sglang 0.4.10+) scales the default for a vision tower
    req_pool_extra: int  # ReqToTokenPool(size=max_num_reqs + 1) up to 0.4.6: max_running_requests 2049 / 4097
    kv_line: Literal["tokens", "dtype"]  # "KV Cache is allocated. #tokens: ..." / "... dtype: torch.bfloat16, ..."
    # Memory gone before SGLang's pre-load reading (CUDA context, cuBLAS, NCCL / custom all-reduce buffers): fitted.
    context_single: int  # TP 1
    context_tp_pcie: int  # TP >= 2 without NVLink (custom all-reduce off on more than two PCIe GPUs)
    context_tp_nvlink: int  # TP >= 2 over NVLink (custom all-reduce buffers)
    context_tp_rocm: int  # TP >= 2 on AMD (RCCL + aiter custom all-reduce)
    context_tp_nvlink_sm100: int | None = None  # TP >= 2 over NVLink on SM 10.x (B200 ...), where fitted apart
    source: str
    # How the line sizes the MambaPool of a hybrid (recurrent-state) model (kvplan.sglang.mamba_pool):
    # "refused" (not modelled: hybrid_refusal says why), "v054" (0.5.4 - 0.5.6: model_runner.handle_max_mamba_cache;
    # Mamba-2 configs run without the radix cache, so 512 slots or --max-running-requests; GDN by the ratio, which
    # overrides --max-mamba-cache-size), "v057" (0.5.7 - 0.5.9: the ratio for every hybrid, --max-mamba-cache-size
    # honoured), "v0517" (0.5.17+: the ratio less the pool's padding slot, which is charged too).
    hybrid_rule: Literal["refused", "v054", "v057", "v0517"] = "refused"
    hybrid_refusal: str = ""
    hybrid_models: tuple[str, ...] = ()  # the kvplan model_types this line serves as SGLang hybrids
    hybrid_extra_buffer: bool = False  # 0.5.14+: --mamba-radix-cache-strategy auto -> extra_buffer (5 slots a request)
    hybrid_ssm_from_config: bool = False  # 0.5.9+: the temporal state dtype reads the config's mamba_ssm_dtype
    # Without the radix cache (--disable-radix-cache): "fixed" max_mamba_cache_size = --max-running-requests or 512
    # (through 0.5.8), "ratio" (0.5.9+: --max-running-requests if given, else the ratio), "mixed" (a line holding both).
    hybrid_radix_off: Literal["fixed", "ratio", "mixed"] = "ratio"
    hybrid_rocm_refusal: str = ""  # why the line's auto strategy cannot be planned on ROCm ("" none)
    # 0.5.18+: a multimodal model reserves SGLANG_VLM_CACHE_SIZE_MB (100) of the KV budget for the embedding cache
    # (kv_cache_configurator.py mm_runtime_reservation_gb; + SGLANG_MM_FEATURE_CACHE_MB with a GPU feature transport,
    # off by default)
    mm_reserve_mib: int = 0
    # Multimodal architectures whose prefill graphs the line keeps by default (configs/model_config.py
    # multimodal_breakable_cuda_graph_supported_model_archs / multimodal_piecewise_cuda_graph_supported_model_archs),
    # by the backend they run: every other multimodal model falls under the "vit" rule above (SGLANG_MM_ARCHS maps
    # kvplan's specs onto these names).
    mm_keep_breakable: tuple[str, ...] = ()
    # Breakable lines: a piecewise-allowlisted arch (not also breakable-allowlisted) is switched to tc_piecewise
    # (_apply_cuda_graph_compatibility, 0.5.16+), which DP attention, PP, ROCm and --disable-cuda-graph turn off.
    # The 0.5.14 (tc_piecewise) line keeps the listed archs on its own rules.
    mm_keep_piecewise: tuple[str, ...] = ()


# Fitted constants (GiB; "context" = device total (kvplan.gpus, cudaMemGetInfo) - "Load weight begin. avail mem"):
#   0.4.x TP1 0.38: H100 79.19 - 78.81 (sglang 0.4.1, 2025-01, Llama-3.1-8B, SGLang CI log in the code corpus);
#   0.4.x TP4 PCIe 0.40: L4 22.03 - 21.63 (0.4.3.post4, didier-durand/llms-in-clouds docs/sglang.md);
#   0.4.x - 0.5.2 TP >= 2 NVLink 1.89: H200 139.81 - (124.19 + 13.73) (sgl-project/sglang#8337, 2025-07-24, the 0.4.8 -
#   0.5.2 line, Qwen3-235B-A22B PP4 x TP8 over four 8 x H200 nodes, "TP0 PP0 Load weight end"); a B200 TP4 log of
#   2025-08 (sglang PR #9162, DeepSeek-R1-FP4) reads 3.01: not matched (Blackwell);
#   0.5.3 - 0.5.9 TP >= 2 NVLink 2.52: H200 139.81 - 137.29 (sgl-project/sglang PR #11716, 2025-10-16, a checkout ten
#   days after the 0.5.3 wheel, Llama-70B-class TP8: "Init torch distributed ends. mem usage=2.01 GB" on six of the
#   eight ranks, and SGLang keeps the minimum over ranks);
#   0.5.x TP1 0.74: H100 79.19 - 78.48 / 78.43 (0.71 and 0.76: Qwen3-30B-A3B-FP8 2026-08, Qwen2.5-0.5B 2026-02);
#   0.5.x TP4 PCIe 0.56: RTX 4090 23.64 - 23.08 (Qwen3-14B, 2026-06; "avail 16.00 + mem usage 7.08");
#   0.5.10+ TP >= 2 NVLink 1.44: H20 95.00 - 93.56 (TP8, 2026-05: the 0.5.10 / 0.5.12 wheels are of 2026-04 / 05); an
#   H200 TP16 log over two nodes (2026) reads 1.72;
#   TP >= 2 ROCm 4.50 (0.4.x - 0.5.9): MI355X 287.98 - 283.48 (TP8, sglang 0.5.8.post1, the GLM-family fp8 log of
#   2026-02-26: "Init torch distributed ends. mem usage=3.81 GB");
#   0.5.10+ TP >= 2 ROCm 11.13: MI355X 287.98 - 276.85 (TP8, GLM-5.1-MXFP4 on the rocm/sgl-dev v0.5.10rc0 (2026-04-15)
#   and v0.5.12 (2026-05-17) images alike: "Init torch distributed ends. mem usage=10.04 - 10.46 GB", the aiter custom
#   all-reduce the ROCm build picks by default; Jacob0226/SGLang-benchmarks results/_pr25742_matrix/*_TP8/server.log
#   @ 892d66c3fd95eb50f6de906c10eb318c039ae4c5); the same image at TP2 reads 279.13 (8.85: -0.8 % of the reading);
#   0.4.x - 0.5.2 TP >= 2 NVLink on SM 10.x 3.01: B200 178.35 - 175.34 (sglang PR #9162, 2025-08-13, DeepSeek-R1-FP4 TP4,
#   "Load weight begin. avail mem=175.34 GB"; checked against the DeepSeek-R1-0528 8 x B200 log of 2025-08-01, DSR1 in
#   tests/test_engine_sglang_2026b.py: 985,300 tokens, logged 980,344). The 0.5.x lines keep the Hopper figure (no
#   B200 multi-GPU reading found).
_OLD = {"context_single": _g(0.38), "context_tp_pcie": _g(0.40), "context_tp_nvlink": _g(1.89),
        "context_tp_rocm": _g(4.50), "context_tp_nvlink_sm100": _g(3.01)}
_MID = {"context_single": _g(0.74), "context_tp_pcie": _g(0.56), "context_tp_nvlink": _g(2.52),
        "context_tp_rocm": _g(4.50)}
_NEW = {"context_single": _g(0.74), "context_tp_pcie": _g(0.56), "context_tp_nvlink": _g(1.44),
        "context_tp_rocm": _g(11.13)}

# The hybrid families kvplan sizes on SGLang, by the model_type kvplan parses, and the SGLang architecture that serves
# it (configs/hybrid_arch.py mambaish_config; each line's models/ and configs/ folders): Qwen3-Next (GDN) from 0.5.2,
# Falcon-H1 from 0.5.3, Nemotron-H from 0.5.4, Qwen3.5 (GDN) and Granite-4 hybrids from 0.5.9.
SGLANG_HYBRID_ARCHS = {"qwen3_next": "Qwen3NextForCausalLM", "falcon_h1": "FalconH1ForCausalLM",
                       "nemotron_h": "NemotronHForCausalLM", "qwen3_5_text": "Qwen3_5ForConditionalGeneration",
                       "qwen3_5_moe_text": "Qwen3_5MoeForConditionalGeneration",
                       "granitemoehybrid": "GraniteMoeHybridForCausalLM"}
# kvplan names a Qwen3.5 spec by its text config (qwen3_5_text / qwen3_5_moe_text); the published checkpoints are the
# multimodal wrappers SGLang serves as Qwen3_5(Moe)ForConditionalGeneration.
_HYB_EARLY = ("qwen3_next", "falcon_h1", "nemotron_h")
_HYB_ALL = _HYB_EARLY + ("qwen3_5_text", "qwen3_5_moe_text", "granitemoehybrid")
_NO_HYBRIDS = ("serves no hybrid recurrent-state model (its wheels hold no Qwen3-Next, Falcon-H1 or Nemotron-H; "
               "Qwen3-Next came with 0.5.2)")
# 0.5.14 - 0.5.15 resolve --mamba-radix-cache-strategy auto to extra_buffer and then assert CUDA/MUSA/NPU
# (server_args.py _validate_mamba_extra_buffer "extra_buffer needs CUDA/MUSA/NPU (FLA)"); 0.5.16 adds ROCm.
_ROCM_0514 = ("picks the extra_buffer strategy for it and then asserts CUDA / MUSA / NPU, so it does not start on ROCm "
              "(server_args.py _validate_mamba_extra_buffer; --mamba-radix-cache-strategy no_buffer is not modelled): "
              "pick 0.5.17 or newer")
_ROCM_0515 = ("refuses it on ROCm in 0.5.15 (extra_buffer asserts CUDA / MUSA / NPU) and starts it in 0.5.16: pick "
              "0.5.17 or newer")
# The one public ROCm log of a hybrid (Qwen3.8-27B-FP8 on MI355X, SGLang 0.5.17, search-index file 65830671609; the
# tests' Q38R case) was refused here while its 1,543,256 KV tokens sat ~37 GiB below the CUDA rule; the aiter haircut
# (aiter_haircut: 0.85 x 0.85 = 0.7225 of pre, 287.27 x 0.1275 = 36.6 GiB) accounts for it (1,545,637 tokens from the
# flags, +0.15 %), so ROCm hybrids are planned like CUDA ones (the 0.5.14 / 0.5.15 lines stay refused, above).
_V054 = {"hybrid_rule": "v054", "hybrid_models": _HYB_EARLY, "hybrid_radix_off": "fixed"}
_V057 = {"hybrid_rule": "v057", "hybrid_models": _HYB_ALL, "hybrid_ssm_from_config": True}
_V0517 = {"hybrid_rule": "v0517", "hybrid_models": _HYB_ALL, "hybrid_ssm_from_config": True,
          "hybrid_extra_buffer": True}

# The allowlists as read (configs/model_config.py). 0.5.14: piecewise Cohere2Vision. 0.5.16 - 0.5.17: breakable
# Qwen3.5 (dense, MoE); piecewise Cohere2Vision, Kimi-K2.5, MiniMax-M3-Sparse (two archs). 0.5.18: breakable adds
# InternS2-Mobius, MuseGlimmer, Kimi-K3, Kimi-K2.5 (0.5.19 also Cohere2Vision and PaddleOCR-VL, dropping Cohere2Vision
# from piecewise). 0.5.20 - 0.5.21: breakable adds Glm5Next; 0.5.22 adds Qwen4Exp and MiniMax-M3-Sparse, 0.5.23
# MuseSpark (none of them a kvplan preset). 0.5.10 - 0.5.13 and 0.5.15 have none: every multimodal model is off.
_MM_PW_0516 = ("Cohere2VisionForConditionalGeneration", "KimiK25ForConditionalGeneration",
               "MiniMaxM3SparseForCausalLM", "MiniMaxM3SparseForConditionalGeneration")
_MM_BCG_0516 = ("Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration")
_MM_BCG_0518 = ("InternS2MobiusForConditionalGeneration", *_MM_BCG_0516, "MuseGlimmerForConditionalGeneration",
                "KimiK3ForConditionalGeneration", "KimiK25ForConditionalGeneration")
_MM_BCG_0520 = ("Cohere2VisionForConditionalGeneration", "Glm5NextForConditionalGeneration",
                "InternS2MobiusForConditionalGeneration", "PaddleOCRVLForConditionalGeneration", *_MM_BCG_0516,
                "MuseGlimmerForConditionalGeneration", "KimiK3ForConditionalGeneration",
                "KimiK25ForConditionalGeneration")
_MM_PW_0520 = ("KimiK25ForConditionalGeneration", "MiniMaxM3SparseForCausalLM",
               "MiniMaxM3SparseForConditionalGeneration")

# The 0.5.20 and 0.5.21 lines' shared memory settings (they differ in DeepSeek-V4's pools, kvplan.sglang_dsv4).
# PP: 0.5.19+ turn the default breakable prefill graphs off under pp_size > 1 (cuda_graph_hook.py
# apply_cuda_graph_compatibility: "Disabling breakable prefill CUDA graph by default for pipeline parallelism"); the
# 8192-token cap (memory_hook.py) is for an explicit --cuda-graph-backend-prefill=breakable, which kvplan does not take
# (--enforce-piecewise-cuda-graph there is tc_piecewise, uncapped).
_V0520 = {"fraction_rule": "reserved_formula", "prefill_graphs": "breakable",
          "prefill_off": ("pp", "rocm", "vit", "eager"),
          "small_tier": (4096, 48, 160), "speculative_reserve_mib": 0,
          "vlm_adjust": True, "req_pool_extra": 0, "kv_line": "dtype", "decode_reserve_needs_graphs": True,
          "running_half_tokens": True, **_NEW, "mm_reserve_mib": 100, **_V0517,
          "mm_keep_breakable": _MM_BCG_0520, "mm_keep_piecewise": _MM_PW_0520}

SGLANG_PROFILES: dict[str, SglangProfile] = {
    "0.4.0": SglangProfile(
        version="0.4.0", releases="0.4.0 - 0.4.5.post2", fraction_rule="tp_table", prefill_graphs="none",
        small_tier=(2048, 8, 80), speculative_reserve_mib=0, vlm_adjust=False, req_pool_extra=1, kv_line="tokens",
        source="sglang 0.4.0 / 0.4.3 / 0.4.5 / 0.4.5.post1 / 0.4.5.post2 wheels: server_args.py __post_init__ "
        "(TP table; chunked_prefill_size 2048 below 25000 MiB else 8192; cuda_graph_max_bs 8 / 80 below, 160 above; "
        "the 0.4.0 wheel keeps 8 at TP >= 4), model_runner.init_memory_pool; the log lines "
        "are 0.4.3.post+ wording (0.4.0 - 0.4.2 print neither #tokens nor mem usage)", **_OLD, hybrid_refusal=_NO_HYBRIDS),
    "0.4.5.post3": SglangProfile(
        version="0.4.5.post3", releases="0.4.5.post3 - 0.4.6.post1", fraction_rule="tp_table_13g",
        prefill_graphs="none", small_tier=(2048, 8, 80), speculative_reserve_mib=0, vlm_adjust=False, req_pool_extra=1,
        kv_line="tokens", source="sglang 0.4.5.post3 / 0.4.6 / 0.4.6.post1 wheels: server_args.py __post_init__ (the "
        "TP table up to 81920 MiB, (gpu_mem - 13 GiB) / gpu_mem above; cuda_graph_runner.py captures up to 160, 256 "
        "above 81920 MiB)", **_OLD, hybrid_refusal=_NO_HYBRIDS),
    "0.4.6": SglangProfile(
        version="0.4.6", releases="0.4.6.post2 - 0.4.7", fraction_rule="tp_table_large", prefill_graphs="none",
        small_tier=(2048, 8, 80), speculative_reserve_mib=0, vlm_adjust=False, req_pool_extra=1, kv_line="tokens",
        source="sglang 0.4.6.post2 / 0.4.6.post5 / 0.4.7 wheels: server_args.py __post_init__ (the 0.4.7 "
        "ReqToTokenPool drops the + 1 row: its max_running_requests reads one fewer where the clamp binds; 0.4.7 also "
        "takes 0.79 and chunked_prefill_size 16384 above 180,000 MiB on CUDA: not modeled)", **_OLD, hybrid_refusal=_NO_HYBRIDS),
    "0.4.8": SglangProfile(
        version="0.4.8", releases="0.4.7.post1 - 0.5.2", fraction_rule="reserved_tiers", prefill_graphs="none",
        small_tier=(2048, 8, 80), speculative_reserve_mib=2048, vlm_adjust=True, req_pool_extra=0, kv_line="tokens",
        source="sglang 0.4.7.post1 / 0.4.8 / 0.4.9 / 0.4.10 / 0.5.1 / 0.5.2 wheels: server_args.py "
        "__post_init__ reserved_mem tiers (adjust_mem_fraction_for_vlm from 0.4.10 only)", **_OLD, hybrid_refusal="holds 0.5.2, whose Qwen3-Next keeps a fixed pool of 512 state slots without the radix "
        "cache (model_runner.py), and older releases that serve no hybrid: not modelled as one line"),
    "0.5.3": SglangProfile(
        version="0.5.3", releases="0.5.3 - 0.5.4", fraction_rule="reserved_formula", prefill_graphs="none",
        small_tier=(2048, 16, 80), speculative_reserve_mib=2048, vlm_adjust=True, req_pool_extra=0, kv_line="tokens",
        source="sglang 0.5.3 / 0.5.3.post3 / 0.5.4 wheels: server_args.py _handle_gpu_memory_settings "
        "(cuda_graph_max_bs 16 below 35 GiB at TP < 4; --enable-piecewise-cuda-graph from 0.5.3.post2 reserves nothing)",
        **_MID, hybrid_refusal="holds 0.5.3.x, which gives Qwen3-Next / Falcon-H1 a fixed pool of 512 state slots with the "
        "radix cache off (model_runner.py), and 0.5.4, which sizes it by --mamba-full-memory-ratio: two rules in one "
        "line, not modelled (the 0.5.4.post1 line sizes it by the ratio)"),
    "0.5.4.post1": SglangProfile(
        version="0.5.4.post1", releases="0.5.4.post1 - 0.5.5.x", fraction_rule="reserved_formula",
        prefill_graphs="none", small_tier=(2048, 24, 80), speculative_reserve_mib=2048, vlm_adjust=True,
        req_pool_extra=0, kv_line="tokens", source="sglang 0.5.4.post1 / 0.5.4.post2 / 0.5.4.post3 / 0.5.5 wheels: "
        "server_args.py _handle_gpu_memory_settings (cuda_graph_max_bs 24 below 35 GiB at TP < 4)", **_MID, **_V054),
    "0.5.6": SglangProfile(
        version="0.5.6", releases="0.5.6 - 0.5.6.post2", fraction_rule="reserved_formula", prefill_graphs="none",
        piecewise_optin="max_quarter", small_tier=(2048, 24, 80), speculative_reserve_mib=2048, vlm_adjust=True,
        req_pool_extra=0, kv_line="tokens", source="sglang 0.5.6 / 0.5.6.post2 wheels: server_args.py "
        "_handle_gpu_memory_settings (--enable-piecewise-cuda-graph: reserved_mem += piecewise_cuda_graph_max_tokens "
        "// 4, default 4096); distributed/utils.py get_pp_indices gives the last N stages one extra layer", **_MID, **_V054),
    "0.5.7": SglangProfile(
        version="0.5.7", releases="0.5.7", fraction_rule="reserved_formula", prefill_graphs="none",
        piecewise_optin="chunk_eighth", small_tier=(2048, 24, 80), speculative_reserve_mib=2048, vlm_adjust=True,
        req_pool_extra=0, kv_line="tokens", source="sglang 0.5.7 wheel: server_args.py _handle_gpu_memory_settings "
        "(piecewise_cuda_graph_max_tokens = chunked_prefill_size; reserved_mem += max_tokens // 8)", **_MID, hybrid_rule="v057", hybrid_models=_HYB_EARLY, hybrid_radix_off="fixed"),
    "0.5.8": SglangProfile(
        version="0.5.8", releases="0.5.8 - 0.5.9", fraction_rule="reserved_formula", prefill_graphs="none",
        piecewise_optin="sizes", small_tier=(2048, 24, 80), speculative_reserve_mib=2048, vlm_adjust=True,
        req_pool_extra=0, kv_line="tokens", source="sglang 0.5.8 / 0.5.8.post1 / 0.5.9 wheels: server_args.py "
        "_handle_gpu_memory_settings (reserved_mem += len(piecewise_cuda_graph_tokens) * 8 before the 10 GiB floor; "
        "max_tokens = chunked_prefill_size, 2048 with MLA; 0.5.8 lists one size fewer: no 576)", **_MID, hybrid_rule="v057", hybrid_models=_HYB_EARLY, hybrid_radix_off="mixed"),
    "0.5.10": SglangProfile(
        version="0.5.10", releases="0.5.10 - 0.5.13", fraction_rule="reserved_formula", prefill_graphs="tc_piecewise",
        prefill_off=("speculative", "dp_attention", "pp", "rocm", "vit"), small_tier=(2048, 24, 80),
        speculative_reserve_mib=4096, vlm_adjust=True, req_pool_extra=0, kv_line="tokens",
        source="sglang 0.5.10 / 0.5.12 / 0.5.13 wheels: server_args.py _handle_piecewise_cuda_graph (on by default; "
        "--disable-cuda-graph does not turn them off), _handle_gpu_memory_settings (+ 4096 MiB speculative); "
        "0.5.13 adds the dtype to the KV line", **_NEW, **_V057),
    "0.5.14": SglangProfile(
        version="0.5.14", releases="0.5.14", fraction_rule="reserved_formula", prefill_graphs="tc_piecewise",
        prefill_off=("dp_attention", "pp", "rocm", "vit", "eager"), small_tier=(2048, 24, 80),
        speculative_reserve_mib=0, vlm_adjust=True, req_pool_extra=0, kv_line="dtype", running_half_tokens=True,
        source="sglang 0.5.14 wheel: server_args.py _handle_cuda_graph_config (--disable-cuda-graph disables both "
        "phases), _disable_tc_piecewise_cudagraph_if_incompatible (no speculative rule), no speculative reserve; "
        "model_runner_kv_cache_mixin.py min(requested // dp, tokens // 2)", **_NEW, **_V057, hybrid_extra_buffer=True, hybrid_rocm_refusal=_ROCM_0514,
        mm_keep_piecewise=("Cohere2VisionForConditionalGeneration",)),
    "0.5.15": SglangProfile(
        version="0.5.15", releases="0.5.15 - 0.5.16", fraction_rule="reserved_formula", prefill_graphs="breakable",
        prefill_off=("mla", "dp_attention", "rocm", "vit", "eager"), small_tier=(2048, 24, 80),
        speculative_reserve_mib=0, vlm_adjust=True, req_pool_extra=0, kv_line="dtype",
        decode_reserve_needs_graphs=True, running_half_tokens=True,
        source="sglang 0.5.15 / 0.5.16 wheels: cuda_graph_config.py default_prefill_backend (breakable on CUDA), "
        "server_args.py _disable_breakable_cudagraph_if_incompatible (MLA, DP attention, multimodal; PP keeps them)",
        **_NEW, **_V057, hybrid_extra_buffer=True, hybrid_rocm_refusal=_ROCM_0515),
    "0.5.17": SglangProfile(
        version="0.5.17", releases="0.5.17", fraction_rule="reserved_formula", prefill_graphs="breakable",
        prefill_off=("mla", "rocm", "vit", "eager"), small_tier=(2048, 24, 80), speculative_reserve_mib=0,
        vlm_adjust=True, req_pool_extra=0, kv_line="dtype", decode_reserve_needs_graphs=True,
        running_half_tokens=True, source="sglang 0.5.17 wheel: server_args.py _disable_breakable_cudagraph_if_"
        "incompatible (MLA attention (non-DSA), multimodal; DP attention no longer)", **_NEW, **_V0517,
        mm_keep_breakable=_MM_BCG_0516, mm_keep_piecewise=_MM_PW_0516),
    "0.5.18": SglangProfile(
        version="0.5.18", releases="0.5.18 - 0.5.19", fraction_rule="reserved_formula", prefill_graphs="breakable",
        prefill_off=("rocm", "vit", "eager"), small_tier=(2048, 24, 80),
        speculative_reserve_mib=0, vlm_adjust=True, req_pool_extra=0, kv_line="dtype",
        decode_reserve_needs_graphs=True, running_half_tokens=True,
        source="sglang 0.5.18 / 0.5.19 wheels: breakable rules without MLA (MLA reserves 1536 MiB again); 0.5.19 "
        "turns them off by default under PP (arg_groups/cuda_graph_hook.py; pp_line_note), 0.5.18 keeps them there", **_NEW, mm_reserve_mib=100, **_V0517,
        mm_keep_breakable=_MM_BCG_0518, mm_keep_piecewise=("Cohere2VisionForConditionalGeneration", *_MM_PW_0520)),
    "0.5.20": SglangProfile(
        version="0.5.20", releases="0.5.20", source="sglang 0.5.20 wheel: arg_groups/memory_hook.py "
        "handle_gpu_memory_settings, reserve_for_graph_mb; cuda_graph_hook.py (breakable on CUDA, off on ROCm); "
        "kv_cache_configurator.py", **_V0520),
    # 0.5.21 - 0.5.23: the memory settings as 0.5.20 (memory_hook.py unchanged in 0.5.21); DeepSeek-V4's
    # DSV4PoolConfigurator prices its pools by the padded page (kvplan.sglang_dsv4 rule "page_padded"); 0.5.22+ cap
    # the decode graph max_bs at an explicit --max-running-requests (decode_graph_cap_note).
    "0.5.21": SglangProfile(
        version="0.5.21", releases="0.5.21 - 0.5.23 (newest read)", source="sglang 0.5.21 / 0.5.22 / 0.5.23 wheels: "
        "arg_groups/memory_hook.py (0.5.21 as 0.5.20; 0.5.22+ decode max_bs <= an explicit max_running_requests), "
        "model_executor/pool_configurator.py DSV4PoolConfigurator (page-padded pools)", **_V0520),
}

# nvidia-smi memory.total (MiB): what SGLang's get_nvgpu_memory_capacity reads for its tiers and default fraction.
# H100 81559 (modal-labs/modal-client#2797, the kvplan.gpus entry), RTX 4090 24564, L40S 46068 (pinned logs' own
# nvidia-smi tables), the others as public nvidia-smi output prints them. AMD: rocm-smi VRAM total = the rocminfo
# pool kvplan.gpus holds. A GPU missing here falls back to its cudaMemGetInfo total (estimated: ~0.5 GiB low).
NVIDIA_SMI_MIB = {
    "H100-SXM": 81559, "H100-PCIe": 81559, "H100-NVL": 95830, "H200": 143771, "H20": 97871, "B200": 183359,
    "A100-80GB": 81920, "A100-80GB-PCIe": 81920, "A100-40GB": 40960, "L4": 23034, "L40S": 46068, "L20": 46068,
    "A10": 23028, "A10G": 23028, "RTX-3090": 24576, "RTX-4090": 24564, "RTX-5090": 32607, "RTX-A6000": 49140,
    "RTX-6000-Ada": 49140,
    # RTX PRO 6000 Blackwell Server Edition: "Visible memory per GPU: 97887 MiB" (OpenAgentsInc hydralisk GLM-5.2 load
    # smoke, 2026-06-24; tests/test_engine_sglang_2026b.py)
    "RTX-PRO-6000": 97887,
    # A40 46068 with ECC on (public nvidia-smi tables, index file ids 32335715336, 20563967892); H200 NVL 143771 (index
    # file ids 63088202880, 66510701415); RTX PRO 4000 Blackwell 24467 (the 0.28.0 log of
    # tests/test_engine_logs_dec03b.py), RTX PRO 4500 Blackwell 32623 (index file ids 71398061483, 60340131563)
    "A40": 46068, "H200-NVL": 143771, "RTX-PRO-4000": 24467, "RTX-PRO-4500": 32623,
}
# Memory "Load weight end ... mem usage" shows beyond the weights' own bytes (allocator rounding, rotary caches,
# cuBLAS workspaces), fitted: Qwen3-0.6B 1.25 - 1.11 (RTX 5080, 2025-08), Qwen3-14B TP4 7.08 - 6.88 (RTX 4090),
# Qwen3-30B-A3B-FP8 29.15 - 29.03 (H100), QwQ-32B TP4 15.54 - 15.26 (L4): 0.14 / 0.20 / 0.12 / 0.28 GiB -> mean
# 0.18 GiB, error <= 0.10 GiB on those logs (Kimi-K2.5 int4 on MI355X reads 2.4 GiB more: not matched).
SGLANG_LOAD_OVERHEAD_BYTES = _g(0.18)
# ServerArgs.max_prefill_tokens default (every line read).
SGLANG_MAX_PREFILL_TOKENS = 16384


def sglang_profile(version: str) -> SglangProfile:
    return SGLANG_PROFILES[version]


def gpu_capacity_mib(gpu_name: str, vendor: str, memory_bytes: int) -> tuple[int, str]:
    """The ``gpu_mem`` SGLang sizes its defaults by: nvidia-smi memory.total in MiB (rocm-smi on AMD).

    Worked number: H100-SXM -> 81559 (cudaMemGetInfo's 79.19 GiB would read 81090)."""
    if gpu_name in NVIDIA_SMI_MIB:
        return NVIDIA_SMI_MIB[gpu_name], "nvidia-smi memory.total"
    if vendor == "AMD":
        return memory_bytes // MiB, "rocm-smi VRAM total"
    return memory_bytes // MiB, "estimated: the cudaMemGetInfo total (nvidia-smi reads ~0.5 GiB more)"


def prefill_graph_sizes(max_tokens: int) -> list[int]:
    """Prefill (piecewise / breakable) CUDA-graph capture sizes up to ``max_tokens`` (cuda_graph_hook.py
    generate_prefill_cuda_graph_batch_sizes). Worked number: 8192 -> 58 sizes (the H100 log captures 58)."""
    sizes = list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32))
    sizes += list(range(576, 1025, 64)) + list(range(1280, 4097, 256)) + list(range(4608, max_tokens + 1, 512))
    return [s for s in sizes if s <= max_tokens]


# Releases whose get_pp_indices gives the whole remainder of num_layers // pp to the last stage (through 0.5.5);
# 0.5.6+ give one extra layer to each of the last (num_layers % pp) stages. Read in the wheels'
# srt/distributed/utils.py (0.4.0 - 0.5.5: "the last partition will have the remaining layers"; 0.5.6 - 0.5.23:
# "the last N partitions will have one extra layer"). SGLANG_PP_LAYER_PARTITION overrides either.
PP_REMAINDER_ON_LAST = {"0.4.0": True, "0.4.5.post3": True, "0.4.6": True, "0.4.8": True, "0.5.3": True,
                        "0.5.4.post1": True, "0.5.6": False, "0.5.7": False, "0.5.8": False, "0.5.10": False,
                        "0.5.14": False, "0.5.15": False, "0.5.17": False, "0.5.18": False, "0.5.20": False,
                        "0.5.21": False}


def sglang_profile_for_release(release: str) -> str:
    """The SGLANG_PROFILES key whose releases hold ``release`` ("0.5.4.post2", "v0.5.9"; a post-release sorts
    after its base). Worked numbers: 0.5.4 -> "0.5.3", 0.5.4.post1 -> "0.5.4.post1", 0.5.9 -> "0.5.8";
    older than 0.4.0 -> "0.4.0", newer than the newest read -> the newest."""
    def key(v: str) -> tuple[int, ...]:
        v = v.strip().lstrip("v")
        base, _, post = v.partition(".post")
        nums = tuple(int(x) for x in base.split(".")[:3] if x.isdigit())
        return nums + (0,) * (3 - len(nums)) + (int(post) if post.isdigit() else 0,)

    want = key(release)
    found = "0.4.0"
    for name, prof in SGLANG_PROFILES.items():  # in release order; a line starts at the first release it names
        if key(prof.releases.split()[0]) <= want:
            found = name
    return found


def pp_partition(prof: SglangProfile, num_layers: int, pp: int) -> list[int]:
    """Layers per pipeline stage as SGLang's get_pp_indices splits them (vLLM's differs: kvplan.parallel.pp_partition).

    Worked numbers: 94 layers over 4 stages -> [23, 23, 23, 25] through 0.5.5, [23, 23, 24, 24] from 0.5.6
    (vLLM: [23, 24, 24, 23]). kvplan.plan lays SGLang's stages out by it (Layout.pp_split)."""
    base, rem = divmod(num_layers, pp)
    if PP_REMAINDER_ON_LAST[prof.version]:
        return [base] * (pp - 1) + [base + rem]
    return [base] * (pp - rem) + [base + 1] * rem


# ----------------------------------------------------------------------------- hybrid models: the MambaPool

# Cache kinds that keep a recurrent state per request (kvplan.layers STATE_KINDS + the composite Falcon-H1 kind).
_RECURRENT_KINDS = (*STATE_KINDS, "attention_and_mamba")
# SGLANG_MAMBA_CONV_DTYPE: the conv state is bfloat16 in every line that serves hybrids (0.5.2 - 0.5.8 configs/
# mamba_utils.py CONV_DTYPE = torch.bfloat16; 0.5.9+ envs default "bfloat16"), whatever the model dtype.
SGLANG_CONV_STATE_BYTES = 2
SGLANG_MAMBA_FULL_MEMORY_RATIO = 0.9  # --mamba-full-memory-ratio default (server_args.py 0.5.4 - 0.5.13; 0.5.14+
# arg_groups fields "fallback=0.9"; only Inkling-class models override it)
SGLANG_MAMBA_FIXED_SLOTS = 512  # max_mamba_cache_size without the radix cache up to 0.5.8 (no --max-running-requests)
# MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO (every line 0.5.4 - 0.5.23) and the extra_buffer ping-pong slots with the
# overlap schedule (MAMBA_CACHE_V2_ADDITIONAL_RATIO_OVERLAP, 0.5.7+)
SGLANG_MAMBA_SLOTS_PER_REQUEST = 3
SGLANG_MAMBA_EXTRA_BUFFER_SLOTS = 2
_SSM_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


# SGLang speculative decoding over a MambaPool (read in the 0.5.14 wheel's model_executor/model_runner_kv_cache_mixin.py
# handle_max_mamba_cache, 0.5.16 / 0.5.17 / 0.5.20 mem_cache/kv_cache_configurator.py _handle_max_mamba_cache, 0.5.17
# mem_cache/memory_pool.py MambaPool, models/qwen3_5_mtp.py, configs/model_config.py, arg_groups/speculative_hook.py,
# speculative/eagle_worker_v2.py, model_runner_components/spec_aux_hidden_state.py, model_executor/pool_configurator.py;
# 2026-12-03; the 0.5.18 / 0.5.21 lines as the earlier audit read them, the same padded rule). The reserve follows the
# algorithm, not the steps (has_spec_dec = not spec_algorithm.is_none(): NGRAM too); mamba_pool prices it.
# kvplan plans it for the Qwen3.5 / Qwen3.6 GDN hybrids with NEXTN / EAGLE on their own mtp.* layer ("mtp") and with
# NGRAM, on the 0.5.14+ lines, one pipeline stage, no DP attention. The MTP draft (Qwen3_5ForCausalLMMTP): fc 2h -> h,
# two pre-fc norms, one Qwen3_5 decoder layer with full_attention_interval 1, its own embed_tokens and (untied) lm_head,
# resident until init_lm_head's set_embed_and_head after the pools are sized (mtp_draft_vocab_copy_bytes); its KV pool
# holds the target's #tokens over that one full-attention layer, allocated after the target's pool is profiled: the
# target's cell is scaled only when --speculative-draft-model-path is given (spec_aux_hidden_state.py reads the draft
# config's num_nextn_predict_layers only then; _handle_eagle_family fills the path in for DeepSeek / GLM / ..., not for
# Qwen3_5*), so kvplan plans the path-less launch with the target's cell unscaled.
SGLANG_HYBRID_SPEC_TYPES = ("qwen3_5_text", "qwen3_5_moe_text")  # the hybrids planned with speculative decoding
SGLANG_HYBRID_SPEC_METHODS = {"mtp": "EAGLE / NEXTN", "ngram": "NGRAM"}  # planned there, by kvplan's method name
SGLANG_NGRAM_DRAFT_TOKENS = 12  # speculative_hook.py _handle_ngram: speculative_num_draft_tokens 12 unless given
SGLANG_HYBRID_SPEC_UNMODELLED = (
    "Not modelled with speculative decoding here: SGLang sizes the MambaPool's slots jointly with a reserve of "
    "--speculative-num-draft-tokens extra states a running request (intermediate_ssm_state_cache, "
    "intermediate_conv_window_cache), capped by --max-running-requests; kvplan plans that reserve for the Qwen3.5 / "
    "Qwen3.6 hybrids with EAGLE / NEXTN on their MTP layer or NGRAM on SGLang 0.5.14+ (one pipeline stage, no DP "
    "attention) only (plan this one on SGLang without speculative decoding, or on vLLM).")
# and of SGLang's MTP draft for a hybrid kvplan does not plan with speculation (Qwen3-Next's Qwen3NextForCausalLMMTP,
# Nemotron-H's NemotronHForCausalLMMTP: not read)
SGLANG_HYBRID_MTP_UNMODELLED = (
    " Nor the MTP draft runner beside it (its own mtp.* layer weights, its own bf16 embed_tokens / lm_head copies and "
    "its KV pool over its full-attention layer). Plan this model's MTP on vLLM (--speculative-config method mtp), or "
    "SGLang without speculative decoding.")
# The draft class configs/model_config.py gives a Qwen3.5-family target's MTP layer (is_draft_model), 0.5.14 - 0.5.23
SGLANG_QWEN_MTP_DRAFT_ARCH = "Qwen3_5ForCausalLMMTP"


def speculative_draft_tokens(method: str, num_steps: int, given: int | None = None) -> int:
    """D, the --speculative-num-draft-tokens SGLang sizes the hybrid reserve by (0: no speculative decoding).

    ``given`` wins (a --speculative-eagle-topk > 1 tree keeps it; SGLang resets it to steps + 1 under top-k 1, which
    plan() warns of); else NGRAM 12 (speculative_hook.py _handle_ngram), EAGLE / NEXTN steps + 1 (top-k 1, SGLang's
    own choice for these targets: _auto_choose_speculative_params (3, 1, 4), and "speculative_num_draft_tokens is
    adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1"). Worked numbers: ("mtp", 5) -> 6;
    ("ngram", 1) -> 12; ("mtp", 3, 8) -> 8."""
    if method == "none":
        return 0
    if given is not None:
        return given
    return SGLANG_NGRAM_DRAFT_TOKENS if method == "ngram" else num_steps + 1


def _recurrent_counts(spec) -> dict[str, int]:
    """How many layers of each recurrent-state kind (ModelSpec.layer_kinds, those in _RECURRENT_KINDS)."""
    return {kind: n for kind, n in spec.layer_kinds.items() if kind in _RECURRENT_KINDS}


def hybrid_refusal(spec, version: str = SGLANG_DEFAULT_VERSION, tp: int = 1, pp: int = 1, dp_attention: int = 1,
                   speculative: bool | str = False, radix: bool = True, rocm: bool = False) -> tuple[str, str] | None:
    """(field, message) when kvplan cannot plan ``spec``'s recurrent states the way this SGLang line does; None when
    the model keeps none or the line's MambaPool rule is modelled (``mamba_pool``).

    Modelled: the SGLANG_HYBRID_ARCHS families each line serves (SglangProfile.hybrid_models), pipeline stages from
    0.5.17 (one stage before), DP attention from 0.5.7, speculative decoding (``speculative``: kvplan's method name,
    or True for any) only for SGLANG_HYBRID_SPEC_TYPES with SGLANG_HYBRID_SPEC_METHODS from 0.5.14 on one stage without
    DP attention (SGLANG_HYBRID_SPEC_UNMODELLED), TP
    dividing the state heads (SGLang's ``divide`` asserts), CUDA for the lines whose extra_buffer asserts it. Worked example:
    qwen3.5-397b-a17b on 0.5.3 -> ("sglang_version", "... two rules in one line ..."); on 0.5.20 -> None."""
    kinds = _recurrent_counts(spec)
    if not kinds:
        return None
    prof = SGLANG_PROFILES[version]
    held = ", ".join(f"{n} {kind}" for kind, n in kinds.items())
    head = (f"{spec.name}: {sum(kinds.values())} of {len(spec.layers)} layers keep a recurrent state ({held}), which "
            "SGLang keeps in a MambaPool of its own beside the KV pool of the attention layers. ")
    if spec.model_type not in SGLANG_HYBRID_ARCHS:
        served = ", ".join(sorted(set(SGLANG_HYBRID_ARCHS.values())))
        return "engine", head + (f"kvplan sizes SGLang's MambaPool for {served} only (model_type {spec.model_type!r} is "
                                 "not one it read in SGLang's configs): plan it with vLLM or the custom engine.")
    if prof.hybrid_rule == "refused":
        return "sglang_version", head + f"SGLang {prof.releases} {prof.hybrid_refusal}. Pick SGLang 0.5.4.post1 or newer."
    if spec.model_type not in prof.hybrid_models:
        return "sglang_version", head + (f"SGLang {prof.releases} does not serve {SGLANG_HYBRID_ARCHS[spec.model_type]} "
                                         "in every release of the line (Qwen3.5 and Granite-4 hybrids came with 0.5.9): "
                                         "pick SGLang 0.5.10 or newer.")
    if rocm and prof.hybrid_rocm_refusal:
        return "sglang_version", head + f"SGLang {prof.releases} {prof.hybrid_rocm_refusal}."
    if pp > 1 and prof.hybrid_rule != "v0517":
        return "pipeline_parallel_size", head + (f"Not modelled under pipeline parallelism on SGLang {prof.releases} "
                                                 "(it charges every stage the whole model's state per slot; 0.5.17+ "
                                                 "charge the largest stage's share): plan one stage or 0.5.17+.")
    if dp_attention > 1 and prof.hybrid_rule == "v054":
        return "dp_attention_size", head + (f"Not modelled with DP attention on SGLang {prof.releases} (its "
                                            "handle_max_mamba_cache divides even the ratio's slots by --dp for GDN).")
    if speculative and not (isinstance(speculative, str) and speculative in SGLANG_HYBRID_SPEC_METHODS
                            and spec.model_type in SGLANG_HYBRID_SPEC_TYPES and pp == 1 and dp_attention == 1
                            and list(SGLANG_PROFILES).index(version) >= list(SGLANG_PROFILES).index(SPECULATIVE_FROM)):
        name = SGLANG_HYBRID_SPEC_METHODS.get(speculative, str(speculative).upper()) if isinstance(
            speculative, str) else "any algorithm"
        why = ("pipeline parallelism" if pp > 1 else "DP attention" if dp_attention > 1 else
               f"SGLang {prof.releases}" if list(SGLANG_PROFILES).index(version) < list(SGLANG_PROFILES).index(
                   SPECULATIVE_FROM) else SGLANG_HYBRID_ARCHS[spec.model_type] if spec.model_type not in
               SGLANG_HYBRID_SPEC_TYPES else f"--speculative-algorithm {name}")
        return "speculative_config", f"--speculative-algorithm {name} on SGLang {prof.releases} ({why}): not " \
            "modelled. " + head + SGLANG_HYBRID_SPEC_UNMODELLED + (SGLANG_HYBRID_MTP_UNMODELLED if spec.mtp_layers and
                                             spec.model_type not in SGLANG_HYBRID_SPEC_TYPES else "")
    if not radix and prof.hybrid_radix_off == "mixed":
        return "enable_prefix_caching", head + ("Without the radix cache SGLang 0.5.8 keeps 512 state slots and 0.5.9 "
                                                "sizes them by the ratio: pick the 0.5.7 or the 0.5.10 line.")
    if not any(part.kind in ("full_attention", "sliding_attention") for layer in spec.layers
               for part in cache_parts(layer.cache)):
        return "model", head + ("It has no attention layer, so SGLang sizes no KV pool for it (0.5.20 "
                                "_zero_kv_max_tokens): not modelled.")
    for layer in spec.layers:
        for part in cache_parts(layer.cache):
            if part.kind in ("mamba", "linear_attention"):
                _, _, bad = _state_shape(part, tp)
                if bad:
                    return "tensor_parallel_size", head + f"SGLang refuses TP {tp} for it: {bad}."
    return None


def recurrent_state_refusal(spec, version: str = SGLANG_DEFAULT_VERSION, **layout) -> str | None:
    """The message of ``hybrid_refusal`` (None: nothing refused)."""
    got = hybrid_refusal(spec, version, **layout)
    return got[1] if got else None


def _state_shape(cache, tp: int) -> tuple[tuple[int, int], tuple[int, int, int], str]:
    """((conv channels per rank, conv columns), (temporal heads, head_dim, state_size) per rank, why SGLang refuses TP)
    of one Mamba-2 / GDN layer as configs/mamba_utils.py Mamba2StateShape.create lays it out: B/C groups not divisible by
    TP are extended by tp - n_groups, conv_dim = intermediate + 2 x n_groups x state_size split over TP, conv_kernel - 1
    columns; temporal (num_heads / tp, head_dim, state_size). GDN (configs/qwen3_next.py mamba2_cache_params):
    intermediate = value heads x value_head_dim, n_groups = key heads, state_size = key_head_dim, num_heads = value
    heads, head_dim = value_head_dim. Worked number: Qwen3-Next-80B at TP4: conv (8192 / 4 = 2048, 3), temporal
    (32 / 4 = 8, 128, 128)."""
    if cache.kind == "linear_attention":
        inter, groups, state = cache.num_value_heads * cache.value_head_dim, cache.num_key_heads, cache.key_head_dim
        heads, head_dim, kernel = cache.num_value_heads, cache.value_head_dim, cache.conv_kernel
    else:  # MambaState (conv_dim = intermediate + 2 x n_groups x state): the intermediate from the groups where the
        # builder kept them (Falcon-H1 mamba_d_ssm, Granite-4), else heads x head_dim (Nemotron-H) and the groups from it
        state = cache.state_size
        if cache.n_groups:
            groups, inter = cache.n_groups, cache.conv_dim - 2 * cache.n_groups * state
        else:
            inter = cache.num_heads * cache.head_dim
            groups = max(1, (cache.conv_dim - inter) // (2 * state))
        heads, head_dim, kernel = cache.num_heads, cache.head_dim, cache.conv_kernel
    if groups % tp:
        groups += tp - groups  # extra_groups_for_head_shards
    conv_dim = inter + 2 * groups * state
    bad = "" if conv_dim % tp == 0 and heads % tp == 0 else (
        f"conv_dim {conv_dim} and {heads} state heads must divide by TP (configs/mamba_utils.py divide)")
    return (conv_dim // tp, kernel - 1), (heads // tp, head_dim, state), bad


def state_bytes_per_request(prof: SglangProfile, layers, tp: int, mamba_ssm_dtype: str | None = None
                            ) -> tuple[int, int, int]:
    """(conv bytes, temporal bytes, state layers) one MambaPool slot holds on a rank: SGLang's
    ``mamba2_cache_params.mamba_cache_per_req`` = (conv numel x 2 B + temporal numel x ssm bytes) x layers.

    ``layers``: (DecoderLayer, count) pairs. The conv state is bfloat16 (SGLANG_MAMBA_CONV_DTYPE); the temporal state is
    --mamba-ssm-dtype, else (0.5.9+, ``hybrid_ssm_from_config``) the config's ``mamba_ssm_dtype`` (Qwen3.5 files say
    float32; kvplan keeps it as LinearAttentionState.vllm_ssm_dtype_bytes), else float32 (mamba2_state_dtype). Nemotron-H's
    ``mamba_ssm_cache_dtype`` is a vLLM key SGLang does not read; Granite-4 builds its params without the config.
    Worked number: Qwen3-Next-80B at TP4, 36 GDN layers: (2048 x 3 x 2 = 12,288) + (8 x 128 x 128 x 4 = 524,288)
    -> 19,316,736 B a slot."""
    conv_b = ssm_b = n = 0
    for layer, count in layers:
        for part in cache_parts(layer.cache):
            if part.kind not in ("mamba", "linear_attention"):
                continue
            (ch, cols), (heads, hd, st), _ = _state_shape(part, tp)
            ssm = _SSM_BYTES[mamba_ssm_dtype] if mamba_ssm_dtype else (
                part.vllm_ssm_dtype_bytes if (prof.hybrid_ssm_from_config and part.kind == "linear_attention"
                                              and part.vllm_ssm_dtype_bytes) else 4)
            conv_b += count * ch * cols * SGLANG_CONV_STATE_BYTES
            ssm_b += count * heads * hd * st * ssm
            n += count
    return conv_b, ssm_b, n


def ssm_dtype_used(prof: SglangProfile, layers, mamba_ssm_dtype: str | None = None) -> str:
    """The temporal (SSM) state dtype this line's MambaPool uses for ``layers`` ((DecoderLayer, count) pairs), and why,
    as state_bytes_per_request picks it.

    --mamba-ssm-dtype when given; else (``hybrid_ssm_from_config``, the 0.5.10+ lines: configs/mamba_utils.py
    mamba2_state_dtype(config)) the config's mamba_ssm_dtype for GDN layers (Qwen3-Next / Qwen3.5 files say float32);
    else float32, the --mamba-ssm-dtype default (server_args.py ``mamba_ssm_dtype: str = "float32"``, exported as
    SGLANG_MAMBA_SSM_DTYPE): 0.5.4.post1 - 0.5.7 read no config key (mamba2_state_dtype() takes no config), and Mamba-2
    configs carry none (Nemotron-H's mamba_ssm_cache_dtype is vLLM's key; Granite-4 builds its params without the
    config). Worked examples: Qwen3.5 on 0.5.20 -> "float32 (the config's mamba_ssm_dtype)"; Nemotron-H on 0.5.6 ->
    "float32 (the --mamba-ssm-dtype default: SGLang 0.5.6 - 0.5.6.post2 reads no config key for it)"."""
    if mamba_ssm_dtype:
        return f"{mamba_ssm_dtype} (--mamba-ssm-dtype)"
    parts = [part for layer, _ in layers for part in cache_parts(layer.cache) if part.kind in ("mamba", "linear_attention")]
    gdn = [p for p in parts if p.kind == "linear_attention"]
    if not prof.hybrid_ssm_from_config:
        return f"float32 (the --mamba-ssm-dtype default: SGLang {prof.releases} reads no config key for it)"
    if gdn and gdn[0].vllm_ssm_dtype_bytes:
        name = {4: "float32", 2: "bfloat16"}.get(gdn[0].vllm_ssm_dtype_bytes, f"{gdn[0].vllm_ssm_dtype_bytes}-byte")
        return f"{name} (the config's mamba_ssm_dtype)"
    if gdn:
        return "float32 (the --mamba-ssm-dtype default: the config names no mamba_ssm_dtype)"
    return ("float32 (the --mamba-ssm-dtype default: Mamba-2 configs carry no mamba_ssm_dtype, Nemotron-H's "
            "mamba_ssm_cache_dtype being vLLM's key and Granite-4 building its params without the config)")


class SglangMambaPool(BaseModel):
    """SGLang's MambaPool on one rank and the KV pool it leaves (bytes)."""

    model_config = ConfigDict(frozen=True)
    slots: int  # max_mamba_cache_size
    per_request: int  # mamba_cache_per_req: one slot over this rank's state layers
    conv_bytes: int  # conv_state tensors as allocated: (slots + 1) x layers x conv (the pool's padding slot 0)
    ssm_bytes: int  # ssm_state (temporal) tensors, (slots + 1) slots
    charged: int  # what the sizing rule subtracts from rest (slots x per_request; (slots + 1) x from 0.5.17)
    kv_pool: int  # rest - charged: the budget of the full-attention KV pool
    slots_per_request: int  # max_running_requests <= slots // this (1 without the radix cache, 3, 5 with extra_buffer)
    rule: str  # how the slots were chosen, for the budget line
    # speculative decoding (0.5.14+): D = --speculative-num-draft-tokens (0: none) and what the draft-token reserve
    # charges from rest beside ``charged`` (per_request x (capped requests (+ 1 from 0.5.17)) x D)
    draft_tokens: int = 0
    intermediate: int = 0


def mamba_pool(prof: SglangProfile, rest: int, conv_per_request: int, ssm_per_request: int, model_type: str,
               ratio: float | None = None, max_mamba_cache_size: int | None = None,
               max_running_requests: int | None = None, radix: bool = True, dp_attention: int = 1,
               charged_per_request: int | None = None, draft_tokens: int = 0) -> SglangMambaPool:
    """How the line splits the profiled rest between the MambaPool and the full-attention KV pool.

    rest = available - pre x (1 - mem_fraction_static) (GB floats, as SGLang computes them). With the radix cache on
    and no --max-mamba-cache-size: budget = rest x r / (1 + r), r = --mamba-full-memory-ratio (0.9), then
      0.5.4 - 0.5.16  slots = int(budget // per_request), charged slots x per_request
                      (model_runner.handle_max_mamba_cache, 0.5.7+ model_runner_kv_cache_mixin.py, 0.5.16
                      mem_cache/kv_cache_configurator.py _handle_max_mamba_cache)
      0.5.17 - 0.5.23 slots = int((budget - per_request) // per_request), charged (slots + 1) x per_request ("+1
                      accounts for each pool's padding slot")
    --max-mamba-cache-size N: slots = N (0.5.4 - 0.5.6 only without the radix cache: the ratio wins with it).
    DP attention (``dp_attention`` workers, 0.5.7+): a fixed or given slot count is split over the workers (N // dp);
    the ratio sizes each worker's pool from its own rest. Pipeline stages (0.5.17+): every stage solves and charges
    ``charged_per_request`` = int(the model's slot x the largest stage's state layers / all state layers) and
    allocates its own layers (conv / ssm per request of this stage).
    Without the radix cache (0.5.4 - 0.5.6 Mamba-2 configs always: "model detected, disable radix cache"): through 0.5.8
    slots = --max-running-requests or 512; 0.5.9+ --max-running-requests, else the ratio. The KV pool gets
    rest - charged. Slots a running request holds (``_calculate_mamba_ratio``): 1 without the radix cache, 3 with it
    (no_buffer, the default through 0.5.13), 3 + 2 with extra_buffer under the overlap schedule (the auto strategy
    for these architectures from 0.5.14, linear_attn_backend triton).
    Worked number (the Qwen3.5-9B TP2 RTX 4090 log, 0.5.10 line): rest 14.08 - 22.93 x 0.2 = 9.494 GB, per request
    24 x (4096 x 3 x 2 + 16 x 128 x 128 x 4) = 25,755,648 B -> budget 4.497 GB -> 187 slots (logged 186).

    Speculative decoding (``draft_tokens`` D > 0, any --speculative-algorithm; 0.5.14 / 0.5.16 model_runner_kv_cache_
    mixin.py handle_max_mamba_cache / kv_cache_configurator.py, 0.5.17 / 0.5.20 kv_cache_configurator.py
    _handle_max_mamba_cache, read 2026-12-03): SGLang has set --max-running-requests (R: given, else 48). With s slots
    a running request and p = 1 from 0.5.17 (0 before) for the padding slot:
      ratio                   K = int((budget - per_request x (1 + D) x p) // (per_request x (1 + D / s)))
                              (0.5.14 - 0.5.16: int(budget // (per_request x (1 + D / s))))
      --max-mamba-cache-size  K = N // dp
      no radix cache          K = R // dp (R is always set under speculation)
    intermediate = per_request x (min(R // dp, K // s) + p) x D (no radix cache: (K + p) x D), charged from rest
    before the KV pool beside the slots (allocated as intermediate_ssm_state_cache / intermediate_conv_window_cache).
    Worked number (tests/test_sglang_qwen_mtp.py, 0.5.17): slot 78,446,592 B, D 6, s 5, R 4, rest 17,012,228,096 B
    -> budget 8,058,423,834.9 -> K = int(7,509,297,690.9 // 172,582,502.4) = 43; reserve (min(4, 8) + 1) x 6 = 30
    slots = 2,353,397,760 B.
    """
    r = SGLANG_MAMBA_FULL_MEMORY_RATIO if ratio is None else ratio
    per_req = conv_per_request + ssm_per_request if charged_per_request is None else charged_per_request
    rest_gb = rest / GiB
    radix_on = radix and not (prof.hybrid_rule == "v054" and model_type in ("nemotron_h", "falcon_h1"))
    padded = prof.hybrid_rule == "v0517"

    per_running = 1 if not radix_on else SGLANG_MAMBA_SLOTS_PER_REQUEST + (
        SGLANG_MAMBA_EXTRA_BUFFER_SLOTS if prof.hybrid_extra_buffer else 0)
    D = draft_tokens

    def by_ratio() -> tuple[int, str]:
        budget = rest_gb * r / (1 + r) * GiB
        if D and padded:
            return (int((budget - per_req * (1 + D)) // (per_req * (1 + D / per_running))),
                    f"rest x {r} / (1 + {r}) solved jointly with {D} draft-token states a running request, less the "
                    "padding slot")
        if D:
            return (int(budget // (per_req * (1 + D / per_running))),
                    f"rest x {r} / (1 + {r}) solved jointly with {D} draft-token states a running request")
        if padded:
            return int((budget - per_req) // per_req), f"rest x {r} / (1 + {r}) less the padding slot, per slot"
        return int(budget // per_req), f"rest x {r} / (1 + {r}), per slot"

    per_dp = f" // {dp_attention} DP-attention workers" if dp_attention > 1 else ""
    if max_mamba_cache_size is not None and (radix_on is False or prof.hybrid_rule != "v054"):
        slots, rule = max_mamba_cache_size // dp_attention, "--max-mamba-cache-size" + per_dp
    elif not radix_on:
        if prof.hybrid_rule == "v054" or prof.hybrid_radix_off == "fixed":
            slots = (max_running_requests or SGLANG_MAMBA_FIXED_SLOTS) // dp_attention
            rule = ("--max-running-requests" if max_running_requests else f"{SGLANG_MAMBA_FIXED_SLOTS} slots") + \
                per_dp + " (no radix cache)"
        elif max_running_requests is not None:
            slots, rule = max_running_requests // dp_attention, "--max-running-requests" + per_dp + " (no radix cache)"
        else:
            slots, rule = by_ratio()
    else:
        slots, rule = by_ratio()
    # slots <= 0: SGLang raises ("Not enough GPU memory for hybrid (mamba/linear-attention) state cache") before
    # allocating anything
    charged = (slots + 1 if padded else slots) * per_req if slots > 0 else 0
    intermediate = 0
    if D:  # the draft-token reserve: R is always set under speculation (speculative_hook.py: 48 unless given)
        running_set = max_running_requests or SPECULATIVE_MAX_RUNNING_REQUESTS
        reqs = slots if (not radix_on and max_mamba_cache_size is None) else min(running_set // dp_attention,
                                                                                  slots // per_running)
        intermediate = per_req * (reqs + (1 if padded else 0)) * D
        rest_gb -= intermediate / GiB
    kv_pool = int((rest_gb - charged / GiB) * GiB)
    alloc = max(slots, 0) + 1
    return SglangMambaPool(slots=slots, per_request=per_req, conv_bytes=alloc * conv_per_request,
                           ssm_bytes=alloc * ssm_per_request, charged=charged, kv_pool=kv_pool,
                           slots_per_request=per_running, rule=rule, draft_tokens=D, intermediate=intermediate)


class SglangDefaults(BaseModel):
    """What SGLang resolves for a launch before it loads anything."""

    model_config = ConfigDict(frozen=True)
    gpu_mem_mib: int
    gpu_mem_basis: str
    chunked_prefill_size: int
    cuda_graph_max_bs: int
    prefill_graph_count: int  # 0: off
    mem_fraction_static: float
    reserved_mib: float | None  # None where the rule is a table
    rule: str  # how the fraction was chosen, for the budget line


def _tier(prof: SglangProfile, gib: float, tp: int) -> tuple[int, int]:
    """(chunked_prefill_size, decode cuda_graph_max_bs) by GPU size (0.5.3+ tiers; older lines below)."""
    if prof.fraction_rule != "reserved_formula":
        small = gib * 1024 < (25_000 if prof.fraction_rule != "reserved_tiers" else 35 * 1024)
        if small:
            return 2048, (8 if tp < 4 else 80)
        if prof.fraction_rule == "tp_table":  # server_args sets 160 above 25000 MiB
            return 8192, 160
        if prof.fraction_rule == "tp_table_13g":  # cuda_graph_runner: 160, + range(160, 257, 8) above 81920 MiB
            return 8192, (256 if gib * 1024 > 81920 else 160)
        if prof.fraction_rule == "tp_table_large":  # cuda_graph_runner (0.4.6.post5): 256 above 96 GiB
            return 8192, (256 if gib > 96 else 160)
        # 0.4.8 line: chunk 16384 from 160 GiB; cuda_graph_runner 256 above 90 GiB, 512 above 160,000 MiB
        return (16384 if gib >= 160 else 8192), (512 if gib * 1024 > 160_000 else 256 if gib > 90 else 160)
    if gib < 20:
        return 2048, 8
    if gib < 35:
        chunk, bs, bs4 = prof.small_tier
        return chunk, (bs if tp < 4 else bs4)
    if gib < 60:
        return 4096, (32 if tp < 4 else 160)
    if gib < 160:
        return 8192, (256 if tp < 4 else 512)
    return 16384, 512


def vit_complexity_factor(vit_layers: int, vit_hidden: int) -> float:
    """adjust_mem_fraction_for_vlm: 0.95 x clamp(1 - 0.1 x (layers x hidden^2 / (24 x 1024^2) - 1), 0.8, 1.05).
    Worked number: MoonViT (Kimi-K2.5) 27 x 1152^2 -> ratio 1.4238 -> 0.95 x 0.95762 = 0.90974."""
    ratio = vit_layers * vit_hidden ** 2 / (24 * 1024 ** 2)
    return 0.95 * max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))


# The SGLang architecture of a kvplan spec SGLang serves as multimodal, where one of the allowlists below names it: by
# the model_type kvplan parses (its text config's for Qwen3.5) and, for Kimi-K2.5 / K2.6 (spec model_type deepseek_v3:
# the text config's), by its MoonViT tower. kvplan/presets: qwen3.5-*, qwen3.6-* (Qwen3_5(Moe)ForConditionalGeneration),
# kimi-k2.5, kimi-k2.6-nvfp4 (KimiK25ForConditionalGeneration).
SGLANG_MM_ARCHS = {"qwen3_5_text": "Qwen3_5ForConditionalGeneration",
                   "qwen3_5_moe_text": "Qwen3_5MoeForConditionalGeneration"}
# What turns the prefill graphs off once a breakable line has switched a piecewise-allowlisted VLM to tc_piecewise
# (_disable_tc_piecewise_cudagraph_if_incompatible, 0.5.16 - 0.5.23: DP attention, pp_size > 1, non-CUDA hardware;
# --disable-cuda-graph locks the prefill backend to disabled before the switch). MLA is not among them.
MM_TC_SWAP_OFF = ("dp_attention", "pp", "rocm", "eager")


def sglang_mm_arch(model_type: str, towers=()) -> str:
    """The SGLang architecture kvplan can name for a multimodal spec ("" where it names none). Worked examples:
    ("qwen3_5_text", Qwen3.5-27B's towers) -> "Qwen3_5ForConditionalGeneration"; ("deepseek_v3", a MoonViT tower) ->
    "KimiK25ForConditionalGeneration"; ("qwen2_5_vl", ...) -> ""."""
    if model_type in SGLANG_MM_ARCHS:
        return SGLANG_MM_ARCHS[model_type]
    if model_type in ("deepseek_v3", "kimi_k2", "kimi_k25") and any("MoonViT" in t.name for t in towers):
        return "KimiK25ForConditionalGeneration"
    return ""


# Architectures SGLang serves text-only unless --enable-multimodal is given (configs/model_config.py mm_disabled_models,
# the same list in the 0.4.10, 0.5.3, 0.5.6, 0.5.8, 0.5.10 - 0.5.23 wheels read 2026-12; Step3VL from 0.5.3, Inkling
# from 0.5.16): ModelConfig.is_multimodal is False, so no VLM fraction cut, no multimodal reserve, and the prefill
# graphs follow the text rules. By kvplan's model_type (the text config's) with a tower.
SGLANG_MM_DISABLED = {"gemma3_text": "Gemma3ForConditionalGeneration", "llama4_text": "Llama4ForConditionalGeneration"}


# Of those, the model files that then build no tower: models/mllama4.py (0.4.10, 0.5.3 - 0.5.23 wheels read 2026-12-02:
# has_vision = has_vision_weights and enable_multimodal; vision_model / multi_modal_projector None, their weights
# skipped); 0.4.5.post3 - 0.4.8 build Llama 4's vision model unconditionally. Gemma 3's gemma3_mm.py builds its SigLIP
# tower either way (loaded, unused).
SGLANG_TEXT_ONLY_SKIPS_TOWER = ("llama4_text",)
SGLANG_TOWER_ALWAYS_BUILT_LINES = ("0.4.0", "0.4.5.post3", "0.4.6", "0.4.8")


def sglang_builds_tower(version: str, model_type: str) -> bool:
    """Whether SGLang builds (and loads) the checkpoint's tower without --enable-multimodal. Worked example: Llama-4-Scout
    on 0.5.21 -> False (its 'Model loading' leaves the vision model out); on 0.4.8 -> True; Gemma-3-27B -> True."""
    return model_type not in SGLANG_TEXT_ONLY_SKIPS_TOWER or version in SGLANG_TOWER_ALWAYS_BUILT_LINES


def sglang_mm_disabled(model_type: str, towers=()) -> str:
    """The architecture name where SGLang turns multimodal off by default for this spec ("" otherwise). Worked example:
    Gemma-3-27B-it (gemma3_text + a SigLIP tower) -> "Gemma3ForConditionalGeneration"; Gemma 4 -> ""."""
    return SGLANG_MM_DISABLED.get(model_type, "") if towers else ""


def mm_prefill_backend(prof: SglangProfile, mm_arch: str) -> str | None:
    """The prefill CUDA-graph backend a multimodal ``mm_arch`` keeps on this line by default: "breakable",
    "tc_piecewise" (a piecewise-allowlisted arch; on a breakable line SGLang switches it over), None (off, the "vit"
    rule). Worked examples: 0.5.20, Qwen3_5ForConditionalGeneration -> "breakable"; 0.5.17,
    KimiK25ForConditionalGeneration -> "tc_piecewise"; 0.5.15 or 0.5.10, either -> None."""
    if not mm_arch or prof.prefill_graphs == "none":
        return None
    if prof.prefill_graphs == "breakable" and mm_arch in prof.mm_keep_breakable:
        return "breakable"
    if mm_arch in prof.mm_keep_piecewise:
        return "tc_piecewise"
    return None


def default_settings(prof: SglangProfile, gpu_mem_mib: int, gpu_mem_basis: str, tp: int, pp: int = 1,
                     mla: bool = False, dp_attention: int = 1, speculative: bool = False,
                     vit: tuple[int, int] | None = None, rocm: bool = False, eager: bool = False,
                     chunked_prefill_size: int | None = None, cuda_graph_max_bs: int | None = None,
                     mem_fraction_static: float | None = None, piecewise: str | None = None,
                     mm_arch: str = "") -> SglangDefaults:
    """SGLang's chunked_prefill_size, decode cuda_graph_max_bs and mem_fraction_static for this launch.

    ``vit``: (layers, hidden) of a vision tower SGLang loads (None: text only). Explicit flags win.
    ``mm_arch``: the SGLang architecture of that multimodal model (sglang_mm_arch; "" unknown): one on the line's
    allowlists keeps the prefill graphs (mm_prefill_backend), every other VLM loses them ("vit").
    ``piecewise``: the prefill (piecewise) CUDA-graph flag given: None none; "enable" --enable-piecewise-cuda-graph
    (opt-in lines: SglangProfile.piecewise_optin; a deprecated no-op from 0.5.10); "enforce"
    --enforce-piecewise-cuda-graph (0.5.10+: on past _handle_piecewise_cuda_graph's auto-disable rules; 0.5.14+ its
    alias --cuda-graph-backend-prefill=tc_piecewise); "disable" --disable-piecewise-cuda-graph (0.5.10+).
    Worked numbers: 0.5.20, H100 (81559 MiB), TP1 -> 8192 / 256 / 58 prefill graphs, reserved
    512 + 12288 + 128 + 512 + 464 = 13904 MiB -> 0.830; 0.4.0, TP4 -> 0.85; 0.4.8, 16303 MiB -> 0.818;
    0.5.6, H100, TP1 with --enable-piecewise-cuda-graph: 13440 + 4096 // 4 = 14464 MiB -> 0.823 (0.835 without);
    Qwen3.5-27B with its tower (24 x 1152: x 0.92477), 0.5.20, H100, TP1: 13904 MiB (58 breakable graphs kept) ->
    0.830 x 0.92477 = 0.76756 (a VLM off the allowlists: 13440 MiB -> 0.835 x its factor).
    """
    gib = gpu_mem_mib / 1024
    chunk, max_bs = _tier(prof, gib, tp)
    chunk = chunked_prefill_size or chunk
    max_bs = cuda_graph_max_bs or max_bs
    graphs = 0
    optin_mib = 0  # what --enable-piecewise-cuda-graph adds where the prefill graphs are opt-in
    keep = mm_prefill_backend(prof, mm_arch) if vit is not None else None
    if prof.prefill_graphs != "none" and piecewise != "disable":
        seen = {"eager": eager, "pp": pp > 1, "vit": vit is not None and keep is None,
                "dp_attention": dp_attention > 1, "rocm": rocm, "speculative": speculative, "mla": mla}
        rules = prof.prefill_off
        if keep == "tc_piecewise" and prof.prefill_graphs == "breakable":  # switched to tc_piecewise: its rules
            rules = MM_TC_SWAP_OFF
        off = any(seen[c] for c in rules)
        if piecewise == "enforce" or not off:  # enforce skips the auto-disable rules
            tokens = chunk if chunk > 0 else 2048
            graphs = len(prefill_graph_sizes(tokens))
    elif prof.prefill_graphs == "none" and piecewise == "enable":
        if prof.piecewise_optin == "max_quarter":
            optin_mib = 4096 // 4  # piecewise_cuda_graph_max_tokens: 4096 by default in 0.5.6
        elif prof.piecewise_optin == "chunk_eighth":
            optin_mib = max(chunk, 0) // 8
        elif prof.piecewise_optin == "sizes":
            graphs = len(prefill_graph_sizes(2048 if mla else chunk if chunk > 0 else 2048))
    reserved: float | None = None
    ps = tp * pp
    if mem_fraction_static is not None:
        return SglangDefaults(gpu_mem_mib=gpu_mem_mib, gpu_mem_basis=gpu_mem_basis, chunked_prefill_size=chunk,
                              cuda_graph_max_bs=max_bs, prefill_graph_count=graphs,
                              mem_fraction_static=mem_fraction_static, reserved_mib=None, rule="--mem-fraction-static")
    if prof.fraction_rule in ("tp_table", "tp_table_13g", "tp_table_large"):
        n = ps if prof.fraction_rule == "tp_table_large" else tp
        frac = 0.79 if n >= 16 else 0.81 if n >= 8 else 0.85 if n >= 4 else 0.87 if n >= 2 else 0.88
        rule = f"SGLang {prof.releases} default for {'TP x PP' if prof.fraction_rule == 'tp_table_large' else 'TP'} {n}"
        if prof.fraction_rule == "tp_table_13g" and gpu_mem_mib > 81920:
            frac = (gpu_mem_mib - 13 * 1024) / gpu_mem_mib  # not rounded
            rule = f"SGLang {prof.releases} default above 81920 MiB: (GPU MiB - 13 GiB) / GPU MiB"
        if prof.fraction_rule == "tp_table_large":
            if gpu_mem_mib > 81920:
                frac, rule = 0.88, f"SGLang {prof.releases} default above 81920 MiB"
            if gpu_mem_mib > 96 * 1024:
                frac = min(frac + 48 * 1024 * (1 - frac) / gpu_mem_mib, (gpu_mem_mib - 18 * 1024) / gpu_mem_mib)
                rule += ", raised for > 96 GiB: min(f + 48 GiB x (1 - f) / gpu, (gpu - 18 GiB) / gpu)"
    elif prof.fraction_rule == "reserved_tiers":
        base = 2.8 + ps / 10 if gib < 35 else 9.5 + ps / 2 if gib < 90 else 12 + ps / 2 if gib < 160 else 32
        reserved = base * 1024 + (prof.speculative_reserve_mib if speculative else 0) + (4096 if dp_attention > 1 else 0)
        frac = round((gpu_mem_mib - reserved) / gpu_mem_mib, 3)
        rule = f"SGLang {prof.releases} default: (GPU MiB - {reserved:.0f} MiB reserved) / GPU MiB"
    else:
        reserved = 512 + max(chunk if chunk > 0 else SGLANG_MAX_PREFILL_TOKENS, 2048) * 1.5 + ps / 8 * 1024
        reserved += 0 if eager and prof.decode_reserve_needs_graphs else max_bs * 2
        if dp_attention > 1:  # "DP attention needs more padding for some operations"
            reserved += max_bs * dp_attention * 3 + (max_bs * dp_attention * 1.5 if max_bs > 300 else 0)
        if graphs and prof.piecewise_optin == "sizes":  # 0.5.8 - 0.5.9: 8 MiB a size, MLA too
            reserved += graphs * 8
        elif graphs:  # MLA: "overhead is much higher than expected with fa3"
            reserved += 1536 if mla else graphs * 8
        if gib > 60:
            reserved = max(reserved, 10 * 1024)
        reserved += prof.speculative_reserve_mib if speculative else 0
        reserved += optin_mib  # 0.5.6 / 0.5.7 add it after the floor and the speculative reserve
        frac = round((gpu_mem_mib - reserved) / gpu_mem_mib, 3)
        rule = f"SGLang {prof.releases} default: (GPU MiB - {reserved:.0f} MiB reserved) / GPU MiB"
    if keep is not None and graphs and piecewise != "enforce":
        rule += (f", {graphs} {keep} prefill CUDA graphs kept for the multimodal {mm_arch} "
                 f"(multimodal_{'breakable' if keep == 'breakable' else 'piecewise'}_cuda_graph_supported_model_archs)")
    if vit is not None and prof.vlm_adjust:
        factor = vit_complexity_factor(*vit)
        frac *= factor
        rule += f", x {factor:.5f} for the vision tower (adjust_mem_fraction_for_vlm)"
    return SglangDefaults(gpu_mem_mib=gpu_mem_mib, gpu_mem_basis=gpu_mem_basis, chunked_prefill_size=chunk,
                          cuda_graph_max_bs=max_bs, prefill_graph_count=graphs, mem_fraction_static=frac,
                          reserved_mib=reserved, rule=rule)


def context_bytes(prof: SglangProfile, tp: int, vendor: str, nvlink: bool, gpu_name: str = "") -> tuple[int, str]:
    """Memory gone before SGLang's pre-load reading, per rank (fitted; see the profile constants)."""
    if tp <= 1:
        return prof.context_single, "one GPU: CUDA context and cuBLAS"
    if vendor == "AMD":
        return prof.context_tp_rocm, f"TP {tp} on ROCm: RCCL and custom all-reduce buffers"
    if nvlink and prof.context_tp_nvlink_sm100 is not None and sm_major_is_10(gpu_name):
        return prof.context_tp_nvlink_sm100, f"TP {tp} over NVLink on SM 10.x: NCCL and custom all-reduce buffers"
    if nvlink:
        return prof.context_tp_nvlink, f"TP {tp} over NVLink: NCCL and custom all-reduce buffers"
    return prof.context_tp_pcie, f"TP {tp} over PCIe: NCCL (custom all-reduce off)"


# SGLang lines whose transformers pin maps vision_config.num_hidden_layers onto Qwen3-VL's "depth" (the wheels' METADATA:
# transformers 4.54 - 4.57 up to 0.5.9, 5.3 / 5.12 / 5.19 from 0.5.10; transformers 4.57.1 Qwen3VLVisionConfig has no
# attribute_map, 5.x has {"num_hidden_layers": "depth"}).
_DEPTH_MAPPED = ("0.5.10", "0.5.14", "0.5.15", "0.5.17", "0.5.18", "0.5.20", "0.5.21")


def vit_shape(towers, version: str | None = None, model_type: str = "") -> tuple[int, int] | None:
    """(layers, hidden) of the first vision tower as adjust_mem_fraction_for_vlm reads vision_config:
    getattr(num_hidden_layers, 24) and hidden_size. kvplan takes the most-repeated Linear's count and in_features.
    None: no tower.

    Qwen-style ViTs (Qwen3-VL, Qwen3.5: the config field is ``depth``): SGLang finds no num_hidden_layers and takes
    24 unless the transformers it pins maps the name (``_DEPTH_MAPPED``, Qwen3-VL only: Qwen3.5's vision config
    is SGLang's own class, sglang/srt/configs/qwen3_5.py over configs/qwen3_vl.py, without the map). Evidence:
    sgl-project/sglang PR #11830 (Qwen2.5-VL-7B on a B200, 2025-11, depth 32) logs pools that fit 24 layers.
    ``version`` None: the tower's own depth. Worked numbers: MoonViT (Kimi-K2.5) -> (27, 1152);
    Qwen3-VL-8B -> (24, 1152) on 0.5.3, (27, 1152) on 0.5.20; Qwen3.5 -> (24, 1152) on every line."""
    for tower in towers:
        if tower.category != "vision":
            continue
        linears = [c for c in tower.components if isinstance(c, Linear) and c.count > 1]
        if linears:
            top = max(linears, key=lambda c: c.count)
            layers = top.count
            if version is not None and tower.name.startswith("visual (ViT") and not (
                    model_type.startswith("qwen3_vl") and version in _DEPTH_MAPPED):
                layers = 24
            return layers, top.in_features
    return None


# gpt-oss MXFP4 experts on SM 10.x (B200 / B300 / GB200 / GB300; torch major == 10, sglang utils is_sm100_supported):
# server_args (0.5.0 - 0.5.14) / arg_groups overrides (0.5.15+) turn --moe-runner-backend auto into flashinfer_mxfp4 for
# GptOssForCausalLM with an mxfp4 checkpoint, and layers/quantization/mxfp4.py Mxfp4MoEMethod.create_weights then pads
# the per-partition intermediate size and the hidden size: round_up(.., 256) in the 0.5.1 - 0.5.15 wheels, round_up(..,
# 128) from 0.5.17 ("256 was overly conservative"; 0.5.16 not read, planned with its 0.5.15 line). 0.5.6 - 0.5.8 keep the
# backend auto (no padding at 2880) under --enable-piecewise-cuda-graph. Read in the 0.5.1 / 0.5.2 / 0.5.3 / 0.5.6 /
# 0.5.8 / 0.5.10 / 0.5.14 / 0.5.15 / 0.5.17 / 0.5.18 / 0.5.20 wheels (2026-12); gpt-oss first ships in 0.5.0.
_GPT_OSS_FLASHINFER_PAD = {"0.4.8": 256, "0.5.3": 256, "0.5.4.post1": 256, "0.5.6": 256, "0.5.7": 256, "0.5.8": 256,
                           "0.5.10": 256, "0.5.14": 256, "0.5.15": 256, "0.5.17": 128, "0.5.18": 128, "0.5.20": 128,
                           "0.5.21": 128}
# The hidden size is padded to 256 whatever that table says: FusedMoE.__init__ (layers/moe/fused_moe_triton/layer.py,
# the 0.5.14 / 0.5.17 / 0.5.20 / 0.5.23 wheels) rounds hidden_size up to 256 for an mxfp4 checkpoint under
# --moe-runner-backend flashinfer_mxfp4 ("TODO maybe we should remove this `if`, since `Mxfp4MoEMethod` does another
# round-up logic") and hands that to create_weights, so from 0.5.17 gpt-oss's 2880 is 2944 intermediate but 3072 hidden.
SGLANG_MXFP4_HIDDEN_PAD = 256
# The sm120 cards (RTX 5090, RTX PRO 6000 Blackwell): what SGLang's gpt-oss override picks for --moe-runner-backend auto
# with an mxfp4 checkpoint, and the padding its Mxfp4MoEMethod.create_weights gives (intermediate, hidden):
# * 0.5.3 - 0.5.9: no sm120 rule (the backend of the install: not modelled; planned unpadded);
# * 0.5.10 - 0.5.13 (server_args.py "Detected SM120 ... enabling triton_kernel MOE kernel."): triton_kernels, whose
#   swizzled value / scale layouts are not read here: planned unpadded;
# * 0.5.14 - 0.5.16 (server_args.py, 0.5.15 arg_groups/overrides.py: "... enabling Marlin MOE kernel."): Marlin,
#   intermediate round_up(.., 128), hidden round_up(.., 256) (mxfp4.py "if self.use_marlin"), repacked in place;
# * 0.5.17 - 0.5.23 (overrides.py, 0.5.20+ arg_groups/model_overrides/gpt_oss.py: "... enabling FlashInfer CUTLASS
#   MXFP4 MOE kernel."): flashinfer_mxfp4 -> _fi_kernel "cutlass_sm120": loaded unpadded, then
#   _process_weights_for_sm120_cutlass rebuilds w13 / w2 / scales / biases at round_up(intermediate, 128) and
#   round_up(hidden, 128) of FusedMoE's 256-rounded hidden (the unpadded buffers are freed).
# Not modelled (the source does not fix them): Hopper, where gpt-oss takes triton_kernel only when the triton_kernels
# package is installed (gpt_oss override: ep_size 1, is_triton_kernels_available(); not a dependency of the sglang
# wheel) and pads the intermediate to 64 before triton_kernels' Hopper swizzle; ROCm, where the aiter MXFP4 path
# (intermediate 256, 128 with SGLANG_AITER_K3_OPT; hidden 256) runs only with SGLANG_USE_AITER set. Read 2026-12.
_GPT_OSS_SM120_PAD = {"0.5.14": 128, "0.5.15": 128, "0.5.17": 128, "0.5.18": 128, "0.5.20": 128, "0.5.21": 128}


def sm_major_is_10(gpu_name: str) -> bool:
    """torch.cuda.get_device_capability()[0] == 10 (sglang is_sm100_supported): B200, B300, GB200, GB300 (sm100 /
    sm103); the sm120 cards (RTX 5090, RTX PRO 6000) are not."""
    return gpu_name.upper().startswith(("B200", "B300", "GB200", "GB300"))


def sm_major_is_12(gpu_name: str) -> bool:
    """SM 12.x (sglang is_sm120_supported): the GeForce RTX 50 series and the RTX PRO Blackwell cards."""
    return gpu_name.upper().startswith(("RTX-50", "RTX-PRO-"))


def gpt_oss_mxfp4_pad(gpu_name: str, version: str, piecewise: str | None = None) -> tuple[int, int, str] | None:
    """(intermediate align, hidden align, MoE backend) SGLang pads gpt-oss's MXFP4 experts to on this GPU, or None.
    Worked examples: ("B200", "0.5.3") -> (256, 256, flashinfer_mxfp4); ("B200", "0.5.20") -> (128, 256, ...);
    ("RTX-PRO-6000", "0.5.14") -> (128, 256, Marlin); ("H100-SXM", "0.5.20") -> None."""
    if sm_major_is_10(gpu_name) and version in _GPT_OSS_FLASHINFER_PAD and not (
            version in ("0.5.6", "0.5.7", "0.5.8") and piecewise == "enable"):
        return _GPT_OSS_FLASHINFER_PAD[version], SGLANG_MXFP4_HIDDEN_PAD, "flashinfer_mxfp4 (trtllm-gen)"
    if sm_major_is_12(gpu_name) and version in _GPT_OSS_SM120_PAD:
        return (_GPT_OSS_SM120_PAD[version], SGLANG_MXFP4_HIDDEN_PAD,
                "Marlin" if version in ("0.5.14", "0.5.15") else "flashinfer_mxfp4 (CUTLASS sm120)")
    return None


def gpt_oss_mxfp4_pad_bytes(spec, tp: int, ep: bool, layers, weight_format: str | None, gpu_name: str, version: str,
                            piecewise: str | None = None) -> int:
    """Bytes the MXFP4 MoE padding adds to a rank's gpt-oss experts (0 where it does not apply; gpt_oss_mxfp4_pad).

    Per local expert, for intermediate i (I / tp, whole under EP) and hidden h, rounded up to their aligns:
    w13 [2i, h/2] u8 + scale [2i, h/32] u8 + bias [2i] bf16, w2 [h, i/2] u8 + scale [h, i/32] u8 + bias [h] bf16.
    Worked number: gpt-oss-20b on one B200, sglang 0.5.3 (align 256): 2880 -> 3072 both ways, 15,058,944 - 13,236,480 =
    1,822,464 B an expert x 32 experts x 24 layers = 1,399,652,352 B (1.30 GiB); from 0.5.17 (and on the sm120 cards
    from 0.5.14) 2944 x 3072: 2 x 2944 x (1536 + 96 + 2) + 3072 x (1472 + 92 + 2) = 14,431,744 B an expert."""
    fmt = weight_format or spec.quantization or ""
    pad = gpt_oss_mxfp4_pad(gpu_name, version, piecewise)
    if spec.model_type != "gpt_oss" or fmt != "mxfp4" or pad is None:
        return 0
    align_i, align_h, _ = pad

    def size(i: int, h: int) -> int:
        return 2 * i * (h // 2) + 2 * i * (h // 32) + 2 * i * 2 + h * (i // 2) + h * (i // 32) + h * 2

    extra = 0
    for layer, n in layers:
        if layer.experts is None:
            continue
        down = next((c for c in layer.experts.linears if c.name.endswith("down_proj")), layer.experts.linears[-1])
        experts, inter, hidden = layer.experts.num_experts, down.in_features, spec.hidden_size
        local_e, local_i = (cdiv(experts, tp), inter) if ep else (experts, cdiv(inter, tp))
        padded = size(cdiv(local_i, align_i) * align_i, cdiv(hidden, align_h) * align_h)
        extra += n * local_e * (padded - size(local_i, hidden))
    return extra


SGLANG_MLA_ABSORB_BYTES = 2  # w_kc / w_vc element bytes on CUDA: block_quant_dequant(..., torch.bfloat16) or a bf16 copy


def mla_absorb_bytes(spec, tp: int, pp: int, stage: int, weight_format: str | None, vendor: str,
                     pp_split: tuple[int, ...] | None = None, attn_tp: int | None = None) -> int:
    """The ``w_kc`` / ``w_vc`` tensors SGLang's MLA attention keeps beside ``kv_b_proj`` on one CUDA rank (bytes).

    Read in the 0.5.10 / 0.5.21 wheels (models/deepseek_common/deepseek_weight_loader.py ``post_load_weights``, run by
    DeepseekV2 / V3 / V3.2, Kimi-K2 and GLM-5's GlmMoeDsaForCausalLM inside load_weights, so before "Load weight
    end"): per MLA layer the kv_b_proj weight (a 128 x 128 block-FP8 one dequantized to bf16 first; per-tensor FP8
    stays FP8; a bf16 one as is) is split into w_kc [local heads, qk_nope, kv_lora_rank] and w_vc [local heads,
    kv_lora_rank, v_head], each made contiguous (new tensors; ``self.w_kc`` starts None); kv_b_proj itself stays
    loaded (sglang PR #28876, 2026-06, open). SGL_USE_DEEPGEMM_BMM (off by default) keeps the FP8 blocks instead.
    Local heads = num_attention_heads / the attention-TP size (TP / the DP-attention size: whole under
    --enable-dp-attention --dp TP). On ROCm a block-FP8 kv_b_proj is re-quantized per tensor instead
    (block_quant_to_tensor_quant: FP8 copies, 1 B); GLM's bf16 kv_b_proj re-quantized to FP8 on gfx95 only under
    SGLANG_USE_AITER=1 (off by default) is not modelled (2 B). Other vendors: 0.

    bytes = sum over this stage's MLA / DSA layers of kv_lora_rank x heads / tp x (qk_nope + v_head) x e,
    e = 1 for a per-tensor "fp8" kv_b_proj (and any FP8 one on AMD), else 2.
    Worked number: GLM-5 / 5.2 at TP 8: 512 x 64 / 8 x (192 + 256) x 2 B = 3,670,016 B a layer, x 78 = 286,261,248 B
    = 0.267 GiB (GLM-5.2-FP8 on 8 x RTX PRO 6000: "mem usage=89.44 GB", kvplan 88.36 -> 88.63)."""
    if vendor not in ("NVIDIA", "AMD"):
        return 0
    from kvplan.vllm_layouts import mla_kv_b_groups

    fp8 = ("fp8", "fp8-block") if vendor == "AMD" else ("fp8",)
    total = 0
    for copies, cache, formats in mla_kv_b_groups(spec, pp, stage, weight_format, pp_split):
        elem = 1 if formats and all(f in fp8 for f in formats) else SGLANG_MLA_ABSORB_BYTES
        heads = cache.num_attention_heads // (attn_tp or tp)
        total += copies * cache.kv_lora_rank * heads * (cache.qk_nope_head_dim + cache.v_head_dim) * elem
    return total


def layout_extra_bytes(spec, tp: int, pp: int, stage: int, ep: bool, dp: int, weight_format: str | None,
                       vendor: str, loads_tower: bool, pp_split: tuple[int, ...] | None = None, gpu_name: str = "",
                       version: str = "", piecewise: str | None = None, attn_tp: int | None = None) -> tuple[int, str]:
    """Bytes SGLang holds on a rank beyond the checkpoint's tensors as kvplan.parallel lays them out.

    * MLA's w_kc / w_vc beside kv_b_proj (``mla_absorb_bytes``; ``attn_tp``: the attention-TP size, ``tp`` if None).

    * gpt-oss MXFP4 experts on SM 10.x (flashinfer_mxfp4) and SM 12.x from 0.5.14 (Marlin, then FlashInfer CUTLASS;
      ``gpt_oss_mxfp4_pad_bytes``): intermediate padded to 256 (128 from 0.5.17; 128 on SM 12.x), hidden to 256.

    * ROCm, compressed-tensors W4A16 experts (CompressedTensorsWNA16TritonMoE, sglang 0.5.10 wheel
      schemes/compressed_tensors_wNa16_moe.py): the int32 ``w13_weight_g_idx`` / ``w13_g_idx_sort_indices``
      [E, hidden] and ``w2_weight_g_idx`` / ``w2_g_idx_sort_indices`` [E, inter / tp] its parent creates stay
      allocated (the CUDA Marlin path empties them without act-order): E x (2 hidden + 2 inter / tp) x 4 B a layer.
    * MoonViT (Kimi-K2.5 / Kimi-VL, models/kimi_vl_moonvit.py MLP2): the encoder MLP is a plain nn.Linear,
      whole on every rank (its attention is TP-sharded as kvplan prices it).

    Worked number: Kimi-K2.5 int4 at TP8 on MI355X: 60 x 384 x (2 x 7168 + 2 x 256) x 4 B = 1.274 GiB, and
    27 x (1152 x 4304 x 2 + 4304 + 1152) x 2 B x 7/8 ~ 0.44 GiB of MoonViT MLP.
    """
    extra, why = 0, []
    fmt = weight_format or spec.quantization or ""
    absorb = mla_absorb_bytes(spec, tp, pp, stage, weight_format, vendor, pp_split, attn_tp)
    if absorb:
        extra += absorb
        why.append("MLA keeps w_kc / w_vc beside kv_b_proj (models/deepseek_common/deepseek_weight_loader.py "
                   "post_load_weights)")
    pad = gpt_oss_mxfp4_pad_bytes(spec, tp, ep, stage_distinct(spec, pp, stage, pp_split), weight_format, gpu_name,
                                  version, piecewise)
    if pad:
        extra += pad
        align_i, align_h, backend = gpt_oss_mxfp4_pad(gpu_name, version, piecewise)
        why.append(f"the {backend} MoE pads gpt-oss experts' intermediate size to {align_i} and hidden size to "
                   f"{align_h} (layers/quantization/mxfp4.py, layers/moe/fused_moe_triton/layer.py)")
    if vendor == "AMD" and fmt.startswith("w4a16"):
        ranks = tp * dp
        g_idx = 0
        for layer, n in stage_distinct(spec, pp, stage, pp_split):
            if layer.experts is None:
                continue
            down = next((c for c in layer.experts.linears if c.name.endswith("down_proj")), layer.experts.linears[-1])
            experts, inter = layer.experts.num_experts, down.in_features
            local_e, local_i = (cdiv(experts, ranks), inter) if ep else (experts, cdiv(inter, ranks))
            g_idx += n * local_e * (2 * spec.hidden_size + 2 * local_i) * 4
        if g_idx:
            extra += g_idx
            why.append("W4A16 Triton MoE keeps its int32 g_idx / sort-index tensors")
    if loads_tower and tp > 1:
        elem = 4 if spec.dtype == "fp32" else 2
        mlp = 0
        for tower in spec.towers:
            if "MoonViT" not in tower.name:
                continue
            for c in tower.components:
                if isinstance(c, Linear) and ".mlp." in c.name:
                    whole = c.count * (c.out_features * c.in_features + (c.out_features if c.bias else 0))
                    shard = (c.count * cdiv(c.out_features, tp) * (c.in_features + (1 if c.bias else 0))
                             if c.shard == "column" else c.count * cdiv(c.in_features, tp) * c.out_features + c.bias_numel)
                    mlp += (whole - shard) * elem
        if mlp:
            extra += mlp
            why.append("MoonViT's MLP is whole on every rank")
    return extra, "; ".join(why)


class SglangBudget(BaseModel):
    """One rank's SGLang budget: what it resolves, what it reads before loading, and the pool it leaves."""

    model_config = ConfigDict(frozen=True)
    settings: SglangDefaults
    context: int
    context_why: str
    pre_load: int  # Load weight begin. avail mem
    overhead: int  # beyond the weights in "mem usage"
    weights_loaded: int  # weights + overhead: "mem usage"
    keep_free: int  # pre x (1 - mem_fraction_static)
    mm_reserve: int = 0  # 0.5.18+ multimodal embedding-cache reserve out of rest
    draft_vocab_copies: int = 0  # 0.5.14+ MTP draft's embed / lm_head copies, resident while rest is profiled
    pool: int  # rest


# ROCm: server_args.py _handle_attention_backend_compatibility (0.5.6 / 0.5.8 / 0.5.10 / 0.5.14 / 0.5.15 / 0.5.17 /
# 0.5.18 wheels; arg_groups/attention_hook.py in the 0.5.20 wheel) multiplies mem_fraction_static, the default or the one asked for, by 0.85 when the attention backend
# is aiter and the model's context_len > 8192 ("to reserve non-static workspace": the aiter paged-decode workspace is
# allocated after the KV pool, sgl-project/sglang PR #36563). aiter is the default backend on HIP for every non-MLA model
# and for MLA models with 16 or 128 KV heads a rank (_get_default_attn_backend: model_config.get_num_kv_heads(tp_size));
# DSA models run the nsa backend (the caller leaves them out). Absent from the 0.5.3 wheel; 0.5.4.post1 - 0.5.5 not read
# (the 0.5.3 / 0.5.4.post1 lines: not applied). An explicit --attention-backend is not modelled. Read 2026-12.
# 0.5.20+ (0.5.20 / 0.5.23 wheels, arg_groups/attention_hook.py; environ.py EnvBool(False), absent from the 0.5.18 wheel):
# the env SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION (true / 1 / yes / y, any case) keeps a --mem-fraction-static the
# operator gave as it is ("explicit_mem_fraction = _raw_input.get('mem_fraction_static') is not None"; the warning
# "... SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION is set, so mem_fraction_static=%.3f is used as-is"); the default fraction
# is still scaled.
_AITER_HAIRCUT_LINES = ("0.5.6", "0.5.7", "0.5.8", "0.5.10", "0.5.14", "0.5.15", "0.5.17", "0.5.18", "0.5.20",
                        "0.5.21")
_AITER_HONOR_ENV_LINES = ("0.5.20", "0.5.21")
SGLANG_AITER_HONOR_ENV = "SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION"
SGLANG_ENV_TRUE = ("true", "1", "yes", "y")  # environ.py EnvBool.parse (an unreadable value warns and keeps False)
SGLANG_AITER_HAIRCUT = 0.85


def aiter_haircut(version: str, vendor: str, mla: bool, kv_heads: int, tp: int, context_len: int,
                  honor_explicit: bool = False, explicit_fraction: bool = False) -> bool:
    """Whether SGLang scales mem_fraction_static by 0.85 for the aiter attention backend (ROCm, context_len > 8192).

    ``kv_heads``: the config's num_key_value_heads (MLA checkpoints keep the attention head count there);
    ``honor_explicit``: SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION set, ``explicit_fraction``: --mem-fraction-static given
    (both: no haircut from 0.5.20). Worked numbers: Qwen3-0.6B on an MI355X, 0.5.17, context 40960 -> True
    (--mem-fraction-static 0.6 becomes 0.51); the same on 0.5.20 with the env set -> False (0.6 kept), with the env
    and no --mem-fraction-static -> True; Kimi-K2.5 at TP8 (64 KV heads -> 8 a rank: triton) -> False; any model at
    --context-length 8192 -> False."""
    if vendor != "AMD" or version not in _AITER_HAIRCUT_LINES or context_len <= 8192:
        return False
    if honor_explicit and explicit_fraction and version in _AITER_HONOR_ENV_LINES:
        return False
    return not mla or max(1, kv_heads // max(tp, 1)) in (16, 128)


def budget(prof: SglangProfile, gpu_name: str, vendor: str, memory_bytes: int, interconnect: str, weights: int,
           tp: int, pp: int = 1, mla: bool = False, dp_attention: int = 1, speculative: bool = False,
           vit: tuple[int, int] | None = None, eager: bool = False, disable_custom_all_reduce: bool = False,
           chunked_prefill_size: int | None = None, mem_fraction_static: float | None = None,
           weights_measured: bool = False, piecewise: str | None = None,
           aiter: bool = False, draft_vocab_copies: int = 0, mm_arch: str = "") -> SglangBudget:
    """The budget of one rank: defaults, the pre-load reading, the loaded weights and the KV pool (bytes).

    ``weights_measured``: the weights are a typed-in "mem usage" (no overhead added); ``aiter``: aiter_haircut holds;
    ``draft_vocab_copies``: an MTP draft's own vocab tables (mtp_draft_vocab_copy_bytes), charged to rest.
    Worked number: 0.5.20,
    H100, TP1, 29.03 GiB of weights -> pre 78.45, loaded 29.21, keep free 13.34, pool 35.90 GiB.
    """
    mib, basis = gpu_capacity_mib(gpu_name, vendor, memory_bytes)
    settings = default_settings(prof, mib, basis, tp, pp, mla, dp_attention, speculative, vit, vendor == "AMD", eager,
                                chunked_prefill_size, None, mem_fraction_static, piecewise, mm_arch)
    if aiter:  # aiter_haircut: applied after the default (or asked-for) fraction
        settings = settings.model_copy(update={
            "mem_fraction_static": settings.mem_fraction_static * SGLANG_AITER_HAIRCUT,
            "rule": f"{settings.rule}, x {SGLANG_AITER_HAIRCUT} for the aiter attention backend at context_len > 8192 "
                    "(_handle_attention_backend_compatibility)"})
    nvlink = "NVLINK" in interconnect.upper() and not disable_custom_all_reduce
    ctx, why = context_bytes(prof, tp, vendor, nvlink, gpu_name)
    pre = memory_bytes - ctx
    overhead = 0 if weights_measured else SGLANG_LOAD_OVERHEAD_BYTES
    loaded = weights + overhead
    keep_free = int(pre * (1 - settings.mem_fraction_static))
    mm = prof.mm_reserve_mib * MiB if vit is not None else 0
    return SglangBudget(settings=settings, context=ctx, context_why=why, pre_load=pre, overhead=overhead,
                        weights_loaded=loaded, keep_free=keep_free, mm_reserve=mm,
                        draft_vocab_copies=draft_vocab_copies, pool=pre - loaded - keep_free - mm - draft_vocab_copies)


# 0.5.22 / 0.5.23 (arg_groups/memory_hook.py handle_gpu_memory_settings, read in their wheels 2026-12; not in 0.5.20 /
# 0.5.21): a decode cuda-graph max_bs left at its GPU-tier default is lowered to --max-running-requests when that is
# given and smaller, before reserve_for_graph_mb prices max_bs x 2 MiB (and the DP-attention padding by max_bs). The
# 0.5.21 line plans 0.5.21; decode_graph_cap_note names the fraction 0.5.22 - 0.5.23 take instead.
DECODE_GRAPH_CAP_RELEASES = "0.5.22 - 0.5.23"


def _line_defaults(prof: SglangProfile, gpu_name: str, vendor: str, memory_bytes: int, tp: int, pp: int, mla: bool,
                   dp_attention: int, speculative: bool, vit: tuple[int, int] | None, eager: bool,
                   chunked_prefill_size: int | None, piecewise: str | None, mm_arch: str,
                   cuda_graph_max_bs: int | None = None) -> SglangDefaults:
    """default_settings of ``prof`` (the plan's line, or a variant of it a line note compares with) for the GPU's
    capacity, with no --mem-fraction-static: what the line notes below set against each other."""
    mib, basis = gpu_capacity_mib(gpu_name, vendor, memory_bytes)
    return default_settings(prof, mib, basis, tp, pp, mla, dp_attention, speculative, vit, vendor == "AMD", eager,
                            chunked_prefill_size, cuda_graph_max_bs, None, piecewise, mm_arch)


def decode_graph_cap_note(prof: SglangProfile, gpu_name: str, vendor: str, memory_bytes: int, tp: int, pp: int = 1,
                          mla: bool = False, dp_attention: int = 1, speculative: bool = False,
                          vit: tuple[int, int] | None = None, eager: bool = False,
                          chunked_prefill_size: int | None = None, mem_fraction_static: float | None = None,
                          piecewise: str | None = None, max_running_requests: int | None = None,
                          mm_arch: str = "") -> str | None:
    """A warning, on the 0.5.21 line only, when 0.5.22 - 0.5.23 would reserve less than 0.5.21 (the decode graph
    max_bs capped at an explicit --max-running-requests R below the tier's default); None otherwise (no R, an explicit
    --mem-fraction-static, R at or above max_bs, the same fraction either way). Worked number: H100 (81559 MiB), TP1,
    R 64: max_bs 256 -> 64, reserve 13904 -> 13520 MiB, mem_fraction_static 0.830 -> 0.834."""
    if prof.version != "0.5.21" or max_running_requests is None or mem_fraction_static is not None:
        return None
    args = (gpu_name, vendor, memory_bytes, tp, pp, mla, dp_attention, speculative, vit, eager, chunked_prefill_size,
            piecewise, mm_arch)
    base = _line_defaults(prof, *args)
    if base.cuda_graph_max_bs <= max_running_requests:
        return None
    capped = _line_defaults(prof, *args, cuda_graph_max_bs=max_running_requests)
    if capped.mem_fraction_static == base.mem_fraction_static:
        return None
    return (f"SGLang {DECODE_GRAPH_CAP_RELEASES} (arg_groups/memory_hook.py) lower the decode CUDA-graph max_bs from "
            f"{base.cuda_graph_max_bs} to --max-running-requests {max_running_requests}: they reserve "
            f"{capped.reserved_mib:.0f} MiB instead of {base.reserved_mib:.0f} and default mem_fraction_static to "
            f"{capped.mem_fraction_static:.3f} instead of {base.mem_fraction_static:.3f}. This plan is SGLang "
            f"0.5.21's; for 0.5.22 - 0.5.23 plan with --mem-fraction-static {capped.mem_fraction_static:.3f}")


# The 0.5.15 line plans 0.5.15, whose breakable rules turn the prefill graphs off for every multimodal model; 0.5.16
# (server_args.py, read in its wheel 2026-12) keeps them for the breakable allowlist (Qwen3.5) and switches the
# piecewise one (Kimi-K2.5 ...) to tc_piecewise: mm_line_note names what 0.5.16 reserves instead.
_MM_0516 = {"mm_keep_breakable": _MM_BCG_0516, "mm_keep_piecewise": _MM_PW_0516}
# SGLang's --language-model-only came with 0.5.18 (server_args.py; absent from the 0.5.17 wheel).
LANGUAGE_MODEL_ONLY_FROM = ("0.5.18", "0.5.20", "0.5.21")


def mm_line_note(prof: SglangProfile, gpu_name: str, vendor: str, memory_bytes: int, tp: int, pp: int = 1,
                 mla: bool = False, dp_attention: int = 1, speculative: bool = False,
                 vit: tuple[int, int] | None = None, eager: bool = False, chunked_prefill_size: int | None = None,
                 mem_fraction_static: float | None = None, piecewise: str | None = None, mm_arch: str = "") -> str | None:
    """A warning, on the 0.5.15 line only, when 0.5.16 keeps the prefill graphs this multimodal model loses on 0.5.15
    (and so reserves more); None otherwise. Worked number: Qwen3.5-27B on an H100, TP1: 0.5.15 reserves 13440 MiB,
    0.5.16 13904 (58 breakable graphs x 8 MiB = 464) -> mem_fraction_static 0.835 x 0.92477 = 0.77218 vs 0.76756."""
    if prof.version != "0.5.15" or vit is None or not mm_arch or mem_fraction_static is not None:
        return None
    args = (gpu_name, vendor, memory_bytes, tp, pp, mla, dp_attention, speculative, vit, eager, chunked_prefill_size,
            piecewise, mm_arch)
    base, later = _line_defaults(prof, *args), _line_defaults(prof.model_copy(update=_MM_0516), *args)
    if later.reserved_mib == base.reserved_mib:
        return None
    mode = mm_prefill_backend(prof.model_copy(update=_MM_0516), mm_arch)
    return (f"SGLang 0.5.16 keeps {later.prefill_graph_count} {mode} prefill CUDA graphs for the multimodal {mm_arch} "
            f"(0.5.15 turns them off for every multimodal model): it reserves {later.reserved_mib:.0f} MiB instead of "
            f"{base.reserved_mib:.0f} and defaults mem_fraction_static to {later.mem_fraction_static:.4f} instead of "
            f"{base.mem_fraction_static:.4f}. This plan is SGLang 0.5.15's; for 0.5.16 plan with --mem-fraction-static "
            f"{later.mem_fraction_static:.3f} or pick the 0.5.17 line")


def pp_line_note(prof: SglangProfile, gpu_name: str, vendor: str, memory_bytes: int, tp: int, pp: int = 1,
                 mla: bool = False, dp_attention: int = 1, speculative: bool = False,
                 vit: tuple[int, int] | None = None, eager: bool = False, chunked_prefill_size: int | None = None,
                 mem_fraction_static: float | None = None, piecewise: str | None = None, mm_arch: str = "") -> str | None:
    """A warning, on the 0.5.18 line under PP only, when 0.5.19 (which turns the default breakable prefill graphs off
    under pp_size > 1) reserves less than the 0.5.18 this line plans; None otherwise. Worked number: PP2 x TP8 on an
    H200: 0.5.18 reserves 15872 + 58 x 8 = 16336 MiB (0.886), 0.5.19 15872 (0.890)."""
    if prof.version != "0.5.18" or pp <= 1 or mem_fraction_static is not None or piecewise is not None:
        return None
    args = (gpu_name, vendor, memory_bytes, tp, pp, mla, dp_attention, speculative, vit, eager, chunked_prefill_size,
            piecewise, mm_arch)
    base = _line_defaults(prof, *args)
    later = _line_defaults(prof.model_copy(update={"prefill_off": ("pp", *prof.prefill_off)}), *args)
    if later.reserved_mib == base.reserved_mib:
        return None
    return (f"SGLang 0.5.19 turns the default breakable prefill CUDA graphs off under pipeline parallelism (0.5.18 "
            f"keeps {base.prefill_graph_count}): it reserves {later.reserved_mib:.0f} MiB instead of "
            f"{base.reserved_mib:.0f} and defaults mem_fraction_static to {later.mem_fraction_static:.4f} instead of "
            f"{base.mem_fraction_static:.4f}. This plan is SGLang 0.5.18's; for 0.5.19 plan with --mem-fraction-static "
            f"{later.mem_fraction_static:.3f}")


def pool_bytes(pre_load: int, weights_loaded: int, mem_fraction_static: float) -> int:
    """rest = available - pre x (1 - f), with available = pre - weights_loaded (bytes).
    Worked number: pre 78.48 GiB, weights + overhead 29.15 GiB, f 0.83 -> 49.33 - 13.34 = 35.99 GiB."""
    return pre_load - weights_loaded - int(pre_load * (1 - mem_fraction_static))


# Speculative decoding (--speculative-algorithm). The draft worker's KV shares the target's token slots; how SGLang
# sizes them changed with 0.5.14 (the 0.5.13 / 0.5.14 wheels, 2026-12):
# - 0.5.14+ (managers/scheduler.py init_model_worker: maybe_init_draft_worker, then init_memory_pools): the draft's
#   weights load before the target's pool is profiled, so "available" is after both, and the cell grows by the draft's
#   layers (model_executor/pool_configurator.py DefaultPoolConfigurator: cell += int(cell x eagle_draft_num_layers /
#   num_layers), eagle_draft_num_layers = num_nextn_predict_layers): DeepSeek-V3 at bf16 70,272 -> 71,424 B a token.
#   That is kvplan's plan (the MTP layers in the weights and in the cell, kvplan.plan), and the draft's own vocab
#   tables, resident while the pool is profiled (mtp_draft_vocab_copy_bytes, below).
# - through 0.5.13 (model_runner.initialize -> init_memory_pool inside the target's TpModelWorker): the target's pool is
#   profiled before the draft worker exists; the draft's weights and its own pool (same tokens x its cell) then come out
#   of the memory mem_fraction_static leaves; in the 0.5.6 wheel the target's pool also grows by a headroom of
#   max_num_reqs x (steps x topk + draft tokens) + 100 tokens (draft_runner_cache_size; the 0.5.8 wheel: none). Not
#   modelled: refused (speculative_refusal).
SPECULATIVE_FROM = "0.5.14"  # the first SGLANG_PROFILES line kvplan plans speculative decoding for
# The MTP draft worker's own start-up (0.5.14 - 0.5.23 wheels, read 2026-12): managers/scheduler.py init_model_worker
# runs init_tp_model_worker (the target's "Load weight begin / end"), maybe_init_draft_worker (speculative/
# eagle_worker_v2.py EagleDraftWorker.__init__ builds a TpModelWorker(is_draft_worker=True): a second "Load weight
# begin / end", type = the NextN class configs/model_config.py names for the draft), then init_memory_pools: the
# target's pool ("KV Cache is allocated", "Memory pool end"), then the draft's (EagleDraftWorker.alloc_memory_pool: the
# same memory_pool_config, so the same #tokens, over its num_nextn_predict_layers layers; it shares the target's
# ReqToTokenPool and allocator) and its own "Memory pool end". Only then does alloc_memory_pool call init_lm_head ->
# set_embed_and_head, which deletes the draft's own embed_tokens / lm_head and empties the cache: those two bf16 vocab
# tables (models/deepseek_nextn.py DeepseekModelNextN.embed_tokens, DeepseekV3ForCausalLMNextN.lm_head; never loaded:
# deepseek_weight_loader.py skips "shared_head.head" / "embed_tokens") are resident when the target's pool is profiled,
# so they come out of its rest (sgl-project/sglang issue #36452, PRs #32468 / #35996 / #37155 / #38364, none merged in
# the wheels read). Under DP attention the embedding is split over the attention-TP group (get_embedding_tp_kwargs
# use_attn_tp_group), the head over the whole TP group (enable_dp_lm_head off by default).
SGLANG_VOCAB_PADDING = 64  # layers/vocab_parallel_embedding.py DEFAULT_VOCAB_PADDING_SIZE
# The draft architecture configs/model_config.py gives the checkpoint's MTP layers, by kvplan model_type; GLM-5
# (glm_moe_dsa) is served as DeepseekV3ForCausalLMNextN in 0.5.14 / 0.5.15 and as GlmMoeDsaForCausalLMNextN from 0.5.17.
_MTP_DRAFT_ARCH = {"deepseek_v3": "DeepseekV3ForCausalLMNextN", "deepseek_v32": "DeepseekV3ForCausalLMNextN",
                   "deepseek_v2": "DeepseekV3ForCausalLMNextN", "glm4_moe": "Glm4MoeForCausalLMNextN",
                   "glm4_moe_lite": "Glm4MoeLiteForCausalLMNextN", "glm_moe_dsa": "GlmMoeDsaForCausalLMNextN",
                   "qwen3_5_text": "Qwen3_5ForCausalLMMTP", "qwen3_5_moe_text": "Qwen3_5ForCausalLMMTP",
                   # models/deepseek_v4_nextn.py (0.5.14 - 0.5.23): its embed_tokens is VocabParallelEmbedding(enable_tp=
                   # not is_dp_attention_enabled()), whole on every rank under DP attention; lm_head split over TP
                   "deepseek_v4": "DeepseekV4ForCausalLMNextN"}


def mtp_draft_arch(model_type: str, version: str) -> str:
    """The ``type=`` SGLang's draft worker logs for a checkpoint's MTP layers. Worked example: ("glm_moe_dsa",
    "0.5.14") -> "DeepseekV3ForCausalLMNextN"; ("glm_moe_dsa", "0.5.20") -> "GlmMoeDsaForCausalLMNextN"."""
    if model_type == "glm_moe_dsa" and version in ("0.5.14", "0.5.15"):
        return "DeepseekV3ForCausalLMNextN"
    return _MTP_DRAFT_ARCH.get(model_type, "DeepseekV3ForCausalLMNextN")


def mtp_draft_vocab_copy_bytes(vocab_size: int, hidden_size: int, tp: int, attn_tp: int | None = None,
                               elem_bytes: int = 2, tied: bool = False) -> int:
    """Bytes of the MTP draft's own embed_tokens + lm_head on one rank (freed only after the KV pools are sized).

    Per table: pad(vocab, 64) / split x hidden x elem_bytes (the model dtype: VocabParallelEmbedding / ParallelLMHead
    get no quant method, UnquantizedEmbeddingMethod); the embedding split over ``attn_tp`` (DP attention) or ``tp``,
    the head over ``tp``. Worked numbers: DeepSeek-V3 at TP 8: 2 x 129,280 / 8 x 7,168 x 2 = 463,339,520 B (0.43 GiB);
    Qwen3.8-27B at TP 2 (vocab 248,320, hidden 5,120): 2 x 124,160 x 5,120 x 2 = 2,542,796,800 B = 2.37 GiB, the
    "~2.37 GB/rank of that is the two un-shared bf16 placeholders" of sgl-project/sglang PR #32468 (0.5.19).
    ``tied``: the draft's lm_head is its embed_tokens (Qwen3_5ForCausalLMMTP with tie_word_embeddings, models/
    qwen3_5_mtp.py 0.5.17): one table. Qwen3.5-0.8B at TP 1 (vocab 248,320, hidden 1,024): 248,320 x 1,024 x 2 =
    508,559,360 B."""
    padded = cdiv(vocab_size, SGLANG_VOCAB_PADDING) * SGLANG_VOCAB_PADDING
    embed_split = attn_tp or tp
    return (cdiv(padded, embed_split) + (0 if tied else cdiv(padded, tp))) * hidden_size * elem_bytes


class SglangDraft(BaseModel):
    """What SGLang's MTP draft worker logs (0.5.14+): its load (the MTP layers' shard + the vocab copies) and its pool.
    ``k_bytes_per_token`` / ``v_bytes_per_token``: its own layers' cell (MLA: all in k)."""

    model_config = ConfigDict(frozen=True)
    arch: str
    mtp_bytes: int  # the MTP layers' shard, counted in the plan's weights
    vocab_copy_bytes: int  # embed_tokens + lm_head copies, in its mem usage, freed after the pools
    k_bytes_per_token: int
    v_bytes_per_token: int
    # the torch dtype its pool line names when it differs from the target's (a 16-bit cache of a draft whose own
    # torch_dtype differs: --dtype auto takes each ModelConfig's own, e.g. SpecForge's float16 Llama EAGLE3 head)
    kv_dtype: str | None = None

    @property
    def loaded(self) -> int:
        return self.mtp_bytes + self.vocab_copy_bytes


# A separate draft (--speculative-algorithm EAGLE3 / EAGLE / STANDALONE with --speculative-draft-model-path), read in the
# 0.5.14 / 0.5.20 / 0.5.23 wheels (2026-12): the target's pool cell is scaled by the draft's layer count, assuming each
# draft layer costs what a target layer costs ("Assumes draft and target share the same per-layer KV size",
# model_executor/pool_configurator.py DefaultPoolConfigurator; the draft's layer count from model_runner.py 0.5.14 /
# model_runner_components/spec_aux_hidden_state.py 0.5.20+: the draft config's num_nextn_predict_layers, else
# max(num_hidden_layers, num_attention_layers)); the draft worker then allocates its own pool at that #tokens with its own
# config's cell. The draft's weights load before the pool is profiled (EagleDraftWorker / StandaloneDraftWorker build a
# TpModelWorker at the target's TP). An EAGLE3 head (models/llama_eagle3.py LlamaForCausalLMEagle3) builds its own
# embed_tokens [vocab, h] (VocabParallelEmbedding) and, without draft_vocab_size in its config, a full-vocab lm_head
# (load_lm_head_from_target); init_lm_head swaps in the target's tables (set_embed / set_embed_and_head, then
# empty_cache) only after the pools are sized, so those copies are resident while rest is measured; its d2t map
# (hot_token_id) is a loaded tensor, not a parameter. STANDALONE (speculative/standalone_worker_v2.py) keeps the draft's
# own embed_tokens / lm_head for good. The hybrid SWA pool (gpt-oss: HybridSWAPoolConfigurator) prices each draft
# layer as a target full-attention layer from 0.5.15 (_draft_full_layers_num: cell = F x (n_full + d) + r x S x n_swa);
# the 0.5.14 wheel's leaves the draft out of the cell (its pool then comes out of the memory left free): refused.
# kvplan plans EAGLE3 and EAGLE (1) with a head it has the config of (kvplan.drafter.sglang_draft_head) on 0.5.14+
# (hybrid SWA: 0.5.15+), without DP attention or PP; STANDALONE with a draft LM (a kvplan preset: its weights at the target's TP,
# its own embed_tokens / lm_head kept, init_lm_head a no-op) beside a full-attention target (the default cell scaled by
# the draft's num_hidden_layers, its own pool over its own cell: standalone_worker_v2.py StandaloneDraftWorker).
SGLANG_EAGLE3_SWA_FROM = "0.5.15"
EAGLE3_DRAFT_ARCH = "LlamaForCausalLMEagle3"  # the type= the draft worker's "Load weight end" names
EAGLE_DRAFT_ARCH = "LlamaForCausalLMEagle"  # an EAGLE (1) head's (models/llama_eagle.py, 0.5.14 - 0.5.21)


def eagle_draft_layers(draft_config: dict) -> int:
    """The draft layer count SGLang scales the target's cell by: num_nextn_predict_layers when the draft config has
    it, else num_hidden_layers (max(num_hidden_layers, num_attention_layers); the two agree for a dense attention
    draft). Worked examples: an EAGLE3 head (num_hidden_layers 1) -> 1; Llama-3.2-1B as a STANDALONE draft -> 16."""
    for key in ("num_nextn_predict_layers", "num_hidden_layers"):
        value = draft_config.get(key)
        if value is not None:
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise PlanInputError(f"draft_config.{key}", f"must be a non-negative integer, got {value!r}")
            return value
    raise PlanInputError("draft_config.num_hidden_layers", "missing: SGLang sizes the draft's KV by its layer count")


def eagle_cell_bytes_per_token(target_cell_bytes: int, target_layers: int, draft_layers: int) -> int:
    """SGLang's pool cell with a separate draft (bytes per token, one rank): int(cell x (1 + draft_layers /
    target_layers)), the float product truncated as the engine does (pool_configurator.py). Inputs: the target's cell
    over its ``target_layers`` KV layers on this rank, the draft's layer count (eagle_draft_layers). Worked numbers:
    Llama-3.1-8B bf16 (131,072 B over 32 layers) + an EAGLE3 head (1) -> int(131,072 x 1.03125) = 135,168 B;
    + Llama-3.2-1B STANDALONE (16) -> 196,608 B, though that draft's own cell is 16 x 8 x 64 x 2 x 2 = 32,768 B."""
    if draft_layers <= 0 or target_layers <= 0:
        return target_cell_bytes
    return int(target_cell_bytes * (1 + draft_layers / target_layers))


def eagle3_resident_copy_bytes(vocab_size: int, hidden_size: int, tp: int, has_draft_vocab: bool,
                               tie_word_embeddings: bool = False, elem_bytes: int = 2) -> int:
    """Bytes of an SGLang EAGLE3 head's own vocab tables on one rank that are resident while the pool is profiled and
    replaced by the target's afterwards: embed_tokens always, plus a full-vocab lm_head when the head's config has no
    draft_vocab_size (and does not tie them). An EAGLE (1) head (LlamaForCausalLMEagle: embed_tokens and a full-vocab
    lm_head, both swapped by set_embed_and_head) is ``has_draft_vocab`` False. Per table pad(vocab, 64) / tp x hidden x
    elem_bytes. Worked numbers: Llama-3.1-8B's head (vocab 128,256, h 4,096, draft_vocab_size 32,000) at TP 1:
    128,256 x 4,096 x 2 = 1,050,673,152 B; an EAGLE (1) head beside it: 2 x that = 2,101,346,304 B."""
    padded = cdiv(vocab_size, SGLANG_VOCAB_PADDING) * SGLANG_VOCAB_PADDING
    tables = 1 + (0 if has_draft_vocab or tie_word_embeddings else 1)
    return tables * cdiv(padded, tp) * hidden_size * elem_bytes


# What a separate draft allocates after the pools are sized (read in the sglang 0.5.14 / 0.5.20 / 0.5.21 / 0.5.23
# wheels, 2026-12). EagleDraftWorker.alloc_memory_pool (speculative/eagle_worker_v2.py) allocates the draft's pool,
# then init_lm_head: set_embed / set_embed_and_head (models/llama.py) delete the EAGLE3 head's own embed_tokens (and its
# full-vocab lm_head) and call empty_cache, and the head's hot_token_id (models/llama_eagle3.py load_weights: the
# checkpoint's d2t + arange(draft_vocab_size), an int64 tensor built on the CPU; t2d is skipped) moves to the GPU. Then
# init_cuda_graphs captures the draft's graphs (EAGLEDraftCudaGraphRunner when --speculative-num-steps > 1, and the
# draft-extend runner), logged as "Capture draft decode CUDA graph end ... mem usage=": 0.5.20 - 0.5.23 into the graph
# memory pool the target's graphs use (runner_backend/full_cuda_graph_backend.py
# get_or_create_global_graph_memory_pool), 0.5.14 into a pool of each runner's own (graph_pool_handle per
# FullCudaGraphBackend; 0.5.15 - 0.5.19 not read). None of it changes the pool: it comes out of what
# mem_fraction_static leaves free, and the 0.5.14+ reserve adds nothing for the draft (SglangProfile
# speculative_reserve_mib 0). (0.5.21 - 0.5.23 can instead resize a non-MLA pool after capture, opt-in by
# SGLANG_ENABLE_POST_CAPTURE_KV_SIZING, default False: environ.py, kv_pool_runtime.py; not modelled.) The one public
# figure found: sgl-project/sglang issue #10088 (2025-09-05, an FA3 EAGLE launch on 8 GPUs): "Capture cuda graph end
# ... mem usage=0.54 GB" for the target and "Capture draft cuda graph end ... mem usage=0.21 GB" for the draft.
SGLANG_DRAFT_GRAPH_LOG = "sgl-project/sglang issue #10088 (2025-09-05): target graphs 0.54 GB, draft graphs 0.21 GB"
SGLANG_D2T_BYTES = 8  # hot_token_id: torch.int64 (d2t + torch.arange)
SGLANG_SHARED_GRAPH_POOL_FROM = "0.5.20"  # the draft's graphs in the target's pool (0.5.14: their own; between: unread)


def draft_graph_pool(sglang_version: str) -> str:
    """Where ``sglang_version``'s draft CUDA graphs are captured: "the target's" (0.5.20+), "their own" (0.5.14), or
    "unread" (0.5.15 - 0.5.18 lines: not read)."""
    order = list(SGLANG_PROFILES)
    if order.index(sglang_version) >= order.index(SGLANG_SHARED_GRAPH_POOL_FROM):
        return "the target's"
    return "their own" if sglang_version == "0.5.14" else "unread"


def eagle3_d2t_bytes(draft_config: dict) -> int:
    """Bytes of an SGLang EAGLE3 head's hot_token_id on one rank (replicated), put on the GPU by init_lm_head after the
    pools: draft_vocab_size x 8 B (int64) when the head's config has draft_vocab_size (its checkpoint then ships the
    d2t map: SpecForge saves d2t / t2d with a reduced vocabulary), else 0 (no d2t: the target's lm_head is shared).
    Worked number: lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B, draft_vocab_size 32,000 -> 256,000 B."""
    dv = draft_config.get("draft_vocab_size")
    if dv is None:
        return 0
    if not isinstance(dv, int) or isinstance(dv, bool) or dv <= 0:
        raise PlanInputError("draft_config.draft_vocab_size", f"must be a positive integer, got {dv!r}")
    return dv * SGLANG_D2T_BYTES


def draft_after_pool_note(what: str, freed_bytes: int, d2t_bytes: int, reserved_mib: float | None,
                          cuda_graph_max_bs: int, eager: bool, num_steps: int | None,
                          max_running_requests: int, graph_pool: str = "the target's") -> str:
    """The plan's note on what a separate draft (``what``: "EAGLE3 draft head" / "STANDALONE draft model") allocates
    and frees after SGLang sizes the pools (see above): the freed copies (``freed_bytes``, counted while the pool is
    profiled) and the d2t map (``d2t_bytes``, eagle3_d2t_bytes) in bytes, the net memory back before CUDA-graph capture
    (freed - d2t), where it comes from (``reserved_mib``: the default rule's reserve; None under
    --mem-fraction-static), and what stays estimated: the draft's CUDA graphs up to min(``cuda_graph_max_bs``,
    ``max_running_requests``) (get_batch_sizes_to_capture clamps the batch sizes to the request pool), in
    ``graph_pool`` (draft_graph_pool) graph memory pool (none with
    --disable-cuda-graph; no decode-step graphs at ``num_steps`` 1). Worked number: Llama-3.1-8B's SpecForge head at TP
    1: freed 1,050,673,152 B, d2t 256,000 B -> 1,050,417,152 B back."""
    left = (f"the {reserved_mib:,.0f} MiB SGLang's default rule reserves outside mem_fraction_static" if reserved_mib
            is not None else "the (1 - --mem-fraction-static) share left free")
    parts = []
    if freed_bytes:
        parts.append(f"init_lm_head frees the head's own vocab copies ({freed_bytes:,} B, counted while the pool is "
                     "sized)")
    if d2t_bytes:
        parts.append(f"puts its d2t map on the GPU ({d2t_bytes:,} B: draft_vocab_size {d2t_bytes // 8:,} x int64)")
    counted = ""
    if parts:
        counted = (" and ".join(parts) + (f": {freed_bytes - d2t_bytes:,} B back before CUDA-graph capture" if
                                          freed_bytes else "") + ". ")
    if eager:
        graphs = "With --disable-cuda-graph no draft graphs are captured."
    else:
        runners = "draft-extend" if num_steps == 1 else "decode-step and draft-extend"
        top = min(cuda_graph_max_bs, max_running_requests)
        graphs = (f"Estimated, not counted: the draft's {runners} CUDA graphs up to batch {top} (cuda_graph_max_bs "
                  f"{cuda_graph_max_bs}, clamped to the {max_running_requests}-request pool), captured "
                  + (f"into {graph_pool} graph memory pool" if graph_pool != "unread" else
                     "into a graph memory pool (the target's in 0.5.20+, their own in 0.5.14; this line's not read)")
                  + "; their static inputs (int64 indices over batch x "
                  "--speculative-eagle-topk x --speculative-num-steps; hidden-state buffers up to batch x draft tokens x "
                  "the fc's input width), the "
                  "attention backend's per-step graph metadata and the draft's activations are not derived (public "
                  f"figure: {SGLANG_DRAFT_GRAPH_LOG}).")
    return (f"{what} (SGLang), after the pools are sized (none of this changes the pool by default; it comes out of "
            f"{left}): "
            + counted + graphs)


# server_args.py _handle_speculative_decoding (0.5.6 / 0.5.10) and arg_groups/speculative_hook.py (0.5.14 - 0.5.23):
# EAGLE / NEXTN / EAGLE3 / STANDALONE and NGRAM set max_running_requests = 48 when --max-running-requests is not given
# ("Max running requests is reset to 48 for speculative decoding"; the 0.5.4.post3 NGRAM log of sgl-project/sglang
# issue #12726 reads max_running_requests=48).
SPECULATIVE_MAX_RUNNING_REQUESTS = 48
SPECULATIVE_FLAG = "--speculative-algorithm"


def auto_speculative_params(method: str, target_arch: str | None) -> tuple[int, int, int]:
    """(num_steps, eagle_topk, num_draft_tokens) SGLang picks when --speculative-num-steps is not given
    (arg_groups/speculative_hook.py _auto_choose_speculative_params, the same in the 0.5.14 - 0.5.23 wheels): STANDALONE
    (3, 1, 4); a LlamaForCausalLM target (5, 4, 8); the DeepSeek / GLM / gpt-oss families and every other (3, 1, 4).
    None of them sizes a pool kvplan plans. Worked example: ("eagle3", "LlamaForCausalLM") -> (5, 4, 8)."""
    if method != "draft_model" and target_arch == "LlamaForCausalLM":
        return 5, 4, 8
    return 3, 1, 4


def speculative_refusal(version: str, method: str, dp_attention: int = 1, pp: int = 1) -> tuple[str, str] | None:
    """(field, message) when kvplan does not plan this SGLang speculative decoding; None when it does (or none is
    asked). Planned on the 0.5.14+ lines: NEXTN / EAGLE on a checkpoint's own MTP layers (``method`` "mtp"), NGRAM (no
    draft model, nothing added to the pools), EAGLE3 and EAGLE (1) with a draft head ("eagle3" / "eagle",
    kvplan.drafter.sglang_draft_head; its head checked by the plan; both take the same pool rule: is_eagle() is true
    for EAGLE and EAGLE3 in pool_configurator.py) and STANDALONE with a draft LM ("draft_model", vLLM's name). Refused:
    every line before 0.5.14 (the draft is sized after the target's pool, see above), NGRAM and STANDALONE with DP
    attention (SGLang refuses both: "ngram speculative decoding does not support dp attention", speculative_hook.py
    _handle_ngram; "Currently standalone speculative decoding does not support dp attention.", _handle_eagle_family),
    EAGLE3 / EAGLE heads with DP attention (the head's split under it not read; eagle_worker_v2.py gives EAGLE3 the
    attention-TP group, EAGLE (1) not), EAGLE3 / EAGLE / STANDALONE with pipeline parallelism (not read).
    Worked example: ("0.5.10", "mtp") -> refused; ("0.5.20", "eagle") -> None."""
    if method == "none":
        return None
    order = list(SGLANG_PROFILES)
    if order.index(version) < order.index(SPECULATIVE_FROM):
        return SPECULATIVE_FLAG, (
            f"SGLang {SGLANG_PROFILES[version].releases} sizes the target's KV pool before it loads the draft (its "
            "weights and its own KV pool then come out of the memory mem_fraction_static leaves free): not modelled. "
            f"kvplan plans SGLang speculative decoding from {SPECULATIVE_FROM}, where the draft loads first and its "
            "layers join the pool's cell: pick SGLang 0.5.14 or newer")
    if method == "ngram" and dp_attention > 1:
        return SPECULATIVE_FLAG, "NGRAM with DP attention: SGLang refuses it (ngram speculative decoding does not " \
                                 "support dp attention): plan it without --enable-dp-attention"
    planned = ("kvplan plans SGLang's NEXTN / EAGLE on the checkpoint's own MTP layers (DeepSeek-V3 / GLM MoE "
               "families), EAGLE3 with a draft head it has the config of (--speculative-draft-model-path "
               "lmsys/EAGLE3-gpt-oss-120b-bf16, zhuyksir/EAGLE3-gpt-oss-20b-bf16, "
               "lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B ...), EAGLE with a LlamaForCausalLMEagle head's config.json "
               "(the CLI's --draft-config), STANDALONE with a draft LM kvplan has a preset of and NGRAM")
    if method == "draft_model" and dp_attention > 1:  # SGLang's STANDALONE (vLLM's draft_model)
        return SPECULATIVE_FLAG, ("STANDALONE with DP attention: SGLang refuses it (\"Currently standalone speculative "
                                  "decoding does not support dp attention.\", speculative_hook.py): plan it without "
                                  "--enable-dp-attention")
    if method in ("eagle3", "eagle", "draft_model") and (dp_attention > 1 or pp > 1):
        name = {"eagle3": "EAGLE3", "eagle": "EAGLE with a draft head", "draft_model": "STANDALONE"}[method]
        return SPECULATIVE_FLAG, (
            f"{name} with {'DP attention' if dp_attention > 1 else 'pipeline parallelism'}: not modelled (the draft "
            "worker's head split and its pools under it were not read): plan it without "
            f"{'--enable-dp-attention' if dp_attention > 1 else '--pp-size'}")
    if method not in ("mtp", "ngram", "eagle3", "eagle", "draft_model"):
        return SPECULATIVE_FLAG, f"{method!r}: not modelled for SGLang. " + planned
    return None


def max_running_requests(prof: SglangProfile, tokens: int, context_len: int, requested: int | None = None,
                         dp_attention: int = 1, mamba: "SglangMambaPool | None" = None) -> int:
    """The logged max_running_requests, per DP-attention worker.

    max_num_reqs = clamp(int(tokens / context_len x 512), 2048, 4096) (the ReqToTokenPool rows; + 1 up to 0.4.6);
    default: min(tokens // 2, pool rows); --max-running-requests R: min(R // dp, pool rows) (0.5.20+:
    min(R // dp, tokens // 2)). A hybrid's MambaPool caps it at max_mamba_cache_size // slots a request holds
    (``_calculate_mamba_ratio``: 1, 3 or 5). Worked numbers: 392,920 tokens at 40,960 -> int(4911.5) -> 4096;
    the Qwen3.5-9B log: 186 slots // 3 -> 62.
    """
    estimated = max(min(int(tokens / context_len * 512), 4096), 2048)
    if requested is None:
        running = min(tokens // 2, estimated + prof.req_pool_extra)
    else:
        per_worker = max(1, requested // dp_attention)
        if prof.running_half_tokens:
            running = min(per_worker, tokens // 2)
        else:
            running = per_worker if prof.fraction_rule in ("tp_table", "tp_table_13g", "tp_table_large") else min(
                per_worker, estimated)
    if mamba is not None:
        running = min(running, mamba.slots // mamba.slots_per_request)
    return running


def _gb(n: int) -> str:
    return f"{n / GiB:.2f}"


def log_lines(prof: SglangProfile, pre_load: int, weights_loaded: int, tokens: int, page: int, k_bytes_per_token: int,
              v_bytes_per_token: int, mla: bool, dtype: str, settings: SglangDefaults, running: int,
              context_len: int, mamba: SglangMambaPool | None = None, running_uncapped: int | None = None,
              draft: SglangDraft | None = None, swa: tuple[int, int] | None = None,
              swa_ratio: float | None = None) -> list[str]:
    """The start-up figures in SGLang's own words (model_runner / memory_pool / scheduler log lines).

    ``swa`` (a hybrid SWA pool, hybrid_swa_cell): (full-layer, sliding-layer) K + V bytes per token; ``tokens`` is then
    the full pool and the lines are SGLang's two-pool ones: "Use sliding window memory pool. full_layer_tokens=...,
    swa_layer_tokens=..." (swa = swa_tokens(tokens, swa_ratio): tokens x 8 // 10 by default), the sliding pool's and the full pool's "KV Cache is allocated"
    (K / V each half a layer's bytes), "SWAKVPool mem usage: ... GB, swa size: ..., full size: ...". Worked number:
    Gemma 4 26B-A4B fp8, 37,081 full tokens: 29,664 sliding; (37,081 + 1) x 10,240 + (29,664 + 1) x 102,400 B = 3.18 GB.

    K/V sizes count the pool's extra page (buffers hold tokens + page_size slots). "Memory pool end" is an
    estimate (available - KV - the int32 ReqToTokenPool of (rows + 1) x (context_len + 4)); the CUDA-graph lines
    are not derived. Worked number: Qwen3-14B TP4, 298,447 tokens, 2 KV heads x 128 x 40 layers x 2 B ->
    "K size: 5.69 GB" (GB = 2^30 B as SGLang divides).

    ``draft`` (an MTP draft worker, 0.5.14+; see SglangDraft): ``weights_loaded`` and the K / V cells are the plan's,
    which count the MTP layers; the lines split them as SGLang prints them: the target's load (without the MTP
    layers), the draft's "Load weight begin / end" (type=..., its mem usage: MTP layers + vocab copies), the target's
    pool and "Memory pool end", then the draft's pool (the same #tokens over its own layers) and a second "Memory pool
    end". Worked numbers: DeepSeek-V3 at TP 8 on an H200, 0.5.20: draft mem usage 1,661,046,944 + 463,339,520 B =
    1.98 GB; its KV line (tokens + 1) x 1,152 B.
    """
    available = pre_load - weights_loaded - (draft.vocab_copy_bytes if draft is not None else 0)
    target_loaded = weights_loaded - (draft.mtp_bytes if draft is not None else 0)
    lines = [f"Load weight begin. avail mem={_gb(pre_load)} GB",
             f"Load weight end. avail mem={_gb(pre_load - target_loaded)} GB, mem usage={_gb(target_loaded)} GB."]
    if draft is not None:  # EagleDraftWorker.__init__: the draft's TpModelWorker loads before any pool is sized
        lines += [f"Load weight begin. avail mem={_gb(pre_load - target_loaded)} GB",
                  (f"Load weight end. type={draft.arch}, avail mem={_gb(available)} GB, "
                   f"mem usage={_gb(draft.loaded)} GB.")]
        k_bytes_per_token -= draft.k_bytes_per_token
        v_bytes_per_token -= draft.v_bytes_per_token
    state = 0
    if mamba is not None:  # mem_cache/memory_pool.py MambaPool.__init__ (the same words 0.5.4 - 0.5.23)
        if mamba.slots <= 0:
            return [*lines, ("RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache. "
                             f"Computed max_mamba_cache_size={mamba.slots}")]
        line = (f"Mamba Cache is allocated. max_mamba_cache_size: {mamba.slots}, conv_state size: "
                f"{_gb(mamba.conv_bytes)}GB, ssm_state size: {_gb(mamba.ssm_bytes)}GB")
        if mamba.draft_tokens:  # memory_pool.py (0.5.17): the SSM states of (max_running_requests + 1) x D draft
            # tokens; the conv-window cache SGLang prints after it (a layout that changed by release) is left off
            ssm_one = mamba.ssm_bytes // (mamba.slots + 1)
            line += f" intermediate_ssm_state_cache size: {_gb(ssm_one * (running + 1) * mamba.draft_tokens)}GB"
        lines.append(line)
        state = mamba.conv_bytes + mamba.ssm_bytes
    if tokens <= 0:
        return lines + ["RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."]
    slots = tokens + page
    dtype_part = f"dtype: torch.{dtype}, " if prof.kv_line == "dtype" else ""
    if swa is not None and not mla:
        n_swa = swa_tokens(tokens, swa_ratio, page)
        full_b, swa_b = slots * swa[0], (n_swa + page) * swa[1]
        kv = full_b + swa_b
        lines.append(f"Use sliding window memory pool. full_layer_tokens={tokens}, swa_layer_tokens={n_swa}")
        for n, b in ((n_swa, swa_b), (tokens, full_b)):
            lines.append(f"KV Cache is allocated. {dtype_part}#tokens: {n}, K size: {_gb(b // 2)} GB, V size: "
                         f"{_gb(b - b // 2)} GB")
        lines.append(f"SWAKVPool mem usage: {_gb(kv)} GB, swa size: {n_swa}, full size: {tokens}")
    elif mla:
        kv = slots * (k_bytes_per_token + v_bytes_per_token)
        lines.append(f"KV Cache is allocated. {dtype_part}#tokens: {tokens}, KV size: {_gb(kv)} GB")
    else:
        kv = slots * (k_bytes_per_token + v_bytes_per_token)
        lines.append(f"KV Cache is allocated. {dtype_part}#tokens: {tokens}, K size: {_gb(slots * k_bytes_per_token)} "
                     f"GB, V size: {_gb(slots * v_bytes_per_token)} GB")
    rows = max(min(int(tokens / context_len * 512), 4096), 2048) + prof.req_pool_extra
    left = available - kv - state - (rows + 1) * (context_len + 4) * 4
    lines.append(f"Memory pool end. avail mem={_gb(left)} GB (estimated)")
    if draft is not None:  # the draft's pool: the target's memory_pool_config (#tokens), its own layers
        dk, dv = slots * draft.k_bytes_per_token, slots * draft.v_bytes_per_token
        if draft.kv_dtype and dtype_part:
            dtype_part = f"dtype: torch.{draft.kv_dtype}, "
        lines.append(f"KV Cache is allocated. {dtype_part}#tokens: {tokens}, KV size: {_gb(dk + dv)} GB" if mla else
                     f"KV Cache is allocated. {dtype_part}#tokens: {tokens}, K size: {_gb(dk)} GB, V size: {_gb(dv)} GB")
        lines.append(f"Memory pool end. avail mem={_gb(left - dk - dv)} GB (estimated)")
    if mamba is not None and prof.hybrid_rule == "v0517" and running_uncapped is not None and running < running_uncapped:
        # SGLang's own words (kv_cache_configurator.py resolve_max_num_reqs, 0.5.17 - 0.5.23): "%d state slots per
        # request" whatever the count, so "1 state slots per request" without the radix cache is verbatim, not a typo (the
        # advice SGLang appends, "To raise it: ...", is left off)
        lines.append(f"max_running_requests is capped to {running} by the mamba state cache (max_mamba_cache_size="
                     f"{mamba.slots}, {mamba.slots_per_request} state slots per request)")
    lines.append(f"max_total_num_tokens={tokens}, chunked_prefill_size={settings.chunked_prefill_size}, "
                 f"max_prefill_tokens={SGLANG_MAX_PREFILL_TOKENS}, max_running_requests={running}, "
                 f"context_len={context_len}")
    return lines


# ----------------------------------------------------------------------------- DeepSeek sparse attention (DSA / "NSA")

# SGLang serves DSA models (DeepSeek-V3.2: DeepseekV32ForCausalLM / a DeepseekV3ForCausalLM config with index_topk;
# GLM-5: GlmMoeDsaForCausalLM) with an NSATokenToKVPool (DSATokenToKVPool from 0.5.14): the MLA latent plus one fp8
# indexer key per token and layer. Read in the sglang 0.5.2 - 0.5.23 wheels (2026-12):
# * 0.5.2 and older hold no NSATokenToKVPool (configs/model_config.py has no is_deepseek_nsa): no DSA model is served.
# * GLM-5 (GlmMoeDsaForCausalLM) joins is_deepseek_nsa in 0.5.9 (0.5.8's list lacks it).
# * server_args.py _handle_model_specific_adjustments (0.5.3 - 0.5.16; arg_groups/overrides.py from 0.5.17,
#   arg_groups/model_overrides/deepseek_v2.py from 0.5.20): on a GPU that is not an NPU, page_size = 64 ("Setting page
#   size to 64 for DeepSeek NSA." / "... DSA."), 1 on ROCm from 0.5.8 ("Setting page size to 1 for DeepSeek DSA on
#   ROCm."; from 0.5.14 only where aiter's preshuffle paged-MQA path is unavailable: Triton < 3.5), 64 x index_kpool
#   in 0.5.22 - 0.5.23 (get_dsa_index_kpool: config index_kpool, default 1; they also divide the indexer key's bytes
#   by it, ceil_div(132, index_kpool): kvplan reads no index_kpool, so both stay at kpool 1).
# * the KV dtype: 0.5.3 - 0.5.4.post1 set fp8_e4m3 on SM >= 10 whatever --kv-cache-dtype says ("Setting KV cache dtype
#   to fp8."); 0.5.5+ turn "auto" into fp8_e4m3 on SM >= 10 and bfloat16 below ("Setting KV cache dtype to {dtype}
#   for DeepSeek DSA on SM{major} device.": 0.5.10 - 0.5.16 _set_default_nsa_kv_cache_dtype / _set_default_dsa_kv_
#   cache_dtype, 0.5.17+ overrides.py _dsa_kv_cache_dtype_default) and assert bfloat16 / fp8_e4m3 only.
# * 0.5.3 - 0.5.5 also force DP attention with dp_size = tp_size ("DP attention is enabled for DeepSeek NSA."), after
#   _handle_gpu_memory_settings has sized the reserve; 0.5.6 - 0.5.7 set enable_dp_attention with the given --dp;
#   0.5.3 alone forces mem_fraction_static = 0.8.
# * the profiled cell (model_runner profile_max_num_token; model_runner_kv_cache_mixin get_cell_size_per_token from
#   0.5.7; pool_configurator._compute_cell_size from 0.5.12): (kv_lora_rank + qk_rope_head_dim) x element size of the
#   KV dtype per layer through 0.5.16; calculate_mla_kv_cache_dim from 0.5.17 (fp8: kv_lora_rank + kv_lora_rank / 128
#   x 4 + qk_rope_head_dim x 2 = 656 B, the packed layout the pool allocates). Plus the indexer: index_head_dim +
#   index_head_dim / 128 x 4 uint8 (128 + 4 = 132 B) per layer, from 0.5.4 (sgl-project/sglang PR #11309, "Include
#   indexer kv cache when estimating kv cache size"; 0.5.3 omits it), over every layer through 0.5.17, over the layers
#   that compute their own top-k from 0.5.18 (_compute_dsa_indexer_cell_size: not dsa_layer_skips_topk).
# * the pool allocates (memory_pool.py MLATokenToKVPool use_nsa): kv_buffer (size + page, 1, kv_cache_dim), 576 x 2 B
#   at bf16; at fp8 the packed 656 uint8 (nsa_kv_cache_store_fp8 / override_kv_cache_dim) except where the backend is
#   trtllm, which reads the raw 576-byte fp8 latent (calculate_mla_kv_cache_dim: "TRTLLM backend does not override
#   kv_cache_dim", 0.5.9+). The fp8 backends by default: flashmla_auto / flashmla_kv (0.5.4.post1 - 0.5.9: packed),
#   trtllm on SM >= 10 from 0.5.10 (_set_default_nsa_backends "if major >= 10: ... = \"trtllm\""; 0.5.17+
#   overrides.py _dsa_split_backend_resolution "Blackwell FP8 defaults to trtllm; Hopper FP8 to flashmla_kv"), except
#   GLM-5 on SM 12 from 0.5.17 (flashinfer_sparse_mla: packed). Plus index_k_with_scale_buffer ((size + page + 1) //
#   page, page x 132) uint8; "KV Cache is allocated. #tokens: N, KV size: X GB" counts both (0.5.4+).
SGLANG_DSA_FIRST_LINE = "0.5.4.post1"  # the first line kvplan plans DSA on (0.5.3 - 0.5.4 hold two rules)
_DSA_NONE = ("0.4.0", "0.4.5.post3", "0.4.6", "0.4.8")  # lines whose wheels hold no NSATokenToKVPool
_DSA_FORCED_DP = ("0.5.4.post1",)  # 0.5.4.post1 - 0.5.5: dp_size = tp_size forced
_DSA_FORCED_FP8 = ("0.5.4.post1",)  # 0.5.4.post1 fp8 on SM >= 10 whatever asked; 0.5.5 only "auto": mixed line
_DSA_ROCM_PAGE_ONE = ("0.5.8", "0.5.10")  # 0.5.8 - 0.5.13: page 1 on ROCm; 0.5.14+: 64 with aiter preshuffle
_DSA_CELL_PACKED_FP8 = ("0.5.17", "0.5.18", "0.5.20", "0.5.21")  # calculate_mla_kv_cache_dim in the profiled cell
_DSA_OWN_INDEXER_ONLY = ("0.5.18", "0.5.20", "0.5.21")  # the indexer counted on layers that run their own top-k
_DSA_TRTLLM_FP8 = ("0.5.10", "0.5.14", "0.5.15", "0.5.17", "0.5.18", "0.5.20", "0.5.21")  # trtllm on SM >= 10 at fp8
_DSA_GLM_SM12_PACKED = ("0.5.17", "0.5.18", "0.5.20", "0.5.21")  # GLM-5 fp8 on SM 12: flashinfer_sparse_mla
DSA_INDEXER_QUANT_BLOCK = 128  # NSATokenToKVPool.quant_block_size: one fp32 scale per 128 fp8 values
DSA_INDEX_PAGE = 64  # the CUDA page SGLang forces for DSA


def sm_major_at_least_10(gpu_name: str) -> bool:
    """Whether torch.cuda.get_device_capability()[0] >= 10 on this catalog GPU: datacenter Blackwell (B200, B300,
    GB200, GB300: sm100 / sm103) and the GeForce / workstation Blackwell cards (RTX 50 series, every RTX PRO
    Blackwell card: sm120, sm_major_is_12). Hopper (9), Ada (8.9), Ampere (8) and AMD (gfx942 / gfx950 report 9) are
    below. Worked: "RTX-PRO-4000" -> True, "RTX-5080" -> True, "H200-NVL" -> False."""
    return sm_major_is_10(gpu_name) or sm_major_is_12(gpu_name)


def dsa_fp8_raw_latent(version: str, gpu_name: str, model_type: str, vendor: str = "") -> bool:
    """Whether the default fp8 DSA backend stores the raw 576-byte fp8 latent (kv_lora_rank + qk_rope_head_dim, no
    scales) instead of the packed 656 B: trtllm on SM >= 10 from 0.5.10, except GLM-5 (glm_moe_dsa) on SM 12 from 0.5.17
    (flashinfer_sparse_mla); on ROCm (``vendor`` "AMD") from 0.5.10, whose HIP default DSA backends (tilelang through
    0.5.19, triton from 0.5.20) read the raw layout. Source: server_args.py _set_default_nsa_backends (0.5.10 - 0.5.13:
    "if not user_set_prefill and not user_set_decode and is_hip(): tilelang") / _set_default_dsa_backends (0.5.14 -
    0.5.16), arg_groups/overrides.py _dsa_split_backend_resolution (0.5.17+); calculate_mla_kv_cache_dim ("On HIP,
    TileLang and AITER DSA kernels consume the raw MLA KV layout"; 0.5.20 adds triton). 0.5.8 - 0.5.9 pick flashmla_kv
    on ROCm too: packed (the GLM-5-FP8 MI355X log of 2026-02-26, 3,262,823 x 78 x 788 B = 186.77 GiB). Worked examples:
    B200 on 0.5.20 -> True; B200 on 0.5.8 -> False (flashmla_kv); H200 -> False; GLM-5 on an RTX PRO 6000 at 0.5.20 ->
    False; MI355X on 0.5.10 -> True (GLM-5.1-MXFP4 8 x MI355X, 0.5.12 image: 3,542,208 x 78 x 708 B = 182.18 GiB)."""
    if version not in _DSA_TRTLLM_FP8:
        return False
    if vendor == "AMD":
        return True
    if not sm_major_at_least_10(gpu_name):
        return False
    sm12 = sm_major_is_12(gpu_name)
    return not (model_type == "glm_moe_dsa" and sm12 and version in _DSA_GLM_SM12_PACKED)


def dsa_refusal(version: str, model_type: str, tp: int, dp_attention: int, kv_cache_dtype: str | None,
                sm10: bool) -> tuple[str, str] | None:
    """(field, message) when SGLang ``version`` does not serve this DSA model the way kvplan can plan it; None else.

    Worked examples: DeepSeek-V3.2 on 0.4.8 -> ("sglang_version", "... DSA came with 0.5.3 ..."); GLM-5 on 0.5.8 ->
    ("sglang_version", ...); DeepSeek-V3.2 TP8 on 0.5.4.post1 without --dp 8 -> ("dp_attention_size", ...)."""
    prof = SGLANG_PROFILES[version]
    head = "DeepSeek sparse attention (DSA: an MLA latent plus a lightning-indexer key per token)"
    if version in _DSA_NONE:
        return "sglang_version", (f"SGLang {prof.releases} serves no {head}: its wheels hold no NSATokenToKVPool "
                                  "(configs/model_config.py is_deepseek_nsa came with 0.5.3). Pick SGLang "
                                  f"{SGLANG_DSA_FIRST_LINE} or newer.")
    if version == "0.5.3":
        return "sglang_version", (f"SGLang {prof.releases} holds two rules for {head}: 0.5.3 forces "
                                  "mem_fraction_static 0.8 and sizes the pool without the indexer keys (the pool then "
                                  "holds more than it profiled), 0.5.4 counts them (PR #11309): not modelled as one "
                                  f"line. Pick SGLang {SGLANG_DSA_FIRST_LINE} or newer.")
    if model_type == "glm_moe_dsa" and version in ("0.5.4.post1", "0.5.6", "0.5.7", "0.5.8"):
        return "sglang_version", (f"SGLang {prof.releases} does not serve GLM-5 (GlmMoeDsaForCausalLM) in every "
                                  "release of the line (it joined is_deepseek_nsa in 0.5.9): pick SGLang 0.5.10 or "
                                  "newer.")
    kv = (kv_cache_dtype or "auto").lower()
    if kv not in ("auto", "bf16", "bfloat16", "fp8", "fp8_e4m3"):
        return "kv_cache_dtype", (f"SGLang asserts bfloat16 or fp8_e4m3 for {head} (server_args.py: \"DeepSeek DSA "
                                  f"only supports bf16/bfloat16 or fp8_e4m3 kv_cache_dtype\"), got {kv_cache_dtype!r}")
    if version in _DSA_FORCED_FP8 and sm10 and kv in ("bf16", "bfloat16"):
        return "kv_cache_dtype", (f"SGLang {prof.releases}: 0.5.4.post1 sets an fp8_e4m3 KV cache for {head} on "
                                  "SM >= 10 whatever --kv-cache-dtype says, 0.5.5 keeps bfloat16: two rules in one "
                                  "line. Use auto or fp8_e4m3, or pick 0.5.6 or newer.")
    if version in _DSA_FORCED_DP and tp > 1 and dp_attention != tp:
        return "dp_attention_size", (f"SGLang {prof.releases} forces DP attention with --dp = --tp ({tp}) for {head} "
                                     "(server_args.py: \"DP attention is enabled for DeepSeek NSA.\"), after it has "
                                     "sized the memory reserve from the flags given: plan it with --enable-dp-attention "
                                     f"--dp {tp} (dp_attention_size {tp}), as the DeepSeek-V3.2 recipes launch it, or "
                                     "pick 0.5.6 or newer.")
    return None


def dsa_page_size(version: str, vendor: str, index_kpool: int = 1) -> int:
    """The page SGLang forces for a DSA model: 64 on CUDA (every line 0.5.3+; 64 x index_kpool in 0.5.22 - 0.5.23,
    the 0.5.21 line: 0.5.20 / 0.5.21's deepseek_v2.py read no index_kpool; no caller passes one yet), 1 on ROCm
    in 0.5.8 - 0.5.13, 64 on ROCm before 0.5.8 (no is_hip branch) and from 0.5.14 (kvplan assumes aiter's preshuffle
    paged-MQA path, Triton >= 3.5; the legacy path keeps 1).

    Source: server_args.py _handle_model_specific_adjustments (0.5.3 - 0.5.16), arg_groups/overrides.py
    _deepseek_family_overrides (0.5.17 - 0.5.19), arg_groups/model_overrides/deepseek_v2.py (0.5.20+).
    Worked numbers: 0.5.20 on B200 -> 64; 0.5.10 on MI355X -> 1."""
    if vendor == "AMD" and version in _DSA_ROCM_PAGE_ONE:
        return 1
    return DSA_INDEX_PAGE * (index_kpool if version == "0.5.21" else 1)


def dsa_kv_dtype(version: str, sm10: bool, vendor: str, requested: str | None) -> str:
    """The KV dtype SGLang stores a DSA model's latent in: "fp8" or "bf16" (kvplan names).

    ``auto`` -> fp8_e4m3 on SM >= 10, bfloat16 below (AMD reports major 9); 0.5.4.post1 sets fp8 on SM >= 10 whatever
    was asked (dsa_refusal refuses bf16 there). Source: server_args.py _handle_model_specific_adjustments /
    _set_default_nsa_kv_cache_dtype (0.5.10), _set_default_dsa_kv_cache_dtype (0.5.14), arg_groups/overrides.py
    _dsa_kv_cache_dtype_default (0.5.17+; a config with learnable_sink keeps bf16: not in the DSA configs kvplan reads).
    Worked numbers: B200 auto -> "fp8"; H200 auto -> "bf16"; B200 bfloat16 on 0.5.20 -> "bf16"."""
    kv = (requested or "auto").lower()
    if kv in ("fp8", "fp8_e4m3"):
        return "fp8"
    if kv == "auto" or (version in _DSA_FORCED_FP8 and sm10):
        return "fp8" if sm10 and vendor != "AMD" else "bf16"
    return "bf16"


def _dsa_latent_bytes(cache, kv_b: int, packed: bool) -> int:
    """One layer's latent per token: 656 B packed fp8 (512 fp8 NoPE + 4 fp32 scales + 64 bf16 RoPE), else
    (kv_lora_rank + qk_rope_head_dim) x the KV element size (the raw fp8 576 B of trtllm, bf16 1152 B)."""
    if kv_b == 1 and packed:
        return cache.kv_lora_rank + cache.kv_lora_rank // DSA_INDEXER_QUANT_BLOCK * 4 + cache.qk_rope_head_dim * 2
    return (cache.kv_lora_rank + cache.qk_rope_head_dim) * kv_b


def dsa_bytes_per_token(version: str, layers, kv_b: int, index_head_dim: int, allocated: bool = False,
                        raw_fp8: bool = False) -> int:
    """Bytes per token of a DSA model's KV pool on one rank (not divided by TP: one latent, one indexer head).

    ``allocated`` False: the cell SGLang profiles its token count by; True: what the pool allocates ("KV size" in the
    log). ``layers``: (DecoderLayer, count) pairs of this rank; ``index_head_dim``: the config's (every layer counts it
    through 0.5.17; from 0.5.18 only the layers with their own indexer, index_head_dim set on the layer); ``raw_fp8``:
    the trtllm backend's raw fp8 latent (dsa_fp8_raw_latent).
    latent: profiled (kv_lora_rank + qk_rope_head_dim) x b through 0.5.16 (fp8: 576 B), calculate_mla_kv_cache_dim
    from 0.5.17 (packed 656 B, raw 576 B with trtllm); allocated at fp8 656 B packed / 576 B raw; bf16 1152 B.
    indexer: 128 + 128 / 128 x 4 = 132 B.
    Worked numbers, DeepSeek-V3.2 (61 layers): B200 (trtllm) fp8 on 0.5.20: 61 x (576 + 132) = 43,188 B profiled and
    allocated; H200 asked for fp8 (flashmla_kv) on 0.5.20: 61 x (656 + 132) = 48,068 B; on 0.5.8 (flashmla_kv)
    profiled 43,188 B, allocated 48,068 B; bf16: 61 x (1152 + 132) = 78,324 B."""
    packed = not raw_fp8 and (allocated or version in _DSA_CELL_PACKED_FP8)
    own_only = version in _DSA_OWN_INDEXER_ONLY
    total = 0
    for layer, n in layers:
        c = layer.cache
        if c.kind != "mla_dsa":
            continue
        width = (c.index_head_dim or 0) if own_only else index_head_dim
        total += n * (_dsa_latent_bytes(c, kv_b, packed) + width + width // DSA_INDEXER_QUANT_BLOCK * 4)
    return total


def dsa_rule(version: str, vendor: str, kv: str, page: int, raw_fp8: bool = False) -> str:
    """One line naming the rule applied (for the plan's warnings)."""
    prof = SGLANG_PROFILES[version]
    cell = ("packed fp8 latent 656 B (calculate_mla_kv_cache_dim)" if version in _DSA_CELL_PACKED_FP8 and kv == "fp8"
            and not raw_fp8 else "latent (kv_lora_rank + qk_rope_head_dim) x KV element size")
    idx = "layers with their own indexer" if version in _DSA_OWN_INDEXER_ONLY else "every layer"
    return (f"SGLang {prof.releases} DSA: page_size {page}{' (ROCm)' if vendor == 'AMD' else ''}, KV dtype {kv} "
            f"(auto: fp8_e4m3 on SM >= 10, bfloat16 below), profiled cell = {cell} + 132 B indexer key on {idx}; "
            + ((f"the {'HIP tilelang / triton' if vendor == 'AMD' else 'trtllm'} backend stores the raw 576 B fp8 "
                "latent") if raw_fp8 and kv == "fp8" else
               "the pool allocates 656 B a layer at fp8"))


# ----------------------------------------------------------------------------- hybrid sliding-window (SWA) pools
# SGLang keeps the sliding-window layers of a "hybrid SWA" architecture in a pool of their own that holds
# swa_full_tokens_ratio (server_args.py, default 0.8) x the full pool's tokens, and max_total_num_tokens is the full
# pool's size. Read in the 0.5.10 wheel (model_executor/model_runner_kv_cache_mixin.py: token_capacity = rest //
# (F x n_full + S x n_swa), then full_tokens = token_capacity x (F n_full + S n_swa) / (F n_full + r S n_swa), "Use
# sliding window memory pool. full_layer_tokens=..., swa_layer_tokens=...") and the 0.5.14 / 0.5.20 wheels
# (model_executor/pool_configurator.py HybridSWAPoolConfigurator: cell = F n_full + r S n_swa, the same token count
# to a token). configs/model_config.py is_hybrid_swa_model lists the architectures: GptOssForCausalLM,
# MiMoV2FlashForCausalLM (and Llama4, Step3p5: not planned here) in 0.5.10 - 0.5.23, Gemma4ForCausalLM /
# Gemma4ForConditionalGeneration from 0.5.11 (0.5.10 serves no Gemma 4). Gemma 2 / 3 are not in it (SGLang sets
# disable_hybrid_swa_memory for them: one pool over every layer).
# Before 0.5.10 (read in the 0.4.10 / 0.4.10.post2 / 0.5.0rc0 / 0.5.0rc2 / 0.5.1 / 0.5.2 / 0.5.4 / 0.5.6 / 0.5.7 /
# 0.5.8 / 0.5.9 wheels, server_args.py and model_runner.py / model_runner_kv_cache_mixin.py): gpt-oss is served from
# 0.5.0rc0 (no models/gpt_oss.py in 0.4.10.post2), and 0.5.0rc0 - 0.5.7 force disable_hybrid_swa_memory for
# GptOssForCausalLM (one pool over every layer, as planned). 0.5.8 adds configs/model_config.py is_hybrid_swa_model (Llama4, GptOss, MiMoV2Flash,
# MiMoV2MTP; 0.5.9 + Step3p5) and keeps the pool on for gpt-oss except with the trtllm_mha backend (the SM 10.x
# default: disabled again) or speculative decoding. 0.5.8 splits by token count (full = max_total_num_tokens x L /
# (n_full + r n_swa), the profile cell priced every layer alike); 0.5.9 (sglang PR #18039, 2026-01-31) by memory
# (F n_full + r S n_swa), as 0.5.10. For gpt-oss (F = S a layer) the two agree; for MiMo-V2-Flash (sliding layers of
# another width) they differ, and 0.5.7 (MiMo-V2-Flash first served, hybrid by its sliding window) prices them alike
# too: MiMo-V2-Flash is refused on the 0.5.7 and 0.5.8 lines (swa_cell_refusal). swa_full_tokens_ratio defaults to
# 0.8 in every line read (0.5.2 - 0.5.23).
SGLANG_SWA_FULL_TOKENS_RATIO_TENTHS = 8  # --swa-full-tokens-ratio 0.8 (server_args.py default, 0.5.x)
_HYBRID_SWA_MODEL_TYPES = ("gpt_oss", "mimo_v2_flash", "gemma4_text", "gemma4")
_HYBRID_SWA_LINES = ("0.5.10", "0.5.14", "0.5.15", "0.5.17", "0.5.18", "0.5.20", "0.5.21")
_HYBRID_SWA_GPT_OSS_ONLY_LINES = ("0.5.8",)  # 0.5.8 - 0.5.9: gpt-oss off SM 10.x (trtllm_mha disables the pool)


def swa_ratio_part_bytes(swa_bytes: int, ratio: float | None) -> int:
    """floor(r x S n_swa): the sliding layers' bytes a full-pool token pays, r = --swa-full-tokens-ratio (None: 0.8),
    taken as the decimal the flag spells (Fraction(str(r))) so that 0.5 x 36,864 = 18,432 exactly. Worked number:
    S n_swa = 36,864 B (gpt-oss-120b TP1 bf16), r 0.8 -> 29,491 B, r 0.5 -> 18,432 B, r 1 -> 36,864 B."""
    if ratio is None:
        return swa_bytes * SGLANG_SWA_FULL_TOKENS_RATIO_TENTHS // 10
    return math.floor(Fraction(str(ratio)) * swa_bytes)


def hybrid_swa_max_tokens(version: str, pool_bytes: int, layers, kv_tp: int, kv_b: int, ratio: float | None) -> int:
    """max_total_num_tokens of SGLang's hybrid SWA pool: int(rest // cell) with the cell a Python float, as
    HybridSWAPoolConfigurator computes it (pool_configurator.py, 0.5.14 - 0.5.23: F x n_full + r x S x n_swa, r the
    float --swa-full-tokens-ratio, default 0.8), not the whole-byte cell hybrid_swa_cell shows. ``layers``: the
    (DecoderLayer, count) pairs hybrid_swa_cell priced (a draft's layers included); where a kind's layers differ in
    size the sums stand for F x n and S x n. Worked number: gpt-oss-120b TP1 bf16 with its EAGLE3 head on one H200
    (0.5.20): 19 full + 18 sliding layers of 2,048 B, cell 38,912 + 0.8 x 2,048 x 18 = 68,403.2 B; rest
    67,625,084,392 B -> 988,624 tokens (the whole-byte cell 68,403 would give 988,627).
    The 0.5.8 line (0.5.8 - 0.5.9, model_runner_kv_cache_mixin.py) splits tokens, not bytes: the pool's tokens at the
    uniform cell (rest // (F n_full + S n_swa)) x the layers, / (r n_swa + n_full), int() of the float quotient. The
    0.5.10 line is planned by 0.5.11 - 0.5.13's float cell; 0.5.10 itself floors rest at the uniform cell first and
    divides that memory by the float cell (a few tokens apart)."""
    r = SGLANG_SWA_FULL_TOKENS_RATIO_TENTHS / 10 if ratio is None else ratio
    walk = _swa_pool_layers(layers, kv_tp, kv_b)
    if walk is None or pool_bytes <= 0:
        return 0
    if len(walk.swa_sizes) == 1:  # SGLang's order: (r x S) x n_swa, one float rounding as the engine's
        cell = walk.full + r * next(iter(walk.swa_sizes)) * walk.n_swa
    else:
        cell = walk.full + r * walk.swa
    if cell <= 0:
        return 0
    if version in _HYBRID_SWA_GPT_OSS_ONLY_LINES:
        tokens = pool_bytes // (walk.full + walk.swa)
        return int(tokens * (walk.n_full + walk.n_swa) / (r * walk.n_swa + walk.n_full))
    return int(pool_bytes // cell)


def swa_tokens(full_tokens: int, ratio: float | None, page: int = 1) -> int:
    """The sliding pool's tokens, as SGLang sizes them: int(full x r) floored to the page (r None: 0.8, in tenths, as
    before). Worked number: 37,081 full tokens, r 0.8 -> 29,664; r 0.5 -> 18,540."""
    n = full_tokens * SGLANG_SWA_FULL_TOKENS_RATIO_TENTHS // 10 if ratio is None else int(full_tokens * ratio)
    return n // page * page


# SGLang architectures whose fused QKVParallelLinear is built with skip_block_quant_check=True, so the block-FP8
# shard check (layers/quantization/fp8.py validate_block_quant_shapes: column shards % block_n) does not run for q / k /
# v: MiMo-V2-Flash (models/mimo_v2_flash.py in 0.5.7 - 0.5.10, models/mimo_v2.py MiMoV2Attention in 0.5.11 - 0.5.23; 0.5.6.post2 has no MiMo; its KV
# shard at TP4 is 4 heads x 192 / 4 = 192 rows, half a 128-row block, and loads: sgl-project/sglang PR #18039 runs TP4).
# o_proj, the dense MLP and the experts keep the check.
SGLANG_FP8_QKV_CHECK_SKIPPED = ("mimo_v2_flash",)


def fp8_qkv_check_skipped(model_type: str) -> bool:
    """Whether SGLang skips the block-FP8 shard check of this architecture's q / k / v projections."""
    return model_type in SGLANG_FP8_QKV_CHECK_SKIPPED


# SWAChunkCapPoolConfigurator (0.5.14+; SWARequestCapPoolConfigurator in 0.5.22 - 0.5.23, the same rule)
_SWA_CHUNK_CAP_LINES = ("0.5.14", "0.5.15", "0.5.17", "0.5.18", "0.5.20", "0.5.21")


def swa_chunk_cap_note(version: str, max_running_requests: int | None, prefix_caching: bool | None) -> str | None:
    """The warning where SGLang sizes a hybrid SWA model's sliding pool by a per-request cap, not the ratio, which
    kvplan does not model: pool_configurator.py SWAChunkCapPoolConfigurator.is_applicable (0.5.14 - 0.5.23) with an
    explicit --max-running-requests (or the 48 speculative decoding sets without one: the caller passes it),
    --disable-radix-cache and a chunked-prefill size (the default sets one); the sliding pool is then (window + page +
    decode) x requests + chunks in flight, the rest goes to the full pool. Worked example: ("0.5.20", 48, False) ->
    the note; ("0.5.20", None, False) -> None."""
    if version in _SWA_CHUNK_CAP_LINES and max_running_requests is not None and prefix_caching is False:
        return (f"SGLang {version} with --max-running-requests (speculative decoding sets 48 without it) and "
                "--disable-radix-cache sizes the sliding-window pool "
                "by a per-request cap (SWAChunkCapPoolConfigurator), not --swa-full-tokens-ratio, and gives the rest "
                "to the full pool: not modelled, so the full-pool tokens here (the ratio rule) are likely low")
    return None


def has_swa_pool(model_type: str) -> bool:
    """Whether SGLang keeps a sliding-window pool of its own for this architecture (hybrid_swa_cell's, or DeepSeek-V4's
    DSV4PoolConfigurator): where --swa-full-tokens-ratio / --disable-hybrid-swa-memory change the plan."""
    return model_type in _HYBRID_SWA_MODEL_TYPES or model_type == "deepseek_v4"


def swa_ratio_refusal(version: str, model_type: str) -> tuple[str, str] | None:
    """(field, message) where --swa-full-tokens-ratio is given for a hybrid SWA architecture on a line whose SWA pool
    kvplan has not read (hybrid_swa_cell plans one pool over every layer there, which the ratio would not change).
    gpt-oss is read on every line that serves it (0.5.0rc0 - 0.5.7: server_args forces one pool, the ratio has no
    effect; the 0.5.8 line and 0.5.10+: hybrid_swa_cell applies it)."""
    if model_type in _HYBRID_SWA_MODEL_TYPES and version not in _HYBRID_SWA_LINES and model_type != "gpt_oss":
        return ("swa_full_tokens_ratio", (
            f"--swa-full-tokens-ratio on the SGLang {version} line: kvplan has not read this line's hybrid SWA pool "
            f"for {model_type!r} (read: {', '.join(_HYBRID_SWA_LINES)}), so it cannot apply the ratio. Pick one of "
            "those lines or drop the flag"))
    return None


def swa_cell_refusal(version: str, model_type: str) -> tuple[str, str] | None:
    """(field, message) where kvplan cannot size this line's hybrid SWA pool for the model, else None.
    MiMo-V2-Flash on the 0.5.7 line (sliding layers priced like full ones, not read to the byte) and on the 0.5.8 line
    (0.5.8 splits by token count, 0.5.9 by memory: sglang PR #18039). Example: ("0.5.8", "mimo_v2_flash") -> refused."""
    if model_type == "mimo_v2_flash" and version in ("0.5.7", "0.5.8"):
        return "sglang_version", (
            f"SGLang {SGLANG_PROFILES[version].releases} sizes MiMo-V2-Flash's sliding-window pool by a rule kvplan does "
            "not model: 0.5.7 and 0.5.8 split max_total_num_tokens by token count over a cell that prices the sliding "
            "layers like full ones, 0.5.9 by memory (sglang PR #18039, 2026-01-31). Pick SGLang 0.5.10 or newer.")
    return None


class _SwaLayers(NamedTuple):
    full: int  # F x n_full: the full-attention layers' K + V bytes a token (one rank)
    swa: int  # S x n_swa: the sliding-window layers'
    n_full: int
    n_swa: int
    swa_sizes: frozenset[int]  # the sliding layers' per-layer bytes a token (one size in every model read)


def _swa_pool_layers(layers, kv_tp: int, kv_b: int) -> "_SwaLayers | None":
    """The full / sliding split of a stage's (DecoderLayer, count) pairs that hybrid_swa_cell and hybrid_swa_max_tokens
    price, or None where another cache kind is in the stage (not the two-pool layout read)."""
    full = swa = n_full = n_swa = 0
    sizes = set()
    for layer, n in layers:
        if layer.cache.kind == "none":
            continue
        if layer.cache.kind not in ("full_attention", "sliding_attention"):
            return None
        b = layer.cache.kv_bytes_per_token("vllm", kv_tp, kv_b)
        if layer.cache.kind == "sliding_attention":
            swa, n_swa = swa + n * b, n_swa + n
            sizes.add(b)
        else:
            full, n_full = full + n * b, n_full + n
    return _SwaLayers(full, swa, n_full, n_swa, frozenset(sizes))


def hybrid_swa_cell(version: str, model_type: str, layers, kv_tp: int, kv_b: int, ratio: float | None = None,
                    disabled: bool = False, gpu_name: str = "") -> tuple[int, int, int] | None:
    """(cell bytes per full-pool token, full-layer bytes F x n_full, sliding-layer bytes S x n_swa) of SGLang's hybrid
    SWA pool on one rank, or None where the line pools every layer alike (the architecture is not hybrid SWA there,
    or the line was not read).

    ``layers``: (DecoderLayer, count) pairs of the rank; ``kv_tp``: the TP the KV heads split over; ``kv_b``: KV element
    bytes; ``gpu_name``: the 0.5.8 line (0.5.8 - 0.5.9) pools gpt-oss apart only off SM 10.x (B200 ...: trtllm_mha,
    one pool) and no other model (MiMo-V2-Flash: swa_cell_refusal); lines before 0.5.8 pool every layer alike.
    cell = F n_full + floor(r x S n_swa), r = 0.8 (in tenths: x 8 // 10); max_total_num_tokens = rest // cell
    (the full pool), the sliding pool holds floor(0.8 x that).
    Worked number: gpt-oss-120b at TP1, bf16 (18 full + 18 sliding layers of 8 KV heads x 64 x 2 (K, V) x 2 B =
    2,048 B each): F n_full = S n_swa = 36,864, cell = 36,864 + 29,491 = 66,355 B (one pool over all 36 layers:
    73,728 B, 10 % fewer tokens); --swa-full-tokens-ratio 0.5 (``ratio``): 36,864 + 18,432 = 55,296 B.
    ``disabled`` (--disable-hybrid-swa-memory): None, one pool over every layer at the full rate (model_config.py:
    is_hybrid_swa = is_hybrid_swa_model(...) and not disable_hybrid_swa_memory, so DefaultPoolConfigurator)."""
    if disabled:
        return None
    if version in _HYBRID_SWA_GPT_OSS_ONLY_LINES:
        if model_type != "gpt_oss" or sm_major_is_10(gpu_name):
            return None
    elif version not in _HYBRID_SWA_LINES or model_type not in _HYBRID_SWA_MODEL_TYPES:
        return None
    walk = _swa_pool_layers(layers, kv_tp, kv_b)
    if walk is None or not walk.full or not walk.swa:
        return None
    return walk.full + swa_ratio_part_bytes(walk.swa, ratio), walk.full, walk.swa
