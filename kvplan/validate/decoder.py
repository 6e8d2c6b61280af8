"""The reference decoder: a ``ModelSpec`` turned into a small torch model with random weights.

In the spirit of gpt-fast's ``model.py``: one file, no framework, shapes in comments. Every
parameter has exactly the shape of a spec component (Linear [out, in] + bias [out]; Norm [dim]
(+ bias); Tensor [numel]; routed experts stacked [E, out, in]), and all of them are views into one
flat buffer, so the parameter bytes equal ``kvplan.weights.weight_bytes(spec, dtype)`` exactly and
the device sees a single allocation.

Shapes: B batch, T new tokens this call, S keys visible (cached + new), h hidden size,
nq query heads, nkv KV heads, G = nq // nkv query heads per KV head, d head dim, V vocabulary.

What runs:
- attention: MHA / GQA / MQA with *grouped* access: the G query heads of a KV head are folded into
  the query rows, ``[B, nkv, G*T, d] @ [B, nkv, d, S]``, so each cached K/V head is read once and
  never copied up to nq heads (``repeat_interleave`` would hide the memory saving GQA buys).
  Softmax in fp32. Prefill runs in query chunks of ``ATTN_CHUNK`` rows, bounding the score matrix.
- positions: RoPE (rotate-half, theta 10,000; the spec does not carry rope_theta and random
  weights make it immaterial) at absolute positions that continue across decode calls; learned
  position tables for gpt2 / gpt_bigcode / opt; NoPE on Llama-4's global layers.
- sliding-window and chunked-local layers: masks by absolute position; gpt-oss attention sinks;
  Step-3.5's per-head output gate (g_proj), whose width gives the layer's query heads.
- MLA (DeepSeek): the cache holds the latent [c_kv (kv_lora_rank) ; k_pe (rope dim)] per token,
  one "head"; attention runs in the absorbed form (q_nope folded through W_uk into latent space,
  the output through W_uv), so the latent is never expanded to per-head K/V.
- MLPs: SwiGLU / GeGLU (gate, up, down or fused gate_up), GELU / ReLU / squared-ReLU two-layer MLPs.
- q/k norms per head (Qwen3, Gemma-3) or over the whole projection (MiniMax-M2, OLMo-2 style).
- MoE: softmax router, top-k routed experts (renormalised), shared experts (with their sigmoid gate
  where the spec has one) added; Nemotron-3 LatentMoE projects to the latent width around the
  routed experts (fc1_latent_proj / fc2_latent_proj).
- Mamba-2 / gated-DeltaNet mixers are *not* run: their parameters and per-sequence state buffers
  are allocated at their exact sizes and the layer passes its input through unchanged.

Residual layouts follow the spec's norms: sequential (two norms), parallel attention + MLP (one
norm, or falcon's ln_attn / ln_mlp, or gpt_neox), Gemma-2/3 sandwich (four norms), Nemotron-H
one-mixer blocks (one norm).
"""

import math
import re
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from kvplan.errors import PlanInputError
from kvplan.spec import Linear, ModelSpec, Norm

TORCH_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
ROPE_THETA = 10_000.0
ATTN_CHUNK = 1024  # query rows per attention chunk
LEARNED_POSITIONS = {"gpt2": ("wpe", 0), "gpt_bigcode": ("wpe", 0), "opt": ("embed_positions", 2)}
ACTIVATIONS = {
    "gpt2": "gelu_tanh", "gpt_bigcode": "gelu_tanh", "phi": "gelu_tanh", "gemma": "gelu_tanh",
    "gemma2": "gelu_tanh", "gemma3_text": "gelu_tanh", "gemma3": "gelu_tanh",
    "falcon": "gelu", "gpt_neox": "gelu", "opt": "relu", "nemotron_h": "relu2",
}
FAULTS = (None, "reset_positions", "upper_left_mask")
# Layer kinds this decoder runs (or, for recurrent state, allocates exactly). DSA layers (MLA + a
# lightning indexer selecting top-k keys) are not implemented: refused by name, never half-run.
DECODER_KINDS = ("full_attention", "sliding_attention", "chunked_attention", "mla", "mamba", "linear_attention",
                 "short_conv", "none")


def refuse_unsupported(spec: ModelSpec) -> None:
    """Raise ``PlanInputError("model", ...)`` when ``spec`` has a layer kind, or is a family, the reference
    decoder cannot run faithfully (running it as plain layers would measure a different model)."""
    what = UNSUPPORTED_FAMILIES.get(spec.model_type)
    if what is None and any(layer.cache.kind == "none" and layer.attention for layer in spec.layers):
        what = f"{spec.model_type!r} (layers that attend over another layer's KV cache)"
    if what is not None:
        raise PlanInputError("model", f"the reference decoder does not run {what}; its plan and KV figures are "
                                      "exact, but this model cannot be validated by running it here")
    kinds = sorted({layer.cache.kind for layer in spec.layers} - set(DECODER_KINDS))
    if kinds:
        what = "; ".join(f"{k!r}: {UNSUPPORTED.get(k, 'not implemented')}" for k in kinds)
        raise PlanInputError(
            "model", f"{spec.name} ({spec.model_type}) has layers the reference decoder does not run ({what}); "
                     f"it validates {', '.join(DECODER_KINDS[:-1])} layers. This family's KV bytes are checked "
                     "against transformers' own cache in the test suite instead.")


# Families whose layers do work this decoder does not run: Gemma-3n's AltUp / Laurel and both Gemma-3n and
# Gemma-4's per-layer embeddings and cross-layer KV sharing (a layer that attends over an earlier layer's
# cache).
UNSUPPORTED_FAMILIES = {
    "gemma3n_text": "Gemma-3n (AltUp, Laurel, per-layer embeddings, KV-sharing layers)",
    "gemma4_text": "Gemma-4 (per-layer embeddings, KV-sharing layers, K = V full layers, MoE beside the MLP)",
    "gemma4_unified_text": "Gemma-4 unified (KV-sharing layers, K = V full layers)",
}

UNSUPPORTED = {"mla_dsa": "MLA with a DSA lightning indexer",
               "attention_and_mamba": "attention and a Mamba mixer side by side (Falcon-H1, Zamba2)",
               "compressed_attention": "DeepSeek-V4 sliding-window + compressed K=V attention",
               "indexed_attention": "GQA with a lightning indexer's block-sparse selection (MiniMax-M3)"}


def activation(name: str, x: torch.Tensor) -> torch.Tensor:
    if name == "gelu_tanh":
        return F.gelu(x, approximate="tanh")
    if name == "gelu":
        return F.gelu(x)
    if name == "relu":
        return F.relu(x)
    if name == "relu2":
        return F.relu(x).square()
    return F.silu(x)


def _key(category: str, name: str) -> str:
    return f"{category}__{re.sub(r'[^0-9A-Za-z]', '_', name)}"


@dataclass
class Step:
    """One forward call: T new tokens at absolute positions start .. start+T-1 (same for every row).

    ``enc_pos`` feeds the position encodings; it equals ``qpos`` unless a fault is injected.
    """

    start: int
    qpos: torch.Tensor  # [T] absolute positions (masks, cache slots)
    enc_pos: torch.Tensor  # [T] positions given to RoPE / learned tables
    upper_left: bool = False  # fault: mask aligned to the top-left corner, ignoring the cache offset

    @property
    def T(self) -> int:
        return self.qpos.shape[0]


def make_step(start: int, T: int, device, fault: str | None = None) -> Step:
    if fault not in FAULTS:
        raise ValueError(f"unknown fault {fault!r}")
    qpos = torch.arange(start, start + T, device=device)
    # The classic bug: every call numbers its tokens from 0 again.
    enc = torch.arange(T, device=device) if fault == "reset_positions" else qpos
    return Step(start=start, qpos=qpos, enc_pos=enc, upper_left=fault == "upper_left_mask")


class Weight(nn.Module):
    """The tensors of one spec component. Shapes are fixed here; storage comes from ``materialize``."""

    def __init__(self, comp, copies: int = 1):
        super().__init__()
        self.comp = comp
        self.shapes: dict[str, tuple[int, ...]] = {}
        if isinstance(comp, Linear):
            n = comp.count * copies
            matrix = (comp.out_features, comp.in_features)
            self.shapes["weight"] = (n, *matrix) if n > 1 else matrix
            if comp.bias:
                self.shapes["bias"] = (n, comp.out_features) if n > 1 else (comp.out_features,)
        elif isinstance(comp, Norm):
            shape = (comp.count, comp.dim) if comp.count > 1 else (comp.dim,)
            self.shapes["weight"] = shape
            if comp.bias:
                self.shapes["bias"] = shape
        else:  # Tensor: a flat run of numel elements (position tables, sinks, conv kernels)
            self.shapes["weight"] = (comp.numel,)
        self.register_parameter("weight", None)
        self.register_parameter("bias", None)

    def numel(self) -> int:
        return sum(math.prod(s) for s in self.shapes.values())


def linear(x: torch.Tensor, w: Weight) -> torch.Tensor:
    return F.linear(x, w.weight, w.bias)


def norm(x: torch.Tensor, w: Weight | None, eps: float = 1e-5) -> torch.Tensor:
    if w is None:  # OPT with layer_norm_elementwise_affine=False
        return F.layer_norm(x, x.shape[-1:], eps=eps)
    if w.bias is not None:
        return F.layer_norm(x, x.shape[-1:], w.weight, w.bias, eps)
    return F.rms_norm(x, x.shape[-1:], w.weight, eps)


def rope(x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """Rotate-half RoPE. x [B, T, H, d], pos [T] -> same shape, same dtype."""
    half = x.shape[-1] // 2
    inv = ROPE_THETA ** (-torch.arange(half, device=x.device, dtype=torch.float32) / half)  # [d/2]
    ang = pos.to(torch.float32)[:, None] * inv[None, :]  # [T, d/2]
    cos, sin = ang.cos()[None, :, None, :], ang.sin()[None, :, None, :]  # [1, T, 1, d/2]
    x1, x2 = x[..., :half].float(), x[..., half:].float()
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).to(x.dtype)


def attention_mask(qpos, kpos, rows, window=None, chunk=None, upper_left=False) -> torch.Tensor:
    """Which keys each query may see: [T, S] bool. kpos == -1 marks an empty cache slot."""
    if upper_left:  # the bug the seed warns about: key j visible to new row i iff j <= i
        j = torch.arange(kpos.shape[0], device=kpos.device)
        return j[None, :] <= rows[:, None]
    q, k = qpos[:, None], kpos[None, :]
    ok = (k >= 0) & (k <= q)
    if window:
        ok &= k > q - window  # the query and the window - 1 positions before it
    if chunk:
        ok &= torch.div(k, chunk, rounding_mode="floor") == torch.div(q, chunk, rounding_mode="floor")
    return ok


def attend(q, k, v, step: Step, kpos, *, scale, window=None, chunk=None, sinks=None) -> torch.Tensor:
    """Grouped attention. q [B, T, nq, d]; k [B, nkv, S, d]; v [B, nkv, S, dv]; kpos [S].

    Returns [B, T, nq * dv]. Query head i uses KV head i // G, as in every GQA checkpoint.
    """
    B, T, nq, d = q.shape
    nkv, S, dv = k.shape[1], k.shape[2], v.shape[-1]
    G = nq // nkv
    kt = k.transpose(-1, -2)  # [B, nkv, d, S], a view
    rows_all = torch.arange(T, device=q.device)
    out = []
    for t0 in range(0, T, ATTN_CHUNK):
        qc = q[:, t0:t0 + ATTN_CHUNK]
        tc = qc.shape[1]
        qg = qc.reshape(B, tc, nkv, G, d).permute(0, 2, 3, 1, 4).reshape(B, nkv, G * tc, d)  # [B, nkv, G*tc, d]
        s = (qg @ kt).float().mul_(scale).view(B, nkv, G, tc, S)  # [B, nkv, G, tc, S] fp32
        ok = attention_mask(step.qpos[t0:t0 + tc], kpos, rows_all[t0:t0 + tc], window, chunk, step.upper_left)
        s.masked_fill_(~ok, float("-inf"))
        if sinks is not None:  # gpt-oss: one learned logit per head that takes probability mass, no value
            sink = sinks.float().view(1, nkv, G, 1, 1).expand(B, nkv, G, tc, 1)
            p = torch.cat((s, sink), dim=-1).softmax(-1)[..., :S]
        else:
            p = s.softmax(-1)
        del s
        o = p.to(v.dtype).reshape(B, nkv, G * tc, S) @ v  # [B, nkv, G*tc, dv]
        del p
        out.append(o.view(B, nkv, G, tc, dv).permute(0, 3, 1, 2, 4).reshape(B, tc, nq * dv))
    return out[0] if len(out) == 1 else torch.cat(out, dim=1)


# Weight names the attention reads (kvplan.families builders use transformers' own names).
FUSED_QKV = ("c_attn", "query_key_value", "Wqkv", "qkv_proj")
Q_NORMS = ("q_norm", "q_layernorm", "query_layernorm")
K_NORMS = ("k_norm", "k_layernorm", "key_layernorm")


class Block(nn.Module):
    """One decoder layer: a mixer (attention, MLA, or a recurrent mixer that is not run) and a FFN."""

    def __init__(self, spec: ModelSpec, index: int):
        super().__init__()
        layer = spec.layers[index]
        self.index = index
        self.cache_spec = layer.cache
        self.kind = layer.cache.kind
        self.model_type = spec.model_type
        self.nq = spec.num_attention_heads
        self.act = ACTIVATIONS.get(spec.model_type, "silu")
        self.w = nn.ModuleDict()
        self.names: dict[str, list[str]] = {}
        for category in ("attention", "mlp", "router", "norms", "other"):
            comps = getattr(layer, category)
            self.names[category] = [c.name for c in comps]
            for c in comps:
                self.w[_key(category, c.name)] = Weight(c)
        self.experts = layer.experts
        self.names["experts"] = []
        if layer.experts is not None:
            for c in layer.experts.linears:
                self.names["experts"].append(c.name)
                self.w[_key("experts", c.name)] = Weight(c, copies=layer.experts.num_experts)
        self.mlp_groups = self._mlp_groups(self.names["mlp"])
        self.layout = self._layout()

    def get(self, category: str, name: str) -> Weight | None:
        key = _key(category, name)
        return self.w[key] if key in self.w else None

    def _mlp_groups(self, names: list[str]) -> list[tuple[list[str], str | None]]:
        """Split MLP components into MLPs by prefix ('shared_expert.gate_proj' -> 'shared_expert.'),
        each with its sigmoid gate when the spec has one ('shared_expert_gate')."""
        gates = {n[: -len("_gate")] + ".": n for n in names if n.endswith("_gate")}
        groups: dict[str, list[str]] = {}
        for name in names:
            if name in gates.values():
                continue
            prefix = name.rsplit(".", 1)[0] + "." if "." in name else ""
            groups.setdefault(prefix, []).append(name)
        return [(members, gates.get(prefix)) for prefix, members in groups.items()]

    def _layout(self) -> str:
        norms = self.names["norms"]
        if self.model_type == "nemotron_h":
            return "single"
        if norms == ["ln_attn", "ln_mlp"] or self.model_type == "gpt_neox":
            return "parallel2"
        if len(norms) == 1:
            return "parallel1"
        if len(norms) == 4:
            return "sandwich"
        return "sequential"

    # ------------------------------------------------------------------ forward

    def forward(self, x: torch.Tensor, step: Step, cache) -> torch.Tensor:  # x [B, T, h]
        n = [self.get("norms", name) for name in self.names["norms"]] or [None, None]
        if self.layout == "single":  # Nemotron-H: one norm, one mixer per block
            h = norm(x, n[0])
            y = self.mix(h, step, cache) if self.kind != "none" else self.ffn(h)
            return x if y is None else x + y
        if self.layout == "parallel1":
            h = norm(x, n[0])
            return x + self.mix(h, step, cache) + self.ffn(h)
        if self.layout == "parallel2":
            return x + self.mix(norm(x, n[0]), step, cache) + self.ffn(norm(x, n[1]))
        if self.layout == "sandwich":
            x = x + norm(self.mix(norm(x, n[0]), step, cache), n[1])
            return x + norm(self.ffn(norm(x, n[2])), n[3])
        y = self.mix(norm(x, n[0]), step, cache)
        if y is not None:
            x = x + y
        del y  # do not hold the attention output through the MLP
        y = self.ffn(norm(x, n[1]))
        return x if y is None else x + y

    def mix(self, h, step, cache):
        if self.kind == "mla":
            return self.mla(h, step, cache)
        if self.kind in ("full_attention", "sliding_attention", "chunked_attention"):
            return self.attention(h, step, cache)
        return None  # mamba / linear attention: not run (state buffers exist in the cache)

    def attention(self, h, step: Step, cache):
        B, T, _ = h.shape
        cs = self.cache_spec
        nq, nkv, d, dv = self.nq, cs.num_key_value_heads, cs.head_dim, cs.v_head_dim
        head_gate = self.get("attention", "g_proj")  # Step-3.5: one sigmoid gate per query head
        if head_gate is not None:
            nq = head_gate.comp.out_features  # this layer's query heads (sliding layers may have more)
        fused = next((w for w in (self.get("attention", n) for n in FUSED_QKV) if w is not None), None)
        gate = None
        if fused is not None:
            q, k, v = linear(h, fused).split((nq * d, nkv * d, nkv * dv), dim=-1)
        else:
            q = linear(h, self.get("attention", "q_proj"))
            k = linear(h, self.get("attention", "k_proj"))
            v = linear(h, self.get("attention", "v_proj"))
            if q.shape[-1] == 2 * nq * d:  # Qwen3-Next gated attention: q_proj also yields a gate per head
                q, gate = q.view(B, T, nq, 2 * d).chunk(2, dim=-1)
                gate = gate.reshape(B, T, nq * d)
        qn = next((w for w in (self.get("attention", n) for n in Q_NORMS) if w is not None), None)
        kn = next((w for w in (self.get("attention", n) for n in K_NORMS) if w is not None), None)
        whole = qn is not None and qn.weight.shape[-1] != d  # OLMo-2 / Cohere: one norm over all heads
        if whole:
            q, k = norm(q, qn), norm(k, kn)
        q = q.reshape(B, T, nq, d)  # [B, T, nq, d]
        k = k.reshape(B, T, nkv, d)  # [B, T, nkv, d]
        v = v.reshape(B, T, nkv, dv)  # [B, T, nkv, dv]
        if qn is not None and not whole:
            q, k = norm(q, qn), norm(k, kn)
        nope = self.model_type == "llama4_text" and self.kind == "full_attention"
        if self.model_type not in LEARNED_POSITIONS and not nope:
            q, k = rope(q, step.enc_pos), rope(k, step.enc_pos)
        k_all, v_all, kpos = cache.update(self.index, k, v, step)  # [B, nkv, S, d], [B, nkv, S, dv], [S]
        sinks = self.get("attention", "sinks")
        o = attend(q, k_all, v_all, step, kpos, scale=d ** -0.5,
                   window=cs.window if cs.kind == "sliding_attention" else None,
                   chunk=cs.window if cs.kind == "chunked_attention" else None,
                   sinks=None if sinks is None else sinks.weight)  # [B, T, nq*dv]
        if gate is not None:
            o = o * torch.sigmoid(gate)
        if head_gate is not None:
            o = (o.view(B, T, nq, dv) * torch.sigmoid(linear(h, head_gate))[..., None]).reshape(B, T, nq * dv)
        out = next(self.get("attention", n) for n in ("o_proj", "dense", "c_proj", "out_proj") if self.get("attention", n))
        return linear(o, out)

    def mla(self, h, step: Step, cache):
        """DeepSeek MLA, absorbed: the cache holds [c_kv ; k_pe] per token, [B, 1, S, r + p]."""
        B, T, _ = h.shape
        cs = self.cache_spec
        nq, r, p, nope, dv = self.nq, cs.kv_lora_rank, cs.qk_rope_head_dim, cs.qk_nope_head_dim, cs.v_head_dim
        if self.get("attention", "q_a_proj") is not None:
            q = linear(norm(linear(h, self.get("attention", "q_a_proj")), self.get("attention", "q_a_layernorm")),
                       self.get("attention", "q_b_proj"))
        else:
            q = linear(h, self.get("attention", "q_proj"))
        q_nope, q_pe = q.view(B, T, nq, nope + p).split((nope, p), dim=-1)  # [B, T, nq, nope], [B, T, nq, p]
        kv = linear(h, self.get("attention", "kv_a_proj_with_mqa"))  # [B, T, r + p]
        c_kv = norm(kv[..., :r], self.get("attention", "kv_a_layernorm"))  # [B, T, r]
        k_pe = rope(kv[..., r:].reshape(B, T, 1, p), step.enc_pos)  # [B, T, 1, p], shared by all heads
        latent = torch.cat((c_kv.unsqueeze(2), k_pe), dim=-1)  # [B, T, 1, r + p]
        lat_all, _, kpos = cache.update(self.index, latent, None, step)  # [B, 1, S, r + p]
        w_b = self.get("attention", "kv_b_proj").weight.view(nq, nope + dv, r)  # [nq, nope + dv, r]
        w_uk, w_uv = w_b[:, :nope], w_b[:, nope:]  # [nq, nope, r], [nq, dv, r]
        q_lat = torch.einsum("bthn,hnr->bthr", q_nope, w_uk)  # [B, T, nq, r]
        q_all = torch.cat((q_lat, rope(q_pe, step.enc_pos)), dim=-1)  # [B, T, nq, r + p]
        o_lat = attend(q_all, lat_all, lat_all[..., :r], step, kpos, scale=(nope + p) ** -0.5)  # [B, T, nq*r]
        o = torch.einsum("bthr,hvr->bthv", o_lat.view(B, T, nq, r), w_uv)  # [B, T, nq, dv]
        return linear(o.reshape(B, T, nq * dv), self.get("attention", "o_proj"))

    def ffn(self, h):
        out = None
        for names, gate in self.mlp_groups:
            y = self.mlp(h, "mlp", names, None)
            if gate is not None:  # qwen2_moe / qwen3_next: sigmoid(shared_expert_gate(h)) scales the shared expert
                y = y * torch.sigmoid(linear(h, self.get("mlp", gate)))
            out = y if out is None else out + y
        if self.experts is not None:
            y = self.moe(h)
            out = y if out is None else out + y
        return out

    def mlp(self, x, category: str, names: list[str], expert: int | None):
        """gate/up/down (SwiGLU), fused gate_up/down, or up/down (two-layer). ``expert`` picks one copy."""
        def lin(name):
            w = self.get(category, name)
            if expert is None:
                return linear(x, w)
            return F.linear(x, w.weight[expert], None if w.bias is None else w.bias[expert])

        def down(y, name):
            w = self.get(category, name)
            if expert is None:
                return linear(y, w)
            return F.linear(y, w.weight[expert], None if w.bias is None else w.bias[expert])

        base = {n.rsplit(".", 1)[-1]: n for n in names}
        if "gate_proj" in base:
            y = activation(self.act, lin(base["gate_proj"])) * lin(base["up_proj"])  # [.., I]
            return down(y, base["down_proj"])
        if "w1" in base:  # LFM2: w1 gate, w3 up, w2 down
            return down(activation(self.act, lin(base["w1"])) * lin(base["w3"]), base["w2"])
        if "gate_up_proj" in base:
            g, u = lin(base["gate_up_proj"]).chunk(2, dim=-1)
            return down(activation(self.act, g) * u, base["down_proj"])
        if "input_linear" in base:  # Granite-MoE shared MLP: fused gate/up input_linear, output_linear
            g, u = lin(base["input_linear"]).chunk(2, dim=-1)
            return down(activation(self.act, g) * u, base["output_linear"])
        up, dn = names[0], names[1]  # c_fc/c_proj, fc1/fc2, dense_h_to_4h/dense_4h_to_h, up_proj/down_proj
        return down(activation(self.act, lin(up)), dn)

    def moe(self, h):
        """Top-k routed experts. h [B, T, h] -> [B, T, h]; only experts that got tokens run."""
        B, T, D = h.shape
        x = h.reshape(B * T, D)
        router = self.get("router", self.names["router"][0])
        k = self.experts.num_experts_per_tok
        weights, idx = linear(x, router).float().softmax(-1).topk(k, dim=-1)  # [N, k], [N, k]
        weights = (weights / weights.sum(-1, keepdim=True)).to(x.dtype)
        down, up = self.get("other", "fc1_latent_proj"), self.get("other", "fc2_latent_proj")
        if down is not None:  # Nemotron-3 LatentMoE: experts run on [N, latent], routed on the full width
            x = linear(x, down)  # [N, latent]
        out = torch.zeros_like(x)
        for e in idx.unique().tolist():
            rows, slot = (idx == e).nonzero(as_tuple=True)
            y = self.mlp(x[rows], "experts", self.names["experts"], e)
            out.index_add_(0, rows, y * weights[rows, slot, None])
        if up is not None:
            out = linear(out, up)  # [N, h]
        return out.view(B, T, D)


class Decoder(nn.Module):
    """The whole model. ``forward(tokens [B, T], cache, step) -> logits [B, T (or 1), V]``."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        refuse_unsupported(spec)
        self.spec = spec
        self.embed = nn.ModuleDict({_key("embeddings", c.name): Weight(c) for c in spec.embeddings})
        self.layers = nn.ModuleList(Block(spec, i) for i in range(spec.num_hidden_layers))
        self.final = nn.ModuleDict({_key("final", c.name): Weight(c) for c in spec.final_norm})
        self.head = nn.ModuleDict({_key("lm_head", c.name): Weight(c) for c in spec.lm_head})
        self.extra = nn.ModuleDict({_key("other", c.name): Weight(c) for c in spec.other})
        self.table = self.embed[_key("embeddings", spec.embeddings[0].name)]  # [V, h] token table
        self.hidden = spec.hidden_size

    def weights(self) -> list[Weight]:
        return [m for m in self.modules() if isinstance(m, Weight)]

    def forward(self, tokens: torch.Tensor, cache, step: Step, last_only: bool = False) -> torch.Tensor:
        x = F.embedding(tokens, self.table.weight)  # [B, T, h] (or word_embed_proj_dim for OPT)
        learned = LEARNED_POSITIONS.get(self.spec.model_type)
        if self.spec.model_type == "opt" and _key("other", "project_in") in self.extra:
            x = linear(x, self.extra[_key("other", "project_in")])
        if learned is not None:
            table = self.embed[_key("embeddings", learned[0])].weight.view(-1, self.hidden)  # [positions, h]
            x = x + table[step.enc_pos + learned[1]]
        for block in self.layers:
            x = block(x, step, cache)
        if last_only:
            x = x[:, -1:]
        if self.final:
            x = norm(x, next(iter(self.final.values())))
        if _key("other", "project_out") in self.extra:
            x = linear(x, self.extra[_key("other", "project_out")])
        head = next(iter(self.head.values())) if self.head else self.table  # tied: the token table
        return linear(x, head)  # [B, T, V]


def materialize(model: Decoder, dtype: torch.dtype, device, seed: int = 0) -> torch.Tensor:
    """Give every parameter storage: views into one flat buffer, filled with random values.

    Linear weights ~ U with std 1/sqrt(in) (activations and attention logits of order 1, so a
    broken cache shows up clearly in the logits), biases and tables small, norms 1. Returns the buffer.
    """
    weights = model.weights()
    total = sum(w.numel() for w in weights)
    flat = torch.empty(total, dtype=dtype, device=device)
    gen = torch.Generator(device=device).manual_seed(seed)
    offset = 0
    for w in weights:
        for name, shape in w.shapes.items():
            n = math.prod(shape)
            view = flat[offset:offset + n].view(shape)
            offset += n
            comp = w.comp
            if isinstance(comp, Norm):
                view.fill_(1.0 if name == "weight" else 0.0)
            elif isinstance(comp, Linear) and name == "weight" and comp.shard != "vocab":
                bound = math.sqrt(3.0 / comp.in_features)
                view.uniform_(-bound, bound, generator=gen)
            elif isinstance(comp, Linear) and name == "weight":  # embedding table / lm_head
                bound = math.sqrt(3.0 / comp.in_features) if "head" in comp.name else math.sqrt(3.0)
                view.uniform_(-bound, bound, generator=gen)
            elif comp.name in ("wpe", "embed_positions"):  # learned positions: as strong as the tokens
                view.uniform_(-math.sqrt(3.0), math.sqrt(3.0), generator=gen)
            else:  # biases, sinks, conv kernels
                view.uniform_(-0.1, 0.1, generator=gen)
            setattr(w, name, nn.Parameter(view, requires_grad=False))
    assert offset == total
    model.eval()  # no dropout anywhere, but say so
    return flat


def build_decoder(spec: ModelSpec, dtype: str, device, seed: int = 0) -> tuple[Decoder, torch.Tensor]:
    """The reference decoder for ``spec`` in ``dtype`` ('fp32' | 'bf16' | 'fp16') on ``device``."""
    model = Decoder(spec)
    flat = materialize(model, TORCH_DTYPES[dtype], device, seed)
    return model, flat
