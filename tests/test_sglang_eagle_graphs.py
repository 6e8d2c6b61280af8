"""What an SGLang EAGLE3 head / STANDALONE draft allocates and frees after the pools are sized (kvplan.sglang
draft_after_pool_note, eagle3_d2t_bytes, draft_graph_pool), read in the sglang 0.5.14 / 0.5.20 / 0.5.21 / 0.5.23
wheels (2026-12): EagleDraftWorker.alloc_memory_pool allocates the draft's pool, then init_lm_head frees the head's own
embed_tokens (set_embed: del + empty_cache) and moves hot_token_id (d2t + arange, int64 [draft_vocab_size]) to the
GPU; init_cuda_graphs then captures the draft's graphs (0.5.20+ into the target's graph memory pool:
get_or_create_global_graph_memory_pool; 0.5.14 one pool per runner). None of it changes the pool, so the plan's
numbers stay those of tests/test_sglang_eagle3_plan.py; the note says what comes out of the memory left free.

The one public figure for the draft's graphs found (sgl-project/sglang issue #10088, 2025-09-05): "Capture draft cuda
graph end ... mem usage=0.21 GB" beside the target's 0.54 GB, an EAGLE launch on 8 GPUs with FA3 whose model and
flags the issue does not give: no plan to compare with, so no xfail test; kvplan derives no graph bytes for the
target either (kvplan.sglang.log_lines: "the CUDA-graph lines are not derived").
"""

import pytest

from kvplan.errors import PlanInputError
from kvplan.sglang import draft_after_pool_note, draft_graph_pool, eagle3_d2t_bytes
from tests.test_sglang_eagle3_plan import LLAMA_EMBED, OSS_EMBED, eagle

LLAMA = ("llama-3.1-8b", "lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B", "H100-SXM")


def note(plan) -> str:
    (w,) = [w for w in plan.warnings if "after the pools are sized" in w]
    return w


def test_d2t_bytes():
    # SpecForge's Llama-3.1-8B head: draft_vocab_size 32,000 x 8 B (torch.int64) = 256,000 B; no draft_vocab_size: none
    assert eagle3_d2t_bytes({"draft_vocab_size": 32_000}) == 256_000
    assert eagle3_d2t_bytes({"vocab_size": 128_256}) == 0
    with pytest.raises(PlanInputError) as exc:
        eagle3_d2t_bytes({"draft_vocab_size": "32000"})
    assert exc.value.field == "draft_config.draft_vocab_size"


def test_llama_head_after_the_pools_on_an_h100():
    p = eagle(*LLAMA)
    w = note(p)
    # the pool is the one planned before (no term moves): 382,940 tokens
    assert p.kv_cache_tokens == 382_940
    # 0.5.20 reserve on an H100 (TP 1): 512 + 8,192 x 1.5 + 1 / 8 x 1,024 + 256 x 2 + 58 prefill graphs x 8 =
    # 512 + 12,288 + 128 + 512 + 464 = 13,904 MiB
    assert "comes out of the 13,904 MiB SGLang's default rule reserves outside mem_fraction_static" in w
    # freed: embed_tokens 128,256 x 4,096 x 2 = 1,050,673,152 B; d2t 256,000 B -> 1,050,417,152 B back
    assert f"vocab copies ({LLAMA_EMBED:,} B" in w and LLAMA_EMBED == 1_050_673_152
    assert "d2t map on the GPU (256,000 B: draft_vocab_size 32,000 x int64)" in w
    assert f"{LLAMA_EMBED - 256_000:,} B back before CUDA-graph capture" in w and "1,050,417,152 B back" in w
    # the draft's graphs: cuda_graph_max_bs 256 clamped to the 48-request pool (speculative default); 0.5.20 captures
    # them into the target's graph memory pool; estimated, with the public figure named
    assert "decode-step and draft-extend CUDA graphs up to batch 48 (cuda_graph_max_bs 256" in w
    assert "into the target's graph memory pool" in w and "issue #10088" in w
    # the blanket claim is gone from every warning
    assert not any("CUDA graphs (inside the reserve)" in x or "d2t map (hot_token_id" in x for x in p.warnings)


def test_gpt_oss_head_bytes():
    # embed_tokens 201,088 x 2,880 x 2 = 1,158,266,880 B freed, d2t 32,000 x 8 = 256,000 B: 1,158,010,880 B back
    w = note(eagle("gpt-oss-120b", "lmsys/EAGLE3-gpt-oss-120b-bf16", "H200"))
    assert f"vocab copies ({OSS_EMBED:,} B" in w and "1,158,010,880 B back" in w


def test_flags_change_what_the_note_says():
    assert "(1 - --mem-fraction-static) share left free" in note(eagle(*LLAMA, mem_fraction_static=0.8))
    assert "no draft graphs are captured" in note(eagle(*LLAMA, enforce_eager=True))
    from kvplan.drafter import load_drafter
    from tests.app_util import kvplan_plan

    one = note(kvplan_plan("llama-3.1-8b", "H100-SXM", engine="sglang", sglang_version="0.5.20",
                           speculative_method="eagle3", num_speculative_tokens=1,  # --speculative-num-steps 1: no
                           draft=load_drafter(LLAMA[1], "eagle3")))  # decode-step runner
    assert "the draft's draft-extend CUDA graphs up to batch 48" in one and "decode-step" not in one
    capped = note(eagle(*LLAMA, max_num_seqs=16))  # --max-running-requests 16
    assert "up to batch 16 (cuda_graph_max_bs 256, clamped to the 16-request pool)" in capped


def test_graph_pool_by_release():
    assert [draft_graph_pool(v) for v in ("0.5.14", "0.5.15", "0.5.18", "0.5.20", "0.5.21")] == [
        "their own", "unread", "unread", "the target's", "the target's"]
    assert "into their own graph memory pool" in note(eagle(*LLAMA, version="0.5.14"))
    assert "this line's not read" in note(eagle(*LLAMA, version="0.5.17"))


def test_no_d2t_no_freed():
    # a STANDALONE draft keeps its own tables and has no d2t: only the graphs are said
    w = draft_after_pool_note("STANDALONE draft model", 0, 0, 13_904.0, 256, False, 3, 48)
    assert w.startswith("STANDALONE draft model (SGLang), after the pools are sized") and "B back" not in w
    assert "d2t" not in w and "init_lm_head" not in w


def test_standalone_plan_note():
    from kvplan.draft_model import load_draft_model
    from tests.app_util import kvplan_plan

    p = kvplan_plan("llama-3.1-8b", "H100-SXM", engine="sglang", sglang_version="0.5.20",
                    speculative_method="draft_model", num_speculative_tokens=3,
                    draft=load_draft_model("meta-llama/Llama-3.2-1B-Instruct"))
    w = note(p)
    assert w.startswith("STANDALONE draft model (SGLang), after the pools") and "d2t" not in w
    assert "13,904 MiB" in w and p.kv_cache_tokens == 260_364


def test_eagle_1_head_with_a_llama_class_is_refused_with_its_reason():
    # SGLang builds the class the draft config names (no renaming): an EAGLE (1) head is models/llama_eagle.py
    # LlamaForCausalLMEagle; a LlamaForCausalLM config would be a one-layer Llama, not a head kvplan models
    from kvplan.drafter import load_drafter, parse_draft
    from tests.app_util import kvplan_plan

    head = load_drafter("eagle3-llama3.1-8b", "eagle3")
    with pytest.raises(PlanInputError) as exc:
        kvplan_plan("llama-3.1-8b", "H100-SXM", engine="sglang", speculative_method="eagle", num_speculative_tokens=3,
                    draft=parse_draft("eagle", {**head.config, "architectures": ["LlamaForCausalLM"]}, "e1"))
    assert exc.value.field == "--speculative-algorithm" and "SGLang builds the class the draft config names" in \
        exc.value.message
