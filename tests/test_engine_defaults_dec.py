"""vLLM defaults kvplan read from vLLM's source for the 2026-12 logs (tests/test_engine_logs_dec.py).

1. The multimodal prefix-LM batch floor: vllm/engine/arg_utils.py _set_default_max_num_seqs_and_batched_tokens_args
   raises the default max_num_batched_tokens to the largest multimodal item (_get_min_mm_batched_tokens) for a
   multimodal prefix-LM model, 0.22.0 - 0.33.0 (absent from the 0.21.0 wheel); from 0.27.0 text-only serving turns
   is_mm_prefix_lm off (config/model.py _supports_multimodal_for_mm_prefix). Gemma-4's item: gemma4_mm.py
   get_mm_max_tokens_per_item, video 32 x (70 + 2 + 6) = 2,496 (kvplan.engines.vllm_mm_batch_floor).
2. MXFP4 on Hopper in 0.10.2 - 0.11.x: Triton where triton_kernels is installed (the vllm/vllm-openai image), Marlin for
   a pip install (kvplan.vllm_layouts.mxfp4_triton_kernels; EngineConfig.triton_kernels, set by an image tag).
3. FP8 on GPUs without FP8 math (sm75 - sm86): Marlin w8a16 with 16-bit per-column scales
   (quantization/utils/marlin_utils_fp8.py; kvplan.vllm_layouts.vllm_fp8_marlin_extra_bytes).
4. Abbreviated long options: argparse's allow_abbrev (no FlexibleArgumentParser sets it) expands an unambiguous
   prefix (kvplan.vllm_args.expand_abbreviation).
"""

import json
from pathlib import Path

import pytest

from kvplan import load_preset, parse_config
from kvplan.engines import VLLM_CHANGES, VLLM_GEMMA4_MM_ITEM_TOKENS, EngineConfig, batch_defaults, vllm_mm_batch_floor
from kvplan.errors import PlanInputError
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.units import GiB
from kvplan.vllm_args import expand_abbreviation, parse_vllm_command
from kvplan.vllm_layouts import (
    fp8_marlin_gpu,
    mxfp4_expert_bytes,
    mxfp4_triton_kernels,
    triton_value_align,
    vllm_fp8_marlin_extra_bytes,
)
from tests.test_engine_logs import close, close_gib
from tests.test_engine_logs_dec import (
    GEMMA4_L40S,
    GEMMA4_WEIGHTS,
    H100,
    H100_011,
    L40S,
    MINIMAX_A100,
    QWEN35_H20,
    _plan,
    _term,
)

PRESETS = Path(__file__).parents[1] / "kvplan" / "presets"
A100 = get_gpu("A100-80GB")


# ----------------------------------------------------------------------------- 1. the prefix-LM batch floor

def test_gemma4_item_and_release_range():
    assert VLLM_GEMMA4_MM_ITEM_TOKENS == 32 * (70 + 2 + 6) == 2_496  # 32 frames x (70 soft tokens + boi + eoi + 6)
    assert VLLM_CHANGES["mm_prefix_lm_batch_floor"][0] == (0, 22, 0)
    assert VLLM_CHANGES["mm_prefix_lm_text_only_off"][0] == (0, 27, 0)


def test_mm_prefix_lm_read_from_the_text_config():
    # Gemma4ModelArchConfigConvertor.is_mm_prefix_lm: text_config use_bidirectional_attention == "vision"
    assert load_preset("gemma-4-26b-a4b").mm_prefix_lm and load_preset("gemma-4-31b-it-nvfp4").mm_prefix_lm
    cfg = json.loads((PRESETS / "gemma-4-26b-a4b.json").read_text())
    cfg["text_config"]["use_bidirectional_attention"] = None
    assert not parse_config(cfg, "gemma-4-causal").mm_prefix_lm
    # Gemma-3 is prefix-LM in vLLM (MM_PREFIX_LM_MODELS) but gemma3_mm.py has no get_mm_max_tokens_per_item: no floor
    assert not load_preset("gemma-3-27b-it").mm_prefix_lm


@pytest.mark.parametrize("version,text_only,given,floor", [
    ("0.19", False, None, 0),  # before 0.22.0
    ("0.21", False, None, 0),  # the 0.21 profile (0.20.1 - 0.21.0): not in the 0.21.0 wheel
    ("0.22", False, None, 2_496),
    ("0.25", False, None, 2_496),
    ("0.25", True, None, 2_496),  # --language-model-only keeps it through 0.26.0
    ("0.27", True, None, 0),  # ... and drops it from 0.27.0
    ("0.33", False, None, 2_496),
    ("0.33", False, 1_024, 0),  # --max-num-batched-tokens given: vLLM raises only its own default
])
def test_floor_by_release(version, text_only, given, floor):
    spec = load_preset("gemma-4-26b-a4b")
    engine = EngineConfig(vllm_version=version, language_model_only=text_only, max_num_batched_tokens=given)
    assert vllm_mm_batch_floor(spec.model_type, spec.mm_prefix_lm, bool(spec.towers), engine) == floor


def test_floor_needs_towers_and_a_prefix_lm_family():
    engine = EngineConfig(vllm_version="0.25")
    assert vllm_mm_batch_floor("gemma4_text", True, False, engine) == 0  # a text-only Gemma-4 checkpoint
    qwen_vl = load_preset("qwen3-vl-8b-instruct")  # overrides get_mm_max_tokens_per_item, not prefix-LM
    assert vllm_mm_batch_floor(qwen_vl.model_type, qwen_vl.mm_prefix_lm, bool(qwen_vl.towers), engine) == 0
    assert vllm_mm_batch_floor("gemma4_text", True, True, EngineConfig(engine="sglang")) == 0


def test_batch_defaults_floor_only_raises():
    engine = EngineConfig(vllm_version="0.25")
    assert batch_defaults("L40S", L40S.memory_bytes, engine, 2_496) == (2_496, 256)  # 2,048 raised
    assert batch_defaults("H100-SXM", H100.memory_bytes, engine, 2_496) == (8_192, 1_024)  # 8,192 already above
    assert batch_defaults("L40S", L40S.memory_bytes, engine.model_copy(update={"max_num_batched_tokens": 512}),
                          2_496) == (512, 256)


def test_gemma4_l40s_log_tokens_from_the_default_flags():
    # GEMMA4-L40S (vLLM 0.25.1, no --max-num-batched-tokens), the logged 12.75 GiB pool given: each of the 5 sliding
    # groups holds cdiv(1023 + 2496, 16) + 1 = 221 blocks a request, the full group cdiv(32768, 32) = 1,024 (block 32
    # unified): 2,129; 20,889 blocks / 2,129 = 9.81x (logged 9.81x), 321,508 tokens (logged 321,600, -0.03 %)
    p = _plan(load_preset("gemma-4-26b-a4b"), L40S, GEMMA4_L40S, "0.25", weights_bytes=GEMMA4_WEIGHTS,
              kv_cache_memory_bytes=round(12.75 * GiB))
    assert [g.blocks_per_request for g in p.kv_groups] == [221] * 5 + [1_024] and p.blocks_per_request == 2_129
    assert p.num_blocks == 20_889 and f"{p.max_concurrency:.2f}" == "9.81" and close(p.kv_cache_tokens, 321_600)
    assert any("from 2,048 to 2,496" in w for w in p.warnings)
    full = _plan(load_preset("gemma-4-26b-a4b"), L40S, GEMMA4_L40S, "0.25", weights_bytes=GEMMA4_WEIGHTS)
    assert _term(full, "activation peak (2496 batched tokens, 256 sampler rows)") > 0  # the profile run's batch too
    # the 0.21 profile keeps 2,048: cdiv(1023 + 2048, 16) + 1 = 193 a sliding group, 5 x 193 + 1,024 = 1,989
    q = _plan(load_preset("gemma-4-26b-a4b"), L40S, GEMMA4_L40S, "0.21", weights_bytes=GEMMA4_WEIGHTS,
              kv_cache_memory_bytes=round(12.75 * GiB))
    assert q.blocks_per_request == 5 * 193 + 1_024 == 1_989 and not any("2,496" in w for w in q.warnings)


# ----------------------------------------------------------------------------- 2. MXFP4 and triton_kernels

def test_triton_kernels_by_release():
    assert mxfp4_triton_kernels("0.11", None)[0] is False  # pip install: none
    assert mxfp4_triton_kernels("0.11", True)[0] is True
    assert mxfp4_triton_kernels("0.11.1", True)[0] is True and mxfp4_triton_kernels("0.10.2", True)[0] is True
    assert mxfp4_triton_kernels("0.10", True)[0] is False  # 0.10.0 - 0.10.1.1 pin torch 2.7.1
    assert mxfp4_triton_kernels("0.12", False)[0] is True  # bundled from 0.12.0
    assert VLLM_CHANGES["mxfp4_triton_torch28"][0] == (0, 10, 2)


def test_gpt_oss_20b_expert_bytes_marlin_vs_triton():
    # H = I = 2880. Marlin: I -> 2944, H -> 3072: w13 2 x 2944 x 3072 / 2 = 9,043,968 + w2 3072 x 2944 / 2 = 4,521,984
    # + scales 2 x 2944 x 96 + 3072 x 92 = 847,872 + bf16 biases (5888 + 3072) x 2 = 17,920 -> 14,431,744.
    # Triton (0.11's pack sizes 16 x 32): values 1440 x 5760 + 1440 x 2880 = 12,441,600, swizzled scales 5888 x 90 +
    # 3072 x 90 = 806,400, kept scales 5760 x 90 + 2880 x 90 = 777,600, fp32 biases 8640 x 4 = 34,560 -> 14,060,160
    assert mxfp4_expert_bytes(2880, 2880, True, "marlin") == 14_431_744
    assert triton_value_align("0.11") == (16, 32)
    assert mxfp4_expert_bytes(2880, 2880, True, "triton", (16, 32), "0.11") == 14_060_160


def test_h100_v0_11_0_image_plans_the_triton_layout():
    # the H100-011 pods ran vllm/vllm-openai:v0.11.0: "Model loading took 13.47 GiB", "Available KV cache memory: 50.28
    # GiB". The image tag sets triton_kernels: (14,431,744 - 14,060,160) x 32 experts x 24 layers = 285,376,512 B less
    # than Marlin: 13.70 -> 13.44 GiB, KV 50.07 -> 50.34 (+0.06 against the log)
    line = "docker run --gpus all vllm/vllm-openai:v0.11.0 " + H100_011.format(
        model="openai/gpt-oss-20b", tp=1, len=16000).replace("vllm serve ", "--model ")
    args = parse_vllm_command(line)
    assert args.vllm_version == "0.11" and args.triton_kernels is True and not args.unknown
    spec = load_preset("gpt-oss-20b")
    image = plan(spec, H100, EngineConfig(**args.engine_fields()), Layout())
    pip = _plan(spec, H100, H100_011.format(model="openai/gpt-oss-20b", tp=1, len=16000), "0.11")
    assert pip.ranks[0].weights_bytes - image.ranks[0].weights_bytes == 371_584 * 32 * 24 == 285_376_512
    assert abs(image.ranks[0].weights_bytes / GiB - 13.47) < 0.05 and close_gib(image.ranks[0].kv_pool_bytes, 50.28)
    assert abs(image.ranks[0].kv_pool_bytes / GiB - 50.28) < 0.1
    assert any(t.name == "MXFP4 MoE layout: Triton (in weights)" for t in image.ranks[0].terms)
    assert any(t.name == "MXFP4 MoE layout: Marlin (in weights)" and "pip install" in t.source
               for t in pip.ranks[0].terms)


def test_h100_v0_11_0_image_gpt_oss_120b_weights():
    # the same set's gpt-oss-120b row: "64.38" GiB weights (the Triton size; Marlin would be 65.97, vLLM #23278)
    p = _plan(load_preset("gpt-oss-120b"), H100, H100_011.format(model="openai/gpt-oss-120b", tp=1, len=16000), "0.11",
              triton_kernels=True)
    assert abs(p.ranks[0].weights_bytes / GiB - 64.38) < 0.1


def test_triton_kernels_cli_flag():
    from kvplan.cli import build_parser
    from kvplan.cli_plan import engine_from_args

    args = build_parser().parse_args(["plan", "gpt-oss-20b", "--gpu", "H100-SXM", "--vllm-version", "0.11",
                                      "--triton-kernels"])
    assert engine_from_args(args).triton_kernels is True
    args = build_parser().parse_args(["plan", "gpt-oss-20b", "--gpu", "H100-SXM", "--no-triton-kernels"])
    assert engine_from_args(args).triton_kernels is False


# ----------------------------------------------------------------------------- 3. FP8 on Marlin (A100)

def test_fp8_marlin_gpus():
    assert fp8_marlin_gpu("A100-80GB") and fp8_marlin_gpu("A10G") and fp8_marlin_gpu("RTX-3090")
    assert fp8_marlin_gpu("RTX-A6000")
    assert not any(fp8_marlin_gpu(g) for g in ("L40S", "L4", "RTX-4090", "RTX-6000-Ada", "H100-SXM", "B200"))


def test_minimax_m2_7_a100_tp4_marlin_scales():
    # per expert and rank (H 3072, I 1536 / 4 = 384): Marlin w13 cdiv(3072, 128) x 768 x 2 B = 36,864 + w2 cdiv(384,
    # 128) x 3072 x 2 B = 18,432 = 55,296 B of bf16 scales, for the checkpoint's fp32 block scales gate 3 x 24 x 4 + up
    # 288 + down 24 x 3 x 4 = 864 B: +54,432 x 256 experts x 62 layers = 863,944,704. Attention a rank: qkv (6144 + 2 x
    # 1024) / 4 = 2048 x 3072: 24 x 2048 x 2 = 98,304 for (12 + 2 + 2) x 24 x 4 = 1,536; o 3072 x 1536: 12 x 3072 x 2
    # = 73,728 for 24 x 12 x 4 = 1,152: +169,344 x 62 = 10,499,328. In all 874,444,032 B (0.81 GiB)
    spec = load_preset("minimax-m2.7")
    assert vllm_fp8_marlin_extra_bytes(spec, Layout(tp=4), 0, None, "A100-80GB", "0.22") == \
        54_432 * 256 * 62 + 169_344 * 62 == 874_444_032
    assert vllm_fp8_marlin_extra_bytes(spec, Layout(tp=4), 0, None, "H100-SXM", "0.22") == 0
    assert vllm_fp8_marlin_extra_bytes(spec, Layout(tp=4), 0, None, "L40S", "0.22") == 0  # sm89: FP8 math
    p = _plan(spec, A100, MINIMAX_A100, "0.22", cudagraph_mode="PIECEWISE")  # the line's --compilation-config
    h = _plan(spec, get_gpu("H100-SXM"), MINIMAX_A100, "0.22", cudagraph_mode="PIECEWISE")
    assert _term(p, "FP8 Marlin scales (in weights)") == 874_444_032
    assert p.ranks[0].weights_bytes - h.ranks[0].weights_bytes == 874_444_032
    # the log: 244,576 tokens; kvplan 265,296 before the Marlin scales, 251,520 with them, 254,496 once 0.22's
    # FlashInfer sampler default shrinks the sampler peak; 248,352 (2026-12, tests/test_engine_logs_2026b.py) once the
    # V1 dummy sampler run's forward_native warm-up keeps the 3.72-copy peak (VLLM_CHANGES sampler_native_warmup) and
    # the FP8 experts' MarlinExperts workspace is held under it (2048 x 8 x 3072 x 2 x 2 B = 0.1875 GiB, kvplan.plan.
    # vllm_marlin_moe_workspace_bytes): +1.5 %; 244,480 (-0.04 %, tests/test_engine_logs_dec.py) once the CUDA-graph
    # estimate takes the model's shape and the line's PIECEWISE mode (867 MiB, not the fixed 0.62 GiB: 248,352 -
    # 244,480 = 3,872 tokens = 242 blocks x 63,488 B x 16 = 0.23 GiB)
    assert p.kv_cache_tokens == 244_480


def test_fp8_marlin_per_tensor_and_channel_dense():
    # Llama-3.1-8B, one A100, per layer: fused qkv n 6144, o 4096, gate_up 28,672, down 4096; Marlin keeps [1, n] bf16
    # scales. fp8 (per-tensor, 4 B a checkpoint projection): 2 x (6144 + 4096 + 28672 + 4096) = 86,016 - 4 x 7 = 85,988
    # a layer, x 32 = 2,751,616. fp8-channel (fp32 [n] per projection, 4 x 43,008 = 172,032): -86,016 x 32 = -2,752,512
    spec = load_preset("llama-3.1-8b")
    assert vllm_fp8_marlin_extra_bytes(spec, Layout(), 0, "fp8", "A100-80GB", "0.22") == 85_988 * 32 == 2_751_616
    assert vllm_fp8_marlin_extra_bytes(spec, Layout(), 0, "fp8-channel", "A100-80GB", "0.19") == -2_752_512
    assert vllm_fp8_marlin_extra_bytes(spec, Layout(), 0, "bf16", "A100-80GB", "0.22") == 0
    assert vllm_fp8_marlin_extra_bytes(spec, Layout(), 0, "fp8", "A100-80GB", "0.7") == 0  # V0: not read


# ----------------------------------------------------------------------------- 4. abbreviated options

def test_unambiguous_prefix_expands():
    assert expand_abbreviation("--max-num-batched-token") == "--max-num-batched-tokens"
    assert expand_abbreviation("--max-num-batched-tokens") == "--max-num-batched-tokens"  # exact: itself
    assert expand_abbreviation("--no-such-flag-at-all") == "--no-such-flag-at-all"  # no prefix: unknown as before
    args = parse_vllm_command("vllm serve m --gpu-memory-util 0.8 --max_num_seq 8 " + QWEN35_H20.split(" ", 3)[3])
    assert args.gpu_memory_utilization == 0.8 and args.max_num_seqs == 16 and args.max_num_batched_tokens == 16384
    assert not args.unknown and len([n for n in args.notes if "read as" in n]) == 3


def test_ambiguous_prefix_is_refused_naming_the_candidates():
    with pytest.raises(PlanInputError) as err:
        parse_vllm_command("vllm serve m --max-num 8")
    assert err.value.field == "--max-num"
    assert "could match" in str(err.value) and "--max-num-seqs" in str(err.value)
    assert "--max-num-batched-tokens" in str(err.value)
    # "--wat" (once an unknown flag in tests/test_vllm_args.py) prefixes three vLLM 0.33 options: vLLM refuses it
    with pytest.raises(PlanInputError, match="--watchdog-config, --watermark, --watermark-config"):
        parse_vllm_command("vllm serve m --wat")
