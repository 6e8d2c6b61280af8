"""Verdicts, refusals and fixes from the 2026-12 UI audit.

1. Weights larger than the GPU: the engine dies in load_model with torch's CUDA OOM before it logs any memory figure
   (kvplan.plan._load_oom); no "Model loading took 755.99 GiB" line vLLM would never print.
2. A vLLM release that has no model class for the architecture is refused (kvplan.support.VLLM_ARCH_ARRIVALS, read in
   the wheels' model_executor/models/registry.py, 2026-12).
3. Fixes: more GPUs (TP, then PP over two nodes), fp8 weights, a larger GPU of the same vendor; each re-planned.
4. Engine platforms: SGLang does not run on Gaudi; vLLM < 0.12 has no sparse-MLA backend on ROCm.
"""

import pytest

from kvplan import load_preset
from kvplan import plan as plan_module
from kvplan.engines import EngineConfig
from kvplan.errors import PlanInputError
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.picker import pick_gpus
from kvplan.plan import plan
from kvplan.units import GiB

H100 = get_gpu("H100")
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ... GPU 0 has a total capacity of 79.19 GiB"


def _405b():
    return load_preset("llama-3.1-405b")


# --- 1. weights over the GPU -------------------------------------------------------------------------------------

def test_405b_on_one_h100_dies_loading_not_in_the_kv_check():
    # 755.99 GiB of bf16 weights on one H100 (79.19 GiB): free at load 79.19 - 0.51 (CUDA context) = 78.68 GiB,
    # 755.99 - 78.68 = 677.31 GiB short
    p = plan(_405b(), H100, EngineConfig())
    assert not p.fits and not p.starts
    assert p.start_error.startswith(OOM) and "No available memory" not in p.start_error
    assert "(kvplan: raised in vLLM's load_model (gpu_model_runner.py)" in p.start_error
    assert "755.99 GiB, 677.31 GiB more than the 78.68 GiB free" in p.start_error
    assert p.verdict.startswith("Does not load: the weights of one GPU (stage 0) are 755.99 GiB, more than the "
                                "78.68 GiB free on one H100-SXM (79.19 GiB)")
    assert "No available memory" not in p.verdict
    assert p.engine_log == []  # vLLM logs no memory figure before load_model (no "Model loading took 755.99 GiB")


def test_405b_oom_on_sglang_keeps_the_load_weight_begin_line():
    p = plan(_405b(), H100, EngineConfig(engine="sglang"))
    assert p.engine_log == ["Load weight begin. avail mem=78.45 GB"]  # SGLang's pre-load reading, then the OOM
    assert p.start_error.startswith(OOM) and "SGLang's ModelRunner.load_model" in p.start_error
    # 755.96 GiB (SGLang's weights + loading overhead) - 78.45 free = 677.51
    assert "755.96 GiB, 677.51 GiB more than the 78.45 GiB free" in p.start_error
    assert p.verdict.startswith("Does not load:") and not p.starts


def test_405b_oom_on_the_v0_engine():
    p = plan(_405b(), H100, EngineConfig(vllm_version="0.7"))
    assert p.engine_log == [] and "load_model (V0 worker)" in p.start_error and p.start_error.startswith(OOM)


def test_weights_that_fit_but_leave_no_room_keep_the_kv_refusal():
    # GLM-5 bf16 on 8 x B200: 19.90 GiB too little after the weights load (19.16 before the DSA buffers in the weights,
    # kvplan.vllm_layouts: the 0.125 GiB top-k index buffer, 16,384 batched tokens x 2048 x 4 B, and 0.33's 78 index
    # groups of (1,024 + 1) x 2048 x 4 B + 4,608, 0.61 GiB): vLLM logs its figures and refuses the pool
    # (18.60 with the fixed 0.71 GiB CUDA-graph fit; 19.90 with the model-shaped estimate at 51 + 51 graphs, 1.28 GiB).
    # From 0.28.0 a B200 (capability family 100) captures up to 1024 tokens (kvplan.engines VLLM_CHANGES
    # capture_1024_sm100): min(2 x 1024 seqs, 1024) -> 83 + 83 graphs, 80 MiB + 2 x 1024 x 4,608 x 2 B + 164 x 78 MoE
    # layers x 160 KiB (V2) = 2,198,601,728 B = 2.05 GiB, 0.77 more: 20.67 GiB too little. The bf16 experts'
    # TritonExperts workspace, (16,384 x 8 x 6,144 x 2) x 2 = 3,221,225,472 B held, sits under the forward's peak too
    # (kvplan.plan.activation_estimate): the forward without the routed experts 16,384 x (4 x 6,144 + 45,056 / 8 +
    # 24,576 / 8) x 2 = 1,090,519,040 + the indexer's 536,870,912 dummy logits + the held 3 GiB = 4,848,615,424 B
    # against the V2 sampler's 518,520,832 + 3 GiB = 3,739,746,304 before: 1.03 GiB more, 21.71 GiB too little
    p = plan(load_preset("glm-5"), get_gpu("B200"), EngineConfig(), Layout(tp=8))
    assert p.start_error.startswith("ValueError: No available memory for the cache blocks")
    assert "21.71 GiB too little" in p.verdict and p.engine_log[0].startswith("Model loading took")
    graphs = next(t.bytes for t in p.ranks[0].terms if t.name.startswith("CUDA graphs"))
    assert graphs == 80 * 2**20 + 2 * 1024 * 4608 * 2 + 164 * 78 * 160 * 1024 == 2_198_601_728


# --- 2. the release that first serves the architecture -----------------------------------------------------------

@pytest.mark.parametrize("name, version, first", [
    ("deepseek-v3.2", "0.10.2", "0.11.0"),  # DeepseekV32ForCausalLM: 0.11.0 registry, absent from 0.10.2
    ("qwen3-8b", "0.6.5", "0.8.5 or an earlier release after 0.7.3"),  # a V0 profile (0.8.0 - 0.8.4 not read)
    ("glm-5", "0.15", "0.16.0"),  # GlmMoeDsaForCausalLM: 0.16.0, absent from 0.15.1
    ("qwen3-next-80b-a3b", "0.10", "0.10.2"),
    ("qwen3.5-27b", "0.16", "0.17.0"),
    ("gemma-4-26b-a4b", "0.18", "0.19.0"),
    ("minimax-m2.7", "0.11", "0.11.1"),
])
def test_a_release_without_the_model_class_is_refused(name, version, first):
    with pytest.raises(PlanInputError) as caught:
        plan(load_preset(name), H100, EngineConfig(vllm_version=version), Layout(tp=8))
    assert caught.value.field == "vllm_version"
    assert f"vLLM {version} cannot load" in caught.value.message
    assert f"the first vLLM release that serves it is {first}" in caught.value.message


def test_the_arrival_release_itself_plans():
    p = plan(load_preset("glm-5"), get_gpu("B300"), EngineConfig(vllm_version="0.16"), Layout(tp=8))
    assert not any("arrived" in w for w in p.warnings)


def test_a_profile_whose_later_releases_serve_it_warns():
    # "0.10" is 0.10.0 - 0.10.1.1: GptOssForCausalLM is absent from 0.10.0, present in 0.10.1.1
    p = plan(load_preset("gpt-oss-20b"), H100, EngineConfig(vllm_version="0.10"))
    assert any(w.startswith("vLLM 0.10: GptOssForCausalLM ('gpt_oss') arrived in 0.10.1.1 or an earlier release "
                            "after 0.10.0") for w in p.warnings)


# --- 3. fixes, each planned ----------------------------------------------------------------------------------------

def test_405b_on_one_h100_gets_more_gpus_and_fp8_fixes():
    # TP 8 in bf16 is still 94.5 GiB a GPU: TP 8 x PP 2 (47.25 GiB) or TP 8 in fp8 (~47.6 GiB) fit
    p = plan(_405b(), H100, EngineConfig())
    assert p.suggestions == ["-tp 8 -pp 2: 5 x 131,072 tokens fit on 16 GPUs (2 nodes)",
                             "-tp 8 --quantization fp8: 2 x 131,072 tokens fit on 8 GPUs (1 node)"]
    assert plan(_405b(), H100, EngineConfig(), Layout(tp=8, pp=2), suggest=False).max_num_seqs_at_len == 5
    assert plan(_405b(), H100, EngineConfig(weight_format="fp8"), Layout(tp=8), suggest=False).fits


def test_glm5_bf16_on_8_b200_suggests_b300_not_only_mi325x():
    p = plan(load_preset("glm-5"), get_gpu("B200"), EngineConfig(), Layout(tp=8))
    assert p.suggestions == ["--quantization fp8: 6 x 202,752 tokens fit",
                             "-tp 8 -pp 2: 12 x 202,752 tokens fit on 16 GPUs (2 nodes)",
                             "a larger GPU: B300: 5 x 202,752 tokens fit"]  # 6 before the 0.74 GiB DSA buffers
    assert plan(load_preset("glm-5"), get_gpu("B300"), EngineConfig(), Layout(tp=8), suggest=False).fits


def test_fewer_sequences_is_offered_when_more_were_asked_than_fit():
    spec = load_preset("llama-3.1-8b")
    base = plan(spec, H100, EngineConfig(max_model_len=131072), suggest=False)
    asked = base.max_num_seqs_at_len + 10
    p = plan(spec, H100, EngineConfig(max_model_len=131072), concurrency=asked)
    whole = base.max_num_seqs_at_len
    assert f"--max-num-seqs {whole}: {whole} x 131,072 tokens fit ({asked} were asked)" in p.suggestions
    assert len(p.suggestions) <= plan_module.MAX_SUGGESTIONS


def test_a_plan_that_fits_computes_no_fix(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("suggestions computed for a plan that fits")
    monkeypatch.setattr(plan_module, "_suggestions", boom)
    assert plan(load_preset("llama-3.1-8b"), H100, EngineConfig()).fits


# --- 4. engine platforms -------------------------------------------------------------------------------------------

def test_sglang_on_gaudi_is_refused_and_the_picker_rejects_it():
    with pytest.raises(PlanInputError) as caught:
        plan(load_preset("llama-3.1-8b"), get_gpu("Gaudi3"), EngineConfig(engine="sglang"))
    assert caught.value.field == "gpu" and "SGLang does not run on Intel Gaudi" in caught.value.message
    got = pick_gpus(load_preset("llama-3.1-70b"), 32768, 16, EngineConfig(engine="sglang"))
    assert not any(o.gpu == "Gaudi3" for o in got.options)
    gaudi = [r for r in got.rejected if r.gpu == "Gaudi3"
             and r.tensor_parallel_size * r.pipeline_parallel_size <= 8]  # larger replicas: the node check first
    assert gaudi and all(r.reason.startswith("Not served: SGLang does not run on Intel Gaudi") for r in gaudi)


def test_vllm_0_11_sparse_mla_on_rocm_is_refused():
    mi300x = get_gpu("MI300X")
    spec = load_preset("deepseek-v3.2")
    with pytest.raises(PlanInputError) as caught:
        plan(spec, mi300x, EngineConfig(vllm_version="0.11.1"), Layout(tp=8))
    assert caught.value.field == "gpu" and "Sparse Attention is not supported on ROCm." in caught.value.message
    assert plan(spec, mi300x, EngineConfig(vllm_version="0.12"), Layout(tp=8)).fits  # ROCM_AITER_MLA_SPARSE
    got = pick_gpus(spec, 32768, 4, EngineConfig(vllm_version="0.11"))
    assert got.options and not any(get_gpu(o.gpu).vendor == "AMD" for o in got.options)
    assert any(r.gpu == "MI300X" and "no sparse-MLA (DSA) backend on ROCm" in r.reason for r in got.rejected)


def test_a_checkpoint_that_ships_quantized_gets_no_quantization_fp8_fix():
    # DeepSeek-V3 ships fp8-block (quantization_config quant_method "fp8"): "--quantization fp8" would not shrink its
    # weights and vLLM refuses a --quantization unlike the config's method. Before the fix, TP 4 on H100 got
    # "-tp 8 -pp 2 --quantization fp8" beside the plain "-tp 8 -pp 2"; DeepSeek-V4-Flash (fp8 + MXFP4 experts) on one
    # H200 got "-tp 4 --quantization fp8" after "-tp 2".
    p = plan(load_preset("deepseek-v3"), H100, EngineConfig(), Layout(tp=4))
    assert p.suggestions == ["-tp 8 -pp 2: 5 x 163,840 tokens fit on 16 GPUs (2 nodes)"]
    p = plan(load_preset("deepseek-v4-flash"), get_gpu("H200"), EngineConfig(), Layout(tp=1))
    assert p.suggestions[0].startswith("-tp 2: ") and not any("--quantization" in s for s in p.suggestions)
