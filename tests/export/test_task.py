"""Task SavedModels: strings in, answers out; fresh-process parity, bad input, REST, warm-up, ops.

Writing exports (kbert.export.serving's write_export and write_models_config, through ``kbert export``
in this process): an export over an earlier one replaces it whole (no old warm-ups or stray file
left), a folder that is not an export is refused unless --overwrite, the model directory (or a
folder holding it) always; SIGTERM while an export over an earlier one is being written leaves the
old version, loadable, and no temporary folder; models.config keeps hand-written entries, lists
every export, and a damaged one is refused. Every refusal exits 1 with one line on stderr and leaves
the files byte for byte as they were."""

import json
import os
import re
import signal
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from kbert.export import rest
from kbert.export.task import export_task
from conftest import REFERENCE, REPO, TAGS, run_fresh_python
from conftest import TASK_LABELS as LABELS
from fixtures.export_contents import read_warmup_requests, saved_model_ops
from fixtures.file_tree import tree


def _reference_texts(n=24):
    rows = json.loads((REFERENCE / "minilm_encoder_inputs.json").read_text())["rows"]
    lines = [json.loads(line)["text"] for line in (REFERENCE / "wordpiece_uncased.jsonl").read_text().splitlines()]
    return [r["text_a"] for r in rows[:n // 2]] + lines[::250][: n // 2]


BAD = ["", "   ", "x" * 20000, "caf\u00e9 \u2603 \U0001F600 \u200b\u0301", "\u4e2d\u6587\u5b57", "\x00\x07 ctrl"]
BAD_BYTES = [b"\xff\xfe invalid \xc3\x28 utf-8", b"\xed\xa0\x80"]


@pytest.fixture(scope="module")
def exports(task_exports):
    """The task models and their exports (conftest.task_exports: made once, shared with other modules)."""
    return task_exports


def _call(export_dir, **inputs):
    loaded = tf.saved_model.load(str(export_dir))
    fn = loaded.signatures["serving_default"]
    return {k: v.numpy() for k, v in fn(**{k: tf.constant(v) for k, v in inputs.items()}).items()}


@pytest.mark.slow
def test_classifier_strings_in_labels_out_equal_the_keras_model(exports):
    model, path = exports["sst2"]
    texts = _reference_texts() + BAD
    out = _call(path, text=np.array(texts, dtype=object))
    expected = model.predict_proba(np.array(texts, dtype=object))
    assert np.abs(out["probabilities"] - expected).max() <= 1e-5
    assert [x.decode() for x in out["labels"]] == [LABELS[i] for i in expected.argmax(-1)]
    assert out["probabilities"].shape == (len(texts), 2)


@pytest.mark.slow
def test_bad_input_gives_defined_outputs(exports):
    _, path = exports["sst2"]
    out = _call(path, text=np.array(BAD_BYTES + [b""], dtype=object))
    assert out["probabilities"].shape == (3, 2) and np.isfinite(out["probabilities"]).all()
    empty = _call(path, text=np.zeros([0], dtype=object))
    assert empty["probabilities"].shape == (0, 2)
    loaded = tf.saved_model.load(str(path))
    with pytest.raises((tf.errors.InvalidArgumentError, TypeError, ValueError)):
        loaded.signatures["serving_default"](text=tf.constant([1.0, 2.0]))
    # The function behind the signature checks shapes against its input signature (the
    # signature wrapper itself, like TF Serving, only checks dtypes and names).
    with pytest.raises((TypeError, ValueError), match="(?i)signature|shape|incompatible"):
        loaded.serve({"text": tf.constant([["a"], ["b"]])})
    with pytest.raises((TypeError, ValueError)):
        loaded.signatures["serving_default"](texts=tf.constant(["a"]))  # wrong input name


@pytest.mark.slow
def test_pairs_regression_and_ids_signature(exports):
    model, path = exports["stsb"]
    a, b = _reference_texts(8), _reference_texts(16)[8:]
    out = _call(path, text_a=np.array(a, dtype=object), text_b=np.array(b, dtype=object))
    expected = model.predict({"text_a": np.array(a, dtype=object), "text_b": np.array(b, dtype=object)}, verbose=0)
    assert np.abs(out["scores"] - expected).max() <= 1e-5
    clf, clf_path = exports["mrpc"]
    packed = {k: v.numpy() for k, v in clf.preprocessor([tf.constant(a), tf.constant(b)]).items()}
    by_ids = tf.saved_model.load(str(clf_path)).signatures["serving_ids"](**{k: tf.constant(v) for k, v in packed.items()})
    by_text = _call(clf_path, text_a=np.array(a, dtype=object), text_b=np.array(b, dtype=object))
    assert np.abs(by_ids["probabilities"].numpy() - by_text["probabilities"]).max() <= 1e-5


@pytest.mark.slow
def test_tagger_words_tags_and_entity_offsets_equal_the_python_path(exports):
    model, path = exports["ner"]
    texts = ["John Smith lives in Zürich, Switzerland.", "", "Ünïcode — 中文 and emoji \U0001F600 here."]
    out = _call(path, text=np.array(texts, dtype=object))
    expected = model.predict_entities(texts)
    for i, (text, exp) in enumerate(zip(texts, expected)):
        n = out["num_words"][i]
        assert [w.decode() for w in out["words"][i][:n]] == [w["text"] for w in exp["words"]]
        assert [t.decode() for t in out["tags"][i][:n]] == [w["tag"] for w in exp["words"]]
        assert out["word_start"][i][:n].tolist() == [w["start"] for w in exp["words"]]
        m = out["num_entities"][i]
        got = [(out["entity_type"][i][j].decode(), out["entity_text"][i][j].decode(),
                int(out["entity_start"][i][j]), int(out["entity_end"][i][j])) for j in range(m)]
        assert got == [(e["type"], e["text"], e["start"], e["end"]) for e in exp["entities"]]
        for kind, span, start, end in got:
            assert text[start:end] == span


@pytest.mark.slow
def test_multiple_choice(exports):
    model, path = exports["swag"]
    inputs = {"context": np.array(["He opened the door", "She sat"], dtype=object),
              "choices": np.array([["and walked in.", "and sang.", "x", "y"], ["down.", "up.", "", "z"]], dtype=object)}
    out = _call(path, **inputs)
    expected = model.predict_logits({"text_a": inputs["context"], "choices": inputs["choices"]})
    assert np.abs(out["logits"] - expected).max() <= 1e-5
    assert out["choice_ids"].tolist() == expected.argmax(-1).tolist()


@pytest.mark.slow
def test_fresh_process_with_only_tensorflow_and_tensorflow_text(exports, tmp_path):
    model, path = exports["sst2"]
    texts = _reference_texts() + BAD
    result = tmp_path / "out.npy"
    run_fresh_python(f"""
import sys, numpy as np, tensorflow as tf, tensorflow_text
m = tf.saved_model.load({str(path)!r})
out = m.signatures["serving_default"](text=tf.constant({texts!r}))
np.save({str(result)!r}, out["probabilities"].numpy())
assert not [k for k in sys.modules if k.split(".")[0] in ("kbert", "keras_hub")]
""")
    expected = model.predict_proba(np.array(texts, dtype=object))
    assert np.abs(np.load(result) - expected).max() <= 1e-5


def test_rest_requests_as_tf_serving_builds_them(exports):
    _, path = exports["sst2"]
    loaded = tf.saved_model.load(str(path))
    row = rest.predict(loaded, {"instances": [{"text": "a gripping, funny film"}, {"text": "dull"}]})
    assert len(row["predictions"]) == 2 and set(row["predictions"][0]) == {"class_ids", "labels", "logits", "probabilities"}
    assert row["predictions"][0]["labels"] in LABELS
    col = rest.predict(loaded, {"inputs": {"text": ["a gripping, funny film", "dull"]}})
    assert col["outputs"]["labels"] == [p["labels"] for p in row["predictions"]]
    bare = rest.predict(loaded, {"instances": ["a gripping, funny film", "dull"]})
    assert bare == row
    with pytest.raises(rest.RestError, match="exactly one"):
        rest.predict(loaded, {"instances": [], "inputs": {}})


@pytest.mark.slow
def test_warmup_requests_replay(exports):
    for name, (_, path) in exports.items():
        logs = read_warmup_requests(path)
        assert logs, name
        loaded = tf.saved_model.load(str(path))
        for log in logs:
            request = log.predict_log.request
            fn = loaded.signatures[request.model_spec.signature_name]
            fn(**{k: tf.make_ndarray(v) for k, v in request.inputs.items()})


@pytest.mark.slow
def test_only_core_and_tensorflow_text_ops(exports):
    ops = sorted(set().union(*(saved_model_ops(p) for _, p in exports.values())))
    out = run_fresh_python(f"""
from tensorflow.python.framework import op_def_registry
import tensorflow as tf
ops = {ops!r}
core = [o for o in ops if op_def_registry.get(o) is not None]
import tensorflow_text
text = [o for o in ops if o not in core and op_def_registry.get(o) is not None]
missing = [o for o in ops if op_def_registry.get(o) is None]
print("TEXT", ",".join(text)); print("MISSING", ",".join(missing))
""")
    text_ops = out.split("TEXT ")[1].split("\n")[0].split(",")
    missing = out.split("MISSING ")[1].split("\n")[0]
    assert missing == "", missing
    readme = (REPO / "docs" / "serving.md").read_text(encoding="utf-8")
    for op in text_ops:
        if op:
            assert op in readme, f"docs/serving.md's list of tensorflow-text ops lacks {op}"


@pytest.mark.slow
def test_saved_model_cli_matches_readme(exports):
    import subprocess
    import sys

    readme = (REPO / "docs" / "serving.md").read_text(encoding="utf-8")
    for name in ("sst2", "ner"):
        shown = subprocess.run([sys.executable, "-m", "tensorflow.python.tools.saved_model_cli", "show", "--dir",
                                str(exports[name][1]), "--tag_set", "serve", "--signature_def", "serving_default"],
                               capture_output=True, text=True, timeout=300).stdout
        documented = re.search(rf"<!-- saved_model_cli {name} -->\n```\n(.*?)```", readme, re.S)
        assert documented, f"docs/serving.md has no saved_model_cli block for {name}"

        def signature(text):
            return sorted(re.findall(r"(inputs|outputs)\['(\w+)'\] tensor_info:\s+dtype: (\w+)\s+shape: (\S+)", text))

        assert signature(shown) and signature(shown) == signature(documented.group(1))


@pytest.mark.slow
def test_span_qa_export_answers_like_the_python_path(tmp_path, tiny_model_dir):
    from kbert.tasks import SpanQuestionAnswerer

    model = SpanQuestionAnswerer.from_model_dir(tiny_model_dir, seq_length=64, doc_stride=16, max_query_length=16)
    for w in model.head.weights:  # sharp, non-trivial logits
        w.assign(np.random.default_rng(2).normal(0, 15.0, w.shape).astype("float32"))
    model.save_model_dir(tmp_path / "squad")
    path = export_task(tmp_path / "squad", tmp_path / "saved_models" / "squad" / "1")
    context = ("Zürich, the largest city of Switzerland, lies at the north end of lake Zürich. " * 3
               + "東京 is far away 🎉 and so on.")
    questions, contexts = ["Where is Zürich?", "Which city?", ""], [context, "Short one.", ""]
    out = _call(path, question=np.array(questions, dtype=object), context=np.array(contexts, dtype=object))
    expected = model.answer(questions, contexts)
    for i, exp in enumerate(expected):
        text = exp["text"] if isinstance(exp, dict) else exp.text
        assert out["answer_text"][i].decode() == text
        if text:
            start = int(out["answer_start"][i])
            assert contexts[i][start:int(out["answer_end"][i])] == text
    bad = _call(path, question=np.array([b"\xff\xfe?"], dtype=object), context=np.array([b"ab \xc3\x28 cd"], dtype=object))
    assert bad["answer_text"].shape == (1,)  # invalid UTF-8 gives a defined answer, no error
    row = rest.predict(tf.saved_model.load(str(path)), {"instances": [{"question": questions[0], "context": context}]})
    assert set(row["predictions"][0]) == {"answer_text", "answer_start", "answer_end", "score", "null_score_diff"}


@pytest.mark.slow
def test_a_feature_based_tagger_export_tags_like_the_python_path(tmp_path, tiny_model_dir):
    """A tagger with a frozen encoder's layers into two BiLSTMs (--features, --bilstm) as a SavedModel:
    the same tags for every word as the Keras model (the ONNX export refuses it: tests/export/onnx)."""
    from kbert.tasks import TokenTagger

    model = TokenTagger.from_model_dir(tiny_model_dir, label_names=TAGS, seq_length=32,
                                       features="sum_all_layers", bilstm=8)
    dense = model.head.dense
    dense.kernel.assign(np.random.default_rng(3).normal(0, 3.0, dense.kernel.shape).astype("float32"))
    model.save_model_dir(tmp_path / "ner")
    path = export_task(tmp_path / "ner", tmp_path / "saved_models" / "ner" / "1")
    texts = ["John Smith lives in Zürich, Switzerland.", "a", "Ünïcode and more words than the first one here ."]
    out = _call(path, text=np.array(texts, dtype=object))
    expected = model.predict_entities(texts)
    tags = set()
    for i, exp in enumerate(expected):
        n = out["num_words"][i]
        assert [t.decode() for t in out["tags"][i][:n]] == [w["tag"] for w in exp["words"]]
        tags.update(w["tag"] for w in exp["words"])
    assert len(tags) > 1  # the check saw more than one tag


@pytest.mark.slow
def test_each_function_of_a_task_export_is_traced_once(tmp_path, tiny_model_dir, monkeypatch):
    """The save reuses the traces the export made (kbert.compat.tracing_for_save): tracing a
    tokenizer and an encoder takes seconds, and the save used to trace each function again."""
    import collections

    from tensorflow.python.eager.polymorphic_function import tracing_compilation

    from kbert.tasks import TextClassifier

    traced = collections.Counter()
    trace = tracing_compilation._create_concrete_function  # runs once per trace (a cache miss)

    def counting(function_type, type_context, func_graph, tracing_options):
        traced[tracing_options.name] += 1
        return trace(function_type, type_context, func_graph, tracing_options)

    TextClassifier.from_model_dir(tiny_model_dir, num_classes=2, seq_length=32).save_model_dir(tmp_path / "m")
    monkeypatch.setattr(tracing_compilation, "_create_concrete_function", counting)
    export_task(tmp_path / "m", tmp_path / "saved_models" / "m" / "1", warmup=False)
    # serve and serve_ids once each; endpoint once per input form (the dict and the bare strings)
    assert (traced["serve"], traced["serve_ids"], traced["endpoint"]) == (1, 1, 2), traced


# -- writing exports: over earlier ones, over other folders, interrupted; models.config -----------------
def _load_signature_inputs(path):
    import tensorflow as tf

    loaded = tf.saved_model.load(str(path))
    return sorted(loaded.signatures["serving_default"].structured_input_signature[1])


@pytest.mark.slow
def test_an_export_over_an_earlier_one_replaces_it_whole(kbert_cli, csv_classifiers, tmp_path):
    out = tmp_path / "saved_models" / "cls" / "1"
    status, _ = kbert_cli("export", ["task", csv_classifiers / "cls", out])
    assert status == 0
    first = tree(out)
    assert "assets.extra/tf_serving_warmup_requests" in first and "fingerprint.pb" in first
    # Leftovers of an older export (another model's warm-ups, a stray file) must not survive.
    (out / "assets.extra" / "tf_serving_warmup_requests").write_bytes(b"an old model's warm-up")
    (out / "stale.txt").write_text("from before")
    status, _ = kbert_cli("export", ["task", csv_classifiers / "cls", out, "--no-warmup"])
    assert status == 0
    second = tree(out)
    assert "stale.txt" not in second and "assets.extra/tf_serving_warmup_requests" not in second
    assert second["fingerprint.pb"] and sorted(p.name for p in out.parent.iterdir()) == ["1"]  # no temp folder
    assert _load_signature_inputs(out) == ["text"]


@pytest.mark.slow
def test_an_export_refuses_a_folder_it_did_not_make_and_the_model_itself(kbert_cli, tiny_model_dir, tmp_path):
    out = tmp_path / "saved_models" / "enc" / "1"
    out.mkdir(parents=True)
    (out / "notes.txt").write_text("not an export")
    before, model_before = tree(tmp_path), tree(tiny_model_dir)
    status, err = kbert_cli("export", ["preprocessor", tiny_model_dir, out])
    assert status == 1 and err == [f"kbert export: error: {out} already exists; pass --overwrite to replace it whole"]
    for target in (tiny_model_dir, tiny_model_dir.parent):
        status, err = kbert_cli("export", ["encoder", tiny_model_dir, target, "--overwrite"])
        also = "" if target == tiny_model_dir else f" ({tiny_model_dir})"
        assert status == 1 and err == [f"kbert export: error: {target} is an input of this command{also}: "
                                       "writing it would destroy that input; choose another output"]
    assert tree(tmp_path) == before and tree(tiny_model_dir) == model_before
    status, _ = kbert_cli("export", ["preprocessor", tiny_model_dir, out, "--overwrite"])
    assert status == 0 and not (out / "notes.txt").exists() and (out / "saved_model.pb").exists()


@pytest.mark.slow
def test_models_config_keeps_hand_edits_and_lists_every_export(kbert_cli, tiny_model_dir, tmp_path):
    from kbert.export.serving import write_models_config

    root = tmp_path / "saved_models"
    (root / "old" / "3").mkdir(parents=True)
    (root / "old" / "3" / "saved_model.pb").write_bytes(b"")
    hand = ('# my server\nmodel_config_list {\n  config {\n    name: "old"\n    base_path: "/srv/old"\n'
            '    model_platform: "tensorflow"\n    model_version_policy { all {} }\n  }\n}\n# the end\n')
    (root / "models.config").write_text(hand)
    (root / "batching_parameters.txt").write_text("max_batch_size { value: 4 }\n")
    status, err = kbert_cli("export", ["preprocessor", tiny_model_dir, root / "pre" / "1"])
    assert status == 0, err
    text = (root / "models.config").read_text()
    assert text.startswith(hand[:hand.index("  }\n}") + 4]) and text.endswith("}\n# the end\n")
    assert 'name: "pre"' in text and text.count("config {") == 2
    assert (root / "batching_parameters.txt").read_text() == "max_batch_size { value: 4 }\n"
    from google.protobuf import text_format
    from tensorflow_serving.config import model_server_config_pb2

    parsed = text_format.Parse(text, model_server_config_pb2.ModelServerConfig())
    assert [(c.name, c.base_path) for c in parsed.model_config_list.config] == [("old", "/srv/old"),
                                                                                 ("pre", "/models/pre")]
    assert write_models_config(root).read_text() == text  # nothing new: the file is left as it is
    (root / "models.config").write_text("model_config_list { config { name: ")  # damaged by hand
    (root / "pre" / "2").mkdir()
    (root / "pre" / "2" / "saved_model.pb").write_bytes(b"")
    before = tree(root)
    with pytest.raises(ValueError, match="models.config is not a TF Serving model config"):
        write_models_config(root)
    assert tree(root) == before


@pytest.mark.slow
def test_sigterm_during_an_export_leaves_the_old_version_loadable(csv_classifiers, tmp_path):
    """The export is stopped while its new version is half written (its warm-up step made to wait):
    the old version is untouched and loads; no temporary folder is left."""
    import tensorflow as tf

    out = tmp_path / "saved_models" / "cls" / "1"
    from kbert.export.task import export_task

    export_task(csv_classifiers / "cls", out, warmup=False)
    before = tree(out)
    code = ("import sys, time\n"
            "import kbert.export.task as task\n"
            "def slow(*args, **kwargs):\n"
            "    print('writing', flush=True)\n"
            "    time.sleep(600)\n"
            "task.write_warmup_requests = slow\n"
            "from kbert.cli_support import run\n"
            "from kbert.commands.export import main\n"
            f"sys.exit(run('export', main, ['task', {str(csv_classifiers / 'cls')!r}, {str(out)!r}]))\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path, env=env)
    try:
        assert proc.stdout.readline().strip() == "writing"  # the new saved_model.pb is on disk beside it now
        temporary = [p for p in out.parent.iterdir() if p.name.startswith(".tmp-")]
        assert temporary and (temporary[0] / "saved_model.pb").exists()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    # (TensorFlow's own threads may log a line after it, so it is looked for among the lines)
    assert proc.returncode == 143 and (
        "kbert export: stopped by SIGTERM (removed 1 unfinished folder(s) beside the output)" in err.splitlines())
    assert tree(out) == before and sorted(p.name for p in out.parent.iterdir()) == ["1"]
    assert sorted(tf.saved_model.load(str(out)).signatures) == ["serving_default", "serving_ids"]
