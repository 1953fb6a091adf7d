"""The symbolic view of the 2026 variants: a sink, an output gate, whole-projection QK-norm, multi-head latent attention.

Each symbolic layer is lambdified and compared in float64 with an independent numeric computation: the
numeric engine's own forward pass and VJP where it implements the variant (sink, gate), the numeric
per-head attention (:func:`attnsym.numeric.head_attention`: its RoPE, YaRN, scores and softmax) fed
with latents expanded here in PyTorch, and PyTorch autograd for the gradients, where it does not (MLA).
Bars: forward 1e-12, gradients 1e-10 (float64; SymPy's expressions and NumPy's differ only in rounding).
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import attnsym as at
from attnsym.errors import SpecError
from attnsym.numeric.sampling import random_inputs
from attnsym.symbolic.parameters import parameter_shapes

FORWARD, GRADIENT = 1e-12, 1e-10


def _numeric(spec, values):
    params = {k: values[k] for k in spec.parameter_names}
    Y, A = at.numeric.attention(values["X"], spec=spec, **params)
    grads = at.numeric.attention_vjp(values["X"], spec=spec, G=values["G"], **params)
    return Y, (A[None] if spec.heads == 1 else A), grads


@pytest.mark.parametrize("spec", [
    at.AttentionSpec(n=2, d_model=2, causal=True, sink=True),
    at.AttentionSpec(n=2, d_model=2, output_gate=True),
    at.AttentionSpec(n=3, d_model=2, causal=True, chunk=2, sink=True, output_gate=True),
], ids=["sink", "gate", "sink-gate-chunk"])
def test_sink_and_gate_equal_the_numeric_forward_and_vjp(spec):
    values = random_inputs(spec, 3)
    sym = at.symbolic.attention(spec)
    inputs = {k: values[k] for k in sym.free_inputs()}
    ref = sym.lambdify("Y", "A_heads")(**inputs)
    Y, A, grads = _numeric(spec, values)
    assert np.abs(ref["Y"] - Y).max() < FORWARD
    assert np.abs(ref["A_heads"] - A).max() < FORWARD
    sym_grads = at.symbolic.gradients(spec, method="elementwise").lambdify()(**values)
    for name in ("X", *spec.parameter_names):
        assert np.abs(sym_grads[name] - grads[name]).max() < GRADIENT, name


def test_validate_checks_the_sink_and_the_gate_gradients():
    spec = at.AttentionSpec(n=2, d_model=2, causal=True, sink=True, output_gate=True)
    report = at.validate(spec, seed=1)
    assert report.passed
    assert [row.quantity for row in report][-2:] == ["ds_sink", "dW_G"]
    method = at.symbolic.cost.default_gradient_method
    assert method(spec) == "closed_form" and method(spec.replace(qk_norm=True)) == "elementwise"
    assert method(MLA_SPECS["tiny"]) == "elementwise"


@pytest.mark.parametrize("spec", [
    at.AttentionSpec(n=3, d_model=2, causal=True, sink=True),
    at.AttentionSpec(n=3, d_model=4, heads=2, causal=True, output_gate=True, positions="rope", bias=True),
    at.AttentionSpec(n=3, d_model=4, heads=2, kv_heads=1, causal=True, chunk=2, softcap=5.0, sink=True,
                     output_gate=True),
    at.AttentionSpec(n=3, d_model=2, sink=True, mask=[[False, False, False], [True, True, False], [True, True, True]]),
], ids=["sink", "gate-rope-bias", "gqa-chunk-softcap-sink-gate", "sink-fully-masked-row"])
def test_the_closed_form_differentiates_a_sink_and_a_gate(spec):
    """ds_h = −Σ_i π_i Σ_j dA_ij A_ij; dW_G = X_inᵀ (dZ' ⊙ Z ⊙ σ(1 − σ)), dZ = dZ' ⊙ σ: against the numeric VJP."""
    values = random_inputs(spec, 7)
    got = at.symbolic.gradients(spec).lambdify()(**values)
    _, _, grads = _numeric(spec, values)
    assert set(got) == {"X", *spec.parameter_names}
    for name in got:
        assert np.abs(got[name] - grads[name]).max() < GRADIENT, name


def test_a_sink_keeps_its_mass_in_the_compiled_weights():
    """The compiled rows sum to 1 − π (never renormalised), π the sink mass the symbolic layer names."""
    spec = at.AttentionSpec(n=3, d_model=2, heads=1, causal=True, sink=True)
    values = random_inputs(spec, 0)
    sym = at.symbolic.attention(spec)
    out = sym.lambdify("A", "sink_mass_heads")(**{k: values[k] for k in sym.free_inputs()})
    pi = out["sink_mass_heads"][0, :, 0]
    assert np.all(pi > 0.01)
    assert np.abs(out["A"].sum(axis=-1) + pi - 1).max() < FORWARD


def test_the_gate_is_sigma_of_x_w_g_times_the_heads():
    spec = at.AttentionSpec(n=2, d_model=2, output_gate=True)
    sym = at.symbolic.attention(spec)
    assert sym.gate.shape == (2, 2) and list(sym.inputs)[-1] == "W_G"
    z = sym.X_in.multiply(sym.W_G)[0, 1]
    assert sym.gate[0, 1] == 1 / (1 + sp.exp(-z))
    assert sym.W_O is None and sym.Y == sym.Z.multiply_elementwise(sym.gate)
    with_out = at.symbolic.attention(spec.replace(output_projection=True))
    assert with_out.Y == with_out.Z.multiply_elementwise(with_out.gate).multiply(with_out.W_O)


def test_whole_projection_qk_norm_norms_the_whole_row():
    """OLMo 2: one RMSNorm over every head's coordinates; two heads share its denominator."""
    spec = at.AttentionSpec(n=2, d_model=4, heads=2, qk_norm=True, qk_norm_scope="whole_projection",
                            qk_norm_offset=1.0)
    sym = at.symbolic.attention(spec)
    assert sym.g_Q.shape == (1, 4)
    values = random_inputs(spec, 2)
    out = sym.lambdify("Q_norm_heads")(**{k: values[k] for k in sym.free_inputs()})["Q_norm_heads"]
    Q = values["X"] @ values["W_Q"]
    normed = Q / np.sqrt((Q ** 2).mean(axis=-1, keepdims=True) + spec.qk_norm_eps) * (1.0 + values["g_Q"])
    assert np.abs(np.concatenate(list(out), axis=-1) - normed).max() < FORWARD


# ------------------------------------------------------------------------------------------ multi-head latent attention
MLA_SPECS = {
    # DeepSeek V3's layer in miniature: a query latent, YaRN with mscale_all_dim, interleaved pairs, d_v ≠ d_k
    "yarn-query-latent": at.AttentionSpec(
        n=3, d_model=3, heads=2, d_k=3, d_v=2, causal=True, positions="rope", rotary_pct=2 / 3, kv_latent_rank=2,
        q_latent_rank=2, rope_pairing="interleaved",
        rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 2, "mscale": 1.0,
                      "mscale_all_dim": 1.0}),
    "tiny": at.AttentionSpec(n=2, d_model=2, heads=1, d_k=3, d_v=1, causal=True, positions="rope",
                             rotary_pct=2 / 3, kv_latent_rank=1),
}


def _rms(x, g, eps=at.symbolic.parameters.DEFAULT_LATENT_EPS):
    torch = pytest.importorskip("torch")
    return x / torch.sqrt((x ** 2).mean(-1, keepdim=True) + eps) * g


def _torch_mla(spec, T):
    """The layer from the latents (PyTorch, autograd on), its attention by :func:`attnsym.numeric.head_attention`."""
    torch = pytest.importorskip("torch")
    n, H, nope = spec.n, spec.heads, spec.d_k - spec.rotary_dims
    X = T["X"]
    Q = X @ T["W_Q"] if "W_Q" in T else _rms(X @ T["W_DQ"], T["g_CQ"]) @ T["W_UQ"]
    C = _rms(X @ T["W_DKV"], T["g_CKV"])
    K_R, K_C, V = X @ T["W_KR"], C @ T["W_UK"], C @ T["W_UV"]
    Qh = Q.reshape(n, H, spec.d_k).permute(1, 0, 2)
    Kh = torch.stack([torch.cat([K_R, K_C[:, h * nope:(h + 1) * nope]], -1) for h in range(H)])
    Vh = V.reshape(n, H, spec.d_v).permute(1, 0, 2)
    Z, A = at.numeric.head_attention(Qh, Kh, Vh, spec=spec.replace(kv_latent_rank=None, q_latent_rank=None))
    return (Z @ T["W_O"] if "W_O" in T else Z), A


@pytest.mark.parametrize("name", list(MLA_SPECS))
def test_mla_forward_equals_the_numeric_attention_of_the_expanded_latents(name):
    spec = MLA_SPECS[name]
    rng = np.random.default_rng(0)
    values = {k: rng.standard_normal(s) for k, s in {"X": (spec.n, spec.d_model), **parameter_shapes(spec)}.items()}
    sym = at.symbolic.attention(spec)
    assert sym.W_K is None and sym.W_V is None and sym.C_KV.shape == (spec.n, spec.kv_latent_rank)
    ref = sym.lambdify("Y", "A_heads")(**values)
    torch = pytest.importorskip("torch")
    Y, A = _torch_mla(spec, {k: torch.tensor(v) for k, v in values.items()})
    assert np.abs(ref["Y"] - Y.numpy()).max() < FORWARD
    assert np.abs(ref["A_heads"] - A.numpy()).max() < FORWARD


def test_mla_scores_split_into_a_shared_rotary_part_and_a_per_head_part():
    """Every head's key starts with the same rotary key k^R; the rest is the head's own c W_UK,h."""
    spec = MLA_SPECS["yarn-query-latent"]
    sym = at.symbolic.attention(spec)
    rho = spec.rotary_dims
    assert sym.K_heads[0][:, :rho] == sym.K_heads[1][:, :rho] == sym.K_R
    assert sym.K_heads[0][:, rho:] == sym.C_KV.multiply(sym.W_UK[:, :1])
    assert sym.V_heads[1] == sym.C_KV.multiply(sym.W_UV[:, 2:])


def test_mla_elementwise_gradients_equal_autograd():
    spec = MLA_SPECS["tiny"]
    rng = np.random.default_rng(1)
    values = {k: rng.standard_normal(s) for k, s in {"X": (spec.n, spec.d_model), **parameter_shapes(spec)}.items()}
    G = rng.standard_normal((spec.n, spec.d_out))
    torch = pytest.importorskip("torch")
    T = {k: torch.tensor(v, requires_grad=True) for k, v in values.items()}
    Y, _ = _torch_mla(spec, T)
    (Y * torch.tensor(G)).sum().backward()
    result = at.symbolic.gradients(spec, method="elementwise")
    assert result.wrt == ("X", *parameter_shapes(spec))
    got = result.lambdify()(**values, G=G)
    for name, t in T.items():
        assert np.abs(got[name] - t.grad.numpy()).max() < GRADIENT, name


def test_symbolic_refusals_name_what_is_missing():
    with pytest.raises(SpecError, match="query_temperature"):
        at.symbolic.attention(at.AttentionSpec(n=2, d_model=2, query_temperature=(4.0, 0.1)))
    with pytest.raises(SpecError, match="no biases"):
        at.symbolic.attention(at.AttentionSpec(n=2, d_model=2, d_k=4, positions="rope", rotary_pct=0.5,
                                               kv_latent_rank=1, bias=True))
    with pytest.raises(SpecError, match=r"method='closed_form'.*kv_latent_rank=1"):
        at.symbolic.gradients(MLA_SPECS["tiny"])
    with pytest.raises(SpecError, match=r"method='matrix'.*sink=True"):
        at.symbolic.gradients(at.AttentionSpec(n=2, d_model=2, sink=True), method="matrix")


# ------------------------------------------------------------------------------------------ derivations
import hashlib  # noqa: E402

#: sha256 of the forward (and for two, the gradient) derivations' Markdown and LaTeX, joined by NUL, as the code
#: before the variants' steps rendered them (generated by running this module's _rendered on that commit's package)
BEFORE = {
    "plain": "1aea961627b99d2ae5c97b892fc60897202104936ed0a025e68adad2ef26fe17",
    "causal-two-heads-bias": "2142e34f7243b85b09f305157b85224eb272a7987d22c46d6966d3c06e07e084",
    "gqa-rope-window": "be6b2c44fe0567118e25cc47d52a50d65e06d7a3d651c0f099322107bb09ddfc",
    "qk-norm-per-head-softcap": "d85a0f585f72ccaf53712a24dbdd2d16fb6ff9351896e0fbc5680b17588fff9f",
    "sinusoidal-chunk": "b829496633c7ee1adbfeae53aef5885eb25dada9a3c404c5d4189fc141f8afc4",
}
BEFORE_SPECS = {
    "plain": dict(n=2, d_model=2),
    "causal-two-heads-bias": dict(n=3, d_model=4, heads=2, causal=True, bias=True),
    "gqa-rope-window": dict(n=3, d_model=4, heads=2, kv_heads=1, causal=True, window=2, positions="rope"),
    "qk-norm-per-head-softcap": dict(n=2, d_model=2, qk_norm=True, softcap=50.0, positions="alibi"),
    "sinusoidal-chunk": dict(n=3, d_model=2, positions="sinusoidal", causal=True, chunk=2, scale="none"),
}


def _rendered(name):
    spec = at.AttentionSpec(**BEFORE_SPECS[name])
    d = at.derive(spec)
    parts = [d.to_markdown(), d.to_latex()]
    if name in ("plain", "causal-two-heads-bias"):
        g = at.derive(spec, "gradients")
        parts += [g.to_markdown(), g.to_latex()]
    return hashlib.sha256(chr(0).join(parts).encode()).hexdigest()


@pytest.mark.parametrize("name", list(BEFORE))
def test_derivations_of_the_specs_before_the_variants_are_byte_identical(name):
    assert _rendered(name) == BEFORE[name]


def _step_values(step, env):
    """Every equation of ``step`` as (lhs name, rhs evaluated at ``env``) — a float array per equation."""
    eqs = step.equation if isinstance(step.equation, tuple) else (step.equation,)
    return {str(eq.lhs): np.array(eq.rhs.xreplace(env).evalf(), dtype=float) for eq in eqs}


def _env(sym, values):
    return {s: float(v) for name, m in sym.inputs.items() for s, v in zip(m, np.asarray(values[name]).ravel(),
                                                                        strict=True)}


def test_derive_sink_writes_the_sink_term_and_its_mass():
    spec = at.AttentionSpec(n=2, d_model=2, causal=True, sink=True)
    values = random_inputs(spec, 4)
    d = at.derive(spec)
    step = d.step("Attention weights")
    assert "1 - \\pi_i" in step.explanation and "e^{s}" in step.formula
    S = at.symbolic.attention(spec).subs({k: values[k] for k in ("X", "W_Q", "W_K", "W_V", "s_sink")}).S_heads[0]
    env = {sp.Symbol(f"s_{{{i + 1},{j + 1}}}", real=True): S[i, j] for i in range(2) for j in range(2) if i >= j}
    env[sp.Symbol("s^{sink}_{1,1}", real=True)] = values["s_sink"][0, 0]
    got = _step_values(step, env)
    _, A, _ = _numeric(spec, values)
    assert np.abs(got["A"] - A[0]).max() < FORWARD
    assert np.abs(got["A"].sum(axis=1) + got["\\pi"][:, 0] - 1).max() < FORWARD
    d.to_latex()


def test_derive_gate_writes_sigma_of_x_w_g_and_the_gated_product():
    spec = at.AttentionSpec(n=2, d_model=4, heads=2, output_gate=True)
    values = random_inputs(spec, 5)
    sym = at.symbolic.attention(spec)
    d = at.derive(spec)
    assert [s.title for s in d][6:9] == ["Head outputs", "Output gate", "Gate and project"]
    U_eq, gamma_eq = d.step("Output gate").equation
    U = np.array(U_eq.rhs.xreplace(_env(sym, values)), dtype=float)
    assert np.abs(U - values["X"] @ values["W_G"]).max() < FORWARD
    env = {sp.Symbol(f"u_{{{i + 1},{j + 1}}}", real=True): U[i, j] for i in range(2) for j in range(4)}
    assert np.abs(np.array(gamma_eq.rhs.xreplace(env).evalf(), dtype=float) - 1 / (1 + np.exp(-U))).max() < FORWARD
    assert "Z \\odot \\Gamma" in d.step("Gate and project").formula


def test_derive_whole_projection_qk_norm_shares_one_norm_across_heads():
    spec = at.AttentionSpec(n=1, d_model=4, heads=2, qk_norm=True, qk_norm_scope="whole_projection",
                            qk_norm_offset=1.0)
    step = at.derive(spec).step("QK-norm")
    assert "whole projection" in step.explanation and "(1 + g^Q)" in step.formula
    first, second = step.equation[0].rhs, step.equation[1].rhs
    assert sp.denom(first[0, 0]) == sp.denom(second[0, 0])  # one RMS over both heads' coordinates
    assert sp.Symbol("q_{1,4}", real=True) in sp.denom(first[0, 0]).free_symbols


def test_derive_mla_writes_the_latent_and_the_split_keys():
    spec = MLA_SPECS["yarn-query-latent"]
    d = at.derive(spec)
    titles = [s.title for s in d]
    assert titles[1:6] == ["Latent", "Query latent", "Queries", "Keys", "Values"]
    K = d.step("Keys").equation.rhs
    rho = spec.rotary_dims
    assert K[:, :rho] == K[:, spec.d_k:spec.d_k + rho]  # the rotary key shared by both heads
    assert K[:, rho:spec.d_k] != K[:, spec.d_k + rho:]
    assert d.step("Values").equation.rhs.shape == (spec.n, spec.inner_v)
    assert "\\begin{document}" in d.to_latex() and "## 2. Latent" in d.to_markdown()


def test_cli_derive_takes_the_sink_and_the_gate(capsys):
    from attnsym.cli import main

    assert main(["derive", "--n", "2", "--d", "2", "--causal", "--sink", "--output-gate"]) == 0
    out = capsys.readouterr().out
    assert "1 - \\pi_i" in out and "## 8. Output gate" in out and "\\Gamma" in out
    assert main(["derive", "--n", "2", "--d", "2", "--sink", "--grad"]) == 2  # no closed-form step for a sink
    assert "does not implement sink=True" in capsys.readouterr().err


def test_the_size_guard_counts_the_latent_and_the_gate():
    cost = at.symbolic.estimate_cost
    plain = at.AttentionSpec(n=2, d_model=2, d_k=4, positions="rope", rotary_pct=0.5)
    assert cost(plain.replace(kv_latent_rank=2)).total > cost(plain).total
    assert cost(plain.replace(output_gate=True)).total > cost(plain).total
    with pytest.raises(at.errors.SizeLimitError):  # some 9 minutes of .diff here: refused before building
        at.symbolic.gradients(MLA_SPECS["yarn-query-latent"], method="elementwise")


@pytest.mark.parametrize("how", ["identity", "points"])
def test_check_gradients_proves_the_closed_form_of_a_sink_and_a_gate(how):
    spec = at.AttentionSpec(n=2, d_model=2, causal=True, sink=True, output_gate=True)
    result = at.symbolic.check_gradients(spec, wrt=("X", "s_sink", "W_G"), how=how, points=1)
    assert result.equal and not result.mismatches and result.how == how
