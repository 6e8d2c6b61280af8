"""The app plans with a LOCAL checkpoint folder's safetensors headers, read only under the root the operator names in
KVPLAN_CHECKPOINT_ROOT: the Model page offers "Local folder under <root>" beside the Hub id, the link carries the
folder (``ckd``) and every open checks it against the root again; a path outside the root (by '..', an absolute
path or a symlink), or any path when the variable is unset, is refused naming the field, and computed weights are
planned, labelled so."""

import os

import pytest

from kvplan.web import checkpoint as ck
from kvplan.web.state import PlanState, decode, encode, encode_config
from tests.app_util import plain, refusals, run_app, state, weights_term
from tests.checkpoint_files import TINY_LLAMA, llama_tensors, write_checkpoint

# The tiny Llama + one vision-tower tensor (96 x 32 x 2 = 6,144 B), as in tests/test_app_weights.py and
# tests/test_cli_checkpoint.py: headers 213,632 + 6,144 = 219,776 B at TP 1; at TP 2 the busiest rank holds
# 107,136 (kvplan's own layout: embed / lm_head 128 rows x 64 x 2 = 16,384 each, 2 layers x 37,120, norm 128)
# + 6,144 (the tower, whole on every rank) = 113,280. vLLM's rotary cache (512 x 16 x 2 = 16,384 B; no tensor in the
# headers) is added by the plan: 236,160 / 129,664. With --language-model-only the tower is left out: 213,632 + 16,384.
VISION = {"model.visual.blocks.0.attn.qkv.weight": ("BF16", [96, 32])}
TP1, TP2, TP1_LM_ONLY = 236_160, 129_664, 230_016
COMPUTED_TP1 = 230_016  # 213,632 + 16,384: kvplan's shard sums of the same config
TINY = {"v": "1", "cfg": encode_config(TINY_LLAMA), "mn": "tiny"}  # the sidebar's model: the tiny Llama's config


def _write(folder) -> None:
    tensors = llama_tensors() | VISION
    names = list(tensors)
    write_checkpoint(folder, TINY_LLAMA, [{n: tensors[n] for n in names[:10]}, {n: tensors[n] for n in names[10:]}])


@pytest.fixture
def root(tmp_path, monkeypatch):
    """KVPLAN_CHECKPOINT_ROOT = tmp/root holding tiny/ (a checkpoint); tmp/outside/ is one outside it."""
    _write(tmp_path / "root" / "tiny")
    _write(tmp_path / "outside")
    monkeypatch.setenv(ck.ROOT_ENV, str(tmp_path / "root"))
    return (tmp_path / "root").resolve()


def test_read_and_plan_with_a_local_folder_then_tp_then_the_link(root):
    at = run_app(TINY, "pages/model.py")
    box = at.text_input(key="model.local")
    assert box.label == f"Local folder under {root}"
    box.set_value("tiny").run()
    at.button(key="model.local_headers").click().run()
    assert not at.exception and state(at).checkpoint_dir is None
    assert any(f"{root / 'tiny'}" in plain(m.value) and "22 tensors in 2 files, 219,776 B" in plain(m.value)
               for m in at.markdown)
    at.button(key="model.plan_local").click().run()
    assert state(at).checkpoint_dir == "tiny" and state(at).checkpoint is None
    at.switch_page("pages/budget.py").run()
    term = weights_term(at)
    assert term["bytes"] == f"{TP1:,}" and term["basis"] == "checkpoint headers"
    assert f"{root / 'tiny'}: 22 tensors in 2 files" in plain(term["source"])
    assert any(f"Weights: checkpoint headers, {root / 'tiny'}" in plain(c.value) for c in at.sidebar.caption)
    assert not [w for w in at.warning if "Checkpoint" in w.value]  # its shapes are the sidebar model's

    at.number_input(key="w.tensor_parallel_size").set_value(2).run()  # re-split for the layout
    assert weights_term(at)["bytes"] == f"{TP2:,}"
    params = dict(at.query_params)
    assert params["ckd"] == "tiny" and params["tp"] == "2" and "ck" not in params and "wg" not in params

    again = run_app(params)  # the link reopens the same plan (the folder checked against the root again)
    assert state(again) == state(at) and weights_term(again) == weights_term(at)

    again.button(key="weights.computed").click().run()  # back to computed weights
    assert state(again).checkpoint_dir is None and "ckd" not in dict(again.query_params)
    assert weights_term(again)["basis"] == "exact"


def test_language_model_only_leaves_the_tower_out(root):
    at = run_app(TINY | {"ckd": "tiny", "lmo": "1"})
    term = weights_term(at)
    assert term["bytes"] == f"{TP1_LM_ONLY:,}" and term["basis"] == "checkpoint headers"


def test_the_link_is_checked_against_the_root_on_every_open(root, monkeypatch):
    link = TINY | {"ckd": "tiny"}
    assert weights_term(run_app(link))["bytes"] == f"{TP1:,}"
    monkeypatch.delenv(ck.ROOT_ENV)  # the operator no longer allows local folders: the same link is refused
    at = run_app(link)
    shown = refusals(at)
    assert shown and shown[0].startswith("**Refused local checkpoint folder (ckd) = tiny**: its safetensors headers "
                                         "cannot be read: KVPLAN_CHECKPOINT_ROOT is not set on this server")
    assert state(at).checkpoint_dir == "tiny"  # kept: the link still asks for it
    term = weights_term(at)
    assert term["basis"] == "exact" and term["bytes"] == f"{COMPUTED_TP1:,}"
    assert any("Weights: computed (fallback)" in w.value and "Not the local folder tiny (Local checkpoint folder (ckd))"
               in plain(w.value) for w in at.warning)


@pytest.mark.parametrize("path", ["../outside", "ABS_OUTSIDE", "link-out", "tiny/../../outside"])
def test_a_path_outside_the_root_is_refused(root, path):
    os.symlink(root.parent / "outside", root / "link-out")  # a folder under the root that is a link out of it
    path = str(root.parent / "outside") if path == "ABS_OUTSIDE" else path
    at = run_app(TINY | {"ckd": path})
    shown = refusals(at)
    assert shown and shown[0].startswith(f"**Refused local checkpoint folder (ckd) = {path}**: its safetensors headers "
                                         f"cannot be read: '{path}' is not under KVPLAN_CHECKPOINT_ROOT ({root}); "
                                         "the app reads local folders only under it")
    assert weights_term(at)["basis"] == "exact"


def test_a_shard_linked_out_of_the_root_is_not_read(root):
    (root / "sneaky").mkdir()
    for f in (root / "tiny").iterdir():  # the index and config as they are; one shard a link to a file outside
        target = root.parent / "outside" / f.name if f.name.startswith("model-00002") else f
        os.symlink(target, root / "sneaky" / f.name)
    with pytest.raises(ck.CheckpointError, match=r"sneaky: model-00002-of-00002.safetensors is a link out of"):
        ck.read_under_root("sneaky")
    assert ck.read_under_root("tiny").total_bytes == 219_776


def test_the_model_page_refuses_a_typed_path_outside_the_root_naming_the_field(root):
    at = run_app(TINY, "pages/model.py")
    at.text_input(key="model.local").set_value("../outside").run()
    at.button(key="model.local_headers").click().run()
    errors = [plain(e.value) for e in at.error]
    assert f"Local checkpoint folder (ckd) = ../outside: '../outside' is not under KVPLAN_CHECKPOINT_ROOT ({root}); " \
           "the app reads local folders only under it" in errors
    assert "model.plan_local" not in [b.key for b in at.button]
    assert state(at).checkpoint_dir is None


def test_without_the_root_the_model_page_offers_no_local_folder(monkeypatch):
    monkeypatch.delenv(ck.ROOT_ENV, raising=False)
    at = run_app(page="pages/model.py")
    assert "model.local" not in [t.key for t in at.text_input]
    assert any("KVPLAN_CHECKPOINT_ROOT" in c.value for c in at.caption)


def test_local_folder_checks(root, tmp_path):
    assert ck.local_folder("tiny") == root / "tiny" == ck.local_folder(str(root / "tiny"))
    assert ck.local_folder("tiny/./") == root / "tiny"
    with pytest.raises(ck.CheckpointError, match=r"^no folder 'missing' under "):
        ck.local_folder("missing")
    with pytest.raises(ck.CheckpointError, match=r"^'/etc' is not under KVPLAN_CHECKPOINT_ROOT"):
        ck.local_folder("/etc")
    os.symlink(root / "loop", root / "loop")
    with pytest.raises(ck.CheckpointError, match=r"^'loop' cannot be resolved under .* \((RuntimeError|OSError)\)"):
        ck.local_folder("loop")
    with pytest.raises(ck.CheckpointError, match=r"^'x{200}' cannot be resolved under .* \(OSError\)"):
        ck.local_folder("x" * 300)  # a name over NAME_MAX (255)
    with pytest.raises(ck.CheckpointError, match=r"^give a folder under"):
        ck.local_folder("")
    with pytest.raises(ck.CheckpointError, match=r"is not a folder on this server"):
        ck.local_folder("tiny", env={ck.ROOT_ENV: str(tmp_path / "nope")})
    with pytest.raises(ck.CheckpointError, match=r"^KVPLAN_CHECKPOINT_ROOT is not set on this server"):
        ck.local_folder("tiny", env={})


def test_link_key_round_trips_and_conflicts_resolve_with_a_warning():
    s = PlanState(checkpoint_dir="org/model-v2", tensor_parallel_size=2)
    assert encode(s) == {"v": "1", "tp": "2", "ckd": "org/model-v2"}
    assert decode(encode(s)) == (s, [])
    both, warnings = decode({"v": "1", "ck": "acme/ckpt", "ckd": "tiny"})
    assert (both.checkpoint, both.checkpoint_dir) == ("acme/ckpt", None)
    assert warnings == [("Link parameters 'ckd' (checkpoint_dir) and 'ck' (checkpoint) are both set; the weights can "
                         "come from one only: planning 'ck' (checkpoint), not the local folder tiny.")]
    measured, warnings = decode({"v": "1", "wg": "14.2488", "ckd": "tiny"})
    assert (measured.weights_gib, measured.checkpoint_dir) == (14.2488, None) and "'wg' (weights_gib)" in warnings[0]
    bad, warnings = decode({"v": "1", "ckd": "a\nb"})
    assert bad.checkpoint_dir is None and warnings[0].startswith("Link parameter 'ckd' (checkpoint_dir) = 'a\\nb': "
                                                                 "not a folder path")


def test_use_the_folders_config_then_its_weights(root):
    at = run_app(page="pages/model.py")  # the default preset in the sidebar: the headers are another model's
    at.text_input(key="model.local").set_value("tiny").run()
    at.button(key="model.local_headers").click().run()
    at.button(key="model.local_config").click().run()  # the folder's config.json becomes the model
    assert not at.exception
    assert (state(at).config, state(at).model_name) == (encode_config(TINY_LLAMA), "tiny")
    at.button(key="model.plan_local").click().run()
    at.switch_page("pages/budget.py").run()
    assert weights_term(at)["bytes"] == f"{TP1:,}"
    assert not [w for w in at.warning if "Checkpoint" in w.value]


def test_a_config_linked_out_of_the_root_is_not_read(root):
    (root / "odd").mkdir()
    for f in (root / "tiny").glob("*.safetensors*"):
        os.symlink(f, root / "odd" / f.name)  # links inside the root: read
    os.symlink(root.parent / "outside" / "config.json", root / "odd" / "config.json")
    assert ck.read_under_root("odd").total_bytes == 219_776
    with pytest.raises(ck.CheckpointError, match=r"^odd/config.json is a link out of"):
        ck.local_config_bytes("odd")
    assert ck.local_config_bytes("tiny") == (root / "tiny" / "config.json").read_bytes()
