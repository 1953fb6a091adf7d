"""The size limits of the exact (SymPy) views: the defaults their size guards use.

They live here, below every layer, so the command line can print them in its help without
loading SymPy; :mod:`attnsym.symbolic.cost` (the guards) and :mod:`attnsym.symbolic` re-export them.

>>> DEFAULT_MAX_TERMS > DEFAULT_MAX_GRADIENT_TERMS
True
"""

__all__ = ["DEFAULT_MAX_GRADIENT_TERMS", "DEFAULT_MAX_TERMS"]

#: default ceiling on the estimated number of expression terms of a symbolic build
DEFAULT_MAX_TERMS = 500_000

#: default ceiling on the estimated terms of the closed-form gradient program (about (12, 12) single-head)
DEFAULT_MAX_GRADIENT_TERMS = 60_000
