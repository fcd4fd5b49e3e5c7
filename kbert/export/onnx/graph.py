"""A small ONNX graph builder: named constants, nodes with unique output names, typed inputs and
outputs, and the finished ``onnx.ModelProto`` (``onnx.helper`` underneath).

Every other module of ``kbert.export.onnx`` writes its part of the graph through one ``Graph``:
``g.const("name", array)`` adds a weight, ``g.op("MatMul", x, w)`` a node and returns its output's
name (``outputs=n`` returns n names), ``g.ms("Attention", ...)`` a node of ONNX Runtime's
``com.microsoft`` domain.
"""

from __future__ import annotations

import itertools

import numpy as np

from kbert.errors import MissingExtra

MS_DOMAIN = "com.microsoft"
OPSET = 17  # the ONNX opset of every graph kbert writes (LayerNormalization is in it)
MS_OPSET = 1


def onnx_module():
    """``onnx``, or the error that names the extra it comes in."""
    try:
        import onnx
    except ImportError:
        raise MissingExtra("the ONNX export needs the onnx extra: pip install 'kbert[onnx]'", extra="onnx",
                           name="onnx") from None
    return onnx


class Graph:
    """Nodes, weights, inputs and outputs of one ONNX graph under construction."""

    def __init__(self, name: str):
        self.onnx = onnx_module()
        self.name = name
        self.nodes, self.initializers, self.inputs, self.outputs = [], [], [], []
        self._ids = itertools.count()
        self.uses_ms = False

    def fresh(self, hint: str) -> str:
        return f"{hint}_{next(self._ids)}"

    def const(self, name: str, value, dtype=None) -> str:
        """A weight or constant (numpy-convertible; strings as an object array) named ``name``."""
        array = np.asarray(value, dtype=dtype)
        if array.dtype.kind in "OU":
            tensor = self.onnx.helper.make_tensor(name, self.onnx.TensorProto.STRING, array.shape,
                                                  [str(v).encode("utf-8") for v in array.flat])
        else:
            tensor = self.onnx.numpy_helper.from_array(array.copy(order="C"), name)  # keeps 0-d arrays 0-d
        self.initializers.append(tensor)
        return name

    def op(self, op_type: str, *inputs, outputs: int = 1, name: str | None = None, domain: str = "", **attrs):
        """Adds a node; returns its output name (a list of names for ``outputs`` > 1). An input given
        as None is an omitted optional input."""
        base = name or self.fresh(op_type.lower())
        names = [base] if outputs == 1 else [f"{base}_{i}" for i in range(outputs)]
        self.nodes.append(self.onnx.helper.make_node(op_type, ["" if i is None else i for i in inputs], names,
                                                     name=self.fresh(op_type), domain=domain, **attrs))
        return names[0] if outputs == 1 else names

    def ms(self, op_type: str, *inputs, **kwargs):
        """A node of ONNX Runtime's contrib domain (com.microsoft)."""
        self.uses_ms = True
        return self.op(op_type, *inputs, domain=MS_DOMAIN, **kwargs)

    def input(self, name: str, elem_type: int, shape) -> str:
        self.inputs.append(self.onnx.helper.make_tensor_value_info(name, elem_type, shape))
        return name

    def output(self, value: str, name: str, elem_type: int, shape) -> str:
        """Exposes ``value`` as the graph output ``name`` (through an Identity where they differ)."""
        if value != name:
            self.op("Identity", value, name=name)
        self.outputs.append(self.onnx.helper.make_tensor_value_info(name, elem_type, shape))
        return name

    def model(self, producer_version: str):
        """The checked ``onnx.ModelProto``."""
        helper = self.onnx.helper
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.initializers)
        opsets = [helper.make_opsetid("", OPSET)] + ([helper.make_opsetid(MS_DOMAIN, MS_OPSET)] if self.uses_ms else [])
        model = helper.make_model(graph, opset_imports=opsets, producer_name="kbert",
                                  producer_version=producer_version)
        model.ir_version = 8  # readable by ONNX Runtime 1.14 and later
        self.onnx.checker.check_model(model)
        return model

    # -- a few compositions every part uses -------------------------------------------------------
    def scalar(self, value, dtype) -> str:
        return self.const(self.fresh("scalar"), np.asarray(value, dtype=dtype))

    def ints(self, values) -> str:
        return self.const(self.fresh("ints"), np.asarray(values, dtype=np.int64))

    def dense(self, x: str, kernel, bias, prefix: str) -> str:
        """``x @ kernel + bias`` (kernel [in, out], as Keras stores it)."""
        y = self.op("MatMul", x, self.const(f"{prefix}/kernel", kernel, np.float32))
        return self.op("Add", y, self.const(f"{prefix}/bias", bias, np.float32))

    def argmax(self, x: str, axis: int = -1) -> str:
        """int32 index of the largest value along ``axis`` (the first on ties, as tf.argmax)."""
        index = self.op("ArgMax", x, axis=axis, keepdims=0, select_last_index=0)
        return self.op("Cast", index, to=self.onnx.TensorProto.INT32)
