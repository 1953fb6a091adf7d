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

__all__ = ["POSITION_KINDS", "ROPE_PAIRINGS", "ROPE_SCALING_PARAMETERS", "ROPE_SCALING_TYPES", "PositionConventions",
           "RopeScaling", "alibi_slope_exponents", "base_frequencies"]

#: the position schemes (see :mod:`attnsym.spec`)
POSITION_KINDS: tuple[str | None, ...] = (None, "sinusoidal", "rope", "alibi")
#: the two RoPE pairing conventions: Hugging Face LLaMA / GPT-NeoX, and GPT-J / RoFormer
ROPE_PAIRINGS: tuple[str, ...] = ("rotate_half", "interleaved")
#: the RoPE scaling rules :class:`RopeScaling` implements (Hugging Face ``rope_scaling["rope_type"]``)
ROPE_SCALING_TYPES: tuple[str, ...] = ("linear", "dynamic", "llama3", "yarn", "longrope")
_ORIGINAL = "original_max_position_embeddings"
#: each type's parameters: (required, optional)
ROPE_SCALING_PARAMETERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "linear": (("factor",), ()),
    "dynamic": (("factor", _ORIGINAL), ()),
    "llama3": (("factor", "low_freq_factor", "high_freq_factor", _ORIGINAL), ()),
    "yarn": (("factor", _ORIGINAL), ("attention_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim",
                                      "truncate")),
    "longrope": (("factor", "short_factor", "long_factor", _ORIGINAL), ("attention_factor",)),
}
_OPTIONAL_FIELDS = ("low_freq_factor", "high_freq_factor", _ORIGINAL, "attention_factor", "beta_fast", "beta_slow",
                    "mscale", "mscale_all_dim", "truncate", "short_factor", "long_factor")


def _positive_finite(name: str, value: Any) -> float:
    number = finite_real(name, value)
    if number <= 0:
        raise SpecError(f"{name} must be a positive finite number (got {value!r})")
    return number


def base_frequencies(base: float, rotary_dims: int) -> list[float]:
    """RoPE's unscaled ``θ_i = base^(−2i/d)``, ``i = 0 … d/2 − 1``, in float64 (the exponents exact fractions).

    >>> base_frequencies(100.0, 4)
    [1.0, 0.1]
    """
    return [base ** -float(Fraction(2 * i, rotary_dims)) for i in range(rotary_dims // 2)]


def _yarn_mscale(factor: float, mscale: float = 1.0) -> float:
    """YaRN's ``0.1 · mscale · ln(factor) + 1`` (1 for ``factor <= 1``), transformers' ``yarn_get_mscale``."""
    return 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0


@dataclass(frozen=True)
class RopeScaling:
    """A RoPE frequency scaling rule (Hugging Face ``rope_scaling``), frozen and hashable.

    Five rules, each as transformers' ``modeling_rope_utils`` computes it, with ``θ_i = base^(−2i/d)``
    (``d`` the rotary dims), ``L = original_max_position_embeddings`` and ``n`` the sequence length:

    * ``"linear"`` (position interpolation, kaiokendev; Chen et al. 2023): ``θ'_i = θ_i / factor``.
    * ``"dynamic"`` (dynamic NTK): for ``n > L`` the base becomes
      ``base · (factor · n / L − (factor − 1))^(d/(d−2))``; for ``n <= L`` nothing changes (``L`` is
      the config's ``max_position_embeddings``). transformers keeps the frequencies of the longest
      sequence seen until a shorter one than ``L`` comes; attnsym is stateless: the frequencies of ``n``.
    * ``"llama3"`` (LLaMA 3.1): with ``λ_i = 2π / θ_i``, ``λ_low = L / low_freq_factor`` and
      ``λ_high = L / high_freq_factor``: ``θ'_i = θ_i / factor`` if ``λ_i > λ_low``; ``θ'_i = θ_i`` if
      ``λ_i < λ_high``; otherwise ``θ'_i = (1 − s) θ_i / factor + s θ_i`` with
      ``s = (L / λ_i − low_freq_factor) / (high_freq_factor − low_freq_factor)``.
    * ``"yarn"`` (Peng et al. 2023): ``θ'_i = r_i θ_i / factor + (1 − r_i) θ_i`` with the ramp
      ``r_i = clip((i − lo) / (hi − lo), 0, 1)`` between the dimensions
      ``lo, hi = d ln(L / (2π β)) / (2 ln base)`` at ``β = beta_fast`` (32), ``beta_slow`` (1), floored
      and ceiled unless ``truncate`` is false, clipped to ``[0, d − 1]``; the rotated coordinates of
      queries and keys are multiplied by the attention factor (given, or
      ``m(factor, mscale) / m(factor, mscale_all_dim)`` when both are set, else ``m(factor)``, with
      ``m(f, s) = 0.1 s ln f + 1``).
    * ``"longrope"`` (Phi-3; Ding et al. 2024): ``θ'_i = θ_i / long_factor[i]`` when ``n > L``,
      ``θ_i / short_factor[i]`` otherwise; attention factor given, or ``sqrt(1 + ln factor / ln L)``
      (1 when ``factor <= 1``).

    Parameters
    ----------
    rope_type : {"linear", "dynamic", "llama3", "yarn", "longrope"}
    factor : float
        Positive (for ``"longrope"`` it sets only the default attention factor; a config reader
        gives ``max_position_embeddings / L`` when the config has none, as transformers does).
    low_freq_factor, high_freq_factor : float, optional
        ``"llama3"`` only (required there); positive, ``low_freq_factor < high_freq_factor``.
    original_max_position_embeddings : int, optional
        ``L``; required by every type but ``"linear"``.
    attention_factor : float, optional
        ``"yarn"`` and ``"longrope"``: the factor on the rotated coordinates (default: the rule's).
    beta_fast, beta_slow, mscale, mscale_all_dim : float, optional
        ``"yarn"`` only; a missing or zero ``beta_fast`` / ``beta_slow`` is 32 / 1 (transformers' ``or``).
    truncate : bool, optional
        ``"yarn"`` only; default True.
    short_factor, long_factor : sequence of float, optional
        ``"longrope"`` only (required there): one positive factor per rotation plane.

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
    >>> yarn = RopeScaling.from_mapping({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64})
    >>> yarn.describe(), round(yarn.attention_scale, 6)
    ('yarn x4 (64)', 1.138629)
    >>> RopeScaling.from_mapping({"rope_type": "ntk-by-parts", "factor": 4.0})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnsym.errors.SpecError: rope_scaling type 'ntk-by-parts' is not supported (supported: 'linear', 'dynamic', ...)
    """

    rope_type: str
    factor: float
    low_freq_factor: float | None = None
    high_freq_factor: float | None = None
    original_max_position_embeddings: int | None = None
    attention_factor: float | None = None
    beta_fast: float | None = None
    beta_slow: float | None = None
    mscale: float | None = None
    mscale_all_dim: float | None = None
    truncate: bool | None = None
    short_factor: tuple[float, ...] | None = None
    long_factor: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        kind = self.rope_type
        if not isinstance(kind, str) or kind not in ROPE_SCALING_TYPES:
            raise SpecError(f"rope_scaling type {kind!r} is not supported "
                            f"(supported: {', '.join(repr(t) for t in ROPE_SCALING_TYPES)})")
        required, optional = ROPE_SCALING_PARAMETERS[kind]
        given = [k for k in _OPTIONAL_FIELDS if getattr(self, k) is not None]
        misplaced = [k for k in given if k not in required + optional]
        if misplaced:
            raise SpecError(f"rope_scaling of type {kind!r} takes {', '.join(required + optional)} "
                            f"(got {', '.join(misplaced)})")
        missing = [k for k in required if k != "factor" and getattr(self, k) is None]
        if missing:
            raise SpecError(f"rope_scaling of type {kind!r} needs {', '.join(missing)} (got None)")
        object.__setattr__(self, "factor", _positive_finite("rope_scaling factor", self.factor))
        for name in ("low_freq_factor", "high_freq_factor", "attention_factor", "mscale", "mscale_all_dim"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, _positive_finite(f"rope_scaling {name}", getattr(self, name)))
        for name in ("beta_fast", "beta_slow"):  # 0 means the default, as transformers' `or`
            if getattr(self, name) is not None:
                value = finite_real(f"rope_scaling {name}", getattr(self, name))
                if value < 0:
                    raise SpecError(f"rope_scaling {name} must be >= 0 (got {value!r})")
                object.__setattr__(self, name, value)
        if self.truncate is not None and not isinstance(self.truncate, bool):
            raise SpecError(f"rope_scaling truncate must be true or false (got {self.truncate!r})")
        for name in ("short_factor", "long_factor"):
            value = getattr(self, name)
            if value is not None:
                if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
                    raise SpecError(f"rope_scaling {name} must be a list of positive numbers (got {value!r})")
                object.__setattr__(self, name, tuple(_positive_finite(f"rope_scaling {name}[]", v) for v in value))
        if self.original_max_position_embeddings is not None:
            object.__setattr__(self, _ORIGINAL, positive_int(f"rope_scaling {_ORIGINAL}", self.original_max_position_embeddings))
        if kind == "llama3" and not float(self.low_freq_factor or 0) < float(self.high_freq_factor or 0):
            raise SpecError(f"rope_scaling needs low_freq_factor < high_freq_factor "
                            f"(got {self.low_freq_factor} and {self.high_freq_factor})")
        if kind == "longrope" and len(self.short_factor or ()) != len(self.long_factor or ()):
            raise SpecError(f"rope_scaling short_factor and long_factor must have one entry per rotation plane "
                            f"(got {len(self.short_factor or ())} and {len(self.long_factor or ())})")

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
        required, optional = ROPE_SCALING_PARAMETERS[kind]
        unknown = sorted(k for k in data if k not in required + optional)
        if unknown:
            raise SpecError(f"rope_scaling of type {kind!r} takes {', '.join(required + optional)} "
                            f"(got unknown keys {', '.join(repr(k) for k in unknown)})")
        if "factor" not in data:
            raise SpecError(f"rope_scaling of type {kind!r} needs a 'factor' (got keys {sorted(mapping)})")
        return cls(rope_type=kind, **data)

    # ------------------------------------------------------------------ the rule, in float64
    @property
    def attention_scale(self) -> float:
        """The factor on the rotated coordinates of queries and keys (transformers' ``attention_scaling``
        on ``cos`` and ``sin``): 1 but for ``"yarn"`` and ``"longrope"`` (class docstring).

        >>> RopeScaling("longrope", 4.0, original_max_position_embeddings=16, short_factor=[1.0],
        ...             long_factor=[2.0]).attention_scale
        1.224744871391589
        """
        if self.attention_factor is not None:
            return float(self.attention_factor)
        if self.rope_type == "yarn":
            if self.mscale and self.mscale_all_dim:
                return _yarn_mscale(self.factor, self.mscale) / _yarn_mscale(self.factor, self.mscale_all_dim)
            return _yarn_mscale(self.factor)
        if self.rope_type == "longrope" and self.factor > 1:
            return math.sqrt(1 + math.log(self.factor) / math.log(float(self.original_max_position_embeddings or 0)))
        return 1.0

    @property
    def latent_score_scale(self) -> float:
        """The factor multi-head latent attention (DeepSeek V2/V3) puts on its whole softmax scale,
        ``m(factor, mscale_all_dim)²`` when ``mscale_all_dim`` is set, else 1 — transformers'
        ``yarn_apply_mscale``: the rotated coordinates already carry :attr:`attention_scale`; this one
        scales every coordinate's score.

        >>> RopeScaling("yarn", 40.0, original_max_position_embeddings=4096, mscale=1.0,
        ...             mscale_all_dim=1.0).latent_score_scale  # (0.1 ln 40 + 1)²
        1.8738...
        """
        if not self.mscale_all_dim:
            return 1.0
        return _yarn_mscale(self.factor, self.mscale_all_dim) ** 2

    def uses_long_factors(self, seq_len: int) -> bool:
        """``"longrope"``: whether a sequence of ``seq_len`` tokens takes ``long_factor`` (``seq_len > L``)."""
        return self.rope_type == "longrope" and seq_len > int(self.original_max_position_embeddings or 0)

    def dynamic_base(self, base: float, rotary_dims: int, seq_len: int) -> float:
        """``"dynamic"``: the base for ``seq_len`` tokens (``base`` itself up to ``L`` tokens)."""
        L = int(self.original_max_position_embeddings or 0)
        if self.rope_type != "dynamic" or seq_len <= L:
            return base
        return base * ((self.factor * seq_len / L) - (self.factor - 1)) ** (rotary_dims / (rotary_dims - 2))

    def yarn_bounds(self, base: float, rotary_dims: int) -> tuple[float, float]:
        """``"yarn"``: the planes ``(lo, hi)`` between which the ramp rises (class docstring), in float64
        as transformers' ``find_correction_range`` (integers with ``truncate``; ``hi`` moved by 0.001 when equal)."""
        d, L = rotary_dims, float(self.original_max_position_embeddings or 0)

        def dim_of(rotations: float) -> float:
            return (d * math.log(L / (rotations * 2 * math.pi))) / (2 * math.log(base))

        lo, hi = dim_of(self.beta_fast or 32), dim_of(self.beta_slow or 1)
        if self.truncate is not False:
            lo, hi = math.floor(lo), math.ceil(hi)
        lo, hi = max(lo, 0), min(hi, d - 1)
        return (lo, hi + 0.001) if lo == hi else (lo, hi)  # transformers' guard against a zero-width ramp

    def yarn_ramp(self, base: float, rotary_dims: int) -> list[float]:
        """``"yarn"``: the ramp ``r_i`` of each plane (1: interpolated, ``θ_i / factor``; 0: kept)."""
        lo, hi = self.yarn_bounds(base, rotary_dims)
        return [min(max((i - lo) / (hi - lo), 0.0), 1.0) for i in range(rotary_dims // 2)]

    def inverse_frequencies(self, base: float, rotary_dims: int, seq_len: int) -> list[float]:
        """The scaled ``θ'_i`` for ``seq_len`` tokens, in float64 arithmetic (the numeric view's rule).

        >>> RopeScaling("linear", 2.0).inverse_frequencies(100.0, 4, seq_len=8)
        [0.5, 0.05]
        """
        if self.rope_type == "dynamic":
            base = self.dynamic_base(base, rotary_dims, seq_len)
        theta = base_frequencies(base, rotary_dims)
        if self.rope_type == "linear":
            return [t / self.factor for t in theta]
        if self.rope_type == "llama3":
            return [self._llama3(t) for t in theta]
        if self.rope_type == "yarn":
            ramp = self.yarn_ramp(base, rotary_dims)
            return [t / self.factor * r + t * (1 - r) for t, r in zip(theta, ramp, strict=True)]
        if self.rope_type == "longrope":
            ext = self.long_factor if self.uses_long_factors(seq_len) else self.short_factor
            if len(ext or ()) != len(theta):
                raise SpecError(f"rope_scaling longrope factors must give one entry per rotation plane, "
                                f"{len(theta)} (got {len(ext or ())})")
            return [t / e for t, e in zip(theta, ext or (), strict=True)]
        return theta

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
        """``"linear x4"``, ``"llama3 x8 (1, 4, 8192)"``, ``"yarn x4 (4096)"``, ``"longrope x32 (4096)"``:
        the type, the factor and (but for ``"linear"``) the parameters that place its bands."""
        text = f"{self.rope_type} x{self.factor:g}"
        if self.rope_type == "llama3":
            text += f" ({self.low_freq_factor:g}, {self.high_freq_factor:g}, {self.original_max_position_embeddings})"
        elif self.rope_type != "linear":
            text += f" ({self.original_max_position_embeddings})"
        return text

    def as_dict(self) -> dict[str, Any]:
        """The rule as a JSON-ready dict: ``type``, ``factor``, every parameter that is set, and the
        ``attention_factor`` in effect where the rule has one.

        >>> RopeScaling("linear", 2.0).as_dict()
        {'type': 'linear', 'factor': 2.0}
        """
        out: dict[str, Any] = {"type": self.rope_type, "factor": self.factor}
        for name in _OPTIONAL_FIELDS:
            value = getattr(self, name)
            if value is not None:
                out[name] = list(value) if isinstance(value, tuple) else value
        if self.rope_type in ("yarn", "longrope"):
            out["attention_factor"] = self.attention_scale
        return out


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
        scaling = self.rope_scaling
        if scaling is not None and scaling.rope_type == "longrope" and len(scaling.short_factor or ()) != dims // 2:
            raise SpecError(f"rope_scaling longrope short_factor and long_factor need one entry per rotation plane, "
                            f"rotary_dims / 2 = {dims // 2} (got {len(scaling.short_factor or ())})")

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

