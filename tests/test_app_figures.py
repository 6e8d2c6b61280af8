"""kvplan.web.figures and formulas: pure functions of kvplan results, checked against those results."""

import pytest

from kvplan.plan import SweepPoint
from kvplan.web import figures, formulas
from tests.app_util import kvplan_plan


@pytest.mark.parametrize("engine", ["vllm", "sglang", "custom"])
def test_rank_segments_fill_the_device_exactly_when_it_fits(engine):
    p = kvplan_plan("llama-3.1-70b", tp=4, concurrency=8, max_model_len=32768, engine=engine)
    assert p.fits
    rank = p.ranks[0]
    segs = figures.rank_segments(p, rank)
    assert segs["not planned"] == 0
    assert sum(segs.values()) == rank.device_bytes
    assert segs["KV in use"] + segs["free KV"] == rank.kv_pool_bytes
    assert segs["weights"] == rank.weights_bytes


def test_fixed_kv_pool_leaves_memory_not_planned():
    p = kvplan_plan("llama-3.1-8b", kv_cache_memory_bytes=4 * 2**30)
    segs = figures.rank_segments(p, p.ranks[0])
    assert segs["KV in use"] + segs["free KV"] == 4 * 2**30 and segs["not planned"] > 0


def test_overcommitted_kv_crosses_the_device_line():
    p = kvplan_plan("llama-3.1-8b", concurrency=500, max_model_len=32768)
    assert not p.fits
    segs = figures.rank_segments(p, p.ranks[0])
    assert sum(segs.values()) > p.ranks[0].device_bytes and segs["free KV"] == 0


def test_fit_limit_marks_the_crossing():
    pts = [SweepPoint(context=c, max_concurrency=1.0, max_num_seqs=1, kv_bytes_in_use=0, kv_pool_bytes=1, fits=f)
           for c, f in ((1024, True), (2048, True), (4096, False))]
    assert figures.fit_limit(pts) == (2048, 4096)
    assert figures.fit_limit(pts[:2]) is None
    fig = figures.memory_vs_context(pts, 10, 4).to_dict()
    assert fig["data"][1]["name"] == "fits at 2,048, not at 4,096 tokens"
    exact = figures.memory_vs_context(pts, 10, 1, exact_limit=3000).to_dict()
    assert list(exact["data"][1]["x"]) == [3000, 3000]


def test_formulas_carry_the_plans_numbers():
    p = kvplan_plan("llama-3.1-70b", tp=4)
    text = " ".join(latex for _, latex in formulas.budget_formulas(p))
    for n in (p.num_blocks, p.blocks_per_request, p.kv_cache_tokens, p.ranks[0].bytes_per_block):
        assert f"{n:,}".replace(",", "{,}") in text
