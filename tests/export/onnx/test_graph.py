"""kbert.export.onnx.graph, the graph builder every ONNX part writes through: small graphs built with it
run in ONNX Runtime and give numpy's answers (dense, argmax on ties, string constants, a node of
several outputs, an omitted optional input, a com.microsoft node); the model it finishes carries
the opsets, IR version and producer kbert promises and is refused by onnx's checker when broken;
a missing onnx names its extra."""

import math
import sys

import numpy as np
import pytest

from conftest import require

onnx = require("onnx")
ort = require("onnxruntime")

from kbert.export.onnx.graph import MS_DOMAIN, OPSET, Graph, onnx_module  # noqa: E402

FLOAT, INT32, INT64, STRING = (onnx.TensorProto.FLOAT, onnx.TensorProto.INT32, onnx.TensorProto.INT64,
                               onnx.TensorProto.STRING)


def run(g: Graph, **feeds) -> dict:
    session = ort.InferenceSession(g.model("test").SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))


def test_dense_and_argmax_give_numpys_answers():
    rng = np.random.default_rng(0)
    kernel, bias = rng.normal(size=(4, 3)).astype(np.float32), rng.normal(size=3).astype(np.float32)
    g = Graph("dense")
    x = g.input("x", FLOAT, ["batch", 4])
    y = g.dense(x, kernel, bias, "head")
    g.output(y, "y", FLOAT, ["batch", 3])
    ties = g.input("ties", FLOAT, ["batch", 5])
    g.output(g.argmax(ties), "best", INT32, ["batch"])
    xs = rng.normal(size=(6, 4)).astype(np.float32)
    tied = np.array([[1, 3, 3, 0, 3], [2, 2, 2, 2, 2], [0, 0, 0, 0, 9]], np.float32)
    got = run(g, x=xs, ties=tied)
    np.testing.assert_allclose(got["y"], xs @ kernel + bias, rtol=1e-6, atol=1e-6)
    assert got["best"].dtype == np.int32 and got["best"].tolist() == np.argmax(tied, -1).tolist() == [1, 0, 4]
    # the weights are initializers under the names given
    names = {t.name for t in g.initializers}
    assert {"head/kernel", "head/bias"} <= names


def test_constants_keep_their_type_and_shape():
    g = Graph("constants")
    labels = g.const("labels", np.asarray(["négatif", "positif", "字"], dtype=object))
    index = g.input("index", INT64, ["batch"])
    g.output(g.op("Gather", labels, index), "label", STRING, ["batch"])
    scalar, ints = g.scalar(2.5, np.float32), g.ints([1, -1])
    g.output(g.op("Mul", g.op("Cast", index, to=FLOAT), scalar), "scaled", FLOAT, ["batch"])
    g.output(g.op("Identity", ints), "ints", INT64, [2])
    by_name = {t.name: t for t in g.initializers}
    assert list(by_name[scalar].dims) == [] and by_name[scalar].data_type == FLOAT  # 0-d stays 0-d
    assert by_name[ints].data_type == INT64 and list(by_name[ints].dims) == [2]
    assert scalar != ints and len({t.name for t in g.initializers}) == len(g.initializers)  # fresh names
    got = run(g, index=np.array([2, 0, 1], np.int64))
    assert [s.decode() if isinstance(s, bytes) else s for s in got["label"]] == ["字", "négatif", "positif"]
    np.testing.assert_array_equal(got["scaled"], [5.0, 0.0, 2.5])
    assert got["ints"].tolist() == [1, -1]


def test_several_outputs_and_an_omitted_input():
    g = Graph("split")
    x = g.input("x", FLOAT, [2, 4])
    left, right = g.op("Split", x, g.ints([1, 3]), axis=1, outputs=2, name="halves")
    assert (left, right) == ("halves_0", "halves_1")
    g.output(left, "left", FLOAT, [2, 1])
    g.output(right, "right", FLOAT, [2, 3])
    # Clip(x, min omitted, max): None becomes the empty input name ONNX reads as "not given"
    clipped = g.op("Clip", x, None, g.scalar(1.0, np.float32))
    g.output(clipped, "clipped", FLOAT, [2, 4])
    clip = next(n for n in g.nodes if n.op_type == "Clip")
    assert clip.input[1] == ""
    xs = np.arange(-3, 5, dtype=np.float32).reshape(2, 4)
    got = run(g, x=xs)
    np.testing.assert_array_equal(got["left"], xs[:, :1])
    np.testing.assert_array_equal(got["right"], xs[:, 1:])
    np.testing.assert_array_equal(got["clipped"], np.minimum(xs, 1.0))


def test_an_output_gets_an_identity_only_where_the_names_differ():
    g = Graph("names")
    x = g.input("x", FLOAT, [3])
    doubled = g.op("Add", x, x, name="doubled")
    g.output(doubled, "doubled", FLOAT, [3])
    g.output(doubled, "twice", FLOAT, [3])
    assert [n.op_type for n in g.nodes] == ["Add", "Identity"]
    assert list(g.nodes[1].input) == ["doubled"] and list(g.nodes[1].output) == ["twice"]
    got = run(g, x=np.array([1, 2, 3], np.float32))
    assert got["doubled"].tolist() == got["twice"].tolist() == [2, 4, 6]


def test_a_contrib_node_runs_in_onnx_runtime():
    g = Graph("gelu")
    x = g.input("x", FLOAT, ["n"])
    g.output(g.ms("Gelu", x), "y", FLOAT, ["n"])
    assert g.uses_ms and g.nodes[0].domain == MS_DOMAIN
    xs = np.linspace(-4, 4, 17, dtype=np.float32)
    exact = np.array([v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in xs.astype(np.float64)])
    np.testing.assert_allclose(run(g, x=xs)["y"], exact, atol=1e-6)


def test_the_model_carries_its_opsets_ir_version_and_producer():
    plain = Graph("plain")
    plain.output(plain.input("x", FLOAT, [1]), "x", FLOAT, [1])
    model = plain.model("1.2.3")
    assert {o.domain: o.version for o in model.opset_import} == {"": OPSET} == {"": 17}
    assert model.ir_version == 8 and model.producer_name == "kbert" and model.producer_version == "1.2.3"
    assert model.graph.name == "plain"
    contrib = Graph("contrib")
    contrib.output(contrib.ms("Gelu", contrib.input("x", FLOAT, [1])), "y", FLOAT, [1])
    assert {o.domain: o.version for o in contrib.model("").opset_import} == {"": 17, MS_DOMAIN: 1}


def test_a_broken_graph_is_refused_by_onnxs_checker():
    g = Graph("broken")
    x = g.input("x", FLOAT, [1])
    g.output(g.op("Add", x, "nowhere"), "y", FLOAT, [1])  # an input nothing defines
    with pytest.raises(onnx.checker.ValidationError, match="nowhere"):
        g.model("")


def test_without_onnx_the_error_names_the_extra(monkeypatch):
    assert onnx_module() is onnx
    monkeypatch.setitem(sys.modules, "onnx", None)  # what an environment without the package gives
    with pytest.raises(ImportError, match=r"^the ONNX export needs the onnx extra: pip install 'kbert\[onnx\]'$"):
        Graph("any")
