"""DeepSeek-V4 on SGLang: DSV4PoolConfigurator's own rule (kvplan.sglang_dsv4), pinned to public start-up logs.

The logs (search-index files; SGLang's "DSV4 memory calculation" line prints bytes_per_full_token to 2 decimals and
available_bytes / c128_state_fixed in GiB to 2 decimals):
- NPU: DeepSeek-V4-Flash (w4a8) on 4 Ascend NPUs, 2026-08-10, max_running_requests 4, page 128: "bytes_per_full_token=
  7705.45, available_bytes=1.57 GB, c128_state_fixed=0.07 GB, full_token=209280" (file 57615238133);
- MI355X: DeepSeek-V4-Pro on 8 x MI355X, sglang 0.5.15.post1, TP8 + DP attention 8, --max-running-requests 512,
  --swa-full-tokens-ratio 0.15, --mem-fraction-static 0.90, 2026-07-24: "bytes_per_full_token=13735.04, available_bytes=
  118.93 GB, c128_state_fixed=1.01 GB, full_token=9217792" (file 62139008554);
- 0.5.12 rule: DeepSeek-V4-Flash, 2026-05-15: "DSv4 memory calculation: bytes_per_full_token=15955.85" (file
  55027354440): 44 compress_ratios entries (the MTP layer's too) and the HCA state ring priced per token.
"""

import pytest

from kvplan.engines import EngineConfig
from kvplan.errors import PlanInputError
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.sglang_dsv4 import bytes_per_full_token, c128_state_fixed_bytes, full_tokens
from kvplan.units import GiB
from tests.test_engine_logs_2026c import _fixture


def test_bytes_per_full_token_logged():
    # V4-Flash, 43 layers (21 CSA, 20 HCA), r 0.1: 0.1 x 584 x 43 = 2511.2; 146 x 21 = 3066; 584 / 128 x 20 = 91.25;
    # 33 x 21 = 693; 0.1 x 8/128 x 8192 x 21 = 1075.2; 0.1 x 8/128 x 2048 x 21 = 268.8 -> 7705.45 (NPU log)
    assert round(bytes_per_full_token("c128_fixed", 43, 21, 20), 2) == 7705.45
    # V4-Pro, 61 layers (30 CSA, 31 HCA), r 0.15: 5343.6 + 4380 + 141.4375 + 990 + 2304 + 576 = 13735.04 (MI355X log)
    assert round(bytes_per_full_token("c128_fixed", 61, 30, 31, swa_ratio=0.15), 2) == 13735.04
    # 0.5.12 (44 entries) with the HCA ring per token: 7705.45 + 0.1 x 584 + 0.1 x 128/128 x 4096 x 20 = 15955.85
    assert round(bytes_per_full_token("state_per_token", 44, 21, 20), 2) == 15955.85
    # the 0.5.14 line (43 served layers): 15955.85 - 58.4 = 15897.45
    assert round(bytes_per_full_token("state_per_token", 43, 21, 20), 2) == 15897.45


def test_c128_state_fixed_logged():
    # rows = ceil(((R + 1) x 128 + 129) / 128) x 128, x 2 x 512 x 4 B a row, x HCA layers
    assert c128_state_fixed_bytes("c128_fixed", 20, 256) == 33_152 * 4096 * 20 == 2_715_811_840
    assert round(c128_state_fixed_bytes("c128_fixed", 31, 512 // 8) / GiB, 2) == 1.01  # 8,576 rows x 4096 x 31
    assert round(c128_state_fixed_bytes("c128_fixed", 20, 4) / GiB, 2) == 0.07  # 896 rows x 4096 x 20
    assert c128_state_fixed_bytes("state_per_token", 20, 256) == 0


@pytest.mark.parametrize("avail_gib, layers, ratio, running, page, logged", [
    (118.93, (61, 30, 31), 0.15, 64, 256, 9_217_792),  # MI355X V4-Pro
    (1.57, (43, 21, 20), 0.1, 4, 128, 209_280),  # NPU V4-Flash
])
def test_full_tokens_within_the_logged_rounding(avail_gib, layers, ratio, running, page, logged):
    # available is logged to 0.01 GiB: the logged full_token lies between kvplan's at avail -/+ 0.005 GiB
    bpft = bytes_per_full_token("c128_fixed", *layers, swa_ratio=ratio)
    fixed = c128_state_fixed_bytes("c128_fixed", layers[2], running)
    lo, hi = (full_tokens(int((avail_gib + d) * GiB), bpft, fixed, page) for d in (-0.005, 0.005))
    assert lo <= logged <= hi and logged % page == 0
    assert abs(full_tokens(int(avail_gib * GiB), bpft, fixed, page) - logged) / logged < 0.01


def _sglang(version="0.5.20", **kw):
    return plan(_fixture("deepseek-v4-flash"), get_gpu("B200"),
                EngineConfig(engine="sglang", sglang_version=version, **kw), Layout(tp=8))


def test_plan_uses_the_dsv4_pools():
    p = _sglang()
    rank = p.ranks[0]
    fixed = next(t for t in rank.terms if t.name.startswith("HCA compressor state rings"))
    assert fixed.bytes == 2_715_811_840  # 256 running requests (the DSV4 default), 20 HCA layers
    # max_total_num_tokens = int(pool after the rings / 7705.45) floored to the 256-token page
    assert p.block_size == 256
    assert p.kv_cache_tokens == int(rank.kv_pool_bytes / 7705.450000000001) // 256 * 256
    assert p.kv_cache_tokens > 5 * 3_176_512  # the flat 584 B x 43 layer rule it replaces gave 3,176,512
    log = "\n".join(p.engine_log)
    assert "bytes_per_full_token=7705.45" in log and "c128_state_fixed=2.53 GB" in log
    assert "max_running_requests=256" in log and "KV Cache is allocated" not in log
    assert not any("estimate" in w for w in p.warnings)  # the 0.5.20 line is 0.5.20 alone now (0.5.21: its own)
    assert not any("price every layer" in w for w in p.warnings)


def test_plan_0514_prices_the_hca_ring_per_token():
    p = _sglang("0.5.14")
    assert not any(t.name.startswith("HCA compressor") for t in p.ranks[0].terms)
    assert p.kv_cache_tokens == int(p.ranks[0].kv_pool_bytes / bytes_per_full_token("state_per_token", 43, 21, 20)) \
        // 256 * 256
    assert "bytes_per_full_token=15897.45" in "\n".join(p.engine_log)


@pytest.mark.parametrize("version, kw, field, words", [
    ("0.5.8", {}, "sglang_version", "first SGLang release that serves it is 0.5.12"),
    ("0.5.10", {}, "sglang_version", "two rules in one line"),
    # what SGLang refuses for DeepSeek-V4 (deepseek_v4_hook.py: EAGLE / DSPARK only), named by SGLang's flag; MTP
    # (EAGLE on the MTP layer) is planned: tests/test_sglang_dsv4_spec.py
    ("0.5.21", {"speculative_method": "ngram"}, "--speculative-algorithm", "SGLang refuses it"),
    ("0.5.20", {"kv_cache_dtype": "fp8_e5m2"}, "kv_cache_dtype", "fp8_e4m3 or bfloat16"),
])
def test_refusals(version, kw, field, words):
    with pytest.raises(PlanInputError) as e:
        _sglang(version, **kw)
    assert e.value.field == field and words in str(e.value)


def test_pp_stages_price_their_own_layers():
    # V4-Pro PP2 (SGLang's get_pp_indices: 30 / 31 layers); stage 1 = compress_ratios[30:61]: 16 CSA, 15 HCA:
    # 0.1 x 584 x 31 = 1810.4; 146 x 16 = 2336; 4.5625 x 15 = 68.4375; 33 x 16 = 528; 51.2 x 16 = 819.2;
    # 12.8 x 16 = 204.8 -> 5766.84 B; its rings 33,152 x 4096 x 15 = 2,036,858,880 B (stage 0: 16 HCA layers)
    p = plan(_fixture("deepseek-v4-pro"), get_gpu("H200"), EngineConfig(engine="sglang", sglang_version="0.5.20"),
             Layout(tp=8, pp=2))
    rings = [next(t.bytes for t in r.terms if t.name.startswith("HCA compressor")) for r in p.ranks]
    assert rings == [33_152 * 4096 * 16, 33_152 * 4096 * 15]
    assert round(bytes_per_full_token("c128_fixed", 31, 16, 15), 2) == 5766.84
    tight = min(p.ranks, key=lambda r: r.num_blocks)
    assert tight.pp_stage == 1 and "bytes_per_full_token=5766.84" in "\n".join(p.engine_log)
    assert p.kv_cache_tokens == int(tight.kv_pool_bytes / bytes_per_full_token("c128_fixed", 31, 16, 15)) // 256 * 256
