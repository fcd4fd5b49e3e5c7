"""Dynamic MLM masking on real text: rates, exclusions, positions, whole-word masking."""

import numpy as np
import pytest
import tensorflow as tf

from kbert.text import BertPreprocessor, load_vocab
from kbert.text.masking import MlmMasker
from conftest import SHARED, UNCASED_VOCAB

VOCAB = load_vocab(UNCASED_VOCAB)
SPECIAL = {VOCAB.index(t) for t in ("[CLS]", "[SEP]", "[PAD]")}


@pytest.fixture(scope="module")
def packed():
    lines = [line for line in (SHARED / "corpus" / "en" / "emma.txt").read_text().splitlines() if line.strip()]
    pre = BertPreprocessor(VOCAB, seq_length=64)
    a, b = tf.constant(lines[0:8000:2]), tf.constant(lines[1:8000:2])
    return {k: v.numpy() for k, v in pre([a, b]).items()}  # 4,000 pairs, >100k real tokens


def _mask(packed, **kw):
    tf.random.set_seed(0)
    out = MlmMasker(VOCAB, **kw)({k: tf.constant(v) for k, v in packed.items()})
    return {k: v.numpy() for k, v in out.items()}


@pytest.mark.slow
def test_rates_over_100k_tokens(packed):
    out = _mask(packed, max_predictions=32)
    real = packed["input_mask"].astype(bool)
    selectable = real & ~np.isin(packed["input_word_ids"], list(SPECIAL))
    assert selectable.sum() > 100_000
    w = out["masked_lm_weights"].astype(bool)
    rows = np.nonzero(w)[0]
    pos = out["masked_lm_positions"][w]
    original = packed["input_word_ids"][rows, pos]
    np.testing.assert_array_equal(out["masked_lm_ids"][w], original)  # targets are the original ids
    # google-research/bert's count: min(max_predictions, max(1, round(15% of all tokens))), per sequence
    lengths = real.sum(axis=1)
    expected = np.minimum(32, np.maximum(1, np.round(lengths * 0.15)))
    np.testing.assert_array_equal(w.sum(axis=1), expected)
    assert abs(w.sum() / real.sum() - 0.15) < 0.005
    now = out["input_word_ids"][rows, pos]
    mask_id = VOCAB.index("[MASK]")
    frac_mask = np.mean(now == mask_id)
    frac_same = np.mean(now == original)
    frac_random = 1 - frac_mask - frac_same
    assert abs(frac_mask - 0.8) < 0.02 and abs(frac_same - 0.1) < 0.02 and abs(frac_random - 0.1) < 0.02
    # nothing else changed
    untouched = np.ones_like(real)
    untouched[rows, pos] = False
    np.testing.assert_array_equal(out["input_word_ids"][untouched], packed["input_word_ids"][untouched])


@pytest.mark.slow
def test_special_tokens_and_padding_are_never_masked_and_positions_unique(packed):
    out = _mask(packed, max_predictions=20)
    for row in range(len(out["masked_lm_positions"])):
        n = int(out["masked_lm_weights"][row].sum())
        pos = out["masked_lm_positions"][row, :n]
        assert len(set(pos.tolist())) == n  # unique
        assert packed["input_mask"][row, pos].all()  # never padding
        assert not np.isin(packed["input_word_ids"][row, pos], list(SPECIAL)).any()
        assert (out["masked_lm_weights"][row, n:] == 0).all() and (out["masked_lm_positions"][row, n:] == 0).all()
    assert out["masked_lm_weights"].sum(axis=1).max() <= 20


@pytest.mark.slow
@pytest.mark.parametrize("mask, same, rnd", [(80, 10, 10), (100, 0, 0), (80, 0, 20), (80, 20, 0), (0, 20, 80),
                                             (0, 0, 100)])
def test_the_masking_rates_of_the_papers_table_8(packed, mask, same, rnd):
    """Table 8's rows (MASK / SAME / RND of the selected tokens) through ``--mask-token-rate`` and
    ``--random-token-rate``: each selected token becomes [MASK], stays, or becomes a random token
    in those shares (a random token is the original one only by chance, 1 in 30,000), and the
    selection itself stays 15% whatever the split."""
    out = _mask(packed, max_predictions=32, mask_token_rate=mask / 100, random_token_rate=rnd / 100)
    w = out["masked_lm_weights"].astype(bool)
    rows, pos = np.nonzero(w)[0], out["masked_lm_positions"][w]
    now, original = out["input_word_ids"][rows, pos], packed["input_word_ids"][rows, pos]
    is_mask, is_same = now == VOCAB.index("[MASK]"), now == original
    shares = np.mean(is_mask), np.mean(is_same & ~is_mask), np.mean(~is_mask & ~is_same)
    np.testing.assert_allclose(shares, (mask / 100, same / 100, rnd / 100), atol=0.015)
    np.testing.assert_array_equal(out["masked_lm_ids"][w], original)
    assert abs(w.sum() / packed["input_mask"].sum() - 0.15) < 0.005


@pytest.mark.slow
def test_configurable_rates(packed):
    out = _mask(packed, max_predictions=64, selection_rate=0.3, mask_token_rate=0.5, random_token_rate=0.5)
    w = out["masked_lm_weights"].astype(bool)
    rows, pos = np.nonzero(w)[0], out["masked_lm_positions"][w]
    now = out["input_word_ids"][rows, pos]
    assert abs(np.mean(now == VOCAB.index("[MASK]")) - 0.5) < 0.03
    assert np.mean(now == packed["input_word_ids"][rows, pos]) < 0.01
    with pytest.raises(ValueError, match="mask_token_rate"):
        MlmMasker(VOCAB, mask_token_rate=0.9, random_token_rate=0.2)


@pytest.mark.slow
def test_whole_word_masking_masks_every_piece_of_a_word(packed):
    out = _mask(packed, max_predictions=64, whole_word=True)
    is_cont = np.array([t.startswith("##") for t in VOCAB])
    for row in range(500):
        n = int(out["masked_lm_weights"][row].sum())
        chosen = set(out["masked_lm_positions"][row, :n].tolist())
        ids = packed["input_word_ids"][row]
        length = int(packed["input_mask"][row].sum())
        for p in chosen:
            # the word's neighbours: a continuation piece before or after must be chosen too
            if p + 1 < length and is_cont[ids[p + 1]]:
                assert p + 1 in chosen
            if is_cont[ids[p]]:
                assert p - 1 in chosen
    # The loop above holds for a masker that masks nothing; the counts and targets do not.
    # google-research/bert's budget (create_masked_lm_predictions): round(15%) of each sequence's
    # tokens, at least one, filled with whole words only (so never more than the budget).
    real = packed["input_mask"].astype(bool)
    w = out["masked_lm_weights"].astype(bool)
    budget = np.minimum(64, np.maximum(1, np.round(real.sum(axis=1) * 0.15)))
    assert (w.sum(axis=1) >= 1).all() and (w.sum(axis=1) <= budget).all()
    assert abs(w.sum() / real.sum() - 0.15) < 0.01
    rows, pos = np.nonzero(w)[0], out["masked_lm_positions"][w]
    original = packed["input_word_ids"][rows, pos]
    np.testing.assert_array_equal(out["masked_lm_ids"][w], original)
    assert np.mean(out["input_word_ids"][rows, pos] != original) > 0.85  # 80% [MASK] + 10% random
    # words of several pieces are chosen, about as often as their pieces' share of the text
    assert is_cont[original].mean() > 0.5 * is_cont[packed["input_word_ids"][real]].mean()


@pytest.mark.slow
def test_from_tokenizer_takes_the_tokenizers_special_tokens_and_word_starts(packed):
    from kbert.text import BertTokenizer

    tokenizer = BertTokenizer(UNCASED_VOCAB)
    small = {k: tf.constant(v[:200]) for k, v in packed.items()}

    def run(masker):
        tf.random.set_seed(0)
        return {k: v.numpy() for k, v in masker(small).items()}

    # WordPiece: the same masks as the vocabulary-based constructor.
    expected = run(MlmMasker(VOCAB, max_predictions=20, whole_word=True))
    got = run(MlmMasker.from_tokenizer(tokenizer, max_predictions=20, whole_word=True))
    for key in expected:
        np.testing.assert_array_equal(got[key], expected[key])
    # Word starts come from the tokenizer: the words the masker groups follow them.
    words = tokenizer.tokenize(["unaffable cats sat"])  # the tokenizer's own [words, pieces]
    ids = words.merge_dims(1, 2)
    grouped = MlmMasker.from_tokenizer(tokenizer)._group_words(ids)
    assert grouped.to_list() == words.to_list() and max(len(w) for w in grouped.to_list()[0]) > 1
    every_piece = MlmMasker.from_tokenizer(tokenizer, starts_word=[True] * len(VOCAB))._group_words(ids)
    assert [len(w) for w in every_piece.to_list()[0]] == [1] * len(ids.to_list()[0])
    with pytest.raises(ValueError, match="starts_word has 3 entries"):
        MlmMasker(VOCAB, starts_word=[True] * 3)
