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

  G4SP  google/gemma-4-26B-A4B-it (bf16, revision 4d7ae4984b7db7de8f8457170b3f1a419ee76d52), one NVIDIA GB10 (DGX
        Spark, 124,610 MiB unified memory), SGLang 0.0.0.dev1+g5f55db35e (image lmsysorg/sglang:dev-qwen38-27b-dflash2,
        a build past 0.5.23; kvplan's 0.5.21 line stands in), the report's recipe (--context-length 32768
        --mem-fraction-static 0.75 --max-running-requests 4 --attention-backend triton): a DGX Spark qualification report
        (code-corpus file 67060834076): "Load weight end. ... type=Gemma4ForConditionalGeneration, avail mem=66.05 GB,
        mem usage=47.23 GB.", "SWAKVPool mem usage: 36.69 GB, swa size: 171008, full size: 213761". Its E4B sibling
        (code-corpus file 66975556316, google/gemma-4-E4B-it, same build): "swa size: 798276, full size: 997846" (no
        E4B preset: only the 0.8 split is pinned). GB10 is no kvplan GPU (unified memory: SGLang's "avail mem" is the
        host's free memory: kvplan's pre-load 120.95 GiB for 124,610 MiB against the logged 66.05 + 47.23 = 113.28),
        so the pool's bytes are priced from the logged full size, and the weights from a plan on an RTX PRO 6000 (they
        do not depend on the GPU). The pool is not pinned: 66.05 - 113.28 x 0.25 = 37.73 GiB of rest against 36.69
        logged (SGLang re-reads the free memory when it profiles, which unified memory moves).

  QW36A Qwen/Qwen3.6-27B (bf16; its config byte-identical to Qwen3.8-27B's but transformers_version, the qwen3.5-27b
        preset's shapes: 64 layers, 3 linear-attention to 1 full, head_dim 256, intermediate 17408), one A100 80GB
        PCIe at TP 1, lmsysorg/sglang v0.5.17-cu130 (digest sha256:16aba892...), EAGLE on the MTP head
        (--speculative-num-steps 5 --speculative-num-draft-tokens 6): a Qwen3.6 -> Qwen3.8 swap note of 2026-08-15
        (code-corpus file 68576807532): "Load weight end. type=Qwen3_5ForConditionalGeneration  mem usage=51.05 GB",
        "Load weight end. type=Qwen3_5ForCausalLMMTP  mem usage=5.53 GB", max_total_num_tokens 171008, 43 mamba
        slots. Pinned: the target's weights; the run's pool is not (its fraction and context are not given, and
        kvplan refuses SGLang speculative decoding on a hybrid, naming the field); its draft's 5.53 GB and 2.11 GB
        intermediate SSM cache are pinned by hand in tests/test_sglang_qwen_mtp.py.

  What is pinned (V4PH): the pre-load free memory (kvplan's "Load weight begin"), which with the logged post-load memory
  gives SGLang's refusal threshold and both available_bytes figures through kvplan.sglang.pool_bytes. What misses: the
  weights. kvplan loads 101.22 GiB a rank (the checkpoint's 849,783,277,510 B / 8 = 98.93 GiB plus its load extras);
  the old image logged 125.65 (+24.43 GiB: not explained by the FP4 experts' Marlin repack, whose MXFP4 weights stay
  4-bit in layers/quantization/mxfp4_marlin_moe.py, nor by an FP8 dequant of the experts, SGLANG_DSV4_FP4_DEQUANT,
  which would add ~0.5 B a parameter, ~90 GiB a rank; the image's build is not public), the new one ~103-104 (kvplan
  1.8 - 2.8 GiB low, outside the 1.03 GiB bound). One layout that comes near the old figure, not confirmed: every rank
  holding the whole 25.82 GiB of non-expert weights (849,783,277,510 - 1,547,396,186,112 expert parameters x 17 / 32
  B) instead of an eighth, +22.60 GiB -> 123.82 (-1.5 %). Full tokens are not pinned: "full_token -> 109312" names no
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


# ----------------------------------------------------------------------------- G4SP: Gemma 4 26B-A4B, GB10, dev build


def test_g4sp_gemma4_swa_pool_bytes_and_split():
    from kvplan.plan import stage_distinct
    from kvplan.sglang import hybrid_swa_cell, swa_tokens
    spec = load_preset("gemma-4-26b-a4b")
    cell, full_b, swa_b = hybrid_swa_cell("0.5.21", spec.model_type, stage_distinct(spec, 1, 0), 1, 2)
    # bf16: 5 full layers x 4,096 B + 0.8 x 25 sliding layers x 8,192 B = 20,480 + 163,840 = 184,320 B a full token;
    # 213,761 x 184,320 = 39,400,427,520 B = 36.694 GiB ("SWAKVPool mem usage: 36.69 GB")
    assert (cell, full_b, swa_b) == (184_320, 20_480, 204_800)
    assert round(213_761 * cell / GiB, 2) == 36.69
    # and the pools' own bytes: 213,761 x 20,480 + 171,008 x 204,800 = 39,400,263,680 B = 36.69 GiB
    assert round((213_761 * full_b + 171_008 * swa_b) / GiB, 2) == 36.69
    # sliding = int(full x 0.8): 213,761 -> 171,008; the E4B run's 997,846 -> 798,276
    assert (swa_tokens(213_761, None), swa_tokens(997_846, None)) == (171_008, 798_276)


@pytest.mark.xfail(strict=True, reason="Gemma 4 26B-A4B bf16 weights on GB10 (code-corpus file 67060834076): logged "
                   "47.23 GiB, kvplan 48.25 (+1.02 GiB, +2.2 %, outside the 0.47 GiB bound; 48.07 checkpoint incl. the "
                   "1.07 GiB vision tower, which models/gemma4_mm.py of 0.5.23 builds on PP rank 0, + 0.18 load "
                   "overhead); suspected: GB10's unified memory (SGLang's avail mem is the host's free memory, so page "
                   "cache evicted during the load shrinks the logged usage)")
def test_g4sp_gemma4_weights_as_logged():
    p = plan(load_preset("gemma-4-26b-a4b"), get_gpu("RTX-PRO-6000"),
             EngineConfig(engine="sglang", sglang_version="0.5.21"), Layout(tp=1))
    assert close(figures(p.engine_log)["usage"] * GiB, 47.23)


# ----------------------------------------------------------------------------- QW36A: Qwen3.6-27B, A100, 0.5.17


def test_qw36a_qwen3_6_27b_weights_and_mtp_draft():
    gpu, spec = get_gpu("A100-80GB-PCIe"), load_preset("qwen3.5-27b")
    p = plan(spec, gpu, EngineConfig(engine="sglang", sglang_version="0.5.17"), Layout(tp=1))
    # the target's load (MTP layers out, vision tower in): kvplan 51.14 GiB (logged 51.05: +0.18 %)
    assert close(figures(p.engine_log)["usage"] * GiB, 51.05)
    # the run's EAGLE-on-MTP (planned since 2026-12-03; its pool: tests/test_sglang_qwen_mtp.py): the target's line
    # unchanged, the draft's "Load weight end. type=Qwen3_5ForCausalLMMTP ... mem usage=5.53 GB" (849,398,784 B of
    # mtp.* layer + 5,085,593,600 B of its own embed_tokens / lm_head = 5.527 GiB)
    q = plan(spec, gpu, EngineConfig(engine="sglang", sglang_version="0.5.17", speculative_method="mtp",
                                     num_speculative_tokens=5), Layout(tp=1))
    assert close(figures(q.engine_log)["usage"] * GiB, 51.05)
    assert any(line.startswith("Load weight end. type=Qwen3_5ForCausalLMMTP") and "mem usage=5.53 GB" in line
               for line in q.engine_log)
