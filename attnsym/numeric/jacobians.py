"""The softmax Jacobian as a floating-point array: the numeric twin of :mod:`attnsym.symbolic.jacobians`."""

from __future__ import annotations

from ..errors import ShapeError
from ._inputs import float_inputs

__all__ = ["softmax_jacobian"]


def softmax_jacobian(a):
    """The Jacobian ``∂a_i/∂z_j = a_i (δ_ij − a_j)``, i.e. ``diag(a) − a aᵀ``, at softmax output ``a``.

    Twin of :func:`attnsym.symbolic.softmax_jacobian`: ``symbolic.softmax_jacobian(n)`` is
    the same matrix in the symbols ``a_1, …, a_n``; this function evaluates it at the
    numbers ``a`` (so ``softmax_jacobian(a)`` pairs with
    ``symbolic.softmax_jacobian(a.shape[-1])`` with ``a_i`` set to ``a[i - 1]``).

    Parameters
    ----------
    a : (..., n) array
        Softmax outputs (batched over leading dimensions).

    Returns
    -------
    (..., n, n) array

    Raises
    ------
    ShapeError
        ``a`` not a finite float32/float64 array of at least one dimension.

    Examples
    --------
    >>> softmax_jacobian(np.array([0.25, 0.75]))
    array([[ 0.1875, -0.1875],
           [-0.1875,  0.1875]])
    """
    xp, arrays, _ = float_inputs({"a": a})
    a = arrays["a"]
    if a.ndim < 1:
        raise ShapeError(f"a must have shape (..., n), at least one dimension (got shape {tuple(a.shape)})")
    n = a.shape[-1]
    col, row = xp.expand_dims(a, axis=-1), xp.expand_dims(a, axis=-2)  # (..., n, 1), (..., 1, n)
    return xp.eye(n, dtype=a.dtype) * row - col * row
