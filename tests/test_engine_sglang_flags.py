"""SGLang's prefill (piecewise) CUDA-graph flags and the release lines split where the wheels change (kvplan.sglang).

Every number is the wheel's own arithmetic (server_args.py _handle_gpu_memory_settings, read 2026-12):
reserved MiB = 512 + max(chunk, 2048) x 1.5 + decode max_bs x 2 + tp x pp / 8 x 1024, floored to 10240 above
60 GiB; mem_fraction_static = round((gpu_mem - reserved) / gpu_mem, 3). H100 gpu_mem = 81559 MiB (nvidia-smi).
"""

import pytest
from pydantic import ValidationError

from kvplan import load_preset
from kvplan.engines import EngineConfig
from kvplan.errors import PlanInputError
from kvplan.gpus import get_gpu
from kvplan.plan import plan
from kvplan.sglang import (
    SGLANG_PROFILES,
    default_settings,
    pp_line_note,
    pp_partition,
    prefill_graph_sizes,
    sglang_profile_for_release,
)
from kvplan.web.commands import parse_command

P = SGLANG_PROFILES
H100, H200, RTX4090 = 81559, 143771, 24564
# H100 TP1 default tier: chunk 8192, decode max_bs 256 -> 512 + 12288 + 512 + 128 = 13440 MiB
BASE_H100 = 512 + 8192 * 1.5 + 256 * 2 + 1 / 8 * 1024


def test_piecewise_opt_in_reserve_by_release_h100():
    assert BASE_H100 == 13440
    # 0.5.3 - 0.5.5 take --enable-piecewise-cuda-graph (from 0.5.3.post2) but reserve nothing for it
    for v in ("0.5.3", "0.5.4.post1"):
        assert default_settings(P[v], H100, "", 1, piecewise="enable").reserved_mib == 13440
    # 0.5.6: + piecewise_cuda_graph_max_tokens // 4 = 4096 // 4 = 1024 -> 14464 -> 67095 / 81559 = 0.8227 -> 0.823
    s = default_settings(P["0.5.6"], H100, "", 1, piecewise="enable")
    assert (s.reserved_mib, s.mem_fraction_static) == (14464, 0.823)
    # without it: 68119 / 81559 = 0.8352 -> 0.835
    assert default_settings(P["0.5.6"], H100, "", 1).mem_fraction_static == 0.835
    # 0.5.7: max_tokens = chunked_prefill_size, + 8192 // 8 = 1024 -> the same 14464 / 0.823
    assert default_settings(P["0.5.7"], H100, "", 1, piecewise="enable").reserved_mib == 14464
    # 0.5.8 - 0.5.9: + 8 MiB per capture size up to 8192 (58 sizes) = 464 -> 13904 -> 67655 / 81559 = 0.8295 -> 0.830
    s = default_settings(P["0.5.8"], H100, "", 1, piecewise="enable")
    assert (len(prefill_graph_sizes(8192)), s.reserved_mib, s.mem_fraction_static) == (58, 13904, 0.83)
    # "enforce" / "disable" do not exist before 0.5.10: nothing changes
    for pw in ("enforce", "disable"):
        assert default_settings(P["0.5.8"], H100, "", 1, piecewise=pw).reserved_mib == 13440


def test_piecewise_before_or_after_the_10_gib_floor():
    # --chunked-prefill-size 2048 on an H100: 512 + 3072 + 512 + 128 = 4224 MiB, below the 10240 floor
    def res(v):
        return default_settings(P[v], H100, "", 1, chunked_prefill_size=2048, piecewise="enable")
    # 0.5.6 adds its 1024 after the floor: 11264 -> 70295 / 81559 = 0.8619 -> 0.862
    assert (res("0.5.6").reserved_mib, res("0.5.6").mem_fraction_static) == (11264, 0.862)
    # 0.5.7 adds 2048 // 8 = 256 after the floor: 10496 -> 0.871
    assert (res("0.5.7").reserved_mib, res("0.5.7").mem_fraction_static) == (10496, 0.871)
    # 0.5.8 adds 42 sizes x 8 = 336 before it: 4560 -> floored to 10240 -> 71319 / 81559 = 0.8744 -> 0.874
    assert len(prefill_graph_sizes(2048)) == 42
    assert (res("0.5.8").reserved_mib, res("0.5.8").mem_fraction_static) == (10240, 0.874)


def test_piecewise_mla_opt_in_counts_sizes_up_to_2048():
    # H200 TP8 MLA: 512 + 12288 + 512 x 2 + 8 / 8 x 1024 = 14848 MiB -> 128923 / 143771 = 0.8967 -> 0.897
    assert default_settings(P["0.5.8"], H200, "", 8, mla=True).reserved_mib == 14848
    # 0.5.8 with the flag: max_tokens 2048 for MLA -> 42 sizes x 8 = 336 -> 15184 -> 128587 / 143771 = 0.894
    s = default_settings(P["0.5.8"], H200, "", 8, mla=True, piecewise="enable")
    assert (s.reserved_mib, s.mem_fraction_static) == (15184, 0.894)
    # 0.5.10 (on by default): the flat 1536 MiB for MLA -> 16384 -> 127387 / 143771 = 0.886
    assert default_settings(P["0.5.10"], H200, "", 8, mla=True).reserved_mib == 16384


def test_default_on_lines_disable_and_enforce():
    # 0.5.10+: 13440 + 58 x 8 = 13904 (0.830); --disable-piecewise-cuda-graph -> 13440 (0.835)
    for v in ("0.5.10", "0.5.20"):
        assert default_settings(P[v], H100, "", 1).reserved_mib == 13904
        s = default_settings(P[v], H100, "", 1, piecewise="disable")
        assert (s.reserved_mib, s.mem_fraction_static, s.prefill_graph_count) == (13440, 0.835, 0)
        # --enable-piecewise-cuda-graph is a deprecated no-op there
        assert default_settings(P[v], H100, "", 1, piecewise="enable").reserved_mib == 13904
    # 0.5.10 DP attention 2 at TP2 turns them off: 512 + 12288 + 512 + 256 + 256 x 2 x 3 = 15104 -> 0.815;
    # --enforce-piecewise-cuda-graph skips that rule: + 464 = 15568 -> 65991 / 81559 = 0.8091 -> 0.809
    s = default_settings(P["0.5.10"], H100, "", 2, dp_attention=2)
    assert (s.reserved_mib, s.mem_fraction_static) == (15104, 0.815)
    s = default_settings(P["0.5.10"], H100, "", 2, dp_attention=2, piecewise="enforce")
    assert (s.reserved_mib, s.mem_fraction_static, s.prefill_graph_count) == (15568, 0.809, 58)


def test_qwen3_8b_h100_0_5_6_pool_with_and_without_piecewise():
    # pre = 85,029,615,043 (H100 cudaMemGetInfo) - 794,568,950 (0.74 GiB context) = 84,235,046,093 B
    # loaded = 16,381,470,720 (Qwen3-8B bf16) + 193,273,528 (0.18 GiB) = 16,574,744,248 B
    # keep free int(pre x 0.165) = 13,898,782,605 -> pool 53,761,519,240 / 147,456 B a token = 364,593 tokens;
    # with the flag int(pre x 0.177) = 14,909,603,158 -> pool 52,750,698,687 / 147,456 = 357,738 tokens
    spec, gpu = load_preset("qwen3-8b"), get_gpu("H100-SXM")
    tokens = {}
    for pw in (None, "enable"):
        p = plan(spec, gpu, EngineConfig(engine="sglang", sglang_version="0.5.6", piecewise_cuda_graph=pw))
        assert p.ranks[0].kv_bytes_per_token == 147_456  # 8 KV heads x (128 + 128) x 36 layers x 2 B
        tokens[pw] = int(p.engine_log[-1].split("max_total_num_tokens=")[1].split(",")[0])
    assert tokens == {None: 364_593, "enable": 357_738}


def test_small_tier_decode_graphs_split_at_0_5_4_post1():
    # RTX 4090 (24564 MiB, < 35 GiB): 0.5.3 - 0.5.4 capture 16 decode graphs at TP < 4, 0.5.4.post1+ 24; TP4 80
    # 0.5.3 TP1: 512 + 2048 x 1.5 + 16 x 2 + 128 = 3744 -> 20820 / 24564 = 0.8476 -> 0.848
    s = default_settings(P["0.5.3"], RTX4090, "", 1)
    assert (s.cuda_graph_max_bs, s.reserved_mib, s.mem_fraction_static) == (16, 3744, 0.848)
    # 0.5.4.post1 TP1: 3072 + 512 + 48 + 128 = 3760 -> 20804 / 24564 = 0.8469 -> 0.847
    s = default_settings(P["0.5.4.post1"], RTX4090, "", 1)
    assert (s.cuda_graph_max_bs, s.reserved_mib, s.mem_fraction_static) == (24, 3760, 0.847)
    for v in ("0.5.3", "0.5.4.post1", "0.5.8"):  # TP4: 512 + 3072 + 160 + 512 = 4256 -> 0.827
        s = default_settings(P[v], RTX4090, "", 4)
        assert (s.cuda_graph_max_bs, s.reserved_mib, s.mem_fraction_static) == (80, 4256, 0.827)


def test_pp_split_changes_at_0_5_6():
    # 94 layers over 4 stages: remainder 2 on the last stage through 0.5.5, one extra on each of the last 2 from 0.5.6
    assert pp_partition(P["0.5.4.post1"], 94, 4) == [23, 23, 23, 25]
    assert pp_partition(P["0.5.6"], 94, 4) == [23, 23, 24, 24]


def test_release_to_profile():
    cases = {"0.4.5.post2": "0.4.0", "0.4.5.post3": "0.4.5.post3", "0.4.6.post1": "0.4.5.post3",
             "0.4.6.post2": "0.4.6", "0.4.7": "0.4.6", "0.4.7.post1": "0.4.8", "0.5.2": "0.4.8", "0.5.3.post3": "0.5.3",
             "0.5.4": "0.5.3", "0.5.4.post1": "0.5.4.post1", "0.5.5.post3": "0.5.4.post1", "0.5.6.post2": "0.5.6",
             "0.5.7": "0.5.7", "v0.5.8.post1": "0.5.8", "0.5.9": "0.5.8", "0.5.13": "0.5.10", "0.5.14": "0.5.14", "0.5.16": "0.5.15",
             "0.5.17": "0.5.17", "0.5.19": "0.5.18", "0.5.20": "0.5.20", "0.5.21": "0.5.21",
             "0.5.23": "0.5.21", "0.3.6": "0.4.0", "0.6.0": "0.5.21"}
    assert {r: sglang_profile_for_release(r) for r in cases} == cases
    # the old link key still names a line: 0.5.3 is now 0.5.3 - 0.5.4
    assert P["0.5.3"].releases == "0.5.3 - 0.5.4"


def test_old_lines_tiers_and_fractions():
    # 0.4.0 - 0.4.5.post2: server_args sets cuda_graph_max_bs 160 above 25000 MiB whatever the GPU
    s = default_settings(P["0.4.0"], H200, "", 1)
    assert (s.mem_fraction_static, s.chunked_prefill_size, s.cuda_graph_max_bs) == (0.88, 8192, 160)
    # 0.4.5.post3 - 0.4.6.post1: above 81920 MiB (143771 - 13 x 1024) / 143771 = 0.907408; runner to 256
    s = default_settings(P["0.4.5.post3"], H200, "", 1)
    assert (round(s.mem_fraction_static, 6), s.cuda_graph_max_bs) == (0.907408, 256)
    assert default_settings(P["0.4.5.post3"], H100, "", 4).mem_fraction_static == 0.85  # the TP table below
    # 0.4.6.post2 - 0.4.7 on an H200: min(0.88 + 48 GiB x 0.12 / 143771, (143771 - 18432) / 143771) = 0.871796
    s = default_settings(P["0.4.6"], H200, "", 1)
    assert (round(s.mem_fraction_static, 6), s.cuda_graph_max_bs) == (0.871796, 256)
    # B200 (183359 MiB) on the 0.4.6 line: the 0.4.6.post5 runner stops at 256 (0.4.8 line: 512 above 160,000 MiB)
    assert default_settings(P["0.4.6"], 183359, "", 1).cuda_graph_max_bs == 256
    assert default_settings(P["0.4.8"], 183359, "", 1).cuda_graph_max_bs == 512


def test_command_line_piecewise_flags():
    base = "python -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 1 "
    for flag, want in (("--enable-piecewise-cuda-graph", "enable"), ("--enforce-piecewise-cuda-graph", "enforce"),
                       ("--disable-piecewise-cuda-graph", "disable"), ("--disable-prefill-cuda-graph", "disable"),
                       ("--cuda-graph-backend-prefill disabled", "disable"),
                       ("--cuda-graph-backend-prefill=breakable", "enforce"),
                       ("--cuda_graph_backend_prefill tc_piecewise", "enforce")):
        cmd = parse_command(base + flag)
        assert cmd.engine_fields() == {"piecewise_cuda_graph": want}, flag
        assert not any("piecewise" in u or "prefill" in u for u in cmd.args.unknown), flag
    assert parse_command(base).engine_fields() == {}
    with pytest.raises(PlanInputError) as exc:
        parse_command(base + "--cuda-graph-backend-prefill full")
    assert exc.value.field == "--cuda-graph-backend-prefill"
    with pytest.raises(ValidationError):
        EngineConfig(engine="sglang", piecewise_cuda_graph="on")


def test_app_imports_and_links_the_piecewise_flag():
    from tests.app_util import html_tables, kvplan_plan, metrics, run_app, state

    at = run_app(page="pages/import.py")
    at.text_area(key="w.command").set_value(
        "python -m sglang.launch_server --model-path Qwen/Qwen3-8B --disable-piecewise-cuda-graph").run()
    at.selectbox(key="w.import_gpu").select("H100-SXM").run()
    assert not at.exception
    # 0.5.20 (the default line), H100 TP1: 13904 MiB reserved (0.830) with the prefill graphs, 13440 (0.835) without:
    # pool = 84,235,046,093 - 16,574,744,248 - int(pre x 0.17) 14,319,957,835 = 53,340,344,010 / 147,456 -> 361,737;
    # with 0.165: 364,593 tokens
    assert kvplan_plan("qwen3-8b", engine="sglang").kv_cache_tokens == 361_737
    assert kvplan_plan("qwen3-8b", engine="sglang", piecewise_cuda_graph="disable").kv_cache_tokens == 364_593
    assert metrics(at)["KV cache tokens"] == "364,593"
    flags = {r["flag"]: r["value"] for r in html_tables(at)[0]}
    assert flags["--enable- / --enforce- / --disable-piecewise-cuda-graph"] == "disable"
    at.button(key="import.apply").click().run()
    assert state(at).piecewise_cuda_graph == "disable" and at.query_params["pcg"] == "disable"
    again = run_app(dict(at.query_params))
    assert metrics(again)["KV cache tokens"] == "364,593"
    again.session_state["kv.knobs"] = True
    again.run()
    assert not again.exception
    assert again.sidebar.selectbox(key="w.piecewise_cuda_graph").value == "disable"
    again.sidebar.selectbox(key="w.piecewise_cuda_graph").select("no flag").run()
    assert state(again).piecewise_cuda_graph is None and metrics(again)["KV cache tokens"] == "361,737"


def test_default_prefill_graphs_by_release_after_0_5_10():
    from kvplan.sglang import max_running_requests

    def res(v, tp=1, gpu=H100, **kw):
        return default_settings(P[v], gpu, "", tp, **kw).reserved_mib
    # H100 TP1: 13440 + 58 x 8 = 13904 wherever the graphs are on
    # speculative decoding: 0.5.10 - 0.5.13 turn them off and add 4096 -> 17536; 0.5.14 keeps them, adds nothing
    assert (res("0.5.10", speculative=True), res("0.5.14", speculative=True)) == (17536, 13904)
    # --disable-cuda-graph: 0.5.10 - 0.5.13 keep the prefill reserve (13904); 0.5.14 drops it (13440); from 0.5.15
    # the decode max_bs x 2 = 512 goes too (12928)
    assert [res(v, eager=True) for v in ("0.5.10", "0.5.14", "0.5.15", "0.5.20")] == [13904, 13440, 12928, 12928]
    # MLA, H200 TP8: base 14848; + 1536 with the graphs (0.5.10 - 0.5.14, 0.5.18+), none where breakable refuses
    # MLA (0.5.15 - 0.5.17): 16384 -> 0.886 vs 14848 -> 0.897
    assert [res(v, 8, H200, mla=True) for v in ("0.5.14", "0.5.15", "0.5.17", "0.5.18", "0.5.20")] == [
        16384, 14848, 14848, 16384, 16384]
    # DP attention 2 at TP2: 15104 without graphs (0.5.10 - 0.5.16), + 464 from 0.5.17
    assert [res(v, 2, dp_attention=2) for v in ("0.5.14", "0.5.15", "0.5.17")] == [15104, 15104, 15568]
    # PP2 x TP8 on an H200: 512 + 12288 + 1024 + 2048 = 15872; the 0.5.15 - 0.5.18 breakable lines keep the graphs
    # under PP: + 464 = 16336 -> 127435 / 143771 = 0.8864 -> 0.886; 0.5.19+ turn them off by default under PP
    # (cuda_graph_hook.py apply_cuda_graph_compatibility, the 0.5.20 / 0.5.21 lines) and tc_piecewise 0.5.14 does:
    # 15872 -> 127899 / 143771 = 0.8896 -> 0.890
    s = default_settings(P["0.5.17"], H200, "", 8, pp=2)
    assert (s.reserved_mib, s.mem_fraction_static) == (16336, 0.886)
    for v in ("0.5.14", "0.5.20", "0.5.21"):
        s = default_settings(P[v], H200, "", 8, pp=2)
        assert (s.reserved_mib, s.mem_fraction_static, s.prefill_graph_count) == (15872, 0.89, 0), v
    # B200 (183359 MiB, chunk 16384) PP2 x TP8: 512 + 24576 + 1024 + 2048 = 28160; the 0.5.15 - 0.5.18 lines capture
    # all 74 sizes up to 16384 under PP -> 28752; 0.5.20+: off, 28160 (0.5.19+ cap an explicit breakable backend at
    # 8192 tokens, 58 sizes: not the default)
    assert [res(v, 8, 183359, pp=2) for v in ("0.5.18", "0.5.15", "0.5.20")] == [28752, 28752, 28160]
    # the 0.5.18 line plans 0.5.18 under PP and names 0.5.19's figures (15872 MiB, 0.890 on the H200 above)
    note = pp_line_note(P["0.5.18"], "H200", "NVIDIA", get_gpu("H200").memory_bytes, 8, pp=2)
    assert "reserves 15872 MiB instead of 16336" in note and "--mem-fraction-static 0.890" in note
    assert pp_line_note(P["0.5.18"], "H200", "NVIDIA", get_gpu("H200").memory_bytes, 8) is None  # no PP
    assert pp_line_note(P["0.5.20"], "H200", "NVIDIA", get_gpu("H200").memory_bytes, 8, pp=2) is None
    # ROCm: tc_piecewise off on non-CUDA hardware (0.5.23: disabled outright): 13440 at TP1 on a 81559 MiB card
    assert res("0.5.20", rocm=True) == 13440
    # --max-running-requests 8192 at DP 1 with 100,000 tokens: 0.5.10 - 0.5.13 cap at the pool rows
    # (clamp(int(100000 / 4096 x 512) = 12500, 2048, 4096) = 4096), 0.5.14+ at tokens // 2 = 50,000
    assert [max_running_requests(P[v], 100_000, 4096, 8192) for v in ("0.5.10", "0.5.14")] == [4096, 8192]


def test_command_line_image_tag_eager_and_chunk():
    cmd = parse_command("docker run --gpus all lmsysorg/sglang:v0.5.6.post2-cu129 python3 -m sglang.launch_server "
                        "--model-path Qwen/Qwen3-8B --enable-piecewise-cuda-graph --disable-cuda-graph "
                        "--chunked-prefill-size 4096")
    assert (cmd.sglang_version, cmd.piecewise_cuda_graph) == ("0.5.6", "enable")
    assert (cmd.args.enforce_eager, cmd.args.max_num_batched_tokens, cmd.args.unknown) == (True, 4096, ())
    latest = parse_command("docker run lmsysorg/sglang:latest python3 -m sglang.launch_server --model-path m/x "
                           "--chunked-prefill-size -1")
    assert latest.sglang_version is None and latest.unplanned == ("--chunked-prefill-size -1",)
    assert latest.args.max_num_batched_tokens is None


def test_app_image_tag_picks_the_profile_and_plans_the_opt_in_reserve():
    from tests.app_util import metrics, run_app, state

    at = run_app(page="pages/import.py")
    at.text_area(key="w.command").set_value(
        "docker run --gpus all lmsysorg/sglang:v0.5.6 python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B "
        "--enable-piecewise-cuda-graph").run()
    at.selectbox(key="w.import_gpu").select("H100-SXM").run()
    assert not at.exception
    # as test_qwen3_8b_h100_0_5_6_pool_with_and_without_piecewise: 0.177 left free -> 357,738 tokens
    assert metrics(at)["KV cache tokens"] == "357,738"
    at.button(key="import.apply").click().run()
    s = state(at)
    assert (s.sglang_version, s.piecewise_cuda_graph) == ("0.5.6", "enable")
    assert (at.query_params["sv"], at.query_params["pcg"]) == ("0.5.6", "enable")
