"""The second audit of the app (issue 12's standard: no unlabeled or misleading figure, words a vLLM user knows):
negative KV pools, charts past the model's maximum context, the Validate page's block size, exponent-free link
floats, and block sizes vLLM refuses."""

import math
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from kvplan.paging import vllm_block_size_choices, vllm_block_size_problem
from kvplan.units import GiB
from kvplan.web import cached, views
from kvplan.web.state import PlanState, decode, encode, fmt_decimal
from tests.app_util import figure, html_tables, kvplan_plan, plain, run_app, values, warnings

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------ 1. a layout that does not fit: no bare negative pool

def test_a_negative_pool_reads_short_by():
    # Llama-3.1-70B at TP 1 on an H100: 131 GiB of bf16 weights on 79.19 GiB x 0.9: the pool is negative
    p = kvplan_plan("llama-3.1-70b", tp=1)
    short = -p.ranks[0].kv_pool_bytes / GiB
    assert 60 < short < 63  # 61.50 GiB short, as kvplan plans it
    at = run_app({"v": "1", "m": "llama-3.1-70b", "lay": "1x1x1,4x1x1"}, "pages/parallelism.py")
    table = {r["layout"]: r for r in html_tables(at)[0]}
    assert table["TP1 PP1 DP1"]["KV pool / GPU (GiB)"] == f"short by {short:,.2f} GiB"
    assert table["TP1 PP1 DP1"]["fits"] == "does not load"  # the weights alone exceed the GPU
    p4 = kvplan_plan("llama-3.1-70b", tp=4)
    assert table["TP4 PP1 DP1"]["KV pool / GPU (GiB)"] == f"{p4.ranks[0].kv_pool_bytes / GiB:,.2f}"
    assert not any(v.lstrip().startswith("-") for row in table.values() for v in row.values())
    assert views.pool_text(-501 * GiB) == "short by 501.00 GiB"
    assert views.pool_text(0) == "0.00"


def test_the_budget_terms_say_what_a_negative_pool_is():
    at = run_app({"v": "1", "m": "llama-3.1-70b"})
    pool = next(r for r in html_tables(at)[0] if r["term"] == "KV pool")
    assert pool["source"].startswith("what the terms above leave: short by ")


# ------------------------------------------------------------------ 2. the context charts past max_position_embeddings

def test_the_context_charts_mark_the_sweep_past_the_models_maximum():
    # Nemotron-H-56B: max_position_embeddings 8,192; the sweep runs to 4 x 8,192 = 32,768
    at = run_app({"v": "1", "m": "nemotron-h-56b", "tp": "2"})
    fig = figure(at, "budget.context")
    assert max(values(fig["data"][0]["x"])) == 8192  # the plain line stops at the maximum
    past = next(t for t in fig["data"] if t["name"] == "past max_position_embeddings (8,192)")
    assert values(past["x"])[0] == 8192 and values(past["x"])[-1] == 32768 and past["line"]["dash"] == "dot"
    # the band: from 8,192 to the chart's right end, the 'fits up to' line of this hybrid at 798,720 tokens (384
    # attention blocks of 2,080 on 0.33, 405 = 842,400 on 0.32: tests/test_app_audit.py; a shape on a log axis in data
    # units); its label at
    # log10(8192) (an annotation in log10 units)
    band = next(s for s in fig["layout"]["shapes"] if s["type"] == "rect")
    assert (band["x0"], band["x1"]) == (8192, 798_720)
    label = next(a for a in fig["layout"]["annotations"] if a["text"] == "past max_position_embeddings (8,192)")
    # right-aligned at the band's right end (log10(798,720) = 5.9024), so the label never runs off the chart
    assert label["x"] == pytest.approx(math.log10(798_720)) and label["xanchor"] == "right"
    conc = figure(at, "budget.concurrency")
    assert "past max_position_embeddings (8,192)" in [a["text"] for a in conc["layout"]["annotations"]]


def test_a_sweep_within_the_maximum_has_no_band():
    # Llama-3.1-70B at 8,192 tokens, 16 sequences (no single-request 'fits up to' line): the sweep ends at
    # 4 x 8,192 = 32,768 < max_position_embeddings 131,072
    fig = figure(run_app({"v": "1", "m": "llama-3.1-70b", "tp": "4", "len": "8192", "conc": "16"}), "budget.context")
    assert max(values(fig["data"][0]["x"])) == 32768
    assert not any("past max_position_embeddings" in str(t.get("name")) for t in fig["data"])
    assert not any(s["type"] == "rect" for s in fig["layout"]["shapes"])


# ------------------------------------------------------------------ 3. the Validate page's block size is the plan's

def _validate(params: dict) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "validate.py"), default_timeout=30)
    at.query_params.update(params)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_validate_defaults_to_the_plans_block_size():
    # DeepSeek-V2-Lite (MLA) on an H100 with vLLM 0.17: FlashMLA forces 64-token blocks, so the plan's block is 64
    assert kvplan_plan("deepseek-v2-lite", vllm_version="0.17").block_size == 64
    box = next(s for s in _validate({"m": "deepseek-v2-lite", "vv": "0.17"}).selectbox if s.label == "Block size")
    assert box.value == 64 and "64 (the plan's: vLLM 0.17 on H100-SXM)" in box.options
    box = next(s for s in _validate({"m": "gpt2"}).selectbox if s.label == "Block size")
    assert box.value == 16  # a standard-attention model: vLLM's 16


# ------------------------------------------------------------------ 4. link floats: decimals, never exponents

@pytest.mark.parametrize("value,text", [(1e6, "1000000"), (1e-5, "0.00001"), (0.9, "0.9"), (2.0, "2"),
                                        (123456.789, "123456.789"), (0.1 + 0.2, "0.30000000000000004")])
def test_fmt_decimal_round_trips_without_an_exponent(value, text):
    assert fmt_decimal(value) == text and float(text) == value


def test_weights_link_is_decimal_and_old_exponent_links_still_decode():
    link = encode(PlanState(weights_gib=1e6, gpu_memory_utilization=1e-5))
    assert (link["wg"], link["gmu"]) == ("1000000", "0.00001")
    back, warned = decode(link)
    assert (back.weights_gib, back.gpu_memory_utilization, warned) == (1e6, 1e-5, [])
    old, warned = decode({"wg": "1e+06", "gmu": "1e-05"})  # a link written before: {:g}
    assert (old.weights_gib, old.gpu_memory_utilization, warned) == (1e6, 1e-5, [])
    choice = cached.weights_choice(PlanState(weights_gib=1e-5))
    assert choice.source.startswith("typed in: 0.00001 GiB = 10,737 B per rank")  # 1e-5 x 2^30 = 10,737.4


# ------------------------------------------------------------------ 5. block sizes vLLM refuses are said so

def test_vllm_block_size_choices_by_release():
    assert vllm_block_size_choices((0, 11, 0)) == ((0, 10, 2), (1, 8, 16, 32, 64, 128))
    assert vllm_block_size_problem(256, (0, 11, 0)).startswith("vLLM refuses --block-size 256")
    assert vllm_block_size_problem(256, (0, 17, 0)) is None
    assert vllm_block_size_problem(48, (0, 32, 0)) is None  # any size, and 48 = 3 x 16 for FlashAttention
    assert "No common block size for 7" in vllm_block_size_problem(7, (0, 32, 0))
    assert vllm_block_size_problem(4, (0, 6, 0)).endswith("takes only 8, 16, 32 (vllm 0.6.3 wheel)")


def test_a_link_with_a_block_size_vllm_refuses_warns_on_every_page():
    at = run_app({"v": "1", "bs": "7", "vv": "0.11"})
    text = plain(" ".join(warnings(at)))
    assert "block_size 7" in text and "vLLM refuses --block-size 7: its command line takes only 1, 8, 16, 32, 64, " \
                                      "128 (vllm 0.10.2 wheel)" in text and "The plan uses it as asked" in text
    at = run_app({"v": "1", "bs": "7"}, "pages/paging.py")  # the newest vLLM: the flag takes 7, FlashAttention not
    assert "No common block size for 7" in plain(" ".join(warnings(at)))
    assert any("explores the paging here" in c.value for c in at.caption)
    assert not any("block_size" in w for w in warnings(run_app({"v": "1", "bs": "32"})))
    assert not any("block_size" in w for w in warnings(run_app({"v": "1", "bs": "7", "e": "sglang"})))
