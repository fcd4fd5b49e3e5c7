import time, statistics, os
import numpy as np
import tensorflow as tf
tf.config.threading.set_intra_op_parallelism_threads(2); tf.config.threading.set_inter_op_parallelism_threads(1)
rng = np.random.default_rng(0)
for k, n in [(384, 384), (384, 1152), (384, 1536), (1536, 384)]:
    a = rng.standard_normal((128, k)).astype("float32"); b = rng.standard_normal((k, n)).astype("float32")
    A, B = tf.constant(a), tf.Variable(b)
    reps = 20
    f = tf.function(lambda x: tf.reduce_sum([tf.reduce_sum(tf.matmul(x + float(i), B)) for i in range(reps)]))
    for _ in range(5): f(A).numpy()
    ts = []
    for _ in range(30):
        t = time.perf_counter(); f(A).numpy(); ts.append((time.perf_counter() - t) * 1000 / reps)
    tn = []
    for _ in range(200):
        t = time.perf_counter(); a @ b; tn.append((time.perf_counter() - t) * 1000)
    fl = 2 * 128 * k * n / 1e6
    print(f"[128,{k}]x[{k},{n}] {fl:.0f} MFLOP: tf {statistics.median(ts):.3f} ms  numpy {statistics.median(tn):.3f} ms")
