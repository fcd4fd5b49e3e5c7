"""The ``attention`` choice reaches what users run, and model directories do not depend on it.

Under JAX (a child interpreter: Keras fixes its backend at import) a classifier is fine-tuned with
``attention="fused"`` (the sequence-lengths kernel here), saved, and reloaded with "plain" and
"auto" through load_task_model and predict_file: the same probabilities within 1e-5, and nothing
in the model directory names the attention. The flags of pretrain, finetune and predict take the
three choices and refuse others.
"""

import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import require

from kbert.errors import OptionsError as TrainingOptionsError
from kbert.errors import OptionsError
from kbert.tasks.core.options import FinetuneOptions
from kbert.training.pretrain import PretrainOptions, check_attention_and_precision

REPO = pathlib.Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent("""
    import json, pathlib, sys
    import keras, numpy as np
    from fixtures.backend_worker import LABELS, NO_DROPOUT, TEXTS
    from kbert.layers import accel
    from kbert.tasks import load_task_model
    from kbert.tasks.classification.model import TextClassifier
    from kbert.tasks.core.predict import predict_file
    from kbert.tasks.core.prediction import PredictOptions
    from kbert.training.optimization import create_optimizer
    assert keras.backend.backend() == "jax"
    keras.utils.set_random_seed(0)  # the head's draw and fit's shuffle: the same run every time
    init, out_dir, out_file = sys.argv[1:4]
    model = TextClassifier.from_model_dir(init, num_classes=2, seq_length=32, load_head=False,
                                          encoder_overrides=NO_DROPOUT, attention="fused")
    kernels = {b.attention.attention_impl for b in model.encoder.blocks}
    model.compile(create_optimizer(3e-3, 20, 0))
    history = model.fit(np.array(TEXTS * 2, dtype=object), np.array(LABELS * 2), batch_size=8, epochs=5, verbose=0)
    texts = np.array(TEXTS, dtype=object)
    trained = model.predict_proba(texts)
    model.save_model_dir(out_dir)
    out = {"trained": trained, "loss": np.array(history.history["loss"]), "kernels": np.array(sorted(kernels)),
           "fused_kernel": np.array(accel.choose_kernel("fused", training=True, dropout_rate=0.0, dtype="float32",
                                                        head_size=64))}
    for impl in ("plain", "auto"):
        again = load_task_model(out_dir, attention=impl)
        out[f"impl_{impl}"] = np.array(sorted({b.attention.attention_impl for b in again.encoder.blocks}))
        out[f"reloaded_{impl}"] = again.predict_proba(texts)
    rows = pathlib.Path(out_file).with_suffix(".csv")
    rows.write_text("id,text\\n" + "".join(f"{i},{t}\\n" for i, t in enumerate(TEXTS)))
    predicted = pathlib.Path(out_file).with_suffix(".jsonl")
    predict_file(out_dir, rows, predicted, "jsonl", PredictOptions(task_format="csv", text_columns=("text",),
                 id_column="id", probabilities=True, batch_size=3), attention="plain")
    lines = [json.loads(line) for line in predicted.read_text().splitlines()]
    out["predicted_plain"] = np.array([[r["probabilities"][k] for k in ("0", "1")] for r in lines])
    np.savez(out_file, **out)
""")


@pytest.mark.slow
def test_train_with_fused_reload_with_plain_and_auto_gives_the_same_outputs(tiny_model_dir, tmp_path):
    require("jax")
    env = dict(os.environ, KERAS_BACKEND="jax", JAX_PLATFORMS="cpu",
               PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "tests"), os.environ.get("PYTHONPATH", "")]))
    out_dir, out_file = tmp_path / "model", tmp_path / "out.npz"
    done = subprocess.run([sys.executable, "-c", CHILD, str(tiny_model_dir), str(out_dir), str(out_file)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    run = dict(np.load(out_file))
    # Trained with the fused (lengths) kernel, attention dropout 0: it learned something.
    assert run["kernels"].tolist() == ["fused"] and str(run["fused_kernel"]) == "xla"
    assert run["loss"][-1] < run["loss"][0], run["loss"]
    for impl in ("plain", "auto"):
        assert run[f"impl_{impl}"].tolist() == [impl]
        np.testing.assert_allclose(run[f"reloaded_{impl}"], run["trained"], atol=1e-5)
    np.testing.assert_allclose(run["predicted_plain"], run["trained"], atol=1e-5)
    # The files of the model directory say nothing of the attention that wrote them.
    for name in ("bert_config.json", "kbert.json"):
        text = (out_dir / name).read_text()
        assert "fused" not in text and "attention_impl" not in text, name


def test_options_take_the_three_attentions_and_refuse_others():
    for impl in ("auto", "plain", "fused"):
        assert FinetuneOptions(task="glue/sst2", init="a", model_dir="b", attention=impl).attention == impl
        check_attention_and_precision(PretrainOptions(train_data="x", model_dir="y", attention=impl))
    assert FinetuneOptions(task="glue/sst2", init="a", model_dir="b").attention == "auto"
    assert PretrainOptions(train_data="x", model_dir="y").attention == "auto"
    with pytest.raises(OptionsError, match="--attention.*'flash'"):
        FinetuneOptions(task="glue/sst2", init="a", model_dir="b", attention="flash")
    with pytest.raises(OptionsError, match="--mixed-precision.*'bf16'"):
        FinetuneOptions(task="glue/sst2", init="a", model_dir="b", mixed_precision="bf16")
    with pytest.raises(TrainingOptionsError, match="--attention 'flash'"):
        check_attention_and_precision(PretrainOptions(train_data="x", model_dir="y", attention="flash"))


def test_command_flags_carry_the_attention():
    from kbert.commands import predict, pretrain

    args = pretrain.parse_args(["--attention", "plain", "--mixed-precision", "mixed_bfloat16"])
    options = pretrain.options_from_args(args)
    assert (options.attention, options.mixed_precision) == ("plain", "mixed_bfloat16")
    assert pretrain.options_from_args(pretrain.parse_args([])).attention == "auto"
    args = predict.parse_args(["m", "--input", "i", "--output", "o", "--attention", "fused"])
    assert (args.attention, args.mixed_precision) == ("fused", "float32")
    with pytest.raises(SystemExit):
        predict.parse_args(["m", "--input", "i", "--output", "o", "--attention", "flash"])
    from kbert.commands import finetune
    from kbert.cli_support import from_args

    args = finetune.parse_args(["--task", "glue/sst2", "--init", "a", "--model-dir", "b", "--attention", "fused",
                                "--mixed-precision", "mixed_bfloat16"])
    options = from_args(FinetuneOptions, args)
    assert (options.attention, options.mixed_precision) == ("fused", "mixed_bfloat16")
