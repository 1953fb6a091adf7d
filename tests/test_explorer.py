"""The explorer's data model and page, without a browser: what is serialised is what Python computed."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from attnsym import AttentionSpec, OverwriteError, ShapeError, SpecError, graphs
from attnsym.claims import verify
from attnsym.explorer import (
    ContrastData,
    MlpData,
    PageData,
    derivation_section,
    encode_array,
    page_data,
    render_page,
    routing_input,
    toy_routing,
    write_page,
)
from attnsym.explorer.page import CSP, katex_css
from attnsym.numeric import attention, random_inputs


def _page_json(page: str) -> dict:
    match = re.search(r'<script type="application/json" id="attnsym-data">(.*?)</script>', page, re.S)
    assert match
    return json.loads(match.group(1))


@pytest.fixture(scope="module")
def toy():
    return toy_routing(5)


def test_float32_is_written_as_the_shortest_decimal_that_reads_back_exactly():
    rng = np.random.default_rng(0)
    a = rng.random((3, 4, 5)).astype(np.float32)
    back = np.array(json.loads(json.dumps(encode_array(a))), dtype=np.float64)
    np.testing.assert_array_equal(back.astype(np.float32), a)
    assert max(len(json.dumps(v)) for v in np.ravel(encode_array(a)).tolist()) <= 12
    b = rng.random((2, 2))
    np.testing.assert_array_equal(np.array(json.loads(json.dumps(encode_array(b)))), b)


@pytest.mark.parametrize("bad", [np.array([1.0, np.nan]), np.array([np.inf]), np.array([1 + 2j])])
def test_non_finite_or_complex_arrays_are_refused(bad):
    with pytest.raises(ShapeError):
        encode_array(bad)


def test_toy_routing_is_numeric_attention_with_rollout_flow_and_node_changes(toy):
    inputs, contrasts = toy
    spec = AttentionSpec(n=6, d_model=8, heads=2)
    drawn = random_inputs(spec, 5, batch=(2,))  # the inputs the explorer draws for seed 5
    weights = {name: drawn[name] for name in spec.parameter_names}
    X1 = drawn["X"][0]
    _, A1 = attention(X1, **weights, spec=spec)
    np.testing.assert_array_equal(inputs[0].attention[0], A1)
    np.testing.assert_array_equal(inputs[0].fused["mean"][0], A1.mean(axis=0))
    np.testing.assert_array_equal(inputs[0].fused["max"][0], A1.max(axis=0))
    np.testing.assert_array_equal(inputs[0].rollout, graphs.attention_rollout([A1]))
    np.testing.assert_array_equal(inputs[0].flow, graphs.attention_flow([A1]))
    cat = next(c for c in contrasts if c.word == "cat")
    for h in range(2):
        expected = graphs.node_changes(inputs[0].attention[0, h], inputs[1].attention[0, h]).row_tv[1]
        assert cat.distance[0, h] == expected
    assert [c.word for c in contrasts] == ["the", "cat", "sat", "on", "mat"]
    assert inputs[0].mlp.W.shape == (8, 8) and inputs[0].mlp is inputs[1].mlp


def test_routing_input_checks_shapes():
    mlp = MlpData("id", ("a", "b"), ("a", "b"), np.eye(2), "fixed")
    with pytest.raises(ShapeError, match="one label per position"):
        routing_input("x", "y", ["a"], np.eye(2), mlp)
    with pytest.raises(ShapeError, match=r"\(layers, heads, n, n\)"):
        routing_input("x", "y", ["a", "b"], np.ones((2, 3)), mlp)
    with pytest.raises(ShapeError, match=r"MlpData.W must have shape \(2, 3\)"):
        MlpData("id", ("a", "b", "c"), ("a", "b"), np.eye(2), "fixed")


def test_page_data_refuses_contrasts_that_point_nowhere(toy):
    from dataclasses import replace

    inputs, contrasts = toy
    c = contrasts[0]
    with pytest.raises(SpecError, match="input index 5"):
        PageData(inputs=inputs, contrasts=[replace(c, inputs=(0, 5))])
    with pytest.raises(SpecError, match="position 9"):
        PageData(inputs=inputs, contrasts=[replace(c, positions=(0, 9))])
    with pytest.raises(ShapeError, match=r"rows\[0\]\['heads'\] must have shape \(2, 2, 6\)"):
        replace(c, distance=np.zeros((2, 2)))
    with pytest.raises(ShapeError, match=r"rows\[1\]\['mean'\]"):
        ContrastData(c.word, c.inputs, c.positions, c.distance, c.metric,
                     rows=(c.rows[0], {**c.rows[1], "mean": np.zeros((1, 2))}))


def test_derivations_carry_every_step_and_the_document():
    forward, gradients = derivation_section()
    assert [s["title"] for s in forward["steps"]][:3] == ["Inputs", "Queries", "Keys"]
    assert all(s["latex"] for s in forward["steps"] + gradients["steps"])
    assert gradients["document"].startswith(r"\documentclass") and r"\end{document}" in gradients["document"]


def test_the_page_is_self_contained_and_holds_the_data_it_was_given(toy):  # toy uses seed 5 too
    ev = verify("gelu", quick=True)
    data = page_data(evidence=[ev], seed=5)
    page = render_page(data)
    assert f'content="{CSP}"' in page
    # nothing to fetch: no src/href to another resource, fonts inlined
    assert not re.search(r'(?:src|href)\s*=\s*["\']?(?:https?:)?//', page)
    assert "url(fonts/" not in page and page.count("data:font/woff2;base64,") >= 15
    shown = _page_json(page)
    assert shown["claims"][0]["claim"] == "gelu" and shown["claims"][0]["figures"][0]["src"].startswith("data:image/png")
    np.testing.assert_array_equal(np.array(shown["inputs"][0]["attention"]), toy[0][0].attention)
    assert shown["decimals"] == 3


def test_text_that_looks_like_markup_cannot_end_the_data_script():
    mlp = MlpData("</script><script>alert(1)</script>", ("a",), ("a",), np.eye(1), "<!-- x")
    data = PageData(inputs=[routing_input("</script>", "s", ["<b>"], np.eye(1), mlp)])
    page = render_page(data)
    assert page.count("</script>") == 3  # the data, KaTeX and the page's script
    assert _page_json(page)["inputs"][0]["mlp"]["title"] == "</script><script>alert(1)</script>"


def test_katex_css_inlines_every_font_it_names():
    css = katex_css()
    assert "url(" in css and not re.search(r"url\((?!data:)", css)


def test_write_page_never_overwrites_silently(tmp_path):
    data = PageData()
    path = write_page(data, tmp_path / "p.html")
    with pytest.raises(OverwriteError):
        write_page(data, path)
    write_page(data, path, overwrite=True)
    with pytest.raises(SpecError, match="PageData"):
        render_page({"title": "x"})


def test_result_types_display_themselves_in_jupyter(toy):
    import xml.etree.ElementTree as ET

    from attnsym._html import heatmap_svg, sequential

    ev = verify("softmax-jacobian", quick=True)
    shown = ev._repr_html_()
    assert ev.claim in shown and ev.verdict in shown and "$$" in shown
    spec = AttentionSpec(n=3, d_model=4)
    rng = np.random.default_rng(0)
    weights = {name: rng.standard_normal(spec.shapes[name]) for name in spec.parameter_names}
    X1, X2 = rng.standard_normal((2, 3, 4))
    c = graphs.contrast(spec, X1, X2, weights, tokens=["a", "<b>", "c"])
    shown = c._repr_html_()
    assert "&lt;b&gt;" in shown and "<b>" not in shown and shown.count("<svg") == 2
    svg = heatmap_svg(c.A1, ["a", "<b>", "c"], title="x")
    root = ET.fromstring(svg)
    cells = root.findall("{http://www.w3.org/2000/svg}rect")
    assert [float(r.get("data-w")) for r in cells] == c.A1.ravel().tolist()
    assert [r.get("fill") for r in cells] == [sequential(w) for w in c.A1.ravel()]
    assert (sequential(-1), sequential(2)) == (sequential(0), sequential(1))


# ---------------------------------------------------------------------------------------------- a bounded page
def _long_input(n=120, layers=2, heads=3, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.dirichlet(np.full(n, 0.2), size=(layers, heads, n)).astype(np.float32)
    tokens = [f"t{k}" for k in range(n)]
    mlp = MlpData("ff", tuple(tokens), tuple(tokens), np.eye(n), "fixed")
    return routing_input("long", "random rows", tokens, A, mlp, flow=False)


def test_top_k_rows_keeps_each_rows_largest_weights_and_says_what_it_left_out():
    from attnsym.explorer.data import top_k_rows

    inp = _long_input(n=20)
    t = top_k_rows(inp.attention, 4)
    A = np.asarray(inp.attention)  # float32, as stored
    idx, w = np.array(t["idx"]), np.array(t["w"], dtype=np.float32)  # the shortest decimals read back exactly
    assert idx.shape == (2, 3, 20, 4) and t["n"] == 20 and t["topk"] == 4
    np.testing.assert_array_equal(w, np.take_along_axis(A, idx, axis=-1))  # the stored weights are the array's
    assert (np.sort(A, axis=-1)[..., -4:][..., ::-1] == w).all()  # and they are each row's four largest
    A64, w64 = A.astype(np.float64), w.astype(np.float64)
    assert t["dropped"] == pytest.approx(float((A64.sum(-1) - w64.sum(-1)).max()))


def test_a_large_input_is_stored_bounded_with_a_warning_giving_the_size(tmp_path):
    from attnsym.explorer.page import PageSizeWarning

    inp = _long_input()
    data = page_data(evidence=(), inputs=[inp], toy=False, derivations=False)
    assert inp.weights == 2 * 3 * 120**2 + 2 * 2 * 120**2 + 120**2 and not inp.bounded()
    small = PageData(inputs=[inp], max_weights=10_000)  # the same input above a lower bound
    assert small.bounded_inputs() == ["long"]
    stored = _page_json(render_page(small))["inputs"][0]
    assert stored["bounded"]["top_k"] == 8 and stored["attention"]["topk"] == 8 and stored["flow"] is None
    with pytest.warns(PageSizeWarning,
                      match=r"the page is \d+\.\d MB, bounded: 1 input\(s\) too large to store whole keep each row's top 8"):
        write_page(small, tmp_path / "bounded.html")
    dense = write_page(data, tmp_path / "dense.html")
    assert (tmp_path / "bounded.html").stat().st_size < dense.stat().st_size / 3


def test_a_page_past_the_cap_is_refused_unless_the_cap_is_raised(tmp_path):
    from attnsym.errors import SizeLimitError

    data = page_data(evidence=(), inputs=[_long_input()], toy=False, derivations=False)
    with pytest.raises(SizeLimitError, match=r"above the 0\.1 MB cap .* pass max_bytes=None"):
        write_page(data, tmp_path / "p.html", max_bytes=100_000)
    assert not (tmp_path / "p.html").exists()
    assert write_page(data, tmp_path / "p.html", max_bytes=None).is_file()
    with pytest.raises(SpecError, match="max_bytes must be a positive integer or None"):
        write_page(data, tmp_path / "q.html", max_bytes=0)


def test_a_toy_contrast_opens_on_the_most_different_head_that_is_no_sink():
    """Seed 23: "the" differs most at head 2, which attnsym.heads calls an end-token sink on input 2; the page opens on
    head 1 instead. Over seeds, every toy contrast opens on its largest distance among the heads no input calls a sink."""
    from attnsym.explorer.collect import sink_heads

    inputs, contrasts = toy_routing(23)
    the = contrasts[0]
    assert the.word == "the" and np.unravel_index(np.argmax(the.distance), the.distance.shape) == (0, 1)
    assert sink_heads(inputs[1])[0, 1] and "end-token" in inputs[1].head_classes["heads"][1]["labels"]
    assert the.cell == (0, 0)
    for seed in range(30):
        inputs, contrasts = toy_routing(seed)
        sink = sink_heads(inputs[0]) | sink_heads(inputs[1])
        for c in contrasts:
            allowed = np.where(sink, -np.inf, c.distance) if not sink.all() else c.distance
            assert c.distance[c.cell] == allowed.max() and (sink.all() or not sink[c.cell])


def test_results_and_figures_of_a_page_are_checked_and_inlined():
    from attnsym.explorer import PageData

    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 8
    data = PageData(results=[("3 claims checked", "every verdict as expected", "ok", "#claims")],
                    figures=[("figures/a.png", "a figure", png)]).to_dict()
    assert data["results"] == [{"title": "3 claims checked", "text": "every verdict as expected", "status": "ok",
                                "target": "#claims"}]
    assert data["figures"][0]["src"].startswith("data:image/png;base64,iVBORw0KGgo")
    with pytest.raises(SpecError, match="status must be one of ok, bad, info"):
        PageData(results=[("x", "y", "passed", "")])
    with pytest.raises(SpecError, match="target must be an anchor"):
        PageData(results=[("x", "y", "ok", "claims")])
    with pytest.raises(SpecError, match="must be PNG bytes"):
        PageData(figures=[("a.svg", "an SVG", b"<svg/>")])
