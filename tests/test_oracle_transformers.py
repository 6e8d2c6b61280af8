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
    hf_config = transformers.AutoConfig.for_model(model_type, **cfg)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(hf_config)
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name", preset_names())
def test_total_params_equal_transformers(name):
    ours = count_params(load_preset(name)).total_params
    assert ours == transformers_param_count(preset_config(name))


def test_llama_3_1_8b_published_count():
    # Meta's model card and transformers both give 8,030,261,248 parameters.
    assert count_params(load_preset("llama-3.1-8b")).total_params == 8_030_261_248
