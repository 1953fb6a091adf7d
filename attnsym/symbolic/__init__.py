"""Symbolic (SymPy) views of self-attention: matrices, positions, activations, the MLP twin.

Everything here is exact and meant for small sizes (``n, d_model <= 4-6``); a size guard
(:func:`estimate_cost`) refuses larger builds before starting them.

>>> import attnsym as at
>>> sym = at.symbolic.attention(at.AttentionSpec(n=2, d_model=2))
>>> sym.X
Matrix([
[x_{1,1}, x_{1,2}],
[x_{2,1}, x_{2,2}]])
"""

from .activations import GELU_TANH_CUBIC, gelu, gelu_tanh
from .cost import DEFAULT_MAX_TERMS, SymbolicCost, enforce_limit, estimate_cost
from .matrices import SymbolicAttention, attention, matmul, row_softmax, scores
from .mlp import SymbolicMLP, mlp
from .naming import entry_name, input_symbols
from .positions import sinusoidal_positions

__all__ = [
    "DEFAULT_MAX_TERMS",
    "GELU_TANH_CUBIC",
    "SymbolicAttention",
    "SymbolicCost",
    "SymbolicMLP",
    "attention",
    "enforce_limit",
    "entry_name",
    "estimate_cost",
    "gelu",
    "gelu_tanh",
    "input_symbols",
    "matmul",
    "mlp",
    "row_softmax",
    "scores",
    "sinusoidal_positions",
]
