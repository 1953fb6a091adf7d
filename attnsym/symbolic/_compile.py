"""Compile a :class:`~attnsym.symbolic.backprop.GradientResult` to a numeric function.

The closed form already is a straight-line program with every shared subexpression named,
so it is handed to :func:`sympy.lambdify` as the ``cse`` replacements directly (no search for
common subexpressions is needed); elementwise results go through :func:`sympy.cse`.

Two compiled variants are kept: one for a single set of inputs, evaluated with Python floats
and the ``math`` module (scalar NumPy calls cost about a microsecond each, ``math`` about
50 ns), and one for batches (leading axes ``(..., rows, cols)``), evaluated with NumPy (or
CuPy) arrays entry by entry; the batch variant is compiled on its first use.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from ..errors import BackendError, ShapeError, SpecError

__all__ = ["compile_gradients"]


def _max_shifted(defs, rows) -> list[tuple[sp.Symbol, sp.Expr]]:
    """Compile each softmax row as ``exp(s_j - max_k s_k) / sum``: the same weights, no overflow.

    The derivation keeps ``exp(s_j)`` (exact and readable); only the compiled program shifts,
    which changes no value of ``A`` and keeps large scores finite, as numeric code does.
    """
    shift: dict[sp.Symbol, tuple[sp.Symbol, sp.Expr]] = {}
    first: dict[sp.Symbol, tuple[sp.Symbol, sp.Expr]] = {}
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


def _program(result) -> tuple[list[sp.Symbol], list[tuple[sp.Symbol, sp.Expr]], list[sp.Expr]]:
    arguments = result.arguments
    flat = [s for m in arguments.values() for s in m]
    safe = {s: sp.Symbol(f"_a{k}", real=True) for k, s in enumerate(flat)}
    if result._tape is not None:
        outs = [e for name in result.wrt for e in result._program_outputs[name]]
        defs = _max_shifted([(t, e.xreplace(safe)) for t, e in result._tape.needed(outs)], result._tape.softmax_rows)
        outs = [sp.sympify(o).xreplace(safe) for o in outs]
    else:
        outs = [e.xreplace(safe) for name in result.wrt for e in result[name]]
        defs, outs = sp.cse(outs, symbols=sp.numbered_symbols("_c"))
    known = set(safe.values()) | {t for t, _ in defs}
    stray = set()
    for expr in [*outs, *(e for _, e in defs)]:
        stray |= expr.free_symbols - known
    if stray:
        raise SpecError(
            f"the gradients contain symbols that are not arguments: {sorted(map(str, stray))} "
            "(a symbolic scale? build the spec with a number to lambdify)"
        )
    return list(safe.values()), defs, outs


def compile_gradients(result, modules: str = "numpy"):
    """``f(**arrays) -> dict`` evaluating ``result`` (see :meth:`GradientResult.lambdify`)."""
    if modules not in ("numpy", "cupy"):
        raise SpecError(f"modules must be 'numpy' or 'cupy' (got {modules!r})")
    if modules == "cupy":
        try:
            import cupy as xp
        except ImportError:
            raise BackendError("modules='cupy' needs CuPy installed (pip install cupy-cuda12x)") from None
    else:
        import numpy as xp
    import numpy as np

    args, defs, outs = _program(result)
    program = lambda exprs: (defs, exprs)
    compiled: dict[str, Any] = {}

    def batched(*flat):  # compiled on first use: most calls are for one set of inputs
        if "batched" not in compiled:
            compiled["batched"] = sp.lambdify(args, outs, modules=modules, cse=program)
        return compiled["batched"](*flat)

    scalar = sp.lambdify(args, outs, modules="math", cse=program) if modules == "numpy" else None
    shapes = {name: m.shape for name, m in result.arguments.items()}
    layout, start = [], 0
    for name in result.wrt:
        rows, cols = result.inputs[name].shape
        layout.append((name, rows, cols, start))
        start += rows * cols

    def evaluate(**arrays: Any) -> dict[str, Any]:
        missing = [k for k in shapes if k not in arrays]
        unknown = [k for k in arrays if k not in shapes]
        if missing or unknown:
            raise SpecError(f"this function takes keyword arrays {list(shapes)} (missing {missing}, unexpected {unknown})")
        values = {}
        batch: tuple[int, ...] = ()
        for name, (rows, cols) in shapes.items():
            a = xp.asarray(arrays[name])
            if a.ndim == 0 and (rows, cols) == (1, 1):
                a = a.reshape(1, 1)
            if a.ndim < 2 or tuple(a.shape[-2:]) != (rows, cols):
                raise ShapeError(f"{name} must have shape (..., {rows}, {cols}) (got {tuple(a.shape)})")
            if a.dtype.kind not in "fc":
                a = a.astype(float)
            batch = np.broadcast_shapes(batch, tuple(a.shape[:-2]))
            values[name] = a
        if scalar is not None and batch == ():
            flat = [v for a in values.values() for v in a.ravel().tolist()]
            try:
                got = scalar(*flat)
            except (OverflowError, ZeroDivisionError, ValueError):
                got = None  # math raises where NumPy returns inf/nan: fall back to NumPy semantics
            if got is not None:
                dtype = np.result_type(*values.values())
                return {name: np.array(got[s:s + r * c], dtype=dtype).reshape(r, c) for name, r, c, s in layout}
        flat = [a[..., i, j] for a in values.values() for i in range(a.shape[-2]) for j in range(a.shape[-1])]
        got = batched(*flat)
        out = {}
        for name, r, c, s in layout:
            entries = [xp.broadcast_to(xp.asarray(v, dtype=values["X"].dtype), batch) for v in got[s:s + r * c]]
            out[name] = xp.stack(entries, axis=-1).reshape(*batch, r, c)
        return out

    evaluate.__doc__ = f"Gradients {list(result.wrt)} from keyword arrays {list(shapes)}."
    return evaluate
