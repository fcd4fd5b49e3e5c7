"""The official QA scorers' definitions written out as their scripts compute them, for tests to recompute
what kbert reports from a predictions file and the gold file read with ``json`` (no kbert code).

``cmrc2018_evaluate``: ``squad-style-data/cmrc2018_evaluate.py`` of github ``ymcui/cmrc2018``: every
question of the gold file counts (one without a prediction scores 0), its id stripped; a prediction is
scored against every answer's ``text`` (``answer_start`` is never read) by exact match after removing
the marks and by F1 of the longest common substring of the mixed segmentation; both x100.
"""

import re

# the script's sp_char, in its order ("……" is one entry of two characters)
CMRC_MARKS = ['-', ':', '_', '*', '^', '/', '\\', '~', '`', '+', '=', '，', '。', '：', '？', '！', '“', '”', '；',
              '’', '《', '》', '……', '·', '、', '「', '」', '（', '）', '－', '～', '『', '』']


def lcs_table(a, b) -> int:
    """The script's find_lcs: the longest common substring's length, from a table of common suffixes."""
    best, table = 0, [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a)):
        for j in range(len(b)):
            if a[i] == b[j]:
                table[i + 1][j + 1] = table[i][j] + 1
                best = max(best, table[i + 1][j + 1])
    return best


def cmrc_segments(text, remove_marks) -> list:
    """mixed_segmentation: each Chinese character and each mark a segment, NLTK's word_tokenize on the
    runs between them (``preserve_line=True``: one sentence, which every answer run of the shared files
    is; tests/test_metrics_cjk.py checks that)."""
    import nltk

    out, run = [], ""
    for ch in str(text).lower().strip():
        if remove_marks and ch in CMRC_MARKS:
            continue
        if re.search(r"[\u4e00-\u9fa5]", ch) or ch in CMRC_MARKS:
            if run:
                out.extend(nltk.word_tokenize(run, preserve_line=True))
                run = ""
            out.append(ch)
        else:
            run += ch
    if run:
        out.extend(nltk.word_tokenize(run, preserve_line=True))
    return out


def cmrc_f1(answers, prediction) -> float:
    scores = []
    for answer in answers:
        gold, pred = cmrc_segments(answer, True), cmrc_segments(prediction, True)
        common = lcs_table(gold, pred)
        if common == 0:
            scores.append(0)
            continue
        precision, recall = common / len(pred), common / len(gold)
        scores.append(2 * precision * recall / (precision + recall))
    return max(scores)


def cmrc_em(answers, prediction) -> int:
    def plain(text):
        return "".join(ch for ch in str(text).lower().strip() if ch not in CMRC_MARKS)

    return int(any(plain(answer) == plain(prediction) for answer in answers))


def cmrc2018_evaluate(gold_root: dict, predictions: dict) -> dict:
    """{"f1", "em", "total", "skip"} as the script prints them (unrounded)."""
    f1 = em = total = skip = 0
    for instance in gold_root["data"]:
        for paragraph in instance["paragraphs"]:
            for qa in paragraph["qas"]:
                total += 1
                qid = qa["id"].strip()
                answers = [answer["text"] for answer in qa["answers"]]
                if qid not in predictions:
                    skip += 1
                    continue
                prediction = str(predictions[qid])
                f1 += cmrc_f1(answers, prediction)
                em += cmrc_em(answers, prediction)
    return {"f1": 100.0 * f1 / total, "em": 100.0 * em / total, "total": total, "skip": skip}
