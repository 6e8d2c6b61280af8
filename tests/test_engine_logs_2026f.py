"""Public vLLM start-up logs of 2026 H2 reproduced from their launch inputs (the sixth 2026 round, 0.29 - 0.30).

Tolerances as tests/test_engine_logs.py: memory within max(1 %, 0.25 GiB), tokens and concurrency within 1 %. A miss is
a strict xfail whose reason gives logged vs kvplan and the term thought to be off. No log here is pinned elsewhere in
tests/ (file ids, models and figures grepped 2026-12-02). Where the search index names no repository for a file, its
file id (read_file) is the citation.

Sources (all read 2026-12-02):
- RTX5060TI-029-TYPHOON: "WP24 run 2 -- candidate A on Linux, vLLM engine: measurements" (index file id 69218136759,
  record WP24-2026-09-24-run2, measured 2026-09-25): one RTX 5060 Ti ("16 311 MiB", an sm120 card) in a Linux
  container on a Windows host (DESKTOP-VETATMQ, Docker's WSL2 backend), the weights typhoon2.5-qwen3-4b@ce0a741, bf16,
  ``Qwen3ForCausalLM``. Candidate B is bare vLLM 0.29.0 at ``gpu_memory_utilization = 0.70`` with 8,192-token
  requests: "Model loading took ... 7.64 GiB", "GPU KV cache size 10 576 tokens", "Maximum concurrency for 8 192
  tokens 1.29x", "8.59 GiB consumed + 1.09 peak + 0.23 CUDAGraph", and its warning "gpu_memory_utilization=0.7000 is
  equivalent to --gpu-memory-utilization=0.6762 without CUDA graph memory profiling". Candidate A is the same weights
  through Xinference on vLLM 0.30.0 at 0.70: "7.64 GiB" again, 19,744 tokens, 2.41x (Xinference's own engine
  arguments are not in the record, so only that run's weights are pinned). Typhoon 2.5 Qwen3 4B is a fine-tune of
  Qwen3-4B-Instruct-2507 (its "Model loading took 7.64 GiB" is that checkpoint's in every log of it, see
  tests/test_engine_logs_2026e.py), so that file's config stands in. The card is not in kvplan.gpus: the RTX-5070-Ti
  row (the same GDDR7 16 GB Blackwell class) with the record's 16,311 MiB as its memory stands in; under WSL2 torch
  reports nvidia-smi's total (the RTX 4090 of tests/test_engine_logs_2026e.py: 23.99 GiB).
- GB10-030-CANDIDATES: "Live agent table: candidate model benchmark" (index file id 70267910602, generated 2026-10-08 by
  scripts/bench_candidates.py): "GB10, vLLM 0.30, gpu-mem-util 0.55", 32,768-token requests ("Maximum concurrency for
  32,768 tokens per request"), each candidate's own engine log excerpt: Qwen/Qwen3-30B-A3B-Thinking-2507-FP8 "Model
  loading took 29.1 GiB" ("Selected TritonFp8BlockScaledMMKernel for Fp8LinearMethod", 394,016 tokens, 12.02x),
  openai/gpt-oss-20b "13.8 GiB" (1,968,672 tokens, 60.08x), NousResearch/Hermes-4-14B-FP8 "15.34 GiB"
  ("ChannelWiseTorchFP8ScaledMMLinearKernel for CompressedTensorsW8A8Fp8", 319,328 tokens, 9.75x). The GB10's unified
  memory pool is not planned (see tests/test_engine_logs_2026e.py), and its CUDA-graph estimates (0.55 vs 0.5410 /
  0.5400 equivalents) are not pinned either: their basis (the 121.69 GiB vLLM sees there) is not in the record. The
  weights are: they do not depend on the card but for the MoE backend's layout. Qwen/Qwen3.6-35B-A3B-FP8 "33.38 GiB"
  (1,468,523 tokens, 44.82x) and Qwen/Qwen3.8-27B-FP8 "27.64 GiB" (445,781 tokens, 13.60x) are pinned as text-only loads
  (the figures themselves say the vision tower was not built; the record does not list the flags). Left out: the
  record's GLM-4.7-Flash-FP8 and Nemotron-3.5-Lightning (no config here), and gemma-4-26B-A4B-it-FP8-dynamic (the
  image failed to inspect the architecture).
- LAPTOP4070-030-QWEN15B: a benchmark harness's tests (index file id 71535514190, its twin 71015421311), "Verbatim lines
  from the vLLM v0.30.0 smoke-test container log (2026-10-02)" on an RTX 4070 Laptop GPU (8,188 MiB), the experiment's
  model Qwen/Qwen2.5-1.5B-Instruct: "Model loading took 2.98 GiB memory", "Available KV cache memory: 1.95 GiB", "GPU
  KV cache size: 72,992 tokens, Maximum concurrency for 4,096 tokens per request: 17.82x". The smoke run's utilization
  and the memory torch sees on that laptop are not in the file, so the weights and the layout are pinned, not the pool.
"""

import json
from pathlib import Path

import pytest

from kvplan import load_preset, parse_config
from kvplan.gpus import custom_gpu, get_gpu
from kvplan.units import GiB

from tests.test_engine_logs import close, close_gib
from tests.test_engine_logs_2026d import _qwen2_5
from tests.test_engine_logs_2026e import _qwen3_4b_2507
from tests.test_engine_logs_dec import _plan
from tests.test_engine_logs_found import _term

PRESETS = Path(__file__).parent.parent / "kvplan" / "presets"
FIXTURES = Path(__file__).parent / "fixtures" / "configs"

# ------------------------------------------------- RTX5060TI-029-TYPHOON: vLLM 0.29.0 / 0.30.0, RTX 5060 Ti under WSL2

RTX5060TI = get_gpu("RTX-5070-Ti").model_copy(update={"name": "RTX-5060-Ti-16GB", "memory_bytes": 16_311 * 2**20})
TYPHOON = "vllm serve typhoon2.5-qwen3-4b --gpu-memory-utilization 0.70 --max-model-len 8192"


def _typhoon(version: str):
    return _plan(_qwen3_4b_2507(), RTX5060TI, TYPHOON, version)


def test_rtx5060ti_v0_29_typhoon_qwen3_4b_weights_peak_and_graph_estimate():
    p = _typhoon("0.29")
    r = p.ranks[0]
    # 4.02 B parameters x 2 B + the rotary table and 2 MiB segments: kvplan 7.61 GiB, logged 7.64
    assert close_gib(r.weights_bytes, 7.64), r.weights_bytes / GiB
    # 0.29's "peak activation" is the profiled peak plus the applied CUDA-graph estimate (gpu_worker.py
    # determine_available_memory: peak_activation_memory = transient_peak_headroom + cudagraph_memory_estimate_applied).
    # The warning gives the estimate: (0.7000 - 0.6762) x 15.93 GiB = 0.379 GiB, so the profiled peak is 1.09 - 0.379 =
    # 0.711. kvplan: peak 0.724 (the V2 runner's cold-compile copy of the 151,936 x 2,560 embedding, 2048 batched
    # tokens) and estimate 0.461 (+0.08); together 1.185 against the logged 1.09
    estimate = (0.7000 - 0.6762) * RTX5060TI.memory_bytes
    assert abs(_term(p, "activation peak") - (1.09 * GiB - estimate)) <= 0.05 * GiB
    assert close_gib(_term(p, "CUDA graphs"), estimate / GiB)
    assert close_gib(_term(p, "activation peak") + _term(p, "CUDA graphs"), 1.09)
    # the layout: 36 layers x 2 x 8 KV heads x 128 x 2 B = 147,456 B a token, 16-token blocks; 10,576 tokens = 661
    # blocks = 1.4524 GiB (the log's 0.70 x 15.93 - 8.59 - 1.09 = 1.47, its figures rounded to 2 decimals);
    # 10,576 / 8,192 = 1.29x
    assert r.kv_bytes_per_token == 147_456 and 10_576 % 16 == 0
    assert abs(0.70 * RTX5060TI.memory_bytes / GiB - 8.59 - 1.09 - 10_576 * 147_456 / GiB) <= 0.03
    assert round(10_576 / 8_192, 2) == 1.29


@pytest.mark.xfail(strict=True, reason=(
    "RTX 5060 Ti under WSL2, vLLM 0.29.0, Qwen3-4B at 0.70 / 8192: kvplan's pool is 1.23 GiB against the logged "
    "10,576 tokens = 1.45 GiB (-0.22 GiB; 8,928 tokens, -15.6 %; 1.09x vs 1.29x). The log's own split: peak + graph "
    "estimate match (1.185 vs 1.09, above); 'consumed (weights + non-torch)' is 8.59 GiB against kvplan's 7.61 "
    "weights + 0.25 non-torch + 0.15 V2 sampler state + 0.72 for the cold compile's embedding copy held a second time "
    "on SM 12.0 (kvplan.engines.vllm_sm120_held_copy, fitted to the RTX 5090 logs, where it closes +0.69 / +0.82 GiB "
    "to -0.03 / +0.10) = 8.74 (+0.15): this card holds 0.58 GiB there, not 0.72 (before the held copy: +0.50 GiB, "
    "+34 % tokens). A different box (WSL2, a desktop host the record says ran other workloads during the "
    "measurement, so its free-memory difference is not this process's alone); 1 % of 10,576 tokens is 15 MiB"))
def test_rtx5060ti_v0_29_typhoon_qwen3_4b_pool_and_tokens():
    p = _typhoon("0.29")
    assert close_gib(p.ranks[0].kv_pool_bytes, 10_576 * 147_456 / GiB), p.ranks[0].kv_pool_bytes / GiB
    assert close(p.kv_cache_tokens, 10_576), p.kv_cache_tokens
    assert close(p.max_concurrency, 1.29), p.max_concurrency


def test_rtx5060ti_v0_30_typhoon_qwen3_4b_weights_through_xinference():
    # the same weights on vLLM 0.30.0 (kvplan's 0.30 line): "Model loading took 7.64 GiB" again; the run's pool
    # (19,744 tokens at 0.70) depends on engine arguments Xinference passes that the record does not list
    p = _typhoon("0.30")
    assert close_gib(p.ranks[0].weights_bytes, 7.64), p.ranks[0].weights_bytes / GiB
    assert p.ranks[0].weights_bytes == _typhoon("0.29").ranks[0].weights_bytes
    # 19,744 tokens is whole 16-token blocks of the same 147,456 B layout (1,234 blocks), 19,744 / 8,192 = 2.41x
    assert 19_744 % 16 == 0 and round(19_744 / 8_192, 2) == 2.41


# ------------------------------------------------ GB10-030-CANDIDATES: vLLM 0.30, "Model loading took" on a DGX Spark

GB10 = custom_gpu(121.69, 0.27, 100.0, name="GB10-standin", gpus_per_node=1)  # the weights do not depend on the card
GB10_030 = "vllm serve {} --gpu-memory-utilization 0.55 --max-model-len 32768"


def _with_quant(preset: str, quant: dict, name: str, **fields):
    cfg = json.loads((PRESETS / f"{preset}.json").read_text())
    cfg.update(fields, quantization_config=quant)
    return parse_config(cfg, name)


def test_gb10_v0_30_qwen3_30b_a3b_thinking_2507_fp8_weights():
    # Qwen's fine-grained FP8 (128 x 128 blocks, "TritonFp8BlockScaledMMKernel for Fp8LinearMethod") over the
    # qwen3-30b-a3b preset's shapes, with the 2507 release's 262,144 positions and rope_theta 1e7: 30.5 B parameters,
    # the expert and attention linears at 1 B + fp32 block scales, embeddings / router / norms bf16: kvplan 29.10 GiB,
    # logged "Model loading took 29.1 GiB"
    quant = json.loads((FIXTURES / "qwen3-32b-fp8.json").read_text())["quantization_config"]
    spec = _with_quant("qwen3-30b-a3b", quant, "qwen3-30b-a3b-thinking-2507-fp8", max_position_embeddings=262144,
                       rope_theta=10000000)
    p = _plan(spec, GB10, GB10_030.format("Qwen/Qwen3-30B-A3B-Thinking-2507-FP8"), "0.30")
    assert close_gib(p.ranks[0].weights_bytes, 29.1), p.ranks[0].weights_bytes / GiB


def test_gb10_v0_30_gpt_oss_20b_weights():
    # MXFP4 experts with the rest bf16 (the gpt-oss-20b preset, its own quantization_config): kvplan 13.70 GiB in the
    # layout it picks for a card without a named architecture, logged "Model loading took 13.8 GiB" (the record's
    # backend column: "auto")
    p = _plan(load_preset("gpt-oss-20b"), GB10, GB10_030.format("openai/gpt-oss-20b"), "0.30")
    assert close_gib(p.ranks[0].weights_bytes, 13.8), p.ranks[0].weights_bytes / GiB


def test_gb10_v0_30_hermes_4_14b_fp8_weights():
    # NousResearch/Hermes-4-14B is a Qwen3-14B fine-tune; its FP8 build is compressed-tensors W8A8 FP8 per channel
    # ("ChannelWiseTorchFP8ScaledMMLinearKernel for CompressedTensorsW8A8Fp8", the ct-fp8-dynamic fixture's scheme,
    # lm_head kept): kvplan 15.22 GiB, logged "Model loading took 15.34 GiB"
    quant = json.loads((FIXTURES / "ct-fp8-dynamic.quantization_config.json").read_text())
    spec = _with_quant("qwen3-14b", quant, "hermes-4-14b-fp8")
    p = _plan(spec, GB10, GB10_030.format("NousResearch/Hermes-4-14B-FP8"), "0.30")
    assert close_gib(p.ranks[0].weights_bytes, 15.34), p.ranks[0].weights_bytes / GiB


def _qwen_fp8(preset_or_fixture: str):
    quant = json.loads((FIXTURES / "qwen3-32b-fp8.json").read_text())["quantization_config"]
    if preset_or_fixture == "qwen3.6-35b-a3b":  # the NVFP4 fixture's shapes, its quantization_config replaced
        cfg = json.loads((FIXTURES / "qwen3.6-35b-a3b-nvfp4.json").read_text())
        cfg["quantization_config"] = quant
        return parse_config(cfg, "qwen3.6-35b-a3b-fp8")
    return _with_quant(preset_or_fixture, quant, "qwen3.8-27b-fp8")


def test_gb10_v0_30_qwen3_6_35b_a3b_fp8_and_qwen3_8_27b_fp8_text_only_weights():
    # Qwen's block FP8 on every linear of the two hybrids (40 layers of 256 experts; 64 dense layers). The record's
    # weights are a text-only load: without the vision tower kvplan gives 33.38 GiB (logged 33.38) and 27.55 (logged
    # 27.64); with it (0.83 / 0.86 GiB more) 34.21 / 28.41, off by 2.5 % / 2.8 %. The bench's flags are not in the
    # record, so --language-model-only stands for whatever kept the tower out (both mm limits at 0 do the same)
    for base, logged in (("qwen3.6-35b-a3b", 33.38), ("qwen3.5-27b", 27.64)):
        spec = _qwen_fp8(base)
        p = _plan(spec, GB10, GB10_030.format("Qwen/FP8") + " --language-model-only", "0.30")
        assert close_gib(p.ranks[0].weights_bytes, logged), (base, p.ranks[0].weights_bytes / GiB)
        with_tower = _plan(spec, GB10, GB10_030.format("Qwen/FP8"), "0.30").ranks[0].weights_bytes
        assert not close_gib(with_tower, logged)


# ----------------------------------------------- LAPTOP4070-030-QWEN15B: vLLM 0.30.0, Qwen2.5-1.5B on an 8 GB laptop


def test_laptop4070_v0_30_qwen2_5_1_5b_weights_and_layout():
    # Qwen/Qwen2.5-1.5B-Instruct's config (28 layers, hidden 1536, 12 / 2 heads of 128, intermediate 8960, tied):
    # 1.54 B parameters x 2 B = 2.88 GiB + 91 MiB of allocator blocks = 2.97 (logged 2.98; kvplan.vllm_alloc: under
    # the load's max_split_size_mb 20 gate_up 52.5 -> 54 and down 26.25 -> 28 MiB a layer; 2.88, -0.10, before).
    # 28 x 2 x 2 x 128 x 2 B = 28,672 B a token: 1.95 GiB (a figure in
    # [1.945, 1.955) GiB) holds 72,838 - 73,213 tokens, and 72,992 = 4,562 blocks of 16 is in that range; 72,992 /
    # 4,096 = 17.82x
    spec = _qwen2_5("qwen2.5-1.5b-instruct", hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                    num_attention_heads=12, num_key_value_heads=2, max_window_layers=21)
    laptop = custom_gpu(8188 / 1024, 0.256, 60.0, name="RTX-4070-Laptop", gpus_per_node=1)
    p = _plan(spec, laptop, "vllm serve Qwen/Qwen2.5-1.5B-Instruct --max-model-len 4096 --enable-prefix-caching",
              "0.30")
    r = p.ranks[0]
    assert close_gib(r.weights_bytes, 2.98), r.weights_bytes / GiB
    assert r.kv_bytes_per_token == 28_672 and p.block_size == 16
    lo, hi = (int(g * GiB) // 28_672 for g in (1.945, 1.955))
    assert lo <= 72_992 <= hi and 72_992 % 16 == 0 and round(72_992 / 4_096, 2) == 17.82
