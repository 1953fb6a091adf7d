"""External references: the same layer computed by a library attnsym did not write (PyTorch), when it is installed.

attnsym never needs PyTorch; where it is installed, a claim can compare attnsym with it instead
of with itself. :func:`torch_multihead_attention` copies attnsym's weights into a
``torch.nn.MultiheadAttention`` and runs it in float64; :func:`torch_multihead_parameter_count`
counts the parameters of the module PyTorch builds for ``heads`` heads. The weight layout:

* ``in_proj_weight`` is (3 d_model, d_model) and applies ``x Wᵀ``, so it is
  ``[W_Qᵀ; W_Kᵀ; W_Vᵀ]`` (attnsym's ``W`` are (d_model, heads·d_k) and apply ``X W``);
* ``out_proj.weight`` is ``W_Oᵀ``; ``in_proj_bias`` is ``[b_Q, b_K, b_V]``, ``out_proj.bias`` is ``b_O``;
* PyTorch splits each projection into ``heads`` blocks of ``d_model / heads`` columns, in
  order, and scales the scores by ``1/√(d_model/heads)`` — attnsym's defaults.

>>> if torch_installed():
...     print(torch_multihead_parameter_count(8, 2, bias=False))
... else:
...     print(4 * 8**2)
256
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from typing import Any

import numpy as np

from ._checks import non_negative_int, positive_int
from .errors import BackendError, ShapeError

__all__ = ["torch_installed", "torch_multihead_attention", "torch_multihead_parameter_count", "torch_version",
           "transformers_installed", "transformers_window_pattern"]


def torch_installed() -> bool:
    """Whether PyTorch can be imported (looked up without importing it).

    >>> isinstance(torch_installed(), bool)
    True
    """
    return importlib.util.find_spec("torch") is not None


def _torch():
    if not torch_installed():
        raise BackendError("PyTorch is not installed; the torch reference needs it (pip install torch==2.13.0)")
    import torch

    return torch


def torch_version() -> str:
    """The installed PyTorch version (raises :class:`~attnsym.BackendError` without PyTorch)."""
    return str(_torch().__version__)


def torch_multihead_parameter_count(d_model: int, heads: int, *, bias: bool = False) -> int:
    """Parameters of ``torch.nn.MultiheadAttention(d_model, heads, bias=bias)``, counted by PyTorch.

    Raises
    ------
    BackendError
        PyTorch is not installed.
    ShapeError
        ``heads`` does not divide ``d_model`` (PyTorch refuses such a module).
    """
    d_model, heads = positive_int("d_model", d_model), positive_int("heads", heads)
    if d_model % heads:
        raise ShapeError(f"heads must divide d_model for torch.nn.MultiheadAttention (got d_model={d_model}, "
                         f"heads={heads})")
    module = _torch().nn.MultiheadAttention(d_model, heads, bias=bias)
    return int(sum(p.numel() for p in module.parameters()))


def torch_multihead_attention(X: Any, weights: Mapping[str, Any], *, heads: int, causal: bool = False
                              ) -> tuple[np.ndarray, np.ndarray]:
    """``Y`` and the per-head weights ``A`` of ``torch.nn.MultiheadAttention`` with attnsym's weights copied in.

    Parameters
    ----------
    X : (n, d_model) array
    weights : mapping
        ``W_Q, W_K, W_V`` (d_model, d_model), ``W_O`` (d_model, d_model), optionally
        ``b_Q, b_K, b_V, b_O`` (d_model,) or (1, d_model): attnsym's names and layout.
    heads : int
        Heads of width ``d_model / heads``.
    causal : bool, default False
        Query i attends to keys j <= i (PyTorch's mask is ``True`` where *not* allowed).

    Returns
    -------
    Y : (n, d_model) float64 array
    A : (heads, n, n) float64 array

    Raises
    ------
    BackendError
        PyTorch is not installed.
    ShapeError
        The weights do not have the square layout ``nn.MultiheadAttention`` supports.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((3, 4))
    >>> W = {name: rng.standard_normal((4, 4)) / 2 for name in ("W_Q", "W_K", "W_V", "W_O")}
    >>> if torch_installed():
    ...     Y, A = torch_multihead_attention(X, W, heads=2)
    ...     print(Y.shape, A.shape, np.allclose(A.sum(axis=-1), 1))
    ... else:
    ...     print((3, 4), (2, 3, 3), True)
    (3, 4) (2, 3, 3) True
    """
    heads = positive_int("heads", heads)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ShapeError(f"X must have shape (n, d_model) (got {X.shape})")
    n, E = X.shape
    if E % heads:
        raise ShapeError(f"heads must divide d_model for torch.nn.MultiheadAttention (got d_model={E}, heads={heads})")
    W = {}
    for name in ("W_Q", "W_K", "W_V", "W_O"):
        if name not in weights:
            raise ShapeError(f"weights must contain {name} (got {sorted(weights)})")
        W[name] = np.asarray(weights[name], dtype=np.float64)
        if W[name].shape != (E, E):
            raise ShapeError(f"{name} must have shape (d_model, d_model) = ({E}, {E}) for torch.nn.MultiheadAttention "
                             f"(got {W[name].shape})")
    biases = [name for name in ("b_Q", "b_K", "b_V", "b_O") if name in weights]
    if biases and len(biases) != 4:
        raise ShapeError(f"weights must contain all of b_Q, b_K, b_V, b_O or none (got {biases})")
    b = {name: np.asarray(weights[name], dtype=np.float64).reshape(-1) for name in biases}
    for name, value in b.items():
        if value.shape != (E,):
            raise ShapeError(f"{name} must have {E} entries (got shape {np.shape(weights[name])})")
    torch = _torch()
    module = torch.nn.MultiheadAttention(E, heads, bias=bool(b), batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        module.in_proj_weight.copy_(torch.from_numpy(np.concatenate([W["W_Q"].T, W["W_K"].T, W["W_V"].T])))
        module.out_proj.weight.copy_(torch.from_numpy(W["W_O"].T.copy()))
        if b:
            module.in_proj_bias.copy_(torch.from_numpy(np.concatenate([b["b_Q"], b["b_K"], b["b_V"]])))
            module.out_proj.bias.copy_(torch.from_numpy(b["b_O"]))
        x = torch.from_numpy(X)[None]  # (1, n, E)
        forbidden = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1) if causal else None
        Y, A = module(x, x, x, attn_mask=forbidden, need_weights=True, average_attn_weights=False)
    return Y[0].numpy().copy(), A[0].numpy().copy()


def transformers_installed() -> bool:
    """Whether Hugging Face transformers (and PyTorch, which its mask functions need) can be imported.

    >>> isinstance(transformers_installed(), bool)
    True
    """
    return torch_installed() and importlib.util.find_spec("transformers") is not None


def transformers_window_pattern(n: int, window: int, *, causal: bool) -> np.ndarray:
    """The ``(n, n)`` bool pattern of transformers' own sliding-window mask function (``True`` = may attend).

    ``causal``: ``transformers.masking_utils.sliding_window_causal_mask_function(window)``
    (``kv_idx > q_idx − window`` and ``kv_idx ≤ q_idx``: the window counts the query); otherwise
    ``sliding_window_bidirectional_mask_function(window)`` (``|q_idx − kv_idx| ≤ window``:
    ``window`` keys on each side). Called on index grids, as transformers' ``sdpa_mask`` does.

    Raises
    ------
    BackendError
        Without transformers or PyTorch.
    """
    n = positive_int("n", n)
    window = positive_int("window", window) if causal else non_negative_int("window", window)
    if not transformers_installed():
        raise BackendError("transformers is not installed; its mask functions need it (pip install transformers)")
    torch = _torch()
    from transformers import masking_utils  # on use: importing transformers takes seconds

    make = (masking_utils.sliding_window_causal_mask_function if causal
            else masking_utils.sliding_window_bidirectional_mask_function)
    q, kv = torch.arange(n)[:, None], torch.arange(n)[None, :]
    return np.asarray(make(window)(0, 0, q, kv).numpy(), dtype=bool)
