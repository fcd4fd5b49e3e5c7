"""Running kbert's ONNX exports in ONNX Runtime: sessions, the export's record, and the network
runner that ``kbert predict --onnx`` gives a task model (``TaskModel.network_runner``), so that the
model's own host code (tokenizer, windows, word alignment, answer selection) writes the same
predictions file with ONNX Runtime computing the network.
"""

from __future__ import annotations

import hashlib
import json
import pathlib

import numpy as np

from kbert.errors import Error, MissingExtra
from kbert.models.encoder import INPUT_NAMES

METADATA_FILE = "kbert_onnx.json"
MODEL_FILE = "model.onnx"
INT8_FILE = "model.int8.onnx"
TOKENIZER_FILE = "tokenizer.json"
# What a task model's ``call`` returns, by model type: the ONNX outputs that hold it.
CALL_OUTPUTS = {"text_classifier": "logits", "text_regressor": "scores", "multi_label_classifier": "logits",
                "token_tagger": "logits", "span_qa": ("start_logits", "end_logits"), "multiple_choice": "logits"}
# Each window's log total attention weight, beside the logits of a model that pools by attention
# (kbert.export.onnx.heads.pooled_features).
WINDOW_WEIGHTS = "window_weights"
NOT_INSTALLED = "needs the onnx extra (onnx, onnxruntime): pip install 'kbert[onnx]'"


class OnnxExportError(Error, ValueError):
    """An ONNX export that cannot be made or does not fit what is asked of it (another model's export,
    a graph that differs from the Keras model); the message names the file and what differs."""


def onnxruntime():
    """``onnxruntime``, or an ImportError naming the extra it comes in."""
    try:
        import onnxruntime
    except ImportError:
        raise MissingExtra(f"the ONNX export {NOT_INSTALLED}", extra="onnx", name="onnxruntime") from None
    return onnxruntime


def session(path, threads: int | None = None):
    """An ONNX Runtime CPU session of ``path``: all graph optimizations, ``threads`` intra-op threads
    (None: ONNX Runtime's default, one per core), one inter-op thread."""
    ort = onnxruntime()
    options = ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = int(threads)
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def locate(path) -> tuple:
    """(export folder, .onnx file) for an export folder (its model.onnx) or one .onnx file in it."""
    path = pathlib.Path(path)
    folder, file = (path, path / MODEL_FILE) if path.is_dir() else (path.parent, path)
    if not (folder / METADATA_FILE).is_file():
        raise OnnxExportError(f"{path}: not a kbert ONNX export (no {METADATA_FILE} in {folder}); "
                              "make one with kbert export onnx MODEL_DIR OUT")
    if not file.is_file():
        raise OnnxExportError(f"{file} does not exist")
    return folder, file


def read_metadata(folder) -> dict:
    return json.loads((pathlib.Path(folder) / METADATA_FILE).read_text(encoding="utf-8"))


def fingerprints(model_dir) -> dict:
    """sha256 of the model directory's weight files and kbert.json: what an export was made from."""
    model_dir = pathlib.Path(model_dir)
    files = sorted(p for p in model_dir.iterdir() if p.name.endswith(".weights.h5") or p.name == "kbert.json")
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


class OnnxRunner:
    """``runner(batch)``: a task model's ``call`` outputs (numpy) for a batch of packed ids, computed
    by ONNX Runtime; a multiple-choice batch is [rows, choices, width], the others [rows, width].
    The export of a model that pools windows by attention answers (logits, window weights) per row:
    what ``window_inputs.combine_numpy(..., "attention", weights)`` takes to pool a document."""

    def __init__(self, path, model_type: str, threads: int | None = None):
        self.session = session(path, threads)
        self.outputs = CALL_OUTPUTS[model_type]
        self.window_weights = WINDOW_WEIGHTS in {o.name for o in self.session.get_outputs()}

    def __call__(self, batch: dict):
        feeds = {name: np.asarray(batch[name], dtype=np.int32) for name in INPUT_NAMES}
        if isinstance(self.outputs, tuple):
            return dict(zip(self.outputs, self.session.run(list(self.outputs), feeds)))
        if self.window_weights:
            return tuple(self.session.run([self.outputs, WINDOW_WEIGHTS], feeds))
        return self.session.run([self.outputs], feeds)[0]


def runner_for(model, model_dir, path, threads: int | None = None) -> OnnxRunner:
    """The ``network_runner`` of ``model`` (loaded from ``model_dir``) from the export at ``path``; an
    export of another model type or of other files is refused, naming what differs."""
    folder, file = locate(path)
    record = read_metadata(folder)
    if record.get("model_type") != model.task_type:
        raise OnnxExportError(f"{folder / METADATA_FILE}: the export holds a {record.get('model_type')} model, "
                              f"{model_dir} a {model.task_type} model")
    made_from = record.get("fingerprints") or {}
    differs = [name for name, digest in fingerprints(model_dir).items() if made_from.get(name) != digest]
    if differs:
        raise OnnxExportError(f"{folder} was exported from other files than {model_dir} ({', '.join(differs)} "
                              "differ): export it again with kbert export onnx")
    return OnnxRunner(file, model.task_type, threads)
