"""klue/*, korquad/v1.0 and cmrc2018 end to end on tiny models: fine-tuning from the shared files, the
metrics of eval_results.json equal the ones recomputed from the prediction files and the gold files,
kbert predict writes the official forms (one tag per character; answers cut from their contexts)."""

import json
import math

import numpy as np
import pytest

from conftest import CHINESE_VOCAB, SHARED
from kbert.errors import DataError
from kbert.tasks.span_qa import metrics_cjk
from kbert.tasks.tagging import klue as klue_tagging
from kbert.tasks.tagging.char_tagging import to_char_tags

KLUE = SHARED / "klue"
NER_FILE = KLUE / "klue-ner-v1.1" / "klue-ner-v1.1_dev.tsv"
NLI_FILE = KLUE / "klue-nli-v1.1" / "klue-nli-v1.1_dev.json"
STS_FILE = KLUE / "klue-sts-v1.1" / "klue-sts-v1.1_dev.json"
CMRC_FILE = SHARED / "cmrc2018" / "cmrc2018_trial.json"
CMRC_DEV_FILE = SHARED / "cmrc2018" / "cmrc2018_dev_articles_760-847.json"
KORQUAD_FILE = SHARED / "korquad" / "KorQuAD_v1.0_dev.json"


# ---------------------------------------------------------------- pieces -> characters (fast)


def test_char_tags_from_piece_tags_by_hand():
    text = "김철수 씨는"
    # pieces: 김 (0,1) ##철수 (1,3) 씨 (4,5) ##는 (5,6); the space (3) is in no piece
    tags = to_char_tags(["B-PS", "I-PS", "O", "O"], [(0, 1), (1, 3), (4, 5), (5, 6)], len(text))
    assert tags == ["B-PS", "I-PS", "I-PS", "O", "O", "O"]
    # a piece's later characters continue its entity; two pieces of one character (jamo): the first counts
    assert to_char_tags(["B-LC", "O"], [(0, 2), (0, 2)], 3) == ["B-LC", "I-LC", "O"]
    assert to_char_tags(["B-DT", "I-OG"], [(1, 2), (1, 2)], 2) == ["O", "B-DT"]


def test_char_features_on_hangul_jamo(tiny_model_dir):
    """An uncased model decomposes Hangul into jamo (several pieces per syllable): every piece maps
    back to its syllable, only the first piece of a character is labelled, and predictions come back
    one per character, spaces included."""
    from kbert.data.klue import NER_LABELS
    from kbert.tasks.tagging.char_tagging import char_features
    from kbert.tasks.tagging.ner_alignment import IGNORE_INDEX
    from kbert.tasks.tagging.model import TokenTagger

    model = TokenTagger.from_model_dir(tiny_model_dir, label_names=list(NER_LABELS), seq_length=64, load_head=False)
    text = "B 씨는 서울"
    tags = ["B-PS", "O", "O", "O", "O", "B-LC", "I-LC"]
    inputs, labels, spans = char_features(model, [text], [tags], NER_LABELS)
    starts = [s for s, _ in spans[0]]
    assert len(starts) > len(text) - 2  # jamo: more pieces than non-space characters
    assert all(text[s:e].strip() for s, e in spans[0]) and all(e - s == 1 for s, e in spans[0])
    first = [j for j, s in enumerate(starts) if j == 0 or s != starts[j - 1]]
    row = labels[0, 1:1 + len(starts)]
    assert [NER_LABELS[row[j]] for j in first] == [tags[starts[j]] for j in first]
    assert all(row[j] == IGNORE_INDEX for j in range(len(starts)) if j not in first)
    assert inputs["input_mask"][0].sum() == len(starts) + 2


# ---------------------------------------------------------------- end to end (slow)


def _finetune(init, model_dir, task, **kwargs):
    from kbert.tasks.core.options import FinetuneOptions, RowsOptions
    from kbert.training.finetune import finetune

    rows = {k: kwargs.pop(k) for k in ("train_rows", "eval_rows") if k in kwargs}
    if rows:  # the KLUE tasks' own options
        kwargs["named_options"] = RowsOptions(**rows)
    return finetune(FinetuneOptions(task=task, init=str(init), model_dir=str(model_dir), epochs=1, batch_size=8,
                                    learning_rate=1e-3, **kwargs), progress_bar=False)


def _jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _same(reported, recomputed):
    assert round(reported, 2) == pytest.approx(round(recomputed, 2), abs=0.01)


@pytest.mark.slow
def test_klue_nli_and_sts(tiny_model_dir, tmp_path):
    from kbert.tasks.core.predict import predict_file

    raw = json.loads(NLI_FILE.read_text(encoding="utf-8"))
    result = _finetune(tiny_model_dir, tmp_path / "nli", "klue/nli", train_file=str(NLI_FILE), eval_file=str(NLI_FILE),
                       train_rows=":48", eval_rows="1970:", seq_length=64)
    rows = _jsonl(tmp_path / "nli" / "predictions.jsonl")
    gold = {r["guid"]: r["gold_label"] for r in raw[1970:]}
    assert [r["guid"] for r in rows] == list(gold)
    _same(result["best"]["accuracy"], sum(r["label"] == gold[r["guid"]] for r in rows) / len(rows))
    # kbert predict on an official file of those rows: the same rows, guid and label
    unlabelled = tmp_path / "nli_rows.json"
    unlabelled.write_text(json.dumps([{k: v for k, v in r.items() if k != "gold_label"} for r in raw[1970:]],
                                     ensure_ascii=False), encoding="utf-8")
    predict_file(tmp_path / "nli", unlabelled, tmp_path / "nli_predicted.jsonl")
    assert _jsonl(tmp_path / "nli_predicted.jsonl") == rows

    raw = json.loads(STS_FILE.read_text(encoding="utf-8"))
    result = _finetune(tiny_model_dir, tmp_path / "sts", "klue/sts", train_file=str(STS_FILE), eval_file=str(STS_FILE),
                       train_rows=":48", eval_rows="310:", seq_length=64)
    rows = _jsonl(tmp_path / "sts" / "predictions.jsonl")
    scores = np.array([r["score"] for r in rows])
    assert ((scores >= 0) & (scores <= 5)).all()
    labels = np.array([r["labels"]["label"] for r in raw[310:]])
    binary = np.array([r["labels"]["binary-label"] for r in raw[310:]])
    _same(result["best"]["pearson"], np.corrcoef(scores, labels)[0, 1])
    tp = int(((scores >= 3) & (binary == 1)).sum())
    fp, fn = int(((scores >= 3) & (binary == 0)).sum()), int(((scores < 3) & (binary == 1)).sum())
    _same(result["best"]["f1"], 0.0 if tp == 0 else 100 * 2 * tp / (2 * tp + fp + fn))
    assert set(result["best"]) >= {"pearson", "f1"}


@pytest.mark.slow
def test_klue_ner(tiny_model_dir, tmp_path):
    from kbert.data.klue import NER_LABELS, read_ner
    from kbert.tasks.core.predict import predict_file

    result = _finetune(tiny_model_dir, tmp_path / "ner", "klue/ner", train_file=str(NER_FILE), eval_file=str(NER_FILE),
                       train_rows=":48", eval_rows="3480:", seq_length=64)
    rows = _jsonl(tmp_path / "ner" / "predictions.jsonl")
    gold = read_ner(NER_FILE).examples[3480:]
    assert [r["guid"] for r in rows] == [e["id"] for e in gold]
    # one tag per character, spaces included, also for sentences longer than the 64-piece window
    assert [len(r["tags"]) for r in rows] == [len(e["text"]) for e in gold]
    assert max(len(e["text"]) for e in gold) > 62
    predicted, truth = [r["tags"] for r in rows], [e["tags"] for e in gold]
    _same(result["best"]["entity_macro_f1"], klue_tagging.klue_ner_entity_macro_f1(predicted, truth))
    _same(result["best"]["char_macro_f1"], klue_tagging.klue_ner_char_macro_f1(predicted, truth, NER_LABELS))
    # kbert predict on the official TSV of those sentences writes the same rows
    lines = NER_FILE.read_text(encoding="utf-8").split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(f"## {gold[0]['id']}\t"))
    part = tmp_path / "ner_rows.tsv"
    part.write_text("\n".join(lines[start:]), encoding="utf-8")
    predict_file(tmp_path / "ner", part, tmp_path / "ner_predicted.jsonl")
    assert _jsonl(tmp_path / "ner_predicted.jsonl") == rows
    # a line without a tab: an error naming the file and the line, and no output file
    bad = tmp_path / "ner_bad.tsv"
    bad.write_text("\n".join(lines[start:start + 3]) + "\nX O\n", encoding="utf-8")
    with pytest.raises(DataError) as e:
        predict_file(tmp_path / "ner", bad, tmp_path / "ner_bad.jsonl")
    assert e.value.line == 4 and e.value.field == "tab" and str(bad) in str(e.value)
    assert not (tmp_path / "ner_bad.jsonl").exists()


@pytest.mark.slow
def test_klue_ner_export_tags_every_character_as_predict_does(tiny_model_dir, tmp_path):
    """kbert export task of a klue/ner model: serving_default answers a tag per character, the tags
    kbert predict writes. The head is random (a 48-row fine-tune tags nearly everything O, which any
    rule would match), so pieces of one word, jamo of one syllable and spaces get different tags."""
    import keras
    import tensorflow as tf

    from kbert.data.klue import NER_LABELS, read_ner
    from kbert.export.task import export_task
    from kbert.tasks.tagging.char_tagging import predict_char_tags
    from kbert.tasks.tagging.model import TokenTagger

    keras.utils.set_random_seed(0)
    model = TokenTagger.from_model_dir(tiny_model_dir, label_names=list(NER_LABELS), seq_length=32,
                                       fill_label=NER_LABELS.index("O"), load_head=False)
    for w in model.head.weights:
        w.assign(np.random.default_rng(1).normal(0, 0.5, w.shape).astype("float32"))
    model.save_model_dir(tmp_path / "ner", extra_info={"task_name": "klue/ner"})
    # real sentences (one longer than the 30 pieces a row holds), Hangul decomposed into jamo by the
    # uncased vocabulary, an empty one and mixed scripts
    texts = [e["text"] for e in read_ner(NER_FILE).examples[3480:3486]] + ["", "Seoul 서울 2024년 — ok"]
    assert max(len(t) for t in texts) > 40
    expected = predict_char_tags(model, texts)
    assert len({t for tags in expected for t in tags}) > 3  # varied tags, not one everywhere
    served = tf.saved_model.load(str(export_task(tmp_path / "ner", tmp_path / "saved" / "1")))
    out = served.signatures["serving_default"](text=tf.constant(texts))
    num = out["num_chars"].numpy().tolist()
    assert num == [len(t) for t in texts]
    tags = [[t.decode() for t in row[:n]] for row, n in zip(out["tags"].numpy(), num)]
    assert tags == expected
    assert all(set(row[n:]) <= {b""} for row, n in zip(out["tags"].numpy(), num))
    ids = out["tag_ids"].numpy()
    assert [[NER_LABELS[i] for i in row[:n]] for row, n in zip(ids, num)] == expected


@pytest.fixture(scope="module")
def tiny_chinese_model_dir(tmp_path_factory):
    """BERT-Tiny with one layer, randomly initialised, with Google's Chinese vocabulary (a piece per CJK character)."""
    import keras

    from kbert import BertConfig, BertEncoder
    from kbert.model_dir import save_model_dir

    keras.utils.set_random_seed(0)
    out = tmp_path_factory.mktemp("tiny_zh") / "model"
    config = BertConfig.preset("tiny", max_position_embeddings=128, vocab_size=21128, num_hidden_layers=1)
    save_model_dir(out, BertEncoder(config), vocab_file=CHINESE_VOCAB, do_lower_case=True)
    return out


def _qa_check(model_dir, result, examples, metric):
    predictions = json.loads((model_dir / "predictions.json").read_text(encoding="utf-8"))
    assert list(predictions) == [e["id"] for e in examples]
    for e in examples:  # cut from the context: a substring, never pieces glued back together
        assert predictions[e["id"]] in e["context"]
    recomputed = metric(predictions, {e["id"]: [a["text"] for a in e["answers"]] for e in examples})
    _same(result["best"]["exact_match"], recomputed["exact_match"])
    _same(result["best"]["f1"], recomputed["f1"])
    return predictions


@pytest.mark.slow
def test_cmrc2018_trains_on_the_trial_set_and_scores_the_dev_articles_as_distributed(tiny_chinese_model_dir,
                                                                                    tmp_path, capsys):
    """kbert finetune --task cmrc2018 trains on trial articles (three questions made unplaceable: a
    free answer before a placed one, an answer_start -1, one 7 characters off) and evaluates on the
    shared dev articles as distributed (33 free answers at -1): the two questions with no span are
    left out of training and named; eval_results.json's EM/F1 are cmrc2018_evaluate.py's on
    predictions.json and the raw dev file, every answer text included; kbert predict on the dev file
    writes the same answers."""
    from official_scorers import cmrc2018_evaluate

    from kbert.commands.finetune import main as finetune_main
    from kbert.commands.predict import main as predict_main

    root = json.loads(CMRC_FILE.read_text(encoding="utf-8"))
    train = {"version": root["version"], "data": root["data"][:12]}
    qas = [qa for article in train["data"] for paragraph in article["paragraphs"] for qa in paragraph["qas"]]
    qas[0]["answers"].insert(0, {"text": "一个评注者的答案", "answer_start": -1})
    qas[1]["answers"][0]["answer_start"] = -1
    qas[2]["answers"][0]["answer_start"] += 7
    train_file = tmp_path / "train.json"
    train_file.write_text(json.dumps(train, ensure_ascii=False), encoding="utf-8")
    model_dir = tmp_path / "cmrc"
    assert finetune_main(["--task", "cmrc2018", "--train-file", str(train_file), "--eval-file", str(CMRC_DEV_FILE),
                          "--init", str(tiny_chinese_model_dir), "--model-dir", str(model_dir), "--epochs", "1",
                          "--batch-size", "8", "--learning-rate", "1e-3", "--seq-length", "128",
                          "--doc-stride", "96", "--quiet"]) == 0
    log = capsys.readouterr().out
    left_out = [qas[1]["id"], qas[2]["id"]]
    assert "2 train questions left out" in log and ", ".join(left_out) in log
    result = json.loads((model_dir / "eval_results.json").read_text(encoding="utf-8"))
    assert (result["train_examples"], result["eval_examples"]) == (len(qas) - 2, 389)
    assert (result["train_left_out"], result["train_left_out_ids"]) == (2, left_out)
    dev = json.loads(CMRC_DEV_FILE.read_text(encoding="utf-8"))
    predictions = json.loads((model_dir / "predictions.json").read_text(encoding="utf-8"))
    assert len(predictions) == 389
    official = cmrc2018_evaluate(dev, predictions)
    _same(result["best"]["exact_match"], official["em"])
    _same(result["best"]["f1"], official["f1"])
    assert official["f1"] > 0 and any(len(a) > 1 for a in predictions.values())
    assert predict_main([str(model_dir), "--input", str(CMRC_DEV_FILE), "--output", str(tmp_path / "dev.json"),
                         "--quiet"]) == 0
    assert json.loads((tmp_path / "dev.json").read_text(encoding="utf-8")) == predictions


@pytest.mark.slow
def test_korquad(tiny_model_dir, tmp_path):
    """KorQuAD is read whole (its licence allows no modified copy): articles are chosen at run time."""
    from kbert.data.squad import read_squad
    from kbert.tasks.span_qa.task import SquadOptions
    from kbert.tasks.core.predict import predict_file

    result = _finetune(tiny_model_dir, tmp_path / "kq", "korquad/v1.0", train_file=str(KORQUAD_FILE),
                       eval_file=str(KORQUAD_FILE), seq_length=128,
                       task_options=SquadOptions(train_articles=":2", eval_articles="139:", doc_stride=64))
    titles = [a["title"] for a in json.loads(KORQUAD_FILE.read_text(encoding="utf-8"))["data"]][139:]
    examples = [e for e in read_squad(KORQUAD_FILE).examples if e["title"] in titles]
    predictions = _qa_check(tmp_path / "kq", result, examples, metrics_cjk.korquad_metrics)
    assert any(" " in a for a in predictions.values())  # Korean spacing kept
    # kbert predict: a question of our own on a Korean context, answered in the submission form
    own = {"version": "1", "data": [{"title": "t", "paragraphs": [{"context": "임종석은 1989년 2월 15일 지명수배되었다.",
                                                                   "qas": [{"id": "k1", "question": "언제?"}]}]}]}
    path = tmp_path / "own.json"
    path.write_text(json.dumps(own, ensure_ascii=False), encoding="utf-8")
    predict_file(tmp_path / "kq", path, tmp_path / "own_predicted.json")
    answer = json.loads((tmp_path / "own_predicted.json").read_text(encoding="utf-8"))["k1"]
    assert answer and answer in own["data"][0]["paragraphs"][0]["context"]
    assert not math.isnan(result["best"]["f1"])
