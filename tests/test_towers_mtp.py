"""Vision towers of multimodal wrappers: parameters = transformers 5.23 (ForConditionalGeneration minus its
text model and lm_head, meta device), bytes per TP rank as vLLM shards them, and the plan's weights per
rank with and without vLLM's --language-model-only."""

import pytest

from kvplan.engines import EngineConfig
from kvplan.gpus import GPU_CATALOG
from kvplan.parallel import Layout, tower_rank_bytes
from kvplan.params import count_params
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
    ("gemma-4-26b-a4b", 572_792_112),  # ViT 569,548,080 + embed_vision 2,816 x 1,152
    ("gemma-4-31b-it-nvfp4", 575_741_232),  # the same ViT + embed_vision 5,376 x 1,152
]


def transformers_tower_params(config: dict) -> int:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tests.test_oracle_transformers import wrapper_param_count

    return wrapper_param_count(config, TEXT_MODULES)


@pytest.mark.parametrize("name,params", TOWERS)
def test_tower_params(name, params):
    spec = load_preset(name)
    assert count_params(spec).tower_params == params
    # kept out of the LM totals: the preset oracle test checks total_params against the text model alone
    assert count_params(spec).total_params == count_params(spec.model_copy(update={"towers": ()})).total_params


@pytest.mark.parametrize("name,params", [TOWERS[0], TOWERS[1], TOWERS[2], TOWERS[3], TOWERS[4], TOWERS[6]])
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
    # vLLM 0.32, whose V2 dummy sampler holds the logits alone (0.33.0's second pass, 3,848,142,848 B for Gemma-3's
    # 262,208 vocab, would be both plans' peak: tests/test_vllm_mm_profile.py)
    for tp, tower in ((1, 846_120_672), (2, 434_840_688)):
        full = plan(spec, gpu, EngineConfig(vllm_version="0.32"), Layout(tp=tp))
        text = plan(spec, gpu, EngineConfig(vllm_version="0.32", language_model_only=True), Layout(tp=tp))
        assert full.ranks[0].weights_bytes - text.ranks[0].weights_bytes == tower
        # and the profile run's encoder cache (8192 budget tokens x 5376 hidden x 2 B, alive through the LM's peak);
        # text-only, the compiled graph embeds the input ids, so a cold compile copies the embedding shard (262,208
        # padded rows / tp x 5376 x 2 B: kvplan.engines.vllm_compile_benchmark_bytes), the text plan's peak
        act_full, act_text = (next(t.bytes for t in r.ranks[0].terms if t.name.startswith("activation peak"))
                              for r in (full, text))
        # (TP 1: 2,819,260,416 B); at TP 2 the copy (1,409,630,208) is below the LM head's all-gather of the 1,024
        # dummy sampler rows, 1,024 x (131,104 + 2 x 262,208) x 2 = 1,342,504,960, + the hidden states 8,192 x 5,376
        # x 2 = 88,080,384 -> 1,430,585,344 (kvplan.engines.vllm_v2_dummy_sampler_bytes)
        assert act_text == {1: 262_208 * 5376 * 2, 2: 1024 * (131_104 + 2 * 262_208) * 2 + 8192 * 5376 * 2}[tp]
        # no copy beside a loaded tower; the loaded tower's peak is the SigLIP step on 32 dummy images at 0.32
        # (kvplan.vllm_mm; tests/test_vllm_mm_profile.py)
        # and the CUDA-graph estimate: with the tower vLLM serves Gemma-3 through TRITON_ATTN (mm prefix attention),
        # text-only through FA3, whose FULL capture holds its split accumulators (kvplan.engines.cuda_graph_bytes):
        # TP 1: 262 MiB (32 x 512 x 32 heads x 129 x 4 B + 4 MiB) vs the PIECEWISE first 164 (80 + 2 x 512 x 43,008 x
        # 2 B): 98 MiB; TP 2: 133 vs 122: 11 MiB
        g_full, g_text = (next(t.bytes for t in r.ranks[0].terms if t.name.startswith("CUDA graphs"))
                          for r in (full, text))
        assert g_text - g_full == {1: 98, 2: 11}[tp] * 2**20
        assert full.ranks[0].kv_pool_bytes == \
            text.ranks[0].kv_pool_bytes - tower - act_full + act_text + g_text - g_full
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
    # --limit-mm-per-prompt is kept per modality (EngineConfig.mm_limits); whether the towers load is decided with the
    # model (kvplan.vllm_mm.loads_tower: tests/test_vllm_mm_limits.py)
    off = parse_vllm_command("""vllm serve m --limit-mm-per-prompt '{"image": 0, "video": 0}'""")
    assert off.engine_fields()["mm_limits"] == (("image", 0), ("video", 0)) and not off.language_model_only
    assert not parse_vllm_command("""vllm serve m --limit-mm-per-prompt '{"image": 2}'""").language_model_only
    assert parse_vllm_command("vllm serve m --mm-encoder-tp-mode data").engine_fields()["mm_encoder_tp_mode"] == "data"
    EngineConfig(**parse_vllm_command("vllm serve m --language-model-only").engine_fields())


def test_bad_vision_config_is_a_warning_not_a_traceback():
    from kvplan.hf_config import parse_config

    cfg = dict(preset_config("gemma-3-27b-it"))
    cfg["vision_config"] = {**cfg["vision_config"], "hidden_size": "wide"}
    spec = parse_config(cfg)
    assert spec.towers == () and any("vision tower not counted" in w for w in spec.warnings)


# ----------------------------------------------------------------------------- MTP speculative decoding


def test_deepseek_v3_mtp_params():
    spec = load_preset("deepseek-v3")
    params = count_params(spec)
    # one MoE decoder layer (as layer 60) + enorm, hnorm, shared_head.norm 3 x 7,168 + eh_proj 14,336 x 7,168
    moe_layer = 11_507_286_016
    assert params.mtp_params == moe_layer + 3 * 7168 + 14336 * 7168 == 11_610_067_968
    assert params.total_params == 671_026_404_352  # the LM alone, unchanged (= transformers, which drops layer 61)
    assert len(spec.mtp_layers) == 1 and spec.mtp_layers[0] is spec.layers[-1]


def test_deepseek_v3_mtp_weights_and_kv_per_rank():
    spec = load_preset("deepseek-v3")  # fp8-block 128 x 128: f(o, i) = o*i + 4 * cdiv(o,128) * cdiv(i,128)
    gpu = GPU_CATALOG["H200"]
    base = EngineConfig(max_model_len=32768)
    off = plan(spec, gpu, base, Layout(tp=8))
    on = plan(spec, gpu, base.model_copy(update={"speculative_method": "mtp", "num_speculative_tokens": 1}),
              Layout(tp=8))
    attention = (1536 * 7168 + 4 * 12 * 56 + 1536 * 2  # q_a_proj (whole), q_a_layernorm
                 + 3072 * 1536 + 4 * 24 * 12  # q_b_proj, 24,576 / 8 rows
                 + 576 * 7168 + 4 * 5 * 56 + 512 * 2  # kv_a_proj_with_mqa (whole), kv_a_layernorm
                 + 4096 * 512 + 4 * 32 * 4  # kv_b_proj, 32,768 / 8 rows
                 + 7168 * 2048 + 4 * 56 * 16)  # o_proj, 16,384 / 8 columns
    shared = 3 * (256 * 7168 + 4 * 2 * 56)  # shared experts gate / up / down, 2,048 / 8
    experts = 3 * 256 * (256 * 7168 + 4 * 2 * 56)  # 256 routed experts split 8 ways by intermediate size
    whole_bf16 = 2 * (256 * 7168 + 2 * 7168 + 3 * 7168 + 14336 * 7168)  # router, 2 norms, 3 MTP norms, eh_proj
    mtp = attention + shared + experts + whole_bf16
    assert mtp == 1_661_046_944
    assert on.ranks[0].weights_bytes - off.ranks[0].weights_bytes == mtp
    term = next(t for t in on.ranks[0].terms if t.name.startswith("MTP layers"))
    assert (term.bytes, term.applied) == (mtp, False)
    # the MTP layer's MLA cache (576 x 2 B a token, not split over TP) joins the one KV group: 61 -> 62 layers
    assert off.ranks[0].kv_bytes_per_token == 61 * 1152 and on.ranks[0].kv_bytes_per_token == 62 * 1152
    # block 16: FLASH_ATTN_MLA on Hopper from vLLM 0.18 (kvplan.engines.vllm_mla_default)
    assert [g.layers for g in on.kv_groups] == [62] and on.ranks[0].bytes_per_block == 62 * 16 * 1152
    assert on.num_blocks == (on.ranks[0].kv_pool_bytes // (62 * 16 * 1152))
    assert on.num_blocks < off.num_blocks


def test_mtp_refused_without_mtp_layers():
    from kvplan.errors import PlanInputError

    with pytest.raises(PlanInputError, match="multi-token-prediction"):
        plan(load_preset("llama-3.1-8b"), GPU_CATALOG["H100-SXM"], EngineConfig(speculative_method="mtp"))


def test_speculative_config_flag():
    args = parse_vllm_command("vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --speculative-config "
                              """'{"method": "deepseek_mtp", "num_speculative_tokens": 2}'""")
    assert (args.speculative_method, args.num_speculative_tokens) == ("mtp", 2)
    EngineConfig(**args.engine_fields())
    from kvplan.errors import PlanInputError

    with pytest.raises(PlanInputError, match="--draft-config"):  # a head kvplan ships no config for: refused
        parse_vllm_command("vllm serve m --speculative-config "
                           "'{\"method\": \"eagle\", \"model\": \"x\", \"num_speculative_tokens\": 2}'")
