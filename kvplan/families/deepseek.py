"""DeepSeek-V2 / V3: multi-head latent attention, dense first layers, shared + routed experts.
"""

from typing import Any

from kvplan.families.blocks import (
    core_dims,
    embed,
    experts_block,
    gated_mlp,
    lm_head,
    rms,
    router,
    spec_fields,
)
from kvplan.layers import MLAAttention
from kvplan.spec import Component, DecoderLayer, Linear


def build_deepseek(r, model_type: str) -> dict[str, Any]:
    """deepseek_v2 / deepseek_v3: MLA attention, dense first layers, shared + routed experts."""
    h, n_layers, nq, _, _ = core_dims(r)
    vocab = r.int("vocab_size")
    lora_q = r.int("q_lora_rank") if r.has("q_lora_rank") else None
    lora_kv, rope, nope, vhd = (r.int(k) for k in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"))
    bias = r.bool("attention_bias", False)
    qk = nope + rope
    if lora_q is None:
        attn: tuple[Component, ...] = (Linear(name="q_proj", in_features=h, out_features=nq * qk),)
    else:
        attn = (Linear(name="q_a_proj", in_features=h, out_features=lora_q, bias=bias, shard="replicated"),
                rms("q_a_layernorm", lora_q),
                Linear(name="q_b_proj", in_features=lora_q, out_features=nq * qk))
    attn += (
        Linear(name="kv_a_proj_with_mqa", in_features=h, out_features=lora_kv + rope, bias=bias, shard="replicated"),
        rms("kv_a_layernorm", lora_kv),
        Linear(name="kv_b_proj", in_features=lora_kv, out_features=nq * (nope + vhd)),
        Linear(name="o_proj", in_features=nq * vhd, out_features=h, bias=bias, shard="row"),
    )
    cache = MLAAttention(kv_lora_rank=lora_kv, qk_rope_head_dim=rope, qk_nope_head_dim=nope, v_head_dim=vhd,
                         num_attention_heads=nq)
    norms = (rms("input_layernorm", h), rms("post_attention_layernorm", h))
    experts = experts_block(r, h, r.int("moe_intermediate_size"), "n_routed_experts", "num_experts_per_tok")
    shared = r.int("n_shared_experts", 0, minimum=0)
    first_dense = r.int("first_k_dense_replace", 0, minimum=0)
    freq = r.int("moe_layer_freq", 1)
    dense = DecoderLayer(cache=cache, attention=attn, mlp=gated_mlp(h, r.int("intermediate_size")), norms=norms)
    shared_mlp = gated_mlp(h, r.int("moe_intermediate_size") * shared, prefix="shared_experts.") if shared else ()
    moe = DecoderLayer(cache=cache, attention=attn, mlp=shared_mlp, experts=experts,
                       router=router(h, experts.num_experts), norms=norms)
    layers = [moe if i >= first_dense and i % freq == 0 else dense for i in range(n_layers)]
    skipped = ()
    if r.has("num_nextn_predict_layers") and r.raw("num_nextn_predict_layers"):
        skipped = (f"{r.raw('num_nextn_predict_layers')} multi-token-prediction layer(s) (loaded only for speculative decoding)",)
    if model_type == "deepseek_v3":
        r.assumptions.append("router e_score_correction_bias (fp32, n_routed_experts per MoE layer) is a buffer, not counted")
    head, tied = lm_head(r, vocab, h, tie_default=False)
    fields = spec_fields(r, h=h, n_layers=n_layers, nq=nq, nkv=nq, hd=qk, vocab=vocab, embeddings=[embed(vocab, h)],
                         layers=layers, final_norm=[rms("norm", h)], head=head, tied=tied)
    fields["skipped"] = skipped
    return fields


MODEL_TYPES = {
    "deepseek_v2": build_deepseek,
    "deepseek_v3": build_deepseek,
}
