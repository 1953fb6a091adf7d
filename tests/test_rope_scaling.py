"""The RoPE scaling rules of :class:`attnsym.RopeScaling` against transformers' ``modeling_rope_utils``.

Each rule's inverse frequencies and attention factor are computed by transformers' own function
(``ROPE_INIT_FUNCTIONS``) with its float32 constructors promoted to float64
(:func:`test_models_float64_reference._float32_steps_in_float64`, and float64 as torch's default dtype
for ``"dynamic"``, whose base is a float tensor): the bar is 1e-14 relative, float64 rounding of two
independent implementations. ``"longrope"`` is checked on both sides of
``original_max_position_embeddings`` (its short and long factors), ``"dynamic"`` below and beyond
``max_position_embeddings``, ``"yarn"`` with its defaults, ``mscale`` / ``mscale_all_dim``, a given
attention factor and ``truncate`` off. The symbolic twin (exact) evaluates to the numeric one.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from test_models_float64_reference import _float32_steps_in_float64

import attnsym as at
from attnsym import AttentionSpec, RopeScaling
from attnsym.errors import SpecError

D_K, BASE, MAX_POS = 16, 10000.0, 64
YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}  # a ramp over planes 2 … 6
LONG = {"rope_type": "longrope", "short_factor": [1.0 + 0.1 * i for i in range(D_K // 2)],
        "long_factor": [1.5 + 0.7 * i for i in range(D_K // 2)], "original_max_position_embeddings": 16}
CASES = {
    "yarn": (YARN, 8),
    "yarn-mscale": (dict(YARN, mscale=0.707, mscale_all_dim=1.0, beta_fast=16, beta_slow=2), 8),
    "yarn-given-factor-untruncated": (dict(YARN, attention_factor=1.3, truncate=False), 8),
    "longrope-short": (LONG, 16),
    "longrope-long": (LONG, 17),
    "longrope-given": (dict(LONG, attention_factor=0.9, factor=2.0), 40),
    "dynamic-short": ({"rope_type": "dynamic", "factor": 3.0}, MAX_POS),
    "dynamic-long": ({"rope_type": "dynamic", "factor": 3.0}, 100),
}


def _transformers(scaling: dict, n: int):
    """transformers' ``(inv_freq, attention_factor)`` for ``n`` tokens, its float32 steps in float64."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    config = transformers.LlamaConfig(hidden_size=2 * D_K, num_attention_heads=2, head_dim=D_K, rope_theta=BASE,
                                      max_position_embeddings=MAX_POS, rope_scaling=dict(scaling))
    default = torch.get_default_dtype()
    with _float32_steps_in_float64() as constructors, constructors():
        torch.set_default_dtype(torch.float64)
        try:
            inv_freq, factor = ROPE_INIT_FUNCTIONS[scaling["rope_type"]](config, "cpu", seq_len=n)
        finally:
            torch.set_default_dtype(default)
    assert inv_freq.dtype == torch.float64
    return inv_freq.numpy(), float(factor)


def _ours(scaling: dict, n: int) -> AttentionSpec:
    """The spec a config reader builds: ``original_max_position_embeddings`` and a LongRoPE factor completed."""
    filled = dict(scaling)
    if filled["rope_type"] == "dynamic":
        filled["original_max_position_embeddings"] = MAX_POS
    filled.setdefault("factor", MAX_POS / filled["original_max_position_embeddings"])
    return AttentionSpec(n=n, d_model=2 * D_K, heads=2, positions="rope", position_base=BASE, rope_scaling=filled)


@pytest.mark.parametrize("case", list(CASES))
def test_frequencies_and_attention_factor_match_transformers(case):
    scaling, n = CASES[case]
    inv_hf, factor_hf = _transformers(scaling, n)
    spec = _ours(scaling, n)
    ours = np.asarray(at.numeric.rope_frequencies(spec))
    np.testing.assert_allclose(ours, inv_hf, rtol=1e-14, atol=0)
    assert spec.rope_scaling.attention_scale == pytest.approx(factor_hf, rel=1e-15)
    plain = np.asarray(at.numeric.rope_frequencies(spec.replace(rope_scaling=None)))
    assert not np.allclose(ours, plain, rtol=1e-3) or case == "dynamic-short"  # the rule bites (but where it must not)
    if case == "dynamic-short":
        np.testing.assert_array_equal(ours, plain)


def test_longrope_chooses_its_factors_by_sequence_length():
    short, long = _ours(LONG, 16), _ours(LONG, 17)
    theta = np.asarray(at.numeric.rope_frequencies(short.replace(rope_scaling=None)))
    np.testing.assert_allclose(at.numeric.rope_frequencies(short), theta / np.asarray(LONG["short_factor"]), rtol=1e-15)
    np.testing.assert_allclose(at.numeric.rope_frequencies(long), theta / np.asarray(LONG["long_factor"]), rtol=1e-15)


def test_yarn_ramp_spans_kept_interpolated_and_mixed_planes():
    ramp = _ours(YARN, 8).rope_scaling.yarn_ramp(BASE, D_K)
    assert ramp[0] == 0.0 and ramp[-1] == 1.0 and any(0 < r < 1 for r in ramp)


@pytest.mark.parametrize("case", ["yarn", "yarn-mscale", "longrope-long", "dynamic-long"])
def test_symbolic_twin_evaluates_to_the_numeric_rule(case):
    scaling, n = CASES[case]
    spec = _ours(scaling, n)
    exact = [float(sp.N(t, 30)) for t in at.symbolic.rope_frequencies(spec)]
    np.testing.assert_allclose(exact, at.numeric.rope_frequencies(spec), rtol=1e-14)
    assert float(sp.N(at.symbolic.rope_attention_factor(spec), 30)) == pytest.approx(
        spec.rope_scaling.attention_scale, rel=1e-15)


def test_attention_factor_scales_rotated_coordinates_only_and_adjoint_matches():
    spec = AttentionSpec(n=5, d_model=8, heads=1, positions="rope", rotary_pct=0.5,
                         rope_scaling=dict(YARN, attention_factor=1.5))
    rng = np.random.default_rng(0)
    M, G = rng.standard_normal((5, 8)), rng.standard_normal((5, 8))
    out = at.numeric.apply_rope(M, spec)
    plain = at.numeric.apply_rope(M, spec.replace(rope_scaling=dict(YARN, attention_factor=1.0)))
    np.testing.assert_allclose(out[:, :4], 1.5 * plain[:, :4], rtol=1e-15)
    np.testing.assert_array_equal(out[:, 4:], M[:, 4:])  # the pass-through coordinates keep their scale
    adjoint = at.numeric.apply_rope(G, spec, inverse=True)
    assert float(np.sum(out * G)) == pytest.approx(float(np.sum(M * adjoint)), rel=1e-13)
    symbolic = at.symbolic.apply_rope(sp.Matrix(M[:2]), spec.replace(n=2))
    np.testing.assert_allclose(np.asarray(symbolic.evalf(30), dtype=float), out[:2], rtol=1e-13)


@pytest.mark.parametrize(("scaling", "message"), [
    ({"rope_type": "yarn", "factor": 4.0}, r"rope_scaling of type 'yarn' needs original_max_position_embeddings"),
    (dict(YARN, low_freq_factor=1.0), r"rope_scaling of type 'yarn' takes .* \(got unknown keys 'low_freq_factor'\)"),
    ({"rope_type": "longrope", "factor": 2.0, "short_factor": [1.0], "long_factor": [1.0, 2.0],
      "original_max_position_embeddings": 4}, r"short_factor and long_factor must have one entry per rotation plane"),
    ({"rope_type": "longrope", "factor": 2.0, "short_factor": [1.0], "long_factor": [2.0],
      "original_max_position_embeddings": 4}, r"need one entry per rotation plane, rotary_dims / 2 = 8 \(got 1\)"),
    (dict(YARN, beta_fast=-1), r"rope_scaling beta_fast must be >= 0 \(got -1"),
    (dict(YARN, truncate="yes"), r"rope_scaling truncate must be true or false \(got 'yes'\)"),
    ({"rope_type": "dynamic", "factor": 2.0}, r"rope_scaling of type 'dynamic' needs original_max_position_embeddings"),
    ({"rope_type": "proportional", "factor": 2.0}, r"rope_scaling type 'proportional' is not supported"),
])
def test_bad_scalings_are_refused_by_name(scaling, message):
    with pytest.raises(SpecError, match=message):
        AttentionSpec(n=2, d_model=2 * D_K, heads=2, positions="rope", rope_scaling=scaling)


def test_as_dict_reports_type_factors_and_the_attention_factor_in_effect():
    row = RopeScaling.from_mapping(dict(LONG, factor=4.0)).as_dict()
    assert row["type"] == "longrope" and row["factor"] == 4.0 and row["short_factor"] == LONG["short_factor"]
    assert row["attention_factor"] == pytest.approx(np.sqrt(1 + np.log(4.0) / np.log(16)))
