"""The Budget table's source texts speak of the plan on screen, in a vLLM / SGLang user's words (kvplan issue 12, a
browser QA walk 2026-12-02): the weights row names only this checkpoint's format(s), the RoPE row this model's tables
(gpt-oss only for gpt-oss), the estimate rows their error against public logs without developer vocabulary, and a
DeepSeek-V4 plan carries only its engine's note. Texts only: the bytes are the ones the other tests pin."""
import re
from functools import lru_cache

import pytest

from kvplan import load_preset
from kvplan.draft_model import load_draft_model
from kvplan.drafter import load_drafter
from kvplan.engines import EngineConfig
from kvplan.families.deepseek_v4 import V4_SGLANG_PART, V4_VLLM_PART, VLLM_V4_NOTE
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.web.formulas import budget_formulas

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
    assert ("KV pool estimate: within max(1 %, 0.25 GiB) on 175 of 216 public vLLM log figures; the 41 misses "
            "run -2.89 to +3.91 GiB") in act
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


# ------------------------------------------------------------------------------------------ engine names, not kvplan's
# Every text a plan shows (each term's name, basis and source, the warnings, the predicted start-up log and the
# Budget page's formulas) names the engine's own files and functions: never a kvplan module ("kvplan.") nor one of
# kvplan's own function / class names (kvplan issues 11, 12). The plans cover each kind of row: dense, MXFP4 gpt-oss
# on the three selector generations, DSA GLM-5 (CUDA, with MTP, ROCm), DeepSeek-V4, Gaudi (profiled and a typed KV
# size), SGLang (dense, DSA, MXFP4, DeepSeek-V4, a MambaPool hybrid, NEXTN), EAGLE3, a draft model, FP8 on Ampere.
SCAN_CASES = {
    "dense": ("llama-3.1-8b", "H100-SXM", {}, {}),
    "dense-0.23": ("llama-3.1-8b", "H100-SXM", {"vllm_version": "0.23"}, {}),
    "dense-v0": ("llama-3.1-8b", "H100-SXM", {"vllm_version": "0.7"}, {}),
    "gpt-oss-triton": ("gpt-oss-120b", "H100-SXM", {}, {}),
    "gpt-oss-0.11-marlin": ("gpt-oss-20b", "H100-SXM", {"vllm_version": "0.11"}, {}),
    "gpt-oss-0.20": ("gpt-oss-20b", "H100-SXM", {"vllm_version": "0.20"}, {}),
    "glm-5": ("glm-5", "H200", {}, {"tp": 8}),
    "glm-5-mtp": ("glm-5", "H200", {"speculative_method": "mtp", "num_speculative_tokens": 1}, {"tp": 8}),
    "glm-5-rocm": ("glm-5", "MI355X", {}, {"tp": 8}),
    "dsv4-hopper": ("deepseek-v4-flash", "H200", {}, {"tp": 8, "dp": 4}),  # I 2,048 / 32 = 64: Humming pads it
    "dsv4-hopper-0.30": ("deepseek-v4-flash", "H200", {"vllm_version": "0.30"}, {"tp": 8, "dp": 4}),  # Marlin
    "dsv4-mtp": ("deepseek-v4-flash", "RTX-PRO-6000", {"vllm_version": "0.25", "speculative_method": "mtp",
                                                        "num_speculative_tokens": 2, "kv_cache_dtype": "fp8"}, {"tp": 2}),
    "dsv3-fp8-ampere": ("deepseek-v3", "A100-80GB", {"max_model_len": 8192}, {"tp": 8, "pp": 2}),
    "qwen3.5-mtp": ("qwen3.5-27b", "H100-SXM", {"speculative_method": "mtp", "num_speculative_tokens": 1}, {}),
    "gaudi": ("llama-3.1-70b", "Gaudi3", {}, {"tp": 4}),
    "gaudi-kv-bytes": ("llama-3.1-8b", "Gaudi3", {"kv_cache_memory_bytes": 20 * 2**30}, {}),
    "sglang": ("llama-3.1-8b", "H100-SXM", {"engine": "sglang"}, {}),
    "sglang-glm-5": ("glm-5", "H200", {"engine": "sglang"}, {"tp": 8}),
    "sglang-gpt-oss": ("gpt-oss-120b", "H100-SXM", {"engine": "sglang"}, {}),
    "sglang-dsv4": ("deepseek-v4-flash", "B200", {"engine": "sglang"}, {"tp": 8}),
    "sglang-hybrid": ("nemotron-h-56b", "H100-SXM", {"engine": "sglang", "max_model_len": 32768}, {"tp": 2}),
    "sglang-nextn": ("deepseek-v3", "H200", {"engine": "sglang", "speculative_method": "mtp",
                                             "num_speculative_tokens": 3}, {"tp": 8}),
    "sglang-glm-5-sm100": ("glm-5", "B200", {"engine": "sglang"}, {"tp": 8}),
    "gemma-4": ("gemma-4-26b-a4b", "H100-SXM", {"max_model_len": 32768}, {}),
    "glm-5.2-fp8": ("glm-5.2-fp8", "H200", {}, {"tp": 8}),
}


def _scan_engine(case: str) -> EngineConfig:
    kw = dict(SCAN_CASES[case][2])
    if case == "eagle3":
        kw.update(speculative_method="eagle3", num_speculative_tokens=3,
                  draft=load_drafter("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "eagle3"))
    if case == "sglang-eagle3":
        kw.update(engine="sglang", speculative_method="eagle3", num_speculative_tokens=3,
                  draft=load_drafter("lmsys/EAGLE3-gpt-oss-120b-bf16", "eagle3"))
    if case == "draft-model":
        kw.update(speculative_method="draft_model", num_speculative_tokens=4, max_model_len=32768,
                  draft=load_draft_model("meta-llama/Llama-3.2-1B"))
    return EngineConfig(**kw)


SCAN_CASES["eagle3"] = ("llama-3.1-8b", "H100-SXM", {}, {})
SCAN_CASES["draft-model"] = ("llama-3.1-8b", "H100-SXM", {}, {})
SCAN_CASES["sglang-eagle3"] = ("gpt-oss-120b", "H100-SXM", {}, {})


@lru_cache(maxsize=None)
def _kvplan_names() -> frozenset[str]:
    """Every function and class kvplan defines (its package's modules, web/ and validate/ included) whose name could
    not be an English word: one with an underscore inside or a capital after the first letter."""
    import ast
    from pathlib import Path

    import kvplan

    names = set()
    for path in Path(kvplan.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                bare = node.name.strip("_")
                if "_" in bare or any(c.isupper() for c in bare[1:]):
                    names.add(node.name)
    return frozenset(names)


@lru_cache(maxsize=None)
def _forbidden_pattern():
    forbidden = _kvplan_names() - ENGINE_NAMES
    return re.compile(r"\b(" + "|".join(sorted(map(re.escape, forbidden), key=len, reverse=True)) + r")\b")


# kvplan names that are also the engine's own, spelled as the engine spells them (each read in its source: vLLM
# 0.30.0 / 0.33.0, SGLang 0.5.23, vllm-gaudi @091bbad), so a text may name them
ENGINE_NAMES = {
    "format_bytes",  # vllm_gaudi/extension/profiler.py format_bytes (the plugin's log sizes)
    "max_running_requests",  # SGLang managers/scheduler.py Scheduler.max_running_requests (--max-running-requests)
    "lm_head",  # the models' own module (vLLM models/llama.py self.lm_head = ParallelLMHead(...), SGLang's alike)
    "mla_attention", "MLAAttention",  # vLLM 0.30+ model_executor/layers/attention/mla_attention.py MLAAttention
    "swa_tokens", "bytes_per_full_token",  # SGLang model_executor/pool_configurator.py's DSV4 log fields
}


@lru_cache(maxsize=None)
def _scan_plan(case: str):
    name, gpu, _, lay = SCAN_CASES[case]
    return plan(load_preset(name), get_gpu(gpu), _scan_engine(case), Layout(**lay), suggest=False)


def _shown_texts(p) -> list[str]:
    texts = [f"{t.name} | {t.basis} | {t.source}" for r in p.ranks for t in r.terms]
    texts += list(p.warnings) + list(p.engine_log)
    texts += [f"{title} | {latex}" for title, latex in budget_formulas(p)]
    return texts


@pytest.mark.parametrize("case", sorted(SCAN_CASES))
def test_shown_texts_name_the_engine_not_kvplan(case):
    p = _scan_plan(case)
    pattern = _forbidden_pattern()
    for text in _shown_texts(p):
        assert "kvplan." not in text, text
        hit = pattern.search(text)
        assert hit is None, (hit and hit.group(0), text)


def test_scan_finds_a_kvplan_name():
    # the scan itself can fail: last review's sampler-state row named kvplan.engines.vllm_v2_sampler_state_bytes
    assert "vllm_v2_sampler_state_bytes" in _kvplan_names() - ENGINE_NAMES
    assert "vllm_dsa_index_group_bytes" in _kvplan_names() - ENGINE_NAMES


# ------------------------------------------------------------------------------------------ rows with their numbers
def _glm5_groups(**kw):
    p = plan(load_preset("glm-5"), get_gpu("H200"), EngineConfig(**kw), Layout(tp=8), suggest=False)
    return next(t for t in p.ranks[0].terms if t.name.startswith("DSA index-group"))


def test_dsa_index_group_row_shows_this_plans_numbers():
    # GLM-5: 78 layers, each with its own indexer, index_topk 2,048. 1,024 sequences, 8,192 batched tokens, no
    # speculation: R = min(8,192, 1,024 x 1) = 1,024 rows; a group holds (R + 1) x 2,048 x 4 B = 8,396,800 B
    # (16,400 x 512 B: one allocator block as is) + (R + 1) x 4 B = 4,100 B -> 4,608 B (512 B blocks) = 8,401,408 B;
    # 78 groups = 655,309,824 B = 0.6103 GiB a rank
    row = _glm5_groups(max_num_seqs=1024)
    assert row.bytes == 78 * (1025 * 2048 * 4 + 4608) == 655_309_824
    assert "min(8,192, 1,024 x 1) = 1,024" in row.source
    assert "78 groups x 8,401,408 B (1,025 x 2,048 x 4 B + 1,025 x 4 B, in allocator blocks)" in row.source
    assert row.source.endswith("= 655,309,824 B = 0.61 GiB a rank")


def test_dsa_index_group_row_follows_the_sequences_and_the_mtp_layer():
    # 256 sequences, MTP with 1 draft token: R = min(8,192, 256 x 2) = 512; a group (513 x 2,048 x 4 = 4,202,496 B,
    # 8,208 x 512: as is) + (513 x 4 = 2,052 -> 2,560 B) = 4,205,056 B; 78 groups + the MTP layer's own (CUDA: R rows
    # too) = 79 x 4,205,056 = 332,199,424 B = 0.3094 GiB a rank
    row = _glm5_groups(max_num_seqs=256, speculative_method="mtp", num_speculative_tokens=1)
    assert row.bytes == 79 * 4_205_056 == 332_199_424
    assert "min(8,192, 256 x 2) = 512: 78 groups x 4,205,056 B" in row.source
    assert ("+ 1 group x 4,205,056 B (513 x 2,048 x 4 B + 513 x 4 B, in allocator blocks) for the MTP layer"
            in row.source)
    assert row.source.endswith("= 332,199,424 B = 0.31 GiB a rank")


def test_mxfp4_row_names_the_releases_own_functions():
    # read in the wheels (kvplan.vllm_layouts.vllm_mxfp4_functions): 0.11.0 quantization/mxfp4.py get_mxfp4_backend,
    # padding in Mxfp4MoEMethod.create_weights; 0.20.0 GptOssMxfp4MoEMethod with select_gpt_oss_mxfp4_moe_backend;
    # 0.33.0 select_mxfp4_moe_backend and mxfp4_round_up_hidden_size_and_intermediate_size
    def row(case):
        return next(t.source for t in _scan_plan(case).ranks[0].terms if t.name.startswith("MXFP4 MoE layout"))

    old = row("gpt-oss-0.11-marlin")
    assert "quantization/mxfp4.py get_mxfp4_backend takes MARLIN" in old
    assert "quantization/mxfp4.py Mxfp4MoEMethod.create_weights holds the experts with I padded to 128" in old
    assert "select_gpt_oss_mxfp4_moe_backend takes TRITON" in row("gpt-oss-0.20")
    new = row("gpt-oss-triton")
    assert "fused_moe/oracle/mxfp4.py select_mxfp4_moe_backend takes TRITON" in new
    assert "GptOssMxfp4MoEMethod.create_weights" in new and "mxfp4_round_up_hidden_size_and_intermediate_size" in new
    # DeepSeek-V4 on Hopper: Humming from the 0.33 profile (0.32.0: prioritize_humming), Marlin at 0.30
    assert "select_deepseek_v4_mxfp4_moe_backend puts HUMMING ahead of MARLIN on SM 9.0" in row("dsv4-hopper")
    assert "select_deepseek_v4_mxfp4_moe_backend gives DeepSeek-V4's MXFP4 experts MARLIN" in row("dsv4-hopper-0.30")


def test_v2_sampler_state_row_names_where_the_release_makes_it():
    # v1/worker/gpu/model_runner.py: the Sampler and StructuredOutputsWorker are made in GPUModelRunner.__init__ in
    # the 0.22.0 / 0.23.0 wheels, in load_model from 0.24.0 (0.24.0 - 0.33.0 wheels read)
    def row(case):
        return next(t.source for t in _scan_plan(case).ranks[0].terms if t.name.startswith("V2 sampler state"))

    assert "GPUModelRunner.__init__ (0.22.0 - 0.23.0" in row("dense-0.23")
    assert "GPUModelRunner.load_model after 'Model loading took'" in row("dense")


def test_mtp_warning_speaks_of_the_plan_on_screen():
    from kvplan.plan import MTP_UNCOUNTED

    glm = [w for w in _scan_plan("glm-5-mtp").warnings if w.startswith(MTP_UNCOUNTED)]
    assert len(glm) == 1 and "glm-5's 1 multi-token-prediction layer:" in glm[0] and "vLLM, 1 token)" in glm[0]
    assert "recurrent" not in glm[0]  # GLM-5 has no recurrent layer
    qwen = [w for w in _scan_plan("qwen3.5-mtp").warnings if w.startswith(MTP_UNCOUNTED)]
    assert len(qwen) == 1 and "qwen3.5-27b's 1 multi-token-prediction layer:" in qwen[0]
    assert "each recurrent layer's extra state page" in qwen[0]
    for w in glm + qwen:
        assert "Qwen3.8" not in w and "RTX 5090" not in w, w
