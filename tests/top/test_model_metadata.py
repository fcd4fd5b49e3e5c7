"""The metadata files of a model directory (kbert.model_metadata): kbert.json read and written
atomically, file names resolved inside the directory, the vocabulary's line count.

- ``atomic_write``: a writer that fails half way (a full disk) leaves the previous file and no
  temporary file; the temporary file sits beside the target and ends with its name.
- ``read_metadata``: what ``write_metadata`` wrote reads back; a kbert.json that is not UTF-8, not
  JSON, or whose heads are not objects with a 'weights' file name is refused, named.
- ``resolve_file``: file names in kbert.json cannot leave the model directory (``..``, absolute
  paths, symlinks, NUL bytes, the directory itself; hypothesis generates more): each is refused or
  resolves to a file inside it.
- ``count_vocab``: a vocab.txt that is not UTF-8 is named.
"""

from __future__ import annotations

import errno
import json
import os
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fixtures.small_model_dir import VOCAB, copy_dir, write_small_model_dir
from kbert.model_dir import ModelDirError, load_encoder, load_heads
from kbert.model_metadata import FORMAT_VERSION, METADATA_FILE, atomic_write, read_metadata, write_metadata


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return write_small_model_dir(tmp_path_factory.mktemp("md") / "model")


def test_atomic_write_replaces_the_file_whole_or_leaves_it(tmp_path):
    path = tmp_path / "mlm.weights.h5"
    path.write_bytes(b"old")
    written = []

    def half(tmp):
        written.append(tmp)
        tmp.write_bytes(b"ne")
        raise OSError(errno.ENOSPC, "No space left on device (injected)", str(tmp))

    with pytest.raises(OSError, match="injected"):
        atomic_write(path, half)
    assert path.read_bytes() == b"old" and os.listdir(tmp_path) == ["mlm.weights.h5"]
    assert written[0].parent == tmp_path and written[0].name.endswith("mlm.weights.h5") and written[0] != path
    atomic_write(path, lambda tmp: tmp.write_bytes(b"new"))
    assert path.read_bytes() == b"new" and os.listdir(tmp_path) == ["mlm.weights.h5"]


def test_metadata_reads_back_as_written_and_defaults_without_a_file(tmp_path):
    assert read_metadata(tmp_path) == {"format": FORMAT_VERSION, "do_lower_case": True, "heads": {}}
    metadata = {"format": FORMAT_VERSION, "do_lower_case": False,
                "tokenizer": {"type": "wordpiece", "lower_case": False, "vocab_file": "vocab.txt"},
                "heads": {"mlm": {"type": "mlm", "weights": "mlm.weights.h5"}}}
    write_metadata(tmp_path, metadata)
    assert json.loads((tmp_path / METADATA_FILE).read_text(encoding="utf-8")) == metadata
    assert read_metadata(tmp_path) == metadata
    assert os.listdir(tmp_path) == [METADATA_FILE]


@pytest.mark.parametrize("metadata,match", [
    (b"\xff", r"kbert.json.*not UTF-8"),
    (b"{", r"kbert.json is not valid JSON"),
    (b'{"heads": ["mlm"]}', r"kbert.json.*'heads' object"),
    (b'{"heads": {"mlm": "mlm.weights.h5"}}', r"kbert.json: head 'mlm' must be an object"),
    (b'{"heads": {"mlm": {"type": "mlm"}}}', r"kbert.json: head 'mlm' has no 'weights' file name"),
    (b'{"heads": {"mlm": {"type": "mlm", "weights": 5}}}', r"kbert.json: head 'mlm' has no 'weights' file name"),
])
def test_malformed_kbert_json_is_named(model_dir, tmp_path, metadata, match):
    m = copy_dir(model_dir, tmp_path)
    (m / "kbert.json").write_bytes(metadata)
    with pytest.raises(ModelDirError, match=match):
        load_heads(m)


def test_vocab_that_is_not_utf8_is_named(model_dir, tmp_path):
    m = copy_dir(model_dir, tmp_path)
    (m / "vocab.txt").write_bytes(b"\xff\n" * len(VOCAB))
    with pytest.raises((ModelDirError, ValueError), match=r"vocab.txt.*UTF-8"):
        load_encoder(m)


# -- file names in kbert.json ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def head_dir(tmp_path_factory, tiny_model_dir):
    """A model directory with an MLM head, and a valid head weights file outside it."""
    from kbert.layers.heads import build_head
    from kbert.model_dir import load_config, save_weights

    root = tmp_path_factory.mktemp("paths")
    m = shutil.copytree(tiny_model_dir, root / "m")
    head = build_head("mlm", load_config(m))
    save_weights(head, m / "mlm.weights.h5")
    (root / "outside").mkdir()
    save_weights(head, root / "outside" / "mlm.weights.h5")
    return m


def _load_with_weights_name(model_dir, name):
    from kbert.model_dir import load_heads, read_metadata, write_metadata

    meta = read_metadata(model_dir)
    meta["heads"] = {"mlm": {"type": "mlm", "weights": name}}
    write_metadata(model_dir, meta)
    return load_heads(model_dir)


@pytest.mark.parametrize("name", [
    "../outside/mlm.weights.h5", "sub/../../outside/mlm.weights.h5", "{root}/outside/mlm.weights.h5",
    "link.weights.h5", "linkdir/mlm.weights.h5", "mlm.weights.h5\x00.txt", "", ".", "./",
])
def test_head_file_names_cannot_leave_the_model_directory(head_dir, name):
    from kbert.model_dir import ModelDirError

    root = head_dir.parent
    if not (head_dir / "link.weights.h5").exists():
        os.symlink(root / "outside" / "mlm.weights.h5", head_dir / "link.weights.h5")
        os.symlink(root / "outside", head_dir / "linkdir")
    with pytest.raises(ModelDirError) as info:
        _load_with_weights_name(head_dir, name.format(root=root))
    assert "outside the model directory" in str(info.value) or "not a file name" in str(info.value)


PATH_PARTS = st.sampled_from(["..", ".", "", "/", "outside", "mlm.weights.h5", "m", "sub", "~", "%2e%2e", "\\..",
                              "link.weights.h5", "linkdir"])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.one_of(PATH_PARTS, st.text(max_size=4)), min_size=1, max_size=6),
       absolute=st.booleans())
def test_generated_file_names_resolve_inside_or_are_refused(head_dir, parts, absolute):
    from kbert.model_dir import ModelDirError, resolve_file

    name = ("/" if absolute else "") + "/".join(parts)
    try:
        path = resolve_file(head_dir, name)
    except ModelDirError:
        return
    root = head_dir.resolve()
    assert root in path.parents, (name, path)
    assert path.resolve() == path


def test_kbert_json_nested_too_deep_is_one_model_dir_error(tmp_path):
    # Found by the fuzz tier (tests/fuzz/test_model_dir.py): json.loads' RecursionError escaped read_metadata.
    from kbert.model_metadata import read_metadata

    (tmp_path / "kbert.json").write_text('{"heads": {}, "do_lower_case": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ModelDirError, match="kbert.json nests JSON past Python's recursion limit") as error:
        read_metadata(tmp_path)
    assert str(tmp_path / "kbert.json") in str(error.value) and "\n" not in str(error.value)
