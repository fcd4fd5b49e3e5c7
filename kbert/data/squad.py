"""SQuAD v1.1 / v2.0 JSON files (and the files of JSQuAD, KorQuAD 1.0 and CMRC 2018, in the same form).

{"version", "data": [{"title", "paragraphs": [{"context", "qas": [{"id", "question",
"answers": [{"text", "answer_start"}], "is_impossible"?, "plausible_answers"?}]}]}]}

Every answer's **text** is kept, whatever its offset says: the official scorers (SQuAD's
evaluate-v1.1.py / -v2.0.py, KorQuAD's evaluate-v1.0.py, cmrc2018_evaluate.py, the squad metric JGLUE
uses) score a prediction against every answer's text and never read ``answer_start``. CMRC 2018's dev
set has answers that are no span of their context (``answer_start`` -1, an annotator's own words)
and offsets a few characters off their text. An offset is only needed where training needs a span:
each answer's ``answer_start`` here is its offset when the context holds its text there, moved onto
the nearest occurrence when that is at most ``offset_tolerance`` characters away, and -1 when the
answer cannot be placed (an offset -1, farther off, missing or not an integer, an empty text).
``training_span`` takes a question's first placed answer; a question with none is left out of
training by the task (``left_out_of_training``), never refused with the whole file.

Errors (one line naming the file, the question id and the field) are kept for what the official
scorers refuse too: a file that is no JSON or no ``data`` list, a question without ``answers`` (or,
in a v1 file, with none: their maximum over no answers fails), an answer without a string ``text``;
and for what kbert's own outputs cannot represent: two questions with one id (prediction files are
keyed by id), a question without its text or context.
"""

from __future__ import annotations


from kbert.data.examples import TaskData
from kbert.data.textio import load_json, read_text
from kbert.errors import DataError

# An answer_start this many characters off its text is moved onto it (CMRC 2018's trial set has
# offsets one character off; the official files of the other tasks have none off).
OFFSET_TOLERANCE = 2
# answer_start of an answer that is no span of its context (CMRC 2018's own marker for one).
UNPLACED = -1


def _get(path, obj, key, kind, where, expected_kind=None, field=None):
    field = field or key
    if not isinstance(obj, dict) or key not in obj:
        raise DataError(path, f"a JSON object with key {key!r}", record=where, field=field)
    value = obj[key]
    ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
    if not ok:
        raise DataError(path, f"a JSON {expected_kind or kind.__name__}", record=where, field=field, value=value)
    return value


def _nearby(context, text, start, tolerance):
    """The offset nearest ``start`` (at most ``tolerance`` away) where ``text`` is in ``context``, or None."""
    for shift in sorted(range(-tolerance, tolerance + 1), key=abs):
        if 0 <= start + shift and context[start + shift:start + shift + len(text)] == text:
            return start + shift
    return None


def place_answer(context: str, text: str, start, tolerance: int = OFFSET_TOLERANCE) -> int:
    """The character offset of ``text`` in ``context`` that ``start`` (a file's ``answer_start``)
    points at: ``start`` itself, the nearest occurrence at most ``tolerance`` characters away, or
    UNPLACED (-1) for an answer that is no span there (``start`` -1, farther off, not an integer;
    a text of white space only)."""
    if not isinstance(start, int) or isinstance(start, bool) or start < 0 or not text.strip():
        return UNPLACED
    if context[start:start + len(text)] == text:
        return start
    moved = _nearby(context, text, start, tolerance) if tolerance else None
    return UNPLACED if moved is None else moved


def _answers(path, qa, key, context, where, tolerance, repaired):
    answers = []
    for n, answer in enumerate(_get(path, qa, key, list, where, "list")):
        field = f"{key}[{n}]"
        if not isinstance(answer, dict):
            raise DataError(path, "a JSON object with text and answer_start", record=where, field=field,
                            value=answer)
        text = _get(path, answer, "text", str, where, "string", field=f"{field}.text")
        given = answer.get("answer_start")
        start = place_answer(context, text, given, tolerance)
        if start != UNPLACED and start != given:
            repaired.append(where)
        answers.append({"text": text, "answer_start": start})
    return answers


def training_span(example: dict):
    """(start, end) characters of the first placed answer of a read_squad example, or None (an
    unanswerable question, or one none of whose answers is a span of its context)."""
    if example.get("is_impossible"):
        return None
    for answer in example["answers"]:
        if answer["answer_start"] != UNPLACED:
            return answer["answer_start"], answer["answer_start"] + len(answer["text"])
    return None


def left_out_of_training(examples) -> tuple:
    """(the examples a span model trains on, the ids of those it cannot): an answerable question
    none of whose answers can be placed in its context has no span to learn."""
    kept, left_out = [], []
    for example in examples:
        if example.get("is_impossible") or training_span(example) is not None:
            kept.append(example)
        else:
            left_out.append(example["id"])
    return kept, left_out


def read_squad(path, *, labelled: bool = True, data: bytes | None = None,
               offset_tolerance: int = OFFSET_TOLERANCE) -> TaskData:
    """Reads a SQuAD v1.1 or v2.0 file (the version is taken from the file).

    offset_tolerance: an ``answer_start`` up to this many characters away from its text is moved
    onto it (the nearest occurrence; meta "repaired_offsets" lists the questions); 0: none is.

    labelled=False reads questions to answer: "answers", "is_impossible" and
    "plausible_answers" are not read (examples get [] and False), so a file without them works.

    Returns:
      TaskData whose examples are {"id", "title", "question", "context", "answers":
      [{"text", "answer_start"}], "is_impossible", "plausible_answers"} (plausible_answers only
      in v2.0 files, [] where absent; ``answer_start`` -1 for an answer that is no span of the
      context, see ``place_answer``); label_names None; meta {"version", "version_2_with_negative",
      "articles", "paragraphs", "repaired_offsets", "unplaced_answers" (their number),
      "unplaced_questions" (ids of answerable questions none of whose answers is placed)}.
    """
    text = read_text(path, data)
    root = load_json(path, text)
    version = str(root.get("version", "")) if isinstance(root, dict) else ""
    articles = _get(path, root, "data", list, "top level", "list")
    declared_v2 = version.lstrip("v").startswith("2")
    is_v2 = declared_v2
    examples, seen, paragraphs, repaired, unplaced = [], {}, 0, [], 0
    for i, article in enumerate(articles):
        where = f"data[{i}]"
        title = article.get("title", "") if isinstance(article, dict) else ""
        for j, paragraph in enumerate(_get(path, article, "paragraphs", list, where, "list")):
            pwhere = f"{where}.paragraphs[{j}]"
            paragraphs += 1
            context = _get(path, paragraph, "context", str, pwhere, "string")
            for k, qa in enumerate(_get(path, paragraph, "qas", list, pwhere, "list")):
                qwhere = f"{pwhere}.qas[{k}]"
                qid = _get(path, qa, "id", str, qwhere, "string")
                qwhere = f"question id {qid!r} ({qwhere})"
                if qid in seen:
                    raise DataError(path, f"a unique id (also used at {seen[qid]})", record=qwhere,
                                    field="id", value=qid)
                seen[qid] = qwhere
                question = _get(path, qa, "question", str, qwhere, "string")
                impossible = False
                if not labelled:
                    examples.append({"id": qid, "title": title, "question": question, "context": context,
                                     "answers": [], "is_impossible": False, "plausible_answers": []})
                    continue
                if "is_impossible" in qa:
                    is_v2 = True
                    impossible = _get(path, qa, "is_impossible", bool, qwhere, "boolean")
                answers = _answers(path, qa, "answers", context, qwhere, offset_tolerance, repaired)
                plausible = (_answers(path, qa, "plausible_answers", context, qwhere, offset_tolerance, repaired)
                             if "plausible_answers" in qa else [])
                # evaluate-v1.1.py takes the maximum over a question's answers (none: it fails);
                # evaluate-v2.0.py reads no answers as "no answer", whatever is_impossible says.
                if not answers and not impossible and not declared_v2:
                    raise DataError(path, "at least one answer (or is_impossible true)",
                                    record=qwhere, field="answers", value=[])
                unplaced += sum(a["answer_start"] == UNPLACED for a in answers)
                examples.append({
                    "id": qid, "title": title, "question": question, "context": context,
                    "answers": answers, "is_impossible": impossible,
                    "plausible_answers": plausible,
                })
    if not examples:
        raise DataError(path, "at least one question", field="data", value="no questions")
    meta = {"version": version or ("2.0" if is_v2 else "1.1"), "version_2_with_negative": is_v2,
            "articles": len(articles), "paragraphs": paragraphs, "repaired_offsets": repaired,
            "unplaced_answers": unplaced,
            "unplaced_questions": left_out_of_training(examples)[1] if labelled else []}
    return TaskData(examples, None, str(path), meta)
