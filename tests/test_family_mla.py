"""MLA / DSA / DeepSeek-derived families: DeepSeek-V3.2, GLM-4.5+ (glm4_moe, glm4_moe_lite), GLM-5
(glm_moe_dsa), Kimi-K2 / K2.5 (kimi_k2 -> deepseek_v3), Kimi-Linear, LongCat-Flash, MiniCPM3, dots1.

Parameters equal transformers 5.23 on the meta device (config-class defaults and variations); the
transformers-convention cache equals the bytes transformers' cache object holds after prefill and each
of 2 decode steps; vLLM-convention bytes are hand-derived below from vLLM's source.
"""

import json
from pathlib import Path

import pytest

from kvplan import count_params, kv_bytes_per_token, kv_cache_bytes, load_preset, parse_config, preset_config
from kvplan.engines import EngineConfig
from kvplan.errors import ConfigError, PlanInputError
from kvplan.gpus import get_gpu
from kvplan.layers import MLAIndexerAttention
from kvplan.plan import plan

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from tests.test_oracle_cache import cache_bytes, prefill_and_decode  # noqa: E402
from tests.test_oracle_transformers import transformers_param_count  # noqa: E402

torch.set_num_threads(1)
FIXTURES = Path(__file__).parent / "fixtures" / "configs"


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


# ----------------------------------------------------------------------------- parameters vs transformers

VARIANTS = [
    ("deepseek_v32", {}),
    ("deepseek_v32", {"num_hidden_layers": 4, "first_k_dense_replace": 1, "attention_bias": True}),
    ("deepseek_v32", {"num_hidden_layers": 5, "index_n_heads": 16, "index_head_dim": 64, "n_shared_experts": 2}),
    ("glm_moe_dsa", {}),
    ("glm_moe_dsa", {"num_hidden_layers": 8, "index_topk_freq": 2}),  # layers 1, 3, 5, 7 share
    ("glm_moe_dsa", {"num_hidden_layers": 6, "index_topk_pattern": "FFSFSS"}),
    ("glm4_moe", {}),  # no head_dim: Glm4MoeAttention floors 4096 // 96 = 42
    ("glm4_moe", {"num_hidden_layers": 6, "head_dim": 128, "use_qk_norm": True, "attention_bias": True}),
    ("glm4_moe", {"num_hidden_layers": 4, "first_k_dense_replace": 2, "n_shared_experts": 0, "head_dim": 64}),
    ("glm4_moe_lite", {}),
    ("glm4_moe_lite", {"num_hidden_layers": 5, "q_lora_rank": None, "mlp_layer_types": ["dense"] * 2 + ["sparse"] * 3}),
    ("minicpm3", {}),
    ("minicpm3", {"q_lora_rank": None, "tie_word_embeddings": False, "mlp_bias": True, "num_hidden_layers": 6}),
    ("dots1", {"num_hidden_layers": 6, "n_routed_experts": 8, "n_shared_experts": 2, "num_experts_per_tok": 2,
               "first_k_dense_replace": 1}),
    ("dots1", {"num_hidden_layers": 4, "n_routed_experts": 4, "n_shared_experts": 1, "num_experts_per_tok": 2,
               "head_dim": 64, "attention_bias": True, "tie_word_embeddings": True}),
    ("kimi_linear", {}),
    ("kimi_linear", {"num_hidden_layers": 6, "q_lora_rank": 256, "first_k_dense_replace": 2}),
    ("deepseek_v4", {}),
    ("deepseek_v4", {"num_hidden_layers": 5, "hc_mult": 2, "o_groups": 4, "mlp_bias": True,
                     "layer_types": ["sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention",
                                     "sliding_attention", "compressed_sparse_attention"]}),
    ("deepseek_v4", {"num_hidden_layers": 4, "compress_rates": {"compressed_sparse_attention": 8,
                                                                "heavily_compressed_attention": 64},
                     "index_head_dim": 64, "index_n_heads": 8}),
    ("longcat_flash", {}),
    ("longcat_flash", {"num_layers": 3, "zero_expert_num": 0, "router_bias": True, "attention_bias": True,
                       "n_routed_experts": 16}),
]


@pytest.mark.parametrize("model_type,overrides", VARIANTS)
def test_family_params_equal_transformers(model_type, overrides):
    cfg = transformers.AutoConfig.for_model(model_type, **overrides).to_dict()
    cfg["model_type"] = model_type
    assert count_params(parse_config(cfg)).total_params == transformers_param_count(cfg)


def test_kimi_linear_checkpoint_layout_equals_transformers():
    # The checkpoint's own nested form (linear_attn_config, 1-indexed layer lists) as Moonshot ships it.
    flat = ("layer_types", "mlp_layer_types", "linear_head_dim", "linear_num_heads", "linear_conv_kernel_dim")
    cfg = {k: v for k, v in transformers.AutoConfig.for_model("kimi_linear").to_dict().items() if k not in flat}
    cfg.update(model_type="kimi_linear", num_hidden_layers=6, first_k_dense_replace=1,
               linear_attn_config={"head_dim": 64, "num_heads": 16, "short_conv_kernel_size": 3,
                                   "full_attn_layers": [2, 5], "kda_layers": [1, 3, 4, 6]})
    spec = parse_config(cfg)
    assert [layer.cache.kind for layer in spec.layers] == ["linear_attention", "mla"] + ["linear_attention"] * 2 + [
        "mla", "linear_attention"]
    assert count_params(spec).total_params == transformers_param_count(cfg)


def test_glm5_real_config_params():
    # zai-org/GLM-5 config.json: transformers builds 743,911,199,232 parameters (the number).
    assert count_params(load_preset("glm-5")).total_params == 743_911_199_232 == transformers_param_count(
        preset_config("glm-5"))


def test_glm52_shared_indexers_params_and_layout():
    cfg = fixture("glm-5.2")
    spec = parse_config(cfg)
    full = [i for i, layer in enumerate(spec.layers) if layer.cache.index_head_dim]
    # indexer_types: layers 0, 1, 2 and every 4th from 6 to 74 run an indexer: 3 + 18 = 21.
    assert full == [0, 1, 2] + list(range(6, 75, 4)) and len(full) == 21
    assert count_params(spec).total_params == transformers_param_count(cfg)


# ----------------------------------------------------------------------------- cache bytes vs transformers


MLA = dict(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=4,
           num_key_value_heads=4, kv_lora_rank=32, q_lora_rank=48, qk_rope_head_dim=8, qk_nope_head_dim=16,
           v_head_dim=16, n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
           first_k_dense_replace=1, n_group=1, topk_group=1)
DSA = dict(MLA, index_head_dim=16, index_n_heads=2, index_topk=4)
CACHE_CASES = {
    # 3 layers x (32 + 8 latent + 16 indexer) = 168 elements per token
    "deepseek-v32": ("deepseek_v32", DSA),
    # layers 1 and 3 share layer 0's / 2's top-k: they cache the latent only (40 elements)
    "glm-moe-dsa-shared": ("glm_moe_dsa", dict(DSA, num_hidden_layers=4,
                                               indexer_types=["full", "shared", "full", "shared"])),
    "glm4-moe-lite": ("glm4_moe_lite", MLA),
    "minicpm3": ("minicpm3", MLA),
    "glm4-moe-gqa": ("glm4_moe", dict(MLA, num_key_value_heads=2, head_dim=16, use_qk_norm=True)),
    "dots1-sliding": ("dots1", dict(MLA, num_key_value_heads=2, head_dim=16, n_shared_experts=1, sliding_window=8,
                                    max_window_layers=1)),
    "kimi-linear": ("kimi_linear", dict(vocab_size=128, pad_token_id=0, bos_token_id=1, eos_token_id=2, hidden_size=64,
                                        intermediate_size=128, num_hidden_layers=5, num_attention_heads=4,
                                        kv_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16,
                                        num_experts=4, num_experts_per_token=2, moe_intermediate_size=32,
                                        linear_num_heads=2, linear_head_dim=16, linear_conv_kernel_dim=4)),
    # Layers: sliding-only, CSA (m 4, indexer 16), HCA (m 8), CSA; window 8. 13 + 2 tokens cross CSA and HCA
    # window edges (T mod m changes, a window closes at 16 for CSA and HCA).
    "deepseek-v4": ("deepseek_v4", dict(vocab_size=128, hidden_size=64, moe_intermediate_size=32, num_hidden_layers=4,
                                        num_attention_heads=4, head_dim=32, q_lora_rank=48, n_routed_experts=4,
                                        num_experts_per_tok=2, sliding_window=8, o_groups=2, o_lora_rank=16,
                                        index_n_heads=2, index_head_dim=16, index_topk=4, hc_mult=2,
                                        partial_rotary_factor=0.25,
                                        compress_rates={"compressed_sparse_attention": 4,
                                                        "heavily_compressed_attention": 8},
                                        layer_types=["sliding_attention", "compressed_sparse_attention",
                                                     "heavily_compressed_attention", "compressed_sparse_attention"])),
    "longcat-flash": ("longcat_flash", dict(vocab_size=128, hidden_size=64, ffn_hidden_size=128, num_layers=2,
                                            num_attention_heads=4, kv_lora_rank=32, q_lora_rank=48, qk_rope_head_dim=8,
                                            head_dim=8, qk_nope_head_dim=16, v_head_dim=16, n_routed_experts=4,
                                            zero_expert_num=2, moe_topk=2, expert_ffn_hidden_size=32)),
}


@pytest.mark.parametrize("case", sorted(CACHE_CASES))
def test_cache_bytes_equal_transformers(case):
    model_type, fields = CACHE_CASES[case]
    hf_config = transformers.AutoConfig.for_model(model_type, **fields)
    spec = parse_config({**hf_config.to_dict(), "model_type": model_type, "torch_dtype": "float32"})
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(hf_config).eval()
    batch, prompt = 2, 13
    measured = prefill_and_decode(model, torch.randint(3, 128, (batch, prompt)))
    predicted = [kv_cache_bytes(spec, [prompt + i] * batch, "fp32", "transformers").kv_bytes for i in range(3)]
    assert measured == predicted
    assert len(set(measured)) == 3  # the cache grows every step: the comparison is not vacuous


def test_dsa_cache_worked_number():
    # deepseek-v32 tiny case above: 2 sequences x 13 tokens x 3 layers x (32 + 8 + 16) x 4 B = 17,472 B.
    model_type, fields = CACHE_CASES["deepseek-v32"]
    cfg = {**transformers.AutoConfig.for_model(model_type, **fields).to_dict(), "model_type": model_type,
           "torch_dtype": "float32"}
    assert kv_cache_bytes(parse_config(cfg), [13, 13], "fp32", "transformers").kv_bytes == 17_472


# ----------------------------------------------------------------------------- vLLM convention, hand-derived
#
# vllm/model_executor/models/deepseek_v2.py @002d6073 (Indexer.__init__): the indexer's k_cache is
#   DeepseekV32IndexerCache(head_dim = index_head_dim + index_head_dim // quant_block_size * 4, dtype=torch.uint8),
#   quant_block_size = 128 ("fp8 naive cache ... value in fp8 and scale in fp32 per quant_block_size element"),
#   whatever --kv-cache-dtype is: 128 + 128 // 128 x 4 = 132 B per token per layer.
# vllm/v1/kv_cache_interface.py @001cabc1 (MLAAttentionSpec.real_page_size_bytes): block_size x 656 for
#   cache_dtype_str "fp8_ds_mla", else block_size x num_kv_heads (1) x head_size (576) x dtype size;
#   vllm/v1/attention/backends/mla/flashmla_sparse.py @008a0c31: 656 = 512 fp8 NoPE + 4 fp32 scales (one per 128)
#   + 64 bf16 RoPE, and "fp8" is an alias of fp8_ds_mla for the sparse backend.
# Layers deepseek_v2.py builds with _skip_topk (GLM-5 "shared") get no Indexer, so no k_cache.


def test_dsv32_bytes_per_token_per_layer_both_conventions():
    spec = load_preset("deepseek-v3.2")
    layer = spec.layers[0].cache
    assert isinstance(layer, MLAIndexerAttention) and spec.layer_kinds == {"mla_dsa": 61}
    assert layer.kv_bytes_per_token("vllm", 1, 2) == 576 * 2 + 132 == 1284  # bf16 latent + fp8 indexer key
    assert layer.kv_bytes_per_token("vllm", 1, 1) == 656 + 132 == 788  # fp8_ds_mla + fp8 indexer key
    assert layer.kv_bytes_per_token("transformers", 1, 2) == (512 + 64 + 128) * 2 == 1408  # all in bf16
    assert layer.kv_bytes_per_token("vllm", 8, 2) == 1284  # replicated on every TP rank
    assert kv_bytes_per_token(spec) == 61 * 1284 == 78_324
    assert kv_bytes_per_token(spec, "fp8") == 61 * 788 == 48_068
    assert kv_bytes_per_token(spec, convention="transformers") == 61 * 1408 == 85_888


def test_glm5_bytes_per_token_both_conventions():
    spec = load_preset("glm-5")  # every one of the 78 layers runs its indexer (no indexer_types in the file)
    assert kv_bytes_per_token(spec) == 78 * 1284 == 100_152
    assert kv_bytes_per_token(spec, "fp8") == 78 * 788 == 61_464
    assert kv_bytes_per_token(spec, convention="transformers") == 78 * 1408 == 109_824


def test_glm52_shared_layers_cache_no_indexer_key():
    spec = parse_config(fixture("glm-5.2"))
    # 21 full layers x 1284 + 57 shared x 1152 (latent only) = 26,964 + 65,664 = 92,628 B per token (vllm, bf16)
    assert kv_bytes_per_token(spec) == 21 * 1284 + 57 * 1152 == 92_628
    # transformers: 21 x (576 + 128) x 2 + 57 x 576 x 2 = 29,568 + 65,664 = 95,232
    assert kv_bytes_per_token(spec, convention="transformers") == 95_232


def test_dsa_vllm_one_uniform_type_group():
    # vllm/v1/core/kv_cache_utils.py get_kv_cache_groups: all MLAAttentionSpec of one block size ->
    # UniformTypeKVCacheSpecs, one group whose page is the sum of the layers' pages (latent and indexer alike).
    engine = EngineConfig(max_model_len=8192)
    p = plan(load_preset("deepseek-v3.2"), get_gpu("H200"), engine)
    assert p.block_size == 64 and len(p.kv_groups) == 1
    assert p.ranks[0].bytes_per_block == 61 * 64 * 1284 == 5_012_736
    shared = plan(parse_config(fixture("glm-5.2")), get_gpu("H200"), engine)
    assert len(shared.kv_groups) == 1 and shared.kv_groups[0].layers == 78 and shared.kv_groups[0].padding_layers == 0
    assert shared.ranks[0].bytes_per_block == 64 * (21 * 1284 + 57 * 1152) == 5_928_192
    assert shared.blocks_per_request == 8192 // 64


def test_kimi_linear_vllm_state_worked_number():
    # Kimi-Linear-48B-A3B KDA layer: 32 heads x 128, kernel 4, bf16; vLLM kda_state_shape:
    # conv (3 x 4096 channels) x 3 columns + recurrent 32 x 128 x 128 = 36,864 + 524,288 = 561,152 elements x 2 B.
    cfg = transformers.AutoConfig.for_model("kimi_linear").to_dict()
    spec = parse_config(dict(cfg, model_type="kimi_linear", torch_dtype="bfloat16"))
    kda = next(layer.cache for layer in spec.layers if layer.cache.kind == "linear_attention")
    assert kda.state_bytes("vllm", 1, 2) == 1_122_304
    assert kda.state_bytes("transformers", 1, 2) == 3 * 4096 * 4 * 2 + 32 * 128 * 128 * 4


# ----------------------------------------------------------------------------- Kimi-K2 / K2.5 resolution


def test_kimi_k25_reads_as_deepseek_v3():
    cfg = preset_config("kimi-k2.5")
    spec = load_preset("kimi-k2.5")
    assert spec.model_type == "deepseek_v3"
    assert any("'kimi_k2' read as 'deepseek_v3'" in a for a in spec.assumptions)
    assert any("MoonViT" in s for s in spec.skipped)
    # The same text_config with model_type deepseek_v3 gives the identical spec (weights and cache).
    as_v3 = dict(cfg["text_config"], model_type="deepseek_v3")
    v3 = parse_config(as_v3)
    assert count_params(spec).total_params == count_params(v3).total_params == 1_026_408_209_408
    assert spec.layers == v3.layers
    assert kv_bytes_per_token(spec) == kv_bytes_per_token(v3) == 61 * 576 * 2 == 70_272
    assert spec.quantization == "w4a16-g32"  # compressed-tensors pack-quantized int4, group 32 (kvplan.quantization)


def test_kimi_k2_instruct_reads_as_deepseek_v3():
    cfg = preset_config("kimi-k2-instruct")
    assert cfg["model_type"] == "kimi_k2"
    spec = load_preset("kimi-k2-instruct")
    v3 = parse_config(dict(cfg, model_type="deepseek_v3"))
    assert spec.model_type == "deepseek_v3" and spec.layers == v3.layers
    assert count_params(spec).total_params == count_params(v3).total_params


def test_unknown_architecture_is_not_aliased():
    from kvplan.hf_config import text_decoder_config

    cfg = {"model_type": "kimi_k2", "architectures": ["SomethingElseForCausalLM"]}
    assert text_decoder_config(cfg)[1] == "kimi_k2"
    assert text_decoder_config({"model_type": "llama", "architectures": ["DeepseekV3ForCausalLM"]})[1] == "llama"


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("bad,field", [
    ({"indexer_types": ["full", "shared"]}, "indexer_types"),  # wrong length
    ({"indexer_types": ["shared", "full", "full", "full"]}, "indexer_types"),  # nothing to share
    ({"indexer_types": ["full", "half", "full", "full"]}, "indexer_types"),
    ({"index_topk_pattern": "FXSF"}, "index_topk_pattern"),
])
def test_glm_dsa_bad_indexer_layout_refused(bad, field):
    cfg = dict(DSA, model_type="glm_moe_dsa", num_hidden_layers=4, **bad)
    with pytest.raises(ConfigError) as err:
        parse_config(cfg)
    assert err.value.field == field


def test_dsa_config_without_indexer_fields_refused():
    cfg = {k: v for k, v in DSA.items() if k != "index_head_dim"} | {"model_type": "deepseek_v32"}
    with pytest.raises(ConfigError) as err:
        parse_config(cfg)
    assert "index_head_dim" in err.value.field


# ----------------------------------------------------------------------------- Validate page / CLI


def test_reference_decoder_refuses_dsa_by_name():
    from kvplan.validate.decoder import Decoder
    from kvplan.validate.measure import run_validation

    with pytest.raises(PlanInputError) as err:
        run_validation("deepseek-v3.2", tokens=4, steps=1)
    assert err.value.field == "model" and "'mla_dsa'" in err.value.message
    with pytest.raises(PlanInputError):
        Decoder(load_preset("glm-5"))
    with pytest.raises(PlanInputError) as err:
        run_validation(parse_config(fixture("deepseek-v4-flash")), tokens=4, steps=1)
    assert "'compressed_attention'" in err.value.message


def test_cli_validate_dsa_is_an_error_line_not_a_traceback(capsys):
    from kvplan.cli import main

    assert main(["validate", "glm-5", "--tokens", "4", "--steps", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: model:") and "Traceback" not in err


def test_deepseek_v4_cache_saw_tooth_equals_transformers():
    # From 3 tokens (no CSA window closed yet: no compressed entry, no overlap state) to 17, one token at a
    # time: every step's bytes equal transformers' cache; the HCA buffer drains when a window closes, so the
    # total falls at T = 8 and T = 16 (2 x 7 buffered rows -> 1 compressed entry): not linear in tokens.
    model_type, fields = CACHE_CASES["deepseek-v4"]
    hf_config = transformers.AutoConfig.for_model(model_type, **fields)
    spec = parse_config({**hf_config.to_dict(), "model_type": model_type, "torch_dtype": "float32"})
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(hf_config).eval()
    ids = torch.randint(3, 128, (1, 17))
    sizes = {}
    with torch.no_grad():
        out = model(ids[:, :3], use_cache=True)
        sizes[3] = cache_bytes(out.past_key_values)
        for t in range(3, 17):
            out = model(ids[:, t:t + 1], past_key_values=out.past_key_values, use_cache=True)
            sizes[t + 1] = cache_bytes(out.past_key_values)
    assert sizes == {t: kv_cache_bytes(spec, [t], "fp32", "transformers").kv_bytes for t in sizes}
    assert sizes[8] < sizes[7] and sizes[16] < sizes[15]


def test_deepseek_v4_flash_real_config():
    cfg = fixture("deepseek-v4-flash")
    spec = parse_config(cfg)
    # compress_ratios lists 44 entries (the MTP layer's last); the 43 main layers: 2 sliding-only, 21 CSA, 20 HCA
    rates = [layer.cache.compress_rate for layer in spec.layers]
    assert len(rates) == 43 and rates.count(0) == 2 and rates.count(4) == 21 and rates.count(128) == 20
    assert count_params(spec).total_params == 284_332_230_231 == transformers_param_count(cfg)
    hca = next(layer.cache for layer in spec.layers if layer.cache.compress_rate == 128)
    csa = next(layer.cache for layer in spec.layers if layer.cache.compress_rate == 4)
    swa = spec.layers[0].cache
    # Worked numbers (CompressedAttention docstring), one sequence at T = 1000, elements x 2 B (bf16):
    assert swa.bytes_held(1000, "transformers", 1, 2) == 2 * 127 * 512 * 2
    assert hca.bytes_held(1000, "transformers", 1, 2) == (127 * 512 + 7 * 512 + 2 * 104 * 512) * 2 == 350_208
    assert csa.bytes_held(1000, "transformers", 1, 2) == (127 * 512 + 640 * (250 + 8)) * 2 == 460_288
    # vllm (flagged approximation), fp8: window 128 x 584 B + 250 entries x (584 + 132 B) + the compressor
    # and indexer fp32 states (vllm/models/deepseek_v4/compressor.py CompressorStateCache: state_dim
    # 2 x coff x dim, window coff x m): 8 tokens x (2 x 2 x 512 + 2 x 2 x 128) x 4 B.
    assert csa.bytes_held(1000, "vllm", 1, 1) == 128 * 584 + 250 * (584 + 132) + 8 * (8192 + 2048) == 335_672
    assert hca.bytes_held(1000, "vllm", 1, 1) == 128 * 584 + 7 * 584 + 128 * 2 * 512 * 4 == 603_128
    assert any("approximation" in w for w in spec.warnings)


def test_gqa_and_mla_relatives_vllm_bytes_per_token():
    # glm4_moe (GLM-4.5/4.6/4.7 shape: 8 KV heads x head_dim 128): FullAttentionSpec, K + V:
    # 8 x (128 + 128) x 2 B = 4096 B per token per layer (vllm/v1/kv_cache_interface.py FullAttentionSpec).
    glm = transformers.AutoConfig.for_model("glm4_moe", num_hidden_layers=4, head_dim=128).to_dict()
    spec = parse_config(dict(glm, model_type="glm4_moe", torch_dtype="bfloat16"))
    assert kv_bytes_per_token(spec) == 4 * 8 * 256 * 2 == 16_384  # 4 layers x 4096 B
    # LongCat-Flash: 2 MLA sublayers per block, each an MLAAttentionSpec of 576 x 2 B = 1152 B (28 blocks).
    longcat = transformers.AutoConfig.for_model("longcat_flash").to_dict()
    spec = parse_config(dict(longcat, model_type="longcat_flash", torch_dtype="bfloat16"))
    assert spec.num_hidden_layers == 56 and kv_bytes_per_token(spec) == 56 * 1152 == 64_512
    # MiniCPM3: MLA latent 256 + 32 = 288 elements x 2 B = 576 B per layer, 62 layers.
    mini = transformers.AutoConfig.for_model("minicpm3").to_dict()
    spec = parse_config(dict(mini, model_type="minicpm3", torch_dtype="bfloat16"))
    assert kv_bytes_per_token(spec) == 62 * 288 * 2 == 35_712


# The sweep's tiny DeepSeek-V4 (tests/test_sweep_transformers.py recipes("deepseek_v4"), first recipe
# "hidden, widths, 6 layers"): no sliding-only layer, index_head_dim 128 wider than head_dim 16, HCA at m 128
# with T < m (buffer only, an empty compressed_kv). Every field the cache reads is the recipe's; the widths it
# does not read are smaller than the recipe's (q_lora_rank 1024, o_groups 8, o_lora_rank 1024, index_n_heads 64)
# so the model builds in a second.
SWEEP_V4 = dict(vocab_size=256, hidden_size=64, moe_intermediate_size=32, num_hidden_layers=6, num_attention_heads=4,
                num_key_value_heads=1, head_dim=16, q_lora_rank=48, num_experts_per_tok=2, n_routed_experts=4,
                sliding_window=8, o_groups=2, o_lora_rank=16, index_n_heads=2, index_head_dim=128,
                index_topk=512, hc_mult=4, partial_rotary_factor=0.125, num_nextn_predict_layers=1,
                compress_rates={"compressed_sparse_attention": 4, "heavily_compressed_attention": 128},
                layer_types=["heavily_compressed_attention"] * 3 + ["compressed_sparse_attention",
                             "heavily_compressed_attention", "compressed_sparse_attention"],
                mlp_layer_types=["hash_moe"] * 3 + ["moe"] * 3)


def test_deepseek_v4_sweep_case_cache_equals_transformers():
    # Batch 2, prompt 13, then 2 decode steps, fp32 (4 B). Per sequence, elements, d 16, W 8 (7 tokens kept):
    #   HCA (m 128, n 0, r = T):  7 x 16 + 2 x T x 16 (buffer kv + gate)       T=13: 528, 14: 560, 15: 592
    #   CSA (m 4, d_I 128, n 3):  7 x 16 + (16 + 128) x (3 + 2 x r x 2 + 2 x 4)  r=1: 2272, 2: 2848, 3: 3424
    # 4 HCA + 2 CSA layers, x 4 B x 2 sequences: (4 x 528 + 2 x 2272) x 8 = 53,248; 63,488; 73,728.
    # keys *is* values in these layers (DeepseekV4HCACache.update: self.values = self.keys): summing both
    # names would add 7 x 16 x 4 x 2 = 896 B per layer, 5,376 B in all (the sweep oracle once did so).
    hf_config = transformers.AutoConfig.for_model("deepseek_v4", **SWEEP_V4)
    spec = parse_config({**hf_config.to_dict(), "model_type": "deepseek_v4", "torch_dtype": "float32"})
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(hf_config, dtype=torch.float32).eval()
    by_name = []

    def keys_are_values(step, cache):
        assert all(layer.values is layer.keys for layer in cache.layers)
        by_name.append(cache_bytes(cache) + sum(layer.values.numel() * 4 for layer in cache.layers))

    held = prefill_and_decode(model, torch.randint(0, 100, (2, 13)), on_cache=keys_are_values)
    assert held == [53_248, 63_488, 73_728]
    assert [kv_cache_bytes(spec, [13 + i] * 2, "fp32", "transformers").kv_bytes for i in range(3)] == held
    assert [b - a for a, b in zip(held, by_name)] == [5_376] * 3
