"""One place that picks the tokenizer: a registry of tokenizer types and one constructor from a spec.

Every tokenizer type is one class, registered under its ``TokenizerSpec.type`` with
``@register_tokenizer("name")``. Built-in types live in their own modules and are imported only
when asked for (MeCab and SentencePiece pull optional packages):

    wordpiece        kbert.text.tokenizer   google-research/bert's BasicTokenizer + WordPiece, in-graph
    mecab-wordpiece  kbert.text.mecab       transformers' BertJapaneseTokenizer: NFKC, MeCab words (Python),
    mecab-character  kbert.text.mecab         then WordPiece within each word / one token per character
    sentencepiece    kbert.text.sentencepiece  TF-Text SentencepieceTokenizer, in-graph

What a tokenizer class gives (``BertTokenizer`` is the reference implementation; the base class
``kbert.text.tokenizer_layer.TokenizerLayer`` gives the shared entry points and vocabulary answers):

  * ``from_spec(spec, directory)`` (classmethod) and ``spec`` (the ``TokenizerSpec`` it was built from);
  * ``asset_files``: ``{file name: path}`` of what an export or a model directory must carry;
  * ``in_graph``: True when ``tokenize`` takes raw text inside a TensorFlow graph; False when a
    Python step must run first: ``pre_tokenize(texts) -> list[str]`` (identity for in-graph types),
    whose output is what the graph part (and an export's serving signature) takes;
  * ``tokenize(strings, pre_tokenized=False)`` -> int32 RaggedTensor ``[batch, words, pieces]`` (the
    first piece of each word starts a word: whole-word masking and tagging read the ragged
    structure), ``tokenize_serial``, ``tokenize_flat``, the layer call (the same) and
    ``tokenize_with_offsets(strings, unit)``. They take raw texts: a type with a Python step runs it
    when called eagerly and refuses raw texts inside a graph (``TokenizerInputError``);
    ``pre_tokenized=True`` passes ``pre_tokenize``'s strings to the graph part
    (``kbert.text.tokenizer_layer``);
  * ``starts_word()``: for each id, whether that piece begins a word (whole-word masking);
  * ``special_token_ids`` (``padding_id``, ``start_of_sequence_id``, ``end_of_segment_id``,
    ``mask_id``, ``unknown_id``), ``get_special_tokens_dict()`` (TF Hub), ``vocab_size``,
    ``get_vocabulary()``, ``id_to_token``, ``token_to_id``, ``lower_case``;
  * optionally ``shards`` (slices a batch is tokenized in, in parallel; 1 when absent);
  * ``f1_unit()``: "word" or "char", the unit span-QA F1 counts in for the language the
    tokenizer is for (``TokenizerLayer``: from the vocabulary; the MeCab types: "char").

Consumers take a tokenizer object (``load_tokenizer(model_dir)``, ``create_tokenizer(spec, dir)``):
``BertPreprocessor``, task models, ``FeatureExtractor``, the exports (files from ``asset_files``;
``kbert.export.tokenizer_assets``), pre-training (``MlmMasker.from_tokenizer``) and the data
pipelines. Python paths run ``pre_tokenize`` for them (``kbert.text.pre_tokenize``) and hand its
strings on with ``pre_tokenized=True``.
"""

from __future__ import annotations

import importlib
import os
import pathlib

from kbert.errors import OptionsError
from kbert.model_metadata import FORMAT_VERSION, METADATA_FILE, ModelDirError, read_metadata, write_metadata
from kbert.text.spec import DEFAULT_TYPE, TokenizerSpec, TokenizerSpecError
from kbert.api_export import kbert_export

_BUILTIN_MODULES = {
    "wordpiece": "kbert.text.tokenizer",
    "mecab-wordpiece": "kbert.text.mecab",
    "mecab-character": "kbert.text.mecab",
    "sentencepiece": "kbert.text.sentencepiece",
}
_REGISTRY: dict[str, type] = {}


@kbert_export("kbert.register_tokenizer", "kbert.text.register_tokenizer")
def register_tokenizer(name: str):
    """Class decorator that registers a tokenizer type under ``name``.

    The class derives from ``kbert.text.tokenizer_layer.TokenizerLayer`` and implements its
    interface (``from_spec``, ``pre_tokenize``, ``tokenize``, ``asset_files``, ...); a
    ``TokenizerSpec`` with ``type=name`` then creates it, in every command and export.

    Args:
        name: the type's name, as ``kbert.json`` and ``--tokenizer`` spell it.

    Returns:
        The decorator (it returns the class, with ``tokenizer_type = name``).

    Examples:
        >>> import kbert
        >>> from kbert.text.tokenizer import BertTokenizer
        >>> @kbert.register_tokenizer("wordpiece-demo")
        ... class DemoTokenizer(BertTokenizer):
        ...     pass
        >>> DemoTokenizer.tokenizer_type
        'wordpiece-demo'
    """

    def register(cls):
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"tokenizer type {name!r} is already registered by {_REGISTRY[name].__qualname__}")
        _REGISTRY[name] = cls
        cls.tokenizer_type = name
        return cls

    return register


def tokenizer_types() -> list[str]:
    return sorted(set(_REGISTRY) | set(_BUILTIN_MODULES))


def tokenizer_class(name: str) -> type:
    if name not in _REGISTRY and name in _BUILTIN_MODULES:
        importlib.import_module(_BUILTIN_MODULES[name])  # module names from a fixed table
    if name not in _REGISTRY:
        raise TokenizerSpecError(f"unknown tokenizer type {name!r}; known types: {', '.join(tokenizer_types())}")
    return _REGISTRY[name]


@kbert_export("kbert.create_tokenizer", "kbert.text.create_tokenizer")
def create_tokenizer(spec: TokenizerSpec, directory=None, **kwargs):
    """The tokenizer a spec describes.

    Args:
        spec: a ``kbert.TokenizerSpec``.
        directory: the folder ``spec.vocab_file`` is relative to (a model directory).
        **kwargs: passed to the type's ``from_spec``.

    Returns:
        A tokenizer layer of the registered type.

    Examples:
        >>> import kbert
        >>> model_dir = kbert.random_model_dir("runs/tiny")
        >>> tokenizer = kbert.create_tokenizer(kbert.TokenizerSpec(vocab_file="vocab.txt"), model_dir)
        >>> tokenizer.tokenize_flat(["the quick fox"]).to_list()
        [[12, 51, 53]]
    """
    return tokenizer_class(spec.type).from_spec(spec, directory, **kwargs)


def tokenizer_spec_for(vocab=None, *, cased: bool = False, tokenizer_type: str | None = None, directory=None,
                       directory_flag: str | None = "--model-dir") -> tuple:
    """``(spec, directory)`` that ``create_tokenizer`` takes, from a tokenizer's file or a model directory.

    ``vocab`` (a ``vocab.txt`` or SentencePiece model) wins; otherwise ``directory``'s ``kbert.json``
    names the tokenizer, and ``tokenizer_type``/``cased`` override its type and case.
    ``directory_flag``: how error messages name the directory (the command's flag)."""
    if vocab:
        kind = tokenizer_type or DEFAULT_TYPE
        # Only WordPiece lower-cases by default (cased turns it off); the Japanese types and
        # SentencePiece never do (lower-casing strips the voicing marks of kana: が -> か).
        spec = TokenizerSpec(type=kind, lower_case=kind == "wordpiece" and not cased,
                             vocab_file=os.path.abspath(os.path.expanduser(str(vocab))))
        return spec, None
    if not directory:
        flag = f" or {directory_flag}" if directory_flag else ""
        raise TokenizerSpecError(f"--vocab{flag} is required (the tokenizer)")
    spec = read_tokenizer_spec(directory)
    changes = {"type": tokenizer_type} if tokenizer_type else {}
    if cased:
        changes["lower_case"] = False
    return (spec.replace(**changes) if changes else spec), directory


def asset_path(spec: TokenizerSpec, directory) -> pathlib.Path:
    """Where the spec's ``vocab_file`` lies (an absolute ``vocab_file`` is taken as it is)."""
    path = pathlib.Path(os.path.expanduser(spec.vocab_file))
    if not path.is_absolute() and directory is not None:
        path = pathlib.Path(directory) / path
    return path


def as_tokenizer(tokenizer_or_vocab, lower_case=None, source: str = "tokenizer"):
    """A tokenizer object as it is, or (backwards compatibility) a WordPiece tokenizer from a
    vocabulary (``vocab.txt`` path or token list) and ``lower_case`` (default True).

    ``lower_case`` beside a tokenizer object must agree with it (the object's spec decides).
    """
    if is_tokenizer(tokenizer_or_vocab):
        if lower_case is not None and bool(lower_case) != tokenizer_or_vocab.lower_case:
            raise OptionsError(f"{source}: lower_case={lower_case!r} contradicts the tokenizer's "
                               f"{tokenizer_or_vocab.spec.type!r} spec (lower_case={tokenizer_or_vocab.lower_case})")
        return tokenizer_or_vocab
    if tokenizer_or_vocab is None:
        raise OptionsError(f"{source}: needs a tokenizer (kbert.text.load_tokenizer(model_dir)) or a vocabulary")
    return tokenizer_class(DEFAULT_TYPE)(tokenizer_or_vocab, lower_case=True if lower_case is None else lower_case)


def f1_unit(tokenizer) -> str:
    """"word" or "char": the unit span-QA F1 counts in for ``tokenizer`` (its ``f1_unit()``; "word"
    for a registered type that has none)."""
    unit = getattr(tokenizer, "f1_unit", None)
    return unit() if unit is not None else "word"


def is_tokenizer(obj) -> bool:
    """True for an object of the tokenizer interface (a registered type's instance)."""
    return getattr(type(obj), "tokenizer_type", None) in _REGISTRY


def read_tokenizer_spec(model_dir):
    """The ``TokenizerSpec`` of a model directory (``kbert.json``'s ``"tokenizer"``, or the legacy
    ``do_lower_case`` alone, which means WordPiece with ``vocab.txt``)."""
    try:
        return TokenizerSpec.from_metadata(read_metadata(model_dir), str(pathlib.Path(model_dir) / METADATA_FILE))
    except TokenizerSpecError as e:
        raise ModelDirError(str(e)) from None


def record_tokenizer_spec(model_dir, spec) -> None:
    """Writes ``spec`` (and ``do_lower_case``) into ``kbert.json``, keeping the rest (a directory with
    only a vocabulary then names its tokenizer: ``--tokenizer-dir``/``--model-dir`` read it)."""
    metadata = read_metadata(model_dir)
    metadata.update(format=FORMAT_VERSION, tokenizer=spec.to_json(), do_lower_case=spec.lower_case)
    write_metadata(model_dir, metadata)


@kbert_export("kbert.text.load_tokenizer")
def load_tokenizer(model_dir, **kwargs):
    """The tokenizer of a model directory, from its ``kbert.json`` (legacy ``do_lower_case`` included).

    ``kbert.load_tokenizer`` is the same, and takes ``hf://ORG/NAME`` too.

    Args:
        model_dir: a model directory.
        **kwargs: passed to the type's ``from_spec``.

    Returns:
        A tokenizer layer of the registered type.

    Examples:
        >>> import kbert
        >>> tokenizer = kbert.text.load_tokenizer(kbert.random_model_dir("runs/tiny"))
        >>> tokenizer.lower_case
        True
    """
    spec = read_tokenizer_spec(model_dir)
    try:
        cls = tokenizer_class(spec.type)
    except TokenizerSpecError as e:
        raise ModelDirError(f"{pathlib.Path(model_dir) / METADATA_FILE}: field 'tokenizer.type': {e}") from None
    return cls.from_spec(spec, model_dir, **kwargs)
