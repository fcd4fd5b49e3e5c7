"""What every task family shares: the registry of task types and named tasks, the base model
(``TaskModel``) and heads, the fine-tuning Recipe, options, batching and datasets, evaluation,
prediction and serving signatures. Nothing here names a benchmark; the families
(``kbert.tasks.classification``, ``tagging``, ``span_qa``, ``multiple_choice``) build on it.
"""
