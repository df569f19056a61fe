"""attention_html: one self-contained HTML page (inline script, no network) with a head view and a
model view of the attention."""

import html
import json

from keras_bert_lib.atomic_write import atomic_write_text

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>__TITLE__</title>
<style>
body { font: 14px sans-serif; margin: 16px; color: #222; }
.controls label { margin-right: 8px; white-space: nowrap; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 3px; }
svg text { font: 12px monospace; cursor: pointer; }
#model { display: grid; gap: 4px; margin-top: 8px; }
#model svg { border: 1px solid #ddd; cursor: pointer; }
.note { color: #666; font-size: 12px; }
</style></head><body>
<h2>__TITLE__</h2>
<h3>Head view</h3>
<div class="controls">Layer <select id="layer"></select> <span id="heads"></span></div>
<p class="note">Lines run from each token (left) to the tokens it attends to (right), one colour per
head, opacity = probability. Hover a token to see its lines only.</p>
<svg id="head-view" xmlns="http://www.w3.org/2000/svg"></svg>
<h3>Model view</h3>
<p class="note">Every layer (rows) and head (columns); click one to show it in the head view.</p>
<div id="model"></div>
<script id="attention-data" type="application/json">__DATA__</script>
<script>
(function () {
  var data = JSON.parse(document.getElementById("attention-data").textContent);
  var A = data.attention, L = A.length, H = A[0].length, tokens = data.tokens, T = tokens.length;
  var NS = "http://www.w3.org/2000/svg", ROW = 18, LEFT = 110, GAP = 260;
  var colours = [];
  for (var h = 0; h < H; h++) colours.push("hsl(" + Math.round(360 * h / H) + ",70%,45%)");
  var shown = colours.map(function () { return true; }), layer = L - 1, focus = null;
  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function sepY(i) { return data.boundary === null ? null : 8 + i * ROW; }
  var select = document.getElementById("layer");
  for (var l = 0; l < L; l++) {
    var o = document.createElement("option"); o.value = l; o.textContent = l; select.appendChild(o);
  }
  select.value = layer;
  select.onchange = function () { layer = +select.value; draw(); };
  var boxes = document.getElementById("heads");
  colours.forEach(function (c, h) {
    var label = document.createElement("label"), box = document.createElement("input");
    box.type = "checkbox"; box.checked = true; box.dataset.head = h;
    box.onchange = function () { shown[h] = box.checked; draw(); };
    var sw = document.createElement("span"); sw.className = "swatch"; sw.style.background = c;
    label.appendChild(box); label.appendChild(sw); label.appendChild(document.createTextNode("head " + h));
    boxes.appendChild(label);
  });
  var view = document.getElementById("head-view");
  function draw() {
    while (view.firstChild) view.removeChild(view.firstChild);
    view.setAttribute("width", 2 * LEFT + GAP); view.setAttribute("height", T * ROW + 16);
    for (var h = 0; h < H; h++) {
      if (!shown[h]) continue;
      var g = el("g", {"class": "head", "data-head": h}, view);
      for (var t = 0; t < T; t++) {
        if (focus !== null && focus !== t) continue;
        for (var s = 0; s < T; s++) {
          var p = A[layer][h][t][s];
          if (p < 0.01) continue;
          el("line", {x1: LEFT, y1: 12 + t * ROW, x2: LEFT + GAP, y2: 12 + s * ROW, stroke: colours[h],
                      "stroke-width": 2, "stroke-opacity": Math.min(1, p)}, g);
        }
      }
    }
    tokens.forEach(function (tok, i) {
      [[LEFT - 6, "end"], [LEFT + GAP + 6, "start"]].forEach(function (side) {
        var text = el("text", {x: side[0], y: 16 + i * ROW, "text-anchor": side[1]}, view);
        text.textContent = tok;
        if (side[1] === "end") {
          text.onmouseenter = function () { focus = i; draw(); };
          text.onmouseleave = function () { focus = null; draw(); };
        }
      });
    });
    if (data.boundary !== null) {
      el("line", {x1: 0, x2: 2 * LEFT + GAP, y1: sepY(data.boundary) - 4, y2: sepY(data.boundary) - 4,
                  stroke: "#999", "stroke-dasharray": "4 3"}, view);
    }
  }
  var model = document.getElementById("model"), SIZE = 64;
  model.style.gridTemplateColumns = "repeat(" + H + ", " + SIZE + "px)";
  for (var l2 = 0; l2 < L; l2++) {
    for (var h2 = 0; h2 < H; h2++) {
      var thumb = el("svg", {"class": "thumb", width: SIZE, height: SIZE, "data-layer": l2, "data-head": h2}, model);
      var title = el("title", {}, thumb); title.textContent = "layer " + l2 + ", head " + h2;
      var step = (SIZE - 8) / Math.max(1, T - 1);
      for (var t2 = 0; t2 < T; t2++) {
        for (var s2 = 0; s2 < T; s2++) {
          var q = A[l2][h2][t2][s2];
          if (q < 0.05) continue;
          el("line", {x1: 12, y1: 4 + t2 * step, x2: SIZE - 12, y2: 4 + s2 * step, stroke: colours[h2],
                      "stroke-opacity": Math.min(1, q)}, thumb);
        }
      }
      thumb.onclick = (function (l3, h3) {
        return function () {
          layer = l3; select.value = l3;
          shown = shown.map(function (_, h) { return h === h3; });
          boxes.querySelectorAll("input").forEach(function (b) { b.checked = +b.dataset.head === h3; });
          draw();
        };
      })(l2, h2);
    }
  }
  draw();
})();
</script></body></html>
"""


def attention_html(maps, path, title="Attention"):
    """Writes one self-contained HTML page of `maps`: a head view (lines from each token to what
    it attends to, a layer selector, heads toggled, hover a token to isolate it) and a model view
    (every layer × head as a thumbnail; click one to open it). The script and the attention (as
    JSON) are inline: it opens offline and makes no network request. Written atomically.

    Args:
        maps: `AttentionMaps`.
        path: str, the .html file to write.
        title: str, the page's heading.
    Returns:
        path.
    Example:
        ```python
        import os, tempfile
        import numpy as np
        from keras_bert_lib.viz import AttentionMaps, attention_html
        maps = AttentionMaps(["[CLS]", "hi", "[SEP]"], np.full((1, 2, 3, 3), 1 / 3, "float32"))
        attention_html(maps, os.path.join(tempfile.mkdtemp(), "attention.html"))
        ```
    """
    # "</" cannot end the inline script early: JSON escapes it as "<\\/".
    data = json.dumps(maps.to_json(), ensure_ascii=False).replace("</", "<\\/")
    page = _PAGE.replace("__TITLE__", html.escape(title)).replace("__DATA__", data)
    atomic_write_text(path, page)
    return path
