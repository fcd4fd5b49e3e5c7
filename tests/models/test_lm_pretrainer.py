"""BertLMPretrainer: next-token loss and metrics against NumPy, the decoder as the MLM head's, the
refusal of a bidirectional encoder."""

import keras
import numpy as np
import pytest

from kbert import BertConfig, BertEncoder
from kbert.errors import OptionsError
from kbert.models.lm_pretrainer import BertLMPretrainer


def _batch(vocab=60, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, vocab, (3, 9)).astype("int32")
    mask = np.ones_like(ids)
    for row, length in ((0, 5), (2, 2)):
        ids[row, length:], mask[row, length:] = 0, 0
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": np.zeros_like(ids)}


def _log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(0)
    return BertLMPretrainer(BertEncoder(BertConfig.preset("tiny", vocab_size=60, max_position_embeddings=32),
                                        causal=True))


def test_logits_are_the_mlm_decoder_on_every_position_but_the_last(model):
    x = _batch()
    logits = np.asarray(model(x)["lm_logits"])
    assert logits.shape == (3, 8, 60)
    seq = np.asarray(model.encoder(x)["sequence_output"])[:, :-1]
    head = model.lm_head
    h = np.asarray(head.layer_norm(head.transform(seq)))
    np.testing.assert_allclose(logits, h @ model.encoder.word_embeddings.numpy().T + head.output_bias.numpy(),
                               atol=1e-4)
    assert head.name == "mlm" and model.heads() == {"mlm": head}  # saved as BertPretrainer's masked-LM head


@pytest.mark.parametrize("fused_kernels", ["1", "0"])
def test_loss_and_metrics_are_next_token_cross_entropy_over_real_tokens(model, fused_kernels, monkeypatch):
    """The loss: mean over (row, t) with token t + 1 real of -log softmax(logits[t])[ids[t + 1]];
    lm_accuracy: the share of those whose next token has the largest logit."""
    monkeypatch.setenv("KBERT_FUSED_KERNELS", fused_kernels)
    x = _batch()
    out = model(x)
    logits = np.asarray(out["lm_logits"], np.float64)
    x["input_word_ids"][1, 1:] = np.where(x["input_mask"][1, 1:] > 0, logits[1].argmax(-1), 0)  # some hits
    out = model(x)
    logits = np.asarray(out["lm_logits"], np.float64)
    ce, hits, count = 0.0, 0, 0
    for row in range(3):
        for t in range(8):
            if x["input_mask"][row, t + 1]:
                target = x["input_word_ids"][row, t + 1]
                ce -= _log_softmax(logits[row, t])[target]
                hits += int(logits[row, t].argmax() == target)
                count += 1
    assert count == 4 + 8 + 1
    for metric in model.metrics:
        metric.reset_state()
    assert float(model.compute_loss(x, None, out)) == pytest.approx(ce / count, rel=1e-5)
    logs = model.compute_metrics(x, None, out)
    assert float(logs["lm_loss"]) == pytest.approx(ce / count, rel=1e-5)
    assert float(logs["lm_accuracy"]) == pytest.approx(hits / count, abs=1e-6) and hits >= 1


def test_a_bidirectional_encoder_is_refused():
    with pytest.raises(OptionsError, match="needs a causal encoder"):
        BertLMPretrainer(BertEncoder(BertConfig.preset("tiny", vocab_size=60, max_position_embeddings=32)))


@pytest.mark.slow
def test_fit_reduces_the_loss():
    keras.utils.set_random_seed(1)
    config = BertConfig.preset("tiny", vocab_size=60, max_position_embeddings=32)
    model = BertLMPretrainer(BertEncoder(config, causal=True))
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    x = _batch(seed=3)
    history = model.fit(x, epochs=8, batch_size=3, verbose=0).history
    assert set(history) == {"loss", "lm_loss", "lm_accuracy"}
    assert history["lm_loss"][-1] < history["lm_loss"][0] - 0.5
