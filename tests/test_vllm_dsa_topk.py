"""vLLM's DSA top-k index buffer, part of "Model loading took" (kvplan.vllm_layouts.vllm_dsa_topk_buffer_bytes).

DeepSeek-V3.2 / GLM-5 (a config with ``index_topk``): the model's constructor makes
``torch.empty(max_num_batched_tokens, index_topk, dtype=torch.int32)`` on the device, shared by every layer's
indexer and sparse MLA backend, and each MTP layer makes one more (read in the 0.11.0, 0.17.0, 0.20.0, 0.26.0,
0.29.0 - 0.31.0 and 0.33.0 wheels: models/deepseek_v2.py DeepseekV2Model, deepseek_mtp.py
DeepSeekMultiTokenPredictorLayer, models/deepseek_v32/nvidia/model.py + mtp.py). Every figure is hand-derived below.
"""

from kvplan import load_preset, parse_config
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.units import MiB
from kvplan.vllm_layouts import vllm_dsa_topk_buffer_bytes

H200 = get_gpu("H200")


def _term(p, name, rank=0):
    return next((t.bytes for t in p.ranks[rank].terms if t.name == name), 0)


TOPK = "DSA top-k index buffer (in weights)"


def test_every_dsa_layer_carries_the_configs_index_topk():
    # GLM-5.2: 21 layers run their own indexer, 57 share one; the top-k width (2048) is the model's, on all 78,
    # and on its MTP layer
    spec = load_preset("glm-5.2")
    assert {layer.cache.index_topk for layer in spec.layers} == {2048}
    assert [layer.cache.index_topk for layer in spec.mtp_layers] == [2048]
    assert {layer.cache.index_topk for layer in load_preset("deepseek-v3.2").layers} == {2048}


def test_buffer_bytes_by_hand():
    glm = load_preset("glm-5.2")
    # 8,192 batched tokens x 2,048 x 4 B (int32) = 67,108,864 B = 64 MiB, a multiple of 2 MiB: one allocator block
    assert vllm_dsa_topk_buffer_bytes(glm, 8192) == 8192 * 2048 * 4 == 67_108_864 == 64 * MiB
    # one MTP layer makes its own: 2 x 64 MiB
    assert vllm_dsa_topk_buffer_bytes(glm, 8192, mtp_layers=1) == 2 * 67_108_864
    # DeepSeek-V3.2 at 32,768 batched tokens: 32,768 x 2,048 x 4 = 268,435,456 B = 256 MiB
    assert vllm_dsa_topk_buffer_bytes(load_preset("deepseek-v3.2"), 32768) == 268_435_456
    # not DSA (DeepSeek-V3's MLA has no indexer, Llama no MLA): none
    assert vllm_dsa_topk_buffer_bytes(load_preset("deepseek-v3"), 8192) == 0
    assert vllm_dsa_topk_buffer_bytes(load_preset("llama-3.1-8b"), 8192) == 0


def test_buffer_is_one_caching_allocator_block():
    glm = load_preset("glm-5.2")
    # 2,200 tokens: 2,200 x 8,192 = 18,022,400 B (17.19 MiB) gets an 18 MiB segment; the 0.81 MiB left is under the
    # 1 MiB a split needs, so the block is the whole segment: 18,874,368 B (kvplan.vllm_alloc.torch_block_bytes)
    assert vllm_dsa_topk_buffer_bytes(glm, 2200) == 18 * MiB == 18_874_368
    # 2,100 tokens: 17,203,200 B (16.41 MiB), 1.59 MiB left of 18: split, the block is the request itself
    assert vllm_dsa_topk_buffer_bytes(glm, 2100) == 2100 * 8192 == 17_203_200


def test_plan_counts_it_in_the_weights_on_every_rank():
    spec = load_preset("deepseek-v3.2")
    engine = EngineConfig(vllm_version="0.16", max_model_len=16384, max_num_batched_tokens=32768)
    p = plan(spec, H200, engine, Layout(tp=8))
    assert _term(p, TOPK) == 268_435_456  # whole on each of the 8 ranks, not divided by TP
    # under PP every stage's constructor makes it: PP 2 x TP 8, both stages 256 MiB
    pp = plan(spec, H200, engine, Layout(tp=8, pp=2))
    assert [_term(pp, TOPK, r) for r in range(len(pp.ranks))] == [268_435_456] * len(pp.ranks) and len(pp.ranks) == 2


def test_mtp_layer_adds_its_own_on_the_last_stage():
    # --speculative-config mtp on DeepSeek-V3.2 (one MTP layer), 8,192 batched tokens: 64 MiB for the model + 64 MiB
    # for DeepSeekMultiTokenPredictorLayer's = 134,217,728 B
    spec = load_preset("deepseek-v3.2")
    engine = EngineConfig(vllm_version="0.16", max_model_len=16384, max_num_batched_tokens=8192,
                          speculative_method="mtp", num_speculative_tokens=1)
    assert _term(plan(spec, H200, engine, Layout(tp=8)), TOPK) == 2 * 67_108_864
    # PP 2: the drafter runs on the last stage only; the first keeps the model's one
    pp = plan(spec, H200, engine, Layout(tp=8, pp=2))
    assert [_term(pp, TOPK, r) for r in range(2)] == [67_108_864, 2 * 67_108_864]


def test_a_typed_model_loading_figure_already_holds_it_and_sglang_has_none():
    spec = load_preset("glm-5.2-fp8")
    typed = plan(spec, H200, EngineConfig(max_model_len=8192, weights_bytes=90 * 2**30), Layout(tp=8))
    assert typed.ranks[0].weights_bytes == 90 * 2**30 and _term(typed, TOPK) == 0
    sglang = plan(spec, H200, EngineConfig(engine="sglang", max_model_len=8192), Layout(tp=8))
    assert _term(sglang, TOPK) == 0


def test_a_hand_built_dsa_config_reads_its_own_index_topk():
    # the tiny DSA config of tests/test_family_mla.py (index_topk 4): 8,192 x 4 x 4 B = 131,072 B (512-B rounded)
    from tests.test_family_mla import DSA

    spec = parse_config(dict(DSA, model_type="deepseek_v32"))
    assert vllm_dsa_topk_buffer_bytes(spec, 8192) == 8192 * 4 * 4 == 131_072


# ----------------------------------------------------------------------------- 0.30+: the sparse-MLA index groups

def test_index_group_buffers_by_hand():
    from kvplan.vllm_layouts import vllm_dsa_index_group_bytes

    glm52, glm5 = load_preset("glm-5.2"), load_preset("glm-5")
    # R = min(8,192 batched, 1,024 seqs x 1) = 1,024 rows; a group: (1,025 x 2,048 x 4 = 8,396,800 B, under 10 MiB:
    # itself) + (1,025 x 4 = 4,100 -> 4,608 B, 512-rounded) = 8,401,408 B
    group = 1025 * 2048 * 4 + 4608
    assert group == 8_401_408
    # GLM-5.2: 21 layers run an indexer (the 57 "shared" ones join the group before them): 21 groups
    assert vllm_dsa_index_group_bytes(glm52, Layout(tp=8), 0, 8192, 1024, 0, 0, "0.33") == 21 * group == 176_429_568
    # GLM-5: all 78 layers: 655,309,824 B = 0.61 GiB; the same at 0.30 (the 0.30.0 - 0.31.0 profile); none at 0.29
    assert vllm_dsa_index_group_bytes(glm5, Layout(tp=8), 0, 8192, 1024, 0, 0, "0.33") == 78 * group == 655_309_824
    assert vllm_dsa_index_group_bytes(glm5, Layout(tp=8), 0, 8192, 1024, 0, 0, "0.30") == 78 * group
    assert vllm_dsa_index_group_bytes(glm5, Layout(tp=8), 0, 8192, 1024, 0, 0, "0.29") == 0
    # 3 draft tokens: R = min(8,192, 1,024 x 4) = 4,096; (4,097 x 8,192 = 33,562,624 B: an own segment of 34 MiB,
    # 1.99 MiB left, split) + (4,097 x 4 = 16,388 -> 16,384 + 512 = 16,896) per group; the MTP layer adds one group
    big = 4097 * 2048 * 4 + 16_896
    assert vllm_dsa_index_group_bytes(glm52, Layout(tp=8), 0, 8192, 1024, 3, 1, "0.33") == 22 * big
    # ROCm at 0.30.0 (the generic deepseek_v2.py: the model's builder) but deepseek_mtp.py passes none: the MTP group has
    # max_num_batched_tokens rows, (8,193 x 8,192 = 67,117,056 B -> a 66 MiB segment, 8 KiB over 64 MiB: the rest
    # 1.99 MiB, split) + 32,772 -> 33,280
    assert vllm_dsa_index_group_bytes(glm52, Layout(tp=8), 0, 8192, 1024, 3, 1, "0.30", cuda=False) == (
        21 * big + 8193 * 2048 * 4 + 33_280)


def test_index_groups_follow_the_stage_under_pp():
    from kvplan.vllm_layouts import vllm_dsa_index_group_bytes

    glm52 = load_preset("glm-5.2")
    owns = [bool(layer.cache.index_head_dim) for layer in glm52.layers]
    # PP 2: layers 0 - 38 and 39 - 77; a stage whose first layer shares gets one group for it too
    first, second = sum(owns[:39]), sum(owns[39:]) + (0 if owns[39] else 1)
    group = 1025 * 2048 * 4 + 4608
    assert [vllm_dsa_index_group_bytes(glm52, Layout(tp=4, pp=2), s, 8192, 1024, 0, 0, "0.33") for s in (0, 1)] == [
        first * group, second * group]
    assert first + sum(owns[39:]) == 21


def test_plan_at_0_33_holds_the_index_groups_in_the_weights():
    # GLM-5 bf16 on 8 x B300 at the 0.33 defaults (16,384 batched tokens, 1,024 sequences): top-k buffer 16,384 x
    # 2,048 x 4 = 134,217,728 B; 78 groups of R = 1,024 rows: 655,309,824 B
    p = plan(load_preset("glm-5"), get_gpu("B300"), EngineConfig(), Layout(tp=8), suggest=False)
    assert _term(p, TOPK) == 134_217_728
    assert _term(p, "DSA index-group decode buffers (in weights)") == 655_309_824


def test_rocm_from_0_31_every_layer_keeps_a_whole_buffer_group():
    from kvplan.vllm_layouts import vllm_dsa_index_group_bytes

    # amd/model.py (ROCm from 0.31.0) passes no builder: each of DeepSeek-V3.2's 61 layers makes its own group over
    # the 8,192-row buffer: 8,193 x 8,192 = 67,117,056 B (a 66 MiB segment split: itself) + 8,193 x 4 = 32,772 ->
    # 33,280 B; 61 x 67,150,336 = 4,096,170,496 B = 3.81 GiB. The 0.30 profile (0.30.0: deepseek_v2.py's model-level
    # builder) counts 61 groups of 1,025 rows like CUDA
    ds = load_preset("deepseek-v3.2")
    assert vllm_dsa_index_group_bytes(ds, Layout(tp=8), 0, 8192, 1024, 0, 0, "0.33", cuda=False) == 61 * (
        8193 * 8192 + 33_280) == 4_096_170_496
    assert vllm_dsa_index_group_bytes(ds, Layout(tp=8), 0, 8192, 1024, 0, 0, "0.30", cuda=False) == (
        61 * (1025 * 8192 + 4608))


# ----------------------------------------------------------------------------- 0.20+: the indexer's wk unquantized

def test_indexer_wk_is_16_bit_from_0_20():
    from kvplan.vllm_layouts import vllm_dsa_indexer_wk_bytes

    # DeepSeek-V3.2 (fp8 block 128): wk [128, 7168] in bf16 1,835,008 B against fp8 917,504 + 1 x 56 fp32 block
    # scales 224 B: +917,280 B a layer, x 61 = 55,954,080 B (replicated: the same at any TP); nothing before 0.20.0
    ds = load_preset("deepseek-v3.2")
    assert 128 * 7168 * 2 - 128 * 7168 - 56 * 4 == 917_280
    assert vllm_dsa_indexer_wk_bytes(ds, Layout(tp=8), 0, None, "0.20") == 61 * 917_280 == 55_954_080
    assert vllm_dsa_indexer_wk_bytes(ds, Layout(tp=1), 0, None, "0.33") == 55_954_080
    assert vllm_dsa_indexer_wk_bytes(ds, Layout(tp=8), 0, None, "0.19") == 0
    # GLM-5.2-FP8: 21 indexer layers of wk [128, 6144]: 1,572,864 - 786,432 - 48 x 4 = 786,240 B each: 16,511,040
    assert vllm_dsa_indexer_wk_bytes(load_preset("glm-5.2-fp8"), Layout(tp=8), 0, None, "0.28") == 21 * 786_240
    # nvidia's GLM-5.2-NVFP4 keeps every self_attn (indexer included) bf16: nothing to add; a bf16 checkpoint: nothing
    assert vllm_dsa_indexer_wk_bytes(load_preset("glm-5.2-nvfp4"), Layout(tp=4), 0, None, "0.26") == 0
    assert vllm_dsa_indexer_wk_bytes(load_preset("glm-5.2"), Layout(tp=8), 0, None, "0.33") == 0
    # in a plan: a term in the weights
    p = plan(ds, H200, EngineConfig(vllm_version="0.20", max_model_len=16384), Layout(tp=8), suggest=False)
    assert _term(p, "16-bit DSA indexer wk (in weights)") == 55_954_080
