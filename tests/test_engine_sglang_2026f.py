"""Public SGLang start-up logs of 2026 H2 reproduced from the launch inputs alone (the sixth 2026 round), each figure
within max(1 %, 0.25 GiB) of the log ("GB" there is 2^30 B), or a strict xfail with the measured gap and why.

Pinned logs (none is pinned in another test file, ids grepped 2026-12-02):

  V4PH  deepseek-ai/DeepSeek-V4-Pro (the FP4-expert / FP8 release, "quant=fp8, fmt=e4m3"), 8 x H200 (143,771 MiB),
        container lmsysorg/sglang:deepseek-v4-hopper (an unversioned image; kvplan's default line 0.5.21 stands in),
        SemiAnalysisAI/InferenceX issue #2128 (2026-07-09, closed 2026-09-09), launched by
        benchmarks/single_node/fixed_seq_len/dsv4_fp8_h200_sglang.sh (InferenceX commit
        8eec0d4ed58b1a7ab659bc8b4038ffddf3452ea2): --tp 8 --moe-runner-backend marlin --chunked-prefill-size 4096
        --disable-radix-cache --mem-fraction-static 0.88 --max-running-requests max(CONC x 3 / 2, 8) (8 at CONC 1).
        Logged: "Load weight end. quant=fp8, fmt=e4m3, avail mem=12.25 GB, mem usage=125.65 GB."; at 0.88 SGLang
        refuses ("minimum viable = 1 - available/pre = 0.9113", 0.9335 with the MTP draft's 3.07 GB); the proposed
        0.94 gives "KV pool available_bytes -4.31 GB -> +3.97 GB". The closing comment (2026-09-09): a newer image of
        the same tag (sha256:1bf5d508...) loads "~103-104 GB/GPU" and starts at 0.88.

  What is pinned: the pre-load free memory (kvplan's "Load weight begin"), which with the logged post-load memory
  gives SGLang's refusal threshold and both available_bytes figures through kvplan.sglang.pool_bytes. What misses: the
  weights. kvplan loads 101.22 GiB a rank (the checkpoint's 849,783,277,510 B / 8 = 98.93 GiB plus its load extras);
  the old image logged 125.65 (+24.43 GiB: not explained by the FP4 experts' Marlin repack, whose MXFP4 weights stay
  4-bit in layers/quantization/mxfp4_marlin_moe.py, nor by an FP8 dequant of the experts, SGLANG_DSV4_FP4_DEQUANT,
  which would add ~0.5 B a parameter, ~90 GiB a rank; the image's build is not public), the new one ~103-104 (kvplan
  1.8 - 2.8 GiB low, outside the 1.03 GiB bound). Full tokens are not pinned: "full_token -> 109312" names no
  CONC / MTP / image of its run.
"""

import pytest

from kvplan import load_preset
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.sglang import pool_bytes
from kvplan.units import GiB
from tests.test_engine_sglang import close, figures


# ----------------------------------------------------------------------------- V4PH: DeepSeek-V4-Pro, 8 x H200


def _v4ph(fraction: float = 0.88):
    return plan(load_preset("deepseek-v4-pro"), get_gpu("H200-SXM"),
                EngineConfig(engine="sglang", sglang_version="0.5.21", mem_fraction_static=fraction, max_num_seqs=8,
                             max_num_batched_tokens=4096, enable_prefix_caching=False), Layout(tp=8))


def _pre_load() -> float:
    return figures(_v4ph().engine_log)["begin"]


def test_v4ph_pre_load_and_refusal_threshold():
    # the log's pre-load free memory is post + usage = 12.25 + 125.65 = 137.90 GiB; kvplan's 138.37 (-0.34 %)
    pre = _pre_load()
    assert close(pre * GiB, 12.25 + 125.65), pre
    # SGLang's minimum viable fraction 1 - post / pre: 1 - 12.25 / 138.37 = 0.91147 (logged 0.9113); with the MTP
    # draft's 3.07 GiB: 1 - 9.18 / 138.37 = 0.93366 (logged 0.9335)
    assert abs((1 - 12.25 / pre) - 0.9113) <= 0.0005
    assert abs((1 - (12.25 - 3.07) / pre) - 0.9335) <= 0.0005


def test_v4ph_available_bytes_at_0_88_and_0_94():
    # available = post - pre x (1 - f): 12.25 - 138.37 x 0.12 = -4.35 GiB (logged -4.31); x 0.06: +3.95 (logged +3.97)
    pre = int(_pre_load() * GiB)
    post_usage = pre - int(12.25 * GiB)
    assert abs(pool_bytes(pre, post_usage, 0.88) / GiB - (-4.31)) <= 0.25
    assert abs(pool_bytes(pre, post_usage, 0.94) / GiB - 3.97) <= 0.25


@pytest.mark.xfail(strict=True, reason="DeepSeek-V4-Pro weights on the deepseek-v4-hopper image (InferenceX#2128): "
                   "logged 125.65 GiB a rank (old image), ~103-104 (new image); kvplan 101.22 (849,783,277,510 B / 8 = "
                   "98.93 GiB + load extras): the image's extra 24.4 GiB (old) / 1.8 - 2.8 GiB (new) is not modelled")
def test_v4ph_weights_as_logged():
    f = figures(_v4ph().engine_log)
    assert close(f["usage"] * GiB, 103.5), f["usage"]


def test_v4ph_kvplan_weights_and_pool_now():
    # what kvplan says today (so a change shows): 101.22 GiB loaded, so 0.88 leaves a pool (the new image's outcome)
    p = _v4ph()
    f = figures(p.engine_log)
    assert abs(f["usage"] - 101.22) <= 0.02 and p.ranks[0].kv_pool_bytes > 0
