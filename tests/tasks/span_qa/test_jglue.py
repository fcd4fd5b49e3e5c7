"""JSQuAD (kbert.tasks.span_qa.jglue) with the Japanese tokenizers: fine-tuned from the command line
on a few dozen rows of ``shared/data/jglue`` (the converted ``ja-tiny-random-bert``, mecab-wordpiece,
and a BERT-Tiny saved with the shared SentencePiece model), EM and JGLUE's character F1 recomputed
from predictions.json (written out below); the SentencePiece model exported with raw strings in;
the windows checked against the ids transformers / sentencepiece give
(``reference/ja_tokenizers.jsonl``); answers off their context."""

import collections
import json
import re
import string
import unicodedata

import keras
import numpy as np
import pytest
import tensorflow as tf

from conftest import SHARED, require
from fixtures.task_runs import JGLUE, reference_rows

require("fugashi")
require("unidic_lite")

from kbert.data import jglue  # noqa: E402
from kbert.errors import DataError  # noqa: E402
from kbert.tasks import SpanQuestionAnswerer, load_task_model  # noqa: E402

VOCAB = SHARED / "vocab"
FIXTURES = {"mecab": "ja_mecab_dir", "char": "char_dir", "sp": "sp_dir"}


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


@pytest.mark.slow
@pytest.mark.parametrize("model", ["mecab", "sp"])
def test_jsquad_exact_match_and_character_f1_from_the_predictions_file(jglue_finetuned, model, request):
    out, results = jglue_finetuned("jsquad", request.getfixturevalue(FIXTURES[model]))
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


@pytest.mark.slow
def test_sentencepiece_jsquad_model_exports_and_serves_raw_strings(jglue_finetuned, sp_dir, tmp_path):
    """The fine-tuned directory of a SentencePiece model through kbert.export task: raw question and
    context strings in, the answers of the Python model out (the tokenizer and offsets in the graph)."""
    from kbert.export.task import export_task

    out, _ = jglue_finetuned("jsquad", sp_dir)
    examples = jglue.read_jsquad(JGLUE / "jsquad" / "dev.json").examples[:4]
    questions, contexts = [e["question"] for e in examples], [e["context"] for e in examples]
    serve = tf.saved_model.load(str(export_task(out, tmp_path / "jsquad" / "1"))).signatures["serving_default"]
    served = serve(question=tf.constant(questions), context=tf.constant(contexts))
    expected = load_task_model(out).answer(questions, contexts)
    assert [x.decode() for x in served["answer_text"].numpy()] == [p.text for p in expected]
    assert [int(x) for x in served["answer_start"].numpy()] == [p.start_char for p in expected]


@pytest.mark.parametrize("kind, ids_key", [("mecab", "mecab_wordpiece_ids"), ("char", "char_ids"),
                                           ("sp", "sentencepiece_ids")])
def test_span_qa_windows_hold_the_reference_ids_and_offsets(kind, ids_key, request):
    """Questions and JSQuAD contexts ("title [SEP] paragraph") in the windows have the ids that
    transformers' BertJapaneseTokenizer / the sentencepiece package give; context offsets point at
    the characters each piece comes from; [SEP] in the text is the [SEP] token for the MeCab types
    only."""
    model = SpanQuestionAnswerer.from_model_dir(request.getfixturevalue(FIXTURES[kind]), seq_length=128,
                                                max_query_length=32, doc_stride=48)
    questions, contexts = reference_rows("jsquad_question_shared", 3), reference_rows("jsquad_context_shared", 3)
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
    model = SpanQuestionAnswerer.from_model_dir(request.getfixturevalue(FIXTURES[kind]), seq_length=96,
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
