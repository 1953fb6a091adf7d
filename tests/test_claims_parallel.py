"""Claims checked in worker processes (``verify_all(jobs=N)``, ``attnsym verify --jobs N``) give the same evidence."""

from __future__ import annotations

import io
import json
import pickle

import numpy as np
import pytest
import sympy as sp

from attnsym.claims import CLAIMS, Evidence, RenderedFigure, claim, default_jobs, verify_all
from attnsym.claims._registry import _ExactPickler, _fork_context
from attnsym.claims.report import figure_files, render_report, to_json, to_markdown
from attnsym.cli import main
from attnsym.errors import SpecError

needs_fork = pytest.mark.skipif(_fork_context() is None, reason="worker processes need fork (Linux)")

# claims whose evidence holds SymPy objects kept unevaluated for display (an equation with a matrix,
# an unexpanded parameter count, sums), and one with figures
SHOWCASE = ["sinusoidal-positions", "multi-head", "dynamic-routing", "softmax-jacobian", "weights-not-preset"]


def _exact_roundtrip(obj):
    buffer = io.BytesIO()
    _ExactPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return pickle.loads(buffer.getvalue())


def _sympy_objects(value, out):
    if isinstance(value, sp.Basic | sp.MatrixBase):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _sympy_objects(v, out)
    elif isinstance(value, list | tuple):
        for v in value:
            _sympy_objects(v, out)
    return out


def test_exact_pickling_keeps_unevaluated_expressions():
    d, h, x = sp.symbols("d h x", positive=True)
    i, n = sp.symbols("i n", integer=True, positive=True)
    A = sp.Function("A")
    pe = sp.Symbol("PE")
    exprs = [
        sp.Eq(pe, sp.Matrix([[0, 1], [sp.sin(1), sp.cos(1)]]), evaluate=False),  # plain pickle: False
        sp.Eq(sp.Mul(h, d / h, d, evaluate=False), d**2, evaluate=False),         # plain pickle: d**2 = d**2
        sp.Sum(sp.Abs(sp.Indexed("a", i)) / 2, (i, 1, n)) / n,                     # evaluate=False would add 1*
        sp.Add(x, x, evaluate=False), A(x) * sp.exp(x), sp.Integer(3), sp.Float("0.1", 30), sp.Rational(1, 3),
    ]
    for expr in exprs:
        back = _exact_roundtrip(expr)
        assert sp.srepr(back) == sp.srepr(expr)
        assert sp.latex(back) == sp.latex(expr) and str(back) == str(expr)
    # the reason for the pickler: SymPy's own pickling re-evaluates
    assert pickle.loads(pickle.dumps(exprs[0])) is sp.false
    # rebuilt nodes behave: they compare, hash and compute like the originals
    back = _exact_roundtrip(exprs[1])
    assert back == exprs[1] and hash(back) == hash(exprs[1]) and sp.simplify(back.lhs - back.rhs) == 0


@needs_fork
def test_workers_give_the_same_evidence_as_one_process():
    one = verify_all(ids=SHOWCASE, quick=True, jobs=1)
    two = verify_all(ids=SHOWCASE, quick=True, jobs=2)
    assert [ev.claim for ev in two] == SHOWCASE
    assert to_json(two, seed=0, quick=True) == to_json(one, seed=0, quick=True)
    assert to_markdown(two, seed=0, quick=True) == to_markdown(one, seed=0, quick=True)
    for a, b in zip(one, two, strict=True):
        assert a.verdict == b.verdict and a.details.keys() == b.details.keys()
        originals = _sympy_objects([a.details, a.equations], [])
        copies = _sympy_objects([b.details, b.equations], [])
        assert originals, a.claim
        assert [sp.srepr(o) for o in copies] == [sp.srepr(o) for o in originals]


@needs_fork
def test_worker_figures_come_back_rendered():
    one = verify_all(ids=["multi-head", "gelu"], quick=True, jobs=1)
    two = verify_all(ids=["multi-head", "gelu"], quick=True, jobs=2, formats=("png", "svg"))
    assert all(isinstance(f, RenderedFigure) for ev in two for f in ev.figures.values())
    assert render_report(two, seed=0, quick=True).files == render_report(one, seed=0, quick=True).files
    names = verify_all(ids=["multi-head", "gelu"], quick=True, jobs=2)  # no formats: names only, as the JSON lists
    assert [sorted(ev.figures) for ev in names] == [sorted(ev.figures) for ev in one]
    with pytest.raises(SpecError, match="rendered in a worker process"):
        names[0].figures[next(iter(names[0].figures))]()
    with pytest.raises(SpecError, match="not svg"):
        figure_files(RenderedFigure("c", "f", {"png": b"x"}), ["png", "svg"])
    assert figure_files(RenderedFigure("c", "f", {"png": b"x"}), ["png"]) == {"png": b"x"}


@needs_fork
def test_workers_resample_their_figures_for_the_page():
    from attnsym.explorer.collect import FIGURE_DPI, claims_section
    from attnsym.plots.files import resampled_png

    evs = verify_all(ids=["multi-head", "gelu"], quick=True, jobs=2, formats=("png",), previews=(FIGURE_DPI, 30))
    figures = [f for ev in evs for f in ev.figures.values()]
    assert figures and all(set(f.previews) == {FIGURE_DPI, 30} for f in figures)
    for f in figures:  # the same pixels as resampling the report's PNG afterwards, in this process
        assert f.previews[30] == resampled_png(f.files["png"], 30)
    plain = verify_all(ids=["multi-head", "gelu"], quick=True, jobs=2, formats=("png",))
    assert all(not f.previews for ev in plain for f in ev.figures.values())
    assert claims_section(evs) == claims_section(plain)  # the page takes the preview, or resamples: same bytes
    with pytest.raises(SpecError, match="previews"):
        verify_all(ids=["gelu"], quick=True, jobs=2, formats=("png",), previews=(0,))


@pytest.fixture
def user_claims():
    ids = ["user-holds", "user-raises"]

    @claim(ids[0], "A user claim.")
    def _holds(ctx):
        return Evidence(ids[0], "A user claim.", "holds", method="arithmetic", summary=f"seed {ctx.seed}",
                        details={"value": sp.Mul(2, sp.Symbol("x"), evaluate=False)})

    @claim(ids[1], "A user claim whose check raises.")
    def _raises(ctx):
        raise SpecError("this check raises on purpose")

    yield ids
    for cid in ids:
        CLAIMS.pop(cid, None)


@needs_fork
def test_workers_run_user_claims_and_pass_their_errors_on(user_claims):
    evs = verify_all(ids=[user_claims[0], "softmax-jacobian"], seed=7, quick=True, jobs=2)
    assert evs[0].summary == "seed 7" and sp.srepr(evs[0].details["value"]) == sp.srepr(sp.Mul(2, sp.Symbol("x"),
                                                                                                  evaluate=False))
    with pytest.raises(SpecError, match="on purpose"):
        verify_all(ids=user_claims, quick=True, jobs=2)


def test_jobs_must_be_positive():
    with pytest.raises(SpecError, match="jobs"):
        verify_all(ids=["gelu"], quick=True, jobs=0)
    assert default_jobs() >= 1


@needs_fork
def test_cli_jobs_and_timings(capsys):
    ids = ["softmax-jacobian", "gelu", "dispersion"]
    assert main(["verify", "--quick", "--json", "-j", "1", *ids]) == 0
    one = capsys.readouterr().out
    assert main(["verify", "--quick", "--json", "--jobs", "3", *ids]) == 0
    assert capsys.readouterr().out == one
    assert "seconds" not in one  # the JSON is the same on every run unless timings are asked for
    assert main(["verify", "--quick", "--json", "--timings", "gelu"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["claims"][0]["seconds"] > 0
    with pytest.raises(SystemExit) as exit_info:
        main(["verify", "--jobs", "0", "gelu"])
    assert exit_info.value.code == 2
    assert "jobs must be a positive integer (got 0)" in capsys.readouterr().err


@needs_fork
def test_a_forked_worker_can_use_the_threaded_fast_path(monkeypatch):
    """numeric's fast path keeps a thread pool (numeric._pool); a worker forked after the parent used it must not wait on it."""
    from attnsym.numeric import _pool, attention

    monkeypatch.setattr(_pool, "THREADS", 2)  # the pool even on a one-CPU machine
    rng = np.random.default_rng(0)
    X, W_Q, W_K, W_V = rng.standard_normal((600, 8)), *(rng.standard_normal((8, 8)) for _ in range(3))
    expected = np.asarray(attention(X, W_Q, W_K, W_V, block_size=256, return_weights=False))
    assert "pool" in _pool._STATE  # the parent's pool exists, with its threads
    with _fork_context().Pool(1) as pool:
        result = pool.apply_async(_blockwise, (X, W_Q, W_K, W_V)).get(timeout=120)
    np.testing.assert_array_equal(result, expected)


def _blockwise(X, W_Q, W_K, W_V):
    from attnsym.numeric import attention

    return np.asarray(attention(X, W_Q, W_K, W_V, block_size=256, return_weights=False))


def test_dispatch_order_hands_out_every_claim_once_longest_first():
    from attnsym.claims import ordered_ids
    from attnsym.claims._schedule import COST_HINTS, SHARED, dispatch_order

    ids = ordered_ids()
    assert set(COST_HINTS) == set(ids)  # every built-in claim has a hint (a new claim needs one)
    for quick in (True, False):
        tasks = dispatch_order(ids, quick=quick)
        assert sorted(i for task in tasks for i in task) == list(range(len(ids)))
        costs = [sum(COST_HINTS[ids[i]][0 if quick else 1] for i in task) for task in tasks]
        assert costs == sorted(costs, reverse=True)
        for group in SHARED:
            assert [[ids[i] for i in task] for task in tasks if ids[task[0]] in group] == [list(group)]
    # a claim without a hint goes first; ties and repeated ids keep their order
    ids = ["parallelism", "kv-cache", "user-claim", "global-path-length", "kv-cache"]
    assert [[ids[i] for i in t] for t in dispatch_order(ids, quick=True)] == [
        ["user-claim"], ["global-path-length", "parallelism"], ["kv-cache"], ["kv-cache"]]


@needs_fork
def test_workers_return_grouped_and_reordered_claims_in_the_order_asked_for():
    ids = ["parallelism", "kv-cache", "global-path-length", "dispersion"]
    one = verify_all(ids=ids, quick=True, jobs=1)
    two = verify_all(ids=ids, quick=True, jobs=2)
    assert [ev.claim for ev in two] == ids
    assert to_json(two, seed=0, quick=True) == to_json(one, seed=0, quick=True)


@needs_fork
def test_json_rendered_in_the_workers_is_the_json_of_the_evidence():
    from dataclasses import replace

    ids = ["sinusoidal-positions", "multi-head", "gelu"]
    one = verify_all(ids=ids, quick=True, jobs=1)
    two = verify_all(ids=ids, quick=True, jobs=2, render_json=True)
    assert all(ev.rendered is None for ev in one) and all(ev.rendered is not None for ev in two)
    assert to_json(two, seed=0, quick=True, timing=False) == to_json(one, seed=0, quick=True)
    changed = replace(two[0], details={"only": 1})  # a changed evidence is rendered anew, never from the stale copy
    assert changed.rendered is None and '"only": 1' in to_json([changed], seed=0, quick=True)


@pytest.mark.parametrize("jobs", [1, 2])
def test_checking_leaves_the_garbage_collector_as_it_was(jobs):
    """verify_all tunes the collector while it checks (a frozen heap, a larger first threshold) and restores it."""
    import gc

    from attnsym._gc import GENERATION0 as GC_GENERATION0

    before = gc.get_threshold()
    seen = []

    def record(ev):
        seen.append((ev.claim, gc.get_freeze_count() > 0, gc.get_threshold()[0]))

    evs = verify_all(ids=["softmax-jacobian", "dispersion"], quick=True, jobs=jobs, on_result=record)
    assert [ev.verdict for ev in evs] == ["holds", "holds"]
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    if jobs == 1:  # in this process, while checking: tuned
        assert all(frozen and threshold == GC_GENERATION0 for _, frozen, threshold in seen)


@needs_fork
def test_workers_check_with_the_tuned_collector():
    import gc

    from attnsym._gc import GENERATION0 as GC_GENERATION0

    @claim("test-gc-threshold", "the worker's first GC threshold", replace_existing=True)
    def _check(ctx):
        return Evidence("test-gc-threshold", "", "holds", method="probe", summary=str(gc.get_threshold()[0]),
                        conditions=(), equations=(), details={"threshold": gc.get_threshold()[0]})

    try:
        ev, _ = verify_all(ids=["test-gc-threshold", "dispersion"], quick=True, jobs=2)  # two claims: two workers
    finally:
        CLAIMS.pop("test-gc-threshold", None)
    assert ev.details["threshold"] == GC_GENERATION0
