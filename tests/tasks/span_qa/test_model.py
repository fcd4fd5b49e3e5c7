"""SpanQuestionAnswerer end to end on hand-checked examples: windows with doc stride, answers
recovered from the original context through offsets (accents, CJK), training, SQuAD 2.0, reload."""

import keras
import numpy as np
import pytest

from kbert.tasks import SpanQuestionAnswerer, load_task_model
from kbert.tasks.span_qa.postprocess import postprocess_example

CONTEXT = ("Die Stadt Zürich liegt am Zürichsee, nicht am Genfersee. 東京は日本の首都です. "
           "The Eiffel Tower stands in Paris, the capital of France, near the river Seine.")
QUESTIONS = ["Which lake is Zürich on?", "What is the capital of Japan?", "Which river flows near the tower?"]
ANSWERS = ["Zürichsee", "東京", "Seine"]


def spans():
    return [(CONTEXT.index(a), CONTEXT.index(a) + len(a)) for a in ANSWERS]


def test_windows_point_at_the_answer_and_offsets_recover_it(tiny_model_dir):
    model = SpanQuestionAnswerer.from_model_dir(tiny_model_dir, seq_length=32, doc_stride=8, max_query_length=12)
    windows = model.windows(QUESTIONS, [CONTEXT] * 3, spans())
    for n, answer in enumerate(ANSWERS):
        mine = [w for i, w in windows if i == n]
        assert len(mine) > 2  # the context needs several 32-token windows
        hits = [w for w in mine if w.start_position != 0]
        assert hits, answer
        for w in hits:
            assert CONTEXT[w.offsets[w.start_position, 0]:w.offsets[w.end_position, 1]] == answer
            assert w.tokens[0] == 101 and w.segment_ids[w.start_position] == 1
        for w in mine:
            if w not in hits:
                assert w.end_position == 0
        # One-hot logits at the labelled positions: post-processing gives back the original text
        # (ü and the CJK characters included) from the window where the answer has most context.
        starts = [np.where(np.arange(32) == w.start_position, 10.0, 0.0) for w in mine]
        ends = [np.where(np.arange(32) == w.end_position, 10.0, 0.0) for w in mine]
        prediction = postprocess_example(CONTEXT, mine, starts, ends)
        assert prediction.text == answer
        assert CONTEXT[prediction.start_char:prediction.end_char] == answer


@pytest.mark.slow
def test_training_memorises_the_examples_and_answers_from_raw_strings(tiny_model_dir, tmp_path):
    keras.utils.set_random_seed(0)  # before the head is made: its first weights decide what 50 epochs reach
    model = SpanQuestionAnswerer.from_model_dir(tiny_model_dir, seq_length=64, doc_stride=24, max_query_length=16)
    ds = model.dataset(QUESTIONS, [CONTEXT] * 3, spans(), batch_size=16)
    model.compile(keras.optimizers.Adam(1e-3))
    losses = model.fit(ds, epochs=50, verbose=0, shuffle=False).history["loss"]
    assert losses[-1] < 0.15 * losses[0], losses
    predictions = model.answer(QUESTIONS, [CONTEXT] * 3)
    assert [p.text for p in predictions] == ANSWERS
    assert all(p.nbest[0].text == p.text and 0 < p.probability <= 1 for p in predictions)

    model.save_model_dir(tmp_path / "qa")
    reloaded = load_task_model(tmp_path / "qa")
    assert (reloaded.seq_length, reloaded.doc_stride, reloaded.max_query_length) == (64, 24, 16)
    again = reloaded.answer(QUESTIONS, [CONTEXT] * 3)
    assert [(p.text, p.start_logit, p.end_logit) for p in again] == \
        [(p.text, p.start_logit, p.end_logit) for p in predictions]


def test_squad_v2_labels_and_null_scores(tiny_model_dir):
    model = SpanQuestionAnswerer.from_model_dir(tiny_model_dir, seq_length=32, doc_stride=8, max_query_length=12,
                                                version_2_with_negative=True)
    windows = model.windows(["Who built the tower?"], [CONTEXT], [None], is_impossible=[True])
    assert windows and all(w.start_position == 0 and w.end_position == 0 for _, w in windows)
    prediction = model.answer(["Who built the tower?"], [CONTEXT])[0]
    assert prediction.null_score is not None and prediction.score_diff is not None
    # The threshold decides between the best span and the null answer.
    assert model.answer(["Who built the tower?"], [CONTEXT], null_score_diff_threshold=1e9)[0].text != ""
    assert model.answer(["Who built the tower?"], [CONTEXT], null_score_diff_threshold=-1e9)[0].text == ""
    assert model.answer(["Who?"], [""])[0].text == ""  # no context tokens: no window, empty answer


def test_padding_positions_never_win(tiny_model_dir):
    model = SpanQuestionAnswerer.from_model_dir(tiny_model_dir, seq_length=64, max_query_length=16,
                                                dynamic_length=False)
    inputs, _ = model.window_arrays(model.windows(["short?"], ["A short context."]))
    out = model(inputs)
    mask = inputs["input_mask"][0].astype(bool)
    assert out["start_logits"].shape == (1, 64) and not mask.all()
    assert (out["start_logits"].numpy()[0][~mask] == -10000.0).all()
    with pytest.raises(ValueError, match="questions but"):
        model.windows(["a", "b"], ["c"])


# ---------------------------------------------------------------- which answers train (no model)
