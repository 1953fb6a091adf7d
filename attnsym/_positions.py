"""The position conventions of :class:`~attnsym.AttentionSpec` as data: RoPE's planes and frequencies, ALiBi's slopes.

The conventions are stated once, in the docstring of :mod:`attnsym.spec`; this module holds the
rules that turn a spec into numbers both views evaluate (exactly in :mod:`attnsym.symbolic.positions`,
in floating point in :mod:`attnsym.numeric.positions`): :class:`PositionConventions` is a base of
``AttentionSpec`` (its derived properties and the validation of the RoPE fields), and
:func:`alibi_slope_exponents` is the paper's slope rule.
"""

from __future__ import annotations

import numbers
from fractions import Fraction

from ._checks import positive_int
from .errors import SpecError

__all__ = ["POSITION_KINDS", "ROPE_PAIRINGS", "PositionConventions", "alibi_slope_exponents"]

#: the position schemes (see :mod:`attnsym.spec`)
POSITION_KINDS: tuple[str | None, ...] = (None, "sinusoidal", "rope", "alibi")
#: the two RoPE pairing conventions: Hugging Face LLaMA / GPT-NeoX, and GPT-J / RoFormer
ROPE_PAIRINGS: tuple[str, ...] = ("rotate_half", "interleaved")


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

    def _check_position_fields(self) -> None:
        """Validate ``rope_pairing`` and ``rotary_pct`` (called by ``AttentionSpec.__post_init__``)."""
        if not isinstance(self.rope_pairing, str) or self.rope_pairing not in ROPE_PAIRINGS:
            raise SpecError(f"rope_pairing must be 'rotate_half' (Hugging Face LLaMA/GPT-NeoX) or 'interleaved' "
                            f"(GPT-J/RoFormer) (got {self.rope_pairing!r})")
        pct = self.rotary_pct
        if isinstance(pct, bool) or not isinstance(pct, numbers.Real) or not 0 < float(pct) <= 1:
            raise SpecError(f"rotary_pct must be a number in (0, 1], the fraction of d_k that RoPE rotates "
                            f"(got {pct!r})")
        if self.positions != "rope":
            changed = [f"{name}={getattr(self, name)!r}" for name, default in
                       (("rope_pairing", "rotate_half"), ("rotary_pct", 1.0)) if getattr(self, name) != default]
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

