"""The Python API of ``kbert.explore``: fill in the blanks, score the next sentence.

    >>> from kbert.explore import fill_mask, next_sentence
    >>> fill_mask("runs/pretrain_demo/model", ["the man went to the [MASK] store ."], top_k=5)
    [[{"position": 6, "ids": [...], "tokens": [...], "probabilities": [...]}]]
    >>> next_sentence("runs/pretrain_demo/model", "the man went to the store .", "he bought milk .")
    0.93

``model`` is a model directory or an already loaded ``PretrainingHeads`` (to ask many questions
without reloading). ``fill_mask_ids``/``next_sentence_ids`` take packed ids instead of text.
"""

from __future__ import annotations

import numpy as np

from kbert.errors import OptionsError
from kbert.explore.heads_model import PretrainingHeads
from kbert.api_export import kbert_export


def load(model) -> PretrainingHeads:
    return model if isinstance(model, PretrainingHeads) else PretrainingHeads.from_model_dir(model)


def _texts(texts, what="texts"):
    if isinstance(texts, (str, bytes)):
        return [texts]
    texts = list(texts)
    for i, t in enumerate(texts):
        if not isinstance(t, (str, bytes)):
            raise TypeError(f"{what}[{i}] must be a string, got {type(t).__name__}: {t!r}")
    return texts


@kbert_export("kbert.explore.fill_mask", "kbert.fill_mask")
def fill_mask(model, texts, top_k: int = 5) -> list[list[dict]]:
    """The masked-LM head's best tokens for each ``[MASK]`` of each text.

    Args:
        model: a model directory with an ``mlm`` head, or a loaded ``kbert.PretrainingHeads``.
        texts: a string or a list of strings holding ``[MASK]``.
        top_k: how many tokens per mask.

    Returns:
        For each text, one entry per ``[MASK]`` (in order): ``{"position": i, "ids": [...],
        "tokens": [...], "probabilities": [...]}`` with the ``top_k`` best tokens, best first
        (``position`` is the index in the packed input, [CLS] = 0).

    Examples:
        >>> import kbert
        >>> model_dir = kbert.random_model_dir("runs/tiny")   # random weights: random guesses
        >>> answers = kbert.fill_mask(model_dir, ["the man went to the [MASK] ."], top_k=3)
        >>> answers[0][0]["position"], len(answers[0][0]["tokens"])
        (6, 3)
    """
    heads = load(model)
    texts = _texts(texts)
    if not texts:
        return []
    return fill_mask_ids(heads, heads.pack(texts), top_k)


@kbert_export("kbert.explore.fill_mask_ids")
def fill_mask_ids(model, inputs: dict, top_k: int = 5) -> list[list[dict]]:
    """``fill_mask`` on packed ids: the masks are the positions holding the vocabulary's ``[MASK]`` id.

    Args:
        model: a model directory with an ``mlm`` head, or a loaded ``kbert.PretrainingHeads``.
        inputs: packed ids (``input_word_ids``, ``input_mask``, ``input_type_ids``).
        top_k: how many tokens per mask.

    Returns:
        As ``fill_mask``: per row, one dict per mask.

    Examples:
        >>> import kbert
        >>> heads = kbert.PretrainingHeads.from_model_dir(kbert.random_model_dir("runs/tiny"))
        >>> answers = kbert.explore.fill_mask_ids(heads, heads.pack(["a [MASK] dog"]), top_k=2)
        >>> [len(row) for row in answers], answers[0][0]["position"]
        ([1], 2)
    """
    if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1:
        raise OptionsError(f"top_k must be a positive integer, got {top_k!r}", option="top_k", value=top_k)
    heads = load(model)
    result = {k: v.numpy() for k, v in heads.fill_mask(inputs, top_k).items()}
    answers = []
    for row, positions in enumerate(result["positions"]):
        answers.append([
            {"position": int(position),
             "ids": result["ids"][row, m].tolist(),
             "tokens": [t.decode("utf-8") for t in result["tokens"][row, m]],
             "probabilities": [float(p) for p in result["probabilities"][row, m]]}
            for m, position in enumerate(positions) if position >= 0
        ])
    return answers


@kbert_export("kbert.explore.next_sentence", "kbert.next_sentence")
def next_sentence(model, text_a, text_b):
    """P(IsNext): the next-sentence head's probability that ``text_b`` follows ``text_a``.

    Args:
        model: a model directory with an ``nsp`` head, or a loaded ``kbert.PretrainingHeads``.
        text_a: the first sentence (or a list of them).
        text_b: the candidate next sentence (or a list, as long as ``text_a``).

    Returns:
        A float for two strings, a list of floats for two lists.

    Examples:
        >>> import kbert
        >>> p = kbert.next_sentence(kbert.random_model_dir("runs/tiny"), "he went to the store .", "he bought milk .")
        >>> 0.0 <= p <= 1.0
        True
    """
    heads = load(model)
    single = isinstance(text_a, (str, bytes)) and isinstance(text_b, (str, bytes))
    a, b = _texts(text_a, "text_a"), _texts(text_b, "text_b")
    if len(a) != len(b):
        raise OptionsError(f"text_a has {len(a)} strings but text_b has {len(b)}: give one B for each A",
                           option="text_b")
    if not a:
        return []
    probabilities = next_sentence_ids(heads, heads.pack(a, b))
    return float(probabilities[0]) if single else [float(p) for p in probabilities]


@kbert_export("kbert.explore.next_sentence_ids")
def next_sentence_ids(model, inputs: dict) -> np.ndarray:
    """P(IsNext) for packed pairs ``[CLS] A [SEP] B [SEP]``.

    Args:
        model: a model directory with an ``nsp`` head, or a loaded ``kbert.PretrainingHeads``.
        inputs: packed ids (``input_word_ids``, ``input_mask``, ``input_type_ids``).

    Returns:
        float32 numpy array [batch].

    Examples:
        >>> import kbert
        >>> heads = kbert.PretrainingHeads.from_model_dir(kbert.random_model_dir("runs/tiny"))
        >>> kbert.explore.next_sentence_ids(heads, heads.pack(["a man"], ["a dog"])).shape
        (1,)
    """
    return load(model).is_next_probability(inputs).numpy()
