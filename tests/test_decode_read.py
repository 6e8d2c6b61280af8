"""What one decode step reads (kvplan.plan.decode_bound, issue 12 "Budget that says what it means"): the routed
experts a step hits (k per MoE layer for the upper bound; E(1 - (1 - k/E)^B) at uniform routing for the estimate),
sliding / chunked windows, DSA top-k and recurrent state, not every weight and every layer's whole-context KV.
Every figure below is derived by hand in its comment from the preset's shapes (kvplan/presets) and the GPU's
3.35 TB/s (H100-SXM, kvplan/gpus.py)."""

import json
from pathlib import Path

import pytest

from kvplan import load_preset, parse_config
from kvplan.cli import main
from kvplan.gpus import get_gpu
from kvplan.hf_config import load_config_text
from kvplan.layers import (ChunkedLocalAttention, LinearAttentionState, MLAIndexerAttention, SlidingWindowAttention,
                           cache_parts)
from kvplan.parallel import Layout, routed_expert_groups, stage_distinct
from kvplan.plan import decode_bound, decode_overcounts, decode_weight_parts, expected_experts
from tests.app_util import kvplan_plan

H100_BW = 3_350_000_000_000  # B/s
# gpt-oss-120b, one MXFP4 expert: gate_up 5,760 x 2,880 at 4 bits = 8,294,400 B + one e8m0 scale per 32 inputs
# 5,760 x 90 = 518,400 B + bf16 bias 5,760 x 2 = 11,520 B -> 8,824,320; down 2,880 x 2,880 / 2 = 4,147,200 + 2,880 x 90
# = 259,200 + 2,880 x 2 = 5,760 -> 4,412,160; one expert 13,236,480 B. 18 layers x 128 experts = 30,496,849,920 B
# per group (the sliding and the full layers are two groups of identical layers).
GPT_OSS_EXPERT = 8_824_320 + 4_412_160
GPT_OSS_GROUP = 18 * 128 * GPT_OSS_EXPERT
# KV a step reads per sequence at 131,072 tokens: 8 KV heads x (64 + 64) x 2 B = 2,048 B a token a layer; 18 full
# layers x 131,072 tokens + 18 sliding layers x 128 (the window) = (2,359,296 + 2,304) x 2,048 = 4,836,556,800 B.
GPT_OSS_KV = (18 * 131_072 + 18 * 128) * 2_048
# the untied input embedding (201,088 x 2,880 bf16 = 1,158,266,880 B): a step reads only its batch's rows of it
GPT_OSS_EMBED = 201_088 * 2_880 * 2


def _gpt_oss(batch: int):
    p = kvplan_plan("gpt-oss-120b")  # 1 x H100-SXM, vLLM default, 131,072 tokens, bf16 KV
    rank = p.ranks[0]
    spec = load_preset("gpt-oss-120b")
    return p, rank, decode_bound(spec, get_gpu("H100-SXM"), Layout(1), rank.weights_bytes, batch, 131_072, 2, None,
                                 "mxfp4", *decode_weight_parts(rank))


def test_gpt_oss_experts_are_priced_from_their_mxfp4_shapes():
    assert GPT_OSS_EXPERT == 13_236_480 and GPT_OSS_GROUP == 30_496_849_920
    assert routed_expert_groups(load_preset("gpt-oss-120b"), Layout(1), "mxfp4") == (
        (GPT_OSS_GROUP, 128, 4, 128), (GPT_OSS_GROUP, 128, 4, 128))


def test_gpt_oss_batch_1_reads_four_experts_a_layer_and_its_windows():
    p, rank, d = _gpt_oss(1)
    # the rank: 65,577,282,176 B, of which the MXFP4 MoE layout (vLLM 0.33, Triton: swizzled scales only, the
    # checkpoint's freed from 0.25.0) 294,912,000 over the experts
    assert rank.weights_bytes == 65_577_282_176 and decode_weight_parts(rank) == (294_912_000, 0)
    experts = 2 * GPT_OSS_GROUP + 294_912_000  # 61,288,611,840 B of routed experts on the rank
    dense = 65_577_282_176 - experts  # 4,288,670,336 B: attention, router, norms, embeddings, head
    read = dense - GPT_OSS_EMBED  # 3,130,403,456 B a step reads of them: not the input table (batch rows only)
    # each group with its half of the layout: 30,496,849,920 + 147,456,000 = 30,644,305,920 B; x 4 / 128
    # = 957,634,560, twice = 1,915,269,120 B of experts read
    least = 2 * ((GPT_OSS_GROUP + 147_456_000) * 4 // 128)
    assert experts == 61_288_611_840 and dense == 4_288_670_336 and least == 1_915_269_120
    assert GPT_OSS_EMBED == 1_158_266_880 and read == 3_130_403_456
    assert d.kv_bytes_per_step == GPT_OSS_KV == 4_836_556_800
    assert d.bytes_per_step == read + least + GPT_OSS_KV == 9_882_229_376
    # 3.35e12 / 9,882,229,376 = 338.99 tokens/s at most; the old read (every weight + all 36 layers' whole-context
    # KV: 65,577,282,176 + 36 x 131,072 x 2,048 = 75,240,958,592 B) would give 44.5 and call it a ceiling
    assert d.tokens_per_s == pytest.approx(H100_BW / 9_882_229_376) == pytest.approx(338.992, abs=1e-3)
    assert 65_577_282_176 + 36 * 131_072 * 2_048 == 75_240_958_592
    # at batch 1 the estimate reads the same k experts: the two figures agree
    assert d.expected_bytes_per_step == d.bytes_per_step and d.experts_read_least == 4 == d.experts_read_most
    assert p.decode == d  # the plan's own decode step is this one


def test_gpt_oss_batch_64_bound_and_uniform_routing_estimate():
    _, _, d = _gpt_oss(64)
    # bound: still 4 experts a layer (64 tokens may all pick the same 4): 3,130,403,456 + 1,915,269,120 + 64 x
    # 4,836,556,800 (= 309,539,635,200) = 314,585,307,776 B; 64 x 3.35e12 / that = 681.53 tokens/s
    assert d.bytes_per_step == 3_130_403_456 + 1_915_269_120 + 64 * GPT_OSS_KV == 314_585_307_776
    assert d.tokens_per_s == pytest.approx(681.532, abs=1e-3)
    # estimate: 128 x (1 - (124/128)^64) = 128 x (1 - 0.131077) = 111.2212 experts a layer; each group
    # int(30,644,305,920 x 111.2212 / 128) = 26,627,326,727 B -> 3,130,403,456 + 2 x 26,627,326,727 + 309,539,635,200
    # = 365,924,692,110 B; 64 x 3.35e12 / that = 585.91 tokens/s (every expert, min(128, 64 x 4) = 128: 64 x 3.35e12 /
    # (65,577,282,176 - 1,158,266,880 + 309,539,635,200) = 573.3)
    assert d.experts_read_expected == pytest.approx(111.2212, abs=1e-4) and d.experts_read_most == 128
    assert d.expected_bytes_per_step == 3_130_403_456 + 2 * 26_627_326_727 + 64 * GPT_OSS_KV == 365_924_692_110
    assert d.expected_tokens_per_s == pytest.approx(585.913, abs=1e-3)


def test_expected_experts_runs_from_k_to_every_expert():
    assert expected_experts(128, 4, 1) == pytest.approx(4)  # 128 x (1 - 124/128) = 4
    assert expected_experts(8, 2, 2) == pytest.approx(3.5)  # 8 x (1 - (6/8)^2) = 8 x 0.4375 = 3.5
    assert expected_experts(256, 8, 10_000) == pytest.approx(256)  # (248/256)^10000 ~ e^-317: all of them
    assert expected_experts(4, 4, 1) == 4  # k = E: every expert


def test_expert_parallel_least_is_what_the_busiest_rank_must_read():
    spec = load_preset("mixtral-8x7b")  # 32 layers, 8 experts of 3 x 14,336 x 4,096 x 2 B = 352,321,536 B, k 2
    gpu, w = get_gpu("H100-SXM"), 20_000_000_000  # an arbitrary rank weight; only the experts' share is compared
    # TP 8: every rank holds 1/8 of all 8 experts = 32 x 8 x 352,321,536 / 8 = 11,274,289,152 B; k = 2 of 8 read
    # -> 11,274,289,152 x 2 / 8 = 2,818,572,288 B. EP 8: a rank holds cdiv(8, 8) = 1 whole expert a layer (the same
    # 11,274,289,152 B), and the 2 experts a step reads sit on 2 ranks: the busiest reads cdiv(2, 8) = 1 of its 1.
    assert routed_expert_groups(spec, Layout(tp=8)) == ((11_274_289_152, 8, 2, 8),)
    assert routed_expert_groups(spec, Layout(tp=8, ep=True)) == ((11_274_289_152, 8, 2, 1),)
    tp = decode_bound(spec, gpu, Layout(tp=8), w, 1, 1, 2)
    ep = decode_bound(spec, gpu, Layout(tp=8, ep=True), w, 1, 1, 2)
    kv = 32 * 1 * 2 * 128 * 2  # 1 token, 8 KV heads / 8 ranks = 1 head of (128 + 128) x 2 B, 32 layers = 16,384 B
    embed = 32_000 * 4_096 * 2 // 8  # the untied input table's shard, 32,768,000 B: not read but for batch rows
    assert tp.bytes_per_step == w - embed - 11_274_289_152 + 2_818_572_288 + kv
    assert ep.bytes_per_step == w - embed + kv


def test_a_dense_full_attention_model_reads_every_weight_but_its_input_table():
    p = kvplan_plan("llama-3.1-8b")  # 3 sequences of 131,072 tokens fit on one H100
    d = p.decode
    # 16,094,076,928 B of weights - the untied input table 128,256 x 4,096 x 2 B = 1,050,673,152 (a step reads 3 rows
    # of it) + 3 x 131,072 tokens x 32 layers x 8 heads x 256 x 2 B (131,072 B a token) = 15,043,403,776 +
    # 51,539,607,552 = 66,583,011,328 B; 3 x 3.35e12 / that = 150.94 tokens/s (148.59 with the table)
    assert p.ranks[0].weights_bytes == 16_094_076_928 and d.batch == 3
    assert d.bytes_per_step == d.expected_bytes_per_step == 16_094_076_928 - 128_256 * 4_096 * 2 + 3 * 131_072 * 131_072
    assert d.bytes_per_step == 66_583_011_328
    assert d.tokens_per_s == pytest.approx(150.9394, abs=1e-4) and d.experts_read_least == 0
    # FLOPs: 2 x 8,030,261,248 active x 3 + 4 x 3 x 32 heads x 128 x (32 layers x 131,072 tokens)
    # = 48,181,567,488 + 206,158,430,208 = 254,339,997,696
    assert d.flops_per_step == 254_339_997_696


def test_dsa_reads_the_top_k_latent_and_every_indexer_key():
    p = kvplan_plan("deepseek-v3.2", gpu="H200", tp=8)  # 3 sequences of 163,840 tokens, bf16 KV
    d = p.decode
    # 61 DSA layers; a layer reads the latent of min(163,840, 2,048) tokens, 2,048 x 576 x 2 B = 2,359,296, plus
    # 163,840 indexer keys of 128 fp8 + 4 B scale = 132 B: 21,626,880 -> 23,986,176 B a layer; x 61 x 3 sequences
    # = 4,389,470,208 B (the whole cache, 3 x 61 x 163,840 x 1,284 = 38,497,566,720, was the old read)
    assert d.batch == 3 and d.context == 163_840
    assert d.kv_bytes_per_step == 3 * 61 * (2_048 * 1_152 + 163_840 * 132) == 4_389_470_208
    layer = load_preset("deepseek-v3.2").layers[5].cache
    assert isinstance(layer, MLAIndexerAttention) and layer.index_topk == 2_048
    assert layer.decode_attended(163_840) == 2_048 and layer.decode_attended(1_000) == 1_000
    assert layer.decode_read_bytes(1_000, 8, 2) == 1_000 * 1_284  # below top-k: the whole cache


def test_qwen35_linear_layers_read_their_state_not_per_token_kv():
    d = kvplan_plan("qwen3.5-27b").decode  # 1 sequence of 262,144 tokens
    # 16 full layers: 4 KV heads x (256 + 256) x 2 B = 4,096 B a token -> 16 x 262,144 x 4,096 = 17,179,869,184;
    # 48 gated-DeltaNet layers, each its state whatever the length: conv (2 x 16 x 128 + 48 x 128 = 10,240) x 3 x 2 B
    # + 48 x 128 x 128 x 4 B (fp32, mamba_ssm_dtype) = 61,440 + 3,145,728 = 3,207,168 B -> 153,944,064
    assert d.kv_bytes_per_step == 16 * 262_144 * 4_096 + 48 * 3_207_168 == 17_333_813_248
    state = load_preset("qwen3.5-27b").layers[0].cache
    assert isinstance(state, LinearAttentionState)
    assert state.decode_read_bytes(262_144, 1, 2, 2) == state.decode_read_bytes(8, 1, 2, 2) == 3_207_168
    assert state.decode_attended(262_144) == 0


def test_windows_read_their_window_and_chunks_the_current_chunk():
    sliding = SlidingWindowAttention(num_key_value_heads=8, head_dim=64, v_head_dim=64, sliding_window=128)
    chunked = ChunkedLocalAttention(num_key_value_heads=8, head_dim=128, v_head_dim=128, attention_chunk_size=8_192)
    assert sliding.decode_read_bytes(131_072, 1, 2) == 128 * 2_048 == 262_144
    assert sliding.decode_read_bytes(100, 1, 2) == 100 * 2_048
    # chunked: (10,000 - 1) mod 8,192 + 1 = 1,808 tokens of 8 x 256 x 2 B = 4,096 B; at 16,384 a whole chunk
    assert chunked.decode_read_bytes(10_000, 1, 2) == 1_808 * 4_096 == 7_405_568
    assert chunked.decode_read_bytes(16_384, 1, 2) == 8_192 * 4_096
    assert chunked.decode_read_bytes(16_385, 1, 2) == 4_096  # a new chunk has begun: one token


def test_a_warm_memo_gives_each_batch_its_own_experts():
    spec, gpu = load_preset("gpt-oss-120b"), get_gpu("H100-SXM")
    runs = [decode_bound(spec, gpu, Layout(1), 69_077_887_616, b, 131_072, 2, None, "mxfp4", 3_795_517_440)
            for b in (1, 64, 1, 64)]
    fresh = [decode_bound(spec.model_copy(), gpu, Layout(1), 69_077_887_616, b, 131_072, 2, None, "mxfp4",
                          3_795_517_440) for b in (1, 64)]
    assert runs[0] == runs[2] == fresh[0] and runs[1] == runs[3] == fresh[1]
    assert runs[0].experts_read_expected == pytest.approx(4) and runs[1].experts_read_expected > 111
    # the served format is in the key: bf16 experts price (5,760 + 2,880) x 2,880 x 2 + (5,760 + 2,880) x 2 =
    # 49,783,680 B each, 36 x 128 x that = 229,403,197,440 B > the rank's weights (dense part clamped at 0), so a step
    # reads 229,403,197,440 x 4 / 128 = 7,168,849,920 B of experts + the KV 4,836,556,800 = 12,005,406,720 B
    bf16 = decode_bound(spec, gpu, Layout(1), 69_077_887_616, 1, 131_072, 2, None, "bf16")
    assert bf16 == decode_bound(spec.model_copy(), gpu, Layout(1), 69_077_887_616, 1, 131_072, 2, None, "bf16")
    assert bf16.bytes_per_step == 229_403_197_440 * 4 // 128 + GPT_OSS_KV == 12_005_406_720


M3_CONFIG = Path(__file__).parent / "fixtures" / "configs" / "minimax-m3-nvfp4.json"
# DeepSeek-V4-Flash (kvplan/presets/deepseek-v4-flash.json): compress_ratios of its 43 layers hold 21 x 4 (CSA, with
# the indexer's index_head_dim 128), 20 x 128 (HCA, no indexer) and 2 x 0 (sliding only); the 44th entry is the MTP's
V4_OVER = ("every compressed entry of the 21 compressed sparse attention (CSA) layers (DeepSeek-V4's attention reads "
           "only its indexer's top-k of them)")
# MiniMax-M3 (the fixture's sparse_attention_config.sparse_attention_freq): 3 zeros then 57 ones over its 60 layers
M3_OVER = ("the K/V of the 57 sparse-attention layers over the whole context (MiniMax-M3's main attention reads only "
           "the top-k blocks its lightning indexer picks)")


def _caches(spec):
    return [(part, n) for layer, n in stage_distinct(spec, 1, 0) for part in cache_parts(layer.cache)]


def test_what_the_bound_still_over_counts_is_said_by_the_bound_itself():
    # read as a step reads them (k experts, windows, DSA top-k, recurrent states): nothing over-counted
    for name in ("gpt-oss-120b", "deepseek-v3.2", "qwen3.5-27b", "llama-3.1-8b"):
        assert decode_overcounts(_caches(load_preset(name))) == (), name
    assert decode_overcounts(_caches(load_preset("deepseek-v4-flash"))) == (V4_OVER,)
    m3 = parse_config(load_config_text(M3_CONFIG.read_bytes()))
    assert decode_overcounts(_caches(m3)) == (M3_OVER,)
    # the plan's own decode step carries it: not an upper bound, and why
    v4 = kvplan_plan("deepseek-v4-flash", "H200", 8).decode
    assert (v4.upper_bound, v4.overcounts) == (False, (V4_OVER,))
    gpu = get_gpu("H200")
    d = decode_bound(m3, gpu, Layout(tp=8), 90_000_000_000, 1, 131_072, 2)
    assert (d.upper_bound, d.overcounts) == (False, (M3_OVER,))
    llama = kvplan_plan("llama-3.1-8b").decode
    assert (llama.upper_bound, llama.overcounts) == (True, ())
    assert all("kvplan" not in s for s in (V4_OVER, M3_OVER))  # user-facing: engine / model words only


def _cli(capsys, *argv) -> str:
    assert main(["plan", *map(str, argv)]) == 0
    return capsys.readouterr().out


def _decode_line(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("  decode bound: "))


def test_the_cli_says_whether_its_tokens_per_s_is_an_upper_bound(capsys):
    v4 = _cli(capsys, "deepseek-v4-flash", "--gpu", "H200", "-tp", "8")
    line = _decode_line(v4)
    assert "tokens/s at batch" in line and f"not an upper bound: it counts {V4_OVER}" in line, line
    assert "so a real decode step reads less and can run faster" in line
    doc = json.loads(_cli(capsys, "deepseek-v4-flash", "--gpu", "H200", "-tp", "8", "--json"))
    assert (doc["decode"]["upper_bound"], doc["decode"]["overcounts"]) == (False, [V4_OVER])
    m3 = _decode_line(_cli(capsys, M3_CONFIG, "--gpu", "H200", "-tp", "8"))
    assert f"not an upper bound: it counts {M3_OVER}" in m3, m3
    doc = json.loads(_cli(capsys, M3_CONFIG, "--gpu", "H200", "-tp", "8", "--json"))
    assert (doc["decode"]["upper_bound"], doc["decode"]["overcounts"]) == (False, [M3_OVER])
    llama = _decode_line(_cli(capsys, "llama-3.1-8b", "--gpu", "H100-SXM"))
    assert "(memory-bound ceiling, an upper bound)" in llama and "not an upper bound" not in llama, llama
    doc = json.loads(_cli(capsys, "llama-3.1-8b", "--gpu", "H100-SXM", "--json"))
    assert (doc["decode"]["upper_bound"], doc["decode"]["overcounts"]) == (True, [])
    assert f"{doc['decode']['tokens_per_s']:,.0f} tokens/s" in llama


def test_fp8_block_experts_are_priced_per_rank_under_tp_and_ep():
    spec = load_preset("deepseek-v3.2")  # fp8-block, 58 MoE layers of 256 experts (k 8), hidden 7,168, expert 2,048
    # TP 8: gate and up split to 256 outputs: 256 x 7,168 fp8 = 1,835,008 B + cdiv(256, 128) x 7,168 / 128 = 112
    # fp32 block scales = 448 B -> 1,835,456; down split to 256 inputs: the same 1,835,456; an expert's shard
    # 3 x 1,835,456 = 5,506,368 B, x 256 experts x 58 layers = 81,758,552,064 B
    assert routed_expert_groups(spec, Layout(tp=8)) == ((58 * 256 * 3 * 1_835_456, 256, 8, 256),)
    assert 58 * 256 * 3 * 1_835_456 == 81_758_552_064
    # EP 8: 32 whole experts of 3 x (2,048 x 7,168 + 16 x 56 x 4) = 3 x 14,683,648 = 44,050,944 B: the same bytes
    assert routed_expert_groups(spec, Layout(tp=8, ep=True)) == ((58 * 32 * 44_050_944, 256, 8, 32),)
    # a step of one token: TP reads 8 / 256 of every rank's shards, EP the busiest rank cdiv(8, 8) = 1 of its 32
    # (the untied input table's bf16 shard, 129,280 x 7,168 x 2 B / 8 = 231,669,760 B, is not read but for batch rows)
    gpu, w, embed = get_gpu("H200"), 90_000_000_000, 129_280 * 7_168 * 2 // 8
    tp = decode_bound(spec, gpu, Layout(tp=8), w, 1, 1, 2)
    ep = decode_bound(spec, gpu, Layout(tp=8, ep=True), w, 1, 1, 2)
    assert embed == 231_669_760
    assert tp.bytes_per_step - tp.kv_bytes_per_step == w - embed - 81_758_552_064 + 81_758_552_064 * 8 // 256
    assert ep.bytes_per_step - ep.kv_bytes_per_step == w - embed - 81_758_552_064 + 81_758_552_064 // 32


def test_the_input_table_left_out_is_the_untied_shard_only():
    from kvplan.parallel import input_embedding_rank_bytes

    llama = load_preset("llama-3.1-8b")  # untied: 128,256 rows (a multiple of 64) x 4,096 x 2 B = 1,050,673,152 B
    assert input_embedding_rank_bytes(llama, Layout(1)) == 1_050_673_152
    assert input_embedding_rank_bytes(llama, Layout(tp=2)) == 525_336_576  # 64,128 rows a rank
    gemma = load_preset("gemma-2-9b")  # tied: the head reads the whole table every step, so nothing is left out
    assert gemma.tie_word_embeddings and not gemma.lm_head and input_embedding_rank_bytes(gemma, Layout(1)) == 0
