"""Sentence and sentence-pair models on the pooled [CLS] output (Figure 3 (a), (b)).

  TextClassifier        one label of N (softmax, sparse cross-entropy): SST-2, CoLA, MRPC, MNLI, ...
  TextRegressor         one score (MSE): STS-B
  MultiLabelClassifier  any subset of N labels (sigmoid per label, binary cross-entropy)

Inputs are raw strings: a [batch] string tensor / object array for one text, a dict
``{"text_a": ..., "text_b": ...}`` (or a 2-tuple) for pairs; tokenization and packing run in
the graph (kbert.text.BertPreprocessor), so ``model.fit(texts, labels)`` trains and the same
graph serves. ``call`` returns logits ([batch, N]; [batch] scores for the regressor);
``serve(inputs)`` adds the post-processing (probabilities, class ids, label names).
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from kbert.errors import OptionsError, TaskModelError
from kbert.tasks.core.base import TaskModel
from kbert.tasks.core.host_batches import host_packing
from kbert.tasks.core.batching import in_input_order, length_order, progress_callbacks
from kbert.tasks.core.heads import PooledHead, RecurrentPooledHead, SentenceAttentionHead, TokenAttentionHead
from kbert.tasks.core.options import check_bilstm
from kbert.tasks.core.text_inputs import take_rows, text_lengths, text_segments
from kbert.tasks.core.windows import LONG_DOCUMENTS, window_settings
from kbert.api_export import kbert_export


class _PooledTextModel(TaskModel):
    head_name = "classifier"
    # The window pooling of a new model of this class and its subclasses (measured:
    # docs/finetuning.md, "Long documents"); directories written before the pooling was recorded
    # imply their own (implied_settings).
    default_window_pooling = "mean"

    def __init__(self, encoder, tokenizer, lower_case=None, *, num_outputs, num_segments=1, dropout=0.1,
                 long_documents="truncate", doc_stride=None, window_pooling=None, bilstm=0, **kwargs):
        super().__init__(encoder, tokenizer, lower_case, **kwargs)
        if num_segments not in (1, 2):
            raise TaskModelError(f"num_segments must be 1 (one text) or 2 (a pair), got {num_segments!r}")
        self.num_segments = int(num_segments)
        # Texts longer than seq_length: cut ("truncate"), or read in windows or sentences whose
        # outputs are combined into one answer per text (kbert.tasks.classification.window_inputs).
        try:
            self.long_documents, self.doc_stride = window_settings(long_documents, doc_stride, self.seq_length,
                                                                   LONG_DOCUMENTS)
        except ValueError as e:
            raise TaskModelError(str(e)) from None
        if self.sentences and self.num_segments != 1:
            raise OptionsError("--long-documents sentences splits one text a row into sentences; a pair of texts "
                               "takes truncate or windows", option="long_documents", value=self.long_documents)
        from kbert.tasks.classification.window_inputs import POOLINGS

        # How a text's windows' (sentences') logits become its one answer, in training, prediction
        # and exports; over sentences a learned attention by default.
        self.window_pooling = window_pooling or ("attention" if self.sentences else self.default_window_pooling)
        if self.window_pooling not in POOLINGS:
            raise TaskModelError(f"window_pooling must be one of {', '.join(POOLINGS)}, got {window_pooling!r}")
        if self.window_pooling == "attention" and not self.units:
            raise TaskModelError("window_pooling 'attention' pools the tokens of a text's windows (or its "
                                 "sentences): it takes long_documents='windows' or 'sentences'")
        # A BiLSTM over every token between the encoder and the dense layer (the paper's Table 5
        # "+ BiLSTM"), read at each direction's end (heads.RecurrentPooledHead); 0: the pooled [CLS].
        self.bilstm = check_bilstm(bilstm)
        if self.bilstm and self.window_pooling == "attention":
            raise OptionsError(f"bilstm (--bilstm) {self.bilstm}: window_pooling 'attention' reads the encoder's tokens "
                               "itself; use another --window-pooling", option="bilstm", value=self.bilstm)
        if self.token_attention or self.bilstm:  # [CLS]'s pooler is not used: not trained, no gradient asked of it
            for layer in encoder.layers:
                if layer.name == "pooler":
                    layer.trainable = False
        config = encoder.config
        common = dict(dropout=dropout, initializer_range=config.initializer_range, name=self.head_name)
        if self.bilstm:
            self.head = RecurrentPooledHead(config.hidden_size, num_outputs, self.bilstm, **common)
        else:
            head = (TokenAttentionHead if self.token_attention else
                    SentenceAttentionHead if self.window_pooling == "attention" else PooledHead)
            self.head = head(config.hidden_size, num_outputs, **common)
        self._build_head()

    def task_settings(self):
        return {**super().task_settings(), "num_segments": self.num_segments,
                "dropout": self.head.dropout_rate, "long_documents": self.long_documents,
                "doc_stride": self.doc_stride, "window_pooling": self.window_pooling,
                **({"bilstm": self.bilstm} if self.bilstm else {})}

    def head_logits(self, outputs: dict, training=None):
        """The dense head's logits for ``encode``'s outputs: the pooled [CLS] output's, or under
        ``bilstm`` the BiLSTM's over every token."""
        if self.bilstm:
            return self.head(outputs["sequence_output"], mask=outputs["input_mask"], training=training)
        return self.head(outputs["pooled_output"], training=training)

    @property
    def windows(self) -> bool:
        return self.long_documents == "windows"

    @property
    def sentences(self) -> bool:
        """Texts split into sentences, each read alone (``long_documents="sentences"``)."""
        return self.long_documents == "sentences"

    @property
    def units(self) -> bool:
        """A text read as several units (windows or sentences) whose outputs are pooled."""
        return self.long_documents in ("windows", "sentences")

    @property
    def token_attention(self) -> bool:
        """Attention over every token of a text's windows (heads.TokenAttentionHead)."""
        return self.windows and self.window_pooling == "attention"

    def pack(self, inputs) -> dict:
        """Packed ids of texts as ``call`` takes them: ``tokenizer.pre_tokenize()``'s strings (what
        ``fit``, ``evaluate`` and ``predict`` make of raw texts, ``TaskModel._texts``)."""
        return self.preprocessor(text_segments(inputs, self.num_segments, type(self).__name__), pre_tokenized=True)

    def call(self, inputs, training=None):
        """Logits for texts (TensorFlow; one row per text, its windows combined under
        ``long_documents="windows"``) or for packed ids (``pack``, or each window's; any backend).
        Packed ids of a batch of documents' windows (``window_inputs.document_batches``: with each
        window's document and a mask of the documents) give one row per document."""
        from kbert.tasks.classification.window_inputs import DOCUMENT_MASK, WINDOW_DOCUMENT, combine

        document = num_documents = None
        if self.takes_ids(inputs) and WINDOW_DOCUMENT in inputs:
            packed = {k: v for k, v in inputs.items() if k not in (WINDOW_DOCUMENT, DOCUMENT_MASK)}
            document, num_documents = inputs[WINDOW_DOCUMENT], keras.ops.shape(inputs[DOCUMENT_MASK])[0]
        elif self.takes_ids(inputs):
            packed = inputs
        elif host_packing():
            raise TaskModelError(f"{type(self).__name__} under the {keras.backend.backend()} backend takes packed ids "
                                 "(model.pack(texts) in TensorFlow); fit, evaluate and predict pack texts themselves")
        elif self.windows:
            from kbert.tasks.classification.window_inputs import window_inputs

            packed, document = window_inputs(self, inputs, check=False)
            num_documents = tf.cast(tf.reduce_max(tf.concat([document, [-1]], 0)) + 1, tf.int32)
        elif self.sentences:
            from kbert.tasks.classification.window_inputs import sentence_inputs

            packed, document, num_documents = sentence_inputs(self, inputs)
        else:
            packed = self.pack(inputs)
        outputs = self.encode(packed, training=training)
        weights = None
        if self.token_attention:  # the tokens pooled, not [CLS] (heads.TokenAttentionHead)
            logits, weights = self.head.window_outputs(outputs["sequence_output"], outputs["input_mask"],
                                                       training=training)
        elif self.window_pooling == "attention":  # each sentence's [CLS] scored (heads.SentenceAttentionHead)
            logits, weights = self.head.unit_outputs(outputs["pooled_output"], training=training)
        else:
            logits = self.head_logits(outputs, training=training)
        if document is None:
            return logits
        return combine(logits, document, num_documents, self.window_pooling, weights)

    def window_ids(self, inputs):
        """(packed numpy ids of every window, document of each) for raw texts, on the host."""
        from kbert.tasks.classification.window_inputs import host_windows

        return host_windows(self, inputs)

    def predict_logits(self, inputs, batch_size=64, progress=None) -> np.ndarray:
        """call(inputs) for many examples, batched in order of length (little padding), returned
        in the input order; ``progress(rows)`` is called after each batch. Under
        ``long_documents="windows"`` the windows of all texts are batched together and combined
        into one row per text (under attention pooling with a ``network_runner``, which answers each
        window's logits and log total attention weight, by those weights). Under
        ``long_documents="sentences"`` the same with sentences (``_predict_sentences``)."""
        if self.token_attention and self.network_runner is None:
            return self._predict_documents(inputs, batch_size, progress)
        if self.sentences and self.window_pooling == "attention":
            if host_packing():
                return self._predict_documents(inputs, batch_size, progress)
            return self._predict_sentences(inputs, batch_size, progress)
        if self.units:
            from kbert.tasks.classification.window_inputs import combine_numpy

            packed, document = self.window_ids(inputs)
            order = length_order(packed["input_mask"].sum(axis=1))
            callbacks = progress_callbacks(_document_progress(progress, document, order, batch_size),
                                           len(order), batch_size)
            outputs = self.predict({k: v[order] for k, v in packed.items()}, batch_size=batch_size, verbose=0,
                                   callbacks=callbacks)
            weights = None
            if self.window_pooling == "attention":  # (logits, weights) of each window: kbert.export.onnx.runtime
                outputs, weights = outputs
                weights = in_input_order(weights, order)
            return combine_numpy(in_input_order(outputs, order), document,
                                 len(text_lengths(inputs, self.num_segments)), self.window_pooling, weights)
        order = length_order(text_lengths(inputs, self.num_segments))
        callbacks = progress_callbacks(progress, len(order), batch_size)
        return in_input_order(self.predict(take_rows(inputs, order), batch_size=batch_size, verbose=0,
                                           callbacks=callbacks), order)

    def _predict_sentences(self, inputs, batch_size, progress):
        """predict_logits under attention over sentences (TensorFlow): every sentence of every text
        in batches of ``batch_size`` sentences ordered by length, each giving its logits and score
        (heads.SentenceAttentionHead), then each text's sentences pooled on the host."""
        from kbert.tasks.classification.window_inputs import combine_numpy

        packed, document = self.window_ids(inputs)
        order = length_order(packed["input_mask"].sum(axis=1))
        report = _document_progress(progress, document, order, batch_size)

        @tf.function(reduce_retracing=True)
        def unit_outputs(ids):
            return self.head.unit_outputs(self.encode(ids, training=False)["pooled_output"], training=False)

        logits, scores = [], []
        for first in range(0, len(order), batch_size):
            rows = order[first:first + batch_size]
            out, score = unit_outputs({k: tf.constant(v[rows]) for k, v in packed.items()})
            logits.append(out.numpy())
            scores.append(score.numpy())
            if report is not None:
                report(len(rows))
        n = len(text_lengths(inputs, self.num_segments))
        pooled = combine_numpy(in_input_order(np.concatenate(logits), order), document, n, "attention",
                               in_input_order(np.concatenate(scores), order)) if len(order) else \
            np.zeros((n, self.head.num_outputs), np.float32)
        return pooled[:, 0] if self.task_type == "text_regressor" else pooled  # as TextRegressor.call

    def _predict_documents(self, inputs, batch_size, progress):
        """predict_logits under attention pooling: a window's logits alone do not combine (its
        weight rides beside them), so batches of whole documents, about ``batch_size`` windows
        each, run through ``call``, which pools their tokens as training did."""
        from kbert.tasks.classification.window_inputs import DOCUMENT_MASK, document_batches

        packed, document = self.window_ids(inputs)
        n = len(text_lengths(inputs, self.num_segments))
        documents = max(1, int(batch_size * n / max(len(document), 1)))
        host = (self.row_multiple(), self.WIDTH_MULTIPLE) if host_packing() else None
        batches = document_batches(packed, document, np.zeros(n, np.float32), batch_size=documents, shuffle=False,
                                   host=host)
        # keras.Model.predict, not TaskModel.predict: these batches are packed ids already.
        logits = keras.Model.predict(self, batches, verbose=0,
                                     callbacks=progress_callbacks(progress, n, documents))
        if host is not None:  # host batches are padded with documents of mask 0
            real = np.concatenate([np.asarray(x[DOCUMENT_MASK]) for x, *_ in batches]) > 0
            logits = logits[real]
        return logits


def _document_progress(progress, document, order, batch_size):
    """``progress(windows done)`` -> ``progress(documents whose last window is done)``."""
    if progress is None:
        return None
    last = np.zeros(int(document.max(initial=-1)) + 1, dtype=np.int64)
    np.maximum.at(last, document[order], np.arange(len(order)))
    done = {"windows": 0, "documents": 0}

    def report(windows):
        done["windows"] += windows
        finished = int((last < done["windows"]).sum())
        progress(finished - done["documents"])
        done["documents"] = finished

    return report


def _label_names(num_classes, label_names, who):
    if label_names is not None:
        label_names = [str(n) for n in label_names]
        if num_classes is not None and int(num_classes) != len(label_names):
            raise TaskModelError(f"{who}: num_classes={num_classes} but {len(label_names)} label_names")
        return len(label_names), label_names
    if num_classes is None:
        raise TaskModelError(f"{who} needs num_classes or label_names")
    return int(num_classes), None


@kbert_export("kbert.TextClassifier", "kbert.tasks.TextClassifier")
class TextClassifier(_PooledTextModel):
    """Single-label classification of one text or a pair (the paper's Figure 3 a, b).

    Args:
      encoder: a kbert.BertEncoder; tokenizer: a tokenizer object (kbert.load_tokenizer) or, for
        WordPiece, a vocab.txt path or token list; lower_case: for a vocabulary only (default True).
      num_classes / label_names: the classes (label_names: strings, index = class id).
      num_segments: 1 (one text) or 2 (a pair).
      seq_length, truncator: packing (see kbert.text.BertPacker); dynamic_length: trim each batch
        to its longest sequence.
      dropout: before the dense layer (0.1 as in the paper).
      long_documents, doc_stride, window_pooling: texts longer than seq_length (kbert.tasks.core.windows).
      bilstm: LSTM units per direction of a randomly initialised BiLSTM over every token, read at
        each direction's end instead of the pooled [CLS] (the paper's Table 5 "+ BiLSTM"); 0: none.

    Examples:
        >>> import kbert
        >>> model_dir = kbert.random_model_dir("runs/tiny")
        >>> model = kbert.TextClassifier(kbert.load_encoder(model_dir), kbert.load_tokenizer(model_dir),
        ...                              label_names=["negative", "positive"], seq_length=16)
        >>> model.compile(optimizer="adam")
        >>> history = model.fit({"text_a": ["a good movie", "a bad movie"]}, [1, 0], epochs=1, verbose=0)
        >>> model.predict({"text_a": ["a great film"]}, verbose=0).shape   # logits
        (1, 2)
    """

    task_type = "text_classifier"
    default_window_pooling = "logmeanexp"
    head_shape_keys = ("num_classes", "label_names", "bilstm")
    implied_settings = {"window_pooling": "mean", "bilstm": 0}

    def __init__(self, encoder, tokenizer, lower_case=None, *, num_classes=None, label_names=None, **kwargs):
        num_classes, label_names = _label_names(num_classes, label_names, type(self).__name__)
        if num_classes < 2:
            raise TaskModelError(f"TextClassifier needs num_classes >= 2, got {num_classes}")
        self.num_classes = num_classes
        self.label_names = label_names
        super().__init__(encoder, tokenizer, lower_case, num_outputs=num_classes, **kwargs)

    def task_settings(self):
        return {**super().task_settings(), "num_classes": self.num_classes, "label_names": self.label_names}

    def default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def default_metrics(self):
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    def serve(self, inputs):
        """In-graph inference: logits, probabilities, class_ids (and labels when named)."""
        logits = self(inputs, training=False)
        result = {"logits": logits, "probabilities": tf.nn.softmax(logits),
                  "class_ids": tf.argmax(logits, axis=-1, output_type=tf.int32)}
        if self.label_names:
            result["labels"] = tf.gather(tf.constant(self.label_names), result["class_ids"])
        return result

    def predict_proba(self, inputs, batch_size=64) -> np.ndarray:
        return _softmax(self.predict_logits(inputs, batch_size))

    def predict_labels(self, inputs, batch_size=64) -> list:
        """Label names (class ids when the model has no label names) for each example."""
        ids = self.predict_logits(inputs, batch_size).argmax(axis=-1)
        return [self.label_names[i] for i in ids] if self.label_names else ids.tolist()


@kbert_export("kbert.TextRegressor", "kbert.tasks.TextRegressor")
class TextRegressor(_PooledTextModel):
    """One real-valued score for a text or a pair (STS-B), trained with mean squared error.

    Args:
        encoder: a ``kbert.BertEncoder``.
        tokenizer: a tokenizer object (``kbert.load_tokenizer``), or a WordPiece vocabulary.
        lower_case: with a vocabulary only.
        **kwargs: as ``kbert.TextClassifier`` (``num_segments``, ``seq_length``, ``dropout``, ...).

    Examples:
        >>> import kbert
        >>> model = kbert.TextRegressor.from_model_dir(kbert.random_model_dir("runs/tiny"), num_segments=2)
        >>> model.predict({"text_a": ["a man"], "text_b": ["a woman"]}, verbose=0).shape
        (1,)
    """

    task_type = "text_regressor"
    head_shape_keys = ("bilstm",)
    implied_settings = {"window_pooling": "mean", "bilstm": 0}

    def __init__(self, encoder, tokenizer, lower_case=None, **kwargs):
        super().__init__(encoder, tokenizer, lower_case, num_outputs=1, **kwargs)

    def call(self, inputs, training=None):
        return keras.ops.squeeze(super().call(inputs, training=training), axis=-1)

    def default_loss(self):
        return keras.losses.MeanSquaredError()

    def default_metrics(self):
        return [keras.metrics.MeanAbsoluteError(name="mae")]

    def serve(self, inputs):
        return {"scores": self(inputs, training=False)}


@kbert_export("kbert.MultiLabelClassifier", "kbert.tasks.MultiLabelClassifier")
class MultiLabelClassifier(_PooledTextModel):
    """Any subset of the labels: one sigmoid per label, binary cross-entropy.

    Labels are [batch, num_labels] 0/1 indicators.

    Args:
        encoder: a ``kbert.BertEncoder``.
        tokenizer: a tokenizer object (``kbert.load_tokenizer``), or a WordPiece vocabulary.
        lower_case: with a vocabulary only.
        num_labels: the number of labels, or ``label_names`` (strings, index = label id).
        label_names: the labels' names.
        threshold: the probability above which a label is predicted.
        at_least_one: a row where no label passes ``threshold`` gets its most probable label.
        **kwargs: as ``kbert.TextClassifier`` (``num_segments``, ``seq_length``, ``dropout``, ...).

    Examples:
        >>> import kbert
        >>> model = kbert.MultiLabelClassifier.from_model_dir(kbert.random_model_dir("runs/tiny"),
        ...                                                   label_names=["city", "food", "movie"])
        >>> model.predict({"text_a": ["paris bought milk"]}, verbose=0).shape
        (1, 3)
    """

    task_type = "multi_label_classifier"
    default_window_pooling = "max"
    head_shape_keys = ("num_labels", "label_names", "bilstm")
    implied_settings = {"window_pooling": "max", "bilstm": 0}

    def __init__(self, encoder, tokenizer, lower_case=None, *, num_labels=None, label_names=None, threshold=0.5,
                 at_least_one=False, **kwargs):
        num_labels, label_names = _label_names(num_labels, label_names, type(self).__name__)
        if not 0.0 < float(threshold) < 1.0:
            raise TaskModelError(f"MultiLabelClassifier: threshold must be in (0, 1), got {threshold}")
        self.num_labels = num_labels
        self.label_names = label_names
        self.threshold = float(threshold)
        self.at_least_one = bool(at_least_one)
        super().__init__(encoder, tokenizer, lower_case, num_outputs=num_labels, **kwargs)

    def task_settings(self):
        return {**super().task_settings(), "num_labels": self.num_labels, "label_names": self.label_names,
                "threshold": self.threshold, "at_least_one": self.at_least_one}

    def default_loss(self):
        return keras.losses.BinaryCrossentropy(from_logits=True)

    def default_metrics(self):
        # On logits, threshold t in probability is logit(t).
        return [keras.metrics.BinaryAccuracy(name="binary_accuracy", threshold=float(_logit(self.threshold)))]

    def serve(self, inputs):
        probabilities = tf.sigmoid(self(inputs, training=False))
        return {"probabilities": probabilities,
                "predictions": multi_label_decisions(probabilities, self.threshold, self.at_least_one)}

    def indicators(self, logits) -> np.ndarray:
        """[n, num_labels] 0/1 decisions for logits (threshold, then at_least_one)."""
        logits = np.asarray(logits)
        chosen = logits > _logit(self.threshold)
        if self.at_least_one:
            none = ~chosen.any(axis=-1)
            chosen[none, logits[none].argmax(axis=-1)] = True
        return chosen.astype(np.int64)

    def predict_indicators(self, inputs, batch_size=64) -> np.ndarray:
        """[n, num_labels] 0/1 predictions."""
        return self.indicators(self.predict_logits(inputs, batch_size))

    def predict_labels(self, inputs, batch_size=64) -> list:
        names = self.label_names or list(range(self.num_labels))
        return [[names[j] for j in np.flatnonzero(row)] for row in self.predict_indicators(inputs, batch_size)]


def multi_label_decisions(probabilities, threshold: float, at_least_one: bool):
    """In-graph 0/1 int32 decisions [batch, L] from sigmoid probabilities (as ``indicators``)."""
    chosen = probabilities > threshold
    if at_least_one:
        best = tf.one_hot(tf.argmax(probabilities, axis=-1), tf.shape(probabilities)[-1], on_value=True,
                          off_value=False)
        chosen = tf.where(tf.reduce_any(chosen, axis=-1, keepdims=True), chosen, best)
    return tf.cast(chosen, tf.int32)


def _softmax(logits):
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _logit(p):
    return np.log(p) - np.log1p(-p)
