"""Budget page: the numbers shown are kvplan's, widgets move them, the charts carry them."""

import pytest

from kvplan.web.views import esc
from tests.app_util import LINK_70B, figure, gib, kvplan_plan, metrics, run_app, state, values


def test_default_render_matches_kvplan():
    at = run_app()
    p = kvplan_plan("llama-3.1-8b")
    m = metrics(at)
    assert m["KV blocks"] == f"{p.num_blocks:,}"
    assert m["KV cache tokens"] == f"{p.kv_cache_tokens:,}"
    assert m["Max concurrency"] == f"{p.max_concurrency:.2f}x"
    assert m["Verdict"] == "fits"
    assert at.title[0].value == "Budget"
    assert dict(at.query_params) == {}  # the default plan writes nothing into the link


def test_link_reproduces_a_non_default_plan_and_its_charts():
    at = run_app(LINK_70B)
    p = kvplan_plan("llama-3.1-70b", tp=4, concurrency=16, max_model_len=32768, kv_cache_dtype="fp8")
    m = metrics(at)
    assert (m["KV blocks"], m["KV cache tokens"]) == (f"{p.num_blocks:,}", f"{p.kv_cache_tokens:,}")
    ranks = figure(at, "budget.ranks")
    by_name = {t["name"]: values(t["y"])[0] for t in ranks["data"]}
    rank = p.ranks[0]
    assert by_name["weights"] == pytest.approx(gib(rank.weights_bytes))
    # KV in use = 16 sequences x blocks per request x bytes per block
    assert by_name["KV in use"] == pytest.approx(gib(16 * p.blocks_per_request * rank.bytes_per_block))
    assert ranks["layout"]["shapes"][0]["y0"] == pytest.approx(gib(rank.device_bytes))
    assert "16 x 32,768 tokens" in ranks["layout"]["title"]["text"]
    context = figure(at, "budget.context")
    assert 32768 in values(context["data"][0]["x"])
    maths = [m.value for m in at.markdown if "$$" in m.value]  # the formulas, one Markdown block
    assert len(maths) == 1 and f"{p.num_blocks:,}".replace(",", "{,}") in maths[0]


def test_widget_change_moves_numbers_and_link():
    at = run_app(LINK_70B)
    before = metrics(at)["KV blocks"]
    at.number_input(key="w.tensor_parallel_size").set_value(8).run()
    p = kvplan_plan("llama-3.1-70b", tp=8, concurrency=16, max_model_len=32768, kv_cache_dtype="fp8")
    assert metrics(at)["KV blocks"] == f"{p.num_blocks:,}" != before
    assert at.query_params["tp"] == "8"
    at.selectbox(key="w.kv_cache_dtype").select("auto").run()
    assert "kvd" not in at.query_params  # back to the default: not written
    assert state(at).kv_cache_dtype == "auto"


def test_does_not_fit_shows_verdict_and_fixes():
    at = run_app({"v": "1", "m": "llama-3.1-70b"})
    p = kvplan_plan("llama-3.1-70b")
    assert not p.fits
    # 131.45 GiB of bf16 weights on one 79.19 GiB H100: the verdict opens "Does not load", and so does the metric
    assert metrics(at)["Verdict"] == "does not load" and p.verdict.startswith("Does not load")
    assert any(p.verdict.split(":")[0] in e.value for e in at.error)
    text = " ".join(md.value for md in at.markdown)
    assert all(esc(s) in text for s in p.suggestions)


def test_refused_layout_is_an_error_not_an_exception():
    at = run_app({"v": "1", "m": "llama-3.1-8b", "tp": "3"})
    assert any(esc("tensor_parallel_size") in e.value and "3" in e.value for e in at.error)


def test_cached_results_are_shared_frozen_objects():
    """kvplan.web.cached hands every caller the same result object (no per-call copy): safe only
    because the results are frozen, which this checks too."""
    from pydantic import ValidationError

    from kvplan.web import cached
    from kvplan.web.state import decode

    s = decode(LINK_70B)[0]
    p = cached.plan_for(s)
    assert cached.plan_for(s.model_copy(update={"prices": (("H100-SXM", 2.0),)})) is p  # prices do not plan
    assert p == kvplan_plan("llama-3.1-70b", tp=4, concurrency=16, max_model_len=32768, kv_cache_dtype="fp8")
    picker = cached.picker_for(s, 32768, 16)
    assert cached.picker_for(s, 32768, 16) is picker and cached.spec(s) is cached.spec(s)
    for frozen in (p, p.ranks[0], picker, picker.options[0], cached.spec(s)):
        assert type(frozen).model_config.get("frozen"), type(frozen).__name__
        with pytest.raises(ValidationError):
            setattr(frozen, next(iter(type(frozen).model_fields)), None)
