"""Exports of tokenizers with a Python step (``in_graph`` False: the ``mecab-*`` types): words in.

A SavedModel cannot run MeCab, so for such a tokenizer every strings-in signature takes the text's
words instead of the raw text: ``string [batch, words]`` (multiple choice: ``choices_words``
``[batch, choices, words]``), the MeCab surfaces of the NFKC-normalised text (NFKC is the client's,
as transformers' ``BertJapaneseTokenizer`` applies it before MeCab; a special token written in the
text, ``[MASK]`` or ``[SEP]``, is a word of its own). Rows of different lengths are padded with ""
at the end: TF Serving's row format (``instances``) and the columnar one (``inputs``) both need
equal shapes. Empty strings are ignored wherever they are.

The graph joins each row with ``join_words`` (one space between words; MeCab surfaces hold no
U+0020, so nothing is lost) into the string ``tokenizer.pre_tokenize`` returns in Python, then runs
what a Python model runs: WordPiece within each word (or one token per character), packing, the
model. So the answers equal the Python path on the raw text. A flat ``string [batch]`` request for a
words input is refused by TensorFlow (a shape error), never answered as something else.

The inputs are renamed so that a request with raw text fails ("missing input 'words'") instead of
being tokenized wrongly (``words_name``):

    text -> words        text_a -> words_a        text_b -> words_b        any other X -> X_words
                                                  (multiple_choice: context_words, choices_words)

A client makes the request with ``words_request(tokenizer, {"text": [...]})`` (this module: lists
of words padded with ""), ``python -m kbert.tokenize MODEL_DIR --words`` (one ``{"words": [...]}``
per input line), or the few fugashi lines in docs/japanese.md. ``serving_ids`` (ids in) is the
same for every tokenizer type. Signatures that answer with character offsets into the raw text
(``span_qa``, ``token_tagger``) answer in word indices instead, for the SavedModel never sees that
text (kbert.tasks.span_qa.words_answers).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from kbert.text.mecab import WORD_SEPARATOR  # what pre_tokenize puts between words
from kbert.text.pre_tokenize import needs_pre_tokenize

PADDING = ""  # what pads a row of words


def takes_words(tokenizer) -> bool:
    """True when an export of ``tokenizer`` takes words (its ``pre_tokenize`` output), not raw text."""
    return needs_pre_tokenize(tokenizer)


def words_name(name: str) -> str:
    """The input name a words-in signature gives a raw-text input ``name`` (see the module docstring)."""
    if name == "text":
        return "words"
    if name.startswith("text_"):
        return "words_" + name[len("text_"):]
    return name + "_words"


def split_words(pre_tokenized: list[str]) -> list[list[str]]:
    """``pre_tokenize``'s strings -> each one's words (split at the separator, empty parts dropped,
    as the graph part splits them)."""
    return [[w for w in s.split(WORD_SEPARATOR) if w] for s in pre_tokenized]


def words_request(tokenizer, inputs: dict) -> dict:
    """A raw-text request ``{input name: text or (nested) list of texts}`` -> the words request an
    export of ``tokenizer`` takes: every text through ``tokenizer.pre_tokenize`` and split into its
    words, names renamed with ``words_name``. Each input gains a last axis, its rows padded with ""
    to that input's longest (at least one entry, so an all-empty request is still a string
    tensor): lists stay lists, arrays become object arrays. For an in-graph tokenizer the request is
    returned unchanged."""
    if not takes_words(tokenizer):
        return dict(inputs)
    out = {}
    for name, value in inputs.items():
        array = np.asarray(value, dtype=object)
        flat = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in array.reshape(-1)]
        rows = split_words(tokenizer.pre_tokenize(flat)) if flat else []
        if len(rows) != len(flat):
            raise ValueError(f"{type(tokenizer).__name__}.pre_tokenize returned {len(rows)} texts for {len(flat)}")
        width = max([1, *map(len, rows)])
        padded = np.full((len(rows), width), PADDING, dtype=object)
        for i, row in enumerate(rows):
            padded[i, :len(row)] = row
        padded = padded.reshape(array.shape + (width,))
        out[words_name(name)] = padded.tolist() if isinstance(value, (list, tuple, str, bytes)) else padded
    return out


def join_words(words):
    """``string [..., words]`` (rows padded with "" at the end) -> ``string [...]``: each row's words
    joined by one space, the form the in-graph part of a words-in tokenizer splits again. MeCab
    surfaces never hold U+0020, so the join is lossless; empty strings (padding) leave no trace.
    Only spaces are trimmed: a ``mecab-character`` word may be another white-space character
    (``\\r``), which the Python path keeps, so ``tf.strings.strip`` would change the answer.

    The shape is checked when the graph runs (``EnsureShape``): TF Serving feeds a signature from C++
    without comparing the request's shape to the signature's, and a flat ``string [batch]`` request
    would otherwise be joined along the batch into ONE text and answered."""
    words = tf.ensure_shape(words, words.shape)
    joined = tf.strings.reduce_join(words, axis=-1, separator=WORD_SEPARATOR)
    return tf.strings.regex_replace(tf.strings.regex_replace(joined, " +", " "), "^ | $", "")


def words_spec(spec: tf.TensorSpec, name: str | None = None) -> tf.TensorSpec:
    """A raw-text input's spec -> its words input's: the same with a last ``words`` axis."""
    return tf.TensorSpec(spec.shape.concatenate([None]), tf.string, name=name or spec.name)


def words_signature(serve):
    """``serve`` (a tf.function taking one dict of named string tensors) with its inputs renamed by
    ``words_name`` and given a words axis: the same graph, fed with each row's words joined."""
    spec = serve.input_signature[0]
    renamed = {words_name(name): words_spec(s, words_name(name)) for name, s in spec.items()}

    @tf.function(input_signature=[renamed])
    def serve_words(inputs):
        return serve({name: join_words(inputs[words_name(name)]) for name in spec})

    return serve_words


# -- answers in word units (span QA's and tagging's words-in exports) --------------------------
def check_words(words, name: str):
    """``words`` (string [batch, words]), after an error op for a word that holds a space: the
    tokenizer's graph part splits at spaces, so such a word would shift every word index after it."""
    spaced = tf.reduce_any(~tf.strings.regex_full_match(words, "[^ ]*"))
    check = tf.debugging.assert_equal(spaced, False, message=(
        f"{name}: a word holds a space; send MeCab surfaces, one word per string (kbert.tokenize --words)"))
    with tf.control_dependencies([check]):
        return tf.identity(words)


def word_layout(words) -> dict:
    """For ``words`` [batch, W]: ``lengths`` and ``starts`` [batch, W] of each word in its row's word
    text (characters), the word ``text`` [batch], and ``column`` [batch, (n)]: the column of each
    non-empty word (the tokenizer's words are the non-empty ones, in order)."""
    lengths = tf.strings.length(words, unit="UTF8_CHAR")
    nonempty = lengths > 0
    columns = tf.broadcast_to(tf.range(tf.shape(words)[1]), tf.shape(words))
    return {"lengths": lengths, "starts": tf.cumsum(lengths, axis=1, exclusive=True), "nonempty": nonempty,
            "text": tf.strings.reduce_join(words, axis=1), "column": tf.ragged.boolean_mask(columns, nonempty)}


def to_columns(layout, per_word, fill):
    """``per_word`` [batch, n] (values of the non-empty words, in order) -> [batch, W] at their
    columns, ``fill`` at padding."""
    column = layout["column"]
    rows = tf.cast(column.value_rowids(), tf.int32)
    k = tf.cast(tf.ragged.range(column.row_lengths()).flat_values, tf.int32)
    values = tf.gather_nd(per_word, tf.stack([rows, k], axis=1))
    target = tf.fill(tf.shape(layout["lengths"]), tf.constant(fill, per_word.dtype))
    return tf.tensor_scatter_nd_update(target, tf.stack([rows, column.flat_values], axis=1), values)

