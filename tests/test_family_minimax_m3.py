"""MiniMax-M3: native, exact against transformers 5.23, and the vLLM convention derived by hand from vLLM's source.

- Parameters: transformers' meta-device count (``MiniMaxM3VLForCausalLM``, the causal-LM class of
  ``minimax_m3_vl_text``) for the real MiniMax-M3-NVFP4 wrapper (its text decoder: 426,174,565,632), the
  flat MiniMaxAI file (model_type minimax_m3, read as the same decoder), the config class's defaults and
  small variations of the per-layer selectors (``layer_types`` / ``sparse_attention_freq``,
  ``mlp_layer_types`` / ``moe_layer_freq``) and of the indexer's fields (flat and legacy names).
- transformers cache: a real cached forward of a tiny random model on the CPU; the bytes the DynamicCache
  holds after the prefill and after each of 2 decode steps, the sparse layers' ``idx_keys``
  (``MiniMaxM3VLSparseCacheLayer``) included, equal the "transformers" convention.
- vLLM cache (``IndexedAttention`` in kvplan/layers.py cites the files): the sparse layers' K/V is a
  FullAttentionSpec of num_kv_heads // tp heads (vllm/models/minimax_m3/nvidia/model.py
  MiniMaxM3SparseAttention.get_kv_cache_spec) and their indexer key an MLAAttentionSpec of one head of
  index_head_dim in bf16 (vllm/models/minimax_m3/common/indexer.py MiniMaxM3IndexerCache, default
  indexer_kv_dtype "bf16"), not divided by TP and not following --kv-cache-dtype; the 3 full layers a plain
  Attention. Every spec is a FullAttentionSpec type: one UniformTypeKVCacheSpecs group of 128-token blocks.
"""

import json
from pathlib import Path

import pytest

from kvplan import count_params, kv_bytes_per_token, kv_cache_bytes, parse_config
from kvplan.errors import ConfigError, PlanInputError

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.test_oracle_cache import prefill_and_decode  # noqa: E402
from tests.test_oracle_transformers import transformers_param_count  # noqa: E402

pytestmark = pytest.mark.oracle
torch.set_num_threads(1)
FIXTURES = Path(__file__).parent / "fixtures" / "configs"
M3_PARAMS = 426_174_565_632  # transformers 5.23, MiniMaxM3VLForCausalLM on the meta device


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


@pytest.fixture(scope="module")
def nvfp4():
    """The real nvidia/MiniMax-M3-NVFP4 wrapper config (3 MB, its quantization_config read too) and its spec."""
    cfg = fixture("minimax-m3-nvfp4")
    return cfg, parse_config(cfg)


def meta_count(model_type: str, fields: dict) -> int:
    hf_config = transformers.AutoConfig.for_model(model_type, **fields)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(hf_config)
    return sum(p.numel() for p in model.parameters())


# ------------------------------------------------------------------------------------ parameters


def test_real_nvfp4_wrapper_params_equal_transformers(nvfp4):
    cfg, spec = nvfp4
    assert spec.basis == "native" and spec.model_type == "minimax_m3_vl_text"
    # sparse_attention_freq: layers 0-2 full, 3-59 sparse; moe_layer_freq: layers 0-2 dense MLP
    assert spec.layer_kinds == {"full_attention": 3, "indexed_attention": 57}
    assert sum(layer.experts is not None for layer in spec.layers) == 57
    assert count_params(spec).total_params == transformers_param_count(cfg) == M3_PARAMS
    # NVIDIA's checkpoint (modelopt MIXED_PRECISION quantized_layers): every routed expert of the 57 MoE layers
    # in NVFP4 -- the format holding the most weights, so the headline -- and attention / dense MLP in MXFP8,
    # stored as the overrides. 248,267,417,088 B in all, 31,202,489,856 B per GPU at TP 8 (the same bytes
    # as with the experts stored as overrides of an MXFP8 headline).
    assert spec.quantization == "nvfp4"
    assert {(o.category, o.format) for o in spec.quantization_overrides} == {("attention", "mxfp8"), ("mlp", "mxfp8")}
    from kvplan.parallel import Layout, rank_weight_bytes
    from kvplan.weights import weight_bytes

    assert weight_bytes(spec).total_bytes == 248_267_417_088
    assert rank_weight_bytes(spec, Layout(8, 1, 1, False), 0, None) == 31_202_489_856


def test_flat_minimax_file_is_the_same_decoder():
    # MiniMaxAI's flat file (model_type minimax_m3, MiniMaxM3ForCausalLM): the same 60 layers, read by the
    # same names (transformers has no minimax_m3: its fields are MiniMaxM3VLTextConfig's).
    cfg = fixture("minimax-m3")
    spec = parse_config(cfg, transformers=False)
    assert spec.basis == "native" and spec.layer_kinds == {"full_attention": 3, "indexed_attention": 57}
    assert count_params(spec).total_params == M3_PARAMS
    # Per layer (h 6144, 64 q / 4 kv heads of 128; indexer 4 heads of 128; 128 experts of 3072, 1 shared):
    # attention 2 x 6144 x 8192 + 2 x 6144 x 512 + 2 x 128 = 106,955,008; indexer 6144 x 640 + 256 = 3,932,416;
    # MoE 128 x 3 x 6144 x 3072 + 3 x 6144 x 3072 + 128 x 6144 (router) = 7,305,166,848; dense 3 x 6144 x 12288
    # = 226,492,416; norms 12,288. 3 x (106,955,008 + 226,492,416 + 12,288) + 57 x (106,955,008 + 3,932,416
    # + 7,305,166,848 + 12,288) + 2 x 200,064 x 6144 (embed, lm_head) + 6144 = 426,174,565,632.
    assert (3 * (106_955_008 + 226_492_416 + 12_288) + 57 * (106_955_008 + 3_932_416 + 7_305_166_848 + 12_288)
            + 2 * 200_064 * 6144 + 6144) == M3_PARAMS


SMALL = dict(vocab_size=128, hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
             head_dim=16, intermediate_size=32, shared_intermediate_size=32, dense_intermediate_size=96,
             num_local_experts=4, num_experts_per_tok=2, max_position_embeddings=256)
VARIANTS = {
    "defaults": {},
    "selectors": {**SMALL, "layer_types": ["full_attention", "minimax_m3_sparse", "minimax_m3_sparse", "full_attention"],
                  "mlp_layer_types": ["dense", "sparse", "dense", "sparse"], "index_n_heads": 2, "index_head_dim": 32,
                  "tie_word_embeddings": True},
    # legacy keys: sparse_index_dim (48) overrides the flat index_head_dim (32), as MiniMaxM3VLTextConfig does
    "legacy": {**SMALL, "index_head_dim": 32, "moe_layer_freq": [0, 1, 1, 0],
               "sparse_attention_config": {"sparse_attention_freq": [0, 0, 1, 1], "sparse_index_dim": 48,
                                           "sparse_num_index_heads": 2}},
    "all-dense-sparse": {**SMALL, "mlp_layer_types": ["dense"] * 4, "layer_types": ["minimax_m3_sparse"] * 4},
}


@pytest.mark.parametrize("case", sorted(VARIANTS))
def test_params_equal_transformers_meta_count(case):
    fields = VARIANTS[case]
    # The raw fields, as a config.json would carry them (not to_dict(), which resolves the legacy keys).
    cfg = {**fields, "model_type": "minimax_m3_vl_text"} if fields else {
        **transformers.AutoConfig.for_model("minimax_m3_vl_text").to_dict(), "model_type": "minimax_m3_vl_text"}
    spec = parse_config(cfg, transformers=False)
    assert spec.basis == "native"
    assert count_params(spec).total_params == meta_count("minimax_m3_vl_text", fields)


def test_legacy_index_dim_wins_over_the_flat_one():
    spec = parse_config({**VARIANTS["legacy"], "model_type": "minimax_m3_vl_text"})
    assert [layer.cache.kind for layer in spec.layers] == ["full_attention"] * 2 + ["indexed_attention"] * 2
    assert {layer.cache.index_head_dim for layer in spec.layers[2:]} == {48}
    hf = transformers.AutoConfig.for_model("minimax_m3_vl_text", **VARIANTS["legacy"])
    assert hf.index_head_dim == 48 and hf.mlp_layer_types == ["dense", "sparse", "sparse", "dense"]


# ------------------------------------------------------------------------------------ transformers cache


def test_dynamic_cache_bytes_equal_transformers_convention():
    fields = {**SMALL, "layer_types": ["full_attention", "minimax_m3_sparse", "minimax_m3_sparse", "minimax_m3_sparse"],
              "mlp_layer_types": ["dense", "sparse", "sparse", "sparse"], "index_n_heads": 2, "index_head_dim": 16,
              "index_block_size": 4, "index_topk_blocks": 2}
    hf_config = transformers.AutoConfig.for_model("minimax_m3_vl_text", **fields)
    spec = parse_config({**fields, "model_type": "minimax_m3_vl_text", "torch_dtype": "float32"})
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(hf_config).eval()
    batch, prompt = 2, 13

    def three_indexed_layers(step, cache):
        assert sum(getattr(layer, "idx_keys", None) is not None for layer in cache.layers) == 3

    measured = prefill_and_decode(model, torch.randint(0, 128, (batch, prompt)), on_cache=three_indexed_layers)
    planned = [kv_cache_bytes(spec, [t] * batch, "fp32", "transformers").kv_bytes for t in (13, 14, 15)]
    # per token: 4 layers x 2 heads x (16 + 16) + 3 sparse layers x 16 (idx_keys) = 304 elements x 4 B x 2 seqs
    assert measured == planned == [t * 304 * 4 * 2 for t in (13, 14, 15)]


# ------------------------------------------------------------------------------------ vLLM convention


def test_vllm_kv_bytes_per_token(nvfp4):
    _, spec = nvfp4
    # bf16: full layers 4 heads x 256 x 2 B = 2048; sparse 2048 + the bf16 indexer key 128 x 2 = 2304.
    assert kv_bytes_per_token(spec) == 3 * 2048 + 57 * 2304 == 137_472
    # fp8 KV: the indexer key stays bf16 (indexer_kv_dtype), 3 x 1024 + 57 x (1024 + 256)
    assert kv_bytes_per_token(spec, "fp8") == 3 * 1024 + 57 * 1280 == 76_032
    # TP 4 and 8: one KV head per rank (max(1, 4 // tp)); the indexer key is whole on every rank
    assert kv_bytes_per_token(spec, tp=4) == kv_bytes_per_token(spec, tp=8) == 3 * 512 + 57 * 768 == 45_312
    # transformers: everything in the model dtype, (1024 + 128) x 2 per sparse layer
    assert kv_bytes_per_token(spec, convention="transformers") == 3 * 2048 + 57 * 1152 * 2 == 137_472
    assert kv_bytes_per_token(spec, "fp8", "transformers") == 3 * 1024 + 57 * 1152 == 68_736
    kv = kv_cache_bytes(spec, [1000, 24])
    assert kv.by_kind == {"full_attention": 3 * 1024 * 2048, "indexed_attention": 57 * 1024 * 2304}


def test_vllm_one_uniform_type_group_of_128_token_blocks(nvfp4):
    from kvplan.gpus import get_gpu
    from kvplan.parallel import Layout
    from kvplan.plan import kv_groups, plan

    _, spec = nvfp4
    layers = [(layer, 1) for layer in spec.layers]
    groups, per_block, _ = kv_groups(layers, 128, 1, 2, 2, 32_768, 16_384)
    # UniformTypeKVCacheSpecs: one group, its block the sum of every layer's page (K/V + indexer pages)
    assert len(groups) == 1 and groups[0].layers == 60 and groups[0].kind == "indexed_attention"
    assert per_block == 128 * 137_472 == 17_596_416 and groups[0].blocks_per_request == 32_768 // 128
    result = plan(spec, get_gpu("H200"), layout=Layout(tp=4), suggest=False)
    assert result.block_size == 128  # the sparse backend's only page size, whatever the default (16)
    assert result.ranks[0].bytes_per_block == 128 * 45_312


# ------------------------------------------------------------------------------------ bad input and refusals


def test_refuses_what_transformers_and_vllm_disagree_on_or_cannot_build():
    base = {**SMALL, "model_type": "minimax_m3_vl_text"}
    with pytest.raises(ConfigError) as exc:  # vLLM: 2 x 32 shared width; transformers: one of 32
        parse_config({**base, "n_shared_experts": 2})
    assert exc.value.field == "n_shared_experts"
    with pytest.raises(ConfigError) as exc:
        parse_config({**base, "layer_types": ["sliding_attention"] * 4})
    assert exc.value.field == "layer_types"
    with pytest.raises(ConfigError) as exc:
        parse_config({**base, "sparse_attention_config": {"sparse_attention_freq": [1, 1]}})
    assert exc.value.field == "sparse_attention_config.sparse_attention_freq"
    with pytest.raises(ConfigError) as exc:
        parse_config({**base, "sparse_attention_config": {"sparse_index_dim": "wide"}})
    assert exc.value.field == "sparse_attention_config.sparse_index_dim"
    with pytest.raises(ConfigError) as exc:
        parse_config({**base, "moe_layer_freq": 1})
    assert exc.value.field == "moe_layer_freq"


def test_reference_decoder_refuses_indexed_attention_by_name():
    from kvplan.validate.decoder import refuse_unsupported

    spec = parse_config({**SMALL, "model_type": "minimax_m3_vl_text", "layer_types": ["minimax_m3_sparse"] * 4})
    with pytest.raises(PlanInputError) as exc:
        refuse_unsupported(spec)
    assert "'indexed_attention'" in exc.value.message and "lightning indexer" in exc.value.message
