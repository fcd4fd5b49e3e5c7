"""Attention probabilities of one input, ready to draw: tokens and an array [layers, heads, seq, seq].

The encoder returns them on request: ``encoder(inputs, output_attentions=True)["attention_probs"]``
(one [batch, heads, seq, seq] tensor per layer; row = query token, column = key token).
"""

from __future__ import annotations

import numpy as np

from kbert.errors import Error, OptionsError
from kbert.api_export import kbert_export


class AttentionUnavailable(Error, RuntimeError):
    """The encoder cannot return attention probabilities (no ``output_attentions`` argument)."""


def encoder_attentions(encoder, inputs) -> np.ndarray:
    """float32 [layers, batch, heads, seq, seq] for packed ``inputs``."""
    try:
        outputs = encoder(inputs, training=False, output_attentions=True)
    except TypeError as e:
        if "output_attentions" not in str(e):
            raise
        raise AttentionUnavailable(
            f"this BertEncoder cannot return attention probabilities ({e}); it needs "
            "BertEncoder(inputs, output_attentions=True) -> {..., 'attention_probs': [...]}") from None
    if "attention_probs" not in outputs:
        raise AttentionUnavailable("the encoder ignored output_attentions=True: its outputs have no "
                                   f"'attention_probs' (got {sorted(outputs)})")
    return np.stack([np.asarray(a, np.float32) for a in outputs["attention_probs"]])


@kbert_export("kbert.text_attentions")
def text_attentions(heads, text_a: str, text_b: str | None = None):
    """The attention probabilities of one text (or pair), ready to draw.

    Args:
        heads: a ``kbert.PretrainingHeads`` (its encoder and tokenizer).
        text_a: the text.
        text_b: the second text of a pair, or None.

    Returns:
        ``(tokens, attention)``: the real tokens (``[CLS]`` ... ``[SEP]``) and a float32 array
        [layers, heads, n, n] (row: the query token, column: the key token).

    Examples:
        >>> import kbert
        >>> heads = kbert.PretrainingHeads.from_model_dir(kbert.random_model_dir("runs/tiny"))
        >>> tokens, attention = kbert.text_attentions(heads, "the man went home .")
        >>> tokens, attention.shape
        (['[CLS]', 'the', 'man', 'went', 'home', '.', '[SEP]'], (2, 2, 7, 7))
    """
    inputs = heads.pack([text_a], None if text_b is None else [text_b])
    inputs = {k: v.numpy() for k, v in inputs.items()}
    length = int(inputs["input_mask"][0].sum())
    attention = encoder_attentions(heads.encoder, inputs)[:, 0, :, :length, :length]
    vocab = heads.preprocessor.tokenize.get_vocabulary()
    tokens = [vocab[i] for i in inputs["input_word_ids"][0, :length]]
    return tokens, attention


def select(attention: np.ndarray, layer: int | None = None, head: int | None = None):
    """The part of [layers, heads, seq, seq] to draw and the (layer, head) numbers it keeps."""
    check_attention([""] * attention.shape[-1], attention)
    num_layers, num_heads = attention.shape[:2]
    if layer is not None and not 0 <= layer < num_layers:
        raise OptionsError(f"--layer {layer} is out of range: the model has layers 0..{num_layers - 1}", option="layer",
                           value=layer)
    if head is not None and not 0 <= head < num_heads:
        raise OptionsError(f"--head {head} is out of range: the model has heads 0..{num_heads - 1}", option="head",
                           value=head)
    layers = list(range(num_layers)) if layer is None else [layer]
    heads = list(range(num_heads)) if head is None else [head]
    return attention[np.ix_(layers, heads)], layers, heads


def check_attention(tokens, attention) -> None:
    attention = np.asarray(attention)
    if attention.ndim != 4 or attention.shape[-1] != attention.shape[-2]:
        raise OptionsError(f"attention must be [layers, heads, seq, seq], got shape {attention.shape}")
    if attention.shape[-1] != len(tokens):
        raise OptionsError(f"attention covers {attention.shape[-1]} tokens but {len(tokens)} token labels were given")
    if 0 in attention.shape:
        raise OptionsError(f"attention is empty (shape {attention.shape})")
