"""python -m kbert.bench accelerator: its FLOP count, and a --tiny run on this CPU with TensorFlow unimportable."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import require_installed
from kbert import BertConfig
from kbert.bench import accelerator_bench as bench

REPO = pathlib.Path(__file__).resolve().parents[1]
FIELDS = ("case", "system", "batch_size", "seq_per_s", "mfu", "peak_memory_gb", "device", "versions",
          "compile_s", "step_s", "flops_per_seq", "attention_impl", "attention_dropout_applied")


def test_flops_formula_matches_a_hand_count():
    config = BertConfig.preset("tiny", vocab_size=1000)  # L2, H128, I512
    # One block: q, k, v, o (128x128 + 128 each), FFN 128x512 + 512 and 512x128 + 128, two LayerNorms.
    block = 4 * (16384 + 128) + (65536 + 512) + (65536 + 128) + 4 * 128
    assert bench.block_parameters(config) == 2 * block == 396_544
    seq, preds = 32, 5
    weights = 6 * 396_544 * 32                              # 6·N·T
    attention = 12 * 2 * 128 * 32 * 32                      # 12·L·H·T²
    mlm = 6 * 5 * ((16384 + 128) + 256 + (128_000 + 1000))  # transform, LayerNorm, tied decoder + bias at P
    cls = 6 * ((16384 + 128) + (256 + 2))                   # pooler and NSP at [CLS]
    assert bench.flops_per_sequence(config, "pretrain", seq, preds) == weights + attention + mlm + cls
    assert bench.flops_per_sequence(config, "squad", 64) == 6 * 396_544 * 64 + 12 * 2 * 128 * 64 * 64 + 6 * 258 * 64
    with pytest.raises(ValueError, match="unknown task 'ner'"):
        bench.flops_per_sequence(config, "ner", 32)


def test_block_parameters_are_the_encoder_blocks_weights():
    from kbert import BertEncoder

    config = BertConfig.preset("tiny", vocab_size=300, max_position_embeddings=16)
    encoder = BertEncoder(config)
    counted = sum(int(w.numpy().size) for block in encoder.blocks for w in block.weights)
    assert bench.block_parameters(config) == counted


def test_synthetic_pretraining_batch_masks_15_percent():
    x, y = bench.synthetic_batch("pretrain", 1000, 3, 128, 20)
    assert x["masked_lm_positions"].shape == (3, 20)
    assert y["masked_lm_weights"].sum(1).tolist() == [19.0, 19.0, 19.0]  # round(0.15 * 128)
    assert all(len(set(row)) == 20 and 0 < row.min() for row in x["masked_lm_positions"])


def test_bad_arguments_are_refused(capsys):
    with pytest.raises(SystemExit) as e:
        bench.main(["--batch-size", "pretrain-base-128=0"])
    assert e.value.code == 2 and "--batch-size 'pretrain-base-128=0'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.main(["--systems", "keras-hub"])


def _tiny_run(tmp_path, cases, systems):
    # A 'tensorflow' package that cannot be imported, first on the path of this run and its children.
    shim = tmp_path / "no_tf" / "tensorflow"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError('TensorFlow is not allowed on the accelerator path')\n")
    out = tmp_path / "acc.jsonl"
    # USE_TF=0: transformers would otherwise find TensorFlow's metadata and import the shim.
    env = dict(os.environ, JAX_PLATFORMS="cpu", USE_TF="0",
               PYTHONPATH=os.pathsep.join([str(shim.parent), str(REPO), os.environ.get("PYTHONPATH", "")]))
    argv = [sys.executable, "-m", "kbert.bench", "accelerator", "--tiny", "--out", str(out),
            "--systems", ",".join(systems)] + [a for c in cases for a in ("--case", c)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900, cwd=tmp_path)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    printed = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert printed == lines
    assert done.returncode == 0, [ln.get("error") for ln in lines]
    return lines


def _systems():
    """kbert and its transformers peer: a checkout without torch/transformers skips (under CI fails)
    rather than quietly checking kbert alone."""
    require_installed("torch", "transformers", reason="the transformers peer of kbert bench accelerator")
    return ["kbert", "transformers"]


def _check(lines, cases, systems):
    assert [(ln["case"], ln["system"]) for ln in lines] == [(c, s) for c in cases for s in systems]
    for ln in lines:
        assert all(field in ln for field in FIELDS), sorted(set(FIELDS) - set(ln))
        assert ln["tiny"] and ln["batch_size"] == 4 and ln["seq_per_s"] > 0 and ln["device"] == "cpu"
        assert ln["mfu"] == pytest.approx(ln["flops_per_seq"] * ln["seq_per_s"] / 989e12)
        assert ln["seq_per_s"] == pytest.approx(4 / ln["step_s"])
        config = BertConfig.preset("tiny", vocab_size=1000)
        assert ln["flops_per_seq"] == bench.flops_per_sequence(
            config, ln["case"].split("-")[0], ln["seq_length"], ln["predictions"] or 0)
    kbert = [ln for ln in lines if ln["system"] == "kbert"]
    assert all(ln["tensorflow_loaded"] is False and ln["versions"]["jax"] for ln in kbert)
    assert all(ln["attention_impl"] == "fused" and not ln["attention_dropout_applied"] for ln in kbert)


@pytest.mark.slow
def test_tiny_pretraining_runs_without_tensorflow(tmp_path):
    systems = _systems()
    _check(_tiny_run(tmp_path, ["pretrain-base-128"], systems), ["pretrain-base-128"], systems)


@pytest.mark.slow
def test_tiny_squad_runs_without_tensorflow(tmp_path):
    systems = _systems()
    _check(_tiny_run(tmp_path, ["squad-base-384"], systems), ["squad-base-384"], systems)
