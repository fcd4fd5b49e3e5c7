"""Pre-training shows its guesses: every N steps, the masked LM fills the blank in a few held-out
sentences, logged as TensorBoard text summaries (tab "Text", tag ``fill_mask``), so one can watch
the guesses improve (from punctuation and "the" to words that fit).
"""

from __future__ import annotations

import pathlib
import random

import keras
import tensorflow as tf

from kbert.explore.heads_model import PretrainingHeads
from kbert.explore.masked_text import MASK


def held_out_sentences(file_pattern, vocab, lower_case=True, count=4, seed=0) -> list[tuple[str, str]]:
    """``count`` (text with one ``[MASK]``, the word it hides) pairs from pre-training TFRecords
    (``text_a`` of ``pipelines.pretraining_data``'s output): in each sentence, one word that is a
    whole token of the vocabulary (so one mask hides exactly it), at least 3 letters long."""
    from kbert.data.pretraining import list_files

    tokens = set(vocab)
    rng = random.Random(seed)
    found = []
    description = {"text_a": tf.io.FixedLenFeature([], tf.string)}
    # One parse of the first 2,000 records as a batch: parsing them one by one in eager mode was a
    # visible part of every pre-training run's start (docs/bench/code-notes).
    records = next(iter(tf.data.TFRecordDataset(list_files(file_pattern)).take(2000).batch(2000)), None)
    texts = [] if records is None else tf.io.parse_example(records, description)["text_a"].numpy()
    candidates = [t.decode("utf-8", "replace") for t in texts]
    rng.shuffle(candidates)
    for text in candidates:
        words = text.split()
        if not 6 <= len(words) <= 40:
            continue
        choices = [i for i, w in enumerate(words) if w.isalpha() and len(w) >= 3
                   and (w.lower() if lower_case else w) in tokens]
        if not choices:
            continue
        i = rng.choice(choices)
        found.append((" ".join(words[:i] + [MASK] + words[i + 1:]), words[i]))
        if len(found) == count:
            break
    return found


class FillMaskLogger(keras.callbacks.Callback):
    """Logs the top-k guesses for ``sentences`` ((masked text, hidden word) pairs) every ``every``
    optimizer steps and at the end of training."""

    def __init__(self, log_dir, encoder, mlm_head, preprocessor, sentences, every=100, top_k=5):
        super().__init__()
        self.writer = tf.summary.create_file_writer(str(pathlib.Path(log_dir)))
        self.heads = PretrainingHeads(encoder, mlm_head, None, preprocessor, source="pre-training")
        self.sentences = list(sentences)
        self.every = int(every)
        self.top_k = int(top_k)
        self._last = None

    def _step(self):
        return int(self.model.optimizer.iterations.numpy())

    def on_train_batch_end(self, batch, logs=None):
        step = self._step()
        if self.every > 0 and step % self.every == 0:
            self.log(step)

    def on_train_end(self, logs=None):
        self.log(self._step())

    def log(self, step):
        if not self.sentences or step == self._last:
            return
        self._last = step
        masked = [s for s, _ in self.sentences]
        result = {k: v.numpy() for k, v in self.heads.fill_mask(self.heads.pack(masked), self.top_k).items()}
        parts = []
        for row, (text, truth) in enumerate(self.sentences):
            guesses = [(t.decode("utf-8"), p) for t, p in zip(result["tokens"][row, 0], result["probabilities"][row, 0])]
            table = "\n".join(f"| {'**' + t + '**' if t.lower() == truth.lower() else t} | {p:.4f} |"
                              for t, p in guesses)
            parts.append(f"{text}  \n(hidden word: **{truth}**)\n\n| guess | probability |\n|---|---|\n{table}")
        with self.writer.as_default(step=step):
            tf.summary.text("fill_mask", "\n\n".join(parts))
        self.writer.flush()

    def guesses(self):
        """The current top-k tokens for each sentence (for tests and printing)."""
        result = self.heads.fill_mask(self.heads.pack([s for s, _ in self.sentences]), self.top_k)
        return [[t.decode("utf-8") for t in row[0]] for row in result["tokens"].numpy()]
