"""Weights per rank as vLLM holds them after loading ("Model loading took X GiB"), per format and backend.

Logs: llm-d-incubation/llm-d-planner accuracy/results/v0.19.0/logs/*.log @d3121e059da88662db39a926a3ead964be97359b
(vLLM v0.19.0, one to four H100-80GB, util 0.95, max_model_len 8192). A figure passes within max(1 %, 0.25 GiB);
each test states kvplan's error on its log.
"""

import pytest

from kvplan import load_preset
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout, rank_weight_bytes
from kvplan.plan import plan
from kvplan.units import GiB
from kvplan.vllm_layouts import mxfp4_expert_bytes, mxfp4_moe_backend, vllm_mxfp4_extra_bytes, vllm_rope_cache_bytes
from tests.test_engine_logs import close_gib

LOGS = "llm-d-incubation/llm-d-planner accuracy/results/v0.19.0/logs @d3121e05"


def test_mxfp4_expert_layouts_hand_derived():
    # checkpoint: w13 [5760, 2880] fp4 = 8,294,400 + e8m0 5760 x 90 = 518,400; w2 [2880, 2880] = 4,147,200 + 259,200;
    # bf16 biases (5760 + 2880) x 2 = 17,280 -> 13,236,480 (kvplan.weights' per-expert bytes)
    assert mxfp4_expert_bytes(2880, 2880, True) == 8_294_400 + 518_400 + 4_147_200 + 259_200 + 17_280
    # Marlin: I 2880 -> 2944 (128), H 2880 -> 3072 (256): w13 2 x 2944 x 1536 + 5888 x 96, w2 3072 x 1472 + 3072 x 92
    assert mxfp4_expert_bytes(2880, 2880, True, "marlin") == (
        5888 * 1536 + 5888 * 96 + 3072 * 1472 + 3072 * 92 + (5888 + 3072) * 2)
    # Triton at TP2: I 1440 -> 1472 (create_weights: round_up(I, 64)); values, v0.19.0's bundled HopperMXValueLayout
    # (both dims to 64): [1440 -> 1472, 2944] + [736 -> 768, 2880]; swizzled scales [2944 -> 3072, 90] + [3072, 46];
    # kept scales [2944, 90] + [2880, 46]; fp32 biases (2944 + 2880) x 4
    assert mxfp4_expert_bytes(2880, 1440, True, "triton", vllm_version="0.19") == (
        1472 * 2944 + 768 * 2880 + 3072 * 90 + 3072 * 46 + 2944 * 90 + 2880 * 46 + 5824 * 4) == 7_383_936
    # upstream triton's (64, 256) value padding (no vLLM wheel read bundles it): [.., 2944 -> 3072] + [.., 2880 -> 3072]
    assert mxfp4_expert_bytes(2880, 1440, True, "triton", (64, 256), vllm_version="0.19") == (
        1472 * 3072 + 768 * 3072 + 3072 * 90 + 3072 * 46 + 2944 * 90 + 2880 * 46 + 5824 * 4) == 7_719_808
    # from 0.25.0 the checkpoint's scales are deleted after the swizzle (fused_moe/oracle/mxfp4.py: del
    # layer.w13_weight_scale / w2_weight_scale), from 0.26.0 _swizzle_mxfp4 pads the scales' K to 4 on SM 9.0 first
    # ("Patches #47303"): swizzled [3072, 90 -> 92] + [3072, 46 -> 48], nothing kept
    assert mxfp4_expert_bytes(2880, 1440, True, "triton", vllm_version="0.25") == (
        1472 * 2944 + 768 * 2880 + 3072 * 90 + 3072 * 46 + 5824 * 4) == 6_986_496
    assert mxfp4_expert_bytes(2880, 1440, True, "triton", vllm_version="0.33") == (
        1472 * 2944 + 768 * 2880 + 3072 * 92 + 3072 * 48 + 5824 * 4) == 6_998_784
    # FlashInfer TRTLLM (B200): I and H to 256, fp32 biases: I 1440 -> 1536
    assert mxfp4_expert_bytes(2880, 1440, True, "trtllm") == (
        3072 * 1536 + 3072 * 96 + 3072 * 768 + 3072 * 48 + (3072 + 3072) * 4)


def test_mxfp4_backend_by_gpu_and_release():
    assert mxfp4_moe_backend("sm90", "0.33") == "triton" and mxfp4_moe_backend("sm90", "0.17") == "triton"
    assert mxfp4_moe_backend("sm90", "0.10") == "marlin" and mxfp4_moe_backend("sm90", "0.11") == "marlin"
    assert mxfp4_moe_backend("other", "0.33") == "marlin"  # A100 / L40S: triton_kernels needs sm90+
    assert mxfp4_moe_backend("sm100", "0.33") == "trtllm"
    # a non-MXFP4 model gets no layout term
    spec = load_preset("llama-3.1-8b")
    assert vllm_mxfp4_extra_bytes(spec, Layout(), 0, None, "sm90", "0.33") == 0


def test_v0_19_gpt_oss_20b_tp2_triton_backend():
    # openai-gpt-oss-20b--h100-80gb--tp2pp1dp1--8192.log: "Using 'TRITON' Mxfp4 MoE backend.",
    # "Model loading took 7.01 GiB memory". kvplan: 6.99 GiB (-0.3 %) = 6.96 in the v0.19.0 bundled triton_kernels
    # layout + 0.03125 the fp32 YaRN cos/sin table (4,096 x 32 positions x 64 x 4 B); upstream triton's (64, 256)
    # gave 7.20 + 0.03 (+3.1 %); the old Marlin layout 7.06, no padding 6.41 (-8.5 %).
    p = plan(load_preset("gpt-oss-20b"), get_gpu("H100-SXM"), EngineConfig(vllm_version="0.19", max_model_len=8192),
             Layout(tp=2))
    assert close_gib(p.ranks[0].weights_bytes, 7.01)
    assert round(p.ranks[0].weights_bytes / GiB, 2) == 6.99


def test_v0_19_gpt_oss_20b_tp1_triton_backend():
    # openai-gpt-oss-20b--h100-80gb--tp1pp1dp1--8192.FAILED.log: "Model loading took 13.64 GiB memory". kvplan 13.63
    # (-0.1 %: + the 0.03 GiB fp32 rope table) with v0.19.0's bundled value layout (vllm/third_party/triton_kernels/tensor_details/layout_details/
    # hopper_value.py: "Pre-pad both matrix dims to multiples of 64"): w13 values [1440 -> 1472, 5760], w2
    # [1440 -> 1472, 2880]; upstream triton's (64, 256) gave 13.94 (+2.2 %)
    p = plan(load_preset("gpt-oss-20b"), get_gpu("H100-SXM"), EngineConfig(vllm_version="0.19", max_model_len=8192))
    assert close_gib(p.ranks[0].weights_bytes, 13.64)
    assert round(p.ranks[0].weights_bytes / GiB, 2) == 13.63
    # the 0.33.0 wheel's bundle pads the values to the mma pack sizes only (16 x 32), frees the checkpoint's scales
    # (24 x 32 experts x (5760 x 90 + 2880 x 90) = 597,196,800 B) and pads the swizzled scales' K 90 -> 92 (768 x
    # (5888 + 3072) x 2 = 13,762,560 B): 13.44 - 0.556 + 0.013 = 12.89 GiB (no log pinned)
    p33 = plan(load_preset("gpt-oss-20b"), get_gpu("H100-SXM"), EngineConfig(vllm_version="0.33", max_model_len=8192))
    assert round(p33.ranks[0].weights_bytes / GiB, 2) == 12.89


@pytest.mark.parametrize("preset,fmt,tp,logged,log", [
    # RedHatAI/Llama-3.3-70B-Instruct-fp8-dynamic (compressed-tensors FP8_DYNAMIC: fp8 weight, fp32 scale per output
    # channel, lm_head ignored; llama-3.1-70b has its architecture): "Selected CutlassFP8ScaledMMLinearKernel for
    # CompressedTensorsW8A8Fp8", "Model loading took 33.88 GiB" (TP2) / "16.96 GiB" (TP4). kvplan 33.85 / 16.93
    # (tensors; + the 0.03125 GiB rotary table in the plan: 33.88 / 16.96).
    ("llama-3.1-70b", "fp8-channel", 2, 33.88, "fp8dyn-llama-3-3-70b--h100-80gb--tp2pp1dp1--8192.log"),
    ("llama-3.1-70b", "fp8-channel", 4, 16.96, "fp8dyn-llama-3-3-70b--h100-80gb--tp4pp1dp1--8192.log"),
    # RedHatAI/Qwen2.5-7B-Instruct-fp8-dynamic: "Model loading took 8.14 GiB"; kvplan 8.11 (-0.3 %)
    ("qwen2.5-7b", "fp8-channel", 1, 8.14, "fp8dyn-redhatai-qwen2-5---h100-80gb--tp1pp1dp1--8192.log"),
    # RedHatAI/Qwen2.5-7B-Instruct-quantized.w8a8 (int8 channel, CutlassInt8ScaledMMLinearKernel): 8.14; kvplan 8.11
    ("qwen2.5-7b", "int8", 1, 8.14, "w8a8-redhatai-qwen2-5-7b--h100-80gb--tp1pp1dp1--8192.log"),
    # RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w8a8, --dtype float16: 8.49; kvplan 8.46 (-0.3 %)
    ("llama-3.1-8b", "int8", 1, 8.49, "w8a8-redhatai-llam--h100-80gb--tp1pp1dp1--8192-dtf16.log"),
    # meta-llama/Llama-3.1-8B-Instruct --quantization fp8 (Fp8OnlineLinearMethod: per-tensor scale): 8.49; kvplan 8.46
    ("llama-3.1-8b", "fp8", 1, 8.49, "meta-llama-llama-3---h100-80gb--tp1pp1dp1--8192-qfp8.log"),
])
def test_v0_19_dense_quantized_weights(preset, fmt, tp, logged, log):
    spec = load_preset(preset)
    got = rank_weight_bytes(spec, Layout(tp=tp), 0, fmt)
    assert close_gib(got, logged), (log, got / GiB)
    assert abs(got / GiB - logged) / logged < 0.005  # all within 0.4 %
    p = plan(spec, get_gpu("H100-SXM"), EngineConfig(vllm_version="0.19", weight_format=fmt, max_model_len=8192,
                                                     gpu_memory_utilization=0.95), Layout(tp=tp))
    # no MoE layout term for dense formats; the rotary table (kvplan.vllm_layouts.vllm_rope_cache_bytes) on top
    rope = vllm_rope_cache_bytes(spec, Layout(tp=tp), 0, "0.19")
    assert rope == 131_072 * 128 * 2  # Llama-3.1 (llama3), the Qwen2.5-7B base preset: 131,072 positions x 128 x bf16
    assert p.ranks[0].weights_bytes == got + rope
    assert abs(p.ranks[0].weights_bytes / GiB - logged) < abs(got / GiB - logged)  # closer to the log with it


@pytest.mark.parametrize("preset,tp,logged,where", [
    # TechxGenus/Meta-Llama-3-70B-Instruct-AWQ (4 bit, group 128, zero point; llama-3.1-70b has its architecture;
    # lm_head unquantized), vLLM 0.16.0, 2 x L40S, fp16: "The model is convertible to awq_marlin during runtime",
    # "Model loading took 18.55 GiB memory" (lab notes "Lab 1 — vLLM OpenAI Server: Llama 3 70B Instruct (AWQ) on
    # NVIDIA L40S (TP=2)", search index file 10876549642). kvplan 18.52 GiB (-0.2 %).
    ("llama-3.1-70b", 2, 18.55, "vLLM 0.16.0, L40S TP2"),
    # Qwen/Qwen3-8B-AWQ, vLLM 0.17.0, 2 x sm89 GPUs, --tensor-parallel-size 2: "Model loading took 2.85 GiB memory"
    # (console log, search index file 54810965301). kvplan 2.84 GiB (-0.3 %).
    ("qwen3-8b", 2, 2.85, "vLLM 0.17.0, sm89 TP2"),
])
def test_awq_marlin_keeps_the_checkpoint_bytes(preset, tp, logged, where):
    # awq_marlin.py process_weights_after_loading repacks qweight / scales / qzeros into Marlin tiles of the same size
    # and registers empty g_idx tensors: the loaded bytes are AWQ's (qweight in x out / 2, qzeros, 16-bit scales)
    got = rank_weight_bytes(load_preset(preset), Layout(tp=tp), 0, "int4-g128")
    assert close_gib(got, logged), where
    assert abs(got / GiB - logged) / logged < 0.004


def test_block_fp8_shards_that_split_a_block_are_refused_as_vllm_does():
    from kvplan.errors import PlanInputError
    from kvplan.vllm_layouts import fp8_block_refusal

    h100 = get_gpu("H100-SXM")
    # vLLM #25292 "Qwen/Qwen3-30B-A3B-FP8 crashes with TP=4": moe_intermediate 768 / 4 = 192, not a multiple of 128
    spec = load_preset("qwen3-30b-a3b")
    assert fp8_block_refusal(spec, Layout(tp=4), "fp8-block") == (
        "ValueError: The output_size of gate's and up's weight = 192 is not divisible by weight quantization "
        "block_n = 128.")
    with pytest.raises(PlanInputError) as info:
        plan(spec, h100, EngineConfig(weight_format="fp8-block", max_model_len=8192), Layout(tp=4))
    assert info.value.field == "tensor_parallel_size" and "192" in info.value.message
    # TP2 (384 = 3 x 128) loads; so does TP4 with expert parallelism (experts whole) and TP4 in bf16
    assert fp8_block_refusal(spec, Layout(tp=2), "fp8-block") is None
    assert fp8_block_refusal(spec, Layout(tp=4, ep=True), "fp8-block") is None
    assert fp8_block_refusal(spec, Layout(tp=4), None) is None
    # vLLM #17569: Qwen3-235B-A22B-FP8 at TP8: 1536 / 8 = 192
    assert "= 192 is not divisible" in fp8_block_refusal(load_preset("qwen3-235b-a22b"), Layout(tp=8), "fp8-block")
    # DeepSeek-V3 (fp8-block checkpoint): TP8 loads (2048 / 8 = 256); TP32 does not: its first dense layer's
    # intermediate 18432 / 32 = 576 (sgl-project/sglang#3345 "deepseek-R1 671b can not set tensor_parallel_size=32")
    # before the experts' 2048 / 32 = 64
    v3 = load_preset("deepseek-v3")
    assert fp8_block_refusal(v3, Layout(tp=8), None) is None
    assert fp8_block_refusal(v3, Layout(tp=32), None) == (
        "ValueError: Weight output_partition_size = 576 is not divisible by weight quantization block_n = 128.")


def test_issue_13061_v0_two_rtx_4090_kv_arithmetic():
    # vllm-project/vllm#13061 (V0 engine, vLLM 0.7.x, 2 x RTX 4090, `vllm serve --tensor_parallel_size 2
    # --gpu_memory_utilization=0.98 deepseek-ai/DeepSeek-R1-Distill-Qwen-14B`): "Loading model weights took 13.9476 GB"
    # (GiB), then "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can
    # be stored in KV cache (81536)". The memory-relevant fields of the model's config.json (Qwen2 14B), typed here:
    from kvplan import parse_config

    cfg = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 5120,
           "intermediate_size": 13824, "num_hidden_layers": 48, "num_attention_heads": 40, "num_key_value_heads": 8,
           "vocab_size": 152064, "max_position_embeddings": 131072, "rope_theta": 1000000.0, "rms_norm_eps": 1e-05,
           "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_sliding_window": False, "hidden_act": "silu"}
    spec = parse_config(cfg, "deepseek-r1-distill-qwen-14b")
    weights = rank_weight_bytes(spec, Layout(tp=2))
    assert close_gib(weights, 13.9476)  # 13.76 GiB: -1.4 %, 0.19 GiB under (inside the 0.25 GiB floor)
    # V0 CacheEngine.get_cache_block_size: 48 layers x 2 x 16 tokens x 4 KV heads a rank x 128 x 2 B = 1.5 MiB;
    # 81,536 tokens = 5,096 blocks on the tightest rank = 7.46 GiB of KV (the quoted worker had 8.69 GiB:
    # 23.08 - 13.95 - 0.25 non-torch - 0.19 activation; V0 takes the minimum over workers)
    p = plan(spec, get_gpu("RTX-4090"), EngineConfig(vllm_version="0.10", kv_cache_memory_bytes=5096 * 1_572_864),
             Layout(tp=2))
    assert p.ranks[0].bytes_per_block == 48 * 2 * 16 * 4 * 128 * 2 == 1_572_864
    assert p.num_blocks == 5096 and p.kv_cache_tokens == 81_536
    # kvplan has no V0 profile: V1 refuses the same start in its own words, one null block less (81,520)
    assert not p.starts and "max seq len (131072)" in p.start_error and p.max_model_len_that_starts == 81_520
