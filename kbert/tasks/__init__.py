"""Fine-tuning task models (the paper's Figure 3) over kbert's encoder, their data pipelines,
metrics and post-processing.

  TextClassifier, TextRegressor, MultiLabelClassifier   raw strings in (kbert.tasks.classification.model)
  TokenTagger                                           NER (kbert.tasks.tagging.model)
  SpanQuestionAnswerer                                  SQuAD 1.1 / 2.0 (kbert.tasks.span_qa.model)
  MultipleChoiceModel                                   SWAG (kbert.tasks.multiple_choice.model)
  load_task_model(model_dir)                            any of them, from a fine-tuned model directory
  get_task, task_names, register_task, register_task_type   the task registry (kbert.tasks.core.registry):
                                                        task types as plug-ins, named tasks

The names are imported on first use (``kbert.api_export``), so that ``kbert.tasks.core.metrics`` and the
other numpy-only modules stay importable without TensorFlow and Keras being loaded.
"""

from kbert.api_export import face as _face

__getattr__, __dir__, __all__ = _face(__name__)
