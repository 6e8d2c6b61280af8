"""QA pass on 2026-12-03's features (qa15): a plan the core refuses (vLLM 0.34, a DSA --block-size vLLM does not start)
is named at the top of Paging, which then pages at no guessed block size (it drew vLLM 0.33's 16 under a 0.34 plan that
runs 64, with no refusal on the page); Validate's Block size is not labelled the plan's when the plan is refused; the
SGLang sidebar names a missing draft head in SGLang's words (EAGLE3 / EAGLE, --speculative-algorithm)."""

from kvplan.engines import vllm_default_block_size
from kvplan.web import views
from tests.app_util import metrics, plain, run_app, state

PAGING = "pages/paging.py"
VALIDATE = "pages/validate.py"


def _errors(at) -> list[str]:
    return [plain(e.value) for e in at.error]


def test_paging_names_a_refused_034_plan_at_the_top_and_draws_no_guessed_paging():
    at = run_app({"v": "1", "m": "llama-3.1-8b", "vv": "0.34", "spec": "ngram", "nspec": "2"}, PAGING)
    assert not at.exception
    # the refusal, first on the page, its field named
    # (0.34 plans most models; speculative decoding stays refused on it: kvplan.plan's 0.34 refusals)
    assert _errors(at)[0].startswith("**vllm_version**: vLLM 0.34.0: speculative decoding is not planned")
    # 0.34 runs 64-token blocks by default (config/cache.py DEFAULT_BLOCK_SIZE), the page used to draw 0.33's 16
    assert vllm_default_block_size("0.34") == 64 and vllm_default_block_size("0.33") == 16
    assert views.block_size_for(state(at)) is None
    assert "Blocks allocated" not in metrics(at)
    assert any("No block size to page at" in plain(i.value) for i in at.info)
    # the "vLLM 0.34 takes --block-size ..." flag caption is gone (the refusal says what to plan instead)
    assert not [c for c in at.caption if "takes --block-size" in c.value]


def test_paging_a_typed_size_under_a_refused_plan_is_the_arithmetic_alone():
    at = run_app({"v": "1", "m": "llama-3.1-8b", "vv": "0.34", "spec": "ngram", "nspec": "2", "bs": "64"}, PAGING)
    assert not at.exception and "vLLM 0.34.0: speculative decoding is not planned" in _errors(at)[0]
    # the default lengths 120, 45, 300, 64, 250, 17, 96, 200 (1,092 tokens) in 64-token blocks:
    # 2 + 1 + 5 + 1 + 4 + 1 + 2 + 4 = 20 blocks = 1,280 slots, 1,280 - 1,092 = 188 empty
    m = metrics(at)
    assert (m["Blocks allocated"], m["Slots allocated"], m["Slots used"], m["Slots wasted"]) == (
        "20", "1,280", "1,092", "188")
    # no bytes: they are the plan's bytes per block, and there is no plan
    assert not [c for c in at.caption if "B per block" in c.value]


def test_paging_names_a_refused_dsa_block_size():
    at = run_app({"v": "1", "m": "deepseek-v3.2", "tp": "8", "g": "H200", "bs": "32"}, PAGING)
    assert not at.exception
    top = _errors(at)[0]
    assert top.startswith("**block_size**: vLLM 0.33 does not start this DSA model at --block-size 32")
    assert "No valid attention backend found for cuda" in top and "use a multiple of 64" in top
    # the typed 32 explored: 4 + 2 + 10 + 2 + 8 + 1 + 3 + 7 = 37 blocks (ceil of each default length / 32)
    assert metrics(at)["Blocks allocated"] == "37"


def test_paging_of_a_plan_shows_no_refusal():
    at = run_app({"v": "1", "m": "llama-3.1-8b"}, PAGING)
    assert not at.exception and not at.error
    # 16-token blocks: 8 + 3 + 19 + 4 + 16 + 2 + 6 + 13 = 71 blocks (the 0.33 default)
    assert metrics(at)["Blocks allocated"] == "71"
    assert [c for c in at.caption if "vLLM 0.33 takes --block-size" in c.value]


def _block_box(at):
    return next(s for s in at.selectbox if s.label == "Block size")


def test_validate_labels_no_block_the_plans_when_the_plan_is_refused():
    at = run_app({"v": "1", "m": "llama-3.1-8b", "vv": "0.34", "spec": "ngram", "nspec": "2"}, VALIDATE)
    assert not at.exception
    box = _block_box(at)
    assert box.value == 16 and box.format_func(16) == "16"  # not "16 (the plan's: vLLM 0.34 on H100-SXM)"
    assert any("The sidebar's plan is refused" in plain(i.value) and "vllm_version" in plain(i.value)
               for i in at.info)
    typed = _block_box(run_app({"v": "1", "m": "llama-3.1-8b", "vv": "0.34", "spec": "ngram", "nspec": "2",
                                "bs": "64"}, VALIDATE))
    assert typed.value == 64 and typed.format_func(64) == "64"  # the typed size, not the plan's either
    planned = _block_box(run_app({"v": "1", "m": "llama-3.1-8b"}, VALIDATE))
    assert planned.value == 16 and planned.format_func(16) == "16 (the plan's: vLLM 0.33 on H100-SXM)"


def test_sglang_names_a_missing_eagle_head_in_its_own_words():
    at = run_app({"v": "1", "m": "llama-3.1-8b", "e": "sglang", "spec": "eagle"})
    at.session_state["kv.knobs"] = True
    at.run()
    assert not at.exception
    info = plain(" ".join(i.value for i in at.sidebar.info))
    assert "No EAGLE draft head kvplan ships is for llama-3.1-8b" in info and "llama-3.1-8b (EAGLE3)" in info
    assert "(eagle3)" not in info


def _warnings(at) -> list[str]:
    return [plain(w.value) for w in at.warning]


UNSIZED = ("--moe-backend triton: kvplan does not size that MoE backend (only auto, marlin and cutlass are, and triton "
           "for FP8 experts): the workspace it keeps after the profile run is not in the activation peak")


def test_an_unsized_moe_backend_warns_on_parallelism_and_gpus_too():
    # Qwen3-30B-A3B's bf16 experts with --moe-backend triton: unsized (kvplan.plan.unsized_moe_backend_note), so the
    # plan warns; Budget listed it, Parallelism and GPUs (which list no plan warnings) said nothing
    for page in ("pages/parallelism.py", "pages/gpus.py", "pages/budget.py"):
        at = run_app({"v": "1", "m": "qwen3-30b-a3b", "moe": "triton"}, page)
        assert not at.exception and sum(UNSIZED in w for w in _warnings(at)) == 1, (page, _warnings(at))
        at = run_app({"v": "1", "m": "qwen3-30b-a3b", "moe": "marlin"}, page)  # sized: no such warning
        assert not at.exception and not [w for w in _warnings(at) if "does not size that MoE backend" in w], page


def test_the_moe_backend_warning_reads_the_sidebars_gpu_as_the_plan_does():
    # gpt-oss-120b with --moe-backend triton: on an H100 (SM 9.0) it is auto's own Triton layout, sized, so the plan
    # and Budget say nothing; Parallelism and GPUs asked kvplan.plan.unsized_moe_backend_note without the GPU, which
    # reads as "other" (no Triton) and warned there alone. On a B200 triton is sized too (triton_kernels' Blackwell
    # layouts); on an A100 vLLM refuses TRITON for these experts (the plan's refusal, not this warning)
    for page in ("pages/parallelism.py", "pages/gpus.py", "pages/budget.py"):
        for gpu in ("H100-SXM", "B200"):
            at = run_app({"v": "1", "m": "gpt-oss-120b", "g": gpu, "moe": "triton"}, page)
            assert not at.exception and not [w for w in _warnings(at) if "kvplan does not size that backend" in w], (
                page, gpu, _warnings(at))
