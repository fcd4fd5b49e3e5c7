"""Task type "tagging": a tag for each word (NER, the paper's Figure 3 d), on its first word piece.

  model          TokenTagger
  ner_alignment  word tags <-> word-piece labels, entity spans
  iob_graph      IOB2 entity chunking in the graph (exports)
  char_tagging   a tag per character (languages written without spaces)
  task           the task type, its Recipe and the CoNLL-2003 task
  metrics        entity F1 (seqeval)
  submission     CoNLL's prediction file
  klue           KLUE NER
"""

# Modules that register named tasks only (kbert.tasks.core.registry imports them on the first lookup).
NAMED_TASKS = ("klue",)
