"""Task data: readers for GLUE, SQuAD, CoNLL-2003, SWAG and generic CSV/TSV/JSONL files, and the
TFRecord format that pipelines/task_data.py writes.

Modules (import the one you need; this package imports nothing so that the pure-Python readers do
not pull in TensorFlow):
  kbert.data.examples  TaskData, the common return type of every reader
  kbert.data.textio    byte/UTF-8/line/row helpers that raise kbert.errors.DataError
  kbert.data.glue      GLUE distribution files and the TASKS registry
  kbert.data.squad     SQuAD v1.1 / v2.0 JSON (also KorQuAD 1.0, CMRC 2018)
  kbert.data.klue      KLUE NLI / STS JSON lists and the character-per-line NER TSV
  kbert.data.conll     CoNLL-2003 style token-per-line NER files
  kbert.data.swag      SWAG CSV files
  kbert.data.table     generic CSV / TSV / JSONL with named text and label columns
  kbert.data.tfrecord  tf.train.Example encoders, feature specs and the tf.data reader
  kbert.data.records   checked TFRecord reading (damage named by file and record; optional skip),
                       shared by the task-data reader and kbert.data.pretraining
"""
