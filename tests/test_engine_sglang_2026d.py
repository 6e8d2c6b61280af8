"""Public SGLang start-up logs of 2026 (Gemma 4's hybrid sliding-window pool, Qwen3-14B on H100), reproduced from the
launch inputs alone, each figure within max(1 %, 0.25 GiB) of the log ("GB" there is 2^30 B), or a strict xfail with
the measured gap and why.

Pinned logs (none is pinned in another test file; the code corpus hides the repository of some files: their index id
is given):
  G4W32 Gemma 4 26B-A4B NVFP4 ("gemma4nv"), one GPU, an SGLang build of 2026-10 (0.5.2x), --kv-cache-dtype fp8_e4m3,
        auto mem_fraction_static 0.718: "W32 gap diagnosis (build-server-3, 2026-10-03)" (code-corpus file
        70350793512): "Sliding pool: 29,664 tokens", "Full pool: 37,081 tokens", "SWAKVPool mem usage: 3.18 GB",
        "max_total_num_tokens=37081"; with --mem-fraction-static 0.80: "66,235 / 52,988" (full / sliding). Its per-token
        notes: sliding 25 layers x 8 heads x 256, full 5 layers x 2 heads x 512 (the gemma-4-26b-a4b preset's shapes).
  G4CFG "SGLang overnight ladder diagnosis" (code-corpus file 54551923908, 2026-06-12, an SGLang source image of Gemma
        4): the pool configurator's own numbers, "full_layers=5 swa_layers=25 full_per_token_bytes=4096
        swa_per_token_bytes=8192 swa_full_tokens_ratio=0.8 cell_size_bytes=184320.0" (26B-A4B, bf16) and "full_layers=10
        swa_layers=50 full_per_token_bytes=8192 swa_per_token_bytes=16384 ... cell_size_bytes=737280.0" (31B); the
        rows then fail (negative tokens: the weights did not leave room), so only the cells are pinned.
  LM14  Qwen/Qwen3-14B, one H100 80GB, pip sglang of 2026-01 (server_args hold enable_lmcache, kt_*, dllm_algorithm,
        mamba_track_interval: the 0.5.7 wheel's fields), no memory flags, --enable-lmcache: LMCache/LMCache#2400
        (2026-01-13 / 14): server_args mem_fraction_static=0.835, chunked_prefill_size=8192, cuda_graph_max_bs=256;
        "Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=50.99 GB, mem usage=27.69 GB." (turn 5,
        2026-01-14); the description's run of the same command (--disable-radix-cache, 2026-01-13) prints LMCache's
        "Lazily initializing GPU buffer (max tokens=249070)", the GPU buffer LMCache sizes to SGLang's
        max_total_num_tokens.
  Q32R  Qwen3-32B (bf16), 4 x RTX 5090 (PCIe only), SGLang 0.5.13.post1 (the 0.5.10 line), --tensor-parallel-size 4
        --mem-fraction-static 0.88 --context-length 40960 --disable-radix-cache --attention-backend triton
        --disable-custom-all-reduce: "Qwen3-32B Dense BF16 SGLang 4TP 实验汇总" (code-corpus file 55390610462): "Load
        memory / GPU 15.50 GB", "KV tokens 187069" (piecewise prefill graphs on and off alike).
  Q30W  Qwen/Qwen3-30B-A3B (bf16), one RTX PRO 6000 Blackwell Workstation Edition (its MoE config file name), sglang
        0.5.13 (the 0.5.10 line; slime 0.3.0 image), --mem-fraction-static 0.90 --max-total-tokens 4096
        --disable-cuda-graph --attention-backend triton --moe-runner-backend triton: RepoHarness U-H probe report
        (code-corpus file 65738777320): "Load weight end. elapsed=136.72 s, type=Qwen3MoeForCausalLM, avail mem=37.35 GB,
        mem usage=56.89 GB."; "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 4096, K size: 0.19 GB, V size:
        0.19 GB" (the pool is capped: weights and the capped pool only).

The SWA rule (kvplan.sglang.hybrid_swa_cell, read in the 0.5.10 / 0.5.14 / 0.5.20 wheels): SGLang's hybrid-SWA
architectures (gpt-oss, MiMo-V2-Flash, Gemma 4 from 0.5.11) keep the sliding layers in a pool of 0.8 x the full pool's
tokens, so a full-pool token costs F x n_full + 0.8 x S x n_swa; kvplan priced every layer at full rate before (Gemma 4
26B-A4B fp8: 112,640 B against 92,160 B, 18 % too few tokens; gpt-oss: 10 %).
"""

import pytest

from kvplan import load_preset
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan, stage_distinct
from kvplan.sglang import SGLANG_PROFILES, default_settings, hybrid_swa_cell, pool_bytes
from kvplan.units import GiB
from tests.test_engine_sglang import close, figures


def _cell(preset: str, version: str, kv_b: int, tp: int = 1):
    spec = load_preset(preset)
    return hybrid_swa_cell(version, spec.model_type, stage_distinct(spec, 1, 0), tp, kv_b)


# ----------------------------------------------------------------------------- G4CFG / G4W32: Gemma 4's SWA pool


def test_g4cfg_gemma4_cells_as_the_configurator_prints():
    # 26B-A4B bf16: full 5 x (2 heads x 512 x 2 x 2 B = 4,096) = 20,480; sliding 25 x (8 x 256 x 2 x 2 = 8,192) =
    # 204,800; cell = 20,480 + 0.8 x 204,800 = 184,320 ("cell_size_bytes=184320.0")
    assert _cell("gemma-4-26b-a4b", "0.5.20", 2) == (184_320, 20_480, 204_800)
    # 31B: 10 x 8,192 + 0.8 x 50 x 16,384 = 81,920 + 655,360 = 737,280 ("cell_size_bytes=737280.0")
    assert _cell("gemma-4-31b-it-nvfp4", "0.5.20", 2)[0] == 737_280
    # the same cell on every line that pools Gemma 4 so (0.5.11 - 0.5.13 sit on the 0.5.10 line)
    assert _cell("gemma-4-26b-a4b", "0.5.10", 2)[0] == _cell("gemma-4-26b-a4b", "0.5.14", 2)[0] == 184_320


def test_g4w32_gemma4_fp8_pools_split_0_8():
    # fp8: full 10,240 B + sliding 102,400 B a token; cell 10,240 + 81,920 = 92,160 B
    assert _cell("gemma-4-26b-a4b", "0.5.20", 1) == (92_160, 10_240, 102_400)
    # the log's own pools: 37,081 x 10,240 + 29,664 x 102,400 = 3,417,303,040 B = 3.18 GiB ("SWAKVPool mem usage:
    # 3.18 GB"); the cell prices the same 37,081 full tokens at 3.1827 GiB
    assert round((37_081 * 10_240 + 29_664 * 102_400) / GiB, 2) == 3.18
    assert close(37_081 * 92_160, 3.18)
    # sliding = int(full x 0.8): 37,081 -> 29,664, 66,235 -> 52,988 (the 0.80 probe)
    assert (37_081 * 8 // 10, 66_235 * 8 // 10) == (29_664, 52_988)
    # one pool over every layer (kvplan before: 112,640 B) would have held 37,081 x 92,160 / 112,640 = 30,339 tokens
    # from the same bytes (-18 %)
    assert 37_081 * 92_160 // 112_640 == 30_339


def test_hybrid_swa_plan_uses_the_cell():
    # the plan's cell is the SWA cell on the lines read, one pool over every layer before 0.5.8 and for Gemma 3
    # (SGLang sets disable_hybrid_swa_memory for Gemma 2 / 3)
    def cell(preset, version, kv="auto"):
        return plan(load_preset(preset), get_gpu("H100-SXM"), EngineConfig(
            engine="sglang", sglang_version=version, kv_cache_dtype=kv), Layout(tp=1)).ranks[0].kv_bytes_per_token
    assert cell("gemma-4-26b-a4b", "0.5.20", "fp8_e4m3") == 92_160
    # gpt-oss-120b: 18 full + 18 sliding layers of 8 KV heads x 64 x 2 x 2 B = 2,048 B: 36,864 + 29,491 = 66,355
    # (0.5.8 - 0.5.9 pool gpt-oss apart too off SM 10.x; 0.5.2 - 0.5.7 force one pool: tests/test_sglang_swa_old.py)
    assert cell("gpt-oss-120b", "0.5.20") == 66_355 and cell("gpt-oss-120b", "0.5.7") == 73_728
    assert cell("gemma-3-27b-it", "0.5.20") == 62 * 16 * 128 * 2 * 2
    # the tokens follow: rest // cell (SGLang's float cell 66,355.2), so 73,728 / 66,355 = 1.11 x the one-pool count
    p = plan(load_preset("gpt-oss-120b"), get_gpu("H100-SXM"), EngineConfig(engine="sglang", sglang_version="0.5.20"),
             Layout(tp=1))
    assert p.ranks[0].num_blocks == int(p.ranks[0].kv_pool_bytes // 66_355.2)


# ----------------------------------------------------------------------------- LM14: Qwen3-14B, one H100, 0.5.7


def _lm14():
    return plan(load_preset("qwen3-14b"), get_gpu("H100-SXM"),
                EngineConfig(engine="sglang", sglang_version="0.5.7", enable_prefix_caching=False), Layout(tp=1))


def test_lm14_default_fraction():
    # H100 81,559 MiB, chunk 8192, decode graphs up to 256: 512 + 8192 x 1.5 + 256 x 2 + 1 / 8 x 1024 = 13,440 MiB ->
    # (81,559 - 13,440) / 81,559 = 0.83521 -> 0.835 (server_args mem_fraction_static=0.835, cuda_graph_max_bs=256)
    s = default_settings(SGLANG_PROFILES["0.5.7"], 81_559, "nvidia-smi", 1)
    assert (s.mem_fraction_static, s.chunked_prefill_size, s.cuda_graph_max_bs, s.reserved_mib) == (
        0.835, 8192, 256, 13440)


def test_lm14_qwen3_14b_h100_weights_and_pool():
    p = _lm14()
    f = figures(p.engine_log)
    # usage 27.51 GiB bf16 + 0.18 = 27.69 (logged 27.69); after 78.45 - 27.69 = 50.76 (logged 50.99: -0.23 GiB)
    assert close(f["usage"] * GiB, 27.69) and close(f["after"] * GiB, 50.99)
    # 40 layers x 8 KV heads x 128 x 2 x 2 B = 163,840 B a token; rest = 78.45 x 0.835 - 27.69 = 37.82 GiB ->
    # 247,841 tokens (LMCache's buffer of the same command: 249,070, -0.49 %)
    assert p.ranks[0].kv_bytes_per_token == 163_840
    assert abs(f["tokens"] - 249_070) <= 0.01 * 249_070
    # from the log's own readings: (50.99 + 27.69) x 0.835 - 27.69 = 38.01 GiB / 163,840 B = 249,088 (+0.007 %)
    got = pool_bytes(int((50.99 + 27.69) * GiB), int(27.69 * GiB), 0.835) // 163_840
    assert abs(got - 249_070) <= 0.001 * 249_070


def test_g4w32_two_pool_lines():
    # kvplan's log in SGLang's two-pool words for the log's 37,081 full tokens (page 1): sliding 37,081 x 8 // 10 =
    # 29,664; (29,664 + 1) x 102,400 + (37,081 + 1) x 10,240 B = 3.18 GB ("SWAKVPool mem usage: 3.18 GB")
    from kvplan.sglang import log_lines
    prof = SGLANG_PROFILES["0.5.20"]
    s = default_settings(prof, 24_564, "nvidia-smi", 1)
    lines = log_lines(prof, 20 * GiB, 15 * GiB, 37_081, 1, 0, 0, False, "float8_e4m3fn", s, 2048, 32768,
                      swa=(10_240, 102_400))
    assert "Use sliding window memory pool. full_layer_tokens=37081, swa_layer_tokens=29664" in lines
    assert "SWAKVPool mem usage: 3.18 GB, swa size: 29664, full size: 37081" in lines
    # a plan prints the same split: swa = full x 8 // 10, the pool holds full x 92,160 B
    p = plan(load_preset("gemma-4-26b-a4b"), get_gpu("H100-SXM"), EngineConfig(
        engine="sglang", sglang_version="0.5.20", kv_cache_dtype="fp8_e4m3"), Layout(tp=1))
    full = p.ranks[0].num_blocks
    assert f"Use sliding window memory pool. full_layer_tokens={full}, swa_layer_tokens={full * 8 // 10}" in p.engine_log
    assert f"max_total_num_tokens={full}," in p.engine_log[-1] and full == p.ranks[0].kv_pool_bytes // 92_160


# ----------------------------------------------------------------------------- Q32R: Qwen3-32B, 4 x RTX 5090, 0.5.13


def _q32r():
    return plan(load_preset("qwen3-32b"), get_gpu("RTX-5090"),
                EngineConfig(engine="sglang", sglang_version="0.5.10", mem_fraction_static=0.88, max_model_len=40960,
                             enable_prefix_caching=False), Layout(tp=4))


def test_q32r_weights_and_pool_from_readings():
    p = _q32r()
    f = figures(p.engine_log)
    # weights: 15.26 GiB a rank + 0.18 = 15.44 (logged 15.50); cell 64 layers x 2 of 8 KV heads x 128 x 2 x 2 B = 65,536
    assert close(f["usage"] * GiB, 15.50) and p.ranks[0].kv_bytes_per_token == 65_536
    # from the log's own figures: rest = pre x 0.88 - 15.50 = 187,069 x 65,536 B = 11.42 GiB -> pre 30.59 GiB; that pre
    # gives 187,092 tokens (+0.01 %)
    got = pool_bytes(int(30.59 * GiB), int(15.50 * GiB), 0.88) // 65_536
    assert abs(got - 187_069) <= 0.001 * 187_069 and f["context"] == 40960


@pytest.mark.xfail(strict=True, reason=(
    "Q32R 'KV tokens 187069': kvplan 191,152 (+2.2 %; K + V 11.67 vs 11.42 GiB). The log implies 30.59 GiB free before "
    "the load (rest 11.42 GiB + 15.50 of weights, / 0.88) where kvplan's TP >= 2 PCIe context (0.56 GiB, fitted to 4 x "
    "RTX 4090 TP4) leaves 30.80 of the RTX 5090's 31.36: ~0.77 GiB of context on this SM 12.0 card with custom "
    "all-reduce off; one reading is not enough to split the constant by GPU"))
def test_q32r_tokens():
    f = figures(_q32r().engine_log)
    assert abs(f["tokens"] - 187_069) <= 0.01 * 187_069


# ----------------------------------------------------------------------------- Q30W: Qwen3-30B-A3B, RTX PRO 6000, 0.5.13


def test_q30w_qwen3_30b_a3b_rtx_pro_6000_capped_pool():
    p = plan(load_preset("qwen3-30b-a3b"), get_gpu("RTX-PRO-6000"),
             EngineConfig(engine="sglang", sglang_version="0.5.10", mem_fraction_static=0.90, max_total_tokens=4096,
                          enforce_eager=True), Layout(tp=1))
    f = figures(p.engine_log)
    # pre 94.97 - 0.74 = 94.23 (the log: 37.35 + 56.89 = 94.24); weights 56.87 GiB bf16 + 0.18 = 57.05 (logged 56.89);
    # after 37.18 (37.35)
    assert close(f["begin"] * GiB, 37.35 + 56.89) and close(f["usage"] * GiB, 56.89) and close(f["after"] * GiB, 37.35)
    # --max-total-tokens 4096 caps the pool: 48 layers x 4 KV heads x 128 x 2 B = 49,152 B of K a token, (4096 + 1)
    # slots x 49,152 B = 0.19 GB each of K and V
    assert f["tokens"] == 4096 and p.ranks[0].kv_bytes_per_token == 98_304
    assert round(4097 * 49_152 / GiB, 2) == 0.19 and f["k"] == 0.19
