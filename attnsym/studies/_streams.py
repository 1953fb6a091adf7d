"""Independent random streams for the parts of a study, reproducible from one seed and a key.

A study takes ``rng``: a callable from a key (strings and integers) to a fresh
``numpy.random.Generator``, so each part (the score draws, the gradient at each ``d``, the
training run) has a stream of its own and adding a part changes no other part's numbers.
:func:`streams` builds one from a seed; a claim passes its ``CheckContext.rng`` (the same
construction).

>>> rng = streams(0)
>>> float(rng("a").standard_normal()) == float(streams(0)("a").standard_normal())
True
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np

__all__ = ["Streams", "seed_sequence", "streams"]

#: a key -> an independent generator
Streams = Callable[..., np.random.Generator]


def seed_sequence(seed: int, *key: int | str) -> np.random.SeedSequence:
    """An independent seed for one part, reproducible from ``seed`` and ``key`` (``SeedSequence`` hashes them)."""
    words = [seed] + [int.from_bytes(hashlib.sha256(str(k).encode()).digest()[:4], "little") for k in key]
    return np.random.SeedSequence(words)


def streams(seed: int, *prefix: int | str) -> Streams:
    """The generator of every key under ``prefix``, from ``seed``."""

    def rng(*key: int | str) -> np.random.Generator:
        return np.random.default_rng(seed_sequence(seed, *prefix, *key))

    return rng
