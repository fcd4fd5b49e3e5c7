from kbert.models.encoder import BertEncoder

__all__ = ["BertEncoder"]
