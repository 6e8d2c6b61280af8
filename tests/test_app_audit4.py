"""The fourth UI audit's findings (issue #12), each fixed and asserted with the plan's own numbers.

* Import of a vLLM draft_model line (``--speculative-config '{"method": "draft_model", "model":
  "meta-llama/Llama-3.2-1B-Instruct", ...}'``): the draft, an instruct variant of the llama-3.2-1b preset, is read as
  that preset (as --model reads the target), and the table row says "draft model", not "draft head".
* Budget's "Bytes per block" formula for one vLLM group whose layers' pages differ (Llama-3.1-70B TP 4 + the
  Llama-3.2-1B draft): it read "96 x 16,384 B = 1,441,792 B" (96 x 16,384 is 1,572,864). By hand: the target's 80
  layers, 2 KV heads a rank x 128 x 2 (K, V) x 2 B x 16 tokens = 16,384 B each; the draft's 16 layers, 8 KV heads / TP 4
  = 2 x 64 x 2 x 2 B x 16 = 8,192 B each: 80 x 16,384 + 16 x 8,192 = 1,441,792 = 90,112 B/token x 16 tokens;
  38,455,511,005 B of pool // 1,441,792 = 26,672 blocks (26,921 before the CUDA-graph estimate took the model's shape:
  its term went 763,363,328 -> 1,122,500,608 B, the pool 359,137,280 B less).
* The vLLM pool formula with six subtracted terms (GLM-5 FP8 on 8 x H200: the DSA indexer workspace) ran 1,026 px wide
  in a 940 px column at 1400 px: the words and the numbers now take two lines each.
* SGLang's speculative select: its labels fit the 172 px box; a refused choice names --speculative-algorithm and the
  choice as the box shows it.
* SGLang's pool formula with MTP subtracts the draft's vocab copies (its terms added up to 41.58 GiB, not the 41.14 shown).
* MLA's "KV bytes per token" formula reads a latent a layer (it read H_kv (d_k + d_v) b with H_kv = 1).
* The "past max_position_embeddings" label of the context charts ends at the band's right edge (it ran off the chart).
* The Model page's "total parameters" row of a multimodal model says its towers are not in it.
* "Fits: 1 sequence" (it read "1 sequences"); SGLang's max_total_tokens placeholder and the custom all-reduce box fit.
"""

import math

from kvplan.web.cached import plan_for
from kvplan.web.formulas import budget_formulas
from kvplan.web.state import PlanState
from tests.app_util import figure, html_tables, metrics, plain, run_app, state

DRAFT_LINE = ("vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4 --speculative-config "
              """'{"method":"draft_model","model":"meta-llama/Llama-3.2-1B-Instruct","num_speculative_tokens":4}'""")
DRAFT_LINK = {"v": "1", "m": "llama-3.1-70b", "tp": "4", "spec": "draft_model", "dft": "llama-3.2-1b", "nspec": "4"}


def open_knobs(at):
    at.session_state["kv.knobs"] = True
    return at.run()


def formulas(at) -> str:
    return next(m.value for m in at.markdown if "$$" in m.value)


def test_import_of_a_draft_model_line_names_the_draft_model_and_applies_it():
    at = run_app(page="pages/import.py")
    at.text_area(key="w.command").set_value(DRAFT_LINE).run()
    at.selectbox(key="w.import_gpu").select("H100-SXM").run()
    assert not at.exception and not at.error, [e.value for e in at.error]  # the -Instruct draft was refused
    flags = {r["flag"]: r["value"] for r in html_tables(at)[0]}
    assert flags["--speculative-config"] == "draft_model, 4 tokens, draft model llama-3.2-1b"
    # 26,672 before the speculative CUDA-graph sizes (kvplan.engines.cuda_graph_sizes_by_mode, 0.33 V2 runner, q = 5):
    # the decode sizes 5, 10, 20, 280, 360, 440 join the 51 PIECEWISE sizes (57), FULL stays 51 (multiples of 5 up to
    # 500): 6 graphs x 80 layers x 120 KiB = 56.25 MiB, 39 blocks of 1,441,792 B
    assert metrics(at)["KV blocks"] == "26,633"
    at.button(key="import.apply").click().run()
    s = state(at)
    assert (s.speculative_method, s.drafter, s.num_speculative_tokens, s.tensor_parallel_size) == \
        ("draft_model", "llama-3.2-1b", 4, 4)
    assert at.query_params["dft"] == "llama-3.2-1b"


def test_the_bytes_per_block_formula_sums_unequal_pages():
    at = run_app(DRAFT_LINK)
    assert metrics(at)["KV blocks"] == "26,633"  # 57 + 51 graphs with 4 draft tokens (test above)
    text = formulas(at)
    assert r"\sum_{\text{96 layers}} \text{page}" in text
    assert r"90{,}112 \times 16\,\text{B} = 1{,}441{,}792\,\text{B}" in text  # 80 x 16,384 + 16 x 8,192
    assert r"96 \times 16{,}384" not in text and "largest 16,384 B: their sum" in text
    # equal pages keep the product: Llama-3.1-70B TP 4 alone, 80 x 16,384 = 1,310,720
    plain_70b = dict(budget_formulas(plan_for(PlanState(model="llama-3.1-70b", tensor_parallel_size=4))))
    assert plain_70b["Bytes per block"].endswith(r"= 80 \times 16{,}384\,\text{B} = 1{,}310{,}720\,\text{B}")


def test_a_pool_formula_of_six_terms_takes_two_lines():
    # GLM-5 TP 8 on H200 with block-FP8 experts and EP: vLLM's fp8 oracle gives FLASHINFER_CUTLASS on Hopper with EP
    # (kvplan.plan.vllm_fp8_moe_backend), whose FlashInferExperts keep only (8,192, 6,144) bf16 = 100,663,296 B in the
    # workspace manager; the DSA indexer's 1,071,579,136 B (202,752 x 8 x 5 rows x 132 B + 1 MiB) shares it: a
    # 970,915,840 B (0.90 GiB) sixth term. The activation peak is the forward: without the routed experts (their
    # intermediates are that held buffer) 8,192 x (4 x 6,144 + 45,056 / 8 + 24,576 / 8) x 2 = 545,259,520 + the
    # 100,663,296 held + the indexer's 536,870,912 dummy logits = 1,182,793,728 B (1.10 GiB; was 1.03, the forward
    # 570,425,344 + the logits, the held buffer missing under them: kvplan.plan.activation_estimate).
    # 5,030 x 6,491,904 B = 30.41 GiB (5,041 before).
    # (The URL {"wf": "fp8"} pinned here before, 5,029 blocks, is online per-tensor FP8: TRITON on Hopper, its
    # TritonExperts workspace 8,192 x 8 x 6,144 x 2 x 2 B = 1.5 GiB holds the indexer's buffer whole, the test below.)
    at = run_app({"v": "1", "m": "glm-5", "tp": "8", "g": "H200", "wf": "fp8-block", "ep": "1", "spec": "mtp",
                  "nspec": "3"})
    assert metrics(at)["KV blocks"] == "5,030"
    text = formulas(at)
    assert (r"\text{pool} &= \text{requested} - \text{weights} - \text{activations} - \text{non-torch}\\ &\quad"
            r" - \text{V2 sampler state} - \text{CUDA graphs} - \text{DSA indexer workspace}\\") in text
    # the numbers split at the same term: 128.63 - 92.97 - 1.10 - 1.30 | - 0.68 - 1.25 - 0.90 = 30.41 GiB
    assert r"- 1.30\,\text{GiB}\\ &\quad - 0.68\,\text{GiB} - 1.25\,\text{GiB} - 0.90\,\text{GiB} = 30.41" in text


def test_online_fp8_glm5_moe_workspace_holds_the_dsa_buffer():
    # {"wf": "fp8"}: --quantization fp8 (Fp8OnlineMoEMethod, per-tensor weights x dynamic per-tensor activations) takes
    # TRITON on Hopper (fused_moe/oracle/fp8.py 0.17.0 - 0.34.0); TritonExperts at TP 8 (K 6,144, N 2 x 2,048 / 8 =
    # 512, top-8): (8,192 x 8 x 6,144 + 8,192 x 8 x 6,144) x 2 = 1,610,612,736 B held, and the indexer's
    # 1,071,579,136 B fit inside that one workspace-manager buffer: no DSA term (was 1.00). It sits under the forward's
    # peak too: the forward without the routed experts 545,259,520 + the indexer's 536,870,912 dummy logits + the
    # held 1,610,612,736 = 2,692,743,168 B (2.51 GiB) is above the sampler's 417,857,536 + 1,610,612,736 (1.89, the
    # peak before kvplan.plan.activation_estimate held it under the forward too; 5,029 blocks before the TRITON
    # workspace, 5,052 with it under the sampler alone); 128.63 - 92.95 - 2.51 - 1.30 - 0.68 - 1.25 = 29.93 GiB =
    # 4,950 x 6,491,904 B
    at = run_app({"v": "1", "m": "glm-5", "tp": "8", "g": "H200", "wf": "fp8", "spec": "mtp", "nspec": "3"})
    assert metrics(at)["KV blocks"] == "4,950"
    text = formulas(at)
    assert r"\text{DSA indexer workspace}" not in text
    assert r"- 2.51\,\text{GiB} - 1.30\,\text{GiB} - 0.68\,\text{GiB} - 1.25\,\text{GiB} = 29.93" in text


def test_sglang_speculative_labels_and_a_refused_choice_naming_the_flag():
    at = open_knobs(run_app({"v": "1", "m": "llama-3.1-8b", "e": "sglang"}))
    box = at.selectbox(key="w.speculative_method")
    assert box.options == ["none", "NEXTN / EAGLE (MTP)", "NGRAM", "EAGLE3 (head)", "STANDALONE (LM)"]
    assert at.number_input(key="w.max_total_tokens").placeholder == "by device memory"
    assert at.checkbox(key="w.disable_custom_all_reduce").label == "disable custom all-reduce"
    before = metrics(at)["KV cache tokens"]
    box.select("mtp").run()
    shown = plain(" ".join(e.value for e in at.error))
    assert ("**Refused speculative decoding (--speculative-algorithm) = NEXTN / EAGLE (MTP)**: llama-3.1-8b: no "
            "multi-token-prediction layers to load") in shown
    assert "every page plans the last valid value (none) instead." in shown
    assert state(at).speculative_method == "none" and metrics(at)["KV cache tokens"] == before == "409,403"
    kept = open_knobs(run_app({"v": "1", "m": "llama-3.1-8b", "e": "sglang", "spec": "eagle"}))
    assert kept.selectbox(key="w.speculative_method").options[-1] == "eagle (not planned)"


def test_past_max_label_inside_the_chart_and_one_sequence_singular():
    # DeepSeek-V3 on SGLang: max_position_embeddings 163,840, one request fits up to 614,956 tokens (618,538 before
    # SGLang's MLA w_kc / w_vc were priced: kvplan.sglang.mla_absorb_bytes)
    at = run_app({"v": "1", "m": "deepseek-v3", "tp": "8", "g": "H200", "e": "sglang", "spec": "mtp", "nspec": "3"})
    label = next(a for a in figure(at, "budget.context")["layout"]["annotations"]
                 if a["text"].startswith("past max_position_embeddings"))
    assert label["text"] == "past max_position_embeddings (163,840)"
    assert label["xanchor"] == "right" and math.isclose(label["x"], math.log10(614_956))
    # the SGLang pool formula subtracts the MTP draft's vocab copies as the plan does (it left them out: 41.58 shown as
    # 41.14): 150,119,844,413 - 1,546,188,227 (context) - 16,937,396,805 (left free) - 87,056,970,944 (weights,
    # with SGLang's MLA w_kc / w_vc since kvplan.sglang.mla_absorb_bytes) - 193,273,528 (overhead) - 463,339,520 (vocab
    # copies) = 43,922,675,389 B = 40.91 GiB
    text = formulas(at)
    assert r"- \text{overhead} - \text{draft vocab copies}\\" in text
    assert r"- 81.08\,\text{GiB} - 0.18\,\text{GiB} - 0.43\,\text{GiB} = 40.91\,\text{GiB}" in text
    # MLA's bytes per token as a latent, not as K and V heads: 62 layers (61 + the MTP layer) x (512 + 64) x 2 B = 71,424
    assert r"\sum_{\text{layers}} (d_c + d_{rope})\, b = 71{,}424\,\text{B}" in text and "H_{kv}" not in text
    one = run_app({"v": "1", "m": "qwen3-vl-8b-instruct"})  # 1.45x at 262,144 tokens on one H100
    assert "Fits: 1 sequence of 262,144 tokens at once on the tightest rank." in [plain(s.value) for s in one.success]


def test_model_page_parameter_row_says_the_towers_are_not_in_it():
    at = run_app({"v": "1", "m": "qwen3-vl-8b-instruct"}, page="pages/model.py")
    rows = {r["quantity"]: r for t in html_tables(at) for r in t if "quantity" in r}
    total = rows["total parameters"]
    assert total["value"] == "8,190,735,360"  # the language model only
    assert total["how it is counted"] == ("exact sum over every weight tensor of the language model (not its vision / "
                                          "audio towers: below)")
    dense = {r["quantity"]: r for t in html_tables(run_app({"v": "1"}, page="pages/model.py")) for r in t
             if "quantity" in r}
    assert dense["total parameters"]["how it is counted"] == "exact sum over every weight tensor"  # llama-3.1-8b
