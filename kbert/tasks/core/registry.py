"""The task registry: task types (plug-ins) and the named tasks built on them.

A **task type** (a ``kbert.tasks.core.task_type.TaskType`` subclass; the built-in ones in the
``task`` module of their family folder, ``kbert/tasks/<type>/``) owns everything about one kind of task: its Keras model class(es), its
options (a dataclass, one command-line group), how it reads data, trains and evaluates
(a Recipe), its submission files, and its serving signatures and warm-up requests.

A **named task** ("glue/sst2", "squad/v2.0", "conll2003", "csv", ...) is a task type and, where its
benchmark needs them, its own recipe (a subclass of the type's that reads the benchmark's files),
the recipe's fixed settings (``settings``: an instance of the recipe's ``Settings`` dataclass, e.g.
which GLUE task, which SQuAD version), predictor and options (``NamedTask``; all typed, no mapping
read by key). ``kbert.finetune --task NAME``, ``kbert.tasks.core.task_files.resolve_task(NAME)`` (the
TFRecord pipeline), ``load_task_model`` and ``kbert.export task`` all look tasks up here; none of
them knows a task by name.

A new task is one new module that calls ``register_task_type`` and ``register_task`` (see
docs/finetuning.md "Adding a task" and tests/tasks/core/test_registry.py). The built-in plug-ins are imported on the
first lookup; this module itself imports neither TensorFlow nor Keras.
"""

from __future__ import annotations

import dataclasses
import importlib

from kbert.errors import Error
from kbert.api_export import kbert_export
from kbert.errors import OptionsError

# The built-in task types, in the order listings show them; each is a family package
# (kbert/tasks/<name>/) whose ``task`` module registers the type and its named tasks, and whose
# ``NAMED_TASKS`` lists its modules that only register named tasks (imported on the first lookup,
# not while a type module registers itself: importing a type module first, e.g. for its options
# class, starts _load_builtins inside that module's import, before its own type exists).
BUILTIN_TYPE_ORDER = ("classification", "tagging", "span_qa", "multiple_choice")

_TYPES: dict = {}         # task type name -> TaskType instance
_MODEL_TYPES: dict = {}   # kbert.json ``task.type`` (a model class's task_type) -> TaskType instance
_TASKS: dict = {}         # lower-case task name or alias -> NamedTask
_loaded = False
_tasks_loaded = False


class UnknownTaskError(Error, ValueError):
    """A task name, task type or model type the registry does not know: lists the known ones."""


@dataclasses.dataclass(frozen=True)
class NamedTask:
    """A task as ``--task`` names it.

    Attributes:
      name: e.g. "glue/sst2".
      type: the task type's name, e.g. "classification".
      help: one line for listings.
      aliases: other accepted names (case is ignored for all).
      recipe: its own ``Recipe`` subclass (None: the type's), for a benchmark's own files and metric.
      settings: the recipe's fixed settings of this task, an instance of the recipe's ``Settings``
        dataclass (e.g. ``GlueSettings(glue_task="sst2")``); None where the recipe takes none.
      predictor: its own ``kbert predict`` (None: the type's); see kbert.tasks.core.predict.
      options: the dataclass of its own options (None: none), one command-line group; the run's
        instance is ``FinetuneOptions.named_options``.
      read_unlabelled: reads its own file format for ``kbert predict`` where the type takes one.
      tfrecords: whether the TFRecord pipeline (kbert.tasks.core.task_files) can read it.
    """

    name: str
    type: str
    help: str = ""
    aliases: tuple = ()
    recipe: type | None = None
    settings: object = None
    predictor: object = None
    options: type | None = None
    read_unlabelled: object = None
    tfrecords: bool = True

    @property
    def task_type(self):
        return get_task_type(self.type)

    @property
    def recipe_class(self):
        """The Recipe class that fine-tunes it: its own, else its type's."""
        return self.recipe or self.task_type.recipe_class

    @property
    def long_documents(self) -> tuple:
        """The ``FinetuneOptions.long_documents`` values it takes: its recipe's, else its type's."""
        return getattr(self.recipe_class, "long_documents", None) or self.task_type.long_documents

    def named_options(self, given=None):
        """``given`` (``FinetuneOptions.named_options``) checked against ``options``: None gives the
        defaults; options for a task that takes none, or of another class, are an OptionsError."""
        if self.options is None:
            if given is not None:
                raise OptionsError(f"named_options: task {self.name!r} takes no options of its own, got "
                                   f"{type(given).__name__}", option="named_options", value=given)
            return None
        if given is None:
            return self.options()
        if not isinstance(given, self.options):
            raise OptionsError(f"named_options: task {self.name!r} takes {self.options.__name__}, got "
                               f"{type(given).__name__}", option="named_options", value=given)
        return given


@kbert_export("kbert.tasks.register_task_type")
def register_task_type(task_type):
    """Registers a task type (a ``kbert.tasks.TaskType``) under its ``name``, as the owner of its model types.

    Args:
        task_type: a ``TaskType`` instance, or a class (instantiated here).

    Returns:
        The instance, so that it works as a class decorator too.

    Examples:
        >>> import kbert
        >>> @kbert.tasks.register_task_type
        ... class Reviews(kbert.tasks.TaskType):
        ...     name = "reviews-demo"
        ...     model_types = ("reviews-demo",)
        >>> kbert.tasks.register_task("demo/reviews", "reviews-demo").task_type.name
        'reviews-demo'
    """
    _load_builtins()  # the built-in types first, whoever registers first (a stable listing order)
    instance = task_type() if isinstance(task_type, type) else task_type
    if not instance.name:
        raise ValueError(f"{type(instance).__name__} has no name")
    _TYPES[instance.name] = instance
    for model_type in instance.model_types:
        _MODEL_TYPES[model_type] = instance
    return task_type


@kbert_export("kbert.tasks.register_task")
def register_task(name: str, task_type: str, *, help: str = "", aliases=(), recipe=None, settings=None,
                  predictor=None, options=None, read_unlabelled=None, tfrecords: bool = True) -> NamedTask:
    """Registers ``name`` (and ``aliases``) as a task of a registered task type.

    A later registration of the same name replaces it; ``kbert finetune --task NAME`` and
    ``kbert.FinetuneOptions(task=NAME)`` then find it.

    Args:
        name: the task's name.
        task_type: the registered task type's name (``classification``, ``tagging``, ``span_qa``, ...).
        help: one line for ``kbert finetune --help``.
        aliases: other names of the task.
        recipe: its own ``kbert.tasks.Recipe`` subclass (None: the type's), e.g. for a benchmark's files.
        settings: the recipe's fixed settings of this task: an instance of ``recipe.Settings``, where
            the recipe declares that dataclass (None: its defaults, if it has them).
        predictor, options, read_unlabelled, tfrecords: the task's own parts (``NamedTask``).

    Returns:
        The ``NamedTask``.

    Raises:
        TypeError: ``settings`` or ``options`` that do not fit (a mistake in the registering code).

    Examples:
        >>> import dataclasses, kbert
        >>> task = kbert.tasks.register_task("my/reviews", "classification", help="reviews as CSV")
        >>> kbert.tasks.get_task("my/reviews").task_type.name
        'classification'

        A recipe shared by several tasks declares what differs between them as ``Settings``:

        >>> @dataclasses.dataclass(frozen=True)
        ... class Reviews:
        ...     language: str
        >>> class ReviewsRecipe(kbert.tasks.get_task("csv").recipe_class):
        ...     Settings = Reviews  # read() reads self.task.settings.language
        >>> task = kbert.tasks.register_task("my/reviews-de", "classification", recipe=ReviewsRecipe,
        ...                                  settings=Reviews("de"), help="German reviews as CSV")
        >>> kbert.tasks.get_task("my/reviews-de").settings.language
        'de'
    """
    _load_builtins()
    if task_type not in _TYPES:
        raise UnknownTaskError(f"task {name!r}: unknown task type {task_type!r}; known: {sorted(_TYPES)}")
    if options is not None and not dataclasses.is_dataclass(options):
        raise TypeError(f"task {name!r}: options must be a dataclass, got {options!r}")
    recipe_class = recipe or _TYPES[task_type].recipe_class
    task = NamedTask(name, task_type, help, tuple(aliases), recipe=recipe,
                     settings=_checked_settings(name, recipe_class, settings), predictor=predictor, options=options,
                     read_unlabelled=read_unlabelled, tfrecords=bool(tfrecords))
    for key in (name, *aliases):
        _TASKS[key.lower()] = task
    return task


def _checked_settings(name: str, recipe_class, settings):
    """``settings`` checked against ``recipe_class.Settings`` (None: its defaults); TypeError if they
    do not fit."""
    wanted, recipe = getattr(recipe_class, "Settings", None), getattr(recipe_class, "__name__", None)
    if wanted is None:
        if settings is not None:
            raise TypeError(f"task {name!r}: recipe {recipe} takes no settings, got {settings!r}")
        return None
    if settings is None:
        try:
            return wanted()
        except TypeError:
            raise TypeError(f"task {name!r}: recipe {recipe} needs settings={wanted.__name__}(...)") from None
    if not isinstance(settings, wanted):
        raise TypeError(f"task {name!r}: recipe {recipe} takes {wanted.__name__} settings, got {settings!r}")
    return settings


def _load_builtins():
    global _loaded
    if not _loaded:
        _loaded = True
        for family in BUILTIN_TYPE_ORDER:
            importlib.import_module(f"kbert.tasks.{family}.task")  # module names from a fixed table


def _load_all():
    """The built-in types, then the built-in task-only plug-ins (for lookups and listings)."""
    global _tasks_loaded
    _load_builtins()
    if not _tasks_loaded:
        _tasks_loaded = True
        for family in BUILTIN_TYPE_ORDER:
            package = importlib.import_module(f"kbert.tasks.{family}")
            for module in getattr(package, "NAMED_TASKS", ()):
                importlib.import_module(f"kbert.tasks.{family}.{module}")  # names from the family's table


def _lookup(table: dict, key, what: str, known):
    _load_all()
    try:
        return table[key]
    except KeyError:
        raise UnknownTaskError(f"unknown {what} {key!r}; expected one of: {', '.join(known())}") from None


@kbert_export("kbert.tasks.get_task")
def get_task(name: str) -> NamedTask:
    """The registered task ``name`` (or one of its aliases).

    Args:
        name: a task name (``kbert.tasks.task_names()``), e.g. ``glue/sst2``, ``csv``, ``squad``.

    Returns:
        The ``NamedTask``: ``name``, ``task_type`` (a ``kbert.tasks.TaskType``), ``settings``, ``help``.

    Raises:
        kbert.tasks.core.registry.UnknownTaskError: an unknown name; the message lists the known ones.

    Examples:
        >>> import kbert
        >>> task = kbert.tasks.get_task("glue/sst2")
        >>> task.name, task.task_type.name
        ('glue/sst2', 'classification')
    """
    return _lookup(_TASKS, str(name).lower(), "task", task_names)


def named_task_of(task_meta: dict):
    """The NamedTask a model directory's kbert.json ``task`` object was fine-tuned on (its
    ``info.task_name``, written by kbert.finetune), or None when it names none or one that is not registered here."""
    task_meta = task_meta or {}
    name = (task_meta.get("info") or {}).get("task_name") or task_meta.get("task_name")
    if not name:
        return None
    try:
        return get_task(name)
    except UnknownTaskError:
        return None


@kbert_export("kbert.tasks.task_names")
def task_names() -> list:
    """The registered task names (not aliases): the built-in types' first, then by registration.

    Returns:
        A list of names.

    Examples:
        >>> import kbert
        >>> names = kbert.tasks.task_names()
        >>> "glue/sst2" in names and "csv" in names and "squad/v1.1" in names
        True
    """
    return [t.name for t in tasks()]


def tasks() -> list:
    """The registered NamedTasks, grouped by type in BUILTIN_TYPE_ORDER (other types after), each
    group in registration order: the listing does not depend on which plug-in was imported first."""
    _load_all()
    unique = list({t.name: t for t in _TASKS.values()}.values())
    rank = {name: i for i, name in enumerate(BUILTIN_TYPE_ORDER)}
    return sorted(unique, key=lambda t: rank.get(t.type, len(rank)))


def get_task_type(name: str):
    return _lookup(_TYPES, name, "task type", lambda: sorted(_TYPES))


def task_types() -> list:
    _load_all()
    return list(_TYPES.values())


def task_type_for_model(model_type: str):
    """The TaskType that owns a model type (kbert.json ``task.type``, e.g. "text_classifier")."""
    return _lookup(_MODEL_TYPES, model_type, "model type", model_types)


def model_types() -> list:
    _load_all()
    return sorted(_MODEL_TYPES)


def task_listing() -> str:
    """One line per task type with its tasks, for help texts."""
    lines = []
    for task_type in task_types():
        names = [t.name for t in tasks() if t.type == task_type.name]
        if names:
            lines.append(f"  {task_type.name:<16} {', '.join(names)}")
    return "\n".join(lines)
