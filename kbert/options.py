"""The field helper of kbert's typed options (``FinetuneOptions``, ``PretrainOptions``, the task types'
options): a dataclass field that carries its command-line help, read by the commands'
``kbert.cli_support.add_arguments``. Imports nothing of kbert."""

from __future__ import annotations

import dataclasses


def comma_list(text) -> tuple:
    """ "a,b" -> ("a", "b"); a list/tuple is kept as a tuple."""
    if isinstance(text, (list, tuple)):
        return tuple(str(t) for t in text)
    return tuple(part.strip() for part in str(text).split(",") if part.strip())


def option(default=dataclasses.MISSING, *, help: str, type=None, flag: str | None = None,
           metavar: str | None = None):
    """A dataclass field with its command-line help (``type``: the argparse converter when the
    default does not say it; ``flag``: e.g. "--no-bucketing" for a True default; ``metavar``: the
    value's name in ``--help``, e.g. "UNITS", instead of the field's name in capitals)."""
    metadata = {"help": help, "type": type, "flag": flag, "metavar": metavar}
    return dataclasses.field(default=default, metadata=metadata)


# The choices of the ``attention`` and ``mixed_precision`` options of fine-tuning, pre-training and
# predict: kbert.layers.accel.ATTENTION_IMPLS and Keras' dtype policies, named here without
# importing Keras (the commands parse flags first).
ATTENTION_CHOICES = ("auto", "plain", "fused")
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")
