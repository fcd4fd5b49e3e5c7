"""``kbert bench NAME ARGS``: the dispatcher of kbert/commands/bench.py (the benchmarks' own tables are
checked in tests/bench/). In-process, no benchmark runs: the named module's ``main`` gets the rest of
the line and its exit status is the command's."""

import pathlib
import sys
import types

import pytest

from kbert.commands import bench


def _fake_benchmark(monkeypatch, name, status):
    """``kbert.bench.NAME_bench`` as a module whose main records its argv and returns ``status``."""
    calls = []
    module = types.ModuleType(f"kbert.bench.{name}_bench")
    module.main = lambda argv: calls.append(list(argv)) or status
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(bench.BENCHMARKS, name, "a benchmark of the test")
    return calls


def test_every_listed_benchmark_is_a_module_with_a_main():
    folder = pathlib.Path(bench.__file__).parents[1] / "bench"
    modules = {p.stem.removesuffix("_bench") for p in folder.glob("*_bench.py")}
    assert set(bench.BENCHMARKS) == modules
    for name in bench.BENCHMARKS:  # each defines main (read, not imported: some import torch or JAX)
        assert "\ndef main(" in (folder / f"{name}_bench.py").read_text(encoding="utf-8"), name


def test_help_lists_each_benchmark_with_its_line(capsys):
    assert bench.main(["--help"]) == 0
    out = capsys.readouterr().out.splitlines()
    listed = out[out.index("benchmarks:") + 1:]
    assert [line.split()[0] for line in listed] == list(bench.BENCHMARKS)
    for line, (name, text) in zip(listed, bench.BENCHMARKS.items()):
        assert line.split(None, 1)[1] == text, name
    assert bench.main(["-h"]) == 0 and capsys.readouterr().out.splitlines() == out


@pytest.mark.parametrize("argv", [[], ["no-such-bench"], ["--tiny"]])
def test_a_missing_or_unknown_benchmark_is_one_line_naming_the_choices(argv, capsys):
    assert bench.main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        f"kbert bench: error: choose one of: {', '.join(bench.BENCHMARKS)} (see kbert bench --help)"]


def test_the_rest_of_the_line_goes_to_the_benchmark_and_its_status_comes_back(monkeypatch, capsys):
    calls = _fake_benchmark(monkeypatch, "probe", 3)
    assert bench.main(["probe", "--tiny", "--out", "x.jsonl", "--help"]) == 3
    assert calls == [["--tiny", "--out", "x.jsonl", "--help"]]  # its own --help, not the dispatcher's
    calls = _fake_benchmark(monkeypatch, "probe", None)
    assert bench.main(["probe"]) is None and calls == [[]]
    assert capsys.readouterr().err == ""


def test_a_listed_benchmark_without_a_module_is_one_line(monkeypatch, capsys):
    monkeypatch.setitem(bench.BENCHMARKS, "planned", "not written yet")
    assert bench.main(["planned", "--tiny"]) == 1
    assert capsys.readouterr().err.splitlines() == ["kbert bench: error: benchmark 'planned' is not implemented yet"]


def test_a_benchmark_whose_own_import_fails_shows_that_failure(monkeypatch):
    """A module the benchmark imports that is missing is a real error (its traceback), not 'not implemented'."""
    _fake_benchmark(monkeypatch, "broken", 0)
    monkeypatch.delitem(sys.modules, "kbert.bench.broken_bench")
    monkeypatch.setattr(bench.importlib, "import_module", _raise_missing("some_peer_package"))
    with pytest.raises(ModuleNotFoundError, match="some_peer_package"):
        bench.main(["broken"])


def _raise_missing(name):
    def import_module(module):
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)

    return import_module
