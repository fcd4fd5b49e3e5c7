"""SentencePieceTokenizer: strings -> SentencePiece ids [batch, words, pieces], in the TensorFlow graph.

The ids are those of the ``sentencepiece`` package's ``SentencePieceProcessor(model).encode(text)``,
computed by TensorFlow ops (so an export takes raw strings, as TF Hub's ALBERT preprocessors do);
nothing but tensorflow-text is needed at run time. Two tensorflow-text kernels are used:

  * ids (``tokenize``, ``tokenize_flat``): ``FastSentencepieceTokenizer``. Its Viterbi search
    breaks exact score ties as ``sentencepiece`` 0.2 does; ``SentencepieceTokenizer`` (an older
    copy of the library) breaks them the other way: on the shared reference it differs on 1 line
    of 2,000 (``ハハハハハ``: ``ハ ハハハハ`` vs ``ハハハハ ハ``, equal scores). Measured: the fast
    kernel matches all 2,000 (tests/text/test_sentencepiece.py).
  * ids with offsets (``tokenize_with_offsets``): ``SentencepieceTokenizer``, the only kernel
    that reports offsets. Its ids and offsets agree with each other; on an exact tie its
    segmentation may be the other one of two equal-score segmentations.

Conventions (those of ``../shared/data/vocab/ja-sentencepiece/`` and ``python -m kbert.vocab
--tokenizer sentencepiece``): ``[PAD]`` = 0, ``[UNK]`` = 1, ``[CLS] [SEP] [MASK]`` control symbols,
no BOS/EOS. The special ids are looked up by name (``<pad>``/``<unk>``, ALBERT's spelling, are
accepted too). Control symbols are never matched in text (the package's behaviour): ``[SEP]``
written in a string is tokenized as the characters ``[``, ``SEP``, ``]``.

Words: a piece that begins with ``▁`` (U+2581, SentencePiece's whitespace mark) starts a word, as
does the first piece of every string; every other piece (no ``▁``, ``[UNK]`` included) continues
the word before it. Text without spaces (Japanese, Chinese) is therefore one word per
space-separated run: whole-word masking over such text masks whole runs, so use per-piece masking
for it.

Normalization (NFKC for ``nmt_nfkc`` models) is the model's own: ``lower_case`` must be false.
Offsets point into the input as it was given (before normalization), as the package's do.
"""

from __future__ import annotations

import base64
import hashlib
import os

import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow_text.python.ops import sentencepiece_tokenizer as tf_text_sentencepiece

from kbert.errors import OptionsError
from kbert.text.inputs import Untracked, default_shards, entry_graphs
from kbert.text.registry import asset_path, register_tokenizer
from kbert.text.spec import TokenizerSpec, TokenizerSpecError
from kbert.text.vocab import SPECIAL_TOKEN_NAMES, VocabError
from kbert.text.tokenizer_layer import CJK_VOCAB_SHARE, OFFSET_UNITS, TokenizerLayer, cjk_share, group_words

WORD_MARK = "\u2581"
DEFAULT_MODEL_FILE = "spm.model"
# Other spellings of a special token in SentencePiece models (ALBERT's spm: <pad>, <unk>).
_ALIASES = {"[PAD]": ("<pad>",), "[UNK]": ("<unk>",)}


class _SharedModelResource(tf.saved_model.experimental.TrackableResource):
    """The SentencePiece model resource of the offsets kernel, under a ``shared_name``.

    tensorflow-text makes it owned by the kernel that created it (its own TODO, b/318839908), and
    ``tf.random.set_seed`` (so ``keras.utils.set_random_seed``) clears TensorFlow's kernel cache: the
    resource is gone and every later ``tokenize_with_offsets`` fails with NotFoundError. Named, it
    lives in the resource manager for the life of the process (or of the SavedModel's session). The
    name is the model's SHA-256, so one name is always one model and two loads may share it."""

    def __init__(self, model: bytes):
        super().__init__()
        self._model = model
        self._shared_name = "kbert_sentencepiece_" + hashlib.sha256(model).hexdigest()[:32]
        _ = self.resource_handle  # created now, as tensorflow-text does

    def _create_resource(self):
        # The op tensorflow-text's own resource runs (its generated wrapper, loaded with the kernels).
        op = tf_text_sentencepiece.gen_sentencepiece_tokenizer.sentencepiece_op
        return op(model=self._model, shared_name=self._shared_name)


@register_tokenizer("sentencepiece")
class SentencePieceTokenizer(TokenizerLayer):
    """A SentencePiece model as a Keras layer (eager, ``tf.function``, ``tf.data``, SavedModel).

    Args:
      model: path to the ``.model`` file, or its bytes.
      lower_case: must be False (the model normalizes; accepted for the common tokenizer interface).
      model_proto_base64: the model bytes in base64 (what ``get_config`` writes), instead of ``model``.

    Calling it on strings of shape ``S`` gives int32 ids of shape ``S + [words, pieces]``
    (``tokenize_flat``: ``S + [pieces]``, the package's ``encode``).
    """

    @classmethod
    def from_spec(cls, spec: TokenizerSpec, directory=None, **kwargs):
        return cls(os.fspath(asset_path(spec, directory)), lower_case=spec.lower_case,
                   vocab_file_name=os.path.basename(spec.vocab_file), **kwargs)

    vocab_file_name = DEFAULT_MODEL_FILE

    @classmethod
    def check_vocab_request(cls, out, options) -> None:
        from kbert.text.vocab_learning_ja import check_cased

        check_cased(cls.tokenizer_type, options)
        if not os.fspath(out).endswith(".model"):
            raise OptionsError(f"--out {out}: a SentencePiece model file must end in .model", option="out", value=out)
        if options.num_unused:
            raise OptionsError("--unused: not supported for sentencepiece", option="unused")

    @classmethod
    def learn_vocab(cls, files, out, options, log=None):
        """A unigram SentencePiece model with BERT's special tokens (kbert.text.vocab_learning_ja;
        the ``[ja]`` extra) written to ``out`` (``.model``)."""
        from kbert.text.vocab_learning_ja import learn_sentencepiece

        learn_sentencepiece(files, options.vocab_size, out, log=log)
        spec = TokenizerSpec(type=cls.tokenizer_type, lower_case=False, vocab_file=os.path.basename(out))
        return spec, cls(os.fspath(out)).vocab_size

    def f1_unit(self) -> str:
        """"char" when the model's pieces (without the word mark) are mostly CJK text, as in a
        Japanese or Chinese model; "word" for a model of a language written with spaces."""
        pieces = [p[len(WORD_MARK):] if p.startswith(WORD_MARK) else p for p in self.get_vocabulary()]
        return "char" if cjk_share(pieces, whole_pieces=True) > CJK_VOCAB_SHARE else "word"

    def __init__(self, model=None, lower_case=False, model_proto_base64=None, vocab_file_name=None, **kwargs):
        super().__init__(**kwargs)
        if lower_case:
            raise TokenizerSpecError("tokenizer type 'sentencepiece': field 'lower_case' must be false, got True "
                                     "(the SentencePiece model does its own normalization)")
        self.lower_case = False
        self._model_path = None
        if model_proto_base64 is not None:
            proto, source = base64.b64decode(model_proto_base64), "model_proto_base64"
        elif isinstance(model, (bytes, bytearray)):
            proto, source = bytes(model), "model bytes"
        elif isinstance(model, (str, os.PathLike)):
            self._model_path = source = os.fspath(model)
            if not os.path.isfile(source):
                raise VocabError(f"{source}: SentencePiece model file not found")
            with open(source, "rb") as f:
                proto = f.read()
        else:
            raise VocabError(f"model must be a path to a SentencePiece .model file or its bytes, "
                             f"got {type(model).__name__}")
        self._proto = proto
        self._source = source
        self._vocab_file_name = vocab_file_name or (
            os.path.basename(self._model_path) if self._model_path else DEFAULT_MODEL_FILE)
        try:
            self._sp = tf_text.SentencepieceTokenizer(model=proto, out_type=tf.int32)
            self._sp._model_resource = _SharedModelResource(proto)  # see _SharedModelResource
            # Not a trackable object: its model is a constant that traced graphs capture.
            self._fast = Untracked(tokenizer=tf_text.FastSentencepieceTokenizer(proto))
            size = int(self._sp.vocab_size())
            pieces = self._sp.id_to_string(tf.range(size)).numpy()
        except (tf.errors.OpError, ValueError) as e:
            raise VocabError(f"{source}: not a SentencePiece model ({e.__class__.__name__}: "
                             f"{str(e).splitlines()[0] if str(e) else ''})") from None
        self.vocab = [p.decode("utf-8") for p in pieces]
        self._special_ids = _special_ids(self.vocab, source)
        starts = [p.startswith(WORD_MARK) for p in self.vocab]
        self._starts_word = tf.constant(starts, tf.bool)
        self.shards = default_shards()
        self._graphs = entry_graphs(self, self._tokenize_1d, self._tokenize_1d_with_offsets, OFFSET_UNITS)
        self.built = True

    # -- the tokenizer interface (kbert.text.registry) -----------------------------------------
    @property
    def spec(self) -> TokenizerSpec:
        return TokenizerSpec(type="sentencepiece", lower_case=False, vocab_file=self._vocab_file_name)

    @property
    def asset_files(self) -> dict:
        """``{"spm.model": path}``; a tokenizer built from bytes has no file (``{}``)."""
        return {self._vocab_file_name: self._model_path} if self._model_path else {}

    @property
    def model_proto(self) -> bytes:
        """The serialized SentencePiece model."""
        return self._proto

    def starts_word(self) -> list:
        """For each id, whether that piece begins a word: pieces with the ``▁`` (U+2581) marker and
        the special/control pieces (whole-word masking groups the rest with the piece before)."""
        specials = set(self.special_token_ids.values())
        return [i in specials or t.startswith("\u2581") for i, t in enumerate(self.get_vocabulary())]

    # -- tokenization (the entry points: kbert.text.tokenizer_layer) ------------------------------
    def tokenize_with_offsets(self, strings, unit="BYTE"):
        """``(ids, starts, ends)``, each ``strings.shape + [words, pieces]``.

        ``[starts, ends)`` is the span of the input a piece comes from, in UTF-8 bytes
        (``unit="BYTE"``) or code points (``unit="UTF8_CHAR"``, Python ``str`` indices of
        ``input.decode("utf-8", "replace")``). A piece that is only ``▁`` (the space before a
        word, or the dummy prefix) has an empty span.
        """
        return super().tokenize_with_offsets(strings, unit)

    def _tokenize_1d(self, strings):
        return self._words(self._fast.tokenizer.tokenize(strings))[0]

    def _tokenize_1d_with_offsets(self, strings, unit):
        pieces, starts, ends = self._sp.tokenize_with_offsets(strings)
        starts, ends = tf.cast(starts.flat_values, tf.int64), tf.cast(ends.flat_values, tf.int64)
        if unit == "UTF8_CHAR":
            starts, ends = _bytes_to_chars(strings, pieces.value_rowids(), starts, ends)
        return self._words(pieces, starts, ends)

    def _words(self, pieces, starts=None, ends=None):
        """Flat pieces [n, pieces] -> [n, words, pieces]: a word starts at ``▁`` or a string's start."""
        pieces = pieces.with_row_splits_dtype(tf.int64)
        flat = tf.cast(pieces.flat_values, tf.int32)
        row_firsts = _nonempty_row_starts(pieces)
        first_in_row = tf.scatter_nd(tf.expand_dims(row_firsts, 1), tf.ones_like(row_firsts, tf.bool),
                                     tf.shape(flat, out_type=tf.int64))
        begins_word = tf.logical_or(tf.gather(self._starts_word, flat), first_in_row)
        word_starts = tf.where(begins_word)[:, 0]
        words_per_row = tf.math.unsorted_segment_sum(
            tf.cast(begins_word, tf.int64), pieces.value_rowids(), pieces.nrows())
        values = (flat,) if starts is None else (flat, starts, ends)
        return group_words(values, word_starts, words_per_row)

    def get_config(self):
        config = super().get_config()
        config.update(model_proto_base64=base64.b64encode(self._proto).decode("ascii"),
                      vocab_file_name=self._vocab_file_name)
        return config


def _nonempty_row_starts(pieces):
    """Flat positions of the first piece of every row that has pieces."""
    starts = pieces.row_starts()
    return tf.boolean_mask(starts, pieces.row_lengths() > 0)


def _bytes_to_chars(strings, rows, starts, ends):
    """Byte offsets into ``strings[rows]`` -> code point offsets (invalid bytes count as U+FFFD each)."""
    _, char_bytes = tf.strings.unicode_decode_with_offsets(strings, "UTF-8", errors="replace")
    # Positions in the concatenation of all strings: each row's bytes follow the previous rows'.
    byte_base = tf.cumsum(tf.strings.length(strings, unit="BYTE"), exclusive=True)
    char_base = tf.cumsum(char_bytes.row_lengths(), exclusive=True)
    all_char_starts = char_bytes.flat_values + tf.gather(tf.cast(byte_base, tf.int64), char_bytes.value_rowids())
    row_bytes = tf.gather(tf.cast(byte_base, tf.int64), rows)
    row_chars = tf.gather(char_base, rows)

    def chars_before(positions):  # how many characters start before each byte position
        return tf.searchsorted(all_char_starts[tf.newaxis], (positions + row_bytes)[tf.newaxis],
                               side="left", out_type=tf.int64)[0] - row_chars

    return chars_before(starts), chars_before(ends)


def _special_ids(vocab, source) -> dict:
    index = {p: i for i, p in enumerate(vocab)}
    ids, missing = {}, []
    for name, token in SPECIAL_TOKEN_NAMES.items():
        found = [index[t] for t in (token, *_ALIASES.get(token, ())) if t in index]
        if found:
            ids[name] = found[0]
        else:
            missing.append(token)
    if missing:
        raise VocabError(f"{source}: the SentencePiece model lacks the piece(s) {', '.join(missing)} that BERT "
                         "needs (train it with user/control symbols [CLS] [SEP] [MASK], pad [PAD], unk [UNK]: "
                         "python -m kbert.vocab --tokenizer sentencepiece)")
    return ids
