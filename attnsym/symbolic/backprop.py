"""The gradient API of the symbolic layer in one place (a façade; the code lives in the modules named below).

=====================================  ==============================================================
:func:`gradients`                      :mod:`attnsym.symbolic.backward` (the three routes)
:class:`GradientResult`                :mod:`attnsym.symbolic.gradient_result`
:func:`check_gradients`                :mod:`attnsym.symbolic.gradient_check`
:func:`gradient_cost`                  :mod:`attnsym.symbolic.cost` (the size guard)
:func:`gradient_steps`                 the backward pass as derivation steps
softmax / input Jacobians              :mod:`attnsym.symbolic.jacobians`
:func:`matrix_gradients`               :mod:`attnsym.symbolic.matrix_calculus` (symbolic sizes)
=====================================  ==============================================================

Nothing inside attnsym imports this module; it keeps ``attnsym.symbolic.backprop.<name>`` working.
"""

from ._backward_steps import gradient_steps
from .backward import gradients
from .cost import DEFAULT_MAX_GRADIENT_TERMS, gradient_cost
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
from .matrix_calculus import MatrixGradients, matrix_gradients

__all__ = [
    "DEFAULT_MAX_GRADIENT_TERMS",
    "GradientCheck",
    "GradientResult",
    "InputJacobian",
    "MatrixGradients",
    "SoftmaxJacobian",
    "attention_input_jacobian",
    "check_gradients",
    "derive_softmax_jacobian",
    "gradient_cost",
    "gradient_steps",
    "gradients",
    "matrix_gradients",
    "mlp_input_jacobian",
    "softmax_jacobian",
]
