"""Which engine release can load a model, and which platforms an engine runs on.

A plan for a vLLM release that has no model class for the architecture, or for an engine on a platform it does not
run on, is a confident wrong answer: these rules refuse such plans (``PlanInputError``) before any figure is made.

Sources (read 2026-12):
- arrivals: ``vllm/model_executor/models/registry.py`` of the PyPI wheels of 0.6.4.post1 - 0.7.2, 0.7.3, 0.8.5, 0.9.2
  and every release 0.10.0 - 0.33.0 (``pip download vllm==X --no-deps``; 0.10.1 itself was not read, 0.10.1.1 was);
- platforms: vLLM's installation page (NVIDIA CUDA, AMD ROCm, Intel Gaudi: in-tree HPU for the V0 releases, the
  vllm-project/vllm-gaudi plugin from the V1 releases on); SGLang's "Hardware Platforms" page
  (docs.sglang.io/docs/hardware-platforms/overview.md: NVIDIA GPUs, AMD GPUs, Ascend NPUs, CPU, Jetson, TPU, XPU;
  no Intel Gaudi; its ``--device hpu`` string has no attention backend behind it);
- sparse MLA on ROCm: ``vllm/platforms/rocm.py`` get_attn_backend_cls: 0.11.0 - 0.11.2 ``raise
  NotImplementedError("Sparse Attention is not supported on ROCm.")``, 0.12.0 on ROCM_AITER_MLA_SPARSE; SGLang 0.5.19
  server_args.py lists the "aiter" and "tilelang" DSA backends (it serves sparse MLA on AMD).
"""

import re

from kvplan.engines import VLLM_PROFILES, Release, vllm_release
from kvplan.errors import PlanInputError
from kvplan.gpus import GpuSpec

# model_type(s) -> (vLLM architecture, first release whose registry has it, what was read). Where releases between
# the last wheel read without the class and the first read with it were not read, "first" is the release after the
# last without it (0.7.4 for "absent from 0.7.3"), so only profiles wholly before it are refused, and the message
# names the bracket (``_shown``).
VLLM_ARCH_ARRIVALS: dict[tuple[str, ...], tuple[str, Release, str]] = {
    ("deepseek_v3",): ("DeepseekV3ForCausalLM", (0, 6, 6), "0.6.6.post1 registry; absent from 0.6.5"),
    ("qwen3",): ("Qwen3ForCausalLM", (0, 7, 4), "absent from 0.7.3, present in 0.8.5 (0.8.0 - 0.8.4 not read)"),
    ("qwen3_moe",): ("Qwen3MoeForCausalLM", (0, 7, 4), "absent from 0.7.3, present in 0.8.5 (0.8.0 - 0.8.4 not read)"),
    ("llama4", "llama4_text"): ("Llama4ForConditionalGeneration", (0, 7, 4),
                                "absent from 0.7.3, present in 0.8.5 (0.8.0 - 0.8.4 not read)"),
    ("gemma3", "gemma3_text"): ("Gemma3ForCausalLM", (0, 7, 4),
                                "absent from 0.7.3, present in 0.8.5 (0.8.0 - 0.8.4 not read)"),
    ("nemotron_h",): ("NemotronHForCausalLM", (0, 8, 6), "absent from 0.8.5, present in 0.9.2 (0.9.0 - 0.9.1 not read)"),
    ("gpt_oss",): ("GptOssForCausalLM", (0, 10, 1), "absent from 0.10.0, present in 0.10.1.1 (0.10.1 not read)"),
    ("qwen3_next",): ("Qwen3NextForCausalLM", (0, 10, 2), "0.10.2 registry; absent from 0.10.1.1"),
    ("deepseek_v32",): ("DeepseekV32ForCausalLM", (0, 11, 0), "0.11.0 registry; absent from 0.10.2"),
    ("qwen2_5_vl", "qwen2_5_vl_text"): ("Qwen2_5_VLForConditionalGeneration", (0, 7, 2),
                                        "0.7.2 registry; absent from 0.7.1"),
    ("qwen3_vl", "qwen3_vl_text"): ("Qwen3VLForConditionalGeneration", (0, 11, 0), "0.11.0 registry; absent from 0.10.2"),
    ("qwen3_vl_moe", "qwen3_vl_moe_text"): ("Qwen3VLMoeForConditionalGeneration", (0, 11, 0),
                                            "0.11.0 registry; absent from 0.10.2"),
    ("minimax_m2",): ("MiniMaxM2ForCausalLM", (0, 11, 1), "0.11.1 registry; absent from 0.11.0"),
    ("mimo_v2_flash",): ("MiMoV2FlashForCausalLM", (0, 14, 0), "0.14.0 registry; absent from 0.13.0"),
    ("glm_moe_dsa",): ("GlmMoeDsaForCausalLM", (0, 16, 0), "0.16.0 registry; absent from 0.15.1"),
    ("qwen3_5", "qwen3_5_text"): ("Qwen3_5ForConditionalGeneration", (0, 17, 0), "0.17.0 registry; absent from 0.16.0"),
    ("qwen3_5_moe", "qwen3_5_moe_text"): ("Qwen3_5MoeForConditionalGeneration", (0, 17, 0),
                                          "0.17.0 registry; absent from 0.16.0"),
    ("gemma4", "gemma4_text"): ("Gemma4ForConditionalGeneration", (0, 19, 0), "0.19.0 registry; absent from 0.18.1"),
    ("deepseek_v4",): ("DeepseekV4ForCausalLM", (0, 20, 0),
                       "0.20.0 wheel registry; absent from the 0.19.0 wheel (0.19.1 not read)"),
}
_ARRIVAL = {mt: entry for types, entry in VLLM_ARCH_ARRIVALS.items() for mt in types}

# (engine, catalog vendor) pairs that do not run, and why. vLLM runs on all three catalog vendors (CUDA, ROCm, and
# Intel Gaudi: in-tree HPU in the V0 releases, the vllm-gaudi plugin in V1); SGLang on NVIDIA and AMD.
_NO_PLATFORM = {("sglang", "Intel"): "SGLang does not run on Intel Gaudi: its Hardware Platforms page lists NVIDIA and "
                                    "AMD GPUs, Ascend NPUs, TPU, Intel XPU and CPU, and no Gaudi (HPU) backend"}
# vLLM's sparse-MLA (DSA) backend on ROCm: ROCM_AITER_MLA_SPARSE from 0.12.0 (platforms/rocm.py)
VLLM_ROCM_SPARSE_MLA: Release = (0, 12, 0)


def on_gaudi(gpu: GpuSpec) -> bool:
    """True for an Intel Gaudi (catalog vendor "Intel"): there vLLM does not run its CUDA / ROCm code paths but the
    HPU platform, from the V1 releases on the vllm-gaudi plugin (vllm-project/vllm-gaudi: its own platform, worker,
    model runner and memory profiler, so its own block size, memory budget, start-up lines and attention), in the V0
    releases HabanaAI/vllm-fork's in-tree HPU backend. Every Gaudi rule of a vLLM plan keys off this one test.
    Worked example: Gaudi3 -> True; H200, MI300X, a custom GPU -> False."""
    return gpu.vendor == "Intel"


# vllm-project/vllm-gaudi vllm_gaudi/platform.py (commits 00db483 and 676e6aa, the snapshots read 2026-12-02): the HPU
# platform's supported_quantization (compressed-tensors, fp8, inc, awq_hpu, gptq_hpu), its default KV block (128 when
# --block-size is not given: "default block size for Gaudi should be 128") and its only quantized KV dtype (fp8_inc).
GAUDI_VLLM_QUANTIZATION = ("compressed-tensors", "fp8", "inc", "awq_hpu", "gptq_hpu")
GAUDI_VLLM_BLOCK_SIZE = 128
# kvplan's checkpoint formats whose vLLM method the plugin does not list (mxfp4: gpt-oss; nvfp4 / nvfp4-wo: modelopt_fp4)
_GAUDI_UNLISTED_FORMATS = {"mxfp4": "mxfp4", "nvfp4": "modelopt_fp4 / NVFP4", "nvfp4-wo": "modelopt_fp4 / NVFP4"}


def gaudi_quantization_note(quantization: str | None) -> str | None:
    """A warning for a vLLM plan on Gaudi of a checkpoint format the vllm-gaudi plugin does not list (None otherwise).
    Worked example: "mxfp4" (gpt-oss) -> a note naming vllm_gaudi/platform.py's list; "fp8-block" -> None."""
    method = _GAUDI_UNLISTED_FORMATS.get(quantization or "")
    if method is None:
        return None
    return (f"Intel Gaudi: the vllm-gaudi plugin's platform (vllm_gaudi/platform.py, snapshots read 2026-12) lists "
            f"{', '.join(GAUDI_VLLM_QUANTIZATION)} and not {method}: vLLM on Gaudi refuses this checkpoint or loads it "
            "another way, so these weight and KV figures (the packed format as on a GPU) are not Gaudi's")


def _profile_span(version: str) -> tuple[Release, Release | None]:
    """The releases a profile key stands for: [its first release, the next profile's first release)."""
    first = vllm_release(version)
    later = sorted(p.first_release for p in VLLM_PROFILES.values() if p.first_release > first)
    return first, (later[0] if later else None)


def _dotted(r: Release) -> str:
    return ".".join(str(x) for x in r)


def _shown(first: Release, read: str) -> str:
    """The first release as the wheels read pin it: "0.11.0", or "0.8.5 or a release of 0.7.4 - 0.8.4 (not read)"."""
    m = re.match(r"absent from ([\d.]+), present in ([\d.]+) \((.*) not read\)", read)
    return f"{m.group(2)} or an earlier release after {m.group(1)} ({m.group(3)} not read)" if m else _dotted(first)


def vllm_arrival(model_type: str, version: str) -> str | None:
    """Refuse (PlanInputError, field "vllm_version") a vLLM profile none of whose releases has the model class; a
    warning (str) when only its later releases have it; None when all do. Worked example: glm_moe_dsa on "0.15"
    (0.15.0 - 0.15.1) is refused, GlmMoeDsaForCausalLM arrives in 0.16.0; gpt_oss on "0.10" (0.10.0 - 0.10.1.1)
    warns."""
    entry = _ARRIVAL.get(model_type)
    if entry is None:
        return None
    arch, first, read = entry
    lo, hi = _profile_span(version)
    if lo >= first:
        return None
    if hi is not None and hi <= first:
        raise PlanInputError("vllm_version", f"vLLM {version} cannot load {model_type!r}: its registry has no "
                             f"{arch}; the first vLLM release that serves it is {_shown(first, read)}. Pick "
                             "a vLLM version from that release on")
    return (f"vLLM {version}: {arch} ({model_type!r}) arrived in {_shown(first, read)}; the releases of this "
            "profile before it cannot load the model")


def platform_refusal(engine: str, vendor: str, vllm_version: str, sparse_mla: bool) -> str | None:
    """Why ``engine`` cannot serve this model on a ``vendor`` GPU (None: it can, or kvplan has no rule)."""
    if (engine, vendor) in _NO_PLATFORM:
        return _NO_PLATFORM[(engine, vendor)]
    if engine == "vllm" and vendor == "AMD" and sparse_mla:
        lo, hi = _profile_span(vllm_version)
        if hi is not None and hi <= VLLM_ROCM_SPARSE_MLA:
            return (f"vLLM {vllm_version} has no sparse-MLA (DSA) backend on ROCm (platforms/rocm.py: "
                    "\"Sparse Attention is not supported on ROCm.\" through 0.11.2; ROCM_AITER_MLA_SPARSE from "
                    f"{_dotted(VLLM_ROCM_SPARSE_MLA)})")
    return None


def check_platform(engine: str, vendor: str, gpu_name: str, vllm_version: str, sparse_mla: bool) -> None:
    """Refuse a plan on a platform the engine does not run on (field "gpu")."""
    why = platform_refusal(engine, vendor, vllm_version, sparse_mla)
    if why:
        raise PlanInputError("gpu", f"{gpu_name}: {why}")
