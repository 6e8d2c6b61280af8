"""vLLM's V0 engine (profiles "0.7": 0.6.5 - 0.9.x with VLLM_USE_V1=0, and "0.6": 0.6.0 - 0.6.4): start-up logs
reproduced from launch flags.

Rules read in the vllm 0.6.6.post1 / 0.7.3 / 0.8.5 / 0.9.2 wheels (kvplan/vllm_v0.py cites the functions). Each case
quotes the lines it pins and their public source. Tolerance as in tests/test_engine_logs.py: a memory figure within
max(1 %, 0.25 GiB) of the log; a block count or concurrency within the same memory tolerance expressed in blocks
(blocks x block bytes), so a small pool is not held to 1 % of itself; tokens 1 % where weights are given.

Logs found and left out: kubernetes-sigs/gateway-api-inference-extension PR #550 (Llama-2-7B with LoRA adapters: the
Punica buffers and dummy LoRAs are not modeled; its block arithmetic is pinned below from the logged activation);
unsloth / GRPO logs with bitsandbytes or GPTQ weights (those loaders' layouts are not modeled); the 35K line of vLLM
#10517 (its 0.06 GiB activation peak is below the fp32 logits of 256 dummy prompts, so that run cannot have used the
defaults; its 20K and 29K lines are pinned); vLLM PR #12126 (Llama-3.2-11B-Vision: multimodal, refused in V0).
"""

import pytest

from kvplan import load_preset, parse_config
from kvplan.engines import VLLM_PROFILES, EngineConfig
from kvplan.errors import ConfigError, PlanInputError
from kvplan.gpus import custom_gpu, get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.units import GiB
from kvplan.vllm_v0 import V0_SWAP_SPACE_BYTES, batch_limits, capture_sizes

H100 = get_gpu("H100-SXM")  # 79.19 GiB, as mellea PR #416 and gateway-api-inference-extension PR #550 log it
V0 = "0.7"


def close_gib(pred_bytes: int, logged_gib: float) -> bool:
    """Within max(1 %, 0.25 GiB) of a GiB figure as logged."""
    return abs(pred_bytes / GiB - logged_gib) <= max(0.01 * abs(logged_gib), 0.25)


def close_blocks(pred: int, logged: int, block_bytes: int) -> bool:
    """A block count within the memory tolerance: |pred - logged| x block bytes <= max(1 %, 0.25 GiB)."""
    return abs(pred - logged) * block_bytes <= max(0.01 * logged * block_bytes, 0.25 * GiB)


def term(p, prefix: str) -> int:
    return next(t.bytes for t in p.ranks[0].terms if t.name.startswith(prefix))


# Qwen2.5-1.5B-Instruct and DeepSeek-R1-Distill-Qwen-14B are not presets: their config.json memory fields, typed
# (Qwen/Qwen2.5-1.5B-Instruct and deepseek-ai/DeepSeek-R1-Distill-Qwen-14B on the Hub; the same as in
# tests/test_vllm_layouts.py for the 14B).
QWEN25_1_5B = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 1536,
               "intermediate_size": 8960, "num_hidden_layers": 28, "num_attention_heads": 12, "num_key_value_heads": 2,
               "vocab_size": 151936, "max_position_embeddings": 32768, "rope_theta": 1000000.0, "rms_norm_eps": 1e-06,
               "tie_word_embeddings": True, "torch_dtype": "bfloat16", "use_sliding_window": False,
               "sliding_window": 32768, "max_window_layers": 21, "hidden_act": "silu"}
R1_QWEN_14B = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 5120,
               "intermediate_size": 13824, "num_hidden_layers": 48, "num_attention_heads": 40, "num_key_value_heads": 8,
               "vocab_size": 152064, "max_position_embeddings": 131072, "rope_theta": 1000000.0, "rms_norm_eps": 1e-05,
               "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_sliding_window": False,
               "hidden_act": "silu"}


def test_v0_defaults_as_read_in_the_source():
    llama = load_preset("llama-3.1-8b")
    engine = EngineConfig(vllm_version=V0)
    # config.py SchedulerConfig: no chunked prefill up to 32K -> max(max_model_len, 2048); 256 seqs (arg_utils.py)
    assert batch_limits(llama, engine, 8192) == (8192, 256)
    assert batch_limits(llama, engine, 1000) == (2048, 256)
    assert batch_limits(llama, engine, 32768) == (32768, 256)
    # above 32K chunked prefill turns itself on: 2048 tokens ...
    assert batch_limits(llama, engine, 131072) == (2048, 256)
    # ... but never for a sliding window (Mistral-7B-v0.1, W 4096): the profile run prefills all 65,536 tokens
    assert batch_limits(load_preset("mistral-7b-v0.1"), engine, 65536) == (65536, 256)
    assert batch_limits(llama, engine.model_copy(update={"max_num_batched_tokens": 4096, "max_num_seqs": 64}),
                        131072) == (4096, 64)
    # up to 0.6.4 chunked prefill batched 512 tokens (config.py: "the best balance between ITL and TTFT on A100")
    assert batch_limits(llama, EngineConfig(vllm_version="0.6"), 131072) == (512, 256)
    # V0 _set_cudagraph_sizes: [1, 2, 4] + 8 i up to the first >= max_num_seqs. 35 graphs at 256 (the 0.7.2 T4 log:
    # "Capturing CUDA graph shapes: 35/35"), [1, 2, 4, 8] at mellea's 8 seqs, 43 at 320 (unsloth's 0.8.2 log lists
    # cudagraph_capture_sizes 320 ... 8, 4, 2, 1)
    assert len(capture_sizes(256)) == 35 and capture_sizes(8) == [1, 2, 4, 8] and len(capture_sizes(320)) == 43
    assert VLLM_PROFILES[V0].label == "0.7 (V0 engine)" and VLLM_PROFILES["0.33"].label == "0.33"


@pytest.mark.parametrize("tp,weights_gib", [(1, 14.96), (2, 7.48)])
def test_pr_10511_meta_llama_3_8b_h100_sampler_on_the_driver(tp, weights_gib):
    # vllm-project/vllm PR #10511 ("[core] overhaul memory profiling"), youkaichao's sanity checks, 2024-12-14:
    # `vllm serve meta-llama/Meta-Llama-3-8B` (max_model_len 8192 from its config -> 8192 batched tokens, 256 seqs)
    # and `... -tp 2` on H100 (total_gpu_memory 79.22GiB): "model weights take 14.96GiB" / "7.48GiB";
    # "PyTorch activation peak memory 1.26GiB" at both TP 1 and TP 2. The forward halves at TP 2; the peak does not:
    # it is the sampler over 256 rows x 128,256 vocab, run on the driver worker only, not divided by TP.
    # (That build's non_torch_memory 1.79 / 3.58 GiB predates the released 0.6.5 accounting: not pinned.)
    # Llama-3.1-8B has Meta-Llama-3-8B's shapes; max_model_len 8192 is the latter's max_position_embeddings.
    gpu = H100.model_copy(update={"memory_bytes": round(79.22 * GiB)})
    p = plan(load_preset("llama-3.1-8b"), gpu, EngineConfig(vllm_version=V0, max_model_len=8192), Layout(tp=tp))
    assert close_gib(p.ranks[0].weights_bytes, weights_gib)  # 14.96 / 7.48 GiB
    act = term(p, "activation peak")
    assert close_gib(act, 1.26)  # 256 x 128,256 x 4 B x 9.7 + 8192 x 4096 x 2 B = 1.249 GiB at TP 1 and 2
    assert act == term(plan(load_preset("llama-3.1-8b"), gpu, EngineConfig(vllm_version=V0, max_model_len=8192)),
                       "activation peak")


def test_mellea_qwen3_0_6b_h100():
    # generative-computing/mellea PR #416 (planetf1, 02-11 log), test/backends/test_vllm.py @25cf09e0: VLLM_USE_V1=0,
    # LocalVLLMBackend(QWEN3_0_6B, gpu_memory_utilization 0.8, max_model_len 8192, max_num_seqs 8), one H100:
    # "total_gpu_memory (79.19GiB) x gpu_memory_utilization (0.80) = 63.35GiB"; "model weights take 1.12GiB;
    # non_torch_memory takes 0.16GiB; PyTorch activation peak memory takes 0.23GiB; the rest of the memory reserved
    # for KV Cache is 61.84GiB."; "# cuda blocks: 36184, # CPU blocks: 2340"; "Maximum concurrency for 8192 tokens
    # per request: 70.67x"; "Graph capturing finished in 2 secs, took 0.13 GiB".
    engine = EngineConfig(vllm_version=V0, gpu_memory_utilization=0.8, max_model_len=8192, max_num_seqs=8)
    p = plan(load_preset("qwen3-0.6b"), H100, engine)
    rank = p.ranks[0]
    block = rank.bytes_per_block
    assert block == 28 * 16 * 8 * 256 * 2 == 1_835_008  # 112 KiB a token, 1.75 MiB a block
    assert close_gib(rank.weights_bytes, 1.12)  # 1.11 GiB (-0.01)
    assert close_gib(term(p, "non-torch"), 0.16)  # 0.16: fitted to this log and #550 / #12126
    assert close_gib(term(p, "activation peak"), 0.23)  # 0.20 (-0.03): the forward over 8192 tokens, 8 sampler rows
    assert close_gib(rank.kv_pool_bytes, 61.84)  # 61.88 GiB (+0.04)
    assert close_blocks(p.num_blocks, 36184, block)  # 36,207 (+0.06 %)
    assert abs(p.max_concurrency - 70.67) <= 0.01 * 70.67  # 70.72x
    assert V0_SWAP_SPACE_BYTES // block == 2340  # the CPU blocks: exact
    assert "the current vLLM instance can use total_gpu_memory (79.19GiB) x gpu_memory_utilization (0.80) = 63.35GiB" \
        in p.engine_log
    assert f"# cuda blocks: {p.num_blocks}, # CPU blocks: 2340" in p.engine_log
    assert f"Maximum concurrency for 8192 tokens per request: {p.max_concurrency:.2f}x" in p.engine_log
    assert p.starts and p.fits and p.start_error is None
    graphs = next(t for t in rank.terms if t.name.startswith("CUDA graphs"))
    assert not graphs.applied and close_gib(graphs.bytes, 0.13)  # 4 graphs: 128 + 3 x 6 MiB = 0.14 GiB, not subtracted


def test_lfgrpo_qwen2_5_1_5b_t4_no_chunked_prefill():
    # A public LF-GRPO Colab training log (Qwen/Qwen2.5-1.5B-Instruct as the vLLM rollout model; found in the search
    # index's file text, id 55875904831 -- its repository path was not resolved): "Initializing a V0 LLM engine
    # (v0.7.2) ... dtype=torch.float16, max_seq_len=32768 ... chunked_prefill_enabled=False", XFormers on a T4:
    # "Loading model weights took 2.8884 GB"; "total_gpu_memory (14.56GiB) x gpu_memory_utilization (0.50) = 7.28GiB";
    # "model weights take 2.89GiB; non_torch_memory takes 0.01GiB; PyTorch activation peak memory takes 2.02GiB;
    # the rest of the memory reserved for KV Cache is 2.36GiB."; "# CUDA blocks: 5517, # CPU blocks: 9362";
    # "Maximum concurrency for 32768 tokens per request: 2.69x"; 35 CUDA graphs "took 0.17 GiB".
    t4 = custom_gpu(14.56, 0.32, 65.0, "T4", interconnect="PCIe 3.0 x16")
    p = plan(parse_config(QWEN25_1_5B, "qwen2.5-1.5b-instruct"), t4,
             EngineConfig(vllm_version=V0, gpu_memory_utilization=0.5, max_model_len=32768))
    rank = p.ranks[0]
    block = rank.bytes_per_block
    assert block == 28 * 16 * 2 * 256 * 2 == 458_752  # 28 KiB a token
    assert V0_SWAP_SPACE_BYTES // block == 9362  # exact
    assert close_gib(rank.weights_bytes, 2.89)  # 2.875 GiB
    # 32,768 batched tokens (no chunked prefill at <= 32K): forward 32768 x (4 x 1536 + 1.5 x 17,920) x 2 B = 2.016 GiB
    # (the V1 rule would give 1.59); the sampler (256 rows) is 1.50 GiB, below it
    assert close_gib(term(p, "activation peak"), 2.02)
    assert close_gib(term(p, "non-torch"), 0.01)  # 0.16 fitted on H100 logs: +0.15 here (inside 0.25 GiB)
    assert close_gib(rank.kv_pool_bytes, 2.36)  # 2.23 GiB (-0.13)
    assert close_blocks(p.num_blocks, 5517, block)  # 5,217 blocks (-300 = -0.13 GiB)
    assert abs(p.max_concurrency - 2.69) * 32768 * block / 16 <= 0.25 * GiB  # 2.55x
    graphs = next(t for t in rank.terms if t.name.startswith("CUDA graphs"))
    assert close_gib(graphs.bytes, 0.17) and not graphs.applied  # 35 graphs: 0.32 GiB estimated (+0.15)


def test_issue_13061_two_rtx_4090_refuses_with_v0_text_and_a_checked_fix():
    # vllm-project/vllm#13061 (V0, vLLM 0.7.x): `vllm serve deepseek-ai/DeepSeek-R1-Distill-Qwen-14B
    # --tensor_parallel_size 2 --gpu_memory_utilization=0.98` on 2 x RTX 4090: "Loading model weights took 13.9476 GB";
    # a worker: 23.08 GiB usable (0.98 x 23.55), non-torch 0.25, activation 0.19 (a non-driver rank); then
    # "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in
    # KV cache (81536). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the
    # engine." The card as the log measures it (total_gpu_memory 23.55 GiB; the catalog's RTX-4090 says 23.64).
    gpu = get_gpu("RTX-4090").model_copy(update={"memory_bytes": round(23.55 * GiB)})
    spec = parse_config(R1_QWEN_14B, "deepseek-r1-distill-qwen-14b")
    engine = EngineConfig(vllm_version=V0, gpu_memory_utilization=0.98)
    p = plan(spec, gpu, engine, Layout(tp=2))
    rank = p.ranks[0]
    block = rank.bytes_per_block
    assert block == 48 * 16 * 4 * 256 * 2 == 1_572_864
    # 131,072 > 32K: chunked prefill, 2048 tokens; the driver's peak is the sampler: 256 x 152,064 x 4 B x 9.7 + 2048 x
    # 5120 x 2 B = 1.43 GiB (the other rank's 0.19 is its forward: 2048 x (20,480 + 1.5 x 13,824) x 2 B = 0.16 GiB)
    assert close_gib(term(p, "activation peak"), 23.08 - 13.9476 - 0.25 - 81536 / 16 * block / GiB)  # 1.43 vs 1.42
    assert close_gib(term(p, "non-torch"), 0.25)  # custom all-reduce off: the 4090 has no P2P
    assert not p.starts and not p.fits
    assert p.start_error == ("ValueError: The model's max seq len (131072) is larger than the maximum number of tokens "
                             f"that can be stored in KV cache ({p.kv_cache_tokens}). Try increasing "
                             "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.")
    # from flags alone 83,520 tokens: the weights are 0.19 GiB under the logged 13.9476, the rest follows
    assert close_blocks(p.num_blocks, 81536 // 16, block) and close_gib(rank.kv_pool_bytes, 81536 / 16 * block / GiB)
    # with the logged weights: 81,424 tokens (-0.14 %)
    exact = plan(spec, gpu, engine.model_copy(update={"weights_bytes": round(13.9476 * GiB)}), Layout(tp=2))
    assert abs(exact.kv_cache_tokens - 81536) <= 0.01 * 81536 and "(131072)" in exact.start_error
    # the fix it proposes was planned: the longest context whose full prompt V0 admits (blocks less the 1 %
    # watermark, x 16), and it starts
    fix = next(s for s in p.suggestions if s.startswith("--max-model-len"))
    shorter = int(fix.split()[1].rstrip(":"))
    assert shorter == (p.num_blocks - p.num_blocks // 100) * 16 == p.max_model_len_that_starts
    again = plan(spec, gpu, engine.model_copy(update={"max_model_len": shorter}), Layout(tp=2))
    assert again.starts and again.fits and again.start_error is None and again.num_blocks == p.num_blocks
    assert any(s.startswith("--kv-cache-dtype fp8") for s in p.suggestions)


def test_gateway_api_llama_2_7b_blocks_from_the_logged_activation():
    # kubernetes-sigs/gateway-api-inference-extension PR #550 (liu-cong, 03-21 log, V0 worker.py / executor_base.py),
    # Llama-2-7B with LoRA adapters on H100: "total_gpu_memory (79.19GiB) x gpu_memory_utilization (0.90) = 71.27GiB";
    # "model weights take 12.55GiB; non_torch_memory takes 0.16GiB; PyTorch activation peak memory takes 2.38GiB; the
    # rest of the memory reserved for KV Cache is 56.18GiB."; "# cuda blocks: 7191, # CPU blocks: 512". LoRA's profile
    # (dummy adapters, Punica buffers) is not modeled, so the logged activation is passed in; the rest is ours.
    p = plan(load_preset("llama-2-7b"), H100, EngineConfig(vllm_version=V0, activation_bytes=round(2.38 * GiB)))
    assert p.ranks[0].bytes_per_block == 32 * 16 * 32 * 256 * 2 == 8 * 2**20  # 8 MiB
    assert close_gib(p.ranks[0].weights_bytes, 12.55) and close_gib(p.ranks[0].kv_pool_bytes, 56.18)
    # 7191 logged; kvplan 7190 since it counts the 1 MiB rotary table (4,096 x 128 x 2 B) in the weights: 56.1787 GiB
    # = 7190.88 blocks, where every logged input is rounded to 0.01 GiB (1.3 blocks)
    assert p.num_blocks == 7190 and "# cuda blocks: 7190, # CPU blocks: 512" in p.engine_log


@pytest.mark.parametrize("preset,field", [
    ("deepseek-v2-lite", "model"),  # MLA: V0's block size and chunked-prefill default moved inside the V0 line
    ("qwen3-next-80b-a3b", "model"),  # linear attention + full attention hybrid
    ("nemotron-h-56b", "model"),  # Mamba hybrid
    ("qwen3-vl-8b-instruct", "model"),  # multimodal: V0 profiles with dummy images
    ("gpt-oss-20b", "weight_format"),  # MXFP4 / gpt-oss: 0.10.1+, V1 only
])
def test_v0_refuses_what_it_cannot_plan(preset, field):
    error = ConfigError if field == "model" else PlanInputError
    with pytest.raises(error) as exc:
        plan(load_preset(preset), H100, EngineConfig(vllm_version=V0))
    assert exc.value.field == field and ("V1" in exc.value.message or "V0" in exc.value.message)


def test_v0_refuses_v1_only_flags():
    llama = load_preset("llama-3.1-8b")
    for update, field in (({"kv_cache_memory_bytes": 10 * GiB}, "kv_cache_memory_bytes"),
                          ({"decode_context_parallel_size": 2}, "decode_context_parallel_size")):
        with pytest.raises(PlanInputError) as exc:
            plan(llama, H100, EngineConfig(vllm_version=V0, **update), Layout(tp=2))
        assert exc.value.field == field


def test_sliding_window_is_allocated_full_length_in_v0():
    # Mistral-7B-v0.1 (W 4096) at 32K: V0's CacheEngine keeps all 32 layers for every token, so the pool holds 8x
    # fewer tokens of window than V1's sliding group would need; the plan says so
    p = plan(load_preset("mistral-7b-v0.1"), H100, EngineConfig(vllm_version=V0, max_model_len=32768))
    assert p.ranks[0].bytes_per_block == 32 * 16 * 8 * 256 * 2 and p.kv_groups[0].blocks_per_request == 2048
    assert any("sliding-window layers cost as much as full ones" in w for w in p.warnings)


def test_cli_and_link_accept_the_v0_profile(capsys):
    from kvplan.cli import main
    from kvplan.web.state import decode

    assert main(["plan", "qwen3-0.6b", "--vllm-version", "0.7", "--max-model-len", "8192",
                 "--gpu-memory-utilization", "0.8", "--max-num-seqs", "8"]) == 0
    out = capsys.readouterr().out
    assert "vllm 0.7 (V0 engine) would log:" in out and "# CPU blocks: 2340" in out
    state, warnings = decode({"v": "1", "vv": "0.7"})
    assert state.vllm_version == "0.7" and warnings == []


def test_sidebar_lists_the_v0_engine():
    from tests.app_util import run_app

    at = run_app({"v": "1", "m": "qwen3-0.6b", "vv": "0.7", "len": "8192"})
    at.session_state["kv.knobs"] = True
    at.run()
    box = next(s for s in at.sidebar.selectbox if s.label == "vLLM version")
    assert box.value == "0.7" and any("0.7 (V0 engine)" in o for o in box.options)


def test_gpus_page_shows_a_v0_refusal_instead_of_failing():
    from tests.app_util import run_app

    at = run_app({"v": "1", "m": "deepseek-v2-lite", "vv": "0.7"}, "pages/gpus.py")  # run_app asserts no exception
    assert any("V0 engine planning covers full and sliding" in e.value for e in at.error)


@pytest.mark.parametrize("max_len,kv_gib,peak_gib,blocks,starts", [
    (20000, 3.81, 17.06, 1952, True),
    (29000, 2.89, 17.98, 1478, False),
])
def test_issue_10517_v0_6_4_llama_3_1_8b_rtx_3090(max_len, kv_gib, peak_gib, blocks, starts):
    # vllm-project/vllm#10517, kaspersiminski's comment (2024-12-02), RTX 3090, meta-llama/Llama-3.1-8B-Instruct, only
    # --max-model-len set (vLLM 0.6.4's "Memory profiling results" line): "Loading model weights took 14.9888 GB";
    # 20k: "total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB peak_torch_memory=17.06GiB
    # memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB kv_cache_size=3.81GiB gpu_memory_utilization=0.90",
    # "GPU blocks: 1952, # CPU blocks: 2048", "Maximum concurrency for 20000 tokens per request: 1.56x";
    # 29k: "peak_torch_memory=17.98GiB ... kv_cache_size=2.89GiB", "# GPU blocks: 1478, # CPU blocks: 2048", "0.82x",
    # "The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in KV cache
    # (23648)". No chunked prefill at <= 32K: the profile run prefills max_model_len tokens.
    p = plan(load_preset("llama-3.1-8b"), get_gpu("RTX-3090"), EngineConfig(vllm_version="0.6", max_model_len=max_len))
    rank = p.ranks[0]
    block = rank.bytes_per_block
    assert block == 2 * 2**20 and V0_SWAP_SPACE_BYTES // block == 2048
    assert close_gib(rank.weights_bytes, 14.9888)  # 14.96 GiB
    assert close_gib(term(p, "non-torch"), 0.35)  # fitted to these lines: the CUDA context counts in 0.6.4
    # peak_torch_memory counts the weights: 14.96 + 20000 x (4 x 4096 + 1.5 x 28,672) x 2 B = 17.17 (+0.11); 18.17
    assert close_gib(rank.weights_bytes + term(p, "activation peak"), peak_gib)
    assert close_gib(rank.kv_pool_bytes, kv_gib)  # 3.68 (-0.13) / 2.69 (-0.20) GiB
    assert close_blocks(p.num_blocks, blocks, block)  # 1886 / 1376 blocks
    assert p.starts is starts
    assert any(line.startswith("Memory profiling results: total_gpu_memory=23.56GiB") for line in p.engine_log)
    if starts:
        assert abs(p.max_concurrency - 1.56) * max_len * block / 16 <= 0.25 * GiB  # 1.51x
        assert f"# GPU blocks: {p.num_blocks}, # CPU blocks: 2048" in p.engine_log
    else:
        assert p.start_error.startswith(f"ValueError: The model's max seq len (29000) is larger than the maximum "
                                        f"number of tokens that can be stored in KV cache ({16 * p.num_blocks})")
