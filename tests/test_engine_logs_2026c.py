"""Public vLLM start-up logs of 2026 reproduced from their launch inputs (issue 11, the third 2026 round).

Tolerances as tests/test_engine_logs.py: memory within max(1 %, 0.25 GiB), tokens and concurrency within 1 %. A miss is
a strict xfail whose reason gives logged vs kvplan and the term thought to be off. Where the search index names no
repository, its file id (read_file) is the citation. Neither log is pinned elsewhere in tests/ (sources, issue numbers
and file ids grepped 2026-12-01).

Sources (all read 2026-12-01):
- RTX5090-QWEN38: a speculative-decoding report "Qwen3.8-27B 在 RTX 5090 32G 上的 vLLM 投机解码对比" (index file id
  61652519493), "完全基于 7 份 vLLM 日志"; its ``1.log`` (2026-08-23): vLLM "0.26.1rc1.dev1108+gda329cc30" (banner),
  /hy-tmp/models/Qwen3.8-27B-NVFP4 (Qwen3_5ForConditionalGeneration, ModelOpt NVFP4 / W4A16_NVFP4, "Checkpoint size:
  20.42 GiB", the same as nvidia/Qwen3.6-27B-NVFP4's in index file id 61569442000), "Free memory on device
  (30.86/31.36 GiB)" (an RTX 5090), non-default args max_model_len 196608, max_num_batched_tokens 2048, max_num_seqs
  1, gpu_memory_utilization 0.95, kv_cache_dtype fp8, quantization modelopt, port 11434, trust_remote_code; "Mamba cache
  mode is set to 'align'" with no enable_prefix_caching among the non-default args: the dev build carries the 0.28.0
  default of prefix caching on for hybrids (vllm PR #50991), so it is planned as "0.28".
- B200-DSV4-TP8: vllm-project/recipes#762 (stewtong, 2026-08-07; data in vllm-project/vllm#51454): DeepSeek-V4-Flash-
  0731 on 8 x B200, vLLM 0.25.0, "156.9x vs 20.43x max concurrency at 1M context per startup log" (DP8 vs TP8); the DP8
  non-default args of #51454: enable_expert_parallel, block_size 256, gpu_memory_utilization 0.95, kv_cache_dtype fp8,
  max_num_batched_tokens 8192, max_num_seqs 256, moe_backend deep_gemm_mega_moe (max_model_len left at the checkpoint's
  1,048,576); the TP8 run the same with tensor_parallel_size 8 for data_parallel_size 8.
"""

import json
from pathlib import Path

import pytest

from kvplan import parse_config
from kvplan.gpus import get_gpu
from kvplan.units import GiB
from tests.test_engine_logs import close, close_gib
from tests.test_engine_logs_dec import _plan
from tests.test_engine_logs_found import _term

FIXTURES = Path(__file__).parent / "fixtures" / "configs"


def _fixture(name: str):
    return parse_config(json.loads((FIXTURES / f"{name}.json").read_text()), name)


# ----------------------------------------------------------------------------- RTX5090-QWEN38: vLLM 0.26.1 dev, RTX 5090

RTX5090_QWEN38 = "vllm serve /hy-tmp/models/Qwen3.8-27B-NVFP4 --trust-remote-code --quantization modelopt " \
                 "--kv-cache-dtype fp8 --max-model-len 196608 --max-num-seqs 1 --max-num-batched-tokens 2048 " \
                 "--gpu-memory-utilization 0.95 --host 0.0.0.0 --port 11434"


def _rtx5090_qwen38():
    # Qwen3.8-27B-NVFP4: the qwen3.6-27b-nvfp4 fixture (nvidia/Qwen3.6-27B-NVFP4, the Qwen3.5-27B shape, the same
    # ModelOpt mixed FP8 / NVFP4 config and the same 20.42 GiB checkpoint)
    return _plan(_fixture("qwen3.6-27b-nvfp4"), get_gpu("RTX-5090"), RTX5090_QWEN38, "0.28")


def test_rtx5090_qwen38_27b_nvfp4_weights_and_pool():
    # "Model loading took 19.78 GiB" (gpu_model_runner.py:5508); "Available KV cache memory: 7.33 GiB"; the report's
    # table: peak activation 2.22 GiB, CUDA graph 0.05 GiB. kvplan: 19.75 (incl. the 0.86 GiB vision tower) / 7.49
    # (+0.16: inside 0.25) / activation 2.17 / graphs 0.13
    p = _rtx5090_qwen38()
    r = p.ranks[0]
    assert close_gib(r.weights_bytes, 19.78), r.weights_bytes / GiB
    assert close_gib(r.kv_pool_bytes, 7.33), r.kv_pool_bytes / GiB
    assert close_gib(_term(p, "activation peak"), 2.22)


def test_rtx5090_qwen38_27b_nvfp4_layout_reproduces_the_tokens_line_from_the_logged_pool():
    # fp8 KV: a full-attention page is 1568 tokens x 4 KV heads x 256 x 2 (K, V) x 1 B = 3,211,264 B, the Gated-DeltaNet
    # state page padded to it; 16 layer slots (16 full + 48 GDN layers in 4 groups of 16): 51,380,224 B a block.
    # A 196,608-token request: 126 attention blocks + 3 GDN groups x 2 pages (prefix caching's "align" mode,
    # MambaSpec.max_memory_usage_bytes = page x (2 + num_speculative_blocks)) = 132.
    # From the logged pool: floor(7.33 GiB / 51,380,224) = 153 blocks; 153 / 132 = 1.159 -> "Maximum concurrency for
    # 196,608 tokens per request: 1.16x" and int(153 / 132 x 196,608) = 227,886 = "GPU KV cache size: 227,886 tokens"
    p = _rtx5090_qwen38()
    assert p.block_size == 1568 and p.ranks[0].bytes_per_block == 16 * 1568 * 4 * 256 * 2 == 51_380_224
    assert p.blocks_per_request == 126 + 3 * 2 == 132
    blocks = int(7.33 * GiB) // p.ranks[0].bytes_per_block
    assert blocks == 153 and f"{blocks / 132:.2f}" == "1.16" and int(blocks / 132 * 196_608) == 227_886


@pytest.mark.xfail(strict=True, reason=(
    "tokens: logged 227,886 (1.16x), kvplan 233,844 (+2.61 %, 1.19x) from its 7.53 GiB pool (157 blocks, not 153); "
    "the layout is exact (test above), the miss is the pool's +0.20 GiB: the log leaves 0.95 x 31.36 - 19.78 - 2.22 - "
    "0.05 - 7.33 = 0.41 GiB of non-torch memory where kvplan plans 0.25 (non-torch term: FlashInfer / CUTLASS NVFP4 "
    "workspaces on sm120 not modelled; not the SM 12.0 held compile copy of kvplan.engines.vllm_sm120_held_copy: the "
    "vision tower embeds outside the compiled graph, so there is no copy), partly offset by kvplan's CUDA-graph estimate 0.09 vs the logged 0.05 (graph "
    "term, being remodelled)"))
def test_rtx5090_qwen38_27b_nvfp4_tokens():
    p = _rtx5090_qwen38()
    assert close(p.kv_cache_tokens, 227_886), p.kv_cache_tokens
    assert close(p.max_concurrency, 1.16), p.max_concurrency


# ----------------------------------------------------------------------------- B200-DSV4-TP8: vLLM 0.25.0, 8 x B200

B200_DSV4 = "vllm serve /root/.cache/huggingface/hub/models--deepseek-ai--DeepSeek-V4-Flash-0731/snapshots/" \
            "7872f01b1d1fe23eabc4c98b48bffcef5a386062 --trust-remote-code --enable-expert-parallel --block-size 256 " \
            "--gpu-memory-utilization 0.95 --kv-cache-dtype fp8 --max-num-batched-tokens 8192 --max-num-seqs 256 " \
            "--tensor-parallel-size 8"


@pytest.mark.xfail(strict=True, reason=(
    "concurrency at 1,048,576 tokens: logged 20.43x (TP8), kvplan 21.51x (+5.3 %) on its 147.14 GiB pool a rank. The "
    "layout is vLLM 0.25's (kvplan/vllm_dsv4.py, tests/test_vllm_dsv4.py: 1,039,680 B a block, 7065 blocks a 1M "
    "request), so 20.43x needs a 139.73 - 139.79 GiB pool: the miss is the pool, ~7.35 GiB too big. The weights are "
    "now the checkpoint's (config.json expert_dtype \"fp4\": MXFP4 routed experts, 18.87 GiB a rank, was 33.99 as FP8; "
    "tests/test_dsv4_weights.py), with the model's two fp32 cos/sin tables (0.5 GiB) and its topk_indices_buffer + "
    "_mtp_hidden_buffer (0.27 GiB at 8,192 batched tokens; tests/test_dsv4_mtp.py): 19.64 GiB loaded; kvplan plans 0.52 "
    "GiB of activation peak, 1.17 of non-torch memory and a 0.97 GiB CUDA-graph estimate, and does not "
    "model DeepGEMM MegaMoE's symmetric buffer (--moe-backend deep_gemm_mega_moe in #51454's args, not in the serve "
    "line pinned here; one buffer a rank shared by every MoE layer, vLLM 0.25 models/deepseek_v4/nvidia/model.py "
    "_symm_buffer_cache, get_symm_buffer_for_mega_moe) nor DSV4's own forward workspaces (indexer / compressor), the "
    "~7.4 GiB the log implies beyond kvplan's terms. That buffer, from the DeepGEMM vendored in the 0.25.0 wheel "
    "(third_party/deep_gemm/include/deep_gemm/layout/mega_moe.cuh Workspace + impls/sm100_fp8_fp4_mega_moe.cuh's "
    "buffer chain: workspace 74.8 MB, inputs, L1 pool x 4096 B, L2 pool x 2048 B, SF pools, combine 6 x T x 8192 B) at "
    "8 EP ranks, 256 experts, top-6, hidden 4096, intermediate 2048, T = align(8192, 384) = 8448 tokens a rank, pool "
    "align(8 x 8448 x 6 + 32 x 191, 384) = 411,648 tokens: 2.95 GiB (SF pool sized for BLOCK_M 192) to 4.02 GiB "
    "(BLOCK_M 8; the host-side choice is compiled into _C, not shipped as source). Subtracted, kvplan would give "
    "20.92x - 21.08x (+2.4 - 3.2 %): >= 3.3 GiB stays unexplained (DSV4 forward workspaces), so the buffer alone "
    "does not bring this log within tolerance and is not modelled yet"))
def test_b200_dsv4_flash_0731_tp8_concurrency_at_1m():
    # DeepSeek-V4-Flash-0731: the deepseek-v4-flash fixture (the same 284B architecture). vLLM 0.25: the concurrency
    # line is num_blocks / 7065 (get_max_concurrency_for_kv_cache_config, hand-derived in tests/test_vllm_dsv4.py),
    # num_blocks = pool // 1,039,680; 20.43 x 7065 x 1,039,680 B = 139.76 GiB
    p = _plan(_fixture("deepseek-v4-flash"), get_gpu("B200"), B200_DSV4, "0.25")
    assert p.blocks_per_request == 7065 and p.ranks[0].bytes_per_block == 1_039_680
    assert close(p.max_concurrency, 20.43), p.max_concurrency
