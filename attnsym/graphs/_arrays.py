"""Turning attention matrices from any array library into validated float64 NumPy arrays.

Accepted inputs: NumPy arrays, nested lists, CuPy arrays (copied to the host with ``.get()``),
PyTorch tensors (``.detach().cpu()``) and the per-layer tuple of ``(batch, heads, n, n)``
tensors that Hugging Face models return with ``output_attentions=True``.

Validation policy (the same everywhere in :mod:`attnsym.graphs`):

* non-square matrices, non-finite values and negative weights are **errors**
  (:class:`~attnsym.errors.ShapeError`);
* rows that do not sum to 1 within ``ROW_SUM_ATOL`` give a :class:`RowSumWarning`, because
  attention matrices from other sources (pruned, averaged over heads, fully masked rows, float16
  exports) legitimately break the rule; all-zero rows (fully masked queries) never warn.
"""

from __future__ import annotations

import math
import numbers
import os
import sys
import warnings
from types import FrameType
from typing import Any

import numpy as np

from ..errors import ShapeError

__all__ = ["ROW_SUM_ATOL", "RowSumWarning", "as_attention_stack", "to_numpy"]

#: rows of an attention matrix must sum to 1 within this absolute tolerance, else a warning
ROW_SUM_ATOL = 1e-6


class RowSumWarning(UserWarning):
    """An attention matrix has rows that do not sum to 1 (nor to 0, a fully masked query)."""


def to_numpy(array: Any, name: str = "A") -> np.ndarray:
    """A float64 NumPy copy of a NumPy/CuPy array, PyTorch tensor or nested list.

    >>> to_numpy([[1, 0], [0.5, 0.5]]).dtype
    dtype('float64')
    """
    if hasattr(array, "detach") and hasattr(array, "cpu"):  # torch.Tensor
        array = array.detach().cpu()
        if str(array.dtype) in ("torch.bfloat16", "torch.float16"):
            array = array.float()
        array = array.numpy()
    elif type(array).__module__.split(".")[0] == "cupy":
        array = array.get()
    try:
        complex_input = np.iscomplexobj(array)
    except (TypeError, ValueError):  # ragged lists: reported below
        complex_input = False
    if complex_input:  # float64 conversion would drop the imaginary part with only a warning
        raise ShapeError(f"{name} must hold real numbers (got complex dtype {np.asarray(array).dtype})")
    try:
        out = np.array(array, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ShapeError(f"{name} must be a numeric array (got {type(array).__name__}: {error})") from None
    return out


def check_values(A: np.ndarray, name: str, *, nonnegative: bool = True) -> None:
    """Errors for non-finite (and, for attention, negative) weights, naming the first offender."""
    while A.ndim > 2 and A.shape[0] == 1:  # report indices in the user's (n, n) terms
        A = A[0]
    if not np.all(np.isfinite(A)):
        idx = tuple(int(i) for i in np.argwhere(~np.isfinite(A))[0])
        raise ShapeError(f"{name} must contain only finite weights (got {float(A[idx])} at index {idx})")
    if nonnegative and np.any(A < 0):
        idx = tuple(int(i) for i in np.argwhere(A < 0)[0])
        raise ShapeError(
            f"attention weights in {name} must be non-negative (got {float(A[idx])!r} at index {idx}); "
            "for signed weights use mlp_graph"
        )


def check_row_sums(A: np.ndarray, name: str = "A", *, atol: float = ROW_SUM_ATOL) -> None:
    """Warn (:class:`RowSumWarning`) about rows summing neither to 1 nor to 0 within ``atol``."""
    while A.ndim > 2 and A.shape[0] == 1:
        A = A[0]
    sums = A.sum(axis=-1)
    bad = ~(np.isclose(sums, 1.0, rtol=0, atol=atol) | (sums == 0))
    if np.any(bad):
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        where = idx[0] if len(idx) == 1 else idx
        warnings.warn(
            f"{np.count_nonzero(bad)} row(s) of {name} do not sum to 1 within {atol:g} "
            f"(e.g. row {where} sums to {float(sums[idx])!r}); rows of a softmax attention matrix sum to 1",
            RowSumWarning,
            stacklevel=_caller_level(),
        )


def _caller_level() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside attnsym.graphs."""
    here = os.path.dirname(os.path.abspath(__file__))
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == here:
        frame, level = frame.f_back, level + 1
    return level


def as_attention_stack(attentions: Any, *, batch: int = 0, name: str = "A", check: bool = True) -> np.ndarray:
    """Normalise any supported attention input to a ``(layers, heads, n, n)`` float64 array.

    Parameters
    ----------
    attentions : array-like, tensor, or sequence of them
        ``(n, n)`` — one head of one layer; ``(heads, n, n)`` — one layer;
        ``(layers, heads, n, n)`` — a stack; ``(layers, batch, heads, n, n)`` — a stacked
        Hugging Face output. A list or tuple is one entry per layer, each ``(n, n)``,
        ``(heads, n, n)`` or ``(batch, heads, n, n)`` (the Hugging Face
        ``output_attentions=True`` format). Nested Python lists of numbers are read as one
        array (so a 3-level nested list is ``(heads, n, n)``).
    batch : int, default 0
        Which batch element to take where the input has a batch axis.
    name : str
        The argument name used in error messages.
    check : bool, default True
        Validate (square, finite, non-negative; warn on row sums).

    Returns
    -------
    numpy.ndarray
        Shape ``(layers, heads, n, n)``.

    Raises
    ------
    ShapeError
        For a non-square or wrongly-ranked input, inconsistent layers, negative or non-finite
        weights, or a batch index out of range.

    Examples
    --------
    >>> as_attention_stack(np.eye(3)).shape
    (1, 1, 3, 3)
    >>> as_attention_stack([np.ones((2, 4, 3, 3)) / 3] * 5).shape     # HF: 5 layers, batch 2, 4 heads
    (5, 4, 3, 3)
    >>> as_attention_stack(np.ones((2, 3)))
    Traceback (most recent call last):
    ...
    attnsym.errors.ShapeError: A must be square in its last two axes, (..., n, n) (got shape (2, 3))
    """
    if not isinstance(batch, numbers.Integral) or isinstance(batch, bool):
        raise ShapeError(f"batch must be an integer index (got {batch!r})")
    if isinstance(attentions, (list, tuple)) and attentions and not isinstance(attentions[0], numbers.Number) \
            and getattr(attentions[0], "ndim", None) != 1 and not isinstance(attentions[0], (list, tuple)):
        layers = [_one_layer(to_numpy(a, f"{name}[{k}]"), batch, f"{name}[{k}]") for k, a in enumerate(attentions)]
        shapes = {layer.shape for layer in layers}
        if len(shapes) != 1:
            raise ShapeError(f"every layer of {name} must have the same (heads, n, n) shape (got {sorted(shapes)})")
        stack = np.stack(layers)
    else:
        arr = to_numpy(attentions, name)
        if arr.ndim < 2:
            raise ShapeError(f"{name} must be a square (n, n) matrix or a stack of them (got shape {arr.shape})")
        _check_square(arr, name)
        if arr.ndim == 2:
            stack = arr[None, None]
        elif arr.ndim == 3:
            stack = arr[None]
        elif arr.ndim == 4:
            stack = arr
        elif arr.ndim == 5:
            _check_batch(arr.shape[1], batch, name)
            stack = arr[:, batch]
        else:
            raise ShapeError(
                f"{name} must have at most 5 axes (layers, batch, heads, n, n) (got {arr.ndim} axes, shape {arr.shape})"
            )
    if stack.shape[-1] == 0:
        raise ShapeError(f"{name} must have at least one position (got shape {stack.shape})")
    if check:
        check_values(stack, name)
        check_row_sums(stack, name)
    return np.ascontiguousarray(stack)


def _check_square(arr: np.ndarray, name: str) -> None:
    if arr.ndim < 2 or arr.shape[-1] != arr.shape[-2]:
        raise ShapeError(f"{name} must be square in its last two axes, (..., n, n) (got shape {arr.shape})")


def _check_batch(size: int, batch: int, name: str) -> None:
    if not -size <= batch < size:
        raise ShapeError(f"batch={batch} is out of range for {name} with batch size {size}")


def _one_layer(arr: np.ndarray, batch: int, name: str) -> np.ndarray:
    _check_square(arr, name)
    if arr.ndim == 2:
        return arr[None]
    if arr.ndim == 3:
        return arr
    if arr.ndim == 4:
        _check_batch(arr.shape[0], batch, name)
        return arr[batch]
    raise ShapeError(
        f"each layer {name} must be (n, n), (heads, n, n) or (batch, heads, n, n) (got shape {arr.shape})"
    )


def check_pruning(threshold: Any, top_k: Any) -> tuple[float | None, int | None]:
    """Validate ``threshold`` (a finite number >= 0) and ``top_k`` (an integer >= 1)."""
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real) or not math.isfinite(threshold) \
                or threshold < 0:
            raise ShapeError(f"threshold must be a finite number >= 0 (got threshold={threshold!r})")
        threshold = float(threshold)
    if top_k is not None:
        if isinstance(top_k, bool) or not isinstance(top_k, numbers.Integral) or top_k < 1:
            raise ShapeError(f"top_k must be an integer >= 1 (got top_k={top_k!r})")
        top_k = int(top_k)
    return threshold, top_k
