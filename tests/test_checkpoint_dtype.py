"""A checkpoint's weights in the dtype the engine serves, and one local root for the Model and Validate pages.

1. vLLM creates every unquantized parameter in the model dtype (model_loader/base_loader.py
   ``set_default_torch_dtype(model_config.dtype)``; layers/linear.py UnquantizedLinearMethod.create_weights
   ``torch.empty(..., dtype=params_dtype)``) and copies each saved tensor into it (model_loader/weight_utils.py
   default_weight_loader ``param.data.copy_(loaded_weight)``; vLLM 0.33.0 wheel). ``--dtype auto`` serves a float32
   config in bf16 (config/model.py _resolve_auto_dtype, "Downcast for float32 models"), SGLang in fp16 (bf16 for
   Gemma; configs/model_config.py _get_and_verify_dtype, 0.5.20 wheel). So an F32 checkpoint's float tensors count
   2 B an element under ``auto``, 4 B under ``--dtype float32`` (weight_format fp32), and a BF16 one 4 B under
   ``--dtype float32``; a quantized checkpoint loads as saved (kvplan.checkpoint.rank_bytes ``served_dtype``).
2. pages/validate.py and the Model page's local folders read one root: KVPLAN_CHECKPOINT_ROOT, else the older
   KVPLAN_LOCAL_MODELS (kvplan.web.checkpoint.checkpoint_root).
"""

import json

import pytest

from kvplan import checkpoint as ck
from kvplan.cli import main
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.hf_config import parse_config
from kvplan.parallel import Layout
from kvplan.plan import plan, served_dtype
from kvplan.web import checkpoint as web_ck
from kvplan.web.state import encode_config
from tests.checkpoint_files import TINY_LLAMA, llama_tensors, write_checkpoint

# The tiny Llama (tests/checkpoint_files.TINY_LLAMA: hidden 64, intermediate 128, 2 layers, 4 heads, 2 KV heads,
# head_dim 16, vocab 256, untied): embed 256 x 64 = 16,384; per layer q 64 x 64 = 4,096, k and v 32 x 64 = 2,048 each,
# o 4,096, gate / up / down 128 x 64 = 8,192 each, 2 norms x 64 = 128 -> 36,992; final norm 64; lm_head 16,384:
# 16,384 + 2 x 36,992 + 64 + 16,384 = 106,816 parameters. F32: 427,264 B; served in 16 bits: 213,632 B.
PARAMS = 106_816
# TP 2: embed / lm_head 128 rows x 64 = 8,192 each; per layer q 32 x 64 = 2,048, k / v one KV head 16 x 64 = 1,024
# each, o 64 x 32 = 2,048, gate / up 64 x 64 = 4,096 each, down 64 x 64 = 4,096, norms whole 128 -> 18,560;
# 2 x 8,192 + 2 x 18,560 + 64 = 53,568 elements on the busiest rank: 107,136 B in 16 bits, 214,272 B in fp32.
TP2_ELEMENTS = 53_568
# vLLM's rotary cos/sin cache, a buffer the headers do not hold, added by the plan: 512 positions x 16 x dtype bytes.
ROPE_16, ROPE_32 = 512 * 16 * 2, 512 * 16 * 4
FP32_CFG = dict(TINY_LLAMA, torch_dtype="float32")
GPU = get_gpu("H100")


def _folder(tmp_path, name, cfg, tensors):
    write_checkpoint(tmp_path / name, cfg, [tensors])
    return tmp_path / name


@pytest.fixture
def fp32(tmp_path):
    folder = _folder(tmp_path, "fp32", FP32_CFG, llama_tensors(FP32_CFG, "F32"))
    return folder, ck.read_local(folder), parse_config(FP32_CFG, name="tiny-fp32")


def test_fp32_checkpoint_counts_at_the_served_dtype(fp32):
    _, c, spec = fp32
    assert c.total_bytes == 4 * PARAMS == 427_264  # as saved
    assert served_dtype(spec, EngineConfig()) == "bf16"
    assert served_dtype(spec, EngineConfig(weight_format="fp32")) == "fp32"
    assert served_dtype(spec, EngineConfig(engine="sglang")) == "fp16"
    assert served_dtype(spec, EngineConfig(engine="custom")) is None
    cases = {"vllm auto": EngineConfig(), "vllm --dtype float32": EngineConfig(weight_format="fp32"),
             "vllm --dtype float16": EngineConfig(weight_format="fp16"), "sglang auto": EngineConfig(engine="sglang"),
             "sglang --dtype float32": EngineConfig(engine="sglang", weight_format="fp32"),
             "custom": EngineConfig(engine="custom")}
    got = {k: (ck.engine_with_checkpoint_weights(e, c, spec).weights_bytes,
               ck.engine_with_checkpoint_weights(e, c, spec, Layout(tp=2)).weights_bytes) for k, e in cases.items()}
    assert got == {"vllm auto": (2 * PARAMS, 2 * TP2_ELEMENTS), "vllm --dtype float32": (4 * PARAMS, 4 * TP2_ELEMENTS),
                   "vllm --dtype float16": (2 * PARAMS, 2 * TP2_ELEMENTS),
                   "sglang auto": (2 * PARAMS, 2 * TP2_ELEMENTS),
                   "sglang --dtype float32": (4 * PARAMS, 4 * TP2_ELEMENTS),
                   "custom": (4 * PARAMS, 4 * TP2_ELEMENTS)}  # kvplan's own engine: as saved
    assert 2 * TP2_ELEMENTS == 107_136 and 4 * TP2_ELEMENTS == 214_272
    e = ck.engine_with_checkpoint_weights(EngineConfig(), c, spec, Layout(tp=2))
    assert e.weights_source.endswith("21 tensors in 1 file; cast from F32 to bf16 as vLLM loads it")
    r = ck.busiest_rank(c, spec, Layout(), **ck.load_options(EngineConfig(engine="sglang"), spec))
    assert r.cast == "cast from F32 to fp16 as SGLang loads it" and r.weights_bytes == 213_632
    assert r.by_category["lm_head"] == 2 * 16_384
    assert ck.busiest_rank(c, spec, Layout(), **ck.load_options(EngineConfig(weight_format="fp32"), spec)).cast == ""
    # the plan budgets the same bytes its own computed weights would be served in: 213,632 = kvplan's bf16 sum
    p = plan(spec, GPU, ck.engine_with_checkpoint_weights(EngineConfig(), c, spec))
    computed = plan(spec, GPU, EngineConfig())
    assert p.ranks[0].weights_bytes == computed.ranks[0].weights_bytes == 213_632 + ROPE_16


def test_bf16_checkpoint_served_in_float32_counts_four_bytes(tmp_path):
    c, spec = ck.read_local(_folder(tmp_path, "bf16", TINY_LLAMA, llama_tensors())), parse_config(TINY_LLAMA, name="t")
    assert c.total_bytes == 2 * PARAMS
    assert ck.engine_with_checkpoint_weights(EngineConfig(), c, spec).weights_bytes == 213_632  # as saved: no cast
    e = ck.engine_with_checkpoint_weights(EngineConfig(weight_format="fp32"), c, spec)
    assert e.weights_bytes == 4 * PARAMS == 427_264
    assert e.weights_source.endswith("cast from BF16 to fp32 as vLLM loads it")


# fp8 (vLLM Fp8Config, per-tensor): the 7 linears of each layer F8_E4M3 with an F32 weight_scale [] each; embeddings,
# norms, lm_head in F32 (config float32): 2 x (12,288 + 24,576) fp8 B + 14 x 4 scale B + (16,384 + 2 x 128 + 64 +
# 16,384) x 4 B = 73,728 + 56 + 132,352 = 206,136 B, the same whatever --dtype says (the loader keeps the quantized
# tensors as saved).
FP8_CFG = dict(FP32_CFG, quantization_config={"quant_method": "fp8", "activation_scheme": "dynamic"})
LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def _quantized(dtype: str, scale_shape) -> dict:
    out = {}
    for name, (_, shape) in llama_tensors(FP32_CFG, "F32").items():
        if name.rsplit(".", 2)[-2] in LINEARS:
            out[name] = (dtype, shape)
            out[name + "_scale"] = ("F32", scale_shape(shape))
        else:
            out[name] = ("F32", shape)
    return out


# int8 w8a8 (compressed-tensors, per-channel weights, dynamic per-token activations): I8 linears, F32 weight_scale
# [out, 1]: 73,728 B + 2 x (64 + 32 + 32 + 64 + 128 + 128 + 64) x 4 = 4,096 B of scales + 132,352 = 210,176 B.
INT8_CFG = dict(FP32_CFG, quantization_config={
    "quant_method": "compressed-tensors", "format": "int-quantized", "ignore": ["lm_head"],
    "config_groups": {"group_0": {"targets": ["Linear"],
                                  "weights": {"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": True},
                                  "input_activations": {"num_bits": 8, "type": "int", "strategy": "token",
                                                        "dynamic": True}}}})


@pytest.mark.parametrize("cfg, dtype, scale_shape, total", [
    (FP8_CFG, "F8_E4M3", lambda shape: [], 206_136),
    (INT8_CFG, "I8", lambda shape: [shape[0], 1], 210_176)])
def test_quantized_checkpoints_load_as_saved(tmp_path, capsys, cfg, dtype, scale_shape, total):
    folder = _folder(tmp_path, "q", cfg, _quantized(dtype, scale_shape))
    c, spec = ck.read_local(folder), parse_config(cfg, name="tiny-q")
    assert spec.quantization and c.total_bytes == total
    assert served_dtype(spec, EngineConfig()) is None
    for e in (EngineConfig(), EngineConfig(weight_format="fp32"), EngineConfig(engine="sglang")):
        assert ck.engine_with_checkpoint_weights(e, c, spec).weights_bytes == total
    # a checkpoint holding fp8 / int8 tensors loads as saved even when asked to cast (rank_bytes' own guard)
    plain = parse_config(FP32_CFG, name="tiny")
    assert ck.rank_bytes(c, plain, served_dtype="bf16").weights_bytes == total
    assert main(["plan", str(folder / "config.json"), "--checkpoint", str(folder), "--json"]) == 0
    w = json.loads(capsys.readouterr().out)["weights_checkpoint"]
    assert w["busiest_rank_bytes"] == total and w["cast"] is None and w["served_dtype"] is None


def _cli(capsys, *argv):
    rc = main(["plan", *map(str, argv)])
    out = capsys.readouterr()
    assert rc == 0, out.err
    return out.out


def test_cli_checkpoint_fp32_default_dtype_float32_and_sglang(fp32, capsys):
    folder, _, _ = fp32
    doc = json.loads(_cli(capsys, folder, "--checkpoint", folder, "-tp", "2", "--json"))
    w = doc["weights_checkpoint"]
    assert (w["total_bytes"], w["busiest_rank_bytes"], w["computed_rank_bytes"]) == (427_264, 107_136, 107_136)
    assert w["cast"] == "cast from F32 to bf16 as vLLM loads it" and w["served_dtype"] == "bf16"
    assert any(n.startswith("cast from F32 to bf16 as vLLM loads it") for n in w["notes"])
    term = next(t for t in doc["ranks"][0]["terms"] if t["name"] == "weights")
    assert term["bytes"] == 107_136 + ROPE_16 and "cast from F32 to bf16 as vLLM loads it" in term["source"]
    text = _cli(capsys, folder, "--checkpoint", folder, "-tp", "2")
    assert (f"  weights from 1 safetensors headers of {folder}: 0.00 GiB (107,136 B) on the busiest rank (kvplan's "
            "own layout: 0.00 GiB (107,136 B)), cast from F32 to bf16 as vLLM loads it") in text.splitlines()

    # --weight-format fp32 (vLLM's --dtype float32): 4 B an element, no cast; its rotary cache in fp32 too
    doc = json.loads(_cli(capsys, folder, "--checkpoint", folder, "-tp", "2", "--weight-format", "fp32", "--json"))
    w = doc["weights_checkpoint"]
    assert (w["busiest_rank_bytes"], w["computed_rank_bytes"], w["cast"]) == (214_272, 214_272, None)
    assert doc["ranks"][0]["weights_bytes"] == 214_272 + ROPE_32

    # SGLang downcasts to fp16: the same 2 B an element
    doc = json.loads(_cli(capsys, folder, "--checkpoint", folder, "--engine", "sglang", "--json"))
    w = doc["weights_checkpoint"]
    assert (w["busiest_rank_bytes"], w["cast"]) == (213_632, "cast from F32 to fp16 as SGLang loads it")


def test_sglang_plans_an_fp32_config_in_fp16(fp32):
    _, _, spec = fp32
    # KV: 2 layers x 2 KV heads x (16 + 16) x 2 B = 256 B / token in fp16 (512 in fp32)
    p = plan(spec, GPU, EngineConfig(engine="sglang"))
    assert p.ranks[0].kv_bytes_per_token == 256
    assert any("dtype: torch.float16" in line for line in p.engine_log)
    q = plan(spec, GPU, EngineConfig(engine="sglang", weight_format="fp32"))
    assert q.ranks[0].kv_bytes_per_token == 512
    gemma = parse_config({"model_type": "gemma2", "architectures": ["Gemma2ForCausalLM"], "hidden_size": 64,
                          "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
                          "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256, "torch_dtype": "float32",
                          "max_position_embeddings": 512, "sliding_window": 256, "query_pre_attn_scalar": 16},
                         name="tiny-gemma2")
    assert served_dtype(gemma, EngineConfig(engine="sglang")) == "bf16"  # "For Gemma ..., we downcast to bfloat16"


# --------------------------------------------------------------------------------------- one root, two pages

def test_checkpoint_root_reads_either_name(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "m").mkdir()
    assert web_ck.checkpoint_root({}) is None
    assert web_ck.checkpoint_root({"KVPLAN_LOCAL_MODELS": str(b)}) == b.resolve()
    assert web_ck.checkpoint_root({"KVPLAN_CHECKPOINT_ROOT": str(a), "KVPLAN_LOCAL_MODELS": str(b)}) == a.resolve()
    assert web_ck.checkpoint_root({"KVPLAN_CHECKPOINT_ROOT": "  ", "KVPLAN_LOCAL_MODELS": str(b)}) == b.resolve()
    env = {"KVPLAN_LOCAL_MODELS": str(a)}
    assert web_ck.local_folder("m", env) == (a / "m").resolve()
    with pytest.raises(ck.CheckpointError, match=r"not under KVPLAN_LOCAL_MODELS"):
        web_ck.local_folder("../b", env)  # the path-escape refusal names the variable in use
    unset = r"KVPLAN_CHECKPOINT_ROOT is not set on this server \(nor the older KVPLAN_LOCAL_MODELS\)"
    with pytest.raises(ck.CheckpointError, match=unset):
        web_ck.local_folder("m", {})


@pytest.mark.parametrize("variable", ["KVPLAN_CHECKPOINT_ROOT", "KVPLAN_LOCAL_MODELS"])
def test_validate_and_model_pages_read_either_variable(tmp_path, monkeypatch, variable):
    from streamlit.testing.v1 import AppTest

    from tests.app_util import plain, run_app
    from tests.test_validate_page import PAGE

    root = tmp_path / "root"
    _folder(root, "tiny", TINY_LLAMA, llama_tensors())
    _folder(tmp_path, "outside", TINY_LLAMA, llama_tensors())
    (root / "escape").symlink_to(tmp_path / "outside")  # a link out of the root: not listed, not read
    for name in web_ck.ROOT_ENVS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, str(root))
    at = AppTest.from_file(PAGE, default_timeout=30)
    at.query_params["m"] = "gpt2"
    at.run()
    assert not at.exception
    at.radio[0].set_value("local").run()
    assert at.selectbox[0].options == ["tiny"]  # escape/ (a link out of the root) is not listed

    model = run_app({"v": "1", "cfg": encode_config(TINY_LLAMA), "mn": "tiny"}, "pages/model.py")
    box = model.text_input(key="model.local")
    assert box.label == f"Local folder under {root.resolve()}"
    box.set_value("escape").run()
    model.button(key="model.local_headers").click().run()
    assert not model.exception
    assert f"Local checkpoint folder (ckd) = escape: 'escape' is not under {variable} ({root.resolve()}); the app " \
           "reads local folders only under it" in [plain(e.value) for e in model.error]
    box.set_value("tiny").run()
    model.button(key="model.local_headers").click().run()
    assert not model.exception and not model.error
    assert any("21 tensors in 1 file, 213,632 B" in plain(m.value) for m in model.markdown)


def test_the_app_plans_an_fp32_folder_as_the_cli_does(fp32, monkeypatch):
    from kvplan.web import cached
    from kvplan.web.state import PlanState

    folder, _, _ = fp32
    monkeypatch.setenv(web_ck.ROOT_ENV, str(folder.parent))
    base = dict(config=encode_config(FP32_CFG), model_name="tiny-fp32", checkpoint_dir="fp32", tensor_parallel_size=2)
    got = {fmt: cached.weights_choice(PlanState(**base, weight_format=fmt)) for fmt in (None, "fp32")}
    # 53,568 elements on the busiest TP-2 rank: x 2 B served in bf16 (--dtype auto), x 4 B with --dtype float32
    assert (got[None].weights_bytes, got["fp32"].weights_bytes) == (107_136, 214_272)
    assert got[None].source.endswith("; cast from F32 to bf16 as vLLM loads it") and "cast" not in got["fp32"].source
    assert any(n.startswith("cast from F32 to bf16 as vLLM loads it") for n in got[None].notes)
    sg = cached.weights_choice(PlanState(**base, engine="sglang"))
    assert sg.weights_bytes == 107_136 and sg.source.endswith("cast from F32 to fp16 as SGLang loads it")
