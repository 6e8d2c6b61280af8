"""Gemma-4, Gemma-3n, MiMo-V2-Flash, Llama-4 Maverick, Mistral-3 / Ministral: native family modules, exact.

- parameters: equal to transformers 5.23 on the meta device for each config class's defaults and
  variations (``transformers_param_count``; wrappers are counted through their text model class,
  AutoModelForCausalLM of the text_config's model_type, because the vision / audio towers are skipped);
- ``transformers`` KV convention: equal to the bytes transformers' DynamicCache holds after prefill and
  each of 2 decode steps, on tiny configs whose windows (8) are shorter than the prompt (13);
- ``vllm`` convention: vLLM's KV groups hand-derived below from vLLM's source.
"""

import pytest

from kvplan import count_params, kv_cache_bytes, load_preset, parse_config, preset_config
from kvplan.errors import ConfigError, PlanInputError
from kvplan.parallel import stage_distinct
from kvplan.plan import kv_groups

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.test_oracle_cache import prefill_and_decode
from tests.test_oracle_transformers import transformers_param_count

torch.set_num_threads(1)
S, F = "sliding_attention", "full_attention"


def _params_equal(model_type: str, overrides: dict) -> int:
    cfg = transformers.AutoConfig.for_model(model_type, **overrides).to_dict()
    cfg["model_type"] = model_type
    ours = count_params(parse_config(cfg)).total_params
    assert ours == transformers_param_count(cfg)
    return ours


# ----------------------------------------------------------------------------- parameters


FAMILY_VARIANTS = [
    ("gemma4_text", {}),  # PLE on, 5:1 sliding, full layers head 512
    ("gemma4_text", {"num_kv_shared_layers": 10, "use_double_wide_mlp": True}),
    ("gemma4_text", {"attention_k_eq_v": True, "num_global_key_value_heads": 2, "hidden_size_per_layer_input": 0,
                     "enable_moe_block": True, "num_experts": 8, "top_k_experts": 2, "moe_intermediate_size": 64,
                     "num_hidden_layers": 12, "attention_bias": True}),
    # gemma4_unified_text: the same decoder with neither per-layer embeddings nor the MoE block.
    ("gemma4_unified_text", {}),
    ("gemma4_unified_text", {"num_kv_shared_layers": 10, "use_double_wide_mlp": True, "attention_k_eq_v": True,
                             "num_global_key_value_heads": 2}),
    ("gemma3n_text", {}),  # 35 layers, 15 of them KV-sharing, AltUp 4, Laurel 64, PLE 256
    ("gemma3n_text", {"num_kv_shared_layers": 0, "altup_num_inputs": 2, "laurel_rank": 32}),
    ("gemma3n_text", {"intermediate_size": [1024, 2048, 1024, 2048, 1024, 2048], "num_hidden_layers": 6,
                      "num_kv_shared_layers": 1, "attention_bias": True, "tie_word_embeddings": False}),
    ("mimo_v2_flash", {"num_hidden_layers": 8}),
    ("mimo_v2_flash", {"num_hidden_layers": 7, "n_routed_experts": 16, "attention_bias": True,
                       "tie_word_embeddings": True,
                       "mlp_layer_types": ["dense", "dense", "sparse", "sparse", "dense", "sparse", "sparse"]}),
    # MinistralConfig's default head_dim is None, which its own attention cannot use: give one.
    ("ministral", {"head_dim": 128}),
    ("ministral", {"head_dim": 64, "num_hidden_layers": 2, "layer_types": [S, F]}),
    ("ministral3", {}),
    ("ministral3", {"tie_word_embeddings": True, "num_hidden_layers": 26, "hidden_size": 3072,
                    "intermediate_size": 9216}),
    # Maverick's text-tower layout: MoE every 2nd layer, 128 experts (small hidden size to stay quick).
    ("llama4_text", {"interleave_moe_layer_step": 2, "num_local_experts": 128, "hidden_size": 512,
                     "intermediate_size": 256, "intermediate_size_mlp": 1024, "num_hidden_layers": 8}),
]


@pytest.mark.parametrize("model_type,overrides", FAMILY_VARIANTS)
def test_family_params_equal_transformers(model_type, overrides):
    _params_equal(model_type, overrides)


def test_family_specs_are_native():
    for name in ("gemma-4-26b-a4b", "gemma-4-31b-it-nvfp4", "mimo-v2-flash", "llama-4-maverick-17b-128e-instruct",
                 "mistral-small-3.1-24b-instruct-2503"):
        assert load_preset(name).basis == "native", name


def test_preset_param_totals():
    # Measured here and equal to transformers 5.23 (tests/test_oracle_transformers.py checks every preset);
    # the published sizes: Gemma-4 31B "30.7B", 26B-A4B "25.2B", Maverick "400B", MiMo-V2-Flash "309B".
    assert count_params(load_preset("gemma-4-31b-it-nvfp4")).total_params == 30_697_345_280
    assert count_params(load_preset("gemma-4-26b-a4b")).total_params == 25_233_141_760
    assert count_params(load_preset("llama-4-maverick-17b-128e-instruct")).total_params == 400_711_848_960
    assert count_params(load_preset("mimo-v2-flash")).total_params == 308_778_768_832
    # Text tower only ("24B" with the Pixtral tower and projector, which are skipped).
    assert count_params(load_preset("mistral-small-3.1-24b-instruct-2503")).total_params == 23_572_403_200


def test_mistral3_wrapper_counts_the_text_tower():
    # Mistral3ForConditionalGeneration has no AutoModelForCausalLM entry: the text tower (MistralForCausalLM,
    # text_config model_type "mistral") is what transformers_param_count builds; Pixtral is skipped.
    cfg = preset_config("mistral-small-3.1-24b-instruct-2503")
    spec = load_preset("mistral-small-3.1-24b-instruct-2503")
    assert count_params(spec).total_params == transformers_param_count(cfg)
    assert spec.model_type == "mistral" and "vision_tower (Pixtral)" in spec.skipped
    # 40 layers x 8 KV heads x (128 + 128) x 2 B = 163,840 B per token, no window (sliding_window null).
    assert kv_cache_bytes(spec, [1000]).kv_bytes == 1000 * 163_840


def test_gemma4_global_head_dim_as_a_config_json_writes_it():
    # A released config.json carries global_head_dim / num_global_key_value_heads (transformers 5.5 files);
    # a 5.23 to_dict carries per_layer_config instead. Both must give the same model.
    raw = dict(vocab_size=1000, hidden_size=256, intermediate_size=512, num_hidden_layers=6, num_attention_heads=4,
               num_key_value_heads=2, head_dim=64, global_head_dim=128, attention_k_eq_v=True,
               num_global_key_value_heads=1, hidden_size_per_layer_input=16, vocab_size_per_layer_input=1000)
    saved = transformers.AutoConfig.for_model("gemma4_text", **raw).to_dict()
    assert "global_head_dim" not in saved and saved["per_layer_config"] == {
        "5": {"head_dim": 128, "num_key_value_heads": 1}}
    a = parse_config({**raw, "model_type": "gemma4_text"})
    b = parse_config({**saved, "model_type": "gemma4_text"})
    assert count_params(a).total_params == count_params(b).total_params == transformers_param_count(
        {**raw, "model_type": "gemma4_text"})
    full = a.layers[5].cache
    # full layer: 1 KV head (k_eq_v) x head 128, K and V both cached; sliding: 2 x 64
    assert (full.kind, full.num_key_value_heads, full.head_dim) == ("full_attention", 1, 128)
    assert (a.layers[0].cache.num_key_value_heads, a.layers[0].cache.head_dim) == (2, 64)
    assert not any(c.name == "v_proj" for c in a.layers[5].attention)  # K = V: no v_proj on full layers


def test_gemma3_4b_multimodal_wrapper_exact():
    # The shape of google/gemma-3-4b-it's config.json: a gemma3 wrapper whose text_config omits vocab_size
    # (Gemma3TextConfig's 262,208 is filled in) and gives the 5:1 pattern through sliding_window_pattern.
    cfg = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
           "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                           "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                           "sliding_window": 1024},
           "vision_config": {"hidden_size": 1152, "model_type": "siglip_vision_model"}, "torch_dtype": "bfloat16"}
    spec = parse_config(cfg)
    assert count_params(spec).total_params == transformers_param_count(cfg)
    assert spec.layer_kinds == {S: 29, F: 5} and spec.vocab_size == 262_208


def test_ministral_without_sliding_window_uses_the_class_default():
    # MinistralConfig: sliding_window 4096 unless the config says (null means none).
    spec = parse_config(dict(model_type="ministral", vocab_size=100, hidden_size=64, intermediate_size=128,
                             num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16))
    assert {layer.cache.window for layer in spec.layers} == {4096}
    none = parse_config(dict(model_type="ministral", vocab_size=100, hidden_size=64, intermediate_size=128,
                             num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                             sliding_window=None))
    assert spec.layer_kinds != none.layer_kinds == {F: 2}


# ----------------------------------------------------------------------------- transformers cache


TINY = dict(vocab_size=128, hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
            head_dim=16, max_position_embeddings=256)
GEMMA4 = {**TINY, "num_hidden_layers": 6, "global_head_dim": 32, "sliding_window": 8, "layer_types": [S, F] * 3,
          "num_kv_shared_layers": 2, "hidden_size_per_layer_input": 8, "vocab_size_per_layer_input": 128}
GEMMA4_MOE = {**TINY, "num_hidden_layers": 4, "global_head_dim": 32, "sliding_window": 8, "layer_types": [S, S, F, F],
              "attention_k_eq_v": True, "num_global_key_value_heads": 1, "hidden_size_per_layer_input": 0,
              "enable_moe_block": True, "num_experts": 4, "top_k_experts": 2, "moe_intermediate_size": 32}
GEMMA3N = {**TINY, "num_hidden_layers": 6, "sliding_window": 8, "layer_types": [S, F] * 3, "num_kv_shared_layers": 2,
           "hidden_size_per_layer_input": 8, "vocab_size_per_layer_input": 128, "laurel_rank": 8}
MIMO = {**TINY, "num_hidden_layers": 6, "num_key_value_heads": 1, "v_head_dim": 8, "sliding_window_size": 8,
        "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32}
MINISTRAL = {**TINY, "num_hidden_layers": 4, "sliding_window": 8, "layer_types": [S, F, S, F]}

# bytes = 2 sequences x 4 B (fp32) x sum over caching layers of tokens held x elements per token.
CACHE_CASES = {
    # Layers 4, 5 reuse layers 2 (sliding) and 3 (full): DummyLayer, nothing held. Sliding layers 0, 2:
    # 2 heads x (16 + 16) = 64 elements, hold min(T, 8 - 1) = 7; full layers 1, 3: 2 x (32 + 32) = 128, hold T.
    # T = 13: 8 x (2 x 7 x 64 + 2 x 13 x 128) = 8 x 4224 = 33,792; T = 14: 35,840; T = 15: 37,888.
    "gemma4-ple-kv-sharing": ("gemma4_text", GEMMA4, [33_792, 35_840, 37_888]),
    # K = V full layers still cache K and V: 1 head x (32 + 32) = 64; sliding 2 x 32 = 64.
    # T = 13: 8 x (2 x 7 x 64 + 2 x 13 x 64) = 20,480; T = 14: 21,504; T = 15: 22,528.
    "gemma4-moe-k-eq-v": ("gemma4_text", GEMMA4_MOE, [20_480, 21_504, 22_528]),
    # No PLE in the unified decoder; otherwise the gemma4 case: the same bytes.
    "gemma4-unified-kv-sharing": ("gemma4_unified_text", {k: v for k, v in GEMMA4.items() if "per_layer" not in k},
                                  [33_792, 35_840, 37_888]),
    # Layers 4, 5 share; every caching layer 2 x (16 + 16) = 64: the same arithmetic as above.
    "gemma3n-altup-laurel": ("gemma3n_text", GEMMA3N, [20_480, 21_504, 22_528]),
    # Layers 0 and 5 full (1 x (16 + 8) = 24), 1-4 sliding with 2 heads (48) and transformers' window
    # sliding_window_size + 1 = 9, holding 8: T = 13: 8 x (2 x 13 x 24 + 4 x 8 x 48) = 17,280;
    # T = 14: 17,664; T = 15: 18,048.
    "mimo-v2-flash-hybrid": ("mimo_v2_flash", MIMO, [17_280, 17_664, 18_048]),
    "ministral-layer-types": ("ministral", MINISTRAL, [20_480, 21_504, 22_528]),
}


@pytest.mark.parametrize("case", sorted(CACHE_CASES))
def test_transformers_cache_bytes_after_prefill_and_decode(case):
    model_type, fields, expected = CACHE_CASES[case]
    hf_config = transformers.AutoConfig.for_model(model_type, **fields)
    spec = parse_config({**fields, "model_type": model_type, "torch_dtype": "float32"})  # as a config.json says it
    assert count_params(spec).total_params == sum(p.numel() for p in transformers.AutoModelForCausalLM.from_config(
        hf_config).parameters())
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(hf_config).eval()
    measured = prefill_and_decode(model, torch.randint(0, 128, (2, 13)))
    ours = [kv_cache_bytes(spec, [t, t], "fp32", "transformers").kv_bytes for t in (13, 14, 15)]
    assert measured == ours == expected


# ----------------------------------------------------------------------------- vLLM convention


def _groups(spec, tp=1, kv_b=2, max_len=32768, in_flight=2048):
    return kv_groups(stage_distinct(spec, 1, 0), 16, tp, kv_b, 2, max_len, in_flight)


def test_vllm_gemma4_31b_full_layers_get_bigger_blocks():
    # vLLM: layers with different page sizes cannot share one block pool as they are; get_kv_cache_groups
    # (vllm/v1/core/kv_cache_utils.py) calls unify_kv_cache_spec_page_size, which keeps the largest page and
    # multiplies the block_size of a smaller one by max_page // page (replace(spec, block_size=...)), then
    # _get_kv_cache_groups_uniform_page_size groups layers by spec: group_size = min layers of a spec (10).
    # Page = block_size x num_kv_heads x (head_size + head_size_v) x dtype (AttentionSpec.page_size_bytes):
    #   sliding: 16 x 16 x (256 + 256) x 2 B = 262,144   full: 16 x 4 x (512 + 512) x 2 B = 131,072 -> blocks of 32.
    groups, bytes_per_block, bs = _groups(load_preset("gemma-4-31b-it-nvfp4"))
    sliding = [g for g in groups if g.kind == S]
    full = [g for g in groups if g.kind == F]
    assert (len(sliding), len(full), bs) == (5, 1, 16)  # 50 sliding / 10 = 5 groups, 10 full = 1 group
    assert {g.page_bytes for g in groups} == {262_144} and bytes_per_block == 10 * 262_144
    assert full[0].block_size == 32 and sliding[0].block_size is None
    # SlidingWindowSpec.max_memory_usage_bytes: cdiv(min(W - 1 + in_flight, L), bs) + 1 = cdiv(3071, 16) + 1 = 193;
    # full: cdiv(32768, 32) = 1024 blocks of 32 tokens.
    assert sliding[0].blocks_per_request == 193 and full[0].blocks_per_request == 1024
    # TP = 8: sliding 16 // 8 = 2 heads x 512, full max(1, 4 // 8) = 1 x 1024: equal pages, nothing grows.
    groups8, _, _ = _groups(load_preset("gemma-4-31b-it-nvfp4"), tp=8)
    assert {g.block_size for g in groups8} == {None} and {g.page_bytes for g in groups8} == {16 * 1024 * 2}


def test_vllm_mimo_v2_flash_groups():
    # vLLM mimo_v2_flash.py: sliding layers Attention(per_layer_sliding_window=sliding_window_size = 128,
    # num_kv_heads=swa_num_key_value_heads = 8, head_size 192, head_size_v 128); full: 4 KV heads.
    #   sliding page: 16 x 8 x (192 + 128) x 2 B = 81,920; full: 16 x 4 x 320 x 2 = 40,960 -> 32-token blocks.
    # 39 sliding, 9 full: group_size 9 (39 >= 1.5 x 9), sliding cdiv(39, 9) = 5 groups, 45 - 39 = 6 padding.
    spec = load_preset("mimo-v2-flash")
    assert spec.layer_kinds == {F: 9, S: 39}
    groups, bytes_per_block, _ = _groups(spec)
    sliding = [g for g in groups if g.kind == S]
    full = [g for g in groups if g.kind == F]
    assert (len(sliding), len(full), sum(g.padding_layers for g in groups)) == (5, 1, 6)
    assert bytes_per_block == 9 * 81_920 and full[0].block_size == 32
    assert sliding[0].window == 128 and sliding[0].blocks_per_request == 137  # cdiv(127 + 2048, 16) + 1
    assert full[0].blocks_per_request == 1024  # cdiv(32768, 32)
    # Both conventions hold 128 tokens in a sliding layer (vLLM window 128; transformers 129 - 1).
    one = kv_cache_bytes(spec, [1000], "bf16", "vllm").by_kind[S]
    assert one == kv_cache_bytes(spec, [1000], "bf16", "transformers").by_kind[S] == 39 * 128 * 2560 * 2


def test_vllm_gemma4_e2b_shape_kv_sharing_layers_keep_no_cache():
    # google/gemma-4-E2B's text geometry: 35 layers (4 sliding : 1 full), 1 KV head, head 256 / 512,
    # the last 20 layers KV-sharing. vLLM gpu_model_runner.get_kv_cache_spec skips every layer with a
    # kv_sharing_target_layer_name ("doesn't allocate KV cache for the layer"); Gemma4Attention sets it for
    # layers >= num_hidden_layers - num_kv_shared_layers. transformers puts a DummyLayer there.
    cfg = dict(model_type="gemma4_text", vocab_size=262144, hidden_size=1536, intermediate_size=6144,
               num_hidden_layers=35, num_attention_heads=8, num_key_value_heads=1, head_dim=256, global_head_dim=512,
               num_kv_shared_layers=20, hidden_size_per_layer_input=256, vocab_size_per_layer_input=262144,
               sliding_window=512, use_double_wide_mlp=True, layer_types=([S] * 4 + [F]) * 7,
               torch_dtype="bfloat16")
    spec = parse_config(cfg)
    # 4,628,569,344 = transformers; with the ~150M vision and ~300M audio towers, the published "5.1B".
    assert count_params(spec).total_params == transformers_param_count(cfg) == 4_628_569_344
    assert spec.layer_kinds == {S: 12, F: 3, "none": 20}  # layers 0-14 cache: full at 4, 9, 14
    # Pages: sliding 16 x 1 x 512 x 2 B = 16,384, full 16 x 1 x 1024 x 2 B = 32,768: now the *sliding*
    # groups grow to 32-token blocks. 12 sliding / 3 full: group_size 3, 4 + 1 groups, none for shared layers.
    groups, bytes_per_block, _ = _groups(spec)
    assert sum(g.layers for g in groups) == 15 and bytes_per_block == 3 * 32_768
    sliding = [g for g in groups if g.kind == S]
    assert len(sliding) == 4 and sliding[0].block_size == 32
    assert sliding[0].blocks_per_request == 81  # cdiv(min(511 + 2048, 32768), 32) + 1 = 80 + 1
    # Per token: 12 x 512 + 3 x 1024 = 9,216 elements x 2 B (both conventions: shared layers hold nothing).
    assert kv_cache_bytes(spec, [400]).kv_bytes == 400 * 9_216 * 2
    assert kv_cache_bytes(spec, [400], convention="transformers").kv_bytes == (12 * 400 * 512 + 3 * 400 * 1024) * 2


def test_maverick_chunked_and_global_layers():
    # 48 layers: 36 chunked (attention_chunk_size 8192), 12 NoPE global; 8 KV heads x (128 + 128) x 2 B.
    # vllm at 10,000 tokens: chunked hold (10000 - 1) % 8192 + 1 = 1808: 4096 x (36 x 1808 + 12 x 10000).
    spec = load_preset("llama-4-maverick-17b-128e-instruct")
    assert spec.layer_kinds == {"chunked_attention": 36, F: 12}
    assert sum(layer.experts is not None for layer in spec.layers) == 24  # interleave_moe_layer_step 2
    assert kv_cache_bytes(spec, [10_000]).kv_bytes == 4096 * (36 * 1808 + 12 * 10_000) == 758_120_448


def test_plans_of_the_new_presets():
    from kvplan.gpus import get_gpu
    from kvplan.parallel import Layout
    from kvplan.plan import plan

    p = plan(load_preset("gemma-4-31b-it-nvfp4"), get_gpu("H100-80GB"), layout=Layout(tp=1))
    assert p.fits and {g.block_size for g in p.kv_groups if g.kind == F} == {32}
    # Each request: 5 sliding groups + 1 full group of 32-token blocks.
    assert p.blocks_per_request == sum(g.blocks_per_request for g in p.kv_groups)
    # Maverick's 801 GB of bf16 weights need 8 x H200 (8 x 80 GB H100s hold 640 GB).
    for name in ("gemma-4-26b-a4b", "mimo-v2-flash", "llama-4-maverick-17b-128e-instruct",
                 "mistral-small-3.1-24b-instruct-2503"):
        assert plan(load_preset(name), get_gpu("H200"), layout=Layout(tp=8)).num_blocks > 0, name


# ----------------------------------------------------------------------------- refusals


def test_gemma_kv_sharing_without_a_producer_is_refused():
    cfg = {**GEMMA3N, "model_type": "gemma3n_text", "num_kv_shared_layers": 3, "layer_types": [S, S, S, F, S, F]}
    with pytest.raises(ConfigError) as exc:  # layers 3-5 share, but no layer before 3 is full attention
        parse_config(cfg)
    assert exc.value.field == "num_kv_shared_layers"


def test_mimo_swa_shape_that_transformers_cannot_build_is_refused():
    with pytest.raises(ConfigError) as exc:
        parse_config({**MIMO, "model_type": "mimo_v2_flash", "swa_num_key_value_heads": 3})
    assert exc.value.field == "swa_num_key_value_heads"


def test_validate_refuses_gemma_families_clearly():
    from kvplan.validate.decoder import Decoder
    from kvplan.validate.measure import run_validation

    for spec in (load_preset("gemma-4-26b-a4b"), parse_config({**GEMMA3N, "model_type": "gemma3n_text"})):
        with pytest.raises(PlanInputError) as exc:
            run_validation(spec, tokens=8, steps=1, device="cpu")
        assert exc.value.field == "model" and "reference decoder does not run" in exc.value.message
        with pytest.raises(PlanInputError):
            Decoder(spec)


def test_validate_runs_mimo_per_kind_kv_heads_and_v_head_dim():
    from kvplan.validate.decoder import build_decoder
    from kvplan.validate.measure import cache_check

    spec = parse_config({**MIMO, "model_type": "mimo_v2_flash", "torch_dtype": "float32"})
    model, _ = build_decoder(spec, "fp32", "cpu")
    assert cache_check(model, spec, "fp32", kind="static", prompt=13, steps=2)["ok"]
    assert not cache_check(model, spec, "fp32", kind="static", prompt=13, steps=2, fault="upper_left_mask")["ok"]


def test_model_page_shows_per_kind_geometry():
    from kvplan.web.views import spec_rows

    def row(spec):
        return [r["value"] for r in spec_rows(spec) if r["field"].endswith("by kind")]

    assert row(load_preset("gemma-4-26b-a4b")) == ["sliding_attention: 8 x (256 + 256); full_attention: 2 x (512 + 512)"]
    assert row(load_preset("llama-3.1-8b")) == []  # one geometry: no row
    shared = parse_config({**GEMMA3N, "model_type": "gemma3n_text"})
    assert row(shared) == [("sliding_attention: 2 x (16 + 16); full_attention: 2 x (16 + 16); "
                            "KV-sharing (reuse an earlier layer's cache): nothing")]


def test_mistral3_text_config_without_model_type_is_mistral():
    cfg = preset_config("mistral-small-3.1-24b-instruct-2503")
    del cfg["text_config"]["model_type"]  # Mistral3Config's text_config default is a MistralConfig
    spec = parse_config(cfg)
    assert spec.model_type == "mistral" and spec.basis == "native"
    assert count_params(spec).total_params == count_params(load_preset("mistral-small-3.1-24b-instruct-2503")).total_params
