"""Pre-training's option checks (kbert/training/pretrain.py's check_options): each refusal is an error
naming the option and value, raised before any work (the commands show it as one line)."""

from __future__ import annotations

import pytest

from kbert.errors import OptionsError
from kbert.training.pretrain import PretrainOptions, check_options


def test_pretrain_option_checks():
    options = PretrainOptions(train_data="x-*.tfrecord", model_dir="m", vocab="vocab.txt")
    check_options(options, "tensorflow")
    check_options(options, "jax")
    with pytest.raises(OptionsError, match="--strategy mirrored is a TensorFlow strategy"):
        check_options(PretrainOptions(train_data="x", model_dir="m", vocab="v", strategy="mirrored"), "jax")
    with pytest.raises(OptionsError, match="--vocab or --tokenizer-dir is required"):
        check_options(PretrainOptions(train_data="x", model_dir="m"), "tensorflow")
    with pytest.raises(OptionsError, match="--coordinator-address and --num-processes are for --backend jax"):
        check_options(PretrainOptions(train_data="x", model_dir="m", vocab="v", num_processes=2), "tensorflow")


@pytest.mark.parametrize("field, value, flag", [("mask_rate", 0.2, "--mask-rate"),
                                                ("whole_word_masking", True, "--whole-word-masking"),
                                                ("max_predictions", 5, "--max-predictions")])
def test_ltr_refuses_the_masking_options_naming_them(field, value, flag):
    base = dict(train_data="x", model_dir="m", vocab="v")
    check_options(PretrainOptions(**base, objective="ltr", no_nsp=True), "tensorflow")
    with pytest.raises(OptionsError, match=f"--objective ltr masks nothing .*, so {flag} does not apply") as info:
        check_options(PretrainOptions(**base, objective="ltr", **{field: value}), "tensorflow")
    assert info.value.option == field
    check_options(PretrainOptions(**base, **{field: value}), "tensorflow")  # the masked LM takes it
    with pytest.raises(OptionsError, match="--objective 'gpt'; expected one of mlm, ltr"):
        check_options(PretrainOptions(**base, objective="gpt"), "tensorflow")


@pytest.mark.slow
def test_ltr_pretrains_a_causal_model_directory_that_finetunes_left_only(tmp_path):
    """A few steps of objective="ltr" on tiny records: lm_* metrics held out, a model directory whose
    kbert.json says causal (bert_config.json unchanged), whose mlm head is the decoder; loading it
    and fine-tuning a CSV task from it builds causal encoders without any flag; the ONNX export and
    Google's checkpoint format refuse it."""
    import json

    import kbert
    from fixtures.task_runs import TINY_FLAGS
    from fixtures.tiny_records import write_records, write_vocab
    from kbert.commands.finetune import main as finetune_main
    from kbert.convert.names import ConversionError
    from kbert.export.onnx.runtime import OnnxExportError
    from kbert.model_dir import load_encoder, load_heads
    from kbert.tasks import load_task_model
    from kbert.training.pretrain import pretrain

    vocab = write_vocab(tmp_path / "vocab.txt")
    write_records(tmp_path / "train-00000.tfrecord", 40)
    write_records(tmp_path / "eval-00000.tfrecord", 12, seed=1)
    model_dir = tmp_path / "ltr"
    results = pretrain(PretrainOptions(
        train_data=str(tmp_path / "train-*.tfrecord"), eval_data=str(tmp_path / "eval-*.tfrecord"), eval_steps=2,
        model_dir=str(model_dir), config="tiny", vocab=str(vocab), seq_length=32, batch_size=4, steps=3,
        checkpoint_every=3, objective="ltr", seed=0), log=lambda *a, **k: None)
    assert {"eval_lm_loss", "eval_lm_accuracy"} <= set(results) and "eval_nsp_loss" not in results
    assert 0 < results["eval_lm_loss"] < 10
    assert json.loads((model_dir / "kbert.json").read_text())["causal"] is True
    assert "causal" not in (model_dir / "bert_config.json").read_text()
    encoder = load_encoder(model_dir)
    assert encoder.causal and all(b.attention.causal for b in encoder.blocks)
    assert set(load_heads(model_dir)) == {"mlm"}
    assert not load_encoder(model_dir, causal=False).causal

    rows = ["text,label"] + [f"the cat sat {'good' if i % 2 else 'bad'},{'pos' if i % 2 else 'neg'}"
                             for i in range(16)]
    (tmp_path / "train.csv").write_text("\n".join(rows) + "\n")
    tuned = tmp_path / "tuned"
    finetune_main(["--task", "csv", "--train-file", str(tmp_path / "train.csv"), "--eval-file",
                   str(tmp_path / "train.csv"), "--text-columns", "text", "--init", str(model_dir), "--model-dir",
                   str(tuned), *TINY_FLAGS])
    model = load_task_model(tuned)
    assert model.encoder.causal and json.loads((tuned / "kbert.json").read_text())["causal"] is True

    for directory in (model_dir, tuned):
        with pytest.raises(OnnxExportError, match="causal .*encoder, which the ONNX export cannot express"):
            kbert.export_onnx(directory, tmp_path / "onnx")
    with pytest.raises(ConversionError, match="causal .*encoder, which Google's checkpoint format cannot record"):
        kbert.to_google(model_dir, tmp_path / "google" / "bert_model.ckpt")
    assert not (tmp_path / "onnx").exists() and not (tmp_path / "google").exists()
