"""SGLang speculative decoding in the web app: the sidebar offers SGLang's NEXTN / EAGLE on the checkpoint's MTP layers
("mtp"), NGRAM and EAGLE3 with a shipped head with the engine SGLang (tests/test_sglang_eagle3_plan.py), --speculative-num-steps as the
steps knob; the link carries them (``spec``, ``nspec``); Import reads a public launch_server line's --speculative-*
flags and Apply puts them in the sidebar; the Budget page shows the core's plan and start-up lines (the CLI's for the
same flags); what the core refuses (a release before 0.5.14, a hybrid) is refused naming --speculative-algorithm.

Numbers by hand (the deepseek-v3 preset, 61 MLA layers of kv_lora_rank 512 + rope 64, num_nextn_predict_layers 1; bf16
latent cache): SGLang's cell (MLA, not split by TP) is 61 x 576 x 2 = 70,272 B a token; from 0.5.14 the draft's layer
joins it (pool_configurator.py: cell += int(70,272 x 1 / 61) = 1,152) -> 71,424 = 62 x 576 x 2. Its MTP layer's TP-8
shard, 1,661,046,944 B (tests/test_app_engine_knobs.py), loads before the pool is profiled, and so do the draft's own
embed_tokens / lm_head (2 x 129,280 / 8 x 7,168 x 2 B = 463,339,520 B, freed only after the pools: sgl-project/sglang
issue #36452, kvplan.sglang.mtp_draft_vocab_copy_bytes), so the pool has exactly that much less; SGLang 0.5.20 adds no
speculative reserve, so the rest is the same plan's less the MTP layer and the copies: (44,386,014,909 - 463,339,520)
// 71,424 = 614,956 tokens (44,641,867,453 and 618,538 before SGLang's MLA w_kc / w_vc, 61 x 512 x 16 x 256 x 2 B =
255,852,544 B a rank, were priced: kvplan.sglang.mla_absorb_bytes). The start-up log reads max_running_requests=48 (speculative decoding without
--max-running-requests).
"""

from kvplan.cli import main
from kvplan.presets import preset_config
from kvplan.web.state import PlanState, decode, encode, encode_config
from tests.app_util import html_tables, kvplan_plan, metrics, plain, run_app, state

MTP_SHARD = 1_661_046_944
VOCAB_COPIES = 2 * 129_280 // 8 * 7_168 * 2  # 463,339,520
CELL, CELL_MTP = 61 * 576 * 2, 62 * 576 * 2
V3 = {"v": "1", "m": "deepseek-v3", "g": "H200", "tp": "8", "e": "sglang"}
CORE = dict(preset="deepseek-v3", gpu="H200", tp=8, engine="sglang")
# sgl-project/sglang docs/basic_usage/deepseek_v3.md @0f4513c2f46be5ae1e0d9bf0a8f7b5471a8b3d16 ("Multi-token
# Prediction"), verbatim but for the line continuations
DOCS_LINE = ("python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3-0324 --speculative-algorithm EAGLE "
             "--trust-remote-code --tp 8")


def open_knobs(at):
    at.session_state["kv.knobs"] = True
    return at.run()


def terms(at) -> dict[str, int]:
    rows = next(t for t in html_tables(at) if t and "term" in t[0])
    return {r["term"]: int(r["bytes"].replace(",", "")) for r in rows if r["bytes"].replace(",", "").isdigit()}


def log(at) -> str:
    return "\n".join(c.value for c in at.code)


def errors(at) -> str:
    return plain(" ".join(e.value for e in at.error))


def test_sidebar_sglang_mtp_plans_what_the_cli_plans(capsys):
    at = open_knobs(run_app(V3))
    box = at.selectbox(key="w.speculative_method")
    assert box.options == ["none", "NEXTN / EAGLE (MTP)", "NGRAM", "EAGLE3 (head)", "STANDALONE (LM)"]  # no EAGLE (1)
    assert any("EAGLE (1) heads are planned from their config.json with the CLI only" in plain(c.value)
               for c in at.sidebar.caption)
    base = metrics(at)["KV cache tokens"]
    box.select("mtp").run()
    at.number_input(key="w.num_speculative_tokens").set_value(3).run()
    assert not at.exception and not at.error
    assert (state(at).speculative_method, state(at).num_speculative_tokens) == ("mtp", 3)
    assert at.query_params["spec"] == "mtp" and at.query_params["nspec"] == "3"
    assert main(["plan", "deepseek-v3", "--gpu", "H200", "-tp", "8", "--engine", "sglang", "--mtp-tokens", "3"]) == 0
    cli = capsys.readouterr().out
    core = kvplan_plan(**CORE, speculative_method="mtp", num_speculative_tokens=3)
    plain_plan = kvplan_plan(**CORE)
    tokens = core.kv_cache_tokens
    assert f"#tokens: {tokens}," in cli and metrics(at)["KV cache tokens"] == f"{tokens:,}" == "614,956"
    assert base == f"{plain_plan.kv_cache_tokens:,}"
    rank, plain_rank = core.ranks[0], plain_plan.ranks[0]
    assert (rank.kv_bytes_per_token, plain_rank.kv_bytes_per_token) == (CELL_MTP, CELL) == (71_424, 70_272)
    assert terms(at)["MTP layers (in weights)"] == MTP_SHARD
    # the draft's weights and its vocab copies before the profile
    assert plain_rank.kv_pool_bytes - rank.kv_pool_bytes == MTP_SHARD + VOCAB_COPIES == 2_124_386_464
    assert tokens == rank.kv_pool_bytes // CELL_MTP and plain_plan.kv_cache_tokens == plain_rank.kv_pool_bytes // CELL
    shown = log(at)  # the Budget page's start-up log: the core's lines, the CLI's
    assert shown.splitlines() == core.engine_log and all(line in cli for line in core.engine_log)
    assert f"#tokens: {tokens}," in shown
    assert "max_running_requests=48," in shown and "max_running_requests=48," not in "\n".join(plain_plan.engine_log)
    # the steps change no SGLang pool (0.5.14+): the same tokens with 1 step
    at.number_input(key="w.num_speculative_tokens").set_value(1).run()
    assert metrics(at)["KV cache tokens"] == "614,956" and "nspec" not in at.query_params


def test_a_release_before_0_5_14_is_refused_in_the_sidebar_and_the_link():
    at = open_knobs(run_app({**V3, "sv": "0.5.10"}))
    at.selectbox(key="w.speculative_method").select("mtp").run()
    assert not at.exception and state(at).speculative_method == "none"  # the last valid plan kept
    assert "sizes the target's KV pool before it loads the draft" in errors(at)
    at = run_app({**V3, "sv": "0.5.10", "spec": "mtp"})  # a link: the refusal, naming the flag, and no plan
    assert "**--speculative-algorithm**: SGLang 0.5.10 - 0.5.13 sizes the target's KV pool" in errors(at)
    assert "KV cache tokens" not in metrics(at)


def test_link_round_trip_and_a_tampered_value():
    s = PlanState(model="deepseek-v3", gpu="H200", tensor_parallel_size=8, engine="sglang", speculative_method="ngram",
                  num_speculative_tokens=4)
    link = {**V3, "spec": "ngram", "nspec": "4"}
    assert encode(s) == link and decode(link) == (s, [])
    at = run_app(link)
    assert state(at) == s and dict(at.query_params) == link
    # NGRAM loads nothing: the pool is the plain plan's; SGLang asks for 48 running requests
    assert metrics(at)["KV cache tokens"] == f"{kvplan_plan(**CORE).kv_cache_tokens:,}"
    assert "max_running_requests=48," in log(at)
    bad, warned = decode({**link, "nspec": "65"})
    assert bad.num_speculative_tokens == 1 and len(warned) == 1
    assert warned[0].startswith("Link parameter 'nspec'") and "must be from 1 to 64" in warned[0]


def test_import_of_the_docs_line_applies_mtp_to_the_sidebar():
    # no network: DeepSeek-V3-0324's config.json given as if fetched (the deepseek-v3 preset's: the same architecture)
    at = run_app({"v": "1", "cfg": encode_config(preset_config("deepseek-v3")), "mn": "deepseek-ai/DeepSeek-V3-0324"},
                 page="pages/import.py")
    at.text_area(key="w.command").set_value(DOCS_LINE).run()
    at.selectbox(key="w.import_gpu").select("H200").run()
    assert not at.exception and not at.error
    flags = {r["flag"]: r["value"] for r in html_tables(at)[0]}
    # EAGLE with no draft path on DeepSeek-V3: its own MTP layers, SGLang's default 3 steps
    assert flags["--speculative-algorithm"] == "NEXTN / EAGLE (MTP layers), 3 steps (default)"
    # --dtype auto (not given): what auto is, not "engine default"
    assert flags["--quantization / --dtype"] == ("auto: the checkpoint's torch_dtype (bf16), weights as its "
                                                 "quantization_config (fp8-block)")
    assert not [w for w in at.warning if "speculative" in w.value]
    assert metrics(at)["KV cache tokens"] == "614,956"
    at.button(key="import.apply").click().run()
    s = state(at)
    assert (s.engine, s.tensor_parallel_size, s.speculative_method, s.num_speculative_tokens) == ("sglang", 8, "mtp", 3)
    at.switch_page("pages/budget.py").run()
    assert metrics(at)["KV cache tokens"] == "614,956" and terms(at)["MTP layers (in weights)"] == MTP_SHARD
    assert open_knobs(at).selectbox(key="w.speculative_method").value == "mtp"


def test_import_refuses_what_the_core_does_not_plan_naming_the_flag():
    at = run_app(page="pages/import.py")
    at.selectbox(key="w.import_gpu").select("H200").run()
    for line, why, flag in [
        # a hybrid kvplan plans no speculation for (Qwen3.5 / Qwen3.6 with NEXTN / EAGLE / NGRAM are planned)
        ("python -m sglang.launch_server --model-path Qwen/Qwen3-Next-80B-A3B-Instruct --tp 4 --speculative-algorithm "
         "NGRAM",
         "--speculative-algorithm NGRAM on SGLang 0.5.21 - 0.5.23",
         "--speculative-algorithm"),
        # a head kvplan ships no config for: refused naming the draft path and the heads it ships
        ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --speculative-algorithm EAGLE3 "
         "--speculative-draft-model-path jamesliu1/sglang-EAGLE3-Llama-3.1-Instruct-8B",
         "kvplan ships no config for this EAGLE3 head (it ships lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B",
         "--speculative-draft-model-path"),
        ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --speculative-algorithm EAGLE3",
         "EAGLE3 needs its draft head", "--speculative-draft-model-path"),
        ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --speculative-algorithm "
         "STANDALONE --speculative-draft-model-path someone/private-1b",
         "kvplan ships no preset for this draft model", "--speculative-draft-model-path"),
        ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --speculative-algorithm NEXTN",
         "no multi-token-prediction layers", "--speculative-algorithm"),
        # an EAGLE (1) head: kvplan ships none, so the draft path is named as not planned (the CLI plans its config)
        ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --speculative-algorithm EAGLE "
         "--speculative-draft-model-path lmsys/sglang-EAGLE-LLaMA3-Instruct-8B",
         "kvplan ships no EAGLE (1) head, so this draft path is not planned", "--speculative-draft-model-path"),
        # DeepSeek-V4 with NGRAM: SGLang refuses it (EAGLE on its MTP layer is planned: tests/test_sglang_dsv4_spec.py)
        ("python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V4-Flash --speculative-algorithm NGRAM "
         "--tp 4", "'ngram' on DeepSeek-V4: SGLang refuses it", "--speculative-algorithm")]:
        at.text_area(key="w.command").set_value(line).run()
        assert not at.exception and flag in errors(at) and why in errors(at), line
        assert "KV cache tokens" not in metrics(at)


def test_dtype_auto_says_what_it_serves():
    from kvplan.web.views import auto_dtype

    assert auto_dtype(PlanState()) == "auto: the checkpoint's torch_dtype (bf16)"  # Llama-3.1-8B
    # gemma-2-9b ships float32: vLLM takes the GPU's first 16-bit dtype (bf16 from sm80); SGLang float16, but bfloat16
    # for a Gemma (model_config.py _get_and_verify_dtype)
    assert auto_dtype(PlanState(model="gemma-2-9b")) == \
        "auto: the checkpoint's torch_dtype fp32, served as bf16 (vLLM downcasts float32)"
    # a float32 Llama (llama-3.2-1b's config with torch_dtype float32): fp16 in V0 (0.6) and in SGLang, bf16 in V1
    fp32 = PlanState(config=encode_config({**preset_config("llama-3.2-1b"), "torch_dtype": "float32"}),
                     model_name="me/llama-fp32")
    assert [auto_dtype(fp32.model_copy(update=u)).split("served as ")[1] for u in
            ({}, {"vllm_version": "0.6"}, {"engine": "sglang"})] == \
        ["bf16 (vLLM downcasts float32)", "fp16 (vLLM downcasts float32)", "fp16 (SGLang downcasts float32)"]
    assert auto_dtype(PlanState(model="gemma-2-9b", engine="sglang")) == \
        "auto: the checkpoint's torch_dtype fp32, served as bf16 (SGLang downcasts float32)"
