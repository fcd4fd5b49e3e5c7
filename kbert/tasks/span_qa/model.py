"""Extractive question answering (SQuAD 1.1 / 2.0, Figure 3 (c)): start and end vectors.

The model runs on packed windows (``call(inputs)`` -> ``start_logits``, ``end_logits``
[batch, seq], padding at -10000): one dense layer with 2 units over the sequence output, i.e. the
paper's start vector S and end vector E. The windows are built on the host from the in-graph
tokenizer's output: question and context are tokenized by ``self.tokenizer`` (with code point
offsets into the original strings), and kbert.tasks.span_qa.postprocess.build_windows cuts
``[CLS] question [SEP] context slice [SEP]`` windows with ``doc_stride`` (the run_squad.py
layout, max-context bookkeeping included). Answers are mapped back to the original context
text through those offsets, so accents, case and multi-byte characters come back exactly as
written. ``answer(questions, contexts)`` does all of it from raw strings.

Every tokenizer type works: questions go through the tokenizer's Python step (``pre_tokenize``:
NFKC and MeCab words for the ``mecab-*`` types, nothing for WordPiece and SentencePiece) before its
graph part; contexts through ``tokenize_with_offsets``, which takes the raw text for every type and
reports spans in it (for the MeCab types NFKC is mapped back, so a full-width answer comes back
full-width). A special token written in a context (JSQuAD's ``[SEP]``) is that token for the
``mecab-*`` types and plain text for the others (see kbert.tasks.classification.jglue).
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
from kbert.tasks.span_qa.postprocess import build_windows, postprocess_example
from kbert.api_export import kbert_export

PADDING_LOGIT = -10000.0


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


@kbert_export("kbert.SpanQuestionAnswerer", "kbert.tasks.SpanQuestionAnswerer")
class SpanQuestionAnswerer(SequenceFeatures, TaskModel):
    """SQuAD-style span prediction.

    Args:
      encoder, tokenizer, lower_case, seq_length (384 in the paper), truncator, dynamic_length: as
        TaskModel.
      max_query_length, doc_stride: window building, as run_squad.py (64, 128).
      n_best_size, max_answer_length (tokens), version_2_with_negative, null_score_diff_threshold:
        answer selection, as run_squad.py (20, 30, False, 0.0).
      bilstm: LSTM units per direction of a randomly initialised BiLSTM between the encoder and the
        span layer (the paper's Table 5 "+ BiLSTM", on SQuAD); 0: none.

    Examples:
        >>> import kbert
        >>> model = kbert.SpanQuestionAnswerer.from_model_dir(kbert.random_model_dir("runs/tiny"),
        ...                                                   seq_length=64, max_query_length=16)
        >>> answers = model.answer(["where did he go ?"], ["he went to the store ."])
        >>> len(answers), answers[0].text in "he went to the store ."
        (1, True)
    """

    task_type = "span_qa"
    head_name = "span"
    head_shape_keys = ("bilstm",)
    implied_settings = {"bilstm": 0}

    def __init__(self, encoder, tokenizer, lower_case=None, *, seq_length=384, max_query_length=64, doc_stride=128,
                 n_best_size=20, max_answer_length=30, version_2_with_negative=False,
                 null_score_diff_threshold=0.0, bilstm=0, **kwargs):
        super().__init__(encoder, tokenizer, lower_case, seq_length=seq_length, **kwargs)
        if max_query_length + 4 > seq_length:
            raise TaskModelError(f"max_query_length {max_query_length} leaves no room for context in "
                                 f"seq_length {seq_length}")
        if doc_stride < 1:
            raise TaskModelError(f"doc_stride must be >= 1, got {doc_stride}")
        self.max_query_length = int(max_query_length)
        self.doc_stride = int(doc_stride)
        self.n_best_size = int(n_best_size)
        self.max_answer_length = int(max_answer_length)
        self.version_2_with_negative = bool(version_2_with_negative)
        self.null_score_diff_threshold = float(null_score_diff_threshold)
        # No dropout before the span layer, as run_squad.py.
        self.head = self.sequence_head(2, dropout=0.0, bilstm=bilstm)
        self._build_head()
        # The pooler is not used here: freezing it keeps it out of the optimizer (no "gradients do
        # not exist" warnings); its weights are saved unchanged.
        encoder.pooler.trainable = False
        self._special = self.tokenizer.special_token_ids

    def task_settings(self):
        return {**super().task_settings(), "max_query_length": self.max_query_length,
                "doc_stride": self.doc_stride, "n_best_size": self.n_best_size,
                "max_answer_length": self.max_answer_length,
                "version_2_with_negative": self.version_2_with_negative,
                "null_score_diff_threshold": self.null_score_diff_threshold, **self.sequence_settings()}

    def call(self, inputs, training=None):
        logits = self.sequence_logits(inputs, training=training)
        real = keras.ops.cast(inputs["input_mask"], "bool")
        pad = keras.ops.cast(PADDING_LOGIT, logits.dtype)
        return {"start_logits": keras.ops.where(real, logits[..., 0], pad),
                "end_logits": keras.ops.where(real, logits[..., 1], pad)}

    def default_loss(self):
        # The mean of the start and end cross-entropies, as run_squad.py.
        return {"start_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                "end_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)}

    def compile(self, optimizer="adam", loss=None, metrics=None, **kwargs):
        if loss is None:
            kwargs.setdefault("loss_weights", {"start_logits": 0.5, "end_logits": 0.5})
        super().compile(optimizer, loss, metrics, **kwargs)

    # -- windows ------------------------------------------------------------------------------
    def windows(self, questions, contexts, answer_spans=None, is_impossible=None) -> list:
        """(example index, Window) for every window of every example.

        ``answer_spans``: per example (start_char, end_char) of the answer in its context, or
        None; ``is_impossible``: per example bool (SQuAD 2.0). With either, windows carry
        start/end positions for training ([CLS] = 0 where the answer is not in the window).
        """
        if len(questions) != len(contexts):
            raise OptionsError(f"{len(questions)} questions but {len(contexts)} contexts")
        # Questions through the tokenizer's Python step (MeCab words) and its graph part; contexts through
        # tokenize_with_offsets, which takes raw texts for every tokenizer type (MeCab runs inside it).
        query_texts = self.tokenizer.pre_tokenize([_text(q) for q in questions])
        query_ids = self.tokenizer.tokenize_flat(tf.constant(query_texts, tf.string, shape=[len(questions)]),
                                                 pre_tokenized=True).to_list()
        unique = list(dict.fromkeys(contexts))  # many questions share a context: tokenize it once
        ids, starts, ends = self.tokenizer.tokenize_with_offsets(tf.constant(unique, tf.string), unit="UTF8_CHAR")
        ids, starts, ends = (r.merge_dims(1, 2).to_list() for r in (ids, starts, ends))
        tokenized = {c: (i, np.stack([s, e], axis=-1).reshape(-1, 2)) for c, i, s, e in zip(unique, ids, starts, ends)}
        special = self._special
        result = []
        for n, (question, context) in enumerate(zip(query_ids, contexts)):
            context_ids, offsets = tokenized[context]
            span = None if answer_spans is None else answer_spans[n]
            impossible = bool(is_impossible[n]) if is_impossible is not None else False
            for window in build_windows(question, context_ids, offsets, max_seq_length=self.seq_length,
                                        max_query_length=self.max_query_length, doc_stride=self.doc_stride,
                                        cls_token=special["start_of_sequence_id"],
                                        sep_token=special["end_of_segment_id"],
                                        pad_token=special["padding_id"], answer_span=span,
                                        is_impossible=impossible):
                result.append((n, window))
        return result

    @staticmethod
    def window_arrays(windows) -> tuple:
        """(inputs, positions) numpy arrays of a list of (example index, Window)."""
        ws = [w for _, w in windows]
        inputs = {"input_word_ids": np.array([w.tokens for w in ws], dtype=np.int32),
                  "input_mask": np.array([w.input_mask for w in ws], dtype=np.int32),
                  "input_type_ids": np.array([w.segment_ids for w in ws], dtype=np.int32)}
        positions = None
        if ws and ws[0].start_position is not None:
            positions = {"start_logits": np.array([w.start_position for w in ws], dtype=np.int32),
                         "end_logits": np.array([w.end_position for w in ws], dtype=np.int32)}
        return inputs, positions

    def dataset(self, questions, contexts, answer_spans, is_impossible=None, *, batch_size=32, shuffle=False,
                seed=None, boundaries=None):
        """tf.data of (inputs, {"start_logits": start position, "end_logits": end position})."""
        windows = self.windows(questions, contexts, answer_spans, is_impossible)
        inputs, positions = self.window_arrays(windows)
        # Host-packed backends cut each batch themselves (to a multiple of WIDTH_MULTIPLE positions).
        trim = (lambda x, y: (trim_to_longest(x), y)) if self.dynamic_length and not host_packing() else None
        return make_dataset(inputs, positions, batch_size=batch_size, lengths=inputs["input_mask"].sum(axis=1),
                            boundaries=boundaries, shuffle=shuffle, seed=seed, map_batch=trim)

    # -- predictions --------------------------------------------------------------------------
    def window_logits(self, inputs, batch_size=64, progress=None) -> list:
        """(start, end) logits per window, each of the window's trimmed batch width
        (``progress(windows)`` after each batch)."""
        step = None if self.packs_on_host else inference_step(self, _window_logits)
        result = [None] * len(inputs["input_mask"])
        for index, _, batch in length_sorted_batches(inputs, batch_size, trim=self.dynamic_length):
            out = self.predict_ids(batch) if step is None else {k: v.numpy() for k, v in step(batch).items()}
            starts, ends = out["start_logits"], out["end_logits"]
            for row, i in enumerate(index):
                result[i] = (starts[row], ends[row])
            if progress is not None:
                progress(len(index))
        return result

    def predict_windows(self, contexts, windows, batch_size=64, progress=None, **overrides) -> list:
        """A SquadPrediction per example from its windows (see postprocess_example; ``overrides``
        replace n_best_size, max_answer_length, version_2_with_negative,
        null_score_diff_threshold)."""
        inputs, _ = self.window_arrays(windows)
        logits = self.window_logits(inputs, batch_size, progress) if windows else []
        grouped = {}
        for (n, window), (start, end) in zip(windows, logits):
            grouped.setdefault(n, ([], [], []))
            grouped[n][0].append(window)
            grouped[n][1].append(start)
            grouped[n][2].append(end)
        settings = {"n_best_size": self.n_best_size, "max_answer_length": self.max_answer_length,
                    "version_2_with_negative": self.version_2_with_negative,
                    "null_score_diff_threshold": self.null_score_diff_threshold, **overrides}
        # An example without windows (an empty context) gets the empty answer.
        return [postprocess_example(contexts[n], *grouped.get(n, ([], [], [])), **settings)
                for n in range(len(contexts))]

    def answer(self, questions, contexts, batch_size=64, **overrides) -> list:
        """Raw strings in, a kbert.tasks.span_qa.postprocess.SquadPrediction per question out
        (``.text``, ``.start_char``/``.end_char`` in the context, ``.nbest``, ``.score_diff``)."""
        contexts, questions = [_text(c) for c in contexts], [_text(q) for q in questions]
        return self.predict_windows(contexts, self.windows(questions, contexts), batch_size, **overrides)


def _window_logits(model, x):
    return model(x, training=False)
