"""vLLM's refusal to capture FULL CUDA graphs for a hybrid whose KV pool holds fewer blocks than max_num_seqs.

config/compilation.py resolve_cudagraph_mode_and_sizes (0.20.0 - 0.34.0 wheels, read 2026-12-03): with FULL graphs, a
Mamba-type layer (MambaSpec: Mamba, Gated DeltaNet, short conv, linear attention) and max_num_seqs > num_blocks it
raises "max_num_seqs (N) exceeds available Mamba cache blocks (M) ...": each FULL decode sequence needs one state
block. 0.18.0 / 0.19.0 cap the capture sizes instead (adjust_cudagraph_sizes_for_mamba_cache, a warning), and
0.34.0's extensible cache captures against its reservation, so neither refuses.

The public log (tests/test_engine_logs_dec03c.py, H100-0271-QWEN38-FP8): Qwen3.8-27B-FP8 on one H100, vLLM 0.27.1,
util 0.90, 8192 tokens, the default 1024 sequences: "max_num_seqs (1024) exceeds available Mamba cache blocks (694)";
the same launch at --max-num-seqs 256 starts with 829 blocks. kvplan's pools are 775 and 820 blocks (the 1024-row
sampler peak costs it less than it cost vLLM: that log's xfail), so the start / no-start answer is the log's at both.
"""

from kvplan import load_preset
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from tests.test_engine_logs_dec03c import _h100

LOGGED = "max_num_seqs (1024) exceeds available Mamba cache blocks ("  # the log's words up to its block count


def test_the_h100_default_1024_sequences_does_not_start_as_logged():
    p = _h100("")
    # vLLM's pool held 694 blocks; kvplan's holds 775, still < 1024: the same refusal, with kvplan's count
    assert p.num_blocks == 775 < 1024
    assert p.start_error.startswith("ValueError: " + LOGGED + "775). Each decode sequence requires one Mamba cache")
    assert "lower max_num_seqs to at most 775 or increase gpu_memory_utilization" in p.start_error
    assert not p.starts and not p.fits
    assert p.verdict.startswith("Does not start: the KV cache is sized, then vLLM refuses to capture its FULL CUDA")
    # the smaller fix first: 256 sequences (vLLM's pool then 829 blocks, kvplan's 820; 820 // 14 blocks a request = 58)
    assert p.suggestions[0] == "--max-num-seqs 256: 58 x 8,192 tokens fit"


def test_256_sequences_start_and_graphs_off_start():
    assert _h100().start_error is None and _h100().starts  # 820 blocks >= 256 (the log: 829, started)
    for flags in ("--enforce-eager ", "-cc.cudagraph_mode=PIECEWISE "):
        p = _h100(flags)  # no FULL graph: nothing to refuse, the 1024 sequences start
        assert p.start_error is None and p.starts, flags


QWEN35 = load_preset("qwen3.5-27b")
L4 = get_gpu("L4")


def _l4(version: str, **fields):
    # Qwen3.5-27B at fp8 weights on 2 x L4 (22.03 GiB), 8192 tokens: a small pool, under 256 blocks
    engine = EngineConfig(vllm_version=version, weight_format="fp8", max_model_len=8192, language_model_only=True,
                          **fields)
    return plan(QWEN35, L4, engine, Layout(tp=2))


def test_the_refusal_by_release():
    p = _l4("0.33")
    n = p.num_blocks
    assert 0 < n < 256  # the L4's server defaults (< 70 GiB): 256 sequences
    assert p.start_error == (f"ValueError: max_num_seqs (256) exceeds available Mamba cache blocks ({n}). Each decode "
                             "sequence requires one Mamba cache block, so CUDA graph capture cannot proceed. Please "
                             f"lower max_num_seqs to at most {n} or increase gpu_memory_utilization.")
    # vLLM's own fix, planned: at most n sequences (fewer sampler rows only grow the pool)
    assert any(s.startswith(f"--max-num-seqs {n}: ") for s in p.suggestions), p.suggestions
    assert plan(QWEN35, L4, EngineConfig(vllm_version="0.33", weight_format="fp8", max_model_len=8192,
                                         language_model_only=True, max_num_seqs=n), Layout(tp=2)).starts
    for version in ("0.20", "0.27"):
        assert _l4(version).start_error.startswith("ValueError: max_num_seqs (256) exceeds"), version
    # 0.19 caps its capture sizes (a warning, no refusal); 0.34's capture sees the extensible cache's reservation
    for version in ("0.19", "0.34"):
        assert _l4(version).start_error is None, version


def test_a_model_without_recurrent_state_is_not_refused():
    # Llama-3.1-70B fp8 on 2 x L4: a pool of few blocks, 256 sequences, no MambaSpec layer: no such check
    p = plan(load_preset("llama-3.1-70b"), L4, EngineConfig(weight_format="fp8", max_model_len=8192), Layout(tp=4))
    assert p.num_blocks < 256 * 512 and p.start_error is None
