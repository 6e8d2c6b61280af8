"""The FlashInfer TRTLLM MXFP4 MoE padding by vLLM release (kvplan.vllm_layouts.mxfp4_padded_sizes, kvplan issue 11).

Read 2026-12-03 in every PyPI wheel 0.10.1.1 - 0.34.0 (``pip download vllm==X --no-deps``): the TRTLLM backends
(SM100_FI_MXFP4_* / TRTLLM_BACKENDS = FLASHINFER_TRTLLM_MXFP4_BF16, _MXFP8) round the intermediate size per partition
up to 256 in quantization/mxfp4.py ``Mxfp4MoEMethod.create_weights`` (0.10.1.1 - 0.18.1) and in fused_moe/oracle/
mxfp4.py ``mxfp4_round_up_hidden_size_and_intermediate_size`` (0.19.0 - 0.26.0), to 128 there from 0.27.0 (0.27.0 -
0.34.0); the hidden size to 256 in all. gpt-oss (``GptOssMxfp4MoEMethod``) and DeepSeek-V4 / V4.1
(``Mxfp4MoEMethod`` from models/deepseek_v4*/quant_config.py, no alignment of their own) both reach that function
through ``maybe_roundup_sizes``; on sm100 both pick a TRTLLM backend first (``_get_priority_backends_for_gpt_oss`` /
``_get_priority_backends``, 0.19.0 - 0.34.0).

One gpt-oss expert on a rank as TRTLLM holds it (H, I padded; fp32 biases): w13 2I x H/2 + w2 H x I/2 = 1.5 H I
packed, e8m0 scales 2I x H/32 + H x I/32, biases (2I + H) x 4. The checkpoint's (H = 2880, I unpadded, bf16 biases):
1.5 x 2880 x I + 2I x 90 + 2880 x cdiv(I, 32) + (2I + 2880) x 2. gpt-oss-120b: 36 layers x 128 experts = 4,608.
"""

import pytest

from kvplan import load_preset
from kvplan.engines import VLLM_CHANGES, EngineConfig, vllm_has
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout, rank_weight_bytes
from kvplan.plan import plan
from kvplan.vllm_dsv41 import mxfp4_padding_bytes
from kvplan.vllm_layouts import (
    dsv4_mxfp4_extra_bytes,
    mxfp4_expert_bytes,
    mxfp4_override_padding_bytes,
    mxfp4_padded_sizes,
    vllm_mxfp4_extra_bytes,
)
from tests.test_dsv4_1_vllm import _spec as _v41_spec

B200 = get_gpu("B200")
EXPERTS_120B = 36 * 128  # gpt-oss-120b: layers x experts, every one on every rank without EP
ROPE_120B = 131_072 * 64 * 4  # the one fp32 YaRN cos_sin_cache [max_position, head_dim] the plan adds beside


def test_the_change_is_at_0_27_0():
    assert VLLM_CHANGES["mxfp4_trtllm_inter_128"][0] == (0, 27, 0)
    assert not vllm_has("0.26", "mxfp4_trtllm_inter_128") and vllm_has("0.27", "mxfp4_trtllm_inter_128")


@pytest.mark.parametrize("version, sizes", [
    # (H, I per partition): gpt-oss TP1 (2880, 2880), TP2 1440, TP4 720, TP8 360; V4-Pro TP8 (7168, 384)
    ("0.10", [(3072, 3072), (3072, 1536), (3072, 768), (3072, 512), (7168, 512)]),
    ("0.26", [(3072, 3072), (3072, 1536), (3072, 768), (3072, 512), (7168, 512)]),
    # from 0.27: 2880 -> 23 x 128 = 2944, 1440 -> 1536, 720 -> 768, 360 -> 384, 384 kept
    ("0.27", [(3072, 2944), (3072, 1536), (3072, 768), (3072, 384), (7168, 384)]),
    ("0.33", [(3072, 2944), (3072, 1536), (3072, 768), (3072, 384), (7168, 384)]),
])
def test_trtllm_sizes_by_release(version, sizes):
    shapes = [(2880, 2880), (2880, 1440), (2880, 720), (2880, 360), (7168, 384)]
    assert [mxfp4_padded_sizes("trtllm", h, i, version) for h, i in shapes] == sizes


def test_the_other_backends_do_not_move():
    # Marlin (128, 256) and Triton (I to 64, H kept) are the same in every release read
    for version in ("0.10", "0.26", "0.27", "0.33"):
        assert mxfp4_padded_sizes("marlin", 2880, 360, version) == (3072, 384)
        assert mxfp4_padded_sizes("triton", 2880, 360, version) == (2880, 384)
        assert mxfp4_padded_sizes("checkpoint", 2880, 360, version) == (2880, 360)


def test_gpt_oss_expert_bytes_trtllm():
    # TP1, 0.26 (3072, 3072): 1.5 x 3072 x 3072 = 14,155,776 + 2 x 3072 x 96 + 3072 x 96 = 884,736 + 9,216 x 4 =
    # 36,864 -> 15,077,376; 0.33 (3072, 2944): 13,565,952 + 565,248 + 282,624 + 8,960 x 4 = 35,840 -> 14,449,664
    assert mxfp4_expert_bytes(2880, 2880, True, "trtllm", vllm_version="0.26") == 15_077_376
    assert mxfp4_expert_bytes(2880, 2880, True, "trtllm", vllm_version="0.33") == 14_449_664
    # TP8, 0.26 (3072, 512): 2,359,296 + 98,304 + 49,152 + 4,096 x 4 = 2,523,136; 0.33 (3072, 384): 1,769,472 +
    # 73,728 + 36,864 + 3,840 x 4 = 1,895,424
    assert mxfp4_expert_bytes(2880, 360, True, "trtllm", vllm_version="0.26") == 2_523_136
    assert mxfp4_expert_bytes(2880, 360, True, "trtllm", vllm_version="0.33") == 1_895_424
    # checkpoint: TP1 12,441,600 + 518,400 + 259,200 + 17,280 = 13,236,480; TP8 1,555,200 + 64,800 + 2880 x 12 =
    # 34,560 + 3,600 x 2 = 7,200 -> 1,661,760
    assert mxfp4_expert_bytes(2880, 2880, True) == 13_236_480
    assert mxfp4_expert_bytes(2880, 360, True) == 1_661_760


@pytest.mark.parametrize("tp, extra_026, extra_033", [
    # TP1: (15,077,376 - 13,236,480) = 1,840,896 x 4,608 = 8,482,848,768; (14,449,664 - 13,236,480) = 1,213,184 x
    # 4,608 = 5,590,351,872 (2.69 GiB less)
    (1, 8_482_848_768, 5_590_351_872),
    # TP2, I 1440 -> 1536 in both: 7,544,832 (7,077,888 + 294,912 + 147,456 + 24,576) - 6,621,120 (6,220,800 +
    # 259,200 + 129,600 + 11,520) = 923,712 x 4,608
    (2, 4_256_464_896, 4_256_464_896),
    # TP4, I 720 -> 768 in both: 3,778,560 (3,538,944 + 147,456 + 73,728 + 18,432) - 3,314,880 (3,110,400 + 129,600
    # + 2880 x 23 = 66,240 + 8,640) = 463,680 x 4,608
    (4, 2_136_637_440, 2_136_637_440),
    # TP8: (2,523,136 - 1,661,760) = 861,376 x 4,608; (1,895,424 - 1,661,760) = 233,664 x 4,608
    (8, 3_969_220_608, 1_076_723_712),
])
def test_gpt_oss_120b_b200_rank_weights(tp, extra_026, extra_033):
    spec, layout = load_preset("gpt-oss-120b"), Layout(tp=tp)
    checkpoint = rank_weight_bytes(spec, layout)
    for version, extra in (("0.26", extra_026), ("0.27", extra_033), ("0.33", extra_033)):
        assert vllm_mxfp4_extra_bytes(spec, layout, 0, None, "sm100", version) == extra
        loaded = plan(spec, B200, EngineConfig(vllm_version=version), layout).ranks[0].weights_bytes
        assert loaded == checkpoint + extra + ROPE_120B  # TP1 at 0.33: 70,872,722,048 B (66.01 GiB; 68.70 at 0.26)


def test_gpt_oss_120b_tp1_checkpoint():
    # 65,248,815,744 B at TP1 (tests/test_vllm_layouts.py prices it), so 0.33 loads 65,248,815,744 + 5,590,351,872
    # + 33,554,432 = 70,872,722,048 B
    assert rank_weight_bytes(load_preset("gpt-oss-120b"), Layout(tp=1)) == 65_248_815_744


def test_deepseek_v4_b200_tp8():
    pro, flash = load_preset("deepseek-v4-pro"), load_preset("deepseek-v4-flash")
    tp8 = Layout(tp=8)
    # Pro: I 3072 / 8 = 384 -> 512 in 0.20 - 0.26: 1,462,272 B an expert (tests/test_dsv4_weights.py) x 384 x 61;
    # 384 = 3 x 128 kept from 0.27
    assert dsv4_mxfp4_extra_bytes(pro, tp8, 0, "sm100", "0.26") == 61 * 384 * 1_462_272 == 34_252_259_328
    assert dsv4_mxfp4_extra_bytes(pro, tp8, 0, "sm100", "0.27") == 0
    assert dsv4_mxfp4_extra_bytes(pro, tp8, 0, "sm100", "0.33") == 0
    # Flash: I 2048 / 8 = 256, H 4096: nothing to pad in any release
    for version in ("0.26", "0.27", "0.33"):
        assert dsv4_mxfp4_extra_bytes(flash, tp8, 0, "sm100", version) == 0
    # the whole rank: 0.26 -> 0.27 drops the padding and the _mtp_hidden_buffer (0.27+: only when speculating,
    # 8,192 x hc_mult 4 x 7168 x 2 = 469,762,048): 143,781,116,358 -> 109,059,094,982 B (133.91 -> 101.57 GiB)
    w = {v: plan(pro, B200, EngineConfig(vllm_version=v), tp8).ranks[0].weights_bytes for v in ("0.26", "0.27")}
    assert w["0.26"] - w["0.27"] == 34_252_259_328 + 8_192 * 4 * 7168 * 2


def test_v41_uses_the_same_rule():
    spec = _v41_spec()[0]
    # V4.1-Flash TP8: I 2,304 / 8 = 288 -> 384 (0.33: 128), 783,360 B an expert x 384 x 40 (tests/test_dsv4_1_vllm.py)
    assert mxfp4_padding_bytes(spec, 8) == mxfp4_override_padding_bytes(spec, 8, False, "trtllm", "0.33") \
        == mxfp4_override_padding_bytes(spec, 8, False, "marlin", "0.33") == 12_032_409_600


def test_b200_plans_show_the_trtllm_padding_as_a_routed_term():
    # the padding is a budget row on SM 10.x as on Hopper ("MXFP4 MoE layout: ..."), so decode_bound scales it with
    # the experts a step reads instead of reading it whole every step: gpt-oss-120b TP1 at 0.33, 5,590,351,872 B
    from kvplan.plan import decode_weight_parts

    p = plan(load_preset("gpt-oss-120b"), B200, EngineConfig(vllm_version="0.33"), Layout(tp=1))
    term = next(t for t in p.ranks[0].terms if t.name == "MXFP4 MoE layout: FlashInfer TRTLLM (in weights)")
    assert term.bytes == 5_590_351_872 and not term.applied
    assert "I per partition to 128, H to 256" in term.source
    assert "mxfp4_round_up_hidden_size_and_intermediate_size" in term.source
    assert decode_weight_parts(p.ranks[0]) == (5_590_351_872, 0)
    old = plan(load_preset("gpt-oss-120b"), B200, EngineConfig(vllm_version="0.26"), Layout(tp=1))
    assert "I per partition to 256, H to 256" in next(t.source for t in old.ranks[0].terms
                                                      if t.name.startswith("MXFP4 MoE layout"))
    # DeepSeek-V4-Pro TP8 at 0.33: nothing padded, no row
    pro = plan(load_preset("deepseek-v4-pro"), B200, EngineConfig(vllm_version="0.33"), Layout(tp=8))
    assert not any(t.name.startswith("MXFP4 MoE layout") for t in pro.ranks[0].terms)
