"""Scratch: document-level training with attention pooling over every token of a document's windows."""
import json, sys, time, numpy as np, keras, tensorflow as tf
from keras import ops
from kbert.tasks.classification.model import TextClassifier
from kbert.tasks.classification.window_inputs import document_batches, WINDOW_DOCUMENT, DOCUMENT_MASK
from kbert.training.optimization import create_optimizer

class AttentionDocs(TextClassifier):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.score = keras.layers.Dense(1, name="token_score")
        self.score.build((None, self.encoder.config.hidden_size))
    def doc_logits(self, packed, document, num_documents, training=None):
        out = self.encode(packed, training=training)
        seq, mask = out["sequence_output"], ops.cast(out["input_mask"], "float32")   # [W,T,H], [W,T]
        W, T = ops.shape(seq)[0], ops.shape(seq)[1]
        s = ops.squeeze(self.score(seq), -1) + (mask - 1.0) * 1e9               # [W,T]
        tok_doc = ops.reshape(ops.repeat(ops.expand_dims(document, 1), T, axis=1), [-1])
        s = ops.reshape(s, [-1]); h = ops.reshape(seq, [-1, ops.shape(seq)[-1]])
        top = ops.segment_max(s, tok_doc, num_segments=num_documents)
        e = ops.exp(s - ops.take(top, ops.maximum(tok_doc, 0)))
        z = ops.segment_sum(e, tok_doc, num_segments=num_documents)
        a = e / ops.take(ops.maximum(z, 1e-30), ops.maximum(tok_doc, 0))
        pooled = ops.segment_sum(h * a[:, None], tok_doc, num_segments=num_documents)  # [D,H]
        return self.head(pooled, training=training)
    def call(self, inputs, training=None):
        if isinstance(inputs, dict) and WINDOW_DOCUMENT in inputs:
            packed = {k: v for k, v in inputs.items() if k not in (WINDOW_DOCUMENT, DOCUMENT_MASK)}
            return self.doc_logits(packed, inputs[WINDOW_DOCUMENT], ops.shape(inputs[DOCUMENT_MASK])[0], training)
        return super().call(inputs, training)

def load(path):
    rows = [json.loads(l) for l in open(path)]
    return np.array([r["text"] for r in rows], dtype=object), np.array([int(r["label"]) for r in rows])

keras.utils.set_random_seed(int(sys.argv[3]) if len(sys.argv) > 3 else 0)
lr, batch, epochs = float(sys.argv[1]), int(sys.argv[2]), 4
m = AttentionDocs.from_model_dir("/tmp/ldb/minilm", num_classes=2, seq_length=128, long_documents="windows", doc_stride=64, load_head=False)
xt, yt = load("/tmp/ldb/train.jsonl"); xe, ye = load("/tmp/ldb/eval.jsonl")
pt, dt = m.window_ids(xt); pe, de = m.window_ids(xe)
ds = document_batches(pt, dt, yt, batch_size=batch, seed=0)
steps = int(ds.cardinality()) * epochs
m.compile(create_optimizer(lr, steps, int(0.1 * steps)))
eds = document_batches(pe, de, ye, batch_size=32, shuffle=False)
for epoch in range(epochs):
    t = time.time(); h = m.fit(ds, epochs=1, verbose=0)
    preds = np.concatenate([m(x, training=False).numpy() for x, _ in eds]).argmax(-1)
    print(epoch + 1, "train", round(h.history["accuracy"][-1], 3), "eval", round((preds == ye).mean(), 4), round(time.time() - t), flush=True)
