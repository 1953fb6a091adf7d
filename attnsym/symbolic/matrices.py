r"""The symbolic forward pass: every matrix of a self-attention layer as SymPy expressions.

Shapes (``h`` heads of width ``d_k``/``d_v``, ``m = d_model``)::

    X, PE, X_in   (n, m)          tokens, positions, tokens + positions
    W_Q, W_K      (m, h d_k)      W_V (m, h d_v)     W_O (h d_v, m)
    Q, K          (n, h d_k)      V (n, h d_v)       heads are column blocks
    Q~_h, K~_h    (n, d_k)        per head with RoPE: row p rotated, R(p θ) q_p
    B_h           (n, n)          per head with ALiBi: the bias −m_h |i − j|
    S_h, A_h      (n, n)          per head: scores and row-softmax weights
    Z_h           (n, d_v)        per head: A_h V_h
    Z             (n, h d_v)      heads concatenated
    W_G, Γ        (m, h d_v), (n, h d_v)   with an output gate: Γ = σ(X_in W_G), Z ⊙ Γ replaces Z
    Y             (n, d_out)      Z W_O + b_O, or Z

.. math::

    Q = X W_Q + \mathbf 1 b_Q,\quad S_h = c\, \tilde Q_h \tilde K_h^\top + B_h,\quad
    A_h = \operatorname{softmax}_{\text{row}}(S_h),\quad Y = [A_1 V_1, \dots, A_h V_h]\, W_O + \mathbf 1 b_O

with the scale ``c`` of the spec; ``X_in = X + PE`` with sinusoidal positions (else ``X``),
``Q~_h = Q_h``, ``K~_h = K_h`` without RoPE and ``B_h = 0`` without ALiBi. Masked scores
are ``-oo`` and their weights exactly 0; a query that may attend to nothing gets an all-zero
row (the :class:`~attnsym.AttentionSpec` convention). With a sink (``sink=True``) the row's
denominator gains ``exp(s_h)``; with an output gate (``output_gate=True``, Qwen3-Next)
``Y = (Z ⊙ σ(X_in W_G)) W_O``. Multi-head latent attention (``kv_latent_rank``, DeepSeek V3) changes
only the projections: ``Q``, ``K``, ``V`` are the expanded ones of
:mod:`attnsym.symbolic.parameters` (``K_h = [k^R | c W_UK,h]``, ``V_h = c W_UV,h`` with the normed
latent ``c``), so each score is the split ``q^R_h·k^R + q^C_h·k^C_h``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import sympy as sp

from .._exact import exact, exact_entries
from ..errors import ShapeError, SpecError
from ..spec import AttentionSpec
from ._compile import Argument, Output, Program, compile_program
from .cost import estimate_cost
from .naming import input_symbols
from .operations import matmul, ones_times, row_softmax, scores, sink_softmax
from .parameters import parameter_shapes
from .position_hooks import position_hooks

# matmul, row_softmax and scores live in .operations; they stay importable from here as before
__all__ = ["SYMBOLIC_VARIANTS", "SymbolicAttention", "attention", "exact_number", "matmul", "rms_norm_rows",
           "row_softmax", "scores", "sigmoid", "softcap_scores"]

Matrix = sp.ImmutableMatrix


@dataclass(frozen=True, eq=False, repr=False)
class SymbolicAttention:
    """Every matrix of one self-attention layer, as SymPy ``ImmutableMatrix`` objects.

    Built by :func:`attention`; see the module docstring for shapes and formulas. Fields
    ``W_O``, ``b_*`` and ``PE`` are ``None`` when the spec has no output projection, no
    biases or no positions. Per-head tuples hold one matrix per head; ``S_heads`` has
    ``-oo`` where attention is masked, ``A_heads`` exact zeros there. With RoPE,
    ``Q_rot_heads`` and ``K_rot_heads`` are the rotated queries and keys the scores use; with
    ALiBi, ``B_heads`` are the biases added to the scores (both ``None`` otherwise). With
    QK-norm, ``g_Q``, ``g_K`` are the gains and ``Q_norm_heads``, ``K_norm_heads`` the normalised
    rows (before RoPE). With grouped-query attention (``spec.kv_heads < spec.heads``) ``K`` and
    ``V`` have ``kv_heads`` column blocks and ``K_heads[h]``, ``V_heads[h]`` are the block
    ``spec.kv_head_of(h)`` that query head ``h`` reads (one entry per query head). With
    ``qk_norm_scope="whole_projection"`` the norm runs over the whole ``Q`` / ``K`` row before the
    split (``Q_norm_heads`` are the normed rows' head blocks); the gain is ``qk_norm_offset + g``.
    With a sink, ``s_sink`` is the ``1 × heads`` row of sink logits ``s_h`` and
    ``sink_mass_heads[h]`` the ``n × 1`` column of its mass ``π`` (each row of ``A_heads[h]`` sums to
    ``1 − π``). With an output gate, ``W_G`` is its weights, ``gate`` the ``n × heads·d_v`` matrix
    ``σ(X_in W_G)`` and ``Y`` is made from ``Z ⊙ gate`` (``Z`` stays the heads' concatenation). With
    multi-head latent attention ``W_K``, ``W_V`` are ``None`` (``W_Q`` too with a query latent), the
    latent's parameters are ``W_DKV``, ``g_CKV``, ``W_KR``, ``W_UK``, ``W_UV`` (``W_DQ``, ``g_CQ``, ``W_UQ``;
    :mod:`attnsym.symbolic.parameters`), ``C_KV`` the ``n × r`` normed latent, ``K_R`` the ``n × ρ``
    rotary key shared by every head (before rotation), ``C_Q`` the normed query latent; ``Q``, ``K``,
    ``V`` are the expanded projections every head reads.
    """

    spec: AttentionSpec
    X: sp.ImmutableMatrix
    PE: sp.ImmutableMatrix | None
    X_in: sp.ImmutableMatrix
    W_Q: sp.ImmutableMatrix | None
    W_K: sp.ImmutableMatrix | None
    W_V: sp.ImmutableMatrix | None
    W_O: sp.ImmutableMatrix | None
    b_Q: sp.ImmutableMatrix | None
    b_K: sp.ImmutableMatrix | None
    b_V: sp.ImmutableMatrix | None
    b_O: sp.ImmutableMatrix | None
    Q: sp.ImmutableMatrix
    K: sp.ImmutableMatrix
    V: sp.ImmutableMatrix
    Q_heads: tuple[sp.ImmutableMatrix, ...]
    K_heads: tuple[sp.ImmutableMatrix, ...]
    V_heads: tuple[sp.ImmutableMatrix, ...]
    S_heads: tuple[sp.ImmutableMatrix, ...]
    A_heads: tuple[sp.ImmutableMatrix, ...]
    Z_heads: tuple[sp.ImmutableMatrix, ...]
    Z: sp.ImmutableMatrix
    Y: sp.ImmutableMatrix
    Q_rot_heads: tuple[sp.ImmutableMatrix, ...] | None = None
    K_rot_heads: tuple[sp.ImmutableMatrix, ...] | None = None
    B_heads: tuple[sp.ImmutableMatrix, ...] | None = None
    g_Q: sp.ImmutableMatrix | None = None
    g_K: sp.ImmutableMatrix | None = None
    Q_norm_heads: tuple[sp.ImmutableMatrix, ...] | None = None
    K_norm_heads: tuple[sp.ImmutableMatrix, ...] | None = None
    s_sink: sp.ImmutableMatrix | None = None
    sink_mass_heads: tuple[sp.ImmutableMatrix, ...] | None = None
    W_G: sp.ImmutableMatrix | None = None
    gate: sp.ImmutableMatrix | None = None
    W_DQ: sp.ImmutableMatrix | None = None
    g_CQ: sp.ImmutableMatrix | None = None
    W_UQ: sp.ImmutableMatrix | None = None
    W_DKV: sp.ImmutableMatrix | None = None
    g_CKV: sp.ImmutableMatrix | None = None
    W_KR: sp.ImmutableMatrix | None = None
    W_UK: sp.ImmutableMatrix | None = None
    W_UV: sp.ImmutableMatrix | None = None
    C_Q: sp.ImmutableMatrix | None = None
    C_KV: sp.ImmutableMatrix | None = None
    K_R: sp.ImmutableMatrix | None = None

    def __repr__(self) -> str:
        return f"SymbolicAttention({self.spec.describe()})"

    def weight(self, name: str) -> sp.ImmutableMatrix:
        """The projection matrix ``name`` (``"W_Q"``, ``"W_K"``, ``"W_V"``), which a layer with a latent lacks.

        >>> attention(AttentionSpec(n=1, d_model=1)).weight("W_K")
        Matrix([[W^{K}_{1,1}]])
        """
        value = getattr(self, name) if name in ("W_Q", "W_K", "W_V") else None
        if value is None:
            raise SpecError(f"this layer has no {name} (got {name!r}; multi-head latent attention expands its keys, "
                            "values and latent queries from W_DKV, W_KR, W_UK, W_UV and W_DQ, W_UQ)")
        return value

    # ------------------------------------------------------------------ single-head views
    def _single(self, name: str) -> sp.ImmutableMatrix:
        if self.spec.heads != 1:
            raise SpecError(
                f"{name} is defined for one head only (got heads={self.spec.heads}); use {name}_heads[h] for head h"
            )
        return getattr(self, f"{name}_heads")[0]

    @property
    def S(self) -> sp.ImmutableMatrix:
        """Scores of the single head (``-oo`` where masked); SpecError when heads > 1."""
        return self._single("S")

    @property
    def A(self) -> sp.ImmutableMatrix:
        """Attention weights of the single head; SpecError when heads > 1."""
        return self._single("A")

    @property
    def inputs(self) -> dict[str, sp.ImmutableMatrix]:
        """``{"X": X, "W_Q": W_Q, …}``: ``X`` first, then the parameters of
        :func:`~attnsym.symbolic.parameters.parameter_shapes` (``spec.parameter_names`` but with a latent).

        Examples
        --------
        >>> list(attention(AttentionSpec(n=2, d_model=2, bias=True)).inputs)
        ['X', 'W_Q', 'W_K', 'W_V', 'b_Q', 'b_K', 'b_V']
        """
        return {"X": self.X, **{name: getattr(self, name) for name in parameter_shapes(self.spec)}}

    @property
    def outputs(self) -> dict[str, Any]:
        """The computed matrices by name: ``Q, K, V, Z, Y`` (and ``PE``, ``X_in``), plus ``S, A``
        for one head or ``S_heads, A_heads`` for several."""
        out: dict[str, Any] = {"X_in": self.X_in, "Q": self.Q, "K": self.K, "V": self.V}
        if self.PE is not None:
            out["PE"] = self.PE
        for name in ("C_Q", "C_KV", "K_R", "Q_norm_heads", "K_norm_heads", "Q_rot_heads", "K_rot_heads", "B_heads",
                     "sink_mass_heads", "gate"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.spec.heads == 1:
            out.update(S=self.S, A=self.A)
        out.update(S_heads=self.S_heads, A_heads=self.A_heads, Z_heads=self.Z_heads, Z=self.Z, Y=self.Y)
        return out

    # ------------------------------------------------------------------ concrete values
    def subs(self, values: Mapping[Any, Any]) -> SymbolicAttention:
        """Substitute concrete values for some or all inputs; exact inputs give exact results.

        Parameters
        ----------
        values : mapping
            Input name (``"X"``, ``"W_Q"``, …, see :attr:`inputs`) to an array-like of the
            input's shape (nested lists, NumPy array, SymPy Matrix; a bias row may also be
            1-d) or a single number that fills the whole matrix. Python ints and NumPy integers become ``Integer``,
            :class:`fractions.Fraction` and SymPy rationals stay exact, floats become ``Float``.
            A SymPy ``Symbol`` key (e.g. a symbolic scale) substitutes that symbol.

        Returns
        -------
        SymbolicAttention
            A new object; the spec is unchanged.

        Raises
        ------
        SpecError
            Unknown input name.
        ShapeError
            Wrong shape, non-numeric or non-finite entries.

        Examples
        --------
        >>> sym = attention(AttentionSpec(n=2, d_model=1, scale="none"))
        >>> num = sym.subs({"X": [[0], [1]], "W_Q": 1, "W_K": 1, "W_V": [[2]]})
        >>> num.A
        Matrix([
        [             1/2,              1/2],
        [1/(1 + E), E/(1 + E)]])
        >>> num.Y
        Matrix([
        [          1],
        [2*E/(1 + E)]])
        """
        if not isinstance(values, Mapping):
            raise SpecError(f"values must be a mapping from input name to values (got {type(values).__name__})")
        inputs = self.inputs
        replacements: dict[sp.Basic, sp.Basic] = {}
        for key, value in values.items():
            if isinstance(key, sp.Symbol):
                replacements[key] = exact(str(key), value, error=ShapeError)
                continue
            if key not in inputs:
                raise SpecError(f"values has an unknown input {key!r}; the inputs of this layer are {list(inputs)}")
            target = inputs[key]
            matrix = exact_entries(key, value, target.shape)
            for sym, val in zip(target, matrix, strict=True):
                if isinstance(sym, sp.Symbol):
                    replacements[sym] = val
        if not replacements:
            return self
        changes: dict[str, Any] = {}
        for field in dataclasses.fields(self):
            if field.name == "spec":
                continue
            current = getattr(self, field.name)
            if current is None:
                continue
            if isinstance(current, tuple):
                changes[field.name] = tuple(m.xreplace(replacements) for m in current)
            else:
                changes[field.name] = current.xreplace(replacements)
        return dataclasses.replace(self, **changes)

    def free_inputs(self) -> dict[str, list[sp.Symbol]]:
        """Inputs that still contain symbols, with their symbols in row-major order."""
        free: dict[str, list[sp.Symbol]] = {}
        for name, matrix in self.inputs.items():
            symbols = [s for s in matrix if isinstance(s, sp.Symbol)]
            if symbols:
                free[name] = symbols
        return free

    def _program(self, names: tuple[str, ...]) -> Program:
        """The outputs ``names`` as a program for :func:`~attnsym.symbolic._compile.compile_program`.

        Each allowed score is defined once (``s = S_ij``), then its exponential (``e = exp(s)``);
        ``A``, ``Z`` and ``Y`` are written in the exponentials, and every row is declared a
        softmax row, so the compiler shifts it by its maximum (the fields keep ``exp(s_j) / sum``).
        """
        definitions: list[tuple[sp.Symbol, sp.Expr]] = []
        rows: list[tuple[list[sp.Symbol], list[sp.Symbol]]] = []

        def weights(h: int, S: sp.ImmutableMatrix) -> tuple[sp.ImmutableMatrix, sp.ImmutableMatrix]:
            out = [[sp.Integer(0)] * S.shape[1] for _ in range(S.shape[0])]
            mass = [[sp.Integer(1 if self.s_sink is not None else 0)] for _ in range(S.shape[0])]
            for i in range(S.shape[0]):
                keep: list[Any] = [j for j in range(S.shape[1]) if S[i, j] != -sp.oo]
                if not keep:
                    continue
                logits = {j: S[i, j] for j in keep}
                if self.s_sink is not None:  # the sink logit joins the row (and its max shift), its mass kept apart
                    keep.append("sink")
                    logits["sink"] = self.s_sink[0, h]
                s = {j: sp.Dummy(f"s{h}_{i}_{j}", real=True) for j in keep}
                e = {j: sp.Dummy(f"e{h}_{i}_{j}", positive=True) for j in keep}
                definitions.extend((s[j], logits[j]) for j in keep)
                definitions.extend((e[j], sp.exp(s[j])) for j in keep)
                rows.append(([s[j] for j in keep], [e[j] for j in keep]))
                total = sp.Add(*e.values())
                for j in keep:
                    if j == "sink":
                        mass[i][0] = e[j] / total
                    else:
                        out[i][j] = e[j] / total
            return Matrix(out), Matrix(mass)

        pairs = [weights(h, S) for h, S in enumerate(self.S_heads)]
        A_heads = tuple(a for a, _ in pairs)
        Z_heads = tuple(matmul(a, v) for a, v in zip(A_heads, self.V_heads, strict=True))
        Z = Matrix(sp.Matrix.hstack(*Z_heads))
        Y = _output(Z, self.gate, self.W_O, self.b_O)
        shifted: dict[str, Any] = {"A_heads": A_heads, "Z_heads": Z_heads, "Z": Z, "Y": Y}
        if self.s_sink is not None:
            shifted["sink_mass_heads"] = tuple(m for _, m in pairs)
        if self.spec.heads == 1:
            shifted["A"] = A_heads[0]
        available = self.outputs
        outputs = []
        for name in names:
            value = shifted.get(name, available[name])
            matrices = value if isinstance(value, tuple) else (value,)
            shape = (len(matrices), *matrices[0].shape) if isinstance(value, tuple) else tuple(matrices[0].shape)
            outputs.append(Output(name, shape, tuple(e for m in matrices for e in m)))
        arguments = tuple(Argument.of(name, self.inputs[name]) for name in self.free_inputs())
        return Program(arguments, tuple(outputs), tuple(definitions), tuple(rows),
                       hint="; substitute them with .subs({symbol: value}) before lambdify")

    def lambdify(self, *names: str, modules: str = "numpy") -> Callable[..., dict[str, Any]]:
        """Compile outputs to a numeric function (common subexpressions shared).

        Parameters
        ----------
        *names : str
            Outputs to compute, from :attr:`outputs` (``"Y"``, ``"A"``, ``"A_heads"``, ``"Q"``,
            …). Default: ``"Y"`` and ``"A"`` (``"A_heads"`` with several heads).
        modules : {"numpy", "cupy"}, default "numpy"
            The array library of the compiled function (a single set of NumPy inputs is
            evaluated with Python floats). Softmax rows compile as ``exp(s_j - max_k s_k) / sum``
            (the same weights as the fields' ``exp(s_j) / sum``), so large scores stay finite.

        Returns
        -------
        callable
            ``f(**arrays) -> dict``: one keyword per input that is still symbolic (see
            :meth:`free_inputs`), each an array of the input's shape, optionally with leading
            batch axes ``(..., rows, cols)``. Returns ``name -> ndarray`` with the same batch
            axes and the inputs' floating dtype; ``*_heads`` outputs get a head axis before
            the matrix axes.

        Raises
        ------
        SpecError
            Unknown output name, or free symbols that are not inputs (a symbolic scale:
            substitute it with :meth:`subs` first).

        Examples
        --------
        >>> sym = attention(AttentionSpec(n=2, d_model=2))
        >>> f = sym.lambdify("A")
        >>> out = f(X=np.eye(2), W_Q=np.zeros((2, 2)), W_K=np.eye(2), W_V=np.eye(2))
        >>> out["A"]
        array([[0.5, 0.5],
               [0.5, 0.5]])
        """
        available = self.outputs
        names = names or (("Y", "A") if self.spec.heads == 1 else ("Y", "A_heads"))
        for name in names:
            if name not in available:
                raise SpecError(f"cannot lambdify {name!r}; the outputs of this layer are {list(available)}")
        return compile_program(self._program(tuple(names)), modules)


def attention(spec: AttentionSpec, *, max_terms: float | None = None,
              latent_eps: float | None = None) -> SymbolicAttention:
    """Build the symbolic forward pass of the layer ``spec`` describes.

    Parameters
    ----------
    spec : AttentionSpec
        Sizes, heads, mask, scale, biases and positions; the variants ``chunk``, ``sink``, QK-norm over
        the whole projection (``qk_norm_scope``) with a gain offset, ``output_gate`` and multi-head
        latent attention (``kv_latent_rank``, ``q_latent_rank``) included.
    max_terms : float, optional
        Size guard: the estimate of :func:`~attnsym.symbolic.estimate_cost` must not exceed
        it (default :data:`~attnsym.symbolic.cost.DEFAULT_MAX_TERMS`; ``float("inf")``
        disables the guard). Checked before anything is built.
    latent_eps : float, optional
        The epsilon of multi-head latent attention's latent RMSNorm; default the spec's
        ``latent_norm_eps`` (:data:`~attnsym.symbolic.parameters.DEFAULT_LATENT_EPS`, 1e-6).

    Returns
    -------
    SymbolicAttention

    Raises
    ------
    SpecError
        ``spec`` is not an AttentionSpec, or sets a variant this view does not implement
        (``query_temperature``).
    SizeLimitError
        The estimated size exceeds ``max_terms``.

    Examples
    --------
    >>> sym = attention(AttentionSpec(n=2, d_model=1, scale="none"))
    >>> sym.Q
    Matrix([
    [W^{Q}_{1,1}*x_{1,1}],
    [W^{Q}_{1,1}*x_{2,1}]])
    >>> sym.S[0, 1]
    W^{K}_{1,1}*W^{Q}_{1,1}*x_{1,1}*x_{2,1}
    >>> sym.A[0, 1] == sp.exp(sym.S[0, 1]) / (sp.exp(sym.S[0, 0]) + sp.exp(sym.S[0, 1]))
    True
    >>> attention(AttentionSpec(n=2, d_model=2, causal=True)).A[0, :]
    Matrix([[1, 0]])
    >>> attention(AttentionSpec(n=1, d_model=1, output_gate=True, scale="none")).Y
    Matrix([[W^{V}_{1,1}*x_{1,1}/(1 + exp(-W^{G}_{1,1}*x_{1,1}))]])
    """
    if not isinstance(spec, AttentionSpec):
        raise SpecError(f"spec must be an AttentionSpec (got {spec!r} of type {type(spec).__name__})")
    spec.refuse_variants("attnsym.symbolic.attention", implemented=SYMBOLIC_VARIANTS)
    estimate_cost(spec).check(max_terms)
    hooks = position_hooks(spec)
    X = input_symbols("X", (spec.n, spec.d_model))
    PE = hooks.position_vectors()  # hook (a): vectors added to the tokens
    X_in = X if PE is None else Matrix(X + PE)
    p = _parameters(spec)
    latent = _latent(spec, X_in, p, spec.latent_norm_eps if latent_eps is None else latent_eps)
    if latent is None:
        Q, K, V = (_project(X_in, p[f"W_{t}"], p[f"b_{t}"]) for t in "QKV")
    else:
        Q, K, V = latent["Q"], latent["K"], latent["V"]
    Q_heads, K_heads, V_heads = _head_blocks(spec, Q, K, V)
    Q_norm, K_norm = _qk_norm(spec, Q, K, p["g_Q"], p["g_K"])
    Q_used, K_used = Q_norm or Q_heads, K_norm or K_heads
    Q_rot = K_rot = None
    if hooks.rotates:  # hook (b): each head's queries and keys rotated by their positions
        Q_rot, K_rot = tuple(hooks.rotate(q) for q in Q_used), tuple(hooks.rotate(k) for k in K_used)
    B_heads = hooks.score_biases()  # hook (c): a bias on the scores
    S_heads = _scores(spec, Q_rot or Q_used, K_rot or K_used, B_heads)
    A_heads, pi_heads = _weights(spec, S_heads, p["s_sink"])
    Z_heads = tuple(matmul(a, v) for a, v in zip(A_heads, V_heads, strict=True))
    Z = Matrix(sp.Matrix.hstack(*Z_heads))
    gate = None if p["W_G"] is None else sigmoid(matmul(X_in, p["W_G"]))
    Y = _output(Z, gate, p["W_O"], p["b_O"])
    latent_fields = {} if latent is None else {k: v for k, v in latent.items() if k not in "QKV"}
    return SymbolicAttention(
        spec=spec, X=X, PE=PE, X_in=X_in, W_Q=p["W_Q"], W_K=p["W_K"], W_V=p["W_V"], W_O=p["W_O"], b_Q=p["b_Q"],
        b_K=p["b_K"], b_V=p["b_V"], b_O=p["b_O"], Q=Q, K=K, V=V, Q_heads=Q_heads, K_heads=K_heads, V_heads=V_heads,
        S_heads=S_heads, A_heads=A_heads, Z_heads=Z_heads, Z=Z, Y=Y, Q_rot_heads=Q_rot, K_rot_heads=K_rot,
        B_heads=B_heads, g_Q=p["g_Q"], g_K=p["g_K"], Q_norm_heads=Q_norm, K_norm_heads=K_norm, s_sink=p["s_sink"],
        sink_mass_heads=pi_heads, W_G=p["W_G"], gate=gate,
        **{name: p[name] for name in _LATENT_PARAMETERS}, **latent_fields,
    )


#: the variants of :attr:`attnsym.AttentionSpec.variants` the symbolic forward pass implements
SYMBOLIC_VARIANTS = ("chunk", "sink", "qk_norm_scope", "qk_norm_offset", "output_gate", "kv_latent_rank",
                     "q_latent_rank")
_LATENT_PARAMETERS = ("W_DQ", "g_CQ", "W_UQ", "W_DKV", "g_CKV", "W_KR", "W_UK", "W_UV")
_FIELDS = ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O", "g_Q", "g_K", "s_sink", "W_G", *_LATENT_PARAMETERS)


def _parameters(spec: AttentionSpec) -> dict[str, sp.ImmutableMatrix | None]:
    """The layer's parameter symbols by name (``W_Q`` … ``W_UV``), ``None`` for those the spec does not have."""
    shapes = parameter_shapes(spec)
    return {name: input_symbols(name, shapes[name]) if name in shapes else None for name in _FIELDS}


def _latent(spec: AttentionSpec, X_in: sp.ImmutableMatrix, p: dict[str, sp.ImmutableMatrix | None],
            eps: float) -> dict[str, sp.ImmutableMatrix] | None:
    """Multi-head latent attention's expanded ``Q``, ``K``, ``V`` and its latents, or ``None`` without a latent.

    ``C_KV = RMSNorm(X_in W_DKV) ⊙ g_CKV``, ``K_R = X_in W_KR``; head ``h``'s key ``[K_R | C_KV W_UK,h]``
    and value ``C_KV W_UV,h``; ``Q = X_in W_Q`` or ``RMSNorm(X_in W_DQ) ⊙ g_CQ · W_UQ``.
    """
    if spec.kv_latent_rank is None:
        return None
    out: dict[str, sp.ImmutableMatrix] = {}
    if p["W_DQ"] is not None:
        out["C_Q"] = rms_norm_rows(matmul(X_in, p["W_DQ"]), p["g_CQ"], eps)
        Q = matmul(out["C_Q"], p["W_UQ"])
    else:
        Q = matmul(X_in, p["W_Q"])
    C = rms_norm_rows(matmul(X_in, p["W_DKV"]), p["g_CKV"], eps)
    K_R = matmul(X_in, p["W_KR"])
    K_C, V = matmul(C, p["W_UK"]), matmul(C, p["W_UV"])
    nope = spec.d_k - spec.rotary_dims
    K = Matrix(sp.Matrix.hstack(*(sp.Matrix.hstack(K_R, K_C[:, h * nope:(h + 1) * nope]) for h in range(spec.heads))))
    out.update(C_KV=C, K_R=K_R, Q=Q, K=K, V=V)
    return out


def _output(Z: sp.ImmutableMatrix, gate: sp.ImmutableMatrix | None, W_O: sp.ImmutableMatrix | None,
            b_O: sp.ImmutableMatrix | None) -> sp.ImmutableMatrix:
    """``Y = (Z ⊙ gate) W_O + 1 b_O``: the gate and ``W_O`` (and ``b_O``) where the layer has them."""
    if gate is not None:
        Z = Matrix(Z.multiply_elementwise(gate))
    return Z if W_O is None else _project(Z, W_O, b_O)


def sigmoid(M: sp.MatrixBase) -> sp.ImmutableMatrix:
    r"""The logistic function :math:`\sigma(z) = 1 / (1 + e^{-z})` of every entry (the output gate's).

    >>> sigmoid(sp.Matrix([[0, sp.Symbol("z")]]))
    Matrix([[1/2, 1/(1 + exp(-z))]])
    """
    return Matrix(M.shape[0], M.shape[1], lambda i, j: 1 / (1 + sp.exp(-M[i, j])))


def _project(M: sp.ImmutableMatrix, W: sp.ImmutableMatrix | None, b: sp.ImmutableMatrix | None) -> sp.ImmutableMatrix:
    """``M W + 1 b`` (``b`` optional): a projection of the rows of ``M``."""
    out = matmul(M, W)
    return out if b is None else Matrix(out + ones_times(b, M.shape[0]))


def _blocks(M: sp.ImmutableMatrix, width: int, blocks: list[int]) -> tuple[sp.ImmutableMatrix, ...]:
    """The column blocks ``blocks`` of ``M``, each ``width`` wide."""
    return tuple(Matrix(M[:, b * width:(b + 1) * width]) for b in blocks)


def _head_blocks(spec: AttentionSpec, Q: sp.ImmutableMatrix, K: sp.ImmutableMatrix,
                 V: sp.ImmutableMatrix | None = None) -> tuple[tuple[sp.ImmutableMatrix, ...], ...]:
    """Each query head's column block of ``Q``, and the ``K`` (and ``V``) block of the key/value head it reads."""
    queries = list(range(spec.heads))
    kv = [spec.kv_head_of(hh) for hh in queries]  # grouped-query attention: the block each query head reads
    qk = (_blocks(Q, spec.d_k, queries), _blocks(K, spec.d_k, kv))
    return qk if V is None else (*qk, _blocks(V, spec.d_v, kv))


def _qk_norm(spec: AttentionSpec, Q: sp.ImmutableMatrix, K: sp.ImmutableMatrix, g_Q: sp.ImmutableMatrix | None,
             g_K: sp.ImmutableMatrix | None) -> tuple[tuple[sp.ImmutableMatrix, ...] | None, ...]:
    """The QK-normed head blocks (before any rotation), or ``(None, None)`` without QK-norm.

    RMSNorm of each row of each head (Qwen3), or of the whole row before the split (OLMo 2,
    ``qk_norm_scope="whole_projection"``), with the gains ``qk_norm_offset + g``.
    """
    if g_Q is None or g_K is None:
        return None, None
    offset = exact_number(spec.qk_norm_offset, "qk_norm_offset")
    gQ, gK = (Matrix(g + offset * sp.ones(*g.shape)) if offset else g for g in (g_Q, g_K))
    eps = spec.qk_norm_eps
    if spec.qk_norm_scope == "whole_projection":
        return _head_blocks(spec, rms_norm_rows(Q, gQ, eps), rms_norm_rows(K, gK, eps))
    Q_heads, K_heads = _head_blocks(spec, Q, K)
    return tuple(rms_norm_rows(q, gQ, eps) for q in Q_heads), tuple(rms_norm_rows(k, gK, eps) for k in K_heads)


def _scores(spec: AttentionSpec, Q_heads: tuple[sp.ImmutableMatrix, ...], K_heads: tuple[sp.ImmutableMatrix, ...],
            B_heads: tuple[sp.ImmutableMatrix, ...] | None) -> tuple[sp.ImmutableMatrix, ...]:
    """Every head's scores ``c Q Kᵀ`` (``-oo`` where masked), plus the bias ``B_h``, then the soft cap."""
    allowed = spec.allowed
    S_heads = tuple(scores(q, k, spec.scale_expr, allowed) for q, k in zip(Q_heads, K_heads, strict=True))
    if B_heads is not None:  # -oo (masked) + bias stays -oo
        S_heads = tuple(Matrix(s + b) for s, b in zip(S_heads, B_heads, strict=True))
    if spec.softcap is not None:  # t·tanh(s/t) on every allowed score; masked ones stay -oo
        S_heads = tuple(softcap_scores(s, spec.softcap) for s in S_heads)
    return S_heads


def _weights(spec: AttentionSpec, S_heads: tuple[sp.ImmutableMatrix, ...], sinks: sp.ImmutableMatrix | None
             ) -> tuple[tuple[sp.ImmutableMatrix, ...], tuple[sp.ImmutableMatrix, ...] | None]:
    """Every head's row-softmax weights, and with a sink its mass ``π`` per row (``None`` without one)."""
    allowed = spec.allowed
    if sinks is None:
        return tuple(row_softmax(s, allowed) for s in S_heads), None
    # the sink logit of head h in every row's denominator; its mass π kept apart
    pairs = [sink_softmax(s, sinks[0, hh], allowed) for hh, s in enumerate(S_heads)]
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def exact_number(value: Any, name: str = "value") -> sp.Expr:
    """A spec number in the symbolic view: an integral float is an ``Integer``, another float a ``Float``.

    >>> exact_number(50.0), exact_number(1e-6)
    (50, 1.00000000000000e-6)
    """
    if isinstance(value, float) and value.is_integer():
        return sp.Integer(int(value))
    return exact(name, value)  # never parses a string; names ``name`` in the SpecError


def softcap_scores(S: sp.MatrixBase, cap: Any) -> sp.ImmutableMatrix:
    r"""Soft-capped scores :math:`t \tanh(s / t)` (Gemma 2), ``-oo`` (masked) entries kept.

    >>> softcap_scores(sp.Matrix([[sp.Symbol("s"), -sp.oo]]), 50.0)
    Matrix([[50*tanh(s/50), -oo]])
    """
    t = exact_number(cap, "cap")
    return Matrix(S.shape[0], S.shape[1], lambda i, j: S[i, j] if S[i, j] == -sp.oo else t * sp.tanh(S[i, j] / t))


def rms_norm_rows(M: sp.MatrixBase, g: sp.MatrixBase, eps: Any) -> sp.ImmutableMatrix:
    r"""RMSNorm of each row of ``M`` with gains ``g`` (a ``1 × w`` row), the QK-norm of the spec.

    :math:`m_{ij} g_j / \sqrt{\tfrac1w \sum_k m_{ik}^2 + \epsilon}`.

    >>> a, b = sp.symbols("a b", real=True)
    >>> rms_norm_rows(sp.Matrix([[a, b]]), sp.Matrix([[1, 1]]), 0)[0, 0]
    a/sqrt(a**2/2 + b**2/2)
    """
    w = M.shape[1]
    e = exact_number(eps, "eps")
    r = [1 / sp.sqrt(sp.Add(*[M[i, k] ** 2 for k in range(w)]) / w + e) for i in range(M.shape[0])]
    return Matrix(M.shape[0], w, lambda i, j: M[i, j] * r[i] * g[0, j])
