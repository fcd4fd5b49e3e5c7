"""``kbert export onnx MODEL_DIR OUT``: a model directory (any task type, or a bare encoder) as an
ONNX file for ONNX Runtime, checked against the Keras model when it is written.

OUT is a folder, written whole (kbert.model_dir.replace_dir):

  model.onnx       the graph (kbert.export.onnx.task_graph): ids in, the task's answers out
  model.int8.onnx  with ``quantize="int8"``: ONNX Runtime's dynamic int8 quantization of it (not
                   exact: its agreement with model.onnx is measured and recorded)
  tokenizer.json   where a Hugging Face ``tokenizers`` file gives kbert's ids exactly
                   (kbert.export.onnx.tokenizer_json); otherwise none, and the reason is recorded
  kbert_onnx.json  what was written and with what: model type and task settings, form, ONNX opset,
                   the onnx and onnxruntime versions it was checked with, inputs and outputs, the
                   check's differences, the tokenizer's outcome, the model directory's fingerprints
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import pathlib

import numpy as np

from kbert.export.onnx import runtime
from kbert.export.onnx.encoder import FORMS
from kbert.export.onnx.graph import MS_OPSET, OPSET, onnx_module
from kbert.export.onnx.task_graph import build_graph, input_dims, keras_outputs
from kbert.export.onnx.tokenizer_json import TokenizerFile, request_kind, tokenizer_file
from kbert.api_export import kbert_export
from kbert.errors import OptionsError

QUANTIZE = ("int8",)
CHECK_LIMIT = 1e-4  # the export fails where the check differs more (a wrong graph, not rounding)
ENCODER_CHECK_LENGTH = 128
# The numeric outputs compared with Keras, and the answers compared with int8's.
ANSWERS = {"text_classifier": ("class_ids",), "text_regressor": (), "multi_label_classifier": ("predictions",),
           "token_tagger": ("token_tag_ids",), "span_qa": ("best_start", "best_end"),
           "multiple_choice": ("choice_ids",), "encoder": ()}
VALUES = {"text_classifier": "probabilities", "text_regressor": "scores", "multi_label_classifier": "probabilities",
          "token_tagger": "token_probabilities", "span_qa": "start_logits", "multiple_choice": "probabilities",
          "encoder": "pooled_output"}


@dataclasses.dataclass
class OnnxExport:
    """What ``kbert.export_onnx`` wrote.

    Attributes:
        path: the export folder.
        model_type: the task model's type, or ``"encoder"``.
        differences: the largest absolute difference from the Keras model on the check's rows, per
            output (per-position outputs at real positions only).
        tokenizer: the ``tokenizer.json`` check's outcome (``text`` written, or ``reason``).
        int8: with quantization: ``agreement`` (share of equal answers) and ``max_difference`` of the
            int8 file against model.onnx on 32 rows of random ids.
    """

    path: pathlib.Path
    model_type: str
    differences: dict
    tokenizer: TokenizerFile
    int8: dict | None = None


@kbert_export("kbert.export_onnx")
def export_onnx(model_dir, out_dir, form: str = "ort", quantize: str | None = None, tokenizer: bool = True,
                overwrite: bool = False) -> OnnxExport:
    """Exports a model directory as ONNX: ids in, the task's answers out, checked against Keras.

    Args:
        model_dir: a fine-tuned model directory (any task type) or a pre-trained one (the encoder).
        out_dir: the export folder (model.onnx, kbert_onnx.json, tokenizer.json where exact), written
            whole; an earlier ONNX export there is replaced, anything else refused unless ``overwrite``.
        form: ``"ort"`` (ONNX Runtime's fused transformer kernels) or ``"standard"`` (plain ONNX
            opset-17 operators, for other runtimes).
        quantize: ``"int8"`` also writes model.int8.onnx (dynamic quantization) and measures it.
        tokenizer: write tokenizer.json where it reproduces kbert's ids (checked on a built-in sample).
        overwrite: replace a folder that holds something else.

    Returns:
        A ``kbert.export.onnx.export.OnnxExport``.

    Raises:
        ImportError: the ``onnx`` extra (onnx, onnxruntime) is not installed.
        kbert.OptionsError: ``form`` or ``quantize`` is not one of the above.
        kbert.export.onnx.runtime.OnnxExportError: the model directory's encoder is causal (a
            left-to-right language model, or a model fine-tuned from one): the graph's attention
            takes the padding mask only, so it would be another model.
        kbert.export.onnx.runtime.OnnxExportError: the graph's outputs differ from the Keras model's
            on the check's rows by more than ``CHECK_LIMIT`` (named in the message); nothing is written.
            Also a model these graphs do not build: a BiLSTM between encoder and head (``bilstm``,
            ``features``; export it as a TF SavedModel).

    Examples:
        >>> import kbert
        >>> model = kbert.TextClassifier.from_model_dir(kbert.random_model_dir("runs/tiny"),
        ...                                             label_names=["negative", "positive"], seq_length=32)
        >>> saved = model.save_model_dir("runs/tiny-classifier")
        >>> export = kbert.export_onnx(saved, "runs/tiny-classifier-onnx")
        >>> sorted(p.name for p in export.path.iterdir())
        ['kbert_onnx.json', 'model.onnx', 'tokenizer.json']
        >>> export.differences["logits"] < 1e-5
        True
    """
    from kbert.model_dir import check_output, is_causal, replace_dir

    if is_causal(model_dir):
        raise runtime.OnnxExportError(causal_refusal(model_dir))
    onnx, ort = onnx_module(), runtime.onnxruntime()
    if form not in FORMS:
        raise OptionsError(f"form must be one of {', '.join(FORMS)}, got {form!r}", option="form", value=form)
    if quantize not in (None, *QUANTIZE):
        raise OptionsError(f"quantize must be one of {', '.join(QUANTIZE)} or None, got {quantize!r}",
                           option="quantize", value=quantize)
    model_dir, out_dir = pathlib.Path(model_dir), pathlib.Path(out_dir)
    check_output(out_dir, [model_dir], overwrite=overwrite, replaceable=is_onnx_export)
    model, tok = _load(model_dir)
    if getattr(model, "long_documents", None) == "sentences":  # the split is text work, no tokenizer.json holds it
        raise runtime.OnnxExportError(f"{model_dir}: a model of --long-documents sentences splits each text into "
                                      "sentences before its network, which an ONNX export cannot carry: export "
                                      "the TF SavedModel (kbert export task), which splits in its graph")
    model_type = getattr(model, "task_type", None) or "encoder"
    try:
        proto = build_graph(model, form, producer_version=_kbert_version())
    except runtime.OnnxExportError as e:  # a head these graphs do not build: name the directory
        raise runtime.OnnxExportError(f"{model_dir}: {e}") from None
    result = OnnxExport(out_dir, model_type, {}, TokenizerFile(None, "not asked for (tokenizer=False)"))

    def fill(tmp):
        tmp.mkdir()
        onnx.save(proto, str(tmp / runtime.MODEL_FILE))
        session = runtime.session(tmp / runtime.MODEL_FILE)
        result.differences = _checked(model_dir, model, session)
        if tokenizer:
            result.tokenizer = _tokenizer_file(model, tok)
            if result.tokenizer.text is not None:
                (tmp / runtime.TOKENIZER_FILE).write_text(result.tokenizer.text, encoding="utf-8")
        if quantize:
            result.int8 = _quantize(tmp, session, model, model_type)
        record = _record(proto, model, model_type, form, model_dir, result, onnx.__version__, ort.__version__)
        (tmp / runtime.METADATA_FILE).write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n",
                                                 encoding="utf-8")

    replace_dir(out_dir, fill)
    return result


def _checked(model_dir, model, session) -> dict:
    """The export's check: the largest difference per output from the Keras model on ``check_feeds``'
    rows; an OnnxExportError naming the outputs that are missing, of another shape, or further than
    CHECK_LIMIT from the Keras model's."""
    feeds = check_feeds(model)
    expected, got = keras_outputs(model, feeds), _run(session, feeds)
    kind = getattr(model, "task_type", None) or "encoder"
    if getattr(model, "long_documents", None) == "windows" and getattr(model, "window_pooling", None):
        kind += f" (long_documents windows, window_pooling {model.window_pooling})"
    graph = f"{model_dir}: the ONNX graph of this {kind} model"
    for name, want in expected.items():
        shape = list(np.shape(want))
        if name not in got:
            raise runtime.OnnxExportError(f"{graph} has no output {name!r}, which the Keras model gives "
                                          f"(shape {shape}): not written")
        if list(np.shape(got[name])) != shape:
            raise runtime.OnnxExportError(f"{graph} gives {name!r} of shape {list(np.shape(got[name]))}, the Keras "
                                          f"model of shape {shape}: not written")
    found = differences(expected, got, feeds["input_mask"])
    over = {name: value for name, value in found.items() if not value <= CHECK_LIMIT}  # NaN too
    if over:
        raise runtime.OnnxExportError(
            f"{graph} differs from the Keras model on the check's rows ("
            + ", ".join(f"{name} by {value:.3g}" for name, value in over.items())
            + f"; at most {CHECK_LIMIT:g} is allowed): not written")
    return found


def _kbert_version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("kbert")
    except importlib.metadata.PackageNotFoundError:
        return ""


def causal_refusal(what) -> str:
    """Why ``what`` (a model directory, or a model) has no ONNX export: its causal encoder."""
    return (f"{what} has a causal (left-only) encoder, which the ONNX export cannot express: its attention takes "
            "the padding mask only, so the graph would be another model (export a TF SavedModel instead: kbert "
            "export)")


def is_onnx_export(path) -> bool:
    """Whether ``path`` is a folder an ONNX export may replace whole: an earlier one, or empty."""
    path = pathlib.Path(path)
    return path.is_dir() and not path.is_symlink() and ((path / runtime.METADATA_FILE).is_file()
                                                        or not any(path.iterdir()))


def _load(model_dir):
    """(task model or encoder, tokenizer) of a model directory."""
    from kbert import model_dir as model_dir_lib
    from kbert.tasks import load_task_model
    from kbert.text.registry import load_tokenizer

    if (model_dir_lib.read_metadata(model_dir).get("task") or {}).get("type"):
        model = load_task_model(model_dir)
        return model, model.tokenizer
    return model_dir_lib.load_encoder(model_dir), load_tokenizer(model_dir)


def _seq_length(model) -> int:
    task = getattr(model, "task_type", None)
    return model.seq_length if task else min(ENCODER_CHECK_LENGTH, model.config.max_position_embeddings)


def check_feeds(model, rows: int = 4, seed: int = 0) -> dict:
    """Random ids at the model's length: full, half, one position ([CLS] alone) and three; type 1 on
    the second half of each row's real positions (the context of a pair)."""
    config = getattr(model, "encoder", model).config
    width = _seq_length(model)
    lengths = np.resize([width, max(width // 2, 1), 1, min(3, width)], rows)
    if getattr(model, "task_type", None) == "multiple_choice":
        lengths = np.stack([lengths, lengths[::-1]], axis=1)  # [rows, 2 choices]
    positions = np.arange(width)
    mask = positions < lengths[..., None]
    types = mask & (positions >= (lengths // 2)[..., None]) & (config.type_vocab_size > 1)
    ids = np.random.default_rng(seed).integers(0, config.vocab_size, mask.shape) * mask
    return {"input_word_ids": ids.astype(np.int32), "input_mask": mask.astype(np.int32),
            "input_type_ids": types.astype(np.int32)}


def _run(session, feeds) -> dict:
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds)))


def differences(expected: dict, got: dict, mask) -> dict:
    """Largest absolute difference per output of ``expected``; per-position outputs at real positions."""
    mask = np.asarray(mask).astype(bool)
    result = {}
    for name, want in expected.items():
        diff = np.abs(np.asarray(got[name], np.float64) - np.asarray(want, np.float64))
        if diff.shape[:mask.ndim] == mask.shape:
            diff = diff[mask]
        result[name] = float(diff.max()) if diff.size else 0.0
    return result


def _tokenizer_file(model, tok) -> TokenizerFile:
    from kbert.export.onnx.tokenizer_json import Unexpressible
    from kbert.text import BertPreprocessor

    try:
        kind = request_kind(model)
    except Unexpressible as e:
        return TokenizerFile(None, str(e))
    if kind == "words":  # a tagger: its own features of pre-split words
        return tokenizer_file(tok, lambda words: model.features(model.pieces(words=words))[0], kind,
                              model.seq_length)
    task = getattr(model, "task_type", None)
    seq_length = model.seq_length if task else model.config.max_position_embeddings
    preprocessor = model.preprocessor if task else BertPreprocessor(tok, seq_length=seq_length)
    return tokenizer_file(tok, lambda batch: preprocessor(batch if kind == "pair" else [batch]), kind, seq_length)


def _quantize(folder, session, model, model_type) -> dict:
    """model.int8.onnx (ONNX Runtime's dynamic int8 quantization) and its agreement with model.onnx
    on 32 rows of random ids (measure it on real rows with ``kbert predict --onnx``)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # Per-channel weight scales: answers closer to the float model's than one scale per tensor
    # (docs/bench/onnx-2026-12-05).
    # The contrib ops' outputs have no inferred type: the quantizer is told they are float.
    with _root_logger_quiet():
        quantize_dynamic(str(folder / runtime.MODEL_FILE), str(folder / runtime.INT8_FILE),
                         weight_type=QuantType.QInt8, per_channel=True,
                         extra_options={"DefaultTensorType": onnx_module().TensorProto.FLOAT})
    int8 = runtime.session(folder / runtime.INT8_FILE)
    feeds = check_feeds(model, rows=32, seed=1)
    full, low = _run(session, feeds), _run(int8, feeds)
    mask = feeds["input_mask"].astype(bool)
    value = VALUES[model_type]
    diff = differences({value: full[value]}, low, mask)[value]
    answers = ANSWERS[model_type]
    agree = None
    if answers:
        same = np.all([full[a] == low[a] for a in answers], axis=0)
        if same.shape == mask.shape:
            same = same[mask]
        agree = float(np.mean(same))
    return {"file": runtime.INT8_FILE, "rows": int(len(mask)), "agreement": agree, "max_difference": diff,
            "compared": f"{'/'.join(answers) or value} of model.int8.onnx vs model.onnx on 32 rows of random ids"}


@contextlib.contextmanager
def _root_logger_quiet():
    """The quantizer's advice to pre-process the model first (about static quantization), which it
    logs with ``logging.warning`` on the root logger, kept out of the process's log, and the process's
    logging left as it was: only the root logger's own records up to WARNING are dropped, and a root
    logger without handlers gets a NullHandler meanwhile, so that ``logging.warning`` does not
    configure it (``logging.basicConfig``)."""
    root = logging.getLogger()

    def drop(record):
        return record.levelno > logging.WARNING

    placeholder = logging.NullHandler() if not root.handlers else None
    if placeholder is not None:
        root.addHandler(placeholder)
    root.addFilter(drop)
    try:
        yield
    finally:
        root.removeFilter(drop)
        if placeholder is not None:
            root.removeHandler(placeholder)


def _record(proto, model, model_type, form, model_dir, result, onnx_version, ort_version) -> dict:
    def described(values):
        return {v.name: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim] for v in values}

    task = model.task_metadata() if hasattr(model, "task_metadata") else None
    tokenizer = ({"file": runtime.TOKENIZER_FILE} if result.tokenizer.text is not None
                 else {"file": None, "reason": result.tokenizer.reason})
    return {"kind": "onnx", "source": str(model_dir), "model_type": model_type, "task": task, "form": form,
            "opset": OPSET, "contrib_opset": MS_OPSET if form == "ort" else None,
            "checked_with": {"onnx": onnx_version, "onnxruntime": ort_version},
            "inputs": described(proto.graph.input), "outputs": described(proto.graph.output),
            "input_dims": input_dims(getattr(model, "task_type", None)),
            "check": {"rows": 4, "max_abs_difference": result.differences},
            "tokenizer": {**tokenizer, "checked_requests": result.tokenizer.checked},
            "int8": result.int8, "fingerprints": runtime.fingerprints(model_dir)}
