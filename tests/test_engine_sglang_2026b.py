"""More public SGLang start-up logs (2025 - 2026 releases) reproduced from the launch inputs alone, each figure within
max(1 %, 0.25 GiB) of the log ("GB" there is 2^30 B), or a strict xfail with the measured gap and why.

Pinned logs (the code corpus hides the repository of some files: their index id is given; none is pinned elsewhere):
  Q06W  Qwen3-0.6B, sglang 0.4.6.post2 (pip, WSL2; the 0.4.6 line), one GPU shared with the desktop (3.23 GiB free
        before loading), no memory flags; server_args printed: "Qwen3 SGLang" tutorial (code-corpus file 9542409931),
        log of 2025-05-02.
  GO20  openai/gpt-oss-20b, one B200, sglang of 2025-10 (the 0.5.3 line), no memory flags: ovg-project/kvcached#198
        (2025-10-28, log of 2025-10-12) "Load weight end. type=GptOssForCausalLM ... avail mem=163.13 GB, mem
        usage=14.53 GB." (kvcached then fails; only the weights are pinned).
  DSR1  deepseek-ai/DeepSeek-R1-0528 (fp8), 8 x B200, lmsysorg/sglang:v0.4.10.post1-cu128-b200 + source build (the
        0.4.8 line), --tp 8 --enable-ep-moe --enable-flashinfer-trtllm-moe, no memory flags: "Deployment Guide for SGLang
        DeepSeekR1 FP8 and NVFP4" (code-corpus file 9615030885), log of 2025-08-01: "max_total_num_tokens=980344,
        chunked_prefill_size=16384, ..., max_running_requests=3063, context_len=163840".
  R262  fxmarty/Qwen_Qwen3-30B-A3B-Instruct-2507-5-layers (Qwen3-30B-A3B cut to 5 layers), one MI355X,
        rocm/sgl-dev:v0.5.7-rocm700-mi35x-20260121 (the 0.5.7 line), --disable-cuda-graph: sgl-project/sglang#18262
        (2026-02-04): "Load weight begin. avail mem=287.20 GB", "avail mem=274.42 GB, mem usage=12.79 GB", "#tokens:
        21985288, K size: 104.83 GB".
  L8LR  meta-llama/Meta-Llama-3.1-8B-Instruct, one H100, SGLang docs CI of 2026-02-09 (the 0.5.8 line), the LoRA
        notebook's server with --max-total-tokens 20480 (code-corpus file 14968382678, lora.ipynb executed): "Load weight
        begin. avail mem=78.43 GB"; "avail mem=63.41 GB, mem usage=15.02 GB." (the pool is capped: weights only).
  Q8B2  Qwen/Qwen3-8B, one B200, an SGLang checkout of 2026-04-27 (tc_piecewise prefill graphs: the 0.5.10 line), no
        flags: the "clean-startup-log" skill's reference log (code-corpus file 52132052242): "avail mem=177.57 GB";
        "avail mem=162.30 GB, mem usage=15.28 GB."; "#tokens: 992896, K size: 68.18 GB"; "Memory pool end. avail
        mem=25.26 GB"; 74 prefill graph sizes; chunked_prefill_size=16384.
  G52P  zai-org/GLM-5.2-FP8, 8 x RTX PRO 6000 Blackwell Server (97887 MiB), lmsysorg/sglang:v0.5.13.post1 (the 0.5.10
        line), --tp-size 8 --disable-custom-all-reduce: OpenAgentsInc/hydralisk docs/evidence/
        2026-06-24-glm-52-sglang-load-smoke.md @ 617bf148a4e217c9ae2a20973442f0c4713555ee. --mem-fraction-static 0.80
        (32K) and 0.92 (8K) fail with "not enough memory"; 0.98 with --max-total-tokens 4096 loads: "89.44 GB used, 4.64 GB
        available" a rank, KV 0.21 GB at 4096 fp8 tokens.
  Q30P  Qwen/Qwen3-30B-A3B-Instruct-2507 (bf16), one MI355X, sgl-project/sglang PR #18263 (its branch, 2026-07-15,
        which removes the aiter 0.85 haircut): "self.server_args.mem_fraction_static 0.911"; "Load weight end ... avail
        mem=230.20 GB, mem usage=56.98 GB."; "initial available_bytes 219721119039 / 204.63 GB".
  Q06R  Qwen/Qwen3-0.6B, one MI355X, pip sglang 0.5.17 (2026-08-20), --mem-fraction-static 0.6, aiter attention by
        default: "inference/sglang/llm" README (code-corpus file 65830671609, the file the hybrid Q38 / Q38R logs come
        from; this is its Qwen3-0.6B probe): "avail mem=287.26 GB"; "avail mem=286.05 GB, mem usage=1.21 GB."; "#tokens:
        1360288, K size: 72.65 GB"; "Memory pool end. avail mem=140.05 GB".
  RR06  Qwen/Qwen3-Reranker-0.6B (Qwen3-0.6B's shapes), one H100, pip sglang 0.5.18 (2026-08-22), --disable-radix-cache
        --mem-fraction-static 0.3: "inference/sglang/reranker" README (code-corpus file 65732309288): "avail mem=77.29 GB,
        mem usage=1.18 GB."; "max_total_num_tokens=208651, ..., max_running_requests=2608, context_len=40960".
  Q32G  Qwen/Qwen3-32B, one H100, lmsysorg/sglang:v0.5.19 (the 0.5.18 line), --mem-fraction-static 0.90
        --context-length 8192 --enable-memory-saver --disable-custom-all-reduce: RyanRosario/llm-d
        guides/gke-pod-snapshots/modelserver/gpu/gke/sglang/patch-sglang.yaml @ d27a90426d31ff66fe8b2f0d2c0a0395dece7ccf
        and its demo runbook (docker/scripts/snapshot/sglang/demo, code-corpus file 70339980981, 2026-09-30): "avail
        mem=17.40 GB, mem usage=61.07 GB."; "9.54 GB for 39,078 tokens".
"""

import json
from pathlib import Path

import pytest

from kvplan import load_preset, parse_config
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.sglang import (
    SGLANG_PROFILES,
    aiter_haircut,
    default_settings,
    gpt_oss_mxfp4_pad_bytes,
    gpu_capacity_mib,
    max_running_requests,
    pool_bytes,
    prefill_graph_sizes,
)
from kvplan.units import GiB
from tests.test_engine_sglang import close, figures

P = SGLANG_PROFILES
ROOT = Path(__file__).resolve().parent.parent


def _plan(spec, gpu: str, version: str, tp: int = 1, **flags):
    if isinstance(spec, str):
        spec = load_preset(spec)
    return plan(spec, get_gpu(gpu), EngineConfig(engine="sglang", sglang_version=version, **flags), Layout(tp=tp))


def _usage(p) -> float:
    """kvplan's "mem usage" (weights + layout extras + the fitted loading overhead), bytes."""
    return figures(p.engine_log)["usage"] * GiB


# ----------------------------------------------------------------------------- 0.4.6 line


def test_q06w_qwen3_0_6b_wsl_0_4_6():
    # Q06W server_args: mem_fraction_static=0.88, chunked_prefill_size=2048, cuda_graph_max_bs=8; "Load weight end ...
    # avail mem=2.03 GB, mem usage=1.20 GB."; "#tokens: 15387, K size: 0.82 GB"; "max_running_requests=2049,
    # context_len=40960". The GPU is shared (3.23 GiB free), so the pool is checked from the logged readings.
    for mib in (8192, 16384, 24564):  # any card below 25000 MiB: the TP table (TP1 0.88), chunk 2048, 8 decode graphs
        s = default_settings(P["0.4.6"], mib, "nvidia-smi", 1)
        assert (s.mem_fraction_static, s.chunked_prefill_size, s.cuda_graph_max_bs) == (0.88, 2048, 8)
    pre, after = 3.23 * GiB, 2.03 * GiB
    # rest = 2.03 - 3.23 x 0.12 = 1.6424 GiB / 114,688 B (28 layers x 8 KV heads x 128 x 2 x 2 B) = 15,376 (-0.07 %)
    tokens = pool_bytes(int(pre), int(pre - after), 0.88) // 114_688
    assert abs(tokens - 15_387) <= 0.01 * 15_387
    # ReqToTokenPool rows clamp(int(15387 / 40960 x 512) = 192, 2048, 4096) + 1 = 2049 (the 0.4.6 line's extra row)
    assert max_running_requests(P["0.4.6"], 15_387, 40_960) == 2049
    # the weights from the flags: Qwen3-0.6B 1.11 GiB + 0.18 = 1.29 (logged 1.20)
    assert close(_usage(_plan("qwen3-0.6b", "RTX-4090", "0.4.6")), 1.20)


# ----------------------------------------------------------------------------- 0.4.8 line (0.4.7.post1 - 0.5.2)


def _dsr1():
    return _plan("deepseek-v3", "B200", "0.4.8", tp=8, max_model_len=163840)


def test_dsr1_0528_8x_b200_defaults_and_cell():
    # DSR1: B200 183359 MiB (> 160 GiB): reserved 32 GiB -> (183359 - 32768) / 183359 = 0.8213 -> 0.821; chunk 16384
    s = default_settings(P["0.4.8"], 183_359, "nvidia-smi", 8)
    assert (s.reserved_mib, s.mem_fraction_static, s.chunked_prefill_size) == (32768, 0.821, 16384)
    p = _dsr1()
    # MLA: (512 + 64) x 61 x 2 B = 70,272 B a token on every rank
    assert p.ranks[0].kv_bytes_per_token == 70_272 and figures(p.engine_log)["chunk"] == 16384


def test_dsr1_0528_8x_b200_tokens():
    # DSR1 #tokens: was +1.93 % (999,310) with the Hopper NVLink context (1.89 GiB). SM 10.x over NVLink loses 3.01 GiB
    # before the pre-load reading on the 0.4.x line (sglang PR #9162, B200 TP4, 2025-08-13: 175.34 of 178.35): pre =
    # 175.34; loaded 79.29 + 0.18 = 79.47 (fp8 block weights at TP8); rest = 175.34 x 0.821 - 79.47 = 64.48 GiB /
    # 70,272 B = 985,260 tokens (logged 980,344: +0.50 %); int(985260 / 163840 x 512) = 3078 (3063: +0.49 %)
    f = figures(_dsr1().engine_log)
    assert f["begin"] == 175.34
    assert abs(f["tokens"] - 980_344) <= 0.01 * 980_344 and abs(f["running"] - 3063) <= 0.01 * 3063
    assert close(f["tokens"] * 70_272, 980_344 * 70_272 / GiB)


# ----------------------------------------------------------------------------- gpt-oss on SM 10.x (flashinfer_mxfp4)


def test_go20_gpt_oss_20b_b200_flashinfer_padding():
    # GO20: "avail mem=163.13 GB, mem usage=14.53 GB." Checkpoint tensors 12.82 GiB + 0.18 = 13.00 (-1.53 GiB, -10.5 %)
    # until the padding: SM100 + mxfp4 -> --moe-runner-backend flashinfer_mxfp4 (server_args.py), and
    # Mxfp4MoEMethod.create_weights rounds intermediate (2880) and hidden (2880) up to 256 -> 3072:
    # per expert w13 6144 x 1536 + 6144 x 96 + 6144 x 2 B, w2 3072 x 1536 + 3072 x 96 + 3072 x 2 B = 15,058,944 B
    # against 13,236,480 unpadded: + 1,822,464 B x 32 experts x 24 layers = 1,399,652,352 B (1.30 GiB)
    spec = load_preset("gpt-oss-20b")
    layers = [(layer, 1) for layer in spec.layers]
    assert gpt_oss_mxfp4_pad_bytes(spec, 1, False, layers, None, "B200", "0.5.3") == 1_399_652_352
    p = _plan(spec, "B200", "0.5.3")
    f = figures(p.engine_log)
    # 12.82 + 1.30 + 0.18 = 14.30 GiB (logged 14.53: -0.23); pre 178.35 - 0.74 = 177.61 (logged 163.13 + 14.53 = 177.66)
    assert close(_usage(p), 14.53) and close(f["begin"] * GiB, 163.13 + 14.53) and close(f["after"] * GiB, 163.13)
    # 0.5.17+ pad the intermediate to 128 (2880 -> 2944); the hidden stays 3072 (FusedMoE rounds it to 256 under
    # flashinfer_mxfp4): 15,058,944 -> 14,431,744 B an expert; Hopper: none; the sm120 cards from 0.5.14 only
    assert gpt_oss_mxfp4_pad_bytes(spec, 1, False, layers, None, "B200", "0.5.20") == (
        32 * 24 * (2 * 2944 * (1536 + 96 + 2) + 3072 * (1472 + 92 + 2) - 13_236_480)) == 917_962_752
    assert gpt_oss_mxfp4_pad_bytes(spec, 1, False, layers, None, "H100-SXM", "0.5.3") == 0
    assert gpt_oss_mxfp4_pad_bytes(spec, 1, False, layers, None, "RTX-PRO-6000", "0.5.3") == 0
    # 0.5.6 - 0.5.8 keep the MoE backend auto under --enable-piecewise-cuda-graph: no padding
    assert gpt_oss_mxfp4_pad_bytes(spec, 1, False, layers, None, "B200", "0.5.6", "enable") == 0


# ----------------------------------------------------------------------------- ROCm: the aiter 0.85 haircut


def test_aiter_haircut_rule():
    # server_args.py _handle_attention_backend_compatibility (0.5.6+): attention_backend == "aiter" and context_len > 8192
    # -> mem_fraction_static *= 0.85; aiter is the HIP default for MHA, and for MLA with 16 / 128 KV heads a rank
    assert aiter_haircut("0.5.17", "AMD", False, 8, 1, 40960)
    assert not aiter_haircut("0.5.3", "AMD", False, 8, 1, 40960)  # not in the 0.5.3 wheel
    assert not aiter_haircut("0.5.20", "AMD", False, 8, 1, 8192)  # context 8192: no haircut
    assert not aiter_haircut("0.5.20", "NVIDIA", False, 8, 1, 40960)
    assert not aiter_haircut("0.5.20", "AMD", True, 64, 8, 262144)  # Kimi-K2.5 TP8: 8 heads a rank -> triton
    assert aiter_haircut("0.5.20", "AMD", True, 128, 8, 163840)  # DeepSeek-V3 TP8: 16 -> aiter


def test_r262_qwen3_30b_5_layers_mi355x_0_5_7():
    # R262: 294,896 MiB (rocm-smi), TP1, --disable-cuda-graph (0.5.7 keeps the decode reserve): 512 + 16384 x 1.5 +
    # 1 / 8 x 1024 + 512 x 2 = 26240 MiB -> 268656 / 294896 = 0.91102 -> 0.911; x 0.85 (aiter, context 262144) = 0.77435
    s = default_settings(P["0.5.7"], 294_896, "rocm-smi", 1, rocm=True, eager=True)
    assert (s.reserved_mib, s.mem_fraction_static) == (26240, 0.911)
    # from the logged readings: rest = 274.42 - 287.20 x 0.22565 = 209.61 GiB / 10,240 B (5 layers x 4 KV heads x 128 x
    # 2 x 2 B) = 21,979,7xx tokens (logged 21,985,288: -0.03 %); without the haircut 248.90 GiB (+18.7 %)
    pre, after = 287.20 * GiB, 274.42 * GiB
    tokens = pool_bytes(int(pre), int(pre - after), 0.911 * 0.85) // 10_240
    assert abs(tokens - 21_985_288) <= 0.01 * 21_985_288
    assert pool_bytes(int(pre), int(pre - after), 0.911) // 10_240 > 1.15 * 21_985_288
    p = _plan(_five_layers(), "MI355X", "0.5.7", enforce_eager=True)
    assert close(figures(p.engine_log)["begin"] * GiB, 287.20)  # 287.98 - 0.74 = 287.24
    kept = next(t for t in p.ranks[0].terms if t.name.startswith("left free"))
    assert kept.name == "left free: (1 - 0.7743) x free before load" and "x 0.85 for the aiter attention backend" in kept.source


def _five_layers():
    # the checkpoint's config: Qwen3-30B-A3B-Instruct-2507 (the qwen3-30b-a3b preset's shapes, max_position_embeddings
    # 262144) with num_hidden_layers 5 (reconstructed from the repository name and the log's 5-layer K size)
    cfg = json.loads((ROOT / "kvplan" / "presets" / "qwen3-30b-a3b.json").read_text())
    return parse_config({**cfg, "num_hidden_layers": 5, "max_position_embeddings": 262144}, "qwen3-30b-a3b-5-layers")


@pytest.mark.xfail(strict=True, reason=(
    "R262 'mem usage=12.79 GB': kvplan prices the 5-layer checkpoint at 6.96 GiB + 0.18 = 7.14 (embeddings 1.16, 5 x "
    "1.12 GiB of experts, attention): -5.65 GiB. The difference is about the 5 layers' experts a second time: the rocm/sgl-dev 0.5.7 "
    "image's aiter MoE path appears to hold a shuffled copy beside the loaded experts; the same model family loads at "
    "its checkpoint size on the PR #18263 branch of 2026-07 (Q30P), so it is not modelled"))
def test_r262_mem_usage():
    assert close(_usage(_plan(_five_layers(), "MI355X", "0.5.7", enforce_eager=True)), 12.79)


def test_q06r_qwen3_0_6b_mi355x_aiter_haircut():
    # Q06R: --mem-fraction-static 0.6 becomes 0.51 (aiter, context 40960)
    p = _plan("qwen3-0.6b", "MI355X", "0.5.17", mem_fraction_static=0.6)
    f = figures(p.engine_log)
    # pre 287.98 - 0.74 = 287.24 (287.26); usage 1.11 + 0.18 = 1.29 (1.21)
    assert close(f["begin"] * GiB, 287.26) and close(f["usage"] * GiB, 1.21) and close(f["after"] * GiB, 286.05)
    # rest = 287.24 x 0.51 - 1.29 = 145.20 GiB / 114,688 B = 1,359,445 tokens (logged 1,360,288: -0.06 %; at 0.6 it was
    # 1,601,478, +17.7 %); K 72.60 GiB (72.65); pool end 140.12 (140.05)
    assert close(f["tokens"] * 114_688, 1_360_288 * 114_688 / GiB) and close(f["k"] * GiB, 72.65)
    assert close(f["pool_end"] * GiB, 140.05)


def test_q30p_qwen3_30b_a3b_2507_mi355x_pr18263_branch():
    # Q30P: the default before the haircut (the PR branch removes it): 294,896 MiB, TP1, ROCm (no prefill graphs):
    # 512 + 16384 x 1.5 + 128 + 512 x 2 = 26240 MiB -> 0.911, as the branch prints
    s = default_settings(P["0.5.15"], 294_896, "rocm-smi", 1, rocm=True)
    assert (s.reserved_mib, s.mem_fraction_static) == (26240, 0.911)
    p = _plan("qwen3-30b-a3b", "MI355X", "0.5.15", max_model_len=262144)
    f = figures(p.engine_log)
    # usage 56.87 + 0.18 = 57.05 (56.98); after 287.24 - 57.05 = 230.19 (230.20)
    assert close(f["usage"] * GiB, 56.98) and close(f["after"] * GiB, 230.20)
    # the branch's rest from its readings: 230.20 - 287.18 x 0.089 = 204.64 GiB (logged 204.63); a release keeps
    # 0.911 x 0.85 = 0.77435 (kvplan: 165.4 GiB), which the branch replaces by a computed aiter workspace
    pre = (230.20 + 56.98) * GiB
    assert close(pool_bytes(int(pre), int(56.98 * GiB), 0.911), 204.63)
    assert close(p.ranks[0].kv_pool_bytes, 165.38)


# ----------------------------------------------------------------------------- NVIDIA, 0.5.8 - 0.5.19


def test_l8lr_llama31_8b_h100_docs_2026_02():
    # L8LR: pre 79.19 - 0.74 = 78.45 (78.43); usage 14.96 + 0.18 = 15.14 (15.02); after 63.31 (63.41)
    f = figures(_plan("llama-3.1-8b", "H100-SXM", "0.5.8", max_total_tokens=20480).engine_log)
    assert close(f["begin"] * GiB, 78.43) and close(f["usage"] * GiB, 15.02) and close(f["after"] * GiB, 63.41)
    assert f["tokens"] == 20480


def test_q8b2_qwen3_8b_b200_0_5_10_prefill_graphs():
    # Q8B2: 183,359 MiB, TP1, chunk 16384, decode max_bs 512, 74 prefill sizes up to 16384 (the log compiles 74):
    # 512 + 24576 + 128 + 1024 + 74 x 8 = 26832 MiB -> 156527 / 183359 = 0.8537 -> 0.854
    s = default_settings(P["0.5.10"], 183_359, "nvidia-smi", 1)
    assert (s.reserved_mib, s.mem_fraction_static, s.prefill_graph_count, len(prefill_graph_sizes(16384))) == (
        26832, 0.854, 74, 74)
    p = _plan("qwen3-8b", "B200", "0.5.10")
    f = figures(p.engine_log)
    # pre 178.35 - 0.74 = 177.61 (177.57); usage 15.26 + 0.18 = 15.44 (15.28)
    assert close(f["begin"] * GiB, 177.57) and close(f["usage"] * GiB, 15.28) and close(f["after"] * GiB, 162.30)
    # rest = 177.61 x 0.854 - 15.44 = 136.24 GiB / 147,456 B = 992,087 tokens (logged 992,896, trtllm_mha's page 64:
    # -0.08 %); K 68.12 (68.18); pool end 25.31 (25.26)
    assert close(f["tokens"] * 147_456, 992_896 * 147_456 / GiB) and close(f["k"] * GiB, 68.18)
    assert close(f["pool_end"] * GiB, 25.26) and f["chunk"] == 16384


def _glm52(**flags):
    spec = parse_config(json.loads((ROOT / "tests" / "fixtures" / "configs" / "glm-5.2.json").read_text()), "glm-5.2")
    return _plan(spec, "RTX-PRO-6000", "0.5.10", tp=8, weight_format="fp8-block", disable_custom_all_reduce=True,
                 **flags)


def test_g52p_glm_5_2_fp8_8x_rtx_pro_6000():
    # G52P: nvidia-smi 97887 MiB (the log's "Visible memory per GPU"), now in kvplan's table
    gpu = get_gpu("RTX-PRO-6000")
    assert gpu_capacity_mib(gpu.name, gpu.vendor, gpu.memory_bytes) == (97887, "nvidia-smi memory.total")
    ok = _glm52(mem_fraction_static=0.98, max_total_tokens=4096, max_model_len=4096, enable_prefix_caching=False)
    f = figures(ok.engine_log)
    # pre 94.97 - 0.56 (TP over PCIe, custom all-reduce off) = 94.41 (logged 89.44 + 4.64 = 94.08: +0.35 %)
    assert close(f["begin"] * GiB, 89.44 + 4.64)
    # DSA on SM 12 (fp8 KV, trtllm raw latent): 78 x (576 + 132) = 55,224 B; (4096 + 64) x 55,224 B = 0.21 GiB
    assert ok.starts and f["tokens"] == 4096 and close(f["kv"] * GiB, 0.21)
    # 0.92 and 0.80 leave a negative rest (94.41 x 0.92 = 86.86 < 88.63 loaded), as the log's "not enough memory"
    for flags in ({"mem_fraction_static": 0.92, "max_total_tokens": 8192, "max_model_len": 8192},
                  {"mem_fraction_static": 0.80, "max_model_len": 32768}):
        p = _glm52(**flags)
        assert not p.starts and any("Not enough memory" in line for line in p.engine_log)


def test_g52p_mem_usage():
    # G52P '89.44 GB used' a rank: kvplan's fp8-block GLM-5.2 at TP8 is 88.18 GiB + 0.18 overhead + SGLang's MLA
    # w_kc / w_vc (kvplan.sglang.mla_absorb_bytes: 78 x 512 x 64 / 8 x (192 + 256) x 2 B = 0.267 GiB) = 88.63 (-0.81
    # GiB, -0.9 %; it was 88.36, -1.2 %, before the w_kc / w_vc were priced). The rest is likely modules the FP8
    # checkpoint keeps in bf16 (the fixture is the bf16 config)
    usage = _usage(_glm52(mem_fraction_static=0.98, max_total_tokens=4096, max_model_len=4096))
    assert close(usage, 89.44) and abs(usage / GiB - 88.63) <= 0.01


def test_rr06_qwen3_reranker_0_6b_h100_0_5_18():
    # RR06: --mem-fraction-static 0.3: rest = 78.45 x 0.3 - 1.29 = 22.24 GiB / 114,688 B = 208,261 tokens (logged
    # 208,651: -0.19 %); max_running_requests int(208261 / 40960 x 512) = 2603 (2608)
    p = _plan("qwen3-0.6b", "H100-SXM", "0.5.18", mem_fraction_static=0.3, enable_prefix_caching=False)
    f = figures(p.engine_log)
    assert close(f["usage"] * GiB, 1.18) and close(f["after"] * GiB, 77.29)
    assert close(f["tokens"] * 114_688, 208_651 * 114_688 / GiB)
    assert abs(f["running"] - 2608) <= 0.01 * 2608 and (f["chunk"], f["context"]) == (8192, 40960)


def test_q32g_qwen3_32b_h100_0_5_19_fraction_0_9():
    # Q32G: rest = 78.45 x 0.9 - (61.02 + 0.18) = 9.40 GiB / 262,144 B (64 layers x 8 KV heads x 128 x 2 x 2 B) =
    # 38,505 tokens (logged 39,078 x 262,144 B = 9.54 GiB: -0.14 GiB, inside 0.25 GiB)
    p = _plan("qwen3-32b", "H100-SXM", "0.5.18", mem_fraction_static=0.9, max_model_len=8192,
              disable_custom_all_reduce=True)
    f = figures(p.engine_log)
    assert p.ranks[0].kv_bytes_per_token == 262_144
    assert close(f["usage"] * GiB, 61.07) and close(f["after"] * GiB, 17.40)
    assert close(f["tokens"] * 262_144, 9.54) and f["context"] == 8192
