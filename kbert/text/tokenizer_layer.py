"""The Keras-layer part every tokenizer type shares (one copy for WordPiece, MeCab and SentencePiece).

A tokenizer class derives from ``TokenizerLayer``, calls ``super().__init__(**kwargs)`` first, then
sets ``self.vocab`` and ``self._special_ids`` (``set_vocab`` does both for a ``vocab.txt`` type) and
``self._graphs`` (``kbert.text.inputs.entry_graphs``: ``ids``, ``serial_ids`` and one graph per offset
unit). The entry points below run those graphs on strings of any shape.

Raw text or pre-tokenized words: every entry point (``tokenizer(texts)``, ``tokenize``, ``tokenize_flat``,
``tokenize_serial``) takes RAW texts. A type with a Python step (``in_graph`` False: MeCab) runs
``pre_tokenize`` on them itself when called eagerly; inside a graph (``tf.function``, a ``tf.data`` map,
a Keras functional model, an export), where that step cannot run, raw text is refused with a
``TokenizerInputError``. ``pre_tokenized=True`` says the strings are ``pre_tokenize()``'s output already
(what the data pipelines and exports give the graph part); for in-graph types it changes nothing, as
their ``pre_tokenize`` is the identity. A flag, not a guess from the strings: a text of words joined
by spaces is also a valid raw text.
"""

from __future__ import annotations

import os
import re

import keras
import tensorflow as tf

from kbert import compat
from kbert.api_export import kbert_export
from kbert.errors import Error, OptionsError
from kbert.text import vocab as vocab_lib
from kbert.text.inputs import as_string_tensor, map_flat
from kbert.text.pre_tokenize import pre_tokenize_eager
from kbert.text.vocab_methods import TokenVocabulary

OFFSET_UNITS = ("BYTE", "UTF8_CHAR")
F1_UNITS = ("word", "char")
# Share of a vocabulary's word-initial, non-special entries that are CJK, above which the vocabulary
# is taken as Chinese/Japanese (Google's Chinese BERT: 65% single CJK characters; the English
# vocabularies: under 2%).
CJK_VOCAB_SHARE = 0.3
_CJK = "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]"
_CJK_CHAR = re.compile(f"^{_CJK}$")
_CJK_PIECE = re.compile(f"^{_CJK}+$")


@kbert_export("kbert.text.TokenizerInputError")
class TokenizerInputError(Error, TypeError):
    """Raw text given to a tokenizer with a Python step (MeCab) where that step cannot run: inside a
    TensorFlow graph. Call the tokenizer eagerly, or give the graph ``pre_tokenize()``'s strings with
    ``pre_tokenized=True``.

    Args:
        *args: the message, naming the tokenizer and the call.

    Examples:
        >>> import kbert
        >>> issubclass(kbert.text.TokenizerInputError, kbert.Error)
        True
    """

    # AutoGraph (a tf.function's default) re-raises an error raised while tracing as that error's type
    # only when the type's __init__ is Exception's; any other becomes a StagingError that hides it.
    __init__ = Exception.__init__


def cjk_share(tokens, whole_pieces: bool = False) -> float:
    """Share of ``tokens`` (word-initial, non-special: ``##x`` and ``[...]`` left out) that are one
    CJK character, or with ``whole_pieces`` made of CJK characters only."""
    pattern = _CJK_PIECE if whole_pieces else _CJK_CHAR
    words = [t for t in tokens if t and not t.startswith("##") and not (t.startswith("[") and t.endswith("]"))]
    return sum(bool(pattern.match(t)) for t in words) / max(len(words), 1)


def check_offset_unit(unit: str) -> None:
    if unit not in OFFSET_UNITS:
        raise OptionsError(f"unit must be one of {OFFSET_UNITS}, got {unit!r}", option="unit", value=unit)


def group_words(values, word_starts, words_per_row):
    """Flat per-piece values (ids; or ids, starts, ends) -> ``(ids, starts, ends)``, each ``[rows, words, pieces]``
    (``starts``, ``ends`` None when only ids are given): ``word_starts`` holds the flat index of each word's
    first piece, ``words_per_row`` the number of words in each row."""
    out = [tf.RaggedTensor.from_row_lengths(tf.RaggedTensor.from_row_starts(v, word_starts, validate=False),
                                            words_per_row, validate=False) for v in values]
    return (out[0], None, None) if len(out) == 1 else tuple(out)


class TokenizerLayer(TokenVocabulary, keras.layers.Layer):
    in_graph = True  # takes raw text inside the graph (see kbert.text.registry); MeCab: False
    vocab_file_name = "vocab.txt"  # the usual name of the type's file in a model directory

    # -- learning a vocabulary of this type (python -m kbert.vocab); here WordPiece's ----------------
    @classmethod
    def check_vocab_request(cls, out, options) -> None:
        """Raises ValueError for a vocabulary this type cannot learn as ``options`` ask (before any work)."""

    @classmethod
    def learn_vocab(cls, files, out, options, log=None):
        """Learns a vocabulary of this type from text ``files`` (``VocabOptions``) and writes it to
        ``out``; returns the ``TokenizerSpec`` that reads it and its size. Here a WordPiece
        ``vocab.txt`` (kbert.text.vocab_learning), lower-cased unless the text is Japanese."""
        from kbert.text.spec import TokenizerSpec
        from kbert.text.vocab_learning import learn_vocab, write_vocab
        from kbert.text.vocab_learning_ja import choose_lower_case

        lower_case = choose_lower_case(files, options.lower_case, log=log)
        tokens = learn_vocab(files, options.vocab_size, lower_case=lower_case, num_unused=options.num_unused,
                             max_unique_chars=options.max_unique_chars, min_count=options.min_count or 10, log=log)
        write_vocab(tokens, out)
        return TokenizerSpec(type=cls.tokenizer_type, lower_case=lower_case, vocab_file=os.path.basename(out)), len(tokens)

    def __init__(self, **kwargs):
        kwargs.setdefault("dtype", "int32")
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        compat.accept_raw_call_inputs(self)

    def set_vocab(self, vocab) -> None:
        """``self.vocab`` from a ``vocab.txt`` path or a token list, and its special token ids."""
        self.vocab = vocab_lib.as_token_list(vocab)
        is_file = isinstance(vocab, (str, os.PathLike))
        self._vocab_path = os.fspath(vocab) if is_file else None
        self._special_ids = vocab_lib.special_token_ids(self.vocab, self._vocab_path or "vocab list")

    @property
    def asset_files(self) -> dict:
        """``{"vocab.txt": path}``; a tokenizer built from a token list has no file yet (``{}``)."""
        return {self.spec.vocab_file: self._vocab_path} if self._vocab_path else {}

    def f1_unit(self) -> str:
        """The unit span-QA F1 counts in for the language this tokenizer is for
        (kbert.tasks.span_qa.metrics.squad_metrics): "char" for languages written without spaces, where
        SQuAD's whitespace-word F1 equals exact match (JSQuAD, CMRC 2018 count characters), "word"
        otherwise. Here the vocabulary decides: mostly single CJK characters (WordPiece's Chinese
        and Japanese vocabularies) is "char"; a type for one language says so itself."""
        return "char" if cjk_share(self.get_vocabulary()) > CJK_VOCAB_SHARE else "word"

    def pre_tokenize(self, texts):
        """The Python step before the graph: none for in-graph types (the texts as they are)."""
        return list(texts)

    def call(self, inputs, pre_tokenized=False):
        return self.tokenize(inputs, pre_tokenized=pre_tokenized)

    def tokenize(self, strings, pre_tokenized=False):
        """int32 RaggedTensor ``strings.shape + [words, pieces]`` of raw texts (``pre_tokenized``: of
        ``pre_tokenize()``'s strings; see the module docstring)."""
        return map_flat(self._graph_strings(strings, pre_tokenized, "tokenize"), self._graphs.ids)

    def tokenize_serial(self, strings, pre_tokenized=False):
        """``tokenize`` in one slice (for callers that parallelise over rows themselves)."""
        return map_flat(self._graph_strings(strings, pre_tokenized, "tokenize_serial"), self._graphs.serial_ids)

    def tokenize_flat(self, strings, pre_tokenized=False):
        """int32 RaggedTensor ``strings.shape + [pieces]`` (words merged)."""
        return self.tokenize(strings, pre_tokenized=pre_tokenized).merge_dims(-2, -1)

    def tokenize_with_offsets(self, strings, unit="BYTE"):
        """``(ids, starts, ends)``, each ``strings.shape + [words, pieces]``: ``[starts, ends)`` is the span of
        the input a piece comes from, in UTF-8 bytes (``unit="BYTE"``) or code points (``"UTF8_CHAR"``)."""
        check_offset_unit(unit)
        return map_flat(as_string_tensor(strings, type(self).__name__), getattr(self._graphs, unit))

    def _graph_strings(self, strings, pre_tokenized=False, entry="tokenize"):
        """What the graph part takes, as a string tensor of ``strings``' shape: the strings themselves
        for an in-graph type or when ``pre_tokenized``; otherwise raw texts through ``pre_tokenize``,
        eagerly. Inside a graph raw texts are refused (TokenizerInputError): the Python step cannot
        run there, and its graph part would read each text as one word."""
        tensor = as_string_tensor(strings, type(self).__name__)
        if self.in_graph or pre_tokenized:
            return tensor
        if not tf.executing_eagerly():
            raise TokenizerInputError(
                f"{type(self).__name__} ({self.spec.type!r} tokenizer).{entry}: got raw text inside a TensorFlow "
                "graph, where its Python step (pre_tokenize) cannot run; call it eagerly, or give the graph "
                "pre_tokenize()'s strings with pre_tokenized=True (tf.data: "
                "kbert.text.pre_tokenize.pre_tokenize_tensor)")
        if isinstance(tensor, tf.RaggedTensor):
            return tensor.with_flat_values(pre_tokenize_eager(self, tensor.flat_values))
        return pre_tokenize_eager(self, tensor)
