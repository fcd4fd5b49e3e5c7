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


@pytest.mark.slow
def test_repeated_predictions_do_not_retrace(tiny_model_dir):
    """Each evaluation of a fine-tuning run predicts again: the model's traced step is reused, so
    TensorFlow's "triggered tf.function retracing" warning never comes (it did after a few epochs).

    TensorFlow counts traces per Python function it wraps, across every ``tf.function`` made of it:
    other models that predicted earlier in the same process (other tests, or a user's notebook) must
    not count against this one, so the test first has a few other models trace their own steps."""
    import logging

    for _ in range(4):  # each a first trace of another model's step, as earlier tests leave behind
        SpanQuestionAnswerer.from_model_dir(tiny_model_dir, seq_length=32, doc_stride=8,
                                            max_query_length=12).answer(QUESTIONS[:1], [CONTEXT])

    class Records(logging.Handler):
        def __init__(self):
            super().__init__(logging.WARNING)
            self.messages = []

        def emit(self, record):
            self.messages.append(record.getMessage())

    records = Records()
    logger = logging.getLogger("tensorflow")  # TensorFlow's logger does not propagate to the root
    logger.addHandler(records)
    try:
        model = SpanQuestionAnswerer.from_model_dir(tiny_model_dir, seq_length=32, doc_stride=8, max_query_length=12)
        for _ in range(6):  # six "epochs" of evaluation (TensorFlow warns at 5 traces in its last 10 calls)
            model.answer(QUESTIONS, [CONTEXT] * 3)
    finally:
        logger.removeHandler(records)
    assert not [m for m in records.messages if "retracing" in m], records.messages
    # and, whatever TensorFlow chose to log, this model's step was traced once for all six calls
    from kbert.tasks.core.inference_step import inference_step
    from kbert.tasks.span_qa.model import _window_logits

    assert inference_step(model, _window_logits).experimental_get_tracing_count() == 1


# ---------------------------------------------------------------- which answers train (no model)

def _qa_file(path, qas, version, context="Die Stadt Zürich liegt am Zürichsee. 東京は日本の首都です。"):
    import json

    root = {"version": version, "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}
    path.write_text(json.dumps(root, ensure_ascii=False), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("task, version", [("squad/v1.1", "1.1"), ("squad/v2.0", "v2.0"), ("jglue/jsquad", "v1.3"),
                                           ("korquad/v1.0", "KorQuAD_v1.0_train"), ("cmrc2018", "v1.0")])
def test_every_span_qa_task_trains_on_the_first_placed_answer_and_names_the_rest(tmp_path, task, version):
    """One reader and one rule for every span-QA task: a question trains on its first answer whose offset
    holds (or is at most 2 characters off); one with none is left out of training and named (log line
    and summary), never an error for the file; evaluation keeps every question and answer text."""
    from kbert.data.squad import training_span
    from kbert.tasks.core.options import FinetuneOptions
    from kbert.tasks.core.registry import get_task

    context = "Die Stadt Zürich liegt am Zürichsee. 東京は日本の首都です。"
    zurich, tokyo = context.index("Zürichsee"), context.index("東京")
    v2 = {"is_impossible": False} if task != "squad/v1.1" else {}
    qas = [
        {"id": "holds", "question": "Welcher See?", "answers": [{"text": "Zürichsee", "answer_start": zurich}], **v2},
        {"id": "second", "question": "首都は?", "answers": [{"text": "日本の首都は東京", "answer_start": -1},
                                                             {"text": "東京", "answer_start": tokyo}], **v2},
        {"id": "near", "question": "首都は?", "answers": [{"text": "東京", "answer_start": tokyo + 2}], **v2},
        {"id": "none", "question": "Welcher See?", "answers": [{"text": "Zürichsee", "answer_start": zurich + 3},
                                                               {"text": "der Zürichsee", "answer_start": -1}], **v2},
    ]
    if task == "squad/v2.0":
        qas.append({"id": "no answer", "question": "Welcher Fluss?", "answers": [], "is_impossible": True})
    train = _qa_file(tmp_path / "train.json", qas, version)
    dev = _qa_file(tmp_path / "dev.json", [{**qa, "id": f"dev-{qa['id']}"} for qa in qas], version)
    named = get_task(task)
    recipe = named.task_type.recipe(named, FinetuneOptions(task=task, init="unused", model_dir="unused",
                                                           train_file=train, eval_file=dev))
    spans = {e["id"]: training_span(e) for e in recipe.train}
    expected = {"holds": (zurich, zurich + 9), "second": (tokyo, tokyo + 2), "near": (tokyo, tokyo + 2)}
    if task == "squad/v2.0":
        expected["no answer"] = None
    assert spans == expected
    assert recipe.summary()["train_left_out"] == 1 and recipe.summary()["train_left_out_ids"] == ["none"]
    assert recipe.data_notes == ("1 train questions left out (none of their answers is a span of the context: "
                                 "answer_start -1 or off its text): none",)
    assert [e["id"] for e in recipe.dev] == [f"dev-{qa['id']}" for qa in qas]
    assert [[a["text"] for a in e["answers"]] for e in recipe.dev] == [[a["text"] for a in qa["answers"]] for qa in qas]
    # a training file none of whose questions can be placed is refused, naming the file and a question
    nothing = _qa_file(tmp_path / "nothing.json", [qas[3]], version)
    with pytest.raises(ValueError, match=r"nothing\.json: none of its 1 training questions .*question id 'none'"):
        named.task_type.recipe(named, FinetuneOptions(task=task, init="unused", model_dir="unused",
                                                      train_file=nothing, eval_file=dev))
