"""TF Hub-style BERT encoder SavedModel.

The contract of TF Hub's BERT encoders (``bert_en_uncased_L-12_H-768_A-12/4`` and friends):

    outputs = encoder(dict(input_word_ids=..., input_mask=..., input_type_ids=...), training=False)
    outputs: pooled_output [batch, H], sequence_output [batch, seq, H],
             encoder_outputs (list of L [batch, seq, H]), default (= pooled_output)
    encoder.mlm(dict(..., masked_lm_positions=[batch, P]))["mlm_logits"]  # [batch, P, vocab]
    signatures fill_mask (text) and next_sentence (text_a, text_b) where the directory has the
    mlm / nsp heads (kbert.export.head_signatures; words, words_a, words_b for the mecab-*
    tokenizers, see kbert.tasks.core.words_inputs; with TF Serving warm-up requests; they use
    TF-Text ops: ``import tensorflow_text`` before loading, or export with head_signatures=False)
    encoder.vocab_file (asset), encoder.do_lower_case (bool variable): the tokenizer's file and case,
    encoder.variables / trainable_variables / regularization_losses (for hub.KerasLayer)

Loads with ``tf.saved_model.load`` in a process that has never imported kbert or keras.
"""

from __future__ import annotations

import pathlib

import tensorflow as tf

from kbert import compat
from kbert.export import fast_serving
from kbert.export.head_signatures import add_head_signatures, warmup_requests
from kbert.export.serving import write_export, write_warmup_requests_for
from kbert.export.tokenizer_assets import attach_tokenizer_assets
from kbert.model_dir import load_encoder, load_heads
from kbert.text.registry import load_tokenizer
from kbert.api_export import kbert_export

INPUT_SPEC = {
    name: tf.TensorSpec([None, None], tf.int32, name=name)
    for name in ("input_word_ids", "input_mask", "input_type_ids")
}


def _tf_variables(variables):
    # Keras 3 variables wrap a tf.Variable (``.value``); SavedModel tracks the tf.Variable.
    return [getattr(v, "value", v) for v in variables]


class _Mlm(compat.AutoTrackable):
    def __init__(self, encoder, head):
        self._encoder = encoder
        self._head = head

    @tf.function(input_signature=[{**INPUT_SPEC, "masked_lm_positions": tf.TensorSpec(
        [None, None], tf.int32, name="masked_lm_positions")}])
    def __call__(self, inputs):
        outputs = self._encoder(
            {k: inputs[k] for k in INPUT_SPEC}, training=False
        )
        logits = self._head(
            outputs["sequence_output"], inputs["masked_lm_positions"], self._encoder.word_embeddings
        )
        return {**_hub_outputs(outputs), "mlm_logits": logits}


def _hub_outputs(outputs):
    return {
        "sequence_output": outputs["sequence_output"],
        "pooled_output": outputs["pooled_output"],
        "default": outputs["pooled_output"],
        "encoder_outputs": list(outputs["encoder_outputs"]),
    }


class HubEncoder(compat.AutoTrackable):
    def __init__(self, encoder, tokenizer, mlm_head=None):
        self._encoder = encoder
        # Ids in, so any tokenizer type exports: only its files and case are kept (TF Hub's names).
        attach_tokenizer_assets(self, tokenizer, "encoder export")
        self.variables = _tf_variables(encoder.variables)
        self.trainable_variables = _tf_variables(encoder.trainable_variables)
        self.regularization_losses = []
        if mlm_head is not None:
            self.mlm = _Mlm(encoder, mlm_head)

    @tf.function
    def __call__(self, inputs, training=False):
        return _hub_outputs(self._encoder(inputs, training=training))


def _flat_signature(fn, spec):
    @tf.function(input_signature=[spec])
    def serve(inputs):
        outputs = dict(fn(inputs))
        for i, x in enumerate(outputs.pop("encoder_outputs")):
            outputs[f"encoder_outputs_{i}"] = x
        return outputs

    serve.get_concrete_function()
    return serve


@kbert_export("kbert.export_encoder")
def export_encoder(model_dir, out_dir, head_signatures: bool = True, xla_signature: bool = False,
                   overwrite: bool = False) -> pathlib.Path:
    """Exports a model directory's encoder as a TF Hub-style SavedModel (ids in, TF Hub's outputs out).

    Args:
        model_dir: a model directory.
        out_dir: the SavedModel's folder, written whole (an earlier kbert export there is replaced,
            anything else refused unless ``overwrite``).
        head_signatures: add ``fill_mask`` / ``next_sentence`` (strings in) where the directory has
            the heads; those use TF-Text ops, so a process loading the export imports
            ``tensorflow_text`` first (TF Serving links them). False: ids only, loads with TensorFlow alone.
        xla_signature: add ``serving_xla``, serving_default compiled by XLA.
        overwrite: replace a folder that holds something else.

    Returns:
        ``out_dir``, a ``pathlib.Path``.

    Examples:
        >>> import kbert
        >>> kbert.export_encoder(kbert.random_model_dir("runs/tiny"), "saved_models/tiny_encoder/1",
        ...                      head_signatures=False).name
        '1'
    """
    model_dir = pathlib.Path(model_dir)
    encoder = load_encoder(model_dir)
    heads = load_heads(model_dir, encoder.config, names=("mlm", "nsp"))
    tokenizer = load_tokenizer(model_dir)
    module = HubEncoder(encoder, tokenizer, mlm_head=heads.get("mlm"))
    with compat.tracing_for_save():  # each function traced once, not again by the save
        # Trace both modes so that the SavedModel answers ``training=True`` (fine-tuning) too.
        for training in (False, True):
            module.__call__.get_concrete_function(INPUT_SPEC, training=training)
        # Signatures (TF Serving) need flat outputs: encoder_outputs become encoder_outputs_0..L-1.
        # ``serve`` takes the dict positionally (keras.layers.TFSMLayer(path, call_endpoint="serve"));
        # the serving_default signature is the same function called with keyword arguments.
        module.serve = _flat_signature(module, INPUT_SPEC)
        module.serving_default = module.serve  # TFSMLayer(path, call_endpoint="serving_default") too
        signatures = {"serving_default": module.serve.get_concrete_function()}
        if heads.get("mlm") is not None:
            signatures["mlm"] = _flat_signature(module.mlm, module.mlm.__call__.input_signature[0]).get_concrete_function()
        # Strings in, answers out: fill_mask (mlm head) and next_sentence (nsp head).
        head_signatures = add_head_signatures(module, encoder, heads, model_dir) if head_signatures else {}
        signatures.update(head_signatures)
        warmups = warmup_requests(head_signatures, tokenizer) if head_signatures else []
        if xla_signature:
            signatures.update(fast_serving.add_xla_signature(module, encoder, INPUT_SPEC))
            warmups += fast_serving.xla_warmup_requests(INPUT_SPEC)
    out_dir = pathlib.Path(out_dir)

    def write(tmp):
        tf.saved_model.save(module, str(tmp), signatures=signatures)
        if warmups:
            write_warmup_requests_for(tmp, out_dir.parent.name, warmups)

    return write_export(out_dir, write, kind="encoder", source=model_dir, overwrite=overwrite)
