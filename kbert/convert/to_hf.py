"""kbert model directories -> Hugging Face BERT folders: the layout, names and files transformers reads.

The other direction of ``kbert.convert.hf``, through the same tables: weight names are that module's
``google_name`` run backwards (every Hugging Face key a BERT of this size can hold, mapped forwards once),
dense kernels transposed back to ``nn.Linear``'s [out, in], activations named as transformers names
them (kbert's ``gelu``, google-research/bert's tanh approximation, is transformers' ``gelu_new``), and
the tokenizer described by the ``tokenizer_config.json`` fields that ``kbert.convert.tokenizer_source``
reads. ``model.safetensors`` is written with the ``safetensors`` package's numpy API: no torch.
No ``tokenizer.json`` is written: transformers builds its fast tokenizer from ``vocab.txt`` and
``tokenizer_config.json``, and adds the special tokens as whole-matched tokens on loading whatever a
``tokenizer.json`` says, so kbert's google-research/bert rules (a ``[MASK]`` written in the text is
plain text) cannot be made exact that way; ``tokenizer_files`` returns that difference as a note.

Which model (encoder, pre-training heads, a task head) goes in is decided by
``kbert.export.to_hf``, which knows the task models; this module writes what it is given.
"""

from __future__ import annotations

import json
import pathlib
import shutil

import numpy as np

from kbert.config import BertConfig
from kbert.convert.common import check_output_dir
from kbert.convert.hf import HF_ACTIVATIONS, google_name
from kbert.convert.names import ConversionError
from kbert.convert.tokenizer_source import (HF_MAX_CHARS_PER_WORD, JAPANESE_CLASS, MECAB_TYPES, SPECIAL_FIELDS,
                                            SPECIAL_TOKENS_MAP, TOKENIZER_CONFIG)
from kbert.layers.normalization import LAYER_NORM_EPSILON

# kbert's hidden_act -> transformers' name for the same function (each maps back through HF_ACTIVATIONS).
TO_HF_ACTIVATIONS = {"gelu": "gelu_new", "gelu_exact": "gelu", "relu": "relu", "silu": "silu", "tanh": "tanh",
                     "linear": "linear"}
RECORD_FILE = "kbert_to_hf.json"
WEIGHTS_FILE = "model.safetensors"

_LAYER_PARTS = ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
                "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm")
_HEAD_KEYS = ("cls.predictions.transform.dense.weight", "cls.predictions.transform.dense.bias",
              "cls.predictions.transform.LayerNorm.weight", "cls.predictions.transform.LayerNorm.bias",
              "cls.predictions.bias", "cls.seq_relationship.weight", "cls.seq_relationship.bias")


def hf_keys(num_layers: int) -> dict:
    """Google variable name -> Hugging Face key (without ``bert.``) for a BERT of ``num_layers``: every
    key transformers' BERT holds, mapped by ``kbert.convert.hf.google_name`` and inverted."""
    keys = [f"embeddings.{kind}_embeddings.weight" for kind in ("word", "position", "token_type")]
    keys += ["embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias", "pooler.dense.weight", "pooler.dense.bias"]
    keys += [f"encoder.layer.{i}.{part}.{suffix}" for i in range(num_layers) for part in _LAYER_PARTS
             for suffix in ("weight", "bias")]
    return {google_name(key): key for key in keys + list(_HEAD_KEYS)}


def hf_state(arrays: dict, num_layers: int, prefix: str = "") -> dict:
    """Google-named arrays (``kbert.convert.names.export_arrays``) -> a Hugging Face state dict: keys of
    the encoder get ``prefix`` (``"bert."`` in a model with heads), kernels become [out, in]."""
    names = hf_keys(num_layers)
    unknown = sorted(set(arrays) - set(names))
    if unknown:
        raise ConversionError(f"no Hugging Face name for {', '.join(unknown)}")
    state = {}
    for name, value in arrays.items():
        key = names[name]
        value = np.asarray(value, dtype=np.float32)
        if name.endswith("/kernel"):  # Google's [in, out] -> nn.Linear's [out, in]
            value = value.T
        state[key if key.startswith("cls.") else prefix + key] = np.ascontiguousarray(value)
    return state


def hf_config(config: BertConfig, architecture: str, pad_token_id: int | None = None, **fields) -> dict:
    """``config.json`` of ``config`` as transformers' ``BertConfig`` reads it (``fields``: a task's)."""
    if config.hidden_act not in TO_HF_ACTIVATIONS:
        raise ConversionError(f"bert_config.json: hidden_act {config.hidden_act!r} has no transformers name")
    act = TO_HF_ACTIVATIONS[config.hidden_act]
    assert HF_ACTIVATIONS[act] == config.hidden_act, act  # the table read in gives it back
    out = {"architectures": [architecture], "model_type": "bert", **config.to_dict(), "hidden_act": act,
           "layer_norm_eps": LAYER_NORM_EPSILON, "position_embedding_type": "absolute", "torch_dtype": "float32"}
    if pad_token_id is not None:
        out["pad_token_id"] = pad_token_id
    out.update(fields)
    return out


def tokenizer_files(spec, vocab_file, model_max_length: int) -> tuple[dict, list]:
    """(``{file name: JSON object}`` describing ``spec`` to transformers, notes on what differs).

    WordPiece is transformers' ``BertTokenizer`` with kbert's case, accent and Chinese-character options;
    ``mecab-wordpiece`` / ``mecab-character`` its ``BertJapaneseTokenizer`` (MeCab, then WordPiece or
    characters, with kbert's dictionary). A tokenizer no transformers class reproduces is refused."""
    vocab = pathlib.Path(vocab_file).read_text(encoding="utf-8").splitlines()
    missing = [t for t in SPECIAL_FIELDS.values() if t not in vocab]
    if spec.type != "sentencepiece" and missing:
        raise ConversionError(f"{vocab_file} lacks {', '.join(missing)}, the special tokens transformers' BERT "
                              "tokenizers need")
    special = dict(SPECIAL_FIELDS)
    common = {**special, "model_max_length": model_max_length, "clean_up_tokenization_spaces": False}
    notes = []
    if spec.type == "wordpiece":
        config = {"tokenizer_class": "BertTokenizer", "do_lower_case": spec.lower_case,
                  "strip_accents": spec.option("strip_accents"),
                  "tokenize_chinese_chars": spec.option("tokenize_chinese_chars", True),
                  "do_basic_tokenize": True, "never_split": None, **common}
        notes += _wordpiece_notes(spec)
    elif spec.type in MECAB_TYPES.values():
        unknown = sorted(set(spec.options) - {"mecab_dic"})
        if unknown:
            raise ConversionError(f"the {spec.type} tokenizer's options {unknown} have no BertJapaneseTokenizer field")
        subword = next(k for k, v in MECAB_TYPES.items() if v == spec.type)
        config = {"tokenizer_class": JAPANESE_CLASS, "do_lower_case": False, "word_tokenizer_type": "mecab",
                  "subword_tokenizer_type": subword, "mecab_kwargs": {"mecab_dic": spec.option("mecab_dic")},
                  "do_word_tokenize": True, "do_subword_tokenize": True, "never_split": None, **common}
    else:
        raise ConversionError(
            f"the {spec.type} tokenizer is refused: kbert runs the SentencePiece model's own pieces with BERT's "
            "[CLS]/[SEP] ids, and no transformers BERT tokenizer class applies that model with those ids"
            if spec.type == "sentencepiece" else
            f"the {spec.type} tokenizer is refused: transformers has no tokenizer class that reproduces it")
    return {TOKENIZER_CONFIG: config, SPECIAL_TOKENS_MAP: special}, notes


def _wordpiece_notes(spec) -> list:
    """What transformers' ``BertTokenizer`` does otherwise than this spec, rule by rule (edge cases)."""
    notes = []
    rules = spec.option("rules", "google")
    if rules == "google":
        notes.append("tokenizer: kbert's google-research/bert rules; transformers' BertTokenizer differs on "
                     "special tokens written in the text (kept whole there), private-use and unassigned characters "
                     "(removed there), a word-final capital sigma (σ there) and NFC normalization")
    elif rules == "tokenizers":
        notes.append("tokenizer: kbert reproduces the Rust BertNormalizer (a tokenizer.json); transformers' Python "
                     "BertTokenizer also applies NFC to the text")
    from kbert.text.tokenizer import MAX_CHARS_PER_WORD

    chars = spec.option("max_chars_per_word", MAX_CHARS_PER_WORD)
    if chars != HF_MAX_CHARS_PER_WORD:
        notes.append(f"tokenizer: kbert makes a word over {chars} characters [UNK]; transformers over "
                     f"{HF_MAX_CHARS_PER_WORD}")
    return notes


def write_hf_folder(out, config_json: dict, state: dict, vocab_file, tokenizer_json: dict, record: dict,
                    *, inputs=(), overwrite: bool = False) -> pathlib.Path:
    """Writes the folder whole (beside ``out``, then renamed into place: ``kbert.model_dir.replace_dir``);
    one that holds files is refused unless ``overwrite``; ``inputs`` (the model directory) may not be
    ``out`` or lie inside it or around it."""
    from safetensors.numpy import save_file

    from kbert.model_dir import replace_dir

    out = pathlib.Path(out)
    for source in inputs:
        root, target = pathlib.Path(source).resolve(), out.resolve()
        if target == root or target in root.parents or root in target.parents:
            raise ConversionError(f"the output {out} is (or holds, or is inside) the model directory {source}; "
                                  "name another directory")
    check_output_dir(out, overwrite)

    def write(folder: pathlib.Path):
        folder.mkdir(parents=True)
        save_file(state, str(folder / WEIGHTS_FILE), metadata={"format": "pt"})
        shutil.copyfile(vocab_file, folder / "vocab.txt")
        for name, data in {"config.json": config_json, **tokenizer_json, RECORD_FILE: record}.items():
            (folder / name).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

    replace_dir(out, write)
    return out
