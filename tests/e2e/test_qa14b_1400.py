"""Every page in Chromium at 1400 x 1000 with the SGLang engine (qa14b): a dense 8B, a 70B at TP 4, DeepSeek-V3 (MLA
MoE) at TP 8 on H200, and a hybrid (Qwen3-Next, gated DeltaNet + full attention) at TP 4. Every table's columns inside
its visible area, no metric value or label cut (test_pages_1400's measured), and no vLLM-only word on screen: SGLang's
pool is pages (never "KV blocks" / num_blocks), its flags are --tp-size / --context-length, never vLLM's. A
screenshot of each page is kept under the e2e artifacts folder (outside the checkout). Then an out-of-range context on
SGLang is refused by SGLang's name for it and the plan on screen labelled the last valid one.
"""

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import ARTIFACTS, drawn, open_page
from tests.e2e.test_pages_1400 import alerts, measured

pytestmark = pytest.mark.e2e

PAGES = ("", "model", "paging", "parallelism", "gpus", "import")
MODELS = {
    "sglang-llama-3.1-8b": "v=1&e=sglang&m=llama-3.1-8b",
    "sglang-llama-3.1-70b-tp4": "v=1&e=sglang&m=llama-3.1-70b&tp=4&len=32768&conc=16",
    "sglang-deepseek-v3-tp8": "v=1&e=sglang&m=deepseek-v3&tp=8&g=H200",
    "sglang-qwen3-next-tp4": "v=1&e=sglang&m=qwen3-next-80b-a3b&tp=4&g=H200",
}
IMPORT = ("&cmd=python+-m+sglang.launch_server+--model-path+meta-llama%2FLlama-3.1-70B-Instruct+--tp-size+4"
          "+--context-length+32768&ig=H100-SXM")
# What an SGLang page must not say: vLLM's flags for settings SGLang spells its own way, and vLLM's pool unit.
VLLM_ONLY = re.compile(r"--tensor-parallel-size|--pipeline-parallel-size|--max-model-len|--max-num-seqs|"
                       r"--gpu-memory-utilization|--block-size|num_blocks|KV blocks|bytes/block|--speculative-config")
KEY_COLUMNS = {"": ["term", "GiB", "basis", "source"], "model": ["config.json field", "value", "how it is counted"],
               "parallelism": ["layout", "fits", "max concurrency", "sequences, all replicas", "KV pages"],
               "import": ["flag", "value"]}


@pytest.mark.parametrize("model", list(MODELS))
def test_every_sglang_page_fits_and_speaks_sglang(server, page, model):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for path in PAGES:
        open_page(page, f"{server}/{path}?{MODELS[model]}{IMPORT if path == 'import' else ''}")
        expect(page.get_by_test_id("stException")).to_have_count(0)
        where = f"{model} /{path}"
        measured(page, where, KEY_COLUMNS.get(path, []))
        text = page.get_by_test_id("stMain").inner_text()
        assert not VLLM_ONLY.findall(text), (where, sorted(set(VLLM_ONLY.findall(text))))
        page.screenshot(path=str(ARTIFACTS / f"{model}-{path or 'budget'}.png"))


def test_an_out_of_range_sglang_context_is_refused_by_its_sglang_name(server, page):
    open_page(page, f"{server}/?v=1&e=sglang&m=llama-3.1-8b&len=8192")
    box = page.get_by_role("spinbutton", name="Context length (context_length)")
    box.fill("-5")
    box.press("Enter")
    expect(alerts(page).filter(has_text="Refused context length (context_length) = -5").first).to_be_visible()
    expect(page.get_by_text(re.compile("^Last valid plan"))).to_be_visible()
    expect(page).to_have_url(re.compile(r"[?&]len=8192(&|$)"))
    drawn(page)
    page.screenshot(path=str(ARTIFACTS / "sglang-refused-context.png"))


def test_switching_the_engine_renames_the_context_box_and_keeps_its_value(server, page):
    # the box is labelled in the engine's words (SGLang's context_length, vLLM's max_model_len): a new label must not
    # lose the typed 8,192 (nor TP 2) on the switch, either way
    open_page(page, f"{server}/?v=1&m=llama-3.1-8b&len=8192&tp=2")
    page.get_by_test_id("stSidebar").get_by_text("sglang", exact=True).click()
    drawn(page)
    expect(page.get_by_role("spinbutton", name="Context length (context_length)")).to_have_value("8192")
    expect(page.get_by_role("spinbutton", name="TP", exact=True)).to_have_value("2")
    expect(page).to_have_url(re.compile(r"[?&]e=sglang(&|$)"))
    page.get_by_test_id("stSidebar").get_by_text("vllm", exact=True).click()
    drawn(page)
    expect(page.get_by_role("spinbutton", name="Context length (max_model_len)")).to_have_value("8192")
