"""Qwen2.5-VL / Qwen2-VL text decoders: Qwen2 inside a VL wrapper.

transformers 5.23 ``modeling_qwen2_5_vl.py`` / ``modeling_qwen2_vl.py``: the text model is Qwen2's
decoder (q/k/v with bias, o_proj without, gated SiLU MLP without bias, RMSNorms, the sliding rule
``i >= max_window_layers`` when ``use_sliding_window``) with M-RoPE (``mrope_section``), which has no
weights. So it is llama.py's builder with the Qwen2 switches; the wrapper differs only in where the
fields live: the published Qwen/Qwen2.5-VL-* and Qwen2-VL-* config.json files are flat (the decoder's
fields at top level, Qwen2_5_VLConfig.__post_init__ moves them into text_config), re-saved ones carry
a ``text_config`` (``hf_config.text_decoder_config`` unwraps it). The vision tower (window-attention
ViT + patch merger) is ``kvplan.families.towers.qwen2_5_vl``.

One difference from Qwen2: ``Qwen2_5_VLAttention`` / ``Qwen2VLAttention`` take head_dim =
hidden_size // num_attention_heads whatever the config says (no ``head_dim`` field in their text
configs), so a config that writes another head_dim is refused rather than read two ways.
Qwen2.5-VL-7B: 28 layers, 28 / 4 heads of 3,584 // 28 = 128, 7,615,616,512 text parameters.
"""

from typing import Any

from kvplan.errors import ConfigError
from kvplan.families.llama import build_llama_like


def build_qwen2_vl_text(r, model_type: str) -> dict[str, Any]:
    h, nq = r.int("hidden_size"), r.int("num_attention_heads")
    if r.has("head_dim") and nq > 0 and r.int("head_dim") != h // nq:
        raise ConfigError(r._name("head_dim"), f"Qwen2-VL / Qwen2.5-VL attention uses hidden_size // "
                          f"num_attention_heads = {h // nq} (transformers 5.23 Qwen2_5_VLAttention reads no head_dim); "
                          f"got {r.int('head_dim')}")
    return build_llama_like(r, "qwen2")


MODEL_TYPES = {
    "qwen2_5_vl_text": build_qwen2_vl_text,
    "qwen2_vl_text": build_qwen2_vl_text,
    # The published flat files: the wrapper's model_type, the text decoder's fields at top level.
    "qwen2_5_vl": build_qwen2_vl_text,
    "qwen2_vl": build_qwen2_vl_text,
}
