"""Claims about the 1/sqrt(d_k) scaling of attention scores: ``variance-scaling``, ``softmax-saturation``."""

from __future__ import annotations
