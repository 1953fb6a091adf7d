"""Claims about the building blocks: ``softmax-jacobian``, ``sinusoidal-positions``, ``gelu``."""

from __future__ import annotations
