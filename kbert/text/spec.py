"""TokenizerSpec: which tokenizer a model uses, as recorded in its directory's ``kbert.json``.

    "tokenizer": {"type": "wordpiece", "lower_case": true, "vocab_file": "vocab.txt"}
    "tokenizer": {"type": "mecab-wordpiece", "lower_case": false, "vocab_file": "vocab.txt",
                  "mecab_dic": "unidic_lite"}
    "tokenizer": {"type": "sentencepiece", "lower_case": false, "vocab_file": "spm.model"}

``type`` picks the implementation (``kbert.text.registry``), ``vocab_file`` names the file the
tokenizer reads (a WordPiece ``vocab.txt`` or a SentencePiece ``.model``), relative to the model
directory; every other key is an option of that type (kept in ``options``). Model directories
written before the spec existed hold only ``do_lower_case``: they read as WordPiece.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kbert.errors import Error
from kbert.api_export import kbert_export

DEFAULT_TYPE = "wordpiece"
DEFAULT_VOCAB_FILE = "vocab.txt"
_FIELDS = ("type", "lower_case", "vocab_file")


class TokenizerSpecError(Error, ValueError):
    """A tokenizer spec that cannot be used: names the source, the field and the value."""


@kbert_export("kbert.TokenizerSpec", "kbert.text.TokenizerSpec")
@dataclasses.dataclass(frozen=True)
class TokenizerSpec:
    """What a tokenizer is, as ``kbert.json`` records it: its type, case and file.

    Attributes:
        type: the registered type (``wordpiece``, ``mecab-wordpiece``, ``mecab-character``,
            ``sentencepiece``, or one added with ``kbert.register_tokenizer``).
        lower_case: True for uncased models.
        vocab_file: the tokenizer's file, relative to the model directory (or absolute).
        options: the type's own settings (e.g. WordPiece's ``strip_accents``, MeCab's dictionary).

    Examples:
        >>> import kbert
        >>> spec = kbert.TokenizerSpec(type="wordpiece", lower_case=True, vocab_file="vocab.txt")
        >>> spec.to_json()
        {'type': 'wordpiece', 'lower_case': True, 'vocab_file': 'vocab.txt'}
    """
    type: str = DEFAULT_TYPE
    lower_case: bool = True
    vocab_file: str = DEFAULT_VOCAB_FILE
    options: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.type, str) or not self.type:
            raise TokenizerSpecError(f"tokenizer spec: field 'type' must be a non-empty string, got {self.type!r}")
        if not isinstance(self.lower_case, bool):
            raise TokenizerSpecError(f"tokenizer spec: field 'lower_case' must be true or false, got {self.lower_case!r}")
        if not isinstance(self.vocab_file, str) or not self.vocab_file:
            raise TokenizerSpecError(
                f"tokenizer spec: field 'vocab_file' must be a file name, got {self.vocab_file!r}")
        clash = set(self.options) & set(_FIELDS)
        if clash:
            raise TokenizerSpecError(f"tokenizer spec: options may not repeat the fields {sorted(clash)}")

    def option(self, name: str, default: Any = None) -> Any:
        return self.options.get(name, default)

    def replace(self, **changes) -> "TokenizerSpec":
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict:
        """The ``kbert.json`` ``"tokenizer"`` object (options flattened beside the fields)."""
        return {"type": self.type, "lower_case": self.lower_case, "vocab_file": self.vocab_file,
                **dict(sorted(self.options.items()))}

    @classmethod
    def from_json(cls, data, source: str = "tokenizer spec") -> "TokenizerSpec":
        if not isinstance(data, dict):
            raise TokenizerSpecError(f"{source}: 'tokenizer' must be an object, got {data!r}")
        try:
            return cls(type=data.get("type", DEFAULT_TYPE),
                       lower_case=data.get("lower_case", True),
                       vocab_file=data.get("vocab_file", DEFAULT_VOCAB_FILE),
                       options={k: v for k, v in data.items() if k not in _FIELDS})
        except TokenizerSpecError as e:
            raise TokenizerSpecError(str(e).replace("tokenizer spec", f"{source}: 'tokenizer'", 1)) from None

    @classmethod
    def from_metadata(cls, metadata: dict, source: str = "kbert.json") -> "TokenizerSpec":
        """The spec of a model directory's metadata; a legacy ``do_lower_case`` alone means WordPiece."""
        if "tokenizer" in metadata:
            spec = cls.from_json(metadata["tokenizer"], source)
            legacy = metadata.get("do_lower_case")
            if isinstance(legacy, bool) and legacy != spec.lower_case:
                raise TokenizerSpecError(f"{source}: 'do_lower_case' ({legacy}) contradicts "
                                         f"'tokenizer.lower_case' ({spec.lower_case})")
            return spec
        lower_case = metadata.get("do_lower_case", True)
        if not isinstance(lower_case, bool):
            raise TokenizerSpecError(f"{source}: field 'do_lower_case' must be true or false, got {lower_case!r}")
        return cls(lower_case=lower_case)
