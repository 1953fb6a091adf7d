r"""Random inputs for a layer: the one place where "random weights for a spec" is written.

Every entry is drawn independently from a normal law:

* ``X`` and the upstream gradient ``G`` (shape of ``Y``): :math:`\mathcal N(0, 1)`;
* every parameter, weight or bias, :math:`\mathcal N(0, 1/\text{fan\_in})`, where fan_in is the
  number of inputs of its projection: ``d_model`` for ``W_Q, W_K, W_V, b_Q, b_K, b_V`` and
  ``heads · d_v`` for ``W_O, b_O``. With ``X ~ N(0, 1)`` each entry of ``X W_Q`` then has variance
  1, and a bias adds ``1/fan_in`` to it (the scale of PyTorch's ``nn.Linear`` initialisation,
  drawn normal rather than uniform).

The weights come from ``seed`` alone, the input and ``G`` from ``input_seed`` (default: ``seed``),
on independent streams: the same ``seed`` with two ``input_seed`` values gives two inputs through
the same weights.
"""

from __future__ import annotations

import numpy as np

from .._checks import instance_of, non_negative_int, positive_int
from ..spec import AttentionSpec

__all__ = ["random_inputs"]


def random_inputs(spec: AttentionSpec, seed: int = 0, *, input_seed: int | None = None,
                  batch: tuple[int, ...] = ()) -> dict[str, np.ndarray]:
    """Random float64 arrays for every input of ``spec``: ``X``, the parameters, and ``G``.

    Parameters
    ----------
    spec : AttentionSpec
    seed : int, default 0
        Seed of the weights and biases (and of ``X`` and ``G`` unless ``input_seed`` is given).
    input_seed : int, optional
        Seed of ``X`` and ``G``; default ``seed``.
    batch : tuple of int, default ()
        Leading axes of ``X`` and ``G``: ``batch=(2,)`` gives two inputs through the same weights.

    Returns
    -------
    dict
        ``{"X": (*batch, n, d_model), "W_Q": …, <every name of spec.parameter_names>, "G": (*batch, n, d_out)}``.
        Pass ``{k: v for k, v in values.items() if k != "G"}`` to the forward pass.

    Examples
    --------
    >>> spec = at.AttentionSpec(n=3, d_model=4, bias=True)
    >>> values = random_inputs(spec, seed=0)
    >>> list(values)
    ['X', 'W_Q', 'W_K', 'W_V', 'b_Q', 'b_K', 'b_V', 'G']
    >>> other = random_inputs(spec, seed=0, input_seed=1)      # same weights, another input
    >>> bool(np.array_equal(values["W_Q"], other["W_Q"])), bool(np.array_equal(values["X"], other["X"]))
    (True, False)
    >>> random_inputs(spec, seed=0, batch=(2,))["X"].shape
    (2, 3, 4)
    """
    instance_of("spec", spec, AttentionSpec)
    seed = non_negative_int("seed", seed)
    input_seed = seed if input_seed is None else non_negative_int("input_seed", input_seed)
    batch = tuple(positive_int("batch", b) for b in batch)
    shapes = spec.shapes
    weights = np.random.default_rng([seed, 0])
    values = {"X": np.random.default_rng([input_seed, 1]).standard_normal((*batch, *shapes["X"]))}
    for name in spec.parameter_names:
        if name == "s_sink":  # a logit, not a weight: standard normal
            values[name] = weights.standard_normal(shapes[name])
            continue
        fan_in = shapes[f"W_{name[2:]}"][0]  # the rows of the weight the parameter belongs to
        values[name] = weights.standard_normal(shapes[name]) / np.sqrt(fan_in)
    values["G"] = np.random.default_rng([input_seed, 2]).standard_normal((*batch, *shapes["Y"]))
    return values
