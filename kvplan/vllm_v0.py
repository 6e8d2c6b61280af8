"""vLLM's V0 engine: how it sizes the KV cache, in its own terms (profiles "0.6", "0.6.5" and "0.7" in kvplan.engines).

V0 is the engine of vLLM up to 0.7.x and, with ``VLLM_USE_V1=0``, of 0.8.x and 0.9.x. Read in the 0.6.3.post1,
0.6.4.post1, 0.6.5, 0.6.6.post1, 0.7.3, 0.8.5 and 0.9.2 wheels from PyPI (read 2026-12):

- budget (``vllm/worker/worker.py Worker.determine_num_available_blocks`` + ``vllm/utils.py memory_profiling``):
  available = total_gpu_memory x gpu_memory_utilization - (weights + torch peak increase of the profile run
  + non-torch increase since the worker's baseline snapshot); num_gpu_blocks = int(available // block bytes),
  num_cpu_blocks = int(swap_space (4 GiB) // block bytes). The executor (``executor_base.py``) takes the minimum
  over workers of both. The same in 0.6.5 - 0.9.2 (profile 0.7). 0.6.4 (profile 0.6) subtracts torch's peak
  allocation and everything outside torch's allocations, the CUDA context included, and prints "Memory profiling
  results: ..."; 0.6.0 - 0.6.3 subtract cudaMemGetInfo's growth since the worker started (the same terms, with the
  allocator's cached reserve instead of its peak allocation) and print the blocks line only.
- profile run (``worker/model_runner.py GPUModelRunnerBase.profile_run``): ``max_num_seqs`` dummy prompts that
  share ``max_num_batched_tokens`` tokens, then the sampler over one row per prompt with top_p 0.99 and
  top_k vocab - 1 (``_apply_top_k_top_p``: sort, softmax, cumsum, scatter over fp32 logits). Only the driver
  worker (TP rank 0 of the last stage) samples (``execute_model``: ``if not self.is_driver_worker: return []``),
  so it has the largest peak, and the minimum over workers follows it.
- defaults (``engine/arg_utils.py``, ``config.py SchedulerConfig``): max_num_seqs 256; chunked prefill on only for
  max_model_len > 32,768 (not for sliding-window, multimodal or MLA models), then max_num_batched_tokens 2048
  (512 up to 0.6.4), otherwise max(max_model_len, 2048) -- the profile run prefills a whole max_model_len prompt.
- KV (``worker/cache_engine.py CacheEngine.get_cache_block_size``): one block = attention layers x 16 tokens x
  (K + V) x KV heads a rank x head size x dtype: every layer for every token (no hybrid manager; a sliding window
  frees blocks only at run time). No null block.
- start check (``worker.py raise_if_cache_size_invalid``): blocks <= 0 -> "No available memory for the cache
  blocks"; max_model_len > 16 x blocks -> "The model's max seq len (L) is larger than the maximum number of tokens
  that can be stored in KV cache (16 x blocks)".
- CUDA graphs are captured after the KV cache (``Worker._warm_up_model``), out of (1 - util): batch sizes
  [1, 2, 4] + 8 i up to the first >= max_num_seqs (``config.py VllmConfig._set_cudagraph_sizes``, V0 branch).
- scheduling (``core/block_manager.py SelfAttnBlockSpaceManager``): a prompt is admitted while free blocks minus
  its blocks stay >= the watermark, int(0.01 x num_gpu_blocks).
"""

import math

from kvplan.engines import vllm_has
from kvplan.errors import ConfigError, PlanInputError
from kvplan.layers import ATTENTION_KINDS, cache_parts
from kvplan.units import GiB, cdiv

V0_MAX_NUM_SEQS = 256  # engine/arg_utils.py: "Set max_num_seqs to 256 for VLLM_V0" (0.8.5; 0.6.6 / 0.7.3 alike)
V0_CHUNKED_ABOVE = 32768  # arg_utils.py use_long_context = max_model_len > 32768
V0_MNBT = 2048  # config.py SchedulerConfig: 2048 with chunked prefill, else max(max_model_len, 2048)
# With chunked prefill: 2048 from 0.6.5 (config.py "a balance between ITL and TTFT"), 512 in 0.6.3 / 0.6.4 ("the
# best balance between ITL and TTFT on A100").
V0_CHUNKED_MNBT = {"0.6": 512}  # 0.6.4 config.py: 512; 2048 from 0.6.5 (the 0.6.5 / 0.6.6.post1 wheels)
V0_SWAP_SPACE_BYTES = 4 * GiB  # arg_utils.py EngineArgs.swap_space = 4 (GiB per GPU)
V0_WATERMARK = 0.01  # CacheConfig / BlockSpaceManager watermark
# The forward peak of the profile run: 4 hidden-wide buffers (residual, hidden, attention out, norm) and the MLP's
# gate_up output (2 I) alive together with SiluAndMul's output (I) -- 1.5 x the gate+up width a rank holds. Fitted
# to the Qwen2.5-1.5B T4 log (32,768 batched tokens: 2.02 GiB logged, 2.02 predicted; the V1 rule, gate+up once
# plus q/k/v, gives 1.59); Llama-3.1-8B on a 3090 (#10517, 0.6.4): 2.21 / 3.21 vs 2.07 / 2.99 GiB logged at 20K / 29K
# tokens (the V1 rule: 1.91 / 2.77). See tests/test_engine_v0.py.
V0_FORWARD_MLP_COPIES = 1.5
# Kinds V0 can hold: one uniform cache over every attention layer (sliding layers are allocated full length).
V0_KINDS = ("full_attention", "sliding_attention", "none")


def refusal(spec, engine, layout, max_len: int) -> tuple[str, str] | None:
    """(field, message) when the V0 profile cannot plan this model or these flags faithfully, else None."""
    kinds = {c.kind for layer in spec.layers for c in cache_parts(layer.cache)}
    bad = sorted(kinds - set(V0_KINDS))
    if bad:
        return ("model", f"{spec.name}: V0 engine planning covers full and sliding-window attention only; this model "
                f"caches {', '.join(bad)} (V0 keeps MLA latents, Mamba / linear-attention state or chunked-local "
                "attention outside the one uniform CacheEngine modeled here, and its MLA block size changed inside the "
                "V0 line): plan it with a V1 profile (--vllm-version 0.10 or newer)")
    per_token = {c.kv_bytes_per_token("vllm", 1, 2) for layer in spec.layers for c in cache_parts(layer.cache)
                 if c.kind in ATTENTION_KINDS}
    if len(per_token) > 1:
        return ("model", f"{spec.name}: layers with different KV sizes; V0's CacheEngine sizes every layer from one "
                "head count and head size (cache_engine.py get_cache_block_size): plan it with a V1 profile")
    if spec.towers and not engine.language_model_only:
        return ("model", f"{spec.name}: multimodal; V0 profiles it with dummy images (max_num_seqs cut to "
                "max_num_batched_tokens // image tokens, the vision encoder's activations), which is not modeled: "
                "plan it with a V1 profile")
    if engine.language_model_only:
        return ("language_model_only", "--language-model-only came with vLLM 0.17 (V1); V0 has no such flag")
    if engine.kv_cache_memory_bytes is not None:
        return ("kv_cache_memory_bytes", "--kv-cache-memory-bytes came with V1 (0.10); V0 always profiles its pool")
    if engine.speculative_method != "none":
        return ("speculative_config", "MTP speculative decoding in V0 is not modeled: plan it with a V1 profile")
    if (engine.weight_format and "mxfp4" in engine.weight_format.lower()) or spec.model_type == "gpt_oss":
        return ("weight_format", "MXFP4 / gpt-oss came with vLLM 0.10.1, V1 only")
    if engine.decode_context_parallel_size > 1:
        return ("decode_context_parallel_size", "V0 has no decode context parallelism (it came with 0.11)")
    return None


def check(spec, engine, layout, max_len: int) -> None:
    """Raise ConfigError for a model V0 is not planned for, PlanInputError for a V1-only flag."""
    bad = refusal(spec, engine, layout, max_len)
    if bad:
        raise (ConfigError if bad[0] == "model" else PlanInputError)(*bad)


def warnings(spec) -> list[str]:
    """What a V0 plan of this model should say aloud."""
    if any(c.kind == "sliding_attention" for layer in spec.layers for c in cache_parts(layer.cache)):
        return ["V0 allocates every layer's KV for every token (no hybrid KV-cache manager): sliding-window layers "
                "cost as much as full ones, and chunked prefill stays off, so the profile run prefills a whole "
                "max_model_len prompt"]
    return []


def chunked_prefill_default(spec, max_len: int) -> bool:
    """V0 turns chunked prefill on by itself only above 32K, and never for a sliding window (or MLA / multimodal,
    refused above): ``EngineArgs._set_default_args_v0`` (0.8.5), ``create_engine_config`` (0.6.6 / 0.7.3)."""
    windowed = any(c.kind == "sliding_attention" for layer in spec.layers for c in cache_parts(layer.cache))
    return max_len > V0_CHUNKED_ABOVE and not windowed


def batch_limits(spec, engine, max_len: int) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) as V0 picks them (explicit flags win).

    Worked number: Qwen2.5-1.5B at max_model_len 32,768 -> (32768, 256); DeepSeek-R1-Distill-Qwen-14B at 131,072
    -> chunked prefill, (2048, 256)."""
    chunked = V0_CHUNKED_MNBT.get(engine.vllm_version, V0_MNBT)
    tokens = chunked if chunked_prefill_default(spec, max_len) else max(max_len, V0_MNBT)
    return engine.max_num_batched_tokens or tokens, engine.max_num_seqs or V0_MAX_NUM_SEQS


def capture_sizes(max_num_seqs: int) -> list[int]:
    """V0's CUDA-graph batch sizes: [1, 2, 4] + 8 i up to the first size >= max_num_seqs (at most 8192).
    Worked number: 256 seqs -> 35 sizes (the 0.7.2 T4 log: "Capturing CUDA graph shapes: 35/35")."""
    possible = [1, 2, 4] + [8 * i for i in range(1, 1025)]
    top = next((s for s in possible if s >= max_num_seqs), possible[-1])
    return [s for s in possible if s <= top]


def kv_group(layers, block_size: int, tp: int, kv_b: int, max_len: int):
    """(groups, bytes_per_block): V0's one uniform cache over every attention layer of the stage.

    bytes_per_block = block_size x sum over attention layers of K + V bytes a token on this rank.
    Worked number: Qwen2-14B at TP 2, 48 layers x 16 x 4 heads x (128 + 128) x 2 B = 1,572,864 B (1.5 MiB)."""
    from kvplan.plan import KVGroup

    per_token, n = 0, 0
    for layer, count in layers:
        for cache in cache_parts(layer.cache):
            if cache.kind in ATTENTION_KINDS:
                per_token += cache.kv_bytes_per_token("vllm", tp, kv_b) * count
                n += count
    if not n:
        return [], 0
    page = per_token // n * block_size
    group = KVGroup(kind="full_attention", layers=n, padding_layers=0, page_bytes=page,
                    blocks_per_request=cdiv(max_len, block_size))
    return [group], per_token * block_size


def activation(spec, tp: int, tokens: int, rows: int, act_b: int, copies: float, last_stage: bool) -> int:
    """Torch peak increase of V0's profile run on the driver worker (bytes).

    forward = tokens x (4 x hidden + 1.5 x this rank's widest gate+up (top-k experts included)) x act_b;
    sampler = rows x vocab x 4 B x ``copies`` + tokens x hidden x act_b (the hidden states, still alive), on the
    last stage only (rows = max_num_seqs dummy prompts); peak = max(forward, sampler).
    Worked number: Meta-Llama-3-8B, 8192 tokens, 256 rows, 9.7 copies: 256 x 128,256 x 4 x 9.7 + 8192 x 4096 x 2
    = 1.25 GiB (vLLM PR #10511 logged 1.26 GiB at TP 1 and at TP 2).
    """
    from kvplan.plan import _widths

    _, mlp_w = spec.memo("widths", lambda: _widths(spec))
    forward = int(tokens * (4 * spec.hidden_size + V0_FORWARD_MLP_COPIES * cdiv(mlp_w, tp)) * act_b)
    if not last_stage:
        return forward
    sampler = int(rows * spec.vocab_size * 4 * copies) + tokens * spec.hidden_size * act_b
    return max(forward, sampler)


def budget(spec, gpu, engine, prof, layout, weights: int, mnbt: int, max_seqs: int, act_b: int, last_stage: bool):
    """(terms, pool) of one rank: total x util - weights - activation peak - non-torch (V0 worker.py)."""
    from kvplan.engines import (
        VLLM_CUDA_GRAPH_FIRST_BYTES,
        VLLM_CUDA_GRAPH_PER_GRAPH_BYTES,
        non_torch_bytes,
        sampler_path,
    )
    from kvplan.plan import Term

    total = gpu.memory_bytes
    util = engine.gpu_memory_utilization or prof.gpu_memory_utilization
    requested = math.floor(total * util)
    terms = [Term(name="device memory", bytes=total, basis=gpu.memory_basis,
                  source=f"{gpu.name}: memory the runtime exposes (total_gpu_memory)"),
             Term(name=f"outside the budget: (1 - {util}) x device", bytes=total - requested, basis="engine rule",
                  source=f"--gpu-memory-utilization (default {prof.gpu_memory_utilization}); V0 worker.py "
                         "memory_for_current_instance = total_gpu_memory x gpu_memory_utilization"),
             Term(name="weights", bytes=weights, basis=engine.weights_basis if engine.weights_bytes is not None else "exact",
                  source=("this rank's tensors in the checkpoint's safetensors headers" if engine.weights_basis ==
                          "checkpoint headers" else "typed in (Loading model weights took X GB)")
                  + (f" ({engine.weights_source})" if engine.weights_source else "") if engine.weights_bytes is not None else
                  "sum of this rank's shards as kvplan lays them out (V0 model_runner.load_model)")]
    rows = min(mnbt, max_seqs)
    path = sampler_path(prof, engine)
    copies = prof.sampler_copies[path]
    act = engine.activation_bytes
    if act is None:
        act = activation(spec, layout.tp, mnbt, rows, act_b, copies, last_stage)
    terms.append(Term(name=f"activation peak ({mnbt} batched tokens, {rows} sampler rows)", bytes=act,
                      basis="measured" if engine.activation_bytes is not None else "fitted",
                      source=f"V0 profile_run on the driver worker: forward (MLP gate_up + its activation) or the "
                             f"{path} sampler over fp32 logits x {copies} copies, whichever is larger; estimate: fitted "
                             "to public V0 logs"))
    non_torch, why = non_torch_bytes(prof, engine, layout.tp, layout.pp, "NVLINK" in gpu.interconnect.upper())
    terms.append(Term(name="non-torch memory", bytes=non_torch, basis="fitted",
                      source=f"vLLM's non_torch_increase: {why} (V0); estimate: fitted to public logs"))
    if not engine.enforce_eager:
        n = len(capture_sizes(max_seqs))
        graphs = VLLM_CUDA_GRAPH_FIRST_BYTES + (n - 1) * VLLM_CUDA_GRAPH_PER_GRAPH_BYTES
        terms.append(Term(name="CUDA graphs (captured after the KV cache, from the memory outside the budget)",
                          bytes=graphs, basis="estimated", applied=False,
                          source=f"V0 Worker._warm_up_model captures {n} batch sizes after the KV cache: 128 MiB + "
                                 f"({n} - 1) x 6 MiB (V1 fit; V0 logged 0.17 / 0.21 GiB for 35 graphs)"))
    return terms, requested - weights - act - non_torch


def capacity(num_blocks: int, block_size: int, max_len: int) -> tuple[int, float, int, int]:
    """(tokens, concurrency, whole requests, longest max_model_len that starts), as V0 counts them.

    tokens = block_size x num_gpu_blocks (the figure in its error text); concurrency = that / max_model_len
    (executor_base.py "Maximum concurrency"); whole = (blocks - watermark) // cdiv(L, block_size). The longest
    max_model_len reported is the one whose full-length prompt the block manager still admits, (blocks - watermark)
    x block_size: up to block_size x blocks V0 starts, but such a prompt is "too long and exceeds the capacity of
    block_manager" (AllocStatus.NEVER) and is refused.
    Worked number: 36,184 blocks at 8192 -> 578,944 tokens, 70.67x, 70 whole requests (watermark 361 blocks).
    """
    tokens = num_blocks * block_size
    conc = tokens / max_len
    admitted = max(num_blocks - int(V0_WATERMARK * num_blocks), 0)
    return tokens, conc, admitted // cdiv(max_len, block_size), admitted * block_size


def start_error(rank, max_len: int, num_blocks: int, block_size: int) -> str | None:
    """V0's own refusal (worker.py raise_if_cache_size_invalid), or None when it starts."""
    if rank.kv_pool_bytes <= 0 or num_blocks <= 0:
        return ("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
                "initializing the engine.")
    if max_len > block_size * num_blocks:
        return (f"ValueError: The model's max seq len ({max_len}) is larger than the maximum number of tokens that can "
                f"be stored in KV cache ({block_size * num_blocks}). Try increasing `gpu_memory_utilization` or "
                "decreasing `max_model_len` when initializing the engine.")
    return None


def cpu_blocks(ranks) -> int:
    """# CPU blocks: swap_space // block bytes, the minimum over workers."""
    sizes = [r.bytes_per_block for r in ranks if r.bytes_per_block]
    return min(V0_SWAP_SPACE_BYTES // b for b in sizes) if sizes else 0


def log_lines(engine, prof, rank, num_blocks: int, n_cpu_blocks: int, max_len: int, block_size: int) -> list[str]:
    """The start-up lines V0 prints (model_runner.py, worker.py, executor_base.py), figures as it formats them."""
    util = engine.gpu_memory_utilization or prof.gpu_memory_utilization
    total = rank.device_bytes
    act = next(t.bytes for t in rank.terms if t.name.startswith("activation peak"))
    nt = next(t.bytes for t in rank.terms if t.name == "non-torch memory")
    if not vllm_has(prof.version, "v0_profile_accounting"):  # 0.6.4 worker.py; peak_torch_memory counts the weights, initial usage the context
        lines = [f"Loading model weights took {rank.weights_bytes / GiB:.4f} GB",
                 f"Memory profiling results: total_gpu_memory={total / GiB:.2f}GiB initial_memory_usage="
                 f"{(rank.weights_bytes + nt) / GiB:.2f}GiB peak_torch_memory={(rank.weights_bytes + act) / GiB:.2f}GiB "
                 f"memory_usage_post_profile={(rank.weights_bytes + nt) / GiB:.2f}GiB non_torch_memory={nt / GiB:.2f}GiB "
                 f"kv_cache_size={rank.kv_pool_bytes / GiB:.2f}GiB gpu_memory_utilization={util:.2f}"]
        if num_blocks > 0:
            lines += [f"# GPU blocks: {num_blocks}, # CPU blocks: {n_cpu_blocks}",
                      f"Maximum concurrency for {max_len} tokens per request: {num_blocks * block_size / max_len:.2f}x"]
        return lines
    lines = [f"Loading model weights took {rank.weights_bytes / GiB:.4f} GB",
             f"the current vLLM instance can use total_gpu_memory ({total / GiB:.2f}GiB) x gpu_memory_utilization "
             f"({util:.2f}) = {total * util / GiB:.2f}GiB",
             f"model weights take {rank.weights_bytes / GiB:.2f}GiB; non_torch_memory takes {nt / GiB:.2f}GiB; "
             f"PyTorch activation peak memory takes {act / GiB:.2f}GiB; the rest of the memory reserved for KV Cache "
             f"is {rank.kv_pool_bytes / GiB:.2f}GiB."]
    if num_blocks <= 0:
        return lines
    lines.append(f"# cuda blocks: {num_blocks}, # CPU blocks: {n_cpu_blocks}")
    lines.append(f"Maximum concurrency for {max_len} tokens per request: {num_blocks * block_size / max_len:.2f}x")
    return lines

