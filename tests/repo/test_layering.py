"""The layering contract: kbert's modules import downward only, and nothing imports in a circle.

Every module of the kbert package and of the data pipelines (``pipelines/``) is parsed with ``ast``
(no import, so no TensorFlow): every ``import``/``from ... import`` anywhere in it (inside functions
too, relative imports resolved, ``from pkg import name`` resolved to ``pkg.name`` where that is a
module) and every ``importlib.import_module("kbert....")`` with a literal name. The lazy faces
(``kbert``, ``kbert.tasks``, ... served by ``kbert.api_export``) import each public name's module
on first use: the table ``kbert.api_export.PUBLIC`` adds those edges. From that:

  * the module graph has no cycle;
  * the part graph (a part = a top-level subpackage or module of kbert) has no two-way edge;
  * no part imports a part of a higher layer (LAYERS, top to bottom; parts of one layer may
    import each other one way).

Code that only runs as the program is a command, whatever file it is in: ``__main__.py`` modules and
``if __name__ == "__main__":`` blocks belong to the part ``__main__`` (the top layer). Such a block
runs as the module ``__main__``, not as the module its file is imported as, so it closes no circle.

A failure lists each offending import as ``file:line``.
"""

from __future__ import annotations

import ast
import collections
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "kbert"
PIPELINES = ROOT / "pipelines"
MAIN_PART = "__main__"

# Top to bottom (docs/architecture.md): commands -> paper -> training, export, explore, bench -> pipelines ->
# tasks -> data, models, convert -> text, layers -> config, model-directory metadata, errors, compat.
LAYERS = [
    # commands: kbert/commands/ (one module per subcommand), kbert.cli (the table) and the shims that keep
    # `python -m kbert.NAME` working (they import only when run as the program); "kbert": the package's
    # own face, which serves every public name (kbert.api_export.PUBLIC) on first use
    ("commands", {MAIN_PART, "cli", "commands", "finetune", "predict", "pretrain",
                  "tokenize", "vocab", "kbert"}),
    # the paper's tables (kbert.paper): each runs pre-training and fine-tuning from the layer below
    ("paper", {"paper"}),
    ("applications", {"training", "export", "explore", "bench", "features"}),
    # the Beam pipelines that write TFRecords (pipelines/): run by the pre-training command and the bench
    ("pipelines", {"pipelines"}),
    ("tasks", {"tasks"}),
    # model_dir: models saved and loaded (encoder, heads, tokenizer files) over model_metadata;
    # hub_models: hf://ORG/NAME model directories (converted once); random_model: a random one to try
    ("models and data", {"data", "models", "convert", "model_dir", "hub_models", "random_model"}),
    ("text and layers", {"text", "layers"}),
    # cli_support: flag parsing and error reporting shared by every command's main (kbert's commands and
    # the bench's); it imports nothing of kbert but errors and cli_startup (the command process's import hook, over compat), so
    # any layer's command entry point may use it;
    # api_export: the public names' declaration, over api_table, the table generated from the
    # declarations; options: the typed options' field helper (they import nothing else of kbert)
    ("foundation", {"config", "model_metadata", "errors", "compat", "resources", "cli_support", "cli_startup",
                    "api_export", "api_table", "options"}),
]

# Imports in files that another change is rewriting (the training loops moving into
# kbert/training/ as library functions). Each entry names one import, (from module, to module),
# and why it is allowed for now; remove it when that change lands. Nothing else may be added here.
TEMPORARY_ALLOWANCES: dict = {}


def _modules() -> dict[str, pathlib.Path]:
    modules = {}
    for path in sorted([*PACKAGE.rglob("*.py"), *PIPELINES.rglob("*.py")]):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _is_main_block(node) -> bool:
    test = getattr(node, "test", None)
    return (isinstance(node, ast.If) and isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__" and len(test.comparators) == 1
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value == "__main__")


def _imported_names(node, package: str, modules) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
            base = ".".join(base + ([node.module] if node.module else []))
        else:
            base = node.module
        return [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
    if (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return [node.args[0].value]
    return []


def _module_of(name: str, modules) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_edges() -> list[tuple[str, str, str]]:
    """(importing node, imported module, "file:line") for every import of a kbert module. The
    importing node is the module, or ``MODULE:__main__`` for its ``if __name__ == "__main__"`` block."""
    modules = _modules()
    edges = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        main_nodes = {id(n) for block in ast.walk(tree) if _is_main_block(block) for n in ast.walk(block)}
        for node in ast.walk(tree):
            for name in _imported_names(node, package, modules):
                if name.partition(".")[0] not in ("kbert", "pipelines"):
                    continue
                target = _module_of(name, modules)
                source = f"{module}:{MAIN_PART}" if id(node) in main_nodes else module
                if target and target != module:
                    edges.append((source, target, f"{path.relative_to(ROOT)}:{node.lineno}"))
    edges += _face_edges(modules)
    return edges


def _face_edges(modules) -> list[tuple[str, str, str]]:
    """The lazy faces' imports: face package -> the module of each public name it serves."""
    from kbert.api_export import PUBLIC

    where = str((PACKAGE / "api_table.py").relative_to(ROOT)) + " PUBLIC"
    return [(name.rpartition(".")[0], module, f"{where}[{name!r}]") for name, module in PUBLIC.items()
            if module in modules and name.rpartition(".")[0] in modules]


def part_of(node: str) -> str:
    module, _, block = node.partition(":")
    names = module.split(".")
    if block == MAIN_PART or names[-1] == MAIN_PART:
        return MAIN_PART
    if names[0] == "pipelines":
        return "pipelines"
    return names[1] if len(names) > 1 else "kbert"


def _layer_index() -> dict[str, int]:
    return {part: i for i, (_, parts) in enumerate(LAYERS) for part in parts}


def _offending(edges, allowed=TEMPORARY_ALLOWANCES):
    return [e for e in edges if (e[0].partition(":")[0], e[1]) not in allowed]


def _strongly_connected(graph: dict[str, set]) -> list[list[str]]:
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):  # Tarjan; the graph is small enough for recursion
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def module_cycles(edges) -> list[str]:
    graph = collections.defaultdict(set)
    for source, target, _ in edges:
        graph[source].add(target)
    problems = []
    for component in _strongly_connected(graph):
        members = set(component)
        lines = [f"  {s} -> {t} ({where})" for s, t, where in edges if s in members and t in members]
        problems.append(f"import cycle among {', '.join(component)}:\n" + "\n".join(sorted(set(lines))))
    return problems


def two_way_parts(edges) -> list[str]:
    by_parts = collections.defaultdict(list)
    for source, target, where in edges:
        a, b = part_of(source), part_of(target)
        if a != b:
            by_parts[a, b].append(f"  {source} -> {target} ({where})")
    problems = []
    for (a, b), lines in sorted(by_parts.items()):
        if a < b and (b, a) in by_parts:
            problems.append(f"parts {a} and {b} import each other:\n"
                            + "\n".join(sorted(set(lines) | set(by_parts[b, a]))))
    return problems


def upward_imports(edges) -> list[str]:
    layer = _layer_index()
    problems = set()
    for source, target, where in edges:
        a, b = part_of(source), part_of(target)
        if a in layer and b in layer and layer[a] > layer[b]:
            problems.add(f"{where}: {source} ({LAYERS[layer[a]][0]}) imports {target} ({LAYERS[layer[b]][0]}), "
                            "a higher layer")
    return sorted(problems)


@pytest.fixture(scope="module")
def edges():
    return import_edges()


def test_the_scan_sees_imports_inside_functions_and_relative_imports(edges):
    found = {(s, t) for s, t, _ in edges}
    # a function-level import (kbert.cli.main imports kbert.cli_support.run when a command runs) and
    # a package __init__'s own imports: the scan is not limited to top-level statements
    assert ("kbert.cli", "kbert.cli_support") in found
    assert ("kbert.layers", "kbert.layers.attention") in found
    assert part_of("kbert.features:__main__") == MAIN_PART and part_of("kbert.export.__main__") == MAIN_PART
    # the pipelines are scanned too, and the faces' lazy imports come from kbert.api_export.PUBLIC
    assert ("pipelines.pretraining_data", "pipelines.runners") in found
    assert part_of("pipelines.task_data") == "pipelines"
    assert ("kbert", "kbert.models.encoder") in found and ("kbert.tasks", "kbert.tasks.classification.model") in found


def test_every_part_has_a_layer(edges):
    parts = {part_of(m) for m in _modules()} | {part_of(s) for s, _, _ in edges}
    missing = sorted(parts - set(_layer_index()))
    assert not missing, f"parts without a layer in tests/repo/test_layering.py LAYERS: {missing}"


def test_no_import_cycle_among_modules(edges):
    problems = module_cycles(_offending(edges))
    assert not problems, "\n".join(problems)


def test_no_two_way_dependency_between_parts(edges):
    problems = two_way_parts(_offending(edges))
    assert not problems, "\n".join(problems)


def test_no_part_imports_a_higher_layer(edges):
    problems = upward_imports(_offending(edges))
    assert not problems, "\n".join(problems)


def test_temporary_allowances_are_still_needed(edges):
    found = {(s.partition(":")[0], t) for s, t, _ in edges}
    stale = sorted(set(TEMPORARY_ALLOWANCES) - found)
    assert not stale, f"remove these from TEMPORARY_ALLOWANCES, the imports are gone: {stale}"


def test_the_checks_catch_a_cycle_a_two_way_part_and_an_upward_import():
    # the checks on a made-up graph, so that a check that finds nothing is not trusted blindly
    edges = [("kbert.text.a", "kbert.tasks.b", "kbert/text/a.py:3"), ("kbert.tasks.b", "kbert.text.a", "kbert/tasks/b.py:7")]
    assert "kbert/text/a.py:3" in module_cycles(edges)[0] and "kbert/tasks/b.py:7" in module_cycles(edges)[0]
    assert "parts tasks and text import each other" in two_way_parts(edges)[0]
    assert upward_imports(edges) == ["kbert/text/a.py:3: kbert.text.a (text and layers) imports kbert.tasks.b (tasks), "
                                     "a higher layer"]


# -- one home for the commands --------------------------------------------------------------------
# Programs that may parse flags and exit: kbert/commands/, the `kbert` dispatcher and its error
# reporting, and the benchmarks (each a program of its own under `kbert bench NAME`).
_PROGRAMS = ("kbert/commands/", "kbert/cli.py", "kbert/cli_support.py", "kbert/bench/")


def _exits(source: str, where: str) -> list[str]:
    """``where:line`` of every ``sys.exit(...)``, ``raise SystemExit`` and ``.parse_args(...)`` in
    ``source``, outside ``if __name__ == "__main__":`` blocks."""
    tree = ast.parse(source, where)
    main_nodes = {id(n) for block in ast.walk(tree) if _is_main_block(block) for n in ast.walk(block)}
    found = []
    for node in ast.walk(tree):
        if id(node) in main_nodes:
            continue
        call = node.exc if isinstance(node, ast.Raise) and node.exc is not None else node
        name = getattr(getattr(call, "func", call), "attr", None) or getattr(getattr(call, "func", call), "id", None)
        if (isinstance(node, ast.Call) and name in ("exit", "parse_args")) or (isinstance(node, ast.Raise)
                                                                                and name == "SystemExit"):
            found.append((node.lineno, f"{where}:{node.lineno}"))
    return [hit for _, hit in sorted(found)]


def test_only_the_commands_parse_flags_or_exit():
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) if not str(path.relative_to(ROOT)).startswith(_PROGRAMS)
             for hit in _exits(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))]
    assert not found, "library code that parses flags or exits (move it into kbert/commands/):\n" + "\n".join(found)


def test_every_subcommand_is_a_module_of_kbert_commands_and_runs_as_python_m():
    from kbert.cli import COMMANDS

    for name, (module, _) in COMMANDS.items():
        assert module == f"kbert.commands.{name}" and (PACKAGE / "commands" / f"{name}.py").is_file(), name
        # `python -m kbert.NAME` (the design's spelling) stays: a shim that hands over to `kbert NAME`
        shim = PACKAGE / f"{name}.py" if (PACKAGE / f"{name}.py").is_file() else PACKAGE / name / "__main__.py"
        assert f'main(["{name}", *sys.argv[1:]])' in shim.read_text(encoding="utf-8"), shim


def test_the_exit_scan_sees_what_it_looks_for():
    source = ("import sys\ndef f(p):\n    p.parse_args([])\n    raise SystemExit('no')\n"
              "def g():\n    sys.exit(1)\nif __name__ == '__main__':\n    sys.exit(f(None))\n")
    assert _exits(source, "sample.py") == ["sample.py:3", "sample.py:4", "sample.py:6"]


def _argparse_uses(source: str, where: str) -> list[str]:
    """``where:line`` of every ``import argparse`` and every function named ``from_args``/``*_from_args``
    (a parsed namespace handed to the library) in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source, where)):
        if isinstance(node, ast.Import) and any(a.name == "argparse" for a in node.names) or (
                isinstance(node, ast.ImportFrom) and node.module == "argparse"):
            found.append(f"{where}:{node.lineno}")
        elif isinstance(node, ast.FunctionDef) and (node.name == "from_args" or node.name.endswith("_from_args")):
            found.append(f"{where}:{node.lineno}")
    return found


def test_library_code_takes_typed_options_not_argparse_namespaces():
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) if not str(path.relative_to(ROOT)).startswith(_PROGRAMS)
             for hit in _argparse_uses(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))]
    assert not found, ("library code that handles flags (move it into kbert/commands/ or kbert/cli_support.py, "
                       "and pass typed options):\n" + "\n".join(found))
    sample = "import argparse\ndef projector_from_args(args):\n    pass\ndef run(options):\n    pass\n"
    assert _argparse_uses(sample, "sample.py") == ["sample.py:1", "sample.py:2"]


# -- kbert/tasks: one core, one folder per task family --------------------------------------------
TASK_FAMILIES = ("classification", "tagging", "span_qa", "multiple_choice")
# Names of benchmarks and their tasks, as identifiers or imported modules would spell them.
BENCHMARK_NAMES = r"glue|squad|klue|korquad|cmrc|conll|swag|mnli|sst2|jsts|jnli|jcommonsenseqa|jsquad"


def _family(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["kbert", "tasks"] else None


def family_crossings(edges) -> list[str]:
    """``file:line`` of each import from kbert.tasks.core into a family, or between two families."""
    found = []
    for source, target, where in edges:
        a, b = _family(source.partition(":")[0]), _family(target)
        if a and b and a != b and b != "core":
            found.append(f"{where}: {source} ({a}) imports {target} ({b})")
    return found


def benchmark_names(source: str, where: str) -> list[str]:
    """``where:line`` of each identifier or imported module in ``source`` that names a benchmark
    (docstrings, comments and help texts may mention one as an example)."""
    import io
    import re
    import tokenize

    pattern = re.compile(BENCHMARK_NAMES, re.IGNORECASE)
    return [f"{where}:{tok.start[0]} {tok.string}" for tok in tokenize.generate_tokens(io.StringIO(source).readline)
            if tok.type == tokenize.NAME and pattern.search(tok.string)]


def test_tasks_hold_core_and_the_family_folders(edges):
    tasks = PACKAGE / "tasks"
    top = sorted(p.name for p in tasks.iterdir() if p.name != "__pycache__")
    assert top == sorted(["__init__.py", "core", *TASK_FAMILIES])
    assert all((tasks / name / "__init__.py").is_file() for name in ("core", *TASK_FAMILIES))
    crossings = family_crossings(edges)
    assert not crossings, "core imports a family, or a family another:\n" + "\n".join(crossings)
    sample = [("kbert.tasks.core.base", "kbert.tasks.span_qa.model", "kbert/tasks/core/base.py:3"),
              ("kbert.tasks.tagging.task", "kbert.tasks.core.registry", "kbert/tasks/tagging/task.py:4"),
              ("kbert.tasks.tagging.klue", "kbert.tasks.classification.klue", "kbert/tasks/tagging/klue.py:9")]
    assert [c.partition(":")[0] for c in family_crossings(sample)] == ["kbert/tasks/core/base.py",
                                                                       "kbert/tasks/tagging/klue.py"]


def test_core_names_no_benchmark():
    found = [hit for path in sorted((PACKAGE / "tasks" / "core").glob("*.py"))
             for hit in benchmark_names(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))]
    assert not found, "kbert/tasks/core names a benchmark (it belongs in its family):\n" + "\n".join(found)
    assert benchmark_names('"""SQuAD"""\nfrom kbert.data import squad\nx = glue_task\n', "s.py") == [
        "s.py:2 squad", "s.py:3 glue_task"]
    import dataclasses

    from kbert.tasks.core.options import FinetuneOptions

    fields = [f.name for f in dataclasses.fields(FinetuneOptions)]
    assert not benchmark_names(" ".join(fields), "FinetuneOptions")
    assert not [f.name for f in dataclasses.fields(FinetuneOptions)
                if any(word in (f.metadata.get("help") or "") for word in ("KLUE", "GLUE", "SQuAD"))]
