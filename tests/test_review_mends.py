"""Review mends: one fused-linear table for vLLM (allocator and quantized layouts), the draft config read by
hf_config.Reader, and the start-up log page taking the core's "Does not load" verdict.

Sources: vLLM's Qwen3.5 gated-delta-net builds in_proj_qkvz as one MergedColumnParallelLinear (output_sizes [key_dim,
key_dim, value_dim, value_dim]; 0.17.0 / 0.18.0 models/qwen3_5.py ``Qwen3_5GatedDeltaNet.create_qkvz_proj``, 0.19.0
layers/mamba/gdn_linear_attn.py, 0.25.0 - 0.33.0 layers/mamba/gdn/qwen_gdn_linear_attn.py), loading the checkpoint's
in_proj_qkv into shards (0, 1, 2) and in_proj_z into shard 3 (stacked_params_mapping / the 0.25+ remapping), and
in_proj_ba likewise from in_proj_b / in_proj_a: one parameter, one allocation (only with LoRA, 0.19+, are qkv and z
kept apart, ``create_in_proj_qkvz=vllm_config.lora_config is None``).
"""

import pytest
from streamlit.testing.v1 import AppTest

from kvplan import load_preset
from kvplan.engines import VLLM_DEFAULT_VERSION
from kvplan.errors import ConfigError
from kvplan.parallel import Layout
from kvplan.units import MiB
from kvplan.vllm_alloc import vllm_allocator_rounding_bytes
from kvplan.vllm_layouts import vllm_fused_name
from tests.app_util import plain
from tests.test_spec_eagle import llama_cfg


def test_fused_names_one_table():
    assert [vllm_fused_name(n) for n in ("q_proj", "shared_experts.up_proj", "in_proj_qkv", "in_proj_z", "in_proj_a",
                                         "o_proj")] == [
        "qkv_proj", "shared_experts.gate_up_proj", "in_proj_qkvz", "in_proj_qkvz", "in_proj_ba", "o_proj"]


def test_qwen3_5_27b_tp4_allocator_blocks_with_fused_in_proj_qkvz():
    # Qwen3.5-27B (H 5120, I 17408, 48 GDN layers: 16 key heads x 128 = key_dim 2048, 48 value heads x 128 = 6144;
    # 16 full-attention layers: q 24 x 256 x 2 (gated) + k 4 x 256 + v 4 x 256 = 14336), TP 4, bf16, block rounding
    # (kvplan.vllm_alloc.torch_block_bytes: >= 10 MiB rounds to 2 MiB, kept whole when <= 1 MiB is left):
    # GDN: in_proj_qkvz (2048 + 2048 + 6144 + 6144) / 4 x 5120 x 2 = 40 MiB (exact, +0); out_proj 5120 x 1536 x 2 = 15
    # MiB -> 16 (+1); gate_up 8704 x 5120 x 2 = 85 -> 86 (+1); down 42.5 (1.5 left: split, 0) = 2 MiB x 48 = 96 MiB.
    # Attention: qkv 3584 x 5120 x 2 = 35 -> 36 (+1), o_proj 15 -> 16 (+1), MLP +1 = 3 MiB x 16 = 48 MiB.
    # Embedding / lm_head 62,080 x 5120 x 2 = 606.25 MiB (1.75 left: split, 0). Total 144 MiB = 150,994,944 B.
    # (in_proj_qkv 25 MiB and in_proj_z 15 MiB as two parameters would add +1 each: 240 MiB, what the allocator's old
    # copy of the table, without the GDN fusions, gave)
    assert vllm_allocator_rounding_bytes(load_preset("qwen3.5-27b"), Layout(tp=4)) == 144 * MiB == 150_994_944


@pytest.mark.parametrize("change, field", [
    ({"num_aux_hidden_states": 0}, "draft_config.num_aux_hidden_states"),
    ({"draft_vocab_size": "32000"}, "draft_config.draft_vocab_size"),
    ({"target_hidden_size": 4096.5}, "draft_config.target_hidden_size"),
])
def test_draft_integers_refused_by_the_reader(change, field):
    from kvplan.drafter import draft_head, parse_draft

    draft = parse_draft("eagle3", {**llama_cfg(), **change}, "bad")
    with pytest.raises(ConfigError) as exc:
        draft_head(draft, VLLM_DEFAULT_VERSION, load_preset("llama-3.1-8b"))
    assert exc.value.field == field


def _startup_page(memory_gib: float) -> None:
    from kvplan import load_preset
    from kvplan.engines import EngineConfig
    from kvplan.gpus import custom_gpu
    from kvplan.plan import plan
    from kvplan.web import views

    views.startup_log(plan(load_preset("llama-3.1-8b"), custom_gpu(memory_gib, 3.35, 989.0, name="between"),
                           EngineConfig()))


def test_weights_between_free_and_device_log_no_figures_as_the_core_says():
    # Llama-3.1-8B bf16 at TP 1: 14.99 GiB of weights (16,094,076,928 B) on a 15.25 GiB GPU: under the device, over
    # its 15.25 - 0.51 (the CUDA context) = 14.74 GiB free at load: the core says "Does not load", the page too
    at = AppTest.from_function(_startup_page, args=(15.25,), default_timeout=30).run()
    assert not at.exception and not at.code
    assert [plain(c.value) for c in at.caption] == [(
        "No start-up figures: the weights of one GPU (14.99 GiB) are more than its memory free when loading starts "
        "(14.74 GiB of 15.25 GiB), so vLLM 0.33 runs out of memory while loading them, before it logs any of its memory "
        "figures.")]


@pytest.mark.parametrize("dtype", ["FP8", "float8_e4m3fn", "int8"])
def test_a_quantized_torch_dtype_is_refused_not_a_traceback(dtype):
    # found by tests/test_hostile_input.py (config {"model_type": None, "torch_dtype": "FP8"} on llama-3.1-8b): the
    # model dtype fp8 reached _rank_weight_bytes' 16-bit table as KeyError 'fp8'
    import json
    from pathlib import Path

    from kvplan import parse_config

    preset = Path(__file__).parents[1] / "kvplan" / "presets" / "llama-3.1-8b.json"
    cfg = json.loads(preset.read_text()) | {"torch_dtype": dtype}
    with pytest.raises(ConfigError) as exc:
        parse_config(cfg, "x")
    assert exc.value.field == "torch_dtype" and "use float32, bfloat16 or float16" in exc.value.message
