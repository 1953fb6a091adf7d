"""What do sinusoidal positions compute? Their frequencies, bound and shift-as-rotation, exactly and in float64.

:func:`study` returns a :class:`SinusoidalResult`:

* exactly (:func:`attnsym.symbolic.sinusoidal_positions`, 6 positions of width 8): the frequencies
  read off row 1 and their consecutive ratios, whether every entry is the definition's sin / cos, the
  bound; :func:`attnsym.symbolic.prove_sinusoidal_shift` (``PE(p + k) = R_k PE(p)`` per pair, for
  symbolic ``p, k``) and the stacked ``R_k`` of the whole width;
* in float64 (:func:`attnsym.numeric.sinusoidal_positions`, 128 × 32; 512 × 128 in full mode): the
  largest ``|PE|``, the largest error of ``R_k`` mapping row ``p`` to ``p + k`` (k = 1, 7, 50), and the
  numeric twin against the exact matrix; the figure's encodings (64 × 16).

The claim ``sinusoidal-positions`` judges it; :func:`attnsym.plots.positional_encoding_figure` draws
:attr:`SinusoidalResult.figure`.

>>> SYMBOLIC_SIZE
(6, 8)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from ..numeric import sinusoidal_positions as num_pe
from ..numeric import sinusoidal_shift as num_shift
from ..spec import DEFAULT_POSITION_BASE
from ..symbolic import prove_sinusoidal_shift
from ..symbolic import sinusoidal_positions as sym_pe
from ..symbolic import sinusoidal_shift as sym_shift
from ..symbolic.positions import SinusoidalShiftProof

__all__ = ["SHIFTS", "SYMBOLIC_SIZE", "SinusoidalResult", "study"]

#: positions and width of the exact matrix
SYMBOLIC_SIZE = (6, 8)
#: the shifts k whose rotation the float64 part checks
SHIFTS = (1, 7, 50)


@dataclass(frozen=True)
class SinusoidalResult:
    """What :func:`study` found.

    ``PE``: the exact matrix; ``ratios``: ``ω_{i+1}/ω_i`` read off it; ``matches_definition``,
    ``bounded``; ``proof``: the per-pair rotation; ``stacked``: the whole-width ``R_k`` maps PE(p) to
    PE(p + k) for symbolic p, k; float64 (``n × d``): ``largest`` ``|PE|``, ``rotation_error``,
    ``twin_error``; ``figure``: the encodings the figure draws.
    """

    base: int
    PE: sp.Matrix
    ratios: tuple[sp.Expr, ...]
    matches_definition: bool
    bounded: bool
    proof: SinusoidalShiftProof
    stacked: bool
    n: int
    d: int
    largest: float
    rotation_error: float
    twin_error: float
    figure: np.ndarray


def _exact(base: int) -> tuple[sp.Matrix, tuple[sp.Expr, ...], bool, bool]:
    n, d = SYMBOLIC_SIZE
    PE = sym_pe(n, d, base)
    # frequencies read off the symbolic matrix: row 1 holds sin(omega_i), cos(omega_i)
    omegas = [PE[1, 2 * i].args[0] if PE[1, 2 * i] != 0 else sp.Integer(0) for i in range(d // 2)]
    ratios = tuple(sp.nsimplify(omegas[i + 1] / omegas[i]) for i in range(len(omegas) - 1))
    matches = all(sp.simplify(PE[p, c] - (sp.sin if c % 2 == 0 else sp.cos)(p * omegas[c // 2])) == 0
                  for p in range(n) for c in range(d))
    return PE, ratios, matches, all(abs(float(v)) <= 1 for v in PE)


def study(*, quick: bool, base: int = DEFAULT_POSITION_BASE) -> SinusoidalResult:
    """The exact matrix and proofs, and the float64 encodings (128 × 32 quick, 512 × 128 full); nothing is sampled."""
    PE, ratios, matches, bounded = _exact(base)
    proof = prove_sinusoidal_shift()
    p, k, d_sym = proof.position, proof.shift, SYMBOLIC_SIZE[1]
    stacked = sym_shift(k, d_sym, base) * sym_pe(1, d_sym, base, offset=p).T - sym_pe(1, d_sym, base, offset=p + k).T
    n, d = (128, 32) if quick else (512, 128)
    P = np.asarray(num_pe(n, d, base))  # (n, d)
    rotation_error = max(float(np.max(np.abs(P[:-s] @ np.asarray(num_shift(s, d, base)).T - P[s:]))) for s in SHIFTS)
    twin = float(np.max(np.abs(np.asarray(num_pe(*SYMBOLIC_SIZE, base)) - np.array(PE.evalf(), dtype=float))))
    return SinusoidalResult(base, PE, ratios, matches, bounded, proof,
                            all(sp.expand(v, trig=True) == 0 for v in stacked), n, d, float(np.max(np.abs(P))),
                            rotation_error, twin, np.asarray(num_pe(64, 16, base)))
