"""Mid-size families modelled natively (kvplan/families/llama_kin.py and siblings), against the oracle.

Three checks per family:
- parameters: kvplan's total equals transformers 5.23's count on the meta device, for the config
  class defaults and variations that flip what the builder reads (layers, GQA, biases, windows,
  experts);
- transformers convention: the bytes the model's own cache holds after a prefill and after each of
  2 decode steps (tiny random models on the CPU) equal ``kv_cache_bytes(..., "transformers")``;
- vllm convention: hand-derived numbers for each layer kind, with the vLLM source cited.
"""

import pytest

from kvplan import count_params, kv_cache_bytes, parse_config

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.test_oracle_cache import prefill_and_decode
from tests.test_oracle_transformers import transformers_param_count

pytestmark = pytest.mark.oracle
torch.set_num_threads(1)


def family_config(model_type: str, **overrides) -> dict:
    cfg = transformers.AutoConfig.for_model(model_type, **overrides).to_dict()
    cfg["model_type"] = model_type
    return cfg


# --- parameters: config-class defaults and variations ------------------------------------------

PARAM_CASES = [
    # llama_kin.py
    ("olmo2", {}), ("olmo2", {"num_key_value_heads": 8, "attention_bias": True, "num_hidden_layers": 6}),
    ("olmo3", {}), ("olmo3", {"num_hidden_layers": 6, "num_key_value_heads": 8, "tie_word_embeddings": True}),
    ("olmo3", {"layer_types": ["full_attention"] * 3, "num_hidden_layers": 3}),
    ("exaone4", {}), ("exaone4", {"num_hidden_layers": 5, "num_key_value_heads": 8, "tie_word_embeddings": True}),
    ("granite", {}), ("granite", {"attention_bias": True, "mlp_bias": True, "num_key_value_heads": 8}),
    ("helium", {}), ("helium", {"attention_bias": True, "mlp_bias": True, "num_key_value_heads": 4}),
    ("internlm3", {}), ("internlm3", {"qkv_bias": True, "bias": True, "num_hidden_layers": 4}),
    ("seed_oss", {}), ("seed_oss", {"attention_out_bias": True, "mlp_bias": True, "attention_bias": False}),
    ("ernie4_5", {}), ("ernie4_5", {"use_bias": True, "tie_word_embeddings": False, "num_key_value_heads": 4}),
    ("smollm3", {}), ("smollm3", {"use_sliding_window": True, "sliding_window": 2048, "num_key_value_heads": 16,
                                  "num_hidden_layers": 8}),
    ("hunyuan_v1_dense", {"head_dim": 128}),
    ("hunyuan_v1_dense", {"head_dim": 64, "attention_bias": True, "num_key_value_heads": 8}),
    ("glm4", {}), ("glm4", {"attention_bias": False, "num_key_value_heads": 8, "tie_word_embeddings": True}),
    ("apertus", {}), ("apertus", {"hidden_act": "silu", "attention_bias": True, "num_key_value_heads": 8}),
    ("cohere", {}), ("cohere", {"use_qk_norm": True, "num_key_value_heads": 8}),
    ("cohere2", {}), ("cohere2", {"head_dim": 64, "sliding_window_pattern": 2, "num_key_value_heads": 8}),
    ("stablelm", {}), ("stablelm", {"qk_layernorm": True, "use_parallel_residual": True, "use_qkv_bias": True,
                                    "num_key_value_heads": 8, "head_dim": 32}),  # head_dim ignored, as transformers does
    ("starcoder2", {}), ("starcoder2", {"use_bias": False, "sliding_window": 4096, "num_key_value_heads": 4}),
    # moe_kin.py
    ("olmoe", {}), ("olmoe", {"num_key_value_heads": 4, "num_experts": 16, "num_hidden_layers": 4, "head_dim": 64}),
    ("granitemoe", {}), ("granitemoe", {"num_local_experts": 4, "num_key_value_heads": 8, "attention_bias": True}),
    ("granitemoeshared", {}), ("granitemoeshared", {"shared_intermediate_size": 1024, "num_local_experts": 16}),
    ("ernie4_5_moe", {}),
    ("ernie4_5_moe", {"moe_layer_interval": 2, "moe_layer_end_index": 20, "moe_num_shared_experts": 0,
                      "use_bias": True, "tie_word_embeddings": False}),
    ("hunyuan_v1_moe", {"head_dim": 128}),
    ("hunyuan_v1_moe", {"head_dim": 128, "num_experts": 8, "moe_topk": [2, 2, 1, 1], "num_hidden_layers": 4}),
    ("phimoe", {}),
    ("phimoe", {"lm_head_bias": True, "num_local_experts": 4, "sliding_window": 2048, "attention_bias": True}),
    # DbrxConfig() itself cannot build a model in 5.23 (DbrxAttention reads attn_config.rope_theta).
    ("dbrx", {"attn_config": {"rope_theta": 500_000}}),
    ("dbrx", {"n_layers": 4, "d_model": 6144, "n_heads": 48, "vocab_size": 100_352,
              "attn_config": {"rope_theta": 500_000, "kv_n_heads": 8, "clip_qkv": 8},
              "ffn_config": {"moe_num_experts": 16, "moe_top_k": 4, "ffn_hidden_size": 10_752}}),
    ("ernie4_5_moe", {"use_bias": True, "num_hidden_layers": 3}),  # tied, yet lm_head keeps its bias
    ("phimoe", {"lm_head_bias": True, "tie_word_embeddings": True, "num_hidden_layers": 2}),
    # hybrid.py
    ("bamba", {}), ("bamba", {"attn_layer_indices": [1, 5], "num_hidden_layers": 8, "mamba_n_groups": 2,
                              "mamba_n_heads": 64, "mamba_d_state": 128}),
    ("granitemoehybrid", {}),
    ("granitemoehybrid", {"layer_types": ["mamba", "attention", "mamba", "mamba"], "num_hidden_layers": 4,
                          "num_local_experts": 0, "num_key_value_heads": 8}),
    ("granitemoehybrid", {"layer_types": ["mamba", "attention", "mamba", "mamba"], "num_hidden_layers": 4,
                          "num_local_experts": 16, "mamba_n_heads": 64, "mamba_d_head": 128}),
    ("falcon_h1", {}),
    ("falcon_h1", {"num_hidden_layers": 6, "mamba_d_ssm": None, "mamba_rms_norm": True, "mamba_n_groups": 2,
                   "projectors_bias": True, "mamba_proj_bias": True, "attention_bias": True,
                   "tie_word_embeddings": True}),
    ("falcon_h1", {"num_hidden_layers": 4, "mamba_n_heads": 16, "mamba_d_ssm": 2048, "mamba_d_state": 64,
                   "num_key_value_heads": 2, "mlp_bias": True}),
    ("jamba", {}),
    ("jamba", {"num_hidden_layers": 8, "attn_layer_period": 4, "attn_layer_offset": 1, "num_experts": 1,
               "mamba_dt_rank": 128, "mamba_d_state": 32}),
    ("jamba", {"num_hidden_layers": 6, "expert_layer_period": 3, "expert_layer_offset": 0, "num_experts": 4,
               "mamba_proj_bias": True, "mamba_conv_bias": False}),
    ("zamba2", {}),
    ("zamba2", {"num_hidden_layers": 6, "layers_block_type": ["mamba", "hybrid", "mamba", "hybrid", "mamba", "hybrid"],
                "num_mem_blocks": 2, "use_shared_attention_adapter": True}),
    ("zamba2", {"num_hidden_layers": 5, "layers_block_type": ["hybrid", "mamba", "hybrid", "mamba", "mamba"],
                "num_key_value_heads": 8, "add_bias_linear": True, "intermediate_size": 4000, "mamba_ngroups": 2,
                "n_mamba_heads": 16}),
    ("lfm2", {}), ("lfm2", {"full_attn_idxs": [2, 5, 8], "num_hidden_layers": 10, "conv_bias": True,
                            "block_ffn_dim_multiplier": 1.5}),
    ("lfm2", {"block_auto_adjust_ff_dim": False, "num_hidden_layers": 3, "layer_types": ["conv", "full_attention", "conv"]}),
    # Lfm2MoeConfig() has no layer_types default (the model cannot be built without one).
    ("lfm2_moe", {"layer_types": ["conv", "conv", "full_attention", "conv"], "num_hidden_layers": 4}),
    ("lfm2_moe", {"layer_types": ["conv", "full_attention", "conv", "conv", "full_attention", "conv"],
                  "num_hidden_layers": 6, "num_dense_layers": 1, "num_experts": 8, "conv_bias": True,
                  "tie_word_embeddings": False}),
    # gpt_classic.py
    ("mpt", {}), ("mpt", {"n_layers": 4, "d_model": 4096, "n_heads": 32, "tie_word_embeddings": False}),
    ("bloom", {}), ("bloom", {"n_embed": 1024, "n_head": 16, "n_layer": 4}),
    ("gptj", {}), ("gptj", {"n_inner": 8192, "n_layer": 4, "n_head": 32, "tie_word_embeddings": True}),
    ("codegen", {}), ("codegen", {"n_inner": 1024, "n_embd": 512, "n_head": 8, "n_layer": 3}),
    ("gpt_neo", {}), ("gpt_neo", {"intermediate_size": 1000, "num_layers": 4, "num_heads": 8,
                                  "attention_types": [[["global", "local"], 2]]}),
    # third variations: layer count, GQA ratio, head_dim, windows / layer_types, experts, tying
    ("olmo2", {"num_hidden_layers": 3, "num_key_value_heads": 4, "tie_word_embeddings": True}),
    ("exaone4", {"num_hidden_layers": 6, "sliding_window_pattern": 2, "num_key_value_heads": 4}),
    ("granite", {"num_hidden_layers": 4, "num_key_value_heads": 1, "tie_word_embeddings": True}),
    ("helium", {"num_hidden_layers": 5, "head_dim": 64, "num_key_value_heads": 5}),
    ("internlm3", {"num_key_value_heads": 4, "num_hidden_layers": 3}),
    ("seed_oss", {"num_hidden_layers": 4, "num_key_value_heads": 4, "head_dim": 64}),
    ("ernie4_5", {"num_hidden_layers": 3, "head_dim": 64}),
    ("smollm3", {"num_hidden_layers": 6, "no_rope_layer_interval": 3, "use_sliding_window": True, "sliding_window": 1024}),
    ("hunyuan_v1_dense", {"head_dim": 128, "num_hidden_layers": 3, "tie_word_embeddings": True}),
    ("glm4", {"num_hidden_layers": 4, "head_dim": 64}),
    ("apertus", {"num_hidden_layers": 3, "num_key_value_heads": 4, "tie_word_embeddings": True}),
    ("cohere", {"num_hidden_layers": 4, "attention_bias": True, "tie_word_embeddings": False}),
    ("cohere2", {"num_hidden_layers": 3, "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
                 "attention_bias": True}),
    ("stablelm", {"num_hidden_layers": 4, "num_key_value_heads": 4, "tie_word_embeddings": True}),
    ("starcoder2", {"num_hidden_layers": 4, "num_key_value_heads": 24}),
    ("olmoe", {"num_hidden_layers": 3, "num_experts": 8, "num_experts_per_tok": 2, "attention_bias": True}),
    ("granitemoe", {"num_hidden_layers": 3, "num_local_experts": 16, "num_experts_per_tok": 4, "tie_word_embeddings": True}),
    ("granitemoeshared", {"num_hidden_layers": 3, "shared_intermediate_size": 512, "num_key_value_heads": 8}),
    ("hunyuan_v1_moe", {"head_dim": 64, "num_experts": 16, "moe_topk": 4, "num_hidden_layers": 3, "num_key_value_heads": 8}),
    ("dbrx", {"n_layers": 2, "attn_config": {"rope_theta": 10_000, "kv_n_heads": 4},
              "ffn_config": {"moe_num_experts": 8, "moe_top_k": 2}}),
    ("mpt", {"n_layers": 3, "n_heads": 8}),
    ("bloom", {"n_layer": 3, "n_head": 8, "hidden_size": 512, "tie_word_embeddings": False}),
    ("gptj", {"n_layer": 3, "n_embd": 1024, "n_head": 16}),
    ("codegen", {"n_layer": 2, "tie_word_embeddings": True, "n_head": 8}),
    ("gpt_neo", {"num_layers": 2, "hidden_size": 512, "num_heads": 8, "max_position_embeddings": 1024,
                 "attention_types": [[["global"], 2]]}),
    ("bamba", {"num_hidden_layers": 4, "attn_layer_indices": [0, 3], "mamba_d_head": 32, "mamba_n_heads": 256,
               "mamba_conv_bias": False, "mamba_proj_bias": True}),
    ("lfm2_moe", {"layer_types": ["full_attention", "conv", "conv"], "num_hidden_layers": 3, "num_dense_layers": 0,
                  "num_experts_per_tok": 2}),
]


@pytest.mark.parametrize("model_type,overrides", PARAM_CASES, ids=lambda v: str(v) if isinstance(v, str) else "")
def test_params_equal_transformers(model_type, overrides):
    cfg = family_config(model_type, **overrides)
    spec = parse_config(cfg)
    assert spec.basis == "native"
    assert count_params(spec).total_params == transformers_param_count(cfg)



# head_dim set apart from hidden_size // heads: which projections follow it and which stay at hidden_size
# (Helium's o_proj is [h, h] whatever it is; OLMoE's q_norm stays [h]).
HEAD_DIM_CASES = ["olmo2", "exaone4", "helium", "cohere2", "glm4", "apertus", "starcoder2", "olmoe", "phimoe",
                  "hunyuan_v1_moe", "ernie4_5_moe", "falcon_h1", "lfm2", "jamba", "granitemoehybrid"]


@pytest.mark.parametrize("model_type", HEAD_DIM_CASES)
def test_params_with_head_dim_apart_from_hidden(model_type):
    base = transformers.AutoConfig.for_model(model_type)
    hd = max(8, base.hidden_size // base.num_attention_heads // 2)
    layers = {"granitemoehybrid": {"layer_types": ["mamba", "attention"], "num_hidden_layers": 2}}.get(
        model_type, {"num_hidden_layers": 2})
    cfg = family_config(model_type, head_dim=hd, **layers)
    assert count_params(parse_config(cfg)).total_params == transformers_param_count(cfg)

# Published / hand-derived totals for the defaults, so a change in both kvplan and transformers shows.
def test_olmo2_default_total_by_hand():
    # Olmo2Config(): h 4096, 32 layers, MHA 32 heads of 128, inter 11008, vocab 50304, untied.
    # per layer: 4 x 4096^2 (q,k,v,o) + 2 x 4096 (q_norm, k_norm over all heads) + 3 x 4096 x 11008
    #            + 2 x 4096 (post norms) = 67,108,864 + 8,192 + 135,266,304 + 8,192 = 202,391,552
    # total: 32 x 202,391,552 + 2 x 50304 x 4096 (embed + lm_head) + 4096 = 6,888,624,128
    assert count_params(parse_config(family_config("olmo2"))).total_params == 6_888_624_128


# --- transformers convention: the cache a real forward leaves -----------------------------------

SMALL = dict(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=4,
             num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=256,
             pad_token_id=0, bos_token_id=1, eos_token_id=2)
W = 8  # a window shorter than the prompt, so trimming shows

CACHE_CASES = {
    "olmo2": ("olmo2", SMALL),
    "olmo3-sliding": ("olmo3", {**SMALL, "sliding_window": W}),
    "exaone4-sliding": ("exaone4", {**SMALL, "sliding_window": W}),
    "granite": ("granite", SMALL),
    "helium": ("helium", SMALL),
    "internlm3": ("internlm3", SMALL),
    "seed_oss": ("seed_oss", SMALL),
    "ernie4_5": ("ernie4_5", SMALL),
    "smollm3-sliding": ("smollm3", {**SMALL, "use_sliding_window": True, "sliding_window": W}),
    "hunyuan_v1_dense": ("hunyuan_v1_dense", SMALL),
    "glm4": ("glm4", SMALL),
    "apertus": ("apertus", {**SMALL, "hidden_act": "silu"}),
    "cohere": ("cohere", {**SMALL, "use_qk_norm": True}),
    "cohere2-sliding": ("cohere2", {**SMALL, "sliding_window": W}),
    "stablelm": ("stablelm", {k: v for k, v in SMALL.items() if k != "head_dim"}),
    "starcoder2-sliding": ("starcoder2", {**SMALL, "sliding_window": W}),
    "olmoe": ("olmoe", {**SMALL, "num_experts": 4, "num_experts_per_tok": 2}),
    "granitemoe": ("granitemoe", {**SMALL, "num_local_experts": 4, "num_experts_per_tok": 2}),
    "granitemoeshared": ("granitemoeshared", {**SMALL, "num_local_experts": 4, "num_experts_per_tok": 2,
                                              "shared_intermediate_size": 32}),
    "ernie4_5_moe": ("ernie4_5_moe", {**SMALL, "moe_num_experts": 4, "moe_k": 2, "moe_intermediate_size": 32}),
    "hunyuan_v1_moe": ("hunyuan_v1_moe", {**SMALL, "num_experts": 4, "moe_topk": 2}),
    "phimoe-sliding": ("phimoe", {**SMALL, "num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": W}),
    "dbrx": ("dbrx", dict(vocab_size=128, d_model=64, n_heads=4, n_layers=3, max_seq_len=256,
                          attn_config={"kv_n_heads": 2, "rope_theta": 10_000, "clip_qkv": 8},
                          ffn_config={"ffn_hidden_size": 32, "moe_num_experts": 4, "moe_top_k": 2})),
    "bamba": ("bamba", {**SMALL, "attn_layer_indices": [1], "mamba_n_heads": 4, "mamba_d_state": 8,
                        "mamba_n_groups": 2, "mamba_chunk_size": 8}),
    "granitemoehybrid": ("granitemoehybrid", {**SMALL, "layer_types": ["mamba", "attention", "mamba", "mamba"],
                                              "num_local_experts": 4, "num_experts_per_tok": 2, "mamba_n_heads": 4,
                                              "mamba_d_state": 8, "shared_intermediate_size": 32,
                                              "mamba_chunk_size": 8}),
    "falcon_h1": ("falcon_h1", {**SMALL, "mamba_d_ssm": 64, "mamba_n_heads": 4, "mamba_d_state": 8,
                                "mamba_n_groups": 2, "mamba_chunk_size": 8, "mamba_rms_norm": True}),
    "jamba": ("jamba", {**SMALL, "attn_layer_period": 2, "attn_layer_offset": 1, "num_experts": 4,
                        "num_experts_per_tok": 2, "mamba_d_state": 8, "use_mamba_kernels": False}),
    # (MHA: transformers' q/k/v adapters are [2h -> 2h], so they only run without GQA)
    "zamba2": ("zamba2", dict(vocab_size=128, hidden_size=64, num_hidden_layers=5, num_attention_heads=4,
                              num_key_value_heads=4, max_position_embeddings=256, n_mamba_heads=4, mamba_d_state=8,
                              mamba_ngroups=2, chunk_size=8, num_mem_blocks=2, adapter_rank=8,
                              use_shared_attention_adapter=True, pad_token_id=0,
                              layers_block_type=["mamba", "hybrid", "mamba", "hybrid", "hybrid"])),
    "lfm2": ("lfm2", {**SMALL, "layer_types": ["conv", "full_attention", "conv", "conv"], "conv_L_cache": 3}),
    "lfm2_moe": ("lfm2_moe", {**SMALL, "layer_types": ["conv", "full_attention", "conv", "conv"], "num_dense_layers": 1,
                              "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32}),
    "mpt": ("mpt", dict(vocab_size=128, d_model=64, n_heads=4, n_layers=3, max_seq_len=256)),
    "bloom": ("bloom", dict(vocab_size=128, hidden_size=64, n_head=4, n_layer=3)),
    "gptj": ("gptj", dict(vocab_size=128, n_embd=64, n_head=4, n_layer=3, rotary_dim=8, n_positions=256)),
    "codegen": ("codegen", dict(vocab_size=128, n_embd=64, n_head=4, n_layer=3, rotary_dim=8, n_positions=256)),
    "gpt_neo-local": ("gpt_neo", dict(vocab_size=128, hidden_size=64, num_heads=4, num_layers=4, window_size=W,
                                      attention_types=[[["global", "local"], 2]], max_position_embeddings=256)),
}


def run_cache_check(model_type: str, fields: dict, extra: dict | None = None, steps: int = 2) -> list[int]:
    """Prefill 13 tokens x 2 sequences, then ``steps`` decode steps; at each point the cache's bytes
    must equal the transformers convention. Returns the measured bytes."""
    hf_config = transformers.AutoConfig.for_model(model_type, **fields)
    config = {**hf_config.to_dict(), "model_type": model_type, "torch_dtype": "float32", **(extra or {})}
    spec = parse_config(config)
    assert spec.basis == "native"
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(hf_config).eval()
    batch, prompt = 2, 13
    measured = prefill_and_decode(model, torch.randint(0, 128, (batch, prompt)), steps)
    assert measured == [kv_cache_bytes(spec, [prompt + i] * batch, "fp32", "transformers").kv_bytes
                        for i in range(steps + 1)]
    return measured


@pytest.mark.parametrize("case", sorted(CACHE_CASES))
def test_cache_bytes_equal_transformers_convention(case):
    model_type, fields = CACHE_CASES[case]
    run_cache_check(model_type, fields)


def test_olmo3_cache_by_hand():
    # 4 layers [s, s, s, full] (Olmo3Config: (i + 1) % 4 != 0 slide), 2 KV heads x (16 + 16) x 4 B = 256 B
    # per token per layer, 2 sequences. Prefill 13: 3 sliding layers keep W - 1 = 7 tokens, the full
    # layer 13: 2 x 256 x (3 x 7 + 13) = 17,408 B. Decode 1 and 2: full layer 14 then 15 tokens.
    assert run_cache_check("olmo3", {**SMALL, "sliding_window": W}) == [17_408, 17_920, 18_432]


# --- vllm convention -----------------------------------------------------------------------------

def test_vllm_sliding_layers_hold_the_window():
    # vLLM serves olmo3 with vllm/model_executor/models/olmo2.py: Olmo2Attention passes
    # per_layer_sliding_window=config.sliding_window to Attention on the layers whose layer_types entry is
    # "sliding_attention" (None elsewhere), and kv_cache_interface.py's SlidingWindowSpec keeps the last
    # sliding_window tokens (blocks older than the window are freed).
    # olmo3 defaults: 32 layers, 24 sliding (W 4096) + 8 full, MHA 32 x (128 + 128) x 2 B = 16,384 B
    # per token per layer. At 32,768 tokens: 24 x 4096 x 16,384 + 8 x 32,768 x 16,384 = 5,905,580,032 B.
    spec = parse_config(family_config("olmo3"))
    assert spec.layer_kinds == {"sliding_attention": 24, "full_attention": 8}
    assert kv_cache_bytes(spec, [32_768], "bf16", "vllm").kv_bytes == 5_905_580_032


def test_vllm_mamba2_state_bamba_defaults():
    # vLLM bamba.py get_mamba_state_shape_from_config -> MambaStateShapeCalculator.mamba2_state_shape
    # (vllm/model_executor/layers/mamba/mamba_utils.py): conv (d_conv - 1, conv_dim // tp) with conv_dim =
    # intermediate + 2 x n_groups x d_state, temporal (heads // tp, d_head, d_state); both in the model
    # dtype (mamba_cache_dtype / mamba_ssm_cache_dtype "auto").
    # BambaConfig(): h 4096 x expand 2 = 8192, 128 heads x 64, 1 group, d_state 256, d_conv 4, 32 Mamba
    # layers (no attn_layer_indices), bf16:
    #   conv 8704 x 3 x 2 B = 52,224; ssm 128 x 64 x 256 x 2 B = 4,194,304; per layer 4,246,528 B;
    #   32 layers: 135,888,896 B per sequence.
    # transformers keeps d_conv = 4 columns and an fp32 SSM state (measured above in bf16 too):
    #   32 x (8704 x 4 x 2 + 128 x 64 x 256 x 4) = 32 x 8,458,240 = 270,663,680 B.
    spec = parse_config({**family_config("bamba"), "torch_dtype": "bfloat16"})
    assert spec.layer_kinds == {"mamba": 32}
    assert kv_cache_bytes(spec, [1000], "auto", "vllm").kv_bytes == 135_888_896
    assert kv_cache_bytes(spec, [1000], "auto", "transformers").kv_bytes == 270_663_680
    # tp = 2 splits heads and conv channels, and extra_groups_for_head_shards(1, 2) = 1 adds a replicated
    # group: conv_dim = 8192 + 2 x 2 x 256 = 9216, 4608 per rank.
    #   32 x (4608 x 3 x 2 + 64 x 64 x 256 x 2) = 32 x (27,648 + 2,097,152) = 67,993,600 B.
    assert kv_cache_bytes(spec, [1000], "auto", "vllm", tp=2).kv_bytes == 67_993_600


def test_vllm_short_conv_state_lfm2():
    # vLLM lfm2.py get_mamba_state_shape_from_config -> MambaStateShapeCalculator.short_conv_state_shape(
    # tp, conv_dim, conv_L_cache) = ((conv_L_cache - 1, conv_dim // tp),), dtype short_conv_state_dtype
    # (model dtype). LFM2-1.2B-like: h 2048, 16 layers, attention at [2, 5, 8, 10, 12, 14], 32 heads,
    # 8 KV heads of 64, conv_L_cache 3, bf16.
    #   10 conv layers x 2048 x 2 x 2 B = 81,920 B per sequence;
    #   6 attention layers x 8 x (64 + 64) x 2 B = 12,288 B per token; at 1000 tokens 12,288,000 B.
    #   total 12,369,920 B. transformers keeps 3 columns: 10 x 2048 x 3 x 2 = 122,880 -> 12,410,880 B.
    cfg = family_config("lfm2", hidden_size=2048, num_hidden_layers=16, full_attn_idxs=[2, 5, 8, 10, 12, 14],
                        num_attention_heads=32, num_key_value_heads=8)
    spec = parse_config({**cfg, "torch_dtype": "bfloat16"})
    assert spec.layer_kinds == {"short_conv": 10, "full_attention": 6}
    assert kv_cache_bytes(spec, [1000], "auto", "vllm").kv_bytes == 12_369_920
    assert kv_cache_bytes(spec, [1000], "auto", "transformers").kv_bytes == 12_410_880


def test_vllm_mamba1_state_jamba_defaults():
    # vLLM jamba.py get_mamba_state_shape_from_config -> MambaStateShapeCalculator.mamba1_state_shape(tp,
    # intermediate_size = mamba_expand x hidden_size, state_size = mamba_d_state, conv_kernel = mamba_d_conv):
    # conv (d_conv - 1, inner // tp), temporal (inner // tp, d_state), model dtype (mamba1_state_dtype).
    # JambaConfig(): 32 layers, attention at i % 8 == 4 (4 layers), 28 Mamba-1 layers, inner 2 x 4096 = 8192,
    # d_state 16, d_conv 4, 8 KV heads of 128, bf16:
    #   per Mamba layer 8192 x 3 x 2 + 8192 x 16 x 2 = 49,152 + 262,144 = 311,296 B; x 28 = 8,716,288 B;
    #   attention 4 x 8 x (128 + 128) x 2 B = 16,384 B per token, x 1000 tokens = 16,384,000 B.
    spec = parse_config({**family_config("jamba"), "torch_dtype": "bfloat16"})
    assert spec.layer_kinds == {"mamba": 28, "full_attention": 4}
    assert kv_cache_bytes(spec, [1000], "auto", "vllm").kv_bytes == 16_384_000 + 8_716_288
    # Jamba-v0.1's published size is 52B total, 12B active: transformers' count of the defaults.
    params = count_params(spec)
    assert params.total_params == 51_570_323_328
    assert round(params.active_params / 1e9) == 12


def test_vllm_falcon_h1_attention_and_mamba_in_every_layer():
    # vLLM falcon_h1.py: each FalconH1ParallelHybrid layer holds an Attention (FullAttentionSpec) and a
    # MambaMixer2 (get_mamba_state_shape_from_config -> mamba2_state_shape with intermediate_size =
    # mamba_d_ssm, or mamba_expand x hidden_size when null). FalconH1Config(), bf16, 32 layers:
    #   attention 8 KV heads x (128 + 128) x 2 B = 4096 B per token per layer; 1000 tokens x 32 = 131,072,000 B
    #   Mamba: conv_dim = 1024 + 2 x 1 x 256 = 1536; 1536 x 3 x 2 + 128 heads x 8 x 256 x 2 = 9,216 + 524,288
    #          = 533,504 B per layer; x 32 = 17,072,128 B per sequence.
    from kvplan.plan import kv_groups
    from kvplan.spec import distinct_layers

    spec = parse_config({**family_config("falcon_h1"), "torch_dtype": "bfloat16"})
    assert spec.layer_kinds == {"attention_and_mamba": 32}
    kv = kv_cache_bytes(spec, [1000], "auto", "vllm")
    assert kv.by_kind == {"full_attention": 131_072_000, "mamba": 17_072_128}
    assert kv.layers_by_kind == {"full_attention": 32, "mamba": 32}  # each layer's two caches
    # vLLM's hybrid layout: the attention block grows until a page holds a Mamba state:
    # 16 x cdiv(533,504, 16 x 4096) = 144 tokens; pages 144 x 4096 = 589,824 B (the Mamba page padded to it);
    # two groups of 32 layers, 32 x 589,824 = 18,874,368 B per block.
    groups, bytes_per_block, block = kv_groups(distinct_layers(spec.layers), 16, 1, 2, 2, 8192, 2048)
    assert block == 144 and bytes_per_block == 18_874_368
    assert sorted((g.kind, g.layers) for g in groups) == [("full_attention", 32), ("mamba", 32)]


def test_vllm_zamba2_defaults():
    # vLLM zamba2.py: every layer has a MambaMixer2 (mamba2_state_shape: intermediate = mamba_expand x h,
    # n_groups = mamba_ngroups, heads = n_mamba_heads, head_dim = mamba_headdim, d_state, d_conv); each hybrid
    # layer's shared block has its own Attention(num_attention_heads, attention_head_dim): multi-head.
    # Zamba2Config(): 54 layers, 9 hybrid; h 2560: inner 5120, 8 heads of 640, 1 group, d_state 64, d_conv 4;
    # 32 heads of 2 x 2560 // 32 = 160; bf16:
    #   Mamba per layer: (5120 + 2 x 64) x 3 x 2 + 8 x 640 x 64 x 2 = 31,488 + 655,360 = 686,848 B; x 54 = 37,089,792
    #   attention: 9 x 32 x (160 + 160) x 2 B = 184,320 B per token; x 1000 = 184,320,000 B.
    spec = parse_config({**family_config("zamba2"), "torch_dtype": "bfloat16"})
    assert spec.layer_kinds == {"mamba": 45, "attention_and_mamba": 9}
    kv = kv_cache_bytes(spec, [1000], "auto", "vllm")
    assert kv.by_kind == {"mamba": 37_089_792, "full_attention": 184_320_000}


def test_zamba2_gqa_config_caches_kv_heads_in_transformers_but_all_heads_in_vllm():
    # 2 hybrid layers, num_key_value_heads 8 of 32 heads x 160: transformers caches 8 x 320 x 2 B =
    # 5,120 B per token per hybrid layer; vLLM's multi-head Attention 32 x 320 x 2 B = 20,480 B.
    cfg = family_config("zamba2", num_hidden_layers=4, layers_block_type=["mamba", "hybrid", "mamba", "hybrid"],
                        num_key_value_heads=8)
    spec = parse_config({**cfg, "torch_dtype": "bfloat16"})
    assert kv_cache_bytes(spec, [10], "auto", "transformers").by_kind["full_attention"] == 2 * 10 * 5_120
    assert kv_cache_bytes(spec, [10], "auto", "vllm").by_kind["full_attention"] == 2 * 10 * 20_480
    assert count_params(spec).total_params == transformers_param_count(cfg)


# --- the reference decoder (kvplan.validate) runs these families at their exact sizes -------------

@pytest.mark.parametrize("case", ["olmo2", "mpt", "gptj", "lfm2", "granitemoeshared", "ernie4_5_moe", "jamba"])
def test_validation_run_is_exact(case):
    # Whole-width q/k norms (OLMo-2), fused Wqkv (MPT), out_proj (GPT-J), w1/w3/w2 and a short-conv state
    # (LFM2), a fused input_linear shared MLP (Granite-MoE), the router's correction bias (ERNIE), Mamba-1.
    from kvplan.validate.measure import run_validation

    model_type, fields = CACHE_CASES[case]
    cfg = {**transformers.AutoConfig.for_model(model_type, **fields).to_dict(), "model_type": model_type,
           "torch_dtype": "float32"}
    r = run_validation(parse_config(cfg), tokens=12, steps=2, batch=2, block_size=4, check=False)
    assert r["exact"] == {"weights": True, "kv_static": True, "kv_paged": True, "paging": True}


def test_validation_refuses_attention_beside_mamba():
    from kvplan.errors import PlanInputError
    from kvplan.validate.measure import run_validation

    model_type, fields = CACHE_CASES["falcon_h1"]
    cfg = {**transformers.AutoConfig.for_model(model_type, **fields).to_dict(), "model_type": model_type}
    with pytest.raises(PlanInputError, match="Falcon-H1"):
        run_validation(parse_config(cfg), tokens=4, steps=1)


def test_lfm2_old_config_aliases():
    # Early LFM2 config.json files say tie_embedding and block_ff_dim; Lfm2Config takes them as
    # tie_word_embeddings and intermediate_size (block_ff_dim 6144 -> int(2 x 6144 / 3) = 4096 -> 4096).
    cfg = family_config("lfm2", num_hidden_layers=3, layer_types=["conv", "full_attention", "conv"])
    cfg.pop("tie_word_embeddings")
    cfg.pop("intermediate_size")
    cfg.update(tie_embedding=False, block_ff_dim=6144)
    spec = parse_config(cfg)
    assert not spec.tie_word_embeddings and spec.layers[0].mlp[0].out_features == 4096
    assert count_params(spec).total_params == transformers_param_count(cfg)


def test_phi_with_a_tied_head_keeps_its_lm_head_bias():
    # transformers ties only lm_head.weight: PhiForCausalLM with tie_word_embeddings still has lm_head.bias
    # [vocab_size] (51,200 parameters at the default vocab); kvplan counted the tied head as nothing.
    import transformers

    from kvplan import count_params, parse_config
    from tests.test_oracle_transformers import transformers_param_count

    cfg = transformers.AutoConfig.for_model("phi", tie_word_embeddings=True, num_hidden_layers=2).to_dict()
    cfg["model_type"] = "phi"
    assert count_params(parse_config(cfg)).total_params == transformers_param_count(cfg)
