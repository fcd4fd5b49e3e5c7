"""python -m kbert.tokenize: one JSON object per stdin line, the ids of every tokenizer type, exactly (the
command's main in this process: stdin and stdout swapped for buffers)."""

import io
import json
import subprocess
import sys

import pytest

from conftest import MINILM_DIR, REPO, SHARED, UNCASED_VOCAB, require

REFERENCE = SHARED / "reference" / "ja_tokenizers.jsonl"


def _rows():
    with open(REFERENCE, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.mark.parametrize("tokenizer, vocab, key", [
    ("mecab-wordpiece", "ja-mecab-wordpiece/vocab.txt", "mecab_wordpiece_ids"),
    ("mecab-character", "ja-char/vocab.txt", "char_ids"),
])
@pytest.mark.slow
def test_every_reference_line_through_the_command_line(tokenizer, vocab, key):
    require("fugashi")
    rows = _rows()
    out = _run([str(SHARED / "vocab" / vocab), "--tokenizer", tokenizer], "".join(r["text"] + "\n" for r in rows))
    assert len(out) == len(rows)
    wrong = [i for i, (o, r) in enumerate(zip(out, rows)) if o["ids"] != r[key]]
    assert not wrong, f"{len(wrong)} lines differ, first: {rows[wrong[0]]['text'][:80]!r}"
    vocab_tokens = (SHARED / "vocab" / vocab).read_text(encoding="utf-8").split("\n")
    assert all(o["tokens"] == [vocab_tokens[i] for i in o["ids"]] for o in out)


def test_sentencepiece_model_through_the_command_line():
    rows = _rows()
    out = _run([str(SHARED / "vocab" / "ja-sentencepiece" / "spm.model")], "".join(r["text"] + "\n" for r in rows))
    assert [o["ids"] for o in out] == [r["sentencepiece_ids"] for r in rows]


def _main(args, stdin: bytes):
    from fixtures.cli import command_status

    out = io.StringIO()
    old = sys.stdin, sys.stdout
    sys.stdin, sys.stdout = io.TextIOWrapper(io.BytesIO(stdin)), out
    try:
        code = command_status("tokenize", args)  # as the command line runs it: errors in one line
    finally:
        sys.stdin, sys.stdout = old
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


def _run(args, text: str):
    code, rows = _main(args, text.encode("utf-8"))
    assert code == 0
    return rows


@pytest.mark.slow
def test_sources_model_dir_hf_folder_and_vocab(tmp_path):
    from kbert.text.tokenizer import BertTokenizer

    text = "Hello, World! Unaffable [SEP] x\n\n"
    expected = BertTokenizer(UNCASED_VOCAB).tokenize_flat(["Hello, World! Unaffable [SEP] x", ""]).to_list()
    code, vocab_out = _main([str(UNCASED_VOCAB)], text.encode())
    assert code == 0 and [o["ids"] for o in vocab_out] == expected
    assert vocab_out[1] == {"ids": [], "tokens": []}
    code, hf_out = _main([str(MINILM_DIR)], text.encode())  # a Hugging Face folder (BertTokenizer)
    # transformers keeps a special token written in the text whole; google-research/bert splits it
    hf_rules = BertTokenizer(UNCASED_VOCAB, rules="transformers", max_chars_per_word=100)
    assert code == 0 and [o["ids"] for o in hf_out] == hf_rules.tokenize_flat(text.splitlines()[:2]).to_list()
    assert hf_out[0]["tokens"][-2:] == ["[SEP]", "x"] and vocab_out[0]["tokens"][-4:] == ["[", "sep", "]", "x"]
    cased = BertTokenizer(UNCASED_VOCAB, lower_case=False).tokenize_flat(["Hello"]).to_list()
    assert _main([str(UNCASED_VOCAB), "--cased"], b"Hello\n")[1][0]["ids"] == cased[0]


def test_japanese_hf_folder_and_converted_model_dir(tmp_path):
    require("fugashi")
    from kbert.convert import hf

    model_dir = hf.convert(SHARED / "weights" / "ja-tiny-random-bert", tmp_path / "model")
    code, out = _main([str(model_dir)], "本日は晴天なり。\n".encode())
    assert code == 0 and out[0]["tokens"] == ["本", "##日", "は", "晴", "##天", "なり", "。"]
    assert _main([str(SHARED / "weights" / "ja-tiny-random-bert")], "本日は晴天なり。\n".encode())[1] == out
    # invalid UTF-8 on stdin is U+FFFD, not a crash
    code, odd = _main([str(model_dir)], b"\xff\xfe\n")
    assert code == 0 and len(odd) == 1


def test_errors(tmp_path, capsys):
    code, _ = _main([str(SHARED / "weights" / "all-MiniLM-L6-v2"), "--tokenizer", "mecab-wordpiece"], b"")
    assert code == 1 and "describes a wordpiece tokenizer" in capsys.readouterr().err
    code, _ = _main([str(UNCASED_VOCAB), "--tokenizer", "juman"], b"")
    assert code == 1 and "unknown tokenizer type 'juman'" in capsys.readouterr().err
    code, _ = _main([str(tmp_path / "missing")], b"")
    assert code == 1 and "no such file or directory" in capsys.readouterr().err


def test_help_does_not_import_tensorflow():
    code = ("import sys, runpy\nsys.argv = ['kbert.tokenize', '--help']\ntry:\n"
            "    runpy.run_module('kbert.tokenize', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print('tensorflow' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert "SOURCE" in result.stdout and result.stdout.strip().endswith("False")


def test_words_flag_writes_what_an_export_takes():
    """--words: the list of the reference MeCab words of each line (a row of an export's words
    input); for an in-graph tokenizer the line itself (an export's text input)."""
    require("fugashi")
    rows = [r for r in _rows() if "[" not in r["text"]][:50]
    code, out = _main([str(SHARED / "vocab" / "ja-char" / "vocab.txt"), "--tokenizer", "mecab-character", "--words"],
                      "".join(r["text"] + "\n" for r in rows).encode("utf-8") + b"\n")
    assert code == 0
    assert [o["words"] for o in out] == [r["mecab_words"] for r in rows] + [[]]  # an empty line: no words
    code, out = _main([str(UNCASED_VOCAB), "--words"], "Hello world\n".encode("utf-8"))
    assert code == 0 and out == [{"words": "Hello world"}]
