"""The source never evaluates, unpickles or imports what a user typed, nor trusts remote code.

An AST walk over every module of the app (kvplan/, pages/, app.py, bench/): no eval/exec/compile,
no pickle (or marshal, shelve, dill, joblib), no torch.load, no dynamic imports, no shell, no raw
HTML, and every transformers ``from_pretrained`` is local, safetensors-only and trust_remote_code=False.
tests/ is not scanned (tests may use anything). Allowed exceptions are listed, with their reason.
"""

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = sorted([*ROOT.glob("kvplan/**/*.py"), *ROOT.glob("pages/*.py"), ROOT / "app.py", *ROOT.glob("bench/*.py")])
BANNED_CALLS = {"eval", "exec", "compile", "__import__", "breakpoint", "input"}
BANNED_MODULES = {"pickle", "cPickle", "_pickle", "dill", "cloudpickle", "joblib", "marshal", "shelve", "pickletools"}
BANNED_ATTRS = {
    ("os", "system"): "a shell", ("os", "popen"): "a shell", ("os", "exec*"): "process replacement",
    ("torch", "load"): "unpickles", ("yaml", "load"): "arbitrary objects", ("yaml", "unsafe_load"): "arbitrary objects",
    ("importlib", "import_module"): "dynamic import", ("st", "html"): "raw HTML", ("components", "html"): "raw HTML",
    ("np", "load"): "allow_pickle", ("numpy", "load"): "allow_pickle", ("pd", "read_pickle"): "unpickles",
}
# (file, call) pairs that are deliberate, each with its reason.
ALLOWED = {
    ("kvplan/web/shell.py", "runpy.run_path"): "runs the app's own entry script (ctx.main_script_path), not user input",
    ("kvplan/web/views.py", "st.html"): "the app's own tables and stylesheet; every cell and heading goes through "
                                        "html.escape (views.table_html); test_app_hardening checks the tags",
    ("bench/floor_budget.py", "st.html"): "the speed floor draws the Budget page's own stylesheet and escaped terms "
                                          "table (views.CSS, views.table_html of a preset's plan): no user input",
}


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    parts.append(node.id if isinstance(node, ast.Name) else "?")  # "?": a call's result, a subscript...
    return ".".join(reversed(parts))


def findings(path: Path) -> list[str]:
    rel = path.relative_to(ROOT).as_posix()
    tree = ast.parse(path.read_text(), filename=rel)
    out = []
    for node in ast.walk(tree):
        where = f"{rel}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) and node.module
                                                     else [])
            for name in names:
                if name.split(".")[0] in BANNED_MODULES:
                    out.append(f"{where}: imports {name}")
        if isinstance(node, ast.Name) and node.id in BANNED_MODULES | {"__builtins__"}:
            out.append(f"{where}: uses {node.id}")
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        if (rel, name) in ALLOWED:
            continue
        if name in BANNED_CALLS or name.split(".")[-1] in {"eval", "exec"} and name.split(".")[0] == "builtins":
            out.append(f"{where}: calls {name}()")
        head, _, last = name.rpartition(".")
        for (mod, attr), why in BANNED_ATTRS.items():
            if head.split(".")[-1:] == [mod] and (last == attr or attr.endswith("*") and last.startswith(attr[:-1])):
                out.append(f"{where}: calls {name}() ({why})")
        if name.startswith("runpy.") or name in ("run_path", "run_module"):
            out.append(f"{where}: calls {name}()")
        if name.startswith("subprocess.") or name in ("Popen", "run", "call", "check_output"):
            for kw in node.keywords:
                if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                    out.append(f"{where}: {name}(shell=...)")
        for kw in node.keywords:
            constant = kw.value.value if isinstance(kw.value, ast.Constant) else object()
            if kw.arg == "trust_remote_code" and constant is not False:
                out.append(f"{where}: trust_remote_code is not the constant False")
            if kw.arg in ("unsafe_allow_html", "allow_pickle") and constant is not False:
                out.append(f"{where}: {kw.arg}=...")
            if kw.arg == "weights_only" and constant is not True:
                out.append(f"{where}: weights_only is not True")
        if name.endswith("from_pretrained"):
            kws = {kw.arg: kw.value.value for kw in node.keywords if isinstance(kw.value, ast.Constant)}
            if not (kws.get("trust_remote_code") is False and kws.get("local_files_only") is True
                    and kws.get("use_safetensors") is True):
                out.append(f"{where}: {name}() must be local_files_only=True, use_safetensors=True, "
                           "trust_remote_code=False")
    return out


def test_the_scan_covers_the_app():
    rels = {p.relative_to(ROOT).as_posix() for p in SCANNED}
    assert {"app.py", "kvplan/web/state.py", "kvplan/validate/hf_local.py", "pages/model.py"} <= rels
    assert len(rels) > 40


@pytest.mark.parametrize("path", SCANNED, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_eval_pickle_remote_code_or_raw_html(path):
    assert findings(path) == []


def test_the_scanner_catches_each_pattern(tmp_path, monkeypatch):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import pickle\nfrom marshal import loads\nimport torch, os, subprocess, importlib\n"
        "eval(x)\nexec(y)\n__import__(name)\nos.system(cmd)\ntorch.load(f)\n"
        "m = AutoModel.from_pretrained(p, trust_remote_code=True)\nimportlib.import_module(n)\n"
        "subprocess.run(c, shell=True)\nst.markdown(t, unsafe_allow_html=True)\nst.html(t)\nmodel.to(d).eval()\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    found = "\n".join(findings(bad))
    for needle in ("imports pickle", "imports marshal", "eval()", "exec()", "__import__()", "os.system()",
                   "torch.load()", "trust_remote_code", "from_pretrained", "import_module", "shell=",
                   "unsafe_allow_html", "st.html()"):
        assert needle in found, needle
    assert "?.eval" not in found  # a torch module's .eval() is not the builtin
