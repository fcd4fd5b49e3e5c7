"""Japanese and Chinese pre-training text: Aozora Bunko markup, NFKC, sentence splitting, the Beam run."""

import re
import unicodedata

import pytest
import tensorflow as tf

from conftest import SHARED, require
from pipelines import cjk_text
from pipelines.pretraining_data import create_instances, parse_documents, run

SOSEKI = SHARED / "corpus" / "ja" / "wagahaiwa_nekodearu.txt"
SPM = SHARED / "vocab" / "ja-sentencepiece" / "spm.model"


def test_japanese_sentences_end_at_the_full_stops_but_not_inside_brackets():
    text = "吾輩は猫である。名前はまだ無い！　本当か？「わからないね。戸袋のなかか」と言った。\n　次の段落"
    assert cjk_text.split_sentences(text, "ja") == [
        "吾輩は猫である。", "名前はまだ無い！", "本当か？", "「わからないね。戸袋のなかか」と言った。", "次の段落"]
    # Closing quotes and repeated marks stay with their sentence; NFKC's ASCII !? end sentences too.
    assert cjk_text.split_sentences("えっ!?そうか。」続き", "ja") == ["えっ!?", "そうか。」", "続き"]


def test_chinese_sentences_also_end_at_the_semicolon():
    text = "他说：“我来了。”然后走了；我们都笑了！真的吗？"
    assert cjk_text.split_sentences(text, "zh") == ["他说：“我来了。”然后走了；", "我们都笑了！", "真的吗？"]
    assert cjk_text.split_sentences("甲；乙", "ja") == ["甲；乙"]  # not a Japanese sentence end


def test_strip_aozora_on_the_real_novel():
    raw = SOSEKI.read_text(encoding="utf-8")
    text = cjk_text.strip_aozora(raw)
    for mark in "《》｜［＃":
        assert mark not in text, mark
    assert "【テキスト中に現れる記号について】" not in text and "底本：" not in text and "青空文庫" not in text
    assert "吾輩は猫である。名前はまだ無い。" in text  # 吾輩《わがはい》 -> 吾輩
    assert "一番獰悪な種族であった" in text  # 一番｜獰悪《どうあく》 -> 一番獰悪
    # Every ruby base and every sentence of the body survives: the body's 。 are all kept.
    body = raw[raw.index("［＃８字下げ］一"):raw.index("底本：")]
    assert text.count("。") == re.sub(r"《[^》]*》|［＃[^］]*］", "", body).count("。")


def test_prepare_applies_nfkc_for_japanese_only():
    text = "ＡＢＣ１２３ｱｲｳ　です！"
    assert cjk_text.prepare(text, "ja") == unicodedata.normalize("NFKC", text) == "ABC123アイウ です!"
    assert cjk_text.prepare(text, "zh") == text
    assert cjk_text.prepare(text, "en") == text
    with pytest.raises(ValueError, match="--language"):
        cjk_text.prepare(text, "fr")


def test_prose_documents_and_instances_for_japanese():
    text = cjk_text.prepare(SOSEKI.read_text(encoding="utf-8"), "ja", aozora=True)
    docs = parse_documents(text, "prose", doc_sentences=32, language="ja")
    sentences = [s for d in docs for s in d]
    assert len(docs) > 50 and all(len(d) >= 32 for d in docs[:-1])
    assert all(" " not in s[:1] and "\n" not in s for s in sentences)
    assert sum(s.endswith(("。", "」", "!", "?")) for s in sentences) / len(sentences) > 0.95
    instances = create_instances([[(s, len(s)) for s in d] for d in docs[:4]], max_seq_length=64,
                                 short_seq_prob=0.0, seed=1, joiner="")
    flat = "".join(sentences)
    for a, b, is_random in instances:
        assert a in flat and b in flat
        if not is_random:
            assert a + b in flat  # consecutive, joined without a space


def test_beam_pipeline_japanese_with_sentencepiece(tmp_path):
    require("sentencepiece")
    part = tmp_path / "soseki.txt"
    part.write_text("\n".join(SOSEKI.read_text(encoding="utf-8").split("\n")[:120]), encoding="utf-8")
    counters = run(["--input", str(part), "--output", str(tmp_path / "out"), "--vocab", str(SPM),
                    "--tokenizer", "sentencepiece", "--language", "ja", "--strip-aozora", "--format", "prose",
                    "--num-shards", "1", "--doc-sentences", "16", "--max-seq-length", "64"])
    assert counters["instances"] > 20
    prepared = cjk_text.prepare(part.read_text(encoding="utf-8"), "ja", aozora=True)
    flat = "".join(s for d in parse_documents(prepared, "prose", 16, "ja") for s in d)
    for record in tf.data.TFRecordDataset(str(tmp_path / "out-00000-of-00001.tfrecord")):
        ex = tf.train.Example.FromString(record.numpy())
        a, b = (ex.features.feature[k].bytes_list.value[0].decode() for k in ("text_a", "text_b"))
        assert a in flat and b in flat
        assert not set("《》｜［＃") & set(a + b)
        assert unicodedata.normalize("NFKC", a) == a
