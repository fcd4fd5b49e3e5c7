"""Hands-on BERT: ask a pre-trained model questions and look inside it.

* ``fill_mask``/``next_sentence`` (and ``*_ids``): the MLM and NSP heads' answers (``predict``);
* ``python -m kbert.explore {fill-mask,next-sentence,attention}``: the same from the shell, and the
  attention page (``attention_html``) and picture (``attention_png``);
* ``projector``: embeddings for TensorBoard's projector; ``fill_mask_callback``: pre-training logs
  fill-mask guesses; ``curves``: a PNG of a run's loss/accuracy curves.

The functions are imported on first use (``kbert.api_export``), so ``python -m kbert.explore --help``
starts without TensorFlow.
"""

from kbert.api_export import face as _face

__getattr__, __dir__, __all__ = _face(__name__)
