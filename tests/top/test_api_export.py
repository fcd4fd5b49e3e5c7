"""kbert's public API: every name of ``kbert.api_export.PUBLIC`` is declared with ``kbert_export`` where
it is defined (and nothing else is), each resolves to that object, ``import kbert`` loads no
TensorFlow, and each public object documents itself: Args (or Attributes), Returns where it returns
something, and an Example (run as a doctest by tests/docs/test_doctests.py)."""

from __future__ import annotations

import ast
import importlib
import os
import pathlib
import subprocess
import sys

import pytest

from kbert.api_export import FACES, PUBLIC, render_table, scan_declarations

ROOT = pathlib.Path(__file__).resolve().parents[2]


def declarations(root=ROOT / "kbert") -> dict[str, str]:
    return scan_declarations(root)


def test_the_table_and_the_declarations_are_the_same():
    declared = declarations()
    assert sorted(set(PUBLIC) - set(declared)) == [], "in PUBLIC, not declared with kbert_export where defined"
    assert sorted(set(declared) - set(PUBLIC)) == [], "declared with kbert_export, missing in PUBLIC"
    wrong = {name: (PUBLIC[name], module) for name, module in declared.items() if PUBLIC[name] != module}
    assert not wrong, f"PUBLIC names another module than the declaration's: {wrong}"


def test_the_table_is_the_one_generated_from_the_declarations():
    """A public name is written once, where its object is declared: kbert/api_table.py is what
    write_table() makes of the declarations (rerun it after adding or removing one)."""
    written = (ROOT / "kbert" / "api_table.py").read_text(encoding="utf-8")
    assert written == render_table(declarations()), "kbert/api_table.py is stale: run kbert.api_export.write_table()"


def test_the_scan_sees_decorators_and_calls(tmp_path):
    package = tmp_path / "kbert"
    package.mkdir()
    (package / "m.py").write_text('@kbert_export("kbert.A", "kbert.sub.A")\nclass A: ...\n'
                                  'X = {}\nkbert_export("kbert.X")(X)\n')
    assert declarations(package) == {"kbert.A": "kbert.m", "kbert.sub.A": "kbert.m", "kbert.X": "kbert.m"}


def public_objects() -> dict[str, object]:
    objects = {}
    for name in PUBLIC:
        face, _, attr = name.rpartition(".")
        objects[name] = getattr(importlib.import_module(face), attr)
    return objects


def test_every_public_name_resolves_to_its_declared_object():
    for name, obj in public_objects().items():
        module = importlib.import_module(PUBLIC[name])
        attr = name.rpartition(".")[2]
        assert obj is getattr(module, attr), name
        declared = vars(obj).get("__kbert_api__") if hasattr(obj, "__dict__") and not isinstance(obj, dict) else None
        if callable(obj):
            assert declared and name in declared, f"{name}: {obj!r} carries no kbert_export declaration"


def test_faces_list_their_names_and_refuse_others():
    import kbert

    assert "BertEncoder" in dir(kbert) and "tasks" in dir(kbert) and "BertEncoder" in kbert.__all__
    for face in FACES:
        module = importlib.import_module(face)
        with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
            module.no_such_name  # noqa: B018


def test_import_kbert_and_its_faces_load_no_tensorflow():
    code = ("import sys, kbert, kbert.tasks, kbert.text, kbert.features, kbert.explore\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'keras')))\n"
            "print(len(dir(kbert)))")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
                         cwd=ROOT, timeout=120).stdout
    assert out.splitlines()[-2] == "[]", out
    assert int(out.splitlines()[-1]) >= 40


@pytest.mark.slow
def test_importing_every_module_leaves_every_public_name_its_object():
    """``import kbert.finetune`` (the ``python -m`` shim's module), or any tool that imports every module
    of the package, must not replace a public function with a module of the same name: in a fresh
    interpreter that has imported them all, each public name is still its declared object and
    ``kbert.finetune(...)``/``kbert.pretrain(...)`` run (refusing options that are not theirs)."""
    code = """
import importlib, pkgutil, sys
import kbert
from kbert.api_export import PUBLIC
skipped = []
for info in pkgutil.walk_packages(kbert.__path__, "kbert."):
    if info.name.endswith("__main__"):
        continue
    try:
        importlib.import_module(info.name)
    except ModuleNotFoundError as e:  # an optional extra's library (the module says which)
        if e.name and e.name.split(".")[0] == "kbert":
            raise
        skipped.append(info.name)
import kbert.finetune, kbert.pretrain
wrong = []
for name, module in PUBLIC.items():
    face, _, attr = name.rpartition(".")
    if getattr(importlib.import_module(face), attr) is not getattr(importlib.import_module(module), attr):
        wrong.append(name)
print("wrong", wrong)
for function in (kbert.finetune, kbert.pretrain):
    try:
        function("not options")
    except Exception as e:
        print(function.__name__, "raised", type(e).__name__, str(e)[:200].replace(chr(10), " "))
print("skipped", skipped)
"""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert "wrong []" in lines, out.stdout
    # each refuses the argument from inside the function ("'module' object is not callable" before)
    for name in ("finetune", "pretrain"):
        assert any(line.startswith(f"{name} raised") for line in lines), out.stdout
    assert "not callable" not in out.stdout and "skipped []" in lines, out.stdout


# -- every public object documents itself -------------------------------------------------------------
def _returns_something(obj) -> bool:
    """True when a function (or method) has a ``return VALUE``/``yield`` of its own, read from its source."""
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(obj)))
    except (OSError, TypeError):
        return False
    function = tree.body[0]
    nested = {id(n) for child in ast.walk(function) if child is not function
              and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
              for n in ast.walk(child)}
    return any(isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom)) and id(n) not in nested
               and getattr(n, "value", None) is not None and not (isinstance(n.value, ast.Constant) and n.value.value is None)
               for n in ast.walk(function))


def _takes_arguments(obj) -> bool:
    """A routine or class with parameters to document (an exception class that keeps Exception's
    constructor takes only its message)."""
    import inspect

    if inspect.isclass(obj) and issubclass(obj, BaseException) and "__init__" not in vars(obj):
        return False
    try:
        parameters = inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return True
    return any(p.name not in ("self", "cls") for p in parameters.values())


def docstring_problems(name: str, obj) -> list[str]:
    """What the docstring of a public object lacks (empty: nothing)."""
    import inspect

    doc = inspect.getdoc(obj) if (inspect.isclass(obj) or inspect.isroutine(obj)) else None
    if not inspect.isclass(obj) and not inspect.isroutine(obj):
        return []  # a value (PRESETS, COMBINATIONS): documented where its module's page shows it
    if not doc:
        return [f"{name}: no docstring"]
    problems = []
    if _takes_arguments(obj) and "Args:" not in doc and "Attributes:" not in doc:
        problems.append(f"{name}: no Args: (or Attributes:) section")
    if inspect.isroutine(obj) and _returns_something(obj) and "Returns:" not in doc and "Yields:" not in doc:
        problems.append(f"{name}: returns a value but has no Returns: section")
    if not any(s in doc for s in ("Example:", "Examples:")) or ">>>" not in doc:
        problems.append(f"{name}: no Example: with a >>> doctest")
    return problems


def test_every_public_object_has_args_returns_and_an_example():
    seen, problems = set(), []
    for name, obj in sorted(public_objects().items()):
        if id(obj) not in seen:
            seen.add(id(obj))
            problems += docstring_problems(name, obj)
    assert not problems, "\n".join(problems)


def test_the_docstring_check_finds_what_is_missing():
    def documented(x):
        """Doubles.

        Args:
            x: a number.

        Returns:
            2 x.

        Example:
            >>> documented(2)
            4
        """
        return 2 * x

    def bare(x):
        """Doubles."""
        return 2 * x

    assert docstring_problems("documented", documented) == []
    assert docstring_problems("bare", bare) == ["bare: no Args: (or Attributes:) section",
                                                "bare: returns a value but has no Returns: section",
                                                "bare: no Example: with a >>> doctest"]


def test_one_options_error_for_every_option():
    import kbert
    from kbert.tasks.core import options

    assert options.OptionsError is kbert.OptionsError
    with pytest.raises(kbert.OptionsError, match="batch_size"):
        kbert.FinetuneOptions(task="csv", init="a", model_dir="b", batch_size=0)
