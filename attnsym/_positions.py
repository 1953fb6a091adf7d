"""The position conventions of :class:`~attnsym.AttentionSpec` as data: RoPE's planes and frequencies, ALiBi's slopes.

The conventions are stated once, in the docstring of :mod:`attnsym.spec`; this module holds the
rules that turn a spec into numbers both views evaluate (exactly in :mod:`attnsym.symbolic.positions`,
in floating point in :mod:`attnsym.numeric.positions`): :class:`PositionConventions` is a base of
``AttentionSpec`` (its derived properties and the validation of the RoPE fields), and
:func:`alibi_slope_exponents` is the paper's slope rule.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ._checks import finite_real, positive_int
from .errors import SpecError

__all__ = ["POSITION_KINDS", "ROPE_PAIRINGS", "ROPE_SCALING_TYPES", "PositionConventions", "RopeScaling",
           "alibi_slope_exponents"]

#: the position schemes (see :mod:`attnsym.spec`)
POSITION_KINDS: tuple[str | None, ...] = (None, "sinusoidal", "rope", "alibi")
#: the two RoPE pairing conventions: Hugging Face LLaMA / GPT-NeoX, and GPT-J / RoFormer
ROPE_PAIRINGS: tuple[str, ...] = ("rotate_half", "interleaved")
#: the RoPE scaling rules :class:`RopeScaling` implements (Hugging Face ``rope_scaling["rope_type"]``)
ROPE_SCALING_TYPES: tuple[str, ...] = ("linear", "llama3")
_ROPE_SCALING_KEYS = {"linear": ("factor",),
                      "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")}


def _positive_finite(name: str, value: Any) -> float:
    number = finite_real(name, value)
    if number <= 0:
        raise SpecError(f"{name} must be a positive finite number (got {value!r})")
    return number


@dataclass(frozen=True)
class RopeScaling:
    """A RoPE frequency scaling rule (Hugging Face ``rope_scaling``), frozen and hashable.

    Two rules, each the published one:

    * ``"linear"`` (position interpolation, kaiokendev; Chen et al. 2023): every inverse frequency
      is divided by ``factor``, ``θ'_i = θ_i / factor`` — equivalently positions ``p / factor``.
    * ``"llama3"`` (LLaMA 3.1; transformers' ``_compute_llama3_parameters``): with the wavelength
      ``λ_i = 2π / θ_i``, ``L = original_max_position_embeddings``,
      ``λ_low = L / low_freq_factor`` and ``λ_high = L / high_freq_factor``:
      ``θ'_i = θ_i / factor`` if ``λ_i > λ_low``; ``θ'_i = θ_i`` if ``λ_i < λ_high``;
      otherwise ``θ'_i = (1 − s) θ_i / factor + s θ_i`` with
      ``s = (L / λ_i − low_freq_factor) / (high_freq_factor − low_freq_factor)``.

    Parameters
    ----------
    rope_type : {"linear", "llama3"}
    factor : float
        Positive.
    low_freq_factor, high_freq_factor : float, optional
        ``"llama3"`` only (required there); positive, ``low_freq_factor < high_freq_factor``.
    original_max_position_embeddings : int, optional
        ``"llama3"`` only (required there): the context length of pre-training.

    Raises
    ------
    SpecError
        An unknown type (named), a missing or misplaced parameter, a non-positive value.

    Examples
    --------
    >>> RopeScaling.from_mapping({"type": "linear", "factor": 4.0}).describe()
    'linear x4'
    >>> RopeScaling.from_mapping({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
    ...                           "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}).describe()
    'llama3 x8 (1, 4, 8192)'
    >>> RopeScaling.from_mapping({"rope_type": "yarn", "factor": 4.0})
    Traceback (most recent call last):
    ...
    attnsym.errors.SpecError: rope_scaling type 'yarn' is not supported (supported: 'linear', 'llama3')
    """

    rope_type: str
    factor: float
    low_freq_factor: float | None = None
    high_freq_factor: float | None = None
    original_max_position_embeddings: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.rope_type, str) or self.rope_type not in ROPE_SCALING_TYPES:
            raise SpecError(f"rope_scaling type {self.rope_type!r} is not supported "
                            f"(supported: {', '.join(repr(t) for t in ROPE_SCALING_TYPES)})")
        object.__setattr__(self, "factor", _positive_finite("rope_scaling factor", self.factor))
        extra = ("low_freq_factor", "high_freq_factor", "original_max_position_embeddings")
        if self.rope_type == "linear":
            given = [k for k in extra if getattr(self, k) is not None]
            if given:
                raise SpecError(f"rope_scaling of type 'linear' takes only factor (got {', '.join(given)})")
            return
        missing = [k for k in extra if getattr(self, k) is None]
        if missing:
            raise SpecError(f"rope_scaling of type 'llama3' needs {', '.join(missing)} (got None)")
        low = _positive_finite("rope_scaling low_freq_factor", self.low_freq_factor)
        high = _positive_finite("rope_scaling high_freq_factor", self.high_freq_factor)
        if not low < high:
            raise SpecError(f"rope_scaling needs low_freq_factor < high_freq_factor (got {low} and {high})")
        object.__setattr__(self, "low_freq_factor", low)
        object.__setattr__(self, "high_freq_factor", high)
        object.__setattr__(self, "original_max_position_embeddings",
                           positive_int("rope_scaling original_max_position_embeddings",
                                        self.original_max_position_embeddings))

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any]) -> RopeScaling | None:
        """The rule a Hugging Face ``rope_scaling`` dict describes (``"type"`` is an alias of ``"rope_type"``).

        ``{"rope_type": "default"}`` means no scaling and gives ``None``; any key the type does
        not take is refused by name.
        """
        if not isinstance(mapping, Mapping):
            raise SpecError(f"rope_scaling must be None, a RopeScaling or a mapping (got {mapping!r})")
        data = dict(mapping)
        if "type" in data and "rope_type" in data and data["type"] != data["rope_type"]:
            raise SpecError(f"rope_scaling gives type={data['type']!r} and rope_type={data['rope_type']!r}; give one")
        kind = data.pop("rope_type", data.pop("type", None))
        data.pop("type", None)
        if kind is None:
            raise SpecError(f"rope_scaling needs a 'rope_type' (got keys {sorted(mapping)})")
        if kind == "default" and not data:
            return None
        if not isinstance(kind, str) or kind not in ROPE_SCALING_TYPES:
            raise SpecError(f"rope_scaling type {kind!r} is not supported "
                            f"(supported: {', '.join(repr(t) for t in ROPE_SCALING_TYPES)})")
        unknown = sorted(k for k in data if k not in _ROPE_SCALING_KEYS[kind])
        if unknown:
            raise SpecError(f"rope_scaling of type {kind!r} takes {', '.join(_ROPE_SCALING_KEYS[kind])} "
                            f"(got unknown keys {', '.join(repr(k) for k in unknown)})")
        if "factor" not in data:
            raise SpecError(f"rope_scaling of type {kind!r} needs a 'factor' (got keys {sorted(mapping)})")
        return cls(rope_type=kind, **data)

    def scale_frequencies(self, theta: list[float]) -> list[float]:
        """The scaled inverse frequencies, in float64 arithmetic (the numeric view's rule).

        >>> RopeScaling("linear", 2.0).scale_frequencies([1.0, 0.5])
        [0.5, 0.25]
        """
        if self.rope_type == "linear":
            return [t / self.factor for t in theta]
        return [self._llama3(t) for t in theta]

    def llama3_band(self, theta: float) -> str:
        """Which branch of the ``"llama3"`` rule a frequency takes: ``"low"`` (divided by factor),
        ``"high"`` (kept) or ``"medium"`` (smoothed); decided in float64 as transformers does."""
        L = float(self.original_max_position_embeddings or 0)
        wavelen = 2 * math.pi / theta
        if wavelen > L / float(self.low_freq_factor or 1):
            return "low"
        if wavelen < L / float(self.high_freq_factor or 1):
            return "high"
        return "medium"

    def _llama3(self, theta: float) -> float:
        band = self.llama3_band(theta)
        if band == "low":
            return theta / self.factor
        if band == "high":
            return theta
        low, high = float(self.low_freq_factor or 0), float(self.high_freq_factor or 0)
        smooth = (float(self.original_max_position_embeddings or 0) / (2 * math.pi / theta) - low) / (high - low)
        return (1 - smooth) * theta / self.factor + smooth * theta

    def describe(self) -> str:
        """``"linear x4"`` or ``"llama3 x8 (1, 4, 8192)"``."""
        text = f"{self.rope_type} x{self.factor:g}"
        if self.rope_type == "llama3":
            text += f" ({self.low_freq_factor:g}, {self.high_freq_factor:g}, {self.original_max_position_embeddings})"
        return text


def rope_scaling_value(value: Any) -> RopeScaling | None:
    """The normalised ``rope_scaling`` field: ``None``, a :class:`RopeScaling` or one built from a mapping."""
    if value is None or isinstance(value, RopeScaling):
        return value
    return RopeScaling.from_mapping(value)


def alibi_slope_exponents(heads: int) -> tuple[Fraction, ...]:
    """Exponents ``e_h`` of the ALiBi slopes ``m_h = 2^(-e_h)``, head ``h = 0 … heads−1``.

    The rule of Press, Smith & Lewis (2022) and of their code (also BLOOM's
    ``build_alibi_tensor``): for ``H`` a power of two, ``e_h = 8 (h+1) / H``; otherwise,
    with ``P`` the largest power of two below ``H``, the ``P`` exponents of ``P`` heads and
    then ``8 (2k+1) / (2P)`` for ``k = 0 … H−P−1`` (every other exponent of ``2P`` heads).

    Parameters
    ----------
    heads : int
        Number of heads ``H``.

    Returns
    -------
    tuple of fractions.Fraction

    Examples
    --------
    >>> [str(e) for e in alibi_slope_exponents(8)]
    ['1', '2', '3', '4', '5', '6', '7', '8']
    >>> [str(e) for e in alibi_slope_exponents(6)]
    ['2', '4', '6', '8', '1', '3']
    """
    heads = positive_int("heads", heads)
    power = 1 << (heads.bit_length() - 1)  # the largest power of two <= heads
    exponents = [Fraction(8 * (h + 1), power) for h in range(power)]
    exponents += [Fraction(8 * (2 * k + 1), 2 * power) for k in range(heads - power)]
    return tuple(exponents)


class PositionConventions:
    """The position part of :class:`~attnsym.AttentionSpec` (fields ``positions``, ``d_k``,
    ``heads``, ``rope_pairing``, ``rotary_pct`` come from the spec)."""

    positions: str | None
    d_k: int
    heads: int
    rope_pairing: str
    rotary_pct: float
    rope_scaling: RopeScaling | None

    def _check_position_fields(self) -> None:
        """Validate ``rope_pairing`` and ``rotary_pct`` (called by ``AttentionSpec.__post_init__``)."""
        if not isinstance(self.rope_pairing, str) or self.rope_pairing not in ROPE_PAIRINGS:
            raise SpecError(f"rope_pairing must be 'rotate_half' (Hugging Face LLaMA/GPT-NeoX) or 'interleaved' "
                            f"(GPT-J/RoFormer) (got {self.rope_pairing!r})")
        pct = self.rotary_pct
        if isinstance(pct, bool) or not isinstance(pct, numbers.Real) or not 0 < float(pct) <= 1:
            raise SpecError(f"rotary_pct must be a number in (0, 1], the fraction of d_k that RoPE rotates "
                            f"(got {pct!r})")
        object.__setattr__(self, "rope_scaling", rope_scaling_value(self.rope_scaling))
        if self.positions != "rope":
            changed = [f"{name}={getattr(self, name)!r}" for name, default in
                       (("rope_pairing", "rotate_half"), ("rotary_pct", 1.0), ("rope_scaling", None))
                       if getattr(self, name) != default]
            if changed:
                raise SpecError(f"{', '.join(changed)} only applies with positions='rope' "
                                f"(got positions={self.positions!r})")
            return
        dims = int(self.d_k * float(pct))
        if dims < 2 or dims % 2:
            raise SpecError(f"RoPE rotates int(d_k * rotary_pct) = int({self.d_k} * {pct}) = {dims} coordinates per "
                            "head, which must be even and at least 2; change d_k or rotary_pct")

    # ------------------------------------------------------------------ position conventions
    @property
    def rotary_dims(self) -> int:
        """Coordinates of each head that RoPE rotates, ``int(d_k * rotary_pct)``; 0 without RoPE."""
        return int(self.d_k * float(self.rotary_pct)) if self.positions == "rope" else 0

    @property
    def rope_pairs(self) -> tuple[tuple[int, int, int], ...]:
        """RoPE's rotation planes ``(a, b, i)`` within a head: coordinates ``a``, ``b`` turn by ``p θ_i``.

        ``"rotate_half"``: ``(i, i + rotary_dims/2, i)``; ``"interleaved"``: ``(2i, 2i+1, i)``.
        Empty without RoPE. The single source of the pairing for the symbolic and numeric views.

        >>> at.AttentionSpec(n=2, d_model=4, positions="rope").rope_pairs
        ((0, 2, 0), (1, 3, 1))
        """
        half = self.rotary_dims // 2
        if self.rope_pairing == "interleaved":
            return tuple((2 * i, 2 * i + 1, i) for i in range(half))
        return tuple((i, i + half, i) for i in range(half))

    @property
    def rope_frequency_exponents(self) -> tuple[Fraction, ...]:
        """Exponents ``2i / rotary_dims`` of the rotary frequencies ``θ_i = base^(-2i/rotary_dims)``.

        >>> [str(e) for e in at.AttentionSpec(n=2, d_model=4, positions="rope").rope_frequency_exponents]
        ['0', '1/2']
        """
        dims = self.rotary_dims
        return tuple(Fraction(2 * i, dims) for i in range(dims // 2))

    @property
    def alibi_slope_exponents(self) -> tuple[Fraction, ...]:
        """Exponents ``e_h`` of this layer's ALiBi slopes ``m_h = 2^(-e_h)`` (:func:`alibi_slope_exponents`);
        empty unless ``positions="alibi"``.

        >>> [str(e) for e in at.AttentionSpec(n=2, d_model=6, heads=3, positions="alibi").alibi_slope_exponents]
        ['4', '8', '2']
        """
        return alibi_slope_exponents(self.heads) if self.positions == "alibi" else ()

    @property
    def adds_position_vectors(self) -> bool:
        """True when positions are vectors added to ``X`` (only ``"sinusoidal"``; RoPE and ALiBi add none)."""
        return self.positions == "sinusoidal"

