"""Fine-tuning task models (the paper's Figure 3) over kbert's encoder, their data pipelines,
metrics and post-processing.

  TextClassifier, TextRegressor, MultiLabelClassifier   raw strings in (kbert.tasks.classifier)
  TokenTagger                                           NER (kbert.tasks.tagger)
  SpanQuestionAnswerer                                  SQuAD 1.1 / 2.0 (kbert.tasks.span_qa)
  MultipleChoiceModel                                   SWAG (kbert.tasks.multiple_choice)
  load_task_model(model_dir)                            any of them, from a fine-tuned model directory
  get_task, task_names, register_task, register_task_type   the task registry (kbert.tasks.registry):
                                                        task types as plug-ins, named tasks

The names are imported on first use, so that ``kbert.tasks.metrics`` and the other numpy-only
modules stay importable without TensorFlow and Keras being loaded.
"""

import importlib

_EXPORTS = {
    "TaskModel": "base", "TaskModelError": "base", "load_task_model": "base",
    "TextClassifier": "classifier", "TextRegressor": "classifier", "MultiLabelClassifier": "classifier",
    "get_task": "registry", "task_names": "registry", "register_task": "registry",
    "register_task_type": "registry", "TaskType": "task_type", "Recipe": "task_type",
    "TokenTagger": "tagger", "SpanQuestionAnswerer": "span_qa", "MultipleChoiceModel": "multiple_choice",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"kbert.tasks.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'kbert.tasks' has no attribute {name!r}")
