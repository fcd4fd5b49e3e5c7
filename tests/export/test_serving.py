"""kbert.export.serving, TF Serving's conventions, through its own functions: what counts as a kbert
export, write_export's whole-folder replacement and its refusals, warm-up requests read back with
TF Serving's protos, models.config and batching_parameters.txt parsed by TF Serving's (and
protobuf's) own parsers; and the tests' op lister (tests/fixtures/export_contents.py) on SavedModels
whose ops are known."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

import kbert
from conftest import require
from fixtures.tf_serving_protos import batching_parameters_class
from fixtures.export_contents import read_warmup_requests, saved_model_ops
from kbert.export.serving import (BATCHING_FILE, BATCHING_PARAMETERS, EXPORT_MARKER, WARMUP_FILE, is_kbert_export,
                                  write_batching_parameters, write_export, write_models_config, write_warmup_requests,
                                  write_warmup_requests_for)
from kbert.model_dir import ModelDirError, OutputExistsError

require("tensorflow_serving", "TF Serving's request and config protos")
from google.protobuf import text_format  # noqa: E402
from tensorflow_serving.config import model_server_config_pb2  # noqa: E402


def tree(root) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None for p in sorted(root.rglob("*"))}


def writer(files: dict):
    """A write(tmp) for write_export that makes the folder with ``files``."""
    def write(tmp):
        tmp.mkdir()
        for name, text in files.items():
            (tmp / name).write_text(text, encoding="utf-8")
    return write


# -- what write_export may replace ----------------------------------------------------------------
def test_is_kbert_export(tmp_path):
    assert not is_kbert_export(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    assert is_kbert_export(tmp_path / "empty")  # nothing to lose
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "saved_model.pb").write_bytes(b"x")
    assert not is_kbert_export(tmp_path / "theirs")
    (tmp_path / "file").write_text("x")
    assert not is_kbert_export(tmp_path / "file")
    (tmp_path / "ours" / "assets.extra").mkdir(parents=True)
    (tmp_path / "ours" / "assets.extra" / EXPORT_MARKER).write_text("{}")
    assert is_kbert_export(tmp_path / "ours")
    (tmp_path / "link").symlink_to(tmp_path / "ours")
    assert not is_kbert_export(tmp_path / "link")  # a link is never replaced as if it were the folder


def test_write_export_puts_the_folder_whole_with_its_marker(tmp_path):
    out = tmp_path / "saved_models" / "m" / "1"
    assert write_export(out, writer({"saved_model.pb": "new", "old_only.txt": "x"}), kind="encoder",
                        source="dir/a") == out
    assert json.loads((out / "assets.extra" / EXPORT_MARKER).read_text()) == {"kind": "encoder", "source": "dir/a"}
    write_export(out, writer({"saved_model.pb": "newer"}), kind="task", source=tmp_path / "b")
    assert tree(out) == {"assets.extra": None, f"assets.extra/{EXPORT_MARKER}":
                         (json.dumps({"kind": "task", "source": str(tmp_path / "b")}) + "\n").encode(),
                         "saved_model.pb": b"newer"}  # the earlier export's other file is gone
    assert sorted(os.listdir(out.parent)) == ["1"]  # no temporary folder left beside it


def test_a_failed_write_leaves_the_earlier_version(tmp_path):
    out = tmp_path / "m" / "1"
    write_export(out, writer({"saved_model.pb": "good"}), kind="encoder", source="src")
    before = tree(out)

    def fails(tmp):
        writer({"saved_model.pb": "half"})(tmp)
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError, match="interrupted"):
        write_export(out, fails, kind="encoder", source="src")
    assert tree(out) == before and sorted(os.listdir(out.parent)) == ["1"]


def test_write_export_refuses_what_it_would_lose(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    with pytest.raises(OutputExistsError, match=f"^{theirs} already exists; pass --overwrite to replace it whole$"):
        write_export(theirs, writer({"saved_model.pb": "x"}), kind="encoder", source="src")
    assert tree(theirs) == {"notes.txt": b"mine"}
    write_export(theirs, writer({"saved_model.pb": "x"}), kind="encoder", source="src", overwrite=True)
    assert (theirs / "saved_model.pb").read_text() == "x" and not (theirs / "notes.txt").exists()
    model_dir = tmp_path / "model"
    (model_dir / "export").mkdir(parents=True)
    for out in (model_dir, tmp_path):  # the model directory itself, or a folder holding it: never
        before = tree(tmp_path)
        with pytest.raises(OutputExistsError, match="is an input of this command"):
            write_export(out, writer({}), kind="encoder", source=model_dir, overwrite=True)
        assert tree(tmp_path) == before


# -- warm-up requests -----------------------------------------------------------------------------
def test_warmup_requests_read_back_as_tf_serving_reads_them(tmp_path):
    ids = np.arange(12, dtype=np.int32).reshape(2, 6)
    path = write_warmup_requests_for(tmp_path, "bert", [
        ("serving_default", {"text": ["héllo wörld", "字"]}),
        ("serving_ids", {"input_word_ids": ids, "input_mask": np.ones_like(ids)}),
    ])
    assert path == tmp_path / "assets.extra" / WARMUP_FILE
    logs = read_warmup_requests(tmp_path)
    requests = [log.predict_log.request for log in logs]
    assert [(r.model_spec.name, r.model_spec.signature_name) for r in requests] == [
        ("bert", "serving_default"), ("bert", "serving_ids")]
    text = tf.make_ndarray(requests[0].inputs["text"])
    assert requests[0].inputs["text"].dtype == tf.string.as_datatype_enum
    assert [t.decode("utf-8") for t in text] == ["héllo wörld", "字"]  # UTF-8, not numpy's UCS-4
    np.testing.assert_array_equal(tf.make_ndarray(requests[1].inputs["input_word_ids"]), ids)
    assert tf.make_ndarray(requests[1].inputs["input_mask"]).dtype == np.int32
    # one signature, several requests: the same file, rewritten
    write_warmup_requests(tmp_path, "bert", "serving_default", [{"text": ["a"]}, {"text": ["b", "c"]}])
    again = [log.predict_log.request for log in read_warmup_requests(tmp_path)]
    assert [r.model_spec.signature_name for r in again] == ["serving_default"] * 2
    assert [tf.make_ndarray(r.inputs["text"]).tolist() for r in again] == [[b"a"], [b"b", b"c"]]


# -- models.config and batching_parameters.txt ----------------------------------------------------
def versions(root, *paths):
    for path in paths:
        (root / path).mkdir(parents=True)
        (root / path / "saved_model.pb").write_bytes(b"")


def parsed_config(path) -> list:
    config = text_format.Parse(path.read_text(encoding="utf-8"), model_server_config_pb2.ModelServerConfig())
    return [(c.name, c.base_path, c.model_platform) for c in config.model_config_list.config]


def test_models_config_lists_each_model_with_a_version(tmp_path):
    versions(tmp_path, "sst2/1", "encoder/3", ".hidden/1")
    (tmp_path / "draft" / "1").mkdir(parents=True)  # a version without saved_model.pb
    (tmp_path / "named" / "latest").mkdir(parents=True)  # not a version number
    (tmp_path / "named" / "latest" / "saved_model.pb").write_bytes(b"")
    path = write_models_config(tmp_path)
    assert path == tmp_path / "models.config"
    assert parsed_config(path) == [("encoder", "/models/encoder", "tensorflow"), ("sst2", "/models/sst2", "tensorflow")]
    assert path.read_text().startswith("# tensorflow_model_server --model_config_file=models.config")
    assert (tmp_path / BATCHING_FILE).exists()


def test_models_config_keeps_what_it_has_and_adds_the_new(tmp_path):
    versions(tmp_path, "old/1")
    hand = ('model_config_list {\n  config {\n    name: "old"\n    base_path: "/srv/old"\n'
            '    model_platform: "tensorflow"\n    model_version_policy { specific { versions: 1 } }\n'
            '  }\n}  # closing }\n# after }\n')
    (tmp_path / "models.config").write_text(hand)
    assert write_models_config(tmp_path).read_text() == hand  # nothing new
    versions(tmp_path, "new/2")
    text = write_models_config(tmp_path).read_text()
    assert text.startswith(hand[:hand.index("}  # closing")]) and text.endswith("}  # closing }\n# after }\n")
    assert parsed_config(tmp_path / "models.config") == [("old", "/srv/old", "tensorflow"),
                                                         ("new", "/models/new", "tensorflow")]
    config = text_format.Parse(text, model_server_config_pb2.ModelServerConfig())
    assert list(config.model_config_list.config[0].model_version_policy.specific.versions) == [1]
    assert not config.model_config_list.config[1].HasField("model_version_policy")  # TF Serving's default: latest


def test_models_config_extends_a_list_on_one_line_and_a_file_of_comments(tmp_path):
    versions(tmp_path, "a/1", "b/1")
    one_line = 'model_config_list { config { name: "a" base_path: "/srv/a#1" } }  # a "#" in a path, a } here\n'
    (tmp_path / "models.config").write_text(one_line)
    text = write_models_config(tmp_path).read_text()
    assert text.startswith('model_config_list { config { name: "a" base_path: "/srv/a#1" } ')
    assert text.endswith('}  # a "#" in a path, a } here\n')
    assert parsed_config(tmp_path / "models.config") == [("a", "/srv/a#1", ""), ("b", "/models/b", "tensorflow")]
    (tmp_path / "models.config").write_text("# models go here\n")
    text = write_models_config(tmp_path).read_text()
    assert text.startswith("# models go here\n")
    assert parsed_config(tmp_path / "models.config") == [("a", "/models/a", "tensorflow"),
                                                         ("b", "/models/b", "tensorflow")]


def test_models_config_refuses_a_file_it_cannot_extend(tmp_path):
    versions(tmp_path, "a/1", "b/1")
    angle = 'model_config_list <\n  config < name: "a" base_path: "/m/a" >\n>\n'  # valid, but not its braces
    assert parsed_config_text(angle) == ["a"]
    custom = 'custom_model_config { }\n'
    for text, message in [(angle, "models.config: cannot tell where its model_config_list ends"),
                          ("model_config_list { config { name: ", "models.config is not a TF Serving model config"),
                          ("model_config_list { config { nme: 'a' } }", "models.config is not a TF Serving model config"),
                          (custom, "models.config holds a custom_model_config, not a model_config_list")]:
        (tmp_path / "models.config").write_text(text)
        with pytest.raises(ModelDirError, match=message) as raised:
            write_models_config(tmp_path)
        assert isinstance(raised.value, kbert.Error) and "\n" not in str(raised.value)
        assert (tmp_path / "models.config").read_text() == text
    latin1 = 'model_config_list { config { name: "Zürich" } }'.encode("latin-1")
    (tmp_path / "models.config").write_bytes(latin1)
    with pytest.raises(ModelDirError, match=rf"models.config is not UTF-8 text \(byte {latin1.index(0xfc)}\)"):
        write_models_config(tmp_path)
    assert (tmp_path / "models.config").read_bytes() == latin1


def parsed_config_text(text) -> list:
    config = text_format.Parse(text, model_server_config_pb2.ModelServerConfig())
    return [c.name for c in config.model_config_list.config]


def test_batching_parameters_parse_as_tf_servings_message(tmp_path):
    path = write_batching_parameters(tmp_path, {"max_batch_size": 8})
    parsed = text_format.Parse(path.read_text(), batching_parameters_class()())
    assert parsed.max_batch_size.value == 8 and parsed.pad_variable_length_inputs
    assert parsed.num_batch_threads.value == BATCHING_PARAMETERS["num_batch_threads"]
    assert parsed.batch_timeout_micros.value == BATCHING_PARAMETERS["batch_timeout_micros"]
    # models.config writes one where there is none, and leaves a hand-tuned one alone
    path.write_text("max_batch_size { value: 4 }\n")
    versions(tmp_path, "m/1")
    write_models_config(tmp_path)
    assert path.read_text() == "max_batch_size { value: 4 }\n"


# -- the op lister the export tests check exports with (tests/fixtures/export_contents.py) ----------
def test_saved_model_ops_are_the_ops_of_its_functions(tmp_path):
    module = tf.Module()
    module.w = tf.Variable(tf.ones([3, 2]))
    module.f = tf.function(lambda x, s: {"y": tf.matmul(x, module.w) + 1.0, "s": tf.strings.join([s, s])},
                           input_signature=[tf.TensorSpec([None, 3]), tf.TensorSpec([None], tf.string)],
                           autograph=False)
    tf.saved_model.save(module, str(tmp_path), signatures={"serving_default": module.f.get_concrete_function()})
    ops = saved_model_ops(tmp_path)
    assert {"MatMul", "AddV2", "StringJoin", "ReadVariableOp", "VarHandleOp"} <= ops
    assert not [op for op in ops if op.startswith("__inference")]
    assert {"Conv2D", "PyFunc"}.isdisjoint(ops)


def test_a_call_to_a_library_function_by_name_is_not_an_op(tmp_path):
    """A GraphDef may call a function of its library by naming it as a node's op (what TF1's Defun
    wrote): that is not an op a server links. A SavedModel proto written by hand says so."""
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    graph = proto.meta_graphs.add().graph_def
    graph.node.add(name="x", op="Placeholder")
    graph.node.add(name="call", op="my_function", input=["x"])
    function = graph.library.function.add()
    function.signature.name = "my_function"
    function.node_def.add(name="twice", op="AddV2")
    function.node_def.add(name="inner_call", op="other_function")
    graph.library.function.add().signature.name = "other_function"
    (tmp_path / "saved_model.pb").write_bytes(proto.SerializeToString())
    assert saved_model_ops(tmp_path) == {"Placeholder", "AddV2"}
