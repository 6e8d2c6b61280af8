"""Public SGLang start-up logs of the 2026-12-02 round, reproduced from the launch inputs, each figure within
max(1 %, 0.25 GiB) of the log ("GB" there is 2^30 B), or a strict xfail with the measured gap and why.

Pinned logs (none is pinned in another test file: issue number, index file id and the logged figures grepped
2026-12-02; the code corpus hides the repository of the file, so its index id is given):

  MIS7  mistralai/Mistral-7B-Instruct-v0.1 (bf16), one 24 GB card, sglang of 2024-12-12 (0.4.0.post1: kvplan's 0.4.0
        line), the quick-start command ``python -m sglang.launch_server --model-path mistralai/Mistral-7B-Instruct-v0.1
        --port 30000 --host 0.0.0.0`` (no memory flags): sgl-project/sglang issue #2468 '"GET / HTTP/1.1" 404 Not
        Found' (2024-12-12), as quoted in a first-time-contributors issue digest (code-corpus file 31036295528).
        Logged: "Load weight end. type=MistralForCausalLM, dtype=torch.bfloat16, avail mem=9.69 GB", "Memory pool
        end. avail mem=2.44 GB", "max_total_num_tokens=56524, max_prefill_tokens=16384, max_running_requests=2049,
        context_len=32768". The card is not named; the 0.4.0 pool rule read backwards from the log (rest = 9.69 -
        free x 0.12 = 56,524 x 131,072 B = 6.90 GiB) puts 23.25 GiB free before the load, an RTX 4090's figure
        (kvplan: 23.26; an RTX 3090 reads 23.18), so kvplan's RTX 4090 stands in, and the 3090 is checked too.
  G51H  zai-org/GLM-5.1-FP8 (GlmMoeDsaForCausalLM, fp8 block weights), 8 x H200, TP 8, the stock DSA path of an SGLang
        research checkout of 2026-06 (a double-sparsity fork at HEAD 6714a5663 / ee60c0df4; the 0.5.14 line), default
        envelope (max_running_requests 2048, context_len 202752): "Loop 11 Results" memory-accounting report (code-corpus
        file 60247094991, 2026-06-13), quoting its tracked boot fields. Logged (per rank, "GB" = GiB): pre-weights avail
        138.01, weights loaded 48.76 (89.24 GB of weights), at --mem-fraction-static 0.7 "KV pool 8.14 (142,208
        tokens, kv_buffer + DSA indexer sidecar)", pool end 38.99; the DSA case at 0.8: "pool end 23.60 (KV 23.51 GB,
        410,560 tokens)". The KV dtype is not printed in the report; its cell is: 23.51 GiB / 410,560 = 61,486 B = 78
        layers x (656 B packed fp8 latent + 132 B fp8 indexer key), the fp8_e4m3 layout (bf16 would be 100,152 B), so
        the plans ask for fp8_e4m3 (SGLang's auto picks bf16 on SM 9.0: kvplan.sglang's DSA rule).
"""

from kvplan import load_preset
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
import pytest

from kvplan.sglang import SGLANG_PROFILES, default_settings, dsa_bytes_per_token, gpu_capacity_mib, pool_bytes
from kvplan.units import GiB
from tests.test_engine_sglang import close, figures

MISTRAL_CELL = 32 * 8 * 128 * 2 * 2  # 32 layers x 8 KV heads x 128 x (K + V) x 2 B = 131,072 B a token


def _mis7(gpu: str):
    return plan(load_preset("mistral-7b-v0.1"), get_gpu(gpu), EngineConfig(engine="sglang", sglang_version="0.4.0"),
                Layout(tp=1))


def test_mis7_the_log_read_backwards():
    # 0.4.0 at TP 1: --mem-fraction-static 0.88 by default; the pool is avail-after-load - free-before x (1 - 0.88).
    # The log's 56,524 tokens x 131,072 B = 6.90 GiB = 9.69 - free x 0.12 -> free = 23.25 GiB before the load, and the
    # weights + loading extras 23.25 - 9.69 = 13.56 GiB (the 7.24 B bf16 parameters are 13.49)
    s = default_settings(SGLANG_PROFILES["0.4.0"], 24_564, "nvidia-smi", 1)
    assert s.mem_fraction_static == 0.88 and s.chunked_prefill_size == 2048
    assert round(56_524 * MISTRAL_CELL / GiB, 2) == 6.90 and round((9.69 - 6.90) / 0.12, 2) == 23.25
    rtx4090 = get_gpu("RTX-4090")
    assert gpu_capacity_mib(rtx4090.name, rtx4090.vendor, rtx4090.memory_bytes) == (24_564, "nvidia-smi memory.total")
    assert close(pool_bytes(int(23.25 * GiB), int(13.56 * GiB), 0.88), 6.90)


def test_mis7_mistral_7b_rtx4090_sglang_0_4_0():
    # kvplan (RTX 4090): free before the load 23.64 - 0.38 context = 23.26 GiB; mem usage 13.49 weights + 0.18
    # fitted loading overhead = 13.67; after the load 9.59 (logged 9.69, -0.10); rest 9.59 - 23.26 x 0.12 = 6.80 GiB
    # = 55,705 tokens (logged 56,524: -1.45 % in tokens, -0.10 GiB of pool, inside 0.25 GiB); pool end 2.54 (2.44)
    p = _mis7("RTX-4090")
    f = figures(p.engine_log)
    assert p.ranks[0].kv_bytes_per_token == MISTRAL_CELL
    assert close(f["after"] * GiB, 9.69) and abs(f["after"] - 9.59) < 0.005
    assert close(f["tokens"] * MISTRAL_CELL, 56_524 * MISTRAL_CELL / GiB) and f["tokens"] == 55_705
    assert close(f["pool_end"] * GiB, 2.44)
    assert f["running"] == 2049 and f["context"] == 32768 and f["chunk"] == 2048


def test_mis7_the_rtx3090_reads_the_same_within_tolerance():
    # an RTX 3090 (24,576 MiB, 23.56 GiB usable): after 9.51 (-0.18), 55,129 tokens = 6.73 GiB (-0.17), pool end 2.53
    f = figures(_mis7("RTX-3090").engine_log)
    assert close(f["after"] * GiB, 9.69) and close(f["tokens"] * MISTRAL_CELL, 56_524 * MISTRAL_CELL / GiB)
    assert close(f["pool_end"] * GiB, 2.44) and f["running"] == 2049


# ----------------------------------------------------------------------------- G51H: GLM-5.1-FP8, 8 x H200, 0.5.14


def _g51h(fraction: float):
    return plan(load_preset("glm-5.1"), get_gpu("H200"),
                EngineConfig(engine="sglang", sglang_version="0.5.14", weight_format="fp8-block",
                             mem_fraction_static=fraction, kv_cache_dtype="fp8_e4m3"), Layout(tp=8))


def _glm51_layers():
    return [(layer, 1) for layer in load_preset("glm-5.1").layers]


def test_g51h_dsa_cells_and_the_rule_from_the_logs_readings():
    # fp8 DSA on 0.5.10+: profiled 78 x (576 raw fp8 latent + 132 indexer) = 55,224 B a token, allocated 78 x (656 +
    # 132) = 61,464 B (the report's 23.51 GiB / 410,560 = 61,486 B, its 8.14 / 142,208 = 61,461 B; 410,560 x 61,464 B = 23.50 GiB)
    prof = dsa_bytes_per_token("0.5.14", _glm51_layers(), 1, 128)
    alloc = dsa_bytes_per_token("0.5.14", _glm51_layers(), 1, 128, allocated=True)
    assert (prof, alloc) == (55_224, 61_464)
    # the rule from the report's own readings: rest = 48.76 - 138.01 x (1 - f); / 55,224 B
    pre, weights = int(138.01 * GiB), int((138.01 - 48.76) * GiB)
    t8 = pool_bytes(pre, weights, 0.8) // prof
    t7 = pool_bytes(pre, weights, 0.7) // prof
    assert abs(t8 - 410_560) <= 0.01 * 410_560 and t8 == 411_383  # +0.20 %
    assert abs(t7 - 142_208) <= 0.01 * 142_208 and t7 == 143_045  # +0.59 %
    assert round(410_560 * alloc / GiB, 2) == 23.50 and round(142_208 * alloc / GiB, 2) == 8.14


def test_g51h_glm51_fp8_h200_tp8_load_figures():
    # pre 139.81 - 1.44 (TP 8 over NVLink) = 138.37 (logged 138.01, +0.36); mem usage 88.69 fp8 block weights + 0.27
    # SGLang layout extra + 0.18 loading overhead = 89.14 (logged 89.24, -0.10); after 49.23 (48.76, +0.47, inside
    # 1 % = 0.49)
    f = figures(_g51h(0.8).engine_log)
    assert close(f["begin"] * GiB, 138.01) and close(f["usage"] * GiB, 89.24) and close(f["after"] * GiB, 48.76)
    # pool end at 0.8: after - KV - ReqToTokenPool = 23.69 (logged 23.60); at 0.7 39.09 (38.99)
    assert close(f["pool_end"] * GiB, 23.60) and close(figures(_g51h(0.7).engine_log)["pool_end"] * GiB, 38.99)
    assert f["running"] == 2048 and f["context"] == 202_752


@pytest.mark.xfail(strict=True, reason=(
    "GLM-5.1-FP8 on 8 x H200, TP 8, the 0.5.14 line, fp8 DSA KV: from the flags kvplan's rest is 49.23 - 138.37 x "
    "(1 - f), 0.40 GiB above the report's own 48.76 - 138.01 x (1 - f) (its pre-load reading is 0.36 GiB under kvplan's "
    "TP-8 NVLink context, its post-load 0.47 under): at 0.8 419,200 tokens / 24.00 GiB against 410,560 / 23.51 (+2.1 %, "
    "+0.49 GiB); at 0.7 150,144 / 8.60 against 142,208 / 8.14 (+5.6 %, +0.46 GiB). The pool rule itself reproduces both "
    "from the report's readings (+0.20 % / +0.59 %); the extra ~0.4 GiB held before the load on this research fork's "
    "node is not explained (no source rule for it), so not fixed"))
@pytest.mark.parametrize("fraction, tokens, kv_gib", [(0.8, 410_560, 23.51), (0.7, 142_208, 8.14)],
                         ids=["dsa-0.8", "0.7"])
def test_g51h_glm51_fp8_h200_tp8_pool_from_the_flags(fraction, tokens, kv_gib):
    f = figures(_g51h(fraction).engine_log)
    assert close(f["kv"] * GiB, kv_gib) and abs(f["tokens"] - tokens) <= 0.01 * tokens


@pytest.mark.parametrize("fraction, tokens, kv_gib", [(0.8, 419_200, 24.00), (0.7, 150_144, 8.60)])
def test_g51h_the_xfails_numbers(fraction, tokens, kv_gib):
    f = figures(_g51h(fraction).engine_log)
    assert f["tokens"] == tokens and abs(f["kv"] - kv_gib) < 0.005
