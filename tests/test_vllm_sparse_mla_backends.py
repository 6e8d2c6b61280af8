"""vLLM's sparse-MLA (DSA) backends by release and GPU: which one holds an fp8 cache, its page, the block size.

Read in the vLLM wheels 0.11.0, 0.11.1, 0.14.0, 0.16.0, 0.17.0, 0.18.0, 0.19.0, 0.20.0, 0.21.0, 0.28.0, 0.29.0, 0.30.0,
0.31.0, 0.32.0 and 0.33.0 (2026-12-01):
- platforms/cuda.py _get_backend_priorities: sm100 (B200 / B300) sparse backends FLASHINFER_MLA_SPARSE before
  FLASHMLA_SPARSE when the MLA layer's num_heads (num_attention_heads // tp) <= 16 (0.17.0 - 0.18.x), or for any
  quantized KV cache (0.19.0 on; a 16-bit cache keeps the <= 16 heads rule). Hopper: FLASHMLA_SPARSE (0.28.0 puts
  FLASH_ATTN_MLA_SPARSE, 16-bit KV only, before it).
- v1/attention/backends/mla/flashinfer_mla_sparse.py: kv dtypes auto / bfloat16 only in 0.17.0, + fp8 / fp8_e4m3 from
  0.18.0; qk_nope_head_dim 128 only through 0.18.x, 128 or 192 from 0.19.0; get_kv_cache_shape (num_blocks,
  block_size, 576) in the KV dtype: a plain fp8 latent of 576 B. FLASHMLA_SPARSE stores fp8 as fp8_ds_mla, 656 B
  (kv_cache_interface.py). 0.17.0's models/config.py DeepseekV32ForCausalLM made fp8 fp8_ds_mla before selection
  (which FLASHINFER_MLA_SPARSE refuses); from 0.18.0 layers/attention/mla_attention.py does it after, for
  FLASHMLA_SPARSE only.
- the indexer key (models/deepseek_v2.py DeepseekV32IndexerCache): index_head_dim + index_head_dim // 128 x 4 bytes,
  uint8, whatever --kv-cache-dtype: 128 + 4 = 132 B a token a layer.
- block size: 64 on CUDA in every release (forced for index_topk configs through 0.17.x; the indexer backend's
  kernel blocks [64] from 0.18.0).
- models/config.py GlmMoeDsaForCausalLM (0.32.0 on; not in 0.28.0 - 0.31.0): --kv-cache-dtype auto -> fp8_e4m3 on sm10x.

Presets: deepseek-v3.2 (61 layers, 128 heads, qk_nope_head_dim 128, an indexer in every layer) and glm-5 (78 layers,
64 heads, qk_nope_head_dim 192, an indexer in every layer). Per token: bf16 latent 576 x 2 = 1152 B, plain fp8 576 B,
fp8_ds_mla 656 B, + 132 B of indexer key.
"""

import pytest

from kvplan import load_preset
from kvplan.errors import PlanInputError
from kvplan.engines import (
    EngineConfig, vllm_glm_dsa_fp8_default, vllm_sparse_mla_block_size, vllm_sparse_mla_fp8_backend,
)
from kvplan.gpus import get_gpu
from kvplan.layers import MLAIndexerAttention
from kvplan.parallel import Layout
from kvplan.plan import plan

DSV32 = load_preset("deepseek-v3.2")
GLM5 = load_preset("glm-5")
B200, H200 = get_gpu("B200"), get_gpu("H200")

# per token, every layer with its indexer key (132 B)
DSV32_BF16 = 61 * (1152 + 132)  # = 78,324
DSV32_PLAIN_FP8 = 61 * (576 + 132)  # = 43,188 (FLASHINFER_MLA_SPARSE)
DSV32_DS_MLA = 61 * (656 + 132)  # = 48,068 (FLASHMLA_SPARSE)
GLM5_BF16 = 78 * (1152 + 132)  # = 100,152
GLM5_PLAIN_FP8 = 78 * (576 + 132)  # = 55,224
GLM5_DS_MLA = 78 * (656 + 132)  # = 61,464


def _plan(spec, gpu, version, kv, tp=8):
    return plan(spec, gpu, EngineConfig(vllm_version=version, kv_cache_dtype=kv, max_model_len=8192), Layout(tp=tp),
                suggest=False)


def test_per_token_constants():
    assert (DSV32_BF16, DSV32_PLAIN_FP8, DSV32_DS_MLA) == (78_324, 43_188, 48_068)
    assert (GLM5_BF16, GLM5_PLAIN_FP8, GLM5_DS_MLA) == (100_152, 55_224, 61_464)


def test_the_layer_spec_layouts():
    dsa = MLAIndexerAttention(kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128,
                              num_attention_heads=128, index_head_dim=128)
    plain = dsa.model_copy(update={"vllm_fp8_layout": "fp8"})
    assert dsa.kv_bytes_per_token("vllm", 8, 1) == 512 + 512 // 128 * 4 + 64 * 2 + 132 == 788
    assert plain.kv_bytes_per_token("vllm", 8, 1) == 576 + 132 == 708
    # 16 bits: the same 576 x 2 on either backend
    assert dsa.kv_bytes_per_token("vllm", 8, 2) == plain.kv_bytes_per_token("vllm", 8, 2) == 1152 + 132 == 1284
    shared = plain.model_copy(update={"index_head_dim": None})  # a GLM-5.2 'shared' layer: no indexer key
    assert shared.kv_bytes_per_token("vllm", 8, 1) == 576


@pytest.mark.parametrize("gpu,version,heads,nope,backend", [
    ("B200", "0.16", 16, 128, "FLASHMLA_SPARSE"),  # no FLASHINFER_MLA_SPARSE yet (0.16.0 wheel)
    ("B200", "0.17", 16, 128, "FLASHMLA_SPARSE"),  # first at <= 16 heads, but 16-bit KV only
    ("B200", "0.18", 16, 128, "FLASHINFER_MLA_SPARSE"),  # <= 16 heads, qk_nope 128
    ("B200", "0.18", 32, 128, "FLASHMLA_SPARSE"),  # 32 heads: FlashMLA first
    ("B200", "0.18", 8, 192, "FLASHMLA_SPARSE"),  # GLM-5: qk_nope 192 refused
    ("B300", "0.19", 32, 128, "FLASHINFER_MLA_SPARSE"),  # fp8 prefers FlashInfer at any head count
    ("B200", "0.19", 8, 192, "FLASHINFER_MLA_SPARSE"),  # and takes qk_nope 192
    ("B200", "0.33", 64, 192, "FLASHINFER_MLA_SPARSE"),
    ("B200", "0.33", 16, 64, "FLASHMLA_SPARSE"),  # a qk_nope FlashInfer's sparse kernel lacks
    ("H200", "0.33", 8, 192, "FLASHMLA_SPARSE"),  # Hopper: FlashMLA sparse (fp8_ds_mla)
])
def test_fp8_backend_table(gpu, version, heads, nope, backend):
    assert vllm_sparse_mla_fp8_backend(gpu, version, heads, nope) == backend


def test_block_size_table():
    # 64 for DSA on Hopper and B200 / B300 (not CUTLASS_MLA's 128); other GPUs keep the MLA table (A100: 16)
    assert [vllm_sparse_mla_block_size(g) for g in ("B200", "B300", "H200", "H100-SXM", "A100-80GB")] == [
        64, 64, 64, 64, 16]


def test_glm_fp8_default_table():
    assert vllm_glm_dsa_fp8_default("B200", "0.33", "glm_moe_dsa")
    assert not vllm_glm_dsa_fp8_default("B200", "0.30", "glm_moe_dsa")  # 0.30.0 / 0.31.0: not yet
    assert not vllm_glm_dsa_fp8_default("H200", "0.33", "glm_moe_dsa")
    assert not vllm_glm_dsa_fp8_default("B200", "0.33", "deepseek_v32")


# ----------------------------------------------------------------------------- plans: TP8, 0.28, B200 and H200

@pytest.mark.parametrize("spec,gpu,kv,per_token", [
    # DeepSeek-V3.2 TP8: 128 / 8 = 16 heads a rank
    (DSV32, B200, "fp8", DSV32_PLAIN_FP8),  # FLASHINFER_MLA_SPARSE: 61 x (576 + 132)
    (DSV32, B200, "auto", DSV32_BF16),  # FLASHINFER_MLA_SPARSE (<= 16 heads), bf16: 61 x (1152 + 132)
    (DSV32, H200, "fp8", DSV32_DS_MLA),  # FLASHMLA_SPARSE: fp8_ds_mla, 61 x (656 + 132)
    (DSV32, H200, "auto", DSV32_BF16),  # FLASH_ATTN_MLA_SPARSE, bf16
    # GLM-5 TP8: 64 / 8 = 8 heads a rank, qk_nope_head_dim 192
    (GLM5, B200, "fp8", GLM5_PLAIN_FP8),  # 78 x (576 + 132)
    (GLM5, B200, "auto", GLM5_BF16),  # 0.28 keeps auto = bf16: 78 x (1152 + 132)
    (GLM5, H200, "fp8", GLM5_DS_MLA),  # 78 x (656 + 132)
    (GLM5, H200, "auto", GLM5_BF16),
])
def test_tp8_pages_at_0_28(spec, gpu, kv, per_token):
    p = _plan(spec, gpu, "0.28", kv)
    assert p.ranks[0].kv_bytes_per_token == per_token
    assert p.block_size == 64 and p.ranks[0].bytes_per_block == 64 * per_token


def test_dsv32_b200_fp8_by_release_and_tp():
    # TP8 (16 heads): fp8_ds_mla through 0.17, plain fp8 from 0.18 (<= 16 heads)
    assert [_plan(DSV32, B200, v, "fp8").ranks[0].kv_bytes_per_token for v in ("0.17", "0.18", "0.19")] == [
        DSV32_DS_MLA, DSV32_PLAIN_FP8, DSV32_PLAIN_FP8]
    # TP4 (32 heads): FlashMLA first in 0.18; from 0.19 fp8 prefers FlashInfer at any head count
    assert [_plan(DSV32, B200, v, "fp8", tp=4).ranks[0].kv_bytes_per_token for v in ("0.18", "0.19")] == [
        DSV32_DS_MLA, DSV32_PLAIN_FP8]


def test_glm5_b200_fp8_by_release():
    # 0.18.x refuses qk_nope_head_dim 192 on FLASHINFER_MLA_SPARSE: FLASHMLA_SPARSE's fp8_ds_mla; 0.19 on: plain fp8
    assert [_plan(GLM5, B200, v, "fp8").ranks[0].kv_bytes_per_token for v in ("0.18", "0.19")] == [
        GLM5_DS_MLA, GLM5_PLAIN_FP8]


def test_glm5_auto_kv_is_fp8_on_b200_from_0_32():
    # GlmMoeDsaForCausalLM.verify_and_update_config: auto -> fp8_e4m3 on sm10x (0.32.0 on): 78 x (576 + 132)
    assert _plan(GLM5, B200, "0.33", "auto").ranks[0].kv_bytes_per_token == GLM5_PLAIN_FP8
    assert _plan(GLM5, B200, "0.30", "auto").ranks[0].kv_bytes_per_token == GLM5_BF16
    assert _plan(GLM5, H200, "0.33", "auto").ranks[0].kv_bytes_per_token == GLM5_BF16  # sm90: no override
    # an explicit 16-bit dtype is not "auto": kept
    assert _plan(GLM5, B200, "0.33", "bf16").ranks[0].kv_bytes_per_token == GLM5_BF16


def test_sparse_block_is_64_on_b200_in_old_releases_too():
    # 0.11.x: check_and_update_config forces 64 for index_topk configs before CUTLASS_MLA's 128 matters
    assert _plan(DSV32, B200, "0.11", "auto").block_size == 64


@pytest.mark.parametrize("version", ["0.16", "0.17"])
def test_glm5_fp8_kv_before_0_18_is_refused(version):
    # 0.16.0 / 0.17.x: GLM-5's fp8 reaches backend selection as "fp8" (models/config.py converts DeepseekV32ForCausalLM
    # only), which neither FLASHMLA_SPARSE (auto / bfloat16 / fp8_ds_mla) nor FLASHINFER_MLA_SPARSE (auto / bfloat16)
    # takes: "No valid attention backend found"
    with pytest.raises(PlanInputError) as err:
        _plan(GLM5, B200, version, "fp8")
    assert err.value.field == "kv_cache_dtype" and "vLLM >= 0.18" in str(err.value)
    assert _plan(GLM5, B200, "0.18", "fp8").ranks[0].kv_bytes_per_token == GLM5_DS_MLA  # FLASHMLA_SPARSE takes "fp8"
