"""Public SGLang start-up logs of 2026 H2 reproduced from the launch inputs alone (the fifth 2026 round), each figure
within max(1 %, 0.25 GiB) of the log ("GB" there is 2^30 B), or a strict xfail with the measured gap and why.

Pinned logs (none is pinned in another test file, ids and figures grepped 2026-12-02; the code corpus hides the
repository of the file, so its index id is given). A Qwen3-32B H100 log of SGLang 0.5.19 found in this round (a GKE pod
snapshot benchmark, code-corpus file 70494913886: 61.07 GB, 39,078 tokens) is the run tests/test_engine_sglang_2026b.py
pins as Q32G, so it is not pinned again; its token count is 1.47 % off (38,505: kvplan's fitted 0.18 GiB load overhead
against this run's 0.05 GiB under --enable-memory-saver), inside the 0.25 GiB floor for the pool that Q32G asserts.

  QW4R  Qwen3-4B (bf16, local copy of the base checkpoint), one H100 80GB HBM3, SGLang 0.5.18 (sglang-kernel
        0.4.6.post1+cu129), --context-length 32768 --mem-fraction-static 0.85 --random-seed 42 --enable-metrics: a
        course's RAG-workload best-practice report (code-corpus file 63400963934): "KV Cache is allocated. dtype:
        torch.bfloat16, #tokens: 430067, K size: 29.53 GB, V size: 29.53 GB", "max_total_num_tokens=430067,
        chunked_prefill_size=8192, max_prefill_tokens=16384". The config is Qwen3-4B's (36 layers, hidden 2560, 32 / 8
        heads of 128, intermediate 9728, tied) typed in over the qwen3-8b preset.
"""

import json
from pathlib import Path

from kvplan import parse_config
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.units import GiB
from tests.test_engine_sglang import close, figures


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
