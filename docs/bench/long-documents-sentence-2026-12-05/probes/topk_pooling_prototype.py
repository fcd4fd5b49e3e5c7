"""Scratch (stopped after 2 of 4 epochs, see ../README.md): document-level training with top-k (WILDCAT-style) pooling of per-token logits over a document's windows."""
import json, sys, time, numpy as np, keras, tensorflow as tf
from kbert.tasks.classification.model import TextClassifier
from kbert.tasks.classification.window_inputs import document_batches, WINDOW_DOCUMENT, DOCUMENT_MASK
from kbert.training.optimization import create_optimizer
K, ALPHA, MAXW = int(sys.argv[4]), float(sys.argv[5]), 8

class TopKDocs(TextClassifier):
    def doc_logits(self, packed, document, num_documents, training=None):
        out = self.encode(packed, training=training)
        seq, mask = out["sequence_output"], tf.cast(out["input_mask"], tf.bool)    # [W,T,H], [W,T]
        logits = self.head(seq, training=training)                                  # [W,T,C]
        W = tf.shape(seq)[0]; T = tf.shape(seq)[1]; C = tf.shape(logits)[-1]
        first = tf.math.unsorted_segment_min(tf.range(W), document, num_documents)
        slot = tf.range(W) - tf.gather(first, document)
        idx = tf.stack([document, slot], 1)
        big = 1e9
        hi = tf.where(mask[..., None], logits, -big); lo = tf.where(mask[..., None], logits, big)
        dense_hi = tf.scatter_nd(idx, hi + big, [num_documents, MAXW, T, C]) - big   # empty slots: -big
        dense_lo = tf.scatter_nd(idx, lo - big, [num_documents, MAXW, T, C]) + big
        dh = tf.transpose(tf.reshape(dense_hi, [num_documents, -1, C]), [0, 2, 1])
        dl = tf.transpose(tf.reshape(dense_lo, [num_documents, -1, C]), [0, 2, 1])
        top = tf.reduce_mean(tf.math.top_k(dh, K).values, -1)
        bot = -tf.reduce_mean(tf.math.top_k(-dl, K).values, -1)
        return top + ALPHA * bot
    def call(self, inputs, training=None):
        if isinstance(inputs, dict) and WINDOW_DOCUMENT in inputs:
            packed = {k: v for k, v in inputs.items() if k not in (WINDOW_DOCUMENT, DOCUMENT_MASK)}
            return self.doc_logits(packed, inputs[WINDOW_DOCUMENT], tf.shape(inputs[DOCUMENT_MASK])[0], training)
        return super().call(inputs, training)

def load(path):
    rows = [json.loads(l) for l in open(path)]
    return np.array([r["text"] for r in rows], dtype=object), np.array([int(r["label"]) for r in rows])

keras.utils.set_random_seed(int(sys.argv[3]))
lr, batch, epochs = float(sys.argv[1]), int(sys.argv[2]), 4
m = TopKDocs.from_model_dir("/tmp/lda/minilm", num_classes=2, seq_length=128, long_documents="windows", doc_stride=64, load_head=False)
xt, yt = load("/tmp/lda/train.jsonl"); xe, ye = load("/tmp/lda/eval.jsonl")
pt, dt = m.window_ids(xt); pe, de = m.window_ids(xe)
ds = document_batches(pt, dt, yt, batch_size=batch, seed=int(sys.argv[3]))
steps = int(ds.cardinality()) * epochs
m.compile(create_optimizer(lr, steps, int(0.1 * steps)))
eds = document_batches(pe, de, ye, batch_size=32, shuffle=False)
for epoch in range(epochs):
    t = time.time(); h = m.fit(ds, epochs=1, verbose=0)
    preds = np.concatenate([m(x, training=False).numpy() for x, _ in eds]).argmax(-1)
    print(epoch + 1, "train", round(h.history["accuracy"][-1], 3), "eval", round((preds == ye).mean(), 4), round(time.time() - t), flush=True)
