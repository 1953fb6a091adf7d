/* attnsym explorer: displays the data Python serialised into #attnsym-data.
 * Nothing here computes a number of the model: every weight, fusion, rollout, flow and
 * distance is read from the data; this script only chooses, formats and draws. */
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("attnsym-data").textContent);
  var DEC = DATA.decimals;
  var SVGNS = "http://www.w3.org/2000/svg";
  var state = { input: 0, layer: 0, head: "0", view: "attention", token: null, contrast: 0 };

  // ------------------------------------------------------------------ small helpers
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }
  function svg(tag, attrs, children) {
    var node = document.createElementNS(SVGNS, tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }
  function setAttrs(node, attrs) {
    if (!attrs) return;
    Object.keys(attrs).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) return;
      if (k === "text") node.textContent = v;
      else if (k.slice(0, 2) === "on") node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : String(v));
    });
  }
  function append(node, children) {
    if (children === null || children === undefined) return;
    if (!Array.isArray(children)) children = [children];
    children.forEach(function (c) {
      if (c === null || c === undefined) return;
      node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
  }
  function fmt(x) { return Number(x).toFixed(DEC); }
  function fmtNumber(x) {
    if (typeof x !== "number") return String(x);
    if (Number.isInteger(x)) return String(x);
    var a = Math.abs(x);
    return a !== 0 && (a < 1e-3 || a >= 1e6) ? x.toExponential(3) : String(Number(x.toPrecision(6)));
  }

  // ------------------------------------------------------------------ math
  function math(tex, display) {
    var span = el("span", { "class": display ? "math display" : "math" });
    try {
      katex.render(tex, span, { displayMode: !!display, throwOnError: true, output: "html", strict: "ignore" });
    } catch (err) {
      span.className += " math-error";
      span.textContent = tex;
      span.title = String(err.message || err);
    }
    return display ? el("div", { "class": "scroll" }, span) : span;
  }
  function textWithMath(text) {
    var out = el("span");
    String(text).split(/(\$[^$]+\$)/).forEach(function (part) {
      if (!part) return;
      if (part.length > 2 && part[0] === "$" && part[part.length - 1] === "$") out.appendChild(math(part.slice(1, -1), false));
      else out.appendChild(document.createTextNode(part));
    });
    return out;
  }
  function sourceToggle(tex, label) {
    var pre = el("pre", { "class": "latex-source", hidden: true, text: tex });
    var button = el("button", {
      type: "button", "class": "small", "aria-expanded": "false", text: label || "LaTeX",
      onclick: function () {
        var open = pre.hidden;
        pre.hidden = !open;
        button.setAttribute("aria-expanded", String(open));
      }
    });
    return [button, pre];
  }

  // ------------------------------------------------------------------ colours (same scale as attnsym/_html.py)
  var BLUES = [[247, 251, 255], [198, 219, 239], [107, 174, 214], [33, 113, 181], [8, 48, 107]];
  function sequential(t) {
    t = Math.max(0, Math.min(1, t));
    var x = t * (BLUES.length - 1), k = Math.min(BLUES.length - 2, Math.floor(x)), f = x - k;
    var c = BLUES[k].map(function (v, i) { return Math.round(v + f * (BLUES[k + 1][i] - v)); });
    return "rgb(" + c.join(",") + ")";
  }
  function diverging(t) {  // t in [-1, 1]: red negative, blue positive
    t = Math.max(-1, Math.min(1, t));
    var end = t < 0 ? [178, 24, 43] : [33, 102, 172], a = Math.abs(t);
    return "rgb(" + [255, 255, 255].map(function (v, i) { return Math.round(v + a * (end[i] - v)); }).join(",") + ")";
  }

  // ------------------------------------------------------------------ downloads
  function download(name, mime, text) {
    var blob = new Blob([text], { type: mime });
    var url = URL.createObjectURL(blob);
    var a = el("a", { href: url, download: name });
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(function () { URL.revokeObjectURL(url); }, 1000);
  }
  function svgText(node) {
    var copy = node.cloneNode(true);
    copy.setAttribute("xmlns", SVGNS);
    copy.setAttribute("version", "1.1");
    copy.insertBefore(svg("style", { text: "text{font-family:Helvetica,Arial,sans-serif}" }), copy.firstChild);
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + new XMLSerializer().serializeToString(copy);
  }
  function csvText(matrix, rows, cols) {
    function q(s) { s = String(s); return /[",\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s; }
    var lines = [[""].concat(cols).map(q).join(",")];
    matrix.forEach(function (row, i) { lines.push([q(rows[i])].concat(row.map(String)).join(",")); });
    return lines.join("\n") + "\n";
  }

  // ------------------------------------------------------------------ derivations
  function renderDerivations() {
    var root = document.getElementById("derivation-list");
    if (!DATA.derivations.length) { root.appendChild(el("p", { text: "No derivation on this page." })); return; }
    var forward = DATA.derivations[0];
    var elementwise = forward.steps.filter(function (s) { return s.title === "Elementwise form"; })[0];
    if (elementwise && elementwise.formula) {
      root.appendChild(el("div", { "class": "two-views" }, [
        el("div", { "class": "card" }, [el("h3", { text: "MLP: fixed weights" }), math("\\mathbf{y} = W\\,\\mathbf{x}", true),
          el("p", { text: "The same W for every input." })]),
        el("div", { "class": "card" }, [el("h3", { text: "Attention: weights computed from the input" }),
          math(elementwise.formula, true), el("p", null, textWithMath(elementwise.explanation))])
      ]));
    }
    DATA.derivations.forEach(function (d) {
      var steps = el("ol", { "class": "steps" });
      d.steps.forEach(function (s) {
        var tex = (s.formula ? s.formula + " \\\\\n" : "") + s.latex;
        steps.appendChild(el("li", { "class": "step" }, [
          el("h4", { text: s.title }), el("p", null, textWithMath(s.explanation)),
          s.formula ? math(s.formula, true) : null,
          math(s.latex, true)
        ].concat(sourceToggle(tex, "LaTeX source"))));
      });
      root.appendChild(el("section", { "class": "derivation", id: "derivation-" + d.id }, [
        el("h3", { text: d.title }), el("p", { "class": "muted", text: d.description }),
        el("p", null, [el("button", { type: "button", "class": "small", text: "Download .tex",
          onclick: function () { download(d.id + ".tex", "application/x-tex", d.document); } })]),
        steps
      ]));
    });
  }

  // ------------------------------------------------------------------ claims
  function valueNode(v) {
    if (v && typeof v === "object" && !Array.isArray(v) && "latex" in v) return math(v.latex, false);
    if (Array.isArray(v) && v.length && v.every(function (r) { return r && typeof r === "object" && !Array.isArray(r); })) {
      var cols = Object.keys(v[0]);
      return el("div", { "class": "scroll" }, el("table", { "class": "details-table" }, [
        el("tr", null, cols.map(function (c) { return el("th", { text: c }); }))
      ].concat(v.map(function (r) { return el("tr", null, cols.map(function (c) { return el("td", null, valueNode(r[c])); })); }))));
    }
    if (Array.isArray(v)) return el("span", { text: "[" + v.map(function (x) { return typeof x === "number" ? fmtNumber(x) : JSON.stringify(x); }).join(", ") + "]" });
    if (v && typeof v === "object") {
      return el("dl", { "class": "details" }, [].concat.apply([], Object.keys(v).map(function (k) {
        return [el("dt", { text: k }), el("dd", null, valueNode(v[k]))];
      })));
    }
    return el("span", { text: typeof v === "number" ? fmtNumber(v) : String(v) });
  }
  function renderClaims() {
    var root = document.getElementById("claim-list");
    if (!DATA.claims.length) { root.appendChild(el("p", { text: "No claims were checked for this page." })); return; }
    root.appendChild(el("div", { "class": "claim-head", "aria-hidden": "true" },
      ["claim", "verdict", "method", "key evidence"].map(function (t) { return el("span", { text: t }); })));
    DATA.claims.forEach(function (c) {
      var verdictClass = c.as_expected ? (c.verdict === "holds" ? "ok" : "cond") : "bad";
      var body = [el("p", null, [el("strong", { text: "Claim: " }), c.statement]),
        el("p", null, [el("strong", { text: "Expected: " }), c.expected, " · ", el("strong", { text: "verdict: " }), c.verdict])];
      if (c.conditions.length) body.push(el("h4", { text: "Conditions" }), el("ul", null, c.conditions.map(function (t) { return el("li", null, textWithMath(t)); })));
      if (c.equations.length) {
        body.push(el("h4", { text: "Equations" }));
        c.equations.forEach(function (e) {
          body.push(el("div", { "class": "equation" }, [el("p", { text: e.title }), math(e.latex, true)].concat(sourceToggle(e.latex))));
        });
      }
      if (Object.keys(c.details).length) body.push(el("h4", { text: "Evidence" }), valueNode(c.details));
      c.figures.forEach(function (f) {
        body.push(el("figure", null, [el("img", { src: f.src, alt: c.claim + ": " + f.name, loading: "lazy" }), el("figcaption", { text: f.name })]));
      });
      root.appendChild(el("details", { "class": "claim", id: "claim-" + c.claim }, [
        el("summary", null, [el("code", { text: c.claim }), el("span", { "class": "verdict " + verdictClass, text: c.verdict }),
          el("span", { "class": "method", text: c.method }), el("span", { "class": "summary", text: c.summary })]),
        el("div", { "class": "claim-body" }, body)
      ]));
    });
  }

  // ------------------------------------------------------------------ routing: what is shown
  function current() { return DATA.inputs[state.input]; }
  function matrix() {
    var inp = current();
    if (state.view === "rollout") return inp.rollout;
    if (state.view === "flow") return inp.flow;
    if (state.head === "mean" || state.head === "max") return inp.fused[state.head][state.layer];
    return inp.attention[state.layer][Number(state.head)];
  }
  function describe() {
    var inp = current();
    if (state.view === "rollout") return "rollout over " + inp.layers + " layer(s), heads averaged";
    if (state.view === "flow") return "attention flow over " + inp.layers + " layer(s), heads averaged";
    var head = state.head === "mean" || state.head === "max" ? state.head + " over heads" : "head " + (Number(state.head) + 1);
    return "layer " + (state.layer + 1) + ", " + head;
  }
  function layout(n, labels) {
    var longest = labels.reduce(function (m, t) { return Math.max(m, String(t).length); }, 1);
    var cell = Math.max(12, Math.min(34, Math.floor(440 / n)));
    return { cell: cell, pad: Math.min(120, 12 + 7 * longest), font: Math.max(9, Math.min(13, cell - 4)) };
  }

  function heatmap(M, rows, cols, opts) {
    var n = rows.length, m = cols.length, g = layout(Math.max(n, m), rows.concat(cols));
    var W = g.pad + m * g.cell + 8, H = g.pad + n * g.cell + 8;
    var root = svg("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img", "class": "heatmap",
      "aria-label": opts.title });
    root.appendChild(svg("title", { text: opts.title }));
    cols.forEach(function (t, j) {
      var x = g.pad + (j + 0.5) * g.cell, y = g.pad - 6;
      root.appendChild(svg("text", { x: x, y: y, "font-size": g.font, transform: "rotate(-55 " + x + " " + y + ")",
        "class": "col-label" + (opts.selected === j ? " selected" : ""), "data-j": j, text: t }));
    });
    rows.forEach(function (t, i) {
      root.appendChild(svg("text", { x: g.pad - 6, y: g.pad + (i + 0.5) * g.cell + g.font / 3, "font-size": g.font,
        "text-anchor": "end", "class": "row-label" + (opts.selected === i ? " selected" : ""), "data-i": i, text: t }));
    });
    M.forEach(function (row, i) {
      row.forEach(function (w, j) {
        var hot = opts.selected === i || opts.selected === j;
        var cell = svg("rect", { x: g.pad + j * g.cell, y: g.pad + i * g.cell, width: g.cell, height: g.cell,
          fill: opts.color(w), stroke: hot ? "#e8590c" : "#ffffff", "stroke-width": hot ? 1.5 : 0.5,
          "class": "cell", "data-i": i, "data-j": j, "data-w": w }, svg("title", { text: rows[i] + " ← " + cols[j] + ": " + fmt(w) }));
        if (opts.onhover) cell.addEventListener("mouseenter", function () { opts.onhover(i, j); });
        root.appendChild(cell);
      });
    });
    return root;
  }

  function bipartite(M, left, right, opts) {  // edge left j -> right i with weight M[i][j]
    var n = Math.max(left.length, right.length), g = layout(n, left.concat(right));
    var step = Math.max(16, g.cell), H = n * step + 40, W = 2 * g.pad + 220;
    var xl = g.pad, xr = W - g.pad;
    function y(k, count) { return 30 + (k + 0.5) * (n * step) / count; }
    var root = svg("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img", "class": "graph", "aria-label": opts.title });
    root.appendChild(svg("title", { text: opts.title }));
    root.appendChild(svg("text", { x: xl, y: 14, "font-size": 11, "text-anchor": "middle", "class": "axis", text: opts.leftLabel }));
    root.appendChild(svg("text", { x: xr, y: 14, "font-size": 11, "text-anchor": "middle", "class": "axis", text: opts.rightLabel }));
    var edges = svg("g", { "class": "edges" });
    var maxAbs = 0;
    M.forEach(function (row) { row.forEach(function (w) { maxAbs = Math.max(maxAbs, Math.abs(w)); }); });
    M.forEach(function (row, i) {
      row.forEach(function (w, j) {
        if (w === 0) return;
        var t = maxAbs > 0 ? Math.abs(w) / maxAbs : 0;
        var sel = opts.selected, hot = sel === null || sel === undefined ? null : (sel === i ? "row" : (sel === j ? "col" : "off"));
        var colour = opts.signed ? (w < 0 ? "#b2182b" : "#2166ac") : (hot === "row" ? "#e8590c" : (hot === "col" ? "#2f9e44" : "#2166ac"));
        edges.appendChild(svg("line", { x1: xl + 8, y1: y(j, left.length), x2: xr - 8, y2: y(i, right.length),
          stroke: colour, "stroke-width": (0.4 + 3.6 * t).toFixed(2), "stroke-opacity": hot === "off" ? 0.04 : (0.15 + 0.85 * t).toFixed(3),
          "class": "edge", "data-i": i, "data-j": j, "data-w": w }, svg("title", { text: left[j] + " → " + right[i] + ": " + fmt(w) })));
      });
    });
    root.appendChild(edges);
    [[left, xl, "end", -12], [right, xr, "start", 12]].forEach(function (side, s) {
      side[0].forEach(function (t, k) {
        var yy = y(k, side[0].length), sel = opts.selected === k && !opts.signed;
        root.appendChild(svg("circle", { cx: side[1] + (s ? -4 : 4), cy: yy, r: 4, fill: sel ? "#e8590c" : "#495057" }));
        root.appendChild(svg("text", { x: side[1] + side[3] + (s ? -4 : 4), y: yy + 4, "font-size": g.font, "text-anchor": side[2],
          "class": sel ? "selected" : null, text: t }));
      });
    });
    return root;
  }

  // ------------------------------------------------------------------ routing: controls
  function option(value, label, selected) { return el("option", { value: value, selected: selected, text: label }); }
  function fillSelect(select, items, value) {
    select.textContent = "";
    items.forEach(function (it) { select.appendChild(option(it[0], it[1], String(it[0]) === String(value))); });
  }
  function syncControls() {
    var inp = current(), fused = state.view !== "attention";
    if (state.layer >= inp.layers) state.layer = inp.layers - 1;
    if (/^\d+$/.test(state.head) && Number(state.head) >= inp.heads) state.head = "0";
    if (state.token !== null && state.token >= inp.tokens.length) state.token = null;
    if (state.view === "flow" && !inp.flow) state.view = "rollout";
    fillSelect(byId("pick-input"), DATA.inputs.map(function (x, k) { return [k, x.name]; }), state.input);
    fillSelect(byId("pick-layer"), range(inp.layers).map(function (l) { return [l, "layer " + (l + 1)]; }), state.layer);
    fillSelect(byId("pick-head"), range(inp.heads).map(function (h) { return [String(h), "head " + (h + 1)]; })
      .concat([["mean", "mean over heads"], ["max", "max over heads"]]), state.head);
    var views = [["attention", "attention"], ["rollout", "rollout"]];
    if (inp.flow) views.push(["flow", "flow"]);
    fillSelect(byId("pick-view"), views, state.view);
    byId("pick-layer").disabled = fused;
    byId("pick-head").disabled = fused;
  }
  function byId(id) { return document.getElementById(id); }
  function range(n) { var out = []; for (var k = 0; k < n; k++) out.push(k); return out; }

  function tokenStrip(tokens) {
    var strip = byId("token-strip");
    strip.textContent = "";
    tokens.forEach(function (t, k) {
      strip.appendChild(el("button", { type: "button", "class": "token" + (state.token === k ? " selected" : ""),
        "data-index": k, "aria-pressed": String(state.token === k), text: t,
        onclick: function () { selectToken(state.token === k ? null : k); strip.children[k].focus(); },
        onmouseenter: function () { showToken(k); },
        onkeydown: function (ev) {
          var next = { ArrowRight: k + 1, ArrowDown: k + 1, ArrowLeft: k - 1, ArrowUp: k - 1, Home: 0, End: tokens.length - 1 }[ev.key];
          if (next === undefined) return;
          ev.preventDefault();
          next = Math.max(0, Math.min(tokens.length - 1, next));
          selectToken(next);
          strip.children[next].focus();
        } }));
    });
  }
  function selectToken(k) { state.token = k; renderRouting(); if (k !== null) showToken(k); }

  function weightList(title, items, cls) {
    return el("div", { "class": "weights " + cls }, [el("h4", { text: title }), el("table", null, items.map(function (it) {
      return el("tr", null, [el("td", { "class": "tok", text: it.label }),
        el("td", { "class": "bar" }, el("span", { style: "width:" + (100 * Math.min(1, Math.abs(it.w))).toFixed(1) + "%" })),
        el("td", { "class": "num", "data-w": it.w, text: fmt(it.w) })]);
    }))]);
  }
  function showToken(k) {
    var inp = current(), M = matrix(), tokens = inp.tokens, panel = byId("token-panel");
    var reader = state.view === "attention" ? "reads from" : "receives from (input tokens)";
    panel.textContent = "";
    panel.setAttribute("data-token", k);
    panel.appendChild(el("p", null, [el("strong", { text: tokens[k] }), " (token " + (k + 1) + ") · " + describe()]));
    panel.appendChild(el("div", { "class": "pair" }, [
      weightList("row " + (k + 1) + ": " + reader, M[k].map(function (w, j) { return { label: (j + 1) + " " + tokens[j], w: w }; }), "row"),
      weightList("column " + (k + 1) + ": read by", M.map(function (row, i) { return { label: (i + 1) + " " + tokens[i], w: row[k] }; }), "col")
    ]));
  }

  function card(id, title, node, exportMatrix) {
    var buttons = el("div", { "class": "export" }, [
      el("button", { type: "button", "class": "small", "data-export": "svg", text: "SVG",
        onclick: function () { download(id + ".svg", "image/svg+xml", svgText(node)); } })
    ]);
    if (exportMatrix) {
      buttons.appendChild(el("button", { type: "button", "class": "small", "data-export": "json", text: "JSON",
        onclick: function () { download(id + ".json", "application/json", JSON.stringify(exportMatrix(), null, 1)); } }));
      buttons.appendChild(el("button", { type: "button", "class": "small", "data-export": "csv", text: "CSV",
        onclick: function () { var e = exportMatrix(); download(id + ".csv", "text/csv", csvText(e.matrix, e.rows, e.columns)); } }));
    }
    return el("figure", { "class": "card view", id: id }, [el("div", { "class": "card-head" }, [el("h3", { text: title }), buttons]),
      el("div", { "class": "scroll" }, node)]);
  }

  function renderRouting() {
    if (!DATA.inputs.length) { byId("routing-views").textContent = "No routing input on this page."; return; }
    syncControls();
    var inp = current(), M = matrix(), tokens = inp.tokens, sel = state.token;
    byId("routing-source").textContent = inp.source;
    byId("routing-what").textContent = describe();
    tokenStrip(tokens);
    var views = byId("routing-views");
    views.textContent = "";
    function exportData() {
      return { input: inp.name, source: inp.source, view: state.view, layer: state.view === "attention" ? state.layer : null,
        head: state.view === "attention" ? state.head : null, rows: tokens, columns: tokens, matrix: M,
        convention: "matrix[i][j]: query (output) i reads key (input) j" };
    }
    var rowsLabel = state.view === "attention" ? "query i" : "output i";
    views.appendChild(card("view-heatmap", "Heatmap: " + describe(), heatmap(M, tokens, tokens, {
      title: describe() + " (rows: " + rowsLabel + ", columns: key j)", color: sequential, selected: sel,
      onhover: function (i) { if (state.token === null) showToken(i); } }), exportData));
    views.appendChild(card("view-graph", "Routing graph", bipartite(M, tokens, tokens, {
      title: "routing graph: edge key j → query i with weight A[i, j]", leftLabel: "keys j", rightLabel: "queries i",
      selected: sel }), exportData));
    var mlp = inp.mlp, W = mlp.W;
    views.appendChild(card("view-mlp", mlp.title, bipartite(W, mlp.inputs, mlp.outputs, {
      title: mlp.title + ": edge in j → out i with weight W[i, j]", leftLabel: "in", rightLabel: "out", signed: true }),
      function () { return { title: mlp.title, rows: mlp.outputs, columns: mlp.inputs, matrix: W, convention: "matrix[i][j]: out i reads in j" }; }));
    byId("mlp-note").textContent = mlp.note;
    if (sel !== null) showToken(sel);
    else { byId("token-panel").textContent = "Hover a heatmap row or a token, or click / tab to a token and use the arrow keys."; byId("token-panel").removeAttribute("data-token"); }
    renderContrast();
  }

  // ------------------------------------------------------------------ contrast
  function renderContrast() {
    var root = byId("contrast");
    root.textContent = "";
    if (!DATA.contrasts.length) { root.appendChild(el("p", { text: "No contrast on this page." })); return; }
    var pick = el("select", { id: "pick-word", "aria-label": "word", onchange: function () { state.contrast = Number(pick.value); renderContrast(); } });
    fillSelect(pick, DATA.contrasts.map(function (c, k) {
      return [k, "“" + c.word + "”: " + DATA.inputs[c.inputs[0]].name + " vs " + DATA.inputs[c.inputs[1]].name];
    }), state.contrast);
    var c = DATA.contrasts[state.contrast], a = DATA.inputs[c.inputs[0]], b = DATA.inputs[c.inputs[1]];
    var layer = Math.min(state.layer, a.layers - 1), numeric = /^\d+$/.test(state.head), head = numeric ? Number(state.head) : 0;
    function row(k) {
      if (state.head === "mean" || state.head === "max") return c.rows[k][state.head][layer];
      return c.rows[k].heads[layer][head];
    }
    function shares(k) {
      if (!c.shares || !numeric) return null;
      return el("p", { "class": "muted" }, "roles: " + c.roles.map(function (r, q) { return r + " " + fmt(c.shares[k][layer][head][q]); }).join(" · "));
    }
    var where = "layer " + (layer + 1) + ", " + (numeric ? "head " + (head + 1) : state.head + " over heads");
    var grid = heatmap(c.distance, range(c.distance.length).map(function (l) { return "layer " + (l + 1); }),
      range(c.distance[0].length).map(function (h) { return "head " + (h + 1); }), {
        title: "distance per layer and head: " + c.metric, color: sequential, selected: null });
    Array.prototype.forEach.call(grid.querySelectorAll("rect.cell"), function (r) {
      r.style.cursor = "pointer";
      r.addEventListener("click", function () {
        state.view = "attention"; state.layer = Number(r.getAttribute("data-i")); state.head = r.getAttribute("data-j"); renderRouting();
      });
    });
    root.appendChild(el("p", null, [el("label", { "for": "pick-word", text: "Word " }), pick]));
    root.appendChild(el("p", { "class": "muted", text: c.metric + ". Click a cell to show that layer and head above." }));
    root.appendChild(el("div", { "class": "views" }, [
      card("view-contrast-grid", "Distance of “" + c.word + "” per layer × head", grid,
        function () { return { word: c.word, metric: c.metric, rows: range(c.distance.length), columns: range(c.distance[0].length), matrix: c.distance }; }),
      el("div", { "class": "card" }, [el("h3", { text: "“" + c.word + "” at " + where }),
        numeric ? el("p", null, ["distance ", el("strong", { "class": "contrast-distance", text: fmt(c.distance[layer][head]) })]) : null,
        el("div", { "class": "pair" }, [
          el("div", null, [weightList(a.name + ": reads from", row(0).map(function (w, j) { return { label: (j + 1) + " " + a.tokens[j], w: w }; }), "row"), shares(0)]),
          el("div", null, [weightList(b.name + ": reads from", row(1).map(function (w, j) { return { label: (j + 1) + " " + b.tokens[j], w: w }; }), "row"), shares(1)])
        ]), c.note ? el("p", { "class": "muted", text: c.note }) : null])
    ]));
  }

  // ------------------------------------------------------------------ start
  function start() {
    var timings = { parsed: performance.now() };
    renderDerivations();
    timings.derivations = performance.now();
    renderClaims();
    timings.claims = performance.now();
    [["pick-input", "input"], ["pick-layer", "layer"], ["pick-head", "head"], ["pick-view", "view"]].forEach(function (p) {
      byId(p[0]).addEventListener("change", function (ev) {
        var v = ev.target.value;
        state[p[1]] = p[1] === "input" || p[1] === "layer" ? Number(v) : v;
        if (p[1] === "input") state.contrast = Math.max(0, DATA.contrasts.findIndex(function (c) { return c.inputs.indexOf(state.input) >= 0; }));
        renderRouting();
      });
    });
    renderRouting();
    if (DATA.files.length) {
      var files = byId("files");
      files.hidden = false;
      files.appendChild(el("ul", null, DATA.files.map(function (f) {
        return el("li", null, [el("a", { href: f.path, text: f.path }), " — " + f.what]);
      })));
    }
    var meta = byId("meta");
    Object.keys(DATA.meta).forEach(function (k) { meta.appendChild(el("span", { text: k + ": " + DATA.meta[k] })); });
    timings.ready = performance.now();
    window.attnsymExplorer.timings = timings;  // milliseconds since navigation started
    document.body.setAttribute("data-ready", "true");
  }
  window.attnsymExplorer = { state: state, render: renderRouting, svgText: svgText, select: selectToken };
  start();
})();
