"""``fill_mask`` and ``next_sentence`` signatures for the encoder export of a directory with the
pre-training heads: strings in, answers out, TensorFlow core and tensorflow-text ops only.

  fill_mask      text [b] (``[MASK]`` written in the text) -> positions [b, M] (-1 = none),
                 ids [b, M, k] (-1 = none), tokens [b, M, k] ("" = none), probabilities [b, M, k]
                 (the k most probable tokens at each mask, best first; softmax over the vocabulary)
  next_sentence  text_a [b], text_b [b] -> is_next_probability [b]

Both run ``kbert.explore.heads_model.PretrainingHeads``, the code of the Python API
(``kbert.explore.fill_mask``/``next_sentence``).
"""

from __future__ import annotations

import tensorflow as tf

from kbert.explore.heads_model import PretrainingHeads, preprocessor_for

TEXT = tf.TensorSpec([None], tf.string)
DEFAULT_TOP_K = 5
WARMUP_TEXTS = ["kbert warms up the [MASK] head.", "A second [MASK], longer sentence — with ünïcode and 字 — [MASK]."]


def add_head_signatures(module, encoder, heads: dict, model_dir, top_k: int = DEFAULT_TOP_K) -> dict:
    """Attaches the functions to ``module`` (so the SavedModel tracks them) and returns the
    signatures to add ({} when the directory has neither head)."""
    if heads.get("mlm") is None and heads.get("nsp") is None:
        return {}
    preprocessor = preprocessor_for(model_dir, min(128, encoder.config.max_position_embeddings))
    if not getattr(preprocessor.tokenizer, "in_graph", True):
        # A MeCab tokenizer splits words in Python: strings-in signatures cannot hold that step
        # (the Python API kbert.explore takes raw text for every type).
        return {}
    explore = PretrainingHeads(encoder, heads.get("mlm"), heads.get("nsp"), preprocessor, source=model_dir)
    module.explore = explore
    signatures = {}
    if heads.get("mlm") is not None:
        @tf.function(input_signature=[TEXT])
        def fill_mask(text):
            return explore.fill_mask(explore.pack(text), top_k)

        module.fill_mask = fill_mask
        signatures["fill_mask"] = fill_mask.get_concrete_function()
    if heads.get("nsp") is not None:
        @tf.function(input_signature=[TEXT, TEXT])
        def next_sentence(text_a, text_b):
            return {"is_next_probability": explore.is_next_probability(explore.pack(text_a, text_b))}

        module.next_sentence = next_sentence
        signatures["next_sentence"] = next_sentence.get_concrete_function()
    return signatures


def warmup_requests(signatures) -> list[tuple[str, dict]]:
    """(signature name, inputs) pairs for TF Serving's warm-up: batch 1 and 8 of each."""
    requests = []
    if "fill_mask" in signatures:
        requests += [("fill_mask", {"text": WARMUP_TEXTS[:1]}), ("fill_mask", {"text": (WARMUP_TEXTS * 4)[:8]})]
    if "next_sentence" in signatures:
        a, b = ["The man went to the store."], ["He bought a gallon of milk."]
        requests += [("next_sentence", {"text_a": a, "text_b": b}),
                     ("next_sentence", {"text_a": a * 8, "text_b": (WARMUP_TEXTS * 4)[:8]})]
    return requests
