"""Speculative decoding and the vLLM KV pool (issue 11, residual item 2).

What vLLM's own sources say (read in the 0.11.0, 0.17.0 and 0.33.0 wheels):
- attention groups: ``FullAttentionSpec.max_memory_usage_bytes`` = cdiv(max_model_len, block_size) x page in every
  version: no lookahead slots in the pool sizing (the scheduler's num_lookahead_tokens, eagle / mtp only, is capped
  at max_model_len in ``KVCacheManager.allocate_slots``);
- recurrent-state groups (Mamba / GDN / linear attention): 0.17+ ``MambaSpec(num_speculative_blocks =
  speculative_config.num_speculative_tokens)`` and ``max_memory_usage_bytes = page x (1 + num_speculative_blocks)``
  (layers/mamba/abstract.py get_kv_cache_spec; kv_cache_interface.py), page x (2 + k + checkpoint pages) in
  prefix-caching "align" mode, which 0.33 uses for hybrids by default; the 0.11 wheel's MambaSpec counts one page;
- a gated-DeltaNet conv state holds kernel - 1 + k columns (mamba_utils.py gated_delta_net_state_shape num_spec, 0.11.0
  and 0.29.0 wheels): the state page, and the attention block aligned to it, grow with k (kvplan.plan.spec_conv_layers;
  pinned by a Qwen3.6 MTP log, tests/test_qwen35_mtp.py);
- MTP / eagle drafter layers register their own attention layers, which join the groups (MTP: kvplan adds the
  checkpoint's MTP layers on the last stage, tests/test_towers_mtp.py).
The numbers below are hand-derived from those rules; a public Qwen3.6-35B-A3B MTP start-up log (block size, padding
layers, tokens) is pinned in tests/test_qwen35_mtp.py.
"""

import pytest

from kvplan import load_preset
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.units import GiB

H200 = get_gpu("H200")
POOL = 20 * GiB  # --kv-cache-memory-bytes: the pool fixed, so only the per-request blocks move


def _plan(version, method="none", k=0, prefix_caching=False):
    engine = EngineConfig(vllm_version=version, max_model_len=32768, kv_cache_memory_bytes=POOL,
                          speculative_method=method, num_speculative_tokens=k, enable_prefix_caching=prefix_caching)
    return plan(load_preset("qwen3-next-80b-a3b"), H200, engine, Layout(tp=2))


def test_qwen3_next_ngram_state_pages_per_draft_token_v0_33():
    # Qwen3-Next-80B-A3B at TP2: 36 Gated-DeltaNet + 12 full-attention layers -> 3 state groups + 1 attention group
    # of 12; the attention block grows to 544 tokens so one page holds a GDN state (Platform._align_hybrid_block_size).
    # 20 GiB / (12 x 557,056 B page) = 3,212 blocks. One request of 32,768 with --no-enable-prefix-caching:
    # cdiv(32768, 544) = 61 attention blocks + 3 state groups x 1 page.
    off = _plan("0.33")
    assert off.block_size == 544 and off.num_blocks == 3212 and off.ranks[0].bytes_per_block == 6_684_672
    assert off.blocks_per_request == 61 + 3
    # ngram, 3 draft tokens: each GDN conv state holds 3 more columns (gated_delta_net_state_shape num_spec, any
    # method): 4,096 x (3 + 3) x 2 B + 16 x 128 x 128 x 2 B = 573,440 B a page, so the block grows to
    # 16 x cdiv(573,440, 16 x 1,024) = 560 tokens; 20 GiB / (12 x 573,440) = 3,120 blocks. Each state group holds
    # 1 + 3 pages -> cdiv(32,768, 560) = 59 + 3 x 4 = 71 blocks per request
    on = _plan("0.33", "ngram", 3)
    assert on.block_size == 560 and on.ranks[0].bytes_per_block == 12 * 573_440
    assert [g.blocks_per_request for g in on.kv_groups] == [4, 4, 4, 59]
    assert on.num_blocks == 3120 and on.blocks_per_request == 71
    assert on.max_concurrency == pytest.approx(3120 / 71) and round(on.max_concurrency, 2) == 43.94
    assert on.kv_cache_tokens == int(3120 / 71 * 32768) == 1_439_945  # 0.33 tokens line: concurrency x max len
    assert "GPU KV cache size: 1,439,945 tokens, Maximum concurrency for 32,768 tokens per request: 43.94x" \
        in on.engine_log
    # the longest start: (3,119 usable - 12 state pages) x 560 tokens
    assert on.max_model_len_that_starts == (3119 - 12) * 560 == 1_739_920
    assert off.max_concurrency == pytest.approx(3212 / 64)


def test_v0_33_prefix_caching_keeps_hybrid_states_in_align_mode():
    # vLLM 0.33 turns prefix caching on for hybrids by default -> mamba_cache_mode "align": page x (2 + k) per GDN
    # group (the FlashInfer-prefill checkpoint page is not modeled). Default (None) = on in 0.33:
    default = plan(load_preset("qwen3-next-80b-a3b"), H200, EngineConfig(
        vllm_version="0.33", max_model_len=32768, kv_cache_memory_bytes=POOL), Layout(tp=2))
    assert [g.blocks_per_request for g in default.kv_groups] == [2, 2, 2, 61] and default.blocks_per_request == 67
    assert default.max_concurrency == pytest.approx(3212 / 67)
    # with 3 draft tokens: 2 + 3 pages per state group -> 59 (560-token blocks, the conv columns) + 15 = 74
    assert _plan("0.33", "ngram", 3, prefix_caching=None).blocks_per_request == 59 + 3 * 5
    # 0.17 keeps prefix caching off for hybrids unless asked ("Hybrid models do not support prefix caching since
    # the feature is still experimental"): 1 page; asked: align, 2 pages
    assert _plan("0.17", prefix_caching=None).blocks_per_request == 61 + 3
    assert _plan("0.17", prefix_caching=True).blocks_per_request == 61 + 6
    # a Mamba-2 layer in align mode also keeps its prefill checkpoint page (mamba_mixer2.py:
    # num_prefill_checkpoint_blocks=1): Nemotron-H at 8192 tokens
    nem = load_preset("nemotron-h-56b")
    base = EngineConfig(vllm_version="0.33", max_model_len=8192, kv_cache_memory_bytes=POOL)
    on = plan(nem, H200, base, Layout(tp=4))
    off = plan(nem, H200, base.model_copy(update={"enable_prefix_caching": False}), Layout(tp=4))
    states_on = [g.blocks_per_request for g in on.kv_groups if g.kind == "mamba"]
    assert states_on and set(states_on) == {3}
    assert {g.blocks_per_request for g in off.kv_groups if g.kind == "mamba"} == {1}
    assert on.blocks_per_request - off.blocks_per_request == 2 * len(states_on)


def test_v0_11_counts_one_state_page_and_no_lookahead():
    # 0.11.0 wheel: MambaSpec.max_memory_usage_bytes = page_size_bytes (one page, whatever the draft length); its
    # qwen3_next.py already widens the GDN conv state by num_spec, so the block is 560 tokens with 3 draft tokens
    off, on = _plan("0.11"), _plan("0.11", "ngram", 3)
    assert off.blocks_per_request == 61 + 3 and on.blocks_per_request == 59 + 3
    assert off.kv_cache_tokens == 3212 // 4 * 544  # groups rule: blocks // 4 groups x block size
    assert on.kv_cache_tokens == 3120 // 4 * 560


def test_attention_only_models_lose_nothing_to_lookahead():
    # a dense model: FullAttentionSpec sizes cdiv(max_model_len, 16) blocks with or without draft tokens
    spec = load_preset("llama-3.1-8b")
    base = EngineConfig(max_model_len=16384, kv_cache_memory_bytes=POOL)
    off = plan(spec, H200, base)
    on = plan(spec, H200, base.model_copy(update={"speculative_method": "ngram", "num_speculative_tokens": 5}))
    assert on.blocks_per_request == off.blocks_per_request == 1024
    assert on.kv_cache_tokens == off.kv_cache_tokens


def test_vllm_command_ngram_flag():
    from kvplan.vllm_args import parse_vllm_command

    args = parse_vllm_command("""vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 2 --speculative-config """
                              """'{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}'""")
    assert (args.speculative_method, args.num_speculative_tokens) == ("ngram", 3)
    engine = EngineConfig(**{**args.engine_fields(), "vllm_version": "0.33", "max_model_len": 32768,
                             "kv_cache_memory_bytes": POOL})
    assert plan(load_preset("qwen3-next-80b-a3b"), H200, engine, Layout(tp=2)).blocks_per_request == 74  # align
    off = parse_vllm_command("vllm serve m --no-enable-prefix-caching").engine_fields()
    assert off["enable_prefix_caching"] is False
    assert parse_vllm_command("vllm serve m").engine_fields()["enable_prefix_caching"] is None


def test_v0_21_tokens_line_is_concurrency_times_max_len():
    # vllm 0.21.0 wheel, kv_cache_utils.py _report_kv_cache_config: "num_tokens = int(max_concurrency *
    # max_model_len)", logged on its own line before "Maximum concurrency" (the groups rule, 3212 // 4 groups x 544 =
    # 436,832 tokens, was 0.19's). Qwen3-Next, the 20 GiB pool above, 0.21 (prefix caching off for hybrids there):
    # 3212 / 64 = 50.1875 x 32,768 = 1,644,544.
    p = _plan("0.21", prefix_caching=None)
    assert p.blocks_per_request == 64 and p.kv_cache_tokens == int(3212 / 64 * 32768) == 1_644_544
    assert "GPU KV cache size: 1,644,544 tokens" in p.engine_log
    assert "Maximum concurrency for 32,768 tokens per request: 50.19x" in p.engine_log
