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


def _every_figure():
    """Each figure kvplan.web.figures makes, from real kvplan results (name, figure)."""
    from kvplan.engines import EngineConfig
    from kvplan.gpus import get_gpu
    from kvplan.params import count_params
    from kvplan.paging import block_map, page_sequences, waste_by_block_size
    from kvplan.parallel import Layout
    from kvplan.plan import context_sweep
    from kvplan.presets import load_preset
    from kvplan.weights import weight_bytes

    spec = load_preset("llama-3.1-8b")
    p = kvplan_plan("llama-3.1-8b", concurrency=4, max_model_len=8192)
    sweep = context_sweep(spec, get_gpu("H100-SXM"), EngineConfig(), Layout(), [1024, 8192, 131072, 524288], 4)
    lengths = [5, 6, 8, 40]
    return [
        ("param_breakdown", figures.param_breakdown(count_params(spec), weight_bytes(spec))),
        ("rank_memory", figures.rank_memory(p)),
        ("rank_memory subtitle", figures.rank_memory(kvplan_plan("qwen3-32b"))),  # 40,960 tokens do not fit: 63 chars
        ("level", figures.level(figures.rank_memory(kvplan_plan("qwen3-32b")), figures.concurrency_vs_context(sweep,
                                                                                                            4))[1]),
        ("memory_vs_context", figures.memory_vs_context(sweep, p.ranks[0].device_bytes, 4)),
        ("memory_vs_context exact", figures.memory_vs_context(sweep, p.ranks[0].device_bytes, 1, exact_limit=9000)),
        ("concurrency_vs_context", figures.concurrency_vs_context(sweep, 4)),
        ("slots", figures.slots(page_sequences(lengths, 4, 4))),
        ("waste_by_block_size", figures.waste_by_block_size(waste_by_block_size(lengths), 16)),
        ("block_map", figures.block_map(block_map(lengths, 4, 4), 4, 1)),
        ("parallel_compare", figures.parallel_compare([kvplan_plan("llama-3.1-70b", tp=t) for t in (2, 4)])),
    ]


def test_every_figure_is_valid_plotly():
    """The figures skip plotly's validation at run time (it is most of their cost): here every one is
    rebuilt with validation on, so a misspelt property or a bad value fails this test, and the
    validated figure must equal the one the app sends."""
    import plotly.graph_objects as go

    for name, fig in _every_figure():
        sent = fig.to_dict()
        assert sent["data"], name
        checked = go.Figure(sent).to_dict()  # raises ValueError on any property plotly does not know
        assert checked == sent, name


def test_a_bad_property_fails_validation():
    """The negative control for the test above: validation is on and catches a misspelt property."""
    import plotly.graph_objects as go

    fig = figures.figure([figures._bar(x=[1], y=[2], markr=dict(color="red"))], "t")
    with pytest.raises(ValueError, match="markr"):
        go.Figure(fig.to_dict())


def test_memory_vs_context_counts_a_negative_pool_as_a_shortfall():
    # a 10 GiB device whose pool is -6 GiB (the weights alone 6 GiB past it) with 1 GiB of KV in use needs
    # 10 + 6 + 1 = 17 GiB; a pool of +3 GiB with 1 GiB in use needs 10 - 3 + 1 = 8 GiB
    G = 2**30
    pts = [SweepPoint(context=1024, max_concurrency=0.0, max_num_seqs=0, kv_bytes_in_use=G, kv_pool_bytes=-6 * G,
                      fits=False),
           SweepPoint(context=2048, max_concurrency=1.0, max_num_seqs=1, kv_bytes_in_use=G, kv_pool_bytes=3 * G,
                      fits=True)]
    fig = figures.memory_vs_context(pts, 10 * G, 1).to_dict()
    assert [round(v, 6) for v in fig["data"][0]["y"]] == [17.0, 8.0]


def test_sglangs_mamba_pool_is_its_own_segment():
    # Qwen3.5-27B on one H200, SGLang 0.5.21 at 32,768: the MambaPool (213 slots + 1 padding, 146.81 MiB each =
    # 32,944,029,696 B, tests/test_app_sglang_hybrid.py) is drawn as "recurrent states", not as workspace
    from kvplan import load_preset
    from kvplan.engines import EngineConfig
    from kvplan.gpus import get_gpu
    from kvplan.plan import plan

    p = plan(load_preset("qwen3.5-27b"), get_gpu("H200"), EngineConfig(engine="sglang", max_model_len=32768))
    segs = figures.rank_segments(p, p.ranks[0])
    assert segs["recurrent states"] == 32_944_029_696
    assert sum(segs.values()) == p.ranks[0].device_bytes  # still fills the device exactly
    assert "recurrent states" in [b["name"] for b in figures.rank_memory(p).to_dict()["data"]]


def test_gib_axes_never_write_billions():
    # plotly's default exponentformat "B" labels 1e9 on an axis "1B": on a GiB axis an absurd load (a million users)
    # would read as bytes; the memory charts' GiB axes print plain numbers with thousands separators
    p = kvplan_plan("llama-3.1-8b", concurrency=1_000_000, max_model_len=32768)
    y = figures.rank_memory(p).layout.yaxis
    assert y.exponentformat == "none" and y.separatethousands is True and y.title.text.startswith("GiB")


def test_level_gives_a_row_its_tallest_head():
    """Side by side, both charts take the taller top margin (their plot areas then start level; ui1203's Chromium
    test measures it): the subtitled Memory per GPU (50 + 24 = 74 px) beside a chart without band or subtitle (50)."""
    from kvplan.plan import SweepPoint

    ranks = figures.rank_memory(kvplan_plan("qwen3-32b"))  # "not one sequence of 40,960 tokens fits": a subtitle
    pts = [SweepPoint(context=c, max_concurrency=1.0, max_num_seqs=1, kv_bytes_in_use=0, kv_pool_bytes=1, fits=True)
           for c in (1024, 2048)]
    context = figures.memory_vs_context(pts, 10, 4)  # no model maximum: no band, the usual 50 px
    assert (ranks.to_dict()["layout"]["margin"]["t"], context.to_dict()["layout"]["margin"]["t"]) == (74, 50)
    a, b = figures.level(ranks, context)
    assert [f.to_dict()["layout"]["margin"] for f in (a, b)] == [{"l": 10, "r": 10, "t": 74, "b": 10}] * 2
    assert a.to_dict() == ranks.to_dict() and b.to_dict()["data"] == context.to_dict()["data"]
    assert context.to_dict()["layout"]["margin"]["t"] == 50  # the figure given is left as it was
    # both a subtitle and the band: 50 + 24 + 24
    assert figures.head_margin(subtitle=True, band=True)["t"] == 98 and figures.BAND_MARGIN["t"] == 74


def test_sglangs_pool_formula_with_many_terms_takes_two_lines():
    # Qwen3.5-27B with MTP on SGLang, H200: 7 terms after (device - context): more than 4, so the words and the numbers
    # each break after the 4th (ceil(7 / 2) = 4); on one line the formula was 1,209 px wide in a 940 px column
    p = kvplan_plan("qwen3.5-27b", engine="sglang", gpu="H200", speculative_method="mtp")
    pool = next(latex for title, latex in formulas.budget_formulas(p) if title.startswith("KV pool"))
    words, numbers = pool.split(r"\\ &= ")
    assert words.endswith(r"- \text{mm reserve}\\ &\quad - \text{Mamba pool} - \text{draft vocab copies} - "
                          r"\text{Mamba draft-token state reserve}")
    assert numbers.count(r"\\ &\quad") == 1 and numbers.split(r"\\ &\quad")[0].count(" - ") == 5  # context + 4
    # every term the plan subtracts is in it: device - context - the 7 = the pool, to the byte
    terms = {t.name: t.bytes for t in p.ranks[0].terms if t.applied}
    assert terms.pop("device memory") - sum(terms.values()) == p.ranks[0].kv_pool_bytes
    # 4 terms stay on one line (DeepSeek-V3 TP 8 with MTP: left free, weights, overhead, draft vocab copies)
    v3 = kvplan_plan("deepseek-v3", engine="sglang", gpu="H200", tp=8, speculative_method="mtp")
    assert r"\quad" not in next(latex for title, latex in formulas.budget_formulas(v3) if title.startswith("KV pool"))
