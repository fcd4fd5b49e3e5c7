"""The layers run under KERAS_BACKEND=jax and torch and give TensorFlow's (and transformers') numbers.

Each backend runs in its own interpreter (Keras fixes the backend at import). The model
directories are written here under TensorFlow (conversion uses it); the subprocess loads them and
runs the encoder, the pre-training heads and the attention probabilities on its own backend.
"""

import os
import pathlib
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from conftest import require_installed
from kbert import BertConfig, BertEncoder
from kbert.layers.heads import build_head
from kbert.model_dir import load_encoder, save_model_dir

REPO = pathlib.Path(__file__).resolve().parents[2]
NAMES = ("input_word_ids", "input_mask", "input_type_ids")
ROWS = 24  # of the 96 reference rows: enough padding patterns, a few seconds per backend

CHILD = textwrap.dedent("""
    import sys
    import keras, numpy as np
    from kbert.model_dir import load_encoder, load_heads
    assert keras.backend.backend() == sys.argv[1], keras.backend.backend()
    minilm_dir, tiny_dir, inputs_file, out_file = sys.argv[2:]
    inputs = dict(np.load(inputs_file))
    take = lambda prefix: {k[len(prefix):]: v for k, v in inputs.items() if k.startswith(prefix)}
    numpy = lambda t: keras.ops.convert_to_numpy(t)
    out = {}
    encoder = load_encoder(minilm_dir)
    o = encoder(take("minilm/"))
    out["sequence_output"], out["pooled_output"] = numpy(o["sequence_output"]), numpy(o["pooled_output"])
    probs = encoder(take("att/"), output_attentions=True)["attention_probs"]
    out["attentions"] = np.stack([numpy(p) for p in probs])
    tiny = load_encoder(tiny_dir)
    heads = load_heads(tiny_dir, tiny.config)
    o = tiny(take("tiny/"))
    out["mlm_logits"] = numpy(heads["mlm"](o["sequence_output"], inputs["positions"], tiny.word_embeddings))
    out["nsp_logits"] = numpy(heads["nsp"](o["pooled_output"]))
    np.savez(out_file, **out)
    assert "tensorflow" not in sys.modules, "the layers imported TensorFlow on " + sys.argv[1]
""")


@pytest.fixture(scope="module")
def tiny_with_heads(tmp_path_factory, shared_data):
    keras.utils.set_random_seed(7)
    config = BertConfig.preset("tiny", vocab_size=400, max_position_embeddings=64)
    encoder = BertEncoder(config)
    heads = {name: build_head(name, config) for name in ("mlm", "nsp")}
    for head in heads.values():  # non-zero biases, so a dropped bias would show
        for w in head.weights:
            w.assign(np.random.default_rng(1).normal(scale=0.1, size=w.shape).astype("float32"))
    out = tmp_path_factory.mktemp("tiny_heads") / "model"
    save_model_dir(out, encoder, vocab=[f"t{i}" for i in range(400)], heads={n: (h, None) for n, h in heads.items()})
    return out, encoder, heads


@pytest.fixture(scope="module")
def tensorflow_run(minilm_model_dir, minilm_reference, tiny_with_heads, shared_data, tmp_path_factory):
    """The inputs, and the TensorFlow backend's outputs for them (this process)."""
    _, tiny, heads = tiny_with_heads
    att = np.load(shared_data / "reference" / "minilm_attentions.npz")
    rng = np.random.default_rng(3)
    mask = (np.arange(20)[None, :] < np.array([20, 13, 5, 17])[:, None]).astype("int32")
    inputs = {
        "minilm/input_word_ids": minilm_reference["input_ids"][:ROWS],
        "minilm/input_mask": minilm_reference["attention_mask"][:ROWS],
        "minilm/input_type_ids": minilm_reference["token_type_ids"][:ROWS],
        **{f"att/{name}": att[name] for name in NAMES},
        "tiny/input_word_ids": rng.integers(1, 400, (4, 20)).astype("int32") * mask,
        "tiny/input_mask": mask,
        "tiny/input_type_ids": (np.arange(20)[None, :] >= 8).astype("int32") * mask,
        "positions": rng.integers(0, 5, (4, 3)).astype("int32"),
    }
    path = tmp_path_factory.mktemp("backend_inputs") / "inputs.npz"
    np.savez(path, **inputs)
    take = lambda prefix: {k[len(prefix):]: v for k, v in inputs.items() if k.startswith(prefix)}  # noqa: E731
    encoder = load_encoder(minilm_model_dir)
    o = encoder(take("minilm/"))
    t = tiny(take("tiny/"))
    expected = {
        "sequence_output": np.asarray(o["sequence_output"]),
        "pooled_output": np.asarray(o["pooled_output"]),
        "attentions": np.stack([np.asarray(p)
                                for p in encoder(take("att/"), output_attentions=True)["attention_probs"]]),
        "mlm_logits": np.asarray(heads["mlm"](t["sequence_output"], inputs["positions"], tiny.word_embeddings)),
        "nsp_logits": np.asarray(heads["nsp"](t["pooled_output"])),
    }
    return path, expected


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_backend_gives_tensorflow_and_transformers_outputs(backend, tensorflow_run, minilm_model_dir,
                                                           minilm_reference, tiny_with_heads, shared_data, tmp_path):
    require_installed(backend, reason="the CPU build")
    inputs_file, expected = tensorflow_run
    out_file = tmp_path / "out.npz"
    env = dict(os.environ, KERAS_BACKEND=backend, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2",
               CUDA_VISIBLE_DEVICES="", JAX_PLATFORMS="cpu")
    result = subprocess.run(
        [sys.executable, "-c", CHILD, backend, str(minilm_model_dir), str(tiny_with_heads[0]), str(inputs_file),
         str(out_file)], capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    got = dict(np.load(out_file))

    real = minilm_reference["attention_mask"][:ROWS].astype(bool)  # padded rows: zeros in the reference
    seq_vs_hf = np.abs(got["sequence_output"] - minilm_reference["last_hidden_state"][:ROWS])[real].max()
    assert seq_vs_hf <= 1e-4, seq_vs_hf
    np.testing.assert_allclose(got["pooled_output"], minilm_reference["pooler_output"][:ROWS], atol=1e-4)
    att = np.load(shared_data / "reference" / "minilm_attentions.npz")["attentions"]
    np.testing.assert_allclose(got["attentions"], att, atol=1e-5, rtol=1e-4)
    for name, value in expected.items():  # and TensorFlow's numbers
        if name == "sequence_output":
            value, mine = value[real], got[name][real]
        else:
            mine = got[name]
        np.testing.assert_allclose(mine, value, atol=1e-4, err_msg=f"{backend} {name}")
    assert got["mlm_logits"].shape == (4, 3, 400) and got["nsp_logits"].shape == (4, 2)
