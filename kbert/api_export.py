"""kbert's public names: declared where each object is defined, served lazily by the package faces.

An object becomes public by one line above its definition (or one call, for a value)::

    @kbert_export("kbert.BertEncoder")
    class BertEncoder(keras.Model): ...

    kbert_export("kbert.PRESETS")(PRESETS)

``PUBLIC`` below maps each public name to the module that defines it. It is what ``import kbert``
reads, so ``kbert.NAME`` is imported on first use (PEP 562) and ``import kbert`` or a command's
``--help`` loads no TensorFlow. tests/test_public_api.py checks that ``PUBLIC`` and the
``kbert_export`` declarations are the same set, so the two cannot drift apart. This module imports
nothing of kbert.
"""

from __future__ import annotations

import importlib

# public name -> the module that defines it (and declares it with kbert_export)
PUBLIC = {
    # the model: configuration, encoder, pre-training model, model directories
    "kbert.BertConfig": "kbert.config",
    "kbert.ConfigError": "kbert.config",
    "kbert.PRESETS": "kbert.config",
    "kbert.BertEncoder": "kbert.models.encoder",
    "kbert.BertPretrainer": "kbert.models.pretrainer",
    "kbert.load_encoder": "kbert.hub_models",
    "kbert.resolve_model_dir": "kbert.hub_models",
    "kbert.save_model_dir": "kbert.model_dir",
    "kbert.random_model_dir": "kbert.random_model",
    # tokenizers
    "kbert.TokenizerSpec": "kbert.text.spec",
    "kbert.text.TokenizerSpec": "kbert.text.spec",
    "kbert.create_tokenizer": "kbert.text.registry",
    "kbert.text.create_tokenizer": "kbert.text.registry",
    "kbert.load_tokenizer": "kbert.hub_models",
    "kbert.text.load_tokenizer": "kbert.text.registry",
    "kbert.register_tokenizer": "kbert.text.registry",
    "kbert.text.register_tokenizer": "kbert.text.registry",
    "kbert.BertPreprocessor": "kbert.text.preprocessor",
    "kbert.text.BertPreprocessor": "kbert.text.preprocessor",
    "kbert.text.BertPacker": "kbert.text.packer",
    "kbert.text.BertTokenizer": "kbert.text.tokenizer",
    "kbert.text.VocabError": "kbert.text.vocab",
    "kbert.text.load_vocab": "kbert.text.vocab",
    "kbert.text.special_token_ids": "kbert.text.vocab",
    # task models
    "kbert.TaskModel": "kbert.tasks.base",
    "kbert.tasks.TaskModel": "kbert.tasks.base",
    "kbert.tasks.TaskModelError": "kbert.tasks.base",
    "kbert.load_task_model": "kbert.tasks.base",
    "kbert.tasks.load_task_model": "kbert.tasks.base",
    "kbert.TextClassifier": "kbert.tasks.classifier",
    "kbert.tasks.TextClassifier": "kbert.tasks.classifier",
    "kbert.TextRegressor": "kbert.tasks.classifier",
    "kbert.tasks.TextRegressor": "kbert.tasks.classifier",
    "kbert.MultiLabelClassifier": "kbert.tasks.classifier",
    "kbert.tasks.MultiLabelClassifier": "kbert.tasks.classifier",
    "kbert.TokenTagger": "kbert.tasks.tagger",
    "kbert.tasks.TokenTagger": "kbert.tasks.tagger",
    "kbert.SpanQuestionAnswerer": "kbert.tasks.span_qa",
    "kbert.tasks.SpanQuestionAnswerer": "kbert.tasks.span_qa",
    "kbert.MultipleChoiceModel": "kbert.tasks.multiple_choice",
    "kbert.tasks.MultipleChoiceModel": "kbert.tasks.multiple_choice",
    "kbert.tasks.get_task": "kbert.tasks.registry",
    "kbert.tasks.task_names": "kbert.tasks.registry",
    "kbert.tasks.register_task": "kbert.tasks.registry",
    "kbert.tasks.register_task_type": "kbert.tasks.registry",
    "kbert.tasks.TaskType": "kbert.tasks.task_type",
    "kbert.tasks.Recipe": "kbert.tasks.task_type",
    # training, prediction
    "kbert.PretrainOptions": "kbert.training.pretrain",
    "kbert.pretrain": "kbert.training.pretrain",
    "kbert.FinetuneOptions": "kbert.tasks.options",
    "kbert.TableOptions": "kbert.tasks.plugins.classification",
    "kbert.finetune": "kbert.training.finetune",
    "kbert.PredictOptions": "kbert.tasks.prediction",
    "kbert.predict_file": "kbert.tasks.predict",
    # feature extraction
    "kbert.FeatureExtractor": "kbert.features.extract",
    "kbert.features.FeatureExtractor": "kbert.features.extract",
    "kbert.extract_arrays": "kbert.features.extract",
    "kbert.features.extract_arrays": "kbert.features.extract",
    "kbert.features.COMBINATIONS": "kbert.features.extract",
    "kbert.features.check_combinations": "kbert.features.extract",
    "kbert.features.combine_layers": "kbert.features.extract",
    "kbert.features.read_rows": "kbert.features.extract",
    # exports
    "kbert.export_encoder": "kbert.export.encoder",
    "kbert.export_preprocessor": "kbert.export.preprocessor",
    "kbert.export_hub_pair": "kbert.export.hub_pair",
    "kbert.export_task": "kbert.export.task",
    "kbert.export_onnx": "kbert.export.onnx.export",
    # converters
    "kbert.convert_hf": "kbert.convert.api",
    "kbert.convert_google": "kbert.convert.api",
    "kbert.to_google": "kbert.convert.google",
    "kbert.check_conversion": "kbert.convert.check",
    "kbert.ConversionError": "kbert.convert.names",
    # hands-on: the pre-training heads' answers and the attention page
    "kbert.PretrainingHeads": "kbert.explore.heads_model",
    "kbert.fill_mask": "kbert.explore.predict",
    "kbert.explore.fill_mask": "kbert.explore.predict",
    "kbert.explore.fill_mask_ids": "kbert.explore.predict",
    "kbert.next_sentence": "kbert.explore.predict",
    "kbert.explore.next_sentence": "kbert.explore.predict",
    "kbert.explore.next_sentence_ids": "kbert.explore.predict",
    "kbert.text_attentions": "kbert.explore.attention",
    "kbert.render_attention_html": "kbert.explore.attention_html",
    "kbert.render_attention_png": "kbert.explore.attention_png",
    # errors a caller may catch
    "kbert.OptionsError": "kbert.errors",
    "kbert.DataError": "kbert.errors",
}

# the subpackages whose faces serve names of their own (kbert.tasks.X); `kbert.SUB` imports them on use
FACES = ("kbert", "kbert.text", "kbert.tasks", "kbert.features", "kbert.explore")


def kbert_export(*names: str):
    """Declares an object public under each dotted name in ``names`` (``"kbert.BertEncoder"``).

    Args:
        *names: the public names, each ``kbert.NAME`` or ``kbert.SUBPACKAGE.NAME``.

    Returns:
        A decorator that records ``names`` on the object (``__kbert_api__``, where the object takes
        attributes) and returns the object unchanged.

    Examples:
        >>> from kbert.api_export import kbert_export
        >>> @kbert_export("kbert.example_name")
        ... def example_name():
        ...     return 1
        >>> example_name.__kbert_api__
        ('kbert.example_name',)
    """
    for name in names:
        if not name.startswith("kbert."):
            raise ValueError(f"a public name starts with 'kbert.', got {name!r}")

    def declare(obj):
        try:
            obj.__kbert_api__ = tuple(names)
        except (AttributeError, TypeError):  # a dict or another value that takes no attribute
            pass
        return obj

    return declare


def face(package: str):
    """``(__getattr__, __dir__, __all__)`` of the lazy face of ``package`` (one of ``FACES``)."""
    prefix = package + "."
    table = {name[len(prefix):]: module for name, module in PUBLIC.items()
             if name.startswith(prefix) and "." not in name[len(prefix):]}
    subpackages = {f[len(prefix):] for f in FACES if f.startswith(prefix)}
    names = sorted(table)

    def __getattr__(name):
        if name in table:
            return getattr(importlib.import_module(table[name]), name)  # module names from a fixed table
        if name in subpackages:
            return importlib.import_module(prefix + name)  # module names from a fixed table (FACES)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted(set(names) | subpackages)

    return __getattr__, __dir__, names
