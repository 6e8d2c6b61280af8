"""Public SGLang start-up logs of 2026 (GLM-5 / GLM-5.1 DSA on MI355X), reproduced from the launch inputs alone, each
figure within max(1 %, 0.25 GiB) of the log ("GB" there is 2^30 B), or a strict xfail with the measured gap and why.

Pinned logs (none is pinned in another test file; the code corpus hides the repository of some files: their index id
is given):
  G5MA  zai-org/GLM-5-FP8, 8 x MI355X, rocm/sgl-dev:v0.5.8.post1-rocm720-mi35x-20260218 (a main build between 0.5.8.post1
        and 0.5.9), --attention-backend triton --tp-size 8 --kv-cache-dtype fp8_e4m3: ajith-sirra-amd/Issues
        GLM-5-FP8-MI355X-SGLANG-ERROR.md @ c40b7809310e983ab0a61212662945d58f7eb5f3 (2026-02-26), its first trial:
        server_args mem_fraction_static=0.908, chunked_prefill_size=16384, page_size=1 ("Setting page size to 1 for
        DeepSeek DSA on ROCm."); "[TP0] Load weight begin. avail mem=283.50 GB"; "avail mem=193.92 GB, mem usage=89.58
        GB."; "#tokens: 3262823, KV size: 186.77 GB"; "Memory pool end. avail mem=3.90 GB".
  G5MB  the same checkpoint, flags and GPUs, rocm/sgl-dev:v0.5.9-rocm720-mi35x-20260225 (same file, "Rocm SGLang Docker
        (20260225)"): "Init torch distributed ends. ... mem usage=7.81 GB" (3.81 in G5MA); "Load weight begin. avail
        mem=279.50 GB"; "avail mem=190.30 GB, mem usage=89.20 GB."; "#tokens: 3199575, KV size: 183.15 GB".
  G51M  GLM-5.1-FP8, 4 x MI355X (gfx950), lmsysorg/sglang:v0.5.14-rocm720-mi35x, SGLANG_USE_AITER=1, --tp-size 4
        --mem-fraction-static 0.85: "GLM-5.1-FP8 on SGLang — single-node PD-mix" report (code-corpus file 62385244844,
        2026-07-23; the same run's summary is file 62049285315): attention_backend=dsa, page_size=64,
        kv_cache_dtype=bfloat16, "max_total_num_tokens=651712, context_len=202752". GLM-5.1 keeps GLM-5's shapes
        (glm_moe_dsa, 78 layers, kv_lora_rank 512, qk_rope_head_dim 64, index_head_dim 128: ROCm/ATOM#2291 lists them
        equal across GLM-5.x), so the glm-5 preset stands in for its config.

kvplan refuses GLM-5 on its 0.5.8 line (0.5.8 - 0.5.9: not every release of the line serves GlmMoeDsaForCausalLM); the
two February dev images do, so they are planned on the 0.5.10 line, the first kvplan serves GLM-5 on. Its ROCm rules
are the ones these logs print: the same default fraction (no prefill graphs on ROCm: 0.908 on both lines, checked
below), page 1 on ROCm, the pool profiled at (576 + 132) B a layer and allocated at the packed fp8 656 + 132.
"""

import pytest

from kvplan import load_preset
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.sglang import SGLANG_PROFILES, default_settings, dsa_page_size, pool_bytes
from kvplan.units import GiB
from tests.test_engine_sglang import close, figures

P = SGLANG_PROFILES


def _glm5_mi355x(version: str = "0.5.10", tp: int = 8, **flags):
    return plan(load_preset("glm-5"), get_gpu("MI355X"),
                EngineConfig(engine="sglang", sglang_version=version, weight_format="fp8-block", **flags), Layout(tp=tp))


# ----------------------------------------------------------------------------- G5MA / G5MB: GLM-5-FP8, 8 x MI355X


def test_g5ma_defaults_as_printed():
    # rocm-smi 294,896 MiB, TP8, no prefill graphs on ROCm: 512 + 16384 x 1.5 + 512 x 2 + 8 / 8 x 1024 = 27136 MiB ->
    # (294896 - 27136) / 294896 = 0.90798 -> 0.908, on the 0.5.8 line and on the 0.5.10 line alike
    for line in ("0.5.8", "0.5.10"):
        s = default_settings(P[line], 294_896, "rocm-smi", 8, rocm=True)
        assert (s.reserved_mib, s.mem_fraction_static, s.chunked_prefill_size, s.cuda_graph_max_bs) == (
            27136, 0.908, 16384, 512)
    assert dsa_page_size("0.5.10", "AMD") == 1  # "Setting page size to 1 for DeepSeek DSA on ROCm."


def test_g5ma_glm5_fp8_8x_mi355x_pool():
    p = _glm5_mi355x(kv_cache_dtype="fp8_e4m3")
    f = figures(p.engine_log)
    # profiled cell 78 x (576 + 132) = 55,224 B (fp8 latent + rope, indexer key); allocated 78 x (656 + 132) = 61,464 B
    assert p.ranks[0].kv_bytes_per_token == 55_224
    # pre 287.98 - 4.50 (the ROCm TP8 context) = 283.48 (283.50); usage 88.69 (fp8-block GLM-5 at TP8) + 0.18 = 88.87
    # (89.58: -0.71 GiB, -0.8 %); after 194.62 (193.92)
    assert close(f["begin"] * GiB, 283.50) and close(f["usage"] * GiB, 89.58) and close(f["after"] * GiB, 193.92)
    # rest = 283.48 x 0.908 - 88.87 = 168.53 GiB / 55,224 B = 3,276,898 tokens (logged 3,262,823: +0.43 %);
    # KV 3,276,898 x 61,464 B = 187.58 GiB (186.77); pool end 3.94 (3.90)
    assert abs(f["tokens"] - 3_262_823) <= 0.01 * 3_262_823
    assert close(f["kv"] * GiB, 186.77) and close(f["pool_end"] * GiB, 3.90)
    # the log's own pair: 3,262,823 x 61,464 B = 186.77 GiB exactly as printed
    assert round(3_262_823 * 61_464 / GiB, 2) == 186.77


def test_g5ma_refused_on_the_0_5_8_line():
    with pytest.raises(Exception, match="0.5.10 or newer"):
        _glm5_mi355x("0.5.8", kv_cache_dtype="fp8_e4m3")


def test_g5mb_pool_from_its_own_readings():
    # G5MB from its readings: rest = 279.50 x 0.908 - 89.20 = 164.59 GiB / 55,224 B = 3,200,1xx tokens (logged
    # 3,199,575: +0.02 %): the rule holds, the difference to G5MA is in the reading before the load
    pre = int((190.30 + 89.20) * GiB)
    tokens = pool_bytes(pre, int(89.20 * GiB), 0.908) // 55_224
    assert abs(tokens - 3_199_575) <= 0.001 * 3_199_575
    # the weights are the same as in G5MA: 88.87 vs 89.20 (-0.37 %)
    assert close(figures(_glm5_mi355x(kv_cache_dtype="fp8_e4m3").engine_log)["usage"] * GiB, 89.20)


@pytest.mark.xfail(strict=True, reason=(
    "G5MB 'Load weight begin. avail mem=279.50 GB': kvplan 283.48 (-3.98 GiB to the log, -1.4 %), hence #tokens "
    "3,276,898 vs 3,199,575 (+2.4 %). The 20260225 image holds 4.00 GiB more before the weights load ('Init torch "
    "distributed ends. mem usage=7.81 GB' against 3.81 in the 20260218 image of G5MA, same flags and GPUs): a "
    "distributed-init workspace of that dev build that kvplan's ROCm context term (4.50 GiB at TP8) does not hold"))
def test_g5mb_pre_load_reading():
    f = figures(_glm5_mi355x(kv_cache_dtype="fp8_e4m3").engine_log)
    assert close(f["begin"] * GiB, 279.50) and abs(f["tokens"] - 3_199_575) <= 0.01 * 3_199_575


# ----------------------------------------------------------------------------- G51M: GLM-5.1-FP8, 4 x MI355X, 0.5.14


def test_g51m_layout_and_cell():
    p = _glm5_mi355x("0.5.14", tp=4, mem_fraction_static=0.85)
    f = figures(p.engine_log)
    # 0.5.14 on ROCm: page 64 (aiter's preshuffle paged-MQA), --kv-cache-dtype auto -> bfloat16 below SM 10:
    # 78 x (576 x 2 + 132) = 100,152 B a token; the dsa backend, not aiter: no 0.85 haircut on the 0.85 given
    assert dsa_page_size("0.5.14", "AMD") == 64 and p.ranks[0].kv_bytes_per_token == 100_152
    kept = next(t for t in p.ranks[0].terms if t.name.startswith("left free"))
    assert kept.name == "left free: (1 - 0.85) x free before load"
    assert (f["context"], f["running"]) == (202752, 2048)


@pytest.mark.xfail(strict=True, reason=(
    "G51M max_total_num_tokens=651712: kvplan 702,144 (+7.7 %): its rest 283.48 x 0.85 - 175.47 = 65.49 GiB, the log's "
    "651,712 x 100,152 B = 60.79 GiB (-4.70 GiB a rank). The excerpt prints neither 'Load weight' line, so the gap "
    "cannot be split between the weights and the pre-load reading: kvplan's fp8-block GLM-5 at TP4 is 175.29 GiB "
    "(G52P, GLM-5.2-FP8 at TP8, loads 1.08 GiB a rank more than kvplan: ~2.2 GiB at TP4, the checkpoint's bf16 "
    "modules), and the 4.50 GiB ROCm context is fitted to TP8 logs (G5MA, KIMI), not to TP4"))
def test_g51m_tokens():
    f = figures(_glm5_mi355x("0.5.14", tp=4, mem_fraction_static=0.85).engine_log)
    assert abs(f["tokens"] - 651_712) <= 0.01 * 651_712
