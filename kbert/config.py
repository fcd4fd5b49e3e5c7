"""BertConfig: the fields of Google's ``bert_config.json``, presets, validation and JSON I/O."""

from __future__ import annotations

import dataclasses
import json
import math
import os

from kbert.errors import Error
from kbert.api_export import kbert_export

# Activation names accepted in ``hidden_act``.  kbert follows Google's ``bert_config.json``
# semantics, since that is the file format it reads and writes: in google-research/bert
# ``modeling.py`` (and in Model Garden and keras-hub) ``"gelu"`` is the tanh approximation.
# The exact erf GELU (Hugging Face's ``"gelu"``) is ``"gelu_exact"``; the HF converter maps names.
ACTIVATIONS = ("gelu", "gelu_exact", "relu", "tanh", "silu", "linear")
ACTIVATION_ALIASES = {
    "gelu_new": "gelu",
    "gelu_pytorch_tanh": "gelu",
    "gelu_tanh": "gelu",
    "gelu_erf": "gelu_exact",
    "swish": "silu",
}

# Google's published BERT sizes (the 24 small models of "Well-Read Students Learn Better" plus
# Base and Large): (num_hidden_layers, hidden_size, num_attention_heads); intermediate is 4H.
PRESETS = {
    "tiny": (2, 128, 2),
    "mini": (4, 256, 4),
    "small": (4, 512, 8),
    "medium": (8, 512, 8),
    "base": (12, 768, 12),
    "large": (24, 1024, 16),
}
kbert_export("kbert.PRESETS")(PRESETS)

_INT_FIELDS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
)


@kbert_export("kbert.ConfigError")
class ConfigError(Error, ValueError):
    """An invalid BERT configuration; the message names the field and the value.

    Examples:
        >>> import kbert
        >>> kbert.BertConfig(hidden_size=100, num_attention_heads=12)
        Traceback (most recent call last):
        ...
        kbert.config.ConfigError: hidden_size (100) must be divisible by num_attention_heads (12)
    """


@kbert_export("kbert.BertConfig")
@dataclasses.dataclass
class BertConfig:
    """The architecture of a BERT model: exactly the fields of Google's ``bert_config.json``.

    Every value is checked when the config is made (``kbert.ConfigError`` names the field).
    ``BertConfig.preset(name)`` gives a published size; ``from_json_file``/``to_json_file`` read
    and write Google's file.

    Attributes:
        vocab_size: the number of token ids (30522 for bert-base-uncased).
        hidden_size: the width H of every block.
        num_hidden_layers: the number of Transformer blocks L.
        num_attention_heads: the number of attention heads A (H must be divisible by A).
        intermediate_size: the width of each block's feed-forward layer (4 H in the paper).
        hidden_act: ``"gelu"`` (the tanh approximation, as google-research/bert) or ``"gelu_exact"``
            (erf), ``"relu"``, ...
        hidden_dropout_prob: dropout on embeddings and block outputs.
        attention_probs_dropout_prob: dropout on the attention probabilities.
        max_position_embeddings: the longest sequence the position embeddings cover.
        type_vocab_size: the number of segment ids (2: sentence A and B).
        initializer_range: the standard deviation of the truncated-normal initializer.

    Examples:
        >>> import kbert
        >>> config = kbert.BertConfig.preset("tiny")
        >>> config.num_hidden_layers, config.hidden_size, config.num_attention_heads, config.head_size
        (2, 128, 2, 64)
        >>> kbert.BertConfig.preset("base").intermediate_size
        3072
    """
    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02

    def __post_init__(self):
        if isinstance(self.hidden_act, str):
            self.hidden_act = ACTIVATION_ALIASES.get(self.hidden_act, self.hidden_act)
        self.validate()

    # -- validation ---------------------------------------------------------------------------
    def validate(self, source: str | None = None) -> None:
        where = f" in {source}" if source else ""
        for name in _INT_FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{name}{where} must be an integer, got {value!r}")
            if value <= 0:
                raise ConfigError(f"{name}{where} must be positive, got {value}")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
                raise ConfigError(f"{name}{where} must be a number in [0, 1), got {value!r}")
        if (isinstance(self.initializer_range, bool) or not isinstance(self.initializer_range, (int, float))
                or not 0 < self.initializer_range < math.inf):  # also refuses NaN
            raise ConfigError(
                f"initializer_range{where} must be a positive number, got {self.initializer_range!r}"
            )
        if self.hidden_act not in ACTIVATIONS:
            raise ConfigError(
                f"hidden_act{where} is {self.hidden_act!r}; expected one of "
                f"{', '.join(ACTIVATIONS + tuple(ACTIVATION_ALIASES))}"
            )
        if self.hidden_size % self.num_attention_heads:
            raise ConfigError(
                f"hidden_size{where} ({self.hidden_size}) must be divisible by "
                f"num_attention_heads ({self.num_attention_heads})"
            )

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_attention_heads

    # -- constructors -------------------------------------------------------------------------
    @classmethod
    def preset(cls, name: str, **overrides) -> "BertConfig":
        """A published BERT size by name (tiny, mini, small, medium, base, large)."""
        if name not in PRESETS:
            raise ConfigError(f"unknown preset {name!r}; expected one of {', '.join(PRESETS)}")
        layers, hidden, heads = PRESETS[name]
        kwargs = dict(
            num_hidden_layers=layers,
            hidden_size=hidden,
            num_attention_heads=heads,
            intermediate_size=4 * hidden,
        )
        kwargs.update(overrides)
        return cls(**kwargs)

    @classmethod
    def from_dict(cls, data: dict, source: str | None = None) -> "BertConfig":
        """Reads the fields of Google's format; extra keys (e.g. ``directionality``) are ignored."""
        where = f" in {source}" if source else ""
        if not isinstance(data, dict):
            raise ConfigError(f"BERT config{where} must be a JSON object, got {type(data).__name__}")
        fields = {f.name for f in dataclasses.fields(cls)}
        missing = sorted(
            f.name
            for f in dataclasses.fields(cls)
            if f.name not in data and f.name in _INT_FIELDS
        )
        if missing:
            raise ConfigError(f"BERT config{where} is missing field(s): {', '.join(missing)}")
        kwargs = {k: v for k, v in data.items() if k in fields}
        try:
            return cls(**kwargs)
        except ConfigError as e:
            if source and source not in str(e):
                raise ConfigError(f"{e} (in {source})") from None
            raise

    @classmethod
    def from_json_file(cls, path: str | os.PathLike) -> "BertConfig":
        path = os.fspath(path)
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            raise ConfigError(f"BERT config file not found: {path}") from None
        except UnicodeDecodeError as e:
            raise ConfigError(f"{path} is not UTF-8 (byte {e.start})") from None
        except json.JSONDecodeError as e:
            raise ConfigError(f"{path} is not valid JSON: {e}") from None
        except RecursionError:
            raise ConfigError(f"{path} nests JSON past Python's recursion limit") from None
        return cls.from_dict(data, source=path)

    @classmethod
    def from_name_or_path(cls, name_or_path: str) -> "BertConfig":
        """A preset name, a ``bert_config.json`` file or a model directory holding one."""
        if name_or_path in PRESETS:
            return cls.preset(name_or_path)
        if os.path.isdir(name_or_path):
            name_or_path = os.path.join(name_or_path, "bert_config.json")
        if not os.path.exists(name_or_path):
            raise ConfigError(
                f"{name_or_path!r} is neither a preset ({', '.join(PRESETS)}) nor an existing file"
            )
        return cls.from_json_file(name_or_path)

    # -- output -------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_json_string(self) -> str:
        # Same layout as Google's files: sorted keys, two-space indent.
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, path: str | os.PathLike) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json_string())
