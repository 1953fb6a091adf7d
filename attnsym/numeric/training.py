"""Moved: the training run is a study, :mod:`attnsym.studies.training`; this path re-exports it.

Kept for one release so that code importing ``attnsym.numeric.training`` keeps working; its
result is now a typed ``TrainingRun`` instead of a dict. Nothing inside attnsym imports this
module (``tests/layers.py``, ``FACADES``).
"""

from __future__ import annotations

from ..studies.intervals import t_interval
from ..studies.training import ARMS, VJP_SEQUENCES, retrieval_batch, retrieval_gradients, train_retrieval

__all__ = ["ARMS", "VJP_SEQUENCES", "retrieval_batch", "retrieval_gradients", "t_interval", "train_retrieval"]
