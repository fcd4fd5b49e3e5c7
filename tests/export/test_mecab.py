"""Exports of mecab-wordpiece and mecab-character models: words in, string [batch, words] (kbert.tasks.core.words_inputs).

For each type, a model directory (the converted ja-tiny-random-bert for mecab-wordpiece; a random
BERT-Tiny on ja-char for mecab-character, both with MLM and NSP heads) is exported as encoder,
preprocessor and a text-classifier task (and, for mecab-wordpiece, a multiple-choice task). One
fresh process that imports only TensorFlow and tensorflow-text loads them all and answers the words
requests that ``words_request`` makes from raw Japanese text (rows of different lengths, padded with
""); the answers must equal the Keras / Python path on the raw text (ids exactly, floats <= 1e-5)
and the preprocessor's ids transformers' reference ids (shared/data/reference/ja_tokenizers.jsonl).
"""

import io
import json
import re
import sys

import numpy as np
import pytest
import tensorflow as tf


pytestmark = pytest.mark.slow  # the whole module: its shared fixture alone outlasts the fast tier

from conftest import REFERENCE, REPO, SHARED, require, run_fresh_python
require("fugashi")
require("unidic_lite")
from kbert.tasks.core.words_inputs import words_name, words_request  # noqa: E402

SEQ_LENGTH = 64
TYPES = {"mecab-wordpiece": "mecab_wordpiece_ids", "mecab-character": "char_ids"}
MASKED = ["吾輩は[MASK]である。名前はまだ無い。", "[MASK]は日本の首都で、人口は[MASK]万人を超える。", "ｶﾀｶﾅと㈱も[MASK]"]
SEP_TEXT = "吾輩は猫である [SEP] 夏目漱石の長編小説。"  # a special token written in the text is that token
PAIRS = (["今日は晴れています。", "猫が庭で寝ている。"], ["明日は雨が降るでしょう。", "量子力学は物理学の一分野だ。"])
CONTEXTS = ["吾輩は猫である。", "東京は日本の首都だ。"]
CHOICES = [["名前はまだ無い。", "犬である。", "[MASK]"], ["人口が多い。", "海の底にある。", "量子力学の一分野だ。"]]


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


def _random_head(model, seed):
    rng = np.random.default_rng(seed)
    for w in model.head.weights:
        w.assign(rng.normal(0, 0.5, w.shape).astype("float32"))
    return model


# Run in the TensorFlow-only process: every words-in function of the exports on padded requests,
# the Keras endpoints (what TFSMLayer calls) bare and as a dict, and the old flat [batch] form,
# which must be an error.
FRESH = """
import json, sys, numpy as np, tensorflow as tf, tensorflow_text
from tensorflow_serving.apis import prediction_log_pb2
requests = json.load(open(ROOT + "/requests.json", encoding="utf-8"))
decode = np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])
def lists(outputs):
    return {k: (decode(v.numpy()) if v.dtype == tf.string else v.numpy()).tolist() for k, v in outputs.items()}
def flat(words):  # the old contract: one space-joined string per text
    return tf.constant([" ".join(w for w in row if w) for row in words])
def error(fn):
    try:
        fn()
    except Exception as e:  # any error will do; a silent answer will not
        return f"{type(e).__name__}: {e}"[:400]
    return None
def signature_inputs(sig):
    return {k: s.shape.as_list() for k, s in sig.structured_input_signature[1].items()}
answers = {}
for kind, r in requests.items():
    exports = {k: tf.saved_model.load(v) for k, v in r["exports"].items()}
    enc, pre, task = exports["encoder"], exports["preprocessor"], exports["task"]
    words, task_words = tf.constant(r["text"]["words"]), tf.constant(r["task"]["words"])
    masked, pairs = tf.constant(r["masked"]["words"]), {k: tf.constant(v) for k, v in r["pairs"].items()}
    a = answers[kind] = {
        "pre": lists(pre.signatures["serving_default"](words=words)),
        "pre_other": [lists(pre(words)), lists(pre.serve(words)), lists(pre.serving_default({"words": words}))],
        "tokenize": pre.tokenize(words).to_list(),
        "task": lists(task.signatures["serving_default"](words=task_words)),
        "task_other": [lists(task.serve(task_words)), lists(task.serving_default({"words": task_words}))],
        "fill_mask": lists(enc.signatures["fill_mask"](words=masked)),
        "next_sentence": lists(enc.signatures["next_sentence"](**pairs)),
        "flat_errors": [
            error(lambda: pre.signatures["serving_default"](words=flat(r["text"]["words"]))),
            error(lambda: pre.serve(flat(r["text"]["words"]))),
            error(lambda: task.signatures["serving_default"](words=flat(r["task"]["words"]))),
            error(lambda: task.serving_default({"words": flat(r["task"]["words"])})),
            error(lambda: enc.signatures["fill_mask"](words=flat(r["masked"]["words"]))),
            error(lambda: enc.signatures["next_sentence"](**{k: flat(v) for k, v in r["pairs"].items()}))],
        "inputs": {k: signature_inputs(s) for k, s in
                   [("pre", pre.signatures["serving_default"]), ("task", task.signatures["serving_default"]),
                    ("fill_mask", enc.signatures["fill_mask"]), ("next_sentence", enc.signatures["next_sentence"]),
                    ("serving_ids", task.signatures["serving_ids"])]},
        "has_offsets": hasattr(pre, "tokenize_with_offsets")}
    if "choice" in exports:
        choice = exports["choice"].signatures["serving_default"]
        a["inputs"]["choice"] = signature_inputs(choice)
        a["choice"] = lists(choice(**{k: tf.constant(v) for k, v in r["choice"].items()}))
        a["flat_errors"].append(error(lambda: choice(
            context_words=tf.constant(r["choice"]["context_words"]),
            choices_words=tf.constant([[" ".join(w for w in c if w) for c in row] for row in r["choice"]["choices_words"]]))))
    for name, model in exports.items():  # the warm-up requests replay
        if name == "preprocessor":
            continue
        for record in tf.data.TFRecordDataset(r["exports"][name] + "/assets.extra/tf_serving_warmup_requests"):
            request = prediction_log_pb2.PredictionLog.FromString(record.numpy()).predict_log.request
            model.signatures[request.model_spec.signature_name](
                **{k: tf.make_ndarray(v) for k, v in request.inputs.items()})
assert not [k for k in sys.modules if k.split(".")[0] in ("kbert", "keras_hub", "fugashi")]
json.dump(answers, open(ROOT + "/answers.json", "w"))
"""


# TF Serving's path: a TF1 session's Session::Run, called from C++ without comparing the fed shapes
# with the signature's. One SavedModel per fresh process.
SESSION = """
import json, sys, numpy as np, tensorflow as tf, tensorflow_text
from tensorflow.core.protobuf import config_pb2
path, signature, requests = json.loads(sys.argv[1])
decode = np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])
encode = np.vectorize(lambda s: s.encode("utf-8"), otypes=[object])
answers = []
with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
    sig = tf.compat.v1.saved_model.loader.load(sess, ["serve"], path).signature_def[signature]
    outputs = sorted(sig.outputs)
    for inputs in requests:
        names = sorted(inputs)
        run = sess._make_callable_from_options(config_pb2.CallableOptions(
            feed=[sig.inputs[k].name for k in names], fetch=[sig.outputs[k].name for k in outputs]))
        try:
            values = run(*[encode(np.asarray(inputs[k], dtype=object)) for k in names])
            answers.append({k: (decode(v) if v.dtype == object else v).tolist() for k, v in zip(outputs, values)})
        except Exception as e:
            answers.append(f"{type(e).__name__}: {e}"[:400])
print(json.dumps(answers))
"""


def _session_answers(path, signature, requests):
    """The answers (or error messages) of ``requests`` fed in turn to one session in a fresh process."""
    printed = run_fresh_python(SESSION, json.dumps([str(path), signature, requests]))
    return json.loads(printed.strip().splitlines()[-1])


def _flat(words):  # the old contract: one space-joined string per text
    return [" ".join(w for w in row if w) for row in words]


@pytest.fixture(scope="module")
def exported(tmp_path_factory, ja_model_dirs, reference_rows):
    """{type: (model_dir, {classifier, choice}: Keras model, {encoder, preprocessor, task, choice}: export dir)}
    and the fresh process's answers."""
    import keras

    from kbert.export.encoder import export_encoder
    from kbert.export.preprocessor import export_preprocessor
    from kbert.export.task import export_task
    from kbert.tasks import MultipleChoiceModel, TextClassifier
    from kbert.text import load_tokenizer

    root = tmp_path_factory.mktemp("mecab_exports")
    models, requests = {}, {}
    for kind in TYPES:
        model_dir = ja_model_dirs[kind]
        keras.utils.set_random_seed(4)
        keras_models = {"classifier": _random_head(
            TextClassifier.from_model_dir(model_dir, num_classes=3, seq_length=SEQ_LENGTH), 5)}
        keras_models["classifier"].save_model_dir(root / kind / "classifier")
        exports = {"encoder": export_encoder(model_dir, root / "sm" / f"{kind}-encoder" / "1"),
                   "preprocessor": export_preprocessor(model_dir, root / "sm" / f"{kind}-pre" / "1", seq_length=SEQ_LENGTH),
                   "task": export_task(root / kind / "classifier", root / "sm" / f"{kind}-task" / "1")}
        tokenizer = load_tokenizer(model_dir)
        texts = [r["text"] for r in reference_rows]
        requests[kind] = {"text": words_request(tokenizer, {"text": texts}),
                          "task": words_request(tokenizer, {"text": texts + [SEP_TEXT]}),
                          "masked": words_request(tokenizer, {"text": MASKED}),
                          "pairs": words_request(tokenizer, {"text_a": PAIRS[0], "text_b": PAIRS[1]})}
        if kind == "mecab-wordpiece":  # one multiple-choice export: choices_words [batch, choices, words]
            keras_models["choice"] = _random_head(MultipleChoiceModel.from_model_dir(model_dir, seq_length=SEQ_LENGTH), 6)
            keras_models["choice"].save_model_dir(root / kind / "choice")
            exports["choice"] = export_task(root / kind / "choice", root / "sm" / f"{kind}-choice" / "1")
            requests[kind]["choice"] = words_request(tokenizer, {"context": CONTEXTS, "choices": CHOICES})
        requests[kind]["exports"] = {k: str(v) for k, v in exports.items()}
        models[kind] = (model_dir, keras_models, exports)
    (root / "requests.json").write_text(json.dumps(requests, ensure_ascii=False), encoding="utf-8")
    run_fresh_python(f"ROOT = {str(root)!r}\n" + FRESH, timeout=600)
    return models, requests, json.loads((root / "answers.json").read_text())


def test_requests_are_padded_rows_of_mecab_words(exported, reference_rows):
    """The requests hold each text's MeCab words (the reference's, for the reference lines), rows of
    different lengths padded with "" at the end."""
    _, requests, _ = exported
    for kind in TYPES:
        rows = requests[kind]["text"]["words"]
        assert len({len(row) for row in rows}) == 1 and len({len(r["mecab_words"]) for r in reference_rows}) > 1
        for row, reference in zip(rows, reference_rows):
            if "[" in reference["text"]:  # the reference splits a literal [SEP]; kbert keeps it one word
                continue
            expected = reference["mecab_words"]
            if kind == "mecab-wordpiece":  # transformers splits each MeCab word at white space
                expected = [part for w in expected for part in w.split()]
            assert row == expected + [""] * (len(row) - len(expected)), reference["text"][:40]
    choices = requests["mecab-wordpiece"]["choice"]["choices_words"]
    assert np.asarray(choices).shape[:2] == (2, 3) and choices[0][2][0] == "[MASK]"


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_preprocessor_ids_equal_the_reference_ids(exported, reference_rows, kind):
    _, _, answers = exported
    served = answers[kind]["pre"]
    assert answers[kind]["inputs"]["pre"] == {"words": [None, None]} and not answers[kind]["has_offsets"]
    for row, reference in enumerate(reference_rows):
        ids = reference[TYPES[kind]]
        n = len(ids)
        assert served["input_word_ids"][row][:n + 2] == [2, *ids, 3], reference["text"][:40]
        assert served["input_mask"][row] == [1] * (n + 2) + [0] * (SEQ_LENGTH - n - 2)
    # __call__ and the Keras endpoints (bare tensor, dict) take the same words; tokenize too.
    assert all(other == served for other in answers[kind]["pre_other"])
    assert [sum(row, []) for row in answers[kind]["tokenize"]] == [r[TYPES[kind]] for r in reference_rows]


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_task_export_equals_the_keras_model_on_raw_text(exported, reference_rows, kind):
    models, _, answers = exported
    classifier = models[kind][1]["classifier"]
    assert answers[kind]["inputs"]["task"] == {"words": [None, None]}
    assert answers[kind]["inputs"]["serving_ids"] == {k: [None, None] for k in
                                                      ("input_mask", "input_type_ids", "input_word_ids")}
    logits = classifier.predict([r["text"] for r in reference_rows] + [SEP_TEXT], verbose=0)  # MeCab in Python
    expected = tf.nn.softmax(logits).numpy()
    np.testing.assert_allclose(answers[kind]["task"]["probabilities"], expected, atol=1e-5)
    assert np.ptp(expected[:, 0]) > 1e-3  # the rows differ: the comparison is not of one value
    assert all(other == answers[kind]["task"] for other in answers[kind]["task_other"])


def test_multiple_choice_export_equals_the_keras_model_on_raw_text(exported):
    models, _, answers = exported
    model = models["mecab-wordpiece"][1]["choice"]
    served = answers["mecab-wordpiece"]
    assert served["inputs"]["choice"] == {"context_words": [None, None], "choices_words": [None, None, None]}
    logits = model.predict_logits({"text_a": CONTEXTS, "choices": CHOICES})
    np.testing.assert_allclose(served["choice"]["logits"], logits, atol=1e-5)
    assert np.ptp(logits) > 1e-3


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_head_signatures_equal_the_python_api_on_raw_text(exported, kind):
    from kbert.explore import fill_mask, next_sentence

    models, _, answers = exported
    model_dir = models[kind][0]
    assert answers[kind]["inputs"]["fill_mask"] == {"words": [None, None]}
    assert answers[kind]["inputs"]["next_sentence"] == {"words_a": [None, None], "words_b": [None, None]}
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


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_a_flat_string_per_text_is_an_error(exported, kind):
    """The old request form (one space-joined string per text) is refused, not answered, by a loaded
    SavedModel's Python-side checks and by the graph's own (EnsureShape)."""
    _, _, answers = exported
    errors = answers[kind]["flat_errors"]
    assert len(errors) == (7 if kind == "mecab-wordpiece" else 6)
    assert all(errors), errors
    # The signatures (0, 2, 4, 5, 6): the graph's own check, which TF Serving runs too; the Keras
    # endpoints (1, 3): no traced function takes that shape.
    for i, message in enumerate(errors):
        expected = "is not compatible with expected shape [?," if i not in (1, 3) else "Could not find matching"
        assert expected in message, message


def test_tf_serving_path_refuses_a_flat_string_per_text(exported):
    """Fed as TF Serving feeds a signature (a C++ session, no shape checks), padded words give the
    signature's answers and a flat [batch] string a shape error (without the graph's check the batch
    would be joined into one text and answered). The preprocessor only: the TF1 loader used here does
    not reliably restore the variables of the task and encoder exports (the Python-side calls of
    test_a_flat_string_per_text_is_an_error show the same graph check there)."""
    models, requests, answers = exported
    kind = "mecab-wordpiece"
    words = requests[kind]["text"]["words"]
    pre = _session_answers(models[kind][2]["preprocessor"], "serving_default", [{"words": words}, {"words": _flat(words)}])
    assert pre[0] == answers[kind]["pre"]
    assert pre[1].startswith(f"InvalidArgumentError: Shape of tensor _arg_serving_default_words_0_0 [{len(words)}] "
                             "is not compatible with expected shape [?,?]"), pre[1]


def _padded_words(tokenizer, texts):
    rows = [tokenizer.words(t) for t in texts]  # MeCab's words of each text (kbert.text.mecab)
    width = max(len(r) for r in rows)
    return [r + [""] * (width - len(r)) for r in rows]


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_warmup_requests_are_padded_words(exported, kind):
    from kbert.export.head_signatures import warmup_requests
    from fixtures.export_contents import read_warmup_requests
    from kbert.tasks.core.registry import task_type_for_model
    from kbert.text import load_tokenizer

    models, _, _ = exported
    model_dir, keras_models, exports = models[kind]
    tokenizer = load_tokenizer(model_dir)
    raw = {"encoder": warmup_requests({"fill_mask": 1, "next_sentence": 1}),
           "task": [("serving_default", r) for r in
                    task_type_for_model("text_classifier").warmup_inputs(keras_models["classifier"])]}
    for name, requests in raw.items():
        logs = read_warmup_requests(exports[name])
        assert len(logs) == len(requests)
        for log, (signature, inputs) in zip(logs, requests):
            request = log.predict_log.request
            assert request.model_spec.signature_name == signature
            assert sorted(request.inputs) == sorted(words_name(k) for k in inputs)
            for key, texts in inputs.items():
                array = tf.make_ndarray(request.inputs[words_name(key)])
                assert array.ndim == 2
                assert [[w.decode() for w in row] for row in array] == _padded_words(tokenizer, texts)
        arrays = [tf.make_ndarray(next(iter(log.predict_log.request.inputs.values()))) for log in logs]
        assert any((w == b"").any() for w in arrays)  # rows of different lengths were padded


def test_tfsmlayer_takes_words(exported):
    """keras.layers.TFSMLayer on the words-in exports: a bare [batch, words] tensor or {"words": ...}."""
    import keras

    models, requests, answers = exported
    kind = "mecab-character"
    exports = models[kind][2]
    words = tf.constant(requests[kind]["text"]["words"])
    pre = keras.layers.TFSMLayer(str(exports["preprocessor"]), call_endpoint="serving_default")
    np.testing.assert_array_equal(pre(words)["input_word_ids"], answers[kind]["pre"]["input_word_ids"])
    task = keras.layers.TFSMLayer(str(exports["task"]), call_endpoint="serve")
    np.testing.assert_allclose(task({"words": tf.constant(requests[kind]["task"]["words"])})["probabilities"],
                               answers[kind]["task"]["probabilities"], atol=1e-6)


def test_the_readme_requests_give_the_models_answers(exported, capsys):
    """docs/serving.md's ``kbert.tokenize --words`` line prints what it says, and its curl body (TF Serving's
    row format, a padded row) gives the classifier's answers on the raw texts (kbert.export.rest)."""
    from kbert.commands import tokenize
    from kbert.export.rest import predict

    models, _, _ = exported
    model_dir, keras_models, exports = models["mecab-wordpiece"]
    readme = (REPO / "docs" / "serving.md").read_text(encoding="utf-8")
    line = re.search(r'^echo "(.+?)" \| python -m kbert\.tokenize \S+ --words +# (.+)$', readme, re.M)
    stdin = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO((line.group(1) + "\n").encode("utf-8")))
    try:
        assert tokenize.main([str(model_dir), "--words"]) == 0
    finally:
        sys.stdin = stdin
    assert json.loads(capsys.readouterr().out) == json.loads(line.group(2))
    # ... and what the page says is what the reference makes of that folder (transformers'
    # BertJapaneseTokenizer, MeCab through fugashi), not only what kbert printed when it was written.
    transformers = require("transformers")
    reference = transformers.AutoTokenizer.from_pretrained(SHARED / "weights" / "ja-tiny-random-bert", use_fast=False)
    assert json.loads(line.group(2)) == {"words": reference.word_tokenizer.tokenize(line.group(1))}

    body = json.loads(re.search(r"^curl -d '(.+?)' \\\n.*ja_sentiment:predict", readme, re.M).group(1))
    texts = ["".join(w for w in instance["words"]) for instance in body["instances"]]
    assert texts == ["吾輩は猫である。", "名前はまだ無い。"]
    loaded = tf.saved_model.load(str(exports["task"]))
    predictions = predict(loaded, body)["predictions"]
    expected = tf.nn.softmax(keras_models["classifier"].predict(texts, verbose=0)).numpy()
    np.testing.assert_allclose([p["probabilities"] for p in predictions], expected, atol=1e-5)
    with pytest.raises(ValueError):  # rows of different lengths, unpadded: TF Serving refuses them too
        predict(loaded, {"instances": [{"words": ["吾輩", "は"]}, {"words": ["猫"]}]})
