"""Japanese BERT tokenizers: NFKC, MeCab words, then WordPiece within each word or one token per character.

``mecab-wordpiece`` and ``mecab-character`` reproduce transformers' ``BertJapaneseTokenizer``
(``word_tokenizer_type="mecab"``, ``subword_tokenizer_type="wordpiece"`` / ``"character"``,
``do_lower_case=False``): the tokenizer of the Tohoku Japanese BERTs. The ids equal transformers' on
every line of ``shared/data/reference/ja_tokenizers.jsonl`` (tests/text/test_mecab.py).

MeCab cannot run inside a TensorFlow graph, so the work is split in two:

  * ``pre_tokenize(texts) -> list[str]`` (Python): cuts each text at the special tokens written
    literally in it (``[SEP]``, ``[MASK]``, ...: they stay those tokens, as transformers' added-token
    split does), applies NFKC to the rest and splits it into MeCab surfaces (fugashi + a MeCab
    dictionary package, ``unidic_lite`` by default). It returns the words of each text joined by
    one ASCII space (``WORD_SEPARATOR``): MeCab never puts U+0020 inside a surface (it is MeCab's
    white space), and for ``mecab-wordpiece`` each surface is further split at white space exactly
    as transformers' ``whitespace_tokenize`` does, so no word holds one. A client of an export
    builds the same string with the few fugashi lines in docs/japanese.md.
  * ``tokenize(pre_tokenized_strings, pre_tokenized=True)`` (graph: tf.data, exports): splits at the
    separator and gives each word its pieces with tensorflow-text's
    ``FastWordpieceTokenizer(no_pretokenization=True)`` (a word of more than 100 characters is one
    ``[UNK]``, transformers' ``max_input_chars_per_word``) or a static table lookup per character (a
    character outside the vocabulary is ``[UNK]``).

``tokenizer(texts)``, ``tokenize(texts)`` and ``tokenize_flat(texts)`` on RAW texts run both parts when
called eagerly; inside a graph they refuse raw texts (``TokenizerInputError``) rather than read each
text as one word (kbert.text.tokenizer_layer).

``tokenize_with_offsets(texts, unit)`` takes the ORIGINAL texts (it runs ``pre_tokenize`` itself,
eagerly) and gives each piece its span in them: NFKC is mapped back character cluster by cluster
(``kbert.text.nfkc_spans``: ``ｶﾞ`` -> ``ガ`` spans both input characters, ``㈱`` -> ``(株)`` gives all three
pieces the one).

Defined results for odd input (tests/text/test_mecab.py, hypothesis): bytes are decoded as UTF-8
with U+FFFD for invalid sequences (Python's ``errors="replace"``), lone surrogates become U+FFFD;
empty and white-space-only texts give no words; control characters are MeCab words (``[UNK]``
unless the vocabulary has them; for ``mecab-wordpiece`` those that ``str.split`` treats as white
space, e.g. U+0085 and U+2028, vanish); MeCab stops reading a text at a NUL character (fugashi
passes C strings), so nothing after a NUL is tokenized — as with transformers. Text longer than
``MECAB_MAX_CHARS`` (50,000 characters after NFKC) reaches MeCab in pieces cut at white space or a
sentence end (``kbert.text.mecab_limits``): one string of ~190,000 characters crashes MeCab itself.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import unicodedata

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from kbert.errors import Error
from kbert.text import vocab as vocab_lib
from kbert.text.inputs import Untracked
from kbert.text.mecab_limits import MECAB_MAX_CHARS, mecab_pieces  # noqa: F401 (MECAB_MAX_CHARS: documented here)
from kbert.text.nfkc_spans import SURROGATES, byte_positions, decode_text, nfkc_spans
from kbert.text.registry import asset_path, register_tokenizer
from kbert.text.spec import TokenizerSpec, TokenizerSpecError
from kbert.text.tokenizer_layer import TokenizerInputError, TokenizerLayer, check_offset_unit

WORD_SEPARATOR = " "
SUFFIX_INDICATOR = "##"
# transformers' WordpieceTokenizer(max_input_chars_per_word=100), which BertJapaneseTokenizer uses.
MAX_CHARS_PER_WORD = 100
_MAX_UTF8_BYTES_PER_CHAR = 4
DEFAULT_DICTIONARY = "unidic_lite"
# transformers' MecabTokenizer(mecab_dic=...) -> the PyPI package holding that dictionary.
DICTIONARY_PACKAGES = {"unidic_lite": "unidic-lite", "unidic": "unidic", "ipadic": "ipadic"}
INSTALL_HINT = "pip install 'kbert[ja]'"
_NON_SPACE = re.compile(r"\S+")  # the runs str.split() keeps (both use Python's isspace)


class MecabError(Error, RuntimeError):
    """fugashi or the MeCab dictionary is missing or cannot be loaded; the message says what to install."""


def _import(module: str, package: str, what: str):
    try:
        return importlib.import_module(module)  # module names from a fixed table
    except ImportError:
        raise MecabError(f"{what} needs the Python package {package!r}, which is not installed: "
                         f"{INSTALL_HINT} (or pip install {package})") from None


@functools.lru_cache(maxsize=None)
def mecab_tagger(dictionary: str = DEFAULT_DICTIONARY):
    """A fugashi ``GenericTagger`` on ``dictionary``, as transformers' ``MecabTokenizer`` builds it."""
    if dictionary not in DICTIONARY_PACKAGES:
        raise TokenizerSpecError(f"tokenizer option 'mecab_dic': unknown MeCab dictionary {dictionary!r}; "
                                 f"kbert knows {', '.join(sorted(DICTIONARY_PACKAGES))}")
    fugashi = _import("fugashi", "fugashi", "the mecab-* tokenizers")
    dic = _import(dictionary, DICTIONARY_PACKAGES[dictionary], f"the MeCab dictionary {dictionary!r}")
    dic_dir = dic.DICDIR
    if not os.path.isdir(dic_dir):  # unidic's package ships without the dictionary (python -m unidic download)
        raise MecabError(f"the MeCab dictionary {dictionary!r} is not installed: {dic_dir} does not exist "
                         f"(for unidic run: python -m unidic download)")
    mecabrc = os.path.join(dic_dir, "mecabrc")
    try:
        return fugashi.GenericTagger(f'-d "{dic_dir}" -r "{mecabrc}"')
    except RuntimeError as e:
        raise MecabError(f"MeCab cannot load the dictionary {dictionary!r} at {dic_dir}: {e}") from None


class _MecabTokenizer(TokenizerLayer):
    """The part both types share; subclasses give ``_split_surface`` and ``_pieces``."""

    in_graph = False  # MeCab runs in Python: pre_tokenize first (see kbert.text.registry)

    def f1_unit(self) -> str:
        """Japanese is written without spaces: span-QA F1 counts characters (JSQuAD)."""
        return "char"

    @classmethod
    def check_vocab_request(cls, out, options) -> None:
        from kbert.text.vocab_learning_ja import check_cased

        check_cased(cls.tokenizer_type, options)

    @classmethod
    def learn_vocab(cls, files, out, options, log=None):
        """A ``vocab.txt`` over MeCab words (kbert.text.vocab_learning_ja; the ``[ja]`` extra), never lower-cased."""
        from kbert.text.vocab_learning import write_vocab

        tokens = cls._learn_tokens(files, options, log)
        write_vocab(tokens, out)
        spec = TokenizerSpec(type=cls.tokenizer_type, lower_case=False, vocab_file=os.path.basename(out),
                             options={"mecab_dic": "unidic_lite"})
        return spec, len(tokens)

    @classmethod
    def from_spec(cls, spec: TokenizerSpec, directory=None, **kwargs):
        if spec.lower_case:
            raise TokenizerSpecError(
                f"tokenizer spec: field 'lower_case' is true, but the {spec.type} tokenizer is cased "
                "(transformers' BertJapaneseTokenizer with do_lower_case=False, as the Tohoku BERTs)")
        unknown = set(spec.options) - {"mecab_dic"}
        if unknown:
            raise TokenizerSpecError(f"tokenizer spec: {spec.type} has no option(s) {sorted(unknown)}")
        return cls(os.fspath(asset_path(spec, directory)),
                   mecab_dic=spec.option("mecab_dic", DEFAULT_DICTIONARY), **kwargs)

    def __init__(self, vocab, mecab_dic=DEFAULT_DICTIONARY, **kwargs):
        super().__init__(**kwargs)
        self.set_vocab(vocab)
        self.mecab_dic = mecab_dic
        self.lower_case = False
        # The tokens transformers splits the text at before MeCab runs (its added special tokens).
        specials = sorted(vocab_lib.RESERVED_TOKENS, key=len, reverse=True)
        self._special_pattern = re.compile("|".join(map(re.escape, specials)))
        self._tagger = Untracked(tagger=mecab_tagger(mecab_dic))  # a missing dictionary fails here
        self._build_graph_part()
        spec = [tf.TensorSpec([None], tf.string)]
        graph = tf.function(self._tokenize_1d, input_signature=spec, autograph=False)
        self._graphs = Untracked(ids=graph, serial_ids=graph)  # one slice: the graph part is cheap beside MeCab
        self.built = True

    # -- the tokenizer interface (kbert.text.registry) -----------------------------------------
    @property
    def spec(self) -> TokenizerSpec:
        return TokenizerSpec(type=self.tokenizer_type, lower_case=False, options={"mecab_dic": self.mecab_dic})

    def starts_word(self) -> list:
        """For each id, whether that piece begins a word: all but WordPiece's ``##`` continuations
        (for ``mecab-character`` every character, so whole-word masking there masks characters)."""
        return [not t.startswith("##") for t in self.get_vocabulary()]

    def pre_tokenize(self, texts) -> list[str]:
        """Raw texts (str, UTF-8 bytes, or a string tensor) -> MeCab words joined by ``WORD_SEPARATOR``."""
        return [WORD_SEPARATOR.join(w for w, _, _ in self._words(t)) for t in _python_texts(texts)]

    def words(self, text) -> list[str]:
        """The words of one raw text (what ``pre_tokenize`` joins)."""
        return [w for w, _, _ in self._words(text)]

    def _words(self, text, spans=False):
        """``[(word, starts, ends)]``: with ``spans``, the span ``[starts[k], ends[k])`` in ``text``
        (after ``decode_text``) of each character of the word, else None. Special tokens written in
        the text are words of their own."""
        if not isinstance(text, str) or SURROGATES.search(text):
            text, _ = decode_text(text)
        words = []
        pos = 0
        for match in [*self._special_pattern.finditer(text), None]:
            end = match.start() if match else len(text)
            if end > pos:
                words += self._segment_words(text[pos:end], pos, spans)
            if match:
                token = match.group()
                words.append((token, [match.start()] * len(token), [match.end()] * len(token)) if spans
                             else (token, None, None))
                pos = match.end()
        return words

    def _surfaces(self, normalized):
        """MeCab's surfaces of ``normalized``, in pieces of at most MECAB_MAX_CHARS characters."""
        for piece in mecab_pieces(normalized):
            for node in self._tagger.tagger(piece):
                yield node.surface

    def _segment_words(self, segment, offset, spans):
        if not spans:
            return [(w, None, None) for surface in self._surfaces(unicodedata.normalize("NFKC", segment))
                    for w, _ in self._split_surface(surface)]
        normalized, starts, ends = nfkc_spans(segment)
        if offset:
            starts, ends = [offset + i for i in starts], [offset + i for i in ends]
        words, pos = [], 0
        for surface in self._surfaces(normalized):
            found = normalized.find(surface, pos)  # after the white space MeCab skipped
            pos = found if found >= 0 else pos
            for w, a in self._split_surface(surface):
                words.append((w, starts[pos + a:pos + a + len(w)], ends[pos + a:pos + a + len(w)]))
            pos += len(surface)
        return words

    # -- tokenization (graph part: pre-tokenized strings) ---------------------------------------
    # tokenize, tokenize_serial, tokenize_flat: kbert.text.tokenizer_layer (raw texts eagerly, or
    # pre_tokenize()'s strings with pre_tokenized=True)
    def _tokenize_1d(self, strings):
        words = tf.strings.split(strings, sep=WORD_SEPARATOR)
        words = tf.ragged.boolean_mask(words, tf.strings.length(words) > 0)
        return words.with_flat_values(self._pieces(words.flat_values))

    def tokenize_with_offsets(self, texts, unit="BYTE"):
        """``(ids, starts, ends)``, each ``[batch, words, pieces]``, for RAW texts (not pre-tokenized): a
        list or 1-D tensor of them (other shapes are flattened), or one text (then ``[words, pieces]``).

        Eager only (MeCab runs in Python). Offsets are into the original texts: UTF-8 bytes
        (``unit="BYTE"``) or characters (``"UTF8_CHAR"``: ``str`` indices of the text decoded with
        ``errors="replace"``). A piece gets the span of the input characters it comes from; an
        ``[UNK]`` word and a special token the whole word's.
        """
        check_offset_unit(unit)
        if isinstance(texts, (tf.Tensor, tf.RaggedTensor)) and not tf.executing_eagerly():
            raise TokenizerInputError(
                f"{type(self).__name__} ({self.spec.type!r} tokenizer).tokenize_with_offsets runs MeCab in Python: "
                "call it eagerly, or give the graph pre_tokenize()'s strings through tokenize(..., pre_tokenized=True)")
        shape_source = texts
        texts = _python_texts(texts)
        all_words = [self._words(t, spans=True) for t in texts]
        joined = [WORD_SEPARATOR.join(w for w, _, _ in words) for words in all_words]
        ids = self._graphs.ids(tf.constant(joined, tf.string, shape=[len(joined)]))
        starts, ends = [], []
        for text, words, row in zip(texts, all_words, ragged_to_lists(ids)):
            byte_at = byte_positions(text) if unit == "BYTE" else None
            row_starts, row_ends = [], []
            for (word, char_starts, char_ends), pieces in zip(words, row):
                spans = self._piece_spans(word, char_starts, char_ends, pieces)
                if byte_at is not None:
                    spans = [(byte_at[s], byte_at[e]) for s, e in spans]
                row_starts.append([s for s, _ in spans])
                row_ends.append([e for _, e in spans])
            starts.append(row_starts)
            ends.append(row_ends)

        def ragged(rows):
            return tf.RaggedTensor.from_row_splits(
                tf.RaggedTensor.from_row_lengths(
                    tf.constant([x for r in rows for w in r for x in w], tf.int64, shape=[ids.flat_values.shape[0]]),
                    tf.constant([len(w) for r in rows for w in r], tf.int64, shape=[ids.values.nrows()])),
                ids.row_splits)

        out = (ids, ragged(starts), ragged(ends))
        if isinstance(shape_source, str) or (isinstance(shape_source, (tf.Tensor, np.ndarray, bytes))
                                             and np.ndim(shape_source) == 0):
            return tuple(r[0] for r in out)
        return out

    def _piece_spans(self, word, starts, ends, pieces):
        """Spans of a word's pieces: ``starts``/``ends`` hold the text span of each of its characters."""
        if len(pieces) == 1:  # a one-piece word, an [UNK] word, a special token: the whole word
            return [(starts[0], ends[-1])]
        spans, pos = [], 0
        for n in self.piece_lengths(pieces):
            spans.append((starts[pos], ends[pos + n - 1]))
            pos += n
        return spans

    def get_config(self):
        config = super().get_config()
        config.update(vocab=list(self.vocab), mecab_dic=self.mecab_dic)
        return config


def _python_texts(texts) -> list:
    """A flat list of str/bytes from a str, bytes, list, numpy array or eager string tensor."""
    if isinstance(texts, (str, bytes)):
        return [texts]
    if isinstance(texts, tf.RaggedTensor):
        raise TypeError("the mecab-* tokenizers take a list or 1-D tensor of texts, got a RaggedTensor")
    if isinstance(texts, tf.Tensor):
        texts = texts.numpy()
        if isinstance(texts, bytes):  # a scalar
            return [texts]
    if isinstance(texts, np.ndarray):
        return [t for t in texts.reshape(-1).tolist()]
    return list(texts)


@register_tokenizer("mecab-wordpiece")
class MecabWordpieceTokenizer(_MecabTokenizer):
    """NFKC, MeCab words, WordPiece within each word (transformers' ``BertJapaneseTokenizer``,
    ``subword_tokenizer_type="wordpiece"``). See the module docstring."""

    def _build_graph_part(self):
        # The kernel's byte limit is set so that no word within the character limit reaches it;
        # longer words are replaced by [UNK] before it runs (_pieces).
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            self.vocab, suffix_indicator=SUFFIX_INDICATOR, unknown_token=vocab_lib.UNK,
            max_bytes_per_word=MAX_CHARS_PER_WORD * _MAX_UTF8_BYTES_PER_CHAR,
            token_out_type=tf.int32, no_pretokenization=True)
        self._piece_chars = [len(t) for t in self.vocab]

    def _split_surface(self, surface):
        # transformers' WordpieceTokenizer runs whitespace_tokenize (str.split) on each MeCab word.
        parts = surface.split()
        if len(parts) == 1 and len(parts[0]) == len(surface):  # the common case: no white space
            return [(surface, 0)]
        return [(m.group(), m.start()) for m in _NON_SPACE.finditer(surface)]

    def _pieces(self, words):
        too_long = tf.strings.length(words, unit="UTF8_CHAR") > MAX_CHARS_PER_WORD
        return self._wordpiece.tokenize(tf.where(too_long, vocab_lib.UNK, words))

    @classmethod
    def _learn_tokens(cls, files, options, log):
        from kbert.text.vocab_learning_ja import learn_mecab_wordpiece

        return learn_mecab_wordpiece(files, options.vocab_size, options.max_unique_chars, options.min_count or 2,
                                     options.num_unused, log=log)

    def piece_lengths(self, pieces):
        """Characters of its word that each of a word's pieces (ids, in order) covers: the first
        piece's length in the vocabulary, later ones' without their "##". A word of one piece (an
        [UNK] word, a special token) spans the whole word whatever its piece's length."""
        return [self._piece_chars[p] - (len(SUFFIX_INDICATOR) if k else 0) for k, p in enumerate(pieces)]


@register_tokenizer("mecab-character")
class MecabCharacterTokenizer(_MecabTokenizer):
    """NFKC, MeCab words, one token per character (transformers' ``BertJapaneseTokenizer``,
    ``subword_tokenizer_type="character"``; a character outside the vocabulary is ``[UNK]``)."""

    def _build_graph_part(self):
        self._chars = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(tf.constant(self.vocab), tf.range(len(self.vocab), dtype=tf.int32)),
            default_value=self._special_ids["unknown_id"])
        specials = list(vocab_lib.RESERVED_TOKENS)
        self._specials = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(specials), tf.constant([self.vocab.index(t) for t in specials], tf.int32)),
            default_value=-1)

    def _split_surface(self, surface):
        return [(surface, 0)] if surface else []

    def _pieces(self, words):
        # A special token written in the text is one word and one token; any other word is split
        # into characters. Special words get no characters and one special id, so that
        # concatenating the two per word gives each word its pieces.
        special = self._specials.lookup(words)
        is_special = special >= 0
        chars = tf.strings.unicode_split(tf.where(is_special, "", words), "UTF-8", errors="replace")
        char_ids = tf.ragged.map_flat_values(self._chars.lookup, chars)
        special_ids = tf.RaggedTensor.from_row_lengths(
            tf.boolean_mask(special, is_special), tf.cast(is_special, tf.int64))
        return tf.concat([char_ids, special_ids], axis=1)

    @classmethod
    def _learn_tokens(cls, files, options, log):
        from kbert.text.vocab_learning_ja import learn_mecab_characters

        return learn_mecab_characters(files, options.vocab_size, options.num_unused, log=log)

    def piece_lengths(self, pieces):
        """Characters of its word that each of a word's pieces covers: one each."""
        return [1] * len(pieces)


def ragged_to_lists(ragged) -> list:
    """An eager ``[n, words, pieces]`` RaggedTensor as nested lists (``to_list`` slices it row by
    row, an eager op per row; docs/bench/code-notes)."""
    values = ragged.flat_values.numpy().tolist()
    for splits in reversed(ragged.nested_row_splits):
        splits = splits.numpy().tolist()
        values = [values[a:b] for a, b in zip(splits[:-1], splits[1:])]
    return values
