"""The result of :func:`~attnsym.symbolic.gradients`: a read-only mapping with exact evaluation and compilation."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from ..spec import AttentionSpec
from ._compile import compile_gradients
from ._loss import Loss, exact_values
from ._rewrite import memo_replace
from ._tape import Tape

__all__ = ["GradientResult"]

Matrix = sp.ImmutableMatrix


@dataclass(eq=False, repr=False)
class GradientResult(Mapping):
    """Gradients of a scalar loss with respect to the inputs of one attention layer.

    A read-only mapping ``name -> sympy.ImmutableMatrix`` (each of the input's shape), built by
    :func:`gradients`. With the closed form the explicit entries are assembled on first access
    from a straight-line program (:attr:`program`), which :meth:`lambdify` compiles directly.

    Attributes
    ----------
    spec : AttentionSpec
    method : str
        ``"closed_form"`` or ``"elementwise"``.
    wrt : tuple of str
        The input names, in order.
    inputs : dict
        Input name -> symbol matrix (``x_{i,j}``, ``W^{Q}_{i,j}``, …).
    loss : sympy.Expr
        The scalar loss in the output symbols ``y_{i,j}`` (``sum g_{i,j} y_{i,j}`` by default).
    G : sympy.ImmutableMatrix
        :math:`\\partial L/\\partial Y` in the output symbols (the ``g_{i,j}`` by default).
    Y : sympy.ImmutableMatrix
        The output placeholders ``y_{i,j}`` that ``loss`` and ``G`` are written in.
    """

    spec: AttentionSpec
    method: str
    wrt: tuple[str, ...]
    inputs: dict[str, sp.ImmutableMatrix]
    loss: sp.Expr
    G: sp.ImmutableMatrix
    Y: sp.ImmutableMatrix
    _loss: Loss
    _tape: Tape | None = None
    _program_outputs: dict[str, sp.ImmutableMatrix] | None = None
    _explicit: dict[str, sp.ImmutableMatrix] = field(default_factory=dict)

    # -------------------------------------------------------------- Mapping
    def __getitem__(self, name: str) -> sp.ImmutableMatrix:
        if name not in self.wrt:
            raise KeyError(f"no gradient for {name!r}; this result has {list(self.wrt)}")
        if name not in self._explicit:  # the closed form: written out on first access
            tape, outputs = self._closed_form()
            program = outputs[name]
            self._explicit[name] = Matrix(*program.shape, tape.explicit(list(program)))
        return self._explicit[name]

    def _closed_form(self) -> tuple[Tape, dict[str, sp.ImmutableMatrix]]:
        """The closed form's program and its outputs (the other routes fill ``_explicit`` instead)."""
        if self._tape is None or self._program_outputs is None:
            raise AssertionError(f"internal: the {self.method} route has no straight-line program")
        return self._tape, self._program_outputs

    def __iter__(self) -> Iterator[str]:
        return iter(self.wrt)

    def __len__(self) -> int:
        return len(self.wrt)

    def __repr__(self) -> str:
        shapes = ", ".join(f"{k}: {self.inputs[k].shape}" for k in self.wrt)
        return f"GradientResult({self.method}, {self.spec.describe()}; {shapes})"

    # -------------------------------------------------------------- program
    @property
    def program(self) -> list[tuple[sp.Symbol, sp.Expr]]:
        """The straight-line program ``[(t, expr), …]`` behind the closed form (empty for elementwise).

        Each ``expr`` uses input symbols and earlier ``t`` symbols; :attr:`program_outputs`
        gives the gradients in these symbols.
        """
        if self._tape is None:
            return []
        tape, outputs = self._closed_form()
        return tape.needed([e for name in self.wrt for e in outputs[name]])

    @property
    def program_outputs(self) -> dict[str, sp.ImmutableMatrix]:
        """The gradients written in the program's symbols (the explicit ones for elementwise)."""
        if self._program_outputs is None:
            return {name: self[name] for name in self.wrt}
        return dict(self._program_outputs)

    @property
    def arguments(self) -> dict[str, sp.ImmutableMatrix]:
        """Keyword arguments of :meth:`lambdify`'s function: the inputs, ``G`` by default, extra loss symbols."""
        args = dict(self.inputs)
        if self._loss.upstream is not None:
            args["G"] = self._loss.upstream
        for s in self._loss.extra:
            args[str(s)] = Matrix([[s]])
        return args

    def evaluate(self, values: Mapping[str, Any]) -> dict[str, sp.ImmutableMatrix]:
        """Exact gradients at concrete values (ints, Fractions, SymPy numbers; floats become Float).

        Parameters
        ----------
        values : mapping
            One entry per name of :attr:`arguments` (array-likes of the right shape; a scalar
            for an extra loss symbol).

        Examples
        --------
        >>> spec = at.AttentionSpec(n=2, d_model=1, scale="none")
        >>> g = at.symbolic.gradients(spec, wrt="W_V")
        >>> g.evaluate({"X": [[0], [1]], "W_Q": [[1]], "W_K": [[1]], "W_V": [[2]], "G": [[1], [1]]})["W_V"]
        Matrix([[1/2 + E/(1 + E)]])
        """
        env = exact_values(self.arguments, values)
        if self._tape is not None:
            tape, outputs = self._closed_form()
            flat = tape.evaluate([e for name in self.wrt for e in outputs[name]], env)
        else:
            flat = [memo_replace(e, env, {}) for name in self.wrt for e in self[name]]
        result, start = {}, 0
        for name in self.wrt:
            rows, cols = self.inputs[name].shape
            result[name] = Matrix(rows, cols, flat[start:start + rows * cols])
            start += rows * cols
        return result

    def lambdify(self, modules: str = "numpy") -> Callable[..., dict[str, Any]]:
        """Compile the gradients to a numeric function (common subexpressions shared).

        Parameters
        ----------
        modules : {"numpy", "cupy"}, default "numpy"
            ``"numpy"``: a single set of inputs is evaluated with Python floats (``math``),
            batches of inputs with NumPy arrays. ``"cupy"``: CuPy arrays (CuPy must be installed).
            The compiled program computes each softmax row as ``exp(s - max(s)) / sum``: the same
            weights as the derivation's ``exp(s) / sum``, without overflow for large scores.

        Returns
        -------
        callable
            ``f(**arrays) -> dict name -> array``: one keyword per name of :attr:`arguments`
            (``X``, ``W_Q``, …, ``G``), each of the input's shape, optionally with leading batch
            axes ``(..., rows, cols)``; the gradients come back with the same batch axes.

        Raises
        ------
        SpecError
            ``modules`` is not supported, or a free symbol (a symbolic scale) is not an argument.
        BackendError
            ``modules="cupy"`` without CuPy installed.

        Examples
        --------
        >>> spec = at.AttentionSpec(n=2, d_model=2)
        >>> f = at.symbolic.gradients(spec, wrt=("W_V",)).lambdify()
        >>> out = f(X=np.eye(2), W_Q=np.zeros((2, 2)), W_K=np.zeros((2, 2)), W_V=np.eye(2), G=np.ones((2, 2)))
        >>> out["W_V"]                       # A = 1/2 everywhere: dW_V = Xᵀ Aᵀ G
        array([[1., 1.],
               [1., 1.]])
        """
        return compile_gradients(self, modules)
