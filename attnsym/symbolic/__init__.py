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

from ._backward_steps import gradient_steps
from .activations import GELU_TANH_CUBIC, GeluProof, gelu, gelu_tanh, prove_gelu, silu
from .backward import gradients
from .cost import DEFAULT_MAX_GRADIENT_TERMS, DEFAULT_MAX_TERMS, SymbolicCost, enforce_limit, estimate_cost, gradient_cost
from .equivariance import check_attention_equivariance, check_conv_equivariance, conv1d
from .gradient_check import GradientCheck, check_gradients
from .gradient_result import GradientResult
from .jacobians import (
    InputJacobian,
    SoftmaxJacobian,
    attention_input_jacobian,
    derive_softmax_jacobian,
    mlp_input_jacobian,
    softmax_jacobian,
)
from .matrices import SymbolicAttention, attention
from .matrix_calculus import MatrixGradients, matrix_gradients
from .mlp import SymbolicMLP, mlp
from .naming import entry_name, input_symbols
from .online_softmax import prove_online_softmax
from .opcount import attention_opcount, decode_step_opcount
from .operations import matmul, row_softmax, scores
from .position_hooks import PositionHooks, position_hooks
from .positions import (
    SinusoidalShiftProof,
    alibi_bias,
    alibi_slopes,
    apply_rope,
    prove_sinusoidal_shift,
    rope_attention_factor,
    rope_frequencies,
    rope_rotation,
    sinusoidal_positions,
    sinusoidal_shift,
)
from .rope_proofs import RelativeProof, prove_rope_relative, prove_shift_invariance
from .steps import Step
from .symmetry import prove_qk_symmetry_condition
from .two_token import solve_two_token

__all__ = [
    "DEFAULT_MAX_GRADIENT_TERMS",
    "DEFAULT_MAX_TERMS",
    "GELU_TANH_CUBIC",
    "GeluProof",
    "GradientCheck",
    "GradientResult",
    "InputJacobian",
    "MatrixGradients",
    "PositionHooks",
    "RelativeProof",
    "SinusoidalShiftProof",
    "SoftmaxJacobian",
    "Step",
    "SymbolicAttention",
    "SymbolicCost",
    "SymbolicMLP",
    "alibi_bias",
    "alibi_slopes",
    "apply_rope",
    "attention",
    "attention_input_jacobian",
    "attention_opcount",
    "check_attention_equivariance",
    "check_conv_equivariance",
    "check_gradients",
    "conv1d",
    "decode_step_opcount",
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
    "position_hooks",
    "prove_gelu",
    "prove_online_softmax",
    "prove_qk_symmetry_condition",
    "prove_rope_relative",
    "prove_shift_invariance",
    "prove_sinusoidal_shift",
    "rope_attention_factor",
    "rope_frequencies",
    "rope_rotation",
    "row_softmax",
    "scores",
    "silu",
    "sinusoidal_positions",
    "sinusoidal_shift",
    "softmax_jacobian",
    "solve_two_token",
]
