"""The ten presets added with the 2026 models (branch presets26): their provenance, their published sizes and
hand-derived cache bytes.

Every file is a verbatim copy of ai-dynamo/aiconfigurator's
aic-core/src/aiconfigurator_core/model_configs/<repo>_config.json at commit 095f58a51c4c (the MANIFEST entry names
each). Transformers' meta-device parameter count of each is checked by tests/test_oracle_transformers.py (it runs
over every preset); the totals pinned here are the numbers that oracle gives. Active parameters are kvplan's
definition: total - (E - k) x params per routed expert, per MoE layer, worked out in the comments.
"""

import json
from pathlib import Path

import pytest

from kvplan import count_params, kv_bytes_per_token, load_preset, preset_config
from kvplan.kv import state_bytes_per_sequence
from kvplan.presets import PRESET_DIR, manifest
from kvplan.weights import weight_bytes

FIXTURES = Path(__file__).parent / "fixtures" / "configs"
NEW = ("glm-5.1", "glm-5.2", "glm-5.2-fp8", "kimi-k2.6-nvfp4", "minimax-m2.5", "nemotron-3-ultra-550b-a55b",
       "qwen3.5-35b-a3b", "qwen3.5-122b-a10b", "qwen3.6-27b-nvfp4", "qwen3.6-35b-a3b-nvfp4")
AIC = "github:ai-dynamo/aiconfigurator:aic-core/src/aiconfigurator_core/model_configs/"
AIC_COMMIT = "@095f58a51c4ca8e61b66ec108d86f223f8d559ce"


def entry(name: str) -> dict:
    return next(e for e in manifest() if e["name"] == name)


def check_manifest_entry(name: str, commit: str) -> None:
    """A copied preset's manifest entry: every field, and its source aiconfigurator's copy at ``commit``."""
    e = entry(name)
    assert set(e) == {"name", "file", "hf_repo", "family", "released", "source", "provenance", "notes"}
    assert e["file"] == f"{name}.json" and e["provenance"] == "copied"
    # the source file is named after the HF repo, as aiconfigurator names its copies
    assert e["source"] == AIC + e["hf_repo"].replace("/", "--") + "_config.json@" + commit
    assert e["released"].startswith("2026-")


@pytest.mark.parametrize("name", NEW)
def test_manifest_entry_pins_its_source(name):
    check_manifest_entry(name, AIC_COMMIT[1:])


# The presets that are test fixtures too: the same bytes.
SAME_AS_FIXTURE = {"glm-5.2": "glm-5.2", "nemotron-3-ultra-550b-a55b": "nemotron-3-ultra-550b-a55b-bf16",
                   "qwen3.6-27b-nvfp4": "qwen3.6-27b-nvfp4", "qwen3.6-35b-a3b-nvfp4": "qwen3.6-35b-a3b-nvfp4"}


@pytest.mark.parametrize("name", sorted(SAME_AS_FIXTURE))
def test_preset_file_is_the_fixture_file(name):
    assert (PRESET_DIR / f"{name}.json").read_bytes() == (FIXTURES / f"{SAME_AS_FIXTURE[name]}.json").read_bytes()


def test_glm_5_1_is_glm_5_but_for_transformers_version():
    a, b = preset_config("glm-5"), preset_config("glm-5.1")
    assert {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)} == {"transformers_version"}
    assert count_params(load_preset("glm-5.1")) == count_params(load_preset("glm-5"))


# name -> (total = transformers 5.23 meta count, active, published "total / active" in billions, as the model names
# or cards give them)
SIZES = {
    # GLM-5.x: 78 layers, first 3 dense, 256 experts top-8 of 3 x 6144 x 2048 = 37,748,736:
    # (256 - 8) x 37,748,736 x 75 = 702,126,489,600 off the total. Published: 744B / 40B.
    "glm-5.1": (743_911_199_232, 743_911_199_232 - 702_126_489_600, (744, 40)),
    "glm-5.2": (743_377_000_704, 743_377_000_704 - 702_126_489_600, (744, 40)),
    "glm-5.2-fp8": (743_377_000_704, 743_377_000_704 - 702_126_489_600, (744, 40)),
    # MiniMax-M2.5: 62 MoE layers, 256 experts top-8 of 3 x 3072 x 1536 = 14,155,776:
    # 248 x 14,155,776 x 62 = 217,659,211,776. Published: 230B / 10B.
    "minimax-m2.5": (228_689_748_992, 228_689_748_992 - 217_659_211_776, (230, 10)),
    # Kimi-K2.6: 61 layers, first dense, 384 experts top-8 of 3 x 7168 x 2048 = 44,040,192:
    # 376 x 44,040,192 x 60 = 993,546,731,520. Published: 1T / 32B.
    "kimi-k2.6-nvfp4": (1_026_408_209_408, 1_026_408_209_408 - 993_546_731_520, (1000, 32)),
    # Nemotron-3 Ultra: 48 LatentMoE blocks, 512 experts top-22 of 2 x 2048 x 5120 (relu2: up, down) = 20,971,520:
    # 490 x 20,971,520 x 48 = 493,250,150,400. Published (the name): 550B / A55B.
    "nemotron-3-ultra-550b-a55b": (549_308_968_960, 549_308_968_960 - 493_250_150_400, (550, 55)),
    # Qwen3.5 / 3.6 35B-A3B: 40 MoE layers, 256 experts top-8 of 3 x 2048 x 512 = 3,145,728:
    # 248 x 3,145,728 x 40 = 31,205,621,760. Published: 35B / 3B.
    "qwen3.5-35b-a3b": (34_660_610_688, 34_660_610_688 - 31_205_621_760, (35, 3)),
    "qwen3.6-35b-a3b-nvfp4": (34_660_610_688, 34_660_610_688 - 31_205_621_760, (35, 3)),
    # Qwen3.5-122B-A10B: 48 MoE layers, 256 experts top-8 of 3 x 3072 x 1024 = 9,437,184:
    # 248 x 9,437,184 x 48 = 112,340,238,336. Published: 122B / 10B.
    "qwen3.5-122b-a10b": (122_111_526_912, 122_111_526_912 - 112_340_238_336, (122, 10)),
    # dense: the Qwen3.5-27B shape (the qwen3.5-27b preset's count). Published: 27B.
    "qwen3.6-27b-nvfp4": (26_895_998_464, 26_895_998_464, (27, 27)),
}


def check_sizes(name: str, total: int, active: int, published: tuple[int, int]) -> None:
    """kvplan's total and active parameters are ``total`` / ``active``, near the published round figures."""
    pub_total, pub_active = published
    got = count_params(load_preset(name))
    assert (got.total_params, got.active_params) == (total, active)
    # the published round figures (names and cards round, and may leave the embeddings / lm_head out of the active
    # count: GLM-5.x's 2 x 154,880 x 6,144 = 1.9B of them): within 3 % of the total and 20 % of the active
    assert abs(total / 1e9 - pub_total) <= 0.03 * pub_total and abs(active / 1e9 - pub_active) <= 0.2 * pub_active


@pytest.mark.parametrize("name", sorted(SIZES))
def test_total_and_active_params(name):
    check_sizes(name, *SIZES[name])


def test_qwen3_6_27b_has_the_qwen3_5_27b_shape():
    assert count_params(load_preset("qwen3.6-27b-nvfp4")).total_params == count_params(
        load_preset("qwen3.5-27b")).total_params


# name -> (vLLM KV bytes a token at the checkpoint dtype (bf16 cache), transformers' convention, recurrent state
# bytes a sequence (vLLM))
CACHE = {
    # MLA + DSA indexer on all 78 layers: 576 x 2 (latent) + 128 + 128 / 128 x 4 (fp8 key + fp32 scale) = 1,284;
    # transformers keeps the indexer key in bf16: (576 + 128) x 2 = 1,408 a layer.
    "glm-5.1": (78 * 1284, 78 * 1408, 0),
    # 21 layers with their own indexer, 57 sharing one (latent only, 1,152 B)
    "glm-5.2": (21 * 1284 + 57 * 1152, 21 * 1408 + 57 * 1152, 0),
    "glm-5.2-fp8": (21 * 1284 + 57 * 1152, 21 * 1408 + 57 * 1152, 0),
    # 62 full-attention layers x 8 KV heads x (128 + 128) x 2 B
    "minimax-m2.5": (62 * 8 * 256 * 2, 62 * 8 * 256 * 2, 0),
    # MLA latent only: 61 x (512 + 64) x 2
    "kimi-k2.6-nvfp4": (61 * 576 * 2, 61 * 576 * 2, 0),
    # 12 attention blocks x 2 KV heads x (128 + 128) x 2 B; 48 Mamba-2 blocks: conv (256 x 64 + 2 x 8 x 128 = 18,432
    # channels) x (4 - 1) x 2 B = 110,592 + SSM 256 x 64 x 128 x 4 B (mamba_ssm_cache_dtype float32) = 8,388,608
    "nemotron-3-ultra-550b-a55b": (12 * 2 * 256 * 2, 12 * 2 * 256 * 2, 48 * (18_432 * 3 * 2 + 256 * 64 * 128 * 4)),
    # 10 full layers x 2 KV heads x (256 + 256) x 2 B; 30 gated-DeltaNet layers: conv (2 x 16 x 128 + 32 x 128 = 8,192)
    # x 3 x 2 B = 49,152 + recurrent 32 x 128 x 128 x 4 B (mamba_ssm_dtype float32) = 2,097,152
    "qwen3.5-35b-a3b": (10 * 2 * 512 * 2, 10 * 2 * 512 * 2, 30 * (8192 * 3 * 2 + 32 * 128 * 128 * 4)),
    "qwen3.6-35b-a3b-nvfp4": (10 * 2 * 512 * 2, 10 * 2 * 512 * 2, 30 * (8192 * 3 * 2 + 32 * 128 * 128 * 4)),
    # 12 full x 2 x 512 x 2; 36 DeltaNet: conv (2 x 16 x 128 + 64 x 128 = 12,288) x 3 x 2 + 64 x 128 x 128 x 4
    "qwen3.5-122b-a10b": (12 * 2 * 512 * 2, 12 * 2 * 512 * 2, 36 * (12_288 * 3 * 2 + 64 * 128 * 128 * 4)),
    # 16 full x 4 x 512 x 2; 48 DeltaNet: conv (2 x 16 x 128 + 48 x 128 = 10,240) x 3 x 2 + 48 x 128 x 128 x 4
    "qwen3.6-27b-nvfp4": (16 * 4 * 512 * 2, 16 * 4 * 512 * 2, 48 * (10_240 * 3 * 2 + 48 * 128 * 128 * 4)),
}


def check_cache(name: str, vllm: int, hf: int, state: int) -> None:
    """KV bytes a token (vLLM's and transformers' conventions) and recurrent state bytes a sequence."""
    spec = load_preset(name)
    assert kv_bytes_per_token(spec) == vllm and kv_bytes_per_token(spec, convention="transformers") == hf
    assert state_bytes_per_sequence(spec) == state


@pytest.mark.parametrize("name", sorted(CACHE))
def test_cache_bytes_by_hand(name):
    check_cache(name, *CACHE[name])


def test_worked_cache_numbers():
    assert CACHE["glm-5.2"][0] == 92_628 and CACHE["nemotron-3-ultra-550b-a55b"][2] == 407_961_600
    assert CACHE["qwen3.5-35b-a3b"][2] == 64_389_120 and CACHE["qwen3.5-122b-a10b"][2] == 153_649_152


def test_kimi_k2_6_nvfp4_weight_bytes_by_hand():
    spec = load_preset("kimi-k2.6-nvfp4")
    cfg = preset_config("kimi-k2.6-nvfp4")["quantization_config"]
    assert cfg["quant_algo"] == "NVFP4" and "language_model.lm_head" in cfg["ignore"]
    # Routed experts NVFP4: 60 layers x 384 x 3 matrices of 2048 x 7168 = 14,680,064 elements, each 0.5 B + one fp8
    # scale per 16 + two fp32 globals = 7,340,032 + 917,504 + 8 = 8,257,544 B -> 69,120 x 8,257,544 = 570,761,441,280.
    # Everything else (layer 0, every self_attn and shared expert, embeddings, lm_head: the ignore list) in bf16:
    # (1,026,408,209,408 - 60 x 384 x 3 x 14,680,064 = 11,722,185,728) x 2 = 23,444,371,456.
    experts = 60 * 384 * 3 * (14_680_064 // 2 + 14_680_064 // 16 + 8)
    rest = (1_026_408_209_408 - 60 * 384 * 3 * 14_680_064) * 2
    assert experts == 570_761_441_280 and rest == 23_444_371_456
    assert weight_bytes(spec).total_bytes == experts + rest == 594_205_812_736


def test_glm_5_2_fp8_is_the_config_the_logged_runs_were_planned_with():
    # tests/test_engine_logs_found.py and tests/test_engine_sglang_2026b.py plan zai-org/GLM-5.2-FP8 runs as the
    # glm-5.2 file plus {fp8, e4m3, [128, 128], dynamic}; the published file (that block plus 541
    # modules_to_not_convert, all of them norms, routers, embeddings / lm_head or modules kvplan keeps 16-bit anyway)
    # gives the same bytes: 745,584,430,656 in all, 88.18 GiB a rank at TP 8.
    from kvplan.parallel import Layout, rank_weight_bytes

    real = preset_config("glm-5.2-fp8")
    qc = real.pop("quantization_config")
    assert real == preset_config("glm-5.2") and len(qc["modules_to_not_convert"]) == 541
    made = {**preset_config("glm-5.2"), "quantization_config": {k: qc[k] for k in (
        "quant_method", "activation_scheme", "fmt", "weight_block_size")}}
    from kvplan import parse_config

    for spec in (load_preset("glm-5.2-fp8"), parse_config(made)):
        assert spec.quantization == "fp8-block" and weight_bytes(spec).total_bytes == 745_584_430_656
        assert f"{rank_weight_bytes(spec, Layout(8, 1, 1, False), 0, None) / 2**30:.2f}" == "88.18"


def test_minimax_m2_5_is_m2_7_without_attn_type_list():
    a, b = preset_config("minimax-m2.5"), preset_config("minimax-m2.7")
    assert {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)} == {"attn_type_list", "dtype",
                                                                         "max_position_embeddings"}
    assert set(b["attn_type_list"]) == {1}  # M2.7 lists every layer as full attention: M2.5's default
    assert weight_bytes(load_preset("minimax-m2.5")) == weight_bytes(load_preset("minimax-m2.7"))


def test_bf16_presets_weigh_two_bytes_a_parameter():
    for name in ("glm-5.1", "glm-5.2", "nemotron-3-ultra-550b-a55b", "qwen3.5-35b-a3b", "qwen3.5-122b-a10b"):
        spec = load_preset(name)
        assert spec.quantization is None
        assert weight_bytes(spec).total_bytes == 2 * SIZES[name][0]


def test_qwen3_6_nvfp4_mixed_precision_is_read_per_module():
    # ModelOpt MIXED_PRECISION: W4A16_NVFP4 experts / MLP / lm_head (the headline), FP8 attention and DeltaNet projections
    for name in ("qwen3.6-27b-nvfp4", "qwen3.6-35b-a3b-nvfp4"):
        cfg = preset_config(name)
        assert cfg["quantization_config"]["quant_algo"] == "MIXED_PRECISION"
        assert cfg["quantization_config"]["quantized_layers"]["lm_head"] == {"quant_algo": "W4A16_NVFP4", "group_size": 16}
        spec = load_preset(name)
        assert spec.quantization == "nvfp4-wo"
        assert ("attention", "fp8-static") in {(o.category, o.format) for o in spec.quantization_overrides}
    # well under the 2 B a parameter of bf16 (69.3 GB for 34.66B parameters): NVFP4 experts are ~0.56 B a parameter
    assert weight_bytes(load_preset("qwen3.6-35b-a3b-nvfp4")).total_bytes == 20_825_033_460


def test_preset_json_loads_as_published():
    # Nemotron's file carries a float 1e308 (not Infinity); every new file is standard JSON
    for name in NEW:
        json.loads((PRESET_DIR / f"{name}.json").read_text(), parse_constant=lambda c: pytest.fail(f"{name}: {c}"))


# ------------------------------------------------------------------------ Kimi-K3: not a preset, refused by name

def _kimi_k3() -> dict:
    return json.loads((FIXTURES / "kimi-k3.json").read_text())


@pytest.mark.parametrize("field,plain", [("routed_expert_hidden_size", 7168), ("latent_moe_use_norm", False),
                                         ("mla_use_output_gate", False), ("linear_attn_config.use_full_rank_gate",
                                                                          False)])
def test_kimi_k3_parts_kvplan_does_not_model_are_refused_one_by_one(field, plain):
    from kvplan import parse_config
    from kvplan.errors import ConfigError

    cfg = _kimi_k3()
    tc = cfg["text_config"]
    # turn off every other Kimi-K3 part, leave this one as published
    order = ["routed_expert_hidden_size", "latent_moe_use_norm", "mla_use_output_gate",
             "linear_attn_config.use_full_rank_gate"]
    plain_values = {"routed_expert_hidden_size": tc["hidden_size"]}
    for other in order:
        if other != field:
            holder, key = (tc["linear_attn_config"], "use_full_rank_gate") if "." in other else (tc, other)
            holder[key] = plain_values.get(other, False)
    with pytest.raises(ConfigError) as exc:
        parse_config(cfg)
    assert exc.value.field == f"text_config.{field}" and "Kimi-K3" in exc.value.message
    assert f"Allowed: absent, or {plain!r}" in exc.value.message


def test_kimi_k3_with_every_part_plain_is_kimi_linear():
    from kvplan import parse_config

    cfg = _kimi_k3()
    tc = cfg["text_config"]
    tc.update(routed_expert_hidden_size=7168, latent_moe_use_norm=False, mla_use_output_gate=False)
    tc["linear_attn_config"]["use_full_rank_gate"] = False
    spec = parse_config(cfg)
    # 1-indexed full_attn_layers: 24 MLA layers, 69 KDA
    assert spec.model_type == "kimi_linear" and spec.layer_kinds == {"linear_attention": 69, "mla": 24}
    # MLA latent 24 x (512 + 64) x 2 B a token; KDA state 69 x (3 x 96 x 128 channels x 3 + 96 x 128 x 128) x 2 B
    assert kv_bytes_per_token(spec) == 24 * 576 * 2 == 27_648
    assert state_bytes_per_sequence(spec) == 69 * (3 * 12_288 * 3 + 96 * 128 * 128) * 2
