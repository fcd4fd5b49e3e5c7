"""korquad/v1.0 and cmrc2018 (kbert.tasks.span_qa.cjk_qa) end to end on tiny models: fine-tuning
from the shared files, EM/F1 of eval_results.json equal to the official scripts' definitions on the
prediction files and the gold files, kbert predict writes answers cut from their contexts."""

import json
import math

import pytest

from conftest import CHINESE_VOCAB, SHARED
from kbert.tasks.span_qa import metrics_cjk
from fixtures.task_runs import finetune_tiny, same_to_2_decimals

CMRC_FILE = SHARED / "cmrc2018" / "cmrc2018_trial.json"
CMRC_DEV_FILE = SHARED / "cmrc2018" / "cmrc2018_dev_articles_760-847.json"
KORQUAD_FILE = SHARED / "korquad" / "KorQuAD_v1.0_dev.json"


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
    same_to_2_decimals(result["best"]["exact_match"], recomputed["exact_match"])
    same_to_2_decimals(result["best"]["f1"], recomputed["f1"])
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
    from fixtures.official_scorers import cmrc2018_evaluate

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
    same_to_2_decimals(result["best"]["exact_match"], official["em"])
    same_to_2_decimals(result["best"]["f1"], official["f1"])
    assert official["f1"] > 0 and any(len(a) > 1 for a in predictions.values())
    assert predict_main([str(model_dir), "--input", str(CMRC_DEV_FILE), "--output", str(tmp_path / "dev.json"),
                         "--quiet"]) == 0
    assert json.loads((tmp_path / "dev.json").read_text(encoding="utf-8")) == predictions


@pytest.mark.slow
def test_korquad(tiny_model_dir, tmp_path):
    """KorQuAD is read whole (its licence allows no modified copy): articles are chosen at run time."""
    from kbert.data.squad import read_squad
    from kbert.tasks.span_qa.task import ArticlesOptions
    from kbert.tasks.core.predict import predict_file

    result = finetune_tiny(tiny_model_dir, tmp_path / "kq", "korquad/v1.0", train_file=str(KORQUAD_FILE),
                       eval_file=str(KORQUAD_FILE), seq_length=128, doc_stride=64,
                       named_options=ArticlesOptions(train_articles=":2", eval_articles="139:"))
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
