"""Are two variant specs the same layer? Certificates for grouped-query attention and the two RoPE pairings.

* :func:`gqa_study` — grouped-query attention against multi-head attention whose K/V weights repeat
  each group's block under a reading rule (``"repeat"``: query head ``h`` reads ``h // (H/H_kv)``,
  Hugging Face ``repeat_kv``; ``"tile"``: ``h mod H_kv``): :func:`attnsym.symbolic.attention` of both
  specs (H = 4, H_kv = 2) with the multi-head symbols replaced by the grouped ones, and
  :func:`attnsym.numeric.attention` of both with RoPE and a causal mask (H = 8, H_kv = 2).
* :func:`rope_pairing_study` — half-split RoPE of ``q`` with its coordinates reordered against the
  reordered interleaved RoPE of ``q``: exactly (:func:`attnsym.symbolic.apply_rope`, symbolic ``q``
  and position ``m``; d_k = 4, and 6 with partial rotary in full mode), the scores of integer q, k
  under both pairings, and in float64 (:func:`attnsym.numeric.apply_rope` and the whole layer with
  permuted ``W_Q``, ``W_K`` columns, n = 64, d_k = 8).

The claims ``gqa-equals-repeated-kv`` and ``rope-pairing-permutation`` judge them;
:func:`attnsym.plots.literature_structure.kv_groups_figure` and
:func:`~attnsym.plots.literature_structure.rope_pairing_figure` draw them.

>>> kv_reads(4, 2, "repeat"), kv_reads(4, 2, "tile")
([0, 0, 1, 1], [0, 1, 0, 1])
>>> half_split_order(6, 4)
[0, 2, 1, 3, 4, 5]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import sympy as sp

from ..numeric import attention as numeric_attention
from ..numeric import random_inputs
from ..numeric import scores as numeric_scores
from ..numeric.positions import apply_rope as numeric_rope
from ..spec import AttentionSpec
from ..symbolic.matrices import attention as symbolic_attention
from ..symbolic.positions import apply_rope as symbolic_rope
from ._streams import Streams

__all__ = ["GQAResult", "PairingCase", "RopePairingResult", "gqa_study", "half_split_order", "kv_reads",
           "rope_pairing_study"]


def kv_reads(heads: int, kv_heads: int, grouping: str) -> list[int]:
    """The key/value head each query head reads: ``h // (H/H_kv)`` (repeat, Hugging Face ``repeat_kv``) or ``h mod H_kv``."""
    group = heads // kv_heads
    return [h // group if grouping == "repeat" else h % kv_heads for h in range(heads)]


def _repeat_columns(W: np.ndarray, reads: Sequence[int], width: int) -> np.ndarray:
    """The multi-head weights: block ``h`` is block ``reads[h]`` of the grouped ``W``."""
    return np.hstack([W[:, r * width:(r + 1) * width] for r in reads])


@dataclass(frozen=True)
class GQAResult:
    """:func:`gqa_study`'s answer: the exact heads' reads and whether scores, values and ``Y`` are the same
    expressions; the float64 heads' reads (``assignment``: query head × key/value head), the largest weight gap per
    head and the output gap."""

    heads: int
    reads: tuple[int, ...]
    same_scores: bool
    same_values: bool
    same_output: bool
    numeric_heads: int
    numeric_kv_heads: int
    assignment: np.ndarray
    head_gaps: tuple[float, ...]
    output_gap: float


def gqa_study(seed: int, *, grouping: str = "repeat") -> GQAResult:
    """Grouped-query attention against repeated-K/V multi-head attention under the reading rule ``grouping``."""
    H, H_kv = 4, 2
    reads = kv_reads(H, H_kv, grouping)
    sym_g = symbolic_attention(AttentionSpec(n=2, d_model=2, heads=H, kv_heads=H_kv, d_k=1, d_v=1))
    sym_m = symbolic_attention(AttentionSpec(n=2, d_model=2, heads=H, d_k=1, d_v=1))
    swap = {}
    for name in ("W_K", "W_V"):
        Wm, Wg = getattr(sym_m, name), getattr(sym_g, name)
        swap.update({Wm[i, h]: Wg[i, reads[h]] for i in range(Wm.shape[0]) for h in range(H)})
    same = lambda pairs: all((m.xreplace(swap) - g).applyfunc(sp.expand).is_zero_matrix for m, g in pairs)
    Hn, Hn_kv, d_k = 8, 2, 4
    reads_n = kv_reads(Hn, Hn_kv, grouping)
    spec_g = AttentionSpec(n=16, d_model=32, heads=Hn, kv_heads=Hn_kv, d_k=d_k, causal=True, positions="rope")
    v = random_inputs(spec_g, seed=seed)
    Y_g, A_g = numeric_attention(v["X"], v["W_Q"], v["W_K"], v["W_V"], v["W_O"], spec=spec_g)
    Y_m, A_m = numeric_attention(v["X"], v["W_Q"], _repeat_columns(v["W_K"], reads_n, d_k),
                                 _repeat_columns(v["W_V"], reads_n, d_k), v["W_O"], spec=spec_g.replace(kv_heads=Hn))
    assignment = np.zeros((Hn, Hn_kv))
    assignment[np.arange(Hn), reads_n] = 1.0
    return GQAResult(H, tuple(reads), same(zip(sym_m.S_heads, sym_g.S_heads, strict=True)),
                     same(zip(sym_m.V_heads, sym_g.V_heads, strict=True)), sym_m.Y.xreplace(swap) == sym_g.Y,
                     Hn, Hn_kv, assignment,
                     tuple(float(np.max(np.abs(np.asarray(A_g)[h] - np.asarray(A_m)[h]))) for h in range(Hn)),
                     float(np.max(np.abs(np.asarray(Y_g) - np.asarray(Y_m)))))


def half_split_order(d_k: int, rotary: int) -> list[int]:
    """Half-split coordinate ``c`` holds interleaved coordinate ``order[c]``: ``(2i, 2i+1) → (i, i + r/2)``."""
    return [*range(0, rotary, 2), *range(1, rotary, 2), *range(rotary, d_k)]


@dataclass(frozen=True)
class PairingCase:
    """One exact case: width ``d_k``, ``rotary`` rotated dimensions, the order tried, and whether the identity holds."""

    d_k: int
    rotary: int
    order: tuple[int, ...]
    identity: bool


@dataclass(frozen=True)
class RopePairingResult:
    """:func:`rope_pairing_study`'s answer: the exact cases; the half-split minus interleaved score of integer q, k at
    positions 0, 1 (same weights); in float64 (``n`` tokens, width ``d_k``) the RoPE and layer gaps under the
    permutation ``P``, the largest weight difference with the same weights, and the score difference (n × n)."""

    cases: tuple[PairingCase, ...]
    score_difference: sp.Expr
    n: int
    d_k: int
    rope_gap: float
    layer_gap: float
    same_weights_gap: float
    P: np.ndarray
    difference: np.ndarray


def _exact_cases(quick: bool, claimed_order: Sequence[int] | None) -> tuple[PairingCase, ...]:
    m = sp.Symbol("m", integer=True)
    rows = []
    for d_k, pct in ((4, 1.0),) if quick else ((4, 1.0), (6, 2 / 3)):
        spec_h = AttentionSpec(n=2, d_model=d_k, positions="rope", rotary_pct=pct)
        order = list(claimed_order) if claimed_order is not None else half_split_order(d_k, spec_h.rotary_dims)
        q = sp.Matrix([list(sp.symbols(f"q_1:{d_k + 1}", real=True))])
        lhs = symbolic_rope(q[:, order], spec_h, [m])
        rhs = symbolic_rope(q, spec_h.replace(rope_pairing="interleaved"), [m])[:, order]
        rows.append(PairingCase(d_k, spec_h.rotary_dims, tuple(order), bool((lhs - rhs).applyfunc(sp.expand).is_zero_matrix)))
    return tuple(rows)


def rope_pairing_study(rng: Streams, seed: int, *, quick: bool,
                       claimed_order: Sequence[int] | None = None) -> RopePairingResult:
    """The two RoPE pairings under ``claimed_order`` (default the half-split order). ``rng()`` draws the float64 q."""
    spec_h = AttentionSpec(n=2, d_model=4, positions="rope")
    spec_i = spec_h.replace(rope_pairing="interleaved")
    qi, ki = sp.Matrix([[1, 2, -1, 3]]), sp.Matrix([[2, -1, 1, 1]])
    score = lambda spec: (symbolic_rope(qi, spec, [0]) * symbolic_rope(ki, spec, [1]).T)[0, 0]
    d_k, n = 8, 64
    spec_hn = AttentionSpec(n=n, d_model=16, d_k=d_k, positions="rope")
    spec_in = spec_hn.replace(rope_pairing="interleaved")
    order = list(claimed_order) if claimed_order is not None and len(claimed_order) == d_k else (
        half_split_order(d_k, d_k) if claimed_order is None else list(range(d_k)))
    Q = rng().standard_normal((n, d_k))
    rope_gap = float(np.max(np.abs(np.asarray(numeric_rope(Q[:, order], spec_hn))
                                   - np.asarray(numeric_rope(Q, spec_in))[:, order])))
    v = random_inputs(spec_hn, seed=seed)
    Y_i, A_i = numeric_attention(v["X"], v["W_Q"], v["W_K"], v["W_V"], spec=spec_in)
    Y_p, _ = numeric_attention(v["X"], v["W_Q"][:, order], v["W_K"][:, order], v["W_V"], spec=spec_hn)
    _, A_h = numeric_attention(v["X"], v["W_Q"], v["W_K"], v["W_V"], spec=spec_hn)
    Qh, Kh = v["X"] @ v["W_Q"], v["X"] @ v["W_K"]
    roped = lambda spec: np.asarray(numeric_scores(numeric_rope(Qh, spec), numeric_rope(Kh, spec), 1 / math.sqrt(d_k)))
    P = np.zeros((d_k, d_k))
    P[np.arange(d_k), order] = 1.0
    return RopePairingResult(_exact_cases(quick, claimed_order), score(spec_h) - score(spec_i), n, d_k, rope_gap,
                             float(np.max(np.abs(np.asarray(Y_i) - np.asarray(Y_p)))),
                             float(np.max(np.abs(np.asarray(A_h) - np.asarray(A_i)))), P, roped(spec_hn) - roped(spec_in))
