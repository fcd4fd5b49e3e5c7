"""SQuAD reader on the real v1.1 dev file, a v2.0 fixture, and malformed files; a sample of the real
file with bytes flipped and cut by hypothesis either reads (each question an example with all its
answers, each answer placed at its text or marked unplaced) or raises a DataError naming file and line."""

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import SHARED
from fixtures.file_mutations import check_named
from kbert.data.squad import left_out_of_training, read_squad, training_span
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
    # several answers per question (up to 6, some identical), every offset on its text
    assert max(len(e["answers"]) for e in data.examples) == 6
    assert data.meta["unplaced_answers"] == 0 and data.meta["repaired_offsets"] == []


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


def _read(tmp_path, doc, name="file.json", bom=False):
    path = tmp_path / name
    path.write_bytes(("\ufeff" if bom else "").encode("utf-8") + json.dumps(doc, ensure_ascii=False).encode("utf-8"))
    return read_squad(path)


def test_offsets_off_their_text_keep_the_text_and_place_what_they_can(tmp_path):
    """The official scorers read answer texts only: an offset near its text (CMRC 2018's trial set has
    some one off) is moved onto it, a farther one, -1 (CMRC 2018's dev set marks free answers so), a
    missing or non-integer one becomes -1 and the text is kept; training takes the first placed answer."""
    doc = _squad2()
    qa = doc["data"][0]["paragraphs"][0]["qas"][0]
    context = doc["data"][0]["paragraphs"][0]["context"]
    qa["answers"] = [{"text": "1869", "answer_start": 46}, {"text": "until 1869", "answer_start": 0},
                     {"text": "in 1869, finally", "answer_start": -1}, {"text": "Japan", "answer_start": "32"},
                     {"text": "1869"}, {"text": " ", "answer_start": 5}]
    data = _read(tmp_path, doc)
    a = data.examples[0]
    assert [x["text"] for x in a["answers"]] == [x["text"] for x in qa["answers"]]
    assert [x["answer_start"] for x in a["answers"]] == [44, -1, -1, -1, -1, -1]
    assert context[44:48] == "1869" and data.meta["repaired_offsets"] == ["question id 'a' (data[0].paragraphs[0].qas[0])"]
    assert data.meta["unplaced_answers"] == 5 and data.meta["unplaced_questions"] == []
    assert training_span(a) == (44, 48)
    # the first answer unplaced: training takes the next one that holds
    qa["answers"] = [{"text": "in 1869, finally", "answer_start": -1}, {"text": "Japan", "answer_start": 32}]
    a = _read(tmp_path, doc).examples[0]
    assert training_span(a) == (32, 37) and context[32:37] == "Japan"
    # none placed: kept for evaluation, left out of training (and named in the file's meta)
    qa["answers"] = [{"text": "in 1869, finally", "answer_start": -1}, {"text": "1869", "answer_start": 40}]
    data = _read(tmp_path, doc)
    assert training_span(data.examples[0]) is None and data.meta["unplaced_questions"] == ["a"]
    kept, left_out = left_out_of_training(data.examples)
    assert [e["id"] for e in kept] == ["b"] and left_out == ["a"]  # b: unanswerable, trained as no answer


def test_what_the_v2_scorer_reads_is_kept(tmp_path):
    """evaluate-v2.0.py reads a question's answers, never is_impossible: no answers in a v2.0 file is
    "no answer"; is_impossible with answers keeps them (training follows is_impossible, as run_squad.py)."""
    doc = _squad2()
    qas = doc["data"][0]["paragraphs"][0]["qas"]
    qas[0]["answers"] = []
    qas[1]["answers"] = [{"text": "Kyoto", "answer_start": 0}]
    a, b = _read(tmp_path, doc).examples
    assert a["answers"] == [] and not a["is_impossible"] and training_span(a) is None
    assert b["answers"] == [{"text": "Kyoto", "answer_start": 0}] and b["is_impossible"] and training_span(b) is None
    assert left_out_of_training([a, b])[1] == ["a"]


def test_bom_and_contexts_with_leading_white_space(tmp_path):
    """A UTF-8 BOM before the JSON is dropped; a context that starts with spaces (SQuAD has some) is
    kept as written, so that offsets counted from them hold."""
    context = "  Tokyo is the capital."
    doc = {"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": [
        {"id": "q", "question": "Capital?", "answers": [{"text": "Tokyo", "answer_start": 2}]}]}]}]}
    e = _read(tmp_path, doc, bom=True).examples[0]
    assert e["context"] == context and e["answers"] == [{"text": "Tokyo", "answer_start": 2}]


def _bad(tmp_path, mutate, doc=None):
    doc = doc or _squad2()
    mutate(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(DataError) as info:
        read_squad(path)
    assert str(path) in str(info.value)
    return str(info.value)


def _squad1():
    doc = _squad2()
    doc["version"] = "1.1"
    qas = doc["data"][0]["paragraphs"][0]["qas"]
    qas[1] = {"id": "b", "question": "Capital?", "answers": [{"text": "Japan", "answer_start": 33}]}
    del qas[0]["is_impossible"]
    return doc


@pytest.mark.parametrize("mutate,expect,doc", [
    # what the official scorers refuse too: their maximum over no answers fails in v1 files
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][0].update(answers=[]),
     "question id 'a'.*field 'answers'.*at least one answer", _squad1),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][0].pop("answers"), "question id 'a'.*field 'answers'", _squad2),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][0]["answers"][0].pop("text"),
     "question id 'a'.*field 'answers\\[0\\].text'", _squad2),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][1]["plausible_answers"][0].update(text=7),
     "question id 'b'.*field 'plausible_answers\\[0\\].text': got 7", _squad2),
    # what kbert's outputs cannot represent: predictions are keyed by id
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][0].update(id="b"),
     "question id 'b'.*a unique id", _squad2),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][0].pop("question"),
     "question id 'a'.*field 'question'.*missing", _squad2),
    (lambda d: d["data"][0]["paragraphs"][0].pop("context"), r"data\[0\].paragraphs\[0\]: field 'context'", _squad2),
    (lambda d: d.update(data=[]), "at least one question", _squad2),
])
def test_malformed_fields(tmp_path, mutate, expect, doc):
    import re
    assert re.search(expect, _bad(tmp_path, mutate, doc()))


def test_broken_json_names_line(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"version": "1.1",\n "data": [\n  {"title": "x",, }\n]}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"broken.json, line 3: field 'column \d+'.*valid JSON"):
        read_squad(path)
    path.write_bytes(b'{"version": "1.1",\n "data": ["\xc3\x28"]}')
    with pytest.raises(DataError, match="line 2.*UTF-8"):
        read_squad(path)


# -- mutated files (hypothesis) ------------------------------------------------------------------
def _squad_sample():
    doc = json.loads((SHARED / "squad" / "dev-v1.1.json").read_text(encoding="utf-8"))
    return {"version": "1.1", "data": [{"title": doc["data"][0]["title"],
                                        "paragraphs": doc["data"][0]["paragraphs"][:2]}]}


SQUAD_SAMPLE = json.dumps(_squad_sample(), indent=1).encode("utf-8")
# The first byte of the first answer's text: a space there leaves valid JSON whose answer is no
# longer the text at its answer_start.
_FIRST_ANSWER = SQUAD_SAMPLE.index(b'"text": "') + len(b'"text": "')


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(cut=0, flips=[(_FIRST_ANSWER, 32)], truncate=False)
@given(cut=st.integers(0, len(SQUAD_SAMPLE)), flips=st.lists(st.tuples(st.integers(0, len(SQUAD_SAMPLE) - 1),
                                                                      st.integers(0, 255)), max_size=3),
       truncate=st.booleans())
def test_mutated_squad_json_reads_or_names_file_and_line(tmp_path, cut, flips, truncate):
    from kbert.data.squad import read_squad

    data = bytearray(SQUAD_SAMPLE)
    for where, byte in flips:
        data[where] = byte
    if truncate:
        data = data[:cut]
    path = tmp_path / "dev.json"
    try:
        result = read_squad(path, data=bytes(data))
    except DataError as e:
        check_named(e, path)
        return
    # accepted: the file is JSON by Python's own parser, every question of it is an example with
    # all its answers, and each answer is either at its text in the context (at the file's
    # answer_start or at most OFFSET_TOLERANCE off) or marked unplaced (-1: kept for the official
    # scorer, left out of training) because the file's offset points at no such text
    from kbert.data.squad import OFFSET_TOLERANCE, UNPLACED

    parsed = json.loads(bytes(data).decode("utf-8"))
    questions = [(paragraph["context"], q) for article in parsed["data"] for paragraph in article["paragraphs"]
                 for q in paragraph["qas"]]
    assert [e["id"] for e in result.examples] == [q["id"] for _, q in questions]
    for example, (context, question) in zip(result.examples, questions):
        assert example["context"] == context
        assert [a["text"] for a in example["answers"]] == [a["text"] for a in question["answers"]], example
        for answer, given in zip(example["answers"], question["answers"]):
            start, text, offset = answer["answer_start"], answer["text"], given.get("answer_start")
            if start == UNPLACED:
                near = [offset + d for d in range(-OFFSET_TOLERANCE, OFFSET_TOLERANCE + 1)
                        if isinstance(offset, int) and not isinstance(offset, bool) and offset + d >= 0
                        and context[offset + d:offset + d + len(text)] == text]
                assert not near or not text.strip(), (example, given)
            else:
                assert context[start:start + len(text)] == text and abs(start - offset) <= OFFSET_TOLERANCE, example


def test_deeply_nested_json_is_a_data_error():
    # Found by the fuzz tier (tests/fuzz/test_task_files.py): a value nested 100,000 deep made json.loads
    # raise RecursionError instead of a DataError naming the file.
    data = b'{"version": "1.1", "data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with pytest.raises(DataError, match=r"^dev.json \(whole file\): .*nested at most 100 levels") as error:
        read_squad("dev.json", data=data)
    assert "\n" not in str(error.value)
