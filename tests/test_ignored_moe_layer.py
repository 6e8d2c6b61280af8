"""An ignore list that keeps one MoE layer's experts unquantized plans (it used to raise AssertionError from
weights.matrix_bytes: vllm_layouts.vllm_moe_expert_bytes priced the kept layer in the format "unquantized")."""
from kvplan import parse_config
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.plan import plan
from kvplan.presets import preset_config

FP8 = {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3", "weight_block_size": [128, 128]}


def _weights(ignored):
    cfg = preset_config("qwen3-30b-a3b") | {"quantization_config": FP8 | {"ignored_layers": ignored}}
    return plan(parse_config(cfg), get_gpu("H100-SXM"), EngineConfig(max_model_len=8192)).ranks[0].weights_bytes


def test_an_ignored_moe_layer_is_planned_in_bf16():
    # Qwen3-30B-A3B: 128 experts of gate / up / down [768, 2048]: 3 x 1,572,864 = 4,718,592 parameters an expert.
    # fp8 block 128 x 128: 4,718,592 B + 3 x (6 x 16 blocks x 4 B) = 4,719,744 B; bf16: 9,437,184 B.
    # Keeping layer 3's MLP unquantized adds 128 x (9,437,184 - 4,719,744) = 603,832,320 B
    assert _weights(["model.layers.3.mlp"]) - _weights([]) == 128 * (9_437_184 - 4_719_744) == 603_832_320
