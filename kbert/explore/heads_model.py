"""The pre-training heads as questions one can ask: which tokens fit each ``[MASK]``, and is B the
sentence after A. Everything here is TensorFlow ops on packed ids or strings, so the Python API
(``kbert.explore.fill_mask``/``next_sentence``) and the exported ``fill_mask``/``next_sentence``
signatures (``kbert.export.head_signatures``) run the same computation.

Probabilities are softmaxes over the whole vocabulary (masked LM) and over the two NSP logits
(index 0 = IsNext, as google-research/bert ``run_pretraining.py``), computed in float32.
"""

from __future__ import annotations

import pathlib

import tensorflow as tf

from kbert import compat
from kbert.explore.masked_text import tokenize_with_masks
from kbert.hub_models import resolve_model_dir
from kbert.model_dir import ModelDirError, load_encoder, load_heads
from kbert.api_export import kbert_export

DEFAULT_SEQ_LENGTH = 128


@kbert_export("kbert.PretrainingHeads")
class PretrainingHeads(compat.AutoTrackable):
    """An encoder with its ``mlm`` and/or ``nsp`` heads and the model directory's tokenizer.

    ``PretrainingHeads.from_model_dir(model_dir)`` loads them; ``kbert.fill_mask``,
    ``kbert.next_sentence`` and ``kbert.text_attentions`` take it (or a model directory).

    Args:
        encoder: a ``kbert.BertEncoder``.
        mlm_head: the masked-LM head, or None (asking for fill-mask then raises a ``ModelDirError``).
        nsp_head: the next-sentence head, or None (likewise).
        preprocessor: the ``kbert.BertPreprocessor`` of the model's tokenizer.
        source: what error messages call the model (its directory).

    Examples:
        >>> import kbert
        >>> heads = kbert.PretrainingHeads.from_model_dir(kbert.random_model_dir("runs/tiny"))
        >>> heads.encoder.config.num_hidden_layers, heads.mlm_head is not None, heads.nsp_head is not None
        (2, True, True)
    """

    def __init__(self, encoder, mlm_head, nsp_head, preprocessor, source="model"):
        self.encoder = encoder
        self.mlm_head = mlm_head
        self.nsp_head = nsp_head
        self.preprocessor = preprocessor
        self._source = str(source)
        special = preprocessor.tokenize.special_token_ids
        self.mask_id = int(special["mask_id"])
        self.vocab = tf.constant(preprocessor.tokenize.get_vocabulary(), tf.string)

    @classmethod
    def from_model_dir(cls, model_dir, seq_length=DEFAULT_SEQ_LENGTH, heads=("mlm", "nsp")):
        model_dir = pathlib.Path(resolve_model_dir(model_dir))  # a folder, or hf://ORG/NAME
        encoder = load_encoder(model_dir)
        loaded = load_heads(model_dir, encoder.config, names=heads)
        return cls(encoder, loaded.get("mlm"), loaded.get("nsp"),
                   preprocessor_for(model_dir, min(seq_length, encoder.config.max_position_embeddings)),
                   source=model_dir)

    # -- text -> packed ids ---------------------------------------------------------------------
    def pack(self, text_a, text_b=None, pre_tokenized=False):
        """Strings [batch] (and optionally a second segment) -> the encoder's inputs, cut to the
        longest row; ``[MASK]`` written in the text becomes the mask token. ``pre_tokenized``: the
        strings are ``tokenizer.pre_tokenize``'s already (an export's words inputs)."""
        tokenizer = self.preprocessor.tokenize
        if not pre_tokenized and not getattr(tokenizer, "in_graph", True):  # MeCab types: the Python word split first
            text_a, text_b = (None if t is None else _pre_tokenized(tokenizer, t) for t in (text_a, text_b))
        segments = [tokenize_with_masks(_graph_part(tokenizer), text_a, self.mask_id)]
        if text_b is not None:
            segments.append(tokenize_with_masks(_graph_part(tokenizer), text_b, self.mask_id))
        packed = self.preprocessor.bert_pack_inputs(segments)
        length = tf.maximum(tf.reduce_max(tf.reduce_sum(packed["input_mask"], axis=1)), 1)
        return {k: v[:, :length] for k, v in packed.items()}

    def uncut(self, text_a, text_b=None):
        """``(tokens, masks)``, int arrays [batch]: how many tokens each row would pack to without the
        cut at ``preprocessor.seq_length`` ([CLS] and [SEP]s included), and how many ``[MASK]`` its
        text holds; beside ``pack``'s output they tell what the cut dropped."""
        tokenizer = self.preprocessor.tokenize
        if not getattr(tokenizer, "in_graph", True):
            text_a, text_b = (None if t is None else _pre_tokenized(tokenizer, t) for t in (text_a, text_b))
        segments = [tokenize_with_masks(_graph_part(tokenizer), t, self.mask_id)
                    for t in (text_a, text_b) if t is not None]
        tokens = sum(s.row_lengths().numpy() for s in segments) + 1 + len(segments)
        masks = sum(tf.reduce_sum(tf.cast(tf.equal(s, self.mask_id), tf.int32), axis=1).numpy() for s in segments)
        return tokens, masks

    # -- ids -> answers -------------------------------------------------------------------------
    def mask_positions(self, inputs):
        """int32 [batch, M]: the positions of the mask token in each row (real tokens only), in
        order, padded with -1 to the row with most masks."""
        ids = tf.convert_to_tensor(inputs["input_word_ids"], tf.int32)
        is_mask = tf.logical_and(tf.equal(ids, self.mask_id),
                                 tf.not_equal(tf.convert_to_tensor(inputs["input_mask"], tf.int32), 0))
        where = tf.where(is_mask)
        return tf.RaggedTensor.from_value_rowids(
            tf.cast(where[:, 1], tf.int32), where[:, 0], nrows=tf.shape(ids, out_type=tf.int64)[0],
            validate=False).to_tensor(default_value=-1)

    def mask_probabilities(self, inputs, positions):
        """float32 [batch, P, vocab]: softmax of the MLM logits at ``positions`` [batch, P]
        (entries < 0 give the probabilities at position 0; callers ignore them)."""
        if self.mlm_head is None:
            raise ModelDirError(f"{self._source} has no 'mlm' head (kbert.json lists none): fill-mask needs it")
        inputs = {k: tf.convert_to_tensor(inputs[k], tf.int32)
                  for k in ("input_word_ids", "input_mask", "input_type_ids")}
        outputs = self.encoder(inputs, training=False)
        logits = self.mlm_head(outputs["sequence_output"], tf.maximum(positions, 0), self.encoder.word_embeddings)
        return tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)

    def fill_mask(self, inputs, top_k=5):
        """``positions`` [b, M] (-1 = none), ``ids`` [b, M, k] (-1 = none), ``tokens`` [b, M, k]
        ("" = none), ``probabilities`` [b, M, k] (0 = none): the k most probable tokens at each
        mask, best first."""
        positions = self.mask_positions(inputs)
        probabilities = self.mask_probabilities(inputs, positions)
        k = tf.minimum(tf.constant(top_k, tf.int32), tf.shape(probabilities)[-1])
        best, ids = tf.math.top_k(probabilities, k=k)
        valid = tf.broadcast_to(tf.expand_dims(positions >= 0, -1), tf.shape(ids))
        return {
            "positions": positions,
            "ids": tf.where(valid, ids, -1),
            "tokens": tf.where(valid, tf.gather(self.vocab, ids), ""),
            "probabilities": tf.where(valid, best, 0.0),
        }

    def is_next_probability(self, inputs):
        """float32 [batch]: P(IsNext), the softmax of the NSP logits at index 0."""
        if self.nsp_head is None:
            raise ModelDirError(f"{self._source} has no 'nsp' head (kbert.json lists none): next-sentence needs it")
        inputs = {k: tf.convert_to_tensor(inputs[k], tf.int32)
                  for k in ("input_word_ids", "input_mask", "input_type_ids")}
        logits = self.nsp_head(self.encoder(inputs, training=False)["pooled_output"])
        return tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)[:, 0]


def preprocessor_for(model_dir, seq_length=DEFAULT_SEQ_LENGTH):
    """The model directory's preprocessor, with the tokenizer its ``kbert.json`` names (any type)."""
    from kbert.text import BertPreprocessor
    from kbert.text.registry import load_tokenizer

    return BertPreprocessor(load_tokenizer(model_dir), seq_length=seq_length)


def _graph_part(tokenizer):
    """``tokenize_flat`` of strings that are ``pre_tokenize``'s already (raw text for in-graph types)."""
    return lambda strings: tokenizer.tokenize_flat(strings, pre_tokenized=True)


def _pre_tokenized(tokenizer, texts):
    """``tokenizer.pre_tokenize`` of strings given as a list or an eager tensor (a literal ``[MASK]``
    stays one word, which the graph part then cuts at)."""
    if not tf.executing_eagerly():
        raise NotImplementedError(f"the {tokenizer.spec.type!r} tokenizer splits words in Python: call it eagerly")
    values = texts.numpy().tolist() if isinstance(texts, tf.Tensor) else list(texts)
    return tokenizer.pre_tokenize([v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in values])
