"""The TF Hub pair a pre-training run publishes: ``saved_models/NAME_encoder/1`` and
``saved_models/NAME_preprocessor/1`` (the main jobs, English and Japanese, end with it)."""

from __future__ import annotations

import pathlib

from kbert.export.encoder import export_encoder
from kbert.export.preprocessor import export_preprocessor
from kbert.api_export import kbert_export


@kbert_export("kbert.export_hub_pair")
def export_hub_pair(model_dir, name: str, root="saved_models") -> tuple[pathlib.Path, pathlib.Path]:
    """Exports a model directory as the TF Hub pair: ``ROOT/NAME_encoder/1`` and ``ROOT/NAME_preprocessor/1``.

    Args:
        model_dir: a model directory.
        name: the pair's name.
        root: the folder of the exports.

    Returns:
        ``(encoder, preprocessor)`` SavedModel paths, each written whole.

    Examples:
        >>> import kbert
        >>> encoder, preprocessor = kbert.export_hub_pair(kbert.random_model_dir("runs/tiny"), "tiny")
        >>> str(encoder), str(preprocessor)
        ('saved_models/tiny_encoder/1', 'saved_models/tiny_preprocessor/1')
    """
    root = pathlib.Path(root)
    enc = export_encoder(model_dir, root / f"{name}_encoder" / "1")
    pre = export_preprocessor(model_dir, root / f"{name}_preprocessor" / "1")
    return pathlib.Path(enc), pathlib.Path(pre)
