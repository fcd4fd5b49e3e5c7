"""kbert.text.sentences.split_sentences against sentences split by hand: real English (Emma),
Japanese (Wagahai wa neko de aru, Japanese Wikipedia), Chinese (CMRC 2018) and Korean (KLUE) text
from the shared data, and the rules' edge cases (abbreviations, decimals, line breaks, empty texts)."""

import json

import pytest

from kbert.text.sentences import split_sentences


def _split(*texts):
    return [[s.decode("utf-8") for s in row] for row in split_sentences(list(texts)).to_list()]


def _lines(path, first, last):
    return path.read_text(encoding="utf-8").splitlines()[first - 1:last]


def test_english(shared_data):
    # Emma, chapter 1, its hard-wrapped lines joined into one paragraph (a line break ends a sentence)
    text = " ".join(_lines(shared_data / "corpus" / "en" / "emma.txt", 177, 182))
    assert _split(text) == [[
        "well in Brunswick Square.",
        "It was a happy circumstance, and animated Mr. Woodhouse for some time.",
        "Mr. Knightley had a cheerful manner, which always did him good; and his many inquiries after "
        "\"poor Isabella\" and her children were answered most satisfactorily.",
        "When this was over, Mr. Woodhouse gratefully observed, \"It is very kind of you, Mr. Knightley, "
        "to come out at this late hour to call upon us.",
        "I am afraid you must have",
    ]]
    # unjoined, every line break ends a sentence too
    assert _split("\n".join(_lines(shared_data / "corpus" / "en" / "emma.txt", 177, 178))) == [[
        "well in Brunswick Square.", "It was a happy circumstance, and animated", "Mr. Woodhouse for some time.",
        "Mr. Knightley had a cheerful manner, which"]]


def test_japanese(shared_data):
    text = "\n".join(_lines(shared_data / "corpus" / "ja" / "wagahaiwa_nekodearu.txt", 18, 19))
    sentences = _split(text)[0]
    assert sentences[:6] == [
        "吾輩《わがはい》は猫である。", "名前はまだ無い。",
        "どこで生れたかとんと見当《けんとう》がつかぬ。",
        "何でも薄暗いじめじめした所でニャーニャー泣いていた事だけは記憶している。",
        "吾輩はここで始めて人間というものを見た。",
        "しかもあとで聞くとそれは書生という人間中で一番｜獰悪《どうあく》な種族であったそうだ。",
    ]
    assert all(s.endswith("。") for s in sentences)  # each line ends in a full stop
    assert "".join(sentences) == text.replace("\u3000", "").replace("\n", "")  # nothing lost
    wiki = _lines(shared_data / "corpus" / "ja" / "jsquad_wikipedia.txt", 2, 2)[0]
    first, second = _split(wiki)[0][:2]
    assert first.startswith("梅雨（つゆ、ばいう）は、北海道と") and first.endswith("曇りや雨の多い期間のこと。")
    assert second == "雨季の一種である。"


def test_chinese(shared_data):
    data = json.loads((shared_data / "cmrc2018" / "cmrc2018_trial.json").read_text(encoding="utf-8"))
    context = data["data"][1]["paragraphs"][0]["context"]
    sentences = _split(context)[0]
    assert sentences[:3] == [
        "尤金袋鼠（\"Macropus eugenii\"）是袋鼠科中细小的成员，通常都是就袋鼠及有袋类的研究对象。",
        "尤金袋鼠分布在澳洲南部岛屿及西岸地区。",
        "由于牠们每季在袋鼠岛都大量繁殖，破坏了针鼹岛上的生活环境而被认为是害虫。",
    ]
    assert "".join(sentences) == context.replace("\n", "")  # nothing lost: no spaces between them to strip


def test_korean(shared_data):
    lines = _lines(shared_data / "multilingual" / "korean_klue_ner_dev.txt", 5, 7)
    # the endings 다. 요. 까? are Latin punctuation followed by a space: one sentence a line, joined
    assert _split(" ".join(lines)) == [lines]
    assert _split("가능합니다. 있구요. 아닐까? 좋아요!") == [["가능합니다.", "있구요.", "아닐까?", "좋아요!"]]
    # a space before the full stop, as some KLUE reviews write it: still one sentence
    assert _split("연기는 압권이었습니다 . 다음 영화") == [["연기는 압권이었습니다 .", "다음 영화"]]


@pytest.mark.parametrize("text, expected", [
    ("Mr. Smith met Dr. Jones. They left!", ["Mr. Smith met Dr. Jones.", "They left!"]),
    ("It costs 70.0 dollars in the U.S. today. Fine", ["It costs 70.0 dollars in the U.S. today.", "Fine"]),
    ("Really?! Yes... \"Quite so.\" Then", ["Really?!", "Yes...", "\"Quite so.\"", "Then"]),
    ("See e.g. this. And etc. that", ["See e.g. this.", "And etc. that"]),
    ("one\n\n two \r\nthree", ["one", "two", "three"]),
    ("no boundary at all", ["no boundary at all"]),
    ("ends with a stop.", ["ends with a stop."]),
    ("", [""]),
    ("   \n  ", [""]),
    ("「そうか。」と言った。全角．ピリオド", ["「そうか。」", "と言った。", "全角．", "ピリオド"]),
    ("a\x1eb\x1fc. d", ["a b c.", "d"]),  # the split's own markers are spaces
])
def test_rules(text, expected):
    assert _split(text) == [expected]


def test_a_batch_and_the_graph():
    import tensorflow as tf

    traced = tf.function(split_sentences, input_signature=[tf.TensorSpec([None], tf.string)])
    out = traced(tf.constant(["A b. C d.", "", "x"]))
    assert [[s.decode() for s in row] for row in out.to_list()] == [["A b.", "C d."], [""], ["x"]]
