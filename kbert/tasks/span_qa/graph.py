"""SQuAD answers from raw strings in one TensorFlow graph (for SavedModels / TF Serving).

``build_answer_fn(model)`` turns a fine-tuned ``kbert.tasks.span_qa.model.SpanQuestionAnswerer`` into
a function of tf ops and tensorflow-text ops only, which reproduces ``model.answer(questions,
contexts)`` (kbert.tasks.span_qa.model + kbert.tasks.span_qa.postprocess, i.e. google-research/bert
run_squad.py) inside a ``tf.function``:

  * windows: the question's WordPieces cut to ``max_query_length``; ``[CLS] question [SEP]
    context slice [SEP]`` windows of ``seq_length`` over the context with ``doc_stride``
    (run_squad.py's doc_spans loop in closed form), ``_check_is_max_context`` per context token;
  * the encoder and span head on the stacked windows of the whole batch (trimmed to the longest
    window when the model has ``dynamic_length``), as ``SpanQuestionAnswerer.call``;
  * answer selection per question: the ``n_best_size`` best starts and ends of every window,
    spans kept if both ends are context tokens, the start has its max context in that window and
    the span has at most ``max_answer_length`` tokens; a stable sort on start+end logit sums, the
    first ``n_best_size`` distinct answer texts (texts cut from the ORIGINAL context through the
    tokenizer's code point offsets), probability = softmax over those n-best; SQuAD 2.0: null
    score = min over windows of start[CLS]+end[CLS], the null answer when
    null score - best span score > ``null_score_diff_threshold``.

The function only closes over the model (its variables) and constants, so a SavedModel that
serves it (``kbert.export.task``: span QA's ``serving_default``) loads and answers in a process that
imports nothing but ``tensorflow`` and ``tensorflow_text``::

    qa = tf.saved_model.load(path)
    qa.signatures["serving_default"](question=tf.constant(["Who?"]),
                                     context=tf.constant(["Ada wrote it."]))["answer_text"]
"""

from __future__ import annotations

import tensorflow as tf

from kbert.errors import OptionsError
from kbert.tasks.core.batching import trim_to_longest

ANSWER_KEYS = ("answer_text", "answer_start", "answer_end", "score", "null_score_diff")
STRINGS_SPEC = tf.TensorSpec([None], tf.string)


def _settings(model) -> dict:
    return {
        "seq_length": int(model.seq_length),
        "max_query_length": int(model.max_query_length),
        "doc_stride": int(model.doc_stride),
        "n_best_size": int(model.n_best_size),
        "max_answer_length": int(model.max_answer_length),
        "version_2_with_negative": bool(model.version_2_with_negative),
        "null_score_diff_threshold": float(model.null_score_diff_threshold),
        "dynamic_length": bool(getattr(model, "dynamic_length", False)),
    }


def build_answer_fn(model):
    """Returns ``fn(question, context)`` for a SpanQuestionAnswerer (settings read now).

    ``question``, ``context``: tf.string [batch]. Returns a dict of dense tensors:
      answer_text      tf.string [batch]: the answer, cut from the original context ("" for no
                       answer: an empty context, or the SQuAD 2.0 null answer)
      answer_start     tf.int32 [batch]: its first character (Unicode code points) in context,
                       -1 when empty
      answer_end       tf.int32 [batch]: exclusive end, -1 when empty
      score            tf.float32 [batch]: the chosen answer's probability among the n-best
                       (1.0 where the n-best is only the empty / null answer)
      null_score_diff  tf.float32 [batch]: SQuAD 2.0 null score - best span score (+inf where
                       there is no span at all); NaN for SQuAD 1.1 models (None in Python)

    Usable eagerly, inside ``tf.function`` (e.g. ``input_signature=[tf.TensorSpec([None],
    tf.string)] * 2``) and in SavedModels.
    """
    tokenizer = model.tokenizer
    answer_pieces = build_pieces_answer_fn(model)

    @tf.autograph.experimental.do_not_convert  # plain tf ops: autograph would only slow tracing
    def answer_fn(question, context):
        question = tf.reshape(tf.convert_to_tensor(question, tf.string), [-1])
        context = tf.reshape(tf.convert_to_tensor(context, tf.string), [-1])
        tf.debugging.assert_equal(tf.size(question), tf.size(context),
                                  message="as many questions as contexts are needed")
        query = tokenizer.tokenize_flat(question)
        pieces, starts, ends = (r.merge_dims(1, 2) for r in tokenizer.tokenize_with_offsets(context, unit="UTF8_CHAR"))
        return answer_pieces(query, pieces, starts, ends, context)

    return answer_fn


def build_pieces_answer_fn(model):
    """The part of ``build_answer_fn`` after tokenization, shared with the words-in exports
    (kbert.tasks.span_qa.words_answers): ``fn(query, pieces, starts, ends, text)`` with the question's
    piece ids ``query`` [batch, (pieces)] (cut to ``max_query_length`` here), the context's piece ids
    ``pieces`` and their character spans ``starts``/``ends`` [batch, (pieces)] in ``text`` [batch],
    from which the answer texts are cut; returns ANSWER_KEYS with offsets into ``text``."""
    s = _settings(model)
    if s["max_query_length"] + 4 > s["seq_length"]:
        raise OptionsError(f"max_query_length {s['max_query_length']} leaves no room for context in "
                           f"seq_length {s['seq_length']}", option="max_query_length")
    if s["doc_stride"] < 1 or s["n_best_size"] < 1:
        raise OptionsError("doc_stride and n_best_size must be >= 1")
    special = model.tokenizer.special_token_ids
    ids = (special["start_of_sequence_id"], special["end_of_segment_id"], special["padding_id"])

    def logits_fn(inputs):
        # As SpanQuestionAnswerer.call (via the model, so its padding logits come along).
        if s["dynamic_length"]:
            inputs = trim_to_longest(inputs)
        out = model(inputs, training=False)
        return out["start_logits"], out["end_logits"]

    @tf.autograph.experimental.do_not_convert
    def answer_pieces(query, pieces, starts, ends, text):
        windows = _windows(query[:, :s["max_query_length"]], pieces, starts, ends, s, *ids)
        start_logits, end_logits = logits_fn(windows["inputs"])
        return _answers(text, windows, start_logits, end_logits, s)

    return answer_pieces


# ---------------------------------------------------------------- windows


def _padded_flat(ragged, fill):
    """(flat values with one ``fill`` appended, row starts): gathers with clipped indices never
    fall outside, even for an empty batch."""
    values = tf.concat([ragged.flat_values, tf.constant([fill], ragged.flat_values.dtype)], axis=0)
    return values, ragged.row_starts()


def _windows(query, pieces, starts, ends, s, cls_id, sep_id, pad_id) -> dict:
    """Every window of every example, flat over the batch, in example then doc-span order."""
    seq = s["seq_length"]
    batch = query.nrows()
    query_length = query.row_lengths()
    num_tokens = pieces.row_lengths()
    max_doc = seq - query_length - 3
    step = tf.minimum(max_doc, s["doc_stride"])
    # run_squad.py: spans start at 0, step, 2 step, ... until one reaches the end of the context.
    num_windows = tf.where(num_tokens == 0, tf.zeros_like(num_tokens),
                           tf.where(num_tokens <= max_doc, tf.ones_like(num_tokens),
                                    (num_tokens - max_doc + step - 1) // step + 1))
    example = tf.repeat(tf.range(batch), num_windows)                     # [T]
    index = tf.ragged.range(num_windows).flat_values                      # window index in example
    span_start = index * tf.gather(step, example)
    span_length = tf.minimum(tf.gather(num_tokens, example) - span_start, tf.gather(max_doc, example))

    p = tf.range(seq, dtype=tf.int64)[tf.newaxis]                          # [1, seq]
    q_len = tf.gather(query_length, example)[:, tf.newaxis]
    context_start = q_len + 2
    length = span_length[:, tf.newaxis]
    context_end = context_start + length                                  # the last [SEP]
    is_query = (p >= 1) & (p <= q_len)
    is_context = (p >= context_start) & (p < context_end)

    q_values, q_rows = _padded_flat(query, pad_id)
    q_index = tf.gather(q_rows, example)[:, tf.newaxis] + p - 1
    q_tokens = tf.gather(q_values, tf.where(is_query, q_index, tf.size(q_values, tf.int64) - 1))
    position = span_start[:, tf.newaxis] + p - context_start              # context token index
    c_values, c_rows = _padded_flat(pieces, pad_id)
    c_index = tf.where(is_context, tf.gather(c_rows, example)[:, tf.newaxis] + position,
                       tf.size(c_values, tf.int64) - 1)
    c_tokens = tf.gather(c_values, c_index)
    s_values, _ = _padded_flat(starts, -1)
    e_values, _ = _padded_flat(ends, -1)
    char_start = tf.where(is_context, tf.gather(s_values, c_index), -1)
    char_end = tf.where(is_context, tf.gather(e_values, c_index), -1)

    tokens = tf.where(p == 0, cls_id, tf.where(
        is_query, q_tokens, tf.where(
            (p == q_len + 1) | (p == context_end), sep_id, tf.where(is_context, c_tokens, pad_id))))
    input_mask = p <= context_end
    type_ids = (p >= context_start) & (p <= context_end)

    # _check_is_max_context: among the windows of the example that hold a token, the first with
    # the best min(left, right) + 0.01 * length (float64, as Python).
    table_start = tf.RaggedTensor.from_row_lengths(span_start, num_windows).to_tensor(default_value=0)
    table_length = tf.RaggedTensor.from_row_lengths(span_length, num_windows).to_tensor(default_value=0)
    j_start = tf.gather(table_start, example)[:, tf.newaxis, :]            # [T, 1, Kmax]
    j_length = tf.gather(table_length, example)[:, tf.newaxis, :]
    j_end = j_start + j_length - 1
    pos = position[:, :, tf.newaxis]                                      # [T, seq, 1]
    inside = (j_length > 0) & (pos >= j_start) & (pos <= j_end)
    score = (tf.cast(tf.minimum(pos - j_start, j_end - pos), tf.float64)
             + tf.constant(0.01, tf.float64) * tf.cast(j_length, tf.float64))
    score = tf.where(inside, score, tf.constant(-float("inf"), tf.float64))
    best = tf.reduce_max(score, axis=2, keepdims=True)
    j = tf.range(tf.shape(table_start, out_type=tf.int64)[1])
    best_window = tf.reduce_min(tf.where(inside & (score == best), j, tf.int64.max), axis=2)
    is_max_context = is_context & (best_window == index[:, tf.newaxis])

    int32 = lambda x: tf.cast(x, tf.int32)  # noqa: E731
    return {
        "inputs": {"input_word_ids": int32(tokens), "input_mask": int32(input_mask),
                   "input_type_ids": int32(type_ids)},
        "example": example, "num_windows": num_windows, "batch": batch,
        "char_start": char_start, "char_end": char_end, "is_max_context": is_max_context,
    }


# ---------------------------------------------------------------- answers


def _answers(context, windows, start_logits, end_logits, s) -> dict:
    """postprocess_example for every example at once, on flat candidate lists: every window's
    spans (and SQuAD 2.0's null candidates), sorted per example, cut to the n-best, one chosen."""
    cand = _span_candidates(windows, start_logits, end_logits, s)
    null_score = None
    if s["version_2_with_negative"]:
        nulls, null_score = _null_candidates(windows, start_logits, end_logits)
        cand = {key: tf.concat([cand[key], nulls[key]], axis=0) for key in cand}
    cand = _sorted_per_example(cand)
    cand["text"], cand["nbest"] = _nbest(context, cand, windows["batch"], s)
    return _chosen(cand, null_score, windows["batch"], s)


def _span_candidates(windows, start_logits, end_logits, s) -> dict:
    """The spans of every window (flat: their example, start and end logits, character offsets into
    the context, ``null`` False), from its ``n_best_size`` best starts and ends: both ends context
    tokens, the start at its max context, at most ``max_answer_length`` tokens, the text not empty."""
    f64 = tf.float64
    width = tf.shape(start_logits)[1]
    k = tf.minimum(s["n_best_size"], width)
    # _get_best_indexes: top_k puts equal logits in index order, as the stable argsort.
    start_value, start_index = tf.math.top_k(start_logits, k)
    end_value, end_index = tf.math.top_k(end_logits, k)
    at = lambda x, i: tf.gather(x, i, batch_dims=1)  # noqa: E731
    s_char, s_ok = at(windows["char_start"], start_index), at(windows["is_max_context"], start_index)
    e_char, e_first = at(windows["char_end"], end_index), at(windows["char_start"], end_index)
    si, ei = start_index[:, :, tf.newaxis], end_index[:, tf.newaxis, :]
    c_start = s_char[:, :, tf.newaxis] + tf.zeros_like(e_char)[:, tf.newaxis, :]
    c_end = e_char[:, tf.newaxis, :] + tf.zeros_like(s_char)[:, :, tf.newaxis]
    valid = ((s_char >= 0) & s_ok)[:, :, tf.newaxis] & (e_first >= 0)[:, tf.newaxis, :]
    valid &= (ei >= si) & (ei - si + 1 <= s["max_answer_length"]) & (c_end > c_start)  # text not empty
    s_logit = tf.cast(start_value, f64)[:, :, tf.newaxis] + tf.zeros([1, 1, k], f64)
    e_logit = tf.cast(end_value, f64)[:, tf.newaxis, :] + tf.zeros([1, k, 1], f64)
    pair_example = (windows["example"][:, tf.newaxis, tf.newaxis] + tf.zeros_like(si, tf.int64)
                    + tf.zeros_like(ei, tf.int64))

    def flat(x):
        return tf.boolean_mask(tf.reshape(x, [-1]), tf.reshape(valid, [-1]))

    cand = {"example": flat(pair_example), "start_logit": flat(s_logit), "end_logit": flat(e_logit),
            "start": flat(c_start), "end": flat(c_end)}
    cand["null"] = tf.zeros_like(cand["example"], tf.bool)
    return cand


def _null_candidates(windows, start_logits, end_logits):
    """(SQuAD 2.0's null candidate of each example, to come after every span of its example (ties
    keep spans first); its null score: the min over its windows of start[CLS] + end[CLS], +inf
    where it has no window)."""
    f64 = tf.float64
    batch = windows["batch"]
    feature_null = tf.cast(start_logits[:, 0], f64) + tf.cast(end_logits[:, 0], f64)
    null_score = tf.math.unsorted_segment_min(feature_null, windows["example"], batch)
    null_score = tf.where(windows["num_windows"] > 0, null_score, tf.constant(float("inf"), f64))
    null_value = tf.where(windows["num_windows"] > 0, null_score, 0.0)  # no window: 0 + 0
    nulls = {"example": tf.range(batch), "start_logit": null_value, "end_logit": tf.zeros_like(null_value),
             "start": -tf.ones([batch], tf.int64), "end": -tf.ones([batch], tf.int64),
             "null": tf.ones([batch], tf.bool)}
    return nulls, null_score


def _sorted_per_example(cand) -> dict:
    """The candidates with their ``score`` (start + end logit), grouped by example in example order,
    each example's in a stable sort on descending score."""
    score = cand["start_logit"] + cand["end_logit"]
    # By score, then (stably) by example.
    order = tf.argsort(score, direction="DESCENDING", stable=True)
    order = tf.gather(order, tf.argsort(tf.gather(cand["example"], order), stable=True))
    cand = {key: tf.gather(v, order) for key, v in cand.items()}
    cand["score"] = tf.gather(score, order)
    return cand


def _nbest(context, cand, batch, s):
    """(each sorted candidate's text, cut from the original context; whether it is in its example's
    n-best: the first candidate of each distinct (example, text), at most ``n_best_size`` of them,
    and SQuAD 2.0's null candidate)."""
    ex = cand["example"]
    pos = tf.range(tf.size(ex, out_type=tf.int64))
    is_null = cand["null"]
    text = tf.strings.substr(tf.gather(context, ex), tf.where(is_null, 0, tf.cast(cand["start"], tf.int32)),
                             tf.where(is_null, 0, tf.cast(cand["end"] - cand["start"], tf.int32)),
                             unit="UTF8_CHAR")
    key = tf.strings.join([tf.strings.as_string(ex), text], separator=":")
    distinct, text_id = tf.unique(key, out_idx=tf.int64)
    first = tf.math.unsorted_segment_min(pos, text_id, tf.size(distinct, out_type=tf.int64))
    kept = tf.equal(tf.gather(first, text_id), pos)
    before = tf.cumsum(tf.cast(kept, tf.int64), exclusive=True)
    row_first = tf.math.unsorted_segment_min(pos, ex, batch)
    rank = before - tf.gather(before, tf.gather(row_first, ex))
    nbest = kept & (rank < s["n_best_size"])
    if s["version_2_with_negative"]:
        nbest |= is_null  # appended to the n-best when it was not among them
    return text, nbest


def _chosen(cand, null_score, batch, s) -> dict:
    """ANSWER_KEYS per example from its sorted candidates and n-best: the best span, or (SQuAD 2.0)
    the null answer when ``null_score`` - the best span's score > ``null_score_diff_threshold``; its
    probability a softmax over the n-best scores."""
    ex, score, nbest, is_null = cand["example"], cand["score"], cand["nbest"], cand["null"]
    size = tf.size(ex, out_type=tf.int64)
    pos = tf.range(size)
    inf = tf.constant(float("inf"), tf.float64)
    top = tf.math.unsorted_segment_max(tf.where(nbest, score, -inf), ex, batch)
    exp = tf.where(nbest, tf.exp(score - tf.gather(top, ex)), 0.0)
    total = tf.math.unsorted_segment_sum(exp, ex, batch)

    def first_where(mask):
        return tf.math.unsorted_segment_min(tf.where(mask, pos, size), ex, batch)

    best_span = first_where(nbest & ~is_null)
    has_span = best_span < size

    def pick(values, index, fill):  # values[index], ``fill`` where index is past the end
        padded = tf.concat([values, tf.constant([fill], values.dtype)], axis=0)
        return tf.gather(padded, tf.minimum(index, size))

    if s["version_2_with_negative"]:
        null_pos = first_where(is_null)
        diff = tf.where(has_span, null_score - pick(cand["start_logit"], best_span, 0.0)
                        - pick(cand["end_logit"], best_span, 0.0), inf)
        final = tf.where(diff > s["null_score_diff_threshold"], null_pos, best_span)
        null_score_diff = tf.cast(diff, tf.float32)
    else:
        final = best_span  # past the end where there is no span: the empty answer
        null_score_diff = tf.fill([batch], float("nan"))
    probability = tf.math.divide_no_nan(pick(exp, final, 0.0), total)
    probability = tf.where(total > 0, probability, 1.0)  # only the empty answer: softmax of one
    chosen_null = pick(is_null, final, True)
    return {
        "answer_text": tf.where(chosen_null, "", pick(cand["text"], final, "")),
        "answer_start": tf.where(chosen_null, -1, tf.cast(pick(cand["start"], final, -1), tf.int32)),
        "answer_end": tf.where(chosen_null, -1, tf.cast(pick(cand["end"], final, -1), tf.int32)),
        "score": tf.cast(probability, tf.float32),
        "null_score_diff": null_score_diff,
    }
