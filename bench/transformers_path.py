"""The transformers-backed path's cost: the first build of the largest 2026-class config, and a
second (cached) request for the same config.

    python bench/transformers_path.py          # prints a table, writes bench/results/transformers_path.json

Each case runs in a fresh subprocess, so the first build includes importing torch and transformers
and peak RSS (``resource.getrusage(RUSAGE_SELF).ru_maxrss``) is that build's own. Targets (issue):
first build < 30 s and < 3 GiB peak RSS on a 2-core host; a second request < 10 ms. Not run by CI.

The configs: Kimi-K2.5's text decoder (DeepSeek-V3 architecture at Kimi K2's published dimensions:
61 layers, hidden 7168, 64 MLA heads, 384 routed experts of 2048, top-8, vocab 163,840) built by
transformers' own DeepseekV3Config, sent through the transformers path directly (kvplan also models
deepseek_v3 natively); and a hybrid (Jamba-1.5-Mini's published dimensions: 32 layers, hidden 4096,
16 experts, Mamba with attention every 8th layer) whose Mamba state depends on the real hidden size.
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CASES = {
    "kimi-k2.5-class (deepseek_v3, 61 layers, 384 experts)": dict(
        model_type="deepseek_v3", vocab_size=163_840, hidden_size=7168, intermediate_size=18_432,
        moe_intermediate_size=2048, num_hidden_layers=61, num_attention_heads=64, num_key_value_heads=64,
        n_shared_experts=1, n_routed_experts=384, num_experts_per_tok=8, first_k_dense_replace=1, n_group=1,
        topk_group=1, q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64,
        v_head_dim=128, max_position_embeddings=262_144, routed_scaling_factor=2.827, torch_dtype="bfloat16"),
    "jamba-1.5-mini-class (jamba, 32 layers, hybrid)": dict(
        model_type="jamba", vocab_size=65_536, hidden_size=4096, intermediate_size=14_336, num_hidden_layers=32,
        num_attention_heads=32, num_key_value_heads=8, num_experts=16, num_experts_per_tok=2,
        attn_layer_period=8, attn_layer_offset=4, expert_layer_period=2, expert_layer_offset=1,
        mamba_d_state=16, mamba_d_conv=4, mamba_expand=2, use_mamba_kernels=False, torch_dtype="bfloat16"),
}

CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from kvplan.transformers_path import build_spec
from kvplan import count_params
cfg = json.loads(sys.argv[1])
spec = build_spec(cfg, "bench")
first = time.perf_counter() - t0
t1 = time.perf_counter()
build_spec(dict(cfg), "bench")
second = time.perf_counter() - t1
print(json.dumps(dict(first_s=first, second_ms=second * 1000, peak_rss_mib=resource.getrusage(
    resource.RUSAGE_SELF).ru_maxrss / 1024, params=count_params(spec).total_params, note=spec.basis_note,
    kinds=spec.layer_kinds, distinct_layers=len({id(layer) for layer in spec.layers}))))
"""


def run(cfg: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(cfg)], cwd=ROOT, capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "2", "HF_HUB_OFFLINE": "1",
                              "PATH": "/usr/bin:/bin"}, timeout=600)
    if out.returncode:
        raise SystemExit(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    results = {name: run(cfg) for name, cfg in CASES.items()}
    print(f"{'config':56s} {'first build':>12s} {'peak RSS':>10s} {'cached':>9s} {'params':>18s}")
    for name, r in results.items():
        print(f"{name:56s} {r['first_s']:10.1f} s {r['peak_rss_mib']:6.0f} MiB {r['second_ms']:6.3f} ms "
              f"{r['params']:>18,}")
        print(f"  {r['note']}; {r['kinds']}, {r['distinct_layers']} distinct layers")
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "transformers_path.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
