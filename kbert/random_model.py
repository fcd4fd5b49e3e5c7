"""A randomly initialised model directory to try kbert's API on (and to test with): BERT-Tiny-sized,
a small built-in English vocabulary, the MLM and NSP heads. Its answers are random; its shapes,
files and code paths are those of a real model directory."""

from __future__ import annotations

import pathlib
import string

from kbert.api_export import kbert_export

WORDS = ("the a an and or of to in on at for with is was are were be he she it they we you i man woman "
         "went store home day good bad great movie film this that not very quick brown fox jumps over lazy "
         "dog paris france capital city new york bought milk gallon").split()
VOCAB = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(".,!?'\"-") + WORDS
         + [c for c in string.ascii_lowercase if c not in WORDS] + [f"##{c}" for c in string.ascii_lowercase]
         + [str(d) for d in range(10)])


@kbert_export("kbert.random_model_dir")
def random_model_dir(path, *, preset: str = "tiny", seed: int = 0, heads: bool = True, **config) -> pathlib.Path:
    """Writes a random model directory (BERT-Tiny by default) at ``path``, or reuses the one there.

    Args:
        path: the model directory; an existing one (it has a ``kbert.json``) is returned unchanged.
        preset: the size (``kbert.PRESETS``: tiny, mini, small, medium, base, large).
        seed: the random seed of the weights.
        heads: also write the pre-training heads (MLM, NSP), so that ``kbert.fill_mask`` and
            ``kbert.next_sentence`` answer (randomly).
        **config: ``kbert.BertConfig`` fields to replace (e.g. ``max_position_embeddings=64``).

    Returns:
        The model directory, a ``pathlib.Path``.

    Examples:
        >>> import kbert
        >>> model_dir = kbert.random_model_dir("runs/tiny")
        >>> sorted(p.name for p in model_dir.iterdir())
        ['bert_config.json', 'encoder.weights.h5', 'kbert.json', 'mlm.weights.h5', 'nsp.weights.h5', 'vocab.txt']
    """
    path = pathlib.Path(path)
    if (path / "kbert.json").exists():
        return path
    import keras

    from kbert.config import BertConfig
    from kbert.layers.heads import build_head
    from kbert.model_dir import save_model_dir
    from kbert.models.encoder import BertEncoder

    keras.utils.set_random_seed(seed)
    encoder = BertEncoder(BertConfig.preset(preset, **{"vocab_size": len(VOCAB), "max_position_embeddings": 128,
                                                       **config}))
    head_layers = {name: (build_head(name, encoder.config), {"type": name}) for name in ("mlm", "nsp")} if heads else None
    save_model_dir(path, encoder, vocab=VOCAB, do_lower_case=True, heads=head_layers)
    return path
