"""DeepSeek-V4.1-Flash on vLLM 0.33 - 0.34: what one rank loads (kvplan.vllm_dsv41.rank_load_bytes), the pool bound
it leaves, and the Model page's KV row (kvplan.web.views.dsv41_kv_row). Read from the vllm 0.33.0 / 0.34.0 PyPI
wheels (2026-12-03): models/deepseek_v41/{nvidia/model.py, common/engram.py, common/rope.py, quant_config.py},
model_executor/layers/fused_moe/oracle/mxfp4.py (select_deepseek_v4_mxfp4_moe_backend,
mxfp4_round_up_hidden_size_and_intermediate_size), quantization/utils/humming/priority.py,
rotary_embedding/deepseek_scaling_rope.py. Plans stay refused (tests/test_dsv4_1.py): the profile run's activation
peak is not modelled.

Flag set throughout: --tensor-parallel-size 8, --max-num-batched-tokens 8192, PP 1, DP 1, no speculative decoding,
--kv-cache-dtype auto (fp8_ds_mla), --block-size 256 (the default), --max-model-len 1,048,576,
--gpu-memory-utilization 0.9; the release's quantization_config (fp8 32 x 32 blocks, MXFP4 experts).
"""

import math

import pytest

from kvplan import parse_config
from kvplan.errors import ConfigError, PlanInputError
from kvplan.gpus import get_gpu
from kvplan.params import count_params
from kvplan.spec import distinct_layers
from kvplan.vllm_dsv41 import (context_bytes_per_token, hc_fp32_extra_bytes, layer_caches, model_buffer_bytes,
                               mxfp4_padding_bytes, packed_groups, pool_capacity, rank_load_bytes)
from kvplan.weights import weight_bytes
from tests.test_dsv4_1 import RELEASE_QC, _v41

MNBT = 8192


def _spec():
    cfg = _v41(RELEASE_QC)
    return parse_config(cfg), cfg["text_config"]


def test_model_buffers_and_rotary_tables():
    spec, text = _spec()
    # topk_indices_buffer 8,192 x index_topk 512 x int32 = 16,777,216; candidate_block_buffer (candidate_source_layer_id
    # 20, candidate_topk_blocks 2,048) 8,192 x 2,048 x 4 = 67,108,864; Engram staged_rows on layers 1 and 14:
    # 8,192 x cdiv(3 orders x 8 heads, 8) = 3 columns x 256 x bf16 = 12,582,912 each; rotary: the sliding table (theta
    # 10,000, factor 1, 1,048,576 rows) and the compressed one (theta 160,000, YaRN 16 x 65,536 = 1,048,576 rows), fp32
    # x 64 wide: 2 x 268,435,456
    assert model_buffer_bytes(spec, 8, MNBT) == {"topk_indices_buffer": 16_777_216,
                                                 "candidate_block_buffer": 67_108_864,
                                                 "engram staged_rows": 2 * 12_582_912,
                                                 "rotary tables": 536_870_912}
    # TP 1: all 24 hash columns on the rank, 8,192 x 24 x 256 x 2 = 100,663,296 a layer
    assert model_buffer_bytes(spec, 1, MNBT)["engram staged_rows"] == 2 * 100_663_296
    # no candidate filtering: no candidate buffer
    flat = parse_config({**text, "candidate_topk_blocks": 0})
    assert "candidate_block_buffer" not in model_buffer_bytes(flat, 8, MNBT)
    # unscaled with one theta: both layer kinds take deepseek_yarn factor 1 over 1,048,576 rows at the same theta,
    # one get_rope instance, 1,048,576 x 64 x 4 = 268,435,456 B
    unscaled = parse_config({**text, "rope_scaling": None, "compress_rope_theta": text["rope_theta"]})
    assert model_buffer_bytes(unscaled, 8, MNBT)["rotary tables"] == 268_435_456
    with pytest.raises(ConfigError, match="deepseek_llama_scaling"):
        parse_config({**text, "rope_scaling": {**text["rope_scaling"], "attention_factor": 1.0}})
    assert "batch_buffers" not in spec.model_dump_json()  # kept out of the serialized spec (parse_golden hashes)


def test_mxfp4_padding_and_fp32_mixers():
    spec, _ = _spec()
    # TRTLLM / MARLIN round I per partition to 128 and H to 256: I 2,304 / 8 = 288 -> 384, H 5,120 kept. An expert
    # holds 1.5 I H (e2m1) + 3 I H / 32 (e8m0) = 1.59375 I H: 2,350,080 B at 288, 3,133,440 at 384; 783,360 more x 384
    # experts x 40 layers = 12,032,409,600 B (11.21 GiB) a rank
    assert mxfp4_padding_bytes(spec, 8) == 40 * 384 * 783_360 == 12_032_409_600
    assert mxfp4_padding_bytes(spec, 8, ep=True) == 0  # 48 whole experts, I 2,304 = 18 x 128
    assert mxfp4_padding_bytes(spec, 1) == 0
    # TP 4: I 576 -> 640, 1.59375 x 5,120 x 64 = 522,240 B an expert
    assert mxfp4_padding_bytes(spec, 4) == 40 * 384 * 522_240
    # the hc mixers, float32 in vLLM: 40 layers x 2 mixers x (24 x 20,480 + 24 + 3) = 39,323,760 values x 2 B more
    assert hc_fp32_extra_bytes(spec) == 39_323_760 * 2 == 78_647_520
    bf16 = parse_config(_v41())  # an unquantized checkpoint: no MXFP4 experts, nothing padded
    assert mxfp4_padding_bytes(bf16, 8) == 0


def test_rank_load_tp8_b200_and_h200():
    spec, text = _spec()
    # B200 (SM 10.x), --moe-backend auto -> FLASHINFER_TRTLLM_MXFP4_MXFP8: checkpoint 37,922,259,808 (the TP8 rank of
    # tests/test_dsv4_1.py) + 78,647,520 + 12,032,409,600 + 16,777,216 + 67,108,864 + 25,165,824 + 536,870,912
    b200 = rank_load_bytes(spec, 8, "sm100", MNBT)
    assert b200["checkpoint weights"] == 37_922_259_808
    assert sum(b200.values()) == 50_679_239_744  # 47.20 GiB
    # H200 with --moe-backend marlin: MARLIN's rule is TRTLLM's (I to 128, H to 256): the same bytes
    assert rank_load_bytes(spec, 8, "sm90", MNBT, moe_backend="marlin") == b200
    # H200, --moe-backend auto: Humming (prioritize_humming on capability 9.0; humming-kernels 0.1.19 read, so no
    # longer refused): I 288 -> 384 as TRTLLM / Marlin (w13 N 576 -> 768, w2 K 288 -> 384), H 5,120 kept (a multiple
    # of 256), + the fp32 weight_scale_2 of w13 and w2: 8 B x 384 experts x 40 layers = 122,880 B more
    h200 = rank_load_bytes(spec, 8, "sm90", MNBT)
    assert h200["mxfp4 padding"] == b200["mxfp4 padding"] + 8 * 384 * 40 == 12_032_532_480
    assert sum(h200.values()) == 50_679_239_744 + 122_880
    with pytest.raises(PlanInputError, match="DeepGEMM MXFP4 or Humming"):
        rank_load_bytes(spec, 8, "other", MNBT)
    with pytest.raises(PlanInputError, match="--moe-backend triton"):
        rank_load_bytes(spec, 8, "sm100", MNBT, moe_backend="triton")
    # --enable-expert-parallel on the B200: no padding, 50,679,239,744 - 12,032,409,600
    assert sum(rank_load_bytes(spec, 8, "sm100", MNBT, ep=True).values()) == 38_646_830_144
    # the whole decoder at TP 1 is weight_bytes (checkpoint bytes: vision tower and Engram tables apart)
    assert rank_load_bytes(spec, 1, "sm100", MNBT)["checkpoint weights"] == weight_bytes(spec).total_bytes
    assert count_params(spec).total_params == 551_880_804_464


def test_pool_upper_bound_tp8():
    # The pool vLLM sizes is requested - loaded - activation peak - non-torch - CUDA graphs; the last three are not
    # modelled for V4.1, so requested - loaded is an upper bound (every left-out term is memory taken, none given).
    spec, text = _spec()
    layers = distinct_layers(parse_config(_v41()).layers)
    loaded = 50_679_239_744
    # B200: ceil(191,501,854,310 x 0.9) = 172,351,668,879 requested - 50,679,239,744 = 121,672,429,135 B at most;
    # SM 10.x bytes per block 422,400 -> 288,050 blocks; a 1M request: cdiv(1,048,576, 256) + 2 x (cdiv(127 + 2 x
    # 8,192, 32) + 1) + 1 ring = 4,096 + 2 x 517 + 1 = 5,131 blocks -> 56.14x, int(56.139... x 1,048,576) = 58,866,169
    # tokens
    b200 = get_gpu("B200").memory_bytes
    assert math.ceil(b200 * 0.9) - loaded == 121_672_429_135
    caches = layer_caches(layers, 256, sm100=True)
    blocks, tokens, conc = pool_capacity(121_672_429_135, packed_groups(caches), caches, 1 << 20, 2 * MNBT, 128)
    assert (blocks, tokens, round(conc, 2)) == (288_050, 58_866_169, 56.14)
    # H200 (--moe-backend marlin, the same load): ceil(150,119,844,413 x 0.9) = 135,107,859,972 - 50,679,239,744 =
    # 84,428,620,228 B at most; SM 9.0 bytes per block 460,224 -> 183,451 blocks / 5,131 = 35.75x, 37,490,219 tokens
    h200 = get_gpu("H200").memory_bytes
    assert math.ceil(h200 * 0.9) - loaded == 84_428_620_228
    caches = layer_caches(layers, 256)
    blocks, tokens, conc = pool_capacity(84_428_620_228, packed_groups(caches), caches, 1 << 20, 2 * MNBT, 128)
    assert (blocks, tokens, round(conc, 2)) == (183_451, 37_490_219, 35.75)


def test_context_bytes_per_token_and_model_page_row():
    from kvplan.web.views import dsv41_kv_row

    spec, _ = _spec()
    # SM 9.0: the MLA group's 256-token page 3 x 74,880 + 149,760 + 3 x 17,280 + 33,984 = 460,224 B / 256 = 1,797.75;
    # SM 10.x: 3 x 67,584 + 135,168 + 3 x 16,896 + 33,792 = 422,400 / 256 = 1,650.0
    assert context_bytes_per_token(spec) == 1_797.75
    assert context_bytes_per_token(spec, sm100=True) == 1_650.0
    name, number, note = dsv41_kv_row(spec, "auto")
    assert number == "1,797.75 B (SM 9.0) / 1,650.00 B (SM 10.x)" and "vLLM 0.33 - 0.34" in name
    assert "sliding window" in note
    assert dsv41_kv_row(spec, "bfloat16")[1] == "—"


def test_model_page_shows_the_vllm_kv_row():
    import json

    from tests.app_util import html_tables, run_app

    at = run_app({"v": "1", "m": "llama-3.1-8b"}, "pages/model.py")
    at.text_area(key="model.paste").set_value(json.dumps(_v41(RELEASE_QC))).run()
    at.button(key="model.use_paste").click().run()
    assert not at.exception, [e.value for e in at.exception]
    derived = {list(r.values())[0]: list(r.values())[1] for r in html_tables(at)[2]}
    # the row the generic rule gave (40,960 B: every layer's window counted as full, no pages) is replaced
    assert derived["KV cache per token (vLLM 0.33 - 0.34, --kv-cache-dtype auto)"] == (
        "1,797.75 B (SM 9.0) / 1,650.00 B (SM 10.x)"), derived
    assert "KV cache per token (auto)" not in derived


# ----------------------------------------------------------------------------- the vLLM plan (kvplan.plan)

def _plan(gpu="B200", layout=None, **engine):
    from kvplan.engines import EngineConfig
    from kvplan.parallel import Layout
    from kvplan.plan import plan

    spec, _ = _spec()
    cfg = EngineConfig(engine="vllm", max_num_batched_tokens=MNBT, max_model_len=1 << 20, **engine)
    return plan(spec, get_gpu(gpu), cfg, layout or Layout(tp=8))


def test_b200_tp8_plan():
    from kvplan.vllm_dsv41 import ACTIVATION_GAP

    p = _plan()
    rank = p.ranks[0]
    terms = {t.name: t.bytes for t in rank.terms}
    # "Model loading took": the 50,679,239,744 B of rank_load_bytes + the vision tower's TP8 shard 122,582,272
    # (vLLM builds it: no --language-model-only) = 50,801,822,016 B (47.31 GiB)
    assert terms["weights"] == rank.weights_bytes == 50_679_239_744 + 122_582_272 == 50_801_822_016
    assert terms["MXFP4 expert padding (in weights)"] == 12_032_409_600
    assert terms["fp32 hc mixers (in weights)"] == 78_647_520
    assert terms["DeepSeek-V4.1 model buffers (in weights)"] == 16_777_216 + 67_108_864 + 25_165_824
    assert terms["rotary cos/sin caches (in weights)"] == 536_870_912
    # the pool: ceil(191,501,854,310 x 0.92) = 176,181,705,966 requested - 50,801,822,016 weights - the generic
    # activation peak, non-torch, V2 sampler state and CUDA-graph terms (as for DeepSeek-V4: not V4.1's own; the
    # graphs at 0.33 on a B200 are 83 capture sizes, the 1,024 datacenter-Blackwell limit from 0.28: 1,188,298,752 B)
    generic = sum(n for k, n in terms.items()
                  if k.startswith(("activation peak", "non-torch", "V2 sampler", "CUDA graphs")))
    # The activation peak is 0.33.0's V2 dummy sampler pass: 1,024 x 129,280 x 14 + 1 MiB + 8,192 x 5,120 x 2 =
    # 1,938,292,736 B + 83,886,080 held = 2,022,178,816 (621,805,568, the forward, before that pass was read:
    # 1,400,373,248 B more, the pool 121,750,875,136 -> 120,350,501,888)
    assert terms["activation peak (8192 batched tokens, 1024 sampler rows)"] == 1_938_292_736 + 83_886_080
    assert rank.kv_pool_bytes == 176_181_705_966 - 50_801_822_016 - generic == 120_350_501_888
    # 120,350,501,888 // 422,400 (SM 10.x bytes per block) = 284,920 blocks; / 5,131 a 1M request (in flight 2 x
    # 8,192) = 55.529x; int(55.52913... x 1,048,576) = 58,226,519 tokens (288,235 / 56.18x / 58,903,976 before)
    assert (p.block_size, rank.bytes_per_block, p.num_blocks) == (256, 422_400, 284_920)
    assert p.blocks_per_request == 5_131 and round(p.max_concurrency, 2) == 55.53
    assert p.kv_cache_tokens == 58_226_519 and p.fits
    assert rank.kv_bytes_per_token == 1_650  # the MLA group's 422,400 B over 256 tokens
    kinds = sorted((g.kind, g.layers, g.page_bytes) for g in p.kv_groups)
    assert kinds == [("compressor_ring", 3, 98_304), ("mla", 8, 422_400), ("sliding_attention", 20, 337_920),
                     ("sliding_attention", 20, 337_920)]
    # the one unsourced term is said, with the direction of the error
    assert ACTIVATION_GAP in p.warnings and "upper limit" in ACTIVATION_GAP
    assert "GPU KV cache size: 58,226,519 tokens" in " ".join(p.engine_log)
    assert p.decode is None  # plan.V41_NO_DECODE: the consumers' top-k reads of their source's cache are not modelled


def test_picker_ranks_b200_layouts_without_a_tokens_figure():
    from kvplan.engines import EngineConfig
    from kvplan.picker import pick_gpus

    spec, _ = _spec()
    picked = pick_gpus(spec, 1 << 20, 8, EngineConfig(engine="vllm", max_num_batched_tokens=MNBT),
                       gpus=[get_gpu("B200"), get_gpu("H200")])
    # Hopper is planned since Humming's layout was read (it was refused with the Humming reason before)
    assert picked.options and {o.gpu for o in picked.options} == {"B200", "H200"}
    assert all(o.tokens_per_s == 0.0 and o.cost_per_million_tokens is None for o in picked.options)
    assert not any("Humming" in r.reason for r in picked.rejected)


def test_b200_tp8_language_model_only_and_ep():
    from kvplan.parallel import Layout

    # --language-model-only drops the tower (122,582,272 B) and the encoder's profile; --enable-expert-parallel drops
    # the padding (48 whole experts a rank, I 2,304 = 18 x 128): 50,679,239,744 - 12,032,409,600 = 38,646,830,144
    p = _plan(layout=Layout(tp=8, ep=True), language_model_only=True)
    assert p.ranks[0].weights_bytes == 38_646_830_144
    assert "MXFP4 expert padding (in weights)" not in {t.name for t in p.ranks[0].terms}
    assert p.num_blocks > _plan().num_blocks  # 11.3 GiB more pool


@pytest.mark.parametrize("gpu, layout, engine, field, words", [
    ("RTX PRO 6000", None, {}, "gpu", "SM 10.x"),  # Hopper (Humming) is planned: test_rank_load_tp8_b200_and_h200
    ("B200", None, {"vllm_version": "0.30"}, "vllm_version", "0.33.0 - 0.34.0"),
    ("B200", None, {"speculative_method": "mtp", "num_speculative_tokens": 1}, "speculative_method", "DSpark"),
    ("B200", "pp2", {}, "pipeline_parallel_size", "PP and DP"),
    ("B200", None, {"weight_format": "bf16"}, "weight_format", "release's format"),
])
def test_what_stays_refused(gpu, layout, engine, field, words):
    from kvplan.parallel import Layout

    with pytest.raises(PlanInputError) as info:
        _plan(gpu, Layout(tp=4, pp=2) if layout == "pp2" else None, **engine)
    assert info.value.field == field and words in str(info.value)


def test_b200_bfloat16_kv_is_refused():
    with pytest.raises(PlanInputError, match="packed fp8_ds_mla"):
        _plan(kv_cache_dtype="bfloat16")


@pytest.mark.parametrize("page", ["pages/budget.py", "pages/paging.py", "pages/parallelism.py", "pages/gpus.py"])
def test_pages_show_the_b200_plan_without_traceback(page):
    import json

    from tests.app_util import plain, run_app

    at = run_app({"v": "1", "m": "llama-3.1-8b", "g": "B200", "tp": "8"}, "pages/model.py")
    at.text_area(key="model.paste").set_value(json.dumps(_v41(RELEASE_QC))).run()
    at.button(key="model.use_paste").click().run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    said = plain(" ".join(str(w.value) for w in (*at.warning, *at.error, *at.markdown, *at.info)))
    if page == "pages/budget.py":
        assert "upper limit" in said, said[:3000]
