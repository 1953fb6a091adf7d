"""Moved: the saturation experiment is a study, :mod:`attnsym.studies.saturation`; this path re-exports it.

Kept for one release so that code importing ``attnsym.numeric.saturation`` keeps working; its
results are now typed (``SaturationRow``, ``GradientRow``) instead of dicts. Nothing inside
attnsym imports this module (``tests/layers.py``, ``FACADES``).
"""

from __future__ import annotations

from ..studies.intervals import binomial_half_quantile, mean_interval, median_interval, wilson_interval
from ..studies.saturation import VJP_CHECKED_DRAWS, gradient_ratio, softmax_saturation, w_q_gradients

__all__ = ["VJP_CHECKED_DRAWS", "binomial_half_quantile", "gradient_ratio", "mean_interval", "median_interval",
           "softmax_saturation", "w_q_gradients", "wilson_interval"]
