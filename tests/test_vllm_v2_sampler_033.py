"""vLLM 0.33.0's V2 dummy sampler pass (VLLM_CHANGES "v2_sampler_warmup_pass"), read 2026-12-03 in the 0.33.0 wheel
against 0.32.0 (pip download vllm==X --no-deps; flashinfer-python 0.7.2.post1, the 0.33.0 pin).

0.32.0 v1/worker/gpu/model_runner.py _dummy_sampler_run calls the sampler once on a dummy batch that asks for no
processing: the peak is the logits in the model dtype. 0.33.0 then add_request()s SamplingParams.for_sampler_warmup()
(temperature 0.9, top-k 50, top-p 0.9, min-p, penalties, logit bias, bad words, 5 logprobs) on every row and calls it
again on the same logits: sample/sampler.py apply_sampling_params makes an fp32 copy, and with top-k and top-p both set
(a top-k tensor: FlashInfer's int fast path is off) flashinfer.sampling.top_k_top_p_sampling_from_logits holds
top_k_mask_logits' fp32 output and torch.softmax's fp32 probs together, + a kept 1 MiB row_states buffer. So the
sampler part is rows x vocab x (act_b + 12) + 1 MiB, kvplan profile "0.33" (0.33.0 - 0.33.x); "0.32" keeps rows x
vocab x act_b. The same plain `vllm serve` runs V2 in both (config/vllm.py use_v2_model_runner unchanged but for the
watermarking / HiSparse overrides): kvplan.engines.vllm_model_runner.
"""

from kvplan import load_preset
from kvplan.engines import (
    FLASHINFER_TOPK_ROW_STATES_BYTES,
    VLLM_CHANGES,
    VLLM_DEFAULT_VERSION,
    VLLM_PROFILES,
    EngineConfig,
    vllm_has,
    vllm_profile_for_release,
    vllm_v2_dummy_sampler_bytes,
)
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan

ACT = "activation peak (8192 batched tokens, 1024 sampler rows)"


def _act_and_pool(name: str, gpu: str, version: str, **kw) -> tuple[int, int, str]:
    p = plan(load_preset(name), get_gpu(gpu), EngineConfig(vllm_version=version, **kw))
    rank = p.ranks[0]
    return next(t.bytes for t in rank.terms if t.name == ACT), rank.kv_pool_bytes, p.model_runner


def test_the_split_and_the_default():
    assert VLLM_CHANGES["v2_sampler_warmup_pass"][0] == (0, 33, 0)
    assert VLLM_PROFILES["0.32"].releases == "0.32.0" and VLLM_PROFILES["0.33"].releases == "0.33.0 - 0.33.x"
    assert vllm_profile_for_release("0.32.0") == "0.32" and vllm_profile_for_release("0.33.1") == "0.33"
    assert VLLM_DEFAULT_VERSION == "0.33"
    assert vllm_has("0.33", "v2_sampler_warmup_pass") and not vllm_has("0.32", "v2_sampler_warmup_pass")
    # every 0.32.0 rule stays on both lines
    for change in ("mamba2_checkpoint_page", "mxfp4_humming_hopper", "v2_ngram", "mm_kwargs_scoped"):
        assert vllm_has("0.32", change) and vllm_has("0.33", change), change


def test_the_sampler_bytes_by_hand():
    rows_vocab = 1024 * 128_256  # Llama-3.1-8B's vocab at 1,024 rows: 131,334,144
    assert rows_vocab == 131_334_144
    # 0.32: the bf16 logits alone
    assert vllm_v2_dummy_sampler_bytes("0.32", 1024, 128_256, 2) == 2 * rows_vocab == 262_668_288
    # 0.33, FlashInfer: bf16 logits + fp32 copy + top-k mask + softmax probs = 14 B a logit, + 1 MiB row_states
    assert FLASHINFER_TOPK_ROW_STATES_BYTES == 1_048_576
    assert vllm_v2_dummy_sampler_bytes("0.33", 1024, 128_256, 2) == 14 * rows_vocab + 1_048_576 == 1_839_726_592
    # 0.33, Triton top-k / top-p (VLLM_USE_FLASHINFER_SAMPLER=0): logits + fp32 copy (6 B a logit) + the kept buffer of
    # min(next_pow2(min(132, 1024)) = 256, 132) = 132 rows x 128,256 x 4 = 67,719,168
    assert vllm_v2_dummy_sampler_bytes("0.33", 1024, 128_256, 2, "pytorch") == 6 * rows_vocab + 67_719_168 \
        == 855_724_032
    # 100 rows: programs 100 -> next_pow2 128 rows of buffer: 100 x 128,256 x 6 + 128 x 128,256 x 4
    assert vllm_v2_dummy_sampler_bytes("0.33", 100, 128_256, 2, "pytorch") == 76_953_600 + 65_667_072
    # an fp32 model's logits are fp32: 16 B a logit on FlashInfer
    assert vllm_v2_dummy_sampler_bytes("0.33", 256, 151_936, 4) == 256 * 151_936 * 16 + 1_048_576 == 623_378_432


def test_llama31_8b_h100():
    # H100 (>= 70 GiB, not an A100): 8,192 batched tokens, 1,024 seqs. 0.32: the peak is the cold compile's embedding
    # copy 128,256 x 4,096 x 2 = 1,050,673,152 (above the forward's 838,860,800 and the sampler's 262,668,288 +
    # 8,192 x 4,096 x 2 = 329,777,152). 0.33: 1,839,726,592 + 67,108,864 = 1,906,835,456 (1.78 GiB), 856,162,304 B
    # (0.80 GiB) more, so the pool is that much smaller
    a32, pool32, runner32 = _act_and_pool("llama-3.1-8b", "H100", "0.32")
    a33, pool33, runner33 = _act_and_pool("llama-3.1-8b", "H100", "0.33")
    assert runner32 == runner33 == "V2"
    assert a32 == 1_050_673_152 and a33 == 1_839_726_592 + 67_108_864 == 1_906_835_456
    assert pool32 - pool33 == a33 - a32 == 856_162_304
    assert (pool32, pool33) == (59_587_947_280, 58_731_784_976)


def test_qwen3_32b_h200():
    # vocab 151,936, hidden 5,120: 0.32's peak the compile copy 151,936 x 5,120 x 2 = 1,555,824,640; 0.33: 1,024 x
    # 151,936 x 14 + 1 MiB + 8,192 x 5,120 x 2 = 2,178,154,496 + 1,048,576 + 83,886,080 = 2,263,089,152 (+707,264,512)
    a32, pool32, _ = _act_and_pool("qwen3-32b", "H200", "0.32")
    a33, pool33, _ = _act_and_pool("qwen3-32b", "H200", "0.33")
    assert a32 == 1_555_824_640 and a33 == 2_263_089_152
    assert pool32 - pool33 == 707_264_512 and pool33 == 68_050_558_684


def test_gpt_oss_120b_h200():
    # vocab 201,088, hidden 2,880: 0.32's peak the compile copy 201,088 x 2,880 x 2 = 1,158,266,880; 0.33: 1,024 x
    # 201,088 x 14 + 1 MiB + 8,192 x 2,880 x 2 = 2,882,797,568 + 1,048,576 + 47,185,920 = 2,931,032,064 (+1.65 GiB)
    a32, pool32, _ = _act_and_pool("gpt-oss-120b", "H200", "0.32")
    a33, pool33, _ = _act_and_pool("gpt-oss-120b", "H200", "0.33")
    assert a32 == 1_158_266_880 and a33 == 2_931_032_064
    # (pool33: 63,812,197,468 while the Triton layout kept the checkpoint's scales; freed from 0.25.0 and the swizzled
    # K padded to 4 from 0.26.0: 128 experts x 36 layers x (14,060,160 - 13,300,480) = 3,500,605,440 B more)
    assert pool32 - pool33 == 1_772_765_184 and pool33 == 63_812_197_468 + 3_500_605_440 == 67_312_802_908


def test_the_v1_runner_is_unchanged():
    # VLLM_USE_V2_MODEL_RUNNER=0 on 0.33: gpu_model_runner.py's _dummy_sampler_run is 0.32.0's (0.33.0 only adds the
    # "fly" rejection method), so V1 plans are the same on both lines: the native 3.72-copy peak, 1,024 x 128,256 x
    # 4 x 3.72 (1,954,252,062) + 67,108,864 = 2,021,360,926
    a32, pool32, r32 = _act_and_pool("llama-3.1-8b", "H100", "0.32", model_runner="V1")
    a33, pool33, r33 = _act_and_pool("llama-3.1-8b", "H100", "0.33", model_runner="V1")
    assert r32 == r33 == "V1" and a32 == a33 == int(131_334_144 * 4 * 3.72) + 67_108_864 == 2_021_360_926
    assert pool32 == pool33


def test_the_term_names_the_pass():
    p = plan(load_preset("llama-3.1-8b"), get_gpu("H100"), EngineConfig(vllm_version="0.33"))
    src = next(t.source for t in p.ranks[0].terms if t.name == ACT)
    assert "warmup-parameter pass" in src and "FlashInfer's top-k mask + softmax" in src and "(1.71 GiB;" in src
    p32 = plan(load_preset("llama-3.1-8b"), get_gpu("H100"), EngineConfig(vllm_version="0.32"))
    assert "holds the logits alone" in next(t.source for t in p32.ranks[0].terms if t.name == ACT)


def test_the_lm_heads_all_gather_at_tp_above_one():
    # 0.22.0 - 0.33.0 logits_processor.py _gather_logits all-gathers the LM head's output once, before the sampler:
    # this rank's [rows, vocab / tp] shard + the [tp x rows, vocab / tp] buffer + the reshaped [rows, vocab] copy
    # (cuda_communicator.py all_gather: movedim + reshape) are alive together, then all but the copy are freed.
    # Llama-3.1-8B (128,256 = 2,004 x 64, no padding), 1,024 rows, bf16:
    # 0.32, TP 2: 1,024 x (64,128 + 2 x 128,256) x 2 = 656,670,720 B, above the logits alone (262,668,288)
    assert vllm_v2_dummy_sampler_bytes("0.32", 1024, 128_256, 2, tp=2) == 656_670_720
    # TP 4: 1,024 x (32,064 + 256,512) x 2 = 591,003,648
    assert vllm_v2_dummy_sampler_bytes("0.32", 1024, 128_256, 2, tp=4) == 591_003_648
    # 0.33: the warmup pass's 14 B a logit + 1 MiB (1,839,726,592) stays the peak at TP 2
    assert vllm_v2_dummy_sampler_bytes("0.33", 1024, 128_256, 2, tp=2) == 1_839_726_592
    # an fp32 model on the Triton path at TP 2: the gather 1,024 x 320,640 x 4 = 1,313,341,440 exceeds the sampler's
    # 1,024 x 128,256 x 8 + 132 x 128,256 x 4 = 1,050,673,152 + 67,719,168 = 1,118,392,320
    assert vllm_v2_dummy_sampler_bytes("0.33", 1024, 128_256, 4, "pytorch", tp=2) == 1_313_341_440
    # a vocab off the 64 grid is padded in the head's output: 32,001 -> 32,064; 0.32 TP 1, 256 rows: 256 x 32,064 x 2
    assert vllm_v2_dummy_sampler_bytes("0.32", 256, 32_001, 2) == 16_416_768
    # and in a plan: Llama-3.1-8B on 2 x H100 at 0.32, warm compile cache (no embedding copy): the sampler side is
    # 656,670,720 + the hidden states 8,192 x 4,096 x 2 (67,108,864) = 723,779,584, above the forward's
    # 8,192 x (4 x 4,096 + 6,144 / 2 + 28,672 / 2) x 2 = 553,648,128 (the peak before: 262,668,288 + 67,108,864 =
    # 329,777,152 was below it)
    p = plan(load_preset("llama-3.1-8b"), get_gpu("H100"), EngineConfig(vllm_version="0.32", compile_cache="warm"),
             Layout(tp=2))
    term = next(t for t in p.ranks[0].terms if t.name == ACT)
    assert p.model_runner == "V2" and term.bytes == 723_779_584
    assert "at TP 2 the LM head's all-gather" in term.source
