"""Fixed batch widths for XLA-compiled training (JAX, TPUs): a few length buckets, not one per batch.

XLA compiles one program per input shape. A batch trimmed to its longest row (what the TensorFlow
path does, ``kbert.tasks.core.batching.trim_to_longest``) can have any width from 1 to seq_length, so a
jitted step would compile up to seq_length programs; padded up to the next of a few fixed widths it
compiles at most ``len(widths)``. The padding is masked (``input_mask`` 0), so outputs at real
positions do not change. Numpy only: the host side of the input pipeline calls it per batch.
"""

from __future__ import annotations

import numpy as np

# Multiples of 32 (tiles of the matrix units and of flash attention); at most 10 programs to 512.
STATIC_WIDTHS = (32, 64, 96, 128, 192, 256, 320, 384, 448, 512)


def static_width(longest: int, seq_length: int, widths=STATIC_WIDTHS) -> int:
    """The width a batch whose longest real row has ``longest`` positions is padded to: the
    smallest of ``widths`` that holds it, or ``seq_length`` when none below it does."""
    if longest > seq_length:
        raise ValueError(f"a row of {longest} positions is longer than seq_length {seq_length}")
    return next((w for w in sorted(widths) if longest <= w < seq_length), seq_length)


def to_static_width(batch: dict, seq_length: int, widths=STATIC_WIDTHS, pad_values: dict | None = None) -> dict:
    """``batch`` ({name: [rows, width] array}, with an ``input_mask``) cut or padded to
    ``static_width`` of its longest real row. Padding is 0 (``pad_values`` {name: value} for
    others, e.g. -100 for ignored labels); only positions past every row's mask are cut."""
    mask = np.asarray(batch["input_mask"])
    longest = int(mask.sum(axis=1).max()) if mask.size else 0
    width = static_width(max(longest, 1), seq_length, widths)
    if mask.shape[1] > width and mask[:, width:].any():
        raise ValueError("input_mask has real positions after padding; expected real tokens first")
    out = {}
    for name, value in batch.items():
        value = np.asarray(value)
        if value.ndim < 2 or value.shape[1] != mask.shape[1]:
            out[name] = value  # per-row values (labels, positions) keep their shape
        elif value.shape[1] >= width:
            out[name] = value[:, :width]
        else:
            pad = [(0, 0), (0, width - value.shape[1])] + [(0, 0)] * (value.ndim - 2)
            out[name] = np.pad(value, pad, constant_values=(pad_values or {}).get(name, 0))
    return out
