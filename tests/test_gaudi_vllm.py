"""vLLM on Intel Gaudi (the vllm-project/vllm-gaudi plugin, vllm_gaudi/platform.py at commits 00db483 and 676e6aa):
its default KV block is 128 (`cache_config.block_size = 128` when --block-size is not given) and its
supported_quantization is compressed-tensors, fp8, inc, awq_hpu, gptq_hpu: MXFP4 (gpt-oss) and NVFP4 (modelopt_fp4)
checkpoints are not listed, so their plans say so and the picker does not rank Gaudi for them."""

from kvplan import load_preset
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.picker import pick_gpus
from kvplan.plan import plan
from kvplan.support import gaudi_quantization_note

GAUDI = get_gpu("Gaudi3")


def test_gaudi_default_block_is_128():
    # Llama-3.1-8B: 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 131,072 B a token; a block of 128 tokens
    p = plan(load_preset("llama-3.1-8b"), GAUDI, EngineConfig(max_model_len=8192))
    r = p.ranks[0]
    assert p.block_size == 128 and r.bytes_per_block == 128 * 131_072 and r.num_blocks == r.kv_pool_bytes // (128 * 131_072)
    assert p.kv_cache_tokens == r.num_blocks * 128
    # an explicit --block-size wins; a CUDA GPU keeps 16
    assert plan(load_preset("llama-3.1-8b"), GAUDI, EngineConfig(max_model_len=8192, block_size=16)).block_size == 16
    assert plan(load_preset("llama-3.1-8b"), get_gpu("H100-SXM"), EngineConfig(max_model_len=8192)).block_size == 16


def test_unlisted_formats_warn_and_are_not_ranked():
    assert gaudi_quantization_note("fp8-block") is None and gaudi_quantization_note(None) is None
    note = gaudi_quantization_note("mxfp4")
    assert "not mxfp4" in note and "compressed-tensors, fp8, inc, awq_hpu, gptq_hpu" in note
    oss = load_preset("gpt-oss-120b")
    assert note in plan(oss, GAUDI, EngineConfig(max_model_len=8192)).warnings
    assert not any("vllm-gaudi" in w for w in plan(oss, get_gpu("H100-SXM"), EngineConfig(max_model_len=8192)).warnings)
    result = pick_gpus(oss, 8192, 1, EngineConfig(), gpus=[GAUDI, get_gpu("H100-SXM")])
    ranked = {o.gpu for o in result.options}
    assert "Gaudi3" not in ranked and "H100-SXM" in ranked
    assert any(r.gpu == "Gaudi3" and "vllm-gaudi" in r.reason for r in result.rejected)
