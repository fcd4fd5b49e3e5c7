"""Nothing lost, nothing leaked: outputs that already exist, interrupted exports, huge inputs and the
silent oddities of a careless run.

Faults injected (counted in FAULTS, printed after the module's tests by report_faults):
- ``kbert predict`` with --output equal to --input, to a file of the model directory, over an existing
  file (refused unless --overwrite, then replaced whole);
- ``kbert features`` over an existing .npz and over its input;
- a JSON line holding a lone surrogate, two rows with one id, a multi-label row ``[""]``;
- ``kbert finetune --max-train-examples 0`` and ``-1``;
- a directory replacement (the step under every export) failing mid-write and at the swap;
- ``kbert export`` over an earlier export (replaced whole: no old warm-ups or fingerprint), over a
  folder that is not an export (refused unless --overwrite), into the model directory itself; SIGTERM
  while an export over an earlier one is being written (the old version stays, loadable);
- ``models.config`` with a hand-written entry (kept), exports of every kind listed;
- one 250,000-character line through a MeCab tokenizer (MeCab alone segfaults from ~190,000);
- fill-mask with the [MASK] past the model's cut, next-sentence and attention on texts longer than it.

Every refused command is checked for its one line on stderr, exit status 1 (``kbert explore``'s
own errors: 2) and a tree of files byte for byte as it was.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import keras
import numpy as np
import pytest

from conftest import REPO, SHARED, python

FAULTS = collections.Counter()


def tree(root) -> dict:
    """{relative path: sha256} of every file under ``root`` (folders as "dir"): the whole state."""
    root = pathlib.Path(root)
    out = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        out[rel] = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture
def cli(monkeypatch, capsys):
    """cli(name, argv) -> (status, stderr lines): the command through kbert.cli_support.run, in this
    process (its stderr filter, which needs a process of its own, left out)."""
    import kbert.cli_support as cli_support
    from kbert.cli import load_main

    monkeypatch.setattr(cli_support, "quiet_setup", lambda: None)

    def call(name, argv):
        command_main = load_main(name)
        capsys.readouterr()
        status = cli_support.run(name, command_main, [str(a) for a in argv])
        return status, capsys.readouterr().err.strip().splitlines()

    return call


@pytest.fixture(scope="module")
def models(tmp_path_factory, tiny_model_dir):
    """A single-text classifier and a multi-label classifier (random heads) beside the tiny encoder."""
    from kbert.tasks import MultiLabelClassifier, TextClassifier

    keras.utils.set_random_seed(0)
    root = tmp_path_factory.mktemp("outputs")
    TextClassifier.from_model_dir(tiny_model_dir, label_names=["negative", "positive"], seq_length=32) \
        .save_model_dir(root / "cls", extra_info={"task_name": "csv", "text_columns": ["text"],
                                                  "label_column": "label"})
    MultiLabelClassifier.from_model_dir(tiny_model_dir, label_names=["art", "place"], seq_length=32) \
        .save_model_dir(root / "multi", extra_info={"task_name": "csv", "text_columns": ["text"],
                                                    "label_column": "labels"})
    return root


def _rows(path, *records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# -- prediction files -------------------------------------------------------------------------------
def test_predict_never_writes_over_its_input_or_the_model(cli, models, tmp_path):
    same = _rows(tmp_path / "same.jsonl", {"text": "a fine film"}, {"text": "dull"})
    before, model_before = tree(tmp_path), tree(models / "cls")
    status, err = cli("predict", [models / "cls", "--input", same, "--output", same, "--overwrite"])
    assert status == 1 and err == [f"kbert predict: error: {same} is an input of this command: writing it would "
                                   "destroy that input; choose another output"]
    # The same file under another name (a symbolic link) is the same input.
    link = tmp_path / "link.jsonl"
    link.symlink_to(same)
    before = tree(tmp_path)
    status, err = cli("predict", [models / "cls", "--input", same, "--output", link, "--overwrite"])
    assert status == 1 and len(err) == 1 and "is an input of this command" in err[0]
    target = models / "cls" / "kbert.json"
    status, err = cli("predict", [models / "cls", "--input", same, "--output", target, "--overwrite"])
    assert status == 1 and err == [f"kbert predict: error: {target} is an input of this command: writing it would "
                                   "destroy that input; choose another output"]
    assert tree(tmp_path) == before and tree(models / "cls") == model_before
    FAULTS["predict --output is an input (same path, a link to it, a model file)"] += 3


def test_predict_refuses_an_existing_output_unless_overwrite(cli, models, tmp_path):
    src = _rows(tmp_path / "in.jsonl", {"text": "a fine film"}, {"text": "dull"})
    out = tmp_path / "out.jsonl"
    out.write_text("someone's notes\n")
    before = tree(tmp_path)
    status, err = cli("predict", [models / "cls", "--input", src, "--output", out, "--quiet"])
    assert status == 1 and err == [f"kbert predict: error: {out} already exists; pass --overwrite to replace it whole"]
    assert tree(tmp_path) == before
    status, _ = cli("predict", [models / "cls", "--input", src, "--output", out, "--quiet", "--overwrite"])
    assert status == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["1", "2"] and all(r["label"] in ("negative", "positive") for r in rows)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]  # no temporary file left
    FAULTS["predict over an existing output"] += 1


def test_features_refuse_an_existing_output_and_their_input(cli, tiny_model_dir, tmp_path):
    rows = _rows(tmp_path / "rows.jsonl", {"text_a": "a cat"})
    out = tmp_path / "out.npz"
    out.write_bytes(b"earlier arrays")
    before = tree(tmp_path)
    status, err = cli("features", [tiny_model_dir, "--input", rows, "--output", out])
    assert status == 1 and err == [f"kbert features: error: {out} already exists; pass --overwrite to replace it whole"]
    status, err = cli("features", [tiny_model_dir, "--input", out, "--output", out, "--overwrite"])
    assert status == 1 and len(err) == 1 and "is an input of this command" in err[0]
    assert tree(tmp_path) == before
    FAULTS["features --output existing / an input"] += 2


@pytest.mark.parametrize("case", ["surrogate", "duplicate id", "empty label name"])
def test_odd_rows_are_one_line_naming_file_line_and_field(cli, models, tmp_path, case):
    src = tmp_path / "in.jsonl"
    if case == "surrogate":  # valid JSON, but no text: json.loads gives a str that cannot be encoded
        src.write_text('{"text": "fine"}\n{"text": "caf\\u00e9 \\ud800 bar"}\n', encoding="utf-8")
        model, extra = "cls", []
        expected = (f"{src}, line 2: field 'text': got 'café \\ud800 bar'; expected text without lone surrogates "
                    "(a \\ud800-\\udfff escape that is not half of a pair)")
    elif case == "duplicate id":
        _rows(src, {"id": "q1", "text": "a"}, {"id": "q2", "text": "b"}, {"id": "q1", "text": "c"})
        model, extra = "cls", ["--id-column", "id"]
        expected = f"{src}, line 3: field 'id': got 'q1'; expected a unique id (line 1 has the same one)"
    else:
        _rows(src, {"text": "a", "labels": ["art"]}, {"text": "b", "labels": [""]})
        model, extra = "multi", []
        expected = (f"{src}, line 2: field 'labels': got ''; expected a non-empty label name (an empty list [] "
                    "means none of the labels)")
    before = tree(tmp_path)
    status, err = cli("predict", [models / model, "--input", src, "--output", tmp_path / "out.jsonl", *extra])
    assert status == 1 and err == [f"kbert predict: error: {expected}"]
    assert tree(tmp_path) == before
    FAULTS[f"predict input: {case}"] += 1


def test_every_reader_refuses_two_rows_with_one_id(models, tmp_path):
    """Readers whose ids come from the file itself (here SQuAD-like rows through the generic check of
    kbert.predict): two rows with one id would be two predictions under one name."""
    from kbert.errors import DataError
    from kbert.tasks.core.predict import check_unique_ids as _check_unique_ids

    with pytest.raises(DataError, match=r"x\.jsonl \(whole file\): field 'id': got 'b'; expected a unique id per "
                                        r"row \(rows 2 and 4 share it\)"):
        _check_unique_ids(tmp_path / "x.jsonl", [{"id": "a"}, {"id": "b"}, {"id": "c"}, {"id": "b"}])
    FAULTS["duplicate ids (generic check)"] += 1


def test_training_labels_cannot_name_an_empty_class(tmp_path):
    from kbert.data.table import read_table
    from kbert.errors import DataError

    path = _rows(tmp_path / "train.jsonl", {"text": "a", "labels": ["art", "place"]}, {"text": "b", "labels": [""]},
                 {"text": "c", "labels": []})
    with pytest.raises(DataError, match=r"line 2: field 'labels': got ''; expected a non-empty label name"):
        read_table(path, "text", "labels", multi_label=True)
    path = _rows(tmp_path / "train.jsonl", {"text": "a", "labels": ["art"]}, {"text": "c", "labels": []})
    assert read_table(path, "text", "labels", multi_label=True).label_names == ("art",)  # [] still means none
    FAULTS["multi-label row [''] (training file)"] += 1


# -- fine-tuning options ----------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["0", "-1"])
def test_finetune_max_train_examples_below_one_is_one_line(cli, tiny_model_dir, tmp_path, value):
    train = _rows(tmp_path / "train.jsonl", {"text": "a", "label": "x"}, {"text": "b", "label": "y"})
    before = tree(tmp_path)
    status, err = cli("finetune", ["--task", "jsonl", "--init", tiny_model_dir, "--model-dir", tmp_path / "run",
                                   "--train-file", train, "--eval-file", train, "--max-train-examples", value])
    assert status == 1 and err == [
        f"kbert finetune: error: max_train_examples (--max-train-examples) must be a positive whole number "
        f"(leave it out to use every example), got {value}"]
    assert tree(tmp_path) == before
    FAULTS[f"finetune --max-train-examples {value}"] += 1


def test_finetune_options_check_their_counts_for_every_caller():
    from kbert.tasks.core.options import FinetuneOptions, OptionsError

    for name in ("max_train_examples", "max_eval_examples", "batch_size", "eval_batch_size"):
        with pytest.raises(OptionsError, match=f"{name} .* got 0"):
            FinetuneOptions(task="x", init="x", model_dir="x", **{name: 0})
    assert FinetuneOptions(task="x", init="x", model_dir="x", max_train_examples=1).max_train_examples == 1


# -- exports ----------------------------------------------------------------------------------------


def _load_signature_inputs(path):
    import tensorflow as tf

    loaded = tf.saved_model.load(str(path))
    return sorted(loaded.signatures["serving_default"].structured_input_signature[1])


@pytest.mark.slow
def test_an_export_over_an_earlier_one_replaces_it_whole(cli, models, tmp_path):
    out = tmp_path / "saved_models" / "cls" / "1"
    status, _ = cli("export", ["task", models / "cls", out])
    assert status == 0
    first = tree(out)
    assert "assets.extra/tf_serving_warmup_requests" in first and "fingerprint.pb" in first
    # Leftovers of an older export (another model's warm-ups, a stray file) must not survive.
    (out / "assets.extra" / "tf_serving_warmup_requests").write_bytes(b"an old model's warm-up")
    (out / "stale.txt").write_text("from before")
    status, _ = cli("export", ["task", models / "cls", out, "--no-warmup"])
    assert status == 0
    second = tree(out)
    assert "stale.txt" not in second and "assets.extra/tf_serving_warmup_requests" not in second
    assert second["fingerprint.pb"] and sorted(p.name for p in out.parent.iterdir()) == ["1"]  # no temp folder
    assert _load_signature_inputs(out) == ["text"]
    FAULTS["export over an earlier export (old warm-ups, stray file)"] += 1


@pytest.mark.slow
def test_an_export_refuses_a_folder_it_did_not_make_and_the_model_itself(cli, models, tiny_model_dir, tmp_path):
    out = tmp_path / "saved_models" / "enc" / "1"
    out.mkdir(parents=True)
    (out / "notes.txt").write_text("not an export")
    before, model_before = tree(tmp_path), tree(tiny_model_dir)
    status, err = cli("export", ["preprocessor", tiny_model_dir, out])
    assert status == 1 and err == [f"kbert export: error: {out} already exists; pass --overwrite to replace it whole"]
    for target in (tiny_model_dir, tiny_model_dir.parent):
        status, err = cli("export", ["encoder", tiny_model_dir, target, "--overwrite"])
        also = "" if target == tiny_model_dir else f" ({tiny_model_dir})"
        assert status == 1 and err == [f"kbert export: error: {target} is an input of this command{also}: "
                                       "writing it would destroy that input; choose another output"]
    assert tree(tmp_path) == before and tree(tiny_model_dir) == model_before
    status, _ = cli("export", ["preprocessor", tiny_model_dir, out, "--overwrite"])
    assert status == 0 and not (out / "notes.txt").exists() and (out / "saved_model.pb").exists()
    FAULTS["export over a folder that is not an export"] += 1
    FAULTS["export into (or over) the model directory"] += 2


@pytest.mark.slow
def test_models_config_keeps_hand_edits_and_lists_every_export(cli, models, tiny_model_dir, tmp_path):
    from kbert.export.serving import write_models_config

    root = tmp_path / "saved_models"
    (root / "old" / "3").mkdir(parents=True)
    (root / "old" / "3" / "saved_model.pb").write_bytes(b"")
    hand = ('# my server\nmodel_config_list {\n  config {\n    name: "old"\n    base_path: "/srv/old"\n'
            '    model_platform: "tensorflow"\n    model_version_policy { all {} }\n  }\n}\n# the end\n')
    (root / "models.config").write_text(hand)
    (root / "batching_parameters.txt").write_text("max_batch_size { value: 4 }\n")
    status, err = cli("export", ["preprocessor", tiny_model_dir, root / "pre" / "1"])
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
    FAULTS["models.config edited by hand (kept; damaged: refused)"] += 2


@pytest.mark.slow
def test_sigterm_during_an_export_leaves_the_old_version_loadable(models, tmp_path):
    """The export is stopped while its new version is half written (its warm-up step made to wait):
    the old version is untouched and loads; no temporary folder is left."""
    import tensorflow as tf

    out = tmp_path / "saved_models" / "cls" / "1"
    from kbert.export.task import export_task

    export_task(models / "cls", out, warmup=False)
    before = tree(out)
    code = ("import sys, time\n"
            "import kbert.export.task as task\n"
            "def slow(*args, **kwargs):\n"
            "    print('writing', flush=True)\n"
            "    time.sleep(600)\n"
            "task.write_warmup_requests = slow\n"
            "from kbert.cli_support import run\n"
            "from kbert.commands.export import main\n"
            f"sys.exit(run('export', main, ['task', {str(models / 'cls')!r}, {str(out)!r}]))\n")
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
    assert proc.returncode == 130 and err.strip().splitlines()[-1] == "kbert export: interrupted"
    assert tree(out) == before and sorted(p.name for p in out.parent.iterdir()) == ["1"]
    assert sorted(tf.saved_model.load(str(out)).signatures) == ["serving_default", "serving_ids"]
    FAULTS["SIGTERM during an export over an earlier one"] += 1


# -- huge inputs -------------------------------------------------------------------------------------
def test_mecab_pieces_cut_long_text_where_it_can():
    from kbert.text.mecab_limits import MECAB_MAX_CHARS, mecab_pieces

    text = ("吾輩は猫である。" * 20_000) + ("a" * 120_000)
    pieces = mecab_pieces(text)
    assert "".join(pieces) == text and all(len(p) <= MECAB_MAX_CHARS for p in pieces)
    assert all(p.endswith("。") for p in pieces[:3])  # after a sentence end where there is one
    assert mecab_pieces("short") == ["short"]


@pytest.mark.slow
def test_one_huge_line_through_a_mecab_tokenizer_is_tokenized(tmp_path):
    """250,000 characters of one letter in one line: MeCab alone segfaults from ~190,000 (exit 139,
    no message); kbert gives it pieces and answers."""
    line = "a" * 250_000
    run = subprocess.run([*python("-m", "kbert.tokenize"), str(SHARED / "vocab" / "ja-mecab-wordpiece" /
                                                                      "vocab.txt"), "--tokenizer", "mecab-wordpiece"],
                         input=line + "\nok\n", capture_output=True, text=True, cwd=REPO, timeout=600,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert run.returncode == 0, run.stderr[-2000:]
    rows = [json.loads(r) for r in run.stdout.splitlines()]
    assert len(rows) == 2 and len(rows[0]["ids"]) > 1000
    assert "".join(t.removeprefix("##") for t in rows[0]["tokens"]) == line  # every letter is there, in order
    assert "".join(t.removeprefix("##") for t in rows[1]["tokens"]) == "ok"  # and the next line is its own
    FAULTS["one 250,000-character line through MeCab"] += 1


# -- what the cut drops --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def heads_dir(tmp_path_factory):
    """A tiny random model directory with MLM and NSP heads (cut at 128 tokens)."""
    from kbert import BertConfig, BertEncoder
    from kbert.layers.heads import build_head
    from kbert.model_dir import save_model_dir

    keras.utils.set_random_seed(0)
    config = BertConfig.preset("tiny", max_position_embeddings=128)
    encoder = BertEncoder(config)
    heads = {name: (build_head(name, config), {"type": name}) for name in ("mlm", "nsp")}
    out = tmp_path_factory.mktemp("heads") / "model"
    save_model_dir(out, encoder, vocab_file=SHARED / "vocab" / "bert-base-uncased" / "vocab.txt", heads=heads)
    return out


def test_a_mask_past_the_cut_is_reported_as_such(heads_dir, capsys):
    from kbert.commands.explore import main

    # One WordPiece token per word here: 7 x 40 + 4 tokens, and [CLS] [SEP]; the [MASK] is past 128.
    long_text = "the cat sat on the mat . " * 40 + "the [MASK] ran ."
    assert main(["fill-mask", str(heads_dir), long_text]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"kbert explore: error: the [MASK] in {_short(long_text)} lies past the cut: the model reads 128 tokens and the "
                   f"text has {7 * 40 + 4 + 2}; shorten the text before the [MASK]"]
    assert main(["fill-mask", str(heads_dir), "a [MASK] b " + long_text, "--json"]) == 0
    captured = capsys.readouterr()
    assert [json.loads(line)["position"] for line in captured.out.splitlines()] == [2]  # the first [MASK] ...
    assert captured.err.strip().splitlines() == [  # ... and the second said to be past the cut
        f"note: 1 of the 2 [MASK]s in {_short('a [MASK] b ' + long_text)} lie past the cut (128 tokens of "
        f"{3 + 7 * 40 + 4 + 2}) and are not filled"]
    FAULTS["fill-mask with [MASK] past the cut"] += 2


def _short(text):
    from kbert.commands.explore import _short

    return _short(text)


@pytest.mark.slow
def test_next_sentence_and_attention_say_once_that_the_text_was_cut(heads_dir, tmp_path, capsys):
    from kbert.commands.explore import main

    long_text = "the cat sat on the mat . " * 40
    assert main(["next-sentence", str(heads_dir), long_text, "a dog ran .", "--json"]) == 0
    captured = capsys.readouterr()
    assert 0 <= json.loads(captured.out)["is_next_probability"] <= 1
    assert captured.err.strip().splitlines() == [
        f"note: the texts are cut to 128 tokens (of {7 * 40 + 4 + 3}): the model sees only the first part"]
    assert main(["attention", str(heads_dir), long_text, "--out", str(tmp_path / "a.html")]) == 0
    assert capsys.readouterr().err.strip().splitlines() == [
        f"note: the text is cut to 128 tokens (of {7 * 40 + 2}): the model sees only the first part"]
    assert main(["next-sentence", str(heads_dir), "a cat .", "a dog ran .", "--json"]) == 0
    assert capsys.readouterr().err == ""  # a text that fits: nothing said
    FAULTS["next-sentence / attention past the cut"] += 2


@pytest.fixture(scope="module", autouse=True)
def report_faults():
    """Prints the faults this module's tests injected, after the last of them, whichever ran and in
    whatever order (pytest -s shows it). Each test asserts its own outcome; this only reports."""
    yield
    print("\nfaults injected (outputs):", dict(FAULTS), "total", sum(FAULTS.values()))
