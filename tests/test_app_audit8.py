"""The eighth UI audit's findings (qa8, 2026-12-02: a browser walk of MTP, Gaudi, the Budget texts and pasted
configs at 1400 x 1000), each fixed and asserted on what the pages draw.

* Qwen3.5-27B with --speculative-config method mtp (2 tokens): Budget planned its MTP layer (0.79 GiB 'MTP layers
  (in weights)' row) while the Model page's layer strip drew 64 layers and its note said "not planned: 1
  multi-token-prediction layer(s)". The strip now draws the MTP layer after the decoder (cell 64, framed, "MTP"),
  and the note says it is planned.
* Llama-3.1-70B on 4 x Gaudi 3: the pool formula's one line of words ("- weights - dummy KV block - Model
  profiling run - reserved for HPUGraphs - reserved for KV cache dummy block", 95 characters) was cut at
  "reserve" at 1400 px: long words now split onto two lines as more than five terms do. The start-up log's caption
  said "the V2 GPU model runner" above vllm-gaudi's hpu_worker lines: it names vllm-gaudi's HPU runner.
* A pasted Nemotron-3-Super config named "...-FP8" without quantization_config: after Weights = fp8 the Budget
  dropped the "name says FP8" warning but the Model page kept it: it drops it too.
"""

import json
from pathlib import Path

import pytest

from kvplan.presets import load_preset
from kvplan.presets import preset_config as load_preset_config
from kvplan.web import figures, formulas
from kvplan.web.state import encode_config
from tests.app_util import figure, kvplan_plan, plain, run_app

SUPER = Path(__file__).parent / "fixtures" / "configs" / "nemotron-3-super-120b-a12b-fp8.json"
MTP = {"v": "1", "m": "qwen3.5-27b", "spec": "mtp", "nspec": "2"}


def _infos(at) -> list[str]:
    return [plain(i.value) for i in at.info]


def test_the_layer_strip_draws_a_planned_mtp_layer_after_the_decoder():
    spec = load_preset("qwen3.5-27b")
    assert (len(spec.layers), len(spec.mtp_layers)) == (64, 1)
    cells = figures.layer_cells(spec.layers, 2, 2, spec.mtp_layers)
    assert len(cells) == 65 and [c["layer"] for c in cells if c["mtp"]] == [64]
    assert cells[64]["kind"] == "full_attention"  # Qwen3.5's MTP layer is a full-attention layer
    fig = figures.layer_strip(cells, "auto").to_plotly_json()
    assert fig["layout"]["title"]["text"].startswith(
        "The decoder, layer by layer (64 layers + 1 MTP layer for speculative decoding)")
    frame = fig["layout"]["shapes"][0]
    assert (frame["x0"], frame["x1"]) == (63.5, 64.5)  # around cell 64 alone
    assert [a["text"] for a in fig["layout"]["annotations"]] == ["MTP"]
    # without MTP nothing changes: 64 cells, no frame
    plain_fig = figures.layer_strip(figures.layer_cells(spec.layers, 2, 2), "auto").to_plotly_json()
    assert plain_fig["layout"]["title"]["text"].startswith("The decoder, layer by layer (64 layers):")
    assert not plain_fig["layout"].get("shapes")


def test_the_model_page_says_the_mtp_layer_is_planned_when_budget_plans_it():
    at = run_app(MTP, "pages/model.py")
    title = figure(at, "model.layers")["layout"]["title"]["text"]
    assert "64 layers + 1 MTP layer" in title, title
    notes = _infos(at)
    assert not [n for n in notes if "not planned: 1 multi-token-prediction" in n], notes
    assert [n for n in notes if "1 multi-token-prediction layer; planned with --speculative-config method mtp" in n]
    at = run_app({"v": "1", "m": "qwen3.5-27b"}, "pages/model.py")  # no speculative decoding: not planned, not drawn
    assert [n for n in _infos(at) if "not planned: 1 multi-token-prediction layer (loaded" in n]
    assert "MTP" not in figure(at, "model.layers")["layout"]["title"]["text"]


def test_the_gaudi_pool_formula_splits_its_long_words_and_the_log_names_the_hpu_runner():
    p = kvplan_plan("llama-3.1-70b", "Gaudi3", tp=4)
    pool = dict(formulas.budget_formulas(p))["KV pool on the tightest rank"]
    words = pool.split(r"\text{pool} &= ")[1].split(r"\\ &= ")[0]
    # five terms, 95 characters of words: three on the first line, two on the second
    assert words.count(r"\\ &\quad") == 1, words
    first, second = words.split(r"\\ &\quad")
    assert "Model profiling run" in first and "reserved for KV cache dummy block" in second, words
    # the 8B on one H100 keeps its one line: "- weights - activations - non-torch - V2 sampler state - CUDA graphs"
    one = dict(formulas.budget_formulas(kvplan_plan("llama-3.1-8b")))["KV pool on the tightest rank"]
    assert r"\quad" not in one, one
    at = run_app({"v": "1", "m": "llama-3.1-70b", "tp": "4", "g": "Gaudi3"})
    said = [c.value for c in at.caption if c.value.startswith("The tightest rank's figures")]
    assert said and "vllm-gaudi's HPU model runner" in said[0] and "V2 GPU model runner" not in said[0], said


def test_the_model_page_drops_the_fp8_name_warning_once_weights_name_a_format():
    cfg = json.loads(SUPER.read_text())
    cfg["_name_or_path"] = "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8"
    cfg.pop("quantization_config", None)
    link = {"v": "1", "cfg": encode_config(cfg)}  # the link a paste makes (no m=: the config is the model)
    said = "says FP8 but config.json has no quantization_config"
    at = run_app(link, "pages/model.py")
    assert [w for w in at.warning if said in plain(w.value)], [w.value for w in at.warning]
    at = run_app({**link, "wf": "fp8"}, "pages/model.py")
    assert not [w for w in at.warning if said in plain(w.value)], [w.value for w in at.warning]
    at = run_app({**link, "wf": "fp8"})  # Budget: dropped as before
    assert not [w for w in at.warning if said in plain(w.value)]


def test_a_refused_deepseek_v41_paste_labels_paging_and_gpus_figures_as_the_last_valid_plan():
    at = run_app({"v": "1", "m": "llama-3.1-8b"}, "pages/model.py")
    v41 = (Path(__file__).parent / "fixtures" / "configs" / "deepseek-v4.1-flash.json").read_text()
    at.text_area(key="model.paste").set_value(v41).run()
    at.button(key="model.use_paste").click().run()
    assert at.session_state["kv.state"].model == "llama-3.1-8b"  # the plan did not move
    said = plain(" ".join(e.value for e in at.error))
    # the V4.1 fixture is an EXL3 requantization: refused for its quantization_config, which vLLM does not load
    assert "Refused the pasted config.json" in said and "'exl3' is not a quantization method" in said, said
    at.switch_page("pages/paging.py").run()
    # llama-3.1-8b at block size 16: 32 layers x 16 tokens x 8 KV heads x 128 x 2 (K, V) x 2 B = 2,097,152 B
    byte_line = [c.value for c in at.caption if "2,097,152 B per block" in c.value]
    assert byte_line and byte_line[0].startswith("Last valid plan (an input is refused): At 2,097,152 B"), byte_line
    at.switch_page("pages/gpus.py").run()
    load = [c.value for c in at.caption if "Serving 1 sequence of 131,072 tokens" in plain(c.value)]
    assert load and load[0].startswith("Last valid plan (an input is refused): Serving"), load


def test_the_model_page_gives_the_kv_per_token_with_the_planned_mtp_layer():
    from tests.app_util import html_tables

    at = run_app(MTP, "pages/model.py")
    rows = {r["quantity"]: r["value"] for t in html_tables(at) for r in t if "quantity" in r}
    # 16 full-attention layers x 4 KV heads x 256 dims x 2 (K, V) x 2 B = 65,536; + the MTP layer's 4 x 256 x 2 x 2
    # = 4,096: 69,632, Parallelism's "KV bytes / token / GPU" at TP 1
    assert rows["KV cache per token (auto)"].startswith("65,536 B"), rows
    assert rows["KV cache per token with the MTP layer (auto)"].startswith("69,632 B"), rows
    at = run_app({"v": "1", "m": "qwen3.5-27b"}, "pages/model.py")
    assert not [q for t in html_tables(at) for r in t for q in r.values() if "(s)" in q]


QWEN_FP8 = {"v": "1", "cfg": encode_config(dict(load_preset_config("qwen3-8b"), _name_or_path="org/Qwen3-8B-FP8"))}


@pytest.mark.parametrize("page", ["pages/budget.py", "pages/model.py", "pages/paging.py", "pages/parallelism.py",
                                  "pages/gpus.py", "pages/import.py"])
def test_every_page_shows_the_fp8_name_warning_once(page):
    # issue 12 QA: Paging (and Parallelism, GPUs) planned a config named "...-FP8" without quantization_config at
    # bf16 and said nothing, where Budget and Model warned. Every page says it once (Import: for the plan it
    # previews, the sidebar's config under a command that names no model), and none once Weights names a format.
    said = "the name 'org/Qwen3-8B-FP8' says FP8 but config.json has no quantization_config: the weights are priced at bf16"
    link = QWEN_FP8 | ({"cmd": "vllm serve --max-model-len 8192", "ig": "H100-SXM"} if page == "pages/import.py" else {})
    at = run_app(link, page)
    shown = [plain(w.value) for w in at.warning if said in plain(w.value)]
    assert len(shown) == 1 and shown[0].count(said) == 1, [plain(w.value) for w in at.warning]
    # a command plans its own format: --quantization fp8 names it there (the sidebar's Weights is not the command's)
    named = {"cmd": link["cmd"] + " --quantization fp8"} if page == "pages/import.py" else {"wf": "fp8"}
    at = run_app(link | named, page)
    assert not [w for w in at.warning if said in plain(w.value)], [plain(w.value) for w in at.warning]
