"""More public vLLM start-up logs reproduced from their launch inputs (issue 11, residual items 3 and 5).

Tolerances as tests/test_engine_logs.py: memory within max(1 %, 0.25 GiB), tokens and concurrency within 1 %.

Gemma-3 (llm-d-incubation/llm-d-planner accuracy/results/v0.19.0/logs @d3121e05, vLLM 0.19.0, one H100 79.19 GiB,
``--max-model-len 8192 --gpu-memory-utilization 0.95``, 8192 / 1024 defaults, PyTorch-native sampler, CUDA-graph
estimate printed but not subtracted: the 0.17 profile). "Model loading took" holds, beside the text weights:
- the SigLIP so400m vision tower + projector (kvplan.families.towers, 0.79 GiB at TP 1);
- vLLM's rotary cos/sin caches (rotary_embedding get_rope, one per distinct rope, [max_position x linear factor,
  head_dim] in bf16): 131,072 x hd (sliding layers) + 1,048,576 x hd (full layers, linear x8) -> 0.28 GiB at hd 128
  (27B), 0.56 GiB at hd 256 (4B, 12B).
Issue 11's "1.14 GiB per GPU" for Gemma-3-27B is this log's 51.45 GiB minus the text weights (50.31): tower 0.79 +
rope caches 0.28 = 1.07 GiB, 0.07 GiB left unexplained.
The torch peak also holds what the profile run's encoder step leaves (kvplan.vllm_mm): 32 dummy 896^2 images' bf16
pixel values (154,140,672 B) and their 32 x 256 embeddings (8192 x text hidden x 2 B).
"""

import json
from pathlib import Path

import pytest

from kvplan import load_preset, parse_config
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.units import GiB
from kvplan.vllm_layouts import vllm_rope_cache_bytes
from tests.test_engine_logs import close, close_gib

H100 = get_gpu("H100-SXM")
A100_80 = get_gpu("A100-80GB")
PLANNER = "llm-d-incubation/llm-d-planner accuracy/results/v0.19.0/logs @d3121e05"
GEMMA3_27B_CFG = json.loads((Path(__file__).parents[1] / "kvplan/presets/gemma-3-27b-it.json").read_text())


def _gemma3(**text) -> dict:
    """A Gemma-3 wrapper config: the 27B preset's vision_config (SigLIP so400m, the same in Gemma-3 4B / 12B / 27B)
    with the text_config fields of another size typed in (google/gemma-3-{4b,12b}-it config.json)."""
    return {**GEMMA3_27B_CFG, "text_config": {**GEMMA3_27B_CFG["text_config"], **text}}


GEMMA3_12B = _gemma3(hidden_size=3840, intermediate_size=15360, num_hidden_layers=48, num_attention_heads=16,
                     num_key_value_heads=8, head_dim=256, query_pre_attn_scalar=256)
GEMMA3_4B = _gemma3(hidden_size=2560, intermediate_size=10240, num_hidden_layers=34, num_attention_heads=8,
                    num_key_value_heads=4, head_dim=256, query_pre_attn_scalar=256)
V019 = EngineConfig(vllm_version="0.19", gpu_memory_utilization=0.95, max_model_len=8192)


def _terms(p):
    return {t.name.split(" (")[0]: t for t in p.ranks[0].terms}


@pytest.mark.parametrize("name,cfg,log", [
    # google-gemma-3-27b-it--h100-80gb--tp1pp1dp1--8192.log: "Model loading took 51.45 GiB memory"; "torch peak memory
    # increase: 3.99GiB; non-torch forward increase memory: 0.26GiB"; "Available KV cache memory: 19.53 GiB"; "Add 8
    # padding layers, may waste at most 15.38% KV cache memory"; "GPU KV cache size: 36,560 tokens"; "Maximum
    # concurrency for 8,192 tokens per request: 4.46x". kvplan: 51.44 / 4.03 / 0.25 / 19.51 / 36,528 / 4.45
    # (the 32 dummy images' pixel values held under the LM run, kvplan.vllm_mm; before: 3.88 / 19.66 / 36,800 / 4.49).
    ("gemma-3-27b-it", None, dict(weights=51.45, peak=3.99, kv=19.53, tokens=36_560, conc=4.46)),
    # google-gemma-3-12b-it--...--8192.log: "Model loading took 23.31 GiB"; "torch peak memory increase: 3.94GiB;
    # non-torch ... 0.25GiB"; "Available KV cache memory: 47.72 GiB"; "GPU KV cache size: 130,304 tokens"; "15.88x".
    # kvplan: 23.31 / 3.98 / 47.69 / 130,208 / 15.87 (before kvplan.vllm_mm: 3.84 / 47.83 / 130,608 / 15.92).
    ("gemma-3-12b-it", GEMMA3_12B, dict(weights=23.31, peak=3.94, kv=47.72, tokens=130_304, conc=15.88)),
    # google-gemma-3-4b-it--...--8192.log: "Model loading took 8.58 GiB" (weights memory: 8.58GiB); "torch peak memory
    # increase: 3.89GiB"; "Available KV cache memory: 62.51 GiB"; "Add 1 padding layers, may waste at most 3.45%";
    # "GPU KV cache size: 468,144 tokens"; "57.05x". kvplan: 8.57 / 3.94 / 62.47 / 467,856 / 57.02
    # (before kvplan.vllm_mm: 3.80 / 62.61 / 468,928 / 57.15).
    ("gemma-3-4b-it", GEMMA3_4B, dict(weights=8.58, peak=3.89, kv=62.51, tokens=468_144, conc=57.05)),
])
def test_llm_d_planner_v0_19_gemma3_tp1_from_launch_inputs(name, cfg, log):
    spec = load_preset(name) if cfg is None else parse_config(cfg, name)
    p = plan(spec, H100, V019)
    terms = _terms(p)
    assert close_gib(p.ranks[0].weights_bytes, log["weights"]), p.ranks[0].weights_bytes / GiB
    assert close_gib(terms["activation peak"].bytes, log["peak"])
    assert close_gib(p.ranks[0].kv_pool_bytes, log["kv"]), p.ranks[0].kv_pool_bytes / GiB
    assert close(p.kv_cache_tokens, log["tokens"]) and close(p.max_concurrency, log["conc"])
    # the buffers "Model loading took" counts beside the parameters
    hd = spec.head_dim
    assert terms["rotary cos/sin caches"].bytes == (131_072 + 1_048_576) * hd * 2
    assert not terms["rotary cos/sin caches"].applied and not terms["vision tower"].applied


def test_issue_11_gemma3_27b_1_14_gib_is_tower_plus_rope_caches():
    # 51.45 logged - 50.31 text weights (kvplan, exact to transformers' parameter count) = 1.14 GiB
    spec = load_preset("gemma-3-27b-it")
    full = plan(spec, H100, V019)
    text = plan(spec, H100, V019.model_copy(update={"language_model_only": True}))
    terms = _terms(full)
    tower, rope = terms["vision tower"].bytes, terms["rotary cos/sin caches"].bytes
    assert round(tower / GiB, 3) == 0.788 and rope == 301_989_888  # (131,072 + 1,048,576) x 128 x 2 B
    # --language-model-only drops the tower but not the text layers' ropes
    assert full.ranks[0].weights_bytes - text.ranks[0].weights_bytes == tower
    # the allocator's whole blocks (kvplan.vllm_alloc): each of the 62 layers' down_proj (21504 x 5376 x 2 B = 441 MiB)
    # holds its 442 MiB segment: 62 MiB
    alloc = terms["caching-allocator rounding"].bytes
    assert alloc == 65_011_712
    text_params = text.ranks[0].weights_bytes - rope - alloc
    assert round(text_params / GiB, 2) == 50.31
    assert round((51.45 * GiB - text_params) / GiB, 2) == 1.14
    # 1.13: tower + rope + allocator blocks (before the allocator term: 1.07, 0.07 GiB not explained)
    assert abs((tower + rope + alloc) / GiB - 1.14) < 0.015


def test_gemma3_rope_caches_follow_the_config():
    # no rope_scaling: both layer kinds hold 131,072 rows; a bad factor is refused by field
    from kvplan.errors import ConfigError

    plain = _gemma3(rope_scaling=None)
    assert vllm_rope_cache_bytes(parse_config(plain), Layout(), 0, "0.33") == 2 * 131_072 * 128 * 2
    with pytest.raises(ConfigError) as info:
        parse_config(_gemma3(rope_scaling={"rope_type": "linear", "factor": "eight"}))
    assert "rope_scaling" in info.value.field
    # llama-style decoders: one cache of max_position x rotary_dim (llama3 scaling keeps the rows)
    assert vllm_rope_cache_bytes(load_preset("llama-3.1-8b"), Layout(), 0, "0.33") == 131_072 * 128 * 2


def test_myoceane_gpt_oss_20b_a100_v0_19_marlin():
    # myoceane.fr "[AI] vLLM 部署地端模型系統訊息記錄 A100" (2026-04-18), vLLM 0.19.0, one A100 80GB,
    # `vllm serve openai/gpt-oss-20b --max-model-len 131072 --gpu-memory-utilization 0.65`: "Model loading took
    # 13.72 GiB memory", "Available KV cache memory: 36.56 GiB". A100: MXFP4 on Marlin, 2048 / 256 defaults.
    # kvplan: 13.67 GiB (-0.4 %), KV 51.44 - 13.67 - 0.72 (256 x 201,088 x 4 x 3.72 sampler) - 0.25 = 36.80 (+0.24).
    p = plan(load_preset("gpt-oss-20b"), A100_80, EngineConfig(vllm_version="0.19", gpu_memory_utilization=0.65,
                                                              max_model_len=131072))
    assert close_gib(p.ranks[0].weights_bytes, 13.72) and close_gib(p.ranks[0].kv_pool_bytes, 36.56)


def test_myoceane_gemma4_26b_a4b_a100():
    # same page, 04-17 (the 0.19 install of the gpt-oss run): `vllm serve google/gemma-4-26B-A4B --max-model-len 131072
    # --enforce-eager --gpu-memory-utilization 0.9`: "Model loading took 48.5 GiB", "Available KV cache memory: 21.5 GiB".
    # kvplan 48.44 GiB = 47.00 shards + 1.07 vision tower + rope caches 262,144 x (256 sliding + 512 full, proportional
    # rope keeps the whole head) x 2 B = 0.375 GiB (without them 48.07, and KV +0.47 GiB); KV 21.58 (+0.08).
    p = plan(load_preset("gemma-4-26b-a4b"), A100_80, EngineConfig(vllm_version="0.19", gpu_memory_utilization=0.9,
                                                                  max_model_len=131072, enforce_eager=True))
    assert close_gib(p.ranks[0].weights_bytes, 48.5)
    assert close_gib(p.ranks[0].kv_pool_bytes, 21.5)
    assert _terms(p)["rotary cos/sin caches"].bytes == 262_144 * (256 + 512) * 2


def test_llm_d_planner_v0_19_llama4_scout_tp4_weights_hold_a_2_5_gib_rope_cache():
    # meta-llama-llama-4-scout--h100-80gb--tp4pp1dp1--8192.log (vLLM 0.19.0, 4 x H100, util 0.95): "Loaded weight
    # lm_head.weight with shape torch.Size([50512, 5120])" (202,048 / 4), "Model loading took 53.12 GiB memory".
    # kvplan 53.10: 50.19 GiB of this rank's shards + 0.41 vision tower + the one rope cache of the RoPE layers,
    # 10,485,760 max positions x 128 x 2 B = 2.50 GiB (without it 50.60, -4.7 %).
    from kvplan.parallel import Layout

    p = plan(load_preset("llama-4-scout-17b-16e-instruct"), H100, V019, Layout(tp=4))
    terms = _terms(p)
    assert terms["rotary cos/sin caches"].bytes == 10_485_760 * 128 * 2
    assert close_gib(p.ranks[0].weights_bytes, 53.12) and abs(p.ranks[0].weights_bytes / GiB - 53.12) < 0.05
    # "non-torch forward increase memory: 2.17GiB" (kvplan 0.55 + 0.12 NVLS + 1.50 FlashInfer workspace = 2.17)
    assert close_gib(terms["non-torch memory"].bytes, 2.17)


def test_llm_d_planner_v0_19_llama4_scout_tp4_pool():
    # same log: "torch peak memory increase: 3.19GiB; non-torch forward increase memory: 2.17GiB; weights memory:
    # 53.12GiB", "Available KV cache memory: 16.75 GiB", "GPU KV cache size: 365,968 tokens", "Maximum concurrency
    # for 8,192 tokens per request: 44.68x". kvplan: torch peak 3.18 GiB = sampler 2.87 + encoder cache 0.08 + the
    # fused-MoE workspace the dummy run leaves held, 0.16 GiB (kvplan.plan.vllm_moe_workspace_bytes: top-1, K 5120,
    # N 4096 per rank: (8192 x 5120 + 8192 x 5120) x 2 B); KV 16.85 GiB, 368,144 tokens (+0.6 %), 44.94x.
    from kvplan.parallel import Layout

    p = plan(load_preset("llama-4-scout-17b-16e-instruct"), H100, V019, Layout(tp=4))
    assert close_gib(p.ranks[0].kv_pool_bytes, 16.75)
    assert close(p.kv_cache_tokens, 365_968) and close(p.max_concurrency, 44.68)
