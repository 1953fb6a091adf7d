"""Types of the public API: what an array argument must offer.

attnsym's numeric functions take NumPy, CuPy or PyTorch arrays (see :mod:`attnsym.numeric.backend`);
:class:`Array` is what they have in common, as a structural type (einops ``_TensorLike``-style),
so a type checker accepts all three without importing any of them.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["Array"]


@runtime_checkable
class Array(Protocol):
    """An n-dimensional array: NumPy ``ndarray``, CuPy ``ndarray`` or ``torch.Tensor``.

    >>> import numpy as np
    >>> isinstance(np.zeros((2, 3)), Array), isinstance([[0.0]], Array)
    (True, False)
    """

    @property
    def shape(self) -> Any: ...

    @property
    def ndim(self) -> int: ...

    @property
    def dtype(self) -> Any: ...

    def __getitem__(self, key: Any, /) -> Any: ...
