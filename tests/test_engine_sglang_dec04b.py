"""Public SGLang start-up logs of the 2026-12-04 round (second batch), reproduced from the launch inputs, each figure
within max(1 %, 0.25 GiB) of the log ("GB" there is 2^30 B), or a strict xfail with the measured gap and why.

Pinned logs (none is pinned in another test file: the index file id and the logged figures, with and without commas,
grepped 2026-12-04; the code corpus hides the repository of a file, so its index id is given):

  Q30B  Qwen/Qwen3-30B-A3B (Qwen3MoeForCausalLM, bf16), --tp-size 8 --enable-triton-kernel-moe, no memory flags:
        sgl-project/sglang PR #8258 "Support triton kernels v3.4.0 for fused_moe" (2025-07-22, the 0.4.9.x months:
        kvplan's 0.4.8 line, 0.4.7.post1 - 0.5.2), its test log as quoted in a PR digest (code-corpus file
        71559349571). Logged: "Capture cuda graph bs [1, 2, 4, 8, 16, 24, ..., 496, 512]", "Capture cuda graph end.
        ... mem usage=7.36 GB. avail mem=23.00 GB.", "max_total_num_tokens=6004242, chunked_prefill_size=16384,
        max_prefill_tokens=16384, max_running_requests=4096, context_len=40960". The card is not named: B200 is
        inferred, because (1) the logged chunk 16384 and the decode graphs up to 512 are that line's > 160 GiB tier
        (an H200 gets 8192 / 256), and (2) 6,004,242 tokens x 24,576 B = 137.4 GiB of KV on each rank, more than an
        H200 can free after its 7.2 GiB weight shard (kvplan H200: 5,018,485 tokens); a B300 would hold 9.9 M.
  H05N  Qwen/Qwen2.5-0.5B-Instruct (Qwen2ForCausalLM, bf16), one H100 NVL, sglang 0.5.10.post1 (the README's
        check_environment output: "GPU 0,...,7: NVIDIA H100 NVL", "sglang: 0.5.10.post1"; kvplan's 0.5.10 line),
        server_args mem_fraction_static=0.86 (the default: logged as chosen), chunked_prefill_size=8192,
        disable_cuda_graph=True, disable_piecewise_cuda_graph=True, tp_size=1, context_length=None: a "sglang-play"
        README (code-corpus file 55068335887). Logged: "Load weight begin. avail mem=36.54 GB", "Load weight end.
        elapsed=0.41 s, type=Qwen2ForCausalLM, avail mem=35.57 GB, mem usage=0.98 GB.", "KV Cache is allocated.
        #tokens: 2658165, K size: 15.21 GB, V size: 15.21 GB", "Memory pool end. avail mem=4.55 GB",
        "max_total_num_tokens=2658165, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096,
        context_len=32768". Only 36.54 of the card's 93 GiB were free before the load: something else held ~56 GiB
        of that GPU (the README does not say what), so the pool from the flags is a strict xfail.
  G52B  nvidia/GLM-5.2-NVFP4 (GlmMoeDsaForCausalLM, NVFP4 experts, DSA), ``sglang serve --trust-remote-code
        --model-path nvidia/GLM-5.2-NVFP4 --tp 4 --quantization modelopt_fp4 --speculative-algorithm EAGLE
        --speculative-num-steps 5 --speculative-eagle-topk 1 --speculative-num-draft-tokens 6`` (no memory flags):
        sgl-project/sglang PR #30310 "Increase the KV cache pool when using indexShare by 15%" (2026-07-07, merged),
        which stops sizing the DSA indexer on the layers that reuse another layer's top-k: "The KV cache pool go from
        2,430,528 to 2,813,952 tokens". It was reverted the next day (PR #30472: an illegal memory access); the
        own-top-k cell is what kvplan reads in the 0.5.18+ wheels (the after run is planned there), and before it is
        main of early July 2026, between the 0.5.17 and 0.5.18 wheels.
        The card is not named: B300 is inferred (GB300 plans the same), as only a ~288 GB card holds ~125 GiB of KV a
        rank beside a 106.5 GiB weight shard: kvplan's B200 plans 831,872 tokens, GB200 958,144.
  D32R  deepseek-ai/DeepSeek-R1-Distill-Qwen-32B (Qwen2ForCausalLM, bf16), 4 x RTX 3090 without NVLink, sglang
        0.4.2.post1 (what pip installed, as the notes record: kvplan's 0.4.0 line), ``--tp 4 --enable-p2p-check``,
        no memory flags: a "deepseek" local-deployment notebook (code-corpus file 19051355403; the same text in
        19161898403). Logged: "max_total_num_tokens=67772, chunked_prefill_size=2048, max_prefill_tokens=16384,
        max_running_requests=2049, context_len=131072" and "all 4 gpu each got 22.86GB/24GB". The notes name the
        box ("4x3090, no NVLink so --enable-p2p-check"); SGLang turns its custom all-reduce off on more than two
        PCIe-only GPUs (the QWQ log of tests/test_engine_sglang.py prints it), so the plans say so
        (disable_custom_all_reduce; kvplan's RTX 3090 entry otherwise assumes the NVLink bridge). The distill has
        Qwen2.5-32B's shapes: QWQ_CONFIG of tests/test_engine_sglang.py (64 layers, 8 KV heads of 128, 131072
        positions, untied 152,064-row vocabulary).
"""

import pytest

from kvplan import load_preset, parse_config
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.sglang import SGLANG_PROFILES, default_settings, gpu_capacity_mib, pool_bytes
from kvplan.units import GiB
from tests.test_engine_sglang import QWQ_CONFIG, close, figures

# ----------------------------------------------------------------------------- Q30B: Qwen3-30B-A3B, 8 x B200, 0.4.8

# 48 layers x max(1, 4 KV heads // TP 8) x 128 x (K + V) x 2 B = 24,576 B a token on each rank
Q30B_CELL = 48 * 1 * 128 * 2 * 2


def _q30b(gpu: str = "B200"):
    return plan(load_preset("qwen3-30b-a3b"), get_gpu(gpu), EngineConfig(engine="sglang", sglang_version="0.4.8"),
                Layout(tp=8))


def _mib(name: str) -> int:
    g = get_gpu(name)
    return gpu_capacity_mib(g.name, g.vendor, g.memory_bytes)[0]


def test_q30b_the_defaults_name_the_card():
    # 0.4.8 line, TP 8: a card above 160 GiB reserves 32 GiB and gets chunk 16384 and decode graphs to 512 (the log's
    # chunked_prefill_size=16384 and its capture list ending at 512); an H200 (143,771 MiB) gets 8192 / 256
    b200 = default_settings(SGLANG_PROFILES["0.4.8"], _mib("B200"), "", 8)
    h200 = default_settings(SGLANG_PROFILES["0.4.8"], _mib("H200"), "", 8)
    assert (b200.chunked_prefill_size, b200.cuda_graph_max_bs) == (16384, 512)
    assert (h200.chunked_prefill_size, h200.cuda_graph_max_bs) == (8192, 256)
    # (183,359 - 32,768) / 183,359 = 0.82129 -> 0.821
    assert b200.reserved_mib == 32768 and b200.mem_fraction_static == 0.821
    # the logged pool is 6,004,242 x 24,576 B = 137.43 GiB a rank: past what an H200 plans (5,018,485 tokens)
    assert round(6_004_242 * Q30B_CELL / GiB, 2) == 137.43
    assert figures(_q30b("H200").engine_log)["tokens"] == 5_018_485


def test_q30b_qwen3_30b_a3b_b200_tp8_sglang_0_4_8():
    # kvplan (B200): free before the load 175.34 GiB; mem usage 7.15 GiB bf16 shard + 0.18 loading overhead = 7.33;
    # after 168.01; rest = 168.01 - 175.34 x 0.179 = 136.62 GiB = 5,969,064 tokens x 24,576 B (logged 6,004,242:
    # -0.59 %, 0.81 GiB of a 137 GiB pool, inside 1 %)
    p = _q30b()
    f = figures(p.engine_log)
    assert p.ranks[0].kv_bytes_per_token == Q30B_CELL == 24_576
    assert f["tokens"] == 5_969_064 and abs(f["tokens"] - 6_004_242) <= 0.01 * 6_004_242
    assert close(f["tokens"] * Q30B_CELL, 6_004_242 * Q30B_CELL / GiB)
    # K size (not in the quoted lines): 6,004,242 x 12,288 B = 68.71 GiB logged-side, kvplan 68.31
    assert close(f["k"] * GiB, 6_004_242 * Q30B_CELL / 2 / GiB)
    # ReqToTokenPool rows: clamp(int(6,004,242 / 40,960 x 512) = 75,053, 2048, 4096) = 4096, as logged
    assert (f["running"], f["chunk"], f["context"]) == (4096, 16384, 40960)


# ----------------------------------------------------------------------------- H05N: Qwen2.5-0.5B, H100 NVL, 0.5.10

Q05_CONFIG = {  # Qwen/Qwen2.5-0.5B-Instruct (reconstructed: the public config's fields; tied embeddings)
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864,
    "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936,
    "max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": True,
    "torch_dtype": "bfloat16", "hidden_act": "silu", "use_sliding_window": False, "sliding_window": 32768,
    "max_window_layers": 21}

# 24 layers x 2 KV heads x 64 x (K + V) x 2 B = 12,288 B a token
Q05_CELL = 24 * 2 * 64 * 2 * 2


def _tokens_from_readings(begin_gib: float, after_gib: float, fraction: float, cell: int, rest: int) -> int:
    """The pool rule on a log's own avail-mem readings: (after - begin x (1 - fraction)) // cell, its rest asserted."""
    got = pool_bytes(int(begin_gib * GiB), int((begin_gib - after_gib) * GiB), fraction)
    assert got == rest
    return got // cell


def _h05n():
    return plan(parse_config(Q05_CONFIG, "qwen2.5-0.5b-instruct"), get_gpu("H100-NVL"),
                EngineConfig(engine="sglang", sglang_version="0.5.10", enforce_eager=True,
                             piecewise_cuda_graph="disable"), Layout(tp=1))


def test_h05n_the_default_fraction_and_the_log_read_backwards():
    # 0.5.10, H100 NVL (95,830 MiB), TP 1, decode graphs off and --disable-piecewise-cuda-graph: reserved 512 +
    # 8192 x 1.5 + 256 x 2 + 1 / 8 x 1024 = 13,440 MiB -> (95,830 - 13,440) / 95,830 = 0.8597 -> 0.86, as logged
    s = default_settings(SGLANG_PROFILES["0.5.10"], _mib("H100-NVL"), "", 1, eager=True, piecewise="disable")
    assert (s.reserved_mib, s.mem_fraction_static, s.chunked_prefill_size) == (13440, 0.86, 8192)
    # the pool rule on the log's own readings: rest = 35.57 - 36.54 x 0.14 = 30.4544 GiB = 32,700,163,005 B
    # / 12,288 = 2,661,146 tokens against the logged 2,658,165 (+0.11 %); 2,658,165 x 6,144 B = 15.21 GiB a side
    tokens = _tokens_from_readings(36.54, 35.57, 0.86, Q05_CELL, 32_700_163_005)
    assert tokens == 2_661_146 and abs(tokens - 2_658_165) <= 0.01 * 2_658_165
    assert round(2_658_165 * Q05_CELL / 2 / GiB, 2) == 15.21


def test_h05n_qwen2_5_0_5b_h100_nvl_load_and_limits():
    # mem usage: 0.92 GiB of bf16 weights (494 M parameters, the 151,936 x 896 embedding tied) + 0.18 loading
    # overhead = 1.10 (logged 0.98: +0.12, inside 0.25 GiB); the limits as logged
    p = _h05n()
    f = figures(p.engine_log)
    assert p.ranks[0].kv_bytes_per_token == Q05_CELL == 12_288
    assert f["usage"] == 1.10 and close(f["usage"] * GiB, 0.98)
    assert (f["running"], f["chunk"], f["context"]) == (4096, 8192, 32768)


MISS_H05N = (  # what the strict xfail below measured
    "Qwen2.5-0.5B-Instruct on an H100 NVL, the 0.5.10 line, default fraction 0.86: kvplan frees 92.26 GiB before "
    "the load (an idle card: its total less kvplan's CUDA-context figure), the log 36.54, so kvplan's pool is "
    "6,837,011 tokens / 78.24 GiB against 2,658,165 / 30.42 (+157 %) and its pool end 12.42 against 4.55. The rule "
    "reproduces the log from its own readings (+0.11 %, the test above) and the weights within 0.12 GiB: ~56 GiB of "
    "that GPU was held by something else before SGLang started (on a shared eight-GPU node; the README does not say "
    "what), which no launch flag describes, so it is not modelled")


@pytest.mark.xfail(strict=True, reason=MISS_H05N)
def test_h05n_qwen2_5_0_5b_h100_nvl_pool_from_the_flags():
    f = figures(_h05n().engine_log)
    assert close(f["begin"] * GiB, 36.54) and abs(f["tokens"] - 2_658_165) <= 0.01 * 2_658_165
    assert close(f["pool_end"] * GiB, 4.55)


def test_h05n_the_xfails_numbers():
    f = figures(_h05n().engine_log)
    assert (f["begin"], f["after"], f["tokens"], f["k"], f["pool_end"]) == (92.26, 91.16, 6_837_011, 39.12, 12.42)
    assert round(6_837_011 / 2_658_165 - 1, 2) == 1.57


# ----------------------------------------------------------------------------- G52B: GLM-5.2-NVFP4, 4 x B300, MTP


def _g52b(version: str, gpu: str = "B300"):
    return plan(load_preset("glm-5.2-nvfp4"), get_gpu(gpu),
                EngineConfig(engine="sglang", sglang_version=version, speculative_method="mtp",
                             num_speculative_tokens=5), Layout(tp=4))


def test_g52b_the_card_and_the_cells():
    # B200 / GB200 hold far less than the logged 2.8 M tokens; B300 and GB300 (274,114 MiB) plan the same
    assert figures(_g52b("0.5.18", "B200").engine_log)["tokens"] == 831_872
    assert figures(_g52b("0.5.18", "GB200").engine_log)["tokens"] == 958_144
    assert figures(_g52b("0.5.18", "GB300").engine_log)["tokens"] == figures(_g52b("0.5.18").engine_log)["tokens"]
    # the profiled cell, fp8 KV (SGLang's default for DSA on SM 10), 78 layers + the MTP layer: 0.5.17 counts the
    # indexer key (128 + 4 B) on all 79: 79 x (576 + 132) = 55,932 B; 0.5.18 only on the 22 that run their own
    # top-k: 79 x 576 + 22 x 132 = 48,408 B
    assert _g52b("0.5.17").ranks[0].kv_bytes_per_token == 79 * (576 + 132) == 55_932
    assert _g52b("0.5.18").ranks[0].kv_bytes_per_token == 79 * 576 + 22 * 132 == 48_408


def test_g52b_glm52_nvfp4_b300_tp4_mtp_after_the_fix():
    # 0.5.18 (the fix): fraction (274,114 - 28,160 reserved, 1536 of it the MLA prefill graphs) / 274,114 = 0.897;
    # rest / 48,408 B, to the 64-token page: 2,809,600 tokens against the logged 2,813,952 (-0.15 %)
    f = figures(_g52b("0.5.18").engine_log)
    assert f["tokens"] == 2_809_600 and abs(f["tokens"] - 2_813_952) <= 0.01 * 2_813_952
    assert f["usage"] == 106.50 and f["chunk"] == 16384


def test_g52b_before_the_fix_read_from_the_after_plan():
    # before the fix, read as a build with 0.5.18's reserve (inferred): the same rest over the all-layer cell. The rest
    # >= 2,809,600 x 48,408 = 136,007,116,800 B; / 55,932 = 2,431,651 -> 2,431,616 on the page, against the logged
    # 2,430,528 (+0.04 %)
    rest = 2_809_600 * 48_408
    assert rest == 136_007_116_800 and rest // 55_932 // 64 * 64 == 2_431_616
    assert abs(2_431_616 - 2_430_528) <= 0.01 * 2_430_528


MISS_G52B = (  # what the strict xfail below measured
    "GLM-5.2-NVFP4 on 4 x B300 (inferred), MTP, before sgl-project/sglang PR #30310: kvplan's 0.5.17 line plans "
    "2,462,272 tokens against the logged 2,430,528 (+1.31 %). That line reserves 26,624 MiB (fraction 0.903); the "
    "pre-fix build was main of early July 2026; the log fits a build that already held 0.5.18's 1536 MiB of MLA "
    "prefill graphs (fraction 0.897): that reserve with the all-layer indexer cell gives 2,431,616 (+0.04 %, the "
    "test above; inferred from the numbers, the PR does not say). "
    "kvplan has no profile for a main build between releases, so the 0.5.17 line stays as read")


@pytest.mark.xfail(strict=True, reason=MISS_G52B)
def test_g52b_glm52_nvfp4_b300_tp4_mtp_before_the_fix_on_the_0_5_17_line():
    f = figures(_g52b("0.5.17").engine_log)
    assert abs(f["tokens"] - 2_430_528) <= 0.01 * 2_430_528


def test_g52b_the_xfails_numbers():
    f = figures(_g52b("0.5.17").engine_log)
    assert f["tokens"] == 2_462_272 and round(2_462_272 / 2_430_528 - 1, 4) == 0.0131


# ----------------------------------------------------------------------------- D32R: R1-Distill-Qwen-32B, 4 x RTX 3090

# 64 layers x 2 of 8 KV heads (TP 4) x 128 x (K + V) x 2 B = 65,536 B a token on each rank
D32R_CELL = 64 * 2 * 128 * 2 * 2


def _d32r(disable_custom_all_reduce: bool = True):
    return plan(parse_config(QWQ_CONFIG, "deepseek-r1-distill-qwen-32b"), get_gpu("RTX-3090"),
                EngineConfig(engine="sglang", sglang_version="0.4.0",
                             disable_custom_all_reduce=disable_custom_all_reduce), Layout(tp=4))


def test_d32r_distill_qwen_32b_4x_rtx3090_pool_size_and_limits():
    # 0.4.0 at TP 4: fraction 0.85, chunk 2048 (a 24 GiB card). kvplan: free before the load 23.56 - 0.40 (TP 4
    # over PCIe, no custom all-reduce) = 23.16 GiB; mem usage 15.26 GiB bf16 shard + 0.18 = 15.44; after 7.72; rest
    # 7.72 - 23.16 x 0.15 = 4.25 GiB = 69,602 tokens x 65,536 B. The logged 67,772 x 65,536 B = 4.14 GiB: the pool
    # is 0.11 GiB over (inside 0.25 GiB); the token count itself is the xfail below
    p = _d32r()
    f = figures(p.engine_log)
    assert p.ranks[0].kv_bytes_per_token == D32R_CELL == 65_536
    assert (f["begin"], f["usage"], f["after"]) == (23.16, 15.44, 7.72)
    assert close(f["tokens"] * D32R_CELL, 67_772 * D32R_CELL / GiB)
    assert (f["running"], f["chunk"], f["context"]) == (2049, 2048, 131072)
    # the xfail's numbers: 69,602 tokens, +2.7 %, (69,602 - 67,772) x 65,536 B = 0.11 GiB
    assert f["tokens"] == 69_602 and round(69_602 / 67_772 - 1, 3) == 0.027
    assert round((69_602 - 67_772) * D32R_CELL / GiB, 2) == 0.11


def test_d32r_the_nvlink_bridge_assumption_would_miss_by_more():
    # with kvplan's NVLink-bridge reading of the RTX 3090 (custom all-reduce on: 1.89 GiB of context at TP 4) the
    # pool would be 48,852 tokens, 28 % under the log: the platform's own switch-off is the input that matters
    assert figures(_d32r(False).engine_log)["tokens"] == 48_852


MISS_D32R = (  # what the strict xfail below measured
    "DeepSeek-R1-Distill-Qwen-32B on 4 x RTX 3090 (PCIe, no NVLink), the 0.4.0 line, defaults: kvplan plans "
    "69,602 tokens against the logged 67,772 (+2.7 %, 0.11 GiB of a 4.14 GiB pool: inside the memory tolerance, "
    "outside 1 % in tokens). The notes quote only the summary line, no avail-mem readings, so where the 0.11 GiB "
    "went before the load (a busier card, another context size) cannot be told; not fixed")


@pytest.mark.xfail(strict=True, reason=MISS_D32R)
def test_d32r_distill_qwen_32b_4x_rtx3090_tokens():
    assert abs(figures(_d32r().engine_log)["tokens"] - 67_772) <= 0.01 * 67_772
