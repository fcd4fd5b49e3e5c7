"""A PNG of attention probabilities: the layer x head grid of heat maps (matplotlib), one panel per
head, token labels on the axes while they stay legible.

CJK tokens need a CJK font: matplotlib falls back to "Noto Sans CJK JP" (Debian ``fonts-noto-cjk``)
when it is installed; when a token has CJK characters and no such font is found, the PNG is still
written and one warning names the package (matplotlib's own "Glyph ... missing" line per character
is silenced then: it says the same thing once per glyph).
"""

from __future__ import annotations

import pathlib
import textwrap
import warnings

import numpy as np

from kbert.errors import MissingExtra
from kbert.explore.attention import check_attention
from kbert.explore.masked_text import _is_cjk
from kbert.api_export import kbert_export

_GLYPH_MISSING = r"Glyph \d+ .* missing from font"

CJK_FONTS = ("Noto Sans CJK JP", "Noto Sans CJK SC", "Noto Sans CJK TC", "Noto Sans CJK KR")
MAX_LABELLED_TOKENS = 40  # more labels than this on one panel are unreadable


def _pyplot(what: str = "the attention PNG"):
    try:
        import matplotlib
    except ImportError:
        raise MissingExtra(f"{what} needs matplotlib: pip install 'kbert[explore]'", extra="explore",
                           name="matplotlib") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def font_families(tokens) -> list[str]:
    """DejaVu Sans, then the first installed CJK font when a token needs one (matplotlib falls
    back through the list glyph by glyph)."""
    from matplotlib import font_manager

    families = ["DejaVu Sans"]
    if any(_is_cjk(c) for t in tokens for c in t):
        found = _installed(font_manager.fontManager)
        if not found:  # matplotlib's font cache may predate the font's installation: add it
            for path in font_manager.findSystemFonts():
                if "CJK" in pathlib.Path(path).name:
                    font_manager.fontManager.addfont(path)
            found = _installed(font_manager.fontManager)
        if found:
            families.append(found[0])
        else:
            warnings.warn("tokens have CJK characters but no CJK font is installed (Debian: apt-get install "
                          "fonts-noto-cjk); they are drawn as boxes", stacklevel=3)
    return families


def _installed(manager) -> list[str]:
    names = {f.name for f in manager.ttflist}
    return [f for f in CJK_FONTS if f in names]


@kbert_export("kbert.render_attention_png")
def render_attention_png(tokens, attention, path, layers=None, heads=None, title="Attention") -> pathlib.Path:
    """Draws the attention heat maps as one PNG grid (needs matplotlib: the ``explore`` extra).

    Args:
        tokens: the n token labels.
        attention: [layers, heads, n, n] (rows: queries), e.g. from ``kbert.text_attentions``.
        path: the PNG file to write.
        layers: the layer numbers of ``attention``'s first axis (default 0, 1, ...).
        heads: the head numbers of its second axis (default 0, 1, ...).
        title: the figure's title.

    Returns:
        ``path``, a ``pathlib.Path``.

    Examples:
        >>> import kbert
        >>> heads = kbert.PretrainingHeads.from_model_dir(kbert.random_model_dir("runs/tiny"))
        >>> tokens, attention = kbert.text_attentions(heads, "the man went home .")
        >>> kbert.render_attention_png(tokens, attention[:1, :1], "runs/attention.png").name
        'attention.png'
    """
    plt = _pyplot()
    fig = attention_figure(tokens, attention, layers, heads, title)
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    from kbert.model_dir import atomic_write

    try:  # the texts keep the fonts they were made with (font_families); the file appears whole
        with warnings.catch_warnings():
            if getattr(fig, "kbert_cjk_font_missing", False):
                warnings.filterwarnings("ignore", message=_GLYPH_MISSING)
            atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=100, format=path.suffix[1:].lower() or "png"))
    finally:
        plt.close(fig)
    return path


def attention_figure(tokens, attention, layers=None, heads=None, title="Attention"):
    """The matplotlib figure: ``axes[l * heads + h]`` is layer l, head h (rows: query tokens)."""
    attention = np.asarray(attention, dtype=np.float32)
    tokens = [str(t) for t in tokens]
    check_attention(tokens, attention)
    num_layers, num_heads, n, _ = attention.shape
    layers = list(range(num_layers)) if layers is None else list(layers)
    heads = list(range(num_heads)) if heads is None else list(heads)
    plt = _pyplot()
    single = num_layers == 1 and num_heads == 1
    panel = max(4.0, 0.25 * n) if single else 2.2 if n <= 16 else 3.2 if n <= MAX_LABELLED_TOKENS else 2.2
    families = font_families(tokens)
    cjk_font_missing = any(_is_cjk(c) for t in tokens for c in t) and len(families) == 1
    with plt.rc_context({"font.family": families, "font.size": 8}), warnings.catch_warnings():
        if cjk_font_missing:  # font_families warned once already
            warnings.filterwarnings("ignore", message=_GLYPH_MISSING)
        fig, axes = plt.subplots(num_layers, num_heads, squeeze=False,
                                 figsize=(panel * num_heads + 1, panel * num_layers + 0.8))
        labelled = n <= MAX_LABELLED_TOKENS
        for l in range(num_layers):
            for h in range(num_heads):
                ax = axes[l, h]
                ax.imshow(attention[l, h], cmap="Blues", vmin=0.0, vmax=1.0, interpolation="nearest")
                ax.set_title(f"layer {layers[l]}, head {heads[h]}", fontsize=8)
                if labelled:
                    size = 8 if single else max(4, min(8, 130 / n))
                    ax.set_xticks(range(n), tokens, rotation=90, fontsize=size)
                    ax.set_yticks(range(n), tokens, fontsize=size)
                else:
                    ax.set_xticks([])
                    ax.set_yticks([])
        width = fig.get_size_inches()[0]
        fig.suptitle(textwrap.fill(title + "  (rows: query tokens, columns: key tokens)", int(width * 13)), fontsize=10)
        fig.tight_layout()
    fig.kbert_cjk_font_missing = cjk_font_missing
    return fig
