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
