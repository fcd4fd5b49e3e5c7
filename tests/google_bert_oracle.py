"""An independent oracle for the text tests: google-research/bert's tokenization rules in Python.

``GoogleBertTokenizer`` re-types google-research/bert ``tokenization.py`` (``FullTokenizer``:
BasicTokenizer + WordpieceTokenizer, ``max_input_chars_per_word=200``) and
``truncate_seq_pair`` its ``run_classifier.py`` ``_truncate_seq_pair``, character by character
with ``unicodedata``, sharing no code with kbert. ``tests/text/test_google_reference.py``
checks the oracle itself against the Hugging Face reference outputs in ``shared/data/reference``
(where the data README says google-research/bert agrees, or gives the ``google_bert`` result), so
that the text tests can trust it on generated inputs. A helpers module, not a test module: test
files import from here, never from each other.
"""

from __future__ import annotations

import json
import unicodedata

from conftest import REFERENCE


def _is_whitespace(c):
    return c in " \t\n\r" or unicodedata.category(c) == "Zs"


def _is_control(c):
    return c not in "\t\n\r" and unicodedata.category(c) in ("Cc", "Cf")


def _is_punctuation(c):
    cp = ord(c)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(c).startswith("P")


def _is_chinese_char(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def read_vocab(path):
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f]


class GoogleBertTokenizer:
    def __init__(self, vocab, do_lower_case=True, max_input_chars_per_word=200):
        self.vocab = {t: i for i, t in enumerate(vocab)}
        self.do_lower_case = do_lower_case
        self.max_chars = max_input_chars_per_word

    def basic_tokenize(self, text):
        if isinstance(text, bytes):
            text = text.decode("utf-8", "ignore")
        cleaned = []
        for c in text:
            if ord(c) == 0 or ord(c) == 0xFFFD or _is_control(c):
                continue
            cleaned.append(" " if _is_whitespace(c) else c)
        text = "".join(f" {c} " if _is_chinese_char(ord(c)) else c for c in cleaned)
        split_tokens = []
        for token in text.split():
            if self.do_lower_case:
                token = token.lower()
                token = "".join(c for c in unicodedata.normalize("NFD", token)
                                if unicodedata.category(c) != "Mn")
            words, start_new = [], True
            for c in token:
                if _is_punctuation(c):
                    words.append([c])
                    start_new = True
                else:
                    if start_new:
                        words.append([])
                    start_new = False
                    words[-1].append(c)
            split_tokens.extend("".join(w) for w in words)
        return " ".join(split_tokens).split()

    def wordpiece(self, word):
        chars = list(word)
        if len(chars) > self.max_chars:
            return ["[UNK]"]
        start, pieces = 0, []
        while start < len(chars):
            end, piece = len(chars), None
            while start < end:
                candidate = "".join(chars[start:end])
                if start > 0:
                    candidate = "##" + candidate
                if candidate in self.vocab:
                    piece = candidate
                    break
                end -= 1
            if piece is None:
                return ["[UNK]"]
            pieces.append(piece)
            start = end
        return pieces

    def word_ids(self, text):
        """[[ids of word 1], [ids of word 2], ...]"""
        return [[self.vocab[p] for p in self.wordpiece(w)] for w in self.basic_tokenize(text)]

    def ids(self, text):
        return [i for word in self.word_ids(text) for i in word]


def truncate_seq_pair(tokens_a, tokens_b, max_length):
    """run_classifier.py: pop from the longer list (from B on ties) until they fit."""
    tokens_a, tokens_b = list(tokens_a), list(tokens_b)
    while len(tokens_a) + len(tokens_b) > max_length:
        if len(tokens_a) > len(tokens_b):
            tokens_a.pop()
        else:
            tokens_b.pop()
    return tokens_a, tokens_b


def google_pack(ids_a, ids_b, seq_length, cls=101, sep=102, pad=0):
    """run_classifier.py convert_single_example: (input_ids, input_mask, segment_ids)."""
    if ids_b is None:
        ids_a = ids_a[: seq_length - 2]
        tokens, types = [cls] + ids_a + [sep], [0] * (len(ids_a) + 2)
    else:
        ids_a, ids_b = truncate_seq_pair(ids_a, ids_b, seq_length - 3)
        tokens = [cls] + ids_a + [sep] + ids_b + [sep]
        types = [0] * (len(ids_a) + 2) + [1] * (len(ids_b) + 1)
    padding = seq_length - len(tokens)
    return tokens + [pad] * padding, [1] * len(tokens) + [0] * padding, types + [0] * padding


def reference_lines():
    with open(REFERENCE / "wordpiece_uncased.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def expected_ids(line):
    """The google-research/bert result for a reference line."""
    return line["google_bert"]["ids"] if "google_bert" in line else line["ids"]


def minilm_rows():
    with open(REFERENCE / "minilm_encoder_inputs.json", encoding="utf-8") as f:
        return json.load(f)["rows"]


def to_lists(ragged):
    """RaggedTensor -> nested lists, fast (``RaggedTensor.to_list`` is ~50 ms per call)."""
    values = ragged.flat_values.numpy().tolist()
    for splits in reversed(ragged.nested_row_splits):
        splits = splits.numpy().tolist()
        values = [values[splits[i]:splits[i + 1]] for i in range(len(splits) - 1)]
    return values
