"""A name that says "quantized" over a config.json that does not: the plan warns instead of silently pricing bf16.

NVIDIA's ModelOpt exports keep their scheme in hf_quant_config.json, not config.json: the real
nemotron-3-super-120b-a12b-fp8 config (tests/fixtures/configs/SOURCES.json) has no quantization_config, so kvplan
prices its weights at the config's bf16 -- right for the file, wrong for the checkpoint. The plan must say so.
"""

import json
from pathlib import Path

import pytest

from kvplan import load_preset
from kvplan.gpus import get_gpu
from kvplan.hf_config import parse_config, quantized_name_without_config
from kvplan.plan import plan
from kvplan.presets import preset_config

SUPER = Path(__file__).parent / "fixtures" / "configs" / "nemotron-3-super-120b-a12b-fp8.json"


def test_nemotron_super_fp8_config_without_quantization_config_warns_in_the_plan():
    cfg = json.loads(SUPER.read_text())
    assert "quantization_config" not in cfg
    spec = parse_config(cfg, "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8")
    assert spec.quantization is None and spec.dtype == "bf16"  # priced as the file says
    p = plan(spec, get_gpu("B200"))
    [w] = [w for w in p.warnings if "no quantization_config" in w]
    assert w.startswith("the name 'nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8' says FP8 but config.json has no "
                        "quantization_config: the weights are priced at bf16")
    assert "hf_quant_config.json" in w and "--quantization" in w


def test_a_config_that_names_its_quantization_is_quiet():
    spec = load_preset("glm-5.2-fp8")  # quantization_config present
    assert spec.quantization is not None
    assert not [w for w in spec.warnings if "no quantization_config" in w]
    assert parse_config(preset_config("qwen3-8b"), "Qwen/Qwen3-8B").warnings == ()


@pytest.mark.parametrize("name,marker", [
    ("nvidia/Qwen3-8B-NVFP4", "NVFP4"), ("x/Llama-3.1-8B-Instruct-AWQ-INT4", "AWQ"), ("foo_w4a16", "W4A16"),
    ("org/model.fp8", "FP8"), ("unsloth/foo-bnb-4bit", "BNB"),
])
def test_name_markers(name, marker):
    w = quantized_name_without_config(name, {"dtype": "bf16"})
    assert w is not None and f"says {marker} but" in w


@pytest.mark.parametrize("name", ["Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B", "gpt-oss-fp8x", "Int8Tokenizer-7B",
                                  "", "deepseek-ai/DeepSeek-V3"])
def test_names_without_a_marker_part(name):
    # a marker must be a whole name part: "fp8x" or "Int8Tokenizer" are not formats
    assert quantized_name_without_config(name, {"dtype": "bf16"}) is None


def test_naming_the_weight_format_answers_the_warning():
    from kvplan.engines import EngineConfig

    spec = parse_config(json.loads(SUPER.read_text()), "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8")
    p = plan(spec, get_gpu("B200"), EngineConfig(weight_format="fp8"))
    assert not [w for w in p.warnings if "no quantization_config" in w]


@pytest.mark.oracle
@pytest.mark.slow  # imports torch and builds on the meta device (~10 s here)
def test_transformers_built_specs_warn_by_their_name_too():
    # A family kvplan builds through transformers only (arcee, no native builder): parse_config returned its build
    # without the name check before, so "org/arcee-tiny-FP8" over a bf16 config was priced quietly.
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from kvplan.transformers_path import build_spec

    small = dict(vocab_size=256, hidden_size=64, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=16, max_position_embeddings=512)
    cfg = {**transformers.AutoConfig.for_model("arcee", **small).to_dict(), "model_type": "arcee",
           "torch_dtype": "bfloat16"}
    spec = parse_config(cfg, "org/arcee-tiny-FP8")
    assert spec.basis == "transformers" and spec.quantization is None
    [w] = [w for w in spec.warnings if "no quantization_config" in w]
    assert w.startswith("the name 'org/arcee-tiny-FP8' says FP8 but config.json has no quantization_config: the "
                        "weights are priced at bf16")
    # the same cached build under a plain name: no such warning; under its _name_or_path (the build's own name)
    assert not [w for w in build_spec(cfg, "org/arcee-tiny").warnings if "no quantization_config" in w]
    named = {**cfg, "_name_or_path": "org/arcee-tiny-AWQ"}
    assert [w for w in build_spec(named, "org/arcee-tiny-AWQ").warnings if "says AWQ but" in w]
    assert not [w for w in build_spec(named, "org/arcee-tiny").warnings if "no quantization_config" in w]
