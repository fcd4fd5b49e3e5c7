"""``kbert convert to-hf --check``: the written folder loaded by transformers, against kbert.

transformers' ``AutoTokenizer`` and the folder's ``BertFor...`` class (on torch) load the folder; kbert
loads the model directory. Both tokenize the built-in sentences of ``kbert.convert.check.SENTENCES``
(English, Japanese, Chinese, Korean, Russian), alone and in pairs; both networks run on kbert's ids, and
the largest absolute difference of each output (hidden states, pooled output, MLM and NSP logits, a
task's logits; at real tokens) is reported. torch and transformers are the ``test`` extra, imported
only here and only when asked.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib

import numpy as np

from kbert.convert.check import SENTENCES
from kbert.convert.to_hf import RECORD_FILE
from kbert.errors import MissingExtra

DEFAULT_TOLERANCE = 1e-4
SEQ_LENGTH = 128


@dataclasses.dataclass
class ToHfReport:
    """``texts``: how many texts and pairs were tokenized both ways; ``id_mismatches``: (text, kbert's
    tokens, transformers'); ``differences``: output name -> largest absolute difference."""

    texts: int
    id_mismatches: list
    differences: dict
    tolerance: float = DEFAULT_TOLERANCE

    @property
    def passed(self) -> bool:
        return not self.id_mismatches and all(d <= self.tolerance for d in self.differences.values())

    def lines(self) -> list:
        diffs = ", ".join(f"{k} {v:.2e}" for k, v in self.differences.items())
        ids = "equal" if not self.id_mismatches else f"differ on {len(self.id_mismatches)}"
        out = [f"check: {self.texts} texts and pairs against transformers: ids {ids}; largest differences: {diffs} "
               f"(tolerance {self.tolerance:.0e})"]
        for text, ours, theirs in self.id_mismatches[:5]:
            at = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
            out.append(f"  ids differ on {text!r} at token {at}: kbert {' '.join(map(str, ours[at:at + 5]))} ..., "
                       f"transformers {' '.join(map(str, theirs[at:at + 5]))} ...")
        return out

    def summary(self) -> str:
        """One line: the first of ``lines()`` and the texts whose ids differ."""
        texts = "; ".join(repr(text)[:80] for text, _, _ in self.id_mismatches[:3])
        return self.lines()[0] + (f"; ids differ on {texts}" if texts else "")

    def to_json(self) -> dict:
        return {"passed": self.passed, "texts": self.texts, "tolerance": self.tolerance,
                "largest_differences": self.differences,
                "id_mismatches": [list(m) for m in self.id_mismatches[:20]]}


def _peers():
    try:
        import torch
        import transformers
    except ImportError as e:
        raise MissingExtra(f"--check loads the folder with transformers on torch, and {e.name} is not installed: "
                           "pip install 'kbert[test]' (or convert without --check)", extra="test",
                           name=e.name) from None
    return torch, transformers


def record_check(out, report: ToHfReport) -> None:
    """Adds the report to the folder's record (``kbert_to_hf.json``, ``check``)."""
    path = pathlib.Path(out) / RECORD_FILE
    record = json.loads(path.read_text(encoding="utf-8"))
    record["check"] = report.to_json()
    path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def check_to_hf(model_dir, out, sentences=None, tolerance: float = DEFAULT_TOLERANCE) -> ToHfReport:
    """Compares the folder ``out`` (written by ``convert_to_hf`` from ``model_dir``) in transformers with
    ``model_dir`` in kbert: ids of ``sentences`` (default: every language of ``SENTENCES``) alone and in
    pairs, and every output on kbert's ids."""
    torch, transformers = _peers()
    import tensorflow as tf

    from kbert.text import BertPreprocessor
    from kbert.text.registry import load_tokenizer

    texts = list(sentences) if sentences is not None else [s for group in SENTENCES.values() for s in group]
    texts = texts + texts[:1] if len(texts) % 2 else texts  # pairs of rows for multiple choice
    transformers.logging.set_verbosity_error()
    config = json.loads((pathlib.Path(out) / "config.json").read_text(encoding="utf-8"))
    architecture = config["architectures"][0]
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(str(out))
    hf_model = getattr(transformers, architecture).from_pretrained(str(out), attn_implementation="eager").eval()

    tokenizer = load_tokenizer(model_dir)
    seq_length = min(SEQ_LENGTH, config["max_position_embeddings"])
    preprocessor = BertPreprocessor(tokenizer, seq_length=seq_length)
    packed = {k: np.asarray(v) for k, v in preprocessor(tf.constant(texts)).items()}
    second = texts[1:] + texts[:1]
    pairs = {k: np.asarray(v) for k, v in preprocessor([tf.constant(texts), tf.constant(second)]).items()}
    mismatches = _id_mismatches(hf_tokenizer, texts, None, packed, seq_length)
    mismatches += _id_mismatches(hf_tokenizer, texts, second, pairs, seq_length)

    real = packed["input_mask"].astype(bool)
    ours = _kbert_outputs(model_dir, architecture, packed)
    with torch.no_grad():
        theirs = _hf_outputs(torch, hf_model, architecture, packed)
    differences = {}
    for name, value in ours.items():
        a, b = np.asarray(value, np.float32), np.asarray(theirs[name], np.float32)
        if a.ndim >= 2 and a.shape[:2] == real.shape:
            a, b = a[real], b[real]
        differences[name] = float(np.abs(a - b).max())
    return ToHfReport(2 * len(texts), mismatches, differences, tolerance)


def _id_mismatches(hf_tokenizer, texts, second, packed, seq_length) -> list:
    args = (texts,) if second is None else (texts, second)
    theirs = hf_tokenizer(*args, padding="max_length", truncation=True, max_length=seq_length, return_tensors="np")
    vocab = {i: t for t, i in hf_tokenizer.get_vocab().items()}
    out = []
    for row in range(len(texts)):
        ours = packed["input_word_ids"][row][packed["input_mask"][row].astype(bool)].tolist()
        mine = theirs["input_ids"][row][theirs["attention_mask"][row].astype(bool)].tolist()
        types_ours = packed["input_type_ids"][row][packed["input_mask"][row].astype(bool)].tolist()
        types_mine = theirs["token_type_ids"][row][theirs["attention_mask"][row].astype(bool)].tolist()
        if ours != mine or types_ours != types_mine:
            text = texts[row] if second is None else (texts[row], second[row])
            out.append((text, [vocab.get(i, i) for i in ours], [vocab.get(i, i) for i in mine]))
    return out


def _kbert_outputs(model_dir, architecture, packed) -> dict:
    from kbert.model_dir import load_encoder, load_heads, read_metadata

    if read_metadata(model_dir).get("task"):
        from kbert.tasks.core.task_dir import load_task_model

        model = load_task_model(model_dir)
        if architecture == "BertForMultipleChoice":
            rows = {k: v.reshape(-1, 2, v.shape[-1]) for k, v in packed.items()}
            return {"logits": np.asarray(model(rows, training=False))}
        logits = model(packed, training=False)
        if architecture == "BertForQuestionAnswering":
            return {"start_logits": np.asarray(logits["start_logits"]), "end_logits": np.asarray(logits["end_logits"])}
        logits = np.asarray(logits)
        return {"logits": logits[:, None] if logits.ndim == 1 else logits}
    encoder = load_encoder(model_dir)
    heads = load_heads(model_dir, encoder.config)
    outputs = encoder(packed, training=False)
    out = {"hidden_states": np.asarray(outputs["sequence_output"]), "pooled_output": np.asarray(outputs["pooled_output"])}
    if "mlm" in heads:
        table = encoder.embeddings.word_embeddings.embeddings
        out["mlm_logits"] = np.asarray(heads["mlm"](outputs["sequence_output"], None, table))
    if "nsp" in heads:
        out["nsp_logits"] = np.asarray(heads["nsp"](outputs["pooled_output"]))
    if architecture == "BertForMaskedLM":
        del out["pooled_output"]  # not in transformers' BertForMaskedLM
    return out


def _hf_outputs(torch, hf_model, architecture, packed) -> dict:
    inputs = {"input_ids": packed["input_word_ids"], "attention_mask": packed["input_mask"],
              "token_type_ids": packed["input_type_ids"]}
    if architecture == "BertForMultipleChoice":
        inputs = {k: v.reshape(-1, 2, v.shape[-1]) for k, v in inputs.items()}
    inputs = {k: torch.from_numpy(np.asarray(v, np.int64)) for k, v in inputs.items()}
    if architecture == "BertModel":
        result = hf_model(**inputs)
        return {"hidden_states": result.last_hidden_state.numpy(), "pooled_output": result.pooler_output.numpy()}
    if architecture in ("BertForPreTraining", "BertForMaskedLM", "BertForNextSentencePrediction"):
        result = hf_model(**inputs, output_hidden_states=True)
        pooled = hf_model.bert.pooler(result.hidden_states[-1]) if hf_model.bert.pooler is not None else None
        out = {"hidden_states": result.hidden_states[-1].numpy()}
        if pooled is not None:
            out["pooled_output"] = pooled.numpy()
        if architecture == "BertForPreTraining":
            out.update(mlm_logits=result.prediction_logits.numpy(), nsp_logits=result.seq_relationship_logits.numpy())
        elif architecture == "BertForMaskedLM":
            out["mlm_logits"] = result.logits.numpy()
        else:
            out["nsp_logits"] = result.logits.numpy()
        return out
    result = hf_model(**inputs)
    if architecture == "BertForQuestionAnswering":
        return {"start_logits": result.start_logits.numpy(), "end_logits": result.end_logits.numpy()}
    return {"logits": result.logits.numpy()}
