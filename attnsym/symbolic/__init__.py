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
from .backprop import GradientCheck, GradientResult, check_gradients, gradient_cost, gradient_steps, gradients
from .cost import DEFAULT_MAX_TERMS, SymbolicCost, enforce_limit, estimate_cost
from .jacobians import (
    InputJacobian,
    SoftmaxJacobian,
    attention_input_jacobian,
    derive_softmax_jacobian,
    mlp_input_jacobian,
    softmax_jacobian,
)
from .matrices import SymbolicAttention, attention, matmul, row_softmax, scores
from .matrix_calculus import MatrixGradients, matrix_gradients
from .mlp import SymbolicMLP, mlp
from .naming import entry_name, input_symbols
from .positions import sinusoidal_positions

__all__ = [
    "DEFAULT_MAX_TERMS",
    "GELU_TANH_CUBIC",
    "GradientCheck",
    "GradientResult",
    "InputJacobian",
    "MatrixGradients",
    "SoftmaxJacobian",
    "SymbolicAttention",
    "SymbolicCost",
    "SymbolicMLP",
    "attention",
    "attention_input_jacobian",
    "check_gradients",
    "derive_softmax_jacobian",
    "enforce_limit",
    "entry_name",
    "estimate_cost",
    "gelu",
    "gelu_tanh",
    "gradient_cost",
    "gradient_steps",
    "gradients",
    "input_symbols",
    "matmul",
    "matrix_gradients",
    "mlp",
    "mlp_input_jacobian",
    "row_softmax",
    "scores",
    "sinusoidal_positions",
    "softmax_jacobian",
]
