"""Recount the figures behind kvplan.plan.POOL_ACCURACY: how many pinned public vLLM log figures the KV pool (its
tokens, blocks, concurrency) reproduces from launch flags, and which miss.

    python bench/pool_accuracy.py            # runs the pinned log tests once (~15 s), prints the count and misses

The rule (the comment above POOL_ACCURACY): one test function or parametrized case in the files below counts when
its body reads kv_pool_bytes / kv_cache_tokens / num_blocks / max_concurrency (or an "Available KV" figure) and names
no SGLang; a pass is a figure within max(1 %, 0.25 GiB) of the log (the tests' own tolerance), a strict xfail a miss,
whose reason states its gap. Failures and skips are printed apart: a recount with either is not a valid count.
Not run by CI's pass/fail.
"""

import ast
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = ("test_engine_logs*.py", "test_engine_budget_02x.py", "test_engine_defaults_dec.py", "test_engine_nontorch*.py",
         "test_vllm_cudagraph_estimate.py", "test_vllm_mm_qwen.py", "test_family_qwen25vl.py", "test_vllm_layouts*.py",
         "test_presets_2026*.py", "test_qwen35_mtp.py", "test_vllm_dsa_topk.py", "test_gaudi_budget.py")
READS = ("kv_pool_bytes", "kv_cache_tokens", "num_blocks", "max_concurrency", "Available KV")


def counted_tests(files: list[Path]) -> set[tuple[str, str]]:
    """(module, function) of every test whose body (decorators and their xfail reasons excluded) reads a pool figure."""
    out = set()
    for f in files:
        src = f.read_text()
        for node in ast.parse(src).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
                body = "\n".join(ast.get_source_segment(src, s) or "" for s in node.body)
                if any(k in body for k in READS) and "sglang" not in body.lower():
                    out.add((f.stem, node.name))
    return out


def main() -> int:
    files = sorted({f for pattern in FILES for f in (ROOT / "tests").glob(pattern)})
    want = counted_tests(files)
    with tempfile.TemporaryDirectory() as tmp:
        xml = Path(tmp) / "junit.xml"
        env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}",
                        *map(str, files)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, check=False)
        cases = list(ET.parse(xml).getroot().iter("testcase"))
    passed, missed, other = [], [], []
    for case in cases:
        key = (case.get("classname").rsplit(".", 1)[-1], re.sub(r"\[.*", "", case.get("name")))
        if key not in want:
            continue
        skipped = case.find("skipped")
        if skipped is not None and "xfail" in (skipped.get("type", "") + skipped.get("message", "")).lower():
            missed.append((case.get("name"), skipped.get("message", "")))
        elif skipped is not None or case.find("failure") is not None or case.find("error") is not None:
            other.append(case.get("name"))
        else:
            passed.append(case.get("name"))
    print(f"{len(passed) + len(missed)} figures: {len(passed)} within max(1 %, 0.25 GiB), {len(missed)} miss")
    for name, reason in missed:
        print(f"  miss {name}: {reason.removeprefix('reason: ')[:200]}")
    for name in other:
        print(f"  NOT COUNTABLE (failed or skipped): {name}")
    return 1 if other else 0


if __name__ == "__main__":
    sys.exit(main())
