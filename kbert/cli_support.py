"""What every kbert command line does first: quiet start-up, one-line errors, ``--verbose``.

``run(name, main, argv)`` is the one entry every CLI goes through (``kbert NAME`` and
``python -m kbert.NAME`` alike). It

* takes ``--verbose`` out of the arguments (it is accepted anywhere on the line);
* without ``--verbose``: hides TensorFlow's C++ start-up lines (they are printed before
  ``TF_CPP_MIN_LOG_LEVEL`` is read, so they are filtered line by line from the process's
  stderr), absl's, Beam's and Keras' known-harmless notices (``HARMLESS_LINES``,
  ``HARMLESS_WARNINGS``, ``HARMLESS_LOG_RECORDS``); anything else, and every real error, still
  shows;
* turns a user's error (a missing file or directory, a malformed input, a bad value: see
  ``is_user_error``) into one line ``kbert NAME: error: ...`` on stderr and exit status 1;
  ``--verbose`` adds the traceback. The commands' parsers (``ArgumentParser`` below) report a wrong
  command line the same way: one line, exit status 1, not argparse's usage text and status 2.

It also starts faster: TensorFlow's and Keras' eager imports of scikit-learn, matplotlib, IPython and
JAX, for integrations no command uses, are declined (kbert.cli_startup).

Nothing here is applied when kbert is used as a library: only ``run`` installs the filters and the hook.
"""

from __future__ import annotations

import argparse
import atexit
import logging
import os
import re
import sys
import threading
import traceback
import warnings

from kbert.errors import Error

VERBOSE_FLAG = "--verbose"

# C++ / absl lines TensorFlow writes to fd 2 at start-up, whatever TF_CPP_MIN_LOG_LEVEL says.
HARMLESS_LINES = [re.compile(p) for p in (
    r"^WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR",
    r"^[IW]\d{4} [\d:. ]+\d+ \S+:\d+\] ",  # any absl INFO/WARNING line (TF_CPP_MIN_LOG_LEVEL=2 hides them later)
    r"^E\d{4} [\d:. ]+\d+ cuda_(platform|driver|executor)\.cc:\d+\] failed call to cuInit",
    r"^E\d{4} [\d:. ]+\d+ util\.cc:\d+\] oneDNN supports DT_INT64 only on platforms with AVX-512",
    r"^To enable the following instructions: .* rebuild TensorFlow with the appropriate compiler flags\.",
    r"^oneDNN custom operations are on\.",
)]
# Python warnings (warnings.warn) that say nothing to act on in a kbert run.
HARMLESS_WARNINGS = (
    r"`shuffle=True` was passed, but will be ignored",  # kbert's datasets are shuffled by tf.data
    r"Your input ran out of data; interrupting training",  # the planned end of a run's last block
    r"The structure of `inputs` doesn't match the expected structure",
    r"pkg_resources is deprecated",
)
# Log records (logger name, message start).
HARMLESS_LOG_RECORDS = (
    ("root", "apitools not found, and bigquery client libraries are not available"),
    ("apache_beam.io.tfrecordio", "Couldn't find python-snappy or google-crc32c"),
    ("apache_beam.runners.interactive", ""),
)

_state = {"verbose": False, "name": "kbert"}


def verbose() -> bool:
    return _state["verbose"]


def prog(name: str) -> str:
    """The program name argparse shows: ``kbert NAME`` (the same for ``python -m kbert.NAME``)."""
    return f"python -m {name}" if "." in name else f"kbert {name}"  # pipelines.* are not subcommands


def add_verbose_flag(parser):
    """Lists --verbose in a parser's help (``run`` has already taken it out of the arguments)."""
    if VERBOSE_FLAG not in parser._option_string_actions:
        parser.add_argument(VERBOSE_FLAG, action="store_true",
                            help="show TensorFlow/Beam start-up messages, warnings and tracebacks")
    return parser


class ArgumentParser(argparse.ArgumentParser):
    """The commands' argument parser: ``--verbose`` in every (sub)command's help, and a wrong
    command line reported as kbert reports every user error, one line ``PROG: error: ...`` with
    exit status 1 (argparse prints the whole usage and exits 2)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        add_verbose_flag(self)

    def error(self, message):
        self.exit(1, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class UserError(Error):
    """An error the user fixes by changing the command line (a missing directory, another
    backend); shown as one line."""


def require_dir(path, what: str = "directory"):
    """``path`` as a pathlib.Path; a UserError saying it does not exist (or is a file) otherwise."""
    import pathlib

    path = pathlib.Path(path)
    if not path.exists():
        raise UserError(f"{what} {path} does not exist")
    if not path.is_dir():
        raise UserError(f"{what} {path} is not a directory")
    return path


BACKENDS = ("tensorflow", "jax")


def add_backend_flag(parser):
    """``--backend {tensorflow,jax}``; ``use_backend`` applies it before Keras is imported."""
    parser.add_argument("--backend", choices=BACKENDS, default=None,
                        help="Keras backend (default: the KERAS_BACKEND environment variable, else tensorflow). "
                             "jax: the model runs under JAX (GPUs, TPUs); the text pipeline stays in tf.data")
    return parser


def use_backend(name: str | None) -> str:
    """Makes ``name`` (None: KERAS_BACKEND, else tensorflow) the Keras backend of this process.

    Keras reads KERAS_BACKEND once, when it is first imported: a command sets it after parsing its
    flags and before importing anything that imports Keras. Asking for another backend than the
    one an already imported Keras runs is a UserError."""
    chosen = name or os.environ.get("KERAS_BACKEND") or "tensorflow"
    if chosen not in BACKENDS:
        raise UserError(f"KERAS_BACKEND={chosen!r}; expected one of {', '.join(BACKENDS)}")
    if "keras" in sys.modules:
        current = sys.modules["keras"].backend.backend()
        if current != chosen:
            raise UserError(f"--backend {chosen}: Keras is already running the {current} backend in this process "
                            f"(set KERAS_BACKEND={chosen} before Python starts)")
        return chosen
    os.environ["KERAS_BACKEND"] = chosen
    return chosen


# File-system errors a user fixes by naming another path; they name the file themselves.
FILE_SYSTEM_ERRORS = (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError, FileExistsError)


def is_user_error(error: BaseException) -> bool:
    """kbert's own errors (``kbert.Error``: each names its file, field, option and value) and
    file-system errors; anything else is a bug, shown with its traceback."""
    return isinstance(error, (Error, *FILE_SYSTEM_ERRORS))


def one_line(error: BaseException) -> str:
    """The line a command prints for a user's error: its message on one line (a message of several
    lines, e.g. a list of what differs, is joined by "; ")."""
    message = str(error) or type(error).__name__
    if isinstance(error, OSError) and error.filename and error.strerror:
        message = f"{error.filename}: {'does not exist' if isinstance(error, FileNotFoundError) else error.strerror}"
    return "; ".join(line.strip() for line in message.splitlines() if line.strip())


# -- quiet start-up ------------------------------------------------------------------------------
class _LogRecordFilter(logging.Filter):
    def __init__(self, start: str):
        super().__init__()
        self.start = start

    def filter(self, record):
        return not record.getMessage().startswith(self.start)


def _filter_stderr_lines():
    """Points fd 2 at a pipe whose reader drops HARMLESS_LINES and passes the rest on: the C++
    start-up lines of TensorFlow are written before any Python setting can silence them."""
    try:
        sys.stderr.flush()
        original = os.dup(2)
        read_end, write_end = os.pipe()
        os.dup2(write_end, 2)
        os.close(write_end)
    except OSError:  # no fd 2 (e.g. an embedded interpreter): nothing to filter
        return

    def pump():
        with os.fdopen(read_end, "rb", buffering=0) as pipe, os.fdopen(original, "wb", buffering=0,
                                                                        closefd=False) as out:
            pending = b""
            while True:
                chunk = pipe.read(65536)
                if not chunk:
                    break
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    text = line.decode("utf-8", "replace")
                    if not any(p.search(text) for p in HARMLESS_LINES):
                        out.write(line + b"\n")
            if pending:
                out.write(pending)

    thread = threading.Thread(target=pump, name="kbert-stderr-filter", daemon=True)
    thread.start()

    def restore():
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os.dup2(original, 2)  # closes the pipe's last write end here: the reader sees EOF
        thread.join(timeout=2)

    _STDERR_FILTER["restore"] = restore
    atexit.register(restore_stderr)


# The filter's restore step while it runs: atexit runs it at a normal exit; a process that ends
# itself with os._exit (kbert.commands.signals) must call restore_stderr first, or the lines still
# in the pipe, its own last line included, are lost.
_STDERR_FILTER: dict = {}


def restore_stderr() -> None:
    """Ends the quiet start-up's stderr filter, if one runs: what is in its pipe is passed on and
    fd 2 is the process's own again. Safe to call more than once."""
    restore = _STDERR_FILTER.pop("restore", None)
    if restore is not None:
        restore()


def quiet_setup():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # INFO and WARNING lines; errors still show
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    for message in HARMLESS_WARNINGS:
        warnings.filterwarnings("ignore", message=message)
    for name, start in HARMLESS_LOG_RECORDS:
        logger = logging.getLogger() if name == "root" else logging.getLogger(name)
        logger.addFilter(_LogRecordFilter(start))
    try:
        from absl import logging as absl_logging  # absl is a TensorFlow dependency; light to import

        absl_logging.set_verbosity(absl_logging.ERROR)
    except ImportError:
        pass
    _filter_stderr_lines()


# -- the entry --------------------------------------------------------------------------------------
def run(name: str, main, argv=None) -> int:
    """Runs ``main(argv)`` as the command ``kbert NAME``; returns the exit status."""
    from kbert.cli_startup import decline_optional_imports

    decline_optional_imports()  # TensorFlow's and Keras' eager imports of packages a command never uses
    argv = list(sys.argv[1:] if argv is None else argv)
    _state["verbose"] = VERBOSE_FLAG in argv
    _state["name"] = name
    argv = [a for a in argv if a != VERBOSE_FLAG]
    if not _state["verbose"]:
        quiet_setup()
    try:
        status = main(argv)
    except KeyboardInterrupt:
        print(f"{prog(name)}: interrupted", file=sys.stderr)
        return 130
    except SystemExit as e:
        if isinstance(e.code, str):  # raise SystemExit("error: ...") in a CLI module
            message = e.code.removeprefix("error: ")
            print(f"{prog(name)}: error: {message}", file=sys.stderr)
            return 1
        raise
    except BaseException as e:  # noqa: BLE001 -- decided below: one line, or the traceback
        if not is_user_error(e):
            raise
        if _state["verbose"]:
            traceback.print_exc()
        print(f"{prog(name)}: error: {one_line(e)}", file=sys.stderr)
        return getattr(e, "exit_status", 1)
    return 0 if status is None else status


# -- typed options <-> flags ------------------------------------------------------------------------
# Library functions take dataclasses (kbert.tasks.core.options.FinetuneOptions, a task type's options); these
# turn their fields (kbert.options.option: help, type, flag) into flags and the parsed flags back.
def _flag(field) -> str:
    return field.metadata.get("flag") or "--" + field.name.replace("_", "-")


def cli_fields(cls) -> list:
    import dataclasses

    return [f for f in dataclasses.fields(cls) if f.metadata.get("cli", True)]


def add_arguments(parser, cls, *, only=None, defaults=None, helps=None, types=None, title=None):
    """One flag per field of dataclass ``cls`` (``only``: these field names, in that order);
    ``defaults``/``helps``/``types`` override a field's default/help/converter for this parser (a
    field without a default is a required flag unless ``defaults`` gives one). ``title``: an
    argument group."""
    import dataclasses

    defaults, helps, types = defaults or {}, helps or {}, types or {}
    fields = {f.name: f for f in cli_fields(cls)}
    target = parser.add_argument_group(title) if title else parser
    for name in (only or list(fields)):
        field = fields[name]
        default = defaults.get(name, field.default)
        help_text = helps.get(name, field.metadata.get("help"))
        kwargs = {"dest": name, "help": help_text}
        if isinstance(default, bool):
            kwargs["action"] = "store_false" if default else "store_true"
        else:
            converter = types.get(name) or field.metadata.get("type") or (
                type(default) if default not in (None, dataclasses.MISSING) else None)
            if converter is not None:
                kwargs["type"] = converter
            if field.metadata.get("metavar"):
                kwargs["metavar"] = field.metadata["metavar"]
            if default is dataclasses.MISSING:
                kwargs["required"] = True
            else:
                kwargs["default"] = default
                if default is not None and kwargs["help"]:
                    kwargs["help"] += f" (default {default})"
        target.add_argument(_flag(field), **kwargs)
    return parser


def number_list(kind):
    """An argparse converter: ``"5e-5,3e-5"`` -> ``(5e-5, 3e-5)`` of ``kind`` (int or float)."""
    def convert(text: str) -> tuple:
        try:
            return tuple(kind(part) for part in text.split(","))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {kind.__name__}s separated by commas, got {text!r}") from None

    convert.__name__ = f"{kind.__name__} list"
    return convert


def from_args(cls, args: argparse.Namespace, **extra):
    """``cls`` from the parsed namespace (fields it lacks keep their defaults)."""
    values = {f.name: getattr(args, f.name) for f in cli_fields(cls) if hasattr(args, f.name)}
    return cls(**values, **extra)


# -- the tokenizer flags of pre-training and the data pipelines ------------------------------------
def add_tokenizer_arguments(parser, types, dir_flag: str | None = "--model-dir", vocab_required=False):
    """Adds --vocab, --cased, --tokenizer (one of ``types``: kbert.text.registry.tokenizer_types())
    and (``dir_flag``) a model-directory flag to ``parser``; ``kbert.text.registry.tokenizer_spec_for``
    turns their values into a spec."""
    parser.add_argument("--vocab", required=vocab_required,
                        help="the tokenizer's file (vocab.txt for WordPiece)")
    parser.add_argument("--cased", action="store_true",
                        help="cased vocabulary (no lower-casing; only WordPiece lower-cases by default)")
    parser.add_argument("--tokenizer", metavar="TYPE", choices=list(types), default=None,
                        help=f"tokenizer type: {', '.join(types)} (default: wordpiece, or the "
                             "model directory's)")
    if dir_flag:
        parser.add_argument(dir_flag, help="a model directory whose tokenizer (kbert.json) to use instead of --vocab")
