"""``kbert convert hf ... --check``: a converted model against transformers, on the spot.

The source folder is loaded with transformers (``AutoTokenizer`` and ``BertModel``, on torch) and the
converted model directory with kbert; both tokenize built-in sentences in English, Japanese, Chinese,
Korean and Russian, and both encoders run on kbert's ids. The report gives the sentences whose ids
differ and the largest absolute difference of the sequence and pooled outputs.

transformers and torch are not kbert dependencies: this is the one place outside the tests that
imports them, and only when asked; without them ``check_conversion`` raises a ``ConversionError``
saying what to install.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from kbert.convert.names import ConversionError
from kbert.api_export import kbert_export

SENTENCES = {
    "en": ["The quick brown fox jumps over the lazy dog.",
           "A naïve café résumé costs $5; e-mail me at fox@example.com!",
           "Special tokens written in text stay whole: [MASK] and [SEP]."],
    "ja": ["日本語の文を単語に分けて、意味を理解する。", "東京都は２０２４年に新しい計画を発表しました。"],
    "zh": ["我们在北京大学学习自然语言处理。", "今天天气很好，我们去公园散步吧！"],
    "ko": ["이날 오전 지하철 7호선 건대입구역에서 사고가 일어났다.", "스케일도 굉장히 크고 연기는 압권이었습니다."],
    "ru": ["Йод и ёж встретились в лесу.", "Человек принял снотворное, и он уснул."],
}
DEFAULT_TOLERANCE = 1e-4
SEQ_LENGTH = 128


@dataclasses.dataclass
class CheckReport:
    sentences: int
    id_mismatches: list  # (sentence, kbert's tokens, transformers' tokens)
    max_sequence_diff: float
    max_pooled_diff: float
    tolerance: float
    languages: str = ""  # what the sentences are, for the report

    @property
    def max_diff(self) -> float:
        return max(self.max_sequence_diff, self.max_pooled_diff)

    @property
    def passed(self) -> bool:
        return not self.id_mismatches and self.max_diff <= self.tolerance

    def lines(self) -> list:
        what = f" ({self.languages})" if self.languages else ""
        out = [f"check: {self.sentences} sentences{what} against transformers: "
               f"ids {'equal' if not self.id_mismatches else f'differ on {len(self.id_mismatches)}'}, "
               f"largest difference {self.max_diff:.2e} (sequence {self.max_sequence_diff:.2e}, pooled "
               f"{self.max_pooled_diff:.2e}; tolerance {self.tolerance:.0e})"]
        for sentence, ours, theirs in self.id_mismatches[:5]:
            out.append(f"  ids differ on {sentence!r}: kbert {ours} transformers {theirs}")
        return out


def _peers():
    try:
        import torch
        import transformers
    except ImportError as e:
        raise ConversionError(f"--check compares with transformers on torch, and {e.name} is not installed: "
                              "pip install torch transformers (or convert without --check)") from None
    return torch, transformers


@kbert_export("kbert.check_conversion")
def check_conversion(source_dir, model_dir, sentences=None, tolerance: float = DEFAULT_TOLERANCE) -> CheckReport:
    """Compares a converted model directory with transformers on the source Hugging Face folder.

    Both tokenize built-in sentences in English, Japanese, Chinese, Korean and Russian; both
    encoders run on kbert's ids. Needs torch and transformers (a ``ConversionError`` says so).

    Args:
        source_dir: the Hugging Face folder (``config.json``, tokenizer, weights).
        model_dir: the kbert model directory converted from it.
        sentences: the sentences (default: ``SENTENCES``, every language).
        tolerance: the largest absolute difference of outputs that passes.

    Returns:
        A ``CheckReport``: ``passed``, ``max_diff``, the sentences whose ids differ, ``lines()``.

    Examples:
        >>> import kbert
        >>> report = kbert.check_conversion("../shared/data/weights/all-MiniLM-L6-v2", "runs/minilm")  # doctest: +SKIP
        >>> report.passed   # doctest: +SKIP
        True
    """
    torch, transformers = _peers()
    import tensorflow as tf

    from kbert.model_dir import load_encoder
    from kbert.text import BertPreprocessor
    from kbert.text.registry import load_tokenizer

    texts = list(sentences) if sentences is not None else [s for group in SENTENCES.values() for s in group]
    transformers.logging.set_verbosity_error()  # "weights not used" for the MLM/NSP heads, and similar
    try:
        hf_tokenizer = transformers.AutoTokenizer.from_pretrained(str(source_dir))
        hf_model = transformers.BertModel.from_pretrained(str(source_dir), attn_implementation="eager").eval()
    except Exception as e:  # noqa: BLE001 - whatever transformers raises for a folder it cannot load
        raise ConversionError(f"--check: transformers cannot load {source_dir}: {str(e).splitlines()[0]}") from None

    tokenizer = load_tokenizer(model_dir)
    encoder = load_encoder(model_dir)
    seq_length = min(SEQ_LENGTH, encoder.config.max_position_embeddings)
    packed = BertPreprocessor(tokenizer, seq_length=seq_length)(tf.constant(texts))  # raw texts, eagerly
    packed = {k: np.asarray(v) for k, v in packed.items()}
    theirs = hf_tokenizer(texts, padding="max_length", truncation=True, max_length=seq_length, return_tensors="np")
    mismatches = []
    vocab = {i: t for t, i in hf_tokenizer.get_vocab().items()}
    for row, text in enumerate(texts):
        ours_ids = packed["input_word_ids"][row][packed["input_mask"][row].astype(bool)].tolist()
        their_ids = theirs["input_ids"][row][theirs["attention_mask"][row].astype(bool)].tolist()
        if ours_ids != their_ids:
            mismatches.append((text, [vocab.get(i, i) for i in ours_ids], [vocab.get(i, i) for i in their_ids]))

    outputs = encoder(packed, training=False)
    with torch.no_grad():
        reference = hf_model(input_ids=torch.from_numpy(packed["input_word_ids"].astype(np.int64)),
                             attention_mask=torch.from_numpy(packed["input_mask"].astype(np.int64)),
                             token_type_ids=torch.from_numpy(packed["input_type_ids"].astype(np.int64)))
    real = packed["input_mask"].astype(bool)
    sequence = np.abs(np.asarray(outputs["sequence_output"]) - reference.last_hidden_state.numpy())[real].max()
    pooled = np.abs(np.asarray(outputs["pooled_output"]) - reference.pooler_output.numpy()).max()
    languages = ", ".join(SENTENCES) if sentences is None else ""
    return CheckReport(len(texts), mismatches, float(sequence), float(pooled), tolerance, languages)
