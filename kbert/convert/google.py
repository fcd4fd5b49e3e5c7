"""Google's original TF1 BERT checkpoints <-> kbert model directories.

Reads with ``tf.train.load_checkpoint`` (no graph, no session); writes with
``tf.compat.v1.train.Saver`` under the original variable names so that tools that read Google
checkpoints (tf-models-official's converter, transformers) read ours.
"""

from __future__ import annotations

import pathlib
import shutil

from kbert.config import BertConfig
from kbert.convert.common import write_model_dir
from kbert.convert.names import ConversionError, encoder_variables, export_arrays, head_variables, is_model_weight
from kbert.convert.tokenizer_source import DEFAULT_MECAB_DIC, spec_for_type


def read_checkpoint(prefix) -> dict:
    import tensorflow as tf

    prefix = str(prefix)
    try:
        reader = tf.train.load_checkpoint(prefix)
    except (tf.errors.NotFoundError, tf.errors.DataLossError, ValueError) as e:
        raise ConversionError(f"cannot read checkpoint {prefix}: {e}") from None
    return {
        name: reader.get_tensor(name)
        for name in reader.get_variable_to_shape_map()
        if is_model_weight(name)
    }


def convert(ckpt_prefix, out_dir, config_file=None, vocab_file=None, do_lower_case=True,
            tokenizer="wordpiece", mecab_dic=DEFAULT_MECAB_DIC) -> pathlib.Path:
    """``tokenizer``: the tokenizer type the checkpoint was trained with (Google's checkpoints do not
    say; ``do_lower_case`` only matters for ``wordpiece``)."""
    ckpt_prefix = pathlib.Path(ckpt_prefix)
    folder = ckpt_prefix.parent
    config_file = pathlib.Path(config_file or folder / "bert_config.json")
    spec = spec_for_type(tokenizer, cased=not do_lower_case, mecab_dic=mecab_dic)
    vocab_file = pathlib.Path(vocab_file or folder / spec.vocab_file)
    if not config_file.exists():
        raise ConversionError(f"no bert_config.json: looked for {config_file} (pass --config)")
    config = BertConfig.from_json_file(config_file)
    arrays = read_checkpoint(ckpt_prefix)
    return write_model_dir(config, arrays, vocab_file, out_dir, spec, str(ckpt_prefix))


def to_google(model_dir, out_prefix) -> pathlib.Path:
    """Writes ``OUT_PREFIX.{index,data-*}`` plus bert_config.json and vocab.txt beside it."""
    import tensorflow as tf

    from kbert.model_dir import load_encoder, load_heads

    model_dir = pathlib.Path(model_dir)
    encoder = load_encoder(model_dir)
    variables = encoder_variables(encoder)
    for name, head in load_heads(model_dir, encoder.config).items():
        variables.update(head_variables(name, head))
    arrays = export_arrays(variables)
    out_prefix = pathlib.Path(out_prefix)
    out_prefix.parent.mkdir(parents=True, exist_ok=True)
    with tf.Graph().as_default():
        tf_vars = [tf.compat.v1.Variable(value, name=name) for name, value in sorted(arrays.items())]
        saver = tf.compat.v1.train.Saver(tf_vars)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            saver.save(session, str(out_prefix), write_meta_graph=False, write_state=False)
    shutil.copyfile(model_dir / "bert_config.json", out_prefix.parent / "bert_config.json")
    shutil.copyfile(model_dir / "vocab.txt", out_prefix.parent / "vocab.txt")
    return out_prefix
