"""vLLM on Intel Gaudi: how the HPU worker sizes the KV cache, in the plugin's own terms.

Read in vllm-project/vllm-gaudi at commit 091bbadda10bee4fd3f6d0efc1844d2610dd2707 (the snapshot fetched
2026-12-02): ``vllm_gaudi/v1/worker/hpu_worker.py HPUWorker.determine_available_memory`` and
``initialize_from_config``, ``vllm_gaudi/v1/worker/hpu_model_runner.py profile_run``,
``vllm_gaudi/extension/profiler.py HabanaMemoryProfiler / format_bytes``; the V0 HPU worker of HabanaAI/vllm-fork
(``vllm/worker/hpu_worker.py determine_num_available_blocks``, 2024) through the plugin's docs, which quote its log.

None of the CUDA terms apply: no CUDA graphs estimate, no non-torch term, no sampler peak, and
``gpu_memory_utilization`` is a fraction of the memory *free after loading*, not of the device. Per rank (bytes):

    free   = total - weights - dummy KV block - profile residue   # torch.hpu.mem_get_info()[0] after the profile
    usable = free x gpu_memory_utilization                        # "Y GiB usable"
    graphs = usable x VLLM_GRAPH_RESERVED_MEM                     # "Z GiB reserved for HPUGraphs"; 0 if eager
    pool   = usable - graphs - dummy KV block                     # "W GiB reserved for usable KV cache"
    blocks = pool // (block_size x KV bytes a token)              # vLLM core get_num_blocks; "Usable num_blocks"

- total: what ``torch.hpu.mem_get_info()`` reports (94.62 GiB on Gaudi 2 in the logs below; the Gaudi 3 figure in
  kvplan.gpus is an estimate). Nothing is allocated before the weights: "Pre-loading model weights ... took 15.05
  GiB of device memory (15.05 GiB/94.62 GiB used)".
- dummy KV block: the V1 worker binds a one-block K and V tensor per attention layer for the profile (live when
  free memory is read) and then subtracts one block's bytes again as "reserved for KV cache dummy block" (the
  padding block it allocates beside the scheduler's blocks: ``num_blocks + 1``). V0 (vllm-fork): neither.
- profile residue: the V1 worker calls ``profile_run(initialize_only=True)``, which returns at once (vllm-gaudi
  PR #916, ported in cada871d, 2026-02-10; earlier plugin snapshots ran a dummy prefill, not modelled): 0.
  V0 ran a dummy forward and kept its workspace: 355 and 504 MiB in the two public
  Llama-3.1-8B Gaudi 2 logs; kvplan uses their mean (VLLM_FORK_PROFILE_RESIDUE_BYTES), an estimate.

Worked number (the plugin's docs, docs/configuration/performance_tuning.md, V0 log of 2024-09-24, Llama-3.1-8B bf16
on Gaudi 2, util 0.9, VLLM_GRAPH_RESERVED_MEM 0.1, block 128): free 79.22 GiB -> usable 0.9 x 79.22 = 71.30 GiB
-> graphs 7.13 GiB -> pool 64.17 GiB -> // (128 x 131,072 B = 16 MiB) = 4,107 blocks logged; kvplan, from the log's
own 4-digit figures (94.62 total, 15.05 weights, 355 MiB profile), 4,106 (a strict xfail in tests/test_gaudi_budget.py).

Basis of each term: the arithmetic and the graph reserve are engine rules (exact); the dummy block is exact; the
weights are kvplan's (GAUDI_WEIGHTS_ERROR); the V1 profile residue is 0 by rule, the V0 one an estimate (+-75 MiB on
its two logs); the Gaudi 3 total is an estimate (kvplan.gpus). Not modelled: HCCL buffers at TP > 1 (no public log),
a non-default VLLM_GRAPH_RESERVED_MEM outside EngineConfig.vllm_graph_reserved_mem, hybrid (Mamba / GDN) models'
separate-tensor adjustment (hpu_worker.py VLLM_COMPACT_GDN), the INC / FP8 dynamic-scale tensors.
"""

from fractions import Fraction

from kvplan.units import GiB

# vllm-gaudi hpu_worker.py @091bbad (read 2026-12-02): os.environ.get('VLLM_GRAPH_RESERVED_MEM', '0.1'), 0 when
# enforce_eager. HabanaAI/vllm-fork PR #292 (2024-09-17) lowered it from 0.4 ("capturing 100% of prefill and decode
# graphs on BS=256 now takes 1.566 GB" on Llama3.1-8b, Gaudi 2).
VLLM_GRAPH_RESERVED_MEM_DEFAULT = 0.1
# vLLM V0 CacheConfig swap_space default (4 GiB; --swap-space), which the fork's executor prints as CPU blocks
V0_SWAP_SPACE_BYTES = 4 * 2**30
GAUDI_SOURCE = "vllm-project/vllm-gaudi @091bbad (read 2026-12-02), vllm_gaudi/v1/worker/hpu_worker.py"
# The V0 fork's profile-run residue, estimated: the mean of 355 MiB (docs/configuration/performance_tuning.md, log
# 2024-09-24) and 504 MiB (docs/configuration/warm-up/warm-up.md, log 2024-08-02, from HabanaAI/vllm-fork PR #147),
# both Llama-3.1-8B bf16 TP 1 on Gaudi 2; error +-75 MiB on those two, unknown for other models, batches or TP.
VLLM_FORK_PROFILE_RESIDUE_BYTES = (355 + 504) * 2**20 // 2
# The two public loads: "Loading model weights took in total 15.05 GiB" and "14.97 GiB" for Llama-3.1-8B, against
# kvplan's 14.99 GiB (parameters 14.96 + its 32 MiB rotary table): the weights term's error on Gaudi.
GAUDI_WEIGHTS_ERROR = "+0.06 / -0.02 GiB against the two public Llama-3.1-8B Gaudi 2 loads (15.05, 14.97 GiB logged)"


def format_bytes(n: int) -> str:
    """vllm_gaudi/extension/profiler.py format_bytes: divide by 1024 while above it, 4 significant digits, "KiB" /
    "MiB" / "GiB". Worked numbers: 85,061,255,168 -> "79.22 GiB"; 16,777,216 -> "16 MiB"."""
    size, power = float(n), 0
    while abs(size) > 1024:
        size /= 1024
        power += 1
    return f"{size:.4g} {['', 'Ki', 'Mi', 'Gi', 'Ti'][power]}B"


def graph_reserved_fraction(engine) -> float:
    """VLLM_GRAPH_RESERVED_MEM as the worker reads it: 0 with --enforce-eager, else EngineConfig.vllm_graph_reserved_mem
    (the environment variable), else the default 0.1."""
    if engine.enforce_eager:
        return 0.0
    return VLLM_GRAPH_RESERVED_MEM_DEFAULT if engine.vllm_graph_reserved_mem is None else engine.vllm_graph_reserved_mem


def pool_bytes(total: int, weights: int, util: float, graph_fraction: float, dummy_block: int, residue: int) -> dict:
    """The HPU worker's budget of one rank (bytes): free, usable, graphs, pool (see the module docstring).

    Inputs: total device bytes (mem_get_info), this rank's weights, --gpu-memory-utilization, the graph fraction,
    the dummy block (one block of every attention layer of the rank: 0 on the V0 fork) and the profile residue.
    Fractions are taken exactly from their decimal text (0.9 -> 9/10), floored; the worker's floats agree within a
    byte. Worked number: Gaudi 3 (126 GiB = 135,291,469,824 B, estimated), Llama-3.1-8B (weights 16,094,076,928 B,
    block 16 MiB), util 0.9: free 119,180,615,680 B (111.00 GiB), usable 107,262,554,112 (99.90), graphs
    10,726,255,411 (9.99), pool 96,519,521,485 B (89.89 GiB) -> 5,753 blocks of 128 tokens."""
    free = total - weights - dummy_block - residue
    u, g = Fraction(str(util)), Fraction(str(graph_fraction))
    usable = free * u.numerator // u.denominator
    graphs = usable * g.numerator // g.denominator
    return {"free": free, "usable": usable, "graphs": graphs, "pool": usable - graphs - dummy_block}


def weights_row(weights_term):
    """The weights row of a Gaudi plan: the loader's row with the weights' error on the public Gaudi loads."""
    return weights_term.model_copy(update={"source": weights_term.source + f"; on Gaudi: {GAUDI_WEIGHTS_ERROR}"})


def budget(gpu, engine, prof, weights: int, weights_term, dummy_block: int):
    """(terms, pool) of one rank of a vLLM plan on Gaudi; ``dummy_block`` = the rank's bytes a KV block;
    ``weights_term`` the row as shown (``weights_row``), kept as given."""
    from kvplan.plan import Term

    v1 = prof.engine_core != "V0"
    util = engine.gpu_memory_utilization or prof.gpu_memory_utilization
    total = gpu.memory_bytes
    device = Term(name="device memory", bytes=total, basis=gpu.memory_basis,
                  source=f"{gpu.name}: what torch.hpu.mem_get_info() reports (the log's 'X GiB/T GiB used')")
    if engine.kv_cache_memory_bytes is not None:
        fixed = Term(name="KV cache (--kv-cache-memory-bytes)", bytes=engine.kv_cache_memory_bytes,
                     basis="configured", source="replaces the profiled pool exactly")
        return [device, weights_term, fixed], engine.kv_cache_memory_bytes
    block = dummy_block if v1 else 0
    if engine.activation_bytes is not None:
        residue, r_basis, r_src = engine.activation_bytes, "measured", "typed in (Model profiling run took X)"
    elif v1:
        residue, r_basis, r_src = 0, "engine rule", (
            "HPUWorker.determine_available_memory calls profile_run(initialize_only=True), which returns at once "
            f"(vllm-gaudi PR #916; {GAUDI_SOURCE})")
    else:
        residue, r_basis, r_src = VLLM_FORK_PROFILE_RESIDUE_BYTES, "estimated", (
            "HabanaAI/vllm-fork V0 profile run's retained workspace: mean of the two public Llama-3.1-8B Gaudi 2 logs "
            "(355 and 504 MiB), error +-75 MiB there, unknown for other models, batch limits or TP")
    gf = graph_reserved_fraction(engine)
    b = pool_bytes(total, weights, util, gf, block, residue)
    terms = [device, weights_term]
    if block:
        terms.append(Term(name="dummy KV block (bound for the profile)", bytes=block, basis="exact",
                          source="one block of K and V per attention layer, bound for the profile and live while free "
                                 f"memory is read (hpu_worker.py determine_available_memory; {GAUDI_SOURCE})"))
    terms += [
        Term(name="Model profiling run", bytes=residue, basis=r_basis, source=r_src),
        Term(name=f"outside the budget: (1 - {util}) x free device memory", bytes=b["free"] - b["usable"],
             basis="engine rule", source=f"vllm-gaudi: usable = free x gpu_memory_utilization (of the memory free "
                                         f"after loading, not of the device); {GAUDI_SOURCE}"),
        Term(name=f"reserved for HPUGraphs (VLLM_GRAPH_RESERVED_MEM={gf})", bytes=b["graphs"], basis="engine rule",
             source="usable x VLLM_GRAPH_RESERVED_MEM (default 0.1, 0 with --enforce-eager; HabanaAI/vllm-fork PR "
                    f"#292); the HPU graphs are captured in it at warm-up, after the KV cache; {GAUDI_SOURCE}")]
    if block:
        terms.append(Term(name="reserved for KV cache dummy block", bytes=block, basis="exact",
                          source="one more block's bytes: the padding block allocated beside the scheduler's "
                                 f"(num_blocks + 1 in hpu_model_runner.py initialize_kv_cache); {GAUDI_SOURCE}"))
    return terms, b["pool"]


def log_lines(rank, num_blocks: int, tokens: int, conc: float, max_len: int, tokens_line: str = "groups"
              ) -> list[str]:
    """The start-up figures as vllm-gaudi (hpu_model_runner.py / hpu_worker.py, format_bytes) and vLLM core's
    kv_cache_utils print them, from a rank planned by ``budget``."""
    t = {x.name.split(" (")[0]: x.bytes for x in rank.terms}
    profile = t.get("Model profiling run", 0)
    dummy = t.get("reserved for KV cache dummy block", 0)
    graphs = next((x for x in rank.terms if x.name.startswith("reserved for HPUGraphs")), None)
    outside = next((x for x in rank.terms if x.name.startswith("outside the budget")), None)
    lines = [f"Loading model weights took {rank.weights_bytes / GiB:.4f} GB"]
    if graphs is None or outside is None:  # a typed --kv-cache-memory-bytes: no profiled split to print
        return lines + (_kv_lines(num_blocks, tokens, conc, max_len, tokens_line, 1) if rank.kv_pool_bytes > 0
                        else [])
    util = outside.name.split("(1 - ")[1].split(")")[0]
    usable = graphs.bytes + rank.kv_pool_bytes + dummy
    free = usable + outside.bytes
    used = rank.device_bytes - free
    lines.append(f"Model profiling run took {format_bytes(profile)} of device memory ({format_bytes(used)}/"
                 f"{format_bytes(rank.device_bytes)} used)")
    head = (f"Free device memory: {format_bytes(free)}, {format_bytes(usable)} usable (gpu_memory_utilization={util}), "
            f"{format_bytes(graphs.bytes)} reserved for HPUGraphs ({graphs.name.split('(')[1].rstrip(')')}), ")
    if dummy:
        lines.append(head + f"{format_bytes(dummy)} reserved for KV cache dummy block "
                            f"{format_bytes(rank.kv_pool_bytes)} reserved for usable KV cache")
    else:
        lines.append(head + f"{format_bytes(rank.kv_pool_bytes)} reserved for KV cache")
    if rank.kv_pool_bytes <= 0:
        return lines
    if not dummy:  # the V0 fork's executor: HPU blocks and the 4 GiB default swap space in CPU blocks
        return lines + [f"# HPU blocks: {num_blocks}, # CPU blocks: {V0_SWAP_SPACE_BYTES // rank.bytes_per_block}"]
    return lines + _kv_lines(num_blocks, tokens, conc, max_len, tokens_line, 1)


def _kv_lines(num_blocks: int, tokens: int, conc: float, max_len: int, tokens_line: str, pad: int) -> list[str]:
    """vLLM core kv_cache_utils' size and concurrency lines, then hpu_worker.py initialize_from_config's block count
    (``pad``: the padding block allocated beside the scheduler's)."""
    conc_line = f"Maximum concurrency for {max_len:,} tokens per request: {conc:.2f}x"
    return ([f"GPU KV cache size: {tokens:,} tokens, {conc_line}"] if tokens_line == "concurrency" else
            [f"GPU KV cache size: {tokens:,} tokens", conc_line]) + [
        f"Usable num_blocks: {num_blocks}, actual allocated num_blocks (max across layers): {num_blocks + pad}"]


def with_dummy_block(terms, parts: int, gpu, engine, prof, weights: int, block: int) -> tuple[list, int]:
    """The V1 budget again with the rank's real block bytes (plan() knows them only once the KV groups are built).
    ``terms``: the rank's rows as planned with no block, the ``parts`` "(in weights)" rows right after the weights
    row; the budget's own rows are made anew around the same weights row and the parts kept after them."""
    at = next(i for i, t in enumerate(terms) if t.name == "weights")
    new, pool = budget(gpu, engine, prof, weights, terms[at], block)
    return new + list(terms[at + 1:at + 1 + parts]), pool


def plan_note(gpu, layout, engine, v0: bool, recurrent: bool = False, sparse_mla: bool = False) -> str:
    """The warning every vLLM plan on Gaudi carries: which accounting it uses and what in it is not pinned."""
    parts = [f"Intel Gaudi: budget as vllm-gaudi's HPU worker sizes it ({GAUDI_SOURCE}; "
             + ("HabanaAI/vllm-fork's V0 worker for this release" if v0 else "the V1 plugin")
             + "): gpu_memory_utilization of the memory free after loading, "
             f"{graph_reserved_fraction(engine)} of that kept for HPU graphs (VLLM_GRAPH_RESERVED_MEM), no CUDA-graph, "
             "non-torch or sampler terms"]
    if gpu.memory_basis != "measured":
        parts.append(f"the {gpu.name} total ({gpu.memory_bytes / GiB:.2f} GiB) is {gpu.memory_basis}, not a logged "
                     "torch.hpu.mem_get_info() figure: the pool moves by util x (1 - graph fraction) of any "
                     "error in it")
    if v0 and engine.activation_bytes is None:
        parts.append(f"the V0 profile residue ({VLLM_FORK_PROFILE_RESIDUE_BYTES / 2**20:.0f} MiB) is fitted to two "
                     "Llama-3.1-8B Gaudi 2 logs only")
    if layout.tp > 1 or layout.pp > 1:
        parts.append("no public Gaudi log with TP or PP > 1 was found: HCCL buffers held after loading are not in "
                     "this budget")
    if engine.kv_cache_memory_bytes is not None:
        parts.append("--kv-cache-memory-bytes: the plugin's HPUWorker.determine_available_memory (hpu_worker.py) "
                     "does not read it (no mention of kv_cache_memory_bytes in vllm-gaudi @091bbad): a server profiles "
                     "its own pool as above; this plan shows the pool as typed")
    if recurrent:
        parts.append("recurrent-state layers: the HPU worker allocates them apart from the KV blocks and scales its "
                     "budget down for GDN hybrids (hpu_worker.py, VLLM_COMPACT_GDN): not modelled, the pool may be "
                     "high")
    if sparse_mla:
        parts.append("DeepSeek sparse attention (DSA): the plugin runs these layers as dense MLA and never runs the "
                     "indexer (attention/oot_mla.py: 'DSA sparse attention is not implemented on HPU'), so a decode "
                     "step reads every token's latent (the decode ceiling counts that); the KV layout shown is "
                     "vLLM's, indexer key cache included, not checked against a Gaudi log")
    parts.append("checked: the worker's arithmetic reproduces the Aug 2024 public Gaudi 2 log exactly and the Sep 2024 "
                 "one within one block (from its rounded figures); "
                 "no public V1-plugin start-up log was found to check the whole plan against")
    return "; ".join(parts)
