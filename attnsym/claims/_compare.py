"""Comparisons and draws shared by the numeric parts of the claim checks: those of :mod:`attnsym.studies.compare`.

A claim and the study it judges compare with one tolerance (the float64 row of
:data:`attnsym.testing.TOLERANCES`) and draw weights with one rule; both are defined once, in
the studies' floor, and read here under their old names.
"""

from __future__ import annotations

from ..studies.compare import TOL64, close, max_abs, random_weights

__all__ = ["TOL64", "close", "max_abs", "random_weights"]
