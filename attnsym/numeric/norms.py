r"""The two normalisations of a transformer, written once: LayerNorm and RMSNorm over the last axis.

The one RMSNorm serves both places a model uses it: the block norms of a decoder
(:mod:`attnsym.models.forward`: LLaMA's pre-norm, Gemma's ``1 + w`` gains) and the QK-norm of
an :class:`~attnsym.AttentionSpec` (``qk_norm``, ``qk_norm_offset``, per head or over the whole
projection: :func:`attnsym.numeric.layer.head_rows`). Its exact twin is
:func:`attnsym.symbolic.matrices.rms_norm_rows`; its gradient :func:`rms_norm_vjp` (the
backward pass's, :mod:`attnsym.numeric.backward`) is tied to it by finite differences in the tests.

These are the engine's primitives, run on every layer of a forward pass: any array library
(:func:`~attnsym.numeric.array_namespace`), float32 or float64, no pass over the values to check
them (a non-finite value propagates, and the forward pass checks its result once, at the end).
A weight of the wrong width is refused by name.

Shape legend: ``...`` any leading axes, ``w`` the normalised width.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ShapeError
from .backend import array_namespace

__all__ = ["layer_norm", "rms_norm", "rms_norm_vjp"]


def _gain(xp: Any, name: str, weight: Any, width: int) -> Any:
    """``weight`` as a ``(w,)`` vector, from ``(w,)`` or ``(1, w)``; any other shape a ShapeError naming it."""
    shape = tuple(int(s) for s in weight.shape)
    if shape not in ((width,), (1, width)):
        raise ShapeError(f"{name} must have shape ({width},) or (1, {width}) to scale rows of width {width} "
                         f"(got {shape})")
    return weight if len(shape) == 1 else xp.reshape(weight, (width,))


def layer_norm(x: Any, weight: Any, bias: Any, eps: float) -> Any:
    r"""LayerNorm over the last axis, into a new array (``x`` is not changed).

    .. math::

        \operatorname{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} + \beta

    with ``μ`` the mean and ``σ²`` the biased variance (divided by ``w``) of each row, as
    ``torch.nn.LayerNorm``.

    Parameters
    ----------
    x : (..., w) array
    weight, bias : (w,) or (1, w) arrays
        The gain ``γ`` and the shift ``β``.
    eps : float
        Added to the variance.

    Returns
    -------
    (..., w) array
        Of ``x``'s library and dtype.

    Raises
    ------
    ShapeError
        ``weight`` or ``bias`` not of width ``w``.

    Examples
    --------
    >>> layer_norm(np.array([[1.0, 3.0]]), np.ones(2), np.zeros(2), 0.0)
    array([[-1.,  1.]])
    """
    xp = array_namespace(x, weight, bias)
    width = int(x.shape[-1])
    gamma, beta = _gain(xp, "weight", weight, width), _gain(xp, "bias", bias, width)
    centred = x - xp.mean(x, axis=-1, keepdims=True)  # (..., w), a new array
    var = xp.mean(centred * centred, axis=-1, keepdims=True)  # (..., 1)
    centred *= 1.0 / xp.sqrt(var + eps)  # in place on the new array: the forward pass never needs gradients
    centred *= gamma
    centred += beta
    return centred


def rms_norm(x: Any, weight: Any, eps: float, offset: float = 0.0) -> Any:
    r"""RMSNorm over the last axis: each row divided by its root mean square, times the gain ``offset + weight``.

    .. math::

        \operatorname{RMSNorm}(x) = \frac{x}{\sqrt{\tfrac{1}{w}\sum_j x_j^2 + \varepsilon}} \odot (c + g)

    LLaMA's block norm (``c = 0``), Gemma's ``1 + w`` (``c = 1``), and the QK-norm of a spec
    (``qk_norm_eps``, ``qk_norm_offset``). Twin of :func:`attnsym.symbolic.matrices.rms_norm_rows`.

    Parameters
    ----------
    x : (..., w) array
    weight : (w,) or (1, w) array
        The gain ``g``.
    eps : float
        Added to the mean square.
    offset : float, default 0.0
        ``c``, added to the gain (a checkpoint that stores ``g − 1``).

    Returns
    -------
    (..., w) array
        Of ``x``'s library and dtype.

    Raises
    ------
    ShapeError
        ``weight`` not of width ``w``.

    Examples
    --------
    >>> rms_norm(np.array([[3.0, 4.0]]), np.ones(2), 0.0)  # root mean square √12.5
    array([[0.84852814, 1.13137085]])
    >>> rms_norm(np.array([[3.0, 4.0]]), np.zeros((1, 2)), 0.0, offset=1.0)  # Gemma's 1 + w, w = 0
    array([[0.84852814, 1.13137085]])
    """
    numpy = isinstance(x, np.ndarray) and isinstance(weight, np.ndarray)  # no namespace lookup: 40 µs a call
    xp = np if numpy else array_namespace(x, weight)
    gain = _gain(xp, "weight", weight, int(x.shape[-1]))  # (w,): it broadcasts into x's shape
    scale = gain + offset if offset else gain
    if numpy and x.dtype == np.result_type(x, scale):
        return _rms_norm_numpy(x, scale, eps)
    normed = x * (1.0 / xp.sqrt(xp.mean(x * x, axis=-1, keepdims=True) + eps))  # (..., w)
    return normed * scale


def _rms_norm_numpy(x: np.ndarray, scale: np.ndarray, eps: float) -> np.ndarray:
    """:func:`rms_norm`'s operations, in the same order (so the same values), in one new array and one row vector."""
    out = np.multiply(x, x)  # (..., w)
    r = np.add.reduce(out, axis=-1, keepdims=True)  # (..., 1)
    r /= x.shape[-1]  # the mean square, as np.mean divides its sum
    r += eps
    np.sqrt(r, out=r)
    np.divide(1.0, r, out=r)
    np.multiply(x, r, out=out)
    out *= scale
    return out


def rms_norm_vjp(x: Any, weight: Any, eps: float, dy: Any, offset: float = 0.0) -> tuple[Any, Any]:
    r"""The gradients of :func:`rms_norm` for the upstream gradient ``dy``: ``(dx, dweight)``.

    With :math:`r = (\operatorname{mean}(x^2) + \varepsilon)^{-1/2}` per row and
    :math:`u = dy \odot (c + g)`:

    .. math::

        dx = r\,u - r^3\,x\,\frac{x \cdot u}{w}, \qquad dg = \sum_{\text{rows}} dy \odot x\,r

    Parameters
    ----------
    x : (..., w) array
        The rows before the norm.
    weight : (w,) or (1, w) array
        The gain ``g``; ``dweight`` has its shape.
    eps, offset : float
        As in :func:`rms_norm`.
    dy : (..., w) array
        The gradient of a loss with respect to ``rms_norm(x, weight, eps, offset)``.

    Examples
    --------
    >>> x, g = np.array([[3.0, 4.0]]), np.array([1.0, 2.0])
    >>> dx, dg = rms_norm_vjp(x, g, 0.0, np.array([[1.0, 0.0]]))  # d/dx of the first output, x₀ r g₀
    >>> dx.round(6), dg.round(6)
    (array([[ 0.181019, -0.135765]]), array([0.848528, 0.      ]))
    """
    xp = array_namespace(x, weight, dy)
    width = int(x.shape[-1])
    gain = _gain(xp, "weight", weight, width)
    r = 1.0 / xp.sqrt(xp.mean(x * x, axis=-1, keepdims=True) + eps)  # (..., 1)
    u = dy * (gain + offset if offset else gain)  # (..., w)
    dx = r * u - x * (r * r * r) * xp.sum(x * u, axis=-1, keepdims=True) / width
    dweight = xp.reshape(xp.sum(xp.reshape(dy * x * r, (-1, width)), axis=0), tuple(weight.shape))
    return dx, dweight
