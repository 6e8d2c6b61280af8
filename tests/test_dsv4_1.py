"""DeepSeek-V4.1 (DeepseekV41ForCausalLM, model_type "deepseek_v41"): refused by name, never planned as DeepSeek-V4.

Before this test, the DeepSeek-V4.1-Flash config.json went down the generic path and stopped on
"text_config.intermediate_size: required field(s) missing" (a refusal, but one naming the wrong thing); a V4.1 config
labelled model_type "deepseek_v4" would have reached the V4 builder. Now kvplan.families.deepseek_v4.deepseek_v41_refusal
refuses every form of it, naming what differs (the facts are in that module's DSV41 comment, read 2026-12-02 from the
vLLM 0.29.0 / 0.30.0 / 0.31.0 and SGLang 0.5.21 / 0.5.23 wheels).

Fixture: tests/fixtures/configs/deepseek-v4.1-flash.json, verbatim from github sfxnz/TensorFold
tests/fixtures/deepseek_v41/config.json @ b044d500bbe223f42a507f6d6f2963ff0bf13a70 (an EXL3 requantization; its
text_config / vision_config are the release's; provenance in SOURCES.json).

Public start-up log found: one SGLang DeepSeek-V4.1-Flash log (search-index file 69412325477, 2026-09-11, a dev image
on 3 x GB10 with TP padding of the heads 64 -> 96 and DSpark speculative decoding): "DSV4 SWA sizing: mode=cap,
swa_tokens=13312, request_cap+headroom=13312, prefix_tails=16", "DSV4 memory calculation: bytes_per_full_token=1670.75,
available_bytes=8.84 GB, c128_state_fixed=0.00 GB, swa_fixed=0.30 GB, full_token=5491200". Not pinned as an xfail: it
runs speculative decoding and a patched model (head padding), both refused for DeepSeek-V4 already, so even a V4.1 model
would not plan that run. No public vLLM V4.1 start-up log with its KV-cache lines was found.
"""

import json
from pathlib import Path

import pytest

from kvplan import ConfigError, parse_config
from kvplan.cli import main
from kvplan.families.deepseek_v4 import deepseek_v41_refusal
from kvplan.presets import load_preset, preset_config

FIXTURE = Path(__file__).parent / "fixtures" / "configs" / "deepseek-v4.1-flash.json"


def _v41() -> dict:
    return json.loads(FIXTURE.read_text())


def test_fixture_is_the_release_layout():
    # What the refusal says differs from V4, read off the real config: 43 compress_ratios entries = 40 layers + 3 MTP
    # (num_nextn_predict_layers 3); 0 x 5 (layers 0, 1 sliding + the 3 MTP entries), 2 x 18 (layers 2 - 19), 1 x 20
    # (layers 20 - 39); no 4 or 128 (V4's CSA / HCA). Compressed KV lives on the 4 kv sources only: layers 2 - 7 read
    # layer 2's, 8 - 13 layer 8's, 14 - 19 layer 14's, 20 - 39 layer 20's (max source <= layer), 38 compressed
    # layers on 4 caches, where a V4 reading would give every one of the 38 its own.
    text = _v41()["text_config"]
    ratios = text["compress_ratios"]
    assert (len(ratios), text["num_hidden_layers"], text["num_nextn_predict_layers"]) == (43, 40, 3)
    assert [ratios.count(r) for r in (0, 1, 2, 4, 128)] == [5, 20, 18, 0, 0]
    compressed = [i for i, r in enumerate(ratios[:40]) if r]
    sources = {i: max(s for s in text["kv_source_layer_ids"] if s <= i) for i in compressed}
    assert len(compressed) == 38 and sorted(set(sources.values())) == [2, 8, 14, 20]
    assert [sum(1 for s in sources.values() if s == k) for k in (2, 8, 14, 20)] == [6, 6, 6, 20]


def test_real_config_is_refused_by_name():
    with pytest.raises(ConfigError) as info:
        parse_config(_v41())
    assert info.value.field == "model_type"
    msg = str(info.value)
    assert msg.startswith("model_type: this is DeepSeek-V4.1 (model_type 'deepseek_v41', model_type 'deepseek_v41_text', "
                          "architectures DeepseekV41ForCausalLM), which kvplan does not model")
    assert "README" not in msg  # a web user has no README at hand
    for words in ("compress_ratios 1 / 2 (V4: 4 / 128)", "kv_source_layer_ids", "index_source_layer_ids",
                  "engram_layer_ids", "DeepseekV41ForCausalLM from 0.30; none in 0.29", "32-token sliding-window blocks",
                  "584 B record in 576 B pages, 528 B in 512 B pages on SM 10.x", "SGLang (0.5.21+)",
                  "DSV4 SWA sizing: mode=cap"):
        assert words in msg, words
    assert "intermediate_size" not in msg  # the old, wrong reason


def test_real_config_refused_without_transformers_too():
    with pytest.raises(ConfigError, match="DeepSeek-V4.1"):
        parse_config(_v41(), transformers=False)


def test_bare_text_config_is_refused():
    # The decoder alone (text_config, model_type "deepseek_v41_text", no architectures), as a Hub text-only export
    # would carry it.
    with pytest.raises(ConfigError, match=r"DeepSeek-V4.1 \(model_type 'deepseek_v41_text'\), which kvplan does not model"):
        parse_config(_v41()["text_config"])


def test_v41_labelled_as_v4_is_refused():
    # A flat V4.1 decoder config under V4's model_type (as some forks write it): the architectures entry, or failing
    # that V4.1's own kv_source_layer_ids, gives it away; the V4 builder would otherwise see it first.
    flat = {**_v41()["text_config"], "model_type": "deepseek_v4", "architectures": ["DeepseekV41ForCausalLM"]}
    with pytest.raises(ConfigError, match=r"DeepSeek-V4.1 \(architectures DeepseekV41ForCausalLM\)"):
        parse_config(flat)
    v4 = preset_config("deepseek-v4-flash")
    with pytest.raises(ConfigError, match=r"DeepSeek-V4.1 \(field kv_source_layer_ids\)"):
        parse_config({**v4, "kv_source_layer_ids": [2, 8, 14, 20]})


def test_v4_ratio_one_or_two_names_v41():
    v4 = preset_config("deepseek-v4-flash")
    ratios = [0, 0] + [2] * (v4["num_hidden_layers"] - 2)
    with pytest.raises(ConfigError, match=r"unknown ratio\(s\) \[2\]; allowed: 0, 4, 128 \(1 and 2 are DeepSeek-V4.1's"):
        parse_config({**v4, "compress_ratios": ratios})
    with pytest.raises(ConfigError) as info:  # a ratio that is neither V4's nor V4.1's: no V4.1 hint
        parse_config({**v4, "compress_ratios": [0, 0] + [8] * (v4["num_hidden_layers"] - 2)})
    assert "V4.1" not in str(info.value)


def test_v4_is_untouched():
    for name in ("deepseek-v4-flash", "deepseek-v4-pro"):
        cfg = preset_config(name)
        assert deepseek_v41_refusal(cfg, cfg) is None
        assert load_preset(name).model_type == "deepseek_v4"


def test_cli_refuses_without_traceback(capsys):
    assert main(["params", str(FIXTURE)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: model_type: this is DeepSeek-V4.1") and "Traceback" not in err


# ----------------------------------------------------------------------------- SGLang's SWA cap (kvplan.sglang_dsv4)

def test_swa_cap_matches_the_real_v41_log():
    # The V4.1-Flash log above (server_args: max_running_requests 4, chunked_prefill_size 1024, page_size 256,
    # speculative_algorithm DSPARK, speculative_num_draft_tokens 6, speculative_num_steps 1, speculative_eagle_topk 1,
    # swa_prefix_tails None, disable_radix_cache False, disable_overlap_schedule False; sliding_window 128):
    # per_request = 128 + 128 x 6 + 256 + 2 x max(1, 6) = 1,164; cap = 1,164 x 4 + 2 x 1,024 + 256 = 6,960;
    # tails 4 x 4 = 16, 16 x (128 + 256) = 6,144; 13,104 -> 52 pages = 13,312. Logged: "DSV4 SWA sizing: mode=cap,
    # swa_tokens=13312, request_cap+headroom=13312, prefix_tails=16" (exact).
    from kvplan.sglang_dsv4 import cap_sizing_line, swa_request_cap_tokens

    swa, tails = swa_request_cap_tokens(4, 1024, draft_tokens=6, spec_steps=1)
    assert (swa, tails) == (13312, 16)
    assert cap_sizing_line(swa, tails) == ("DSV4 SWA sizing: mode=cap, swa_tokens=13312, request_cap+headroom=13312, "
                                           "prefix_tails=16")


def test_swa_cap_without_speculative_decoding():
    from kvplan.sglang_dsv4 import swa_request_cap_tokens

    # DSV4's 256 running requests, chunk 8,000: per_request = 128 + 128 + 256 + 256 = 768; cap = 768 x 256 + 2 x
    # 8,000 + 256 = 212,864; radix on: tails 4 x 256 = 1,024, 1,024 x 384 = 393,216, 606,080 / 256 = 2,367.5 pages
    # -> 2,368 x 256 = 606,208 tokens; --disable-radix-cache: 212,864 / 256 = 831.5 -> 832 x 256 = 212,992.
    assert swa_request_cap_tokens(256, 8000) == (606208, 1024)
    assert swa_request_cap_tokens(256, 8000, radix_cache=False) == (212992, 0)
    # --swa-prefix-tails 10: 212,864 + 3,840 = 216,704 = 846.5 pages -> 216,832
    assert swa_request_cap_tokens(256, 8000, prefix_tails=10) == (216832, 10)
    # --disable-overlap-schedule, 4 requests, chunk 1,024: 768 x 4 + 1,024 + 256 = 4,352; + 16 x 384 = 10,496 (41 pages)
    assert swa_request_cap_tokens(4, 1024, overlap=False) == (10496, 16)
    # fewer requests than attention-DP ranks: SGLang floors the per-worker count at 1 for the cap and the tails
    # alike (requested_max_running_requests_per_worker = max(1, 1 // 2)): 768 + 2 x 1,024 + 256 = 3,072 + 4 x 384
    # = 4,608 tokens (18 pages), not 3,072 with no tails
    assert swa_request_cap_tokens(0, 1024) == swa_request_cap_tokens(1, 1024) == (4608, 4)


def test_swa_cap_refusals_name_the_flag():
    from kvplan.errors import PlanInputError
    from kvplan.sglang_dsv4 import swa_request_cap_tokens

    with pytest.raises(PlanInputError) as info:
        swa_request_cap_tokens(4, 0)
    assert info.value.field == "chunked_prefill_size"
    with pytest.raises(PlanInputError) as info:
        swa_request_cap_tokens(4, 1024, draft_tokens=6, overlap=False)
    assert info.value.field == "speculative_method"
