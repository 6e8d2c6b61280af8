"""DeepSeek-V4's routed experts as the checkpoint ships them (config.json ``expert_dtype`` "fp4": MXFP4) and as vLLM
loads them (kvplan.quantization.with_expert_dtype, kvplan.vllm_layouts.dsv4_mxfp4_extra_bytes).

The checkpoint: DeepSeek-V4-Flash's "layers.0.ffn.experts.0.w1.weight I8 [2048, 2048]" and "w1.scale F8_E8M0 [2048,
128]" (a safetensors header listing, search index file id 56363803420): packed e2m1, two values a byte, one e8m0 scale
per 32 inputs; the attention / shared expert linears stay FP8 block 128 x 128 (``weight_scale_inv``). vLLM 0.20+
(DeepseekV4FP8Config) gives the FusedMoE Mxfp4MoEMethod: w13 u8 [E, 2I, H/2] + [E, 2I, H/32], w2 u8 [E, H, I/2] +
[E, H, I/32].
"""

import copy
import json
from pathlib import Path

import pytest

from kvplan import parse_config
from kvplan.errors import ConfigError
from kvplan.parallel import Layout, rank_weight_bytes
from kvplan.params import count_params
from kvplan.vllm_layouts import dsv4_mxfp4_extra_bytes, vllm_mxfp4_extra_bytes
from kvplan.weights import weight_bytes

FIXTURES = Path(__file__).parent / "fixtures" / "configs"

# One DeepSeek-V4-Flash routed expert (H 4096, I 2048) in MXFP4:
#   w1 = w3 [2048, 4096]: 2048 x 4096 / 2 = 4,194,304 packed + 2048 x 4096 / 32 = 262,144 e8m0 = 4,456,448
#   w2 [4096, 2048]:      4096 x 2048 / 2 = 4,194,304 packed + 4096 x 2048 / 32 = 262,144 e8m0 = 4,456,448
#   expert: 3 x 4,456,448 = 13,369,344 B
# In FP8 block 128 (what kvplan priced before): 3 x (8,388,608 + 4 x 16 x 32 = 2,048 scales) = 25,171,968 B.
FLASH_EXPERT = 3 * (2048 * 4096 // 2 + 2048 * 4096 // 32)
FLASH_EXPERT_FP8 = 3 * (2048 * 4096 + 4 * 16 * 32)


def _config(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def _spec(cfg: dict, name: str = "x"):
    return parse_config(cfg, name)


@pytest.fixture(scope="module")
def flash():
    return _spec(_config("deepseek-v4-flash"), "deepseek-v4-flash")


@pytest.fixture(scope="module")
def flash_fp8():  # the same config with expert_dtype "fp8": the experts take the quantization_config's fp8 block
    cfg = _config("deepseek-v4-flash")
    cfg["expert_dtype"] = "fp8"
    return _spec(cfg)


def test_flash_checkpoint_experts_are_mxfp4(flash, flash_fp8):
    assert FLASH_EXPERT == 13_369_344 and FLASH_EXPERT_FP8 == 25_171_968
    w = weight_bytes(flash)
    # 43 layers x 256 experts x 13,369,344 = 147,169,738,752 B (137.06 GiB; FP8 block: 258.06 GiB)
    assert w.components["experts"] == 43 * 256 * FLASH_EXPERT == 147_169_738_752
    assert weight_bytes(flash_fp8).components["experts"] == 43 * 256 * FLASH_EXPERT_FP8
    # everything but the routed experts is as before: attention and the shared expert stay FP8 block
    for cat in ("embeddings", "attention", "mlp", "router", "norms", "lm_head", "other"):
        assert w.components[cat] == weight_bytes(flash_fp8).components[cat], cat
    assert w.total_bytes == 155_623_489_710  # 144.94 GiB as shipped (parse_golden.json)
    assert flash.quantization == "fp8-block"
    # 44 overridden layers: the 43 decoder layers and the MTP layer (index 43: its routed experts are MXFP4 too, the
    # same DeepseekV4FP8Config Mxfp4MoEMethod; only the MTP weights read index 43, parallel.mtp_rank_bytes)
    # (and the MTP layer's e_proj / h_proj, FP8 block like its attention: quantization.format_overrides records them)
    assert {(o.category, o.name, o.format, len(o.layers)) for o in flash.quantization_overrides} == {
        ("experts", n, "mxfp4", 44) for n in ("gate_proj", "up_proj", "down_proj")} | {
        ("other", n, "fp8-block", 1) for n in ("e_proj", "h_proj")}
    assert any("expert_dtype 'fp4'" in a for a in flash.assumptions)
    # transformers counts parameters, not bytes: unchanged
    # as before (tests/test_family_mla.py pins it to transformers)
    assert count_params(flash).total_params == count_params(flash_fp8).total_params == 284_332_230_231


@pytest.mark.parametrize("layout", [Layout(tp=8), Layout(tp=8, ep=True)], ids=["tp8", "tp8-ep"])
def test_flash_rank_experts_tp8(flash, flash_fp8, layout):
    # EP: 256 / 8 = 32 whole experts a rank, 32 x 43 x 13,369,344 = 18,396,217,344 B.
    # No EP: all 256 experts' I / 8 = 256 slices: w1 = w3 [256, 4096] 524,288 + 32,768, w2 [4096, 256] 524,288 +
    # 32,768: 1,671,168 a slice x 256 x 43 = the same 18,396,217,344 B (17.13 GiB); in FP8 block a slice is
    # 3 x (1,048,576 + 4 x 2 x 32) = 3,146,496, so a rank holds 43 x 256 x 1,475,328 = 16,240,410,624 B less.
    assert 32 * 43 * FLASH_EXPERT == 256 * 43 * 1_671_168 == 18_396_217_344
    saved = rank_weight_bytes(flash_fp8, layout) - rank_weight_bytes(flash, layout)
    assert saved == 43 * 256 * (3_146_496 - 1_671_168) == 43 * 32 * (FLASH_EXPERT_FP8 - FLASH_EXPERT) == 16_240_410_624
    assert rank_weight_bytes(flash, layout) == 20_261_128_926  # 18.87 GiB a rank (was 33.99)
    # vLLM's MXFP4 MoE pads nothing here: TRTLLM (B200) rounds I and H to 256 (0.27+: I to 128), Marlin (H200) I to
    # 128, H to 256
    for arch in ("sm100", "sm90"):
        assert vllm_mxfp4_extra_bytes(flash, layout, 0, None, arch, "0.25") == 0


def test_flash_tp1(flash):
    assert rank_weight_bytes(flash, Layout(tp=1)) == weight_bytes(flash).total_bytes == 155_623_489_710


def test_pro_trtllm_pads_the_intermediate_without_ep():
    pro = _spec(_config("deepseek-v4-pro"))
    # H 7168, I 3072 / 8 = 384 -> round_up(384, 256) = 512 on sm100 (FLASHINFER_TRTLLM_MXFP4_MXFP8) in vLLM 0.20.0 -
    # 0.26.0 (fused_moe/oracle/mxfp4.py mxfp4_round_up_hidden_size_and_intermediate_size, TRTLLM_BACKENDS branch):
    #   checkpoint slice: 2 x 384 x 3,584 + 7168 x 192 = 4,128,768 packed + 2 x 384 x 224 + 7168 x 12 = 258,048
    #   e8m0 = 4,386,816; padded: 2 x 512 x 3,584 + 7168 x 256 = 5,505,024 + 2 x 512 x 224 + 7168 x 16 = 344,064
    #   = 5,849,088; +1,462,272 an expert x 384 x 61 layers = 34,252,259,328 B (31.90 GiB) a rank
    assert dsv4_mxfp4_extra_bytes(pro, Layout(tp=8), 0, "sm100", "0.26") == 61 * 384 * (5_849_088 - 4_386_816) \
        == 34_252_259_328
    # from 0.27.0 the same branch rounds I to 128 (VLLM_CHANGES mxfp4_trtllm_inter_128): 384 = 3 x 128 is kept
    for version in ("0.27", "0.33"):
        assert dsv4_mxfp4_extra_bytes(pro, Layout(tp=8), 0, "sm100", version) == 0
    assert dsv4_mxfp4_extra_bytes(pro, Layout(tp=8, ep=True), 0, "sm100", "0.26") == 0  # 48 whole experts, I 3072
    assert dsv4_mxfp4_extra_bytes(pro, Layout(tp=8), 0, "sm90", "0.26") == 0  # Marlin: 384 % 128 == 0
    # the checkpoint: 61 x 384 experts of H 7168, I 3072: 3 x (3072 x 7168 / 2 + 3072 x 224) = 35,094,528 B each
    assert weight_bytes(pro).components["experts"] == 61 * 384 * 3 * (3072 * 7168 // 2 + 3072 * 224)


def test_expert_dtype_only_over_fp8_and_refused_when_unknown():
    nv = _config("deepseek-v4-flash-nvfp4-fp8")  # compressed-tensors: its own groups say NVFP4, expert_dtype ignored
    without = copy.deepcopy(nv)
    del without["expert_dtype"]
    assert weight_bytes(_spec(nv)).total_bytes == weight_bytes(_spec(without)).total_bytes == 164_111_114_934
    bad = _config("deepseek-v4-flash")
    bad["expert_dtype"] = "int4"
    with pytest.raises(ConfigError) as e:
        _spec(bad)
    assert e.value.field == "expert_dtype" and "fp4" in str(e.value)


def test_expert_dtype_absent_is_fp4_as_vllm_defaults(flash):
    cfg = _config("deepseek-v4-flash")
    del cfg["expert_dtype"]  # vLLM's DeepseekV4FP8Config: getattr(hf_config, "expert_dtype", "fp4")
    spec = _spec(cfg)
    assert weight_bytes(spec).total_bytes == weight_bytes(flash).total_bytes == 155_623_489_710
    assert any(a.startswith("expert_dtype absent") for a in spec.assumptions)
