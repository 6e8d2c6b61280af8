"""DeepSeek-V4 with MTP speculative decoding on SGLang (--speculative-algorithm EAGLE on the checkpoint's MTP layer):
DSV4PoolConfigurator's speculative rule (kvplan.sglang_dsv4), hand-derived.

Read 2026-12-03 in the PyPI wheels of sglang 0.5.14 - 0.5.23 (model_executor/pool_configurator.py DSV4PoolConfigurator,
mem_cache/deepseek_v4_memory_pool.py get_compress_state_ring_size, mem_cache/kv_cache_configurator.py (the draft worker's
pool), models/deepseek_v4_nextn.py, arg_groups/deepseek_v4_hook.py): speculating, the CSA / HCA compressor-state rings
hold 16 / 256 rows a request (8 / 128 without), the bytes a full token costs are multiplied by (L + 1) / L for the
draft worker, and 0.5.18+ refuse more than 16 - 8 + 2 = 10 draft tokens.

Pinned figure (search-index file 59794631809, a DeepSeek-V4-Flash developer's notes, section 5.8, measured 2026-08-20 on
a 48 GB card with SGLang DSpark speculative decoding, which takes the same is_speculative rings and inflation):
"bytes_per_full_token=9259.90". No public EAGLE / MTP DeepSeek-V4 SGLang start-up log was found (search corpora
issues / code, 2026-12-03).
"""

import pytest

from kvplan.engines import EngineConfig
from kvplan.errors import PlanInputError
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.sglang_dsv4 import (
    bytes_per_full_token,
    bytes_per_swa_token,
    c128_state_fixed_bytes,
    ring_rows,
)
from tests.test_engine_logs_2026c import _fixture

FLASH = (43, 21, 20)  # DeepSeek-V4-Flash: layers, CSA (ratio 4), HCA (ratio 128) -- the MTP layer is not among them
PRO = (61, 30, 31)


def _plan(version="0.5.20", steps=3, layout=None, **kw):
    engine = EngineConfig(engine="sglang", sglang_version=version, speculative_method="mtp",
                          num_speculative_tokens=steps, **kw)
    return plan(_fixture("deepseek-v4-flash"), get_gpu("B200"), engine, layout or Layout(tp=8))


def test_rings():
    assert ring_rows(False) == (8, 128) and ring_rows(True) == (16, 256)


def test_bytes_per_full_token_speculating_matches_the_dspark_figure():
    # c128_fixed (0.5.15 - 0.5.20), V4-Flash, r 0.1: 0.1 x 584 x 43 = 2511.2; 146 x 21 = 3066; 584 / 128 x 20 = 91.25;
    # 33 x 21 = 693; CSA state 0.1 x 16/128 x 8192 x 21 = 2150.4; indexer state 0.1 x 16/128 x 2048 x 21 = 537.6
    # -> 9049.45, x 44 / 43 = 9259.90 ("bytes_per_full_token=9259.90", file 59794631809)
    assert round(bytes_per_full_token("c128_fixed", *FLASH, speculative=True), 2) == 9259.90
    assert round(bytes_per_full_token("c128_fixed", *FLASH), 2) == 7705.45  # unchanged without it
    # state_per_token (0.5.14): + the HCA ring per token 0.1 x 256/128 x 4096 x 20 = 16384 -> 25433.45 x 44/43
    assert round(bytes_per_full_token("state_per_token", *FLASH, speculative=True), 2) == 26024.93
    # page_padded (0.5.21+): bpswa = 585 x 43 + 16/256 x 10240 x 21 = 25155 + 13440 = 38595; 0.1 x 38595 = 3859.5;
    # + (585 / 4 + 33) x 21 = 3764.25 + 864 / 128 x 20 = 135 -> 7758.75, x 44 / 43 = 7939.19
    assert bytes_per_swa_token(43, 21, speculative=True) == 38_595.0
    assert round(bytes_per_full_token("page_padded", *FLASH, speculative=True), 2) == 7939.19
    # V4-Pro page_padded: 0.1 x (585 x 61 + 640 x 30) = 5488.5; 179.25 x 30 = 5377.5; 6.75 x 31 = 209.25 -> 11075.25,
    # x 62 / 61 = 11256.81
    assert round(bytes_per_full_token("page_padded", *PRO, speculative=True), 2) == 11256.81


def test_hca_rings_speculating():
    # rows = ceil((257 x 256 + 256 + 1) / 128) x 128 = ceil(66,049 / 128) x 128 = 66,176; x 2 x 512 x 4 B x 20 layers
    assert c128_state_fixed_bytes("c128_fixed", 20, 256, speculative=True) == 66_176 * 4096 * 20 == 5_421_137_920
    assert c128_state_fixed_bytes("page_padded", 20, 256, speculative=True) == 5_421_137_920
    assert c128_state_fixed_bytes("state_per_token", 20, 256, speculative=True) == 0  # 0.5.14: priced per token


def test_plan_0520_speculating():
    p = _plan()
    rank = p.ranks[0]
    terms = {t.name: t.bytes for t in rank.terms}
    # 256 running requests (deepseek_v4_hook.py sets it before the speculative hook's 48), 256-row HCA rings
    assert terms["HCA compressor state rings (257 request slots x 256 rows)"] == 5_421_137_920
    # the draft's embed_tokens + lm_head, 2 x 129,280 / 8 x 4,096 x 2 B, resident while the pool is sized
    assert terms["MTP draft's embed_tokens / lm_head copies (freed after the pool is sized)"] == 264_765_440
    assert terms["MTP layers (in weights)"] > 0
    bpft = bytes_per_full_token("c128_fixed", *FLASH, speculative=True)  # 9259.90: 43 target layers, not 44
    assert p.kv_cache_tokens == int(rank.kv_pool_bytes / bpft) // 256 * 256
    log = "\n".join(p.engine_log)
    assert "bytes_per_full_token=9259.90" in log and "c128_state_fixed=5.05 GB" in log  # 5,421,137,920 B / GiB
    swa = int(p.kv_cache_tokens * 0.1) // 256 * 256
    assert f"c4_state={swa // 128 * 16}," in log  # the 16-row CSA ring by the 128-token window (0.5.20)
    assert "max_running_requests=256" in log and "KV Cache is allocated" not in log
    assert "type=DeepseekV4ForCausalLMNextN" in log
    note = next(w for w in p.warnings if "MTP (SGLang's EAGLE" in w)
    assert "4 draft tokens" in note and "(43 + 1) / 43" in note and "NEXTN, or no --speculative-eagle-topk, fails at start-up" in note


def test_plan_without_speculation_is_unchanged_and_holds_more():
    base = plan(_fixture("deepseek-v4-flash"), get_gpu("B200"), EngineConfig(engine="sglang", sglang_version="0.5.20"),
                Layout(tp=8))
    spec = _plan()
    # the pool shrinks by the extra 128 HCA rows a slot (5,421,137,920 - 2,715,811,840 = 2,705,326,080 B), the MTP
    # layer's shard and the vocab copies; the tokens by that and by 9259.90 / 7705.45 B a token
    extra = next(t.bytes for t in spec.ranks[0].terms if t.name == "MTP layers (in weights)")
    assert base.ranks[0].kv_pool_bytes - spec.ranks[0].kv_pool_bytes == 2_705_326_080 + extra + 264_765_440
    assert spec.kv_cache_tokens < base.kv_cache_tokens


def test_plan_0521_and_0514_lines():
    p = _plan("0.5.21")
    bpft = bytes_per_full_token("page_padded", *FLASH, speculative=True)  # 7939.19
    assert p.kv_cache_tokens == int(p.ranks[0].kv_pool_bytes / bpft) // 256 * 256
    log = "\n".join(p.engine_log)
    swa = int(p.kv_cache_tokens * 0.1) // 256 * 256
    assert "bytes_per_full_token=7939.19" in log and f"c4_state={swa // 256 * 16}," in log  # by the 256-token page
    p = _plan("0.5.14")
    assert p.kv_cache_tokens == int(p.ranks[0].kv_pool_bytes / bytes_per_full_token(
        "state_per_token", *FLASH, speculative=True)) // 256 * 256
    assert "bytes_per_full_token=26024.93" in "\n".join(p.engine_log)


def test_dp_attention_keeps_the_draft_embedding_whole():
    # deepseek_v4_nextn.py: VocabParallelEmbedding(enable_tp=not is_dp_attention_enabled()): 129,280 x 4,096 x 2 B
    # whole, + the lm_head over TP 8: 16,160 x 4,096 x 2 -> 1,059,061,760 + 132,382,720 = 1,191,444,480 B
    p = _plan(dp_attention_size=8)
    terms = {t.name: t.bytes for t in p.ranks[0].terms}
    assert terms["MTP draft's embed_tokens / lm_head copies (freed after the pool is sized)"] == 1_191_444_480


@pytest.mark.parametrize("version, steps, kw, field, words", [
    # 10 steps -> 11 draft tokens > 16 - 8 + 2 = 10: SGLang 0.5.18+ assert
    ("0.5.20", 10, {}, "--speculative-num-draft-tokens", "serves at most 16 - 8 + 2 = 10 draft tokens"),
    ("0.5.21", 10, {}, "--speculative-num-draft-tokens", "Use --speculative-num-steps 9 or fewer"),
])
def test_refusals(version, steps, kw, field, words):
    with pytest.raises(PlanInputError) as e:
        _plan(version, steps, **kw)
    assert e.value.field == field and words in str(e.value)


def test_pp_and_other_algorithms_refused():
    with pytest.raises(PlanInputError, match="under pipeline parallelism") as e:
        _plan(layout=Layout(tp=4, pp=2))
    assert e.value.field == "--speculative-algorithm"
    with pytest.raises(PlanInputError, match="'ngram' on DeepSeek-V4: SGLang refuses it"):
        plan(_fixture("deepseek-v4-flash"), get_gpu("B200"),
             EngineConfig(engine="sglang", sglang_version="0.5.20", speculative_method="ngram"), Layout(tp=8))


def test_nine_steps_plan_and_the_0517_line_takes_more():
    assert _plan("0.5.20", 9).kv_cache_tokens > 0  # 10 draft tokens: within the ring
    # 0.5.17 has no draft-token assert and its sizing does not read D: planned, the same pool as 3 steps
    assert _plan("0.5.17", 10).kv_cache_tokens == _plan("0.5.17", 3).kv_cache_tokens


def test_given_draft_tokens_are_reset_to_steps_plus_one():
    p = _plan(speculative_num_draft_tokens=8)
    assert any("--speculative-num-draft-tokens 8 is reset to --speculative-num-steps + 1 = 4" in w for w in p.warnings)
    assert p.kv_cache_tokens == _plan().kv_cache_tokens


def test_the_mtp_weights_row_and_the_sidebar_say_eagle():
    term = next(t for t in _plan().ranks[0].terms if t.name == "MTP layers (in weights)")
    assert "--speculative-algorithm EAGLE (3 draft tokens)" in term.source and "deepseek_v4_nextn.py" in term.source
    from kvplan.web.state import PlanState
    from kvplan.web.widgets import knob_text

    # SGLang refuses NEXTN for DeepSeek-V4, and a missing top-k (its hook asserts EAGLE and top-k == 1 before NEXTN is
    # resolved or the top-k default filled): the Set line says both
    assert knob_text(PlanState(engine="sglang", speculative_method="mtp", model="deepseek-v4-flash"),
                     "speculative_method") == "--speculative-algorithm EAGLE --speculative-eagle-topk 1"
    assert knob_text(PlanState(engine="sglang", speculative_method="mtp"), "speculative_method") == \
        "--speculative-algorithm NEXTN"
