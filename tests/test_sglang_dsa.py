"""SGLang plans of DeepSeek sparse attention (DSA, "NSA" in SGLang: DeepSeek-V3.2, GLM-5), hand-derived from the
sglang 0.5.2 - 0.5.23 wheels (kvplan.sglang "DeepSeek sparse attention" section):

* page_size 64 on CUDA (server_args.py _handle_model_specific_adjustments "Setting page size to 64 for DeepSeek
  DSA."), 1 on ROCm in 0.5.8 - 0.5.13;
* --kv-cache-dtype auto -> fp8_e4m3 on SM >= 10, bfloat16 below (_set_default_nsa_kv_cache_dtype /
  overrides.py _dsa_kv_cache_dtype_default);
* profiled cell per layer: (512 + 64) x b + 132 B indexer key through 0.5.16; from 0.5.17 the backend's layout
  (calculate_mla_kv_cache_dim): the packed fp8 656 B, or the raw 576 B of trtllm, the SM >= 10 fp8 default from 0.5.10;
  the pool allocates that layout + 132 ("KV size" in the log).
DeepSeek-V3.2: 61 layers, kv_lora_rank 512, qk_rope_head_dim 64, index_head_dim 128; GLM-5: 78 such layers.
"""

from types import SimpleNamespace

import pytest

from kvplan import load_preset, sglang
from kvplan.engines import EngineConfig
from kvplan.errors import PlanInputError
from kvplan.gpus import get_gpu
from kvplan.layers import MLAIndexerAttention
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.units import GiB


def _v32():
    return load_preset("deepseek-v3.2")


def _plan(version="0.5.20", gpu="B200", **kw):
    dp = kw.pop("dp_attention_size", 1)
    return plan(_v32(), get_gpu(gpu), EngineConfig(engine="sglang", sglang_version=version, dp_attention_size=dp,
                                                    max_model_len=kw.pop("max_model_len", 32768), **kw),
                Layout(tp=8))


# ------------------------------------------------------------------ which lines serve it

@pytest.mark.parametrize("version", ["0.4.0", "0.4.5.post3", "0.4.6", "0.4.8"])
def test_lines_before_0_5_3_serve_no_dsa(version):
    # 0.4.x - 0.5.2 wheels: no NSATokenToKVPool, no is_deepseek_nsa
    with pytest.raises(PlanInputError) as e:
        _plan(version)
    assert e.value.field == "sglang_version" and "NSATokenToKVPool" in str(e.value) and "0.5.4.post1" in str(e.value)


def test_the_0_5_3_line_holds_two_rules():
    # 0.5.3 forces mem_fraction_static 0.8 and profiles without the indexer keys; 0.5.4 counts them (PR #11309)
    with pytest.raises(PlanInputError) as e:
        _plan("0.5.3")
    assert e.value.field == "sglang_version" and "#11309" in str(e.value)


def test_glm5_needs_0_5_9():
    # GlmMoeDsaForCausalLM joined is_deepseek_nsa in 0.5.9: the 0.5.8 - 0.5.9 line is refused, 0.5.10 plans it
    glm = load_preset("glm-5")
    with pytest.raises(PlanInputError) as e:
        plan(glm, get_gpu("B200"), EngineConfig(engine="sglang", sglang_version="0.5.8"), Layout(tp=8))
    assert e.value.field == "sglang_version" and "0.5.9" in str(e.value)
    p = plan(glm, get_gpu("B200"), EngineConfig(engine="sglang", sglang_version="0.5.10"), Layout(tp=8))
    # 0.5.10 on a B200 (trtllm, raw fp8 latent) profiles 78 x (576 x 1 + 132) = 55,224 B a token
    assert p.ranks[0].kv_bytes_per_token == 78 * (576 + 132) == 55_224


def test_0_5_4_post1_forces_dp_attention_and_fp8():
    # 0.5.4.post1 - 0.5.5: dp_size = tp_size forced after the reserve is sized -> plan it with --dp 8
    with pytest.raises(PlanInputError) as e:
        _plan("0.5.4.post1")
    assert e.value.field == "dp_attention_size" and "--dp 8" in str(e.value)
    # 0.5.4.post1 sets fp8 on SM >= 10 whatever asked, 0.5.5 keeps an asked bfloat16: two rules
    with pytest.raises(PlanInputError) as e:
        _plan("0.5.4.post1", dp_attention_size=8, kv_cache_dtype="bfloat16")
    assert e.value.field == "kv_cache_dtype"
    p = _plan("0.5.4.post1", dp_attention_size=8)
    assert p.ranks[0].kv_bytes_per_token == 61 * (576 + 132) == 43_188


def test_only_bf16_or_fp8_kv():
    # "DeepSeek DSA only supports bf16/bfloat16 or fp8_e4m3 kv_cache_dtype"
    with pytest.raises(PlanInputError) as e:
        _plan(kv_cache_dtype="fp16")
    assert e.value.field == "kv_cache_dtype"


# ------------------------------------------------------------------ page size and KV dtype

def test_page_64_on_cuda_even_when_asked_for_1():
    p = _plan(block_size=1)
    assert p.block_size == 64 and p.kv_cache_tokens % 64 == 0
    assert any("--page-size 1 is replaced by 64" in w for w in p.warnings)


def test_page_on_rocm_by_line():
    assert sglang.dsa_page_size("0.5.10", "AMD") == 1  # 0.5.8 - 0.5.13: "Setting page size to 1 ... on ROCm."
    assert sglang.dsa_page_size("0.5.8", "AMD") == 1
    assert sglang.dsa_page_size("0.5.6", "AMD") == 64  # no is_hip branch before 0.5.8
    assert sglang.dsa_page_size("0.5.20", "AMD") == 64  # aiter preshuffle path (Triton >= 3.5) assumed
    assert sglang.dsa_page_size("0.5.20", "NVIDIA") == 64


def test_kv_dtype_default_by_sm():
    assert sglang.dsa_kv_dtype("0.5.20", True, "NVIDIA", "auto") == "fp8"  # B200: SM10
    assert sglang.dsa_kv_dtype("0.5.20", False, "NVIDIA", "auto") == "bf16"  # H200: SM9
    assert sglang.dsa_kv_dtype("0.5.20", False, "AMD", "auto") == "bf16"  # MI355X reports major 9
    assert sglang.dsa_kv_dtype("0.5.20", True, "NVIDIA", "bfloat16") == "bf16"
    assert sglang.dsa_kv_dtype("0.5.4.post1", True, "NVIDIA", "auto") == "fp8"
    assert sglang.sm_major_at_least_10("B200") and sglang.sm_major_at_least_10("GB300")
    assert not sglang.sm_major_at_least_10("H200")
    # kvcache-ai/ktransformers#1969 (2026-05-01, SGLang-based server, DeepSeek-V3.2 TP4 on SM 8 GPUs): "Setting page
    # size to 64 for DeepSeek DSA." / "Setting KV cache dtype to bfloat16 for DeepSeek DSA on SM8 device."
    assert not sglang.sm_major_at_least_10("A100-80GB") and not sglang.sm_major_at_least_10("RTX-4090")
    assert sglang.dsa_kv_dtype("0.5.10", False, "NVIDIA", "auto") == "bf16"
    assert sglang.dsa_page_size("0.5.10", "NVIDIA") == 64


# ------------------------------------------------------------------ bytes per token by release

def test_fp8_layout_follows_the_default_backend():
    # trtllm (raw 576 B fp8 latent) on SM >= 10 from 0.5.10; flashmla_kv (packed 656 B) before and on Hopper;
    # GLM-5 on SM 12 from 0.5.17: flashinfer_sparse_mla (packed)
    assert sglang.dsa_fp8_raw_latent("0.5.20", "B200", "deepseek_v32")
    assert sglang.dsa_fp8_raw_latent("0.5.10", "B200", "deepseek_v32")
    assert not sglang.dsa_fp8_raw_latent("0.5.8", "B200", "deepseek_v32")
    assert not sglang.dsa_fp8_raw_latent("0.5.20", "H200", "deepseek_v32")
    assert not sglang.dsa_fp8_raw_latent("0.5.20", "RTX-PRO-6000", "glm_moe_dsa")
    assert sglang.dsa_fp8_raw_latent("0.5.15", "RTX-PRO-6000", "glm_moe_dsa")


def test_bytes_per_token_by_line_and_gpu():
    # B200, 0.5.17+ (trtllm): 61 x (576 + 128 + 128/128 x 4 = 132) = 61 x 708 = 43,188 profiled and allocated
    assert _plan("0.5.20").ranks[0].kv_bytes_per_token == 61 * 708 == 43_188
    assert _plan("0.5.17").ranks[0].kv_bytes_per_token == 43_188
    # H200 asked for fp8 (flashmla_kv), 0.5.17+: 61 x (512 + 512/128 x 4 + 64 x 2 = 656, + 132) = 61 x 788 = 48,068
    assert _plan("0.5.20", gpu="H200", kv_cache_dtype="fp8_e4m3").ranks[0].kv_bytes_per_token == 61 * 788 == 48_068
    # through 0.5.16 the profiled fp8 latent is 576 x 1 whatever the backend: 43,188
    assert _plan("0.5.15", gpu="H200", kv_cache_dtype="fp8_e4m3").ranks[0].kv_bytes_per_token == 43_188
    assert _plan("0.5.8").ranks[0].kv_bytes_per_token == 43_188
    # H200 (bfloat16): 61 x (576 x 2 + 132) = 78,324 in every line; B200 asked for bfloat16: the same
    assert _plan("0.5.20", gpu="H200").ranks[0].kv_bytes_per_token == 61 * 1284 == 78_324
    assert _plan("0.5.20", kv_cache_dtype="bfloat16").ranks[0].kv_bytes_per_token == 78_324


def test_indexer_counted_on_own_indexer_layers_from_0_5_18():
    # a GLM-5-style model whose "shared" layers reuse an earlier top-k (index_head_dim None on the layer):
    # 0.5.17 counts 132 B on all 4 layers, 0.5.18+ on the 3 own ones (dsa_layer_skips_topk)
    own = MLAIndexerAttention(kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=192, v_head_dim=256,
                              num_attention_heads=64, index_head_dim=128)
    shared = own.model_copy(update={"index_head_dim": None})
    layers = [(SimpleNamespace(cache=own), 3), (SimpleNamespace(cache=shared), 1)]
    assert sglang.dsa_bytes_per_token("0.5.17", layers, 1, 128) == 4 * (656 + 132) == 3152
    assert sglang.dsa_bytes_per_token("0.5.18", layers, 1, 128) == 4 * 656 + 3 * 132 == 3020
    assert sglang.dsa_bytes_per_token("0.5.15", layers, 2, 128) == 4 * (1152 + 132) == 5136


def test_b200_plan_numbers_0_5_20():
    # kvplan planned page 1 and 78,324 B (bf16): 946,191 tokens = 946,191 blocks. Now: the same pool // 43,188
    # floored to the 64-token page: 74,109,511,783 // 43,188 = 1,715,974 -> 1,715,968 tokens = 26,812 pages
    p = _plan("0.5.20", max_model_len=163840)
    pool = p.ranks[0].kv_pool_bytes
    assert p.kv_cache_tokens == pool // 43_188 // 64 * 64
    assert p.num_blocks == p.kv_cache_tokens // 64 and p.block_size == 64
    kv = next(line for line in p.engine_log if line.startswith("KV Cache is allocated"))
    assert kv == (f"KV Cache is allocated. dtype: torch.float8_e4m3fn, #tokens: {p.kv_cache_tokens}, KV size: "
                  f"{(p.kv_cache_tokens + 64) * 43_188 / GiB:.2f} GB")


def test_kv_line_counts_the_allocated_656_with_flashmla_kv():
    # 0.5.8 on a B200 (flashmla_kv): profiles 43,188 B a token but allocates 61 x (656 + 132) = 48,068: the KV line
    # says the latter
    p = _plan("0.5.8")
    kv = next(line for line in p.engine_log if line.startswith("KV Cache is allocated"))
    assert p.ranks[0].kv_bytes_per_token == 43_188
    assert kv.endswith(f"KV size: {(p.kv_cache_tokens + 64) * 48_068 / GiB:.2f} GB")


# ------------------------------------------------------------------ public logs
# sgl-project/sglang PR #11309 ("[DeepSeek-V3.2] Include indexer kv cache when estimating kv cache size", trevor-m,
# 2025-10-07), DeepSeek-V3.2-Exp on 8 x B200, --tp 8 --dp 8 --enable-dp-attention (fp8 KV forced on SM10):
#   with the PR (0.5.4+):     "[DP0 TP0] KV Cache is allocated. #tokens: 975424, KV size: 43.67 GB"
#   main before it (0.5.3):   "[DP0 TP0] KV Cache is allocated. #tokens: 1462784, KV size: 54.52 GB"
#                             ("KV size including index is actually 65.49 GB"; "Memory pool end. avail mem=15.38 GB")
PR11309_TOKENS = 975_424


def test_pr11309_kv_size_lines():
    layers = [(layer, 1) for layer in _v32().layers]
    alloc = sglang.dsa_bytes_per_token("0.5.4.post1", layers, 1, 128, allocated=True)
    assert alloc == 61 * (656 + 132) == 48_068
    # (975,424 + 64 padded slots) x 48,068 B = 46,889,757,184 B = 43.67 GiB
    assert f"{(PR11309_TOKENS + 64) * alloc / GiB:.2f}" == "43.67"
    # before the PR: the log counted the 656 B latent only: (1,462,784 + 64) x 61 x 656 = 54.52 GiB; with the
    # indexer the pool held (1,462,848) x 48,068 = 65.49 GiB
    assert f"{(1_462_784 + 64) * 61 * 656 / GiB:.2f}" == "54.52"
    assert f"{(1_462_784 + 64) * alloc / GiB:.2f}" == "65.49"
    # the profiled cells: 0.5.3 61 x 576 = 35,136 B (rest 1,462,784 x 35,136 = 47.87 GiB at fraction 0.8),
    # 0.5.4+ 61 x 708 = 43,188 (rest 975,424 x 43,188 = 39.23 GiB)
    assert sglang.dsa_bytes_per_token("0.5.4.post1", layers, 1, 128) == 43_188


@pytest.mark.xfail(strict=True, reason=(
    "PR #11309 #tokens from flags: kvplan's 0.5.4.post1 line gives 1,026,752 tokens (+5.3 %; 1,074,176, +10.1 %, "
    "before SGLang's MLA w_kc / w_vc, whole on every rank under DP attention, 1.91 GiB, were priced). The log implies "
    "available ~81.4 GiB after the weights (Memory pool end 37.71 + KV 43.67) and a rest of 975,424 x 43,188 B = "
    "39.23 GiB; kvplan has available 85.08 GiB (pre 175.83, 90.75 GiB of weights with DP attention) and rest 41.30: "
    "about 3.7 GiB more free after loading than the log shows. The excerpt prints no 'Load weight' line, so whether "
    "the B200 context (DeepEP / NVSHMEM buffers of the DP-attention run) or the weights hold the difference is not "
    "known"))
def test_pr11309_tokens_from_flags():
    p = _plan("0.5.4.post1", dp_attention_size=8, max_model_len=163840)
    assert abs(p.kv_cache_tokens - PR11309_TOKENS) <= 0.01 * PR11309_TOKENS


# ------------------------------------------------------------------ hybrid wording (the MambaPool budget line)

def _mamba_source(model, version, tp, **kw):
    p = plan(load_preset(model), get_gpu("H100-SXM"),
             EngineConfig(engine="sglang", sglang_version=version, max_model_len=8192, **kw), Layout(tp=tp))
    return next(t.source for t in p.ranks[0].terms if t.name.startswith("Mamba state pool"))


def test_mamba_term_names_the_dtype_used():
    # 0.5.4.post1 - 0.5.7: mamba2_state_dtype() reads no config: the --mamba-ssm-dtype default float32
    assert ("temporal state float32 (the --mamba-ssm-dtype default: SGLang 0.5.6 - 0.5.6.post2 reads no config key "
            "for it)") in _mamba_source("qwen3-next-80b-a3b", "0.5.6", 4)
    # 0.5.10+: GDN reads the config's mamba_ssm_dtype (Qwen3.5 files: float32); Mamba-2 configs carry none
    assert "temporal state float32 (the config's mamba_ssm_dtype)" in _mamba_source("qwen3.5-27b", "0.5.20", 1)
    assert "Mamba-2 configs carry no mamba_ssm_dtype" in _mamba_source("nemotron-h-56b", "0.5.20", 4)
    assert "temporal state bfloat16 (--mamba-ssm-dtype)" in _mamba_source("qwen3.5-27b", "0.5.20", 1,
                                                                          mamba_ssm_dtype="bfloat16")
    assert "unless the config says" not in _mamba_source("nemotron-h-56b", "0.5.6", 4)


def test_cap_line_is_sglangs_verbatim_plural():
    # kv_cache_configurator.py resolve_max_num_reqs: "%d state slots per request" -> "1 state slots per request"
    prof = sglang.SGLANG_PROFILES["0.5.20"]
    m = sglang.SglangMambaPool(slots=10, per_request=1, conv_bytes=0, ssm_bytes=0, charged=10, kv_pool=GiB,
                               slots_per_request=1, rule="test")
    s = sglang.default_settings(prof, 81559, "nvidia-smi", 1, 1, False)
    lines = sglang.log_lines(prof, 70 * GiB, 20 * GiB, 100_000, 1, 1024, 1024, False, "bfloat16", s, 10, 8192, m, 50)
    assert ("max_running_requests is capped to 10 by the mamba state cache (max_mamba_cache_size=10, 1 state slots "
            "per request)") in lines
