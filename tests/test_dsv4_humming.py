"""DeepSeek-V4's MXFP4 routed experts on Hopper take vLLM's Humming MoE backend from 0.32.0 (kvplan profiles "0.32" and
"0.33", 0.32.0 - 0.33.x; VLLM_CHANGES "mxfp4_humming_hopper"), Marlin before (profile "0.30", 0.30.0 - 0.31.0).

Read 2026-12-03 in the vllm 0.30.0 - 0.34.0 wheels (pip download vllm==X --no-deps): fused_moe/oracle/mxfp4.py
_get_priority_backends lists [FLASHINFER_TRTLLM_MXFP4_MXFP8, DEEPGEMM_MXFP4, MARLIN, BATCHED_MARLIN] in 0.30.0 /
0.31.0 (MARLIN on Hopper); 0.32.0 - 0.34.0 append HUMMING and return the list through
quantization/utils/humming/priority.py prioritize_humming, which moves HUMMING ahead of MARLIN on compute capability
9.0. Humming's layout (humming-kernels 0.1.17 / 0.1.19, the versions the 0.32.0
and 0.33.0 / 0.34.0 wheels pin): w13 [2I, H] and w2 [H, I] padded to N 256, K 128, values and e8m0 scales at the same
bytes, + a float32 weight_scale_2 per expert and sublayer (FP8 activations, 0.33.0+): kvplan.vllm_layouts, the comment
at HUMMING_PAD_N. Its workspace: kvplan.plan.vllm_humming_moe_workspace_bytes.

Shapes: V4-Flash H 4,096, moe_intermediate 2,048 (256 a rank at TP 8), 256 experts top-6, 43 MoE layers; V4-Pro H
7,168, moe_intermediate 3,072 (384 at TP 8), 384 experts top-6, 61 MoE layers. Both are multiples of Humming's
padding at TP 8, so only weight_scale_2 is added: 8 B an expert.
"""

from kvplan.engines import EngineConfig, vllm_has
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import (
    mxfp4_override_moe_backend, plan, vllm_humming_moe_workspace_bytes, vllm_marlin_moe_workspace_bytes,
    vllm_moe_workspace_bytes)
from kvplan.presets import load_preset
from kvplan.vllm_layouts import (
    dsv4_mxfp4_extra_bytes, dsv4_mxfp4_moe_backend, dsv4_mxfp4_typed_moe_backend, mxfp4_expert_bytes)
from tests.test_engine_logs_2026c import _fixture

MNBT = 8192  # the H200's default max_num_batched_tokens in these plans ("8192 batched tokens")


def _plan(name: str, gpu: str, version: str):
    return plan(_fixture(name), get_gpu(gpu), EngineConfig(engine="vllm", vllm_version=version), Layout(tp=8))


def _terms(p) -> dict[str, int]:
    return {t.name: t.bytes for t in p.ranks[0].terms}


def test_backend_by_release_and_gpu():
    assert vllm_has("0.33", "mxfp4_humming_hopper") and not vllm_has("0.30", "mxfp4_humming_hopper")
    assert dsv4_mxfp4_moe_backend("sm90", "0.33") == "humming"
    assert dsv4_mxfp4_moe_backend("sm90", "0.30") == "marlin"
    assert dsv4_mxfp4_moe_backend("sm100", "0.33") == dsv4_mxfp4_moe_backend("sm100", "0.30") == "trtllm"
    assert dsv4_mxfp4_moe_backend("other", "0.33") == "marlin"


def test_one_typed_backend_rule_for_the_plan_and_v41():
    """--moe-backend auto -> the priority list's pick (sm90 0.33: Humming, 0.30: Marlin; sm100: TRTLLM); a typed name
    is what the DeepSeek-V4 selector tries first, so it is kept. The plan's held-workspace backend and V4.1's padding
    backend ask the same function: V4.1-Flash (H 5,120, I 2,304) TP 8 on an H200 at 0.33: --moe-backend marlin ->
    Marlin, I 288 -> 384 (H 5,120 = 20 x 256 kept), 1.59375 x 5,120 x 96 = 783,360 B an expert x 384 x 40 =
    12,032,409,600 B; auto -> Humming, the same I -> 384 plus its fp32 weight_scale_2, 8 B x 384 experts x 40 layers =
    122,880 B more."""
    from kvplan import parse_config, vllm_dsv41
    from tests.test_dsv4_1 import RELEASE_QC, _v41

    assert dsv4_mxfp4_typed_moe_backend("auto", "sm90", "0.33") == "humming"
    assert dsv4_mxfp4_typed_moe_backend("auto", "sm90", "0.30") == "marlin"
    assert dsv4_mxfp4_typed_moe_backend("auto", "sm100", "0.30") == "trtllm"
    assert dsv4_mxfp4_typed_moe_backend("marlin", "sm100", "0.33") == "marlin"
    flash = parse_config(_v41(RELEASE_QC))
    auto = vllm_dsv41.rank_load_bytes(flash, 8, "sm90", MNBT)["mxfp4 padding"]
    marlin = vllm_dsv41.rank_load_bytes(flash, 8, "sm90", MNBT, moe_backend="marlin")["mxfp4 padding"]
    assert marlin == 783_360 * 384 * 40 == 12_032_409_600
    assert auto - marlin == 8 * 384 * 40 == 122_880
    assert mxfp4_override_moe_backend(flash, EngineConfig(engine="vllm", vllm_version="0.33", moe_backend="marlin"),
                                      "H200", "0.33") == "marlin"


def test_humming_expert_bytes():
    # V4-Flash at TP 8: w13 [512, 4,096] + w2 [4,096, 256] = 3,145,728 values, / 2 + / 32 = 1,572,864 + 98,304,
    # + 2 x 4 B weight_scale_2 = 1,671,176 B; the checkpoint's 1,671,168
    assert mxfp4_expert_bytes(4096, 256, False, "humming") == 1_572_864 + 98_304 + 8 == 1_671_176
    assert mxfp4_expert_bytes(4096, 256, False) == 1_671_168
    # a hidden size off 256 (H 2,880, I 1,440): w13 K 2,880 -> 2,944 (128), w2 N 2,880 -> 3,072 (256), I -> 1,536:
    # (3,072 x 2,944 + 3,072 x 1,536) x 17 / 32 + 8 = 13,762,560 x 17 / 32 + 8 = 7,311,368
    assert mxfp4_expert_bytes(2880, 1440, False, "humming") == 7_311_368


def test_weight_bytes_a_rank():
    flash, pro = _fixture("deepseek-v4-flash"), _fixture("deepseek-v4-pro")
    # Humming at 0.33: 8 B x 256 experts x 43 layers = 88,064 B (Flash), 8 x 384 x 61 = 187,392 B (Pro)
    assert dsv4_mxfp4_extra_bytes(flash, Layout(tp=8), 0, "sm90", "0.33") == 8 * 256 * 43 == 88_064
    assert dsv4_mxfp4_extra_bytes(pro, Layout(tp=8), 0, "sm90", "0.33") == 8 * 384 * 61 == 187_392
    # Marlin at 0.30 and TRTLLM on B200: nothing padded at TP 8 (256 and 384 are multiples of 128)
    for spec in (flash, pro):
        assert dsv4_mxfp4_extra_bytes(spec, Layout(tp=8), 0, "sm90", "0.30") == 0
        assert dsv4_mxfp4_extra_bytes(spec, Layout(tp=8), 0, "sm100", "0.33") == 0


def test_humming_workspace():
    flash, pro = _fixture("deepseek-v4-flash"), _fixture("deepseek-v4-pro")
    auto = EngineConfig(engine="vllm")  # --moe-backend auto: the held workspace follows vLLM's MXFP4 oracle
    assert mxfp4_override_moe_backend(flash, auto, "H200", "0.33") == "humming"
    assert mxfp4_override_moe_backend(flash, auto, "H200", "0.30") == "marlin"
    assert mxfp4_override_moe_backend(flash, auto, "B200", "0.33") == "trtllm"
    # HummingIndexedExperts (TP, no EP), M 8,192, rows M x 6 = 49,152, bf16 outputs, fp8 inputs:
    # Flash: workspace1 max(8,192 x 4,096 x 2, 49,152 x 256, 8,192 x 4,096) = 67,108,864; workspace2
    # max(49,152 x 4,096 x 2, 49,152 x 512 x 2) = 402,653,184 -> 469,762,048 B (0.4375 GiB)
    assert vllm_humming_moe_workspace_bytes(flash, 8, MNBT, 2) == 67_108_864 + 402_653_184 == 469_762_048
    # Pro: 8,192 x 7,168 x 2 = 117,440,512 + 49,152 x 7,168 x 2 = 704,643,072 -> 822,083,584 B
    assert vllm_humming_moe_workspace_bytes(pro, 8, MNBT, 2) == 117_440_512 + 704_643_072 == 822_083_584
    # with EP (grouped_contiguous: quanted_gate_up_input has M x topk rows), Flash whole I 2,048:
    # workspace1 max(67,108,864, 49,152 x 2,048, 49,152 x 4,096) = 201,326,592; workspace2 max(402,653,184,
    # 49,152 x 4,096 x 2) = 402,653,184 -> 603,979,776
    assert vllm_humming_moe_workspace_bytes(flash, 8, MNBT, 2, ep=True) == 603_979_776
    # what the Hopper plans hold at 0.30: MarlinExperts' workspace (the MXFP4 oracle's Marlin, kvplan.plan.
    # mxfp4_override_moe_backend; the block-FP8 TritonExperts rule charged it before, with the same bytes, as
    # Triton's (M, topk, max(I, H)) + (M, topk, max(2I, H)) equal Marlin's shapes wherever 2I <= H):
    # (49,152 x 4,096 + 49,152 x 4,096) x 2 = 805,306,368 (Flash), (49,152 x 7,168 x 2) x 2 = 1,409,286,144 (Pro)
    assert vllm_moe_workspace_bytes(flash, 8, MNBT, 2) == vllm_marlin_moe_workspace_bytes(flash, 8, MNBT, 2) \
        == 805_306_368
    assert vllm_moe_workspace_bytes(pro, 8, MNBT, 2) == vllm_marlin_moe_workspace_bytes(pro, 8, MNBT, 2) \
        == 1_409_286_144


def test_v4_flash_tp8_h200_plans_with_humming_at_0_32():
    # Humming's first line, 0.32 (0.32.0); 0.33 adds the V2 dummy sampler's second pass (test below)
    new, old = _plan("deepseek-v4-flash", "H200", "0.32"), _plan("deepseek-v4-flash", "H200", "0.30")
    n, o = new.ranks[0], old.ranks[0]
    # weights: + 88,064 B (Humming's weight_scale_2), shown as its own row; "Model loading took" still 19.39 GiB
    assert n.weights_bytes == o.weights_bytes + 88_064 == 20_814_865_118
    assert _terms(new)["MXFP4 MoE layout: Humming (in weights)"] == 88_064
    assert not any(k.startswith("MXFP4 MoE layout") for k in _terms(old))  # Marlin pads nothing at TP 8
    assert new.engine_log[0] == old.engine_log[0] == "Model loading took 19.39 GiB"
    # activation peak = max(forward without the routed experts, sampler) + held MoE workspace (plan.activation_
    # estimate: the experts' intermediates are the held buffer, which the forward's later layers sit on). The
    # sampler part at TP 8 is the LM head's all-gather of 1,024 rows (kvplan.engines.vllm_v2_dummy_sampler_bytes):
    # 1,024 x (129,280 / 8 + 2 x 129,280) x 2 = 562,626,560 + the hidden states 8,192 x 4,096 x 2 = 67,108,864 ->
    # 629,735,424, above the forward part 8192 x (4 x 4096 + 40,960 / 8 q/k/v + 4096 / 8 shared expert) x 2 =
    # 360,710,144 in both: 629,735,424 + 469,762,048 = 1,099,497,472 (Humming) against 629,735,424 + 805,306,368 =
    # 1,435,041,792 (were 830,472,192 / 1,166,016,512 on the forward, before the gather was read)
    act = "activation peak (8192 batched tokens, 1024 sampler rows)"
    assert _terms(new)[act] == 1024 * (129_280 // 8 + 2 * 129_280) * 2 + 8192 * 4096 * 2 + 469_762_048 \
        == 1_099_497_472
    assert _terms(old)[act] == 629_735_424 + 805_306_368 == 1_435_041_792
    # the pool: 335,544,320 B less workspace, 88,064 B more weights = 335,456,256 B more, at 1,002,240 B a block
    assert n.kv_pool_bytes == o.kv_pool_bytes + 335_456_256
    assert n.bytes_per_block == o.bytes_per_block == 1_002_240
    assert n.num_blocks == n.kv_pool_bytes // 1_002_240 == 113_188 and o.num_blocks == 112_853  # were 113,456 / 113,121
    # 0.33.0 (v2_sampler_warmup_pass): the sampler part is 1,024 x 129,280 x (2 + 12) + 1 MiB + 8,192 x 4,096 x 2 =
    # 1,921,515,520 B, above the gather's 629,735,424, so the peak is 1,921,515,520 + 469,762,048 = 2,391,277,568,
    # 1,291,780,096 B above 0.32's 1,099,497,472: 113,441,665,227 - 1,291,780,096 = 112,149,885,131 B, 111,899 blocks
    p33 = _plan("deepseek-v4-flash", "H200", "0.33")
    assert _terms(p33)[act] == 1_921_515_520 + 469_762_048 == 2_391_277_568
    assert n.kv_pool_bytes == 113_441_665_227
    assert p33.ranks[0].kv_pool_bytes == n.kv_pool_bytes - 1_291_780_096 == 112_149_885_131
    assert p33.num_blocks == 112_149_885_131 // 1_002_240 == 111_899


def test_v4_pro_tp8_h200_plans_with_humming_at_0_32():
    new, old = _plan("deepseek-v4-pro", "H200", "0.32"), _plan("deepseek-v4-pro", "H200", "0.30")
    n, o = new.ranks[0], old.ranks[0]
    assert n.weights_bytes == o.weights_bytes + 187_392 == 109_059_282_374
    assert _terms(new)["MXFP4 MoE layout: Humming (in weights)"] == 187_392
    act = "activation peak (8192 batched tokens, 1024 sampler rows)"
    # the sampler part, the LM head's all-gather 1,024 x (129,280 / 8 + 2 x 129,280) x 2 = 562,626,560 + the hidden
    # states 8,192 x 7,168 x 2 = 117,440,512 -> 680,067,072 B, is above the forward without the routed experts,
    # 8192 x (4 x 7168 + 81,920 / 8 + 6144 / 8) x 2 = 650,117,120: + 822,083,584 (Humming) = 1,502,150,656;
    # + 1,409,286,144 (Marlin, 0.30) = 2,089,353,216 (were 1,472,200,704 / 2,059,403,264 on the forward)
    assert _terms(new)[act] == 562_626_560 + 8192 * 7168 * 2 + 822_083_584 == 1_502_150_656
    assert _terms(old)[act] == 680_067_072 + 1_409_286_144 == 2_089_353_216
    # the pool: (1,409,286,144 - 822,083,584) - 187,392 = 587,015,168 B more
    assert n.kv_pool_bytes == o.kv_pool_bytes + 587_015_168
    assert n.num_blocks == n.kv_pool_bytes // n.bytes_per_block == 17_058 and o.num_blocks == 16_650  # were 17,079 / 16,670


def test_b200_unchanged():
    # SM 10.x keeps FlashInfer TRTLLM MXFP8 (first in the list; prioritize_humming changes nothing off 9.0): the same
    # weights and blocks at 0.32 as before Humming was read (main at 90bbec9: Flash 20,831,554,270 B / 151,116
    # blocks, Pro 109,092,649,414 B / 43,227 blocks), no Humming row (0.33's V2 sampler pass, not Humming, moves
    # the blocks there: test above)
    for name, weights, blocks in (("deepseek-v4-flash", 20_831_554_270, 151_116),
                                  ("deepseek-v4-pro", 109_092_649_414, 43_227)):
        p = _plan(name, "B200", "0.32")
        assert (p.ranks[0].weights_bytes, p.num_blocks) == (weights, blocks)
        assert not any("Humming" in k for k in _terms(p))


def test_gpt_oss_on_hopper_keeps_triton():
    # _get_priority_backends_for_gpt_oss also goes through prioritize_humming from 0.32.0, but TRITON comes before
    # MARLIN and HUMMING there, so the layout row still says Triton
    spec = load_preset("gpt-oss-120b")
    p = plan(spec, get_gpu("H200"), EngineConfig(engine="vllm", vllm_version="0.33"), Layout(tp=1))
    assert any(k.startswith("MXFP4 MoE layout: Triton") for k in _terms(p))
    # no override-MXFP4 experts: no Humming workspace
    assert mxfp4_override_moe_backend(spec, EngineConfig(engine="vllm"), "H200", "0.33") is None


def test_typed_marlin_prices_the_marlin_layout_in_the_plan():
    """A typed --moe-backend marlin is what DeepSeek-V4's selector tries first, so the plan's weights carry Marlin's
    padding, not auto's. V4-Pro TP 8 on a B200 at 0.26: auto is TRTLLM, which pads I 384 -> 512 through 0.26 (1.5 x
    7,168 x 128 + 3 x 7,168 x 128 / 32 = 1,376,256 + 86,016 = 1,462,272 B an expert x 384 x 61 = 34,252,259,328 B);
    Marlin aligns I to 128 and H to 256, both already multiples (384, 7,168 = 28 x 256): 0 B. The weights of the two
    plans differ by exactly that padding; a backend kvplan reads no layout for keeps auto's."""
    from kvplan.vllm_layouts import dsv4_mxfp4_layout_backend

    pro = _fixture("deepseek-v4-pro")
    assert dsv4_mxfp4_extra_bytes(pro, Layout(tp=8), 0, "sm100", "0.26") == 1_462_272 * 384 * 61 == 34_252_259_328
    assert dsv4_mxfp4_extra_bytes(pro, Layout(tp=8), 0, "sm100", "0.26", "marlin") == 0
    assert dsv4_mxfp4_layout_backend("deep_gemm_mega_moe", "sm100", "0.26") == "trtllm"
    assert dsv4_mxfp4_layout_backend("marlin", "sm100", "0.26") == "marlin"
    b200 = get_gpu("B200")
    auto, marlin = (plan(pro, b200, EngineConfig(engine="vllm", vllm_version="0.26", moe_backend=b), Layout(tp=8))
                    for b in ("auto", "marlin"))
    assert auto.ranks[0].weights_bytes - marlin.ranks[0].weights_bytes == 34_252_259_328


def test_a_backend_kvplan_does_not_size_is_named_in_the_plan():
    from kvplan.plan import unsized_moe_backend_note

    flash = _fixture("deepseek-v4-flash")
    note = unsized_moe_backend_note(flash, EngineConfig(engine="vllm", moe_backend="deep_gemm_mega_moe"))
    assert note.startswith("--moe-backend deep_gemm_mega_moe: kvplan does not size that MoE backend")
    assert unsized_moe_backend_note(flash, EngineConfig(engine="vllm", moe_backend="marlin")) == ""
    assert unsized_moe_backend_note(load_preset("llama-3.1-8b"), EngineConfig(engine="vllm", moe_backend="triton")) == ""
    p = plan(flash, get_gpu("B200"), EngineConfig(engine="vllm", moe_backend="deep_gemm_mega_moe"), Layout(tp=8))
    assert note in p.warnings
