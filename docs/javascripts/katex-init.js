// Typeset the docs' math offline with the KaTeX bundled in attnsym (attnsym/explorer/vendor/katex):
// pymdownx.arithmatex (generic mode) wraps inline math in \( \) and display math in \[ \].
function attnsymTypeset() {
  document.querySelectorAll(".arithmatex").forEach(function (el) {
    if (el.dataset.typeset) return;
    var tex = el.textContent.trim(), display = el.tagName === "DIV";
    if (tex.startsWith("\\(") || tex.startsWith("\\[")) tex = tex.slice(2, -2);
    try {
      katex.render(tex, el, { displayMode: display, throwOnError: false, strict: "ignore" });
      el.dataset.typeset = "true";
    } catch (err) {
      el.title = String(err);
    }
  });
}
if (typeof document$ !== "undefined") document$.subscribe(attnsymTypeset);
else document.addEventListener("DOMContentLoaded", attnsymTypeset);
