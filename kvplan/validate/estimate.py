"""What the reference run should need, from the spec alone: cache tensors, workspace, bytes moved. No torch.

The weight and KV figures a run is checked against come from the planner itself
(``kvplan.weights.weight_bytes``, ``kvplan.kv.kv_cache_bytes``, ``kvplan.paging.page_sequences``).
This module adds what the planner does not model and the run needs to be safe and to be judged:

- ``static_cache_bytes``: what the static cache preallocates (full layers max_len slots, sliding /
  chunked rings of min(max_len, window) slots, MLA latent, recurrent state).
- ``workspace_bytes``: transient tensors of one forward call of *this* reference decoder, the
  largest layer's live set at its worst moment (an estimate; the run reports its error):

      base      = 2 N h b                          residual + normed input, N = B x T new tokens
      attention = base + N (nq d [x2 if gated] + nkv (d + dv)) b      q, k, v
                  + B tc nq d b                     the grouped copy of a query chunk (tc <= 1024 rows)
                  + 8 B nq tc S                     fp32 scores and fp32 probabilities (S keys)
                  + N nq dv b                       the attention output
                  + cache copies: ring + new tokens (static, several tokens) or the gathered
                    blocks of one layer, 2 x B S nkv (d + dv) b (paged)
      mlp       = base + 3 N I b + N h b           act(gate), up, their product; down's output
      moe       = base + N h b (output) + 8 N E (router, fp32) + per busy expert
                  ceil(N k / E) tokens x (2 h + 3 I) b, + the shared expert's MLP
      logits    = B V b (last position) or N V b (every position, the correctness check)

- ``decode_bytes_moved``: bytes one decode step must read (weights it touches + KV it attends
  over), for the memory-bandwidth roofline.
"""

from kvplan.kv import kv_cache_bytes, state_bytes_per_sequence
from kvplan.layers import ATTENTION_KINDS
from kvplan.spec import Linear, ModelSpec
from kvplan.units import DTYPE_BITS, cdiv

ATTN_CHUNK = 1024  # = decoder.ATTN_CHUNK (kept here so this module needs no torch)
GPU_LIBRARY_WORKSPACE = 32 * 2**20  # cuBLAS workspace on Hopper, allocated through torch's allocator


def dtype_bytes(fmt: str) -> int:
    return DTYPE_BITS[fmt] // 8


def with_dtype(spec: ModelSpec, fmt: str) -> ModelSpec:
    """The spec as run: same shapes, weights / KV / state in ``fmt``."""
    return spec if spec.dtype == fmt and spec.quantization is None else spec.model_copy(
        update={"dtype": fmt, "quantization": None, "quantization_exclude": ()})


def static_slots(cache, max_len: int) -> int:
    """Token slots the static cache preallocates for one sequence in a layer of this kind."""
    if cache.kind == "sliding_attention":
        return min(max_len, cache.sliding_window)
    if cache.kind == "chunked_attention":
        return min(max_len, cache.attention_chunk_size)
    if cache.kind in ATTENTION_KINDS:
        return max_len
    return 0


def static_cache_bytes(spec: ModelSpec, batch: int, max_len: int, fmt: str) -> int:
    b = dtype_bytes(fmt)
    total = 0
    for layer in spec.layers:
        c = layer.cache
        if c.kind in ATTENTION_KINDS:
            total += batch * static_slots(c, max_len) * c.elems_per_token("vllm") * b
        else:
            total += batch * c.state_bytes("vllm", 1, b)
    return total


def paged_pool_bytes(spec: ModelSpec, batch: int, num_blocks: int, block_size: int, fmt: str) -> int:
    b = dtype_bytes(fmt)
    per_token = sum(layer.cache.elems_per_token("vllm") for layer in spec.layers) * b
    return num_blocks * block_size * per_token + batch * state_bytes_per_sequence(with_dtype(spec, fmt), "vllm")


def _mlp_bytes(comps, n: int, b: int) -> int:
    """Peak of a dense MLP's intermediates for n tokens."""
    lins = [c for c in comps if isinstance(c, Linear) and not c.name.endswith("_gate")]
    if not lins:
        return 0
    inter = max(c.out_features for c in lins)
    gated = any(c.name.rsplit(".", 1)[-1] in ("gate_proj", "gate_up_proj") for c in lins)
    if any(c.name.endswith("gate_up_proj") for c in lins):
        inter //= 2
    return (3 if gated else 2) * n * inter * b


def workspace_bytes(spec: ModelSpec, batch: int, new_tokens: int, context: int, fmt: str, *,
                    paged: bool = False, all_logits: bool = False, device: str = "cpu") -> int:
    """Transient bytes at the worst moment of one forward call (see module doc).

    ``context`` = tokens visible after this call (cached + new). Static ring layers see
    min(context - new, window) cached slots plus the new tokens.
    """
    b = dtype_bytes(fmt)
    B, T = batch, new_tokens
    N = B * T
    h = spec.hidden_size
    nq = spec.num_attention_heads
    tc = min(T, ATTN_CHUNK)
    base = 2 * N * h * b
    worst = 0
    for layer in set(spec.layers):
        c = layer.cache
        attn = 0
        if c.kind in ("full_attention", "sliding_attention", "chunked_attention"):
            d, dv, nkv = c.head_dim, c.v_head_dim, c.num_key_value_heads
            S = context
            copies = 0
            if paged:
                copies = 2 * B * S * nkv * (d + dv) * b
            elif c.kind != "full_attention":
                slots = static_slots(c, context)
                S = slots if T == 1 else min(context - T, slots) + T
                copies = B * S * nkv * (d + dv) * b if T > 1 else 0
            gated = any(isinstance(x, Linear) and x.name == "q_proj" and x.out_features == 2 * nq * d
                        for x in layer.attention)
            qkv = N * (nq * d * (2 if gated else 1) + nkv * (d + dv)) * b
            attn = base + qkv + B * tc * nq * d * b + 8 * B * nq * tc * S + N * nq * dv * b + copies
        elif c.kind == "mla":
            r, p, nope, dv = c.kv_lora_rank, c.qk_rope_head_dim, c.qk_nope_head_dim, c.v_head_dim
            S = context
            copies = B * S * (r + p) * b if paged else 0
            proj = N * (nq * (nope + p) + 2 * (r + p) + nq * (2 * r + p) + nq * r + nq * dv) * b
            attn = base + proj + B * tc * nq * (r + p) * b + 8 * B * nq * tc * S + copies
        mlp = base + _mlp_bytes(layer.mlp, N, b) + N * h * b
        if layer.experts is not None:
            ex = layer.experts
            per_expert = cdiv(N * ex.num_experts_per_tok, ex.num_experts)
            inter = max(x.out_features for x in ex.linears if x.name.rsplit(".", 1)[-1] != "down_proj")
            if any(x.name.endswith("gate_up_proj") for x in ex.linears):
                inter //= 2
            shared_out = N * h * b if layer.mlp else 0
            moe = base + shared_out + N * h * b + 8 * N * ex.num_experts + per_expert * (2 * h + 3 * inter) * b
            mlp = max(mlp, moe)
        worst = max(worst, attn, mlp)
    logits = (N if all_logits else B) * spec.vocab_size * b
    extra = GPU_LIBRARY_WORKSPACE if device == "cuda" else 0
    return worst + logits + extra


def decode_bytes_moved(spec: ModelSpec, batch: int, tokens_held: int, fmt: str) -> int:
    """Bytes one decode step reads: every weight it uses once, plus the KV it attends over.

    Token and position tables contribute only the rows looked up (B rows); a tied table is read
    whole as the lm_head. Routed experts: at most min(E, B x k) distinct experts per layer can be
    busy, so that many are counted (an upper bound on the bytes, so a lower bound on tokens/s).
    KV: the planner's held bytes at ``tokens_held`` tokens per sequence (recurrent state included).
    """
    from kvplan.weights import weight_bytes

    run = with_dtype(spec, fmt)
    b = dtype_bytes(fmt)
    total = weight_bytes(run, fmt).total_bytes
    for comp in spec.embeddings:  # a table is read only at the B rows looked up
        rows = comp.out_features if isinstance(comp, Linear) else comp.numel // spec.hidden_size
        if comp is spec.embeddings[0] and spec.tie_word_embeddings:
            continue  # read whole as the lm_head
        total -= (rows - min(rows, batch)) * spec.hidden_size * b
    for layer in spec.layers:
        ex = layer.experts
        if ex is not None:
            idle = ex.num_experts - min(ex.num_experts, batch * ex.num_experts_per_tok)
            total -= idle * ex.numel_per_expert * b
    total += kv_cache_bytes(run, [tokens_held] * batch, fmt, "vllm").kv_bytes
    return total


def prefill_flops(spec: ModelSpec, batch: int, tokens: int) -> int:
    """2 x active parameters x tokens, plus attention's QK^T and PV (causal, so half of T x T)."""
    from kvplan.params import count_params

    active = count_params(spec).active_params
    attn = 0
    for layer in spec.layers:
        c = layer.cache
        if c.kind in ("full_attention", "sliding_attention", "chunked_attention"):
            attn += 2 * spec.num_attention_heads * (c.head_dim + c.v_head_dim) * tokens * tokens // 2
        elif c.kind == "mla":
            attn += 2 * spec.num_attention_heads * (2 * c.kv_lora_rank + c.qk_rope_head_dim) * tokens * tokens // 2
    return batch * (2 * active * tokens + attn)
