"""``fill_mask`` and ``next_sentence`` signatures for the encoder export of a directory with the
pre-training heads: strings in, answers out, TensorFlow core and tensorflow-text ops only.

  fill_mask      text [b] (``[MASK]`` written in the text) -> positions [b, M] (-1 = none),
                 ids [b, M, k] (-1 = none), tokens [b, M, k] ("" = none), probabilities [b, M, k]
                 (the k most probable tokens at each mask, best first; softmax over the vocabulary)
  next_sentence  text_a [b], text_b [b] -> is_next_probability [b]

Both run ``kbert.explore.heads_model.PretrainingHeads``, the code of the Python API
(``kbert.explore.fill_mask``/``next_sentence``). For a tokenizer with a Python step (``mecab-*``)
they take words instead, ``string [b, words]`` padded with "" (``kbert.tasks.core.words_inputs``):
``fill_mask(words)`` and ``next_sentence(words_a, words_b)``, ``[MASK]`` a word of its own.
"""

from __future__ import annotations

import tensorflow as tf

from kbert.explore.heads_model import PretrainingHeads, preprocessor_for
from kbert.tasks.core.words_inputs import join_words, takes_words, words_request, words_spec

TEXT = tf.TensorSpec([None], tf.string)
WORDS = words_spec(TEXT)
DEFAULT_TOP_K = 5
WARMUP_TEXTS = ["kbert warms up the [MASK] head.", "A second [MASK], longer sentence — with ünïcode and 字 — [MASK]."]


def add_head_signatures(module, encoder, heads: dict, model_dir, top_k: int = DEFAULT_TOP_K) -> dict:
    """Attaches the functions to ``module`` (so the SavedModel tracks them) and returns the
    signatures to add ({} when the directory has neither head)."""
    if heads.get("mlm") is None and heads.get("nsp") is None:
        return {}
    preprocessor = preprocessor_for(model_dir, min(128, encoder.config.max_position_embeddings))
    explore = PretrainingHeads(encoder, heads.get("mlm"), heads.get("nsp"), preprocessor, source=model_dir)
    module.explore = explore
    # Signature inputs are named after the functions' arguments: text (raw) or words (MeCab's split,
    # each row joined here into the string pre_tokenize gives in Python).
    words = takes_words(preprocessor.tokenizer)
    spec = WORDS if words else TEXT

    def fill_mask_fn(text):
        return explore.fill_mask(explore.pack(text, pre_tokenized=words), top_k)

    def next_sentence_fn(text_a, text_b):
        return {"is_next_probability": explore.is_next_probability(explore.pack(text_a, text_b, pre_tokenized=words))}

    signatures = {}
    if heads.get("mlm") is not None:
        fill_mask = tf.function((lambda words: fill_mask_fn(join_words(words))) if words else fill_mask_fn,
                                input_signature=[spec])
        module.fill_mask = fill_mask
        signatures["fill_mask"] = fill_mask.get_concrete_function()
    if heads.get("nsp") is not None:
        next_sentence = tf.function(
            (lambda words_a, words_b: next_sentence_fn(join_words(words_a), join_words(words_b))) if words
            else next_sentence_fn, input_signature=[spec, spec])
        module.next_sentence = next_sentence
        signatures["next_sentence"] = next_sentence.get_concrete_function()
    return signatures


def warmup_requests(signatures, tokenizer=None) -> list[tuple[str, dict]]:
    """(signature name, inputs) pairs for TF Serving's warm-up: batch 1 and 8 of each (words, made
    with ``tokenizer``, for the signatures of a tokenizer with a Python step)."""
    requests = []
    if "fill_mask" in signatures:
        requests += [("fill_mask", {"text": WARMUP_TEXTS[:1]}), ("fill_mask", {"text": (WARMUP_TEXTS * 4)[:8]})]
    if "next_sentence" in signatures:
        a, b = ["The man went to the store."], ["He bought a gallon of milk."]
        requests += [("next_sentence", {"text_a": a, "text_b": b}),
                     ("next_sentence", {"text_a": a * 8, "text_b": (WARMUP_TEXTS * 4)[:8]})]
    if tokenizer is not None and takes_words(tokenizer):
        requests = [(name, words_request(tokenizer, inputs)) for name, inputs in requests]
    return requests
