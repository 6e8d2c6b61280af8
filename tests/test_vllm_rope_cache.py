"""vLLM's RoPE cos/sin tables, counted in "Model loading took X GiB" (kvplan.vllm_layouts.vllm_rope_cache_bytes).

vLLM's rotary embedding registers ``cos_sin_cache`` [rows, rotary_dim] as a non-persistent buffer built on the device
while the model is constructed (vllm/model_executor/layers/rotary_embedding/base.py, rotary_embedding.py before 0.10),
one per distinct ``get_rope`` parameter set. Bytes below are derived by hand from the configs and the class rules read
in the 0.6.3 - 0.33.0 wheels.
"""

import json
from pathlib import Path

import pytest

from kvplan import load_preset, parse_config
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout, rank_weight_bytes
from kvplan.plan import plan
from kvplan.spec import RopeCache
from kvplan.units import GiB
from kvplan.vllm_layouts import vllm_rope_cache_bytes, vllm_rope_rows

PRESETS = Path(__file__).resolve().parent.parent / "kvplan" / "presets"
PROFILES = ("0.6", "0.7", "0.10", "0.11", "0.17", "0.21", "0.33")


@pytest.mark.parametrize("version", PROFILES)
def test_llama_3_1_8b_one_llama3_table(version):
    # llama3 scaling keeps max_position rows (Llama3RotaryEmbedding only rescales inv_freq):
    # 131,072 positions x 128 dims x 2 B (bf16) = 33,554,432 B = 0.03125 GiB, the kaitchup log's gap
    spec = load_preset("llama-3.1-8b")
    assert [(c.rotary_dim, c.max_position, c.rope_type) for c in spec.rope_caches] == [(128, 131_072, "llama3")]
    assert vllm_rope_cache_bytes(spec, Layout(), 0, version) == 131_072 * 128 * 2 == 33_554_432
    # replicated: every TP rank and every PP stage holds it whole
    assert vllm_rope_cache_bytes(spec, Layout(tp=8), 0, version) == 33_554_432
    assert [vllm_rope_cache_bytes(spec, Layout(pp=2), st, version) for st in (0, 1)] == [33_554_432] * 2


def test_qwen2_5_7b_instruct_and_base():
    # Qwen/Qwen2.5-7B-Instruct's config.json differs from the base preset's (Qwen/Qwen2.5-7B) in
    # max_position_embeddings (32,768 vs 131,072) and sliding_window; default rope, theta 1e6:
    # 32,768 x 128 x 2 = 8,388,608 B (the base: 131,072 x 128 x 2 = 33,554,432)
    base = json.loads((PRESETS / "qwen2.5-7b.json").read_text())
    instruct = parse_config({**base, "max_position_embeddings": 32768, "sliding_window": 131072}, "qwen2.5-7b-instruct")
    assert vllm_rope_cache_bytes(instruct, Layout(), 0, "0.17") == 32_768 * 128 * 2 == 8_388_608
    assert vllm_rope_cache_bytes(load_preset("qwen2.5-7b"), Layout(tp=4), 0, "0.17") == 33_554_432
    # the parameters are untouched by the field
    assert rank_weight_bytes(instruct, Layout()) == rank_weight_bytes(load_preset("qwen2.5-7b"), Layout())


def test_partial_rotary_tables():
    # phi-2: head_dim 2560 / 32 = 80, partial_rotary_factor 0.4 -> rotary_dim int(80 x 0.4) = 32 (phi.py);
    # 2,048 positions x 32 x 2 B = 131,072 B
    assert vllm_rope_cache_bytes(load_preset("phi-2"), Layout(), 0, "0.17") == 2048 * 32 * 2 == 131_072
    # Qwen3-Next-80B-A3B: head_dim 256, partial_rotary_factor 0.25 -> 64; 262,144 x 64 x 2 = 33,554,432
    nxt = load_preset("qwen3-next-80b-a3b")
    assert nxt.rope_caches[0].rotary_dim == 64
    assert vllm_rope_cache_bytes(nxt, Layout(), 0, "0.33") == 262_144 * 64 * 2
    # MiniMax-M2: rotary_dim 64 of head_dim 128 (the config's own key), 204,800 positions: 26,214,400
    assert vllm_rope_cache_bytes(load_preset("minimax-m2.7"), Layout(), 0, "0.33") == 204_800 * 64 * 2
    # omitted: the transformers config default (Phi: 0.5 -> 40)
    cfg = {k: v for k, v in json.loads((PRESETS / "phi-2.json").read_text()).items() if k != "partial_rotary_factor"}
    assert parse_config(cfg, "phi-2-default").rope_caches[0].rotary_dim == 40


def test_yarn_tables_gpt_oss_fp32_and_deepseek():
    # gpt-oss: gpt_oss.py passes rope_type "yarn" and dtype=torch.float32; YaRNScalingRotaryEmbedding is built with
    # original_max_position_embeddings and arange(max_position_embeddings x scaling_factor): 4,096 x 32 = 131,072
    # rows x head_dim 64 x 4 B = 33,554,432 B
    for name in ("gpt-oss-20b", "gpt-oss-120b"):
        assert vllm_rope_cache_bytes(load_preset(name), Layout(tp=2), 0, "0.17") == 4096 * 32 * 64 * 4 == 33_554_432
    # DeepSeek-V3: deepseek_v2.py rewrites the yarn scaling to deepseek_yarn over qk_rope_head_dim 64, bf16:
    # 4,096 x 40 = 163,840 rows x 64 x 2 = 20,971,520; V3.2 builds a second for its indexer (is_neox_style differs)
    assert vllm_rope_rows(load_preset("deepseek-v3").rope_caches[0], "0.11") == 163_840
    assert vllm_rope_cache_bytes(load_preset("deepseek-v3"), Layout(tp=8), 0, "0.11") == 163_840 * 64 * 2
    assert vllm_rope_cache_bytes(load_preset("deepseek-v3.2"), Layout(tp=8), 0, "0.33") == 2 * 20_971_520
    # Kimi-K2.5 (deepseek_v3, yarn factor 64 over 4,096): 262,144 x 64 x 2 = 33,554,432
    assert vllm_rope_cache_bytes(load_preset("kimi-k2.5"), Layout(tp=8), 0, "0.11") == 33_554_432


def test_gemma_3_local_and_global_tables():
    # gemma3.py: sliding layers get_rope(base=rope_local_base_freq, rope_type default), full layers rope_theta and the
    # config's scaling. Gemma-3-27B-it: head_dim 128, 131,072 positions, global linear x 8:
    # local 131,072 x 128 x 2 = 33,554,432; global LinearScalingRotaryEmbedding 131,072 x 8 = 1,048,576 rows x 128
    # x 2 = 268,435,456; 301,989,888 B (0.28 GiB) a rank
    g27 = load_preset("gemma-3-27b-it")
    assert [(c.name, c.rope_type, c.factor) for c in g27.rope_caches] == [("local", "default", 1.0),
                                                                           ("global", "linear", 8.0)]
    assert vllm_rope_cache_bytes(g27, Layout(tp=2), 0, "0.17") == 33_554_432 + 268_435_456 == 301_989_888
    # Gemma-3-1B-it: no scaling, but thetas 1e4 vs 1e6 make two instances: 2 x 32,768 x 256 x 2 = 33,554,432
    assert vllm_rope_cache_bytes(load_preset("gemma-3-1b-it"), Layout(), 0, "0.33") == 2 * 32_768 * 256 * 2


def test_pipeline_stage_holds_only_the_tables_its_layers_use():
    # a 4-layer Gemma-3 with layer_types [s, s, f, f] at PP 2: stage 0 builds only the local table, stage 1 the
    # global one (head_dim 64, 1,024 positions, global linear x 2): 1,024 x 64 x 2 = 131,072 and 2,048 x 64 x 2
    cfg = {"model_type": "gemma3_text", "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 4,
           "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 64, "vocab_size": 1000,
           "max_position_embeddings": 1024, "sliding_window": 128, "rope_theta": 1e6, "rope_local_base_freq": 1e4,
           "rope_scaling": {"rope_type": "linear", "factor": 2.0},
           "layer_types": ["sliding_attention", "sliding_attention", "full_attention", "full_attention"]}
    spec = parse_config(cfg, "tiny-gemma3")
    assert vllm_rope_cache_bytes(spec, Layout(pp=2), 0, "0.17") == 1024 * 64 * 2 == 131_072
    assert vllm_rope_cache_bytes(spec, Layout(pp=2), 1, "0.17") == 2048 * 64 * 2 == 262_144
    assert vllm_rope_cache_bytes(spec, Layout(), 0, "0.17") == 393_216


def test_rows_by_class_and_release():
    lin = RopeCache(rotary_dim=128, max_position=4096, rope_type="linear", factor=2.5)
    assert vllm_rope_rows(lin, "0.17") == 10_240  # ceil(4,096 x 2.5)
    dyn = RopeCache(rotary_dim=128, max_position=4096, rope_type="dynamic", factor=2.0)
    assert [vllm_rope_rows(dyn, v) for v in ("0.6", "0.21", "0.33")] == [8192, 8192, 4096]  # 0.33: max_position only
    # Phi-3 LongRoPE (original 4,096, max 131,072): short + long concatenated; 0.6.3 also keeps both halves
    lr = RopeCache(rotary_dim=96, max_position=131_072, rope_type="longrope", original_max_position=4096)
    assert [vllm_rope_rows(lr, v) for v in ("0.6", "0.7", "0.33")] == [2 * 135_168, 135_168, 135_168]
    # MRoPE: max_position in 0.6.x; x 4 from 0.7 through 0.21; 0.33 keeps x 4 except Qwen3-VL / Qwen3.5 (factor 1)
    q35 = load_preset("qwen3.5-27b")  # partial 0.25 of head_dim 256 = 64, 262,144 positions, mrope_section
    assert q35.rope_caches[0].rope_type == "mrope"
    assert [vllm_rope_cache_bytes(q35, Layout(), 0, v) for v in ("0.6", "0.17", "0.33")] == [
        262_144 * 64 * 2, 4 * 262_144 * 64 * 2, 262_144 * 64 * 2]
    mr = RopeCache(rotary_dim=128, max_position=32_768, rope_type="mrope")
    assert vllm_rope_rows(mr, "0.33", "qwen2") == 131_072


def test_models_without_a_rotary_table():
    # learned / ALiBi positions and attention-free or NoPE hybrids build none
    for name in ("gpt2", "gpt-bigcode-santacoder", "nemotron-3-nano-30b-a3b"):
        spec = load_preset(name)
        assert spec.rope_caches == () and vllm_rope_cache_bytes(spec, Layout(), 0, "0.17") == 0
    falcon = json.loads((PRESETS / "falcon-7b.json").read_text())
    assert parse_config({**falcon, "alibi": True}, "falcon-alibi").rope_caches == ()
    # falcon-7b omits max_position_embeddings: FalconConfig's 2,048 x head_dim 64 x 2 = 262,144
    assert vllm_rope_cache_bytes(load_preset("falcon-7b"), Layout(), 0, "0.17") == 262_144


def test_plan_counts_it_in_vllm_weights_only():
    spec = load_preset("llama-3.1-8b")
    h100 = get_gpu("H100-SXM")
    p = plan(spec, h100, EngineConfig(vllm_version="0.17", max_model_len=8192))
    assert p.ranks[0].weights_bytes == rank_weight_bytes(spec, Layout()) + 33_554_432
    w = next(t for t in p.ranks[0].terms if t.name == "weights")
    assert "rows below marked (in weights)" in w.source
    rope = next(t for t in p.ranks[0].terms if t.name == "rotary cos/sin caches (in weights)")
    # the row states this model's table: 131,072 positions x 128 rotary dims x 2 B (bf16) = 33,554,432 B
    assert rope.bytes == 33_554_432 and "131,072 positions x 128 dims x bf16" in rope.source
    # kaitchup (vLLM 0.5.4, A100-40GB): "Loading model weights took 14.9888 GB"; kvplan 14.9575 + 0.03125 = 14.9888
    p = plan(spec, get_gpu("A100-40GB"), EngineConfig(vllm_version="0.10", max_model_len=512))
    assert abs(p.ranks[0].weights_bytes / GiB - 14.9888) < 0.0001
    # typed-in weights, SGLang and the custom engine are left alone
    typed = plan(spec, h100, EngineConfig(vllm_version="0.17", max_model_len=8192, weights_bytes=15 * GiB))
    assert typed.ranks[0].weights_bytes == 15 * GiB
    custom = plan(spec, h100, EngineConfig(engine="custom", max_model_len=8192))
    assert custom.ranks[0].weights_bytes == rank_weight_bytes(spec, Layout())


def test_qwen3_6_35b_a3b_gb10_log_closes_with_the_4x_mrope_table():
    # tests/test_vllm_layouts_quant.py pins nvidia/Qwen3.6-35B-A3B-NVFP4 on a GB10 (vLLM 0.22.1rc1, the 0.22 profile):
    # "Model loading took 21.93 GiB"; its tensors (LM + ViT + the MTP layer) sum to 21.80 GiB (-0.13). Its one MRoPE
    # table (partial 0.25 of head_dim 256 = 64, 262,144 positions, mrope_section) is MRotaryEmbedding's
    # cache_max_position_num = 4 x 262,144 rows through 0.31.0: x 64 x 2 B = 134,217,728 B = 0.125 GiB -> 21.925 = the log
    from kvplan.hf_config import load_config_text
    from tests.test_real_files import FIXTURES

    spec = parse_config(load_config_text((FIXTURES / "qwen3.6-35b-a3b-nvfp4.json").read_bytes()), "qwen3.6-35b-a3b")
    assert [(c.rotary_dim, c.max_position, c.rope_type) for c in spec.rope_caches] == [(64, 262_144, "mrope")]
    assert vllm_rope_cache_bytes(spec, Layout(), 0, "0.22") == 4 * 262_144 * 64 * 2 == 134_217_728
    assert abs(21.80 + 134_217_728 / GiB - 21.93) < 0.006


def test_llama_4_tables_on_rope_layers_only():
    # llama4.py builds rotary_emb only where the layer is not NoPE (kvplan's chunked-attention layers), with
    # max_position = max_position_embeddings; Llama3RotaryEmbedding keeps those rows. Scout: 10,485,760 x 128 x 2 B
    # = 2,684,354,560 (2.5 GiB a rank; from the source, no log pinned); Maverick: 1,048,576 x 128 x 2 = 268,435,456
    scout = load_preset("llama-4-scout-17b-16e-instruct")
    assert scout.rope_caches[0].layer_types == ("chunked_attention",)
    assert vllm_rope_cache_bytes(scout, Layout(tp=8), 0, "0.17") == 10_485_760 * 128 * 2 == 2_684_354_560
    assert vllm_rope_cache_bytes(load_preset("llama-4-maverick-17b-128e-instruct"), Layout(tp=8), 0, "0.17") == (
        268_435_456)
