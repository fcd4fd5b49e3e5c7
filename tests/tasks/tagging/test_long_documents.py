"""Tagging over windows: CoNLL-2003 articles joined into documents (../shared/data/conll2003) are read
in windows of a small seq_length and every word of every document is tagged exactly once, from the
window where it has the most context (max_context_windows, tests/fixtures/windows_reference.py);
sentences that fit get exactly the truncate tags; the exported graph tags the same."""

import numpy as np
import pytest
import tensorflow as tf

from kbert.data.conll import read_conll
from kbert.tasks.tagging.model import TokenTagger
from fixtures.windows_reference import max_context_windows, window_starts

SEQ = 32


@pytest.fixture(scope="module")
def articles(shared_data):
    data = read_conll(shared_data / "conll2003" / "valid.txt")
    joined = {}
    for e in data.examples:
        joined.setdefault(e["document"], []).extend(e["words"])
    docs = [joined[k] for k in sorted(joined) if 100 < len(joined[k]) < 400][:6]
    return docs, data.label_names, data.examples[:12]


@pytest.fixture(scope="module")
def models(tiny_model_dir, articles):
    _, labels, _ = articles
    truncate = TokenTagger.from_model_dir(tiny_model_dir, label_names=labels, seq_length=SEQ)
    windows = TokenTagger.from_model_dir(tiny_model_dir, label_names=labels, seq_length=SEQ,
                                         long_documents="windows", doc_stride=12)
    kernel, bias = truncate.head.weights
    bias.assign(np.linspace(-1, 1, bias.shape[0]).astype("float32"))
    kernel.assign(np.random.default_rng(0).normal(0, 0.5, kernel.shape).astype("float32"))  # tags vary by word
    windows.head.set_weights(truncate.head.get_weights())
    return truncate, windows


def test_every_word_tagged_exactly_once_from_its_max_context_window(articles, models):
    docs, _, _ = articles
    _, model = models
    inputs, _, word_ids, document = model.numpy_features(docs, with_document=True)
    assert all(len(d) > 100 for d in docs) and len(document) > 3 * len(docs)
    for d, words in enumerate(docs):
        rows = np.flatnonzero(document == d)
        named = np.concatenate([word_ids[r][word_ids[r] >= 0] for r in rows])
        assert sorted(named.tolist()) == list(range(len(words)))  # each word exactly once
        # ... in the window that the plan picks for the word's first piece
        pieces = [len(p) for p in model.tokenizer(tf.constant([[w for w in words]])).merge_dims(2, 3).to_list()[0]]
        first_piece = np.concatenate([[0], np.cumsum(pieces)[:-1]])
        best = max_context_windows(int(sum(pieces)), SEQ - 2, 12)
        assert len(rows) == len(window_starts(int(sum(pieces)), SEQ - 2, 12))
        for k, r in enumerate(rows):
            for w in word_ids[r][word_ids[r] >= 0]:
                assert best[first_piece[w]] == k


def test_sentences_that_fit_get_the_truncate_tags(articles, models):
    _, _, sentences = articles
    truncate, windows = models
    short = [e["words"] for e in sentences if len(e["words"]) < 8]
    assert short
    assert windows.predict_words(short) == truncate.predict_words(short)


@pytest.mark.slow
def test_long_documents_tagged_in_the_graph_as_on_the_host(articles, models, tmp_path):
    from kbert.export.task import export_task

    docs, _, _ = articles
    _, model = models
    model.save_model_dir(tmp_path / "m")
    path = export_task(tmp_path / "m", tmp_path / "export" / "1")
    serve = tf.saved_model.load(str(path)).signatures["serving_default"]
    texts = [" ".join(d) for d in docs[:3]]
    out = serve(text=tf.constant(texts))
    host = model.predict_entities(texts)
    for row, result in enumerate(host):
        graph_tags = [t.decode() for t in out["tags"][row].numpy()[:int(out["num_words"][row])]]
        assert graph_tags == [w["tag"] for w in result["words"]]
