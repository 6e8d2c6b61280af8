"""KV bytes per token per preset family, derived by hand from each config (vllm convention, bf16)."""

import pytest

from kvplan import kv_bytes_per_token, kv_cache_bytes, load_preset

# (preset, bytes per token over all attention layers, the arithmetic)
CASES = [
    ("llama-3.1-8b", 32 * 8 * (128 + 128) * 2),            # 32 layers, 8 KV heads, head_dim 128
    ("llama-3.1-405b", 126 * 8 * 256 * 2),                  # 126 layers, GQA 8
    ("llama-2-7b", 32 * 32 * 256 * 2),                      # MHA: 32 KV heads
    ("qwen3-8b", 36 * 8 * 256 * 2),
    ("qwen3-235b-a22b", 94 * 4 * 256 * 2),                  # MoE does not change KV: 4 KV heads
    ("mixtral-8x7b", 32 * 8 * 256 * 2),
    ("gemma-2-9b", 42 * 8 * 2 * 256 * 2),                   # head_dim 256 read from config (hidden 3584 / 16 = 224);
    # gemma-2-9b ships torch_dtype float32, so its "auto" KV dtype is fp32: bf16 is pinned here
    ("gemma-3-27b-it", 62 * 16 * 2 * 128 * 2),              # text_config: head_dim 128
    ("gpt2", 12 * 12 * 2 * 64 * 2),                         # MHA, 768 / 12 = 64
    ("deepseek-v3", 61 * (512 + 64) * 2),                   # MLA latent, no K/V pair
    ("gpt-oss-20b", 24 * 8 * 2 * 64 * 2),                   # head_dim 64 from config
    ("qwen3-next-80b-a3b", 12 * 2 * 2 * 256 * 2),           # 12 of 48 layers are full attention, 2 KV heads x 256
    ("nemotron-h-56b", 10 * 8 * 2 * 128 * 2),               # 10 '*' blocks in the pattern, 8 KV heads x 128
    ("phi-3-mini-4k-instruct", 32 * 32 * 2 * 96 * 2),       # 3072 / 32 = 96
]


@pytest.mark.parametrize("name,expected", CASES)
def test_kv_bytes_per_token_by_hand(name, expected):
    assert kv_bytes_per_token(load_preset(name), "bf16") == expected


def test_mistral_style_sliding_window_caps_every_layer():
    spec = load_preset("phi-3-mini-4k-instruct")  # sliding_window 2047 on all 32 layers
    window = spec.layers[0].cache.sliding_window
    kv = kv_cache_bytes(spec, [4096])
    assert kv.kv_bytes == min(4096, window) * 32 * 32 * 2 * 96 * 2


def test_gemma3_sliding_layers_hold_the_window_only():
    spec = load_preset("gemma-3-27b-it")
    assert spec.layer_kinds == {"sliding_attention": 52, "full_attention": 10}
    kv = kv_cache_bytes(spec, [32768])
    per_layer_token = 16 * 2 * 128 * 2
    assert kv.by_kind["full_attention"] == 10 * 32768 * per_layer_token
    assert kv.by_kind["sliding_attention"] == 52 * 1024 * per_layer_token


def test_transformers_convention_sliding_keeps_window_minus_one():
    spec = load_preset("gemma-3-27b-it")
    kv = kv_cache_bytes(spec, [32768], convention="transformers")
    assert kv.by_kind["sliding_attention"] == 52 * 1023 * 16 * 2 * 128 * 2


def test_recurrent_state_is_fixed_per_sequence():
    spec = load_preset("qwen3-next-80b-a3b")
    # 36 linear-attention layers: conv (2*16*128 + 32*128) = 8192 x 3 + 32 x 128 x 128, bf16
    per_seq = 36 * (8192 * 3 + 32 * 128 * 128) * 2
    short, long = kv_cache_bytes(spec, [10]), kv_cache_bytes(spec, [10000])
    assert short.by_kind["linear_attention"] == long.by_kind["linear_attention"] == per_seq
    # transformers keeps the whole kernel and an fp32 state
    tf = kv_cache_bytes(spec, [10], convention="transformers")
    assert tf.by_kind["linear_attention"] == 36 * (8192 * 4 * 2 + 32 * 128 * 128 * 4)


def test_fp8_kv_halves_bf16():
    spec = load_preset("llama-3.1-8b")
    assert kv_cache_bytes(spec, [8192], "fp8").kv_bytes * 2 == kv_cache_bytes(spec, [8192], "bf16").kv_bytes


def test_moe_total_and_active_params():
    from kvplan import count_params

    p = count_params(load_preset("mixtral-8x7b"))
    assert p.total_params == 46_702_792_704
    # active: 2 of 8 experts; each expert 3 x 4096 x 14336 per layer, 32 layers
    assert p.active_params == p.total_params - 6 * 3 * 4096 * 14336 * 32


def test_weight_formats_exact_bytes():
    from kvplan.weights import matrix_bytes

    # int4 g128 on a 4096 x 4096 matrix: 8 MiB packed + 32 x 4096 groups x (2 B scale + 0.5 B zero)
    assert matrix_bytes(4096, 4096, "int4-g128") == 4096 * 4096 // 2 + 32 * 4096 * 2 + 32 * 4096 // 2
    assert matrix_bytes(4096, 4096, "mxfp4") == 4096 * 4096 // 2 + 4096 * 4096 // 32
    assert matrix_bytes(4096, 4096, "fp8-block") == 4096 * 4096 + 4 * 32 * 32


def test_checkpoint_quantization_config_is_honoured():
    from kvplan import weight_bytes

    spec = load_preset("gpt-oss-20b")  # mxfp4 experts, attention/router/embeddings kept in bf16
    assert spec.quantization == "mxfp4" and "attention" in spec.quantization_exclude
    w = weight_bytes(spec)
    assert w.components["attention"] == weight_bytes(spec, "bf16").components["attention"]
    assert w.components["experts"] < weight_bytes(spec, "bf16").components["experts"] / 3
