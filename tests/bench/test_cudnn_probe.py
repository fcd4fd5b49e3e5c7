"""python -m kbert.bench.cudnn_probe: which forms of cuDNN's flash attention run under which XLA
setting. On this CPU: its settings as XLA options, the line it makes of a child's output (an abort, a
timeout), the order it runs (form, setting) pairs in, its refusals, the summary that names kbert's
route, and its own references and checks against a stand-in kernel. TensorFlow is never imported:
the probe runs on the GPU machine's JAX."""

import json
import os
import pathlib
import subprocess
import sys
import types

import pytest

from conftest import require_installed
from kbert import compat
from kbert.bench import cudnn_probe

REPO = pathlib.Path(__file__).resolve().parents[2]
TRAINING = [f.name for f in cudnn_probe.FORMS if f.training]


def test_settings_are_kberts_xla_step_settings_as_options_and_flags():
    assert cudnn_probe.SETTINGS == ("default", *(f"{how}:{name}" for name in compat.XLA_STEP_SETTINGS
                                                 for how in ("env", "jit")))
    assert set(cudnn_probe.DEFAULT_SETTINGS) <= set(cudnn_probe.SETTINGS)
    assert cudnn_probe.setting_options("default") == {}
    for name, options in compat.XLA_STEP_SETTINGS.items():
        assert cudnn_probe.setting_options(f"env:{name}") == cudnn_probe.setting_options(f"jit:{name}") == options
    assert cudnn_probe.xla_flags({"xla_gpu_enable_command_buffer": "FUSION,CUBLAS", "xla_b": 1}) == \
        "--xla_gpu_enable_command_buffer=FUSION,CUBLAS --xla_b=1"
    assert cudnn_probe.xla_flags(cudnn_probe.setting_options("env:no-command-buffer")) == \
        "--xla_gpu_enable_command_buffer="


def test_forms_are_named_once_and_the_training_ones_drop_out():
    names = [f.name for f in cudnn_probe.FORMS]
    assert len(names) == len(set(names))
    assert {"drop-grad", "drop-checks", "q21-fallback"} <= set(TRAINING)
    assert all(f.dropout > 0 and f.grad for f in cudnn_probe.FORMS if f.training)


def _completed(stdout="", stderr="", code=0):
    return types.SimpleNamespace(stdout=stdout, stderr=stderr, returncode=code)


def test_a_child_line_is_its_last_json_line_or_why_it_died(monkeypatch):
    calls = []

    def fake_run(argv, env, capture_output, text, timeout):
        calls.append((argv, env, timeout))
        return answer

    monkeypatch.setattr(cudnn_probe.subprocess, "run", fake_run)
    monkeypatch.setenv("XLA_FLAGS", "--xla_dump_to=/tmp/x")
    form = next(f for f in cudnn_probe.FORMS if f.name == "drop-grad")
    answer = _completed('I log\n{"ok": false}\n{"ok": true, "grad_finite": true, "jax": "0.1"}\n')
    line = cudnn_probe.run_child(form, "env:no-command-buffer", timeout=7)
    assert {k: v for k, v in line.items() if k != "wall_s"} == {
        "form": "drop-grad", "setting": "env:no-command-buffer", "what": form.what, "ok": True, "grad_finite": True,
        "jax": "0.1"}
    argv, env, timeout = calls[-1]
    assert argv == [sys.executable, "-m", "kbert.bench.cudnn_probe", "--child", "drop-grad",
                    "--settings", "env:no-command-buffer"] and timeout == 7
    # an env: setting is the whole child's XLA_FLAGS, after those it had; the children share the GPU
    assert env["XLA_FLAGS"] == "--xla_dump_to=/tmp/x --xla_gpu_enable_command_buffer="
    assert (env["KERAS_BACKEND"], env["XLA_PYTHON_CLIENT_PREALLOCATE"], env["TF_CPP_MIN_LOG_LEVEL"]) == (
        "jax", "false", "0")
    cudnn_probe.run_child(form, "jit:no-command-buffer", timeout=7)  # jit: compiles the step with it, not the process
    assert calls[-1][1]["XLA_FLAGS"] == "--xla_dump_to=/tmp/x"
    # an abort: the fatal lines, not the stack after them
    answer = _completed(stderr="I0101 starting\nF0101 12:00:00.1 9 cuda_dnn.cc:1] Check failed: x\n"
                               "*** Check failure stack trace: ***\n    @ 0x1 xla::Run()\n", code=-6)
    line = cudnn_probe.run_child(form, "default", timeout=7)
    assert line["ok"] is False and line["error"] == "exit code -6: F0101 12:00:00.1 9 cuda_dnn.cc:1] Check failed: x"
    # nothing it recognises: the last three lines of its log; exit 0 without a line is no pass either
    answer = _completed(stderr="a\nb\nc\nd\n", code=0)
    assert cudnn_probe.run_child(form, "default", timeout=7)["error"] == "exit code 0: b | c | d"

    def too_long(argv, **kwargs):
        raise subprocess.TimeoutExpired(argv, kwargs["timeout"])

    monkeypatch.setattr(cudnn_probe.subprocess, "run", too_long)
    assert cudnn_probe.run_child(form, "default", timeout=7.4) == {
        "form": "drop-grad", "setting": "default", "what": form.what, "ok": False, "error": "timed out after 7 s"}


def test_unknown_forms_and_settings_are_refused_naming_them(capsys):
    for argv, said in ((["--only", "fwd,no-such-form"], "unknown form no-such-form; known: public-fwd, "),
                       (["--settings", "default,env:no-such-setting"],
                        f"unknown setting env:no-such-setting; known: {', '.join(cudnn_probe.SETTINGS)}"),
                       (["--settings", ","], "unknown setting (none given); known: ")):
        with pytest.raises(SystemExit) as e:
            cudnn_probe.main(argv)
        assert e.value.code == 2 and said in capsys.readouterr().err


def _fake_children(monkeypatch, failing=(), seconds=0.0):
    """run_child replaced: a line per (form, setting), ok unless (form, setting) is in ``failing``;
    each call advances the probe's clock by ``seconds``. Returns the calls made."""
    calls, now = [], [0.0]

    def run_child(form, setting, timeout):
        calls.append((form.name, setting, timeout))
        now[0] += seconds
        ok = (form.name, setting) not in failing
        return {"form": form.name, "setting": setting, "what": form.what, "jax": "0.11.2", "ok": ok,
                **({"grad_rel_err": 0.01, "grad_finite": True} if ok else {"error": "exit code -6: F0101 aborted"})}

    monkeypatch.setattr(cudnn_probe, "run_child", run_child)
    monkeypatch.setattr(cudnn_probe.time, "monotonic", lambda: now[0])
    return calls


def test_main_runs_the_training_forms_under_every_setting_then_the_rest_and_names_the_route(
        monkeypatch, capsys, tmp_path):
    calls = _fake_children(monkeypatch, failing={("drop-grad", "default")})
    out, route = tmp_path / "probe.jsonl", tmp_path / "route.txt"
    out.write_text('{"earlier": 1}\n')
    assert cudnn_probe.main(["--only", "fwd,drop-grad,full-drop-grad,remat-drop-checks", "--jobs", "1",
                             "--settings", "default,jit:no-cudnn-command-buffer", "--out", str(out),
                             "--route-file", str(route)]) == 0
    # the forms that decide (and remat-drop-checks, which runs under every setting) setting by setting,
    # then the others under default alone
    assert [(f, s) for f, s, _ in calls] == [
        ("drop-grad", "default"), ("full-drop-grad", "default"), ("remat-drop-checks", "default"),
        ("drop-grad", "jit:no-cudnn-command-buffer"), ("full-drop-grad", "jit:no-cudnn-command-buffer"),
        ("remat-drop-checks", "jit:no-cudnn-command-buffer"), ("fwd", "default")]
    assert {t for _, _, t in calls} == {120}
    printed = capsys.readouterr().out.splitlines()
    lines = [json.loads(ln) for ln in out.read_text().splitlines()]
    assert lines[0] == {"earlier": 1} and lines[1:] == [json.loads(ln) for ln in printed[:8]]  # appended
    # only two training forms were asked for: no setting covers them all, so no route
    assert lines[-1] == {"summary": True, "passing_settings": [], "route": None, "variant": None, "compat_line": None}
    assert route.read_text() == ""
    table = printed[8:]
    assert table[0] == f"{'drop-grad':<17} {'default':<28} NO  exit code -6: F0101 aborted"
    assert table[1] == f"{'full-drop-grad':<17} {'default':<28} ok  grad_rel_err 0.01, grad_finite True"
    assert table[-1] == "settings under which kbert's training call ran and passed: none; no route for kbert"
    # every form: a setting under which every training form passed is kbert's route
    calls = _fake_children(monkeypatch, failing={("drop-checks", "default")})
    assert cudnn_probe.main(["--jobs", "2", "--route-file", str(route)]) == 0
    assert len(calls) == len(cudnn_probe.FORMS) + (len(cudnn_probe.DEFAULT_SETTINGS) - 1) * sum(
        f.training or f.each_setting for f in cudnn_probe.FORMS)
    last = capsys.readouterr().out.splitlines()[-1]
    passing = ", ".join(s for s in cudnn_probe.DEFAULT_SETTINGS if s != "default")
    assert last == (f"settings under which kbert's training call ran and passed: {passing}; kbert's route: "
                    "jit:no-cudnn-command-buffer (kbert/compat.py: CUDNN_DROPOUT_WITH_PADDING_RUNS = "
                    "{'no-cudnn-command-buffer': (0, 11, 2)}; bench variant route-no-cudnn-command-buffer)")
    assert route.read_text() == "route-no-cudnn-command-buffer"


def test_main_skips_what_the_deadline_leaves_no_time_for(monkeypatch, capsys):
    # 30 s per child against a deadline of 93 s: children get what is left (at most --timeout), and
    # once under 5 s is left (3 s at the fourth) the rest are lines that say they were skipped
    calls = _fake_children(monkeypatch, seconds=30.0)
    assert cudnn_probe.main(["--only", "fwd,grad,drop-fwd,q21-grad,public-fwd", "--jobs", "1", "--deadline", "93",
                             "--timeout", "80"]) == 0
    assert [t for _, _, t in calls] == [80, 63, 33]
    lines = [json.loads(ln) for ln in capsys.readouterr().out.splitlines() if ln.startswith("{")]
    assert lines[3:5] == [{"form": name, "setting": "default", "ok": False, "error": "skipped: 93 s deadline reached"}
                          for name in ("q21-grad", "public-fwd")]


def test_summary_names_kbert_route_and_the_line_of_compat_that_takes_it():
    from kbert.bench import accelerator_bench

    def lines(setting, failing=()):
        return [{"form": name, "setting": setting, "jax": "0.11.2", "ok": name not in failing} for name in TRAINING]

    probe = (lines("default", failing=["drop-grad"]) + lines("env:no-cudnn-command-buffer")
             + lines("jit:no-cudnn-command-buffer") + lines("jit:no-command-buffer"))
    result = cudnn_probe.summary(probe)
    assert result["passing_settings"] == ["env:no-cudnn-command-buffer", "jit:no-cudnn-command-buffer",
                                          "jit:no-command-buffer"]
    assert result["route"] == "jit:no-cudnn-command-buffer" and result["variant"] == "route-no-cudnn-command-buffer"
    assert result["compat_line"] == "CUDNN_DROPOUT_WITH_PADDING_RUNS = {'no-cudnn-command-buffer': (0, 11, 2)}"
    assert "route-no-cudnn-command-buffer" in accelerator_bench.VARIANTS
    # A setting for the whole process only (env:) cannot be kbert's; a form missing is no pass.
    only_env = lines("env:no-cudnn-command-buffer") + lines("jit:no-command-buffer", failing=["drop-checks"])
    assert cudnn_probe.summary(only_env)["route"] is None
    assert cudnn_probe.summary(lines("jit:no-command-buffer")[1:])["route"] is None
    assert cudnn_probe.summary(lines("default"))["compat_line"] == \
        "CUDNN_DROPOUT_WITH_PADDING_RUNS = {None: (0, 11, 2)}"


@pytest.mark.slow
def test_each_form_runs_in_a_child_that_says_what_this_machine_lacks(tmp_path, monkeypatch):
    require_installed("jax")
    # A 'tensorflow' that cannot be imported, first on the children's path: the probe runs without it.
    shim = tmp_path / "no_tf" / "tensorflow"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError('TensorFlow is not allowed on the accelerator path')\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(shim.parent), str(REPO), os.environ.get("PYTHONPATH")) if p))
    out, route = tmp_path / "probe.jsonl", tmp_path / "route.txt"
    assert cudnn_probe.main(["--only", "fwd,drop-grad", "--settings", "default,jit:no-cudnn-command-buffer",
                             "--out", str(out), "--route-file", str(route), "--jobs", "2"]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    # the training form (drop-grad) under every setting first, then the others under default
    assert [(line.get("form"), line.get("setting")) for line in lines[:-1]] == [
        ("drop-grad", "default"), ("drop-grad", "jit:no-cudnn-command-buffer"), ("fwd", "default")]
    for line in lines[:-1]:  # this machine computes on its CPU: every form says so, none crashes
        assert line["ok"] is False and line["error"] == "JAX computes on cpu, not an NVIDIA GPU", line
        assert line["platform"] == "cpu" and line["jax"]
    assert lines[-1]["summary"] and lines[-1]["route"] is None and route.read_text() == ""


PROBE_CHILD = """
import json, jax, jax.numpy as jnp
from kbert.bench import cudnn_probe
def xla(q, k, v, q_seqlen, kv_seqlen, *, scale, dropout_rate, seed, bias=None):
    return jax.nn.dot_product_attention(q, k, v, bias=bias, scale=scale, key_value_seq_lengths=kv_seqlen,
                                        implementation="xla")
def dropping(sixteenths=False, one_seed=False, leak=False, grad_without_dropout=False):
    # XLA's attention with dropout on the probabilities (a mask per seed, the same at every
    # execution), refusing 21 queries as cuDNN does; the arguments break it one way or another.
    def attend(q, k, v, q_seqlen, kv_seqlen, *, scale, dropout_rate, seed, bias=None):
        if q.shape[1] != k.shape[1]:
            raise NotImplementedError(f"stand-in: Q {q.shape[1]}, KV {k.shape[1]}")
        rate = round(dropout_rate * 16) / 16 if sixteenths else dropout_rate
        def f(rate):
            s = jnp.einsum("bqhd,bkhd->bhqk", q.astype(jnp.float32), k.astype(jnp.float32)) * scale
            if kv_seqlen is not None:
                s = jnp.where((jnp.arange(k.shape[1])[None, :] < kv_seqlen[:, None])[:, None, None, :], s, -1e30)
            p = jax.nn.softmax(s, -1)
            if rate:
                keep = jax.random.bernoulli(jax.random.key(0 if one_seed else seed), 1 - rate, p.shape)
                p = jnp.where(keep, p / (1 - rate), 0.0)
            return jnp.einsum("bhqk,bkhd->bqhd", p, v.astype(jnp.float32))
        out = f(rate)
        if grad_without_dropout:  # the forward's mask, the gradient of attention without dropout
            plain = f(0.0)
            out = jax.lax.stop_gradient(out) + plain - jax.lax.stop_gradient(plain)
        if leak:  # a gradient reaching the padded keys (as garbage left in dK would)
            extra = jnp.mean(k.astype(jnp.float32)) * 1e-3
            out = out + extra - jax.lax.stop_gradient(extra)
        return out.astype(q.dtype)
    return attend
forms = {f.name: f for f in cudnn_probe.FORMS}
lines = {n: cudnn_probe.run_form(forms[n], stand_in=xla) for n in ("fwd", "grad", "bias-drop-grad")}
checks = forms["drop-checks"]
lines["checks"] = cudnn_probe.run_form(checks, stand_in=dropping())
lines["checks-broken"] = cudnn_probe.run_form(checks, stand_in=dropping(sixteenths=True, one_seed=True, leak=True))
lines["checks-grad"] = cudnn_probe.run_form(checks, stand_in=dropping(grad_without_dropout=True))
lines["remat-checks"] = cudnn_probe.run_form(forms["remat-drop-checks"], stand_in=dropping())
lines["q21-fallback"] = cudnn_probe.run_form(forms["q21-fallback"], stand_in=dropping(),
                                             setting="jit:no-cudnn-command-buffer")
print(json.dumps(lines))
"""


@pytest.mark.slow
def test_references_and_checks_hold_against_a_stand_in_kernel():
    # With XLA's attention standing in for cuDNN's, the probe's float32 reference (padded keys
    # masked) must agree within bf16 rounding, for the lengths and for the bias form; with a
    # stand-in that drops out, drop-checks must pass what it does right and name what it breaks.
    require_installed("jax")
    env = dict(os.environ, KERAS_BACKEND="jax", JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", PROBE_CHILD], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = json.loads(done.stdout.strip().splitlines()[-1])
    assert lines["fwd"]["max_abs_diff"] < 0.02 and lines["grad"]["max_abs_diff"] < 0.02, lines
    assert lines["grad"]["grad_finite"] and lines["bias-drop-grad"]["grad_finite"], lines
    assert lines["grad"]["grad_rel_err"] < 0.02 and lines["grad"]["ok"], lines["grad"]  # dQ, dK, dV at rate 0
    # the stand-in has no dropout: the bias form's output is the reference's
    assert abs(lines["bias-drop-grad"]["mean_ratio"] - 1.0) < 0.01, lines
    good = lines["checks"]
    # Right: gradients under the mask read from the output, the rate, a mask per seed, padded keys
    # untouched. Its mask is the same at every execution (XLA's kernel advances an offset): named.
    assert good["failed_checks"] == ["masks per step"] and not good["ok"], good
    assert good["grad_rel_err"] < 0.02 and abs(good["dropped_fraction"] - 0.1) < 0.005, good
    assert good["padded_grad_max"] == 0.0 and good["step_mask_agreement"] == 1.0, good
    broken = lines["checks-broken"]
    assert broken["failed_checks"] == ["dropped fraction", "masks per layer", "masks per step", "padded dK/dV"], broken
    assert broken["nearest_sixteenth"] == 0.125 and broken["layer_mask_agreement"] == 1.0, broken
    assert lines["checks-grad"]["failed_checks"] == ["gradients", "masks per step"], lines["checks-grad"]
    # recomputed under jax.checkpoint, the stand-in's masks are the forward's: the same checks pass
    assert lines["remat-checks"]["failed_checks"] == ["masks per step"], lines["remat-checks"]
    # kbert's layers: the full one took the (stand-in) kernel with dropout, the 21-query one fell back.
    q21 = lines["q21-fallback"]
    assert q21["ok"] and q21["traced_calls"] == {"train:cudnn+dropout": 1, "train:plain+dropout": 1}, q21
    assert q21["route"]["setting"] == "no-cudnn-command-buffer" and q21["route"]["kernel"] == "cudnn", q21
