"""Learning vocabularies for the Japanese tokenizer types: mecab-wordpiece, mecab-character, sentencepiece.

  * ``mecab-wordpiece`` (the Tohoku BERT recipe): text NFKC-normalized and split into MeCab words
    (fugashi + unidic-lite, the surfaces transformers' ``MecabTokenizer`` gives), the words
    counted, then tensorflow-text's WordPiece learner on the counts, as for ``wordpiece``
    (``kbert.text.vocab_learning.learn_from_counts``), with no lower-casing.
  * ``mecab-character``: the five special tokens, then every character of the MeCab words, most
    frequent first (the layout of ``../shared/data/vocab/ja-char/``), at most ``vocab_size``.
  * ``sentencepiece``: the ``sentencepiece`` trainer (unigram, ``nmt_nfkc``, character coverage
    0.9995) with BERT's special tokens as in ``../shared/data/vocab/ja-sentencepiece/``:
    ``[PAD]`` = 0, ``[UNK]`` = 1, control symbols ``[CLS] [SEP] [MASK]`` = 2-4, no BOS/EOS.

The alphabet of a WordPiece vocabulary is ``kbert.text.vocab_learning.default_alphabet_size``'s,
for every type.

fugashi and sentencepiece are the ``[ja]`` extra, imported when a type needs them.
"""

from __future__ import annotations

import collections
import importlib
import os
import time
import unicodedata

from kbert.errors import MissingExtra, OptionsError
from kbert.text.mecab_limits import mecab_pieces
from kbert.text.vocab_learning import (CHARACTER_COVERAGE, CorpusError, _log, character_counts,
                                       default_alphabet_size, learn_from_counts, reserved_tokens)

# A sentencepiece line longer than its default (4,192 bytes) is skipped; Aozora paragraphs are longer.
_MAX_SENTENCE_BYTES = 1 << 16
_SPECIAL_SENTENCEPIECE = {"pad_id": 0, "unk_id": 1, "bos_id": -1, "eos_id": -1, "pad_piece": "[PAD]",
                          "unk_piece": "[UNK]", "control_symbols": ["[CLS]", "[SEP]", "[MASK]"]}


def _require(module: str):
    try:
        return importlib.import_module(module)  # module names from a fixed table
    except ImportError:
        raise MissingExtra(f"this tokenizer type needs the Python package {module!r}: "
                           "pip install 'kbert[ja]' (fugashi, unidic-lite, sentencepiece)",
                           extra="ja", name=module) from None


def mecab_word_splitter(mecab_dic: str = "unidic_lite"):
    """``split(text) -> [MeCab surfaces of NFKC(text)]``, as transformers' MecabTokenizer.

    One small function on purpose: ``kbert.text.mecab`` (the mecab-* tokenizers) owns MeCab for
    tokenization; this is the word splitting vocabulary learning needs, and can be pointed at it.
    """
    fugashi = _require("fugashi")
    if mecab_dic != "unidic_lite":
        raise OptionsError(f"mecab_dic {mecab_dic!r} is not supported for vocabulary learning (only 'unidic_lite')",
                           option="mecab_dic", value=mecab_dic)
    dic = _require("unidic_lite").DICDIR
    tagger = fugashi.GenericTagger(f'-d "{dic}" -r "{os.path.join(dic, "mecabrc")}" ')

    def split(text: str) -> list[str]:
        return [word.surface for piece in mecab_pieces(unicodedata.normalize("NFKC", text)) for word in tagger(piece)]

    return split


def _lines(files):
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            yield from f


def count_mecab_words(files, log=None) -> collections.Counter:
    """{MeCab word: count} over the lines of ``files``."""
    split = mecab_word_splitter()
    counts: collections.Counter = collections.Counter()
    start = last = time.monotonic()
    for n, line in enumerate(_lines(files), 1):
        counts.update(split(line))
        if log and time.monotonic() - last >= 2.0:
            _log(log, f"MeCab: {n} lines, {len(counts)} distinct words, {time.monotonic() - start:.0f} s")
            last = time.monotonic()
    counts.pop("", None)
    if log:
        _log(log, f"MeCab: {len(counts)} distinct words in {time.monotonic() - start:.0f} s")
    return counts


def learn_mecab_wordpiece(files, vocab_size, max_unique_chars=None, min_count=2, num_unused=0, log=None):
    """A WordPiece vocabulary over MeCab words (no lower-casing)."""
    counts = count_mecab_words(files, log)
    if not counts:
        raise CorpusError(f"the corpus has no MeCab words in {len(files)} file(s)")
    if max_unique_chars is None:
        max_unique_chars = default_alphabet_size(character_counts(counts), vocab_size)
    return learn_from_counts(dict(counts), vocab_size, reserved_tokens(num_unused),
                             max_unique_chars=max_unique_chars, min_count=min_count, log=log)


def learn_mecab_characters(files, vocab_size, num_unused=0, log=None):
    """Special tokens, then the characters of the MeCab words, most frequent first (ties: code point)."""
    counts = count_mecab_words(files, log)
    reserved = reserved_tokens(num_unused)
    chars = sorted(character_counts(counts).items(), key=lambda kv: (-kv[1], kv[0]))
    if not chars:
        raise CorpusError(f"the corpus has no characters in {len(files)} file(s)")
    return reserved + [c for c, _ in chars if c not in reserved][:max(vocab_size - len(reserved), 0)]


def learn_sentencepiece(files, vocab_size, model_path, character_coverage=CHARACTER_COVERAGE, log=None):
    """Trains a unigram SentencePiece model with BERT's special tokens; writes ``model_path`` (and .vocab)."""
    spm = _require("sentencepiece")
    model_path = os.fspath(model_path)
    if not model_path.endswith(".model"):
        raise OptionsError(f"a SentencePiece model file must end in .model, got {model_path!r}",
                           option="out", value=model_path)
    prefix = model_path[:-len(".model")]
    if log:
        _log(log, f"training SentencePiece (unigram, {vocab_size} pieces, nmt_nfkc, coverage {character_coverage})")
    start = time.monotonic()
    try:
        spm.SentencePieceTrainer.train(
            input=",".join(files), model_prefix=prefix, vocab_size=vocab_size, model_type="unigram",
            normalization_rule_name="nmt_nfkc", character_coverage=character_coverage,
            max_sentence_length=_MAX_SENTENCE_BYTES, hard_vocab_limit=False, minloglevel=2,
            num_threads=os.cpu_count() or 1, **_SPECIAL_SENTENCEPIECE)
    except RuntimeError as e:
        raise CorpusError(f"sentencepiece could not learn from {len(files)} file(s): {e}") from None
    if log:
        _log(log, f"wrote {model_path} in {time.monotonic() - start:.0f} s")
    return model_path


# -- the lower-casing hazard for Japanese ----------------------------------------------------------
def _is_kana(c: str) -> bool:
    return "\u3040" <= c <= "\u30ff" or "\uff66" <= c <= "\uff9f"


def _is_voiced_kana(c: str) -> bool:
    """が, ぱ, ヴ ...: kana whose decomposition carries a (semi-)voicing mark that accent stripping drops."""
    return _is_kana(c) and any(m in unicodedata.normalize("NFD", c) for m in "\u3099\u309a")


def scan_kana(files, max_bytes=1 << 20) -> tuple[int, list[str]]:
    """(number of kana, a few voiced kana) in the first ``max_bytes`` of each file."""
    kana, voiced = 0, []
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(max_bytes)
        for c in text:
            if _is_kana(c):
                kana += 1
                if len(voiced) < 5 and _is_voiced_kana(c) and c not in voiced:
                    voiced.append(c)
    return kana, voiced


def _strip_voicing(c: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFD", c) if ch not in "\u3099\u309a")


def voicing_warning(voiced) -> str:
    examples = ", ".join(f"{c} -> {_strip_voicing(c)}" for c in voiced[:3])
    return (f"warning: lower-casing strips accents, and with them the voicing marks of kana ({examples}): "
            "Japanese text loses distinctions. Use --cased (or a Japanese tokenizer type: "
            "mecab-wordpiece, mecab-character, sentencepiece).")

# -- each type's learn_vocab (kbert.text.mecab, kbert.text.sentencepiece, kbert.text.tokenizer_layer) -----
def choose_lower_case(files, lower_case: bool | None, log=None) -> bool:
    """WordPiece's lower-casing: ``lower_case`` when given, otherwise on unless the text has kana.

    Lower-casing strips accents, and NFD accent stripping removes the voicing marks of kana
    (が -> か, ぱ -> は): Japanese text is therefore kept cased by default, and a forced
    lower-casing of text with voiced kana is warned about.
    """
    if lower_case is False:
        return False
    kana, voiced = scan_kana(files)
    if lower_case:
        if voiced and log:
            _log(log, voicing_warning(voiced))
        return True
    if kana:
        if log:
            _log(log, f"Japanese text ({kana} kana in the first MB of each file): not lower-casing "
                      "(--uncased to force)")
        return False
    return True


def check_cased(tokenizer_type: str, options) -> None:
    """The Japanese types never lower-case (lower-casing strips the voicing marks of kana)."""
    if options.lower_case:
        raise OptionsError(f"--uncased: tokenizer type {tokenizer_type} never lower-cases", option="uncased")
