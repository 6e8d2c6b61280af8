"""The serving knobs that change memory travel through the app: a pasted command's -dcp, --speculative-config,
--language-model-only (vLLM) and --max-total-tokens / DP attention (SGLang) are planned on Import, carried by
Apply to the sidebar and the link, and a combination the core refuses is refused with the core's own words."""

import pytest

from kvplan.web.state import PlanState, decode, encode
from tests.app_util import html_tables, kvplan_plan, metrics, plain, run_app, state

PAGE = "pages/import.py"
DSV3 = "vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --max-model-len 32768"


def pasted(command: str, gpu: str = "H200"):
    at = run_app(page=PAGE)
    at.text_area(key="w.command").set_value(command).run()
    at.selectbox(key="w.import_gpu").select(gpu).run()
    assert not at.exception
    return at


def terms(at) -> dict[str, int]:
    """The Budget page's term table of the (first) rank: term -> bytes."""
    at.switch_page("pages/budget.py").run()
    assert not at.exception
    rows = next(t for t in html_tables(at) if t and "term" in t[0])
    out: dict[str, int] = {}
    for r in rows:
        out.setdefault(r["term"], int(r["bytes"].replace(",", "")))
    return out


def open_knobs(at):
    at.session_state["kv.knobs"] = True
    return at.run()


def test_dcp_is_planned_on_import_and_applied_to_the_sidebar_and_the_link():
    at = pasted(DSV3 + " -dcp 8")
    core = kvplan_plan("deepseek-v3", "H200", tp=8, max_model_len=32768, decode_context_parallel_size=8)
    # vLLM's tokens line x dcp_world_size: 41,491 blocks x 16 tokens (FLASH_ATTN_MLA, which supports DCP, on Hopper
    # from 0.18) x 8 = 5,310,848 ("GPU KV cache size: 5,310,848 tokens"); without -dcp the same pool is 663,856 tokens
    # (41,741 blocks, 5,342,848 / 667,856 tokens, before the held Triton workspace sat under the forward's peak too:
    # the forward without the routed experts 8,192 x (4 x 7,168 + 57,344 / 8 + 36,864 / 8) x 2 = 662,700,032 B is
    # above the V2 sampler's 382,205,952, kvplan.plan.activation_estimate: 280,494,080 B = 250 blocks of 1,124,352;
    # 43,163 blocks, 690,608 tokens, before the Triton block-FP8 MoE workspace Hopper keeps held from 0.17 was
    # counted, VLLM_CHANGES fp8_moe_hopper_triton: 1,422 blocks x 1,124,352 B = 1.49 GiB;
    # 43,855 blocks with the fixed 0.71 GiB CUDA-graph fit, not the model-shaped 1.44: FLASH_ATTN_MLA's split
    # accumulators 32 x 512 x 16 heads x 513 x 4 B + 4 MiB = 517 MiB + 100 graphs x 61 MoE layers x 160 KiB, kvplan
    # .engines.cuda_graph_bytes; 43,979 blocks before NCCL's TP-8 NVLS buffers were sized from nvls.cc, 8 x 16 x 2 MiB = 0.25 GiB, not the
    # TP-4 fit 0.12: 124 blocks of 16 x 70,272 B; 43,440 blocks before the 0.33 profile's V2 runner terms, kvplan.engines.vllm_model_runner: the V2 dummy sampler
    # holds the logits alone, its 0.52 GiB sampler state and the 0.22 GiB embedding copy of a cold compile count;
    # 44,207 before the 0.238 GiB of MLA W_UK / W_UV copies of the fp8 kv_b_proj, kvplan.vllm_layouts
    # .vllm_mla_dequant_bytes: 255,852,544 B / (16 x 70,272 B a block) = 227.6 blocks)
    assert core.kv_cache_tokens == 41_491 * 16 * 8 == 5_310_848 and core.num_blocks == 41_491
    assert metrics(at)["KV cache tokens"] == "5,310,848"
    assert kvplan_plan("deepseek-v3", "H200", tp=8, max_model_len=32768).kv_cache_tokens == 663_856
    flags = {r["flag"]: r["value"] for r in html_tables(at)[0]}
    assert flags["--decode-context-parallel-size"] == "8" and flags["--speculative-config"] == "engine default"
    at.button(key="import.apply").click().run()
    s = state(at)
    assert (s.model, s.gpu, s.tensor_parallel_size, s.decode_context_parallel_size) == ("deepseek-v3", "H200", 8, 8)
    assert at.query_params["dcp"] == "8"
    assert "--decode-context-parallel-size 8" in plain(" ".join(c.value for c in at.sidebar.caption))  # closed knobs
    open_knobs(at)
    assert at.number_input(key="w.decode_context_parallel_size").value == 8
    again = run_app(dict(at.query_params))  # the link plans it on the Budget page
    assert metrics(again)["KV cache tokens"] == "5,310,848"


def test_mtp_speculative_config_adds_the_mtp_layers_to_the_weights():
    spec = """ --speculative-config '{"method": "mtp", "num_speculative_tokens": 2}'"""
    at = pasted(DSV3 + spec)
    flags = {r["flag"]: r["value"] for r in html_tables(at)[0]}
    assert flags["--speculative-config"] == "mtp, 2 tokens"
    at.button(key="import.apply").click().run()
    s = state(at)
    assert (s.speculative_method, s.num_speculative_tokens) == ("mtp", 2)
    assert at.query_params["spec"] == "mtp" and at.query_params["nspec"] == "2"
    with_mtp = terms(at)
    base = kvplan_plan("deepseek-v3", "H200", tp=8, max_model_len=32768)
    core = kvplan_plan("deepseek-v3", "H200", tp=8, max_model_len=32768, speculative_method="mtp",
                       num_speculative_tokens=2)
    # DeepSeek-V3's one MTP layer (num_nextn_predict_layers 1), its TP-8 shard: 1,661,046,944 B
    assert core.ranks[0].weights_bytes - base.ranks[0].weights_bytes == 1_661_046_944
    assert with_mtp["MTP layers (in weights)"] == 1_661_046_944
    assert with_mtp["weights"] == core.ranks[0].weights_bytes


def test_the_import_table_shows_the_speculative_method_as_typed():
    # issue 12 QA: after Apply, a --speculative-config with method deepseek_mtp (or qwen3_next_mtp) read "mtp, 2 tokens":
    # kvplan's name for vLLM's MTP methods, not the one typed. The typed one is shown, kvplan's reading beside it.
    spec = """ --speculative-config '{"method": "deepseek_mtp", "num_speculative_tokens": 2}'"""
    at = pasted(DSV3 + spec)
    at.button(key="import.apply").click().run()
    assert (state(at).speculative_method, state(at).num_speculative_tokens) == ("mtp", 2)  # planned as before
    flags = {r["flag"]: r["value"] for r in html_tables(at)[0]}
    assert flags["--speculative-config"] == "deepseek_mtp (read as mtp), 2 tokens"
    # the MTP layer is planned as with method "mtp" (test_mtp_speculative_config_adds_the_mtp_layers_to_the_weights)
    assert terms(at)["MTP layers (in weights)"] == 1_661_046_944
    from kvplan.web.views import speculative_text

    assert speculative_text("mtp", "qwen3_next_mtp") == "qwen3_next_mtp (read as mtp)"
    assert speculative_text("eagle3", "eagle3") == "eagle3" and speculative_text("eagle3", None) == "eagle3"
    assert speculative_text("ngram", "[ngram]") == "[ngram] (read as ngram)"


def test_language_model_only_drops_the_vision_tower():
    cmd = "vllm serve Qwen/Qwen3-VL-8B-Instruct --max-model-len 32768"
    at = pasted(cmd, "H100-SXM")
    at.button(key="import.apply").click().run()
    tower = terms(at)
    assert tower["vision tower (in weights)"] == 1_152_776_672  # the ViT + mergers, 16-bit, TP 1
    at = pasted(cmd + " --language-model-only", "H100-SXM")
    at.button(key="import.apply").click().run()
    assert state(at).language_model_only and at.query_params["lmo"] == "1"
    lm = terms(at)
    assert "vision tower (in weights)" not in lm
    assert tower["weights"] - lm["weights"] == 1_152_776_672
    core = kvplan_plan("qwen3-vl-8b-instruct", max_model_len=32768, language_model_only=True)
    assert metrics(at)["KV blocks"] == f"{core.num_blocks:,}"


def test_sglang_max_total_tokens_and_dp_attention_are_carried():
    at = pasted("python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 --enable-dp-attention "
                "--dp 8 --max-total-tokens 100000 --speculative-algorithm NEXTN --speculative-num-steps 3")
    core = kvplan_plan("deepseek-v3", "H200", tp=8, engine="sglang", dp_attention_size=8, max_total_tokens=100_000)
    uncapped = kvplan_plan("deepseek-v3", "H200", tp=8, engine="sglang", dp_attention_size=8)
    assert core.kv_cache_tokens == 100_000 and uncapped.kv_cache_tokens == 228_508
    assert metrics(at)["KV cache tokens"] == "100,000"
    flags = {r["flag"]: r["value"] for r in html_tables(at)[0]}
    assert flags["--max-total-tokens"] == "100000" and flags["--enable-dp-attention --dp"] == "8"
    # NEXTN is planned (the MTP layers; tests/test_app_sglang_spec.py): the pool stays capped at 100,000 tokens
    assert flags["--speculative-algorithm"] == "NEXTN / EAGLE (MTP layers), 3 steps"
    at.button(key="import.apply").click().run()
    s = state(at)
    assert (s.engine, s.dp_attention_size, s.max_total_tokens, s.data_parallel_size) == ("sglang", 8, 100_000, 1)
    assert (s.speculative_method, s.num_speculative_tokens) == ("mtp", 3)
    assert at.query_params["dpa"] == "8" and at.query_params["mtt"] == "100000"
    open_knobs(at)
    keys = {w.key for kind in ("number_input", "selectbox", "checkbox") for w in at.sidebar.get(kind)}
    assert {"w.max_total_tokens", "w.dp_attention_size", "w.moe_dense_tp_size"} <= keys
    assert not keys & {"w.decode_context_parallel_size", "w.sampler"}  # vLLM's only
    assert at.selectbox(key="w.drafter").disabled  # SGLang's EAGLE3 head: off with NEXTN


def test_dcp_on_a_v0_line_is_refused_with_the_cores_message():
    at = pasted("VLLM_USE_V1=0 vllm serve meta-llama/Llama-3.1-8B-Instruct -tp 2 -dcp 2", "H100-SXM")
    errors = plain(" ".join(e.value for e in at.error))
    assert "V0 has no decode context parallelism (it came with 0.11)" in errors and not at.metric
    at.button(key="import.apply").click().run()
    assert any("Not applied" in plain(e.value) and "--decode-context-parallel-size" in plain(e.value)
               for e in at.error)
    assert state(at).decode_context_parallel_size == 1 and state(at).tensor_parallel_size == 1


def test_a_sidebar_knob_the_core_refuses_keeps_the_last_valid_plan_and_says_so():
    at = open_knobs(run_app({"v": "1", "tp": "2", "vv": "0.10"}))
    at.number_input(key="w.decode_context_parallel_size").set_value(2).run()
    assert not at.exception and state(at).decode_context_parallel_size == 1
    errors = plain(" ".join(e.value for e in at.error))
    assert "Refused decode_context_parallel_size" in errors
    assert "vLLM 0.10.0 - 0.10.1.1 has no decode context parallelism (it came with 0.11)" in errors
    assert "dcp" not in at.query_params
    assert metrics(at)["KV blocks"] == f"{kvplan_plan('llama-3.1-8b', tp=2, vllm_version='0.10').num_blocks:,}"
    # MTP on a model without MTP layers: the core's refusal, the plan without it
    at.selectbox(key="w.speculative_method").select("mtp").run()
    assert state(at).speculative_method == "none"
    assert "no multi-token-prediction layers" in plain(" ".join(e.value for e in at.error))
    assert any("Last valid plan" in plain(c.value) for c in at.caption)


def test_knobs_of_another_engine_are_kept_but_not_planned_and_said_so():
    at = open_knobs(run_app({"v": "1", "tp": "8", "m": "deepseek-v3", "g": "H200", "dcp": "8", "e": "sglang"}))
    assert not at.exception
    assert "not planned with sglang: --decode-context-parallel-size 8" in plain(
        " ".join(c.value for c in at.sidebar.caption))
    assert metrics(at)["KV cache tokens"] == f"{kvplan_plan('deepseek-v3', 'H200', tp=8, engine='sglang').kv_cache_tokens:,}"


LINK = {"v": "1", "dcp": "2", "ncar": "1", "smp": "flashinfer", "uc": "llm", "lmo": "1", "mmtp": "data",
        "spec": "ngram", "nspec": "4", "apc": "0", "mtt": "50000", "dpa": "2", "mdtp": "1"}


def test_the_link_round_trips_every_knob():
    s, warnings = decode(LINK)
    assert warnings == [] and encode(s) == LINK
    assert (s.decode_context_parallel_size, s.disable_custom_all_reduce, s.sampler, s.usage_context,
            s.language_model_only, s.mm_encoder_tp_mode, s.speculative_method, s.num_speculative_tokens,
            s.enable_prefix_caching, s.max_total_tokens, s.dp_attention_size, s.moe_dense_tp_size) == \
        (2, True, "flashinfer", "llm", True, "data", "ngram", 4, False, 50_000, 2, 1)
    at = run_app(dict(LINK, tp="2"))
    assert state(at) == s.model_copy(update={"tensor_parallel_size": 2}) and dict(at.query_params) == dict(LINK, tp="2")


@pytest.mark.parametrize(("key", "bad", "why"), [("dcp", "2000", "must be from 1 to 1,024"),
                                                 ("spec", "medusa", "must be one of none, mtp, ngram, eagle, eagle3, draft_model"),
                                                 ("nspec", "0", "must be from 1 to 64")])
def test_a_bad_knob_in_a_link_is_named(key, bad, why):
    s, warnings = decode({"v": "1", key: bad})
    assert s == PlanState() and len(warnings) == 1 and f"'{key}'" in warnings[0] and why in warnings[0]


def test_vllm_only_flags_on_an_sglang_line_are_named_not_planned():
    from kvplan.web import views
    from kvplan.web.commands import parse_command

    cmd = parse_command("python -m sglang.launch_server --model-path Qwen/Qwen3-8B --enable-prefix-caching "
                        "--disable-custom-all-reduce")
    assert views.unplanned_flags(cmd) == ["--enable-prefix-caching (True): a vLLM flag SGLang does not have: not "
                                          "planned with SGLang"]
    knobs = views.knob_values(cmd)
    assert knobs["disable_custom_all_reduce"] and knobs["enable_prefix_caching"] is None  # SGLang's flag carried


def test_the_gpus_page_ranks_only_layouts_dcp_divides():
    at = run_app({"v": "1", "m": "deepseek-v3", "tp": "8", "g": "H200", "dcp": "8"}, "pages/gpus.py")
    assert not at.error
    layouts = set(at.dataframe[0].value["layout"])
    assert layouts and all(text.startswith("TP8 ") for text in layouts)  # -dcp 8 must divide TP (the core's rule)
