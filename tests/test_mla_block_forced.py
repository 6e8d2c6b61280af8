"""A typed --block-size for a plain-MLA model is planned at the block vLLM runs (kvplan issue 11).

vLLM through 0.17 rewrites cache_config.block_size for MLA in platforms/cuda.py check_and_update_config whether the
user typed it or not (PyPI wheels read 2026-12):
- 0.10.0 - 0.11.0: ``use_flashmla and ... block_size != 64`` -> 64 (Hopper), ``use_cutlass_mla and block_size !=
  128`` -> 128 (B200);
- 0.11.1 - 0.17.x: ``block_size % 64 != 0`` -> 64 (FlashMLA), ``% 128 != 0`` -> 128 (CUTLASS MLA), from 0.15.0
  FlashInfer MLA (B200, qk_nope_head_dim 128) ``!= 32 and % 64 != 0`` -> 64;
- from 0.18.0 platforms/interface.py update_block_size_for_backend keeps a typed size ("User specified --block-size;
  keep it.").
DeepSeek-V3 at TP 8: 61 MLA layers x (512 + 64) x 2 B = 70,272 B a token a rank (the latent is not sharded).
A DSA model (DeepSeek-V3.2) from 0.18.0: a typed size is kept if it is a multiple of 64 and refused otherwise (the
sparse MLA backends' and the indexer's kernel blocks, kvplan.engines.VLLM_DSA_BLOCK_MULTIPLE).
"""

import pytest

from kvplan import load_preset
from kvplan.engines import EngineConfig, vllm_mla_block_forced, vllm_mla_default, vllm_sparse_mla_block_forced
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan

PER_TOKEN = 61 * (512 + 64) * 2  # 70,272 B: DeepSeek-V3's latent, every rank


@pytest.fixture(scope="module")
def v3():
    return load_preset("deepseek-v3")


def _plan(spec, gpu, version, block_size, tp=8):
    return plan(spec, get_gpu(gpu), EngineConfig(vllm_version=version, max_model_len=8192, block_size=block_size),
                Layout(tp=tp))


def test_deepseek_v3_h200_011_block_size_16_runs_flashmla_64(v3):
    typed, own = _plan(v3, "H200", "0.11", 16), _plan(v3, "H200", "0.11", None)
    assert typed.block_size == 64 and own.block_size == 64
    rank = min(typed.ranks, key=lambda r: r.num_blocks)
    assert rank.kv_bytes_per_token == PER_TOKEN and rank.bytes_per_block == 64 * 70_272 == 4_497_408
    # 43,657,510,577 B of pool // 4,497,408 B = 9,707 blocks (9,707 x 4,497,408 = 43,656,339,456)
    assert rank.kv_pool_bytes == 43_657_510_577 and typed.num_blocks == 43_657_510_577 // 4_497_408 == 9_707
    assert typed.kv_cache_tokens == 9_707 * 64 == 621_248  # not 38,829 blocks x 16
    assert typed.blocks_per_request == 8192 // 64 == 128
    assert (typed.num_blocks, typed.kv_cache_tokens) == (own.num_blocks, own.kv_cache_tokens)  # the flag changes nothing


def test_011_replaces_128_too_and_017_keeps_it(v3):
    # 0.11.0: "block_size != 64" -> 128 is replaced; 0.11.1 - 0.17: "% 64 != 0" -> 128 is kept
    assert _plan(v3, "H200", "0.11", 128).block_size == 64
    p = _plan(v3, "H200", "0.17", 128)
    assert p.block_size == 128 and p.ranks[0].bytes_per_block == 128 * 70_272 == 8_994_816
    # 0.17+ on Hopper keeps the Triton fused-MoE workspace of the block-FP8 experts held (VLLM_CHANGES
    # fp8_moe_hopper_triton): a 43,255,014,680 B pool; // 8,994,816 = 4,808 blocks
    assert p.ranks[0].kv_pool_bytes == 43_255_014_680
    assert p.kv_cache_tokens == p.num_blocks * 128 == 4_808 * 128 == 615_424
    p = _plan(v3, "H200", "0.17", 16)  # 16 % 64 != 0 -> 64; 43,255,014,680 // 4,497,408 = 9,617
    assert p.block_size == 64 and p.kv_cache_tokens == 9_617 * 64 == 615_488


def test_b200_cutlass_128_and_flashinfer_64(v3):
    # CUTLASS MLA: 0.11.0 != 128, 0.14 % 128 != 0 -> 128; the same 81,040,905,921 B pool // 8,994,816 = 9,009 blocks
    for version, typed in (("0.11", 16), ("0.14", 64)):
        p = _plan(v3, "B200", version, typed)
        assert p.block_size == 128 and p.num_blocks == 81_040_905_921 // 8_994_816 == 9_009, (version, typed)
        assert p.kv_cache_tokens == 9_009 * 128 == 1_153_152
    # 0.15 - 0.17: FlashInfer MLA (qk_nope_head_dim 128) keeps 32, replaces 16 with 64
    assert _plan(v3, "B200", "0.16", 32).block_size == 32
    p = _plan(v3, "B200", "0.16", 16)
    assert p.block_size == 64 and p.kv_cache_tokens == 18_019 * 64 == 1_153_216


def test_from_018_the_typed_size_is_kept(v3):
    p = _plan(v3, "H200", "0.19", 16)
    assert p.block_size == 16 and p.ranks[0].bytes_per_block == 16 * 70_272 == 1_124_352
    assert p.kv_cache_tokens == 43_255_014_680 // 1_124_352 * 16 == 38_471 * 16 == 615_536
    assert _plan(v3, "B200", "0.19", 16).block_size == 16  # FLASHINFER_MLA [32, 64] skipped, not the size
    assert vllm_mla_block_forced(16, "B200", "0.33") == (16, None, "")


def test_a_non_mla_model_and_triton_mla_keep_the_typed_size():
    llama = load_preset("llama-3.1-8b")
    assert _plan(llama, "H200", "0.11", 128, tp=1).block_size == 128
    assert _plan(llama, "B200", "0.14", 64, tp=1).block_size == 64
    lite = load_preset("deepseek-v2-lite")  # 27 layers x 576 x 2 = 31,104 B a token
    p = _plan(lite, "A100-80GB", "0.11", 32, tp=1)  # TRITON_MLA: no forcing off Hopper / B200
    assert p.block_size == 32 and p.kv_cache_tokens == 44_073 * 32 == 1_410_336
    assert _plan(lite, "MI300X", "0.11", 32, tp=1).block_size == 32  # platforms/rocm.py forces no MLA block


def test_the_rule_by_release():
    # (typed, gpu, version, kv_quantized, qk_nope_head_dim) -> (block, the backend the log names, the sizes kept)
    assert vllm_mla_block_forced(16, "H200", "0.11") == (64, "FlashMLA", "64 only")
    assert vllm_mla_block_forced(64, "H200", "0.11") == (64, None, "")
    assert vllm_mla_block_forced(256, "H200", "0.17") == (256, None, "")  # 256 % 64 == 0
    assert vllm_mla_block_forced(32, "H100-SXM", "0.12", True) == (64, "FlashMLA", "multiples of 64")  # fp8 alike
    assert vllm_mla_block_forced(64, "B200", "0.11") == (128, "CUTLASS_MLA", "128 only")
    assert vllm_mla_block_forced(256, "B200", "0.14") == (256, None, "")
    assert vllm_mla_block_forced(16, "B200", "0.17") == (64, "FlashInferMLA", "32 or multiples of 64")
    assert vllm_mla_block_forced(128, "B200", "0.17") == (128, None, "")
    assert vllm_mla_block_forced(64, "B200", "0.17", qk_nope_head_dim=96) == (128, "CUTLASS_MLA", "multiples of 128")
    assert vllm_mla_block_forced(8, "L40S", "0.11") == (8, None, "")


def test_one_table_for_backend_and_default_block():
    assert vllm_mla_default("H200", "0.11") == ("FLASHMLA", 64)
    assert vllm_mla_default("H200", "0.17") == ("FLASH_ATTN_MLA", 64)  # FlashMLA's block, the FA MLA kernel
    assert vllm_mla_default("H200", "0.17", kv_quantized=True) == ("FLASHMLA", 64)
    assert vllm_mla_default("B200", "0.14") == ("CUTLASS_MLA", 128)
    assert vllm_mla_default("B200", "0.15") == ("FLASHINFER_MLA", 64)  # the 0.15.0 wheel, qk_nope_head_dim 128
    assert vllm_mla_default("B200", "0.15", qk_nope_head_dim=96) == ("CUTLASS_MLA", 128)
    assert vllm_mla_default("H200", "0.19") == ("FLASH_ATTN_MLA", 16)
    assert vllm_mla_default("B200", "0.33") == ("FLASHINFER_MLA", 32)
    assert vllm_mla_default("MI300X", "0.33") == ("TRITON_MLA", 16)


def test_dsa_takes_flashmla_sparse_64_through_017():
    # 0.11.0 - 0.17.x platforms/cuda.py: "if use_sparse and cache_config.block_size != 64" -> 64; from 0.18 kept.
    # DeepSeek-V3.2 TP8: 61 x (1,152 latent + 132 indexer key) = 78,324 B a token; 64 x 78,324 = 5,012,736 B a block
    v32 = load_preset("deepseek-v3.2")
    typed, own = _plan(v32, "H200", "0.11", 16), _plan(v32, "H200", "0.11", None)
    assert typed.block_size == own.block_size == 64 and typed.ranks[0].bytes_per_block == 64 * 78_324 == 5_012_736
    assert typed.num_blocks == 42_689_704_785 // 5_012_736 == 8_516 == own.num_blocks
    assert typed.kv_cache_tokens == 8_516 * 64 == 545_024
    assert _plan(v32, "H200", "0.17", 128).block_size == 64  # != 64, not a multiple rule
    assert _plan(v32, "B200", "0.14", 32).block_size == 64
    p = _plan(v32, "H200", "0.19", 128)
    # 42,287,208,888 B of pool (the held Triton MoE workspace, as above) // (128 x 78,324 = 10,025,472) = 4,217
    assert p.block_size == 128 and p.ranks[0].kv_pool_bytes == 42_287_208_888
    assert p.kv_cache_tokens == 4_217 * 128 == 539_776
    assert vllm_sparse_mla_block_forced(16, "H200", "0.11") == (64, "FlashMLASparse", "64 only")
    assert vllm_sparse_mla_block_forced(64, "H200", "0.11") == (64, None, "")
    assert vllm_sparse_mla_block_forced(16, "A100-80GB", "0.11") == (16, None, "")


def test_from_018_a_size_no_mla_backend_runs_is_refused(v3):
    # 0.18.0 / 0.19.0 / 0.33.0: the selector passes the typed size to every backend; TRITON_MLA and FLASH_ATTN_MLA take
    # block_size % 16 == 0, the others 64 / 32, 64 / 128: 8 starts none ("No valid attention backend found")
    from kvplan.errors import PlanInputError

    with pytest.raises(PlanInputError, match="starts no MLA attention backend at --block-size 8"):
        _plan(v3, "H200", "0.19", 8)
    assert _plan(v3, "H200", "0.19", 32).block_size == 32
    assert _plan(v3, "H200", "0.11", 8).block_size == 64  # 0.11: FlashMLA replaces it
    assert _plan(load_preset("llama-3.1-8b"), "H200", "0.19", 8, tp=1).block_size == 8  # not MLA: not this rule


@pytest.mark.parametrize("version", ["0.18", "0.19", "0.25", "0.28", "0.30", "0.33"])
def test_from_018_a_dsa_block_not_a_multiple_of_64_is_refused(version):
    # 0.18.0 - 0.34.0 keep a typed size (update_block_size_for_backend). The selector gives a DSA layer the sparse
    # MLA backends only: FLASHMLA_SPARSE [64] (+ FLASH_ATTN_MLA_SPARSE [64] from 0.25, FLASHINFER_MLA_SPARSE_SM90
    # [MultipleOf(64)] from 0.30) on Hopper: 16 % 64 != 0 and 32 % 64 != 0 -> "No valid attention backend found". On
    # a B200 FLASHINFER_MLA_SPARSE takes 32 (32 % 32 == 0: [32, 64] through 0.31, MultipleOf(32) from 0.32), but the
    # indexer cache's kernel block is [64]: select_common_block_size finds no explicit size dividing 32 ("No common
    # block size for 32"). 192 = 3 x 64 runs as typed: 192 x 78,324 = 15,038,208 B a block (DeepSeek-V3.2 TP 8)
    from kvplan.errors import PlanInputError

    v32 = load_preset("deepseek-v3.2")
    for gpu, typed in (("H200", 16), ("H200", 32), ("B200", 32), ("B200", 96)):
        with pytest.raises(PlanInputError, match=f"does not start this DSA model at --block-size {typed}"):
            _plan(v32, gpu, version, typed)
    p = _plan(v32, "H200", version, 192)
    assert p.block_size == 192 and p.ranks[0].bytes_per_block == 192 * 78_324 == 15_038_208
    assert _plan(v32, "B200", version, 64).block_size == 64
    # through 0.17 the same 16 is replaced by 64 (the test above), not refused
    assert _plan(v32, "H200", "0.17", 16).block_size == 64


@pytest.mark.parametrize("version", ["0.10", "0.10.2", "0.11", "0.11.1", "0.12"])
@pytest.mark.parametrize("gpu", ["B300", "GB300"])
def test_b300_runs_triton_mla_at_16_before_013(v3, gpu, version):
    # 0.10.1.1 - 0.12.0 platforms/cuda.py check_and_update_config: "if cls.is_device_capability(100)" (SM 10.0 exactly)
    # picks CUTLASS_MLA; a B300 / GB300 is SM 10.3, so use_flashmla, which forces nothing off Hopper
    # (is_flashmla_supported / is_flashmla_dense_supported: capability major 9): the block stays 16. The backend:
    # 0.10.x / 0.11.0 get_attn_backend_cls (CUTLASS / FlashInfer MLA need is_device_capability(100), FlashMLA and
    # FA-MLA capability 9) and 0.11.1 / 0.12.0 _get_backend_priorities (major 10: CUTLASS_MLA [128], FLASHINFER_MLA
    # [32, 64], FLASH_ATTN_MLA, FLASHMLA [64] refuse 16) -> TRITON_MLA. DeepSeek-V3 TP 8, a 20 GiB pool: 16 x 70,272
    # = 1,124,352 B a block, 21,474,836,480 // 1,124,352 = 19,099 blocks = 305,584 tokens (B200: CUTLASS_MLA 128)
    assert vllm_mla_default(gpu, version) == ("TRITON_MLA", 16)
    assert vllm_mla_default("B200", version) == ("CUTLASS_MLA", 128)
    assert vllm_mla_block_forced(64, gpu, version) == (64, None, "")  # nothing forced: the typed size runs
    p = plan(v3, get_gpu(gpu), EngineConfig(vllm_version=version, max_model_len=8192,
                                            kv_cache_memory_bytes=20 * 2**30), Layout(tp=8))
    assert p.block_size == 16 and p.ranks[0].bytes_per_block == 16 * PER_TOKEN == 1_124_352
    assert p.num_blocks == 19_099 and p.kv_cache_tokens == 305_584


@pytest.mark.parametrize("gpu", ["B300", "GB300"])
def test_b300_takes_the_blackwell_mla_rules_from_013(v3, gpu):
    # 0.13.0 - 0.17.x test is_device_capability_family(100): SM 10.3 is Blackwell there. 0.13 / 0.14 CUTLASS_MLA
    # forced to 128: 8,994,816 B a block, 20 GiB // that = 2,387 blocks = 305,536 tokens; 0.15 FLASHINFER_MLA 64
    assert vllm_mla_default(gpu, "0.13") == vllm_mla_default(gpu, "0.14") == ("CUTLASS_MLA", 128)
    assert vllm_mla_default(gpu, "0.15") == ("FLASHINFER_MLA", 64)
    assert vllm_mla_block_forced(64, gpu, "0.13") == (128, "CUTLASS_MLA", "multiples of 128")
    p = plan(v3, get_gpu(gpu), EngineConfig(vllm_version="0.13", max_model_len=8192,
                                            kv_cache_memory_bytes=20 * 2**30), Layout(tp=8))
    assert p.block_size == 128 and p.num_blocks == 2_387 and p.kv_cache_tokens == 305_536
