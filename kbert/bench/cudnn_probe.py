"""python -m kbert.bench.cudnn_probe [--only NAME,...] [--out FILE]

Which forms of cuDNN's flash attention run on this machine's GPU under JAX, each in its own child
process (a kernel that aborts the process costs its own line only), several at a time. One line per
form: ok or the error (for an abort, the fatal lines of the child's log, not its stack), the
largest difference of the forward output from a float32 reference where the form has no dropout,
and for dropout forms the fraction of attention output kept near the reference's expectation.

The forms step from the plainest call to the one kbert's training makes (bf16, [batch, T, heads,
64], padding given as lengths, dropout on the attention probabilities, forward and gradient), so
the first form that fails names what the GPU's cuDNN refuses. On a machine without an NVIDIA GPU
every line says so.
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


FORMS = (
    Form("public-fwd", "jax.nn.dot_product_attention, cudnn, key lengths, forward", grad=False, public=True),
    Form("public-grad", "jax.nn.dot_product_attention, cudnn, key lengths, gradient", public=True),
    Form("fwd", "kbert's call: lengths, no dropout, forward", grad=False),
    Form("grad", "kbert's call: lengths, no dropout, gradient"),
    Form("nomask-drop-grad", "no padding mask, dropout 0.1, gradient", dropout=0.1, lengths="none"),
    Form("full-drop-grad", "lengths all T, dropout 0.1, gradient", dropout=0.1, lengths="full"),
    Form("drop-fwd", "lengths, dropout 0.1, forward", dropout=0.1, grad=False),
    Form("drop-grad", "lengths, dropout 0.1, gradient (kbert's training call)", dropout=0.1),
    Form("drop-grad-512", "as drop-grad at T=512", dropout=0.1, q_len=512, kv_len=512),
    Form("bias-drop-grad", "padding as a [batch, 1, T, S] bias, no lengths, dropout 0.1, gradient",
         dropout=0.1, lengths="bias"),
    Form("q21-grad", "21 queries over 128 keys (a last block at the masked positions), gradient",
         q_len=21),
)
BATCH, HEADS, SIZE = 8, 16, 64


def run_form(form: Form, stand_in=None) -> dict:
    """One form's line. ``stand_in``: a function with the signature of ``compat.cudnn_attention``'s,
    run instead of cuDNN's on any device (the tests check the probe's own reference with it)."""
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
        from kbert import compat

        function, reason = compat.cudnn_attention()
        if function is None and not form.public:
            return {**line, "ok": False, "error": reason}
    rng = np.random.default_rng(0)
    q = jnp.asarray(rng.standard_normal((BATCH, form.q_len, HEADS, SIZE)), jnp.bfloat16)
    k = jnp.asarray(rng.standard_normal((BATCH, form.kv_len, HEADS, SIZE)), jnp.bfloat16)
    v = jnp.asarray(rng.standard_normal((BATCH, form.kv_len, HEADS, SIZE)), jnp.bfloat16)
    padded = np.linspace(form.kv_len, 1, BATCH).astype("int32")
    kv_lengths = {"padded": padded, "bias": padded, "full": np.full(BATCH, form.kv_len, "int32"),
                  "none": None}[form.lengths]
    scale = SIZE ** -0.5

    def attend(q, k, v):
        if form.public:
            return jax.nn.dot_product_attention(q, k, v, scale=scale, implementation="cudnn",
                                                key_value_seq_lengths=jnp.asarray(kv_lengths))
        if form.lengths == "bias":
            keep = jnp.arange(form.kv_len)[None, :] < jnp.asarray(kv_lengths)[:, None]
            bias = jnp.broadcast_to(jnp.where(keep, 0.0, -1e9).astype(q.dtype)[:, None, None, :],
                                    (BATCH, 1, form.q_len, form.kv_len))
            return function(q, k, v, None, None, scale=scale, dropout_rate=form.dropout, seed=7, bias=bias)
        if kv_lengths is None:
            return function(q, k, v, None, None, scale=scale, dropout_rate=form.dropout, seed=7)
        return function(q, k, v, jnp.full((BATCH,), form.q_len, jnp.int32), jnp.asarray(kv_lengths),
                        scale=scale, dropout_rate=form.dropout, seed=7)

    start = time.perf_counter()
    if form.grad:
        weights = jnp.asarray(rng.standard_normal((BATCH, form.q_len, HEADS, SIZE)), jnp.float32)

        def loss(q, k, v):
            return jnp.sum(attend(q, k, v).astype(jnp.float32) * weights)

        _, grads = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2)))(q, k, v)
        jax.block_until_ready(grads)
        line["grad_finite"] = bool(all(np.isfinite(np.asarray(g, np.float32)).all() for g in grads))
    out = jax.jit(attend)(q, k, v)
    out = np.asarray(out, np.float32)
    line["seconds"] = round(time.perf_counter() - start, 2)
    # float32 reference without dropout, padded keys masked
    qf, kf, vf = (np.asarray(t, np.float32) for t in (q, k, v))
    scores = np.einsum("bqhd,bkhd->bhqk", qf, kf) * scale
    if kv_lengths is not None:
        keep = np.arange(form.kv_len)[None, :] < kv_lengths[:, None]
        scores = np.where(keep[:, None, None, :], scores, -1e30)
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    reference = np.einsum("bhqk,bkhd->bqhd", probs, vf)
    if form.dropout:
        # With dropout the output is not the reference; its mean over rows stays near it.
        line["mean_ratio"] = round(float(np.abs(out).mean() / np.abs(reference).mean()), 3)
    else:
        line["max_abs_diff"] = round(float(np.abs(out - reference).max()), 4)
    return {**line, "ok": True}


def run_child(form: Form, timeout: float) -> dict:
    # Several children share the GPU: none takes most of its memory up front. Log level 0: XLA's
    # error lines before an abort are what the line reports.
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false", TF_CPP_MIN_LOG_LEVEL="0", KERAS_BACKEND="jax")
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "kbert.bench.cudnn_probe", "--child", form.name],
                              env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"form": form.name, "ok": False, "error": f"timed out after {timeout:.0f} s"}
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    result = {"form": form.name, "what": form.what, "wall_s": round(time.perf_counter() - start, 1)}
    if done.returncode or not lines:
        why = fatal_lines(done.stderr) or done.stderr.strip().splitlines()[-3:]
        return {**result, "ok": False, "error": f"exit code {done.returncode}: " + " | ".join(why)}
    return {**result, **json.loads(lines[-1])}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kbert.bench.cudnn_probe", description=__doc__.split("\n\n")[1])
    parser.add_argument("--only", default="", help="comma-separated form names (default all): "
                        + ", ".join(f.name for f in FORMS))
    parser.add_argument("--out", help="also append the lines (JSON) to this file")
    parser.add_argument("--jobs", type=int, default=4, help="children at a time")
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    by_name = {f.name: f for f in FORMS}
    if args.child:
        os.environ.setdefault("KERAS_BACKEND", "jax")
        print(json.dumps(run_form(by_name[args.child])), flush=True)
        return 0
    names = [n for n in args.only.split(",") if n] or list(by_name)
    unknown = [n for n in names if n not in by_name]
    if unknown:
        parser.error(f"unknown form {', '.join(unknown)}; known: {', '.join(by_name)}")
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        results = list(pool.map(lambda n: run_child(by_name[n], args.timeout), names))
    for line in results:
        print(json.dumps(line), flush=True)
        if args.out:
            with open(args.out, "a", encoding="utf-8") as f:
                f.write(json.dumps(line) + "\n")
    for line in results:
        detail = line.get("error") or ", ".join(f"{k} {line[k]}" for k in ("max_abs_diff", "mean_ratio", "grad_finite")
                                                if k in line)
        print(f"{line['form']:<18} {'ok ' if line['ok'] else 'NO '} {detail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
