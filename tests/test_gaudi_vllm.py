"""vLLM on Intel Gaudi (the vllm-project/vllm-gaudi plugin, vllm_gaudi/platform.py at commits 00db483 and 676e6aa):
its default KV block is 128 (`cache_config.block_size = 128` when --block-size is not given) and its
supported_quantization is compressed-tensors, fp8, inc, awq_hpu, gptq_hpu: MXFP4 (gpt-oss) and NVFP4 (modelopt_fp4)
checkpoints are not listed, so their plans say so and the picker does not rank Gaudi for them."""

from kvplan import load_preset
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
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


def test_typed_kv_size_on_gaudi_prints_the_plugins_lines():
    # the GPU's vendor, not a budget row, picks vllm-gaudi's log: --kv-cache-memory-bytes leaves no HPU-graph row.
    # Llama-3.1-8B: 8,030,261,248 params x 2 B + its 131,072 x 128 x 2 B rotary table = 16,094,076,928 B = 14.9888
    # GiB ("Loading model weights took %.4f GB", hpu_model_runner.py load_model). 20 GiB = 21,474,836,480 B / (128
    # tokens x 131,072 B) = 1,280 blocks = 163,840 tokens, / 131,072 = 1.25x; one padding block allocated beside them
    from kvplan.parallel import Layout

    p = plan(load_preset("llama-3.1-8b"), GAUDI, EngineConfig(kv_cache_memory_bytes=20 * 2**30), Layout())
    assert p.ranks[0].weights_bytes == 8_030_261_248 * 2 + 131_072 * 128 * 2 == 16_094_076_928
    assert p.engine_log == [
        "Loading model weights took 14.9888 GB",
        "GPU KV cache size: 163,840 tokens, Maximum concurrency for 131,072 tokens per request: 1.25x",
        "Usable num_blocks: 1280, actual allocated num_blocks (max across layers): 1281"]
    # the plugin's HPUWorker.determine_available_memory never reads kv_cache_memory_bytes (vllm-gaudi @091bbad): said
    assert any("does not read it" in w and "--kv-cache-memory-bytes" in w for w in p.warnings)
    # a CUDA GPU keeps vLLM core's lines
    h100 = plan(load_preset("llama-3.1-8b"), get_gpu("H100-SXM"), EngineConfig(kv_cache_memory_bytes=20 * 2**30))
    assert h100.engine_log[0].startswith("Model loading took") and not any(
        "does not read it" in w for w in h100.warnings)


def test_gaudi_rows_once_each_the_weights_error_once():
    # the block-free budget is rebuilt around the same weights row: its Gaudi error clause appears once, and the
    # "(in weights)" rows follow the HPU worker's rows in the same order as before the rebuild
    from kvplan.parallel import Layout

    p = plan(load_preset("llama-3.1-70b"), GAUDI, EngineConfig(), Layout(tp=4))
    names = [t.name for t in p.ranks[0].terms]
    assert names == ["device memory", "weights", "dummy KV block (bound for the profile)", "Model profiling run",
                     "outside the budget: (1 - 0.92) x free device memory",
                     "reserved for HPUGraphs (VLLM_GRAPH_RESERVED_MEM=0.1)", "reserved for KV cache dummy block",
                     "caching-allocator rounding (in weights)", "rotary cos/sin caches (in weights)"]
    weights = p.ranks[0].terms[1].source
    assert weights.count("; on Gaudi: ") == 1 and "vllm-gaudi's HPUModelRunner.load_model" in weights
    assert "Loading model weights took" in weights and "vLLM's the" not in weights
    rope = p.ranks[0].terms[-1].source  # the plugin's load line, not vLLM core's (a plan per GPU: memo keyed by it)
    assert "inside 'Loading model weights took'" in rope and "Model loading took" not in rope
    h100 = plan(load_preset("llama-3.1-70b"), get_gpu("H100-SXM"), EngineConfig(), Layout(tp=4))
    assert "inside 'Model loading took'" in next(t.source for t in h100.ranks[0].terms if t.name.startswith("rotary"))


def test_dsa_on_gaudi_reads_every_latent_and_says_the_plugin_runs_dense_mla():
    # vllm-gaudi @091bbad attention/oot_mla.py: "DSA sparse attention is not implemented on HPU: sparse layers run
    # as dense MLA and the indexer must never be invoked". DeepSeek-V3.2 (61 DSA layers, 576-wide latent, top-k 2,048,
    # 128-wide fp8 indexer key + 4 B scale), one sequence at 163,840 tokens, bf16 KV, TP 8:
    # on an H200 a step reads 61 x (2,048 x 1,152 + 163,840 x 132) = 1,463,156,736 B of KV;
    # on a Gaudi 3 every token's latent and no indexer key: 61 x 163,840 x 1,152 = 11,513,364,480 B
    from kvplan.plan import decode_bound

    spec = load_preset("deepseek-v3.2")
    h200 = decode_bound(spec, get_gpu("H200"), Layout(tp=8), 90_000_000_000, 1, 163_840, 2)
    gaudi = decode_bound(spec, get_gpu("Gaudi3"), Layout(tp=8), 90_000_000_000, 1, 163_840, 2)
    assert h200.kv_bytes_per_step == 61 * (2_048 * 1_152 + 163_840 * 132) == 1_463_156_736
    assert gaudi.kv_bytes_per_step == 61 * 163_840 * 1_152 == 11_513_364_480
    p = plan(spec, get_gpu("Gaudi3"), EngineConfig(), Layout(tp=8), suggest=False)
    assert any("runs these layers as dense MLA and never runs the indexer" in w for w in p.warnings)
    dense = plan(load_preset("llama-3.1-8b"), get_gpu("Gaudi3"), EngineConfig(), Layout(1), suggest=False)
    assert not any("dense MLA" in w for w in dense.warnings)
