"""python -m kbert.features MODEL_DIR --input ROWS.jsonl --output OUT.npz: checked against transformers'
outputs for all-MiniLM-L6-v2 (../shared/data/reference/minilm_encoder.npz, written by transformers).
An existing --output is refused unless --overwrite, and an --output that is the --input always,
leaving the files as they were."""

import json

import numpy as np
import pytest

from fixtures.file_tree import tree
from fixtures.task_runs import write_jsonl_rows
from conftest import REFERENCE
from fixtures.cli import run_command

pytestmark = pytest.mark.slow  # the whole module: its shared fixture alone outlasts the fast tier

ROWS = [48, 0, 1, 72, 24, 49]  # pairs and single texts mixed; none truncated at 128


def _cli(*args):
    return run_command("features", *args)  # in this process, as `kbert features ARGS` runs it


@pytest.fixture(scope="module")
def features(minilm_model_dir, minilm_reference, tmp_path_factory):
    meta = json.loads((REFERENCE / "minilm_encoder_inputs.json").read_text())["rows"]
    tmp = tmp_path_factory.mktemp("features")
    with (tmp / "rows.jsonl").open("w", encoding="utf-8") as f:
        for i in ROWS:
            row = {"text_a": meta[i]["text_a"]}
            if meta[i]["text_b"] is not None:
                row["text_b"] = meta[i]["text_b"]
            f.write(json.dumps(row) + "\n")
            if i == 0:
                f.write("\n")  # blank lines are skipped
    result = _cli(minilm_model_dir, "--input", tmp / "rows.jsonl", "--output", tmp / "out.npz",
                  "--seq-length", "128", "--batch-size", "4", "--projector", tmp / "projector",
                  "--projector-level", "sentence")
    assert result.status == 0, result.err[-3000:]
    assert "wrote 6 rows" in result.out and f"tensorboard --logdir {tmp / 'projector'}" in result.out
    arrays = dict(np.load(tmp / "out.npz"))
    arrays["projector_dir"] = tmp / "projector"
    return arrays


def test_projector_flag_writes_one_point_per_row(features):
    from tensorboard.plugins import projector
    from google.protobuf import text_format

    logdir = features["projector_dir"]
    config = text_format.Parse((logdir / "projector_config.pbtxt").read_text(), projector.ProjectorConfig())
    (embedding,) = config.embeddings
    labels = (logdir / embedding.metadata_path).read_text(encoding="utf-8").splitlines()
    assert len(labels) == len(ROWS)  # one per row (a single-column metadata file has no header)


def test_features_match_transformers(features, minilm_reference):
    ref = {k: v[:, ROWS] if k == "hidden_states" else v[ROWS] for k, v in minilm_reference.items()}
    np.testing.assert_array_equal(features["input_word_ids"], ref["input_ids"])
    np.testing.assert_array_equal(features["input_mask"], ref["attention_mask"])
    np.testing.assert_array_equal(features["input_type_ids"], ref["token_type_ids"])
    np.testing.assert_allclose(features["sequence_output"], ref["last_hidden_state"], atol=2e-5)
    np.testing.assert_allclose(features["pooled_output"], ref["pooler_output"], atol=2e-5)
    hidden = ref["hidden_states"].astype(np.float32)  # [7, rows, 128, 384], float16, zeros at padding
    mask = ref["attention_mask"][..., None].astype(np.float32)
    tol = dict(atol=0.02, rtol=0.01)  # the reference layers are float16
    np.testing.assert_allclose(features["embeddings"], hidden[0] * mask, **tol)
    np.testing.assert_allclose(features["second_to_last_hidden"], hidden[-2] * mask, **tol)
    np.testing.assert_allclose(features["last_hidden"], features["sequence_output"])
    np.testing.assert_allclose(features["sum_last_four_hidden"], hidden[-4:].sum(0) * mask, **tol)
    np.testing.assert_allclose(features["concat_last_four_hidden"],
                               np.concatenate(list(hidden[-4:]), axis=-1) * mask, **tol)
    np.testing.assert_allclose(features["sum_all_layers"], hidden.sum(0) * mask, atol=0.05, rtol=0.01)
    assert not features["sequence_output"][ref["attention_mask"] == 0].any()  # zeros at padding


def test_bad_input_is_one_line_naming_file_line_and_field(tmp_path, minilm_model_dir):
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"text_a": "fine"}\n{"text_a": 3}\n', encoding="utf-8")
    result = _cli(minilm_model_dir, "--input", rows, "--output", tmp_path / "o.npz")
    assert result.status == 1 and "Traceback" not in result.err
    assert f"kbert features: error: {rows}, line 2: field 'text_a': got 3; expected a string" in result.err
    missing = _cli(tmp_path / "no_model", "--input", rows, "--output", tmp_path / "o.npz")
    assert missing.status == 1
    assert missing.err.strip() == f"kbert features: error: model directory {tmp_path / 'no_model'} does not exist"


def test_features_refuse_an_existing_output_and_their_input(kbert_cli, tiny_model_dir, tmp_path):
    rows = write_jsonl_rows(tmp_path / "rows.jsonl", [{"text_a": "a cat"}])
    out = tmp_path / "out.npz"
    out.write_bytes(b"earlier arrays")
    before = tree(tmp_path)
    status, err = kbert_cli("features", [tiny_model_dir, "--input", rows, "--output", out])
    assert status == 1 and err == [f"kbert features: error: {out} already exists; pass --overwrite to replace it whole"]
    status, err = kbert_cli("features", [tiny_model_dir, "--input", out, "--output", out, "--overwrite"])
    assert status == 1 and len(err) == 1 and "is an input of this command" in err[0]
    assert tree(tmp_path) == before
