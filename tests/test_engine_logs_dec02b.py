"""Public vLLM start-up logs reproduced from their launch inputs (issue 11, the 2026-12-02 round).

Tolerances as tests/test_engine_logs.py: memory within max(1 %, 0.25 GiB), tokens and concurrency within 1 %. None of
these sources is pinned elsewhere in tests/ (issue numbers, URLs and index file ids grepped 2026-12-02). Issue threads
are cited by repository and number (the search index shows excerpts of them, read 2026-12-02); code-corpus files by
their search-index file id, as in tests/test_engine_logs_dec02.py.

Sources:
- CLUB612 / CLUB652: noonghunna/club-3090 issues #612 "[bench] vllm/qwen-35b-a3b-single-nvfp4 5090 test" (log 07-06)
  and #652 "[bench] qwen3.6-35b-a3b 5090" (log 07-09): one RTX 5090, "Initializing a V1 LLM engine (v0.24.0)",
  non-default args {'model': '~/.cache/huggingface/qwen3.6-35b-a3b-nvfp4', 'trust_remote_code': True, 'dtype':
  'bfloat16', 'max_model_len': 131072, 'quantization': 'modelopt', 'kv_cache_dtype': 'fp8', 'enable_prefix_caching':
  True, 'limit_mm_per_prompt': {'image': 2, 'audio': 0}, 'max_num_batched_tokens': 8192, 'max_num_seqs': 1,
  'enable_chunked_prefill': True} (#652: the same args; cudagraph_capture_sizes [1, 2]). Logged: #612 "Available KV
  cache memory: 5.98 GiB", "GPU KV cache size: 567,978 tokens", "Maximum concurrency for 131,072 tokens per request:
  4.33x"; #652 6.01 GiB, 569,878 tokens, 4.35x. The checkpoint is a local ModelOpt NVFP4 copy of Qwen3.6-35B-A3B (no
  "Model loading took" line in the excerpts), so the pool from the flags uses the qwen3.6-35b-a3b-nvfp4 preset's
  weights (RedHatAI's NVFP4 export) and says so.
- CLUB594: noonghunna/club-3090 pull request #594 "feat: switch dual-max KV from int8_per_token_head to fp8" (log
  07-06, gpu_worker.py:508 / kv_cache_utils.py:2146, the line numbers of the 0.24.0 logs above): 2 x RTX 3090,
  {'model': '~/.cache/huggingface/qwen3.6-27b-fp8', 'dtype': 'bfloat16', 'max_model_len': 262144, 'quantization':
  'fp8', 'tensor_parallel_size': 2, 'disable_custom_all_reduce': True, 'kv_cache_dtype': 'fp8',
  'enable_prefix_caching': True, 'max_num_batched_tokens': 8192, 'max_num_seqs': 2, 'enable_chunked_prefill': True,
  'specula...' (the excerpt ends there). Logged: "Available KV cache memory: 5.33 GiB", "GPU KV cache size: 300,220
  tokens", "Maximum concurrency for 262,144 tokens per request: 1.15x". The speculative config is cut off; MTP with 3
  tokens (the club's dual profiles' {'method': 'mtp', 'num_speculative_tokens': 3}, issues #294 / #295) is the only
  n in 0..3 whose layout gives the logged tokens (n = 0: 334,459; 1: 310,078; 2: 305,338; 3: 300,220).
- CLUB294 / CLUB295: noonghunna/club-3090 issues #294 / #295 "[bench] 2x 3090 (x4x4) - vllm/dual - dflash on -
  pciep2p off / on" (logs 06-01, kv_cache_utils.py:1733): 2 x RTX 3090, {'model':
  '~/.cache/huggingface/qwen3.6-27b-autoround-int4', 'dtype': 'float16', 'max_model_len': 262144, 'quantization':
  'auto_round', 'tensor_parallel_size': 2, 'disable_custom_all_reduce': True, 'kv_cache_dtype': 'fp8_e5m2',
  'enable_prefix_caching': True, 'max_num_batched_tokens': 8192, 'max_num_seqs': 2, 'enable_chunked_prefill': True,
  'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 3}}. Logged: "GPU KV cache size: 622,408 tokens"
  (#294) / "620,944 tokens" (#295), both "Maximum concurrency for 262,144 tokens per request: 2.37x". The
  "Available KV cache memory" line is not in the excerpts and the release is a 0.20.x-0.21 build (kvplan plans no
  AutoRound weights), so the layout is pinned by the block count the tokens line implies.
- MITCHROSS1995: mitchross/talos-argocd-proxmox pull request #1995 "vllm: native 262144 context, max-num-seqs 2->3"
  (2026-08-16): 2 x RTX 3090, Qwen3.8-27B-FP8 (Marlin weight-only FP8), TP 2, gpu-memory-utilization 0.92,
  fp8_e4m3 KV, prefix caching, chunked prefill, max-num-batched-tokens 8192, max-model-len 131072, max-num-seqs 2.
  Logged: "GPU KV cache size: 302,921 tokens", "Maximum concurrency for 131,072 tokens per request: 2.31x", and the
  pool "2 x 4.99 = 9.98 GiB" (4.99 GiB a rank). The release is not named (Qwen3.8 needs one past 0.26), so the layout
  is pinned from the logged pool on the 0.28 and 0.29 lines (the same there), not the pool.
- AEON-PRO4000 / AEON-5060TI: a Vast.ai serving note "Vast.ai AEON Qwen3.6 27B NVFP4-MTP — 192K serving notes"
  (index file id 52487522470, 2026-05-13): image ghcr.io/mics8128/vllm-cu129:0.20.2-cu129, ``vllm serve
  AEON-7/Qwen3.6-27B-AEON-Ultimate-Uncensored-Multimodal-NVFP4-MTP --quantization modelopt --tensor-parallel-size 2
  --max-model-len 196608 --max-num-seqs 10 --max-num-batched-tokens 4096 --gpu-memory-utilization 0.92
  --speculative-config '{"method":"mtp","num_speculative_tokens":3}' --limit-mm-per-prompt '{"image":4,"video":0}'
  --trust-remote-code --enable-prefix-caching --kv-cache-dtype fp8``: on 2 x RTX PRO 4000 Blackwell (24 GB) "Available
  KV cache memory: 6.35 GiB", "GPU KV cache size: 347,625 tokens", "Maximum concurrency for 196,608 tokens per
  request: 1.77x"; the same template at --tensor-parallel-size 4 on 4 x RTX 5060 Ti (16 GB): "Model loading took: 6.89
  GiB", 5.61 GiB, 615,468 tokens, 3.13x. kvplan has neither card, so the layout is pinned from the logged pools; the
  6.89 GiB weights are not (a third-party merge of unknown tensor formats: the qwen3.6-27b-nvfp4 preset gives 5.24).
- SPARK396: eugr/spark-vllm-docker issue #396 "minimax-m2.7-awq recipe fails to start: KV cache 0.75 GiB short at
  default gpu_memory_utilization: 0.8" (2026-09-14): 2 x DGX Spark, TP 2, vLLM 0.29.1rc1.dev17+gd2d649e67, MiniMax-M2.7
  AWQ, max_model_len 196608: "Available KV cache memory: 22.5 GiB", "ValueError: To serve at least one request with
  the model's max seq len (196608), 23.25 GiB KV cache is needed, which is larger than the available KV cache memory
  (22.5 GiB). Based on the available memory, the estimated maximum model length is 190272."; at 0.85 "28.74 GiB KV ->
  240,816 tokens, 1.22x concurrency at 196,608". Unified memory (GB10): the layout is pinned from the logged pools.
"""

import pytest

from kvplan import load_preset
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.units import GiB
from kvplan.vllm_args import parse_vllm_command
from tests.test_engine_logs import close, close_gib

RTX5090 = get_gpu("RTX-5090")


def _plan(command: str, preset: str, gpu: str, version: str, pool_gib: float | None = None, tp: int = 1,
          weight_format: str | None = None):
    """kvplan's plan for a ``vllm serve`` line; with ``pool_gib`` the logged "Available KV cache memory" is the pool."""
    args = parse_vllm_command(command)
    assert not args.unknown, args.unknown
    fields = {**args.engine_fields(), "vllm_version": version}
    if weight_format is not None:
        fields["weight_format"] = weight_format
    if pool_gib is not None:
        fields["kv_cache_memory_bytes"] = round(pool_gib * GiB)
    return plan(load_preset(preset), get_gpu(gpu), EngineConfig(**fields), Layout(tp=tp))


# ----------------------------------------------------------------------------- CLUB612 / CLUB652: 0.24.0, RTX 5090

CLUB_35B = ("vllm serve ~/.cache/huggingface/qwen3.6-35b-a3b-nvfp4 --trust-remote-code --dtype bfloat16 "
            "--max-model-len 131072 --quantization modelopt --kv-cache-dtype fp8 --enable-prefix-caching "
            "--limit-mm-per-prompt '{\"image\": 2, \"audio\": 0}' --max-num-batched-tokens 8192 --max-num-seqs 1 "
            "--enable-chunked-prefill --enable-auto-tool-choice --tool-call-parser qwen3_coder "
            "--reasoning-parser qwen3")


@pytest.mark.parametrize("pool, tokens, conc", [(5.98, 567_978, "4.33"), (6.01, 569_878, "4.35")],
                         ids=["issue612", "issue652"])
def test_club_qwen3_6_35b_a3b_5090_v0_24_layout_from_the_logged_pool(pool, tokens, conc):
    # Qwen3.6-35B-A3B = Qwen3.5-35B-A3B's text shapes: 10 full-attention layers (2 KV heads x 256) + 30 GDN layers in
    # 4 groups of 10; fp8 KV: block 2096, a page of 10 x 2096 x 2 x 2 x 256 x 1 B = 21,463,040 B. A 131,072-token
    # request: cdiv(131072, 2096) = 63 attention blocks + 2 x 3 GDN blocks (align mode) = 69. 5.98 GiB //
    # 21,463,040 = 299 blocks: 299 / 69 = 4.333x, tokens int(4.333 x 131072) = 567,978 (0.24: the concurrency line)
    p = _plan(CLUB_35B, "qwen3.6-35b-a3b-nvfp4", "RTX-5090", "0.24", pool)
    assert p.block_size == 2096 and p.ranks[0].bytes_per_block == 21_463_040 and p.blocks_per_request == 69
    assert p.kv_cache_tokens == tokens and f"{p.max_concurrency:.2f}" == conc


def test_club_qwen3_6_35b_a3b_5090_v0_24_pool_from_the_flags():
    # kvplan 6.08 GiB against 5.98 (#612, +0.10) and 6.01 (#652, +0.07): 31.36 GiB x 0.92 = 28.85 - weights 20.35
    # (the preset's NVFP4 export, vision tower 0.83 inside) - the encoder-step activation peak 2.08 (one image item
    # profiled above the 8192 batched tokens) - non-torch 0.25 - CUDA graphs 0.09 (capture sizes [1, 2]);
    # 577,476 tokens (+1.7 % / +1.3 % on the logged: inside the pool tolerance, outside the 1 % token one, so the
    # tokens are pinned from the logged pool above, not here)
    p = _plan(CLUB_35B, "qwen3.6-35b-a3b-nvfp4", "RTX-5090", "0.24")
    assert close_gib(p.ranks[0].kv_pool_bytes, 5.98) and close_gib(p.ranks[0].kv_pool_bytes, 6.01)
    assert abs(p.ranks[0].kv_pool_bytes / GiB - 6.08) < 0.01


# ----------------------------------------------------------------------------- CLUB594: 0.24.0, 2 x RTX 3090

CLUB594 = ("vllm serve ~/.cache/huggingface/qwen3.6-27b-fp8 --trust-remote-code --dtype bfloat16 "
           "--max-model-len 262144 --quantization fp8 --tensor-parallel-size 2 --disable-custom-all-reduce "
           "--kv-cache-dtype fp8 --enable-prefix-caching --max-num-batched-tokens 8192 --max-num-seqs 2 "
           "--enable-chunked-prefill --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'")


def test_club594_qwen3_6_27b_fp8_tp2_mtp3_layout_from_the_logged_pool():
    # Qwen3.6-27B = Qwen3.5-27B's shapes (the qwen3.5-27b preset): 64 layers, 16 full attention (4 KV heads x 256) +
    # 48 GDN, + the MTP layer's attention; fp8 KV, TP 2: block 1600 (the GDN page with 3 + 1 draft state rows), a page
    # of 27,852,800 B. 5.33 GiB // 27,852,800 = 205 blocks; 300,220 tokens and 1.15x as logged. Without MTP the page
    # is 1568 tokens and the tokens 334,459 (+11 %): the drafter's pages are in the logged figure
    p = _plan(CLUB594, "qwen3.5-27b", "RTX-3090", "0.24", 5.33, tp=2)
    assert p.block_size == 1600 and p.ranks[0].bytes_per_block == 27_852_800
    assert p.kv_cache_tokens == 300_220 and f"{p.max_concurrency:.2f}" == "1.15"


def test_club594_qwen3_6_27b_fp8_tp2_mtp3_pool_from_the_flags():
    # kvplan 5.35 GiB (+0.02): 23.56 x 0.92 = 21.68 - weights 14.50 a rank (the bf16 preset at --quantization fp8,
    # Marlin on Ampere, standing in for the FP8 checkpoint; MTP layer 0.22 and the vision tower 0.43 inside) - the
    # encoder-step peak 1.47 - non-torch 0.25 - graphs 0.11; 301,685 tokens (+0.49 %), 1.15x
    p = _plan(CLUB594, "qwen3.5-27b", "RTX-3090", "0.24", tp=2)
    assert close_gib(p.ranks[0].kv_pool_bytes, 5.33) and abs(p.ranks[0].kv_pool_bytes / GiB - 5.33) < 0.05
    assert close(p.kv_cache_tokens, 300_220) and f"{p.max_concurrency:.2f}" == "1.15"


# ----------------------------------------------------------------------------- CLUB294 / CLUB295: 0.20.x, 2 x RTX 3090

CLUB294 = ("vllm serve ~/.cache/huggingface/qwen3.6-27b-autoround-int4 --trust-remote-code --dtype float16 "
           "--max-model-len 262144 --tensor-parallel-size 2 --disable-custom-all-reduce --kv-cache-dtype fp8_e5m2 "
           "--enable-prefix-caching --max-num-batched-tokens 8192 --max-num-seqs 2 --enable-chunked-prefill "
           "--speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'")


@pytest.mark.parametrize("blocks, tokens", [(425, 622_408), (424, 620_944)], ids=["issue294", "issue295"])
def test_club294_295_qwen3_6_27b_mtp3_tp2_blocks_behind_the_tokens_line(blocks, tokens):
    # fp8_e5m2 KV, MTP 3, TP 2: block 1600, 179 blocks a 262,144-token request (cdiv(262144, 1600) = 164 x the
    # attention group + the GDN groups' align pages + the drafter's). From 0.20.1 the tokens line is
    # int(num_blocks / 179 x 262,144): 425 blocks give 622,408 (#294) and 424 give 620,944 (#295) exactly -- one
    # block count in ~1,464 tokens hits a given figure, so both hitting pins the 179 -- and 2.37x both. Those blocks
    # are 11.02 / 11.00 GiB a rank (a third 2 x 3090 Qwen3.6-27B AutoRound log, club-3090 #104, reads 11.06 GiB).
    # The same on the 0.20.1 and 0.21 lines (the release is a 0.20.x - 0.21 build)
    bpb = 27_852_800
    assert [n for n in range(300, 600) if int(n / 179 * 262_144) == tokens] == [blocks]
    for version in ("0.20.1", "0.21"):
        p = _plan(CLUB294, "qwen3.5-27b", "RTX-3090", version, blocks * bpb / GiB, tp=2)
        assert p.block_size == 1600 and p.ranks[0].bytes_per_block == bpb and p.blocks_per_request == 179
        assert p.num_blocks == blocks and p.kv_cache_tokens == tokens and f"{p.max_concurrency:.2f}" == "2.37"


# ----------------------------------------------------------------------------- MITCHROSS1995: 2 x RTX 3090, 0.28+

MITCHROSS = ("vllm serve Qwen/Qwen3.8-27B-FP8 --tensor-parallel-size 2 --gpu-memory-utilization 0.92 "
             "--kv-cache-dtype fp8_e4m3 --enable-prefix-caching --enable-chunked-prefill "
             "--max-num-batched-tokens 8192 --max-model-len 131072 --max-num-seqs 2")


def test_mitchross_qwen3_8_27b_fp8_tp2_3090_layout_from_the_logged_pool():
    # Qwen3.8-27B keeps Qwen3.5-27B's shapes (16 of 64 layers attend, 4 KV heads x 256: the PR's own "32 KiB/token"
    # at fp8 before TP). TP 2, fp8: block 1568 (the PR: "ceil(262144/1568) = 168"), a page of 25,690,112 B; 4.99 GiB
    # // 25,690,112 = 208 blocks, 90 a 131,072-token request: 2.31x and int(208 / 90 x 131,072) = 302,921, as logged
    for version in ("0.28", "0.29"):
        p = _plan(MITCHROSS, "qwen3.5-27b", "RTX-3090", version, 4.99, tp=2)
        assert p.block_size == 1568 and p.ranks[0].bytes_per_block == 25_690_112
        assert p.num_blocks == 208 and p.blocks_per_request == 90
        assert p.kv_cache_tokens == 302_921 and f"{p.max_concurrency:.2f}" == "2.31"


# ----------------------------------------------------------------------------- AEON: 0.20.2, TP 2 and TP 4

AEON = ("vllm serve AEON-7/Qwen3.6-27B-AEON-Ultimate-Uncensored-Multimodal-NVFP4-MTP --host 0.0.0.0 --port 8000 "
        "--served-model-name aeon-qwen3.6-nvfp4-mtp --quantization modelopt --tensor-parallel-size {tp} "
        "--max-model-len 196608 --max-num-seqs 10 --max-num-batched-tokens 4096 --gpu-memory-utilization 0.92 "
        "--reasoning-parser qwen3 --tool-call-parser qwen3_coder --speculative-config "
        "'{{\"method\":\"mtp\",\"num_speculative_tokens\":3}}' --limit-mm-per-prompt '{{\"image\":4,\"video\":0}}' "
        "--trust-remote-code --enable-prefix-caching --enable-auto-tool-choice --kv-cache-dtype fp8 "
        "--no-enable-flashinfer-autotune")


@pytest.mark.parametrize("tp, pool, blocks, tokens, conc", [(2, 6.35, 244, 347_625, "1.77"),
                                                             (4, 5.61, 432, 615_468, "3.13")],
                         ids=["2xPRO4000", "4x5060Ti"])
def test_aeon_qwen3_6_27b_nvfp4_mtp3_v0_20_2_layout_from_the_logged_pool(tp, pool, blocks, tokens, conc):
    # block 1600 (MTP 3), a page of 27,852,800 B at TP 2 and 13,926,400 B at TP 4; 138 blocks a 196,608-token request.
    # 0.20.1 - 0.20.2 log int(concurrency x max_model_len): 244 / 138 x 196,608 = 347,625 and 432 / 138 x 196,608 =
    # 615,468, as logged. On the 0.20.0 line (num_blocks // groups x block) the same pools read 97,600 / 172,800.
    # The AEON merge loaded on 0.20.2, so it is not nvidia's MIXED_PRECISION W4A16_NVFP4 export (vLLM maps
    # W4A16_NVFP4 inside MIXED_PRECISION from 0.22.0: kvplan.vllm_layouts.modelopt_refusal refuses the preset's own
    # formats there); the preset's shapes are planned as W4A4 "nvfp4", which the layout does not depend on
    p = _plan(AEON.format(tp=tp), "qwen3.6-27b-nvfp4", "RTX-5090", "0.20.1", pool, tp=tp, weight_format="nvfp4")
    assert p.block_size == 1600 and p.ranks[0].bytes_per_block == 55_705_600 // tp
    assert p.num_blocks == blocks and p.blocks_per_request == 138
    assert p.kv_cache_tokens == tokens and f"{p.max_concurrency:.2f}" == conc
    assert _plan(AEON.format(tp=tp), "qwen3.6-27b-nvfp4", "RTX-5090", "0.20", pool, tp=tp,
                 weight_format="nvfp4").kv_cache_tokens == blocks // 4 * 1600


# ----------------------------------------------------------------------------- SPARK396: 0.29.1rc1, MiniMax-M2.7 TP 2

SPARK = ("vllm serve MiniMaxAI/MiniMax-M2.7 --tensor-parallel-size 2 --max-model-len 196608 "
         "--gpu-memory-utilization {util} --trust-remote-code")


def test_spark396_minimax_m2_7_tp2_refusal_from_the_logged_pool():
    # 62 layers x 8 KV heads x 128 x 2 x 2 B / TP 2 = 126,976 B a token, 16-token blocks of 2,031,616 B. One
    # 196,608-token request: 12,288 blocks = 24,964,497,408 B = "23.25 GiB KV cache is needed" > 22.5. vLLM's
    # estimate_max_model_len counts bytes (every block of the pool): 22.50 GiB // 2,031,616 = 11,891 blocks =
    # 190,256 tokens; the logged 190,272 is 11,892 blocks = 24,159,977,472 B = 22.5007 GiB, inside the 2-decimal
    # rounding of "22.5". Before the 2026-12-02 fix kvplan named 190,240 (the null block kept out)
    p = _plan(SPARK.format(util=0.8), "minimax-m2.7", "B300", "0.29", 22.5, tp=2)  # B300: the bf16 preset fits
    assert p.ranks[0].kv_bytes_per_token == 126_976 and p.blocks_per_request == 12_288
    assert "(23.25 GiB KV cache is needed" in p.start_error and "available KV cache memory (22.50 GiB)" in p.start_error
    assert "the estimated maximum model length is 190256." in p.start_error
    assert close(190_256, 190_272) and 22.495 * GiB <= 11_892 * 2_031_616 < 22.505 * GiB


def test_spark396_minimax_m2_7_tp2_tokens_from_the_logged_pool():
    # the logged 28.74 GiB // 2,031,616 = 15,189 blocks: 243,024 tokens, +0.92 % on the logged 240,816 (inside 1 %)
    p = _plan(SPARK.format(util=0.85), "minimax-m2.7", "B300", "0.29", 28.74, tp=2)
    assert p.num_blocks == 15_189 and p.kv_cache_tokens == 243_024 and close(p.kv_cache_tokens, 240_816)


@pytest.mark.xfail(strict=True, reason=(
    "MiniMax-M2.7 AWQ TP 2 on 2 x DGX Spark, vLLM 0.29.1rc1, util 0.85: from the logged 28.74 GiB pool kvplan gives "
    "15,189 blocks of 2,031,616 B, 1.24x against the logged 1.22x (+1.3 %; tokens 243,024 vs 240,816, +0.92 %). The "
    "logged tokens are 15,051 blocks = 28.48 GiB, 0.26 GiB under the logged pool; the issue quotes both in prose "
    "('28.74 GiB KV -> 240,816 tokens, 1.22x'), the build is an unpublished dev wheel on unified memory, and no "
    "block size or layer count explains the shortfall (it is 0.57 of a layer): unexplained, not fixed"))
def test_spark396_minimax_m2_7_tp2_concurrency_from_the_logged_pool():
    p = _plan(SPARK.format(util=0.85), "minimax-m2.7", "B300", "0.29", 28.74, tp=2)
    assert close(p.max_concurrency, 1.22)
