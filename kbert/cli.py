"""``kbert``: one command with a subcommand per job (the ``[project.scripts]`` entry point).

``kbert NAME ARGS...`` is ``python -m kbert.NAME ARGS...``: the table below maps each name to its
module and a one-line help. A module is imported only when its subcommand runs, so ``kbert
--help`` starts no TensorFlow, and a subcommand whose module is not installed says so. Each
module has ``main(argv) -> int``; ``kbert.cli_support.run`` wraps it (quiet start-up, one-line
errors, ``--verbose``).
"""

from __future__ import annotations

import importlib
import sys

from kbert.errors import Error

# name -> (module, one-line help). Add a job here and give its module a main(argv).
COMMANDS = {
    "pretrain": ("kbert.commands.pretrain", "pre-train BERT (masked LM + NSP); no arguments: the built-in demo"),
    "finetune": ("kbert.commands.finetune", "fine-tune a model directory on a task (GLUE, SQuAD, CoNLL-2003, SWAG, CSV)"),
    "predict": ("kbert.commands.predict", "predictions of a fine-tuned task model for a file (JSONL, TSV, GLUE, SQuAD)"),
    "export": ("kbert.commands.export", "write SavedModels: encoder, preprocessor, task (TF Hub / TF Serving)"),
    "convert": ("kbert.commands.convert", "convert weights: Hugging Face or Google checkpoints <-> model directory"),
    "vocab": ("kbert.commands.vocab", "learn a WordPiece vocabulary from text files"),
    "tokenize": ("kbert.commands.tokenize", "show how a model directory's tokenizer splits texts"),
    "features": ("kbert.commands.features", "per-token features of texts from a frozen encoder (paper §5.4) to .npz"),
    "explore": ("kbert.commands.explore", "look inside a model: fill-mask, next sentence, attention"),
    "paper": ("kbert.commands.paper", "run one of the BERT paper's tables (1, 2, 5-8) at a scale, beside its numbers"),
    "bench": ("kbert.commands.bench", "benchmarks against keras-hub, transformers, Model Garden"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: kbert COMMAND [ARGS...] [--verbose]", "",
             "BERT for Keras 3 on TensorFlow. Commands (each also `python -m kbert.COMMAND`):", ""]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", "`kbert COMMAND --help` describes a command's arguments; --verbose shows TensorFlow's",
              "start-up messages, warnings and tracebacks."]
    return "\n".join(lines)


class MissingCommand(Error):
    pass


def load_main(name: str):
    """The ``main`` of a command's module (kbert/commands/NAME.py)."""
    module_name = COMMANDS[name][0]
    try:
        module = importlib.import_module(module_name)  # module names from a fixed table
    except ModuleNotFoundError as e:
        if e.name == module_name:  # not the module's own missing import: that is a real error
            raise MissingCommand(f"'kbert {name}' is not available in this installation "
                                 f"(module {module_name} not found)") from None
        raise
    if not hasattr(module, "main"):
        raise MissingCommand(f"'kbert {name}': module {module_name} has no main(argv)")
    return module.main


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if argv else 2
    if argv[0] == "--version":
        from kbert import __version__

        print(f"kbert {__version__}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"kbert: error: unknown command {name!r} (kbert --help lists the commands)", file=sys.stderr)
        return 1
    try:
        command_main = load_main(name)
    except MissingCommand as e:
        print(f"kbert: error: {e}", file=sys.stderr)
        return 1
    from kbert.cli_support import run

    return run(name, command_main, rest)


if __name__ == "__main__":
    sys.exit(main())
