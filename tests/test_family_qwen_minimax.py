"""Qwen3.5 / Qwen3.6, Qwen3-VL, MiniMax-M2, Step-3.5 / 3.7 and Nemotron-3: exact against transformers 5.23, and
the vLLM convention derived by hand from vLLM's source.

- Parameters: transformers' meta-device count for each family's config-class defaults and
  variations. Qwen3-VL's text decoders have no causal-LM class in transformers 5.23, so a flat
  ``qwen3_vl_text`` / ``qwen3_vl_moe_text`` config is compared against ``AutoModel`` (the
  Qwen3VLTextModel / Qwen3VLMoeTextModel that Qwen3VL*ForConditionalGeneration uses as its
  ``language_model``) plus the ``lm_head`` [vocab, hidden] that the ForConditionalGeneration adds
  (absent when tied); likewise ``step3p5`` (Step-3.5 / 3.7), whose text model Step3p7TextModel has
  no Auto class at all and is built directly; wrapper configs go through ``transformers_param_count``, which counts the
  ForConditionalGeneration's parameters outside its vision tower.
- transformers cache: a real cached forward of tiny random models on the CPU; the bytes the
  DynamicCache holds after the prefill and after each of 2 decode steps (the Qwen3.5 / Nemotron
  linear-attention layers hold conv and recurrent states) equal the "transformers" convention.
- vLLM cache: per-token K/V of the full-attention layers and the per-sequence state pages of the
  recurrent layers, worked out in the comments from
  vllm/model_executor/layers/mamba/mamba_utils.py (MambaStateShapeCalculator):
    gated_delta_net_state_shape: conv (conv_dim / tp, kernel - 1) with
        conv_dim = 2 x linear_num_key_heads x linear_key_head_dim + linear_num_value_heads x
        linear_value_head_dim, and temporal (linear_num_value_heads / tp, value_head_dim,
        key_head_dim) -- used by vllm/model_executor/models/qwen3_next.py and qwen3_5.py;
    mamba2_state_shape: conv ((heads x head_dim + 2 x n_groups x state) / tp, kernel - 1) and
        temporal (heads / tp, head_dim, state) -- used by vllm/model_executor/models/nemotron_h.py;
  the conv state in the model dtype, the temporal state in ``mamba_ssm_cache_dtype`` which the
  per-model hooks of vllm/model_executor/models/config.py take from the HF config when left at
  auto (Qwen3_5ForConditionalGenerationConfig: text_config.mamba_ssm_dtype;
  NemotronHForCausalLMConfig: mamba_ssm_cache_dtype). Full attention (vllm FullAttentionSpec) is
  num_key_value_heads x (head_dim + head_dim) per token per layer, MiniMax-M2 included
  (vllm/model_executor/models/minimax_m2.py builds a plain Attention with num_kv_heads).
"""

import json
from pathlib import Path

import pytest

from kvplan import count_params, kv_bytes_per_token, kv_cache_bytes, load_preset, parse_config, preset_config
from kvplan.errors import ConfigError
from kvplan.kv import state_bytes_per_sequence

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.test_oracle_cache import prefill_and_decode  # noqa: E402
from tests.test_oracle_transformers import transformers_param_count  # noqa: E402

pytestmark = pytest.mark.oracle
torch.set_num_threads(1)
FIXTURES = Path(__file__).parent / "fixtures" / "configs"
CLM = transformers.models.auto.modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES


def fixture(name: str) -> dict:
    # json.loads, not kvplan's loader: NVIDIA's files carry the non-standard token Infinity.
    return json.loads((FIXTURES / f"{name}.json").read_text())


def text_model_param_count(hf_config) -> int:
    """A text decoder with no causal-LM class: its text model plus the wrapper's lm_head."""
    from transformers.models.step3p7.modeling_step3p7 import Step3p7TextModel

    with torch.device("meta"):  # step3p5 has no AutoModel entry either: Step3p7TextModel directly
        model = (Step3p7TextModel(hf_config) if hf_config.model_type == "step3p5"
                 else transformers.AutoModel.from_config(hf_config))
    # Qwen3VLTextConfig has no tie_word_embeddings: the wrapper's (Qwen3VLConfig, default False) decides.
    tied = getattr(hf_config, "tie_word_embeddings", False)
    head = 0 if tied else hf_config.vocab_size * hf_config.hidden_size
    return sum(p.numel() for p in model.parameters()) + head


# ------------------------------------------------------------------------------------ parameters

NEMOTRON3_BLOCKS = ["mamba", "moe", "mamba", "attention", "moe", "mlp", "mamba", "moe"]  # Ultra's legacy names
FAMILY_VARIANTS = [
    ("qwen3_5_text", {}, None),
    ("qwen3_5_text", {"num_hidden_layers": 6, "attention_bias": True, "tie_word_embeddings": True,
                      "layer_types": ["linear_attention", "full_attention"] * 3, "linear_num_value_heads": 16}, None),
    ("qwen3_5_moe_text", {}, None),
    ("qwen3_5_moe_text", {"num_hidden_layers": 6, "full_attention_interval": 3, "num_experts": 64,
                          "shared_expert_intermediate_size": 256, "linear_conv_kernel_dim": 3}, None),
    ("qwen3_5", {}, None),  # the wrapper: text_config + vision_config, vision skipped
    ("qwen3_5_moe", {}, None),
    ("qwen3_vl", {}, None),
    ("qwen3_vl_moe", {}, None),
    ("qwen3_vl_text", {}, None),
    ("qwen3_vl_text", {"num_key_value_heads": 8, "attention_bias": True, "num_hidden_layers": 6}, None),
    ("qwen3_vl_moe_text", {}, None),
    ("qwen3_vl_moe_text", {"mlp_only_layers": [0, 3], "decoder_sparse_step": 2, "num_hidden_layers": 6,
                           "tie_word_embeddings": False}, None),
    ("minimax_m2", {}, None),
    ("minimax_m2", {"num_key_value_heads": 4, "head_dim": 64, "num_hidden_layers": 8, "tie_word_embeddings": True,
                    "num_local_experts": 32}, None),
    ("step3p5", {}, None),
    ("step3p5", {"num_hidden_layers": 6, "sliding_window": 512, "moe_num_experts": 64, "moe_top_k": 4,
                 "layer_types": ["full_attention"] + ["sliding_attention"] * 3 + ["full_attention"] * 2,
                 "attention_other_setting": {"num_attention_heads": 96}, "moe_layers_enum": "2,3,5"}, None),
    ("step3p5", {"num_hidden_layers": 4, "num_nextn_predict_layers": 2, "sliding_window": 128, "mlp_bias": True,
                 "layer_types": ["full_attention", "sliding_attention"] * 3,  # 4 layers + 2 MTP entries
                 "mlp_layer_types": ["dense", "sparse", "sparse", "dense"], "attention_bias": True}, None),
    ("step3p7", {}, None),  # the wrapper: vision_model + projector skipped
    ("nemotron_h", {"moe_latent_size": 512}, None),  # the class default pattern, with LatentMoE
    ("nemotron_h", {"moe_latent_size": 256, "mlp_bias": True, "n_groups": 4, "use_conv_bias": False},
     NEMOTRON3_BLOCKS),
]


@pytest.mark.parametrize("model_type,overrides,legacy_blocks", FAMILY_VARIANTS)
def test_params_equal_transformers(model_type, overrides, legacy_blocks):
    hf_config = transformers.AutoConfig.for_model(model_type, **overrides)
    cfg = {**hf_config.to_dict(), "model_type": model_type}
    if legacy_blocks is not None:  # as NVIDIA's Nemotron-3-Ultra file writes it
        cfg["layers_block_type"] = legacy_blocks
        cfg.pop("num_hidden_layers", None)
    ours = count_params(parse_config(cfg, transformers=False))
    assert ours.total_params > 0 and parse_config(cfg, transformers=False).basis == "native"
    if model_type in CLM or "text_config" in cfg:
        assert ours.total_params == transformers_param_count(cfg)
    else:  # qwen3_vl_text / qwen3_vl_moe_text / step3p5: the text model + lm_head
        assert ours.total_params == text_model_param_count(hf_config)


def test_qwen3_5_moe_needs_no_intermediate_size():
    # The released Qwen3.5 MoE files have no intermediate_size (Qwen3_5MoeTextConfig deletes it);
    # kvplan used to refuse them with "intermediate_size: required field(s) missing".
    cfg = preset_config("qwen3.5-397b-a17b")
    assert "intermediate_size" not in cfg["text_config"]
    spec = load_preset("qwen3.5-397b-a17b")
    # the MTP layer (mtp_num_hidden_layers 1) is built for MTP speculation only (tests/test_qwen35_mtp.py)
    assert spec.model_type == "qwen3_5_moe_text" and spec.skipped == ("visual (ViT + patch merger)",
                                                                      "1 multi-token-prediction layer (loaded only for speculative decoding)")
    assert spec.layer_kinds == {"linear_attention": 45, "full_attention": 15}
    # transformers 5.23 meta count of Qwen3_5MoeForCausalLM on the text_config
    assert count_params(spec).total_params == 396_346_350_336


REAL = {  # preset or fixture -> kvplan total = transformers 5.23 meta count (measured, see test below)
    "qwen3.5-27b": 26_895_998_464,
    "qwen3.5-397b-a17b": 396_346_350_336,
    "qwen3-vl-30b-a3b-instruct": 30_532_122_624,
    "qwen3-vl-8b-instruct": 8_190_735_360,
    "minimax-m2.7": 228_689_748_992,
    "nemotron-3-nano-30b-a3b": 31_577_937_344,
}
FIXTURE_PARAMS = {
    "qwen3.6-27b-nvfp4": 26_895_998_464,  # the Qwen3.5-27B shape
    "qwen3.6-35b-a3b-nvfp4": 34_660_610_688,
    "nemotron-3-super-120b-a12b-fp8": 120_668_687_360,
    "nemotron-3-ultra-550b-a55b-bf16": 549_308_968_960,
    "step-3.7-flash": 195_844_496_640,  # flat step3p7 file: Step3p7TextModel + lm_head
}


@pytest.mark.parametrize("name", sorted(REAL))
def test_presets_exact_numbers(name):
    assert count_params(load_preset(name)).total_params == REAL[name]


@pytest.mark.parametrize("name", sorted(FIXTURE_PARAMS))
def test_fixtures_parse_to_exact_numbers(name):
    cfg = fixture(name)
    try:
        spec = parse_config(cfg)
    except ConfigError as exc:
        # The Qwen3.6 NVFP4 files' ModelOpt MIXED_PRECISION (per-layer FP8 / NVFP4) is not a weight
        # format kvplan has; the refusal names the field. The architecture itself plans exactly:
        assert name.startswith("qwen3.6") and exc.field == "text_config.quantization_config"
        assert cfg["quantization_config"]["quant_algo"] == "MIXED_PRECISION"
        cfg.pop("quantization_config", None), cfg["text_config"].pop("quantization_config", None)
        spec = parse_config(cfg)
    assert spec.basis == "native"
    assert count_params(spec).total_params == FIXTURE_PARAMS[name]


@pytest.mark.parametrize("name", ["nemotron-3-super-120b-a12b-fp8", "nemotron-3-ultra-550b-a55b-bf16"])
def test_nemotron3_fixtures_equal_transformers(name):
    cfg = fixture(name)
    assert count_params(parse_config(cfg)).total_params == transformers_param_count(cfg)


def test_nemotron3_ultra_layers_block_type_and_latent_moe():
    spec = parse_config(fixture("nemotron-3-ultra-550b-a55b-bf16"))
    # 108 legacy-named blocks: 48 mamba, 48 moe, 12 attention (no hybrid_override_pattern)
    assert spec.layer_kinds == {"mamba": 48, "none": 48, "full_attention": 12}
    moe = next(layer for layer in spec.layers if layer.experts is not None)
    # LatentMoE: experts run 2048 <-> 5120; the latent projections sit around them on h = 8192
    assert [(c.in_features, c.out_features) for c in moe.experts.linears] == [(2048, 5120), (5120, 2048)]
    assert [(c.name, c.in_features, c.out_features) for c in moe.other] == [
        ("fc1_latent_proj", 8192, 2048), ("fc2_latent_proj", 2048, 8192)]


def test_nemotron_h_layers_block_type_wins_over_the_pattern():
    # NemotronHConfig: hybrid_override_pattern is used only when layers_block_type is absent.
    fields = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=128,
                  mamba_num_heads=4, mamba_head_dim=16, n_groups=1, ssm_state_size=8, intermediate_size=96,
                  n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                  moe_shared_expert_intermediate_size=32)
    blocks = ["mamba", "attention", "moe"]
    cfg = {**fields, "model_type": "nemotron_h", "hybrid_override_pattern": "M-M-", "layers_block_type": blocks}
    spec = parse_config(cfg)
    assert spec.layer_kinds == {"mamba": 1, "full_attention": 1, "none": 1}
    hf = transformers.AutoConfig.for_model("nemotron_h", **fields, layers_block_type=blocks,
                                           hybrid_override_pattern="M-M-")
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(hf)
    assert count_params(spec).total_params == sum(p.numel() for p in model.parameters())


def test_nemotron_h_never_reads_time_step_limit():
    cfg = fixture("nemotron-3-super-120b-a12b-fp8")
    assert cfg["time_step_limit"] == [0.0, float("inf")]
    base = count_params(parse_config(cfg)).total_params
    for hostile in ("not a size", [1, 2, 3], None, {"a": 1}):
        cfg["time_step_limit"] = hostile
        assert count_params(parse_config(cfg)).total_params == base == 120_668_687_360


# ------------------------------------------------------------------------------------ bad input


def test_minimax_m2_refuses_lightning_attention_layers():
    cfg = preset_config("minimax-m2.7")
    cfg["attn_type_list"][5] = 0
    with pytest.raises(ConfigError) as exc:
        parse_config(cfg)
    assert exc.value.field == "attn_type_list" and "lightning" in exc.value.message


def test_nemotron_h_refuses_unknown_block_names():
    cfg = fixture("nemotron-3-ultra-550b-a55b-bf16")
    cfg["layers_block_type"][3] = "lightning"
    with pytest.raises(ConfigError) as exc:
        parse_config(cfg)
    assert exc.value.field == "layers_block_type"


def test_qwen3_5_refuses_an_unknown_ssm_dtype():
    cfg = preset_config("qwen3.5-27b")
    cfg["text_config"]["mamba_ssm_dtype"] = "float64"
    with pytest.raises(ConfigError) as exc:
        parse_config(cfg)
    assert exc.value.field == "text_config.mamba_ssm_dtype"


def test_step3p7_flat_file_plans_as_its_text_decoder():
    cfg = fixture("step-3.7-flash")
    spec = parse_config(cfg, transformers=False)
    assert spec.basis == "native" and spec.model_type == "step3p7"
    assert spec.layer_kinds == {"full_attention": 12, "sliding_attention": 33}
    # num_experts / first_k_dense_replace read by those names (transformers ignores them; its
    # defaults, 288 experts and MoE from layer 3, are the same values)
    assert sum(layer.experts is not None for layer in spec.layers) == 42
    assert {layer.experts.num_experts for layer in spec.layers if layer.experts} == {288}
    hf_config = transformers.AutoConfig.for_model("step3p5", **{k: v for k, v in cfg.items() if k != "model_type"})
    assert count_params(spec).total_params == text_model_param_count(hf_config) == 195_844_496_640
    # vLLM: 12 full layers x 8 KV heads x 256 x 2 B per token; 33 sliding layers (window 512) hold at
    # most 512 tokens each: at 10,000 tokens, 12 x 10,000 + 33 x 512 token-layers of 4,096 B.
    assert kv_bytes_per_token(spec) == 45 * 8 * 256 * 2
    assert kv_cache_bytes(spec, [10_000]).kv_bytes == (12 * 10_000 + 33 * 512) * 8 * 256 * 2
    # transformers keeps window - 1 = 511 tokens on the sliding layers
    assert kv_cache_bytes(spec, [10_000], convention="transformers").kv_bytes == (12 * 10_000 + 33 * 511) * 4096


def test_step3p5_refuses_sliding_kv_heads_vllm_and_transformers_disagree_on():
    cfg = {**fixture("step-3.7-flash"), "attention_other_setting": {"num_attention_heads": 96,
                                                                    "num_attention_groups": 4}}
    with pytest.raises(ConfigError) as exc:
        parse_config(cfg)
    assert exc.value.field == "attention_other_setting.num_attention_groups"


# ------------------------------------------------------------------------------------ transformers cache

SMALL = dict(vocab_size=128, hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
             head_dim=16, max_position_embeddings=256)
LINEAR = dict(linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=16,
              linear_conv_kernel_dim=4)
CACHE_CASES = {
    "qwen3_5-dense": ("qwen3_5_text", {**SMALL, **LINEAR, "intermediate_size": 128}, None),
    "qwen3_5-moe": ("qwen3_5_moe_text", {**SMALL, **LINEAR, "num_experts": 4, "num_experts_per_tok": 2,
                                         "moe_intermediate_size": 32, "shared_expert_intermediate_size": 32}, None),
    "qwen3_vl-dense": ("qwen3_vl_text", {**SMALL, "intermediate_size": 128}, None),
    "qwen3_vl-moe": ("qwen3_vl_moe_text", {**SMALL, "intermediate_size": 128, "num_experts": 4,
                                           "num_experts_per_tok": 2, "moe_intermediate_size": 32}, None),
    "minimax_m2": ("minimax_m2", {**SMALL, "intermediate_size": 32, "num_local_experts": 4,
                                  "num_experts_per_tok": 2}, None),
    "step3p5-sliding": ("step3p5", {**SMALL, "intermediate_size": 128, "sliding_window": 8,
                                    "layer_types": ["full_attention", "sliding_attention", "sliding_attention",
                                                    "full_attention"], "num_sliding_attention_heads": 8,
                                    "mlp_layer_types": ["dense", "sparse", "sparse", "dense"],
                                    "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                                    "share_expert_dim": 32}, None),
    "nemotron3-latent": ("nemotron_h", dict(vocab_size=128, hidden_size=64, num_attention_heads=4,
                                            num_key_value_heads=2, head_dim=16, intermediate_size=128,
                                            mamba_num_heads=4, mamba_head_dim=16, n_groups=2, ssm_state_size=8,
                                            conv_kernel=4, n_routed_experts=4, num_experts_per_tok=2,
                                            moe_intermediate_size=32, moe_shared_expert_intermediate_size=32,
                                            moe_latent_size=16, mamba_ssm_cache_dtype="float32"),
                         ["mamba", "moe", "attention", "mamba", "moe"]),
}


@pytest.mark.parametrize("case", sorted(CACHE_CASES))
def test_dynamic_cache_bytes_equal_transformers_convention(case):
    model_type, fields, blocks = CACHE_CASES[case]
    if blocks is not None:
        fields = {**fields, "layers_block_type": blocks}
    hf_config = transformers.AutoConfig.for_model(model_type, **fields)
    config = {**hf_config.to_dict(), "model_type": model_type, "torch_dtype": "float32"}
    if blocks is not None:
        config["layers_block_type"] = blocks  # the legacy names, as kvplan reads them from a file
    spec = parse_config(config, transformers=False)
    torch.manual_seed(0)
    if model_type == "step3p5":  # no Auto class: the text model Step3p7ForConditionalGeneration wraps
        from transformers.models.step3p7.modeling_step3p7 import Step3p7TextModel
        model = Step3p7TextModel(hf_config).eval()
    else:
        cls = transformers.AutoModelForCausalLM if model_type in CLM else transformers.AutoModel
        model = cls.from_config(hf_config).eval()
    batch, prompt = 2, 13
    measured = prefill_and_decode(model, torch.randint(0, 128, (batch, prompt)))
    planned = [kv_cache_bytes(spec, [t] * batch, "fp32", "transformers").kv_bytes for t in (13, 14, 15)]
    assert measured == planned
    if any(layer.cache.kind in ("mamba", "linear_attention") for layer in spec.layers):
        assert measured[0] > sum(layer.cache.elems_per_token() for layer in spec.layers) * 13 * 2 * 4  # states held


def test_qwen3_5_tiny_cache_by_hand():
    # The qwen3_5-dense case above, by hand (fp32, batch 2): 3 linear layers + 1 full layer.
    # transformers LinearAttentionLayer: conv [B, conv_dim, kernel] with conv_dim = 2 x 2 x 16 + 4 x 16
    # = 128, recurrent [B, 4, 16, 16] fp32 -> per sequence 128 x 4 x 4 + 4 x 16 x 16 x 4 = 6144 B.
    # Full layer after 13 tokens: 13 x 2 heads x (16 + 16) x 4 B = 3328 B per sequence.
    _, fields, _ = CACHE_CASES["qwen3_5-dense"]
    spec = parse_config({**fields, "model_type": "qwen3_5_text", "torch_dtype": "float32"})
    tf = kv_cache_bytes(spec, [13, 13], "fp32", "transformers")
    assert tf.by_kind == {"linear_attention": 2 * 3 * 6144, "full_attention": 2 * 3328}
    # vllm: conv keeps kernel - 1 = 3 columns, state in the model dtype here (no mamba_ssm_dtype):
    # 128 x 3 x 4 + 4 x 16 x 16 x 4 = 5632 B per sequence per layer.
    assert kv_cache_bytes(spec, [13, 13], "fp32", "vllm").by_kind["linear_attention"] == 2 * 3 * 5632


# ------------------------------------------------------------------------------------ vLLM convention


def test_qwen3_5_27b_vllm_state_and_kv():
    spec = load_preset("qwen3.5-27b")
    assert spec.layer_kinds == {"linear_attention": 48, "full_attention": 16}
    # Full attention: 16 layers x 4 KV heads x (256 + 256) x 2 B (bf16) = 65,536 B per token.
    assert kv_bytes_per_token(spec, "auto") == 16 * 4 * 512 * 2 == 65_536
    # Gated DeltaNet page (gated_delta_net_state_shape): conv_dim = 2 x 16 x 128 + 48 x 128 = 10,240;
    # conv (3, 10240) bf16 = 61,440 B; temporal (48, 128, 128) in float32 (text_config.mamba_ssm_dtype,
    # Qwen3_5ForConditionalGenerationConfig) = 3,145,728 B; page 3,207,168 B; 48 layers.
    assert state_bytes_per_sequence(spec, "vllm") == 48 * (10_240 * 3 * 2 + 48 * 128 * 128 * 4) == 153_944_064
    # TP=2 halves conv_dim and the value heads: 48 x (5,120 x 3 x 2 + 24 x 128 x 128 x 4) = 76,972,032.
    assert state_bytes_per_sequence(spec, "vllm", tp=2) == 76_972_032
    # transformers: conv keeps the whole kernel (4 columns) in the model dtype, state fp32.
    assert state_bytes_per_sequence(spec, "transformers") == 48 * (10_240 * 4 * 2 + 48 * 128 * 128 * 4)
    # 1000 tokens, one sequence: KV grows, the state does not.
    assert kv_cache_bytes(spec, [1000]).kv_bytes == 1000 * 65_536 + 153_944_064


def test_qwen3_5_27b_vllm_hybrid_page_layout():
    from kvplan.plan import kv_groups
    from kvplan.spec import distinct_layers

    spec = load_preset("qwen3.5-27b")
    groups, bytes_per_block, block = kv_groups(distinct_layers(spec.layers), 16, 1, 2, 2, 32768, 2048)
    # One attention token per layer: 4 x 512 x 2 = 4,096 B; the block grows until one attention page
    # holds a state page: 16 x cdiv(3,207,168, 16 x 4,096) = 16 x 49 = 784 tokens.
    assert block == 784
    # 48 linear + 16 full layers: group size 16 (48 >= 1.5 x 16), 3 linear groups + 1 full group,
    # state pages padded to the 784 x 4,096 = 3,211,264 B attention page.
    assert sorted((g.kind, g.layers) for g in groups) == [("full_attention", 16)] + [("linear_attention", 16)] * 3
    assert bytes_per_block == 16 * 784 * 4096 == 51_380_224


def test_qwen3_5_397b_vllm_state():
    spec = load_preset("qwen3.5-397b-a17b")
    # 15 full layers x 2 KV heads x 512 x 2 B = 30,720 B per token.
    assert kv_bytes_per_token(spec) == 15 * 2 * 512 * 2 == 30_720
    # conv_dim = 2 x 16 x 128 + 64 x 128 = 12,288: 12,288 x 3 x 2 B = 73,728; temporal 64 x 128 x 128 x 4 B
    # (float32) = 4,194,304; 45 layers -> 192,061,440 B per sequence.
    assert state_bytes_per_sequence(spec) == 45 * (12_288 * 3 * 2 + 64 * 128 * 128 * 4) == 192_061_440


def test_nemotron3_nano_vllm_state():
    spec = load_preset("nemotron-3-nano-30b-a3b")
    assert spec.layer_kinds == {"mamba": 23, "none": 23, "full_attention": 6}
    # 6 '*' blocks x 2 KV heads x (128 + 128) x 2 B = 6,144 B per token.
    assert kv_bytes_per_token(spec) == 6 * 2 * 256 * 2 == 6_144
    # mamba2_state_shape: conv_dim = 64 x 64 + 2 x 8 x 128 = 6,144 -> (3, 6144) bf16 = 36,864 B;
    # temporal (64, 64, 128) in float32 (mamba_ssm_cache_dtype, NemotronHForCausalLMConfig) = 2,097,152 B.
    assert state_bytes_per_sequence(spec) == 23 * (6_144 * 3 * 2 + 64 * 64 * 128 * 4) == 49_082_368
    # TP=4: n_groups 8 divides by 4, so no extra groups: 23 x (1,536 x 3 x 2 + 16 x 64 x 128 x 4).
    assert state_bytes_per_sequence(spec, tp=4) == 23 * (1_536 * 3 * 2 + 16 * 64 * 128 * 4)


def test_nemotron3_super_vllm_state():
    spec = parse_config(fixture("nemotron-3-super-120b-a12b-fp8"))
    assert spec.layer_kinds == {"mamba": 40, "none": 40, "full_attention": 8}
    # conv_dim = 128 x 64 + 2 x 8 x 128 = 10,240 -> 10,240 x 3 x 2 = 61,440; temporal 128 x 64 x 128 x 4
    # = 4,194,304; 40 blocks.
    assert state_bytes_per_sequence(spec) == 40 * (10_240 * 3 * 2 + 128 * 64 * 128 * 4) == 170_229_760
    assert kv_bytes_per_token(spec) == 8 * 2 * 256 * 2


def test_minimax_m2_and_qwen3_vl_vllm_kv():
    # MiniMax-M2.7: 62 full-attention layers x 8 KV heads x (128 + 128) x 2 B; no state.
    m2 = load_preset("minimax-m2.7")
    assert kv_bytes_per_token(m2) == 62 * 8 * 256 * 2 == 253_952 and state_bytes_per_sequence(m2) == 0
    # TP=16 > 8 KV heads: each rank keeps one whole head: 62 x 1 x 256 x 2.
    assert kv_bytes_per_token(m2, tp=16) == 62 * 256 * 2
    # Qwen3-VL-30B-A3B: 48 layers x 4 KV heads x 256 x 2 B.
    assert kv_bytes_per_token(load_preset("qwen3-vl-30b-a3b-instruct")) == 48 * 4 * 256 * 2 == 98_304
    # Qwen3-VL-8B: 36 layers x 8 KV heads x 256 x 2 B.
    assert kv_bytes_per_token(load_preset("qwen3-vl-8b-instruct")) == 36 * 8 * 256 * 2 == 147_456


# ------------------------------------------------------------------------------------ wrappers


def test_wrapper_types_map_to_their_text_decoders():
    for name, inner, skipped in [("qwen3.5-27b", "qwen3_5_text", ("visual (ViT + patch merger)",
                                                                  "1 multi-token-prediction layer (loaded only for speculative decoding)")),
                                 ("qwen3-vl-8b-instruct", "qwen3_vl_text",
                                  ("visual (ViT + patch merger + deepstack mergers)",))]:
        spec = load_preset(name)
        assert spec.model_type == inner and spec.skipped == skipped
    # A flat file that carries the wrapper's own model_type plans as its text decoder.
    flat = {**preset_config("qwen3.5-27b")["text_config"], "model_type": "qwen3_5"}
    assert count_params(parse_config(flat)).total_params == REAL["qwen3.5-27b"]
    flat_tf = transformers_param_count({**flat, "model_type": "qwen3_5_text"})
    assert flat_tf == REAL["qwen3.5-27b"]


# ------------------------------------------------------------------------------------ validate


VALIDATE = {
    "qwen3_5-dense": dict(model_type="qwen3_5_text", **SMALL, **LINEAR, intermediate_size=128,
                          mamba_ssm_dtype="float32"),
    "minimax_m2": dict(model_type="minimax_m2", **SMALL, intermediate_size=32, num_local_experts=4,
                       num_experts_per_tok=2),
    "step3p5": dict(model_type="step3p5", **SMALL, intermediate_size=128, sliding_window=8,
                    layer_types=["full_attention", "sliding_attention", "sliding_attention", "full_attention"],
                    attention_other_setting={"num_attention_heads": 8}, moe_layers_enum="1,2", moe_num_experts=4,
                    moe_top_k=2, moe_intermediate_size=32, share_expert_dim=32),
    "nemotron3-latent": dict(model_type="nemotron_h", hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                             head_dim=16, vocab_size=128, mamba_num_heads=4, mamba_head_dim=16, n_groups=1,
                             ssm_state_size=8, conv_kernel=4, n_routed_experts=4, num_experts_per_tok=2,
                             moe_intermediate_size=32, moe_shared_expert_intermediate_size=32, moe_latent_size=16,
                             mamba_ssm_cache_dtype="float32", layers_block_type=["mamba", "moe", "attention", "moe"]),
}


@pytest.mark.parametrize("name", sorted(VALIDATE))
def test_reference_decoder_runs_new_layers_exactly(name):
    # Whole-projection q/k norms (MiniMax-M2), LatentMoE (Nemotron-3), fp32 SSM state in a bf16 run,
    # per-head output gates and more query heads on sliding layers (Step-3.5).
    from kvplan.validate.measure import run_validation

    spec = parse_config(VALIDATE[name], name=name)
    r = run_validation(spec, tokens=6, steps=2, batch=2, block_size=4, dtype="bf16", check=False)
    assert r["exact"] == {"weights": True, "kv_static": True, "kv_paged": True, "paging": True}
    assert r["measured"]["weight_bytes"] == r["predicted"]["weight_bytes"]
