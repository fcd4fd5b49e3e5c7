"""A self-contained HTML page of attention probabilities (no network: script and styles inline).

* the grid: one heat map per (layer, head), rows = query tokens, columns = key tokens, drawn on
  ``<canvas>`` elements by the inline script; clicking a panel selects that head;
* the token view: the tokens twice, queries on the left, keys on the right; hovering a query
  token shades each key token by the weight the selected head gives it (and outlines that row in
  the selected heat map).

``render_attention_html(tokens, attention)`` is a pure function of the token labels and an array
[layers, heads, seq, seq] (``layers``/``heads`` name the numbers of the panels when only a part
of the model is drawn).
"""

from __future__ import annotations

import html
import json

import numpy as np

from kbert.errors import OptionsError
from kbert.explore.attention import check_attention
from kbert.api_export import kbert_export

_STYLE = """
body { font-family: "DejaVu Sans", "Noto Sans CJK JP", "Noto Sans CJK SC", sans-serif; margin: 16px;
       color: #222; background: #fff; }
h1 { font-size: 18px; margin: 0 0 4px 0; }
p.note { font-size: 12px; color: #555; margin: 0 0 12px 0; }
#grid { display: inline-grid; gap: 6px; align-items: start; justify-content: start; }
.panel { cursor: pointer; border: 2px solid transparent; padding: 1px; text-align: center; font-size: 11px; }
.panel.selected { border-color: #d62728; }
.panel canvas { display: block; image-rendering: pixelated; }
.rowlabel { font-size: 12px; align-self: center; white-space: nowrap; }
#view { display: flex; gap: 80px; margin-top: 18px; align-items: flex-start; }
.column { display: flex; flex-direction: column; gap: 2px; }
.tok { font-size: 14px; padding: 1px 8px; border-radius: 3px; white-space: pre; min-width: 40px; }
.query { cursor: default; }
.query.active { outline: 2px solid #d62728; }
#selected { font-size: 13px; margin-top: 12px; }
"""

_SCRIPT = r"""
(function () {
  const data = JSON.parse(document.getElementById("attention-data").textContent);
  const n = data.tokens.length, L = data.layers.length, H = data.heads.length;
  const size = Math.max(100, Math.min(200, 8 * n));
  const grid = document.getElementById("grid");
  grid.style.gridTemplateColumns = "max-content repeat(" + H + ", " + (size + 6) + "px)";
  let selected = [0, 0], activeQuery = -1;
  const canvases = [];
  function weight(l, h, q, k) { return data.attention[l][h][q * n + k]; }
  function draw(l, h) {
    const canvas = canvases[l][h], ctx = canvas.getContext("2d");
    const cell = canvas.width / n;
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, canvas.width, canvas.height);
    for (let q = 0; q < n; q++) for (let k = 0; k < n; k++) {
      const w = weight(l, h, q, k);
      ctx.fillStyle = "rgba(31, 119, 180, " + Math.min(1, w) + ")";
      ctx.fillRect(k * cell, q * cell, Math.ceil(cell), Math.ceil(cell));
    }
    if (l === selected[0] && h === selected[1] && activeQuery >= 0) {
      ctx.strokeStyle = "#d62728"; ctx.lineWidth = 2;
      ctx.strokeRect(1, activeQuery * cell + 1, canvas.width - 2, cell - 2);
    }
  }
  const corner = document.createElement("div"); grid.appendChild(corner);
  data.heads.forEach(function (h) {
    const d = document.createElement("div"); d.className = "rowlabel"; d.textContent = "head " + h;
    grid.appendChild(d);
  });
  data.layers.forEach(function (layer, l) {
    const label = document.createElement("div"); label.className = "rowlabel"; label.textContent = "layer " + layer;
    grid.appendChild(label);
    canvases.push([]);
    data.heads.forEach(function (head, h) {
      const panel = document.createElement("div");
      panel.className = "panel"; panel.id = "panel-" + l + "-" + h;
      panel.title = "layer " + layer + ", head " + head;
      const canvas = document.createElement("canvas");
      canvas.width = size; canvas.height = size; canvas.className = "heatmap";
      panel.appendChild(canvas);
      panel.addEventListener("click", function () { select(l, h); });
      grid.appendChild(panel);
      canvases[l].push(canvas);
    });
  });
  const queries = document.getElementById("queries"), keys = document.getElementById("keys");
  function shade() {
    const [l, h] = selected;
    Array.from(keys.children).forEach(function (el, k) {
      const w = activeQuery < 0 ? 0 : weight(l, h, activeQuery, k);
      el.style.backgroundColor = "rgba(214, 39, 40, " + w.toFixed(3) + ")";
      el.title = activeQuery < 0 ? "" : "weight " + w.toFixed(3);
      el.dataset.weight = w.toFixed(4);
    });
    Array.from(queries.children).forEach(function (el, q) { el.classList.toggle("active", q === activeQuery); });
    draw(l, h);
  }
  function select(l, h) {
    const old = selected; selected = [l, h];
    document.getElementById("panel-" + old[0] + "-" + old[1]).classList.remove("selected");
    document.getElementById("panel-" + l + "-" + h).classList.add("selected");
    document.getElementById("selected").textContent =
      "token view: layer " + data.layers[l] + ", head " + data.heads[h] + " (click a heat map to change)";
    draw(old[0], old[1]); shade();
  }
  Array.from(queries.children).forEach(function (el, q) {
    el.addEventListener("mouseenter", function () { activeQuery = q; shade(); });
    el.addEventListener("mouseleave", function () { activeQuery = -1; shade(); });
  });
  for (let l = 0; l < L; l++) for (let h = 0; h < H; h++) draw(l, h);
  select(0, 0);
})();
"""


@kbert_export("kbert.render_attention_html")
def render_attention_html(tokens, attention, layers=None, heads=None, title="Attention") -> str:
    """A self-contained HTML page of attention heat maps: one per layer and head, with token labels.

    Args:
        tokens: the n token labels.
        attention: [layers, heads, n, n] (rows: queries), e.g. from ``kbert.text_attentions``.
        layers: the layer numbers of ``attention``'s first axis (default 0, 1, ...).
        heads: the head numbers of its second axis (default 0, 1, ...).
        title: the page's title.

    Returns:
        The page, a string (write it to a ``.html`` file).

    Examples:
        >>> import kbert
        >>> heads = kbert.PretrainingHeads.from_model_dir(kbert.random_model_dir("runs/tiny"))
        >>> page = kbert.render_attention_html(*kbert.text_attentions(heads, "the man went home ."))
        >>> page.startswith("<!DOCTYPE html>"), "went" in page
        (True, True)
    """
    attention = np.asarray(attention, dtype=np.float32)
    tokens = [str(t) for t in tokens]
    check_attention(tokens, attention)
    if not np.all(np.isfinite(attention)):
        raise OptionsError("attention holds NaN or infinite values")
    num_layers, num_heads, n, _ = attention.shape
    layers = list(range(num_layers)) if layers is None else [int(x) for x in layers]
    heads = list(range(num_heads)) if heads is None else [int(x) for x in heads]
    if len(layers) != num_layers or len(heads) != num_heads:
        raise OptionsError(f"{len(layers)} layer and {len(heads)} head numbers for an array of "
                           f"{num_layers} layers x {num_heads} heads")
    data = {
        "tokens": tokens,
        "layers": layers,
        "heads": heads,
        # Rounded to 4 decimals: a BERT-Base page of 128 tokens stays ~15 MB instead of ~40.
        "attention": [[[round(float(w), 4) for w in attention[l, h].reshape(-1)] for h in range(num_heads)]
                      for l in range(num_layers)],
    }
    # "</" cannot end the data block early; the JSON stays valid.
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    token_spans = "\n".join(f'<span class="tok query" data-index="{i}">{html.escape(t)}</span>'
                            for i, t in enumerate(tokens))
    key_spans = "\n".join(f'<span class="tok key" data-index="{i}">{html.escape(t)}</span>'
                          for i, t in enumerate(tokens))
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{html.escape(title)}</title>
<style>{_STYLE}</style>
</head>
<body>
<h1>{html.escape(title)}</h1>
<p class="note">{n} tokens, {num_layers} layer(s) x {num_heads} head(s). Heat maps: rows are the
attending (query) tokens, columns the attended (key) tokens; darker = more attention. Hover a token on
the left to see what it attends to.</p>
<div id="grid"></div>
<div id="selected"></div>
<div id="view">
<div class="column" id="queries">
{token_spans}
</div>
<div class="column" id="keys">
{key_spans}
</div>
</div>
<script type="application/json" id="attention-data">{payload}</script>
<script>{_SCRIPT}</script>
</body>
</html>
"""
