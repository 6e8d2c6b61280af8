"""The Budget table's source texts speak of the plan on screen, in a vLLM / SGLang user's words (kvplan issue 12, a
browser QA walk 2026-12-02): the weights row names only this checkpoint's format(s), the RoPE row this model's tables
(gpt-oss only for gpt-oss), the estimate rows their error against public logs without developer vocabulary, and a
DeepSeek-V4 plan carries only its engine's note. Texts only: the bytes are the ones the other tests pin."""
from functools import lru_cache

import pytest

from kvplan import load_preset
from kvplan.engines import EngineConfig
from kvplan.families.deepseek_v4 import V4_SGLANG_PART, V4_VLLM_PART, VLLM_V4_NOTE
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan

CASES = {  # the five plans of the issue, plus a V0 and a custom-engine one
    "llama": ("llama-3.1-8b", "H100-SXM", EngineConfig(), Layout()),
    "gpt-oss": ("gpt-oss-120b", "H100-SXM", EngineConfig(), Layout()),
    "dsv3": ("deepseek-v3", "H200", EngineConfig(), Layout(tp=8)),
    "qwen3.5": ("qwen3.5-27b", "H100-SXM", EngineConfig(), Layout()),
    "dsv4-sglang": ("deepseek-v4-flash", "B200", EngineConfig(engine="sglang"), Layout(tp=8)),
    "dsv4-vllm": ("deepseek-v4-flash", "B200", EngineConfig(), Layout(tp=8)),
    "llama-v0": ("llama-3.1-8b", "H100-SXM", EngineConfig(vllm_version="0.6"), Layout()),
    "llama-custom": ("llama-3.1-8b", "H100-SXM", EngineConfig(engine="custom"), Layout()),
}


@lru_cache(maxsize=None)
def _plan(case: str):
    name, gpu, engine, layout = CASES[case]
    return plan(load_preset(name), get_gpu(gpu), engine, layout, suggest=False)


def _term(case: str, name: str):
    return next(t for t in _plan(case).ranks[0].terms if t.name.startswith(name))


def test_bf16_llama_weights_name_no_quantized_layout():
    src = _term("llama", "weights").source
    assert "bf16 checkpoint" in src and "GPUModelRunner.load_model" in src
    for word in ("MXFP4", "NVFP4", "GPTQ", "AWQ", "Marlin", "Machete"):
        assert word.lower() not in src.lower(), word


def test_quantized_weights_name_their_own_format():
    assert "mxfp4 checkpoint, the rest bf16" in _term("gpt-oss", "weights").source
    dsv3 = _term("dsv3", "weights").source
    assert "fp8-block checkpoint, the rest bf16" in dsv3 and "mxfp4" not in dsv3.lower()
    # DeepSeek-V4-Flash ships fp8 block-scaled layers and MXFP4 routed experts (expert_dtype fp4), on SGLang
    sg = _term("dsv4-sglang", "weights").source
    assert "fp8-block + mxfp4 checkpoint" in sg and "ModelRunner.load_model" in sg and "vLLM" not in sg
    assert _term("llama-custom", "weights").source == "this rank's shards as kvplan lays them out: bf16 checkpoint"


def test_gptq_weights_state_the_repack():
    # GPTQ int4 g128 Llama-3.1-8B on an A100 (Marlin): -(qzeros 851,968 + g_idx 155,648) x 32 layers = -32,243,712 B
    # = -0.03 GiB; on an H100 (Machete): -(2 + 1) x 16,384 x 32 = -1,572,864 B = -1.5 MiB (kvplan.vllm_layouts)
    for gpu, size in (("A100-80GB", "-0.03 GiB"), ("H100-SXM", "-1.5 MiB")):
        p = plan(load_preset("llama-3.1-8b"), get_gpu(gpu), EngineConfig(weight_format="gptq-int4-g128"),
                 suggest=False)
        src = next(t.source for t in p.ranks[0].terms if t.name == "weights")
        assert "served as gptq-int4-g128, the rest bf16" in src and f"({size} against the checkpoint)" in src
        assert "nvfp4" not in src.lower() and "mxfp4" not in src.lower()


def test_rope_row_states_this_models_table():
    # Llama-3.1-8B: 131,072 positions x 128 rotary dims x 2 B = 33,554,432 B
    llama = _term("llama", "rotary cos/sin caches")
    assert llama.bytes == 131_072 * 128 * 2 == 33_554_432
    assert llama.source.endswith("131,072 positions x 128 dims x bf16")
    # DeepSeek-V3's YaRN table: 4,096 x 40 = 163,840 positions x 64 dims x 2 B = 20,971,520 B
    dsv3 = _term("dsv3", "rotary cos/sin caches")
    assert dsv3.bytes == 163_840 * 64 * 2 and "163,840 positions x 64 dims x bf16" in dsv3.source
    for case in ("llama", "dsv3", "qwen3.5", "llama-v0"):
        assert "gpt-oss" not in _term(case, "rotary cos/sin caches").source, case
    # gpt-oss keeps its table in fp32: 131,072 x 64 x 4 B = 33,554,432 B
    oss = _term("gpt-oss", "rotary cos/sin caches")
    assert oss.bytes == 131_072 * 64 * 4
    assert oss.source.endswith("131,072 positions x 64 dims x fp32 (gpt-oss keeps its table in fp32)")


@pytest.mark.parametrize("case", sorted(CASES))
def test_no_developer_vocabulary_in_term_sources(case):
    for t in _plan(case).ranks[0].terms:
        for word in ("xfail", "README", "pinned", "tests/"):
            assert word not in t.source, (t.name, word)


def test_estimate_rows_keep_their_error_clause():
    act = _term("llama", "activation peak").source
    assert "estimate: within 0.25 GiB of the torch peak on the public logs that print it" in act
    assert "KV pool estimate: within max(1 %, 0.25 GiB) on 109 public vLLM logs, 22 miss by -2.89 to +3.36 GiB" in act
    nt = _term("llama", "non-torch memory").source
    assert "estimate: within 0.12 GiB on the public logs that print it" in nt
    graphs = _term("llama", "CUDA graphs").source
    assert "Estimate: within 0.25 GiB on 39 of 43 public H100 logs (mean error 0.16 GiB), 4 miss" in graphs
    assert _term("llama", "CUDA graphs").basis == "estimated" and _term("llama", "non-torch memory").basis == "fitted"


def test_dsv4_sglang_plan_carries_only_the_sglang_note():
    warnings = _plan("dsv4-sglang").warnings
    assert V4_SGLANG_PART in warnings and VLLM_V4_NOTE not in warnings
    for w in warnings:
        for word in ("vllm_dsv4", "vLLM 0.", "vLLM's", "vllm-convention", "kvplan/"):
            assert word not in w, (word, w)


def test_dsv4_vllm_plan_carries_only_the_vllm_note():
    warnings = _plan("dsv4-vllm").warnings
    assert any(w.startswith(V4_VLLM_PART) for w in warnings)
    assert not any("SGLang" in w for w in warnings)
