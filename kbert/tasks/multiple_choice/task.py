"""Task type "multiple_choice": the best of N continuations (SWAG, kbert.tasks.multiple_choice.model.
MultipleChoiceModel): each (context, choice) pair scored from its [CLS], softmax over the choices.

Task: swag (kbert.data.swag: train.csv, val.csv), accuracy; predictions.csv as the leaderboard's.
"""

from __future__ import annotations

import numpy as np

from kbert.data import swag
from kbert.errors import OptionsError
from kbert.tasks.multiple_choice import submission
from kbert.tasks.core.metrics import compute_metrics
from kbert.tasks.core.registry import register_task, register_task_type
from kbert.tasks.core.task_type import WARMUP_TEXTS, DataSource, Recipe, TaskType

SWAG_FILES = {"train": "train.csv", "dev": "val.csv", "val": "val.csv", "test": "test.csv"}


class ChoiceRecipe(Recipe):
    metric_names = ("accuracy",)
    main_metric = "accuracy"

    def read(self):
        o = self.options
        train = swag.read_swag(self.data_file(SWAG_FILES, "train", o.train_file))
        dev = swag.read_swag(self.data_file(SWAG_FILES, self.eval_split, o.eval_file), labelled=True)
        self.subsets(train.examples, dev.examples)

    @staticmethod
    def inputs(examples):
        # The paper's SWAG input: sentence A = the first sentence, B = the second's start + an ending.
        return {"text_a": np.array([e["context"] for e in examples], dtype=object),
                "choices": np.array([[f"{e['start_ending']} {end}".strip() for end in e["endings"]]
                                     for e in examples], dtype=object)}

    def build_model(self, init_dir, encoder_overrides=None):
        from kbert.tasks.multiple_choice.model import MultipleChoiceModel

        return MultipleChoiceModel.from_model_dir(init_dir, **self.build_kwargs(encoder_overrides))

    def train_dataset(self, model):
        from kbert.tasks.core.datasets import make_dataset, token_lengths

        x = self.inputs(self.train)
        lengths = np.max([token_lengths(model.tokenizer, [x["text_a"], x["choices"][:, i]], model.seq_length)
                          for i in range(x["choices"].shape[1])], axis=0)
        labels = np.array([e["label"] for e in self.train], dtype=np.int32)
        return make_dataset(x, labels, batch_size=self.options.batch_size, lengths=lengths,
                            boundaries=self.boundaries(model.seq_length), shuffle=True, seed=self.options.seed)

    def evaluate(self, model):
        logits = model.predict_logits(self.inputs(self.dev), batch_size=self.options.eval_batch_size)
        labels = np.array([e["label"] for e in self.dev])
        return compute_metrics(self.metric_names, logits, labels), logits

    def write_predictions(self, out_dir, logits):
        return [submission.write_swag(self.out_path(out_dir, "predictions.csv"), [e["id"] for e in self.dev],
                                      logits.argmax(axis=-1))]


def _choice_outputs(logits):
    import tensorflow as tf

    return {"logits": logits, "probabilities": tf.nn.softmax(logits),
            "choice_ids": tf.argmax(logits, axis=-1, output_type=tf.int32)}


@register_task_type
class MultipleChoice(TaskType):
    name = "multiple_choice"
    model_types = ("multiple_choice",)
    recipe_class = ChoiceRecipe
    signature_docs = {
        "multiple_choice": "context [b], choices [b, N] -> probabilities [b, N], choice_ids [b], logits [b, N]",
    }

    def model_class(self, model_type):
        from kbert.tasks.multiple_choice.model import MultipleChoiceModel

        return MultipleChoiceModel

    def data_source(self, task, split, options):
        return DataSource("swag", self.split_file(task, SWAG_FILES, split), _read_swag, ("accuracy",))

    def signatures(self, module):
        import tensorflow as tf

        from kbert.tasks.core.signatures import IDS_SPEC

        model = module.model

        @tf.function(input_signature=[{"context": tf.TensorSpec([None], tf.string, name="context"),
                                        "choices": tf.TensorSpec([None, None], tf.string, name="choices")}])
        def serve(inputs):
            return _choice_outputs(model({"text_a": inputs["context"], "choices": inputs["choices"]}, training=False))

        spec = {n: tf.TensorSpec([None, None, None], tf.int32, name=n) for n in IDS_SPEC}

        @tf.function(input_signature=[spec])
        def serve_ids(inputs):  # [batch, choices, seq] each
            shape = tf.shape(inputs["input_word_ids"])
            flat = {k: tf.reshape(v, [-1, shape[2]]) for k, v in inputs.items()}
            scores = model.head(model.encode(flat, training=False)["pooled_output"], training=False)
            return _choice_outputs(tf.reshape(scores, shape[:2]))

        return serve, serve_ids

    def warmup_inputs(self, model):
        return [{"context": WARMUP_TEXTS[:1], "choices": [WARMUP_TEXTS]}]

    # -- kbert.predict: a SWAG CSV (the label column, if any, is not needed) -------------------
    input_formats = ("swag",)

    def read_prediction_input(self, task_meta, path, options):
        from kbert.tasks.core.registry import named_task_of

        named = named_task_of(task_meta)
        if named is not None and named.read_unlabelled is not None and options.task_format is None:
            return named.read_unlabelled(path)  # the named task's own file format
        if options.task_format not in (None, "swag"):
            raise OptionsError(f"--task-format {options.task_format!r}: a multiple-choice model reads a SWAG CSV "
                               "('swag')", option="task_format")
        return swag.read_swag(path, labelled=False)

    def predict(self, model, data, options, progress=None):
        """{"id", "choice": the chosen ending's index, "label": its text} (+ "probabilities", one
        per ending)."""
        from kbert.tasks.core.prediction import RowProgress

        progress = (progress or RowProgress(show=False)).start(len(data.examples))
        logits = model.predict_logits(ChoiceRecipe.inputs(data.examples), batch_size=options.batch_size,
                                      progress=progress)
        e_logits = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probabilities = e_logits / e_logits.sum(axis=-1, keepdims=True)
        rows = []
        for e, p in zip(data.examples, probabilities):
            choice = int(p.argmax())
            rows.append({"id": e["id"], "choice": choice, "label": e["endings"][choice]})
            if options.probabilities:
                rows[-1]["probabilities"] = p.tolist()
        return rows


def _read_swag(path, data=None):  # module-level: picklable for Beam workers
    return swag.read_swag(path, data=data)


register_task("swag", "multiple_choice", help="SWAG (--data-dir: train.csv, val.csv)")
