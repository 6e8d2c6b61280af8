"""vLLM's multimodal profile run (kvplan.vllm_mm): the dummy batch's items, what stays held under the LM's dummy run,
and the encoder step's estimated peak, by release and model runner. Arithmetic by hand in each comment.

Sources of the item counts (logged "Encoder cache will be initialized with a budget of B tokens, and profiled with N
<modality> items of the maximum feature size", gpu_model_runner.py profile_run):
- Gemma-3-27B, vLLM 0.19.0, one H100, 8192 batched tokens: "budget of 8192 tokens, and profiled with 32 image items"
  (llm-d-incubation/llm-d-planner accuracy/results/v0.19.0/logs/google-gemma-3-27b-it--h100-80gb--tp1pp1dp1--8192.log
  @d3121e05, the log tests/test_engine_logs_more.py pins; it also prints "Using backend FLASH_ATTN for vit attention").
- Gemma-4-26B-A4B NVFP4, vLLM 0.19.2rc1.dev8, 2048 batched tokens (compile range (1, 2048)): "budget of 2496 tokens, and
  profiled with 1 video items" (a docker-compose + log note, index file id 52072816508, 2026-04-19; the GPU is not
  named, so its pool is not pinned: 8.29 GiB logged at util 0.80, kvplan 7.91 on a 31.36 GiB RTX 5090).
- Ministral-3-8B (Mistral3 + Pixtral, 1540^2 images), 8192 batched tokens: "budget of 8192 tokens, and profiled with 2
  image items" (an EKS workshop chapter "02 - Serve the model with vLLM, straight from S3", index file id 69725896812;
  release and config not given, so only the count is used).
"""

import pytest

from kvplan import load_preset
from kvplan.engines import VLLM_CHANGES, EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.vllm_mm import vllm_mm_profile, vllm_mm_profile_peak_bytes

H100 = get_gpu("H100-SXM")


def _act(p, rank=0) -> int:
    return next(t.bytes for t in p.ranks[rank].terms if t.name.startswith("activation peak"))


def test_tower_profiles_from_the_configs():
    # Gemma-3 SigLIP: 896 / 14 = 64 -> 4,096 patches, mm_tokens_per_image 256, 3 x 896^2 pixels
    g3 = load_preset("gemma-3-27b-it").towers[0].profile
    assert (g3.modality, g3.tokens_per_item, g3.embeds_per_item, g3.patches_per_item, g3.pixels_per_item) == (
        "image", 256, 256, 4_096, 3 * 896 * 896)
    assert (g3.hidden_size, g3.intermediate_size, g3.num_layers, g3.gated_mlp) == (1152, 4304, 27, False)
    # Pixtral (Mistral-Small-3.1): 1540 / 14 = 110 -> 12,100 patches, merged 2 x 2 -> 55^2 = 3,025 embeds
    px = load_preset("mistral-small-3.1-24b-instruct-2503").towers[0].profile
    assert (px.tokens_per_item, px.patches_per_item, px.pixels_per_item, px.block_mask) == (
        3_025, 12_100, 3 * 1540 * 1540, "dense_from_0_12")
    # Gemma-4: a 32-frame video, 70 soft tokens a frame from 70 x 3^2 = 630 patches of 3 x 16^2 values;
    # tokens 32 x (70 + 2 + 6) = 2,496 (vLLM's video item), embeds 32 x 70 = 2,240
    g4 = load_preset("gemma-4-26b-a4b").towers[0].profile
    assert (g4.modality, g4.tokens_per_item, g4.embeds_per_item, g4.patches_per_item) == ("video", 2_496, 2_240, 20_160)
    assert g4.pixels_per_item == 20_160 * 768 and g4.gated_mlp
    # Llama-4: 16 + 1 tiles of (336 / 14)^2 = 576 patches + a class token; pixel shuffle 0.5 -> 144 embeds a tile
    l4 = load_preset("llama-4-scout-17b-16e-instruct").towers[0].profile
    assert (l4.tokens_per_item, l4.patches_per_item, l4.pixels_per_item) == (17 * 144, 17 * 577, 17 * 3 * 336 * 336)
    # Qwen3-VL: the 16,384-token image (tests/test_vllm_mm_qwen.py pins the rule)
    assert load_preset("qwen3-vl-8b-instruct").towers[0].profile.tokens_per_item == 16_384


def test_gemma3_27b_v0_19_items_held_and_encoder_step():
    # budget max(8192, 256) = 8192 -> 8192 // 256 = 32 images, as the 0.19.0 log prints ("32 image items")
    m = vllm_mm_profile(load_preset("gemma-3-27b-it"), "0.19", "V1", 1, False, 8192, 2, True)
    assert (m.modality, m.items, m.budget) == ("image", 32, 8192)
    # V1 keeps batched_dummy_mm_inputs (bf16 pixel values) and the outputs as returned:
    # 32 x 3 x 896^2 x 2 = 154,140,672 + 32 x 256 x 5376 x 2 = 88,080,384
    assert m.held == 154_140_672 + 88_080_384 == 242_221_056
    # SigLIP step: inputs + outputs + 131,072 patches x 2 B x max(attn 7h = 8,064, MLP 2h + 2I = 10,912)
    assert m.encoder_peak == 242_221_056 + 131_072 * 2 * (2 * 1152 + 2 * 4304) == 3_102_736_384
    assert vllm_mm_profile_peak_bytes(4 * 2**30, m) == 4 * 2**30 + 242_221_056
    assert vllm_mm_profile_peak_bytes(2**30, m) == 3_102_736_384


def test_plan_adds_exactly_what_the_encoder_leaves_held():
    # 0.19 eager (no compile copy either way): the towered plan's peak - the same spec without towers = held
    spec = load_preset("gemma-3-27b-it")
    eng = EngineConfig(vllm_version="0.19", gpu_memory_utilization=0.95, max_model_len=8192, enforce_eager=True)
    bare = spec.model_copy(update={"towers": ()})
    assert _act(plan(spec, H100, eng)) - _act(plan(bare, H100, eng)) == 242_221_056
    term = next(t for t in plan(spec, H100, eng).ranks[0].terms if t.name.startswith("activation peak"))
    assert "32 image items of 256 tokens" in term.source and "estimate" in term.source


def test_release_rules_for_the_held_outputs():
    spec = load_preset("gemma-3-27b-it")
    pixels = 154_140_672
    # 0.11.x copies each output into new_zeros((encoder_budget, hidden)): 32 x 8192 x 5376 x 2 = 2,818,572,288
    assert VLLM_CHANGES["mm_dummy_outputs_expanded"][0] == (0, 11, 0)
    for version in ("0.11", "0.11.1"):
        assert vllm_mm_profile(spec, version, "V1", 1, False, 8192, 2, True).held == 2_818_572_288 + pixels
    # 0.10.x and 0.13+ keep them as returned; 0.12.0 pads to tokens per item (256 = the embeds here)
    for version in ("0.10", "0.10.2", "0.12", "0.13", "0.14", "0.25", "0.33"):
        assert vllm_mm_profile(spec, version, "V1", 1, False, 8192, 2, True).held == 88_080_384 + pixels
    # the V2 runner: no encoder profile before 0.27.0 (its profile_run has none), from 0.27.0 the outputs only
    assert vllm_mm_profile(spec, "0.26", "V2", 1, False, 8192, 2, True).items == 0
    m = vllm_mm_profile(spec, "0.27", "V2", 1, False, 8192, 2, True)
    assert (m.items, m.held, m.encoder_peak) == (32, 88_080_384, 3_102_736_384)
    assert vllm_mm_profile(spec, "0.33", "V2", 1, False, 8192, 2, False).items == 0  # first PP rank only


def test_gemma3_at_0_32_on_an_h100_peaks_in_the_siglip_step():
    # 0.32 runs Gemma-3 on the V2 runner (dense): its dummy sampler holds the logits alone, so the 32-image SigLIP
    # step (3,102,736,384 B) is above the LM run (1,191,182,336 + 88,080,384): the peak is the encoder's. Under PP 2
    # only stage 0 runs the encoder
    spec = load_preset("gemma-3-27b-it")
    eng = EngineConfig(vllm_version="0.32", max_model_len=8192)
    assert _act(plan(spec, H100, eng)) == 3_102_736_384
    assert _act(plan(spec.model_copy(update={"towers": ()}), H100, eng.model_copy(update={"enforce_eager": True}))) \
        == 1_191_182_336
    p = plan(spec, H100, eng, Layout(pp=2))
    assert _act(p, 0) == 3_102_736_384 and _act(p, 1) < 3_102_736_384
    # 0.33.0's second dummy sampler pass (fp32 logits + FlashInfer's top-k mask and softmax): 1,024 x 262,208 x
    # (2 + 12) + 1 MiB + 8,192 x 5,376 x 2 = 3,848,142,848 B, now above the SigLIP step: the LM's peak + the held
    # encoder outputs (88,080,384) = 3,936,223,232
    eng33 = eng.model_copy(update={"vllm_version": "0.33"})
    assert _act(plan(spec, H100, eng33)) == 3_848_142_848 + 88_080_384 == 3_936_223_232
    assert _act(plan(spec.model_copy(update={"towers": ()}), H100, eng33.model_copy(update={"enforce_eager": True}))) \
        == 3_848_142_848


def test_pixtral_block_mask_from_0_12():
    spec = load_preset("mistral-small-3.1-24b-instruct-2503")
    # 8192 // 3025 = 2 images (the Ministral-3 log's "2 image items"): N = 24,200 patches
    m = vllm_mm_profile(spec, "0.19", "V1", 1, False, 8192, 2, True)
    assert m.items == 2
    # held: 2 x 3 x 1540^2 x 2 = 28,459,200 + 2 x 3025 x 5120 x 2 = 61,952,000
    assert m.held == 28_459_200 + 61_952_000 == 90_411_200
    # step: + 24,200 x 2 x (2 x 1024 + 3 x 4096 gated) + the (24,200)^2 bf16 block mask 1,171,280,000
    assert m.encoder_peak == 90_411_200 + 24_200 * 2 * 14_336 + 24_200 ** 2 * 2 == 1_955_553_600
    # 0.11 (xformers installed: BlockDiagonalMask, no mask tensor; outputs padded to the 8192 budget)
    old = vllm_mm_profile(spec, "0.11", "V1", 1, False, 8192, 2, True)
    assert old.encoder_peak == 90_411_200 + 24_200 * 2 * 14_336 == 784_273_600
    assert old.held == 28_459_200 + 2 * 8192 * 5120 * 2 == 196_231_360


def test_gemma4_video_item_and_the_raised_budget():
    spec = load_preset("gemma-4-26b-a4b")
    # 0.19 at 2048 batched tokens: budget max(2048, 2496) = 2496, 1 video (the 0.19.2rc1 log: "budget of 2496 tokens,
    # and profiled with 1 video items")
    m = vllm_mm_profile(spec, "0.19", "V1", 1, False, 2048, 2, True)
    assert (m.modality, m.items, m.budget) == ("video", 1, 2_496)
    # held: 20,160 x 768 x 2 = 30,965,760 pixel values + 2,240 x 2816 x 2 = 12,615,680 embeddings
    assert m.held == 30_965_760 + 12_615_680 == 43_581_440
    # step: 20,160 x 2 x (2 x 1152 + 3 x 4304) = 613,509,120 (+ held): ~0.61 GiB, under the LM's ~1 GiB
    assert m.encoder_peak == 43_581_440 + 20_160 * 2 * 15_216 == 657_090_560
    # 16,384 batched tokens: 16,384 // 2,496 = 6 videos
    assert vllm_mm_profile(spec, "0.25", "V1", 1, False, 16_384, 2, True).items == 6


def test_gemma4_frame_chunks_from_0_22():
    # gemma4_mm.py _encoder_chunk (0.22.0+): min(free // 2, total // 10) // (630 x 4 x 10240 x 8 = 206,438,400 B a
    # frame); on an L40S (47,695,611,822 B) total // 10 = 4,769,561,182 -> 23 frames a call: N = 23 x 630 = 14,490,
    # with the first chunk's 14,490 and then all 20,160 frames' hidden states kept (20,160 x 1152 x 2 = 46,448,640)
    spec, l40s = load_preset("gemma-4-26b-a4b"), get_gpu("L40S")
    assert spec.towers[0].profile.frame_chunk_cost == 630 * 4 * 10_240 * 8 == 206_438_400
    assert VLLM_CHANGES["gemma4_encoder_chunk"][0] == (0, 22, 0)
    m = vllm_mm_profile(spec, "0.25", "V1", 1, False, 2496, 2, True, l40s.memory_bytes)
    assert l40s.memory_bytes // 10 // 206_438_400 == 23
    assert m.encoder_peak == 43_581_440 + 46_448_640 + 14_490 * 2 * 15_216 == 530_989_760
    assert "14,490 patches a call of 20,160" in m.note
    # 0.21.0 runs all 32 frames at once
    assert vllm_mm_profile(spec, "0.21", "V1", 1, False, 2496, 2, True, l40s.memory_bytes).encoder_peak == 657_090_560
    # at 0.33 on an H100 (V2, 8192 tokens): 3 videos = 96 frames, 41 a call: the step (~1.0 GB) stays under the LM
    h100 = vllm_mm_profile(spec, "0.33", "V2", 1, False, 8192, 2, True, H100.memory_bytes)
    assert h100.items == 3 and h100.encoder_peak == (96 * 630 * 768 * 2 + 3 * 2240 * 2816 * 2 + 96 * 630 * 1152 * 2
                                                     + 41 * 630 * 2 * 15_216)


def test_llama4_tp_and_data_mode():
    spec = load_preset("llama-4-scout-17b-16e-instruct")
    # 8192 // 2448 = 3 images of 17 tiles; N = 3 x 17 x 577 = 29,427; TP 4 splits qkv / fc1 (w = 4):
    # attn 3 x 1408 + 4 x 1408 / 4 = 5,632, MLP 2 x 1408 + 2 x 5632 / 4 = 5,632
    m = vllm_mm_profile(spec, "0.19", "V1", 4, False, 8192, 2, True)
    held = 3 * 17 * 3 * 336 * 336 * 2 + 3 * 2448 * 5120 * 2
    assert m.items == 3 and m.held == held == 109_748_736
    assert m.encoder_peak == held + 29_427 * 2 * 5_632 == 441_214_464
    # --mm-encoder-tp-mode data: cdiv(3, 4) = 1 image a rank, whole widths (attn 7 x 1408, MLP 2 x 1408 + 2 x 5632)
    d = vllm_mm_profile(spec, "0.19", "V1", 4, True, 8192, 2, True)
    assert d.encoder_peak == 17 * 3 * 336 * 336 * 2 + 3 * 2448 * 5120 * 2 + 9_809 * 2 * (2 * 1408 + 2 * 5632)


def test_unmodeled_towers_keep_the_budget_tensor():
    # a tower without a dummy-item profile (Qwen3-VL's, stripped): (8192 batched tokens, 4096 hidden) x 2 B held, the
    # encoder step not modeled
    spec = load_preset("qwen3-vl-8b-instruct")
    spec = spec.model_copy(update={"towers": tuple(t.model_copy(update={"profile": None}) for t in spec.towers)})
    m = vllm_mm_profile(spec, "0.19", "V1", 1, False, 8192, 2, True)
    assert (m.held, m.encoder_peak, m.basis) == (8192 * 4096 * 2, 0, "fitted")
    assert "not modeled" in m.note


@pytest.mark.parametrize("name,peak,kv,tokens", [
    # the llm-d-planner v0.19.0 H100 logs (tests/test_engine_logs_more.py): with the 154,140,672 B of dummy pixel
    # values held, kvplan's peak moves from 3.88 / 3.84 / 3.80 to 4.03 / 3.98 / 3.94 GiB (logged 3.99 / 3.94 / 3.89)
    # and the tokens from 36,800 (+0.66 %) / 130,608 (+0.23 %) / 468,928 (+0.17 %) to 36,528 (-0.09 %) / 130,208
    # (-0.07 %) / 467,856 (-0.06 %)
    ("gemma-3-27b-it", 3.99, 19.53, 36_560),
])
def test_gemma3_27b_log_is_closer(name, peak, kv, tokens):
    p = plan(load_preset(name), H100, EngineConfig(vllm_version="0.19", gpu_memory_utilization=0.95,
                                                   max_model_len=8192))
    assert abs(_act(p) / 2**30 - peak) < 0.05
    assert abs(p.ranks[0].kv_pool_bytes / 2**30 - kv) < 0.05
    assert abs(p.kv_cache_tokens / tokens - 1) < 0.002


def test_bad_tower_geometry_drops_the_tower_with_a_warning():
    # an image smaller than one merged patch (Pixtral 20 px, patch 14 -> grid 1, merged 1 // 2 = 0 embeds) or a
    # non-numeric pixel_shuffle_ratio leaves the tower uncounted with a warning naming the field, no traceback
    import json
    from pathlib import Path

    from kvplan import parse_config

    root = Path(__file__).parents[1] / "kvplan/presets"
    mistral = json.loads((root / "mistral-small-3.1-24b-instruct-2503.json").read_text())
    mistral["vision_config"] = {**mistral["vision_config"], "image_size": 20}
    spec = parse_config(mistral, "tiny-image")
    assert spec.towers == () and any("vision_config.image_size" in w for w in spec.warnings)
    scout = json.loads((root / "llama-4-scout-17b-16e-instruct.json").read_text())
    scout["vision_config"] = {**scout["vision_config"], "pixel_shuffle_ratio": "half"}
    spec = parse_config(scout, "bad-ratio")
    assert spec.towers == () and any("pixel_shuffle_ratio" in w for w in spec.warnings)
