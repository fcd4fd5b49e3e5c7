"""Which tokenizer a checkpoint's files describe: a ``TokenizerSpec`` and the file it reads.

  * a Hugging Face folder: ``tokenizer_config.json`` (``tokenizer_class``, ``do_lower_case``, and for
    ``BertJapaneseTokenizer`` ``word_tokenizer_type``, ``subword_tokenizer_type``, ``mecab_kwargs``),
    ``vocab.txt`` or a SentencePiece model (``spm.model``, ``spiece.model``, ``sentencepiece.model``);
  * a tokenizer type named by the user (``kbert.convert google --tokenizer``, ``kbert.tokenize``).

Anything kbert cannot reproduce exactly (Sudachi, Juman++, MeCab options, an unknown tokenizer class
or dictionary) is a ``ConversionError`` naming the file, the field and the value: a converted model
that silently tokenized differently from how it was trained would give wrong answers quietly.
"""

from __future__ import annotations

import pathlib

from kbert.convert.inputs import input_file, read_json_object, typed
from kbert.convert.names import ConversionError
from kbert.text.spec import TokenizerSpec

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
    if cls in WORDPIECE_CLASSES or (cls is None and (vocab.exists() or spm is None)):
        return TokenizerSpec(lower_case=lower_case), vocab
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
