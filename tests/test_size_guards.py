"""Every symbolic builder estimates its size in O(1) and refuses past the limit, naming the estimate.

The sizes below are absurd on purpose (up to n = 10**30): a builder that iterated over n, or
estimated with an O(n²) mask, would never return; one that built first would run out of memory.
"""

import pytest

import attnsym as at
from attnsym import SizeLimitError
from attnsym.symbolic import equivariance, positions, symmetry

HUGE = 10**30

BUILDERS = {
    "attention": lambda: at.symbolic.attention(at.AttentionSpec(n=HUGE, d_model=2)),
    "attention causal": lambda: at.symbolic.attention(at.AttentionSpec(n=2**62, d_model=2, causal=True)),
    "attention causal n=20000": lambda: at.symbolic.attention(at.AttentionSpec(n=20000, d_model=2, causal=True)),
    "derive": lambda: at.derive(at.AttentionSpec(n=HUGE, d_model=2)),
    "gradients": lambda: at.symbolic.gradients(at.AttentionSpec(n=HUGE, d_model=2)),
    "gradients elementwise": lambda: at.symbolic.gradients(at.AttentionSpec(n=HUGE, d_model=2), method="elementwise"),
    "gradient_steps": lambda: at.symbolic.gradient_steps(at.AttentionSpec(n=HUGE, d_model=2)),
    "attention_input_jacobian": lambda: at.symbolic.attention_input_jacobian(at.AttentionSpec(n=HUGE, d_model=2)),
    "mlp": lambda: at.symbolic.mlp((300, 100)),
    "mlp huge": lambda: at.symbolic.mlp((HUGE, 2)),
    "mlp_input_jacobian": lambda: at.symbolic.mlp_input_jacobian((10**4, 10)),
    "sinusoidal_positions": lambda: at.symbolic.sinusoidal_positions(10**5, 4),
    "sinusoidal_positions huge": lambda: at.symbolic.sinusoidal_positions(HUGE, HUGE),
    "input_symbols": lambda: at.symbolic.input_symbols("X", (HUGE, 2)),
    "prove_gram_symmetric": lambda: symmetry.prove_gram_symmetric(HUGE),
    "prove_qk_symmetry_condition": lambda: at.symbolic.prove_qk_symmetry_condition(n=HUGE),
    "check_conv_equivariance": lambda: equivariance.check_conv_equivariance(HUGE, 3),
    "check_attention_equivariance": lambda: at.symbolic.check_attention_equivariance(at.AttentionSpec(n=HUGE, d_model=2)),
    "alibi_bias": lambda: positions.alibi_bias(at.AttentionSpec(n=HUGE, d_model=2, positions="alibi"), 0),
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_huge_sizes_are_refused_with_the_estimate(name):
    with pytest.raises(SizeLimitError, match=r"would build about \d(\.\d)?e\+\d+ terms.*, above the limit max_terms=\d+;"):
        BUILDERS[name]()


def test_the_estimate_is_exact_for_causal_masks_without_building_the_pattern():
    # closed forms for the causal row sums agree with an explicit lower-triangular mask
    import numpy as np

    for n in (1, 2, 5, 9):
        for heads, d in ((1, 2), (2, 4)):
            causal = at.symbolic.estimate_cost(at.AttentionSpec(n=n, d_model=d, heads=heads, causal=True))
            mask = at.symbolic.estimate_cost(at.AttentionSpec(n=n, d_model=d, heads=heads,
                                                              mask=np.tril(np.ones((n, n), bool))))
            assert (causal.terms_A, causal.terms_Y, causal.terms_per_entry) == \
                   (mask.terms_A, mask.terms_Y, mask.terms_per_entry)


def test_the_limit_can_be_raised_and_small_sizes_build():
    assert at.symbolic.mlp((2, 2)).Y.shape == (2, 2)
    assert at.symbolic.mlp((30, 10), max_terms=float("inf")).Y.shape == (30, 10)
    assert at.symbolic.sinusoidal_positions(2, 2).shape == (2, 2)
    with pytest.raises(SizeLimitError):
        at.symbolic.mlp((3, 3), max_terms=10)
