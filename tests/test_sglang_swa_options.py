"""SGLang's --swa-full-tokens-ratio and --disable-hybrid-swa-memory as plan inputs (EngineConfig, the CLI, the Import
parser, the link keys ``swr`` / ``dhs``), for the hybrid SWA architectures (kvplan.sglang.hybrid_swa_cell) and
DeepSeek-V4 (kvplan.sglang_dsv4).

Read in the sglang wheels (pip download sglang==X --no-deps, 2026-12-01): the ratio is one server arg for both,
checked ``0 < r <= 1.0`` ("--swa-full-tokens-ratio should be in range (0, 1.0]": server_args.py 0.5.10 - 0.5.18,
arg_groups/kv_cache_hook.py 0.5.19 - 0.5.23), default 0.8 (0.5.20+: None with fallback 0.8). DeepSeek-V4 resets it to
0.1 where it is at the default: 0.5.12 - 0.5.19 compare with ServerArgs' 0.8 (so an explicit 0.8 is replaced too),
0.5.20 - 0.5.23 test ``is None`` (an explicit value is kept). --disable-hybrid-swa-memory makes model_config.py's
is_hybrid_swa False, so create_memory_pool_configurator takes DefaultPoolConfigurator: one pool over every layer at
the full rate (for DeepSeek-V4 that skips DSV4PoolConfigurator: refused, not modelled).

Numbers by hand: gpt-oss-120b on one H100-SXM, SGLang 0.5.20, bf16: 18 full + 18 sliding layers of 8 KV heads x 64 x 2
(K, V) x 2 B = 2,048 B, F n_full = S n_swa = 36,864 B; the plan's pool (rest) is 4,472,998,986 B.
  r 0.8 (default): cell 36,864 + floor(0.8 x 36,864) = 36,864 + 29,491 = 66,355 B shown; SGLang divides by the
                   float 66,355.2: int(4,472,998,986 // 66,355.2) = 67,409 full tokens, sliding int(67,409 x 0.8) = 53,927
  r 0.5:           cell 36,864 + 18,432 = 55,296 B -> // 55,296 = 80,891 (55,296 x 80,891 = 4,472,948,736),
                   sliding int(80,891 x 0.5) = 40,445
  disabled:        every layer full: 36 x 2,048 = 73,728 B -> // 73,728 = 60,668
"""

import pytest

from kvplan import load_preset
from kvplan.cli_plan import engine_from_args
from kvplan.engines import EngineConfig
from kvplan.errors import PlanInputError
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.sglang import swa_ratio_refusal, swa_ratio_part_bytes, swa_tokens
from kvplan.sglang_dsv4 import bytes_per_full_token, swa_ratio
from kvplan.web.commands import parse_command
from kvplan.web.state import PlanState, decode, encode, from_document, to_document
from tests.test_sglang_dsv4 import _sglang as _dsv4

POOL = 4_472_998_986


def _oss(version="0.5.20", **kw):
    return plan(load_preset("gpt-oss-120b"), get_gpu("H100-SXM"),
                EngineConfig(engine="sglang", sglang_version=version, **kw), Layout(tp=1))


def test_ratio_part_by_hand():
    assert swa_ratio_part_bytes(36_864, None) == 29_491 == swa_ratio_part_bytes(36_864, 0.8)
    assert swa_ratio_part_bytes(36_864, 0.5) == 18_432 and swa_ratio_part_bytes(36_864, 1.0) == 36_864
    assert swa_ratio_part_bytes(36_864, 0.1) == 3_686  # 3,686.4
    assert swa_tokens(37_081, None) == 29_664 and swa_tokens(37_081, 0.5) == 18_540
    assert 4_472_998_986 // 55_296 == 80_891 and 4_472_998_986 // 66_355 == 67_410 and int(4_472_998_986 // 66_355.2) == 67_409 and POOL // 73_728 == 60_668


# SGLang divides the rest by its float cell, 36,864 + 0.8 x 2,048 x 18 = 66,355.2 B (pool_configurator.py
# HybridSWAPoolConfigurator, 0.5.14 - 0.5.23): int(4,472,998,986 // 66,355.2) = 67,409 full-pool tokens, not the
# 67,410 of the whole-byte cell kvplan shows; the sliding pool int(67,409 x 0.8) = 53,927
@pytest.mark.parametrize("kw, cell, full, swa", [
    ({}, 66_355, 67_409, 53_927),
    ({"swa_full_tokens_ratio": 0.8}, 66_355, 67_409, 53_927),
    ({"swa_full_tokens_ratio": 0.5}, 55_296, 80_891, 40_445),
    ({"disable_hybrid_swa_memory": True}, 73_728, 60_668, None),
    ({"disable_hybrid_swa_memory": True, "swa_full_tokens_ratio": 0.5}, 73_728, 60_668, None),  # ratio then unused
])
def test_gpt_oss_120b_h100_0520(kw, cell, full, swa):
    p = _oss(**kw)
    r = p.ranks[0]
    assert r.kv_pool_bytes == POOL and r.kv_bytes_per_token == cell and r.num_blocks == full
    log = "\n".join(p.engine_log)
    if swa is None:
        assert "sliding window" not in log and "SWAKVPool" not in log
    else:
        assert f"Use sliding window memory pool. full_layer_tokens={full}, swa_layer_tokens={swa}" in log
        assert f"swa size: {swa}, full size: {full}" in log


def test_ratio_refused_where_the_swa_pool_was_not_read():
    # gpt-oss: the 0.5.8 line (0.5.8 - 0.5.9) pools it apart off SM 10.x and reads the ratio (36,864 + 18,432 at 0.5);
    # 0.5.0rc0 - 0.5.7 force one pool (server_args), so the ratio changes nothing there (73,728 B)
    assert _oss("0.5.8", swa_full_tokens_ratio=0.5).ranks[0].kv_bytes_per_token == 55_296
    assert _oss("0.5.6", swa_full_tokens_ratio=0.5).ranks[0].kv_bytes_per_token == 73_728
    assert _oss("0.5.8", disable_hybrid_swa_memory=True).ranks[0].kv_bytes_per_token == 73_728  # one pool: as planned
    # a hybrid SWA model on a line whose pool kvplan has not read: refused, naming the flag
    assert swa_ratio_refusal("0.5.6", "gemma4")[0] == "swa_full_tokens_ratio"
    # a model with no sliding-window pool: the ratio changes nothing (SGLang ignores it there)
    q = [plan(load_preset("qwen3-14b"), get_gpu("H100-SXM"), EngineConfig(engine="sglang", **kw), Layout(tp=1))
         for kw in ({}, {"swa_full_tokens_ratio": 0.5})]
    assert q[0].kv_cache_tokens == q[1].kv_cache_tokens


def test_engine_config_bounds():
    for bad in (0, -0.1, 1.01):
        with pytest.raises(ValueError):
            EngineConfig(engine="sglang", swa_full_tokens_ratio=bad)
    assert EngineConfig(engine="sglang", swa_full_tokens_ratio=1).swa_full_tokens_ratio == 1


def test_dsv4_effective_ratio_by_line():
    assert swa_ratio("0.5.20", None) == 0.1 and swa_ratio("0.5.20", 0.8) == 0.8 and swa_ratio("0.5.18", 0.8) == 0.1
    assert swa_ratio("0.5.14", 0.15) == 0.15 == swa_ratio("0.5.20", 0.15)


def test_dsv4_plan_follows_the_ratio():
    # V4-Flash (43 layers, 21 CSA, 20 HCA) at r 0.15: 0.15 x 584 x 43 + 3066 + 91.25 + 693 + 0.15 / 0.1 x (1075.2 +
    # 268.8) = 3766.8 + 3850.25 + 2016 = 9633.05 B a full token
    bpft = bytes_per_full_token("c128_fixed", 43, 21, 20, swa_ratio=0.15)
    assert round(bpft, 2) == 9633.05
    base, p = _dsv4(), _dsv4(swa_full_tokens_ratio=0.15)
    assert p.kv_cache_tokens == int(p.ranks[0].kv_pool_bytes / bpft) // 256 * 256 < base.kv_cache_tokens
    log = "\n".join(p.engine_log)
    assert "bytes_per_full_token=9633.05" in log
    assert f"swa={int(p.kv_cache_tokens * 0.15) // 256 * 256}," in log
    # an explicit 0.8 on the 0.5.18 line is SGLang's default, replaced by 0.1: the default plan
    assert _dsv4("0.5.18", swa_full_tokens_ratio=0.8).kv_cache_tokens == _dsv4("0.5.18").kv_cache_tokens
    assert _dsv4("0.5.20", swa_full_tokens_ratio=0.8).kv_cache_tokens < base.kv_cache_tokens
    with pytest.raises(PlanInputError) as exc:
        _dsv4(disable_hybrid_swa_memory=True)
    assert exc.value.field == "disable_hybrid_swa_memory"


def test_import_line_with_both_flags():
    cmd = parse_command("python -m sglang.launch_server --model-path openai/gpt-oss-120b --swa-full-tokens-ratio 0.5 "
                        "--disable-hybrid-swa-memory")
    assert cmd.engine_fields() == {"swa_full_tokens_ratio": 0.5, "disable_hybrid_swa_memory": True}
    cmd = parse_command("python -m sglang.launch_server --model-path openai/gpt-oss-120b --swa_full_tokens_ratio=0.25")
    assert cmd.engine_fields() == {"swa_full_tokens_ratio": 0.25}


@pytest.mark.parametrize("value, words", [("0", "must be above 0 and at most 1"), ("1.5", "must be above 0 and at most 1"),
                                          ("nan", "must be above 0 and at most 1"), ("x", "is not a number")])
def test_import_refuses_a_bad_ratio_naming_the_flag(value, words):
    with pytest.raises(PlanInputError) as exc:
        parse_command(f"python -m sglang.launch_server --model-path openai/gpt-oss-120b --swa-full-tokens-ratio {value}")
    assert exc.value.field == "--swa-full-tokens-ratio" and words in exc.value.message


def test_link_round_trip():
    s = PlanState(engine="sglang", swa_full_tokens_ratio=0.5, disable_hybrid_swa_memory=True)
    assert encode(s) == {"v": "1", "e": "sglang", "swr": "0.5", "dhs": "1"}
    assert decode(encode(s)) == (s, []) and from_document(to_document(s)) == (s, [])


@pytest.mark.parametrize("key, value, reason", [("swr", "0", "must be above 0 and at most 1"),
                                                ("swr", "1.2", "must be above 0 and at most 1"),
                                                ("swr", "abc", "not a number"), ("dhs", "2", "must be 1 or 0")])
def test_tampered_link_value_refused(key, value, reason):
    name = {"swr": "swa_full_tokens_ratio", "dhs": "disable_hybrid_swa_memory"}[key]
    s, warned = decode({key: value})
    assert getattr(s, name) == getattr(PlanState(), name) and len(warned) == 1
    assert warned[0].startswith(f"Link parameter '{key}' ({name}) = {value!r}: {reason}")


def test_cli_flags():
    import argparse

    from kvplan.cli_plan import add_commands
    p = argparse.ArgumentParser()
    add_commands(p.add_subparsers(dest="cmd"))
    args = p.parse_args(["plan", "gpt-oss-120b", "--engine", "sglang", "--swa-full-tokens-ratio", "0.5",
                         "--disable-hybrid-swa-memory"])
    e = engine_from_args(args)
    assert (e.swa_full_tokens_ratio, e.disable_hybrid_swa_memory) == (0.5, True)


def test_mimo_v2_flash_tp4_block_fp8_loads_on_sglang_not_on_vllm():
    # MiMo-V2-Flash (fp8, weight_block_size [128, 128]) at TP4: the full layers' 4 KV heads x 192 / 4 = 192 rows of
    # k_proj, half a 128-row block. vLLM checks every column shard and refuses; SGLang builds MiMo's QKVParallelLinear
    # with skip_block_quant_check=True (models/mimo_v2_flash.py 0.5.7 - 0.5.10, models/mimo_v2.py 0.5.11 - 0.5.23;
    # sgl-project/sglang PR #18039 runs TP4), and o_proj (64 x 128 / 4 = 2,048) and the experts (2,048 / 4 = 512) fill
    # whole blocks
    from kvplan.vllm_layouts import fp8_block_refusal
    spec, h200 = load_preset("mimo-v2-flash"), get_gpu("H200")
    assert fp8_block_refusal(spec, Layout(tp=4), None) == (
        "ValueError: Weight output_partition_size = 192 is not divisible by weight quantization block_n = 128.")
    assert fp8_block_refusal(spec, Layout(tp=4), None, skip_qkv=True) is None
    with pytest.raises(PlanInputError) as exc:
        plan(spec, h200, EngineConfig(engine="vllm"), Layout(tp=4))
    assert exc.value.field == "tensor_parallel_size" and "192" in exc.value.message
    p = plan(spec, h200, EngineConfig(engine="sglang"), Layout(tp=4))
    assert p.kv_cache_tokens > 0
    # the skip is MiMo's alone: Qwen3-30B-A3B fp8-block at TP4 (experts 768 / 4 = 192) is still refused on SGLang
    with pytest.raises(PlanInputError) as exc:
        plan(load_preset("qwen3-30b-a3b"), h200, EngineConfig(engine="sglang", weight_format="fp8-block"),
             Layout(tp=4))
    assert exc.value.field == "tensor_parallel_size" and "= 192 is not divisible" in exc.value.message


def test_swa_chunk_cap_is_named_not_planned():
    # 0.5.14+: --max-running-requests with --disable-radix-cache (and the default chunked prefill) takes
    # SWAChunkCapPoolConfigurator, which sizes the sliding pool by a per-request cap: the plan says so
    capped = _oss(max_num_seqs=64, enable_prefix_caching=False)
    assert any("SWAChunkCapPoolConfigurator" in w for w in capped.warnings)
    assert not any("SWAChunkCapPoolConfigurator" in w for w in _oss(max_num_seqs=64).warnings)
    assert not any("SWAChunkCapPoolConfigurator" in w for w in _oss("0.5.10", max_num_seqs=64,
                                                                   enable_prefix_caching=False).warnings)


def test_sidebar_knobs_and_link_change_the_plan():
    from tests.app_util import kvplan_plan, metrics, run_app, state

    link = {"v": "1", "m": "gpt-oss-120b", "g": "H100-SXM", "e": "sglang", "sv": "0.5.20"}
    core = {r: kvplan_plan("gpt-oss-120b", engine="sglang", sglang_version="0.5.20", swa_full_tokens_ratio=r)
            for r in (None, 0.5)}
    at = run_app(link | {"swr": "0.5"})
    assert not at.exception and state(at).swa_full_tokens_ratio == 0.5
    assert metrics(at)["KV cache tokens"] == f"{core[0.5].kv_cache_tokens:,}" != f"{core[None].kv_cache_tokens:,}"
    at.session_state["kv.knobs"] = True
    at = at.run()
    ratio = at.number_input(key="w.swa_full_tokens_ratio")
    assert not ratio.disabled and ratio.value == 0.5 and ratio.proto.help.startswith("--swa-full-tokens-ratio: ")
    box = at.checkbox(key="w.disable_hybrid_swa_memory")
    assert not box.disabled
    box.check().run()
    assert not at.exception and at.query_params["dhs"] == "1"
    off = kvplan_plan("gpt-oss-120b", engine="sglang", sglang_version="0.5.20", disable_hybrid_swa_memory=True)
    assert metrics(at)["KV cache tokens"] == f"{off.kv_cache_tokens:,}"  # one pool over every layer: fewer tokens
    assert off.kv_cache_tokens < core[None].kv_cache_tokens
