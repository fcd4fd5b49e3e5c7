"""Reading a checkpoint folder's files without trusting them.

A model folder is read, not followed: a file that is a symbolic link resolving outside the folder is
refused naming the link (a downloaded folder may carry such a link, and the converter would copy the
outside file into the new model), except a Hugging Face cache snapshot's links into the cache's own
``blobs`` (``snapshots/<rev>/vocab.txt -> ../../blobs/<hash>``). Anything that is not a regular file
(a FIFO, a device, a directory) is refused before it is opened, so nothing hangs reading it. JSON
files must be UTF-8 objects, and each field read from them is checked with ``typed``: a wrong type is
one ``ConversionError`` naming the file, the field, the value and the type expected.
"""

from __future__ import annotations

import json
import os
import pathlib
import stat

from kbert.convert.names import ConversionError

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _in_hf_blobs(folder: pathlib.Path, target: pathlib.Path) -> bool:
    """``folder`` is a cache snapshot (``models--org--name/snapshots/<rev>``) and ``target`` one of
    that cache entry's blobs."""
    return folder.parent.name == "snapshots" and target.parent == folder.parent.parent / "blobs"


def input_file(folder, name: str) -> pathlib.Path | None:
    """``folder/name`` if it is there (``None`` if not): a regular file inside ``folder`` (links
    included that stay inside it or point into a Hugging Face cache's blobs)."""
    folder = pathlib.Path(folder)
    path = folder / name
    if not os.path.lexists(path):
        return None
    root = folder.resolve()
    target = path.resolve()
    if root not in target.parents and not _in_hf_blobs(root, target):
        raise ConversionError(
            f"{path} is a symbolic link to {os.readlink(path) if path.is_symlink() else target}, outside {folder}: "
            "kbert reads a model folder's own files and does not follow links out of it (copy the file in)")
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        raise ConversionError(f"{path} is a broken symbolic link") from None
    if not stat.S_ISREG(mode):
        kind = next((what for test, what in _KINDS if test(mode)), "not a regular file")
        raise ConversionError(f"{path} is {kind}, not a regular file")
    return path


def read_json_object(folder, name: str) -> dict | None:
    """The JSON object in ``folder/name`` (``None`` if there is no such file)."""
    path = input_file(folder, name)
    if path is None:
        return None
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ConversionError(f"{path} is not UTF-8 (byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise ConversionError(f"{path} is not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise ConversionError(f"{path}: expected a JSON object, got a JSON {_json_type(data)}")
    return data


def _json_type(value) -> str:
    names = {bool: "boolean", int: "number", float: "number", str: "string", list: "list", dict: "object"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


_EXPECTED = {str: "a string", bool: "true or false", int: "an integer", float: "a number", dict: "an object",
             list: "a list", type(None): "null"}


def typed(data: dict, field: str, types, where, default=None, label: str | None = None):
    """``data[field]`` (``default`` when absent) if it has one of ``types``; a ``ConversionError``
    naming ``where``, the field, the value and the expected type otherwise. ``float`` accepts
    integers too; ``int`` and ``float`` refuse booleans. ``label``: the field's name in the message
    (``mecab_kwargs.mecab_dic`` for a nested one)."""
    types = types if isinstance(types, tuple) else (types,)
    if field not in data:
        return default
    value = data[field]
    ok = any(
        isinstance(value, t) and not (t in (int, float) and isinstance(value, bool))
        or (t is float and isinstance(value, int) and not isinstance(value, bool))
        for t in types)
    if not ok:
        expected = " or ".join(_EXPECTED.get(t, t.__name__) for t in types)
        raise ConversionError(f"{where}: field {label or field!r} is {value!r} (a JSON {_json_type(value)}); "
                              f"expected {expected}")
    return value


# What an archive may hold before it is refused unread: google-research/bert's largest release
# (BERT-Large, whole word masking) unpacks to about 1.3 GB, and its checkpoint compresses barely
# (ratio about 1.1). A member that claims far more than it weighs is a decompression bomb.
MAX_ARCHIVE_BYTES = 16 * 2**30
MAX_MEMBER_RATIO = 200
_RATIO_FROM_BYTES = 2**20  # small files (a config of repeated spaces) may compress well


def extract_zip(source, dest) -> None:
    """Unpack the zip ``source`` into the folder ``dest``, refusing what a release never holds.

    ``zipfile.extractall`` would quietly rewrite a member named ``../x`` or ``/x`` and unpack any
    size; here such an archive is refused whole before anything is written: a member whose name
    is absolute or climbs out (``..``), a link (a Unix mode of symlink), a member whose size is
    over ``MAX_MEMBER_RATIO`` times its compressed size (past 1 MiB), or members over
    ``MAX_ARCHIVE_BYTES`` in all. ``zipfile`` stops each member at the size its header declares
    and checks its CRC, so the checked sizes are the most that is written.
    """
    import zipfile

    source = pathlib.Path(source)
    try:
        with zipfile.ZipFile(source) as archive:
            members = archive.infolist()
            _check_members(source, members)
            for member in members:
                archive.extract(member, dest)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as e:
        raise ConversionError(f"{source} cannot be unpacked: {e}") from None


def _check_members(source: pathlib.Path, members) -> None:
    total = 0
    for member in members:
        name = member.filename
        parts = pathlib.PurePosixPath(name.replace("\\", "/")).parts
        if name.startswith(("/", "\\")) or (parts and parts[0].endswith(":")) or ".." in parts:
            raise ConversionError(f"{source}: member {name!r} would be written outside the folder it is "
                                  "unpacked into; refused")
        if stat.S_ISLNK(member.external_attr >> 16):
            raise ConversionError(f"{source}: member {name!r} is a symbolic link; refused")
        if member.file_size > _RATIO_FROM_BYTES and member.file_size > MAX_MEMBER_RATIO * max(member.compress_size, 1):
            raise ConversionError(f"{source}: member {name!r} unpacks to {member.file_size} bytes from "
                                  f"{member.compress_size} (over {MAX_MEMBER_RATIO} times): a decompression bomb; refused")
        total += member.file_size
        if total > MAX_ARCHIVE_BYTES:
            raise ConversionError(f"{source}: the members unpack to over {MAX_ARCHIVE_BYTES} bytes "
                                  "(kbert.convert.inputs.MAX_ARCHIVE_BYTES); refused")
