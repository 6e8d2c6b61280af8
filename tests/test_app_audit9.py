"""The ninth UI audit's findings (qa9, 2026-12-02: a browser walk at 1400 x 1000 of a dense 8B, a 70B at TP 4,
DeepSeek-V3.2 / Kimi-K2.5 at TP 8, Qwen3.5-27B, Nemotron-3-Nano, Qwen3.8-2.4T-FP8, GLM-5.3-FP8, gpt-oss-120b,
SGLang, Gaudi 3, a custom GPU and MTP), each fixed and asserted on what the pages draw.

* gpt-oss-120b on 1 x H100-SXM at 131,072 tokens: the Budget's "Tokens/s (ceiling)" read 43 with the help "an
  upper bound, not a forecast", but its "Read / step" (73.33 GiB) was every weight of the rank (all 128 experts of
  every MoE layer, where a token reads 4) plus all 36 layers' KV over the whole context (18 of them are 128-token
  sliding windows): a real step reads far less, so 43 was no upper bound. A stopgap said so on the page; issue 12
  then fixed the read itself (kvplan.plan.decode_bound: k experts per MoE layer, windows, DSA top-k, recurrent
  state; tests/test_decode_read.py derives its numbers): the ceiling is now 300, a true upper bound, with the
  uniform-routing estimate beside it, and only the models whose read still over-counts (MiniMax-M3's top-k
  blocks, DeepSeek-V4's CSA top-k) are called "no upper bound".
"""

from tests.app_util import kvplan_plan, plain, run_app


def _captions(at) -> list[str]:
    return [plain(c.value) for c in at.caption]


def test_the_moe_ceiling_reads_k_experts_and_the_windows_and_is_an_upper_bound():
    # vLLM 0.32 (0.33 fits the request too since the Triton MXFP4 layout frees the checkpoint's scales: 12,596 blocks
    # >= 9,225 a request, tests/test_app_qa13.py)
    p = kvplan_plan("gpt-oss-120b", vllm_version="0.32")
    # 4,288,670,336 B of non-expert weights - the untied input table's 1,158,266,880 (a step reads 1 row) + 4 of 128
    # experts a layer (1,915,269,120 B with their swizzled scales) + KV (18 full layers x 131,072 + 18 sliding x 128
    # tokens) x 2,048 B = 4,836,556,800 -> 9,882,229,376 B = 9.20 GiB a step; 3.35e12 / that = 339 tokens/s
    # (tests/test_decode_read.py)
    assert p.decode.batch == 1 and p.decode.context == 131_072
    assert p.decode.bytes_per_step == 9_882_229_376 and p.decode.kv_bytes_per_step == 4_836_556_800
    at = run_app({"v": "1", "m": "gpt-oss-120b", "vv": "0.32"})
    assert not [c for c in _captions(at) if c.startswith("Not an upper bound")], _captions(at)
    metric = {m.label: m for m in at.metric}
    ceiling = metric["Tokens/s (ceiling)"]
    assert ceiling.value == f"{p.decode.tokens_per_s:,.0f}" == "339"
    assert "an upper bound, not a forecast" in ceiling.help and "4 routed experts per MoE layer" in ceiling.help
    assert "but its untied input-embedding table (a step reads only its batch's rows)" in ceiling.help
    assert "no upper bound" not in ceiling.help
    # batch 1: the uniform-routing estimate reads the same 4 experts
    estimate = metric["Tokens/s at uniform routing"]
    assert estimate.value == "339" and estimate.help.startswith("An estimate, not a bound")
    assert metric["Read / step"].value == "9.20 GiB"
    assert any("The ceiling reads 4 experts per MoE layer, the estimate 4.0 (uniform routing)" in c
               for c in _captions(at)), _captions(at)


def test_a_dense_full_attention_model_keeps_its_upper_bound():
    at = run_app({"v": "1", "m": "llama-3.1-8b"})
    assert not [c for c in _captions(at) if c.startswith("Not an upper bound")], _captions(at)
    labels = [m.label for m in at.metric]
    assert "Tokens/s at uniform routing" not in labels  # no routed experts: one figure
    ceiling = next(m for m in at.metric if m.label == "Tokens/s (ceiling)")
    # 3 sequences x 131,072 tokens x 131,072 B + 14.99 GiB weights - the untied input table's 0.98 GiB = 62.01 GiB a
    # step; 3.35e12 B/s / 66,583,011,328 B x 3 = 151 (tests/test_decode_read.py)
    assert ceiling.value == "151" and "an upper bound, not a forecast" in ceiling.help


def test_deepseek_v32_reads_its_top_k_and_keeps_an_upper_bound():
    at = run_app({"v": "1", "m": "deepseek-v3.2", "tp": "8", "g": "H200"})
    assert not [c for c in _captions(at) if c.startswith("Not an upper bound")], _captions(at)
    metric = {m.label: m for m in at.metric}
    # 3 sequences: 8 experts a layer at the ceiling, 256 x (1 - (248/256)^3) = 23.26 at uniform routing
    assert "8 routed experts per MoE layer" in metric["Tokens/s (ceiling)"].help
    assert "23.3 distinct experts" in metric["Tokens/s at uniform routing"].help
    ceiling = float(metric["Tokens/s (ceiling)"].value.replace(",", ""))
    assert ceiling > float(metric["Tokens/s at uniform routing"].value.replace(",", ""))


def test_deepseek_v4_still_says_what_its_read_over_counts():
    at = run_app({"v": "1", "m": "deepseek-v4-flash", "tp": "8", "g": "H200"})
    notes = [c for c in _captions(at) if c.startswith("Not an upper bound for this model")]
    assert len(notes) == 1 and "(CSA)" in notes[0], _captions(at)
    ceiling = next(m for m in at.metric if m.label == "Tokens/s (ceiling)")
    assert "no upper bound" in ceiling.help and "an upper bound, not a forecast" not in ceiling.help


def test_the_gpus_page_says_no_upper_bound_only_where_the_read_still_over_counts():
    # DeepSeek-V4-Flash: the CSA layers' compressed entries are all counted (its attention reads the top-k)
    at = run_app({"v": "1", "m": "deepseek-v4-flash"}, page="pages/gpus.py")
    notes = [c for c in _captions(at) if c.startswith("Not an upper bound for this model: the tokens/s bound")]
    assert len(notes) == 1 and "(CSA)" in notes[0] and "$ / M tokens is no floor" in notes[0], _captions(at)
    # gpt-oss-120b: k experts and the windows are read as a step reads them: the bound is one, no such note
    at = run_app({"v": "1", "m": "gpt-oss-120b"}, page="pages/gpus.py")
    assert not [c for c in _captions(at) if c.startswith("Not an upper bound")], _captions(at)
    assert any("with k routed experts per MoE layer" in plain(m.value) for m in at.markdown)
