"""The measured side of :mod:`attnsym.symbolic.invariances`: the key bias and inputs whose tokens are all equal.

The symbolic module proves, for small specs, that ``∂A/∂b_K = 0`` and that ``∂L/∂W_Q = ∂L/∂W_K = 0``
when every token is the same vector. The two experiments here measure the same facts on the
numeric forward and backward passes (float64), for any size, and are what both the claims
(``key-bias-invariance``, ``rank-one-input``) and their figures (:mod:`attnsym.plots.limits`)
use:

* :func:`bias_loss_slices` — the loss ``L = ⟨G, Y⟩`` along a line through each bias,
  ``L(b + t u) − L(b)``, with the backward pass's and central differences' gradients;
* :func:`gradients_near_equal_tokens` — the weight gradients at ``X = 1 xᵀ + ε E`` as the input
  moves away from equal tokens (``ε = 0``).

The weights, biases, ``X`` and ``G`` are drawn by :func:`attnsym.numeric.random_inputs`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._checks import instance_of, non_negative_int
from ..errors import SpecError
from ..spec import AttentionSpec
from .backward import attention_vjp
from .forward import attention
from .sampling import random_inputs

__all__ = ["BiasSlices", "EqualTokenGradients", "bias_loss_slices", "gradients_near_equal_tokens"]

#: offsets ``t`` of :func:`bias_loss_slices` by default
DEFAULT_OFFSETS = tuple(np.linspace(-3.0, 3.0, 25))
#: distances ``ε`` from equal tokens of :func:`gradients_near_equal_tokens` by default (0 first)
DEFAULT_EPSILONS = (0.0, *np.logspace(-4, 0, 17))


@dataclass(frozen=True)
class BiasSlices:
    """The loss along a line through each bias, and its gradient measured two ways.

    Attributes
    ----------
    offsets : (m,) ndarray
        The offsets ``t`` along the unit direction ``u``.
    loss_change : dict of str to (m,) ndarray
        ``L(b + t u) − L(b)`` for each bias name (``"b_Q"``, ``"b_K"``, ``"b_V"``, ...).
    backward : dict of str to float
        ``max |∂L/∂b|`` from :func:`attnsym.numeric.attention_vjp`.
    central : dict of str to float
        ``max |(L(b + h e_i) − L(b − h e_i)) / 2h|`` over the coordinates ``i``.
    step : float
        The step ``h`` of the central differences.
    """

    offsets: np.ndarray
    loss_change: dict[str, np.ndarray]
    backward: dict[str, float]
    central: dict[str, float]
    step: float


@dataclass(frozen=True)
class EqualTokenGradients:
    """Weight gradients at ``X = 1 xᵀ + ε E`` for growing ``ε``.

    Attributes
    ----------
    epsilons : (m,) ndarray
        The distances ``ε`` from equal tokens (``ε = 0``: every token is ``x``).
    max_gradient : dict of str to (m,) ndarray
        ``max |∂L/∂W|`` at each ``ε``, for each weight (``"W_Q"``, ``"W_K"``, ``"W_V"``, ``"W_O"``).
    """

    epsilons: np.ndarray
    max_gradient: dict[str, np.ndarray]


def _spec_with_bias(spec: AttentionSpec) -> AttentionSpec:
    instance_of("spec", spec, AttentionSpec)
    if not spec.bias:
        raise SpecError(f"spec must have bias=True to move its biases (got {spec.describe()})")
    return spec


def _as_grid(name: str, values: Sequence[float]) -> np.ndarray:
    grid = np.asarray(values, dtype=float)
    if grid.ndim != 1 or grid.size == 0 or not np.all(np.isfinite(grid)):
        raise SpecError(f"{name} must be a non-empty sequence of finite numbers (got {values!r})")
    return grid


def bias_loss_slices(spec: AttentionSpec, seed: int = 0, *, offsets: Sequence[float] = DEFAULT_OFFSETS,
                     step: float = 1e-6) -> BiasSlices:
    """``L(b + t u) − L(b)`` for each bias ``b`` of ``spec`` along one random unit direction ``u``.

    ``L = ⟨G, Y⟩`` with ``X``, the parameters and ``G`` from :func:`random_inputs` (``seed``);
    ``u`` is drawn from its own stream of the same seed. Softmax is invariant to a constant
    added to a score row, and a key bias adds ``q_i · b_K`` to every score of row ``i``: the
    ``b_K`` slice is flat (up to rounding) and its gradient zero; the others are not.

    Parameters
    ----------
    spec : AttentionSpec
        With ``bias=True``.
    seed : int, default 0
    offsets : sequence of float, default 25 points in [−3, 3] (steps of 1/4)
    step : float, default 1e-6
        Step of the central differences.

    Returns
    -------
    BiasSlices

    Examples
    --------
    >>> s = bias_loss_slices(AttentionSpec(n=4, d_model=4, heads=2, bias=True), offsets=[-1.0, 1.0])
    >>> sorted(s.loss_change)
    ['b_K', 'b_O', 'b_Q', 'b_V']
    >>> float(np.max(np.abs(s.loss_change["b_K"]))) < 1e-12, float(np.max(np.abs(s.loss_change["b_Q"]))) > 1e-3
    (True, True)
    >>> s.backward["b_K"] < 1e-12 < s.backward["b_Q"]
    True
    """
    spec = _spec_with_bias(spec)
    seed = non_negative_int("seed", seed)
    t = _as_grid("offsets", offsets)
    if not (isinstance(step, float | int) and not isinstance(step, bool) and 0 < step < 1):
        raise SpecError(f"step must be a number in (0, 1) (got {step!r})")
    values: dict[str, Any] = random_inputs(spec, seed)  # arrays, passed on as keyword arguments
    G = values.pop("G")  # (n, d_out)
    biases = [name for name in spec.parameter_names if name.startswith("b_")]
    direction = np.random.default_rng([seed, 3]).standard_normal(values[biases[0]].shape)  # (1, d)
    direction /= np.linalg.norm(direction)

    def loss(name: str, value: np.ndarray) -> float:
        return float(np.sum(G * attention(**{**values, name: value}, spec=spec, return_weights=False)))

    grads = attention_vjp(G=G, **values, spec=spec)
    base = loss(biases[0], values[biases[0]])
    loss_change, central = {}, {}
    for name in biases:
        loss_change[name] = np.array([loss(name, values[name] + s * direction) - base for s in t])  # (m,)
        e = np.zeros_like(values[name])
        diffs = []
        for i in range(e.size):
            e.flat[:] = 0.0
            e.flat[i] = step
            diffs.append((loss(name, values[name] + e) - loss(name, values[name] - e)) / (2 * step))
        central[name] = float(np.max(np.abs(diffs)))
    backward = {name: float(np.max(np.abs(grads[name]))) for name in biases}
    return BiasSlices(offsets=t, loss_change=loss_change, backward=backward, central=central, step=float(step))


def gradients_near_equal_tokens(spec: AttentionSpec, seed: int = 0, *,
                                epsilons: Sequence[float] = DEFAULT_EPSILONS) -> EqualTokenGradients:
    """``max |∂L/∂W|`` for each weight at ``X = 1 xᵀ + ε E``, ``ε`` from 0 (all tokens equal) upwards.

    ``x`` is the first row of the ``X`` that :func:`random_inputs` draws for ``seed`` and ``E``
    the whole of it; weights, biases and ``G`` come from the same call. At ``ε = 0`` all
    scores of a row are equal, the routing is uniform and ``∂L/∂W_Q = ∂L/∂W_K = 0``; they grow
    linearly in ``ε``, while ``∂L/∂W_V`` does not vanish.

    Parameters
    ----------
    spec : AttentionSpec
        Without positions (sinusoidal or rotary positions make equal tokens distinct).
    seed : int, default 0
    epsilons : sequence of float, default 0 and 17 points from 1e-4 to 1

    Returns
    -------
    EqualTokenGradients

    Examples
    --------
    >>> g = gradients_near_equal_tokens(AttentionSpec(n=4, d_model=4, heads=2), epsilons=[0.0, 1e-3, 1.0])
    >>> [bool(v < 1e-12) for v in g.max_gradient["W_Q"]]
    [True, False, False]
    >>> bool(g.max_gradient["W_V"][0] > 1e-3)
    True
    """
    instance_of("spec", spec, AttentionSpec)
    if spec.positions is not None:
        raise SpecError(f"spec must have no positions: with positions={spec.positions!r} equal tokens are not equal "
                        "after the encoding")
    seed = non_negative_int("seed", seed)
    eps = _as_grid("epsilons", epsilons)
    if np.any(eps < 0):
        raise SpecError(f"epsilons must be >= 0 (got {epsilons!r})")
    values: dict[str, Any] = random_inputs(spec, seed)  # arrays, passed on as keyword arguments
    G, E = values.pop("G"), values.pop("X")  # (n, d_out), (n, d_model)
    weights = [name for name in spec.parameter_names if name.startswith("W_")]
    out: dict[str, list[float]] = {name: [] for name in weights}
    for e in eps:
        X = np.broadcast_to(E[0], E.shape) + e * E  # (n, d_model): 1 xᵀ + ε E
        grads = attention_vjp(X, G=G, **values, spec=spec)
        for name in weights:
            out[name].append(float(np.max(np.abs(grads[name]))))
    return EqualTokenGradients(epsilons=eps, max_gradient={k: np.array(v) for k, v in out.items()})
