"""Live validation on the CPU: the reference decoder's bytes equal the planner's, exactly.

Tiny models (hidden 64, 2-4 layers, vocabulary 256) of each architecture the planner prices:
GQA (llama), MQA (falcon), sliding window (mistral, gemma2), chunked local (llama4), MLA
(deepseek_v3), MoE (mixtral, qwen3_moe, gpt_oss with sinks), GELU + learned positions (gpt2),
hybrids with recurrent state (nemotron_h, qwen3_next).
"""

import json
import random
import subprocess
import sys
import threading

import pytest

import kvplan
from kvplan.paging import page_sequences
from kvplan.validate import blocks, reduce
from kvplan.validate.measure import (
    BusyError,
    RefusedError,
    choose_copy,
    needed_with_margin,
    predict,
    run_validation,
)

torch = pytest.importorskip("torch")

C = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
         vocab_size=256, max_position_embeddings=512)
TINY = {
    "llama-gqa": dict(model_type="llama", **C),
    "falcon-mqa": dict(model_type="falcon", hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                       multi_query=True, vocab_size=256),
    "mistral-sliding": dict(model_type="mistral", **C, sliding_window=8),
    "gemma2-alternating": dict(model_type="gemma2", **C, sliding_window=8, head_dim=16),
    "llama4-chunked": dict(model_type="llama4_text", **C, head_dim=16, attention_chunk_size=8,
                           intermediate_size_mlp=128, num_local_experts=4, num_experts_per_tok=1),
    "deepseek-mla": dict(model_type="deepseek_v3", hidden_size=64, intermediate_size=128, moe_intermediate_size=32,
                         num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=4, vocab_size=256,
                         kv_lora_rank=16, q_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16,
                         n_routed_experts=8, num_experts_per_tok=2, n_shared_experts=1, first_k_dense_replace=1),
    "mixtral-moe": dict(model_type="mixtral", **C, num_local_experts=8, num_experts_per_tok=2),
    "qwen3-moe": dict(model_type="qwen3_moe", **C, moe_intermediate_size=32, num_experts=4, num_experts_per_tok=2,
                      head_dim=16),
    "gpt-oss-sinks": dict(model_type="gpt_oss", **C, head_dim=16, sliding_window=8, num_local_experts=4,
                          num_experts_per_tok=2),
    "gpt2-gelu": dict(model_type="gpt2", n_embd=64, n_layer=2, n_head=4, vocab_size=256, n_positions=128),
    "nemotron-h-hybrid": dict(model_type="nemotron_h", hidden_size=64, hybrid_override_pattern="M*-E",
                              num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=256,
                              mamba_num_heads=4, mamba_head_dim=16, n_groups=1, ssm_state_size=8, conv_kernel=4,
                              intermediate_size=128, n_routed_experts=4, num_experts_per_tok=2,
                              moe_intermediate_size=32, moe_shared_expert_intermediate_size=32),
    "qwen3-next-hybrid": dict(model_type="qwen3_next", hidden_size=64, num_hidden_layers=4, num_attention_heads=4,
                              num_key_value_heads=2, head_dim=16, vocab_size=256, linear_num_key_heads=2,
                              linear_key_head_dim=16, linear_num_value_heads=4, linear_value_head_dim=16,
                              num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                              shared_expert_intermediate_size=32, intermediate_size=128),
}
CHECKED = ("llama-gqa", "falcon-mqa", "mistral-sliding", "gemma2-alternating", "llama4-chunked", "deepseek-mla",
           "mixtral-moe", "gpt-oss-sinks", "gpt2-gelu")


def tiny(name: str) -> kvplan.ModelSpec:
    return kvplan.parse_config(TINY[name], name=name)


# ------------------------------------------------------------------------- exact bytes, whole runs


@pytest.mark.parametrize("name", list(TINY))
def test_run_matches_planner_exactly(name):
    spec = tiny(name)
    # 12 prompt tokens + 6 steps crosses the 8-token windows; 5 shared tokens = 1 shared block of 4.
    r = run_validation(spec, tokens=12, steps=6, batch=2, block_size=4, shared_prefix=5, check=False)
    assert r["device"] == "cpu" and r["dtype"] == "fp32" and not r["reduction"]["reduced"]
    planned = kvplan.weight_bytes(spec, "fp32").total_bytes
    assert r["measured"]["weight_bytes"] == r["predicted"]["weight_bytes"] == planned
    # KV in use after prefill and after each decode step, per layer kind (vllm convention).
    static = [s for s in r["steps"] if s["phase"] == "static"]
    assert [s["tokens"] for s in static] == list(range(12, 19))
    for s in static:
        want = kvplan.kv_cache_bytes(spec.model_copy(update={"dtype": "fp32"}), [s["tokens"]] * 2, "fp32", "vllm")
        assert s["kv_by_kind_measured"] == s["kv_by_kind_predicted"] == want.by_kind
    assert r["measured"]["static_cache_bytes"] == r["predicted"]["static_cache_bytes"]
    # Paged: the allocator's blocks, slots and waste equal page_sequences after every call.
    for step in r["paged"]["per_step"]:
        planned = page_sequences([step["tokens"]] * 2, 4, 5)
        assert step["measured"]["allocated_blocks"] == planned.allocated_blocks
        assert step["measured"]["allocated_slots"] == planned.allocated_slots
        assert step["measured"]["wasted_slots"] == planned.wasted_slots
        assert step["kv_measured"] == step["kv_predicted"]
    assert r["paged"]["final_measured"]["shared_blocks"] == 1
    assert r["paged"]["released_all_blocks"]
    assert r["exact"] == {"weights": True, "kv_static": True, "kv_paged": True, "paging": True}
    assert r["ok"]


def test_bf16_run_and_sliding_window_ring():
    spec = tiny("mistral-sliding")
    r = run_validation(spec, tokens=5, steps=6, batch=1, dtype="bf16", block_size=4)
    assert r["dtype"] == "bf16" and r["ok"]
    assert r["measured"]["weight_bytes"] == kvplan.weight_bytes(spec, "bf16").total_bytes
    # The ring holds min(T, 8) tokens: 5 after prefill, 8 from the third decode step on.
    held = [s["kv_measured"] // (4 * 2 * 2 * 16 * 2) for s in r["steps"] if s["phase"] == "static"]
    assert held == [5, 6, 7, 8, 8, 8, 8]


def test_paged_allocator_matches_planner_for_unequal_lengths():
    assert blocks.simulate([5, 3, 8], 4) == dict(allocated_blocks=5, allocated_slots=20, used_slots=16,
                                                 wasted_slots=4, shared_blocks=0)  # the seed's example
    rng = random.Random(0)
    for _ in range(200):
        lengths = [rng.randint(1, 40) for _ in range(rng.randint(1, 5))]
        bs = rng.choice([1, 2, 4, 8, 16])
        shared = rng.randint(0, min(lengths))
        got = blocks.simulate(lengths, bs, shared)
        want = page_sequences(lengths, bs, shared)
        assert (got["allocated_blocks"], got["allocated_slots"], got["used_slots"], got["wasted_slots"]) == (
            want.allocated_blocks, want.allocated_slots, want.used_slots, want.wasted_slots), (lengths, bs, shared)


def test_block_tables_release_everything():
    alloc = blocks.BlockAllocator(8, 4)
    tables = blocks.BlockTables(alloc, 2, shared_prefix=4)
    tables.grow(0, 6)
    tables.grow(1, 6)
    assert alloc.counts()["allocated_blocks"] == 3 and alloc.refcount[tables.tables[0][0]] == 2
    tables.release(0)
    assert alloc.counts()["allocated_blocks"] == 2  # the shared block stays while sequence 1 holds it
    tables.release(1)
    assert alloc.allocated_blocks == 0 and len(alloc.free) == 8
    with pytest.raises(blocks.PoolExhausted):
        blocks.BlockTables(blocks.BlockAllocator(1, 4), 1).grow(0, 5)


@pytest.mark.parametrize("kw", [dict(tokens=5, steps=0), dict(tokens=1, steps=4, block_size=1),
                                dict(tokens=9, steps=2, batch=1, shared_prefix=9),
                                dict(tokens=9, steps=2, batch=3, shared_prefix=9, block_size=4)])
def test_edge_shapes(kw):
    r = run_validation(tiny("gemma2-alternating"), **kw)
    assert r["ok"], r["exact"]


# ------------------------------------------------------------------------- cache correctness


@pytest.fixture(scope="module")
def built():
    from kvplan.validate.decoder import build_decoder

    out = {}
    for name in CHECKED:
        spec = tiny(name)
        out[name] = (build_decoder(spec, "fp32", "cpu")[0], spec)
    return out


@pytest.mark.parametrize("kind", ["static", "paged"])
@pytest.mark.parametrize("name", CHECKED)
def test_cache_check_passes_and_broken_caches_fail(built, name, kind):
    from kvplan.validate.measure import cache_check

    model, spec = built[name]
    kw = dict(kind=kind, batch=2, prompt=12, steps=4, block_size=4, shared_prefix=5)
    good = cache_check(model, spec, "fp32", **kw)
    assert good["ok"] and good["rel_err"] <= 1e-4, good
    for fault in ("reset_positions", "upper_left_mask"):
        bad = cache_check(model, spec, "fp32", fault=fault, **kw)
        assert not bad["ok"] and bad["rel_err"] > 1e-2, (fault, bad)


def test_grouped_attention_never_expands_kv():
    """MQA, 8 query heads, 1 KV head, 512 cached tokens: a decode step's transient memory stays far
    below one K expanded to the query heads (what repeat_interleave would allocate per layer)."""
    from kvplan.validate.caches import StaticCache
    from kvplan.validate.decoder import build_decoder, make_step
    from kvplan.validate.memory import MemoryProbe

    spec = kvplan.parse_config(dict(model_type="llama", hidden_size=256, intermediate_size=64, num_hidden_layers=1,
                                    num_attention_heads=8, num_key_value_heads=1, vocab_size=64))
    model, _ = build_decoder(spec, "fp32", "cpu")
    cache = StaticCache(spec, 2, 520, torch.float32, "cpu")
    probe = MemoryProbe(torch.device("cpu"))
    with torch.no_grad():
        model(torch.zeros(2, 512, dtype=torch.long), cache, make_step(0, 512, "cpu"), last_only=True)
        with probe.phase():
            model(torch.zeros(2, 1, dtype=torch.long), cache, make_step(512, 1, "cpu"), last_only=True)
    expanded_k = 2 * 8 * 513 * 32 * 4
    assert probe.peak < expanded_k / 4, (probe.peak, expanded_k)


# ------------------------------------------------------------------------- reduced copies


def test_reduced_copy_extrapolates_to_the_planner_exactly():
    spec = tiny("deepseek-mla")  # dense + MoE layers: a copy keeps one of each
    r = run_validation(spec, tokens=10, steps=3, batch=2, block_size=4, layers=1, experts=2, vocab=128, check=False)
    red = r["reduction"]
    assert red["reduced"] and red["layers_run"] == 2 and red["experts_run"] == 2 and red["vocab_run"] == 128
    assert r["exact"]["weights"] and r["exact"]["kv_static"]
    fm = r["full_model"]
    assert "extrapolated" in fm["label"]
    for key in ("weight_bytes", "kv_bytes", "kv_bytes_after_prefill", "paged_kv_bytes"):
        assert fm["extrapolated"][key] == fm["predicted"][key], key
    assert fm["predicted"]["weight_bytes"] == kvplan.weight_bytes(spec, "fp32").total_bytes


def test_copy_is_reduced_automatically_when_the_model_does_not_fit():
    spec = tiny("gemma2-alternating")
    shape = dict(batch=1, tokens=8, steps=2, block_size=4, shared_prefix=0, device_type="cpu")
    two = reduce.reduce_spec(spec, 2)[0]
    free = needed_with_margin(predict(two, "fp32", **shape)["peak_run_bytes"])  # room for 2 of 4 layers
    run, red, _ = choose_copy(spec, "fp32", free, layers=None, experts=None, vocab=None, reduce="auto", **shape)
    assert red.reduced and red.layers_run == 2 and {layer.cache.kind for layer in run.layers} == {
        "sliding_attention", "full_attention"}
    r = run_validation(spec, tokens=8, steps=2, block_size=4, free_bytes=free, check=False)
    assert r["reduction"]["layers_run"] == 2 and r["full_model"]["extrapolated"]["weight_bytes"] == \
        r["full_model"]["predicted"]["weight_bytes"]
    assert any("reduced copy" in n for n in r["notes"])


def test_big_preset_plans_a_reduced_copy_without_allocating():
    spec = kvplan.load_preset("deepseek-v3")
    shape = dict(batch=1, tokens=128, steps=8, block_size=16, shared_prefix=0, device_type="cuda")
    run, red, pred = choose_copy(spec, "bf16", 140 * 2**30, layers=None, experts=None, vocab=None, reduce="auto",
                                 **shape)
    assert red.reduced and red.layers_run < 61 and needed_with_margin(pred["peak_run_bytes"]) <= 140 * 2**30
    assert {layer.experts is None for layer in run.layers} == {True, False}  # dense and MoE layers both kept


# ------------------------------------------------------------------------- safety


def test_refuses_when_the_prediction_exceeds_free_memory():
    spec = tiny("llama-gqa")
    with pytest.raises(RefusedError) as exc:
        run_validation(spec, tokens=8, steps=2, free_bytes=2**20, reduce="never")
    assert exc.value.field == "memory" and "free" in exc.value.message
    with pytest.raises(RefusedError):  # even one layer of each kind does not fit in 1 MiB
        run_validation(spec, tokens=8, steps=2, free_bytes=2**20)
    r = run_validation(spec, tokens=8, steps=2, check=False)  # the lock was released after the refusals
    assert r["ok"]


def test_one_run_at_a_time():
    spec = tiny("llama-gqa")
    started, release = threading.Event(), threading.Event()
    results = {}

    def hold(fraction, text):
        if not started.is_set():
            started.set()
            release.wait(30)

    def first():
        results["first"] = run_validation(spec, tokens=8, steps=2, check=False, progress=hold)

    t = threading.Thread(target=first)
    t.start()
    assert started.wait(30)
    try:
        with pytest.raises(BusyError) as exc:
            run_validation(spec, tokens=8, steps=2)
        assert "busy" in str(exc.value)
    finally:
        release.set()
        t.join(60)
    assert results["first"]["ok"]
    assert run_validation(spec, tokens=8, steps=2, check=False)["ok"]


def test_out_of_memory_is_reported_and_released(monkeypatch):
    from kvplan.validate import caches

    def boom(*a, **k):
        raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 1 bytes")

    from tests.test_validate_concurrency import live_decoders, record_decoders

    monkeypatch.setattr(caches.StaticCache, "__init__", boom)
    built = record_decoders(monkeypatch)
    spec = tiny("llama-gqa").model_copy(update={"name": "oom-probe"})
    with pytest.raises(RefusedError) as exc:
        run_validation(spec, tokens=8, steps=2)
    assert "out of memory during allocating the static cache" in exc.value.message
    # The model built before the failure is gone although the exception (and its context) is alive.
    assert built.made == 1 and live_decoders(built, "oom-probe") == 0
    assert exc.value.__context__ is not None
    monkeypatch.undo()
    assert run_validation(tiny("llama-gqa"), tokens=8, steps=2, check=False)["ok"]


@pytest.mark.parametrize("kw, field", [(dict(batch=0), "batch"), (dict(tokens=10**7), "tokens"),
                                       (dict(steps=-1), "steps"), (dict(block_size=0), "block_size"),
                                       (dict(dtype="int8"), "dtype"), (dict(shared_prefix=99), "shared_prefix"),
                                       (dict(device="tpu"), "device")])
def test_bad_input_names_its_field(kw, field):
    with pytest.raises(kvplan.KvplanError) as exc:
        run_validation(tiny("llama-gqa"), **{"tokens": 8, "steps": 2, **kw})
    assert exc.value.field == field


# ------------------------------------------------------------------------- CLI, isolation, bench


def test_cli_json(tmp_path, capsys):
    from kvplan.cli import main

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(TINY["mixtral-moe"]))
    assert main(["validate", str(cfg), "--tokens", "16", "--steps", "4", "--batch", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for side in ("predicted", "measured"):
        assert {"weight_bytes", "kv_bytes"} <= set(out[side])
    assert out["predicted"]["weight_bytes"] == out["measured"]["weight_bytes"]
    assert out["predicted"]["kv_bytes"] == out["measured"]["kv_bytes"]
    assert out["device"] == "cpu" and out["logits_max_abs_err"] < 1e-3


def test_cli_text_and_errors(tmp_path, capsys):
    from kvplan.cli import main

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(TINY["gpt2-gelu"]))
    assert main(["validate", str(cfg), "--tokens", "8", "--steps", "2"]) == 0
    text = capsys.readouterr().out
    assert "weight bytes" in text and "equal" in text and "GPU timings are not available" in text
    assert main(["validate", str(cfg), "--batch", "0"]) == 2
    assert capsys.readouterr().err.startswith("error: --batch")
    assert main(["validate", "no-such-model"]) == 2
    assert main(["validate", str(cfg), "--tokens", "64", "--steps", "64", "--no-reduce", "--block-size", "0"]) == 2


def test_validate_modules_do_not_import_torch_until_a_run():
    code = ("import sys, kvplan.cli, kvplan.validate.measure, kvplan.validate.hf_local, kvplan.validate.estimate;"
            "kvplan.cli.build_parser().parse_args(['validate', 'gpt2']); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_bench_script_dry_run():
    out = subprocess.run([sys.executable, "bench/validate_gpu.py", "--dry-run", "--free-gib", "139"],
                         capture_output=True, text=True, check=True)
    assert "llama-3.1-8b" in out.stdout and "batch" in out.stdout


# ------------------------------------------------------------------------- a local HF checkpoint


@pytest.mark.parametrize("model_type, extra", [("llama", {}), ("mistral", {"sliding_window": 8})])
def test_local_hf_checkpoint(tmp_path, model_type, extra):
    transformers = pytest.importorskip("transformers")
    from kvplan.validate.hf_local import is_hf_dir, run_hf_validation

    cfg = transformers.AutoConfig.for_model(model_type, vocab_size=256, hidden_size=64, intermediate_size=128,
                                            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                            max_position_embeddings=256, **extra)
    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(cfg).save_pretrained(tmp_path)
    assert is_hf_dir(tmp_path)
    r = run_hf_validation(tmp_path, tokens=12, steps=4, batch=2)
    spec = kvplan.parse_config(json.loads((tmp_path / "config.json").read_text()))
    assert r["measured"]["weight_bytes"] == kvplan.weight_bytes(spec, "fp32").total_bytes
    for s in r["steps"]:  # transformers' own cache, convention 'transformers' (sliding: window - 1)
        want = kvplan.kv_cache_bytes(spec.model_copy(update={"dtype": "fp32"}), [s["tokens"]] * 2, "fp32",
                                     "transformers")
        assert s["kv_measured"] == s["kv_predicted"] == want.kv_bytes
    assert r["logits_ok"] and r["ok"]
