"""Fuzz target: a model directory's metadata damaged (``kbert.json``, ``bert_config.json``, ``vocab.txt``:
wrong JSON types, deep nesting, keys deleted, lines and bytes mutated, truncation), read as every command
reads it (kbert.model_dir.load_encoder and what it reads first). The oracle
(tests/fixtures/fuzz_harness.py): a config, metadata and, where loaded, an encoder whose weights are the
saved ones; or one ``kbert.Error`` line naming the file."""

import json
import os
import shutil

from hypothesis import strategies as st

from fixtures.file_mutations import (byte_mutations, json_mutations, mutate, mutate_bytes, mutate_json,
                                     mutations)
from fixtures.fuzz_harness import fuzz, read_or_error
from kbert.model_dir import load_encoder
from kbert.model_metadata import CONFIG_FILE, ENCODER_WEIGHTS, METADATA_FILE, VOCAB_FILE, load_config, read_metadata
from kbert.text.registry import read_tokenizer_spec

# A config this size or larger is not built (a damaged hidden_size could ask for gigabytes): its
# refusal by the weights' shapes is what smaller ones already show.
BUILD_LIMIT = 5_000_000


def _parameters(config) -> int:
    h = config.hidden_size
    return h * (config.vocab_size + config.max_position_embeddings) + config.num_hidden_layers * (
        4 * h * h + 2 * h * config.intermediate_size)


def _damage(source, target, value):
    """``target`` holds ``source``'s files, the one ``value`` names damaged; which one, or None."""
    name, (json_ops, line_ops, byte_ops) = value
    for file in (METADATA_FILE, CONFIG_FILE, VOCAB_FILE):
        data = (source / file).read_bytes()
        if file == name:
            if file == VOCAB_FILE:
                data = mutate(data.splitlines(keepends=True), line_ops)
            elif json_ops:
                data = mutate_json(json.loads(data), json_ops)
            data = mutate_bytes(data, byte_ops)
        (target / file).write_bytes(data)
    return target / name


def test_model_dir_metadata(request, tiny_model_dir, tmp_path):
    target = tmp_path / "model"
    target.mkdir()
    os.symlink(tiny_model_dir / ENCODER_WEIGHTS, target / ENCODER_WEIGHTS)
    reference = load_encoder(tiny_model_dir).get_weights()
    built = [0]

    def check(value):
        damaged = _damage(tiny_model_dir, target, value)
        config = read_or_error(lambda: load_config(target), damaged)
        read_or_error(lambda: read_metadata(target), damaged)
        read_or_error(lambda: read_tokenizer_spec(target), damaged)
        if config is not None and _parameters(config) < BUILD_LIMIT and built[0] < max(
                3, request.config.getoption("fuzz_examples") // 20):
            built[0] += 1
            encoder = read_or_error(lambda: load_encoder(target), damaged)
            if encoder is not None:
                assert all((a == b).all() for a, b in zip(encoder.get_weights(), reference))

    strategy = st.tuples(st.sampled_from([METADATA_FILE, CONFIG_FILE, VOCAB_FILE]),
                         st.tuples(st.one_of(st.just([]), json_mutations()), mutations(), byte_mutations()))
    fuzz(request, strategy, check, weight=1)
    print(f"fuzz {request.node.name}: {built[0]} encoders built")
    assert built[0] >= 3  # the weights are read from damaged directories too, not only the metadata
    shutil.rmtree(target)
