"""Word-level NER tags <-> WordPiece-level labels, and entity spans from IOB2 tags.

The label of a word goes on its first WordPiece; its other pieces, [CLS]/[SEP] and padding get
IGNORE_INDEX (-100, the value Keras' SparseCategoricalCrossentropy(ignore_class=-100) and most BERT
NER code skip) so that they are out of the loss and the metrics. Words whose first piece was cut by
truncation (or that produced no piece at all) carry no label in the sequence; when predictions are
mapped back to words they get a fill value.

Alignment is described by word_ids: for each token position, the index of the word it came from,
or -1 for special tokens and padding (the convention of Hugging Face's BatchEncoding.word_ids(),
with -1 for None so that it fits an int array).
"""

from __future__ import annotations

import numpy as np

from kbert.errors import OptionsError

IGNORE_INDEX = -100


def _piece_counts(pieces_per_word) -> list:
    return [p if isinstance(p, (int, np.integer)) else len(p) for p in pieces_per_word]


def token_word_ids(pieces_per_word, *, max_seq_length: int | None = None, num_prefix: int = 1,
                   num_suffix: int = 1) -> np.ndarray:
    """word_ids of a packed single-segment sequence: [CLS] pieces... [SEP] padding.

    Args:
      pieces_per_word: per word, its number of WordPieces, or its list of pieces (e.g. a row of
        the preprocessor's ragged .tokenize output).
      max_seq_length: total length; pieces beyond max_seq_length - num_prefix - num_suffix are
        truncated (as a packer truncates) and the result is padded to max_seq_length.
      num_prefix, num_suffix: special tokens before ([CLS]) and after ([SEP]) the pieces.

    Returns:
      int64 [length]: word index per position, -1 for special tokens and padding.
    """
    counts = _piece_counts(pieces_per_word)
    ids = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    if max_seq_length is not None:
        room = max_seq_length - num_prefix - num_suffix
        if room < 0:
            raise OptionsError(f"max_seq_length {max_seq_length} is shorter than the special tokens",
                               option="seq_length")
        ids = ids[:room]
    ids = np.concatenate([np.full(num_prefix, -1), ids, np.full(num_suffix, -1)]).astype(np.int64)
    if max_seq_length is not None:
        ids = np.pad(ids, (0, max_seq_length - len(ids)), constant_values=-1)
    return ids


def first_token_mask(word_ids) -> np.ndarray:
    """True at the first token of each word (the positions that carry labels)."""
    word_ids = np.asarray(word_ids, dtype=np.int64)
    previous = np.concatenate([[-1], word_ids[:-1]])
    return (word_ids >= 0) & (word_ids != previous)


def align_labels(word_labels, word_ids, *, ignore_index: int = IGNORE_INDEX) -> np.ndarray:
    """Token labels: word_labels[w] on the first token of word w, ignore_index elsewhere."""
    word_labels = np.asarray(word_labels, dtype=np.int64)
    word_ids = np.asarray(word_ids, dtype=np.int64)
    if word_ids.max(initial=-1) >= len(word_labels):
        raise ValueError(f"word_ids refer to word {word_ids.max()} but there are only "
                         f"{len(word_labels)} word labels")
    labels = np.full(word_ids.shape, ignore_index, dtype=np.int64)
    first = first_token_mask(word_ids)
    labels[first] = word_labels[word_ids[first]]
    return labels


def word_predictions(token_predictions, word_ids, num_words: int, *, fill_value=0) -> np.ndarray:
    """Word-level predictions from token-level ones (the prediction at each word's first token).

    Args:
      token_predictions: [length] label ids, or [length, num_labels] logits/probabilities
        (argmax is taken).
      word_ids: as from token_word_ids.
      num_words: number of words in the sentence.
      fill_value: prediction for words with no token (truncated away), e.g. the id of "O".
    """
    token_predictions = np.asarray(token_predictions)
    if token_predictions.ndim == 2:
        token_predictions = token_predictions.argmax(axis=-1)
    word_ids = np.asarray(word_ids, dtype=np.int64)
    if token_predictions.shape != word_ids.shape:
        raise ValueError(f"{token_predictions.shape[0]} token predictions for {len(word_ids)} "
                         "word_ids")
    result = np.full(num_words, fill_value, dtype=np.int64)
    first = first_token_mask(word_ids)
    result[word_ids[first]] = token_predictions[first]
    return result


def truncated_words(word_ids, num_words: int) -> np.ndarray:
    """Indices of the words that have no token in the sequence."""
    present = np.zeros(num_words, dtype=bool)
    ids = np.asarray(word_ids, dtype=np.int64)
    present[ids[ids >= 0]] = True
    return np.flatnonzero(~present)


def entity_spans(tags) -> list:
    """Entities (type, start word, end word inclusive) from IOB2 tag strings.

    Same conventions as seqeval.metrics.sequence_labeling.get_entities (conlleval): an entity runs
    from a B-X (or an I-X that follows O or another type) over the following I-X tags.
    """
    spans, current = [], None  # current = (type, start)
    for i, tag in enumerate(list(tags) + ["O"]):
        if tag == "O":
            prefix, kind = "O", None
        else:
            prefix, _, kind = tag.partition("-")
            if prefix not in ("B", "I") or not kind:
                raise ValueError(f"tag {tag!r} at position {i} is not O, B-<type> or I-<type>")
        if current is not None and (prefix != "I" or kind != current[0]):
            spans.append((current[0], current[1], i - 1))
            current = None
        if prefix == "B" or (prefix == "I" and current is None):
            current = (kind, i)
    return spans
