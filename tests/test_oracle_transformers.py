"""The oracle: transformers' own parameter count for every preset, exactly.

Each preset's config is built with transformers on the ``meta`` device (no weights, no
network) and ``sum(p.numel() for p in model.parameters())`` must equal kvplan's total.
"""

import pytest

from kvplan import count_params, load_preset, preset_config, preset_names
from kvplan.hf_config import text_decoder_config

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.oracle


def transformers_param_count(config: dict) -> int:
    cfg, model_type, _, _ = text_decoder_config(config)
    cfg = {k: v for k, v in cfg.items() if k not in ("quantization_config", "auto_map", "model_type")}
    # a wrapper, or a flat one (Qwen2.5-VL's published config.json: the decoder's fields beside vision_config)
    if (cfg is not config or "vision_config" in config) and \
            model_type not in transformers.models.auto.modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return _wrapper_text_param_count(config)
    hf_config = transformers.AutoConfig.for_model(model_type, **cfg)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(hf_config)
    return sum(p.numel() for p in model.parameters())


VISION_MODULES = ("visual", "vision_tower", "vision_model", "multi_modal_projector")


def wrapper_param_count(config: dict, skip_modules: tuple[str, ...]) -> int:
    """Parameters of a multimodal wrapper's ForConditionalGeneration (AutoModelForImageTextToText, on the
    meta device) outside the modules named in ``skip_modules``."""
    outer = {k: v for k, v in config.items() if k not in ("quantization_config", "auto_map", "model_type")}
    hf_config = transformers.AutoConfig.for_model(config["model_type"], **outer)
    with torch.device("meta"):
        model = transformers.AutoModelForImageTextToText.from_config(hf_config)
    return sum(p.numel() for name, p in model.named_parameters() if not set(name.split(".")) & set(skip_modules))


def _wrapper_text_param_count(config: dict) -> int:
    """A wrapper whose text decoder has no causal-LM class (Qwen3-VL in transformers 5.23): the
    ForConditionalGeneration's parameters outside its vision tower and projector (the language
    model and lm_head, tied or not as the wrapper's config says)."""
    return wrapper_param_count(config, VISION_MODULES)


@pytest.mark.parametrize("name", preset_names())
def test_total_params_equal_transformers(name):
    ours = count_params(load_preset(name)).total_params
    assert ours == transformers_param_count(preset_config(name))


def test_llama_3_1_8b_published_count():
    # Meta's model card and transformers both give 8,030,261,248 parameters.
    assert count_params(load_preset("llama-3.1-8b")).total_params == 8_030_261_248


# Every family, from transformers' own config class: its defaults plus variations that flip
# the switches our builders read (biases, tying, MQA, new decoder architecture, MoE spacing).
FAMILY_VARIANTS = [
    ("llama", {}), ("llama", {"attention_bias": True, "mlp_bias": True, "tie_word_embeddings": True}),
    ("mistral", {}), ("mixtral", {}), ("qwen2", {}), ("qwen2", {"use_sliding_window": True}),
    ("qwen2_moe", {}), ("qwen2_moe", {"mlp_only_layers": [0, 3], "decoder_sparse_step": 2}),
    ("qwen3", {}), ("qwen3_moe", {"mlp_only_layers": [1]}), ("gemma", {}), ("gemma2", {}), ("gemma3_text", {}),
    ("phi3", {}), ("phi", {}), ("phi", {"qk_layernorm": True}),
    ("falcon", {}), ("falcon", {"new_decoder_architecture": True, "num_kv_heads": 8}),
    ("falcon", {"multi_query": False, "parallel_attn": False, "bias": True}),
    ("gpt2", {}), ("gpt_bigcode", {}), ("gpt_bigcode", {"multi_query": False}), ("gpt_neox", {}),
    ("opt", {}), ("opt", {"word_embed_proj_dim": 512, "hidden_size": 1024, "num_attention_heads": 16, "ffn_dim": 4096}),
    ("deepseek_v2", {}), ("deepseek_v2", {"q_lora_rank": None}), ("deepseek_v3", {"num_hidden_layers": 5}),
    ("gpt_oss", {}), ("llama4_text", {}), ("llama4_text", {"interleave_moe_layer_step": 2}),
    ("nemotron_h", {"hybrid_override_pattern": "M-M*-E-M*", "num_hidden_layers": 9}),
    ("qwen3_next", {}),
]


@pytest.mark.parametrize("model_type,overrides", FAMILY_VARIANTS)
def test_family_defaults_equal_transformers(model_type, overrides):
    cfg = transformers.AutoConfig.for_model(model_type, **overrides).to_dict()
    cfg["model_type"] = model_type
    if "hybrid_override_pattern" in overrides:
        cfg["hybrid_override_pattern"] = overrides["hybrid_override_pattern"]
        cfg.pop("layers_block_type", None), cfg.pop("layer_types", None)
    from kvplan import parse_config

    assert count_params(parse_config(cfg)).total_params == transformers_param_count(cfg)
