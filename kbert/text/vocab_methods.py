"""What every tokenizer type answers about its vocabulary (one copy for WordPiece, MeCab and SentencePiece).

The tokenizers' base ``kbert.text.tokenizer_layer.TokenizerLayer`` mixes ``TokenVocabulary`` in; a tokenizer
class sets ``self.vocab`` (the token list, id = index) and ``self._special_ids``
(``kbert.text.vocab.special_token_ids``).
"""

from __future__ import annotations

import tensorflow as tf

from kbert.text.inputs import Untracked

HUB_SPECIAL_IDS = ("start_of_sequence_id", "end_of_segment_id", "padding_id", "mask_id")


class TokenVocabulary:
    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    @property
    def special_token_ids(self) -> dict:
        """padding_id, start_of_sequence_id, end_of_segment_id, mask_id, unknown_id."""
        return dict(self._special_ids)

    def get_vocabulary(self) -> list:
        return list(self.vocab)

    def get_special_tokens_dict(self) -> dict:
        """TF Hub's ``tokenize.get_special_tokens_dict()``: int32 scalars."""
        return {"vocab_size": tf.constant(self.vocab_size, tf.int32),
                **{name: tf.constant(self._special_ids[name], tf.int32) for name in HUB_SPECIAL_IDS}}

    def id_to_token(self, token_id: int) -> str:
        return self.vocab[int(token_id)]

    def token_to_id(self, token: str) -> int:
        if not hasattr(self, "_index"):
            self._index = Untracked(ids={t: i for i, t in enumerate(self.vocab)})
        try:
            return self._index.ids[token]
        except KeyError:
            raise KeyError(f"{token!r} is not in the vocabulary") from None
