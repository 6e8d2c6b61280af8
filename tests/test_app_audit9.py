"""The ninth UI audit's findings (qa9, 2026-12-02: a browser walk at 1400 x 1000 of a dense 8B, a 70B at TP 4,
DeepSeek-V3.2 / Kimi-K2.5 at TP 8, Qwen3.5-27B, Nemotron-3-Nano, Qwen3.8-2.4T-FP8, GLM-5.3-FP8, gpt-oss-120b,
SGLang, Gaudi 3, a custom GPU and MTP), each fixed and asserted on what the pages draw.

* gpt-oss-120b on 1 x H100-SXM at 131,072 tokens: the Budget's "Tokens/s (ceiling)" read 43 with the help "an
  upper bound, not a forecast", but its "Read / step" (73.33 GiB) is every weight of the rank (all 128 experts of
  every MoE layer, where a token reads 4) plus all 36 layers' KV over the whole context (18 of them are 128-token
  sliding windows): a real step reads far less, so 43 is no upper bound. The Budget now says, for a model with
  routed experts, sliding / chunked windows or DSA, what the read over-counts and that the figure is no upper
  bound; a dense full-attention model keeps "an upper bound".
"""

from tests.app_util import kvplan_plan, plain, run_app


def _captions(at) -> list[str]:
    return [plain(c.value) for c in at.caption]


def test_the_decode_ceiling_says_it_is_no_upper_bound_for_an_moe_with_sliding_windows():
    p = kvplan_plan("gpt-oss-120b")
    weights = p.ranks[0].weights_bytes
    # the read counts all 36 layers' KV at the whole context: 36 x 2 (K, V) x 8 heads x 64 dims x 2 B = 73,728 B
    # a token, x 131,072 tokens = 9,663,676,416 B, half of it in the 18 sliding layers that read 128 tokens
    assert p.decode.batch == 1 and p.decode.context == 131_072
    assert p.decode.bytes_per_step - weights == 131_072 * 36 * 2 * 8 * 64 * 2 == 9_663_676_416
    at = run_app({"v": "1", "m": "gpt-oss-120b"})
    notes = [c for c in _captions(at) if c.startswith("Not an upper bound for this model")]
    assert len(notes) == 1, _captions(at)
    assert "all routed experts' weights" in notes[0] and "sliding-window / chunked layers' KV" in notes[0], notes
    ceiling = next(m for m in at.metric if m.label == "Tokens/s (ceiling)")
    assert ceiling.value == f"{p.decode.tokens_per_s:,.0f}" == "43"
    assert "no upper bound" in ceiling.help and "an upper bound, not a forecast" not in ceiling.help


def test_a_dense_full_attention_model_keeps_its_upper_bound():
    at = run_app({"v": "1", "m": "llama-3.1-8b"})
    assert not [c for c in _captions(at) if c.startswith("Not an upper bound")], _captions(at)
    ceiling = next(m for m in at.metric if m.label == "Tokens/s (ceiling)")
    # 3 sequences x 131,072 tokens x 131,072 B + 14.99 GiB weights = 62.99 GiB a step; 3.35 TB/s / 62.99 GiB x 3 = 149
    assert ceiling.value == "149" and "an upper bound, not a forecast" in ceiling.help


def test_deepseek_v32_names_its_experts_and_sparse_attention():
    at = run_app({"v": "1", "m": "deepseek-v3.2", "tp": "8", "g": "H200"})
    notes = [c for c in _captions(at) if c.startswith("Not an upper bound for this model")]
    assert len(notes) == 1 and "experts" in notes[0] and "(DSA)" in notes[0] and "sliding" not in notes[0], notes
