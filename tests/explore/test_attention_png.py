"""The attention PNG (kbert/explore/attention_png.py) from synthetic attention: one panel per head
with the numbers and CJK glyphs, and one warning naming the font package where none is installed."""

import warnings

import numpy as np

from fixtures.attention_maps import TOKENS, synthetic_attention
from kbert.explore.attention import select
from kbert.explore.attention_png import attention_figure, render_attention_png


def test_png_has_one_panel_per_head_with_the_numbers_and_cjk_glyphs(tmp_path):
    attention = synthetic_attention()
    fig = attention_figure(TOKENS, attention)
    assert len(fig.axes) == 6
    for i, ax in enumerate(fig.axes):
        l, h = divmod(i, 3)
        assert ax.get_title() == f"layer {l}, head {h}"
        np.testing.assert_array_equal(ax.get_images()[0].get_array(), attention[l, h])
        assert [t.get_text() for t in ax.get_yticklabels()] == TOKENS
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns "Glyph ... missing from font(s)"
        path = render_attention_png(TOKENS, attention, tmp_path / "a.png")
    from PIL import Image

    image = np.asarray(Image.open(path).convert("L"))
    assert image.shape[0] > 300 and (image < 200).mean() > 0.05  # drawn, not blank
    part, layers, heads = select(attention, layer=1, head=2)
    assert len(attention_figure(TOKENS, part, layers, heads).axes) == 1


def test_png_without_a_cjk_font_warns_once_naming_the_package_not_once_per_glyph(tmp_path, monkeypatch):
    from kbert.explore import attention_png

    monkeypatch.setattr(attention_png, "_installed", lambda manager: [])  # as on a machine without the font
    monkeypatch.setattr("matplotlib.font_manager.findSystemFonts", lambda *a, **k: [])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        render_attention_png(TOKENS, synthetic_attention(), tmp_path / "a.png")
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and "fonts-noto-cjk" in messages[0], messages
