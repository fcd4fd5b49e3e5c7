"""python -m kbert.bench.cudnn_probe [--only NAME,...] [--settings S,...] [--out FILE] [--route-file FILE]

Which forms of cuDNN's flash attention run on this machine's GPU under JAX, and under which XLA
setting, each (form, setting) in its own child process (a kernel that aborts the process costs its
own line only), several at a time. One line per (form, setting): ok or the error (for an abort, the
fatal lines of the child's log, not its stack), and what the form checks.

The forms step from the plainest call to the one kbert's training makes (bf16, [batch, T, heads,
64], padding given as lengths, dropout on the attention probabilities, forward and gradient), so
the first form that fails names what the GPU's cuDNN refuses. Settings (``--settings``):
``default`` (XLA as it compiles by default), ``env:NAME`` (the setting for the whole process, in
XLA_FLAGS) and ``jit:NAME`` (for the compiled gradient alone, ``jax.jit(..., compiler_options=)``,
as kbert's models compile their training step), NAME one of ``kbert.compat.XLA_STEP_SETTINGS``.
The forms that train with dropout and padding (and ``remat-drop-checks``) run under every setting;
the others under default.

Checks, each a field of its line: forms without dropout compare the output and the gradients of
query, key and value with a float32 reference; ``drop-checks`` recovers the dropout mask from the
output (values the identity, so the output is the dropped-out probabilities) and compares the
gradients with the reference under that same mask, measures the dropped fraction at rate 0.1, the
masks' agreement between two layers (seeds) and between two executions (steps), and that dQ/dK/dV
are exactly 0 at padded keys (untouched rows would hold garbage under command buffers: openxla/xla
PR #46500); ``remat-drop-checks`` does the same with the attention under ``jax.checkpoint`` (the
backward pass recomputes the forward, which must draw the same masks); ``q21-fallback`` runs two of
kbert's attention layers (auto) in one compiled gradient, one with 21 queries over 128 keys, which
cuDNN refuses at trace time: that layer alone falls back.

The summary line names the settings under which every training form passed, and the line of
``kbert.compat`` that would make kbert take that route; ``--route-file`` gets the benchmark variant
for it (``route-NAME``), or nothing. On a machine without an NVIDIA GPU every line says so.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import os
import subprocess
import sys
import time

from kbert import compat
from kbert.bench.accelerator_bench import fatal_lines


@dataclasses.dataclass(frozen=True)
class Form:
    name: str
    what: str
    grad: bool = True
    dropout: float = 0.0
    lengths: str = "padded"   # "padded" (rows of several lengths), "full" (every row T), "none" (no mask),
                              # "bias" (the padded rows' mask as an additive [batch, 1, T, S] bias)
    q_len: int = 128
    kv_len: int = 128
    public: bool = False      # jax.nn.dot_product_attention(implementation="cudnn") instead of kbert's call
    training: bool = False    # a training call with dropout and padding: runs under every setting, and
                              # kbert's route is a setting under which every such form passes
    kind: str = "call"        # "call", "checks" (drop-checks), "layers" (kbert's attention layers)
    remat: bool = False       # checks: the attention under jax.checkpoint (its forward recomputed)
    each_setting: bool = False  # runs under every setting without deciding the route


FORMS = (
    Form("public-fwd", "jax.nn.dot_product_attention, cudnn, key lengths, forward", grad=False, public=True),
    Form("public-grad", "jax.nn.dot_product_attention, cudnn, key lengths, gradient", public=True),
    Form("fwd", "kbert's call: lengths, no dropout, forward", grad=False),
    Form("grad", "kbert's call: lengths, no dropout, gradient"),
    Form("nomask-drop-grad", "no padding mask, dropout 0.1, gradient", dropout=0.1, lengths="none"),
    Form("full-drop-grad", "lengths all T, dropout 0.1, gradient", dropout=0.1, lengths="full", training=True),
    Form("drop-fwd", "lengths, dropout 0.1, forward", dropout=0.1, grad=False),
    Form("drop-grad", "lengths, dropout 0.1, gradient (kbert's training call)", dropout=0.1, training=True),
    Form("drop-grad-512", "as drop-grad at T=512", dropout=0.1, q_len=512, kv_len=512, training=True),
    Form("bias-drop-grad", "padding as a [batch, 1, T, S] bias, no lengths, dropout 0.1, gradient (not kbert's call)",
         dropout=0.1, lengths="bias", each_setting=True),
    Form("q21-grad", "21 queries over 128 keys (a last block at the masked positions), gradient",
         q_len=21),
    Form("drop-checks", "lengths, dropout 0.1, T=64, two layers, two steps: gradients under the kernel's own "
         "mask, dropped fraction, masks per layer and per step, dK/dV at padded keys",
         dropout=0.1, q_len=64, kv_len=64, training=True, kind="checks"),
    Form("remat-drop-checks", "as drop-checks, the attention under jax.checkpoint (kbert.layers.accel.set_remat): "
         "the recomputed forward must draw the masks the forward drew", dropout=0.1, q_len=64, kv_len=64,
         kind="checks", remat=True, each_setting=True),
    Form("q21-fallback", "kbert's attention layers (auto, bf16, dropout 0.1, padding) in one compiled gradient: "
         "a full one and one of 21 queries; the second alone falls back", dropout=0.1, training=True,
         kind="layers"),
)
BATCH, HEADS, SIZE = 8, 16, 64
SETTINGS = ("default", *(f"{how}:{name}" for name in compat.XLA_STEP_SETTINGS for how in ("env", "jit")))
DEFAULT_SETTINGS = ("default", "env:no-cudnn-command-buffer", "jit:no-cudnn-command-buffer", "jit:no-command-buffer")
RATE_TOLERANCE = 0.005      # |dropped fraction - rate|: a rate rounded to sixteenths (0.0625, 0.125) is outside
AGREEMENT_TOLERANCE = 0.01  # |agreement of two masks - (1 - 2·rate·(1 - rate))|: equal masks agree at 1.0
GRAD_TOLERANCE = 0.05       # relative (Frobenius) error of a bf16 kernel's gradient against float32


def setting_options(setting: str) -> dict:
    """The XLA options of a setting ("default": none)."""
    return {} if setting == "default" else dict(compat.XLA_STEP_SETTINGS[setting.split(":", 1)[1]])


def xla_flags(options: dict) -> str:
    """XLA options as XLA_FLAGS text (a repeated enum comma-separated, as compiler options take it)."""
    return " ".join(f"--{name}={value}" for name, value in options.items())


def run_form(form: Form, stand_in=None, setting: str = "default") -> dict:
    """One (form, setting) line. ``stand_in``: a function with the signature of
    ``compat.cudnn_attention``'s, run instead of cuDNN's on any device (the tests check the probe's
    own references and checks with it)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    device = jax.devices()[0]
    line = {"device": getattr(device, "device_kind", device.platform), "platform": device.platform,
            "jax": jax.__version__}
    if stand_in is not None:
        function = stand_in
    elif device.platform != "gpu":
        return {**line, "ok": False, "error": f"JAX computes on {device.platform}, not an NVIDIA GPU"}
    else:
        function, reason = compat.cudnn_attention()
        if function is None and not form.public:
            return {**line, "ok": False, "error": reason}
    options = setting_options(setting) if setting.startswith("jit:") else {}
    jit = (lambda f: jax.jit(f, compiler_options=options)) if options else jax.jit
    if form.kind == "layers":
        return {**line, **_layers_form(form, setting, stand_in)}
    rng = np.random.default_rng(0)
    q = jnp.asarray(rng.standard_normal((BATCH, form.q_len, HEADS, SIZE)), jnp.bfloat16)
    k = jnp.asarray(rng.standard_normal((BATCH, form.kv_len, HEADS, SIZE)), jnp.bfloat16)
    v = jnp.asarray(rng.standard_normal((BATCH, form.kv_len, HEADS, SIZE)), jnp.bfloat16)
    padded = np.linspace(form.kv_len, 1, BATCH).astype("int32")
    kv_lengths = {"padded": padded, "bias": padded, "full": np.full(BATCH, form.kv_len, "int32"),
                  "none": None}[form.lengths]
    scale = SIZE ** -0.5

    def attend(q, k, v, seed=7):
        if form.public:
            return jax.nn.dot_product_attention(q, k, v, scale=scale, implementation="cudnn",
                                                key_value_seq_lengths=jnp.asarray(kv_lengths))
        if form.lengths == "bias":
            keep = jnp.arange(form.kv_len)[None, :] < jnp.asarray(kv_lengths)[:, None]
            bias = jnp.broadcast_to(jnp.where(keep, 0.0, -1e9).astype(q.dtype)[:, None, None, :],
                                    (BATCH, 1, form.q_len, form.kv_len))
            return function(q, k, v, None, None, scale=scale, dropout_rate=form.dropout, seed=seed, bias=bias)
        if kv_lengths is None:
            return function(q, k, v, None, None, scale=scale, dropout_rate=form.dropout, seed=seed)
        return function(q, k, v, jnp.full((BATCH,), form.q_len, jnp.int32), jnp.asarray(kv_lengths),
                        scale=scale, dropout_rate=form.dropout, seed=seed)

    if form.kind == "checks":
        return {**line, **_checks(form, attend, jit, kv_lengths, scale)}
    start = time.perf_counter()
    weights = jnp.asarray(rng.standard_normal((BATCH, form.q_len, HEADS, SIZE)), jnp.float32)
    if form.grad:
        def loss(q, k, v):
            return jnp.sum(attend(q, k, v).astype(jnp.float32) * weights)

        _, grads = jit(jax.value_and_grad(loss, argnums=(0, 1, 2)))(q, k, v)
        jax.block_until_ready(grads)
        line["grad_finite"] = bool(all(np.isfinite(np.asarray(g, np.float32)).all() for g in grads))
        if not form.dropout:  # the same call at rate 0 against the float32 reference's gradients
            expected = jax.jit(jax.grad(lambda *a: jnp.sum(_reference(*a, kv_lengths, scale) * weights),
                                        argnums=(0, 1, 2)))(*[t.astype(jnp.float32) for t in (q, k, v)])
            line["grad_rel_err"] = round(max(_rel_err(g, e) for g, e in zip(grads, expected)), 4)
    out = np.asarray(jit(attend)(q, k, v), np.float32)
    line["seconds"] = round(time.perf_counter() - start, 2)
    f32 = [t.astype(jnp.float32) for t in (q, k, v)]
    reference = np.asarray(jax.jit(lambda *a: _reference(*a, kv_lengths, scale))(*f32))
    if form.dropout:
        # With dropout the output is not the reference; its mean over rows stays near it.
        line["mean_ratio"] = round(float(np.abs(out).mean() / np.abs(reference).mean()), 3)
    else:
        line["max_abs_diff"] = round(float(np.abs(out - reference).max()), 4)
    ok = line.get("grad_rel_err", 0.0) <= GRAD_TOLERANCE and line.get("grad_finite", True)
    return {**line, "ok": bool(ok)}


def _reference(q, k, v, kv_lengths, scale, masks=None, rate=0.0):
    """float32 attention, padded keys masked; ``masks`` [batch, heads, Q, S] 1/0: the dropout's."""
    import jax
    import jax.numpy as jnp

    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) * scale
    if kv_lengths is not None:
        keep = jnp.arange(k.shape[1])[None, :] < jnp.asarray(kv_lengths)[:, None]
        scores = jnp.where(keep[:, None, None, :], scores, -1e30)
    probs = jax.nn.softmax(scores, axis=-1)
    if masks is not None:
        probs = probs * masks / (1.0 - rate)
    return jnp.einsum("bhqk,bkhd->bqhd", probs, v)


def _rel_err(got, expected) -> float:
    import numpy as np

    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    return float(np.linalg.norm(got - expected) / max(np.linalg.norm(expected), 1e-30))


def _checks(form: Form, attend, jit, kv_lengths, scale) -> dict:
    """drop-checks: two layers (seeds 7 and 8) on the same inputs, values the identity per head
    ([batch, key, head, :] = e_key, so each output row is that query's dropped-out, rescaled
    probabilities and the kernel's mask can be read from it), executed twice (two steps)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    rng = np.random.default_rng(1)
    q = jnp.asarray(rng.standard_normal((BATCH, form.q_len, HEADS, SIZE)), jnp.bfloat16)
    k = jnp.asarray(rng.standard_normal((BATCH, form.kv_len, HEADS, SIZE)), jnp.bfloat16)
    v = jnp.asarray(np.broadcast_to(np.eye(form.kv_len, SIZE)[None, :, None, :], (BATCH, form.kv_len, HEADS, SIZE)),
                    jnp.bfloat16)
    w1, w2 = (jnp.asarray(rng.standard_normal((BATCH, form.q_len, HEADS, SIZE)), jnp.float32) for _ in range(2))

    if form.remat:  # nothing kept: the backward pass runs each forward call again
        attend = jax.checkpoint(attend, policy=jax.checkpoint_policies.nothing_saveable, static_argnums=(3,))

    def loss(q, k, v):
        o1, o2 = attend(q, k, v, 7), attend(q, k, v, 8)
        return jnp.sum(o1.astype(jnp.float32) * w1) + jnp.sum(o2.astype(jnp.float32) * w2), (o1, o2)

    step = jit(jax.value_and_grad(loss, argnums=(0, 1, 2), has_aux=True))
    start = time.perf_counter()
    (_, (o1, o2)), grads = step(q, k, v)
    (_, (o1_next, _)), _ = step(q, k, v)
    jax.block_until_ready(grads)
    real = np.arange(form.kv_len)[None, :] < kv_lengths[:, None]            # [batch, S]
    real_qk = np.broadcast_to(real[:, None, None, :], (BATCH, HEADS, form.q_len, form.kv_len))

    def mask(o):  # [batch, Q, heads, S] -> [batch, heads, Q, S]: 1 where the probability was kept
        return (np.transpose(np.asarray(o, np.float32)[..., :form.kv_len], (0, 2, 1, 3)) != 0).astype("float32")

    m1, m2, m1_next = mask(o1), mask(o2), mask(o1_next)
    rate = form.dropout
    independent = 1.0 - 2.0 * rate * (1.0 - rate)
    dropped = float(1.0 - np.concatenate([m1[real_qk], m2[real_qk]]).mean())
    layers = float((m1 == m2)[real_qk].mean())
    steps = float((m1 == m1_next)[real_qk].mean())
    f32 = [t.astype(jnp.float32) for t in (q, k, v)]
    expected = jax.jit(jax.grad(lambda *a: jnp.sum(_reference(*a, kv_lengths, scale, m1, rate) * w1)
                                + jnp.sum(_reference(*a, kv_lengths, scale, m2, rate) * w2), argnums=(0, 1, 2)))(*f32)
    grad_rel_err = max(_rel_err(g, e) for g, e in zip(grads, expected))
    pad = ~real                                                               # [batch, S]
    padded_grad = max(float(np.abs(np.asarray(g, np.float32))[pad].max(initial=0.0)) for g in grads[1:])
    failed = [name for name, bad in (
        ("gradients", not grad_rel_err <= GRAD_TOLERANCE),
        ("dropped fraction", abs(dropped - rate) > RATE_TOLERANCE),
        ("masks per layer", abs(layers - independent) > AGREEMENT_TOLERANCE),
        ("masks per step", abs(steps - independent) > AGREEMENT_TOLERANCE),
        ("padded dK/dV", padded_grad != 0.0)) if bad]
    return {"seconds": round(time.perf_counter() - start, 2), "grad_rel_err": round(grad_rel_err, 4),
            "dropped_fraction": round(dropped, 5), "rate": rate,
            "nearest_sixteenth": round(round(dropped * 16) / 16, 4),
            "layer_mask_agreement": round(layers, 4), "step_mask_agreement": round(steps, 4),
            "independent_agreement": round(independent, 4), "padded_grad_max": padded_grad,
            "failed_checks": failed, "ok": not failed}


def _layers_form(form: Form, setting: str, stand_in=None) -> dict:
    """q21-fallback: kbert's MultiHeadSelfAttention (auto, mixed_bfloat16, dropout 0.1) twice in one
    gradient, the second at 21 query positions, compiled by ``accel.step_jit`` with the setting's
    route assumed to run; which kernel each traced call took."""
    import jax
    import jax.numpy as jnp
    import keras
    import numpy as np

    from kbert.layers import accel
    from kbert.layers.attention import MultiHeadSelfAttention

    if stand_in is not None:  # the tests: a stand-in NVIDIA device and kernel
        import types

        accel.cuda_device = lambda: types.SimpleNamespace(compute_capability="9.0", device_kind="stand-in GPU")
        accel._cudnn_function = lambda: (stand_in, None)
    # env: and default: the process's XLA (no setting of the step); jit: the step's own setting
    accel.assume_cudnn_training_setting(setting.split(":", 1)[1] if setting.startswith("jit:") else None)
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    width = HEADS * SIZE
    layers = [MultiHeadSelfAttention(width, HEADS, dropout=form.dropout, attention_impl="auto") for _ in range(2)]
    for layer in layers:
        layer.build((None, None, width))
    rng = np.random.default_rng(2)
    x = jnp.asarray(rng.standard_normal((BATCH, form.kv_len, width)), jnp.float32)
    mask = jnp.asarray(np.arange(form.kv_len)[None, :] < np.linspace(form.kv_len, 1, BATCH)[:, None], jnp.int32)
    positions = jnp.asarray(np.sort(rng.permutation(form.kv_len)[:21]).repeat(BATCH).reshape(21, BATCH).T, jnp.int32)
    trainable = [[w.value for w in layer.trainable_variables] for layer in layers]
    state = [[w.value for w in layer.non_trainable_variables] for layer in layers]

    def loss(trainable, x):
        y, _ = layers[0].stateless_call(trainable[0], state[0], x, mask, training=True)
        y, _ = layers[1].stateless_call(trainable[1], state[1], y, mask, training=True, positions=positions)
        return jnp.sum(jnp.square(y.astype(jnp.float32)))

    from kbert.bench.common import TracedCalls

    calls = accel.observe_calls(TracedCalls())
    start = time.perf_counter()
    grads = accel.step_jit(jax.grad(loss))(trainable, x)
    jax.block_until_ready(grads)
    traced = {f"train:{k}": n for k, n in calls.training().items()}
    finite = bool(all(np.isfinite(np.asarray(g, np.float32)).all() for g in jax.tree_util.tree_leaves(grads)))
    expected = {"train:cudnn+dropout": 1, "train:plain+dropout": 1}
    return {"seconds": round(time.perf_counter() - start, 2), "grad_finite": finite, "traced_calls": traced,
            "route": accel.route_taken(), "ok": finite and traced == expected}


def run_child(form: Form, setting: str, timeout: float) -> dict:
    # Several children share the GPU: none takes most of its memory up front. Log level 0: XLA's
    # error lines before an abort are what the line reports.
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false", TF_CPP_MIN_LOG_LEVEL="0", KERAS_BACKEND="jax")
    if setting.startswith("env:"):
        env["XLA_FLAGS"] = " ".join(f for f in (env.get("XLA_FLAGS", ""), xla_flags(setting_options(setting))) if f)
    result = {"form": form.name, "setting": setting, "what": form.what}
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "kbert.bench.cudnn_probe", "--child", form.name,
                               "--settings", setting], env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {**result, "ok": False, "error": f"timed out after {timeout:.0f} s"}
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    result["wall_s"] = round(time.perf_counter() - start, 1)
    if done.returncode or not lines:
        why = fatal_lines(done.stderr) or done.stderr.strip().splitlines()[-3:]
        return {**result, "ok": False, "error": f"exit code {done.returncode}: " + " | ".join(why)}
    return {**result, **json.loads(lines[-1])}


def summary(lines: list[dict]) -> dict:
    """Per setting, whether every training form (dropout and padding, gradient) ran and passed its
    checks; kbert's route: the first of default, jit:NAME (in kbert.compat.XLA_STEP_SETTINGS' order)
    that passed (an env: setting alone cannot be kbert's route: it is the whole process's)."""
    by_setting: dict = {}
    for line in lines:
        form = next(f for f in FORMS if f.name == line["form"])
        if form.training:
            by_setting.setdefault(line["setting"], []).append(bool(line.get("ok")))
    training = {f.name for f in FORMS if f.training}
    covered = {s: {ln["form"] for ln in lines if ln["setting"] == s} for s in by_setting}
    passing = [s for s, oks in by_setting.items() if all(oks) and covered[s] >= training]
    route = next((s for s in ("default", *(f"jit:{n}" for n in compat.XLA_STEP_SETTINGS)) if s in passing), None)
    result = {"summary": True, "passing_settings": passing, "route": route, "variant": None, "compat_line": None}
    if route is not None:
        name = None if route == "default" else route.split(":", 1)[1]
        version = compat._version_tuple(next(ln["jax"] for ln in lines if ln.get("jax")))
        result.update(variant="route-xla-default" if name is None else f"route-{name}",
                      compat_line=f"CUDNN_DROPOUT_WITH_PADDING_RUNS = {{{name!r}: {version}}}")
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kbert.bench.cudnn_probe", description=__doc__.split("\n\n")[1])
    parser.add_argument("--only", default="", help="comma-separated form names (default all): "
                        + ", ".join(f.name for f in FORMS))
    parser.add_argument("--settings", default=",".join(DEFAULT_SETTINGS),
                        help="comma-separated XLA settings for the training forms (default %(default)s); "
                             "known: " + ", ".join(SETTINGS))
    parser.add_argument("--out", help="also append the lines (JSON) to this file")
    parser.add_argument("--route-file", help="write the benchmark variant of the route found (route-NAME), "
                                             "or nothing, to this file")
    parser.add_argument("--jobs", type=int, default=6, help="children at a time")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per child")
    parser.add_argument("--deadline", type=float, default=None,
                        help="seconds for the whole probe: a child not started by then is a skipped line")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    by_name = {f.name: f for f in FORMS}
    settings = [s for s in args.settings.split(",") if s]
    unknown = [s for s in settings if s not in SETTINGS]
    if unknown or not settings:
        parser.error(f"unknown setting {', '.join(unknown) or '(none given)'}; known: {', '.join(SETTINGS)}")
    if args.child:
        os.environ.setdefault("KERAS_BACKEND", "jax")
        print(json.dumps(run_form(by_name[args.child], setting=settings[0])), flush=True)
        return 0
    names = [n for n in args.only.split(",") if n] or list(by_name)
    unknown = [n for n in names if n not in by_name]
    if unknown:
        parser.error(f"unknown form {', '.join(unknown)}; known: {', '.join(by_name)}")
    # The training forms under every setting first (what decides kbert's route), then the others.
    each = [n for n in names if by_name[n].training or by_name[n].each_setting]
    runs = [(by_name[n], s) for s in settings for n in each] + \
           [(by_name[n], "default") for n in names if n not in each and "default" in settings]
    start = time.monotonic()

    def run(form, setting):
        left = None if args.deadline is None else args.deadline - (time.monotonic() - start)
        if left is not None and left < 5:
            return {"form": form.name, "setting": setting, "ok": False,
                    "error": f"skipped: {args.deadline:.0f} s deadline reached"}
        return run_child(form, setting, args.timeout if left is None else min(args.timeout, left))

    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        results = list(pool.map(lambda r: run(*r), runs))
    results.append(summary(results))
    for line in results:
        print(json.dumps(line), flush=True)
        if args.out:
            with open(args.out, "a", encoding="utf-8") as f:
                f.write(json.dumps(line) + "\n")
    if args.route_file:
        with open(args.route_file, "w", encoding="utf-8") as f:
            f.write(results[-1]["variant"] or "")
    for line in results[:-1]:
        detail = line.get("error") or ", ".join(f"{k} {line[k]}" for k in (
            "max_abs_diff", "grad_rel_err", "mean_ratio", "dropped_fraction", "layer_mask_agreement",
            "step_mask_agreement", "padded_grad_max", "failed_checks", "traced_calls", "grad_finite") if k in line)
        print(f"{line['form']:<17} {line['setting']:<28} {'ok ' if line['ok'] else 'NO '} {detail}")
    last = results[-1]
    passing = ", ".join(last["passing_settings"]) or "none"
    print(f"settings under which kbert's training call ran and passed: {passing}; "
          + (f"kbert's route: {last['route']} (kbert/compat.py: {last['compat_line']}; bench variant {last['variant']})"
             if last["route"] else "no route for kbert"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
