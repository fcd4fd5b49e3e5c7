"""The attention page (HTML, checked in headless Chromium) and PNG, from synthetic attention, and
``python -m kbert.explore attention`` end to end."""

import html.parser
import json
import subprocess
import warnings

import numpy as np
import pytest

from fixtures.chromium import CHROMIUM, Page
from conftest import REPO, missing, python
from kbert.explore.attention import select
from kbert.explore.attention_html import render_attention_html
from kbert.explore.attention_png import attention_figure, render_attention_png

TOKENS = ["[CLS]", "the", "man", "<b>&amp;", "吾輩", "は", "猫", "ｶﾀｶﾅ", "##ing", "[SEP]"]


def _attention(layers=2, heads=3, n=len(TOKENS), seed=0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 2, (layers, heads, n, n))
    return (np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)).astype(np.float32)


class _Spans(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.spans, self._class, self.resources = {}, None, []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self._class = attrs.get("class") if tag == "span" else None
        self.resources += [v for k, v in attrs.items() if k in ("src", "href")]

    def handle_data(self, data):
        if self._class:
            self.spans.setdefault(self._class, []).append(data)
            self._class = None


def test_html_holds_the_tokens_and_the_numbers_and_needs_no_network():
    attention = _attention()
    page = render_attention_html(TOKENS, attention, title="t")
    spans = _Spans()
    spans.feed(page)
    assert spans.spans["tok query"] == TOKENS and spans.spans["tok key"] == TOKENS
    assert spans.resources == [] and "http://" not in page and "https://" not in page
    payload = page.split('id="attention-data">')[1].split("</script>")[0]
    data = json.loads(payload)
    assert data["tokens"] == TOKENS and data["layers"] == [0, 1] and data["heads"] == [0, 1, 2]
    got = np.array(data["attention"]).reshape(attention.shape)
    assert np.abs(got - attention).max() <= 5e-5


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="covers 10 tokens but 3 token labels"):
        render_attention_html(TOKENS[:3], _attention())
    with pytest.raises(ValueError, match=r"\[layers, heads, seq, seq\]"):
        render_attention_html(TOKENS, _attention()[0])
    with pytest.raises(ValueError, match="--layer 5 is out of range: the model has layers 0..1"):
        select(_attention(), layer=5)


def test_png_has_one_panel_per_head_with_the_numbers_and_cjk_glyphs(tmp_path):
    attention = _attention()
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
        render_attention_png(TOKENS, _attention(), tmp_path / "a.png")
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and "fonts-noto-cjk" in messages[0], messages


def test_page_renders_in_chromium_and_hover_highlights_what_a_token_attends_to(tmp_path):
    if CHROMIUM is None:
        missing("Debian's chromium is not installed (bash tests/install-system-deps.sh installs it)")
    attention = _attention()
    path = tmp_path / "attention.html"
    path.write_text(render_attention_html(TOKENS, attention, title="synthetic"), encoding="utf-8")
    with Page(path) as page:
        # every token label is in the DOM, twice (queries, keys)
        assert page.evaluate("Array.from(document.querySelectorAll('#queries .tok')).map(e => e.textContent)") == TOKENS
        assert page.evaluate("Array.from(document.querySelectorAll('#keys .tok')).map(e => e.textContent)") == TOKENS
        # six heat maps, each drawn: the canvas pixels are not all white
        assert page.evaluate("document.querySelectorAll('canvas.heatmap').length") == 6
        dark = page.evaluate("""Array.from(document.querySelectorAll('canvas.heatmap')).map(c => {
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
            for (let i = 0; i < d.length; i += 4) if (d[i] < 200) n++; return n / (d.length / 4); })""")
        assert min(dark) > 0.05, dark
        shot = page.screenshot(tmp_path / "before.png")
        grid = page.evaluate("(() => { const r = document.getElementById('grid').getBoundingClientRect();"
                             " return [r.left, r.top, r.right, r.bottom].map(Math.round); })()")

        def key_weights():
            return [float(w) for w in page.evaluate(
                "Array.from(document.querySelectorAll('#keys .tok')).map(e => e.dataset.weight)")]

        def backgrounds():
            return page.evaluate("Array.from(document.querySelectorAll('#keys .tok')).map("
                                 "e => getComputedStyle(e).backgroundColor)")

        assert key_weights() == [0.0] * len(TOKENS)
        before = backgrounds()
        box = page.evaluate("(() => { const r = document.querySelectorAll('#queries .tok')[2]"
                            ".getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        page.hover(*box)  # a real mouse move onto "man"
        np.testing.assert_allclose(key_weights(), attention[0, 0, 2], atol=1e-4)
        after = backgrounds()
        assert after != before
        alphas = [float(c.rsplit(",", 1)[1].rstrip(")")) if c.startswith("rgba") else 1.0 for c in after]
        assert int(np.argmax(alphas)) == int(np.argmax(attention[0, 0, 2]))
        # clicking another heat map switches the token view to that head
        panel = page.evaluate("(() => { const r = document.getElementById('panel-1-2').getBoundingClientRect();"
                              " return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        page.send("Input.dispatchMouseEvent", type="mousePressed", x=panel[0], y=panel[1], button="left", clickCount=1)
        page.send("Input.dispatchMouseEvent", type="mouseReleased", x=panel[0], y=panel[1], button="left", clickCount=1)
        page.hover(*box)
        np.testing.assert_allclose(key_weights(), attention[1, 2, 2], atol=1e-4)
        assert "layer 1, head 2" in page.evaluate("document.getElementById('selected').textContent")
    from PIL import Image

    image = np.asarray(Image.open(shot).convert("RGB").crop(grid)).astype(int)
    assert image.shape[0] > 150 and image.shape[1] > 250, image.shape
    blue = (image[..., 2] - image[..., 0] > 40).mean()  # the heat maps' blue cells, in the screenshot
    assert blue > 0.05, blue


def _explore(*args):
    return subprocess.run([*python("-m", "kbert.explore"), *map(str, args)], capture_output=True,
                          text=True, timeout=600, cwd=REPO, env={**__import__("os").environ, "TF_CPP_MIN_LOG_LEVEL": "2"})


@pytest.mark.slow
def test_attention_cli_end_to_end(tiny_model_dir, tmp_path):
    from kbert.explore.attention import encoder_attentions
    from kbert.model_dir import load_encoder

    encoder = load_encoder(tiny_model_dir)
    ids = {"input_word_ids": np.array([[101, 1996, 2158, 102, 0]], np.int32),
           "input_mask": np.array([[1, 1, 1, 1, 0]], np.int32), "input_type_ids": np.zeros((1, 5), np.int32)}
    probs = encoder_attentions(encoder, ids)
    config = encoder.config
    assert probs.shape == (config.num_hidden_layers, 1, config.num_attention_heads, 5, 5)
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5)
    assert np.abs(probs[..., 4]).max() == 0.0  # the padded key gets nothing

    out, png = tmp_path / "a.html", tmp_path / "a.png"
    run = _explore("attention", tiny_model_dir, "The man went to the store.", "He bought milk.",
                   "--out", out, "--png", png)
    assert run.returncode == 0, run.stderr[-3000:]
    tokens = ["[CLS]", "the", "man", "went", "to", "the", "store", ".", "[SEP]", "he", "bought", "milk", ".", "[SEP]"]
    spans = _Spans()
    spans.feed(out.read_text(encoding="utf-8"))
    assert spans.spans["tok query"] == tokens
    assert png.stat().st_size > 10_000
    run = _explore("attention", tiny_model_dir, "hello", "--out", out, "--layer", "1", "--head", "0")
    assert run.returncode == 0, run.stderr[-3000:]
    data = json.loads(out.read_text(encoding="utf-8").split('id="attention-data">')[1].split("</script>")[0])
    assert data["layers"] == [1] and data["heads"] == [0]
    run = _explore("attention", tiny_model_dir, "hello", "--out", out, "--layer", "9")
    assert run.returncode == 1 and "--layer 9 is out of range" in run.stderr
    assert run.stderr.startswith("kbert explore: error: "), run.stderr
