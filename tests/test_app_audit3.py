"""The third audit of the web app (an ML platform engineer who reads vLLM's start-up log line by line): the
Budget's pool formula subtracts what the release subtracts (the V2 sampler state was missing, so the shown
numbers did not add up to the pool), the engine's own start-up lines are on the Budget and Import pages,
captions name the engine's release line (not a bare "engine vllm"), SGLang figures are not called vLLM's,
SGLang's paging has bytes, and a refused local checkpoint is never called the planned one."""

from kvplan.units import GiB
from kvplan.web import formulas, views
from tests.app_util import kvplan_plan, plain, run_app

LOG_TITLE = "What vLLM 0.33 logs at start-up"


def _pool_words(latex: str) -> list[str]:
    """The terms the pool formula subtracts, in order: '\\text{pool} &= \\text{requested} - \\text{a} - ...\\\\'."""
    line = latex.split(r"\text{pool} &= \text{requested}")[1].split(r"\\")[0]
    return [w.split("}")[0] for w in line.split(r" - \text{")[1:]]


def test_the_pool_formula_subtracts_the_v2_sampler_state_and_adds_up():
    # Llama-3.1-8B on an H100, vLLM 0.33 (V2 model runner): 72.85 - 14.99 - 0.98 - 0.25 - 0.52 - 0.62 = 55.50 GiB
    # (the CUDA-graph estimate from the model's shape, kvplan.engines.cuda_graph_bytes: FA3's 262 MiB first FULL
    # capture + 100 graphs x 32 layers x 120 KiB = 637 MiB; 0.71 GiB / 55.41 with the old fixed fit).
    # Before: "- 0.25 - 0.71 = 55.41" with the 0.52 GiB V2 sampler state (558,170,112 B) left out: 0.51 GiB short.
    p = kvplan_plan("llama-3.1-8b")
    latex = formulas.budget_formulas(p)[0][1]
    assert _pool_words(latex) == ["weights", "activations", "non-torch", "V2 sampler state", "CUDA graphs"]
    assert r"- 0.52\,\text{GiB} - 0.62\,\text{GiB} = 55.50\,\text{GiB}" in latex
    rank = p.ranks[0]
    subtracted = [t.bytes for t in rank.terms if t.applied and not t.name.startswith(("device", "outside"))]
    outside = next(t.bytes for t in rank.terms if t.name.startswith("outside the budget"))
    assert rank.device_bytes - outside - sum(subtracted) == rank.kv_pool_bytes == 59_587_947_280
    assert next(t.bytes for t in rank.terms if t.name.startswith("V2 sampler state")) == 558_170_112


def test_a_cuda_graph_estimate_the_release_does_not_subtract_is_not_in_the_formula():
    # vLLM 0.23 (V2 for Llama, no graph estimate through 0.28.0): 72.85 - 14.99 - 0.98 - 0.25 = 56.64 GiB; the
    # graphs (0.71 GiB, "not subtracted" in the table) were shown as "- 0.00 GiB".
    latex = formulas.budget_formulas(kvplan_plan("llama-3.1-8b", vllm_version="0.23"))[0][1]
    assert _pool_words(latex) == ["weights", "activations", "non-torch"]
    assert r"- 0.25\,\text{GiB} = 56.64\,\text{GiB}" in latex and "0.00" not in latex


def test_budget_shows_the_start_up_log_with_its_release_and_model_runner():
    at = run_app({"v": "1"})
    assert LOG_TITLE in [s.value for s in at.subheader]
    log = at.code[0].value.splitlines()
    # 55.50 GiB / (32 layers x 65,536 B) = 28,413 blocks; 28,413 / 8,192 blocks per request x 131,072 = 454,608
    assert log == ["Model loading took 14.99 GiB", "Estimated CUDA graph memory: 0.62 GiB total",
                   "Available KV cache memory: 55.50 GiB",
                   "GPU KV cache size: 454,608 tokens, Maximum concurrency for 131,072 tokens per request: 3.47x",
                   "num_gpu_blocks is: 28413"]
    assert any("the V2 GPU model runner" in c.value for c in at.caption)
    # the caption over the metrics names the release, not a bare "engine vllm"
    assert "vLLM 0.33, context 131,072 tokens" in plain(at.caption[0].value)


def test_a_release_before_the_v2_runner_says_v1_and_its_caption_says_v0():
    at = run_app({"v": "1", "vv": "0.22"})  # 0.22.0 runs V2 for Qwen3 only: Llama stays on V1
    assert any("the V1 GPU model runner" in c.value for c in at.caption)
    at = run_app({"v": "1", "vv": "0.7"})
    assert "vLLM 0.7 (V0 engine), context" in plain(at.caption[0].value)
    assert "What vLLM 0.7 (V0 engine) logs at start-up" in [s.value for s in at.subheader]
    assert not any("model runner" in c.value for c in at.caption)  # V0 has no V1 / V2 runner


def test_a_failed_start_log_ends_with_the_engines_error():
    # Gemma-3-27B text-only on one H100 at 131,072 tokens: 17.98 GiB of KV needed, 17.21 GiB available (core's plan;
    # 17.30 before 0.21+'s 20 MiB max split at load kept each >= 20 MiB tensor's whole 2 MiB segment, kvplan.vllm_alloc;
    # 17.55 with the fixed 0.71 GiB CUDA-graph fit, not the model-shaped 0.97: FA3's 262 MiB first FULL capture +
    # 100 graphs x 62 layers x 120 KiB, kvplan.engines.cuda_graph_bytes; 17.62 before the caching-allocator rounding
    # joined the weights)
    at = run_app({"v": "1", "m": "gemma-3-27b-it", "lmo": "1"})
    log = at.code[0].value.splitlines()
    assert log[2] == "Available KV cache memory: 17.21 GiB"
    assert log[-1].startswith("ValueError: To serve at least one request with the models's max seq len (131072)")


def test_weights_larger_than_the_gpu_log_no_figures():
    # Llama-3.1-405B on one H100: 755.99 GiB of weights on a 79.19 GiB GPU (79.19 - 0.51 of CUDA context = 78.68 free
    # at load, the core's _load_oom) never get to "Model loading took"
    at = run_app({"v": "1", "m": "llama-3.1-405b"})
    assert not at.code
    assert any(c.value.startswith("No start-up figures: the weights of one GPU (755.99 GiB) are more than its "
                                  "memory free when loading starts (78.68 GiB of 79.19 GiB)") for c in at.caption)


def test_an_sglang_plan_logs_sglangs_lines_and_names_its_release():
    at = run_app({"v": "1", "m": "llama-3.1-70b", "tp": "4", "e": "sglang"})
    assert "What SGLang 0.5.21 logs at start-up" in [s.value for s in at.subheader]
    assert "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 401621" in at.code[0].value
    assert "SGLang 0.5.21, context 131,072 tokens" in plain(at.caption[0].value)


def test_import_shows_the_commands_start_up_log():
    at = run_app({"v": "1", "cmd": "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 32768",
                  "ig": "H100-SXM"}, "pages/import.py")
    assert LOG_TITLE in [s.value for s in at.subheader]
    assert "Maximum concurrency for 32,768 tokens per request" in at.code[0].value


def test_parallelism_and_gpus_name_the_release_line():
    at = run_app({"v": "1", "m": "llama-3.1-70b", "tp": "4", "e": "sglang"}, "pages/parallelism.py")
    assert "context 131,072 tokens, SGLang 0.5.21." in plain(at.caption[0].value)
    at = run_app({"v": "1", "vv": "0.23"}, "pages/gpus.py")
    assert "(llama-3.1-8b, vLLM 0.23)" in plain(at.caption[0].value)


def test_sglang_layout_headings_do_not_call_its_figures_vllms():
    helps = {c.key: c.help for c in views.layout_columns("sglang")}
    assert "SGLang" in helps["max concurrency per replica"] and "vLLM" not in helps["max concurrency per replica"]
    assert "vLLM" not in helps["KV blocks"]
    assert views.layout_columns("vllm") is views.LAYOUT_COLUMNS
    at = run_app({"v": "1", "m": "llama-3.1-70b", "tp": "4", "e": "sglang"}, "pages/parallelism.py")
    table = next(h.proto.body for h in at.get("html") if "kv-table" in h.proto.body and "layout" in h.proto.body)
    assert "SGLang&#x27;s &#x27;#tokens&#x27;" in table and "vLLM&#x27;s num_gpu_blocks" not in table


def test_sglang_paging_has_bytes():
    # Llama-3.1-70B at TP 4 on SGLang: 80 layers x (K + V) x 2 KV heads per rank x 128 x 2 B = 81,920 B per token
    # (page size 1); the 8 default sequences take 1,092 tokens = 89,456,640 B = 85.31 MiB, no slot empty.
    # Before: "blocks of 1 tokens; bytes are shown only at that size", and no bytes.
    at = run_app({"v": "1", "m": "llama-3.1-70b", "tp": "4", "e": "sglang"}, "pages/paging.py")
    # (SGLang's word: a page of --page-size tokens, qa14)
    assert "At 81,920 B per page (tightest rank of the plan): 85.31 MiB allocated, 0 B of it in empty slots." in [
        c.value for c in at.caption]
    assert 1_092 * 81_920 / 2**20 == 85.3125
    # a vLLM hybrid grows --block-size 16 to its state page (Qwen3.5-27B: 784): the Paging page pages at 16, and says
    # that the plan's bytes are per 784-token block
    at = run_app({"v": "1", "m": "qwen3.5-27b", "bs": "16"}, "pages/paging.py")
    assert "The plan pages KV in blocks of 784 tokens (this page: 16); bytes are shown only at the plan's size." in \
        [c.value for c in at.caption]


def test_a_refused_local_folder_is_not_called_the_planned_weights(tmp_path, monkeypatch):
    monkeypatch.setenv("KVPLAN_CHECKPOINT_ROOT", str(tmp_path))
    at = run_app({"v": "1", "ckd": "../../etc"}, "pages/model.py")
    said = [plain(c.value) for c in at.caption]
    assert not any(s.startswith("The plan budgets the weights of the local folder") for s in said), said
    assert any(s.startswith("The plan budgets computed weights (kvplan's shard sums), not the local folder ../../etc: "
                            "its safetensors headers cannot be read") for s in said), said
    assert any("Refused local checkpoint folder (ckd)" in plain(e.value) for e in at.error)


def test_gib_of_the_formula_numbers():  # the hand numbers above, in GiB (2^30 B)
    assert f"{59_492_526_864 / GiB:.2f}" == "55.41" and f"{558_170_112 / GiB:.2f}" == "0.52"


def test_the_model_page_does_not_say_a_dropped_tower_is_loaded():
    # Gemma-3-27B with --language-model-only (vLLM): the Budget has no vision tower row, and the Model page said
    # "the Budget loads its weights"
    at = run_app({"v": "1", "m": "gemma-3-27b-it", "lmo": "1"}, "pages/model.py")
    notes = next(plain(i.value) for i in at.info if "vision_tower" in plain(i.value))
    assert "not in these counts: vision_tower (SigLIP); not loaded either: --language-model-only is set" in notes
    assert "the Budget loads its weights" not in notes
    # SGLang has no such flag: the link's lmo=1 is kept for vLLM, and SGLang's Budget loads the tower (846,120,672 B)
    at = run_app({"v": "1", "m": "gemma-3-27b-it", "lmo": "1", "e": "sglang"}, "pages/model.py")
    assert "the Budget loads its weights" in next(plain(i.value) for i in at.info if "vision_tower" in plain(i.value))


def test_a_sampler_warm_up_failure_logs_vllms_words_and_kvplans_figures_apart():
    # gpt-oss-120b on one H100, vLLM 0.11 at util 0.99 (kvplan.plan._warmup_error's worked number): 7.33 GiB needed,
    # 6.57 GiB free. The log block ends with vLLM's RuntimeError alone; kvplan's figures are a caption under it.
    at = run_app({"v": "1", "m": "gpt-oss-120b", "vv": "0.11", "gmu": "0.99"})
    log = at.code[0].value.splitlines()
    assert log[0] == "Model loading took 65.9285 GiB"  # four decimals before 0.14.0 (format_gib)
    assert log[-1] == ("RuntimeError: CUDA out of memory occurred when warming up sampler with 1024 dummy requests. "
                       "Please try lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.")
    assert "kvplan: 7.33 GiB needed after the KV cache and CUDA graphs, 6.57 GiB free." in \
        [plain(c.value) for c in at.caption]


def test_an_sglang_dp_attention_line_does_not_read_dp_size_1():
    from kvplan.web.commands import parse_command

    command = parse_command("python -m sglang.launch_server --model deepseek-ai/DeepSeek-V3.2 --tp 8 --dp 8 "
                            "--enable-dp-attention")
    rows = {r["flag"]: r["value"] for r in views.vllm_rows(command.args, command)}
    assert rows["--dp-size"] == "1 replica (the --dp 8 given is attention DP: --enable-dp-attention, below)"
    assert rows["--enable-dp-attention --dp"] == "8"
    plain_dp = parse_command("python -m sglang.launch_server --model-path Qwen/Qwen3-8B --dp 2")
    assert {r["flag"]: r["value"] for r in views.vllm_rows(plain_dp.args, plain_dp)}["--dp-size"] == "2"


def test_the_release_boxes_are_short_and_their_releases_wrap_below():
    at = run_app({"v": "1"})
    at.session_state["kv.knobs"] = True
    at.run()
    box = at.selectbox(key="w.vllm_version")
    # "0.33 (0.32.0 - 0.33.x (newest read)) - default" was cut at the sidebar's width
    assert box.format_func("0.33") == "0.33 (default)" and box.format_func("0.7") == "0.7 (V0 engine)"
    assert "vLLM releases 0.32.0 - 0.33.x" in [plain(c.value) for c in at.sidebar.caption]
    assert box.format_func("0.34") == "0.34"  # planned from estimates (kvplan.plan._extensible_budget): not the default
    box.select("0.25").run()
    assert "vLLM releases 0.25.0 - 0.25.1" in [plain(c.value) for c in at.sidebar.caption]
    at = run_app({"v": "1", "e": "sglang"})
    at.session_state["kv.knobs"] = True
    at.run()
    assert at.selectbox(key="w.sglang_version").format_func("0.5.21") == "0.5.21 (default)"
    assert "SGLang releases 0.5.21 - 0.5.23 (newest read)" in [plain(c.value) for c in at.sidebar.caption]


def _derived(at) -> dict[str, str]:
    import re

    body = next(h.proto.body for h in at.get("html") if "how it is counted" in h.proto.body)
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", r) for r in body.split("<tr>")[2:]]
    return {c[0]: c[1] for c in cells if len(c) >= 2}


def test_a_float32_checkpoint_shows_the_16_bit_weights_the_budget_plans():
    # google/gemma-2-9b ships torch_dtype float32: 9,241,705,984 parameters x 4 B = 36,966,823,936 B (34.43 GiB) as
    # shipped; vLLM's --dtype auto loads bf16, 2 B each = 18,483,411,968 B (17.21 GiB; the Budget's weights term 17.22
    # with the rotary tables); KV 42 layers x 8 heads x (256 + 256) x 2 B = 344,064 B / token, not 688,128
    rows = _derived(run_app({"v": "1", "m": "gemma-2-9b"}, "pages/model.py"))
    assert rows["weights in fp32"] == "36,966,823,936 B (34.43 GiB)"
    assert rows["weights as vLLM 0.33 loads them (bf16)"] == "18,483,411,968 B (17.21 GiB)"
    assert rows["KV cache per token as served (bf16)"] == "344,064 B (336.00 KiB)"
    assert 42 * 8 * 512 * 2 == 344_064 and 9_241_705_984 * 2 == 18_483_411_968
    # SGLang serves a float32 Gemma in bf16 too (model_type gemma*); a chosen --dtype float32 keeps 4 B: no extra row
    assert "weights as SGLang 0.5.21 loads them (bf16)" in _derived(run_app({"v": "1", "m": "gemma-2-9b", "e": "sglang"},
                                                                          "pages/model.py"))
    assert not any(k.startswith("weights as") for k in _derived(run_app({"v": "1", "m": "gemma-2-9b", "wf": "fp32"},
                                                                        "pages/model.py")))
    assert not any(k.startswith("weights as") for k in _derived(run_app({"v": "1"}, "pages/model.py")))  # bf16 already


def test_parallelism_counts_sglangs_attention_dp_groups_in_all_replicas():
    # DeepSeek-V3.2 on 8 x B200, SGLang --tp 8 --dp 8 --enable-dp-attention: 8 groups, each its own pool holding
    # 6 whole sequences of 163,840 tokens (6.17x) -> 48 in the deployment (kvplan.plan's warning: 8 x 6); the column
    # "sequences, all replicas" said 6. (SGLang's DSA default on SM >= 10 is an fp8_e4m3 KV cache with page 64 and the
    # trtllm backend's raw latent: 43,696,218,244 B of pool // (61 x (576 + 132) = 43,188 B) = 1,011,767 -> 1,011,712
    # tokens = 6.17 x 163,840; tests/test_sglang_dsa.py; 6.46x before SGLang's MLA w_kc / w_vc, whole on every rank
    # under DP attention (61 x 512 x 128 x 256 x 2 B = 1.91 GiB), were priced: kvplan.sglang.mla_absorb_bytes. It read 3 / 3.56x / 24 at the bf16 78,324 B a token kvplan
    # assumed before.)
    import re

    p = kvplan_plan("deepseek-v3.2", gpu="B200", tp=8, engine="sglang", dp_attention_size=8)
    assert p.max_num_seqs_at_len == 6 and f"{p.max_concurrency:.2f}" == "6.17"
    at = run_app({"v": "1", "e": "sglang", "m": "deepseek-v3.2", "g": "B200", "tp": "8", "dpa": "8"},
                 "pages/parallelism.py")
    table = next(h.proto.body for h in at.get("html") if "kv-table" in h.proto.body and "layout" in h.proto.body)
    row = next(r for r in table.split("<tr>") if "TP8 PP1 DP1" in r)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
    assert cells[1:4] == ["fits", "6.17x", "48"], cells


def test_no_fix_is_pointed_to_when_none_fits():
    # Llama-3.1-405B on one L4 (22 GiB): no checked fix fits (TP 8 x PP 2 holds 47.25 GiB a GPU in bf16, TP 8 x PP 2
    # in fp8 ~23.6), and the page said "A fix above that fits has one" over an empty list. (On one H100, since the
    # 2026-12 fixes, -tp 8 -pp 2 and -tp 8 --quantization fp8 fit: tests/test_verdicts_dec.py.)
    assert kvplan_plan("llama-3.1-405b", gpu="L4").suggestions == []
    at = run_app({"v": "1", "m": "llama-3.1-405b", "g": "L4"})
    said = [plain(c.value) for c in at.caption] + [plain(i.value) for i in at.info]
    assert not any("fix above" in s or "fixes above" in s for s in said), said
    assert any(s.startswith("No decode ceiling: this plan does not fit, so it decodes nothing. No single fix kvplan "
                            "checks fits") for s in said)
    assert any(s.startswith("No chart: not one sequence fits") and "more GPUs (TP x PP)" in s for s in said)
    # with fixes (GLM-5 on 8 x B200: a larger GPU, MI325X) the pointer stays
    at = run_app({"v": "1", "m": "glm-5", "g": "B200", "tp": "8"})
    assert any("A fix above that fits has one." in plain(c.value) for c in at.caption)


def test_a_hybrids_paging_bytes_say_they_are_one_groups():
    # Qwen3.5-27B on an H200, vLLM 0.33: 4 KV groups of 16 layers (3 linear_attention, 1 full_attention), 784-token
    # blocks of 16 x 3,211,264 B = 51,380,224 B. The 8 default sequences (17 to 300 tokens) take 8 full-attention
    # blocks = 392.00 MiB, and 3 state pages each besides: the caption gave the 392 MiB as the whole allocation.
    p = kvplan_plan("qwen3.5-27b", gpu="H200")
    assert p.ranks[0].bytes_per_block == 16 * 3_211_264 == 51_380_224 and p.block_size == 784
    at = run_app({"v": "1", "m": "qwen3.5-27b", "g": "H200"}, "pages/paging.py")
    said = next(c.value for c in at.caption if "per block" in c.value)
    assert said.startswith("At 51,380,224 B per block (one KV group's block, tightest rank of the plan): the "
                           "full-attention group's blocks take 392.00 MiB")
    assert said.endswith("The plan has 4 KV groups (3 linear_attention, 1 full_attention); every sequence also holds "
                         "blocks of the 3 others (a recurrent state: its state page), not counted here.")
    assert 8 * 51_380_224 == 392 * 2**20


def test_the_plan_csv_names_the_release_and_carries_the_start_up_log():
    import csv
    import io

    from kvplan.web.state import PlanState

    rows = list(csv.reader(io.StringIO(views.plan_csv(PlanState()))))
    assert ["plan", "engine_version", "0.33"] in rows and ["plan", "start_error", "None"] in rows
    assert ["engine log", "0", "Model loading took 14.99 GiB"] in rows
    assert ["engine log", "4", "num_gpu_blocks is: 28413"] in rows
    failed = list(csv.reader(io.StringIO(views.plan_csv(PlanState(model="llama-3.1-405b")))))
    # 405B on one H100: the weights (755.99 GiB) do not load, torch's OOM in load_model (tests/test_verdicts_dec.py)
    error = next(r[2] for r in failed if r[:2] == ["plan", "start_error"])
    assert error.startswith("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ... GPU 0 has a total "
                            "capacity of 79.19 GiB") and "755.99 GiB" in error
    assert not any(r[0] == "engine log" for r in failed)  # vLLM logs no figure before load_model


def test_a_generic_estimates_memory_charts_say_so_on_their_axis():
    import json

    from tests.app_util import figure
    from tests.test_app_ui_pages import GENERIC

    at = run_app(page="pages/model.py")
    at.text_area(key="model.paste").set_value(json.dumps(GENERIC)).run()
    at.button(key="model.use_paste").click().run()
    at.switch_page("pages/budget.py").run()
    for key in ("budget.ranks", "budget.context"):
        assert "generic-decoder estimate" in figure(at, key)["layout"]["yaxis"]["title"]["text"], key
    at.switch_page("pages/parallelism.py").run()
    assert figure(at, "parallel.ranks")["layout"]["yaxis"]["title"]["text"] == "GiB (generic-decoder estimate)"
    # a native model's axis stays the unit alone
    assert figure(run_app({"v": "1"}), "budget.context")["layout"]["yaxis"]["title"]["text"] == "GiB per GPU"


def test_a_fit_limit_past_the_sweep_is_ticked():
    # Nemotron-H-56B at TP 2: one request fits up to 842,400 tokens (405 attention blocks of 2,080; the state layers'
    # pages are per request), the sweep runs 512 .. 32,768 (4 x its 8,192 maximum); the axis reached the 'fits up
    # to' line with its last label at 32k
    import math

    from tests.app_util import figure

    fig = figure(run_app({"v": "1", "m": "nemotron-h-56b", "tp": "2"}), "budget.context")
    axis = fig["layout"]["xaxis"]
    assert 842_400 in axis["tickvals"] and axis["ticktext"][axis["tickvals"].index(842_400)] == "842,400"
    # and inside the range (log10 units): Plotly labels no tick on the range's very end
    assert axis["range"][0] < math.log10(512) and axis["range"][1] > math.log10(842_400)
    assert any(t.get("name") == "fits up to 842,400 tokens" for t in fig["data"])


def test_the_verdict_metric_says_load_or_start_as_the_verdict_does():
    # Llama-3.1-405B bf16 on one H100: 755.99 GiB of weights on a 79.19 GiB GPU -> the verdict opens "Does not load"
    # and the metric says so, not "does not fit"; a plan that fits still reads "fits"
    at = run_app({"v": "1", "m": "llama-3.1-405b"})
    assert next(m.value for m in at.metric if m.label == "Verdict") == "does not load"
    at = run_app({"v": "1", "m": "llama-3.1-8b"})
    assert next(m.value for m in at.metric if m.label == "Verdict") == "fits"
