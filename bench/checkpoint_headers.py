"""Reading a local checkpoint's safetensors headers: a 100-shard synthetic checkpoint (sparse files).

Goal (issue 11): under 1 s for 100 shards. Each shard holds the tensors of one Llama-70B-sized layer
(9 tensors, real names and shapes, bf16); the files are sparse, so only the headers exist on disk.
Run: python bench/checkpoint_headers.py [shards] (from anywhere: the repo root is put on sys.path)
"""

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kvplan.checkpoint import read_local  # the core reader (stdlib only), the app's and the CLI's
from tests.checkpoint_files import write_checkpoint


def main(shards: int = 100) -> float:
    h, i, q, kv = 8192, 28672, 8192, 1024
    parts = []
    for n in range(shards):
        p = f"model.layers.{n}."
        parts.append({p + "self_attn.q_proj.weight": ("BF16", [q, h]), p + "self_attn.k_proj.weight": ("BF16", [kv, h]),
                      p + "self_attn.v_proj.weight": ("BF16", [kv, h]), p + "self_attn.o_proj.weight": ("BF16", [h, q]),
                      p + "mlp.gate_proj.weight": ("BF16", [i, h]), p + "mlp.up_proj.weight": ("BF16", [i, h]),
                      p + "mlp.down_proj.weight": ("BF16", [h, i]), p + "input_layernorm.weight": ("BF16", [h]),
                      p + "post_attention_layernorm.weight": ("BF16", [h])})
    with tempfile.TemporaryDirectory() as tmp:
        write_checkpoint(Path(tmp) / "ck", {"model_type": "llama"}, parts, sparse=True)
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            c = read_local(Path(tmp) / "ck")
            best = min(best, time.perf_counter() - t0)
        print(f"{shards} shards, {len(c.tensors):,} tensors, {c.total_bytes:,} B of weights: "
              f"headers read in {best * 1000:.1f} ms (best of 5)")
    return best


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
