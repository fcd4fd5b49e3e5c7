"""The fuzz tier (issue 64): every test under tests/fuzz is marked ``fuzz`` (and ``slow``) and records
how many inputs it made (``fuzz_inputs``, a user property, so that pytest-xdist carries it to the
controller); the run ends with each target's count and one line ``fuzz total: N inputs``, printed by
tests/conftest.py's hooks: under pytest-xdist the controller collects nothing and so never loads this file."""

import pathlib

import pytest

HERE = pathlib.Path(__file__).parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in pathlib.Path(item.path).parents:
            item.add_marker(pytest.mark.fuzz)
            # The tier takes about a minute on 2 cores at CI's budget: the full run's, not the fast tier's.
            item.add_marker(pytest.mark.slow)
