"""Learning a WordPiece vocabulary from raw text.

Words are counted with the tokenizer's own cleaning (``kbert.text.normalize``) and the same word
splitting as its tensorflow-text kernel (whitespace, punctuation, CJK ideographs), in a
``tf.data`` pipeline; the vocabulary is then learned from the counts by tensorflow-text's
WordPiece learner (``wordpiece_tokenizer_learner_lib.learn``, the algorithm behind its
``bert_vocab_from_dataset``). We do not call ``bert_vocab_from_dataset`` itself because its
word splitting is tensorflow-text's ``BertTokenizer``, whose lower-casing is NFKC_Casefold and
whose whitespace is ASCII only: a vocabulary learned that way would not fit our tokenizer.
"""

from __future__ import annotations

import collections
import dataclasses
import glob
import os
import sys
import time

import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

from kbert.errors import Error, OptionsError
from kbert.text.normalize import normalize
from kbert.text.vocab import RESERVED_TOKENS

# The word boundaries of FastWordpieceTokenizer's pre-tokenization (u_isUWhiteSpace,
# IsPunctuationOrChineseChar): Unicode White_Space; ASCII non-alphanumerics and P*; the CJK
# ideograph ranges of google-research/bert's _is_chinese_char. Punctuation and CJK characters
# are words of their own.
_WHITESPACE = r"[\t\n\x0B\x0C\r \x{85}\p{Zs}\x{2028}\x{2029}]"
_PUNCTUATION = r"[!-/:-@\[-`{-~\p{P}]"
_CJK = (r"[\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{20000}-\x{2A6DF}\x{2A700}-\x{2B73F}"
        r"\x{2B740}-\x{2B81F}\x{2B820}-\x{2CEAF}\x{F900}-\x{FAFF}\x{2F800}-\x{2FA1F}]")
_KEEP = f"{_PUNCTUATION}|{_CJK}"
_DELIMITERS = f"{_WHITESPACE}|{_KEEP}"
# The alphabet of a WordPiece vocabulary (default_alphabet_size): the characters that cover 99.95%
# of the corpus' character occurrences (SentencePiece's default coverage for Japanese and Chinese),
# at least 1,000 (enough for English and other alphabetic scripts) and at most a quarter of the
# vocabulary (each character is kept alone and as ``##c``). A Japanese novel needs about 3,000
# characters; 1,000 would turn a third of its kanji into [UNK].
CHARACTER_COVERAGE = 0.9995
MIN_ALPHABET = 1000


@dataclasses.dataclass(frozen=True)
class VocabOptions:
    """A vocabulary to learn, for a tokenizer type's ``learn_vocab`` (``python -m kbert.vocab``)."""

    vocab_size: int
    lower_case: bool | None = None  # None: the type decides (WordPiece: yes, unless the text has kana)
    num_unused: int = 0  # [unusedN] slots after the special tokens
    max_unique_chars: int | None = None  # None: default_alphabet_size
    min_count: int | None = None  # None: the type's default


class CorpusError(Error, ValueError):
    """A corpus that cannot be learned from (no files, only empty files, no words)."""


def split_words(strings, lower_case=True):
    """Cleaned words of each string: RaggedTensor [batch, words] of the tokenizer's words."""
    return tf_text.regex_split(normalize(strings, lower_case), _DELIMITERS, _KEEP)


def resolve_corpus(patterns) -> list[str]:
    """Files matching the glob patterns; a pattern matching nothing or an empty corpus is an error."""
    if isinstance(patterns, (str, os.PathLike)):
        patterns = [patterns]
    files = []
    for pattern in patterns:
        pattern = os.fspath(pattern)
        matched = sorted(p for p in glob.glob(pattern, recursive=True) if os.path.isfile(p))
        if not matched:
            raise CorpusError(f"--input {pattern!r} matches no files")
        files.extend(m for m in matched if m not in files)
    if sum(os.path.getsize(f) for f in files) == 0:
        raise CorpusError(f"the corpus is empty: {len(files)} file(s), all of 0 bytes: {', '.join(files[:5])}")
    return files


def count_words(files, lower_case=True, batch_size=4096, log=None) -> dict:
    """{word: count} over the lines of ``files`` (UTF-8 text), with progress lines to ``log``."""
    total = sum(os.path.getsize(f) for f in files)
    dataset = (tf.data.TextLineDataset(files)
               .batch(batch_size)
               .map(lambda lines: (split_words(lines, lower_case).flat_values,
                                   tf.reduce_sum(tf.strings.length(lines)) + tf.size(lines)),
                    num_parallel_calls=tf.data.AUTOTUNE)
               .prefetch(tf.data.AUTOTUNE))
    counts: dict = {}
    done, start, last_report = 0, time.monotonic(), 0.0
    for words, nbytes in dataset.as_numpy_iterator():
        for word in words:
            counts[word] = counts.get(word, 0) + 1
        done += int(nbytes)
        now = time.monotonic()
        if log and now - last_report >= 2.0:
            _log(log, f"counting words: {done / 1e6:.1f}/{total / 1e6:.1f} MB ({100 * done / max(total, 1):.0f}%), "
                      f"{len(counts)} distinct words, {now - start:.0f} s")
            last_report = now
    if log:
        _log(log, f"counted {len(counts)} distinct words in {done / 1e6:.1f} MB, {time.monotonic() - start:.0f} s")
    return {w.decode("utf-8"): c for w, c in counts.items()}


def reserved_tokens(num_unused=0) -> list[str]:
    return list(RESERVED_TOKENS) + [f"[unused{i}]" for i in range(num_unused)]


def character_counts(word_counts) -> collections.Counter:
    chars: collections.Counter = collections.Counter()
    for word, count in word_counts.items():
        for c in word:
            chars[c] += count
    return chars


def default_alphabet_size(char_counts, vocab_size: int, coverage: float = CHARACTER_COVERAGE) -> int:
    """Characters covering ``coverage`` of all occurrences, at most ``vocab_size // 4``, at least 1,000."""
    total = sum(char_counts.values())
    covered, needed = 0, 0
    for _, count in char_counts.most_common():
        if covered >= coverage * total:
            break
        covered += count
        needed += 1
    return max(MIN_ALPHABET, min(needed, vocab_size // 4))


def learn_vocab(patterns, vocab_size, lower_case=True, num_unused=0, max_unique_chars=None,
                min_count=10, log="stderr") -> list[str]:
    """A WordPiece vocabulary of at most ``vocab_size`` tokens learned from text files.

    It starts with ``[PAD] [UNK] [CLS] [SEP] [MASK]`` and ``num_unused`` ``[unusedN]`` slots,
    then every kept character (the ``max_unique_chars`` most frequent; None: enough for CJK text,
    see ``default_alphabet_size``, 1,000 for English) alone and as ``##c``,
    then learned pieces, most frequent first. Pieces seen fewer than ``min_count`` times are not
    learned (so a small corpus may give fewer than ``vocab_size`` tokens). Progress lines go to ``log`` (a text stream;
    "stderr" for the current ``sys.stderr``, None for none).
    """
    if log == "stderr":
        log = sys.stderr
    reserved = reserved_tokens(num_unused)
    if vocab_size < len(reserved) + 1:
        raise OptionsError(f"vocab size {vocab_size} leaves no room after {len(reserved)} reserved tokens",
                           option="size", value=vocab_size)
    files = resolve_corpus(patterns)
    if log:
        _log(log, f"corpus: {len(files)} file(s), {sum(map(os.path.getsize, files)) / 1e6:.1f} MB")
    counts = count_words(files, lower_case, log=log)
    if not counts:
        raise CorpusError(f"the corpus has no words (only whitespace or control characters) in {len(files)} file(s)")
    if max_unique_chars is None:
        max_unique_chars = default_alphabet_size(character_counts(counts), vocab_size)
    return learn_from_counts(counts, vocab_size, reserved, max_unique_chars=max_unique_chars,
                             min_count=min_count, log=log)


def learn_from_counts(counts, vocab_size, reserved, max_unique_chars=1000, min_count=10, log=None):
    """tensorflow-text's ``learn`` with a progress line per step of its threshold search.

    This re-states the few lines of ``wordpiece_tokenizer_learner_lib.learn`` /
    ``learn_binary_search`` (filter the words, then binary-search the frequency threshold
    whose vocabulary is within 5% below ``vocab_size``) to report each step, and to skip the steps
    whose outcome is already known: it first learns at the lowest threshold, and when even that
    vocabulary falls short of the 5% band (a corpus too small for ``vocab_size``, as the main job's
    three novels are for 8,000), a higher threshold gives no more tokens (the learner only drops
    pieces as the threshold rises; checked on the shipped corpora), so the library's
    search would only walk down to the bottom of its range (a dozen learning passes); its last
    threshold is computed and learned directly. The vocabulary is the library's either way
    (tests/text/test_vocab.py compares both cases); every learning pass is the library's.
    """
    start = time.monotonic()
    params = learner.Params(
        upper_thresh=int(1e7), lower_thresh=min_count, num_iterations=4, max_input_tokens=int(5e6),
        max_token_length=50, max_unique_chars=max_unique_chars, vocab_size=vocab_size,
        slack_ratio=0.05, include_joiner_token=True, joiner="##", reserved_tokens=reserved)
    items = list(counts.items())
    upper, lower = learner.get_search_threshs(items, params.upper_thresh, params.lower_thresh)
    words = learner.get_input_words(items, params.reserved_tokens, params.max_token_length)
    allowed = learner.get_allowed_chars(words, params.max_unique_chars)
    words = learner.filter_input_words(words, allowed, params.max_input_tokens)
    if log:
        _log(log, f"learning up to {vocab_size} tokens from {len(words)} words (alphabet of {len(allowed)} "
                  f"characters): search for the frequency threshold in [{lower}, {upper}]")

    def within(vocab):
        return len(vocab) <= vocab_size and vocab_size - len(vocab) <= params.slack_ratio * vocab_size

    def learn(thresh, what):
        vocab = learner.learn_with_thresh(words, thresh, params)
        if log:
            _log(log, f"{what}: threshold {thresh} -> {len(vocab)} tokens, {time.monotonic() - start:.0f} s")
        return vocab

    learned = {}
    if upper > lower:
        floor = learned[lower] = learn(lower, "lowest threshold")
        if len(floor) <= vocab_size and not within(floor):
            last = _last_threshold_walking_down(lower, upper)
            if log:
                _log(log, f"the corpus gives fewer than {vocab_size} tokens at any threshold: the search "
                          f"ends at {last}")
            vocab = floor if last == lower else learn(last, "last threshold")
            if log:
                _log(log, f"learned {len(vocab)} tokens in {time.monotonic() - start:.0f} s")
            return vocab
    step = 0
    while True:
        step += 1
        thresh = (upper + lower) // 2
        vocab = learned[thresh] if thresh in learned else learn(thresh, f"step {step}")
        if within(vocab) or lower >= upper or thresh <= 1:
            break
        if len(vocab) > vocab_size:
            lower = thresh + 1
        else:
            upper = thresh - 1
    if log:
        _log(log, f"learned {len(vocab)} tokens in {time.monotonic() - start:.0f} s")
    return vocab


def _last_threshold_walking_down(lower: int, upper: int) -> int:
    """The threshold at which ``learn_binary_search`` stops when every step's vocabulary is below
    the band (each step then moves ``upper`` below its threshold)."""
    while True:
        thresh = (upper + lower) // 2
        if lower >= upper or thresh <= 1:
            return thresh
        upper = thresh - 1


def write_vocab(tokens, path) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.writelines(t + "\n" for t in tokens)
    os.replace(tmp, path)


def _log(stream, message):
    print(message, file=stream, flush=True)
