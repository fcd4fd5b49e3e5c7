"""The int8 variants of docs/bench/onnx-2026-12-05/README.md: ONNX Runtime's dynamic quantization of a
``kbert export onnx`` folder of an SST-2 classifier, in several settings, each run over SST-2 dev through the
export's tokenizer.json (batches of 64); the labels' agreement with model.onnx and the largest probability
difference.

    python docs/bench/onnx-2026-12-05/int8_variants.py EXPORT_DIR ../shared/data/glue/SST-2/dev.tsv
"""

import csv
import logging
import sys

import numpy as np
import onnx
import onnxruntime as ort
import tokenizers
from onnxruntime.quantization import QuantType, quantize_dynamic

VARIANTS = {"default": {}, "per_channel": dict(per_channel=True), "matmul_only": dict(op_types_to_quantize=["MatMul"]),
            "matmul_attention_pc": dict(op_types_to_quantize=["MatMul", "Attention"], per_channel=True),
            "matmul_only_pc": dict(op_types_to_quantize=["MatMul"], per_channel=True)}


def probabilities(path, tokenizer, texts):
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    out = []
    for start in range(0, len(texts), 64):
        encodings = tokenizer.encode_batch(texts[start:start + 64])
        feeds = {name: np.array([getattr(e, field) for e in encodings], np.int32) for name, field in (
            ("input_word_ids", "ids"), ("input_mask", "attention_mask"), ("input_type_ids", "type_ids"))}
        out.append(session.run(["probabilities"], feeds)[0])
    return np.concatenate(out)


def main(export, dev):
    logging.disable(logging.WARNING)
    tokenizer = tokenizers.Tokenizer.from_file(f"{export}/tokenizer.json")
    with open(dev, encoding="utf-8") as f:
        texts = [row["sentence"] for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]
    reference = probabilities(f"{export}/model.onnx", tokenizer, texts)
    for name, options in VARIANTS.items():
        path = f"{export}/int8-{name}.onnx"
        quantize_dynamic(f"{export}/model.onnx", path, weight_type=QuantType.QInt8,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT}, **options)
        p = probabilities(path, tokenizer, texts)
        print(f"{name}: labels agree {(p.argmax(1) == reference.argmax(1)).mean():.4f}, "
              f"largest |p - p_float| {np.abs(p - reference).max():.3g}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
