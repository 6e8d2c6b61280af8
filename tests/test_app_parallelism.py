"""Parallelism page: layouts side by side with kvplan's per-rank numbers; replication explained."""

from tests.app_util import figure, gib, html_tables, kvplan_plan, plain, run_app

PAGE = "pages/parallelism.py"


def rows(at) -> dict[str, dict]:
    return {r["layout"]: r for r in html_tables(at)[0]}


def test_default_layouts_match_kvplan():
    at = run_app({"v": "1", "m": "llama-3.1-70b"}, PAGE)
    table = rows(at)
    assert list(table) == ["TP1 PP1 DP1", "TP2 PP1 DP1", "TP4 PP1 DP1", "TP8 PP1 DP1"]
    for tp in (1, 2, 4, 8):
        p = kvplan_plan("llama-3.1-70b", tp=tp)
        row = table[f"TP{tp} PP1 DP1"]
        # TP 1: 131.45 GiB of weights on one 79.19 GiB H100 does not even load
        assert row["fits"] == ("fits" if p.fits else "does not load" if tp == 1 else "does not fit")
        assert row["KV heads / GPU"] == f"{p.ranks[0].kv_heads}"
        if tp == 1:  # no pool is ever sized: no figure, not a measured "0" / "0.00x" (qa14)
            assert p.load_oom_rank is not None and p.num_blocks == 0
            assert (row["KV blocks"], row["max concurrency"], row["sequences, all replicas"]) == ("—", "—", "—")
            continue
        assert row["KV blocks"] == f"{p.num_blocks:,}"
        assert row["max concurrency"] == f"{p.max_concurrency:,.2f}x"
    bars = figure(at, "parallel.ranks")
    weights = next(t for t in bars["data"] if t["name"] == "weights")
    assert abs(list(weights["y"])[3] - gib(kvplan_plan("llama-3.1-70b", tp=8).ranks[0].weights_bytes)) < 1e-9


def test_choosing_layouts_moves_the_table_and_link():
    at = run_app(page=PAGE)
    at.multiselect(key="w.layouts").set_value(["1x2x1", "2x2x1"]).run()
    assert list(rows(at)) == ["TP1 PP2 DP1", "TP2 PP2 DP1"]
    assert at.query_params["lay"] == "1x2x1,2x2x1"
    assert len(figure(at, "parallel.ranks")["data"][0]["x"][0]) == 4  # 2 layouts x 2 stages


def test_mqa_replication_is_explained():
    at = run_app({"v": "1", "m": "gpt-bigcode-santacoder", "lay": "1x1x1,8x1x1"}, PAGE)
    text = plain(" ".join(i.value for i in at.info))
    assert "TP=8 > 1 KV head" in text and "stored on 8 ranks" in text
    assert rows(at)["TP8 PP1 DP1"]["KV heads / GPU"] == "1"


def test_mla_latent_on_every_rank_is_explained():
    at = run_app({"v": "1", "m": "deepseek-v3", "g": "H200", "lay": "8x1x1,8x2x1"}, PAGE)
    text = plain(" ".join(i.value for i in at.info))
    assert "MLA: the latent cache (one 576-wide vector" in text and "each of the 8 ranks keeps all of it" in text
    table = rows(at)
    expected = kvplan_plan("deepseek-v3", "H200", 8).ranks[0].kv_bytes_per_token
    assert table["TP8 PP1 DP1"]["KV bytes / token / GPU"] == f"{expected:,}"


def test_refused_layout_is_listed_with_its_reason():
    at = run_app({"v": "1", "lay": "1x1x1,3x1x1"}, PAGE)
    assert list(rows(at)) == ["TP1 PP1 DP1"]
    assert any("TP3" in e.value and "tensor_parallel_size" in plain(e.value) for e in at.error)
