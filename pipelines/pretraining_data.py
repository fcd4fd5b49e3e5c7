"""Apache Beam: documents -> next-sentence-prediction instances (raw text) -> sharded TFRecords.

    python -m pipelines.pretraining_data --input 'corpus/*.txt' --output out/pretrain \
        --vocab vocab.txt [--cased] [--tokenizer TYPE] | --model-dir DIR \
        [--max-seq-length 128 --short-seq-prob 0.1 --dupe-factor 5 --num-shards 8 \
        --format sentences|prose --language en|ja|zh --strip-aozora] [Beam options, e.g. --runner DataflowRunner]

Input formats:
  * ``sentences`` (the original's): one sentence per line, a blank line between documents.
  * ``prose``: hard-wrapped paragraphs separated by blank lines; lines are joined, split into
    sentences, and consecutive paragraphs grouped into documents of about ``--doc-sentences``.

Japanese and Chinese (``--language ja|zh``, see ``pipelines.cjk_text``): sentences end at 。！？
(Chinese also ；) and at line ends, segments are joined without spaces, Japanese text is NFKC
normalized; ``--strip-aozora`` removes Aozora Bunko markup (ruby, editor notes, header, colophon).

Instances follow google-research/bert ``create_pretraining_data.py``
(``create_instances_from_document``): a target length of ``max_seq_length - 3`` wordpieces (a
random shorter one with probability ``short_seq_prob``), chunks of whole sentences split at a
random point into A and B; B is the actual continuation half the time (IsNext, label 0) and a
run of sentences from another document otherwise (NotNext, label 1), and the sentences that
NotNext left unused are put back. Lengths are counted in wordpieces with kbert's tokenizer: the
one ``--vocab`` (with ``--cased``, ``--tokenizer TYPE``) or a model directory (``--model-dir``) names.
What is written is raw text (``text_a``, ``text_b``, ``next_sentence_label``): tokenization,
truncation to ``max_seq_length`` and masking happen in the tf.data pipeline, so masks are
dynamic (new on every epoch) instead of ``dupe_factor`` fixed copies.

Scale: the original keeps every document in one process's memory to draw random ones. Here
documents are spread over ``--num-buckets`` random buckets and NotNext segments are drawn within
a bucket; 1 bucket (the default) is exactly the original, thousands scale out on Dataflow/Flink/Spark.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import zlib

from pipelines import cjk_text
from pipelines.runners import close, counters, pipeline_options, progress

from kbert.errors import DataError, OptionsError

SENTENCE_END = re.compile(r"[.!?][\"'\u201d\u2019)\]]*(\s+)(?=[\"'\u201c\u2018(\[]?[A-Z0-9])")


# -- documents ------------------------------------------------------------------------------------
def split_sentences(text: str) -> list[str]:
    """A light rule-based splitter: ends at . ! ? (plus closing quotes) before a capital or digit."""
    sentences, start = [], 0
    for m in SENTENCE_END.finditer(text):
        sentences.append(text[start:m.start(1)])
        start = m.end(1)
    sentences.append(text[start:])
    return [s.strip() for s in sentences if s.strip()]


def parse_documents(text: str, fmt: str = "sentences", doc_sentences: int = 64,
                    language: str = "en") -> list[list[str]]:
    blocks = re.split(r"\n\s*\n", text.replace("\r\n", "\n"))
    if fmt == "sentences":
        docs = [[line.strip() for line in block.split("\n") if line.strip()] for block in blocks]
        return [d for d in docs if d]
    if fmt != "prose":
        raise OptionsError(f"unknown --format {fmt!r}; expected 'sentences' or 'prose'", option="format", value=fmt)
    docs, current = [], []
    for block in blocks:
        if language == "en":
            current.extend(split_sentences(" ".join(block.split())))
        else:
            current.extend(cjk_text.split_sentences(block, language))
        # Close the document at the first paragraph end past doc_sentences; a text with no
        # paragraph breaks at all is cut every doc_sentences sentences.
        while len(current) >= 2 * doc_sentences:
            docs.append(current[:doc_sentences])
            current = current[doc_sentences:]
        if len(current) >= doc_sentences:
            docs.append(current)
            current = []
    if current:
        docs.append(current)
    return docs


# -- instances (pure Python, the original algorithm) ----------------------------------------------
def create_instances_from_document(all_documents, document_index, max_seq_length, short_seq_prob, rng,
                                   joiner=" "):
    """``all_documents``: lists of (sentence, num_wordpieces). Returns (text_a, text_b, is_random_next).

    ``joiner`` joins a segment's sentences ("" for Japanese and Chinese)."""
    document = all_documents[document_index]
    max_num_tokens = max_seq_length - 3
    target_seq_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_seq_length = rng.randint(2, max_num_tokens)
    instances = []
    current_chunk, current_length, i = [], 0, 0
    while i < len(document):
        segment = document[i]
        current_chunk.append(segment)
        current_length += segment[1]
        if i == len(document) - 1 or current_length >= target_seq_length:
            if current_chunk:
                a_end = rng.randint(1, len(current_chunk) - 1) if len(current_chunk) >= 2 else 1
                a = current_chunk[:a_end]
                b = []
                len_a = sum(n for _, n in a)
                is_random_next = len(current_chunk) == 1 or rng.random() < 0.5
                if is_random_next and len(all_documents) > 1:
                    target_b_length = target_seq_length - len_a
                    for _ in range(10):
                        random_document_index = rng.randint(0, len(all_documents) - 1)
                        if random_document_index != document_index:
                            break
                    random_document = all_documents[random_document_index]
                    random_start = rng.randint(0, len(random_document) - 1)
                    len_b = 0
                    for j in range(random_start, len(random_document)):
                        b.append(random_document[j])
                        len_b += random_document[j][1]
                        if len_b >= target_b_length:
                            break
                    # Put the unused segments back for the next chunk.
                    i -= len(current_chunk) - a_end
                    if random_document_index == document_index:
                        b = []  # 10 draws all hit this document: skip, as an IsNext would be mislabelled
                else:
                    is_random_next = False
                    b = current_chunk[a_end:]
                if a and b:
                    instances.append((joiner.join(s for s, _ in a), joiner.join(s for s, _ in b), is_random_next))
            current_chunk, current_length = [], 0
        i += 1
    return instances


def create_instances(documents, max_seq_length=128, short_seq_prob=0.1, dupe_factor=1, seed=12345, joiner=" "):
    rng = random.Random(seed)
    instances = []
    for _ in range(dupe_factor):
        for index in range(len(documents)):
            instances.extend(
                create_instances_from_document(documents, index, max_seq_length, short_seq_prob, rng, joiner)
            )
    rng.shuffle(instances)
    return instances


def to_example(text_a: str, text_b: str, is_random_next: bool) -> bytes:
    import tensorflow as tf

    feature = {
        "text_a": tf.train.Feature(bytes_list=tf.train.BytesList(value=[text_a.encode("utf-8")])),
        "text_b": tf.train.Feature(bytes_list=tf.train.BytesList(value=[text_b.encode("utf-8")])),
        "next_sentence_label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(is_random_next)])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


# -- the Beam pipeline ----------------------------------------------------------------------------
def build_pipeline(pipeline, args):
    import apache_beam as beam
    from apache_beam.io import fileio
    from apache_beam.metrics import Metrics

    documents_counter = Metrics.counter("pretraining_data", "documents")
    sentences_counter = Metrics.counter("pretraining_data", "sentences")
    instances_counter = Metrics.counter("pretraining_data", "instances")
    not_next_counter = Metrics.counter("pretraining_data", "not_next")

    class ReadDocuments(beam.DoFn):
        def process(self, readable_file):
            path = readable_file.metadata.path
            raw = readable_file.read()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise DataError(path, "UTF-8 text", record=f"byte {e.start}") from None
            text = cjk_text.prepare(text, args.language, args.strip_aozora)
            documents = parse_documents(text, args.format, args.doc_sentences, args.language)
            progress("pretraining_data", f"read {path}: {len(documents)} documents")
            for doc in documents:
                documents_counter.inc()
                yield doc

    from kbert.text.registry import tokenizer_spec_for

    spec, spec_dir = tokenizer_spec_for(args.vocab, cased=args.cased, tokenizer_type=args.tokenizer,
                                        directory=args.model_dir)
    spec_json = spec.to_json()  # plain data for the workers

    class CountWordpieces(beam.DoFn):
        def setup(self):
            from kbert.text import TokenizerSpec, create_tokenizer

            self.tokenizer = create_tokenizer(TokenizerSpec.from_json(spec_json), spec_dir)

        def process(self, document):
            pieces = self.tokenizer.tokenize_flat(self.tokenizer.pre_tokenize(document))
            lengths = pieces.row_lengths().numpy().tolist()
            sentences_counter.inc(len(document))
            # Sentences with no wordpiece at all (punctuation-free blanks) carry nothing.
            yield [(s, int(n)) for s, n in zip(document, lengths) if n > 0]

    def make_instances(keyed):
        bucket, documents = keyed
        documents = sorted((d for d in documents if d), key=lambda d: d[0][0])  # deterministic order
        count = 0
        for text_a, text_b, is_random_next in create_instances(
            documents, args.max_seq_length, args.short_seq_prob, args.dupe_factor, args.seed + bucket,
            joiner=" " if args.language == "en" else "",
        ):
            instances_counter.inc()
            count += 1
            if is_random_next:
                not_next_counter.inc()
            yield to_example(text_a, text_b, is_random_next)
        progress("pretraining_data", f"bucket {bucket}: {len(documents)} documents -> {count} instances")

    num_buckets = args.num_buckets
    seed = args.seed
    _ = (
        pipeline
        | "Match" >> fileio.MatchFiles(args.input, empty_match_treatment=fileio.EmptyMatchTreatment.DISALLOW)
        | "ReadMatches" >> fileio.ReadMatches()
        | "Documents" >> beam.ParDo(ReadDocuments())
        | "Wordpieces" >> beam.ParDo(CountWordpieces())
        # crc32, not hash(): Python's str hash changes from process to process.
        | "Bucket" >> beam.Map(lambda d: (zlib.crc32(f"{seed}:{d[0][0] if d else ''}".encode()) % num_buckets, d))
        | "Group" >> beam.GroupByKey()
        | "Instances" >> beam.FlatMap(make_instances)
        | "Shuffle" >> beam.Reshuffle()
        | "Write" >> beam.io.WriteToTFRecord(args.output, file_name_suffix=".tfrecord", num_shards=args.num_shards)
    )


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", required=True, help="glob of text files")
    parser.add_argument("--output", required=True, help="output prefix (shards: PREFIX-00000-of-0000N.tfrecord)")
    from kbert.cli_support import add_tokenizer_arguments
    from kbert.text.registry import tokenizer_types

    add_tokenizer_arguments(parser, tokenizer_types())  # --vocab (counts wordpieces), --cased, --tokenizer TYPE, --model-dir
    parser.add_argument("--language", choices=cjk_text.LANGUAGES, default="en",
                        help="ja: NFKC and sentences at 。！？; zh: sentences at 。！？；; both join without spaces")
    parser.add_argument("--strip-aozora", action="store_true",
                        help="remove Aozora Bunko markup: 《ruby》, ｜, ［＃notes］, header notes and colophon")
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--short-seq-prob", type=float, default=0.1)
    parser.add_argument("--dupe-factor", type=int, default=1,
                        help="passes over the data (masks are dynamic, so 1 is usually enough)")
    parser.add_argument("--num-shards", type=int, default=4)
    parser.add_argument("--num-buckets", type=int, default=1)
    parser.add_argument("--format", choices=("sentences", "prose"), default="sentences")
    parser.add_argument("--doc-sentences", type=int, default=64)
    parser.add_argument("--seed", type=int, default=12345)
    return parser.parse_known_args(argv)


def run(argv=None):
    import glob as globlib

    import apache_beam as beam

    args, beam_args = parse_args(argv)
    if "://" not in args.input:
        files = globlib.glob(args.input)
        if not files:
            raise FileNotFoundError(f"--input {args.input!r} matches no file")
        if not any(os.path.getsize(f) for f in files if os.path.isfile(f)):
            raise DataError(args.input, "some text (the corpus is empty)", record=f"{len(files)} file(s) matching --input, "
                            "all 0 bytes (or directories)")
    if args.language == "ja" and args.tokenizer == "wordpiece" and not args.cased:
        print("warning: --language ja with a lower-casing WordPiece tokenizer: lower-casing strips the voicing "
              "marks of kana (が -> か, ぱ -> は) when pieces are counted; pass --cased for a cased vocabulary",
              file=sys.stderr)
    if args.max_seq_length < 8:
        raise OptionsError(f"--max-seq-length must be at least 8, got {args.max_seq_length}", option="max_seq_length",
                           value=args.max_seq_length)
    with beam.Pipeline(options=pipeline_options(beam_args)) as pipeline:
        build_pipeline(pipeline, args)
    found = counters(pipeline.result, "pretraining_data")
    close(pipeline.result)
    if found is None:  # a runner without metrics (Dask): the shards are written all the same
        print(f"pretraining_data: written {args.output}-*.tfrecord (this runner reports no counters)")
        return {}
    print("pretraining_data: " + ", ".join(f"{k}={v}" for k, v in sorted(found.items())))
    return found


def main(argv=None) -> int:
    run(argv)
    return 0


if __name__ == "__main__":
    import sys

    from kbert.cli_support import run as run_cli

    sys.exit(run_cli("pipelines.pretraining_data", main))
