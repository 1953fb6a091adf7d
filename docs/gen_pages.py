"""Build-time page generation (mkdocs-gen-files): runs every script in docs/gen/.

Each script writes one or more pages with ``mkdocs_gen_files.open(...)``; pages with
equations and figures are therefore produced by attnsym itself, never typed by hand.
"""

import os
import runpy
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")

for script in sorted((Path(__file__).parent / "gen").glob("*.py")):
    runpy.run_path(str(script), run_name="__main__")
