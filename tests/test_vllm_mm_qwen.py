"""vLLM's multimodal profile run for the Qwen3-VL / Qwen3.5 ViT and Kimi-K2.5's MoonViT (kvplan.vllm_mm,
kvplan.families.towers _qwen_vit_profile / qwen_vl_length_video / _moonvit_profile). Arithmetic by hand in each comment.

The item sizes rest on the checkpoints' preprocessor_config.json (not in config.json), an assumption kvplan records:
Qwen longest_edge 16,777,216 (video 25,165,824), Kimi-K2.5 in_patch_limit 16,384 / patch_limit_on_one_side 512.

Pinned log (before = the older rule, one (max_num_batched_tokens, hidden) tensor held and no encoder step):
- QWEN3VL30B-3090 -- sipeed/sipeed_wiki docs/hardware/en/kvm/NanoKVM_Pro/cua.md @db46b93c (NanoKVM-Pro "Experimental AI
  Agent", 2025-10-06; search index file 42514581982), "Example server output": `vllm serve Qwen3-VL-30B-A3B-Instruct
  --tensor-parallel-size 4 --gpu-memory-utilization 0.90 --max-model-len 65536`, vLLM 0.11.0, 4 x RTX 3090 (the fused-MoE
  config lookup names NVIDIA_GeForce_RTX_3090), max_num_batched_tokens 2048. Logged: "Model loading took 14.7708 GiB",
  "Encoder cache will be initialized with a budget of 153600 tokens, and profiled with 1 video items", "Available KV
  cache memory: 2.31 GiB", 100,752 tokens. kvplan before: weights 14.555 (-0.216 GiB), KV 4.699 (+2.39 GiB, +103 %);
  after: KV 2.223 (-0.087 GiB, -3.8 %), 97,104 tokens.
"""

from pathlib import Path

import pytest

from kvplan import load_preset, parse_config
from kvplan.engines import EngineConfig
from kvplan.families.towers import qwen_vl_length_video
from kvplan.gpus import get_gpu
from kvplan.hf_config import load_config_text
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.vllm_mm import vllm_mm_item_reads_length, vllm_mm_profile

GiB = 2**30
FIXTURES = Path(__file__).parent / "fixtures" / "configs"


def _close(pred_bytes: int, logged_gib: float) -> bool:
    return abs(pred_bytes / GiB - logged_gib) <= max(0.01 * logged_gib, 0.25)


def _act(p) -> int:
    return next(t.bytes for t in p.ranks[0].terms if t.name.startswith("activation peak"))


def test_qwen_and_kimi_dummy_items_from_their_configs():
    # Qwen3-VL-8B: 16,777,216 // 32^2 = 16,384 cells = 128 x 128 (a 4,096^2 image); patches 4 x 16,384 = 65,536 rows
    # of 3 x 2 x 16^2 = 1,536 values; output rows out_hidden_size 4,096 x (1 + 3 deepstack layers) = 16,384 wide
    q = load_preset("qwen3-vl-8b-instruct").towers[0].profile
    assert (q.modality, q.tokens_per_item, q.embeds_per_item, q.patches_per_item) == ("image", 16_384, 16_384, 65_536)
    assert q.pixels_per_item == 65_536 * 1_536 == 100_663_296 and q.embed_width == 4_096 * 4 == 16_384
    assert q.length_video == (16, 2, 2, 3)
    # Qwen3-VL-30B-A3B: out_hidden_size 2,048 x 4; Qwen3.5-27B: no deepstack (deepstack_visual_indexes []), 5,120
    assert load_preset("qwen3-vl-30b-a3b-instruct").towers[0].profile.embed_width == 2_048 * 4
    assert load_preset("qwen3.5-27b").towers[0].profile.embed_width == 5_120
    # Kimi-K2.5: 3000 // 14 = 214; scale sqrt(16,384 / 214^2) = 0.598 -> int(1,794.4) = 1,794 px, padded to 1,820 (65 x
    # 28): 130^2 = 16,900 patches of 3 x 14^2, 65^2 = 4,225 tokens; the 4-frame chunk (4,096 patches a frame) has 33^2
    k = load_preset("kimi-k2.5").towers[0].profile
    # (vLLM's modality for Kimi-K2.5 is "vision_chunk": kimi_k25.py get_supported_mm_limits)
    assert (k.modality, k.tokens_per_item, k.patches_per_item, k.pixels_per_item) == ("vision_chunk", 4_225, 16_900,
                                                                                       9_937_200)
    assert k.embed_width == 0  # the projector's out_proj writes the text hidden size (7,168)
    assert any("preprocessor_config.json" in a for a in load_preset("kimi-k2.5").assumptions)


def test_qwen3_vl_8b_image_item_held_and_encoder_step():
    # 0.19 V1 at 8,192 batched tokens: budget max(8192, 16384) = 16,384, 1 image; held = outputs 16,384 x 16,384 x 2
    # (536,870,912) + bf16 pixel values 100,663,296 x 2 (201,326,592) = 738,197,504 (the older rule: 8192 x 4096 x 2 =
    # 67,108,864); encoder ~ 738,197,504 + 65,536 patches x 2 B x max(attention 3h + 10h = 14,976 (Qwen's block keeps
    # qkv, the q/k copy and its rotation to the proj), MLP 2 x 1152 + 2 x 4304 = 10,912)
    m = vllm_mm_profile(load_preset("qwen3-vl-8b-instruct"), "0.19", "V1", 1, False, 8192, 2, True)
    assert (m.modality, m.items, m.budget, m.held) == ("image", 1, 16_384, 738_197_504)
    assert m.encoder_peak == 738_197_504 + 65_536 * 2 * 14_976 == 2_701_131_776 and m.basis == "estimate"
    # TP 4 (weights mode): attention 3h + 10h / 4 = 3,456 + 2,880; MLP 2h + 2I / 4 = 2,304 + 2,152: attention
    m4 = vllm_mm_profile(load_preset("qwen3-vl-8b-instruct"), "0.19", "V1", 4, False, 8192, 2, True)
    assert m4.encoder_peak == 738_197_504 + 65_536 * 2 * (3_456 + 2_880)
    # 0.27 V2 (Qwen3.5-27B): the inputs are freed, the 16,384 x 5,120 x 2 = 167,772,160 B outputs stay
    v2 = vllm_mm_profile(load_preset("qwen3.5-27b"), "0.27", "V2", 1, False, 8192, 2, True)
    assert (v2.items, v2.held) == (1, 167_772_160)


def test_kimi_k25_image_item_held_and_encoder_step():
    # 0.19 V1, TP 8, 8,192 batched tokens: budget max(8192, 4225) = 8,192 -> 8192 // 4225 = 1 image; held = outputs
    # 4,225 x 7,168 x 2 (60,569,600) + pixel values 9,937,200 x 2 (19,874,400) + MoonViT's kept 2-D RoPE table
    # 512 x 512 x (1152 / 16 / 2 = 36) x 8 B complex64 (75,497,472) = 155,941,472; encoder ~ that + 16,900 x 2 B x
    # max(attention 3 x 1152 + 11 x 1152 / 8 = 5,040 (apply_rope's fp32 q / k), MLP 2 x 1152 + 2 x 4304 / 8 = 3,380)
    spec = load_preset("kimi-k2.5")
    assert spec.towers[0].profile.kept_buffer_bytes == 512 * 512 * 36 * 8 == 75_497_472
    m = vllm_mm_profile(spec, "0.19", "V1", 8, False, 8192, 2, True)
    assert (m.items, m.budget, m.held) == (1, 8_192, 80_444_000 + 75_497_472)
    assert m.encoder_peak == 155_941_472 + 16_900 * 2 * 5_040 == 326_293_472
    # --mm-encoder-tp-mode data: the image on one rank with the whole tower (attention 14 x 1152 = 16,128)
    assert vllm_mm_profile(spec, "0.19", "V1", 8, True, 8192, 2, True).encoder_peak == 155_941_472 + 16_900 * 2 * 16_128
    # 16,384 batched tokens: 16384 // 4225 = 3 images
    assert vllm_mm_profile(spec, "0.19", "V1", 8, False, 16_384, 2, True).items == 3
    # the V2 runner: 0.33 encodes the item (profile_encoder_cache) and keeps the table beside the outputs, not the
    # inputs: 60,569,600 + 75,497,472 = 136,067,072; 0.26 runs no encoder, so no table is made
    assert vllm_mm_profile(spec, "0.33", "V2", 8, True, 8192, 2, True).held == 136_067_072
    assert vllm_mm_profile(spec, "0.26", "V2", 8, True, 8192, 2, True).held == 0


def test_qwen_video_follows_max_model_len_in_0_11_and_0_12_only():
    # frames grow from 2 while the next count fits in max_model_len, capped at 24,576: at 65,536 the cap, 32 x 32
    # frames, 12,288 x (1 x 2 x 2 / 4) tokens; at 4,096 the 2-frame start (3,520^2: 220^2 / 4 = 12,100 tokens)
    assert qwen_vl_length_video((16, 2, 2, 3), 65_536) == (24_576, 12_288)
    assert qwen_vl_length_video((16, 2, 2, 3), 4_096) == (2, 12_100)
    spec = load_preset("qwen3-vl-8b-instruct")
    assert vllm_mm_item_reads_length(spec, "0.11") and vllm_mm_item_reads_length(spec, "0.12")
    assert not vllm_mm_item_reads_length(spec, "0.13") and not vllm_mm_item_reads_length(load_preset("kimi-k2.5"), "0.11")
    # 0.11: int(12,288 x 12.5) = 153,600 tokens outrank the image; 0.11.x scatters the output into (153,600, 16,384)
    # zeros: 5,033,164,800 + pixel values 49,152 x 1,536 x 2 = 150,994,944
    m = vllm_mm_profile(spec, "0.11", "V1", 1, False, 8192, 2, True, 0, 65_536)
    assert (m.modality, m.items, m.budget, m.held) == ("video", 1, 153_600, 5_184_159_744)
    # 0.12 at 4,096: int(12,100 x 12.5) = 151,250 rows (item_rows) x 16,384 x 2 + 48,400 x 1,536 x 2
    m12 = vllm_mm_profile(spec, "0.12", "V1", 1, False, 8192, 2, True, 0, 4_096)
    assert (m12.budget, m12.held) == (151_250, 151_250 * 16_384 * 2 + 48_400 * 1_536 * 2)
    # 0.13+: the soft tokens (12,288) lose to the image at any length
    assert vllm_mm_profile(spec, "0.13", "V1", 1, False, 8192, 2, True, 0, 65_536).modality == "image"


def test_the_budget_memo_keys_the_length_only_where_the_item_reads_it():
    # one spec planned at two lengths under 0.11 must give what fresh specs give (the budget memo keys max_model_len)
    gpu = get_gpu("H100-SXM")
    shared = load_preset("qwen3-vl-8b-instruct")
    for length in (4_096, 65_536, 4_096):
        cfg = EngineConfig(vllm_version="0.11", max_model_len=length)
        assert _act(plan(shared, gpu, cfg)) == _act(plan(load_preset("qwen3-vl-8b-instruct"), gpu, cfg))
    a, b = (_act(plan(shared, gpu, EngineConfig(vllm_version="0.11", max_model_len=n))) for n in (4_096, 65_536))
    assert b - a == (153_600 - 151_250) * 16_384 * 2 + (49_152 - 48_400) * 1_536 * 2  # the held rows and pixels
    # from 0.13 the item is the image at every length: the peak does not move
    c, d = (_act(plan(shared, gpu, EngineConfig(vllm_version="0.19", max_model_len=n))) for n in (4_096, 65_536))
    assert c == d


def test_qwen3_vl_30b_a3b_3090_tp4_v0_11_log():
    p = plan(load_preset("qwen3-vl-30b-a3b-instruct"), get_gpu("RTX-3090"),
             EngineConfig(vllm_version="0.11", max_model_len=65_536, gpu_memory_utilization=0.90), Layout(tp=4))
    r = p.ranks[0]
    assert _close(r.weights_bytes, 14.7708)  # 14.555
    assert _close(r.kv_pool_bytes, 2.31)  # 2.223 (the older rule: 4.699)
    act = next(t for t in r.terms if t.name.startswith("activation peak"))
    # the log's "budget of 153600 tokens, and profiled with 1 video items"; held (153,600, 2,048 x 4) x 2 B = 2.34 GiB
    assert "1 video item of 153,600 tokens (encoder budget 153,600)" in act.source
    assert 153_600 * 8_192 * 2 < act.bytes


@pytest.mark.xfail(strict=True, reason=(
    "Qwen3.6-35B-A3B NVFP4 on one 32 GB Blackwell under WSL2, vLLM 0.20.0, 4,096 batched tokens, 1 seq, fp8 KV at "
    "65,536: KV 3.95 GiB vs 3.07 logged (+0.88 GiB, +29 %; the older rule +2.67: 5.74). The image item is the log's "
    "('budget of 16384 tokens, and profiled with 1 image items'); the encoder step (~2.08 GiB: 65,536 patches x 2 B x "
    "14,976 + 0.25 held) is the peak. Of the gap, 0.30 GiB is the CUDA-graph estimate (logged 0.39, kvplan 0.09 from "
    "max_num_seqs 1: it reads no --max-cudagraph-capture-size). The 0.20.0 estimate (v1/worker/gpu_model_runner.py "
    "profile_cudagraph_memory) is max over modes of the first capture + (graphs - 1) x the second, each a "
    "mem_get_info difference after an empty_cache, the first FULL capture run at min(max_model_len, max_num_tokens // "
    "size) = 4,096-token contexts; --max-cudagraph-capture-size 4 adds one PIECEWISE size (4) to kvplan's [1, 2], "
    "~10 MiB (40 layers x 256 KiB with experts), so the 0.30 is the first capture of this GDN hybrid, which kvplan prices at 80 "
    "MiB + the MLP's (PIECEWISE) or 4 MiB off Hopper (FULL). The rest (~0.58) is not split by the log: the device is unnamed (31.36 GiB RTX 5090 "
    "assumed: the only Blackwell with room for the 21.86 GiB at util 0.9 and this little KV), WSL's non-torch share "
    "is unlogged, and Qwen's ViT attention transients (rotary temporaries, the pos-embed gather) are an estimate"))
def test_qwen3_6_35b_a3b_nvfp4_5090_v0_20_log():
    # index file 51830815744 (a docker-compose note + its vLLM 0.20.0 log, 2026-05-01): `--model RedHatAI/Qwen3.6-35B-A3B-
    # NVFP4 --gpu-memory-utilization 0.90 --max-model-len 65536 --max-num-seqs 1 --max-num-batched-tokens 4096
    # --kv-cache-dtype fp8_e4m3 --quantization compressed-tensors --moe-backend cutlass --max-cudagraph-capture-size 4`;
    # "Model loading took 21.86 GiB" (passed as measured: the fixture is nvidia's ModelOpt variant of the same
    # architecture), "Estimated CUDA graph memory: 0.39 GiB", "Available KV cache memory: 3.07 GiB", 79,648 tokens.
    # RedHatAI's export is W4A4 NVFP4 ("nvfp4"): nvidia's own W4A16_NVFP4 entries do not load before vLLM 0.22
    # (kvplan.vllm_layouts.modelopt_refusal), so the fixture's shapes are planned in the log's format
    spec = parse_config(load_config_text((FIXTURES / "qwen3.6-35b-a3b-nvfp4.json").read_bytes()), "qwen3.6-35b-a3b")
    p = plan(spec, get_gpu("RTX-5090"), EngineConfig(
        vllm_version="0.20", max_model_len=65_536, gpu_memory_utilization=0.90, kv_cache_dtype="fp8",
        max_num_batched_tokens=4_096, max_num_seqs=1, weights_bytes=int(21.86 * GiB), weight_format="nvfp4"))
    assert _close(p.ranks[0].kv_pool_bytes, 3.07)
