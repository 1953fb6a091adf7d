"""The per-layer schedule of a ``config.json``: which layer slides, which rotates and with which RoPE.

The keys of 2026's configs that set each layer, read one way here for every family of
:mod:`attnsym.models.families_2026`:

* ``layer_types`` — one of ``"full_attention"``, ``"sliding_attention"`` (the window
  ``sliding_window``) or ``"chunked_attention"`` per layer; its length must be the number of
  layers (an :class:`~attnsym.models.errors.ModelError` otherwise).
* ``no_rope_layers`` — **read backwards from its name**: ``no_rope_layers[i] = 1`` means layer
  ``i`` *uses* RoPE, ``0`` means it has no positions (NoPE), in SmolLM3 and Llama 4 alike.
* ``rope_parameters`` — one dict (``rope_theta``, ``rope_type``, ...) for every layer, or one per
  layer type (Gemma 3: ``{"sliding_attention": {...}, "full_attention": {...}}``); the older
  spelling ``rope_theta`` + ``rope_local_base_freq`` + ``rope_scaling`` (Gemma 3 as written by
  transformers 4: the scaling applies to the global layers only) is read the same way.

Facts that disagree without stopping the model (a window given while ``use_sliding_window`` is
off, a window longer than the context) become warnings naming the key, kept in
:attr:`~attnsym.models.plan.ModelPlan.notes` and printed by ``attnsym layers``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._positions import ROPE_SCALING_PARAMETERS, ROPE_SCALING_TYPES
from .errors import ModelError
from .keys import as_finite, config_name, flag, positive_size, refuse, short_repr

__all__ = ["LAYER_TYPES", "layer_types", "rope_base_and_scaling", "rope_of_type", "uses_rope", "window_notes"]

#: the layer types a ``layer_types`` list may name (attnsym runs each exactly)
LAYER_TYPES = ("full_attention", "sliding_attention", "chunked_attention")


def rope_base_and_scaling(raw: dict[str, Any], path: Path, theta_key: str = "rope_theta", *,
          params: dict[str, Any] | None = None) -> tuple[int | float, dict[str, Any] | None]:
    """``(rope_theta, rope_scaling or None)`` from either spelling of the config (``theta_key``: the base's own name);
    every family reads RoPE here. ``params``: one layer type's own ``rope_parameters`` (nested configs).

    The scaling dict keeps the keys its type takes (``ROPE_SCALING_PARAMETERS`` of :mod:`attnsym._positions`)
    and gains what transformers' ``standardize_rope_params`` and ``modeling_rope_utils`` take from
    the rest of the config: ``original_max_position_embeddings`` (the config's own top-level key
    first, for flat configs — Phi-3 writes it there —, else the dict's, else
    ``max_position_embeddings``; ``"dynamic"``: ``max_position_embeddings``) and, for ``"yarn"``
    and ``"longrope"`` without a ``factor``, ``max_position_embeddings / original_max_position_embeddings``.
    """
    nested = params is not None
    scaling = raw.get("rope_scaling") if not nested else None
    theta = raw.get("rope_theta") if not nested else None
    params = params if nested else raw.get("rope_parameters")
    if params is not None and not isinstance(params, dict):
        raise ModelError(f"{path}: 'rope_parameters' must be a JSON object (got {short_repr(params)} in {config_name(raw)})")
    if isinstance(params, dict):
        if params.get("rope_theta") is not None:
            theta, theta_key = params["rope_theta"], "rope_parameters.rope_theta"
        scaling = {k: v for k, v in params.items() if k != "rope_theta"}
    if theta is None:
        theta = 10000.0
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or as_finite(theta) is None or not theta > 1:
        raise ModelError(f"{path}: {theta_key!r} must be a finite number > 1, the RoPE base (got {short_repr(theta)} in "
                         f"{config_name(raw)})")
    if scaling is not None:
        if not isinstance(scaling, dict):
            raise ModelError(f"{path}: 'rope_scaling' must be a JSON object (got {short_repr(scaling)} in {config_name(raw)})")
        scaling = _scaling(raw, path, scaling, nested)
    return theta, scaling


def _scaling(raw: dict[str, Any], path: Path, scaling: dict[str, Any], nested: bool) -> dict[str, Any] | None:
    """The ``rope_scaling`` dict of one layer type, completed from the config (:func:`_rope`), or None (``"default"``)."""
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind == "default":
        return None
    if kind not in ROPE_SCALING_TYPES:
        refuse(path, "rope_scaling.rope_type", kind,
                f"attnsym implements 'default', {', '.join(repr(t) for t in ROPE_SCALING_TYPES)}")
    required, optional = ROPE_SCALING_PARAMETERS[kind]
    out = {k: v for k, v in scaling.items() if k in ("rope_type", "type", *required, *optional) and v is not None}
    if kind == "linear":
        return out

    def max_positions() -> int | float:
        value = raw.get("max_position_embeddings")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ModelError(f"{path}: 'max_position_embeddings' must be a positive number for rope_type={kind!r} "
                             f"(got {short_repr(value)} in {config_name(raw)})")
        return value

    original = "original_max_position_embeddings"
    if kind == "dynamic":
        out[original] = max_positions()
    elif not nested and raw.get(original) is not None:  # transformers gives the config's own key priority
        out[original] = raw[original]
    elif out.get(original) is None:
        out[original] = max_positions()
    if kind in ("yarn", "longrope") and out.get("factor") is None:
        out["factor"] = max_positions() / out[original]
    return out


def layer_types(raw: dict[str, Any], path: Path, layers: int, default: list[str]) -> list[str]:
    """``layer_types`` of the config (``default`` when absent), checked: one known type per layer.

    >>> layer_types({"layer_types": ["full_attention"]}, Path("config.json"), 1, [])
    ['full_attention']
    >>> layer_types({"layer_types": ["full_attention"]}, Path("config.json"), 2, [])
    Traceback (most recent call last):
    ...
    attnsym.models.errors.ModelError: config.json: 'layer_types' must list one type per layer (2) (got 1 entries)
    """
    types = raw.get("layer_types")
    if types is None:
        return list(default)
    if not isinstance(types, list):
        raise ModelError(f"{path}: 'layer_types' must be a list of strings (got {str(types)[:60]})")
    if len(types) != layers:
        raise ModelError(f"{path}: 'layer_types' must list one type per layer ({layers}) (got {len(types)} entries)")
    for t in types:
        if t not in LAYER_TYPES:
            refuse(path, "layer_types", t, f"attnsym runs the layer types {', '.join(LAYER_TYPES)}")
    return list(types)


def uses_rope(raw: dict[str, Any], path: Path, layers: int, default: list[bool]) -> list[bool]:
    """Which layers rotate, from ``no_rope_layers`` — whose ``1`` means the layer USES RoPE (module docstring).

    >>> uses_rope({"no_rope_layers": [1, 1, 0]}, Path("config.json"), 3, [])
    [True, True, False]
    """
    flags = raw.get("no_rope_layers")
    if flags is None:
        return list(default)
    if not isinstance(flags, list) or len(flags) != layers or any(f not in (0, 1) or isinstance(f, float)
                                                                  for f in flags):
        raise ModelError(f"{path}: 'no_rope_layers' must list 0 or 1 for each of the {layers} layers (1: the layer "
                         f"uses RoPE) (got {str(flags)[:60]})")
    return [f == 1 for f in flags]


def rope_of_type(raw: dict[str, Any], path: Path, layer_type: str,
                 local_base_key: str | None = None) -> tuple[int | float, dict[str, Any] | None]:
    """``(rope_theta, rope_scaling or None)`` of the layers of type ``layer_type``.

    ``rope_parameters`` keyed by layer type gives each type its own dict; a flat one is every
    layer's. With ``local_base_key`` (Gemma 3's ``rope_local_base_freq``) the old spelling gives
    sliding layers that base and no scaling, full layers ``rope_theta`` and ``rope_scaling``.

    >>> raw = {"rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
    ...                            "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6}}}
    >>> rope_of_type(raw, Path("c"), "sliding_attention"), rope_of_type(raw, Path("c"), "full_attention")
    ((10000.0, None), (1000000.0, {'rope_type': 'linear', 'factor': 8.0}))
    """
    params = raw.get("rope_parameters")
    if isinstance(params, dict) and any(k in LAYER_TYPES for k in params):
        own = params.get(layer_type)
        if not isinstance(own, dict):
            raise ModelError(f"{path}: 'rope_parameters' gives no parameters for the {layer_type!r} layers")
        return rope_base_and_scaling(raw, path, params=own)
    if local_base_key is not None and params is None and layer_type == "sliding_attention":
        base = raw.get(local_base_key, 10000.0)
        return rope_base_and_scaling({"rope_theta": base}, path)
    return rope_base_and_scaling(raw, path)


def window_notes(raw: dict[str, Any], path: Path, types: list[str], max_positions: int,
                 use_key: str | None = "use_sliding_window") -> list[str]:
    """Warnings about the window keys that disagree (none of them stops the model).

    >>> window_notes({"sliding_window": 4096, "use_sliding_window": False}, Path("c"), ["full_attention"], 2048)
    ["'sliding_window' = 4096 is set while 'use_sliding_window' is false: no layer slides", \
"'sliding_window' = 4096 is longer than 'max_position_embeddings' = 2048: the window never bites"]
    """
    notes: list[str] = []
    window = raw.get("sliding_window")
    if window is None:
        return notes
    window = positive_size(raw, "sliding_window", path)
    if use_key is not None and use_key in raw and not flag(raw, use_key, path, False):
        notes.append(f"'sliding_window' = {window} is set while '{use_key}' is false: no layer slides")
    if window >= max_positions:
        notes.append(f"'sliding_window' = {window} is longer than 'max_position_embeddings' = {max_positions}: the "
                     "window never bites")
    if "sliding_attention" not in types and (use_key is None or use_key not in raw):
        notes.append(f"'sliding_window' = {window} is set but no layer of 'layer_types' is 'sliding_attention'")
    return notes
