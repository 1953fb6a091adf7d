"""attnsym.plots: data first (the figure shows what it was given), then labels, then files."""

from __future__ import annotations

import io
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import erf
from strategies import attention_specs, random_arrays

import attnsym as at
from attnsym import plots
from attnsym.errors import SpecTypeError
from attnsym.tolerances import TOLERANCES

TOL64 = TOLERANCES["float64"]  # the one table (attnsym.tolerances)

PIL = pytest.importorskip("PIL.Image")


def _main_axes(fig):
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>" and ax.get_visible()]


def _colorbars(fig):
    return [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]


def _assert_labelled(fig):
    for ax in _main_axes(fig):
        shared = ax.get_shared_x_axes().get_siblings(ax)
        assert any(a.get_xlabel().strip() for a in shared), f"axis {ax} has no x label"
        assert ax.get_ylabel().strip(), f"axis {ax} has no y label"
    title = fig.get_suptitle() if hasattr(fig, "get_suptitle") else fig._suptitle.get_text()
    assert title.strip() or any(ax.get_title().strip() for ax in _main_axes(fig))


def _softmax_rows(S):
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    return E / E.sum(axis=-1, keepdims=True)


# ----------------------------------------------------------------------------- heatmap
def test_heatmap_shows_the_matrix_per_head_with_labels_and_colour_bar():
    rng = np.random.default_rng(0)
    A = _softmax_rows(rng.standard_normal((3, 5, 5)))
    tokens = ["the", "cat", "sat", "on", "mat"]
    fig = plots.attention_heatmap(A, tokens)
    axes = _main_axes(fig)
    assert len(axes) == 3
    for h, ax in enumerate(axes):
        np.testing.assert_array_equal(ax.images[0].get_array(), A[h])  # data first
        assert ax.get_xlabel() == "key j (attended to)"
        assert ax.get_ylabel() == "query i (attending)"
        assert [t.get_text() for t in ax.get_xticklabels()] == tokens
        assert [t.get_text() for t in ax.get_yticklabels()] == tokens
        assert ax.get_title() == f"head {h + 1}"  # people count heads from 1; the panel shows A[h]
        assert ax.images[0].get_clim() == (0.0, A.max())  # the colour scale spans the weights shown
    (bar,) = _colorbars(fig)
    assert "attention weight" in bar.get_ylabel()
    _assert_labelled(fig)


@settings(max_examples=15, deadline=None)
@given(spec=attention_specs(max_n=5, max_d=4, max_heads=2), seed=st.integers(0, 2**16))
def test_heatmap_of_any_layer_shows_its_weights_head_by_head(spec, seed):
    arrays = random_arrays(spec, seed)
    params = {name: arrays[name] for name in spec.parameter_names}
    _, A = at.numeric.attention(arrays["X"], **params, spec=spec)
    A = np.asarray(A).reshape(spec.heads, spec.n, spec.n)
    fig = plots.attention_heatmap(A)
    axes = _main_axes(fig)
    assert len(axes) == spec.heads
    for h, ax in enumerate(axes):
        np.testing.assert_array_equal(ax.images[0].get_array(), A[h])
        assert ax.images[0].get_clim() == (0.0, float(A.max()) if A.max() > 0 else 1.0)  # 0 … the largest weight
        assert ax.get_xlabel() and ax.get_ylabel()
    assert len(_colorbars(fig)) == 1


def test_heatmap_annotates_small_matrices_with_their_values():
    A = np.array([[0.25, 0.75], [1.0, 0.0]])
    fig = plots.attention_heatmap(A)
    texts = sorted(t.get_text() for t in _main_axes(fig)[0].texts)
    assert texts == sorted(["0.25", "0.75", "1.00", "0.00"])


def test_heatmap_accepts_torch_tensors():
    torch = pytest.importorskip("torch")
    A = torch.tensor([[0.5, 0.5], [0.1, 0.9]], dtype=torch.float64)
    fig = plots.attention_heatmap(A)
    np.testing.assert_array_equal(_main_axes(fig)[0].images[0].get_array(), A.numpy())


@pytest.mark.parametrize(
    ("A", "kwargs", "error", "message"),
    [
        (np.ones((2, 3)), {}, at.ShapeError, r"A must have shape (n, n) or (heads, n, n) (got (2, 3))"),
        (np.ones((1, 2, 3, 3)), {}, at.ShapeError, r"A must have shape (n, n) or (heads, n, n) (got (1, 2, 3, 3))"),
        (np.zeros((0, 3, 3)), {"head_titles": ["h"]}, at.ShapeError,
         "A must hold at least one head: shape (heads, n, n) with heads >= 1 (got (0, 3, 3))"),
        (np.zeros((2, 0, 0)), {}, at.ShapeError,
         "A must have at least one position: shape (n, n) or (heads, n, n) with n >= 1 (got (2, 0, 0))"),
        (np.eye(2), {"tokens": ["a"]}, at.ShapeError, "tokens must have 2 labels, one per position (got 1)"),
        (np.eye(2), {"tokens": "ab"}, SpecTypeError,
         "tokens must be a sequence of 2 labels, one per position (got str 'ab')"),
        (np.eye(2), {"tokens": 5}, SpecTypeError, "tokens must be a sequence of 2 labels, one per position (got int 5)"),
        (np.ones((2, 2, 2)), {"head_titles": 7}, SpecTypeError,
         "head_titles must be a sequence of 2 labels, one per head of A (got int 7)"),
        (np.ones((2, 2, 2)), {"head_titles": ["x"]}, at.ShapeError,
         "head_titles must have 2 labels, one per head of A (got 1)"),
        (np.array([[np.nan, 1.0], [0.0, 1.0]]), {}, at.ShapeError,
         "A must contain only finite values (got nan at index (0, 0))"),
        (np.array([[1.0, 0.0], [0.0, -np.inf]]), {}, at.ShapeError,
         "A must contain only finite values (got -inf at index (1, 1))"),
        (np.eye(2) * (1 + 1j), {}, at.ShapeError, "A must be a real numeric array (got complex, dtype complex128)"),
        (None, {}, at.ShapeError, "A must be a numeric array (got None)"),
        (np.array([[-1e308, 1e308], [0.0, 1.0]]), {}, at.ShapeError,
         "A's colour range -1e+308 … 1e+308 is wider than float64 holds; rescale A"),
        (np.eye(2), {"allowed": np.ones((3, 3), bool)}, at.ShapeError,
         "allowed must have shape (n, n) = (2, 2) (got (3, 3))"),
        (np.eye(2), {"allowed": [[1, 0], [1]]}, at.ShapeError, "allowed must be a numeric array (got list: "),
        (np.eye(2), {"allowed": [[1, 0], [0.5, 1]]}, at.ShapeError,
         "allowed must hold True/False (or 1/0) per cell (got 0.5 at index (1, 0))"),
        (np.eye(2), {"allowed": [["yes", "no"], ["no", "yes"]]}, at.ShapeError, "allowed must be a numeric array"),
    ],
)
def test_heatmap_rejects_bad_input_naming_the_argument(A, kwargs, error, message):
    with pytest.raises(error) as caught:
        plots.attention_heatmap(A, **kwargs)
    assert str(caught.value).startswith(message), str(caught.value)


def test_heatmap_of_a_mask_that_allows_nothing_hatches_every_cell():
    A = np.array([[[0.5, 0.5], [0.2, 0.8]], [[1.0, 0.0], [0.3, 0.7]]])
    fig = plots.attention_heatmap(A, allowed=np.zeros((2, 2), bool), annotate=True)
    for ax in _main_axes(fig):
        image = ax.images[0]
        assert np.ma.getmaskarray(image.get_array()).all()  # no cell drawn as a weight
        assert image.get_clim() == (0.0, 1.0)  # nothing shown to scale to: the range of a weight
        assert sorted(t.get_text() for t in ax.texts) == ["×"] * 4
        assert sum(patch.get_hatch() == "///" for patch in ax.patches) == 4
    (bar,) = _colorbars(fig)
    assert "every cell is masked" in bar.get_ylabel() and "grey hatched" in bar.get_ylabel()
    assert plots.figure_to_bytes(fig)  # and it renders


@pytest.mark.parametrize(("A", "says"), [
    (np.array([[0.25, 0.75], [1.0, 0.0]]), "rows sum to 1"),
    (np.array([[1.0, 0.0], [0.0, 0.0]]), "rows sum to 1 (a fully masked row: 0)"),  # a query that may attend to none
    (np.array([[0.6, 0.2], [0.5, 0.45]]), "row sums 0.8 to 0.95"),  # a learned sink keeps 1 − π of each row
])
def test_heatmap_title_says_what_the_rows_sum_to(A, says):
    fig = plots.attention_heatmap(A)
    title = fig.get_suptitle() if hasattr(fig, "get_suptitle") else fig._suptitle.get_text()
    assert title.endswith(says)


_FINITE = st.sampled_from([0.0, 1.0, -0.5, 0.25, 1e300, -1e300, 5e-324])


@st.composite
def _any_heatmap_arguments(draw):
    """Arguments of attention_heatmap, well formed or not: (n, n), (heads, n, n) or any rank 0..4, sizes 0..3,
    several dtypes, NaN/inf/huge values, wrong kinds for every argument."""
    heads, n = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    shape = draw(st.one_of(st.just((n, n)), st.just((heads, n, n)), st.lists(st.integers(0, 3), max_size=4).map(tuple)))
    size = int(np.prod(shape))
    values = np.array(draw(st.lists(_FINITE, min_size=size, max_size=size)), dtype=np.float64).reshape(shape)
    if size and draw(st.integers(0, 3)) == 0:  # one NaN or infinity somewhere
        values.flat[draw(st.integers(0, size - 1))] = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    dtype = draw(st.sampled_from(["float64", "float64", "float32", "float16", "int64", "bool", "complex128", "object",
                                  "str"]))
    with np.errstate(all="ignore"):
        A = values.astype(dtype) if dtype not in ("int64", "bool") else np.nan_to_num(values).astype(dtype)
    A = draw(st.sampled_from([A, A, A, A.tolist(), "A", None]))
    n = shape[-1] if shape else 0
    allowed = draw(st.sampled_from([None, None, np.zeros((n, n), bool), np.tri(n, dtype=bool), np.ones((n + 1, n + 1)),
                                    np.full((n, n), np.nan), "mask"]))
    tokens = draw(st.sampled_from([None, None, [f"t{i}" for i in range(n)], ["x"], "ab", 3]))
    head_titles = draw(st.sampled_from([None, None, [f"h{i}" for i in range(shape[0] if shape else 0)], 3]))
    return A, {"tokens": tokens, "head_titles": head_titles, "allowed": allowed, "annotate": draw(st.booleans())}


@settings(max_examples=60, deadline=None)
@given(arguments=_any_heatmap_arguments())
def test_heatmap_draws_or_refuses_with_an_attnsym_error(arguments):
    A, kwargs = arguments
    try:
        fig = plots.attention_heatmap(A, **kwargs)
    except at.AttnsymError as error:
        assert "\n" not in str(error) and str(error).split()[0] in ("A", "A's", "tokens", "head_titles", "allowed")
    else:
        assert len(_main_axes(fig)) >= 1


# ----------------------------------------------------------------------------- positions
def test_positions_figure_draws_the_numeric_encodings():
    n, d = 20, 8
    fig = plots.positional_encoding_figure(n=n, d_model=d, dims=[0, 1, 6])
    curves, matrix = _main_axes(fig)
    # independent closed form: PE(p, 2i) = sin(p / 10000^(2i/d)), PE(p, 2i+1) = cos(...)
    lines = curves.get_lines()
    for k, dim in enumerate([0, 1, 6]):
        curve, dots = lines[2 * k], lines[2 * k + 1]  # the curve of real p, then the integer positions on it
        for line in (curve, dots):
            angle = line.get_xdata() / 10000 ** (2 * (dim // 2) / d)
            expected = np.sin(angle) if dim % 2 == 0 else np.cos(angle)
            np.testing.assert_allclose(line.get_ydata(), expected, rtol=TOL64.rtol, atol=TOL64.atol)
        np.testing.assert_array_equal(dots.get_xdata(), np.arange(n))
        assert len(curve.get_xdata()) > 10 * n and dots.get_linestyle() == "None"  # no sawtooth between integers
    assert matrix.images[0].get_array().shape == (n, d)
    assert curves.get_xlabel().startswith("position p")
    assert "PE" in _colorbars(fig)[0].get_ylabel()
    _assert_labelled(fig)


# ----------------------------------------------------------------------------- GELU
def test_gelu_figure_shows_exact_tanh_and_their_difference():
    fig = plots.gelu_figure()
    top, bottom = _main_axes(fig)
    x = top.get_lines()[0].get_xdata()
    exact = x / 2 * (1 + erf(x / math.sqrt(2)))
    approx = x / 2 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(top.get_lines()[0].get_ydata(), exact, rtol=TOL64.rtol, atol=TOL64.atol)
    np.testing.assert_allclose(top.get_lines()[1].get_ydata(), approx, rtol=TOL64.rtol, atol=TOL64.atol)
    np.testing.assert_allclose(bottom.get_lines()[0].get_ydata(), approx - exact, atol=TOL64.atol)
    # the annotated maximum error is the true one (known to be about 4.7e-4 near |x| = 2.7)
    note = bottom.get_title()
    assert f"{np.max(np.abs(approx - exact)):.2e}" in note
    assert "x = -2.70 and x = +2.70" in note and "even" in note  # both maxima named, the reason given
    assert 4e-4 < np.max(np.abs(approx - exact)) < 5e-4
    assert top.get_legend() is not None
    _assert_labelled(fig)


# ----------------------------------------------------------------------------- variance, entropy, paths
def test_variance_figure_plots_given_estimates_and_exact_lines_on_log_axes():
    d = np.array([1, 4, 16, 64])
    fig = plots.variance_figure(d, d * 1.01, np.ones(4) * 0.99, exact_unscaled=d, exact_scaled=np.ones(4),
                                unscaled_ci=np.stack([d * 0.9, d * 1.1], axis=1), scaled_ci=np.full((4, 2), [0.9, 1.1]))
    ax, zoom = _main_axes(fig)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    np.testing.assert_array_equal(zoom.get_lines()[-1].get_ydata(), np.ones(4))  # exact scaled variance
    exact_lines = [line for line in ax.get_lines() if line.get_label().endswith("exact")]
    np.testing.assert_array_equal(exact_lines[0].get_ydata(), d)
    np.testing.assert_array_equal(exact_lines[1].get_ydata(), np.ones(4))
    assert ax.get_legend() is not None
    _assert_labelled(fig)


def test_entropy_figure_plots_given_values_with_log_n_reference():
    d = np.array([1, 8, 64])
    fig = plots.entropy_figure(d, [2.0, 1.0, 0.1], [2.5, 2.5, 2.5], n=16, max_weight_unscaled=[0.2, 0.6, 0.99],
                               max_weight_scaled=[0.15, 0.15, 0.15])
    left, right = _main_axes(fig)
    np.testing.assert_array_equal(left.get_lines()[0].get_ydata(), [2.0, 1.0, 0.1])
    reference = left.get_lines()[2]
    assert reference.get_ydata()[0] == pytest.approx(math.log(16))
    assert right.get_ylim()[1] >= 1.0
    _assert_labelled(fig)


def test_path_length_figure_has_one_line_per_architecture():
    ns = np.array([2, 4, 8])
    fig = plots.path_length_figure(ns, {"self-attention": [1, 1, 1], "recurrent": [1, 3, 7]},
                                   {"self-attention": [1, 1, 1], "recurrent": [2, 4, 8]})
    left, right = _main_axes(fig)
    assert [line.get_label() for line in left.get_lines()] == ["self-attention", "recurrent"]
    np.testing.assert_array_equal(right.get_lines()[1].get_ydata(), [2, 4, 8])
    assert not right.texts  # no two lines coincide in the depth panel
    _assert_labelled(fig)
    fig = plots.path_length_figure(ns, {"self_attention": [1, 1, 1], "convolution": [1, 1, 1]},
                                   {"self_attention": [1, 1, 1], "convolution": [1, 2, 3]})
    left, right = _main_axes(fig)
    assert [t.get_text() for t in left.texts] == ["self attention = convolution"]  # coinciding lines are named
    assert not right.texts
    with pytest.raises(at.ShapeError, match="one entry per n"):
        plots.path_length_figure(ns, {"rnn": [1, 2]}, {"rnn": [1, 2]})


# ----------------------------------------------------------------------------- files
@pytest.mark.parametrize("dpi", [50, 100])
def test_saved_png_has_the_expected_pixel_size(tmp_path, dpi):
    fig = plots.attention_heatmap(np.eye(3))
    path = plots.save_figure(fig, tmp_path / "heat.png", dpi=dpi)
    with PIL.open(path) as image:
        image.load()
        width, height = fig.get_size_inches()
        assert image.size == (round(width * dpi), round(height * dpi))
        assert image.format == "PNG"
        extrema = image.convert("L").getextrema()
        assert extrema[0] < extrema[1]  # not a blank image


def test_saved_svg_is_svg_and_never_overwritten_silently(tmp_path):
    fig = plots.gelu_figure(np.linspace(-1, 1, 5), np.zeros(5), np.zeros(5))
    path = plots.save_figure(fig, tmp_path / "g.svg")
    assert b"<svg" in path.read_bytes()[:500]
    before = path.read_bytes()
    with pytest.raises(at.OverwriteError, match="exists"):
        plots.save_figure(fig, path)
    assert path.read_bytes() == before
    plots.save_figure(fig, path, overwrite=True)
    with pytest.raises(at.SpecError, match=r"must end in \.png, \.svg, \.pdf"):
        plots.save_figure(fig, tmp_path / "g.jpg")


@pytest.mark.parametrize(("suffix", "magic"), [(".png", b"\x89PNG"), (".svg", b"<?xml"), (".pdf", b"%PDF")])
def test_the_suffix_chooses_the_format_and_the_bytes_repeat(tmp_path, suffix, magic):
    fig = plots.gelu_figure(np.linspace(-1, 1, 5), np.zeros(5), np.zeros(5))
    a = plots.save_figure(fig, tmp_path / f"a{suffix}").read_bytes()
    b = plots.save_figure(plots.gelu_figure(np.linspace(-1, 1, 5), np.zeros(5), np.zeros(5)),
                          tmp_path / f"b{suffix}").read_bytes()
    assert a.startswith(magic) and a == b  # no date or producer in the file


def test_png_bytes_are_deterministic():  # same figure twice, and a fresh identical figure
    fig = plots.attention_heatmap(np.eye(2))
    assert plots.figure_to_bytes(fig) == plots.figure_to_bytes(fig)
    assert plots.figure_to_bytes(plots.attention_heatmap(np.eye(2))) == plots.figure_to_bytes(fig)
    assert PIL.open(io.BytesIO(plots.figure_to_bytes(fig))).format == "PNG"


def test_variance_figure_from_the_monte_carlo_covers_the_exact_values():
    fig = plots.figure("variance", quick=True, seed=1)
    ax, zoom = _main_axes(fig)
    d = ax.get_lines()[0].get_xdata()
    np.testing.assert_array_equal(d, 2 ** np.arange(13))
    scaled = zoom.containers[0].lines[0].get_ydata()  # the errorbar data line: the estimates
    assert np.all(np.abs(scaled - 1) < 0.15)  # ±5 % intervals; 0.15 is three half-widths


def test_entropy_figure_from_the_layers_shows_saturation_only_without_scaling():
    fig = plots.figure("entropy", quick=True, seed=0)
    left, right = _main_axes(fig)
    unscaled, scaled = (line.get_ydata() for line in left.get_lines()[:2])
    d = left.get_lines()[0].get_xdata()
    assert d[-1] >= 256
    # theory: unscaled scores have standard deviation ~sqrt(d), so rows become one-hot; scaled ones stay spread
    assert unscaled[-1] < 0.5 < 1.5 < scaled[-1] <= math.log(16)
    assert right.get_lines()[0].get_ydata()[-1] > 0.8 > 0.5 > right.get_lines()[1].get_ydata()[-1]


@pytest.mark.parametrize("name", ["heatmap", "positions", "gelu", "paths"])
def test_standard_figures_build_from_the_layers(name):
    fig = plots.figure(name, quick=True)
    assert _main_axes(fig)
    _assert_labelled(fig)


def test_unknown_figure_name_is_a_clear_error():
    with pytest.raises(at.SpecError, match="name must be one of heatmap, positions"):
        plots.figure("histogram")


def test_import_attnsym_and_plots_does_not_import_matplotlib():
    code = ("import sys, attnsym, attnsym.plots; "
            "print('matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_import_plots_loads_neither_networkx_nor_scipy_until_a_graph_is_drawn():
    code = ("import sys, attnsym.plots as p; heavy = ('networkx', 'scipy', 'sympy'); "
            "print([m for m in heavy if m in sys.modules]); p.draw_routing; print('networkx' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "True"]  # plots.routing (networkx) loads on first access


def test_only_the_plots_package_imports_matplotlib():
    # every import statement of the library, at module top or inside a function, read from the source
    import ast

    root = Path(at.__file__).parent
    offenders = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).parts[0] == "plots":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            offenders += [f"{path.relative_to(root)}:{node.lineno}" for name in names if name.split(".")[0] == "matplotlib"]
    assert offenders == []


def test_the_old_graphs_drawing_names_say_where_they_went():
    # attnsym.graphs.draw_routing / draw_contrast were public before the plots package; graphs may not import plots,
    # so asking for them names the new place instead
    from attnsym import graphs

    for name in ("draw_routing", "draw_contrast"):
        with pytest.raises(AttributeError, match=f"moved to attnsym.plots.{name}"):
            getattr(graphs, name)
        assert callable(getattr(plots, name))
    with pytest.raises(AttributeError, match="no attribute 'draw_heatmap'"):
        graphs.draw_heatmap  # noqa: B018


def test_path_length_figure_names_coinciding_lines_inside_the_axes():
    # The note naming four coinciding lines was centred on the middle n and ran out of the panel,
    # over the tick labels and the other panel's legend.
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    ns = np.array([2, 4, 8, 16, 32, 64])
    ones = [1] * len(ns)
    depths = {"self_attention": ones, "recurrent": ns.tolist(), "convolution": ones, "dilated_convolution": ones,
              "restricted_self_attention": ones}
    fig = plots.path_length_figure(ns, {"self_attention": ones, "recurrent": ns.tolist()}, depths)
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    _, right = _main_axes(fig)
    (note,) = right.texts
    assert note.get_text().replace("\n", " ") == "self attention = convolution = dilated convolution = restricted self attention"
    box, axes_box = note.get_window_extent(renderer), right.get_window_extent(renderer)
    assert axes_box.x0 <= box.x0 and box.x1 <= axes_box.x1 and axes_box.y0 <= box.y0 and box.y1 <= axes_box.y1
    for label in right.get_yticklabels():
        assert not box.overlaps(label.get_window_extent(renderer))


def test_heatmap_marks_masked_cells_and_scales_colours_to_the_weights():
    spec = at.AttentionSpec(n=16, d_model=8, heads=2, causal=True)
    A, tokens = plots.random_attention(spec, seed=0)
    fig = plots.attention_heatmap(A, tokens, allowed=spec.allowed_array(), annotate=True)
    axes = _main_axes(fig)
    allowed = spec.allowed_array()
    for ax in axes:
        image = ax.images[0].get_array()
        assert np.ma.is_masked(image) and np.array_equal(np.ma.getmaskarray(image), ~allowed)
        texts = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text() for t in ax.texts}
        assert texts[(0, 1)] == "×" and texts[(1, 0)] != "×"  # a masked cell is marked, a real weight printed
        assert all(text != "0.00" for (i, j), text in texts.items() if not allowed[i, j])
        vmin, vmax = ax.images[0].get_clim()
        assert vmin == 0.0 and vmax == pytest.approx(A[:, allowed].max())  # not a fixed 0–1 scale
    (bar,) = _colorbars(fig)
    assert "masked" in bar.get_ylabel()


def test_the_route_grid_shows_every_layer_and_head_in_one_axes():
    from types import SimpleNamespace

    rng = np.random.default_rng(0)
    A = rng.random((2, 3, 4, 4))
    A /= A.sum(-1, keepdims=True)
    route = SimpleNamespace(layers=2, heads=3, n=4, attention=A, model="m", text="a b",
                            labels=lambda: ["[CLS]", "a", "b", "[SEP]"])
    fig = plots.attention_grid_figure(route)
    ax = fig.axes[0]
    images = ax.get_images()
    assert len(images) == 6
    for k, image in enumerate(images):  # layer-major, each block exactly its head's matrix on the shared 0..1 scale
        np.testing.assert_array_equal(image.get_array(), A[k // 3, k % 3])
        assert image.get_clim() == (0, 1)
    texts = {t.get_text() for t in ax.texts} | {t.get_text() for t in ax.get_children() if hasattr(t, "get_text")}
    assert {"head 1", "head 2", "head 3", "layer 1", "layer 2"} <= texts
    assert [t.get_text() for t in ax.get_xticklabels()] == ["[CLS]", "a", "b", "[SEP]"] * 3
    assert plots.figure_to_bytes(fig, "png") == plots.figure_to_bytes(plots.attention_grid_figure(route), "png")
