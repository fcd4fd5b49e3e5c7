"""BertPreprocessor: the TF Hub preprocessing contract, tf.data, and the exported SavedModel."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tensorflow as tf

from conftest import UNCASED_VOCAB, run_fresh_python
from kbert.text import BertPreprocessor
from fixtures.google_bert_oracle import expected_ids, minilm_rows, reference_lines, to_lists

KEYS = ("input_word_ids", "input_mask", "input_type_ids")


@pytest.fixture(scope="module")
def preprocessor():
    return BertPreprocessor(UNCASED_VOCAB)


@pytest.fixture(scope="module")
def texts():
    lines = reference_lines()
    return [line["text"] for line in lines[::10]], [expected_ids(line) for line in lines[::10]]


@pytest.fixture(scope="module")
def exported(uncased_preprocessor_export):
    """Exported once through the CLI entry point: ``python -m kbert.export preprocessor VOCAB OUT``
    (conftest, shared with test_reliability_text)."""
    return uncased_preprocessor_export


def test_contract(preprocessor, texts):
    strings, ids = texts
    out = preprocessor(tf.constant(strings[:8]))
    assert sorted(out) == sorted(KEYS)
    for key in KEYS:
        assert out[key].dtype == tf.int32 and out[key].shape == (8, 128)
    for row, expected in enumerate(ids[:8]):
        n = len(expected[:126]) + 2
        assert out["input_word_ids"][row, :n].numpy().tolist() == [101] + expected[:126] + [102]
        assert out["input_mask"][row].numpy().sum() == n
    tokens = preprocessor.tokenize(tf.constant(strings[:8]))
    assert isinstance(tokens, tf.RaggedTensor) and tokens.shape.rank == 3 and tokens.dtype == tf.int32
    assert [[i for w in ws for i in w] for ws in to_lists(tokens)] == ids[:8]
    specials = {k: int(v) for k, v in preprocessor.tokenize.get_special_tokens_dict().items()}
    assert specials == {"vocab_size": 30522, "padding_id": 0, "start_of_sequence_id": 101,
                        "end_of_segment_id": 102, "mask_id": 103}
    pair = preprocessor.bert_pack_inputs([tokens, tokens], seq_length=32)
    assert pair["input_word_ids"].shape == (8, 32) and pair["input_type_ids"].numpy().max() == 1
    # [batch, 1] (Keras' usual string input) is accepted; pairs as a list of two batches.
    assert preprocessor(tf.constant(strings[:2])[:, tf.newaxis])["input_word_ids"].shape == (2, 128)
    both = preprocessor([strings[:2], strings[2:4]])
    assert both["input_type_ids"].numpy().max() == 1


# Inputs made when the test runs (lambdas): collecting the tests starts no TensorFlow runtime, so a
# test process forked after collection (pytest --forked, each test alone) gets a working one.
@pytest.mark.parametrize("bad,error,match", [
    (lambda: tf.constant([[["a"]]]), ValueError, "shape"),
    (lambda: tf.constant("a"), ValueError, "shape"),
    (lambda: tf.constant([1, 2]), TypeError, "strings"),
    (lambda: {"text": ["a"]}, TypeError, "dict"),
    (lambda: tf.ragged.constant([["a"], ["b", "c"]]), ValueError, "dense"),
], ids=["rank3", "scalar", "ints", "dict", "ragged"])
def test_bad_inputs_are_clear_errors(preprocessor, bad, error, match):
    bad = bad()
    with pytest.raises(error, match=match):
        preprocessor(bad)


def test_same_ids_eager_and_in_tf_data(preprocessor, texts):
    strings = texts[0]
    eager = preprocessor(strings)
    dataset = tf.data.Dataset.from_tensor_slices(strings).batch(50).map(preprocessor)
    for key in KEYS:
        np.testing.assert_array_equal(np.concatenate([batch[key].numpy() for batch in dataset]), eager[key].numpy())


def test_in_a_keras_model_and_its_export(preprocessor, tmp_path):
    """Task exports embed the layers in Keras models: model.export must save them."""
    import keras

    text = keras.Input(shape=(), dtype="string")
    model = keras.Model(text, preprocessor(text))
    out = model(tf.constant(["hello world"]))
    assert out["input_word_ids"][0, :4].numpy().tolist() == [101, 7592, 2088, 102]
    model.export(tmp_path / "model", format="tf_saved_model", verbose=False)
    reloaded = tf.saved_model.load(str(tmp_path / "model"))
    again = reloaded.serve(tf.constant(["hello world"]))
    for key in KEYS:
        np.testing.assert_array_equal(again[key].numpy(), out[key].numpy())


@pytest.mark.slow
def test_exported_preprocessor_in_a_fresh_process(exported, preprocessor, texts):
    """Loads with only tensorflow + tensorflow_text imported; same ids as eager kbert."""
    strings = texts[0][:200]
    rows = minilm_rows()
    pairs = [(r["text_a"], r["text_b"]) for r in rows if r["text_b"] is not None]
    code = f"""
import json, sys
import tensorflow as tf, tensorflow_text
assert not [m for m in sys.modules if m == "kbert" or m.startswith("kbert.")]
pre = tf.saved_model.load({str(exported)!r})
strings = tf.constant({json.dumps(strings)})
out = pre(strings)
tokens = pre.tokenize(strings)
a = pre.tokenize(tf.constant({json.dumps([p[0] for p in pairs])}))
b = pre.tokenize(tf.constant({json.dumps([p[1] for p in pairs])}))
pair = pre.bert_pack_inputs([a, b], seq_length=128)
ids, starts, ends = pre.tokenize_with_offsets(strings[:3])
serving = pre.signatures["serving_default"](text=strings)
print(json.dumps({{
    "single": {{k: v.numpy().tolist() for k, v in out.items()}},
    "serving": {{k: v.numpy().tolist() for k, v in serving.items()}},
    "tokens": tokens.to_list(),
    "pair_ids": pair["input_word_ids"].numpy().tolist(),
    "pair_types": pair["input_type_ids"].numpy().tolist(),
    "starts": starts.to_list(),
    "specials": {{k: int(v) for k, v in pre.tokenize.get_special_tokens_dict().items()}},
    "vocab_file": pre.vocab_file.asset_path.numpy().decode(),
    "do_lower_case": bool(pre.do_lower_case.numpy()),
}}))
"""
    result = json.loads(run_fresh_python(code).strip().splitlines()[-1])
    eager = preprocessor(strings, seq_length=64)
    for key in KEYS:
        assert result["single"][key] == eager[key].numpy().tolist(), key
        assert result["serving"][key] == eager[key].numpy().tolist(), key
    assert result["tokens"] == to_lists(preprocessor.tokenize(strings))
    assert [[i for w in ws for i in w] for ws in result["tokens"]] == texts[1][:200]
    eager_pair = preprocessor([[p[0] for p in pairs], [p[1] for p in pairs]])
    assert result["pair_ids"] == eager_pair["input_word_ids"].numpy().tolist()
    assert result["pair_types"] == eager_pair["input_type_ids"].numpy().tolist()
    assert result["starts"] == to_lists(preprocessor.tokenizer.tokenize_with_offsets(strings[:3])[1])
    assert result["specials"] == {"vocab_size": 30522, "padding_id": 0, "start_of_sequence_id": 101,
                                  "end_of_segment_id": 102, "mask_id": 103}
    assert result["vocab_file"].endswith("vocab.txt") and result["do_lower_case"] is True
    with open(result["vocab_file"], encoding="utf-8") as f, open(UNCASED_VOCAB, encoding="utf-8") as g:
        assert f.read() == g.read()


@pytest.mark.slow
@pytest.mark.parametrize("shards", [2, 3])
def test_batches_cut_into_parallel_slices_give_the_serial_result(shards):
    """In a graph the tokenizer and preprocessor cut a batch into slices worked on in parallel
    (kbert.text.inputs.shard_rows); every batch size, slice boundaries included, must give
    exactly what one slice gives."""
    lines = [line["text"] for line in reference_lines()]
    serial, sliced = BertPreprocessor(UNCASED_VOCAB, seq_length=48), BertPreprocessor(UNCASED_VOCAB, seq_length=48)
    serial.tokenizer.shards, sliced.tokenizer.shards = 1, shards
    spec = tf.TensorSpec([None], tf.string)

    def graphs(pre):
        return (tf.function(lambda a, b: pre([a, b]), input_signature=[spec, spec], autograph=False),
                tf.function(lambda a: pre.tokenizer(a), input_signature=[spec], autograph=False),
                tf.function(lambda a: pre.tokenizer.tokenize_with_offsets(a, unit="UTF8_CHAR"),
                            input_signature=[spec], autograph=False))

    (pack_1, tok_1, off_1), (pack_n, tok_n, off_n) = graphs(serial), graphs(sliced)

    def calls(graph, part=""):  # the names of the functions a graph calls (one per call) that hold part
        return [op.get_attr("f").name for op in graph.get_operations()
                if op.type in ("PartitionedCall", "StatefulPartitionedCall") and part in op.get_attr("f").name]

    # Serially, one call of the tokenizer's graph per segment. Cut, one call per slice of a single
    # function, traced once (not a copy per slice), which calls the tokenizer once per segment.
    outer = pack_n.get_concrete_function().graph
    assert len(calls(pack_1.get_concrete_function().graph, "_tokenize_1d")) == 2
    assert calls(outer, "_tokenize_1d") == [] and len(calls(outer)) == shards and len(set(calls(outer))) == 1
    assert len(calls(outer._get_function(calls(outer)[0]).graph, "_tokenize_1d")) == 2
    for n in (0, 1, 2, shards - 1, shards + 1, 64 * shards + 1, 300):
        a = tf.constant((lines * 2)[:n], tf.string)
        b = tf.constant((lines[::-1] * 2)[:n], tf.string)
        expected, got = pack_1(a, b), pack_n(a, b)
        for key in KEYS:
            np.testing.assert_array_equal(got[key].numpy(), expected[key].numpy(), err_msg=f"{key}, {n} rows")
        assert to_lists(tok_n(a)) == to_lists(tok_1(a))
        assert [to_lists(x) for x in off_n(a)] == [to_lists(x) for x in off_1(a)]
