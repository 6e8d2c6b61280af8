"""The GPU picker's every row equals a straightforward reference: one plan() per option on a fresh spec.

``kvplan.picker.pick_gpus`` hoists and memoizes what a sweep recomputes (per-layout weights, per-stage
budgets, KV bytes per token, vLLM's fixed terms) for speed (bench/core.py: the whole catalog x TP 1-8 x
PP 1-4 x 3 lengths under 100 ms). Those shortcuts must never change a number. The reference below is the
picker's rule written out plainly, with no hoisting: for every catalog GPU x TP x PP it takes a fresh copy
of the spec (``model_copy``: its memo starts empty, so nothing planned for another GPU, layout or length
is reused), plans it with ``kvplan.plan.plan`` and derives the row the module docstring of kvplan.picker
describes. The full output (every option and every rejection, all fields, floats compared exactly) must
be equal, for a dense 8B, a 70B, an MLA MoE and a hybrid at 8k, 32k and 128k, and for other vLLM settings, SGLang,
custom and typed-in-weights engines on one 70B spec; and each plan on the shared, memo-warm spec must equal the
fresh one in every field (terms, sources, logs), which the rows alone would not show.
"""

import math

import pytest

from kvplan.engines import EngineConfig
from kvplan.errors import PlanInputError
from kvplan.gpus import GPU_CATALOG
from kvplan.kv import kv_dtype_bytes
from kvplan.parallel import Layout, rank_weight_bytes
from kvplan.picker import PP_CHOICES, TP_CHOICES, Option, Rejected, nodes_needed, pick_gpus, rank_options
from kvplan.plan import decode_bound, decode_weight_parts, plan, vllm_auto_dtype
from kvplan.presets import load_preset
from kvplan.prices import default_prices
from kvplan.support import platform_refusal

LENGTHS = (8192, 32768, 131072)
# dense 8B, dense 70B (GQA), MLA MoE (DeepSeek-V2-Lite), hybrid (Qwen3-Next: Gated DeltaNet state + attention)
PRESETS = ("llama-3.1-8b", "llama-3.1-70b", "deepseek-v2-lite", "qwen3-next-80b-a3b")


def reference_pick(spec, max_model_len: int, concurrency: int, engine: EngineConfig | None = None,
                   headroom_floor: float = 0.10, multi_node: bool = False, max_replicas: int = 64):
    """(options, rejected) of the picker, computed option by option with nothing carried between them."""
    prices = default_prices()
    engine = (engine or EngineConfig()).model_copy(update={"max_model_len": max_model_len})
    options, rejected = [], []
    for gpu in GPU_CATALOG.values():
        for pp in PP_CHOICES:
            for tp in TP_CHOICES:
                def reject(reason, gpu=gpu, tp=tp, pp=pp):
                    rejected.append(Rejected(gpu=gpu.name, tensor_parallel_size=tp, pipeline_parallel_size=pp,
                                             reason=reason))
                if tp > gpu.gpus_per_node:
                    reject(f"TP={tp} exceeds {gpu.gpus_per_node} GPUs per node")
                    continue
                if not multi_node and tp * pp > gpu.gpus_per_node:
                    reject(f"one replica is {tp * pp} GPUs, more than a {gpu.gpus_per_node}-GPU node "
                           "(multi-node layouts are off)")
                    continue
                # the engine-platform rule (a table, kvplan.support): an unserved platform is rejected, not planned
                unserved = platform_refusal(engine.engine, gpu.vendor, engine.vllm_version,
                                            any(layer.cache.kind == "mla_dsa" for layer in spec.layers))
                if unserved and engine.engine != "custom":
                    reject(f"Not served: {unserved}")
                    continue
                fresh = spec.model_copy()  # an empty memo: this option is planned from scratch
                layout = Layout(tp, pp)
                try:
                    heaviest = engine.weights_bytes if engine.weights_bytes is not None else max(
                        rank_weight_bytes(fresh, layout, s, engine.weight_format) for s in range(pp))
                    if heaviest > gpu.memory_bytes:
                        reject(f"Does not fit: the weights alone are {heaviest / 2**30:.2f} GiB per GPU, more than "
                               f"the {gpu.memory_gib:.2f} GiB it has")
                        continue
                    p = plan(fresh, gpu, engine, layout, suggest=False)
                except PlanInputError as exc:
                    reject(exc.message)
                    continue
                # The same plan on the shared spec, its memo warm from every GPU, layout, length and engine planned
                # before: every field (budget terms and their sources, logs, verdict) equals the fresh one.
                assert plan(spec, gpu, engine, layout, suggest=False) == p, (gpu.name, tp, pp)
                if p.max_num_seqs_at_len < 1:
                    reject(p.verdict)
                    continue
                floor_bytes = math.ceil(headroom_floor * gpu.memory_bytes)
                kv_ranks = [r for r in p.ranks if r.bytes_per_block > 0]
                per_seq = {r.rank: p.blocks_per_request * r.bytes_per_block for r in kv_ranks}
                per_replica = min(p.max_num_seqs_at_len,
                                  min((r.kv_pool_bytes - floor_bytes) // per_seq[r.rank] for r in kv_ranks))
                if per_replica < 1:
                    free = min(r.kv_pool_bytes - per_seq[r.rank] for r in kv_ranks)
                    reject(f"one sequence leaves {free / 2**30:.2f} GiB ({free / gpu.memory_bytes:.0%}) free on the "
                           f"tightest rank, under the {headroom_floor * 100:g}% headroom floor")
                    continue
                replicas = -(-concurrency // per_replica)
                if replicas > max_replicas:
                    reject(f"needs {replicas} replicas (limit {max_replicas})")
                    continue
                nodes = nodes_needed(tp * pp, replicas, gpu.gpus_per_node)
                if nodes > 1 and not multi_node:
                    reject(f"needs {replicas} replicas on {nodes} nodes (multi-node layouts are off)")
                    continue
                load = -(-concurrency // replicas)
                tight = min(kv_ranks, key=lambda r: r.kv_pool_bytes - load * per_seq[r.rank])
                headroom = tight.kv_pool_bytes - load * per_seq[tight.rank]
                # the format plan() serves (vllm_auto_dtype) prices the routed experts a step reads; the MXFP4
                # layout and the tower terms of the rank as decode_weight_parts reads them
                step = decode_bound(spec.model_copy(), gpu, layout, tight.weights_bytes, load, p.max_model_len,
                                    kv_dtype_bytes(spec, engine.kv_cache_dtype), None,
                                    vllm_auto_dtype(spec, engine).weight_format, *decode_weight_parts(tight))
                tps = step.tokens_per_s * concurrency / load if step.tokens_per_s else 0.0
                n = tp * pp * replicas
                price = prices.get(gpu.name)
                cost = price * n if price is not None else None
                options.append(Option(
                    gpu=gpu.name, tensor_parallel_size=tp, pipeline_parallel_size=pp, replicas=replicas, num_gpus=n,
                    num_nodes=nodes, headroom_bytes=headroom, headroom_fraction=headroom / gpu.memory_bytes,
                    max_concurrency=p.max_concurrency, seqs_per_replica=per_replica, load_per_replica=load,
                    tokens_per_s=tps, bound=step.bound, overcounts=step.overcounts, price_per_gpu_hour=price,
                    cost_per_hour=cost,
                    cost_per_million_tokens=cost / (tps * 3600) * 1e6 if cost is not None and tps > 0 else None))
    return options, rejected


def _rows(items) -> list[dict]:
    return [x.model_dump() for x in items]


def _check(spec, length, concurrency, engine: EngineConfig | None = None, **kw):
    engine = engine or EngineConfig()
    got = pick_gpus(spec, length, concurrency, engine, **kw)
    options, rejected = reference_pick(spec, length, concurrency, engine, **kw)
    assert _rows(got.rejected) == _rows(rejected)  # same reasons, in catalog order
    assert sorted(_rows(got.options), key=repr) == sorted(_rows(options), key=repr)  # every field of every row
    assert _rows(got.options) == _rows(rank_options(options, got.objective))  # and the same order
    return got


@pytest.mark.parametrize("name", PRESETS)
def test_every_picker_row_equals_one_plan_per_option(name):
    spec = load_preset(name)
    counts = []
    for length in LENGTHS:  # one spec across the lengths, as the GPUs page keeps it: memos carry over
        got = _check(spec, length, 16)
        counts.append(len(got.options))
    # 43 GPUs x 12 layouts; the sweep must leave real options to compare (a row count of 0 would pass vacuously)
    assert all(len(GPU_CATALOG) * len(TP_CHOICES) * len(PP_CHOICES) > c > 0 for c in counts), counts


# One spec across every engine and length, as the app keeps it: a memo key that left out an engine setting would
# hand one engine's budget to the next.
ENGINES = [
    EngineConfig(),
    EngineConfig(gpu_memory_utilization=0.8),
    EngineConfig(engine="sglang"),
    EngineConfig(engine="sglang", mem_fraction_static=0.7),
    EngineConfig(engine="custom"),
    EngineConfig(weights_bytes=40 * 2**30, weights_basis="measured"),
    EngineConfig(vllm_version="0.11", kv_cache_dtype="fp8", enforce_eager=True),
    EngineConfig(vllm_version="0.6"),  # the V0 engine core
    EngineConfig(max_num_seqs=64, max_num_batched_tokens=4096),
]


def test_other_engines_on_one_spec_equal_the_reference():
    spec = load_preset("llama-3.1-70b")
    for engine in ENGINES:
        for length in (8192, 131072):
            assert _check(spec, length, 4, engine).options, (engine, length)


def test_multi_node_and_a_floor_equal_the_reference():
    spec = load_preset("qwen3-next-80b-a3b")
    assert _check(spec, 32768, 64, multi_node=True, headroom_floor=0.25).options


def test_the_budget_memo_tells_equal_values_of_other_types_apart():
    # 1 == 1.0, but the budget prints the utilization as given: an unvalidated model_copy(update=...) of 1 must
    # not be served the term planned for 1.0 (the memo key holds each setting's type beside its value)
    spec = load_preset("llama-3.1-8b").model_copy()
    gpu = GPU_CATALOG["H100-SXM"]
    validated = EngineConfig(gpu_memory_utilization=1)  # pydantic makes it 1.0
    as_int = validated.model_copy(update={"gpu_memory_utilization": 1})
    names = [plan(spec, gpu, e, suggest=False).ranks[0].terms[1].name for e in (validated, as_int)]
    assert names == ["outside the budget: (1 - 1.0) x device", "outside the budget: (1 - 1) x device"]


def test_detail_false_changes_only_the_page_fields():
    # plan(detail=False), what the picker, context sweeps and the fixes tried for suggestions call, leaves out the
    # start-up log, the decode bound and the model runner; every other field equals the full plan's
    from kvplan.gpus import get_gpu

    compared = 0
    for name, gpu, engine, layout in (
            ("llama-3.1-70b", "H100-SXM", EngineConfig(max_model_len=32768), Layout(4)),
            ("llama-3.1-70b", "Gaudi3", EngineConfig(max_model_len=32768), Layout(2, 2)),  # the Gaudi budget memo
            ("deepseek-v2-lite", "A100-80GB", EngineConfig(max_model_len=8192), Layout(1)),
            ("qwen3-next-80b-a3b", "H200", EngineConfig(engine="sglang", max_model_len=131072), Layout(2))):
        spec = load_preset(name)
        full = plan(spec.model_copy(), get_gpu(gpu), engine, layout, suggest=False)
        lean = plan(spec, get_gpu(gpu), engine, layout, suggest=False, detail=False)
        assert full.engine_log and full.decode is not None  # the fields left out were there to leave out
        assert (lean.engine_log, lean.decode, lean.model_runner) == ([], None, None)
        assert lean == full.model_copy(update={"engine_log": [], "decode": None, "model_runner": None}), name
        compared += 1
    assert compared == 4


def test_the_kv_group_memo_keys_on_the_stage_split():
    # SGLang splits 42 layers over 4 stages as [10, 10, 10, 12] through 0.5.4 and [10, 10, 11, 11] from 0.5.6
    # (kvplan.sglang.pp_partition). The KV-group memo once keyed on PP and stage only, so 0.5.6 planned after 0.5.4
    # on one spec kept 0.5.4's groups (6 + 6 layers on the tightest stage instead of 6 + 5: Gemma-2's sliding and
    # full layers alternate over stage 2's 11).
    from kvplan.gpus import get_gpu

    spec = load_preset("gemma-2-9b").model_copy()
    gpu = get_gpu("H100-SXM")
    layers = []
    for version in ("0.5.4.post1", "0.5.6"):
        engine = EngineConfig(engine="sglang", sglang_version=version, max_model_len=8192)
        warm = plan(spec, gpu, engine, Layout(1, 4), suggest=False)
        assert warm == plan(spec.model_copy(), gpu, engine, Layout(1, 4), suggest=False), version
        layers.append(([r.layers for r in warm.ranks], [g.layers for g in warm.kv_groups]))
    assert layers == [([10, 10, 10, 12], [6, 6]), ([10, 10, 11, 11], [6, 5])]
