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
