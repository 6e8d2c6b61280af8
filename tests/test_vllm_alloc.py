"""The CUDA caching allocator's whole blocks in vLLM's "Model loading took" (kvplan.vllm_alloc).

Source: c10/cuda/CUDACachingAllocator.cpp (pytorch/pytorch; ``get_allocation_size``: > 1 MiB and < 10 MiB -> a 20 MiB
segment, larger -> rounded up to 2 MiB; ``should_split``: a large-pool block is split only when more than 1 MiB
remains), and vLLM's load measurement, torch.cuda.max_memory_allocated after reset_peak_memory_stats
(platforms/cuda.py get_current_memory_usage, DeviceMemoryProfiler in gpu_model_runner.py load_model; 0.19.0 wheel).

The logs (each "Model loading took" from the config alone, kvplan before -> after the allocator term):
- dennislee22/vLLM-benchmarking (0.10.1.1, A100): Qwen2-7B-Instruct TP 1 "14.2488 GiB", TP 2 "7.1217 GiB"
  (tests/test_engine_logs.py): 14.1930 -> 14.2487, 7.1006 -> 7.1216.
- llm-d-incubation/llm-d-planner accuracy/results/v0.19.0/logs @d3121e05 (H100): Qwen2.5-7B-Instruct TP 1 / 2 / 4
  "14.25" / "7.12" / "3.55"; qwen-qwen2-5-72b-instruc--...--tp2 "67.8"; moonshotai-kimi-dev-72b (Qwen2 architecture,
  131,072 positions) TP 2 "67.82", TP 4 "34.01"; Llama-3.1-8B TP 1 / 2 / 4 "14.99" / "7.51" / "3.77" (4096-multiple
  shards: 0 / 2 / 0 MiB of blocks, exact before and after); Llama-4-Scout TP 4 "53.12" (53.098 -> 53.123), phi-2
  "5.19" (5.178 -> 5.193); DeepSeek-V2-Lite "29.43" moves 29.275 -> 29.301 (the rest is not this term).
"""

import json
from pathlib import Path

import pytest

from kvplan import load_preset, parse_config
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.units import GiB, MiB
from kvplan.vllm_alloc import torch_block_bytes, vllm_allocator_rounding_bytes

PRESETS = Path(__file__).parents[1] / "kvplan" / "presets"
H100 = get_gpu("H100-SXM")
V019 = EngineConfig(vllm_version="0.19", gpu_memory_utilization=0.95, max_model_len=8192)


def _with_positions(preset: str, positions: int):
    cfg = json.loads((PRESETS / f"{preset}.json").read_text())
    cfg["max_position_embeddings"] = positions
    return parse_config(cfg, f"{preset}-{positions}")


def test_torch_block_bytes():
    # 129.5 MiB: a 130 MiB segment, 0.5 MiB left (<= 1 MiB): not split, the block is the segment
    assert torch_block_bytes(135_790_592) == 130 * MiB
    # exactly 1 MiB left (259 MiB -> 260): still not split (the rest must be > 1 MiB)
    assert torch_block_bytes(259 * MiB) == 260 * MiB
    # 24.5 MiB -> 26 MiB segment, 1.5 MiB left: split, the block is the request
    assert torch_block_bytes(25_690_112) == 25_690_112
    # under 10 MiB: carved from a 20 MiB segment and split; 512-B rounding only
    assert torch_block_bytes(9 * MiB + 100) == 9 * MiB + 512
    assert torch_block_bytes(100) == 512 and torch_block_bytes(0) == 0


@pytest.mark.parametrize("tp,expected", [
    # TP 1, per layer: qkv 4608 x 3584 x 2 = 31.5 MiB -> 32 (+0.5); o_proj 24.5 (split, 0); gate_up 37888 x 3584 x 2
    # = 259 MiB -> 260 (+1); down 3584 x 18944 x 2 = 129.5 -> 130 (+0.5): 2 MiB x 28 = 56; embed_tokens and lm_head
    # 152,064 x 3584 x 2 = 1039.5 MiB -> 1040 (+0.5 each): 57 MiB
    (1, 57 * MiB),
    # TP 2: qkv 2304 x 3584 x 2 = 15.75 -> 16 (+0.25); o 12.25 (split); gate_up 129.5 -> 130 (+0.5); down 64.75 (split):
    # 0.75 x 28 = 21; embed / lm_head 519.75 -> 520 (+0.25 each): 21.5 MiB
    (2, 22_544_384),
    # TP 4: every layer shard splits or is under 10 MiB; embed / lm_head 259.875 -> 260: 0.25 MiB
    (4, 262_144),
])
def test_qwen2_5_7b_blocks(tp, expected):
    assert vllm_allocator_rounding_bytes(load_preset("qwen2.5-7b"), Layout(tp=tp)) == expected


def test_qwen2_72b_blocks():
    spec = load_preset("qwen2-72b")
    # TP 2: down_proj 8192 x 14784 x 2 = 231 MiB -> 232 (+1) in each of 80 layers; qkv 80, o 64, gate_up 462 and the
    # 1188 MiB embedding shards are 2 MiB multiples: 80 MiB
    assert vllm_allocator_rounding_bytes(spec, Layout(tp=2)) == 80 * MiB
    # TP 4: gate_up 231 -> 232 (+1) and down 115.5 -> 116 (+0.5): 1.5 x 80 = 120 MiB
    assert vllm_allocator_rounding_bytes(spec, Layout(tp=4)) == 120 * MiB
    # a quantized format is not modelled: 0
    assert vllm_allocator_rounding_bytes(spec, Layout(tp=2), 0, "fp8") == 0


@pytest.mark.parametrize("spec_fn,tp,logged", [
    (lambda: _with_positions("qwen2.5-7b", 32768), 1, 14.25),  # Qwen2.5-7B-Instruct: 14.2487 (before 14.1930)
    (lambda: _with_positions("qwen2.5-7b", 32768), 2, 7.12),  # 7.1216 (7.1006)
    (lambda: _with_positions("qwen2.5-7b", 32768), 4, 3.55),  # 3.5546 (3.5544)
    (lambda: _with_positions("qwen2-72b", 32768), 2, 67.8),  # Qwen2.5-72B-Instruct: 67.8001 (67.7220)
    (lambda: load_preset("qwen2-72b"), 2, 67.82),  # Kimi-Dev-72B (131,072 positions): 67.8235 (67.7454)
    (lambda: load_preset("qwen2-72b"), 4, 34.01),  # 34.0067 (33.8896)
    (lambda: load_preset("llama-3.1-8b"), 2, 7.51),  # 7.5122: 2 MiB (the embedding shards, 501 MiB -> 502)
    # the same run's Llama-4-Scout TP 4 "53.12" (53.098 -> 53.123) and phi-2 "5.19" (5.178 -> 5.193)
    (lambda: load_preset("llama-4-scout-17b-16e-instruct"), 4, 53.12),
    (lambda: load_preset("phi-2"), 1, 5.19),
])
def test_model_loading_took_to_the_logged_two_decimals(spec_fn, tp, logged):
    p = plan(spec_fn(), H100, V019, Layout(tp=tp))
    assert round(p.ranks[0].weights_bytes / GiB, 2) == logged


def test_dennislee22_four_decimals():
    # "Model loading took 14.2488 GiB" / "7.1217 GiB" (0.10.1.1, Qwen2-7B-Instruct): kvplan 14.24867 / 7.12159; the
    # rest (~0.1 MB) is the 512-B rounding of biases, norms and the attention layers' scale buffers, left out
    spec = _with_positions("qwen2.5-7b", 32768)
    e = EngineConfig(vllm_version="0.10", max_model_len=16384)
    for tp, logged in ((1, 14.2488), (2, 7.1217)):
        got = plan(spec, get_gpu("A100-80GB"), e, Layout(tp=tp)).ranks[0].weights_bytes / GiB
        assert abs(got - logged) < 0.0005, got


def test_term_shown_inside_weights_and_not_for_typed_weights():
    p = plan(load_preset("qwen2-72b"), H100, V019, Layout(tp=2))
    t = next(t for t in p.ranks[0].terms if t.name.startswith("caching-allocator rounding"))
    assert t.bytes == 80 * MiB and not t.applied  # already inside the weights term
    typed = plan(load_preset("qwen2-72b"), H100, V019.model_copy(update={"weights_bytes": 70 * GiB}), Layout(tp=2))
    assert not any(t.name.startswith("caching-allocator rounding") for t in typed.ranks[0].terms)
    assert typed.ranks[0].weights_bytes == 70 * GiB


def test_awq_blocks_qwen3_14b_and_32b():
    # AWQ's tensors as vLLM creates them (auto_awq.py create_weights, 0.28.0 wheel): qweight int32 [k, n/8] = k x n / 2.
    # Qwen3-14B at TP 1: qkv_proj 5120 x 7168 / 2 = 18,350,080 (17.5 MiB -> an 18 MiB segment, 0.5 MiB rest kept);
    # o_proj 5120 x 5120 / 2 = 12.5 MiB (14 MiB segment, 1.5 MiB rest split off); gate_up_proj 5120 x 34,816 / 2 =
    # 89,128,960 = 85 MiB (86 MiB segment, 1 MiB rest kept); down_proj 17,408 x 5120 / 2 = 42.5 MiB (44, split); the
    # scales / qzeros are under 10 MiB. 40 x 1.5 MiB + embed_tokens and lm_head 151,936 x 5120 x 2 B = 1483.75 MiB ->
    # 1484 (+0.25 each) = 60.5 MiB
    from tests.test_engine_logs_2026 import _qwen3_14b_awq
    from tests.test_engine_logs_sm120 import _qwen3_32b_awq
    assert torch_block_bytes(18_350_080) - 18_350_080 == MiB // 2 and torch_block_bytes(89_128_960) == 86 * MiB
    assert vllm_allocator_rounding_bytes(_qwen3_14b_awq(), Layout()) == 40 * 3 * MiB // 2 + MiB // 2
    # Qwen3-32B: qkv 5120 x 10,240 / 2 = 25 MiB -> 26 (+1), o_proj 8192 x 5120 / 2 = 20 MiB exact, gate_up 5120 x
    # 51,200 / 2 = 125 MiB -> 126 (+1), down 25,600 x 5120 / 2 = 62.5 MiB (64, split): 64 x 2 MiB + 0.5 = 128.5 MiB
    assert vllm_allocator_rounding_bytes(_qwen3_32b_awq(), Layout()) == 64 * 2 * MiB + MiB // 2
    # an AWQ checkpoint with per-module overrides, or typed as another quantized format: not modelled (0)
    from kvplan.spec import FormatOverride
    spec = _qwen3_14b_awq()
    mixed = spec.model_copy(update={"quantization_overrides": (
        FormatOverride(category="mlp", name="down_proj", format="unquantized", layers=(0,)),)})
    assert vllm_allocator_rounding_bytes(mixed, Layout()) == 0
    assert vllm_allocator_rounding_bytes(load_preset("qwen3-14b"), Layout(), 0, "gptq-int4-g128") == 0


def test_load_max_split_keeps_whole_segments_from_0_21():
    # vLLM's load_model runs under max_split_size_mb 20 from 0.21.0 (gpu_worker.py _scoped_allocator_max_split, not in
    # 0.20.2); torch's should_split never splits a block for a request >= max_split_size, so a >= 20 MiB parameter
    # keeps its whole 2 MiB-rounded segment: 24.5 MiB -> 26 (split before), 17.5 MiB (< 20) -> 18 as before
    from kvplan.vllm_alloc import VLLM_LOAD_MAX_SPLIT
    assert torch_block_bytes(25_690_112) == 25_690_112
    assert torch_block_bytes(25_690_112, VLLM_LOAD_MAX_SPLIT) == 26 * MiB
    assert torch_block_bytes(13_107_200, VLLM_LOAD_MAX_SPLIT) == 13_107_200  # 12.5 MiB: 1.5 MiB rest split off
    # Qwen2.5-1.5B (tests/test_engine_logs_2026d.py, "Model loading took 2.98 GiB" on 0.28; 2.98 on 0.30 too): per
    # layer gate_up 1536 x 17,920 x 2 B = 52.5 MiB -> 54, down 26.25 -> 28, qkv 6 / o_proj 4.5 MiB under 10; the tied
    # 151,936 x 1536 x 2 B = 445.125 MiB embedding -> 446: 28 x 3.25 + 0.875 = 91.875 MiB (0.19: none of the 1.5 /
    # 1.75 MiB rests kept, the embedding's 0.875 only)
    from tests.test_engine_logs_2026d import _qwen2_5
    spec = _qwen2_5("qwen2.5-1.5b-instruct", hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                    num_attention_heads=12, num_key_value_heads=2, max_window_layers=21)
    assert vllm_allocator_rounding_bytes(spec, Layout(), 0, None, "0.28") == 28 * 13 * MiB // 4 + 7 * MiB // 8
    assert vllm_allocator_rounding_bytes(spec, Layout(), 0, None, "0.19") == 7 * MiB // 8
    # the AWQ checkpoints under it: Qwen3-14B 40 x (0.5 + 1 + 1.5 for down_proj's 42.5 -> 44) + 0.5 = 120.5 MiB,
    # Qwen3-32B 64 x (1 + 1 + 1.5) + 0.5 = 224.5 MiB
    from tests.test_engine_logs_2026 import _qwen3_14b_awq
    from tests.test_engine_logs_sm120 import _qwen3_32b_awq
    assert vllm_allocator_rounding_bytes(_qwen3_14b_awq(), Layout(), 0, None, "0.28") == 40 * 3 * MiB + MiB // 2
    assert vllm_allocator_rounding_bytes(_qwen3_32b_awq(), Layout(), 0, None, "0.28") == 64 * 7 * MiB // 2 + MiB // 2
