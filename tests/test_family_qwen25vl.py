"""Qwen2.5-VL / Qwen2-VL as native families (kvplan.families.qwen2_5_vl, towers.qwen2_5_vl / qwen2_vl, vllm_mm's
Qwen2-VL video rule). Arithmetic by hand in each comment; transformers 5.23 on the meta device (or a tiny real model)
is the oracle for parameters and the cache.

Pinned log:
- QWEN25VL7B-A100-023 -- search index file 55021192520 (a public "## Hello" note: `docker run vllm/vllm-openai:v0.23.0
  --model /models/Qwen2.5-VL-7B-Instruct --gpu-memory-utilization 0.22 --trust-remote-code`, one A100-SXM4-80GB by the
  nvidia-smi printed after it, max model len 128000, compile range (1, 2048) = max_num_batched_tokens 2048). Logged:
  "Model loading took 15.67 GiB", "Encoder cache will be initialized with a budget of 114688 tokens, and profiled with 1
  video items of the maximum feature size", "Estimated CUDA graph memory: 0.53 GiB total", "Available KV cache memory:
  -14.28 GiB" (then "No available memory for the cache blocks"). kvplan: weights 15.62 (-0.05 GiB), budget 114,688 with
  1 video item (exact), CUDA graphs 0.58 (+0.05), KV -15.03 GiB (-0.75 GiB): a strict xfail, the gap being the encoder
  step estimate (see the test).
- QWEN25VL3B-L4-011 -- ray-project/ray doc/source/data/examples/llm-batch-inference-vision/content/README.md (the Ray Data
  "Vision-language model batch inference" notebook's output, 2025-11-13; search index file 38879334099):
  vLLMEngineProcessorConfig(model_source="Qwen/Qwen2.5-VL-3B-Instruct", engine_kwargs=dict(max_model_len=8192,
  max_num_batched_tokens=2048), accelerator_type="L4"), vLLM 0.11.0, TP 1, no gpu_memory_utilization given (vLLM's 0.9
  assumed). Logged: "Model loading took 7.1550 GiB", "Encoder cache will be initialized with a budget of 16384 tokens,
  and profiled with 1 image items", "Available KV cache memory: 9.26 GiB", 269,568 tokens (16,848 blocks). kvplan:
  weights 7.151 (-0.004 GiB), the image item (exact), KV 10.31 GiB (+1.05): a strict xfail.
- QWEN25VL7B-TP4-080 -- vllm-project/vllm#15136 (vLLM 0.8.0 V1, Qwen/Qwen2.5-VL-7B-Instruct, 4 workers: "Loaded weight
  lm_head.weight with shape torch.Size([38016, 3584])" = 152,064 / 4): "Model loading took 3.9972 GB" on every rank
  (vLLM's GB was GiB then). Weights only (0.8 is no kvplan V1 profile; 0.10's, the first, shards the same modules):
  kvplan 3.986 GiB (-0.011): pinned.
"""

import json
from pathlib import Path

import pytest

from kvplan import kv_cache_bytes, load_preset, parse_config
from kvplan.engines import EngineConfig
from kvplan.errors import ConfigError, PlanInputError
from kvplan.families.towers import qwen2_vl_length_video
from kvplan.gpus import get_gpu
from kvplan.kv import kv_bytes_per_token
from kvplan.params import count_params
from kvplan.plan import plan
from kvplan.vllm_mm import loads_tower, vllm_mm_item_reads_length, vllm_mm_profile

GiB = 2**30
PRESET = Path(__file__).parent.parent / "kvplan" / "presets" / "qwen2.5-vl-7b-instruct.json"
QWEN25VL_3B = Path(__file__).parent / "fixtures" / "configs" / "qwen2.5-vl-3b-instruct.json"


def _close(pred_bytes: int, logged_gib: float) -> bool:
    return abs(pred_bytes / GiB - logged_gib) <= max(0.01 * abs(logged_gib), 0.25)


def test_qwen25vl_7b_params_text_and_tower_by_hand():
    spec = load_preset("qwen2.5-vl-7b-instruct")
    assert spec.model_type == "qwen2_5_vl" and spec.basis == "native"
    c = count_params(spec)
    # text = Qwen2.5-7B's shape, vocab 152,064 untied: embed + lm_head 2 x 152,064 x 3,584 = 1,089,994,752; per layer
    # q 3,584^2 + 3,584, k / v 512 x 3,584 + 512 each, o 3,584^2 (29,360,128), MLP 3 x 3,584 x 18,944 (203,685,888),
    # 2 norms 7,168: 233,057,792 x 28 = 6,525,618,176; + final norm 3,584
    layer = (3584 * 3584 + 3584) + 2 * (512 * 3584 + 512) + 3584 * 3584 + 3 * 3584 * 18944 + 2 * 3584
    assert c.total_params == 2 * 152_064 * 3_584 + 28 * layer + 3_584 == 7_615_616_512  # = transformers (oracle test)
    # tower: Conv3d 1,280 x 3 x 2 x 14^2 = 1,505,280; a block: 2 RMSNorms 2,560, qkv 3 x 1,280^2 + 3,840, proj 1,280^2 +
    # 1,280, gate / up 2 x (3,420 x 1,280 + 3,420), down 1,280 x 3,420 + 1,280 = 19,702,200; merger ln_q 1,280, mlp.0
    # 5,120^2 + 5,120, mlp.2 3,584 x 5,120 + 3,584 = 44,574,464
    block = 2 * 1280 + (3 * 1280 * 1280 + 3840) + (1280 * 1280 + 1280) + 2 * (3420 * 1280 + 3420) + (1280 * 3420 + 1280)
    merger = 1280 + (5120 * 5120 + 5120) + (3584 * 5120 + 3584)
    assert (block, merger) == (19_702_200, 44_574_464)
    assert c.tower_params == 1_505_280 + 32 * block + merger == 676_550_144


TINY_25 = {"model_type": "qwen2_5_vl", "architectures": ["Qwen2_5_VLForConditionalGeneration"], "vocab_size": 128,
           "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 3, "num_attention_heads": 4,
           "num_key_value_heads": 2, "torch_dtype": "float32", "tie_word_embeddings": False,
           "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]},
           "vision_config": {"depth": 2, "hidden_size": 16, "intermediate_size": 32, "num_heads": 2, "in_chans": 3,
                             "out_hidden_size": 64, "patch_size": 14, "temporal_patch_size": 2,
                             "spatial_merge_size": 2, "window_size": 112, "fullatt_block_indexes": [1]}}
TINY_2 = {"model_type": "qwen2_vl", "architectures": ["Qwen2VLForConditionalGeneration"], "vocab_size": 512,
          "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
          "num_key_value_heads": 2, "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]},
          "vision_config": {"depth": 2, "embed_dim": 32, "hidden_size": 64, "mlp_ratio": 3, "num_heads": 4,
                            "in_chans": 3, "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2}}


def test_qwen25vl_and_qwen2vl_towers_equal_transformers():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tests.test_oracle_transformers import VISION_MODULES, wrapper_param_count

    # Qwen2.5-VL, h 16: patch 16 x 3 x 2 x 196 = 18,816; block 2 RMSNorms 32 + qkv 3 x 256 + 48 + proj 256 + 16 + gate /
    # up 2 x (32 x 16 + 32) + down 16 x 32 + 16 = 2,736; merger ln_q 16 + 64^2 + 64 + 64 x 64 + 64 = 8,336
    spec = parse_config(TINY_25)
    assert count_params(spec).tower_params == 18_816 + 2 * 2_736 + 8_336 == 32_624
    assert count_params(spec).tower_params == wrapper_param_count(TINY_25, ("language_model", "lm_head"))
    assert count_params(spec).total_params == wrapper_param_count(TINY_25, VISION_MODULES)
    # Qwen2-VL, e 32: patch 32 x 3 x 2 x 196 = 37,632; block 2 LayerNorms 128 + qkv 3,168 + proj 1,056 + fc1 96 x 32 +
    # 96 + fc2 32 x 96 + 32 = 10,624; merger LN 64 + 128^2 + 128 + 64 x 128 + 64 = 24,832
    spec = parse_config(TINY_2)
    assert count_params(spec).tower_params == 37_632 + 2 * 10_624 + 24_832 == 83_712
    assert count_params(spec).tower_params == wrapper_param_count(TINY_2, ("language_model", "lm_head"))
    assert count_params(spec).total_params == wrapper_param_count(TINY_2, VISION_MODULES)


def test_qwen25vl_kv_conventions():
    spec = load_preset("qwen2.5-vl-7b-instruct")
    # 28 full-attention layers (use_sliding_window false) x 4 KV heads x (128 + 128) x 2 B = 57,344 B/token in both
    # conventions: vLLM's Qwen2Model (qwen2_5_vl.py builds it) gives every layer a FullAttentionSpec
    assert kv_bytes_per_token(spec, convention="vllm") == kv_bytes_per_token(spec, convention="transformers") == 57_344
    assert kv_bytes_per_token(spec, convention="vllm", tp=4) == 57_344 // 4


def test_qwen25vl_dynamic_cache_equals_transformers_convention():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from tests.test_oracle_cache import prefill_and_decode

    cfg = TINY_25
    spec = parse_config(cfg)
    hf = transformers.AutoConfig.for_model("qwen2_5_vl", **{k: v for k, v in cfg.items() if k != "model_type"})
    torch.manual_seed(0)
    model = transformers.Qwen2_5_VLForConditionalGeneration(hf).eval()
    held = prefill_and_decode(model, torch.randint(0, 100, (2, 11)), steps=2)
    # 3 layers x 2 KV heads x 16 x 2 (K, V) x 4 B = 768 B a token: 2 x 11 x 768 = 16,896 after the prefill
    assert held == [kv_cache_bytes(spec, [11 + i] * 2, "fp32", "transformers").kv_bytes for i in range(3)]
    assert held[0] == 16_896


def test_head_dim_other_than_hidden_over_heads_is_refused():
    cfg = json.loads(PRESET.read_text())
    cfg["head_dim"] = 64  # Qwen2_5_VLAttention takes 3,584 // 28 = 128 whatever the config says
    with pytest.raises(ConfigError, match="head_dim"):
        parse_config(cfg)


def test_qwen25vl_dummy_items_by_release_and_length():
    spec = load_preset("qwen2.5-vl-7b-instruct")
    p = spec.towers[0].profile
    # image: 12,845,056 // 28^2 = 16,384 cells = 128 x 128 (3,584^2): 65,536 patches of 3 x 2 x 14^2 = 1,176 values;
    # output rows out_hidden_size 3,584 (no deepstack)
    assert (p.modality, p.tokens_per_item, p.patches_per_item, p.pixels_per_item) == ("image", 16_384, 65_536,
                                                                                     65_536 * 1_176)
    assert (p.embed_width, p.gated_mlp, p.length_video) == (3_584, True, (14, 2, 2, 3))
    # the video beside it: one temporal patch of the same image until max_model_len counts its frames (a tie)
    assert [(o.modality, o.tokens_per_item, o.pixels_per_item) for o in p.others] == [("video", 16_384, 65_536 * 1_176)]
    # tokens(n) = ceil(n / 2) x 16,384; frames grow while tokens(n + 1) <= the limit, at most 14 (16 before 0.11)
    assert qwen2_vl_length_video(16_384, 2, 128_000, 14) == (14, 7 * 16_384)  # the 0.23 log's 114,688
    assert qwen2_vl_length_video(16_384, 2, 32_768, 14) == (4, 32_768)
    assert qwen2_vl_length_video(16_384, 2, 16_384, 14) == (2, 16_384)  # ties the image
    assert qwen2_vl_length_video(16_384, 2, 4_096, 14) == (1, 16_384)
    # 0.10.0 - 0.10.1.1: under 128,000 - 16,384 = 111,616: 12 frames = 6 x 16,384 = 98,304 (cap 16 not reached)
    assert qwen2_vl_length_video(16_384, 2, 111_616, 16) == (12, 98_304)
    # 0.10.2: 128,000, cap 16: tokens(15) = tokens(16) = 8 x 16,384 = 131,072 > 128,000 -> 14 frames
    assert qwen2_vl_length_video(16_384, 2, 128_000, 16) == (14, 114_688)
    # T 3 (no Qwen checkpoint; the padding rule by release): n + n % 3 before 0.27 gives 4 frames -> 5 // 3 = 1 patch
    # and 5 -> 7 // 3 = 2; n + (-n % 3) from 0.27 gives 4 -> 6 // 3 = 2: at a 100-token limit, 4 vs 3 frames
    assert qwen2_vl_length_video(100, 3, 100, 14, pad_up=False) == (4, 100)
    assert qwen2_vl_length_video(100, 3, 100, 14, pad_up=True) == (3, 100)
    for version in ("0.10", "0.12", "0.19", "0.33"):  # the item reads max_model_len in every release (not only 0.11-0.12)
        assert vllm_mm_item_reads_length(spec, version)
    assert not vllm_mm_item_reads_length(spec, "0.23", (("video", 0),))  # the image alone reads no length
    m = vllm_mm_profile(spec, "0.23", "V1", 1, False, 2048, 2, True, max_model_len=128_000)
    # held: outputs 114,688 x 3,584 x 2 = 822,083,584 + pixel values 458,752 x 1,176 x 2 = 1,078,984,704
    assert (m.modality, m.items, m.budget, m.held) == ("video", 1, 114_688, 822_083_584 + 1_078_984_704)
    # encoder step ~ held + 458,752 x 2 B x max(attention 3h + 10h = 16,640, MLP 2h + 3I = 12,820) (h 1,280, I 3,420)
    assert m.encoder_peak == 1_901_068_288 + 458_752 * 2 * 16_640
    # at 16,384 the 2-frame video ties the image (same patches, pixels): 0.17+ picks the later name ("video"),
    # 0.11 the first of get_mm_max_tokens_per_item ("image", as the L4 log says)
    for version, modality in (("0.11", "image"), ("0.23", "video")):
        i = vllm_mm_profile(spec, version, "V1", 1, False, 8192, 2, True, max_model_len=16_384)
        assert (i.modality, i.items, i.budget, i.held) == (modality, 1, 16_384, 16_384 * 3_584 * 2 + 65_536 * 1_176 * 2)
    # 0.10.0's reserve: 98,304 with the image on; {"image": 0} leaves mm_counts the video alone: 114,688
    assert vllm_mm_profile(spec, "0.10", "V1", 1, False, 2048, 2, True, max_model_len=128_000).budget == 98_304
    assert vllm_mm_profile(spec, "0.10", "V1", 1, False, 2048, 2, True, max_model_len=128_000,
                           limits=(("image", 0),)).budget == 114_688
    assert vllm_mm_profile(spec, "0.10.2", "V1", 1, False, 2048, 2, True, max_model_len=128_000).budget == 114_688
    # {"video": 0}: the image at any length, 8,192 // 16,384 -> 1 item
    v0 = vllm_mm_profile(spec, "0.23", "V1", 1, False, 8192, 2, True, max_model_len=128_000, limits=(("video", 0),))
    assert (v0.modality, v0.items, v0.budget) == ("image", 1, 16_384)


def test_qwen25vl_mm_processor_kwargs_from_0_17():
    spec = load_preset("qwen2.5-vl-7b-instruct")
    kw = (("max_pixels", 1_003_520),)
    # 1,003,520 // 28^2 = 1,280 cells (32 x 40) for the image and each frame (qwen2_vl.py reads the merged kwargs for
    # both); at 128,000 the video runs to the 14-frame cap: 7 x 1,280 = 8,960 tokens, 35,840 patches
    m = vllm_mm_profile(spec, "0.23", "V1", 1, False, 2048, 2, True, max_model_len=128_000, mm_kwargs=kw)
    assert (m.modality, m.items, m.budget) == ("video", 1, 8_960)
    assert m.held == 8_960 * 3_584 * 2 + 35_840 * 1_176 * 2  # outputs 64,225,280 + pixel values 84,295,680
    # the image alone: 2,048 // 1,280 = 1 item; size.longest_edge reads the same where max_pixels is not given
    i = vllm_mm_profile(spec, "0.33", "V1", 1, False, 2048, 2, True, max_model_len=128_000,
                        limits=(("video", 0),), mm_kwargs=(("size.longest_edge", 1_003_520),))
    assert (i.modality, i.items, i.budget) == ("image", 1, 2_048)
    with pytest.raises(PlanInputError) as exc:  # 0.15 / 0.16 build the HF processor with them: not modeled
        vllm_mm_profile(spec, "0.15", "V1", 1, False, 2048, 2, True, max_model_len=128_000, mm_kwargs=kw)
    assert exc.value.field == "--mm-processor-kwargs"


def test_qwen25vl_tower_skipped_from_0_10_1_when_image_and_video_are_0():
    spec, gpu = load_preset("qwen2.5-vl-7b-instruct"), get_gpu("A100-80GB")
    assert spec.towers[0].modalities == ("image", "video") and spec.towers[0].vllm_skip_from == (0, 10, 1)
    both = (("image", 0), ("video", 0))
    # qwen2_5_vl.py 0.10.1.1 - 0.14.1: self.visual = None when neither limit is above 0 (0.15+: _mark_tower_model);
    # 0.10.0 builds it whatever the limits (the "0.10" profile plans its first release)
    assert loads_tower(spec, EngineConfig(vllm_version="0.10", mm_limits=both))
    assert not loads_tower(spec, EngineConfig(vllm_version="0.10.2", mm_limits=both))
    assert not loads_tower(spec, EngineConfig(vllm_version="0.23", mm_limits=both))
    assert loads_tower(spec, EngineConfig(vllm_version="0.23", mm_limits=(("image", 0),)))
    full = plan(spec, gpu, EngineConfig(vllm_version="0.23", max_model_len=16_384)).ranks[0].weights_bytes
    text = plan(spec, gpu, EngineConfig(vllm_version="0.23", max_model_len=16_384, mm_limits=both)).ranks[0].weights_bytes
    assert full - text == 676_550_144 * 2


def test_plan_counts_the_tower_where_vllm_loads_it():
    spec, gpu = load_preset("qwen2.5-vl-7b-instruct"), get_gpu("A100-80GB")
    full = plan(spec, gpu, EngineConfig(vllm_version="0.23", max_model_len=16_384)).ranks[0].weights_bytes
    text = plan(spec, gpu, EngineConfig(vllm_version="0.23", max_model_len=16_384,
                                        language_model_only=True)).ranks[0].weights_bytes
    assert full - text == 676_550_144 * 2  # the bf16 tower, 1,353,100,288 B, dropped by --language-model-only


@pytest.mark.xfail(strict=True, reason=(
    "QWEN25VL7B-A100-023: KV -15.03 vs logged -14.28 GiB (-0.75). Weights 15.62 vs 15.67 and CUDA graphs 0.58 vs 0.53 "
    "are close; the gap is the encoder step on the 14-frame video: held 1.77 GiB + 458,752 patches x 2 B x 13h (3h + "
    "the 10h attention liveness of the Qwen3-VL rule) = 15.99 GiB, where the log implies ~15.24 GiB (~12.3h a patch, "
    "taking kvplan's 0.25 GiB non-torch and the logged graphs); a 12h rule would undershoot by 0.3 GiB, and one log "
    "does not split the attention transients from the non-torch share"))
def test_qwen25vl_7b_a100_v0_23_log():
    p = plan(load_preset("qwen2.5-vl-7b-instruct"), get_gpu("A100-80GB"),
             EngineConfig(vllm_version="0.23", max_model_len=128_000, gpu_memory_utilization=0.22))
    r = p.ranks[0]
    assert _close(r.weights_bytes, 15.67)
    assert _close(r.kv_pool_bytes, -14.28)


def test_qwen25vl_7b_a100_v0_23_log_weights_and_budget():
    spec = load_preset("qwen2.5-vl-7b-instruct")
    p = plan(spec, get_gpu("A100-80GB"), EngineConfig(vllm_version="0.23", max_model_len=128_000,
                                                      gpu_memory_utilization=0.22))
    assert _close(p.ranks[0].weights_bytes, 15.67)  # 15.623
    m = vllm_mm_profile(spec, "0.23", "V1", 1, False, 2048, 2, True, max_model_len=128_000)
    assert (m.budget, m.items, m.modality) == (114_688, 1, "video")  # "a budget of 114688 tokens ... 1 video items"


def test_qwen25vl_3b_params_by_hand():
    spec = parse_config(json.loads(QWEN25VL_3B.read_text()))
    c = count_params(spec)
    # tied embeddings 151,936 x 2,048 = 311,164,928 once; a layer: q 2,048^2 + 2,048, k / v 2 x (256 x 2,048 + 256),
    # o 2,048^2, MLP 3 x 2,048 x 11,008, norms 4,096 = 77,076,992; x 36 + the final norm (= transformers 5.23)
    layer = (2048 * 2048 + 2048) + 2 * (256 * 2048 + 256) + 2048 * 2048 + 3 * 2048 * 11008 + 2 * 2048
    assert c.total_params == 151_936 * 2_048 + 36 * layer + 2_048 == 3_085_938_688
    # the 7B's tower less mlp.2's narrower output: 676,550,144 - (3,584 - 2,048) x (5,120 + 1) = 668,684,288
    assert c.tower_params == 676_550_144 - 1_536 * 5_121 == 668_684_288
    # 36 layers x 2 KV heads x 256 x 2 B = 36,864 B/token: the log's 9.26 GiB held 16,848 blocks of 16 = 269,568 tokens
    assert kv_bytes_per_token(spec) == 36_864 and 16_848 * 16 * 36_864 / GiB == pytest.approx(9.25, abs=0.01)


def _l4_3b_plan():
    return plan(parse_config(json.loads(QWEN25VL_3B.read_text())), get_gpu("L4"),
                EngineConfig(vllm_version="0.11", max_model_len=8_192, max_num_batched_tokens=2_048))


def test_qwen25vl_3b_l4_v0_11_log_weights_and_item():
    spec = parse_config(json.loads(QWEN25VL_3B.read_text()))
    assert _close(_l4_3b_plan().ranks[0].weights_bytes, 7.1550)  # 7.151
    # at max_model_len 8,192 a 2-frame video (16,384 tokens) does not fit, 1 frame ties the image: "1 image items"
    m = vllm_mm_profile(spec, "0.11", "V1", 1, False, 2_048, 2, True, max_model_len=8_192)
    assert (m.modality, m.items, m.budget) == ("image", 1, 16_384)


@pytest.mark.xfail(strict=True, reason=(
    "QWEN25VL3B-L4-011: KV 10.31 vs logged 9.26 GiB (+1.05) at vLLM's default gpu_memory_utilization 0.9 (the notebook "
    "passes none; Ray's own default is not in the log). Weights (7.151 vs 7.155) and the image item are the log's; "
    "kvplan's encoder step is ~2.24 GiB (65,536 patches x 2 B x 13h + 0.21 GiB held), and the log leaves ~3.4 GiB for "
    "activations and non-torch memory. Not split: the utilization is unlogged, and the A100 0.23 log errs the other "
    "way (-0.75), so the ViT liveness alone does not explain both"))
def test_qwen25vl_3b_l4_v0_11_log():
    assert _close(_l4_3b_plan().ranks[0].kv_pool_bytes, 9.26)


def test_qwen25vl_7b_tp4_weights_per_rank_v0_8_log():
    from kvplan.parallel import Layout

    p = plan(load_preset("qwen2.5-vl-7b-instruct"), get_gpu("A100-80GB"),
             EngineConfig(vllm_version="0.10", max_model_len=32_768), Layout(tp=4))
    # text / 4 (embed and lm_head vocab-sharded 38,016 rows) + the ViT's column / row shards (Conv3d, norms whole)
    # + the whole M-RoPE table: 4,280,234,880 B = 3.986 GiB vs the logged 3.9972
    assert p.ranks[0].weights_bytes == 4_280_234_880 and _close(p.ranks[0].weights_bytes, 3.9972)
