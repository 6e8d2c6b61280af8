"""The speed-ups of issue #11 (bench/core.py) change no figure: each shortcut gives what the long way gives.

Timings live in bench/core.py; these tests pin the shortcuts' answers (and the one memo key they found missing).
"""

import dataclasses
import json
from pathlib import Path

from pydantic import BaseModel

from kvplan import load_preset, parse_config, preset_config
from kvplan.engines import EngineConfig, vllm_has
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.spec import Linear, Norm
from kvplan.vllm_layouts import marlin_refusal, vllm_quant_layout_extra_bytes
from kvplan.weights import spec_formats

CONFIGS = Path(__file__).parent / "fixtures" / "configs"


def test_spec_formats_lists_every_format_a_component_can_take():
    # DeepSeek-V3 ships fp8 128 x 128 blocks with no ignore list: its own format and the 16-bit rest
    v3 = parse_config(preset_config("deepseek-v3"))
    assert spec_formats(v3, None) == {"fp8-block", "unquantized"}
    assert spec_formats(v3, "int4-g128") == {"int4-g128", "unquantized"}  # a what-if format drops the overrides
    # Qwen3.6-27B NVFP4 (modelopt): NVFP4 weight-only with FP8 layers in its per-module list
    q = parse_config(json.loads((CONFIGS / "qwen3.6-27b-nvfp4.json").read_text()), transformers=False)
    assert spec_formats(q, None) == {"nvfp4-wo", "fp8-static", "unquantized"}
    assert {o.format for o in q.quantization_overrides} <= spec_formats(q, None)


def test_the_format_shortcuts_answer_as_the_walk_does():
    # a GPTQ checkpoint with per-module formats is walked (and its Marlin layout priced); an fp8 one is not
    cfg = preset_config("llama-3.1-8b")
    cfg["quantization_config"] = json.loads((CONFIGS / "gptq-dynamic.quantization_config.json").read_text())
    gptq = parse_config(cfg)
    assert "gptq-int4-g128-actorder" in spec_formats(gptq, None)
    # act order at TP1 on an A100 (Marlin): qzeros kept at half, g_idx replaced by sort indices: not 0
    assert vllm_quant_layout_extra_bytes(gptq, Layout(1), 0, None, "A100-80GB", "0.33") != 0
    v3 = parse_config(preset_config("deepseek-v3"))
    assert vllm_quant_layout_extra_bytes(v3, Layout(8), 0, None, "H200", "0.33") == 0
    assert marlin_refusal(v3, Layout(8), None, "H200", "0.33") is None


def test_component_equality_is_pydantics():
    a = Linear(name="q_proj", in_features=4096, out_features=4096)
    same = Linear(name="q_proj", in_features=4096, out_features=4096)
    other = Linear(name="q_proj", in_features=4096, out_features=1024)
    norm = Norm(name="q_proj", dim=4096)
    for x, y in ((a, same), (a, other), (a, norm), (norm, Norm(name="q_proj", dim=4096))):
        assert (x == y) is BaseModel.__eq__(x, y)
        assert (x != y) is (not BaseModel.__eq__(x, y))
    assert hash(a) == hash(same) and a != 5
    # a spec (private memo) keeps pydantic's rule: a used memo tells two equal specs apart
    s1, s2 = load_preset("qwen3-0.6b"), load_preset("qwen3-0.6b")
    assert s1 == s2
    s1.memo("k", lambda: 1)
    assert (s1 == s2) is BaseModel.__eq__(s1, s2)


def test_layout_hash_is_the_dataclass_hash_of_its_fields():
    lay = Layout(tp=4, pp=2)
    assert hash(lay) == hash((4, 2, 1, False, 1, None, None)) == hash(Layout(4, 2))
    moved = dataclasses.replace(lay, pp_split=(40, 40))
    assert moved != lay and hash(moved) == hash((4, 2, 1, False, 1, None, (40, 40)))
    assert {lay: "x"}[Layout(4, 2)] == "x"


def test_memo_computes_a_none_once():
    spec = load_preset("qwen3-0.6b")
    calls = []
    assert spec.memo(("none",), lambda: calls.append(1)) is None
    assert spec.memo(("none",), lambda: calls.append(1)) is None
    assert calls == [1]


def test_vllm_has_cached_answers_as_the_profile_says():
    # marlin_tile_padding came with 0.24.0 (kvplan.engines.VLLM_CHANGES)
    assert [vllm_has(v, "marlin_tile_padding") for v in ("0.22", "0.24", "0.24", "0.33")] == [False, True, True, True]


def test_sglang_rocm_budget_is_keyed_by_the_aiter_length_rule():
    # SGLang on ROCm scales mem_fraction_static by 0.85 above context_len 8192 (kvplan.sglang.aiter_haircut): a spec
    # planned at 8192 first must not hand that budget to 131072 (the memo key was length-free)
    spec = load_preset("llama-3.1-8b")
    gpu, engine = get_gpu("MI300X"), EngineConfig(engine="sglang")
    short = plan(spec, gpu, engine.model_copy(update={"max_model_len": 8192}), Layout(1), suggest=False)
    long_warm = plan(spec, gpu, engine.model_copy(update={"max_model_len": 131072}), Layout(1), suggest=False)
    long_fresh = plan(spec.model_copy(), gpu, engine.model_copy(update={"max_model_len": 131072}), Layout(1),
                      suggest=False)
    assert long_warm == long_fresh
    assert long_fresh.ranks[0].kv_pool_bytes < short.ranks[0].kv_pool_bytes  # the haircut leaves less


def test_a_pickled_layout_hashes_afresh():
    import pickle

    lay = Layout(tp=2)
    hash(lay)
    back = pickle.loads(pickle.dumps(lay))
    assert "_hash" not in back.__dict__ and back == lay and hash(back) == hash(lay)
