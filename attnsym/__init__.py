"""attnsym — the mathematics of transformer self-attention, derived, verified and drawn.

Self-attention is *input-conditioned routing*: an MLP mixes features with a fixed matrix
(``y = W x``); attention first computes its mixing matrix from the data,
``A(X) = softmax(Q Kᵀ / sqrt(d_k))``, then applies it, ``Y = A(X) V``.

The public API is re-exported here. Heavy modules (SymPy layers, networkx, matplotlib) are
imported lazily on first use, so ``import attnsym`` stays fast and never imports matplotlib.

>>> import attnsym as at
>>> at.AttentionSpec(n=2, d_model=2).describe()
'n=2, d_model=2, heads=1 (d_k=2, d_v=2), scale 1/sqrt(d_k)'
"""

from __future__ import annotations

import importlib
from typing import Any

from .errors import (
    AttnsymError,
    BackendError,
    FileFormatError,
    OutputError,
    OverwriteError,
    ShapeError,
    SizeLimitError,
    SpecError,
)
from .spec import AttentionSpec, RopeScaling

__version__ = "0.1.0"

# public name -> module that defines it (imported on first access, PEP 562)
_LAZY: dict[str, str] = {
    "derive": "attnsym.derivation",
    "Derivation": "attnsym.derivation",
    "Step": "attnsym.derivation",
    "gradients": "attnsym.symbolic",
    "validate": "attnsym.validation",
    "verify": "attnsym.claims",
    "Evidence": "attnsym.claims",
    "HeadReport": "attnsym.heads",
    "audit": "attnsym.audits",
}
_SUBMODULES = ("symbolic", "numeric", "graphs", "models", "heads", "audits", "claims", "plots", "testing", "render",
               "tables")

__all__ = [
    "AttentionSpec",
    "AttnsymError",
    "BackendError",
    "FileFormatError",
    "OutputError",
    "OverwriteError",
    "RopeScaling",
    "ShapeError",
    "SizeLimitError",
    "SpecError",
    "__version__",
    *sorted(_LAZY),
    *_SUBMODULES,
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"attnsym.{name}")
    else:
        raise AttributeError(f"module 'attnsym' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
