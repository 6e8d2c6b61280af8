"""kvplan.web.checkpoint: weights from safetensors headers (local folder, Hub by range requests), exact bytes."""

import json
from pathlib import Path

import pytest

from kvplan.hf_config import parse_config
from kvplan.parallel import Layout, rank_weight_bytes
from kvplan.web import checkpoint as ck
from kvplan.web import hub
from kvplan.weights import weight_bytes
from tests.checkpoint_files import TINY_LLAMA, llama_tensors, write_checkpoint
from tests.hub_server import TOKEN, Handler, serve

SPEC = parse_config(TINY_LLAMA, name="tiny-llama")


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(hub, "cache_dir", lambda env=None: str(tmp_path / "hf-cache"))


def test_tiny_llama_bytes_per_category_equal_kvplan(tmp_path):
    tensors = llama_tensors()
    names = list(tensors)
    write_checkpoint(tmp_path / "ck", TINY_LLAMA, [{n: tensors[n] for n in names[:10]},
                                                    {n: tensors[n] for n in names[10:]}])
    c = ck.read_local(tmp_path / "ck")
    assert c.files == 2 and len(c.tensors) == 21
    # embed 256x64x2 = 32,768; per layer attention (64+32+32+64)x64x2 = 24,576, mlp 3x128x64x2 = 49,152,
    # norms 2x64x2 = 256; final norm 128; lm_head 32,768. Total 32,768 + 2 x 73,984 + 128 + 32,768 = 213,632
    assert c.bytes_by_category(2) == {"embeddings": 32768, "attention": 49152, "mlp": 98304, "norms": 640,
                                      "lm_head": 32768}
    assert c.total_bytes == 213_632 == weight_bytes(SPEC, "bf16").total_bytes
    assert c.bytes_by_dtype() == {"BF16": 213_632}
    rows = ck.compare_rows(c, SPEC, "bf16")
    assert {r["category"]: r["difference"] for r in rows} == {
        "embeddings": 0, "attention": 0, "mlp": 0, "experts": 0, "router": 0, "norms": 0, "lm_head": 0, "other": 0}
    # TP=2: embed and lm_head 128 rows (16,384 each); q 32 rows 4,096; k, v one KV head 16 rows 2,048 each;
    # o [64, 32] 4,096; gate, up 64 rows, down [64, 64]: 8,192 each; norms whole.
    # 16,384 x 2 + 2 x (12,288 + 24,576 + 256) + 128 = 107,136
    r = ck.rank_bytes(c, SPEC, Layout(tp=2))
    assert r.weights_bytes == 107_136 == rank_weight_bytes(SPEC, Layout(tp=2))
    assert r.basis == "checkpoint headers" and r.replicated_unmapped == []
    # TP=4 > 2 KV heads: every rank keeps one KV head (16 rows) of k and v
    assert ck.rank_bytes(c, SPEC, Layout(tp=4)).weights_bytes == rank_weight_bytes(SPEC, Layout(tp=4))
    # PP=2: stage 0 embed + layer 0; stage 1 layer 1 + norm + lm_head
    assert [ck.rank_bytes(c, SPEC, Layout(pp=2), s).weights_bytes for s in (0, 1)] == [
        rank_weight_bytes(SPEC, Layout(pp=2), s) for s in (0, 1)] == [32768 + 73984, 73984 + 128 + 32768]


MOE = {
    "model.embed_tokens.weight": ("BF16", [256, 64]),
    "model.layers.0.self_attn.q_proj.weight": ("F8_E4M3", [64, 64]),
    "model.layers.0.self_attn.q_proj.weight_scale_inv": ("F32", [1, 1]),
    "model.layers.0.mlp.gate.weight": ("BF16", [4, 64]),
    **{f"model.layers.0.mlp.experts.{e}.gate_proj.weight": ("U8", [32, 32]) for e in range(4)},  # fp4 packed
    **{f"model.layers.0.mlp.experts.{e}.gate_proj.weight_scale": ("F8_E8M0", [32, 2]) for e in range(4)},
    "model.layers.0.mlp.shared_expert.down_proj.qweight": ("I32", [32, 8]),
    "model.layers.0.input_layernorm.weight": ("F32", [64]),
    "model.layers.1.self_attn.q_proj.weight": ("BF16", [64, 64]),  # the MTP layer of a 1-layer model
    "model.visual.blocks.0.attn.qkv.weight": ("BF16", [96, 32]),
    "model.norm.weight": ("BF16", [64]),
    "lm_head.weight": ("BF16", [256, 64]),
}


def test_moe_vision_mtp_bytes_per_dtype_and_category(tmp_path):
    write_checkpoint(tmp_path / "moe", {"model_type": "x"}, [MOE])
    c = ck.read_local(tmp_path / "moe")
    # BF16: 32,768 + 512 + 8,192 + 6,144 + 128 + 32,768 = 80,512; F8_E4M3 4,096; F32 4 + 256 = 260;
    # U8 4 x 1,024 = 4,096; F8_E8M0 4 x 64 = 256; I32 32 x 8 x 4 = 1,024
    assert c.bytes_by_dtype() == {"BF16": 80512, "F8_E4M3": 4096, "U8": 4096, "I32": 1024, "F32": 260,
                                  "F8_E8M0": 256}
    assert c.bytes_by_category(num_layers=1) == {
        "embeddings": 32768, "attention": 4100, "router": 512, "experts": 4352, "mlp": 1024, "norms": 384,
        "mtp": 8192, "vision": 6144, "lm_head": 32768}
    assert c.total_bytes == 90_244
    rows = {r["dtype"]: r for r in c.rows()}
    assert rows["U8"] == {"dtype": "U8", "tensors": 4, "elements": 4096, "bytes": 4096}


def test_a_100_shard_checkpoint_reads_headers_only(tmp_path):
    shards = [{f"model.layers.{k}.mlp.down_proj.weight": ("BF16", [4096, 14336]),
               f"model.layers.{k}.input_layernorm.weight": ("BF16", [4096])} for k in range(100)]
    write_checkpoint(tmp_path / "big", {"model_type": "llama"}, shards, sparse=True)  # 11.7 GB of holes
    c = ck.read_local(tmp_path / "big")
    assert c.files == 100 and len(c.tensors) == 200
    assert c.total_bytes == 100 * (4096 * 14336 + 4096) * 2 == 11_744_870_400


def _serve_files(tmp_path, tensors, config=TINY_LLAMA, shards=2):
    names = list(tensors)
    cut = len(names) // shards
    parts = [{n: tensors[n] for n in names[i * cut:(i + 1) * cut if i < shards - 1 else None]}
             for i in range(shards)]
    return write_checkpoint(tmp_path / "src", config, parts)


def test_hub_headers_by_range_requests_equal_the_local_read(tmp_path):
    files = _serve_files(tmp_path, llama_tensors())
    local = ck.read_local(tmp_path / "src")
    with serve({"acme/ckpt": files, "acme/one": {"config.json": files["config.json"],
                                                "model.safetensors": files["model-00001-of-00002.safetensors"]}}) as url:
        c = ck.read_hub("acme/ckpt", env={"HF_ENDPOINT": url})
        shard_gets = [r for r in Handler.seen if r["path"].endswith(".safetensors") and r["method"] == "GET"]
        one = ck.read_hub("acme/one", env={"HF_ENDPOINT": url})
    assert sorted((t.name, t.dtype, t.shape) for t in c.tensors) == sorted((t.name, t.dtype, t.shape)
                                                                            for t in local.tensors)
    assert c.total_bytes == 213_632 and c.files == 2 and one.files == 1 and len(one.tensors) == 10
    assert shard_gets and all(r["range"] == "bytes=0-100000" for r in shard_gets)  # headers only


def test_hub_gated_missing_and_offline_checkpoints(tmp_path):
    files = _serve_files(tmp_path, llama_tensors())
    with serve({"acme/gated-ckpt": files}) as url:
        with pytest.raises(hub.HubError, match="gated or private.*HF_TOKEN"):
            ck.read_hub("acme/gated-ckpt", env={"HF_ENDPOINT": url})
        assert ck.read_hub("acme/gated-ckpt", env={"HF_ENDPOINT": url, "HF_TOKEN": TOKEN}).total_bytes == 213_632
        with pytest.raises(hub.HubError, match="no repository acme/nothing"):
            ck.read_hub("acme/nothing", env={"HF_ENDPOINT": url})
        Handler.seen.clear()
        with pytest.raises(hub.HubError, match="HF_HUB_OFFLINE") as info:
            ck.read_hub("acme/gated-ckpt", env={"HF_ENDPOINT": url, "HF_HUB_OFFLINE": "1"})
        assert info.value.offline and Handler.seen == []


def test_hub_config_fetch_errors_name_the_revision_and_file(tmp_path):
    with serve({"acme/noconfig": {"model.safetensors": b"x"}}) as url:
        with pytest.raises(hub.HubError, match="no config.json in acme/noconfig"):
            hub.fetch_config("acme/noconfig", env={"HF_ENDPOINT": url})
        with pytest.raises(hub.HubError, match="no revision 'v9'"):
            hub.fetch_config("acme/tiny-llama", "v9", env={"HF_ENDPOINT": url})


def test_hub_offline_uses_the_cache(tmp_path):
    with serve() as url:
        online = hub.fetch_config("acme/tiny-llama", env={"HF_ENDPOINT": url})
        Handler.seen.clear()
        again = hub.fetch_config("acme/tiny-llama", env={"HF_ENDPOINT": url, "HF_HUB_OFFLINE": "1"})
    assert again == online and Handler.seen == []


@pytest.mark.parametrize("body, message", [
    (b"\x05\x00", "shorter than"), (b"\xff" * 8, "over the"), (b"\x10" + b"\x00" * 7 + b"{", "truncated"),
    (b"\x02" + b"\x00" * 7 + b"[]", "not a JSON object"),
    (b"\x20" + b"\x00" * 7 + json.dumps({"w": {"dtype": "Q9", "shape": [1]}}).encode()[:32], "not JSON|dtype"),
])
def test_bad_headers_are_refused_with_a_message(tmp_path, body, message):
    (tmp_path / "model.safetensors").write_bytes(body)
    with pytest.raises(ck.CheckpointError, match=message):
        ck.read_local(tmp_path)


def test_categories_by_name():
    assert ck.categorize("model.language_model.layers.3.self_attn.q_proj.weight") == "attention"
    assert ck.categorize("model.layers.3.mlp.experts.7.down_proj.weight_scale_inv") == "experts"
    assert ck.categorize("model.layers.61.eh_proj.weight", num_layers=61) == "mtp"
    assert ck.categorize("model.vision_tower.encoder.layers.0.mlp.fc1.weight") == "vision"
    assert ck.categorize("transformer.wte.weight") == "embeddings"
    assert ck.categorize("model.layers.0.mlp.gate.e_score_correction_bias") == "router"


def test_model_page_reads_hub_headers(tmp_path, monkeypatch):
    from tests.app_util import run_app

    files = _serve_files(tmp_path, llama_tensors())
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "app-cache"))
    with serve({"acme/ckpt": files}) as url:
        monkeypatch.setenv("HF_ENDPOINT", url)
        at = run_app(page="pages/model.py")
        at.text_input(key="model.hub").set_value("acme/ckpt").run()
        at.button(key="model.fetch").click().run()
        at.button(key="model.headers").click().run()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "213,632 B" in text and "21 tensors in 2 files" in text


def test_a_checkpoint_saved_by_transformers_and_the_validate_page(tmp_path, monkeypatch):
    transformers = pytest.importorskip("transformers")
    from streamlit.testing.v1 import AppTest

    cfg = transformers.AutoConfig.for_model("llama", vocab_size=256, hidden_size=64, intermediate_size=128,
                                            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
    model = transformers.AutoModelForCausalLM.from_config(cfg)
    model.save_pretrained(tmp_path / "tiny-llama")
    c = ck.read_local(tmp_path / "tiny-llama")
    spec = parse_config(json.loads((tmp_path / "tiny-llama" / "config.json").read_text()), name="t")
    # fp32 as saved: 4 B x every parameter; equal to kvplan's fp32 weights, per category too
    assert c.total_bytes == 4 * sum(p.numel() for p in model.parameters()) == weight_bytes(spec, "fp32").total_bytes
    computed = weight_bytes(spec, "fp32").components
    assert c.bytes_by_category(2) == {k: v for k, v in computed.items() if v}
    monkeypatch.setenv("KVPLAN_LOCAL_MODELS", str(tmp_path))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=30)
    at.run()
    at.switch_page("pages/validate.py").run()
    at.radio[0].set_value("local").run()
    at.button(key="validate.headers").click().run()
    assert not at.exception
    assert any(f"{c.total_bytes:,} B" in m.value for m in at.markdown)


def test_a_moe_checkpoint_saved_by_transformers_per_rank_and_in_the_plan(tmp_path):
    transformers = pytest.importorskip("transformers")
    from kvplan.engines import EngineConfig
    from kvplan.gpus import get_gpu
    from kvplan.plan import plan

    cfg = transformers.AutoConfig.for_model(
        "qwen3_moe", vocab_size=256, hidden_size=64, intermediate_size=128, moe_intermediate_size=32,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_experts=4,
        num_experts_per_tok=2, decoder_sparse_step=1, mlp_only_layers=[])
    model = transformers.AutoModelForCausalLM.from_config(cfg)
    model.save_pretrained(tmp_path / "moe")  # per-expert tensors: model.layers.N.mlp.experts.E.gate_proj.weight
    c = ck.read_local(tmp_path / "moe")
    spec = parse_config(json.loads((tmp_path / "moe" / "config.json").read_text()), name="moe")
    assert c.total_bytes == 4 * sum(p.numel() for p in model.parameters()) == 429_568
    assert c.bytes_by_category(2) == {k: v for k, v in weight_bytes(spec, "fp32").components.items() if v}
    # every layout's busiest rank equals kvplan's shard rules (TP columns/rows/vocab, KV heads, EP whole experts)
    layouts = [Layout(tp=2), Layout(tp=4), Layout(tp=2, dp=2, ep=True), Layout(dp=4), Layout(pp=2)]
    assert [ck.rank_bytes(c, spec, lay).weights_bytes for lay in layouts] == [
        rank_weight_bytes(spec, lay, 0, "fp32") for lay in layouts] == [216576, 118272, 167424, 282112, 214656]
    # --dtype float32: with 'auto' vLLM serves an fp32 checkpoint in bf16 (kvplan.plan.vllm_auto_dtype)
    engine = ck.engine_with_checkpoint_weights(EngineConfig(max_model_len=4096, weight_format="fp32"), c, spec,
                                               Layout(tp=2))
    p = plan(spec, get_gpu("H100-80GB"), engine, Layout(tp=2))
    # + vLLM's rotary cache, a buffer the headers do not hold: 32,768 positions (qwen3_moe's default) x 16 x 4 B (fp32)
    assert p.ranks[0].weights_bytes == 216_576 + 2_097_152
    term = next(t for t in p.ranks[0].terms if t.name == "weights")
    assert term.basis == "checkpoint headers" and "safetensors headers" in term.source


@pytest.mark.parametrize("weight_map, message", [
    ({"a.weight": "../outside.safetensors"}, "does not read"), ({"a.weight": "model.bin"}, "does not read"),
    ({}, "no weight_map"), ({"a.weight": "missing.safetensors"}, "missing"),
])
def test_an_index_naming_other_files_is_refused(tmp_path, weight_map, message):
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    with pytest.raises(ck.CheckpointError, match=message):
        ck.read_local(tmp_path)


def test_unmapped_and_vision_tensors_are_counted_whole_and_said_so(tmp_path):
    tensors = dict(llama_tensors(), **{"model.layers.0.self_attn.sinks": ("BF16", [4]),
                                       "model.layers.0.mystery.weight": ("BF16", [8, 8]),
                                       "model.visual.blocks.0.attn.qkv.weight": ("BF16", [96, 32])})
    write_checkpoint(tmp_path / "x", TINY_LLAMA, [tensors])
    c = ck.read_local(tmp_path / "x")
    r = ck.rank_bytes(c, SPEC, Layout(tp=2))
    # 107,136 (the plain tiny Llama at TP=2) + sinks 8 + mystery 128 + vision tower 6,144, all whole
    assert r.weights_bytes == 107_136 + 8 + 128 + 6144
    assert r.replicated_unmapped == ["model.layers.0.self_attn.sinks", "model.layers.0.mystery.weight"]
    assert any("vision tower: 6,144 B" in n for n in r.notes)
    assert ck.rank_bytes(c, SPEC, Layout(tp=2), include_vision=False).weights_bytes == 107_136 + 8 + 128


def test_fused_experts_biases_and_sinks_of_a_gpt_oss_checkpoint(tmp_path):
    transformers = pytest.importorskip("transformers")

    cfg = transformers.AutoConfig.for_model(
        "gpt_oss", vocab_size=256, hidden_size=64, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, num_local_experts=4, num_experts_per_tok=2,
        layer_types=["sliding_attention", "full_attention"])
    transformers.AutoModelForCausalLM.from_config(cfg).save_pretrained(tmp_path / "oss")
    c = ck.read_local(tmp_path / "oss")  # fused mlp.experts.gate_up_proj [4, 64, 128], down_proj_bias [4, 64], sinks
    spec = parse_config(json.loads((tmp_path / "oss" / "config.json").read_text()), name="oss")
    assert c.total_bytes == weight_bytes(spec, "fp32").total_bytes == 633_664
    layouts = [Layout(tp=2), Layout(tp=2, ep=True), Layout(dp=4)]
    got = [ck.rank_bytes(c, spec, lay) for lay in layouts]
    assert [r.weights_bytes for r in got] == [rank_weight_bytes(spec, lay, 0, "fp32") for lay in layouts] == [
        319_792, 318_768, 335_680]
    assert all(r.replicated_unmapped == [] for r in got)
