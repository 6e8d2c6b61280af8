"""The core never imports the UI stack or torch (checked in a fresh interpreter)."""

import json
import subprocess
import sys

HEAVY = ("streamlit", "plotly", "pandas", "pyarrow", "torch", "numpy", "transformers")


def test_import_kvplan_loads_no_heavy_module():
    code = (
        "import json, sys, kvplan, kvplan.cli, kvplan.presets; kvplan.load_preset('llama-3.1-8b');"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
