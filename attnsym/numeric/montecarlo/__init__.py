"""Seeded, chunked, multi-threaded Monte Carlo for the statistics of attention scores.

The experiments here are bound by random-number generation: a dot product of two ``d``-vectors
needs ``2 d`` normal draws and only ``2 d`` flops. So they

* draw into preallocated ``(2 d, c)`` buffers (``Generator.standard_normal(out=...)``, the
  fastest path NumPy has, with the ``SFC64`` bit generator) and reduce over the first axis;
* split the samples into fixed **blocks**, each with its own independent stream from
  ``SeedSequence(seed).spawn(n_blocks)``, run the blocks on a thread pool (NumPy releases the
  GIL while it fills arrays and while it multiplies and sums), and merge the per-block moments
  **in block order** — so the result depends on the seed only, not on the number of workers;
* keep memory bounded: one ``(2 d, c)`` buffer of about 2 MiB per worker, whatever the sample size.

Moments are accumulated as centred power sums and merged with the pairwise formulas of
Pébay (2008), so a large mean does not destroy the variance estimate.

How many samples? For a sample variance ``s^2`` of ``N`` i.i.d. draws,
``Var[s^2] ≈ (mu_4 - sigma^4) / N``, i.e. a *relative* standard error
``sqrt((kappa - 1) / N)`` with ``kappa = mu_4 / sigma^4`` the kurtosis. For ``q·k`` with
``N(0, 1)`` components ``kappa = 3 + 6/d`` (exact, :mod:`attnsym.symbolic.stats`), hence the
rule ``SE ≈ sqrt((2 + 6/d) / N)``, and :func:`samples_for_precision` inverts it:
``N = z^2 (kappa - 1) / eps^2`` for a confidence-interval half-width ``eps`` (relative).

The package, by purpose: :mod:`~attnsym.numeric.montecarlo.moments` (mergeable sample moments,
intervals, sample sizes), :mod:`~attnsym.numeric.montecarlo.engine` (blocks, streams, threads),
:mod:`~attnsym.numeric.montecarlo.dot_products` (the ``q·k`` sampler) and
:mod:`~attnsym.numeric.montecarlo.scores` (the experiments behind the √d claims). Every public
name is importable from ``attnsym.numeric.montecarlo`` itself.

>>> from attnsym.numeric import montecarlo as mc
>>> est = mc.dot_product_moments(64, 40_000, seed=0)
>>> bool(abs(est.variance - 64) < 4 * est.se_variance(fourth_central=3 * 64**2 + 6 * 64))
True
"""

from .dot_products import LAWS, dot_product_moments, dot_products
from .engine import BLOCK_SAMPLES, CHUNK_DRAWS, blas_single_thread, default_workers, normal_rate, sample_statistic
from .moments import SampleMoments, samples_for_precision, z_value
from .scores import score_entry_moments, score_rows, score_variance

__all__ = [
    "BLOCK_SAMPLES",
    "CHUNK_DRAWS",
    "LAWS",
    "SampleMoments",
    "blas_single_thread",
    "default_workers",
    "dot_product_moments",
    "dot_products",
    "normal_rate",
    "sample_statistic",
    "samples_for_precision",
    "score_entry_moments",
    "score_rows",
    "score_variance",
    "z_value",
]

#: the name this context had before the split (claims.builtin.scaling uses it)
_blas_single_thread = blas_single_thread
