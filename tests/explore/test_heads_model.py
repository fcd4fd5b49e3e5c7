"""kbert.explore's fill-mask and next-sentence: numbers against transformers (the converted
ja-tiny-random-bert), the exported signatures against the Python path in a TensorFlow-only process,
``python -m kbert.explore fill-mask / next-sentence`` against the heads' own softmax for a model from a
short run of the main job (python -m kbert.pretrain), and what the model's cut (128 tokens) drops,
said through ``kbert explore``: a [MASK] past the cut is an error (exit 1) or, beside one that fits, a
note; next-sentence and attention on longer texts say once that the text was cut (the text API and
the [MASK]-in-text tokenization: test_predict.py, test_masked_text.py)."""

import json

import numpy as np
import pytest
import tensorflow as tf

from conftest import REFERENCE, SHARED, UNCASED_VOCAB, run_fresh_python
from fixtures.cli import run_command
from kbert.explore import fill_mask, fill_mask_ids, next_sentence, next_sentence_ids
from kbert.explore.heads_model import PretrainingHeads
from kbert.export.serving import EXPORT_MARKER


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.fixture(scope="module")
def ja_heads(tmp_path_factory):
    from kbert.convert import hf

    out = tmp_path_factory.mktemp("ja") / "model"
    hf.convert(SHARED / "weights" / "ja-tiny-random-bert", out)
    return PretrainingHeads.from_model_dir(out)


@pytest.fixture(scope="module")
def ja_reference():
    return dict(np.load(REFERENCE / "ja_tiny_bert.npz"))


def _ids(reference, word_ids=None):
    return {"input_word_ids": reference["input_word_ids"] if word_ids is None else word_ids,
            "input_mask": reference["input_mask"], "input_type_ids": reference["input_type_ids"]}


def test_mlm_probabilities_are_the_softmax_of_transformers_logits(ja_heads, ja_reference):
    positions = np.tile(np.arange(8, dtype=np.int32), (len(ja_reference["input_word_ids"]), 1))
    got = ja_heads.mask_probabilities(_ids(ja_reference), positions).numpy()
    expected = _softmax(ja_reference["mlm_logits_first8"].astype(np.float64))
    assert got.shape == expected.shape == (40, 8, 8000)
    assert np.abs(got - expected).max() <= 1e-6
    assert np.abs(got.sum(-1) - 1).max() <= 1e-5


def test_next_sentence_is_index_0_of_the_nsp_softmax(ja_heads, ja_reference):
    got = next_sentence_ids(ja_heads, _ids(ja_reference))
    expected = _softmax(ja_reference["nsp_logits"].astype(np.float64))[:, 0]
    assert np.abs(got - expected).max() <= 1e-5
    assert 0.05 < expected.min() < expected.max() < 0.95  # the comparison is not all one value


def test_fill_mask_ids_gives_the_top_k_of_the_vocabulary_softmax(ja_heads, ja_reference):
    ids = ja_reference["input_word_ids"].copy()
    mask_rows = {0: [1], 3: [2, 5], 25: [3, 40]}  # row 0 is short: position 5 would be padding
    for row, cols in mask_rows.items():
        ids[row, cols] = ja_heads.mask_id
    ids[0, 30] = ja_heads.mask_id  # a mask id at a padding position is not a mask
    inputs = _ids(ja_reference, ids)
    answers = fill_mask_ids(ja_heads, inputs, top_k=4)
    assert len(answers) == 40
    vocab = ja_heads.preprocessor.tokenize.get_vocabulary()
    for row, masks in enumerate(answers):
        assert [m["position"] for m in masks] == mask_rows.get(row, []), row
        for m in masks:
            full = ja_heads.mask_probabilities(
                {k: v[row:row + 1] for k, v in inputs.items()}, np.array([[m["position"]]], np.int32)).numpy()[0, 0]
            order = np.argsort(-full, kind="stable")[:4]
            assert m["ids"] == order.tolist()
            assert m["tokens"] == [vocab[i] for i in order]
            np.testing.assert_allclose(m["probabilities"], full[order], rtol=1e-6)
            assert m["probabilities"] == sorted(m["probabilities"], reverse=True)


# -- text level, and the export ------------------------------------------------------------------
@pytest.fixture(scope="module")
def english_dir(tmp_path_factory, tiny_model_dir):
    """BERT-Tiny (uncased vocab) with random mlm and nsp heads."""
    import keras

    from kbert.layers.heads import build_head
    from kbert.model_dir import load_encoder, save_model_dir

    keras.utils.set_random_seed(1)
    encoder = load_encoder(tiny_model_dir)
    out = tmp_path_factory.mktemp("heads") / "model"
    save_model_dir(out, encoder, vocab_file=UNCASED_VOCAB, heads={
        "mlm": (build_head("mlm", encoder.config), {"type": "mlm"}),
        "nsp": (build_head("nsp", encoder.config), {"type": "nsp"})})
    return out


TEXTS = ["the man went to the [MASK] store.", "[MASK] is the capital of [MASK].", "Zürich [MASK] 東京 🎉"]
PAIRS = (["the man went to the store.", "the man went to the store."],
         ["he bought a gallon of milk.", "penguins are flightless birds."])


@pytest.mark.slow
def test_export_signatures_equal_the_python_path_in_a_tensorflow_only_process(english_dir, tmp_path):
    from kbert.export.encoder import export_encoder
    from fixtures.export_contents import read_warmup_requests, saved_model_ops

    out = export_encoder(english_dir, tmp_path / "sm" / "bert" / "1")
    result = tmp_path / "out.json"
    run_fresh_python(f"""
import json, sys, tensorflow as tf, tensorflow_text
m = tf.saved_model.load({str(out)!r})
fm = m.signatures["fill_mask"](text=tf.constant({TEXTS!r}))
ns = m.signatures["next_sentence"](text_a=tf.constant({PAIRS[0]!r}), text_b=tf.constant({PAIRS[1]!r}))
json.dump({{"fill_mask": {{k: v.numpy().tolist() if v.dtype != tf.string else
                          [[[t.decode() for t in m_] for m_ in r] for r in v.numpy()] for k, v in fm.items()}},
           "is_next": ns["is_next_probability"].numpy().tolist()}}, open({str(result)!r}, "w"))
# every warm-up request replays
from tensorflow_serving.apis import prediction_log_pb2
for record in tf.data.TFRecordDataset({str(out / "assets.extra" / "tf_serving_warmup_requests")!r}):
    request = prediction_log_pb2.PredictionLog.FromString(record.numpy()).predict_log.request
    m.signatures[request.model_spec.signature_name](**{{k: tf.make_ndarray(v) for k, v in request.inputs.items()}})
assert not [k for k in sys.modules if k.split(".")[0] in ("kbert", "keras_hub")]
""")
    served = json.loads(result.read_text())
    python = fill_mask(english_dir, TEXTS, top_k=5)
    for row, masks in enumerate(python):
        for m, answer in enumerate(masks):
            assert served["fill_mask"]["positions"][row][m] == answer["position"]
            assert served["fill_mask"]["ids"][row][m] == answer["ids"]
            assert served["fill_mask"]["tokens"][row][m] == answer["tokens"]
            np.testing.assert_allclose(served["fill_mask"]["probabilities"][row][m], answer["probabilities"], rtol=1e-5)
        assert served["fill_mask"]["positions"][row][len(masks):] == [-1] * (2 - len(masks))
    np.testing.assert_allclose(served["is_next"], next_sentence(english_dir, *PAIRS), rtol=1e-5)
    signatures = {log.predict_log.request.model_spec.signature_name for log in read_warmup_requests(out)}
    assert signatures == {"fill_mask", "next_sentence"}
    # TensorFlow core and tensorflow-text ops only (the export tests check that list against docs/serving.md)
    assert not [op for op in saved_model_ops(out) if op.startswith(("Py", "EagerPy"))]


def test_export_of_a_directory_without_heads_has_no_head_signatures(tiny_encoder_export):
    out = tiny_encoder_export  # conftest: export_encoder(tiny_model_dir, ...), its defaults
    assert set(tf.saved_model.load(str(out)).signatures) == {"serving_default"}
    # no warm-up requests (they exercise head signatures); only the marker saying kbert wrote it
    assert sorted(p.name for p in (out / "assets.extra").iterdir()) == [EXPORT_MARKER]


# -- the explore CLI on a model from a short run of the main job (python -m kbert.pretrain) --------------
def _explore(*args):
    run = run_command("explore", *args)  # in this process, as `kbert explore ARGS` runs it
    assert run.status == 0, run.err[-3000:]
    return run.out


@pytest.mark.slow
def test_cli_answers_equal_the_heads_softmax_for_a_model_from_the_main_job(pretrain_run):
    from kbert.explore.heads_model import PretrainingHeads

    model_dir = pretrain_run.model_dir
    text = "she was the [MASK] of the family, and [MASK] was very fond of her."
    lines = [json.loads(line) for line in _explore("fill-mask", model_dir, text, "--json", "--top-k", "4").splitlines()]
    heads = PretrainingHeads.from_model_dir(model_dir)
    packed = {k: v.numpy() for k, v in heads.pack([text]).items()}
    positions = np.flatnonzero(packed["input_word_ids"][0] == heads.mask_id)
    assert [line["position"] for line in lines] == positions.tolist() and len(lines) == 2
    sequence = heads.encoder(packed)["sequence_output"]
    probabilities = _softmax(np.asarray(heads.mlm_head(sequence, positions[None], heads.encoder.word_embeddings)[0],
                                        np.float64))
    vocab = heads.preprocessor.tokenize.get_vocabulary()
    for line, p in zip(lines, probabilities):
        assert set(line) == {"position", "ids", "tokens", "probabilities"}
        assert line["ids"] == np.argsort(-p)[:4].tolist()
        assert line["tokens"] == [vocab[i] for i in line["ids"]]
        np.testing.assert_allclose(line["probabilities"], np.sort(p)[::-1][:4], rtol=1e-5)
    human = _explore("fill-mask", model_dir, text, "--top-k", "2")
    assert "[MASK] 1 (position" in human and "[MASK] 2 (position" in human and lines[0]["tokens"][0] in human

    a, b = "the man went to the store.", "he bought a gallon of milk."
    got = json.loads(_explore("next-sentence", model_dir, a, b, "--json"))
    pooled = heads.encoder({k: v.numpy() for k, v in heads.pack([a], [b]).items()})["pooled_output"]
    assert set(got) == {"is_next_probability"}
    assert got["is_next_probability"] == pytest.approx(_softmax(np.asarray(heads.nsp_head(pooled), np.float64))[0, 0],
                                                       rel=1e-5)


def test_cli_errors_name_the_problem(tiny_model_dir, tmp_path):
    run = run_command("explore", "fill-mask", tiny_model_dir, "no mask")
    assert run.status == 1 and "kbert explore: error: " in run.err and "no 'mlm' head" in run.err
    run = run_command("explore", "next-sentence", tmp_path / "nothing", "a", "b")
    assert run.status == 1 and "kbert explore: error: " in run.err and "model directory not found" in run.err


# -- what the cut drops (english_dir reads 128 tokens) ---------------------------------------------
@pytest.mark.slow
def test_a_mask_past_the_cut_is_reported_as_such(english_dir, capsys):
    from fixtures.cli import command_status

    def main(argv):
        return command_status("explore", argv)

    # One WordPiece token per word here: 7 x 40 + 4 tokens, and [CLS] [SEP]; the [MASK] is past 128.
    long_text = "the cat sat on the mat . " * 40 + "the [MASK] ran ."
    assert main(["fill-mask", str(english_dir), long_text]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"kbert explore: error: the [MASK] in {_short(long_text)} lies past the cut: the model reads 128 tokens and the "
                   f"text has {7 * 40 + 4 + 2}; shorten the text before the [MASK]"]
    assert main(["fill-mask", str(english_dir), "a [MASK] b " + long_text, "--json"]) == 0
    captured = capsys.readouterr()
    assert [json.loads(line)["position"] for line in captured.out.splitlines()] == [2]  # the first [MASK] ...
    assert captured.err.strip().splitlines() == [  # ... and the second said to be past the cut
        f"note: 1 of the 2 [MASK]s in {_short('a [MASK] b ' + long_text)} lie past the cut (128 tokens of "
        f"{3 + 7 * 40 + 4 + 2}) and are not filled"]


def _short(text):
    from kbert.commands.explore import _short

    return _short(text)


@pytest.mark.slow
def test_next_sentence_and_attention_say_once_that_the_text_was_cut(english_dir, tmp_path, capsys):
    from kbert.commands.explore import main

    long_text = "the cat sat on the mat . " * 40
    assert main(["next-sentence", str(english_dir), long_text, "a dog ran .", "--json"]) == 0
    captured = capsys.readouterr()
    assert 0 <= json.loads(captured.out)["is_next_probability"] <= 1
    assert captured.err.strip().splitlines() == [
        f"note: the texts are cut to 128 tokens (of {7 * 40 + 4 + 3}): the model sees only the first part"]
    assert main(["attention", str(english_dir), long_text, "--out", str(tmp_path / "a.html")]) == 0
    assert capsys.readouterr().err.strip().splitlines() == [
        f"note: the text is cut to 128 tokens (of {7 * 40 + 2}): the model sees only the first part"]
    assert main(["next-sentence", str(english_dir), "a cat .", "a dog ran .", "--json"]) == 0
    assert capsys.readouterr().err == ""  # a text that fits: nothing said
