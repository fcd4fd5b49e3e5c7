"""SQuAD reader on the real v1.1 dev file, a v2.0 fixture, and malformed files."""

import json

import pytest

from conftest import SHARED
from kbert.data.squad import read_squad
from kbert.errors import DataError


def test_dev_v11_counts_and_first_question():
    data = read_squad(SHARED / "squad" / "dev-v1.1.json")
    assert len(data.examples) == 10570
    assert data.meta["articles"] == 48 and data.meta["paragraphs"] == 2067
    assert data.meta["version"] == "1.1" and not data.meta["version_2_with_negative"]
    assert sum(len(e["answers"]) for e in data.examples) == 34726
    first = data.examples[0]
    assert first["id"] == "56be4db0acb8001400a502ec"
    assert first["title"] == "Super_Bowl_50"
    assert first["question"] == "Which NFL team represented the AFC at Super Bowl 50?"
    assert first["answers"] == [{"text": "Denver Broncos", "answer_start": 177}] * 3
    assert first["context"][177:191] == "Denver Broncos"
    assert not first["is_impossible"] and first["plausible_answers"] == []
    assert len({e["id"] for e in data.examples}) == 10570


def _squad2():
    context = "Kyoto — 京都 — was the capital of Japan until 1869."
    return {"version": "v2.0", "data": [{"title": "Kyoto", "paragraphs": [{"context": context, "qas": [
        {"id": "a", "question": "Until when?", "is_impossible": False,
         "answers": [{"text": "1869", "answer_start": context.index("1869")}]},
        {"id": "b", "question": "Capital of France?", "is_impossible": True, "answers": [],
         "plausible_answers": [{"text": "京都", "answer_start": 8}]},
    ]}]}]}


def test_v20_is_impossible_and_plausible(tmp_path):
    path = tmp_path / "train-v2.0.json"
    path.write_text(json.dumps(_squad2(), ensure_ascii=False), encoding="utf-8")
    data = read_squad(path)
    assert data.meta["version_2_with_negative"]
    a, b = data.examples
    assert a["answers"] == [{"text": "1869", "answer_start": 44}] and not a["is_impossible"]
    assert b["is_impossible"] and b["answers"] == []
    assert b["plausible_answers"] == [{"text": "京都", "answer_start": 8}]


def _bad(tmp_path, mutate):
    doc = _squad2()
    mutate(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(DataError) as info:
        read_squad(path)
    assert str(path) in str(info.value)
    return str(info.value)


def test_misaligned_answer_names_question(tmp_path):
    def shift(doc):
        doc["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] = 45
    message = _bad(tmp_path, shift)
    assert "question id 'a'" in message and "answers[0].answer_start" in message
    assert "got 45" in message and "'1869'" in message and "'869.'" in message


@pytest.mark.parametrize("mutate,expect", [
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][1]["plausible_answers"][0].update(answer_start=3),
     "question id 'b'.*plausible_answers\\[0\\].answer_start"),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][0].update(answers=[]),
     "question id 'a'.*field 'answers'.*at least one answer"),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][1].update(answers=[{"text": "K", "answer_start": 0}]),
     "question id 'b'.*no answers"),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][0].update(id="b"),
     "question id 'b'.*a unique id"),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][0].pop("question"),
     "question id 'a'.*field 'question'.*missing"),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][0]["answers"][0].update(answer_start="44"),
     "field 'answer_start': got '44'; expected a JSON integer"),
    (lambda d: d["data"][0]["paragraphs"][0].pop("context"), r"data\[0\].paragraphs\[0\]: field 'context'"),
    (lambda d: d.update(data=[]), "at least one question"),
])
def test_malformed_fields(tmp_path, mutate, expect):
    import re
    assert re.search(expect, _bad(tmp_path, mutate))


def test_broken_json_names_line(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"version": "1.1",\n "data": [\n  {"title": "x",, }\n]}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"broken.json, line 3: field 'column \d+'.*valid JSON"):
        read_squad(path)
    path.write_bytes(b'{"version": "1.1",\n "data": ["\xc3\x28"]}')
    with pytest.raises(DataError, match="line 2.*UTF-8"):
        read_squad(path)
