"""Apache Beam: a task's files (GLUE / SQuAD / CoNLL-2003 / SWAG / CSV-TSV-JSONL) -> sharded
TFRecords of raw text.

    python -m pipelines.task_data --task glue/sst2 --data-dir glue_data/SST-2 --split train \
        --output out/sst2-train [--num-shards 4] [Beam options, e.g. --runner DataflowRunner]
    python -m pipelines.task_data --task squad/v1.1 --data-dir squad --split dev --output out/squad-dev
    python -m pipelines.task_data --task table --input reviews.csv --text-columns title,body \
        --label-column stars --output out/reviews

Tasks: glue/<cola|sst2|mrpc|stsb|qqp|mnli|qnli|rte|wnli|ax>, squad/v1.1, squad/v2.0, conll2003,
swag, table. --data-dir is the task's own folder (as run_classifier.py's --data_dir); --input
names the file directly instead. The file is read with the kbert.data readers (a malformed row
fails the pipeline with a DataError naming the file and line), each example becomes a
tf.train.Example in the layout of kbert.data.tfrecord (read back with
kbert.data.tfrecord.make_dataset(PREFIX + "-*", kind)), and the shards are
PREFIX-00000-of-0000K.tfrecord. PREFIX.meta.json records the task, split, kind, label names,
metric names and the record count (also the Beam counter task_data/records).
"""

from __future__ import annotations

import argparse
import json

from pipelines.runners import close, counters, pipeline_options, progress


def build_pipeline(pipeline, spec, output: str, num_shards: int):
    import apache_beam as beam
    from apache_beam.io import fileio
    from apache_beam.metrics import Metrics

    records = Metrics.counter("task_data", "records")
    kind, read = spec.kind, spec.read

    class ReadExamples(beam.DoFn):
        def process(self, readable_file):
            # The bytes come through Beam's file systems (local, gs://, ...); the path only names
            # the file in errors.
            data = read(readable_file.metadata.path, data=readable_file.read())
            progress("task_data", f"read {readable_file.metadata.path}: {len(data.examples)} examples")
            yield from data.examples

    def encode(example):
        from kbert.data.tfrecord import encode_example

        records.inc()
        return encode_example(kind, example).SerializeToString()

    _ = (
        pipeline
        | "Match" >> fileio.MatchFiles(spec.path,
                                       empty_match_treatment=fileio.EmptyMatchTreatment.DISALLOW)
        | "ReadMatches" >> fileio.ReadMatches()
        | "Examples" >> beam.ParDo(ReadExamples())
        | "Reshuffle" >> beam.Reshuffle()  # spread the examples of one file over the workers
        | "Encode" >> beam.Map(encode)
        | "Write" >> beam.io.WriteToTFRecord(output, file_name_suffix=".tfrecord",
                                             num_shards=num_shards)
    )


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", required=True, help="glue/<task>, squad/v1.1, squad/v2.0, "
                        "conll2003, swag or table")
    parser.add_argument("--data-dir", help="folder with the task's files")
    parser.add_argument("--split", default="train", help="train, dev, test (MNLI: dev_matched, ...)")
    parser.add_argument("--input", help="the file to read (instead of --data-dir/--split's file)")
    parser.add_argument("--output", required=True,
                        help="output prefix (shards: PREFIX-00000-of-0000K.tfrecord)")
    parser.add_argument("--num-shards", type=int, default=1,
                        help="number of shards (0: let the runner decide)")
    parser.add_argument("--text-columns", help="table: comma-separated text column(s)")
    parser.add_argument("--label-column", help="table: label column (omit for unlabelled data)")
    parser.add_argument("--label-names", help="table: comma-separated label vocabulary "
                        "(default: the sorted distinct labels)")
    parser.add_argument("--regression", action="store_true", help="table: float labels")
    return parser.parse_known_args(argv)


def run(argv=None) -> dict:
    """Runs the pipeline; returns the metadata written to PREFIX.meta.json."""
    import apache_beam as beam
    from apache_beam.io.filesystems import FileSystems

    from kbert.tasks.core.task_files import resolve_task

    args, beam_args = parse_args(argv)
    split_list = lambda s: [c for c in s.split(",") if c] if s else None  # noqa: E731
    spec = resolve_task(args.task, args.data_dir, args.split, input_path=args.input,
                        text_columns=split_list(args.text_columns), label_column=args.label_column,
                        label_names=split_list(args.label_names), regression=args.regression)
    if "://" not in spec.path:
        # Fail fast, and learn the label names, before starting the pipeline. A remote file is
        # only read by the workers.
        data = spec.read(spec.path)
        label_names, left_out = data.label_names, data.meta.get("left_out", [])
    else:
        label_names, left_out = None, []
    with beam.Pipeline(options=pipeline_options(beam_args)) as pipeline:
        build_pipeline(pipeline, spec, args.output, args.num_shards)
    found = counters(pipeline.result, "task_data")
    close(pipeline.result)
    # A runner without metrics (Dask): count what was written.
    count = found.get("records", 0) if found is not None else count_records(args.output + "-*.tfrecord")
    meta = {"task": args.task, "split": args.split, "source": spec.path, "kind": spec.kind,
            "label_names": list(label_names) if label_names is not None else None,
            "metrics": list(spec.metrics), "records": count}
    if left_out:  # rows the reader reads without (MNLI's no-consensus "-" rows), named
        meta["left_out"] = left_out
        print(f"task_data: {args.task} {args.split}: {len(left_out)} rows left out (no-consensus label): "
              f"{', '.join(left_out[:5])}{', ...' if len(left_out) > 5 else ''}")
    with FileSystems.create(args.output + ".meta.json") as f:
        f.write(json.dumps(meta, indent=2, ensure_ascii=False).encode("utf-8"))
    print(f"task_data: {args.task} {args.split}: {count} records -> {args.output}-*.tfrecord")
    return meta


def count_records(pattern: str) -> int:
    import tensorflow as tf

    files = sorted(tf.io.gfile.glob(pattern))
    return int(tf.data.TFRecordDataset(files).reduce(0, lambda n, _: n + 1)) if files else 0


def main(argv=None) -> int:
    run(argv)
    return 0


if __name__ == "__main__":
    import sys

    from kbert.cli_support import run as run_cli

    sys.exit(run_cli("pipelines.task_data", main))
