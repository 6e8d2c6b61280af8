"""Qwen3-VL text decoders: Qwen3 (dense) and Qwen3-MoE (``qwen3_vl_moe``) inside a VL wrapper.

transformers 5.23 ``modeling_qwen3_vl.py`` / ``modeling_qwen3_vl_moe.py``: the text model is
Qwen3's decoder (q_norm / k_norm over head_dim, no sliding window) with interleaved M-RoPE,
which has no weights, and deepstack visual features added to the first layers' hidden states
(the deepstack mergers live in the vision tower). The MoE text model is Qwen3-MoE's: fused
experts with the same parameter count, a bias-free router, no shared expert, MoE layers by
``decoder_sparse_step`` / ``mlp_only_layers``. So each is llama.py's builder with the Qwen3 or
Qwen3-MoE switches; only the wrapper (``hf_config.text_decoder_config``) differs.
"""

from typing import Any

from kvplan.families.llama import build_llama_like


def build_qwen3_vl_text(r, model_type: str) -> dict[str, Any]:
    return build_llama_like(r, "qwen3_moe" if "moe" in model_type else "qwen3")


MODEL_TYPES = {
    "qwen3_vl_text": build_qwen3_vl_text,
    "qwen3_vl_moe_text": build_qwen3_vl_text,
    # Flat files that carry the wrapper's model_type: the text decoder's fields at top level.
    "qwen3_vl": build_qwen3_vl_text,
    "qwen3_vl_moe": build_qwen3_vl_text,
}
