"""The saturation study's training run (attnsym.studies.training): its backward, its span reduction, its seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnsym.claims import CheckContext
from attnsym.errors import SpecError
from attnsym.numeric import attention, attention_vjp
from attnsym.spec import AttentionSpec
from attnsym.studies.intervals import t_interval
from attnsym.studies.training import retrieval_batch, retrieval_gradients, train_retrieval

SMALL = {"dims": [48, 64], "steps": 6, "seeds": 2, "learning_rates": (0.05, 0.5), "batch": 4, "keys": 3,
         "width": 2, "evaluate": 5, "checkpoints": 6}


def _loss(X, target, W_Q, W_K, scale, width):
    """The recall loss by the library's forward pass (the value slot read by W_V)."""
    W_V = np.zeros((3 * width, width))
    W_V[width:2 * width] = np.eye(width)
    Y = np.asarray(attention(X, W_Q, W_K, W_V, scale=scale, return_weights=False))
    return float(np.mean((Y[:, -1] - target) ** 2)), Y, W_V


@pytest.mark.parametrize("scale", ["sqrt", "none"])
def test_retrieval_gradients_match_finite_differences_and_attention_vjp(scale):
    rng = np.random.default_rng(4)
    width, d = 2, 5
    X, target = retrieval_batch(rng, (3,), keys=4, width=width, noise=0.1)
    W_Q, W_K = (rng.standard_normal((3 * width, d)) / math.sqrt(3 * width) for _ in range(2))
    c = 1 / math.sqrt(d) if scale == "sqrt" else 1.0
    loss, y, gq, gk = (r[0] for r in retrieval_gradients(X[None], target[None], W_Q[None], W_K[None], c))
    ref_loss, Y, W_V = _loss(X, target, W_Q, W_K, scale, width)
    assert loss == pytest.approx(ref_loss, rel=1e-12) and np.allclose(y, Y[:, -1], rtol=1e-12)
    G = np.zeros_like(Y)
    G[:, -1] = 2 * (Y[:, -1] - target) / (X.shape[0] * width)
    ref = attention_vjp(X, W_Q, W_K, W_V, G, scale=scale)
    assert np.allclose(gq, ref["W_Q"], rtol=1e-10, atol=1e-13) and np.allclose(gk, ref["W_K"], rtol=1e-10, atol=1e-13)
    h = 1e-6
    for W, g, which in ((W_Q, gq, 0), (W_K, gk, 1)):
        for index in [(0, 0), (4, 3), (5, 1)]:
            E = np.zeros_like(W)
            E[index] = h
            args = [W_Q, W_K]
            args[which] = W + E
            up = _loss(X, target, *args, scale, width)[0]
            args[which] = W - E
            down = _loss(X, target, *args, scale, width)[0]
            assert (up - down) / (2 * h) == pytest.approx(g[index], rel=1e-5, abs=1e-9)


def _reference_run(seed: int, *, dims, steps, seeds, learning_rates, batch, keys, width, evaluate, checkpoints,
                   noise=0.1):
    """Full-d SGD by attention_vjp, drawing in train_retrieval's documented order; held-out loss at every step."""
    rng = np.random.default_rng(seed)
    p = 3 * width
    W0 = {d: rng.standard_normal((seeds, 2 * p, d)) / math.sqrt(p) for d in dims}
    X_eval, t_eval = retrieval_batch(rng, (seeds, evaluate), keys, width, noise)
    batches = [retrieval_batch(rng, (seeds, batch), keys, width, noise) for _ in range(steps)]
    curves = {}
    for arm in ("sqrt", "none"):
        out = np.empty((len(dims), len(learning_rates), seeds, steps + 1))
        for j, d in enumerate(dims):
            for r, lr in enumerate(learning_rates):
                for s in range(seeds):
                    W_Q, W_K = W0[d][s, :p].copy(), W0[d][s, p:].copy()
                    for step in range(steps + 1):
                        out[j, r, s, step] = _loss(X_eval[s], t_eval[s], W_Q, W_K, arm, width)[0]
                        if step == steps:
                            break
                        X, target = batches[step][0][s], batches[step][1][s]
                        _, Y, W_V = _loss(X, target, W_Q, W_K, arm, width)
                        G = np.zeros_like(Y)
                        G[:, -1] = 2 * (Y[:, -1] - target) / (batch * width)
                        grads = attention_vjp(X, W_Q, W_K, W_V, G, scale=arm)
                        W_Q, W_K = W_Q - lr * grads["W_Q"], W_K - lr * grads["W_K"]
        curves[arm] = out
    return curves


def test_the_span_reduction_trains_exactly_the_full_layer():
    """Training the coordinates in the span of the initial rows gives the full-d SGD run's losses."""
    run = train_retrieval(np.random.default_rng(7), **SMALL)
    ref = _reference_run(7, **SMALL)
    assert run.steps == tuple(range(SMALL["steps"] + 1))
    for arm in ("sqrt", "none"):
        assert np.allclose(run.curves[arm], ref[arm], rtol=1e-9, atol=1e-12), arm
    assert run.vjp_difference <= 1e-9


def test_the_run_is_seeded_and_reproducible():
    a = train_retrieval(np.random.default_rng(3), **SMALL)
    b = train_retrieval(np.random.default_rng(3), **SMALL)
    c = train_retrieval(np.random.default_rng(4), **SMALL)
    for arm in ("sqrt", "none"):
        assert np.array_equal(a.curves[arm], b.curves[arm])
        assert not np.allclose(a.curves[arm], c.curves[arm])
    from attnsym.claims.builtin.saturation import check_softmax_saturation

    one, two = (check_softmax_saturation(CheckContext(quick=True, seed=5)).details["training run"] for _ in range(2))
    assert one == two


def test_arms_start_from_the_same_weights_and_the_scales_are_the_libraries():
    run = train_retrieval(np.random.default_rng(0), **SMALL)
    # before any update the two arms differ only by the scale: at the same weights, the same batch
    assert run.scales == {"sqrt": tuple(1 / math.sqrt(d) for d in SMALL["dims"]), "none": (1.0,) * len(SMALL["dims"])}
    start = {arm: run.curves[arm][..., 0] for arm in ("sqrt", "none")}
    for arm in start:  # every learning rate of a seed starts at the same loss
        assert np.allclose(start[arm], start[arm][:, :1])


def test_t_interval_against_the_textbook_formula():
    from scipy import stats

    x = np.array([0.3, 0.5, 0.2, 0.9])
    m, lo, hi = t_interval(x)
    ref = stats.t.interval(0.95, df=3, loc=x.mean(), scale=stats.sem(x))
    assert m == pytest.approx(x.mean()) and (lo, hi) == pytest.approx(ref)
    with pytest.raises(SpecError, match="at least 2"):
        t_interval(np.array([1.0]))


@pytest.mark.parametrize(("name", "value"), [("dims", [8]), ("dims", []), ("steps", 0), ("seeds", 1),
                                             ("learning_rates", ()), ("learning_rates", (-1.0,)),
                                             ("batch", True), ("noise", -0.1), ("noise", float("nan"))])
def test_bad_sizes_are_refused_with_their_name(name, value):
    with pytest.raises(SpecError, match=name):
        train_retrieval(np.random.default_rng(0), **(SMALL | {name: value}))


def test_no_scaling_in_the_scaled_arm_makes_the_claim_fail(monkeypatch):
    """The mutation: the library's 1/√d_k resolves to 1 (both arms unscaled); the training clause must fail."""
    from attnsym.claims.builtin.saturation import check_softmax_saturation

    slower = "unscaled learns slower at d = 1024"
    assert check_softmax_saturation(CheckContext(quick=True)).details["facts"][slower] is True
    monkeypatch.setattr(AttentionSpec, "scale_float", property(lambda self: 1.0))
    ev = check_softmax_saturation(CheckContext(quick=True))
    assert ev.verdict == "fails"
    assert ev.details["facts"][slower] is False
    assert slower in ev.summary.split("FAILED: ", 1)[1]  # the summary names what failed


def test_the_training_figure_has_a_clean_layout():
    from attnsym.claims.builtin.saturation import check_softmax_saturation
    from tests.figure_checks import layout_problems

    fig = check_softmax_saturation(CheckContext(quick=True)).figures["training"]()
    assert [ax.get_title() for ax in fig.axes] == ["d = 1024", "d = 1024: loss after the run, every rate"]
    assert layout_problems(fig) == []
