"""JGLUE's JSQuAD (Kurihara et al., LREC 2022; yahoojapan/JGLUE) as a named task on the span-QA type:
SQuAD 1.1 rules, exact match and character F1; predictions.json {id: answer} and nbest, as SQuAD's.
Files as for the other JGLUE tasks (kbert.tasks.classification.jglue); inputs (question, context), as
JGLUE's run_qa.

JSQuAD contexts are ``"<title> [SEP] <paragraph>"`` (JGLUE writes the article title and a literal
``[SEP]`` in front of each paragraph). JGLUE's fine-tuning hands that string to the tokenizer as it
is, and transformers' tokenizers turn the literal ``[SEP]`` into the [SEP] token. kbert does the
same: the ``mecab-wordpiece`` and ``mecab-character`` tokenizers cut a text at special tokens written
in it (id 3 = [SEP] where the text says ``[SEP]``, spanning those five characters, so an answer can
never start inside it). The ``sentencepiece`` tokenizer follows the sentencepiece package, whose
control symbols never match text: there ``[SEP]`` is the pieces of the characters ``[``, ``SEP``, ``]``
(the model sees the title and the paragraph separated by ordinary text). The ``wordpiece`` tokenizer
follows google-research/bert's, which also reads ``[SEP]`` as ``[``, ``sep``, ``]``. Answers are
mapped back to the context through the tokenizer's character offsets, so the predicted text is
written exactly as in the context (full-width characters included, whatever NFKC did for the model).
F1 is JGLUE's character F1 (``kbert.tasks.span_qa.metrics.squad_char_f1``) whatever the tokenizer.
Answers are read as for every span-QA task (kbert.data.squad): evaluation scores every answer's
text; training takes a question's first answer whose ``answer_start`` points at its text (or is at
most 2 characters off) and leaves out, naming them, the questions with none.
"""

from __future__ import annotations

from kbert.data import jglue
from kbert.tasks.core.registry import register_task
from kbert.tasks.span_qa.task import ArticlesOptions, SquadRecipe


def _path(recipe, split: str, override) -> str:
    return jglue.task_path(recipe.options.data_dir, split, override, recipe.task.name)


class JsquadRecipe(SquadRecipe):
    """SQuAD 1.1 rules (every question answerable) with JGLUE's character F1."""

    Settings = None  # JGLUE's file names and one version: nothing to set per task
    f1_unit = "char"

    def paths(self):
        o = self.options
        return _path(self, "train", o.train_file), _path(self, self.eval_split, o.eval_file)

    def read_file(self, path):
        return jglue.read_jsquad(path)

    def is_version_2(self, train) -> bool:
        return False  # JSQuAD's files say is_impossible: false everywhere; read_jsquad refuses true


_FILES = "--data-dir: train*.json and valid*.json / dev*.json"
register_task("jglue/jsquad", "span_qa", recipe=JsquadRecipe, options=ArticlesOptions, tfrecords=False,
              help=f"JGLUE JSQuAD, span QA, exact match and character F1 ({_FILES})")
