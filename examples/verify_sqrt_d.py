"""Check the claim "q·k has variance d; dividing by sqrt(d) brings it back to 1".

Prints the verdict, how it was checked and under which conditions, and saves the claim's
figures plus the variance-vs-d figure as PNG files.

    python examples/verify_sqrt_d.py [OUTPUT_DIR]      # default: a new temporary folder
"""

import sys
import tempfile
from pathlib import Path

import attnsym as at
from attnsym import plots


def main(out: Path) -> list[Path]:
    evidence = at.verify("variance-scaling", seed=0, quick=True)
    print(f"{evidence.claim}: {evidence.verdict} ({evidence.method})")
    print("  ", evidence.summary)
    for condition in evidence.conditions:
        print("   condition:", condition)
    written = []
    for name, make_figure in evidence.figures.items():
        written.append(plots.save_figure(make_figure(), out / f"claim-{name}.png", overwrite=True))
    fig = plots.variance_figure(seed=0, quick=True)  # Monte Carlo at d = 1, 2, 4, ..., 4096
    written.append(plots.save_figure(fig, out / "variance-vs-d.png", overwrite=True))
    return written


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="attnsym-"))
    for path in main(out):
        print("wrote", path)
