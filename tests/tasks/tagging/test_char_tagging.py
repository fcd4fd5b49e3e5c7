"""kbert.tasks.tagging.char_tagging: tags per piece to tags per character by hand, and the
features of a Hangul text (jamo pieces) mapped back to their characters."""

from kbert.tasks.tagging.char_tagging import to_char_tags


def test_char_tags_from_piece_tags_by_hand():
    text = "김철수 씨는"
    # pieces: 김 (0,1) ##철수 (1,3) 씨 (4,5) ##는 (5,6); the space (3) is in no piece
    tags = to_char_tags(["B-PS", "I-PS", "O", "O"], [(0, 1), (1, 3), (4, 5), (5, 6)], len(text))
    assert tags == ["B-PS", "I-PS", "I-PS", "O", "O", "O"]
    # a piece's later characters continue its entity; two pieces of one character (jamo): the first counts
    assert to_char_tags(["B-LC", "O"], [(0, 2), (0, 2)], 3) == ["B-LC", "I-LC", "O"]
    assert to_char_tags(["B-DT", "I-OG"], [(1, 2), (1, 2)], 2) == ["O", "B-DT"]


def test_char_features_on_hangul_jamo(tiny_model_dir):
    """An uncased model decomposes Hangul into jamo (several pieces per syllable): every piece maps
    back to its syllable, only the first piece of a character is labelled, and predictions come back
    one per character, spaces included."""
    from kbert.data.klue import NER_LABELS
    from kbert.tasks.tagging.char_tagging import char_features
    from kbert.tasks.tagging.ner_alignment import IGNORE_INDEX
    from kbert.tasks.tagging.model import TokenTagger

    model = TokenTagger.from_model_dir(tiny_model_dir, label_names=list(NER_LABELS), seq_length=64, load_head=False)
    text = "B 씨는 서울"
    tags = ["B-PS", "O", "O", "O", "O", "B-LC", "I-LC"]
    inputs, labels, spans = char_features(model, [text], [tags], NER_LABELS)
    starts = [s for s, _ in spans[0]]
    assert len(starts) > len(text) - 2  # jamo: more pieces than non-space characters
    assert all(text[s:e].strip() for s, e in spans[0]) and all(e - s == 1 for s, e in spans[0])
    first = [j for j, s in enumerate(starts) if j == 0 or s != starts[j - 1]]
    row = labels[0, 1:1 + len(starts)]
    assert [NER_LABELS[row[j]] for j in first] == [tags[starts[j]] for j in first]
    assert all(row[j] == IGNORE_INDEX for j in range(len(starts)) if j not in first)
    assert inputs["input_mask"][0].sum() == len(starts) + 2
