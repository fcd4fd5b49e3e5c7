"""ONNX exports (``kbert export onnx``): the graph written from kbert's weights (``graph``,
``encoder``, ``heads``, ``task_graph``), the exact-or-refused tokenizer.json (``tokenizer_json``),
the export folder (``export``) and running it in ONNX Runtime (``runtime``). Needs the onnx extra."""
