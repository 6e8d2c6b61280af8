"""DeepSeek-V4's MTP draft on vLLM (``--speculative-config '{"method": "mtp", "num_speculative_tokens": N}'``):
its weights, its KV layer and the model buffers beside them, hand-derived.

Read 2026-12-02 in the vLLM 0.25.0 wheel (and 0.20.0, 0.22.0, 0.26.0, 0.27.0, 0.29.0 - 0.33.0 for the release rules):
models/deepseek_v4/nvidia/mtp.py (DeepSeekV4MultiTokenPredictor / DeepSeekV4MultiTokenPredictorLayer: enorm, hnorm,
e_proj / h_proj ReplicatedLinear with the quant_config, hc_head_fn / base / scale fp32, shared_head (norm + head),
embed_tokens, and the mtp_block DeepseekV4DecoderLayer), models/deepseek_v4/attention.py ("MTP layer is not included in
the compress ratio list": compress ratio 1 past num_hidden_layers), v1/spec_decode/llm_base_proposer.py
(_maybe_share_embeddings / _maybe_share_lm_head: MTP shares the target's embed_tokens and lm_head, and the
topk_indices_buffer), models/deepseek_v4/nvidia/model.py DeepseekV4Model.__init__ (topk_indices_buffer,
_mtp_hidden_buffer), rotary_embedding/deepseek_scaling_rope.py DeepseekV4ScalingRotaryEmbedding (fp32 cos_sin_cache).
A public 0.25.0 log (tests/test_engine_logs_dec02.py DSV4-PRO6000) prints "MTP draft model loaded: 39 params": the
layer's 39 tensors below (2 norms, e_proj / h_proj and their scales, 3 hc head tensors, shared_head.norm; the block's
attention 11, MoE 10, 2 norms, 6 hc mixers), no embed_tokens / head of its own.
"""

import json
from pathlib import Path

import pytest

from kvplan import load_preset, parse_config
from kvplan.engines import EngineConfig
from kvplan.errors import PlanInputError
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout, mtp_rank_bytes
from kvplan.params import count_params
from kvplan.plan import plan
from kvplan.vllm_dsv4 import dsv4_layout, dsv4_model_buffer_bytes, hc_mult_of
from kvplan.vllm_layouts import vllm_rope_cache_bytes

FIXTURES = Path(__file__).parent / "fixtures" / "configs"


@pytest.fixture(scope="module")
def flash():
    return load_preset("deepseek-v4-flash")


def _fp8(out: int, inp: int) -> int:
    """An FP8 block-128 linear: fp8 weight + fp32 scales [cdiv(out, 128), cdiv(in, 128)]."""
    return out * inp + -(-out // 128) * -(-inp // 128) * 4


def test_the_mtp_layer_is_a_sliding_only_decoder_layer(flash):
    # num_nextn_predict_layers 1 -> one layer, index 43 (compress_ratios[43] is 0, and vLLM forces ratio 1 there anyway)
    assert len(flash.mtp_layers) == 1
    cache = flash.mtp_layers[0].cache
    assert cache.compress_rate == 0 and cache.index_head_dim is None and cache.sliding_window == 128
    assert [c.name for c in flash.mtp_other] == ["enorm", "hnorm", "e_proj", "h_proj",
                                                 "hc_head_fn+hc_head_base+hc_head_scale", "shared_head.norm"]
    # parameters: the layer -- experts 256 x 3 x 4,096 x 2,048 = 6,442,450,944; shared expert 3 x 4,096 x 2,048 =
    # 25,165,824; router 256 x 4,096 = 1,048,576; attention wq_a 4,096 x 1,024 + q_norm 1,024 + wq_b 1,024 x 32,768 +
    # wkv 4,096 x 512 + kv_norm 512 + wo_a 4,096 x 8,192 + wo_b 8,192 x 4,096 + 64 sinks = 106,956,352; the two hc
    # mixers 2 x (24 x 16,384 + 24 + 3) = 786,486; 2 norms 8,192 -> 6,576,416,374. Beside it: 3 norms 12,288 + e_proj
    # and h_proj 2 x 4,096 x 4,096 = 33,554,432 + hc head 4 x 16,384 + 4 + 1 = 65,541 -> 33,632,261
    assert count_params(flash).mtp_params == 6_576_416_374 + 33_632_261 == 6_610_048_635


def test_mtp_rank_bytes_tp2_hand_derived(flash):
    # TP 2, no EP, the checkpoint's formats (experts MXFP4, the rest FP8 block 128, norms / hc mixers 16-bit):
    #   routed experts: I 2,048 / 2 = 1,024 a rank; w1 = w3 [1,024, 4,096] and w2 [4,096, 1,024] each
    #     1,024 x 4,096 / 2 + 1,024 x 4,096 / 32 = 2,228,224 B -> 256 x 3 x 2,228,224 = 1,711,276,032
    #   shared expert: gate / up [1,024, 4,096] and down [4,096, 1,024]: 3 x (4,194,304 + 8 x 32 x 4) = 12,585,984
    #   router [256, 4,096] bf16: 2,097,152
    #   attention: wq_a 4,195,328 + wkv 2,097,664 (replicated) + wq_b [16,384, 1,024] 16,781,312 + wo_a [4,096,
    #     4,096] 16,781,312 + wo_b [4,096, 4,096] 16,781,312 + 32 sinks x 2 + norms (1,024 + 512) x 2 = 56,640,064
    #   hc mixers 2 x 393,243 x 2 = 1,572,972; attn / ffn norms 2 x 4,096 x 2 = 16,384
    #   beside the block: 3 norms 24,576 + e_proj, h_proj replicated FP8 2 x 16,781,312 + hc head 65,541 x 2
    #     = 33,718,282
    # = 1,817,906,870 B (1.693 GiB); embed_tokens and shared_head.head are the target's (shared), not added
    parts = (256 * 3 * (1024 * 4096 // 2 + 1024 * 4096 // 32), 3 * _fp8(1024, 4096), 256 * 4096 * 2,
             _fp8(1024, 4096) + _fp8(512, 4096) + 3 * _fp8(4096, 4096) + 32 * 2 + (1024 + 512) * 2,
             2 * (24 * 16384 + 27) * 2, 2 * 4096 * 2, 3 * 4096 * 2 + 2 * _fp8(4096, 4096) + (4 * 16384 + 5) * 2)
    assert parts == (1_711_276_032, 12_585_984, 2_097_152, 56_640_064, 1_572_972, 16_384, 33_718_282)
    assert mtp_rank_bytes(flash, Layout(tp=2)) == sum(parts) == 1_817_906_870
    # e_proj / h_proj are FP8 like the attention's replicated linears (V3's eh_proj stays 16-bit): 16-bit they were
    # 2 x 33,554,432, 33,546,240 B more
    assert 2 * (4096 * 4096 * 2 - _fp8(4096, 4096)) == 33_546_240
    # TP 8: experts 1,711,276,032 / 4 = 427,819,008 (I 256 a rank; the same with EP: 32 whole experts)
    assert mtp_rank_bytes(flash, Layout(tp=8)) == mtp_rank_bytes(flash, Layout(tp=8, ep=True)) == 487_252_358


def test_e_proj_h_proj_follow_the_checkpoints_scheme():
    # vLLM matches the quant_config against the draft's module path, model.layers.43.e_proj. RedHat's NVFP4-FP8
    # re-quantization targets only "re:.*attn.*(fused_wqa_wkv|wq_b|wo_a|wo_b)$" (FP8 block) and the ffn projections
    # (NVFP4), so e_proj / h_proj stay bf16: 2 x 4,096 x 4,096 x 2 = 67,108,864 B where the FP8 checkpoint holds
    # 2 x 16,781,312 = 33,562,624
    nv = parse_config(json.loads((FIXTURES / "deepseek-v4-flash-nvfp4-fp8.json").read_text()), "nv")
    assert {(o.name, o.format, o.layers) for o in nv.quantization_overrides if o.category == "other"} == {
        ("e_proj", "unquantized", (43,)), ("h_proj", "unquantized", (43,))}
    bf16 = nv.model_copy(update={"quantization_overrides": tuple(
        o.model_copy(update={"format": "fp8-block"}) if o.category == "other" else o for o in nv.quantization_overrides)})
    assert mtp_rank_bytes(nv, Layout(tp=2)) - mtp_rank_bytes(bf16, Layout(tp=2)) == 67_108_864 - 33_562_624


def test_the_mtp_layer_joins_the_second_swa_group(flash):
    # The draft's one DeepseekV4SWACache (64-token blocks, window 128): an fp8_ds_mla entry of 448 + 64 x 2 + 8 =
    # 584 B a token, a page of 64 x 584 = 37,376 B padded to 65 x 576 = 37,440 B. vLLM 0.25 groups the sliding specs
    # by (block, window): 2 + 21 + 20 target layers + the draft's = 44, split by T = 22 into 22 + 22 (21 without it)
    cache = flash.mtp_layers[0].cache
    assert cache.kv_entry_bytes(1) == 584 and cache.kv_bytes_per_token("vllm", 2, 1) == 584  # MQA: no TP split
    layers = [(layer, 1) for layer in flash.layers]
    without = dsv4_layout(layers, 256, 1, (0, 25, 0))
    with_mtp = dsv4_layout(layers + [(flash.mtp_layers[0], 1)], 256, 1, (0, 25, 0))
    swa = [g for g in with_mtp["groups"] if g[3] == 64]
    assert [g[1:3] for g in swa] == [(22, 22 * 37_440), (22, 22 * 37_440)]
    assert [g[1:3] for g in without["groups"] if g[3] == 64] == [(22, 823_680), (21, 786_240)]
    # a pool block keeps 22 slots of the 37,440 B page: 1,039,680 B either way
    assert with_mtp["bytes_per_block"] == without["bytes_per_block"] == 1_039_680


def test_a_1m_request_takes_two_more_blocks_with_the_draft():
    # 0.25 (before 0.27): cdiv(sum of each group's pages x its page bytes, the MLA group's page 1,002,240), at
    # L = 1,048,576 and 4,096 batched tokens: MLA 4,096 pages x 1,002,240 = 4,105,175,040; SWA cdiv(127 + 4,096, 64)
    # + 1 = 67 pages x (823,680 + 823,680) = 110,373,120 (107,864,640 with 786,240 for the second group); C4 states
    # (cdiv(7 + 4,096, 4) + 1 = 1,027) x 967,680 = 993,807,360; C128 states (cdiv(127 + 4,096, 8) + 1 = 529) x 748,800
    # = 396,115,200 -> 5,605,470,720 / 1,002,240 -> 5,593 blocks (5,602,962,240 -> 5,591 without the draft)
    assert -(-(4_105_175_040 + 110_373_120 + 993_807_360 + 396_115_200) // 1_002_240) == 5_593
    assert -(-(4_105_175_040 + 107_864_640 + 993_807_360 + 396_115_200) // 1_002_240) == 5_591
    engine = dict(vllm_version="0.25", kv_cache_dtype="fp8", max_model_len=1_048_576, max_num_batched_tokens=4096,
                  max_num_seqs=64, kv_cache_memory_bytes=10_631 * 1_039_680)
    gpu = get_gpu("RTX-PRO-6000")
    p = plan(load_preset("deepseek-v4-flash"), gpu,
             EngineConfig(**engine, speculative_method="mtp", num_speculative_tokens=2), Layout(tp=2))
    q = plan(load_preset("deepseek-v4-flash"), gpu, EngineConfig(**engine), Layout(tp=2))
    assert (p.blocks_per_request, q.blocks_per_request) == (5_593, 5_591)


def test_rope_tables_and_model_buffers(flash):
    # two fp32 DeepseekV4ScalingRotaryEmbedding tables (rope_theta 10,000 and compress_rope_theta 160,000), each
    # original 65,536 x factor 16 = 1,048,576 rows x 64 (cos + sin halves) x 4 B = 268,435,456 B
    assert vllm_rope_cache_bytes(flash, Layout(tp=2), 0, "0.25") == 2 * 1_048_576 * 64 * 4 == 536_870_912
    assert hc_mult_of(flash) == 4  # hc head 4 x 4 x 4,096 + 4 + 1 = 65,541 elements
    # topk_indices_buffer 4,096 x 512 x 4 = 8,388,608 B; _mtp_hidden_buffer 4,096 x 4 x 4,096 x 2 = 134,217,728 B
    assert dsv4_model_buffer_bytes(flash, 4096, True, True, 2) == (8_388_608, 134_217_728)
    assert dsv4_model_buffer_bytes(flash, 4096, False, True, 2) == (8_388_608, 0)  # not the last PP stage
    assert dsv4_model_buffer_bytes(load_preset("llama-3.1-8b"), 4096, True, True, 2) == (0, 0)


@pytest.mark.parametrize(("version", "method", "hidden"), [
    ("0.25", "none", 134_217_728),  # 0.20 - 0.26 make the hidden-state buffer whatever the method
    ("0.27", "none", 0),            # 0.27+: needs_mtp_hidden_states (EAGLE family, MTP included, or a draft model)
    ("0.27", "mtp", 134_217_728),
    ("0.33", "ngram", 0),
])
def test_the_hidden_state_buffer_by_release(version, method, hidden):
    engine = EngineConfig(vllm_version=version, kv_cache_dtype="fp8", max_num_batched_tokens=4096, max_num_seqs=64,
                          max_model_len=65536, speculative_method=method,
                          num_speculative_tokens=0 if method == "none" else 2)
    p = plan(load_preset("deepseek-v4-flash"), get_gpu("B200"), engine, Layout(tp=8))
    terms = {t.name: t for t in p.ranks[0].terms}
    assert terms["DeepSeek-V4 model buffers (in weights)"].bytes == 8_388_608 + hidden


def test_vllm_mtp_plans_sglang_ngram_is_refused():
    spec = parse_config(json.loads((FIXTURES / "deepseek-v4-flash.json").read_text()), "deepseek-v4-flash")
    p = plan(spec, get_gpu("B200"), EngineConfig(vllm_version="0.25", speculative_method="mtp",
                                                   num_speculative_tokens=1, max_model_len=65536), Layout(tp=8))
    term = next(t for t in p.ranks[0].terms if t.name == "MTP layers (in weights)")
    assert "vllm/models/deepseek_v4/nvidia/mtp.py DeepSeekV4MTP" in term.source and "kvplan." not in term.source
    mtp = [w for w in p.warnings if w.startswith("MTP draft (vLLM, 1 token)")]
    # the one public DSv4 MTP log's measured gap travels with every DSv4 MTP plan (10.29 logged vs 13.44 planned)
    assert len(mtp) == 1 and "3.15 GiB below this plan's (10.29 vs 13.44 GiB" in mtp[0] and "upper limit" in mtp[0]
    # SGLang's DeepSeek-V4 MTP is planned (tests/test_sglang_dsv4_spec.py); NGRAM, which SGLang refuses for it, is not
    with pytest.raises(PlanInputError, match=r"'ngram' on DeepSeek-V4: SGLang refuses it"):
        plan(spec, get_gpu("B200"), EngineConfig(engine="sglang", speculative_method="ngram", num_speculative_tokens=1,
                                                 max_model_len=65536), Layout(tp=8))
