"""Checked reading of uncompressed TFRecord files: damage is named by file, record and offset.

Shared by the pre-training input pipeline (``kbert.data.pretraining``) and the task-data reader
(``kbert.data.tfrecord.make_dataset``).

Damaged files. ``tf.data.TFRecordDataset`` reports a truncated or corrupted record as
``DataLossError: corrupted record at 597`` without naming the file. Here every file is read on
its own (``checked_records``): the reader adds up the bytes of the records it returns
(8 + 4 + len + 4 per record, per block of 256) and, where reading stops before the file's size,
raises ``CorruptRecordError`` naming the file, the record number and the byte offset; with
``skip_bad_records`` it logs the same and goes on with the other files (TensorFlow's reader
cannot resynchronise after a bad record, so the rest of that file is skipped). Only
uncompressed TFRecords (what the pipeline writes) are supported. A file cut exactly at a record
boundary is indistinguishable from a shorter one: TFRecord has no footer. Cost: ~2.5x the bare
reader (about 9 us per record on 2 busy cores), small next to tokenization.

Without ``skip_bad_records`` the error surfaces while the dataset is iterated, as TensorFlow's
``InvalidArgumentError``; iterate (or ``model.fit``) inside ``explain_data_errors()`` to get the
``CorruptRecordError``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import re
import sys

import tensorflow as tf

from kbert.errors import DataError

RECORD_OVERHEAD = 16  # uint64 length, its masked CRC32C, then the data's masked CRC32C
_BLOCK = 256  # records per offset update in checked_records
_MARKER = "KBERT_CORRUPT_TFRECORD"
_ASSERT_RE = re.compile(
    _MARKER + r"\] \[(?P<file>.*?)\] \[record\] \[(?P<index>\d+)\] \[byte offset\] \[(?P<offset>\d+)\] "
    r"\[file size\] \[(?P<size>\d+)\]", re.S)


class CorruptRecordError(DataError):
    """A TFRecord file that cannot be read to its end (truncated, bad CRC, unreadable)."""

    def __init__(self, file, index: int, offset: int, size: int):
        super().__init__(file, "intact TFRecord framing and CRCs", record=f"record {index} at byte {offset}")
        self.index, self.offset, self.size = index, offset, size
        self.args = (
            f"{file}: record {index} (byte offset {offset} of {size}) is truncated or corrupted (bad length "
            f"or CRC) or the file could not be read on, so the {size - offset} byte(s) from there on are "
            "lost. Fix or remove the file, or pass --skip-bad-records (skip_bad_records=True) to skip the rest of "
            "such files and go on",
        )


class BadRecordCounter:
    """How many damaged regions (a bad record and the rest of its file) the readers skipped.

    One int64 variable on the host CPU, created outside any distribution strategy scope; the
    tf.data functions of ``read_files(..., skip_bad_records=True)`` (and of the pre-training and
    task-data readers built on it) add to it.
    """

    def __init__(self):
        with tf.init_scope(), tf.device("/cpu:0"):
            self.variable = tf.Variable(0, dtype=tf.int64, trainable=False, name="skipped_bad_records")

    @property
    def count(self) -> int:
        return int(self.variable.numpy())


def _sizes(files) -> list[int]:
    def stat(f):
        info = tf.io.gfile.stat(f)
        if info.is_directory:
            raise DataError(f, "a TFRecord file, not a directory")
        return info.length

    if len(files) == 1 or all("://" not in f for f in files):
        return [stat(f) for f in files]
    with concurrent.futures.ThreadPoolExecutor(16) as pool:  # remote file systems: one request each
        return list(pool.map(stat, files))


def list_files_and_sizes(file_pattern, what: str = "TFRecord") -> tuple[list[str], list[int]]:
    """The files matching ``file_pattern`` (a glob or a list of globs) and their sizes in bytes.

    Nothing matching, a directory, or only empty files are errors, raised before any work;
    ``what`` names the data in them (e.g. "pre-training").
    """
    patterns = [file_pattern] if isinstance(file_pattern, str) else list(file_pattern)
    files = sorted({f for p in patterns for f in tf.io.gfile.glob(p)})
    if not files:
        raise FileNotFoundError(f"no {what} files match {', '.join(patterns)}")
    sizes = _sizes(files)
    if not any(sizes):
        shown = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
        raise DataError(", ".join(patterns), f"at least one non-empty file of {what} records",
                        record=f"{len(files)} matching file(s), all empty (0 bytes): {shown}")
    return files, sizes


def checked_records(filename, size, skip_bad_records: bool = False, counter: BadRecordCounter | None = None):
    """The records of one uncompressed TFRecord file; damage is reported with file and offset.

    ``filename`` and ``size`` may be tensors (inside ``interleave``). Without
    ``skip_bad_records`` a damaged file fails the pipeline with an error that
    ``explain_data_errors`` turns into ``CorruptRecordError``; with it, a line goes to stderr
    and ``counter`` counts the skip.
    """
    size = tf.cast(size, tf.int64)
    # ignore_errors: TensorFlow's reader gives up on the file at its first bad record. Offsets are
    # tracked per block of records (per record, the scan would cost ~100x the reading), and a final
    # empty block marks where the readable part ended.
    blocks = tf.data.TFRecordDataset(filename).ignore_errors().batch(_BLOCK).map(lambda b: (b, False))
    marked = blocks.concatenate(tf.data.Dataset.from_tensors((tf.constant([], tf.string), True)))

    def report(index, offset):
        if skip_bad_records:
            deps, count = [], []
            if counter is not None:
                number = counter.variable.assign_add(1)
                deps, count = [number], ["Skipped so far:", number]
            with tf.control_dependencies(deps):
                done = tf.print(
                    "kbert: skipping damaged TFRecord data in", filename, ": record", index, "at byte offset",
                    offset, "of", size, "is truncated or corrupted; skipped the rest of the file,",
                    size - offset, "bytes.", *count, output_stream=sys.stderr)
        else:
            done = tf.debugging.Assert(False, [_MARKER, filename, "record", index, "byte offset", offset,
                                               "file size", size])
        with tf.control_dependencies([done]):
            return tf.constant(True)

    def track(state, element):
        offset, index = state
        block, is_end = element
        damaged = tf.logical_and(is_end, tf.not_equal(offset, size))
        reported = tf.cond(damaged, lambda: report(index, offset), lambda: tf.constant(False))
        count = tf.size(block, out_type=tf.int64)
        with tf.control_dependencies([reported]):
            offset = offset + tf.reduce_sum(tf.cast(tf.strings.length(block), tf.int64)) + RECORD_OVERHEAD * count
        return (offset, index + count), (block, is_end)

    zero = tf.constant(0, tf.int64)
    return (marked.scan((zero, zero), track)
            .filter(lambda block, is_end: tf.logical_not(is_end))
            .map(lambda block, is_end: block)
            .unbatch())


@contextlib.contextmanager
def explain_data_errors():
    """Turns the pipeline's damaged-file errors into ``CorruptRecordError`` (file, record, offset)."""
    try:
        yield
    except tf.errors.InvalidArgumentError as e:
        match = _ASSERT_RE.search(str(e.message if hasattr(e, "message") else e))
        if not match:
            raise
        raise CorruptRecordError(match["file"], int(match["index"]), int(match["offset"]), int(match["size"])) from None


def read_files(files, sizes, *, shuffle_files: bool = False, repeat: bool = False, seed: int | None = None,
               deterministic: bool = True, skip_bad_records: bool = False,
               bad_record_counter: BadRecordCounter | None = None) -> tf.data.Dataset:
    """The serialized records of ``files`` (sizes from ``list_files_and_sizes``), read with
    ``checked_records``, up to 8 files interleaved; ``shuffle_files``/``repeat`` act on the file
    order, before the files are read."""
    ds = tf.data.Dataset.from_tensor_slices((list(files), tf.constant(list(sizes), tf.int64)))
    if shuffle_files:
        ds = ds.shuffle(len(files), seed=seed)
    if repeat:
        ds = ds.repeat()
    return ds.interleave(
        lambda f, size: checked_records(f, size, skip_bad_records, bad_record_counter),
        cycle_length=min(len(files), 8),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=deterministic,
    )
