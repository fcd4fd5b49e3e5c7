"""Feature extraction (the paper's §5.4 feature-based approach): contextual token vectors from
every layer of a frozen encoder, and the layer combinations of its Table 7, in one call.

The layers and their combinations (``COMBINATIONS``, ``check_combinations``, ``combine_layers``)
live in kbert.models.layer_combinations, below the tasks, so that the token tagger's feature-based
mode (``kbert finetune --features``) reads the same; they are public here as
``kbert.features.COMBINATIONS`` and so on.
"""

from __future__ import annotations

import json
import pathlib

import keras
import numpy as np
import tensorflow as tf

from kbert import compat
from kbert.errors import DataError
from kbert.hub_models import resolve_model_dir
from kbert.model_dir import load_config, load_encoder
from kbert.models.layer_combinations import COMBINATIONS, all_layers, check_combinations, combine_layers
from kbert.tasks.core.batching import trim_to_longest
from kbert.tasks.core.text_inputs import take_rows, text_lengths, text_segments
from kbert.text import BertPreprocessor
from kbert.text.pre_tokenize import pre_tokenize_data
from kbert.text.registry import load_tokenizer
from kbert.api_export import kbert_export


@kbert_export("kbert.FeatureExtractor", "kbert.features.FeatureExtractor")
class FeatureExtractor(keras.Model):
    """Strings (one text, or a pair as ``{"text_a", "text_b"}``) -> per-token features (§5.4 of the paper).

    ``call`` returns ``hidden_states`` ([L + 1, batch, seq, H]: embedding output, then each
    block), ``input_mask`` [batch, seq] and one entry per combination in ``combinations``.
    Dropout is off (``training=False`` always): the encoder is a frozen feature source.
    ``extract`` runs a tokenizer's Python step (``pre_tokenize``) itself; ``call`` takes its output.
    ``FeatureExtractor.from_model_dir(model_dir)`` loads both from a model directory.

    Args:
        encoder: a ``kbert.BertEncoder``.
        tokenizer: a tokenizer object (``kbert.load_tokenizer(model_dir)``), or a vocabulary with
            ``lower_case`` (WordPiece).
        lower_case: with a vocabulary only.
        seq_length: the longest packed input.
        num_segments: 1 (one text) or 2 (pairs).
        combinations: the layer combinations to return (``kbert.features.COMBINATIONS``).
        dynamic_length: trim each batch to its longest row.
        **kwargs: passed to ``keras.Model``.

    Examples:
        >>> import kbert
        >>> extractor = kbert.FeatureExtractor.from_model_dir(kbert.random_model_dir("runs/tiny"),
        ...                                                   combinations=("last_hidden",))
        >>> features = extractor.extract({"text_a": ["the quick fox", "a dog"]})
        >>> features["last_hidden"].shape, features["input_mask"].tolist()
        ((2, 5, 128), [[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]])
    """

    def __init__(self, encoder, tokenizer, lower_case=None, seq_length=128, num_segments=1,
                 combinations=tuple(COMBINATIONS), dynamic_length=True, **kwargs):
        super().__init__(**kwargs)
        compat.accept_raw_call_inputs(self)
        self.encoder = encoder
        self.preprocessor = BertPreprocessor(tokenizer, lower_case=lower_case, seq_length=seq_length)
        self.num_segments = int(num_segments)
        self.dynamic_length = bool(dynamic_length)
        self.combinations = check_combinations(combinations, encoder.config.num_hidden_layers)
        # One pass for all layers: the embeddings layer's output is a node of the encoder's graph.
        self.all_layers = keras.Model(encoder.inputs, all_layers(encoder))

    @classmethod
    def from_model_dir(cls, model_dir, **kwargs):
        model_dir = pathlib.Path(resolve_model_dir(model_dir))  # a folder, or hf://ORG/NAME
        return cls(load_encoder(model_dir), load_tokenizer(model_dir), **kwargs)

    @property
    def tokenizer(self):
        return self.preprocessor.tokenizer

    def call(self, inputs, training=None):
        packed = self.preprocessor(text_segments(inputs, self.num_segments, "FeatureExtractor"), pre_tokenized=True)
        if self.dynamic_length:
            packed = trim_to_longest(packed)
        layers = self.all_layers(packed, training=False)
        return {"hidden_states": tf.stack(layers), "input_mask": packed["input_mask"],
                **combine_layers(layers, self.combinations)}

    def extract(self, inputs, batch_size=32) -> dict:
        """``call`` over many examples: numpy arrays padded to the longest example (padding
        positions are zeros), rows in input order (batched by length for speed)."""
        lengths = text_lengths(inputs, self.num_segments)
        order = np.argsort(lengths, kind="stable")
        step = tf.function(self.call, reduce_retracing=True)
        parts = []
        for start in range(0, len(order), batch_size):
            batch = pre_tokenize_data(self.tokenizer, take_rows(inputs, order[start:start + batch_size]))
            if isinstance(batch, dict):
                batch = {k: tf.constant(list(v), tf.string) for k, v in batch.items()}
            elif isinstance(batch, tuple):
                batch = tuple(tf.constant(list(v), tf.string) for v in batch)
            else:
                batch = tf.constant(list(batch), tf.string)
            parts.append({k: v.numpy() for k, v in step(batch).items()})
        width = max(p["input_mask"].shape[1] for p in parts)
        result = {}
        for key in parts[0]:
            axis = 2 if key == "hidden_states" else 1  # the sequence axis
            merged = np.concatenate([_pad_axis(p[key], axis, width) for p in parts], axis=axis - 1)
            result[key] = np.empty_like(merged)
            if key == "hidden_states":
                result[key][:, order] = merged
            else:
                result[key][order] = merged
        mask = result["input_mask"].astype(bool)
        for key, value in result.items():
            if key != "input_mask":  # padding positions are zeros
                value[..., ~mask, :] = 0
        return result


def _pad_axis(array, axis, width):
    pad = [(0, 0)] * array.ndim
    pad[axis] = (0, width - array.shape[axis])
    return np.pad(array, pad)


TEXT_KEYS = ("text_a", "text_b")


@kbert_export("kbert.features.read_rows")
def read_rows(path) -> list[dict]:
    """The rows of a JSONL file (``kbert features``' input): one object per line with ``text_a`` (and ``text_b``).

    Args:
        path: the JSONL file.

    Returns:
        A list of dicts, in file order.

    Raises:
        kbert.DataError: a line that is not a JSON object, or lacks ``text_a``; names the line.

    Examples:
        >>> import pathlib
        >>> import kbert
        >>> path = pathlib.Path("runs/rows.jsonl")
        >>> path.parent.mkdir(exist_ok=True)
        >>> _ = path.write_text('{"text_a": "the quick fox"}\\n{"text_a": "a dog", "text_b": "a man"}\\n')
        >>> kbert.features.read_rows(path)
        [{'text_a': 'the quick fox'}, {'text_a': 'a dog', 'text_b': 'a man'}]
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(2, "No such file", str(path))
    rows = []
    expected = 'a JSON object {"text_a": "...", "text_b": "..." (optional)}'
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(path, expected, line=number, value=f"{line.strip()[:80]} ({e.msg})") from None
            if not isinstance(row, dict):
                raise DataError(path, expected, line=number, value=row)
            unknown = sorted(set(row) - set(TEXT_KEYS))
            if unknown:
                raise DataError(path, "only the keys 'text_a' and 'text_b'", line=number, field=unknown[0],
                                value=row[unknown[0]])
            for key in TEXT_KEYS:
                if key in row and not isinstance(row[key], str) or key == "text_a" and key not in row:
                    raise DataError(path, "a string", line=number, field=key,
                                    **({"value": row[key]} if key in row else {}))
            rows.append(row)
    if not rows:
        raise DataError(path, "at least one row")
    return rows


@kbert_export("kbert.extract_arrays", "kbert.features.extract_arrays")
def extract_arrays(model_dir, rows: list[dict], seq_length: int = 128, batch_size: int = 32) -> dict:
    """The arrays ``kbert features`` writes, for ``rows`` of text.

    Args:
        model_dir: a model directory (or ``hf://ORG/NAME``).
        rows: dicts with ``text_a`` (and ``text_b``).
        seq_length: the longest packed input.
        batch_size: rows per model call.

    Returns:
        ``{name: numpy array}``: the packed inputs, ``sequence_output``, ``pooled_output`` and every
        combination of ``COMBINATIONS`` the encoder has blocks for; row i of each array is
        ``rows[i]``, zeros at padding.

    Examples:
        >>> import kbert
        >>> arrays = kbert.extract_arrays(kbert.random_model_dir("runs/tiny"), [{"text_a": "the quick fox"}],
        ...                             seq_length=8)
        >>> arrays["pooled_output"].shape, arrays["last_hidden"].shape
        ((1, 128), (1, 8, 128))
    """
    model_dir = resolve_model_dir(model_dir)
    num_blocks = load_config(model_dir).num_hidden_layers
    names = []
    for name in COMBINATIONS:
        try:
            names.append(check_combinations((name,), num_blocks)[0])
        except ValueError:  # e.g. concat of the last four blocks of a 2-block encoder
            pass
    singles = FeatureExtractor.from_model_dir(model_dir, seq_length=seq_length, num_segments=1, dynamic_length=False,
                                              combinations=tuple(names))
    encoder = singles.encoder
    tokenizer = singles.preprocessor.tokenizer
    # A tokenizer with a Python step (MeCab) gets its words here; the graph part takes them.
    prepare = (lambda texts: texts) if getattr(tokenizer, "in_graph", True) else tokenizer.pre_tokenize
    # One pass gives the pooled output and every layer (the embedding output, then each block).
    all_outputs = keras.Model(encoder.inputs, [encoder.output["pooled_output"], *all_layers(encoder)])

    @tf.function(reduce_retracing=True)
    def step(segments):
        packed = singles.preprocessor(segments, pre_tokenized=True)
        pooled, *layers = all_outputs(packed, training=False)
        mask = tf.cast(packed["input_mask"], layers[0].dtype)[:, :, None]
        combos = {k: v * mask for k, v in combine_layers(layers, names).items()}
        return {**packed, "sequence_output": layers[-1] * mask, "pooled_output": pooled, **combos}

    result = {}
    for num_segments in (1, 2):
        index = [i for i, row in enumerate(rows) if ("text_b" in row) == (num_segments == 2)]
        for start in range(0, len(index), batch_size):
            chunk = index[start:start + batch_size]
            texts = {key: tf.constant(prepare([rows[i][key] for i in chunk]), tf.string)
                     for key in TEXT_KEYS[:num_segments]}
            out = step(text_segments(texts, num_segments, "kbert.features"))
            for key, value in out.items():
                value = value.numpy()
                if key not in result:
                    result[key] = np.zeros((len(rows), *value.shape[1:]), value.dtype)
                result[key][chunk] = value
    return result
