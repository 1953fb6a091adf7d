"""`attnsym tour --quick` into a temporary folder: every promised file exists and is valid."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import re

import networkx as nx
import numpy as np
import pytest

import attnsym as at
from attnsym.cli import main
from attnsym.cli.tour import SECTIONS, _check_folder
from attnsym.explorer import headless
from attnsym.graphs import read
from attnsym.tolerances import TOLERANCES

TOL64 = TOLERANCES["float64"]  # the one table (attnsym.tolerances)

PIL = pytest.importorskip("PIL.Image")

PROMISED = [
    "index.md",
    "index.html",
    "derivations/forward.md",
    "derivations/forward.tex",
    "derivations/gradients.md",
    "derivations/gradients.tex",
    "derivations/validation.md",
    "claims/report.md",
    "graphs/attention-input-1.graphml",
    "graphs/attention-input-1.json",
    "graphs/attention-input-2.graphml",
    "graphs/attention-input-2.json",
    "graphs/mlp.graphml",
    "graphs/mlp.json",
    "graphs/routing.png",
    "figures/heatmap-input-1.png",
    "figures/heatmap-input-2.png",
    "figures/positions.png",
    "figures/gelu.png",
    "figures/variance.png",
    "figures/entropy.png",
    "figures/paths.png",
]

_MD_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


@pytest.fixture(scope="module")
def tour(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tour") / "attnsym-tour"
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["tour", "-o", str(folder), "--quick", "--seed", "0"])
    return folder, status, out.getvalue()


def test_tour_succeeds_and_summarises(tour):
    folder, status, stdout = tour
    assert status == 0, stdout
    assert str(folder) in stdout
    assert "index.html" in stdout
    assert re.search(r"\d+ claims checked: every verdict as expected", stdout)
    assert "the MLP graph is identical for both" in stdout
    assert re.search(r"derived exactly by SymPy .* and the independent numeric ones agree to \d\.\de-\d+", stdout)


@pytest.mark.parametrize("name", PROMISED)
def test_promised_file_exists_and_is_not_empty(tour, name):
    folder, _, _ = tour
    path = folder / name
    assert path.is_file(), f"{name} is missing"
    assert path.stat().st_size > 0


def test_every_png_opens_and_is_a_real_image(tour):
    folder, _, _ = tour
    pngs = sorted(folder.rglob("*.png"))
    assert len(pngs) >= 8
    for path in pngs:
        with PIL.open(path) as image:
            image.load()
            assert image.format == "PNG"
            assert image.size[0] >= 300 and image.size[1] >= 200
            low, high = image.convert("L").getextrema()
            assert low < high, f"{path.name} is blank"
    with PIL.open(folder / "figures" / "gelu.png") as image:
        assert image.size == (800, 600)  # 8 x 6 inches at 100 dpi


def test_graphml_and_json_parse_and_show_routing_vs_fixed(tour):
    folder, _, _ = tour
    g = folder / "graphs"
    A1, A2 = nx.read_graphml(g / "attention-input-1.graphml"), nx.read_graphml(g / "attention-input-2.graphml")
    assert A1.number_of_nodes() == A2.number_of_nodes() == 6  # the tour's one layer: n = 6 tokens
    for G in (A1, A2):
        assert G.is_directed()
        weights = [w for _, _, w in G.edges(data="weight")]
        assert all(isinstance(w, float) for w in weights)
        # each query's incoming weights form a probability distribution
        for node in G.nodes:
            incoming = sum(w for _, _, w in G.in_edges(node, data="weight"))
            assert incoming == pytest.approx(1.0, abs=1e-9)
    w1 = {(u, v): w for u, v, w in A1.edges(data="weight")}
    w2 = {(u, v): w for u, v, w in A2.edges(data="weight")}
    assert max(abs(w1.get(e, 0.0) - w2.get(e, 0.0)) for e in set(w1) | set(w2)) > 1e-3
    M = nx.read_graphml(g / "mlp.graphml")
    assert M.number_of_edges() > 0
    for stem in ("attention-input-1", "attention-input-2", "mlp"):
        data = json.loads((g / f"{stem}.json").read_text())
        H = nx.node_link_graph(data, edges="links" if "links" in data else "edges")
        G = nx.read_graphml(g / f"{stem}.graphml")
        assert H.number_of_nodes() == G.number_of_nodes()
        assert H.number_of_edges() == G.number_of_edges()
        assert sorted(w for *_, w in H.edges(data="weight")) == pytest.approx(
            sorted(w for *_, w in G.edges(data="weight")), abs=0)


def _links(markdown: str) -> list[str]:
    return [target for target in _MD_LINK.findall(markdown) if not target.startswith(("http://", "https://", "#"))]


@pytest.mark.parametrize("page", ["index.md", "claims/report.md"])
def test_markdown_links_resolve(tour, page):
    folder, _, _ = tour
    path = folder / page
    links = _links(path.read_text(encoding="utf-8"))
    assert links
    for target in links:
        assert (path.parent / target.split("#")[0]).resolve().is_file(), f"{page} links to missing {target}"


def test_index_md_links_every_file_and_says_what_it_shows(tour):
    folder, _, _ = tour
    text = (folder / "index.md").read_text(encoding="utf-8")
    linked = set(_links(text))
    for name in PROMISED:
        if name not in ("index.md", "index.html"):
            assert name in linked, f"index.md does not link {name}"
    from attnsym.cli.route import CAUSAL_MODEL
    from attnsym.models import PACKAGED

    for folder_name, heading, _ in SECTIONS:
        if folder_name == "causal-model" and CAUSAL_MODEL not in PACKAGED:
            continue  # an attnsym that cannot open the causal model has no such section
        assert f"## {heading}" in text
    for line in text.splitlines():
        if line.startswith("- ["):
            assert " — " in line and len(line.split(" — ", 1)[1]) > 10  # a description, not just a link


def test_index_html_is_self_contained_and_its_links_resolve(tour):
    folder, _, _ = tour
    text = (folder / "index.html").read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert not re.search(r"<script[^>]*\bsrc\s*=", text, re.IGNORECASE)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text, re.IGNORECASE)
    assert '<link rel="stylesheet"' not in text and "<style>" in text
    data = json.loads(re.search(r'<script type="application/json" id="attnsym-data">(.*?)</script>', text, re.S).group(1))
    targets = [f["path"] for f in data["files"]]  # the explorer page lists the tour's files as links
    assert len(targets) >= len(PROMISED) - 2
    for target in targets:
        assert (folder / target).is_file(), f"index.html links to missing {target}"
    assert any(c["figures"] for c in data["claims"])
    shown = {f["path"]: f["src"] for f in data["figures"]}  # the tour's own figures, inlined byte for byte
    drawn = [p.relative_to(folder).as_posix() for p in folder.rglob("*.png")]
    assert sorted(shown) == sorted(d for d in drawn if not d.startswith("claims/"))
    for path, src in shown.items():
        assert src == "data:image/png;base64," + base64.b64encode((folder / path).read_bytes()).decode("ascii")


def test_derivations_are_markdown_math_and_standalone_latex(tour):
    folder, _, _ = tour
    for what in ("forward", "gradients"):
        md = (folder / "derivations" / f"{what}.md").read_text(encoding="utf-8")
        assert md.count("$$") >= 2 and md.count("$$") % 2 == 0
        tex = (folder / "derivations" / f"{what}.tex").read_text(encoding="utf-8")
        assert tex.lstrip().startswith("\\documentclass")
        assert "\\begin{document}" in tex and tex.rstrip().endswith("\\end{document}")
    assert "x_{1,1}" in (folder / "derivations" / "forward.md").read_text(encoding="utf-8")


def test_heatmaps_of_the_two_inputs_differ(tour):
    folder, _, _ = tour
    with PIL.open(folder / "figures" / "heatmap-input-1.png") as a, PIL.open(folder / "figures" / "heatmap-input-2.png") as b:
        assert a.size == b.size
        assert np.any(np.asarray(a.convert("L")) != np.asarray(b.convert("L")))


def test_folder_check(tmp_path):
    from attnsym.errors import OutputError, OverwriteError

    assert _check_folder(tmp_path / "new", force=False) == tmp_path / "new"
    assert _check_folder(tmp_path, force=False) == tmp_path  # exists but empty
    (tmp_path / "x").write_text("x")
    with pytest.raises(OverwriteError, match="not empty; pass overwrite=True"):
        _check_folder(tmp_path, force=False)
    assert _check_folder(tmp_path, force=True) == tmp_path
    with pytest.raises(OutputError, match="is a regular file; give a folder"):
        _check_folder(tmp_path / "x", force=True)


def test_force_rewrites_an_existing_tour(tmp_path, monkeypatch):
    from attnsym.cli import tour as tour_module
    from attnsym.errors import OverwriteError

    # only the derivation step, so the test is quick; the full tour runs in the fixture above
    monkeypatch.setattr(tour_module, "STEPS", (("deriving", tour_module._derivations),))
    first = tour_module.write_tour(tmp_path / "t", seed=0, quick=True)
    (tmp_path / "t" / "derivations" / "forward.md").write_text("stale", encoding="utf-8")
    with pytest.raises(OverwriteError, match="not empty"):
        tour_module.write_tour(tmp_path / "t", seed=0, quick=True)
    assert (tmp_path / "t" / "derivations" / "forward.md").read_text(encoding="utf-8") == "stale"
    second = tour_module.write_tour(tmp_path / "t", seed=0, quick=True, force=True)
    assert [e.path for e in second.entries] == [e.path for e in first.entries]
    assert (tmp_path / "t" / "derivations" / "forward.md").read_text(encoding="utf-8").startswith("# ")
    assert "derivations/forward.md" in (tmp_path / "t" / "index.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("what", ["forward", "gradients"])
def test_latex_derivations_compile(tour, what, tmp_path):
    import shutil
    import subprocess

    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex is not installed")
    folder, _, _ = tour
    shutil.copy(folder / "derivations" / f"{what}.tex", tmp_path)
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", f"{what}.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert (tmp_path / f"{what}.pdf").stat().st_size > 1000


def test_one_set_up_named_once_and_said_plainly(tour):
    """The heatmaps and the routing graphs show the same layer, weights and two inputs, and the
    index says the words only label random vectors."""
    from attnsym.cli import tour as tour_module

    folder, _, _ = tour  # the tour drew its heatmaps and graphs from one _setup in its second process
    t = tour_module._Tour(folder, seed=0, quick=True, overwrite=False, on_claim=None)
    spec, weights, (X1, _X2) = tour_module._setup(t)  # drawn again from the seed: the same layer and inputs
    assert (spec.n, spec.d_model, spec.heads) == (len(tour_module.TOUR_TOKENS), 8, 2)
    _, A1 = at.numeric.attention(X1, **weights, spec=spec)
    G1 = read(folder / "graphs" / "attention-input-1.graphml")
    np.testing.assert_allclose(at.graphs.attention_matrix(G1), np.asarray(A1)[0], rtol=TOL64.rtol)  # head 1 of input 1
    assert [G1.nodes[i]["label"] for i in range(spec.n)] == list(tour_module.TOUR_TOKENS)
    assert not np.allclose(X1[0], X1[4])  # the two rows labelled "the" are different random vectors
    index = (folder / "index.md").read_text(encoding="utf-8")
    assert index.count("The set-up") == 1
    (note,) = [line for line in index.splitlines() if "The set-up" in line]
    assert "random vector" in note and "real-model" in note


def test_index_md_escapes_markdown_in_summaries_and_descriptions(tmp_path):
    from attnsym.cli.tour import TourEntry, TourResult, _index_markdown

    result = TourResult(tmp_path, entries=[TourEntry("claims", "claims/report.md", "a <b>bold</b> *claim* file")],
                        facts={"claim_rows": [{"claim": "softmax-jacobian", "verdict": "holds", "expected": "holds",
                                               "as_expected": True, "summary": "diagonal -2*p*(p - 1) | x_1"}]})
    text = _index_markdown(result)
    assert "| diagonal -2\\*p\\*(p - 1) \\| x\\_1 |" in text  # not italics, not a new cell
    assert "a &lt;b&gt;bold&lt;/b&gt; \\*claim\\* file" in text and "<b>" not in text


def test_the_pages_claim_figures_are_the_reports_pngs_resampled(tour):
    """Each claim figure is drawn once: index.html shows the report's PNG resampled to 60 dpi, not a second drawing."""
    from attnsym.plots.files import resampled_png

    folder, _, _ = tour
    text = (folder / "index.html").read_text(encoding="utf-8")
    data = json.loads(re.search(r'<script type="application/json" id="attnsym-data">(.*?)</script>', text, re.S).group(1))
    shown = {f["src"] for c in data["claims"] for f in c["figures"]}
    written = sorted((folder / "claims" / "figures").glob("*.png"))
    assert written and len(shown) == len(written)
    resampled = {"data:image/png;base64," + base64.b64encode(resampled_png(p.read_bytes(), 60)).decode("ascii")
                 for p in written}
    assert shown == resampled


def test_tour_has_the_causal_section_or_says_how_to_install_it(tour):
    from attnsym.cli.route import CAUSAL_INSTALL, CAUSAL_MODEL, CAUSAL_PROMPT
    from attnsym.models import PACKAGED, available

    folder, _, stdout = tour
    if CAUSAL_MODEL not in PACKAGED:
        pytest.skip(f"this attnsym cannot open {CAUSAL_MODEL}")
    if CAUSAL_MODEL in available():
        assert f"A causal model ({CAUSAL_MODEL}): after {CAUSAL_PROMPT!r} it predicts ' Paris'" in stdout
        assert (folder / "causal-model" / "report.md").is_file()
        assert "causal-model/report.md" in (folder / "index.md").read_text()
    else:
        assert CAUSAL_INSTALL in stdout and not (folder / "causal-model").exists()


def test_index_md_opens_on_the_results_and_folds_each_sections_files(tour):
    folder, _, _ = tour
    text = (folder / "index.md").read_text(encoding="utf-8")
    results = text.index("## Results")
    assert results < text.index("**The set-up**") < text.index("\n## ", results + 1)
    block = text[results:text.index("**The set-up**")]
    assert "✓ **Derivation validated**" in block and re.search(r"numeric ones agree to \d\.\de-\d+", block)
    assert re.search(r"✓ \*\*\d+ claims checked\*\*: every verdict as expected", block)
    assert "✓ **MLP graph identical, attention graphs differ**" in block
    assert text.count("<details>") == text.count("</details>") >= 4
    folded = False
    for line in text.splitlines():  # every file link inside a fold
        folded = {"<details>": True, "</details>": False}.get(line, folded)
        if line.startswith("- ["):
            assert folded, line


browser = pytest.mark.skipif(headless.browser_available() is not None, reason=str(headless.browser_available()))


@browser
@pytest.mark.parametrize("size", [(1440, 900), (390, 844)])
def test_index_html_shows_the_results_first_and_its_figures_with_their_files_folded(tour, size):
    """The tour's page: what was validated (to what precision), the claims as expected and the MLP graph identical, as
    readable results on the first screen (after the story on a phone); its figures shown with their captions; the
    files folded; nothing under 11 px and no sideways scroll at 390 px; no request leaves the page."""
    folder, _, _ = tour
    with headless.chromium(*size) as driver:
        headless.requests_made(driver)
        headless.load(driver, folder / "index.html")
        driver.execute_script("window.scrollTo(0, 0)")
        findings = driver.execute_script(
            "return Array.from(document.querySelectorAll('#results-strip li.finding'), li => [li.className, li.innerText,"
            " parseFloat(getComputedStyle(li).fontSize), li.getBoundingClientRect().top + scrollY])")
        text = [f[1] for f in findings]
        assert text[0].startswith("✓ Derivation validated: ") and re.search(r"numeric ones agree to \d\.\de-\d+", text[0])
        assert re.match(r"✓ \d+ claims checked: every verdict as expected", text[1])
        assert text[2].startswith("✓ MLP graph identical, attention graphs differ: ")
        assert all(f[0] in ("finding ok", "finding info") for f in findings) and all(f[2] >= 13 for f in findings)
        if size[0] == 1440:
            assert findings[0][3] < 900  # on the first screen
        footer = driver.execute_script("return document.getElementById('meta').innerText")
        assert "summary" not in footer and "claims checked" not in footer
        figures = driver.execute_script(
            "return Array.from(document.querySelectorAll('#figure-grid figure.tour-figure'), f => [f.id,"
            " f.querySelector('img').naturalWidth, f.querySelector('img').getAttribute('src').slice(0, 22),"
            " f.querySelector('figcaption').innerText, f.querySelector('a').getAttribute('href')])")
        written = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.png")
                         if p.relative_to(folder).parts[0] != "claims")
        assert sorted(f[4] for f in figures) == written and len(written) >= 9
        for _, width, src, caption, path in figures:
            assert width > 100 and src == "data:image/png;base64," and caption.startswith(path + ": ") and len(caption) > 30
        assert figures[0][4] == "graphs/routing.png" and figures[0][0] == "figure-graphs-routing"
        fold = driver.execute_script("const d = document.getElementById('files-fold');"
                                     "return [d.open, d.querySelector('summary').innerText, d.querySelectorAll('li a').length]")
        assert fold[0] is False and fold[1].startswith("All ") and fold[2] >= len(PROMISED) - 1
        if size[0] == 390:
            driver.execute_script("document.getElementById('files-fold').open = true")
            assert headless.text_below(driver, 11) == []
            assert driver.execute_script("return document.documentElement.scrollWidth <= innerWidth")
        assert headless.network_requests(headless.requests_made(driver)) == []
