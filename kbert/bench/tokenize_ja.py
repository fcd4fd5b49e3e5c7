"""``python -m kbert.bench tokenize --tokenizer mecab-wordpiece|mecab-character``: the Japanese rows.

Sentences per second, on the same sentences in the same process, of
  * kbert's tokenizer: ``pre_tokenize`` (NFKC + MeCab in Python) then the graph part, ids as numpy;
  * its two parts alone, and NFKC + fugashi alone (what MeCab itself costs: the bound);
  * transformers' ``BertJapaneseTokenizer`` (same vocabulary and MeCab dictionary) ``encode`` per
    sentence, when transformers is importable (it needs no torch for this).
The last lines give MeCab's share of kbert's time and the ratio kbert / transformers.
"""

from __future__ import annotations

import statistics
import time
import unicodedata


def build_candidates(tokenizer_type, vocab_file):
    import tensorflow as tf

    from kbert.text.mecab import DEFAULT_DICTIONARY, mecab_tagger
    from kbert.text.registry import tokenizer_class

    tokenizer = tokenizer_class(tokenizer_type)(str(vocab_file))
    tagger = mecab_tagger(DEFAULT_DICTIONARY)

    def kbert(batch):
        return tokenizer.tokenize(tf.constant(tokenizer.pre_tokenize(batch)), pre_tokenized=True).flat_values.numpy()

    graph = {}

    def graph_only(batch):
        key = id(batch)
        if key not in graph:  # the strings pre_tokenize gives, made once
            graph[key] = tf.constant(tokenizer.pre_tokenize(batch))
        return tokenizer.tokenize(graph[key], pre_tokenized=True).flat_values.numpy()

    candidates = {
        f"kbert {tokenizer_type}": kbert,
        "kbert pre_tokenize (NFKC + MeCab + special tokens)": tokenizer.pre_tokenize,
        "kbert graph part alone": graph_only,
        "NFKC + fugashi alone": lambda batch: [[n.surface for n in tagger(unicodedata.normalize("NFKC", t))]
                                               for t in batch],
    }
    try:
        from transformers import BertJapaneseTokenizer
    except ImportError:
        print("transformers not importable: BertJapaneseTokenizer row skipped")
    else:
        import transformers

        hf = BertJapaneseTokenizer(
            str(vocab_file), do_lower_case=False, word_tokenizer_type="mecab",
            subword_tokenizer_type=tokenizer_type.split("-", 1)[1], mecab_kwargs={"mecab_dic": DEFAULT_DICTIONARY})
        candidates[f"transformers {transformers.__version__} BertJapaneseTokenizer"] = (
            lambda batch: [hf.encode(t, add_special_tokens=False) for t in batch])
    return candidates


def time_candidates(candidates: dict, batches, rounds) -> dict:
    """Warms every candidate up on all batches (tracing; inputs made once), then runs ``rounds``
    interleaved rounds (each runs every candidate over all batches); prints and returns the median
    sentences/s of each."""
    sentences = sum(len(b) for b in batches)
    for fn in candidates.values():
        for batch in batches:
            fn(batch)
    rates = {name: [] for name in candidates}
    for _ in range(rounds):
        for name, fn in candidates.items():
            start = time.perf_counter()
            for batch in batches:
                fn(batch)
            rates[name].append(sentences / (time.perf_counter() - start))
    medians = {name: statistics.median(r) for name, r in rates.items()}
    width = max(map(len, medians))
    for name, rate in medians.items():
        print(f"{name:<{width}}  {rate:>10,.0f} sentences/s  (rounds: {', '.join(f'{r:,.0f}' for r in rates[name])})")
    return medians


def run(tokenizer_type, vocab_file, batches, rounds) -> dict:
    medians = time_candidates(build_candidates(tokenizer_type, vocab_file), batches, rounds)
    ours = medians[f"kbert {tokenizer_type}"]
    print(f"MeCab (NFKC + fugashi) share of kbert's time: {ours / medians['NFKC + fugashi alone']:.0%}")
    peer = next((name for name in medians if name.startswith("transformers")), None)
    if peer:
        print(f"ratio kbert {tokenizer_type} / {peer}: {ours / medians[peer]:.2f}")
    return medians
