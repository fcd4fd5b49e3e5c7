"""Every keras.layers.TFSMLayer call docs/serving.md documents (the block after ``<!-- tfsmlayer-calls -->``)
runs, in a process without kbert, and gives the same numbers as the exports' TF Serving
signatures (``signatures["serving_default"]``, called with keyword arguments)."""

import re

import pytest

from conftest import REPO, run_fresh_python
from kbert.export.preprocessor import export_preprocessor

pytestmark = pytest.mark.slow  # the whole module: its shared fixture alone outlasts the fast tier


def documented_calls() -> str:
    readme = (REPO / "docs" / "serving.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- tfsmlayer-calls -->\s*```python\n(.*?)```", readme, re.S)
    assert match, "docs/serving.md has no <!-- tfsmlayer-calls --> block"
    return match.group(1)


@pytest.fixture(scope="module")
def exports_dir(tmp_path_factory, tiny_model_dir, task_export_paths, tiny_encoder_export):
    """The three exports under the relative paths docs/serving.md uses (the SST-2 one is conftest.task_export_paths',
    the encoder conftest.tiny_encoder_export)."""
    root = tmp_path_factory.mktemp("endpoints")
    for name, export in (("sst2", task_export_paths["sst2"][1]), ("bert_encoder", tiny_encoder_export)):
        (root / "saved_models" / name).mkdir(parents=True)
        (root / "saved_models" / name / "1").symlink_to(export, target_is_directory=True)
    export_preprocessor(tiny_model_dir, root / "saved_models" / "bert_preprocessor" / "1")
    return root


def test_every_documented_tfsmlayer_call_runs_and_matches_the_signatures(exports_dir):
    code = documented_calls()
    assert code.count("TFSMLayer(") == 3 and "serving_default" in code
    loop = 'for endpoint in ("serve", "serving_default"):'
    assert loop in code
    # The documented block once per endpoint, each followed by a check of its results against the
    # TF Serving signatures.
    check = "".join(code.replace(loop, f"for endpoint in ({e!r},):") + CHECK for e in ("serve", "serving_default"))
    out = run_fresh_python(f"import os; os.chdir({str(exports_dir)!r})\n" + check)
    assert out.split() == ["ok", "serve", "ok", "serving_default"], out
    assert "import kbert" not in code and "from kbert" not in code


CHECK = '''
import numpy as np
def signature(path):
    return tf.saved_model.load(path).signatures["serving_default"]
ref_ids = signature("saved_models/bert_preprocessor/1")(text=text)
for k in ("input_word_ids", "input_mask", "input_type_ids"):
    np.testing.assert_array_equal(ids[k], ref_ids[k])
    assert ids[k].shape == (2, 128) and ids[k].dtype == tf.int32
ref_out = signature("saved_models/bert_encoder/1")(**ref_ids)
np.testing.assert_allclose(out["pooled_output"], ref_out["pooled_output"], atol=1e-5)
np.testing.assert_allclose(out["sequence_output"], ref_out["sequence_output"], atol=1e-5)
ref_answer = signature("saved_models/sst2/1")(text=text)
np.testing.assert_array_equal(answer["labels"], ref_answer["labels"])
np.testing.assert_allclose(answer["probabilities"], ref_answer["probabilities"], atol=1e-6)
assert set(answer["labels"].numpy().tolist()) <= {b"negative", b"positive"}
print("ok", endpoint)
'''
