"""Public SGLang start-up logs of 2026 H2 reproduced from the launch inputs alone (the fifth 2026 round), each figure
within max(1 %, 0.25 GiB) of the log ("GB" there is 2^30 B), or a strict xfail with the measured gap and why.

Pinned logs (none is pinned in another test file, ids and figures grepped 2026-12-02; the code corpus hides the
repository of the file, so its index id is given):
  QS19  Qwen/Qwen3-32B (bf16), one H100 80GB (GKE a3-highgpu-1g, gVisor sandbox), image lmsysorg/sglang:v0.5.19
        (kvplan's 0.5.18 line, "0.5.18 - 0.5.19"), --mem-fraction-static 0.90 --context-length 8192
        --enable-memory-saver --enable-weights-cpu-backup, CUDA graphs on: "Qwen/Qwen3-32B Snapshot & Restore Benchmark
        on SGLang (1xH100)" (code-corpus file 70494913886): "Load weight end. elapsed=100.34 s, type=Qwen3ForCausalLM,
        avail mem=17.40 GB, mem usage=61.07 GB."; "KV cache allocation (0.41s, 9.54 GB for 39,078 tokens)"; CUDA
        graphs "55.92s prefill costing 2.84 GB + 5.69s decode costing 0.13 GB".
  QW4R  Qwen3-4B (bf16, local copy of the base checkpoint), one H100 80GB HBM3, SGLang 0.5.18 (sglang-kernel
        0.4.6.post1+cu129), --context-length 32768 --mem-fraction-static 0.85 --random-seed 42 --enable-metrics: a course's
        RAG-workload best-practice report (code-corpus file 63400963934): "KV Cache is allocated. dtype: torch.bfloat16,
        #tokens: 430067, K size: 29.53 GB, V size: 29.53 GB", "max_total_num_tokens=430067, chunked_prefill_size=8192,
        max_prefill_tokens=16384". The config is Qwen3-4B's (36 layers, hidden 2560, 32 / 8 heads of 128, intermediate
        9728, tied) typed in over the qwen3-8b preset.
"""

import pytest

import json
from pathlib import Path

from kvplan import load_preset, parse_config
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.sglang import pool_bytes
from kvplan.units import GiB
from tests.test_engine_sglang import close, figures


# ----------------------------------------------------------------------------- QS19: Qwen3-32B, one H100, 0.5.19


def _qs19():
    # --enable-memory-saver / --enable-weights-cpu-backup only tag the allocations for release (kvplan has no term)
    return plan(load_preset("qwen3-32b"), get_gpu("H100-SXM"),
                EngineConfig(engine="sglang", sglang_version="0.5.18", mem_fraction_static=0.90, max_model_len=8192),
                Layout(tp=1))


def test_qs19_qwen3_32b_h100_load_and_pool_bytes():
    p = _qs19()
    f = figures(p.engine_log)
    # pre-load 78.45 GiB (the log: 17.40 + 61.07 = 78.47); weights 61.02 GiB bf16 + 0.18 = 61.20 (logged 61.07);
    # after 17.25 (17.40)
    assert close(f["begin"] * GiB, 17.40 + 61.07) and close(f["usage"] * GiB, 61.07) and close(f["after"] * GiB, 17.40)
    # 64 layers x 2 (K, V) x 8 KV heads x 128 x 2 B = 262,144 B a token; K + V 4.70 + 4.70 = 9.40 GiB (logged 9.54 for
    # K and V together: -0.14, inside the 0.25 GiB floor)
    assert p.ranks[0].kv_bytes_per_token == 64 * 2 * 8 * 128 * 2 == 262_144
    assert close(2 * f["k"] * GiB, 9.54) and f["context"] == 8192
    # from the log's own readings: (17.40 + 61.07) x 0.90 - 61.07 = 9.553 GiB / 262,144 B = 39,130 tokens (+0.13 %)
    got = pool_bytes(int((17.40 + 61.07) * GiB), int(61.07 * GiB), 0.90) // 262_144
    assert abs(got - 39_078) <= 0.002 * 39_078


@pytest.mark.xfail(strict=True, reason=(
    "QS19 '9.54 GB for 39,078 tokens': kvplan 38,505 (-1.47 %). The pool is small (10 % of 78 GiB minus 61 GiB of "
    "weights), so the load overhead decides it: kvplan's fitted 0.18 GiB above the weights' bytes (mean of four logs, "
    "0.12 - 0.28) against this log's 61.07 - 61.02 = 0.05 GiB; from the log's own load reading the pool is +0.13 % "
    "(test above). --enable-memory-saver routes the weights through torch_memory_saver's allocator rather than the "
    "caching allocator, the likely reason the overhead is smaller; one log does not fit a second constant"))
def test_qs19_tokens():
    f = figures(_qs19().engine_log)
    assert abs(f["tokens"] - 39_078) <= 0.01 * 39_078


# ----------------------------------------------------------------------------- QW4R: Qwen3-4B, one H100, 0.5.18


def test_qw4r_qwen3_4b_h100_pool_and_tokens():
    cfg = json.loads((Path(__file__).parent.parent / "kvplan" / "presets" / "qwen3-8b.json").read_text())
    cfg.update(hidden_size=2560, intermediate_size=9728, tie_word_embeddings=True)
    p = plan(parse_config(cfg, "qwen3-4b"), get_gpu("H100-SXM"),
             EngineConfig(engine="sglang", sglang_version="0.5.18", mem_fraction_static=0.85, max_model_len=32768),
             Layout(tp=1))
    f = figures(p.engine_log)
    # 36 layers x 8 KV heads x 128 x 2 B = 73,728 B of K a token (147,456 with V); weights 7.49 + 0.18 = 7.67 GiB;
    # rest = 78.45 x 0.85 - 7.67 = 59.01 GiB -> 429,698 tokens (logged 430,067: -0.09 %), K 29.51 GB (logged 29.53)
    assert p.ranks[0].kv_bytes_per_token == 2 * 36 * 8 * 128 * 2 == 147_456
    assert abs(f["tokens"] - 430_067) <= 0.01 * 430_067, f["tokens"]
    assert close(f["k"] * GiB, 29.53) and f["chunk"] == 8192 and f["context"] == 32768
