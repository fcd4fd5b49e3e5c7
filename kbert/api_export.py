"""kbert's public names: declared where each object is defined, served lazily by the package faces.

An object becomes public by one line above its definition (or one call, for a value)::

    @kbert_export("kbert.BertEncoder")
    class BertEncoder(keras.Model): ...

    kbert_export("kbert.PRESETS")(PRESETS)

The declarations are the one place a public name is written. ``PUBLIC`` (``kbert/api_table.py``) maps
each to the module that defines it, and is generated from the declarations by reading kbert's source
(``kbert.api_export.write_table()`` rewrites it; tests/top/test_api_export.py fails while it differs). It is
what ``import kbert`` reads, so ``kbert.NAME`` is imported on first use (PEP 562) and ``import kbert``
or a command's ``--help`` loads no TensorFlow. This module imports nothing of kbert but that table.
"""

from __future__ import annotations

import ast
import importlib
import pathlib

from kbert.api_table import PUBLIC  # noqa: E402  (generated from the declarations: scan_declarations)

# the subpackages whose faces serve names of their own (kbert.tasks.X); `kbert.SUB` imports them on use
FACES = ("kbert", "kbert.text", "kbert.tasks", "kbert.features", "kbert.explore")


def kbert_export(*names: str):
    """Declares an object public under each dotted name in ``names`` (``"kbert.BertEncoder"``).

    Args:
        *names: the public names, each ``kbert.NAME`` or ``kbert.SUBPACKAGE.NAME``.

    Returns:
        A decorator that records ``names`` on the object (``__kbert_api__``, where the object takes
        attributes) and returns the object unchanged.

    Examples:
        >>> from kbert.api_export import kbert_export
        >>> @kbert_export("kbert.example_name")
        ... def example_name():
        ...     return 1
        >>> example_name.__kbert_api__
        ('kbert.example_name',)
    """
    for name in names:
        if not name.startswith("kbert."):
            raise ValueError(f"a public name starts with 'kbert.', got {name!r}")

    def declare(obj):
        try:
            obj.__kbert_api__ = tuple(names)
        except (AttributeError, TypeError):  # a dict or another value that takes no attribute
            pass
        return obj

    return declare


def face(package: str):
    """``(__getattr__, __dir__, __all__)`` of the lazy face of ``package`` (one of ``FACES``)."""
    prefix = package + "."
    table = {name[len(prefix):]: module for name, module in PUBLIC.items()
             if name.startswith(prefix) and "." not in name[len(prefix):]}
    subpackages = {f[len(prefix):] for f in FACES if f.startswith(prefix)}
    names = sorted(table)

    def __getattr__(name):
        if name in table:
            return getattr(importlib.import_module(table[name]), name)  # module names from a fixed table
        if name in subpackages:
            return importlib.import_module(prefix + name)  # module names from a fixed table (FACES)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted(set(names) | subpackages)

    return __getattr__, __dir__, names


def scan_declarations(root=None) -> dict:
    """{public name: module} of every ``kbert_export("...")`` (decorator or call) in the source under
    ``root`` (kbert's package folder by default), read as text: no module is imported."""
    root = pathlib.Path(root or pathlib.Path(__file__).resolve().parent)
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if module == "kbert.api_export":  # its docstring's example declares nothing
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "kbert_export":
                for arg in node.args:
                    if isinstance(arg, ast.Constant):
                        found[arg.value] = module
    return found


def render_table(declared: dict) -> str:
    """The text of ``kbert/api_table.py`` for ``declared`` ({public name: module}), grouped by module."""
    out = ['"""Generated from the ``kbert_export`` declarations by ``kbert.api_export.write_table()``: do not edit.',
           "",
           "Each public name -> the module that defines it (kbert.api_export serves them lazily).",
           '"""', "", "PUBLIC = {"]
    for name, module in sorted(declared.items(), key=lambda item: (item[1], item[0])):
        out.append(f"    {name!r}: {module!r},".replace("'", '"'))
    out.append("}")
    return "\n".join(out) + "\n"


def write_table() -> pathlib.Path:
    """Rewrites ``kbert/api_table.py`` from the declarations (run after adding or removing one) and
    returns its path."""
    table = pathlib.Path(__file__).resolve().parent / "api_table.py"
    table.write_text(render_table(scan_declarations()), encoding="utf-8")
    return table
