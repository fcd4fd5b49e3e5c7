"""kbert.tasks.span_qa.graph: SQuAD answers from raw strings in one graph, checked against the
Python path (SpanQuestionAnswerer.windows / postprocess_example / answer) piece by piece and end
to end, then exported (kbert.export.task) and run in a process that imports only tensorflow and
tensorflow_text."""

import json

import numpy as np
import pytest
import tensorflow as tf

from conftest import run_fresh_python
from kbert.tasks.span_qa.graph import _answers, _settings, _windows, build_answer_fn
from kbert.tasks import SpanQuestionAnswerer
from kbert.tasks.span_qa.postprocess import postprocess_example

SPEC = [tf.TensorSpec([None], tf.string)] * 2
# Multi-byte characters (2, 3 and 4 UTF-8 bytes) come before every answer the model can pick.
CONTEXT = ("Zürich 東京 🎉 café. The Eiffel Tower stands in Paris, the capital of France, near the river "
           "Seine. Die Stadt Zürich liegt am Zürichsee, nicht am Genfersee. 東京は日本の首都です. "
           "The tower is the tower of the city, and the city is the city of the tower. "
           "Gustave Eiffel's company designed and built it between 1887 and 1889.")
QUESTIONS = ["Which river flows near the tower?", "Who built the tower?", "", "What is it?",
             "Which lake is Zürich on?", "A question that is much longer than the query limit allows, "
             "so that it is cut to max_query_length pieces?"]
CONTEXTS = [CONTEXT, CONTEXT, CONTEXT, "", "Zürich liegt am Zürichsee 🎉.", CONTEXT]


def _model(tiny_model_dir, **settings):
    model = SpanQuestionAnswerer.from_model_dir(tiny_model_dir, seq_length=64, doc_stride=16, max_query_length=16,
                                                **settings)
    # Random weights, but logits of a few units (not ~0.1) so that the n-best is far from flat.
    kernel = model.head.dense.kernel
    kernel.assign(np.asarray(kernel.numpy()) * 30.0)
    return model


@pytest.fixture(scope="module")
def model(tiny_model_dir):
    return _model(tiny_model_dir)


@pytest.fixture(scope="module")
def model_v2(tiny_model_dir):
    v2 = _model(tiny_model_dir, version_2_with_negative=True)
    # Null threshold halfway between two score diffs: some questions get the null answer, others
    # a span, and none sits on the threshold (where float noise would decide).
    diffs = sorted(p.score_diff for p in v2.answer(QUESTIONS, CONTEXTS) if np.isfinite(p.score_diff))
    v2.null_score_diff_threshold = (diffs[len(diffs) // 2 - 1] + diffs[len(diffs) // 2]) / 2
    return v2


def _graph_windows(model, questions, contexts):
    tokenizer = model.tokenizer
    special = tokenizer.special_token_ids
    query = tokenizer.tokenize_flat(tf.constant(questions, tf.string))[:, :model.max_query_length]
    pieces, starts, ends = (r.merge_dims(1, 2) for r in tokenizer.tokenize_with_offsets(
        tf.constant(contexts, tf.string), unit="UTF8_CHAR"))
    return _windows(query, pieces, starts, ends, _settings(model), special["start_of_sequence_id"],
                    special["end_of_segment_id"], special["padding_id"])


def _compare(graph, python, rtol=1e-5):
    texts = [t.decode("utf-8") for t in graph["answer_text"].numpy()]
    assert texts == [p.text for p in python]
    assert graph["answer_start"].numpy().tolist() == [p.start_char for p in python]
    assert graph["answer_end"].numpy().tolist() == [p.end_char for p in python]
    np.testing.assert_allclose(graph["score"].numpy(), [p.probability for p in python], rtol=rtol, atol=1e-7)
    diffs = [np.nan if p.score_diff is None else p.score_diff for p in python]
    np.testing.assert_allclose(graph["null_score_diff"].numpy(), diffs, rtol=rtol, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("seq_length,max_query_length,doc_stride", [(64, 16, 16), (24, 12, 20), (32, 4, 1)])
def test_windows_equal_build_windows(model, seq_length, max_query_length, doc_stride):
    # (24, 12, 20): doc_stride over the room left for context (run_squad.py then steps by the
    # window length); (32, 4, 1): every token in many windows (max-context bookkeeping).
    qa = SpanQuestionAnswerer(model.encoder, model.vocab, seq_length=seq_length, max_query_length=max_query_length,
                              doc_stride=doc_stride)
    expected = qa.windows(QUESTIONS, CONTEXTS)
    graph = _graph_windows(qa, QUESTIONS, CONTEXTS)
    assert graph["example"].numpy().tolist() == [n for n, _ in expected]
    assert sum(n == 0 for n, _ in expected) > 3 and not any(n == 3 for n, _ in expected)
    inputs, _ = qa.window_arrays(expected)
    for key, value in inputs.items():
        np.testing.assert_array_equal(graph["inputs"][key].numpy(), value, err_msg=key)
    offsets = np.stack([w.offsets for _, w in expected])
    np.testing.assert_array_equal(graph["char_start"].numpy(), offsets[..., 0])
    np.testing.assert_array_equal(graph["char_end"].numpy(), offsets[..., 1])
    np.testing.assert_array_equal(graph["is_max_context"].numpy(), np.stack([w.is_max_context for _, w in expected]))


@pytest.mark.parametrize("v2,n_best_size,max_answer_length,threshold", [
    (False, 20, 30, 0.0), (False, 3, 4, 0.0), (True, 20, 30, 0.0), (True, 2, 5, -3.0), (True, 1, 30, 0.0)])
def test_answers_equal_postprocess_example_on_the_same_logits(model, v2, n_best_size, max_answer_length, threshold):
    # Integer logits: many equal scores, so the stable orderings (top starts/ends, the sort of
    # the candidates, null after spans) must agree; the repeated "the tower"/"the city" give
    # equal texts from different spans (n-best dedup by text).
    settings = {**_settings(model), "version_2_with_negative": v2, "n_best_size": n_best_size,
                "max_answer_length": max_answer_length, "null_score_diff_threshold": threshold}
    expected = model.windows(QUESTIONS, CONTEXTS)
    graph = _graph_windows(model, QUESTIONS, CONTEXTS)
    mask = graph["inputs"]["input_mask"].numpy().astype(bool)
    rng = np.random.default_rng(n_best_size)
    texts = []
    for trial in range(4):
        starts = np.where(mask, rng.integers(-12, 13, mask.shape), -10000).astype(np.float32)
        ends = np.where(mask, rng.integers(-12, 13, mask.shape), -10000).astype(np.float32)
        width = mask.sum(axis=1).max()  # as dynamic_length
        out = _answers(tf.constant(CONTEXTS), graph, tf.constant(starts[:, :width]), tf.constant(ends[:, :width]),
                       settings)
        python = []
        for n, context in enumerate(CONTEXTS):
            rows = [i for i, (m, _) in enumerate(expected) if m == n]
            python.append(postprocess_example(context, [expected[i][1] for i in rows], starts[rows], ends[rows],
                                              **{k: settings[k] for k in ("n_best_size", "max_answer_length",
                                                                          "version_2_with_negative",
                                                                          "null_score_diff_threshold")}))
        _compare(out, python, rtol=1e-6)
        texts += [p.text for p in python]
    assert sum(map(bool, texts)) >= 4  # spans do get through the filters


def test_answer_fn_equals_model_answer(model):
    fn = tf.function(build_answer_fn(model), input_signature=SPEC)
    python = model.answer(QUESTIONS, CONTEXTS)
    graph = fn(tf.constant(QUESTIONS), tf.constant(CONTEXTS))
    _compare(graph, python)
    assert len([n for n, _ in model.windows(QUESTIONS[:1], CONTEXTS[:1])]) > 3
    assert python[3].text == "" and python[3].start_char == -1  # the empty context
    assert python[2].text  # the empty question still gets a span
    # Offsets are code points of the original string, after ü, 東京 and 🎉.
    for p, context in zip(python, CONTEXTS):
        assert context[p.start_char:p.end_char] == p.text if p.text else p.start_char == -1
    assert any(p.start_char > CONTEXT.index("🎉") for p in python)
    assert np.isnan(graph["null_score_diff"].numpy()).all()
    # One example at a time gives the same answers as the batch.
    single = fn(tf.constant(QUESTIONS[4:5]), tf.constant(CONTEXTS[4:5]))
    assert single["answer_text"].numpy()[0] == graph["answer_text"].numpy()[4]
    empty = fn(tf.constant([], tf.string), tf.constant([], tf.string))
    assert all(v.shape == (0,) for v in empty.values())


@pytest.mark.slow
def test_squad_v2_null_answers(model_v2):
    fn = tf.function(build_answer_fn(model_v2), input_signature=SPEC)
    python = model_v2.answer(QUESTIONS, CONTEXTS)
    graph = fn(tf.constant(QUESTIONS), tf.constant(CONTEXTS))
    _compare(graph, python)
    texts = [p.text for p in python]
    assert "" in texts[:3] + texts[4:] and any(texts)  # null answers and spans
    assert python[3].score_diff == np.inf and graph["null_score_diff"].numpy()[3] == np.inf


@pytest.mark.slow
def test_the_task_export_answers_without_kbert(model_v2, tmp_path):
    """kbert.export.task's SavedModel of the model (this graph behind its serving_default) answers as
    the graph does in a process that imports only tensorflow and tensorflow_text."""
    from kbert.export.task import export_task

    model_v2.save_model_dir(tmp_path / "qa")
    path = export_task(tmp_path / "qa", tmp_path / "saved_models" / "qa" / "1", warmup=False)
    expected = build_answer_fn(model_v2)(tf.constant(QUESTIONS), tf.constant(CONTEXTS))
    code = f"""
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the ops)
qa = tf.saved_model.load({str(path)!r})
q, c = tf.constant({QUESTIONS!r}), tf.constant({CONTEXTS!r})
out = qa.signatures["serving_default"](question=q, context=c)
print(json.dumps({{"kbert": any(m.split(".")[0] == "kbert" for m in sys.modules),
                  "text": [t.decode("utf-8") for t in out["answer_text"].numpy()],
                  "start": out["answer_start"].numpy().tolist(), "end": out["answer_end"].numpy().tolist(),
                  "score": out["score"].numpy().tolist(), "diff": [str(x) for x in out["null_score_diff"].numpy()]}}))
"""
    result = json.loads(run_fresh_python(code).strip().splitlines()[-1])
    assert result["kbert"] is False
    assert result["text"] == [t.decode("utf-8") for t in expected["answer_text"].numpy()]
    assert result["start"] == expected["answer_start"].numpy().tolist()
    assert result["end"] == expected["answer_end"].numpy().tolist()
    np.testing.assert_allclose(result["score"], expected["score"].numpy(), rtol=1e-5)
    np.testing.assert_allclose([float(x) for x in result["diff"]], expected["null_score_diff"].numpy(),
                               rtol=1e-5, atol=1e-5)
