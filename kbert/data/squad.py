"""SQuAD v1.1 / v2.0 JSON files.

{"version", "data": [{"title", "paragraphs": [{"context", "qas": [{"id", "question",
"answers": [{"text", "answer_start"}], "is_impossible"?, "plausible_answers"?}]}]}]}

Every answer's answer_start (a character offset into the context) is checked to point at its text.
"""

from __future__ import annotations

import json

from kbert.data.examples import TaskData
from kbert.data.textio import check_no_surrogates, read_text
from kbert.errors import DataError


def _get(path, obj, key, kind, where, expected_kind=None):
    if not isinstance(obj, dict) or key not in obj:
        raise DataError(path, f"a JSON object with key {key!r}", record=where, field=key)
    value = obj[key]
    ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
    if not ok:
        raise DataError(path, f"a JSON {expected_kind or kind.__name__}", record=where, field=key,
                        value=value)
    return value


def _nearby(context, text, start, tolerance):
    """The offset nearest ``start`` (at most ``tolerance`` away) where ``text`` is in ``context``, or None."""
    for shift in sorted(range(-tolerance, tolerance + 1), key=abs):
        if 0 <= start + shift and context[start + shift:start + shift + len(text)] == text:
            return start + shift
    return None


def _answers(path, qa, key, context, where, tolerance=0, repaired=None):
    answers = []
    for n, answer in enumerate(_get(path, qa, key, list, where, "list")):
        field = f"{key}[{n}]"
        if not isinstance(answer, dict):
            raise DataError(path, "a JSON object with text and answer_start", record=where,
                            field=field, value=answer)
        text = _get(path, answer, "text", str, where, "string")
        start = _get(path, answer, "answer_start", int, where, "integer")
        if (context[start:start + len(text)] != text or start < 0) and tolerance:
            moved = _nearby(context, text, start, tolerance)
            if moved is not None:
                start = moved
                repaired.append(where)
        if context[start:start + len(text)] != text or start < 0:
            found = context[max(start, 0):max(start, 0) + len(text)]
            raise DataError(path, f"the character offset of {text!r} in the context (the context "
                            f"there reads {found!r})", record=where, field=f"{field}.answer_start",
                            value=start)
        answers.append({"text": text, "answer_start": start})
    return answers


def read_squad(path, *, labelled: bool = True, data: bytes | None = None, offset_tolerance: int = 0) -> TaskData:
    """Reads a SQuAD v1.1 or v2.0 file (the version is taken from the file).

    offset_tolerance: an ``answer_start`` up to this many characters away from its text is moved
    onto it (the nearest occurrence; meta "repaired_offsets" lists the questions); 0: none is.

    labelled=False reads questions to answer: "answers", "is_impossible" and
    "plausible_answers" are not read (examples get [] and False), so a file without them works.

    Returns:
      TaskData whose examples are {"id", "title", "question", "context", "answers":
      [{"text", "answer_start"}], "is_impossible", "plausible_answers"} (plausible_answers only
      in v2.0 files, [] where absent); label_names None; meta {"version", "articles",
      "paragraphs"}.
    """
    text = read_text(path, data)
    try:
        root = json.loads(text)
    except json.JSONDecodeError as e:
        raise DataError(path, "valid JSON", line=e.lineno, field=f"column {e.colno}",
                        value=e.msg) from None
    check_no_surrogates(path, root)
    version = str(root.get("version", "")) if isinstance(root, dict) else ""
    articles = _get(path, root, "data", list, "top level", "list")
    is_v2 = version.lstrip("v").startswith("2")
    examples, seen, paragraphs, repaired = [], {}, 0, []
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
                if impossible and answers:
                    raise DataError(path, "no answers for a question with is_impossible true",
                                    record=qwhere, field="answers", value=qa["answers"])
                if not impossible and not answers:
                    raise DataError(path, "at least one answer (or is_impossible true)",
                                    record=qwhere, field="answers", value=[])
                examples.append({
                    "id": qid, "title": title, "question": question, "context": context,
                    "answers": answers, "is_impossible": impossible,
                    "plausible_answers": plausible,
                })
    if not examples:
        raise DataError(path, "at least one question", field="data", value="no questions")
    meta = {"version": version or ("2.0" if is_v2 else "1.1"), "version_2_with_negative": is_v2,
            "articles": len(articles), "paragraphs": paragraphs, "repaired_offsets": repaired}
    return TaskData(examples, None, str(path), meta)
