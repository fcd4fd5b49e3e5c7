"""The Python step of tokenizers that are not wholly in the graph (``in_graph = False``).

Such a tokenizer (MeCab word splitting) maps raw texts to what its graph part takes with
``tokenizer.pre_tokenize(texts) -> list[str]``. These helpers run that step on the shapes the
consumers meet: Python/numpy data given to ``fit``/``predict`` (``pre_tokenize_data``), string
tensors inside ``tf.data`` pipelines (``pre_tokenize_tensor``) and eager string tensors
(``pre_tokenize_eager``: what an eager ``tokenizer(texts)`` runs). For in-graph tokenizers (WordPiece,
SentencePiece) they return their input unchanged, so nothing changes and nothing is traced. What
they return goes to the tokenizer with ``pre_tokenized=True`` (kbert.text.tokenizer_layer).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf


def needs_pre_tokenize(tokenizer) -> bool:
    return not getattr(tokenizer, "in_graph", True)


def _decode(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _is_texts(x) -> bool:
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "USO" and x.size > 0 and all(isinstance(v, (str, bytes)) for v in x.flat)
    if isinstance(x, (list, tuple)) and x:
        flat = [v for row in x for v in row] if isinstance(x[0], (list, tuple)) else x
        return all(isinstance(v, (str, bytes)) for v in flat)
    return isinstance(x, (str, bytes, tf.Tensor)) and (not isinstance(x, tf.Tensor) or x.dtype == tf.string)


def _apply(tokenizer, texts):
    """One text, a (nested) list/array of texts or a string tensor -> the same shape, pre-tokenized."""
    if isinstance(texts, (str, bytes)):
        return tokenizer.pre_tokenize([_decode(texts)])[0]
    if isinstance(texts, tf.Tensor):
        return tf.constant(_apply(tokenizer, texts.numpy()), tf.string)
    array = np.asarray(texts, dtype=object)
    flat = [_decode(v) for v in array.reshape(-1)]
    out = tokenizer.pre_tokenize(flat)
    if len(out) != len(flat):
        raise ValueError(f"{type(tokenizer).__name__}.pre_tokenize returned {len(out)} texts for {len(flat)}")
    result = np.asarray(out, dtype=object).reshape(array.shape)
    return result.tolist() if isinstance(texts, (list, tuple)) else result


def pre_tokenize_data(tokenizer, data):
    """``data`` (texts, or a dict/tuple of them, as ``fit``/``predict`` take) with every text run
    through ``tokenizer.pre_tokenize``; other entries (labels, arrays of numbers) unchanged.

    ``tf.data.Dataset`` inputs are refused for such tokenizers: map ``pre_tokenize_tensor`` over them.
    """
    if not needs_pre_tokenize(tokenizer) or data is None:
        return data
    if isinstance(data, tf.data.Dataset):
        raise TypeError(f"the {tokenizer.spec.type!r} tokenizer has a Python step (pre_tokenize): a tf.data "
                        "dataset must apply it itself (kbert.text.pre_tokenize.pre_tokenize_tensor)")
    if isinstance(data, dict):
        return {k: _apply(tokenizer, v) if _is_texts(v) else v for k, v in data.items()}
    if isinstance(data, tuple) and data and not all(isinstance(v, (str, bytes)) for v in data):
        return tuple(_apply(tokenizer, v) if _is_texts(v) else v for v in data)
    return _apply(tokenizer, data) if _is_texts(data) else data


def pre_tokenize_eager(tokenizer, strings):
    """An eager tf.string tensor (any shape) through ``tokenizer.pre_tokenize``: a tf.string tensor of
    the same shape; the tensor itself for in-graph tokenizers."""
    if not needs_pre_tokenize(tokenizer):
        return strings
    return tf.reshape(_apply(tokenizer, strings), tf.shape(strings))


def pre_tokenize_tensor(tokenizer, strings):
    """A string tensor (any shape) through ``tokenizer.pre_tokenize`` inside a graph (``tf.data``),
    as a ``tf.numpy_function``; the tensor itself for in-graph tokenizers."""
    if not needs_pre_tokenize(tokenizer):
        return strings

    def run(values):
        out = np.asarray(_apply(tokenizer, values), dtype=object)
        return np.vectorize(lambda t: t.encode("utf-8"), otypes=[object])(out) if out.size else out

    out = tf.numpy_function(run, [strings], tf.string, stateful=False)
    out.set_shape(strings.shape)
    return out


def pre_tokenize_dataset(tokenizer, dataset):
    """A ``tf.data.Dataset`` of ``x`` or ``(x, y, ...)`` elements with every string tensor of ``x``
    through ``pre_tokenize_tensor`` (what ``fit`` needs for a dataset of raw texts); the dataset
    itself for in-graph tokenizers and for elements whose ``x`` holds no strings (packed ids)."""
    first = dataset.element_spec[0] if isinstance(dataset.element_spec, tuple) else dataset.element_spec
    if not needs_pre_tokenize(tokenizer) or not any(
            getattr(s, "dtype", None) == tf.string for s in tf.nest.flatten(first)):
        return dataset

    def texts(x):
        return tf.nest.map_structure(lambda t: pre_tokenize_tensor(tokenizer, t) if t.dtype == tf.string else t, x)

    return dataset.map(lambda x, *rest: (texts(x), *rest) if rest else texts(x))
