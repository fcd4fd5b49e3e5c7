"""google-research/bert's BasicTokenizer text cleaning, as TensorFlow graph ops.

The original (``tokenization.py``) does, per input string:
  1. decode UTF-8 dropping invalid bytes (``errors="ignore"``);
  2. drop U+0000, U+FFFD and control characters (categories Cc and Cf, except tab, LF, CR);
     map whitespace (space, tab, LF, CR, Zs) to a space;
  3. put spaces around CJK ideographs;
  4. split on whitespace; for uncased models lower-case each word (``str.lower``), NFD-normalise
     it and drop nonspacing marks (Mn);
  5. split each word on punctuation (ASCII non-alphanumerics and Unicode P*);
  6. WordPiece each word (longer than 200 characters -> ``[UNK]``).

Steps 1, 2 and 4's character mapping are done here with ``tf.strings`` / ``tensorflow_text``
ops; the splitting of steps 3-5 and the WordPiece of step 6 are left to tensorflow-text's
``FastWordpieceTokenizer``, whose pre-tokenization splits on Unicode whitespace, on the same
punctuation set and on the same CJK ranges (``IsPunctuationOrChineseChar``). We do not use
tensorflow-text's own lower-casing (``BertTokenizer(lower_case=True)``, ``FastBertNormalizer``):
it is NFKC_Casefold, which maps full-width punctuation to ASCII and ``µ`` to ``μ`` and so
disagrees with the original on 162 of the 3,000 reference lines; it also turns control
characters into spaces instead of removing them.

Models converted from Hugging Face folders follow the rules of the library that reads those folders
(``rules``): ``"transformers"`` (its Python ``BertTokenizer``) and ``"tokenizers"`` (the Rust
``BertNormalizer`` of a ``tokenizer.json``) differ from the original in that they remove every
character of category C* (also private use and unassigned code points), lower-case one character at a
time (a capital sigma becomes ``σ`` wherever it stands), and take ``strip_accents`` separately from
lower-casing; ``"transformers"`` also NFC-normalises the cleaned text.

The mapping is done on whole strings (not per word) because it is equivalent: control characters
are removed before lower-casing (they would otherwise end a word for the Final_Sigma rule), and
``tf.strings.lower`` (ICU) applies the same context rule (word-final capital sigma -> ``ς``)
as Python's ``str.lower``, whose context never crosses whitespace.
"""

from __future__ import annotations

import tensorflow as tf
import tensorflow_text as tf_text

from kbert.errors import OptionsError

# Cc without tab, LF, CR (U+0000 is in Cc), Cf, and U+FFFD (what invalid bytes decode to).
CONTROL_PATTERN = r"[\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F\p{Cf}\x{FFFD}]"
NONSPACING_MARK_PATTERN = r"\p{Mn}"


# Strings made only of these (printable ASCII, tab, LF, CR) have no invalid bytes, control
# characters, accents or non-ASCII letters: cleaning them is ASCII lower-casing (or nothing).
PLAIN_ASCII_PATTERN = r"[\x20-\x7E\t\n\r]*"

GOOGLE, TRANSFORMERS, TOKENIZERS = "google", "transformers", "tokenizers"
RULES = (GOOGLE, TRANSFORMERS, TOKENIZERS)
# Python's and Rust's BERT cleaning drop every C* character but tab, LF, CR. RE2 has no \p{Cn}: the
# unassigned code points are those of no other category.
OTHER_PATTERN = (r"[\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F\p{Cf}\p{Co}\p{Cs}\x{FFFD}]"
                 r"|[^\p{L}\p{M}\p{N}\p{P}\p{S}\p{Z}\p{C}]")
# The only letter whose lower case depends on its neighbours (Final_Sigma): lower-cased on its own
# it is always the medial form.
CAPITAL_SIGMA = "\u03a3"


def check_rules(rules: str) -> str:
    if rules not in RULES:
        raise OptionsError(f"rules must be one of {RULES}, got {rules!r}", option="rules", value=rules)
    return rules


def normalize(strings: tf.Tensor, lower_case: bool = True, strip_accents: bool | None = None,
              rules: str = GOOGLE) -> tf.Tensor:
    """Cleans UTF-8 strings of any shape as BERT's BasicTokenizer does before splitting.

    Invalid UTF-8 bytes are dropped, control characters removed, and for ``lower_case`` the
    text is lower-cased; with ``strip_accents`` (None: as ``lower_case``) it is NFD-normalised and
    stripped of nonspacing marks (accents). ``rules``: see the module docstring.

    Plain-ASCII strings (most English text) take a short path with the same result: one regex
    match and a byte-wise lower-case, about 0.5 us a sentence instead of 2.9 us for the five
    Unicode passes of ``normalize_unicode``, which only the other strings go through.
    """
    strings = tf.convert_to_tensor(strings, tf.string)
    flat = tf.reshape(strings, [-1])
    plain = tf.strings.regex_full_match(flat, PLAIN_ASCII_PATTERN)
    result = tf.strings.lower(flat) if lower_case else flat
    others = tf.where(tf.logical_not(plain))
    cleaned = normalize_unicode(tf.gather_nd(flat, others), lower_case, strip_accents, rules)
    result = tf.tensor_scatter_nd_update(result, others, cleaned)
    return tf.reshape(result, tf.shape(strings))


def normalize_unicode(strings: tf.Tensor, lower_case: bool = True, strip_accents: bool | None = None,
                      rules: str = GOOGLE) -> tf.Tensor:
    """``normalize`` for any UTF-8 (or invalid) input, with tf.strings / tensorflow-text ops."""
    check_rules(rules)
    strip = lower_case if strip_accents is None else bool(strip_accents)
    text = tf.strings.unicode_transcode(strings, "UTF-8", "UTF-8", errors="ignore")
    text = tf.strings.regex_replace(text, CONTROL_PATTERN if rules == GOOGLE else OTHER_PATTERN, "")
    if lower_case:
        if rules != GOOGLE:
            text = tf.strings.regex_replace(text, CAPITAL_SIGMA, "\u03c3")
        text = tf.strings.lower(text, encoding="utf-8")
    if rules == TRANSFORMERS:
        text = tf_text.normalize_utf8(text, "NFC")
    if strip:
        text = strip_marks(text)
    return text


def strip_marks(text: tf.Tensor) -> tf.Tensor:
    """NFD, then nonspacing marks (Mn) removed: BERT's accent stripping."""
    text = tf_text.normalize_utf8(text, "NFD")
    return tf.strings.regex_replace(text, NONSPACING_MARK_PATTERN, "")


def normalize_per_char(strings: tf.Tensor, lower_case: bool = True, strip_accents: bool | None = None,
                       rules: str = GOOGLE):
    """The same cleaning, one input character at a time, for offset bookkeeping.

    Args:
      strings: a 1-D string tensor.

    Returns:
      ``(normalized_lengths, starts, ends)``, ragged [batch, chars]: for every character of the
      input (invalid byte sequences count as one U+FFFD character each) the UTF-8 length of what
      it becomes after ``normalize`` and its byte span ``[start, end)`` in the input.
    """
    chars, starts = tf.strings.unicode_split_with_offsets(
        strings, "UTF-8", errors="replace", replacement_char=0xFFFD)
    starts = tf.cast(starts, tf.int64)
    normalized = normalize(chars.flat_values, lower_case, strip_accents, rules)
    lengths = chars.with_flat_values(tf.strings.length(normalized, unit="BYTE"))
    # A character ends where the next one starts, the last one at the end of its string.
    total = tf.cast(tf.strings.length(strings, unit="BYTE"), tf.int64)
    next_starts = tf.concat([starts.flat_values[1:], [0]], axis=0)
    row_limits = starts.row_limits()
    is_last = tf.range(tf.size(next_starts, out_type=tf.int64)) + 1 == tf.gather(
        row_limits, starts.value_rowids())
    ends = tf.where(is_last, tf.gather(total, starts.value_rowids()), next_starts)
    return lengths, starts, starts.with_flat_values(ends)
