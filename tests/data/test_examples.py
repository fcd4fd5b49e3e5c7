"""TaskData (kbert.data.examples): its length is its examples', and each instance has its own meta."""

from kbert.data.examples import TaskData


def test_length_and_a_meta_of_its_own():
    a = TaskData(examples=[{"id": "1"}, {"id": "2"}], label_names=("neg", "pos"), source="a.tsv")
    b = TaskData(examples=[], label_names=None, source="b.tsv")
    a.meta["documents"] = 3
    assert (len(a), len(b)) == (2, 0)
    assert b.meta == {}
