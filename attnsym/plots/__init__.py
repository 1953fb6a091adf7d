"""Figures of attention: the one package that draws (and the only importer of matplotlib).

Every function returns a :class:`matplotlib.figure.Figure` and never calls ``show()``; figures
are built with the object-oriented API (no pyplot state), so they work headless with any
backend, including ``Agg``. matplotlib is imported inside the functions: neither
``import attnsym`` nor ``import attnsym.plots`` imports it. Nor does ``import attnsym.plots``
import networkx: the graph-drawing functions of ``plots.routing`` (the one module here that
needs it, with :mod:`attnsym.graphs`) load on first access.

The functions here *draw*; they do not compute. Each figure takes its data as arguments, and
when the data is left out it is fetched from the layer that owns the mathematics:
:mod:`attnsym.numeric` (attention weights, positional encodings, GELU, Monte Carlo),
:mod:`attnsym.graphs` (row entropy, path lengths and depths of Table 1).

One module per subject, mirroring the layers below:

==========================  ====================================================================
``plots.heatmaps``          :func:`attention_heatmap`, :func:`random_attention`
``plots.positions``         :func:`positional_encoding_figure`
``plots.rope_alibi``        :func:`rope_frequencies_figure`, :func:`rope_decay_figure`,
                            :func:`alibi_bias_figure`, :func:`shift_figure` (RoPE, ALiBi)
``plots.activations``       :func:`gelu_figure`
``plots.scaling``           :func:`variance_figure`, :func:`entropy_figure`,
                            :func:`saturation_gradient_figure`; :func:`saturation_entropy_figure`,
                            :func:`saturation_jacobian_figure` (a saturation study's result)
``plots.training``          :func:`training_figure`, :func:`training_run_figure` (the saturation
                            study's training run)
``plots.complexity``        :func:`path_length_figure`, :func:`memory_growth_figure`,
                            :func:`decode_cost_figure`
``plots.routing``           :func:`draw_routing`, :func:`draw_contrast`, :func:`two_token_figure`
``plots.models``            :func:`token_contrast_figure`, :func:`attention_grid_figure`,
                            :func:`rollout_flow_figure` (real models, :mod:`attnsym.models`)
``plots.limits``            :func:`dispersion_figure`, :func:`entropy_bound_figure`,
                            :func:`jacobian_norm_figure`, :func:`rank_collapse_figure`,
                            :func:`bias_slices_figure`, :func:`equal_tokens_figure`
``plots.catalog``           :data:`FIGURES`, :func:`figure` (the standard figures by name)
``plots.files``             :func:`figure_to_bytes`, :func:`save_figure`
==========================  ====================================================================

Save a figure as PNG or SVG with :func:`save_figure` (atomic, never a silent overwrite).

Examples
--------
>>> import numpy as np
>>> from attnsym import plots
>>> fig = plots.attention_heatmap(np.array([[0.9, 0.1], [0.3, 0.7]]), tokens=["the", "cat"])
>>> fig.axes[0].get_xlabel()
'key j (attended to)'
>>> [label.get_text() for label in fig.axes[0].get_yticklabels()]
['the', 'cat']
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._base import DPI, FIGSIZE
from .activations import gelu_figure
from .catalog import FIGURES, figure
from .complexity import decode_cost_figure, memory_growth_figure, path_length_figure
from .files import FORMATS, figure_to_bytes, save_figure
from .heatmaps import attention_heatmap, random_attention
from .limits import (
    bias_slices_figure,
    dispersion_figure,
    entropy_bound_figure,
    equal_tokens_figure,
    jacobian_norm_figure,
    rank_collapse_figure,
)
from .models import attention_grid_figure, rollout_flow_figure, token_contrast_figure
from .positions import positional_encoding_figure
from .rope_alibi import alibi_bias_figure, rope_decay_figure, rope_frequencies_figure, shift_figure
from .scaling import (
    entropy_figure,
    saturation_entropy_figure,
    saturation_gradient_figure,
    saturation_jacobian_figure,
    variance_figure,
)
from .training import training_figure, training_run_figure

if TYPE_CHECKING:  # pragma: no cover - for type checkers and the API docs; at run time see __getattr__
    from .routing import draw_contrast, draw_routing, two_token_figure

#: names defined in plots.routing, imported on first access: it loads networkx and attnsym.graphs
#: (+0.26 s CPU measured over `import attnsym`), which `import attnsym.plots` (e.g. by the claims) need not pay
_ROUTING = ("draw_contrast", "draw_routing", "two_token_figure")

__all__ = [
    "DPI",
    "FIGSIZE",
    "FIGURES",
    "FORMATS",
    "alibi_bias_figure",
    "attention_grid_figure",
    "attention_heatmap",
    "bias_slices_figure",
    "decode_cost_figure",
    "dispersion_figure",
    "draw_contrast",
    "draw_routing",
    "entropy_bound_figure",
    "entropy_figure",
    "equal_tokens_figure",
    "figure",
    "figure_to_bytes",
    "gelu_figure",
    "jacobian_norm_figure",
    "memory_growth_figure",
    "path_length_figure",
    "positional_encoding_figure",
    "random_attention",
    "rank_collapse_figure",
    "rollout_flow_figure",
    "rope_decay_figure",
    "rope_frequencies_figure",
    "saturation_entropy_figure",
    "saturation_gradient_figure",
    "saturation_jacobian_figure",
    "save_figure",
    "shift_figure",
    "token_contrast_figure",
    "training_figure",
    "training_run_figure",
    "two_token_figure",
    "variance_figure",
]


def __getattr__(name: str) -> Any:
    """``draw_routing``, ``draw_contrast``, ``two_token_figure``: loaded from ``plots.routing`` on first access."""
    if name in _ROUTING:
        value = getattr(importlib.import_module(f"{__name__}.routing"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'attnsym.plots' has no attribute {name!r}")


def __dir__() -> list[str]:
    """Every public name, loaded or not."""
    return sorted(set(globals()) | set(__all__))
