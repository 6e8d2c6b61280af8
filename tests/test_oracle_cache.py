"""The transformers convention, measured: tiny random models run a real cached forward on the CPU
and the bytes their DynamicCache holds must equal ``kv_cache_bytes(..., convention="transformers")``.
"""

import pytest

from kvplan import kv_cache_bytes, parse_config

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.oracle
torch.set_num_threads(1)

SMALL = dict(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
             num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=256)
W = 8  # a window shorter than the prompt, so trimming shows

CASES = {
    "llama-gqa": ("llama", SMALL),
    "mistral-sliding": ("mistral", {**SMALL, "sliding_window": W}),
    "gemma3-pattern": ("gemma3_text", {**SMALL, "num_hidden_layers": 6, "sliding_window": W}),
    "gpt-oss-alternating": ("gpt_oss", {**SMALL, "intermediate_size": 64, "num_local_experts": 4,
                                        "num_experts_per_tok": 2, "sliding_window": W}),
    "deepseek-v3-mla": ("deepseek_v3", dict(vocab_size=128, hidden_size=64, intermediate_size=128,
                                            num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=4,
                                            kv_lora_rank=32, q_lora_rank=48, qk_rope_head_dim=8,
                                            qk_nope_head_dim=16, v_head_dim=16, n_routed_experts=4,
                                            num_experts_per_tok=2, moe_intermediate_size=32,
                                            first_k_dense_replace=1, n_group=1, topk_group=1)),
    "falcon-new-arch": ("falcon", dict(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                       new_decoder_architecture=True, num_kv_heads=2)),
    "gpt-bigcode-mqa": ("gpt_bigcode", dict(vocab_size=128, n_embd=64, n_layer=2, n_head=4, n_positions=256)),
    "qwen3-next-linear": ("qwen3_next", {**SMALL, "linear_num_key_heads": 2, "linear_num_value_heads": 4,
                                         "linear_key_head_dim": 16, "linear_value_head_dim": 16,
                                         "linear_conv_kernel_dim": 4, "num_experts": 4, "num_experts_per_tok": 2,
                                         "moe_intermediate_size": 32, "shared_expert_intermediate_size": 32}),
    "nemotron-h-mamba": ("nemotron_h", dict(vocab_size=128, hidden_size=64, num_attention_heads=4,
                                            num_key_value_heads=2, head_dim=16, intermediate_size=128,
                                            mamba_num_heads=4, mamba_head_dim=16, n_groups=2, ssm_state_size=8,
                                            conv_kernel=4, hybrid_override_pattern="M*-M", use_mamba_kernels=False)),
}


def cache_bytes(cache) -> int:
    """Bytes of every distinct tensor the cache object holds (logical size: numel x element size):
    keys and values; DSA ``indexer_keys`` (DynamicIndexedLayer) and MiniMax-M3's sparse layers'
    ``idx_keys``; Mamba / linear-attention ``conv_states`` / ``recurrent_states``; DeepSeek-V4's
    compressor / indexer buffers, compressed entries and overlap states (DeepseekV4CSACache /
    DeepseekV4HCACache, dicts keyed by "compressor" / "indexer"). Counted by storage, so V4's
    keys-that-are-values (``self.values = self.keys``) count once."""
    seen, total = set(), 0
    for layer in cache.layers:
        tensors = [getattr(layer, a, None) for a in ("keys", "values", "indexer_keys", "idx_keys")]
        for attr in ("conv_states", "recurrent_states",  # Mamba, linear attention
                     "buffer_kv", "buffer_gate", "compressed_kv", "overlap_kv", "overlap_gate"):  # DeepSeek-V4
            states = getattr(layer, attr, None)
            tensors += list(states.values()) if isinstance(states, dict) else [states]
        for t in tensors:
            if isinstance(t, torch.Tensor) and t.numel() and (t.data_ptr(), t.shape) not in seen:
                seen.add((t.data_ptr(), t.shape))
                total += t.numel() * t.element_size()
    return total


def prefill_and_decode(model, ids, steps: int = 2, on_cache=None) -> list[int]:
    """``cache_bytes`` of the model's cache after a prefill of ``ids`` (batch x prompt tokens) and after
    each of ``steps`` one-token decode steps (the last prompt token fed again): prompt, prompt + 1, ...
    tokens held. ``on_cache(step, cache)``, if given, is called at each of those points (step 0: the prefill)."""
    held = []
    with torch.no_grad():
        out = model(ids, use_cache=True)
        for step in range(steps + 1):
            if step:
                out = model(ids[:, -1:], past_key_values=out.past_key_values, use_cache=True)
            if on_cache is not None:
                on_cache(step, out.past_key_values)
            held.append(cache_bytes(out.past_key_values))
    return held


@pytest.mark.parametrize("case", sorted(CASES))
def test_dynamic_cache_bytes_equal_transformers_convention(case):
    model_type, fields = CASES[case]
    hf_config = transformers.AutoConfig.for_model(model_type, **fields)
    config = {**hf_config.to_dict(), "model_type": model_type, "torch_dtype": "float32"}
    if "hybrid_override_pattern" in fields:
        config["hybrid_override_pattern"] = fields["hybrid_override_pattern"]
    spec = parse_config(config)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(hf_config).eval()
    batch, prompt = 2, 13
    held = prefill_and_decode(model, torch.randint(0, 128, (batch, prompt)), steps=3)  # windows stay trimmed
    assert held == [kv_cache_bytes(spec, [prompt + i] * batch, "fp32", "transformers").kv_bytes for i in range(4)]
