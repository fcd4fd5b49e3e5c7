"""BERT's input side in the TensorFlow graph: tokenizer, packer, preprocessor, vocabularies."""

from kbert.text.packer import BertPacker
from kbert.text.preprocessor import BertPreprocessor
from kbert.text.registry import create_tokenizer, load_tokenizer, register_tokenizer
from kbert.text.spec import TokenizerSpec
from kbert.text.tokenizer import BertTokenizer
from kbert.text.vocab import VocabError, load_vocab, special_token_ids

__all__ = ["BertPacker", "BertPreprocessor", "BertTokenizer", "TokenizerSpec", "VocabError", "create_tokenizer",
           "load_tokenizer", "load_vocab", "register_tokenizer", "special_token_ids"]
