"""The sixth UI audit's findings (qa2, 2026-12-02), each fixed and asserted with the plan's own numbers.

* Import's preview said "the sidebar and every other page still plan Llama-3.1-8B on H100-SXM" while the sidebar's
  own plan was refused (-tp 3: 32 heads do not split over 3 ranks): it now says the sidebar plans nothing and why.
* SGLang "its pool (1 tokens)" (--max-total-tokens 1) reads "(1 token)".
* The "Does not load" verdict printed "1023.17 GiB" (custom engine, Nemotron-3-Ultra bf16 on one H100): kvplan's own
  words now carry separators ("1,023.17 GiB"); the engine's error text after them keeps the engine's format.
* SGLang STANDALONE without a draft LM (MiniMax-M2.5: no smaller preset of its vocabulary) said "vLLM needs equal
  vocab_size ... refuses draft_model" and gave vLLM's CLI flag: now SGLang, STANDALONE, --speculative-algorithm.
* An SGLang hybrid (Qwen3.6-35B-A3B) with EAGLE3 was refused naming **speculative_config** (vLLM's flag): now
  --speculative-algorithm, as SGLang's other speculative refusals.
* Parallelism showed one refusal four times (once a compared layout): layouts refused alike now share one line.
* At 1400 px (e2e, tests/e2e/test_audit6_1400.py): the context placeholder and a long memory-chart title were cut.
"""

from tests.app_util import plain, run_app

IMPORT = "pages/import.py"


def test_import_preview_does_not_say_the_sidebar_plans_a_refused_plan():
    at = run_app({"v": "1", "m": "llama-3.1-8b", "tp": "3"}, IMPORT)
    at.text_area(key="w.command").set_value("vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4").run()
    at.selectbox(key="w.import_gpu").select("H100-SXM").run()
    notes = [plain(i.value) for i in at.info if "Preview, not applied" in plain(i.value)]
    assert len(notes) == 1, [plain(i.value) for i in at.info]
    assert "still plan" not in notes[0]
    assert "are refused (**tensor_parallel_size**)" in notes[0] and "plan nothing now" in notes[0]
    # a sidebar that plans keeps the plain note
    ok = run_app({"v": "1", "m": "llama-3.1-8b"}, IMPORT)
    ok.text_area(key="w.command").set_value("vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4").run()
    ok.selectbox(key="w.import_gpu").select("H100-SXM").run()
    assert any("every other page still plan llama-3.1-8b on H100-SXM" in plain(i.value)
               for i in ok.info), [plain(i.value) for i in ok.info]


# ------------------------------------------------------------------ plurals and separators in kvplan's own words
def test_an_sglang_pool_of_one_token_reads_one_token():
    from tests.app_util import kvplan_plan

    # --max-total-tokens 1 caps SGLang's pool at 1 token (page size 1): "its pool (1 token)", not "(1 tokens)"
    p = kvplan_plan("llama-3.1-8b", engine="sglang", max_total_tokens=1)
    said = [w for w in p.warnings if w.startswith("SGLang starts, but its pool")]
    assert said == ["SGLang starts, but its pool (1 token) cannot hold one request of 131,072 tokens: such a "
                    "request waits or is retracted"]
    assert p.verdict == ("Does not fit: one request of 131,072 tokens needs more KV than the pool holds (1 token); "
                         "SGLang starts anyway, as it checks no request against its pool.")


def test_the_does_not_load_verdict_prints_gib_with_separators():
    from kvplan.units import GiB
    from tests.app_util import kvplan_plan

    # Nemotron-3-Ultra bf16 on one H100 with the custom engine: 1,023.17 GiB of weights (printed "1023.17 GiB")
    p = kvplan_plan("nemotron-3-ultra-550b-a55b", engine="custom")
    w = max(r.weights_bytes for r in p.ranks)
    assert f"{w / GiB:,.2f}" == "1,023.17"
    assert p.verdict.startswith("Does not load: the weights of one GPU (stage 0) are 1,023.17 GiB, more than the "
                                "79.19 GiB free on one H100-SXM (79.19 GiB); the engine runs out of CUDA memory")
    # vLLM: kvplan's verdict has separators, the torch error after it keeps torch's own format
    # (1,385.69 GiB before the DSA top-k buffer, 0.0625 GiB, and 0.33's 78 index groups, 0.61 GiB: kvplan.vllm_layouts)
    v = kvplan_plan("glm-5.1")
    assert v.verdict.startswith("Does not load: the weights of one GPU (stage 0) are 1,386.37 GiB")
    assert "GPU 0 has a total capacity of 79.19 GiB" in v.verdict and "are 1386.37 GiB" in v.verdict


def test_sglang_standalone_without_a_draft_says_sglang_and_standalone():
    # MiniMax-M2.5 (vocab_size 200,064): no smaller preset shares its vocabulary. On SGLang the sidebar said "vLLM
    # needs equal vocab_size ... every page refuses draft_model" and gave vLLM's --speculative-config
    at = run_app({"v": "1", "m": "minimax-m2.5", "e": "sglang", "g": "H200", "tp": "4", "spec": "draft_model"})
    at.session_state["kv.knobs"] = True
    at.run()
    said = [plain(i.value) for i in at.sidebar.info if "No preset shares" in plain(i.value)]
    assert said == ["No preset shares this model's vocabulary and is smaller (SGLang needs equal vocab_size): every "
                    "page refuses STANDALONE. Plan a draft's config.json with the CLI (kvplan plan ... --engine sglang "
                    "--speculative-algorithm STANDALONE --draft-config PATH)."], said
    vllm = run_app({"v": "1", "m": "minimax-m2.5", "g": "H200", "tp": "4", "spec": "draft_model"})
    vllm.session_state["kv.knobs"] = True
    vllm.run()
    assert any("(vLLM needs equal vocab_size): every page refuses draft_model" in plain(i.value)
               for i in vllm.sidebar.info)


def test_an_sglang_hybrid_with_speculative_decoding_is_refused_naming_sglangs_flag():
    # Qwen3.6-35B-A3B (30 of 40 layers linear attention) with EAGLE3 on SGLang: the Budget said "**speculative_config**"
    # (vLLM's flag); SGLang's is --speculative-algorithm
    at = run_app({"v": "1", "m": "qwen3.6-35b-a3b-nvfp4", "e": "sglang", "spec": "eagle3", "g": "B200"})
    said = [plain(e.value) for e in at.error]
    # (EAGLE3 stays refused on the hybrids; NEXTN / EAGLE on their MTP layer and NGRAM plan: test_sglang_qwen_mtp.py)
    assert len(said) == 1 and said[0].startswith("**--speculative-algorithm**: --speculative-algorithm EAGLE3 on "
                                                 "SGLang 0.5.21"), said
    assert "qwen3.6-35b-a3b-nvfp4: 30 of 40 layers keep a recurrent state (30 linear_attention)" in said[0], said


def test_parallelism_shows_one_refusal_for_layouts_refused_alike():
    # the same hybrid + EAGLE3 refusal was shown four times on Parallelism, once for each compared layout
    at = run_app({"v": "1", "m": "qwen3.6-35b-a3b-nvfp4", "e": "sglang", "spec": "eagle3", "g": "B200"},
                 "pages/parallelism.py")
    said = [plain(e.value) for e in at.error]
    assert len(said) == 1, said
    assert said[0].startswith("TP1 PP1 DP1, TP2 PP1 DP1, TP4 PP1 DP1, TP8 PP1 DP1: --speculative-algorithm: "
                              "--speculative-algorithm EAGLE3 on SGLang 0.5.21"), said
    assert "qwen3.6-35b-a3b-nvfp4: 30 of 40 layers keep a recurrent state" in said[0], said
    # layouts refused for different reasons keep their own lines (minimax-m2.5: TP8 splits FP8 blocks, the rest plan)
    mm = run_app({"v": "1", "m": "minimax-m2.5", "g": "H200"}, "pages/parallelism.py")
    assert [plain(e.value).split(":")[0] for e in mm.error] == ["TP8 PP1 DP1"]
