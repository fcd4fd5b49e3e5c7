"""No function of kbert/ or pipelines/ runs over 80 lines unless a comment says why.

Every function and method (nested ones too, each on its own) is parsed with ``ast``. Its length is
its lines from the ``def`` line to its last line (blank lines and comments included: they are part
of what a reader reads), less its docstring: a docstring is documentation, Examples included, and a
function that documents itself well should not be pushed to split for it. Decorators are not counted.

A function over the limit is allowed when the line directly above it (above its first decorator, if
it has any; no blank line between) is a comment line of the form ``# long: REASON``: after its
indentation, the line starts with ``# long:`` and a non-empty reason follows. A marker above a
function that is not over the limit excuses nothing and is reported too, so that markers do not
outlive the reason they gave.

A failure lists ``path:line name (N lines)`` for each function.
"""

from __future__ import annotations

import ast
import re

from conftest import REPO

LIMIT = 80
SOURCES = sorted([*REPO.glob("kbert/**/*.py"), *REPO.glob("pipelines/**/*.py")])
# After the indentation: "# long:", then a reason (something other than white space).
MARKER = re.compile(r"^\s*# long:\s*\S")


def function_length(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from ``def`` to the function's last line, less its docstring's."""
    length = node.end_lineno - node.lineno + 1
    first = node.body[0]
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        length -= first.end_lineno - first.lineno + 1
    return length


def has_marker(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> bool:
    """Whether the line directly above the function (above its first decorator) is ``# long: REASON``."""
    top = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return top >= 2 and bool(MARKER.match(lines[top - 2]))


def length_report(source: str, filename: str = "<source>") -> tuple[list[str], list[str]]:
    """(functions over LIMIT without a marker, markers above functions within it), each as
    ``filename:line name (N lines)``, in the order of the source."""
    lines = source.splitlines()
    too_long, stale = [], []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length, marked = function_length(node), has_marker(node, lines)
            entry = (node.lineno, f"{filename}:{node.lineno} {node.name} ({length} lines)")
            if length > LIMIT and not marked:
                too_long.append(entry)
            elif length <= LIMIT and marked:
                stale.append(entry)
    return [text for _, text in sorted(too_long)], [text for _, text in sorted(stale)]


def _repo_report() -> tuple[list[str], list[str]]:
    too_long, stale = [], []
    for path in SOURCES:
        long_here, stale_here = length_report(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
        too_long += long_here
        stale += stale_here
    return too_long, stale


def test_no_function_is_over_the_limit_without_a_reason():
    too_long, _ = _repo_report()
    assert too_long == [], (f"over {LIMIT} lines (split it, or give the reason in a '# long: ...' comment "
                            "directly above it):\n" + "\n".join(too_long))


def test_no_marker_excuses_a_function_within_the_limit():
    _, stale = _repo_report()
    assert stale == [], "a '# long:' marker above a function within the limit:\n" + "\n".join(stale)


def _function(name: str, body_lines: int, docstring_lines: int = 0, indent: str = "") -> str:
    """Source of a function of ``1 + docstring_lines + body_lines`` lines (its def, docstring, body)."""
    doc = []
    if docstring_lines == 1:
        doc = ['    """One line."""']
    elif docstring_lines:
        doc = ['    """First line.'] + ["    more"] * (docstring_lines - 2) + ['    """']
    body = [f"    x{i} = {i}" for i in range(body_lines)]
    return "\n".join(indent + line for line in [f"def {name}():", *doc, *body]) + "\n"


def test_the_length_counts_from_def_to_the_end_less_the_docstring():
    node = ast.parse(_function("f", 10, docstring_lines=6)).body[0]
    assert function_length(node) == 11
    node = ast.parse(_function("f", 10, docstring_lines=1)).body[0]
    assert function_length(node) == 11
    # A string that is not the first statement is code, not a docstring.
    node = ast.parse('def f():\n    x = 1\n    """not a docstring"""\n').body[0]
    assert function_length(node) == 3
    node = ast.parse('def f():\n    0\n    x = 1\n').body[0]
    assert function_length(node) == 3


def test_the_limit_is_over_80_lines_and_nested_functions_count_on_their_own():
    at_limit, over = _function("at_limit", LIMIT - 1), _function("over", LIMIT)
    assert length_report(at_limit) == ([], [])
    assert length_report(over) == ([f"<source>:1 over ({LIMIT + 1} lines)"], [])
    # A long docstring does not make a function long.
    assert length_report(_function("documented", LIMIT - 1, docstring_lines=40)) == ([], [])
    # The outer function holds the inner one's lines; both are reported.
    outer = "def outer():\n" + _function("inner", LIMIT, indent="    ")
    assert length_report(outer) == ([f"<source>:1 outer ({LIMIT + 2} lines)",
                                     f"<source>:2 inner ({LIMIT + 1} lines)"], [])
    method = "class C:\n" + _function("method", LIMIT, indent="    ")
    assert length_report(method) == ([f"<source>:2 method ({LIMIT + 1} lines)"], [])


def test_the_marker_is_a_reasoned_comment_directly_above_the_function():
    over = _function("f", LIMIT)
    assert length_report("# long: shipped whole to another process\n" + over) == ([], [])
    assert length_report("class C:\n    # long: one graph\n" + _function("m", LIMIT, indent="    ")) == ([], [])
    # Above the decorators, not between them and the def.
    assert length_report("# long: one graph\n@staticmethod\n" + over) == ([], [])
    reported = ([f"<source>:3 f ({LIMIT + 1} lines)"], [])
    assert length_report("@staticmethod\n# long: one graph\n" + over) == reported
    for not_a_marker in ("# long:", "# long:   ", "# long reason", "# longer: reason", "# Long: reason",
                         "x = 1  # long: reason", "#long: reason"):
        assert length_report("\n" + not_a_marker + "\n" + over) == reported, not_a_marker
    # A blank line or another comment between the marker and the function breaks it.
    assert length_report("# long: reason\n\n" + over) == reported
    assert length_report("# long: reason\n# and more\n" + over) == reported
    # A marker above a function within the limit is reported as stale.
    assert length_report("# long: reason\n" + _function("short", 3)) == ([], ["<source>:2 short (4 lines)"])
