"""python -m kbert.bench accelerator: its FLOP count, what a line says about the attention that ran, a
--tiny run on this CPU with TensorFlow unimportable, and the GPU script that runs it (the probe it
runs first: test_cudnn_probe.py; the profile table: test_profile_table.py)."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import require_installed
from kbert import BertConfig
from kbert.bench import accelerator_bench as bench

REPO = pathlib.Path(__file__).resolve().parents[2]
FIELDS = ("case", "system", "batch_size", "seq_per_s", "mfu", "peak_memory_gb", "device", "versions",
          "compile_s", "step_s", "flops_per_seq", "attention", "attention_kernel", "attention_dropout_applied",
          "variant", "stderr_tail")


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


def test_cases_run_the_goal_case_then_base_512_and_squad_first():
    assert list(bench.CASES)[:3] == ["pretrain-large-128", "pretrain-base-512", "squad-base-384"]
    assert {"pretrain-base-128", "pretrain-large-512"} <= set(bench.CASES)


def test_variants_join_and_unknown_ones_are_refused(capsys):
    assert bench.variant_settings("prng-rbg+triton-gemm+spe-1") == {
        "dropout_prng": "rbg", "dropout_bits": 32, "xla_flags": "--xla_gpu_triton_gemm_any=true",
        "steps_per_execution": 1}
    assert bench.variant_settings("prng-threefry-flat-8+route-no-cudnn-command-buffer+remat-dots") == {
        "dropout_prng": "threefry-flat", "dropout_bits": 8, "cudnn_setting": "no-cudnn-command-buffer", "remat": "dots"}
    assert bench.variant_settings("route-xla-default") == {"cudnn_setting": None}
    assert bench.variant_settings("default") == {}
    with pytest.raises(SystemExit):
        bench.main(["--variant", "default,prng-mt19937"])
    assert "unknown variant 'prng-mt19937'" in capsys.readouterr().err


def test_variant_names_cover_kbert_dropout_bits_and_xla_settings():
    from kbert import compat
    from kbert.layers import accel

    # The bench names them without importing Keras (its parent process must not load TensorFlow).
    assert (bench.DROPOUT_PRNGS, bench.DROPOUT_BITS) == (accel.DROPOUT_PRNGS, accel.DROPOUT_BITS)
    assert bench.XLA_STEP_SETTINGS == tuple(compat.XLA_STEP_SETTINGS)
    prng = {bench.variant_settings(n)["dropout_prng"] + f"/{bench.variant_settings(n)['dropout_bits']}"
            for n in bench.VARIANTS if n.startswith("prng-")}
    assert prng == {f"{i}/{b}" for i in accel.DROPOUT_PRNGS for b in accel.DROPOUT_BITS} - {"threefry/32"}
    assert {bench.variant_settings(n)["remat"] for n in bench.VARIANTS if n.startswith("remat-")} == \
        set(accel.REMAT_POLICIES) - {"none"}


def test_step_hlo_counts_read_cudnn_attention_calls_from_the_dump(tmp_path):
    calls = ['%a = custom-call(%q), custom_call_target="__cudnn$fmhaSoftmaxDropout"',
             '%b = custom-call(%q), custom_call_target="__cudnn$fmhaSoftmaxDropout"',
             '%c = custom-call(%g), custom_call_target="__cudnn$fmhaSoftmaxDropoutBackward"',
             '%d = custom-call(%x), custom_call_target="__cublas$gemm"']
    (tmp_path / "module_0001.jit_train_step.after_optimizations.txt").write_text("\n".join(calls))
    (tmp_path / "module_0001.jit_train_step.before_optimizations.txt").write_text("nothing")
    counts = bench.step_hlo_counts(tmp_path)
    assert (counts["fmha"], counts["fmha_forward"], counts["fmha_dropout"]) == (3, 2, 2)
    assert counts["command_buffer"] is None  # no .debug_options beside it: XLA's defaults
    # The step's XLA setting, from the options XLA dumps beside its HLO (those not at their default).
    (tmp_path / "module_0001.jit_train_step.debug_options").write_text(
        'xla_gpu_enable_command_buffer: FUSION\nxla_gpu_enable_command_buffer: CUBLAS\nxla_dump_to: "/tmp/x"\n')
    assert bench.step_hlo_counts(tmp_path)["command_buffer"] == ["CUBLAS", "FUSION"]
    spec = {"config": {"attention_probs_dropout_prob": 0.1}}
    assert bench._dropout_applied(spec, counts, {})
    (tmp_path / "module_0001.jit_train_step.after_optimizations.txt").write_text(
        'custom_call_target="__cudnn$fmhaSoftmax"\ncustom_call_target="__cudnn$fmhaSoftmaxBackward"')
    assert not bench._dropout_applied(spec, bench.step_hlo_counts(tmp_path), {})
    assert bench.step_hlo_counts(tmp_path / "empty") is None
    # Without cuDNN: the traced training calls say; every one must have dropped out.
    assert bench._dropout_applied(spec, None, {"plain+dropout": 2})
    assert not bench._dropout_applied(spec, None, {"plain+dropout": 1, "xla": 1})


def test_a_line_that_asked_for_cudnn_and_compiled_without_it_is_an_error():
    said = {"k": "attention auto: plain attention, not cuDNN flash attention: the attention runs in float32"}
    error = bench.missing_cudnn("auto", True, "plain", "NVIDIA H100", said)
    assert "has no __cudnn$fmha custom call" in error and "float32" in error
    assert bench.missing_cudnn("fused", True, "xla", "NVIDIA H100", {}) is not None
    assert bench.missing_cudnn("auto", True, "cudnn", "NVIDIA H100", {}) is None
    assert bench.missing_cudnn("plain", True, "plain", "NVIDIA H100", {}) is None
    assert bench.missing_cudnn("auto", False, "plain", "cpu", {}) is None
    # auto keeping off the cuDNN gradient that aborts (no setting known to run it) is what users'
    # commands run: a number; a route that runs but was not taken (a step traced outside kbert's
    # models) is an error, as is fused's refusal.
    from kbert import compat

    refused = {**compat.cudnn_training_route("0.11.2").as_dict(), "kernel": "plain"}
    assert bench.missing_cudnn("auto", True, "plain", "NVIDIA H200", {}, refused) is None
    assert bench.missing_cudnn("fused", True, "plain", "NVIDIA H200", {}, refused) is not None
    not_taken = {**refused, "runs": True, "setting": "no-cudnn-command-buffer", "reason": "traced outside one"}
    assert bench.missing_cudnn("auto", True, "plain", "NVIDIA H200", {}, not_taken) is not None
    assert bench.missing_cudnn("auto", True, "plain", "NVIDIA H200", said, None) is not None


def _tiny_run(tmp_path, cases, systems, extra=()):
    # A 'tensorflow' package that cannot be imported, first on the path of this run and its children.
    shim = tmp_path / "no_tf" / "tensorflow"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError('TensorFlow is not allowed on the accelerator path')\n")
    out = tmp_path / "acc.jsonl"
    # USE_TF=0: transformers would otherwise find TensorFlow's metadata and import the shim.
    env = dict(os.environ, JAX_PLATFORMS="cpu", USE_TF="0",
               PYTHONPATH=os.pathsep.join([str(shim.parent), str(REPO), os.environ.get("PYTHONPATH", "")]))
    argv = [sys.executable, "-m", "kbert.bench", "accelerator", "--tiny", "--out", str(out),
            "--systems", ",".join(systems), *extra] + [a for c in cases for a in ("--case", c)]
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


def _check(lines, cases, systems, variants=("default",)):
    assert [(ln["case"], ln["system"], ln["variant"]) for ln in lines] == [
        (c, s, v) for c in cases for s in systems for v in (variants if s == "kbert" else ["default"])]
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
    # On a CPU "auto" is the plain attention, with its dropout; the HLO has no cuDNN call.
    default = [ln for ln in kbert if ln["variant"] == "default"]
    assert all(ln["attention"] == "auto" and ln["attention_kernel"] == "plain" and ln["attention_dropout_applied"]
               and ln["cudnn_fmha_calls"] == 0 for ln in default)
    assert all(ln["attention_kernel"] == "sdpa" and ln["attention_dropout_applied"]
               for ln in lines if ln["system"] == "transformers")


@pytest.mark.slow
def test_tiny_pretraining_runs_without_tensorflow(tmp_path):
    systems = _systems()
    # The departure alone: the default variant's checks (_check) run on the SQuAD case below, and the
    # docs command runs this case's default.
    variants = ["fused-attention+no-attention-dropout+prng-threefry-8+remat-dots+full-rows"]
    lines = _tiny_run(tmp_path, ["pretrain-base-128"], systems,
                      ["--variant", ",".join(variants), "--profile-dir", str(tmp_path / "profile")])
    _check(lines, ["pretrain-base-128"], systems, variants)
    # The explicit departure is recorded as such: XLA's lengths kernel, no attention dropout.
    fused = next(ln for ln in lines if ln["variant"] == variants[0])
    assert fused["attention"] == "fused" and fused["attention_kernel"] == "xla"
    assert fused["attention_dropout"] == 0.0 and not fused["attention_dropout_applied"]
    # 8 bits per element against a threshold: 0.1 applied as 26/256; blocks rematerialized; no mask
    assert (fused["dropout_prng"], fused["dropout_bits"], fused["remat"]) == ("threefry", 8, "dots")
    assert fused["hidden_dropout_applied"] == pytest.approx(26 / 256) and fused["full_rows"]
    assert fused["attention_calls_traced"] == {"xla": 2}  # full rows: XLA's kernel without lengths
    for ln in lines:  # the peak each system reports, and how (the same quantity on both sides)
        assert ln["memory_measure"] == bench.MEMORY_MEASURE[ln["system"]]
    assert all(ln["xla_python_client_preallocate"] == "false" for ln in lines if ln["system"] == "kbert")
    table = pathlib.Path(fused["profile_table"]).read_text()
    assert table.startswith("### pretrain-base-128 kbert " + variants[0]) and "no device events" in table


@pytest.mark.slow
def test_tiny_squad_runs_without_tensorflow(tmp_path):
    systems = _systems()
    _check(_tiny_run(tmp_path, ["squad-base-384"], systems), ["squad-base-384"], systems)


def test_fatal_lines_say_why_a_child_died_not_its_stack():
    abort = ("I1129 22:24:08.1 993 gpu.cc:1] starting\n"
             "F1129 22:24:09.476736     993 cuda_dnn.cc:6951] Check failed: local_device_ordinal.has_value()\n"
             "*** Check failure stack trace: ***\n    @     0x7f5f96d5788d  xla::RunGpuAsync()\n"
             "    @           0x657a05  _start\n")
    assert bench.fatal_lines(abort) == [
        "F1129 22:24:09.476736     993 cuda_dnn.cc:6951] Check failed: local_device_ordinal.has_value()"]
    raised = ('Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n'
              "NotImplementedError: Unsupported sequence length Q 21, KV 128.\n")
    assert bench.fatal_lines(raised) == ["NotImplementedError: Unsupported sequence length Q 21, KV 128."]
    assert bench.fatal_lines("    @     0x7f5f96d5788d  xla::RunGpuAsync()\n") == []


FAKE_PYTHON = r"""#!/usr/bin/env bash
# python3 for run_h100.sh's test: logs each command; the probe writes $FAKE_ROUTE to its --route-file.
echo "$*" >> "$FAKE_LOG"
if [ "${1:-}" = "-" ]; then cat > /dev/null; fi
if [ "${2:-}" = "kbert.bench.cudnn_probe" ]; then
  while [ $# -gt 0 ]; do if [ "$1" = "--route-file" ]; then printf %s "$FAKE_ROUTE" > "$2"; fi; shift; done
fi
exit 0
"""


def _run_script(tmp_path, route, *args):
    """docs/bench/accelerator/run_h100.sh with a python3 that only logs: the commands it ran."""
    fake = tmp_path / "bin" / "python3"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    log = tmp_path / f"log-{len(list(tmp_path.glob('log-*')))}.txt"
    env = dict(os.environ, PATH=f"{fake.parent}{os.pathsep}{os.environ['PATH']}", FAKE_LOG=str(log),
               FAKE_ROUTE=route, OUT=str(tmp_path / "out"))
    done = subprocess.run(["bash", str(REPO / "docs/bench/accelerator/run_h100.sh"), *args], env=env,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    commands = log.read_text().splitlines()
    probe = [c for c in commands if c.startswith("-m kbert.bench.cudnn_probe")]
    benches = [c.split() for c in commands if c.startswith("-m kbert.bench accelerator")]
    return probe, benches


def _arg(command, flag):
    return [command[i + 1] for i, a in enumerate(command) if a == flag]


def test_gpu_script_runs_the_probe_then_the_goal_cases_through_the_route_it_found(tmp_path):
    probe, benches = _run_script(tmp_path, "route-no-cudnn-command-buffer")
    # every form, the default settings, within a deadline
    assert len(probe) == 1 and "--route-file" in probe[0] and "--only" not in probe[0] and "--deadline" in probe[0]
    route = ["route-no-cudnn-command-buffer"]
    assert [(_arg(b, "--case"), _arg(b, "--variant")) for b in benches] == [
        (["pretrain-large-128"], route), (["pretrain-base-512"], route), (["squad-base-384"], route)]
    for b in benches:  # kbert and transformers, each line within what is left of the deadline
        assert "--systems" not in b and "--tiny" not in b and 0 < float(_arg(b, "--deadline")[0]) <= 390
    # No route: pre-training with full rows (cuDNN without a mask), SQuAD as auto runs it.
    _, benches = _run_script(tmp_path, "")
    assert [_arg(b, "--variant") for b in benches] == [["full-rows"], ["full-rows"], ["default"]]


def test_gpu_script_levers_and_dry_run(tmp_path):
    probe, benches = _run_script(tmp_path, "route-no-cudnn-command-buffer", "levers")
    assert "--only" in probe[0] and "jit:no-cudnn-command-buffer" in probe[0]
    (bench_call,) = benches
    assert _arg(bench_call, "--systems") == ["kbert"] and _arg(bench_call, "--case") == ["pretrain-large-128"]
    assert "--profile-dir" not in bench_call  # more lever lines fit the deadline
    variants = _arg(bench_call, "--variant")[0].split(",")
    assert variants[0] == "default+route-no-cudnn-command-buffer" and len(variants) > 5
    for name in variants:  # every lever is a variant the bench knows, on top of the route
        assert name.endswith("+route-no-cudnn-command-buffer") and bench.variant_settings(name)
    probe, benches = _run_script(tmp_path, "", "--dry-run")
    assert "--only" in probe[0] and all("--tiny" in b for b in benches)
    assert [(_arg(b, "--case"), _arg(b, "--variant")) for b in benches] == [(["pretrain-large-128"], ["full-rows"])]


def test_kbert_lines_train_models_that_compile_their_step_with_the_route():
    # Through a route's XLA setting only a step compiled by CompiledStepSettings takes cuDNN with
    # dropout and padding: the bench's models must be such models, as the commands' are.
    from kbert.layers import accel

    for name in ("pretrain-base-128", "squad-base-384"):
        case = bench.tiny_case(bench.CASES[name])
        spec = dict(task=case.task, seq_length=case.seq_length, predictions=case.predictions, batch_size=4,
                    precision="float32", steps_per_execution=1, attention="auto")
        model = bench._kbert_model(spec, bench.case_config(case, True, 0.1))
        assert isinstance(model, accel.CompiledStepSettings), name
