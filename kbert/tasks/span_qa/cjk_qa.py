"""KorQuAD 1.0 (Korean) and CMRC 2018 (Chinese) span QA as named tasks on the span_qa type.

  task          metrics (the official scripts', x100)                      predictions
  korquad/v1.0  exact_match, f1 over characters (evaluate-v1.0.py)         predictions.json {question id: answer}
  cmrc2018      exact_match, f1 by mixed segmentation and longest common   predictions.json {question id: answer}
                substring (cmrc2018_evaluate.py; NLTK: kbert[zh])

Both files are SQuAD v1.1 JSON, read by kbert.data.squad as for every span-QA task: evaluation and
``kbert predict`` keep every answer's text, as the official scripts score them (CMRC 2018's dev set
has answers with ``answer_start`` -1, an annotator's own words); training takes each question's first
answer that is a span of its context and leaves out (naming them) the questions with none.
``--data-dir`` holds the official names (KorQuAD_v1.0_train.json / KorQuAD_v1.0_dev.json;
cmrc2018_train.json / cmrc2018_dev.json, and cmrc2018_trial.json with --eval-split trial);
``--train-articles`` / ``--eval-articles`` (the tasks' ``kbert.tasks.ArticlesOptions``) split one
file by articles, read as it is (KorQuAD's licence allows no modified copy, so a subset is chosen at
run time, never written). Windows over long contexts follow --doc-stride as for SQuAD, and every
answer is cut from its context by the tokenizer's character offsets: Korean spacing, Chinese without
spaces and full-width punctuation come back as written. ``kbert predict`` on such a model writes the
{question id: answer} file the official scripts read.
"""

from __future__ import annotations

from kbert.tasks.span_qa.metrics_cjk import cmrc2018_metrics, korquad_metrics
from kbert.tasks.span_qa.task import ArticlesOptions, SquadRecipe
from kbert.tasks.core.registry import get_task_type, register_task

KORQUAD_FILES = {"train": "KorQuAD_v1.0_train.json", "dev": "KorQuAD_v1.0_dev.json"}
CMRC_FILES = {"train": "cmrc2018_train.json", "dev": "cmrc2018_dev.json", "trial": "cmrc2018_trial.json"}


class _OfficialQARecipe(SquadRecipe):
    Settings = None  # one version and the official file names (``files``): nothing to set per task
    files: dict = {}
    metric = None  # (predictions {id: text}, examples) -> {"exact_match", "f1", ...}

    def paths(self):
        o = self.options
        return self.data_file(self.files, "train", o.train_file), self.data_file(self.files, self.eval_split,
                                                                                  o.eval_file)

    def is_version_2(self, train) -> bool:
        return False  # every question has an answer

    def evaluate(self, model):
        by_id = self.dev_predictions(model)
        result = type(self).metric({k: p.text for k, p in by_id.items()}, self.dev)
        return {"exact_match": result["exact_match"], "f1": result["f1"]}, by_id


class KorquadRecipe(_OfficialQARecipe):
    files = KORQUAD_FILES
    metric = staticmethod(korquad_metrics)


class CmrcRecipe(_OfficialQARecipe):
    files = CMRC_FILES
    metric = staticmethod(cmrc2018_metrics)



class SubmissionPredictor:
    """kbert predict for KorQuAD / CMRC 2018 models: the span_qa type's reading and answers, with
    the official {question id: answer} JSON as the default output."""

    def __getattr__(self, name):  # read_prediction_input, predict, format_predictions, input_formats
        return getattr(get_task_type("span_qa"), name)

    def output_formats(self, task_meta):
        return ("squad", "jsonl", "tsv")


register_task("korquad/v1.0", "span_qa", recipe=KorquadRecipe, options=ArticlesOptions, tfrecords=False,
              predictor=SubmissionPredictor(), aliases=("korquad",),
              help="KorQuAD 1.0, exact match and character F1 (--data-dir: KorQuAD_v1.0_train.json, "
                   "KorQuAD_v1.0_dev.json; or --train-file/--eval-file with --train-articles/--eval-articles)")
register_task("cmrc2018", "span_qa", recipe=CmrcRecipe, options=ArticlesOptions, tfrecords=False,
              predictor=SubmissionPredictor(),
              help="CMRC 2018, exact match and F1 by mixed segmentation (--data-dir: cmrc2018_train.json, "
                   "cmrc2018_dev.json; or --train-file/--eval-file with --train-articles/--eval-articles)")
