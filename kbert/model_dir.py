"""A model directory: one folder = one model.

    bert_config.json     Google's format (kbert.BertConfig)
    vocab.txt            one token per line, id = line number (the tokenizer's file: its
                         spec's ``vocab_file``, e.g. a SentencePiece ``.model`` instead)
    encoder.weights.h5   the encoder's weights (Keras format)
    kbert.json           {"format": 1, "tokenizer": {"type": ..., "lower_case": bool, "vocab_file": ...},
                          "do_lower_case": bool, "heads": {name: {...}}, "causal": true (only
                          for a left-only encoder, kbert.BertEncoder(causal=True))}
    <head>.weights.h5    one file per head listed in kbert.json (mlm, nsp, task heads)

``kbert.json`` is kbert's own metadata (the heads it lists, their weights files and settings): it also
records the tokenizer (``kbert.text.spec.TokenizerSpec``; ``do_lower_case``, which Google's
directories leave to the user to know, is kept beside it for older readers, and a directory
with only ``do_lower_case`` reads as WordPiece).
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import secrets
import shutil

from kbert.errors import Error
from kbert.config import BertConfig
from kbert.model_metadata import (  # noqa: F401 - the metadata names, also importable from here
    CONFIG_FILE, ENCODER_WEIGHTS, FORMAT_VERSION, METADATA_FILE, VOCAB_FILE, ModelDirError, atomic_write,
    count_vocab, fsync_path, is_causal, load_config, read_metadata, resolve_file, write_metadata)
from kbert.text.registry import read_tokenizer_spec, record_tokenizer_spec  # noqa: F401
from kbert.api_export import kbert_export


class OutputExistsError(Error, FileExistsError):
    """An output that is there already (and is not the command's own to replace), or that is one of
    the command's inputs; the message names it."""


def check_output(path, inputs=(), *, overwrite: bool = False, replaceable=None, option: str = "--overwrite"):
    """Refuses to write ``path`` where that would lose data: when it is one of ``inputs`` (files or
    directories; compared resolved and with samefile) or a directory holding one, whatever
    ``overwrite`` says; when it exists and is not ``replaceable(path)``
    (e.g. this command's own earlier output), unless ``overwrite``. Raises OutputExistsError."""
    path = pathlib.Path(path)
    target = path.resolve()
    for source in inputs:
        if source is None:
            continue
        source = pathlib.Path(source)
        same = False
        try:
            same = path.exists() and source.exists() and os.path.samefile(path, source)
        except OSError:
            pass
        resolved = source.resolve()
        if same or resolved == target or target in resolved.parents:
            also = "" if os.fspath(source) == os.fspath(path) else f" ({source})"
            raise OutputExistsError(f"{path} is an input of this command{also}: writing it would destroy that "
                                    "input; choose another output")
    if (path.exists() or path.is_symlink()) and not overwrite and not (replaceable and replaceable(path)):
        raise OutputExistsError(f"{path} already exists; pass {option} to replace it whole")


def replace_dir(path, write) -> pathlib.Path:
    """Calls ``write(tmp)`` to fill a new directory ``tmp`` beside ``path`` (``write`` creates it),
    fsyncs every file in it, then puts it in place of ``path`` whole: the old directory (if any) is
    renamed aside, the new one renamed in, the old one deleted. An exception (or KeyboardInterrupt)
    before the swap leaves ``path`` as it was and removes ``tmp``; a process killed outright leaves
    ``path`` as it was (old, or absent if it was) and a ``.tmp-*`` folder beside it. Never a mix.

    The temporary names start with a dot and hold no digits-only name, so a server watching the
    parent (TF Serving loads numbered versions) never sees a half-written version.
    """
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_hex(4)
    tmp = path.with_name(f".tmp-{token}-{path.name}")
    old = path.with_name(f".old-{token}-{path.name}")
    moved = False
    _PENDING.add(tmp)
    try:
        write(tmp)
        for root, _, files in os.walk(tmp):
            for name in files:
                fsync_path(os.path.join(root, name))
            fsync_path(root)
        with _swapping():  # never cut in two by a handler that ends the process (at_safe_point)
            if path.exists() or path.is_symlink():
                os.rename(path, old)
                moved = True
                _PENDING.add(old)
            os.rename(tmp, path)
            _PENDING.discard(tmp)
    except BaseException:
        with _swapping():
            if moved and not path.exists():
                os.rename(old, path)
            _PENDING.discard(old)
        shutil.rmtree(tmp, ignore_errors=True)
        _PENDING.discard(tmp)
        raise
    fsync_path(path.parent)
    if moved:
        _remove(old)
        _PENDING.discard(old)
    return path


# The temporary and set-aside folders of the replace_dir calls under way: what a signal handler that
# ends the process outright (kbert.commands.signals) removes first, so that nothing is left half
# written beside the output.
_PENDING: set[pathlib.Path] = set()


@contextlib.contextmanager
def pending_write(path):
    """Within the block, ``path`` (a scratch folder or file of the work under way) is removed by
    ``remove_pending_writes`` if a signal handler ends the process."""
    path = pathlib.Path(path)
    _PENDING.add(path)
    try:
        yield path
    finally:
        _PENDING.discard(path)


def remove_pending_writes() -> list[pathlib.Path]:
    """Removes the folders of every ``replace_dir`` under way and returns their paths; for a signal
    handler about to end the process (the outputs themselves are whole: old, new or absent)."""
    removed = sorted(_PENDING)
    for folder in removed:
        _remove(folder)
    _PENDING.clear()
    return removed


def _remove(path: pathlib.Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif path.is_symlink() or path.exists():
        path.unlink(missing_ok=True)


_SWAP: dict = {"active": False, "deferred": []}


@contextlib.contextmanager
def _swapping():
    """The block's renames run whole: an ``at_safe_point`` call made meanwhile (by a signal handler,
    which Python runs between two statements) waits for its end."""
    _SWAP["active"] = True
    try:
        yield
    finally:
        _SWAP["active"] = False
        deferred, _SWAP["deferred"] = _SWAP["deferred"], []
        for call in deferred:
            call()


def at_safe_point(call) -> None:
    """Calls ``call()`` now, or as soon as the swap of a ``replace_dir`` under way is over: for a
    signal handler that removes ``remove_pending_writes()`` and ends the process."""
    if _SWAP["active"]:
        _SWAP["deferred"].append(call)
    else:
        call()


def check_files(model_dir) -> None:
    model_dir = pathlib.Path(model_dir)
    if not model_dir.is_dir():
        raise ModelDirError(f"model directory not found: {model_dir}")
    vocab_file = read_tokenizer_spec(model_dir).vocab_file
    missing = [n for n in (CONFIG_FILE, vocab_file, ENCODER_WEIGHTS) if not (model_dir / n).exists()]
    if missing:
        raise ModelDirError(f"model directory {model_dir} is missing: {', '.join(missing)}")


def load_encoder(model_dir, dtype=None, attention="auto", causal=None, **overrides):
    """Builds a BertEncoder from ``bert_config.json`` and loads ``encoder.weights.h5``.

    ``overrides`` replace config fields (e.g. dropout rates for fine-tuning). ``attention``: the
    encoder's attention, "auto", "plain" or "fused" (kbert.layers.accel); the files are the same
    whichever wrote them. ``causal``: None (the default) builds the encoder as ``kbert.json``
    records it (left-only for a left-to-right language model, ``is_causal``); True or False
    overrides that (pre-training that changes the objective).
    """
    from kbert.models import BertEncoder

    check_files(model_dir)
    config = load_config(model_dir)
    if overrides:
        config = BertConfig(**{**config.to_dict(), **overrides})
    from kbert.layers.initializers import weights_read_next

    with weights_read_next():  # every weight is read below (or the file is refused): none is drawn
        encoder = BertEncoder(config, dtype=dtype, attention_impl=attention,
                              causal=is_causal(model_dir) if causal is None else causal)
    path = pathlib.Path(model_dir) / ENCODER_WEIGHTS
    load_weights_checked(encoder, path, f"the architecture in {CONFIG_FILE}")
    return encoder


def load_weights_checked(layer, path, what: str, expected_from: str = CONFIG_FILE) -> None:
    """``load_weights`` whose errors name the file and, for a mismatch, list every difference.

    Raises ModelDirError: "<path> is not a readable Keras .weights.h5 file ..." for a damaged
    file, "<path> does not fit <what>: ..." for weights of another shape (``expected_from``
    names where the layer's shapes come from, e.g. bert_config.json).
    """
    try:
        load_weights(layer, path)
    except OSError as e:  # h5py: truncated, not HDF5, a directory, unreadable
        raise ModelDirError(f"{path} is not a readable Keras .weights.h5 file (truncated, damaged or another "
                            f"format): {str(e).splitlines()[0]}") from None
    except ValueError as e:
        differences = _weights_differences(layer, path, expected_from)
        raise ModelDirError(f"{path} does not fit {what}: " + (differences or str(e))) from None
    # Keras ignores weights in the file that the layer does not have (e.g. a 12-layer checkpoint
    # into a 6-layer config): compare the counts (h5 metadata only) and list them if they differ.
    found = len(_h5_shapes(path))
    if found != len(layer.weights):
        differences = _weights_differences(layer, path, expected_from)
        raise ModelDirError(f"{path} does not fit {what}: " + (
            differences or f"the file holds {found} weights, the layer {len(layer.weights)}"))


def _h5_shapes(path) -> dict:
    import h5py

    shapes = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: shapes.__setitem__(name, list(obj.shape))
                     if isinstance(obj, h5py.Dataset) else None)
    return shapes


def _weights_differences(layer, path, expected_from: str = CONFIG_FILE, limit=20) -> str:
    """What differs between the weights file and the layer as configured (by h5 dataset path)."""
    import tempfile

    try:
        with tempfile.TemporaryDirectory() as tmp:
            expected_file = pathlib.Path(tmp) / "expected.weights.h5"
            save_weights(layer, expected_file)
            expected = _h5_shapes(expected_file)
        found = _h5_shapes(path)
    except Exception:  # noqa: BLE001 - the listing is a courtesy; the caller falls back to Keras' message
        return ""

    def grouped(names):  # whole missing layers as one entry: "layers/transformer_block_2 (16 weights)"
        groups = {}
        for name in sorted(names):
            key = name.split("/vars/")[0].rsplit("/", 1)[0] if name.count("/") > 2 else name
            key = "/".join(name.split("/")[:2]) if name.startswith("layers/") else key
            groups.setdefault(key, []).append(name)
        return [f"{k} ({len(v)} weight{'s' * (len(v) > 1)})" if len(v) > 1 else v[0] for k, v in groups.items()]

    lines = [f"shape differs: {name}: file {found[name]}, config {expected[name]}"
             for name in sorted(set(found) & set(expected)) if found[name] != expected[name]]
    missing, extra = grouped(set(expected) - set(found)), grouped(set(found) - set(expected))
    if missing:
        lines.append("missing from the file: " + ", ".join(missing))
    if extra:
        lines.append(f"in the file but not in {expected_from}: " + ", ".join(extra))
    if not lines:
        return ""
    shown = lines[:limit] + ([f"... and {len(lines) - limit} more"] if len(lines) > limit else [])
    return f"{len(lines)} difference(s):\n  " + "\n  ".join(shown)


@kbert_export("kbert.save_model_dir")
def save_model_dir(model_dir, encoder, vocab_file=None, vocab=None, do_lower_case=True, heads=None, *,
                   tokenizer=None, tokenizer_spec=None, asset_files=None):
    """Writes a model directory: ``bert_config.json``, the tokenizer's files, the encoder's and heads'
    weights and ``kbert.json``.

    Args:
        model_dir: the folder to write (created if needed).
        encoder: the ``kbert.BertEncoder`` to save.
        vocab_file: (WordPiece, the older arguments) a ``vocab.txt`` to copy, or ``vocab``: a token list.
        vocab: a token list, written as ``vocab.txt``.
        do_lower_case: with ``vocab_file``/``vocab``: True for uncased.
        heads: ``{name: (layer, info)}``: head layers to save beside the encoder (``mlm``, ``nsp``, a task's).
        tokenizer: a tokenizer object: its ``spec`` and ``asset_files`` are written (any type).
        tokenizer_spec: or a ``kbert.TokenizerSpec`` with ``asset_files``.
        asset_files: ``{name in the directory: source path}`` of ``tokenizer_spec``'s files.

    Returns:
        ``model_dir``, a ``pathlib.Path``.

    Examples:
        >>> import kbert
        >>> encoder = kbert.BertEncoder(kbert.BertConfig.preset("tiny", vocab_size=8))
        >>> tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "man", "dog"]
        >>> model_dir = kbert.save_model_dir("runs/eight_words", encoder, vocab=tokens)
        >>> kbert.load_encoder(model_dir).config.vocab_size, kbert.load_tokenizer(model_dir).vocab_size
        (8, 8)
    """
    model_dir = pathlib.Path(model_dir)
    model_dir.mkdir(parents=True, exist_ok=True)
    config = encoder.config
    tokens = None
    if tokenizer is not None:
        tokenizer_spec, asset_files = tokenizer.spec, dict(tokenizer.asset_files)
        if tokenizer.vocab_size != config.vocab_size:
            raise ModelDirError(f"the {tokenizer_spec.type} tokenizer has {tokenizer.vocab_size} tokens but the "
                                f"encoder's vocab_size is {config.vocab_size}")
        if tokenizer_spec.vocab_file not in asset_files:
            tokens = tokenizer.get_vocabulary()
    elif tokenizer_spec is None:
        from kbert.text.spec import TokenizerSpec

        tokenizer_spec, asset_files = TokenizerSpec(lower_case=bool(do_lower_case)), {}
        if vocab_file is not None:
            asset_files[VOCAB_FILE] = vocab_file
        elif vocab is not None:
            tokens = vocab
    asset_files = dict(asset_files or {})

    def check_vocab(path):  # a one-token-per-line file must match the embeddings
        if pathlib.Path(path).suffix == ".txt" and count_vocab(path) != config.vocab_size:
            raise ModelDirError(
                f"vocab has {count_vocab(path)} tokens but the encoder's vocab_size is {config.vocab_size}"
            )

    def write_checked(write):  # checked before it replaces anything (atomic_write then removes it)
        return lambda tmp: (write(tmp), check_vocab(tmp))

    # Every file is written with atomic_write: a failure leaves each file either old or new, whole.
    for name, source in asset_files.items():
        target = resolve_file(model_dir, name)
        if pathlib.Path(source).resolve() != target:
            atomic_write(target, write_checked(lambda tmp, source=source: shutil.copyfile(source, tmp)))
        else:
            check_vocab(target)
    target = resolve_file(model_dir, tokenizer_spec.vocab_file)
    if tokens is not None:
        text = "".join(t + "\n" for t in tokens)
        atomic_write(target, write_checked(lambda tmp: tmp.write_text(text, encoding="utf-8")))
    elif tokenizer_spec.vocab_file not in asset_files:
        if not target.exists():
            raise ModelDirError(f"{model_dir} has no {tokenizer_spec.vocab_file} (the {tokenizer_spec.type} "
                                "tokenizer's file) and none was given")
        check_vocab(target)
    atomic_write(model_dir / CONFIG_FILE, config.to_json_file)
    atomic_write(model_dir / ENCODER_WEIGHTS, lambda tmp: save_weights(encoder, tmp))
    metadata = read_metadata(model_dir)
    metadata.update(format=FORMAT_VERSION, tokenizer=tokenizer_spec.to_json(),
                    do_lower_case=tokenizer_spec.lower_case)
    metadata.pop("causal", None)  # recorded for a left-only encoder only; absent reads as bidirectional
    if getattr(encoder, "causal", False):
        metadata["causal"] = True
    for name, (layer, info) in (heads or {}).items():
        filename = f"{name}.weights.h5"
        atomic_write(model_dir / filename, lambda tmp, layer=layer: save_weights(layer, tmp))
        metadata["heads"][name] = {"weights": filename, **(info or {})}
    write_metadata(model_dir, metadata)
    return model_dir


# keras.Layer (unlike keras.Model) has no public save_weights/load_weights; these are the functions
# Model.save_weights/load_weights call, so heads get the same .weights.h5 format as the encoder.
def save_weights(layer, path) -> None:
    from kbert.compat import save_weights_only

    save_weights_only(layer, path)


def load_weights(layer, path) -> None:
    from kbert.compat import load_weights_only

    load_weights_only(layer, path)


def load_heads(model_dir, config: BertConfig | None = None, names=None) -> dict:
    """The pre-training heads (``mlm``, ``nsp``) that ``kbert.json`` lists, with their weights."""
    from kbert.layers.heads import build_head

    config = config or load_config(model_dir)
    heads = {}
    for name, info in read_metadata(model_dir)["heads"].items():
        if info.get("type", name) not in ("mlm", "nsp") or (names is not None and name not in names):
            continue
        path = resolve_file(model_dir, info["weights"])
        if not path.exists():
            raise ModelDirError(f"{model_dir / METADATA_FILE} lists head {name!r} but {path} is missing")
        head = build_head(info.get("type", name), config)
        load_weights_checked(head, path, f"head {name!r} of {CONFIG_FILE}")
        heads[name] = head
    return heads
