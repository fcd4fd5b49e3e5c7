"""The attention page (kbert/explore/attention_html.py) from synthetic attention: the tokens and
numbers it holds, that it needs no network, and in headless Chromium that it draws the heat maps and
that hovering a token highlights what it attends to."""

import json

import numpy as np

from conftest import missing
from fixtures.attention_maps import TOKENS, PageSpans, synthetic_attention
from fixtures.chromium import CHROMIUM, Page
from kbert.explore.attention_html import render_attention_html


def test_html_holds_the_tokens_and_the_numbers_and_needs_no_network():
    attention = synthetic_attention()
    page = render_attention_html(TOKENS, attention, title="t")
    spans = PageSpans()
    spans.feed(page)
    assert spans.spans["tok query"] == TOKENS and spans.spans["tok key"] == TOKENS
    assert spans.resources == [] and "http://" not in page and "https://" not in page
    payload = page.split('id="attention-data">')[1].split("</script>")[0]
    data = json.loads(payload)
    assert data["tokens"] == TOKENS and data["layers"] == [0, 1] and data["heads"] == [0, 1, 2]
    got = np.array(data["attention"]).reshape(attention.shape)
    assert np.abs(got - attention).max() <= 5e-5


def test_page_renders_in_chromium_and_hover_highlights_what_a_token_attends_to(tmp_path):
    if CHROMIUM is None:
        missing("Debian's chromium is not installed (bash tests/install-system-deps.sh installs it)")
    attention = synthetic_attention()
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
