"""What every tokenizer answers about its vocabulary, against the vocabulary file itself."""

import pytest
import tensorflow as tf

from conftest import UNCASED_VOCAB


def test_lookups_and_hub_special_tokens_follow_the_file(uncased_tokenizer):
    tokens = UNCASED_VOCAB.read_text(encoding="utf-8").splitlines()
    tok = uncased_tokenizer
    assert tok.vocab_size == len(tokens) == 30522
    assert tok.get_vocabulary() == tokens
    assert tok.id_to_token(2023) == tokens[2023] and tok.token_to_id(tokens[2023]) == 2023
    assert tok.token_to_id("[MASK]") == tokens.index("[MASK]")
    special = {k: int(v) for k, v in tok.get_special_tokens_dict().items()}
    assert special == {"vocab_size": len(tokens), "start_of_sequence_id": tokens.index("[CLS]"),
                       "end_of_segment_id": tokens.index("[SEP]"), "padding_id": tokens.index("[PAD]"),
                       "mask_id": tokens.index("[MASK]")}
    assert all(v.dtype == tf.int32 for v in tok.get_special_tokens_dict().values())
    assert tok.special_token_ids["unknown_id"] == tokens.index("[UNK]")
    with pytest.raises(KeyError, match="'notatoken' is not in the vocabulary"):
        tok.token_to_id("notatoken")
