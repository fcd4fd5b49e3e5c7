"""Which tokenizer a checkpoint's files describe: a ``TokenizerSpec`` and the file it reads.

  * a Hugging Face folder: ``tokenizer_config.json`` (``tokenizer_class``; for ``BertTokenizer`` every
    option that changes ids: ``do_lower_case``, ``strip_accents``, ``tokenize_chinese_chars``,
    ``do_basic_tokenize``, ``never_split``, the special tokens; for ``BertJapaneseTokenizer``
    ``word_tokenizer_type``, ``subword_tokenizer_type``, ``mecab_kwargs``), ``vocab.txt`` or a
    SentencePiece model (``spm.model``, ``spiece.model``, ``sentencepiece.model``); or, when it is the
    folder's only description, a ``tokenizer.json`` (``BertNormalizer``, ``BertPreTokenizer``,
    ``WordPiece``), whose vocabulary then becomes ``vocab.txt``. A ``tokenizer.json`` beside a
    ``tokenizer_config.json`` must agree with it;
  * a tokenizer type named by the user (``kbert.convert google --tokenizer``, ``kbert.tokenize``).

Anything kbert cannot reproduce exactly (Sudachi, Juman++, MeCab options, an unknown tokenizer class
or dictionary) is a ``ConversionError`` naming the file, the field and the value: a converted model
that silently tokenized differently from how it was trained would give wrong answers quietly.
"""

from __future__ import annotations

import atexit
import pathlib
import shutil
import tempfile

from kbert.convert.inputs import input_file, read_json_object, typed
from kbert.convert.names import ConversionError
from kbert.text.spec import TokenizerSpec
from kbert.text.vocab import SPECIAL_TOKEN_NAMES

TOKENIZER_JSON = "tokenizer.json"
ADDED_TOKENS = "added_tokens.json"
SPECIAL_TOKENS_MAP = "special_tokens_map.json"
# tokenizer_config.json field -> the special token kbert's WordPiece keeps whole (and the packer uses).
SPECIAL_FIELDS = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
                  "mask_token": "[MASK]"}
SPECIAL_TOKENS = frozenset(SPECIAL_TOKEN_NAMES.values())
# transformers' WordpieceTokenizer(max_input_chars_per_word=100), also the tokenizers library's default.
HF_MAX_CHARS_PER_WORD = 100

TOKENIZER_CONFIG = "tokenizer_config.json"
SENTENCEPIECE_FILES = ("spm.model", "spiece.model", "sentencepiece.model")
WORDPIECE_CLASSES = ("BertTokenizer", "BertTokenizerFast")
JAPANESE_CLASS = "BertJapaneseTokenizer"
# transformers' BertJapaneseTokenizer subword_tokenizer_type -> kbert tokenizer type (MeCab words).
MECAB_TYPES = {"wordpiece": "mecab-wordpiece", "character": "mecab-character"}
DEFAULT_MECAB_DIC = "unidic_lite"
# transformers' MecabTokenizer default when mecab_kwargs names no dictionary.
HF_DEFAULT_MECAB_DIC = "ipadic"


def spec_for_type(tokenizer_type: str, cased: bool = False, vocab_file: str | None = None,
                  mecab_dic: str = DEFAULT_MECAB_DIC) -> TokenizerSpec:
    """The spec of a tokenizer type named by the user; ``cased`` matters for WordPiece only
    (the MeCab and SentencePiece types never lower-case)."""
    from kbert.text.registry import tokenizer_class

    tokenizer_class(tokenizer_type)  # an unknown type is an error naming the known ones
    fields = {} if vocab_file is None else {"vocab_file": vocab_file}
    if tokenizer_type in MECAB_TYPES.values():
        return TokenizerSpec(type=tokenizer_type, lower_case=False, options={"mecab_dic": mecab_dic}, **fields)
    if tokenizer_type == "sentencepiece":
        return TokenizerSpec(type=tokenizer_type, lower_case=False, vocab_file=vocab_file or "spm.model")
    return TokenizerSpec(type=tokenizer_type, lower_case=not cased, **fields)


def read_hf_tokenizer(hf_dir) -> tuple[TokenizerSpec, pathlib.Path]:
    """``(spec, source file)`` of a Hugging Face folder; the spec's ``vocab_file`` is the name the file
    gets in a kbert model directory."""
    hf_dir = pathlib.Path(hf_dir)
    path = hf_dir / TOKENIZER_CONFIG
    config = read_json_object(hf_dir, TOKENIZER_CONFIG) or {}
    where = str(path)
    cls = typed(config, "tokenizer_class", (str, type(None)), where)
    vocab = hf_dir / "vocab.txt"
    spm = next((hf_dir / n for n in SENTENCEPIECE_FILES if input_file(hf_dir, n)), None)
    lower_case = config.get("do_lower_case", True)
    if not isinstance(lower_case, bool):
        raise ConversionError(f"{where}: field 'do_lower_case' must be true or false, got {lower_case!r}")

    if cls == JAPANESE_CLASS:
        return _japanese(config, where), vocab
    fast = hf_dir / TOKENIZER_JSON
    if not path.exists() and not vocab.exists() and spm is None and input_file(hf_dir, TOKENIZER_JSON):
        return _only_tokenizer_json(fast)
    if cls in WORDPIECE_CLASSES or (cls is None and (vocab.exists() or spm is None)):
        spec = _wordpiece(config, where, hf_dir)
        if input_file(hf_dir, TOKENIZER_JSON):
            _agrees(spec, fast, where)
        return spec, vocab
    if cls is None:  # a SentencePiece model and no vocab.txt: the model's own encode
        return TokenizerSpec(type="sentencepiece", lower_case=False, vocab_file="spm.model"), spm
    raise ConversionError(
        f"{where}: field 'tokenizer_class' is {cls!r}, which kbert cannot reproduce (it knows "
        f"{', '.join(WORDPIECE_CLASSES + (JAPANESE_CLASS,))}; a folder with only a SentencePiece model "
        f"and no tokenizer_class reads as 'sentencepiece')")


def _japanese(config: dict, where: str) -> TokenizerSpec:
    def refuse(field, value, why):
        raise ConversionError(f"{where}: field {field!r} is {value!r}: {why}")

    for flag in ("do_word_tokenize", "do_subword_tokenize"):
        if config.get(flag, True) is not True:
            refuse(flag, config[flag], "kbert reproduces BertJapaneseTokenizer with both steps on")
    word = typed(config, "word_tokenizer_type", str, where, "basic")
    if word != "mecab":
        why = {"sudachi": "Sudachi is not supported (kbert's Japanese word splitter is MeCab)",
               "jumanpp": "Juman++ is not supported (kbert's Japanese word splitter is MeCab)",
               "basic": "BertJapaneseTokenizer's basic word splitter (no CJK splitting) is not reproduced"}
        refuse("word_tokenizer_type", word, why.get(word, "unknown word tokenizer; kbert supports 'mecab'"))
    subword = typed(config, "subword_tokenizer_type", str, where, "wordpiece")
    if subword not in MECAB_TYPES:
        refuse("subword_tokenizer_type", subword, f"kbert supports {', '.join(map(repr, MECAB_TYPES))} after MeCab")
    if config.get("do_lower_case", False) is not False:
        refuse("do_lower_case", config["do_lower_case"], "kbert's MeCab tokenizers are cased, as the Tohoku BERTs")
    if config.get("never_split"):
        refuse("never_split", config["never_split"], "extra unsplit tokens are not reproduced")
    kwargs = typed(config, "mecab_kwargs", (dict, type(None)), where) or {}
    for key, value in kwargs.items():
        if key == "mecab_option" and value:
            refuse("mecab_kwargs.mecab_option", value, "MeCab options are not reproduced")
        if key == "normalize_text" and value is not True:
            refuse("mecab_kwargs.normalize_text", value, "kbert always applies NFKC, as transformers by default")
        if key not in ("mecab_dic", "mecab_option", "normalize_text", "do_lower_case"):
            refuse(f"mecab_kwargs.{key}", value, "unknown MeCab option")
    dic = typed(kwargs, "mecab_dic", str, where, HF_DEFAULT_MECAB_DIC, label="mecab_kwargs.mecab_dic")
    from kbert.text.mecab import DICTIONARY_PACKAGES, MecabError, mecab_tagger

    if dic not in DICTIONARY_PACKAGES:
        refuse("mecab_kwargs.mecab_dic", dic, f"unknown MeCab dictionary (kbert knows {', '.join(DICTIONARY_PACKAGES)})")
    try:
        mecab_tagger(dic)  # the dictionary must be installed here: the converted model needs it
    except MecabError as e:
        raise ConversionError(f"{where}: field 'mecab_kwargs.mecab_dic' is {dic!r}: {e}") from None
    return TokenizerSpec(type=MECAB_TYPES[subword], lower_case=False, options={"mecab_dic": dic})


def _refuse(where, field, value, why):
    raise ConversionError(f"{where}: field {field!r} is {value!r}: {why}")


def _token_content(value):
    """A special token as tokenizer_config.json writes it: a string or an AddedToken object."""
    return value.get("content") if isinstance(value, dict) else value


def _wordpiece(config: dict, where: str, hf_dir: pathlib.Path) -> TokenizerSpec:
    """transformers' ``BertTokenizer`` with this config, or a ConversionError naming what kbert cannot do."""
    lower_case = config.get("do_lower_case", True)
    strip = config.get("strip_accents")
    if strip is not None and not isinstance(strip, bool):
        _refuse(where, "strip_accents", strip, "expected null, true or false")
    chinese = config.get("tokenize_chinese_chars", True)
    if not isinstance(chinese, bool):
        _refuse(where, "tokenize_chinese_chars", chinese, "expected true or false")
    if config.get("do_basic_tokenize", True) is not True:
        _refuse(where, "do_basic_tokenize", config["do_basic_tokenize"],
                "WordPiece on whitespace-split text without BERT's cleaning and punctuation splitting is not "
                "reproduced")
    never_split = config.get("never_split") or []
    if not isinstance(never_split, list) or not all(isinstance(t, str) for t in never_split):
        _refuse(where, "never_split", never_split, "expected a list of tokens")
    extra = sorted(set(never_split) - SPECIAL_TOKENS)
    if extra:
        _refuse(where, "never_split", extra, "kbert keeps only the special tokens "
                f"({', '.join(sorted(SPECIAL_TOKENS))}) whole")
    for field, token in SPECIAL_FIELDS.items():
        value = _token_content(config.get(field, token))
        if value != token:
            _refuse(where, field, value, f"kbert's WordPiece uses {token}")
    special_map = hf_dir / SPECIAL_TOKENS_MAP
    tokens = read_json_object(hf_dir, SPECIAL_TOKENS_MAP)
    if tokens is not None:
        for field, value in (tokens.items() if isinstance(tokens, dict) else []):
            value = [_token_content(v) for v in value] if isinstance(value, list) else _token_content(value)
            if field in SPECIAL_FIELDS and value != SPECIAL_FIELDS[field]:
                _refuse(str(special_map), field, value, f"kbert's WordPiece uses {SPECIAL_FIELDS[field]}")
            if field == "additional_special_tokens" and value:
                _refuse(str(special_map), field, value, "added tokens are not reproduced")
    extra = config.get("additional_special_tokens") or []
    if extra:
        _refuse(where, "additional_special_tokens", extra, "added tokens are not reproduced")
    if config.get("split_special_tokens", False) is not False:
        _refuse(where, "split_special_tokens", config["split_special_tokens"],
                "kbert keeps special tokens written in the text whole")
    added = config.get("added_tokens_decoder") or {}
    if not isinstance(added, dict):
        _refuse(where, "added_tokens_decoder", added, "expected an object")
    for key, token in added.items():
        content = _token_content(token)
        if content not in SPECIAL_TOKENS:
            _refuse(where, f"added_tokens_decoder.{key}", content, "added tokens other than "
                    f"{', '.join(sorted(SPECIAL_TOKENS))} are not reproduced")
    added_file = hf_dir / ADDED_TOKENS
    tokens = read_json_object(hf_dir, ADDED_TOKENS)
    if tokens is not None:
        extra = sorted(set(tokens) - SPECIAL_TOKENS) if isinstance(tokens, dict) else tokens
        if extra:
            raise ConversionError(f"{added_file}: holds added tokens {extra!r}, which kbert does not reproduce")
    return TokenizerSpec(lower_case=lower_case, options=_options(lower_case, strip, chinese, HF_MAX_CHARS_PER_WORD,
                                                                "transformers"))


def _options(lower_case, strip, chinese, max_chars, rules) -> dict:
    options = {"rules": rules, "max_chars_per_word": max_chars}
    if strip is not None and strip != lower_case:
        options["strip_accents"] = strip
    if not chinese:
        options["tokenize_chinese_chars"] = False
    return options


def _read_tokenizer_json(path: pathlib.Path) -> tuple[TokenizerSpec, list]:
    """The spec and vocabulary (in id order) of a fast tokenizer's ``tokenizer.json`` (the Rust library's
    BERT normalizer, pre-tokenizer and WordPiece model), or a ConversionError naming the field."""
    data = read_json_object(path.parent, path.name)  # links out, special files, non-objects: refused
    where = str(path)
    normalizer = data.get("normalizer") or {}
    if not isinstance(normalizer, dict) or normalizer.get("type") != "BertNormalizer":
        _refuse(where, "normalizer.type", normalizer.get("type") if isinstance(normalizer, dict) else normalizer,
                "kbert reproduces the BertNormalizer")
    flags = {}
    for field, default in (("clean_text", True), ("handle_chinese_chars", True), ("lowercase", True)):
        flags[field] = normalizer.get(field, default)
        if not isinstance(flags[field], bool):
            _refuse(where, f"normalizer.{field}", flags[field], "expected true or false")
    if not flags["clean_text"]:
        _refuse(where, "normalizer.clean_text", False, "BERT's cleaning is always on in kbert")
    strip = normalizer.get("strip_accents")
    if strip is not None and not isinstance(strip, bool):
        _refuse(where, "normalizer.strip_accents", strip, "expected null, true or false")
    pre = data.get("pre_tokenizer") or {}
    if not isinstance(pre, dict) or pre.get("type") != "BertPreTokenizer":
        _refuse(where, "pre_tokenizer.type", pre.get("type") if isinstance(pre, dict) else pre,
                "kbert reproduces the BertPreTokenizer")
    model = data.get("model") or {}
    if not isinstance(model, dict) or model.get("type") != "WordPiece":
        _refuse(where, "model.type", model.get("type") if isinstance(model, dict) else model,
                "kbert reproduces WordPiece models")
    for field, want in (("unk_token", "[UNK]"), ("continuing_subword_prefix", "##")):
        if model.get(field, want) != want:
            _refuse(where, f"model.{field}", model[field], f"kbert's WordPiece uses {want!r}")
    max_chars = model.get("max_input_chars_per_word", HF_MAX_CHARS_PER_WORD)
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
        _refuse(where, "model.max_input_chars_per_word", max_chars, "expected a positive integer")
    vocab = model.get("vocab")
    if not isinstance(vocab, dict) or not vocab:
        _refuse(where, "model.vocab", type(vocab).__name__, "expected an object of token -> id")
    ids = sorted(vocab.values(), key=lambda i: (not isinstance(i, int), i if isinstance(i, int) else 0))
    if ids != list(range(len(vocab))):
        missing = next((i for i, v in enumerate(ids) if v != i), len(ids))
        _refuse(where, "model.vocab", f"{len(vocab)} tokens", f"ids must be 0..{len(vocab) - 1} without gaps "
                f"or repeats (id {missing} is missing or repeated), so that they are line numbers of vocab.txt")
    tokens = sorted(vocab, key=vocab.get)
    for token in tokens:
        if not token or token != token.strip() or "\n" in token or "\r" in token:
            _refuse(where, "model.vocab", token, "a token with surrounding or line-breaking whitespace cannot be "
                    "a line of vocab.txt")
    for i, added in enumerate(data.get("added_tokens") or []):
        content = added.get("content") if isinstance(added, dict) else added
        if content not in SPECIAL_TOKENS or vocab.get(content) != added.get("id"):
            _refuse(where, f"added_tokens[{i}]", content, "added tokens other than the special tokens at their "
                    "vocabulary ids are not reproduced")
        for flag in ("normalized", "single_word"):
            if added.get(flag):
                _refuse(where, f"added_tokens[{i}].{flag}", True, "kbert matches special tokens in the raw text, "
                        "anywhere")
    lower = flags["lowercase"]
    spec = TokenizerSpec(lower_case=lower, options=_options(lower, strip, flags["handle_chinese_chars"], max_chars,
                                                            "tokenizers"))
    return spec, tokens


def _only_tokenizer_json(path: pathlib.Path) -> tuple[TokenizerSpec, pathlib.Path]:
    """A folder described by its ``tokenizer.json`` alone: its vocabulary written out as ``vocab.txt``
    (in a temporary folder, removed when the process ends)."""
    spec, tokens = _read_tokenizer_json(path)
    folder = pathlib.Path(tempfile.mkdtemp(prefix="kbert-vocab-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    vocab = folder / "vocab.txt"
    vocab.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
    return spec, vocab


def _agrees(spec: TokenizerSpec, path: pathlib.Path, where: str) -> None:
    """A ``tokenizer.json`` beside ``tokenizer_config.json`` must describe the same tokenizer: the fast
    tokenizer (AutoTokenizer's default) would otherwise give other ids than the one kbert reproduces."""
    fast, _ = _read_tokenizer_json(path)
    for name, field, config_field, default in (
            ("lower_case", "normalizer.lowercase", "do_lower_case", None),
            ("strip_accents", "normalizer.strip_accents", "strip_accents", None),
            ("tokenize_chinese_chars", "normalizer.handle_chinese_chars", "tokenize_chinese_chars", True)):
        if name == "lower_case":
            mine, theirs = spec.lower_case, fast.lower_case
        elif name == "strip_accents":
            mine = spec.option("strip_accents", spec.lower_case)
            theirs = fast.option("strip_accents", fast.lower_case)
        else:
            mine, theirs = spec.option(name, default), fast.option(name, default)
        if mine != theirs:
            raise ConversionError(f"{where} and {path} disagree: {config_field} gives {mine!r}, {field} gives "
                                  f"{theirs!r} (transformers' slow and fast tokenizers would give different ids); "
                                  "make them agree or remove one")
    if fast.option("max_chars_per_word") != spec.option("max_chars_per_word"):
        raise ConversionError(f"{path}: field 'model.max_input_chars_per_word' is "
                              f"{fast.option('max_chars_per_word')!r}, but transformers' BertTokenizer (which "
                              f"{where} describes) uses {HF_MAX_CHARS_PER_WORD}")
