"""Hands-on BERT: ask a pre-trained model questions and look inside it.

* ``fill_mask``/``next_sentence`` (and ``*_ids``): the MLM and NSP heads' answers (``predict``);
* ``python -m kbert.explore {fill-mask,next-sentence,attention}``: the same from the shell, and the
  attention page (``attention_html``) and picture (``attention_png``);
* ``projector``: embeddings for TensorBoard's projector; ``fill_mask_callback``: pre-training logs
  fill-mask guesses; ``curves``: a PNG of a run's loss/accuracy curves.
"""

from kbert.explore.predict import fill_mask, fill_mask_ids, next_sentence, next_sentence_ids

__all__ = ["fill_mask", "fill_mask_ids", "next_sentence", "next_sentence_ids"]
