"""Exports of mecab-wordpiece and mecab-character models: words in (kbert.export.words_inputs).

For each type, a model directory (the converted ja-tiny-random-bert for mecab-wordpiece; a random
BERT-Tiny on ja-char for mecab-character, both with MLM and NSP heads) is exported as encoder,
preprocessor and a text-classifier task. One fresh process that imports only TensorFlow and
tensorflow-text loads them all and answers the words requests that ``words_request`` makes from raw
Japanese text; the answers must equal the Keras / Python path on the raw text (<= 1e-5) and the
preprocessor's ids transformers' reference ids (shared/data/reference/ja_tokenizers.jsonl).
"""

import json

import numpy as np
import pytest
import tensorflow as tf

pytest.importorskip("fugashi")
pytest.importorskip("unidic_lite")

from conftest import REFERENCE, SHARED, run_fresh_python  # noqa: E402
from kbert.export.words_inputs import words_name, words_request  # noqa: E402

SEQ_LENGTH = 64
TYPES = {"mecab-wordpiece": "mecab_wordpiece_ids", "mecab-character": "char_ids"}
MASKED = ["吾輩は[MASK]である。名前はまだ無い。", "[MASK]は日本の首都で、人口は[MASK]万人を超える。", "ｶﾀｶﾅと㈱も[MASK]"]
SEP_TEXT = "吾輩は猫である [SEP] 夏目漱石の長編小説。"  # a special token written in the text is that token
PAIRS = (["今日は晴れています。", "猫が庭で寝ている。"], ["明日は雨が降るでしょう。", "量子力学は物理学の一分野だ。"])


@pytest.fixture(scope="module")
def reference_rows():
    """Short reference lines, two of each source that has them (Sōseki, JGLUE, JSQuAD questions,
    adversarial lines: half-width kana, compatibility characters, emoji, odd spaces)."""
    rows = [json.loads(line) for line in (REFERENCE / "ja_tokenizers.jsonl").open(encoding="utf-8")]
    chosen, per_source = [], {}
    for row in rows:
        short = all(0 < len(row[k]) <= SEQ_LENGTH - 2 for k in TYPES.values())
        if short and per_source.get(row["source"], 0) < 2:
            chosen.append(row)
            per_source[row["source"]] = per_source.get(row["source"], 0) + 1
    assert len(per_source) >= 3
    return chosen


def _character_model_dir(out):
    import keras

    from kbert import BertConfig, BertEncoder
    from kbert.layers.heads import build_head
    from kbert.model_dir import save_model_dir
    from kbert.text import TokenizerSpec, create_tokenizer

    tokenizer = create_tokenizer(TokenizerSpec(type="mecab-character", lower_case=False,
                                               vocab_file=str(SHARED / "vocab" / "ja-char" / "vocab.txt")))
    keras.utils.set_random_seed(3)
    encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size, max_position_embeddings=128))
    save_model_dir(out, encoder, tokenizer=tokenizer, heads={
        "mlm": (build_head("mlm", encoder.config), {"type": "mlm"}),
        "nsp": (build_head("nsp", encoder.config), {"type": "nsp"})})
    return out


@pytest.fixture(scope="module")
def exported(tmp_path_factory, reference_rows):
    """{type: (model_dir, classifier, {encoder, preprocessor, task}: export dir)} and the fresh process's answers."""
    import keras

    from kbert.convert import hf
    from kbert.export.encoder import export_encoder
    from kbert.export.preprocessor import export_preprocessor
    from kbert.export.task import export_task
    from kbert.tasks import TextClassifier
    from kbert.text import load_tokenizer

    root = tmp_path_factory.mktemp("mecab_exports")
    models, requests = {}, {}
    for kind in TYPES:
        model_dir = root / kind / "model"
        if kind == "mecab-wordpiece":
            hf.convert(SHARED / "weights" / "ja-tiny-random-bert", model_dir)
        else:
            _character_model_dir(model_dir)
        keras.utils.set_random_seed(4)
        classifier = TextClassifier.from_model_dir(model_dir, num_classes=3, seq_length=SEQ_LENGTH)
        rng = np.random.default_rng(5)
        for w in classifier.head.weights:
            w.assign(rng.normal(0, 0.5, w.shape).astype("float32"))
        classifier.save_model_dir(root / kind / "classifier")
        exports = {"encoder": export_encoder(model_dir, root / "sm" / f"{kind}-encoder" / "1"),
                   "preprocessor": export_preprocessor(model_dir, root / "sm" / f"{kind}-pre" / "1", seq_length=SEQ_LENGTH),
                   "task": export_task(root / kind / "classifier", root / "sm" / f"{kind}-task" / "1")}
        tokenizer = load_tokenizer(model_dir)
        texts = [r["text"] for r in reference_rows]
        requests[kind] = {"exports": {k: str(v) for k, v in exports.items()},
                          "text": words_request(tokenizer, {"text": texts}),
                          "task": words_request(tokenizer, {"text": texts + [SEP_TEXT]}),
                          "masked": words_request(tokenizer, {"text": MASKED}),
                          "pairs": words_request(tokenizer, {"text_a": PAIRS[0], "text_b": PAIRS[1]})}
        models[kind] = (model_dir, classifier, exports)
    (root / "requests.json").write_text(json.dumps(requests, ensure_ascii=False), encoding="utf-8")
    run_fresh_python(f"""
import json, sys, numpy as np, tensorflow as tf, tensorflow_text
from tensorflow_serving.apis import prediction_log_pb2
requests = json.load(open({str(root / "requests.json")!r}, encoding="utf-8"))
decode = np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])
def lists(outputs):
    return {{k: (decode(v.numpy()) if v.dtype == tf.string else v.numpy()).tolist() for k, v in outputs.items()}}
answers = {{}}
for kind, r in requests.items():
    enc, pre, task = (tf.saved_model.load(r["exports"][k]) for k in ("encoder", "preprocessor", "task"))
    answers[kind] = {{
        "pre": lists(pre.signatures["serving_default"](words=tf.constant(r["text"]["words"]))),
        "task": lists(task.signatures["serving_default"](words=tf.constant(r["task"]["words"]))),
        "fill_mask": lists(enc.signatures["fill_mask"](words=tf.constant(r["masked"]["words"]))),
        "next_sentence": lists(enc.signatures["next_sentence"](words_a=tf.constant(r["pairs"]["words_a"]),
                                                               words_b=tf.constant(r["pairs"]["words_b"]))),
        "inputs": {{k: sorted(s.structured_input_signature[1]) for k, s in
                   [("pre", pre.signatures["serving_default"]), ("task", task.signatures["serving_default"]),
                    ("fill_mask", enc.signatures["fill_mask"]), ("next_sentence", enc.signatures["next_sentence"]),
                    ("serving_ids", task.signatures["serving_ids"])]}},
        "has_offsets": hasattr(pre, "tokenize_with_offsets")}}
    for model, path in ((enc, r["exports"]["encoder"]), (task, r["exports"]["task"])):  # warm-ups replay
        for record in tf.data.TFRecordDataset(path + "/assets.extra/tf_serving_warmup_requests"):
            request = prediction_log_pb2.PredictionLog.FromString(record.numpy()).predict_log.request
            model.signatures[request.model_spec.signature_name](
                **{{k: tf.make_ndarray(v) for k, v in request.inputs.items()}})
assert not [k for k in sys.modules if k.split(".")[0] in ("kbert", "keras_hub", "fugashi")]
json.dump(answers, open({str(root / "answers.json")!r}, "w"))
""", timeout=600)
    return models, json.loads((root / "answers.json").read_text())


def test_words_names_and_request():
    assert [words_name(n) for n in ("text", "text_a", "text_b", "context", "choices")] == [
        "words", "words_a", "words_b", "context_words", "choices_words"]

    class Spaces:  # a Python-step tokenizer that splits characters
        in_graph = False

        def pre_tokenize(self, texts):
            return [" ".join(t) for t in texts]

    assert words_request(Spaces(), {"context": ["ab"], "choices": [["cd", "e"]]}) == {
        "context_words": ["a b"], "choices_words": [["c d", "e"]]}
    assert words_request(Spaces(), {"text": "xy"}) == {"words": "x y"}


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_preprocessor_ids_equal_the_reference_ids(exported, reference_rows, kind):
    _, answers = exported
    served = answers[kind]["pre"]
    assert answers[kind]["inputs"]["pre"] == ["words"] and not answers[kind]["has_offsets"]
    for row, reference in enumerate(reference_rows):
        ids = reference[TYPES[kind]]
        n = len(ids)
        assert served["input_word_ids"][row][:n + 2] == [2, *ids, 3], reference["text"][:40]
        assert served["input_mask"][row] == [1] * (n + 2) + [0] * (SEQ_LENGTH - n - 2)


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_task_export_equals_the_keras_model_on_raw_text(exported, reference_rows, kind):
    models, answers = exported
    _, classifier, _ = models[kind]
    assert answers[kind]["inputs"]["task"] == ["words"]
    assert answers[kind]["inputs"]["serving_ids"] == ["input_mask", "input_type_ids", "input_word_ids"]
    logits = classifier.predict([r["text"] for r in reference_rows] + [SEP_TEXT], verbose=0)  # MeCab in Python
    expected = tf.nn.softmax(logits).numpy()
    np.testing.assert_allclose(answers[kind]["task"]["probabilities"], expected, atol=1e-5)
    assert np.ptp(expected[:, 0]) > 1e-3  # the rows differ: the comparison is not of one value


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_head_signatures_equal_the_python_api_on_raw_text(exported, kind):
    from kbert.explore import fill_mask, next_sentence

    models, answers = exported
    model_dir = models[kind][0]
    assert answers[kind]["inputs"]["fill_mask"] == ["words"]
    assert answers[kind]["inputs"]["next_sentence"] == ["words_a", "words_b"]
    served = answers[kind]["fill_mask"]
    python = fill_mask(model_dir, MASKED, top_k=5)
    assert [len(m) for m in python] == [1, 2, 1]
    for row, masks in enumerate(python):
        for m, answer in enumerate(masks):
            assert served["positions"][row][m] == answer["position"]
            assert served["ids"][row][m] == answer["ids"]
            assert served["tokens"][row][m] == answer["tokens"]
            np.testing.assert_allclose(served["probabilities"][row][m], answer["probabilities"], atol=1e-5)
    np.testing.assert_allclose(answers[kind]["next_sentence"]["is_next_probability"],
                               next_sentence(model_dir, *PAIRS), atol=1e-5)


def test_offset_answers_are_refused_for_words_in_exports(exported, tmp_path):
    from kbert.export.task import export_task
    from kbert.tasks.tagger import TokenTagger

    models, _ = exported
    tagger = TokenTagger.from_model_dir(models["mecab-character"][0], label_names=["O", "B-X", "I-X"], seq_length=32)
    tagger.save_model_dir(tmp_path / "tagger")
    with pytest.raises(NotImplementedError, match="token_tagger.*'mecab-character'.*never sees"):
        export_task(tmp_path / "tagger", tmp_path / "sm" / "1")
