"""WordPiece vocabularies: ``vocab.txt`` (one token per line, id = 0-based line number).

The special tokens BERT needs are looked up by name in the vocabulary, never assumed to sit at
fixed ids: Google's vocabularies put ``[PAD]`` at 0 and ``[UNK] [CLS] [SEP] [MASK]`` at 100-103,
vocabularies learned by ``python -m kbert.vocab`` put them at 0-4.
"""

from __future__ import annotations

import os

from kbert.errors import DataError, Error
from kbert.api_export import kbert_export

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
RESERVED_TOKENS = (PAD, UNK, CLS, SEP, MASK)

# special_token_ids key -> token, in the naming of TF Hub's BERT preprocessors.
SPECIAL_TOKEN_NAMES = {
    "padding_id": PAD,
    "start_of_sequence_id": CLS,
    "end_of_segment_id": SEP,
    "mask_id": MASK,
    "unknown_id": UNK,
}


@kbert_export("kbert.text.VocabError")
class VocabError(Error, ValueError):
    """A vocabulary that cannot be used: the message names the file (or list), token and line.

    Examples:
        >>> import kbert
        >>> kbert.text.special_token_ids(["[PAD]", "the"])
        Traceback (most recent call last):
        ...
        kbert.text.vocab.VocabError: ...
    """


@kbert_export("kbert.text.load_vocab")
def load_vocab(path) -> list[str]:
    """The tokens of a ``vocab.txt``, in id order.

    Like google-research/bert's ``load_vocab`` each line is stripped of surrounding whitespace,
    except a line that is nothing but whitespace (Google's Chinese vocabulary has U+2028 as a
    token): it is kept as it is, a token that no text can produce, so that it neither becomes
    empty nor collides with another token. A missing or empty file, an empty line and a token
    that occurs twice are errors naming the file and the line(s): each would shift or shadow ids.

    Args:
        path: the ``vocab.txt``.

    Returns:
        The tokens, a list of strings (id = position).

    Examples:
        >>> import kbert
        >>> kbert.text.load_vocab(kbert.random_model_dir("runs/tiny") / "vocab.txt")[:6]
        ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', '.']
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise DataError(path, "an existing vocab.txt file (one WordPiece token per line)",
                        value="file not found")
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except UnicodeDecodeError as e:
        raise DataError(path, "UTF-8 text", value=f"undecodable byte at offset {e.start}") from None
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    if not lines:
        raise DataError(path, "at least one token", value="empty file")
    tokens = [line.strip() or line.rstrip("\r") for line in lines]
    _check_tokens(tokens, path)
    return tokens


def _check_tokens(tokens, source, in_file=True) -> None:
    def where(i):  # 1-based line of a file, 0-based index (= id) of a list
        return {"line": i + 1} if in_file else {"record": f"entry {i}"}

    seen: dict[str, int] = {}
    for i, token in enumerate(tokens):
        if not token:
            raise DataError(source, "a non-empty token on every line", value=token, **where(i))
        if token in seen:
            first = f"line {seen[token] + 1}" if in_file else f"entry {seen[token]}"
            raise DataError(source, f"each token once (first seen at {first})", value=token, **where(i))
        seen[token] = i


def as_token_list(vocab) -> list[str]:
    """``vocab`` as a list of tokens: a path to ``vocab.txt`` or a sequence of strings."""
    if isinstance(vocab, (str, bytes, os.PathLike)):
        return load_vocab(os.fsdecode(vocab))
    try:
        tokens = list(vocab)
    except TypeError:
        raise VocabError(
            f"vocab must be a path to vocab.txt or a list of tokens, got {type(vocab).__name__}"
        ) from None
    tokens = [t.decode("utf-8") if isinstance(t, bytes) else t for t in tokens]
    bad = [(i, t) for i, t in enumerate(tokens) if not isinstance(t, str)]
    if bad:
        raise VocabError(f"vocab list entry {bad[0][0]} is {bad[0][1]!r}, expected a string")
    if not tokens:
        raise VocabError("vocab list is empty")
    _check_tokens(tokens, "vocab list", in_file=False)
    return tokens


@kbert_export("kbert.text.special_token_ids")
def special_token_ids(tokens, source="vocab") -> dict[str, int]:
    """The ids of ``[PAD]``, ``[CLS]``, ``[SEP]``, ``[MASK]`` and ``[UNK]`` in a vocabulary.

    Args:
        tokens: the vocabulary, in id order.
        source: what error messages call it (its file).

    Returns:
        ``{"padding_id", "start_of_sequence_id", "end_of_segment_id", "mask_id", "unknown_id"}``.

    Raises:
        kbert.text.VocabError: a special token is missing.

    Examples:
        >>> import kbert
        >>> kbert.text.special_token_ids(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the"])
        {'padding_id': 0, 'start_of_sequence_id': 2, 'end_of_segment_id': 3, 'mask_id': 4, 'unknown_id': 1}
    """
    index = {t: i for i, t in enumerate(tokens)}
    missing = [tok for tok in SPECIAL_TOKEN_NAMES.values() if tok not in index]
    if missing:
        raise VocabError(f"{source} lacks the special token(s) {', '.join(missing)} that BERT needs")
    return {name: index[tok] for name, tok in SPECIAL_TOKEN_NAMES.items()}
