"""vLLM release lines split where the memory accounting changes (kvplan.engines.VLLM_CHANGES / VLLM_PROFILES).

Every boundary was read in the PyPI wheels (``pip download vllm==X --no-deps``, every release 0.6.4.post1 - 0.33.0
around a change, patch releases included; 2026-12). Each test names the profile on each side of one change and the
number that moves, derived by hand in the comment. The pools are fixed with --kv-cache-memory-bytes where only the
per-request blocks should move.
"""

import math

import pytest

from kvplan import load_preset
from kvplan.engines import (
    VLLM_CHANGES,
    VLLM_CHANGES_INSIDE_A_PROFILE,
    VLLM_PROFILES,
    EngineConfig,
    batch_defaults,
    cuda_graph_capture_sizes,
    cuda_graph_sizes_by_mode,
    vllm_has,
    vllm_profile_for_release,
    vllm_release,
)
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.spec import RopeCache
from kvplan.units import GiB
from kvplan.vllm_layouts import (
    int_linear_kernel,
    mxfp4_expert_bytes,
    mxfp4_moe_backend,
    triton_value_align,
    vllm_int_linear_bytes,
    vllm_mxfp4_extra_bytes,
    vllm_nvfp4_linear_bytes,
    vllm_rope_cache_bytes,
    vllm_rope_rows,
)

H100 = get_gpu("H100-SXM")  # 85,029,615,043 B (79.19 GiB)
H200 = get_gpu("H200")
POOL = 20 * GiB


# ----------------------------------------------------------------------------- the table itself

def test_profiles_are_contiguous_runs_split_at_every_change():
    firsts = [p.first_release for p in VLLM_PROFILES.values()]
    assert firsts == sorted(firsts) and len(set(firsts)) == len(firsts)  # keys in release order, no overlap
    # every change starts a profile (no profile straddles one) ...
    starts = set(firsts)
    for name, (release, source) in VLLM_CHANGES.items():
        assert (release in starts) != (name in VLLM_CHANGES_INSIDE_A_PROFILE), (name, release)
        assert source
    # the exceptions: MRoPE x 4 from 0.7.2 inside "0.7", which no V0 plan reaches (multimodal models are refused), and
    # ROCm's per-layer DSA index groups from 0.31.0 inside "0.30", which plans 0.30.0 and says so (test below)
    # ... and the capture size max_num_seqs from 0.31.0 inside "0.30" (one graph a mode, kvplan.engines
    # cuda_graph_capture_sizes)
    assert set(VLLM_CHANGES_INSIDE_A_PROFILE) == {"mrope_cache_x4", "dsa_rocm_layer_groups", "capture_max_seqs"}
    assert vllm_profile_for_release("0.7.2") == "0.7" and vllm_profile_for_release("0.31.0") == "0.30"
    # ... and every V1 / V0 profile after the first starts with at least one change: no two neighbours are the same
    changes = {release for release, _ in VLLM_CHANGES.values()}
    assert all(f in changes for f in firsts[1:] if f != (0, 10, 0))  # 0.10.0: the first V1 profile
    assert [VLLM_PROFILES[k].engine_core for k in ("0.6", "0.6.5", "0.7", "0.10")] == ["V0", "V0", "V0", "V1"]


def test_rocm_dsa_plans_on_the_0_30_line_warn_about_0_31():
    from kvplan import load_preset
    from kvplan.gpus import get_gpu
    from kvplan.parallel import Layout
    from kvplan.plan import ROCM_DSA_031_NOTE, plan

    spec = load_preset("deepseek-v3.2")
    on = plan(spec, get_gpu("MI355X"), EngineConfig(vllm_version="0.30", max_model_len=8192), Layout(tp=8))
    assert ROCM_DSA_031_NOTE in on.warnings
    for gpu, version in (("H200", "0.30"), ("MI355X", "0.33")):  # CUDA, or a line with one rule
        p = plan(spec, get_gpu(gpu), EngineConfig(vllm_version=version, max_model_len=8192), Layout(tp=8))
        assert ROCM_DSA_031_NOTE not in p.warnings


@pytest.mark.parametrize("release,profile", [
    ("0.6.4", "0.6"), ("0.6.6.post1", "0.6.5"), ("0.9.2", "0.7"), ("0.10.1.1", "0.10"), ("0.10.2", "0.10.2"),
    ("0.11.0", "0.11"), ("0.11.2", "0.11.1"), ("0.12.0", "0.12"), ("0.13.0", "0.13"), ("0.14.1", "0.14"), ("0.15.1", "0.15"),
    ("0.16.0", "0.16"), ("0.17.1", "0.17"), ("0.18.1", "0.18"), ("0.19.0", "0.19"), ("0.19.1", "0.19"),
    ("0.20.0", "0.20"), ("0.20.1", "0.20.1"), ("0.20.2", "0.20.1"), ("0.21.0", "0.21"), ("0.22.1", "0.22"),
    ("0.23.0", "0.23"), ("0.24.0", "0.24"), ("0.25.1", "0.25"), ("0.26.0", "0.26"), ("0.27.1", "0.27"),
    ("0.28.0", "0.28"), ("0.29.0", "0.29"), ("0.31.0", "0.30"), ("0.32.0", "0.32"), ("0.33.0", "0.33"),
    ("0.34.0", "0.34"),
])
def test_release_to_profile(release, profile):
    assert vllm_profile_for_release(release) == profile
    assert vllm_release(profile) <= vllm_release(release)


def test_keys_name_their_own_release():
    # every key's digits are inside its own run (the links' vv= values keep meaning their release); "0.33" held
    # 0.32.0 too until the 0.33.0 V2 sampler pass (v2_sampler_warmup_pass) split off "0.32"
    for key in VLLM_PROFILES:
        assert vllm_profile_for_release(key) == key, key
    assert VLLM_PROFILES["0.33"].first_release == (0, 33, 0) and VLLM_PROFILES["0.32"].first_release == (0, 32, 0)
    assert VLLM_PROFILES["0.21"].first_release == (0, 21, 0)


# ----------------------------------------------------------------------------- (1) triton_kernels' MXFP4 layout

def test_mxfp4_hopper_backend_and_value_padding_by_release():
    # 0.11.x bundles no triton_kernels (Marlin on Hopper); 0.12.0 does (Triton)
    assert [mxfp4_moe_backend("sm90", v) for v in ("0.11.1", "0.12")] == ["marlin", "triton"]
    # hopper_value.py pads to 64 x 64 in the 0.17.0 - 0.21.0 bundles only; the pack sizes 16 x 32 before and after
    assert [triton_value_align(v) for v in ("0.16", "0.17", "0.21", "0.22", "0.33")] == [
        (16, 32), (64, 64), (64, 64), (16, 32), (16, 32)]
    # gpt-oss-20b at TP2: H 2880, I 1440 -> 1472 a rank. 64 x 64: w13 [1440 -> 1472, 2944] = 4,333,568, w2
    # [736 -> 768, 2880] = 2,211,840; pack sizes: 1440 x 2944 = 4,239,360 + 736 x 2880 = 2,119,680 (no padding).
    # Both: swizzled scales 3072 x 90 + 3072 x 46 = 417,792, kept scales 2944 x 90 + 2880 x 46 = 397,440, fp32
    # biases 5824 x 4 = 23,296 -> 7,383,936 vs 7,197,568 (-186,368 an expert)
    assert mxfp4_expert_bytes(2880, 1440, True, "triton", triton_value_align("0.21"), "0.21") == 7_383_936
    assert mxfp4_expert_bytes(2880, 1440, True, "triton", triton_value_align("0.22"), "0.22") == 7_197_568
    # 24 layers x 32 experts = 768 per rank: 768 x 186,368 = 143,130,624 B more in 0.17 - 0.21 than in 0.16 / 0.22
    spec = load_preset("gpt-oss-20b")
    extra = {v: vllm_mxfp4_extra_bytes(spec, Layout(tp=2), 0, None, "sm90", v) for v in ("0.16", "0.17", "0.21", "0.22")}
    assert extra["0.17"] - extra["0.16"] == extra["0.21"] - extra["0.22"] == 768 * 186_368 == 143_130_624
    assert extra["0.16"] == extra["0.22"]


# ----------------------------------------------------------------------------- (2) hybrids' prefix caching

def _qwen3_next(version, prefix_caching=None):
    engine = EngineConfig(vllm_version=version, max_model_len=32768, kv_cache_memory_bytes=POOL,
                          enable_prefix_caching=prefix_caching)
    return plan(load_preset("qwen3-next-80b-a3b"), H200, engine, Layout(tp=2))


def test_hybrid_prefix_caching_default_from_0_28():
    # Qwen3-Next TP2, 20 GiB pool: 3212 blocks; 61 attention blocks + 3 Gated-DeltaNet state groups. Through 0.27.1
    # prefix caching stays off for hybrids by default (0.26.0 - 0.27.1 arg_utils.py: "keep it opt-in for now"): one
    # state page each, 64 -> 3212 / 64 x 32,768 = 1,644,544 tokens. 0.28.0 (vllm PR #50991): on, "align", two pages
    # each: 67 -> int(3212 / 67 x 32,768) = 1,570,907
    for v in ("0.24", "0.26"):
        before = _qwen3_next(v)
        assert before.blocks_per_request == 64 and before.kv_cache_tokens == 1_644_544
    after = _qwen3_next("0.28")
    assert after.blocks_per_request == 67 and after.kv_cache_tokens == int(3212 / 67 * 32768) == 1_570_907
    assert _qwen3_next("0.28", False).blocks_per_request == 64  # --no-enable-prefix-caching
    assert _qwen3_next("0.26", True).blocks_per_request == 67  # asked on 0.26: GDN is no SupportsMambaPrefixCaching


def test_nemotron_h_all_mode_then_align_then_checkpoint_page():
    # Nemotron-H-56B TP4 at 8192 tokens, 20 GiB pool: block 2080 tokens, 1008 blocks; 1 attention group (cdiv(8192,
    # 2080) = 4 blocks) + 6 Mamba-2 groups. 0.26 by default: 1 page each -> 4 + 6 = 10, 100.8 requests, 825,753
    # tokens; asked (--enable-prefix-caching) before 0.28.0: nemotron_h SupportsMambaPrefixCaching -> "all",
    # cdiv(8192, 2080) = 4 pages each -> 4 + 24 = 28. 0.28.0: on by default, "align" for every hybrid: 2 pages -> 16.
    # 0.32.0+: + the Mamba-2 prefill checkpoint page: 3 -> 22.
    nem = load_preset("nemotron-h-56b")
    got = {}
    for v, asked in (("0.26", None), ("0.26", True), ("0.28", None), ("0.30", None), ("0.33", None)):
        p = plan(nem, H200, EngineConfig(vllm_version=v, max_model_len=8192, kv_cache_memory_bytes=POOL,
                                         enable_prefix_caching=asked), Layout(tp=4))
        assert p.block_size == 2080 and p.num_blocks == 1008
        got[v, asked] = (p.blocks_per_request, p.kv_cache_tokens)
    assert got == {("0.26", None): (10, 825_753), ("0.26", True): (28, 294_912), ("0.28", None): (16, 516_096),
                   ("0.30", None): (16, 516_096), ("0.33", None): (22, int(1008 / 22 * 8192))}
    assert int(1008 / 10 * 8192) == 825_753 and 1008 // 28 * 8192 == 294_912 and 1008 // 16 * 8192 == 516_096


def test_state_pages_per_draft_token_from_0_15():
    # MambaSpec.max_memory_usage_bytes: one page through 0.14.1; page x (1 + num_speculative_blocks) from 0.15.0.
    # Qwen3-Next, ngram 3 drafts, prefix caching off, 560-token blocks (the GDN conv state's 3 draft columns,
    # tests/test_spec_decode.py): 0.14 -> cdiv(32,768, 560) = 59 + 3 = 62; 0.15 -> 59 + 3 x 4 = 71
    def drafts(v):
        engine = EngineConfig(vllm_version=v, max_model_len=32768, kv_cache_memory_bytes=POOL,
                              speculative_method="ngram", num_speculative_tokens=3)
        return plan(load_preset("qwen3-next-80b-a3b"), H200, engine, Layout(tp=2)).blocks_per_request
    assert (drafts("0.14"), drafts("0.15")) == (62, 71)


# ----------------------------------------------------------------------------- (3) AWQ on Hopper, (4) Marlin padding

def test_awq_machete_from_0_19():
    # awq_marlin.py: choose_mp_linear_kernel from 0.19.0 (not 0.18.1). 4096 x 4096 int4 g128 on an H100: Marlin keeps
    # the checkpoint's 8,388,608 + 262,144 scales + 65,536 qzeros = 8,716,288; Machete's zero points -scale x zp
    # [32, 4096] 16-bit = 262,144 for 65,536: 8,912,896
    assert int_linear_kernel("int4-g128", 4096, 4096, 4096, "sm90", "0.18") == "marlin"
    assert vllm_int_linear_bytes("int4-g128", 4096, 4096, 4096, "sm90", "0.18") == 8_716_288
    assert int_linear_kernel("int4-g128", 4096, 4096, 4096, "sm90", "0.19") == "machete"
    assert vllm_int_linear_bytes("int4-g128", 4096, 4096, 4096, "sm90", "0.19") == 8_912_896


def test_marlin_tile_padding_from_0_24():
    # a 32-wide gptq-int4-g128 shard, k 4096, on an A100: 0.22 - 0.23 refuse it for Marlin -> exllama: qweight
    # 65,536 + zeros 32 x 4 x 4 = 512 + scales 32 x 32 x 2 = 2,048 = 68,096; 0.24.0+ pad to 64 x 4096: 131,072 + 4,096
    assert int_linear_kernel("gptq-int4-g128", 32, 4096, 4096, "cuda", "0.22") == "exllama"
    assert vllm_int_linear_bytes("gptq-int4-g128", 32, 4096, 4096, "cuda", "0.22") == 68_096
    assert int_linear_kernel("gptq-int4-g128", 32, 4096, 4096, "cuda", "0.24") == "marlin"
    assert vllm_int_linear_bytes("gptq-int4-g128", 32, 4096, 4096, "cuda", "0.24") == 135_168


# ----------------------------------------------------------------------------- (5) budget and log defaults

def test_cuda_graph_estimate_none_printed_applied():
    # Llama-3.1-8B on an H100 at util 0.9, 8192 tokens: 51 PIECEWISE + 51 FULL graphs. 0.17: no estimate (graphs
    # after the KV cache, 128 + 2 x 50 x 6 MiB = 763,363,328 B); 0.18 / 0.19: the model-shaped estimate printed, not
    # subtracted (kvplan.engines.cuda_graph_bytes: FA3's 262 MiB first FULL capture + 100 x 6 MiB = 903,872,512 B,
    # "0.84 GiB total" as the llm-d-planner v0.19.0 log prints); 0.20.0: subtracted. 0.17 -> 0.18 the pool moves by
    # the non-torch fit only (0.25 - 0.13 GiB = 128,849,019 B)
    spec = load_preset("llama-3.1-8b")
    runs = {v: plan(spec, H100, EngineConfig(vllm_version=v, max_model_len=8192, gpu_memory_utilization=0.9))
            for v in ("0.17", "0.18", "0.19", "0.20")}
    graphs = {v: next(t for t in p.ranks[0].terms if t.name.startswith("CUDA graphs")) for v, p in runs.items()}
    assert [g.bytes for g in graphs.values()] == [763_363_328] + [903_872_512] * 3
    assert [VLLM_PROFILES[v].cudagraph for v in runs] == ["after_kv", "printed", "printed", "applied"]
    assert [g.applied for g in graphs.values()] == [False, False, False, True]
    printed = ["Estimated CUDA graph memory: 0.84 GiB total" in p.engine_log for p in runs.values()]
    assert printed == [False, True, True, True]
    pool = {v: p.ranks[0].kv_pool_bytes for v, p in runs.items()}
    assert pool["0.17"] - pool["0.18"] == round(0.25 * GiB) - round(0.13 * GiB) == 128_849_019
    assert pool["0.18"] == pool["0.19"] and pool["0.19"] - pool["0.20"] == 903_872_512


def test_gpu_memory_utilization_default_0_92_from_0_20():
    # config/cache.py: 0.9 through 0.19.1, 0.92 from 0.20.0. H100 85,029,615,043 B: requested ceil(x 0.90) =
    # 76,526,653,539, ceil(x 0.92) = 78,227,245,840: 1,700,592,301 B more for the pool
    spec = load_preset("llama-3.1-8b")
    p19, p20 = (plan(spec, H100, EngineConfig(vllm_version=v, max_model_len=8192)) for v in ("0.19", "0.20"))
    assert [VLLM_PROFILES[v].gpu_memory_utilization for v in ("0.19", "0.20")] == [0.90, 0.92]
    assert H100.memory_bytes - p19.ranks[0].terms[1].bytes == math.ceil(H100.memory_bytes * 0.9) == 76_526_653_539
    assert H100.memory_bytes - p20.ranks[0].terms[1].bytes == math.ceil(H100.memory_bytes * 0.92) == 78_227_245_840


def test_tokens_line_groups_split_one_line():
    # Qwen3-Next, prefix caching off, 3212 blocks of 544 tokens in 4 groups, 64 blocks a request:
    # 0.20.0: num_blocks // groups x block = 803 x 544 = 436,832; 0.20.1 - 0.27.1: int(3212 / 64 x 32,768) =
    # 1,644,544 on its own line; 0.28.0+: the same on one line with the concurrency (the 0.27.1 / 0.28.0 wheels'
    # kv_cache_utils.py, and a public 0.28.0 log, tests/test_engine_logs_dec03b.py)
    lines = {v: [ln for ln in _qwen3_next(v, False).engine_log if "KV cache size" in ln or "Maximum" in ln]
             for v in ("0.20", "0.21", "0.27", "0.28", "0.30")}
    conc = "Maximum concurrency for 32,768 tokens per request: 50.19x"
    assert lines["0.20"] == ["GPU KV cache size: 436,832 tokens", conc] and 3212 // 4 * 544 == 436_832
    assert lines["0.21"] == lines["0.27"] == ["GPU KV cache size: 1,644,544 tokens", conc]
    assert lines["0.28"] == lines["0.30"] == [f"GPU KV cache size: 1,644,544 tokens, {conc}"]


def test_batch_tier_160_gib_from_0_28():
    b200 = get_gpu("B200")  # 178.35 GiB >= 160
    assert batch_defaults(b200.name, b200.memory_bytes, EngineConfig(vllm_version="0.26")) == (8192, 1024)
    assert batch_defaults(b200.name, b200.memory_bytes, EngineConfig(vllm_version="0.28")) == (16384, 1024)


def test_sliding_window_two_batches_in_flight_from_0_26():
    # gpt-oss-20b (window 128) at 32,768 tokens, 8192 batched on an H100: sliding blocks cdiv(min(127 + in flight,
    # L), 16) + 1. 0.24: 127 + 8192 = 8319 -> 520 + 1 = 521; 0.26.0 (max_in_flight_tokens = 2 x 8192): 16,511 ->
    # 1032 + 1 = 1033. Full layers 32,768 / 16 = 2048 either way
    gpt = load_preset("gpt-oss-20b")
    got = {v: plan(gpt, H100, EngineConfig(vllm_version=v, max_model_len=32768, kv_cache_memory_bytes=POOL))
           for v in ("0.24", "0.26")}
    assert [g.blocks_per_request for g in got["0.24"].kv_groups] == [521, 2048]
    assert [g.blocks_per_request for g in got["0.26"].kv_groups] == [1033, 2048]
    assert (VLLM_PROFILES["0.24"].in_flight_batches, VLLM_PROFILES["0.26"].in_flight_batches) == (1, 2)


# ----------------------------------------------------------------------------- the boundaries found on the way

def test_capture_sizes_and_loading_digits():
    # 0.11.0 [1, 2, 4] + range(8, 513, 8) = 67 sizes at 1024 seqs (llm-d #787 logs 67/67); 0.11.1: + range(8, 256, 8)
    # + range(256, 513, 16) = 3 + 31 + 17 = 51
    assert [len(cuda_graph_capture_sizes(VLLM_PROFILES[v], 1024, 8192)) for v in ("0.11", "0.11.1")] == [67, 51]
    # "Model loading took %.4f GiB" through 0.13.0, format_gib (2 decimals) from 0.14.0
    spec = load_preset("llama-3.1-8b")
    assert [plan(spec, H100, EngineConfig(vllm_version=v, max_model_len=8192)).engine_log[0] for v in ("0.12", "0.14")] \
        == ["Model loading took 14.9888 GiB", "Model loading took 14.99 GiB"]



def test_capture_limit_1024_on_datacenter_blackwell_from_0_28():
    # config/vllm.py _set_cudagraph_sizes, 0.28.0: default_max_graph_size = 1024 on capability family 100 (B200, B300,
    # GB200, GB300), 512 elsewhere and before. 1024 seqs, 16,384 tokens: min(2 x 1024, 1024) = 1024 -> [1, 2, 4] + 31 +
    # range(256, 1025, 16) 49 = 83 sizes on a B200 at 0.28, 51 at 0.27 or on an H200 (gpu_arch "sm90")
    counts = {(v, arch): len(cuda_graph_capture_sizes(VLLM_PROFILES[v], 1024, 16384, arch=arch))
              for v in ("0.27", "0.28", "0.33") for arch in ("sm100", "sm90")}
    assert counts == {("0.27", "sm100"): 51, ("0.27", "sm90"): 51, ("0.28", "sm100"): 83, ("0.28", "sm90"): 51,
                      ("0.33", "sm100"): 83, ("0.33", "sm90"): 51}
    # 256 seqs stay at min(2 x 256, 1024) = 512: 51
    assert len(cuda_graph_capture_sizes(VLLM_PROFILES["0.33"], 256, 16384, arch="sm100")) == 51


def test_off_stride_batched_tokens_from_0_20_1_and_seqs_from_0_31():
    # --max-num-batched-tokens 100 at 256 seqs: max = min(2 x 256, 512, 100) = 100; the grid [1, 2, 4, 8, ..., 96]
    # (3 + 12 = 15) gets 100 itself from 0.20.1 (config/vllm.py "ensure max_num_tokens is captured"): 16
    sizes = {v: cuda_graph_capture_sizes(VLLM_PROFILES[v], 256, 100) for v in ("0.20", "0.20.1")}
    assert [len(s) for s in sizes.values()] == [15, 16] and sizes["0.20.1"][-2:] == [96, 100]
    # --max-num-seqs 100 at 8192 tokens: max = min(2 x 100, 512) = 200: [1, 2, 4] + 8 - 200 step 8 = 28; from 0.31.0
    # (uniform_decode_sizes = [max_num_seqs]) 100 joins: 29 PIECEWISE, and FULL (x <= 100) 3 + 12 + 1 = 16 (was 15).
    # The 0.30 line plans 0.30.0 (VLLM_CHANGES_INSIDE_A_PROFILE), "0.33" (0.32.0+) the rule
    counts = {v: [len(x) for x in cuda_graph_sizes_by_mode(VLLM_PROFILES[v], 100, 8192)] for v in ("0.30", "0.33")}
    assert counts == {"0.30": [28, 15], "0.33": [29, 16]}
    # a speculative plan gets its decode sizes instead: MTP-1 at 100 seqs, q = 2, max min(100 x 2 x 2, 512) = 400:
    # [1, 2, 4] + 31 (8 - 248) + 10 (256 - 400) = 44; the decode sizes 2 x [1, 2, 4, 8, ..., 96, 100] = 2, 4, 8, ...,
    # 192, 200 are all on the grid already; rounded to even sizes 1 -> 2 merges: 43; FULL 2 <= x <= 200: 2, 4 and 8 -
    # 200 step 8 = 2 + 25 = 27
    assert [len(x) for x in cuda_graph_sizes_by_mode(VLLM_PROFILES["0.33"], 100, 8192, "", 1)] == [43, 27]
def test_nvfp4_scales_and_padding_by_release():
    # 4096 x 4096 on a B200: 0.10.0 - 0.10.1.1 keep the checkpoint's scales [4096, 256] beside the swizzled copy:
    # 8,388,608 + 2 x 1,048,576 + 8; 0.10.2 swizzles in place: 8,388,608 + 1,048,576 + 8
    assert [vllm_nvfp4_linear_bytes("nvfp4", 4096, 4096, "sm100", v) for v in ("0.10", "0.10.2")] == [
        10_485_768, 9_437_192]
    # n = 1000, k = 2048: 0.16.0 pads the weight to 1024 x 2048 / 2 = 1,048,576 (pad_nvfp4_weight_for_cutlass);
    # 0.15 keeps 1000 x 1024 = 1,024,000; scales 1024 x 128 = 131,072 + 8 in both
    assert [vllm_nvfp4_linear_bytes("nvfp4", 1000, 2048, "sm100", v) for v in ("0.15", "0.16")] == [
        1_155_080, 1_179_656]


def test_rotary_tables_by_release():
    # dynamic NTK: ceil(4096 x 2) = 8192 rows through 0.21.0, max_position from 0.22.0
    dyn = RopeCache(rotary_dim=128, max_position=4096, rope_type="dynamic", factor=2.0)
    assert [vllm_rope_rows(dyn, v) for v in ("0.21", "0.22")] == [8192, 4096]
    # LongRoPE (4096 + 131,072 = 135,168): both halves also kept through 0.6.6.post1, one table from 0.7.0
    lr = RopeCache(rotary_dim=96, max_position=131_072, rope_type="longrope", original_max_position=4096)
    assert [vllm_rope_rows(lr, v) for v in ("0.6.5", "0.7")] == [270_336, 135_168]
    # Qwen3.5-27B MRoPE (64 dims, 262,144 positions): x 4 through 0.31.0, mrope_positions_factor 1 from 0.32.0
    q35 = load_preset("qwen3.5-27b")
    assert [vllm_rope_cache_bytes(q35, Layout(), 0, v) for v in ("0.30", "0.33")] == [
        4 * 262_144 * 64 * 2, 262_144 * 64 * 2]


def test_sampler_non_torch_and_v0_chunk_fits_by_release():
    assert [VLLM_PROFILES[v].sampler_copies["pytorch"] for v in ("0.16", "0.17")] == [9.55, 3.72]
    assert [VLLM_PROFILES[v].non_torch_single for v in ("0.17", "0.18")] == [round(0.13 * GiB), round(0.25 * GiB)]
    from kvplan.vllm_v0 import batch_limits

    # V0 chunked prefill above 32K: 512 tokens in 0.6.4, 2048 from 0.6.5
    llama = load_preset("llama-3.1-8b")
    assert [batch_limits(llama, EngineConfig(vllm_version=v), 131072) for v in ("0.6", "0.6.5")] == [
        (512, 256), (2048, 256)]
    assert vllm_has("0.6.5", "v0_profile_accounting") and not vllm_has("0.6", "v0_profile_accounting")


def test_sliding_window_ignores_pp_before_0_26():
    # through 0.25.1 SlidingWindowSpec holds W - 1 + max_num_batched_tokens whatever the PP size: gpt-oss-20b PP2,
    # 32,768 tokens: cdiv(127 + 8192, 16) + 1 = 521 on 0.24 as at PP1. (0.26+: kvplan's 2 x PP x 8192 in flight
    # saturates at the window's max_model_len: cdiv(32,768, 16) + 1 = 2049.)
    gpt = load_preset("gpt-oss-20b")
    blocks = {v: [g.blocks_per_request for g in plan(gpt, H100, EngineConfig(
        vllm_version=v, max_model_len=32768, kv_cache_memory_bytes=POOL), Layout(pp=2)).kv_groups] for v in ("0.24", "0.26")}
    assert blocks == {"0.24": [521, 2048], "0.26": [2049, 2048]}


def test_all_mode_counts_draft_pages_from_0_22():
    # --enable-prefix-caching on Nemotron-H (SupportsMambaPrefixCaching: "all"), 3 ngram drafts, 8192 tokens, block
    # 2080: 0.21.0's MambaSpec "all" = cdiv(8192, 2080) = 4 pages; 0.22.0 adds num_speculative_blocks: 4 + 3 = 7.
    # 1 attention group (4) + 6 state groups: 28 and 46 blocks a request
    nem = load_preset("nemotron-h-56b")
    got = {}
    for v in ("0.21", "0.22"):
        p = plan(nem, H200, EngineConfig(vllm_version=v, max_model_len=8192, kv_cache_memory_bytes=POOL,
                                         enable_prefix_caching=True, speculative_method="ngram",
                                         num_speculative_tokens=3), Layout(tp=4))
        got[v] = ({g.blocks_per_request for g in p.kv_groups if g.kind == "mamba"}, p.blocks_per_request)
    assert got == {"0.21": ({4}, 4 + 6 * 4), "0.22": ({7}, 4 + 6 * 7)}


def test_asked_prefix_caching_on_hybrids_before_0_15():
    # --enable-prefix-caching: 0.11.x disables it for every hybrid (Nemotron-H: 10 blocks a request, as off); 0.12.0
    # keeps it for SupportsMambaPrefixCaching models with mamba_block_size = block_size: cdiv(8192, 2080) = 4 state
    # pages a group, 4 + 6 x 4 = 28; Qwen3-Next (GDN, no such support) has it disabled until 0.15.0 brings "align":
    # 64 -> 67 blocks
    nem = load_preset("nemotron-h-56b")
    asked = {v: plan(nem, H200, EngineConfig(vllm_version=v, max_model_len=8192, kv_cache_memory_bytes=POOL,
                                             enable_prefix_caching=True), Layout(tp=4)).blocks_per_request
             for v in ("0.11.1", "0.12")}
    assert asked == {"0.11.1": 10, "0.12": 28}
    assert [_qwen3_next(v, True).blocks_per_request for v in ("0.14", "0.15")] == [64, 67]
