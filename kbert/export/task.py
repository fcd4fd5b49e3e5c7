"""Task SavedModels for TF Serving: raw strings in, ready answers out.

``python -m kbert.export task MODEL_DIR saved_models/NAME/VERSION`` for any fine-tuned model
directory (kbert.tasks). Signatures:

  serving_default  strings -> answers (see SIGNATURES below for each task type)
  serving_ids      input_word_ids, input_mask, input_type_ids (int32 [batch, seq]) -> the same
                   answers where they do not need the text (for clients that tokenize themselves)

Every export also gets ``assets.extra/tf_serving_warmup_requests`` (so the first real request is
not slow), keeps the ``vocab_file`` asset and a ``do_lower_case`` variable, and uses only
TensorFlow core and tensorflow-text ops.
"""

from __future__ import annotations

import pathlib

import tensorflow as tf

from kbert import compat
from kbert.export.serving import write_warmup_requests

IDS_SPEC = {
    name: tf.TensorSpec([None, None], tf.int32, name=name)
    for name in ("input_word_ids", "input_mask", "input_type_ids")
}
TEXT = tf.TensorSpec([None], tf.string)

# What each task type's serving_default takes and returns (README documents the same).
SIGNATURES = {
    "text_classifier": "text | text_a, text_b -> probabilities [b, C], class_ids [b], labels [b], logits [b, C]",
    "text_regressor": "text | text_a, text_b -> scores [b]",
    "multi_label_classifier": "text | text_a, text_b -> probabilities [b, L], predictions [b, L] (0/1)",
    "multiple_choice": "context [b], choices [b, N] -> probabilities [b, N], choice_ids [b], logits [b, N]",
    "token_tagger": "text -> words, word_start, word_end, tags, tag_ids [b, W]; num_words [b]; "
                    "entity_type, entity_text, entity_start, entity_end [b, E]; num_entities [b]",
    "span_qa": "question, context -> answer_text, answer_start, answer_end, score, null_score_diff [b]",
}


def valid_utf8(text):
    """Invalid UTF-8 bytes -> U+FFFD, so that character offsets (and the substrings cut with them)
    are defined for any input; valid text is unchanged. Offsets then refer to this text."""
    return tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)


class _TaskModule(compat.AutoTrackable):
    def __init__(self, model, vocab_file, do_lower_case):
        # The Keras task model itself is not tracked: Keras would add its own default serving
        # function, traced with float inputs, which a string-in model cannot take. Its parts are,
        # which is all the SavedModel's functions capture.
        object.__setattr__(self, "model", model)
        self.encoder = model.encoder
        self.head = model.head
        self.preprocessor = model.preprocessor
        self.vocab_file = tf.saved_model.Asset(str(vocab_file))
        self.do_lower_case = tf.Variable(bool(do_lower_case), trainable=False, name="do_lower_case")


# -- classifiers --------------------------------------------------------------------------------
def _pooled_outputs(model, logits):
    kind = model.task_type
    if kind == "text_regressor":
        return {"scores": tf.squeeze(logits, -1) if logits.shape.rank == 2 else logits}
    if kind == "multi_label_classifier":
        p = tf.sigmoid(logits)
        return {"probabilities": p, "predictions": tf.cast(p > model.threshold, tf.int32)}
    out = {"logits": logits, "probabilities": tf.nn.softmax(logits),
           "class_ids": tf.argmax(logits, axis=-1, output_type=tf.int32)}
    names = model.label_names or [str(i) for i in range(model.num_classes)]
    out["labels"] = tf.gather(tf.constant(names), out["class_ids"])
    return out


def _pooled_signatures(module):
    model = module.model
    names = ["text"] if model.num_segments == 1 else ["text_a", "text_b"]

    @tf.function(input_signature=[{n: tf.TensorSpec([None], tf.string, name=n) for n in names}])
    def serve(inputs):
        segments = inputs["text"] if model.num_segments == 1 else {"text_a": inputs["text_a"], "text_b": inputs["text_b"]}
        logits = model(segments, training=False)
        if model.task_type == "text_regressor":
            logits = logits[:, None]
        return _pooled_outputs(model, logits)

    @tf.function(input_signature=[IDS_SPEC])
    def serve_ids(inputs):
        pooled = model.encode(dict(inputs), training=False)["pooled_output"]
        return _pooled_outputs(model, model.head(pooled, training=False))

    return serve, serve_ids


# -- multiple choice ----------------------------------------------------------------------------
def _choice_outputs(logits):
    return {"logits": logits, "probabilities": tf.nn.softmax(logits),
            "choice_ids": tf.argmax(logits, axis=-1, output_type=tf.int32)}


def _choice_signatures(module):
    model = module.model

    @tf.function(input_signature=[{"context": tf.TensorSpec([None], tf.string, name="context"),
                                    "choices": tf.TensorSpec([None, None], tf.string, name="choices")}])
    def serve(inputs):
        return _choice_outputs(model({"text_a": inputs["context"], "choices": inputs["choices"]}, training=False))

    spec = {n: tf.TensorSpec([None, None, None], tf.int32, name=n) for n in IDS_SPEC}

    @tf.function(input_signature=[spec])
    def serve_ids(inputs):  # [batch, choices, seq] each
        shape = tf.shape(inputs["input_word_ids"])
        flat = {k: tf.reshape(v, [-1, shape[2]]) for k, v in inputs.items()}
        scores = model.head(model.encode(flat, training=False)["pooled_output"], training=False)
        return _choice_outputs(tf.reshape(scores, shape[:2]))

    return serve, serve_ids


# -- token tagging ------------------------------------------------------------------------------
def _iob_entities(tags, word_start, word_end, num_words, text):
    """IOB2 chunking (seqeval's default, lenient: an I- after O or another type starts an
    entity) over [batch, W] tag strings, in the graph; spans are character offsets."""
    parts = tf.strings.split(tags, "-", maxsplit=1).to_tensor(default_value="", shape=[None, None, 2])
    prefix, kind = parts[..., 0], parts[..., 1]
    valid = tf.sequence_mask(num_words, tf.shape(tags)[1])
    inside = valid & (tf.equal(prefix, "B") | tf.equal(prefix, "I"))
    prev_inside = tf.pad(inside[:, :-1], [[0, 0], [1, 0]])
    prev_kind = tf.pad(kind[:, :-1], [[0, 0], [1, 0]])
    starts = inside & (tf.equal(prefix, "B") | ~prev_inside | tf.not_equal(prev_kind, kind))
    # global entity index of every word inside an entity
    entity_of_word = tf.cumsum(tf.cast(tf.reshape(starts, [-1]), tf.int32)) - 1
    flat_inside = tf.reshape(inside, [-1])
    ids = tf.boolean_mask(entity_of_word, flat_inside)
    n = tf.reduce_sum(tf.cast(starts, tf.int32))
    first = tf.math.unsorted_segment_min(tf.boolean_mask(tf.reshape(word_start, [-1]), flat_inside), ids, n)
    last = tf.math.unsorted_segment_max(tf.boolean_mask(tf.reshape(word_end, [-1]), flat_inside), ids, n)
    start_rows = tf.cast(tf.where(starts)[:, 0], tf.int32)
    entity_kind = tf.boolean_mask(kind, starts)
    row_text = tf.gather(text, start_rows)
    entity_text = tf.strings.substr(row_text, first, last - first, unit="UTF8_CHAR")
    batch = tf.shape(tags)[0]
    num_entities = tf.math.bincount(start_rows, minlength=batch, maxlength=batch, dtype=tf.int32)

    def dense(values, default):
        return tf.RaggedTensor.from_value_rowids(values, start_rows, nrows=batch).to_tensor(default_value=default)

    return {"entity_type": dense(entity_kind, ""), "entity_text": dense(entity_text, ""),
            "entity_start": dense(first, -1), "entity_end": dense(last, -1), "num_entities": num_entities}


def _tagger_signatures(module):
    model = module.model
    names = tf.constant(model.label_names)

    @tf.function(input_signature=[{"text": tf.TensorSpec([None], tf.string, name="text")}])
    def serve(inputs):
        text = valid_utf8(inputs["text"])
        _, starts, ends = model.tokenizer.tokenize_with_offsets(text, unit="UTF8_CHAR")
        word_start = tf.cast(tf.reduce_min(starts, axis=2), tf.int32)  # [batch, (words)]
        word_end = tf.cast(tf.reduce_max(ends, axis=2), tf.int32)
        num_words = tf.cast(word_start.row_lengths(), tf.int32)
        packed, _, word_ids = model.features(model.pieces(texts=text))
        token_tags = tf.argmax(model(packed, training=False), axis=-1, output_type=tf.int32)
        batch, width = tf.shape(text)[0], tf.reduce_max(tf.concat([num_words, [0]], 0))
        tag_ids = tf.fill([batch, width], tf.constant(model.fill_label, tf.int32))
        first = word_ids >= 0  # a word's first piece carries its tag
        index = tf.stack([tf.cast(tf.where(first)[:, 0], tf.int32), tf.cast(tf.boolean_mask(word_ids, first), tf.int32)], 1)
        tag_ids = tf.tensor_scatter_nd_update(tag_ids, index, tf.boolean_mask(token_tags, first))
        word_start_d = word_start.to_tensor(default_value=-1, shape=[None, None])[:, :width]
        word_end_d = word_end.to_tensor(default_value=-1, shape=[None, None])[:, :width]
        valid = tf.sequence_mask(num_words, width)
        tags = tf.where(valid, tf.gather(names, tag_ids), "")
        tag_ids = tf.where(valid, tag_ids, -1)
        words = tf.strings.substr(tf.repeat(text[:, None], width, axis=1), tf.maximum(word_start_d, 0),
                                  tf.maximum(word_end_d - word_start_d, 0), unit="UTF8_CHAR")
        out = {"words": tf.where(valid, words, ""), "word_start": word_start_d, "word_end": word_end_d,
               "tags": tags, "tag_ids": tag_ids, "num_words": num_words}
        out.update(_iob_entities(tags, word_start_d, word_end_d, num_words, text))
        return out

    @tf.function(input_signature=[IDS_SPEC])
    def serve_ids(inputs):
        logits = model(dict(inputs), training=False)
        tag_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {"token_tag_ids": tag_ids, "token_tags": tf.gather(names, tag_ids),
                "token_probabilities": tf.nn.softmax(logits)}

    return serve, serve_ids


# -- span QA ------------------------------------------------------------------------------------
def _span_qa_signatures(module):
    from kbert.export.span_qa_graph import build_answer_fn

    model = module.model
    answer = build_answer_fn(model)

    @tf.function(input_signature=[{"question": tf.TensorSpec([None], tf.string, name="question"),
                                   "context": tf.TensorSpec([None], tf.string, name="context")}])
    def serve(inputs):
        return answer(valid_utf8(inputs["question"]), valid_utf8(inputs["context"]))

    @tf.function(input_signature=[IDS_SPEC])
    def serve_ids(inputs):
        return dict(model(dict(inputs), training=False))

    return serve, serve_ids


BUILDERS = {
    "text_classifier": _pooled_signatures,
    "text_regressor": _pooled_signatures,
    "multi_label_classifier": _pooled_signatures,
    "multiple_choice": _choice_signatures,
    "token_tagger": _tagger_signatures,
    "span_qa": _span_qa_signatures,
}


def warmup_inputs(task_type: str, num_segments: int = 1) -> list[dict]:
    """Small representative requests for TF Serving's warm-up (batch 1 and 8)."""
    texts = ["kbert warms up this model.", "A second, longer sentence — with ünïcode and 字 — to warm up."]
    if task_type in ("text_classifier", "text_regressor", "multi_label_classifier"):
        keys = ["text"] if num_segments == 1 else ["text_a", "text_b"]
        return [{k: texts[:1] for k in keys}, {k: (texts * 4)[:8] for k in keys}]
    if task_type == "multiple_choice":
        return [{"context": texts[:1], "choices": [texts]}]
    if task_type == "token_tagger":
        return [{"text": texts[:1]}, {"text": (texts * 4)[:8]}]
    if task_type == "span_qa":
        return [{"question": ["What warms up?"], "context": texts[:1]}]
    raise ValueError(task_type)


def export_task(model_dir, out_dir, warmup: bool = True) -> pathlib.Path:
    from kbert.model_dir import VOCAB_FILE, read_metadata
    from kbert.tasks import load_task_model

    model_dir, out_dir = pathlib.Path(model_dir), pathlib.Path(out_dir)
    model = load_task_model(model_dir)
    module = _TaskModule(model, model_dir / VOCAB_FILE, read_metadata(model_dir)["do_lower_case"])
    serve, serve_ids = BUILDERS[model.task_type](module)
    module.serve, module.serve_ids = serve, serve_ids
    tf.saved_model.save(module, str(out_dir), signatures={
        "serving_default": serve.get_concrete_function(),
        "serving_ids": serve_ids.get_concrete_function(),
    })
    if warmup:
        write_warmup_requests(out_dir, out_dir.parent.name, "serving_default",
                              warmup_inputs(model.task_type, getattr(model, "num_segments", 1)))
    return out_dir
