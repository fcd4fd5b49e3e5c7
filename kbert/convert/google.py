"""Google's original TF1 BERT checkpoints <-> kbert model directories.

Reads with ``tf.train.load_checkpoint`` (no graph, no session); writes with
``tf.compat.v1.train.Saver`` under the original variable names so that tools that read Google
checkpoints (tf-models-official's converter, transformers) read ours.
"""

from __future__ import annotations

import pathlib
import shutil
import tempfile
import zipfile

from kbert.config import BertConfig
from kbert.convert.common import check_output_dir, write_model_dir
from kbert.convert.inputs import extract_zip, input_file
from kbert.model_dir import pending_write
from kbert.convert.names import ConversionError, encoder_variables, export_arrays, head_variables, is_model_weight
from kbert.convert.tokenizer_source import DEFAULT_MECAB_DIC, spec_for_type
from kbert.api_export import kbert_export


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


# google-research/bert's releases and their case (its tokenization.validate_case_matches_checkpoint).
CASED_RELEASES = ("cased_L-12_H-768_A-12", "cased_L-24_H-1024_A-16", "multi_cased_L-12_H-768_A-12",
                  "wwm_cased_L-24_H-1024_A-16")
UNCASED_RELEASES = ("uncased_L-12_H-768_A-12", "uncased_L-24_H-1024_A-16", "multilingual_L-12_H-768_A-12",
                    "chinese_L-12_H-768_A-12", "wwm_uncased_L-24_H-1024_A-16")
CHECKPOINT_NAME = "bert_model.ckpt"


def find_checkpoint(folder) -> pathlib.Path:
    """The checkpoint prefix in a release folder (``uncased_L-12_H-768_A-12/bert_model.ckpt``, at any
    depth): the folder holding ``bert_config.json`` and one ``*.index`` (``bert_model.ckpt`` preferred)."""
    folder = pathlib.Path(folder)
    configs = sorted(p for p in folder.rglob("bert_config.json") if "__MACOSX" not in p.parts)
    if len(configs) != 1:
        found = ", ".join(str(p) for p in configs) or "none"
        raise ConversionError(f"{folder}: expected one bert_config.json (a google-research/bert release), "
                              f"found {found}")
    home = configs[0].parent
    indexes = sorted(home.glob("*.index"))
    names = [p.name[: -len(".index")] for p in indexes]
    if CHECKPOINT_NAME in names:
        return home / CHECKPOINT_NAME
    if len(names) != 1:
        raise ConversionError(f"{home}: expected one checkpoint (bert_model.ckpt.index), found "
                              f"{', '.join(names) or 'none'}; pass its prefix instead")
    return home / names[0]


def release_case(path) -> bool | None:
    """``do_lower_case`` of a google-research/bert release recognised by its folder name, else None."""
    for part in reversed(pathlib.Path(path).parts):
        stem = part[:-len(".zip")] if part.endswith(".zip") else part
        if stem in CASED_RELEASES:
            return False
        if stem in UNCASED_RELEASES:
            return True
    return None


def convert(ckpt_prefix, out_dir, config_file=None, vocab_file=None, do_lower_case=None,
            tokenizer="wordpiece", mecab_dic=DEFAULT_MECAB_DIC, overwrite: bool = False) -> pathlib.Path:
    """``ckpt_prefix``: a checkpoint prefix, a release folder or a release ``.zip``.
    ``tokenizer``: the tokenizer type the checkpoint was trained with (Google's checkpoints do not
    say). ``do_lower_case`` (WordPiece only): None takes it from a release's known name
    (``cased_L-12_H-768_A-12``...), and is True for other names; a value that contradicts a
    known release is refused."""
    source = pathlib.Path(ckpt_prefix)
    check_output_dir(out_dir, overwrite)
    if source.is_file() and zipfile.is_zipfile(source):
        with tempfile.TemporaryDirectory(prefix="kbert-google-") as tmp, pending_write(tmp):
            extract_zip(source, tmp)
            prefix = find_checkpoint(tmp)
            # Names inside the zip are shown as the zip's: they are gone after the conversion.
            return _convert_prefix(prefix, out_dir, config_file, vocab_file, _case(do_lower_case, source, prefix),
                                   tokenizer, mecab_dic, overwrite, shown=f"{source}:{prefix.relative_to(tmp)}")
    if source.is_dir():
        prefix = find_checkpoint(source)
    else:
        prefix = source
    return _convert_prefix(prefix, out_dir, config_file, vocab_file, _case(do_lower_case, source, prefix),
                           tokenizer, mecab_dic, overwrite, shown=str(prefix))


def _case(do_lower_case, source, prefix) -> bool:
    known = release_case(source) if release_case(source) is not None else release_case(prefix.parent)
    if do_lower_case is None:
        return True if known is None else known
    if known is not None and known != do_lower_case:
        raise ConversionError(
            f"{source} is google-research/bert's {'uncased' if known else 'cased'} release, but the conversion "
            f"was asked for a {'uncased' if do_lower_case else 'cased'} vocabulary "
            f"({'drop' if known else 'add'} --cased)")
    return do_lower_case


def _convert_prefix(ckpt_prefix, out_dir, config_file, vocab_file, do_lower_case, tokenizer, mecab_dic, overwrite,
                    shown) -> pathlib.Path:
    ckpt_prefix = pathlib.Path(ckpt_prefix)
    folder = ckpt_prefix.parent
    spec = spec_for_type(tokenizer, cased=not do_lower_case, mecab_dic=mecab_dic)
    # The checkpoint's folder is read, not followed (kbert.convert.inputs); files named by the
    # user (--config, --vocab) are theirs to choose.
    for name in [ckpt_prefix.name + ".index", *(p.name for p in folder.glob(ckpt_prefix.name + ".data-*"))]:
        input_file(folder, name)
    config_file = pathlib.Path(config_file) if config_file else (
        input_file(folder, "bert_config.json") or folder / "bert_config.json")
    vocab_file = pathlib.Path(vocab_file) if vocab_file else (
        input_file(folder, spec.vocab_file) or folder / spec.vocab_file)
    if not config_file.exists():
        raise ConversionError(f"no bert_config.json: looked for {config_file} (pass --config)")
    config = BertConfig.from_json_file(config_file)
    arrays = read_checkpoint(ckpt_prefix)
    return write_model_dir(config, arrays, vocab_file, out_dir, spec, shown, overwrite=overwrite)


@kbert_export("kbert.to_google")
def to_google(model_dir, out_prefix) -> pathlib.Path:
    """Writes a model directory as Google's TF1 checkpoint (``OUT_PREFIX.{index,data-*}``), with
    ``bert_config.json`` and ``vocab.txt`` beside it: what google-research/bert and its converters read.

    Args:
        model_dir: a model directory (WordPiece).
        out_prefix: the checkpoint prefix, e.g. ``out/bert_model.ckpt``.

    Returns:
        ``out_prefix``, a ``pathlib.Path``.

    Raises:
        kbert.convert.names.ConversionError: the model directory's encoder is causal (a left-to-right
            language model), which Google's format cannot record.

    Examples:
        >>> import kbert
        >>> prefix = kbert.to_google(kbert.random_model_dir("runs/tiny"), "runs/google/bert_model.ckpt")
        >>> sorted(p.name for p in prefix.parent.iterdir())[:3]
        ['bert_config.json', 'bert_model.ckpt.data-00000-of-00001', 'bert_model.ckpt.index']
        >>> kbert.convert_google(prefix, "runs/from_google", overwrite=True).name
        'from_google'
    """
    import tensorflow as tf

    from kbert.model_dir import is_causal, load_encoder, load_heads

    model_dir = pathlib.Path(model_dir)
    if is_causal(model_dir):
        raise ConversionError(f"{model_dir} has a causal (left-only) encoder, which Google's checkpoint format cannot "
                              "record (bert_config.json has no such field): google-research/bert would read it as "
                              "a bidirectional model")
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
