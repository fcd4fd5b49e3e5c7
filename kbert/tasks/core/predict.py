"""``predict_file``: a fine-tuned task model over a file of unlabelled rows, one prediction per row
(the library behind ``kbert predict``; the formats are described there and in kbert.tasks.core.prediction).

The task type named in the model directory's kbert.json reads the input, predicts and formats; this
module checks the output path, the model directory and the rows' ids before the model is loaded.
"""

from __future__ import annotations

import pathlib
import time

from kbert import model_dir as model_dir_lib
from kbert.errors import DataError, OptionsError
from kbert.errors import TaskModelError
from kbert.tasks.core.prediction import PredictOptions, RowProgress, write_text
from kbert.tasks.core.registry import UnknownTaskError, named_task_of, task_type_for_model
from kbert.api_export import kbert_export


@kbert_export("kbert.predict_file")
def predict_file(model_dir, input_path, output_path, fmt=None, options=None, show_progress=False,
                 model=None, overwrite: bool = False, attention: str = "auto",
                 mixed_precision: str = "float32", network=None) -> dict:
    """Predicts every row of a file with a fine-tuned model and writes the answers.

    Args:
        model_dir: a fine-tuned model directory (``kbert.finetune``'s output).
        input_path: the rows: a table (CSV/TSV/JSONL), a GLUE TSV, a CoNLL file or SQuAD JSON,
            as the model's task type reads (``options.task_format``).
        output_path: the file to write, atomically (``fmt``: ``jsonl``, ``tsv``, ``glue``, ``squad``).
        fmt: the output format; None: the task's first (jsonl, or the benchmark's own form for a
            named task with a ``predictor``, e.g. KorQuAD's submission JSON).
        options: a ``kbert.PredictOptions`` (columns, ids, probabilities, batch size).
        show_progress: show a progress display.
        model: the directory's model if already loaded (``kbert.load_task_model``), to predict
            several files without reloading it.
        overwrite: replace an existing ``output_path`` (never the input or a file of the model).
        attention: the encoder's attention for a model loaded here: "auto", "plain" or "fused"
            (``kbert.layers.accel``).
        mixed_precision: the Keras dtype policy a model loaded here runs in (e.g. "mixed_bfloat16").
        network: ``network(model)`` -> the model's ``network_runner``: what computes its network
            instead of Keras (``kbert predict --onnx``: ONNX Runtime); the model's tokenizer and
            answer code are the same either way.

    Returns:
        ``{"rows", "model_type", "output", "seconds"}``.

    Examples:
        >>> import json, pathlib
        >>> import kbert
        >>> model = kbert.TextClassifier.from_model_dir(kbert.random_model_dir("runs/tiny"),
        ...                                             label_names=["negative", "positive"])
        >>> saved = model.save_model_dir("runs/tiny-classifier")
        >>> _ = pathlib.Path("runs/reviews.jsonl").write_text('{"text": "a good movie"}\\n{"text": "a bad one"}\\n')
        >>> summary = kbert.predict_file(saved, "runs/reviews.jsonl", "runs/answers.jsonl", overwrite=True)
        >>> summary["rows"], json.loads(pathlib.Path("runs/answers.jsonl").read_text().splitlines()[0])["label"] in ("negative", "positive")
        (2, True)
    """
    options = options or PredictOptions()
    model_files = [p for p in pathlib.Path(model_dir).iterdir()] if pathlib.Path(model_dir).is_dir() else []
    model_dir_lib.check_output(output_path, [input_path, model_dir, *model_files], overwrite=overwrite)
    task_meta = model_dir_lib.read_metadata(model_dir).get("task")
    where = f"{model_dir}/{model_dir_lib.METADATA_FILE}"
    if not isinstance(task_meta, dict) or "type" not in task_meta:
        raise TaskModelError(f"{where} has no 'task' object: {model_dir} is not a fine-tuned task model")
    try:
        task_type = task_type_for_model(task_meta["type"])
    except UnknownTaskError as e:
        raise TaskModelError(f"{where}: {e}") from None
    from kbert.tasks.core.windows import model_settings

    # the model's windows, as its task type (not a named task's predictor) builds it
    settings = model_settings(task_type, task_meta, options.long_documents, options.doc_stride)
    # A named task may read and write its benchmark's own files (its NamedTask.predictor: an object
    # with the four prediction methods of TaskType); otherwise the task type does.
    named = named_task_of(task_meta)
    task_type = (named.predictor or task_type) if named is not None else task_type
    formats = task_type.output_formats(task_meta)
    fmt = fmt or formats[0]
    if fmt not in formats:
        raise OptionsError(f"--format {fmt}: a {task_meta['type']} model writes {', '.join(formats)}",
                           option="format", value=fmt)
    # Every row is read and checked before the model is even loaded.
    data = task_type.read_prediction_input(task_meta, input_path, options)
    check_unique_ids(input_path, data.examples)
    from kbert.tasks import load_task_model

    start = time.time()
    if model is None:
        import keras

        policy = keras.config.dtype_policy()
        keras.config.set_dtype_policy(mixed_precision)
        try:
            model = load_task_model(model_dir, attention=attention, **settings)
        finally:
            keras.config.set_dtype_policy(policy)
    if network is not None:
        model.network_runner = network(model)
    predictions = task_type.predict(model, data, options, RowProgress(show_progress))
    if len(predictions) != len(data.examples):  # a plug-in's predict must answer every row
        raise RuntimeError(f"{type(task_type).__name__}.predict returned {len(predictions)} predictions "
                           f"for {len(data.examples)} rows")
    write_text(output_path, task_type.format_predictions(task_meta, data, predictions, fmt))
    return {"rows": len(predictions), "model_type": task_meta["type"], "output": str(output_path),
            "seconds": round(time.time() - start, 1)}


def check_unique_ids(path, examples) -> None:
    """Two rows with one id would give two predictions under one name (or one lost in a {id: answer}
    file): refused, naming the id and both rows (their positions in the input, from 1)."""
    first = {}
    for number, example in enumerate(examples, start=1):
        rid = example.get("id") if isinstance(example, dict) else None
        if rid is None:
            continue
        if rid in first:
            raise DataError(path, f"a unique id per row (rows {first[rid]} and {number} share it)", field="id",
                            value=rid)
        first[rid] = number
