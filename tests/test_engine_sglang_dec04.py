"""Public SGLang start-up logs of the 2026-12-04 round, reproduced from the launch inputs, each figure within
max(1 %, 0.25 GiB) of the log ("GB" there is 2^30 B), or a strict xfail with the measured gap and why.

Pinned logs (none is pinned in another test file: the index file id and the logged figures, with and without commas,
grepped 2026-12-04; the code corpus hides the repository of the file, so its index id is given):

  R1Q7  deepseek-ai/DeepSeek-R1-Distill-Qwen-7B (Qwen2ForCausalLM, bf16), one RTX 3090 on a Windows host (the README's
        "System Information: Graphics: RTX 3090", "cuda_12.6.0 with 560.76 driver" (a Windows driver build) and its
        Docker-on-WSL2 set-up), the lmsysorg/sglang image of 2025-02-04 through docker compose: a "Local deployment of
        Deepseek-R1 with RTX3090/RTX4090" README (code-corpus file 8893364747). The logged server_args are the defaults
        (mem_fraction_static=0.88, chunked_prefill_size=2048, cuda_graph_max_bs=8, tp_size=1, context_length=None,
        kv_cache_dtype='auto'); the KV line "KV Cache is allocated. K size: 2.82 GB, V size: 2.82 GB." has no #tokens,
        the 0.4.0 - 0.4.2 wording (kvplan's 0.4.0 line, 0.4.0 - 0.4.5.post2). Logged: "Load weight begin. avail
        mem=22.76 GB", "Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=8.37 GB", "Memory pool
        end. avail mem=1.68 GB", "max_total_num_tokens=105531, chunked_prefill_size=2048, max_prefill_tokens=16384,
        max_running_requests=2049, context_len=131072". The distill's config is Qwen2.5-Math-7B's: the qwen2.5-7b
        preset's shapes (28 layers, 4 KV heads of 128, untied 152,064-row vocabulary) with max_position_embeddings
        131072, as the preset has.
"""

import json

import pytest

from kvplan import parse_config
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.sglang import SGLANG_PROFILES, default_settings, gpu_capacity_mib, pool_bytes
from kvplan.units import GiB
from tests.test_engine_logs_2026e import PRESETS
from tests.test_engine_sglang import close, figures

# 28 layers x 4 KV heads x 128 x (K + V) x 2 B = 57,344 B a token (K alone 28,672)
QWEN7_CELL = 28 * 4 * 128 * 2 * 2


def _r1q7(gpu: str = "RTX-3090"):
    cfg = json.loads((PRESETS / "qwen2.5-7b.json").read_text())
    assert cfg["max_position_embeddings"] == 131_072 and cfg["vocab_size"] == 152_064
    spec = parse_config(cfg, "deepseek-r1-distill-qwen-7b")
    return plan(spec, get_gpu(gpu), EngineConfig(engine="sglang", sglang_version="0.4.0"), Layout(tp=1))


def test_r1q7_the_log_read_backwards():
    # 0.4.0 at TP 1 on a 24,576 MiB card: fraction 0.88, chunk 2048 (below 25,000 MiB), 8 decode graphs, as logged.
    # The pool rule on the log's own readings: rest = 8.37 - 22.76 x 0.12 = 5.6388 GiB = 6,054,615,398 B / 57,344 =
    # 105,584 tokens against the logged 105,531 (+0.05 %); 105,531 x 28,672 B = 2.82 GiB a side, the logged K size
    rtx3090 = get_gpu("RTX-3090")
    mib = gpu_capacity_mib(rtx3090.name, rtx3090.vendor, rtx3090.memory_bytes)[0]
    s = default_settings(SGLANG_PROFILES["0.4.0"], mib, "", 1)
    assert (mib, s.mem_fraction_static, s.chunked_prefill_size, s.cuda_graph_max_bs) == (24_576, 0.88, 2048, 8)
    rest = pool_bytes(int(22.76 * GiB), int((22.76 - 8.37) * GiB), 0.88)
    assert rest == 6_054_615_398 and rest // QWEN7_CELL == 105_584
    assert abs(rest // QWEN7_CELL - 105_531) <= 0.01 * 105_531
    assert round(105_531 * QWEN7_CELL / 2 / GiB, 2) == 2.82


def test_r1q7_distill_qwen_7b_rtx3090_load_figures():
    # mem usage (not printed by this wording, the two avail readings' difference): 22.76 - 8.37 = 14.39; kvplan 14.19
    # bf16 weights (7.62 B parameters) + 0.18 loading overhead = 14.37. Pool end: kvplan after - KV - ReqToTokenPool =
    # 8.81 - 6.03 - 1.00 (2050 rows x 131,072 int32) = 1.78 (logged 1.68). The envelope as logged
    p = _r1q7()
    f = figures(p.engine_log)
    assert p.ranks[0].kv_bytes_per_token == QWEN7_CELL == 57_344
    assert close(f["usage"] * GiB, 22.76 - 8.37) and f["usage"] == 14.37
    assert close(f["pool_end"] * GiB, 1.68) and f["pool_end"] == 1.78
    assert (f["running"], f["chunk"], f["context"]) == (2049, 2048, 131_072)


@pytest.mark.xfail(strict=True, reason=(
    "DeepSeek-R1-Distill-Qwen-7B on an RTX 3090 under Windows (WSL2 Docker), the 0.4.0 line, defaults: kvplan's free "
    "memory before the load is 23.18 GiB (23.56 usable - 0.38 CUDA context) against the logged 22.76 (-0.42), so "
    "after the load 8.81 vs 8.37 (+0.44), the pool 6.03 GiB / 112,969 tokens against 5.64 / 105,531 (+0.40 GiB, "
    "+7.0 %). The pool rule and the weights reproduce the log (the two tests above: +0.05 % tokens from its own "
    "readings, mem usage within 0.02): the 0.42 GiB is memory the card did not have free at start-up, consistent with "
    "the Windows host's share of a display card under WSL2 (the README's driver 560.76 is a Windows build); the log "
    "has no total or nvidia-smi table to size it, so it is not modelled"))
def test_r1q7_distill_qwen_7b_rtx3090_pool_from_the_flags():
    f = figures(_r1q7().engine_log)
    assert close(f["begin"] * GiB, 22.76) and close(f["after"] * GiB, 8.37)
    assert close(f["tokens"] * QWEN7_CELL, 105_531 * QWEN7_CELL / GiB) and abs(f["tokens"] - 105_531) <= 1055


def test_r1q7_the_xfails_numbers():
    f = figures(_r1q7().engine_log)
    assert (f["begin"], f["after"], f["tokens"], f["k"]) == (23.18, 8.81, 112_969, 3.02)
    assert round(112_969 / 105_531 - 1, 3) == 0.070
