"""Apache Beam pipelines: corpora and task datasets -> TFRecords of raw text."""
