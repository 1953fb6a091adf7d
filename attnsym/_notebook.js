/* attnsym notebook view: draws what Python serialised into #attnsym-view (a route, a head report or a contrast).
 * Nothing here computes a number of the model: every weight, score and distance is read from the data;
 * this script only chooses, formats and draws, as the explorer page does (same colour scale, same head
 * view: a line from key j to query i per weight, one colour per head, its opacity the weight). */
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("attnsym-view").textContent);
  var NS = "http://www.w3.org/2000/svg";
  var PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
    "#17becf", "#393b79", "#ad494a"];
  var root = document.getElementById("view");

  function headColour(h) { return h < PALETTE.length ? PALETTE[h] : "hsl(" + ((h * 47) % 360) + ",60%,45%)"; }
  function sequential(t) {  // attnsym._html.sequential: the page's scale, halves rounded up
    t = Math.min(1, Math.max(0, Number(t)));
    var x = t * (D.blues.length - 1), k = Math.min(D.blues.length - 2, Math.floor(x)), f = x - k;
    return "rgb(" + D.blues[k].map(function (a, c) { return Math.round(a + f * (D.blues[k + 1][c] - a)); }).join(",") + ")";
  }
  function set(node, attrs) {
    Object.keys(attrs || {}).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined) return;
      if (k === "text") node.textContent = v;
      else if (k.slice(0, 2) === "on") node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v);
    });
    return node;
  }
  function add(node, kids) { (kids || []).forEach(function (c) { if (c !== null) node.appendChild(typeof c === "string" ? document.createTextNode(c) : c); }); return node; }
  function el(tag, attrs, kids) { return add(set(document.createElement(tag), attrs), kids); }
  function svg(tag, attrs, kids) { return add(set(document.createElementNS(NS, tag), attrs), kids); }
  function range(n) { var out = []; for (var k = 0; k < n; k++) out.push(k); return out; }
  function fmt(x) { return x === null ? "n/a" : Number(x).toFixed(3); }
  function picker(id, label, items, value, onchange) {
    var s = el("select", { id: id, "aria-label": label, onchange: function () { onchange(s.value); } },
      items.map(function (it) { return el("option", { value: it[0], text: it[1] }); }));
    s.value = String(value);
    return el("label", { "for": id }, [label + " ", s]);
  }

  // a heatmap as the page draws one: rows top to bottom, a rect.cell per entry with data-i/-j/-w and a tooltip
  function heatmap(M, rows, cols, opts) {
    var n = rows.length, m = cols.length, longest = Math.max.apply(null, rows.concat(cols).map(function (t) { return String(t).length; }).concat([1]));
    var cell = Math.max(12, Math.min(34, Math.floor(440 / Math.max(n, m)))), pad = Math.min(120, 12 + 7 * longest);
    var font = Math.max(9, Math.min(13, cell - 4)), W = pad + m * cell + 8, H = pad + n * cell + 8;
    var node = svg("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img", "aria-label": opts.title, "class": "heatmap" },
      [svg("title", { text: opts.title })]);
    cols.forEach(function (t, j) {
      var x = pad + (j + 0.5) * cell, y = pad - 6;
      node.appendChild(svg("text", { x: x, y: y, "font-size": font, transform: "rotate(-55 " + x + " " + y + ")", text: t }));
    });
    rows.forEach(function (t, i) {
      node.appendChild(svg("text", { x: pad - 6, y: pad + (i + 0.5) * cell + font / 3, "font-size": font, "text-anchor": "end", text: t }));
    });
    M.forEach(function (row, i) {
      row.forEach(function (w, j) {
        var chosen = opts.chosen && opts.chosen[0] === i && opts.chosen[1] === j;
        var r = svg("rect", { x: pad + j * cell, y: pad + i * cell, width: cell, height: cell, "class": "cell" + (chosen ? " chosen" : ""),
          fill: w === null ? "#d9d9d9" : sequential(opts.max ? w / opts.max : w), stroke: chosen ? "#d62728" : "#ffffff",
          "stroke-width": chosen ? 2 : 0.5, "data-i": i, "data-j": j, "data-w": w === null ? "" : w },
          [svg("title", { text: opts.cellTitle(i, j) + ": " + fmt(w) })]);
        if (opts.oncell) { r.style.cursor = "pointer"; r.addEventListener("click", function () { opts.oncell(i, j); }); }
        node.appendChild(r);
      });
    });
    return node;
  }

  // the explorer's head view: the heads of one layer overlaid, key j (left) -> query i (right)
  function headView(heads, tokens, on, threshold, caption) {
    var n = tokens.length, longest = Math.max.apply(null, tokens.map(function (t) { return String(t).length; }).concat([1]));
    var pad = Math.min(120, 12 + 7 * longest), step = Math.max(14, Math.min(26, Math.floor(440 / n)));
    var W = Math.max(2 * pad + 240, 520), H = n * step + 70, xl = pad, xr = W - pad, drawn = 0;
    function y(k) { return 44 + (k + 0.5) * step; }
    var node = svg("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img", "aria-label": caption, "class": "headview" },
      [svg("title", { text: caption }), svg("text", { x: 4, y: 13, "font-size": 11, text: caption }),
        svg("text", { x: xl, y: 30, "font-size": 11, "text-anchor": "middle", text: "keys j" }),
        svg("text", { x: xr, y: 30, "font-size": 11, "text-anchor": "middle", text: "queries i" })]);
    var edges = svg("g", { "class": "edges" });
    heads.forEach(function (A, h) {
      if (!on[h]) return;
      A.forEach(function (row, i) {
        row.forEach(function (w, j) {
          if (w < threshold) return;
          drawn++;
          edges.appendChild(svg("line", { x1: xl + 6, y1: y(j), x2: xr - 6, y2: y(i), stroke: headColour(h), "stroke-width": 1.5,
            "stroke-opacity": Math.min(1, w).toFixed(3), "class": "edge", "data-head": h + 1, "data-i": i, "data-j": j, "data-w": w }));
        });
      });
    });
    node.appendChild(edges);
    tokens.forEach(function (t, k) {
      node.appendChild(svg("text", { x: xl - 4, y: y(k) + 4, "font-size": 12, "text-anchor": "end", text: t }));
      node.appendChild(svg("text", { x: xr + 4, y: y(k) + 4, "font-size": 12, text: t }));
    });
    node.appendChild(svg("text", { x: 4, y: H - 8, "font-size": 10, "class": "muted",
      text: "one colour per head; opacity: weight; weights below " + threshold.toFixed(2) + " hidden (" + drawn + " lines)" }));
    return node;
  }

  // ------------------------------------------------------------------ a route
  function routeView() {
    D.attention = D.attention_milli.map(function (layer) {  // sent in thousandths, to keep the cell small
      return layer.map(function (head) { return head.map(function (row) { return row.map(function (v) { return v / 1000; }); }); });
    });
    var st = { layer: 0, head: 0, threshold: 0.05, on: range(D.heads).map(function () { return true; }) };
    var controls = el("div", { "class": "controls" }), body = el("div", { "class": "views" });
    root.appendChild(controls); root.appendChild(body);
    function draw() {
      controls.textContent = ""; body.textContent = "";
      add(controls, [
        picker("pick-layer", "Layer", range(D.layers).map(function (l) { return [l, String(l + 1)]; }), st.layer, function (v) { st.layer = Number(v); draw(); }),
        picker("pick-head", "Head", range(D.heads).map(function (h) { return [h, String(h + 1)]; }), st.head, function (v) { st.head = Number(v); draw(); }),
        el("label", { "for": "pick-threshold" }, ["Lines above ", el("input", { id: "pick-threshold", type: "range", min: 0, max: 0.5, step: 0.01, value: st.threshold,
          oninput: function (ev) { st.threshold = Number(ev.target.value); draw(); } })]),
        el("span", { "class": "muted", text: "layers and heads count from 1 (arrays: r.attention[layer - 1, head - 1])" })]);
      var where = "layer " + (st.layer + 1) + ", head " + (st.head + 1) + " (1-based)";
      var map = heatmap(D.attention[st.layer][st.head], D.tokens, D.tokens, { title: "attention, " + where + "; rows: query i, columns: key j",
        cellTitle: function (i, j) { return D.tokens[i] + " \u2190 " + D.tokens[j]; } });
      var toggles = el("div", { "class": "toggles", role: "group", "aria-label": "heads shown" }, range(D.heads).map(function (h) {
        return el("button", { type: "button", "class": "head-toggle", "data-head": h + 1, "aria-pressed": String(st.on[h]),
          style: "border-color:" + headColour(h) + ";" + (st.on[h] ? "background:" + headColour(h) + ";color:#fff" : ""),
          text: String(h + 1), onclick: function () { st.on[h] = !st.on[h]; draw(); } });
      }));
      var on = range(D.heads).filter(function (h) { return st.on[h]; }).length;
      var caption = "layer " + (st.layer + 1) + " (1-based), " + (on === D.heads ? "all " + on + " heads" : on + " of " + D.heads + " heads");
      add(body, [el("figure", { id: "view-heatmap" }, [map, el("figcaption", { text: "Heatmap: " + where })]),
        el("figure", { id: "view-headview" }, [el("div", null, ["Heads: ", toggles]),
          headView(D.attention[st.layer], D.tokens, st.on, Math.max(st.threshold, 0.01), caption),
          el("figcaption", { text: "Head view: " + caption })])]);
    }
    draw();
  }

  // ------------------------------------------------------------------ a head report
  function headsView() {
    var st = { pattern: "top" };
    var controls = el("div", { "class": "controls" }), body = el("div", { "class": "views" });
    root.appendChild(controls); root.appendChild(body);
    function draw() {
      controls.textContent = ""; body.textContent = "";
      var items = [["top", "the head's class (its score)"]].concat(D.patterns.map(function (p, k) { return [k, p]; }));
      add(controls, [picker("pick-pattern", "Colour by", items, st.pattern, function (v) { st.pattern = v; draw(); }),
        el("span", { "class": "muted", text: "layers and heads count from 1 (arrays: report.scores[layer - 1, head - 1])" })]);
      var M = D.top.map(function (row, l) { return row.map(function (w, h) { return st.pattern === "top" ? w : D.scores[l][h][Number(st.pattern)]; }); });
      var rows = range(D.layers).map(function (l) { return "L" + (l + 1); }), cols = range(D.heads).map(function (h) { return "H" + (h + 1); });
      var what = st.pattern === "top" ? "winning score" : D.patterns[Number(st.pattern)] + " score";
      var map = heatmap(M, rows, cols, { title: what + " per layer and head (1-based)",
        cellTitle: function (l, h) { return "L" + (l + 1) + " H" + (h + 1) + " (1-based), " + D.labels[l][h]; } });
      map.querySelectorAll("rect.cell").forEach(function (r) {  // each cell also names its class
        var l = Number(r.getAttribute("data-i")), h = Number(r.getAttribute("data-j"));
        var x = Number(r.getAttribute("x")) + Number(r.getAttribute("width")) / 2, y = Number(r.getAttribute("y")) + Number(r.getAttribute("height")) / 2 + 3;
        map.appendChild(svg("text", { x: x, y: y, "font-size": 8, "text-anchor": "middle", "class": "label", "pointer-events": "none",
          fill: (M[l][h] || 0) > 0.55 ? "#ffffff" : "#1b1b1b", text: D.short[D.labels[l][h]] }));
      });
      add(body, [el("figure", { id: "view-heads" }, [map, el("figcaption", { text: "Head classes: " + what + " (L = layer, H = head, from 1); grey: not defined" })])]);
    }
    draw();
  }

  // ------------------------------------------------------------------ a contrast
  function contrastView() {
    var st = { layer: D.cell[0], head: D.cell[1] };
    var body = el("div", { "class": "views" });
    root.appendChild(body);
    function bars(k) {
      var row = D.rows[k][st.layer][st.head], tokens = D.tokens[k];
      return el("div", { "class": "reads", "data-text": k + 1 }, [el("p", { text: "\u201c" + D.words[k] + "\u201d in text " + (k + 1) + " reads from" })]
        .concat(row.map(function (w, j) {
          return el("div", { "class": "bar" + (D.positions[k].indexOf(j) >= 0 ? " word" : ""), "data-j": j, "data-w": w }, [
            el("span", { "class": "tok", text: (j + 1) + " " + tokens[j] }),
            el("span", { "class": "fill", style: "width:" + (100 * w).toFixed(1) + "px;background:" + sequential(w) }),
            el("span", { "class": "num", text: fmt(w) })]);
        })));
    }
    function draw() {
      body.textContent = "";
      var rows = range(D.layers).map(function (l) { return "layer " + (l + 1); }), cols = range(D.heads).map(function (h) { return String(h + 1); });
      var max = 0; D.distance.forEach(function (r) { r.forEach(function (w) { if (w !== null) max = Math.max(max, w); }); });
      var grid = heatmap(D.distance, rows, cols, { title: D.metric + " per layer and head (1-based); click a cell", chosen: [st.layer, st.head], max: max,
        cellTitle: function (l, h) { return "layer " + (l + 1) + ", head " + (h + 1); },
        oncell: function (l, h) { st.layer = l; st.head = h; draw(); } });
      var where = "layer " + (st.layer + 1) + ", head " + (st.head + 1) + " (1-based): distance " + fmt(D.distance[st.layer][st.head]);
      add(body, [el("figure", { id: "view-distance" }, [grid, el("figcaption", { text: D.metric + ", coloured from 0 to the largest; click a cell" })]),
        el("figure", { id: "view-reads" }, [el("p", { "class": "where", text: where }), el("div", { "class": "pair" }, [bars(0), bars(1)])])]);
    }
    draw();
  }

  ({ route: routeView, heads: headsView, contrast: contrastView })[D.kind]();
  document.body.setAttribute("data-ready", "true");
})();
