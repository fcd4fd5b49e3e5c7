"""kbert.bench.ort_peer: the ONNX Runtime peer's own steps, on a tiny random BERT in this process —
the exported graph answers as the transformers model it was exported from (plain and after ORT's
transformer optimizer), a request's feeds carry each runtime's input names and dtypes, and the
Rust tokenizer cuts and pads every request to the bench's length. The timing protocol around them is
``kbert.bench.common``'s (tests/bench/test_common.py); the rows it prints, tests/bench/test_serve_ort.py.
"""

import numpy as np
import pytest

from conftest import UNCASED_VOCAB, require_installed

TINY = dict(vocab_size=120, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
            hidden_act="gelu_exact", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
            max_position_embeddings=64, type_vocab_size=2, initializer_range=0.02)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    require_installed("torch", "transformers", "onnx", "onnxruntime")
    from kbert.bench import ort_peer

    folder = tmp_path_factory.mktemp("ort_peer")
    model = ort_peer._hf_model({"config": TINY})
    plain = ort_peer.export_onnx(model, folder / "model.onnx", seq_length=16)
    optimized = ort_peer.optimize_onnx(plain, folder / "model.optimized.onnx", TINY["num_attention_heads"],
                                       TINY["hidden_size"])
    return model, plain, optimized


def _torch_outputs(model, ids, mask, types):
    import torch

    with torch.inference_mode():
        out = model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                    token_type_ids=torch.tensor(types))
    return out.last_hidden_state.numpy(), out.pooler_output.numpy()


@pytest.mark.slow
@pytest.mark.parametrize("which", ["plain", "optimized"])
def test_the_onnx_graph_answers_as_the_model_at_other_batch_sizes_and_lengths(exported, which):
    """Dynamic batch and sequence axes: a shape other than the exported example's, padding included."""
    from kbert.bench import ort_peer

    model, plain, optimized = exported
    rng = np.random.default_rng(0)
    ids = rng.integers(1, TINY["vocab_size"], (3, 11))
    mask = np.ones_like(ids)
    mask[1, 7:] = 0
    types = np.zeros_like(ids)
    types[:, 5:] = 1
    feeds = ort_peer._feeds(ort_peer.HF_NAMES, "int64", ids, mask, types)
    got = ort_peer.session(plain if which == "plain" else optimized, threads=1).run(None, feeds)
    want = _torch_outputs(model, ids, mask, types)
    for name, g, w in zip(ort_peer.OUTPUTS, got, want):
        assert g.shape == w.shape, name
        np.testing.assert_allclose(g, w, atol=2e-4, err_msg=name)


def test_feeds_carry_each_runtimes_names_and_dtypes():
    from kbert.bench import ort_peer

    ids = [[5, 6, 0]]
    feeds = ort_peer._feeds(ort_peer.KBERT_NAMES, "int32", ids, [[1, 1, 0]], [[0, 0, 0]])
    assert sorted(feeds) == ["input_mask", "input_type_ids", "input_word_ids"]
    assert all(v.dtype == np.int32 for v in feeds.values())
    np.testing.assert_array_equal(feeds["input_word_ids"], ids)
    hf = ort_peer._feeds(ort_peer.HF_NAMES, "int64", ids, [[1, 1, 0]], [[0, 0, 0]])
    assert sorted(hf) == ["attention_mask", "input_ids", "token_type_ids"]
    assert all(v.dtype == np.int64 for v in hf.values())


def test_the_rust_tokenizer_cuts_and_pads_every_request_to_the_bench_length(tmp_path):
    require_installed("tokenizers")
    from tokenizers import BertWordPieceTokenizer

    from kbert.bench import ort_peer

    BertWordPieceTokenizer(str(UNCASED_VOCAB), lowercase=True).save(str(tmp_path / "tokenizer.json"))
    tokenizer = ort_peer._tokenizer(tmp_path / "tokenizer.json", seq=8)
    short, long = tokenizer.encode_batch(["Hello world", "one two three four five six seven eight nine"])
    assert len(short.ids) == len(long.ids) == 8
    assert short.attention_mask == [1, 1, 1, 1, 0, 0, 0, 0] and short.ids[4:] == [0, 0, 0, 0]
    vocab = UNCASED_VOCAB.read_text(encoding="utf-8").split("\n")
    assert [vocab[i] for i in short.ids[:4]] == ["[CLS]", "hello", "world", "[SEP]"]
    assert long.attention_mask == [1] * 8 and vocab[long.ids[-1]] == "[SEP]"


def test_read_texts_repeats_the_file_to_the_count_and_skips_blank_lines(tmp_path):
    from kbert.bench import ort_peer

    path = tmp_path / "s.txt"
    path.write_text("a b\n\nc d\n", encoding="utf-8")
    assert ort_peer._read_texts(path, 5) == ["a b", "c d", "a b", "c d", "a b"]
