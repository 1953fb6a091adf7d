"""PE(p + k) = R_k PE(p): the proof for symbolic p, k, ω, the stacked matrix of one width, its numeric twin."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from attnsym.errors import SpecError
from attnsym.numeric import sinusoidal_positions as num_pe
from attnsym.numeric import sinusoidal_shift as num_shift
from attnsym.symbolic import prove_sinusoidal_shift
from attnsym.symbolic import sinusoidal_positions as sym_pe
from attnsym.symbolic import sinusoidal_shift as sym_shift
from attnsym.testing import TOLERANCES

TOL64 = TOLERANCES["float64"]


def test_the_proof_holds_and_its_rotation_is_free_of_the_position():
    proof = prove_sinusoidal_shift()
    assert (proof.holds, proof.independent_of_p, proof.orthogonal) == (True, True, True)
    assert proof.position not in proof.rotation.free_symbols
    assert proof.similarity == sp.cos(proof.shift * proof.frequency)
    # the proof is about the pair itself: R_k pe(p) written out is pe(p + k)
    lhs = (proof.rotation * proof.pair).applyfunc(lambda e: sp.expand(e, trig=True))
    rhs = proof.shifted.applyfunc(lambda e: sp.expand(e, trig=True))
    assert sp.simplify(lhs - rhs) == sp.zeros(2, 1)


def test_the_check_behind_the_proof_rejects_the_inverse_rotation():
    proof = prove_sinusoidal_shift()
    wrong = proof.rotation.T  # R_{-k}: shifts the other way
    residual = [sp.expand(v, trig=True) for v in wrong * proof.pair - proof.shifted]
    assert any(r != 0 for r in residual)


def test_stacked_matrix_is_the_proved_block_per_frequency():
    k = sp.Symbol("k", real=True)
    R = sym_shift(k, 4, 100)
    proof = prove_sinusoidal_shift()
    for i, omega in enumerate((sp.Integer(1), sp.Rational(1, 10))):  # 100**(-2i/4)
        block = R[2 * i:2 * i + 2, 2 * i:2 * i + 2]
        assert block == proof.rotation.subs({proof.shift: k, proof.frequency: omega})
    assert R[0:2, 2:4] == sp.zeros(2, 2) and R[2:4, 0:2] == sp.zeros(2, 2)


@pytest.mark.parametrize(("d", "base"), [(2, 10000), (6, 10000), (4, 7)])
def test_stacked_matrix_shifts_encodings_for_symbolic_p_and_k(d, base):
    p, k = sp.symbols("p k", real=True)
    diff = sym_shift(k, d, base) * sym_pe(1, d, base, offset=p).T - sym_pe(1, d, base, offset=p + k).T
    assert [sp.expand(v, trig=True) for v in diff] == [0] * d
    wrong = sym_shift(k + 1, d, base) * sym_pe(1, d, base, offset=p).T - sym_pe(1, d, base, offset=p + k).T
    assert any(sp.expand(v, trig=True) != 0 for v in wrong)


def test_numeric_shift_maps_row_p_to_row_p_plus_k_and_composes():
    P = num_pe(600, 64)
    for shift in (1, 9, 250):
        np.testing.assert_allclose(P[:-shift] @ num_shift(shift, 64).T, P[shift:], rtol=0, atol=TOL64.atol)
    R3, R5 = num_shift(3, 64), num_shift(5, 64)
    np.testing.assert_allclose(R3 @ R5, num_shift(8, 64), rtol=TOL64.rtol, atol=TOL64.atol)
    np.testing.assert_allclose(R3.T @ R3, np.eye(64), rtol=TOL64.rtol, atol=TOL64.atol)
    np.testing.assert_allclose(num_shift(0.5, 8) @ num_shift(0.5, 8), num_shift(1, 8), rtol=TOL64.rtol, atol=TOL64.atol)


def test_numeric_shift_dtype_and_torch():
    assert num_shift(2, 4, dtype=np.float32).dtype == np.float32
    torch = pytest.importorskip("torch")
    import array_api_compat

    R = num_shift(2, 4, xp=array_api_compat.array_namespace(torch.zeros(1)))
    assert isinstance(R, torch.Tensor)
    np.testing.assert_allclose(R.numpy(), num_shift(2, 4), rtol=TOL64.rtol, atol=TOL64.atol)


@pytest.mark.parametrize("shift_of", [sym_shift, num_shift])
def test_bad_arguments_name_the_argument(shift_of):
    with pytest.raises(SpecError, match=r"d_model must be even for a shift matrix.*\(got d_model=5\)"):
        shift_of(1, 5)
    with pytest.raises(SpecError, match="shift must be"):
        shift_of("1", 4)
    with pytest.raises(SpecError, match="base"):
        shift_of(1, 4, 1)
    with pytest.raises(SpecError, match="d_model"):
        shift_of(1, 0)
