"""Studies: the experiments and proofs about attention, each asking a question of the engines.

The floor between the engines and the verdicts::

    engines  (symbolic, numeric, models, graphs)   compute what a spec gives
    studies  (this package)                        ask a question of engines, return a typed result
    claims                                         judge a study's result against claims.toml
    plots                                          draw the same result object the claim judged

One module per topic, each with a function ``study(spec or sizes, rng, *, quick)`` returning a
frozen dataclass with named, typed fields (no display strings as keys): the claim reads its
fields, the figure draws them, and neither recomputes anything. ``rng`` is a key -> generator
callable (:func:`streams`), so every part of a study has a stream of its own. Sampled numbers
are :class:`Estimate` s (a value and its 95 % interval, :mod:`attnsym.studies.intervals`);
float64 comparisons and weight draws are those of :mod:`attnsym.studies.compare`.
An engine never imports a study; a study never imports a claim or a plot
(``tests/test_layers.py``).

=========================================  ================================================
module                                     question
=========================================  ================================================
:mod:`attnsym.studies.saturation`          do unscaled scores saturate softmax as d grows,
                                           and does learning slow? (``softmax-saturation``)
:mod:`attnsym.studies.training`            the seeded SGD run that study uses
:mod:`attnsym.studies.alibi`               what does ALiBi's bias do to entropy and paths?
                                           (``alibi-recency``)
:mod:`attnsym.studies.variance`            what are the moments of q·k, and of real scores?
                                           (``variance-scaling``)
:mod:`attnsym.studies.qk_norm`             what does QK-norm bound? (``qk-norm-bound``)
:mod:`attnsym.studies.lipschitz`           is dot-product attention Lipschitz? (``not-lipschitz``)
:mod:`attnsym.studies.window`              which keys does a sliding window admit, per
                                           convention? (``window-banded-mask``)
:mod:`attnsym.studies.variants`            what do a sink, latent attention and a layer
                                           without positions compute? (``sink-semantics``,
                                           ``mla-absorbed``, ``nope-position-blind``)
:mod:`attnsym.studies.multi_head`          do heads of width d/h keep the parameter count,
                                           and is the layer its heads concatenated times W_O?
                                           (``multi-head``)
:mod:`attnsym.studies.cost`                what does attention cost in operations and memory,
                                           and what does a K/V cache save? (``quadratic-cost``,
                                           ``kv-cache``)
:mod:`attnsym.studies.real_text`           how do a real model's heads spread their
                                           attention as a text grows, beside the bounds of
                                           ``entropy-lower-bound`` and ``dispersion``?
:mod:`attnsym.studies.identifiability`     does AV determine A? (``non-identifiable``)
:mod:`attnsym.studies.bottleneck`          which patterns can a width d_k reach?
                                           (``low-rank-bottleneck``)
:mod:`attnsym.studies.in_context`          is one linear attention layer a GD step?
                                           (``icl-gradient-descent``)
:mod:`attnsym.studies.certificates`        are two variant specs the same layer?
                                           (``gqa-equals-repeated-kv``,
                                           ``rope-pairing-permutation``)
:mod:`attnsym.studies.mup`                 how do correlated q·k logits grow? (``mup-scaling``)
:mod:`attnsym.studies.performer`           is FAVOR+ unbiased? (``performer-unbiased``)
:mod:`attnsym.studies.kernel_smoother`     is attention a (symmetric) kernel smoother?
                                           (``kernel-smoother``)
:mod:`attnsym.studies.linear_attention`    is causal linear attention an RNN?
                                           (``linear-attention-rnn``)
:mod:`attnsym.studies.softmax_jacobian`    is ∂softmax/∂z = diag(a) − a aᵀ?
                                           (``softmax-jacobian``)
:mod:`attnsym.studies.sinusoidal`          what do sinusoidal positions compute?
                                           (``sinusoidal-positions``)
:mod:`attnsym.studies.gelu`                how far is GELU's tanh approximation? (``gelu``)
:mod:`attnsym.studies.softmax_limits`      dispersion, the Jacobian's norm, the entropy bound
                                           (``dispersion``, ``softmax-jacobian-norm``,
                                           ``entropy-lower-bound``)
:mod:`attnsym.studies.symmetry`            when is Q Kᵀ symmetric? (``qk-asymmetry``)
:mod:`attnsym.studies.equivariance`        which symmetries does a mixing layer have?
                                           (``permutation-equivariance``, ``no-locality-bias``)
:mod:`attnsym.studies.rank_collapse`       does pure attention lose rank? (``rank-collapse``)
:mod:`attnsym.studies.table1`              how do path length and depth grow with n?
                                           (``global-path-length``, ``parallelism``)
:mod:`attnsym.studies.positions`           what do relative positions keep? (``rope-relative``,
                                           ``rope-shift-invariance``, ``rope-long-range-decay``)
:mod:`attnsym.studies.softcap`             what does soft-capping do? (``softcap-facts``)
=========================================  ================================================

Submodules are imported by name (``from attnsym.studies import saturation``); this package
loads only the streams and the intervals.

>>> Estimate(0.5, 0.4, 0.6).interval
(0.4, 0.6)
"""

from __future__ import annotations

from ._streams import Streams, seed_sequence, streams
from .intervals import Estimate

__all__ = ["Estimate", "Streams", "seed_sequence", "streams"]
