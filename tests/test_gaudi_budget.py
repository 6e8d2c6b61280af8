"""vLLM's KV budget on Intel Gaudi (kvplan.vllm_gaudi): the HPU worker's own accounting, not CUDA's.

Source read: vllm-project/vllm-gaudi at 091bbadda10bee4fd3f6d0efc1844d2610dd2707 (snapshot of 2026-12-02),
vllm_gaudi/v1/worker/hpu_worker.py determine_available_memory. Real logs, both Llama-3.1-8B bf16 TP 1 on Gaudi 2
(torch.hpu.mem_get_info total "94.62 GiB"), from HabanaAI/vllm-fork's V0 HPU worker, quoted in vllm-gaudi's docs:
- LOG_SEP: docs/configuration/performance_tuning.md (same commit), log dated 09-24 (2024), --block-size 128
  --max-num-seqs 4, gpu_memory_utilization 0.9, VLLM_GRAPH_RESERVED_MEM 0.1.
- LOG_AUG: docs/configuration/warm-up/warm-up.md (same commit; first posted in HabanaAI/vllm-fork PR #147,
  2024-08-02), gpu_memory_utilization 0.5, VLLM_GRAPH_RESERVED_MEM 0.4, swap space 0.
No public start-up log of the V1 plugin ("reserved for KV cache dummy block") or of Gaudi 3 was found (issues and code
corpora searched 2026-12-02): the Gaudi 3 plans below pin the worker's arithmetic on kvplan's estimated 126 GiB.
"""

import pytest

from kvplan import load_preset
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.plan import Layout, plan
from kvplan.vllm_gaudi import format_bytes, pool_bytes

GiB = 2**30
GAUDI3 = get_gpu("Gaudi3")
# Gaudi 2 as the logs report it: "(15.05 GiB/94.62 GiB used)"
GAUDI2_LOGGED = GAUDI3.model_copy(update={"name": "Gaudi2-log", "memory_bytes": round(94.62 * GiB),
                                          "memory_basis": "measured"})

LOG_SEP = """\
INFO 09-24 17:31:39 habana_model_runner.py:640] Loading model weights took in total 15.05 GiB of device memory (15.05 GiB/94.62 GiB used) and 1.056 GiB of host memory (8.188 GiB/108.2 GiB used)
INFO 09-24 17:31:40 habana_worker.py:153] Model profiling run took 355 MiB of device memory (15.4 GiB/94.62 GiB used) and 131.4 MiB of host memory (8.316 GiB/108.2 GiB used)
INFO 09-24 17:31:40 habana_worker.py:177] Free device memory: 79.22 GiB, 71.3 GiB usable (gpu_memory_utilization=0.9), 7.13 GiB reserved for HPUGraphs (VLLM_GRAPH_RESERVED_MEM=0.1), 64.17 GiB reserved for KV cache
INFO 09-24 17:31:40 habana_executor.py:85] # HPU blocks: 4107, # CPU blocks: 256"""

LOG_AUG = """\
INFO 08-02 17:37:52 hpu_model_runner.py:442] Loading model weights took in total 14.97 GiB of device memory (14.97 GiB/94.62 GiB used) and 2.95 GiB of host memory (475.2 GiB/1007 GiB used)
INFO 08-02 17:37:54 hpu_worker.py:134] Model profiling run took 504 MiB of device memory (15.46 GiB/94.62 GiB used) and 180.9 MiB of host memory (475.4 GiB/1007 GiB used)
INFO 08-02 17:37:54 hpu_worker.py:158] Free device memory: 79.16 GiB, 39.58 GiB usable (gpu_memory_utilization=0.5), 15.83 GiB reserved for HPUGraphs (VLLM_GRAPH_RESERVED_MEM=0.4), 23.75 GiB reserved for KV cache
INFO 08-02 17:37:54 hpu_executor.py:85] # HPU blocks: 1519, # CPU blocks: 0"""


def _logged(log: str, needle: str) -> str:
    line = next(x for x in log.splitlines() if needle in x)
    return line.split("] ", 1)[1]


def _v0_plan(weights_gib, profile_mib, util, graph_reserved=None):
    # the measured loads typed in ("Loading model weights took", "Model profiling run took"): the V0 fork profile
    engine = EngineConfig(vllm_version="0.6", weights_bytes=round(weights_gib * GiB), activation_bytes=profile_mib
                          * 2**20, gpu_memory_utilization=util, max_num_seqs=4, max_model_len=2048, block_size=128,
                          vllm_graph_reserved_mem=graph_reserved)
    return plan(load_preset("llama-3.1-8b"), GAUDI2_LOGGED, engine)


def test_format_bytes_as_the_plugin_prints():
    # profiler.py format_bytes: /1024 while > 1024, '%.4g': 79.22 GiB, 16 MiB, 0 B
    assert format_bytes(85_061_255_168) == "79.22 GiB" and format_bytes(16 * 2**20) == "16 MiB"
    assert format_bytes(0) == "0 B" and format_bytes(355 * 2**20) == "355 MiB"


def test_sep_log_figures_reproduced():
    # free = 94.62 - 15.05 - 355 MiB (0.3467) = 79.2233 GiB -> "79.22"; usable 0.9 x 79.2233 = 71.301 -> "71.3";
    # graphs 0.1 x 71.301 = 7.1301 -> "7.13"; pool 71.301 - 7.1301 = 64.171 -> "64.17 GiB reserved for KV cache"
    p = _v0_plan(15.05, 355, 0.9)
    assert p.engine_log[1] == "Model profiling run took 355 MiB of device memory (15.4 GiB/94.62 GiB used)"
    assert p.engine_log[2] == _logged(LOG_SEP, "Free device memory")
    assert p.ranks[0].bytes_per_block == 128 * 131_072  # 16 MiB: 32 layers x 8 heads x 128 x 2 (K, V) x 2 B x 128
    assert any("HabanaAI/vllm-fork's V0 worker" in w and "profile residue" not in w for w in p.warnings)


def test_sep_log_block_count_at_printed_inputs():
    # 64.171 GiB x 64 blocks a GiB = 4106.9 -> 4106 at the printed (4-digit) inputs
    assert _v0_plan(15.05, 355, 0.9).ranks[0].num_blocks == 4106


@pytest.mark.xfail(strict=True, reason="LOG_SEP logs 4107 HPU blocks; kvplan gets 4106 from the log's own 4-digit "
                   "figures (94.62 GiB total, 15.05 GiB weights, 355 MiB profile): 4107 needs free >= 79.2245 GiB, "
                   "0.0012 GiB more than they give; the unrounded inputs are not printed")
def test_sep_log_block_count_exact():
    assert _v0_plan(15.05, 355, 0.9).ranks[0].num_blocks == 4107


def test_aug_log_reproduced_with_graph_reserve_04():
    # free = 94.62 - 14.97 - 504 MiB (0.4922) = 79.158 -> "79.16"; usable 0.5 x = 39.579 -> "39.58"; graphs 0.4 x =
    # 15.832 -> "15.83"; pool 0.6 x 39.579 = 23.747 -> "23.75"; 23.747 x 64 = 1519.8 -> 1519 blocks (logged 1519)
    p = _v0_plan(14.97, 504, 0.5, 0.4)
    assert p.engine_log[2] == _logged(LOG_AUG, "Free device memory")
    assert p.ranks[0].num_blocks == 1519
    # the line carries the 4 GiB default swap space (256 CPU blocks); this run had --swap-space 0
    assert p.engine_log[-1] == "# HPU blocks: 1519, # CPU blocks: 256"


def test_pool_arithmetic_exact():
    # 100 GiB free, util 0.9, reserve 0.1, a 16 MiB dummy block: usable 90 GiB - 9 GiB graphs - 16 MiB
    b = pool_bytes(100 * GiB + 2**24 + 10 * GiB, 10 * GiB, 0.9, 0.1, 2**24, 0)
    assert b["free"] == 100 * GiB and b["usable"] == 90 * GiB and b["graphs"] == 9 * GiB
    assert b["pool"] == 81 * GiB - 2**24


def test_gaudi3_llama8b_v1_plugin():
    # total 126 GiB (135,291,469,824, estimated), weights 16,094,076,928 (14.99 GiB), dummy block 16 MiB:
    # free = 119,180,615,680 (111.00 GiB); util 0.92 (vLLM 0.20+ default): usable 109,646,166,425 (102.1 GiB);
    # graphs /10 = 10,964,616,642 (10.21); pool = 109,646,166,425 - 10,964,616,642 - 16,777,216 = 98,664,772,567
    # (91.89 GiB) -> // 16,777,216 = 5,880 blocks = 752,640 tokens. The CUDA accounting gave 98.68 GiB / 6,315.
    p = plan(load_preset("llama-3.1-8b"), GAUDI3, EngineConfig(max_model_len=8192))
    r = p.ranks[0]
    assert r.kv_pool_bytes == 98_664_772_567 and r.num_blocks == 5880 and p.kv_cache_tokens == 752_640
    assert p.engine_log[2] == ("Free device memory: 111 GiB, 102.1 GiB usable (gpu_memory_utilization=0.92), 10.21 GiB "
                               "reserved for HPUGraphs (VLLM_GRAPH_RESERVED_MEM=0.1), 16 MiB reserved for KV cache "
                               "dummy block 91.89 GiB reserved for usable KV cache")
    assert p.engine_log[-1] == "Usable num_blocks: 5880, actual allocated num_blocks (max across layers): 5881"
    names = [t.name for t in r.terms]
    assert not any("CUDA" in n or "non-torch" in n or "activation" in n for n in names)
    assert any(w.startswith("Intel Gaudi: budget as vllm-gaudi's HPU worker") and "estimated" in w for w in p.warnings)


def test_gaudi3_llama70b_tp4_and_eager():
    # weights 35,314,483,200 a rank (32.89 GiB), block 80 layers x 2 heads x 128 x 2 x 2 B x 128 = 10,485,760:
    # free = 135,291,469,824 - 35,314,483,200 - 10,485,760 = 99,966,500,864; usable x 0.92 = 91,969,180,794;
    # graphs 9,196,918,079; pool 82,761,776,955 (77.08 GiB) -> 7,892 blocks
    llama70 = load_preset("llama-3.1-70b")
    p = plan(llama70, GAUDI3, EngineConfig(max_model_len=8192), Layout(tp=4))
    assert p.ranks[0].kv_pool_bytes == 82_761_776_955 and p.ranks[0].num_blocks == 7892
    assert any("TP or PP > 1" in w for w in p.warnings)
    # --enforce-eager: no HPU-graph reserve: pool = 91,969,180,794 - 10,485,760 = 91,958,695,034 -> 8,769 blocks
    eager = plan(llama70, GAUDI3, EngineConfig(max_model_len=8192, enforce_eager=True), Layout(tp=4))
    assert eager.ranks[0].kv_pool_bytes == 91_958_695_034 and eager.ranks[0].num_blocks == 8769


def test_cuda_plan_unchanged_by_gaudi_knob():
    # VLLM_GRAPH_RESERVED_MEM is read by vllm-gaudi only: an H100 plan ignores it
    spec = load_preset("llama-3.1-8b")
    h100 = get_gpu("H100-SXM")
    a = plan(spec, h100, EngineConfig(max_model_len=8192))
    b = plan(spec, h100, EngineConfig(max_model_len=8192, vllm_graph_reserved_mem=0.3))
    assert a.ranks[0].kv_pool_bytes == b.ranks[0].kv_pool_bytes
    assert not any("vllm-gaudi" in w for w in a.warnings)
    assert "vllm_graph_reserved_mem (VLLM_GRAPH_RESERVED_MEM) is read by vllm-gaudi only: ignored for vllm on " \
        "H100-SXM" in b.warnings


def test_pool_formula_names_the_gaudi_rule():
    # the page's pool formula: requested = device - (1 - u) x free = 126 - 0.08 x 111.00 = 117.12 GiB, then
    # - 14.99 weights - 0.02 dummy block - 0 profile - 10.21 HPU graphs - 0.02 padding block = 91.89 GiB
    from kvplan.web import formulas
    p = plan(load_preset("llama-3.1-8b"), GAUDI3, EngineConfig(max_model_len=8192))
    latex = formulas._pool(p, p.ranks[0])
    assert r"\text{device} - (1 - u) \times \text{free} = 117.12" in latex and r"\lceil" not in latex
    assert r"\text{reserved for HPUGraphs}" in latex and latex.endswith(r"= 91.89\,\text{GiB}\end{aligned}")


def test_hybrid_on_gaudi_warns_recurrent_states_not_modelled():
    # hpu_worker.py allocates Mamba / GDN states in their own tensors and scales the budget for GDN hybrids
    p = plan(load_preset("nemotron-h-56b"), GAUDI3, EngineConfig(max_model_len=8192))
    assert any("recurrent-state layers" in w and "VLLM_COMPACT_GDN" in w for w in p.warnings)
    assert not any("recurrent-state" in w for w in plan(load_preset("llama-3.1-8b"), GAUDI3,
                                                        EngineConfig(max_model_len=8192)).warnings)
