"""``kbert.bench serve --hf-dir HF_DIR``: a BERT encoder served by kbert's exports vs ONNX Runtime.

From one Hugging Face BERT folder (real weights, or ``--random-hf CONFIG``'s random ones) the
bench makes, in one child process, what a user would deploy:
  * kbert: ``kbert.convert hf`` -> ``kbert.export encoder`` (ids in; ``serving_default`` and the
    XLA-compiled ``serving_xla``) and ``kbert.export preprocessor`` (strings in, seq 128), then
    loads the two SavedModels with ``tf.saved_model.load`` in this process and calls their
    signatures (strings in: the preprocessor, then the encoder);
  * kbert's ONNX export (``kbert export onnx`` of the converted directory: ONNX Runtime's fused
    kernels), run in ONNX Runtime in the peer's process with the peer's session options; strings
    in: the export's tokenizer.json (Rust ``tokenizers``) inside the timed request;
  * ONNX Runtime (``kbert.bench.ort_peer``, its own process): ``torch.onnx`` export of the same
    weights, plain and transformer-optimized; strings in: Rust ``tokenizers`` encoding (padded to
    the same length) inside the timed request.
Cases: ids in at each ``--batch-sizes``, strings in at batch 1, and ``--concurrency`` N client
threads sending one-sentence requests through one batcher each side (kbert.bench.concurrency).
Rounds interleave every candidate of every case (rotated); each table gives p50 / p90 / p99 over
all requests, the min–max of the per-round p50s (the run-to-run spread) and the rate, then
kbert's best / ORT's best, and kbert's ONNX against the ORT-optimized torch export and against
kbert's best SavedModel signature (with their goals on the batch-1 ids case).
"""

from __future__ import annotations

import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from kbert.bench import common, concurrency

SEQ = 128
ONNX_DIR = "kbert_onnx"
# kbert's ONNX file at batch 1, ids in: at least as fast as the ORT-optimized torch export, and 1.25x
# kbert's best SavedModel signature (docs/serving.md).
ONNX_GOALS = {"ORT optimized": 1.0, "SavedModel": 1.25}


def child_env() -> dict:
    """The environment of a ``python -m kbert...`` child: it imports this kbert, whatever is installed."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    root = str(pathlib.Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def build_exports(hf_dir, work: pathlib.Path, xla: bool, onnx: bool = False):
    """The converted model directory, encoder and preprocessor SavedModels (and with ``onnx`` kbert's
    ONNX export) under ``work`` (kept from an earlier run with the same ``--work-dir``), made in one
    child process: converting and exporting build
    Keras models and trace them, and this process only loads the exports. One child, not one per step
    (``kbert convert``, ``kbert export`` twice): each start imports TensorFlow and Keras again."""
    model_dir, encoder, pre = work / "kbert_model", work / "encoder" / "1", work / "preprocessor" / "1"
    made = [(model_dir, "bert_config.json"), (encoder, "saved_model.pb"), (pre, "saved_model.pb")]
    if onnx:
        made.append((work / ONNX_DIR, "model.onnx"))
    if not all((d / name).exists() for d, name in made):
        argv = [str(hf_dir), str(work), *(["--xla"] if xla else []), *(["--onnx"] if onnx else [])]
        proc = subprocess.run([sys.executable, "-m", "kbert.bench.serve_ort", *argv], capture_output=True,
                              text=True, env=child_env())
        if proc.returncode:
            raise SystemExit(f"error: building kbert's exports of {hf_dir} failed:\n{proc.stderr[-3000:]}")
    return encoder, pre


def _build_here(hf_dir, work: pathlib.Path, xla: bool, onnx: bool = False):
    """What ``build_exports``' child does: ``kbert convert hf``, ``kbert export encoder
    --no-head-signatures [--xla-signature]``, ``kbert export preprocessor --seq-length SEQ`` and with
    ``onnx`` ``kbert export onnx``."""
    from kbert.convert.hf import convert
    from kbert.export.encoder import export_encoder
    from kbert.export.preprocessor import export_preprocessor

    model_dir, encoder, pre = work / "kbert_model", work / "encoder" / "1", work / "preprocessor" / "1"
    if not (model_dir / "bert_config.json").exists():
        convert(hf_dir, model_dir, overwrite=True)
    if not (encoder / "saved_model.pb").exists():
        export_encoder(model_dir, encoder, head_signatures=False, xla_signature=xla, overwrite=True)
    if not (pre / "saved_model.pb").exists():
        export_preprocessor(model_dir, pre, seq_length=SEQ, overwrite=True)
    if onnx and not (work / ONNX_DIR / "model.onnx").exists():
        from kbert.export.onnx.export import export_onnx

        result = export_onnx(model_dir, work / ONNX_DIR, overwrite=True)
        print(f"  kbert export onnx: {result.tokenizer.reason or 'tokenizer.json written'}", file=sys.stderr)


def _cases(args):
    cases = [dict(name=f"ids b{b}", kind="ids", batch_size=b, seq_length=SEQ) for b in args.sizes]
    cases += [dict(name="strings b1", kind="strings", batch_size=1, seq_length=SEQ)]
    cases += [dict(name=f"strings c{c}", kind="strings", batch_size=1, seq_length=SEQ, concurrency=c,
                   max_batch=args.max_batch, timeout_s=args.batch_timeout_ms / 1e3) for c in args.clients]
    for case in cases:
        case["requests"] = max(args.min_requests, args.requests // case["batch_size"])
    return cases


def _kbert_runners(case, encoder, pre, sentences, vocab_size):
    import numpy as np
    import tensorflow as tf

    runners = []
    batch = case["batch_size"]
    for signature in [s for s in ("serving_default", "serving_xla") if s in encoder.signatures]:
        enc = encoder.signatures[signature]
        label = f"{case['name']}: kbert export{' (XLA)' if signature == 'serving_xla' else ''}"

        def outputs(result):
            return {k: result[k].numpy() for k in ("sequence_output", "pooled_output")}

        if case["kind"] == "ids":
            rng = np.random.default_rng(0)
            requests = []
            for _ in range(8):
                ids = rng.integers(1, vocab_size, (batch, SEQ)).astype(np.int32)
                requests.append({"input_word_ids": ids, "input_mask": np.ones_like(ids),
                                 "input_type_ids": np.zeros_like(ids)})

            def run_batch(feeds, enc=enc):
                return outputs(enc(**{k: tf.constant(v) for k, v in feeds.items()}))
        else:
            requests = [sentences[i:i + batch] for i in range(0, len(sentences) - batch + 1, batch)]
            pre_fn = pre.signatures["serving_default"]

            def run_batch(strings, enc=enc):
                return outputs(enc(**pre_fn(text=tf.constant(list(strings)))))
        clients = case.get("concurrency")
        if clients:
            combine = concurrency.concat_lists if case["kind"] == "strings" else concurrency.concat_dicts
            batcher = concurrency.Batcher(run_batch, combine, concurrency.split_rows, max_batch=case["max_batch"],
                                          timeout_s=case["timeout_s"])
            runners.append(concurrency.ClosedLoop(batcher, requests, clients, name=label, group="kbert",
                                                  items=batch))
        else:
            state = {"i": 0}

            def call(run_batch=run_batch, requests=requests, state=state):
                run_batch(requests[state["i"] % len(requests)])
                state["i"] += 1
            runners.append(common.InProcess(label, call, group="kbert", items=batch))
        runners[-1].concurrency = clients or 0
    return runners


def _interleave(pairs, rounds):
    """{name: [[seconds per request] per round]}; each round runs every (runner, n), rotated."""
    times = {r.name: [] for r, _ in pairs}
    for i in range(rounds):
        k = i % len(pairs)
        for runner, n in pairs[k:] + pairs[:k]:
            times[runner.name].append(runner.run(n))
            time.sleep(0.02)
        print(f"  round {i + 1}/{rounds} done", file=sys.stderr, flush=True)
    return times


def _onnx_missing():
    """Why kbert's ONNX export cannot be measured here (None if it can)."""
    from kbert.bench.common import have

    if not (have("onnx") and have("onnxruntime")):
        return "kbert ONNX: not measured (needs the onnx extra: pip install 'kbert[onnx]')"
    return None


def _pct(sorted_times, q):
    return sorted_times[min(len(sorted_times) - 1, int(round(q * (len(sorted_times) - 1))))]


def print_case(case, runners, times, file=None):
    """The case's table; returns (kbert best / ORT best rate, kbert row, ORT row) or None."""
    file = file or sys.stdout
    unit = "req/s" if case.get("concurrency") else "seq/s"
    print(f"\n== {case['name']}: {case['kind']} in, batch {case['batch_size']}, seq {SEQ}"
          + (f", {case['concurrency']} clients, batcher max {case['max_batch']} timeout {case['timeout_s'] * 1e3:g} ms"
             if case.get("concurrency") else ""),
          file=file)
    width = max(len(r.name) for r in runners) + 2
    print(f"{'candidate':<{width}}{'p50 ms':>9}{'p90 ms':>9}{'p99 ms':>9}{'round p50s ms':>17}{unit:>10}", file=file)
    rates = {}
    for r in runners:
        per_round = times[r.name]
        flat = sorted(t for chunk in per_round for t in chunk)
        mean = statistics.fmean(flat)
        clients = getattr(r, "concurrency", 0)
        rate = clients / mean if clients else r.items / mean  # closed loop: N / mean latency
        rates[r.name] = (rate, r)
        p50s = [statistics.median(chunk) * 1e3 for chunk in per_round]
        spread = f"{min(p50s):.1f}–{max(p50s):.1f}"
        print(f"{r.name:<{width}}{_pct(flat, .5) * 1e3:>9.1f}{_pct(flat, .9) * 1e3:>9.1f}"
              f"{_pct(flat, .99) * 1e3:>9.1f}{spread:>17}{rate:>10.1f}", file=file)
    kbert = [v for v in rates.values() if v[1].group == "kbert"]
    peers = [v for v in rates.values() if v[1].group == "peer"]
    if not (kbert and peers):
        return None
    k, p = max(kbert, key=lambda v: v[0]), max(peers, key=lambda v: v[0])
    print(f"ratio kbert / fastest peer: {k[0] / p[0]:.2f}  ({k[1].name} vs {p[1].name})", file=file)
    _print_onnx_ratios(case, rates, file)
    return k[0] / p[0], k[1], p[1]


def _print_onnx_ratios(case, rates, file):
    """kbert's ONNX against the ORT-optimized torch export and against kbert's best SavedModel
    signature; the goals (ONNX_GOALS) are judged on the batch-1 ids case."""
    by_name = {r.name.split(": ", 1)[1]: (rate, r) for rate, r in rates.values()}
    onnx = by_name.get("kbert ONNX")
    if onnx is None:
        return
    others = {"ORT optimized": [v for n, v in by_name.items() if n.startswith("ORT") and n.endswith("optimized")],
              "SavedModel": [v for n, v in by_name.items() if n.startswith("kbert export")]}
    for what, rows in others.items():
        if not rows:
            continue
        best = max(rows, key=lambda v: v[0])
        verdict = ""
        if case["kind"] == "ids" and case["batch_size"] == 1 and not case.get("concurrency"):
            goal = ONNX_GOALS[what]
            verdict = f"  goal >= {goal:.2f}: {'met' if onnx[0] / best[0] >= goal else 'MISSED'}"
        print(f"ratio kbert ONNX / {best[1].name.split(': ', 1)[1]}: {onnx[0] / best[0]:.2f}{verdict}", file=file)


def run(args):
    import tensorflow as tf

    from kbert.bench import ort_peer

    hf_dir = pathlib.Path(args.hf_dir)
    work = pathlib.Path(args.work_dir) if args.work_dir else pathlib.Path(tempfile.mkdtemp(prefix="kbert-serve-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        onnx_note = _onnx_missing() if args.ort else "kbert ONNX: measured beside the ORT peer (--vs ort)"
        print("  exporting (kbert.convert hf, kbert.export encoder / preprocessor / onnx) ...", file=sys.stderr,
              flush=True)
        enc_dir, pre_dir = build_exports(hf_dir, work, xla=args.xla, onnx=onnx_note is None)
        cases = _cases(args)
        texts = work / "sentences.txt"
        sentences = [s.replace("\n", " ") for s in args.sentences]
        texts.write_text("\n".join(sentences) + "\n", encoding="utf-8")
        notes, child = [n for n in [onnx_note] if n], None
        if args.ort:
            reason = ort_peer.missing()
            if reason:
                notes.append(reason)
                if onnx_note is None:
                    notes.append("kbert ONNX: not measured (it runs in the ONNX Runtime peer's process)")
            else:
                print("  building the ONNX Runtime peer (torch.onnx export, optimizer) ...", file=sys.stderr,
                      flush=True)
                child = common.SubprocessPeer("kbert.bench.ort_peer", dict(
                    hf_dir=str(hf_dir), work_dir=str(work / "onnx"), threads=args.threads, warmup=args.warmup,
                    kbert_onnx=str(work / ONNX_DIR) if onnx_note is None else None,
                    cases=[dict(c, texts=str(texts)) for c in cases]), args.threads)
        import tensorflow_text  # noqa: F401 - the preprocessor's ops

        encoder, pre = tf.saved_model.load(str(enc_dir)), tf.saved_model.load(str(pre_dir))
        vocab_size = int(pre.tokenize.get_special_tokens_dict()["vocab_size"])
        pairs, by_case = [], []
        for case in cases:
            runners = _kbert_runners(case, encoder, pre, sentences, vocab_size)
            for r in runners:
                for _ in range(max(1, args.warmup)):
                    r.run(max(1, getattr(r, "concurrency", 0) or 1))
            if child:
                runners += [r for r in child.runners if r.name.startswith(case["name"] + ":")]
            pairs += [(r, case["requests"]) for r in runners]
            by_case.append((case, runners))
        try:
            times = _interleave(pairs, args.rounds)
        finally:
            if child:
                child.close()
        print(f"\n{child.versions if child else ''}")
        results = [(case["name"], print_case(case, runners, times)) for case, runners in by_case]
        for note in notes:
            print(note)
        common.print_worst(results)
        return 0
    finally:
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":  # build_exports' child: HF_DIR WORK_DIR [--xla] [--onnx]
    from kbert.cli_startup import decline_optional_imports

    decline_optional_imports()  # starts as the kbert commands it stands for do
    _build_here(pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), xla="--xla" in sys.argv[3:],
                onnx="--onnx" in sys.argv[3:])
