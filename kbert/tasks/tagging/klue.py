"""KLUE NER (Park et al. 2021; KLUE-benchmark/KLUE) as a named task on the tagging type: a tag per
character, mapped from word pieces (kbert.tasks.tagging.char_tagging).

  task      eval_results.json (KLUE's metrics)             predictions.jsonl (kbert predict's form)
  klue/ner  entity_macro_f1, char_macro_f1 (x100)          {"guid", "tags"}: one tag per character

Files and ``--train-rows``/``--eval-rows`` as for KLUE NLI and STS (kbert.tasks.classification.klue).
The metrics are those of KLUE's baseline code (KLUE-benchmark/KLUE-baseline,
``klue_baseline/metrics/functional.py``): seqeval and sklearn called with the same arguments.
"""

from __future__ import annotations

from kbert.data import klue
from kbert.errors import OptionsError
from kbert.tasks.core.options import RowsOptions
from kbert.tasks.core.prediction import FilePredictor, write_jsonl
from kbert.tasks.core.registry import register_task
from kbert.tasks.core.task_type import Recipe


def _flat(sequences) -> list:
    return [tag for sequence in sequences for tag in sequence]


def klue_ner_entity_macro_f1(predictions, labels) -> float:
    """Entity-level macro F1 (x100): seqeval, strict IOB2, averaged over the entity types found in
    gold or prediction. As KLUE's baseline, all sentences are scored as one flat sequence."""
    from seqeval.metrics import f1_score
    from seqeval.scheme import IOB2

    predicted, gold = _flat(predictions), _flat(labels)
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predicted tags for {len(gold)} gold tags")
    return 100.0 * float(f1_score([gold], [predicted], average="macro", mode="strict", scheme=IOB2))


def klue_ner_char_macro_f1(predictions, labels, label_names) -> float:
    """Character-level macro F1 (x100) over every label of ``label_names`` (O included), a label
    absent from both sides counting 1 (``zero_division=True``), as KLUE's baseline computes it."""
    import sklearn.metrics

    index = {name: i for i, name in enumerate(label_names)}
    predicted, gold = _flat(predictions), _flat(labels)
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predicted tags for {len(gold)} gold tags")
    unknown = sorted(set(predicted + gold) - set(index))
    if unknown:
        raise OptionsError(f"tags {unknown} are not among the labels {list(label_names)}")
    return 100.0 * float(sklearn.metrics.f1_score([index[t] for t in gold], [index[t] for t in predicted],
                                                  labels=list(range(len(label_names))), average="macro",
                                                  zero_division=1.0))


def klue_ner_metrics(predictions, labels, label_names) -> dict:
    """{"entity_macro_f1", "char_macro_f1"} of per-character tag sequences."""
    return {"entity_macro_f1": klue_ner_entity_macro_f1(predictions, labels),
            "char_macro_f1": klue_ner_char_macro_f1(predictions, labels, label_names)}


class KlueNerRecipe(Recipe):
    long_documents = ("truncate",)  # a tag per character: its model reads no windows
    metric_names = ("entity_macro_f1", "char_macro_f1")
    main_metric = "entity_macro_f1"

    def read(self):
        train, dev = klue.task_splits("ner", data_dir=self.options.data_dir, eval_split=self.eval_split,
                                      train_file=self.options.train_file, eval_file=self.options.eval_file,
                                      train_rows=self.named_options.train_rows,
                                      eval_rows=self.named_options.eval_rows, task_name=self.task.name)
        self.label_names = klue.NER_LABELS
        self.subsets(train.examples, dev.examples)

    def build_model(self, init_dir, encoder_overrides=None):
        from kbert.tasks.tagging.model import TokenTagger

        # fill_label: O, for pieces cut off by truncation
        return TokenTagger.from_model_dir(init_dir, label_names=list(self.label_names),
                                          fill_label=self.label_names.index("O"), **self.build_kwargs(encoder_overrides))

    def train_dataset(self, model):
        from kbert.tasks.tagging.char_tagging import char_features
        from kbert.tasks.core.datasets import make_dataset

        inputs, labels, _ = char_features(model, [e["text"] for e in self.train], [e["tags"] for e in self.train],
                                          self.label_names)
        return make_dataset(inputs, labels, batch_size=self.options.batch_size, lengths=inputs["input_mask"].sum(1),
                            boundaries=self.boundaries(model.seq_length), shuffle=True, seed=self.options.seed)

    def evaluate(self, model):
        from kbert.tasks.tagging.char_tagging import predict_char_tags

        predicted = predict_char_tags(model, [e["text"] for e in self.dev], self.options.eval_batch_size)
        return klue_ner_metrics(predicted, [e["tags"] for e in self.dev], self.label_names), predicted

    def write_predictions(self, out_dir, predicted):
        return [write_jsonl(self.out_path(out_dir, "predictions.jsonl"),
                           [{"guid": e["id"], "tags": t} for e, t in zip(self.dev, predicted)])]


class KlueNerPredictor(FilePredictor):
    """kbert predict for models fine-tuned on KLUE NER: the official file in, JSON lines with
    ``guid`` and ``tags`` (one per character) out; its export tags every character too."""

    def __init__(self):
        super().__init__(klue.READERS["ner"], "klue", "KLUE NER")

    def signatures(self, module):
        """kbert export task: serving_default tags every character of a sentence, as ``predict``
        does (the tagging type's would tag whitespace words)."""
        from kbert.tasks.core.registry import task_type_for_model
        from kbert.tasks.tagging.char_tagging import char_tag_signatures

        _, serve_ids = task_type_for_model(module.model.task_type).signatures(module)
        return char_tag_signatures(module, serve_ids)

    def predict(self, model, data, options, progress=None):
        from kbert.tasks.core.prediction import RowProgress
        from kbert.tasks.tagging.char_tagging import predict_char_tags

        examples = data.examples
        progress = (progress or RowProgress(show=False)).start(len(examples))
        tags = predict_char_tags(model, [e["text"] for e in examples], options.batch_size, progress)
        return [{"guid": e["id"], "tags": t} for e, t in zip(examples, tags)]


register_task("klue/ner", "tagging", recipe=KlueNerRecipe, tfrecords=False, predictor=KlueNerPredictor(),
              options=RowsOptions, help="KLUE NER, a tag per character, entity and character macro F1 "
                                        "(--data-dir: klue-ner-v1.1_train.tsv / _dev.tsv, or files and rows)")
