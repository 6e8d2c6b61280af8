"""Polish of the 2026-12-01 UI audit: SGLang plans cite SGLang, SGLang's STANDALONE, the multimodal encoder-step basis,
NGRAM steps, --compilation-config cudagraph_mode, recounted pool-accuracy texts."""

from kvplan.sglang import speculative_refusal
from tests.app_util import kvplan_plan

CORE = dict(preset="deepseek-v3", gpu="H200", tp=8, engine="sglang")


def _term(plan, name):
    return next(t for r in [plan.ranks[0]] for t in r.terms if t.name == name)


def test_sglang_mtp_terms_cite_sglang_not_vllm():
    plan = kvplan_plan(**CORE, speculative_method="mtp", num_speculative_tokens=3)
    terms = {t.name: t for t in plan.ranks[0].terms}
    mtp = terms["MTP layers (in weights)"]
    assert "--speculative-algorithm NEXTN / EAGLE (3 draft tokens)" in mtp.source
    assert "DeepseekV3ForCausalLMNextN (models/deepseek_nextn.py)" in mtp.source
    assert "freed after the pool is sized" in mtp.source
    assert "vllm" not in mtp.source.lower() and "shared with the target" not in mtp.source
    # the next row: the draft's own copies, 2 x 129,280 / 8 x 7,168 x 2 = 463,339,520 B
    copies = terms["MTP draft's embed_tokens / lm_head copies (freed after the pool is sized)"]
    assert copies.bytes == 463_339_520
    w = terms["weights"]
    assert "ModelRunner.load_model" in w.source and "GPUModelRunner" not in w.source and "vLLM" not in w.source


def test_vllm_mtp_term_still_cites_vllm():
    plan = kvplan_plan(preset="deepseek-v3", gpu="H200", tp=8, speculative_method="mtp", num_speculative_tokens=3)
    mtp = {t.name: t for t in plan.ranks[0].terms}["MTP layers (in weights)"]
    assert "vllm/model_executor/models/deepseek_mtp.py" in mtp.source


def test_sglang_refusal_names_standalone_for_a_draft_model():
    # STANDALONE (vLLM's draft_model) is planned (tests/test_sglang_eagle3_plan.py); under DP attention SGLang refuses it
    assert speculative_refusal("0.5.20", "draft_model") is None
    field, msg = speculative_refusal("0.5.20", "draft_model", 2)
    assert field == "--speculative-algorithm"
    assert msg.startswith("STANDALONE with DP attention: SGLang refuses it") and "DRAFT_MODEL" not in msg


def test_encoder_step_peak_takes_the_estimate_basis():
    from kvplan.engines import EngineConfig
    from kvplan.gpus import get_gpu
    from kvplan.parallel import Layout
    from kvplan.plan import plan
    from kvplan.presets import load_preset

    # vLLM 0.32: on 0.33 the V2 dummy sampler's second pass (2,246,311,936 B + the held 536,870,912 = 2,783,182,848,
    # tests/test_app_import_carry.py) is above the encoder step, so the LM's fitted basis is the term's there
    p = plan(load_preset("qwen3-vl-8b-instruct"), get_gpu("H100"), EngineConfig(vllm_version="0.32"), Layout(tp=1))
    act = next(t for t in p.ranks[0].terms if t.name.startswith("activation peak"))
    # the encoder step (~2.52 GiB, 65,536 patches) beats the LM's dummy run + 0.500 GiB held outputs
    assert act.basis == "estimate"
    assert act.name == "activation peak: the encoder step (1 image item), above the LM's 8192 batched tokens, " \
                       "1024 sampler rows"
    assert "the encoder step is the peak" in act.source and act.bytes == 2_701_131_776
    # a text-only model keeps the fitted LM basis and the plain name
    lm = plan(load_preset("qwen3-8b"), get_gpu("H100"), EngineConfig(), Layout(tp=1))
    act = next(t for t in lm.ranks[0].terms if t.name.startswith("activation peak"))
    assert (act.basis, act.name) == ("fitted", "activation peak (8192 batched tokens, 1024 sampler rows)")


def test_sglang_import_labels_default_steps_and_ngram_shows_none_of_the_mtp_default():
    from kvplan.web.commands import parse_command
    from kvplan.web.views import vllm_rows

    def row(line):
        c = parse_command("python3 -m sglang.launch_server " + line)
        return {r["flag"]: r["value"] for r in vllm_rows(c.args, c)}["--speculative-algorithm"]

    # SGLang's _handle_ngram: num_steps = num_draft_tokens (12) // ngram max BFS breadth (10) = 1, not 3
    assert row("--model-path Qwen/Qwen3-8B --speculative-algorithm NGRAM") == (
        "NGRAM, steps: SGLang's default (draft tokens // ngram max BFS breadth, 1 with its defaults)")
    assert row("--model-path Qwen/Qwen3-8B --speculative-algorithm NGRAM --speculative-num-steps 4") == "NGRAM, 4 steps"
    assert row("--model-path deepseek-ai/DeepSeek-V3 --speculative-algorithm EAGLE --tp 8") == (
        "NEXTN / EAGLE (MTP layers), 3 steps (default)")
    assert row("--model-path deepseek-ai/DeepSeek-V3 --speculative-algorithm NEXTN --speculative-num-steps 2 --tp 8") == (
        "NEXTN / EAGLE (MTP layers), 2 steps")


def test_compilation_config_cudagraph_mode_is_parsed_in_every_spelling():
    import pytest

    from kvplan.engines import EngineConfig
    from kvplan.errors import PlanInputError
    from kvplan.vllm_args import parse_vllm_command

    for flag in ("--compilation-config '{\"cudagraph_mode\": \"PIECEWISE\"}'", "-O '{\"cudagraph_mode\": \"piecewise\"}'",
                 "-cc '{\"cudagraph_mode\":\"PIECEWISE\"}'", "--compilation_config.cudagraph_mode PIECEWISE",
                 "-O.cudagraph_mode=PIECEWISE", "-cc.cudagraph_mode=PIECEWISE", "-cc.cudagraph_mode PIECEWISE"):
        # -cc.KEY: FlexibleArgumentParser nests the dotted key of any flag, the -cc alias included (0.33.0
        # utils/argparse_utils.py); it was read as an unplanned VllmConfig setting
        a = parse_vllm_command(f"vllm serve m/x {flag}")
        assert a.cudagraph_mode == "PIECEWISE" and a.unknown == (), flag
        assert EngineConfig(**a.engine_fields()).cudagraph_mode == "PIECEWISE"
    a = parse_vllm_command("vllm serve m/x -O '{\"cudagraph_mode\": \"NONE\", \"cudagraph_capture_sizes\": [1, 2], "
                           "\"level\": 3}'")
    assert a.cudagraph_mode == "NONE"
    assert a.notes == ("--compilation-config cudagraph_mode NONE: planned by the core (EngineConfig.cudagraph_mode); "
                       "the app's Apply sets the sidebar's advanced CUDA-graph mode (link key cgm); "
                       "--compilation-config keys cudagraph_capture_sizes, level: read, not planned (kvplan reads "
                       "only cudagraph_mode; CUDA-graph capture sizes change the graph memory vLLM reserves)",)
    # vLLM's FULL / FULL_DECODE_ONLY (config/compilation.py CUDAGraphMode): not modelled, refused naming the flag;
    # the verbatim DeepSeek NVFP4 benchmark line (find_string id 16010886653; $MODEL $TP $PP $DP filled in)
    with pytest.raises(PlanInputError) as exc:
        parse_vllm_command("VLLM_USE_FLASHINFER_MOE_FP4=1 vllm serve nvidia/DeepSeek-R1-FP4 -tp 4 -pp 1 -dp 2 "
                           "--enable-expert-parallel --attention-backend FLASHINFER_MLA --max-cudagraph-capture-size 2048 "
                           "--compilation_config.cudagraph_mode FULL_DECODE_ONLY --no-enable-prefix-caching "
                           "--async-scheduling")
    assert exc.value.field == "--compilation-config"
    assert "cudagraph_mode FULL_DECODE_ONLY: not modelled" in str(exc.value)
    assert "kvplan plans NONE, PIECEWISE, FULL_AND_PIECEWISE" in str(exc.value)
    with pytest.raises(PlanInputError, match="cudagraph_mode FULL: not modelled"):
        parse_vllm_command("vllm serve m/x --compilation-config '{\"cudagraph_mode\": \"full\"}'")
    with pytest.raises(PlanInputError, match="vLLM takes one of NONE, PIECEWISE, FULL, FULL_DECODE_ONLY"):
        parse_vllm_command("vllm serve m/x --compilation-config '{\"cudagraph_mode\": \"EAGER\"}'")


def test_pool_accuracy_text_is_the_recount():
    from kvplan.plan import POOL_ACCURACY

    # counted 2026-12-04 by bench/pool_accuracy.py (216 figures, 175 within, 41 strict xfails; the comment above
    # POOL_ACCURACY gives the extremes' plans)
    assert ("within max(1 %, 0.25 GiB) on 175 of 216 public vLLM log figures; the 41 misses run -2.89 to "
            "+3.91 GiB") in POOL_ACCURACY
    assert "(+4.33 GiB with an LMCache connector, +6.83 against a recipe PR's prose figure for GLM-5.3)" in POOL_ACCURACY


def test_dsv32_sglang_log_dtype_is_the_plans_own():
    # kvplan.sglang's DSA rule: --kv-cache-dtype auto is bfloat16 below SM 10 (H200), fp8_e4m3 on SM >= 10 (B200).
    # The cell: 61 layers x (576-wide latent x b + 132 B indexer key): bf16 61 x 1,284 = 78,324; fp8 61 x 708 = 43,188
    h200 = kvplan_plan("deepseek-v3.2", "H200", tp=8, engine="sglang")
    assert h200.ranks[0].kv_bytes_per_token == 61 * (576 * 2 + 132) == 78_324
    assert any(line.startswith("KV Cache is allocated. dtype: torch.bfloat16,") for line in h200.engine_log)
    b200 = kvplan_plan("deepseek-v3.2", "B200", tp=8, engine="sglang")
    assert b200.ranks[0].kv_bytes_per_token == 61 * (576 + 132) == 43_188
    assert any(line.startswith("KV Cache is allocated. dtype: torch.float8_e4m3fn,") for line in b200.engine_log)
