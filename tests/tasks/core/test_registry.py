"""A new task is one new module: this file defines a task type of its own (a word-count score,
with its own model type, option, data file, metric, predictions file, serving signature and
warm-up request), registers it, fine-tunes it through kbert.finetune, reloads it with
load_task_model, exports it with kbert.export's task exporter and checks the SavedModel's answers
against the Python model's."""

import dataclasses
import json
import pathlib

import numpy as np
import pytest
import tensorflow as tf

from kbert.export.task import export_task
from kbert.commands.finetune import finetune_options, parse_args, run
from kbert.tasks import load_task_model
from kbert.tasks.classification.model import TextRegressor
from kbert.tasks.core.options import FinetuneOptions, option
from kbert.tasks.core.registry import (UnknownTaskError, get_task, register_task, register_task_type, task_names,
                                      task_type_for_model)
from kbert.tasks.core.task_type import Recipe, TaskType
from conftest import read_scalars
from fixtures.export_contents import read_warmup_requests

TASK = "test/good_count"


class GoodCounter(TextRegressor):
    """A model type of its own (kbert.json task.type "test_good_counter")."""

    task_type = "test_good_counter"


@dataclasses.dataclass
class CountOptions:
    """good_count: the JSON field of the score"""

    score_field: str = option("score", help="the JSON field holding the score")


def _read_jsonl(path, field):
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [r["text"] for r in rows], np.array([r[field] for r in rows], dtype=np.float32)


class CountRecipe(Recipe):
    metric_names = ("neg_mae",)
    main_metric = "neg_mae"

    def read(self):
        folder = pathlib.Path(self.options.data_dir)
        field = self.task_options.score_field
        self.train, self.train_y = _read_jsonl(folder / "train.jsonl", field)
        self.dev, self.dev_y = _read_jsonl(folder / "dev.jsonl", field)
        self.num_train, self.num_eval = len(self.train), len(self.dev)

    def build_model(self, init_dir, encoder_overrides=None):
        return GoodCounter.from_model_dir(init_dir, **self.build_kwargs(encoder_overrides))

    def train_dataset(self, model):
        from kbert.tasks.core.datasets import make_dataset

        return make_dataset(np.array(self.train, dtype=object), self.train_y, batch_size=self.options.batch_size,
                            shuffle=True, seed=self.options.seed)

    def evaluate(self, model):
        scores = model.predict_logits(np.array(self.dev, dtype=object))
        return {"neg_mae": -float(np.mean(np.abs(scores - self.dev_y)))}, scores

    def write_predictions(self, out_dir, scores):
        path = self.out_path(out_dir, "predictions.jsonl")
        path.write_text("".join(json.dumps({"text": t, "score": float(s)}) + "\n" for t, s in zip(self.dev, scores)))
        return [path]


@register_task_type
class GoodCount(TaskType):
    name = "test_good_count"
    model_types = ("test_good_counter",)
    Options = CountOptions
    recipe_class = CountRecipe
    signature_docs = {"test_good_counter": "text -> score [b]"}

    def model_class(self, model_type):
        return GoodCounter

    def signatures(self, module):
        from kbert.tasks.core.signatures import IDS_SPEC

        model = module.model

        @tf.function(input_signature=[{"text": tf.TensorSpec([None], tf.string, name="text")}])
        def serve(inputs):
            return {"score": model(inputs["text"], training=False)}

        @tf.function(input_signature=[IDS_SPEC])
        def serve_ids(inputs):
            pooled = model.encode(dict(inputs), training=False)["pooled_output"]
            return {"score": tf.squeeze(model.head(pooled, training=False), -1)}

        return serve, serve_ids

    def warmup_inputs(self, model):
        return [{"text": ["good good"]}]


register_task(TASK, "test_good_count", help="how often 'good' occurs")


def _write_data(folder, n, seed, field):
    rng = np.random.default_rng(seed)
    with open(folder, "w") as f:
        for _ in range(n):
            words = rng.choice(["good", "film", "plot", "the"], size=rng.integers(2, 8))
            f.write(json.dumps({"text": " ".join(words), field: int((words == "good").sum())}) + "\n")


@pytest.mark.slow
def test_a_task_defined_here_fine_tunes_reloads_and_exports(tiny_model_dir, tmp_path):
    assert TASK in task_names() and get_task(TASK.upper()).type == "test_good_count"
    assert task_type_for_model("test_good_counter").name == "test_good_count"
    _write_data(tmp_path / "train.jsonl", 48, 0, "y")
    _write_data(tmp_path / "dev.jsonl", 12, 1, "y")
    out = tmp_path / "run"
    # From Python, without argparse: typed options, the task's own option among them.
    options = FinetuneOptions(task=TASK, init=str(tiny_model_dir), model_dir=str(out), data_dir=tmp_path, epochs=2,
                              batch_size=8, learning_rate=1e-3, seq_length=16,
                              task_options=CountOptions(score_field="y"))
    # The command line builds the same options (the task type's flag comes from its dataclass).
    parsed = finetune_options(parse_args(["--task", TASK, "--init", str(tiny_model_dir), "--model-dir", str(out),
                                          "--data-dir", str(tmp_path), "--epochs", "2", "--batch-size", "8",
                                          "--learning-rate", "1e-3", "--seq-length", "16", "--score-field", "y"]))
    assert dataclasses.replace(parsed, data_dir=tmp_path) == options
    results = run(options)

    # The recipe's metric, recomputed from the predictions file it wrote.
    written = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    _, gold = _read_jsonl(tmp_path / "dev.jsonl", "y")
    predicted = np.array([r["score"] for r in written])
    assert results["best"]["neg_mae"] == pytest.approx(-np.mean(np.abs(predicted - gold)), abs=1e-5)
    # Evaluation metrics and train metrics reached TensorBoard through the shared loop.
    assert set(read_scalars(out / "logs" / "eval")) == {"neg_mae"}
    assert len(read_scalars(out / "logs" / "eval")["neg_mae"]) == 2
    assert "epoch_mean/loss" in read_scalars(out / "logs" / "train")

    # load_task_model finds the model type through the registry.
    model = load_task_model(out)
    assert isinstance(model, GoodCounter) and model.saved_task_info["task_name"] == TASK
    texts = [r["text"] for r in written]
    np.testing.assert_allclose(model.predict_logits(np.array(texts, dtype=object)), predicted, atol=1e-5)

    # The export uses the task type's signatures and warm-up request.
    export_dir = export_task(out, tmp_path / "saved_models" / "good_count" / "1")
    loaded = tf.saved_model.load(str(export_dir))
    served = loaded.signatures["serving_default"](text=tf.constant(texts))["score"].numpy()
    np.testing.assert_allclose(served, predicted, atol=1e-4)
    (request,) = read_warmup_requests(export_dir)
    assert request.predict_log.request.inputs["text"].string_val == [b"good good"]


def test_named_tasks_are_typed():
    """A named task's settings are an instance of its recipe's Settings dataclass (no mapping read by
    key), and register_task refuses settings that do not fit the recipe."""
    from collections.abc import Mapping

    from kbert.tasks.classification.task import GlueRecipe, GlueSettings, TableRecipe
    from kbert.tasks.core.registry import tasks

    for task in tasks():
        assert not [f.name for f in dataclasses.fields(task) if isinstance(getattr(task, f.name), Mapping)]
        wanted = task.recipe_class.Settings
        assert task.settings is None if wanted is None else type(task.settings) is wanted, task.name
    assert get_task("glue/mnli").settings == GlueSettings("mnli") and get_task("glue/mnli").recipe is GlueRecipe
    assert get_task("csv").recipe_class is TableRecipe and get_task("csv").settings is None

    with pytest.raises(TypeError, match="unexpected keyword argument 'glue_task'"):
        register_task("test/untyped", "classification", glue_task="sst2")
    with pytest.raises(TypeError, match=r"recipe GlueRecipe needs settings=GlueSettings\(...\)"):
        register_task("test/untyped", "classification", recipe=GlueRecipe)
    with pytest.raises(TypeError, match="recipe GlueRecipe takes GlueSettings settings, got CountOptions"):
        register_task("test/untyped", "classification", recipe=GlueRecipe, settings=CountOptions())
    with pytest.raises(TypeError, match="recipe TableRecipe takes no settings, got GlueSettings"):
        register_task("test/untyped", "classification", settings=GlueSettings("sst2"))
    with pytest.raises(UnknownTaskError):
        get_task("test/untyped")  # nothing was registered


def test_a_recipe_declares_its_settings():
    @dataclasses.dataclass(frozen=True)
    class Field:
        score_field: str = "score"

    class FieldRecipe(CountRecipe):
        Settings = Field

    assert register_task("test/field", "test_good_count", recipe=FieldRecipe).settings == Field()
    assert register_task("test/field", "test_good_count", recipe=FieldRecipe, settings=Field("y")).settings.score_field \
        == "y"
