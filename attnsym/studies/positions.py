"""What do relative positions keep? RoPE's relative scores, shift invariance and long-range decay, exactly and in float64.

* :func:`scores_at` — one head's scaled scores of tokens placed at positions ``offset … offset + n − 1``
  (RoPE, ALiBi, sinusoids added to X, or none);
* :func:`relative_study` — :func:`attnsym.symbolic.rope_proofs.prove_rope_relative` for several RoPE
  specs (or :func:`~attnsym.symbolic.rope_proofs.prove_shift_invariance` for sinusoids), the float64
  scores moved by a common offset, and every RoPE score against ``g(q_m, k_n, n − m)``;
* :func:`shift_study` — the exact proof for a symbolic offset, the causal weights and routing graphs
  at offsets 0, 1, 5, 250, and the routing of permuted tokens;
* :func:`decay_study` — RoFormer's relative upper bound against distance
  (:func:`attnsym.numeric.position_experiments.rope_decay_bound`), the Abel-summation inequality for
  random q, k, and what the scores themselves do.

The claims ``rope-relative``, ``rope-shift-invariance`` and ``rope-long-range-decay`` judge them.

>>> spec = AttentionSpec(n=3, d_model=2, positions="rope")
>>> X = np.eye(3, 2)
>>> bool(np.allclose(scores_at(X, np.eye(2), np.eye(2), spec, 7), scores_at(X, np.eye(2), np.eye(2), spec, 0)))
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..graphs import routing_graph
from ..numeric import alibi_slopes, apply_rope, scores, sinusoidal_positions, softmax
from ..numeric.position_experiments import rope_abel_bound, rope_decay_bound, rope_relative_scores
from ..spec import AttentionSpec
from ..symbolic.rope_proofs import RelativeProof, prove_rope_relative, prove_shift_invariance
from ._streams import Streams

__all__ = ["DECAY_D", "FAR_OFFSET", "DecayResult", "RelativeResult", "ShiftResult", "decay_study", "relative_study",
           "scores_at", "shift_study"]

#: RoFormer's setting for the decay (d = 128 rotated coordinates, the default base)
DECAY_D = 128
#: the offset the shift figure shows
FAR_OFFSET = 250


def scores_at(X: np.ndarray, W_Q: np.ndarray, W_K: np.ndarray, spec: AttentionSpec, offset: int) -> np.ndarray:
    """One head's scaled scores (n × n) of tokens ``X`` placed at positions ``offset … offset + n − 1``."""
    if spec.positions == "sinusoidal":
        n, d = X.shape
        pe = sinusoidal_positions(n + offset, d, int(spec.position_base))[offset:]
        return np.asarray(scores((X + pe) @ W_Q, (X + pe) @ W_K)) * spec.scale_float
    Q, K = X @ W_Q, X @ W_K
    p = np.arange(X.shape[0]) + offset
    if spec.positions == "rope":
        Q, K = apply_rope(Q, spec, p), apply_rope(K, spec, p)
    S = np.asarray(scores(Q, K, spec.scale_float))
    if spec.positions == "alibi":
        S = S - alibi_slopes(spec.heads)[0] * np.abs(p[:, None] - p[None, :])
    return S


# ----------------------------------------------------------------------------- rope-relative

@dataclass(frozen=True)
class RelativeResult:
    """What :func:`relative_study` found: per spec (its description) whether the exact proof holds, the main proof
    (d_k = 2), ``n`` float64 tokens of width ``d``, the largest score change per offset, the largest score magnitude,
    and (RoPE only) the largest gap from ``g(q_m, k_n, n − m)``."""

    positions: str
    proofs: dict[str, bool]
    main: RelativeProof
    n: int
    d: int
    shifts: dict[int, float]
    largest_score: float
    g_error: float | None


def relative_study(rng: Streams, *, quick: bool, positions: str) -> RelativeResult:
    """RoPE's (or sinusoids') dependence on ``m − n``. ``rng(positions)`` draws the float64 tokens and weights."""
    if positions == "rope":
        variants: list[dict[str, Any]] = [dict(d_model=2), dict(d_model=4), dict(d_model=4, rope_pairing="interleaved")]
        if not quick:
            variants += [dict(d_model=8, rotary_pct=0.5), dict(d_model=6, position_base=100)]
        specs = [AttentionSpec(n=2, positions="rope", **kw) for kw in variants]
        proofs = {s.describe(): prove_rope_relative(s).holds for s in specs}
        main = prove_rope_relative(AttentionSpec(n=2, d_model=2, positions="rope"))
    else:
        main = prove_shift_invariance(AttentionSpec(n=2, d_model=2, positions="sinusoidal"))
        proofs = {main.spec.describe(): main.holds}
    generator = rng(positions)
    n, d = (16, 8) if quick else (64, 32)
    spec = AttentionSpec(n=n, d_model=d, positions=positions)
    X = generator.standard_normal((n, d))
    W_Q, W_K = generator.standard_normal((2, d, d)) / np.sqrt(d)
    S0 = scores_at(X, W_Q, W_K, spec, 0)
    shifts = {t: float(np.max(np.abs(scores_at(X, W_Q, W_K, spec, t) - S0))) for t in (1, 17, 1000)}
    g_error = None
    if positions == "rope":  # every score equals g(q_m, k_n, n − m)
        Q, K = X @ W_Q, X @ W_K
        g = np.array([[rope_relative_scores(Q[i], K[j], spec, [j - i])[0] for j in range(n)] for i in range(n)])
        g_error = float(np.max(np.abs(g * spec.scale_float - S0)))
    return RelativeResult(positions, proofs, main, n, d, shifts, float(np.max(np.abs(S0))), g_error)


# ----------------------------------------------------------------------------- rope-shift-invariance

@dataclass(frozen=True)
class ShiftResult:
    """What :func:`shift_study` found: the exact proof (n = 3, symbolic offset), the other schemes' proofs (full mode),
    the largest change of the float64 causal weights over offsets 1, 5, 250, whether the routing graphs are identical,
    the routing change of permuted tokens, and the figure's panels (weights at offsets 0 and 250, per scheme)."""

    positions: str | None
    proof: RelativeProof
    others: dict[str, bool]
    max_change: float
    graphs_same: bool
    permutation_gap: float
    panels: dict[str, np.ndarray]


def shift_study(rng: Streams, *, quick: bool, positions: str | None) -> ShiftResult:
    """One offset added to every position. ``rng(str(positions))`` draws the float64 tokens, weights and permutation."""
    generator = rng(str(positions))
    proof = prove_shift_invariance(AttentionSpec(n=3, d_model=2 if quick else 4, positions=positions, causal=False))
    others = {} if quick else {str(kind): prove_shift_invariance(AttentionSpec(n=3, d_model=2, positions=kind)).holds
                               for kind in ("rope", "alibi", None, "sinusoidal") if kind != positions}
    n, d = (12, 8) if quick else (48, 16)
    spec = AttentionSpec(n=n, d_model=d, positions=positions)
    X = generator.standard_normal((n, d))
    W_Q, W_K = generator.standard_normal((2, d, d)) / np.sqrt(d)
    allowed = np.tril(np.ones((n, n), dtype=bool))

    def weights(s: AttentionSpec, t: int, tokens: np.ndarray = X, mask: np.ndarray | None = allowed) -> np.ndarray:
        return np.asarray(softmax(scores_at(tokens, W_Q, W_K, s, t), allowed=mask))

    A0 = weights(spec, 0)
    graphs_same, max_change = True, 0.0
    for t in (1, 5, FAR_OFFSET):
        At = weights(spec, t)
        max_change = max(max_change, float(np.max(np.abs(At - A0))))
        G0, Gt = routing_graph(A0), routing_graph(At)
        graphs_same = graphs_same and set(G0.edges) == set(Gt.edges) and all(
            abs(G0.edges[e]["weight"] - Gt.edges[e]["weight"]) <= 1e-9 for e in G0.edges)
    # the permutation part of the symmetry is gone: permuted tokens at the same positions route differently
    perm = generator.permutation(n)
    A_perm, A_full = weights(spec, 0, X[perm], None), weights(spec, 0, X, None)
    panels = {f"{kind}: positions {t} … {t + n - 1}": weights(spec.replace(positions=kind), t)
              for kind in (positions, "sinusoidal" if positions != "sinusoidal" else "rope") for t in (0, FAR_OFFSET)}
    return ShiftResult(positions, proof, others, max_change, graphs_same,
                       float(np.max(np.abs(A_perm - A_full[perm][:, perm]))), panels)


# ----------------------------------------------------------------------------- rope-long-range-decay

@dataclass(frozen=True)
class DecayResult:
    """What :func:`decay_study` found (d = 128, distances 0 … 256): the bound per distance, the largest ``|score|`` over
    the Abel bound for random q, k, the spread of their scores near (distance < 8) and far (≥ 192), and the mean of
    ``q·R(Δθ)q / d`` and the spread (std) of the random scores ``q·R(Δθ)k / √d`` per distance."""

    spec: AttentionSpec
    samples: int
    bound: np.ndarray
    abel_ratio: float
    near_spread: float
    far_spread: float
    same_key: np.ndarray
    spread: np.ndarray

    @property
    def far_fraction(self) -> float:
        """The mean bound over distances 192 … 256 as a fraction of the bound at 0."""
        return float(np.mean(self.bound[192:]) / self.bound[0])

    @property
    def increases(self) -> int:
        """How many of the 256 steps raise the bound."""
        return int(np.sum(np.diff(self.bound) > 1e-12))


def decay_study(rng: Streams, *, quick: bool) -> DecayResult:
    """RoFormer's bound and 400 (4000) random q, k. ``rng()`` draws q, k."""
    spec = AttentionSpec(n=1, d_model=DECAY_D, positions="rope")
    distance = np.arange(257)
    samples = 400 if quick else 4000
    q, k = rng().standard_normal((2, samples, DECAY_D))
    s = rope_relative_scores(q, k, spec, distance)  # (samples, distances)
    return DecayResult(spec, samples, np.asarray(rope_decay_bound(spec, distance)),
                       float(np.max(np.abs(s) / rope_abel_bound(q, k, spec, distance))), float(np.std(s[:, :8])),
                       float(np.std(s[:, 192:])), rope_relative_scores(q, q, spec, distance).mean(axis=0) / DECAY_D,
                       s.std(axis=0) / np.sqrt(DECAY_D))
