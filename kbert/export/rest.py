"""TF Serving's REST predict API, reproduced for tests and docs (no server here).

``POST /v1/models/NAME[/versions/V]:predict`` with ``{"signature_name": ..., "instances": [...]}``
(row format) or ``{"inputs": ...}`` (columnar), as documented at
https://www.tensorflow.org/tfx/serving/api_rest: instances are stacked along a new batch axis,
named inputs come as objects (a signature with one input may take bare values), strings are JSON
strings (or ``{"b64": ...}``, which is also how string outputs named ``*_bytes`` are answered).
The response is ``{"predictions": [...]}`` for the row format (one object per instance when
there are several outputs) and ``{"outputs": ...}`` for the columnar one. ``predict`` runs a
loaded SavedModel's signature on such a request, so docs/serving.md's request/response examples
are tested exactly as a server would treat them (tests/export/test_rest.py checks it against
TF Serving's documented responses).
"""

from __future__ import annotations

import base64

import numpy as np
import tensorflow as tf

from kbert.errors import Error


class RestError(Error, ValueError):
    pass


def _decode_value(value):
    if isinstance(value, dict) and set(value) == {"b64"}:
        return base64.b64decode(value["b64"])
    if isinstance(value, list):
        return [_decode_value(v) for v in value]
    if isinstance(value, str):
        return value.encode("utf-8")
    return value


def _to_array(value, spec: tf.TensorSpec, name: str):
    value = _decode_value(value)
    if spec.dtype == tf.string:
        array = np.array(value, dtype=object)
    else:
        try:
            array = np.array(value, dtype=spec.dtype.as_numpy_dtype)
        except (TypeError, ValueError) as e:
            raise RestError(f"input {name!r}: expected {spec.dtype.name} values: {e}") from None
    if spec.shape.rank is not None and array.ndim != spec.shape.rank:
        raise RestError(f"input {name!r}: expected rank {spec.shape.rank} ({spec.shape}), got shape {array.shape}")
    return array


def parse_request(body: dict, input_specs: dict) -> tuple[dict, bool]:
    """JSON body -> ({input name: numpy array}, row_format)."""
    if ("instances" in body) == ("inputs" in body):
        raise RestError('the request must have exactly one of "instances" or "inputs"')
    names = sorted(input_specs)
    if "instances" in body:
        instances = body["instances"]
        if not isinstance(instances, list):
            raise RestError('"instances" must be a list')
        if instances and all(isinstance(i, dict) and "b64" not in i for i in instances):
            columns = {}
            for n, instance in enumerate(instances):
                if set(instance) != set(names):
                    raise RestError(f"instance {n} has inputs {sorted(instance)}; the signature takes {names}")
                for name in names:
                    columns.setdefault(name, []).append(instance[name])
        elif len(names) == 1:
            columns = {names[0]: instances}
        else:
            raise RestError(f"the signature takes several inputs {names}: each instance must be an object")
        return {name: _to_array(columns.get(name, []), input_specs[name], name) for name in names}, True
    inputs = body["inputs"]
    if not isinstance(inputs, dict) or (len(names) == 1 and set(inputs) != set(names)):
        inputs = {names[0]: inputs} if len(names) == 1 else inputs
    if set(inputs) != set(names):
        raise RestError(f'"inputs" has {sorted(inputs)}; the signature takes {names}')
    return {name: _to_array(inputs[name], input_specs[name], name) for name in names}, False


def _jsonable(array, name=""):
    array = np.asarray(array)
    if name.endswith("_bytes") and (array.dtype == object or array.dtype.kind == "S"):
        # TF Serving: string outputs named *_bytes hold binary values, answered as {"b64": ...}
        encode = np.vectorize(lambda b: {"b64": base64.b64encode(b).decode("ascii")}, otypes=[object])
        return encode(array).tolist() if array.size else array.tolist()
    if array.dtype == object or array.dtype.kind == "S":
        decode = np.vectorize(lambda b: b.decode("utf-8", "replace") if isinstance(b, bytes) else b,
                              otypes=[object])
        return decode(array).tolist() if array.size else array.tolist()
    return array.tolist()


def format_response(outputs: dict, row_format: bool) -> dict:
    outputs = {k: np.asarray(v) for k, v in outputs.items()}
    if not row_format:
        values = {k: _jsonable(v, k) for k, v in sorted(outputs.items())}
        return {"outputs": next(iter(values.values())) if len(values) == 1 else values}
    batch = {v.shape[0] if v.ndim else None for v in outputs.values()}
    if len(batch) != 1 or None in batch:
        raise RestError("row format needs every output to have the same batch size; use \"inputs\"")
    n = batch.pop()
    if len(outputs) == 1:
        (name, value), = outputs.items()
        return {"predictions": _jsonable(value, name)}
    rows = [{k: _jsonable(v[i], k) for k, v in sorted(outputs.items())} for i in range(n)]
    return {"predictions": rows}


def predict(loaded, body: dict) -> dict:
    """Runs ``loaded.signatures[body.get("signature_name", "serving_default")]`` on a REST body."""
    name = body.get("signature_name", "serving_default")
    if name not in loaded.signatures:
        raise RestError(f"no signature {name!r}; the model has {sorted(loaded.signatures)}")
    fn = loaded.signatures[name]
    specs = fn.structured_input_signature[1]
    arrays, row_format = parse_request(body, specs)
    outputs = fn(**{k: tf.constant(v, dtype=specs[k].dtype) for k, v in arrays.items()})
    return format_response({k: v.numpy() for k, v in outputs.items()}, row_format)
