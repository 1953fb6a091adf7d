"""Generate "Claims, checked" (claims.md) at build time: the report of every claim, by the code.

``attnsym.claims.verify_all`` checks every claim of CLAIMS.md (seed 0, default precision) in one
worker process per CPU, each worker drawing its claims' figures as PNG, and
:func:`attnsym.claims.report.render_report` turns the evidence into Markdown with LaTeX equations
and those figures (written beside the page under ``claims/``); the page is the one a single process
would write (``verify_all``'s evidence does not depend on the process that checked it).
Set ``ATTNSYM_DOCS_QUICK=1`` to build the page in quick mode (a few seconds).
"""

import os

import mkdocs_gen_files

from attnsym.claims import default_jobs, verify_all
from attnsym.claims.report import render_report

SEED = 0
QUICK = os.environ.get("ATTNSYM_DOCS_QUICK", "") not in ("", "0")

evidences = verify_all(seed=SEED, quick=QUICK, jobs=default_jobs(), formats=("png",))
report = render_report(evidences, seed=SEED, quick=QUICK, figure_dir="claims", formats=("png",),
                       title="Claims, checked")
with mkdocs_gen_files.open("claims.md", "w") as page:
    page.write(report.markdown)
for path, data in report.files.items():
    with mkdocs_gen_files.open(path, "wb") as image:
        image.write(data)
