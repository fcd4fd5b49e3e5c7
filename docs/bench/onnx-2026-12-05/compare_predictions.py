# The three predictions files of docs/bench/onnx-2026-12-05/sst2-minilm-int8.txt (kbert predict without
# --onnx, with the export folder, with its model.int8.onnx) against each other and against SST-2 dev's labels.
import csv, json
rows = {a: [json.loads(l) for l in open(f"/tmp/ox/real-{a}.jsonl")] for a in ("keras", "onnx", "int8")}
gold = [r["label"] for r in csv.DictReader(open("/work/shared/data/glue/SST-2/dev.tsv"), delimiter="\t", quoting=csv.QUOTE_NONE)]
for a in ("onnx", "int8"):
    same = sum(x["label"] == y["label"] for x, y in zip(rows["keras"], rows[a]))
    d = max(abs(x["probabilities"]["positive"] - y["probabilities"]["positive"]) for x, y in zip(rows["keras"], rows[a]))
    print(f"{a}: labels equal to Keras' {same}/{len(rows[a])}, largest |p - p_keras| {d:.3g}")
for a in rows:
    print(f"{a}: dev accuracy {sum(r['label'] == ['negative', 'positive'][int(g)] for r, g in zip(rows[a], gold)) / len(gold):.4f}")
