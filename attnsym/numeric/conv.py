"""1-D convolution along the tokens, the numeric twin of :func:`attnsym.symbolic.equivariance.conv1d`.

.. math:: y_{i,c} = \\sum_{r=0}^{k-1} w_r\\, x_{i + r - \\lfloor k/2 \\rfloor,\\, c}

The same kernel is applied to every feature column (a depthwise, cross-correlation convention,
centred on the token). With ``padding="circular"`` indices wrap around, so the map commutes with
cyclic shifts of the tokens; with ``padding="zeros"`` it does so away from the borders only.
Written against the array API (NumPy, CuPy, PyTorch).
"""

from __future__ import annotations

from ..errors import ShapeError, SpecError
from .backend import array_namespace

__all__ = ["conv1d", "shift_tokens"]


def shift_tokens(X, s: int = 1):
    """Shift the rows of ``X`` (tokens) right by ``s``, cyclically: row ``i`` becomes row ``i + s``.

    >>> shift_tokens(np.array([[1.0], [2.0], [3.0]])).ravel().tolist()
    [3.0, 1.0, 2.0]
    """
    xp = array_namespace(X)
    return xp.roll(xp.asarray(X), s, axis=-2)


def conv1d(X, kernel, padding: str = "circular"):
    """Convolve the tokens of ``X`` with ``kernel`` (length ``k``), the same for every feature.

    Parameters
    ----------
    X : (..., n, c) array
    kernel : (k,) array-like
    padding : {"circular", "zeros"}, default "circular"

    Returns
    -------
    (..., n, c) array

    Examples
    --------
    >>> conv1d(np.array([[1.0], [2.0], [3.0]]), [1.0, 0.0, -1.0]).ravel().tolist()
    [1.0, -2.0, 1.0]
    >>> conv1d(np.array([[1.0], [2.0], [3.0]]), [1.0, 0.0, -1.0], padding="zeros").ravel().tolist()
    [-2.0, -2.0, 2.0]
    """
    xp = array_namespace(X)
    X = xp.asarray(X)
    if X.ndim < 2:
        raise ShapeError(f"X must have shape (..., n, c) (got shape {tuple(X.shape)})")
    w = xp.reshape(xp.asarray(kernel, dtype=X.dtype), (-1,))
    if w.shape[0] < 1:
        raise ShapeError("kernel must have at least one weight (got an empty kernel)")
    if padding not in ("circular", "zeros"):
        raise SpecError(f"padding must be 'circular' or 'zeros' (got {padding!r})")
    n = X.shape[-2]
    k = w.shape[0]
    half = k // 2
    if padding == "zeros":
        pad_before = xp.zeros((*X.shape[:-2], half, X.shape[-1]), dtype=X.dtype)
        pad_after = xp.zeros((*X.shape[:-2], k - 1 - half, X.shape[-1]), dtype=X.dtype)
        padded = xp.concat([pad_before, X, pad_after], axis=-2)  # (..., n + k - 1, c)
    Y = xp.zeros_like(X)
    for r in range(k):
        offset = r - half  # y_i reads x_{i + offset}
        if padding == "circular":
            term = xp.roll(X, -offset, axis=-2)
        else:
            term = padded[..., r:r + n, :]
        Y = Y + w[r] * term
    return Y
