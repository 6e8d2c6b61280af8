"""Vision towers of multimodal wrappers: parameters = transformers 5.23 (ForConditionalGeneration minus its
text model and lm_head, meta device), bytes per TP rank as vLLM shards them, and the plan's weights per
rank with and without vLLM's --language-model-only."""

import pytest

from kvplan.engines import EngineConfig
from kvplan.gpus import GPU_CATALOG
from kvplan.params import count_params
from kvplan.parallel import Layout, tower_rank_bytes
from kvplan.plan import plan
from kvplan.presets import load_preset, preset_config
from kvplan.vllm_args import parse_vllm_command

TEXT_MODULES = ("language_model", "lm_head")

# (preset, tower params), each also checked against transformers below.
TOWERS = [
    ("gemma-3-27b-it", 423_060_336),  # SigLIP 416,866,032 + projector 6,194,304
    ("qwen3-vl-8b-instruct", 576_388_336),
    ("qwen3.5-27b", 460_730_096),
    ("mistral-small-3.1-24b-instruct-2503", 438_958_080),  # Pixtral 403,305,472 + projector 35,652,608
    ("llama-4-scout-17b-16e-instruct", 871_932_416),  # 850,960,896 + 20,971,520
    ("kimi-k2.5", 471_143_920),  # MoonViT 416,866,032 + mm_projector 54,277,888
]


def transformers_tower_params(config: dict) -> int:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    outer = {k: v for k, v in config.items() if k not in ("quantization_config", "auto_map", "model_type")}
    hf_config = transformers.AutoConfig.for_model(config["model_type"], **outer)
    with torch.device("meta"):
        model = transformers.AutoModelForImageTextToText.from_config(hf_config)
    return sum(p.numel() for name, p in model.named_parameters()
               if not set(name.split(".")) & set(TEXT_MODULES))


@pytest.mark.parametrize("name,params", TOWERS)
def test_tower_params(name, params):
    spec = load_preset(name)
    assert count_params(spec).tower_params == params
    # kept out of the LM totals: the preset oracle test checks total_params against the text model alone
    assert count_params(spec).total_params == count_params(spec.model_copy(update={"towers": ()})).total_params


@pytest.mark.parametrize("name,params", [TOWERS[0], TOWERS[1], TOWERS[3], TOWERS[4]])
def test_tower_params_equal_transformers(name, params):
    assert transformers_tower_params(preset_config(name)) == params


def test_siglip_by_hand():
    # Gemma-3-27B vision_config: h 1152, I 4304, 27 layers, patch 14, image 896, no head; text h 5376.
    h, i, n, p = 1152, 4304, 27, 14
    patch = h * 3 * p * p + h  # conv + bias = 678,528
    pos = (896 // p) ** 2 * h  # 4096 x 1152 = 4,718,592
    layer = 4 * (h * h + h) + (i * h + i) + (h * i + h) + 2 * 2 * h  # q k v out, fc1, fc2, 2 LayerNorms
    tower = patch + pos + n * layer + 2 * h  # + post_layernorm = 416,866,032
    projector = h * 5376 + h  # mm_input_projection_weight + RMSNorm = 6,194,304
    assert (tower, projector) == (416_866_032, 6_194_304)
    assert count_params(load_preset("gemma-3-27b-it")).tower_params == tower + projector


def test_gemma3_tower_bytes_per_gpu():
    spec = load_preset("gemma-3-27b-it")
    assert tower_rank_bytes(spec, 1) == 423_060_336 * 2 == 846_120_672  # 0.788 GiB
    # TP 2: linears split (q/k/v/fc1 by output, out/fc2 by input, row biases whole); patch conv,
    # positions, LayerNorms and the projector whole:
    h, i, n = 1152, 4304, 27
    split = n * (3 * (h // 2) * (h + 1) + (h // 2) * h + h + (i // 2) * (h + 1) + (i // 2) * h + h)
    whole = (h * 3 * 14 * 14 + h) + 4096 * h + n * 4 * h + 2 * h + (h * 5376 + h)
    assert tower_rank_bytes(spec, 2) == 2 * (split + whole) == 434_840_688
    assert tower_rank_bytes(spec, 2, replicate=True) == 846_120_672  # --mm-encoder-tp-mode data


def test_plan_weights_grow_by_the_tower_unless_language_model_only():
    spec = load_preset("gemma-3-27b-it")
    gpu = GPU_CATALOG["H100-SXM"]
    for tp, tower in ((1, 846_120_672), (2, 434_840_688)):
        full = plan(spec, gpu, EngineConfig(), Layout(tp=tp))
        text = plan(spec, gpu, EngineConfig(language_model_only=True), Layout(tp=tp))
        assert full.ranks[0].weights_bytes - text.ranks[0].weights_bytes == tower
        assert full.ranks[0].kv_pool_bytes == text.ranks[0].kv_pool_bytes - tower
        term = next(t for t in full.ranks[0].terms if t.name.startswith("vision tower"))
        assert (term.bytes, term.basis, term.applied) == (tower, "exact", False)
        assert not any(t.name.startswith("vision tower") for t in text.ranks[0].terms)
    data = plan(spec, gpu, EngineConfig(mm_encoder_tp_mode="data"), Layout(tp=2))
    text = plan(spec, gpu, EngineConfig(language_model_only=True), Layout(tp=2))
    assert data.ranks[0].weights_bytes - text.ranks[0].weights_bytes == 846_120_672
    # a text-only model has no tower: the flag changes nothing
    llama = load_preset("llama-3.1-8b")
    assert (plan(llama, gpu, EngineConfig()).ranks[0].weights_bytes
            == plan(llama, gpu, EngineConfig(language_model_only=True)).ranks[0].weights_bytes)


def test_vllm_flags():
    assert parse_vllm_command("vllm serve google/gemma-3-27b-it --language-model-only").language_model_only
    off = parse_vllm_command("""vllm serve m --limit-mm-per-prompt '{"image": 0, "video": 0}'""")
    assert off.engine_fields()["language_model_only"] is True
    assert not parse_vllm_command("""vllm serve m --limit-mm-per-prompt '{"image": 2}'""").language_model_only
    assert parse_vllm_command("vllm serve m --mm-encoder-tp-mode data").engine_fields()["mm_encoder_tp_mode"] == "data"
    EngineConfig(**parse_vllm_command("vllm serve m --language-model-only").engine_fields())


def test_bad_vision_config_is_a_warning_not_a_traceback():
    from kvplan.hf_config import parse_config

    cfg = dict(preset_config("gemma-3-27b-it"))
    cfg["vision_config"] = {**cfg["vision_config"], "hidden_size": "wide"}
    spec = parse_config(cfg)
    assert spec.towers == () and any("vision tower not counted" in w for w in spec.warnings)
