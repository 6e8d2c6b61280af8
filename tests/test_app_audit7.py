"""The seventh UI audit's findings (qa7, 2026-12-02), each fixed and asserted on the figures the Budget draws.

* Budget's "past max_position_embeddings" label sat inside the plot's top, on the lines (Qwen3.5-27B's step line of
  whole sequences, 40 at 2k-8k tokens, ran through it; a rising memory curve's last points too): it now sits above
  the plot area, in a top margin 24 px taller than the other charts', under the title.
* DeepSeek-V3 on 8 x H200: the memory chart's last tick, the fit limit 663,840 past the sweep, was cut at the chart's
  edge, and "160k" (163,840) 1.6x from "256k" overprinted: ticks are now at least 1.8x apart and the right margin
  holds the limit's label.
* 10,000,000 sequences of 100,000,000 tokens: the legend read "needed for 10000000 sequence(s)", the ticks "16,384k"
  (eight long labels, turned by plotly onto the axis title): now "10,000,000 sequences" and "16M"; the decode and
  GPUs captions count in words too, and GPUs says that a blank concurrency ("as many as fit") is ranked at one.
* The device line's label ("device 139.81 GiB", at the plot's left end) was drawn over a bar that crosses the line
  (DeepSeek-V4-Flash at TP 1 on Parallelism): the line is now named in the legend.
* At 1400 px (e2e, tests/e2e/test_audit7_1400.py): the labels and ticks, measured in Chromium.
"""

import math

from kvplan.presets import load_preset
from kvplan.web import cached, figures
from tests.app_util import figure, plain, run_app


def _past_max(fig: dict) -> list[dict]:
    return [a for a in fig["layout"].get("annotations", []) if a["text"].startswith(figures.PAST_MAX)]


def test_the_past_max_label_sits_above_the_plot_area():
    # Qwen3.5-27B: max_position_embeddings 262,144 = its max_model_len; the sweep runs to 4 x = 1,048,576
    at = run_app({"v": "1", "m": "qwen3.5-27b"})
    for key in ("budget.concurrency", "budget.context"):
        fig = figure(at, key)
        (label,) = _past_max(fig)
        assert label["text"] == "past max_position_embeddings (262,144)"
        # paper y = 1 is the plot area's top edge: anchored at its bottom, the label is wholly above it, where no
        # trace is drawn (it was yanchor "top": inside the plot, on the lines)
        assert (label["yref"], label["y"], label["yanchor"]) == ("paper", 1, "bottom"), key
        assert label["xanchor"] == "right" and math.isclose(label["x"], math.log10(1_048_576)), key
        assert fig["layout"]["margin"]["t"] == 74, key  # 50 + 24: room between the title and the plot
    # a chart without the band keeps the usual margin: Llama-3.1-8B at 32,768 sweeps to 131,072 = its maximum (its
    # memory chart runs on to the fit limit, 454,592: a band there)
    fig = figure(run_app({"v": "1", "m": "llama-3.1-8b", "len": "32768"}), "budget.concurrency")
    assert not _past_max(fig) and fig["layout"]["margin"] == {"l": 10, "r": 10, "t": 50, "b": 10}


def test_context_ticks_keep_apart_and_the_limit_tick_has_room():
    # DeepSeek-V3 on 8 x H200 (vLLM 0.33): one request fits up to 645,216 tokens ((40,327 - 1 null) x 16; 667,840 =
    # 41,740 x 16 on 0.32: 0.33.0's V2 sampler pass, 1,024 x 129,280 x 14 + 1 MiB + 8,192 x 7,168 x 2 + the held
    # 1,879,048,192 MoE workspace = 3,850,895,360 B of peak vs 2,261,254,144, 1,414 blocks of 1,124,352 B less); the
    # sweep is 512 .. 655,360 (4 x 163,840), the limit inside it now.
    # Before: 163,840 and 262,144 (1.6x apart: "160k" on "256k") both ticked, and the limit's label cut at the edge
    fig = figure(run_app({"v": "1", "m": "deepseek-v3", "tp": "8", "g": "H200"}), "budget.context")
    axis = fig["layout"]["xaxis"]
    assert axis["tickvals"] == [512, 2048, 8192, 32768, 163_840, 645_216]
    assert axis["ticktext"] == ["512", "2k", "8k", "32k", "160k", "645,216"]
    assert fig["layout"]["margin"]["r"] == figures.LIMIT_TICK_MARGIN == 40
    assert fig["layout"]["margin"]["t"] == 74  # the band past 163,840 is labelled above the plot as well


def test_tick_values_are_never_closer_than_the_ratio():
    for max_len in (1_000, 8_192, 32_768, 131_072, 163_840, 200_000, 3_000_000):
        ticks = figures.tick_values(cached.sweep_lengths(max_len))
        assert all(b / a >= figures.TICK_RATIO for a, b in zip(ticks, ticks[1:])), (max_len, ticks)
    # 512 stays beside a max_model_len of 1,000 (1.95x): the sweep's first point keeps its label
    assert figures.tick_values(cached.sweep_lengths(1_000)) == [512, 1_000, 2_048]


def test_absurd_counts_read_with_separators_and_short_ticks():
    # 10,000,000 sequences of 100,000,000 tokens on one H100: the legend read "needed for 10000000 sequence(s)" and the
    # ticks "2,048k", "16,384k" (eight long labels: plotly turned them all onto the axis title)
    at = run_app({"v": "1", "m": "llama-3.1-8b", "len": "100000000", "conc": "10000000"})
    fig = figure(at, "budget.context")
    assert fig["data"][0]["name"] == "needed for 10,000,000 sequences"
    # 2,097,152 = 2 x 1024 x 1024 -> "2M"; the max_model_len itself stays exact. 16,777,216 ("16M") is left out: the
    # sweep spans 512 .. 268,435,456 = 5.72 decades, ~56.7 px a decade in 330 px, so 16M sits 0.776 decade = 44 px
    # from 100,000,000, less than the (3 + 11) / 2 x 7 + 4 = 53 px their labels need
    axis = fig["layout"]["xaxis"]
    assert axis["ticktext"] == ["512", "4k", "32k", "256k", "2M", "100,000,000"] and axis["tickangle"] == 0
    assert figures.sequences(1) == "1 sequence" and figures.sequences(3) == "3 sequences"


def test_decode_and_gpus_captions_count_sequences_in_words():
    at = run_app({"v": "1", "m": "llama-3.1-8b"})  # 3 sequences of 131,072 fit on one H100 (the Budget's verdict)
    assert "At 3 sequences of 131,072 tokens." in [c.value for c in at.caption]
    # GPUs: a blank concurrency ("as many as fit" in the sidebar) is ranked at one sequence, and the caption says why
    at.switch_page("pages/gpus.py").run()
    said = next(plain(c.value) for c in at.caption if c.value.startswith("Serving"))
    assert said == ("Serving 1 sequence of 131,072 tokens (llama-3.1-8b, vLLM 0.33): the sidebar's concurrency is blank "
                    "('as many as fit'), so the GPUs are ranked at one sequence. Set the context and concurrency in the "
                    "sidebar."), said
    four = run_app({"v": "1", "m": "llama-3.1-8b", "conc": "4"}, "pages/gpus.py")
    said = next(plain(c.value) for c in four.caption if c.value.startswith("Serving"))
    assert said == ("Serving 4 sequences of 131,072 tokens (llama-3.1-8b, vLLM 0.33). Set the context and concurrency "
                    "in the sidebar."), said
    assert any("with 4 sequences of 131,072 tokens running" in m.value for m in four.markdown)


def test_the_device_line_is_named_in_the_legend_not_on_the_bars():
    # DeepSeek-V4-Flash on H200s, Parallelism: TP 1's bar (144.94 GiB of weights) crosses the 139.81 GiB device line,
    # and the line's label, at the plot's left end, was drawn over that bar
    at = run_app({"v": "1", "m": "deepseek-v4-flash", "tp": "4", "g": "H200"}, "pages/parallelism.py")
    fig = figure(at, "parallel.ranks")
    assert not fig["layout"].get("annotations")  # nothing written inside the plot
    (shape,) = fig["layout"]["shapes"]
    # the H200 measured at 150,119,844,413 B = 139.81 GiB
    assert math.isclose(shape["y0"], 150_119_844_413 / 2**30) and shape["line"]["dash"] == "dash"
    (key,) = [t for t in fig["data"] if t["name"] == "device 139.81 GiB"]
    assert key["mode"] == "lines" and key["line"] == shape["line"] and key["x"] == [None]  # a legend entry, no points
    # the Budget's two memory charts name it the same way
    budget = run_app({"v": "1", "m": "deepseek-v4-flash", "tp": "4", "g": "H200"})
    for name in ("budget.ranks", "budget.context"):
        f = figure(budget, name)
        assert "device 139.81 GiB" in [t["name"] for t in f["data"]], name
        assert not any(a["text"].startswith("device") for a in f["layout"].get("annotations", [])), name


def test_sglang_plans_say_page_size_not_block_size():
    # QA walk: an SGLang plan's caption read "block size 1"; SGLang calls it --page-size
    from kvplan import load_preset
    from kvplan.engines import EngineConfig
    from kvplan.gpus import get_gpu
    from kvplan.plan import plan
    from kvplan.web import views

    p = plan(load_preset("llama-3.1-8b"), get_gpu("H100-SXM"), EngineConfig(engine="sglang", max_model_len=8192))
    assert views.plan_caption(p).endswith("context 8,192 tokens, page size 1")
    v = plan(load_preset("llama-3.1-8b"), get_gpu("H100-SXM"), EngineConfig(max_model_len=8192))
    assert views.plan_caption(v).endswith("context 8,192 tokens, block size 16")


def test_share_url_puts_a_slash_before_the_query_on_the_root_page(monkeypatch):
    # QA walk: the root page's link read "http://host:8577?v=1&..." (st.context.url has no path there)
    import streamlit as st

    from kvplan.web import widgets

    class Ctx:
        url = "http://host:8577"

    monkeypatch.setattr(st, "context", Ctx())
    assert widgets.share_url({"v": "1", "m": "llama-3.1-8b"}) == "http://host:8577/?v=1&m=llama-3.1-8b"
    Ctx.url = "http://host:8577/gpus"
    assert widgets.share_url({"v": "1"}, "gpus") == "http://host:8577/gpus?v=1"
    # the root runs Budget: its link opens /budget (issue 12: /budget was "Page not found"), under any base path
    Ctx.url = "http://host:8577/kv"
    assert widgets.share_url({"v": "1"}, "", "budget") == "http://host:8577/kv/budget?v=1"
    Ctx.url = "http://host:8577/kv/budget"
    assert widgets.share_url({"v": "1"}, "budget") == "http://host:8577/kv/budget?v=1"


def test_a_power_of_two_context_keeps_its_own_tick():
    # QA walk: at max_model_len 262,144 the thinning kept 128k and 512k around it and left the plan's own length
    # unlabelled; passed as ``keep`` it is labelled and its touching neighbours go (128k / 512k at 2x would collide)
    x = cached.sweep_lengths(262_144)
    assert figures.tick_values(x) == [512, 2048, 8192, 32768, 131072, 524288]
    assert figures.tick_values(x, [262_144]) == [512, 2048, 8192, 32768, 262_144]
    # (1M then kept 2M beside it, 24.8 px apart: dropped since issue 12, test_context_ticks_keep_a_minimum_spacing)
    assert figures.tick_values(cached.sweep_lengths(1_048_576), [1_048_576])[-2:] == [131_072, 1_048_576]
    # a length that is not a power of two was always kept: unchanged
    assert figures.tick_values(cached.sweep_lengths(200_000), [200_000]) == figures.tick_values(
        cached.sweep_lengths(200_000))
    at = run_app({"v": "1", "m": "llama-3.1-8b", "len": "262144"})
    assert 262_144 in figure(at, "budget.context")["layout"]["xaxis"]["tickvals"]
    assert 262_144 in figure(at, "budget.concurrency")["layout"]["xaxis"]["tickvals"]


def _gaps_px(ticks, x, plot_px=figures.PLOT_PX):
    """Distances between neighbouring tick centres, px, on a log axis over the sweep x (0.05 decade each side)."""
    per_decade = plot_px / (math.log10(max(x) / min(x)) + 0.1)
    return [round(math.log10(b / a) * per_decade, 1) for a, b in zip(ticks, ticks[1:])]


def test_context_ticks_keep_a_minimum_spacing():
    # issue 12 QA: GLM-5.3's context chart (max_position_embeddings 1,048,576) ticked 1M and 2M ~26 px apart at
    # 1400 x 1000. Its sweep is 512 .. 4,194,304 (4 x 1M): log10(8192) + 0.1 = 4.013 decades in the 330 px a
    # half-page chart has, 82.2 px a decade; 2x = 0.301 decade = 24.8 px, under MIN_TICK_PX (36); every other power
    # of two (4x) is 49.5 px
    glm = load_preset("glm-5.3").max_position_embeddings
    assert glm == 1_048_576
    x = cached.sweep_lengths(glm)
    ticks = figures.tick_values(x, [glm])
    assert ticks == [512, 2048, 8192, 32768, 131_072, 1_048_576]  # 2M (and 512k) gone; the model's own 1M kept
    assert _gaps_px(ticks, x) == [49.5, 49.5, 49.5, 49.5, 74.3]
    # a plot 500 px wide (124.6 px a decade) has room for 2x steps near the end: 37.5 px >= 36
    wide = figures.tick_values(x, [glm], plot_px=500)
    assert wide[-3:] == [524_288, 1_048_576, 2_097_152] and min(_gaps_px(wide, x, 500)) == 37.5
    # a 131,072-token model (Llama-3.1-8B): sweep 512 .. 524,288, 3.11 decades, 106.1 px a decade; 4x = 63.9 px
    llama = load_preset("llama-3.1-8b").max_position_embeddings
    assert llama == 131_072
    x = cached.sweep_lengths(llama)
    ticks = figures.tick_values(x, [llama])
    assert ticks == [512, 2048, 8192, 32768, 131_072, 524_288]
    assert _gaps_px(ticks, x) == [63.9] * 5
    for max_len in (1_000, 8_192, 32_768, 131_072, 163_840, 200_000, 1_048_576, 3_000_000):
        x = cached.sweep_lengths(max_len)
        for keep in ((), (max_len,)):
            gaps = _gaps_px(figures.tick_values(x, keep), x)
            assert min(gaps) >= figures.MIN_TICK_PX, (max_len, keep, gaps)
    at = run_app({"v": "1", "m": "glm-5.3", "g": "H200", "tp": "8"})
    assert figure(at, "budget.context")["layout"]["xaxis"]["ticktext"][-2:] == ["128k", "1M"]
