"""The pages' UI contract: refused inputs named on every page (never a stale plan shown as current),
the Budget page saying what it means, the Model page's layer strip and preset catalog, the spec's
basis marked, the transformers path's progress, the share box's buttons."""

import json
import re

import pytest

from kvplan import hf_config
from kvplan.params import count_params
from kvplan.presets import load_preset, manifest, preset_config
from kvplan.web import cached, figures, state as web_state, views
from tests.app_util import figure, html_tables, kvplan_plan, metrics, open_share, plain, run_app, state

PLAN_PAGES = ("pages/budget.py", "pages/gpus.py", "pages/parallelism.py")
# A config no family builds and transformers does not know: planned as a generic Llama-style decoder.
GENERIC = dict(model_type="acme_llm", hidden_size=1024, intermediate_size=2816, num_hidden_layers=4,
               num_attention_heads=8, num_key_value_heads=2, vocab_size=32000, max_position_embeddings=4096)


def text(s: str) -> str:
    """What the reader sees: escapes and bold markers gone."""
    return plain(s).replace("**", "")


def errors(at) -> str:
    return text(" ".join(e.value for e in at.error))


# ----------------------------------------------------------------------------- refusals

def test_a_refused_paste_after_a_valid_model_is_named_on_every_page():
    at = run_app({"v": "1", "m": "llama-3.1-70b", "tp": "4"}, "pages/model.py")
    at.text_area(key="model.paste").set_value('{"model_type": "llama", "hidden_size": -4}').run()
    at.button(key="model.use_paste").click().run()
    assert state(at).model == "llama-3.1-70b" and state(at).config is None  # the plan did not move
    for page in PLAN_PAGES + ("pages/import.py", "pages/model.py"):
        at.switch_page(page).run()
        text = errors(at)
        assert "Refused the pasted config.json" in text, page
        assert "every page plans the last valid model (llama-3.1-70b) instead" in text, page
    at.switch_page("pages/budget.py").run()
    assert any(c.value.startswith("Last valid plan") for c in at.caption)
    # choosing a model ends the refusal
    at.selectbox(key="w.model").select("qwen3-8b").run()
    assert "Refused" not in errors(at)


def test_the_refusal_can_be_dismissed_and_a_valid_paste_clears_it():
    at = run_app(page="pages/model.py")
    at.text_area(key="model.paste").set_value("{not json").run()
    at.button(key="model.use_paste").click().run()
    assert "Refused the pasted config.json" in errors(at)
    at.button(key="kv.dismiss").click().run()
    assert "Refused" not in errors(at)
    at.text_area(key="model.paste").set_value(json.dumps(preset_config("qwen3-8b"))).run()
    at.button(key="model.use_paste").click().run()
    assert "Refused" not in errors(at) and state(at).config is not None


def test_an_out_of_range_context_is_named_and_the_plan_labelled():
    at = run_app({"v": "1", "m": "llama-3.1-8b", "len": "8192"})
    before = metrics(at)
    at.number_input(key="w.max_model_len").set_value(-5).run()
    text = errors(at)
    said = ("Refused context length (max_model_len) = -5: must be from 1 to 100,000,000; every page plans the last "
            "valid value (8,192) instead.")
    assert text.count(said) == 2, text  # under the box and at the top of the page
    assert state(at).max_model_len == 8192 and at.query_params["len"] == "8192"
    assert any(c.value.startswith("Last valid plan") for c in at.caption)
    assert metrics(at) == before  # the last valid plan, labelled; not a plan of -5
    at.switch_page("pages/parallelism.py").run()  # the box keeps -5: every page says so
    assert "Refused context length" in errors(at)


def test_an_absurd_tp_is_refused_not_clamped():
    at = run_app()
    at.number_input(key="w.tensor_parallel_size").set_value(100_000).run()
    assert "Refused TP = 100,000: must be from 1 to 4,096" in errors(at)
    assert state(at).tensor_parallel_size == 1


def test_a_refused_page_input_is_listed_at_the_top_too():
    at = run_app(page="pages/paging.py")
    at.text_input(key="w.lengths").set_value("5, x, 7").run()
    assert "Refused lengths (tokens, prompt + output so far) = 5, x, 7" in errors(at)


# ----------------------------------------------------------------------------- budget

def test_no_decode_ceiling_and_a_sentence_for_an_empty_chart_when_nothing_fits():
    # Llama-3.1-405B in bf16 on one H100: 811 GB of weights on an 85 GB device, no KV pool at any length.
    at = run_app({"v": "1", "m": "llama-3.1-405b"})
    assert "Tokens/s (ceiling)" not in metrics(at)
    assert any("No decode ceiling: this plan does not fit" in c.value for c in at.caption)
    assert "budget.concurrency" not in {c.proto.id.rsplit("-", 1)[-1] for c in at.get("plotly_chart")}
    assert any("No chart: not one sequence fits at any context" in plain(i.value) for i in at.info)


def test_decode_ceiling_shown_for_a_plan_that_fits():
    at = run_app({"v": "1", "m": "llama-3.1-70b", "tp": "4", "len": "32768", "conc": "16", "kvd": "fp8"})
    p = kvplan_plan("llama-3.1-70b", tp=4, concurrency=16, max_model_len=32768, kv_cache_dtype="fp8")
    assert p.fits and metrics(at)["Tokens/s (ceiling)"] == f"{p.decode.tokens_per_s:,.0f}"


def test_kv_cache_tokens_and_fits_up_to_are_explained():
    # Llama-3.1-70B, TP 4, fp8 KV, 32k (vLLM 0.33 profile: 1.175 GiB non-torch at TP 4 on H100 SXM, kvplan.engines
    # non_torch_bytes, the CUDA-graph estimate subtracted, the V2 runner's sampler state 0.52 GiB and logits-only
    # sampler peak, the 32 MiB rotary table and 2 MiB of allocator blocks in the weights: the 501 MiB embedding and
    # lm_head shards hold 502, kvplan.vllm_alloc): 59,748 blocks x 16 = 955,968 tokens in the pool (60,296 with the
    # fixed 0.71 GiB CUDA-graph fit, not the model-shaped 1,070.5 MiB = FA3's 32 x 512 x 16 heads x 129 x 4 B + 4 MiB
    # + 100 graphs x 80 layers x 120 KiB, kvplan.engines.cuda_graph_bytes: 342.5 MiB / 640 KiB a block; 60,304 before
    # NCCL's NVLS buffers were sized from nvls.cc, 4 x 16 x 2 MiB = 128 MiB instead of the fitted 0.12 GiB; 60,307
    # before the allocator term, 59,214 before the V2 terms); one request can use all but vLLM's null block: 59,747 x
    # 16 = 955,952, 16 fewer. Since 0.33.0's V2 sampler pass (1,024 x 128,256 x 14 + 1 MiB + 8,192 x 8,192 x 2 =
    # 1,973,944,320 B of peak vs 813,694,976, 1,160,249,344 B = 1,770 blocks of 655,360 less): 57,978 blocks x 16 =
    # 927,648 tokens, 57,977 x 16 = 927,632 for one request (the figures above are 0.32's).
    p = kvplan_plan("llama-3.1-70b", tp=4, concurrency=16, max_model_len=32768, kv_cache_dtype="fp8")
    assert (p.num_blocks, p.kv_cache_tokens, p.max_model_len_that_starts) == (57_978, 927_648, 927_632)
    at = run_app({"v": "1", "m": "llama-3.1-70b", "tp": "4", "len": "32768", "conc": "16", "kvd": "fp8"})
    note = next(text(c.value) for c in at.caption if "is the pool" in c.value)
    assert "KV cache tokens (927,648) is the pool" in note and "Fits up to 927,632 tokens" in note
    assert "16 tokens fewer: vLLM keeps one block (16 tokens) as its null block" in note


@pytest.mark.parametrize("max_len", [200_000, 131_072, 32_768, 1_000, 3_000_000])
def test_context_ticks_never_collide(max_len):
    ticks = figures.tick_values(cached.sweep_lengths(max_len))
    assert max_len in ticks and len(ticks) <= figures.MAX_TICKS
    assert all(b / a >= 1.6 for a, b in zip(ticks, ticks[1:])), ticks  # 198k next to 256k is gone


def test_budget_terms_table_has_the_basis_column():
    at = run_app({"v": "1", "m": "llama-3.1-70b", "tp": "4"})
    rows = html_tables(at)[0]
    device = next(r for r in rows if r["term"] == "device memory")
    assert device["basis"] == "measured" and list(rows[0])[:4] == ["term", "GiB", "basis", "source"]


# ----------------------------------------------------------------------------- model page

def test_layer_strip_shows_gemma3s_five_to_one_pattern():
    at = run_app({"v": "1", "m": "gemma-3-27b-it"}, "pages/model.py")
    fig = figure(at, "model.layers")
    by_name = {t["name"]: t for t in fig["data"]}
    sliding, full = by_name["sliding window"], by_name["full attention"]
    full_layers = sorted(int(x) for x in full["x"]) if isinstance(full["x"], list) else None
    assert full_layers == [5, 11, 17, 23, 29, 35, 41, 47, 53, 59] and len(sliding["x"]) == 52
    # every layer: 16 KV heads x (128 + 128) x 2 B = 8,192 B per token; sliding ones keep 1,024 tokens
    assert all("8,192 B KV per token (auto)" in t for t in full["customdata"] + sliding["customdata"])
    assert all("keeps the last 1,024 tokens" in t for t in sliding["customdata"])
    assert set(by_name) == {"sliding window", "full attention", "dense MLP"}


def test_layer_strip_of_a_hybrid_and_an_moe():
    cells = figures.layer_cells(load_preset("qwen3-next-80b-a3b").layers, 2, 2)
    kinds = [c["kind"] for c in cells]
    assert kinds[:4] == ["linear_attention"] * 3 + ["full_attention"] and kinds.count("linear_attention") == 36
    # Gated DeltaNet state (vLLM): conv (4 - 1) x (2 x 16 x 128 + 32 x 128) x 2 B = 49,152 B
    # + recurrent 32 x 128 x 128 x 2 B = 1,048,576 B -> 1,097,728 B per sequence per layer
    assert {c["state_bytes"] for c in cells if c["kind"] == "linear_attention"} == {1_097_728}
    assert {c["kv_bytes_per_token"] for c in cells if c["kind"] == "full_attention"} == {2 * (256 + 256) * 2}
    assert {c["mlp"] for c in cells} == {"MoE"}
    mla = figures.layer_cells(load_preset("deepseek-v2-lite").layers, 2, 2)
    assert mla[0]["mlp"] == "dense MLP" and {c["mlp"] for c in mla[1:]} == {"MoE"}  # first_k_dense_replace = 1
    assert {c["kv_bytes_per_token"] for c in mla} == {(512 + 64) * 2}  # one latent per token


def test_an_unknown_layer_kind_is_drawn_neutral_under_its_name():
    class Cache:
        kind = "short_conv_v9"

        def elems_per_token(self, convention, tp):
            return 0

        def state_bytes(self, convention, tp, dtype_bytes):
            return 3 * 2048 * dtype_bytes

    class Layer:
        cache, experts, mlp = Cache(), None, ("w",)

    cells = figures.layer_cells([Layer(), Layer()], 2, 2)
    fig = figures.layer_strip(cells, "auto")
    trace = next(t for t in fig.data if t.name == "short_conv_v9")
    assert trace.marker.color == figures.NEUTRAL and "12,288 B state per sequence" in trace.customdata[0]


def test_preset_catalog_by_family_with_sizes_and_release():
    rows = cached.preset_catalog()
    assert len(rows) == len(manifest()) and all(re.fullmatch(r"\d{4}-\d{2}", e["released"]) for e in manifest())
    families = [r["family"] for r in rows]
    assert families == sorted(families, key=str.lower)  # grouped: each family in one run
    by = {r["name"]: r for r in rows}
    assert by["llama-3.1-8b"]["total"] == count_params(load_preset("llama-3.1-8b")).total_params == 8_030_261_248
    assert by["llama-3.1-8b"]["size"] == "8.0B" and by["llama-3.1-8b"]["released"] == "2024-07"
    assert by["deepseek-v3"]["size"] == "671.0B total / 37.6B active" and by["deepseek-v3"]["family"] == "DeepSeek"
    assert cached.preset_label("qwen3-30b-a3b") == "qwen3-30b-a3b · Qwen · 30.5B total / 3.4B active · 2025-04"
    assert cached.family_group("mystery_model") == "Mystery"  # a new model_type still gets a group


def test_model_page_preset_picker_moves_the_sidebar():
    at = run_app(page="pages/model.py")
    at.selectbox(key="model.pick").select("gpt-oss-20b").run()
    assert state(at).model == "gpt-oss-20b" and at.selectbox(key="w.model").value == "gpt-oss-20b"
    assert at.query_params["m"] == "gpt-oss-20b"


# ----------------------------------------------------------------------------- basis

def test_a_generic_spec_is_marked_on_every_page():
    at = run_app(page="pages/model.py")
    at.text_area(key="model.paste").set_value(json.dumps(GENERIC)).run()
    at.button(key="model.use_paste").click().run()
    assert state(at).config is not None, errors(at)
    for page in PLAN_PAGES + ("pages/import.py", "pages/model.py"):
        at.switch_page(page).run()
        assert any("Estimate (generic decoder)" in text(w.value) for w in at.warning), page
    at.switch_page("pages/budget.py").run()
    verdict = [text(x.value) for x in (*at.success, *at.error)]
    assert any(v.startswith("Estimate (generic decoder, not exact).") for v in verdict)
    assert any("(generic-decoder estimate)" in c.value for c in at.caption)


def test_transformers_basis_words():
    assert views.basis_tag("transformers") == " (built with transformers)" and views.basis_tag("native") == ""


# ----------------------------------------------------------------------------- transformers progress

class _FakePath:
    """Stands in for kvplan.transformers_path: knows one model_type, reports progress, counts builds."""

    def __init__(self, with_progress: bool):
        self.builds, self.calls = 0, []
        if with_progress:
            def build_spec(config, name, progress=None):
                self.builds += 1
                if progress:
                    progress(0.5, "half")
                    progress(1.0, "done")
                return load_preset("gpt2").model_copy(update={"name": name, "basis": "transformers"})
        else:
            def build_spec(config, name):
                self.builds += 1
                return load_preset("gpt2").model_copy(update={"name": name, "basis": "transformers"})
        self.build_spec = build_spec

    def knows(self, config):
        return config.get("model_type") == "acme_tf"


@pytest.mark.parametrize("with_progress", [True, False])
def test_transformers_path_progress_then_cached(monkeypatch, with_progress):
    fake = _FakePath(with_progress)
    monkeypatch.setattr(hf_config, "_transformers_path", lambda: fake)
    config = dict(model_type="acme_tf", n_embd=64, seed=with_progress)  # a config of its own per case
    text = web_state.encode_config(config)
    seen = []
    spec = web_state.spec_from_link(text, "me/acme", lambda f, m: seen.append((f, m)))
    assert spec.name == "me/acme" and spec.basis == "transformers"
    assert seen == ([(0.5, "half"), (1.0, "done")] if with_progress else [])
    # cached: no second build, no progress, under the link check's name (None) as well
    assert web_state.spec_from_link(text, "me/acme", lambda f, m: seen.append("again")) is spec
    web_state.spec_from_link(text, None)
    assert fake.builds == 1 and "again" not in seen


# ----------------------------------------------------------------------------- share box

def test_share_box_buttons_read_in_full():
    at = open_share(run_app())
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels == ["Plan JSON", "Plan CSV"]


def test_a_refused_upload_and_a_failed_hub_fetch_are_named_on_the_plan_pages(monkeypatch):
    from tests.hub_server import closed_port_endpoint

    at = run_app({"v": "1", "m": "qwen3-8b"}, "pages/model.py")
    at.file_uploader(key="model.upload").set_value(("bad.json", b'{"model_type": 7}', "application/json")).run()
    assert "Refused the uploaded file bad.json" in errors(at)
    at.switch_page("pages/gpus.py").run()
    assert "Refused the uploaded file bad.json" in errors(at) and "last valid model (qwen3-8b)" in errors(at)

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", closed_port_endpoint())
    at = run_app({"v": "1", "m": "qwen3-8b"}, "pages/model.py")
    at.text_input(key="model.hub").set_value("acme/tiny-llama").run()
    at.button(key="model.fetch").click().run()
    assert "Refused the Hub fetch of acme/tiny-llama: offline:" in errors(at)  # the top of the page, at once
    at.switch_page("pages/parallelism.py").run()
    assert "Refused the Hub fetch of acme/tiny-llama" in errors(at) and state(at).model == "qwen3-8b"
