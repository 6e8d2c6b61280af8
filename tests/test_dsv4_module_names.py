"""DeepSeek-V4's quantization_config matched by its own module names (families/deepseek_v4.VLLM_MODULE_NAMES).

RedHatAI/DeepSeek-V4-Flash-NVFP4-FP8 (fixture, provenance in tests/fixtures/configs/SOURCES.json): compressed-tensors
group_0 FP8 block 128 x 128 on ``re:.*attn.*(fused_wqa_wkv|wq_b|wo_a|wo_b)$``, group_1 NVFP4 on
``re:.*ffn.*(gate|up|down)_proj$``. vLLM (models/deepseek_v4/attention.py, compressor.py, nvidia/model.py, 0.25 - 0.32)
matches those against ``model.layers.{i}.attn.fused_wqa_wkv`` (wq_a + wkv), ``attn.wq_b``, ``attn.wo_a``,
``attn.wo_b``, ``attn.indexer.wq_b`` (FP8 block); the compressors' ``fused_wkv_wgate`` and ``indexer.weights_proj``
(quant_config None) and the norms / sinks stay 16-bit; ``ffn.shared_experts.gate_up_proj`` / ``down_proj`` and
``ffn.experts.0.{gate,up,down}_proj`` are NVFP4. kvplan's components carry transformers 5.23's names (q_a_proj ...),
which no "re:" target above names: the attention was priced bf16 before (168,885,164,214 B as shipped).
"""

import copy
import json
from pathlib import Path

from kvplan import parse_config
from kvplan.parallel import Layout, rank_weight_bytes
from kvplan.weights import weight_bytes

FIXTURES = Path(__file__).parent / "fixtures" / "configs"
NV = json.loads((FIXTURES / "deepseek-v4-flash-nvfp4-fp8.json").read_text())


def _one_layer(ratio: int, drop_fp8_group: bool = False):
    cfg = copy.deepcopy(NV)
    cfg["num_hidden_layers"], cfg["compress_ratios"] = 1, [ratio]
    if drop_fp8_group:
        del cfg["quantization_config"]["config_groups"]["group_0"]
    return parse_config(cfg, "x")


def fp8_block(o: int, i: int) -> int:  # fp8 weight + fp32 scale per 128 x 128 block (kvplan.weights table)
    return o * i + 4 * -(-o // 128) * -(-i // 128)


def test_sliding_layer_attention_is_fp8_block():
    # V4-Flash: h 4096, q_lora 1024, 64 heads x d 512, o_groups 8, o_lora 1024. FP8 block (128 x 128, fp32 scales):
    #   q_a_proj (wq_a)  [1024, 4096]:  4,194,304 + 4 x 8 x 32   =  4,195,328
    #   q_b_proj (wq_b)  [32768, 1024]: 33,554,432 + 4 x 256 x 8 = 33,562,624
    #   kv_proj (wkv)    [512, 4096]:   2,097,152 + 4 x 4 x 32   =  2,097,664
    #   o_a_proj (wo_a)  [8192, 4096]:  33,554,432 + 4 x 64 x 32 = 33,562,624
    #   o_b_proj (wo_b)  [4096, 8192]:  33,554,432 + 4 x 32 x 64 = 33,562,624
    # bf16: q_norm 1024 + kv_norm 512 -> 3,072 B, sinks 64 -> 128 B. Sum 106,980,864 + 3,200 = 106,984,064
    # (bf16 everything: 2 x 106,954,752 + 3,200 = 213,912,704, what kvplan priced before).
    assert fp8_block(1024, 4096) + fp8_block(32768, 1024) + fp8_block(512, 4096) + fp8_block(8192, 4096) \
        + fp8_block(4096, 8192) == 106_980_864
    assert weight_bytes(_one_layer(0)).components["attention"] == 106_980_864 + 3_072 + 128 == 106_984_064
    assert weight_bytes(_one_layer(0, drop_fp8_group=True)).components["attention"] == 213_912_704


def test_csa_layer_indexer_wq_b_fp8_compressors_bf16():
    # CSA (ratio 4) adds, beside the 106,984,064 above: compressor fused_wkv_wgate [2 x 1024, 4096] bf16
    # 16,777,216, ape [4, 1024] 8,192, norm 1,024; indexer compressor [2 x 256, 4096] bf16 4,194,304, ape [4, 256]
    # 2,048, norm 256; indexer wq_b [64 x 128, 1024] FP8 block 8,388,608 + 4 x 64 x 8 = 8,390,656; indexer
    # weights_proj [64, 4096] bf16 524,288 (vLLM quant_config None).
    extra = 16_777_216 + 8_192 + 1_024 + 4_194_304 + 2_048 + 256 + fp8_block(8192, 1024) + 524_288
    assert weight_bytes(_one_layer(4)).components["attention"] == 106_984_064 + extra == 136_882_048


def test_sliding_layer_rank_tp8():
    # TP8: wq_a and wkv replicated (4,195,328 + 2,097,664), wq_b / wo_a column and wo_b row split 8 ways:
    # [4096, 1024], [1024, 4096], [4096, 1024] -> 4,194,304 + 4 x 32 x 8 = 4,195,328 each; norms 3,072, sinks 8 x 2.
    # Attention a rank: 6,292,992 + 3 x 4,195,328 + 3,088 = 18,882,064; bf16 it was 37,751,824: 18,869,760 less.
    assert rank_weight_bytes(_one_layer(0, drop_fp8_group=True), Layout(tp=8)) \
        - rank_weight_bytes(_one_layer(0), Layout(tp=8)) == 37_751_824 - 18_882_064 == 18_869_760


def test_whole_fixture_overrides_and_bytes():
    spec = parse_config(NV, "x")
    assert spec.quantization == "nvfp4"  # the format holding the most weights (routed experts)
    got = {(o.category, o.name, o.format, len(o.layers)) for o in spec.quantization_overrides}
    # 44 = the 43 decoder layers + the MTP layer (index 43, families/deepseek_v4.mtp_fields: vLLM's draft is a
    # sliding-only DeepseekV4DecoderLayer, so it holds no compressor / indexer and those counts stay 41 / 21)
    assert got == {("attention", n, "fp8-block", 44) for n in ("q_a_proj", "q_b_proj", "kv_proj", "o_a_proj",
                                                                "o_b_proj")} | {
        ("attention", "compressor.indexer.q_b_proj", "fp8-block", 21),  # the 21 CSA layers (ratio 4)
        ("attention", "compressor.kv_proj", "unquantized", 41), ("attention", "compressor.gate_proj", "unquantized", 41),
        ("attention", "compressor.indexer.kv_proj", "unquantized", 21),
        ("attention", "compressor.indexer.gate_proj", "unquantized", 21),
        # the MTP layer's e_proj / h_proj (model.layers.43.e_proj): neither target regex names them, so bf16
        ("other", "e_proj", "unquantized", 1), ("other", "h_proj", "unquantized", 1)}
    w = weight_bytes(spec)
    # as shipped: 164,111,114,934 B (152.84 GiB; was 168,885,164,214 with bf16 attention, parse_golden.json)
    assert w.total_bytes == 164_111_114_934
    assert w.components["experts"] == 43 * 256 * 3 * (2048 * 4096 // 2 + 2048 * 256 + 8)  # NVFP4, unchanged
    assert rank_weight_bytes(spec, Layout(tp=8)) == 21_588_325_350  # 20.11 GiB a rank (was 22,575,842,790)


def test_ignore_by_vllm_name_and_other_families_untouched():
    cfg = copy.deepcopy(NV)
    cfg["quantization_config"]["ignore"] = ["model.layers.0.attn.wo_b", "re:.*layers\\.1\\.attn\\.fused_wqa_wkv$"]
    spec = parse_config(cfg, "x")
    off = {(o.name, o.layers) for o in spec.quantization_overrides if o.format == "unquantized"
           and not o.name.startswith("compressor.") and o.category != "other"}  # "other": the MTP e_proj / h_proj
    assert off == {("o_b_proj", (0,)), ("q_a_proj", (1,)), ("kv_proj", (1,))}
    # DeepSeek-V3's q_b_proj is not DeepSeek-V4's wq_b: the table is DeepSeek-V4's alone
    v3 = json.loads((Path(__file__).parents[1] / "kvplan" / "presets" / "deepseek-v3.json").read_text())
    v3["quantization_config"] = copy.deepcopy(NV["quantization_config"])
    assert not any(o.format == "fp8-block" for o in parse_config(v3, "v3").quantization_overrides)
