"""The one compiler from symbolic results to numeric functions (attention matrices and gradients alike).

A result describes itself as a :class:`Program`: the keyword arguments (input matrices whose
entries are still symbols), a straight-line list of definitions ``symbol = expression``, the
softmax rows among them, and the outputs. :func:`compile_program` turns it into
``f(**arrays) -> dict name -> array``:

* every softmax row is compiled as ``exp(s_j - max_k s_k) / sum``: the same weights as the
  derivation's ``exp(s_j) / sum`` (exact and readable), finite for large scores, as numeric
  code does — the one max-shift of attnsym's compiled code;
* shared subexpressions are named once: a program that already names them (the closed-form
  gradients' tape) is used as it is, any other goes through :func:`sympy.cse`;
* two variants are kept: one for a single set of inputs, evaluated with Python floats and the
  ``math`` module (scalar NumPy calls cost about a microsecond each, ``math`` about 50 ns), and
  one for batches (leading axes ``(..., rows, cols)``), evaluated with NumPy (or CuPy) arrays
  entry by entry and compiled on its first use.

:meth:`SymbolicAttention.lambdify <attnsym.symbolic.SymbolicAttention.lambdify>` and
:meth:`GradientResult.lambdify <attnsym.symbolic.GradientResult.lambdify>` both build a
program and call :func:`compile_program`.
"""

from __future__ import annotations

import graphlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp

from .._checks import one_of
from ..errors import BackendError, ShapeError, SpecError

__all__ = ["Argument", "Output", "Program", "compile_gradients", "compile_program"]

Definition = tuple[sp.Symbol, sp.Expr]


@dataclass(frozen=True)
class Argument:
    """A keyword argument: an input matrix of ``shape`` whose entries at ``positions`` are ``symbols``."""

    name: str
    shape: tuple[int, int]
    symbols: tuple[sp.Symbol, ...]
    positions: tuple[tuple[int, int], ...]

    @classmethod
    def of(cls, name: str, matrix: sp.MatrixBase) -> Argument:
        """The entries of ``matrix`` that are symbols (all of them, unless some were substituted)."""
        cols = matrix.shape[1]
        found = [(e, divmod(k, cols)) for k, e in enumerate(matrix) if isinstance(e, sp.Symbol)]
        return cls(name, tuple(matrix.shape), tuple(e for e, _ in found), tuple(p for _, p in found))


@dataclass(frozen=True)
class Output:
    """An output: ``exprs`` in row-major order, returned with shape ``shape`` (``(heads, r, c)`` for a stack)."""

    name: str
    shape: tuple[int, ...]
    exprs: tuple[sp.Expr, ...]


@dataclass(frozen=True)
class Program:
    """What :func:`compile_program` compiles.

    Attributes
    ----------
    arguments, outputs : tuple
        :class:`Argument` and :class:`Output` objects, in order.
    definitions : tuple of (symbol, expression)
        A straight-line program: each expression uses argument symbols and earlier definitions.
    softmax_rows : tuple of (scores, exponentials)
        Rows of a softmax: ``exponentials[j]`` is a defined symbol whose definition is
        ``exp(scores[j])``; compiled as ``exp(scores[j] - max(scores))``.
    shared : bool
        True when the definitions already name every shared subexpression (no :func:`sympy.cse`).
    what, hint : str
        Words for the error on symbols that are neither arguments nor defined.
    """

    arguments: tuple[Argument, ...]
    outputs: tuple[Output, ...]
    definitions: tuple[Definition, ...] = ()
    softmax_rows: tuple[tuple[Sequence[sp.Expr], Sequence[sp.Expr]], ...] = ()
    shared: bool = False
    what: str = "outputs"
    hint: str = ""


def _max_shifted(defs: Sequence[Definition], rows) -> list[Definition]:
    """Each softmax row as ``exp(s_j - max_k s_k)``: the row maximum is defined before the row's first exponential."""
    shift: dict[sp.Symbol, tuple[sp.Symbol, sp.Expr]] = {}
    first: dict[sp.Symbol, Definition] = {}
    for k, (scores, exps) in enumerate(rows):
        if not all(isinstance(e, sp.Symbol) for e in exps):
            continue
        m = sp.Symbol(f"_m{k}", real=True)
        first[exps[0]] = (m, sp.Max(*scores))
        for s, e in zip(scores, exps, strict=True):
            shift[e] = (m, s)
    out = []
    for symbol, expr in defs:
        if symbol in first:
            out.append(first[symbol])
        if symbol in shift:
            m, s = shift[symbol]
            expr = sp.exp(s - m)
        out.append((symbol, expr))
    return out


def _shared(defs: list[Definition], outs: list[sp.Expr]) -> tuple[list[Definition], list[sp.Expr]]:
    """Name the common subexpressions of definitions and outputs together, then order the definitions."""
    replacements, reduced = sp.cse([*(e for _, e in defs), *outs], symbols=sp.numbered_symbols("_c"))
    assigned = dict(replacements)
    assigned.update((symbol, expr) for (symbol, _), expr in zip(defs, reduced[:len(defs)], strict=True))
    order = graphlib.TopologicalSorter({s: [d for d in e.free_symbols if d in assigned] for s, e in assigned.items()})
    return [(s, assigned[s]) for s in order.static_order()], list(reduced[len(defs):])


def _namespace(modules: str):
    modules = one_of("modules", modules, ("numpy", "cupy"))
    if modules == "cupy":
        try:
            import cupy
        except ImportError:
            raise BackendError("modules='cupy' needs CuPy installed (pip install cupy-cuda12x)") from None
        return cupy
    return np


def compile_program(program: Program, modules: str = "numpy") -> Callable[..., dict[str, Any]]:
    """``f(**arrays) -> dict name -> array`` evaluating ``program`` (see the module docstring).

    Raises
    ------
    SpecError
        ``modules`` is not ``"numpy"`` or ``"cupy"``, or the program has symbols that are
        neither arguments nor defined (``program.hint`` says what to do).
    BackendError
        ``modules="cupy"`` without CuPy installed.
    """
    modules = one_of("modules", modules, ("numpy", "cupy"))
    xp = _namespace(modules)
    flat_symbols = [s for a in program.arguments for s in a.symbols]
    safe = {s: sp.Symbol(f"_a{k}", real=True) for k, s in enumerate(flat_symbols)}
    defs = [(t, sp.sympify(e).xreplace(safe)) for t, e in program.definitions]
    rows = [([sp.sympify(s).xreplace(safe) for s in scores], list(exps)) for scores, exps in program.softmax_rows]
    defs = _max_shifted(defs, rows)
    outs = [sp.sympify(e).xreplace(safe) for o in program.outputs for e in o.exprs]
    if not program.shared:
        defs, outs = _shared(defs, outs)
    known = set(safe.values()) | {t for t, _ in defs}
    stray: set[sp.Symbol] = set()
    for expr in [*outs, *(e for _, e in defs)]:
        stray |= expr.free_symbols - known
    if stray:
        raise SpecError(f"the {program.what} contain symbols that are not inputs: {sorted(map(str, stray))}{program.hint}")

    args = list(safe.values())
    cse = lambda exprs: (defs, exprs)
    compiled: dict[str, Any] = {}

    def batched(*flat):  # compiled on first use: most calls are for one set of inputs
        if "batched" not in compiled:
            compiled["batched"] = sp.lambdify(args, outs, modules=modules, cse=cse)
        return compiled["batched"](*flat)

    scalar = sp.lambdify(args, outs, modules="math", cse=cse) if modules == "numpy" else None
    layout, start = [], 0
    for o in program.outputs:
        layout.append((o.name, o.shape, start, start + len(o.exprs)))
        start += len(o.exprs)
    names = [a.name for a in program.arguments]

    def evaluate(**arrays: Any) -> dict[str, Any]:
        missing = [k for k in names if k not in arrays]
        unknown = [k for k in arrays if k not in names]
        if missing or unknown:
            raise SpecError(f"this function takes keyword arrays {names} (missing {missing}, unexpected {unknown})")
        values = []
        batch: tuple[int, ...] = ()
        for argument in program.arguments:
            rows_, cols = argument.shape
            a = xp.asarray(arrays[argument.name])
            if a.ndim == 0 and (rows_, cols) == (1, 1):
                a = a.reshape(1, 1)
            if a.ndim < 2 or tuple(a.shape[-2:]) != (rows_, cols):
                raise ShapeError(f"{argument.name} must have shape (..., {rows_}, {cols}) (got {tuple(a.shape)})")
            if a.dtype.kind not in "fc":
                a = a.astype(float)
            batch = np.broadcast_shapes(batch, tuple(a.shape[:-2]))
            values.append(a)
        dtype = xp.result_type(*values) if values else np.float64
        if scalar is not None and batch == ():
            flat = [float(a[i, j]) for a, arg in zip(values, program.arguments, strict=True) for i, j in arg.positions]
            try:
                got = scalar(*flat)
            except (OverflowError, ZeroDivisionError, ValueError):
                got = None  # math raises where NumPy returns inf/nan: fall back to NumPy semantics
            if got is not None:
                return {name: np.array(got[s:e], dtype=dtype).reshape(shape) for name, shape, s, e in layout}
        flat = [a[..., i, j] for a, arg in zip(values, program.arguments, strict=True) for i, j in arg.positions]
        got = batched(*flat)
        out = {}
        for name, shape, s, e in layout:
            entries = [xp.broadcast_to(xp.asarray(v, dtype=dtype), batch) for v in got[s:e]]
            out[name] = xp.stack(entries, axis=-1).reshape(*batch, *shape)
        return out

    evaluate.__doc__ = f"{[o.name for o in program.outputs]} from keyword arrays {names}."
    return evaluate


def compile_gradients(result, modules: str = "numpy") -> Callable[..., dict[str, Any]]:
    """The program of a :class:`~attnsym.symbolic.GradientResult`, compiled (see its ``lambdify``)."""
    _namespace(modules)  # refuse a bad ``modules`` before building anything
    arguments = tuple(Argument.of(name, m) for name, m in result.arguments.items())
    if result._tape is not None:  # the closed form: a straight-line program that names every shared subexpression
        flat = [e for name in result.wrt for e in result._program_outputs[name]]
        definitions = tuple(result._tape.needed(flat))
        rows = tuple(result._tape.softmax_rows)
        exprs = {name: tuple(result._program_outputs[name]) for name in result.wrt}
    else:
        definitions, rows = (), ()
        exprs = {name: tuple(result[name]) for name in result.wrt}
    outputs = tuple(Output(name, tuple(result.inputs[name].shape), exprs[name]) for name in result.wrt)
    return compile_program(Program(arguments, outputs, definitions, rows, shared=result._tape is not None,
                                   what="gradients", hint=" (a symbolic scale? build the spec with a number to lambdify)"),
                           modules)
