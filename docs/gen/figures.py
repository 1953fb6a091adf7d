"""Figures of the concept pages, drawn by attnsym.plots at build time (docs/figures/*.png)."""

import mkdocs_gen_files

from attnsym import AttentionSpec, plots


def _write(name, fig):
    with mkdocs_gen_files.open(f"figures/{name}.png", "wb") as handle:
        handle.write(plots.figure_to_bytes(fig, "png"))


spec = AttentionSpec(n=6, d_model=8, heads=2)
for k in (1, 2):
    A, tokens = plots.random_attention(spec, seed=0, input_seed=k)
    _write(f"heatmap-input-{k}", plots.attention_heatmap(
        A, tokens, title=f"Input {k}, the same weights W_Q, W_K, W_V: attention per head (query × key)"))
for name in ("positions", "gelu", "variance", "entropy", "paths"):
    _write(name, plots.figure(name, seed=0))
