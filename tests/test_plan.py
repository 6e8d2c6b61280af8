"""Capacity planning: engine logs reproduced from their inputs, the seed's budget, parallelism."""

import pytest

from kvplan import load_preset, parse_config
from kvplan.engines import EngineConfig, sglang_mem_fraction_static
from kvplan.errors import PlanInputError
from kvplan.gpus import custom_gpu, get_gpu
from kvplan.parallel import Layout, kv_heads_on_rank, pp_partition, rank_weight_bytes
from kvplan.plan import plan
from kvplan.units import GiB
from kvplan.weights import weight_bytes
from tests.test_seeds import SEED_MODEL

H100 = get_gpu("H100-SXM")


def test_vllm_log_llama2_7b_56_18_gib_is_7191_blocks():
    # gateway-api-inference-extension PR #550 (vLLM V0, H100): "KV 56.18 GiB", "# GPU blocks: 7191".
    # block = 16 tokens x 32 layers x 2 x 32 heads x 128 x 2 B = 8 MiB; 56.18 GiB / 8 MiB = 7191.04
    p = plan(load_preset("llama-2-7b"), H100, EngineConfig(kv_cache_memory_bytes=round(56.18 * GiB), max_model_len=4096))
    assert p.num_blocks == 7191
    assert p.kv_cache_tokens == 7191 * 16


def test_vllm_log_qwen3_14b_6_51_gib_is_42656_tokens_1_30x():
    # LMCache #1739: "Available KV cache memory: 6.51 GiB", "GPU KV cache size: 42,656 tokens",
    # "Maximum concurrency for 32,768 tokens per request: 1.30x".
    # 40 layers x 8 heads x 256 x 2 B = 160 KiB/token; 6.51 GiB // (16 x 160 KiB) = 2666 blocks
    p = plan(load_preset("qwen3-14b"), H100, EngineConfig(kv_cache_memory_bytes=round(6.51 * GiB), max_model_len=32768))
    assert p.num_blocks == 2666
    assert p.kv_cache_tokens == 42_656
    assert f"{p.max_concurrency:.2f}" == "1.30"


def test_vllm_log_qwen3_0_6b_36184_blocks_70_67x():
    # generative-computing/mellea PR #416 (H100, util 0.80): KV 61.84 GiB, 36,184 blocks, 70.67x @ 8192.
    # 28 layers x 8 heads x 256 x 2 B = 112 KiB/token -> 1,835,008 B/block. A 2-decimal GiB pins the
    # count only to [61.835, 61.845) GiB / 1.75 MiB = [36182.4, 36188.3), which contains the logged 36,184.
    block = 16 * 28 * 8 * 256 * 2
    lo = plan(load_preset("qwen3-0.6b"), H100, EngineConfig(kv_cache_memory_bytes=int(61.835 * GiB), max_model_len=8192))
    hi = plan(load_preset("qwen3-0.6b"), H100, EngineConfig(kv_cache_memory_bytes=int(61.845 * GiB), max_model_len=8192))
    assert lo.num_blocks <= 36_184 <= hi.num_blocks
    p = plan(load_preset("qwen3-0.6b"), H100, EngineConfig(kv_cache_memory_bytes=36_184 * block + 1000, max_model_len=8192))
    assert p.num_blocks == 36_184
    assert f"{p.max_concurrency:.2f}" == "70.67"  # 36,184 / cdiv(8192, 16) = 70.672


def test_seed_budget_six_of_8192_three_of_16384_in_24_gib():
    # custom engine: 24 GiB - 7e9 x 2 B weights - 2 GiB runtime - 2 GiB headroom, block 16
    gpu = custom_gpu(24, 1.0, 100.0)
    spec = parse_config(SEED_MODEL)
    engine = EngineConfig(engine="custom", weights_bytes=14_000_000_000, runtime_gib=2, headroom_gib=2)
    assert plan(spec, gpu, engine.model_copy(update={"max_model_len": 8192})).max_num_seqs_at_len == 6
    assert plan(spec, gpu, engine.model_copy(update={"max_model_len": 16384})).max_num_seqs_at_len == 3
    assert not plan(spec, gpu, engine.model_copy(update={"max_model_len": 8192}), concurrency=7).fits


def test_mqa_tp8_every_rank_keeps_the_head():
    # falcon-7b style MQA (1 KV head) at TP=8: max(1, 1 // 8) = 1 head per rank, not 1/8.
    spec = parse_config({**SEED_MODEL, "num_key_value_heads": 1})
    assert kv_heads_on_rank(spec, 8) == 1
    p = plan(spec, H100, EngineConfig(max_model_len=8192), Layout(tp=8))
    assert p.ranks[0].kv_bytes_per_token == 32 * 1 * 256 * 2  # the whole head on each rank
    p1 = plan(spec, H100, EngineConfig(max_model_len=8192), Layout(tp=1))
    assert p.ranks[0].kv_bytes_per_token == p1.ranks[0].kv_bytes_per_token


def test_gqa_heads_split_then_replicate():
    spec = load_preset("llama-3.1-8b")  # 8 KV heads
    assert [kv_heads_on_rank(spec, tp) for tp in (1, 2, 4, 8)] == [8, 4, 2, 1]
    with pytest.raises(PlanInputError) as info:
        plan(spec, H100, layout=Layout(tp=3))
    assert info.value.field == "tensor_parallel_size"


def test_mla_latent_replicated_on_every_tp_rank():
    spec = load_preset("deepseek-v3")  # 61 layers x (512 + 64) x 2 B = 70,272 B/token
    p1 = plan(spec, get_gpu("H200"), EngineConfig(max_model_len=8192), Layout(tp=8))
    assert p1.ranks[0].kv_bytes_per_token == 61 * 576 * 2
    assert p1.block_size == 16  # from vLLM 0.18 FLASH_ATTN_MLA's (kvplan.engines.vllm_mla_default)
    p0 = plan(spec, get_gpu("H200"), EngineConfig(vllm_version="0.16", max_model_len=8192), Layout(tp=8))
    assert p0.block_size == 64  # FlashMLA's, forced on Hopper through 0.17


def test_pp_remainder_goes_to_earlier_stages_not_the_last():
    assert pp_partition(94, 4) == [23, 24, 24, 23]
    assert pp_partition(32, 3) == [11, 11, 10]
    p = plan(load_preset("qwen3-235b-a22b"), get_gpu("H200"), EngineConfig(max_model_len=8192), Layout(tp=2, pp=4))
    assert [r.layers for r in p.ranks] == [23, 24, 24, 23]
    assert p.num_blocks == min(r.num_blocks for r in p.ranks)  # the engine takes the minimum


def test_tp_weights_per_rank_exact():
    spec = load_preset("llama-3.1-70b")
    total = weight_bytes(spec).total_bytes  # 141,107,412,992 B
    # everything splits 8 ways except 161 RMSNorms of 8192 x 2 B, which each rank keeps whole
    norms = 161 * 8192 * 2
    assert rank_weight_bytes(spec, Layout(tp=8)) == (total - norms) // 8 + norms


def test_vocab_padding_to_64_per_rank():
    spec = load_preset("gpt2")  # 50,257 -> 50,304 rows of 768 in bf16, tied
    assert rank_weight_bytes(spec, Layout()) - weight_bytes(spec).total_bytes == (50304 - 50257) * 768 * 2


def test_sglang_default_fraction_h100():
    # sglang 0.5.23 memory_hook.py: 81559 MiB, TP1 -> reserved 13904 MiB -> 0.830
    assert sglang_mem_fraction_static(81559 * 2**20, 1, 1, False) == (0.83, 13904)


def test_sglang_tokens_floor_to_page_and_mla_not_divided():
    spec = load_preset("deepseek-v3")
    p2 = plan(spec, get_gpu("H200"), EngineConfig(engine="sglang", max_model_len=4096, block_size=64), Layout(tp=8))
    assert p2.kv_cache_tokens % 64 == 0
    assert p2.ranks[0].kv_bytes_per_token == 61 * 576 * 2


def test_does_not_fit_is_an_answer_with_checked_fixes():
    p = plan(load_preset("llama-3.1-70b"), H100, EngineConfig(max_model_len=8192))
    # 131.45 GiB of weights on one H100 (78.68 GiB free at load): vLLM dies loading them (2026-12: "Does not load")
    assert not p.fits and p.verdict.startswith("Does not load")
    assert any(s.startswith("-tp ") or "larger GPU" in s for s in p.suggestions)


def test_sliding_window_hybrid_groups_and_padding():
    # gemma-3-27b: 62 layers = 52 sliding (W=1024) + 10 full -> group_size 10: 1 full + 6 sliding groups,
    # 60 sliding slots for 52 layers = 8 padding layers.
    p = plan(load_preset("gemma-3-27b-it"), H100, EngineConfig(max_model_len=32768), Layout(tp=2))
    kinds = [g.kind for g in p.kv_groups]
    assert kinds.count("full_attention") == 1 and kinds.count("sliding_attention") == 6
    assert sum(g.padding_layers for g in p.kv_groups) == 8
    # per request: cdiv(32768,16) + 6 x (cdiv(min(1023 + 2 x 8192, 32768), 16) + 1) = 2048 + 6 x 1089
    assert p.blocks_per_request == 2048 + 6 * 1089


@pytest.mark.parametrize("kwargs,field", [
    ({"gpu_memory_utilization": 0}, "gpu_memory_utilization"),
    ({"gpu_memory_utilization": 1.2}, "gpu_memory_utilization"),
])
def test_bad_engine_values(kwargs, field):
    with pytest.raises(ValueError) as info:
        EngineConfig(**kwargs)
    assert field in str(info.value)


def test_zero_gpus_and_negative_concurrency():
    spec = load_preset("llama-3.1-8b")
    with pytest.raises(PlanInputError):
        plan(spec, H100, layout=Layout(tp=0))
    with pytest.raises(PlanInputError):
        plan(spec, H100, concurrency=-1)


def test_expert_parallel_places_whole_experts():
    spec = load_preset("mixtral-8x7b")  # 8 experts; EP over 4 ranks -> 2 whole experts per rank
    ep = rank_weight_bytes(spec, Layout(tp=4, ep=True))
    tp = rank_weight_bytes(spec, Layout(tp=4))
    assert ep == tp  # 8 experts / 4 ranks whole == each expert split 4 ways, for even splits
    ep3 = rank_weight_bytes(spec, Layout(tp=2, dp=3, ep=True))  # 8 over 6 ranks: busiest holds cdiv = 2
    # vs splitting every expert's 14,336 columns over 6 ranks: cdiv(14336, 6) = 2390 each
    per_expert = 3 * 4096 * 14336 * 2
    split = 8 * 3 * 4096 * 2390 * 2
    assert ep3 - rank_weight_bytes(spec, Layout(tp=2, dp=3)) == 32 * (2 * per_expert - split)


def test_decode_qk_matches_seed_formula():
    # the seed: N P + N (N + 1) / 2 with P = 1000 prompt tokens and N = 100 generated
    p = plan(load_preset("llama-3.1-8b"), H100, EngineConfig(max_model_len=1100), prompt_tokens=1000)
    assert p.decode.qk_matches_per_head == 100 * 1000 + 100 * 101 // 2
    assert p.decode.bound == "memory" and p.decode.tokens_per_s > 0


def test_picker_ranks_fitting_layouts_and_explains_rejections():
    from kvplan.picker import pick_gpus

    r = pick_gpus(load_preset("llama-3.1-70b"), 32768, 16, prices={"H100-SXM": 2.5}, gpus=[H100, get_gpu("L4")])
    assert r.options and r.options[0].gpu == "H100-SXM" and r.options[0].cost_per_hour is not None
    assert all(o.num_gpus == o.tensor_parallel_size * o.pipeline_parallel_size * o.replicas for o in r.options)
    l4 = [x for x in r.rejected if x.gpu == "L4" and x.tensor_parallel_size == 1 and x.pipeline_parallel_size == 1]
    assert l4 and "Does not fit" in l4[0].reason


def test_cli_plan_json_contract():
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "kvplan", "plan", "llama-3.1-8b", "--gpu", "H100-SXM",
                          "--max-model-len", "32768", "--kv-cache-dtype", "fp8", "--lengths", "5,3,8",
                          "--block-size", "4", "--json"], capture_output=True, text=True, check=True)
    d = json.loads(out.stdout)
    for key in ("num_blocks", "kv_cache_tokens", "max_concurrency", "allocated_blocks", "allocated_slots", "wasted_slots"):
        assert key in d
    assert (d["allocated_blocks"], d["allocated_slots"], d["wasted_slots"]) == (5, 20, 4)
    rank = d["ranks"][0]
    assert rank["kv_heads"] == 8 and rank["kv_bytes_per_token"] == 32 * 8 * 256 * 1  # fp8: 1 byte
    # the tensors, 16,060,522,496 B, + vLLM's rotary cos/sin table 131,072 x 128 x 2 B (kvplan.vllm_layouts)
    assert rank["weights_bytes"] == 16_060_522_496 + 33_554_432 and rank["kv_pool_bytes"] > 0


def test_longest_length_for_a_concurrency_is_the_edge():
    from kvplan.plan import longest_len_for

    spec, engine = load_preset("llama-3.1-8b"), EngineConfig(kv_cache_memory_bytes=8 * GiB)
    longest = longest_len_for(spec, H100, 4, engine)
    # 8 GiB / (16 x 128 KiB) = 4096 blocks, 1 null: 4 sequences of cdiv(L, 16) blocks -> L = 1023 x 16
    assert longest == 1023 * 16
    assert plan(spec, H100, engine.model_copy(update={"max_model_len": longest})).max_num_seqs_at_len >= 4
    assert plan(spec, H100, engine.model_copy(update={"max_model_len": longest + 1})).max_num_seqs_at_len < 4


def test_largest_max_model_len_that_starts():
    spec = load_preset("llama-3.1-8b")
    p = plan(spec, H100, EngineConfig(kv_cache_memory_bytes=1 * GiB, max_model_len=131072))
    # 1 GiB / 2 MiB = 512 blocks, one is the null block: 511 x 16 = 8176 tokens
    assert not p.fits and p.max_model_len_that_starts == 511 * 16


def test_sglang_log_qwen3_235b_tp4_cell_size():
    # vllm #21348 (same box, SGLang mem_frac 0.93): "#tokens: 367404, K size: 8.23 GB" (GB = GiB there).
    # 4 KV heads / TP4 = 1 head per rank: 94 layers x 1 x 128 x 2 B = 24,064 B of K per token
    p = plan(load_preset("qwen3-235b-a22b"), H100, EngineConfig(engine="sglang", max_model_len=8192), Layout(tp=4))
    assert p.ranks[0].kv_heads == 1 and p.ranks[0].kv_bytes_per_token == 2 * 94 * 128 * 2
    assert f"{367_404 * 94 * 128 * 2 / GiB:.2f}" == "8.23"


def test_hybrid_padding_cost_is_reported():
    p = plan(load_preset("gemma-3-27b-it"), H100, EngineConfig(max_model_len=8192), Layout(tp=2))
    assert p.padding_waste_fraction == pytest.approx(8 / 70)  # 8 padding of 7 groups x 10 layers


def test_cli_refuses_fewer_gpus_than_the_layout():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "kvplan", "plan", "llama-3.1-8b", "-tp", "4", "--num-gpus", "2"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr.startswith("error: --num-gpus:")


def test_length_distributions_are_seeded_and_clipped():
    from kvplan.paging import page_sequences, sample_lengths

    a = sample_lengths(1000, "lognormal", mean=2000, spread=1500, seed=7, max_len=8192)
    assert a == sample_lengths(1000, "lognormal", mean=2000, spread=1500, seed=7, max_len=8192)
    assert min(a) >= 1 and max(a) <= 8192
    assert page_sequences(a, 16).wasted_slots < 16 * 1000
    with pytest.raises(PlanInputError):
        sample_lengths(10, "zipf")


def test_a_copied_spec_does_not_reuse_the_originals_numbers():
    from kvplan import count_params

    spec = load_preset("llama-3.1-8b")
    full = count_params(spec).total_params
    half = spec.model_copy(update={"layers": spec.layers[:16], "num_hidden_layers": 16})
    assert count_params(half).total_params < full
    assert count_params(spec).total_params == full


def test_a_model_with_no_cached_layer_is_refused_not_crashed():
    spec = parse_config({"model_type": "nemotron_h", "hybrid_override_pattern": "--", "hidden_size": 64,
                         "num_attention_heads": 4, "vocab_size": 128, "mamba_num_heads": 4, "mamba_head_dim": 16,
                         "intermediate_size": 128})
    with pytest.raises(PlanInputError) as info:
        plan(spec, H100)
    assert info.value.field == "model"


def test_pp_stage_without_cached_layers_does_not_set_the_capacity():
    # nemotron-h-56b at PP=60: some stages hold only MLP blocks ('-'), which keep no KV
    p = plan(load_preset("nemotron-h-56b"), get_gpu("H200"), EngineConfig(max_model_len=8192), Layout(pp=60))
    kv_ranks = [r for r in p.ranks if r.kv_bytes_per_token or r.num_blocks]
    assert p.num_blocks == min(r.num_blocks for r in kv_ranks) and p.num_blocks > 0
    assert p.max_concurrency < float("inf")


def test_oversized_config_file_is_refused_without_reading_it_all(tmp_path):
    from kvplan import ConfigError, resolve_model
    from kvplan.hf_config import MAX_CONFIG_BYTES

    big = tmp_path / "config.json"
    big.write_bytes(b'{"a": "' + b"x" * (MAX_CONFIG_BYTES + 1) + b'"}')
    with pytest.raises(ConfigError) as info:
        resolve_model(str(big))
    assert "too large" in info.value.message


def test_spec_memo_is_per_spec_and_survives_a_concurrent_reset():
    """ModelSpec.memo: once per spec (a model_copy starts afresh, so a changed copy never reads the
    original's values), and safe when threads share a spec (the web app caches one spec for all)."""
    from kvplan.params import count_params

    spec = load_preset("qwen3-8b")
    calls = []
    assert spec.memo("k", lambda: calls.append(1) or 7) == 7 and spec.memo("k", lambda: 8) == 7 and calls == [1]
    fewer = spec.model_copy(update={"num_hidden_layers": 2})
    assert fewer.memo("k", lambda: 9) == 9 and spec.memo("k", lambda: 8) == 7

    from kvplan.spec import MEMO_ENTRIES

    grown = load_preset("qwen3-8b").model_copy()
    for n in range(3 * MEMO_ENTRIES):  # a server's spec sees endless lengths: its memo stays bounded
        grown.memo(("len", n), lambda n=n: n)
    assert len(grown._memo) <= MEMO_ENTRIES + 2 and grown.memo(("len", 5), lambda: -1) == -1

    fresh = load_preset("qwen3-8b").model_copy()  # (load_preset hands out one shared spec per preset)

    class Swapped(dict):  # another thread's first call swaps in its own dict just after this one stores
        def __setitem__(self, key, value):
            super().__setitem__(key, value)
            fresh._memo = {"owner": fresh}

    fresh._memo = Swapped(owner=fresh)
    assert fresh.memo("k", lambda: 42) == 42  # (reading self._memo again here raised KeyError)

    from concurrent.futures import ThreadPoolExecutor

    shared = load_preset("llama-3.1-70b").model_copy()
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(lambda _: (count_params(shared).total_params, plan(shared, H100, layout=Layout(4))),
                                range(64)))
    assert {r[0] for r in results} == {70_553_706_496}  # Llama-3.1-70B, as transformers counts it
    assert all(r[1] == results[0][1] for r in results)


def test_longest_start_closed_form_equals_the_binary_search():
    """plan.longest_start answers without a search when no group is windowed; it must equal the
    binary search over _request_blocks it replaced, for every mix of groups, pool and engine."""
    import random

    from kvplan.plan import KVGroup, _largest_len, _request_blocks, longest_start

    rng = random.Random(7)
    kinds = ("full_attention", "mla", "mamba", "linear_attention", "sliding_attention", "chunked_attention")
    for case in range(3000):
        groups = []
        for _ in range(rng.randint(1, 5)):
            kind = rng.choice(kinds[:4] if case % 2 else kinds)
            window = rng.choice((128, 1024, 4096)) if kind in ("sliding_attention", "chunked_attention") else None
            groups.append(KVGroup(kind=kind, layers=1, padding_layers=0, page_bytes=1, blocks_per_request=1,
                                  window=window))
        engine = EngineConfig(engine=rng.choice(("vllm", "sglang", "custom")))
        bs, in_flight = rng.choice((1, 16, 64, 528)), rng.choice((1, 2048, 16384))
        usable, hi = rng.randint(-1, 60_000), rng.choice((1, 100, 262_144, 64 * 131_072))
        search = _largest_len(lambda L: _request_blocks(groups, L, bs, in_flight, engine) <= usable, hi)
        assert longest_start(groups, bs, in_flight, engine, usable, hi) == search, (groups, engine.engine, bs, usable, hi)
    # the docstring's worked number: one full group, 5,000 usable blocks of 16 tokens
    full = [KVGroup(kind="full_attention", layers=32, padding_layers=0, page_bytes=1, blocks_per_request=1)]
    assert longest_start(full, 16, 2048, EngineConfig(), 5000, 10**9) == 80_000
