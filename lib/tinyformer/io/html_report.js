(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("tf-data").textContent);
  var snaps = data.snapshots;
  var root = document.getElementById("attention");
  var slider = document.getElementById("snapshot");
  var tip = document.getElementById("tip");
  if (!snaps.length || !root) return;
  var OUTLINE = "#ff7f0e", ROW = 20;

  function colorOf(v) { return v < 0 ? data.nan_color : data.colors[Math.round(v / 10)]; }
  function headColor(h) { return data.head_colors[h % data.head_colors.length]; }
  function hex2(n) { return ("0" + n.toString(16).toUpperCase()).slice(-2); }
  // Visible escapes: space U+2423, newline \n, tab \t, other control characters \xNN; long tokens cut.
  function shown(tok) {
    var t = String(tok).replace(/ /g, "\u2423").replace(/\n/g, "\\n").replace(/\t/g, "\\t")
      .replace(/[\u0000-\u001f\u007f]/g, function (c) { return "\\x" + hex2(c.charCodeAt(0)); });
    return t.length > 10 ? t.slice(0, 9) + "\u2026" : t;
  }
  function weightAt(snap, l, h, q, k) {
    var T = snap.shape[2];
    return snap.w[((l * snap.shape[1] + h) * T + q) * T + k];
  }
  function tokenName(snap, i) { return snap.tokens.length ? i + " '" + shown(snap.tokens[i]) + "'" : String(i); }
  function expectedKey(snap, q) { return snap.expected ? snap.expected[q] : -1; }

  // ---- attention maps ----
  // px per token: 256/T (2..20); with labels or outlines at least 8 while a map stays within 1024 px. Labels of
  // every `every`-th token so that labels are at least a font height apart.
  function mapGeometry(snap) {
    var T = snap.shape[2];
    var plain = Math.max(2, Math.min(20, Math.floor(256 / T)));
    var hasLabels = snap.tokens.length === T;
    var px = hasLabels || snap.expected ? Math.max(plain, Math.min(8, Math.floor(1024 / T))) : plain;
    var fontPx = Math.max(7, Math.min(px, 13) - 1);
    var g = { T: T, px: px, band: 0, every: 0, font: fontPx + "px monospace", labels: null };
    if (hasLabels) {
      g.labels = snap.tokens.map(shown);
      g.every = Math.ceil((fontPx + 1) / px);
      var measure = document.createElement("canvas").getContext("2d");
      measure.font = g.font;
      var widest = 0;
      g.labels.forEach(function (s) { widest = Math.max(widest, measure.measureText(s).width); });
      g.band = Math.ceil(widest) + 8;
    }
    return g;
  }

  function drawCells(ctx, snap, l, h, g) {
    for (var q = 0; q < g.T; ++q)
      for (var k = 0; k < g.T; ++k) {
        ctx.fillStyle = colorOf(weightAt(snap, l, h, q, k));
        ctx.fillRect(g.band + k * g.px, g.band + q * g.px, g.px, g.px);
      }
    ctx.strokeStyle = "#999";
    ctx.lineWidth = 1;
    ctx.strokeRect(g.band - 0.5, g.band - 0.5, g.px * g.T + 1, g.px * g.T + 1);
  }

  function drawOutlines(ctx, snap, g) {
    if (!snap.expected) return;
    var lw = Math.max(1, Math.floor(g.px / 8));
    ctx.strokeStyle = OUTLINE;
    ctx.lineWidth = lw;
    for (var q = 0; q < g.T; ++q) {
      var k = snap.expected[q];
      if (k >= 0) ctx.strokeRect(g.band + k * g.px + lw / 2, g.band + q * g.px + lw / 2, g.px - lw, g.px - lw);
    }
  }

  function drawLabels(ctx, g) {
    if (!g.labels) return;
    ctx.fillStyle = "#333";
    ctx.font = g.font;
    ctx.textBaseline = "middle";
    for (var t = 0; t < g.T; t += g.every) {
      var mid = g.band + t * g.px + g.px / 2;
      ctx.textAlign = "right";
      ctx.fillText(g.labels[t], g.band - 4, mid);
      ctx.save();
      ctx.translate(mid, g.band - 4);
      ctx.rotate(-Math.PI / 2);
      ctx.textAlign = "left";
      ctx.fillText(g.labels[t], 0, 0);
      ctx.restore();
      if (g.every > 1) {  // thinned: a tick points at the labelled row and column
        ctx.fillRect(g.band - 3, mid - 0.5, 2, 1);
        ctx.fillRect(mid - 0.5, g.band - 3, 1, 2);
      }
    }
  }

  function attachTip(canvas, snap, l, h, g) {
    canvas.addEventListener("mousemove", function (e) {
      var r = canvas.getBoundingClientRect();
      var k = Math.floor((e.clientX - r.left - g.band) / g.px), q = Math.floor((e.clientY - r.top - g.band) / g.px);
      if (q < 0 || k < 0 || q >= g.T || k >= g.T) { tip.style.display = "none"; return; }
      var v = weightAt(snap, l, h, q, k);
      tip.textContent = "L" + l + " H" + h + "  step " + snap.step + "\nquery " + tokenName(snap, q) + "\nkey   " +
                        tokenName(snap, k) + (expectedKey(snap, q) === k ? "  (expected key)" : "") +
                        "\nweight " + (v < 0 ? "NaN" : (v / 1000).toFixed(3));
      tip.style.left = (e.clientX + 14) + "px";
      tip.style.top = (e.clientY + 14) + "px";
      tip.style.display = "block";
    });
    canvas.addEventListener("mouseleave", function () { tip.style.display = "none"; });
  }

  function drawHead(snap, l, h, g) {
    var size = g.band + g.px * g.T + 1;
    var canvas = document.createElement("canvas");
    var dpr = Math.max(2, window.devicePixelRatio || 1);  // drawn at 2x or more: stays sharp when zoomed
    canvas.width = size * dpr;
    canvas.height = size * dpr;
    canvas.style.width = size + "px";
    canvas.style.height = size + "px";
    canvas.className = "map";
    var ctx = canvas.getContext("2d");
    ctx.scale(dpr, dpr);
    drawCells(ctx, snap, l, h, g);
    drawOutlines(ctx, snap, g);
    drawLabels(ctx, g);
    attachTip(canvas, snap, l, h, g);
    return canvas;
  }

  function renderMaps(snap) {
    var L = snap.shape[0], H = snap.shape[1], g = mapGeometry(snap);
    root.textContent = "";
    for (var l = 0; l < L; ++l) {
      var row = document.createElement("div");
      row.className = "layer";
      for (var h = 0; h < H; ++h) {
        var fig = document.createElement("figure");
        var cap = document.createElement("figcaption");
        var score = snap.scores ? snap.scores[l][h] : null;
        cap.textContent = "L" + l + " H" + h + (score === null ? "" : "  score " + score.toFixed(2));
        fig.appendChild(cap);
        fig.appendChild(drawHead(snap, l, h, g));
        row.appendChild(fig);
      }
      root.appendChild(row);
    }
  }

  // ---- head view (bertviz-like) ----
  var hv = { snap: null, layer: 0, active: [], query: -1, pinned: -1 };
  var hvRoot = document.getElementById("head-view");
  var hvLayer = document.getElementById("hv-layer");
  var hvHeads = document.getElementById("hv-heads");
  var hvQueries = document.getElementById("hv-queries");
  var hvKeys = document.getElementById("hv-keys");
  var hvLines = document.getElementById("hv-lines");
  var hvReadout = document.getElementById("hv-readout");
  var SVGNS = hvLines.namespaceURI;

  function rgba(hex, alpha) {
    var n = parseInt(hex.slice(1), 16);
    return "rgba(" + (n >> 16) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + alpha.toFixed(3) + ")";
  }

  function buildLayerSelect(L) {
    if (hv.layer >= L) hv.layer = 0;
    hvLayer.textContent = "";
    for (var l = 0; l < L; ++l) {
      var opt = document.createElement("option");
      opt.value = String(l);
      opt.textContent = "L" + l;
      hvLayer.appendChild(opt);
    }
    hvLayer.value = String(hv.layer);
  }

  function buildHeadToggles(H) {
    if (hv.active.length !== H) hv.active = new Array(H).fill(true);
    hvHeads.textContent = "";
    for (var h = 0; h < H; ++h) {
      var label = document.createElement("label");
      var box = document.createElement("input");
      box.type = "checkbox";
      box.id = "hv-head-" + h;
      box.className = "hv-head";
      box.dataset.head = String(h);
      box.checked = hv.active[h];
      var swatch = document.createElement("span");
      swatch.className = "hv-swatch";
      swatch.style.background = headColor(h);
      label.appendChild(box);
      label.appendChild(swatch);
      label.appendChild(document.createTextNode("H" + h));
      hvHeads.appendChild(label);
    }
  }

  function buildTokenColumn(column, cls, snap) {
    column.textContent = "";
    for (var i = 0; i < snap.shape[2]; ++i) {
      var d = document.createElement("div");
      d.className = "hv-tok " + cls;
      d.dataset.index = String(i);
      d.textContent = snap.tokens.length ? shown(snap.tokens[i]) : String(i);
      d.title = tokenName(snap, i);
      column.appendChild(d);
    }
  }

  function buildHeadView(snap) {
    hv.snap = snap;
    buildLayerSelect(snap.shape[0]);
    buildHeadToggles(snap.shape[1]);
    buildTokenColumn(hvQueries, "hv-query", snap);
    buildTokenColumn(hvKeys, "hv-key", snap);
    hvLines.setAttribute("height", String(snap.shape[2] * ROW));
    if (hv.pinned >= snap.shape[2]) hv.pinned = -1;
    markPinned();
    showQuery(hv.query < snap.shape[2] ? hv.query : hv.pinned);
  }

  function markPinned() {
    Array.prototype.forEach.call(hvQueries.children, function (d, i) { d.classList.toggle("hv-pinned", i === hv.pinned); });
  }

  // Lines from query q to every key it gives weight, one colour per shown head, opacity = weight. Heads are
  // offset by 2 px so that lines of different heads to the same key stay apart.
  function drawLines(q) {
    hvLines.textContent = "";
    if (q < 0) return;
    var snap = hv.snap, H = snap.shape[1], width = Number(hvLines.getAttribute("width"));
    for (var h = 0; h < H; ++h) {
      if (!hv.active[h]) continue;
      var dy = (h - (H - 1) / 2) * 2;
      for (var k = 0; k <= q; ++k) {
        var w = weightAt(snap, hv.layer, h, q, k);
        if (w <= 0) continue;
        var line = document.createElementNS(SVGNS, "line");
        line.setAttribute("class", "hv-line");
        line.setAttribute("x1", "0");
        line.setAttribute("y1", String(q * ROW + ROW / 2 + dy));
        line.setAttribute("x2", String(width));
        line.setAttribute("y2", String(k * ROW + ROW / 2 + dy));
        line.setAttribute("stroke", headColor(h));
        line.setAttribute("stroke-width", "2");
        line.setAttribute("stroke-opacity", (w / 1000).toFixed(3));
        line.dataset.head = String(h);
        line.dataset.key = String(k);
        hvLines.appendChild(line);
      }
    }
  }

  // Each key tinted by the shown head that gives it the most weight; the expected key outlined.
  function tintKeys(q) {
    var snap = hv.snap;
    Array.prototype.forEach.call(hvKeys.children, function (d, k) {
      var best = -1, bestW = 0;
      for (var h = 0; q >= 0 && h < snap.shape[1]; ++h) {
        var w = hv.active[h] ? weightAt(snap, hv.layer, h, q, k) : 0;
        if (w > bestW) { bestW = w; best = h; }
      }
      d.style.background = best < 0 ? "" : rgba(headColor(best), bestW / 1000);
      d.style.color = bestW > 550 ? "#fff" : "";
      d.classList.toggle("hv-expected", q >= 0 && expectedKey(snap, q) === k);
    });
  }

  // One line per shown head: its strongest key and weight (and the weight on the expected key, if any).
  function readout(q) {
    hvReadout.textContent = "";
    if (q < 0) { hvReadout.textContent = "Hover or click a query token on the left."; return; }
    var snap = hv.snap, e = expectedKey(snap, q);
    for (var h = 0; h < snap.shape[1]; ++h) {
      if (!hv.active[h]) continue;
      var best = 0;
      for (var k = 1; k <= q; ++k) if (weightAt(snap, hv.layer, h, q, k) > weightAt(snap, hv.layer, h, q, best)) best = k;
      var w = weightAt(snap, hv.layer, h, q, best), div = document.createElement("div");
      div.className = "hv-read";
      div.dataset.head = String(h);
      div.dataset.key = String(best);
      div.dataset.weight = (w / 1000).toFixed(3);
      div.style.color = headColor(h);
      div.textContent = "L" + hv.layer + " H" + h + ": query " + tokenName(snap, q) + " -> key " + tokenName(snap, best) +
                        " weight " + (w / 1000).toFixed(3) +
                        (e >= 0 ? "   (expected key " + e + ": " + (weightAt(snap, hv.layer, h, q, e) / 1000).toFixed(3) + ")" : "");
      hvReadout.appendChild(div);
    }
  }

  function showQuery(q) {
    hv.query = q;
    hvRoot.dataset.query = String(q);
    hvRoot.dataset.layer = String(hv.layer);
    Array.prototype.forEach.call(hvQueries.children, function (d, i) { d.classList.toggle("hv-selected", i === q); });
    drawLines(q);
    tintKeys(q);
    readout(q);
  }

  function queryIndex(e) {
    var d = e.target.closest ? e.target.closest(".hv-query") : null;
    return d ? Number(d.dataset.index) : -1;
  }

  hvQueries.addEventListener("mouseover", function (e) { var q = queryIndex(e); if (q >= 0) showQuery(q); });
  hvQueries.addEventListener("mouseleave", function () { showQuery(hv.pinned); });
  hvQueries.addEventListener("click", function (e) {
    var q = queryIndex(e);
    if (q < 0) return;
    hv.pinned = hv.pinned === q ? -1 : q;
    markPinned();
    showQuery(q);
  });
  hvLayer.addEventListener("change", function () { hv.layer = Number(hvLayer.value); showQuery(hv.query); });
  hvHeads.addEventListener("change", function (e) {
    if (!e.target.classList.contains("hv-head")) return;
    hv.active[Number(e.target.dataset.head)] = e.target.checked;
    showQuery(hv.query);
  });

  function render(index) {
    var snap = snaps[index];
    document.getElementById("step-label").textContent =
        "step " + snap.step + "  (snapshot " + (index + 1) + " of " + snaps.length + ", " + snap.shape[0] +
        " layers \u00d7 " + snap.shape[1] + " heads, T = " + snap.shape[2] + ")";
    renderMaps(snap);
    buildHeadView(snap);
  }

  slider.addEventListener("input", function () { render(Number(slider.value)); });
  render(Number(slider.value));
})();
