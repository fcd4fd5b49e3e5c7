"""Fine-tuning options: one dataclass definition behind kbert.finetune's and kbert.bench
finetune's flags; the task registry behind --task; counts below one refused for every caller."""

import dataclasses

import pytest

from kbert.bench.finetune_bench import parse_args as bench_parse_args
from kbert.commands.finetune import finetune_options, parse_args
from kbert.training.finetune import resolve_options
from kbert.errors import OptionsError
from kbert.tasks.core.options import FinetuneOptions, RowsOptions
from kbert.tasks.classification.task import TableOptions
from kbert.tasks.span_qa.task import ArticlesOptions, SquadOptions, SquadSettings
from kbert.tasks.core.registry import UnknownTaskError, get_task, task_names

REQUIRED = ["--init", "in", "--model-dir", "out"]


def test_command_line_defaults_are_the_dataclass_defaults():
    options = finetune_options(parse_args(["--task", "glue/sst2", *REQUIRED]))
    expected = FinetuneOptions(task="glue/sst2", init="in", model_dir="out", task_options=TableOptions())
    assert options == expected
    # the task's default sequence length is filled in once, by the library (command and Python alike)
    assert resolve_options(options).seq_length == 128
    squad = resolve_options(finetune_options(parse_args(["--task", "SQuAD/v2.0", *REQUIRED, "--doc-stride", "32",
                                                         "--no-bucketing"])))
    assert squad.seq_length == 384 and squad.bucketing is False and squad.dynamic_length
    assert (squad.doc_stride, squad.task_options, squad.named_options) == (32, SquadOptions(), ArticlesOptions())


def test_list_options_from_the_command_line_and_from_python():
    options = finetune_options(parse_args(["--task", "csv", *REQUIRED, "--text-columns", "title, body",
                                           "--label-names", "neg,pos", "--regression"]))
    assert options.task_options == TableOptions(text_columns=["title", "body"], label_names="neg,pos", regression=True)
    assert options.task_options.text_columns == ("title", "body")


def test_bench_finetune_shares_the_flags_with_its_own_defaults():
    args = bench_parse_args([])
    assert (args.task, args.epochs, args.seq_length, args.init) == ("glue/sst2", 1, 128, None)
    defaults = FinetuneOptions(task="x", init="x", model_dir="x")
    assert (args.batch_size, args.learning_rate, args.seed) == (defaults.batch_size, defaults.learning_rate,
                                                                 defaults.seed)
    args = bench_parse_args(["--epochs", "2", "--learning-rate", "1e-4", "--seq-length", "64"])
    assert (args.epochs, args.learning_rate, args.seq_length) == (2, 1e-4, 64)


def test_every_finetune_field_has_a_flag_and_help_lists_the_registry(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    shown = capsys.readouterr().out
    for field in dataclasses.fields(FinetuneOptions):
        if field.name in ("task_options", "named_options"):  # their own classes' flags, below
            continue
        assert (field.metadata.get("flag") or "--" + field.name.replace("_", "-")) in shown
    for name in task_names():
        assert name in shown
        options = get_task(name).options
        for field in dataclasses.fields(options) if options is not None else ():
            assert "--" + field.name.replace("_", "-") in shown


def test_task_lookup():
    assert get_task("GLUE/SST-2") is get_task("glue/sst2")
    assert get_task("table") is get_task("csv") and get_task("squad").settings == SquadSettings("v1.1")
    with pytest.raises(UnknownTaskError, match="unknown task 'glue/sst3'; expected one of: glue/cola, "):
        get_task("glue/sst3")
    with pytest.raises(OptionsError, match="takes SquadOptions options, got TableOptions") as info:
        get_task("squad/v1.1").task_type.options(TableOptions())
    assert info.value.option == "task_options"


def test_finetune_options_check_their_counts_for_every_caller():
    from kbert.tasks.core.options import FinetuneOptions

    for name in ("max_train_examples", "max_eval_examples", "batch_size", "eval_batch_size"):
        with pytest.raises(OptionsError, match=f"{name} .* got 0"):
            FinetuneOptions(task="x", init="x", model_dir="x", **{name: 0})
    assert FinetuneOptions(task="x", init="x", model_dir="x", max_train_examples=1).max_train_examples == 1


# -- one home per option ---------------------------------------------------------------------------
def _flag(field) -> str:
    return field.metadata.get("flag") or "--" + field.name.replace("_", "-")


def _runs() -> dict:
    """{run: the options classes active in it}: a fine-tuning run of each named task holds
    FinetuneOptions, SearchOptions (--restarts), its type's options and its own; pre-training, prediction and vocabulary
    learning and a paper table hold one class each. ``kbert finetune``'s parser holds every fine-tuning
    class at once."""
    from kbert.paper.run import PaperOptions
    from kbert.tasks.core.prediction import PredictOptions
    from kbert.tasks.core.registry import tasks
    from kbert.text.vocab_learning import VocabOptions
    from kbert.training.pretrain import PretrainOptions

    from kbert.training.search import SearchOptions

    runs = {f"finetune --task {t.name}": [FinetuneOptions, SearchOptions, t.task_type.Options,
                                          *([t.options] if t.options else [])] for t in tasks()}
    parser = [FinetuneOptions, SearchOptions, *(t.task_type.Options for t in tasks()), *(t.options for t in tasks() if t.options)]
    runs["kbert finetune's parser"] = list(dict.fromkeys(parser))
    runs.update({"pretrain": [PretrainOptions], "predict": [PredictOptions], "vocab": [VocabOptions],
                 "paper": [PaperOptions]})
    return runs


def test_no_option_is_defined_in_two_classes_of_one_run():
    twice = []
    for run, classes in _runs().items():
        homes = {}
        for cls in classes:
            for field in dataclasses.fields(cls):
                if not field.metadata.get("cli", True):  # task_options, named_options: the classes themselves
                    continue
                for key in {field.name, _flag(field)}:
                    if key in homes and homes[key] is not cls:
                        twice.append(f"{run}: {key} in {homes[key].__name__} and {cls.__name__}")
                    homes[key] = cls
    assert twice == []


def test_the_walk_sees_every_options_dataclass_of_kbert():
    """Every dataclass in kbert's source with ``option(...)`` fields is in a run of the walk above."""
    import ast
    import pathlib

    import kbert

    walked = {f"{cls.__module__}.{cls.__qualname__}" for classes in _runs().values() for cls in classes}
    root = pathlib.Path(kbert.__file__).parent
    found = set()
    for path in root.rglob("*.py"):
        module = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(s, ast.AnnAssign) and isinstance(s.value, ast.Call)
                    and getattr(s.value.func, "id", None) == "option" for s in node.body):
                found.add(f"{module}.{node.name}")
    assert found and sorted(found - walked) == []


@pytest.mark.parametrize("cls, name", [(RowsOptions, "train_rows"), (RowsOptions, "eval_rows"),
                                       (ArticlesOptions, "train_articles"), (ArticlesOptions, "eval_articles")])
def test_slices_of_a_file_are_start_end(cls, name):
    for good in (":10", "10:", "-5:", "2:7", ":"):
        assert getattr(cls(**{name: good}), name) == good
    for bad in ("10", "a:", "1:2:3", "1.5:"):
        with pytest.raises(OptionsError, match=f"--{name.replace('_', '-')}\\) must be START:END") as info:
            cls(**{name: bad})
        assert (info.value.option, info.value.value) == (name, bad)
