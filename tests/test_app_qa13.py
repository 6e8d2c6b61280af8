"""QA walk at 1400 x 1000 (issue 12), 2026-12-02: what a tampered link says it plans instead, and SGLang's
paging knob named as SGLang names it."""

from kvplan.web.state import decode
from tests.app_util import metrics, plain, run_app, state, warnings


def test_tampered_link_names_what_an_unset_input_plans():
    # 'unset' told a vLLM user nothing; the sidebar's own words say what the page plans instead
    _, warned = decode({"len": "abc", "conc": "1e9", "seqs": "0"})
    assert warned == [
        "Link parameter 'len' (max_model_len) = 'abc': expected a whole number (e.g. 8192 or 32k), got 'abc'; "
        "using the default (the model's maximum context).",
        "Link parameter 'conc' (concurrency) = '1e9': expected a whole number (e.g. 8192 or 32k), got '1e9'; "
        "using the default (as many sequences as fit).",
        "Link parameter 'seqs' (max_num_seqs) = '0': must be from 1 to 1,000,000; using the default (the engine's "
        "default).",
    ]
    # an input with no planning meaning when unset keeps the plain word
    assert decode({"mml": "image:-1"})[1][0].endswith("using the default (unset).")


def test_tampered_context_plans_the_model_maximum_as_the_warning_says():
    at = run_app({"v": "1", "m": "gpt-oss-120b", "len": "abc"})
    assert any("using the default (the model's maximum context)" in plain(w) for w in warnings(at))
    assert state(at).max_model_len is None
    # gpt-oss-120b's max_position_embeddings is 131,072: the plan's context; on one H100 at vLLM 0.33 the
    # KV pool holds 178,968 tokens = int(12,596 blocks / 9,225 a request x 131,072) (the CLI `kvplan plan gpt-oss-120b
    # --gpu H100-SXM` prints the same; 6,661 blocks + the 5,935 of 589,824 B that the Triton layout's freed checkpoint
    # scales and K-to-4 swizzled scales give back, 4,608 experts x 759,680 B = 3,500,605,440 B; 221,678 from 15,602
    # blocks on 0.32, before 0.33.0's V2 sampler pass took 2,931,032,064 - 1,158,266,880 = 1,772,765,184 B more peak)
    assert any("context 131,072 tokens" in plain(c.value) for c in at.caption)
    assert metrics(at)["KV cache tokens"] == "178,968"


def test_sglang_paging_knob_is_page_size():
    at = run_app({"v": "1", "m": "qwen3-8b", "e": "sglang"}, page="pages/paging.py")
    labels = [s.label for s in at.selectbox]
    assert "page_size (tokens per page)" in labels and "block_size (tokens per block)" not in labels
    at = run_app({"v": "1", "m": "qwen3-8b"}, page="pages/paging.py")
    assert "block_size (tokens per block)" in [s.label for s in at.selectbox]
