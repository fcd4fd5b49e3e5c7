"""``tokenizer.json`` (Hugging Face ``tokenizers``) beside an ONNX export: written only where it gives
kbert's ids exactly, checked on a built-in adversarial sample when the export is made.

A request is encoded as kbert packs it: ``[CLS] text [SEP]`` (a pair: ``[CLS] a [SEP] b [SEP]``, type
ids 1 on ``b``), cut to the model's ``seq_length``; a tagger's words are encoded pre-split
(``is_split_into_words``: each token's ``word_id`` names its word). kbert's WordPiece rules become:

  * cleaning: a ``Replace`` of kbert's own control-character pattern (google rules) or of every
    C* character (Hugging Face rules), ``kbert.text.normalize``;
  * lower-casing: google rules lower-case whole strings, where a capital sigma at the end of a
    word is ``ς`` (Unicode's Final_Sigma): a ``Replace`` with look-around over the Cased and
    Case_Ignorable properties, then ``Lowercase``; Hugging Face rules make every capital sigma
    ``σ`` first;
  * ``NFC`` (transformers' rules), accent stripping as ``NFD`` + removing nonspacing marks (Mn
    only, as kbert: Rust's ``StripAccents`` removes every mark), spaces around CJK ideographs
    (``BertNormalizer`` doing nothing else), ``BertPreTokenizer``, ``WordPiece``;
  * special tokens written in the text stay whole under Hugging Face rules (added tokens, matched
    before normalization), and are plain text under google rules (no added tokens).

What is checked, not assumed: every string of ``SAMPLE`` (accents, Greek final sigma, Cyrillic,
Turkish İ, full-width forms, CJK, Hangul, control and zero-width characters, special tokens written
in the text, words over the length limit, empty text), long texts cut at the limit and, for a
pair model, pairs of every mix of lengths at the limit. The first request whose ids differ refuses
the file, naming it and the rule. Known refusals: MeCab and SentencePiece tokenizers (their rules
are kbert's Python and tensorflow-text steps), pair models (kbert cuts a pair as google-research/bert
does, giving text A the odd token where both are long; ``tokenizers``' longest_first gives it to the
longer text), cased models under transformers' rules (a word that becomes a special token after
cleaning stays whole there: ``never_split``), span QA and ``long_documents="windows"`` models
(run_squad.py's windows).
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np

from kbert.errors import Error

FINAL_SIGMA = r"(?<=\p{Cased}\p{Case_Ignorable}*)\x{03A3}(?!\p{Case_Ignorable}*\p{Cased})"
SAMPLE = [
    "The quick brown fox jumps over the lazy dog.",
    "Héllo wörld, naïve café — Ångström Œuvre ﬁnance ﬂow Æsop",
    "ΟΔΟΣ Σοφία ΣΊΣΥΦΟΣ σς ΑΣ. ΑΣ'Β ΑΣ\x01Α",
    "Йод ёлка ЁЖИК Й й Ёё Łódź",
    "İstanbul'da İİ ı I KIRMIZI İi Straße ẞ",
    "Ｆｕｌｌｗｉｄｔｈ　ＡＢＣ　１２３！？",
    "日本語の文 中文字符 漢字交じり 丽 한국어 각 ᅮᅮ ㄱㄴ 힣",
    "Tiếng Việt: người, Đà Nẵng; اَلْعَرَبِيَّةُ हिन्दी क़",
    "ctrl\x00\x01\x7f\u200b\u200d\ufeff chars\u00ad soft\ue000pua\tTab\r\nnl \u2028sep\u2029end \U000e0001",
    "a [MASK] b[SEP]c [CLS][PAD] [UNK]x [mask] [Mask] [MA\x00SK] [MASK\u0301] [[MASK]]",
    "e\u0301 é Å Å \u212a K Й Й",
    "x" * 120, "й" * 101, "ab" * 150,
    "", "   ",
]


@dataclasses.dataclass
class TokenizerFile:
    """The outcome: ``text`` (the tokenizer.json) or ``reason`` (why none is written); ``checked``:
    how many requests were compared."""

    text: str | None
    reason: str | None
    checked: int = 0


class Unexpressible(Error, ValueError):
    """A rule of kbert's tokenizer or packing that a tokenizer.json cannot hold."""


def request_kind(model) -> str:
    """"single", "pair" or "words": how a client's request is packed (Unexpressible if otherwise)."""
    task_type = getattr(model, "task_type", None)
    if task_type == "span_qa":
        raise Unexpressible("span QA packs run_squad.py's windows (max_query_length, doc_stride) over the "
                            "context, which a tokenizer.json cannot cut")
    if getattr(model, "windows", False) is True:
        raise Unexpressible("long_documents=windows reads long texts in windows, which a tokenizer.json cannot cut")
    if task_type == "token_tagger":
        return "words"
    if task_type == "multiple_choice" or getattr(model, "num_segments", 1) == 2:
        return "pair"
    return "single"


def _check_type(tokenizer) -> None:
    spec = tokenizer.spec
    if spec.type.startswith("mecab"):
        raise Unexpressible(f"the {spec.type} tokenizer splits words with MeCab (fugashi) in Python, which a "
                            "tokenizer.json cannot run")
    if spec.type != "wordpiece":
        raise Unexpressible(f"the {spec.type} tokenizer runs tensorflow-text's kernel with kbert's conventions "
                            "(words, special ids), which no tokenizer.json rule reproduces exactly")


def build(tokenizer, seq_length: int, kind: str):
    """A ``tokenizers.Tokenizer`` for a kbert WordPiece tokenizer (``kbert.text.BertTokenizer``)."""
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers, processors

    _check_type(tokenizer)
    vocab = tokenizer.get_vocabulary()
    special = {name: vocab[i] for name, i in tokenizer.special_token_ids.items() if name.endswith("_id")}
    tok = Tokenizer(models.WordPiece({t: i for i, t in enumerate(vocab)}, unk_token=special["unknown_id"],
                                     max_input_chars_per_word=tokenizer.max_chars_per_word))
    tok.normalizer = _normalizer(tokenizer)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    if tokenizer.rules != "google":  # Hugging Face rules: a special token written in the text is that token
        tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in sorted(set(special.values()))])
    cls, sep = special["start_of_sequence_id"], special["end_of_segment_id"]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {sep}", pair=f"{cls} $A {sep} $B:1 {sep}:1",
        special_tokens=[(cls, vocab.index(cls)), (sep, vocab.index(sep))])
    tok.enable_truncation(seq_length, strategy="longest_first")
    pad = special["padding_id"]
    tok.enable_padding(pad_id=vocab.index(pad), pad_token=pad)
    return tok


def _normalizer(tokenizer):
    from tokenizers import Regex, normalizers

    from kbert.text.normalize import CONTROL_PATTERN, GOOGLE, OTHER_PATTERN, TRANSFORMERS

    google = tokenizer.rules == GOOGLE
    steps = [normalizers.Replace(Regex(CONTROL_PATTERN if google else OTHER_PATTERN), "")]
    if tokenizer.lower_case:
        steps.append(normalizers.Replace(Regex(FINAL_SIGMA), "\u03c2") if google
                     else normalizers.Replace("\u03a3", "\u03c3"))
        steps.append(normalizers.Lowercase())
    if tokenizer.rules == TRANSFORMERS:
        steps.append(normalizers.NFC())
    if tokenizer._strip:
        steps += [normalizers.NFD(), normalizers.Replace(Regex(r"\p{Mn}"), "")]
    steps.append(normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=tokenizer.tokenize_chinese_chars,
                                            strip_accents=False, lowercase=False))
    return normalizers.Sequence(steps)


def sample_requests(kind: str, seq_length: int, extra=()) -> list:
    """The requests the check encodes both ways: ``SAMPLE`` (+ ``extra``) as texts, pairs or words,
    with texts, pairs and sentences at and over the length limit."""
    texts = list(SAMPLE) + list(extra)
    long_text = " ".join(["a"] * (seq_length + 5))
    if kind == "single":
        return texts + [long_text]
    if kind == "words":
        return [t.split() for t in texts] + [long_text.split(), ["U.S.", "e-mail", "don't"]]
    budget = seq_length - 3
    counts = sorted({0, 1, budget // 2 - 1, budget // 2, budget // 2 + 1, budget - 1, budget, budget + 4})
    pairs = [(" ".join(["a"] * i), " ".join(["b"] * j)) for i in counts for j in counts]
    return list(zip(texts, texts[1:] + texts[:1])) + pairs


def hf_ids(tok, kind: str, requests) -> list:
    if kind == "pair":
        encodings = tok.encode_batch([list(r) for r in requests])
    else:
        encodings = tok.encode_batch(requests, is_pretokenized=kind == "words")
    return [[i for i, m in zip(e.ids, e.attention_mask) if m] for e in encodings]


def kbert_ids(pack, kind: str, requests) -> list:
    """The ids kbert packs for ``requests``; ``pack(batch)`` -> packed int tensors (the model's)."""
    if kind == "pair":
        batch = [np.asarray([r[0] for r in requests], object), np.asarray([r[1] for r in requests], object)]
    else:
        batch = requests if kind == "words" else np.asarray(requests, object)
    packed = pack(batch)
    ids, mask = np.asarray(packed["input_word_ids"]), np.asarray(packed["input_mask"])
    return [row[m.astype(bool)].tolist() for row, m in zip(ids, mask)]


def tokenizer_file(tokenizer, pack, kind: str, seq_length: int, extra=()) -> TokenizerFile:
    """The tokenizer.json of ``tokenizer`` packed by ``pack`` (see ``kbert_ids``), or why there is none."""
    try:
        tok = build(tokenizer, seq_length, kind)
    except Unexpressible as e:
        return TokenizerFile(None, str(e))
    requests = sample_requests(kind, seq_length, extra)
    want, got = kbert_ids(pack, kind, requests), hf_ids(tok, kind, requests)
    vocab = tokenizer.get_vocabulary()
    for request, w, h in zip(requests, want, got):
        if w != h:
            first = next((i for i, (a, b) in enumerate(zip(w, h)) if a != b), min(len(w), len(h)))
            return TokenizerFile(None, f"its ids differ from kbert's on {json.dumps(request, ensure_ascii=False)[:200]} "
                                       f"(position {first}: kbert {_tokens(vocab, w, first)}, tokenizer.json "
                                       f"{_tokens(vocab, h, first)}){_rule(tokenizer, kind, w, h, seq_length)}",
                                  len(requests))
    return TokenizerFile(tok.to_str(pretty=True), None, len(requests))


def _tokens(vocab, ids, at):
    return " ".join(vocab[i] for i in ids[at:at + 3]) or "(end)"


def _rule(tokenizer, kind, want, got, seq_length) -> str:
    """The rule behind a difference, where it is one of the known ones."""
    if kind == "pair" and len(want) == len(got) == seq_length:  # the same pieces, cut elsewhere
        return ("; the rule: kbert cuts a long pair as google-research/bert (text A gets the odd token), "
                "tokenizers' longest_first gives it to the longer text")
    if tokenizer.rules == "transformers" and not tokenizer.lower_case:
        return ("; the rule: transformers' cased BertTokenizer keeps whole a word that becomes a special token "
                "after cleaning (never_split), which tokenizers' added tokens do not")
    return ""
