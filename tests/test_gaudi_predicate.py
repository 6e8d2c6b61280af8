"""One test says "vLLM runs here through the Gaudi (HPU) platform, the vllm-gaudi plugin": kvplan.support.on_gaudi.
Every Gaudi rule (block size 128, the HPU worker's budget and start-up lines, dense DSA, VLLM_GRAPH_RESERVED_MEM)
asks it; no module repeats the vendor comparison inline (it sat in plan.py, picker.py and the web widgets)."""

import re
from pathlib import Path

from kvplan.gpus import GPU_CATALOG, custom_gpu, get_gpu
from kvplan.support import on_gaudi

KVPLAN = Path(__file__).resolve().parents[1] / "kvplan"


def test_only_the_intel_gaudi_runs_vllm_through_the_plugin():
    assert on_gaudi(get_gpu("Gaudi3"))
    assert not any(on_gaudi(get_gpu(n)) for n in ("H200", "H100-SXM", "MI300X"))
    assert not on_gaudi(custom_gpu(96, 3.0, 900, "my-gpu"))  # vendor "custom": the CUDA path's rules
    assert [g.name for g in GPU_CATALOG.values() if on_gaudi(g)] == ["Gaudi3"]  # the catalog's one Intel part


def test_no_module_compares_the_vendor_to_intel_inline():
    inline = re.compile(r"""vendor\s*[!=]=\s*["']Intel["']""")
    hits = [f"{p.relative_to(KVPLAN)}:{n}" for p in sorted(KVPLAN.rglob("*.py"))
            for n, line in enumerate(p.read_text().splitlines(), 1) if inline.search(line)]
    assert [h.split(":")[0] for h in hits] == ["support.py"], hits  # on_gaudi's own body, once
