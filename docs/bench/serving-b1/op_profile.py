import sys, time, collections
import tensorflow as tf
import numpy as np
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2
from kbert.config import BertConfig
from kbert.models.encoder import BertEncoder
ids = tf.constant(np.random.randint(1000, 2000, (1, 128)), tf.int32)
inp = {"input_word_ids": ids, "input_mask": tf.ones_like(ids), "input_type_ids": tf.zeros_like(ids)}
cfg = BertConfig(vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536)
enc = BertEncoder(cfg); enc(inp)
f = tf.function(lambda d: enc(d, training=False)["sequence_output"])
cf = convert_variables_to_constants_v2(f.get_concrete_function({k: tf.TensorSpec([None, None], tf.int32, name=k) for k in inp}))
gd = cf.graph.as_graph_def()
g = tf.Graph()
with g.as_default():
    tf.graph_util.import_graph_def(gd, name="")
cfgp = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=2, inter_op_parallelism_threads=1)
with tf.compat.v1.Session(graph=g, config=cfgp) as s:
    names = [t.name for t in cf.inputs]
    print(names, [t.name for t in cf.outputs])
    feed = {n: ids.numpy() if "word" in n else (np.ones((1,128),np.int32) if "mask" in n else np.zeros((1,128),np.int32)) for n in names}
    out = cf.outputs[0].name
    for _ in range(20): s.run(out, feed)
    t = time.perf_counter()
    for _ in range(50): s.run(out, feed)
    print("session p-mean ms", (time.perf_counter() - t) / 50 * 1000)
    tot = collections.Counter(); cnt = collections.Counter()
    for _ in range(10):
        md = tf.compat.v1.RunMetadata()
        s.run(out, feed, options=tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE), run_metadata=md)
        for dev in md.step_stats.dev_stats:
            for n in dev.node_stats:
                op = n.timeline_label.split("(")[0].split("=")[-1].strip() if n.timeline_label else n.node_name
                kind = n.timeline_label.split(" = ")[1].split("(")[0] if " = " in n.timeline_label else "?"
                tot[kind] += n.all_end_rel_micros; cnt[kind] += 1
    for k, v in tot.most_common(25): print(f"{k:40s} {v/10/1000:7.2f} ms  n={cnt[k]//10}")
    print("sum", sum(tot.values())/10/1000)
