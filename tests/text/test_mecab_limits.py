"""mecab_pieces: long text cut into pieces MeCab can take, after a space or sentence end where there is one."""

from kbert.text.mecab_limits import MECAB_MAX_CHARS, mecab_pieces


def test_short_text_is_one_piece():
    assert mecab_pieces("short text") == ["short text"]
    text = "あ" * MECAB_MAX_CHARS
    assert mecab_pieces(text) == [text]


def test_cut_after_the_last_break_in_the_second_half_else_at_the_limit():
    # limit 10: the second half of the first window is text[5:10]; its last break is the space at 9.
    assert mecab_pieces("abcdef gh ijklmnop", limit=10) == ["abcdef gh ", "ijklmnop"]
    assert mecab_pieces("ab cdefghijklmnopqrstu", limit=10) == ["ab cdefghi", "jklmnopqrs", "tu"]  # break only in the first half
    assert mecab_pieces("今日は晴れ。明日は雨です。", limit=8) == ["今日は晴れ。", "明日は雨です。"]


def test_pieces_join_back_and_keep_to_the_limit():
    text = ("word " * 7 + "longwordwithoutspaces" * 3 + "。") * 40
    pieces = mecab_pieces(text, limit=37)
    assert "".join(pieces) == text
    assert all(0 < len(p) <= 37 for p in pieces)


def test_mecab_pieces_cut_long_text_where_it_can():
    text = ("吾輩は猫である。" * 20_000) + ("a" * 120_000)
    pieces = mecab_pieces(text)
    assert "".join(pieces) == text and all(len(p) <= MECAB_MAX_CHARS for p in pieces)
    assert all(p.endswith("。") for p in pieces[:3])  # after a sentence end where there is one
    assert mecab_pieces("short") == ["short"]
