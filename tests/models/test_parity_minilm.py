"""Real pretrained weights (all-MiniLM-L6-v2) against the stored outputs of Hugging Face transformers."""

import numpy as np
import pytest

from kbert.model_dir import load_encoder
from conftest import REFERENCE, run_fresh_python


def _inputs(ref):
    return {
        "input_word_ids": ref["input_ids"],
        "input_mask": ref["attention_mask"],
        "input_type_ids": ref["token_type_ids"],
    }


def _check(outputs, ref):
    real = ref["attention_mask"].astype(bool)  # padded positions are zeroed in the reference
    seq = np.abs(np.asarray(outputs["sequence_output"]) - ref["last_hidden_state"])[real].max()
    pooled = np.abs(np.asarray(outputs["pooled_output"]) - ref["pooler_output"]).max()
    assert seq <= 1e-4, seq
    assert pooled <= 1e-4, pooled
    assert len(outputs["encoder_outputs"]) == 6
    for i, layer in enumerate(outputs["encoder_outputs"]):
        # hidden_states[0] is the embedding output; [i + 1] is block i. Stored as float16.
        diff = np.abs(np.asarray(layer) - ref["hidden_states"][i + 1].astype(np.float32))[real].max()
        assert diff <= 1e-2, (i, diff)
    return seq, pooled


@pytest.mark.slow
def test_keras_encoder_reproduces_transformers(minilm_model_dir, minilm_reference):
    encoder = load_encoder(minilm_model_dir)
    _check(encoder(_inputs(minilm_reference)), minilm_reference)


@pytest.mark.slow
def test_exported_savedmodel_reproduces_transformers_in_a_fresh_process(minilm_model_dir, tmp_path):
    from kbert.export.encoder import export_encoder

    export_encoder(minilm_model_dir, tmp_path / "encoder")
    out = tmp_path / "outputs.npz"
    run_fresh_python(f"""
import sys, numpy as np, tensorflow as tf
ref = np.load({str(REFERENCE / 'minilm_encoder.npz')!r})
enc = tf.saved_model.load({str(tmp_path / 'encoder')!r})
inputs = dict(input_word_ids=ref['input_ids'], input_mask=ref['attention_mask'],
              input_type_ids=ref['token_type_ids'])
o = enc({{k: tf.constant(v) for k, v in inputs.items()}}, training=False)
np.savez({str(out)!r}, sequence_output=o['sequence_output'], pooled_output=o['pooled_output'],
         default=o['default'], **{{f'e{{i}}': x for i, x in enumerate(o['encoder_outputs'])}})
assert not [m for m in sys.modules if m.split('.')[0] == 'kbert'], 'fresh process imported kbert'
""")
    o = dict(np.load(out))
    outputs = {
        "sequence_output": o["sequence_output"],
        "pooled_output": o["pooled_output"],
        "encoder_outputs": [o[f"e{i}"] for i in range(6)],
    }
    _check(outputs, np.load(REFERENCE / "minilm_encoder.npz"))
    np.testing.assert_array_equal(o["default"], o["pooled_output"])
