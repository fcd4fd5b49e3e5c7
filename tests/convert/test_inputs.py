"""Hostile model folders and outputs that already exist: each refused with one line naming the file (and
field, value, expected type), exit status 1, and no file changed."""

import hashlib
import json
import os
import pathlib
import shutil
import signal
import zipfile

import numpy as np
import pytest

from fixtures.cli import command_status
from kbert.convert import inputs
from kbert.convert.inputs import extract_zip
from kbert.convert.names import ConversionError
from kbert.model_dir import METADATA_FILE, load_encoder, load_heads, read_metadata
from fixtures.hf_tiny import hf_cache_entry, make_hf_folder


@pytest.fixture(scope="module")
def tiny_hf(tmp_path_factory):
    return make_hf_folder(tmp_path_factory.mktemp("hf") / "tiny")


@pytest.fixture
def folder(tmp_path, tiny_hf):
    """A fresh copy of the tiny folder, to spoil."""
    return pathlib.Path(shutil.copytree(tiny_hf, tmp_path / "src"))


def _tree(root) -> dict:
    """Every path under ``root`` (links as links) with its content's hash."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = pathlib.Path(dirpath) / name
            if path.is_symlink():
                out[str(path)] = "-> " + os.readlink(path)
            elif path.is_file():
                out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                out[str(path)] = "dir" if path.is_dir() else "special"
    return out


def _refused(capsys, tmp_path, args, *expected):
    """Runs ``kbert convert ARGS``; asserts exit 1, one line holding ``expected``, nothing changed."""
    capsys.readouterr()  # what earlier commands printed
    before = _tree(tmp_path)
    assert command_status("convert", args) == 1
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert "\n" not in err and err.startswith("kbert convert: error: "), err
    for part in expected:
        assert part in err, (part, err)
    assert "Traceback" not in err and "written" not in captured.out
    assert _tree(tmp_path) == before
    return err


def test_a_link_out_of_the_folder_is_refused_naming_it(tmp_path, folder, capsys):
    outside = tmp_path / "secret.txt"
    shutil.copy(folder / "vocab.txt", outside)  # same content: only the link makes it wrong
    (folder / "vocab.txt").unlink()
    (folder / "vocab.txt").symlink_to(outside)
    _refused(capsys, tmp_path, ["hf", str(folder), str(tmp_path / "out")],
             f"{folder / 'vocab.txt'} is a symbolic link to {outside}, outside {folder}")
    (folder / "vocab.txt").unlink()
    os.symlink("../secret.txt", folder / "vocab.txt")  # relative, same place
    _refused(capsys, tmp_path, ["hf", str(folder), str(tmp_path / "out")], "vocab.txt is a symbolic link")
    for name in ("config.json", "model.safetensors"):  # any file it reads
        other = pathlib.Path(shutil.copytree(folder, tmp_path / f"src-{name}", symlinks=True))
        (other / "vocab.txt").unlink()
        shutil.copy(outside, other / "vocab.txt")
        shutil.move(other / name, tmp_path / f"outside-{name}")
        (other / name).symlink_to(tmp_path / f"outside-{name}")
        _refused(capsys, tmp_path, ["hf", str(other), str(tmp_path / "out")], f"{other / name} is a symbolic link")


def test_links_inside_the_folder_and_into_a_cache_blobs_are_read(tmp_path, folder, capsys):
    (folder / "vocab-real.txt").write_bytes((folder / "vocab.txt").read_bytes())
    (folder / "vocab.txt").unlink()
    (folder / "vocab.txt").symlink_to("vocab-real.txt")
    assert command_status("convert", ["hf", str(folder), str(tmp_path / "a")]) == 0, capsys.readouterr().err
    snapshot = hf_cache_entry(tmp_path / "hub", "org/tiny", folder)
    assert (snapshot / "config.json").is_symlink()
    assert command_status("convert", ["hf", str(snapshot), str(tmp_path / "b")]) == 0, capsys.readouterr().err
    np.testing.assert_array_equal(load_encoder(tmp_path / "a").word_embeddings.numpy(),
                                  load_encoder(tmp_path / "b").word_embeddings.numpy())
    # ... but not from one cache entry into another's blobs
    other = hf_cache_entry(tmp_path / "hub", "org/other", folder)
    link = other / "vocab.txt"
    link.unlink()
    link.symlink_to(snapshot.parent.parent / "blobs" / os.path.basename(os.readlink(snapshot / "vocab.txt")))
    _refused(capsys, tmp_path, ["hf", str(other), str(tmp_path / "c")], f"{link} is a symbolic link")


def test_a_fifo_is_refused_without_hanging(tmp_path, folder, capsys):
    (folder / "tokenizer_config.json").unlink()
    os.mkfifo(folder / "tokenizer_config.json")

    def hung(*_):
        raise AssertionError("reading the FIFO hung")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(120)
    try:
        _refused(capsys, tmp_path, ["hf", str(folder), str(tmp_path / "out")],
                 f"{folder / 'tokenizer_config.json'} is a FIFO (named pipe), not a regular file")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _edit_json(path, **fields):
    data = json.loads(path.read_text())
    data.update(fields)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("file, content, expected", [
    ("config.json", {"layer_norm_eps": "1e-12"},
     "config.json: field 'layer_norm_eps' is '1e-12' (a JSON string); expected a number"),
    ("config.json", {"hidden_size": 32.0},
     "config.json: field 'hidden_size' is 32.0 (a JSON number); expected an integer"),
    ("config.json", {"hidden_act": ["gelu"]},
     "config.json: field 'hidden_act' is ['gelu'] (a JSON list); expected a string"),
    ("config.json", [1, 2], "config.json: expected a JSON object, got a JSON list"),
    ("config.json", b"{\"a\": \"\xff\"}", "config.json is not UTF-8 (byte 7)"),
    ("tokenizer_config.json", b"\xfe\xff", "tokenizer_config.json is not UTF-8 (byte 0)"),
    ("tokenizer_config.json", {"tokenizer_class": ["BertTokenizer"]},
     "tokenizer_config.json: field 'tokenizer_class' is ['BertTokenizer'] (a JSON list); expected a string or null"),
    ("tokenizer_config.json", {"tokenizer_class": "BertJapaneseTokenizer", "do_lower_case": False,
                               "word_tokenizer_type": ["mecab"]},
     "tokenizer_config.json: field 'word_tokenizer_type' is ['mecab'] (a JSON list); expected a string"),
    ("tokenizer_config.json", {"tokenizer_class": "BertJapaneseTokenizer", "do_lower_case": False,
                               "word_tokenizer_type": "mecab", "mecab_kwargs": {"mecab_dic": ["ipadic"]}},
     "tokenizer_config.json: field 'mecab_kwargs.mecab_dic' is ['ipadic'] (a JSON list); expected a string"),
    ("tokenizer_config.json", {"tokenizer_class": "BertJapaneseTokenizer", "do_lower_case": False,
                               "word_tokenizer_type": "mecab", "mecab_kwargs": "ipadic"},
     "tokenizer_config.json: field 'mecab_kwargs' is 'ipadic' (a JSON string); expected an object or null"),
])
def test_json_fields_of_the_wrong_type_are_one_line(tmp_path, folder, capsys, file, content, expected):
    path = folder / file
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, list):
        path.write_text(json.dumps(content))
    else:
        _edit_json(path, **content)
    named = str(folder / expected.split(":")[0].split(" ")[0])
    _refused(capsys, tmp_path, ["hf", str(folder), str(tmp_path / "out")], named, expected)


@pytest.fixture
def fine_tuned(tmp_path, tiny_hf):
    """DIR holding a model that is not the converter's to replace: a fine-tuned one (task and
    eval_metrics in kbert.json, a task head) whose MLM/NSP heads have another width."""
    wide = make_hf_folder(tmp_path / "wide", heads=True, hidden=64, seed=5)
    model = tmp_path / "DIR"
    assert command_status("convert", ["hf", str(wide), str(model)]) == 0
    metadata = read_metadata(model)
    metadata.update(task={"type": "classifier", "labels": ["neg", "pos"]}, eval_metrics={"accuracy": 0.91})
    metadata["heads"]["task"] = {"weights": "task.weights.h5", "type": "classifier"}
    (model / METADATA_FILE).write_text(json.dumps(metadata))
    (model / "task.weights.h5").write_bytes(b"not really weights")
    return model


def test_converting_over_a_model_is_refused_unless_overwrite_then_replaced_whole(tmp_path, tiny_hf, fine_tuned,
                                                                                 capsys):
    capsys.readouterr()
    _refused(capsys, tmp_path, ["hf", str(tiny_hf), str(fine_tuned)],
             f"the output {fine_tuned} already holds a model (kbert.json); pass --overwrite")
    # an unrelated non-empty folder too; an empty one is fine
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("mine")
    _refused(capsys, tmp_path, ["hf", str(tiny_hf), str(tmp_path / "notes")], "already holds files")
    (tmp_path / "empty").mkdir()
    assert command_status("convert", ["hf", str(tiny_hf), str(tmp_path / "empty")]) == 0
    # --overwrite: the old content goes whole
    assert command_status("convert", ["hf", str(tiny_hf), str(fine_tuned), "--overwrite"]) == 0, capsys.readouterr().err
    metadata = read_metadata(fine_tuned)
    assert "task" not in metadata and "eval_metrics" not in metadata and metadata["heads"] == {}
    assert not (fine_tuned / "task.weights.h5").exists() and not (fine_tuned / "mlm.weights.h5").exists()
    assert load_encoder(fine_tuned).config.hidden_size == 32 and load_heads(fine_tuned) == {}
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary left


def test_a_failed_overwrite_leaves_the_old_model(tmp_path, tiny_hf, folder, fine_tuned, capsys, monkeypatch):
    capsys.readouterr()
    (folder / "vocab.txt").write_text("[PAD]\n[UNK]\n")  # sizes differ: found only while converting
    before = _tree(fine_tuned)
    assert command_status("convert", ["hf", str(folder), str(fine_tuned), "--overwrite"]) == 1
    assert "vocabulary sizes differ" in capsys.readouterr().err
    assert _tree(fine_tuned) == before
    # a failure after the new model is written in full, before it is renamed into place
    from kbert.convert import common

    real = common.save_model_dir

    def written_then_killed(*args, **kwargs):
        real(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(common, "save_model_dir", written_then_killed)
    assert command_status("convert", ["hf", str(tiny_hf), str(fine_tuned), "--overwrite"]) == 130  # interrupted
    assert _tree(fine_tuned) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_the_output_may_not_be_the_input(tmp_path, folder, capsys):
    _refused(capsys, tmp_path, ["hf", str(folder), str(folder), "--overwrite"], "is (or holds, or is inside) the input")
    _refused(capsys, tmp_path, ["hf", str(folder), str(folder / "sub"), "--overwrite"], "the input folder")


def test_a_google_checkpoint_folder_is_read_not_followed(tmp_path, tiny_hf, capsys):
    from kbert.convert import google, hf

    model = hf.convert(tiny_hf, tmp_path / "model")
    google.to_google(model, tmp_path / "release" / "bert_model.ckpt")
    release = tmp_path / "release"
    shutil.move(release / "vocab.txt", tmp_path / "elsewhere.txt")
    (release / "vocab.txt").symlink_to(tmp_path / "elsewhere.txt")
    _refused(capsys, tmp_path, ["google", str(release), str(tmp_path / "out")],
             f"{release / 'vocab.txt'} is a symbolic link to {tmp_path / 'elsewhere.txt'}, outside {release}")
    (release / "vocab.txt").unlink()
    shutil.move(tmp_path / "elsewhere.txt", release / "vocab.txt")
    (release / "bert_config.json").unlink()
    os.mkfifo(release / "bert_config.json")
    _refused(capsys, tmp_path, ["google", str(release / "bert_model.ckpt"), str(tmp_path / "out")],
             f"{release / 'bert_config.json'} is a FIFO (named pipe), not a regular file")


# -- zips: refused whole before anything is written ------------------------------------------


def _zip(path, members):
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            archive.writestr(name, data)
    return path


def test_an_ordinary_release_zip_unpacks_byte_for_byte(tmp_path):
    members = [("uncased_L-2_H-128_A-2/bert_config.json", b'{"hidden_size": 128}'),
               ("uncased_L-2_H-128_A-2/vocab.txt", "[PAD]\n日本\n".encode())]
    extract_zip(_zip(tmp_path / "r.zip", members), tmp_path / "out")
    for name, data in members:
        assert (tmp_path / "out" / name).read_bytes() == data


def _link(name):
    info = zipfile.ZipInfo(name)
    info.external_attr = (0o120777 << 16)
    return info


@pytest.mark.parametrize("name, message", [
    ("../evil.txt", "outside the folder"),
    ("a/../../evil.txt", "outside the folder"),
    ("/etc/evil.txt", "outside the folder"),
    ("C:/evil.txt", "outside the folder"),
    ("..\\evil.txt", "outside the folder"),
    (_link("release/vocab.txt"), "symbolic link"),
])
def test_a_member_that_escapes_or_links_is_refused_and_nothing_is_written(tmp_path, name, message):
    source = _zip(tmp_path / "r.zip", [("release/bert_config.json", b"{}"), (name, b"/etc/passwd")])
    with pytest.raises(ConversionError, match=message):
        extract_zip(source, tmp_path / "out")
    assert not (tmp_path / "out").exists() and not (tmp_path / "evil.txt").exists()


def test_a_decompression_bomb_is_refused_from_its_headers(tmp_path):
    source = _zip(tmp_path / "r.zip", [("release/bert_model.ckpt.data-00000-of-00001", bytes(8 * 2**20))])
    with pytest.raises(ConversionError, match=r"8388608 bytes from \d+ .*decompression bomb"):
        extract_zip(source, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_members_over_the_total_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(inputs, "MAX_ARCHIVE_BYTES", 1000)
    source = _zip(tmp_path / "r.zip", [("a", bytes(os.urandom(600))), ("b", bytes(os.urandom(600)))])
    with pytest.raises(ConversionError, match="over 1000 bytes"):
        extract_zip(source, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_truncated_zip_is_one_conversion_error(tmp_path):
    whole = _zip(tmp_path / "r.zip", [("release/vocab.txt", os.urandom(5000))]).read_bytes()
    (tmp_path / "cut.zip").write_bytes(whole[:len(whole) // 2] + whole[-22:])
    with pytest.raises(ConversionError, match="cut.zip cannot be unpacked"):
        extract_zip(tmp_path / "cut.zip", tmp_path / "out")
