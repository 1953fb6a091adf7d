"""Derive the attention forward pass and its gradients for n = 2, d = 2 and export them.

Writes forward.md / forward.tex and gradients.md / gradients.tex (standalone LaTeX documents:
compile with ``pdflatex forward.tex``) into the output folder.

    python examples/derive_latex.py [OUTPUT_DIR]      # default: a new temporary folder
"""

import sys
import tempfile
from pathlib import Path

import attnsym as at


def main(out: Path) -> list[Path]:
    spec = at.AttentionSpec(n=2, d_model=2)  # 2 tokens, width 2, one head, 1/sqrt(d_k) scaling
    written = []
    for what in ("forward", "gradients"):
        derivation = at.derive(spec, what=what)
        for suffix, text in ((".md", derivation.to_markdown()), (".tex", derivation.to_latex())):
            path = out / f"{what}{suffix}"
            path.write_text(text, encoding="utf-8")
            written.append(path)
        print(f"{derivation.title}: {len(derivation.steps)} steps")
    return written


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="attnsym-"))
    out.mkdir(parents=True, exist_ok=True)
    for path in main(out):
        print("wrote", path)
