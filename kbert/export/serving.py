"""TF Serving conventions for exports: versioned directories, warm-up requests and models.config.

* Layout: ``saved_models/NAME/VERSION/`` (TF Serving loads the highest VERSION of each NAME).
* Warm-up: ``VERSION/assets.extra/tf_serving_warmup_requests``, a TFRecord of
  ``PredictionLog`` protos (tensorflow-serving-api) that the server replays at load time, so the
  first real request does not pay for graph initialisation.
* ``models.config``: a ModelServerConfig text proto listing every model under ``saved_models/``;
  entries already in it (hand edits included) are kept as written, models not yet listed added.
* Every export is written whole into a temporary folder beside ``VERSION`` and renamed into place
  (``write_export``): an export over an earlier one replaces it whole (no old warm-ups or
  fingerprint left beside a new graph), an interrupted one leaves the old version (or nothing).
  A folder that is not a kbert export (no ``assets.extra/kbert_export.json``) is not replaced
  without ``overwrite``, and a folder that is, or holds, the model directory never.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import tensorflow as tf
from google.protobuf import text_format

from kbert.model_dir import ModelDirError, atomic_write, check_output, replace_dir

WARMUP_FILE = "tf_serving_warmup_requests"
EXPORT_MARKER = "kbert_export.json"  # in assets.extra: what wrote this version (write_export)


def is_kbert_export(path) -> bool:
    """Whether ``path`` is a version folder written by ``write_export`` (or an empty folder): one
    an export may replace whole without ``overwrite``."""
    path = pathlib.Path(path)
    if path.is_symlink() or not path.is_dir():
        return False
    return (path / "assets.extra" / EXPORT_MARKER).is_file() or not any(path.iterdir())


def write_export(out_dir, write, *, kind: str, source, overwrite: bool = False) -> pathlib.Path:
    """Writes an export with ``write(tmp)`` (which creates the SavedModel folder ``tmp``) and puts it
    at ``out_dir`` whole (kbert.model_dir.replace_dir), with ``assets.extra/kbert_export.json``.

    Refused (OutputExistsError, nothing written) where ``out_dir`` is or holds ``source`` (the model
    directory or vocabulary), or exists and is not a kbert export, unless ``overwrite``.
    """
    out_dir = pathlib.Path(out_dir)
    check_output(out_dir, [source], overwrite=overwrite, replaceable=is_kbert_export)

    def fill(tmp):
        write(tmp)
        extra = pathlib.Path(tmp) / "assets.extra"
        extra.mkdir(exist_ok=True)
        (extra / EXPORT_MARKER).write_text(json.dumps({"kind": kind, "source": str(source)}) + "\n",
                                           encoding="utf-8")

    return replace_dir(out_dir, fill)


def write_warmup_requests(export_dir, model_name: str, signature_name: str, requests: list[dict]) -> pathlib.Path:
    """Writes ``requests`` (each a dict input name -> array-like) as PredictionLogs."""
    return write_warmup_requests_for(export_dir, model_name, [(signature_name, r) for r in requests])


def write_warmup_requests_for(export_dir, model_name: str, requests: list[tuple[str, dict]]) -> pathlib.Path:
    """Writes ``(signature_name, inputs)`` pairs as PredictionLogs (one file for all signatures)."""
    from tensorflow_serving.apis import model_pb2, predict_pb2, prediction_log_pb2

    extra = pathlib.Path(export_dir) / "assets.extra"
    extra.mkdir(parents=True, exist_ok=True)
    path = extra / WARMUP_FILE
    with tf.io.TFRecordWriter(str(path)) as writer:
        for signature_name, inputs in requests:
            request = predict_pb2.PredictRequest(
                model_spec=model_pb2.ModelSpec(name=model_name, signature_name=signature_name)
            )
            for name, value in inputs.items():
                request.inputs[name].CopyFrom(tf.make_tensor_proto(np.asarray(value)))
            log = prediction_log_pb2.PredictionLog(predict_log=prediction_log_pb2.PredictLog(request=request))
            writer.write(log.SerializeToString())
    return path


class ModelsConfigError(ModelDirError):
    """A ``models.config`` that kbert cannot add models to: not a TF Serving ModelServerConfig, or
    one whose model_config_list's end it cannot find. The message names the file."""


def write_models_config(root="saved_models") -> pathlib.Path:
    """``models.config`` for ``tensorflow_model_server --model_config_file=...``: one entry per
    ``root/NAME/`` that holds at least one numbered version. An existing file keeps every entry it
    has, as written (hand edits, comments, version policies survive); models it does not list yet
    are added before its model_config_list's closing ``}``. A file that is not a model_config_list
    is refused (ModelsConfigError), not replaced. Also writes ``batching_parameters.txt`` where
    there is none."""
    from tensorflow_serving.config import model_server_config_pb2

    root = pathlib.Path(root)
    found = []
    for model in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if any(v.name.isdigit() and (v / "saved_model.pb").exists() for v in model.iterdir()):
            found.append(model.name)
    path = root / "models.config"
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else None
    except UnicodeDecodeError as e:
        raise ModelsConfigError(f"{path} is not UTF-8 text (byte {e.start}); fix it or move it away, "
                                "it is not replaced") from None
    config = _read_models_config(path, text) if text is not None else model_server_config_pb2.ModelServerConfig()
    listed = {c.name for c in config.model_config_list.config}
    new = [model_server_config_pb2.ModelConfig(name=name, base_path=f"/models/{name}", model_platform="tensorflow")
           for name in found if name not in listed]
    if text is None:
        config.model_config_list.SetInParent()
        config.model_config_list.config.extend(new)
        header = "".join(f"# {line}\n" for line in SERVER_FLAGS_NOTE)
        _atomic_write(path, header + text_format.MessageToString(config))
    elif new:
        _atomic_write(path, _with_models_added(path, text, config, new))
    if not (root / BATCHING_FILE).exists():  # hand-tuned settings are the user's
        write_batching_parameters(root)
    return path


def _read_models_config(path, text: str):
    """``text`` parsed by protobuf's text format parser as TF Serving's ModelServerConfig."""
    from tensorflow_serving.config import model_server_config_pb2

    try:
        config = text_format.Parse(text, model_server_config_pb2.ModelServerConfig())
    except text_format.ParseError as e:
        problem = " ".join(str(e).splitlines())
        raise ModelsConfigError(f"{path} is not a TF Serving model config ({problem}); fix it or move it away, "
                                "it is not replaced") from None
    if config.WhichOneof("config") not in (None, "model_config_list"):
        raise ModelsConfigError(f"{path} holds a {config.WhichOneof('config')}, not a model_config_list; "
                                "add the new models by hand")
    return config


def _with_models_added(path, text: str, config, new: list) -> str:
    """``text`` (which parses as ``config``) with the ModelConfig messages ``new`` added at the end of
    its model_config_list; everything else in it is kept as written.

    The entries are written by protobuf's text format; the file is not rewritten whole with it because
    that would drop the user's comments and layout. The place is found by the parser: the last ``}``
    before which the new entries make the file parse as the old list followed by the new (a ``}`` in a
    comment after the list is passed over). A file with no list yet gets one after its text.
    """
    entries = "".join("  config {\n" + text_format.MessageToString(c, indent=4) + "  }\n" for c in new)
    if not config.HasField("model_config_list"):  # empty, or comments only
        return text + ("\n" if text and not text.endswith("\n") else "") + "model_config_list {\n" + entries + "}\n"
    expected = type(config)()
    expected.CopyFrom(config)
    expected.model_config_list.config.extend(new)
    end = len(text)
    while (end := text.rfind("}", 0, end)) >= 0:
        candidate = text[:end] + entries + text[end:]
        try:
            if text_format.Parse(candidate, type(config)()) == expected:
                return candidate
        except text_format.ParseError:
            pass
    raise ModelsConfigError(f"{path}: cannot tell where its model_config_list ends (it must close with "
                            "'}'); add the new models by hand")


# TensorFlow Serving's flags for these exports (docs/serving.md, "Serving latency"): the comment at the top
# of models.config. The thread values suit a 2-core CPU machine (kbert.bench serve; set yours).
SERVER_FLAGS_NOTE = (
    "tensorflow_model_server --model_config_file=models.config \\",
    "  --tensorflow_intra_op_parallelism=<cores> --tensorflow_inter_op_parallelism=1 \\",
    "  --enable_batching --batching_parameters_file=batching_parameters.txt",
    "Add --xla_cpu_compilation_enabled=true where an export has the serving_xla signature",
    "(kbert.export encoder --xla-signature): without it that signature, and its warm-up request, fail.",
)

# TF Serving's --enable_batching settings (BatchingParameters text proto), chosen with
# ``kbert.bench serve --concurrency 1,8`` (docs/serving.md, "Serving latency"): batches of up to 32 rows; no
# waiting for a batch to fill (timeout 0: requests that queued while the previous batch ran go
# together, so one client alone is not delayed); one batch thread, since the model's intra-op
# threads already use every core; variable-length id inputs padded to the batch's longest.
BATCHING_PARAMETERS = {
    "max_batch_size": 32,
    "batch_timeout_micros": 0,
    "num_batch_threads": 1,
    "max_enqueued_batches": 100,
}
BATCHING_FILE = "batching_parameters.txt"


def write_batching_parameters(root, parameters=None) -> pathlib.Path:
    """``root/batching_parameters.txt`` for ``--enable_batching --batching_parameters_file=...``."""
    parameters = dict(BATCHING_PARAMETERS, **(parameters or {}))
    # Formatted here, not by protobuf's text_format: tensorflow-serving-api does not ship the
    # BatchingParameters message (session_bundle_config_pb2). The tests parse the file against TF
    # Serving's definition of it (tests/fixtures/tf_serving_protos.py).
    lines = ["# TF Serving server-side batching (kbert.export.serving.BATCHING_PARAMETERS)"]
    lines += [f"{key} {{ value: {value} }}" for key, value in parameters.items()]
    lines.append("pad_variable_length_inputs: true")
    path = pathlib.Path(root) / BATCHING_FILE
    _atomic_write(path, "\n".join(lines) + "\n")
    return path


def _atomic_write(path: pathlib.Path, text: str):
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
