"""kbert.tasks.core.task_type: the subsets of --max-*-examples, and the base Recipe's shared parts
(data files, rows left out and their summary, a named task's own options checked) on a Recipe that
reads nothing."""

import os

import numpy as np
import pytest

from kbert.errors import OptionsError
from kbert.tasks.core.options import FinetuneOptions, RowsOptions
from kbert.tasks.core.registry import get_task
from kbert.tasks.core.task_type import LEFT_OUT_SHOWN, Recipe, subsample


class Bare(Recipe):
    def read(self):
        self.subsets(list("abcdefghij"), list("klmnop"))


def _options(**kwargs):
    return FinetuneOptions(task=kwargs.pop("task", "glue/sst2"), init="unused", model_dir="unused", **kwargs)


def test_subsample_draws_without_replacement_in_file_order():
    examples = [f"e{i}" for i in range(20)]
    assert subsample(examples, None, 0)[0] == examples and subsample(examples, 50, 0)[1].tolist() == list(range(20))
    picked, index = subsample(examples, 5, seed=3)
    expected = np.sort(np.random.default_rng(3).choice(20, size=5, replace=False))
    assert index.tolist() == expected.tolist() == sorted(set(index.tolist()))
    assert picked == [examples[i] for i in expected]
    assert subsample(examples, 5, seed=3)[1].tolist() == index.tolist()  # the same subset every run


def test_recipe_subsets_files_and_rows_left_out(tmp_path):
    recipe = Bare(get_task("glue/sst2"), _options(max_train_examples=4, data_dir=str(tmp_path)))
    assert (recipe.num_train, recipe.num_eval) == (4, 6) and recipe.dev == list("klmnop")
    assert recipe.data_file({"train": "train.tsv"}, "train", None) == os.path.join(str(tmp_path), "train.tsv")
    assert recipe.data_file({"train": "train.tsv"}, "train", "mine.tsv") == "mine.tsv"
    with pytest.raises(ValueError, match=r"task 'glue/sst2' has no split 'test'; expected one of \['train'\]"):
        recipe.data_file({"train": "train.tsv"}, "test", None)
    with pytest.raises(ValueError, match="task 'glue/sst2' needs --data-dir or --train-file/--eval-file"):
        Bare(get_task("glue/sst2"), _options()).data_file({"train": "train.tsv"}, "train", None)

    ids = [f"q{i}" for i in range(LEFT_OUT_SHOWN + 2)]
    recipe.leave_out("train", ids, "questions", "no answer")
    recipe.leave_out("eval", [], "questions", "no answer")  # nothing left out: no note
    shown = ", ".join(ids[:LEFT_OUT_SHOWN])
    assert recipe.data_notes == (f"{len(ids)} train questions left out (no answer): {shown}, ...",)
    assert recipe.summary() == {"train_examples": 4, "eval_examples": 6, "train_left_out": len(ids),
                                "train_left_out_ids": ids[:LEFT_OUT_SHOWN]}


def test_a_named_tasks_own_options_are_refused_for_another_task():
    rows = RowsOptions(train_rows=":10")
    with pytest.raises(OptionsError, match="task 'glue/sst2' takes no options of its own, got RowsOptions") as e:
        Bare(get_task("glue/sst2"), _options(named_options=rows))
    assert e.value.option == "named_options"
    recipe = Bare(get_task("klue/nli"), _options(task="klue/nli", named_options=rows))
    assert recipe.named_options is rows
    assert Bare(get_task("klue/nli"), _options(task="klue/nli")).named_options == RowsOptions()


def test_build_kwargs_pass_bilstm_and_features_only_where_set():
    """A model class that takes no BiLSTM (multiple choice) never sees the arguments at their defaults;
    a run that sets them hands them to its model (kbert.training.finetune refuses them where they cannot apply)."""
    plain = Bare(get_task("swag"), _options(task="swag")).build_kwargs()
    assert not {"bilstm", "features"} & set(plain)
    assert get_task("swag").task_type.sequence_options == ()
    set_ = Bare(get_task("conll2003"), _options(task="conll2003", bilstm=16, features="last_hidden")).build_kwargs()
    assert (set_["bilstm"], set_["features"]) == (16, "last_hidden")
    assert get_task("conll2003").task_type.sequence_options == ("bilstm", "features")
    assert get_task("squad/v1.1").task_type.sequence_options == ("bilstm",)
