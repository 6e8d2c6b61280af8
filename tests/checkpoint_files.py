"""Synthetic safetensors checkpoints for tests and the bench (header written by hand, data zero / sparse)."""

import json
import struct
from pathlib import Path

from kvplan.checkpoint import DTYPE_BITS


def safetensors_bytes(tensors: dict[str, tuple[str, list[int]]], sparse: bool = False) -> tuple[bytes, int]:
    """(the 8-byte length + JSON header, the data length) of a file holding ``tensors`` {name: (dtype, shape)}."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, (dtype, shape) in tensors.items():
        n = 1
        for d in shape:
            n *= d
        size = -(-n * DTYPE_BITS[dtype] // 8)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)  # safetensors pads the header to 8 bytes
    return struct.pack("<Q", len(raw)) + raw, offset


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]], sparse: bool = False) -> bytes:
    head, data = safetensors_bytes(tensors)
    with open(path, "wb") as f:
        f.write(head)
        if sparse:
            f.truncate(len(head) + data)  # a hole: the header reader never reads past the header
        else:
            f.write(bytes(data))
    return path.read_bytes() if not sparse else head


def write_checkpoint(folder: Path, config: dict, shards: list[dict[str, tuple[str, list[int]]]],
                     sparse: bool = False) -> dict[str, bytes]:
    """A checkpoint folder: config.json, the shards and (for more than one) the index. Returns {file: bytes}."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {"config.json": json.dumps(config).encode()}
    (folder / "config.json").write_bytes(files["config.json"])
    if len(shards) == 1:
        files["model.safetensors"] = write_safetensors(folder / "model.safetensors", shards[0], sparse)
        return files
    weight_map = {}
    for k, shard in enumerate(shards, 1):
        name = f"model-{k:05d}-of-{len(shards):05d}.safetensors"
        files[name] = write_safetensors(folder / name, shard, sparse)
        weight_map.update(dict.fromkeys(shard, name))
    files["model.safetensors.index.json"] = json.dumps({"metadata": {}, "weight_map": weight_map}).encode()
    (folder / "model.safetensors.index.json").write_bytes(files["model.safetensors.index.json"])
    return files


TINY_LLAMA = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
              "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
              "head_dim": 16, "vocab_size": 256, "max_position_embeddings": 512, "rms_norm_eps": 1e-5,
              "tie_word_embeddings": False, "torch_dtype": "bfloat16", "rope_theta": 10000.0}


def llama_tensors(cfg: dict = TINY_LLAMA, dtype: str = "BF16") -> dict[str, tuple[str, list[int]]]:
    h, i, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    q, kv = cfg["num_attention_heads"] * cfg["head_dim"], cfg["num_key_value_heads"] * cfg["head_dim"]
    out = {"model.embed_tokens.weight": (dtype, [v, h])}
    for n in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{n}."
        out.update({p + "self_attn.q_proj.weight": (dtype, [q, h]), p + "self_attn.k_proj.weight": (dtype, [kv, h]),
                    p + "self_attn.v_proj.weight": (dtype, [kv, h]), p + "self_attn.o_proj.weight": (dtype, [h, q]),
                    p + "mlp.gate_proj.weight": (dtype, [i, h]), p + "mlp.up_proj.weight": (dtype, [i, h]),
                    p + "mlp.down_proj.weight": (dtype, [h, i]), p + "input_layernorm.weight": (dtype, [h]),
                    p + "post_attention_layernorm.weight": (dtype, [h])})
    out["model.norm.weight"] = (dtype, [h])
    out["lm_head.weight"] = (dtype, [v, h])
    return out
