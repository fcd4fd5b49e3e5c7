"""Task type "classification": one label, a score or several labels for a text or a pair, from
the pooled [CLS] output (the paper's Figure 3 a, b).

  model          TextClassifier, TextRegressor, MultiLabelClassifier
  window_inputs  long documents read in windows and combined into one answer
  task           the task type, its Recipe, options (TableOptions), and the GLUE and CSV tasks
  predict        kbert predict: tables and GLUE TSVs
  submission     GLUE's submission files
  jglue, klue    JGLUE's JSTS and JNLI, KLUE's NLI and STS
"""

# Modules that register named tasks only (kbert.tasks.core.registry imports them on the first lookup).
NAMED_TASKS = ("jglue", "klue")
