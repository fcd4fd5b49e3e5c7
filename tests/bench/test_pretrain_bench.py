"""python -m kbert.bench pretrain: kbert vs keras-hub's BertMaskedLM on the same batches. The steps/s,
accuracies and ratio it prints are checked against timings and predictions the test controls
(models and clock faked), and one small real run trains both models on conftest's records."""

import re

import numpy as np
import pytest

from conftest import REPO
from kbert.bench import pretrain_bench as bench


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class FakeModel:
    """train_on_batch takes the next of its step times on the clock; predicts ``predict`` once trained
    (``before`` until then), as logits over 10 ids, in a dict (kbert's) or bare (keras-hub's)."""

    def __init__(self, clock, step_seconds, before, predict, as_dict):
        self.clock, self.step_seconds, self.before, self.predict, self.as_dict = clock, list(step_seconds), before, \
            predict, as_dict
        self.calls = []

    def train_on_batch(self, x, y, sample_weight=None):
        self.calls.append((x, y, sample_weight))
        self.clock.now += self.step_seconds.pop(0)

    def predict_on_batch(self, x):
        token = self.predict if self.calls else self.before
        logits = np.zeros(x["shape"] + (10,))
        logits[..., token] = 1.0
        return {"mlm_logits": logits} if self.as_dict else logits


def _batch(ids, weights):
    ids, weights = np.array(ids), np.array(weights, np.float32)
    return {"shape": ids.shape}, {"masked_lm_ids": ids, "masked_lm_weights": weights}


def test_train_chunk_times_the_batches_and_passes_the_weights(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(bench.time, "perf_counter", clock)
    model = FakeModel(clock, [0.5, 0.25], 0, 0, True)
    batches = [({"a": 1}, {"b": 1}), ({"a": 2}, {"b": 2})]
    assert bench._train_chunk(model, lambda x, y: (x, y), batches) == 0.75
    assert model.calls == [({"a": 1}, {"b": 1}, None), ({"a": 2}, {"b": 2}, None)]
    model = FakeModel(clock, [1.0], 0, 0, False)
    assert bench._train_chunk(model, lambda x, y: (x, y["b"], "w"), batches[:1]) == 1.0
    assert model.calls == [({"a": 1}, 1, "w")]  # keras-hub's: (inputs, labels, sample weights)


def test_accuracy_is_over_the_weighted_predictions():
    ids = [[7, 3, 7, 7], [7, 7, 1, 7]]  # the unweighted positions hold what the model predicts once trained
    weights = [[1, 1, 1, 0], [1, 1, 0, 0]]
    batches = [_batch(ids[:1], weights[:1]), _batch(ids[1:], weights[1:])]
    model = FakeModel(Clock(), [], before=3, predict=7, as_dict=False)
    expected = lambda token: float((np.array(ids) == token)[np.array(weights) == 1].mean())  # noqa: E731
    assert bench._accuracy(model, lambda x, y: (x, y), batches) == pytest.approx(expected(3)) == 1 / 5
    model.calls.append("trained")
    assert bench._accuracy(model, lambda x, y: (x, y), batches) == pytest.approx(expected(7)) == 4 / 5
    model.as_dict = True  # kbert's pretrainer answers a dict
    assert bench._accuracy(model, lambda x, y: (x, y), batches) == pytest.approx(4 / 5)


def test_main_prints_median_steps_per_second_and_the_ratio(monkeypatch, tmp_path, capsys):
    clock = Clock()
    monkeypatch.setattr(bench.time, "perf_counter", clock)
    # 8 steps in chunks of 2; the first chunk (tracing) is left out of the median
    kbert_steps = [5.0, 0.1, 0.1, 0.1, 0.4, 0.4, 0.2, 0.2]     # chunks 2.55, 0.1, 0.4, 0.2 s/step
    hub_steps = [3.0, 0.5, 0.4, 0.4, 0.5, 0.5, 0.9, 0.9]       # chunks 1.75, 0.4, 0.5, 0.9 s/step
    ids, weights = [[7, 3, 7, 2, 0]], [[1, 1, 1, 1, 0]]
    models = {"kbert": FakeModel(clock, kbert_steps, before=3, predict=7, as_dict=True),
              "keras-hub": FakeModel(clock, hub_steps, before=2, predict=3, as_dict=False)}
    train_seen = []
    monkeypatch.setattr(bench, "_records", lambda args, work: None)
    monkeypatch.setattr(bench, "_batches", lambda pattern, args, n, seed: [_batch(ids, weights)] * n)
    monkeypatch.setattr(bench, "_kbert_model", lambda config, steps, lr: (models["kbert"], lambda x, y: (x, y)))
    monkeypatch.setattr(bench, "_keras_hub_model", lambda config, steps, lr: (
        models["keras-hub"], lambda x, y: train_seen.append(x) or (x, y["masked_lm_ids"], y["masked_lm_weights"])))
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(25)]))
    assert bench.main(["--config", "tiny", "--vocab", str(vocab), "--steps", "8", "--chunk", "2",
                       "--eval-batches", "2", "--work-dir", str(tmp_path / "work")]) == 0
    assert all(len(m.step_seconds) == 0 for m in models.values())  # every step trained, on both
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == ("pre-training BERT-tiny (L2/H128), batch 32, seq 128, 20 predictions, 8 steps, vocab 30, "
                        "MLM only, AdamW lr 0.001")
    # kbert: median of 0.1, 0.4, 0.2 = 0.2 s/step -> 5 steps/s; accuracy 1/4 before (predicts 3), 2/4 after (7)
    assert lines[2].split() == ["kbert", "5.00", "0.100-0.400", "0.2500", "0.5000"]
    # keras-hub: median of 0.4, 0.5, 0.9 = 0.5 s/step -> 2 steps/s; 1/4 before (2), 1/4 after (3)
    assert lines[3].split() == ["keras-hub", "2.00", "0.400-0.900", "0.2500", "0.2500"]
    assert lines[4] == "kbert / keras-hub: speed 2.50x, held-out MLM accuracy 0.5000 vs 0.2500 (+0.2500)"


@pytest.mark.slow
def test_a_small_run_trains_both_models_on_the_same_records(tmp_path, capsys, pretraining_records, small_vocab):
    """The real models and batches: kbert's pretrainer without NSP, keras-hub's BertMaskedLM through
    its adapter, on conftest's records (linked where the bench looks for its own)."""
    work = tmp_path / "work"
    work.mkdir()
    for record in list(pretraining_records.glob("train-*.tfrecord")) + list(pretraining_records.glob("eval-*.tfrecord")):
        (work / record.name).symlink_to(record)
    assert bench.main(["--config", "tiny", "--vocab", str(small_vocab), "--steps", "4", "--chunk", "2",
                       "--batch-size", "4", "--seq-length", "32", "--max-predictions", "5", "--eval-batches", "2",
                       "--work-dir", str(work)]) == 0
    out = capsys.readouterr().out
    rows = {m.group(1): [float(g) for g in m.groups()[1:]] for m in re.finditer(
        r"^(kbert|keras-hub)\s+([\d.]+)\s+[\d.]+-[\d.]+\s+([\d.]+)\s+([\d.]+)$", out, re.M)}
    assert set(rows) == {"kbert", "keras-hub"}, out
    assert all(0 <= acc <= 1 for r in rows.values() for acc in r[1:])
    speed = float(re.search(r"speed ([\d.]+)x", out).group(1))
    assert speed == pytest.approx(rows["kbert"][0] / rows["keras-hub"][0], abs=0.01, rel=0.01)


def test_defaults_read_the_shared_corpus_and_vocab():
    """The defaults are the shared data beside the checkout (``../shared/data``), wherever the test
    harness itself finds its data (KBERT_SHARED_DATA may point elsewhere)."""
    beside = REPO.parent / "shared" / "data"
    args = bench.parse_args([])
    assert args.vocab == str(beside / "vocab" / "bert-base-uncased" / "vocab.txt")
    assert args.train == str(beside / "corpus" / "en" / "[a-o]*.txt")
    assert args.eval == str(beside / "corpus" / "en" / "[p-z]*.txt")
    assert (args.config, args.steps, args.chunk, args.batch_size) == ("mini", 300, 25, 32)
