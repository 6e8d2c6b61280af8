"""DeepSeek-V4 on the SGLang 0.5.21 line (0.5.21 - 0.5.23): DSV4PoolConfigurator's page-padded rule (kvplan.sglang_dsv4
rule "page_padded"), hand-derived, and the 0.5.22+ decode-graph cap warning (kvplan.sglang.decode_graph_cap_note).

Read in the sglang 0.5.20 / 0.5.21 / 0.5.22 / 0.5.23 wheels (PyPI, ``pip download sglang==X --no-deps``, 2026-12-02):
model_executor/pool_configurator.py (DSV4PoolConfigurator), mem_cache/deepseek_v4_memory_pool.py,
kernels/ops/attention/dsv4/kv_layout.py (KVLayout.V4: 584 B a token, pages padded to 576 B multiples),
arg_groups/model_overrides/deepseek_v4.py, arg_groups/kv_cache_hook.py, arg_groups/pipeline.py, arg_groups/memory_hook.py.

The per-request SWA cap ("DSV4 SWA sizing: mode=cap", compute_swa_request_cap) of 0.5.21+ is not what V4-Flash / V4-Pro
get: it needs no --swa-full-tokens-ratio at all, and model_overrides/deepseek_v4.py declares 0.1 for every
DeepseekV4ForCausalLM but DeepSeek-V4.1 before kv_cache_hook.py records whether the ratio was set, so V4 logs
"mode=ratio (explicit)" with or without the flag (the cap serves V4.1). What 0.5.21 changed for V4 is the price of its
pools (the tests below). No public 0.5.21 - 0.5.23 start-up log of V4-Flash / V4-Pro was found (find_string "DSV4 SWA
sizing": ten hits, all DeepSeek-V4.1 dev-image logs, NPU tests or source copies; search corpus "issues" for the
0.5.21+ memory-calculation line: none), so these numbers are hand-derived, not pinned to a log.
"""

import pytest

from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.presets import load_preset
from kvplan.sglang import SGLANG_PROFILES, decode_graph_cap_note, sglang_profile_for_release
from kvplan.sglang_dsv4 import (
    DSV4_LINE_RULES,
    bytes_per_full_token,
    bytes_per_swa_token,
    c128_state_fixed_bytes,
    paged_kv_bytes_per_token,
    swa_ratio,
)

FLASH = (43, 21, 20)  # V4-Flash: layers, CSA (ratio 4), HCA (ratio 128)
PRO = (61, 30, 31)


def _plan(model, gpu, version="0.5.21", layout=None, **kw):
    return plan(load_preset(model), get_gpu(gpu), EngineConfig(engine="sglang", sglang_version=version, **kw),
                layout or Layout(tp=8))


def test_the_line_and_its_releases():
    assert SGLANG_PROFILES["0.5.21"].releases == "0.5.21 - 0.5.23 (newest read)"
    assert SGLANG_PROFILES["0.5.20"].releases == "0.5.20"
    assert [sglang_profile_for_release(r) for r in ("0.5.20", "0.5.21", "0.5.22", "0.5.23")] == \
        ["0.5.20", "0.5.21", "0.5.21", "0.5.21"]
    assert DSV4_LINE_RULES["0.5.20"] == "c128_fixed" and DSV4_LINE_RULES["0.5.21"] == "page_padded"


def test_padded_page_bytes():
    # KVLayout.V4.page_bytes(P) / P = ceil(P x 584 / 576) x 576 / P
    assert paged_kv_bytes_per_token(256) == 260 * 576 / 256 == 585.0  # SWA: 149,504 B -> 149,760 B a page
    assert paged_kv_bytes_per_token(64) == 65 * 576 / 64 == 585.0  # CSA: page 256 / 4 = 64 entries, 37,376 -> 37,440
    assert paged_kv_bytes_per_token(2) == 3 * 576 / 2 == 864.0  # HCA: page 256 / 128 = 2 entries, 1,168 -> 1,728


def test_bytes_per_swa_token():
    # 585 x L + 8 / 256 x (2 x 2 x 512 x 4 + 2 x 2 x 128 x 4) x L4 = 585 L + 0.03125 x 10,240 x L4 = 585 L + 320 L4
    assert bytes_per_swa_token(43, 21) == 585 * 43 + 320 * 21 == 31_875.0
    assert bytes_per_swa_token(61, 30) == 585 * 61 + 320 * 30 == 45_285.0


def test_bytes_per_full_token_page_padded():
    # r x bpswa + (585 / 4 + 132 / 4) x L4 + 864 / 128 x L128 = r x bpswa + 179.25 L4 + 6.75 L128
    # V4-Flash, r 0.1: 3,187.5 + 3,764.25 + 135 = 7,086.75 (0.5.20: 7,705.45, whose CSA ring was priced per 128-token
    # window: 0.1 x 8/128 x 10,240 x 21 = 1,344 against 672 here; and no page padding)
    assert bytes_per_full_token("page_padded", *FLASH) == 7086.75
    assert round(bytes_per_full_token("c128_fixed", *FLASH), 2) == 7705.45
    # V4-Pro, r 0.1: 4,528.5 + 179.25 x 30 + 6.75 x 31 = 4,528.5 + 5,377.5 + 209.25 = 10,115.25 (0.5.20: 10,993.84)
    assert bytes_per_full_token("page_padded", *PRO) == 10115.25
    assert round(bytes_per_full_token("c128_fixed", *PRO), 2) == 10993.84
    # an explicit ratio takes the same page-padded terms: V4-Pro at 0.15: 0.15 x 45,285 = 6,792.75 + 5,586.75 = 12,379.5
    # (0.5.15.post1's MI355X log at 0.15 read 13,735.04, the older rule)
    assert bytes_per_full_token("page_padded", *PRO, swa_ratio=0.15) == 12379.5
    # the HCA rings stay request-scoped: 256 running requests -> 33,152 rows x 4,096 B x 20 layers
    assert c128_state_fixed_bytes("page_padded", 20, 256) == 33_152 * 4096 * 20 == 2_715_811_840


def test_the_ratio_is_read_as_on_0_5_20():
    # 0.5.20+ default swa_full_tokens_ratio to None: not given -> 0.1 (DSV4), an explicit 0.8 is kept
    assert (swa_ratio("0.5.21", None), swa_ratio("0.5.21", 0.8), swa_ratio("0.5.21", 0.15)) == (0.1, 0.8, 0.15)
    assert swa_ratio("0.5.18", 0.8) == 0.1


def test_v4_flash_on_8_b200_default_flags():
    p = _plan("deepseek-v4-flash", "B200")
    rank = p.ranks[0]
    assert p.engine_version == "0.5.21" and p.block_size == 256
    rings = next(t.bytes for t in rank.terms if t.name.startswith("HCA compressor state rings"))
    assert rings == 2_715_811_840  # 257 request slots, 20 HCA layers (as 0.5.20)
    # full_token = int((available - c128_fixed) / 7,086.75) // 256 x 256; kvplan's rest after the rings is
    # 137,152,367,881 B: / 7,086.75 = 19,353,352.08 -> 19,353,344 (0.5.20's 7,705.45 gives 17,799,168: +8.7 %)
    assert rank.kv_pool_bytes == 137_152_367_881
    assert p.kv_cache_tokens == int(137_152_367_881 / 7086.75) // 256 * 256 == 19_353_344
    assert _plan("deepseek-v4-flash", "B200", "0.5.20").kv_cache_tokens == 17_799_168
    # swa = int(19,353,344 x 0.1) // 256 x 256 = 1,935,104; c4 = full // 4; c128 = full // 128; c4_state = swa // 256 x 8
    log = p.engine_log
    at = next(i for i, line in enumerate(log) if line.startswith("DSV4 SWA sizing"))
    assert log[at:at + 3] == [
        "DSV4 SWA sizing: mode=ratio (explicit), swa_tokens=1935104, swa_full_tokens_ratio=0.1",
        "DSV4 memory calculation: unified=False, unified_fp8=False, dspark_draft_bf16=False, "
        "bytes_per_full_token=7086.75, available_bytes=130.26 GB, c128_state_fixed=2.53 GB, c2_state_fixed=0.00 GB, "
        "swa_fixed=0.00 GB, swa_ring_fixed=0.00 GB, c4_state_fixed=0.00 GB, full_token=19353344",
        "DSV4 pool sizes: full=19353344, swa=1935104, c4=4838336, c128=151198, c4_state=60472, c128_state=0"]
    assert (137_152_367_881 + 2_715_811_840) / 2**30 == pytest.approx(130.26, abs=0.005)  # available = rest + rings
    assert 1_935_104 // 256 * 8 == 60_472 and 19_353_344 // 4 == 4_838_336 and 19_353_344 // 128 == 151_198
    assert not any("estimate" in w for w in p.warnings) and "KV Cache is allocated" not in "\n".join(log)
    assert any("rule 'page_padded'" in w and "864 B an HCA token" in w for w in p.warnings)


@pytest.mark.parametrize("gpu, rest, tokens, tokens_0520", [
    # H200 (FP4 experts, 101.22 GB loaded a rank): rest 18,744,807,863 B / 10,115.25 = 1,853,123.5 -> 1,852,928
    ("H200", 18_744_807_863, 1_852_928, 1_704_960),
    # MI355X: rest 157,029,818,891 B / 10,115.25 = 15,524,067.0 -> 15,523,840
    ("MI355X", 157_029_818_891, 15_523_840, 14_283_264),
])
def test_v4_pro_on_8_gpus_default_flags(gpu, rest, tokens, tokens_0520):
    p = _plan("deepseek-v4-pro", gpu)
    assert p.ranks[0].kv_pool_bytes == rest
    assert p.kv_cache_tokens == int(rest / 10115.25) // 256 * 256 == tokens
    assert _plan("deepseek-v4-pro", gpu, "0.5.20").kv_cache_tokens == tokens_0520  # 10,993.84 B a full token
    swa = int(tokens * 0.1) // 256 * 256
    assert f"DSV4 SWA sizing: mode=ratio (explicit), swa_tokens={swa}, swa_full_tokens_ratio=0.1" in p.engine_log
    assert f"bytes_per_full_token=10115.25, available_bytes=" in "\n".join(p.engine_log)
    assert (f"DSV4 pool sizes: full={tokens}, swa={swa}, c4={tokens // 4}, c128={tokens // 128}, "
            f"c4_state={swa // 256 * 8}, c128_state=0") in p.engine_log


def test_explicit_ratio_keeps_the_ratio_sizing():
    # --swa-full-tokens-ratio 0.15 on 0.5.21: the same "ratio (explicit)" mode, bpft 12,379.5 (module docstring);
    # the 0.5.20 line keeps its own rule (13,735.04 at 0.15)
    p = _plan("deepseek-v4-pro", "MI355X", swa_full_tokens_ratio=0.15)
    rest = p.ranks[0].kv_pool_bytes
    assert p.kv_cache_tokens == int(rest / 12379.5) // 256 * 256
    swa = int(p.kv_cache_tokens * 0.15) // 256 * 256
    assert f"DSV4 SWA sizing: mode=ratio (explicit), swa_tokens={swa}, swa_full_tokens_ratio=0.15" in p.engine_log
    old = _plan("deepseek-v4-pro", "MI355X", "0.5.20", swa_full_tokens_ratio=0.15)
    assert "bytes_per_full_token=13735.04" in "\n".join(old.engine_log)
    assert not any(line.startswith("DSV4 SWA sizing") for line in old.engine_log)  # 0.5.20 prints no such line


def test_pp_stages_price_their_own_layers_page_padded():
    # V4-Pro PP2 on H200: stage 0 = 30 layers (14 CSA, 16 HCA), stage 1 = 31 (16 CSA, 15 HCA)
    # stage 1: 0.1 x (585 x 31 + 320 x 16) = 2,325.5; 179.25 x 16 = 2,868; 6.75 x 15 = 101.25 -> 5,294.75
    # stage 0: 0.1 x (585 x 30 + 320 x 14) = 2,203; 179.25 x 14 = 2,509.5; 6.75 x 16 = 108 -> 4,820.5
    assert bytes_per_full_token("page_padded", 31, 16, 15) == 5294.75
    assert bytes_per_full_token("page_padded", 30, 14, 16) == 4820.5
    p = _plan("deepseek-v4-pro", "H200", layout=Layout(tp=8, pp=2))
    tight = min(p.ranks, key=lambda r: r.num_blocks)
    bpft = 5294.75 if tight.pp_stage == 1 else 4820.5
    assert p.kv_cache_tokens == int(tight.kv_pool_bytes / bpft) // 256 * 256
    assert f"bytes_per_full_token={bpft:.2f}" in "\n".join(p.engine_log)


def test_decode_graph_cap_note_numbers():
    # 0.5.22+ memory_hook.py: max_bs (tier default) <= --max-running-requests. H100 (81,559 MiB), TP1, R 64:
    # reserve 512 + 8192 x 1.5 + 1/8 x 1024 + 64 x 2 + 58 x 8 = 13,520 MiB (0.5.21: 256 x 2 -> 13,904)
    # -> round((81,559 - 13,520) / 81,559, 3) = 0.834 (0.5.21: 0.830)
    note = decode_graph_cap_note(SGLANG_PROFILES["0.5.21"], "H100-SXM", "NVIDIA", 80 * 2**30, 1,
                                 max_running_requests=64)
    assert "from 256 to --max-running-requests 64" in note and "13520 MiB instead of 13904" in note
    assert "0.834 instead of 0.830" in note and "--mem-fraction-static 0.834" in note
    assert round((81559 - 13520) / 81559, 3) == 0.834 and round((81559 - 13904) / 81559, 3) == 0.83
    # no note: on the 0.5.20 line, R at / above max_bs, no R, an explicit fraction
    for prof, r, f in ((SGLANG_PROFILES["0.5.20"], 64, None), (SGLANG_PROFILES["0.5.21"], 256, None),
                       (SGLANG_PROFILES["0.5.21"], None, None), (SGLANG_PROFILES["0.5.21"], 64, 0.8)):
        assert decode_graph_cap_note(prof, "H100-SXM", "NVIDIA", 80 * 2**30, 1, mem_fraction_static=f,
                                     max_running_requests=r) is None


def test_decode_graph_cap_note_in_a_plan():
    spec, h100 = load_preset("llama-3.1-8b"), get_gpu("H100-SXM")
    capped = plan(spec, h100, EngineConfig(engine="sglang", max_num_seqs=64, max_model_len=8192))
    assert any("SGLang 0.5.22 - 0.5.23" in w and "0.834 instead of 0.830" in w for w in capped.warnings)
    for kw in ({"max_num_seqs": 64, "sglang_version": "0.5.20"}, {}):
        assert not any("SGLang 0.5.22 - 0.5.23" in w
                       for w in plan(spec, h100, EngineConfig(engine="sglang", max_model_len=8192, **kw)).warnings)


def test_the_0_5_20_line_prints_that_wheels_words():
    # 0.5.20's pool_configurator.py: the unified flags, swa_ring_fixed / c4_state_fixed, and c4_state = swa // 128 x 8
    # (the ring sized by the 128-token sliding window); V4-Flash on 8 x B200: 17,799,168 full tokens, swa 1,779,712
    log = _plan("deepseek-v4-flash", "B200", "0.5.20").engine_log
    at = next(i for i, line in enumerate(log) if line.startswith("DSV4 memory calculation"))
    assert log[at:at + 2] == [
        "DSV4 memory calculation: unified=False, unified_fp8=False, bytes_per_full_token=7705.45, "
        "available_bytes=130.26 GB, c128_state_fixed=2.53 GB, swa_ring_fixed=0.00 GB, c4_state_fixed=0.00 GB, "
        "full_token=17799168",
        "DSV4 pool sizes: full=17799168, swa=1779712, c4=4449792, c128=139056, c4_state=111232, c128_state=0"]
    assert int(17_799_168 * 0.1) // 256 * 256 == 1_779_712 and 1_779_712 // 128 * 8 == 111_232
