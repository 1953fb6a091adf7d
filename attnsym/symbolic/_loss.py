"""What a gradient is taken of, and at: the input symbols, the ``wrt`` names, the scalar loss, exact values.

Shared by the routes of :mod:`attnsym.symbolic.backward`, the result type of
:mod:`attnsym.symbolic.gradient_result` and the check of :mod:`attnsym.symbolic.gradient_check`.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sympy as sp

from .._exact import exact_entries
from ..errors import SpecError
from ..spec import AttentionSpec
from .naming import input_symbols
from .parameters import parameter_shapes

__all__ = ["Loss", "exact_values", "input_matrices", "resolve_loss", "resolve_wrt"]

Matrix = sp.ImmutableMatrix


def input_matrices(spec: AttentionSpec) -> dict[str, sp.ImmutableMatrix]:
    """``X`` then the parameters (:func:`~attnsym.symbolic.parameters.parameter_shapes`), as symbol matrices (the
    names of :mod:`attnsym.symbolic.naming`)."""
    shapes = {"X": spec.shapes["X"], **parameter_shapes(spec)}
    return {name: input_symbols(name, shape) for name, shape in shapes.items()}


def resolve_wrt(spec: AttentionSpec, wrt: Any) -> tuple[str, ...]:
    names = ("X", *parameter_shapes(spec))
    if wrt is None:
        return names
    if not isinstance(wrt, str | Sequence) or isinstance(wrt, bytes | bytearray):  # a dict or a set: no order
        raise SpecError(f"wrt must be an input name or a sequence of them, from {list(names)} (got {wrt!r:.80} of type "
                        f"{type(wrt).__name__})")
    chosen = (wrt,) if isinstance(wrt, str) else tuple(wrt)
    if not chosen:
        raise SpecError(f"wrt must name at least one input from {list(names)} (got an empty sequence)")
    for name in chosen:
        if name not in names:
            raise SpecError(f"wrt has {name!r}, which is not an input of this layer; choose from {list(names)}")
    return tuple(dict.fromkeys(chosen))


@dataclass(frozen=True)
class Loss:
    expr: sp.Expr  # scalar, in the output placeholders y_{i,j} (and g_{i,j} or extra symbols)
    y: sp.ImmutableMatrix  # output placeholders
    G: sp.ImmutableMatrix  # dL/dY in the placeholders
    upstream: sp.ImmutableMatrix | None  # the g_{i,j} matrix of the default loss
    extra: tuple[sp.Symbol, ...]  # other free symbols of a user loss (targets, …)


def resolve_loss(spec: AttentionSpec, loss: Any, inputs: Mapping[str, sp.ImmutableMatrix]) -> Loss:
    shape = (spec.n, spec.d_out)
    y = input_symbols("Y", shape)
    if loss is None:
        G = input_symbols("G", shape)
        expr = sp.Add(*[g * v for g, v in zip(G, y, strict=True)])
        return Loss(expr=expr, y=y, G=G, upstream=G, extra=())
    if isinstance(loss, str):
        raise SpecError(
            "loss must be None (L = <G, Y>), a SymPy expression in the output symbols y_{i,j}, or a callable "
            f"taking the output Matrix and returning one; strings are never parsed (got {loss!r})"
        )
    if callable(loss) and not isinstance(loss, sp.Basic):
        expr = loss(y)
    else:
        expr = loss
    if isinstance(expr, sp.MatrixBase) and expr.shape == (1, 1):
        expr = expr[0, 0]
    if isinstance(expr, numbers.Number) and not isinstance(expr, bool):
        expr = sp.sympify(expr)
    if not isinstance(expr, sp.Expr) or isinstance(expr, sp.MatrixExpr):
        raise SpecError(f"loss must give a scalar SymPy expression of the outputs y_{{i,j}} (got {expr!r})")
    taken = {s for m in inputs.values() for s in m.free_symbols}
    clash = sorted(map(str, expr.free_symbols & taken))
    if clash:
        raise SpecError(
            f"loss must be a function of the outputs y_{{i,j}} only; it contains input symbols {clash[:5]} "
            "(add such terms, e.g. weight decay, to the gradients yourself)"
        )
    extra = tuple(sorted(expr.free_symbols - set(y), key=str))
    G = Matrix(shape[0], shape[1], lambda i, j: expr.diff(y[i, j]))
    return Loss(expr=expr, y=y, G=G, upstream=None, extra=extra)


def exact_values(arguments: Mapping[str, sp.ImmutableMatrix], values: Mapping[str, Any]) -> dict[sp.Symbol, sp.Expr]:
    if not isinstance(values, Mapping):
        raise SpecError(f"values must be a mapping from input name to values (got {type(values).__name__})")
    missing = [k for k in arguments if k not in values]
    unknown = [k for k in values if k not in arguments]
    if missing or unknown:
        raise SpecError(f"values must give exactly {list(arguments)} (missing {missing}, unexpected {unknown})")
    env: dict[sp.Symbol, sp.Expr] = {}
    for name, symbols in arguments.items():
        entries = exact_entries(name, values[name], symbols.shape)
        env.update(zip(symbols, entries, strict=True))
    return env
