"""QA pass with the SGLang engine selected (qa14b, 2026-12-03; issue 12): refusals name SGLang's own flags (--tp-size,
--context-length, --page-size, --max-running-requests, --pp-size, --dp-size), never the vLLM flag kvplan read them
as; the Budget counts SGLang's pool in pages (num_pages, bytes/page, page size); the sidebar, Parallelism, GPUs and
Model pages say SGLang's words; counts read "1 node", not "1 node(s)"; and the longest single request is the pool's,
not the search's old ceiling of 64 x the context."""

import pytest

from kvplan.errors import PlanInputError
from kvplan.presets import load_preset
from kvplan.web import commands, formulas, gpus_view, views
from tests.app_util import html_tables, kvplan_plan, metrics, plain, run_app

SGL = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct "


def _errors(at) -> list[str]:
    return [plain(e.value) for e in at.error]


# ------------------------------------------------------------------ 1. refusals in SGLang's flags

@pytest.mark.parametrize("flags, said", [
    # each read as vLLM's flag (commands.SGLANG_FLAGS) and refused by vLLM's parser: named as the line typed it
    ("--tp-size 0", "--tp-size: must be from 1 to 4096, got 0"),
    ("--tp 0", "--tp: must be from 1 to 4096, got 0"),  # SGLang's alias, as typed
    ("--tp-size abc", "--tp-size: expected a whole number, got 'abc'"),
    ("--pp-size 0", "--pp-size: must be from 1 to 4096, got 0"),
    ("--dp-size x", "--dp-size: expected a whole number, got 'x'"),
    ("--context-length -5", "--context-length: must be from 1 to 1,000,000,000, got -5"),
    ("--context-length 12q", "--context-length: expected a whole number (e.g. 8192 or 32k), got '12q'"),
    ("--page-size 0", "--page-size: expected a whole number of tokens, got '0'"),
    ("--max-running-requests 0", "--max-running-requests: must be from 1 to 10,000,000, got 0"),
    ("--chunked-prefill-size x", "--chunked-prefill-size: expected a whole number (e.g. 8192 or 32k), got 'x'"),
])
def test_an_sglang_lines_refusal_names_the_flag_it_typed(flags, said):
    with pytest.raises(PlanInputError) as refused:
        commands.parse_command(SGL + flags)
    assert str(refused.value) == said


def test_a_vllm_lines_refusal_keeps_vllms_flag():
    with pytest.raises(PlanInputError) as refused:
        commands.parse_command("vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 0")
    assert str(refused.value) == "--tensor-parallel-size: must be from 1 to 4096, got 0"


def test_the_import_page_shows_the_sglang_flag():
    at = run_app({"v": "1", "cmd": SGL + "--tp-size 0", "ig": "H100-SXM"}, "pages/import.py")
    assert "**--tp-size**: must be from 1 to 4096, got 0" in _errors(at)
    assert not [e for e in _errors(at) if "--tensor-parallel-size" in e]


def test_a_core_refusal_on_sglang_names_sglangs_flag_on_budget_and_parallelism():
    # Llama-3.1-8B's 32 attention heads over TP 3: refused on both engines; SGLang's flag is --tp-size
    assert _errors(run_app({"v": "1", "m": "llama-3.1-8b", "e": "sglang", "tp": "3"})) == [
        "**--tp-size**: 3 does not divide num_attention_heads (32)"]
    assert _errors(run_app({"v": "1", "m": "llama-3.1-8b", "tp": "3"})) == [
        "**tensor_parallel_size**: 3 does not divide num_attention_heads (32)"]  # vLLM's EngineArgs name, as before
    at = run_app({"v": "1", "m": "llama-3.1-8b", "e": "sglang", "lay": "1x1x1,3x1x1"}, "pages/parallelism.py")
    assert _errors(at) == ["TP3 PP1 DP1: --tp-size: 3 does not divide num_attention_heads (32)"]
    assert views.field_name("model", "sglang") == "model"  # not --model-path: a refused preset is not a flag


def test_the_sidebar_names_sglangs_flags_and_its_context_length():
    at = run_app({"v": "1", "m": "llama-3.1-8b", "e": "sglang"})
    boxes = {n.key: n for n in at.number_input}
    assert [boxes[f"w.{a}_parallel_size"].help for a in ("tensor", "pipeline", "data")] == [
        "--tp-size", "--pp-size", "--dp-size"]
    context = boxes["w.max_model_len"]
    assert context.label == "Context length (context_length)"  # SGLang's ServerArgs field
    assert context.help.startswith("--context-length, in whole tokens")
    assert boxes["w.concurrency"].help == "Sequences of context_length tokens served at once."
    context.set_value(0).run()
    assert _errors(at)[0] == ("**Refused context length (context_length) = 0**: must be from 1 to 100,000,000; every "
                              "page plans the model's maximum (131,072) instead.")
    # vLLM keeps its own
    boxes = {n.key: n for n in run_app({"v": "1", "m": "llama-3.1-8b"}).number_input}
    assert boxes["w.tensor_parallel_size"].help == "--tensor-parallel-size"
    assert boxes["w.max_model_len"].label == "Context length (max_model_len)"


# ------------------------------------------------------------------ 2. SGLang's pool in pages

def test_the_budget_counts_sglang_pages():
    at = run_app({"v": "1", "m": "llama-3.1-8b", "e": "sglang"})
    m = metrics(at)
    # Llama-3.1-8B on one H100, SGLang 0.5.21: floor(53,661,292,234 B / 131,072 B a page) = 409,403 one-token pages
    assert m["KV pages"] == "409,403" and "KV blocks" not in m
    latex = dict(formulas.budget_formulas(kvplan_plan("llama-3.1-8b", engine="sglang")))
    assert list(latex) == ["KV pool on the tightest rank", "Bytes per page", "KV pages", "Tokens and concurrency",
                           "KV bytes per token on a rank"]
    # 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 131,072 B a token, x page size 1
    assert latex["Bytes per page"] == (r"\text{bytes/page} = \text{bytes/token} \times \text{page size}"
                                       r" = 131{,}072 \times 1 = 131{,}072\,\text{B}")
    assert latex["KV pages"] == (r"\text{num\_pages} = \left\lfloor \frac{\text{pool}}{\text{bytes/page}}\right\rfloor"
                                 r" = \left\lfloor \frac{53{,}661{,}292{,}234}{131{,}072}\right\rfloor = 409{,}403")
    # 409,403 / 131,072 = 3.1235 -> 3.12
    assert latex["Tokens and concurrency"] == (
        r"\text{tokens} = \text{num\_pages} \times \text{page size} = 409{,}403 \times 1 = 409{,}403\qquad"
        r"\text{concurrency} = \frac{\text{tokens}}{L} = \frac{409{,}403}{131{,}072} = 3.12")
    assert not [v for v in latex.values() if "block" in v]
    # a 16-token page: bytes/page = 131,072 x 16 = 2,097,152
    latex = dict(formulas.budget_formulas(kvplan_plan("llama-3.1-8b", engine="sglang", block_size=16)))
    assert latex["Bytes per page"].endswith(r"= 131{,}072 \times 16 = 2{,}097{,}152\,\text{B}")
    # vLLM keeps blocks
    assert "KV blocks" in dict(formulas.budget_formulas(kvplan_plan("llama-3.1-8b")))


def test_no_pool_on_sglang_is_said_in_pages():
    # Llama-3.1-70B on one H100: 131.42 GiB of weights on a 79.19 GiB GPU, no pool sized
    latex = dict(formulas.budget_formulas(kvplan_plan("llama-3.1-70b", engine="sglang")))
    assert latex["KV pages, concurrency and tokens: none (no KV pool is sized)"] == (
        r"\text{not reached: the weights of one GPU do not load}\;\Rightarrow\;"
        r" \text{no KV pages, no concurrency, no KV cache tokens}")
    tiles = {t.label: t.value for t in run_app({"v": "1", "m": "llama-3.1-70b", "e": "sglang"}).metric}
    assert tiles["KV pages"] == "—"


def test_parallelism_heads_sglangs_pages_and_flags():
    cols = {c.key: c for c in views.layout_columns("sglang")}
    assert cols["KV blocks"].heading == "KV pages" and cols["layout"].help == "--tp-size x --pp-size x --dp-size"
    assert cols["KV heads per GPU"].help == "SGLang: max(1, num_key_value_heads // TP) (ModelConfig.get_num_kv_heads)."
    assert "context_length" in cols["max concurrency per replica"].help
    at = run_app({"v": "1", "m": "llama-3.1-70b", "e": "sglang", "tp": "4"}, "pages/parallelism.py")
    assert "KV pages" in html_tables(at)[0][0] and "KV blocks" not in html_tables(at)[0][0]
    # Qwen3-Next's 2 KV heads over TP 8: 8 // 2 = 4 ranks hold each head, by SGLang's rule (the same as vLLM's)
    assert views.replication_notes(load_preset("qwen3-next-80b-a3b"), 8, "sglang") == [
        "TP=8 > 2 KV heads: each rank keeps a whole KV head (SGLang max(1, kv_heads // tp)), so every KV head is "
        "stored on 4 ranks; the k/v projections are replicated the same way."]
    assert "(vLLM max(1" in views.replication_notes(load_preset("qwen3-next-80b-a3b"), 8)[0]


def test_the_gpus_page_helps_with_sglangs_flags():
    assert gpus_view.layout_help("sglang") == "TPn = --tp-size, PPn = --pp-size, xN = N data-parallel replicas (--dp-size)"
    assert gpus_view.layout_help() == ("TPn = --tensor-parallel-size, PPn = --pipeline-parallel-size, xN = N "
                                       "data-parallel replicas (--data-parallel-size)")
    assert [c.help for c in gpus_view.rejected_columns("sglang")][1:3] == ["--tp-size", "--pp-size"]


# ------------------------------------------------------------------ 3. the Model and Budget pages' other vLLM words

def test_sglang_mtp_and_tower_notes_name_sglangs_flags():
    at = run_app({"v": "1", "m": "deepseek-v3", "tp": "8", "g": "H200", "e": "sglang", "spec": "mtp"},
                 "pages/model.py")
    infos = [plain(i.value) for i in at.info]
    assert any("- not in these counts: 1 multi-token-prediction layer; planned with --speculative-algorithm NEXTN / "
               "EAGLE (drawn after the decoder in the strip above; the Budget's MTP layers row)" in i for i in infos)
    rows = {r["quantity"]: r for t in html_tables(at) for r in t if "quantity" in r}
    assert rows["KV cache per token with the MTP layer (auto)"]["how it is counted"] == (
        "+ 1 MTP layer --speculative-algorithm NEXTN / EAGLE loads, TP=1")
    # Gemma-3-27B's SigLIP tower: SGLang has no --mm-encoder-tp-mode; --language-model-only only from 0.5.18
    def tower(version):
        p = kvplan_plan("gemma-3-27b-it", tp=2, engine="sglang", sglang_version=version)
        return next(t.source for t in p.ranks[0].terms if t.name.startswith("vision tower"))
    assert tower("0.5.21") == ("vision_tower (SigLIP) + multi_modal_projector: this rank's shard, 16-bit (its linears "
                               "split over TP as the LM's are; --language-model-only drops it)")
    assert tower("0.5.14").endswith("16-bit (its linears split over TP as the LM's are)")


def test_sglang_fixes_count_nodes_in_words():
    # Llama-3.1-70B on one H100 does not load; its checked fixes on SGLang, each on one node of 8
    assert kvplan_plan("llama-3.1-70b", engine="sglang").suggestions == [
        "--tp-size 4: 3 x 131,072 tokens fit on 4 GPUs (1 node)",
        "--tp-size 2 --quantization fp8: 1 x 131,072 tokens fit on 2 GPUs (1 node)"]


# ------------------------------------------------------------------ 4. the longest request is the pool's

@pytest.mark.parametrize("engine, starts", [
    # Llama-3.2-1B at 8,192 on one H100: vLLM 0.33 has 138,665 blocks of 16, one the null block:
    # 138,664 x 16 = 2,218,624 (it read 524,288 = 64 x 8,192, the search's ceiling); 141,236 on 0.32, before 0.33.0's
    # V2 sampler pass (1,024 x 128,256 x 14 + 1 MiB + 8,192 x 2,048 x 2 = 1,873,281,024 B of peak vs the compile
    # copy's 525,336,576: 1,347,944,448 B = 2,571 blocks of 524,288 less)
    ("vllm", 138_664 * 16),
    # SGLang 0.5.21: 2,052,312 one-token pages, the whole pool (SGLang keeps no null page)
    ("sglang", 2_052_312),
])
def test_the_longest_request_is_the_pools_not_the_searchs_ceiling(engine, starts):
    p = kvplan_plan("llama-3.2-1b", engine=engine, max_model_len=8192)
    assert p.max_model_len_that_starts == starts > 64 * 8192
    note = views.tokens_note(p)
    if engine == "vllm":
        assert note.endswith("16 tokens fewer: vLLM keeps one block (16 tokens) as its null block, which no request "
                             "can use.")
    else:
        assert p.kv_cache_tokens == starts and note is None  # nothing to explain: the pool is the longest request


def test_the_measured_weights_box_reads_sglangs_own_log_line():
    from kvplan.web import weights_view
    from kvplan.web.widgets import KNOBS

    at = run_app({"v": "1", "m": "llama-3.1-8b", "e": "sglang"})
    at.session_state[KNOBS] = True
    box = next(n for n in at.run().number_input if n.key == "w.weights_gib")
    # SGLang logs "Load weight end. avail mem=... GB, mem usage=X GB"; kvplan.sglang.budget takes it overhead and all
    assert box.label == "Load weight mem usage (GiB)" and box.help.startswith(
        "SGLang's start-up line 'Load weight end. avail mem=... GB, mem usage=X GB' (per GPU; SGLang's GB is 2^30 "
        "bytes)")
    assert "vLLM" not in box.help and "Model loading took" not in box.help
    box.set_value(0.0).run()  # refused (must be above 0), by SGLang's name for it
    assert any(e.startswith("**Refused load weight mem usage (GiB) = 0**") for e in _errors(at)), _errors(at)
    assert weights_view.typed_words("vllm") == "typed 'Model loading took' figure"
    assert weights_view.typed_words("sglang") == "typed 'Load weight mem usage' figure"


def test_sglang_paging_bytes_name_layers_and_pages_of_many_tokens():
    # Qwen3-Next-80B at TP 4 on H200, SGLang, 16-token pages: 12 full-attention layers x 1 KV head (2 // 4 -> 1) x
    # 256 x 2 (K, V) x 2 B = 12,288 B a token, x 16 = 196,608 B a page; its 36 linear-attention layers' states sit in
    # the MambaPool. The 8 default lengths 120, 45, 300, 64, 250, 17, 96, 200 take 8 + 3 + 19 + 4 + 16 + 2 + 6 + 13 = 71
    # pages: 71 x 196,608 B = 13.31 MiB; 8 + 3 + 4 + 0 + 6 + 15 + 0 + 8 = 44 empty slots x 12,288 B = 528 KiB
    at = run_app({"v": "1", "m": "qwen3-next-80b-a3b", "tp": "4", "g": "H200", "e": "sglang", "bs": "16"},
                 "pages/paging.py")
    said = next(c for c in (plain(c.value) for c in at.caption) if c.startswith("At 196,608 B per page"))
    assert said == ("At 196,608 B per page (SGLang's cell size for one token x 16 tokens a page, tightest rank of the "
                    "plan): 13.31 MiB allocated, 528.00 KiB of it in empty slots. Its cached layers are 36 "
                    "linear_attention, 12 full_attention: the recurrent states sit in SGLang's MambaPool, one slot a "
                    "request, not counted here.")


def test_vllm_spellings_on_an_sglang_line_are_named():
    # SGLang's launch_server parses with argparse's parse_args: --max-num-seqs / --gpu-memory-utilization stop it.
    # kvplan plans what they mean in SGLang's own flag, and says --gpu-memory-utilization is not planned (the plan
    # is the same without it: 409,403 pages for Llama-3.1-8B on one H100 either way)
    at = run_app({"v": "1", "ig": "H100-SXM", "cmd": SGL + "--gpu-memory-utilization 0.5 --max-num-seqs 4"},
                 "pages/import.py")
    said = [plain(w.value) for w in at.warning]
    stops = "vLLM's flag, not SGLang's: SGLang's launch_server stops on it (argparse: unrecognized arguments); "
    assert any(f"- --gpu-memory-utilization 0.5: {stops}SGLang has no such setting (its memory share is "
               "--mem-fraction-static, a fraction of another figure): not planned with SGLang" in w for w in said), said
    assert any(f"- --max-num-seqs 4: {stops}planned as SGLang's --max-running-requests 4" in w for w in said), said
    assert metrics(at)["KV pages"] == "409,403"
    # SGLang's own spellings and the aliases it has (--tensor-parallel-size, --tp) are not named
    plain_line = commands.parse_command(SGL + "--tensor-parallel-size 2 --max-running-requests 4 --context-length 8k")
    assert views.vllm_spelled_notes(plain_line) == []
    assert views.vllm_spelled_notes(commands.parse_command("vllm serve x --max-num-seqs 4")) == []


def test_sglangs_sidebar_shows_the_chunk_and_graph_settings_its_plan_reads():
    from kvplan.web.widgets import KNOBS

    # Llama-3.1-8B on one H100, SGLang 0.5.21: --disable-cuda-graph frees the decode graphs' reserve (409,403 ->
    # 416,472 pages) and --chunked-prefill-size 2048 shrinks the activation reserve (-> 437,680): both planned, and
    # they were neither boxes nor in the "Set:" caption on SGLang's sidebar
    for params, pages, said in (({"eager": "1"}, "416,472", "--disable-cuda-graph"),
                                ({"mbt": "2048"}, "437,680", "--chunked-prefill-size 2048")):
        at = run_app({"v": "1", "m": "llama-3.1-8b", "e": "sglang", **params})
        assert metrics(at)["KV pages"] == pages
        assert f"Set: {said}" in [plain(c.value) for c in at.sidebar.caption]
        at.session_state[KNOBS] = True
        at.run()
        boxes = {w.key: w for w in [*at.number_input, *at.checkbox]}
        assert boxes["w.max_num_batched_tokens"].label == "chunked_prefill_size"
        assert boxes["w.enforce_eager"].label == "disable_cuda_graph"
        assert boxes["w.max_num_batched_tokens"].help.startswith("--chunked-prefill-size (kvplan's max_num_batched")


def test_a_vllm_pool_size_left_on_sglang_can_be_cleared():
    from kvplan.web.widgets import KNOBS

    at = run_app({"v": "1", "m": "llama-3.1-8b", "e": "sglang", "kvm": "10737418240", "gmu": "0.5"})
    assert _errors(at) == ["**kv_cache_memory_bytes**: SGLang has no --kv-cache-memory-bytes (sglang 0.5.23 "
                           "server_args.py): size its pool with --max-total-tokens or --mem-fraction-static"]
    at.session_state[KNOBS] = True
    at.run()
    assert "Kept for vLLM, not planned with SGLang: --gpu-memory-utilization 0.5" in [
        plain(c.value) for c in at.sidebar.caption]
    at.button(key="kv.clear_kvm").click().run()
    assert at.session_state["kv.state"].kv_cache_memory_bytes is None and not _errors(at)
    assert metrics(at)["KV pages"] == "409,403"  # and --gpu-memory-utilization changes nothing on SGLang
