"""SGLang plans of hybrid models with recurrent-state layers are refused, not planned the vLLM way.

SGLang keeps the conv + temporal states of Mamba-2 / GDN / short-conv layers in a MambaPool of its own
(sglang 0.5.20 wheel: mem_cache/memory_pool.py HybridReqToTokenPool / MambaPool; the slots are carved out of the
profiled rest first, mem_cache/kv_cache_configurator.py ``_handle_max_mamba_cache``) and only the full-attention
layers go into its token-granular KV pool. kvplan does not model that split, so before this refusal an SGLang
plan of qwen3.5-397b-a17b on 8 x H200 borrowed vLLM's hybrid page (a 521-token block, 1,534,345 tokens) and never
subtracted the states at all. Now every SGLang release line refuses it with a PlanInputError on ``engine``; vLLM
and the custom engine still plan it; models without recurrent state (sliding windows included) plan as before.
"""

import pytest
import transformers

from kvplan import parse_config
from kvplan.engines import EngineConfig
from kvplan.errors import PlanInputError
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.picker import pick_gpus
from kvplan.plan import plan
from kvplan.presets import load_preset
from kvplan.sglang import SGLANG_PROFILES, recurrent_state_refusal
from tests.app_util import metrics, plain, run_app

H200 = get_gpu("H200")
TAIL = ("Not modelled: the MambaPool's size, the KV pool it leaves, the #tokens SGLang logs and its "
        "max_running_requests. Plan this model with vLLM or the custom engine.")


def refusal(spec, **engine) -> PlanInputError:
    with pytest.raises(PlanInputError) as info:
        plan(spec, H200, EngineConfig(engine="sglang", **engine), Layout(tp=8))
    return info.value


# layer counts read off the presets' config.json: Qwen3.5-397B full_attention_interval 4 over 60 layers -> 15 full,
# 45 linear_attention (GDN); Qwen3-Next-80B 48 layers -> 12 full, 36 GDN; Nemotron-H-56B's hybrid_override_pattern
# has 54 "M" (Mamba-2) of 118 blocks; Nemotron-3-Nano-30B 23 "M" of 52; Qwen3.5-27B 64 layers -> 48 GDN.
@pytest.mark.parametrize("preset, held", [
    ("qwen3.5-397b-a17b", "45 of 60 layers keep a recurrent state (45 linear_attention)"),
    ("qwen3-next-80b-a3b", "36 of 48 layers keep a recurrent state (36 linear_attention)"),
    ("nemotron-h-56b", "54 of 118 layers keep a recurrent state (54 mamba)"),
    ("nemotron-3-nano-30b-a3b", "23 of 52 layers keep a recurrent state (23 mamba)"),
    ("qwen3.5-27b", "48 of 64 layers keep a recurrent state (48 linear_attention)"),
])
def test_hybrid_presets_are_refused_on_sglang_naming_the_engine_and_what_is_not_modelled(preset, held):
    exc = refusal(load_preset(preset))
    assert exc.field == "engine"
    assert exc.message.startswith(f"{preset}: {held}. SGLang keeps recurrent states in a separate MambaPool")
    assert exc.message.endswith(TAIL)


def test_every_sglang_release_line_refuses_and_flags_do_not_get_around_it():
    spec = load_preset("qwen3.5-397b-a17b")
    for version in SGLANG_PROFILES:
        assert refusal(spec, sglang_version=version).field == "engine", version
    # a capped pool, a page size, an fp8 KV cache or DP attention change nothing: the states are still unmodelled
    for flags in ({"max_total_tokens": 100_000}, {"block_size": 64}, {"kv_cache_dtype": "fp8"},
                  {"dp_attention_size": 8}, {"max_model_len": 4096}):
        assert refusal(spec, **flags).message.endswith(TAIL), flags


def test_vllm_and_custom_still_plan_the_hybrid():
    spec = load_preset("qwen3.5-397b-a17b")
    vllm = plan(spec, H200, EngineConfig(engine="vllm"), Layout(tp=8))
    custom = plan(spec, H200, EngineConfig(engine="custom"), Layout(tp=8))
    assert vllm.kv_cache_tokens > 0 and vllm.block_size > 16  # vLLM's hybrid page, aligned to the GDN state page
    assert custom.kv_cache_tokens > 0


def test_models_without_recurrent_state_plan_on_sglang_as_before():
    # DeepSeek-V3 at TP 8 on H200: 658,909 one-token pages (the number tests/test_app_audit.py pins)
    p = plan(load_preset("deepseek-v3"), H200, EngineConfig(engine="sglang"), Layout(tp=8))
    assert (p.block_size, p.kv_cache_tokens) == (1, 658_909)
    # sliding windows are attention, not recurrent state: gpt-oss and Gemma-2 are not refused
    for name in ("gpt-oss-120b", "gemma-2-27b-it", "llama-3.1-8b"):
        assert recurrent_state_refusal(load_preset(name)) is None, name
        assert plan(load_preset(name), H200, EngineConfig(engine="sglang"), Layout(tp=2)).kv_cache_tokens > 0


def _family(model_type: str, **overrides):
    cfg = transformers.AutoConfig.for_model(model_type, **overrides).to_dict()
    cfg["model_type"] = model_type
    return parse_config({**cfg, "torch_dtype": "bfloat16"})


def test_every_recurrent_kind_is_refused_composite_and_short_conv_included():
    # transformers 5.23 config defaults: Falcon-H1 32 layers of attention + Mamba-2 side by side; Jamba 28 Mamba
    # of 32 (attn_layer_period 8); Granite-4 (granitemoehybrid) 32 Mamba; Zamba2 45 Mamba + 9 shared-attention
    # hybrids; LFM2 with layer_types conv / full_attention / conv -> 2 short-conv layers of 3.
    cases = [
        (_family("falcon_h1"), "32 of 32 layers keep a recurrent state (32 attention_and_mamba)"),
        (_family("jamba"), "28 of 32 layers keep a recurrent state (28 mamba)"),
        (_family("granitemoehybrid"), "32 of 32 layers keep a recurrent state (32 mamba)"),
        (_family("zamba2"), "54 of 54 layers keep a recurrent state (45 mamba, 9 attention_and_mamba)"),
        (_family("lfm2", num_hidden_layers=3, layer_types=["conv", "full_attention", "conv"]),
         "2 of 3 layers keep a recurrent state (2 short_conv)"),
    ]
    for spec, held in cases:
        message = recurrent_state_refusal(spec)
        assert message is not None and held in message, (spec.model_type, message)
    # the plan itself refuses them (a TP that every one of these divides: 1)
    for spec, _ in cases:
        with pytest.raises(PlanInputError) as info:
            plan(spec, H200, EngineConfig(engine="sglang"))
        assert info.value.field == "engine"


def test_the_picker_skips_refused_sglang_layouts_without_crashing():
    spec = load_preset("qwen3.5-27b")
    result = pick_gpus(spec, 8192, 4, EngineConfig(engine="sglang"), gpus=[H200])
    assert not result.options
    reasons = {r.reason for r in result.rejected}
    assert any(r.endswith(TAIL) for r in reasons)
    # every layout is either over the node, too heavy or the refusal: none slipped through as a plan
    assert all(r.endswith(TAIL) or "exceeds" in r or "more than" in r or "weights alone" in r for r in reasons), reasons
    # on vLLM the same sweep finds options
    assert pick_gpus(spec, 8192, 4, EngineConfig(engine="vllm"), gpus=[H200]).options


def test_the_app_shows_the_refusal_like_other_refusals():
    at = run_app({"v": "1", "m": "qwen3.5-397b-a17b", "tp": "8", "g": "H200", "e": "sglang"})
    errors = plain(" ".join(e.value for e in at.error))
    assert "engine" in errors and "SGLang keeps recurrent states in a separate MambaPool" in errors
    assert "Plan this model with vLLM or the custom engine" in errors
    assert not at.metric  # no SGLang figures shown for it
    # switching the engine in the sidebar from vLLM to SGLang: the refusal, no traceback; back to vLLM plans again
    at = run_app({"v": "1", "m": "qwen3.5-397b-a17b", "tp": "8", "g": "H200"})
    tokens = metrics(at)["KV cache tokens"]
    at.sidebar.radio(key="w.engine").set_value("sglang").run()
    assert not at.exception
    assert "separate MambaPool" in plain(" ".join(e.value for e in at.error)) and not at.metric
    at.sidebar.radio(key="w.engine").set_value("vllm").run()
    assert not at.exception and metrics(at)["KV cache tokens"] == tokens


@pytest.mark.parametrize("page", ["pages/gpus.py", "pages/parallelism.py", "pages/paging.py", "pages/model.py"])
def test_every_page_survives_a_refused_sglang_hybrid(page):
    run_app({"v": "1", "m": "qwen3-next-80b-a3b", "tp": "4", "g": "H200", "e": "sglang"}, page=page)  # asserts no exception


def test_an_imported_sglang_line_of_a_hybrid_shows_the_refusal():
    from tests.test_app_engine_knobs import pasted

    at = pasted("python -m sglang.launch_server --model-path Qwen/Qwen3.5-397B-A17B --tp 8", "H200")
    assert "separate MambaPool" in plain(" ".join(e.value for e in at.error)) and not at.metric
    at.button(key="import.apply").click().run()
    assert not at.exception
    assert "separate MambaPool" in plain(" ".join(e.value for e in at.error)) and not at.metric
