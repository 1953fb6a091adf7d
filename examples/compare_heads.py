"""Compare the heads of one multi-head layer on the same input.

Each head has its own projections, so each computes its own routing of the same tokens.
The words only label positions: the input rows are random vectors (the two "the" differ).
Heads are numbered from 1 in the printout and in the figure; ``A[h]`` is head ``h + 1``.
Prints each head's mean row entropy (how spread its attention is) and the distance between
the heads' maps, and saves a heatmap with one panel per head.

    python examples/compare_heads.py [OUTPUT_DIR]      # default: a new temporary folder
"""

import sys
import tempfile
from pathlib import Path

import numpy as np

import attnsym as at
from attnsym import plots

TOKENS = ["the", "cat", "sat", "on", "the", "mat"]


def main(out: Path) -> list[Path]:
    spec = at.AttentionSpec(n=len(TOKENS), d_model=8, heads=4)  # 4 heads of width d_k = 2
    rng = np.random.default_rng(1)
    X = rng.standard_normal(spec.shapes["X"])
    W = {name: rng.standard_normal(spec.shapes[name]) / np.sqrt(spec.shapes[name][0])
         for name in ("W_Q", "W_K", "W_V", "W_O")}
    _, A = at.numeric.attention(X, W["W_Q"], W["W_K"], W["W_V"], W["W_O"], spec=spec)  # A: (heads, n, n)
    A = np.asarray(A)
    for h in range(spec.heads):
        entropy = np.mean(at.graphs.row_entropy(A[h]))
        print(f"head {h + 1}: mean row entropy {entropy:.3f} nats (uniform: {np.log(spec.n):.3f})")
    for h in range(spec.heads):
        for g in range(h + 1, spec.heads):
            tv = 0.5 * np.abs(A[h] - A[g]).sum(axis=1).mean()  # mean total-variation distance of rows
            print(f"heads {h + 1} and {g + 1}: mean row total-variation distance {tv:.3f}")
    fig = plots.attention_heatmap(A, TOKENS, title="Four heads, one random input: each head routes differently")
    return [plots.save_figure(fig, out / "heads.png", overwrite=True)]


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="attnsym-"))
    for path in main(out):
        print("wrote", path)
