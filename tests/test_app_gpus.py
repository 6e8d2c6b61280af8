"""GPUs page: the picker's options (sortable table + chart) and rejections are kvplan.picker's."""

import pytest

from kvplan.engines import EngineConfig
from kvplan.picker import pick_gpus
from kvplan.presets import load_preset
from tests.app_util import figure, run_app

PAGE = "pages/gpus.py"
LINK = {"v": "1", "m": "qwen3-8b", "len": "8192", "conc": "64"}


def test_options_and_rejections_match_kvplan():
    at = run_app(LINK, PAGE)
    picker = pick_gpus(load_preset("qwen3-8b"), 8192, 64, EngineConfig())
    assert len(at.dataframe) == 1  # the rejections are built only when their expander is opened
    at.session_state["gpus.rejected"] = True
    at.run()
    options, rejected = at.dataframe[0].value, at.dataframe[1].value
    assert len(options) == len(picker.options) and len(rejected) == len(picker.rejected)
    first = options.iloc[0]
    best = picker.options[0]
    assert (first["GPU"], first["TP"], first["replicas"], first["GPUs"]) == (
        best.gpu, best.tensor_parallel_size, best.replicas, best.num_gpus)
    assert first["max concurrency per replica"] == pytest.approx(best.max_concurrency)
    chart = figure(at, "gpus.chart")
    assert chart["layout"]["yaxis"]["title"]["text"] == "GPUs"


def test_prices_rank_by_cost():
    at = run_app(LINK, PAGE)
    at.text_input(key="w.prices").set_value("H100-SXM: 2.5, H200: 3.5, L40S: 1").run()
    assert at.query_params["pr"] == "H100-SXM:2.5,H200:3.5,L40S:1"
    prices = {"H100-SXM": 2.5, "H200": 3.5, "L40S": 1.0}
    picker = pick_gpus(load_preset("qwen3-8b"), 8192, 64, EngineConfig(), prices)
    first = at.dataframe[0].value.iloc[0]
    best = picker.options[0]
    assert (first["GPU"], first["$ per hour"]) == (best.gpu, pytest.approx(best.cost_per_hour))
    assert figure(at, "gpus.chart")["layout"]["yaxis"]["title"]["text"] == "$ per hour"


def test_bad_prices_are_an_error_not_a_change():
    at = run_app(LINK, PAGE)
    at.text_input(key="w.prices").set_value("H100-SXM: cheap").run()
    assert at.error and "pr" not in at.query_params
