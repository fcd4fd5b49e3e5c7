"""kbert.explore's fill-mask and next-sentence: numbers against transformers (the converted
ja-tiny-random-bert), the exported signatures against the Python path in a TensorFlow-only process,
the [MASK]-in-text tokenization, ``python -m kbert.explore fill-mask / next-sentence`` against the
heads' own softmax for a model from a short run of the main job (python -m kbert.pretrain), and what
the model's cut (128 tokens) drops, said through ``kbert explore``: a [MASK] past the cut is an error
(exit 1) or, beside one that fits, a note; next-sentence and attention on longer texts say once that
the text was cut."""

import json
import subprocess

import numpy as np
import pytest
import tensorflow as tf

from conftest import REFERENCE, REPO, SHARED, UNCASED_VOCAB, cli_env, python, run_fresh_python
from kbert.explore import fill_mask, fill_mask_ids, next_sentence, next_sentence_ids
from kbert.explore.heads_model import PretrainingHeads
from kbert.explore.masked_text import is_sentencepiece_vocab, join_pieces, tokenize_with_masks
from kbert.export.serving import EXPORT_MARKER
from kbert.model_dir import ModelDirError


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


def test_mask_in_text_becomes_the_mask_id_for_every_part():
    from kbert.text import BertTokenizer

    tokenizer = BertTokenizer(UNCASED_VOCAB)
    texts = ["the man went to the [MASK] store.", "no mask here", "", "[MASK][MASK] x [MASK]"]
    got = tokenize_with_masks(tokenizer.tokenize_flat, texts, 103).to_list()
    for text, row in zip(texts, got):
        parts = text.split("[MASK]")
        expected = []
        for i, part in enumerate(parts):
            expected += tokenizer.tokenize_flat([part]).to_list()[0] + ([103] if i < len(parts) - 1 else [])
        assert row == expected, text
    assert got[0][5] == 103 and tokenizer.tokenize_flat(["[MASK]"]).to_list()[0] != [103]


def test_join_pieces():
    assert join_pieces(["the", "gro", "##cer", "##y", "store", "."]) == "the grocery store."
    assert join_pieces(["\u2581the", "\u2581gro", "cery"]) == "the grocery"
    assert join_pieces(["吾", "##輩", "は", "猫", "cat"]) == "吾輩は猫 cat"
    assert join_pieces(["gro", "[MASK]", "\u2581store"], sentencepiece=True) == "gro [MASK] store"
    assert is_sentencepiece_vocab(["[PAD]", "\u2581a", "\u2581b", "c"])
    assert not is_sentencepiece_vocab(UNCASED_VOCAB.read_text(encoding="utf-8").splitlines())


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
def test_text_api_equals_the_heads_on_the_tokenized_ids(english_dir):
    heads = PretrainingHeads.from_model_dir(english_dir)
    answers = fill_mask(english_dir, TEXTS, top_k=3)
    packed = {k: v.numpy() for k, v in heads.pack(TEXTS).items()}
    assert [len(a) for a in answers] == [1, 2, 1]
    for row, masks in enumerate(answers):
        assert [m["position"] for m in masks] == np.flatnonzero(packed["input_word_ids"][row] == 103).tolist()
        # Independently: the encoder and mlm head called directly, numpy softmax and sort.
        sequence = heads.encoder({k: v[row:row + 1] for k, v in packed.items()})["sequence_output"]
        logits = heads.mlm_head(sequence, np.array([[m["position"] for m in masks]]), heads.encoder.word_embeddings)
        probabilities = _softmax(np.asarray(logits[0], np.float64))
        for m, p in zip(masks, probabilities):
            assert m["ids"] == np.argsort(-p)[:3].tolist()
            np.testing.assert_allclose(m["probabilities"], np.sort(p)[::-1][:3], rtol=1e-5)
    pooled = heads.encoder({k: v for k, v in heads.pack(*PAIRS).items()})["pooled_output"]
    expected = _softmax(np.asarray(heads.nsp_head(pooled), np.float64))[:, 0]
    np.testing.assert_allclose(next_sentence(heads, *PAIRS), expected, rtol=1e-5)
    assert next_sentence(heads, PAIRS[0][0], PAIRS[1][0]) == pytest.approx(expected[0], rel=1e-5)
    with pytest.raises(ValueError, match="text_a has 2 strings but text_b has 1"):
        next_sentence(heads, PAIRS[0], PAIRS[1][:1])


def test_missing_head_is_named(tiny_model_dir):
    with pytest.raises(ModelDirError, match="no 'mlm' head"):
        fill_mask(tiny_model_dir, ["a [MASK]"])
    with pytest.raises(ModelDirError, match="no 'nsp' head"):
        next_sentence(tiny_model_dir, "a", "b")


@pytest.mark.slow
def test_export_signatures_equal_the_python_path_in_a_tensorflow_only_process(english_dir, tmp_path):
    from kbert.export.encoder import export_encoder
    from kbert.export.serving import read_warmup_requests, saved_model_ops

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
    run = subprocess.run([*python("-m", "kbert.explore"), *map(str, args)], capture_output=True, text=True,
                         timeout=600, env=cli_env(), cwd=REPO)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


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


@pytest.mark.slow
def test_cli_errors_name_the_problem(tiny_model_dir, tmp_path):
    run = subprocess.run([*python("-m", "kbert.explore"), "fill-mask", str(tiny_model_dir), "no mask"],
                         capture_output=True, text=True, timeout=600, env=cli_env(), cwd=REPO)
    assert run.returncode == 1 and "kbert explore: error: " in run.stderr and "no 'mlm' head" in run.stderr
    run = subprocess.run([*python("-m", "kbert.explore"), "next-sentence", str(tmp_path / "nothing"), "a", "b"],
                         capture_output=True, text=True, timeout=600, env=cli_env(), cwd=REPO)
    assert run.returncode == 1 and "kbert explore: error: " in run.stderr and "model directory not found" in run.stderr


# -- what the cut drops (english_dir reads 128 tokens) ---------------------------------------------
def test_a_mask_past_the_cut_is_reported_as_such(english_dir, capsys):
    from kbert.commands.explore import main

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
