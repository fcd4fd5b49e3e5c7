"""JGLUE tasks from the command line, and span QA / tagging with the Japanese tokenizers.

Every JGLUE task fine-tunes and evaluates through ``kbert.finetune.main`` on a few dozen rows of
``shared/data/jglue`` with tiny models: the converted ``ja-tiny-random-bert`` (mecab-wordpiece) and a
BERT-Tiny saved with the shared SentencePiece model. Each metric in ``eval_results.json`` is
recomputed here from the written predictions file and the gold file read with ``json`` (scipy,
sklearn, and JGLUE's character F1 written out below). Span-QA windows are checked against the ids
transformers / sentencepiece give (``reference/ja_tokenizers.jsonl``) and the MeCab words fugashi gives.
"""

import collections
import json
import re
import string
import unicodedata

import keras
import numpy as np
import pytest
import scipy.stats
import sklearn.metrics
import tensorflow as tf

from conftest import REFERENCE, SHARED, require

require("fugashi")
require("unidic_lite")

from kbert.data import jglue  # noqa: E402
from kbert.errors import DataError  # noqa: E402
from kbert.commands.finetune import main  # noqa: E402
from kbert.tasks import SpanQuestionAnswerer, TokenTagger, load_task_model  # noqa: E402

JGLUE = SHARED / "jglue"
VOCAB = SHARED / "vocab"
COMMON = ["--epochs", "1", "--batch-size", "8", "--learning-rate", "1e-3", "--quiet",
          "--max-train-examples", "24", "--max-eval-examples", "16"]
SEQ = {"jsts": "64", "jnli": "64", "jcommonsenseqa": "64", "jsquad": "128"}


# -- models --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mecab_dir(tmp_path_factory):
    """The Tohoku-style checkpoint converted: mecab-wordpiece, L2/H128, random weights."""
    from kbert.convert import hf

    out = tmp_path_factory.mktemp("ja") / "mecab-wordpiece"
    hf.convert(SHARED / "weights" / "ja-tiny-random-bert", out)
    return out


def _tiny_dir(out, tokenizer):
    from kbert import BertConfig, BertEncoder
    from kbert.model_dir import save_model_dir

    keras.utils.set_random_seed(0)
    config = BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size, max_position_embeddings=128)
    save_model_dir(out, BertEncoder(config), tokenizer=tokenizer)
    return out


@pytest.fixture(scope="module")
def sp_dir(tmp_path_factory):
    from kbert.text.sentencepiece import SentencePieceTokenizer

    tokenizer = SentencePieceTokenizer(str(VOCAB / "ja-sentencepiece" / "spm.model"))
    return _tiny_dir(tmp_path_factory.mktemp("ja") / "sentencepiece", tokenizer)


@pytest.fixture(scope="module")
def char_dir(tmp_path_factory):
    from kbert.text.mecab import MecabCharacterTokenizer

    tokenizer = MecabCharacterTokenizer(str(VOCAB / "ja-char" / "vocab.txt"))
    return _tiny_dir(tmp_path_factory.mktemp("ja") / "mecab-character", tokenizer)


@pytest.fixture(scope="module")
def finetuned(tmp_path_factory):
    """finetuned(task, init) -> (model dir, eval_results.json); each run once per module."""
    runs, root = {}, tmp_path_factory.mktemp("jglue")

    def run(task, init):
        if (task, init) not in runs:
            out = root / f"{task}-{init.name}"
            main(["--task", f"jglue/{task}", "--data-dir", str(JGLUE / task), "--init", str(init),
                  "--model-dir", str(out), "--seq-length", SEQ[task], *COMMON])
            runs[task, init] = out, json.loads((out / "eval_results.json").read_text(encoding="utf-8"))
        return runs[task, init]

    return run


# -- the gold files, read here with json -----------------------------------------------------------
def _eval_file(task):
    return next(p for p in sorted((JGLUE / task).glob("*.json")) if not p.name.startswith("train"))


def gold_rows(task) -> dict:
    key = "q_id" if task == "jcommonsenseqa" else "sentence_pair_id"
    lines = _eval_file(task).read_text(encoding="utf-8").splitlines()
    return {str(r[key]): r for r in map(json.loads, filter(str.strip, lines))}


def read_jsonl(path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def squad_normalize(text):
    """SQuAD's answer normalisation, which JGLUE's evaluation keeps."""
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def jglue_char_f1(prediction, gold):
    """JGLUE's JSQuAD F1: SQuAD's F1 with the characters of the normalised answers (spaces dropped)
    as the tokens."""
    pred, ref = (list(squad_normalize(t).replace(" ", "")) for t in (prediction, gold))
    same = sum((collections.Counter(pred) & collections.Counter(ref)).values())
    if not same:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


# -- every task from the command line, metrics recomputed from the predictions file -----------------
@pytest.mark.slow
def test_jsts_pearson_and_spearman_from_the_predictions_file(finetuned, mecab_dir):
    out, results = finetuned("jsts", mecab_dir)
    predictions, gold = read_jsonl(out / "predictions.jsonl"), gold_rows("jsts")
    assert len(predictions) == results["eval_examples"] == 16 and results["train_examples"] == 24
    scores = [p["score"] for p in predictions]
    labels = [gold[p["id"]]["label"] for p in predictions]
    assert results["main_metric"] == "pearson"
    # (abs 1e-6: the recipe holds the labels as float32, as Keras trains on them)
    assert results["best"]["pearson"] == pytest.approx(scipy.stats.pearsonr(scores, labels)[0], abs=1e-6)
    assert results["best"]["spearman"] == pytest.approx(scipy.stats.spearmanr(scores, labels)[0], abs=1e-6)
    assert load_task_model(out).saved_task_info["task_name"] == "jglue/jsts"


@pytest.mark.slow
def test_jnli_accuracy_from_the_predictions_file(finetuned, mecab_dir):
    out, results = finetuned("jnli", mecab_dir)
    predictions, gold = read_jsonl(out / "predictions.jsonl"), gold_rows("jnli")
    assert len(predictions) == 16 and {p["label"] for p in predictions} <= set(jglue.JNLI_LABELS)
    accuracy = sklearn.metrics.accuracy_score([gold[p["id"]]["label"] for p in predictions],
                                              [p["label"] for p in predictions])
    assert results["best"]["accuracy"] == pytest.approx(accuracy, abs=1e-12)
    assert load_task_model(out).label_names == ["entailment", "contradiction", "neutral"]


@pytest.mark.slow
def test_jcommonsenseqa_accuracy_from_the_predictions_file(finetuned, mecab_dir):
    out, results = finetuned("jcommonsenseqa", mecab_dir)
    predictions, gold = read_jsonl(out / "predictions.jsonl"), gold_rows("jcommonsenseqa")
    assert len(predictions) == 16
    for p in predictions:
        assert p["label"] == gold[p["id"]][f"choice{p['choice']}"]
    accuracy = sklearn.metrics.accuracy_score([gold[p["id"]]["label"] for p in predictions],
                                              [p["choice"] for p in predictions])
    assert results["best"]["accuracy"] == pytest.approx(accuracy, abs=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("model", ["mecab", "sp"])
def test_jsquad_exact_match_and_character_f1_from_the_predictions_file(finetuned, model, request):
    out, results = finetuned("jsquad", request.getfixturevalue(f"{model}_dir"))
    predicted = json.loads((out / "predictions.json").read_text(encoding="utf-8"))
    root = json.loads((JGLUE / "jsquad" / "dev.json").read_text(encoding="utf-8"))
    gold = {qa["id"]: (p["context"], [a["text"] for a in qa["answers"]])
            for article in root["data"] for p in article["paragraphs"] for qa in p["qas"]}
    assert len(predicted) == 16 and set(predicted) <= set(gold)
    for qid, answer in predicted.items():
        assert answer in gold[qid][0]  # the context's own characters, through the offsets
    em = 100 * np.mean([max(squad_normalize(a) == squad_normalize(g) for g in gold[q][1]) for q, a in predicted.items()])
    f1 = 100 * np.mean([max(jglue_char_f1(a, g) for g in gold[q][1]) for q, a in predicted.items()])
    assert results["best"]["exact_match"] == pytest.approx(em, abs=1e-9)
    assert results["best"]["f1"] == pytest.approx(f1, abs=1e-9)
    assert results["best"]["f1"] >= results["best"]["exact_match"]


# -- export (SentencePiece models take raw strings) --------------------------------------------------
@pytest.mark.slow
def test_sentencepiece_jsquad_model_exports_and_serves_raw_strings(finetuned, sp_dir, tmp_path):
    """The fine-tuned directory of a SentencePiece model through kbert.export task: raw question and
    context strings in, the answers of the Python model out (the tokenizer and offsets in the graph)."""
    from kbert.export.task import export_task

    out, _ = finetuned("jsquad", sp_dir)
    examples = jglue.read_jsquad(JGLUE / "jsquad" / "dev.json").examples[:4]
    questions, contexts = [e["question"] for e in examples], [e["context"] for e in examples]
    serve = tf.saved_model.load(str(export_task(out, tmp_path / "jsquad" / "1"))).signatures["serving_default"]
    served = serve(question=tf.constant(questions), context=tf.constant(contexts))
    expected = load_task_model(out).answer(questions, contexts)
    assert [x.decode() for x in served["answer_text"].numpy()] == [p.text for p in expected]
    assert [int(x) for x in served["answer_start"].numpy()] == [p.start_char for p in expected]


# -- span QA windows and tagging with the Japanese tokenizers --------------------------------------
def _reference(source, n):
    lines = (REFERENCE / "ja_tokenizers.jsonl").read_text(encoding="utf-8").splitlines()
    return [r for r in map(json.loads, lines) if r["source"] == source][:n]


@pytest.mark.parametrize("kind, ids_key", [("mecab", "mecab_wordpiece_ids"), ("char", "char_ids"),
                                           ("sp", "sentencepiece_ids")])
def test_span_qa_windows_hold_the_reference_ids_and_offsets(kind, ids_key, request):
    """Questions and JSQuAD contexts ("title [SEP] paragraph") in the windows have the ids that
    transformers' BertJapaneseTokenizer / the sentencepiece package give; context offsets point at
    the characters each piece comes from; [SEP] in the text is the [SEP] token for the MeCab types
    only."""
    model = SpanQuestionAnswerer.from_model_dir(request.getfixturevalue(f"{kind}_dir"), seq_length=128,
                                                max_query_length=32, doc_stride=48)
    questions, contexts = _reference("jsquad_question_shared", 3), _reference("jsquad_context_shared", 3)
    windows = model.windows([q["text"] for q in questions], [c["text"] for c in contexts])
    vocab, sep = model.tokenizer.get_vocabulary(), model.tokenizer.special_token_ids["end_of_segment_id"]
    for n, (question, context) in enumerate(zip(questions, contexts)):
        mine = [w for i, w in windows if i == n]
        query = question[ids_key][:32]
        assert all(w.tokens[1:len(query) + 2] == [*query, sep] for w in mine)
        tokens, offsets = {}, {}
        for w in mine:
            for j in range(w.doc_span.length):
                tokens[w.doc_span.start + j] = w.tokens[w.context_start + j]
                offsets[w.doc_span.start + j] = tuple(w.offsets[w.context_start + j])
        assert [tokens[i] for i in range(len(tokens))] == context[ids_key]
        text = context["text"]
        assert (sep in tokens.values()) == (kind != "sp") and "[SEP]" in text
        if kind == "sp":
            continue
        for i, token in tokens.items():
            start, end = offsets[i]
            piece = vocab[token].removeprefix("##")
            if token == sep:
                assert text[start:end] == "[SEP]"
            elif piece != "[UNK]":
                assert piece in unicodedata.normalize("NFKC", text[start:end]), (piece, text[start:end])


@pytest.mark.parametrize("kind", ["mecab", "char", "sp"])
def test_span_qa_training_labels_cover_the_answer(kind, request):
    model = SpanQuestionAnswerer.from_model_dir(request.getfixturevalue(f"{kind}_dir"), seq_length=96,
                                                max_query_length=24, doc_stride=32)
    examples = jglue.read_jsquad(JGLUE / "jsquad" / "dev.json").examples[:20]
    spans = [(e["answers"][0]["answer_start"], e["answers"][0]["answer_start"] + len(e["answers"][0]["text"]))
             for e in examples]
    windows = model.windows([e["question"] for e in examples], [e["context"] for e in examples], spans)
    exact = 0
    for n, e in enumerate(examples):
        labelled = [w for i, w in windows if i == n and w.start_position > 0]
        assert labelled, e["id"]
        for w in labelled:
            found = e["context"][w.offsets[w.start_position][0]:w.offsets[w.end_position][1]]
            assert e["answers"][0]["text"] in found
            exact += found == e["answers"][0]["text"]
    assert exact >= len(examples) // 2  # most answers fall on token boundaries


def test_tagger_uses_mecab_words(mecab_dir):
    model = TokenTagger.from_model_dir(mecab_dir, label_names=["O", "B-LOC", "I-LOC"], seq_length=64)
    tokenizer = model.tokenizer
    # Pre-split words: each through NFKC + MeCab on its own (ｶﾞｯﾂ is ガッツ), its pieces kept together.
    words = [["東京都", "に", "住ん", "で", "いる"], ["ｶﾞｯﾂ", "大阪府", "。"]]
    pieces = model.pieces(words=words).to_list()
    for row, sentence in zip(pieces, words):
        assert len(row) == len(sentence)
        for got, word in zip(row, sentence):
            assert got == tokenizer.tokenize_flat(tokenizer.pre_tokenize([word])).to_list()[0]
    assert pieces[1][0] == tokenizer.tokenize_flat(tokenizer.pre_tokenize(["ガッツ"])).to_list()[0]
    _, labels, _ = model.numpy_features(words, [[1, 0, 0, 0, 0], [0, 1, 0]])
    assert (labels >= 0).sum(axis=1).tolist() == [5, 3]  # one labelled piece per word
    assert [len(t) for t in model.predict_words(words)] == [5, 3]

    # Raw text: the words are MeCab's (fugashi + unidic-lite in the reference), offsets into the text.
    lines = [r for r in _reference("jsts_jcqa_train", 60) if unicodedata.normalize("NFKC", r["text"]) == r["text"]][:4]
    for line, result in zip(lines, model.predict_entities([r["text"] for r in lines])):
        assert [w["text"] for w in result["words"]] == line["mecab_words"]
        assert all(line["text"][w["start"]:w["end"]] == w["text"] for w in result["words"])
        assert all(line["text"][e["start"]:e["end"]] == e["text"] for e in result["entities"])


# -- bad input ---------------------------------------------------------------------------------------
def _write(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


PAIR = {"sentence_pair_id": "0", "sentence1": "犬が走る。", "sentence2": "動物が走る。"}


@pytest.mark.parametrize("reader, row, message", [
    (jglue.read_jsts, {**PAIR, "label": 3.2, "sentence2": None}, r"line 2: field 'sentence2': got None; expected a string"),
    (jglue.read_jsts, {k: v for k, v in PAIR.items() if k != "sentence1"} | {"label": 1.0},
     r"line 2: field 'sentence1': missing; expected a string"),
    (jglue.read_jsts, {**PAIR, "label": 7.5}, r"line 2: field 'label': got 7\.5; expected a number in \[0, 5\]"),
    (jglue.read_jnli, {**PAIR, "label": "maybe"},
     r"line 2: field 'label': got 'maybe'; expected one of entailment, contradiction, neutral"),
    (jglue.read_jnli, PAIR, r"line 2: field 'label': missing"),
    (jglue.read_jcommonsenseqa, {"q_id": 1, "question": "何？", **{f"choice{i}": "a" for i in range(4)}, "label": 0},
     r"line 2: field 'choice4': missing"),
    (jglue.read_jcommonsenseqa, {"q_id": 1, "question": "何？", **{f"choice{i}": "a" for i in range(5)}, "label": 5},
     r"line 2: field 'label': got 5; expected an integer choice number 0-4"),
])
def test_bad_rows_name_the_file_line_and_field(tmp_path, reader, row, message):
    good = {jglue.read_jsts: {**PAIR, "label": 1.0}, jglue.read_jnli: {**PAIR, "label": "neutral"},
            jglue.read_jcommonsenseqa: {"q_id": 0, "question": "何？", **{f"choice{i}": "a" for i in range(5)},
                                        "label": 1}}[reader]
    path = _write(tmp_path / "train-v1.3.json", [good, row])
    with pytest.raises(DataError, match=re.escape(str(path)) + ", " + message):
        reader(path)


def test_jsquad_answers_off_their_context_and_is_impossible(tmp_path):
    """JSQuAD is scored as SQuAD 1.1 on answer texts: an offset 2 characters off is moved onto its text,
    a farther one leaves the answer for evaluation only; is_impossible (false in every JGLUE file) is
    not read by JGLUE's scripts, so true is ignored, but a question without answers is refused."""
    root = {"version": "v1.3", "data": [{"title": "犬", "paragraphs": [{"context": "犬 [SEP] 犬は動物である。", "qas": [
        {"id": "a1p0q0", "question": "犬は何？", "answers": [{"text": "動物", "answer_start": 8}],
         "is_impossible": False}]}]}]}
    path = tmp_path / "dev.json"

    def read(start, **qa):
        root["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] = start
        root["data"][0]["paragraphs"][0]["qas"][0].update(qa)
        path.write_text(json.dumps(root, ensure_ascii=False), encoding="utf-8")
        return jglue.read_jsquad(path)

    assert read(8).examples[0]["answers"] == [{"text": "動物", "answer_start": 10}]
    data = read(5, is_impossible=True)
    assert data.examples[0]["answers"] == [{"text": "動物", "answer_start": -1}]
    assert not data.examples[0]["is_impossible"] and data.meta["unplaced_questions"] == ["a1p0q0"]
    with pytest.raises(DataError, match=r"question id 'a1p0q0'.*field 'answers': got \[\]; expected at least one"):
        read(10, answers=[])


def test_data_dir_files_and_bad_rows_through_the_command_line(tmp_path, mecab_dir):
    assert jglue.split_path(JGLUE / "jsts", "dev").endswith("valid-v1.3.json")
    assert jglue.split_path(JGLUE / "jnli", "dev").endswith("dev.json")
    folder = tmp_path / "jnli"
    folder.mkdir()
    _write(folder / "train.json", [{**PAIR, "label": "neutral"}, {**PAIR, "label": "entailment"}])
    args = ["--task", "jglue/jnli", "--data-dir", str(folder), "--init", str(mecab_dir),
            "--model-dir", str(tmp_path / "out"), *COMMON]
    with pytest.raises(DataError, match=r"expected a dev file named like valid-v\*\.json or dev\.json"):
        main(args)
    _write(folder / "dev.json", [{**PAIR, "label": "neutral"}, {"sentence_pair_id": "9", "sentence1": "x", "label": "neutral"}])
    with pytest.raises(DataError, match=re.escape(str(folder / "dev.json")) + r", line 2: field 'sentence2': missing"):
        main(args)
    from kbert.tasks.core.task_files import resolve_task

    with pytest.raises(ValueError, match="'jglue/jsts' has no TFRecord pipeline"):
        resolve_task("jglue/jsts", JGLUE / "jsts")


# -- kbert.predict on JGLUE files (labels removed) --------------------------------------------------
@pytest.mark.parametrize("task", ["jsts", "jnli", "jcommonsenseqa"])
def test_predict_reads_jglue_files_and_agrees_with_evaluation(finetuned, mecab_dir, task, tmp_path):
    """The fine-tuned model directory through kbert.predict on the evaluated rows of the JGLUE file
    without their labels: the same answers fine-tuning wrote for them, in input order."""
    from kbert.tasks.core.predict import predict_file

    out, _ = finetuned(task, mecab_dir)
    evaluated = {p["id"]: p for p in read_jsonl(out / "predictions.jsonl")}
    key = "q_id" if task == "jcommonsenseqa" else "sentence_pair_id"
    rows = [r for r in read_jsonl(_eval_file(task)) if str(r[key]) in evaluated]
    for r in rows:
        del r["label"]
    unlabelled = tmp_path / "unlabelled.json"
    unlabelled.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    result = predict_file(out, unlabelled, tmp_path / "predicted.jsonl")
    predicted = read_jsonl(tmp_path / "predicted.jsonl")
    assert result["rows"] == len(predicted) == len(rows) == len(evaluated)
    for row, p in zip(rows, predicted):
        expected = evaluated[str(row[key])]
        if task == "jsts":
            assert p["score"] == pytest.approx(expected["score"], abs=1e-4)
        elif task == "jnli":
            assert p["label"] == expected["label"]
        else:
            assert (p["choice"], p["label"]) == (expected["choice"], expected["label"])
