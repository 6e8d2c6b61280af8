"""Paging page: slots, waste and the block map are kvplan.paging's, and its widgets move them."""

from kvplan.paging import block_map, page_sequences, waste_by_block_size
from kvplan.web.state import PlanState, workload_lengths
from tests.app_util import figure, metrics, run_app, values

PAGE = "pages/paging.py"
DEFAULT = PlanState().lengths


def numbers(at) -> tuple[str, str, str, str]:
    m = metrics(at)
    return m["Blocks allocated"], m["Slots allocated"], m["Slots used"], m["Slots wasted"]


def expected(p) -> tuple[str, str, str, str]:
    return f"{p.allocated_blocks:,}", f"{p.allocated_slots:,}", f"{p.used_slots:,}", f"{p.wasted_slots:,}"


def test_default_matches_kvplan_at_the_engine_block_size():
    at = run_app(page=PAGE)
    assert numbers(at) == expected(page_sequences(DEFAULT, 16))
    waste = figure(at, "paging.waste")
    assert values(waste["data"][0]["customdata"]) == [p.wasted_slots for p in waste_by_block_size(DEFAULT)]


def test_block_size_and_prefix_widgets_move_the_numbers():
    at = run_app({"v": "1", "pl": "8,8,13"}, PAGE)
    assert numbers(at) == expected(page_sequences([8, 8, 13], 16))
    at.selectbox(key="w.block_size").select(8).run()
    at.number_input(key="w.shared_prefix").set_value(8).run()
    p = page_sequences([8, 8, 13], 8, 8)
    assert p.shared_blocks == 1 and numbers(at) == expected(p)
    assert at.query_params["bs"] == "8" and at.query_params["pfx"] == "8"
    drawn = figure(at, "paging.map")
    shared = next(t for t in drawn["data"] if t["name"] == "shared prefix block")
    assert len(values(shared["x"])) == 3  # the one shared block, drawn in each of the 3 rows
    own = next(t for t in drawn["data"] if t["name"] == "own block")
    assert block_map([8, 8, 13], 8, 8)[2] == [(0, 8), (1, 5)]
    assert values(own["x"]) == [5] and own["text"] == ["#1"] and values(own["base"]) == [8]


def test_lengths_text_and_uniform_draw():
    at = run_app(page=PAGE)
    at.text_input(key="w.lengths").set_value("5, 3, 8").run()
    at.selectbox(key="w.block_size").select(1).run()
    assert numbers(at) == expected(page_sequences([5, 3, 8], 1))
    at.text_input(key="w.lengths").set_value("5, x").run()  # a bad list: an error, the plan stays
    assert at.error and numbers(at) == expected(page_sequences([5, 3, 8], 1))
    at.radio(key="w.paging_mode").set_value("uniform").run()
    s = PlanState(paging_mode="uniform", block_size=1)
    assert numbers(at) == expected(page_sequences(workload_lengths(s), 1))
    assert metrics(at)["Sequences"] == "64"


def test_prefix_longer_than_a_sequence_is_an_error():
    at = run_app({"v": "1", "pl": "10,20", "pfx": "15"}, PAGE)
    assert any("shared\\_prefix" in e.value for e in at.error)


def test_lognormal_draw_from_a_link_renders_its_metrics():
    at = run_app({"v": "1", "pm": "lognormal", "pd": "300:64:8192:1"}, PAGE)
    drawn = workload_lengths(PlanState(paging_mode="lognormal", length_dist=(300, 64, 8192, 1)))
    assert numbers(at) == expected(page_sequences(drawn, 16))
    assert at.query_params["pm"] == "lognormal"
