"""Binding: keywords or a spec, and arrays, become one :class:`~attnsym.numeric.layer.BoundLayer`.

:func:`spec_from_keywords` is the only place keywords become an
:class:`~attnsym.AttentionSpec`; :func:`bind` checks every array against that spec (or the
``spec=`` given) through the one input-checking path (:mod:`attnsym.numeric._inputs`) and adds
only what a spec cannot hold: the array namespace, the batch shape, the dtype, the device and
a runtime mask. :func:`~attnsym.numeric.attention`, :func:`~attnsym.numeric.attention_vjp` and
:func:`~attnsym.numeric.causal_decode` all bind here.
"""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any

import array_api_compat

from .._checks import boolean, positive_int
from ..errors import ShapeError, SpecError
from ..spec import AttentionSpec
from ._inputs import as_array, bool_mask, float_array, namespace_of
from .layer import NUMERIC_POSITIONS, BoundLayer, d_out

__all__ = ["QK_NORM_VARIANTS", "bind", "spec_from_keywords", "window_band"]

_BIASES = ("b_Q", "b_K", "b_V", "b_O")
_GAINS = ("g_Q", "g_K")
#: the variants of :attr:`attnsym.AttentionSpec.variants` every numeric pass implements (a chunk is a mask)
VARIANTS_ALL = ("chunk",)
#: the QK-norm variants every pass that norms through :func:`~attnsym.numeric.layer.head_rows` implements
QK_NORM_VARIANTS = ("qk_norm_scope", "qk_norm_offset")


def spec_from_keywords(n: int, d_model: int, W_Q, W_K, W_V, W_O, *, heads: Any, causal: Any, scale: Any,
                       positions: Any) -> AttentionSpec:
    """The one spec that keyword arguments and weight shapes describe (no ``spec=`` given).

    ``d_k`` and ``d_v`` are read from ``W_Q`` and ``W_V``; the spec's other fields validate
    ``heads``, ``causal``, ``scale`` and ``positions`` with the spec's own messages. Without a
    spec, ``W_O`` may have any output width and each bias is optional, so ``output_projection``
    and ``bias`` of this spec describe defaults only; the arrays given decide.
    """
    heads = positive_int("heads", heads)
    boolean("causal", causal)
    if W_Q.shape[0] != d_model or W_Q.shape[1] % heads:
        raise ShapeError(f"W_Q must have shape (d_model, heads*d_k) with d_model={d_model}, heads={heads} "
                         f"(got {tuple(W_Q.shape)})")
    if tuple(W_K.shape) != tuple(W_Q.shape):
        raise ShapeError(f"W_K must have shape the shape of W_Q = {tuple(W_Q.shape)} (got {tuple(W_K.shape)})")
    if W_V.shape[0] != d_model or W_V.shape[1] % heads:
        raise ShapeError(f"W_V must have shape (d_model, heads*d_v) with d_model={d_model}, heads={heads} "
                         f"(got {tuple(W_V.shape)})")
    if W_O is not None and W_O.shape[0] != W_V.shape[1]:
        raise ShapeError(f"W_O must have shape (heads*d_v, d_out) with heads*d_v={W_V.shape[1]} (got {tuple(W_O.shape)})")
    fields = (n, d_model, heads, int(W_Q.shape[1]) // heads, int(W_V.shape[1]) // heads, causal, scale, positions)
    return (_keyword_spec if _hashable(fields) else _keyword_spec.__wrapped__)(*fields)  # an array scale: uncached


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


@functools.lru_cache(maxsize=64, typed=True)
def _keyword_spec(n, d_model, heads, d_k, d_v, causal, scale, positions) -> AttentionSpec:
    """The spec of these fields, made once (a frozen dataclass; its checks take 0.1 ms, a cached one 1 µs).

    ``typed``: ``scale=1`` and ``scale=True`` are different keys, so a value the spec refuses never
    shares a cached spec with one it accepts.
    """
    return AttentionSpec(n=n, d_model=d_model, heads=heads, d_k=d_k, d_v=d_v, causal=causal, scale=scale,
                         positions=positions)


def _check_against_spec(spec: AttentionSpec, a: dict) -> None:
    shapes = spec.shapes
    for name in ("W_Q", "W_K", "W_V"):
        heads = "heads" if name == "W_Q" else "kv_heads"
        what = f"(d_model, {heads}*d_k)" if name != "W_V" else f"(d_model, {heads}*d_v)"
        if tuple(a[name].shape) != shapes[name]:
            raise ShapeError(f"{name} must have shape {what} = {shapes[name]} (got {tuple(a[name].shape)})")
    if spec.output_projection:
        if a["W_O"] is None:
            raise ShapeError(f"W_O is required by the spec (output_projection=True, shape {shapes['W_O']}) (got None)")
        if tuple(a["W_O"].shape) != shapes["W_O"]:
            raise ShapeError(f"W_O must have shape (heads*d_v, d_model) = {shapes['W_O']} (got {tuple(a['W_O'].shape)})")
    elif a["W_O"] is not None:
        raise ShapeError("W_O was given but the spec has output_projection=False; pass spec.replace(output_projection=True)")
    for name in _BIASES:
        wanted = name in spec.bias_names
        if wanted and a[name] is None:
            raise ShapeError(f"{name} is required by the spec (bias={spec.bias!r}, shape {shapes[name]}) (got None)")
        if not wanted and a[name] is not None:
            raise ShapeError(f"{name} was given but the spec has no such bias (bias={spec.bias!r})")
    _check_gains(spec, a)
    _check_sinks(spec, a)
    _check_gate(spec, a, shapes)


def _check_gate(spec: AttentionSpec, a: dict, shapes: dict) -> None:
    """The output gate's weights ``W_G``: required, ``(d_model, heads·d_v)``, exactly when ``spec.output_gate``."""
    value = a.get("W_G")
    if spec.output_gate and value is None:
        raise ShapeError(f"W_G is required by the spec (output_gate=True, shape {shapes['W_G']}) (got None)")
    if not spec.output_gate and value is not None:
        raise ShapeError("W_G was given but the spec has output_gate=False")
    if value is not None and tuple(value.shape) != shapes["W_G"]:
        raise ShapeError(f"W_G must have shape (d_model, heads*d_v) = {shapes['W_G']} (got {tuple(value.shape)})")


def _check_sinks(spec: AttentionSpec, a: dict) -> None:
    """The sink logits: required, one per head, exactly when ``spec.sink``."""
    value = a.get("s_sink")
    if spec.sink and value is None:
        raise ShapeError(f"s_sink is required by the spec (sink=True, shape (1, {spec.heads}) or ({spec.heads},)) "
                         "(got None)")
    if not spec.sink and value is not None:
        raise ShapeError("s_sink was given but the spec has sink=False")
    if value is not None and tuple(value.shape) not in ((spec.heads,), (1, spec.heads)):
        raise ShapeError(f"s_sink must have shape (1, heads) or (heads,) = (1, {spec.heads}) (got {tuple(value.shape)})")


def _check_gains(spec: AttentionSpec, a: dict) -> None:
    """The QK-norm gains: required exactly when ``spec.qk_norm``, of the length the scope norms — ``d_k``
    per head, or the whole projection's ``heads·d_k`` (``g_Q``) and ``kv_heads·d_k`` (``g_K``)."""
    shapes = spec.shapes
    for name in _GAINS:
        value = a.get(name)
        width = shapes[name][1] if spec.qk_norm else spec.d_k
        what = "heads*d_k" if name == "g_Q" else "kv_heads*d_k"
        length = what if spec.qk_norm_scope == "whole_projection" else "d_k"
        if spec.qk_norm and value is None:
            raise ShapeError(f"{name} is required by the spec (qk_norm=True, qk_norm_scope={spec.qk_norm_scope!r}, "
                             f"shape (1, {width}) or ({width},)) (got None); attention, attention_vjp and "
                             f"head_attention take it as {name}= (causal_decode takes no QK-norm gains)")
        if not spec.qk_norm and value is not None:
            raise ShapeError(f"{name} was given but the spec has qk_norm=False")
        if value is not None and tuple(value.shape) not in ((width,), (1, width)):
            raise ShapeError(f"{name} must have shape (1, {length}) or ({length},) = (1, {width}) for "
                             f"qk_norm_scope={spec.qk_norm_scope!r} (got {tuple(value.shape)})")


def window_band(spec: AttentionSpec):
    """The ``(n, n)`` NumPy bool band of ``spec.window`` (``|i − j| < window``) AND ``spec.chunk`` (``i // chunk ==
    j // chunk``), or ``None`` with neither.

    Causality is not in it (the layer applies ``causal`` itself); with ``causal`` the AND is
    ``0 <= i − j < window``.

    >>> window_band(AttentionSpec(n=4, d_model=2, chunk=2)).astype(int).tolist()
    [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1]]
    """
    import numpy as np

    if spec.window is None and spec.chunk is None:
        return None
    idx = np.arange(spec.n)
    band = np.ones((spec.n, spec.n), dtype=bool)
    if spec.window is not None:
        band &= np.abs(idx[:, None] - idx[None, :]) < spec.window
    if spec.chunk is not None:
        band &= (idx[:, None] // spec.chunk) == (idx[None, :] // spec.chunk)
    return band


def _check_biases(a: dict) -> None:
    widths = {"b_Q": a["W_Q"].shape[1], "b_K": a["W_K"].shape[1], "b_V": a["W_V"].shape[1],
              "b_O": None if a["W_O"] is None else a["W_O"].shape[1]}
    for name, k in widths.items():
        if a[name] is None:
            continue
        if k is None:
            raise ShapeError("b_O was given without W_O; b_O needs an output projection W_O")
        if tuple(a[name].shape) not in ((k,), (1, k)):
            raise ShapeError(f"{name} must have shape (1, {k}) or ({k},) (got {tuple(a[name].shape)})")


def _broadcast_shapes(a: tuple, b: tuple) -> tuple:
    out = []
    for x, y in zip(reversed((1,) * (len(b) - len(a)) + a), reversed((1,) * (len(a) - len(b)) + b), strict=True):
        if x != y and 1 not in (x, y):
            raise SpecError(f"{a} and {b} do not broadcast")
        out.append(max(x, y))
    return tuple(reversed(out))


def _runtime_mask(xp: ModuleType, mask, n: int, batch_shape: tuple, device):
    mask = bool_mask(xp, "mask", mask, device)
    if mask.ndim < 2 or tuple(mask.shape[-2:]) != (n, n):
        raise ShapeError(f"mask must have shape (n, n) = ({n}, {n}) or (..., {n}, {n}) (got {tuple(mask.shape)})")
    try:
        fits = _broadcast_shapes(tuple(mask.shape[:-2]), batch_shape) == batch_shape
    except ValueError:
        fits = False
    if not fits:  # a mask may not add batch dimensions: Y, A and every gradient keep X's batch shape
        raise ShapeError(f"mask batch dimensions {tuple(mask.shape[:-2])} must broadcast to X's batch "
                         f"dimensions {batch_shape}; give X those batch dimensions (e.g. numpy.broadcast_to) "
                         "or one mask per batch element")
    return mask


def bind(X, W_Q, W_K, W_V, W_O, biases: dict, *, spec, heads, causal, mask, scale, positions, backend,
         G=None, implements: tuple[str, ...] = VARIANTS_ALL, caller: str = "attnsym.numeric") -> tuple[BoundLayer, dict]:
    """Check every input against ``spec`` (or the spec the keywords build); the layer and the arrays.

    ``implements``: the spec variants (:attr:`attnsym.AttentionSpec.variants`) the calling pass runs;
    any other is refused by name (``caller`` names the pass in the message). ``biases`` may hold
    ``s_sink``, the sink logits of a spec with ``sink=True`` (the layer's :attr:`BoundLayer.sinks`),
    and ``W_G``, the output gate's weights of a spec with ``output_gate=True``.

    Returns
    -------
    (BoundLayer, dict)
        The layer and ``{"X", "W_Q", "W_K", "W_V", "W_O", "b_Q", …, ["G"]}`` as arrays of the
        layer's namespace (``None`` for what was not given).
    """
    named = {"X": X, "W_Q": W_Q, "W_K": W_K, "W_V": W_V, "W_O": W_O, "g_Q": None, "g_K": None, "s_sink": None,
             "W_G": None, **biases}
    xp = namespace_of({**named, "G": G}, backend)  # a mask may be NumPy always
    if G is not None:
        named["G"] = G
    a = {k: as_array(xp, k, v, convert=backend is not None) for k, v in named.items()}
    X = a["X"]
    for name in ("X", "W_Q", "W_K", "W_V"):
        if a[name] is None:
            raise ShapeError(f"{name} is required (got None)")
    if X.ndim < 2:
        raise ShapeError(f"X must have shape (n, d_model) or (..., n, d_model) (got {tuple(X.shape)})")
    if X.shape[-2] == 0:
        raise ShapeError(f"X must hold at least one token, n >= 1 in (..., n, d_model) (got shape {tuple(X.shape)})")
    dtype = float_array(xp, "X", X)
    for name, value in a.items():
        if name != "X" and value is not None:
            float_array(xp, name, value, like=dtype)
    for name in ("W_Q", "W_K", "W_V", "W_O"):
        if a[name] is not None and a[name].ndim != 2:
            raise ShapeError(f"{name} must be a 2-D matrix (got shape {tuple(a[name].shape)})")
    n, d_model = int(X.shape[-2]), int(X.shape[-1])
    batch_shape = tuple(int(s) for s in X.shape[:-2])
    device = array_api_compat.device(X)

    if spec is not None:
        if not isinstance(spec, AttentionSpec):
            raise SpecError(f"spec must be an AttentionSpec (got {type(spec).__name__})")
        spec.refuse_variants(caller, implemented=implements)
        defaults = {"heads": (heads, 1), "causal": (causal, False), "mask": (mask, None), "scale": (scale, "sqrt"),
                    "positions": (positions, None)}
        clash = [k for k, (v, default) in defaults.items() if not (v is default or (isinstance(v, str) and v == default))]
        if clash:
            raise SpecError(f"give either spec= or the keyword arguments {clash}, not both (the spec decides them)")
        if (n, d_model) != (spec.n, spec.d_model):
            raise ShapeError(f"X must have shape (..., n, d_model) = (..., {spec.n}, {spec.d_model}) (got {tuple(X.shape)})")
        _check_against_spec(spec, a)
        runtime = None if spec.mask is None else xp.asarray(spec.mask, dtype=xp.bool, device=device)
        band = window_band(spec)  # the window joins the mask, so every path (plain, blockwise, fast) honours it
        if band is not None:
            band = xp.asarray(band, device=device)
            runtime = band if runtime is None else xp.logical_and(runtime, band)
    else:
        for name in _GAINS:
            if a[name] is not None:
                raise SpecError(f"{name} (a QK-norm gain) needs spec=AttentionSpec(..., qk_norm=True)")
        if a["s_sink"] is not None:
            raise SpecError("s_sink (sink logits) needs spec=AttentionSpec(..., sink=True)")
        if a["W_G"] is not None:
            raise SpecError("W_G (the output gate's weights) needs spec=AttentionSpec(..., output_gate=True)")
        spec = spec_from_keywords(n, d_model, a["W_Q"], a["W_K"], a["W_V"], a["W_O"], heads=heads, causal=causal,
                                  scale=scale, positions=positions)
        runtime = None if mask is None else _runtime_mask(xp, mask, n, batch_shape, device)
    _check_biases(a)
    if spec.positions not in NUMERIC_POSITIONS:
        raise SpecError(f"positions={spec.positions!r} is not implemented by attnsym.numeric yet "
                        f"(it implements {NUMERIC_POSITIONS})")
    layer = BoundLayer(spec=spec, xp=xp, batch_shape=batch_shape, dtype=dtype, device=device, mask=runtime,
                       sinks=a["s_sink"])
    if G is not None:
        expected = (*batch_shape, n, d_out(layer, a))
        if tuple(a["G"].shape) != expected:
            raise ShapeError(f"G must have the shape of the output Y, (..., n, d_out) = {expected} "
                             f"(got {tuple(a['G'].shape)})")
    return layer, a
