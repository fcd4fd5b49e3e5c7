"""kbert.export.onnx.task_graph: the whole graph of a bare encoder and of a task model (its inputs, their
dynamic dimensions, its name) run in ONNX Runtime against the Keras model on the same ids, and
keras_outputs, the Keras side of the export-time check, naming what the graph answers. Every task
type's answers are tests/export/onnx/test_heads.py's."""

import numpy as np
import pytest

from conftest import require

ort = require("onnxruntime")
onnx = require("onnx")

import keras  # noqa: E402

import kbert  # noqa: E402
from kbert.export.onnx.task_graph import INPUT_NAMES, build_graph, input_dims, keras_outputs  # noqa: E402


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return kbert.random_model_dir(tmp_path_factory.mktemp("onnx_task_graph") / "tiny", max_position_embeddings=64)


def ids(shape, lengths, seed=0):
    """Right-padded rows of the given real lengths (last axis), type 1 on the second half of each."""
    rng = np.random.default_rng(seed)
    positions = np.arange(shape[-1])
    mask = positions < np.asarray(lengths)[..., None]
    types = mask & (positions >= np.asarray(lengths)[..., None] // 2)
    return {"input_word_ids": (rng.integers(5, 60, shape) * mask).astype(np.int32),
            "input_mask": mask.astype(np.int32), "input_type_ids": types.astype(np.int32)}


def run(proto, feeds) -> dict:
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))


def declared(values) -> dict:
    """{name: (element type, [dimension name or size])} of graph inputs or outputs."""
    return {v.name: (v.type.tensor_type.elem_type,
                     [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]) for v in values}


def test_input_dims():
    assert input_dims(None) == input_dims("text_classifier") == input_dims("span_qa") == ["batch", "sequence"]
    assert input_dims("multiple_choice") == ["batch", "choices", "sequence"]


@pytest.mark.parametrize("form", ["ort", "standard"])
def test_a_bare_encoder_gives_the_keras_encoders_outputs(base, form):
    from kbert.model_dir import load_encoder

    encoder = load_encoder(base)
    proto = build_graph(encoder, form, producer_version="9.9")
    assert proto.graph.name == "bert_encoder" and proto.producer_version == "9.9"
    int32 = onnx.TensorProto.INT32
    assert declared(proto.graph.input) == {name: (int32, ["batch", "sequence"]) for name in INPUT_NAMES}
    assert [i.name for i in proto.graph.input] == list(INPUT_NAMES)
    x = ids((3, 17), [17, 9, 1])
    want = keras_outputs(encoder, x)
    direct = encoder(x, training=False)
    assert sorted(want) == ["pooled_output", "sequence_output"]
    for name in want:
        np.testing.assert_array_equal(want[name], np.asarray(direct[name]))
    got = run(proto, x)
    assert sorted(got) == sorted(want)
    real = x["input_mask"].astype(bool)  # padding positions are not compared (nothing reads them)
    assert np.abs(got["sequence_output"] - want["sequence_output"])[real].max() < 1e-5
    assert np.abs(got["pooled_output"] - want["pooled_output"]).max() < 1e-5


def test_multiple_choice_takes_choices_and_folds_them_back(base):
    keras.utils.set_random_seed(0)
    model = kbert.MultipleChoiceModel.from_model_dir(base, seq_length=64)
    for w in model.head.weights:  # scores that differ between choices
        w.assign(np.random.default_rng(1).normal(0, 0.5, w.shape).astype("float32"))
    proto = build_graph(model)
    assert proto.graph.name == "multiple_choice"
    assert {name: dims for name, (_, dims) in declared(proto.graph.input).items()} == {
        name: ["batch", "choices", "sequence"] for name in INPUT_NAMES}
    x = ids((2, 3, 12), [[12, 5, 8], [3, 12, 1]])
    want = keras_outputs(model, x)
    np.testing.assert_array_equal(want["logits"], np.asarray(model(x, training=False)))
    assert want["logits"].shape == (2, 3) and np.ptp(want["logits"], axis=1).min() > 1e-4
    got = run(proto, x)
    assert np.abs(got["logits"] - want["logits"]).max() < 1e-5
    assert got["choice_ids"].tolist() == want["logits"].argmax(-1).tolist()


@pytest.mark.parametrize("maker, names", [
    (lambda d: kbert.TextRegressor.from_model_dir(d, num_segments=2, seq_length=64), ["scores"]),
    (lambda d: kbert.SpanQuestionAnswerer.from_model_dir(d, seq_length=64, max_query_length=16), ["end_logits", "start_logits"]),
    (lambda d: kbert.TokenTagger.from_model_dir(d, label_names=["O", "B-X", "I-X"], seq_length=64), ["logits"]),
], ids=["regressor", "span_qa", "tagger"])
def test_keras_outputs_names_what_the_graph_answers(base, maker, names):
    """keras_outputs' names are graph outputs, with the Keras model's values (the export compares them)."""
    keras.utils.set_random_seed(0)
    model = maker(base)
    proto = build_graph(model)
    assert proto.graph.name == model.task_type
    x = ids((2, 10), [10, 4])
    want = keras_outputs(model, x)
    assert sorted(want) == names
    got = run(proto, x)
    direct = model(x, training=False)
    real = x["input_mask"].astype(bool)
    for name in names:
        expected = np.asarray(direct[name] if isinstance(direct, dict) else direct)
        np.testing.assert_array_equal(want[name], expected)
        diff = np.abs(got[name] - want[name])
        assert (diff[real] if diff.shape[:2] == real.shape else diff).max() < 1e-5, name
