"""`AttentionSpec`: the one description of a self-attention layer.

The symbolic, numeric and graph views are all built from a spec, so they cannot disagree
about shapes, masks, scaling or positions. Every convention lives here and only here:

* **shapes** — ``X`` is ``(n, d_model)``; ``W_Q`` and ``W_K`` are ``(d_model, heads*d_k)``;
  ``W_V`` is ``(d_model, heads*d_v)``; ``W_O`` is ``(heads*d_v, d_model)``. Projections are
  right multiplications, ``Q = X W_Q`` (the convention of Vaswani et al. 2017).
* **mask polarity** — ``True`` means *may attend*: query ``i`` may look at key ``j`` iff
  ``allowed[i][j]``. ``causal=True`` allows ``j <= i``. A causal flag and an explicit mask
  combine with logical AND.
* **fully masked rows** — a query that may attend to nothing gets an all-zero row of
  weights and an all-zero output row (the choice of PyTorch's current
  ``scaled_dot_product_attention``). This keeps every value and gradient finite; the
  alternatives (NaN, or a uniform row that attends to forbidden keys) either poison the
  gradients or silently break the mask.
* **scale** — ``"sqrt"`` means ``1/sqrt(d_k)``, ``"none"`` means 1, a number or a SymPy
  expression is used as given.
* **positions** — one of four schemes, positions counted from 0 (token ``p`` is row ``p``):

  - ``None``: no positional information (the layer is permutation-equivariant).
  - ``"sinusoidal"`` (Vaswani et al. 2017) adds ``PE`` to ``X`` before the projections,
    ``PE(p, 2i) = sin(p / base^(2i/d_model))``, ``PE(p, 2i+1) = cos(p / base^(2i/d_model))``,
    ``base = position_base`` (default :data:`DEFAULT_POSITION_BASE`, 10000).
  - ``"rope"`` (rotary embeddings, Su et al. 2021, RoFormer) adds nothing to ``X``; after the
    projections each head's query and key of token ``p`` are rotated, ``q~_p = R(p θ) q_p``,
    ``k~_p = R(p θ) k_p`` (values are not rotated). ``R(p θ)`` rotates ``rotary_dims`` of the
    ``d_k`` coordinates in ``rotary_dims / 2`` planes, plane ``i`` by the angle ``p θ_i`` with
    ``θ_i = base^(-2i / rotary_dims)``, ``i = 0 … rotary_dims/2 − 1``, ``base = position_base``;
    a coordinate pair ``(a, b)`` becomes ``(x_a cos − x_b sin, x_b cos + x_a sin)``. Which
    coordinates pair up is ``rope_pairing``: ``"rotate_half"`` (default; Hugging Face
    LLaMA / GPT-NeoX ``rotate_half``) pairs ``a = i`` with ``b = i + rotary_dims/2``;
    ``"interleaved"`` (GPT-J, the RoFormer paper) pairs ``a = 2i`` with ``b = 2i + 1``.
    ``rotary_pct`` (GPT-NeoX's name; Hugging Face's ``partial_rotary_factor``) rotates the first
    ``rotary_dims = int(d_k · rotary_pct)`` coordinates of every head and passes the rest through.
    Then ``q~_m · k~_n = q_mᵀ R((n − m) θ) k_n``: scores depend on positions only through ``n − m``.
  - ``"alibi"`` (Press, Smith & Lewis 2022) adds nothing to ``X`` and rotates nothing; it adds a
    bias to every head's scores after scaling, ``S_h[i, j] = c q_i·k_j − m_h |i − j|``, which for
    the causal layers of the paper (``j ≤ i``) is its ``−m_h (i − j)``; a non-causal layer gets
    the symmetric extension. The slopes are ``m_h = 2^(-8 (h+1) / H)`` for ``H`` heads a power of
    two (``2^-1 … 2^-8`` for 8 heads); otherwise, with ``P`` the largest power of two below
    ``H``, the ``P`` slopes of ``P`` heads followed by the first ``H − P`` of every other slope
    of ``2P`` heads (``2^(-8 (2h+1) / (2P))``), the paper's rule (and BLOOM's).
* **grouped-query attention** — ``kv_heads`` key/value heads (``None``: ``heads``; ``1``: multi-query
  attention): ``W_K`` is ``(d_model, kv_heads*d_k)``, ``W_V`` is ``(d_model, kv_heads*d_v)``, and query
  head ``h`` reads key/value head ``h // (heads // kv_heads)`` (Hugging Face ``repeat_kv``).
* **sliding window** — ``window = w``: with ``causal`` query ``i`` may attend to key ``j`` iff
  ``0 <= i − j < w`` (the window counts the query itself, as Hugging Face Mistral / Gemma 2's
  ``sliding_window``); without ``causal`` iff ``|i − j| < w`` (``w − 1`` keys on each side: transformers'
  bidirectional window ``w − 1``, Longformer's window ``2(w − 1)``; :mod:`attnsym.studies.window`); ANDed with
  ``mask`` like ``causal``.
* **soft-capping** — ``softcap = t`` (Gemma 2): after the scale and an ALiBi bias a score ``s``
  becomes ``t·tanh(s/t)``; the mask applies after it.
* **QK-norm** — ``qk_norm`` (Qwen3): each head's query and key rows, after the projections and
  before RoPE, become ``x / sqrt(mean(x²) + qk_norm_eps) ⊙ (o + g)`` with gains ``g_Q``, ``g_K`` of length
  ``d_k`` shared by the heads and the gain offset ``o = qk_norm_offset`` (0; Gemma 3's ``1 + w``: 1).
  ``qk_norm_scope="whole_projection"`` (OLMo 2) norms the whole projection row instead (``heads·d_k``
  coordinates for ``Q``, ``kv_heads·d_k`` for ``K``, gains of those lengths) before it is split into heads.
* **chunked attention** — ``chunk = c`` (Llama 4's ``attention_chunk_size``): query ``i`` may attend
  to key ``j`` iff ``i // c == j // c`` (both in the same chunk of ``c`` tokens), ANDed like ``window``.
* **query temperature** — ``query_temperature = (f, a)`` (Llama 4's ``attn_temperature_tuning`` on its
  NoPE layers, ``floor_scale`` and ``attn_scale``): the query of the token at position ``p`` is
  multiplied by ``1 + a·log(1 + ⌊(p + 1) / f⌋)`` after its QK-norm and rotation.
* **attention sink** — ``sink=True`` (gpt-oss): a learned logit ``s_h`` per head joins every row's
  softmax denominator and takes its own mass, ``A_ij = exp(S_ij) / (exp(s_h) + Σ_k exp(S_ik))``; the
  row sums to ``1 − π_i`` with ``π_i = exp(s_h) / (exp(s_h) + Σ_k exp(S_ik))`` — never renormalised.
  Its parameter is ``s_sink`` of shape ``(1, heads)``.
* **output gate** — ``output_gate=True`` (Qwen3-Next's full-attention layers): the concatenated head
  outputs are gated elementwise before ``W_O``, ``Z' = Z ⊙ σ(X_in W_G)``, with ``W_G`` of shape
  ``(d_model, heads·d_v)`` (Qwen3-Next's ``q_proj`` makes each head's query and gate together).
* **multi-head latent attention** — ``kv_latent_rank = r`` (DeepSeek V2 / V3's ``kv_lora_rank``): every
  head's keys and values are expanded from one RMS-normed latent ``c_j`` of width ``r`` per token
  (``k_h = c W_UK,h``, ``v_h = c W_UV,h``), and the first ``rotary_dims`` coordinates of every head's key are
  one rotary key shared by all heads; ``q_latent_rank`` (``q_lora_rank``) does the same for the queries
  (``q = RMSNorm(x W_DQ) W_UQ``; None: ``q = x W_Q``). ``d_k`` is the rotary plus the non-rotary width,
  ``d_v`` may differ from it; the shapes of :attr:`AttentionSpec.shapes` describe the expanded form.
* **RoPE scaling** — ``rope_scaling`` (a :class:`RopeScaling`, built from the Hugging Face dict):
  ``"linear"``, ``"dynamic"``, ``"llama3"``, ``"yarn"`` and ``"longrope"``, each as transformers
  computes it (:class:`RopeScaling`); YaRN and LongRoPE also scale the rotated coordinates.
* **biases** — ``bias=True``: ``b_Q, b_K, b_V`` and ``b_O`` (with ``W_O``); ``bias="qkv"``: ``b_Q,
  b_K, b_V`` only (Qwen2).
* **numbering** — what a person reads counts from 1; what Python reads counts from 0 and is
  called an *index*. Symbols and labels: ``x_{1,1}``, ``a_1 … a_n``, ``Z^{(1)}``, "token 1",
  "head 1", "input 1", "layer 1" in derivations, figures, graph files, printed lines and help.
  Indices: ``A[..., h, :, :]`` is head ``h + 1``, graph node ``i`` (attribute ``index``) is token
  ``i + 1``, ``head=``/``layer=`` arguments are indices. The counts from 0 in the mathematics are
  the papers' own: the position ``p`` above (the first token, "token 1", is at ``p = 0``) and
  the head index ``h`` of the ALiBi slopes (head 1 has ``h = 0``).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import Any, Literal

from ._checks import boolean, finite_real, is_int, positive_int
from ._positions import (
    POSITION_KINDS,
    ROPE_PAIRINGS,
    ROPE_SCALING_TYPES,
    PositionConventions,
    RopeScaling,
    alibi_slope_exponents,
)
from .errors import SpecError

__all__ = ["DEFAULT_LATENT_NORM_EPS", "DEFAULT_POSITION_BASE", "POSITION_KINDS", "QK_NORM_SCOPES", "ROPE_PAIRINGS",
           "ROPE_SCALING_TYPES", "AttentionSpec", "RopeScaling", "alibi_slope_exponents"]

#: where a QK-norm normalises: each head's rows (Qwen3, Gemma 3) or the whole projection row (OLMo 2)
QK_NORM_SCOPES: tuple[str, ...] = ("per_head", "whole_projection")

#: the base of the sinusoidal frequencies (Vaswani et al. 2017); the one place this number is written
DEFAULT_POSITION_BASE = 10000

#: the epsilon of multi-head latent attention's latent RMSNorm (DeepSeek V3's ``kv_a_layernorm`` and
#: ``q_a_layernorm``: transformers' ``DeepseekV3RMSNorm`` default, not ``rms_norm_eps``); the one place it is written
DEFAULT_LATENT_NORM_EPS = 1e-6

ScaleName = Literal["sqrt", "none"]


def _normalise_mask(mask: Any, n: int) -> tuple[tuple[bool, ...], ...]:
    """Turn any (n, n) boolean array-like into a hashable tuple of tuples."""
    if isinstance(mask, str):
        raise SpecError(f"mask must be a boolean (n, n) array with True = may attend (got the string {mask!r})")
    dtype = getattr(mask, "dtype", None)
    if dtype is not None:
        if str(dtype) not in ("bool", "torch.bool"):
            raise SpecError(
                f"mask must be a boolean (n, n) array with True = may attend (got dtype {dtype}); "
                "an additive float mask (0 / -inf) converts with mask = (m == 0)"
            )
        mask = mask.tolist()
    try:
        rows = [list(row) for row in mask]
    except TypeError:
        raise SpecError(f"mask must be a boolean (n, n) array with True = may attend (got {mask!r})") from None
    lengths = sorted({len(r) for r in rows})
    if len(rows) != n or lengths != [n]:
        got = (len(rows), lengths[0]) if len(lengths) == 1 else f"{len(rows)} rows of lengths {lengths}"
        raise SpecError(f"mask must have shape (n, n) = ({n}, {n}) (got {got})")
    for i, row in enumerate(rows):
        for j, v in enumerate(row):
            if not isinstance(v, bool) and type(v).__name__ != "bool_":
                raise SpecError(
                    f"mask must contain booleans (True = may attend); mask[{i}][{j}] is {v!r} "
                    f"of type {type(v).__name__}"
                )
    return tuple(tuple(bool(v) for v in row) for row in rows)


def _check_scale_value(scale: Any) -> None:
    """A numeric scale must be a positive finite float (``10**400``, NaN and complex values are not)."""
    text = repr(scale) if len(repr(scale)) <= 40 else f"{repr(scale)[:20]}...({len(repr(scale))} characters)"
    try:
        value = float(scale)
    except (OverflowError, TypeError, ValueError):
        raise SpecError(f"scale must be a positive finite real number that fits a float (got scale={text})") from None
    if not math.isfinite(value) or value <= 0:
        raise SpecError(f"scale must be a positive finite number (got scale={text})")


def _check_scale(scale: Any) -> Any:
    if isinstance(scale, str):
        if scale not in ("sqrt", "none"):
            raise SpecError(
                f"scale must be 'sqrt' (1/sqrt(d_k)), 'none' (1), a positive number or a SymPy expression "
                f"(got the string {scale!r}; strings are never parsed as expressions)"
            )
        return scale
    if isinstance(scale, bool):
        raise SpecError(f"scale must be 'sqrt', 'none', a positive number or a SymPy expression (got {scale!r})")
    if isinstance(scale, numbers.Number) and not hasattr(scale, "free_symbols"):
        if isinstance(scale, numbers.Complex) and not isinstance(scale, numbers.Real):
            raise SpecError(f"scale must be a positive real number (got {scale!r})")
        _check_scale_value(scale)
        return scale
    if hasattr(scale, "free_symbols"):  # a SymPy expression, built by the user, never parsed
        if scale.is_positive is False or scale.is_extended_real is False:
            raise SpecError(f"scale must be positive and real (got scale={scale})")
        if not scale.free_symbols:  # a number (nan, zoo, 1 + I, 10**400 included): it must evaluate finite, > 0
            _check_scale_value(scale)
        return scale
    raise SpecError(
        f"scale must be 'sqrt', 'none', a positive number or a SymPy expression "
        f"(got {scale!r} of type {type(scale).__name__})"
    )


def _check_bias(bias: Any) -> bool | str:
    if isinstance(bias, bool) or type(bias).__name__ == "bool_":
        return bool(bias)
    if isinstance(bias, str) and bias == "qkv":
        return "qkv"
    raise SpecError(f"bias must be True (every projection), False or 'qkv' (b_Q, b_K, b_V only, as Qwen2) "
                    f"(got {bias!r})")


def _check_position_base(base: Any, positions: Any) -> int | float:
    """An int >= 2, or a float > 1 as configs write ``rope_theta``; an integral float becomes an int."""
    if is_int(base):
        if base < 2:
            raise SpecError(f"position_base must be an integer >= 2 or a float > 1 (got {base!r})")
        return int(base)
    if isinstance(base, bool) or not isinstance(base, numbers.Real):
        raise SpecError(f"position_base must be an integer >= 2 or a float > 1 (got {base!r} of type "
                        f"{type(base).__name__})")
    value = finite_real("position_base", base)
    if value <= 1:
        raise SpecError(f"position_base must be an integer >= 2 or a float > 1 (got {base!r})")
    if value.is_integer():
        return int(value)
    if positions == "sinusoidal":
        raise SpecError(f"position_base must be an integer for sinusoidal positions (got {base!r}); a non-integral "
                        "base is accepted with positions='rope'")
    return value


def _check_softcap(softcap: Any) -> float | None:
    if softcap is None:
        return None
    value = finite_real("softcap", softcap)
    if value <= 0:
        raise SpecError(f"softcap must be a positive finite number or None (got {softcap!r})")
    return value


@dataclass(frozen=True)
class AttentionSpec(PositionConventions):
    """Sizes and conventions of one (multi-head) self-attention layer.

    Parameters
    ----------
    n : int
        Sequence length (number of tokens).
    d_model : int
        Width of each token vector (columns of ``X``).
    heads : int, default 1
        Number of attention heads.
    d_k : int, optional
        Width of each head's queries and keys; defaults to ``d_model // heads``, in which
        case ``heads`` must divide ``d_model``.
    d_v : int, optional
        Width of each head's values; defaults to ``d_k``.
    causal : bool, default False
        Query ``i`` may attend only to keys ``j <= i``.
    mask : (n, n) boolean array-like, optional
        ``True`` = may attend. Combined with ``causal`` by logical AND.
    scale : {"sqrt", "none"} or number or SymPy expression, default "sqrt"
        Factor applied to ``Q Kᵀ``: ``"sqrt"`` is ``1/sqrt(d_k)``, ``"none"`` is 1, a number is used
        as given — e.g. Gemma 2's ``query_pre_attn_scalar ** -0.5`` (a float such as ``256 ** -0.5``;
        the symbolic view keeps it as that ``Float``; pass ``1 / sympy.sqrt(256)`` for an exact one).
    bias : bool or "qkv", default False
        ``True``: bias rows ``b_Q, b_K, b_V`` (and ``b_O`` with an output projection);
        ``"qkv"``: ``b_Q, b_K, b_V`` only, no ``b_O`` (Qwen2's ``q_proj``/``k_proj``/``v_proj`` biases).
    positions : {None, "sinusoidal", "rope", "alibi"}, default None
        The position scheme (module docstring): ``"sinusoidal"`` adds encodings to ``X``
        before projecting; ``"rope"`` rotates each head's queries and keys after projecting;
        ``"alibi"`` adds a per-head linear distance bias to the scores.
    output_projection : bool, optional
        Apply ``W_O`` after concatenating heads. Defaults to ``heads > 1``; it cannot be
        switched off when ``heads > 1``.
    position_base : int or float, default DEFAULT_POSITION_BASE (10000)
        The base of the sinusoidal and of the rotary frequencies (Hugging Face's ``rope_theta``). A
        float as configs write it (``10000.0``, ``500000.0``) is accepted: an integral float is
        stored as an ``int`` (so the symbolic view is an exact SymPy ``Integer``); a non-integral
        float (RoPE only) stays a float and is a SymPy ``Float`` in the symbolic view.
    rope_pairing : {"rotate_half", "interleaved"}, default "rotate_half"
        Which coordinates RoPE rotates together: ``i`` with ``i + rotary_dims/2`` (Hugging Face
        LLaMA / GPT-NeoX) or ``2i`` with ``2i + 1`` (GPT-J, RoFormer). Only with ``positions="rope"``.
    rotary_pct : float, default 1.0
        Fraction of each head's ``d_k`` coordinates that RoPE rotates (GPT-NeoX's ``rotary_pct``):
        the first ``int(d_k * rotary_pct)``, which must be even and at least 2. Only with
        ``positions="rope"``.
    kv_heads : int, optional
        Key/value heads (grouped-query attention; ``1`` is multi-query attention). ``None`` means
        ``heads``. Must divide ``heads``; ``W_K`` is ``(d_model, kv_heads*d_k)``, ``W_V`` is
        ``(d_model, kv_heads*d_v)``, and query head ``h`` uses key/value head
        ``h // (heads // kv_heads)`` (Hugging Face ``repeat_kv``).
    window : int, optional
        Sliding-window attention. With ``causal=True`` query ``i`` may attend to key ``j`` iff
        ``0 <= i - j < window`` (the window counts the query itself: Hugging Face Mistral /
        Gemma 2 ``sliding_window``); without ``causal``, iff ``|i - j| < window``. ANDed with
        ``mask``.
    softcap : float, optional
        Attention-logit soft-capping (Gemma 2's ``attn_logit_softcapping``): after the scale (and
        an ALiBi bias) a score ``s`` becomes ``softcap * tanh(s / softcap)``; then the mask applies.
    qk_norm : bool, default False
        RMSNorm of each head's query and key vectors over ``d_k``, with learned gains ``g_Q``,
        ``g_K`` (length ``d_k``, shared by all heads, as Qwen3's ``q_norm``/``k_norm``), after the
        projections and before RoPE: ``RMSNorm(x) = x / sqrt(mean(x²) + qk_norm_eps) ⊙ g``.
    qk_norm_eps : float, default 1e-6
        The ``eps`` of the QK-norm (only with ``qk_norm=True``).
    qk_norm_scope : {"per_head", "whole_projection"}, default "per_head"
        Norm each head's rows (Qwen3, Gemma 3) or each whole projection row before the split into
        heads (OLMo 2's ``q_norm`` over ``heads·d_k``). Only with ``qk_norm=True``.
    qk_norm_offset : float, default 0.0
        The QK-norm gain is ``qk_norm_offset + g`` (Gemma 3's ``1 + w``: 1.0). Only with ``qk_norm=True``.
    chunk : int, optional
        Chunked attention (Llama 4's ``attention_chunk_size``): query ``i`` may attend to key ``j`` only
        when ``i // chunk == j // chunk``. ANDed with ``causal``, ``window`` and ``mask``.
    query_temperature : (float, float), optional
        ``(floor_scale, attn_scale)``: queries scaled by ``1 + attn_scale·log(1 + ⌊(p + 1)/floor_scale⌋)``
        at position ``p`` (Llama 4's NoPE layers; module docstring).
    sink : bool, default False
        A learned sink logit per head in every row's softmax denominator (gpt-oss's ``sinks``): the
        parameter ``s_sink`` of shape ``(1, heads)``; rows of ``A`` sum to ``1 − π`` (module docstring).
    output_gate : bool, default False
        An elementwise sigmoid gate on the head outputs before ``W_O``: ``Z ⊙ σ(X_in W_G)``, the
        parameter ``W_G`` of shape ``(d_model, heads·d_v)`` (module docstring).
    kv_latent_rank : int, optional
        Multi-head latent attention (module docstring): the width of the latent every head's keys and
        values are expanded from. Needs ``positions="rope"`` and ``kv_heads == heads``.
    q_latent_rank : int, optional
        The width of the queries' latent (only with ``kv_latent_rank``; None: queries are ``x W_Q``).
    latent_norm_eps : float, default 1e-6
        The ``eps`` of the latents' RMSNorm (:data:`DEFAULT_LATENT_NORM_EPS`; only with ``kv_latent_rank``).
    rope_scaling : RopeScaling or mapping, optional
        RoPE frequency scaling, a :class:`RopeScaling` or the Hugging Face dict it is built from
        (``{"rope_type": "linear", "factor": 4.0}``, ``{"rope_type": "llama3", ...}``; ``"type"`` is
        accepted for ``"rope_type"``). Only with ``positions="rope"``.

    Raises
    ------
    SpecError
        For any impossible value or combination; the message names the argument.

    Examples
    --------
    >>> spec = AttentionSpec(n=2, d_model=4, heads=2)
    >>> spec.d_k, spec.output_projection
    (2, True)
    >>> spec.shapes["W_Q"], spec.shapes["Y"]
    ((4, 4), (2, 4))
    >>> AttentionSpec(n=3, d_model=2, causal=True).allowed
    ((True, False, False), (True, True, False), (True, True, True))
    >>> rope = AttentionSpec(n=4, d_model=8, heads=2, positions="rope", rope_pairing="interleaved")
    >>> rope.rotary_dims, rope.rope_pairs
    (4, ((0, 1, 0), (2, 3, 1)))
    >>> gqa = AttentionSpec(n=4, d_model=8, heads=4, kv_heads=2, causal=True, window=2, softcap=50.0)
    >>> gqa.shapes["W_K"], gqa.kv_group
    ((8, 4), 2)
    >>> gqa.allowed[3]
    (False, False, True, True)
    >>> AttentionSpec(n=2, d_model=10, heads=3)
    Traceback (most recent call last):
    ...
    attnsym.errors.SpecError: heads must divide d_model when d_k is not given (got d_model=10, heads=3)
    """

    n: int
    d_model: int
    heads: int = 1
    # None means 'derive it': __post_init__ always stores an int, so readers see an int
    d_k: int = None  # type: ignore[assignment]
    d_v: int = None  # type: ignore[assignment]
    causal: bool = False
    mask: Any = None
    scale: Any = "sqrt"
    bias: bool | str = False
    positions: str | None = None
    output_projection: bool | None = None
    position_base: int | float = DEFAULT_POSITION_BASE
    rope_pairing: str = "rotate_half"
    rotary_pct: float = 1.0
    kv_heads: int = None  # type: ignore[assignment]  # None means heads; __post_init__ stores an int
    window: int | None = None
    softcap: float | None = None
    qk_norm: bool = False
    qk_norm_eps: float = 1e-6
    rope_scaling: RopeScaling | None = None
    qk_norm_scope: str = "per_head"
    qk_norm_offset: float = 0.0
    chunk: int | None = None
    sink: bool = False
    query_temperature: tuple[float, float] | None = None
    output_gate: bool = False
    kv_latent_rank: int | None = None
    q_latent_rank: int | None = None
    latent_norm_eps: float = DEFAULT_LATENT_NORM_EPS

    def __post_init__(self) -> None:
        set_ = lambda name, value: object.__setattr__(self, name, value)
        n = positive_int("n", self.n)
        d_model = positive_int("d_model", self.d_model)
        heads = positive_int("heads", self.heads)
        set_("n", n)
        set_("d_model", d_model)
        set_("heads", heads)
        if self.d_k is None:
            if d_model % heads:
                raise SpecError(
                    f"heads must divide d_model when d_k is not given (got d_model={d_model}, heads={heads})"
                )
            set_("d_k", d_model // heads)
        else:
            set_("d_k", positive_int("d_k", self.d_k))
        set_("d_v", self.d_k if self.d_v is None else positive_int("d_v", self.d_v))
        boolean("causal", self.causal)
        set_("bias", _check_bias(self.bias))
        kv_heads = heads if self.kv_heads is None else positive_int("kv_heads", self.kv_heads)
        if heads % kv_heads:
            raise SpecError(f"kv_heads must divide heads (got heads={heads}, kv_heads={kv_heads})")
        set_("kv_heads", kv_heads)
        if self.window is not None:
            set_("window", positive_int("window", self.window))
        set_("softcap", _check_softcap(self.softcap))
        set_("qk_norm", boolean("qk_norm", self.qk_norm))
        eps = finite_real("qk_norm_eps", self.qk_norm_eps)
        if eps < 0:
            raise SpecError(f"qk_norm_eps must be a non-negative finite number (got {self.qk_norm_eps!r})")
        if not self.qk_norm and eps != 1e-6:
            raise SpecError(f"qk_norm_eps={self.qk_norm_eps!r} only applies with qk_norm=True")
        set_("qk_norm_eps", eps)
        self._check_variants()
        if self.mask is not None:
            set_("mask", _normalise_mask(self.mask, n))
        set_("scale", _check_scale(self.scale))
        if not any(self.positions is kind or (isinstance(kind, str) and self.positions == kind)
                   for kind in POSITION_KINDS):
            raise SpecError(f"positions must be None, 'sinusoidal', 'rope' or 'alibi' (got {self.positions!r})")
        if self.output_projection is None:
            set_("output_projection", heads > 1)
        elif not isinstance(self.output_projection, bool):
            raise SpecError(f"output_projection must be True, False or None (got {self.output_projection!r})")
        elif heads > 1 and not self.output_projection:
            raise SpecError(
                f"output_projection cannot be False when heads > 1 (got heads={heads}): "
                "the heads are concatenated and mixed by W_O"
            )
        set_("position_base", _check_position_base(self.position_base, self.positions))
        self._check_position_fields()

    def _check_variants(self) -> None:
        """The 2026 variants: QK-norm scope and gain offset, chunk, sink."""
        set_ = lambda name, value: object.__setattr__(self, name, value)
        if self.qk_norm_scope not in QK_NORM_SCOPES:
            raise SpecError(f"qk_norm_scope must be one of {QK_NORM_SCOPES} (got {self.qk_norm_scope!r})")
        offset = finite_real("qk_norm_offset", self.qk_norm_offset)
        if not self.qk_norm and (self.qk_norm_scope != "per_head" or offset != 0.0):
            raise SpecError(f"qk_norm_scope={self.qk_norm_scope!r} and qk_norm_offset={self.qk_norm_offset!r} only "
                            "apply with qk_norm=True")
        set_("qk_norm_offset", offset)
        if self.chunk is not None:
            set_("chunk", positive_int("chunk", self.chunk))
        set_("sink", boolean("sink", self.sink))
        set_("output_gate", boolean("output_gate", self.output_gate))
        if self.query_temperature is not None:
            try:
                floor, scale = self.query_temperature
            except (TypeError, ValueError):
                raise SpecError(f"query_temperature must be None or (floor_scale, attn_scale) (got "
                                f"{self.query_temperature!r})") from None
            floor, scale = finite_real("query_temperature floor_scale", floor), finite_real("query_temperature "
                                                                                            "attn_scale", scale)
            if floor <= 0:
                raise SpecError(f"query_temperature floor_scale must be positive (got {floor!r})")
            set_("query_temperature", (floor, scale))
        self._check_latent()

    def _check_latent(self) -> None:
        """Multi-head latent attention: positive ranks, RoPE on, one key/value head per query head, the latent eps."""
        eps = finite_real("latent_norm_eps", self.latent_norm_eps)
        if eps < 0:
            raise SpecError(f"latent_norm_eps must be a non-negative finite number (got {self.latent_norm_eps!r})")
        if self.kv_latent_rank is None and eps != DEFAULT_LATENT_NORM_EPS:
            raise SpecError(f"latent_norm_eps={self.latent_norm_eps!r} only applies with kv_latent_rank set")
        object.__setattr__(self, "latent_norm_eps", eps)
        if self.kv_latent_rank is None:
            if self.q_latent_rank is not None:
                raise SpecError(f"q_latent_rank={self.q_latent_rank!r} only applies with kv_latent_rank set")
            return
        object.__setattr__(self, "kv_latent_rank", positive_int("kv_latent_rank", self.kv_latent_rank))
        if self.q_latent_rank is not None:
            object.__setattr__(self, "q_latent_rank", positive_int("q_latent_rank", self.q_latent_rank))
        if self.positions != "rope" or self.kv_heads != self.heads:
            raise SpecError(f"kv_latent_rank needs positions='rope' and kv_heads == heads (got positions="
                            f"{self.positions!r}, heads={self.heads}, kv_heads={self.kv_heads})")

    @property
    def qk_norm_kind(self) -> str:
        """``"none"``, ``"per_head"`` or ``"whole_projection"``.

        >>> AttentionSpec(n=1, d_model=4, qk_norm=True, qk_norm_scope="whole_projection").qk_norm_kind
        'whole_projection'
        """
        return self.qk_norm_scope if self.qk_norm else "none"

    @property
    def variants(self) -> tuple[str, ...]:
        """The fields of the 2026 variants this spec sets away from their defaults (a view that does not
        implement one refuses the spec by name, never ignores it).

        >>> AttentionSpec(n=4, d_model=4, causal=True, chunk=2, sink=True).variants
        ('chunk', 'sink')
        """
        named = (("qk_norm_scope", self.qk_norm_scope != "per_head"), ("qk_norm_offset", self.qk_norm_offset != 0.0),
                 ("chunk", self.chunk is not None), ("sink", self.sink),
                 ("query_temperature", self.query_temperature is not None), ("output_gate", self.output_gate),
                 ("kv_latent_rank", self.kv_latent_rank is not None), ("q_latent_rank", self.q_latent_rank is not None))
        return tuple(name for name, on in named if on)

    def refuse_variants(self, view: str, implemented: tuple[str, ...] = ()) -> None:
        """Raise a :class:`SpecError` naming each variant of :attr:`variants` that ``view`` does not implement.

        >>> AttentionSpec(n=2, d_model=2, sink=True).refuse_variants("the symbolic view")
        Traceback (most recent call last):
        ...
        attnsym.errors.SpecError: the symbolic view does not implement sink=True of this spec yet
        """
        missing = [name for name in self.variants if name not in implemented]
        if missing:
            got = ", ".join(f"{name}={getattr(self, name)!r}" for name in missing)
            raise SpecError(f"{view} does not implement {got} of this spec yet")

    # ------------------------------------------------------------------ derived sizes
    @property
    def inner_qk(self) -> int:
        """Total width of queries/keys over all heads, ``heads * d_k``."""
        return self.heads * self.d_k

    @property
    def inner_v(self) -> int:
        """Total width of values over all heads, ``heads * d_v``."""
        return self.heads * self.d_v

    @property
    def kv_group(self) -> int:
        """Query heads per key/value head, ``heads // kv_heads`` (1 without grouped-query attention)."""
        return self.heads // self.kv_heads

    @property
    def inner_k(self) -> int:
        """Total width of the keys over the key/value heads, ``kv_heads * d_k``."""
        return self.kv_heads * self.d_k

    @property
    def inner_kv(self) -> int:
        """Total width of the values over the key/value heads, ``kv_heads * d_v``."""
        return self.kv_heads * self.d_v

    def kv_head_of(self, head: int) -> int:
        """The key/value head that query head ``head`` (an index) reads: ``head // kv_group``.

        >>> AttentionSpec(n=1, d_model=8, heads=4, kv_heads=2).kv_head_of(3)
        1
        """
        if not is_int(head) or not 0 <= head < self.heads:
            raise SpecError(f"head must be an integer in 0 … {self.heads - 1} (got {head!r})")
        return int(head) // self.kv_group

    @property
    def bias_names(self) -> tuple[str, ...]:
        """The biases of the layer: ``b_Q, b_K, b_V`` and ``b_O`` (with ``bias=True`` and ``W_O``)."""
        if not self.bias:
            return ()
        return ("b_Q", "b_K", "b_V") + (("b_O",) if self.output_projection and self.bias is True else ())

    @property
    def d_out(self) -> int:
        """Width of the output ``Y``: ``d_model`` with ``W_O``, else ``heads * d_v``."""
        return self.d_model if self.output_projection else self.inner_v

    @property
    def shapes(self) -> dict[str, tuple[int, int]]:
        """Shape of every matrix of the layer, by name (per-head shapes for Q, K, V, S, A)."""
        n, d = self.n, self.d_model
        shapes = {
            "X": (n, d),
            "W_Q": (d, self.inner_qk),
            "W_K": (d, self.inner_k),
            "W_V": (d, self.inner_kv),
            "Q": (n, self.d_k),
            "K": (n, self.d_k),
            "V": (n, self.d_v),
            "S": (n, n),
            "A": (n, n),
            "Y": (n, self.d_out),
        }
        if self.output_projection:
            shapes["W_O"] = (self.inner_v, d)
        widths = {"b_Q": self.inner_qk, "b_K": self.inner_k, "b_V": self.inner_kv, "b_O": d}
        shapes.update({name: (1, widths[name]) for name in self.bias_names})
        if self.qk_norm:
            whole = self.qk_norm_scope == "whole_projection"
            shapes.update(g_Q=(1, self.inner_qk if whole else self.d_k), g_K=(1, self.inner_k if whole else self.d_k))
        if self.sink:
            shapes["s_sink"] = (1, self.heads)
        if self.output_gate:
            shapes["W_G"] = (d, self.inner_v)
        return shapes

    @property
    def parameter_names(self) -> tuple[str, ...]:
        """Names of the learned parameters, in a fixed order."""
        names = ["W_Q", "W_K", "W_V"]
        if self.output_projection:
            names.append("W_O")
        names += self.bias_names
        if self.qk_norm:
            names += ["g_Q", "g_K"]
        if self.sink:
            names.append("s_sink")
        if self.output_gate:
            names.append("W_G")
        return tuple(names)

    @property
    def parameter_count(self) -> int:
        """Number of learned scalars (weights and biases)."""
        return sum(r * c for name, (r, c) in self.shapes.items() if name in self.parameter_names)

    # ------------------------------------------------------------------ conventions
    @property
    def scale_expr(self):
        """The score scale as an exact SymPy expression (``1/sqrt(d_k)`` for ``"sqrt"``)."""
        import sympy as sp  # lazy: +0.38 s CPU measured; `import attnsym` (spec included) loads no SymPy

        if self.scale == "sqrt":
            return 1 / sp.sqrt(sp.Integer(self.d_k))
        if self.scale == "none":
            return sp.Integer(1)
        if isinstance(self.scale, float):
            return sp.Float(self.scale)
        return sp.sympify(self.scale)  # a number or a SymPy object, never a string

    @property
    def scale_float(self) -> float:
        """The score scale as a Python float (raises if the scale is a free symbol)."""
        if self.scale == "sqrt":
            return 1.0 / math.sqrt(self.d_k)
        if self.scale == "none":
            return 1.0
        if hasattr(self.scale, "free_symbols") and self.scale.free_symbols:
            raise SpecError(f"scale={self.scale} is symbolic; give a number to evaluate numerically")
        return float(self.scale)

    @property
    def allowed(self) -> tuple[tuple[bool, ...], ...] | None:
        """``allowed[i][j]`` — may query ``i`` attend to key ``j``? ``None`` when all may.

        The AND of ``causal`` (``j <= i``), ``window`` (``i - j < window`` with causal,
        ``|i - j| < window`` without), ``chunk`` (``i // chunk == j // chunk``) and ``mask``.
        """
        if not self.causal and self.mask is None and self.window is None and self.chunk is None:
            return None
        n = self.n
        return tuple(tuple(self.may_attend(i, j) for j in range(n)) for i in range(n))

    def may_attend(self, i: int, j: int) -> bool:
        """May query ``i`` attend to key ``j`` (indices)? The rule of :attr:`allowed` for one pair."""
        if self.causal and j > i:
            return False
        if self.window is not None and abs(i - j) >= self.window:
            return False
        if self.chunk is not None and i // self.chunk != j // self.chunk:
            return False
        return self.mask is None or self.mask[i][j]

    def allowed_array(self):
        """The allowed pattern as an ``(n, n)`` NumPy bool array, or ``None`` when all may attend."""
        import numpy as np  # lazy: +0.07 s CPU measured; `import attnsym` loads no NumPy

        allowed = self.allowed
        return None if allowed is None else np.array(allowed, dtype=bool)

    @property
    def fully_masked_rows(self) -> tuple[int, ...]:
        """Indices of queries that may attend to no key (their weights and outputs are 0)."""
        allowed = self.allowed
        if allowed is None:
            return ()
        return tuple(i for i, row in enumerate(allowed) if not any(row))

    def replace(self, **changes: Any) -> AttentionSpec:
        """A copy with some fields changed (validated again); :meth:`with_` is the same method.

        Changing ``heads`` re-derives ``d_k``, ``d_v``, ``output_projection`` and (unless the layer
        had grouped-query attention) ``kv_heads``, unless they are given too.

        >>> AttentionSpec(n=2, d_model=2).replace(n=3).n
        3
        """
        if "heads" in changes and "kv_heads" not in changes:
            changes["kv_heads"] = None if self.kv_heads == self.heads else self.kv_heads
        if "heads" in changes and "d_k" not in changes:
            changes["d_k"] = None
            changes.setdefault("d_v", None)
        if "heads" in changes and "output_projection" not in changes:
            changes["output_projection"] = None
        if "n" in changes and self.mask is not None and "mask" not in changes:
            raise SpecError(f"n cannot change from {self.n} to {changes['n']} while an explicit (n, n) mask is set")
        return dataclasses.replace(self, **changes)

    def with_(self, **changes: Any) -> AttentionSpec:
        """A copy with some fields changed (validated again), e.g. a small size to derive.

        The same as :meth:`replace`.

        >>> big = AttentionSpec(n=128, d_model=512, heads=8, kv_heads=2, causal=True, positions="rope")
        >>> big.with_(n=3, d_model=8, heads=2, kv_heads=1).describe()
        'n=3, d_model=8, heads=2 (d_k=4, d_v=4), kv_heads=1, causal, scale 1/sqrt(d_k), RoPE (rotate_half, base 10000), W_O'
        """
        return self.replace(**changes)

    def describe(self) -> str:
        """One line that says what this layer is.

        >>> AttentionSpec(n=4, d_model=8, heads=2, causal=True).describe()
        'n=4, d_model=8, heads=2 (d_k=4, d_v=4), causal, scale 1/sqrt(d_k), W_O'
        """
        parts = [f"n={self.n}", f"d_model={self.d_model}", f"heads={self.heads} (d_k={self.d_k}, d_v={self.d_v})"]
        if self.kv_heads != self.heads:
            parts.append(f"kv_heads={self.kv_heads}")
        if self.causal:
            parts.append("causal")
        if self.window is not None:
            parts.append(f"window {self.window}")
        if self.chunk is not None:
            parts.append(f"chunk {self.chunk}")
        if self.mask is not None:
            parts.append("explicit mask")
        scale = {"sqrt": "scale 1/sqrt(d_k)", "none": "unscaled"}[self.scale] if isinstance(self.scale, str) \
            else f"scale {self.scale}"
        parts.append(scale)
        if self.softcap is not None:
            parts.append(f"softcap {self.softcap:g}")
        if self.bias:
            parts.append("biases" if self.bias is True else "q/k/v biases")
        if self.qk_norm:
            gain = f", {self.qk_norm_offset:g}+w" if self.qk_norm_offset else ""
            scope = ", whole projection" if self.qk_norm_scope == "whole_projection" else ""
            parts.append(f"QK-norm (eps {self.qk_norm_eps:g}{scope}{gain})")
        if self.sink:
            parts.append("sink logit per head")
        if self.output_gate:
            parts.append("sigmoid output gate")
        if self.kv_latent_rank is not None:
            q = f", query latent {self.q_latent_rank}" if self.q_latent_rank is not None else ""
            parts.append(f"latent K/V {self.kv_latent_rank}{q}, one rotary key shared by all heads")
        if self.query_temperature is not None:
            parts.append("query temperature (floor {:g}, scale {:g})".format(*self.query_temperature))
        if self.positions == "rope":
            rope = f"RoPE ({self.rope_pairing}, base {self.position_base}"
            rope += f", {self.rotary_dims} of {self.d_k} dims" if self.rotary_dims != self.d_k else ""
            rope += f", {self.rope_scaling.describe()} scaling)" if self.rope_scaling is not None else ")"
            parts.append(rope)
        elif self.positions == "alibi":
            parts.append("ALiBi")
        elif self.positions:
            parts.append(f"{self.positions} positions")
        if self.output_projection:
            parts.append("W_O")
        return ", ".join(parts)


def require_rope_spec(spec: Any) -> AttentionSpec:
    """``spec`` if it is an :class:`AttentionSpec` with ``positions="rope"``, else a :class:`SpecError`.

    The one check in front of the RoPE functions of both twins (:mod:`attnsym.symbolic.positions`
    and :mod:`attnsym.numeric.positions`).

    >>> require_rope_spec(AttentionSpec(n=2, d_model=4, positions="rope")).positions
    'rope'
    >>> require_rope_spec(AttentionSpec(n=2, d_model=4))
    Traceback (most recent call last):
    ...
    attnsym.errors.SpecError: spec must have positions='rope' for rotary embeddings (got positions=None)
    """
    if not isinstance(spec, AttentionSpec):
        raise SpecError(f"spec must be an AttentionSpec (got {spec!r} of type {type(spec).__name__})")
    if spec.positions != "rope":
        raise SpecError(f"spec must have positions='rope' for rotary embeddings (got positions={spec.positions!r})")
    return spec
