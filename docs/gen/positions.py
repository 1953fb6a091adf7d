"""Generate "Positions: sinusoids, RoPE, ALiBi" (positions.md) at build time, from the code.

The conventions are the ones :mod:`attnsym.spec` states; the derivation steps come from
:func:`attnsym.derive`, the proofs from :mod:`attnsym.symbolic.rope_proofs` (run here), the
claims' evidence and figures from :func:`attnsym.claims.verify` and the report renderer.
Set ``ATTNSYM_DOCS_QUICK=1`` for quick claims.
"""

import os

import mkdocs_gen_files
import sympy as sp

import attnsym as at
from attnsym import plots
from attnsym.claims import verify
from attnsym.claims.report import render_report
from attnsym.derivation import Derivation
from attnsym.render import derivation_markdown
from attnsym.spec import alibi_slope_exponents
from attnsym.symbolic.rope_proofs import prove_rope_relative, prove_shift_invariance

QUICK = os.environ.get("ATTNSYM_DOCS_QUICK", "") not in ("", "0")
CLAIM_IDS = ("rope-relative", "rope-shift-invariance", "rope-long-range-decay", "alibi-recency")


def _conventions() -> str:
    """The positions bullet of the spec module's docstring, with its reST roles made Markdown."""
    doc = at.spec.__doc__
    start = doc.index("* **positions**")
    end = doc.find("\n* **", start + 1)
    text = doc[start:end if end > 0 else None].strip()
    text = text.replace(":data:`DEFAULT_POSITION_BASE`", "`DEFAULT_POSITION_BASE`").replace("``", "`")
    head, *rest = text.splitlines()
    lines = [head.removeprefix("* **positions** — ").capitalize(), ""]  # the sub-bullets become a Markdown list
    for line in rest:
        lines.append("- " + line[4:] if line.startswith("  - ") else ("  " + line.strip() if line.strip() else ""))
    return "\n".join(lines)


def _steps(spec, titles, what="forward") -> str:
    d = at.derive(spec, what)
    chosen = tuple(s for s in d.steps if s.title in titles)
    return derivation_markdown(Derivation(d.title, chosen, spec.describe(), spec), heading_level=3).split("\n", 2)[2]


def _scheme_table() -> list[str]:
    rows = ["| positions | adds vectors to X | rotates Q, K | biases the scores | scores unchanged by a common "
            "shift t of all positions (proved, n = 3, d_model = 2) |", "|---|---|---|---|---|"]
    for kind in (None, "sinusoidal", "rope", "alibi"):
        spec = at.AttentionSpec(n=3, d_model=2, positions=kind)
        shift = prove_shift_invariance(spec).holds
        rows.append(f"| `{kind}` | {'yes' if spec.adds_position_vectors else 'no'} | "
                    f"{'yes' if kind == 'rope' else 'no'} | {'yes' if kind == 'alibi' else 'no'} | "
                    f"{'yes' if shift else 'no'} |")
    return rows


def _proof_table() -> list[str]:
    rows = ["| layer | (R(mθ)q)·(R(nθ)k) − qᵀR((n−m)θ)k expands to |", "|---|---|"]
    for kw in (dict(d_model=2), dict(d_model=4), dict(d_model=4, rope_pairing="interleaved"),
               dict(d_model=8, rotary_pct=0.5)):
        proof = prove_rope_relative(at.AttentionSpec(n=2, positions="rope", **kw))
        rows.append(f"| {proof.spec.describe()} | ${sp.latex(proof.residual)}$ |")
    return rows


def _slope_table() -> list[str]:
    rows = ["| heads | slopes m_h (head 1 … H) |", "|---|---|"]
    for heads in (1, 2, 3, 4, 6, 8, 12):
        slopes = ", ".join(f"$2^{{-{e}}}$" for e in alibi_slope_exponents(heads))
        rows.append(f"| {heads} | {slopes} |")
    return rows


rope = at.AttentionSpec(n=2, d_model=2, positions="rope")
alibi = at.AttentionSpec(n=3, d_model=2, heads=2, positions="alibi", causal=True)
evidences = [verify(cid, seed=0, quick=QUICK) for cid in CLAIM_IDS]
report = render_report(evidences, seed=0, quick=QUICK, figure_dir="positions", formats=("png",),
                       title="The claims about RoPE and ALiBi")
claims_md = report.markdown.split("\n", 1)[1].replace("\n## ", "\n### ").replace("\n### Equations", "\n#### Equations") \
    .replace("\n### Evidence", "\n#### Evidence")

lines = [
    "# Positions: sinusoids, RoPE, ALiBi",
    "",
    "Self-attention without positions is permutation-equivariant: it has no notion of order. Three ways of "
    "adding order are built into every view of attnsym (`AttentionSpec(positions=...)`): the absolute sinusoids "
    "of Vaswani et al. (2017), rotary embeddings (RoPE; Su et al. 2021, used by LLaMA, Mistral, Qwen, GPT-NeoX) "
    "and linear biases (ALiBi; Press, Smith & Lewis 2022, used by BLOOM and MPT). This page is generated from the "
    "code: every equation, proof, table and figure below was computed while the documentation was built.",
    "",
    "```python",
    "import attnsym as at",
    'spec = at.AttentionSpec(n=3, d_model=4, positions="rope")   # or "alibi", "sinusoidal", None',
    "at.derive(spec)                                             # R(mθ) q_m · R(nθ) k_n, step by step",
    'at.verify("rope-relative")                                  # q_m·k_n depends on m − n only: proof',
    'Y, A = at.numeric.attention(X, W_Q, W_K, W_V, positions="rope")',
    "```",
    "",
    "## The conventions (stated once, in `attnsym.spec`)",
    "",
    _conventions(),
    "",
    "## What each scheme does",
    "",
    *_scheme_table(),
    "",
    "Every scheme runs in the symbolic layer (exact SymPy), the numeric layer (NumPy, CuPy, PyTorch: plain, "
    "memory-lean blockwise, backward pass, K/V-cache decoding) and the graph layer (routing graphs of the "
    "weights), and `attnsym.validate(spec)` checks symbolic against numeric for forward and gradients.",
    "",
    "## RoPE, step by step",
    "",
    "The forward derivation of a one-head layer with RoPE (`at.derive(AttentionSpec(n=2, d_model=2, "
    "positions=\"rope\"))`), the position steps only:",
    "",
    _steps(rope, ("Rotary position embedding", "Scores depend on relative positions")),
    "",
    "The relative-position identity, proved by `attnsym.symbolic.prove_rope_relative` for symbolic positions "
    "m, n and generic q, k (the difference of the two sides, after expanding the sines and cosines of sums and "
    "applying sin² + cos² = 1):",
    "",
    *_proof_table(),
    "",
    "Backward through the rotation (`at.derive(spec, \"gradients\")`): the gradient reaches the unrotated queries "
    "and keys through the transpose of each rotation.",
    "",
    _steps(rope, ("Through the rotation (RoPE)",), "gradients"),
    "",
    "The frequencies and the angles they turn:",
    "",
    "![RoPE frequencies](positions/rope-frequencies.png)",
    "",
    "## ALiBi, step by step",
    "",
    "The bias step of a causal two-head layer with ALiBi, and the scores it changes:",
    "",
    _steps(alibi, ("Linear biases (ALiBi)", "Scores")),
    "",
    "The slopes, by the paper's rule (also for head counts that are not powers of two):",
    "",
    *_slope_table(),
    "",
    "![ALiBi bias per head](positions/alibi-bias.png)",
    "",
    "## Cross-checks against independent implementations",
    "",
    "The test suite compares (`tests/test_positions_oracles.py`, `tests/test_positions_numeric.py`): RoPE with "
    "Hugging Face's LLaMA rotary embedding module and `apply_rotary_pos_emb` within 1e-6 for several d_k, bases "
    "and positions (Hugging Face builds its angles in float32; at far positions the bound grows with the float32 "
    "rounding of p·θ), and with the same formula in float64 within 1e-12; partial rotary with GPT-NeoX; the "
    "interleaved pairing with a direct implementation of the RoFormer formula and with GPT-J; ALiBi's slopes and "
    "attention weights with BLOOM's `build_alibi_tensor` for 1 to 32 heads, non-powers of two included (after "
    "the softmax: BLOOM adds m_h·j, a per-row constant away from −m_h(i − j)); whole layers, forward and "
    "gradients, against PyTorch's `scaled_dot_product_attention` with those position modules and autograd.",
    "",
    "## The claims",
    "",
    claims_md,
]
with mkdocs_gen_files.open("positions.md", "w") as page:
    page.write("\n".join(lines).rstrip() + "\n")
for path, data in report.files.items():
    with mkdocs_gen_files.open(path, "wb") as image:
        image.write(data)
for name, fig in (("rope-frequencies", plots.rope_frequencies_figure()),
                  ("alibi-bias", plots.alibi_bias_figure(heads=8, n=16))):
    with mkdocs_gen_files.open(f"positions/{name}.png", "wb") as image:
        image.write(plots.figure_to_bytes(fig, "png"))
