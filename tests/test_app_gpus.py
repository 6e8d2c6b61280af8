"""GPUs page: ranked by the chosen objective among layouts that keep the headroom floor; default prices with
sources in the table and the link; the cost vs tokens/s chart with its Pareto frontier.

The table, chart and rejections are kvplan.picker's (checked against it here); the objective order itself
is derived by hand on a three-GPU catalog in tests/test_picker_objectives.py, and checked here through
the page on the same catalog.
"""

import json

import pytest

from kvplan.engines import EngineConfig
from kvplan.picker import OBJECTIVES, best_per_gpu, pareto_front, pick_gpus
from kvplan.presets import load_preset
from kvplan.web import gpus_view
from tests.app_util import figure, html_tables, plain, run_app, values
from tests.test_picker_objectives import EXPECTED, PRICES, THREE

PAGE = "pages/gpus.py"
LINK = {"v": "1", "m": "qwen3-8b", "len": "8192", "conc": "64"}
SMALL = {"v": "1", "m": "qwen3-8b", "len": "8192", "conc": "1"}


@pytest.fixture
def three_gpus(monkeypatch):
    """The page sweeps the hand-built catalog A, B, C at $0.60, $2.00, $0.50 per GPU-hour."""
    monkeypatch.setattr(gpus_view, "catalog", lambda: tuple(THREE))
    monkeypatch.setattr(gpus_view, "base_prices", lambda: dict(PRICES))


def _table(at):
    return at.dataframe[0].value


@pytest.mark.parametrize("objective", list(EXPECTED))
def test_order_follows_the_chosen_objective(three_gpus, objective):
    # Qwen3-8B, one 8k sequence, compute set so high that decode is memory-bound: tokens/s ~ bandwidth x TP.
    # A: 1 TB/s, $0.60 -> 1u, $/M ~ 0.60.  B: 8 TB/s, $2.00 -> 8u, $/M ~ 0.25.
    # C: 12 GiB, too small alone: TP2 at 3 TB/s, 2 x $0.50 = $1.00/h -> 6u, $/M ~ 0.17.
    # So $/M: C, B, A; $/h: A, C, B; fewest GPUs: A and B (1) tie, broken by $/M: B, A, then C; tokens/s: B, C, A.
    # (In full, with the numbers checked against the picker: tests/test_picker_objectives.py.)
    at = run_app(SMALL, PAGE)
    if objective != "cost_per_million_tokens":
        at.selectbox(key="w.objective").set_value(objective).run()
        assert at.query_params["obj"] == objective
    assert list(_table(at)["GPU"]) == EXPECTED[objective]
    rule = plain(next(m.value for m in at.markdown if m.value.startswith("Ranked by")))
    assert "10%" in rule and "single-node" in rule and OBJECTIVES[objective] in rule
    callouts = next(plain(m.value) for m in at.markdown if plain(m.value).startswith("- #1 ")).split("\n")
    assert [line.split()[2] for line in callouts] == EXPECTED[objective]  # '- #1 C TP2 PP1 (2 GPUs): ...'
    assert OBJECTIVES[objective] in callouts[0]


def test_headroom_floor_removes_an_option(three_gpus):
    at = run_app(SMALL, PAGE)
    assert "C" in list(_table(at)["GPU"])
    at.number_input(key="w.headroom_floor").set_value(20).run()  # C TP2 keeps only 17.7 % free
    assert at.query_params["hf"] == "0.2"
    assert list(_table(at)["GPU"]) == ["B", "A"]
    at.session_state["gpus.rejected"] = True
    at.run()
    rejected = html_tables(at)[-1]  # an HTML table: its reasons wrap, never cut at a column edge
    assert any(r["GPU"] == "C" and "20% headroom floor" in r["why not"] for r in rejected)


def test_default_prices_appear_and_survive_a_link_round_trip():
    at = run_app(LINK, PAGE)
    table = _table(at)
    assert table["$ / M tokens"].notna().all() and table["$ / hour"].notna().all()  # no 'None' cells
    h100 = table[table["GPU"] == "H100-SXM"].iloc[0]
    assert (h100["$ / GPU-hour"], h100["price"]) == (3.99, "listed 2026-11-09")
    at.text_input(key="w.prices").set_value("H100-SXM: 2.5").run()
    link = dict(at.query_params)
    assert link["pr"] == ["H100-SXM:2.5"] or link["pr"] == "H100-SXM:2.5"
    again = run_app({k: v[-1] if isinstance(v, list) else v for k, v in link.items()}, PAGE)
    table = _table(again)
    h100 = table[table["GPU"] == "H100-SXM"].iloc[0]
    h200 = table[table["GPU"] == "H200"].iloc[0]
    assert (h100["$ / GPU-hour"], h100["price"]) == (2.5, "yours")
    assert (h200["$ / GPU-hour"], h200["price"]) == (4.59, "listed 2026-10-07")  # the default, untouched
    assert again.text_input(key="w.prices").value == "H100-SXM:2.5"


def test_table_and_chart_match_kvplan():
    at = run_app(LINK, PAGE)
    picker = pick_gpus(load_preset("qwen3-8b"), 8192, 64, EngineConfig())
    best = best_per_gpu(picker.options)
    table = _table(at)
    assert list(table["GPU"]) == [o.gpu for o in best] and list(table["layout"]) == [o.layout for o in best]
    assert table["$ / M tokens"].iloc[0] == pytest.approx(best[0].cost_per_million_tokens)
    assert len(at.dataframe) == 1  # the rejections are built only when their expander is opened
    at.toggle(key=gpus_view.ALL_LAYOUTS).set_value(True).run()
    assert len(_table(at)) == len(picker.options)
    chart = figure(at, "gpus.chart")
    names = [t["name"] for t in chart["data"]]
    assert names == ["layouts", "Pareto frontier", "top three"]  # one trace of points, not a colour per GPU
    layouts, front = chart["data"][0], chart["data"][1]
    assert len(values(layouts["x"])) == len(picker.options)
    expected = pareto_front(picker.options)
    assert values(front["x"]) == pytest.approx([o.tokens_per_s for o in expected])
    assert values(front["y"]) == pytest.approx([o.cost_per_hour for o in expected])
    assert chart["layout"]["yaxis"]["title"]["text"] == "$ per hour (all GPUs)"
    assert all("TP" in t for t in layouts["text"])  # every point's layout on hover


def test_multi_node_switch_and_gpus_objective_change_the_chart():
    at = run_app(LINK, PAGE)
    n_single = len(pick_gpus(load_preset("qwen3-8b"), 8192, 64, EngineConfig()).options)
    at.toggle(key="w.multi_node").set_value(True).run()
    assert at.query_params["multi"] == "1"
    at.selectbox(key="w.objective").set_value("gpus").run()
    assert figure(at, "gpus.chart")["layout"]["yaxis"]["title"]["text"] == "GPUs"
    multi = pick_gpus(load_preset("qwen3-8b"), 8192, 64, EngineConfig(), multi_node=True, objective="gpus")
    assert len(multi.options) > n_single
    assert _table(at)["GPUs"].is_monotonic_increasing


def test_bad_prices_are_an_error_not_a_change():
    at = run_app(LINK, PAGE)
    at.text_input(key="w.prices").set_value("H100-SXM: cheap").run()
    assert at.error and "pr" not in at.query_params


def test_pareto_figure_is_valid_plotly():
    import plotly.graph_objects as go

    picker = pick_gpus(load_preset("qwen3-8b"), 8192, 4, EngineConfig())
    for objective in ("cost_per_million_tokens", "gpus"):
        fig = gpus_view.pareto_figure(picker.options, objective, picker.options[:3])
        checked = go.Figure(fig.to_dict())  # validation on: a misspelt property or a bad value raises
        assert json.loads(checked.to_json()) == json.loads(fig.to_json())


def test_your_own_gpu_joins_the_ranking_and_the_link():
    # An RTX 4070 Ti SUPER is in the catalog now; a card that is not is typed in: 15.7 GiB, 0.672 TB/s,
    # 88.2 TFLOPS at $0.10/h. Qwen3-8B's 16.4 GB of weights need two of them (TP2 within the 8-GPU node).
    at = run_app({**LINK, "conc": "1"}, PAGE)
    at.session_state[gpus_view.CUSTOM] = True
    at.run()
    for i, v in enumerate((15.7, 0.672, 88.2, 0.1)):
        at.number_input(key=f"w.custom_gpu.{i}").set_value(v)
    at.toggle(key="w.custom_gpu.on").set_value(True).run()
    assert at.query_params["cg"] == "15.7:0.672:88.2:0.1"
    mine = _table(at)[_table(at)["GPU"] == "your-GPU"].iloc[0]
    assert (mine["layout"], mine["GPUs"], mine["$ / hour"], mine["price"]) == ("TP2 PP1", 2, 0.2, "yours")
    again = run_app({**LINK, "conc": "1", "cg": "15.7:0.672:88.2:0.1"}, PAGE)
    assert "your-GPU" in list(_table(again)["GPU"])
    bad = run_app({**LINK, "cg": "15.7:0.672:88.2"}, PAGE)
    assert "your-GPU" not in list(_table(bad)["GPU"])
    assert any("'cg'" in w.value for w in bad.warning)


def test_a_linked_floor_is_kept_exactly():
    at = run_app({**LINK, "hf": "0.125"}, PAGE)  # 12.5 %: the box must not round it to 12 or 13
    assert at.number_input(key="w.headroom_floor").value == 12.5
    assert at.query_params["hf"] == "0.125"
    assert "at least **12.5%** of every GPU" in plain(next(m.value for m in at.markdown if m.value.startswith("Ranked by")))


def test_a_model_no_node_holds_leads_with_multi_node():
    # issue 12 QA: Qwen3.8-2.4T's warning listed "lower the floor, shorten the context, use fp8 KV" before the one fix
    # that works. 2,419,804,697,984 parameters x 2 B (bf16) = 4,839,609,395,968 B = 4,507 GiB of weights; the largest
    # node of the catalog, 8 x MI355X at 287.98 GiB, holds 2,304 GiB: no single-node layout. Across nodes 32 GPUs
    # (TP8 PP4, 4 nodes of 8) of MI300X, MI325X, MI355X and B300 serve it: 16 of the largest hold 4,608 GiB, under
    # the weights plus the 10 % floor.
    link = {"v": "1", "m": "qwen3.8-2.4t-a95b"}
    at = run_app(link, PAGE)
    said = plain(at.warning[0].value)  # the first warning on the page
    assert said.startswith("**Needs more than one node**: no single-node layout serves this load and multi-node "
                           "layouts are off."), said
    assert "4 layouts across nodes serve it" in said and "(32 GPUs on 4 nodes)" in said, said
    assert not at.dataframe  # nothing ranked
    at = run_app({**link, "multi": "1"}, PAGE)  # the switch on: ranked, no warning
    assert not [w for w in at.warning if "node" in w.value]
    assert len(_table(at)) == 4 and set(_table(at)["GPUs"]) == {32}


def test_the_no_layout_text_when_nodes_do_not_help():
    empty = pick_gpus(load_preset("qwen3.8-2.4t-a95b"), 262_144, 1, EngineConfig(), gpus=[THREE[0]])
    assert not empty.options and not empty.multi_node
    wider = pick_gpus(load_preset("qwen3.8-2.4t-a95b"), 262_144, 1, EngineConfig(), gpus=[THREE[0]], multi_node=True)
    assert not wider.options
    assert gpus_view.no_layout_text(empty, wider).startswith("**Multi-node layouts are off**, and turning them on "
                                                             "would not help")
    assert gpus_view.no_layout_text(wider).startswith("No layout serves this load while keeping the headroom floor, "
                                                      "even across nodes")


def test_the_sidebars_own_layout_says_why_it_is_not_ranked():
    # gpt-oss-120b on one H100 at its 131,072-token maximum fits on Budget at vLLM 0.32 (1 sequence, 1.05x) but keeps
    # under 10 % of the device free: the picker rejects it for the headroom floor, and the page says so above the
    # ranking (on 0.33 it does not fit at all, 0.72x: 0.33.0's V2 sampler pass, tests/test_vllm_v2_sampler_033.py)
    at = run_app({"v": "1", "m": "gpt-oss-120b", "vv": "0.32"}, PAGE)
    own = [plain(i.value) for i in at.info if "Your sidebar" in i.value]
    assert len(own) == 1 and own[0].startswith("**Your sidebar's layout, H100-SXM TP1 PP1, is not ranked**: "), own
    assert own[0].endswith("free on the tightest rank, under the 10% headroom floor."), own
    # a layout that is ranked gets no such line
    ranked = run_app({"v": "1", "m": "llama-3.1-8b", "len": "8192", "conc": "4"}, PAGE)
    assert not [i for i in ranked.info if "Your sidebar" in i.value]
