"""Task SavedModels for TF Serving: raw strings in, ready answers out.

``python -m kbert.export task MODEL_DIR saved_models/NAME/VERSION`` for any fine-tuned model
directory (kbert.tasks). Signatures:

  serving_default  strings -> answers (each task type's own: its TaskType.signatures and
                   signature_docs, kbert/tasks/*/task.py); for a tokenizer with a Python step
                   (mecab-*) the inputs are words, string [batch, words] padded with "",
                   renamed (text -> words, ...; kbert.tasks.core.words_inputs); span QA and
                   tagging then answer in word indices (kbert.tasks.span_qa.words_answers)
  serving_ids      input_word_ids, input_mask, input_type_ids (int32 [batch, seq]) -> the same
                   answers where they do not need the text (for clients that tokenize themselves)

Every export also gets ``assets.extra/tf_serving_warmup_requests`` (so the first real request is
not slow), keeps the ``vocab_file`` asset and a ``do_lower_case`` variable, and uses only
TensorFlow core and tensorflow-text ops.
"""

from __future__ import annotations

import pathlib

import tensorflow as tf

from kbert import compat
from kbert.export.serving import write_export, write_warmup_requests
from kbert.export.tokenizer_assets import attach_tokenizer_assets
from kbert.tasks.core.registry import task_type_for_model
from kbert.tasks.core.words_inputs import takes_words, words_request, words_signature
from kbert.api_export import kbert_export


class _TaskModule(compat.AutoTrackable):
    def __init__(self, model):
        # The Keras task model itself is not tracked: Keras would add its own default serving
        # function, traced with float inputs, which a string-in model cannot take. Its parts are,
        # which is all the SavedModel's functions capture.
        object.__setattr__(self, "model", model)
        self.encoder = model.encoder
        self.head = model.head
        self.preprocessor = model.preprocessor
        attach_tokenizer_assets(self, model.tokenizer, "task export")


def _add_keras_endpoints(module, serve):
    """``serve`` and ``serving_default`` attributes for keras.layers.TFSMLayer (kbert.export.endpoints):
    the dict of serving_default's inputs, or for one-text tasks also the bare [batch] strings."""
    from kbert.export.endpoints import add_keras_endpoints

    spec = serve.input_signature[0]
    add_keras_endpoints(module, serve, spec, bare_key=next(iter(spec)) if list(spec) in (["text"], ["words"]) else None)


def _takes_words_itself(serve) -> bool:
    """Whether a task type's serving_default already takes words (span QA and tagging of a
    ``mecab-*`` model answer in word indices, kbert.tasks.span_qa.words_answers): no ``words_signature``
    around it, and its warm-up requests are words already."""
    return all(name.endswith("words") or name.startswith("words_") for name in serve.input_signature[0])


@kbert_export("kbert.export_task")
def export_task(model_dir, out_dir, warmup: bool = True, overwrite: bool = False, long_documents=None,
                doc_stride=None) -> pathlib.Path:
    """Exports a fine-tuned model as a TF Serving SavedModel that takes raw strings.

    The signatures (``serving_default`` and the task type's others) take text and return labels,
    scores or answers; warm-up requests are written to ``assets.extra`` and
    ``saved_models/models.config`` lists every export beside it.

    Args:
        model_dir: a fine-tuned model directory.
        out_dir: the SavedModel's folder (``saved_models/NAME/VERSION``), written whole: an earlier
            kbert export there is replaced, anything else refused unless ``overwrite``.
        warmup: write TF Serving warm-up requests.
        overwrite: replace a folder that holds something else.
        long_documents: ``"truncate"``, ``"windows"`` or ``"sentences"`` instead of what the model
            directory recorded (kbert.tasks.core.windows); with windows (sentences) the signature cuts
            (splits, kbert.text.sentences) each string in the graph and answers once per string.
        doc_stride: the windows' stride instead of the recorded one.

    Returns:
        ``out_dir``, a ``pathlib.Path``.

    Examples:
        >>> import kbert
        >>> model = kbert.TextClassifier.from_model_dir(kbert.random_model_dir("runs/tiny"),
        ...                                             label_names=["negative", "positive"])
        >>> saved = model.save_model_dir("runs/tiny-classifier")
        >>> kbert.export_task(saved, "saved_models/tiny_classifier/1").name
        '1'
    """
    from kbert import model_dir as model_dir_lib
    from kbert.tasks import load_task_model
    from kbert.tasks.core.registry import named_task_of
    from kbert.tasks.core.windows import model_settings

    model_dir, out_dir = pathlib.Path(model_dir), pathlib.Path(out_dir)
    settings = {}
    if long_documents is not None or doc_stride is not None:
        task_meta = model_dir_lib.read_metadata(model_dir).get("task") or {}
        if "type" in task_meta:
            settings = model_settings(task_type_for_model(task_meta["type"]), task_meta, long_documents, doc_stride)
    model = load_task_model(model_dir, **settings)
    module = _TaskModule(model)
    task_type = task_type_for_model(model.task_type)
    serve, serve_ids = task_type.signatures(module)
    # A named task whose predictions take another form (klue/ner: a tag per character) serves that form.
    named = named_task_of(model_dir_lib.read_metadata(model_dir).get("task") or {})
    own = getattr(named.predictor, "signatures", None) if named is not None else None
    if own is not None and (signatures := own(module)) is not None:
        serve, serve_ids = signatures
    words = takes_words(model.tokenizer)
    if words and not _takes_words_itself(serve):  # MeCab runs in the client: the same graph, fed words
        serve = words_signature(serve)
    module.serve, module.serve_ids = serve, serve_ids
    with compat.tracing_for_save():  # each function traced once, not again by the save
        _add_keras_endpoints(module, serve)
        signatures = {"serving_default": serve.get_concrete_function(),
                      "serving_ids": serve_ids.get_concrete_function()}

    def write(tmp):
        tf.saved_model.save(module, str(tmp), signatures=signatures)
        if warmup:
            requests = task_type.warmup_inputs(model)
            if words:
                requests = [words_request(model.tokenizer, r) for r in requests]
            write_warmup_requests(tmp, out_dir.parent.name, "serving_default", requests)

    return write_export(out_dir, write, kind="task", source=model_dir, overwrite=overwrite)
