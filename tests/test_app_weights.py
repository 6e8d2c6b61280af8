"""The plan's weights from a checkpoint's safetensors headers (Model page -> every plan page, in the link) or a typed
"Model loading took X GiB" (basis measured); an unreadable checkpoint is refused at the top and computed weights
are planned, labelled so. The Hub is tests/hub_server.py on 127.0.0.1 (no network)."""

import pytest

from kvplan.web import cached
from kvplan.web.state import decode
from tests.app_util import plain, refusals, run_app, state, weights_term
from tests.checkpoint_files import TINY_LLAMA, llama_tensors, write_checkpoint
from tests.hub_server import Handler, serve

# The tiny Llama of tests/test_checkpoint.py (213,632 B in BF16: its computed weights, kvplan's shard sums) plus one
# vision-tower tensor, 96 x 32 x 2 = 6,144 B, which kvplan's spec does not hold and rank_bytes counts whole on every
# rank: so the checkpoint figure differs from the computed one.
# TP 1: 213,632 + 6,144 = 219,776. TP 2 (tests/test_checkpoint.py: 107,136 for the Llama tensors) + 6,144 = 113,280,
# i.e. 106,496 less. vLLM's rotary cos/sin cache is a buffer, not in the headers, and is added to either: 512 positions
# x 16 x 2 B = 16,384 B -> 236,160 / 129,664 (computed at TP 2: 107,136 + 16,384 = 123,520).
VISION = {"model.visual.blocks.0.attn.qkv.weight": ("BF16", [96, 32])}
CKPT_TP1, CKPT_TP2 = 236_160, 129_664
TYPED_GIB = 14.2488
TYPED_BYTES = 15_299_532_502  # round(14.2488 x 2^30)


def _files(tmp_path) -> dict[str, bytes]:
    tensors = llama_tensors() | VISION
    names = list(tensors)
    return write_checkpoint(tmp_path / "src", TINY_LLAMA, [{n: tensors[n] for n in names[:10]},
                                                            {n: tensors[n] for n in names[10:]}])


@pytest.fixture
def online(tmp_path, monkeypatch):
    """A fake Hub serving acme/ckpt, and the app pointed at it."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "app-cache"))
    with serve({"acme/ckpt": _files(tmp_path)}) as url:
        monkeypatch.setenv("HF_ENDPOINT", url)
        yield url


def test_plan_with_these_weights_then_tp_then_the_link(online):
    at = run_app(page="pages/model.py")
    at.text_input(key="model.hub").set_value("acme/ckpt").run()
    at.button(key="model.fetch").click().run()  # the sidebar's model: acme/ckpt's own config.json
    at.button(key="model.headers").click().run()
    assert state(at).checkpoint is None
    at.button(key="model.plan_ckpt").click().run()
    assert not at.exception and state(at).checkpoint == "acme/ckpt"
    at.switch_page("pages/budget.py").run()
    term = weights_term(at)
    assert term["bytes"] == f"{CKPT_TP1:,}" and term["basis"] == "checkpoint headers"
    assert "acme/ckpt: 22 tensors in 2 files" in term["source"]
    assert any("Weights: checkpoint headers" in i.value for i in at.info)
    assert any("Weights: checkpoint headers, acme/ckpt" in plain(c.value) for c in at.sidebar.caption)  # on every page
    assert not [w for w in at.warning if "Checkpoint:" in w.value]  # the checkpoint is the sidebar's model
    reads = sum(r["path"].endswith(".safetensors") for r in Handler.seen)

    at.number_input(key="w.tensor_parallel_size").set_value(2).run()  # re-split for the new layout
    assert weights_term(at)["bytes"] == f"{CKPT_TP2:,}" and CKPT_TP1 - CKPT_TP2 == 106_496
    params = dict(at.query_params)
    assert params["ck"] == "acme/ckpt" and params["tp"] == "2" and "wg" not in params

    again = run_app(params)  # the link reopens the same plan
    assert state(again) == state(at)
    assert weights_term(again) == weights_term(at)
    assert sum(r["path"].endswith(".safetensors") for r in Handler.seen) == reads  # headers read once per repo

    again.button(key="weights.computed").click().run()  # back to computed weights
    assert state(again).checkpoint is None and "ck" not in dict(again.query_params)
    term = weights_term(again)
    assert term["basis"] == "exact" and term["bytes"] == "123,520"  # TP 2 computed + rope cache


def test_a_checkpoint_of_another_model_says_so(online):
    at = run_app({"v": "1", "ck": "acme/ckpt"})  # sidebar: the default preset llama-3.1-8b
    term = weights_term(at)
    # the headers' 219,776 B + the rotary cache of the sidebar's model (131,072 x 128 x 2 = 33,554,432 B)
    assert term["bytes"] == "33,774,208" and term["basis"] == "checkpoint headers"
    text = " ".join(plain(w.value) for w in at.warning)
    assert "acme/ckpt is not the sidebar's model llama-3.1-8b (meta-llama/Llama-3.1-8B)" in text
    assert "[256, 64], where llama-3.1-8b has hidden_size 4,096" in text
    assert "2 decoder layers, where llama-3.1-8b has 32" in text
    assert "are F32" not in text  # BF16 tensors, a bf16 model


def test_a_checkpoint_in_another_float_dtype_is_planned_at_the_served_dtype(tmp_path):
    from kvplan.engines import EngineConfig
    from kvplan.hf_config import parse_config
    from kvplan.parallel import Layout
    from kvplan.web import checkpoint as ck

    write_checkpoint(tmp_path / "f32", TINY_LLAMA, [llama_tensors(dtype="F32")])
    c = ck.read_local(tmp_path / "f32")
    spec = parse_config(TINY_LLAMA, name="tiny")
    # 2 x 213,632 = 427,264 B of F32 tensors, a bf16 model: no mismatch, vLLM casts them as it loads them, and the
    # busiest rank is counted at the served bf16 (213,632 B at TP 1), saying so
    assert c.total_bytes == 427_264 and ck.shape_mismatches(c, spec) == []
    got = ck.busiest_rank(c, spec, Layout(), **ck.load_options(EngineConfig(), spec))
    assert got.weights_bytes == 213_632
    assert any("cast from F32 to bf16" in n for n in got.notes)


@pytest.mark.parametrize("page", ["pages/budget.py", "pages/model.py"])
def test_an_unreadable_checkpoint_on_reopen_is_refused_and_computed_weights_are_planned(page):
    # conftest sets HF_HUB_OFFLINE=1: the headers cannot be read (range requests are online only)
    at = run_app({"v": "1", "ck": "acme/ckpt"}, page)
    shown = refusals(at)
    assert shown and "**Refused checkpoint weights (ck) = acme/ckpt**" in shown[0] and "HF_HUB_OFFLINE" in shown[0]
    assert "computed weights" in shown[0]
    assert state(at).checkpoint == "acme/ckpt"  # kept: the link still asks for it
    if page == "pages/budget.py":
        term = weights_term(at)
        assert term["basis"] == "exact" and term["bytes"] == "16,094,076,928"  # llama-3.1-8b bf16 16,060,522,496 + rope 33,554,432
        assert any("Weights: computed (fallback)" in w.value for w in at.warning)


def test_a_missing_checkpoint_is_refused(online):
    at = run_app({"v": "1", "ck": "acme/nothing"})
    shown = refusals(at)
    assert shown and "acme/nothing" in shown[0]
    assert weights_term(at)["basis"] == "exact"


def test_typed_model_loading_figure_is_the_weights_term(online):
    at = run_app({"v": "1", "ck": "acme/ckpt"})
    assert weights_term(at)["basis"] == "checkpoint headers"
    at.session_state["kv.knobs"] = True  # open the Engine knobs
    at.run()
    at.number_input(key="w.weights_gib").set_value(TYPED_GIB).run()
    term = weights_term(at)
    assert term["bytes"] == f"{TYPED_BYTES:,}" and term["basis"] == "measured"
    assert "typed in" in term["source"] and "14.2488 GiB" in term["source"]
    assert state(at).checkpoint is None  # the last chosen wins
    assert dict(at.query_params)["wg"] == "14.2488" and "ck" not in dict(at.query_params)
    assert any("Weights: measured" in i.value for i in at.info)
    assert any("Weights: measured, typed in: 14.2488 GiB" in plain(c.value) for c in at.sidebar.caption)

    at.number_input(key="w.weights_gib").set_value(5000.0).run()  # over 16 x 79.19 GiB
    errors = [plain(e.value) for e in at.error]
    assert any("**Refused model loading took (GiB) = 5000**: must be above 0 and at most 16 x the H100-SXM's 79.19 GiB "
               "(1,267.04 GiB)" in e for e in errors)
    assert state(at).weights_gib == TYPED_GIB and weights_term(at)["bytes"] == f"{TYPED_BYTES:,}"

    again = run_app(dict(at.query_params))  # the typed figure travels in the link
    assert weights_term(again)["bytes"] == f"{TYPED_BYTES:,}"


def test_a_linked_figure_out_of_range_is_refused():
    at = run_app({"v": "1", "wg": "5000"})
    shown = refusals(at)
    assert shown and "**Refused model loading took (GiB) = 5000**" in shown[0] and "1,267.04 GiB" in shown[0]
    assert weights_term(at)["basis"] == "exact"


def test_link_with_both_keeps_the_measured_figure():
    state_, warnings = decode({"v": "1", "ck": "acme/ckpt", "wg": "14.2488"})
    assert state_.weights_gib == TYPED_GIB and state_.checkpoint is None
    assert len(warnings) == 1 and "'ck'" in warnings[0] and "'wg'" in warnings[0]
    bad, warnings = decode({"v": "1", "ck": "../etc/passwd"})
    assert bad.checkpoint is None and "'ck'" in warnings[0] and "not a Hub model id" in warnings[0]


def test_measured_refusal_bounds():
    assert cached.measured_refusal(TYPED_GIB, "H100-SXM") is None
    assert cached.measured_refusal(1267.04, "H100-SXM") is None
    assert "at most 16 x" in cached.measured_refusal(1267.05, "H100-SXM")


def test_cli_model_loading_gib(capsys):
    import json

    from kvplan.cli import main

    assert main(["plan", "llama-3.1-8b", "--model-loading-gib", str(TYPED_GIB), "--json"]) == 0
    rank = json.loads(capsys.readouterr().out)["ranks"][0]
    term = next(t for t in rank["terms"] if t["name"] == "weights")
    assert rank["weights_bytes"] == term["bytes"] == TYPED_BYTES and term["basis"] == "measured"
    assert "typed in: 14.2488 GiB" in term["source"]
    assert main(["plan", "llama-3.1-8b", "--model-loading-gib", "5000"]) == 2
    assert "--model-loading-gib: must be above 0 and at most 16 x" in capsys.readouterr().err


def test_the_gpus_page_says_it_prices_computed_weights():
    # the picker budgets one computed figure per GPU and layout: a typed "Model loading took" is not used there
    at = run_app({"v": "1", "wg": "14.2488"}, "pages/gpus.py")
    assert any("Weights here are **computed**" in i.value and "typed 'Model loading took'" in i.value for i in at.info)
    plain_at = run_app({"v": "1"}, "pages/gpus.py")
    assert not any("Weights here are **computed**" in i.value for i in plain_at.info)
