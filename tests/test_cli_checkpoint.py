"""``python -m kvplan plan MODEL --checkpoint PATH_OR_HUB_ID``: the plan budgets the busiest rank's weights from the
checkpoint's safetensors headers (kvplan.checkpoint.engine_with_checkpoint_weights, the app's rule), says where they
came from, and carries it in --json; every bad checkpoint is a one-line error naming --checkpoint. The Hub is
tests/hub_server.py on 127.0.0.1 (no network)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kvplan.cli import main
from tests.checkpoint_files import TINY_LLAMA, llama_tensors, write_checkpoint, write_safetensors
from tests.hub_server import serve

ROOT = Path(__file__).resolve().parents[1]
# The tiny Llama (tests/checkpoint_files.TINY_LLAMA: hidden 64, intermediate 128, 2 layers, 4 heads, 2 KV heads,
# head_dim 16, vocab 256, bf16) plus one vision-tower tensor that kvplan's spec does not hold: 96 x 32 x 2 = 6,144 B.
VISION = {"model.visual.blocks.0.attn.qkv.weight": ("BF16", [96, 32])}
# TP 1: embed 256 x 64 x 2 = 32,768; per layer attention (64+32+32+64) x 64 x 2 = 24,576, mlp 3 x 128 x 64 x 2 = 49,152,
# norms 2 x 64 x 2 = 256 (73,984); final norm 128; lm_head 32,768: 213,632 (= kvplan's computed) + vision 6,144.
TP1_HEADERS, TP1_COMPUTED = 219_776, 213_632
# TP 2: embed and lm_head 256/2 = 128 rows x 64 x 2 = 16,384 each; per layer q 32 rows 4,096, k and v one KV head
# (16 rows) 2,048 each, o [64, 32] 4,096; gate, up 64 rows and down [64, 64] 8,192 each; norms whole 256 -> 37,120;
# 2 x 16,384 + 2 x 37,120 + 128 = 107,136 (kvplan's own layout) + the vision tensor whole on every rank = 113,280.
TP2_HEADERS, TP2_COMPUTED = 113_280, 107_136
# vLLM's rotary cos/sin cache, a buffer the headers do not hold, added to the weights term by the plan:
# 512 positions x 16 x 2 B = 16,384.
ROPE = 16_384


def _tensors() -> dict:
    return llama_tensors() | VISION


def _folder(tmp_path, name: str = "tiny", tensors: dict | None = None, config: dict = TINY_LLAMA) -> Path:
    tensors = _tensors() if tensors is None else tensors
    names = list(tensors)
    write_checkpoint(tmp_path / name, config, [{n: tensors[n] for n in names[:10]}, {n: tensors[n] for n in names[10:]}])
    return tmp_path / name


def _plan(capsys, *argv) -> tuple[int, str, str]:
    rc = main(["plan", *map(str, argv)])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _json(capsys, *argv) -> dict:
    rc, out, err = _plan(capsys, *argv, "--json")
    assert rc == 0, err
    return json.loads(out)


def test_local_folder_at_tp2_text_and_json(tmp_path, capsys):
    ck = _folder(tmp_path)
    rc, out, err = _plan(capsys, ck / "config.json", "--checkpoint", ck, "-tp", "2")
    assert rc == 0 and err == ""
    assert (f"  weights from 2 safetensors headers of {ck}: 0.00 GiB (113,280 B) on the busiest rank "
            "(kvplan's own layout: 0.00 GiB (107,136 B))") in out.splitlines()
    assert "[checkpoint headers]" in out

    doc = _json(capsys, ck / "config.json", "--checkpoint", ck, "-tp", "2")
    w = doc["weights_checkpoint"]
    assert w["source"] == str(ck) and w["basis"] == "checkpoint headers"
    assert (w["files"], w["tensors"], w["total_bytes"]) == (2, 22, TP1_HEADERS)
    assert (w["busiest_rank_bytes"], w["computed_rank_bytes"], w["busiest_stage"]) == (TP2_HEADERS, TP2_COMPUTED, 0)
    # per category on the busiest rank: 16,384 + 2 x 12,288 + 2 x 24,576 + (2 x 256 + 128) + 16,384 + 6,144
    assert w["by_category"] == {"embeddings": 16_384, "attention": 24_576, "mlp": 49_152, "norms": 640,
                                "lm_head": 16_384, "vision": 6_144}
    assert w["include_vision"] is True and w["include_mtp"] is False
    rank = doc["ranks"][0]
    term = next(t for t in rank["terms"] if t["name"] == "weights")
    assert rank["weights_bytes"] == term["bytes"] == TP2_HEADERS + ROPE == 129_664
    assert term["basis"] == "checkpoint headers" and f"{ck}: 22 tensors in 2 files" in term["source"]
    # without --checkpoint: kvplan's computed layout, 107,136 + 16,384
    assert _json(capsys, ck / "config.json", "-tp", "2")["ranks"][0]["weights_bytes"] == TP2_COMPUTED + ROPE
    assert "weights_checkpoint" not in _json(capsys, ck / "config.json", "-tp", "2")


def test_the_model_may_be_the_folder_and_pp_budgets_the_busiest_stage(tmp_path, capsys):
    ck = _folder(tmp_path)
    doc = _json(capsys, ck, "--checkpoint", ck, "-pp", "2")  # the folder as the model: its config.json
    assert doc["model"] == "tiny"
    w = doc["weights_checkpoint"]
    # stage 0: embed 32,768 + layer 0 73,984 + the vision tower (first stage) 6,144 = 112,896;
    # stage 1: layer 1 73,984 + final norm 128 + lm_head 32,768 = 106,880 (also kvplan's busier computed stage;
    # its stage 0 is 106,752)
    assert (w["busiest_rank_bytes"], w["busiest_stage"], w["computed_rank_bytes"]) == (112_896, 0, 106_880)
    # every stage is budgeted with the busiest rank's figure (as the app does), + its rotary cache
    assert [r["weights_bytes"] for r in doc["ranks"]] == [112_896 + ROPE] * 2


def test_language_model_only_leaves_the_tower_out(tmp_path, capsys):
    ck = _folder(tmp_path)
    w = _json(capsys, ck, "--checkpoint", ck, "--language-model-only")["weights_checkpoint"]
    assert w["busiest_rank_bytes"] == TP1_COMPUTED == w["computed_rank_bytes"]  # 219,776 - 6,144
    assert w["left_out"] == {"vision": 6_144} and w["include_vision"] is False


def test_hub_id_through_read_hub(tmp_path, capsys, monkeypatch):
    ck = _folder(tmp_path)
    files = {p.name: p.read_bytes() for p in ck.iterdir()}
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    with serve({"acme/ckpt": files}) as url:
        monkeypatch.setenv("HF_ENDPOINT", url)
        doc = _json(capsys, ck, "--checkpoint", "acme/ckpt", "-tp", "2")
        rc, _, err = _plan(capsys, ck, "--checkpoint", "acme/nothing")
    w = doc["weights_checkpoint"]
    assert (w["source"], w["basis"], w["busiest_rank_bytes"]) == ("acme/ckpt", "checkpoint headers", TP2_HEADERS)
    assert rc == 2 and err.startswith("error: --checkpoint: ") and "acme/nothing" in err and err.count("\n") == 1


def test_hub_id_offline_is_refused(tmp_path, capsys):
    # conftest sets HF_HUB_OFFLINE=1: no request; the headers are read by range requests, which offline forbids
    rc, out, err = _plan(capsys, _folder(tmp_path), "--checkpoint", "acme/ckpt")
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("error: --checkpoint: ") and "HF_HUB_OFFLINE" in err


def _empty(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "config.json").write_text(json.dumps(TINY_LLAMA))
    return tmp_path / "empty", "empty: no *.safetensors files (kvplan reads safetensors only)"


def _malformed(tmp_path):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "model.safetensors").write_bytes(b"\x04" + b"\x00" * 7 + b"{no}")  # 4 bytes of not-JSON
    return tmp_path / "bad", "bad/model.safetensors: the safetensors header is not JSON (JSONDecodeError)"


def _missing_shard(tmp_path):
    ck = _folder(tmp_path, "half")
    (ck / "model-00002-of-00002.safetensors").unlink()
    return ck, "half: shard model-00002-of-00002.safetensors named by the index is missing"


def _other_model(tmp_path):
    # a tiny Llama twice as wide with 1 layer: another model's checkpoint, against the 2-layer hidden-64 config
    wide = dict(TINY_LLAMA, hidden_size=128, num_hidden_layers=1)
    write_safetensors(Path(_empty(tmp_path)[0]) / "model.safetensors", llama_tensors(wide))
    return tmp_path / "empty", (f"{tmp_path / 'empty'} does not match the model tiny: its embedding model.embed_tokens.weight is "
                                "[256, 128], where tiny has hidden_size 64; it holds 1 decoder layers, where tiny has 2")


def _no_such(tmp_path):
    return tmp_path / "nowhere", f"no folder {tmp_path / 'nowhere'}, and not a Hub model id ('owner/name')"


def _a_file(tmp_path):
    ck = _folder(tmp_path)
    return ck / "model-00001-of-00002.safetensors", (
        f"{ck / 'model-00001-of-00002.safetensors'}: a file, not a folder; give the checkpoint's folder "
        "(its *.safetensors and model.safetensors.index.json)")


@pytest.mark.parametrize("case", [_empty, _malformed, _missing_shard, _other_model, _no_such, _a_file])
def test_each_bad_checkpoint_is_one_line_naming_the_flag(tmp_path, capsys, case):
    folder, message = case(tmp_path)
    model = tmp_path / "model" / "tiny" / "config.json"  # named "tiny" by its folder
    model.parent.mkdir(parents=True)
    model.write_text(json.dumps(TINY_LLAMA))
    rc, out, err = _plan(capsys, model, "--checkpoint", folder)
    assert rc == 2 and out == ""
    assert err == f"error: --checkpoint: {message}\n", err


def test_checkpoint_and_model_loading_gib_are_exclusive(tmp_path, capsys):
    ck = _folder(tmp_path)
    rc, _, err = _plan(capsys, ck, "--checkpoint", ck, "--model-loading-gib", "1")
    assert rc == 2 and err == ("error: --checkpoint: give --checkpoint or --model-loading-gib, not both (the weights "
                               "come from one)\n")


def test_a_local_checkpoint_plans_in_a_fresh_interpreter_without_the_app_stack(tmp_path):
    # the CLI's local path is the core reader (kvplan.checkpoint: stdlib only): no streamlit, no huggingface_hub
    ck = _folder(tmp_path)
    code = ("import json, sys; from kvplan.cli import main; "
            f"rc = main(['plan', {str(ck)!r}, '--checkpoint', {str(ck)!r}, '--json']); "
            "print(json.dumps([rc] + [m for m in ('streamlit', 'huggingface_hub', 'plotly', 'pandas', 'torch') "
            "if m in sys.modules]), file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, cwd=ROOT, timeout=120,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"})
    assert json.loads(out.stderr.strip().splitlines()[-1]) == [0]
    assert json.loads(out.stdout)["weights_checkpoint"]["busiest_rank_bytes"] == TP1_HEADERS


def test_load_options_follow_the_engine(tmp_path):
    # kvplan.checkpoint.load_options: what of the checkpoint the engine loads. An extra decoder layer past the config's
    # 2 (model.layers.2: DeepSeek-V3 ships its nextn layer so) is an MTP layer: 128 x 64 x 2 = 16,384 B, loaded only
    # with MTP speculation; the vision tensor (6,144 B) unless --language-model-only (or the custom engine).
    from kvplan.checkpoint import busiest_rank, load_options, read_local
    from kvplan.engines import EngineConfig
    from kvplan.hf_config import parse_config
    from kvplan.parallel import Layout

    ck = _folder(tmp_path, tensors=_tensors() | {"model.layers.2.mlp.gate_proj.weight": ("BF16", [128, 64])})
    c, spec = read_local(ck), parse_config(TINY_LLAMA, name="tiny")
    cases = {"vllm": EngineConfig(), "lm-only": EngineConfig(language_model_only=True), "custom": EngineConfig(
        engine="custom"), "mtp": EngineConfig(speculative_method="mtp", num_speculative_tokens=1)}
    got = {k: busiest_rank(c, spec, Layout(), **load_options(e)).weights_bytes for k, e in cases.items()}
    assert got == {"vllm": 219_776, "lm-only": 213_632, "custom": 213_632, "mtp": 219_776 + 16_384}
