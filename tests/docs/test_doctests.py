"""The Examples of kbert's public docstrings run as doctests (the fast tier).

Each public object's docstring is collected with ``doctest.DocTestFinder`` (its own text only, not its
members') and run in one scratch folder: an Example writes under ``runs/`` and ``saved_models/`` as a
user's would, and makes what it needs itself (``kbert.random_model_dir`` reuses a folder that is
there), so the Examples do not depend on their order. The modules' own Examples (kbert.api_export)
run too.
"""

from __future__ import annotations

import contextlib
import doctest
import os

import pytest

from kbert.api_export import PUBLIC


def _objects() -> dict:
    import importlib

    out, seen = {}, set()
    for name in sorted(PUBLIC):
        face, _, attr = name.rpartition(".")
        obj = getattr(importlib.import_module(face), attr)
        if id(obj) not in seen and getattr(obj, "__doc__", None) and not isinstance(obj, dict):
            seen.add(id(obj))
            out[name] = obj
    return out


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    folder = tmp_path_factory.mktemp("doctests")
    before = os.getcwd()
    os.chdir(folder)
    yield folder
    os.chdir(before)


FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE | doctest.IGNORE_EXCEPTION_DETAIL


@contextlib.contextmanager
def _registries_kept():
    """The tokenizer and task registries as they were: an Example that registers a type or task
    (kbert.register_tokenizer, kbert.tasks.register_task) leaves nothing behind for other tests."""
    from kbert.tasks.core import registry as tasks
    from kbert.text import registry as text

    tasks.task_names()  # the built-in types and tasks loaded first: they stay whatever an Example does
    for kind in text.tokenizer_types():
        try:
            text.tokenizer_class(kind)
        except ImportError:  # a type whose optional package is not installed
            pass
    tables = [text._REGISTRY, tasks._TYPES, tasks._MODEL_TYPES, tasks._TASKS]
    saved = [dict(t) for t in tables]
    try:
        yield
    finally:
        for table, copy in zip(tables, saved):
            table.clear()
            table.update(copy)


def _run(name, obj):
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    tests = [t for t in finder.find(obj, name, globs={}) if t.examples]
    with _registries_kept():
        for test in tests:
            runner.run(test)
    results = runner.summarize(verbose=False)
    return tests, results


# Examples that take more than ~4 s on 2 cores (a SavedModel export, a fine-tuning run): the slow tier.
SLOW = {"kbert.export_encoder", "kbert.export_hub_pair", "kbert.export_preprocessor", "kbert.export_task",
        "kbert.export_onnx", "kbert.finetune", "kbert.TextClassifier"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n
                                  for n in sorted(_objects())])
@pytest.mark.slow
def test_public_example(name, scratch, capsys):
    tests, results = _run(name, _objects()[name])
    report = capsys.readouterr().out
    assert tests, f"{name} has no Example"
    assert results.failed == 0, report[-6000:]


def test_the_runner_reports_a_wrong_example(scratch, capsys):
    def wrong():
        """Example:
            >>> 1 + 1
            3
        """

    _, results = _run("wrong", wrong)
    capsys.readouterr()
    assert results.failed == 1 and results.attempted == 1
