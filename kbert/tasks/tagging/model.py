"""Token tagging (NER, Figure 3 (d)): a label for each word, predicted on its first WordPiece.

The model runs on packed ids (``call(inputs)`` -> logits [batch, seq, num_tags]); the features
are built in the graph with the model's own tokenizer (``features``), in tf.data for training:

  words [batch, (words)] strings  --tokenizer-->  pieces [batch, (words), (pieces)]
  --> input ids ([CLS] pieces [SEP], truncated to seq_length), labels (the word's tag id on its
      first piece, IGNORE_INDEX = -100 on other pieces, [CLS], [SEP] and padding, so they are out
      of the loss), word_ids (the word index on first pieces, -1 elsewhere)

The conventions are those of kbert.tasks.tagging.ner_alignment (in numpy in
tests/fixtures/ner_alignment_reference.py, the reference the tests check this graph code against).
Predictions go back to words (``predict_words``); ``predict_entities`` tags raw text, whose words
are then the tokenizer's (WordPiece: whitespace and punctuation split; ``mecab-*``: MeCab words;
SentencePiece: space-separated runs), and returns entity spans as character offsets into the text.

Tokenizers with a Python step (``mecab-*``, ``in_graph`` False) get it here: raw texts through
``pre_tokenize``, and each pre-split word through it on its own (NFKC, MeCab), as transformers
tokenizes ``is_split_into_words`` input; the pieces of a word MeCab splits further stay that word's.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from kbert.errors import OptionsError, TaskModelError
from kbert.tasks.core.base import TaskModel
from kbert.tasks.core.host_batches import host_packing
from kbert.tasks.core.batching import length_sorted_batches, trim_to_longest
from kbert.tasks.core.datasets import make_dataset
from kbert.tasks.core.inference_step import inference_step
from kbert.tasks.core.sequence_features import SequenceFeatures
from kbert.tasks.tagging.ner_alignment import IGNORE_INDEX, entity_spans
from kbert.tasks.core.windows import max_context_mask, window_rows, window_settings
from kbert.text.pre_tokenize import needs_pre_tokenize, pre_tokenize_data
from kbert.api_export import kbert_export


def _ragged_words(words) -> tf.RaggedTensor:
    if isinstance(words, tf.RaggedTensor):
        return words
    return tf.ragged.constant([list(w) for w in words], dtype=tf.string, ragged_rank=1)


def _pre_tokenize_words(tokenizer, words) -> list:
    """Each pre-split word through the tokenizer's Python step on its own, as transformers tokenizes
    ``is_split_into_words`` input: a word that MeCab splits further stays one word (``pieces`` merges
    its parts' pieces). One ``pre_tokenize`` call for all words of all sentences."""
    if isinstance(words, tf.RaggedTensor):  # eager
        words = words.to_list()
    rows = [[w.decode("utf-8", "replace") if isinstance(w, bytes) else str(w) for w in row] for row in words]
    flat = tokenizer.pre_tokenize([w for row in rows for w in row])
    out, start = [], 0
    for row in rows:
        out.append(flat[start:start + len(row)])
        start += len(row)
    return out


class TokenAccuracy(keras.metrics.Mean):
    """Share of the labelled positions (label != IGNORE_INDEX: the words' first pieces) whose
    highest logit is the label: the training metric Keras shows and TensorBoard logs. (Keras'
    SparseCategoricalAccuracy has no ignore_class.)"""

    def __init__(self, name="token_accuracy", **kwargs):
        super().__init__(name=name, **kwargs)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = keras.ops.cast(y_true, "int32")
        labelled = keras.ops.cast(keras.ops.not_equal(y_true, IGNORE_INDEX), self.dtype)
        if sample_weight is not None:  # per row ([batch]: host batches' padding rows) or per position
            sample_weight = keras.ops.cast(sample_weight, self.dtype)
            if len(sample_weight.shape) < len(labelled.shape):
                sample_weight = keras.ops.expand_dims(sample_weight, -1)
            labelled = labelled * sample_weight
        correct = keras.ops.equal(keras.ops.cast(keras.ops.argmax(y_pred, axis=-1), "int32"), y_true)
        return super().update_state(keras.ops.cast(correct, self.dtype), sample_weight=labelled)


@kbert_export("kbert.TokenTagger", "kbert.tasks.TokenTagger")
class TokenTagger(SequenceFeatures, TaskModel):
    """Tags words with one of ``label_names`` (e.g. the CoNLL-2003 IOB2 tags, "O" first).

    Args:
      encoder, tokenizer, lower_case, seq_length, truncator, dynamic_length: as TaskModel.
      label_names: the tags (index = tag id); num_labels = len(label_names).
      dropout: before the per-token dense layer.
      fill_label: tag id predicted for words that truncation left without a piece (default 0).
      ignore_index: the label of positions out of the loss; always IGNORE_INDEX (-100).
      long_documents, doc_stride: "truncate" or "windows" (sentences longer than seq_length), and the
        windows' stride.
      bilstm: LSTM units per direction of a randomly initialised BiLSTM between the encoder and the
        dense layer (the paper's Table 5 "+ BiLSTM"); 0: none (Figure 3 (d)).
      features: the feature-based approach (§5.4, Table 7): the encoder frozen, this combination of
        its layers (``kbert.features.COMBINATIONS``) into a two-layer BiLSTM (``bilstm`` units per
        direction, default the encoder's hidden size), then the dense layer. See
        kbert.tasks.core.sequence_features.

    Examples:
        >>> import kbert
        >>> model = kbert.TokenTagger.from_model_dir(kbert.random_model_dir("runs/tiny"),
        ...                                          label_names=["O", "B-LOC", "I-LOC"])
        >>> tags = model.predict_words([["he", "went", "to", "new", "york"]])
        >>> len(tags[0])
        5
    """

    task_type = "token_tagger"
    head_name = "tagger"
    head_shape_keys = ("label_names", "bilstm", "features")
    implied_settings = {"bilstm": 0, "features": None}

    def __init__(self, encoder, tokenizer, lower_case=None, *, label_names, dropout=0.1, fill_label=0,
                 ignore_index=IGNORE_INDEX, long_documents="truncate", doc_stride=None, bilstm=0, features=None,
                 **kwargs):
        super().__init__(encoder, tokenizer, lower_case, **kwargs)
        # Sentences longer than seq_length: cut (their last words get fill_label) or read in windows,
        # each word tagged from the window where it has the most context (kbert.tasks.core.windows).
        try:
            self.long_documents, self.doc_stride = window_settings(long_documents, doc_stride, self.seq_length)
        except ValueError as e:
            raise TaskModelError(str(e)) from None
        if ignore_index != IGNORE_INDEX:  # recorded in kbert.json for readers; not configurable
            raise TaskModelError(f"ignore_index must be {IGNORE_INDEX}, got {ignore_index!r}")
        if not label_names or len(label_names) < 2:
            raise TaskModelError(f"TokenTagger needs at least 2 label_names, got {label_names!r}")
        self.label_names = [str(n) for n in label_names]
        if not 0 <= int(fill_label) < len(self.label_names):
            raise TaskModelError(f"fill_label {fill_label} is not a tag id (0..{len(self.label_names) - 1})")
        self.fill_label = int(fill_label)
        self.head = self.sequence_head(len(self.label_names), dropout=dropout, bilstm=bilstm, features=features)
        self._build_head()
        # The pooler is not used here: freezing it keeps it out of the optimizer (no "gradients do
        # not exist" warnings); its weights are saved unchanged.
        encoder.pooler.trainable = False

    @property
    def num_labels(self) -> int:
        return len(self.label_names)

    def task_settings(self):
        return {**super().task_settings(), "label_names": self.label_names, "dropout": self.head.dropout_rate,
                "fill_label": self.fill_label, "ignore_index": IGNORE_INDEX, "long_documents": self.long_documents,
                "doc_stride": self.doc_stride, **self.sequence_settings()}

    @property
    def windows(self) -> bool:
        return self.long_documents == "windows"

    def call(self, inputs, training=None):
        return self.sequence_logits(inputs, training=training)

    def default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=IGNORE_INDEX)

    def host_labels(self, labels, weights, width):
        labels = labels[:, :width]  # one label (and weight) per position
        return labels, weights[:, None] * tf.ones(tf.shape(labels), weights.dtype)

    def default_metrics(self):
        return [TokenAccuracy()]

    # -- features (in-graph) ------------------------------------------------------------------
    def pieces(self, words=None, texts=None) -> tf.RaggedTensor:
        """WordPiece ids [batch, (words), (pieces)] of pre-split ``words`` ([batch, (words)]
        strings: one word may give several BERT words, e.g. "U.S." -> u . s ., which are merged
        back into it) or of raw ``texts`` ([batch] strings, BERT's own word split)."""
        if (words is None) == (texts is None):
            raise OptionsError("pass exactly one of words= (pre-split) or texts= (raw strings)")
        if texts is not None:  # pre_tokenize_data: the tokenizer's Python step (MeCab), if it has one
            return self.tokenizer(tf.convert_to_tensor(pre_tokenize_data(self.tokenizer, texts), tf.string),
                                  pre_tokenized=True)
        if needs_pre_tokenize(self.tokenizer):
            words = _pre_tokenize_words(self.tokenizer, words)
        return self.tokenizer(_ragged_words(words), pre_tokenized=True).merge_dims(2, 3)

    def features(self, pieces: tf.RaggedTensor, word_labels=None):
        """(inputs, labels, word_ids), each [batch, seq_length]; labels is None without
        ``word_labels`` ([batch, (words)] tag ids). Under ``long_documents="windows"`` the rows are
        the windows of the sentences (``window_features``, whose ``document`` is dropped here)."""
        if self.windows:
            return self.window_features(pieces, word_labels)[:3]
        seq_length = self.seq_length
        inputs = self.preprocessor.packer([pieces], seq_length=seq_length)
        words = pieces.values                      # [total words, (pieces)]
        piece_word = words.value_rowids()          # global word index of each piece
        first_piece = tf.equal(tf.ragged.range(words.row_lengths()).values, 0)
        word_base = tf.gather(pieces.row_starts(), pieces.value_rowids())  # first word of its row
        local_word = tf.gather(tf.range(tf.shape(word_base, out_type=tf.int64)[0]) - word_base, piece_word)
        pieces_per_row = tf.reduce_sum(pieces.row_lengths(axis=2), axis=1)

        def pack(per_piece, fill):
            rows = tf.RaggedTensor.from_row_lengths(per_piece, pieces_per_row)[:, :seq_length - 2]
            edge = tf.fill([rows.nrows(), 1], tf.cast(fill, per_piece.dtype))
            return tf.concat([edge, rows, edge], axis=1).to_tensor(default_value=fill, shape=[None, seq_length])

        word_ids = pack(tf.where(first_piece, local_word, -1), -1)
        labels = None
        if word_labels is not None:
            word_labels = word_labels if isinstance(word_labels, tf.RaggedTensor) else tf.ragged.constant(
                [list(x) for x in word_labels], dtype=tf.int64)
            if word_labels.shape.rank != 2:
                raise OptionsError(f"word_labels must be [batch, (words)], got rank {word_labels.shape.rank}")
            tf.debugging.assert_equal(word_labels.row_lengths(), pieces.row_lengths(),
                                      message="each sentence needs one label per word")
            tags = tf.gather(tf.cast(word_labels.values, tf.int64), piece_word)
            labels = pack(tf.where(first_piece, tags, IGNORE_INDEX), IGNORE_INDEX)
        return inputs, labels, word_ids

    def window_features(self, pieces: tf.RaggedTensor, word_labels=None):
        """(inputs, labels, word_ids, document): one row per window of each sentence. ``labels``
        mark every word's first piece in every window that holds it (each window is a training
        example); ``word_ids`` only in the window where that piece has the most context, so that
        each word is tagged exactly once. ``document``: the sentence of each window."""
        seq_length = self.seq_length
        words = pieces.values                      # [total words, (pieces)]
        first_piece = tf.equal(tf.ragged.range(words.row_lengths()).values, 0)
        piece_word = words.value_rowids()
        word_base = tf.gather(pieces.row_starts(), pieces.value_rowids())
        local_word = tf.gather(tf.range(tf.shape(word_base, out_type=tf.int64)[0]) - word_base, piece_word)
        flat = pieces.merge_dims(1, 2)             # [batch, (pieces)]
        windows = window_rows(flat, seq_length - 2, self.doc_stride)
        inputs = self.preprocessor.packer([windows["pieces"]], seq_length=seq_length)
        mine = max_context_mask(windows)

        def per_window(per_piece):
            return tf.gather(per_piece, windows["positions"])

        def pack(rows, fill):
            edge = tf.fill([rows.nrows(), 1], tf.cast(fill, rows.dtype))
            return tf.concat([edge, rows, edge], axis=1).to_tensor(default_value=fill, shape=[None, seq_length])

        first = per_window(first_piece)
        word_ids = pack(tf.where(first & mine, per_window(local_word), tf.constant(-1, tf.int64)), -1)
        labels = None
        if word_labels is not None:
            word_labels = word_labels if isinstance(word_labels, tf.RaggedTensor) else tf.ragged.constant(
                [list(x) for x in word_labels], dtype=tf.int64)
            tf.debugging.assert_equal(word_labels.row_lengths(), pieces.row_lengths(),
                                      message="each sentence needs one label per word")
            tags = tf.gather(tf.cast(word_labels.values, tf.int64), piece_word)
            labels = pack(tf.where(first, per_window(tags), tf.constant(IGNORE_INDEX, tf.int64)), IGNORE_INDEX)
        return inputs, labels, word_ids, windows["document"]

    def dataset(self, words, word_labels=None, *, batch_size=32, shuffle=False, seed=None, boundaries=None,
                chunk=4096):
        """tf.data of (inputs, labels) (inputs alone without labels) for lists of word lists.

        Features are computed once, in chunks, with the in-graph code above; batches are
        trimmed to their longest row, and grouped by length when ``boundaries`` is given."""
        inputs, labels, _ = self.numpy_features(words, word_labels, chunk=chunk)
        lengths = inputs["input_mask"].sum(axis=1)
        # Host-packed backends cut each batch themselves (to a multiple of WIDTH_MULTIPLE positions).
        trim = self.dynamic_length and not host_packing()
        return make_dataset(inputs, labels, batch_size=batch_size, lengths=lengths, boundaries=boundaries,
                            shuffle=shuffle, seed=seed, map_batch=trim_to_longest if trim else None)

    def numpy_features(self, words, word_labels=None, chunk=4096, with_document=False):
        """(inputs, labels, word_ids) as numpy (+ the sentence of each row with ``with_document``:
        the row itself under truncate, its window's sentence under windows)."""
        parts = []
        for start in range(0, len(words), chunk):
            labels = None if word_labels is None else word_labels[start:start + chunk]
            pieces = self.pieces(words=words[start:start + chunk])
            if self.windows:
                inputs, label_ids, word_ids, document = self.window_features(pieces, labels)
                document = document.numpy() + start
            else:
                inputs, label_ids, word_ids = self.features(pieces, labels)
                document = np.arange(start, start + int(pieces.nrows()))
            parts.append(({k: v.numpy() for k, v in inputs.items()},
                          None if label_ids is None else label_ids.numpy(), word_ids.numpy(), document))
        inputs = {k: np.concatenate([p[0][k] for p in parts]) for k in parts[0][0]}
        labels = None if word_labels is None else np.concatenate([p[1] for p in parts])
        result = (inputs, labels, np.concatenate([p[2] for p in parts]))
        return (*result, np.concatenate([p[3] for p in parts])) if with_document else result

    # -- predictions --------------------------------------------------------------------------
    def _tag_ids(self, inputs, word_ids, num_words, batch_size, progress=None, document=None):
        """Word tag ids from packed features, batched by length (``progress(rows)`` after each batch).
        ``document``: the sentence of each row (windows); each word takes its tag from the row whose
        ``word_ids`` name it."""
        document = np.arange(len(word_ids)) if document is None else np.asarray(document)
        results = [np.full(n, self.fill_label, dtype=np.int64) for n in num_words]
        step = None if self.packs_on_host else inference_step(self, _tag_ids)
        for index, width, batch in length_sorted_batches(inputs, batch_size):
            predicted = self.predict_ids(batch).argmax(axis=-1) if step is None else step(batch).numpy()
            for row, i in enumerate(index):
                ids = word_ids[i, :width]
                chosen = ids >= 0
                results[document[i]][ids[chosen]] = predicted[row][chosen]
            if progress is not None:
                progress(len(index))
        return results

    def predict_word_ids(self, words, batch_size=64, progress=None) -> list:
        """Tag ids per word for lists of pre-split words."""
        inputs, _, word_ids, document = self.numpy_features(words, with_document=True)
        if self.windows and progress is not None:
            progress = _window_progress(progress, document)
        return self._tag_ids(inputs, word_ids, [len(w) for w in words], batch_size, progress, document)

    def predict_words(self, words, batch_size=64, progress=None) -> list:
        """Tag names per word for lists of pre-split words (e.g. CoNLL sentences)."""
        return [[self.label_names[t] for t in tags] for tags in self.predict_word_ids(words, batch_size, progress)]

    def predict_entities(self, texts, batch_size=64) -> list:
        """Per raw text, {"words": [{"text", "start", "end", "tag"}], "entities": [{"type",
        "text", "start", "end"}]} with character offsets into the text (entities only for IOB
        tags: O, B-<type>, I-<type>)."""
        texts = [t.decode("utf-8") if isinstance(t, bytes) else str(t) for t in texts]
        strings = tf.constant(texts, tf.string)
        _, starts, ends = self.tokenizer.tokenize_with_offsets(strings, unit="UTF8_CHAR")
        word_starts = tf.reduce_min(starts, axis=2).to_list()
        word_ends = tf.reduce_max(ends, axis=2).to_list()
        pieces = self.pieces(texts=strings)
        document = None
        if self.windows:
            inputs, _, word_ids, document = self.window_features(pieces)
            document = document.numpy()
        else:
            inputs, _, word_ids = self.features(pieces)
        inputs = {k: v.numpy() for k, v in inputs.items()}
        tag_ids = self._tag_ids(inputs, word_ids.numpy(), [len(s) for s in word_starts], batch_size,
                                document=document)
        iob = all(n == "O" or n[:2] in ("B-", "I-") for n in self.label_names)
        results = []
        for text, s, e, ids in zip(texts, word_starts, word_ends, tag_ids):
            tags = [self.label_names[t] for t in ids]
            words = [{"text": text[a:b], "start": a, "end": b, "tag": t} for a, b, t in zip(s, e, tags)]
            entities = [{"type": kind, "text": text[s[i]:e[j]], "start": s[i], "end": e[j]}
                        for kind, i, j in (entity_spans(tags) if iob else [])]
            results.append({"words": words, "entities": entities})
        return results


def _window_progress(progress, document):
    """``progress(rows)`` over windows -> sentences, counted as their windows are done."""
    counts = np.bincount(document) if len(document) else np.zeros(0, np.int64)
    total = {"windows": 0, "sentences": 0, "per": len(document) / max(len(counts), 1)}

    def report(windows):
        total["windows"] += windows
        sentences = min(len(counts), int(total["windows"] / total["per"]))
        progress(sentences - total["sentences"])
        total["sentences"] = sentences

    return report


def _tag_ids(model, x):
    return tf.argmax(model(x, training=False), axis=-1)
