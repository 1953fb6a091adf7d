"""float64 of every family against transformers with its float32 steps done in float64: within 1e-12.

transformers computes three steps in float32 even in a model cast to float64 — RoPE's frequencies
and angles (``torch.arange(..., dtype=torch.float)``, ``position_ids.float()``), RMSNorm
(``hidden_states.to(torch.float32)``) and the eager softmax (``softmax(..., dtype=torch.float32)``)
— so against the model as shipped attnsym's float64 can only agree to float32's rounding
(``tests/test_models_families.py``: within 1e-5, measured up to ~2e-6). Here the reference is the
same transformers code with those steps promoted to float64 (``Tensor.float``, ``Tensor.to`` and
``softmax`` patched for one call; the RoPE buffers rebuilt by transformers' own frequency
functions with their float32 constructors promoted): the published architecture in float64,
computed by code attnsym does not share. Every layer's attention and every hidden state of a
padded batch (real tokens) must agree within 1e-12 (measured: at most 6e-15).
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from models_support import ALL_FAMILY_VARIANTS, decoder_family
from test_models_families import _batch, _worst

from attnsym import models

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.oracle

TOL = 1e-12


@contextlib.contextmanager
def _float32_steps_in_float64():
    """transformers' explicit float32 steps become float64 ones: ``.float()``, ``.to(torch.float32)``, softmax's dtype.

    Yields a context in which the constructors ``torch.arange`` / ``torch.tensor`` with
    ``dtype=torch.float32`` (RoPE's default frequencies, BLOOM's ALiBi slopes) make float64 too
    (promoting them inside ``from_pretrained`` broke its initialisation of the RoPE buffers).
    """
    real_to, real_float, real_softmax = torch.Tensor.to, torch.Tensor.float, torch.nn.functional.softmax
    real_arange, real_tensor = torch.arange, torch.tensor

    def promoted(constructor):
        def make(*args, **kwargs):
            if kwargs.get("dtype") is torch.float32:
                kwargs["dtype"] = torch.float64
            return constructor(*args, **kwargs)
        return make

    def to(self, *args, **kwargs):
        args = tuple(torch.float64 if a is torch.float32 else a for a in args)
        if kwargs.get("dtype") is torch.float32:
            kwargs["dtype"] = torch.float64
        return real_to(self, *args, **kwargs)

    def softmax(input, dim=None, _stacklevel=3, dtype=None):
        return real_softmax(input, dim=dim, dtype=torch.float64 if dtype is torch.float32 else dtype)

    torch.Tensor.to, torch.Tensor.float = to, lambda self, *a, **k: real_to(self, torch.float64)
    torch.nn.functional.softmax = softmax

    @contextlib.contextmanager
    def constructors():
        torch.arange, torch.tensor = promoted(real_arange), promoted(real_tensor)
        try:
            yield
        finally:
            torch.arange, torch.tensor = real_arange, real_tensor

    try:
        yield constructors
    finally:
        torch.Tensor.to, torch.Tensor.float, torch.nn.functional.softmax = real_to, real_float, real_softmax
        torch.arange, torch.tensor = real_arange, real_tensor


def _float64_reference(hf, folder, ids, mask):
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    with _float32_steps_in_float64() as constructors, torch.no_grad():
        ref = type(hf).from_pretrained(folder, dtype=torch.float64, attn_implementation="eager").eval()
        for module in ref.modules():  # RoPE's frequencies, rebuilt in float64 by transformers' own functions
            if isinstance(getattr(module, "inv_freq", None), torch.Tensor):
                kind = module.rope_type
                init = module.compute_default_rope_parameters if kind == "default" else ROPE_INIT_FUNCTIONS[kind]
                with constructors():
                    inv_freq, module.attention_scaling = init(module.config)
                module.inv_freq = module.original_inv_freq = inv_freq.to(torch.float64)
        out = ref(input_ids=torch.as_tensor(ids), attention_mask=torch.as_tensor(mask),
                  output_attentions=True, output_hidden_states=True)
        assert out.hidden_states[-1].dtype == torch.float64
        return torch.stack(out.attentions).numpy(), torch.stack(out.hidden_states).numpy()


@pytest.mark.parametrize("name", list(ALL_FAMILY_VARIANTS))
def test_float64_matches_transformers_without_its_float32_steps(name):
    folder, hf = decoder_family(name)
    m = models.load(folder, dtype="float64")
    ids, mask = _batch(m)
    if name == "gemma2":  # transformers' float64 Gemma 2 gives NaN for the padded rows: the unpadded text
        ids, mask = ids[:1], mask[:1]
    out = m.forward(ids, mask)
    reference = _float64_reference(hf, folder, ids, mask)
    assert np.isfinite(reference[0][:, 0]).all()
    worst = _worst(out, reference, mask)
    print(f"{name} float64: max |ours - transformers in float64| = {worst:.3g}")
    assert worst <= TOL


def test_the_patch_is_what_moves_the_reference():
    """Without the promotion the same reference differs by float32 rounding: the patch is what the test measures."""
    x = torch.linspace(0.1, 3.0, 7, dtype=torch.float64)
    plain = torch.nn.functional.softmax(x, dim=0, dtype=torch.float32).to(torch.float64)
    with _float32_steps_in_float64():
        promoted = torch.nn.functional.softmax(x, dim=0, dtype=torch.float32)
        assert x.float().dtype == torch.float64 and x.to(torch.float32).dtype == torch.float64
    exact = torch.exp(x) / torch.exp(x).sum()
    assert float((promoted - exact).abs().max()) < 1e-15 < float((plain - exact).abs().max())
    assert torch.Tensor.float(x).dtype == torch.float32  # restored
