"""The seed documents' worked numbers, reproduced exactly (shared/seeds/*.txt)."""

from kvplan import parse_config
from kvplan.kv import kv_cache_bytes, seed_kv_bytes
from kvplan.units import GiB

# The seed's hypothetical model: 32 layers, 32 query heads, 8 KV heads, head_dim 128, bf16.
SEED_MODEL = {
    "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 11008, "vocab_size": 32000,
    "torch_dtype": "bfloat16",
}


def test_seed_formula_one_and_eight_gib():
    # 2 x 1 x 32 x 8192 x 8 x 128 x 2 = 1,073,741,824 = 1 GiB; x8 sequences = 8 GiB
    assert seed_kv_bytes(1, 32, 8192, 8, 128) == 1 * GiB
    assert seed_kv_bytes(8, 32, 8192, 8, 128) == 8 * GiB


def test_model_path_equals_seed_formula():
    spec = parse_config(SEED_MODEL)
    assert kv_cache_bytes(spec, [8192]).kv_bytes == 1 * GiB
    assert kv_cache_bytes(spec, [8192] * 8).kv_bytes == 8 * GiB


def test_32_kv_heads_is_4_gib_and_gqa_leaves_a_quarter():
    mha = parse_config({**SEED_MODEL, "num_key_value_heads": 32})
    gqa = parse_config(SEED_MODEL)
    # 2 x 32 x 8192 x 32 x 128 x 2 = 4 GiB
    assert kv_cache_bytes(mha, [8192]).kv_bytes == 4 * GiB
    # 32 -> 8 KV heads leaves 8/32 = 1/4 of the bytes, not 4x as much
    assert kv_cache_bytes(gqa, [8192]).kv_bytes * 4 == kv_cache_bytes(mha, [8192]).kv_bytes


def test_unequal_lengths_sum_actual_lengths_not_batch_times_max():
    spec = parse_config(SEED_MODEL)
    per_token = 2 * 32 * 8 * 128 * 2  # 131,072 B
    got = kv_cache_bytes(spec, [5, 3, 8]).kv_bytes
    assert got == (5 + 3 + 8) * per_token
    assert got != 3 * 8 * per_token


def test_seven_b_in_24_gib_budget_holds_six_of_8192_and_three_of_16384():
    # budget = 24 GiB - 7e9 params x 2 B - 2 GiB runtime - 2 GiB headroom
    budget = 24 * GiB - 7_000_000_000 * 2 - 4 * GiB
    spec = parse_config(SEED_MODEL)

    def fits(n, t):
        return kv_cache_bytes(spec, [t] * n).kv_bytes <= budget

    assert fits(6, 8192) and not fits(7, 8192)
    assert fits(3, 16384) and not fits(4, 16384)
