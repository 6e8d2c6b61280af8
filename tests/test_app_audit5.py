"""The fifth UI audit's findings (qa, 2026-12-02), each fixed and asserted with the plan's own numbers.

* Budget's "Bytes per block" formula for DeepSeek-V4-Flash on 8 x B200 (vLLM 0.33) read
  "62 x 1,002,240 B = 1,002,240 B": a product that is false. vLLM's packed DSV4 pool (kvplan.vllm_dsv4.dsv4_layout)
  gives each of its five groups a page that is already the sum over the group's layers, and a block is the largest
  group page (0.27+): the MLA group's 1,002,240 B (its 62 layers). 152,483,850,850 B of pool // 1,002,240 = 152,143.
* A context past the model's own maximum (vLLM / SGLang refuse it without an override) read "fits": now "does not
  start" on Budget (and the CLI), named on Parallelism and GPUs, and no fix suggests such a context.
* Import: --quantization fp8 on a checkpoint shipped in another format is refused as the engines refuse it; on an FP8
  checkpoint it plans the checkpoint as shipped.
* MTP on DeepSeek-V4 names the checkpoint's MTP layer kvplan does not build (it said there were none).
* --max-num-batched-tokens below an explicit --max-num-seqs is refused (it read "fits").
* Import: flags that change memory and that the plan leaves out are warnings, counted above the plan (--config FILE
  was "no effect on memory"; --mamba-ssm-cache-dtype float32 and --hf-overrides were infos).
* Presentation: the Budget chart's sequence count with separators; no "every compared TP degree" caption when every
  compared layout is refused.
"""

from kvplan.web.cached import plan_for
from kvplan.web.formulas import budget_formulas
from kvplan.web.state import PlanState


def test_the_bytes_per_block_formula_of_a_packed_dsv4_pool_is_not_a_false_product():
    p = plan_for(PlanState(model="deepseek-v4-flash", gpu="B200", tensor_parallel_size=8))
    # 151,573 blocks since e2dce0e counts DeepSeek-V4's fp32 rope tables and model buffers at load (152,143 before:
    # 570 blocks x 1,002,240 B = 571,276,800 B, the ~0.53 GiB those buffers take from the pool); 151,116 since a B200
    # captures up to 1024 tokens from 0.28.0 (kvplan.engines VLLM_CHANGES capture_1024_sm100): 83 + 83 graphs, 80 MiB +
    # 2 x 1024 x 3,584 x 2 B + 164 x 43 x 160 KiB = 1,253,965,824 B, not 51 + 51's 795,738,112 B: 458,227,712 B more,
    # 457 blocks; 149,952 on 0.33: the V2 dummy sampler's second pass, 1,024 x 129,280 x 14 + 1 MiB + 8,192 x 4,096 x 2
    # + a held 67,108,864 = 1,988,624,384 B of peak vs 822,083,584, 1,166,540,800 B = 1,164 blocks less
    assert len(p.kv_groups) == 5 and p.kv_groups[0].layers == 62 and p.num_blocks == 149_952
    formulas = dict(budget_formulas(p))
    title = next(k for k in formulas if k.startswith("Bytes per block"))
    text = formulas[title]
    assert r"62 \times" not in text  # 62 x 1,002,240 is 62,138,880, not one block
    assert title == "Bytes per block (5 groups, each page the sum over its layers)"
    assert text.endswith(r"\max_{\text{groups}} \sum_{\text{layers}} \text{page} = 1{,}002{,}240\,\text{B}")
    assert max(g.page_bytes for g in p.kv_groups) == 1_002_240
    # one uniform group keeps the product: gpt-oss-120b's 18-layer groups of 32,768 B pages
    oss = dict(budget_formulas(plan_for(PlanState(model="gpt-oss-120b"))))
    assert oss["Bytes per block"].endswith(r"= 18 \times 32{,}768\,\text{B} = 589{,}824\,\text{B}")


# ------------------------------------------------------------------ a context past what the engine accepts
# vLLM's _get_and_verify_max_len refuses --max-model-len 200000 for Llama-3.1-8B: max_position_embeddings 131,072, rope
# type llama3 (not multiplied by its factor 8): "User-specified max_model_len (200000) is greater than the derived
# max_model_len ...". The memory alone holds it on an H200 (the Budget said "fits"): now "does not start", named.

LONG = {"v": "1", "m": "llama-3.1-8b", "g": "H200", "len": "200000"}


def test_a_context_past_the_models_maximum_does_not_start_on_budget_and_is_named_on_every_page():
    from kvplan.plan import context_ceiling
    from kvplan.presets import load_preset
    from tests.app_util import metrics, run_app, warnings

    assert context_ceiling(load_preset("llama-3.1-8b")) == 131_072
    assert context_ceiling(load_preset("gpt-oss-120b")) == 131_072  # yarn: 4,096 x 32
    assert context_ceiling(load_preset("deepseek-v3")) == 163_840  # yarn: 4,096 x 40, not 163,840 x 40
    at = run_app(LONG)
    assert metrics(at)["Verdict"] == "does not start"
    said = [e.value for e in at.error]
    assert any(r"\-\-max\-model\-len 200,000 is past the model's 131,072 tokens" in e and "VLLM\\_ALLOW\\_LONG" in e
               for e in said), said
    assert not at.success
    for page in ("pages/parallelism.py", "pages/gpus.py"):
        at = run_app(LONG, page=page)
        assert any("200,000 is past the model's 131,072 tokens" in w for w in warnings(at)), page
    # at the model's own maximum it fits, with no such warning
    at = run_app(dict(LONG, len="131072"))
    assert metrics(at)["Verdict"] == "fits" and not any("is past the model" in w for w in warnings(at))
    # SGLang names its own flag and override
    at = run_app(dict(LONG, e="sglang"))
    assert any(r"\-\-context\-length 200,000 is past" in e and "SGLANG\\_ALLOW\\_OVERWRITE" in e
               for e in [e.value for e in at.error])


# ------------------------------------------------------------------ Import: --quantization fp8 on a shipped format
# Kimi-K2.5 ships compressed-tensors w4a16 experts: `--quantization fp8` makes vLLM / SGLang raise "Quantization method
# specified in the model config (compressed-tensors) does not match ... (fp8)". The Import page planned it re-stored as
# FP8 (121.08 GiB of weights a GPU on 8 x H200, "Does not fit") and Apply put weight format fp8 in the sidebar.
# DeepSeek-V3 ships FP8 (quant_method fp8): the flag keeps its block-FP8 config, 79.55 GiB a GPU (per-tensor: 79.53).

def test_import_refuses_quantization_fp8_on_a_checkpoint_shipped_in_another_format():
    from tests.app_util import metrics, run_app, state

    line = "python3 -m sglang.launch_server --model-path moonshotai/Kimi-K2.5 --tp 8 --quantization fp8"
    at = run_app({"v": "1", "cmd": line, "ig": "H200"}, page="pages/import.py")
    assert "Verdict" not in metrics(at)  # no plan drawn for a start no engine makes
    assert any(e.value.startswith(r"**\-\-quantization**: fp8\: kimi\-k2\.5 ships quantized \(w4a16\-g32")
               for e in at.error), [e.value for e in at.error]
    at.button(key="import.apply").click().run()
    assert state(at).model == "llama-3.1-8b" and state(at).weight_format is None  # nothing applied
    assert any(e.value.startswith(r"Not applied: \-\-quantization") for e in at.error)


def test_import_of_quantization_fp8_on_an_fp8_checkpoint_plans_it_as_shipped():
    from kvplan.units import GiB
    from kvplan.web.cached import plan_for
    from tests.app_util import run_app, state

    at = run_app({"v": "1", "cmd": "vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --quantization fp8", "ig": "H200"},
                 page="pages/import.py")
    assert any("the checkpoint ships FP8 \\(fp8\\-block" in c.value for c in at.caption)
    at.button(key="import.apply").click().run()
    s = state(at)
    assert (s.model, s.weight_format, s.tensor_parallel_size) == ("deepseek-v3", None, 8)
    assert round(plan_for(s).ranks[0].weights_bytes / GiB, 2) == 79.55
    # an unquantized checkpoint still takes online FP8
    at = run_app({"v": "1", "cmd": "vllm serve Qwen/Qwen3-8B --quantization fp8", "ig": "H100-SXM"},
                 page="pages/import.py")
    at.button(key="import.apply").click().run()
    assert state(at).weight_format == "fp8"


# ------------------------------------------------------------------ MTP on DeepSeek-V4: planned
# DeepSeek-V4-Flash's config has num_nextn_predict_layers 1; Import of `--speculative-config '{"method":"mtp",...}'`
# first said "no multi-token-prediction layers to load", then that kvplan did not build that layer; it now plans vLLM's
# DeepSeekV4MTP draft (tests/test_dsv4_mtp.py), so the page shows no MTP error.

def test_mtp_on_deepseek_v4_is_planned():
    import json

    from tests.app_util import run_app

    spec = json.dumps({"method": "mtp", "num_speculative_tokens": 1})
    line = f"vllm serve deepseek-ai/DeepSeek-V4-Flash -tp 8 --speculative-config '{spec}'"
    at = run_app({"v": "1", "cmd": line, "ig": "B200"}, page="pages/import.py")
    said = " ".join(e.value for e in at.error)
    assert "multi" not in said and "not modelled by kvplan" not in said, said


def test_the_budget_chart_title_writes_a_large_sequence_count_with_separators():
    from kvplan.web import figures
    from kvplan.web.cached import plan_for

    # 12,000 sequences of 1,024 tokens asked of Llama-3.1-8B on one H100: the title read "12000 x 1,024 tokens"
    p = plan_for(PlanState(model="llama-3.1-8b", max_model_len=1024, concurrency=12_000))
    assert figures.rank_memory(p).layout.title.text == "Memory per GPU: H100-SXM, 12,000 x 1,024 tokens"


def test_no_fix_suggests_a_context_past_the_models_maximum():
    from kvplan.web.cached import plan_for

    # Qwen3-8B (max_position_embeddings 40,960) at 1,000,000 tokens on one H100: the fix was "--max-model-len 399696"
    # (what the memory holds), itself past 40,960; and fp8 KV at 1M tokens is no fix either
    p = plan_for(PlanState(model="qwen3-8b", max_model_len=1_000_000))
    assert not p.fits
    assert p.suggestions == ["--max-model-len 40960: the model's own maximum (max_position_embeddings with its rope "
                             "scaling)"]
    # within the maximum the memory's own longest context is still the fix: 40,960 tokens x 64 sequences asked
    p = plan_for(PlanState(model="qwen3-8b", concurrency=64))
    assert not p.fits and not any("own maximum" in s for s in p.suggestions)


def test_the_cli_says_does_not_start_for_a_context_past_the_models_maximum(capsys):
    from kvplan.cli import main

    assert main(["plan", "qwen3-8b", "--max-model-len", "131072"]) == 0
    verdict = capsys.readouterr().out.splitlines()[1]
    assert verdict.startswith("  Does not start: --max-model-len 131,072 is past the model's 40,960 tokens "
                              "(max_position_embeddings 40,960): vLLM refuses to start")
    # 0.33: 24,558 blocks of 2,359,296 B / 8,192 a request = 2.998 -> 2 sequences (0.32: 24,982 -> 3.05 -> 3; the V2
    # sampler pass, 1,024 x 151,936 x 14 + 1 MiB + 8,192 x 4,096 x 2 = 2,246,311,936 B of peak vs 1,244,659,712)
    assert verdict.endswith("In memory alone: Fits: 2 sequences of 131,072 tokens at once on the tightest rank.")


# ------------------------------------------------------------------ --max-num-batched-tokens below --max-num-seqs
# vllm/config/scheduler.py SchedulerConfig._verify_args raises "max_num_batched_tokens (128) must be greater than or
# equal to max_num_seqs (256)." (public reports: verl / RL launchers with 448 < 1024). kvplan said "fits" (3.47x).

def test_batched_tokens_below_max_num_seqs_is_refused_naming_both():
    from tests.app_util import metrics, run_app

    at = run_app({"v": "1", "m": "llama-3.1-8b", "seqs": "256", "mbt": "128"})
    assert "Verdict" not in metrics(at)
    said = " ".join(e.value for e in at.error)
    assert r"**max\_num\_batched\_tokens**: 128 is below max\_num\_seqs (256)" in said.replace(r"\(", "(").replace(
        r"\)", ")"), said
    # either alone is what vLLM accepts (a default max_num_seqs is lowered to the batched tokens)
    assert metrics(run_app({"v": "1", "m": "llama-3.1-8b", "mbt": "128"}))["Verdict"] == "fits"
    assert metrics(run_app({"v": "1", "m": "llama-3.1-8b", "seqs": "256", "mbt": "256"}))["Verdict"] == "fits"


# ------------------------------------------------------------------ Import: flags that change memory, left out
# `--num-gpu-blocks-override 100` makes vLLM allocate 100 blocks; the page showed kvplan's 24,982 beside a green "fits"
# with the flag only in a blue info list. `--config FILE` (a YAML of more options, the memory flags included) was
# listed as "no effect on memory".

def test_import_names_flags_that_change_memory_and_are_left_out_as_warnings_above_the_plan():
    from tests.app_util import plain, run_app

    def warnings(at):
        return [plain(w.value) for w in at.warning]

    at = run_app({"v": "1", "cmd": "vllm serve Qwen/Qwen3-8B --num-gpu-blocks-override 100", "ig": "H100-SXM"},
                 page="pages/import.py")
    said = warnings(at)
    assert said[0].startswith("**This plan leaves out 1 memory-changing flag**")
    assert "- --num-gpu-blocks-override 100: not modeled (replaces the computed number of KV blocks)" in said, said
    assert not any("num-gpu-blocks" in plain(i.value) for i in at.info)
    at = run_app({"v": "1", "cmd": "vllm serve --config /etc/vllm.yaml", "ig": "H100-SXM"}, page="pages/import.py")
    assert any("/etc/vllm.yaml: not modeled (a YAML file of more options" in w for w in warnings(at)), warnings(at)
    assert not any("no effect on memory: --config" in plain(i.value) for i in at.info)


def test_parallelism_says_nothing_of_compared_tp_degrees_when_every_layout_is_refused():
    from tests.app_util import plain, run_app

    # gpt-oss-120b (64 query heads, 8 KV heads) with only TP 9 compared: refused, and the caption "8 KV head(s): every
    # compared TP degree splits them without replicas" spoke of a TP 9 that splits nothing
    at = run_app({"v": "1", "m": "gpt-oss-120b", "lay": "9x9x9"}, page="pages/parallelism.py")
    assert any("TP9 PP9 DP9: tensor_parallel_size: 9 does not divide num_attention_heads (64)" in plain(e.value)
               for e in at.error)
    assert not any("every compared TP degree" in c.value for c in at.caption)
    at = run_app({"v": "1", "m": "gpt-oss-120b", "lay": "2x1x1"}, page="pages/parallelism.py")
    assert any("8 KV heads: every compared TP degree splits them without replicas" in c.value for c in at.caption)


def test_an_unplanned_state_dtype_flag_is_a_warning_unless_auto():
    from tests.app_util import plain, run_app

    # Nemotron-H-56B's config names no mamba_ssm_cache_dtype: kvplan plans its SSM state in bf16, vLLM with
    # --mamba-ssm-cache-dtype float32 holds it in 4 bytes (twice the state); the note was a blue info
    line = "vllm serve nvidia/Nemotron-H-56B-Base-8K --mamba-ssm-cache-dtype "
    at = run_app({"v": "1", "cmd": line + "float32", "ig": "H100-SXM"}, page="pages/import.py")
    said = [plain(w.value) for w in at.warning]
    assert said[0].startswith("**This plan leaves out 1 memory-changing flag**")
    assert any(w.startswith("- --mamba-ssm-cache-dtype float32: read, not planned") for w in said), said
    at = run_app({"v": "1", "cmd": line + "auto", "ig": "H100-SXM"}, page="pages/import.py")
    assert not at.warning
