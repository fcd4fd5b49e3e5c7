"""mecab-wordpiece / mecab-character: transformers' BertJapaneseTokenizer ids, exactly, on every reference line.

The reference (``shared/data/reference/ja_tokenizers.jsonl``) was made with transformers 5.24.0 and
fugashi + unidic-lite (see ``shared/data/README-japanese.md``); these tests need fugashi and unidic-lite
(``pip install 'kbert[ja]'``) and are skipped without them.

One line of 250,000 characters (MeCab alone segfaults from ~190,000, exit 139, no message) is
tokenized by ``kbert tokenize`` with mecab-wordpiece, every letter kept, in a process of its own.
"""

import json
import os
import subprocess
import sys
import unicodedata

import numpy as np
import pytest
import tensorflow as tf


from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from conftest import REPO, SHARED, require, run_fresh_python
require("fugashi")
require("unidic_lite")
from kbert.text import mecab  # noqa: E402
from kbert.text.mecab import MecabWordpieceTokenizer, ragged_to_lists  # noqa: E402
from kbert.text.registry import create_tokenizer, tokenizer_class  # noqa: E402
from kbert.text.spec import TokenizerSpec, TokenizerSpecError  # noqa: E402

WORDPIECE_DIR = SHARED / "vocab" / "ja-mecab-wordpiece"
CHAR_DIR = SHARED / "vocab" / "ja-char"
TYPES = {"mecab-wordpiece": (WORDPIECE_DIR, "mecab_wordpiece_ids"), "mecab-character": (CHAR_DIR, "char_ids")}


@pytest.fixture(scope="module")
def rows():
    with open(SHARED / "reference" / "ja_tokenizers.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def tokenizers():
    return {name: create_tokenizer(TokenizerSpec(type=name, lower_case=False, options={"mecab_dic": "unidic_lite"}),
                                   directory) for name, (directory, _) in TYPES.items()}


def _flat(ragged):
    return ragged_to_lists(ragged.merge_dims(-2, -1))


@pytest.mark.parametrize("name", sorted(TYPES))
def test_ids_equal_transformers_on_every_reference_line(rows, tokenizers, name):
    tokenizer, key = tokenizers[name], TYPES[name][1]
    texts = [r["text"] for r in rows]
    ids = _flat(tokenizer.tokenize(tokenizer.pre_tokenize(texts), pre_tokenized=True))
    wrong = [i for i, (got, row) in enumerate(zip(ids, rows)) if got != row[key]]
    assert not wrong, f"{len(wrong)} of {len(rows)} lines differ, first: {rows[wrong[0]]['text'][:80]!r}"
    assert sum(3 in row[key] for row in rows) > 100  # the [SEP] written in JSQuAD contexts is id 3


@pytest.mark.parametrize("name", sorted(TYPES))
def test_ids_equal_transformers_inside_tf_data(rows, tokenizers, name):
    """pre_tokenize in Python (as a data pipeline does), the graph part in a dataset map."""
    tokenizer, key = tokenizers[name], TYPES[name][1]
    pre = tokenizer.pre_tokenize([r["text"] for r in rows])
    dataset = (tf.data.Dataset.from_tensor_slices(pre).batch(128)
               .map(lambda s: tokenizer.tokenize(s, pre_tokenized=True).merge_dims(1, 2)))
    ids = [row for batch in dataset for row in ragged_to_lists(batch)]
    assert ids == [r[key] for r in rows]


def test_the_readme_client_lines_build_what_the_graph_part_takes(rows, tokenizers):
    """The fugashi lines docs/japanese.md gives clients of an export build its words request (rows padded
    with ""); joined in the graph as the exports join them, it gives the reference ids on every line."""
    from conftest import REPO
    from kbert.tasks.core.words_inputs import join_words

    readme = (REPO / "docs" / "japanese.md").read_text(encoding="utf-8")
    block = readme.split("builds the request with fugashi:", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    namespace = {}
    exec(block, namespace)
    instances = namespace["request"]([r["text"] for r in rows])["instances"]
    assert len({len(i["words"]) for i in instances}) == 1 and any(i["words"][-1] == "" for i in instances)
    tokenizer = tokenizers["mecab-wordpiece"]
    ids = _flat(tokenizer.tokenize(join_words(tf.constant([i["words"] for i in instances])), pre_tokenized=True))
    assert ids == [r["mecab_wordpiece_ids"] for r in rows]


def test_words_are_mecab_surfaces_and_wordpiece_marks_them(rows, tokenizers):
    """[batch, words, pieces]: the words are the reference MeCab surfaces (with literal special tokens
    as words of their own), so whole-word masking, which regroups pieces by their ``##`` marks
    (kbert.text.masking), masks whole MeCab words for mecab-wordpiece."""
    tokenizer = tokenizers["mecab-wordpiece"]
    plain = [r for r in rows if "[SEP]" not in r["text"] and not any(w.isspace() for w in r["mecab_words"])]
    words = ragged_to_lists(tokenizer.tokenize(tokenizer.pre_tokenize([r["text"] for r in plain]), pre_tokenized=True))
    assert [len(w) for w in words] == [len(r["mecab_words"]) for r in plain]
    vocab = tokenizer.get_vocabulary()
    for row in words:
        for pieces in row:
            assert not vocab[pieces[0]].startswith("##") and all(vocab[p].startswith("##") for p in pieces[1:])
    chars = tokenizers["mecab-character"]
    char_words = ragged_to_lists(chars.tokenize(chars.pre_tokenize([r["text"] for r in plain[:50]]), pre_tokenized=True))
    for row, ref in zip(char_words, plain[:50]):
        assert [len(w) for w in row] == [len(w) for w in ref["mecab_words"]]


def test_whole_word_masking_masks_whole_mecab_words(tokenizers):
    from kbert.text.masking import MlmMasker

    tokenizer = tokenizers["mecab-wordpiece"]
    words = ragged_to_lists(tokenizer.tokenize(tokenizer.pre_tokenize(["本日は晴天なり。本日は晴天なり。"]), pre_tokenized=True))[0]
    # The example: [本, ##日, は, 晴, ##天, なり, 。], twice.
    assert [[tokenizer.id_to_token(p) for p in w] for w in words[:5]] == [
        ["本", "##日"], ["は"], ["晴", "##天"], ["なり"], ["。"]]
    ids = [tokenizer.special_token_ids["start_of_sequence_id"], *[p for w in words for p in w],
           tokenizer.special_token_ids["end_of_segment_id"]]
    packed = {"input_word_ids": tf.constant([ids], tf.int32), "input_mask": tf.ones([1, len(ids)], tf.int32)}
    masker = MlmMasker(tokenizer.get_vocabulary(), max_predictions=len(ids), selection_rate=0.3, whole_word=True)
    spans, pos = [], 1
    for w in words:
        spans.append(range(pos, pos + len(w)))
        pos += len(w)
    for seed in range(5):
        tf.random.set_seed(seed)
        out = masker(packed)
        chosen = {int(p) for p, wt in zip(out["masked_lm_positions"][0], out["masked_lm_weights"][0]) if wt}
        assert chosen
        for span in spans:  # a word is masked whole or not at all
            assert set(span) <= chosen or not set(span) & chosen


def _check_offsets(tokenizer, texts):
    ids, starts, ends = (ragged_to_lists(x) for x in tokenizer.tokenize_with_offsets(texts, unit="UTF8_CHAR"))
    _, byte_starts, byte_ends = (ragged_to_lists(x) for x in tokenizer.tokenize_with_offsets(texts))
    unknown = tokenizer.special_token_ids["unknown_id"]
    vocab = tokenizer.get_vocabulary()
    for text, row, s_row, e_row, bs_row, be_row in zip(texts, ids, starts, ends, byte_starts, byte_ends):
        last = 0
        for pieces, s, e, bs, be in zip(row, s_row, e_row, bs_row, be_row):
            for k, (p, a, b) in enumerate(zip(pieces, s, e)):
                assert last <= a < b <= len(text), (text, pieces)
                piece = vocab[p][2:] if k and vocab[p].startswith("##") else vocab[p]
                if p != unknown and piece not in ("[SEP]", "[MASK]"):
                    # the piece is what NFKC makes of the span it points at
                    assert piece in unicodedata.normalize("NFKC", text[a:b]), (text, piece, text[a:b])
                last = a
            assert bs == [len(text[:a].encode("utf-8")) for a in s]
            assert be == [len(text[:b].encode("utf-8")) for b in e]
    return ids, starts, ends


@pytest.mark.parametrize("name", sorted(TYPES))
def test_offsets_point_into_the_original_text(rows, tokenizers, name):
    tokenizer = tokenizers[name]
    texts = [r["text"] for r in rows[::4]] + [r["text"] for r in rows if r["source"].startswith("adv")]
    ids, _, _ = _check_offsets(tokenizer, texts)
    assert [sum(row, []) for row in ids] == _flat(tokenizer.tokenize(tokenizer.pre_tokenize(texts), pre_tokenized=True))


def test_offsets_map_nfkc_back_to_the_input_characters(tokenizers):
    tokenizer = tokenizers["mecab-character"]
    # ｶﾞ (2 characters) -> ガ; ㈱ -> ( 株 ): each piece spans the characters it came from.
    ids, starts, ends = (ragged_to_lists(x) for x in tokenizer.tokenize_with_offsets(["ｶﾞ㈱"], unit="UTF8_CHAR"))
    assert [tokenizer.id_to_token(p) for w in ids[0] for p in w] == ["ガ", "(", "株", ")"]
    assert sum(starts[0], []) == [0, 2, 2, 2] and sum(ends[0], []) == [2, 3, 3, 3]
    # A literal special token spans its text.
    text = "タイトル [SEP] 本文"
    ids, starts, ends = (ragged_to_lists(x) for x in tokenizer.tokenize_with_offsets([text], unit="UTF8_CHAR"))
    k = [w for w in ids[0]].index([3])
    assert text[starts[0][k][0]:ends[0][k][0]] == "[SEP]"


def test_a_text_scalar_gives_one_row(tokenizers):
    tokenizer = tokenizers["mecab-wordpiece"]
    row = ragged_to_lists(tokenizer.tokenize_with_offsets(["本日は晴天なり。"])[0])[0]
    for one in ("本日は晴天なり。", "本日は晴天なり。".encode(), tf.constant("本日は晴天なり。")):
        ids, starts, ends = tokenizer.tokenize_with_offsets(one)
        assert ids.shape.rank == 2 and ids.to_list() == row
    assert tokenizer.pre_tokenize(tf.constant(["本日は晴天なり。"])) == tokenizer.pre_tokenize("本日は晴天なり。")


def test_spec_round_trip_and_asset(tokenizers):
    for name, tokenizer in tokenizers.items():
        assert tokenizer.spec.type == name and tokenizer.spec.option("mecab_dic") == "unidic_lite"
        assert not tokenizer.in_graph and tokenizer.lower_case is False
        assert tokenizer.asset_files == {"vocab.txt": str(TYPES[name][0] / "vocab.txt")}
        assert tokenizer_class(name) is type(tokenizer)


def test_refusals(tmp_path, monkeypatch):
    vocab = WORDPIECE_DIR / "vocab.txt"
    with pytest.raises(TokenizerSpecError, match="mecab_dic.*'jumandic'"):
        MecabWordpieceTokenizer(vocab, mecab_dic="jumandic")
    with pytest.raises(TokenizerSpecError, match="lower_case"):
        create_tokenizer(TokenizerSpec(type="mecab-wordpiece", lower_case=True), WORDPIECE_DIR)
    # A dictionary whose package is not installed (ipadic is not a kbert dependency).
    mecab.mecab_tagger.cache_clear()
    monkeypatch.setitem(sys.modules, "ipadic", None)
    with pytest.raises(mecab.MecabError, match="'ipadic'.*pip install 'kbert\\[ja\\]'"):
        MecabWordpieceTokenizer(vocab, mecab_dic="ipadic")
    # A dictionary package without its files (unidic before `python -m unidic download`).
    fake = type(sys)("unidic")
    fake.DICDIR = str(tmp_path / "missing")
    monkeypatch.setitem(sys.modules, "unidic", fake)
    with pytest.raises(mecab.MecabError, match="'unidic' is not installed"):
        MecabWordpieceTokenizer(vocab, mecab_dic="unidic")
    monkeypatch.setitem(sys.modules, "fugashi", None)
    with pytest.raises(mecab.MecabError, match="fugashi.*kbert\\[ja\\]"):
        MecabWordpieceTokenizer(vocab, mecab_dic="unidic_lite")
    mecab.mecab_tagger.cache_clear()


_ODD = st.one_of(
    st.text(st.characters(codec="utf-8"), max_size=40),
    st.text(st.sampled_from(list("日本語のテキスト ｶﾞ㈱①\u3099\u200b\u200d\x85\u2028\t\x01\x7f😀👨👩🏽🇯🇵[SEP]")), max_size=40),
    st.binary(max_size=40),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(_ODD, min_size=1, max_size=4))
def test_odd_input_gives_defined_results(tokenizers, texts):
    for tokenizer in tokenizers.values():
        pre = tokenizer.pre_tokenize(texts)
        ids = ragged_to_lists(tokenizer.tokenize(pre, pre_tokenized=True))
        assert len(ids) == len(texts)
        assert all(0 <= p < tokenizer.vocab_size for row in ids for w in row for p in w)
        decoded = [t.decode("utf-8", "replace") if isinstance(t, bytes) else t for t in texts]
        offsets = tokenizer.tokenize_with_offsets(texts, unit="UTF8_CHAR")
        assert ragged_to_lists(offsets[0]) == ids
        for text, s_row, e_row in zip(decoded, *(ragged_to_lists(x) for x in offsets[1:])):
            assert all(0 <= a < b <= len(text) for s, e in zip(s_row, e_row) for a, b in zip(s, e))


def test_documented_odd_cases(tokenizers):
    tokenizer = tokenizers["mecab-wordpiece"]
    empty = ragged_to_lists(tokenizer.tokenize(tokenizer.pre_tokenize(["", "  \u3000", "\x85"]), pre_tokenized=True))
    assert empty == [[], [], []]
    # MeCab reads a text up to a NUL (fugashi passes C strings), as transformers does.
    assert tokenizer.pre_tokenize(["猫\x00犬"]) == tokenizer.pre_tokenize(["猫"])
    # Invalid UTF-8 is U+FFFD, as bytes.decode("utf-8", "replace").
    assert tokenizer.pre_tokenize([b"\xff\xe7\x8c\xab"]) == tokenizer.pre_tokenize(["\ufffd猫"])
    # Words over 100 characters are one [UNK] (transformers' max_input_chars_per_word).
    assert _flat(tokenizer.tokenize(["a" * 101, "a" * 100], pre_tokenized=True))[0] == [tokenizer.special_token_ids["unknown_id"]]


@pytest.mark.slow
def test_a_one_megabyte_text():
    tokenizer = MecabWordpieceTokenizer(WORDPIECE_DIR / "vocab.txt")
    text = (SHARED / "corpus" / "ja" / "wagahaiwa_nekodearu.txt").read_text(encoding="utf-8")[:350_000]
    assert len(text.encode("utf-8")) > 1_000_000
    ids = _flat(tokenizer.tokenize(tokenizer.pre_tokenize([text]), pre_tokenized=True))[0]
    assert len(ids) > 200_000
    assert np.mean(np.array(ids) == tokenizer.special_token_ids["unknown_id"]) < 0.01


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TYPES))
def test_graph_part_runs_from_a_savedmodel_in_a_tensorflow_only_process(tmp_path, rows, tokenizers, name):
    """The graph part (pre-tokenized strings -> ids) saved and run where neither kbert nor MeCab is imported."""
    tokenizer, key = tokenizers[name], TYPES[name][1]
    module = tf.Module()
    module.tokenizer = tokenizer
    module.ids = tf.function(lambda s: tokenizer.tokenize(s, pre_tokenized=True).merge_dims(1, 2).to_tensor(-1),
                             input_signature=[tf.TensorSpec([None], tf.string)])
    tf.saved_model.save(module, str(tmp_path / "sm"))
    subset = rows[::20]
    (tmp_path / "in.json").write_text(json.dumps(tokenizer.pre_tokenize([r["text"] for r in subset])),
                                      encoding="utf-8")
    code = ("import json, sys, tensorflow as tf, tensorflow_text\n"
            f"m = tf.saved_model.load({str(tmp_path / 'sm')!r})\n"
            f"ids = m.ids(tf.constant(json.load(open({str(tmp_path / 'in.json')!r}, encoding='utf-8')))).numpy()\n"
            "assert not any(k.startswith(('kbert', 'fugashi')) for k in sys.modules)\n"
            "print(json.dumps([[int(i) for i in row if i >= 0] for row in ids]))")
    printed = run_fresh_python(code, timeout=600)
    assert json.loads(printed.strip().splitlines()[-1]) == [r[key] for r in subset]


@pytest.mark.slow
def test_one_huge_line_through_a_mecab_tokenizer_is_tokenized(tmp_path):
    """250,000 characters of one letter in one line: MeCab alone segfaults from ~190,000 (exit 139,
    no message); kbert gives it pieces and answers. In a process of its own: what this guards
    against kills the process."""
    line = "a" * 250_000
    vocab = SHARED / "vocab" / "ja-mecab-wordpiece" / "vocab.txt"
    run = subprocess.run([sys.executable, "-m", "kbert.tokenize", str(vocab), "--tokenizer", "mecab-wordpiece"],
                         input=line + "\nok\n", capture_output=True, text=True, cwd=REPO, timeout=600,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert run.returncode == 0, run.stderr[-2000:]
    rows = [json.loads(r) for r in run.stdout.splitlines()]
    assert len(rows) == 2 and len(rows[0]["ids"]) > 1000
    assert "".join(t.removeprefix("##") for t in rows[0]["tokens"]) == line  # every letter is there, in order
    assert "".join(t.removeprefix("##") for t in rows[1]["tokens"]) == "ok"  # and the next line is its own
