"""``python -m kbert.bench tokenize --tokenizer sentencepiece``: the SentencePiece rows.

Sentences per second, on the same sentences in the same process, of
  * kbert's ``sentencepiece`` tokenizer (tensorflow-text's ``FastSentencepieceTokenizer`` in a
    ``tf.function``; ids as numpy), alone and with the packer (strings -> the three int32
    [batch, seq_length] inputs);
  * the ``sentencepiece`` package's ``SentencePieceProcessor.encode`` on the batch (its C++ thread
    pool over all CPUs: the reference implementation) and on one thread;
  * tensorflow-text's ``FastSentencepieceTokenizer`` alone (the kernel kbert's ids come from: what
    kbert adds is grouping pieces into words and sharding the batch over the CPUs);
  * keras-hub's ``SentencePieceTokenizer`` (tensorflow-text's classic ``SentencepieceTokenizer``)
    in a ``tf.function``, when keras-hub is importable.
Before timing, every candidate's ids are compared with the package's on every sentence; the lines
that differ are counted and printed (the classic kernel breaks exact score ties the other way on
rare lines, see kbert.text.sentencepiece). The last line is the ratio kbert tokenizer / the package.
"""

from __future__ import annotations

from kbert.bench.tokenize_ja import time_candidates


def build_candidates(model_file, seq_length):
    import sentencepiece
    import tensorflow as tf

    from kbert.text import BertPreprocessor
    from kbert.text.sentencepiece import SentencePieceTokenizer

    tokenizer = SentencePieceTokenizer(str(model_file))
    pre = BertPreprocessor(tokenizer, seq_length=seq_length)
    ids_fn = tf.function(lambda s: tokenizer.tokenize_flat(s), autograph=False)
    pack_fn = tf.function(lambda s: pre(s), autograph=False)
    import tensorflow_text as tf_text

    kernel = tf_text.FastSentencepieceTokenizer(tokenizer.model_proto)
    kernel_fn = tf.function(lambda s: kernel.tokenize(s), autograph=False)
    processor = sentencepiece.SentencePieceProcessor(model_file=str(model_file))
    version = sentencepiece.__version__

    def flat_rows(ragged):
        values, splits = ragged.flat_values.numpy(), ragged.row_splits.numpy()
        return [values[a:b].tolist() for a, b in zip(splits[:-1], splits[1:])]

    candidates = {
        "kbert sentencepiece tokenizer": lambda batch: ids_fn(tf.constant(batch)).flat_values.numpy(),
        "kbert sentencepiece tokenizer+packer": lambda batch: pack_fn(tf.constant(batch)),
        "tensorflow-text FastSentencepieceTokenizer alone": lambda batch: kernel_fn(tf.constant(batch)).flat_values.numpy(),
        f"sentencepiece {version} encode (batch, all CPUs)": processor.encode,
        f"sentencepiece {version} encode (batch, 1 thread)": lambda batch: processor.encode(batch, num_threads=1),
    }
    ids_of = {  # name -> batch -> list of id lists (for the exactness check)
        "kbert sentencepiece tokenizer": lambda batch: flat_rows(ids_fn(tf.constant(batch))),
    }
    try:
        import keras_hub
    except ImportError:
        print("keras-hub not importable: its SentencePieceTokenizer row skipped")
    else:
        hub = keras_hub.tokenizers.SentencePieceTokenizer(proto=str(model_file))
        hub_fn = tf.function(lambda s: hub(s), autograph=False)
        name = f"keras-hub {keras_hub.__version__} SentencePieceTokenizer"
        candidates[name] = lambda batch: hub_fn(tf.constant(batch)).flat_values.numpy()
        ids_of[name] = lambda batch: flat_rows(hub_fn(tf.constant(batch)))
    return candidates, ids_of, processor.encode


def run(model_file, batches, rounds, seq_length) -> dict:
    candidates, ids_of, reference = build_candidates(model_file, seq_length)
    sentences = [s for b in batches for s in b]
    expected = [row for b in batches for row in reference(b)]
    for name, ids in ids_of.items():
        got = [row for b in batches for row in ids(b)]
        differ = [i for i, (g, e) in enumerate(zip(got, expected)) if g != e]
        first = f"; first: {sentences[differ[0]][:40]!r}" if differ else ""
        print(f"ids of {name} equal sentencepiece's on {len(sentences) - len(differ):,} of {len(sentences):,} "
              f"lines{first}")
    medians = time_candidates(candidates, batches, rounds)
    ours = medians["kbert sentencepiece tokenizer"]
    peer = next(name for name in medians if name.startswith("sentencepiece") and "all CPUs" in name)
    print(f"ratio kbert sentencepiece tokenizer / {peer}: {ours / medians[peer]:.2f}")
    return medians
