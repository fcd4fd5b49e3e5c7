"""Exported task models under load and under arbitrary input (reliability issue, serving half)."""

import threading

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import TAGS, TASK_LABELS


@pytest.fixture(scope="module")
def served(task_export_paths):
    """The serving signatures of conftest.task_export_paths' SST-2 classifier and NER tagger."""
    return tuple(tf.saved_model.load(str(task_export_paths[name][1])).signatures["serving_default"]
                 for name in ("sst2", "ner"))


@pytest.mark.slow
def test_eight_threads_at_once_get_the_single_threaded_outputs(served):
    """Concurrent calls of one signature answer exactly what one caller gets. A fixed number of
    calls, no clock: how long a server holds up and its memory over time are kbert bench's to
    measure, not a unit test's."""
    clf, _ = served
    rng = np.random.default_rng(0)
    words = "the a film great bad Zürich 東京 🎉 , . not very".split()
    batches = [[" ".join(rng.choice(words, rng.integers(0, 30))) for _ in range(rng.integers(1, 9))]
               for _ in range(16)]
    reference = [clf(text=tf.constant(b))["probabilities"].numpy() for b in batches]
    errors, calls, start = [], [0] * 8, threading.Barrier(8)

    def worker(k):
        r = np.random.default_rng(k)
        start.wait()
        for _ in range(40):
            i = int(r.integers(len(batches)))
            got = clf(text=tf.constant(batches[i]))["probabilities"].numpy()
            if got.shape != reference[i].shape or np.abs(got - reference[i]).max() > 1e-6:
                errors.append((i, got, reference[i]))
            calls[k] += 1

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, f"{len(errors)} calls differed from single-threaded results"
    assert calls == [40] * 8, calls


text_or_bytes = st.one_of(
    st.text(max_size=300),
    st.binary(max_size=300),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=50).map(lambda s: s * 40),
)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(text_or_bytes, min_size=0, max_size=24))
def test_serving_signatures_never_crash_on_arbitrary_input(served, batch):
    clf, ner = served
    strings = tf.constant([s if isinstance(s, bytes) else s.encode("utf-8", "surrogatepass") for s in batch],
                          dtype=tf.string, shape=[len(batch)])
    out = clf(text=strings)
    assert out["probabilities"].shape == (len(batch), len(TASK_LABELS))
    assert np.isfinite(out["probabilities"].numpy()).all()
    assert set(out["labels"].numpy().tolist()) <= {label.encode() for label in TASK_LABELS}
    tags = ner(text=strings)
    n = tags["num_words"].numpy()
    assert tags["tags"].shape[0] == len(batch) and (n >= 0).all()
    assert (tags["tag_ids"].numpy() < len(TAGS)).all()
    for i in range(len(batch)):
        assert (tags["word_start"].numpy()[i][: n[i]] >= 0).all()
