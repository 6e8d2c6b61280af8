"""DeepSeek-V4.1 (DeepseekV41ForCausalLM, model_type "deepseek_v41" wrapping "deepseek_v41_text"): built natively by
kvplan.families.deepseek_v41 as a diff from DeepSeek-V4, exact to the parameter against vLLM's model files (the
vllm 0.33.0 / 0.34.0 PyPI wheels, models/deepseek_v41, read 2026-12-02; transformers 5.23 has no V4.1 class, so the
counts are derived tensor by tensor below). vLLM plans are made on SM 10.x GPUs (tests/test_dsv4_1_vllm.py) and
refused elsewhere; SGLang and custom plans stay refused (kvplan.families.deepseek_v41.PLAN_REFUSAL); a V4.1 decoder
labelled deepseek_v4 is still refused by name (families/deepseek_v4.deepseek_v41_refusal).

Fixture: tests/fixtures/configs/deepseek-v4.1-flash.json, verbatim from github sfxnz/TensorFold
tests/fixtures/deepseek_v41/config.json @ b044d500bbe223f42a507f6d6f2963ff0bf13a70 (an EXL3 requantization; its
text_config / vision_config are the release's; provenance in SOURCES.json). Its quantization_config is EXL3, which
vLLM does not load; RELEASE_QC is the release's own, as soumyarupsarkar/deepseek-v4.1-flash-2X-GB10-TensorFold
tests/fixtures/deepseek_v41/config.json @ 4890ef930d0d373c65a3a0682f9cd55c0fcb9811 keeps it
(quantization_config.original_quantization_config, read 2026-12-02).

Public start-up log found: one SGLang DeepSeek-V4.1-Flash log (search-index file 69412325477, 2026-09-11, a dev image
on 3 x GB10 with TP padding of the heads 64 -> 96 and DSpark speculative decoding): "DSV4 SWA sizing: mode=cap,
swa_tokens=13312, request_cap+headroom=13312, prefix_tails=16", "DSV4 memory calculation: bytes_per_full_token=1670.75,
available_bytes=8.84 GB, c128_state_fixed=0.00 GB, swa_fixed=0.30 GB, full_token=5491200". Its SWA cap is pinned below;
the pool line is not (SGLang's V4.1 pools are not modelled, and that run drafts with a patched model). No public vLLM
V4.1 start-up log with its KV-cache lines was found.
"""

import json
from pathlib import Path

import pytest

from kvplan import ConfigError, parse_config
from kvplan.cli import main
from kvplan.engines import EngineConfig
from kvplan.errors import PlanInputError
from kvplan.families.deepseek_v4 import deepseek_v41_refusal
from kvplan.families.deepseek_v41 import engram_head_rows, engram_row_bytes, engram_rows_per_rank
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout, rank_weight_bytes, tower_rank_bytes
from kvplan.params import count_params
from kvplan.plan import plan
from kvplan.presets import load_preset, preset_config
from kvplan.weights import weight_bytes

FIXTURE = Path(__file__).parent / "fixtures" / "configs" / "deepseek-v4.1-flash.json"
RELEASE_QC = {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [32, 32],
              "scale_fmt": "ue8m0", "expert_dtype": "fp4"}


def _v41(qc=None) -> dict:
    cfg = json.loads(FIXTURE.read_text())
    if qc is None:
        cfg.pop("quantization_config")
    else:
        cfg["quantization_config"] = qc
    return cfg


def test_fixture_is_the_release_layout():
    # 43 compress_ratios entries = 40 layers + 3 draft layers (num_nextn_predict_layers 3); 0 x 5 (layers 0, 1
    # sliding + the 3 draft entries), 2 x 18 (layers 2 - 19), 1 x 20 (layers 20 - 39). Compressed KV lives on the 4 kv
    # sources only: layers 2 - 7 read layer 2's, 8 - 13 layer 8's, 14 - 19 layer 14's, 20 - 39 layer 20's.
    text = _v41()["text_config"]
    ratios = text["compress_ratios"]
    assert (len(ratios), text["num_hidden_layers"], text["num_nextn_predict_layers"]) == (43, 40, 3)
    assert [ratios.count(r) for r in (0, 1, 2, 4, 128)] == [5, 20, 18, 0, 0]
    compressed = [i for i, r in enumerate(ratios[:40]) if r]
    sources = {i: max(s for s in text["kv_source_layer_ids"] if s <= i) for i in compressed}
    assert len(compressed) == 38 and sorted(set(sources.values())) == [2, 8, 14, 20]
    assert [sum(1 for s in sources.values() if s == k) for k in (2, 8, 14, 20)] == [6, 6, 6, 20]


# h 5,120, 64 heads x d 512, q_lora 1,280, o_lora 1,024, 8 groups, index 32 heads x 128, hc 4, 384 experts of 2,304,
# vocab 129,280, 40 layers. Per layer, as vLLM 0.34's DeepseekV4Attention / DeepseekV4MoE / DeepseekV4DecoderLayer:
ATTN = (5120 * 1280 + 1280          # fused_wqa_wkv's wq_a 6,553,600 + q_norm
        + 1280 * 64 * 512           # wq_b 41,943,040
        + 5120 * 512 + 512          # fused_wqa_wkv's wkv 2,621,440 + kv_norm
        + 4096 * 8192               # wo_a [8 x 1,024, 64 x 512 / 8] 33,554,432
        + 8192 * 5120               # wo_b 41,943,040
        + 64)                       # attn_sink = 126,617,408
COMP2, COMP1 = 2 * 5120 * 512 + 512, 5120 * 512 + 512  # compressor fused_wkv_wgate [wkv, wgate] / [wkv] + norm
INDEXER = 1280 * 32 * 128 + 5120 * 32          # indexer wq_b 5,242,880 + weights_proj 163,840 (8 index sources)
INDEX_K = 512 * 128 + 128                      # wk + k_norm, on the 4 kv sources that own the keys
EXPERT = 3 * 5120 * 2304                       # w1, w3 [2,304, 5,120], w2 = 35,389,440 (routed and shared alike)
HC = 2 * ((2 + 4) * 4 * 4 * 5120 + 24 + 3)     # hc_{attn,ffn}_{fn [24, 20,480], base [24], scale [3]} = 983,094
ENGRAM = 24 * 256 * 5120 * 5 + 2 * 4 * 5120    # wkv [5,120 x 5, 3 x 8 x 256] 157,286,400 + q_weight, k_weight


def test_parameters_exact():
    p = count_params(parse_config(_v41()))
    attention = 40 * ATTN + 3 * COMP2 + COMP1 + 8 * INDEXER + 4 * INDEX_K
    assert attention == 5_126_564_864
    assert p.components == {
        "embeddings": 129280 * 5120,                    # 661,913,600
        "attention": attention,
        "mlp": 40 * EXPERT + 2 * (24 * 256 * 25600),    # shared experts 1,415,577,600 + the 2 Engram wkv
        "experts": 40 * 384 * EXPERT,                   # 543,581,798,400
        "router": 40 * 384 * 5120,                      # 78,643,200
        "norms": 40 * 2 * 5120 + 5120,                  # attn_norm, ffn_norm; the final norm (no hc_head in V4.1)
        "lm_head": 129280 * 5120,
        "other": 40 * HC + 2 * 2 * 4 * 5120,            # 39,323,760 + the Engram q_weight / k_weight 81,920
    }
    assert p.total_params == 551_880_804_464
    assert p.active_params == p.total_params - 40 * (384 - 6) * EXPERT  # 16,792,471,664
    assert p.mtp_params == 0  # the 3 DSpark draft layers are listed as skipped, not built


def test_vision_tower_and_language_model_only():
    spec = parse_config(_v41())
    # patch_embed.proj 588 x 1,024 + 1,024; 32 blocks of norm1 + norm2 2,048, wqkv 1,024 x 3,072 + 3,072, wo 1,024^2 +
    # 1,024, w1 1,024 x 5,632, w2 2,816 x 1,024 (12,851,200); the ViT norm 1,024; aligner w1 9,216 x 5,120 + 5,120,
    # w2 5,120^2 + 5,120; image_start / end / newline 3 x 5,120
    tower = 603_136 + 32 * 12_851_200 + 1_024 + 47_191_040 + 26_219_520 + 15_360
    assert count_params(spec).tower_params == tower == 485_268_480
    # under TP8 (bf16): replicated patch_embed 1,206,272 B, norms 133,120, image_* 30,720; wqkv, w1 and aligner w1
    # (weight and bias) / 8: 25,190,400 + 46,137,344 + 11,797,760; wo, w2, aligner w2 weight / 8, bias whole: 8,454,144
    # + 23,068,672 + 6,563,840
    assert tower_rank_bytes(spec, 8) == 122_582_272
    assert tower_rank_bytes(spec, 1) == 2 * tower
    # --language-model-only: vLLM stubs the tower out (_mark_tower_model, the image limit 0); kvplan's plans
    # count it only when the engine loads it (Tower.modalities "image")
    assert spec.towers[0].modalities == ("image",)


def test_engram_tables_are_primes_held_on_the_host():
    text = _v41()["text_config"]
    rows = engram_head_rows(text)
    # EngramLayout: 3 n-gram orders x 8 heads per layer, each the next unused prime above 15,999,999
    assert rows[0][:3] == [16000057, 16000079, 16000081] and rows[1][-1] == 16000889
    assert [sum(r) for r in rows] == text["engram_num_embeddings"] == [384006168, 384016682]
    # TP8: cdiv(24, 8) = 3 heads a rank; rank 0 of layer 1: 16,000,057 + 16,000,079 + 16,000,081 = 48,000,217 rows
    assert engram_rows_per_rank(rows[0], 8)[0] == 48_000_217
    assert sum(engram_rows_per_rank(rows[0], 8)) == 384_006_168
    assert engram_row_bytes(256) == 264  # 256 fp8 + 8 UE8M0 scales
    with pytest.raises(PlanInputError, match="leaves ranks without hash heads"):
        engram_rows_per_rank(rows[0], 16)  # 15 x cdiv(24, 16) = 30 >= 24
    skipped = " ".join(parse_config(_v41()).skipped)
    assert "768,022,850 rows x 256 = 196,613,849,600 values, 202,758,032,400 B" in skipped and "host" in skipped


def test_weights_release_format_and_tp8_rank():
    spec = parse_config(_v41(RELEASE_QC))
    assert spec.quantization == "fp8-block-32x32"
    # routed experts MXFP4 (expert_dtype "fp4"): 543,581,798,400 x (1/2 + 1/32) B
    assert weight_bytes(spec).components["experts"] == 288_777_830_400
    # One TP8 rank: vocab rows 129,280 / 8 = 16,160 x 5,120 x 2 B, embed and lm_head: 2 x 165,478,400
    # experts: w1, w3 [288, 5,120] and w2 [5,120, 288] in MXFP4 (737,280 + 46,080 B each) x 384 x 40 = 36,097,228,800
    # attention a layer (fp8 32 x 32 blocks, fp32 scales): wq_a 6,579,200 + wkv 2,631,680 (replicated), wq_b
    # [4,096, 1,280] 5,263,360, wo_a [1,024, 4,096] 4,210,688, wo_b [5,120, 1,024] 5,263,360, norms 3,584, sinks 16 =
    # 23,951,888 x 40 = 958,075,520; compressors bf16 36,704,256; indexers (wq_b fp8 5,263,360 + weights_proj bf16
    # 327,680) x 8 = 44,728,320 + wk / k_norm 131,328 x 4; shared expert (gate / up [288, 5,120] 1,480,320 each, down
    # 1,480,320) x 40 = 177,638,400; Engram wkv [3,200, 6,144] 19,737,600 x 2; router bf16 3,932,160 x 40; norms
    # 829,440; hc mixers 1,966,188 x 40 (at 2 B, as for V4: vLLM holds them in fp32, 78,647,520 B more, an
    # assumption the spec states) + Engram q / k 163,840
    rest = (958_075_520 + 36_704_256 + 44_728_320 + 4 * 131_328 + 177_638_400 + 2 * 19_737_600 + 40 * 3_932_160
            + 829_440 + 40 * 1_966_188 + 163_840)
    assert rank_weight_bytes(spec, Layout(tp=8)) == 2 * 165_478_400 + 36_097_228_800 + rest == 37_922_259_808
    assert rank_weight_bytes(spec, Layout(tp=1)) == weight_bytes(spec).total_bytes == 298_565_832_928
    assert "mixers (39,323,760 values) are fp32 in vLLM" in " ".join(spec.assumptions)
    assert "78,647,520 B fewer" in " ".join(spec.assumptions)


def test_exl3_checkpoint_is_refused_for_its_quantization():
    with pytest.raises(ConfigError, match="'exl3' is not a quantization method kvplan reads"):
        parse_config(json.loads(FIXTURE.read_text()))


def test_bare_text_config_parses_alike():
    text = _v41()["text_config"]
    assert count_params(parse_config(text)).total_params == 551_880_804_464
    assert parse_config(text, transformers=False).model_type == "deepseek_v41_text"


@pytest.mark.parametrize("engine, gpu, field, words", [("vllm", "A100-80GB", "gpu", "and SM 9.0 (H100 / H200 / H20"),
                                                        ("sglang", "H200", "model", "DSV41_INDEX_PAGE_SIZE"),
                                                        ("custom", "H200", "model", "no per-sequence cache convention")])
def test_plans_stay_refused_with_the_reason(engine, gpu, field, words):
    # vLLM plans V4.1 on SM 10.x and SM 9.0 (Humming, read since 2026-12-03) only (tests/test_dsv4_1_vllm.py); an
    # A100 (SM 8.0) is refused
    spec = parse_config(_v41(RELEASE_QC))
    with pytest.raises(PlanInputError) as info:
        plan(spec, get_gpu(gpu), EngineConfig(engine=engine), Layout(tp=8))
    assert info.value.field == field and words in str(info.value) and "kvplan." not in str(info.value)


def test_cli_refuses_the_exl3_file_without_traceback(capsys):
    path = FIXTURE.parent / "deepseek-v4.1-flash.json"
    assert main(["params", str(path)]) == 2  # the EXL3 quantization_config: refused, no traceback
    assert "Traceback" not in capsys.readouterr().err


def test_cli_params_of_the_release_config(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_v41(RELEASE_QC)))
    assert main(["params", str(path)]) == 0
    out = capsys.readouterr().out
    assert "total params  551,880,804,464" in out and "vision tower  485,268,480" in out


def test_v41_labelled_as_v4_is_refused():
    # A flat V4.1 decoder config under V4's model_type (as some forks write it): the architectures entry, or failing
    # that V4.1's own kv_source_layer_ids, gives it away; the V4 builder would otherwise see it first.
    flat = {**_v41()["text_config"], "model_type": "deepseek_v4", "architectures": ["DeepseekV41ForCausalLM"]}
    with pytest.raises(ConfigError, match=r"DeepSeek-V4.1 \(architectures DeepseekV41ForCausalLM\) labelled"):
        parse_config(flat)
    v4 = preset_config("deepseek-v4-flash")
    with pytest.raises(ConfigError, match=r"DeepSeek-V4.1 \(field kv_source_layer_ids\)") as info:
        parse_config({**v4, "kv_source_layer_ids": [2, 8, 14, 20]})
    assert "model_type 'deepseek_v41_text'" in str(info.value)


def test_v4_ratio_one_or_two_names_v41():
    v4 = preset_config("deepseek-v4-flash")
    ratios = [0, 0] + [2] * (v4["num_hidden_layers"] - 2)
    with pytest.raises(ConfigError, match=r"unknown ratio\(s\) \[2\]; allowed: 0, 4, 128 \(1 and 2 are DeepSeek-V4.1's"):
        parse_config({**v4, "compress_ratios": ratios})
    with pytest.raises(ConfigError) as info:  # a ratio that is neither V4's nor V4.1's: no V4.1 hint
        parse_config({**v4, "compress_ratios": [0, 0] + [8] * (v4["num_hidden_layers"] - 2)})
    assert "V4.1" not in str(info.value)


def test_v41_config_errors_name_the_field():
    text = _v41()["text_config"]
    with pytest.raises(ConfigError, match=r"text_config.compress_ratios: unknown ratio\(s\) \[4\]; DeepSeek-V4.1"):
        parse_config({**_v41(), "text_config": {**text, "compress_ratios": [0, 0, 4] + text["compress_ratios"][3:]}})
    with pytest.raises(ConfigError, match="kv_source_layer_ids: required"):
        parse_config({k: v for k, v in text.items() if k != "kv_source_layer_ids"})
    with pytest.raises(ConfigError, match="kv_source_layer_ids: layer 0 is a sliding-window layer"):
        parse_config({**text, "kv_source_layer_ids": [0, 2, 8, 14, 20]})


def test_v4_is_untouched():
    for name in ("deepseek-v4-flash", "deepseek-v4-pro"):
        cfg = preset_config(name)
        assert deepseek_v41_refusal(cfg, cfg) is None
        assert load_preset(name).model_type == "deepseek_v4"


# ----------------------------------------------------------------------------- SGLang's SWA cap (kvplan.sglang_dsv4)

def test_swa_cap_matches_the_real_v41_log():
    # The V4.1-Flash log above (server_args: max_running_requests 4, chunked_prefill_size 1024, page_size 256,
    # speculative_algorithm DSPARK, speculative_num_draft_tokens 6, speculative_num_steps 1, speculative_eagle_topk 1,
    # swa_prefix_tails None, disable_radix_cache False, disable_overlap_schedule False; sliding_window 128):
    # per_request = 128 + 128 x 6 + 256 + 2 x max(1, 6) = 1,164; cap = 1,164 x 4 + 2 x 1,024 + 256 = 6,960;
    # tails 4 x 4 = 16, 16 x (128 + 256) = 6,144; 13,104 -> 52 pages = 13,312. Logged: "DSV4 SWA sizing: mode=cap,
    # swa_tokens=13312, request_cap+headroom=13312, prefix_tails=16" (exact).
    from kvplan.sglang_dsv4 import cap_sizing_line, swa_request_cap_tokens

    swa, tails = swa_request_cap_tokens(4, 1024, draft_tokens=6, spec_steps=1)
    assert (swa, tails) == (13312, 16)
    assert cap_sizing_line(swa, tails) == ("DSV4 SWA sizing: mode=cap, swa_tokens=13312, request_cap+headroom=13312, "
                                           "prefix_tails=16")


def test_swa_cap_without_speculative_decoding():
    from kvplan.sglang_dsv4 import swa_request_cap_tokens

    # DSV4's 256 running requests, chunk 8,000: per_request = 128 + 128 + 256 + 256 = 768; cap = 768 x 256 + 2 x
    # 8,000 + 256 = 212,864; radix on: tails 4 x 256 = 1,024, 1,024 x 384 = 393,216, 606,080 / 256 = 2,367.5 pages
    # -> 2,368 x 256 = 606,208 tokens; --disable-radix-cache: 212,864 / 256 = 831.5 -> 832 x 256 = 212,992.
    assert swa_request_cap_tokens(256, 8000) == (606208, 1024)
    assert swa_request_cap_tokens(256, 8000, radix_cache=False) == (212992, 0)
    # --swa-prefix-tails 10: 212,864 + 3,840 = 216,704 = 846.5 pages -> 216,832
    assert swa_request_cap_tokens(256, 8000, prefix_tails=10) == (216832, 10)
    # --disable-overlap-schedule, 4 requests, chunk 1,024: 768 x 4 + 1,024 + 256 = 4,352; + 16 x 384 = 10,496 (41 pages)
    assert swa_request_cap_tokens(4, 1024, overlap=False) == (10496, 16)
    # fewer requests than attention-DP ranks: SGLang floors the per-worker count at 1 for the cap and the tails
    # alike (requested_max_running_requests_per_worker = max(1, 1 // 2)): 768 + 2 x 1,024 + 256 = 3,072 + 4 x 384
    # = 4,608 tokens (18 pages), not 3,072 with no tails
    assert swa_request_cap_tokens(0, 1024) == swa_request_cap_tokens(1, 1024) == (4608, 4)


def test_swa_cap_refusals_name_the_flag():
    from kvplan.errors import PlanInputError
    from kvplan.sglang_dsv4 import swa_request_cap_tokens

    with pytest.raises(PlanInputError) as info:
        swa_request_cap_tokens(4, 0)
    assert info.value.field == "chunked_prefill_size"
    with pytest.raises(PlanInputError) as info:
        swa_request_cap_tokens(4, 1024, draft_tokens=6, overlap=False)
    assert info.value.field == "speculative_method"


# ----------------------------------------------------------------------------- vLLM's per-layer caches (kvplan.vllm_dsv41)

def _caches(sm100=False, **kw):
    from kvplan.spec import distinct_layers
    from kvplan.vllm_dsv41 import layer_caches

    out = {}
    for kind, block, m, page, stride, n in layer_caches(distinct_layers(parse_config(_v41()).layers), 256,
                                                        sm100=sm100, **kw):
        key = (kind, m)
        assert out.get(key, (block, page, stride, 0))[:3] == (block, page, stride)
        out[key] = (block, page, stride, out.get(key, (0, 0, 0, 0))[3] + n)
    return out


def test_vllm_pages_per_layer_kind_sm90():
    from kvplan.vllm_dsv41 import block_stride_alignment, bytes_per_token, layer_caches, sliding_blocks_per_request

    # H200 (SM 9.0), fp8_ds_mla, --block-size 256 (DeepseekSparseSWABackend's preferred size), 584 B records in
    # 576-B multiples:
    #   sliding window, every layer: 32 x 584 = 18,688 -> 33 x 576 = 19,008 B a 32-token page (594 B a token)
    #   ratio-2 kv sources (2, 8, 14): 128 x 584 = 74,752 -> 130 x 576 = 74,880 B; indexer 128 x 132 = 16,896 ->
    #   30 x 576 = 17,280 B; the ring 8 rows x 2 x 512 x 4 B = 32,768 B (one block a request)
    #   ratio-1 kv source (20): 256 x 584 = 149,504 -> 260 x 576 = 149,760 B; indexer 256 x 132 = 33,792 -> 33,984 B
    assert _caches() == {
        ("sliding_window", 1): (32, 19_008, 1, 40),
        ("compressed_kv", 2): (256, 74_880, 1, 3), ("indexer_k", 2): (256, 17_280, 1, 3),
        ("compressor_ring", 0): (8, 32_768, 1, 3),
        ("compressed_kv", 1): (256, 149_760, 1, 1), ("indexer_k", 1): (256, 33_984, 1, 1),
    }
    from kvplan.spec import distinct_layers

    caches = layer_caches(distinct_layers(parse_config(_v41()).layers), 256)
    assert bytes_per_token(caches) == {"sliding_window": 594.0, "compressed_kv (ratio 2)": 292.5,
                                       "indexer_k (ratio 2)": 67.5, "compressed_kv (ratio 1)": 585.0,
                                       "indexer_k (ratio 1)": 132.75}
    assert block_stride_alignment(caches) == 1
    # a request's sliding blocks: W 128, 2 x 8,192 tokens in flight: cdiv(127 + 16,384, 32) + 1 = 516 + 1
    assert sliding_blocks_per_request(128, 1 << 20, 16_384) == 517
    assert sliding_blocks_per_request(128, 100, 16_384) == 5  # cdiv(100, 32) + 1


def test_vllm_pages_per_layer_kind_sm100_and_drafting():
    # SM 10.x writes the V4.1 MXFP8 record (_use_v41_mxfp8_kv_record): 528 B in 512-B multiples, the sliding pages
    # with a block stride alignment of lcm(528, 528): 32 x 528 = 16,896 (33 x 512); 128 x 528 = 67,584; 256 x 528 =
    # 135,168; indexer 128 x 132 = 16,896, 256 x 132 = 33,792 (already 512-B multiples)
    assert _caches(sm100=True) == {
        ("sliding_window", 1): (32, 16_896, 528, 40),
        ("compressed_kv", 2): (256, 67_584, 1, 3), ("indexer_k", 2): (256, 16_896, 1, 3),
        ("compressor_ring", 0): (8, 32_768, 1, 3),
        ("compressed_kv", 1): (256, 135_168, 1, 1), ("indexer_k", 1): (256, 33_792, 1, 1),
    }
    from kvplan.vllm_dsv41 import ring_rows

    # 7 speculative tokens: 9 rows a step -> 16-row rings (1 << (9 - 1).bit_length()), 16 x 4,096 = 65,536 B
    assert ring_rows(7) == 16 and _caches(num_speculative_tokens=7)[("compressor_ring", 0)] == (16, 65_536, 1, 3)
    with pytest.raises(PlanInputError, match="packed fp8_ds_mla"):
        _caches(kv_cache_dtype="bfloat16")


def test_cli_kv_refuses_without_traceback(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_v41(RELEASE_QC)))
    assert main(["kv", str(path)]) == 2
    err = capsys.readouterr().err
    assert "no per-sequence cache convention" in err and "Traceback" not in err


def test_model_page_with_the_release_config_plans_hopper_without_traceback():
    from tests.app_util import plain, run_app

    at = run_app({"v": "1", "m": "llama-3.1-8b"}, "pages/model.py")
    at.text_area(key="model.paste").set_value(json.dumps(_v41(RELEASE_QC))).run()
    at.button(key="model.use_paste").click().run()
    assert not at.exception, [e.value for e in at.exception]
    said = plain(" ".join(str(w.value) for w in at.warning))
    assert "parameters are exact to vLLM 0.34's model files" in said, said  # the model is read ...
    at.switch_page("pages/gpus.py").run()  # ... and ranked, Hopper too (Humming's layout read; refused before)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    ranked = " ".join(plain(str(m.value)) for m in at.markdown)
    assert "H20 TP8 PP1 (8 GPUs)" in ranked, ranked


def test_vllm_pool_packing_and_capacity():
    from kvplan.spec import distinct_layers
    from kvplan.vllm_dsv41 import bytes_per_block, layer_caches, packed_groups, pool_capacity, request_blocks

    layers = distinct_layers(parse_config(_v41()).layers)
    caches = layer_caches(layers, 256)
    groups = sorted(packed_groups(caches))
    # _get_packed_kv_cache_groups: the MLA bucket (block 256) mixes 4 page sizes 3 / 1 / 3 / 1, unbalanced, so no
    # repeat pattern: one group of 8, 3 x 74,880 + 149,760 + 3 x 17,280 + 33,984 = 460,224 B (the anchor); the
    # sliding bucket (block 32, a state bucket then): 460,224 // 19,008 = 24 a group -> cdiv(40, 24) = 2 groups of 20
    # (380,160 B); the rings: 460,224 // 32,768 = 14 -> one group of 3 (98,304 B)
    assert groups == [("compressor_ring", 3, 98_304, 8), ("mla", 8, 460_224, 256),
                      ("sliding_window", 20, 380_160, 32), ("sliding_window", 20, 380_160, 32)]
    assert bytes_per_block(groups, caches) == 460_224  # the largest group; stride alignments' lcm 1 on SM 9.0
    # a 1M-token request, 2 x 8,192 tokens in flight: cdiv(1,048,576, 256) + 2 x (cdiv(16,511, 32) + 1) + 1 ring
    assert request_blocks(groups, 1 << 20, 16_384, 128) == 4_096 + 2 * 517 + 1 == 5_131
    # One H200 TP8 rank (the single K=V head is not split: every rank holds every page) with 100 GiB of KV memory:
    # 107,374,182,400 // 460,224 = 233,308 blocks; 233,308 / 5,131 = 45.47x; int(45.47... x 1,048,576) = 47,679,042
    blocks, tokens, concurrency = pool_capacity(100 << 30, groups, caches, 1 << 20, 16_384, 128)
    assert (blocks, tokens, round(concurrency, 2)) == (233_308, 47_679_042, 45.47)
    # SM 10.x: MLA 3 x 67,584 + 135,168 + 3 x 16,896 + 33,792 = 422,400 B = 800 x 528 (the sliding pages' stride
    # alignment); sliding 422,400 // 16,896 = 25 a group -> 2 groups of 20 (337,920 B); rings 12 a group -> 1
    caches = layer_caches(layers, 256, sm100=True)
    groups = sorted(packed_groups(caches))
    assert [g[2] for g in groups] == [98_304, 422_400, 337_920, 337_920]
    assert bytes_per_block(groups, caches) == 422_400
