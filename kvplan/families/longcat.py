"""LongCat-Flash: each of ``num_layers`` blocks holds two MLA sublayers, two dense MLPs and one shortcut
MoE with zero-compute (identity) experts (transformers 5.23 ``modeling_longcat_flash.py``).

The cache has ``num_hidden_layers = 2 x num_layers`` MLA layers (LongcatFlashConfig derives it), so
a block is planned as two kvplan layers: the first carries self_attn.0, mlps.0, the .0 norms and
the block's MoE; the second self_attn.1, mlps.1 and the .1 norms. The MLA is DeepSeek-V3's with a
Q-LoRA rank (``LongcatFlashMLA``: AXK1Attention without an indexer), caching the latent.

Experts (``LongcatFlashExperts``): down_proj [n_routed, h, inter] but gate_up_proj is allocated for
n_routed + zero_expert_num experts, [n_routed + zero, 2 x inter, h]; the zero experts' gate_up rows
are never used (an identity runs instead) and are not in the checkpoint, but transformers counts
them, so kvplan lists them as a separate tensor. The router (``classifier``) scores
n_routed + zero experts. LongCat-Flash default: 512 routed + 256 zero experts, top-12.
"""

from typing import Any

from kvplan.families.blocks import gated_mlp, llama_tail, rms
from kvplan.families.deepseek import mla_attention
from kvplan.layers import MLAAttention
from kvplan.spec import DecoderLayer, Experts, Linear, Tensor


def build_longcat_flash(r, model_type: str) -> dict[str, Any]:
    h, blocks, nq = r.int("hidden_size"), r.int("num_layers"), r.int("num_attention_heads")
    vocab = r.int("vocab_size")
    r.fail_if_missing()
    attn, dims = mla_attention(r, h, nq, q_lora_required=True)
    dims.pop("q_lora_rank")
    cache = MLAAttention(**dims)
    inter_e = r.int("expert_ffn_hidden_size")
    n = r.int("n_routed_experts")
    zero = r.int("zero_expert_num", 0, minimum=0)
    k = r.int("moe_topk")
    linears = tuple(lin.model_copy(update={"shard": "expert"}) for lin in gated_mlp(h, inter_e))
    experts = Experts(num_experts=n, num_experts_per_tok=min(k, n), linears=linears)
    bias = r.bool("router_bias", False)
    router = (Linear(name="router.classifier", in_features=h, out_features=n + zero, bias=bias, shard="replicated",
                     quantizable=False),)
    other = (Tensor(name="experts.gate_up_proj[zero experts] (allocated by transformers, never used)",
                    numel=zero * 2 * inter_e * h, shard="expert"),) if zero else ()
    if zero:
        r.assumptions.append(f"{zero} zero-compute experts: transformers allocates their gate_up_proj rows "
                             f"({zero} x {2 * inter_e} x {h}), counted as in transformers though never used")
    r.assumptions.append("router e_score_correction_bias (n_routed + zero experts per block) is a buffer, not counted")
    mlp = gated_mlp(h, r.int("ffn_hidden_size"))
    first = DecoderLayer(cache=cache, attention=attn, mlp=mlp, experts=experts, router=router,
                         norms=(rms("input_layernorm.0", h), rms("post_attention_layernorm.0", h)), other=other)
    second = DecoderLayer(cache=cache, attention=attn, mlp=mlp,
                          norms=(rms("input_layernorm.1", h), rms("post_attention_layernorm.1", h)))
    layers = [first, second] * blocks
    fields = llama_tail(r, h=h, n_layers=2 * blocks, nq=nq, nkv=nq, vocab=vocab, layers=layers,
                        hd=dims["qk_nope_head_dim"] + dims["qk_rope_head_dim"])
    r.assumptions.append(f"num_hidden_layers = 2 x num_layers = {2 * blocks} (two MLA sublayers per block)")
    return fields


MODEL_TYPES = {
    "longcat_flash": build_longcat_flash,
}
