"""Hands-on BERT: ask a pre-trained model questions and look inside it.

* ``fill_mask``/``next_sentence`` (and ``*_ids``): the MLM and NSP heads' answers (``predict``);
* ``python -m kbert.explore {fill-mask,next-sentence,attention}``: the same from the shell, and the
  attention page (``attention_html``) and picture (``attention_png``);
* ``projector``: embeddings for TensorBoard's projector; ``fill_mask_callback``: pre-training logs
  fill-mask guesses; ``curves``: a PNG of a run's loss/accuracy curves.

The functions are imported on first use, so ``python -m kbert.explore --help`` starts without
TensorFlow.
"""

__all__ = ["fill_mask", "fill_mask_ids", "next_sentence", "next_sentence_ids"]


def __getattr__(name):
    if name in __all__:
        from kbert.explore import predict

        return getattr(predict, name)
    raise AttributeError(f"module 'kbert.explore' has no attribute {name!r}")
