"""SGLang's MambaPool for hybrid models in the web app: the link carries --mamba-full-memory-ratio (``mfr``),
--max-mamba-cache-size (``mmc``) and --mamba-ssm-dtype (``msd``), a tampered value falls back with a warning naming
the parameter, the sidebar's SGLang knobs (enabled only for a model with recurrent-state layers) change the plan, the
Import page applies a launch_server line with those flags and --disable-radix-cache, and a hybrid SGLang cannot be
planned for is refused on every page (never a plan on screen).

Numbers by hand: Qwen3.5-27B (the qwen3.5-27b preset) has 48 Gated-DeltaNet layers of 48 value heads x 128, 16 key
heads x 128, conv kernel 4, mamba_ssm_dtype float32. SGLang's slot (kvplan.sglang.state_bytes_per_request): conv
(48 x 128 + 2 x 16 x 128 = 10,240 channels) x 3 columns x 2 B = 61,440 B + temporal 48 x 128 x 128 x 4 B = 3,145,728 B
= 3,207,168 B a layer, x 48 = 153,944,064 B (146.81 MiB); with --mamba-ssm-dtype bfloat16 48 x (61,440 + 1,572,864)
= 78,446,592 B (74.81 MiB). From 0.5.17 SGLang charges slots + 1 (the padding slot). The slot counts the ratio gives
come from the core (kvplan.plan, whose rest is pinned to logs in tests/test_sglang_hybrid_pool.py): on an H200 at
32,768 tokens, SGLang 0.5.20 / 0.5.21 (the 58 breakable prefill graphs Qwen3.5 keeps as a multimodal allowlisted arch:
+ 464 MiB reserved), ratio 0.9 -> 213 slots, 0.5 -> 149 (fewer: less of the rest goes to the MambaPool); 5 slots a
running request (extra_buffer) -> max_running_requests capped at 213 // 5 = 42 and 149 // 5 = 29.
"""

import pytest

from kvplan.presets import load_preset
from kvplan.sglang import hybrid_refusal
from kvplan.web.commands import parse_command
from kvplan.errors import PlanInputError
from kvplan.web.state import PlanState, decode, encode, from_document, to_document
from tests.app_util import html_tables, kvplan_plan, metrics, plain, run_app, state, warnings

SLOT = 48 * ((48 * 128 + 2 * 16 * 128) * 3 * 2 + 48 * 128 * 128 * 4)
SLOT_BF16 = 48 * ((48 * 128 + 2 * 16 * 128) * 3 * 2 + 48 * 128 * 128 * 2)
LINK = {"v": "1", "m": "qwen3.5-27b", "g": "H200", "e": "sglang", "len": "32768"}
CORE = dict(gpu="H200", engine="sglang", max_model_len=32768)


def open_knobs(at):
    at.session_state["kv.knobs"] = True
    return at.run()


def mamba_term(at) -> dict[str, str]:
    rows = next(t for t in html_tables(at) if t and "term" in t[0])
    return next(r for r in rows if r["term"].startswith("Mamba state pool"))


def log_lines(at) -> list[str]:
    return [line for c in at.get("code") for line in c.value.splitlines()]


def errors(at) -> str:
    return plain(" ".join(e.value for e in at.error))


def test_slot_bytes_by_hand():
    assert SLOT == 153_944_064 and SLOT_BF16 == 78_446_592
    assert f"{SLOT / 2**20:.2f}" == "146.81" and f"{SLOT_BF16 / 2**20:.2f}" == "74.81"


def test_link_round_trip_of_the_three_keys():
    s = PlanState(engine="sglang", mamba_full_memory_ratio=0.5, max_mamba_cache_size=64, mamba_ssm_dtype="bfloat16")
    assert encode(s) == {"v": "1", "e": "sglang", "mfr": "0.5", "mmc": "64", "msd": "bfloat16"}
    assert decode(encode(s)) == (s, [])
    assert from_document(to_document(s)) == (s, [])
    at = run_app(LINK | {"mfr": "0.5", "mmc": "64", "msd": "bfloat16"})
    got = state(at)
    assert (got.mamba_full_memory_ratio, got.max_mamba_cache_size, got.mamba_ssm_dtype) == (0.5, 64, "bfloat16")
    assert {k: at.query_params[k] for k in ("mfr", "mmc", "msd")} == {"mfr": "0.5", "mmc": "64", "msd": "bfloat16"}
    # --max-mamba-cache-size wins over the ratio: 64 slots of the bf16 slot, + the padding slot
    assert mamba_term(at)["bytes"] == f"{65 * SLOT_BF16:,}" == "5,099,028,480"


@pytest.mark.parametrize("key, value, reason", [
    ("mfr", "0", "must be above 0 and at most 1000"), ("mfr", "-1", "must be above 0 and at most 1000"),
    ("mfr", "nan", "must be above 0 and at most 1000"), ("mfr", "1001", "must be above 0 and at most 1000"),
    ("mfr", "abc", "not a number"),
    ("mmc", "0", "must be from 1 to 10,000,000"), ("mmc", "10000001", "must be from 1 to 10,000,000"),
    ("mmc", "1.5", "expected a whole number"),
    ("msd", "int8", "must be one of float32, bfloat16, float16"),
])
def test_tampered_values_fall_back_with_the_warning(key, value, reason):
    name = {"mfr": "mamba_full_memory_ratio", "mmc": "max_mamba_cache_size", "msd": "mamba_ssm_dtype"}[key]
    s, warned = decode({key: value})
    assert getattr(s, name) is None and len(warned) == 1
    assert warned[0].startswith(f"Link parameter '{key}' ({name}) = {value!r}: {reason}")
    assert warned[0].endswith("using the default (unset).")


def test_tampered_link_opens_with_the_warning_and_the_default_plan():
    at = run_app(LINK | {"mfr": "0", "msd": "int8"})
    shown = plain(" ".join(warnings(at)))
    assert "Link parameter 'mfr' (mamba_full_memory_ratio) = '0'" in shown
    assert "Link parameter 'msd' (mamba_ssm_dtype) = 'int8'" in shown
    assert mamba_term(at)["term"] == "Mamba state pool (213 slots x 146.81 MiB)"  # SGLang's defaults planned


def test_sidebar_ratio_changes_the_slots_and_the_log():
    core = {r: kvplan_plan("qwen3.5-27b", **CORE, mamba_full_memory_ratio=r) for r in (None, 0.5)}
    at = run_app(LINK)
    assert mamba_term(at)["term"] == "Mamba state pool (213 slots x 146.81 MiB)"
    assert mamba_term(at)["bytes"] == f"{214 * SLOT:,}" == "32,944,029,696"
    assert mamba_term(at)["basis"] == "engine rule"
    assert "rest x 0.9 / (1 + 0.9) less the padding slot" in mamba_term(at)["source"]
    assert metrics(at)["KV cache tokens"] == f"{core[None].kv_cache_tokens:,}" == "560,614"
    lines = log_lines(at)
    assert "Mamba Cache is allocated. max_mamba_cache_size: 213, conv_state size: 0.59GB, ssm_state size: 30.09GB" \
        in lines  # (213 + 1) x 48 x 61,440 B = 0.59 GiB; (213 + 1) x 48 x 3,145,728 B = 30.09 GiB
    assert "max_running_requests is capped to 42 by the mamba state cache (max_mamba_cache_size=213, 5 state slots " \
        "per request)" in lines
    at = open_knobs(at)
    ratio = at.number_input(key="w.mamba_full_memory_ratio")
    assert not ratio.disabled and ratio.value is None
    assert ratio.proto.help.startswith("--mamba-full-memory-ratio: ") and "(default 0.9)" in ratio.proto.help
    ratio.set_value(0.5).run()
    assert not at.exception and state(at).mamba_full_memory_ratio == 0.5 and at.query_params["mfr"] == "0.5"
    assert mamba_term(at)["term"] == "Mamba state pool (149 slots x 146.81 MiB)"  # fewer slots than 0.9's 213
    assert mamba_term(at)["bytes"] == f"{150 * SLOT:,}" == "23,091,609,600"
    assert metrics(at)["KV cache tokens"] == f"{core[0.5].kv_cache_tokens:,}" == "710,950"  # more KV: less state
    assert "max_running_requests is capped to 29 by the mamba state cache (max_mamba_cache_size=149, 5 state slots " \
        "per request)" in log_lines(at)


def test_sidebar_slots_dtype_and_radix_off():
    at = open_knobs(run_app(LINK))
    at.number_input(key="w.max_mamba_cache_size").set_value(64).run()
    assert mamba_term(at)["term"] == "Mamba state pool (64 slots x 146.81 MiB)"
    assert mamba_term(at)["bytes"] == f"{65 * SLOT:,}" == "10,006,364,160"
    # 64 // 5 = 12 running requests, where the KV pool holds 28 of 32,768 tokens (the core's warning)
    assert "caps max_running_requests at 12" in plain(" ".join(warnings(at)))
    at.number_input(key="w.max_mamba_cache_size").set_value(None).run()
    dtype = at.selectbox(key="w.mamba_ssm_dtype")
    assert dtype.value == "config / float32" and "else float32" in dtype.proto.help
    dtype.select("bfloat16").run()
    assert state(at).mamba_ssm_dtype == "bfloat16" and at.query_params["msd"] == "bfloat16"
    assert mamba_term(at)["term"] == "Mamba state pool (419 slots x 74.81 MiB)"
    assert mamba_term(at)["bytes"] == f"{420 * SLOT_BF16:,}"
    dtype.select("config / float32").run()
    # no radix cache: one slot a request, the slot count from --max-running-requests (0.5.9+)
    at.number_input(key="w.max_num_seqs").set_value(16).run()
    radix = at.selectbox(key="w.enable_prefix_caching")
    assert radix.value == "on" and radix.proto.help.startswith("--disable-radix-cache: ")
    radix.select("off").run()
    assert state(at).enable_prefix_caching is False and at.query_params["apc"] == "0"
    assert mamba_term(at)["term"] == "Mamba state pool (16 slots x 146.81 MiB)"
    assert mamba_term(at)["bytes"] == f"{17 * SLOT:,}" == "2,617,049,088"
    core = kvplan_plan("qwen3.5-27b", **CORE, max_num_seqs=16, enable_prefix_caching=False)
    assert metrics(at)["KV cache tokens"] == f"{core.kv_cache_tokens:,}" == "1,023,367"


def test_knobs_disabled_for_a_model_without_recurrent_state():
    at = open_knobs(run_app({"v": "1", "e": "sglang"}))  # llama-3.1-8b
    for key in ("w.mamba_full_memory_ratio", "w.max_mamba_cache_size"):
        assert at.number_input(key=key).disabled and "(disabled: this model keeps no recurrent state" in \
            at.number_input(key=key).proto.help
    for key in ("w.mamba_ssm_dtype", "w.enable_prefix_caching"):
        assert at.selectbox(key=key).disabled
    assert any("MambaPool knobs and radix cache: this model keeps no recurrent state" in c.value for c in at.caption)
    assert not [c for c in at.get("code") if "Mamba" in c.value]
    at = open_knobs(run_app({"v": "1", "m": "qwen3.5-27b"}))  # vLLM: SGLang's knobs are not drawn
    assert not [w for w in at.number_input if w.key == "w.mamba_full_memory_ratio"]


LINE = ("python -m sglang.launch_server --model-path Qwen/Qwen3.5-27B --context-length 32768 "
        "--mamba-full-memory-ratio 0.5 --max-mamba-cache-size 64 --mamba-ssm-dtype bfloat16 --disable-radix-cache "
        "--max-running-requests 16 --mamba-scheduler-strategy no_buffer --port 30000")


def test_import_applies_the_mamba_flags_and_the_radix_switch():
    at = run_app(page="pages/import.py")
    at.text_area(key="w.command").set_value(LINE).run()
    at.selectbox(key="w.import_gpu").select("H200").run()
    assert not at.exception
    flags = {r["flag"]: r["value"] for r in html_tables(at)[0]}
    assert (flags["--mamba-full-memory-ratio"], flags["--max-mamba-cache-size"], flags["--mamba-ssm-dtype"],
            flags["--disable-radix-cache"], flags["--max-running-requests"]) == \
        ("0.5", "64", "bfloat16", "given (no radix cache)", "16")
    shown = plain(" ".join(warnings(at)))
    assert "--mamba-scheduler-strategy no_buffer: not planned: kvplan plans the SGLang line's own strategy" in shown
    # with --speculative-algorithm NEXTN it is refused (tests/test_app_sglang_spec.py): kvplan.sglang.hybrid_refusal
    assert hybrid_refusal(load_preset("qwen3.5-27b"), "0.5.20", speculative=True)[0] == "speculative_config"
    core = kvplan_plan("qwen3.5-27b", **CORE, mamba_full_memory_ratio=0.5, max_mamba_cache_size=64,
                       mamba_ssm_dtype="bfloat16", enable_prefix_caching=False, max_num_seqs=16)
    assert metrics(at)["KV cache tokens"] == f"{core.kv_cache_tokens:,}"  # the preview plans them
    at.button(key="import.apply").click().run()
    s = state(at)
    assert (s.engine, s.model, s.mamba_full_memory_ratio, s.max_mamba_cache_size, s.mamba_ssm_dtype,
            s.enable_prefix_caching, s.max_num_seqs) == ("sglang", "qwen3.5-27b", 0.5, 64, "bfloat16", False, 16)
    assert {k: at.query_params[k] for k in ("mfr", "mmc", "msd", "apc")} == \
        {"mfr": "0.5", "mmc": "64", "msd": "bfloat16", "apc": "0"}
    at.switch_page("pages/budget.py").run()
    # --max-mamba-cache-size gives the slots (also without the radix cache), one a request: 64 of the bf16 slot
    assert mamba_term(at)["term"] == "Mamba state pool (64 slots x 74.81 MiB)"
    assert mamba_term(at)["bytes"] == f"{65 * SLOT_BF16:,}" == "5,099,028,480"
    assert metrics(at)["KV cache tokens"] == f"{core.kv_cache_tokens:,}"


@pytest.mark.parametrize("flag, value, allowed", [
    ("--mamba-full-memory-ratio", "0", "must be above 0 and at most 1000"),
    ("--mamba-full-memory-ratio", "x", "is not a number"),
    ("--max-mamba-cache-size", "0", "must be from 1 to 10,000,000"),
    ("--mamba-ssm-dtype", "int8", "one of float32, bfloat16, float16"),
])
def test_import_refuses_bad_mamba_values_naming_the_flag(flag, value, allowed):
    with pytest.raises(PlanInputError) as exc:
        parse_command(f"python -m sglang.launch_server --model-path Qwen/Qwen3.5-27B {flag} {value}")
    assert exc.value.field == flag and allowed in exc.value.message


def test_vllm_prefix_caching_flag_on_an_sglang_line_is_named_not_planned():
    from kvplan.web.views import unplanned_flags

    cmd = parse_command("python -m sglang.launch_server --model-path Qwen/Qwen3.5-27B --no-enable-prefix-caching")
    assert not cmd.disable_radix_cache and "enable_prefix_caching" not in cmd.engine_fields()
    assert any(u.startswith("--enable-prefix-caching (False): a vLLM flag SGLang does not have")
               for u in unplanned_flags(cmd))


REFUSED = {  # (link, the core's field, hybrid_refusal's arguments)
    "0.5.3": (LINK | {"sv": "0.5.3"}, "sglang_version", ("qwen3.5-27b", "0.5.3", {})),
    "0.5.8 no radix": ({"v": "1", "m": "qwen3-next-80b-a3b", "e": "sglang", "sv": "0.5.8", "apc": "0", "tp": "4"},
                       "enable_prefix_caching", ("qwen3-next-80b-a3b", "0.5.8", {"tp": 4, "radix": False})),
}


@pytest.mark.parametrize("page", ["pages/budget.py", "pages/gpus.py", "pages/parallelism.py"])
@pytest.mark.parametrize("case", list(REFUSED))
def test_hybrid_refusals_on_every_page_without_a_plan(case, page):
    link, field, (preset, version, kw) = REFUSED[case]
    got_field, message = hybrid_refusal(load_preset(preset), version, **kw)
    assert got_field == field
    at = run_app(link, page)
    text = errors(at)
    if page == "pages/parallelism.py":  # each layout refused, on one line (audit6), no layout table
        assert f"TP1 PP1 DP1, TP2 PP1 DP1, TP4 PP1 DP1, TP8 PP1 DP1: {field}: {message[:200]}" in text
        assert sum(message[:200] in plain(e.value) for e in at.error) == 1
    else:
        assert f"**{field}**: {message[:200]}" in text
    assert "KV cache tokens" not in metrics(at) and "Verdict" not in metrics(at) and not html_tables(at)
    assert not [c for c in at.get("code") if "Mamba" in c.value]


def test_radix_off_on_0_5_8_is_refused_under_the_knob():
    at = open_knobs(run_app({"v": "1", "m": "qwen3-next-80b-a3b", "e": "sglang", "sv": "0.5.8", "tp": "4"}))
    at.selectbox(key="w.enable_prefix_caching").select("off").run()
    assert not at.exception and state(at).enable_prefix_caching is None  # the last valid value planned
    assert "**Refused radix cache (--disable-radix-cache) = off**: " in errors(at) and "Without the radix cache SGLang 0.5.8 keeps 512 state slots" \
        in errors(at)


def test_import_refuses_no_radix_on_0_5_8_naming_sglang_flag():
    # lmsysorg/sglang:v0.5.8 -> the 0.5.8 profile, whose line holds 0.5.8 (512 slots) and 0.5.9 (the ratio) without
    # the radix cache: the core refuses field enable_prefix_caching; Import names SGLang's own flag
    message = hybrid_refusal(load_preset("qwen3-next-80b-a3b"), "0.5.8", tp=4, radix=False)[1]
    at = run_app(page="pages/import.py")
    at.text_area(key="w.command").set_value(
        "docker run lmsysorg/sglang:v0.5.8 python3 -m sglang.launch_server --model-path "
        "Qwen/Qwen3-Next-80B-A3B-Thinking --tp 4 --disable-radix-cache").run()
    at.selectbox(key="w.import_gpu").select("H200").run()
    assert f"**--disable-radix-cache**: {message}" in errors(at) and "KV cache tokens" not in metrics(at)
    at.button(key="import.apply").click().run()
    assert "Not applied: --disable-radix-cache: " in errors(at)
    assert (state(at).engine, state(at).enable_prefix_caching) == ("vllm", None)


def test_sidebar_refuses_a_zero_ratio_and_plans_the_last_valid_one():
    at = open_knobs(run_app(LINK | {"mfr": "0.5"}))
    at.number_input(key="w.mamba_full_memory_ratio").set_value(0.0).run()
    assert not at.exception and state(at).mamba_full_memory_ratio == 0.5
    assert "**Refused mamba_full_memory_ratio = 0.0**: must be above 0 and at most 1000; every page plans the last valid value (0.5) instead." in errors(at)
    assert mamba_term(at)["term"] == "Mamba state pool (149 slots x 146.81 MiB)"
