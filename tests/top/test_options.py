"""kbert.options: the dataclass field that carries its command-line help, the comma-list converter,
and the attention and precision choices named without importing Keras (checked against Keras and
kbert.layers.accel, which own them)."""

import argparse
import ast
import dataclasses
import inspect

import pytest

from kbert import options
from kbert.options import ATTENTION_CHOICES, PRECISIONS, comma_list, option


@pytest.mark.parametrize("given, expected", [
    ("a,b", ("a", "b")),
    (" a , b ,, c ,", ("a", "b", "c")),  # blanks around and empty parts dropped
    ("", ()),
    ("one", ("one",)),
    (["x", 2], ("x", "2")),  # a list (a dataclass built in Python) kept, as strings
    (("p", "q"), ("p", "q")),
    (3, ("3",)),
])
def test_comma_list(given, expected):
    assert comma_list(given) == expected


@dataclasses.dataclass
class Toy:
    data: str = option(help="where the data is")
    steps: int = option(10, help="how many steps")
    names: tuple | None = option(None, type=comma_list, help="names, comma-separated")
    bucketing: bool = option(True, help="bucket by length", flag="--no-bucketing")
    units: int = option(0, help="units per direction", metavar="UNITS")


def test_the_field_carries_its_help_type_and_flag():
    fields = {f.name: f for f in dataclasses.fields(Toy)}
    assert dict(fields["steps"].metadata) == {"help": "how many steps", "type": None, "flag": None, "metavar": None}
    assert fields["names"].metadata["type"] is comma_list
    assert fields["bucketing"].metadata["flag"] == "--no-bucketing"
    assert fields["steps"].default == 10 and fields["data"].default is dataclasses.MISSING
    assert Toy(data="d") == Toy("d", steps=10, names=None, bucketing=True, units=0)
    with pytest.raises(TypeError, match="data"):  # no default: the dataclass needs it
        Toy()


def test_the_commands_parse_and_explain_the_fields():
    """kbert.cli_support.add_arguments (what every command uses) reads the field's metadata: argparse
    then converts, requires and documents each flag as the field says."""
    from kbert.cli_support import add_arguments, from_args

    parser = add_arguments(argparse.ArgumentParser(prog="toy"), Toy)
    args = parser.parse_args(["--data", "d", "--steps", "3", "--names", "a, b", "--no-bucketing"])
    assert from_args(Toy, args) == Toy("d", steps=3, names=("a", "b"), bucketing=False)
    assert from_args(Toy, parser.parse_args(["--data", "d"])) == Toy(data="d")
    text = " ".join(parser.format_help().split())
    assert "--steps STEPS how many steps (default 10)" in text
    assert "--names NAMES names, comma-separated" in text
    assert "--no-bucketing bucket by length" in text
    assert "--data DATA where the data is" in text
    assert "--units UNITS units per direction (default 0)" in text  # the field's metavar
    with pytest.raises(SystemExit):
        parser.parse_args(["--steps", "3"])  # --data is required
    with pytest.raises(SystemExit):
        parser.parse_args(["--data", "d", "--steps", "three"])  # int, from the default


def test_the_choices_are_the_ones_keras_and_kbert_accept():
    import keras

    from kbert.layers.accel import ATTENTION_IMPLS

    assert ATTENTION_CHOICES == ATTENTION_IMPLS
    for name in PRECISIONS:
        policy = keras.dtype_policies.DTypePolicy(name)
        assert policy.name == name and policy.variable_dtype == "float32"
    assert {keras.dtype_policies.DTypePolicy(n).compute_dtype for n in PRECISIONS} == {"float32", "bfloat16",
                                                                                       "float16"}


def test_it_imports_nothing_of_kbert_or_keras():
    """The commands parse flags before Keras starts: this module imports the standard library only."""
    tree = ast.parse(inspect.getsource(options))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert imported == {"__future__", "dataclasses"}
