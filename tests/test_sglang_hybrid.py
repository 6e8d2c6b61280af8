"""SGLang plans of hybrid models with recurrent-state layers: the MambaPool per release line, or a refusal naming why.

SGLang keeps the conv + temporal states of Mamba-2 / GDN layers in a MambaPool of its own (mem_cache/memory_pool.py
MambaPool, HybridReqToTokenPool), sized first out of the profiled rest (kvplan.sglang.mamba_pool, pinned to logs in
tests/test_sglang_hybrid_pool.py); only the full-attention layers go into its token-granular KV pool. Before this,
kvplan refused every such plan (and earlier still borrowed vLLM's hybrid page: a 521-token block for
qwen3.5-397b-a17b on 8 x H200). Lines or families whose rule was not read are refused with a PlanInputError naming
the field: the release line (sglang_version), the model (engine), or the layout that is not modelled.
"""

import pytest
import transformers

from kvplan import parse_config
from kvplan.engines import EngineConfig
from kvplan.errors import PlanInputError
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.picker import pick_gpus
from kvplan.plan import plan
from kvplan.presets import load_preset
from kvplan.sglang import SGLANG_PROFILES, hybrid_refusal, recurrent_state_refusal
from tests.app_util import metrics, plain, run_app
from tests.test_engine_sglang import figures

H200 = get_gpu("H200")


TP8 = Layout(tp=8)


def refusal(spec, layout=TP8, **engine) -> PlanInputError:
    with pytest.raises(PlanInputError) as info:
        plan(spec, H200, EngineConfig(engine="sglang", **engine), layout)
    return info.value


def mamba_line(p) -> str:
    return next(line for line in p.engine_log if line.startswith("Mamba Cache is allocated."))


# layer counts read off the presets' config.json: Qwen3.5-397B full_attention_interval 4 over 60 layers -> 15 full,
# 45 linear_attention (GDN); Qwen3-Next-80B 48 layers -> 12 full, 36 GDN; Nemotron-H-56B's hybrid_override_pattern
# has 54 "M" (Mamba-2) of 118 blocks; Nemotron-3-Nano-30B 23 "M" of 52; Qwen3.5-27B 64 layers -> 48 GDN.
@pytest.mark.parametrize("preset, tp, state_layers, attention_layers", [
    ("qwen3.5-397b-a17b", 8, 45, 15), ("qwen3-next-80b-a3b", 4, 36, 12), ("nemotron-h-56b", 4, 54, 10),
    ("nemotron-3-nano-30b-a3b", 1, 23, 6), ("qwen3.5-27b", 2, 48, 16),
])
def test_hybrid_presets_plan_on_sglang_with_a_mamba_pool(preset, tp, state_layers, attention_layers):
    p = plan(load_preset(preset), H200, EngineConfig(engine="sglang"), Layout(tp=tp))
    rank = p.ranks[0]
    term = next(t for t in rank.terms if t.name.startswith("Mamba state pool"))
    slots = int(mamba_line(p).split("max_mamba_cache_size: ")[1].split(",")[0])
    assert slots > 0 and term.basis == "engine rule" and "kv_cache_configurator._handle_max_mamba_cache" in term.source
    # the KV pool holds the attention layers only: its cell is the attention layers' K + V, one-token pages
    spec = load_preset(preset)
    attn = [layer for layer in spec.layers if layer.cache.kind == "full_attention"]
    assert len(attn) == attention_layers and sum(1 for layer in spec.layers if layer.cache.kind in (
        "mamba", "linear_attention")) == state_layers
    assert p.block_size == 1 and rank.kv_bytes_per_token == sum(a.cache.kv_bytes_per_token("vllm", tp, 2) for a in attn)
    assert p.kv_cache_tokens == rank.kv_pool_bytes // rank.kv_bytes_per_token
    # 0.5.20: extra_buffer (3 + 2 slots a running request) caps max_running_requests
    assert figures(p.engine_log)["running"] == slots // 5
    assert p.max_num_seqs_at_len <= slots // 5


def test_qwen35_397b_worked_numbers():
    # 8 x H200, defaults (0.5.20). A slot: 45 GDN layers x (conv (64 x 128 + 2 x 16 x 128) / 8 = 1536 channels x 3 x
    # 2 B = 9216 B + temporal 64 / 8 = 8 heads x 128 x 128 x 4 B = 524,288 B) = 24,007,680 B (22.90 MiB). The fraction:
    # Qwen3_5MoeForConditionalGeneration keeps its 58 breakable prefill graphs (the multimodal allowlist), so 512 +
    # 8192 x 1.5 + 8 / 8 x 1024 + 512 x 2 + 58 x 8 = 15312 MiB -> round(128459 / 143771, 3) = 0.893 x 0.92477 = 0.8258.
    # rest = 148,573,656,186 (pre) - 99,477,379,260 (weights) - 193,273,528 (overhead) - 25,879,197,836 ((1 - 0.8258) x
    # pre) - 104,857,600 (the 100 MiB multimodal reserve) = 22,918,947,962 B -> x 0.9 / 1.9 / slot = 452.2 -> 452 - 1 =
    # 451 slots, charged 452 slots = 10,851,471,360 B; the KV pool 12,067,476,602 B // (15 layers x max(1, 2 // 8) KV
    # head x 256 x (K + V) x 2 B = 15,360 B) = 785,643 tokens; max_running_requests 451 // 5 = 90 (with the graphs
    # off, as kvplan had it, 0.897 x 0.92477: 462 slots, 804,230 tokens)
    p = plan(load_preset("qwen3.5-397b-a17b"), H200, EngineConfig(engine="sglang"), Layout(tp=8))
    assert mamba_line(p) == ("Mamba Cache is allocated. max_mamba_cache_size: 451, conv_state size: 0.17GB, "
                             "ssm_state size: 9.93GB")
    assert p.kv_cache_tokens == 785_643 and figures(p.engine_log)["running"] == 90
    assert any("capped to 90 by the mamba state cache" in line for line in p.engine_log)
    # the Budget page's pool formula subtracts it, and its terms add up to the KV pool exactly
    from kvplan.web import formulas

    latex = dict(formulas.budget_formulas(p))["KV pool on the tightest rank"]
    assert r"- \text{mm reserve} - \text{Mamba pool}" in latex
    assert r"- 0.10\,\text{GiB} - 10.11\,\text{GiB} = 11.24\,\text{GiB}" in latex  # 10,851,471,360 / 12,067,476,602 B
    rank = p.ranks[0]
    spent = {t.name.split(" (")[0].split(":")[0]: t.bytes for t in rank.terms}
    assert rank.device_bytes - spent["CUDA context + NCCL"] - spent["left free"] - rank.weights_bytes - \
        spent["loading overhead"] - spent["multimodal embedding-cache reserve"] - spent["Mamba state pool"] == \
        rank.kv_pool_bytes
    # the old lines size it differently: 0.5.10 (no_buffer, 3 slots a request, no padding slot) keeps more requests
    old = plan(load_preset("qwen3.5-397b-a17b"), H200, EngineConfig(engine="sglang", sglang_version="0.5.10"),
               Layout(tp=8))
    slots = int(mamba_line(old).split("max_mamba_cache_size: ")[1].split(",")[0])
    assert figures(old.engine_log)["running"] == slots // 3


def test_release_lines_that_refuse_and_those_that_plan():
    spec = load_preset("qwen3.5-397b-a17b")
    refused = {"0.4.0", "0.4.5.post3", "0.4.6", "0.4.8", "0.5.3"}  # no hybrid, or two rules in one line
    too_new = {"0.5.4.post1", "0.5.6", "0.5.7", "0.5.8"}  # Qwen3.5 came with 0.5.9
    for version in SGLANG_PROFILES:
        if version in refused | too_new:
            exc = refusal(spec, sglang_version=version)
            assert exc.field == "sglang_version", version
            assert ("0.5.10 or newer" if version in too_new else "0.5.4.post1 or newer") in exc.message, version
        else:
            assert plan(spec, H200, EngineConfig(engine="sglang", sglang_version=version), Layout(tp=8)).kv_cache_tokens
    # Qwen3-Next plans from the 0.5.4.post1 line on; Nemotron-H there keeps 512 slots without the radix cache
    assert plan(load_preset("qwen3-next-80b-a3b"), H200, EngineConfig(engine="sglang", sglang_version="0.5.4.post1"),
                Layout(tp=4)).kv_cache_tokens > 0
    p = plan(load_preset("nemotron-h-56b"), H200, EngineConfig(engine="sglang", sglang_version="0.5.6"), Layout(tp=8))
    assert "max_mamba_cache_size: 512," in mamba_line(p) and figures(p.engine_log)["running"] == 512
    # at TP4 those 512 slots (217.58 MiB each) take more than the rest: SGLang fails to size a KV pool
    p = plan(load_preset("nemotron-h-56b"), H200, EngineConfig(engine="sglang", sglang_version="0.5.6"), Layout(tp=4))
    assert not p.starts and any("leaves no memory for the KV pool" in w for w in p.warnings)


def test_layouts_and_flags_that_are_not_modelled_are_refused_by_field():
    spec = load_preset("qwen3.5-397b-a17b")
    # SGLang's flag (audit6): EAGLE3 on a Qwen3.5 hybrid stays refused (NEXTN / EAGLE on its MTP layer and NGRAM plan)
    assert refusal(spec, speculative_method="eagle3", num_speculative_tokens=3).field == "--speculative-algorithm"
    assert refusal(spec, sglang_version="0.5.8", enable_prefix_caching=False).field in ("enable_prefix_caching",
                                                                                          "sglang_version")
    # Qwen3-Next-80B at TP64: its 16 key-head groups are extended to 64 (conv_dim 4096 + 2 x 64 x 128 = 20,480
    # divides), but its 32 value heads do not divide by 64 -> SGLang's divide asserts
    got = hybrid_refusal(load_preset("qwen3-next-80b-a3b"), "0.5.20", tp=64)
    assert got is not None and got[0] == "tensor_parallel_size"
    # ROCm: 0.5.14 - 0.5.15 resolve the extra_buffer strategy and then assert CUDA / MUSA / NPU
    mi = get_gpu("MI355X")
    for version in ("0.5.14", "0.5.15"):
        with pytest.raises(PlanInputError) as info:
            plan(load_preset("qwen3.5-27b"), mi, EngineConfig(engine="sglang", sglang_version=version))
        assert info.value.field == "sglang_version" and "ROCm" in info.value.message
    # every other line on ROCm plans: the aiter 0.85 haircut of mem_fraction_static accounts for the one public ROCm
    # log (MI355X, 0.5.17, tests/test_sglang_hybrid_pool.py Q38R: +0.15 % tokens from the flags)
    for version in ("0.5.10", "0.5.17", "0.5.20"):
        p = plan(load_preset("qwen3.5-27b"), mi, EngineConfig(engine="sglang", sglang_version=version))
        assert p.kv_cache_tokens > 0 and "x 0.85 for the aiter attention backend" in " ".join(
            t.source for t in p.ranks[0].terms)
    # flags that plan: a capped pool, a page size, an fp8 KV cache, the ratio, a fixed pool, bf16 states
    base = plan(spec, H200, EngineConfig(engine="sglang"), Layout(tp=8))
    for flags in ({"max_total_tokens": 100_000}, {"block_size": 64}, {"kv_cache_dtype": "fp8"},
                  {"mamba_full_memory_ratio": 0.5}, {"max_mamba_cache_size": 200}, {"mamba_ssm_dtype": "bfloat16"},
                  {"max_model_len": 4096}, {"enable_prefix_caching": False}):
        p = plan(spec, H200, EngineConfig(engine="sglang", **flags), Layout(tp=8))
        assert p.kv_cache_tokens > 0, flags
    assert plan(spec, H200, EngineConfig(engine="sglang", max_total_tokens=100_000), Layout(tp=8)).kv_cache_tokens \
        == 100_000
    # bf16 temporal states: about twice the slots of float32 (the conv state stays bfloat16)
    bf = plan(spec, H200, EngineConfig(engine="sglang", mamba_ssm_dtype="bfloat16"), Layout(tp=8))
    assert int(mamba_line(bf).split(": ")[1].split(",")[0]) > 1.9 * int(mamba_line(base).split(": ")[1].split(",")[0])
    # without the radix cache one slot a running request
    off = plan(spec, H200, EngineConfig(engine="sglang", enable_prefix_caching=False, max_num_seqs=64), Layout(tp=8))
    assert "max_mamba_cache_size: 64," in mamba_line(off) and figures(off.engine_log)["running"] == 64


def test_vllm_and_custom_still_plan_the_hybrid():
    spec = load_preset("qwen3.5-397b-a17b")
    vllm = plan(spec, H200, EngineConfig(engine="vllm"), Layout(tp=8))
    custom = plan(spec, H200, EngineConfig(engine="custom"), Layout(tp=8))
    assert vllm.kv_cache_tokens > 0 and vllm.block_size > 16  # vLLM's hybrid page, aligned to the GDN state page
    assert custom.kv_cache_tokens > 0


def test_models_without_recurrent_state_plan_on_sglang_as_before():
    # DeepSeek-V3 at TP 8 on H200: 655,268 one-token pages (the number tests/test_app_audit.py pins; 658,909 before
    # SGLang's MLA w_kc / w_vc, 0.238 GiB a rank, were priced: kvplan.sglang.mla_absorb_bytes)
    p = plan(load_preset("deepseek-v3"), H200, EngineConfig(engine="sglang"), Layout(tp=8))
    assert (p.block_size, p.kv_cache_tokens) == (1, 655_268)
    assert not any("Mamba" in line for line in p.engine_log)
    # sliding windows are attention, not recurrent state: gpt-oss and Gemma-2 are not refused
    for name in ("gpt-oss-120b", "gemma-2-27b-it", "llama-3.1-8b"):
        assert recurrent_state_refusal(load_preset(name)) is None, name
        assert plan(load_preset(name), H200, EngineConfig(engine="sglang"), Layout(tp=2)).kv_cache_tokens > 0


def _family(model_type: str, **overrides):
    cfg = transformers.AutoConfig.for_model(model_type, **overrides).to_dict()
    cfg["model_type"] = model_type
    return parse_config({**cfg, "torch_dtype": "bfloat16"})


def test_families_sglang_serves_plan_the_others_are_refused():
    # transformers 5.23 config defaults: Falcon-H1 32 layers of attention + Mamba-2 side by side (planned: the pool
    # covers every layer's Mamba-2 half); Granite-4 with attention every 4th layer (planned); Jamba 28 Mamba of 32,
    # Zamba2 45 Mamba + 9 shared-attention hybrids, LFM2 short convs: not read in SGLang's configs -> "engine"
    falcon = plan(_family("falcon_h1"), H200, EngineConfig(engine="sglang"))
    assert falcon.kv_cache_tokens > 0 and "max_mamba_cache_size" in mamba_line(falcon)
    granite = _family("granitemoehybrid", num_hidden_layers=8,
                      layer_types=["mamba", "mamba", "mamba", "attention"] * 2)
    assert plan(granite, H200, EngineConfig(engine="sglang")).kv_cache_tokens > 0
    # the all-Mamba default Granite config keeps no KV pool at all: refused on "model"
    assert hybrid_refusal(_family("granitemoehybrid"))[0] == "model"
    cases = [
        (_family("jamba"), "28 of 32 layers keep a recurrent state (28 mamba)"),
        (_family("zamba2"), "54 of 54 layers keep a recurrent state (45 mamba, 9 attention_and_mamba)"),
        (_family("lfm2", num_hidden_layers=3, layer_types=["conv", "full_attention", "conv"]),
         "2 of 3 layers keep a recurrent state (2 short_conv)"),
    ]
    for spec, held in cases:
        message = recurrent_state_refusal(spec)
        assert message is not None and held in message and "plan it with vLLM or the custom engine" in message
        with pytest.raises(PlanInputError) as info:
            plan(spec, H200, EngineConfig(engine="sglang"))
        assert info.value.field == "engine"


def test_the_picker_plans_sglang_hybrids_and_skips_refused_lines():
    spec = load_preset("qwen3.5-27b")
    result = pick_gpus(spec, 8192, 4, EngineConfig(engine="sglang"), gpus=[H200])
    assert result.options  # on SGLang now, as on vLLM
    old = pick_gpus(spec, 8192, 4, EngineConfig(engine="sglang", sglang_version="0.5.3"), gpus=[H200])
    assert not old.options and any("two rules in one line" in r.reason for r in old.rejected)


def test_the_app_plans_an_sglang_hybrid_and_shows_the_mamba_term():
    from tests.test_app_engine_knobs import terms

    at = run_app({"v": "1", "m": "qwen3.5-397b-a17b", "tp": "8", "g": "H200", "e": "sglang"})
    assert not at.exception and not at.error
    assert metrics(at)["KV cache tokens"] == "785,643"
    budget = terms(at)
    assert any(name.startswith("Mamba state pool (451 slots") for name in budget), budget
    # a line that refuses: the error names it, no figures; switching back to vLLM plans again
    at = run_app({"v": "1", "m": "qwen3.5-397b-a17b", "tp": "8", "g": "H200", "e": "sglang", "sv": "0.5.3"})
    assert "two rules in one line" in plain(" ".join(e.value for e in at.error)) and not at.metric
    at.sidebar.radio(key="w.engine").set_value("vllm").run()
    assert not at.exception and metrics(at)["KV cache tokens"]


@pytest.mark.parametrize("page", ["pages/gpus.py", "pages/parallelism.py", "pages/paging.py", "pages/model.py"])
def test_every_page_survives_an_sglang_hybrid(page):
    run_app({"v": "1", "m": "qwen3-next-80b-a3b", "tp": "4", "g": "H200", "e": "sglang"}, page=page)  # no exception


def test_an_imported_sglang_line_of_a_hybrid_plans():
    from tests.test_app_engine_knobs import pasted

    at = pasted("python -m sglang.launch_server --model-path Qwen/Qwen3.5-397B-A17B --tp 8", "H200")
    at.button(key="import.apply").click().run()
    assert not at.exception and not at.error
    assert metrics(at)["KV cache tokens"] == "785,643"


def test_dp_attention_sizes_a_pool_per_worker():
    # B200, TP8 --dp 8 (0.5.20): one attention rank a worker, so a slot holds every head: 45 x (12,288 x 3 x 2 B +
    # 64 x 128 x 128 x 4 B) = 192,061,440 B (183.16 MiB); each worker's rest gives its own slots and cap (slots // 5)
    spec = load_preset("qwen3.5-397b-a17b")
    p = plan(spec, get_gpu("B200"), EngineConfig(engine="sglang", dp_attention_size=8), TP8)
    term = next(t for t in p.ranks[0].terms if t.name.startswith("Mamba state pool"))
    slots = int(mamba_line(p).split("max_mamba_cache_size: ")[1].split(",")[0])
    assert f"x {192_061_440 / 2**20:.2f} MiB" in term.name and term.bytes == (slots + 1) * 192_061_440
    assert figures(p.engine_log)["running"] == slots // 5
    # --max-mamba-cache-size N is split over the workers: 800 // 8 = 100 slots each
    p = plan(spec, get_gpu("B200"), EngineConfig(engine="sglang", dp_attention_size=8, max_mamba_cache_size=800), TP8)
    assert "max_mamba_cache_size: 100," in mamba_line(p) and figures(p.engine_log)["running"] == 20
    # on 8 x H200 the replicated attention weights leave a negative rest: no slot, SGLang refuses to start
    p = plan(spec, H200, EngineConfig(engine="sglang", dp_attention_size=8), TP8)
    assert not p.starts and any("sizes no MambaPool" in w for w in p.warnings)
    assert "too little" in p.verdict and p.ranks[0].kv_pool_bytes < 0
    assert any(line.startswith("RuntimeError: Not enough GPU memory for hybrid") for line in p.engine_log)
    # 0.5.4.post1 - 0.5.6 divide even the ratio's slots by --dp for GDN: refused
    with pytest.raises(PlanInputError) as info:
        plan(load_preset("qwen3-next-80b-a3b"), H200, EngineConfig(engine="sglang", sglang_version="0.5.6",
                                                                    dp_attention_size=4), Layout(tp=4))
    assert info.value.field == "dp_attention_size"


def test_pipeline_stages_charge_the_largest_stage_share():
    # 0.5.17+ (_handle_max_mamba_cache pp_layer_scale): TP4 PP2 over Qwen3.5-397B's 60 layers -> 30 a stage (0.5.6+
    # get_pp_indices), 23 GDN layers on stage 0 (full attention at 3, 7, ..., 27), 22 on stage 1; every stage charges
    # int(45 x 1,067,008 B x 23 / 45) = 24,541,184 B (23.40 MiB) a slot; stage 1 allocates 22 layers' worth
    spec = load_preset("qwen3.5-397b-a17b")
    p = plan(spec, H200, EngineConfig(engine="sglang"), Layout(tp=4, pp=2))
    names = [next(t.name for t in r.terms if t.name.startswith("Mamba")) for r in p.ranks]
    assert all("x 23.40 MiB)" in n for n in names), names
    assert p.kv_cache_tokens == min(r.num_blocks for r in p.ranks)
    # before 0.5.17 every stage charged the whole model's slot: refused
    assert refusal(spec, Layout(tp=4, pp=2), sglang_version="0.5.15").field == "pipeline_parallel_size"
