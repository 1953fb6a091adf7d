"""Which keys a sliding window admits, by each source's convention, and the layer of the window against its band.

Three conventions for a window ``w`` (``True`` = query ``i`` may attend to key ``j``):

=====================================  ==========================  =====================  ==============
source                                 causal                      not causal             keys (not causal)
=====================================  ==========================  =====================  ==============
attnsym (``AttentionSpec.window``)     ``0 ≤ i − j < w``           ``|i − j| < w``        ``2w − 1``
transformers ``masking_utils``         ``0 ≤ i − j < w``           ``|i − j| ≤ w``        ``2w + 1``
Longformer §3.1 (``w`` even)           —                           ``|i − j| ≤ w/2``      ``w + 1``
=====================================  ==========================  =====================  ==============

The causal window counts the query itself in attnsym and in transformers
(``sliding_window_causal_mask_function``: ``kv_idx > q_idx − w`` and ``kv_idx ≤ q_idx``: Mistral,
Gemma 2). Without the causal mask attnsym mirrors its causal window (``w − 1`` keys on each
side and the query), so attnsym's window ``w`` is transformers' bidirectional window ``w − 1``
(``sliding_window_bidirectional_mask_function``: ``|q_idx − kv_idx| ≤ w``) and Longformer's
window ``2(w − 1)`` ("½w tokens on each side"). :func:`transformers_convention` transcribes transformers'
two functions (a test ties the transcription to transformers' own functions where it is
installed; :func:`study` calls them too when asked).

:func:`study` compares the spec's pattern with each convention, and the symbolic and numeric
layers of the window with the same layers given transformers' band as an explicit mask.

>>> attnsym_pattern(5, 2, causal=False).sum(axis=1).tolist()   # 2w − 1 = 3 keys inside the sequence
[2, 3, 3, 3, 2]
>>> bool((attnsym_pattern(9, 3, causal=False) == transformers_convention(9, 3 - 1, causal=False)).all())
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..numeric import attention as numeric_attention
from ..numeric import random_inputs
from ..references import transformers_installed, transformers_window_pattern
from ..spec import AttentionSpec
from ..symbolic.matrices import attention as symbolic_attention

__all__ = ["NumericGap", "PatternCase", "WindowResult", "attnsym_pattern", "longformer_convention", "study",
           "transformers_convention"]

def _grid(n: int) -> tuple[np.ndarray, np.ndarray]:
    i = np.arange(n)
    return i[:, None], i[None, :]  # (n, 1) queries, (1, n) keys


def attnsym_pattern(n: int, w: int, *, causal: bool) -> np.ndarray:
    """The spec's pattern of a window ``w`` (``AttentionSpec(window=w).allowed``), as an (n, n) bool array."""
    return np.array(AttentionSpec(n=n, d_model=1, causal=causal, window=w).allowed, dtype=bool)


def transformers_convention(n: int, w: int, *, causal: bool) -> np.ndarray:
    """transformers' ``sliding_window_causal_mask_function(w)`` / ``sliding_window_bidirectional_mask_function(w)``,
    transcribed: ``q − w < kv ≤ q`` / ``|q − kv| ≤ w``."""
    q, kv = _grid(n)
    return (kv > q - w) & (kv <= q) if causal else np.abs(q - kv) <= w


def longformer_convention(n: int, w: int) -> np.ndarray:
    """Longformer §3.1: a window of (even) size ``w`` attends ``½w`` tokens on each side (and the token itself)."""
    q, kv = _grid(n)
    return np.abs(q - kv) <= w // 2


@dataclass(frozen=True)
class PatternCase:
    """One (n, w, causal): does the spec's pattern equal transformers' (window ``w`` causal, ``w − 1`` not)?

    ``library`` is True when transformers' own mask function was called (else its transcription).
    """

    n: int
    w: int
    causal: bool
    equals_transformers: bool
    library: bool


@dataclass(frozen=True)
class NumericGap:
    """The float64 layer of a window against the layer with transformers' band as an explicit mask."""

    n: int
    w: int
    causal: bool
    weights_gap: float
    output_gap: float
    blockwise_gap: float | None


@dataclass(frozen=True)
class WindowResult:
    """What :func:`study` found: pattern cases, Longformer's mapping, the symbolic and numeric layers."""

    cases: tuple[PatternCase, ...]
    longformer_equal: bool
    symbolic_equal: bool
    numeric: tuple[NumericGap, ...]

    @property
    def patterns_equal(self) -> bool:
        """Every case equals transformers' convention (``w`` causal, ``w − 1`` not)."""
        return all(c.equals_transformers for c in self.cases)


def _reference(n: int, w: int, causal: bool, library: bool) -> np.ndarray:
    """transformers' band for attnsym's window ``w`` (its own function when ``library``)."""
    tw = w if causal else w - 1
    return transformers_window_pattern(n, tw, causal=causal) if library else transformers_convention(n, tw, causal=causal)


def _numeric_gap(n: int, w: int, causal: bool, seed: int, blockwise: bool) -> NumericGap:
    spec_w = AttentionSpec(n=n, d_model=8, causal=causal, window=w)
    spec_b = AttentionSpec(n=n, d_model=8, mask=_reference(n, w, causal, False).tolist())
    v = random_inputs(spec_w, seed=seed)
    args = (v["X"], v["W_Q"], v["W_K"], v["W_V"])
    (Y_w, A_w), (Y_b, A_b) = numeric_attention(*args, spec=spec_w), numeric_attention(*args, spec=spec_b)
    gap = lambda a, b: float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
    blocks = gap(numeric_attention(*args, spec=spec_w, return_weights=False, block_size=16), Y_b) if blockwise else None
    return NumericGap(n, w, causal, gap(A_w, A_b), gap(Y_w, Y_b), blocks)


def study(sizes: tuple[int, ...] = (5, 9), seed: int = 0, *, quick: bool, library: bool | None = None) -> WindowResult:
    """The spec's window against transformers' and Longformer's conventions; its layers against the band as a mask.

    Parameters
    ----------
    sizes : tuple of int
        Sequence lengths of the pattern cases (windows 1, 2, 3, n, n + 3, causal or not).
    seed : int
        Seed of the numeric layers' inputs.
    quick : bool
        Quick: the plain numeric path at n = 64; full: the blockwise path too, and n = 300.
    library : bool, optional
        Call transformers' own mask functions (default: in full mode, when installed; importing
        transformers takes seconds).
    """
    library = (not quick and transformers_installed()) if library is None else library
    cases = tuple(PatternCase(n, w, c, bool(np.array_equal(attnsym_pattern(n, w, causal=c), _reference(n, w, c, library))),
                              library)
                  for n in sizes for w in (1, 2, 3, n, n + 3) for c in (True, False))
    longformer = all(np.array_equal(attnsym_pattern(n, w // 2 + 1, causal=False), longformer_convention(n, w))
                     for n in sizes for w in (2, 4, 6))
    spec_w = AttentionSpec(n=3, d_model=1, causal=True, window=2)
    spec_b = AttentionSpec(n=3, d_model=1, mask=_reference(3, 2, True, False).tolist())
    sym_w, sym_b = symbolic_attention(spec_w), symbolic_attention(spec_b)
    runs = ((64, 8, True), (64, 8, False)) + (() if quick else ((300, 32, True),))
    return WindowResult(cases=cases, longformer_equal=longformer, symbolic_equal=bool(sym_w.A == sym_b.A and sym_w.Y == sym_b.Y),
                        numeric=tuple(_numeric_gap(n, w, c, seed, not quick) for n, w, c in runs))
