"""``kbert convert to-hf``: a model directory as a Hugging Face folder that transformers loads.

Which transformers class holds the model:

  no task, MLM and NSP heads   BertForPreTraining (fill-mask works in transformers' pipeline)
  no task, MLM head only       BertForMaskedLM (the pooler is kept for kbert; transformers ignores it)
  no task, NSP head only       BertForNextSentencePrediction
  no task, no heads            BertModel
  text_classifier              BertForSequenceClassification, problem_type single_label_classification
  text_regressor               BertForSequenceClassification, problem_type regression (1 label)
  multi_label_classifier       BertForSequenceClassification, problem_type multi_label_classification
  token_tagger                 BertForTokenClassification (no pooler: the tagger never reads it)
  span_qa                      BertForQuestionAnswering (no pooler)
  multiple_choice              BertForMultipleChoice

``id2label``/``label2id`` are kbert's label names. What a transformers user does not get is said in
the folder's record (``kbert_to_hf.json``, ``notes``) and returned: kbert's long-document windows
(the per-window model is exact; the combination of a document's windows is kbert's), span QA's
answer decoding (transformers' question-answering pipeline decodes its own way, and kbert's logits at
padding are -10000). Attention pooling (``window_pooling="attention"``) is refused: its head reads the
tokens, not [CLS], which no transformers class does; so is any head with weights besides its one dense
layer (a BiLSTM, the feature-based approach). A causal (left-to-right) encoder is refused:
transformers' BERT attends both ways.
"""

from __future__ import annotations

import pathlib

from kbert.api_export import kbert_export
from kbert.convert.names import ConversionError, encoder_variables, export_arrays, head_variables
from kbert.convert.to_hf import RECORD_FILE, hf_config, hf_state, tokenizer_files, write_hf_folder

# kbert.json task.type -> (transformers class, problem_type or None)
TASK_CLASSES = {
    "text_classifier": ("BertForSequenceClassification", "single_label_classification"),
    "text_regressor": ("BertForSequenceClassification", "regression"),
    "multi_label_classifier": ("BertForSequenceClassification", "multi_label_classification"),
    "token_tagger": ("BertForTokenClassification", None),
    "span_qa": ("BertForQuestionAnswering", None),
    "multiple_choice": ("BertForMultipleChoice", None),
}
# The head's dense layer under transformers' name.
_HEAD_KEY = {"span_qa": "qa_outputs"}
_NO_POOLER = ("token_tagger", "span_qa")


@kbert_export("kbert.convert_to_hf")
def convert_to_hf(model_dir, out, *, overwrite: bool = False, check: bool = False) -> pathlib.Path:
    """Writes a model directory as a Hugging Face folder: ``config.json``, ``model.safetensors``,
    ``vocab.txt``, ``tokenizer_config.json``, ``special_tokens_map.json`` and ``kbert_to_hf.json``.

    The encoder and its pre-training heads become ``BertForPreTraining`` (or ``BertModel`` without
    heads); a fine-tuned task model the ``BertFor...`` class of its task (see the module). No torch
    is needed to write it. ``kbert.convert_hf`` reads the folder back with the same weights.

    Args:
        model_dir: a kbert model directory (pre-trained or fine-tuned).
        out: the folder to write; one that holds files is refused unless ``overwrite``.
        overwrite: replace the content of an existing ``out``, whole.
        check: load ``out`` with transformers (torch and transformers needed) and compare ids and
            outputs with kbert's (``check_to_hf``); a difference raises.

    Returns:
        ``out``, a ``pathlib.Path``.

    Raises:
        kbert.ConversionError: a model transformers cannot hold exactly (a causal encoder, attention
            pooling, a SentencePiece tokenizer), an output that exists, a failed check.

    Examples:
        >>> import kbert, json
        >>> out = kbert.convert_to_hf(kbert.random_model_dir("runs/tiny"), "runs/tiny-hf", overwrite=True)
        >>> sorted(p.name for p in out.iterdir())[:3]
        ['config.json', 'kbert_to_hf.json', 'model.safetensors']
        >>> json.loads((out / "config.json").read_text())["architectures"], kbert.convert_hf(out, "runs/tiny-back",
        ...     overwrite=True).name
        (['BertForPreTraining'], 'tiny-back')
    """
    from kbert.model_dir import check_files, is_causal, read_metadata, read_tokenizer_spec, resolve_file

    model_dir = pathlib.Path(model_dir)
    check_files(model_dir)
    if is_causal(model_dir):
        raise ConversionError(f"{model_dir} has a causal (left-only) encoder; transformers' BertModel attends both "
                              "ways, so it would be another model: not converted")
    task = read_metadata(model_dir).get("task")
    state, config, architecture, fields, notes = (_task_model(model_dir) if task else _pretrained(model_dir))
    spec = read_tokenizer_spec(model_dir)
    vocab_file = resolve_file(model_dir, spec.vocab_file)
    files, tokenizer_notes = tokenizer_files(spec, vocab_file, config.max_position_embeddings)
    vocab = vocab_file.read_text(encoding="utf-8").splitlines()
    config_json = hf_config(config, architecture, vocab.index("[PAD]"), **fields)
    record = {"source": str(model_dir), "kbert_version": _kbert_version(), "architecture": architecture,
              "tokenizer": spec.to_json(), "notes": notes + tokenizer_notes}
    out = write_hf_folder(out, config_json, state, vocab_file, files, record, inputs=[model_dir],
                          overwrite=overwrite)
    if check:
        from kbert.export.to_hf_check import check_to_hf, record_check

        report = check_to_hf(model_dir, out)
        record_check(out, report)
        if not report.passed:
            raise ConversionError(f"{out} does not reproduce {model_dir} in transformers: " + report.summary())
    return pathlib.Path(out)


def read_record(out) -> dict:
    """The folder's ``kbert_to_hf.json``."""
    import json

    return json.loads((pathlib.Path(out) / RECORD_FILE).read_text(encoding="utf-8"))


def _pretrained(model_dir):
    from kbert.model_dir import load_encoder, load_heads

    encoder = load_encoder(model_dir)
    variables = encoder_variables(encoder)
    heads = load_heads(model_dir, encoder.config)
    for name, head in heads.items():
        variables.update(head_variables(name, head))
    architecture = {frozenset(): "BertModel", frozenset({"mlm", "nsp"}): "BertForPreTraining",
                    frozenset({"mlm"}): "BertForMaskedLM", frozenset({"nsp"}): "BertForNextSentencePrediction"}
    architecture = architecture[frozenset(heads)]
    prefix = "" if architecture == "BertModel" else "bert."
    state = hf_state(export_arrays(variables), encoder.config.num_hidden_layers, prefix)
    notes = ["BertForMaskedLM has no pooler: transformers ignores bert.pooler.*, kept for kbert"] \
        if architecture == "BertForMaskedLM" else []
    return state, encoder.config, architecture, {}, notes


def _task_model(model_dir):
    from kbert.tasks.core.task_dir import load_task_model

    model = load_task_model(model_dir)
    kind = model.task_type
    if kind not in TASK_CLASSES:
        raise ConversionError(f"{model_dir}: task type {kind!r} has no transformers class (kbert knows "
                              f"{', '.join(TASK_CLASSES)})")
    architecture, problem_type = TASK_CLASSES[kind]
    if getattr(model, "window_pooling", None) == "attention" and getattr(model, "windows", False):
        raise ConversionError(f"{model_dir}: window_pooling 'attention' pools a document's tokens by a learned score "
                              "instead of reading [CLS]; no transformers class does that: not converted")
    _refuse_other_heads(model, model_dir)
    notes = []
    if getattr(model, "windows", False):
        notes.append(f"long_documents=windows: transformers gets the per-window model; kbert's combination of a "
                     f"text's windows ({getattr(model, 'window_pooling', 'max context')}) is not in the folder")
    if kind == "span_qa":
        notes.append("span QA: transformers' question-answering pipeline decodes answers its own way (kbert's "
                     "run_squad.py rules and in-graph decoding are not in the folder); logits at real tokens are "
                     "the same, kbert sets those at padding to -10000")
    config = model.encoder.config
    arrays = export_arrays(encoder_variables(model.encoder))
    if kind in _NO_POOLER:
        arrays = {k: v for k, v in arrays.items() if not k.startswith("bert/pooler/")}
    state = hf_state(arrays, config.num_hidden_layers, "bert.")
    dense = model.head.dense
    key = _HEAD_KEY.get(kind, "classifier")
    state[f"{key}.weight"] = _contiguous(dense.kernel.numpy().T)
    state[f"{key}.bias"] = _contiguous(dense.bias.numpy())
    fields = {"classifier_dropout": model.head.dropout_rate}
    labels = getattr(model, "label_names", None)
    if kind == "text_regressor":
        labels = ["LABEL_0"]
    if labels is None and kind in ("text_classifier", "multi_label_classifier"):
        labels = [f"LABEL_{i}" for i in range(dense.bias.shape[0])]
    if labels is not None:
        fields["id2label"] = {str(i): name for i, name in enumerate(labels)}
        fields["label2id"] = {name: i for i, name in enumerate(labels)}
    if problem_type:
        fields["problem_type"] = problem_type
    return state, config, architecture, fields, notes


def _refuse_other_heads(model, model_dir) -> None:
    """transformers' heads are one dense layer on [CLS]'s pooled output or on each token: a kbert head
    with more (a BiLSTM, the feature-based layer combination, attention pooling's score) has no class."""
    for attribute, setting, what in (
            ("bilstm", "bilstm", "a BiLSTM between the encoder and the dense layer"),
            ("combination", "features", "the feature-based approach (a frozen encoder's layers combined)")):
        if getattr(model, attribute, None):
            raise ConversionError(f"{model_dir}: {setting}={getattr(model, attribute)!r} is {what}, which no "
                                  "transformers BertFor... class holds: not converted")
    dense = model.head.dense
    own = {id(dense.kernel), id(dense.bias)}
    extra = [w.path if hasattr(w, "path") else w.name for w in model.head.weights if id(w) not in own]
    if extra:
        raise ConversionError(f"{model_dir}: the {model.task_type} head holds weights besides its dense layer "
                              f"({', '.join(extra)}), which no transformers BertFor... class holds: not converted")


def _kbert_version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("kbert")
    except importlib.metadata.PackageNotFoundError:
        return ""


def _contiguous(array):
    import numpy as np

    return np.ascontiguousarray(np.asarray(array, dtype=np.float32))
