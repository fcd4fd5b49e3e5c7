"""A task model as a model directory: ``save_model_dir`` writes it, ``from_model_dir`` and
``load_task_model`` rebuild it, head included.

A fine-tuned task model is a model directory (see kbert.model_dir) whose ``kbert.json`` has a
``task`` object next to ``heads``::

    {"format": 1, "tokenizer": {"type": "wordpiece", ...}, "do_lower_case": true,
     "heads": {"classifier": {"weights": "classifier.weights.h5", "type": "text_classifier"}},
     "task": {"type": "text_classifier", "head": "classifier", "seq_length": 128, ...}}

``task`` holds everything needed to rebuild the model around the encoder: the task type (the
class, see kbert.tasks.core.registry), the head's name and size, label names and the preprocessing
settings (seq_length, truncator, number of text inputs, ...).
"""

from __future__ import annotations

import pathlib

from kbert import model_dir as model_dir_lib
from kbert.api_export import kbert_export
from kbert.errors import TaskModelError
from kbert.hub_models import resolve_model_dir
from kbert.text.registry import load_tokenizer


class TaskModelDirectory:
    """Saving and reloading (a mix-in of ``kbert.TaskModel``, which supplies ``encoder``, ``head``,
    ``tokenizer``, ``task_type``, ``head_name``, ``head_shape_keys``, ``implied_settings`` and
    ``task_metadata``)."""

    saved_task_info: dict = {}

    def save_model_dir(self, model_dir, extra_info: dict | None = None) -> pathlib.Path:
        """Writes encoder, head and kbert.json (``task``; ``extra_info`` is stored in it under
        ``info``, e.g. the task name and dev metrics). Heads of an older model there are dropped."""
        model_dir = pathlib.Path(model_dir)
        info = {"type": self.task_type, "config": _head_config(self.head)}
        model_dir_lib.save_model_dir(model_dir, self.encoder, tokenizer=self.tokenizer,
                                     heads={self.head_name: (self.head, info)})
        metadata = model_dir_lib.read_metadata(model_dir)
        metadata["heads"] = {self.head_name: metadata["heads"][self.head_name]}
        task = self.task_metadata()
        if extra_info:
            task["info"] = extra_info
        metadata["task"] = task
        model_dir_lib.write_metadata(model_dir, metadata)
        return model_dir

    @classmethod
    def from_model_dir(cls, model_dir, *, load_head=None, encoder_overrides=None, attention="auto", **settings):
        """A task model on the encoder of ``model_dir``.

        If the directory holds a fine-tuned model of this task type (its kbert.json ``task``),
        its settings and head weights are restored (``load_head=None`` or True); ``settings``
        may then change preprocessing (e.g. seq_length) but not the head's size. Otherwise a new
        head is initialised from ``settings`` (e.g. ``num_classes=2``); ``load_head=False``
        forces that. ``encoder_overrides`` replace bert_config fields (e.g. dropout rates).
        ``model_dir`` may be ``hf://ORG/NAME`` (``kbert.resolve_model_dir``).
        ``attention``: the encoder's attention, "auto", "plain" or "fused" (kbert.layers.accel).
        """
        model_dir = pathlib.Path(resolve_model_dir(model_dir))
        metadata = model_dir_lib.read_metadata(model_dir)
        saved = metadata.get("task")
        where = model_dir / model_dir_lib.METADATA_FILE
        if saved is not None and not isinstance(saved, dict):
            raise TaskModelError(f"{where}: field 'task' must be an object, got {saved!r}")
        if saved is not None and saved.get("type") != cls.task_type:
            if load_head:
                raise TaskModelError(f"{where}: task type is {saved.get('type')!r}, not {cls.task_type!r}")
            saved = None
        if load_head is True and saved is None:
            raise TaskModelError(f"{where} holds no fine-tuned {cls.task_type!r} task (no 'task' object)")
        if load_head is False:
            saved = None
        kwargs = dict(settings)
        if saved is not None:
            restored = {**cls.implied_settings,
                        **{k: v for k, v in saved.items() if k not in ("type", "head", "info")}}
            for key in cls.head_shape_keys:
                if key in settings and settings[key] is not None and _differs(settings[key], restored.get(key)):
                    raise TaskModelError(
                        f"{where}: the saved head has {key}={restored.get(key)!r} but {key}={settings[key]!r} "
                        "was asked; pass load_head=False to start a new head")
            kwargs = {**restored, **{k: v for k, v in settings.items() if v is not None}}
        encoder = model_dir_lib.load_encoder(model_dir, attention=attention, **(encoder_overrides or {}))
        try:
            tokenizer = load_tokenizer(model_dir)
        except ValueError as e:  # the spec's errors name kbert.json and the field
            raise TaskModelError(str(e)) from None
        model = cls(encoder, tokenizer, **kwargs)
        if saved is not None:
            model._load_head(model_dir, metadata, saved)
            model.saved_task_info = dict(saved.get("info") or {})
        return model

    def _load_head(self, model_dir, metadata, saved):
        name = saved.get("head", self.head_name)
        where = model_dir / model_dir_lib.METADATA_FILE
        entry = metadata.get("heads", {}).get(name)
        if not isinstance(entry, dict) or "weights" not in entry:
            raise TaskModelError(f"{where}: 'task' names head {name!r} but 'heads' has no weights for it")
        path = model_dir_lib.resolve_file(model_dir, entry["weights"])
        if not path.exists():
            raise TaskModelError(f"{where} lists head {name!r} but {path} is missing")
        if not self.head.built:
            self.head.build()
        # The encoder's checked path: a damaged file or one of another shape (e.g. another number
        # of classes) is an error naming the file and listing what differs, not an h5py traceback.
        try:
            model_dir_lib.load_weights_checked(self.head, path, f"the {self.task_type} head that {where} describes",
                                               expected_from=f"the 'task' settings of {where.name}")
        except model_dir_lib.ModelDirError as e:
            raise TaskModelError(str(e)) from None


def _head_config(head) -> dict:
    config = head.get_config()
    return {k: config[k] for k in ("num_outputs", "dropout", "hidden_size", "units", "num_layers") if k in config}


def _differs(a, b) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return list(a) != list(b)
    return a != b


@kbert_export("kbert.load_task_model", "kbert.tasks.load_task_model")
def load_task_model(model_dir, **settings):
    """Rebuilds whichever task model ``model_dir`` holds (its kbert.json ``task.type``), head included.

    Args:
        model_dir: a fine-tuned model directory (``kbert.finetune``'s output, or
            ``TaskModel.save_model_dir``).
        **settings: preprocessing settings to change (e.g. ``seq_length``); the head's size stays.

    Returns:
        The ``kbert.TaskModel`` subclass the directory names (``TextClassifier``, ``TokenTagger``, ...).

    Raises:
        kbert.tasks.TaskModelError: a directory without a fine-tuned task, or one that does not fit.

    Examples:
        >>> import kbert
        >>> model = kbert.TextClassifier.from_model_dir(kbert.random_model_dir("runs/tiny"),
        ...                                             label_names=["negative", "positive"])
        >>> saved = model.save_model_dir("runs/tiny-classifier")
        >>> reloaded = kbert.load_task_model(saved)
        >>> type(reloaded).__name__, reloaded.label_names
        ('TextClassifier', ['negative', 'positive'])
    """
    from kbert.tasks.core.registry import UnknownTaskError, model_types, task_type_for_model

    model_dir = pathlib.Path(resolve_model_dir(model_dir))
    task = model_dir_lib.read_metadata(model_dir).get("task")
    where = model_dir / model_dir_lib.METADATA_FILE
    if not isinstance(task, dict) or "type" not in task:
        raise TaskModelError(f"{where} has no 'task' object: {model_dir} is not a fine-tuned task model")
    try:
        task_type = task_type_for_model(task["type"])
    except UnknownTaskError:
        raise TaskModelError(f"{where}: field 'task.type' is {task['type']!r}; "
                             f"expected one of {model_types()}") from None
    return task_type.model_class(task["type"]).from_model_dir(model_dir, load_head=True, **settings)
