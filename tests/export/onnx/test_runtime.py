"""kbert predict --onnx (kbert.export.onnx.runtime, TaskModel.network_runner): the predictions file of the
Keras path, from ONNX Runtime, on SST-2 dev, CoNLL-2003 valid and a SQuAD dev sample; tokenizer.json and
ONNX Runtime alone give the same SST-2 labels; an export of another model is refused."""

import csv
import json

import numpy as np
import pytest

from conftest import SHARED, require

ort = require("onnxruntime")
tokenizers = require("tokenizers")

from kbert.export.onnx.export import export_onnx  # noqa: E402


@pytest.fixture
def predict(monkeypatch, capsys):
    """predict(model_dir, *flags) -> (status, stdout, stderr) of ``kbert predict`` in this process."""
    import kbert.cli_support as cli_support
    from kbert.cli import load_main

    monkeypatch.setattr(cli_support, "quiet_setup", lambda: None)

    def call(*argv):
        capsys.readouterr()
        status = cli_support.run("predict", load_main("predict"), [str(a) for a in argv] + ["--quiet"])
        out = capsys.readouterr()
        return status, out.out, out.err

    return call


def both_ways(predict, model_dir, export, data, tmp_path, *flags):
    """The predictions files of the Keras model and of its ONNX export (as text)."""
    texts = []
    for name, extra in (("keras", ()), ("onnx", ("--onnx", export))):
        status, out, err = predict(model_dir, "--input", data, "--output", tmp_path / f"{name}.jsonl", *flags, *extra)
        assert status == 0, err
        texts.append((tmp_path / f"{name}.jsonl").read_text())
    assert "ONNX Runtime" in out
    return texts


@pytest.mark.slow
def sentences():
    with open(SHARED / "glue" / "SST-2" / "dev.tsv", encoding="utf-8") as f:
        return [row["sentence"] for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]


@pytest.fixture(scope="module")
def sst2_dir(task_export_paths, tmp_path_factory):
    """conftest's random-head SST-2 classifier, its bias moved so that half of the dev sentences are
    positive: a model whose labels differ from row to row."""
    from kbert.tasks import load_task_model

    model = load_task_model(task_export_paths["sst2"][0])
    logits = model.predict_logits(np.asarray(sentences()[:200], dtype=object))
    bias = model.head.dense.bias
    bias.assign(bias.numpy() + np.asarray([0.0, -np.median(logits[:, 1] - logits[:, 0])], "float32"))
    return model.save_model_dir(tmp_path_factory.mktemp("onnx_sst2") / "sst2")


def assert_same_predictions(keras_file, onnx_file, tolerance=1e-5):
    """The same rows, ids, labels, tags and answers; numbers (probabilities, scores) within ``tolerance``."""
    def same(a, b):
        if isinstance(a, float) or isinstance(b, float):
            return abs(a - b) <= tolerance
        if isinstance(a, dict):
            return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        if isinstance(a, list):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
        return a == b

    keras_rows, onnx_rows = ([json.loads(line) for line in f.splitlines()] for f in (keras_file, onnx_file))
    assert len(keras_rows) == len(onnx_rows)
    for k, o in zip(keras_rows, onnx_rows):
        assert same(k, o), (k, o)


@pytest.mark.slow
def test_sst2_dev_labels_are_the_keras_models(predict, sst2_dir, tmp_path):
    model_dir = sst2_dir
    export_onnx(model_dir, tmp_path / "onnx")
    keras_file, onnx_file = both_ways(predict, model_dir, tmp_path / "onnx", SHARED / "glue" / "SST-2" / "dev.tsv",
                                      tmp_path, "--text-columns", "sentence")
    assert keras_file == onnx_file and len(keras_file.splitlines()) == 872
    assert len({json.loads(line)["label"] for line in keras_file.splitlines()}) == 2  # a model that tells them apart


@pytest.mark.slow
def test_tokenizer_json_and_onnx_runtime_alone_give_the_same_labels(predict, sst2_dir, tmp_path):
    """What a client without kbert runs: the export's tokenizer.json (Rust tokenizers) and model.onnx."""
    model_dir = sst2_dir
    export_onnx(model_dir, tmp_path / "onnx")
    data = SHARED / "glue" / "SST-2" / "dev.tsv"
    assert predict(model_dir, "--input", data, "--output", tmp_path / "keras.jsonl", "--text-columns", "sentence")[0] == 0
    want = [json.loads(line)["label"] for line in (tmp_path / "keras.jsonl").read_text().splitlines()]
    texts = sentences()
    tokenizer = tokenizers.Tokenizer.from_file(str(tmp_path / "onnx" / "tokenizer.json"))
    session = ort.InferenceSession(str(tmp_path / "onnx" / "model.onnx"), providers=["CPUExecutionProvider"])
    got = []
    for start in range(0, len(texts), 64):
        encodings = tokenizer.encode_batch(texts[start:start + 64])
        feeds = {name: np.asarray([getattr(e, field) for e in encodings], np.int32) for name, field in (
            ("input_word_ids", "ids"), ("input_mask", "attention_mask"), ("input_type_ids", "type_ids"))}
        got += session.run(["labels"], feeds)[0].tolist()
    assert got == want


@pytest.mark.slow
def test_conll_valid_tags_are_the_keras_models(predict, task_export_paths, tmp_path):
    model_dir, _ = task_export_paths["ner"]
    export_onnx(model_dir, tmp_path / "onnx")
    keras_file, onnx_file = both_ways(predict, model_dir, tmp_path / "onnx", SHARED / "conll2003" / "valid.txt",
                                      tmp_path)
    assert keras_file == onnx_file and len(keras_file.splitlines()) == 3250


@pytest.mark.slow
def test_squad_answers_are_the_keras_models(predict, tiny_model_dir, tmp_path):
    import kbert

    model = kbert.SpanQuestionAnswerer.from_model_dir(tiny_model_dir, seq_length=64, max_query_length=16,
                                                      doc_stride=24)
    for w in model.head.weights:
        w.assign(np.random.default_rng(1).normal(0, 0.5, w.shape).astype("float32"))
    model_dir = model.save_model_dir(tmp_path / "squad")
    export_onnx(model_dir, tmp_path / "onnx")
    squad = json.loads((SHARED / "squad" / "dev-v1.1.json").read_text())
    squad["data"] = squad["data"][:1]  # the first article: 100-odd questions, contexts of several windows
    (tmp_path / "dev.json").write_text(json.dumps(squad))
    keras_file, onnx_file = both_ways(predict, model_dir, tmp_path / "onnx", tmp_path / "dev.json", tmp_path,
                                      "--probabilities")
    answers = [json.loads(line) for line in keras_file.splitlines()]
    assert [a["answer"] for a in answers] == [json.loads(line)["answer"] for line in onnx_file.splitlines()]
    assert len(answers) > 100 and len({a["answer"] for a in answers}) > 10


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mrpc", "stsb", "swag"])
def test_pairs_scores_and_choices_are_the_keras_models(predict, task_export_paths, tmp_path, name):
    model_dir, _ = task_export_paths[name]
    export_onnx(model_dir, tmp_path / "onnx")
    if name == "swag":
        data = tmp_path / "val.csv"
        with open(data, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["", "video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source",
                        "ending0", "ending1", "ending2", "ending3"])
            for i, (a, b) in enumerate([("She opened the fridge.", "She"), ("The man ran.", "He"),
                                        ("Ünïcode wörds — 字.", "It")] * 3):
                w.writerow([i, f"v{i}", i, f"{a} {b}", a, b, "gold", "took out milk.", "flew away.", "sang.", "ate."])
    else:
        data = tmp_path / "pairs.jsonl"
        data.write_text("".join(json.dumps({"text_a": a, "text_b": b}) + "\n" for a, b in [
            ("a man plays a guitar", "someone plays music"), ("the cat sleeps", "a dog barks loudly"),
            ("Ünïcode wörds", "ΑΣ ΟΔΟΣ")] * 5))
    flags = () if name == "stsb" else ("--probabilities",)  # a score is a number anyway
    keras_file, onnx_file = both_ways(predict, model_dir, tmp_path / "onnx", data, tmp_path, *flags)
    assert_same_predictions(keras_file, onnx_file)


@pytest.mark.slow
@pytest.mark.parametrize("pooling", ["mean", "max", "logmeanexp", "attention"])
def test_long_documents_are_pooled_as_the_keras_model_pools_them(predict, tiny_model_dir, tmp_path, monkeypatch,
                                                                 pooling):
    """SST-2 dev sentences read in windows of 16 positions: ONNX Runtime answers every window, kbert
    predict --onnx pools them (by the windows' attention weights under attention) into the Keras
    model's labels and probabilities."""
    import kbert
    from kbert.export.onnx import runtime

    rows, run = [], runtime.OnnxRunner.__call__
    monkeypatch.setattr(runtime.OnnxRunner, "__call__", lambda self, batch: rows.append(len(batch["input_mask"]))
                        or run(self, batch))

    model = kbert.TextClassifier.from_model_dir(tiny_model_dir, label_names=["negative", "positive"], seq_length=16,
                                                long_documents="windows", doc_stride=8, window_pooling=pooling)
    for w in model.head.weights:
        w.assign(np.random.default_rng(1).normal(0, 0.5, w.shape).astype("float32"))
    texts = sentences()[:100]
    document = model.window_ids(np.asarray(texts, dtype=object))[1]
    assert np.bincount(document).max() >= 3  # documents of several windows
    model_dir = model.save_model_dir(tmp_path / "docs")
    export_onnx(model_dir, tmp_path / "onnx")
    data = tmp_path / "docs.jsonl"
    data.write_text("".join(json.dumps({"text": text}) + "\n" for text in texts))
    keras_file, onnx_file = both_ways(predict, model_dir, tmp_path / "onnx", data, tmp_path, "--probabilities")
    assert_same_predictions(keras_file, onnx_file)
    assert sum(rows) == len(document)  # each window once, through ONNX Runtime


@pytest.mark.slow
def test_an_export_of_another_model_is_refused(predict, tmp_path):
    import kbert

    base = kbert.random_model_dir(tmp_path / "tiny")
    first = kbert.TextClassifier.from_model_dir(base, num_classes=2, seq_length=16).save_model_dir(tmp_path / "a")
    export_onnx(first, tmp_path / "onnx")
    data = tmp_path / "rows.jsonl"
    data.write_text('{"text": "a good movie"}\n')
    tagger = kbert.TokenTagger.from_model_dir(base, label_names=["O", "B-X"], seq_length=16)
    tagger_dir = tagger.save_model_dir(tmp_path / "b")
    status, _, err = predict(tagger_dir, "--input", data, "--output", tmp_path / "out.jsonl", "--task-format", "lines",
                             "--onnx", tmp_path / "onnx")
    assert status == 1 and "holds a text_classifier model" in err and f"{tagger_dir} a token_tagger model" in err
    retrained = kbert.TextClassifier.from_model_dir(base, num_classes=2, seq_length=16)
    retrained.head.weights[1].assign(np.ones(2, "float32"))
    retrained.save_model_dir(tmp_path / "a")  # the same directory, other weights
    status, _, err = predict(first, "--input", data, "--output", tmp_path / "out.jsonl", "--onnx", tmp_path / "onnx")
    assert status == 1 and "classifier.weights.h5" in err and "differ): export it again" in err
    assert not (tmp_path / "out.jsonl").exists()
