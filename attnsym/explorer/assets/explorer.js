/* attnsym explorer: displays the data Python serialised into #attnsym-data.
 * Nothing here computes a number of the model: every weight, fusion, rollout, flow and
 * distance is read from the data; this script only chooses, formats and draws. */
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("attnsym-data").textContent);
  var DEC = DATA.decimals;
  var SVGNS = "http://www.w3.org/2000/svg";
  var state = { input: 0, layer: 0, head: "0", view: "attention", token: null, hover: null, contrast: 0, cell: null,
    threshold: null, headsOn: null };

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
  // claims are written for a terminal (`n*(4*d*n)`, d^-0.48, sqrt(2)·gamma^2, x_{1,1}): the page shows them as prose and maths
  var GREEK = { alpha: "α", gamma: "γ", delta: "δ", epsilon: "ε", eta: "η", theta: "θ", lambda: "λ", rho: "ρ", sigma: "σ", omega: "ω", ell: "ℓ" };
  var GREEK_TEX = { ell: "\\ell" };
  function balanced(s, open) {  // the index just past the bracket closing the one at `open`, or -1
    var depth = 0, pairs = { "(": ")", "{": "}" }, o = s[open], c = pairs[o];
    for (var k = open; k < s.length; k++) {
      if (s[k] === o) depth++;
      else if (s[k] === c && --depth === 0) return k + 1;
    }
    return -1;
  }
  function codeToTex(code) {  // a Python expression (SymPy's str) as TeX: ** powers, * products, sqrt, Greek names
    var s = code.replace(/\b(alpha|gamma|delta|epsilon|eta|theta|lambda|rho|sigma|omega|ell)\b/g, function (m) { return GREEK_TEX[m] || "\\" + m; });
    for (var k = s.indexOf("sqrt("); k >= 0; k = s.indexOf("sqrt(")) {
      var end = balanced(s, k + 4);
      if (end < 0) break;
      s = s.slice(0, k) + "\\sqrt{" + s.slice(k + 5, end - 1) + "}" + s.slice(end);
    }
    s = s.replace(/\*\*(\([^()]*\)|[\w.]+)/g, function (m, e) { return "^{" + e.replace(/^\((.*)\)$/, "$1") + "}"; });
    return s.replace(/\*/g, "\\,");
  }
  function plainMath(node, s) {  // powers and indices as <sup>/<sub>, sqrt( as √, a*b as a·b, Greek names as letters
    s = s.replace(/\b(alpha|gamma|delta|epsilon|eta|theta|lambda|rho|sigma|omega|ell)\b/g, function (m) { return GREEK[m]; })
      .replace(/\*\*/g, "^").replace(/([\w)²])\*(?=[\w(√])/g, "$1·");
    for (var k = s.indexOf("sqrt("); k >= 0; k = s.indexOf("sqrt(")) {
      var end = balanced(s, k + 4);
      if (end < 0) break;
      var inner = s.slice(k + 5, end - 1);
      s = s.slice(0, k) + "√" + (/^[\w.]+$/.test(inner) ? inner : "(" + inner + ")") + s.slice(end);
    }
    var re = /\^(\{|\(|-?[\w.−]+)|_(\{|[A-Za-z0-9]{1,3}\b)/g, last = 0, m;
    while ((m = re.exec(s)) !== null) {
      var sup = m[0][0] === "^", start = m.index, open = sup ? m[1] : m[2];
      if (!sup) {  // an index only after a one-letter name (x_i, W_Q) or a bracket (softmax(x)_i), never inside a_word
        var before = s.slice(Math.max(0, start - 2), start);
        var braced = open === "{" && start > 0 && /\S/.test(s[start - 1]);  // x_{…} after any symbol (‖W‖_{1,∞})
        if (!(braced || /\)$/.test(before) || /(^|[^A-Za-z])[A-Za-zα-ωΑ-Ω]$/.test(before) || (start === 1 && /[A-Za-zα-ω]/.test(s[0])))) continue;
      }
      var body, stop;
      if (open === "{" || open === "(") {
        stop = balanced(s, start + 1);
        if (stop < 0) continue;
        body = s.slice(start + 2, stop - 1);
      } else { body = open; stop = start + 1 + open.length; }
      node.appendChild(document.createTextNode(s.slice(last, start)));
      var child = el(sup ? "sup" : "sub");
      plainMath(child, sup && open === "(" && /[\s+−-]/.test(body.replace(/^[-−]/, "")) ? "(" + body + ")" : body);
      node.appendChild(child);
      last = stop;
      re.lastIndex = stop;
    }
    node.appendChild(document.createTextNode(s.slice(last)));
  }
  function prose(text) {
    var out = el("span", { "class": "prose" });
    String(text).split(/(`[^`]+`|\$[^$]+\$)/).forEach(function (part) {
      if (!part) return;
      var q = part[0];
      if ((q === "`" || q === "$") && part.length > 2 && part[part.length - 1] === q) {
        out.appendChild(math(q === "`" ? codeToTex(part.slice(1, -1)) : part.slice(1, -1), false));
      } else plainMath(out, part);
    });
    return out;
  }
  function textWithMath(text) { return prose(text); }
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
  function sequentialRGB(t) {
    t = Math.max(0, Math.min(1, t));
    var x = t * (BLUES.length - 1), k = Math.min(BLUES.length - 2, Math.floor(x)), f = x - k;
    return BLUES[k].map(function (v, i) { return Math.round(v + f * (BLUES[k + 1][i] - v)); });
  }
  function sequential(t) { return "rgb(" + sequentialRGB(t).join(",") + ")"; }
  // the one colour rule of every view: white at 0, dark blue at the largest value the view shows
  function maxOf(M) { var m = 0; M.forEach(function (r) { r.forEach(function (w) { m = Math.max(m, Math.abs(w)); }); }); return m; }
  function scaled(max) { return function (w) { return sequential(max > 0 ? w / max : 0); }; }
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
    Array.prototype.forEach.call(copy.querySelectorAll(".focus-ring"), function (r) { r.remove(); });
    copy.insertBefore(svg("style", { text: "text{font-family:Helvetica,Arial,sans-serif}" }), copy.firstChild);
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + new XMLSerializer().serializeToString(copy);
  }
  function csvText(matrix, rows, cols, header) {
    function q(s) { s = String(s); return /[",\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s; }
    var lines = (header ? ["# " + header.replace(/\n/g, " ")] : []).concat([[""].concat(cols).map(q).join(",")]);
    matrix.forEach(function (row, i) { lines.push([q(rows[i])].concat(row.map(String)).join(",")); });
    return lines.join("\n") + "\n";
  }

  function slug(s) {
    return String(s).toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 40) || "x";
  }
  // a file name says what it holds: the view, the sentence, the layer and head (counted from 1)
  function fileName(view, sentence, layer, head) {
    var parts = ["attnsym", view, slug(sentence)];
    if (layer !== null && layer !== undefined) parts.push("L" + (layer + 1));
    if (head !== null && head !== undefined) parts.push(/^\d+$/.test(String(head)) ? "H" + (Number(head) + 1) : String(head));
    return parts.join("_");
  }
  var NUMBERING = "layer and head count from 1, as the page shows them; matrix[i][j]: row i (query, output) reads column j (key, input), rows and columns in token order";

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
          el("h4", null, prose(s.title)), el("p", null, textWithMath(s.explanation)),
          s.formula ? math(s.formula, true) : null,
          math(s.latex, true)
        ].concat(sourceToggle(tex, "LaTeX source"))));
      });
      root.appendChild(el("section", { "class": "derivation", id: "derivation-" + d.id }, [
        el("h3", null, prose(d.title)), el("p", { "class": "muted" }, prose(d.description)),
        el("p", null, [el("button", { type: "button", "class": "small", text: "Download .tex",
          onclick: function () { download(d.id + ".tex", "application/x-tex", d.document); } })]),
        steps
      ]));
    });
  }

  // ------------------------------------------------------------------ claims
  function isTex(v) { return v && typeof v === "object" && !Array.isArray(v) && typeof v.latex === "string"; }
  function isScalar(v) { return v === null || typeof v !== "object" || isTex(v); }
  function scalarNode(v) {
    if (isTex(v)) return math(v.latex, false);
    if (v === null) return el("span", { text: "none" });
    return typeof v === "number" ? el("span", { text: fmtNumber(v) }) : prose(String(v));
  }
  // evidence values: typeset where they have a LaTeX form, lists and matrices as tables, never raw JSON
  function valueNode(v) {
    if (isScalar(v)) return scalarNode(v);
    if (Array.isArray(v)) {
      if (!v.length) return el("span", { text: "(none)" });
      if (v.every(isScalar)) {
        return el("div", { "class": "scroll" }, el("table", { "class": "details-table list" },
          el("tr", null, v.map(function (x) { return el("td", null, scalarNode(x)); }))));
      }
      if (v.every(function (r) { return Array.isArray(r) && r.every(isScalar); })) {
        return el("div", { "class": "scroll" }, el("table", { "class": "details-table matrix" },
          v.map(function (r) { return el("tr", null, r.map(function (x) { return el("td", null, scalarNode(x)); })); })));
      }
      if (v.every(function (r) { return r && typeof r === "object" && !Array.isArray(r) && !isTex(r); })) {
        var cols = [];
        v.forEach(function (r) { Object.keys(r).forEach(function (k) { if (cols.indexOf(k) < 0) cols.push(k); }); });
        return el("div", { "class": "scroll" }, el("table", { "class": "details-table" }, [
          el("tr", null, cols.map(function (c) { return el("th", null, prose(c)); }))
        ].concat(v.map(function (r) { return el("tr", null, cols.map(function (c) { return el("td", null, c in r ? valueNode(r[c]) : null); })); }))));
      }
      return el("ol", { "class": "values" }, v.map(function (x) { return el("li", null, valueNode(x)); }));
    }
    return el("dl", { "class": "details" }, [].concat.apply([], Object.keys(v).map(function (k) {
      return [el("dt", null, prose(k)), el("dd", null, valueNode(v[k]))];
    })));
  }
  function renderClaims() {
    var root = byId("claim-list");
    if (!DATA.claims.length) { root.appendChild(el("p", { text: "No claims were checked for this page." })); return; }
    var groups = [];  // in the page's order: the source material's claims first, open; the others folded by theme
    DATA.claims.forEach(function (c) {
      var g = c.group || "other", found = groups.filter(function (x) { return x.id === g; })[0];
      if (!found) { found = { id: g, title: c.group_title || "Other claims", claims: [] }; groups.push(found); }
      found.claims.push(c);
    });
    groups.sort(function (a, b) { return (a.id === "source" ? 0 : 1) - (b.id === "source" ? 0 : 1); });
    groups.forEach(function (g, k) {
      var ok = g.claims.filter(function (c) { return c.as_expected; }).length;
      var list = el("div", { "class": "claim-rows" }, [el("div", { "class": "claim-head", "aria-hidden": "true" },
        ["claim", "verdict", "method", "key evidence"].map(function (t) { return el("span", { text: t }); }))].concat(g.claims.map(claimNode)));
      var title = g.title + " (" + g.claims.length + (ok === g.claims.length ? ", every verdict as expected)" : ", " + ok + " as expected)");
      if (g.id === "source" || groups.length === 1) root.appendChild(el("section", { "class": "claim-group", id: "claims-" + g.id }, [el("h3", { text: title }), list]));
      else root.appendChild(el("details", { "class": "group", id: "claims-" + g.id }, [el("summary", { text: title }), list]));
    });
  }
  function claimNode(c) {
    var verdictClass = c.as_expected ? (c.verdict === "holds" ? "ok" : "cond") : "bad";
    var body = c.figures.map(function (f) {
      return el("figure", null, [el("img", { src: f.src, alt: c.claim + ": " + f.name, loading: "lazy" }), el("figcaption", { text: f.name })]);
    });
    body.push(el("p", null, [el("strong", { text: "Claim: " }), prose(c.statement)]),
      el("p", null, [el("strong", { text: "Expected: " }), c.expected, " · ", el("strong", { text: "verdict: " }), c.verdict]),
      el("p", null, [el("strong", { text: "Result: " }), prose(c.summary)]));
    if (c.conditions.length) body.push(el("h4", { text: "Conditions" }), el("ul", null, c.conditions.map(function (t) { return el("li", null, prose(t)); })));
    if (c.equations.length) {
      body.push(el("h4", { text: "Equations" }));
      c.equations.forEach(function (e) {
        body.push(el("div", { "class": "equation" }, [el("p", { text: e.title }), math(e.latex, true)].concat(sourceToggle(e.latex))));
      });
    }
    if (Object.keys(c.details).length) {
      body.push(el("h4", { text: "Evidence" }), el("div", { "class": "evidence" }, valueNode(c.details)));
      body.push(el("p", null, sourceToggle(JSON.stringify(c.details, null, 1), "JSON source")));
    }
    return el("details", { "class": "claim", id: "claim-" + c.claim }, [
      el("summary", null, [el("span", { "class": "claim-id", text: c.claim }), el("span", { "class": "verdict " + verdictClass, text: c.verdict }),
        el("span", { "class": "method", text: c.method }), el("span", { "class": "summary" }, prose(c.summary))]),
      el("div", { "class": "claim-body" }, body)
    ]);
  }

  // ------------------------------------------------------------------ routing: what is shown
  function byId(id) { return document.getElementById(id); }
  function range(n) { var out = []; for (var k = 0; k < n; k++) out.push(k); return out; }
  function current() { return DATA.inputs[state.input]; }
  function numericHead() { return /^\d+$/.test(String(state.head)); }
  // a bounded page stores large arrays as each row's top k weights ({topk, idx, w}); a view reads dense rows
  var DENSE = { key: null, M: null };
  function rowsAt(A, path) {
    if (!A || !A.topk) return path.reduce(function (x, k) { return x[k]; }, A);
    var idx = path.reduce(function (x, k) { return x[k]; }, A.idx), w = path.reduce(function (x, k) { return x[k]; }, A.w);
    return idx.map(function (cols, i) {
      var row = new Array(A.n).fill(0);
      cols.forEach(function (j, q) { row[j] = w[i][q]; });
      return row;
    });
  }
  function headMatrix(inp, l, h) {
    var key = DATA.inputs.indexOf(inp) + ":" + l + ":" + h;
    if (DENSE.key !== key) { DENSE.key = key; DENSE.M = rowsAt(inp.attention, [l, h]); }
    return DENSE.M;
  }
  function matrix() {
    var inp = current();
    if (state.view === "rollout") return rowsAt(inp.rollout, []);
    if (state.view === "flow") return rowsAt(inp.flow, []);
    if (state.head === "mean" || state.head === "max") return rowsAt(inp.fused[state.head], [state.layer]);
    return headMatrix(inp, state.layer, Number(state.head));
  }
  function describe() {
    var inp = current();
    if (state.view === "rollout") return "rollout over " + inp.layers + " layer(s), heads averaged";
    if (state.view === "flow") return "attention flow over " + inp.layers + " layer(s), heads averaged";
    var head = numericHead() ? "head " + (Number(state.head) + 1) : state.head + " over heads";
    return "layer " + (state.layer + 1) + ", " + head;
  }
  function headClass(inp, layer, head) {
    var hc = inp.head_classes;
    if (!hc) return null;
    return hc.heads[layer * hc.heads_per_layer + head];
  }
  // labels thinned past 32 tokens: every k-th one (and the pinned one) is written
  function thinStep(n) { return Math.max(1, Math.ceil(n / 32)); }
  function shown(k, n, sel) { return k % thinStep(n) === 0 || k === sel; }
  function layout(n, labels) {
    var longest = labels.reduce(function (m, t) { return Math.max(m, String(t).length); }, 1);
    var cell = Math.max(10, Math.min(34, Math.floor(440 / n)));
    return { cell: cell, pad: Math.min(110, 14 + 7 * longest), font: Math.max(11, Math.min(13, cell - 3)) };
  }
  function activate(node, fn) {  // click, Enter or Space
    node.setAttribute("tabindex", "0");
    node.addEventListener("click", fn);
    node.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); fn(ev); }
    });
  }
  function legend(root, x, y, width, max, label) {
    var g = svg("g", { "class": "legend" });
    var steps = 20;
    for (var s = 0; s < steps; s++) {
      g.appendChild(svg("rect", { x: x + s * width / steps, y: y, width: width / steps + 0.5, height: 10, fill: sequential(s / (steps - 1)) }));
    }
    g.appendChild(svg("rect", { x: x, y: y, width: width, height: 10, fill: "none", stroke: "#adb5bd", "stroke-width": 0.5 }));
    g.appendChild(svg("text", { x: x, y: y + 22, "font-size": 11, text: "0" }));
    g.appendChild(svg("text", { x: x + width, y: y + 22, "font-size": 11, "text-anchor": "end", text: fmt(max) }));
    g.appendChild(svg("text", { x: x + width + 8, y: y + 9, "font-size": 11, "class": "axis", text: label,
      "data-wrap": Math.max(60, Number(root.getAttribute("viewBox").split(" ")[2]) - x - width - 12) }));
    root.appendChild(g);
  }

  // ------------------------------------------------------------------ SVG text that fits its drawing
  // A drawing's caption (its first text.caption, at the top) and its notes (text[data-wrap]: the widest each may be)
  // wrap onto more lines instead of running past the drawing's edge, and the drawing grows to hold them; the words
  // are measured in the page's font, with a margin for the export's Helvetica or Arial.
  var MEASURE = document.createElement("canvas").getContext("2d");
  function textWidth(s, size, bold) {
    MEASURE.font = (bold ? "600 " : "") + size + 'px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
    return MEASURE.measureText(s).width * 1.08;
  }
  function wrapWords(s, size, bold, max) {
    var lines = [], line = "";
    String(s).split(" ").forEach(function (w) {
      var next = line ? line + " " + w : w;
      if (line && textWidth(next, size, bold) > max) { lines.push(line); line = w; } else line = next;
    });
    if (line) lines.push(line);
    return lines;
  }
  function setLines(t, lines, size) {  // the words kept: each line but the last ends with its space
    var x = t.getAttribute("x");
    t.textContent = "";
    lines.forEach(function (line, k) {
      t.appendChild(svg("tspan", { x: x, dy: k ? (1.25 * size).toFixed(1) : null, text: line + (k < lines.length - 1 ? " " : "") }));
    });
  }
  // an input's name in a caption: whole up to 80 characters (the caption wraps), a long text's first words and " …"
  function captionName(name) {
    if (name.length <= 80) return name;
    var cut = name.slice(0, 80), space = cut.lastIndexOf(" ");
    return (space > 40 ? cut.slice(0, space) : cut) + " …";
  }
  function fitText(root) {
    var box = root.getAttribute("viewBox").split(" ").map(Number), W = box[2], H = box[3], shift = 0, cap = null;
    for (var c = root.firstChild; c && !cap; c = c.nextSibling) if (c.tagName === "text" && c.classList.contains("caption")) cap = c;
    if (cap) {
      var size = Number(cap.getAttribute("font-size"));
      var room = cap.getAttribute("text-anchor") === "middle" ? W - 8 : W - Number(cap.getAttribute("x")) - 4;
      var lines = wrapWords(cap.textContent, size, true, room);
      if (lines.length > 1) {
        setLines(cap, lines, size);
        shift = (lines.length - 1) * 1.25 * size;
        var body = svg("g", { transform: "translate(0 " + shift.toFixed(1) + ")", "class": "drawing" });
        Array.prototype.slice.call(root.childNodes).forEach(function (k) { if (k !== cap && k.tagName !== "title") body.appendChild(k); });
        root.appendChild(body);
      }
    }
    var bottom = H + shift;
    Array.prototype.forEach.call(root.querySelectorAll("text[data-wrap]"), function (t) {
      var size = Number(t.getAttribute("font-size")), lines = wrapWords(t.textContent, size, false, Number(t.getAttribute("data-wrap")));
      if (lines.length > 1) setLines(t, lines, size);
      bottom = Math.max(bottom, shift + Number(t.getAttribute("y")) + (lines.length - 1) * 1.25 * size + 6);
    });
    if (bottom !== H) {
      bottom = Math.ceil(bottom);
      root.setAttribute("viewBox", "0 0 " + W + " " + bottom);
      root.setAttribute("height", bottom);
    }
    return root;
  }

  // keyboard on a grid (roving tabindex): one cell of each grid is a tab stop; the arrows, Home/End and
  // PageUp/PageDown move it, Enter or Space acts on it (pins its query token, or chooses the contrast's cell)
  var roving = {};
  function refocus(grid) {
    var cell = document.querySelector('svg[data-grid="' + grid + '"] rect.cell[tabindex="0"]');
    if (cell) cell.focus({ preventScroll: true });  // the page was re-drawn under the cell just used
  }
  function gridKeys(root, grid, n, m, cellAt, act) {
    root.addEventListener("keydown", function (ev) {
      var t = ev.target;
      if (!t.classList || !t.classList.contains("cell")) return;
      var i = Number(t.dataset.i), j = Number(t.dataset.j);
      if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); act(i, j); return; }
      var to = { ArrowRight: [i, j + 1], ArrowLeft: [i, j - 1], ArrowDown: [i + 1, j], ArrowUp: [i - 1, j],
        Home: [i, 0], End: [i, m - 1], PageUp: [0, j], PageDown: [n - 1, j] }[ev.key];
      if (!to) return;
      ev.preventDefault();
      to = [Math.max(0, Math.min(n - 1, to[0])), Math.max(0, Math.min(m - 1, to[1]))];
      var next = cellAt(to[0], to[1]);
      if (!next) return;
      t.setAttribute("tabindex", "-1");
      next.setAttribute("tabindex", "0");
      roving[grid] = to;
      next.focus();
    });
  }
  function heatmap(M, rows, cols, opts) {
    var n = rows.length, m = cols.length, g = layout(Math.max(n, m), rows.concat(cols));
    if (n * m > 20000) g.cell = Math.max(2, Math.min(g.cell, Math.floor(1000 / Math.max(n, m))));  // drawn as one image
    var grid = opts.grid || "grid", at = opts.chosen || roving[grid];  // the tab stop: the chosen cell, else the last one used
    if (!at || at[0] >= n || at[1] >= m) {
      at = opts.selected !== null && opts.selected !== undefined && opts.selected < Math.min(n, m) ? [opts.selected, opts.selected] : [0, 0];
    }
    var top = g.pad + 34, left = g.pad + 20;
    var W = Math.max(left + m * g.cell + 8, 360), H = top + n * g.cell + 48;
    var max = opts.max !== undefined ? opts.max : maxOf(M), color = scaled(max);
    var root = svg("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "group", "class": "heatmap",
      "aria-label": opts.title + " (a grid: Tab into it, arrows move, Enter or Space " + (opts.oncell ? "chooses the cell" : "pins the row's token") + ")",
      "data-grid": grid });
    root.appendChild(svg("title", { text: opts.title }));
    root.appendChild(svg("text", { x: 4, y: 13, "font-size": 11, "class": "caption", text: opts.title }));
    root.appendChild(svg("text", { x: left + m * g.cell / 2, y: 29, "font-size": 11, "text-anchor": "middle", "class": "axis",
      text: opts.colTitle || "key j →" }));
    root.appendChild(svg("text", { x: 12, y: top + n * g.cell / 2, "font-size": 11, "text-anchor": "middle", "class": "axis",
      transform: "rotate(-90 12 " + (top + n * g.cell / 2) + ")", text: opts.rowTitle || "query i ↓" }));
    cols.forEach(function (t, j) {
      if (!shown(j, m, opts.selected)) return;
      var x = left + (j + 0.5) * g.cell, y = top - 5;
      var label = svg("text", { x: x, y: y, "font-size": g.font, transform: "rotate(-55 " + x + " " + y + ")",
        "class": "col-label" + (opts.selected === j ? " selected" : ""), "data-j": j, text: t });
      if (opts.onlabel) { label.setAttribute("role", "button"); activate(label, function () { opts.onlabel(j); }); }
      root.appendChild(label);
    });
    rows.forEach(function (t, i) {
      if (!shown(i, n, opts.selected)) return;
      var label = svg("text", { x: left - 5, y: top + (i + 0.5) * g.cell + g.font / 3, "font-size": g.font,
        "text-anchor": "end", "class": "row-label" + (opts.selected === i ? " selected" : ""), "data-i": i, text: t });
      if (opts.onlabel) { label.setAttribute("role", "button"); activate(label, function () { opts.onlabel(i); }); }
      root.appendChild(label);
    });
    var big = n * m > 20000;  // a long text: the cells as one image (hover still reads a cell), not n² elements
    if (big) {
      var canvas = document.createElement("canvas");
      canvas.width = m; canvas.height = n;
      var ctx = canvas.getContext("2d"), img = ctx.createImageData(m, n);
      M.forEach(function (row, i) { row.forEach(function (w, j) {
        var c = sequentialRGB(max > 0 ? w / max : 0), o = 4 * (i * m + j);
        img.data[o] = c[0]; img.data[o + 1] = c[1]; img.data[o + 2] = c[2]; img.data[o + 3] = 255; }); });
      ctx.putImageData(img, 0, 0);
      var picture = svg("image", { x: left, y: top, width: m * g.cell, height: n * g.cell, preserveAspectRatio: "none",
        "image-rendering": "pixelated", "class": "cells-image", href: canvas.toDataURL("image/png") });
      var tip = svg("title", { text: opts.title });
      picture.appendChild(tip);
      picture.addEventListener("mousemove", function (ev) {
        var r = picture.getBoundingClientRect(), i = Math.floor((ev.clientY - r.top) / r.height * n), j = Math.floor((ev.clientX - r.left) / r.width * m);
        if (i < 0 || j < 0 || i >= n || j >= m) return;
        tip.textContent = (opts.cellTitle ? opts.cellTitle(i, j) : rows[i] + " ← " + cols[j]) + ": " + fmt(M[i][j]);
        if (opts.onhover) opts.onhover(i, j);
      });
      picture.addEventListener("click", function (ev) {
        var r = picture.getBoundingClientRect(), i = Math.floor((ev.clientY - r.top) / r.height * n);
        if (i >= 0 && i < n && opts.onlabel) opts.onlabel(i);
      });
      root.appendChild(picture);
    }
    if (!big) M.forEach(function (row, i) {
      row.forEach(function (w, j) {
        var hot = opts.selected === i || opts.selected === j;
        var chosen = opts.chosen && opts.chosen[0] === i && opts.chosen[1] === j;
        var cell = svg("rect", { x: left + j * g.cell, y: top + i * g.cell, width: g.cell, height: g.cell,
          fill: color(w), stroke: chosen ? "#d6336c" : (hot ? "#e8590c" : "#ffffff"), "stroke-width": chosen ? 3 : (hot ? 1.5 : 0.5),
          "class": "cell" + (chosen ? " chosen" : ""), "data-i": i, "data-j": j, "data-w": w },
          svg("title", { text: (opts.cellTitle ? opts.cellTitle(i, j) : rows[i] + " ← " + cols[j]) + ": " + fmt(w) }));
        if (opts.onhover) {
          cell.addEventListener("mouseenter", function () { opts.onhover(i, j); });
          cell.addEventListener("focus", function () { opts.onhover(i, j); });
        }
        cell.setAttribute("role", "button");
        cell.setAttribute("tabindex", i === at[0] && j === at[1] ? "0" : "-1");
        cell.setAttribute("aria-label", (opts.cellTitle ? opts.cellTitle(i, j) : rows[i] + " reads " + cols[j]) + ": " + fmt(w));
        cell.addEventListener("click", function () { act(i, j); });
        cell.addEventListener("focus", function () {
          ring.setAttribute("x", cell.getAttribute("x")); ring.setAttribute("y", cell.getAttribute("y"));
          ring.setAttribute("visibility", "visible");
        });
        cell.addEventListener("blur", function () { ring.setAttribute("visibility", "hidden"); });
        root.appendChild(cell);
      });
    });
    function act(i, j) {
      roving[grid] = [i, j];
      if (opts.oncell) opts.oncell(i, j); else if (opts.onlabel) opts.onlabel(i);
      refocus(grid);
    }
    if (opts.chosen) {  // drawn last so its border is on top
      var c = root.querySelector("rect.chosen");
      if (c) root.appendChild(c);
    }
    var ring = svg("rect", { "class": "focus-ring", width: g.cell, height: g.cell, fill: "none", stroke: "#f59f00", "stroke-width": 3,
      visibility: "hidden", "pointer-events": "none" });
    root.appendChild(ring);  // the keyboard's focus ring, above every cell
    gridKeys(root, grid, n, m, function (i, j) { return root.querySelector('rect.cell[data-i="' + i + '"][data-j="' + j + '"]'); }, act);
    legend(root, left, top + n * g.cell + 14, Math.min(140, Math.max(80, m * g.cell)), max, opts.legendLabel || "colour: 0 to the view's largest value");
    return fitText(root);
  }

  function bipartite(M, left, right, opts) {  // edge left j -> right i with weight M[i][j]
    var n = Math.max(left.length, right.length), g = layout(n, left.concat(right));
    var step = Math.max(14, Math.min(28, g.cell)), H = n * step + 84, W = Math.max(2 * g.pad + 220, 380);
    var xl = g.pad, xr = W - g.pad, threshold = opts.threshold || 0;
    function y(k, count) { return 40 + (k + 0.5) * (n * step) / count; }
    var root = svg("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img", "class": "graph", "aria-label": opts.title });
    root.appendChild(svg("title", { text: opts.title }));
    root.appendChild(svg("text", { x: 4, y: 13, "font-size": 11, "class": "caption", text: opts.title }));
    root.appendChild(svg("text", { x: xl, y: 30, "font-size": 11, "text-anchor": "middle", "class": "axis", text: opts.leftLabel }));
    root.appendChild(svg("text", { x: xr, y: 30, "font-size": 11, "text-anchor": "middle", "class": "axis", text: opts.rightLabel }));
    var edges = svg("g", { "class": "edges" });
    var maxAbs = maxOf(M), drawn = 0;
    M.forEach(function (row, i) {
      row.forEach(function (w, j) {
        if (w === 0 || Math.abs(w) < threshold) return;
        drawn++;
        var t = maxAbs > 0 ? Math.abs(w) / maxAbs : 0;
        var sel = opts.selected, hot = sel === null || sel === undefined ? null : (sel === i ? "row" : (sel === j ? "col" : "off"));
        var colour = opts.fixed ? "#868e96" : (opts.signed ? (w < 0 ? "#b2182b" : "#2166ac") : (hot === "row" ? "#e8590c" : (hot === "col" ? "#2f9e44" : "#2166ac")));
        edges.appendChild(svg("line", { x1: xl + 8, y1: y(j, left.length), x2: xr - 8, y2: y(i, right.length),
          stroke: colour, "stroke-width": (0.4 + 3.6 * t).toFixed(2), "stroke-opacity": hot === "off" ? 0.04 : (0.15 + 0.85 * t).toFixed(3),
          "class": "edge", "data-i": i, "data-j": j, "data-w": w }, svg("title", { text: left[j] + " → " + right[i] + ": " + fmt(w) })));
      });
    });
    root.appendChild(edges);
    if (opts.fixed) {
      root.appendChild(svg("rect", { x: W / 2 - 80, y: 17, width: 160, height: 17, rx: 4, fill: "#f1f3f5", stroke: "#868e96" }));
      root.appendChild(svg("text", { x: W / 2, y: 29, "font-size": 11, "text-anchor": "middle", text: "fixed: same for every input" }));
    }
    [[left, xl, "end", -12], [right, xr, "start", 12]].forEach(function (side, s) {
      side[0].forEach(function (t, k) {
        var yy = y(k, side[0].length), sel = opts.selected === k && !opts.signed && !opts.fixed;
        var node = svg("g", { "class": "node", "data-k": k });
        node.appendChild(svg("circle", { cx: side[1] + (s ? -4 : 4), cy: yy, r: 4, fill: sel ? "#e8590c" : "#495057" }));
        if (shown(k, side[0].length, opts.selected)) {
          node.appendChild(svg("text", { x: side[1] + side[3] + (s ? -4 : 4), y: yy + 4, "font-size": g.font, "text-anchor": side[2],
            "class": sel ? "selected" : null, text: t }));
        }
        if (opts.onnode) { node.setAttribute("role", "button"); node.setAttribute("aria-label", "pin " + t); activate(node, function () { opts.onnode(k); }); }
        root.appendChild(node);
      });
    });
    var foot = H - 16;
    root.appendChild(svg("text", { x: 4, y: foot, "font-size": 11, "class": "axis", "data-wrap": W - 8,
      text: opts.fixed ? "each line: a position reads itself with weight 1" :
        "width and opacity: weight, 0 to " + fmt(maxAbs) + (threshold > 0 ? "; edges below " + threshold.toFixed(2) + " hidden" : "") +
        (opts.signed ? "; blue positive, red negative" : "") + " (" + drawn + " edges)" }));
    return fitText(root);
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
    if (numericHead() && Number(state.head) >= inp.heads) state.head = "0";
    if (state.token !== null && state.token >= inp.tokens.length) state.token = null;
    if (state.view === "flow" && !inp.flow) state.view = "rollout";
    if (state.threshold === null) state.threshold = inp.tokens.length > 24 ? 0.05 : 0;
    fillSelect(byId("pick-input"), DATA.inputs.map(function (x, k) { return [k, x.name.length > 70 ? x.name.slice(0, 69) + "…" : x.name]; }), state.input);
    fillSelect(byId("pick-layer"), range(inp.layers).map(function (l) { return [l, "layer " + (l + 1)]; }), state.layer);
    fillSelect(byId("pick-head"), range(inp.heads).map(function (h) {
      var hc = headClass(inp, state.layer, h);
      return [String(h), "head " + (h + 1) + (hc ? " (" + hc["class"] + ")" : "")];
    }).concat([["mean", "mean over heads"], ["max", "max over heads"]]), state.head);
    var views = [["attention", "attention"], ["rollout", "rollout"]];
    if (inp.flow) views.push(["flow", "flow"]);
    fillSelect(byId("pick-view"), views, state.view);
    byId("pick-layer").disabled = fused;
    byId("pick-head").disabled = fused;
    byId("pick-threshold").value = String(state.threshold);
    byId("threshold-value").textContent = Number(state.threshold).toFixed(2);
  }

  function pin(k) {  // pin a token (or unpin it when it is already pinned)
    state.token = state.token === k ? null : k;
    state.hover = null;
    renderRouting();
  }
  function tokenButtons() { return byId("token-strip").querySelectorAll("button.token"); }
  function tokenStrip(tokens) {
    var strip = byId("token-strip"), panel = byId("token-panel");
    if (panel.parentNode === strip) strip.parentNode.insertBefore(panel, strip.nextSibling);  // out before the strip is re-drawn
    strip.textContent = "";
    tokens.forEach(function (t, k) {
      strip.appendChild(el("button", { type: "button", "class": "token" + (state.token === k ? " selected" : ""),
        "data-index": k, "aria-pressed": String(state.token === k), text: t,
        onclick: function () { pin(k); tokenButtons()[k].focus({ preventScroll: true }); keepInView(); },
        onmouseenter: function () { hover(k); },
        onkeydown: function (ev) {
          var next = { ArrowRight: k + 1, ArrowDown: k + 1, ArrowLeft: k - 1, ArrowUp: k - 1, Home: 0, End: tokens.length - 1 }[ev.key];
          if (next === undefined) return;
          ev.preventDefault();
          next = Math.max(0, Math.min(tokens.length - 1, next));
          state.token = next;
          renderRouting();
          tokenButtons()[next].focus();
          keepInView();
        } }));
    });
  }
  // on a phone a pinned token's details open inside the strip, under the line of the token (a full-width
  // panel after that line's last token), so they are next to the token, not below the whole strip
  function narrow() { return !!(window.matchMedia && window.matchMedia("(max-width: 720px)").matches); }
  function placePanel() {
    var strip = byId("token-strip"), panel = byId("token-panel"), buttons = tokenButtons(), k = state.token;
    if (!narrow() || k === null || k >= buttons.length) {
      if (panel.parentNode === strip) strip.parentNode.insertBefore(panel, strip.nextSibling);
      panel.classList.remove("inline");
      return;
    }
    var top = buttons[k].offsetTop, last = k;
    while (last + 1 < buttons.length && buttons[last + 1].offsetTop === top) last++;
    strip.insertBefore(panel, buttons[last].nextSibling);
    panel.classList.add("inline");
  }
  function keepInView() {  // after a tap or an arrow on a phone: the details' top is on screen
    if (!narrow() || state.token === null) return;
    var r = byId("token-panel").getBoundingClientRect();
    if (r.top < 0 || r.top > window.innerHeight - 160) window.scrollBy(0, r.top - Math.round(window.innerHeight * 0.35));
  }
  // hover shows a token only while none is pinned: a pin is never replaced by a hover
  function hover(k) { if (state.token === null) { state.hover = k; showToken(k); } }

  function weightList(title, items, cls) {
    return el("div", { "class": "weights " + cls }, [el("h4", { text: title }), el("table", null, items.map(function (it) {
      return el("tr", { "class": it.mark ? "mark" : null }, [el("td", { "class": "tok", text: it.label }),
        el("td", { "class": "bar" }, el("span", { style: "width:" + (100 * Math.min(1, Math.abs(it.w))).toFixed(1) + "%" })),
        el("td", { "class": "num", "data-w": it.w, text: fmt(it.w) })]);
    }))]);
  }
  function showToken(k) {
    var inp = current(), M = matrix(), tokens = inp.tokens, panel = byId("token-panel");
    var reader = state.view === "attention" ? "reads from" : "receives from (input tokens)";
    panel.textContent = "";
    panel.setAttribute("data-token", k);
    panel.setAttribute("data-pinned", String(state.token === k));
    panel.appendChild(el("p", null, [el("strong", { text: tokens[k] }), " (token " + (k + 1) + ") · " + describe() +
      (state.token === k ? " · pinned (Escape unpins)" : " · hovering (click to pin)")]));
    panel.appendChild(el("div", { "class": "pair" }, [
      weightList("row " + (k + 1) + ": " + reader, M[k].map(function (w, j) { return { label: (j + 1) + " " + tokens[j], w: w }; }), "row"),
      weightList("column " + (k + 1) + ": read by", M.map(function (row, i) { return { label: (i + 1) + " " + tokens[i], w: row[k] }; }), "col")
    ]));
  }

  function card(id, title, node, files, exportData) {
    var buttons = el("div", { "class": "export" }, [
      el("button", { type: "button", "class": "small", "data-export": "svg", text: "SVG",
        onclick: function () { download(files() + ".svg", "image/svg+xml", svgText(node)); } })
    ]);
    if (exportData) {
      buttons.appendChild(el("button", { type: "button", "class": "small", "data-export": "json", text: "JSON",
        onclick: function () { download(files() + ".json", "application/json", JSON.stringify(exportData(), null, 1)); } }));
      buttons.appendChild(el("button", { type: "button", "class": "small", "data-export": "csv", text: "CSV",
        onclick: function () { var e = exportData(); download(files() + ".csv", "text/csv", csvText(e.matrix, e.rows, e.columns, e.header)); } }));
    }
    return el("figure", { "class": "card view", id: id }, [el("div", { "class": "card-head" }, [el("h3", { text: title }), buttons]),
      el("div", { "class": "scroll" }, node)]);
  }

  function renderRouting() {
    if (!DATA.inputs.length) { byId("routing-views").textContent = "No routing input on this page."; return; }
    syncControls();
    var inp = current(), M = matrix(), tokens = inp.tokens, sel = state.token;
    byId("routing-source").textContent = "Data: " + inp.source + (inp.bounded ? boundNote(inp).textContent : "");
    byId("routing-what").textContent = describe();
    var predicted = byId("routing-next");
    predicted.textContent = "";
    if (inp.next) predicted.appendChild(predictionLine(inp, null));
    tokenStrip(tokens);
    var views = byId("routing-views");
    views.textContent = "";
    var attention = state.view === "attention";
    var layer = attention ? state.layer : null, head = attention ? state.head : null;
    function exportData() {
      var hc = attention && numericHead() ? headClass(inp, state.layer, Number(state.head)) : null;
      return { numbering: NUMBERING, input: inp.name, source: inp.source, view: state.view,
        layer: attention ? state.layer + 1 : null, head: attention ? (numericHead() ? Number(state.head) + 1 : state.head) : null,
        head_class: hc ? hc["class"] : null, rows: tokens, columns: tokens, matrix: M,
        header: state.view + " of \"" + inp.name + "\", " + describe() + " (" + NUMBERING + ")" };
    }
    function files(view) { return function () { return fileName(view + (attention ? "" : "-" + state.view), inp.name, layer, head); }; }
    var max = maxOf(M);
    views.appendChild(card("view-heatmap", "Heatmap: " + describe(), heatmap(M, tokens, tokens, {
      title: captionName(inp.name) + " · " + describe(), selected: sel, max: max, grid: "routing",
      rowTitle: attention ? "query i ↓" : "output i ↓", colTitle: attention ? "key j →" : "input j →",
      legendLabel: "0 to this view's largest",
      onlabel: pin, onhover: function (i) { hover(i); } }), files("heatmap"), exportData));
    if (tokens.length > 24) views.lastChild.className += " wide";  // a long text's heatmap takes the whole row
    views.appendChild(card("view-graph", "Routing graph", bipartite(M, tokens, tokens, {
      title: captionName(inp.name) + " · " + describe(), leftLabel: attention ? "keys j" : "inputs j",
      rightLabel: attention ? "queries i" : "outputs i", selected: sel, threshold: state.threshold, onnode: pin }),
      files("graph"), exportData));
    var mlp = inp.mlp, W = mlp.W;
    var identity = W.length === W[0].length && W.every(function (r, i) { return r.every(function (w, j) { return w === (i === j ? 1 : 0); }); });
    views.appendChild(card("view-mlp", mlp.title, bipartite(W, mlp.inputs, mlp.outputs, {
      title: mlp.title + ": out i reads in j", leftLabel: "in", rightLabel: "out", signed: !identity, fixed: identity }),
      function () { return fileName("feed-forward", inp.name, null, null); },
      function () { return { numbering: "rows: out i, columns: in j, in their order; the same for every input", title: mlp.title,
        rows: mlp.outputs, columns: mlp.inputs, matrix: W, header: mlp.title + ": matrix[i][j] = out i reads in j; fixed for every input" }; }));
    byId("mlp-note").textContent = mlp.note;
    var panel = byId("token-panel");
    var show = sel !== null ? sel : state.hover;
    if (show !== null && show < tokens.length) showToken(show);
    else { panel.textContent = "Hover a token, a heatmap row or a graph node; click or Enter pins it."; panel.removeAttribute("data-token"); panel.removeAttribute("data-pinned"); }
    placePanel();
    renderOverview();
    renderHeadView();
    renderContrast();
  }

  // ------------------------------------------------------------------ all-heads overview
  function thumbnail(M) {  // on the page's one absolute scale: white 0, dark blue 1 (as the head view's opacity)
    var n = M.length, canvas = el("canvas", { width: n, height: n, "class": "thumb-canvas" });
    var ctx = canvas.getContext("2d"), img = ctx.createImageData(n, n);
    M.forEach(function (row, i) {
      row.forEach(function (w, j) {
        var c = sequentialRGB(w), o = 4 * (i * n + j);
        img.data[o] = c[0]; img.data[o + 1] = c[1]; img.data[o + 2] = c[2]; img.data[o + 3] = 255;
      });
    });
    ctx.putImageData(img, 0, 0);
    return canvas;
  }
  function openHead(layer, head) {
    state.view = "attention"; state.layer = layer; state.head = String(head);
    state.hv = { input: state.input, layer: layer, start: head, headsOn: null, focus: null, pinned: false };
    renderRouting();
    var target = byId("routing");
    if (target.scrollIntoView) target.scrollIntoView({ block: "start" });
  }
  function renderOverview() {
    var inp = current(), root = byId("overview-grid");
    byId("overview-input").textContent = "“" + inp.name + "”";
    root.textContent = "";
    root.appendChild(sourceLine(inp));
    var grid = el("div", { "class": "thumbs", role: "group", "aria-label": "layers × heads (Tab into it, arrows move, Enter opens a head)", style: "grid-template-columns: auto repeat(" + inp.heads + ", minmax(3.2rem, 1fr))" });
    grid.appendChild(el("span", { "class": "thumb-axis corner" }, [el("span", { text: "layer ↓ " }), el("span", { text: "head →" })]));
    range(inp.heads).forEach(function (h) { grid.appendChild(el("span", { "class": "thumb-axis", text: String(h + 1) })); });
    range(inp.layers).forEach(function (l) {
      grid.appendChild(el("span", { "class": "thumb-axis", text: String(l + 1) }));
      range(inp.heads).forEach(function (h) {
        var hc = headClass(inp, l, h), cls = hc ? hc["class"] : "";
        var score = hc && hc.top_score !== null ? " " + hc.top_score.toFixed(2) : "";
        var more = hc ? hc.labels.filter(function (x) { return x !== cls && x !== "mixed"; }).map(function (x) { return "+" + inp.head_classes.short[x]; }).join(" ") : "";
        var chosen = state.view === "attention" && state.layer === l && String(state.head) === String(h);
        var b = el("button", { type: "button", "class": "thumb" + (chosen ? " chosen" : ""), "data-layer": l + 1, "data-head": h + 1,
          "data-class": cls, "data-labels": hc ? hc.labels.join(" ") : "",
          title: "layer " + (l + 1) + ", head " + (h + 1) + (hc ? ": " + hc.labels.join(", ") + " — " + inp.head_classes.descriptions[cls] : ""),
          "aria-label": "open layer " + (l + 1) + " head " + (h + 1) + (hc ? ", " + cls : ""),
          onclick: function () { roving.overview = [l, h]; openHead(l, h); } }, [thumbnail(rowsAt(inp.attention, [l, h])),
          el("span", { "class": "thumb-label cls-" + slug(cls) }, hc ? [inp.head_classes.short[cls], score ? el("span", { "class": "score", text: score }) : null] : null),
          more ? el("span", { "class": "thumb-more", text: more }) : null]);
        grid.appendChild(b);
      });
    });
    // one tab stop (the open head, else the last one used, else layer 1 head 1); arrows, Home/End, PageUp/PageDown move it
    var stop = grid.querySelector("button.thumb.chosen") || grid.querySelector('button.thumb[data-layer="' + ((roving.overview || [0])[0] + 1) +
      '"][data-head="' + ((roving.overview || [0, 0])[1] + 1) + '"]') || grid.querySelector("button.thumb");
    Array.prototype.forEach.call(grid.querySelectorAll("button.thumb"), function (b) { b.setAttribute("tabindex", b === stop ? "0" : "-1"); });
    grid.addEventListener("keydown", function (ev) {
      var t = ev.target;
      if (!t.classList || !t.classList.contains("thumb")) return;
      var l = Number(t.dataset.layer) - 1, h = Number(t.dataset.head) - 1;
      var to = { ArrowRight: [l, h + 1], ArrowLeft: [l, h - 1], ArrowDown: [l + 1, h], ArrowUp: [l - 1, h],
        Home: [l, 0], End: [l, inp.heads - 1], PageUp: [0, h], PageDown: [inp.layers - 1, h] }[ev.key];
      if (!to) return;
      ev.preventDefault();
      to = [Math.max(0, Math.min(inp.layers - 1, to[0])), Math.max(0, Math.min(inp.heads - 1, to[1]))];
      var next = grid.querySelector('button.thumb[data-layer="' + (to[0] + 1) + '"][data-head="' + (to[1] + 1) + '"]');
      t.setAttribute("tabindex", "-1");
      next.setAttribute("tabindex", "0");
      roving.overview = to;
      next.focus();
    });
    var exportData = function () {
      return { numbering: "layer and head count from 1, as the page shows them; attention[layer-1][head-1][i][j]: query i reads key j",
        input: inp.name, source: inp.source, tokens: inp.tokens, layers: inp.layers, heads: inp.heads, attention: inp.attention,
        head_classes: inp.head_classes ? inp.head_classes.heads.map(function (x) { return { layer: x.layer, head: x.head, "class": x["class"], labels: x.labels, top_score: x.top_score }; }) : null };
    };
    var buttons = el("div", { "class": "export" }, [el("button", { type: "button", "class": "small", "data-export": "json", text: "JSON",
      onclick: function () { download(fileName("overview", inp.name, null, null) + ".json", "application/json", JSON.stringify(exportData())); } })]);
    var counts = inp.head_classes ? Object.keys(inp.head_classes.label_counts).filter(function (c) {
      return inp.head_classes.label_counts[c].some(function (x) { return x > 0; });
    }).map(function (c) {
      var total = inp.head_classes.label_counts[c].reduce(function (s, x) { return s + x; }, 0);
      return el("li", null, [el("span", { "class": "thumb-label cls-" + slug(c), text: inp.head_classes.short[c] }), " " + c + " (" + total + " heads): " + inp.head_classes.descriptions[c]]);
    }) : [];
    root.appendChild(el("div", { "class": "card", id: "view-overview" }, [el("div", { "class": "card-head" }, [
      el("h3", { text: inp.layers + " layers × " + inp.heads + " heads" }), buttons]), el("div", { "class": "scroll" }, grid),
      counts.length ? el("ul", { "class": "class-legend" }, counts) : null,
      inp.head_classes ? el("p", { "class": "muted small", text: "A head carries every pattern whose score passes its threshold (+ marks the further ones); the first label is its primary class, the best specific pattern (a sink or broad only when nothing specific passes), with its score. Colour: the weight on the page's one scale, white 0 to dark blue 1, for every thumbnail and the head view." }) : null]));
  }

  // ------------------------------------------------------------------ head view (as BertViz: attending token left, keys right)
  // colour-blind-safe hues (Okabe & Ito 2008 without yellow and black, then Paul Tol's muted set); dark text on light buttons
  var PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#332288", "#117733", "#882255", "#999933",
    "#44AA99", "#AA4499"];
  function headColour(h) { return PALETTE[h % PALETTE.length]; }
  function tint(hex, a) {  // the hue mixed with white: a light button face that dark text reads on
    var v = [1, 3, 5].map(function (k) { return parseInt(hex.slice(k, k + 2), 16); });
    return "rgb(" + v.map(function (c) { return Math.round(255 - a * (255 - c)); }).join(",") + ")";
  }
  //: weights below this are not drawn in the head view (the same absolute scale as the overview: 0 to 1)
  var HEADVIEW_MIN = 0.02;
  function headviewDefaults() {
    var hv = { input: state.input, layer: state.layer, headsOn: null, focus: null, pinned: false };
    if (DATA.contrasts.length) { var c = DATA.contrasts[state.contrast]; hv.input = c.inputs[0]; hv.layer = c.cell[0]; hv.start = c.cell[1]; }
    return hv;
  }
  function renderHeadView() {
    if (!state.hv) state.hv = headviewDefaults();
    var hv = state.hv, inp = DATA.inputs[hv.input], root = byId("headview-body");
    if (hv.layer >= inp.layers) hv.layer = 0;
    if (!hv.headsOn || hv.headsOn.length !== inp.heads) {
      hv.headsOn = range(inp.heads).map(function (h) { return hv.start === undefined ? h === 0 : h === hv.start; });
    }
    var layer = hv.layer, tokens = inp.tokens, n = tokens.length;
    root.textContent = "";
    var pickInput = el("select", { id: "hv-input", "aria-label": "head view: sentence", onchange: function () {
      hv.input = Number(pickInput.value); hv.headsOn = null; hv.focus = null; hv.pinned = false; renderHeadView(); } });
    fillSelect(pickInput, DATA.inputs.map(function (x, k) { return [k, x.name.length > 70 ? x.name.slice(0, 69) + "…" : x.name]; }), hv.input);
    var pickLayer = el("select", { id: "hv-layer", "aria-label": "head view: layer", onchange: function () {
      hv.layer = Number(pickLayer.value); renderHeadView(); } });
    fillSelect(pickLayer, range(inp.layers).map(function (l) { return [l, "layer " + (l + 1)]; }), layer);
    root.appendChild(el("div", { "class": "controls" }, [
      el("span", null, [el("label", { "for": "hv-input", text: "Sentence" }), " ", pickInput]),
      el("span", null, [el("label", { "for": "hv-layer", text: "Layer" }), " ", pickLayer])]));
    root.appendChild(sourceLine(inp));
    var toggles = el("div", { "class": "head-toggles", role: "group", "aria-label": "heads shown" }, range(inp.heads).map(function (h) {
      var hc = headClass(inp, layer, h), on = hv.headsOn[h];
      return el("button", { type: "button", "class": "small head-toggle" + (on ? " on" : ""), "aria-pressed": String(on), "data-head": h + 1,
        style: "border-color:" + headColour(h) + ";background:" + (on ? tint(headColour(h), 0.35) : "#fff") + ";color:#1b1b1b",
        title: hc ? hc.labels.join(", ") : null,
        onclick: function () { hv.headsOn[h] = !hv.headsOn[h]; renderHeadView(); var b = root.querySelector('.head-toggle[data-head="' + (h + 1) + '"]'); if (b) b.focus(); } },
        [el("span", { "class": "swatch", style: "background:" + headColour(h) }), "head " + (h + 1) + (hc ? " " + inp.head_classes.short[hc["class"]] : "")]);
    }).concat([el("button", { type: "button", "class": "small", text: "all", onclick: function () { hv.headsOn = hv.headsOn.map(function () { return true; }); renderHeadView(); } }),
      el("button", { type: "button", "class": "small", text: "none", onclick: function () { hv.headsOn = hv.headsOn.map(function () { return false; }); renderHeadView(); } })]));
    root.appendChild(toggles);
    var font = 14, step = 24, longest = tokens.reduce(function (m, t) { return Math.max(m, String(t).length); }, 1);
    var small = narrow();  // a phone: a narrower gap, so both columns fit the screen
    var pad = Math.max(small ? 60 : 110, Math.min(small ? 120 : 170, 20 + 8.5 * longest)), W = 2 * pad + (small ? 90 : 240);
    var H = n * step + 70, xl = pad, xr = W - pad;
    var on = range(inp.heads).filter(function (h) { return hv.headsOn[h]; });
    var caption = "layer " + (layer + 1) + ", " + (on.length === inp.heads ? "all " + on.length + " heads" :
      (on.length ? "head" + (on.length > 1 ? "s " : " ") + on.map(function (h) { return h + 1; }).join(", ") : "no head"));
    var node = svg("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img", "class": "graph headview fixed-size",
      "aria-label": "head view of " + inp.name + ", " + caption });
    var title = small ? caption : captionName(inp.name) + " · " + caption;  // a phone's drawing is narrow: the caption alone
    node.appendChild(svg("title", { text: title }));
    node.appendChild(svg("text", { x: 4, y: 15, "font-size": 12, "class": "caption", text: title }));
    node.appendChild(svg("text", { x: 4, y: 34, "font-size": 12, "class": "axis", text: "attending token i" }));
    node.appendChild(svg("text", { x: W - 4, y: 34, "font-size": 12, "text-anchor": "end", "class": "axis", text: "reads key j" }));
    function y(k) { return 50 + (k + 0.5) * step; }
    var edges = svg("g", { "class": "edges" }), drawn = 0;
    on.forEach(function (h) {
      headMatrix(inp, layer, h).forEach(function (row, i) {
        row.forEach(function (w, j) {
          if (w < HEADVIEW_MIN) return;
          drawn++;
          edges.appendChild(svg("line", { x1: xl + 6, y1: y(i), x2: xr - 6, y2: y(j), stroke: headColour(h), "stroke-width": 2,
            "stroke-opacity": Math.min(1, w).toFixed(3), "class": "edge", "data-head": h + 1, "data-i": i, "data-j": j, "data-w": w },
            svg("title", { text: tokens[i] + " reads " + tokens[j] + ": " + fmt(w) + " (head " + (h + 1) + ")" })));
        });
      });
    });
    node.appendChild(edges);
    function isolate(side, k) {  // only the lines of one token (its row on the left, its column on the right)
      Array.prototype.forEach.call(edges.childNodes, function (e) {
        var mine = k === null || Number(e.getAttribute(side === "left" ? "data-i" : "data-j")) === k;
        e.style.display = mine ? "" : "none";
      });
      Array.prototype.forEach.call(node.querySelectorAll("text.hv-token"), function (t) {
        t.classList.toggle("selected", k !== null && t.getAttribute("data-side") === side && Number(t.getAttribute("data-k")) === k);
      });
      node.setAttribute("data-focus", k === null ? "" : side + ":" + k);
    }
    [["left", xl - 8, "end"], ["right", xr + 8, "start"]].forEach(function (s) {
      tokens.forEach(function (t, k) {
        var label = svg("text", { x: s[1], y: y(k) + 4, "font-size": font, "text-anchor": s[2], "class": "hv-token", "data-side": s[0],
          "data-k": k, role: "button", "aria-label": (s[0] === "left" ? "lines of " : "lines into ") + t, text: t });
        label.addEventListener("mouseenter", function () { if (!hv.pinned) isolate(s[0], k); });
        label.addEventListener("mouseleave", function () { if (!hv.pinned) isolate(null, null); });
        activate(label, function () {  // a tap or Enter pins (again: unpins)
          var same = hv.pinned && hv.focus && hv.focus[0] === s[0] && hv.focus[1] === k;
          hv.pinned = !same; hv.focus = same ? null : [s[0], k];
          isolate(same ? null : s[0], same ? null : k);
        });
        node.appendChild(label);
      });
    });
    fitText(node);
    if (hv.pinned && hv.focus) isolate(hv.focus[0], hv.focus[1]);
    var foot = el("p", { "class": "muted small" }, "Line opacity: the weight on the page's one scale, 0 to 1 (as the overview); weights below " +
      HEADVIEW_MIN + " are not drawn (" + drawn + " lines). Hover a token to see only its lines; tap or Enter pins them.");
    root.appendChild(card("view-headview", "Head view: " + caption, node,
      function () { return fileName("headview", inp.name, layer, null) + "_heads-" + on.map(function (h) { return h + 1; }).join("-"); }));
    root.appendChild(foot);
  }

  function sentenceLine(inp, position, label) {
    var parts = [el("span", { "class": "muted", text: label })];
    inp.tokens.forEach(function (t, k) { parts.push(" ", el("span", { "class": "tok" + (k === position ? " word" : ""), text: t })); });
    return el("p", { "class": "sentence" }, parts);
  }
  // ------------------------------------------------------------------ the first screen: the story, the contrast, √d, results
  function sourceLine(inp) {
    return el("p", { "class": "source" }, [el("strong", { text: "Data: " }), inp.source, boundNote(inp)]);
  }
  function boundNote(inp) {  // a long text's page keeps each row's top weights only, and says so
    if (!inp.bounded) return null;
    return el("span", { "class": "bounded-note" }, " · Bounded page: " + inp.tokens.length + " tokens, so each attention row keeps its top " +
      inp.bounded.top_k + " weights (no row leaves out more than " + fmt(inp.bounded.dropped) + "); the rest are shown as 0.");
  }
  function isSink(inp, j) { return !!(inp.sinks && inp.sinks[j]); }
  function topKey(row) { var best = 0; row.forEach(function (w, j) { if (w > row[best]) best = j; }); return best; }
  // the sink label of a head whose largest weight is on that label's key: first-token on the first, end-token on the last
  function sinkLabel(inp, layer, head, j) {
    var hc = layer === undefined ? null : headClass(inp, layer, head);
    if (!hc) return null;
    if (j === 0 && hc.labels.indexOf("first-token") >= 0) return "first-token";
    if (j === inp.tokens.length - 1 && hc.labels.indexOf("end-token") >= 0) return "end-token";
    return null;
  }
  // "reads “ate” (0.41)"; a sink's key: "parks its attention on [CLS] (0.93): a sink, it reads nothing"; a head that
  // attnsym.heads labels a sink (toy data has no special tokens), on that sink's key: "… a sink head (first-token)"
  function readsPhrase(inp, row, layer, head) {
    var j = topKey(row), w = fmt(row[j]), label = isSink(inp, j) ? null : sinkLabel(inp, layer, head, j);
    return isSink(inp, j) ? "parks its attention on " + inp.tokens[j] + " (" + w + "): a sink, it reads nothing" :
      label ? "parks its attention on “" + inp.tokens[j] + "” (" + w + "), the " + (label === "first-token" ? "first" : "last") +
        " token: a sink head (" + label + ")" :
      "reads “" + inp.tokens[j] + "” (" + w + ")";
  }
  function sameRead(a, r1, b, r2) { return String(a.tokens[topKey(r1)]).toLowerCase() === String(b.tokens[topKey(r2)]).toLowerCase(); }
  function miniGraph(inp, position, row, title, fixed) {  // the word's row: one line per key it reads (width = weight)
    var keep = range(inp.tokens.length);
    if (keep.length > 16) {  // a long text: the word and the 8 keys it reads most, in text order, numbered
      var top = range(row.length).sort(function (p, q) { return row[q] - row[p]; }).slice(0, 8);
      keep = keep.filter(function (k) { return k === position || top.indexOf(k) >= 0; });
      inp = { tokens: keep.map(function (k) { return (k + 1) + " " + inp.tokens[k]; }) };
      row = keep.map(function (k) { return row[k]; });
      position = keep.indexOf(position);
      title += " (its 8 largest)";
    }
    var n = inp.tokens.length, step = 15, longest = inp.tokens.reduce(function (m, t) { return Math.max(m, String(t).length); }, 1);
    var pad = Math.min(110, 12 + 7 * longest), W = Math.max(2 * pad + 70, 7.5 * title.length + 10), H = n * step + 30;
    var xl = W / 2 - 35, xr = W / 2 + 35;
    var node = svg("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img", "class": "mini fixed-size", "aria-label": title });
    node.appendChild(svg("title", { text: title }));
    function y(k) { return 22 + (k + 0.5) * step; }
    node.appendChild(svg("text", { x: W / 2, y: 13, "font-size": 12, "text-anchor": "middle", "class": "caption", text: title }));
    row.forEach(function (w, j) {
      if (w < 0.02) return;
      node.appendChild(svg("line", { x1: xl + 4, y1: y(position), x2: xr - 4, y2: y(j), stroke: fixed ? "#5f6368" : "#0072B2",
        "stroke-width": (0.6 + 5 * w).toFixed(2), "stroke-opacity": (0.25 + 0.75 * w).toFixed(3), "class": "edge", "data-j": j, "data-w": w }));
    });
    inp.tokens.forEach(function (t, k) {
      node.appendChild(svg("text", { x: xl - 4, y: y(k) + 4, "font-size": 12, "text-anchor": "end", "class": k === position ? "selected" : null, text: t }));
      node.appendChild(svg("text", { x: xr + 4, y: y(k) + 4, "font-size": 12, "class": k === position ? "selected" : null, text: t }));
    });
    return fitText(node);
  }
  function renderStory() {
    var root = byId("story-lines");
    root.textContent = "";
    root.appendChild(el("p", { "class": "story-line" }, [el("strong", { text: "An MLP mixes with fixed weights: " }),
      math("y = W x", false), ", one graph, the same for every input."]));
    root.appendChild(el("p", { "class": "story-line" }, [el("strong", { text: "Attention computes its weights from the input: " }),
      math("A(X) = \\operatorname{softmax}\\!\\big(QK^{\\top}/\\sqrt{d}\\big)", false), ", so ", math("y = W(x)\\,x", false),
      ": each input gets its own graph."]));
  }
  // a decoder: what it predicts next, and where its last position reads from through all layers (the rollout's last row)
  function predictionLine(inp, label) {
    if (!inp.next) return null;
    var last = rowsAt(inp.rollout, [])[inp.tokens.length - 1];
    var from = range(last.length).sort(function (p, q) { return last[q] - last[p]; }).slice(0, 3);
    return el("p", { "class": "prediction" }, [el("strong", { text: (label ? label + ": " : "") + "next, " }),
      inp.next.map(function (x) { return "“" + x[0] + "” " + fmt(x[1]); }).join(" · "),
      el("span", { "class": "muted", text: ". The last token reads, through all layers (rollout, heads averaged), most from " +
        from.map(function (j) { return "“" + inp.tokens[j] + "” (" + fmt(last[j]) + ")"; }).join(", ") + "." })]);
  }
  function wordRow(c, k, layer, head) { return c.rows[k].heads[layer][head]; }
  function renderContrast() {
    var root = byId("contrast"), picture = byId("story-picture");
    root.textContent = ""; picture.textContent = "";
    if (!DATA.contrasts.length) {
      root.appendChild(el("p", { text: "No contrast on this page: give two sentences that share a word (attnsym explore \"…\" \"…\" --word WORD) to see one word routed two ways." }));
      return;
    }
    var c = DATA.contrasts[state.contrast], a = DATA.inputs[c.inputs[0]], b = DATA.inputs[c.inputs[1]];
    if (!state.cell || state.cell.contrast !== state.contrast) state.cell = { contrast: state.contrast, layer: c.cell[0], head: c.cell[1] };
    var layer = state.cell.layer, head = state.cell.head, r1 = wordRow(c, 0, layer, head), r2 = wordRow(c, 1, layer, head);
    var w1 = a.tokens[c.positions[0]], w2 = b.tokens[c.positions[1]];
    // the picture: the MLP's token graph (the word reads only itself, in every sentence) beside attention's two graphs
    var self1 = a.tokens.map(function (_, j) { return j === c.positions[0] ? 1 : 0; });
    picture.appendChild(el("div", { "class": "minis" }, [
      el("figure", { "class": "mini-card" }, [miniGraph(a, c.positions[0], self1, "MLP: fixed", true),
        el("figcaption", { text: "“" + w1 + "” reads only itself, in every sentence: the feed-forward block's token graph is fixed." })]),
      el("figure", { "class": "mini-card" }, [miniGraph(a, c.positions[0], r1, "attention: sentence 1", false),
        el("figcaption", { text: "“" + w1 + "” " + readsPhrase(a, r1, layer, head) + "." })]),
      el("figure", { "class": "mini-card" }, [miniGraph(b, c.positions[1], r2, "attention: sentence 2", false),
        el("figcaption", { text: "“" + w2 + "” " + readsPhrase(b, r2, layer, head) + "." })])]));
    var pick = el("select", { id: "pick-word", "aria-label": "word", onchange: function () {
      state.contrast = Number(pick.value); state.cell = null; var x = DATA.contrasts[state.contrast];
      state.input = x.inputs[0]; state.view = "attention"; state.layer = x.cell[0]; state.head = String(x.cell[1]); state.hv = null;
      renderRouting(); } });
    fillSelect(pick, DATA.contrasts.map(function (x, k) {
      var src = DATA.inputs[x.inputs[0]].source;
      return [k, "“" + x.word + "”: " + DATA.inputs[x.inputs[0]].name + " vs " + DATA.inputs[x.inputs[1]].name +
        (/^toy:/.test(src) ? " (toy: random vectors)" : "")];
    }), state.contrast);
    root.appendChild(el("p", { "class": "headline", id: "headline" }, [
      "Layer " + (layer + 1) + ", head " + (head + 1) + ": in sentence 1 “" + w1 + "” " + readsPhrase(a, r1, layer, head) +
      "; in sentence 2 it " + readsPhrase(b, r2, layer, head) + "." + (maxOf(c.distance) === 0 ?
        " Same weights and, before “" + c.word + "”, the same tokens: a word reads only what it can see, so here it routes the same at every head." :
        sameRead(a, r1, b, r2) ?
        " Same weights; at this head both read the same word (the grid below shows where they differ)." :
        " Same weights, two inputs, two routings.")]));
    root.appendChild(sentenceLine(a, c.positions[0], "1"));
    root.appendChild(sentenceLine(b, c.positions[1], "2"));
    root.appendChild(el("p", { "class": "source" }, [el("strong", { text: "Data: " }), a.source === b.source ? a.source :
      "sentence 1: " + a.source + "; sentence 2: " + b.source]));
    if (a.next || b.next) {
      root.appendChild(el("div", { "class": "predictions", id: "predictions" }, [el("p", { "class": "small muted",
        text: "What the model predicts after each sentence (its most probable next tokens), and where that prediction read from:" }),
        predictionLine(a, "sentence 1"), predictionLine(b, "sentence 2")]));
    }
    if (DATA.contrasts.length > 1) root.appendChild(el("p", { "class": "lede" }, [el("label", { "for": "pick-word", text: "Word: " }), pick]));
    function side(inp, k) {
      var shares = c.shares ? el("p", { "class": "muted small" }, "roles: " + c.roles.map(function (r, q) { return r + " " + fmt(c.shares[k][layer][head][q]); }).join(" · ")) : null;
      return el("div", null, [weightList("“" + inp.tokens[c.positions[k]] + "” in " + (k + 1) + " reads from", wordRow(c, k, layer, head).map(function (w, j) {
        return { label: (j + 1) + " " + inp.tokens[j], w: w, mark: j === c.positions[k] }; }), "row"), shares]);
    }
    var grid = heatmap(c.distance, range(c.distance.length).map(function (l) { return "layer " + (l + 1); }),
      range(c.distance[0].length).map(function (h) { return String(h + 1); }), {
        title: "distance of “" + c.word + "” per layer × head", chosen: [layer, head], max: 1, grid: "contrast",
        rowTitle: "layer ↓", colTitle: "head →", legendLabel: "distance, 0 to 1",
        cellTitle: function (i, j) { return "layer " + (i + 1) + ", head " + (j + 1); },
        oncell: function (i, j) {
          state.cell = { contrast: state.contrast, layer: i, head: j };
          state.view = "attention"; state.layer = i; state.head = String(j); state.input = c.inputs[0];
          state.hv = { input: c.inputs[0], layer: i, start: j, headsOn: null, focus: null, pinned: false };
          renderRouting();
          var target = byId("headline");
          if (target.scrollIntoView) target.scrollIntoView({ block: "nearest" });
        } });
    var more = el("details", { "class": "more", id: "contrast-more" }, [
      el("summary", { text: "More: the distance at every head, the word's rows, the other measures" }),
      el("div", { "class": "card", id: "contrast-pair" }, [
        el("h3", null, ["Role distance at layer " + (layer + 1) + ", head " + (head + 1) + ": ",
          el("strong", { "class": "contrast-distance", text: fmt(c.distance[layer][head]) })]),
        el("div", { "class": "pair side" }, [side(a, 0), side(b, 1)]),
        c.note ? el("p", { "class": "note", text: c.note }) : null,
        c.facts.length ? el("div", { "class": "scroll" }, el("table", { "class": "details-table facts" }, c.facts.map(function (f) {
          return el("tr", null, [el("th", { text: f[0] }), el("td", { text: f[1] })]); }))) : null]),
      card("view-contrast-grid", "Distance per layer × head (click or Enter a cell)", grid,
        function () { return fileName("contrast-" + slug(c.word), a.name, null, null); },
        function () { return { numbering: "layer and head count from 1, as the page shows them", word: c.word, metric: c.metric,
          header: "distance of '" + c.word + "' per layer (rows) and head (columns), counted from 1: " + c.metric,
          rows: range(c.distance.length).map(function (l) { return l + 1; }), columns: range(c.distance[0].length).map(function (h) { return h + 1; }), matrix: c.distance }; }),
      el("p", { "class": "muted small", text: c.metric + ". A cell changes the headline, the rows, the head view and the routing views." })]);
    if (state.moreOpen) more.open = true;
    more.addEventListener("toggle", function () { state.moreOpen = more.open; });
    root.appendChild(more);
  }
  function claimById(id) { return DATA.claims.filter(function (c) { return c.claim === id; })[0]; }
  function openClaim(id) {
    var d = byId("claim-" + id);
    if (!d) return;
    var fold = d.closest("details.group");
    if (fold) fold.open = true;
    d.open = true;
    d.scrollIntoView({ block: "start" });
  }
  function renderSqrt() {
    var root = byId("story-sqrt"), claim = claimById("variance-scaling");
    root.textContent = "";
    var fig = claim && claim.figures.length ? claim.figures[0] : null;
    root.appendChild(el("div", { "class": "sqrt-line" }, [
      fig ? el("a", { href: "#claim-variance-scaling", "class": "thumb-link", onclick: function (ev) { ev.preventDefault(); openClaim("variance-scaling"); } },
        el("img", { src: fig.src, alt: "variance-scaling: " + fig.name, "class": "sqrt-thumb" })) : null,
      el("p", null, [el("strong", { text: "Why " }), math("\\sqrt{d}", false), el("strong", { text: ": " }),
        "with unit-variance components, ", math("\\operatorname{Var}(q\\cdot k) = d", false),
        "; dividing the scores by ", math("\\sqrt{d}", false), " brings it back to 1 and keeps the softmax from saturating. ",
        claim ? el("a", { href: "#claim-variance-scaling", onclick: function (ev) { ev.preventDefault(); openClaim("variance-scaling"); },
          text: "The claim, checked: " + claim.verdict + "." }) : el("span", { "class": "muted", text: "(claims not checked on this page)" })])]));
  }
  // the results the page was given (the tour's: what was validated, to what precision, the claims), first and in words
  function renderFindings(root) {
    root.appendChild(el("h3", { "class": "findings-title", text: "Results" }));
    root.appendChild(el("ul", { "class": "findings", "aria-label": "results" }, DATA.results.map(function (r) {
      var title = el("strong", { text: (r.status === "ok" ? "✓ " : (r.status === "bad" ? "✗ " : "")) + r.title });
      return el("li", { "class": "finding " + r.status }, [r.target ? el("a", { href: r.target }, title) : title, ": " + r.text]);
    })));
  }
  function figureId(path) { return "figure-" + String(path).replace(/\.png$/, "").replace(/[^A-Za-z0-9]+/g, "-"); }
  function renderFigures() {  // the figures shown with their captions; the files folded below them
    if (!DATA.figures.length && !DATA.files.length) return;
    byId("figures").hidden = false;
    byId("nav-figures").hidden = false;
    byId("figures-note").hidden = !DATA.figures.length;
    var grid = byId("figure-grid");
    DATA.figures.forEach(function (f) {
      grid.appendChild(el("figure", { "class": "tour-figure", id: figureId(f.path) }, [
        el("a", { href: f.path, "class": "figure-link" }, el("img", { src: f.src, alt: f.caption })),
        el("figcaption", null, [el("a", { href: f.path, "class": "path", text: f.path }), ": " + f.caption])]));
    });
    byId("files-fold").hidden = !DATA.files.length;
    byId("files-summary").textContent = "All " + DATA.files.length + " files written beside this page (links)";
    var list = byId("file-list");
    DATA.files.forEach(function (f) { list.appendChild(el("li", null, [el("a", { href: f.path, text: f.path }), " — " + f.what])); });
  }
  function renderResults() {
    var root = byId("results-strip"), items = [];
    root.textContent = "";
    if (DATA.results.length) { renderFindings(root); return; }
    if (DATA.claims.length) {
      var ok = DATA.claims.filter(function (c) { return c.as_expected; }).length;
      items.push(el("a", { href: "#claims", "class": "result" + (ok === DATA.claims.length ? " ok" : " bad") },
        [el("strong", { text: DATA.claims.length + " claims checked" }), ": " + (ok === DATA.claims.length ? "every verdict as expected" :
          ok + " as expected, " + (DATA.claims.length - ok) + " not")]));
    }
    if (DATA.derivations.length) {
      items.push(el("a", { href: "#derivations", "class": "result ok" }, [el("strong", { text: "Derived exactly" }),
        ": the forward pass and its gradients, step by step (SymPy)"]));
    }
    (DATA.contrasts.length ? DATA.contrasts[state.contrast].facts : []).filter(function (f) { return f[0] === "same weights"; }).forEach(function (f) {
      items.push(el("span", { "class": "result " + (/NOT/.test(f[1]) ? "bad" : "ok") }, [el("strong", { text: "Same weights" }), ": " + f[1]]));
    });
    if (items.length) root.appendChild(el("div", { "class": "results", role: "list", "aria-label": "results" }, items.map(function (x) { x.setAttribute("role", "listitem"); return x; })));
  }

  // ------------------------------------------------------------------ start
  function start() {
    var timings = { parsed: performance.now() };
    renderDerivations();
    timings.derivations = performance.now();
    renderClaims();
    timings.claims = performance.now();
    renderStory();
    renderSqrt();
    [["pick-input", "input"], ["pick-layer", "layer"], ["pick-head", "head"], ["pick-view", "view"]].forEach(function (p) {
      byId(p[0]).addEventListener("change", function (ev) {
        var v = ev.target.value;
        state[p[1]] = p[1] === "input" || p[1] === "layer" ? Number(v) : v;
        if (p[1] === "input") {
          state.contrast = Math.max(0, DATA.contrasts.findIndex(function (c) { return c.inputs.indexOf(state.input) >= 0; }));
          state.threshold = null; state.headsOn = null; state.hover = null;
        }
        renderRouting();
      });
    });
    byId("pick-threshold").addEventListener("input", function (ev) { state.threshold = Number(ev.target.value); renderRouting(); });
    document.addEventListener("keydown", function (ev) {
      if (ev.key === "Escape" && state.token !== null) {
        var from = document.activeElement, grid = from && from.closest ? from.closest("svg[data-grid]") : null;
        state.token = null; state.hover = null; renderRouting();
        if (grid) refocus(grid.getAttribute("data-grid"));  // the keyboard stays where it was
      }
    });
    if (DATA.contrasts.length) {  // open on the contrast's chosen cell
      var c = DATA.contrasts[0];
      state.input = c.inputs[0]; state.layer = c.cell[0]; state.head = String(c.cell[1]);
    }
    renderRouting();
    renderResults();
    renderFigures();
    var meta = byId("meta");
    Object.keys(DATA.meta).forEach(function (k) { meta.appendChild(el("span", { text: k + ": " + DATA.meta[k] })); });
    timings.ready = performance.now();
    window.attnsymExplorer.timings = timings;  // milliseconds since navigation started
    document.body.setAttribute("data-ready", "true");
  }
  window.attnsymExplorer = { state: state, render: renderRouting, svgText: svgText, pin: pin,
    select: function (k) { state.token = k; state.hover = null; renderRouting(); } };
  start();
})();
