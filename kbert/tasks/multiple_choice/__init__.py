"""Task type "multiple_choice": the best of N continuations (SWAG), each (context, choice) pair scored
from its [CLS].

  model       MultipleChoiceModel
  task        the task type, its Recipe and the SWAG task
  submission  SWAG's prediction file
  jglue       JGLUE's JCommonsenseQA
"""

# Modules that register named tasks only (kbert.tasks.core.registry imports them on the first lookup).
NAMED_TASKS = ("jglue",)
