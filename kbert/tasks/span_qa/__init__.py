"""Task type "span_qa": an answer span in a context for each question (SQuAD 1.1 / 2.0, the paper's
Figure 3 c).

  model          SpanQuestionAnswerer
  postprocess    SQuAD windows (doc stride) and answer post-processing, in numpy
  graph          the same answers from raw strings in one TensorFlow graph (exports)
  words_answers  answers in word units for the words-in exports (MeCab tokenizers)
  task           the task type, its Recipe and the SQuAD tasks
  metrics        SQuAD's exact match and F1; metrics_cjk: KorQuAD's and CMRC 2018's
  submission     SQuAD's prediction files
  jglue, cjk_qa  JGLUE's JSQuAD; KorQuAD 1.0 and CMRC 2018
"""

# Modules that register named tasks only (kbert.tasks.core.registry imports them on the first lookup).
NAMED_TASKS = ("jglue", "cjk_qa")
