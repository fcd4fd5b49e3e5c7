"""Span-QA (JSQuAD) and tagging exports of mecab-* models: words in, answers in word indices
(kbert.tasks.span_qa.words_answers).

Tiny models with random heads (sharp logits, so answers and tags differ between rows) on the
converted ja-tiny-random-bert (mecab-wordpiece) and a random BERT-Tiny on ja-char (mecab-character)
are exported with ``kbert.export.task``. One fresh process that imports only TensorFlow and
tensorflow-text answers padded words requests (rows of different lengths; JSQuAD contexts that need
several windows; an empty context) and replays the warm-up requests. The word spans it returns,
mapped back to the raw text through where each word's characters are in it, must be the Python
path's answers (``SpanQuestionAnswerer.answer``, ``TokenTagger.predict_entities`` on the raw text):
the same text and character offsets, the same tags per word and entities.
"""

import json

import numpy as np
import pytest


pytestmark = pytest.mark.slow  # the whole module: its shared fixture alone outlasts the fast tier

from conftest import SHARED, require, run_fresh_python
require("fugashi")
require("unidic_lite")

QA_SETTINGS = {"seq_length": 64, "max_query_length": 16, "doc_stride": 24, "n_best_size": 10, "max_answer_length": 12}
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
TAG_SEQ_LENGTH = 24  # the long sentence below has more words: the cut-off ones get fill_label's tag
TAG_TEXTS = ["夏目漱石は東京で生まれた。", "吾輩は猫である。名前はまだ無い。", "ｶﾀｶﾅと㈱と全角ＡＢＣ、そして New York。",
             "京都", "国境の長いトンネルを抜けると雪国であった。夜の底が白くなった。信号所に汽車が止まった。"]
KINDS = ("mecab-wordpiece", "mecab-character")


def _jsquad_rows():
    """Four JSQuAD dev questions on different contexts ("title [SEP] paragraph", most needing several
    windows of 64 tokens), a short context, one whose NFKC differs from the raw text, an empty one."""
    from kbert.data.jglue import read_jsquad

    examples = read_jsquad(SHARED / "jglue" / "jsquad" / "dev.json").examples
    chosen, contexts = [], set()
    for e in examples:
        if e["context"] not in contexts:
            chosen.append((e["question"], e["context"]))
            contexts.add(e["context"])
        if len(chosen) == 4:
            break
    return chosen + [("猫はどこで寝ている？", "猫が庭で寝ている。"),
                     ("何の会社？", "ｶﾀｶﾅの㈱は全角ＡＢＣ株式会社、New York にある。"), ("何？", "")]


def words_rows(tokenizer, texts) -> list:
    """Raw texts -> the rows of words a words-in export takes for one input (its words request)."""
    from kbert.tasks.core.words_inputs import words_request

    return words_request(tokenizer, {"text": list(texts)})["words"]


def _randomize(model, scale, seed):
    rng = np.random.default_rng(seed)
    for w in model.head.weights:
        w.assign(rng.normal(0, scale, w.shape).astype("float32"))


@pytest.fixture(scope="module")
def served(tmp_path_factory, ja_model_dirs):
    """{"qa": {kind: (model, rows)}, "tagger": model} and the fresh process's answers."""
    from kbert.export.task import export_task
    from kbert.tasks import SpanQuestionAnswerer, TokenTagger

    root = tmp_path_factory.mktemp("mecab_answers")
    rows = _jsquad_rows()
    models, requests = {"qa": {}}, {"qa": {}}
    for kind in KINDS:
        model_dir = ja_model_dirs[kind]
        qa = SpanQuestionAnswerer.from_model_dir(model_dir, **QA_SETTINGS)
        _randomize(qa, 15.0, 3)
        qa.save_model_dir(root / kind / "qa")
        path = export_task(root / kind / "qa", root / "sm" / f"{kind}-qa" / "1")
        models["qa"][kind] = qa
        requests["qa"][kind] = {"path": str(path), "question_words": words_rows(qa.tokenizer, [q for q, _ in rows]),
                                "context_words": words_rows(qa.tokenizer, [c for _, c in rows])}
        if kind == "mecab-wordpiece":
            tagger = TokenTagger.from_model_dir(model_dir, label_names=TAGS, seq_length=TAG_SEQ_LENGTH)
            _randomize(tagger, 0.5, 1)
            tagger.save_model_dir(root / "tagger")
            path = export_task(root / "tagger", root / "sm" / "tagger" / "1")
            models["tagger"] = tagger
            requests["tagger"] = {"path": str(path), "words": words_rows(tagger.tokenizer, TAG_TEXTS)}
    (root / "requests.json").write_text(json.dumps(requests, ensure_ascii=False), encoding="utf-8")
    run_fresh_python(f"""
import json, sys, numpy as np, tensorflow as tf, tensorflow_text
from tensorflow_serving.apis import prediction_log_pb2
requests = json.load(open({str(root / "requests.json")!r}, encoding="utf-8"))
decode = np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])
def lists(outputs):
    return {{k: (decode(v.numpy()) if v.dtype == tf.string else v.numpy()).tolist() for k, v in outputs.items()}}
def warmups(path, model):
    shapes = []
    for record in tf.data.TFRecordDataset(path + "/assets.extra/tf_serving_warmup_requests"):
        request = prediction_log_pb2.PredictionLog.FromString(record.numpy()).predict_log.request
        inputs = {{k: tf.make_ndarray(v) for k, v in request.inputs.items()}}
        model.signatures[request.model_spec.signature_name](**inputs)
        shapes.append({{k: list(v.shape) for k, v in inputs.items()}})
    return shapes
answers = {{"qa": {{}}}}
for kind, r in requests["qa"].items():
    model = tf.saved_model.load(r["path"])
    answers["qa"][kind] = lists(model.signatures["serving_default"](
        question_words=tf.constant(r["question_words"]), context_words=tf.constant(r["context_words"])))
    answers["qa"][kind]["warmups"] = warmups(r["path"], model)
r = requests["tagger"]
model = tf.saved_model.load(r["path"])
answers["tagger"] = lists(model.signatures["serving_default"](words=tf.constant(r["words"])))
answers["tagger"]["warmups"] = warmups(r["path"], model)
answers["tagger_endpoint"] = lists(model.serve(tf.constant(r["words"])))  # keras.layers.TFSMLayer calls this
try:
    model.signatures["serving_default"](words=tf.constant([["吾輩 は", "猫"]]))
    answers["spaced"] = "no error"
except tf.errors.InvalidArgumentError as e:
    answers["spaced"] = e.message
assert not [k for k in sys.modules if k.split(".")[0] in ("kbert", "keras_hub", "fugashi")]
json.dump(answers, open({str(root / "answers.json")!r}, "w"))
""", timeout=600)
    return models, rows, json.loads((root / "answers.json").read_text())


def _char_spans(tokenizer, text):
    """Per word of ``text``: (word, [start of each of its characters], [end of each]) in the raw text
    (what a client gets from fugashi's positions; ``_words`` is the Python path's own mapping)."""
    return tokenizer._words(text, spans=True)


def _same_nbest(prediction, context) -> bool:
    """Whether the export's n-best (distinct texts of the words joined with "") is the Python
    path's (distinct raw texts): no character of the context that NFKC expands (㈱ -> (株): one raw
    text, several word texts) and no two n-best raw texts that NFKC and dropping spaces make equal."""
    import unicodedata

    if any(len(unicodedata.normalize("NFKC", ch)) > 1 for ch in context):
        return False
    word_texts = ["".join(unicodedata.normalize("NFKC", a.text).split()) for a in prediction.nbest]
    return len(set(word_texts)) == len(word_texts)


@pytest.mark.parametrize("kind", KINDS)
def test_span_qa_answers_in_words_equal_the_python_path(served, kind):
    models, rows, answers = served
    qa, out = models["qa"][kind], answers["qa"][kind]
    questions, contexts = [q for q, _ in rows], [c for _, c in rows]
    expected = qa.answer(questions, contexts)
    windows = qa.windows(questions, contexts)
    assert max(sum(n == i for n, _ in windows) for i in range(len(rows))) > 1  # some context needs windows
    compared = inside_words = 0
    for i, (context, exp) in enumerate(zip(contexts, expected)):
        spans = _char_spans(qa.tokenizer, context)
        words = [w for w, _, _ in spans]
        assert out["answer_text"][i] != "" or exp.text == ""
        if not exp.text:
            assert [out[k][i] for k in ("answer_start_word", "answer_end_word", "answer_start_in_word",
                                        "answer_end_in_word")] == [-1] * 4
            continue
        s, e = out["answer_start_word"][i], out["answer_end_word"][i]
        a, b = out["answer_start_in_word"][i], out["answer_end_in_word"][i]
        assert 0 <= s <= e < len(words) and 0 <= a < len(words[s]) and 0 < b <= len(words[e])
        start, end = spans[s][1][a], spans[e][2][b - 1]  # back to the raw context
        assert (start, end) == (exp.start_char, exp.end_char), (i, exp.text)
        inside_words += a > 0 or b < len(words[e])  # the answer starts or ends inside a word
        assert context[start:end] == exp.text
        joined = "".join(words[s:e + 1])
        assert out["answer_text"][i] == joined[a:len(joined) - len(words[e]) + b]
        if _same_nbest(exp, context):  # else its n-best may hold texts that differ only in the raw text
            assert out["score"][i] == pytest.approx(exp.probability, abs=1e-5)
            compared += 1
        assert 0 < out["score"][i] <= 1
        assert np.isnan(out["null_score_diff"][i])
    assert len({t for t in out["answer_text"] if t}) >= 3  # the rows' answers differ: not one constant
    assert compared >= 3 and inside_words >= 2
    # words padded with "" to the longest row; warm-ups of the same shape ([1, words])
    assert [sorted(s) for s in out["warmups"]] == [["context_words", "question_words"]]
    assert all(len(shape) == 2 for shape in out["warmups"][0].values())


def test_tagging_answers_in_words_equal_the_python_path(served):
    models, _, answers = served
    tagger, out = models["tagger"], answers["tagger"]
    expected = tagger.predict_entities(TAG_TEXTS)
    width = max(len(r["words"]) for r in expected)
    assert len(out["tags"][0]) == width and len({len(r["words"]) for r in expected}) > 2
    assert len(expected[-1]["words"]) > TAG_SEQ_LENGTH  # truncation: cut-off words get fill_label's tag
    entities = 0
    for i, (text, exp) in enumerate(zip(TAG_TEXTS, expected)):
        words = exp["words"]
        assert out["tags"][i] == [w["tag"] for w in words] + [""] * (width - len(words))
        assert out["tag_ids"][i] == [TAGS.index(w["tag"]) for w in words] + [-1] * (width - len(words))
        assert out["num_words"][i] == len(words)
        n = out["num_entities"][i]
        assert n == len(exp["entities"])
        served_words = tagger.tokenizer.words(text)
        for k, entity in enumerate(exp["entities"]):
            s, e = out["entity_start_word"][i][k], out["entity_end_word"][i][k]
            assert out["entity_type"][i][k] == entity["type"]
            assert (words[s]["start"], words[e]["end"]) == (entity["start"], entity["end"])
            assert out["entity_text"][i][k] == "".join(served_words[s:e + 1])
        entities += n
    assert entities >= 3 and len({t for row in out["tags"] for t in row}) >= 4
    assert [sorted(s) for s in out["warmups"]] == [["words"], ["words"]]
    assert out["warmups"][1]["words"][0] == 8 and len(out["warmups"][1]["words"]) == 2
    assert "a word holds a space" in answers["spaced"]
    assert answers["tagger_endpoint"]["tags"] == out["tags"]


def test_piece_spans_cover_each_word():
    """The in-graph span of each piece, cut from the words joined with "", gives the piece's own
    text (WordPiece without ##; [UNK] and [SEP] the whole word) for both tokenizer types."""
    import tensorflow as tf

    from kbert.tasks.core.words_inputs import word_layout
    from kbert.tasks.span_qa.words_answers import _piece_length_tables, piece_spans
    from kbert.text import TokenizerSpec, create_tokenizer

    texts = ["ｶﾀｶﾅの㈱ [SEP] 吾輩は猫である。", "🎉😀 量子力学", ""]
    for kind, vocab in (("mecab-wordpiece", "ja-mecab-wordpiece"), ("mecab-character", "ja-char")):
        tokenizer = create_tokenizer(TokenizerSpec(type=kind, lower_case=False,
                                                   vocab_file=str(SHARED / "vocab" / vocab / "vocab.txt")))
        words = tf.constant(words_rows(tokenizer, texts))
        layout = word_layout(words)
        ids, starts, ends = piece_spans(tokenizer, words, layout, _piece_length_tables(tokenizer))
        vocab_tokens = tokenizer.get_vocabulary()
        for row, text in enumerate(texts):
            joined = "".join(tokenizer.words(text))
            row_ids = ids[row].numpy().tolist()
            pieces = [joined[a:b] for a, b in zip(starts[row].numpy(), ends[row].numpy())]
            assert "".join(pieces) == joined  # the pieces tile the word text
            for piece, i in zip(pieces, row_ids):
                token = vocab_tokens[i]
                if token not in ("[UNK]", "[SEP]"):
                    assert piece == token.removeprefix("##"), (kind, piece, token)
                elif token == "[SEP]":
                    assert piece == "[SEP]"
        assert 1 in ids.flat_values.numpy().tolist()  # an [UNK] (the emoji) was met
