"""kbert.convert_to_hf (kbert.export.to_hf): folders that transformers loads as the model kbert has, checked
by reading them back (kbert.convert_hf: the same weights, bit for bit) and by transformers itself
(kbert.export.to_hf_check: its outputs on kbert's ids within 1e-4)."""

import json

import numpy as np
import pytest
from safetensors.numpy import load_file

import kbert
from kbert.convert.names import ConversionError, encoder_variables, export_arrays, head_variables
from kbert.export.to_hf import convert_to_hf, read_record
from kbert.model_dir import load_encoder, load_heads, read_tokenizer_spec
from conftest import require_installed

# Without the sentence of special tokens written in the text: kbert's google-research/bert rules split
# them, transformers' BertTokenizer keeps them whole (a difference the record's notes name).
PLAIN = ["The quick brown fox jumps over the lazy dog.", "A naïve café résumé costs $5!",
         "Йод и ёж встретились в лесу.", "我们在北京大学学习自然语言处理。"]


def _arrays(model_dir):
    encoder = load_encoder(model_dir)
    variables = encoder_variables(encoder)
    for name, head in load_heads(model_dir, encoder.config).items():
        variables.update(head_variables(name, head))
    return export_arrays(variables)


@pytest.mark.slow
def test_pretraining_heads_round_trip_bit_for_bit(tmp_path, tiny_heads_dir):
    out = convert_to_hf(tiny_heads_dir, tmp_path / "hf")
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["BertForPreTraining"] and config["hidden_act"] == "gelu_new"
    assert "bert.pooler.dense.weight" in load_file(str(out / "model.safetensors"))
    back = kbert.convert_hf(out, tmp_path / "back")
    ours, theirs = _arrays(tiny_heads_dir), _arrays(back)
    assert set(ours) == set(theirs) and any(n.startswith("cls/predictions") for n in ours)
    for name in ours:
        assert np.array_equal(ours[name], theirs[name]), name
    assert read_record(out)["architecture"] == "BertForPreTraining"
    with pytest.raises(ConversionError, match="already holds files"):
        convert_to_hf(tiny_heads_dir, out)
    with pytest.raises(ConversionError, match="is \\(or holds, or is inside\\) the model directory"):
        convert_to_hf(tiny_heads_dir, tiny_heads_dir / "hf", overwrite=True)


@pytest.mark.slow
def test_causal_encoder_is_refused(tmp_path):
    encoder = kbert.BertEncoder(kbert.BertConfig.preset("tiny", vocab_size=6), causal=True)
    model_dir = kbert.save_model_dir(tmp_path / "ltr", encoder, vocab=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"])
    with pytest.raises(ConversionError, match="causal .* transformers' BertModel attends both ways"):
        convert_to_hf(model_dir, tmp_path / "hf")
    assert not (tmp_path / "hf").exists()


@pytest.mark.slow
def test_minilm_round_trips_and_transformers_gives_its_outputs(tmp_path, minilm_model_dir):
    require_installed("torch", "transformers")
    out = convert_to_hf(minilm_model_dir, tmp_path / "hf", check=True)
    check = read_record(out)["check"]
    assert check["passed"] and check["id_mismatches"] == []
    assert set(check["largest_differences"]) == {"hidden_states", "pooled_output"}
    assert max(check["largest_differences"].values()) < 1e-4
    back = kbert.convert_hf(out, tmp_path / "back")
    assert read_tokenizer_spec(back) == read_tokenizer_spec(minilm_model_dir)
    ours, theirs = _arrays(minilm_model_dir), _arrays(back)
    assert all(np.array_equal(ours[n], theirs[n]) for n in ours) and set(ours) == set(theirs)


def _task_models(model_dir):
    yield kbert.TextClassifier.from_model_dir(model_dir, label_names=["neg", "pos", "mixed"]), \
        "BertForSequenceClassification", "single_label_classification"
    yield kbert.TextRegressor.from_model_dir(model_dir), "BertForSequenceClassification", "regression"
    yield kbert.MultiLabelClassifier.from_model_dir(model_dir, label_names=["a", "b"]), \
        "BertForSequenceClassification", "multi_label_classification"
    yield kbert.TokenTagger.from_model_dir(model_dir, label_names=["O", "B-X", "I-X"]), \
        "BertForTokenClassification", None
    yield kbert.SpanQuestionAnswerer.from_model_dir(model_dir, seq_length=64, max_query_length=16), \
        "BertForQuestionAnswering", None
    yield kbert.MultipleChoiceModel.from_model_dir(model_dir), "BertForMultipleChoice", None


@pytest.mark.slow
def test_task_models_are_their_transformers_classes(tmp_path, tiny_model_dir):
    require_installed("torch", "transformers")
    from kbert.export.to_hf_check import check_to_hf

    for i, (model, architecture, problem_type) in enumerate(_task_models(tiny_model_dir)):
        for variable in model.head.weights:  # a random head is not zero: a head left out would show
            variable.assign(np.random.default_rng(i).normal(size=variable.shape).astype("float32"))
        model_dir = model.save_model_dir(tmp_path / f"task{i}")
        out = convert_to_hf(model_dir, tmp_path / f"hf{i}")
        config = json.loads((out / "config.json").read_text())
        assert config["architectures"] == [architecture] and config.get("problem_type") == problem_type
        if getattr(model, "label_names", None):
            assert config["id2label"] == {str(j): n for j, n in enumerate(model.label_names)}
        report = check_to_hf(model_dir, out, sentences=PLAIN)
        assert report.passed, (architecture, report.lines())
        names = {"BertForQuestionAnswering": {"start_logits", "end_logits"}}.get(architecture, {"logits"})
        assert set(report.differences) == names, architecture
        if architecture == "BertForQuestionAnswering":
            assert any("span QA" in n for n in read_record(out)["notes"])


@pytest.mark.slow
def test_attention_pooling_is_refused_and_windows_noted(tmp_path, tiny_model_dir):
    model = kbert.TextClassifier.from_model_dir(tiny_model_dir, num_classes=2, long_documents="windows",
                                                window_pooling="attention", seq_length=32)
    with pytest.raises(ConversionError, match="window_pooling 'attention' .* not converted"):
        convert_to_hf(model.save_model_dir(tmp_path / "attention"), tmp_path / "hf")
    model = kbert.TextClassifier.from_model_dir(tiny_model_dir, num_classes=2, long_documents="windows",
                                                seq_length=32)
    out = convert_to_hf(model.save_model_dir(tmp_path / "windows"), tmp_path / "hf2")
    assert any("long_documents=windows" in n for n in read_record(out)["notes"])


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["mecab-wordpiece", "mecab-character"])
def test_japanese_models_are_bert_japanese_tokenizers_with_kberts_ids(tmp_path, ja_model_dirs, kind):
    require_installed("torch", "transformers", "fugashi")
    model_dir = ja_model_dirs[kind]
    out = convert_to_hf(model_dir, tmp_path / "hf", check=True)  # every language of the check's sentences
    tokenizer = json.loads((out / "tokenizer_config.json").read_text())
    assert tokenizer["tokenizer_class"] == "BertJapaneseTokenizer" and tokenizer["word_tokenizer_type"] == "mecab"
    assert tokenizer["subword_tokenizer_type"] == kind.split("-")[1]
    check = read_record(out)["check"]
    assert check["passed"] and check["id_mismatches"] == [] and "mlm_logits" in check["largest_differences"]
    back = kbert.convert_hf(out, tmp_path / "back")
    assert read_tokenizer_spec(back) == read_tokenizer_spec(model_dir)
    ours, theirs = _arrays(model_dir), _arrays(back)
    assert all(np.array_equal(ours[n], theirs[n]) for n in ours) and set(ours) == set(theirs)


@pytest.mark.slow
def test_transformers_pipelines_answer_as_kbert(tmp_path, tiny_heads_dir, tiny_model_dir):
    require_installed("torch", "transformers")
    import transformers

    texts = ["the man went to the [MASK] .", "paris is the [MASK] of france ."]
    fill = transformers.pipeline("fill-mask", model=str(convert_to_hf(tiny_heads_dir, tmp_path / "mlm")), top_k=5)
    theirs = [[answer["token"] for answer in fill(text)] for text in texts]
    ours = [answers[0]["ids"] for answers in kbert.fill_mask(tiny_heads_dir, texts, top_k=5)]
    assert theirs == ours

    model = kbert.TextClassifier.from_model_dir(tiny_model_dir, label_names=["negative", "positive"])
    for variable in model.head.weights:
        variable.assign(np.random.default_rng(7).normal(size=variable.shape).astype("float32"))
    model_dir = model.save_model_dir(tmp_path / "classifier")
    classify = transformers.pipeline("text-classification", model=str(convert_to_hf(model_dir, tmp_path / "hf")))
    rows = PLAIN + ["a dull , lifeless film", "one of the year's best"]
    assert [r["label"] for r in classify(rows)] == kbert.load_task_model(model_dir).predict_labels(rows)


@pytest.mark.slow
def test_minilm_pair_classifier_gives_its_logits_in_transformers(tmp_path, minilm_model_dir):
    require_installed("torch", "transformers")
    model = kbert.TextClassifier.from_model_dir(minilm_model_dir, label_names=["entailment", "neutral", "contradiction"],
                                                num_segments=2)
    for variable in model.head.weights:
        variable.assign(np.random.default_rng(1).normal(size=variable.shape).astype("float32"))
    out = convert_to_hf(model.save_model_dir(tmp_path / "nli"), tmp_path / "hf", check=True)
    check = read_record(out)["check"]  # every sentence of the check, [MASK] written in the text included
    assert check["passed"] and set(check["largest_differences"]) == {"logits"}
    assert check["largest_differences"]["logits"] < 1e-4


@pytest.mark.slow
def test_one_head_or_none_picks_its_class(tmp_path, tiny_heads_dir):
    require_installed("torch", "transformers")
    import shutil

    from kbert.export.to_hf_check import check_to_hf
    from kbert.model_dir import read_metadata, write_metadata

    for heads, architecture, outputs in ((["mlm"], "BertForMaskedLM", {"hidden_states", "mlm_logits"}),
                                         (["nsp"], "BertForNextSentencePrediction",
                                          {"hidden_states", "pooled_output", "nsp_logits"}),
                                         ([], "BertModel", {"hidden_states", "pooled_output"})):
        model_dir = tmp_path / architecture
        shutil.copytree(tiny_heads_dir, model_dir)
        metadata = read_metadata(model_dir)
        metadata["heads"] = {k: v for k, v in metadata["heads"].items() if k in heads}
        write_metadata(model_dir, metadata)
        out = convert_to_hf(model_dir, tmp_path / f"{architecture}-hf")
        assert read_record(out)["architecture"] == architecture
        report = check_to_hf(model_dir, out, sentences=PLAIN)
        assert report.passed and set(report.differences) == outputs, (architecture, report.lines())


def test_heads_with_more_than_a_dense_layer_are_refused(tiny_heads_dir):
    from kbert.export.to_hf import _refuse_other_heads

    model = kbert.TokenTagger.from_model_dir(tiny_heads_dir, label_names=["O", "B-X"])
    _refuse_other_heads(model, "dir")  # a dense layer alone: converted
    model.bilstm = 8
    with pytest.raises(ConversionError, match="bilstm=8 is a BiLSTM .* not converted"):
        _refuse_other_heads(model, "dir")
    model.bilstm, model.combination = 0, "last_four_sum"  # kbert.tasks.core.sequence_features' attributes
    with pytest.raises(ConversionError, match="features='last_four_sum' is the feature-based approach"):
        _refuse_other_heads(model, "dir")
    import types

    import keras

    dense = model.head.dense  # a head whose weights are more than its dense layer's
    head = types.SimpleNamespace(dense=dense, weights=[dense.kernel, dense.bias, keras.Variable([0.0], name="lstm_kernel")])
    model = types.SimpleNamespace(task_type="token_tagger", head=head)
    with pytest.raises(ConversionError, match="holds weights besides its dense layer \\(.*lstm_kernel"):
        _refuse_other_heads(model, "dir")
