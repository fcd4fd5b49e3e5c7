"""The three scales of ``kbert paper`` in one place: a ``Scale`` each (docs/paper.md explains them).

``micro`` is for the tests and a first look (seconds per cell on a laptop CPU; the numbers mean
nothing), ``compact`` for one GPU over hours, ``paper`` the paper's own sizes and budget.
A model size of the paper (L layers, H hidden, A heads) is trained at
``(ceil(L / layer_divisor), H // hidden_divisor, A)``: heads are kept, so the head size shrinks.
"""

from __future__ import annotations

import dataclasses
import math

from kbert.errors import OptionsError

PAPER_RATES = (5e-5, 4e-5, 3e-5, 2e-5)
# The GLUE tasks the paper calls small: several restarts there, keeping the best on dev (§4.1).
SMALL_TASKS = ("glue/mrpc", "glue/rte", "glue/cola", "glue/stsb")


@dataclasses.dataclass(frozen=True)
class Scale:
    """A scale's budget: corpus and vocabulary, model sizes, pre-training, fine-tuning protocol.

    Attributes:
        corpus_chars: read at most this many characters of each corpus file (None: all).
        heldout_share: the share of each corpus file's lines (its end) held out for the LM loss.
        vocab_size: WordPiece vocabulary learned from the training part of the corpus.
        layer_divisor, hidden_divisor: the paper's L and H are divided by these (see the module).
        seq_length, max_predictions, batch_size, steps, learning_rate, eval_steps,
        checkpoint_every: pre-training (a checkpoint costs a micro run more than its steps).
        finetune_seq_length, squad_seq_length, finetune_batch_size, epochs, learning_rates,
        restarts, small_task_restarts, max_train_examples, max_eval_examples: fine-tuning.
    """

    name: str
    corpus_chars: int | None
    heldout_share: float
    vocab_size: int
    layer_divisor: int
    hidden_divisor: int
    seq_length: int
    max_predictions: int
    batch_size: int
    steps: int
    learning_rate: float
    eval_steps: int
    checkpoint_every: int
    finetune_seq_length: int
    squad_seq_length: int
    finetune_batch_size: int
    epochs: int
    learning_rates: tuple
    restarts: int
    small_task_restarts: int
    max_train_examples: int | None
    max_eval_examples: int | None

    def size(self, paper_size: tuple) -> tuple:
        """The (L, H, A) trained for the paper's ``paper_size`` at this scale."""
        layers, hidden, heads = paper_size
        return max(1, math.ceil(layers / self.layer_divisor)), hidden // self.hidden_divisor, heads

    def restarts_for(self, task: str) -> int:
        return self.small_task_restarts if task in SMALL_TASKS else self.restarts


SCALES = {
    # 4/48/12 for BERT-Base (8/64/16 Large: four blocks at least, which Table 7's last-four features
    # read); 20 steps of batch 8; 16 training and 16 dev examples per task.
    "micro": Scale("micro", corpus_chars=60_000, heldout_share=0.1, vocab_size=1000, layer_divisor=3,
                   hidden_divisor=16, seq_length=64, max_predictions=10, batch_size=8, steps=20,
                   learning_rate=1e-3, eval_steps=2, checkpoint_every=20, finetune_seq_length=64, squad_seq_length=64,
                   finetune_batch_size=8, epochs=1, learning_rates=(5e-5,), restarts=1, small_task_restarts=1,
                   max_train_examples=16, max_eval_examples=16),
    # 4/384/12 for BERT-Base (8/512/16 Large); 20,000 steps of batch 128 on the whole corpus.
    "compact": Scale("compact", corpus_chars=None, heldout_share=0.02, vocab_size=8000, layer_divisor=3,
                     hidden_divisor=2, seq_length=128, max_predictions=20, batch_size=128, steps=20_000,
                     learning_rate=5e-4, eval_steps=50, checkpoint_every=1000, finetune_seq_length=128, squad_seq_length=384,
                     finetune_batch_size=32, epochs=3, learning_rates=PAPER_RATES, restarts=1,
                     small_task_restarts=3, max_train_examples=None, max_eval_examples=None),
    # The paper's: its sizes, 1M steps of batch 256 (it trained 90% at 128 tokens, 10% at 512: here 128).
    "paper": Scale("paper", corpus_chars=None, heldout_share=0.01, vocab_size=30_000, layer_divisor=1,
                   hidden_divisor=1, seq_length=128, max_predictions=20, batch_size=256, steps=1_000_000,
                   learning_rate=1e-4, eval_steps=100, checkpoint_every=10_000, finetune_seq_length=128, squad_seq_length=384,
                   finetune_batch_size=32, epochs=3, learning_rates=PAPER_RATES, restarts=1,
                   small_task_restarts=5, max_train_examples=None, max_eval_examples=None),
}


def get_scale(name: str) -> Scale:
    try:
        return SCALES[name]
    except KeyError:
        raise OptionsError(f"scale {name!r}; expected one of {', '.join(SCALES)}", option="scale",
                           value=name) from None
