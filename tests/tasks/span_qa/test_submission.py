"""kbert.tasks.span_qa.submission: SQuAD's prediction files written and read back with json, as
evaluate-v1.1.py / -v2.0.py read them (non-ASCII answers as they are, the empty answer of 2.0)."""

import json

from kbert.tasks.span_qa.postprocess import NbestAnswer, SquadPrediction
from kbert.tasks.span_qa.submission import write_squad


def _prediction(text, start, score_diff=None):
    nbest = [NbestAnswer(text, start, start + len(text), 2.5, 1.25, 0.75), NbestAnswer("", -1, -1, 0.5, 0.25, 0.25)]
    return SquadPrediction(text, start, start + len(text), 0.75, 2.5, 1.25, nbest, score_diff=score_diff)


def test_v1_writes_predictions_and_nbest(tmp_path):
    predictions = {"q1": _prediction("東京", 4), "q2": _prediction("Zürich \"see\"", 0)}
    paths = write_squad(tmp_path, predictions, version_2_with_negative=False)
    assert [p.name for p in paths] == ["predictions.json", "nbest_predictions.json"]
    assert not (tmp_path / "null_odds.json").exists()
    assert json.loads(paths[0].read_text(encoding="utf-8")) == {"q1": "東京", "q2": "Zürich \"see\""}
    assert "東京" in paths[0].read_text(encoding="utf-8")  # not \u escapes
    nbest = json.loads(paths[1].read_text(encoding="utf-8"))
    assert list(nbest) == ["q1", "q2"]
    assert nbest["q1"] == [
        {"text": "東京", "start_char": 4, "end_char": 6, "start_logit": 2.5, "end_logit": 1.25, "probability": 0.75},
        {"text": "", "start_char": -1, "end_char": -1, "start_logit": 0.5, "end_logit": 0.25, "probability": 0.25}]


def test_v2_adds_null_odds(tmp_path):
    predictions = {"q1": _prediction("", -1, score_diff=1.5), "q2": _prediction("x", 0, score_diff=-2.0)}
    paths = write_squad(tmp_path, predictions, version_2_with_negative=True)
    assert [p.name for p in paths] == ["predictions.json", "nbest_predictions.json", "null_odds.json"]
    assert json.loads(paths[0].read_text(encoding="utf-8")) == {"q1": "", "q2": "x"}
    assert json.loads(paths[2].read_text(encoding="utf-8")) == {"q1": 1.5, "q2": -2.0}
