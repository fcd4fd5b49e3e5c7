"""tests/ mirrors the code, so a newcomer finds a module's tests by its path (docs/contributing.md):

* ``kbert/<sub>/<module>.py`` -> ``tests/<sub>/test_<module>.py``; kbert's own top-level modules ->
  ``tests/top/test_<module>.py``; ``pipelines/<module>.py`` -> ``tests/pipelines/test_<module>.py``;
* every module with code (a top-level ``def`` or ``class``) has that file;
* the top level of tests/ holds only fixtures (conftest.py, the fixtures package, the system-packages
  script) and folders, and no test module imports another (what they share lives in tests/fixtures/).
"""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
TOP_LEVEL_FILES = {"conftest.py", "install-system-deps.sh"}


def has_code(path: pathlib.Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for node in tree.body)


def mirrored_test(path: pathlib.Path) -> pathlib.Path:
    """The test file of a module of kbert/ or pipelines/."""
    package, rel = path.relative_to(ROOT).parts[0], path.relative_to(ROOT / path.relative_to(ROOT).parts[0])
    folder = TESTS / (package if package == "pipelines" else "top" if rel.parent == pathlib.Path(".") else rel.parent)
    return folder / f"test_{path.stem}.py"


def modules_without_tests(roots=("kbert", "pipelines")) -> list:
    return [str(p.relative_to(ROOT)) for root in roots for p in sorted((ROOT / root).rglob("*.py"))
            if has_code(p) and not mirrored_test(p).exists()]


def test_every_module_with_code_has_a_test_file_found_by_its_path():
    assert modules_without_tests() == []


def test_the_mapping_follows_the_layout():
    assert mirrored_test(ROOT / "kbert/tasks/span_qa/graph.py") == TESTS / "tasks/span_qa/test_graph.py"
    assert mirrored_test(ROOT / "kbert/errors.py") == TESTS / "top/test_errors.py"
    assert mirrored_test(ROOT / "pipelines/runners.py") == TESTS / "pipelines/test_runners.py"


def test_the_top_level_of_tests_holds_only_fixtures_and_folders():
    files = sorted(p.name for p in TESTS.iterdir() if p.is_file())
    assert [name for name in files if name not in TOP_LEVEL_FILES] == []


def test_no_test_module_imports_another():
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.relative_to(TESTS)}: {name}" for name in names
                          if name.split(".")[-1].startswith("test_")]
    assert offenders == []
