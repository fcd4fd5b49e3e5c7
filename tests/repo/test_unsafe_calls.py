"""Nothing kbert ships can load a pickle or run code from a model directory or data file.

The package source (kbert/, pipelines/) is scanned with ``ast`` (comments and strings do not count):
no pickle-family module, no ``torch.load`` without ``weights_only=True``, no
``np.load(allow_pickle=True)``, no ``eval``/``exec``/``compile``, no ``yaml.load``, no unsafe Keras
deserialisation, no shell commands, no dynamic imports of computed names. The scanner itself is
checked on code that does each of these. (Files carrying a pickle payload are refused without
running it: tests/convert/test_hf.py for Hugging Face weights, tests/top/test_model_dir.py for
kbert's own; file names in kbert.json that leave the model directory:
tests/top/test_model_metadata.py.)
"""

from __future__ import annotations

import ast

from conftest import REPO

SOURCES = sorted([*REPO.glob("kbert/**/*.py"), *REPO.glob("pipelines/**/*.py")])

FORBIDDEN_MODULES = {"pickle", "cPickle", "_pickle", "dill", "cloudpickle", "shelve", "marshal", "joblib",
                     "jsonpickle"}
FORBIDDEN_BUILTINS = {"eval", "exec", "compile", "__import__"}


def _dotted(node) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _keyword(call, name):
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def _is_const(node, value) -> bool:
    return isinstance(node, ast.Constant) and node.value is value


def unsafe_calls(source: str, filename: str = "<source>") -> list[str]:
    """Every construct in ``source`` that could load a pickle or execute code, as 'file:line: what'."""
    found = []
    tree = ast.parse(source, filename)
    for node in ast.walk(tree):
        where = f"{filename}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in FORBIDDEN_MODULES:
                    found.append(f"{where}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom):
            if (node.module or "").split(".")[0] in FORBIDDEN_MODULES:
                found.append(f"{where}: from {node.module} import ...")
        elif isinstance(node, ast.Call):
            name = _dotted(node.func)
            last = name.rsplit(".", 1)[-1]
            if isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_BUILTINS:
                found.append(f"{where}: {node.func.id}()")
            elif name == "torch.load" or name.endswith(".torch.load"):
                if not _is_const(_keyword(node, "weights_only"), True):
                    found.append(f"{where}: torch.load without weights_only=True")
            elif name in ("np.load", "numpy.load") and not (
                    _keyword(node, "allow_pickle") is None or _is_const(_keyword(node, "allow_pickle"), False)):
                found.append(f"{where}: {name} with allow_pickle")
            elif name in ("yaml.load", "yaml.unsafe_load", "yaml.full_load", "yaml.load_all"):
                found.append(f"{where}: {name} (use yaml.safe_load)")
            elif last == "load_model" and not _is_const(_keyword(node, "safe_mode"), True) \
                    and _keyword(node, "safe_mode") is not None:
                found.append(f"{where}: {name} with safe_mode off")
            elif last == "enable_unsafe_deserialization":
                found.append(f"{where}: {name}()")
            elif name in ("os.system", "os.popen") or name.startswith("os.exec") or name.startswith("os.spawn"):
                found.append(f"{where}: {name}()")
            elif name.startswith("subprocess.") and _keyword(node, "shell") is not None \
                    and not _is_const(_keyword(node, "shell"), False):
                found.append(f"{where}: {name}(shell=...)")
            elif name in ("pd.read_pickle", "pandas.read_pickle"):
                found.append(f"{where}: {name}()")
            elif name in ("importlib.import_module", "import_module"):
                arg = node.args[0] if node.args else None
                fixed = isinstance(arg, ast.Constant) or (
                    isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant)
                    and str(arg.values[0].value).startswith("kbert."))
                # A name looked up in a fixed table of the package's own modules (the CLI's commands,
                # the built-in tokenizer and task plug-ins, optional packages of an extra) says so
                # on its line; anything else computed is reported.
                line = source.splitlines()[node.lineno - 1]
                if not fixed and "# module names from a fixed table" not in line:
                    found.append(f"{where}: {name} of a computed name")
    return found


def test_the_scanner_finds_what_it_looks_for():
    bad = """
import pickle
from dill import loads
import torch, numpy as np, yaml, os, subprocess, importlib, keras
torch.load(path)
torch.load(path, weights_only=False)
np.load(path, allow_pickle=True)
yaml.load(text)
eval("1")
exec("x = 1")
keras.saving.load_model(path, safe_mode=False)
keras.config.enable_unsafe_deserialization()
os.system("ls")
subprocess.run("ls", shell=True)
importlib.import_module(user_value)
"""
    assert len(unsafe_calls(bad)) == 13, unsafe_calls(bad)
    fine = """
# import pickle   (a comment)
text = "eval(x); torch.load(p)"   # strings do not count
torch.load(path, map_location="cpu", weights_only=True)
np.load(path)
np.load(path, allow_pickle=False)
yaml.safe_load(text)
model.eval()
subprocess.run(["ls"], check=True)
importlib.import_module(f"kbert.tasks.{name}")
"""
    assert unsafe_calls(fine) == []


def test_the_package_never_loads_pickles_or_executes_code():
    assert len(SOURCES) > 30
    problems = [p for path in SOURCES for p in unsafe_calls(path.read_text(encoding="utf-8"),
                                                            str(path.relative_to(REPO)))]
    assert problems == [], "\n".join(problems)
    # and the one torch.load there is the weights-only one
    torch_loads = [path for path in SOURCES if "torch.load(" in path.read_text(encoding="utf-8")]
    assert [p.relative_to(REPO).as_posix() for p in torch_loads] == ["kbert/convert/hf.py"]
